# Harness self-test (scripts/harness-test.sh runs it; expected to FAIL):
# the host's file system under the guest's disks is full (the harness
# test puts them on a small tmpfs). QEMU must pass the write errors to
# the guest, which goes on, instead of pausing the guest until the
# host's budget for the run is spent; the host says that its file
# system was full.
# timeout: 900
. /tests/common.sh

dd if=/dev/zero of=/dev/vda bs=1M count=512 oflag=direct 2>&1 ||
	fail "writes to /dev/vda failed, as the full host file system makes them"
fail "512 MiB written to /dev/vda: the host's file system was not full"
