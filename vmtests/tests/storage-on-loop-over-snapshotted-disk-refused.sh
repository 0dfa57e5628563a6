# A storage file on a file system on a loop device whose backing file is
# on a disk of the snapshot must be refused by 'add', in one line naming
# the loop device and the disk: buffered loop writes are page-cache pages
# of the backing file, written back to the snapshotted disk, so they would
# be copied on write into the storage itself. The same on a partition of
# such a loop device (losetup -P) is refused too. A loop device over a
# file in /dev/shm (tmpfs, as make_loop makes) stays accepted. Failed on e4476eb
# (review S6b): 'add' gave the storage, since a loop device has no
# slaves/ in sysfs.
# timeout: 120
. /tests/common.sh

load_module
disk=/dev/vdb
mkfs_of ext4 $disk
mkdir -p /mnt/o && run mount $disk /mnt/o
run truncate -s 64M /mnt/o/img
loop=$(losetup -f --show /mnt/o/img) || fail "losetup /mnt/o/img failed"
id=$(blksnap-storage create $disk) || fail "create failed"

mkfs_of ext4 "$loop"
mkdir -p /mnt/s && run mount "$loop" /mnt/s
blksnap-storage add --snapshot "$id" /mnt/s/diff 16M > /tmp/add.out 2> /tmp/add.err &&
	fail "add accepted storage on $loop over a file on $disk: $(cat /tmp/add.out)"
[ "$(wc -l < /tmp/add.err)" = 1 ] || fail "not one line: $(cat /tmp/add.err)"
grep -q "${loop#/dev/} (a loop device over /mnt/o/img), stacked on vdb" /tmp/add.err ||
	fail "the message does not name ${loop#/dev/} and vdb: $(cat /tmp/add.err)"
note "$(cat /tmp/add.err)"
[ -e /mnt/s/diff ] && held /mnt/s/diff &&
	fail "the refused file was left held"
run umount /mnt/s
run losetup -d "$loop"

# A partition of such a loop device: its writes are the loop device's.
run truncate -s 64M /mnt/o/pimg
{
	dd if=/dev/zero bs=446 count=1 2>/dev/null
	printf "\\000\\000\\002\\000\\203\\376\\377\\377$(le32 2048)$(le32 $((64 * 2048 - 2048)))"
	dd if=/dev/zero bs=48 count=1 2>/dev/null
	printf '\125\252'
} | dd of=/mnt/o/pimg conv=notrunc 2>/dev/null || fail "cannot write the partition table"
loop=$(losetup -P -f --show /mnt/o/pimg) || fail "losetup -P /mnt/o/pimg failed"
wait_for 10 test -b "${loop}p1" || fail "${loop}p1 did not appear"
mkfs_of ext4 "${loop}p1"
run mount "${loop}p1" /mnt/s
blksnap-storage add --snapshot "$id" /mnt/s/diff 16M > /tmp/add.out 2> /tmp/add.err &&
	fail "add accepted storage on ${loop}p1 over a file on $disk: $(cat /tmp/add.out)"
[ "$(wc -l < /tmp/add.err)" = 1 ] || fail "partition: not one line: $(cat /tmp/add.err)"
grep -q "${loop#/dev/} (a loop device over /mnt/o/pimg), stacked on vdb" /tmp/add.err ||
	fail "partition: the message does not name ${loop#/dev/} and vdb: $(cat /tmp/add.err)"
note "$(cat /tmp/add.err)"
run umount /mnt/s
run losetup -d "$loop"
blksnap-storage destroy "$id" > /dev/null || fail "destroy $id failed"
run umount /mnt/o

# Loop over a file in tmpfs: not on any disk, accepted.
id=$(blksnap-storage create $disk) || fail "create failed"
shm=$(make_loop 64)
mkfs_of ext4 "$shm"
run mount "$shm" /mnt/s
blksnap-storage add --snapshot "$id" /mnt/s/diff 16M > /dev/null 2> /tmp/add.err ||
	fail "add refused storage on $shm over /dev/shm: $(cat /tmp/add.err)"
snap_destroy "$id" /mnt/s/diff
run umount /mnt/s
run losetup -d "$shm"
exit 0
