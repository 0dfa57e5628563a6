# After a power loss with a snapshot held (see crash-with-held-snapshot-xfs,
# which runs first in the previous boot on the same disks): the xfs origin
# mounts (its journal replayed), holds every file that was synced with
# the content that was synced, a synced move and delete stay done, fsck is
# clean once it is unmounted, the stale storage file can be deleted, and
# blksnap takes a consistent snapshot of the device again.
# timeout: 150
. /tests/common.sh

crash_after xfs
exit 0
