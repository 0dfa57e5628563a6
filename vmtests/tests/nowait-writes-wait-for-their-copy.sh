# Writes that must not wait (REQ_NOWAIT: RWF_NOWAIT, io_uring) to chunks
# not yet copied are refused with EAGAIN while their chunk is being copied,
# never let through before the copy is made: once retried, they are on the
# origin, and the image still holds the origin at take time. Raw origin
# (virtio disk), storage file on another disk. QEMU completes the copy's
# read of a chunk before a write sent after it, so a write let through
# during the copy would go unseen here (checked by mutation): what this
# shows is that the path is taken, answers EAGAIN and loses nothing.
# timeout: 180
# kernels: both (the filter hook: REQ_NOWAIT writes)
. /tests/common.sh

orig=/dev/vdb
load_module
storage_fs
write_random $orig 0 16 3
# first_mib DEV MIB [SKIP_MIB]: the checksum of MIB MiB of DEV.
first_mib() {
	dd if="$1" bs=1M count="$2" skip="${3:-0}" iflag=direct status=none |
		sha256sum | cut -d' ' -f1
}
before=$(first_mib $orig 16)
id=$(snap_take /mnt/st/diff 200M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1

out=$(gen 9 $((8 * 1048576)) | bsctl nowait-write $orig 0)
case "$out" in
OK*) note "RWF_NOWAIT writes of 8 MiB: ${out#OK }" ;;
*) fail "RWF_NOWAIT writes to the origin: $out" ;;
esac
eagain=$(echo "$out" | sed -n 's/.*eagain=\([0-9]*\).*/\1/p')
[ "$eagain" -gt 0 ] ||
	fail "no RWF_NOWAIT write was refused: the copy-on-write's nowait path was not taken"

[ "$(first_mib $orig 8)" = "$(gen 9 $((8 * 1048576)) | sha256sum | cut -d' ' -f1)" ] ||
	fail "the origin does not hold the data written with RWF_NOWAIT"
[ "$(first_mib "$img" 16)" = "$before" ] ||
	fail "the image differs from the origin at take time"
dmesg | grep -q "corrupted" && fail "the snapshot was marked corrupted"
snap_destroy "$id" /mnt/st/diff
umount /mnt/st
exit 0
