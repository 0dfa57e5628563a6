# A take or destroy must not wait for the copies of another snapshot's
# writers, nor a destroy for more than the batch its own writer is copying.
# Snapshot A is of /dev/vdf, whose reads QEMU throttles to 4 MiB/s: one
# 64 MiB WRITE_ZEROES (a single bio) spends ~16 s copying, in batches of
# 4 MiB. While it does, snapshot B of another disk is taken: the take must
# end while A's writer is still copying. The first write's copies, made
# with the lock dropped between batches, must all be in A's image. A
# second write, of 128 MiB not copied yet (~32 s of copies), is then cut
# short by A's destroy, which must not wait for its remaining batches.
# Both writes must be on the origin: a sample of each written region
# (every 16th MiB and the last MiB of each write) reads zeros; all of it
# would take 48 s to read through the throttle. Failed on 2cf2299: the
# global tracker_submit_lock was held across the whole copy-on-write of a
# bio, so B's take waited until A's write had been copied (13 s of 16,
# with a 64 MiB write as here), and so would every write to any tracked
# device queued behind that take.
# Data goes through files in RAM, not pipes: under TCG a pipe carries
# ~10 MiB/s. (~35 s; ~130 s with a 128 MiB first write, pipes, sha256sum
# and all 192 MiB read back.)
# timeout: 300
. /tests/common.sh

orig=/dev/vdf
# sum_of FILE OFFSET_MIB COUNT_MIB: checksum of that part of FILE.
sum_of() {
	dd if="$1" of=/tmp/part bs=1M skip="$2" count="$3" iflag=direct status=none &&
		bsctl sum /tmp/part
}
# zero_writer OFFSET_MIB COUNT_MIB: a WRITE_ZEROES in the background,
# waited for until it is in D state (copying).
zero_writer() {
	/usr/sbin/blkdiscard -z -o $(($1 << 20)) -l $(($2 << 20)) $orig &
	writer=$!
	wait_for 20 eval '[ "$(awk "{ print \$3 }" /proc/$writer/stat 2>/dev/null)" = D ]' ||
		fail "test bug: the writer is not waiting for its copy"
}
secs() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'
}

load_module
storage_fs
gen 5 $((200 << 20)) > /tmp/pattern || fail "cannot write the pattern"
dd if=/tmp/pattern of=$orig bs=4M oflag=direct conv=notrunc status=none || fail "write to $orig failed"
dd if=/tmp/pattern of=/tmp/want bs=1M skip=4 count=64 status=none || fail "cannot cut the pattern"
rm -f /tmp/pattern
wz=$(cat /sys/class/block/vdf/queue/write_zeroes_max_bytes)
[ "$wz" -ge $((128 << 20)) ] || fail "test bug: $orig takes WRITE_ZEROES of $wz bytes only"
id_a=$(snap_take /mnt/st/a.diff 400M $orig) || exit 1
img_a=$(cli_image "$id_a" $orig) || exit 1

zero_writer 4 64
t0=$(uptime_s)
id_b=$(blksnap-storage create /dev/vdc) || fail "create of B failed"
run blksnap-storage add --snapshot "$id_b" /mnt/st/b.diff 64M > /dev/null
run blksnap-storage take "$id_b" > /dev/null
t1=$(uptime_s)
note "take of B took $(secs $t0 $t1) s while A's writer was copying"
kill -0 $writer 2>/dev/null ||
	fail "take of B waited $(secs $t0 $t1) s, until snapshot A's copy-on-write was over"
wait $writer || fail "A's first writer failed"
[ "$(sum_of "$img_a" 4 64)" = "$(bsctl sum /tmp/want)" ] ||
	fail "A's image lost data copied in later batches of one write"

zero_writer 68 128
t0=$(uptime_s)
run blksnap-storage destroy "$id_a" > /dev/null
t1=$(uptime_s)
note "destroy of A took $(secs $t0 $t1) s"
awk -v t="$(secs $t0 $t1)" -v s="${TSCALE:-1}" 'BEGIN { exit !(t < 10 * s) }' ||
	fail "destroy of A waited $(secs $t0 $t1) s for its writer's remaining copies"
wait $writer || fail "A's second writer failed"
dmesg | grep -q "corrupted" && fail "$(dmesg | grep corrupted | head -n 1)"
dd if=/dev/zero of=/tmp/want bs=1M count=1 status=none
zero_mib=$(bsctl sum /tmp/want)
for m in 4 20 36 52 67 68 84 100 116 132 148 164 180 195; do
	[ "$(sum_of $orig $m 1)" = "$zero_mib" ] ||
		fail "MiB $m of the origin does not read zeros after the WRITE_ZEROES"
done
rm -f /tmp/want /tmp/part
snap_destroy "$id_b" /mnt/st/b.diff
rm -f /mnt/st/a.diff
umount /mnt/st
exit 0
