# READ_CBT_MAP honours its offset, answers 0 bytes at the end of the map,
# EINVAL past it, and ENODEV for a device without a tracker. (The seed
# ignored the offset, underflowed past the end, and returned 0 with no
# tracker.)
# timeout: 120
. /tests/common.sh

load_module tracking_block_minimum_shift=16
dev=$(make_loop 64)
store=$(make_loop 64)
nodev=$(make_loop 64)
id=$(bsok create "$(devnum $dev)")
bsok append "$id" "$(devnum $store)" 0:131072 > /dev/null
# Block 5 (64 KiB blocks) changes before the take.
gen 1 65536 | dd of=$dev bs=64k seek=5 conv=fsync 2>/dev/null
bsok take "$id" > /dev/null
blocks=$(bsctl cbtinfo | sed -n "s/^$(devnum $dev) .*blk_count=\([0-9]*\).*/\1/p")
[ "$blocks" = 1024 ] || fail "64 MiB in 64 KiB blocks should be 1024 blocks, got '$blocks'"

full=$(bsok cbtread "$(devnum $dev)" 0 1024)
[ "$full" = "1024 5=1" ] || fail "full read gave '$full'"
part=$(bsok cbtread "$(devnum $dev)" 4 4)
[ "$part" = "4 5=1" ] || fail "read at offset 4 gave '$part' (offset ignored?)"
tail=$(bsok cbtread "$(devnum $dev)" 1020 100)
[ "$tail" = "4" ] || fail "read of 100 at 1020 gave '$tail', expected 4 bytes"
end=$(bsok cbtread "$(devnum $dev)" 1024 100)
[ "$end" = "0" ] || fail "read at the end gave '$end', expected 0 bytes"
expect_err EINVAL bsctl cbtread "$(devnum $dev)" 1025 100
expect_err EINVAL bsctl cbtread "$(devnum $dev)" 4294967295 100
expect_err EFAULT bsctl cbtread "$(devnum $dev)" 0 100 WILD
expect_err ENODEV bsctl cbtread "$(devnum $nodev)" 0 100
bsok destroy "$id" > /dev/null
exit 0
