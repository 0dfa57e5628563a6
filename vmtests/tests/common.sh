# Shared helpers for the VM tests: sourced by every test script and by the
# guest init. A test is a shell script that exits 0 when it passes; on a
# failure it prints "FAIL: reason" (fail does) and exits non-zero.

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
BLKSNAP_KO=/lib/modules/blksnap.ko
# On a stock kernel blksnap needs bdev_filter.ko, which provides the
# bdev_filter API (kernel/standalone/); load_module loads it first.
BDEV_FILTER_KO=
[ -f /lib/modules/bdev_filter.ko ] && BDEV_FILTER_KO=/lib/modules/bdev_filter.ko

# busybox sh runs its own applets before anything on PATH: these must be
# the real tools, which the initramfs carries in /usr/sbin.
losetup() { /usr/sbin/losetup "$@"; }
blockdev() { /usr/sbin/blockdev "$@"; }
fallocate() { /usr/sbin/fallocate "$@"; }
flock() { /usr/sbin/flock "$@"; }
blkdiscard() { /usr/sbin/blkdiscard "$@"; }
chattr() { /usr/sbin/chattr "$@"; }
lsattr() { /usr/sbin/lsattr "$@"; }
# What the kernel must never print during a test.
KERNEL_BAD_PATTERN='BUG:|WARNING:|Oops|KASAN|UBSAN|possible circular|possible recursive|inconsistent lock|blocked for more than|kmemleak:.*new suspected|Call Trace|general protection'

fail() {
	echo "FAIL: $*"
	exit 1
}

# skip REASON: the test does not apply to this kernel (the harness counts
# it as skipped, with the reason).
skip() {
	echo "SKIP: $*"
	exit 77
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
	if [ -n "$BDEV_FILTER_KO" ] && ! lsmod | grep -q '^bdev_filter'; then
		run insmod "$BDEV_FILTER_KO"
	fi
	run insmod "$BLKSNAP_KO" "$@"
	[ -c /dev/blksnap ] || fail "/dev/blksnap did not appear"
}

# rmmod_when_idle: unload blksnap if it is loaded. A write in flight to
# a tracked device holds the module (buffered writeback included), and
# rmmod is refused until it completes: a refusal is retried for 10 s.
rmmod_when_idle() {
	local n=50
	while lsmod | grep -q '^blksnap' && ! rmmod blksnap 2> /dev/null; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.2
	done
}

