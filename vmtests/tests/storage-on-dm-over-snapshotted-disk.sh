# Difference storage on a device-mapper device stacked on the snapshotted
# disk itself (an LV on that disk): the disk's filter sees dm's clones of
# the storage writes, which do not carry BIO_FILTERED. They must not be
# copied on write: origin writes complete, and the image keeps the data of
# the part of the disk outside the storage. Failed on d7861d9: a 64 MiB
# O_DIRECT write to the disk did not complete (the store of a chunk waited
# for the copy of the chunk it was being written into).
# timeout: 240
# kernels: both (the filter hook: the driver's own I/O cloned by a stacked device)
. /tests/common.sh

load_module
dev=$(make_loop 512)
half=$(( $(sectors $dev) / 2 ))
write_random $dev 0 256 21
before=$(bsctl sum $dev direct 256)
# The storage: the second half of the same disk, through dm-linear.
dm_create st "0 $half linear $dev $half"
id=$(bsok create "$(devnum $dev)")
bsok append "$id" "$(devno /dev/mapper/st)" "0:$half" > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $dev)
# The first half, overwritten: every chunk is stored in the second half.
gen 22 $((64 * 1048576)) > /tmp/w.dat
timeout 120 dd if=/tmp/w.dat of=$dev bs=1M oflag=direct conv=notrunc status=none ||
	fail "a 64 MiB write to the origin did not complete in 120 s"
rm -f /tmp/w.dat
dmesg | grep -q corrupted && fail "the snapshot was corrupted: $(dmesg | grep corrupted | head -n 1)"
[ "$(bsctl sum "$img" direct 256)" = "$before" ] ||
	fail "the image of the first half differs from the origin at take time"
bsok destroy "$id" > /dev/null
run dmsetup remove --noudevsync st
exit 0
