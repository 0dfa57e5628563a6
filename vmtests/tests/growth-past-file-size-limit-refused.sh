# A growth that would pass the file size limit (ulimit -f, RLIMIT_FSIZE) is
# refused in one line that names the limit, and nothing changes: the file
# keeps its size and stays held, the snapshot keeps its storage; a growth
# within the limit still works. Each growth is a new file: the limit
# applies to the growth, not to the storage at the path. Failed on 7e5f45f: fallocate()
# raised SIGXFSZ, which killed 'add' (exit 153) in the middle of the
# growth, leaving the held file without its immutable flag.
# timeout: 120
. /tests/common.sh

load_module
storage_fs
id=$(snap_take /mnt/st/s.diff 16M /dev/vdb) || exit 1
# ulimit -f counts 512-byte blocks in busybox sh: 16 MiB.
limit=$((16 * 2048))
out=$(ulimit -f $limit; blksnap-storage add --snapshot "$id" /mnt/st/s.diff 32M 2>&1)
rc=$?
[ $rc = 1 ] || fail "add past the file size limit exited $rc (153: killed by SIGXFSZ): $out"
echo "$out" | grep -q 'ulimit -f' || fail "the refusal does not name the limit: $out"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "more than one line: $out"
[ "$(stat -c %s /mnt/st/s.diff)" = $((16 * 1048576)) ] || fail "the file's size changed: $(stat -c %s /mnt/st/s.diff)"
held /mnt/st/s.diff || fail "the kernel no longer holds the storage file"
blksnap-storage list | grep -q "^$id	taken	/mnt/st/s.diff$" || fail "list after the refusal: $(blksnap-storage list)"
note "refused: $out"
out=$(ulimit -f $limit; blksnap-storage add --snapshot "$id" /mnt/st/s.diff 16M 2>&1) ||
	fail "add within the file size limit failed: $out"
echo "$out" | grep -q "^/mnt/st/s.diff: size $((32 * 1048576)) bytes" ||
	fail "the storage is not 32 MiB after a 16M add: $out"
snap_destroy "$id" /mnt/st/s.diff
run umount /mnt/st
no_snapshots
exit 0
