# Writes that outrun 'watch' must wait for the storage to grow, not break
# the snapshot. The low-space threshold is the smallest allowed (1 MiB),
# the storage starts at 16 MiB on another file system, and the watcher is
# stopped (SIGSTOP) while 384 MiB are overwritten on the raw origin with
# O_DIRECT: the storage runs out with nobody growing it. Five seconds
# later the watcher goes on (SIGCONT) and grows it by 64 MiB steps. No
# corrupted event; the image is the origin at take time. Failed on
# c8fe398: "snapshot corrupted ... error 28" as soon as the storage was
# full (copy-on-write failed at once).
# timeout: 300
. /tests/common.sh

orig=/dev/vdb
load_module diff_storage_minimum=2048
storage_fs
write_random $orig 0 384 31
before=$(bsctl sum $orig direct 384)
id=$(blksnap-storage create $orig) || fail "create failed"
run blksnap-storage add --snapshot "$id" /mnt/st/snap.diff 16M > /dev/null
run blksnap-storage take "$id" > /dev/null
img=$(cli_image "$id" $orig) || exit 1
watch_start "$id" /mnt/st/snap.diff /tmp/w.json --step 64M

kill -STOP $WATCH_PID
t0=$(uptime_s)
gen 32 $((384 << 20)) > /tmp/burst.dat
dd if=/tmp/burst.dat of=$orig bs=1M oflag=direct conv=notrunc status=none &
burst=$!
sleep 5
dmesg | grep -q corrupted && fail "$(dmesg | grep corrupted | head -n 1)"
kill -0 $burst 2>/dev/null || fail "test bug: the burst ended before the storage ran out"
kill -CONT $WATCH_PID
wait $burst || fail "the burst failed"
t1=$(uptime_s)
rm -f /tmp/burst.dat
sleep 1
watch_clean /tmp/w.json
dmesg | grep -q corrupted && fail "$(dmesg | grep corrupted | head -n 1)"
set -- $(growth_stats /tmp/w.json 67108864)
note "384 MiB burst in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, $1 growths, waits: $(dmesg | grep -c 'copy-on-write waits')"
[ "$1" -ge 5 ] || fail "only $1 growths for a 384 MiB burst from 16 MiB"
[ "$(bsctl sum "$img" direct 384)" = "$before" ] ||
	fail "the image differs from the origin at take time"
run blksnap-storage destroy "$id" > /dev/null
watch_end /tmp/w.json
rm -f /mnt/st/snap.diff
umount /mnt/st
exit 0
