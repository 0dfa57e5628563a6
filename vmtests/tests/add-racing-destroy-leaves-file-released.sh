# A blksnap-storage that opens a snapshot's storage file just as
# 'destroy' releases it leaves the file released: the add below checks
# the file's record, then strace holds it back 4 s before it locks the
# file, and 'destroy' lets go of the file and forgets its record
# meanwhile. The add must then refuse, saying the snapshot is gone, and
# leave the file as it is, so that it can be deleted. Failed on 12cf18e:
# the add found the file unpinned, took that for a killed growth, made it
# immutable again and went on to grow it; destroy had already forgotten
# it, so nothing would ever unpin it.
# timeout: 120
. /tests/common.sh

command -v strace > /dev/null || skip "no strace in the guest"
load_module
mkfs_of ext4 /dev/vdb
mkdir -p /mnt/o && run mount /dev/vdb /mnt/o
f=/mnt/o/snap.diff
id=$(snap_take $f 32M /mnt/o) || exit 1

# The file lock is add's first flock(2): state records are read unlocked.
add_overtaken_by_destroy "$id" 1 --snapshot "$id" $f 16M
grep -q "no such snapshot" /tmp/add.out &&
	fail "add was too slow: it started after the destroy, nothing raced"
[ -e $f ] || fail "add removed the storage file of the snapshot it was given: $(cat /tmp/add.out)"
held $f && fail "the storage file is held after destroy released it; add said: $(cat /tmp/add.out)"
grep -q "destroyed" /tmp/add.out || fail "add did not say why it stopped: $(cat /tmp/add.out)"
note "add said: $(cat /tmp/add.out)"
rm $f || fail "cannot delete the storage file after destroy"
run umount /mnt/o
no_snapshots
exit 0
