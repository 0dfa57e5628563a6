# A snapshot of an ext4 origin with difference storage given as a sector
# range on a second disk: the origin is rewritten with random data while
# the snapshot is held; the image's checksum equals the origin's taken
# just before take, and the origin holds exactly what was written.
# (bsctl sum, not sha256sum: 1 GiB three times costs minutes under TCG.)
# timeout: 300
. /tests/common.sh

orig=/dev/vdb
store=/dev/vdd
load_module
mkfs_of ext4 $orig
mkdir -p /mnt/o && run mount $orig /mnt/o
fill_tree /mnt/o/data 1 40
run umount /mnt/o

id=$(bsok create "$(devnum $orig)")
bsok append "$id" "$(devnum $store)" 0:2097152 > /dev/null
before=$(bsctl sum $orig)
bsok take "$id" > /dev/null
img=$(image_of "$id" $orig)
[ -b "$img" ] || fail "$img is not a block device"

# Rewrite the whole origin with random data, then read the image.
run bsctl put 7 $(($(sectors $orig) * 512)) $orig 0 > /dev/null
after_expected=$(bsctl sum-gen 7 $(($(sectors $orig) * 512)))
[ "$(bsctl sum $orig)" = "$after_expected" ] || fail "origin does not hold what was written"
[ "$(bsctl sum "$img")" = "$before" ] || fail "image differs from the origin at take time"

mkdir -p /mnt/i && run mount -o ro,noload "$img" /mnt/i
run umount /mnt/i
bsok destroy "$id" > /dev/null
[ -e "$img" ] && fail "$img still exists after destroy"
unload_module
exit 0
