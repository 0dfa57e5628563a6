# A changed chunk costs blksnap no more kernel memory than it costs
# dm-snapshot, measured in the same guest, same origin, same chunk size
# (4 KiB), once with one chunk in a hundred changed and once with one in
# ten (20000 chunks each time). dm-snapshot keeps 32 bytes per exception
# in a hash; blksnap kept a 96-byte descriptor, its region and a share of
# an xarray node per changed chunk for the snapshot's whole life.
# Failed on 7dfaaeb: 1% changed, blksnap 640 B per chunk against dm's 38.
# Its measure failed on 0b46c36 on Debian's kernel in CI, blksnap 34 and
# dm 32 at 10% (see kmem_bytes). With the measure below, Debian's kernel
# (4 runs) 12-20 and 6-16 bytes against dm's 35-38 and 32-38,
# the test kernel (SLOB then) 20-21 and 18-19 against 38-39 and 35-37.
# fio writes with libaio, 8 in flight, for both tools: the figures are
# what stays after the writes ended, and one write at a time (psync)
# made the test cost twice as much under TCG (about 84 s then). One run
# under load gave psync blksnap 18 and 8 against dm's 29 and 39, libaio
# at depth 8 15 and 10 against 36 and 38.
# timeout: 600
. /tests/common.sh

# kmem_bytes: after dropping caches, unreclaimable slab (every kmalloc of
# either tool, large ones too, and dm's exceptions) and vmalloc, plus the
# xarray nodes (blksnap's records), whose cache is counted as reclaimable
# under SLUB. SLUB's empty slabs are released first. Pages from the page
# allocator are not counted: blksnap's read cache keeps up to 32 chunk
# buffers (128 KiB with 4 KiB chunks, about 7 bytes per changed chunk
# here), a bounded cost, not one per chunk. Counting the whole slab
# instead, as this test did until 0b46c36, let dentries and inodes freed
# or made around the measure move the figure by 30 bytes per chunk
# either way: on Debian's kernel it failed once (blksnap 34, dm 32 at
# 10%) and once showed -24. SLOB (the test kernel's until e3abee1) puts every slab page
# in SUnreclaim and has no slabinfo.
kmem_bytes() {
	local f xa=0
	sync
	echo 3 > /proc/sys/vm/drop_caches
	sleep 1
	for f in /sys/kernel/slab/*/shrink; do
		[ -e "$f" ] && echo 1 > "$f"
	done
	if [ -r /proc/slabinfo ]; then
		xa=$(awk '$1 == "radix_tree_node" { print $2 * $4 }' /proc/slabinfo)
		[ "${xa:-0}" -gt 0 ] ||
			fail "/proc/slabinfo counts no radix_tree_node objects: cannot count blksnap's records" >&2
	fi
	awk -v xa="${xa:-0}" '$1 == "SUnreclaim:" { s = $2 }
		$1 == "VmallocUsed:" { v = $2 }
		END { print (s + v) * 1024 + xa }' /proc/meminfo
}

chunk=4096
changed=20000
# change DEV STRIDE_CHUNKS: 4 KiB in every STRIDE_CHUNKS-th chunk.
change() {
	fio --name=change --filename="$1" --ioengine=libaio --iodepth=8 \
		--direct=1 --bs=4k \
		--rw=write:$(($2 * chunk - 4096)) --number_ios=$changed \
		--size=$((changed * $2 * chunk)) --buffer_pattern=0x5a \
		> /tmp/fio.out 2>&1 || fail "fio failed: $(tail -n 3 /tmp/fio.out)"
}

# 2^21 chunks of 4 KiB: the largest origin that keeps the 4 KiB chunk.
load_module chunk_minimum_shift=12
orig=$(make_loop 8192)
store=$(make_loop 200)
# The loop devices' tmpfs pages (and their page-cache xarray nodes) exist
# before any measure: what grows is the snapshots' own memory.
dd if=/dev/zero of="$store" bs=1M count=200 conv=fsync status=none
change "$orig" 100
change "$orig" 10

# blksnap_per_chunk STRIDE: bytes of kernel memory per changed chunk.
blksnap_per_chunk() {
	local id before after img
	dd if=/dev/zero of="$orig" bs=1M count=8 conv=fsync status=none
	id=$(bsok create "$(devnum "$orig")")
	bsok append "$id" "$(devnum "$store")" 0:409600 > /dev/null
	bsok take "$id" > /dev/null
	img=$(image_of "$id" "$orig")
	before=$(kmem_bytes) || exit 1
	change "$orig" "$1"
	after=$(kmem_bytes) || exit 1
	cmp -s -n $((8 * 1048576)) "$img" /dev/zero ||
		fail "the image does not read as the origin at take time"
	dmesg | grep -q "corrupted" && fail "the snapshot was marked corrupted"
	bsok destroy "$id" > /dev/null
	echo $(((after - before) / changed))
}

dm_per_chunk() {
	local before after
	dd if=/dev/zero of="$orig" bs=1M count=8 conv=fsync status=none
	dm_create corig "0 $(blockdev --getsz "$orig") snapshot-origin $orig"
	dm_create csnap "0 $(blockdev --getsz "$orig") snapshot $orig $store N $((chunk / 512))"
	before=$(kmem_bytes) || exit 1
	change /dev/mapper/corig "$1"
	after=$(kmem_bytes) || exit 1
	run dmsetup remove --noudevsync csnap
	run dmsetup remove --noudevsync corig
	echo $(((after - before) / changed))
}

# A round whose blksnap figure is above dm's is measured again and the
# two rounds' means compared: one round's figures scatter by about 10
# bytes either way on Debian's kernel (blksnap 18-29, dm 28-41 in CI at
# 7322171, where one round said blksnap 29, dm 28).
for stride in 100 10; do
	pct=$((100 / stride))
	# A fail inside prints its FAIL line into the substitution: show it.
	b=$(blksnap_per_chunk $stride) || { echo "$b"; exit 1; }
	d=$(dm_per_chunk $stride) || { echo "$d"; exit 1; }
	note "$pct% of the chunks changed: blksnap $b bytes per changed chunk, dm-snapshot $d"
	if [ "$b" -gt "$d" ]; then
		b2=$(blksnap_per_chunk $stride) || { echo "$b2"; exit 1; }
		d2=$(dm_per_chunk $stride) || { echo "$d2"; exit 1; }
		note "$pct% of the chunks changed, again: blksnap $b2, dm-snapshot $d2"
		b=$(((b + b2) / 2)) d=$(((d + d2) / 2))
	fi
	[ "$b" -le "$d" ] ||
		fail "$pct% changed: blksnap costs $b bytes per changed chunk, dm-snapshot $d"
done
exit 0
