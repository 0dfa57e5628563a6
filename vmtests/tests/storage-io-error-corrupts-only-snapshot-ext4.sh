# I/O errors of the difference storage corrupt the snapshot, never the
# origin: an ext4 origin snapshotted with its storage file on a dm-linear
# device whose file sectors are switched to the dm 'error' target while
# the snapshot is held. The origin's writes go on; the watcher gets the
# corrupted event for the origin and exits 3; the image fails to read;
# the origin's filesystem checks clean and holds exactly what was written;
# destroy still works.
# timeout: 240
. /tests/common.sh

storage_error_test ext4
exit 0
