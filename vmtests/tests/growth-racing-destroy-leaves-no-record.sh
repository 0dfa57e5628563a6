# A growth that 'destroy' overtakes leaves nothing of the destroyed
# snapshot in the state directory: below, strace holds an add back 4 s
# just before it locks the snapshot's state directory to record its
# growth, and 'destroy' forgets that directory meanwhile. The add must
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
# lock of its growth record.
strace -qq -o /tmp/add.trace -e trace=flock,mkdir \
	-e inject=flock:delay_enter=4000000:when=2 \
	blksnap-storage add --snapshot "$id" $f 16M > /tmp/add.out 2>&1 &
add=$!
sleep 2
run blksnap-storage destroy "$id"
wait $add && fail "add went on with a destroyed snapshot: $(cat /tmp/add.out)"
note "add said: $(cat /tmp/add.out)"
# The race, as the add met it: the directory existed at its first mkdir,
# and its lock found it removed by the destroy and made it again.
made=$(grep -c "^mkdir(\"/run/blksnap/$id\", 0700) = 0" /tmp/add.trace)
[ "$made" -ge 1 ] || fail "nothing raced: the add never made the directory again (add too slow or too fast?): $(grep -E 'mkdir|flock' /tmp/add.trace | tr '\n' ' ')"
out=$(blksnap-storage list) || fail "list failed"
[ -z "$out" ] || fail "list shows the destroyed snapshot: $out"
[ -e /run/blksnap/"$id" ] && fail "/run/blksnap/$id is left: $(ls -la /run/blksnap/"$id")"
[ -e $f ] && { lsattr $f | cut -d' ' -f1 | grep -q i &&
	fail "the new storage file is immutable after the failed add"; rm -f $f; }
rm -f /mnt/o/snap.diff
run umount /mnt/o
no_snapshots
exit 0
