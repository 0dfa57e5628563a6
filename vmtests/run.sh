#!/bin/bash
# Host side of the VM harness: boot the test kernel in QEMU, run the test
# scripts inside, and print one line per test and a closing
# "N passed, N failed" line. Exit status 1 if any test failed.
#
# usage: run.sh BZIMAGE INITRAMFS OUTDIR [TEST...]
# TEST names a script in tests/ or, for the harness's own tests
# (scripts/harness-test.sh), in harness/.
# A test with a "# reboot: NAME" line is followed by a hard power-off and
# a second boot on the same disks that runs NAME.sh (see guest/init).
# env:   VM_ACCEL=kvm to use KVM (TCG by default: KVM guests hang here),
#        VM_MEM (MiB, default 2048), VM_CPUS (default 2),
#        VM_JOBS (guests at once, default 1),
#        VM_STALL_GRACE (seconds, default 120, times VM_TIMEOUT_SCALE): how
#        long past a test's timeout, or after its script ended (its
#        cleanup), the host waits for its result before it ends a guest
#        that stopped answering,
#        VM_KEEP_DISKS=1 to keep the last guest's disks in OUTDIR/disks.
# While guests run, a "  START name" line tells which test each one is
# on; the PASS/FAIL lines follow when a guest has ended.
set -uo pipefail

