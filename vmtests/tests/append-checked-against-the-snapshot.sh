# The kernel checks raw storage (v1's IOCTL_BLK_SNAP_SNAPSHOT_APPEND_STORAGE)
# against the snapshots, not only blksnap-storage's take-time check:
# - after the take, sectors of a snapshotted device (the device, its whole
#   disk or a partition of it) whose chunks are not copied yet are refused
#   with EBUSY, for this snapshot's storage or another's: they still hold what the image shows; sectors of
#   copied chunks are accepted, and the image stays as it was;
# - a snapshot image is refused as storage (EINVAL): storing into an image
#   copies on write into storage, which could be the image again;
# - sectors given to another snapshot are refused (EINVAL), also when
#   the same sectors are named through a partition.
# Failed on d1a337d: every one of these appends was accepted; with the
# uncopied sectors appended, copies of later writes overwrote data the
# image still read from the device.
# timeout: 120
. /tests/common.sh

load_module chunk_minimum_shift=18
dev=$(make_loop 64)
store=$(make_loop 96)
write_random $dev 0 64 1
before=$(sha $dev)
id=$(raw_take $dev $store 0:30720) || exit 1
img=$(image_of "$id" $dev)

log "uncopied sectors of the snapshotted device are refused"
expect_err EBUSY bsctl append "$id" "$(devnum $dev)" 32768:2048
# One copied chunk beside an uncopied one is still refused, all or nothing.
write_random $dev 8 4 2
expect_err EBUSY bsctl append "$id" "$(devnum $dev)" 16384:10240
log "copied sectors are accepted, and the image keeps its data"
bsok append "$id" "$(devnum $dev)" 16384:8192 > /dev/null
# 12 MiB of writes: their copies fill the first 15 MiB of storage and go
# on into the sectors just appended.
write_random $dev 20 12 3
[ "$(sha "$img")" = "$before" ] || fail "the image changed"

log "another snapshot's raw storage over the uncopied sectors is refused"
spare=$(make_loop 16)
idb=$(bsok create "$(devnum $spare)")
expect_err EBUSY bsctl append "$idb" "$(devnum $dev)" 81920:2048
bsok destroy "$idb" > /dev/null

log "an image is refused as storage"
dmesg -c > /dev/null
expect_err EINVAL bsctl append "$id" "$(devnum $img)" 0:2048
dmesg | grep -q "cannot hold difference storage" ||
	fail "the image was refused, but not as an image: $(dmesg | tail -n 2)"

log "another snapshot's storage is refused, also through a partition"
other=$(make_loop 16)
id2=$(bsok create "$(devnum $other)")
expect_err EINVAL bsctl append "$id2" "$(devnum $store)" 30712:16
bsok append "$id2" "$(devnum $store)" 65536:2048 > /dev/null
pdisk=$(partitioned_loop 32)
part=${pdisk}p1
[ -b "$part" ] || fail "no partition $part"
bsok append "$id2" "$(devnum $pdisk)" 4096:2048 > /dev/null
third=$(make_loop 16)
id3=$(bsok create "$(devnum $third)")
# The partition starts at sector 2048: its 2048 is the disk's 4096.
expect_err EINVAL bsctl append "$id3" "$(devnum $part)" 3072:2048
bsok append "$id3" "$(devnum $part)" 4096:2048 > /dev/null

log "a whole-disk snapshot refuses its partition's uncopied sectors"
pdisk5=$(partitioned_loop 32)
id5=$(bsok create "$(devnum $pdisk5)")
bsok append "$id5" "$(devnum $store)" 69632:8192 > /dev/null
bsok take "$id5" > /dev/null
expect_err EBUSY bsctl append "$id5" "$(devnum ${pdisk5}p1)" 2048:2048

for i in "$id" "$id2" "$id3" "$id5"; do
	bsok destroy "$i" > /dev/null
done
exit 0