unload_module() {
	rmmod_when_idle || run rmmod blksnap
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
# (gen's data, without gen's pipe: under TCG a pipe carries about 10 MiB/s.)
write_random() {
	bsctl put "$4" $(($3 * 1048576)) "$1" $(($2 * 1048576)) > /tmp/put.out ||
		fail "write to $1 failed: $(cat /tmp/put.out)"
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
	want=$(devno "$2")
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
	local id gp mask rt exp
	# Scheduling and RCU settings of a test killed before its own trap
	# (module-unload-waits-for-rcu-callback): "PID MASK RT EXPEDITED".
	if read -r gp mask rt exp < /tmp/sched-restore 2> /dev/null; then
		taskset -p "$mask" "$gp" > /dev/null 2>&1
		echo "$rt" > /proc/sys/kernel/sched_rt_runtime_us
		echo "$exp" > /sys/kernel/rcu_expedited
		rm -f /tmp/sched-restore
	fi
	# Faults a fault-injection test left on would fail what follows.
	for f in /sys/kernel/debug/failslab /sys/kernel/debug/fail_page_alloc; do
		[ -d "$f" ] || continue
		echo 0 > "$f/probability"
		echo N > "$f/task-filter"
	done
	# Memory a killed test put aside in huge pages, and its tmpfs hog:
	# swapoff needs the room to bring the swapped pages back.
	echo 0 > /proc/sys/vm/nr_hugepages 2> /dev/null
	umount /mnt/hog 2> /dev/null
	# A swap file would keep its file system busy.
	swapoff -a 2> /dev/null
	grep -E ' /mnt' /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do
		umount "$m" || umount -l "$m"
	done
	if [ -c /dev/blksnap ]; then
		for id in $(bsctl collect | cut -d' ' -f3-); do
			bsctl destroy "$id"
		done
	fi
	# Loops over dm devices and dm devices over loops: each holds the
	# other's removal, so dm, loops, then dm again (a loop left over
	# dm-delay kept "slow" for the next test that made one).
	dmsetup remove_all --noudevsync 2>/dev/null
	for nb in /sys/kernel/config/nullb/*/; do
		[ -d "$nb" ] || continue
		echo 0 > "$nb/power" 2>/dev/null
		rmdir "$nb"
	done
	losetup -D 2>/dev/null
	dmsetup remove_all --noudevsync 2>/dev/null
	# make_loop's files are in RAM: left there, they would fill it.
	rm -rf /dev/shm/loops
	rm -rf /run/blksnap
	# The harness fails the test on this line (KERNEL_BAD_PATTERN): a
	# module left loaded would serve the next test with these parameters.
	rmmod_when_idle ||
		echo "guest_cleanup: WARNING: blksnap still in use 10 s after the test (refcnt $(cat /sys/module/blksnap/refcnt))" > /dev/kmsg
	# A stock-kernel test's other IPMODIFY user would fail every later create.
	rmmod ipmodify_holder 2>/dev/null
	# Queue settings a failed test left would change the next one's timing.
	for f in /sys/block/vd*/queue/nomerges; do
		echo 0 > "$f"
	done
	# (dmesg is read after this, and cleared when the next test starts.)
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

# le32 N: N as 4 little-endian bytes, printf escapes.
le32() {
	printf '\\%03o\\%03o\\%03o\\%03o' $(($1 & 255)) $(($1 >> 8 & 255)) \
		$(($1 >> 16 & 255)) $(($1 >> 24 & 255))
}

# partitioned_loop SIZE_MIB: a loop disk of random data with one MBR
# partition from 1 MiB to the end; prints the disk.
partitioned_loop() {
	local f
	mkdir -p /dev/shm/loops
	f=$(mktemp /dev/shm/loops/disk.XXXXXX)
	gen 1 $(($1 * 1048576)) > "$f" || fail "cannot create $f"
	{
		dd if=/dev/zero bs=446 count=1 2>/dev/null
		printf "\\000\\000\\002\\000\\203\\376\\377\\377$(le32 2048)$(le32 $(($1 * 2048 - 2048)))"
		dd if=/dev/zero bs=48 count=1 2>/dev/null
		printf '\125\252'
	} | dd of="$f" conv=notrunc 2>/dev/null || fail "cannot write the partition table"
	losetup -P -f --show "$f" || fail "losetup -P $f failed"
}

# mem_drop_mib CMD...: run CMD while sampling MemAvailable every 0.1 s;
# sets $mem_drop to how many MiB it fell below its value at the start.
# Returns CMD's status; CMD's output is in /tmp/mem_drop.out.
mem_drop_mib() {
	local start low rc sampler
	avail() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }
	start=$(avail)
	echo "$start" > /tmp/mem_drop.low
	rm -f /tmp/mem_drop.done
	( low=$start
	  while [ ! -e /tmp/mem_drop.done ]; do
		m=$(avail); [ "$m" -lt "$low" ] && low=$m
		echo "$low" > /tmp/mem_drop.low
		sleep 0.1
	  done ) &
	sampler=$!
	"$@" > /tmp/mem_drop.out 2>&1
	rc=$?
	touch /tmp/mem_drop.done
	wait $sampler
	mem_drop=$(( (start - $(cat /tmp/mem_drop.low)) / 1024 ))
	return $rc
}

# fault_injection: let every kmalloc and page allocation fail through
# /proc/thread-self/fail-nth (BSCTL_FAIL_NTH=N bsctl ...), without stack
# dumps; skips the test on a kernel without fault injection.
fault_injection() {
	local fi=/sys/kernel/debug f
	[ -d $fi/failslab ] || mount -t debugfs none $fi 2>/dev/null
	[ -d $fi/failslab ] || skip "the kernel has no fault injection (make check DEBUG=1 has it)"
	for f in failslab fail_page_alloc; do
		echo N > $fi/$f/ignore-gfp-wait
		echo 0 > $fi/$f/verbose
	done
	echo 0 > $fi/fail_page_alloc/min-order
	echo N > $fi/fail_page_alloc/ignore-gfp-highmem
}

# fault_dmesg_clean: the kernel reported nothing but the failed
# allocations' own stacks (warn_alloc), which are then cleared from the
# log the harness checks.
fault_dmesg_clean() {
	dmesg | grep -E 'BUG:|Oops|KASAN|UBSAN|general protection|WARNING:|inconsistent lock|possible' |
		head -n 1 | grep . && fail "the kernel complained (above)"
	dmesg -c > /dev/null
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

# zoned_nullb NAME SIZE_MIB ZONE_MIB: a zoned null_blk device kept in
# memory, made through configfs; prints its /dev node.
zoned_nullb() {
	local d=/sys/kernel/config/nullb/$1
	[ -d /sys/kernel/config/nullb ] || fail "no null_blk configfs (CONFIG_BLK_DEV_NULL_BLK, configfs mounted?)"
	mkdir "$d" || fail "mkdir $d failed"
	echo "$2" > "$d/size" && echo 1 > "$d/memory_backed" &&
		echo 1 > "$d/zoned" && echo "$3" > "$d/zone_size" &&
		echo 1 > "$d/power" || fail "null_blk $1 did not power on"
	# Named nullbINDEX, or after the directory in later kernels.
	wait_for 5 nullb_node "$1" "$(cat "$d/index")" > /dev/null ||
		fail "null_blk $1 has no /dev node: $(ls /sys/block | tr '\n' ' ')" >&2
	nullb_node "$1" "$(cat "$d/index")"
}

nullb_node() {
	local n
	for n in "/dev/$1" "/dev/nullb$2"; do
		[ -b "$n" ] && echo "$n" && return 0
	done
	return 1
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

# raw_take DEV STORE RANGE: create a snapshot of DEV, give it RANGE of
# STORE with v1's raw append, take it; prints the ID.
raw_take() {
	local id out
	id=$(bsok create "$(devno "$1")") || { echo "$id" >&2; exit 1; }
	out=$(bsok append "$id" "$(devno "$2")" "$3") || { echo "$out" >&2; exit 1; }
	out=$(bsok take "$id") || { echo "$out" >&2; exit 1; }
	echo "$id"
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

# add_overtaken_by_destroy ID FLOCK ARGS...: 'blksnap-storage add ARGS'
# under strace, its FLOCK-th flock(2) held back 4 s, while 'destroy ID'
# runs 2 s after the add started; the add must fail. Its output is left
# in /tmp/add.out, its flock and mkdir calls in /tmp/add.trace.
add_overtaken_by_destroy() {
	local id=$1 when=$2 add
	shift 2
	strace -qq -o /tmp/add.trace -e trace=flock,mkdir \
		-e inject=flock:delay_enter=4000000:when="$when" \
		blksnap-storage add "$@" > /tmp/add.out 2>&1 &
	add=$!
	sleep 2
	run blksnap-storage destroy "$id"
	wait $add && fail "add went on with a destroyed snapshot: $(cat /tmp/add.out)"
	return 0
}

# dirty_suspended_fs NAME DISK: an ext4 on dm device NAME (256 MiB of
# DISK) mounted on /tmp/NAME, outside /mnt where guest_cleanup does not
# unmount it, with 4 MiB of dirty data, then the device suspended without
# a flush: any sync waits until 'dmsetup resume NAME' (the harness's
# cleanup cases). The data is written before the suspend: a write after
# it can block reading the block bitmaps.
dirty_suspended_fs() {
	dmsetup create --noudevsync "$1" --table "0 524288 linear $2 0" ||
		fail "dmsetup create $1 failed"
	dmsetup mknodes
	mkfs_of ext4 "/dev/mapper/$1"
	mkdir -p "/tmp/$1" && run mount "/dev/mapper/$1" "/tmp/$1"
	dd if=/dev/zero of="/tmp/$1/dirty" bs=1M count=4 2> /dev/null ||
		fail "cannot write the dirty data"
	dmsetup suspend --noudevsync --nolockfs --noflush "$1" ||
		fail "dmsetup suspend $1 failed"
}

# note TEXT: log it, and put it on the console too (kept even on a pass).
note() {
	log "$*"
	echo "note: $*" > /dev/kmsg
}

# image_write_test FS: the body of image-writes-stay-in-image-FS. The image
# of an unmounted FS origin is mounted read-write and changed (a file
# rewritten, one deleted, one moved, new ones), then written raw; the
# origin's checksum never changes, the image reads back what was written
# (after a remount, and where the origin is written afterwards), fsck of
# the image is clean, the origin's tree is the one before, and the
# image's writes are marked in the CBT map.
image_write_test() {
	local fs=$1 orig=/dev/mapper/origin id img before opts f2 r r2
	load_module
	storage_fs
	# 384 MiB of /dev/vdb: the whole device is hashed twice.
	dm_create origin "0 786432 linear /dev/vdb 0"
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o /mnt/i && run mount $orig /mnt/o
	fill_tree /mnt/o/data 31 12
	tree_sums /mnt/o > /tmp/orig.sums
	f2=$(sha /mnt/o/data/file2)
	run umount /mnt/o
	before=$(sha $orig)
	r=$(dd if=$orig bs=1M skip=340 count=4 2>/dev/null | sha256sum | cut -d' ' -f1)
	r2=$(dd if=$orig bs=1M skip=344 count=2 2>/dev/null | sha256sum | cut -d' ' -f1)
	id=$(snap_take /mnt/st/diff 256M $orig) || exit 1
	img=$(cli_image "$id" $orig) || exit 1
	opts=rw
	[ "$fs" = xfs ] && opts=rw,nouuid

	# File level.
	run mount -o $opts "$img" /mnt/i
	gen 41 300000 > /mnt/i/data/file0 || fail "cannot rewrite file0 in the image"
	rm /mnt/i/data/file1 || fail "cannot delete file1 in the image"
	mkdir /mnt/i/new && mv /mnt/i/data/file2 /mnt/i/new/moved || fail "cannot move file2"
	fill_tree /mnt/i/new 42 5
	sync
	tree_sums /mnt/i > /tmp/img.sums
	run umount /mnt/i
	[ "$(sha $orig)" = "$before" ] || fail "the origin changed when its image's filesystem was written"
	run mount -o $opts "$img" /mnt/i
	tree_sums /mnt/i > /tmp/img2.sums
	run umount /mnt/i
	cmp -s /tmp/img.sums /tmp/img2.sums || fail "the image does not read back what was written to it"
	grep -q ' ./data/file0$' /tmp/img2.sums && grep -q "^$(gen 41 300000 | sha256sum | cut -d' ' -f1)  ./data/file0$" /tmp/img2.sums ||
		fail "file0 in the image is not the rewritten one"
	grep -q ' ./data/file1$' /tmp/img2.sums && fail "file1 deleted in the image is still there"
	grep -q "^$f2  ./new/moved$" /tmp/img2.sums || fail "moved file not in the image"
	[ "$(grep -c ' ./new/file' /tmp/img2.sums)" = 5 ] || fail "new files missing in the image"
	fsck_ro "$fs" "$img"

	# Raw: 4 MiB at 340 MiB of the image, then 4 MiB of the origin over its
	# second half and past it.
	gen 51 4194304 | dd of="$img" bs=1M seek=340 conv=notrunc,fsync 2>/dev/null || fail "raw write to the image failed"
	[ "$(dd if=$orig bs=1M skip=340 count=4 2>/dev/null | sha256sum | cut -d' ' -f1)" = "$r" ] ||
		fail "a raw write to the image reached the origin"
	gen 52 4194304 | dd of=$orig bs=1M seek=342 conv=notrunc,fsync 2>/dev/null || fail "write to the origin failed"
	[ "$(dd if="$img" bs=1M skip=340 count=4 2>/dev/null | sha256sum | cut -d' ' -f1)" = \
	  "$(gen 51 4194304 | sha256sum | cut -d' ' -f1)" ] ||
		fail "the image lost what was written to it when the origin was written there"
	[ "$(dd if=$orig bs=1M skip=342 count=4 2>/dev/null | sha256sum | cut -d' ' -f1)" = \
	  "$(gen 52 4194304 | sha256sum | cut -d' ' -f1)" ] || fail "the origin does not hold its own write"
	[ "$(dd if="$img" bs=1M skip=344 count=2 2>/dev/null | sha256sum | cut -d' ' -f1)" = "$r2" ] ||
		fail "the image does not show the origin as at take time past the image's write"

	# The image's writes are changes for the next incremental backup.
	echo "$((340 * 2048)) 8192" | ranges_blocks $(($(cbt_field $orig block_size) / 512)) > /tmp/want
	cbt_blocks $orig --since 0 > /tmp/got || exit 1
	[ -z "$(lines_minus /tmp/want /tmp/got)" ] || fail "raw image writes are not in the CBT map"
	snap_destroy "$id" /mnt/st/diff

	# The origin's filesystem is the one before.
	run mount -o "$(ro_opts "$fs")" $orig /mnt/o
	tree_sums /mnt/o > /tmp/orig2.sums
	run umount /mnt/o
	cmp -s /tmp/orig.sums /tmp/orig2.sums || fail "the origin's files changed"
	no_snapshots
}

# kmemleak_check: on a kernel with kmemleak (DEBUG=1), fail on a leak
# reported since kmemleak_clear; elsewhere do nothing.
kmemleak_clear() {
	[ -d /sys/kernel/debug ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	[ -w /sys/kernel/debug/kmemleak ] && echo clear > /sys/kernel/debug/kmemleak
	return 0
}
kmemleak_check() {
	local k=/sys/kernel/debug/kmemleak
	[ -w $k ] || return 0
	echo scan > $k
	sleep 1
	echo scan > $k
	[ -z "$(cat $k)" ] || fail "kmemleak: $(head -n 5 $k | tr '\n' ' ')"
}

# module_unload_test FS: the body of module-unload-with-held-snapshot-FS.
module_unload_test() {
	local fs=$1 orig=/dev/vdb id img out w
	kmemleak_clear
	load_module
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o /mnt/i && run mount $orig /mnt/o
	fill_tree /mnt/o/data 61 10
	tree_sums /mnt/o/data > /tmp/before.sums
	id=$(snap_take /mnt/o/.diff 64M /mnt/o) || exit 1
	img=$(cli_image "$id" $orig) || exit 1
	fill_tree /mnt/o/data 62 10	# rewritten: copied on write

	# refused DESCRIPTION: rmmod must fail and leave everything working.
	refused() {
		out=$(rmmod blksnap 2>&1) && fail "rmmod succeeded while $1"
		case "$out" in
		*"Resource temporarily unavailable"* | *"Device or resource busy"*) ;;
		*) fail "rmmod while $1: unexpected error '$out'" ;;
		esac
		lsmod | grep -q '^blksnap' || fail "module gone after a refused rmmod ($1)"
		[ -b "$img" ] || fail "$img gone after a refused rmmod ($1)"
	}
	exec 3< "$img"
	refused "$img was open"
	exec 3<&-
	run mount -o "$(ro_opts "$fs")" "$img" /mnt/i
	refused "$img was mounted"
	tree_sums /mnt/i/data | cmp -s - /tmp/before.sums || fail "the image changed"
	run umount /mnt/i
	blksnap-storage watch --json --snapshot "$id" /mnt/o/.diff > /tmp/w.out 2>&1 &
	w=$!
	wait_for 20 grep -q "\"started\"" /tmp/w.out || fail "the watcher did not start: $(cat /tmp/w.out)"
	refused "a watcher had /dev/blksnap open"
	kill $w && wait $w || fail "the watcher did not stop cleanly on SIGTERM"

	# Nothing open, the snapshot held: either outcome must be clean.
	if rmmod blksnap 2> /tmp/rmmod.err; then
		note "$fs: rmmod with a held snapshot and nothing open: unloaded"
		[ -e /dev/blksnap ] && fail "/dev/blksnap still there after rmmod"
		[ -e "$img" ] && fail "$img still there after rmmod"
		# The origin is no longer filtered: writes go on, nothing breaks.
		fill_tree /mnt/o/after 63 5
		load_module
		[ "$(bsok collect)" = 0 ] || fail "the kernel still has snapshots: $(bsok collect)"
		# The CLI still has the lost snapshot's record: 'list' shows
		# it as gone, and 'destroy' releases its file.
		out=$(blksnap-storage list)
		[ "$out" = "$(printf '%s\tgone\t/mnt/o/.diff' "$id")" ] ||
			fail "list after rmmod: '$out'"
		run blksnap-storage destroy "$id"
		lsattr /mnt/o/.diff | cut -d' ' -f1 | grep -q i && fail "storage file still immutable"
		rm /mnt/o/.diff || fail "cannot delete the storage file"
		# A new snapshot of the same device works.
		tree_sums /mnt/o > /tmp/now.sums
		id=$(snap_take /mnt/o/.diff2 64M /mnt/o) || exit 1
		img=$(cli_image "$id" $orig) || exit 1
		run mount -o "$(ro_opts "$fs")" "$img" /mnt/i
		tree_sums /mnt/i | grep -v ' ./.diff2$' | cmp -s - /tmp/now.sums || fail "new snapshot's image differs"
		run umount /mnt/i
		snap_destroy "$id" /mnt/o/.diff2
	else
		note "$fs: rmmod with a held snapshot and nothing open: refused ($(cat /tmp/rmmod.err))"
		img2=$(cli_image "$id" $orig) || exit 1
		run mount -o "$(ro_opts "$fs")" "$img2" /mnt/i
		tree_sums /mnt/i/data | cmp -s - /tmp/before.sums || fail "the image changed"
		run umount /mnt/i
		snap_destroy "$id" /mnt/o/.diff
	fi
	no_snapshots
	run umount /mnt/o
	fsck_ro "$fs" $orig
	unload_module
	kmemleak_check
}

# watch_kill_test FS: the body of watch-restart-after-sigkill-FS.
watch_kill_test() {
	local fs=$1 orig=/dev/vdb id img w size i
	# Low-space events at 16 MiB free, asking for 16 MiB.
	load_module diff_storage_minimum=32768
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o /mnt/i && run mount $orig /mnt/o
	fill_tree /mnt/o/data 71 8
	gen 72 $((44 * 1048576)) > /mnt/o/big && sync || fail "cannot write big"
	tree_sums /mnt/o > /tmp/before.sums
	id=$(snap_take /mnt/o/.diff 32M /mnt/o) || exit 1
	img=$(cli_image "$id" $orig) || exit 1

	blksnap-storage watch --json --snapshot "$id" --step 16M /mnt/o/.diff > /tmp/w1.json 2> /tmp/w1.err &
	w=$!
	wait_for 20 grep -q '"event":"started"' /tmp/w1.json || fail "watcher 1 did not start: $(cat /tmp/w1.err)"
	# Kill it idle, once its first spare is ready: a kill inside that
	# growth leaves the file mutable until the next blksnap-storage undoes
	# it (storage-growth-killed-midway-is-undone). Killed right after
	# "started", this failed in CI on bb6fe0f (stock kernel).
	wait_for 30 grep -q '"event":"spare_ready"' /tmp/w1.json ||
		fail "watcher 1 made no spare: $(cat /tmp/w1.json /tmp/w1.err | tr '\n' ' ')"
	kill -9 $w
	wait $w
	[ $? = 137 ] || fail "the watcher did not die of SIGKILL"

	# The snapshot and its held storage outlive the watcher.
	blksnap-storage list | grep -q "^$id	taken	/mnt/o/.diff$" || fail "list after SIGKILL: $(blksnap-storage list)"
	held /mnt/o/.diff || fail "storage file no longer held by the kernel"
	# 22 MiB copied on write while nobody watches: free space drops under
	# 16 MiB (the event waits in the kernel), the 32 MiB are not exhausted.
	gen 73 $((22 * 1048576)) | dd of=/mnt/o/big bs=1M conv=notrunc,fsync 2>/dev/null || fail "overwrite failed"
	grep -q corrupted /tmp/w1.json && fail "corrupted"

	# A new watcher gets the pending event and grows the file.
	blksnap-storage watch --json --snapshot "$id" --step 16M /mnt/o/.diff > /tmp/w2.json 2> /tmp/w2.err &
	w=$!
	# (Storage on the snapshotted file system: growth is a spare given.)
	wait_for 30 grep -Eq '"event":"(grown|spare_given)"' /tmp/w2.json ||
		fail "no growth after the restart: $(cat /tmp/w2.json /tmp/w2.err | tr '\n' ' ')"
	# Growth goes on: 22 MiB more, 2 MiB at a time (a growth, which mounts
	# the image to check the new sectors, takes a second or two here).
	i=11
	while [ $i -lt 22 ]; do
		gen $((74 + i)) 2097152 | dd of=/mnt/o/big bs=1M seek=$((i * 2)) conv=notrunc,fsync 2>/dev/null ||
			fail "overwrite failed"
		i=$((i + 1))
	done
	sleep 2
	kill -0 $w 2>/dev/null || fail "watcher 2 ended: $(cat /tmp/w2.json /tmp/w2.err | tr '\n' ' ')"
	grep -q '"event":"corrupted"' /tmp/w2.json && fail "snapshot corrupted: $(cat /tmp/w2.json)"
	[ "$(grep -Ec '"event":"(grown|spare_given)"' /tmp/w2.json)" -ge 2 ] || fail "only one growth for 44 MiB: $(cat /tmp/w2.json)"
	size=$(log_size /tmp/w2.json)
	[ "$size" -ge $((64 * 1048576)) ] || fail "the storage is $size bytes"
	note "$fs: storage grew to $size bytes after the watcher's restart"

	run mount -o "$(ro_opts "$fs")" "$img" /mnt/i
	tree_sums /mnt/i | grep -v ' ./.diff$' | cmp -s - /tmp/before.sums || fail "the image differs from the origin at take time"
	run umount /mnt/i
	fsck_image "$fs" "$img"
	run blksnap-storage destroy "$id"
	wait_for 10 eval "! kill -0 $w 2>/dev/null" || fail "watcher 2 still runs after destroy"
	wait $w || fail "watcher 2 exit code $? after destroy"
	grep -q '"event":"destroyed"' /tmp/w2.json || fail "watcher 2 did not report the destroy"
	rm /mnt/o/.diff || fail "cannot delete the storage file after destroy"
	run umount /mnt/o
	no_snapshots
}

# storage_pinned_test FS: the body of storage-file-pinned-FS.
storage_pinned_test() {
	local fs=$1 orig=/dev/vdb id f=/mnt/o/snap.diff ranges size
	load_module
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o && run mount $orig /mnt/o
	fill_tree /mnt/o/data 81 4
	id=$(blksnap-storage create /mnt/o) || fail "create failed"
	run blksnap-storage add --snapshot "$id" $f 32M > /dev/null

	# refused WHEN CMD...: CMD must fail with EPERM or ETXTBSY (the
	# kernel holds the file as it holds a swap file).
	refused() {
		local when=$1 out
		shift
		out=$("$@" 2>&1) && fail "'$*' succeeded on a held storage file ($when)"
		case "$out" in
		*"Operation not permitted"* | *"busy"*) ;;
		*) fail "'$*' ($when): expected EPERM or ETXTBSY, got '$out'" ;;
		esac
	}
	check_pinned() {
		refused "$1" rm -f $f
		refused "$1" truncate -s 0 $f
		refused "$1" truncate -s 64M $f
		refused "$1" sh -c ": > $f"
		refused "$1" sh -c "echo x >> $f"
		refused "$1" mv $f $f.moved
		refused "$1" fallocate -p -o 0 -l 1M $f
		[ "$(stat -c %s $f)" = "$size" ] || fail "size of the held file changed ($1)"
		[ "$(blksnap-storage ranges $f)" = "$ranges" ] || fail "the held file's sectors changed ($1)"
		[ -e $f.moved ] && fail "a moved copy appeared ($1)"
		return 0
	}
	size=$(stat -c %s $f)
	ranges=$(blksnap-storage ranges $f) || fail "ranges failed"
	check_pinned "after add"
	run blksnap-storage take "$id"
	check_pinned "after take"
	fill_tree /mnt/o/data 82 4
	check_pinned "with copy-on-write going on"

	run blksnap-storage destroy "$id"
	lsattr $f | cut -d' ' -f1 | grep -q i && fail "still immutable after destroy"
	truncate -s 1M $f || fail "cannot truncate the storage file after destroy"
	rm $f || fail "cannot delete the storage file after destroy"
	[ -e $f ] && fail "storage file still there"
	run umount /mnt/o
	fsck_ro "$fs" $orig
	no_snapshots
}

# storage_error_test FS: the body of storage-io-error-corrupts-only-snapshot-FS.
# The storage file lives on an FS on a dm-linear device over /dev/vdd; its
# sectors (and only those) are switched to the dm 'error' target while
# the snapshot is held.
storage_error_test() {
	local fs=$1 orig=/dev/vdb id img w st=/dev/mapper/st total
	load_module
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o /mnt/st && run mount $orig /mnt/o
	fill_tree /mnt/o/data 91 12
	tree_sums /mnt/o > /tmp/before.sums
	total=2097152
	dm_create st "0 $total linear /dev/vdd 0"
	mkfs_of "$fs" $st
	run mount $st /mnt/st
	id=$(snap_take /mnt/st/diff 128M $orig) || exit 1
	img=$(cli_image "$id" $orig) || exit 1
	blksnap-storage watch --json --snapshot "$id" /mnt/st/diff > /tmp/w.json 2> /tmp/w.err &
	w=$!
	wait_for 20 grep -q '"event":"started"' /tmp/w.json || fail "the watcher did not start: $(cat /tmp/w.err)"
	# Some copy-on-write that works, and the image reads well.
	gen 92 2097152 | dd of=/mnt/o/data/file0 bs=64k conv=notrunc,fsync 2>/dev/null || fail "write failed"
	dd if="$img" of=/dev/null bs=1M count=64 2>/dev/null || fail "the image fails to read before the fault"

	# The table: error over the file's sectors, linear elsewhere.
	blksnap-storage ranges /mnt/st/diff | sort -k2,2n | awk -v total=$total '
		BEGIN { pos = 0 }
		{ s = $2; c = $3
		  if (s > pos) print pos, s - pos, "linear /dev/vdd", pos
		  print s, c, "error"; pos = s + c }
		END { if (pos < total) print pos, total - pos, "linear /dev/vdd", pos }' > /tmp/table
	grep -q error /tmp/table || fail "test bug: no storage range in the table"
	dm_swap st < /tmp/table

	# The origin is written: copying on write now fails.
	fill_tree /mnt/o/new 93 12
	gen 94 8388608 | dd of=/mnt/o/data/file1 bs=64k conv=notrunc,fsync 2>/dev/null || fail "origin write failed after the storage fault"
	tree_sums /mnt/o > /tmp/after.sums
	wait_for 60 eval "! kill -0 $w 2>/dev/null" || fail "the watcher saw no corrupted event: $(cat /tmp/w.json)"
	wait $w
	rc=$?
	[ $rc = 3 ] || fail "watch exit code $rc, expected 3 (corrupted)"
	grep -q '"event":"corrupted".*"device_dev":"'"$(devno $orig)"'"' /tmp/w.json ||
		fail "no corrupted event for $orig: $(cat /tmp/w.json)"
	note "$fs: $(grep corrupted /tmp/w.json)"
	dd if="$img" of=/dev/null bs=1M count=64 2>/dev/null && fail "the corrupted image still reads"
	[ "$(blksnap-storage list | cut -f2)" = taken ] || fail "the snapshot went away by itself"

	# The origin has everything that was written, on disk.
	run umount /mnt/o
	fsck_ro "$fs" $orig
	run mount $orig /mnt/o
	tree_sums /mnt/o | cmp -s - /tmp/after.sums || fail "the origin does not hold what was written"
	grep -q "^$(gen 94 8388608 | sha256sum | cut -d' ' -f1)  ./data/file1$" /tmp/after.sums ||
		fail "file1 is not what was written"
	run umount /mnt/o

	run blksnap-storage destroy "$id"
	echo "0 $total linear /dev/vdd 0" | dm_swap st
	rm /mnt/st/diff || fail "cannot delete the storage file after destroy"
	run umount /mnt/st
	no_snapshots
}

# ==== storage scenarios: consistency, auto-grow, overflow, multi-device ====
# Bodies of the consistency-*, autogrow-*, overflow-* and multi-device-*
# tests, and their helpers. Origins are /dev/vdb (and /dev/vdc), mounted
# at /mnt/o (/mnt/a, /mnt/b); images are mounted at /mnt/i.

# fill_but_a_file_to_delete MNT: a 48 MiB file MNT/deleted, and every other
# block of the (ext4) file system at MNT in use (MNT/ballast, MNT/rest):
# after the take, deleting the file frees the only blocks there are.
# Prints the file's checksum.
fill_but_a_file_to_delete() {
	local avail left
	gen 9 $((48 * 1048576)) > "$1/deleted" || fail "cannot write the file to delete" >&2
	fsum "$1/deleted" || return 1
	avail=$(df -k "$1" | awk 'NR == 2 { print $4 }')
	fallocate -l $(((avail - 1024) * 1024)) "$1/ballast" || fail "cannot allocate the ballast" >&2
	dd if=/dev/zero of="$1/rest" bs=4k 2>/dev/null
	sync
	left=$(df -k "$1" | awk 'NR == 2 { print $4 }')
	[ "$left" -le 64 ] || fail "test setup: $left KiB still free at take time" >&2
}

# fsum FILE [direct]: a fast checksum of a whole file or device (bsctl
# sum), to compare devices raw where sha256sum would take minutes.
fsum() {
	local out
	out=$(bsctl sum "$@")
	[ ${#out} = 32 ] || fail "cannot checksum $1: $out" >&2
	echo "$out"
}

# other_fs FS: the other of ext4 and xfs.
other_fs() {
	if [ "$1" = ext4 ]; then echo xfs; else echo ext4; fi
}

# Background processes and frozen filesystems of the test are released
# when it exits, however it exits (a frozen filesystem would hang the
# cleanup's umount).
SCN_PIDS=
SCN_FROZEN=
scn_release() {
	local p m
	for m in $SCN_FROZEN; do fsfreeze --unfreeze "$m" 2>/dev/null; done
	for p in $SCN_PIDS; do kill "$p" 2>/dev/null; done
	SCN_FROZEN=
	SCN_PIDS=
}
scn_track() {
	SCN_PIDS="$SCN_PIDS $1"
	trap scn_release EXIT
}

# freeze_fs MNT / thaw_fs MNT
freeze_fs() {
	run fsfreeze --freeze "$1"
	SCN_FROZEN="$SCN_FROZEN $1"
	trap scn_release EXIT
}
thaw_fs() {
	run fsfreeze --unfreeze "$1"
	SCN_FROZEN=$(echo "$SCN_FROZEN" | sed "s# $1##")
}

# busy_start DIR: fio rewrites random blocks of DIR/busy.dat (16 MiB)
# in the background at 4 MiB/s, fsync every 8 writes, for at most 5
# minutes.
busy_start() {
	rm -f "$1/busy.dat"
	fio --name=busy --filename="$1/busy.dat" --rw=randwrite --bsrange=4k-64k \
		--size=16m --time_based --runtime=300 --ioengine=psync --fsync=8 --rate=4m \
		--output=/dev/null > /dev/null 2>&1 &
	BUSY_PID=$!
	scn_track $BUSY_PID
	wait_for 30 test -s "$1/busy.dat" || fail "the background writer did not start"
	sleep 1
}
# busy_stop: the writer must still be running (so it ran all along).
busy_stop() {
	kill -0 "$BUSY_PID" 2>/dev/null || fail "the background writer ended early"
	kill "$BUSY_PID"
	wait "$BUSY_PID"
}

# churn DIR SEED: change a tree made by fill_tree DIR (24 files or more):
# files 0-7 partly rewritten, 8-15 appended to, 16-23 deleted, and a new
# tree DIR.new of 16 files.
churn() {
	local d=$1 s=$2 i
	for i in 0 1 2 3 4 5 6 7; do
		gen $((s + i)) 200000 | dd of="$d/file$i" bs=64k seek=1 conv=notrunc 2>/dev/null ||
			fail "rewrite of $d/file$i failed"
	done
	for i in 8 9 10 11 12 13 14 15; do
		gen $((s + i)) 70000 >> "$d/file$i" || fail "append to $d/file$i failed"
	done
	for i in 16 17 18 19 20 21 22 23; do
		rm "$d/file$i" || fail "cannot delete $d/file$i"
	done
	fill_tree "$d.new" "$s" 16
}

# fsck_image FS IMG: fsck of a snapshot image. The xfs image of a mounted
# filesystem has a dirty log (freeze covers the log instead of writing an
# unmount record), which 'xfs_repair -n' reports as damage: the log is
# then replayed by mounting the image read-write (writes to an image stay
# in the image) and 'xfs_repair -n' must be clean. So: after the image's
# other checks.
fsck_image() {
	if [ "$1" = xfs ] && ! xfs_repair -n "$2" > /tmp/fsck.out 2>&1 &&
		grep -q 'valuable metadata changes in a log' /tmp/fsck.out; then
		mkdir -p /mnt/i
		run mount -o nouuid "$2" /mnt/i
		run umount /mnt/i
	fi
	fsck_ro "$1" "$2"
}

# check_image_tree FS IMG DIR SUMS: IMG mounted read-only shows DIR's
# files as SUMS (tree_sums of DIR at take time); fsck of IMG is clean
# (fsck_image: for xfs this writes to the image).
check_image_tree() {
	mkdir -p /mnt/i
	run mount -o "$(ro_opts "$1")" "$2" /mnt/i
	tree_sums "/mnt/i/$3" > /tmp/image.sums
	run umount /mnt/i
	cmp -s /tmp/image.sums "$4" ||
		fail "$1 image: files differ from take time: $(diff "$4" /tmp/image.sums | grep '^[-+]\.' | head -n 4 | tr '\n' ' ')"
	fsck_image "$1" "$2"
}

# watch_start ID FILE LOG [OPTION...]: 'blksnap-storage watch --json' in
# the background (WATCH_PID), its lines in LOG, its stderr in LOG.err;
# returns once it said "started".
watch_start() {
	local id=$1 file=$2 log=$3
	shift 3
	blksnap-storage watch --json --snapshot "$id" "$@" "$file" > "$log" 2> "$log.err" &
	WATCH_PID=$!
	scn_track $WATCH_PID
	wait_for 20 grep -q '"event":"started"' "$log" ||
		fail "watch did not start: $(cat "$log" "$log.err" | tr '\n' ' ')"
}

# watch_end LOG: after destroy the watcher says "destroyed" and exits 0.
watch_end() {
	local rc
	wait_for 20 eval "! kill -0 $WATCH_PID 2>/dev/null" || fail "watch still runs after destroy"
	wait "$WATCH_PID"
	rc=$?
	[ $rc = 0 ] || fail "watch exited $rc after destroy: $(tail -n 2 "$1.err")"
	grep -q '"event":"destroyed"' "$1" || fail "watch did not say destroyed: $(tail -n 1 "$1")"
}

# watch_clean LOG: no corrupted or grow_failed event, watcher alive.
watch_clean() {
	grep -q '"event":"corrupted"' "$1" && fail "snapshot corrupted: $(grep corrupted "$1")"
	grep -q '"event":"grow_failed"' "$1" && fail "growth failed: $(grep grow_failed "$1" | head -n 1)"
	kill -0 "$WATCH_PID" 2>/dev/null || fail "watch ended: $(tail -n 2 "$1" "$1.err" | tr '\n' ' ')"
}

# growth_stats LOG -> "COUNT GROWN_BYTES LAST_SIZE GIVEN_SECTORS
# WITHHELD_SECTORS" over the "grown" lines and the spares of storage on
# a snapshotted device ("spare_ready": a growth; "spare_given": sectors
# given); ODD=1 when a growth was not by STEP bytes (growth_stats LOG STEP).
growth_stats() {
	awk -v step="${2:-0}" '/"event":"(grown|spare_ready|spare_given)"/ {
		if ($0 !~ /"event":"spare_given"/)
			n++
		c = split($0, f, /[,{}]/)
		for (i = 1; i <= c; i++) {
			split(f[i], kv, ":")
			if (kv[1] == "\"grown_bytes\"") { g += kv[2]; if (step && kv[2] != step) odd = 1 }
			if (kv[1] == "\"size\"") s = kv[2]
			if (kv[1] == "\"given_sectors\"") gv += kv[2]
			if (kv[1] == "\"withheld_sectors\"") w += kv[2]
		}
	}
	END { printf "%.0f %.0f %.0f %.0f %.0f %d\n", n, g, s, gv, w, odd }' "$1"
}

# overwrite FILE MIB [OFFSET_MIB [RATE]]: MIB MiB of FILE overwritten in
# place (direct I/O, 1 MiB writes, at most RATE, e.g. 8m, per second):
# that much copy-on-write on its device.
overwrite() {
	fio --name=ow --filename="$1" --rw=write --bs=1m --size="${2}m" \
		--offset="${3:-0}m" ${4:+--rate=$4} --ioengine=psync --direct=1 \
		--output=/dev/null > /dev/null 2>&1 ||
		fail "overwriting $2 MiB of $1 failed"
}

# step TEXT: a phase of the test, with the time since boot, in the test's
# log and on the console (to see where the time goes).
step() {
	log "$(uptime_s) $*"
	echo "step: $*" > /dev/kmsg
}

# setup_origin FS: FS on /dev/vdb at /mnt/o with data/ (40 files) and
# keep/ (10 files), and the other filesystem type on /dev/vdd at /mnt/st.
setup_origin() {
	mkfs_of "$1" /dev/vdb
	mkdir -p /mnt/o && run mount /dev/vdb /mnt/o
	fill_tree /mnt/o/data 11 40
	fill_tree /mnt/o/keep 12 10
	storage_fs "$(other_fs "$1")"
}

# frozen_take ID MNT DEV: freeze MNT, checksum DEV raw (PRE_SUM), take the
# snapshot, thaw: the image must be exactly PRE_SUM.
frozen_take() {
	freeze_fs "$2"
	PRE_SUM=$(fsum "$3" direct) || exit 1
	run blksnap-storage take "$1"
	thaw_fs "$2"
}

# other_fs_consistency_test FS: body of consistency-storage-on-other-fs-FS.
other_fs_consistency_test() {
	local fs=$1 orig=/dev/vdb id img got
	load_module
	setup_origin "$fs"
	tree_sums /mnt/o > /tmp/pre.sums
	id=$(blksnap-storage create $orig) || fail "create $orig failed"
	run blksnap-storage add --snapshot "$id" /mnt/st/snap.diff 256M
	frozen_take "$id" /mnt/o $orig
	img=$(cli_image "$id" $orig) || exit 1

	# The origin changes and stays busy while the image is read.
	churn /mnt/o/data 21
	gen 22 $((8 * 1048576)) > /mnt/o/keep.big || fail "cannot write keep.big"
	busy_start /mnt/o
	# Read through the page cache, as 'dd if=IMAGE' does (the other tests
	# read images with O_DIRECT: three times faster here).
	got=$(fsum "$img") || exit 1
	[ "$got" = "$PRE_SUM" ] || fail "$fs image: raw checksum differs from the origin at take time"
	check_image_tree "$fs" "$img" . /tmp/pre.sums
	busy_stop
	sync
	tree_sums /mnt/o > /tmp/post.sums
	cmp -s /tmp/pre.sums /tmp/post.sums && fail "test bug: the origin did not change"

	snap_destroy "$id" /mnt/st/snap.diff
	[ -e "$img" ] && fail "$img still exists after destroy"
	# The origin holds what was written.
	run umount /mnt/o
	fsck_ro "$fs" $orig
	run mount $orig /mnt/o
	tree_sums /mnt/o | cmp -s - /tmp/post.sums || fail "the origin lost writes made during the snapshot"
	run umount /mnt/o
	no_snapshots
}

# same_fs_consistency_test FS: body of consistency-storage-on-same-fs-FS.
same_fs_consistency_test() {
	local fs=$1 orig=/dev/vdb id img
	load_module
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o && run mount $orig /mnt/o
	mkdir -p /mnt/o/var
	fill_tree /mnt/o/t/data 31 40
	fill_tree /mnt/o/t/keep 32 10
	tree_sums /mnt/o/t > /tmp/pre.sums
	# The usual setup: storage in /var of the filesystem being saved, the
	# snapshot taken with the filesystem mounted (the take freezes it).
	id=$(snap_take /mnt/o/var/snap.diff 128M /mnt/o) || exit 1
	img=$(cli_image "$id" $orig) || exit 1
	churn /mnt/o/t/data 33
	gen 34 $((8 * 1048576)) > /mnt/o/t/keep.big || fail "cannot write keep.big"
	busy_start /mnt/o
	check_image_tree "$fs" "$img" t /tmp/pre.sums
	busy_stop
	sync
	tree_sums /mnt/o/t > /tmp/post.sums
	snap_destroy "$id" /mnt/o/var/snap.diff
	run umount /mnt/o
	fsck_ro "$fs" $orig
	run mount $orig /mnt/o
	tree_sums /mnt/o/t | cmp -s - /tmp/post.sums || fail "the origin lost writes made during the snapshot"
	run umount /mnt/o
	no_snapshots
}

# autogrow_test FS INITIAL_MIB MIN_MIB EARLY_MIB LATE_MIB: body of the
# autogrow-* tests with storage on another filesystem. Threshold MIN_MIB,
# storage INITIAL_MIB, 'watch --step 64M'; EARLY_MIB of overwrites must
# not grow it, EARLY_MIB + LATE_MIB must, by 64 MiB steps, without
# corruption; the image is raw-exact and its files and fsck are right.
autogrow_test() {
	local fs=$1 init=$2 min=$3 early=$4 late=$5 orig=/dev/vdb id img got st
	local n bytes size given withheld odd want
	load_module diff_storage_minimum=$((min * 2048))
	setup_origin "$fs"
	# The space the overwrites go to, allocated before the take.
	run fallocate -l $(((early + late) * 1048576)) /mnt/o/big
	sync
	tree_sums /mnt/o/data > /tmp/pre.sums
	id=$(blksnap-storage create /mnt/o) || fail "create failed"
	run blksnap-storage add --snapshot "$id" /mnt/st/snap.diff ${init}M
	frozen_take "$id" /mnt/o $orig
	img=$(cli_image "$id" $orig) || exit 1
	watch_start "$id" /mnt/st/snap.diff /tmp/w.json --step 64M

	if [ "$early" -gt 0 ]; then
		overwrite /mnt/o/big "$early"
		sync
		sleep 1
		watch_clean /tmp/w.json
		grep -q '"event":"grown"' /tmp/w.json &&
			fail "grown after $early MiB of changes with $init MiB given and a $min MiB threshold: $(grep grown /tmp/w.json | head -n 1)"
	fi
	churn /mnt/o/data 41
	overwrite /mnt/o/big "$late" "$early"
	sync
	sleep 2
	watch_clean /tmp/w.json
	set -- $(growth_stats /tmp/w.json 67108864)
	n=$1 bytes=$2 size=$3 given=$4 withheld=$5 odd=$6
	st=$(stat -c %s /mnt/st/snap.diff)
	note "$fs: $n growths, $bytes bytes, file $st bytes: $(grep -c . /tmp/w.json) events"
	# Events come when free space falls to MIN: after INIT - MIN MiB of
	# copy-on-write, then every 64 MiB; EARLY + LATE MiB (plus churn and
	# metadata) reach this many.
	want=$(((early + late - init + min) / 64 + 1))
	[ "$n" -ge "$want" ] || fail "$n growths for $((early + late)) MiB of changes, expected at least $want"
	[ "$odd" = 0 ] || fail "a growth was not of the 64 MiB step: $(grep grown /tmp/w.json | tr '\n' ' ')"
	[ "$withheld" = 0 ] || fail "$withheld sectors withheld on a filesystem the snapshot does not cover"
	[ "$given" = $((bytes / 512)) ] || fail "given $given sectors for $bytes bytes of growth"
	# The named file is the first growth; later ones are unnamed files.
	[ "$st" = $((init * 1048576)) ] && [ "$size" = $((init * 1048576 + bytes)) ] ||
		fail "storage file is $st bytes, expected $((init * 1048576)); log says the storage is $size, expected $((init * 1048576 + bytes))"

	got=$(fsum "$img" direct) || exit 1
	[ "$got" = "$PRE_SUM" ] || fail "$fs image: raw checksum differs from the origin at take time"
	check_image_tree "$fs" "$img" data /tmp/pre.sums
	run blksnap-storage destroy "$id"
	watch_end /tmp/w.json
	rm /mnt/st/snap.diff || fail "cannot delete the storage file after destroy"
	run umount /mnt/o
	fsck_ro "$fs" $orig
	no_snapshots
}

# autogrow_deleted_test FS: body of autogrow-over-deleted-files-FS. The
# storage file is inside the origin, large files written right after it
# are deleted after the take (their blocks are free, the image still
# shows them), then copy-on-write makes the watcher grow the file
# several times: growth lands on those blocks, which must be withheld,
# and every deleted file is intact in the image.
autogrow_deleted_test() {
	local fs=$1 orig=/dev/vdb id img i avail ballast n bytes size given withheld st bad
	load_module diff_storage_minimum=65536
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o && run mount $orig /mnt/o
	id=$(blksnap-storage create /mnt/o) || fail "create failed"
	run blksnap-storage add --snapshot "$id" /mnt/o/snap.diff 64M
	# Written right after the storage file: where it grows next.
	for i in 0 1 2 3; do
		gen $((50 + i)) $((24 * 1048576)) > /mnt/o/del$i || fail "cannot write del$i"
	done
	fill_tree /mnt/o/data 55 24
	sync
	# Ballast leaves 320 MiB free at take time; it is overwritten later
	# (copy-on-write without taking space).
	avail=$(df -k /mnt/o | awk 'NR == 2 { print $4 }')
	ballast=$((avail / 1024 - 320))
	[ $ballast -ge 256 ] || fail "test bug: only $avail KiB available"
	run fallocate -l $((ballast * 1048576)) /mnt/o/ballast
	sync
	for i in 0 1 2 3; do
		fsum /mnt/o/del$i > /tmp/del$i.sum || exit 1
	done
	tree_sums /mnt/o/data > /tmp/pre.sums
	run blksnap-storage take "$id"
	img=$(cli_image "$id" $orig) || exit 1

	rm /mnt/o/del0 /mnt/o/del1 /mnt/o/del2 /mnt/o/del3 || fail "cannot delete the files"
	sync
	watch_start "$id" /mnt/o/snap.diff /tmp/w.json --step 64M
	# 224 MiB of copy-on-write through 64 MiB given and a 32 MiB threshold,
	# at 8 MiB/s: 4 s for each growth (the image is mounted and its
	# GETFSMAP read) before the storage runs out.
	step "overwriting"
	overwrite /mnt/o/ballast 224 0 8m
	step "overwritten"
	churn /mnt/o/data 56
	sync
	sleep 2
	set -- $(growth_stats /tmp/w.json)
	n=$1 bytes=$2 size=$3 given=$4 withheld=$5
	st=$(stat -c %s /mnt/o/snap.diff)
	note "$fs: $n growths, $bytes bytes, $given sectors given, $withheld withheld, file $st bytes"
	# What went wrong, all of it: a failed growth, corruption, damage.
	bad=
	grep -q '"event":"grow_failed"' /tmp/w.json &&
		bad="$bad; growth failed: $(grep -m 1 grow_failed /tmp/w.json | sed 's/.*"error"://')"
	if grep -q '"event":"corrupted"' /tmp/w.json; then
		bad="$bad; then the snapshot overflowed: $(grep -m 1 corrupted /tmp/w.json | sed 's/.*"device"/"device"/')"
	else
		kill -0 "$WATCH_PID" 2>/dev/null || bad="$bad; watch ended: $(tail -n 1 /tmp/w.json.err)"
		mkdir -p /mnt/i
		run mount -o "$(ro_opts "$fs")" "$img" /mnt/i
		for i in 0 1 2 3; do
			[ "$(bsctl sum /mnt/i/del$i)" = "$(cat /tmp/del$i.sum)" ] ||
				bad="$bad; deleted file del$i damaged in the image"
		done
		run umount /mnt/i
	fi
	[ -z "$bad" ] || fail "${bad#; }"
	[ "$n" -ge 3 ] || fail "only $n growths for 224 MiB of changes: $(cat /tmp/w.json | tr '\n' ' ')"
	[ "$given" -ge $(((224 - 64) * 2048)) ] || fail "only $given sectors given for 224 MiB of changes"
	[ "$st" = $((64 * 1048576)) ] && [ "$size" = $((64 * 1048576 + bytes)) ] ||
		fail "storage file is $st bytes, expected $((64 * 1048576)); log says the storage is $size, expected $((64 * 1048576 + bytes))"
	[ "$withheld" -gt 0 ] ||
		fail "test setup: no growth landed on blocks freed after the take (nothing withheld), the case was not exercised"
	check_image_tree "$fs" "$img" data /tmp/pre.sums
	run blksnap-storage destroy "$id"
	watch_end /tmp/w.json
	rm /mnt/o/snap.diff || fail "cannot delete the storage file after destroy"
	run umount /mnt/o
	fsck_ro "$fs" $orig
	no_snapshots
}

# overflow_test FS: body of overflow-corrupts-only-image-FS.
overflow_test() {
	local fs=$1 orig=/dev/vdb id img out n want got rc code
	# Copy-on-write waits this long for storage before the overflow.
	load_module diff_storage_wait_seconds=5
	setup_origin "$fs"
	id=$(snap_take /mnt/st/small.diff 16M /mnt/o) || exit 1
	img=$(cli_image "$id" $orig) || exit 1
	# 64 MiB of new data and changed files: far more than 16 MiB.
	gen 61 $((64 * 1048576)) | dd of=/mnt/o/new.dat bs=1M conv=fsync 2>/dev/null ||
		fail "write to the origin failed"
	churn /mnt/o/data 62
	sync
	tree_sums /mnt/o > /tmp/written.sums
	want=$(gen 61 $((64 * 1048576)) | bsctl sum /proc/self/fd/0)

	step "written"
	# Nobody grows the storage: the events queue up, the corrupted one
	# names the origin.
	n=0
	while :; do
		n=$((n + 1))
		[ $n -le 10 ] || fail "no corrupted event among 10 events"
		out=$(bsctl wait "$id" 20000)
		case "$out" in
		"OK low_free_space "*) ;;
		"OK corrupted "*) break ;;
		*) fail "waiting for the corrupted event: '$out'" ;;
		esac
	done
	set -- $out
	[ "$3" = "$(devnum $orig)" ] || fail "corrupted event names $3, not $orig ($(devnum $orig))"
	# An overflow is ENOSPC; checked last, so that the rest is checked too.
	code=$4
	note "$fs: $out"

	step "corrupted"
	# The image refuses to read; the origin has every byte written.
	out=$(dd if="$img" of=/dev/null bs=1M count=1 2>&1) && fail "the corrupted image still reads"
	echo "$out" | grep -q "Input/output error" || fail "reading the corrupted image: '$out', expected an I/O error"
	dd if="$img" of=/dev/null bs=1M 2>/dev/null && fail "the corrupted image still reads whole"
	[ "$(bsctl sum "$img" direct)" = "ERR EIO" ] || fail "direct read of the corrupted image is not EIO"
	run umount /mnt/o
	fsck_ro "$fs" $orig
	run mount $orig /mnt/o
	tree_sums /mnt/o | cmp -s - /tmp/written.sums || fail "the origin does not hold what was written"
	got=$(fsum /mnt/o/new.dat) || exit 1
	[ "$got" = "$want" ] || fail "new.dat on the origin is not what was written"

	out=$(blksnap-storage destroy "$id" 2>&1)
	rc=$?
	[ $rc = 0 ] || fail "destroy of the corrupted snapshot exited $rc: $out"
	[ -e "$img" ] && fail "$img still exists after destroy"
	no_snapshots
	rm /mnt/st/small.diff || fail "cannot delete the storage file after destroy"

	step "destroyed"
	# A new snapshot of the same device works and is consistent.
	tree_sums /mnt/o > /tmp/pre.sums
	id=$(blksnap-storage create /mnt/o) || fail "second create failed"
	run blksnap-storage add --snapshot "$id" /mnt/st/snap2.diff 256M
	frozen_take "$id" /mnt/o $orig
	img=$(cli_image "$id" $orig) || exit 1
	gen 63 $((32 * 1048576)) | dd of=/mnt/o/new.dat bs=1M conv=notrunc,fsync 2>/dev/null ||
		fail "write to the origin failed"
	fill_tree /mnt/o/more 64 16
	step "second snapshot taken and written"
	got=$(fsum "$img" direct) || exit 1
	[ "$got" = "$PRE_SUM" ] || fail "second snapshot: raw checksum differs from the origin at take time"
	step "second image read"
	check_image_tree "$fs" "$img" . /tmp/pre.sums
	snap_destroy "$id" /mnt/st/snap2.diff
	run umount /mnt/o
	no_snapshots
	[ "$code" = 28 ] ||
		fail "the overflow's corrupted event says error $code, not 28 (ENOSPC)"
}
# ==== end of storage scenarios ====

