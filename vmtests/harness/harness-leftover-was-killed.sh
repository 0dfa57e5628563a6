# Harness self-test (scripts/harness-test.sh runs it after
# harness-leaves-a-process-running, in the same guest): the process that
# test left running was killed before this one started.
# timeout: 30
. /tests/common.sh

pid=$(cat /tmp/harness-left-pid) || fail "no /tmp/harness-left-pid: the test before did not run"
state=$(sed 's/.*) \([A-Z]\).*/\1/' /proc/"$pid"/stat 2> /dev/null)
[ -z "$state" ] || [ "$state" = Z ] ||
	fail "the process harness-leaves-a-process-running left (pid $pid, state $state) still runs"
exit 0
