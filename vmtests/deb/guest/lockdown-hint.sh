#!/bin/sh
# Guest scenario: booted with lockdown=integrity (what Secure Boot turns
# on), the kernel refuses the DKMS-signed modules, whose key is not
# enrolled, and both "modprobe blksnap" and blksnap-storage say in one
# line how to enrol DKMS's key.
t=lockdown-hint
fail() { echo "FAIL $t: $*"; exit 1; }
want="mokutil --import /var/lib/dkms/mok.pub"

cat /sys/kernel/security/lockdown
grep -q '\[integrity\]' /sys/kernel/security/lockdown || fail "the kernel is not in lockdown=integrity"
for m in bdev_filter blksnap; do
	echo "$m: $(modinfo -F signer $m)"
done
echo "# modprobe blksnap"
out=$(modprobe blksnap 2>&1); rc=$?
echo "$out"
[ "$rc" -ne 0 ] || fail "modprobe blksnap succeeded in lockdown (the DKMS key is not enrolled)"
lsmod | grep -E '^(blksnap|bdev_filter) ' && fail "a module was loaded in lockdown"
echo "$out" | grep -q "$want" || fail "modprobe did not say '$want'"
[ "$(echo "$out" | grep -c "$want")" -eq 1 ] || fail "the enrol line came more than once"
echo "# blksnap-storage list"
out=$(blksnap-storage list 2>&1); rc=$?
echo "$out"
[ "$rc" -eq 1 ] || fail "blksnap-storage list exited $rc, not 1"
echo "$out" | grep -q "$want" || fail "blksnap-storage did not say '$want'"
echo "PASS $t"