# crash_before FS / crash_after FS: the bodies of crash-with-held-snapshot-FS
# and its follow-up, run after the guest lost power (see "# reboot:" in
# run.sh). What was synced is recorded on /dev/vdc, which the crash spares.
crash_before() {
	local fs=$1 orig=/dev/vdb id n
	load_module
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o && run mount $orig /mnt/o
	fill_tree /mnt/o/a 101 10
	id=$(snap_take /mnt/o/.snapdiff 128M /mnt/o) || exit 1
	# A second growth: an unnamed file, which the crash must not leak.
	blksnap-storage add --snapshot "$id" /mnt/o/.snapdiff 32M > /dev/null ||
		fail "the second add failed"
	# Copy-on-write going on: new files, an in-place overwrite, a move, a
	# delete; all synced.
	fill_tree /mnt/o/b 102 10
	gen 103 200000 | dd of=/mnt/o/a/file0 bs=4k conv=notrunc,fsync 2>/dev/null || fail "overwrite failed"
	mv /mnt/o/a/file1 /mnt/o/b/moved && rm /mnt/o/a/file2 && sync || fail "mv/rm failed"
	(cd /mnt/o && find a b -type f | sort | xargs sha256sum) > /tmp/synced.sums
	[ "$(wc -l < /tmp/synced.sums)" = 19 ] || fail "test bug: $(wc -l < /tmp/synced.sums) synced files"
	{ echo "blksnap-crash-v1 $fs $id"; cat /tmp/synced.sums; echo END; } > /tmp/record
	dd if=/tmp/record of=/dev/vdc bs=64k conv=sync,fsync 2>/dev/null || fail "cannot record the synced state"
	# Writes nobody syncs, going on until the power goes; background
	# writeback every half second, so that some of it is on its way to
	# the disk (and copied on write) when the power goes.
	echo 50 > /proc/sys/vm/dirty_writeback_centisecs
	echo 100 > /proc/sys/vm/dirty_expire_centisecs
	[ -w /proc/sys/fs/xfs/xfssyncd_centisecs ] && echo 100 > /proc/sys/fs/xfs/xfssyncd_centisecs
	mkdir /mnt/o/c
	(n=0; while :; do gen $((200 + n)) 262144 > /mnt/o/c/f$n; n=$((n + 1)); done) > /dev/null 2>&1 &
	(while :; do gen 300 4194304 | dd of=/mnt/o/c/big bs=64k conv=notrunc 2>/dev/null; done) > /dev/null 2>&1 &
	sleep 6
	n=$(ls /mnt/o/c | wc -l)
	[ "$n" -gt 2 ] || fail "the writers do not write ($n files)"
	blksnap-storage list | grep -q "^$id	taken	" || fail "the snapshot is not held"
	note "$fs: power goes off with snapshot $id held and $n unsynced files being written"
}

