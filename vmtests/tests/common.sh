# Shared helpers for the VM tests: sourced by every test script and by the
# guest init. A test is a shell script that exits 0 when it passes; on a
# failure it prints "FAIL: reason" (fail does) and exits non-zero.

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
BLKSNAP_KO=/lib/modules/blksnap.ko

# busybox sh runs its own applets before anything on PATH: these must be
# the real tools, which the initramfs carries in /usr/sbin.
losetup() { /usr/sbin/losetup "$@"; }
blockdev() { /usr/sbin/blockdev "$@"; }
fallocate() { /usr/sbin/fallocate "$@"; }
flock() { /usr/sbin/flock "$@"; }
chattr() { /usr/sbin/chattr "$@"; }
lsattr() { /usr/sbin/lsattr "$@"; }
# What the kernel must never print during a test.
KERNEL_BAD_PATTERN='BUG:|WARNING:|Oops|KASAN|UBSAN|possible circular|possible recursive|inconsistent lock|blocked for more than|kmemleak:.*new suspected|Call Trace|general protection'

fail() {
	echo "FAIL: $*"
	exit 1
}

log() {
	echo "--- $*"
}

# run CMD...: run it, fail the test with its output if it fails.
run() {
	local out
	out=$("$@" 2>&1) || fail "'$*' failed: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
	[ -n "$out" ] && echo "$out"
	return 0
}

# expect_err ERRNAME bsctl ARGS...: the raw ioctl must fail with ERRNAME.
expect_err() {
	local want=$1 out
	shift
	out=$("$@" 2>&1)
	[ "$out" = "ERR $want" ] || fail "'$*' gave '$out', expected ERR $want"
}

# bsok ARGS...: a bsctl call that must succeed; prints what follows "OK".
bsok() {
	local out
	out=$(bsctl "$@" 2>&1)
	case "$out" in
	OK*) echo "${out#OK}" | sed 's/^ //' ;;
	*) fail "bsctl $* gave '$out'" ;;
	esac
}

load_module() {
	lsmod | grep -q '^blksnap' && return 0
	run insmod "$BLKSNAP_KO" "$@"
	[ -c /dev/blksnap ] || fail "/dev/blksnap did not appear"
}

unload_module() {
	lsmod | grep -q '^blksnap' || return 0
	run rmmod blksnap
}

# devnum /dev/vdb -> 254:16
devnum() {
	cat "/sys/class/block/$(basename "$1")/dev"
}

# sectors /dev/vdb -> capacity in 512-byte sectors
sectors() {
	cat "/sys/class/block/$(basename "$1")/size"
}

# gen SEED BYTES: reproducible data
gen() {
	bsctl gen "$1" "$2"
}

sha() {
	sha256sum "$1" | cut -d' ' -f1
}

# write_random DEV OFFSET_MIB SIZE_MIB SEED: overwrite part of a device.
write_random() {
	gen "$4" $(($3 * 1048576)) | dd of="$1" bs=1M seek="$2" conv=notrunc,fsync 2>/dev/null ||
		fail "write to $1 failed"
}

mkfs_of() {
	case "$1" in
	ext4) run mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$2" > /dev/null ;;
	xfs) run mkfs.xfs -q -f "$2" > /dev/null ;;
	*) fail "unknown filesystem $1" ;;
	esac
}

# Read-only mount options that never write to the device: an image of a
# mounted file system carries an unreplayed journal.
ro_opts() {
	case "$1" in
	ext4) echo "ro,noload" ;;
	xfs) echo "ro,norecovery,nouuid" ;;
	esac
}

fsck_ro() {
	case "$1" in
	ext4) e2fsck -fn "$2" > /tmp/fsck.out 2>&1 ;;
	xfs) xfs_repair -n "$2" > /tmp/fsck.out 2>&1 ;;
	esac || fail "fsck of $2 ($1) is not clean: $(tail -n 3 /tmp/fsck.out | tr '\n' ' ')"
}

# fill_tree DIR SEED COUNT: COUNT files of 16 KiB..1 MiB with reproducible data.
fill_tree() {
	local i size
	mkdir -p "$1"
	i=0
	while [ $i -lt "$3" ]; do
		size=$(( (($2 * 7919 + i * 104729) % 64 + 1) * 16384 ))
		gen $(($2 * 1000 + i)) $size > "$1/file$i" || fail "cannot write $1/file$i"
		i=$((i + 1))
	done
	sync
}

