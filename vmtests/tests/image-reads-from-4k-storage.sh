# Difference storage with a larger logical block size than the image (a
# 4Kn virtio disk under a 512-byte origin): image reads of changed chunks
# at 512-byte granularity return the data at take time, and a file system
# made with 512-byte sectors mounts from the image. Failed on d7861d9: such reads were remapped to
# the storage as they stood, and the 4Kn device failed them with EIO.
# timeout: 180
. /tests/common.sh

load_module
orig=/dev/vdb
# The harness's 256 MiB disk with 4 KiB logical blocks (run.sh).
store=/dev/vde
[ "$(blockdev --getss $store)" = 4096 ] || fail "test bug: $store has $(blockdev --getss $store)-byte sectors"
[ "$(blockdev --getss $orig)" = 512 ] || fail "test bug: $orig is not a 512-byte device"

mkfs.xfs -q -f -s size=512 $orig > /dev/null || fail "mkfs.xfs -s size=512 failed"
mkdir -p /mnt/o && run mount $orig /mnt/o
fill_tree /mnt/o/data 5 40
tree_sums /mnt/o > /tmp/take.sums
run umount /mnt/o
before=$(bsctl sum $orig direct 1024)
# Sectors 1..7 of the device (xfs's first AG headers), read one by one below.
odd=$(dd if=$orig bs=512 skip=1 count=7 iflag=direct status=none | sha256sum)

id=$(bsok create "$(devnum $orig)")
bsok append "$id" "$(devnum $store)" 0:262144 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $orig)
# Every chunk the 512-byte reads below touch is then stored.
write_random $orig 0 64 32

i=1
: > /tmp/odd.dat
while [ $i -le 7 ]; do
	dd if="$img" bs=512 skip=$i count=1 iflag=direct status=none >> /tmp/odd.dat ||
		fail "a 512-byte direct read of the image failed: $(dmesg | tail -n 1)"
	i=$((i + 1))
done
got=$(sha256sum < /tmp/odd.dat)
[ "$got" = "$odd" ] || fail "512-byte reads of the image do not return the data at take time"
[ "$(bsctl sum "$img" direct 1024)" = "$before" ] || fail "the image differs from the origin at take time"
mount -o "$(ro_opts xfs)" "$img" /mnt/o || fail "the image's xfs (512-byte sectors) does not mount"
tree_sums /mnt/o | cmp -s - /tmp/take.sums || fail "files in the image differ from take time"
run umount /mnt/o
bsok destroy "$id" > /dev/null
exit 0
