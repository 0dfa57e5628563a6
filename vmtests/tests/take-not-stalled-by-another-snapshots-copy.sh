# A take or destroy must not wait for the copies of another snapshot's
# writers, nor a destroy for more than the batch its own writer is copying.
# Snapshot A is of /dev/vdf, whose reads QEMU throttles to 4 MiB/s: one
# 64 MiB WRITE_ZEROES (a single bio) spends ~16 s copying, in batches of
# 4 MiB. While it does, snapshot B of another disk is taken and written
# to, then A is destroyed. Failed on 2cf2299: the global
# tracker_submit_lock was held across the whole copy-on-write of a bio,
# so B's take waited until A's write had been copied, and so would every
# write to any tracked device queued behind that take.
# timeout: 240
. /tests/common.sh

sha_of() {
	dd if="$1" bs=1M count="$2" iflag=direct status=none | sha256sum | cut -d' ' -f1
}

load_module
storage_fs
orig=/dev/vdf
write_random $orig 0 72 5
wz=$(cat /sys/class/block/vdf/queue/write_zeroes_max_bytes)
[ "$wz" -ge $((64 << 20)) ] || fail "test bug: $orig takes WRITE_ZEROES of $wz bytes only"
id_a=$(snap_take /mnt/st/a.diff 200M $orig) || exit 1
img_a=$(cli_image "$id_a" $orig) || exit 1
before=$(sha_of "$img_a" 4)

/usr/sbin/blkdiscard -z -o $((4 << 20)) -l $((64 << 20)) $orig &
writer=$!
sleep 2
st=$(awk '{ print $3 }' /proc/$writer/stat 2>/dev/null); [ "$st" = D ] ||
	fail "test bug: the writer is not waiting for its copy (state ${st:-gone})"

t0=$(uptime_s)
id_b=$(blksnap-storage create /dev/vdc) || fail "create of B failed"
run blksnap-storage add --snapshot "$id_b" /mnt/st/b.diff 64M > /dev/null
run blksnap-storage take "$id_b" > /dev/null
t1=$(uptime_s)
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
note "take of B took $took s while A's writer was copying"
awk -v t="$took" 'BEGIN { exit !(t < 5) }' ||
	fail "take of B waited $took s for snapshot A's copy-on-write"
kill -0 $writer 2>/dev/null || fail "test bug: A's writer ended before B's take did (took $took s)"
# A write to B's disk goes through at once.
t0=$(uptime_s)
write_random /dev/vdc 100 1 7
t1=$(uptime_s)
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
awk -v t="$took" 'BEGIN { exit !(t < 5) }' || fail "a write to B's disk took $took s"

[ "$(sha_of "$img_a" 4)" = "$before" ] ||
	fail "A's image changed while its writer was copying"

# Destroying A waits for the batch its writer is copying, not the bio.
kill -0 $writer 2>/dev/null || fail "test bug: A's writer ended before A's destroy"
t0=$(uptime_s)
run blksnap-storage destroy "$id_a" > /dev/null
t1=$(uptime_s)
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
note "destroy of A took $took s"
awk -v t="$took" 'BEGIN { exit !(t < 5) }' ||
	fail "destroy of A waited $took s for its writer's whole copy"
wait $writer || fail "A's writer failed"
dmesg | grep -q "corrupted" && fail "$(dmesg | grep corrupted | head -n 1)"
[ "$(dd if=$orig bs=1M skip=4 count=64 iflag=direct status=none | tr -d '\0' | wc -c)" = 0 ] ||
	fail "the origin does not read zeros after the WRITE_ZEROES"
snap_destroy "$id_b" /mnt/st/b.diff
rm -f /mnt/st/a.diff
umount /mnt/st
exit 0
