# The low free space event comes when the free storage falls under the
# threshold, also when the storage given is larger than the threshold
# from the start. (The seed computed "requested - filled", which
# underflowed once more than the threshold had been given: no event,
# then overflow.) It comes once, and again after more storage is given.
# timeout: 180
. /tests/common.sh

# Threshold 16 MiB; 64 MiB of storage; 256 KiB chunks.
load_module diff_storage_minimum=32768
dev=$(make_loop 128)
store=$(make_loop 160)
id=$(bsok create "$(devnum $dev)")
# The create-time request for the first storage (v1-event-flow tests it).
got=$(bsok wait "$id" 100)
[ "$got" = "low_free_space 32768" ] || fail "no create-time event: '$got'"
bsok append "$id" "$(devnum $store)" 0:131072 > /dev/null
bsok take "$id" > /dev/null
expect_err ENOENT bsctl wait "$id" 100
# 40 MiB of changes leave 24 MiB free: no event yet.
write_random $dev 0 40 1
expect_err ENOENT bsctl wait "$id" 100
# 10 MiB more leave 14 MiB: the event, asking for the threshold.
write_random $dev 40 10 2
got=$(bsok wait "$id" 5000)
[ "$got" = "low_free_space 32768" ] || fail "expected a low free space event, got '$got'"
write_random $dev 50 4 3
expect_err ENOENT bsctl wait "$id" 100
# More storage re-arms it.
bsok append "$id" "$(devnum $store)" 131072:32768 > /dev/null
write_random $dev 54 20 4
got=$(bsok wait "$id" 5000)
[ "$got" = "low_free_space 32768" ] || fail "no second event after more storage, got '$got'"
dmesg | grep -q corrupted && fail "the snapshot was corrupted"
bsok destroy "$id" > /dev/null
exit 0
