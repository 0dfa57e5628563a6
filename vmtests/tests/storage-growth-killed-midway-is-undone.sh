# A growth of a snapshot's storage file killed with SIGKILL in the middle
# (the file unpinned to fallocate, nothing given to the kernel yet) is
# undone by the next blksnap-storage that opens the file: the restarted
# watcher gives the unused blocks back to the filesystem and pins the file
# again at start, before any event, says so, then grows it as usual; the
# image stays the origin at take time. The storage filesystem sits on a
# dm-delay device, so that a growth's fsync lasts long enough to be caught
# from a shell. Failed on 5e4aec0: the restarted watcher left the file
# mutable (nothing pinned it until its first growth, which storage on
# another filesystem makes only at an event) and the killed growth's
# blocks unused in the file for the rest of the snapshot.
# timeout: 240
. /tests/common.sh

load_module diff_storage_minimum=32768
mkfs_of ext4 /dev/vdb
mkdir -p /mnt/o && run mount /dev/vdb /mnt/o
fill_tree /mnt/o/data 91 8
tree_sums /mnt/o > /tmp/pre.sums

nr=$(sectors /dev/vdd)
dm_create slowst "0 $nr delay /dev/vdd 0 0 /dev/vdd 0 0"
storage_fs xfs /dev/mapper/slowst
f=/mnt/st/snap.diff
id=$(snap_take $f 32M /mnt/o) || exit 1
img=$(cli_image "$id" /dev/vdb) || exit 1
size0=$(stat -c %s $f)

# Every write to the storage filesystem now takes 400 ms: an fsync after
# fallocate, several.
echo "0 $nr delay /dev/vdd 0 0 /dev/vdd 0 400" | dm_swap slowst
blksnap-storage add --snapshot "$id" $f 16M > /tmp/add.out 2> /tmp/add.err &
add=$!
caught=
i=0
while [ $i -lt 400 ] && kill -0 $add 2>/dev/null; do
	if ! lsattr $f 2>/dev/null | cut -d' ' -f1 | grep -q i; then
		kill -9 $add
		caught=1
		break
	fi
	sleep 0.05
	i=$((i + 1))
done
wait $add
rc=$?
[ -n "$caught" ] || fail "test bug: the growth was not caught unpinned (add exit $rc: $(cat /tmp/add.out /tmp/add.err | tr '\n' ' '))"
[ $rc = 137 ] || fail "test bug: add was not killed (exit $rc)"
echo "0 $nr delay /dev/vdd 0 0 /dev/vdd 0 0" | dm_swap slowst
lsattr $f | cut -d' ' -f1 | grep -q i && fail "test bug: the file is pinned after the kill"
note "killed mid-growth: size $(stat -c %s $f), $size0 before"

# The restarted watcher repairs the file before anything else.
watch_start "$id" $f /tmp/w.json --step 16M
lsattr $f | cut -d' ' -f1 | grep -q i ||
	fail "the storage file is still mutable after the watcher started: $(cat /tmp/w.json /tmp/w.json.err | tr '\n' ' ')"
size=$(stat -c %s $f)
[ "$size" = "$size0" ] ||
	fail "the killed growth was not undone: $size bytes, $size0 before it"
grep -q "interrupted growth" /tmp/w.json.err ||
	fail "the watcher did not say it undid the growth: $(cat /tmp/w.json.err)"
note "$(cat /tmp/w.json.err)"

# Copy-on-write beyond the 32 MiB: the watcher grows the file as usual.
gen 92 $((48 * 1048576)) > /mnt/o/big && sync || fail "cannot write big"
wait_for 60 eval '[ "$(grep -c "\"event\":\"grown\"" /tmp/w.json)" -ge 1 ]' ||
	fail "no growth after the repair: $(cat /tmp/w.json /tmp/w.json.err | tr '\n' ' ')"
rm /mnt/o/big && sync
watch_clean /tmp/w.json
check_image_tree ext4 "$img" . /tmp/pre.sums
blksnap-storage destroy "$id" > /dev/null || fail "destroy failed"
watch_end /tmp/w.json
[ -e "/run/blksnap/$id" ] && fail "destroy left state behind: $(ls "/run/blksnap/$id")"
rm $f || fail "cannot delete the storage file after destroy"
run umount /mnt/st
run umount /mnt/o
no_snapshots
exit 0
