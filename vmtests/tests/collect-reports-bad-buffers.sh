# COLLECT, COLLECT_IMAGES and TRACKER_COLLECT fail with EFAULT for a bad
# output buffer and with ENOBUFS plus the needed count for a short one.
# (The seed's snapshot_collect() reported success when copy_to_user
# failed.)
# timeout: 120
. /tests/common.sh

load_module
a=$(make_loop 64); b=$(make_loop 64)
ida=$(bsok create "$(devnum $a)")
idb=$(bsok create "$(devnum $b)")
expect_err EFAULT bsctl collect-raw 10 WILD
expect_err ENOBUFS bsctl collect-raw 1 BUF
[ "$(bsok collect-raw 0 NULL)" = 2 ] || fail "counting snapshots did not give 2"
[ "$(bsok collect-raw 5 BUF)" = 2 ] || fail "collecting into 5 slots did not give 2"
bsok destroy "$ida" > /dev/null
bsok destroy "$idb" > /dev/null
exit 0
