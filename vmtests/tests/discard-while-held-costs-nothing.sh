# A 12 GiB discard of a snapshotted disk (blkdiscard, fstrim, mkfs, a
# -o discard mount) costs neither memory nor storage and loses nothing:
# while the snapshot is held the discard is completed without reaching
# the disk (it is advisory), so the image and the origin keep their data
# and the CBT does not mark the range. Failed on d7861d9: every chunk of
# the range was copied at once (buffers for 12 GiB in a 2 GiB guest), the
# 256 MiB storage overflowed and the snapshot was corrupted.
# timeout: 240
# kernels: both (the filter hook: discards)
. /tests/common.sh

# The 64 GiB disk is the origin here; the storage is on the 2 GiB one.
orig=/dev/vdd
load_module
storage_fs xfs /dev/vdc
[ "$(cat /sys/class/block/vdd/queue/discard_max_bytes)" -gt 0 ] ||
	fail "test bug: $orig does not take discards"
write_random $orig 0 16 7
write_random $orig 8192 16 8
first() { dd if="$1" bs=1M count=16 skip="$2" iflag=direct status=none | sha256sum | cut -d' ' -f1; }
a=$(first $orig 0)
b=$(first $orig 8192)
id=$(snap_take /mnt/st/diff 256M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1

mem_drop_mib timeout 60 blkdiscard -o 0 -l 12G $orig ||
	fail "blkdiscard failed: $(cat /tmp/mem_drop.out)"
drop=$mem_drop
note "MemAvailable fell by $drop MiB during the discard"
[ "$drop" -lt 64 ] || fail "the discard took $drop MiB of memory"
dmesg | grep -q "corrupted" && fail "the discard corrupted the snapshot"
[ "$(first "$img" 0)" = "$a" ] && [ "$(first "$img" 8192)" = "$b" ] ||
	fail "the image differs from the origin at take time"
[ "$(first $orig 0)" = "$a" ] && [ "$(first $orig 8192)" = "$b" ] ||
	fail "the discard reached the origin while the snapshot was held"
snap_destroy "$id" /mnt/st/diff
umount /mnt/st
exit 0
