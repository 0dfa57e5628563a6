# Auto-grow from small storage on a xfs origin: 64 MiB of storage on
# another filesystem, a 32 MiB low-space threshold, 'blksnap-storage
# watch --step 64M --json' running; 320 MiB overwritten on the origin
# make it grow at least 5 times, by 64 MiB each, with nothing withheld and
# no corrupted or failed event; the file's size is what the log says; the
# image is raw-exact, its files are as at take time and fsck is clean.
# timeout: 300
. /tests/common.sh

autogrow_test xfs 64 32 0 320
exit 0
