# The image of a 4 KiB-sector origin has 4 KiB sectors too (a file system
# made with 4 KiB sectors must mount on it the same way), and it tells
# readers its chunk size as the optimal I/O size, which sets its
# read-ahead to two chunks: a read smaller than a chunk costs a whole
# chunk read from the storage anyway. (The seed's images had 512-byte
# sectors and the 128 KiB default read-ahead whatever the origin.)
# timeout: 120
. /tests/common.sh

# queue DEV ATTR: /sys/block/DEV/queue/ATTR
queue() {
	cat "/sys/block/$(basename "$1")/queue/$2"
}

load_module
mkdir -p /dev/shm/loops
f=$(mktemp /dev/shm/loops/disk.XXXXXX)
truncate -s 128M "$f" || fail "cannot create $f"
dev=$(losetup -b 4096 -f --show "$f") || fail "losetup -b 4096 failed"
[ "$(queue "$dev" logical_block_size)" = 4096 ] || fail "test setup: $dev has $(queue "$dev" logical_block_size)-byte sectors"
store=$(make_loop 64)
id=$(bsok create "$(devnum "$dev")")
bsok append "$id" "$(devnum "$store")" 0:131072 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" "$dev")

lbs=$(queue "$img" logical_block_size)
pbs=$(queue "$img" physical_block_size)
opt=$(queue "$img" optimal_io_size)
ra=$(queue "$img" read_ahead_kb)
note "image: logical $lbs, physical $pbs, optimal I/O $opt, read-ahead $ra KiB"
[ "$lbs" = 4096 ] || fail "image has $lbs-byte logical sectors, the origin 4096"
[ "$pbs" -ge 4096 ] || fail "image has $pbs-byte physical sectors, the origin 4096"
[ "$opt" -ge 4096 ] && [ $((opt & (opt - 1))) = 0 ] || fail "optimal I/O size $opt is not a chunk size"
[ "$ra" = $((2 * opt / 1024)) ] || fail "read-ahead $ra KiB, expected two chunks ($((2 * opt / 1024)) KiB)"
[ "$(/usr/sbin/blockdev --getss "$img")" = 4096 ] || fail "BLKSSZGET on the image is not 4096"
[ "$(sha "$img")" = "$(sha "$dev")" ] || fail "the image reads differently from its unchanged origin"
bsok destroy "$id" > /dev/null
exit 0
