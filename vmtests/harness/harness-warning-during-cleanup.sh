# Harness self-test (scripts/harness-test.sh runs it; expected to FAIL):
# a kernel complaint while the guest cleans up after a test (unmounting,
# removing devices, unloading the module, syncing) fails that test. The
# test leaves dirty data on a file system outside /mnt whose dm device
# it suspends, so the cleanup's closing sync waits; a helper prints a
# WARNING when the cleanup removes /run/blksnap, and only then resumes
# the device and lets the sync end.
# timeout: 60
. /tests/common.sh

dmsetup create --noudevsync harness-slow --table "0 524288 linear /dev/vdc 0" ||
	fail "dmsetup create harness-slow failed"
dmsetup mknodes
mkfs_of ext4 /dev/mapper/harness-slow
mkdir -p /tmp/harness-fs && run mount /dev/mapper/harness-slow /tmp/harness-fs
mkdir -p /run/blksnap && touch /run/blksnap/harness-marker
# Dirty pages that can only reach the device once it is resumed (written
# before the suspend: a write after it can block reading the block
# bitmaps).
dd if=/dev/zero of=/tmp/harness-fs/dirty bs=1M count=4 2> /dev/null ||
	fail "cannot write the dirty data"
dmsetup suspend --noudevsync --nolockfs --noflush harness-slow ||
	fail "dmsetup suspend harness-slow failed"
(
	while [ -e /run/blksnap/harness-marker ]; do sleep 0.1; done
	echo "WARNING: harness self-test, printed during the cleanup" > /dev/kmsg
	dmsetup resume --noudevsync harness-slow
) > /dev/null 2>&1 < /dev/null &
exit 0
