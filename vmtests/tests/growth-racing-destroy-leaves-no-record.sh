# A growth that 'destroy' overtakes leaves nothing of the destroyed
# snapshot in the state directory: below, strace holds an add back 4 s
# just before it locks the snapshot's state directory to record its
# new file, and 'destroy' forgets that directory meanwhile. The add must
# fail, and 'list' must not show the destroyed snapshot afterwards.
# Failed on 501fe12: the add's lock found the directory removed and made
# it again, and nothing removed it after the add failed: 'list' showed
# the destroyed snapshot as one whose files were still pinned.
# timeout: 120
. /tests/common.sh

command -v strace > /dev/null || skip "no strace in the guest"
load_module
mkfs_of ext4 /dev/vdb
mkdir -p /mnt/o && run mount /dev/vdb /mnt/o
id=$(snap_take /mnt/o/snap.diff 32M /mnt/o) || exit 1
f=/mnt/o/more.diff

# An add's flocks: 1 the new file's own lock, 2 the state directory's
# lock of the file's record, written once the kernel holds the file.
add_overtaken_by_destroy "$id" 2 --snapshot "$id" $f 16M
note "add said: $(cat /tmp/add.out)"
# The race, as the add met it: the directory existed at its first mkdir,
# and its lock found it removed by the destroy and made it again.
mkdirs=$(grep "^mkdir(\"/run/blksnap/$id\", 0700)" /tmp/add.trace)
{ echo "$mkdirs" | head -n 1 | grep -q EEXIST &&
	echo "$mkdirs" | grep -q ' = 0$'; } ||
	fail "nothing raced: the add did not find the directory, then make it again (add too slow or too fast?): $(grep -E 'mkdir|flock' /tmp/add.trace | tr '\n' ' ')"
out=$(blksnap-storage list) || fail "list failed"
[ -z "$out" ] || fail "list shows the destroyed snapshot: $out"
[ -e /run/blksnap/"$id" ] && fail "/run/blksnap/$id is left: $(ls -la /run/blksnap/"$id")"
[ -e $f ] && { held $f &&
	fail "the new storage file is held after the failed add"; rm -f $f; }
rm -f /mnt/o/snap.diff
run umount /mnt/o
no_snapshots
exit 0
