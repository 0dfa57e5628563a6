# A read of a stored chunk that no write through the image has made dirty
# goes to the chunk's place on the storage without the chunk's lock
# (diff_area_image_read_begin()); when a write through the image then
# dirties the chunk, the cache release stores it again to that same place
# only after the read has ended (diff_area_cache_release()). Here every
# write through the image is of whole 64 KiB chunks whose every sector
# names the chunk and its generation, and every image read, in 1 MiB
# direct reads, is checked chunk by chunk: each chunk whole (one
# generation, no mix), of a generation written to it, and not older than
# what had been written when the read began. The storage is striped over
# two halves of a disk, one of which reads slowly (dm-delay): a read of a
# place gets one half of the chunk at once and the other only later, so
# a chunk stored again under the read shows up torn.
# 1. Slow storage, chunk_maximum_in_cache=2: a chunk is written through
#    the image (its load from the slow storage takes a while), a reader
#    starts on it meanwhile (from its place), then three fresh chunks are
#    written, which push it out of the write cache: stored again at once
#    unless the store waits for that reader.
# 2. The default cache: each MiB is copied on write (its chunks stored,
#    clean, their buffers kept in the read cache), a reader starts on it
#    (from the places), the MiB is written through the image (into the
#    buffers), and the next two MiB push it out of the write cache while
#    that read still waits for its slow halves.
#    Each MiB is read again right after its write: from the buffers.
# At the end the image has the last generation of every chunk, the origin
# its own data, and the snapshot is not corrupted. With the cache release
# not waiting for tracked reads, phase 1 fails at its first step ("chunk 7
# is torn: 64xg0000001 64xg0000000 sectors"), and phase 2 alone fails as
# well, in 4 runs of 4 by its third or fourth step ("MiB 10: chunk 160 is
# torn"; a MiB is pushed out of the write cache from the third step on);
# with CHUNK_ST_DIRTY left out of the condition that sends a read to the
# place, phase 2 fails at its first read after a write. Hence 8 steps a
# phase (~45 s; 32 and 24 steps took ~100 s).
# timeout: 240
. /tests/common.sh

orig=/dev/vdb
half=2097152		# sectors in each half of /dev/vdd
steps1=8		# phase 1: targets chunks 7s mod 16, 3 fresh chunks a step from 32 on
fresh=32
fresh_mib=$(((steps1 * 3 + 15) / 16))	# the MiB the fresh chunks are in
ts=${TSCALE:-1}
slow1=$((600 * ts))	# ms, slow half's reads in phase 1
mib2=8			# phase 2: from MiB 8 (chunk 128) on, one MiB a step
steps2=8
slow2=$((4000 * ts))	# ms, in phase 2: longer than two steps
# secs N: N tenths of a second, scaled for the debug kernel.
secs() { awk -v n="$1" -v t="$ts" 'BEGIN { print n * t / 10 }'; }
gap1=$(secs 3)		# phase 1: the write's load, then the read
gap2=$(secs 5)		# phase 2: the read, then the write
cow2=$(secs 1)		# phase 2: for the copies to be stored

# pattern FIRST_CHUNK COUNT TAG: COUNT chunks of 64 KiB, each sector one
# line "cNNNNNNN TAG ....": the chunk's number and an 8-character tag.
pattern() {
	awk -v f="$1" -v n="$2" -v t="$3" 'BEGIN {
		pad = sprintf("%493s", ""); gsub(/ /, ".", pad)
		for (c = f; c < f + n; c++) {
			line = sprintf("c%07d %s %s\n", c, t, pad)
			for (i = 0; i < 128; i++) printf "%s", line
		}
	}'
}
gtag() { printf 'g%07d' "$1"; }
OTAG="orig-new"	# what the origin gets after the take: never in an image

# check LABEL FIRST_CHUNK COUNT LO HI < (uniq -c of what was read): every
# chunk there, in order, whole, of one generation from LO to HI; LO and
# HI are one number for all chunks or a list with one for each.
check() {
	awk -v label="$1" -v c0="$2" -v nch="$3" -v lo="$4" -v hi="$5" '
	{ n++; cnt[n] = $1; name[n] = $2; tag[n] = $3 }
	END {
		nl = split(lo, L, " "); nh = split(hi, H, " ")
		i = 1
		for (k = 0; k < nch; k++) {
			c = sprintf("c%07d", c0 + k)
			first = i; tot = 0; desc = ""
			while (i <= n && name[i] == c) {
				desc = desc " " cnt[i] "x" tag[i]; tot += cnt[i]; i++
			}
			if (i == first) {
				print label ": chunk " (c0 + k) " is not there: " \
					(i <= n ? cnt[i] " sectors of " name[i] " " tag[i] : "end of data")
				exit 1
			}
			if (i - first > 1 || tot != 128) {
				print label ": chunk " (c0 + k) " is torn:" desc " sectors"
				exit 1
			}
			if (tag[first] !~ /^g[0-9]+$/) {
				print label ": chunk " (c0 + k) " holds " tag[first] " data, not the image'"'"'s"
				exit 1
			}
			# Not "+ 0" on the zero-padded number: busybox awk
			# reads a leading 0 as octal.
			g = tag[first]; sub(/^g0*/, "", g); g = g == "" ? 0 : g + 0
			l = nl > 1 ? L[k + 1] : L[1]; h = nh > 1 ? H[k + 1] : H[1]
			if (g < l || g > h) {
				print label ": chunk " (c0 + k) " is generation " g ", expected " \
					(l == h ? l : l ".." h)
				exit 1
			}
		}
		if (i <= n) { print label ": more than " nch " chunks read"; exit 1 }
	}'
}

