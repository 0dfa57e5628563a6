# Auto-grow when the initial storage is larger than the threshold, on a
# ext4 origin: 256 MiB given, 64 MiB threshold, watch --step 64M. 128 MiB
# of overwrites need no growth (none happens); 288 MiB more need at least
# 4 growths, which come (by 64 MiB each) with no corrupted event; the
# image is raw-exact, its files are as at take time and fsck is clean.
# timeout: 300
. /tests/common.sh

autogrow_test ext4 256 64 128 288
exit 0
