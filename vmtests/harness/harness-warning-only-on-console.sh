# Harness self-test (scripts/harness-test.sh runs it; expected to FAIL):
# a kernel complaint that the guest's own dmesg check cannot see any
# more (the ring buffer was cleared, as when it wraps) must still fail
# the test: the host reads the serial console, whose lines end in CRLF.
# timeout: 30
. /tests/common.sh

echo "WARNING: harness self-test, printed only to the console" > /dev/kmsg
dmesg -c > /dev/null
