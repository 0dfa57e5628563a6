# A 1 MiB read of the image that spans four 256 KiB chunks reaches the
# device that holds them as one request (two at most, should the disk
# split it), when the chunks are all still on the original device or
# stored one after another on the same storage device; dm-snapshot
# splits every read at its chunk boundaries. The block layer may not
# merge requests on either disk meanwhile (nomerges=2), so the count is
# blksnap's own. The data read must be the take-time data either way, and
# a chunk that breaks the run (written through the image, so newer in
# memory than in its place) must still read as written.
# Failed on 2c2039c: every such read became one request per chunk (16
# for 4 reads on vdb, unchanged data; the changed data was not reached).
# timeout: 300
. /tests/common.sh

orig=/dev/vdb
mib=16
# reads DISK: the reads completed by DISK so far (field 1 of its stat).
reads() {
	awk '{ print $1 }' "/sys/block/$1/stat"
}

# requests DISK IMAGE OFFSET_MIB: the requests DISK completed for 4
# direct 1 MiB reads of IMAGE from OFFSET_MIB.
requests() {
	local before after
	sync
	before=$(reads "$1")
	dd if="$2" of=/dev/null bs=1M skip="$3" count=4 iflag=direct status=none ||
		fail "a direct read of $2 at $3 MiB failed"
	after=$(reads "$1")
	echo $((after - before))
}

unload_module
load_module
storage_fs
write_random $orig 0 $mib 1
dd if=$orig of=/tmp/take bs=1M count=$mib status=none
want=$(sha256sum < /tmp/take)
id=$(snap_take /mnt/st/diff 100M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1
# Changed data: the second half, overwritten in one sequential pass, so
# its chunks are copied in order. They are placed in the order their
# loads complete, which is that order here, one writer and one disk; a
# disk that completed them out of order would fail this test, not pass
# it wrongly.
write_random $orig $((mib / 2)) $((mib / 2)) 2
echo 3 > /proc/sys/vm/drop_caches

echo 2 > /sys/block/vdb/queue/nomerges
echo 2 > /sys/block/vdd/queue/nomerges
n=$(requests vdb "$img" 0) || { echo "$n"; exit 1; }
note "unchanged data: $n requests on the origin for 4 reads of 1 MiB"
[ "$n" -le 8 ] || fail "4 reads of 1 MiB of unchanged chunks became $n requests on $orig, one per chunk"
n=$(requests vdd "$img" $((mib / 2))) || { echo "$n"; exit 1; }
note "changed data: $n requests on the storage for 4 reads of 1 MiB"
[ "$n" -le 8 ] || fail "4 reads of 1 MiB of stored chunks became $n requests on the storage disk, one per chunk"
echo 0 > /sys/block/vdb/queue/nomerges
echo 0 > /sys/block/vdd/queue/nomerges

[ "$(dd if="$img" bs=1M count=$mib iflag=direct status=none | sha256sum)" = "$want" ] ||
	fail "direct reads of the image differ from the origin at take time"
[ "$(dd if="$img" bs=1M count=$mib status=none | sha256sum)" = "$want" ] ||
	fail "buffered reads of the image differ from the origin at take time"

# A chunk written through the image in the middle of each run: the reads
# around it still come back right, and it reads as written.
gen 3 262144 > /tmp/chunk
for mb in 1 $((mib / 2 + 1)); do
	dd if=/tmp/chunk of="$img" bs=256K seek=$((mb * 4 + 1)) oflag=direct conv=notrunc status=none ||
		fail "a write through the image at $mb MiB failed"
	dd if=/tmp/chunk of=/tmp/take bs=256K seek=$((mb * 4 + 1)) conv=notrunc status=none
done
[ "$(dd if="$img" bs=1M count=$mib iflag=direct status=none | sha256sum)" = "$(sha256sum < /tmp/take)" ] ||
	fail "after writes through the image, its direct reads differ from the take-time data with those writes"
dmesg | grep -q "corrupted" && fail "the snapshot was marked corrupted"
snap_destroy "$id" /mnt/st/diff
exit 0
