# A tracked device that grows starts a new CBT generation at its next take:
# a dm-linear device reloaded with a bigger table, and a loop device
# re-read with 'losetup -c' after its file grew. Before the resize two
# snapshots share a generation; after it 'cbt info' shows a new one with
# the new capacity and block count, snap_number 1 and no changed block,
# and 'cbt read --generation OLD' fails (exit 1), telling a backup tool
# that a full backup is needed.
# timeout: 150
. /tests/common.sh

load_module
storage_fs

# check_resize DEV GROW_CMD: two snapshots, GROW_CMD, a third.
check_resize() {
	local dev=$1 id gen1 cap1 out
	shift
	id=$(snap_take /mnt/st/d1 64M $dev) || exit 1
	gen1=$(cbt_field $dev generation) || exit 1
	cap1=$(cbt_field $dev capacity) || exit 1
	write_bytes $dev 65536 4096 1
	snap_destroy "$id" /mnt/st/d1
	id=$(snap_take /mnt/st/d2 64M $dev) || exit 1
	[ "$(cbt_field $dev generation)" = "$gen1" ] || fail "$dev: generation changed without a resize"
	[ "$(cbt_field $dev snap_number)" = 2 ] || fail "$dev: snap_number is not 2"
	[ -n "$(cbt_blocks $dev)" ] || fail "$dev: the write before the second take is not listed"
	snap_destroy "$id" /mnt/st/d2

	"$@"
	[ $(($(blockdev --getsz $dev) * 512)) -gt "$cap1" ] || fail "$dev did not grow ($*)"
	id=$(snap_take /mnt/st/d3 64M $dev) || exit 1
	[ "$(cbt_field $dev generation)" != "$gen1" ] || fail "$dev: same generation after growing ($*)"
	[ "$(cbt_field $dev capacity)" = $(($(blockdev --getsz $dev) * 512)) ] || fail "$dev: cbt info has the old capacity"
	bs=$(($(cbt_field $dev block_size) / 512))
	[ "$(cbt_field $dev blocks)" = $((($(blockdev --getsz $dev) + bs - 1) / bs)) ] || fail "$dev: wrong block count after growing"
	[ "$(cbt_field $dev snap_number)" = 1 ] || fail "$dev: snap_number is not 1 in the new generation"
	[ -z "$(cbt_blocks $dev --since 0)" ] || fail "$dev: blocks listed in a new generation"
	out=$(blksnap-storage cbt read --generation "$gen1" $dev 2>&1)
	[ $? = 1 ] || fail "$dev: cbt read --generation OLD did not fail: $out"
	case "$out" in *"a full backup is needed"*) ;; *) fail "$dev: message '$out'" ;; esac
	# Writes to the grown part are tracked in the new generation.
	write_bytes $dev $((cap1 + 8192)) 4096 2
	snap_destroy "$id" /mnt/st/d3
	id=$(snap_take /mnt/st/d4 64M $dev) || exit 1
	[ "$(cbt_blocks $dev | tr '\n' ' ')" = "$((cap1 / 512 / bs)) " ] || fail "$dev: a write past the old end is not tracked"
	snap_destroy "$id" /mnt/st/d4
}

# dm-linear on /dev/vdb, 128 MiB then 256 MiB.
dm_create lin "0 262144 linear /dev/vdb 0"
grow_dm() { echo "0 524288 linear /dev/vdb 0" | dm_swap lin; }
check_resize /dev/mapper/lin grow_dm

# A loop device on a file in RAM, 64 MiB then 96 MiB.
loop=$(make_loop 64) || exit 1
file=$(losetup -n -O BACK-FILE "$loop")
grow_loop() { truncate -s 96M "$file" && losetup -c "$loop"; }
check_resize "$loop" grow_loop

no_snapshots
exit 0
