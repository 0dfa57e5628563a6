# APPEND_FILE refuses, with a kernel line naming the file and nothing held
# afterwards: nonzero flags or reserved field (EINVAL), a closed
# descriptor (EBADF), a file open for writing, through the descriptor
# given or another, a program being run and a swap file in use (ETXTBSY),
# a directory, a block device or a file with a hole (EINVAL), a file on
# tmpfs (EOPNOTSUPP), an immutable file (EPERM), a read-only mount
# (EROFS), a range outside the file's blocks or reaching past one of its
# runs (EINVAL, the line names the range and the file), an empty range
# (EINVAL), an unknown snapshot (ESRCH), and a file that holds a
# snapshot's storage already (EBUSY). A refused file stays an ordinary
# one. No range and no array holds the file without using its blocks (for
# blocks in use at take time); a count of 0 with an array is EINVAL. v1's
# APPEND_STORAGE still takes raw ranges.
# Failed on f76c335: the ioctl did not exist (ENOTTY); on 926f177 an
# empty range list was refused (EINVAL).
# timeout: 180
. /tests/common.sh

load_module
storage_fs xfs
orig=$(make_loop 64)
id=$(bsok create "$(devnum $orig)")
f=/mnt/st/a.diff
run fallocate -l 16M $f

expect_err EINVAL bsctl append-file -f 1 "$id" $f
expect_err EINVAL bsctl append-file -R 1 "$id" $f
expect_err EBADF bsctl append-file -d 99 "$id" $f
expect_err ETXTBSY bsctl append-file -w "$id" $f
exec 3>> $f
expect_err ETXTBSY bsctl append-file "$id" $f
exec 3>&-
mkdir -p /mnt/st/dir
expect_err EINVAL bsctl append-file "$id" /mnt/st/dir 0:8
expect_err EINVAL bsctl append-file "$id" /dev/vdc 0:8
truncate -s 16M /mnt/st/holes
run fallocate -o 4M -l 4M /mnt/st/holes
echo "@@@ holes" > /dev/kmsg
expect_err EINVAL bsctl append-file "$id" /mnt/st/holes
dmesg | sed -n '/@@@ holes/,$p' | grep -q "holes has unallocated extents" ||
	fail "the hole was not what was refused: $(dmesg | tail -n 3)"
run fallocate -l 4M /dev/shm/t.diff
expect_err EOPNOTSUPP bsctl append-file "$id" /dev/shm/t.diff 0:8
rm -f /dev/shm/t.diff
run chattr +i $f
expect_err EPERM bsctl append-file "$id" $f
run chattr -i $f
run mount -o remount,ro /mnt/st
expect_err EROFS bsctl append-file "$id" $f
run mount -o remount,rw /mnt/st
# A program being run is refused like a file open for writing.
cp /bin/busybox /mnt/st/busybox && sync || fail "cannot copy busybox"
/mnt/st/busybox sleep 30 &
runner=$!
wait_for 10 eval '[ "$(readlink /proc/$runner/exe)" = /mnt/st/busybox ]' ||
	fail "test bug: the program did not start"
expect_err ETXTBSY bsctl append-file "$id" /mnt/st/busybox
kill $runner
wait $runner 2> /dev/null

# Ranges: past the file's last run on the device, and reaching past it.
set -- $(file_sectors $f 0 16777216 | sort -n | tail -n 1)
first=$1 len=$2
[ -n "$first" ] && [ -n "$len" ] || fail "test bug: no extent of $f"
echo "@@@ range" > /dev/kmsg
expect_err EINVAL bsctl append-file "$id" $f "$((first + len)):8"
dmesg | sed -n '/@@@ range/,$p' > /tmp/range.dmesg
grep -q "Range $((first + len)):8 is not in the blocks of storage file a.diff" /tmp/range.dmesg ||
	fail "no kernel line naming the range: $(tail -n 3 /tmp/range.dmesg)"
[ "$(grep -c blksnap /tmp/range.dmesg)" = 1 ] || fail "not one line: $(grep blksnap /tmp/range.dmesg)"
expect_err EINVAL bsctl append-file "$id" $f "$first:$((len + 8))"
expect_err EINVAL bsctl append-file "$id" $f "$first:0"
expect_err EINVAL bsctl append-file -c 0 "$id" $f
# No range: the snapshot holds the file, and uses none of its blocks.
run fallocate -l 1M /mnt/st/hold0
bsok append-file -H "$id" /mnt/st/hold0 > /dev/null
rm -f /mnt/st/hold0 2> /dev/null
[ -e /mnt/st/hold0 ] || fail "a file held with no range could be deleted"
expect_err ESRCH bsctl append-file 00000000-0000-0000-0000-000000000000 $f
# Nothing refused is held.
truncate -s 8M /mnt/st/holes || fail "a refused file stayed held"
run fallocate -l 1M -o 16M $f
run truncate -s 16M $f

run fallocate -l 8M /mnt/st/swap
mkswap /mnt/st/swap > /dev/null 2>&1 || fail "mkswap failed"
swapon /mnt/st/swap || fail "swapon failed"
# Swap holds it open for writing.
expect_err ETXTBSY bsctl append-file "$id" /mnt/st/swap
swapoff /mnt/st/swap || fail "swapoff failed"

# Held by one snapshot, the file is refused to another and to itself.
bsok append-file "$id" $f > /dev/null
other=$(make_loop 64)
id2=$(bsok create "$(devnum $other)")
expect_err EBUSY bsctl append-file "$id2" $f
expect_err EBUSY bsctl append-file "$id" $f
# v1's raw ranges are taken as before.
store=$(make_loop 32)
bsok append "$id2" "$(devnum $store)" 0:8192 > /dev/null
bsok destroy "$id2" > /dev/null
bsok destroy "$id" > /dev/null
rm $f /mnt/st/swap /mnt/st/holes /mnt/st/busybox /mnt/st/hold0 || fail "cannot delete the files after destroy"
run umount /mnt/st
no_snapshots
exit 0
