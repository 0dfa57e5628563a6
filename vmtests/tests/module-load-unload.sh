# The module loads and unloads ten times, with /dev/blksnap and its sysfs
# attributes appearing and going each time.
# timeout: 120
# kernels: both (module load and unload)
. /tests/common.sh

i=0
while [ $i -lt 10 ]; do
	load_module
	[ -r /sys/class/misc/blksnap/major ] || fail "no /sys/class/misc/blksnap/major"
	grep -q "^$(cat /sys/class/misc/blksnap/major) blksnap-image" /proc/devices ||
		fail "image major in sysfs does not match /proc/devices"
	unload_module
	[ -e /dev/blksnap ] && fail "/dev/blksnap is still there after rmmod"
	i=$((i + 1))
done
# Parameters out of their bounds are refused with a message.
insmod "$BLKSNAP_KO" chunk_minimum_shift=5 2>/dev/null && fail "chunk_minimum_shift=5 was accepted"
dmesg | grep -q "chunk_minimum_shift=5 is out of range" || fail "no message for a bad parameter"
exit 0