# tree_sums DIR: a checksum per file, sorted, to compare two trees.
tree_sums() {
	(cd "$1" && find . -type f | sort | xargs sha256sum)
}

# image_of ID ORIGDEV -> /dev/blksnap-imageN
image_of() {
	local want pair
	want=$(devnum "$2")
	for pair in $(bsok images "$1"); do
		if [ "${pair%%=*}" = "$want" ]; then
			echo "/dev/blksnap-image${pair##*:}"
			return 0
		fi
	done
	fail "no image for $2 in snapshot $1"
}

# Remove what a test may have left, so that the next one starts clean.
guest_cleanup() {
	local id
	grep -E ' /mnt' /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do
		umount "$m" || umount -l "$m"
	done
	if [ -c /dev/blksnap ]; then
		for id in $(bsctl collect | cut -d' ' -f3-); do
			bsctl destroy "$id"
		done
	fi
	dmsetup remove_all --noudevsync 2>/dev/null
	losetup -D 2>/dev/null
	rmmod blksnap 2>/dev/null
	dmesg -c > /dev/null
	sync
}

# make_loop SIZE_MIB -> /dev/loopN backed by a file in RAM (fast and small).
make_loop() {
	local f
	mkdir -p /dev/shm/loops
	f=$(mktemp /dev/shm/loops/disk.XXXXXX)
	truncate -s "${1}M" "$f" || fail "cannot create $f"
	losetup -f --show "$f" || fail "losetup $f failed"
}

# ---------------------------------------------------------------------------
# Helpers of the CBT, image-write, lifecycle-fault, bad-input and crash
# tests: they drive blksnap-storage as a user would. Those that print a
# value fail with the reason on stderr, so that VAR=$(helper) || exit 1
# keeps it in the log.

# uptime_s: seconds since boot, to measure a phase.
uptime_s() {
	cut -d' ' -f1 /proc/uptime
}

# devno PATH -> MAJ:MIN of any block device node (/dev/mapper/x too).
devno() {
	local t
	t=$(stat -L -c '%t %T' "$1" 2>/dev/null) || fail "no device $1" >&2
	set -- $t
	echo "$((0x$1)):$((0x$2))"
}

# dm_create NAME TABLE: a device-mapper device, its node made without udev.
dm_create() {
	run dmsetup create --noudevsync "$1" --table "$2" > /dev/null
	run dmsetup mknodes "$1" > /dev/null
	[ -b "/dev/mapper/$1" ] || fail "/dev/mapper/$1 did not appear"
}

# dm_swap NAME < TABLE: give NAME a new table (suspend, reload, resume).
dm_swap() {
	run dmsetup suspend --noudevsync "$1"
	dmsetup reload --noudevsync "$1" || fail "dmsetup reload $1 failed"
	run dmsetup resume --noudevsync "$1"
}

# storage_fs [FS [DEV]]: a filesystem for storage files at /mnt/st
# (xfs on /dev/vdd by default: quick to make on a large disk).
storage_fs() {
	mkfs_of "${1:-xfs}" "${2:-/dev/vdd}"
	mkdir -p /mnt/st && run mount "${2:-/dev/vdd}" /mnt/st
}

# snap_take FILE SIZE DEV...: create a snapshot of the DEVs, give it FILE
# grown by SIZE, take it; prints the ID.
snap_take() {
	local file=$1 size=$2 id
	shift 2
	id=$(blksnap-storage create "$@") || fail "create $* failed" >&2
	blksnap-storage add --snapshot "$id" "$file" "$size" > /dev/null ||
		fail "add $file $size failed" >&2
	blksnap-storage take "$id" > /dev/null || fail "take $id failed" >&2
	echo "$id"
}

# snap_destroy ID [FILE...]: destroy it, then delete its storage files.
snap_destroy() {
	local id=$1
	shift
	blksnap-storage destroy "$id" > /dev/null || fail "destroy $id failed"
	rm -f "$@" || fail "cannot delete $* after destroy"
}