# read_check LABEL MIB COUNT_MIB LO HI BUF: direct 1 MiB reads of the image.
read_check() {
	dd if="$img" of="$6" bs=1M skip="$2" count="$3" iflag=direct status=none ||
		{ echo "$1: a read of the image failed"; return 1; }
	uniq -c "$6" | check "$1" $(($2 * 16)) $(($3 * 16)) "$4" "$5"
}

# write_chunks FILE FROM FIRST_CHUNK COUNT: COUNT whole chunks of FILE from
# its FROMth on, written through the image, one 64 KiB write each.
write_chunks() {
	dd if="$1" of="$img" bs=64k skip="$2" seek="$3" count="$4" oflag=direct status=none
}

slow() {
	echo "0 $half delay /dev/vdd $half $1 /dev/vdd $half 0" | dm_swap sslow
}

# same_as DEV OFFSET_MIB COUNT_MIB FILE: that part of DEV holds FILE. Through
# a file, not a pipe, and a checksum, not cmp: both are slow under TCG.
same_as() {
	dd if="$1" of=/tmp/cmp.buf bs=1M skip="$2" count="$3" iflag=direct status=none &&
		[ "$(bsctl sum /tmp/cmp.buf)" = "$(bsctl sum "$4")" ]
}

# took START END: seconds between two uptime_s readings.
took() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", b - a }'
}

unload_module
load_module chunk_minimum_shift=16 chunk_maximum_in_cache=2
[ "$(cat /sys/module/blksnap/parameters/chunk_maximum_in_cache)" = 2 ] ||
	fail "the module did not take chunk_maximum_in_cache=2"

# 32 KiB stripes over a fast and a (made slow later) half of /dev/vdd.
dm_create sfast "0 $half linear /dev/vdd 0"
dm_create sslow "0 $half delay /dev/vdd $half 0 /dev/vdd $half 0"
dm_create st "0 $((2 * half)) striped 2 64 /dev/mapper/sfast 0 /dev/mapper/sslow 0"
storage_fs xfs /dev/mapper/st

# The origin at take time: generation 0 of every chunk used.
pattern 0 $((mib2 * 16 + steps2 * 16)) "$(gtag 0)" > /tmp/gen0
dd if=/tmp/gen0 of=$orig bs=1M oflag=direct conv=fsync status=none || fail "cannot write the origin"

