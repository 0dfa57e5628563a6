# Storage overflow on a xfs origin: 16 MiB of storage, no watcher, 64 MiB
# and more written. The corrupted event comes naming the origin, with
# ENOSPC after the 5 s wait for storage (checked last, so that the rest is checked anyway); every
# byte written is on the origin (checksums after remount, clean fsck);
# reads of the image fail with an I/O error instead of returning data;
# destroy works; a new snapshot of the same device is raw-exact, with
# its files as at take time and a clean fsck.
# timeout: 240
. /tests/common.sh

overflow_test xfs
exit 0
