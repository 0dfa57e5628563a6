# A chunk whose copy waits for storage (parked: its data is read, it holds
# its lock until storage is appended) is read through the image from its
# buffer at once, with the data at take. The growth that would end the
# wait may need such a read (blksnap-storage reads the file system's map
# at take through the image), so the read must not wait for the growth.
# Failed on e7916f7: the read slept on the chunk's lock until the wait for
# storage ended, then failed with EIO: here it was killed after 5 s.
# timeout: 120
. /tests/common.sh

load_module chunk_minimum_shift=18 diff_storage_wait_seconds=30
dev=$(make_loop 16)
store=$(make_loop 16)
write_random $dev 0 16 1
chunk() { dd if="$1" bs=256K skip="$2" count=1 $3 2> /dev/null | sha256sum | cut -c1-64; }
want=$(chunk $dev 9)
want4=$(chunk $dev 4)
# Storage for one chunk of 256 KiB.
id=$(raw_take $dev $store 0:512) || exit 1
img=$(image_of "$id" $dev)

# The first chunk written takes the storage, the second waits for more.
dmesg -c > /dev/null
gen 2 262144 | dd of=$dev bs=256K seek=4 count=1 oflag=direct 2> /dev/null ||
	fail "the first write failed"
gen 3 262144 | dd of=$dev bs=256K seek=9 count=1 oflag=direct 2> /dev/null &
parked=$!
wait_for 10 sh -c 'dmesg | grep -q "The difference storage is full"' ||
	fail "no copy waits for storage: $(dmesg | tail -n 3)"
kill -0 $parked 2> /dev/null || fail "the write to the second chunk did not wait"

log "direct and buffered reads of the parked chunk through the image"
# Nothing in the image's page cache may answer the buffered read.
blockdev --flushbufs "$img"
for how in iflag=direct ""; do
	got=$(timeout 5 dd if="$img" bs=256K skip=9 count=1 $how 2> /dev/null | sha256sum | cut -c1-64)
	[ "$got" = "$want" ] || fail "the read of the parked chunk ($how) did not return the data at take within 5 s"
done
log "the stored chunk, and one never copied, read as at take too"
[ "$(chunk "$img" 4 iflag=direct)" = "$want4" ] || fail "the stored chunk differs"
[ "$(chunk "$img" 12 iflag=direct)" = "$(chunk $dev 12)" ] || fail "an untouched chunk differs"
kill -0 $parked 2> /dev/null || fail "the parked write ended before the destroy"

# Destroy ends the wait; the write goes on.
bsok destroy "$id" > /dev/null
wait $parked || fail "the parked write failed"
exit 0
