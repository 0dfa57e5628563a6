# Destroy means done. While a take is still inside the snapshot (its
# freeze waits for writes a dm-delay device holds 1 s), a thread waits for
# the snapshot's events and another lists its images in a loop: destroy
# returns only once the snapshot is released. Right after it the device
# can be snapshotted again and the storage file is an ordinary one; the
# waiter has its ESRCH at once, and when it has exited, rmmod succeeds.
# A destroy killed while it waits leaves the release to the take: a second
# destroy fails with ESRCH only once the snapshot is released (failed on
# 7322171: ESRCH in 0.0 s, and the device could not be snapshotted again:
# EBUSY).
# Failed on f76c335 (with v1's APPEND_STORAGE of a loop device in place
# of APPEND_FILE, which f76c335 lacks): destroy returned in 0.0 s and left
# the release to the take, so the new snapshot of the device was refused
# (EBUSY).
# timeout: 180
. /tests/common.sh

load_module
storage_fs xfs
run mkfs.ext4 -q -F /dev/vdb
size=$(sectors /dev/vdb)
dm_create slow "0 $size delay /dev/vdb 0 0"
mkdir -p /mnt/o && run mount /dev/mapper/slow /mnt/o
fill_tree /mnt/o/data 71 4
dm_swap slow <<EOT
0 $size delay /dev/vdb 0 0 /dev/vdb 0 1000
EOT
run fallocate -l 64M /mnt/st/s.diff
dev=$(devno /dev/mapper/slow)

# released_at_once WHAT FILE: right after WHAT, the device can be
# snapshotted again (prints the new id) and FILE is an ordinary file.
released_at_once() {
	local out
	out=$(bsctl create "$dev")
	case "$out" in
	OK*) ;;
	*) fail "the device cannot be snapshotted right after $1: $out" >&2 ;;
	esac
	rm "$2" || fail "the storage file is still held after $1" >&2
	echo "${out#OK }"
}
id=$(bsok create "$dev")
bsok wait "$id" 100 > /dev/null		# the create-time request
bsok append-file "$id" /mnt/st/s.diff > /dev/null

# Dirty data, not synced: the take's freeze writes it, slowly.
gen 72 1048576 > /mnt/o/dirty || fail "cannot write"
bsctl take "$id" > /tmp/take.out 2>&1 &
taker=$!
bsctl wait "$id" 60000 > /tmp/wait.out 2>&1 &
waiter=$!
(while bsctl images "$id" > /dev/null 2>&1; do :; done) &
poller=$!
sleep 1
[ -s /tmp/take.out ] && fail "test bug: the take ended within a second: $(cat /tmp/take.out)"

kill -0 $taker 2> /dev/null || fail "test bug: the take ended before the destroy: $(cat /tmp/take.out)"
t0=$(uptime_s)
bsok destroy "$id" > /dev/null
took=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }')
note "destroy took $took s, waiting for the take"
awk -v t="$took" 'BEGIN { exit !(t >= 0.5) }' ||
	fail "destroy took $took s: it did not wait for the take"
id2=$(released_at_once destroy /mnt/st/s.diff) || exit 1
wait_for 3 eval "! kill -0 $waiter 2>/dev/null" || fail "the waiter did not return"
[ "$(cat /tmp/wait.out)" = "ERR ESRCH" ] || fail "the waiter got '$(cat /tmp/wait.out)'"
wait $waiter
wait $taker
note "the take said: $(cat /tmp/take.out)"
wait_for 10 eval "! kill -0 $poller 2>/dev/null" || fail "the poller goes on listing a destroyed snapshot"
wait $poller

# A destroy killed while it waits leaves the release to the take; a
# second destroy says ESRCH only once the snapshot is released.
bsok wait "$id2" 100 > /dev/null
run fallocate -l 64M /mnt/st/s2.diff
bsok append-file "$id2" /mnt/st/s2.diff > /dev/null
gen 73 1048576 > /mnt/o/dirty2 || fail "cannot write"
bsctl take "$id2" > /tmp/take2.out 2>&1 &
taker=$!
sleep 1
bsctl destroy "$id2" > /tmp/destroy.out 2>&1 &
destroyer=$!
# The destroy is in the kernel, waiting, once the snapshot is unlisted.
wait_for 10 eval '! bsctl collect | grep -q "$id2"' ||
	fail "test bug: the destroy did not reach the kernel"
kill -0 $taker 2> /dev/null || fail "test bug: the second take ended too soon: $(cat /tmp/take2.out)"
kill -9 $destroyer
wait $destroyer 2> /dev/null
[ -s /tmp/destroy.out ] && fail "test bug: the destroy ended before it was killed: $(cat /tmp/destroy.out)"
t0=$(uptime_s)
expect_err ESRCH bsctl destroy "$id2"
took=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }')
note "the second destroy took $took s"
id3=$(released_at_once "the second destroy" /mnt/st/s2.diff) || exit 1
wait $taker
bsok destroy "$id3" > /dev/null
unload_module
echo "0 $size delay /dev/vdb 0 0" | dm_swap slow
run umount /mnt/o
run umount /mnt/st
exit 0