crash_after() {
	local fs=$1 orig=/dev/vdb id head
	dd if=/dev/vdc bs=64k count=1 2>/dev/null | sed -n '1,/^END$/p' > /tmp/record
	head=$(head -n 1 /tmp/record)
	case "$head" in
	"blksnap-crash-v1 $fs "*) id=${head##* } ;;
	*) fail "no record of the synced state on /dev/vdc (did the test before the power-off run?)" ;;
	esac
	sed '1d; $d' /tmp/record > /tmp/synced.sums
	[ "$(wc -l < /tmp/synced.sums)" = 19 ] || fail "the record is damaged"
	lsmod | grep -q '^blksnap' && fail "blksnap is loaded after the reboot"

	# Mounting replays the journal; then everything synced is there.
	mkdir -p /mnt/o && run mount $orig /mnt/o
	(cd /mnt/o && sha256sum -c /tmp/synced.sums) > /tmp/check.out 2>&1 ||
		fail "synced data lost: $(grep -v ': OK$' /tmp/check.out | head -n 3 | tr '\n' ' ')"
	[ -e /mnt/o/a/file1 ] || [ -e /mnt/o/a/file2 ] && fail "a synced move or delete was undone"
	# The storage file outlived its snapshot as an ordinary file: the pin
	# was in memory only. The file system freed the unnamed second growth
	# (fsck below finds nothing wrong).
	lsattr /mnt/o/.snapdiff | cut -d' ' -f1 | grep -q i &&
		fail "$fs: after the crash the storage file is immutable"
	note "$fs: $(ls /mnt/o/c 2>/dev/null | wc -l) of the unsynced files survived"
	run umount /mnt/o
	fsck_ro "$fs" $orig

	# blksnap works on the device again; the first add at the old path
	# removes the old file, in one line.
	load_module
	no_snapshots
	mkdir -p /mnt/i && run mount $orig /mnt/o
	old=$id
	id=$(blksnap-storage create $orig) || fail "create failed"
	blksnap-storage add --snapshot "$id" /mnt/o/.snapdiff 64M > /dev/null 2> /tmp/add.err ||
		fail "add at the old path failed: $(cat /tmp/add.err)"
	[ "$(grep -c . /tmp/add.err)" = 1 ] &&
		grep -q "removed: storage of snapshot $old .*made before a reboot" /tmp/add.err ||
		fail "add at the old path did not say, in one line, that it removed the old file: $(cat /tmp/add.err)"
	note "$fs: $(cat /tmp/add.err)"
	tree_sums /mnt/o | grep -v ' ./.snapdiff$' > /tmp/now.sums
	blksnap-storage take "$id" > /dev/null || fail "take failed"
	run mount -o "$(ro_opts "$fs")" "$(cli_image "$id" $orig)" /mnt/i
	tree_sums /mnt/i | grep -v ' ./.snapdiff$' | cmp -s - /tmp/now.sums || fail "the new snapshot's image differs"
	run umount /mnt/i
	snap_destroy "$id" /mnt/o/.snapdiff
	run umount /mnt/o
}

