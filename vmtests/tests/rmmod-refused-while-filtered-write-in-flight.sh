# blksnap.ko must stay loaded while its code may still run for a write:
# a write to a tracked device holds a module reference from the filter
# until its completion (which the filter takes over) has returned, and so
# does a write waiting in the filter for storage. rmmod is refused ("in
# use") meanwhile, and succeeds once the writes are done. Without those
# references the unload waited only for the trackers to be freed: the
# completion that put a tracker's last reference, or the submitter
# leaving the filter, could still be returning through the module's
# freed code (issue 31, item 6).
# Two writes: one that dm-delay holds 3 s below the tracked device (the
# completion's reference), and one waiting in the filter for storage (the
# submitter's). Failed on 90bd04e: /sys/module/blksnap/refcnt stayed 0 in
# both, and rmmod was not refused.
# timeout: 120
# kernels: both (the module references are taken by the block layer's
# filter core, or by bdev_filter.ko on Debian's kernel)
. /tests/common.sh

refcnt() { cat /sys/module/blksnap/refcnt; }

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

step "a write that dm-delay holds 3 s below a tracked device"
load_module
base=$(make_loop 16)
dm_create slowd "0 $(sectors $base) delay $base 0 0 $base 0 3000"
id=$(bsok create "$(devno /dev/mapper/slowd)")
bsok destroy "$id" > /dev/null
r0=$(refcnt)
gen 1 4096 | dd of=/dev/mapper/slowd bs=4k count=1 oflag=direct 2> /dev/null &
writer=$!
sleep 1
kill -0 $writer 2> /dev/null || fail "test bug: the write ended within 1 s; dm-delay did not hold it"
r1=$(refcnt)
[ "$r1" -gt "$r0" ] ||
	fail "refcnt $r1 (was $r0) while a write to the tracked device is in flight: the module could be unloaded under its completion"
refused "a write to the tracked device was in flight"
wait $writer || fail "the held write failed"
wait_for 5 eval '[ "$(refcnt)" = "$r0" ]' ||
	fail "refcnt $(refcnt) after the write completed, was $r0: a reference leaked"
echo "held write: refcnt $r0 -> $r1 -> $(refcnt)"
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
r0=$(refcnt)
dmesg -c > /dev/null
gen 3 262144 | dd of=$dev bs=256K seek=9 count=1 oflag=direct 2> /dev/null &
writer=$!
wait_for 10 sh -c 'dmesg | grep -q "The difference storage is full"' ||
	fail "no copy waits for storage: $(dmesg | tail -n 3)"
kill -0 $writer 2> /dev/null || fail "the write to the second chunk did not wait"
r1=$(refcnt)
[ "$r1" -gt "$r0" ] ||
	fail "refcnt $r1 (was $r0) while a write waits in the filter: the module could be unloaded under it"
refused "a write waited in the filter for storage"
bsok append "$id" "$(devno $store)" 512:4096 > /dev/null
wait $writer || fail "the waiting write failed once storage was appended"
wait_for 5 eval '[ "$(refcnt)" = "$r0" ]' ||
	fail "refcnt $(refcnt) after the write completed, was $r0: a reference leaked"
echo "waiting write: refcnt $r0 -> $r1 -> $(refcnt)"
dmesg | grep -q corrupted && fail "$(dmesg | grep corrupted | head -n 1)"
bsok destroy "$id" > /dev/null
unload_module
lsmod | grep -q '^blksnap' && fail "blksnap still loaded after rmmod"
exit 0
