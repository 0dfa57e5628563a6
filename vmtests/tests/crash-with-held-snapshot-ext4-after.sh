# After a power loss with a snapshot held (see crash-with-held-snapshot-ext4,
# which runs first in the previous boot on the same disks): the ext4 origin
# mounts (its journal replayed), holds every file that was synced with
# the content that was synced, a synced move and delete stay done, fsck is
# clean once it is unmounted, the storage file is an ordinary file (not
# immutable; its unnamed second growth freed), the first add at its path
# removes it in one line, and blksnap takes a consistent snapshot of the
# device again. Failed on 926f177: the storage file was still immutable
# (the pin was a persistent flag).
# timeout: 150
. /tests/common.sh

crash_after ext4
exit 0
