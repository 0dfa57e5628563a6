# 'add' of a new storage file on the snapshotted file system when the
# only free blocks are those of a file deleted after the take: the image
# still shows that file, so none of the blocks may be given to the
# kernel. 'add' says so and fails (exit 1), but gives the file to the
# kernel with no range, so that the kernel holds those blocks unused until
# destroy (a second 'add' gets other blocks rather than the same ones),
# names and records it; the deleted file is intact in the image.
# ext4 only: ext4 can be filled to its last block from user space
# deterministically, which this case needs; the xfs variant of the
# withholding is covered by autogrow-over-deleted-files-xfs.
# timeout: 180
. /tests/common.sh

orig=/dev/vdb
load_module
# No blocks reserved for root: they would be free at take time.
run mkfs.ext4 -q -F -m 0 -E lazy_itable_init=0,lazy_journal_init=0 $orig > /dev/null
mkdir -p /mnt/o && run mount $orig /mnt/o
id=$(blksnap-storage create /mnt/o) || fail "create failed"
run blksnap-storage add --snapshot "$id" /mnt/o/snap.diff 64M
sum=$(fill_but_a_file_to_delete /mnt/o) || exit 1
run blksnap-storage take "$id"
img=$(cli_image "$id" $orig) || exit 1

rm /mnt/o/deleted || fail "cannot delete the file"
sync
blksnap-storage add --snapshot "$id" /mnt/o/fresh.diff 16M > /tmp/add.out 2> /tmp/add.err
rc=$?
err=$(cat /tmp/add.err)
[ $rc = 1 ] || fail "add on blocks freed after take: exit $rc, expected 1: $err"
echo "$err" | grep -q "none of the new sectors was free when the snapshot was taken" ||
	fail "add on blocks freed after take: unexpected message: $err"
[ "$(wc -l < /tmp/add.err)" = 1 ] || fail "add printed more than one line of error: $err"
grep -q " 0 sectors given .* 32768 sectors withheld" /tmp/add.out ||
	fail "add's report does not show the 16 MiB withheld: $(cat /tmp/add.out)"
[ -f /mnt/o/fresh.diff ] || fail "add removed the file: a retry would get the same blocks"
held /mnt/o/fresh.diff || fail "the kernel does not hold the kept file"
blksnap-storage list | grep -q "^$id	taken	.*/mnt/o/fresh.diff" ||
	fail "the kept file is not recorded: $(blksnap-storage list)"

# The retry grows the storage by other blocks (an unnamed file): still
# freed ones here.
blksnap-storage add --snapshot "$id" /mnt/o/fresh.diff 8M > /tmp/add.out 2> /tmp/add.err
rc=$?
[ $rc = 1 ] || fail "second add: exit $rc, expected 1 (only freed blocks are left): $(cat /tmp/add.err)"
grep -q "^/mnt/o/fresh.diff: size $((24 * 1048576)) bytes, 0 sectors given .* 16384 sectors withheld" /tmp/add.out ||
	fail "the second add's report is not 24 MiB of storage, 8 MiB withheld: $(cat /tmp/add.out)"
[ "$(stat -c %s /mnt/o/fresh.diff)" = $((16 * 1048576)) ] ||
	fail "the named file is not the first 16 MiB: $(stat -c %s /mnt/o/fresh.diff) bytes"

mkdir -p /mnt/i
run mount -o ro,noload "$img" /mnt/i
[ "$(bsctl sum /mnt/i/deleted)" = "$sum" ] || fail "the deleted file is damaged in the image"
run umount /mnt/i
fsck_ro ext4 "$img"
run blksnap-storage destroy "$id"
rm /mnt/o/fresh.diff /mnt/o/snap.diff ||
	fail "cannot delete the storage files after destroy"
run umount /mnt/o
