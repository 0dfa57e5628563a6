# Harness self-test (scripts/harness-test.sh runs it; expected to FAIL):
# the test passes, but the cleanup after it hangs: the test leaves dirty
# data on a file system outside /mnt whose dm device it suspends and
# never resumes, so the cleanup's closing sync waits for ever. The host
# must end the guest soon after, fail this test saying it hung in the
# cleanup and how its script ended, and run the rest in a new guest.
# timeout: 30
. /tests/common.sh

dmsetup create --noudevsync harness-hung --table "0 524288 linear /dev/vdb 0" ||
	fail "dmsetup create harness-hung failed"
dmsetup mknodes
mkfs_of ext4 /dev/mapper/harness-hung
mkdir -p /tmp/harness-hung && run mount /dev/mapper/harness-hung /tmp/harness-hung
dd if=/dev/zero of=/tmp/harness-hung/dirty bs=1M count=4 2> /dev/null ||
	fail "cannot write the dirty data"
dmsetup suspend --noudevsync --nolockfs --noflush harness-hung ||
	fail "dmsetup suspend harness-hung failed"
exit 0
