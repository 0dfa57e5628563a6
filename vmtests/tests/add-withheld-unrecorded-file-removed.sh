# 'add' of a new file whose blocks were all in use at take time keeps the
# file, recorded and pinned, to hold those blocks (see
# add-on-blocks-freed-after-take-ext4). When the record cannot be written
# (the state directory's file system is full here), the file it created
# must not be left behind grown, unrecorded and unpinned: 'add' fails in
# one line saying the record failed, and removes the file. Failed on
# e4476eb (review S3): the file stayed, grown, unrecorded and unpinned.
# With no room even for the growth's own record, 'add' fails before it
# grows anything: checked last.
# timeout: 180
. /tests/common.sh

orig=/dev/vdb
load_module
mkdir -p /mnt/state && run mount -t tmpfs -o size=1m,mode=0755 tmpfs /mnt/state
export BLKSNAP_STATE_DIR=/mnt/state/blksnap
run mkfs.ext4 -q -F -m 0 -E lazy_itable_init=0,lazy_journal_init=0 $orig > /dev/null
mkdir -p /mnt/o && run mount $orig /mnt/o
id=$(blksnap-storage create /mnt/o) || fail "create failed"
run blksnap-storage add --snapshot "$id" /mnt/o/snap.diff 64M
gen 9 $((48 * 1048576)) > /mnt/o/deleted || fail "cannot write the file to delete"
avail=$(df -k /mnt/o | awk 'NR == 2 { print $4 }')
run fallocate -l $(((avail - 1024) * 1024)) /mnt/o/ballast
dd if=/dev/zero of=/mnt/o/rest bs=4k 2>/dev/null
sync
left=$(df -k /mnt/o | awk 'NR == 2 { print $4 }')
[ "$left" -le 64 ] || fail "test setup: $left KiB still free at take time"
run blksnap-storage take "$id"
rm /mnt/o/deleted || fail "cannot delete the file"
sync

# The record of a new file cannot be written now; the record of its
# growth (one page) still can.
gen 10 4096 > /mnt/state/spacer || fail "cannot write the spacer"
dd if=/dev/zero of=/mnt/state/fill bs=4k 2>/dev/null
rm /mnt/state/spacer
blksnap-storage add --snapshot "$id" /mnt/o/fresh.diff 16M > /tmp/add.out 2> /tmp/add.err
rc=$?
err=$(cat /tmp/add.err)
note "$err"
[ $rc = 1 ] || fail "add with a full state directory: exit $rc, expected 1: $err"
[ "$(wc -l < /tmp/add.err)" = 1 ] || fail "add printed more than one line of error: $err"
echo "$err" | grep -q "cannot be recorded in /mnt/state/blksnap" ||
	fail "the message does not say the record failed: $err"
[ -e /mnt/o/fresh.diff ] &&
	fail "add left the file it created, unrecorded: $(lsattr /mnt/o/fresh.diff; ls -l /mnt/o/fresh.diff)"

# No room at all: the growth is not even begun.
dd if=/dev/zero of=/mnt/state/fill2 bs=4k 2>/dev/null
blksnap-storage add --snapshot "$id" /mnt/o/fresh.diff 16M > /tmp/add.out 2> /tmp/add.err
rc=$?
err=$(cat /tmp/add.err)
[ $rc = 1 ] && [ "$(wc -l < /tmp/add.err)" = 1 ] ||
	fail "add with a full state directory: exit $rc: $err"
echo "$err" | grep -q "growth cannot be recorded in /mnt/state/blksnap: No space left" ||
	fail "the message does not say the growth's record failed: $err"
[ -e /mnt/o/fresh.diff ] && fail "add left the file it created: $(ls -l /mnt/o/fresh.diff)"
rm /mnt/state/fill /mnt/state/fill2

run blksnap-storage destroy "$id"
rm /mnt/o/snap.diff || fail "cannot delete the storage file after destroy"
run umount /mnt/o
run umount /mnt/state
exit 0
