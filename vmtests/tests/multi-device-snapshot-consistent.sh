# One snapshot of two devices, an ext4 disk and an xfs disk, taken by
# blksnap-storage while a writer keeps writing an increasing sequence
# number to a file on the ext4 one and then to a file on the xfs one
# (fsync each): in the images the xfs number is the ext4 number or one
# less, so both were captured at one instant. Both images show their
# files as at take time, fsck clean, and stay raw-identical while the
# origins are rewritten. A device already in that snapshot
# cannot join a second one: create fails with a clear error (EBUSY from
# the raw ioctl), also when listed with a free device, and leaves no
# snapshot behind; the first snapshot is unaffected.
# timeout: 300
. /tests/common.sh

a=/dev/vdb b=/dev/vdc
load_module
storage_fs ext4 /dev/vdd
mkfs_of ext4 $a
mkfs_of xfs $b
mkdir -p /mnt/a /mnt/b /mnt/ia /mnt/ib
run mount $a /mnt/a
run mount $b /mnt/b
fill_tree /mnt/a/data 71 24
fill_tree /mnt/b/data 72 24
tree_sums /mnt/a/data > /tmp/a.sums
tree_sums /mnt/b/data > /tmp/b.sums
printf '%010d\n' 0 > /mnt/a/seq
printf '%010d\n' 0 > /mnt/b/seq
sync

# seq FILE: the number in FILE; seq_past N: b's number is past N.
seq() {
	sed 's/^0*//; s/^$/0/' "$1"
}
seq_past() {
	[ "$(seq /mnt/b/seq)" -gt "$1" ]
}

# The writer: N to a, then N to b, each on disk before the next step.
(
	i=0
	while [ ! -e /tmp/seq.stop ]; do
		i=$((i + 1))
		printf '%010d\n' $i | dd of=/mnt/a/seq conv=notrunc,fsync 2>/dev/null || exit 1
		printf '%010d\n' $i | dd of=/mnt/b/seq conv=notrunc,fsync 2>/dev/null || exit 1
	done
) &
seq_pid=$!
scn_track $seq_pid
wait_for 20 seq_past 4 || fail "the sequence writer does not progress"

step "writer running"
id=$(snap_take /mnt/st/snap.diff 256M /mnt/a /mnt/b) || exit 1
step "taken"
at_take=$(seq /mnt/b/seq)
wait_for 20 seq_past $((at_take + 4)) || fail "the sequence writer stopped after the take"
touch /tmp/seq.stop
wait $seq_pid || fail "the sequence writer failed"

# 'images' lists both, in the order given.
out=$(blksnap-storage images "$id") || fail "images failed"
[ "$(echo "$out" | wc -l)" = 2 ] || fail "images lists '$out', expected two lines"
ia=$(cli_image "$id" $a) || exit 1
ib=$(cli_image "$id" $b) || exit 1
[ "$ia" != "$ib" ] || fail "one image for two devices: $out"
[ "$(echo "$out" | head -n 1 | cut -d' ' -f2)" = "$ia" ] || fail "images not in device order: $out"

run mount -o "$(ro_opts ext4)" "$ia" /mnt/ia
run mount -o "$(ro_opts xfs)" "$ib" /mnt/ib
sa=$(seq /mnt/ia/seq) sb=$(seq /mnt/ib/seq)
note "images: ext4 seq $sa, xfs seq $sb (writer at $at_take after the take)"
[ "$sa" -ge 5 ] || fail "ext4 image seq $sa: the writer was not running at take time"
[ "$sa" = "$sb" ] || [ "$sa" = $((sb + 1)) ] ||
	fail "the images are of different instants: ext4 seq $sa, xfs seq $sb"
run umount /mnt/ia
run umount /mnt/ib

step "sequence checked"
# Raw-identical while both origins change; files as at take.
ra=$(fsum "$ia" direct) || exit 1
rb=$(fsum "$ib" direct) || exit 1
churn /mnt/a/data 73
churn /mnt/b/data 74
step "origins changed"
[ "$(fsum "$ia" direct)" = "$ra" ] || fail "the ext4 image changed while its origin was written"
[ "$(fsum "$ib" direct)" = "$rb" ] || fail "the xfs image changed while its origin was written"

step "images read again"
# Neither device can join a second snapshot.
out=$(blksnap-storage create $a 2>&1) && fail "a second snapshot of $a was created: $out"
echo "$out" | grep -q "already in another snapshot" || fail "create of a busy device: unclear error '$out'"
out=$(blksnap-storage create /mnt/st /mnt/b 2>&1) && fail "a snapshot of /dev/vdd and the busy $b was created: $out"
echo "$out" | grep -q "already in another snapshot" || fail "create with a busy device: unclear error '$out'"
expect_err EBUSY bsctl create "$(devnum $b)"
expect_err EBUSY bsctl create "$(devnum /dev/vdd)" "$(devnum $a)"
[ "$(bsok collect)" = "1 $id" ] || fail "snapshots after the refused creates: $(bsok collect)"
[ "$(blksnap-storage list | wc -l)" = 1 ] || fail "list after the refused creates: $(blksnap-storage list)"

step "second snapshot refused"
check_image_tree ext4 "$ia" data /tmp/a.sums
check_image_tree xfs "$ib" data /tmp/b.sums
step "images checked"
snap_destroy "$id" /mnt/st/snap.diff
[ -e "$ia" ] || [ -e "$ib" ] && fail "images still there after destroy"
run umount /mnt/a
run umount /mnt/b
fsck_ro ext4 $a
fsck_ro xfs $b
no_snapshots
exit 0
