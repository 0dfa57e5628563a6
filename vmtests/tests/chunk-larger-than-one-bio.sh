# Chunks of 4 MiB, more than one bio can carry, are copied whole: the
# image keeps the origin's data at take time. (The seed read and wrote a
# chunk with a single bio whatever its size.)
# timeout: 180
. /tests/common.sh

load_module chunk_minimum_shift=22
dev=$(make_loop 128)
store=$(make_loop 160)
write_random $dev 0 128 1
before=$(sha $dev)
id=$(bsok create "$(devnum $dev)")
bsok append "$id" "$(devnum $store)" 0:327680 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $dev)
# Small writes spread over many chunks, then a full rewrite.
i=0
while [ $i -lt 32 ]; do
	gen $((100 + i)) 4096 | dd of=$dev bs=4096 seek=$((i * 1000 + 7)) conv=notrunc,fsync 2>/dev/null
	i=$((i + 1))
done
write_random $dev 0 128 2
[ "$(sha "$img")" = "$before" ] || fail "image differs from the origin at take time"
dmesg | grep -q "corrupted" && fail "the snapshot was marked corrupted"
bsok destroy "$id" > /dev/null
exit 0
