# On a stock kernel (make vmtest-stock) the filters come from
# bdev_filter.ko (kernel/standalone/). Its hooks exist only while a filter
# is attached; it cannot be unloaded under a filter; sysctl
# kernel.ftrace_enabled=0 cannot unhook a filter, and while it is 0 an
# attach fails with one line saying why; a tracked disk unplugged from
# the guest keeps its filter until blksnap lets it go (the driver holds
# its block device), and then nothing is left attached.
# timeout: 120
# kernels: both (the standalone hook (skips on the patched kernel))
. /tests/common.sh

[ -n "$BDEV_FILTER_KO" ] || skip "the kernel has the bdev_filter patch: no hook module to test"
tr=/sys/kernel/tracing
[ -r $tr/enabled_functions ] || mount -t tracefs nodev $tr 2>/dev/null
[ -r $tr/enabled_functions ] || fail "test bug: no tracefs enabled_functions"
hooked() { grep -q '^submit_bio_noacct_nocheck' $tr/enabled_functions; }
ftrace_on() { echo 1 > /proc/sys/kernel/ftrace_enabled; }

load_module
hooked && fail "submit_bio_noacct_nocheck is hooked with no filter attached"
id=$(blksnap-storage create /dev/vdb) || fail "create failed"
hooked || fail "submit_bio_noacct_nocheck is not hooked with a filter attached"
rmmod bdev_filter 2> /dev/null && fail "bdev_filter was unloaded with a filter attached"
if echo 0 > /proc/sys/kernel/ftrace_enabled 2> /dev/null; then
	ftrace_on
	fail "kernel.ftrace_enabled=0 was accepted with a filter attached"
fi
run blksnap-storage destroy "$id"
unload_module
hooked && fail "still hooked after blksnap detached its filters"
run rmmod bdev_filter

load_module
echo 0 > /proc/sys/kernel/ftrace_enabled || fail "cannot set kernel.ftrace_enabled=0"
if blksnap-storage create /dev/vdb > /tmp/create.out 2>&1; then
	ftrace_on
	fail "create succeeded with ftrace disabled"
fi
ftrace_on
msg=$(dmesg | grep 'bdev_filter: cannot hook' | head -n 1)
echo "$msg" | grep -q 'ftrace_enabled' || fail "no message naming ftrace_enabled: '$msg'"
log "refused: $msg; blksnap-storage said: $(tail -n 1 /tmp/create.out)"
grep -q 'another snapshot' /tmp/create.out &&
	fail "the command blames another snapshot: $(tail -n 1 /tmp/create.out)"
dmesg -c > /dev/null

disk=vdf
pci=$(readlink -f /sys/block/$disk/device/..)
[ -e "$pci/remove" ] || fail "test bug: no PCI remove for $disk ($pci)"
# The disk comes back whatever happens: later tests use it.
fail_rescan() {
	echo 1 > /sys/bus/pci/rescan
	fail "$@"
}
id=$(blksnap-storage create /dev/$disk) || fail "create of $disk failed"
run blksnap-storage destroy "$id" > /dev/null
hooked || fail "not hooked while $disk is tracked"
echo 1 > "$pci/remove"
[ -e /sys/block/$disk ] && fail_rescan "test bug: $disk still there after PCI remove"
hooked || fail_rescan "the filter went away while blksnap still tracks the unplugged $disk"
unload_module
hooked && fail_rescan "still hooked after blksnap let the unplugged $disk go"
rmmod bdev_filter || fail_rescan "bdev_filter cannot be unloaded after blksnap detached everything"
echo 1 > /sys/bus/pci/rescan
wait_for 20 test -b /dev/$disk || fail "$disk did not come back after a PCI rescan"
exit 0
