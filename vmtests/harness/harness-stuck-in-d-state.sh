# Harness self-test (scripts/harness-test.sh runs it; expected to FAIL):
# the test blocks where SIGKILL cannot reach it, in a direct read from a
# suspended dm device, so the guest's own timeout cannot end it and the
# guest's init stops. The host must end the guest soon after this
# test's timeout, report this test and run the rest in a new guest.
# timeout: 10
. /tests/common.sh

dmsetup create --noudevsync harness-stuck --table "0 8 linear /dev/vda 0" ||
	fail "dmsetup create harness-stuck failed"
dmsetup mknodes
dmsetup suspend --noudevsync harness-stuck ||
	fail "dmsetup suspend harness-stuck failed"
exec dd if=/dev/mapper/harness-stuck of=/dev/null bs=4096 count=1 iflag=direct
