# A growth after the take, on a device of the snapshot, reads nothing of
# the snapshot's image: which blocks were free at take time is saved once,
# at take (issue 31 item 4), because a growth comes when the storage runs
# out and writers wait for it. The ways in:
# - storage on the snapshotted ext4 at 'take': 'add' after it reads no
#   image;
# - a second snapshotted ext4 with no storage at take: the first 'add' on
#   it reads its image once (nothing was saved for it), the next none;
# - a damaged map: said in one line, the image read again, the map saved;
# - 'snapshot -- COMMAND' (its own take): an 'add' from COMMAND reads no
#   image.
# Reading nothing is not enough: a growth that skipped the take-time check
# altogether reads nothing either, and gives blocks the image still shows.
# So, with the saved map and with the one saved again after the damage, a
# file in use at take is deleted, every other free block filled, and the
# growth, which can then only get the deleted file's blocks, must withhold
# some (as 'add' reports it) and still read nothing.
# 'take' also gets a SIGTERM while it saves the map (the "mapping" fault
# point, the mount child at work): it must wait for the map, exit 0 (the
# snapshot is taken) and say so in one line.
# Page caches are dropped before each growth, so that any read of the
# image would reach the disk, and be counted at the block layer's
# tracepoint (the image disk keeps no I/O statistics). The guest runs no
# udev (vmtests/guest/init: devtmpfs only), so nothing else probes the
# images while they are counted.
# Failed on 5cdcb17: every growth mounted the image (the first 'add' after
# 'take' read it).
# timeout: 120
. /tests/common.sh

# Shared with COMMAND of 'snapshot', below.
cat > /tmp/grow-reads.sh << 'EOF'
trace=/sys/kernel/tracing
[ -d $trace/events/block ] || mount -t tracefs nodev $trace 2> /dev/null
[ -d $trace/events/block/block_bio_queue ] ||
	fail "test bug: no block:block_bio_queue tracepoint"

# grow_reads IMAGE ID FILE [withheld]: 'add' 8 MiB at FILE; prints the
# reads of IMAGE it made. All 8 MiB must be given, none withheld; with
# "withheld", some must be withheld (none given: exit 1, the kernel holds
# the file unused).
grow_reads() {
	local n w
	sync
	echo 3 > /proc/sys/vm/drop_caches
	echo > $trace/trace
	echo 1 > $trace/events/block/block_bio_queue/enable
	blksnap-storage add --snapshot "$2" "$3" 8M > /tmp/add.out 2>&1
	n=$?
	echo 0 > $trace/events/block/block_bio_queue/enable
	if [ "$4" = withheld ]; then
		[ $n = 0 ] || [ $n = 1 ] ||
			fail "add $3 after take: exit $n: $(cat /tmp/add.out)" >&2
		w=$(sed -n 's/.* \([0-9][0-9]*\) sectors withheld.*/\1/p' /tmp/add.out)
		[ "${w:-0}" -gt 0 ] ||
			fail "add $3 withheld nothing, with only blocks freed after the take to get: $(cat /tmp/add.out)" >&2
	else
		[ $n = 0 ] || fail "add $3 after take failed: $(cat /tmp/add.out)" >&2
		grep -q " 16384 sectors given .* 0 sectors withheld" /tmp/add.out ||
			fail "add $3 did not give its 8 MiB: $(cat /tmp/add.out)" >&2
	fi
	# "block_bio_queue: 251,0 RM 2 + 2 [mount]"
	grep -c "block_bio_queue: $(devnum "$1" | sed s/:/,/) R" $trace/trace || :
}
EOF
. /tmp/grow-reads.sh

# free_only_gone MNT: delete MNT/gone (in use at take) after filling every
# other free block of MNT, so that a growth can only get the file's.
free_only_gone() {
	local avail
	sync
	avail=$(df -k "$1" | awk 'NR == 2 { print $4 }')
	fallocate -l $(((avail - 1024) * 1024)) "$1/ballast" ||
		fail "cannot allocate the ballast on $1"
	dd if=/dev/zero of="$1/ballast.rest" bs=4k 2> /dev/null
	rm "$1/gone" || fail "cannot delete $1/gone"
	sync
}

load_module
for d in vdb vdc; do
	# No blocks reserved for root: they would be free at take time.
	run mkfs.ext4 -q -F -m 0 -E lazy_itable_init=0,lazy_journal_init=0 /dev/$d > /dev/null
	mkdir -p /mnt/$d && run mount /dev/$d /mnt/$d
	dd if=/dev/zero of=/mnt/$d/gone bs=1M count=48 2> /dev/null ||
		fail "cannot write /mnt/$d/gone"
