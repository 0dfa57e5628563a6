# A storage file on XFS that lands on the realtime device (a directory
# with the rtinherit flag) is refused by 'add' in one line naming the
# cause: FIEMAP gives its extents as offsets on the realtime device, which
# would be handed to the kernel as sectors of the data device. Failed on
# e4476eb (its CLI on today's test kernel, and on Debian's kernel with
# 'make vmtest-stock'): 'add' gave the realtime extents as sectors of the
# data device.
# timeout: 120
. /tests/common.sh

load_module
data=$(make_loop 320)
rt=$(make_loop 64)
run mkfs.xfs -q -f -r rtdev=$rt $data
mkdir -p /mnt/x
mount -o rtdev=$rt $data /mnt/x 2> /tmp/mount.err ||
	skip "this kernel cannot mount XFS with a realtime device (CONFIG_XFS_RT): $(cat /tmp/mount.err)"
mkdir /mnt/x/rt && run xfs_io -c 'chattr +t' /mnt/x/rt
id=$(blksnap-storage create $data) || fail "create failed"
blksnap-storage add --snapshot "$id" /mnt/x/rt/diff 16M > /tmp/add.out 2> /tmp/add.err &&
	fail "add accepted a realtime file: $(cat /tmp/add.out)"
[ "$(wc -l < /tmp/add.err)" = 1 ] || fail "not one line: $(cat /tmp/add.err)"
grep -q "XFS realtime file" /tmp/add.err || fail "unexpected message: $(cat /tmp/add.err)"
[ -e /mnt/x/rt/diff ] && fail "the refused file was left behind"
note "$(cat /tmp/add.err)"
# The same file system outside the realtime directory: accepted.
blksnap-storage add --snapshot "$id" /mnt/x/diff 16M > /dev/null 2> /tmp/add.err ||
	fail "add refused a plain file on the same XFS: $(cat /tmp/add.err)"
run blksnap-storage destroy "$id"
rm -f /mnt/x/diff
run umount /mnt/x
exit 0
