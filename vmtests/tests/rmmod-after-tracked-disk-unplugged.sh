# A tracked disk can be unplugged while a process keeps it open: its
# device number no longer opens, yet its block device lives on with the
# filter attached. Removing its tracker by number must still work, and so
# must rmmod, and the disk must come back under its name when plugged in
# again. The disk is removed from inside the guest through its PCI
# device's sysfs "remove" and brought back with a PCI rescan. Failed on
# 28d0c5e: rmmod looped in tracker_wait_for_release() forever ("Waiting
# for trackers release"), since module exit could find a tracker only by
# opening its device.
# timeout: 180
# kernels: both (the filter hook: a tracked disk that goes away)
. /tests/common.sh

disk=vdf
pci=$(readlink -f /sys/block/$disk/device/..)
[ -e "$pci/remove" ] || fail "test bug: no PCI remove for $disk ($pci)"

# unplug_tracked: track $disk, unplug it while fd 3 holds it open.
unplug_tracked() {
	local id
	id=$(blksnap-storage create /dev/$disk) || fail "create failed"
	run blksnap-storage destroy "$id" > /dev/null
	# The device stays tracked (change tracking outlives the snapshot).
	cbt_field /dev/$disk generation > /dev/null || exit 1
	num=$(devnum /dev/$disk)
	exec 3< /dev/$disk
	echo 1 > "$pci/remove"
	[ -e /sys/block/$disk ] && fail "test bug: $disk still there after PCI remove"
}
replug() {
	exec 3<&-
	echo 1 > /sys/bus/pci/rescan
	wait_for 20 test -b /dev/$disk ||
		fail "$disk did not come back after a PCI rescan: $(ls /sys/block | tr '\n' ' ')"
}

load_module
unplug_tracked
out=$(bsctl tracker-remove "$num")
case "$out" in OK*) ;; *) fail "tracker-remove of the unplugged $num: $out" ;; esac
replug

unplug_tracked
rmmod blksnap > /tmp/rmmod.out 2>&1 &
r=$!
wait_for 30 eval '! kill -0 $r 2>/dev/null' ||
	fail "rmmod did not finish in 30 s: $(dmesg | grep -E 'Waiting for trackers|Failed to release' | tail -n 1)"
wait $r || fail "rmmod failed: $(cat /tmp/rmmod.out)"
replug

load_module
write_random /dev/$disk 0 1 3
unload_module
exit 0
