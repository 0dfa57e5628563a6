# The storage watcher killed with SIGKILL loses nothing: on an ext4 origin
# with its storage file inside, the snapshot stays taken with its file
# held, the low-space event raised while no watcher runs waits in the
# kernel, and a restarted watcher grows the file at once and keeps growing
# it (44 MiB copied on write through 32 MiB of initial storage); the image
# stays the origin at take time (and checks clean once its journal is
# replayed), and the watcher ends on destroy.
# timeout: 240
. /tests/common.sh

watch_kill_test ext4
exit 0