bzimage=$1 initramfs=$2 outdir=$3
shift 3
# Progress lines go to fd 3: a guest of a parallel run inherits the
# parent's standard output there, its other lines go to its log.
[ -n "${VM_GUEST_OF:-}" ] || exec 3>&1
here=$(cd "$(dirname "$0")" && pwd)
tests=("$@")
# VM_SELECT=both (make check on the patched kernel): without named tests,
# only those whose script has a "# kernels: both" line. make check runs
# every test on Debian's kernel, the route users install; the driver is
# the same source on both, and what the patched kernel brings of its own
# is its filter hook, so it runs the tests of the hook, of module load and
# unload and of the standalone hook (docs/tests.md).
vm_select=${VM_SELECT:-all}
case "$vm_select" in all | both) ;; *) echo "run.sh: VM_SELECT must be 'all' or 'both', not '$vm_select'" >&2; exit 2 ;; esac
if [ ${#tests[@]} -eq 0 ]; then
	for f in "$here"/tests/*.sh; do
		n=$(basename "$f" .sh)
		[ "$n" = common ] && continue
		[ "$vm_select" = both ] && ! grep -Eq '^# kernels: both( |$)' "$f" && continue
		tests+=("$n")
	done
	if [ ${#tests[@]} -eq 0 ]; then
		echo "run.sh: no test in $here/tests is selected (VM_SELECT=$vm_select)" >&2
		exit 2
	fi
fi

# A test with a "# reboot: NAME" line ends with the guest losing power;
# the next boot keeps the disks and runs NAME first (a follow-up is never
# run on its own).
test_file() {
	if [ -f "$here/tests/$1.sh" ] || [ ! -f "$here/harness/$1.sh" ]; then
		echo "$here/tests/$1.sh"
	else
		echo "$here/harness/$1.sh"
	fi
}
reboot_of() {
	sed -n 's/^# reboot: *\([^ ]*\).*/\1/p' "$(test_file "$1")" | head -n 1
}
declare -A is_followup
for f in "$here"/tests/*.sh; do
	n=$(basename "$f" .sh)
	[ "$n" = common ] || n=$(reboot_of "$n")
	[ -n "$n" ] && [ "$n" != common ] && is_followup[$n]=1
done
kept=()
for t in "${tests[@]}"; do
	[ -n "${is_followup[$t]:-}" ] || kept+=("$t")
done
tests=("${kept[@]}")

# MiB free on the host file system that holds the guests' disks (root
# may use the blocks kept for it too). Empty if OUTDIR's does not exist.
host_free_mib() {
	local d=$outdir
	while [ ! -d "$d" ]; do d=$(dirname "$d"); done
	stat -f -c '%f %S' "$d" 2>/dev/null | awk '{ printf "%d\n", $1 * $2 / 1048576 }'
}

# warn_space GUESTS: each guest's disks grow to about 4 GiB over the
# whole suite (vmtest and vmtest-stock measured 3.7 GiB at most).
warn_space() {
	local free want=$((4096 * $1))
	free=$(host_free_mib)
	if [ -n "$free" ] && [ "$free" -lt "$want" ]; then
		echo "run.sh: warning: $outdir has $free MiB free, and the guests' sparse disks grow to about $want MiB: tests may fail with I/O errors; free space, or set VM_OUT (STOCK_VM_OUT for vmtest-stock) to a larger file system"
	fi
}

# time_summary SECONDS_FILE...: one line of what the tests cost in the
# guests (each test's "secs name" line, its cleanup included), with the
# slowest five: the figures a test's place in make check's time budget
# is judged by (docs/tests.md).
time_summary() {
	cat "$@" 2>/dev/null | sort -k1,1nr | awk -v wall=$((SECONDS - run_started)) '
		{ n++; sum += $1; if (n <= 5) slow = slow (n > 1 ? ", " : "") $2 " " $1 " s" }
		END { if (n) printf "time: %d tests, %d s in the guests, %d s from start to end; slowest: %s\n", n, sum, wall, slow }'
}
run_started=$SECONDS

# What a test costs, in seconds: as measured on Debian's kernel under TCG
# (vmtests/test-seconds, from a suite's "secs name" lines, the follow-up
# of a "# reboot:" test included), or a third of its declared timeout for
# a test not measured yet.
declare -A measured
while read -r secs name; do
	measured[$name]=$secs
done < <(grep -E '^[0-9]+ [a-z0-9-]+$' "$here/test-seconds" 2>/dev/null)
test_cost() {
	local t_secs f cost
	if [ -n "${measured[$1]:-}" ]; then
		cost=${measured[$1]}
	else
		t_secs=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$(test_file "$1")" | head -n 1)
		cost=$((${t_secs:-300} / 3))
	fi
	f=$(reboot_of "$1")
	[ -n "$f" ] && cost=$((cost + $(test_cost "$f")))
	echo "$cost"
}

# VM_JOBS=N (N > 1): N guests at once, each in its own directory with its
# own disks, on a share of the tests (the costliest first, each to the
# least loaded guest: measured costs balance the guests to within about
# a test). A guest running the debug kernel keeps about one host core
# busy, so on two cores two guests take half the time.
jobs=${VM_JOBS:-1}
case "$jobs" in '' | *[!0-9]* | 0) echo "run.sh: VM_JOBS must be a positive integer" >&2; exit 2 ;; esac
if [ "$jobs" -gt 1 ] && [ ${#tests[@]} -gt 1 ]; then
	[ "$jobs" -le ${#tests[@]} ] || jobs=${#tests[@]}
	declare -a load share
	for ((j = 0; j < jobs; j++)); do load[j]=0 share[j]=; done
	while read -r secs t; do
		best=0
		for ((j = 1; j < jobs; j++)); do
			[ "${load[j]}" -lt "${load[best]}" ] && best=$j
		done
		load[best]=$((load[best] + secs))
		share[best]="${share[best]} $t"
	done < <(for t in "${tests[@]}"; do
			echo "$(test_cost "$t") $t"
		done | sort -k1,1nr -k2,2)
	mkdir -p "$outdir"
	warn_space "$jobs"
	pids=()
	for ((j = 0; j < jobs; j++)); do
		echo "guest $((j + 1)) of $jobs:${share[j]}"
		# shellcheck disable=SC2086 # the share is a list of test names
		VM_JOBS=1 VM_GUEST_OF=$((j + 1)) "$0" "$bzimage" "$initramfs" "$outdir/job$((j + 1))" ${share[j]} \
			> "$outdir/job$((j + 1)).log" 2>&1 &
		pids+=($!)
	done
	# Interrupted: the guests' run.sh end their own QEMU (see below).
	trap 'kill -TERM "${pids[@]}" 2>/dev/null; exit 130' INT TERM HUP
	rc=0
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	passed=0 failed=0 skipped=0
	for ((j = 0; j < jobs; j++)); do
		log=$outdir/job$((j + 1)).log
		# Each guest's own lines, without its closing count: one count for all.
		grep -avE '^[0-9]+ passed, [0-9]+ failed|^time: ' "$log"
		read -r p f s < <(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 |
			awk '{print $1, $3, $5 + 0}')
		if [ -z "${p:-}" ]; then
			echo "FAIL guest $((j + 1)) of $jobs: run.sh ended without a count; see $log"
			p=0 f=1 s=0
		fi
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
		unset p f s
	done
	time_files=()
	for ((j = 1; j <= jobs; j++)); do time_files+=("$outdir/job$j/test-seconds"); done
	time_summary "${time_files[@]}"
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ] && [ "$rc" -eq 0 ]
	exit
fi

bad_pattern='BUG:|WARNING:|Oops|KASAN|UBSAN|possible circular|possible recursive|inconsistent lock|blocked for more than|kmemleak:.*new suspected|general protection|Kernel panic'
mkdir -p "$outdir"
rm -f "$outdir/test-seconds"
passed=0 failed=0 skipped=0
declare -A verdict

# VM_TIMEOUT_SCALE: the debug kernel (KASAN, lockdep) runs tests slower.
tscale=${VM_TIMEOUT_SCALE:-1}
case "$tscale" in '' | *[!0-9]* | 0) echo "run.sh: VM_TIMEOUT_SCALE must be a positive integer" >&2; exit 2 ;; esac

test_timeout() {
	local t
	t=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$(test_file "$1")" | head -n 1)
	echo $((${t:-300} * tscale))
}

make_disks() {
	local d=$outdir/disks
	rm -rf "$d" && mkdir -p "$d"
	truncate -s 1G "$d/vdb.img"
	truncate -s 1G "$d/vdc.img"
	truncate -s 2G "$d/vdd.img"
	truncate -s 64G "$d/vde.img"
	truncate -s 256M "$d/4kn.img"
	truncate -s 256M "$d/slow.img"
}

# disk NAME [PROPERTIES]: QEMU options for $outdir/disks/NAME.img as a
# virtio disk. The guest names the disks in this order: vda..vdd are
# vdb.img..vde.img (1G, 1G, 2G, 64G), vde is 4kn.img (4 KiB sectors),
# vdf is slow.img (256M, reads throttled to 4 MiB/s: slow copies on a disk
# that still takes WRITE_ZEROES, which dm-delay does not).
# The 64 GiB disk takes discards for real (discard=unmap on the drive):
# what a discard reaches reads back as zeros.
# An I/O error on the host, a full host file system above all, reaches
# the guest as an I/O error (werror/rerror=report): QEMU's default pauses
# the guest on ENOSPC, and a paused guest answers nothing until the host
# gives up on it.
disk() {
	local drive="-drive file=$outdir/disks/$1.img,if=none,id=disk-$1,format=raw,cache=unsafe,werror=report,rerror=report"
	case "${2:-}" in
	discard=* | throttling.*) echo "$drive,$2"
		   echo "-device virtio-blk-pci,drive=disk-$1" ;;
	*) echo "$drive"
	   echo "-device virtio-blk-pci,drive=disk-$1${2:+,$2}" ;;
	esac
}

# vcpu_where MONITOR: where each vCPU of a guest that stopped answering
# is, asked of QEMU's monitor socket before the guest is killed: the
# registers of every vCPU and 64 words of its stack go to MONITOR.cpus,
# and one line names the function of each vCPU's RIP and the kernel text
# addresses on its stack (System.map next to the kernel, which is not
# relocatable), outermost last: a guest frozen with no kernel report
# (both vCPUs spinning with interrupts off) leaves at least this.
vcpu_where() {
	local mon=$1 map
	map=$(dirname "$bzimage")/../../../System.map
	[ -S "$mon" ] || return 0
	timeout 20 python3 - "$mon" "$map" > "$mon.cpus" 2> /dev/null <<'PY' || return 0
import bisect, re, socket, sys, time
mon, mapfile = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(mon)
def ask(cmd, wait=1.0):
    if cmd:
        s.sendall(cmd.encode() + b"\n")
    out, end = b"", time.time() + wait
    while time.time() < end:
        try:
            d = s.recv(1 << 16)
        except socket.timeout:
            break
        if not d:
            break
        out += d
    return out.decode("latin-1")
ask("", 0.5)
regs = ask("info registers -a", 2.0)
rsps = re.findall(r"RSP=([0-9a-f]{16})", regs)
stacks = [ask("cpu %d" % i, 0.3) + ask("x/64gx 0x%s" % rsp, 1.0)
          for i, rsp in enumerate(rsps)]
print(regs)
for i, st in enumerate(stacks):
    print("CPU#%d stack:" % i)
    print(st)
syms = []
try:
    for l in open(mapfile):
        a, t, n = l.split()[:3]
        if t in "tTwW":
            syms.append((int(a, 16), n))
except OSError:
    pass
syms.sort()
addrs = [a for a, _ in syms]
def name(v):
    i = bisect.bisect_right(addrs, v) - 1
    if i < 0 or v - addrs[i] > 0x10000:
        return None
    return "%s+0x%x" % (syms[i][1], v - addrs[i])
rips = [int(x, 16) for x in re.findall(r"RIP=([0-9a-f]{16})", regs)]
parts = []
for i, rip in enumerate(rips):
    words = [int(w, 16) for w in re.findall(r"0x([0-9a-f]{16})", stacks[i] if i < len(stacks) else "")]
    calls = [n for n in (name(w) for w in words) if n]
    seen = []
    for n in calls:
        if n.split("+")[0] not in [x.split("+")[0] for x in seen]:
            seen.append(n)
    parts.append("vCPU%d at %s%s" % (i, name(rip) or hex(rip),
                 (" [stack: " + " ".join(seen[:8]) + "]") if seen else ""))
print("WHERE " + "; ".join(parts))
PY
	grep -a '^WHERE ' "$mon.cpus" | cut -c7-
}

# watch_guest PID RESULTS BUDGET: end the guest (QEMU's PID) when a test
# ran past its timeout and a grace without a result: a test stuck where
# SIGKILL does not reach (uninterruptible sleep) stops the guest's init,
# and the budget of a whole run is hours. Also bounds the cleanup after
# a test (from its ENDED line), the boot, the gaps between tests and the
# whole run (BUDGET). Writes
# what it gave up on to RESULTS.stall, and a progress line on fd 3 as
# each test starts.
watch_guest() {
	local pid=$1 res=$2 budget=$3 grace=$((${VM_STALL_GRACE:-120} * tscale))
	local last='' line lines since=$SECONDS start=$SECONDS limit t shown=0 n
	local buf where
	# QEMU is this shell's only job: its PID, once reaped, may be reused.
	while [ -n "$(jobs -pr)" ]; do
		# A line QEMU has not finished writing is not read yet.
		buf=$(cat "$res" 2>/dev/null; echo .)
		buf=${buf%.}
		buf=${buf%"${buf##*$'\n'}"}
		lines=$(grep -aE '^(BOOTED|START|ENDED|RESULT|REBOOT|DONE)( |$)' <<< "$buf")
		line=$(tail -n 1 <<< "$lines")
		if [ "$line" != "$last" ]; then
			last=$line since=$SECONDS
			n=$(grep -c '^START ' <<< "$lines")
			grep '^START ' <<< "$lines" | tail -n +$((shown + 1)) |
				sed "s/^START /  START  /; s/\$/${VM_GUEST_OF:+ (guest $VM_GUEST_OF)}/" >&3
			shown=$n
		fi
		case "$last" in
		"START "*)
			t=${last#START }
			limit=$(($(test_timeout "$t") + grace)) ;;
		"") limit=$((120 * tscale)) ;;
		*) limit=$grace ;;
		esac
		if [ $((SECONDS - since)) -gt "$limit" ] || [ $((SECONDS - start)) -gt "$budget" ]; then
			if [ $((SECONDS - start)) -gt "$budget" ]; then
				echo "ran past the run's budget of ${budget}s"
			else
				case "$last" in
				"START "*) echo "stopped answering: no result ${limit}s after the test started (its timeout is $(test_timeout "$t")s)" ;;
				"ENDED "*) t=${last#ENDED }
					echo "stopped answering in the cleanup after the test: nothing for ${limit}s after its script ended (${t#* })" ;;
				"") echo "not booted after ${limit}s" ;;
				*) echo "stopped answering: nothing for ${limit}s after '$last'" ;;
				esac
			fi > "$res.stall"
			where=$(vcpu_where "${res%.results}.mon")
			[ -n "$where" ] && printf '%s; vCPUs: %s (%s)\n' \
				"$(head -n 1 "$res.stall")" "$where" \
				"${res%.results}.mon.cpus" > "$res.stall"
			kill -KILL "$pid" 2>/dev/null
			break
		fi
		sleep 2
	done
	# The tests that started after the last look, the guest gone.
	grep -a '^START ' "$res" 2>/dev/null | tail -n +$((shown + 1)) |
		sed "s/^START /  START  /; s/\$/${VM_GUEST_OF:+ (guest $VM_GUEST_OF)}/" >&3
}

# boot NAME TESTS...: one guest run; the results land in $outdir/NAME.*
boot() {
	local name=$1 budget=60 t accel append mon
	shift
	# The kernel command line holds 2047 bytes on x86; a longer one is
	# cut (the patched kernel) or keeps Debian's kernel from booting at
	# all. Tests that do not fit run in the next boot, like those after
	# a dead guest.
	append="console=ttyS0 panic=-1 oops=panic loglevel=6 ${VM_APPEND:-} bsvm.tscale=$tscale bsvm.tests="
	while [ $# -gt 1 ] && [ $(( ${#append} + $(IFS=,; echo "$*" | wc -c) )) -gt 2000 ]; do
		set -- "${@:1:$(($# - 1))}"
	done
	append="$append$(IFS=,; echo "$*")"
	for t in "$@"; do budget=$((budget + $(test_timeout "$t") + 30)); done
	[ "$keep_disks" = 1 ] || make_disks
	# The results and the console are appended to blocks taken now: a
	# host file system that fills up during the run must not block the
	# guest's reports, nor lose its kernel's messages about it.
	: > "$outdir/$name.results"
	: > "$outdir/$name.console"
	fallocate -n -l 1M "$outdir/$name.results" 2>/dev/null
	fallocate -n -l 8M "$outdir/$name.console" 2>/dev/null
	rm -f "$outdir/$name.results.stall"
	accel=${VM_ACCEL:-tcg}
	# A monitor socket, for vcpu_where() (a socket path has 107 bytes).
	mon=none
	rm -f "$outdir/$name.mon" "$outdir/$name.mon.cpus"
	[ ${#outdir} -lt 90 ] && mon="unix:$outdir/$name.mon,server=on,wait=off"
	qemu-system-x86_64 \
		-accel "$accel" -m "${VM_MEM:-2048}" -smp "${VM_CPUS:-2}" \
		-display none -monitor "$mon" -no-reboot \
		-kernel "$bzimage" -initrd "$initramfs" \
		-append "$append" \
		-chardev "file,id=console,path=$outdir/$name.console,append=on" \
		-serial chardev:console \
		-device virtio-serial-pci \
		-chardev "file,id=results,path=$outdir/$name.results,append=on" \
		-device virtserialport,chardev=results,name=results \
		$(disk vdb) $(disk vdc) $(disk vdd) $(disk vde discard=unmap) \
		$(disk 4kn logical_block_size=4096,physical_block_size=4096) \
		$(disk slow throttling.bps-read=4194304) \
		> "$outdir/$name.qemu" 2>&1 3>&- &
	qpid=$!
	# (bash's own "Killed" notice for the job is not news.)
	watch_guest "$qpid" "$outdir/$name.results" "$budget" 2>/dev/null
	{ wait "$qpid"; } 2>/dev/null
	local rc=$?
	qpid=
	return $rc
}

# Kernel complaints printed on the console while TEST ran.
console_bad() {
	awk -v t="$2" '
		{ sub(/\r$/, "") }
		$0 ~ "@@@ START " t "$" { on = 1; next }
		$0 ~ "@@@ END " t "$" { on = 0 }
		on' "$1" | grep -aE "$bad_pattern" | head -n 1 | sed 's/^\[[ 0-9.]*\] //'
}

# A failed test in a run that left the host file system full says so,
# and whether its console window shows I/O errors on a virtio disk.
record() {
	local t=$1 v=$2
	if [ "${v%% *}" = FAIL ] && [ -n "${host_full:-}" ]; then
		if awk -v t="$t" '{ sub(/\r$/, "") }
			$0 ~ "@@@ START " t "$" { on = 1; next }
			$0 ~ "@@@ END " t "$" { on = 0 }
			on && /I\/O error, dev vd/ { found = 1 } END { exit !found }' "$con"; then
			v="$v; $host_full, and the guest saw I/O errors on its disks"
		else
			v="$v; $host_full: the guest's disk writes may have failed there"
		fi
		v="$v (free space, or set VM_OUT, STOCK_VM_OUT for vmtest-stock, to a larger file system)"
	fi
	verdict[$t]=$v
	if [ "$v" = PASS ]; then
		echo "PASS $t"
		passed=$((passed + 1))
	elif [ "${v%% *}" = SKIP ]; then
		echo "SKIP $t: ${v#SKIP }"
		skipped=$((skipped + 1))
	else
		echo "FAIL $t: ${v#FAIL }"
		failed=$((failed + 1))
	fi
}

# QEMU outlives nothing: not an interrupt, nor an error that ends this
# script (a left-over guest would hold the output pipe of make check).
qpid=
trap '[ -n "$qpid" ] && kill -KILL "$qpid" 2>/dev/null' EXIT
trap 'exit 130' INT TERM HUP

# A guest of a parallel run: its parent warned for all of them.
[ -n "${VM_GUEST_OF:-}" ] || [ ${#tests[@]} -le 1 ] || warn_space 1

remaining=("${tests[@]}")
run_no=0
keep_disks=0
while [ ${#remaining[@]} -gt 0 ]; do
	run_no=$((run_no + 1))
	name=run$run_no
	boot "$name" "${remaining[@]}"
	qrc=$?
	keep_disks=0
	res=$outdir/$name.results
	con=$outdir/$name.console
	# The disks only grow during a run (files deleted in the guest stay
	# written on the host): what is free now is the least it had.
	host_full=
	free=$(host_free_mib)
	if [ -n "$free" ] && [ "$free" -lt 64 ]; then
		host_full="the host file system under $outdir had $free MiB left after this guest"
	fi
	current=
	next=()
	for t in "${remaining[@]}"; do
		line=$(grep -a "^RESULT $t " "$res" | tail -n 1)
		if [ -n "$line" ]; then
			v=${line#RESULT $t }
			bad=$(console_bad "$con" "$t")
			if { [ "$v" = PASS ] || [ "${v%% *}" = SKIP ]; } && [ -n "$bad" ]; then
				v="FAIL kernel reported: $bad"
			fi
			grep -a "^LOG $t " "$res" | sed "s/^LOG $t /    | /"
			record "$t" "$v"
			grep -a "^TIME $t " "$res" | tail -n 1 | awk '{ print $3, $2 }' >> "$outdir/test-seconds"
		elif [ -z "$current" ] && grep -aq "^START $t\$" "$res"; then
			current=$t
		elif [ -z "$current" ] && ! grep -aq "^BOOTED" "$res"; then
			current=$t
		else
			next+=("$t")
		fi
	done
	if [ -n "$current" ]; then
		# The guest stopped while this test ran (or its cleanup): it
		# died or hung.
		grep -a "^LOG $current " "$res" | sed "s/^LOG $current /    | /"
		why=$(grep -aE 'Kernel panic|BUG:|Oops|general protection' "$con" | head -n 1 | sed 's/^\[[ 0-9.]*\] //')
		if ! grep -aq "^BOOTED" "$res"; then
			stall=$(cat "$res.stall" 2>/dev/null)
			why="guest did not boot (${stall:-qemu exit $qrc})${why:+: $why}; see $con"
		elif [ -s "$res.stall" ]; then
			why="guest $(cat "$res.stall")${why:+; console: $why}; see $con"
		elif [ $qrc -eq 137 ]; then
			why="guest stopped answering (killed)${why:+; console: $why}; see $con"
		else
			why="guest died${why:+: $why}; see $con"
		fi
		record "$current" "FAIL $why"
	elif [ -s "$res.stall" ]; then
		# Between tests: after a result (its END, the power-off, the
		# final sync). The test's own verdict stands; this is one more.
		t=$(grep -a '^RESULT ' "$res" | tail -n 1 | cut -d' ' -f2)
		if [ -n "$t" ]; then
			echo "FAIL guest-after-$t: the guest, after that test's result (its power-off, or the final sync), $(cat "$res.stall"); see $con"
		else
			echo "FAIL guest-after-boot: the guest, booted but before its first test, $(cat "$res.stall"); see $con"
		fi
		failed=$((failed + 1))
		# Stopped before its first test: booting again would only repeat it.
		if [ -z "$t" ]; then
			for t in "${next[@]}"; do record "$t" "FAIL not run: the guest stopped before its first test"; done
			next=()
		fi
	fi
	# After a test that powers the guest off, its follow-up comes first
	# on the same disks, if the test got through.
	for t in "${remaining[@]}"; do
		f=$(reboot_of "$t")
		[ -n "$f" ] || continue
		if grep -aq "^REBOOT $t\$" "$res" && [ "${verdict[$t]:-}" = PASS ]; then
			next=("$f" "${next[@]}")
			keep_disks=1
		elif [ -n "${verdict[$t]:-}" ]; then
			record "$f" "FAIL not run: $t did not pass"
		fi
	done
	remaining=("${next[@]}")
done

# The disks are scratch: left behind, they would hold gigabytes of the
# host's space through the suites that run after this one.
[ "${VM_KEEP_DISKS:-0}" = 1 ] || rm -rf "$outdir/disks"
time_summary "$outdir/test-seconds"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
