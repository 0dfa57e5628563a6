# The first snapshot creation that tracks a device waits for the writes
# sent to it before (they passed no filter), but not forever: with a
# write that stays in flight, it warns after 5 s, gives up after 30 s
# with -ETIMEDOUT, and blksnap-storage says so in one line; a fatal
# signal ends the wait at once; once the write has landed, a creation
# succeeds. The device is dm-linear (bio-based, counts its writes in
# flight) over a dm-linear device suspended with --noflush, which keeps
# a direct write to the upper device in flight. Covers the timeout and
# signal paths of the drain of 5596649, which no test reached.
# timeout: 180
# kernels: both (the drain of the first creation)
. /tests/common.sh

load_module
base=$(make_loop 16)
dm_create low "0 $(sectors $base) linear $base 0"
dm_create up "0 $(sectors $base) linear /dev/mapper/low 0"
writer=
resume() {
	dmsetup resume --noudevsync low 2> /dev/null
	[ -n "$writer" ] && wait $writer
	writer=
}
trap resume EXIT

run dmsetup suspend --noflush --noudevsync low
gen 1 4096 | dd of=/dev/mapper/up bs=4k count=1 oflag=direct 2> /dev/null &
writer=$!
# /sys/block/dm-N/inflight: reads and writes in flight.
inflight=/sys/block/$(dmsetup info -c -o blkdevname --noheadings up)/inflight
wait_for 5 eval '[ "$(awk "{ print \$2 }" $inflight)" = 1 ]' ||
	fail "test bug: the write to the upper device is not in flight: $(cat $inflight)"

step "the first creation waits 30 s, then gives up"
dmesg -c > /dev/null
t0=$(uptime_s)
blksnap-storage create /dev/mapper/up > /tmp/create.out 2> /tmp/create.err &&
	fail "create succeeded with a write held in flight: $(cat /tmp/create.out)"
took=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%d", b - a }')
echo "create gave up after $took s: $(cat /tmp/create.err)"
[ "$took" -ge 29 ] && [ "$took" -le 60 ] ||
	fail "create gave up after $took s, not after 30 s"
[ "$(wc -l < /tmp/create.err)" = 1 ] ||
	fail "not one line: $(cat /tmp/create.err)"
grep -q "did not end within 30 s" /tmp/create.err ||
	fail "the line does not say what timed out: $(cat /tmp/create.err)"
dmesg | grep -q "waiting for .*(1 writes counted in flight)" ||
	fail "no warning after 5 s in the kernel log: $(dmesg | grep -i blksnap | tail -n 3)"
dmesg | grep -q "did not end within 30 s; no snapshot created" ||
	fail "the kernel log does not say why: $(dmesg | grep -i blksnap | tail -n 3)"

step "a fatal signal ends the wait"
dmesg -c > /dev/null
blksnap-storage create /dev/mapper/up > /dev/null 2>&1 &
creator=$!
sleep 2
kill -0 $creator 2> /dev/null || fail "test bug: the second creation ended within 2 s"
kill -KILL $creator
wait_for 5 eval '! kill -0 $creator 2> /dev/null' ||
	fail "the creation was still waiting 5 s after SIGKILL"
wait $creator 2> /dev/null
dmesg | grep -q "killed while waiting" ||
	fail "the kernel log does not say the wait was killed: $(dmesg | grep -i blksnap | tail -n 3)"

step "once the write has landed, a creation succeeds"
resume
id=$(blksnap-storage create /dev/mapper/up) || fail "create failed after the write landed"
run blksnap-storage destroy "$id" > /dev/null
exit 0
