# The usual setup on a ext4 origin: the storage file in /var of the mounted
# filesystem being saved (blksnap-storage create/add/take on the mount
# point). While files are rewritten, appended to, deleted and added to,
# and a background writer keeps it busy, the image mounts read-only with
# every file as at take time and fsck of the image is clean; the origin
# keeps every write and is clean after unmount.
# timeout: 240
# kernels: both (the filter hook: the driver's own I/O on the snapshotted file system, end to end)
. /tests/common.sh

same_fs_consistency_test ext4
exit 0
