#!/bin/bash
# make check: host unit tests, host CLI tests, the bench report's test, the
# VM harness's test, then the VM tests on the patched kernel and on
# Debian's own kernel (standalone modules); each suite's own summary,
# then one closing line for the whole run.
# Extra arguments are passed to every make call (e.g. DEBUG=1).
set -uo pipefail

passed=0 failed=0 skipped=0 status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

suite() {
	local target=$1 rc p f
	shift
	echo "===== make $target"
	make --no-print-directory "$target" "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	# cmocka: "[  PASSED  ] N test(s)." / "[  FAILED  ] N test(s), listed below:"
	p=$(grep -aE '^\[  PASSED  \] [0-9]+ test' "$log" | awk '{s += $4} END {print s + 0}')
	f=$(grep -aE '^\[  FAILED  \] [0-9]+ test' "$log" | awk '{s += $4} END {print s + 0}')
	# our harnesses: "N passed, N failed"
	p=$((p + $(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | awk '{s += $1} END {print s + 0}')))
	f=$((f + $(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | awk '{s += $3} END {print s + 0}')))
	# skipped tests: cmocka's "[  SKIPPED ] N test(s)", our ", N skipped"
	s=$(grep -aE '^\[  SKIPPED \] [0-9]+ test' "$log" | awk '{s += $4} END {print s + 0}')
	s=$((s + $(grep -aE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | awk '{s += $5} END {print s + 0}')))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# The suite did not get to run its tests: count that as a failure.
		echo "make $target failed before reporting its tests"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	[ "$rc" -eq 0 ] || status=1
}

suite unit "$@"
suite cli-test "$@"
suite bench-report-test "$@"
# The harness's own promises first (a stuck guest or a full host disk
# costs a FAIL line within minutes, not the rest of the CI run).
suite harness-test "$@"
# The VM tests in two guests at once: on 2 cores the patched kernel's
# suite takes 19 minutes so, against 22 one guest after the other.
suite vmtest VM_JOBS="${VM_JOBS:-2}" "$@"
# The same VM tests on Debian's own kernel with the standalone modules
# (the route 'apt install' takes); not with DEBUG=1, whose point is the
# project's debug kernel.
case " $* ${DEBUG:+DEBUG=$DEBUG} " in
*" DEBUG=1 "*) ;;
*) suite vmtest-stock VM_JOBS="${VM_JOBS:-2}" "$@" ;;
esac

echo "===== make check"
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
