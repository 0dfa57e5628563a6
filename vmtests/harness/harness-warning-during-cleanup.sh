# Harness self-test (scripts/harness-test.sh runs it; expected to FAIL):
# a kernel complaint while the guest cleans up after a test (unmounting,
# removing devices, unloading the module, syncing) fails that test. The
# test leaves dirty data on a file system outside /mnt whose dm device
# it suspends, so the cleanup's closing sync waits; a helper prints a
# WARNING when the cleanup removes /run/blksnap, and only then resumes
# the device and lets the sync end.
# timeout: 60
. /tests/common.sh

mkdir -p /run/blksnap && touch /run/blksnap/harness-marker
dirty_suspended_fs harness-slow /dev/vdc
# The helper has a session of its own: the guest kills what is left
# running in the test's before the cleanup.
setsid sh -c '
	while [ -e /run/blksnap/harness-marker ]; do sleep 0.1; done
	echo "WARNING: harness self-test, printed during the cleanup" > /dev/kmsg
	dmsetup resume --noudevsync harness-slow
' > /dev/null 2>&1 < /dev/null &
exit 0
