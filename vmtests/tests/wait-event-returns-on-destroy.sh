# A thread waiting for a snapshot's events returns ESRCH as soon as the
# snapshot is destroyed, not at the end of its timeout; waiting on an
# unknown snapshot fails at once.
# timeout: 120
. /tests/common.sh

load_module
dev=$(make_loop 64)
id=$(bsok create "$(devnum $dev)")
# The request for the first storage, raised at create (as in v1).
got=$(bsok wait "$id" 100)
[ "${got%% *}" = low_free_space ] || fail "no create-time event: '$got'"
bsctl wait "$id" 60000 > /tmp/wait.out &
waiter=$!
sleep 1
start=$(date +%s)
bsok destroy "$id" > /dev/null
wait $waiter
took=$(($(date +%s) - start))
[ "$(cat /tmp/wait.out)" = "ERR ESRCH" ] || fail "the waiter got '$(cat /tmp/wait.out)'"
[ $took -le 3 ] || fail "the waiter took ${took}s to notice"
expect_err ESRCH bsctl wait "$id" 100
exit 0
