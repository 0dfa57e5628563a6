# blksnap.ko must not go while an RCU callback is queued on its own data.
# tracker_submit_lock, a percpu rw-semaphore in the module's data, queues
# rcu_sync_func on itself (rss.cb_head) at its first percpu_up_write()
# after a grace period (a take, a snapshot's release); another one before
# the callback ran makes it re-queue itself once. delete_module() only waits
# for one grace period (free_module's synchronize_rcu), never for the
# callbacks (no rcu_barrier): the module has to, in its exit.
# Here no normal grace period can end while the callback is queued and the
# module unloaded: the test pins the RCU grace-period kthread to CPU 1,
# which a SCHED_FIFO busy loop keeps (RT throttling off), and synchronize_rcu() is
# made expedited (/sys/kernel/rcu_expedited), so that the unload itself
# needs no normal grace period. First a calibration: with nothing queued,
# rmmod must finish during such a stall and the kthread must not run.
# Then two snapshot creations that fail (of a snapshot image's device
# number: refused in snapshot_add_device(), after snapshot_new(), so the
# snapshot is released at once, no device opened, no tracker attached)
# queue the callback, the second one making it re-queue itself once
# (GP_REPLAY). An rmmod that returns before any grace period has ended
# freed the module under the queued callback (the guest then oopses in
# rcu_do_batch(), called from rcu_core(), when the stall ends: a page fault
# at the module's freed data). The fixed module waits in
# percpu_free_rwsem() (rcu_barrier) until the stall ends.
# Failed on 9023b4c: rmmod returned during the stall, and the guest oopsed
# (page fault in rcu_cblist_dequeue(), from rcu_core()) when it ended.
# Should this test be killed (its timeout), the guest's cleanup restores
# what it changed (see guest_cleanup); the busy loop ends by itself.
# Needs 2 CPUs and util-linux chrt in the initramfs.
# timeout: 120
# kernels: both (module load and unload)
. /tests/common.sh

[ "$(grep -c '^processor' /proc/cpuinfo)" -ge 2 ] || skip "needs 2 CPUs"
[ "$(cat /sys/devices/system/cpu/cpu1/online 2>/dev/null || echo 1)" = 1 ] ||
	skip "CPU 1 is offline"
command -v chrt > /dev/null ||
	skip "needs chrt (util-linux) in the initramfs (vmtests/mkinitramfs.sh, tools)"
[ -w /sys/kernel/rcu_expedited ] || skip "no /sys/kernel/rcu_expedited"

