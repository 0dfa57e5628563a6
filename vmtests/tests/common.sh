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
