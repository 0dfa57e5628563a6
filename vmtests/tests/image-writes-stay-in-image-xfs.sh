# A writable snapshot image of an xfs origin (a 384 MiB dm-linear part
# of a disk): its filesystem is mounted read-write and changed, and raw
# data is written to it; everything lands in the image only - the
# origin's sha256 is unchanged, its files are as before - the image reads
# back what was written (also after the origin is written at the same
# place), fsck of the image is clean, and the image's writes are marked
# in the CBT map.
# timeout: 240
. /tests/common.sh

image_write_test xfs
exit 0
