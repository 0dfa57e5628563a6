#!/bin/bash
# Host tests of blksnap-storage: parsing, --help, `ranges` against filefrag,
# and every module-dependent command failing cleanly without /dev/blksnap.
# Usage: host-cli.sh [path/to/blksnap-storage]
# Prints "PASS name" / "FAIL name: why" and "N passed, N failed".
set -u

BIN=${1:-$(dirname "$0")/../../build/blksnap-storage}
BIN=$(realpath "$BIN")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/blksnap-cli-test.XXXXXX")
export BLKSNAP_STATE_DIR=$WORK/state
trap 'rm -rf "$WORK"' EXIT
passed=0 failed=0 skipped=0

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# skip REASON NAME...: tests that cannot run here, counted and named.
skip() {
	local why=$1 name
	shift
	for name in "$@"; do
		echo "SKIP $name: $why"
		skipped=$((skipped + 1))
	done
}

# run ARGS...: sets $rc, $out, $err
run() {
	"$BIN" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	out=$(cat "$WORK/out")
	err=$(cat "$WORK/err")
}

# expect NAME RC [STDERR-REGEX] -- checks the last run()
expect() {
	local name=$1 want=$2 regex=${3:-}
	if [[ $rc -ne $want ]]; then
		fail "$name" "exit $rc, expected $want (stderr: $err)"
	elif [[ -n $regex ]] && ! grep -Eq -- "$regex" <<<"$err"; then
		fail "$name" "stderr '$err' does not match '$regex'"
	else
		pass "$name"
	fi
}

one_line_stderr() {
	[[ $(wc -l <"$WORK/err") -eq 1 ]]
}

# --- help and usage --------------------------------------------------------
run --help
if [[ $rc -eq 0 && $out == *Usage:* && $out == *"3  snapshot corrupted"* ]]; then
	pass "help: whole tool, with exit codes"
else
	fail "help: whole tool" "rc=$rc"
fi
run --version
[[ $rc -eq 0 && $out == "blksnap-storage "* ]] && pass "--version" || fail "--version" "rc=$rc out=$out"

for c in create add take watch images list destroy snapshot cbt ranges version; do
	run "$c" --help
	if [[ $rc -eq 0 && $out == *Usage:* && $out == *"blksnap-storage $c"* && -z $err ]]; then
		pass "help: $c"
	else
		fail "help: $c" "rc=$rc err=$err"
	fi
done
run help watch
[[ $rc -eq 0 && $out == *"--limit SIZE"* ]] && pass "help COMMAND" || fail "help COMMAND" "rc=$rc"

run;                 expect "usage: no command" 2
run frobnicate;      expect "usage: unknown command" 2 "unknown command 'frobnicate'"
run add --bogus f 1G; expect "usage: unknown option" 2 "^blksnap-storage: add: unrecognized option '--bogus'"
run add f;           expect "usage: add without SIZE" 2 "FILE and SIZE expected"
run add f 12Q;       expect "usage: add bad size" 2 "invalid size '12Q'"
run add --snapshot nope f 1G; expect "usage: add bad snapshot id" 2 "invalid snapshot id 'nope'"
run take 1234;       expect "usage: take bad id" 2 "invalid snapshot id"
run watch --step x f; expect "usage: watch bad step" 2 "--step: invalid size"
run cbt;             expect "usage: cbt without subcommand" 2 "subcommand expected"
# Issue 13 item 8; on 2cf2299 these said "invalid option -- '\x02'",
# "invalid option -- 'h'" and "unrecognized option '--s'".
run watch --json=1 f; expect "usage: argument to a flag" 2 "^blksnap-storage: watch: option '--json' doesn't allow an argument$"
run add --help=x;    expect "usage: argument to --help" 2 "^blksnap-storage: add: option '--help' doesn't allow an argument$"
run watch --s x f;   expect "usage: ambiguous option" 2 "^blksnap-storage: watch: option '--s' is ambiguous; possibilities: '--snapshot' '--step'$"
# Review S5; on e4476eb these blamed the valid long option before the
# cluster: "unrecognized option '--json'" and "... '--snapshot'".
run list --json -zz; expect "usage: bad letter in a cluster after a long option" 2 "^blksnap-storage: list: invalid option -- 'z'$"
run add --snapshot=00000000-0000-0000-0000-000000000000 -zq f 1G; expect "usage: bad letter first in a cluster after --opt=arg" 2 "^blksnap-storage: add: invalid option -- 'z'$"
run cbt frob;        expect "usage: cbt unknown subcommand" 2 "unknown subcommand 'frob'"
run cbt mark-dirty /dev/null 5; expect "usage: cbt bad range" 2 "invalid range '5'"
run cbt mark-dirty /dev/null 5:0; expect "usage: cbt zero-length range" 2 "invalid range '5:0'"
run cbt read --json /; expect "usage: cbt read --json" 2 "--json applies"
run snapshot --storage f --size 1G /; expect "usage: snapshot without command" 2 "'-- COMMAND' expected"
run snapshot --storage f --size 1G -- true; expect "usage: snapshot without device" 2 "DEVICE expected"
run snapshot --size 1G / -- true; expect "usage: snapshot without storage" 2 "--storage FILE"

