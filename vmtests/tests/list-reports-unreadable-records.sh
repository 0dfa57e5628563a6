# 'list' of a snapshot whose storage record cannot be read (a malformed
# line in /run/blksnap/ID/files) must not show it as having no storage:
# one line on stderr names the record file, the snapshot is left out,
# the others are listed, and the exit status is 1 (text and --json).
# Failed on e4476eb (review S2): "ID created -" and "storage":[], exit 0.
# timeout: 120
. /tests/common.sh

load_module
storage_fs ext4
a=$(blksnap-storage create /dev/vdb) || fail "create vdb failed"
b=$(blksnap-storage create /dev/vdc) || fail "create vdc failed"
run blksnap-storage add --snapshot "$a" /mnt/st/a.diff 16M > /dev/null
run blksnap-storage add --snapshot "$b" /mnt/st/b.diff 16M > /dev/null
rec=/run/blksnap/$a/files
cp "$rec" /tmp/files.saved || fail "cannot save $rec"
printf 'garbage\n' > "$rec"

for json in "" --json; do
	blksnap-storage list $json > /tmp/out 2> /tmp/err
	rc=$?
	note "list $json: $(cat /tmp/err)"
	[ $rc = 1 ] || fail "list $json with a malformed record exited $rc: $(cat /tmp/out /tmp/err | tr '\n' ' ')"
	[ "$(wc -l < /tmp/err)" = 1 ] || fail "list $json: not one line: $(tr '\n' '|' < /tmp/err)"
	grep -q "^blksnap-storage: list: $rec: " /tmp/err ||
		fail "list $json: the message does not name $rec: $(cat /tmp/err)"
	grep -q "$a" /tmp/out && fail "list $json showed the unreadable snapshot: $(cat /tmp/out)"
	grep -q "$b" /tmp/out && grep -q /mnt/st/b.diff /tmp/out ||
		fail "list $json left out the readable snapshot: $(cat /tmp/out)"
done

cp /tmp/files.saved "$rec" || fail "cannot restore $rec"
blksnap-storage list > /tmp/out 2> /tmp/err || fail "list after the fix failed: $(cat /tmp/err)"
grep -q "^$a	created	/mnt/st/a.diff$" /tmp/out || fail "list after the fix: $(cat /tmp/out)"
snap_destroy "$a" /mnt/st/a.diff
snap_destroy "$b" /mnt/st/b.diff
run umount /mnt/st
exit 0