# same_fs_burst_test FS: body of burst-on-snapshotted-fs-survives-FS. The
# storage file is on the snapshotted file system itself, the low-space
# threshold is the smallest allowed (1 MiB), and a 384 MiB file is
# overwritten in place with O_DIRECT at full speed while 'watch' grows
# the storage by 64 MiB steps. A growth there writes metadata to the
# snapshotted device, whose writers wait for storage: 'watch' keeps the
# next step allocated ahead and gives it with no write at all. No
# corrupted event; the file in the image is the one at take time.
same_fs_burst_test() {
	local fs=$1 orig=/dev/vdc id img sum t0 t1
	load_module diff_storage_minimum=2048
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o && run mount $orig /mnt/o
	gen 41 $((384 << 20)) > /mnt/o/data || fail "cannot write the data file"
	sync
	sum=$(fsum /mnt/o/data) || exit 1
	id=$(blksnap-storage create $orig) || fail "create failed"
	run blksnap-storage add --snapshot "$id" /mnt/o/snap.diff 16M > /dev/null
	run blksnap-storage take "$id" > /dev/null
	img=$(cli_image "$id" $orig) || exit 1
	watch_start "$id" /mnt/o/snap.diff /tmp/w.json --step 64M
	wait_for 20 grep -q '"event":"spare_ready"' /tmp/w.json ||
		fail "no spare was made ready: $(cat /tmp/w.json | tr '\n' ' ')"
	t0=$(uptime_s)
	gen 42 $((384 << 20)) > /tmp/burst.dat
	timeout $((120 * ${TSCALE:-1})) dd if=/tmp/burst.dat of=/mnt/o/data bs=1M \
		oflag=direct conv=notrunc status=none || fail "the burst failed or hung"
	t1=$(uptime_s)
	rm -f /tmp/burst.dat
	sleep 1
	watch_clean /tmp/w.json
	dmesg | grep -q corrupted && fail "$(dmesg | grep corrupted | head -n 1)"
	set -- $(growth_stats /tmp/w.json 67108864)
	note "$fs: 384 MiB burst in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, $1 growths, $4 sectors given, waits: $(dmesg | grep -c 'copy-on-write waits')"
	mkdir -p /mnt/i
	run mount -o "$(ro_opts "$fs")" "$img" /mnt/i
	[ "$(bsctl sum /mnt/i/data)" = "$sum" ] || fail "the file in the image differs from take time"
	run umount /mnt/i
	run blksnap-storage destroy "$id" > /dev/null
	watch_end /tmp/w.json
	rm -f /mnt/o/snap.diff
	run umount /mnt/o
}