# --- device resolution (before the module is needed) ------------------------
mkdir -p "$WORK/notmnt"
run create "$WORK/notmnt"; expect "create: directory that is not a mount point" 1 "notmnt: not a mount point"
touch "$WORK/plain"
run create "$WORK/plain"; expect "create: regular file" 1 "plain: not a block device or mount point"
run create "$WORK/missing"; expect "create: missing path" 1 "missing: No such file or directory"
if mountpoint -q /dev/shm; then
	run create /dev/shm; expect "create: tmpfs mount point" 1 "/dev/shm: mounted filesystem is not on a block device"
else
	skip "/dev/shm is not a mount point" "create: tmpfs mount point"
fi

# --- without the module: clean failures, nothing left behind ----------------
if [[ -e /dev/blksnap ]]; then
	skip "/dev/blksnap exists (the module is loaded)" \
		"no module: create" "no module: take" "no module: destroy" \
		"no module: list" "no module: list --json" "no module: images" \
		"no module: version" "no module: version prints the tool's" \
		"no module: cbt info" "no module: cbt read" \
		"no module: cbt mark-dirty" "no module: add" \
		"no module: add leaves no file" "no module: add --snapshot" \
		"no module: add --snapshot leaves no file" \
		"no module: add on an existing empty file" \
		"no module: existing file untouched" "no module: watch" \
		"no module: watch leaves no file" "no module: snapshot" \
		"no module: snapshot leaves no file" "no module: no state dir created"
