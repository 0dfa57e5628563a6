# TAKE without difference storage fails with ENOSPC, leaves the snapshot as
# it was (storage can be added and the take retried), and keeps nothing
# open: the loop device under the snapshot detaches at once after destroy.
# (The seed leaked the opened device and the diff_area, and destroyed the
# snapshot.)
# timeout: 120
. /tests/common.sh

load_module
dev=$(make_loop 64)
store=$(make_loop 64)
id=$(bsok create "$(devnum $dev)")
expect_err ENOSPC bsctl take "$id"
[ "$(bsok collect)" = "1 $id" ] || fail "the snapshot is gone after a failed take"
bsok destroy "$id" > /dev/null
# A device that is still open stays bound after losetup -d (autoclear).
losetup -d "$dev"
sleep 1
[ -e "/sys/class/block/$(basename $dev)/loop/backing_file" ] &&
	fail "$dev stays bound after detach: something still holds it open"

# The retry path: storage after a failed take, then take.
dev=$(make_loop 64)
id=$(bsok create "$(devnum $dev)")
expect_err ENOSPC bsctl take "$id"
bsok append "$id" "$(devnum $store)" 0:65536 > /dev/null
bsok take "$id" > /dev/null
[ -b "$(image_of "$id" $dev)" ] || fail "no image after the retried take"
bsok destroy "$id" > /dev/null
exit 0
