# A storage file on xfs cannot be deleted, truncated, extended, emptied,
# appended to, renamed or hole-punched while the kernel holds it (after
# add, after take, during copy-on-write): each fails with EPERM or
# ETXTBSY and the file's size and sectors stay the same. After destroy it
# is let go and can be truncated and deleted, and the filesystem checks
# clean.
# timeout: 120
. /tests/common.sh

storage_pinned_test xfs
exit 0