# ==== storage files held by the kernel (IOCTL_BLK_SNAP_SNAPSHOT_APPEND_FILE) ====

# log_size LOG: the storage's size in the last line of a 'watch --json'
# LOG that says it (later growths are unnamed files: stat sees the first).
log_size() {
	grep '"size":' "$1" | tail -n 1 | sed 's/.*"size":\([0-9]*\).*/\1/'
}

# unnamed_bytes ID: the bytes of storage given in unnamed files, as the
# state directory counts them (0 if none).
unnamed_bytes() {
	cat /run/blksnap/"$1"/unnamed-* 2> /dev/null | awk '{ n += $1 } END { print n + 0 }'
}

# held FILE: the kernel holds FILE (APPEND_FILE): an open for writing is
# refused with ETXTBSY ("Text file busy"). Opening writes nothing.
held() {
	local out
	[ -f "$1" ] || return 1
	out=$(dd if=/dev/null of="$1" conv=notrunc 2>&1) && return 1
	case "$out" in *"busy"*) return 0 ;; esac
	return 1
}

# records_held ID: every storage file 'list' shows for snapshot ID is
# held by the kernel (a record never names a file the kernel let go).
records_held() {
	local line files f
	line=$(blksnap-storage list | grep "^$1	") || return 0
	files=$(echo "$line" | cut -f3)
	[ "$files" = - ] && return 0
	for f in $(echo "$files" | tr ',' ' '); do
		held "$f" || fail "'list' names $f for $1, which the kernel does not hold"
	done
}

