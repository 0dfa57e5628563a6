# A destroy must end the wait for storage at once, not sit it out: the
# storage (16 MiB, nobody growing it) runs out under a file write on the
# snapshotted ext4, copy-on-write waits for more (60 s by default), and
# the snapshot is destroyed meanwhile. The destroy's freeze syncs that
# file system, whose writes reach the filter: they must not wait either.
# Failed on 16d1d88: the destroy took the whole 60 s (the wait was
# stopped only after the freeze).
# timeout: 240
. /tests/common.sh

orig=/dev/vdb
load_module diff_storage_minimum=2048
storage_fs
mkfs_of ext4 $orig
mkdir -p /mnt/o && run mount $orig /mnt/o
id=$(snap_take /mnt/st/snap.diff 16M /mnt/o) || exit 1
gen 33 $((128 << 20)) > /tmp/big.dat
cp /tmp/big.dat /mnt/o/big.dat &
writer=$!
sync &
wait_for 60 eval 'dmesg | grep -q "copy-on-write waits"' ||
	fail "test bug: the storage did not run out"
sleep 1
t0=$(uptime_s)
run blksnap-storage destroy "$id" > /dev/null
t1=$(uptime_s)
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
note "destroy took $took s while copy-on-write waited for storage"
awk -v t="$took" -v s="${TSCALE:-1}" 'BEGIN { exit !(t < 20 * s) }' ||
	fail "destroy waited $took s: it sat out the wait for storage"
wait $writer || fail "the writer failed"
wait
cmp -s /tmp/big.dat /mnt/o/big.dat || fail "the file written during the wait differs"
rm -f /tmp/big.dat /mnt/st/snap.diff
run umount /mnt/o
fsck_ro ext4 $orig
umount /mnt/st
exit 0
