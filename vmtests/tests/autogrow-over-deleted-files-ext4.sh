# The hard auto-grow case on a ext4 origin: the storage file lives in the
# origin filesystem, 96 MiB of files written right after it are deleted
# after the take (their blocks are free again but the image still shows
# them), then 224 MiB of copy-on-write make the watcher grow the file at
# least 3 times. Growth lands on the deleted files' blocks and must
# withhold them: no corrupted event, and every deleted file is intact in
# the image (checksums through a read-only mount); fsck is clean.
# timeout: 300
. /tests/common.sh

autogrow_deleted_test ext4
exit 0
