# 'watch --limit' reached in the middle of a growth is reported as the
# limit, once, and not as a take-time failure: 64 MiB of storage, a 32 MiB
# low-space threshold (the kernel asks for 32 MiB), 'watch --step 64M
# --limit 80M'; 64 MiB written to the raw origin raise an event that can
# only be met in part (16 MiB up to the limit).  The log says "--limit ... reached" and no
# "grow_failed" event ("gave less than requested: the new blocks were in
# use when the snapshot was taken", which is what 2cf2299 logged: issue
# 13 item 5, although the origin holds no file system and the storage is
# on another device).
# timeout: 180
. /tests/common.sh

load_module diff_storage_minimum=$((32 * 2048))
storage_fs ext4
id=$(blksnap-storage create /dev/vdb) || fail "create failed"
run blksnap-storage add --snapshot "$id" /mnt/st/snap.diff 64M > /dev/null
run blksnap-storage take "$id" > /dev/null
watch_start "$id" /mnt/st/snap.diff /tmp/w.json --step 64M --limit 80M
dd if=/dev/urandom of=/dev/vdb bs=1M count=64 oflag=direct 2> /dev/null ||
	fail "cannot write the origin"
wait_for 30 grep -q '"event":"limit_reached"' /tmp/w.json ||
	fail "no limit_reached event: $(cat /tmp/w.json /tmp/w.json.err | tr '\n' ' ')"
sleep 2
grep -q '"event":"grown"' /tmp/w.json || fail "no growth: $(tr '\n' ' ' < /tmp/w.json)"
grep -q '"event":"grow_failed"' /tmp/w.json &&
	fail "reaching --limit was logged as a failure: $(grep grow_failed /tmp/w.json | head -n 1)"
grep -q 'in use when the snapshot was taken' /tmp/w.json.err &&
	fail "reaching --limit blamed on the take-time check: $(cat /tmp/w.json.err)"
grep -q -- '--limit 83886080 bytes reached' /tmp/w.json.err ||
	fail "no line about the limit: $(cat /tmp/w.json.err)"
size=$(log_size /tmp/w.json)
[ "$size" = 83886080 ] || fail "storage of $size bytes, expected the 80 MiB limit"
run blksnap-storage destroy "$id" > /dev/null
watch_end /tmp/w.json
rm /mnt/st/snap.diff
run umount /mnt/st
exit 0
