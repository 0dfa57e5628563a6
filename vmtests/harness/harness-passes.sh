# Harness self-test (scripts/harness-test.sh runs it): passes at once.
# Its long declared timeout makes the host's budget for a whole guest
# run long; a stuck test before it must still be reported within its
# own timeout and a grace, not after the run's budget.
# timeout: 900
. /tests/common.sh

[ -b /dev/vda ] || fail "no /dev/vda in the guest"
