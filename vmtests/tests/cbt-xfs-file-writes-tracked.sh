# Change block tracking through xfs: files are overwritten in place (a
# byte, a page, an unaligned 5000 bytes, a whole file) and a new file is
# written between two snapshots; the blocks 'cbt read' lists after the
# second take cover every device sector holding the written data (filefrag
# maps it), include no block lying wholly inside file data nobody wrote,
# and at most 64 more (the filesystem's metadata); the generation is kept.
# timeout: 180
. /tests/common.sh

cbt_fs_test xfs
exit 0
