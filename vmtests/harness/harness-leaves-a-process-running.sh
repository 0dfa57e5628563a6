# Harness self-test (scripts/harness-test.sh runs it; expected to FAIL):
# a test that ends with a process of its own still running (a writer it
# forgot) fails, and the guest kills that process before the next test.
# Before, it ran on under every later test of its guest: busybox's
# timeout kills only the script (on b5c8071 nothing looked).
# timeout: 30
. /tests/common.sh

sleep 600 &
echo $! > /tmp/harness-left-pid
exit 0
