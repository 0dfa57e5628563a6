# Harness self-test (scripts/harness-test.sh runs it; expected to FAIL):
# the test passes, but the cleanup after it hangs: the test leaves dirty
# data on a file system outside /mnt whose dm device it suspends and
# never resumes, so the cleanup's closing sync waits for ever. The host
# must end the guest soon after, fail this test saying it hung in the
# cleanup and how its script ended, and run the rest in a new guest.
# timeout: 30
. /tests/common.sh

dirty_suspended_fs harness-hung /dev/vdb
exit 0
