# A WRITE_ZEROES of 512 MiB in one bio (blkdiscard -z, blkdev_issue_zeroout)
# really changes the origin, so its chunks are copied first, but in
# bounded batches: kernel memory stays flat, the storage gets exactly the
# changed data, the image keeps the take-time data and the origin reads
# zeros. Failed on d7861d9: a buffer was allocated for every chunk of the
# bio before anything was waited for (512 MiB at once).
# timeout: 300
# kernels: both (the filter hook: WRITE_ZEROES)
. /tests/common.sh

orig=/dev/vdc
load_module
storage_fs
wz=$(cat /sys/class/block/vdc/queue/write_zeroes_max_bytes)
[ "$wz" -ge $((512 * 1048576)) ] ||
	fail "test bug: $orig takes WRITE_ZEROES of $wz bytes only"
write_random $orig 0 512 11
before=$(bsctl sum $orig direct 512)
id=$(snap_take /mnt/st/diff 768M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1

mem_drop_mib blkdiscard -z -o 0 -l 512M $orig ||
	fail "blkdiscard -z failed: $(cat /tmp/mem_drop.out)"
drop=$mem_drop
note "MemAvailable fell by $drop MiB during the 512 MiB WRITE_ZEROES"
[ "$drop" -lt 128 ] || fail "the WRITE_ZEROES took $drop MiB of memory"
dmesg | grep -q "corrupted" && fail "the snapshot was corrupted: $(dmesg | grep corrupted | head -n 1)"
[ "$(bsctl sum "$img" direct 512)" = "$before" ] ||
	fail "the image differs from the origin at take time"
[ "$(bsctl sum $orig direct 512)" = "$(bsctl sum /dev/zero 512)" ] ||
	fail "the origin does not read zeros after WRITE_ZEROES"
snap_destroy "$id" /mnt/st/diff
umount /mnt/st
exit 0