# cli_image ID DEV -> the image of DEV, as 'blksnap-storage images' says.
cli_image() {
	local want out orig img
	want=$(devno "$2")
	out=$(blksnap-storage images "$1") || fail "images $1 failed" >&2
	echo "$out" | while read -r orig img; do
		[ "$(devno "$orig")" = "$want" ] && echo "$img"
	done | grep . || fail "'images $1' lists no image for $2: $out" >&2
}

# cbt_field DEV FIELD: FIELD (generation, snap_number, block_size, blocks,
# capacity) of DEV's line in 'blksnap-storage cbt info'.
cbt_field() {
	local out v
	out=$(blksnap-storage cbt info) || fail "cbt info failed" >&2
	v=$(echo "$out" | awk -v d="$(devno "$1")" -v f="$2=" '
		$2 == d { for (i = 3; i <= NF; i++)
			if (index($i, f) == 1) print substr($i, length(f) + 1) }')
	[ -n "$v" ] || fail "cbt info has no $2 for $1: $out" >&2
	echo "$v"
}

# ranges_blocks SECTORS_PER_BLOCK: "START COUNT" sector ranges on stdin ->
# the indices of the tracking blocks they touch, sorted, one a line.
ranges_blocks() {
	awk -v b="$1" 'NF >= 2 && $2 > 0 {
		f = int($1 / b); l = int(($1 + $2 - 1) / b)
		for (i = f; i <= l; i++) print i }' | sort -n -u
}

# cbt_blocks DEV [OPTION...]: the tracking blocks 'cbt read' lists.
cbt_blocks() {
	local dev=$1 bs out
	shift
	bs=$(($(cbt_field "$dev" block_size) / 512))
	out=$(blksnap-storage cbt read "$@" "$dev") || fail "cbt read $* $dev failed" >&2
	echo "$out" | awk '{ print $2, $3 }' | ranges_blocks "$bs"
}

# write_bytes DEV OFFSET LENGTH SEED: reproducible data at a byte offset;
# sector-aligned writes go out as direct I/O, others through the cache.
write_bytes() {
	if [ $(($2 % 512)) = 0 ] && [ $(($3 % 512)) = 0 ]; then
		gen "$4" "$3" | dd of="$1" bs=512 seek=$(($2 / 512)) \
			oflag=direct conv=notrunc 2>/dev/null
	else
		gen "$4" "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc,fsync 2>/dev/null
	fi || fail "write of $3 bytes at $2 to $1 failed"
}

# file_sectors FILE OFFSET LENGTH: the device sectors, as "START COUNT"
# lines, that hold bytes OFFSET..OFFSET+LENGTH of FILE (from filefrag).
file_sectors() {
	filefrag -v -b512 "$1" | sed 's/\.\./ /g; s/:/ /g' |
		awk -v s=$(($2 / 512)) -v e=$((($2 + $3 + 511) / 512)) '
		$1 ~ /^[0-9]+$/ && NF >= 6 {
			ls = $2; ps = $4; len = $6
			a = s > ls ? s : ls; z = e < ls + len ? e : ls + len
			if (a < z) print ps + a - ls, z - a }'
}

# inner_blocks SECTORS_PER_BLOCK: "START COUNT" ranges on stdin -> the
# tracking blocks that lie wholly inside one of them.
inner_blocks() {
	awk -v b="$1" 'NF >= 2 {
		f = int(($1 + b - 1) / b); l = int(($1 + $2) / b) - 1
		for (i = f; i <= l; i++) print i }' | sort -n -u
}

# wait_for SECONDS CMD...: poll (every 0.2 s) until CMD succeeds.
wait_for() {
	local n=$(($1 * 5))
	shift
	while [ $n -gt 0 ]; do
		"$@" && return 0
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}

# no_snapshots: the kernel holds no snapshot and 'list' says so.
no_snapshots() {
	local out
	out=$(blksnap-storage list) || fail "list failed"
	[ -z "$out" ] || fail "snapshots left: $out"
	[ "$(bsok collect)" = 0 ] || fail "the kernel still has snapshots: $(bsok collect)"
}

