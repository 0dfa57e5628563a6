# Every allocation that taking a snapshot makes may fail (each of the
# first 400 is failed in turn, then every 37th): the take then fails with
# an error code, and the device stays usable, tracked and
# snapshottable; nothing oopses and nothing leaks (kmemleak checks after
# the test). The device changes size before each take, so that the take
# also resets the CBT map: on d7861d9 a reset that could not allocate left
# both maps NULL, and the next write to the device dereferenced them.
# Needs fault injection (the debug kernel); skipped elsewhere.
# timeout: 900
. /tests/common.sh

fault_injection
load_module
dev=$(make_loop 64)
back=$(losetup -nO BACK-FILE $dev | tr -d ' ')
store=$(make_loop 160)
d=$(devnum $dev)
s=$(devnum $store)
id=$(bsok create "$d")
bsok append "$id" "$s" 0:131072 > /dev/null
bsok take "$id" > /dev/null
bsok destroy "$id" > /dev/null

# Each point in turn up to the 400th; past it, every 37th: the take makes
# more than a thousand (a device's reserve of buffers is a loop of page
# allocations, 64 to a buffer), and one of a loop's points fails as any.
n=1
step=1
while :; do
	[ $n -le 4000 ] || fail "the take still failed with its ${n}th allocation failing"
	truncate -s $((64 + 16 * (n % 2)))M "$back" && losetup -c $dev ||
		fail "cannot resize $dev"
	id=$(bsok create "$d")
	bsok append "$id" "$s" 0:131072 > /dev/null
	out=$(BSCTL_FAIL_NTH=$n bsctl take "$id")
	# The write that found NULL maps after a failed reset.
	write_random $dev 0 1 $n
	# A take that failed after the switch destroyed the snapshot itself.
	d_out=$(bsctl destroy "$id")
	case "$d_out" in
	OK | "ERR ESRCH") ;;
	*) fail "destroy after take with allocation $n failing gave '$d_out'" ;;
	esac
	case "$out" in
	"NOT-REACHED OK") break ;;
	OK | "ERR "E*) ;;
	*) fail "take with allocation $n failing gave '$out'" ;;
	esac
	[ $n -lt 400 ] || step=37
	n=$((n + step))
done
note "the take passed fewer than $n fault points; each one failed was survived"
[ $n -gt 3 ] || fail "test bug: the take passed only $((n - 1)) fault points"
fault_dmesg_clean
id=$(bsok create "$d")
bsok append "$id" "$s" 0:131072 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $dev)
before=$(sha "$img")
write_random $dev 0 8 7
[ "$(sha "$img")" = "$before" ] || fail "the last snapshot's image follows the origin"
bsok destroy "$id" > /dev/null
exit 0
