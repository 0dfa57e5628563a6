# CREATE refuses an empty device list, duplicates, devices that do not
# exist or have no sectors, snapshot images, huge counts and bad pointers;
# a device in one snapshot cannot join a second one, and its tracker
# cannot be removed meanwhile. (The seed read out of bounds with a count
# of 0 and let two snapshots share one device.)
# timeout: 120
. /tests/common.sh

load_module
a=$(make_loop 64); b=$(make_loop 64); store=$(make_loop 64)
expect_err EINVAL bsctl create
expect_err EINVAL bsctl create "$(devnum $a)" "$(devnum $b)" "$(devnum $a)"
bsctl create 4095:1048575 | grep -Eq '^ERR (ENXIO|ENODEV)$' || fail "nonexistent device accepted"
bsctl create 5000:0 | grep -q '^ERR EINVAL$' || fail "a major too large for dev_t was accepted"
# An unbound loop device has no sectors.
empty=$(losetup -f)
[ -b "$empty" ] || mknod "$empty" b 7 "${empty#/dev/loop}"
expect_err EINVAL bsctl create "$(devnum $empty)"
id=$(bsok create "$(devnum $a)")
expect_err EBUSY bsctl create "$(devnum $b)" "$(devnum $a)"
expect_err EBUSY bsctl tracker-remove "$(devnum $a)"
# b was tracked by the failed call; the failure left it free.
idb=$(bsok create "$(devnum $b)")
bsok append "$id" "$(devnum $store)" 0:65536 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $a)
expect_err EINVAL bsctl create "$(devnum $img)"
bsok destroy "$id" > /dev/null
bsok destroy "$idb" > /dev/null
# Free again after destroy, and the tracker can go.
id=$(bsok create "$(devnum $a)")
bsok destroy "$id" > /dev/null
bsok tracker-remove "$(devnum $a)" > /dev/null
exit 0
