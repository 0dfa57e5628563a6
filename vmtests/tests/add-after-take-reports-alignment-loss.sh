# 'add' after the take on a 1 KiB-block ext4 whose free space is (almost
# only) 1 KiB holes that were free at take time: none of it was in use
# then, it is only too fragmented for the storage's 4 KiB alignment. 'add'
# must say so (alignment, not the take), and keep nothing if it gave
# nothing. Failed on e4476eb: "8 sectors given, 0 sectors withheld" and
# nothing about the other 504 sectors of the 256 KiB: the alignment of
# the file's own extents was not counted (issue 13 item 4); and inside
# the take-time filter, alignment loss was counted as withheld (see
# unit/test_filter.c).
# timeout: 300
. /tests/common.sh

load_module
dev=$(make_loop 64)
run mkfs.ext4 -q -F -b 1024 -m 0 -E lazy_itable_init=0,lazy_journal_init=0 $dev > /dev/null
mkdir -p /mnt/o && run mount $dev /mnt/o
# ext4 keeps some clusters out of df's count (reserved_clusters), free
# space the filling below would not reach: hand them out too.
echo 0 > /sys/fs/ext4/$(basename $dev)/reserved_clusters ||
	fail "cannot clear ext4's reserved clusters"
id=$(blksnap-storage create $dev) || fail "create failed"
run blksnap-storage add --snapshot "$id" /mnt/o/snap.diff 8M
# Fill the file system but 1 MiB and a little room for the extent blocks
# the punching needs, then punch a 1 KiB hole in every other KiB of the
# last MiB: the free space is 1 KiB holes between used blocks.
avail=$(df -k /mnt/o | awk 'NR == 2 { print $4 }')
run fallocate -l $(((avail - 1024 - 16) * 1024)) /mnt/o/ballast
run fallocate -l 1M /mnt/o/holes
cmds=
k=0
while [ $k -lt 1024 ]; do cmds="$cmds -c 'fpunch ${k}k 1k'"; k=$((k + 2)); done
eval xfs_io $cmds /mnt/o/holes || fail "cannot punch the holes"
[ "$(filefrag -v /mnt/o/holes | grep -c unwritten)" -ge 500 ] ||
	fail "test setup: the holes were not punched: $(filefrag -v /mnt/o/holes | head -n 5)"
sync
run blksnap-storage take "$id"

blksnap-storage add --snapshot "$id" /mnt/o/fresh.diff 256K > /tmp/add.out 2> /tmp/add.err
rc=$?
err=$(cat /tmp/add.err)
note "exit $rc: $(cat /tmp/add.out) $err"
# At most the few KiB left beside the holes are whole 4 KiB blocks.
if [ $rc = 0 ]; then
	grep -q " [0-9]* sectors given .* 0 sectors withheld (in use at take time), [0-9]* sectors lost to alignment" /tmp/add.out ||
		fail "add on 1 KiB holes does not report the loss as alignment: $(cat /tmp/add.out)"
else
	[ $rc = 1 ] || fail "add on 1 KiB holes: exit $rc: $err"
	[ "$(wc -l < /tmp/add.err)" = 1 ] || fail "not one line: $err"
	echo "$err" | grep -q "no aligned 4 KiB block the kernel can use (.* sectors lost to alignment)" ||
		fail "add on 1 KiB holes: unexpected message: $err"
	[ -e /mnt/o/fresh.diff ] && fail "the file that gave nothing was kept"
fi
run blksnap-storage destroy "$id"
rm /mnt/o/snap.diff
run umount /mnt/o
exit 0
