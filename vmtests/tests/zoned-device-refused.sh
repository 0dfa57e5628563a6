# A zoned device is refused when a snapshot of it is created, in one line
# from blksnap-storage and with EOPNOTSUPP from the kernel: its zone resets
# are writes of no size that would pass uncopied and unmarked (f2fs and
# btrfs garbage collection resets zones), and an image of it could not
# honour the zone write pointers anyway.
# Failed on d1a337d: the create of a zoned null_blk device succeeded.
# timeout: 60
# kernels: both (the check is the driver's, the device from null_blk)
. /tests/common.sh

load_module
zdev=$(zoned_nullb zoned0 64 4)
[ "$(cat /sys/block/${zdev#/dev/}/queue/zoned)" != none ] || fail "$zdev is not zoned"
plain=$(make_loop 16)

log "the raw ioctl"
expect_err EOPNOTSUPP bsctl create "$(devnum $zdev)"
# The zoned device must not spoil a snapshot of it with another device.
expect_err EOPNOTSUPP bsctl create "$(devnum $plain)" "$(devnum $zdev)"
[ "$(bsok collect)" = 0 ] || fail "a snapshot was left: $(bsok collect)"

log "blksnap-storage"
out=$(blksnap-storage create $zdev 2>&1) && fail "create of a zoned device succeeded: $out"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "more than one line: $out"
echo "$out" | grep -q "zoned" || fail "the refusal does not say why: $out"
echo "$out"
out=$(blksnap-storage snapshot --storage /run/s.diff --size 16M $plain $zdev -- true 2>&1) && fail "snapshot of a zoned device succeeded: $out"
echo "$out" | grep -q "zoned" || fail "the refusal does not say why: $out"
no_snapshots

# The plain device still works, so nothing was left attached.
id=$(bsok create "$(devnum $plain)")
bsok destroy "$id" > /dev/null
exit 0
