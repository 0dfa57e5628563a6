# 100,000 random ioctls (valid and invalid commands, random structures,
# NULL and wild pointers, huge counts, real and made-up devices and
# snapshot ids) leave the kernel clean: no warning, no oops, and the
# module unloads afterwards.
# Two things that cost most of its time and are not blksnap's are kept
# out: a made-up device number made the block layer ask for the module
# of its major, which started the usermode helper once per call (the
# guest has no /sbin/modprobe: nothing is ever loaded that way), so the
# modprobe path is empty during the run; and a fourth loop device stays
# tracked throughout, so that the fuzzer's successful tracker removals
# and creates never take the standalone filter's count to zero, which
# unregistered and registered its ftrace hooks each time (those hooks'
# comings and goings are tested by standalone-hook-module-rules and
# tracker-remove-races-snapshot-create). The fuzzer makes the same calls
# (same seed), in about half the time.
# timeout: 900
. /tests/common.sh

load_module
a=$(make_loop 32); b=$(make_loop 32); c=$(make_loop 64); e=$(make_loop 16)
id=$(bsok create "$(devnum $e)") || fail "$id"
bsok destroy "$id" > /dev/null
modprobe=$(cat /proc/sys/kernel/modprobe)
trap 'echo "$modprobe" > /proc/sys/kernel/modprobe' EXIT
echo > /proc/sys/kernel/modprobe || fail "cannot empty the modprobe path"
out=$(bsctl fuzz 100000 12345 "$(devnum $a)" "$(devnum $b)" "$(devnum $c)") ||
	fail "fuzzer failed: $out"
echo "$out"
case "$out" in
"OK 100000 calls"*) ;;
*) fail "fuzzer said '$out'" ;;
esac
[ "$(bsok collect)" = 0 ] || fail "snapshots left after the fuzzer destroyed them"
unload_module
exit 0