# held_state FILE: its size and its sectors, to tell whether it changed.
held_state() {
	stat -c %s "$1" && filefrag -v -b512 "$1" | awk '$1 ~ /^[0-9]+:$/ { print $4, $6 }'
}

# held_refused WHAT FILE [--harmless] CMD...: CMD, run against the held
# FILE, must leave FILE as it was and fail with EPERM, EBUSY or ETXTBSY
# in its output; with --harmless, leaving FILE as it was is enough.
held_refused() {
	local what=$1 file=$2 harmless= before out rc
	shift 2
	[ "$1" = --harmless ] && harmless=1 && shift
	before=$(held_state "$file")
	out=$("$@" 2>&1)
	rc=$?
	[ -e "$file" ] || fail "$what removed the held storage file"
	[ "$(held_state "$file")" = "$before" ] || fail "$what changed the held storage file: $out"
	log "$what: rc $rc: $(echo "$out" | grep . | tail -n 1)"
	[ -n "$harmless" ] && return 0
	case "$out" in
	*"busy"* | *"not permitted"*) ;;
	*) fail "$what was not refused (rc $rc): $out" ;;
	esac
}

# storage_file_held_test FS same|other: the body of
# storage-file-held-by-kernel-*. A snapshot of FS on /dev/vdb holds a
# storage file given with APPEND_FILE, on the snapshotted file system or
# on another one; every way to free, move or write its blocks is refused,
# and a copy-on-write burst after a 200 MiB file was written on the
# storage file system leaves that file and the image as they were.
storage_file_held_test() {
	local fs=$1 orig=/dev/vdb id f st img vsum
	load_module
	mkfs_of "$fs" $orig
	mkdir -p /mnt/o /mnt/i && run mount $orig /mnt/o
	fill_tree /mnt/o/data 61 8
	if [ "$2" = same ]; then
		st=/mnt/o
	else
		storage_fs "$fs"
		st=/mnt/st
	fi
	f=$st/held.diff
	run fallocate -l 320M $f
	gen 60 1048576 > $st/src || fail "cannot write $st/src"
	sync
	tree_sums /mnt/o > /tmp/before.sums
	id=$(bsok create "$(devnum $orig)")
	n=$(bsok append-file "$id" $f)
	log "the file's blocks in $n ranges"
	bsok take "$id" > /dev/null
	img=$(image_of "$id" $orig)

	held_refused "rm" $f rm -f $f
	held_refused "mv over it" $f mv -f $st/src $f
	held_refused "mv it away" $f mv $f $st/moved
	# A second name is harmless: it holds the same inode.
	held_refused "ln" $f --harmless ln $f $st/linked
	held_refused "rm of the second name" $f rm -f $st/linked
	held_refused "truncate to 0" $f truncate -s 0 $f
	held_refused "truncate up" $f truncate -s 1G $f
	held_refused "open with O_TRUNC" $f sh -c ": > $f"
	held_refused "append" $f sh -c "echo x >> $f"
	held_refused "open for writing" $f sh -c "exec 3<> $f"
	held_refused "dd conv=notrunc" $f dd if=$st/src of=$f bs=4k count=1 conv=notrunc
	held_refused "O_DIRECT write" $f dd if=$st/src of=$f bs=4k count=1 oflag=direct conv=notrunc
	held_refused "fallocate -p" $f fallocate -p -o 0 -l 1M $f
	held_refused "fallocate -z" $f fallocate -z -o 0 -l 1M $f
	held_refused "fallocate -c" $f fallocate -c -o 0 -l 1M $f
	held_refused "fallocate past the end" $f fallocate -o 0 -l 400M $f
	held_refused "chattr +i and back" $f sh -c "chattr +i $f && chattr -i $f && rm $f"
	# copy_range, dedupe through a read-only descriptor and reflink from
	# it need no writable descriptor of the file: S_SWAPFILE refuses them
	# (reflink onto it fails at the open already).
	held_refused "copy_range from it" $f xfs_io -c "copy_range $f" $st/src
	if [ "$fs" = xfs ]; then
		held_refused "reflink onto it" $f xfs_io -c "reflink $st/src 0 0 1m" $f
		held_refused "dedupe onto it, opened read-only" $f xfs_io -r -c "dedupe $st/src 0 0 1m" $f
		held_refused "reflink from it" $f xfs_io -c "reflink $f 0 0 1m" $st/src
		held_refused "xfs_fsr" $f --harmless xfs_fsr -v $f
	else
		held_refused "e4defrag" $f --harmless e4defrag $f
	fi
	held_refused "umount" $f umount $st
	grep -q " $st " /proc/mounts || fail "$st was unmounted under the held storage file"
	[ -e $st/moved ] && fail "a moved name appeared"

	# The blocks stay the snapshot's: a file written now gets others.
	gen 62 $((200 * 1048576)) > $st/victim || fail "cannot write the victim file"
	sync
	vsum=$(sha $st/victim)
	gen 63 $((64 * 1048576)) > /mnt/o/burst || fail "cannot write the burst"
	fill_tree /mnt/o/data 64 8
	sync
	echo 3 > /proc/sys/vm/drop_caches
	[ "$(sha $st/victim)" = "$vsum" ] || fail "the victim file changed under copy-on-write"
	run mount -o "$(ro_opts "$fs")" "$img" /mnt/i
	tree_sums /mnt/i | cmp -s - /tmp/before.sums || fail "the image differs from the origin at take"
	run umount /mnt/i

	bsok destroy "$id" > /dev/null
	# Destroy means done: the file is an ordinary one at once.
	rm $f $st/linked || fail "cannot delete the storage file right after destroy"
	run umount /mnt/o
	[ "$2" = same ] || run umount $st
	fsck_ro "$fs" $orig
	[ "$2" = same ] || fsck_ro "$fs" /dev/vdd
	no_snapshots
}
