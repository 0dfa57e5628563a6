# Writes that reach a snapshotted disk through a device-mapper target on
# top of it are copied on write and tracked. (In the seed the filter hook
# sat after the current->bio_list check: bios that dm submits from its
# own ->submit_bio were never filtered, and the image changed under the
# backup.)
# timeout: 180
# kernels: both (the filter hook: bios of stacked devices)
. /tests/common.sh

load_module tracking_block_minimum_shift=16
dev=$(make_loop 128)
store=$(make_loop 160)
write_random $dev 0 128 1
before=$(sha $dev)
echo "0 $(sectors $dev) linear $dev 0" | dmsetup create lin --noudevsync || fail "dmsetup create failed"
dmsetup mknodes lin
id=$(bsok create "$(devnum $dev)")
bsok append "$id" "$(devnum $store)" 0:327680 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $dev)
write_random /dev/mapper/lin 16 32 9
[ "$(sha "$img")" = "$before" ] || fail "image changed by writes through dm-linear"
# The writes are tracked as well: after the next take, the 512 blocks of
# 64 KiB written through dm carry the new snapshot number.
bsok destroy "$id" > /dev/null
id=$(bsok create "$(devnum $dev)")
bsok append "$id" "$(devnum $store)" 0:327680 > /dev/null
bsok take "$id" > /dev/null
changed=$(bsok cbtread "$(devnum $dev)" 0 2048 | tr ' ' '\n' | grep -c '=2$')
[ "$changed" = 512 ] || fail "$changed blocks marked changed, expected the 512 written through dm"
bsok destroy "$id" > /dev/null
dmsetup remove lin --noudevsync
exit 0
