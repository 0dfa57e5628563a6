# When a device has more tracking blocks than the maximum, the tracking
# block doubles until it fits: a 256 MiB device with at most 1024 blocks
# gets 256 KiB blocks. (The seed doubled the shift itself: 64 KiB became
# 4 GiB blocks, and 2^32 overflowed the reported block size.)
# timeout: 120
. /tests/common.sh

load_module tracking_block_minimum_shift=16 tracking_block_maximum_count=1024
dev=$(make_loop 256)
id=$(bsok create "$(devnum $dev)")
info=$(bsctl cbtinfo | grep "^$(devnum $dev) ")
case "$info" in
*"blk_size=262144 "*"blk_count=1024 "*) ;;
*) fail "cbt info is '$info', expected blk_size=262144 blk_count=1024" ;;
esac
bsok destroy "$id" > /dev/null
exit 0