gp=
for p in /proc/[0-9]*; do
	case "$(cat "$p/comm" 2>/dev/null)" in
	rcu_sched | rcu_preempt) gp=${p#/proc/}; break ;;
	esac
done
[ -n "$gp" ] || fail "test bug: no RCU grace-period kthread (rcu_sched or rcu_preempt)"

gp_mask=$(taskset -p "$gp") || fail "cannot read the affinity of the grace-period kthread"
gp_mask=${gp_mask##*: }
rt=$(cat /proc/sys/kernel/sched_rt_runtime_us)
exp=$(cat /sys/kernel/rcu_expedited)
echo "$gp $gp_mask $rt $exp" > /tmp/sched-restore
hog=
restore() {
	if [ -n "$hog" ]; then
		kill -KILL "$hog" 2> /dev/null
		wait "$hog" 2> /dev/null
		hog=
	fi
	taskset -p "$gp_mask" "$gp" > /dev/null 2>&1
	echo "$rt" > /proc/sys/kernel/sched_rt_runtime_us
	echo "$exp" > /sys/kernel/rcu_expedited
	rm -f /tmp/sched-restore
}
trap restore EXIT

# This script and all it starts run on CPU 0; the kthread on CPU 1.
taskset -p 1 $$ > /dev/null || fail "cannot bind the test to CPU 0"
taskset -p 2 "$gp" > /dev/null 2>&1
m=$(taskset -p "$gp")
[ "${m##*: }" = 2 ] || skip "the grace-period kthread cannot be bound to CPU 1: $m"
echo -1 > /proc/sys/kernel/sched_rt_runtime_us || fail "cannot turn RT throttling off"
echo 1 > /sys/kernel/rcu_expedited || fail "cannot make synchronize_rcu() expedited"

# The stall ends by itself after 16 s at the latest: before the RCU stall
# warning (21 s).
# busybox timeout execs the command under its own PID, with the watcher
# apart: $! is the loop itself, which stall_stop() kills.
stall_start() {
	timeout -s KILL 16 taskset 2 chrt -f 10 sh -c 'while :; do :; done' &
	hog=$!
	sleep 1
	running "$hog" || fail "test bug: the busy loop on CPU 1 did not start"
	[ "$(cat "/proc/$hog/comm" 2> /dev/null)" = sh ] ||
		fail "test bug: \$! is not the busy loop (a timeout that does not exec?)"
}
stall_stop() {
	kill -KILL "$hog" 2> /dev/null
	wait "$hog" 2> /dev/null
	hog=
}
# How many times the grace-period kthread was switched in: the same before
# and after means that no normal grace period ended in between.
gp_runs() {
	awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ { n += $2 } END { print n }' \
		"/proc/$gp/status"
}
# running PID: not gone, nor a zombie not yet reaped.
running() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2> /dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}
# How long rmmod gets during a stall.
limit=$((6 * ${TSCALE:-1}))
[ $limit -gt 10 ] && limit=10

step "calibration: rmmod with nothing queued, normal grace periods held off"
load_module
sleep 1
stall_start
n0=$(gp_runs)
rmmod blksnap > /tmp/rmmod.out 2>&1 &
rm=$!
wait_for $limit eval '! running $rm'
n1=$(gp_runs)
if running $rm || ! running "$hog"; then
	stall_stop
	wait_for 30 eval '! running $rm' || fail "test setup: rmmod still runs 30 s after the stall ended"
	wait $rm
	fail "test setup: with nothing queued, rmmod did not finish in ${limit}s while normal grace periods were held off (something in the unload waits for one, or for a task left on CPU 1)"
fi
stall_stop
wait $rm || fail "calibration rmmod failed: $(cat /tmp/rmmod.out)"
[ "$n0" = "$n1" ] ||
	fail "test setup: the grace-period kthread ran during the stall ($n0 -> $n1 switches)"

step "two failed creations queue rcu_sync_func on tracker_submit_lock, then rmmod"
load_module
sleep 1
stall_start
n0=$(gp_runs)
img0="$(cat /sys/class/misc/blksnap/major):0"
for i in 1 2; do
	out=$(bsctl create "$img0" 2>&1)
	[ "$out" = "ERR EINVAL" ] || fail "create of image device $img0 gave '$out', expected ERR EINVAL"
done
# Both creations ran within the stall (else the callback may have run).
running "$hog" && [ "$(gp_runs)" = "$n0" ] ||
	fail "test setup: the stall ended before rmmod (the creations took too long?)"
rmmod blksnap > /tmp/rmmod.out 2>&1 &
rm=$!
wait_for $limit eval '! running $rm'
n1=$(gp_runs)
# rmmod done while the stall still holds: no grace period ended since the
# callback was queued.
if ! running $rm && running "$hog"; then
	[ "$n0" = "$n1" ] ||
		fail "test setup: the grace-period kthread ran during the stall ($n0 -> $n1 switches)"
	echo "module-unload-waits-for-rcu-callback: blksnap.ko was freed with rcu_sync_func queued on its tracker_submit_lock; an oops follows when the grace period ends" > /dev/kmsg
	fail "rmmod returned ($(cat /tmp/rmmod.out)) with the rcu_sync callback of tracker_submit_lock still queued: no grace period ended since the snapshot release, the module's memory is freed under a pending RCU callback"
fi
# The fixed module waits in its exit until the grace period can end.
stall_stop
wait_for 30 eval '! running $rm' ||
	fail "rmmod did not finish 30 s after grace periods resumed"
wait $rm || fail "rmmod failed: $(cat /tmp/rmmod.out)"
lsmod | grep -q '^blksnap' && fail "blksnap still loaded after rmmod"
# The callback ran, on live memory: nothing to report.
sleep 2
dmesg | grep -E "$KERNEL_BAD_PATTERN" | head -n 1 | grep . && fail "the kernel complained (above)"
exit 0