done
sync
id=$(blksnap-storage create /dev/vdb /dev/vdc) || fail "create failed"
run blksnap-storage add --snapshot "$id" /mnt/vdb/snap.diff 16M
BLKSNAP_STORAGE_FAULT=mapping:TERM blksnap-storage take "$id" > /tmp/take.out 2>&1 ||
	fail "take with a SIGTERM while it saved the map: exit $?: $(cat /tmp/take.out)"
grep -q "Terminated while saving which blocks were free at take time: the snapshot is taken" /tmp/take.out &&
	[ "$(wc -l < /tmp/take.out)" = 1 ] ||
	fail "take did not say the deferred SIGTERM in one line: $(cat /tmp/take.out)"
map=${BLKSNAP_STATE_DIR:-/run/blksnap}/$id/takemap-$(devnum /dev/vdb)
[ -f "$map" ] || fail "no take-time map at $map after the SIGTERM: $(ls "${map%/*}")"
img_b=$(cli_image "$id" /dev/vdb) || exit 1
img_c=$(cli_image "$id" /dev/vdc) || exit 1

n=$(grow_reads "$img_b" "$id" /mnt/vdb/snap.diff) || exit 1
[ "$n" = 0 ] || fail "a growth on the snapshotted device read its image ($n reads)"
n=$(grow_reads "$img_c" "$id" /mnt/vdc/late.diff) || exit 1
[ "$n" -gt 0 ] || fail "test bug: the first growth on $img_c's device read nothing of it"
n=$(grow_reads "$img_c" "$id" /mnt/vdc/late.diff) || exit 1
[ "$n" = 0 ] || fail "the second growth on a device with no storage at take read its image ($n reads)"

# The map saved at take is used, not only present: blocks freed since
# are withheld, and still nothing is read. /mnt/vdb is full from here.
free_only_gone /mnt/vdb
n=$(grow_reads "$img_b" "$id" /mnt/vdb/held.diff withheld) || exit 1
[ "$n" = 0 ] || fail "a growth onto blocks freed after the take read the image ($n reads)"

# A saved map that is not one: said in one line, read from the image
# again (never taken for free space), and saved for the next growth.
map=${BLKSNAP_STATE_DIR:-/run/blksnap}/$id/takemap-$(devnum /dev/vdc)
[ -f "$map" ] || fail "no take-time map at $map: $(ls "${map%/*}")"
echo "not a map" > "$map"
n=$(grow_reads "$img_c" "$id" /mnt/vdc/late.diff) || exit 1
[ "$n" -gt 0 ] || fail "a growth with a damaged map read nothing of the image"
[ "$(grep -c "not a take-time map: .* read from the snapshot image instead" /tmp/add.out)" = 1 ] ||
	fail "the damaged map was not said in one line: $(cat /tmp/add.out)"
n=$(grow_reads "$img_c" "$id" /mnt/vdc/late.diff) || exit 1
[ "$n" = 0 ] || fail "the growth after a damaged map read the image ($n reads)"
# The map saved in its place is right: blocks freed since are withheld.
free_only_gone /mnt/vdc
n=$(grow_reads "$img_c" "$id" /mnt/vdc/held.diff withheld) || exit 1
[ "$n" = 0 ] || fail "a growth onto blocks freed after the take read the replaced map's image ($n reads)"
snap_destroy "$id" /mnt/vdb/snap.diff /mnt/vdc/late.diff /mnt/vdb/held.diff /mnt/vdc/held.diff
[ -e "$map" ] && fail "destroy left the take-time map"
rm -f /mnt/vdb/ballast* /mnt/vdc/ballast*

# 'snapshot' takes on its own: COMMAND grows the storage and counts.
cat > /tmp/in-snapshot.sh << 'EOF'
. /tests/common.sh
. /tmp/grow-reads.sh
n=$(grow_reads "$BLKSNAP_IMAGE_0" "$BLKSNAP_ID" /mnt/vdb/more.diff) || exit 1
[ "$n" = 0 ] || fail "a growth under snapshot -- COMMAND read the image ($n reads)"
EOF
blksnap-storage snapshot --storage /mnt/vdb/run.diff --size 16M /dev/vdb \
	-- sh /tmp/in-snapshot.sh > /tmp/snap.out 2>&1 ||
	fail "snapshot -- COMMAND: $(tail -n 3 /tmp/snap.out | tr '\n' ' ')"
rm -f /mnt/vdb/more.diff
for d in vdb vdc; do
	run umount /mnt/$d
done
