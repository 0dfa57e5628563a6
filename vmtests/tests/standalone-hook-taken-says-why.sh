# On a stock kernel (make vmtest-stock) only one ftrace IPMODIFY user may
# hook a function. With another one already on submit_bio_noacct_nocheck()
# (vmtests/stock/ipmodify_holder.ko, standing in for a livepatch of it),
# 'create' fails in one line that says the kernel cannot intercept the
# device's writes and where the reason is, the kernel log names the other
# IPMODIFY user, nothing stays attached, and once the other user is gone
# the same create works. Failed on 8534ec4: blksnap-storage said only
# "/dev/vdb: Operation not supported".
# timeout: 120
# kernels: both (the standalone hook (skips on the patched kernel))
. /tests/common.sh

[ -n "$BDEV_FILTER_KO" ] || skip "the kernel has the bdev_filter patch: no hook module to test"
holder=/lib/modules/test/ipmodify_holder.ko
[ -f $holder ] || fail "test bug: no $holder in the initramfs"

run insmod $holder
load_module
dmesg -c > /dev/null
if blksnap-storage create /dev/vdb > /tmp/create.out 2> /tmp/create.err; then
	rmmod ipmodify_holder
	fail "create succeeded with submit_bio_noacct_nocheck already hooked"
fi
log "blksnap-storage said: $(cat /tmp/create.err)"
[ "$(wc -l < /tmp/create.err)" = 1 ] || fail "not one line: $(tr '\n' '|' < /tmp/create.err)"
grep -q "^blksnap-storage: create: /dev/vdb: the kernel cannot intercept the device's writes: bdev_filter could not install its hook (see 'dmesg | grep bdev_filter' for why)$" /tmp/create.err ||
	fail "unclear message: $(cat /tmp/create.err)"
msg=$(dmesg | grep 'bdev_filter: cannot hook' | head -n 1)
echo "$msg" | grep -q 'another ftrace IPMODIFY user' || fail "the kernel log does not name the other hook: '$msg'"
[ "$(bsok collect)" = 0 ] || fail "a snapshot was left behind: $(bsok collect)"
bsctl cbtinfo | grep -q "^$(devnum /dev/vdb) " && fail "vdb is still tracked: $(bsctl cbtinfo)"
run rmmod ipmodify_holder

# The function is free again: the same create works.
id=$(blksnap-storage create /dev/vdb) || fail "create failed after the other hook went away"
run blksnap-storage destroy "$id" > /dev/null
unload_module
run rmmod bdev_filter
exit 0
