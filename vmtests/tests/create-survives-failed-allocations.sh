# Every allocation that creating a snapshot makes may fail: the create
# then fails with an error code and leaves nothing behind (kmemleak checks
# after the test), or succeeds with its create-time low free space event
# queued, which v1 user space waits for. Needs fault injection (the debug
# kernel); skipped elsewhere.
# timeout: 600
. /tests/common.sh

fi=/sys/kernel/debug
[ -d $fi/failslab ] || mount -t debugfs none $fi 2>/dev/null
[ -d $fi/failslab ] || skip "the kernel has no fault injection (make check DEBUG=1 has it)"
for f in failslab fail_page_alloc; do
	echo N > $fi/$f/ignore-gfp-wait
	echo 0 > $fi/$f/verbose
done
echo 0 > $fi/fail_page_alloc/min-order

load_module
dev=$(make_loop 64)
d=$(devnum $dev)
# The tracker exists from the first create on; the first round makes it.
n=1
while :; do
	[ $n -le 200 ] || fail "the create still failed with its 200th allocation failing"
	out=$(BSCTL_FAIL_NTH=$n bsctl create "$d")
	case "$out" in
	"NOT-REACHED OK "* | "OK "*)
		id=${out##* }
		got=$(bsctl wait "$id" 100)
		case "$got" in
		"OK low_free_space "*) ;;
		*) fail "create with allocation $n failing: no create-time event ('$got')" ;;
		esac
		bsok destroy "$id" > /dev/null
		[ "${out%% *}" = NOT-REACHED ] && break ;;
	"ERR "E*) ;;
	*) fail "create with allocation $n failing gave '$out'" ;;
	esac
	n=$((n + 1))
done
note "the create passed $((n - 1)) fault points; each one failing was survived"
[ $n -gt 3 ] || fail "test bug: the create passed only $((n - 1)) fault points"
dmesg | grep -E 'BUG:|Oops|KASAN|UBSAN|general protection|WARNING:|inconsistent lock|possible' |
	head -n 1 | grep . && fail "the kernel complained (above)"
dmesg -c > /dev/null
[ "$(bsok collect)" = 0 ] || fail "snapshots left behind: $(bsok collect)"
exit 0
