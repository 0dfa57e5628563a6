# A snapshot of a whole disk freezes the file systems on the disk's
# partitions for the take, as it freezes one on the disk itself: the
# image of a mounted ext4 then has a flushed journal (no needs_recovery),
# and its files are those of take time. Failed on d7861d9: only the
# whole disk's own device was frozen, and the partition's ext4 in the
# image still needed journal recovery.
# timeout: 180
. /tests/common.sh

load_module
storage_fs
disk=$(partitioned_loop 256)
part=${disk}p1
[ -b "$part" ] || fail "test bug: no $part"
mkfs_of ext4 $part
mkdir -p /mnt/o && run mount $part /mnt/o
fill_tree /mnt/o/data 9 30
tree_sums /mnt/o > /tmp/take.sums
id=$(snap_take /mnt/st/diff 128M $disk) || exit 1
img=$(cli_image "$id" $disk) || exit 1
gen 10 1048576 > /mnt/o/after && sync
ipart=$(losetup -r -f --show -o 1048576 "$img") || fail "cannot map the image's partition"
feat=$(debugfs -R features $ipart 2>/dev/null)
case "$feat" in
*needs_recovery*) fail "the image's ext4 needs journal recovery: it was not frozen for the take" ;;
*has_journal*) ;;
*) fail "test bug: debugfs said '$feat'" ;;
esac
mkdir -p /mnt/i && mount -o "$(ro_opts ext4)" $ipart /mnt/i || fail "cannot mount the image's partition"
tree_sums /mnt/i | cmp -s - /tmp/take.sums || fail "files in the image differ from take time"
run umount /mnt/i
losetup -d $ipart
snap_destroy "$id" /mnt/st/diff
run umount /mnt/o
exit 0
