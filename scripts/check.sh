#!/bin/bash
# make check: host unit tests, host CLI tests, the bench report's test, the
# VM harness's test, then the VM tests: those of the filter hook and of
# module load/unload on the patched kernel, every one on Debian's own
# kernel (standalone modules); each suite's own summary, each part's time
# against the CI budget, then one closing line for the whole run.
# Extra arguments are passed to every make call (e.g. DEBUG=1).
set -uo pipefail

passed=0 failed=0 skipped=0 status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The time budget of a CI run (bash .ci/run: packages, make series-check,
# then this), in minutes. CI's hard limit is 90; the budget leaves room
# for the tests every open issue adds, and for a slower day. A run over it
# fails one counted test, time-budget: the next test must then make room
# (docs/tests.md says how) rather than push the suite towards the limit.
budget_min=50
# .ci/run exports CI_STARTED (seconds since the epoch) so that what came
# before make check counts too; make check on its own counts itself.
check_started=$(date +%s)
run_started=${CI_STARTED:-$check_started}
case "$run_started" in '' | *[!0-9]*) run_started=$check_started ;; esac
times=()
[ "$run_started" -lt "$check_started" ] &&
	times+=("before make check (packages, series check)	$((check_started - run_started))")

suite() {
	local target=$1 rc p f started=$SECONDS
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
	times+=("make $target	$((SECONDS - started))")
}

# time_budget: each part's time, the total against the budget, and the
# verdict as one counted test. DEBUG=1 runs a kernel several times slower
# that CI does not run: the budget is not for it.
time_budget() {
	local total=$(($(date +%s) - run_started)) line took
	echo "===== time"
	for line in "${times[@]}"; do
		printf '  %-45s %5d s\n' "${line%%	*}" "${line##*	}"
	done
	printf '  %-45s %5d s (%d min %02d s; budget %d min)\n' total "$total" $((total / 60)) $((total % 60)) "$budget_min"
	case " $* ${DEBUG:+DEBUG=$DEBUG} " in
	*" DEBUG=1 "*)
		echo "SKIP time-budget: the budget is for CI's run, not for the debug kernel's"
		skipped=$((skipped + 1)) ;;
	*)
		took=$(printf '%d min %02d s' $((total / 60)) $((total % 60)))
		if [ "$total" -le $((budget_min * 60)) ]; then
			echo "PASS time-budget: $took of $budget_min minutes"
			passed=$((passed + 1))
		else
			echo "FAIL time-budget: $took, over the budget of $budget_min minutes (CI's limit is 90): the part that grew is above; make room as docs/tests.md says"
			failed=$((failed + 1))
			status=1
		fi ;;
	esac
}

suite unit "$@"
suite cli-test "$@"
suite bench-report-test "$@"
# The harness's own promises first (a stuck guest or a full host disk
# costs a FAIL line within minutes, not the rest of the CI run).
suite harness-test "$@"
# The VM tests in two guests at once, each with its share of the tests
# (run.sh; docs/tests.md has the times).
# On the patched kernel, the tests marked "# kernels: both" (the filter
# hook, module load and unload, the standalone hook, a storage file held
# as a swap file is); every test runs on Debian's kernel below. With DEBUG=1, every test on the debug kernel.
case " $* ${DEBUG:+DEBUG=$DEBUG} " in
*" DEBUG=1 "*) suite vmtest VM_JOBS="${VM_JOBS:-2}" "$@" ;;
*) suite vmtest VM_JOBS="${VM_JOBS:-2}" VM_SELECT=both "$@" ;;
esac
# The same VM tests on Debian's own kernel with the standalone modules
# (the route 'apt install' takes); not with DEBUG=1, whose point is the
# project's debug kernel.
case " $* ${DEBUG:+DEBUG=$DEBUG} " in
*" DEBUG=1 "*) ;;
*) suite vmtest-stock VM_JOBS="${VM_JOBS:-2}" "$@" ;;
esac

time_budget "$@"
echo "===== make check"
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