else
	NOMOD='/dev/blksnap: not found \(is the blksnap module loaded\?\)$'
	id=01234567-89ab-cdef-0123-456789abcdef
	check_nomod() {	# NAME CMD-NAME ARGS...
		local name=$1 cmd=$2
		shift 2
		run "$@"
		if [[ $rc -eq 1 ]] && one_line_stderr &&
		   grep -Eq "^blksnap-storage: $cmd: $NOMOD" "$WORK/err"; then
			pass "no module: $name"
		else
			fail "no module: $name" "rc=$rc stderr=$err"
		fi
	}
	check_nomod create create create /
	check_nomod take take take $id
	check_nomod destroy destroy destroy $id
	check_nomod list list list
	check_nomod "list --json" list list --json
	check_nomod images images images $id
	check_nomod version version version
	# Issue 13 item 11: on 2cf2299 stdout was empty.
	[[ $out == "blksnap-storage "[0-9]* ]] && pass "no module: version prints the tool's" ||
		fail "no module: version prints the tool's" "stdout '$out'"
	check_nomod "cbt info" "cbt info" cbt info
	check_nomod "cbt read" "cbt read" cbt read /
	check_nomod "cbt mark-dirty" "cbt mark-dirty" cbt mark-dirty / 0:8

	check_nomod add add add "$WORK/new.diff" 16M
	[[ ! -e $WORK/new.diff ]] && pass "no module: add leaves no file" ||
		fail "no module: add leaves no file" "$WORK/new.diff exists"
	check_nomod "add --snapshot" add add --snapshot $id "$WORK/new2.diff" 16M
	[[ ! -e $WORK/new2.diff ]] && pass "no module: add --snapshot leaves no file" ||
		fail "no module: add --snapshot leaves no file" "file exists"
	(umask 077 && : >"$WORK/empty.diff")	# mode 0600: a storage file may give others no access
	check_nomod "add on an existing empty file" add add "$WORK/empty.diff" 16M
	[[ -f $WORK/empty.diff && ! -s $WORK/empty.diff ]] &&
		pass "no module: existing file untouched" ||
		fail "no module: existing file untouched" "size changed or removed"
	check_nomod watch watch watch "$WORK/w.diff"
	[[ ! -e $WORK/w.diff ]] && pass "no module: watch leaves no file" ||
		fail "no module: watch leaves no file" "file exists"
	check_nomod snapshot snapshot snapshot --storage "$WORK/s.diff" --size 16M / -- true
	[[ ! -e $WORK/s.diff ]] && pass "no module: snapshot leaves no file" ||
		fail "no module: snapshot leaves no file" "file exists"
	[[ ! -e $BLKSNAP_STATE_DIR ]] && pass "no module: no state dir created" ||
		fail "no module: no state dir created" "$BLKSNAP_STATE_DIR exists"
fi

# --- ranges FILE against filefrag -v -b512 ----------------------------------
# filefrag's physical extents sorted by start, merged when touching, shrunk
# inward to 8 sectors (4 KiB), as "START COUNT" lines.
oracle() {
	filefrag -v -b512 "$1" | awk '
		/^ *[0-9]+:/ { gsub(/\.\./, " "); gsub(/:/, " "); print $4, $5 + 1 }' |
	sort -n | awk '
		{ if (n && $1 <= end) { if ($2 > end) end = $2; next }
		  if (n) print start, end; start = $1; end = $2; n++ }
		END { if (n) print start, end }' |
	while read -r s e; do
		s=$(( (s + 7) / 8 * 8 )); e=$(( e / 8 * 8 ))
		(( e > s )) && echo "$s $((e - s))"
	done
}

check_ranges() {	# NAME FILE
	local name=$1 file=$2 want got
	run ranges "$file"
	if [[ $rc -ne 0 ]]; then
		fail "ranges: $name" "exit $rc: $err"
		return
	fi
	got=$(awk '{ print $2, $3 }' "$WORK/out")
	want=$(oracle "$file")
	local dev
	dev=$(stat -c '%Hd:%Ld' "$file")
	if [[ -n $out ]] && grep -qv "^$dev " "$WORK/out"; then
		fail "ranges: $name" "device column is not $dev"
	elif [[ $got != "$want" ]]; then
		fail "ranges: $name" "got [$got] want [$want]"
	else
		pass "ranges: $name ($(wc -l <"$WORK/out") ranges)"
	fi
}

# Review S9: ranges must not open a device node or follow a symlink
# (opening /dev/watchdog arms it). Both failed on e4476eb: the symlink was
# followed ("not a regular file") and the FIFO was opened for reading,
# which woke the writer blocked in open().
ln -s /dev/null "$WORK/null-link"
run ranges "$WORK/null-link"
expect "ranges: symlink to a char device refused" 1 "^blksnap-storage: .*/null-link: is a symbolic link: give the path of the file itself$"
one_line_stderr || fail "ranges: symlink refusal is one line" "$err"
mkfifo "$WORK/wfifo"
( : >"$WORK/wfifo"; echo opened >"$WORK/wfifo.opened" ) &
writer=$!
sleep 0.3
run ranges "$WORK/wfifo"
sleep 0.3
if [[ -e $WORK/wfifo.opened ]]; then
	fail "ranges: FIFO not opened" "the writer blocked in open() was woken"
else
	expect "ranges: FIFO not opened" 1 "fifo: not a regular file$"
