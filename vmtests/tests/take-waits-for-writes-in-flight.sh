# A write that passed the filter before a take and reaches the device
# after it is part of the take: the take returns only when it has landed,
# the image never changes after the take, and the next snapshot's change
# table lists the write's blocks again (a copy made while it was in flight
# may hold the old data). A take that waits can be killed.
# Failed on d1a337d: the filter decided "no snapshot, no copy" when the
# write entered and the take waited only for writes inside the filter. A
# write held 3 s by dm-delay landed in the image after the take, uncopied
# (two reads of the image differed), and only the old generation of the
# change table had it, so every later incremental missed the block.
# timeout: 120
# kernels: both (the drain counts writes in the filter, both hooks)
. /tests/common.sh

# Does dm-delay hold a write? Its status ends with the reads and writes
# it holds.
delayed_writes() {
	[ "$(dmsetup status dly | awk '{ print $5 }')" -ge 1 ] 2> /dev/null
}

load_module tracking_block_minimum_shift=16
dev=$(make_loop 64)
store=$(make_loop 96)
write_random $dev 0 64 1
# Reads pass at once; writes are held 3 s.
dm_create dly "0 $(sectors $dev) delay $dev 0 0 $dev 0 3000"
dly=/dev/mapper/dly
dd if=/dev/urandom of=/tmp/new bs=1M count=1 2> /dev/null

log "a direct write held by dm-delay while the snapshot is taken"
id=$(bsok create "$(devno $dly)")
bsok append "$id" "$(devnum $store)" 0:196608 > /dev/null
dd if=/tmp/new of=$dly bs=1M seek=8 count=1 oflag=direct conv=notrunc 2> /dev/null &
writer=$!
wait_for 5 delayed_writes || fail "dm-delay holds no write: $(dmsetup status dly)"
t0=$(uptime_s | cut -d. -f1)
bsok take "$id" > /dev/null
took=$(($(uptime_s | cut -d. -f1) - t0))
[ $took -ge 1 ] || fail "the take took ${took}s: it did not wait for the held write"
img=$(image_of "$id" $dly)
first=$(sha "$img")
wait $writer || fail "the delayed write failed"
second=$(sha "$img")
[ "$first" = "$second" ] ||
	fail "the image changed after the take: a write in flight at the take landed in it uncopied"
[ "$(dd if="$img" bs=1M skip=8 count=1 2> /dev/null | sha256sum | cut -c1-64)" = \
  "$(sha256sum < /tmp/new | cut -c1-64)" ] ||
	fail "the image lacks the write that completed before the take returned"
log "the take waited ${took}s for the write in flight"

log "the next snapshot's change table lists the write's 16 blocks"
bsok destroy "$id" > /dev/null
id=$(bsok create "$(devno $dly)")
bsok append "$id" "$(devnum $store)" 0:196608 > /dev/null
bsok take "$id" > /dev/null
marked=$(bsok cbtread "$(devno $dly)" 128 16 | tr ' ' '\n' | grep -c '=2$')
[ "$marked" = 16 ] ||
	fail "$marked of the write's 16 blocks in the new generation: an incremental backup would miss them"
bsok destroy "$id" > /dev/null

log "a take waiting for a held write is killed: it ends, and no snapshot is left"
dm_swap dly <<EOF
0 $(sectors $dev) delay $dev 0 0 $dev 0 8000
EOF
id=$(bsok create "$(devno $dly)")
bsok append "$id" "$(devnum $store)" 0:196608 > /dev/null
dd if=/tmp/new of=$dly bs=1M seek=20 count=1 oflag=direct conv=notrunc 2> /dev/null &
writer=$!
wait_for 5 delayed_writes || fail "dm-delay holds no write: $(dmsetup status dly)"
dmesg -c > /dev/null
bsctl take "$id" > /tmp/take.out 2>&1 &
taker=$!
sleep 1
kill -0 $taker 2> /dev/null || fail "the take did not wait: $(cat /tmp/take.out)"
kill -9 $taker
t0=$(uptime_s | cut -d. -f1)
wait $taker
rc=$?
[ $(($(uptime_s | cut -d. -f1) - t0)) -le 2 ] || fail "the killed take did not end at once"
[ $rc = 137 ] || fail "the take ended with $rc, not by its SIGKILL"
dmesg | grep -q "killed while waiting for the writes in flight" ||
	fail "the kernel does not say that the take was killed in its wait"
out=$(bsctl destroy "$id" 2>&1)
case "$out" in
OK* | "ERR ENOENT" | "ERR ESRCH") ;;
*) fail "destroy after the killed take: $out" ;;
esac
wait $writer || fail "the delayed write failed"
[ "$(bsok collect)" = 0 ] || fail "snapshots left after the killed take: $(bsok collect)"
dmsetup remove dly --noudevsync
exit 0
