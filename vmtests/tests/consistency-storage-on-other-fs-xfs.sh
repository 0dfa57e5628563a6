# A snapshot of a mounted xfs origin, with its storage file on an ext4
# filesystem on another disk, taken with the origin frozen: while the
# origin's files are rewritten, appended to, deleted and added to, and a
# background writer keeps it busy, the image's raw checksum is the
# origin's at take time, the image mounts read-only with every file as it
# was, fsck of the image is clean, and the origin keeps every write.
# timeout: 240
. /tests/common.sh

other_fs_consistency_test xfs
exit 0
