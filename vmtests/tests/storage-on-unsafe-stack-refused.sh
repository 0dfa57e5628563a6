# A storage file on a stacked device that writes pages of its own to a
# disk of the snapshot must be refused by 'add', with one line that names
# the layer and the disk: those writes would be copied on write into the
# storage itself (a deadlock). The layer here is a dm-snapshot device
# whose exception store is the snapshotted disk (kcopyd writes its own
# pages there), alone and under a dm-linear device. Storage on dm-linear
# straight over the disk stays accepted. Failed on a54d490: 'add' gave
# the storage and the file was pinned.
# timeout: 120
. /tests/common.sh

load_module
disk=/dev/vdb
id=$(blksnap-storage create $disk) || fail "create failed"

# try FS_DEV NAME: 'add' of a file on a file system on FS_DEV must fail.
refused() {
	mkfs_of ext4 "$1"
	mkdir -p /mnt/s && run mount "$1" /mnt/s
	blksnap-storage add --snapshot "$id" /mnt/s/diff 16M > /tmp/add.out 2> /tmp/add.err &&
		fail "$2: add accepted storage stacked on $disk: $(cat /tmp/add.out)"
	[ "$(wc -l < /tmp/add.err)" = 1 ] || fail "$2: not one line: $(cat /tmp/add.err)"
	grep -q "snapshot.*vdb\|vdb.*tracked disk\|stacked on vdb" /tmp/add.err ||
		fail "$2: the message does not name vdb: $(cat /tmp/add.err)"
	note "$2: $(cat /tmp/add.err)"
	[ -e /mnt/s/diff ] && held /mnt/s/diff &&
		fail "$2: the refused file was left held"
	run umount /mnt/s
}

# The exception store of a dm-snapshot of vdc is vdb.
dm_create snap "0 $(sectors /dev/vdc) snapshot /dev/vdc $disk N 16"
refused /dev/mapper/snap "dm-snapshot on $disk"
# dm-linear over that dm-snapshot: the unsafe layer is below a safe one.
dm_create lin "0 $(blockdev --getsz /dev/mapper/snap) linear /dev/mapper/snap 0"
refused /dev/mapper/lin "dm-linear over dm-snapshot on $disk"
run dmsetup remove --noudevsync lin
run dmsetup remove --noudevsync snap

# dm-linear straight over the disk passes the module's pages on: accepted.
half=$(( $(sectors $disk) / 2 ))
dm_create st "0 $half linear $disk $half"
mkfs_of ext4 /dev/mapper/st
mkdir -p /mnt/s && run mount /dev/mapper/st /mnt/s
blksnap-storage add --snapshot "$id" /mnt/s/diff 16M > /dev/null 2> /tmp/add.err ||
	fail "add refused storage on dm-linear over $disk: $(cat /tmp/add.err)"
snap_destroy "$id" /mnt/s/diff
run umount /mnt/s
run dmsetup remove --noudevsync st
exit 0
