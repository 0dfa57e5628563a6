# blksnap.ko must stay loaded while its code may still run for a write:
# a write to a tracked device holds a module reference from the filter
# until its completion (which the filter takes over) has returned, and so
# does a write waiting in the filter for storage. rmmod is refused ("in
# use") meanwhile, and succeeds once the writes are done. Without those
# references the unload waited only for the trackers to be freed: the
# completion that put a tracker's last reference, or the submitter
# leaving the filter, could still be returning through the module's
# freed code (issue 31, item 6).
# Two writes: one that dm-delay holds below the tracked device (the
# completion's reference), and one waiting for storage. Failed on
# 90bd04e: /sys/module/blksnap/refcnt stayed 0 in both, and rmmod was not
# refused.
# timeout: 120
# kernels: both (the module references are taken by the block layer's
# filter core, or by bdev_filter.ko on Debian's kernel)
. /tests/common.sh

refcnt() { cat /sys/module/blksnap/refcnt; }
writer=
# A writer left by a failed step would keep its device open for the
# cleanup: wait for it (its write ends within the delay).
trap '[ -n "$writer" ] && wait $writer' EXIT
# idle_refcnt: wait until the module is held by nothing (the completion
# of the last write drops its reference just after waking its writer).
idle_refcnt() {
	wait_for 5 eval '[ "$(refcnt)" = 0 ]' ||
		fail "refcnt $(refcnt) with no write in flight: a reference leaked"
}

# refused DESCRIPTION: rmmod must fail, the module stays.
refused() {
	local out
	out=$(rmmod blksnap 2>&1) && fail "rmmod succeeded while $1"
	case "$out" in
	*"in use"* | *"Resource temporarily unavailable"* | *"Device or resource busy"*) ;;
	*) fail "rmmod while $1: unexpected error '$out'" ;;
	esac
	lsmod | grep -q '^blksnap' || fail "module gone after a refused rmmod ($1)"
}

step "a write that dm-delay holds below a tracked device"
load_module
base=$(make_loop 16)
delay=$((3000 * ${TSCALE:-1}))
dm_create slowd "0 $(sectors $base) delay $base 0 0 $base 0 $delay"
id=$(bsok create "$(devno /dev/mapper/slowd)")
bsok destroy "$id" > /dev/null
idle_refcnt
gen 1 4096 | dd of=/dev/mapper/slowd bs=4k count=1 oflag=direct 2> /dev/null &
writer=$!
# dm-delay's status: reads, writes and flushes it holds.
wait_for 5 eval '[ "$(dmsetup status slowd | cut -d" " -f5)" = 1 ]' ||
	fail "test bug: dm-delay does not hold the write: $(dmsetup status slowd)"
r1=$(refcnt)
[ "$r1" -ge 1 ] ||
	fail "refcnt $r1 while a write to the tracked device is in flight: the module could be unloaded under its completion"
refused "a write to the tracked device was in flight"
wait $writer || fail "the held write failed"
writer=
idle_refcnt
echo "held write: refcnt 0 -> $r1 -> 0"
unload_module
lsmod | grep -q '^blksnap' && fail "blksnap still loaded after rmmod"
run dmsetup remove slowd

step "a write waiting in the filter for storage"
load_module chunk_minimum_shift=18 diff_storage_wait_seconds=30
dev=$(make_loop 16)
store=$(make_loop 16)
# Storage for one chunk of 256 KiB: the second chunk written waits.
id=$(raw_take $dev $store 0:512) || exit 1
gen 2 262144 | dd of=$dev bs=256K seek=4 count=1 oflag=direct 2> /dev/null ||
	fail "the first write failed"
idle_refcnt
dmesg -c > /dev/null
gen 3 262144 | dd of=$dev bs=256K seek=9 count=1 oflag=direct 2> /dev/null &
writer=$!
wait_for 10 sh -c 'dmesg | grep -q "The difference storage is full"' ||
	fail "no copy waits for storage: $(dmesg | tail -n 3)"
kill -0 $writer 2> /dev/null || fail "the write to the second chunk did not wait"
r1=$(refcnt)
[ "$r1" -ge 1 ] ||
	fail "refcnt $r1 while a write waits for storage: the module could be unloaded under it"
refused "a write waited for storage"
bsok append "$id" "$(devno $store)" 512:4096 > /dev/null
wait $writer || fail "the waiting write failed once storage was appended"
writer=
idle_refcnt
echo "waiting write: refcnt 0 -> $r1 -> 0"
dmesg | grep -q corrupted && fail "$(dmesg | grep corrupted | head -n 1)"
bsok destroy "$id" > /dev/null
unload_module
lsmod | grep -q '^blksnap' && fail "blksnap still loaded after rmmod"
exit 0
