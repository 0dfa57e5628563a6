# A snapshot costs kernel memory for the chunks it copies, not for the
# size of its origin: taking one of a 256 GiB sparse origin adds less than
# 8 MiB of slab and vmalloc (allocating every chunk's descriptor at take
# cost about 100 MiB), reading never-copied chunks of the image allocates
# nothing, and copying 1000 chunks costs less than 1 KiB each. The image
# still reads as the origin at take time where those chunks were changed.
# The loop devices' tmpfs pages are allocated before the measures, so that
# what grows is blksnap's own memory.
# timeout: 240
. /tests/common.sh

# kmem_kib: kernel memory that the snapshot could use, after dropping caches.
kmem_kib() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
	awk '$1 == "Slab:" { s = $2 } $1 == "VmallocUsed:" { v = $2 }
		END { print s + v }' /proc/meminfo
}

# touch_chunks DEV CHUNK_BYTES FIO_ARGS...: 4 KiB at the start of each of
# the first $copied chunks.
copied=1000
touch_chunks() {
	local dev=$1 chunk=$2
	shift 2
	fio --name=touch --filename=$dev --ioengine=psync --direct=1 --bs=4k \
		--rw=write:$((chunk - 4096)) --size=$((copied * chunk)) "$@" \
		> /tmp/fio.out 2>&1 || fail "fio failed: $(tail -n 3 /tmp/fio.out)"
}

load_module
orig=$(make_loop $((256 * 1024)))
store=$(make_loop 320)
dd if=/dev/zero of=$store bs=1M count=320 conv=fsync status=none
# The default chunk of a 256 GiB origin (2^18 bytes, fewer than 2^21 chunks).
chunk=262144
touch_chunks $orig $chunk --zero_buffers
id=$(bsok create "$(devnum $orig)")
bsok append "$id" "$(devnum $store)" 0:655360 > /dev/null

dmesg -c > /dev/null
before=$(kmem_kib)
bsok take "$id" > /dev/null
taken=$(kmem_kib)
grown=$((taken - before))
note "take of a 256 GiB origin: +$grown KiB of slab+vmalloc"
[ $grown -lt 8192 ] ||
	fail "take of a 256 GiB origin added $grown KiB of kernel memory (limit 8192)"

logged=$(dmesg | sed -n 's/.*chunk size was calculated as \([0-9]*\) bytes.*/\1/p' | tail -n 1)
[ "$logged" = $chunk ] || fail "the chunk is '$logged' bytes, this test assumes $chunk"
img=$(image_of "$id" $orig)

zeros=$(bsctl sum /dev/zero 256)
[ "$(bsctl sum "$img" direct 256)" = "$zeros" ] ||
	fail "the image of the zero-filled origin does not read as zeros"
read_kib=$(($(kmem_kib) - taken))
note "256 MiB of never-copied chunks read: +$read_kib KiB"
[ $read_kib -lt 1024 ] ||
	fail "reading 256 MiB of never-copied chunks added $read_kib KiB of kernel memory (limit 1024)"

touch_chunks $orig $chunk --buffer_pattern=0x5a
changed_kib=$(($(kmem_kib) - taken))
note "$copied chunks of $chunk bytes copied: +$changed_kib KiB"
[ $changed_kib -lt $copied ] ||
	fail "copying $copied chunks added $changed_kib KiB of kernel memory (limit $copied)"

[ "$(bsctl sum "$img" direct 256)" = "$zeros" ] ||
	fail "the image does not read as the origin at take time after the writes"
dmesg | grep -q "corrupted" && fail "the snapshot was marked corrupted"
bsok destroy "$id" > /dev/null
exit 0