fi
kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null

fstype=$(stat -f -c %T "$WORK")
if [[ $fstype == ext2/ext3 || $fstype == xfs ]]; then
	fallocate -l 64M "$WORK/r.falloc"
	check_ranges "fallocated 64M" "$WORK/r.falloc"
	dd if=/dev/urandom of="$WORK/r.small" bs=1000 count=3 status=none
	check_ranges "3000-byte file (less than a block after shrinking?)" "$WORK/r.small"
	: >"$WORK/r.empty"
	check_ranges "empty file" "$WORK/r.empty"
	# Interleave two files' blocks to get many extents.
	for i in $(seq 0 63); do
		dd if=/dev/zero of="$WORK/r.frag" bs=4k count=1 seek=$i conv=notrunc,fsync status=none
		dd if=/dev/zero of="$WORK/r.other" bs=4k count=1 seek=$i conv=notrunc,fsync status=none
	done
	check_ranges "fragmented file" "$WORK/r.frag"
	run ranges "$WORK/notmnt"; expect "ranges: directory" 1 "not a regular file"
else
	skip "$WORK is on $fstype, not ext2/3/4 or xfs (set TMPDIR)" \
		"ranges: fallocated 64M" \
		"ranges: 3000-byte file (less than a block after shrinking?)" \
		"ranges: empty file" "ranges: fragmented file" "ranges: directory"
fi
if mountpoint -q /dev/shm && touch /dev/shm/blksnap-cli-test.$$ 2>/dev/null; then
	run ranges /dev/shm/blksnap-cli-test.$$
	rm -f /dev/shm/blksnap-cli-test.$$
	if [[ $rc -eq 1 ]] && one_line_stderr &&
	   grep -q "^blksnap-storage: ranges: /dev/shm/.*: tmpfs cannot hold difference storage (extents are not physical sectors)$" "$WORK/err"; then
		pass "ranges: tmpfs refused"
	else
		fail "ranges: tmpfs refused" "rc=$rc stderr=$err"
	fi
else
	skip "no writable tmpfs at /dev/shm" "ranges: tmpfs refused"
fi
run ranges "$WORK/missing"; expect "ranges: missing file" 1 "missing: No such file or directory"
# Issue 13 item 9: on 2cf2299 a newline in a path split the message in two.
run ranges "$WORK/a
b"
if [[ $rc -eq 1 ]] && one_line_stderr && grep -q 'a\\nb: No such file or directory$' "$WORK/err"; then
	pass "message: newline in a path stays one line"
else
	fail "message: newline in a path stays one line" "rc=$rc stderr=$err"
fi
run ranges "$WORK/esc$(printf '\033')[31mred"
if [[ $rc -eq 1 ]] && grep -q 'esc\\x1b\[31mred' "$WORK/err"; then
	pass "message: escape sequence in a path is escaped"
else
	fail "message: escape sequence in a path is escaped" "stderr=$(cat -v "$WORK/err")"
fi
# Issue 13 item 9: on e4476eb a usage error printed the quoted argument
# raw: a newline in it split the message, an escape sequence reached the
# terminal.
run cbt "x
y$(printf '\033')[31m"
if [[ $rc -eq 2 ]] && [[ $(wc -l < "$WORK/err") -eq 2 ]] &&
   grep -q 'unknown subcommand .x\\ny\\x1b\[31m.$' "$WORK/err"; then
	pass "usage error: quoted argument escaped, one line"
else
	fail "usage error: quoted argument escaped, one line" "rc=$rc stderr=$(cat -v "$WORK/err")"
fi
# Issue 13 item 8: on 2cf2299 'ranges' hung in open() on a FIFO.
mkfifo "$WORK/fifo"
rc=0; timeout 10 "$BIN" ranges "$WORK/fifo" >"$WORK/out" 2>"$WORK/err" </dev/null || rc=$?
err=$(cat "$WORK/err")
expect "ranges: FIFO refused, no hang" 1 "fifo: not a regular file$"

echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