# cbt_fs_test FS: the body of cbt-FS-file-writes-tracked. Files on an FS
# origin are overwritten in place and a new one is written between two
# snapshots; every tracking block holding written data is listed by 'cbt
# read' after the second take, no block lying wholly inside file data that
# was not written is, at most 64 other blocks (filesystem metadata) are,
# and the generation is kept.
cbt_fs_test() {
	local fs=$1 orig=/dev/vdb id bs gen1 i extra
	load_module
	storage_fs
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o && run mount $orig /mnt/o
	for i in 0 1 2 3; do gen $((100 + i)) 1048576 > /mnt/o/t$i; done
	for i in 0 1 2 3 4 5; do gen $((200 + i)) 1048576 > /mnt/o/u$i; done
	sync
	id=$(snap_take /mnt/st/diff1 64M $orig) || exit 1
	gen1=$(cbt_field $orig generation) || exit 1
	bs=$(($(cbt_field $orig block_size) / 512))

	# Overwrite in place (the files are allocated and synced): FILE OFF LEN.
	: > /tmp/written
	ow() {
		gen "$4" "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc,fsync 2>/dev/null ||
			fail "overwrite of $1 failed"
		file_sectors "$1" "$2" "$3" >> /tmp/written
	}
	ow /mnt/o/t0 100000 1 11
	ow /mnt/o/t1 0 4096 12
	ow /mnt/o/t2 300000 5000 13
	snap_destroy "$id" /mnt/st/diff1
	gen 14 1048576 | dd of=/mnt/o/t3 bs=64k conv=notrunc,fsync 2>/dev/null || fail "overwrite of t3 failed"
	file_sectors /mnt/o/t3 0 1048576 >> /tmp/written
	gen 15 1048576 > /mnt/o/n0 && sync || fail "cannot write n0"
	file_sectors /mnt/o/n0 0 1048576 >> /tmp/written
	ranges_blocks $bs < /tmp/written > /tmp/T
	[ "$(wc -l < /tmp/T)" -ge 34 ] || fail "test bug: the writes map to $(wc -l < /tmp/T) blocks only"

	id=$(snap_take /mnt/st/diff2 64M $orig) || exit 1
	[ "$(cbt_field $orig generation)" = "$gen1" ] || fail "the generation changed between two snapshots"
	cbt_blocks $orig > /tmp/F || exit 1

	missed=$(lines_minus /tmp/T /tmp/F | tr '\n' ' ')
	[ -z "$missed" ] || fail "written blocks not in the CBT: $missed"
	# Data nobody wrote: whole blocks inside the untouched files, and inside
	# the touched ones outside the written ranges.
	: > /tmp/data
	for i in 0 1 2 3 4 5; do file_sectors /mnt/o/u$i 0 1048576 >> /tmp/data; done
	for i in 0 1 2; do file_sectors /mnt/o/t$i 0 1048576 >> /tmp/data; done
	inner_blocks $bs < /tmp/data > /tmp/D
	lines_minus /tmp/D /tmp/T > /tmp/U
	[ "$(wc -l < /tmp/U)" -ge 80 ] || fail "test bug: only $(wc -l < /tmp/U) unwritten data blocks"
	wrong=$(lines_and /tmp/U /tmp/F | tr '\n' ' ')
	[ -z "$wrong" ] || fail "blocks of unwritten file data flagged as changed: $wrong"
	extra=$(lines_minus /tmp/F /tmp/T | wc -l)
	note "$fs: $(wc -l < /tmp/T) written blocks, $(wc -l < /tmp/F) flagged, $extra of them metadata"
	[ "$extra" -le 64 ] || fail "$extra blocks flagged beyond the written ones (more than 64 for metadata)"
	snap_destroy "$id" /mnt/st/diff2
	run umount /mnt/o
	no_snapshots
}

# lines_minus A B: lines of file A that are not in file B (busybox has no
# comm); lines_and A B: lines of A that are also in B.
lines_minus() {
	awk -v bf="$2" 'BEGIN { while ((getline l < bf) > 0) b[l] = 1 } !($0 in b)' "$1"
}
lines_and() {
	awk -v bf="$2" 'BEGIN { while ((getline l < bf) > 0) b[l] = 1 } $0 in b' "$1"
}

# note TEXT: log it, and put it on the console too (kept even on a pass).
note() {
	log "$*"
	echo "note: $*" > /dev/kmsg
}
