# A device that grows while its snapshot is held (losetup -c after the
# file grew, an LV extended): writes to its new sectors have nothing to
# keep, so the snapshot stays good, its image keeps the size and data it
# had at take, and the CBT map stays readable (the next take starts a new
# generation). Failed on d7861d9: the first write past the old end made
# the CBT map fail, and the tracker then skipped copy-on-write for every
# later write: the image changed with the origin.
# timeout: 150
. /tests/common.sh

load_module
storage_fs
dev=$(make_loop 64)
back=$(losetup -nO BACK-FILE $dev | tr -d ' ')
write_random $dev 0 64 41
id=$(snap_take /mnt/st/diff 64M $dev) || exit 1
img=$(cli_image "$id" $dev) || exit 1
before=$(bsctl sum "$img" direct)

truncate -s 96M "$back" && losetup -c $dev || fail "cannot grow $dev"
[ "$(sectors $dev)" = 196608 ] || fail "test bug: $dev did not grow"
write_random $dev 80 8 42
write_random $dev 0 1 43
dmesg | grep -q corrupted && fail "writes past the old end corrupted the snapshot: $(dmesg | grep corrupted | head -n 1)"
[ "$(sectors "$img")" = 131072 ] || fail "the image changed size with the origin"
[ "$(bsctl sum "$img" direct)" = "$before" ] || fail "the image differs from the origin at take time"
out=$(blksnap-storage cbt read $dev 2>&1) || fail "the CBT map is unreadable after the growth: $out"
snap_destroy "$id" /mnt/st/diff
umount /mnt/st
exit 0
