# A storage file given with APPEND_FILE, on an xfs other than the
# snapshotted one, is held by the kernel as a swap file is: rm, mv over
# it or away, ln, truncate, O_TRUNC, appending and writing (buffered and
# direct), every fallocate mode, chattr +i/-i then rm, reflink and dedupe
# onto it, xfs_fsr and umount are refused or change nothing. A 200 MiB
# file written afterwards and a copy-on-write burst leave that file and
# the image unchanged; after destroy the file can be deleted at once.
# Failed on f76c335: the ioctl did not exist (ENOTTY).
# timeout: 300
. /tests/common.sh

storage_file_held_test xfs other
exit 0