# ---- phase 1: slow storage, a dirty chunk stored again at once
id=$(snap_take /mnt/st/diff1 64M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1
# Copy-on-write of the 16 targets: stored, recorded, their buffers gone.
pattern 0 16 $OTAG > /tmp/p1.orig
dd if=/tmp/p1.orig of=$orig bs=1M oflag=direct status=none || fail "cannot rewrite the origin"
out=$(read_check "before the writes" 0 1 0 0 /tmp/buf) || fail "$out"
pattern $fresh $((steps1 * 3)) "$(gtag 1)" > /tmp/p1.fresh
slow $slow1

cur="0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
placereads=0
overlaps=0
t0=$(uptime_s)
s=1
while [ $s -le $steps1 ]; do
	x=$(((s * 7) % 16))
	pattern $x 1 "$(gtag $s)" > /tmp/p1.chunk
	hi=$(echo "$cur" | awk -v k=$x -v v=$s '{ $(k + 1) = v; print }')
	write_chunks /tmp/p1.chunk 0 $x 1 &
	wp=$!
	# The write loads the chunk from the slow storage meanwhile.
	sleep "$gap1"
	( read -r a _ < /proc/uptime
	  read_check "step $s (chunk $x)" 0 1 "$cur" "$hi" /tmp/r.buf > /tmp/r.out || exit 1
	  took "$a" "$(uptime_s)" > /tmp/r.out ) &
	rp=$!
	# Still loading when the reader started: the reader may find the
	# chunk clean and go to its place, which the store after the write
	# must not overwrite under it. Every read waits for the slow storage
	# (the other chunks of the MiB), so that alone proves nothing.
	kill -0 $wp 2> /dev/null && overlaps=$((overlaps + 1))
	wait $wp || { wait $rp; fail "a write through the image failed (step $s)"; }
	# Three fresh chunks (loaded from the origin) push it out of the cache.
	write_chunks /tmp/p1.fresh $(((s - 1) * 3)) $((fresh + (s - 1) * 3)) 3 ||
		{ wait $rp; fail "a write through the image failed (step $s, fresh chunks)"; }
	wait $rp || fail "$(cat /tmp/r.out)"
	awk -v t="$(cat /tmp/r.out)" -v d=$slow1 'BEGIN { exit !(t >= d / 1000) }' &&
		placereads=$((placereads + 1))
	cur=$hi
	s=$((s + 1))
done
note "phase 1: $steps1 steps in $(took "$t0" "$(uptime_s)") s, $placereads reads waited for the storage, $overlaps started during the write"
[ "$placereads" -ge $((steps1 / 2)) ] ||
	fail "test setup: only $placereads of $steps1 reads went to the slow storage, the case was not exercised"
[ "$overlaps" -ge $((steps1 / 2)) ] ||
	fail "test setup: only $overlaps of $steps1 reads started while their chunk's write was loading it, the case was not exercised"
slow 0
dmesg | grep -q "corrupted" && fail "phase 1: the snapshot was marked corrupted"
out=$(read_check "phase 1, final read" 0 1 "$cur" "$cur" /tmp/buf) || fail "$out"
# Generation 1 in the fresh chunks written, 0 in the rest of their MiB.
fgen=$(awk -v n=$((steps1 * 3)) -v t=$((fresh_mib * 16)) 'BEGIN {
	for (i = 0; i < t; i++) printf "%s%d", i ? " " : "", i < n }')
out=$(read_check "phase 1, final read of the fresh chunks" $((fresh / 16)) $fresh_mib "$fgen" "$fgen" /tmp/buf) ||
	fail "$out"
same_as $orig 0 1 /tmp/p1.orig ||
	fail "phase 1: the origin lost its own data"
pattern $fresh $((fresh_mib * 16)) "$(gtag 0)" > /tmp/p1.fresh0
same_as $orig $((fresh / 16)) $fresh_mib /tmp/p1.fresh0 ||
	fail "phase 1: writes through the image changed the origin"
snap_destroy "$id" /mnt/st/diff1

# ---- phase 2: the default cache, stored chunks keep their buffers
unload_module
load_module chunk_minimum_shift=16
[ "$(cat /sys/module/blksnap/parameters/chunk_maximum_in_cache)" -ge 16 ] ||
	fail "test setup: the default cache holds less than a MiB of chunks"
id=$(snap_take /mnt/st/diff2 64M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1
pattern $((mib2 * 16)) $((steps2 * 16)) $OTAG > /tmp/p2.orig
pattern $((mib2 * 16)) $((steps2 * 16)) "$(gtag 1)" > /tmp/p2.gen
slow $slow2

rm -f /tmp/reader.fail /tmp/p2.*.t
pids=
t0=$(uptime_s)
s=0
while [ $s -lt $steps2 ] && [ ! -e /tmp/reader.fail ]; do
	m=$((mib2 + s))
	# Copy-on-write of the MiB: its chunks stored, clean, buffers cached.
	dd if=/tmp/p2.orig of=$orig bs=1M skip=$s seek=$m count=1 oflag=direct status=none ||
		fail "cannot rewrite the origin"
	sleep "$cow2"
	( read -r a _ < /proc/uptime
	  out=$(read_check "MiB $m" $m 1 0 1 /tmp/p2.$s.buf) || { echo "$out" > /tmp/reader.fail; exit 1; }
	  took "$a" "$(uptime_s)" > /tmp/p2.$s.t
	  rm -f /tmp/p2.$s.buf ) &
	pids="$pids $!"
	sleep "$gap2"
	write_chunks /tmp/p2.gen $((s * 16)) $((m * 16)) 16 ||
		{ wait $pids; fail "a write through the image failed (MiB $m)"; }
	# Written, not stored yet: a read now gets the buffers.
	out=$(read_check "MiB $m after its write" $m 1 1 1 /tmp/buf) || { wait $pids; fail "$out"; }
	s=$((s + 1))
done
wait $pids
[ -e /tmp/reader.fail ] && fail "$(cat /tmp/reader.fail)"
placereads=$(cat /tmp/p2.*.t | awk -v d=$slow2 '$1 >= d / 1000 { n++ } END { print n + 0 }')
note "phase 2: $steps2 steps in $(took "$t0" "$(uptime_s)") s, $placereads reads waited for the storage"
[ "$placereads" -ge $((steps2 / 2)) ] ||
	fail "test setup: only $placereads of $steps2 reads went to the slow storage, the case was not exercised"
slow 0
dmesg | grep -q "corrupted" && fail "phase 2: the snapshot was marked corrupted"
out=$(read_check "phase 2, final read" $mib2 $steps2 1 1 /tmp/buf) || fail "$out"
same_as $orig $mib2 $steps2 /tmp/p2.orig ||
	fail "phase 2: writes through the image changed the origin"
snap_destroy "$id" /mnt/st/diff2
rm -f /tmp/gen0 /tmp/p1.* /tmp/p2.* /tmp/buf /tmp/r.buf /tmp/r.out /tmp/cmp.buf
run umount /mnt/st
run dmsetup remove --noudevsync st
run dmsetup remove --noudevsync sslow
run dmsetup remove --noudevsync sfast
exit 0
