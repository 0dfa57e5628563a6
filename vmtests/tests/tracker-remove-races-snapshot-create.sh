# Removing a device from tracking while a snapshot of it is being created
# never leaves a snapshot whose tracker is detached: either the removal or
# the creation fails with EBUSY, and every snapshot that was taken keeps
# its image at take time. Failed on d7861d9: tracker_remove() checked
# in_snapshot, then detached, while snapshot creation claimed the tracker
# in between: nothing was copied and the image followed the origin.
# The race is met at a create (a removal, most likely of the tracker
# the previous round's destroy released, still detaching it): what
# follows the take only has to see whether the image follows the
# origin, so each round hashes the image's MiB that the write changes,
# not the whole 16 MiB twice (two thirds of a round's cost under TCG).
# With cheaper rounds there are more of them (80, 60 before): more
# creates, as many races met or more, in about half the time.
# timeout: 600
# kernels: both (the filter hook: attach and detach)
. /tests/common.sh

load_module
dev=$(make_loop 16)
store=$(make_loop 64)
d=$(devnum $dev)
write_random $dev 0 16 1
# Keep removing the tracker while snapshots are created and taken.
( while [ ! -e /tmp/race.stop ]; do bsctl tracker-remove "$d" > /dev/null 2>&1; done ) &
remover=$!
rm -f /tmp/race.stop
empty=$(sha256sum < /dev/null)
taken=0
busy=0
n=0
while [ $n -lt 80 ]; do
	n=$((n + 1))
	out=$(bsctl create "$d" 2>&1)
	case "$out" in
	"OK "*) id=${out#OK } ;;
	"ERR EBUSY") busy=$((busy + 1)); continue ;;
	*) touch /tmp/race.stop; fail "create gave '$out'" ;;
	esac
	bsctl append "$id" "$(devnum $store)" 0:131072 > /dev/null
	if [ "$(bsctl take "$id")" = OK ]; then
		taken=$((taken + 1))
		img=$(image_of "$id" $dev)
		at=$((n % 16))
		# The image's MiB at AT, read anew (the image is not held open
		# in between: its page cache goes at its last close).
		before=$(dd if="$img" bs=1M skip=$at count=1 2> /dev/null | sha256sum)
		write_random $dev $at 1 $((n + 1000))
		after=$(dd if="$img" bs=1M skip=$at count=1 2> /dev/null | sha256sum)
		if [ "$before" != "$after" ]; then
			touch /tmp/race.stop
			fail "round $n: the image changed with the origin (its tracker was detached)"
		fi
		# Two failed reads would hash alike.
		if [ "$before" = "$empty" ]; then
			touch /tmp/race.stop
			fail "round $n: the image $img cannot be read"
		fi
	fi
	bsctl destroy "$id" > /dev/null
done
touch /tmp/race.stop
wait $remover
note "$taken snapshots taken, $busy creations refused with EBUSY in $n rounds"
[ $taken -gt 0 ] || fail "no snapshot was taken in $n rounds"
exit 0
