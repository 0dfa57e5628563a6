# A snapshot of a whole disk sees the writes made through its partitions,
# and a snapshot of a partition keeps working on partition-relative
# sectors. (A bio to a partition carries the partition's bdev: with the
# filter looked up on that bdev alone, writes through /dev/loopNp1 went
# straight past a whole-disk snapshot, which then showed the new data.)
# timeout: 180
# kernels: both (the filter hook: bios of partitions)
. /tests/common.sh

# snapshot_of DEV: a taken snapshot of DEV with $store as storage; its id.
snapshot_of() {
	local id
	id=$(bsok create "$(devnum "$1")")
	bsok append "$id" "$(devnum "$store")" 0:327680 > /dev/null
	bsok take "$id" > /dev/null
	echo "$id"
}

load_module tracking_block_minimum_shift=16
disk=$(partitioned_loop 128) || exit 1
part=${disk}p1
wait_for 5 test -b "$part" || fail "no partition $part after losetup -P"
[ "$(sectors "$part")" = $((127 * 2048)) ] || fail "$part has $(sectors "$part") sectors"
store=$(make_loop 160)

# copy_checked SNAPDEV WRITEDEV OFFSET_MIB SIZE_MIB SEED: snapshot SNAPDEV,
# write to WRITEDEV, the image must still read as before; leaves $id.
copy_checked() {
	local before img
	before=$(sha "$1")
	id=$(snapshot_of "$1") || exit 1
	img=$(image_of "$id" "$1")
	write_random "$2" "$3" "$4" "$5"
	[ "$(sha "$img")" = "$before" ] || fail "image of $1 changed by writes through $2"
}

# Whole disk in the snapshot, written through the partition.
copy_checked "$disk" "$part" 16 32 9
# Tracked at whole-disk offsets: 1 MiB partition start + 16 MiB = block 272
# of 64 KiB, 512 blocks.
bsok destroy "$id" > /dev/null
id=$(snapshot_of "$disk") || exit 1
changed=$(bsok cbtread "$(devnum "$disk")" 0 2048 | tr ' ' '\n' | grep '=2$' | sed 's/=2$//')
[ "$(echo "$changed" | wc -l)" = 512 ] && [ "$(echo "$changed" | head -n 1)" = 272 ] &&
	[ "$(echo "$changed" | tail -n 1)" = 783 ] ||
	fail "changed blocks $(echo "$changed" | head -n 1)..$(echo "$changed" | tail -n 1) ($(echo "$changed" | wc -l)), expected 272..783"
bsok destroy "$id" > /dev/null

# The partition in the snapshot, written through itself.
copy_checked "$part" "$part" 40 24 10
bsok destroy "$id" > /dev/null
exit 0
