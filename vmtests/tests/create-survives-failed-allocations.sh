# Every allocation that creating a snapshot makes may fail: the create
# then fails with an error code and leaves nothing behind (kmemleak checks
# after the test), or succeeds with its create-time low free space event
# queued, which v1 user space waits for. Needs fault injection (the debug
# kernel); skipped elsewhere.
# timeout: 600
. /tests/common.sh

fault_injection
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
fault_dmesg_clean
[ "$(bsok collect)" = 0 ] || fail "snapshots left behind: $(bsok collect)"
exit 0
