# A zoned device is refused when a snapshot of it is created, in one line
# from blksnap-storage and with EOPNOTSUPP from the kernel: its zone resets
# are writes of no size that would pass uncopied and unmarked (f2fs and
# btrfs garbage collection resets zones), and an image of it could not
# honour the zone write pointers anyway.
# Failed on d1a337d: the create of a zoned null_blk device succeeded, and
# so did the take of a tracked device-mapper device made zoned since.
# timeout: 60
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

log "a tracked device-mapper device that a table reload made zoned"
store=$(make_loop 16)
dm_create zl "0 32768 linear $plain 0"
id=$(bsok create "$(devno /dev/mapper/zl)")
bsok destroy "$id" > /dev/null
# The tracker stays; the same device now maps the zoned one.
echo "0 32768 linear $zdev 0" | dm_swap zl
zoned=$(cat /sys/dev/block/$(devno /dev/mapper/zl)/queue/zoned)
[ -n "$zoned" ] && [ "$zoned" != none ] ||
	fail "the reloaded device is not zoned"
id=$(bsok create "$(devno /dev/mapper/zl)")
bsok append "$id" "$(devnum $store)" 0:8192 > /dev/null
expect_err EOPNOTSUPP bsctl take "$id"
bsok destroy "$id" > /dev/null
dmsetup remove zl --noudevsync
exit 0
