# User space written for blksnap v1 gives storage only when asked: it
# creates the snapshot, waits for the low_free_space event that v1 raises
# at create, appends the sectors it asks for, takes the snapshot, and
# from then on appends storage only in reply to further events
# ("stretch"). Both flows, with the raw ioctls. Failed on d7861d9: no
# event came at create (ENOENT), so this flow never gave storage and the
# take failed with ENOSPC.
# timeout: 180
. /tests/common.sh

# Threshold 4 MiB (8192 sectors), 64 KiB chunks.
load_module diff_storage_minimum=8192 chunk_minimum_shift=16
dev=$(make_loop 128)
store=$(make_loop 160)
write_random $dev 0 128 3
before=$(sha $dev)

# ms_since START: milliseconds since an uptime_s reading (10 ms steps).
ms_since() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%d", (b - a) * 1000 }'; }

# 1. Create, wait for the event, give what it asks, take, write, read.
t0=$(uptime_s)
id=$(bsok create "$(devnum $dev)")
got=$(bsok wait "$id" 100)
took=$(ms_since $t0)
[ "$got" = "low_free_space 8192" ] || fail "create raised no event asking for 8192 sectors: '$got'"
# The wait's own 100 ms timeout is the bound; the time noted includes
# starting two programs under TCG.
note "create-time event after $took ms"
bsok append "$id" "$(devnum $store)" 0:8192 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $dev)
write_random $dev 0 1 9
[ "$(sha "$img")" = "$before" ] || fail "the image differs from the origin at take time"
bsok destroy "$id" > /dev/null

# 2. Stretch: storage is appended only in reply to events, 4 MiB each
# (what the event asks), while 40 MiB of the origin are overwritten.
id=$(bsok create "$(devnum $dev)")
given=0
got=$(bsok wait "$id" 100)
[ "$got" = "low_free_space 8192" ] || fail "create raised no event: '$got'"
bsok append "$id" "$(devnum $store)" 0:8192 > /dev/null
next=8192
bsok take "$id" > /dev/null
img=$(image_of "$id" $dev)
before=$(sha "$img")
i=0
while [ $i -lt 40 ]; do
	write_random $dev $i 1 $((100 + i))
	# Serve every event that is due (the writer is not waiting here).
	while out=$(bsctl wait "$id" 0) && [ "${out%% *}" = OK ]; do
		case "$out" in
		"OK low_free_space "*)
			n=${out#OK low_free_space }
			bsok append "$id" "$(devnum $store)" "$next:$n" > /dev/null
			next=$((next + n))
			given=$((given + 1)) ;;
		*) fail "unexpected event '$out'" ;;
		esac
	done
	i=$((i + 1))
done
note "stretch: $given requests answered, $next sectors given"
[ $given -ge 4 ] || fail "only $given storage requests for 40 MiB of changes"
dmesg | grep -q corrupted && fail "the snapshot was corrupted"
[ "$(sha "$img")" = "$before" ] || fail "the image changed while storage was stretched"
bsok destroy "$id" > /dev/null
exit 0
