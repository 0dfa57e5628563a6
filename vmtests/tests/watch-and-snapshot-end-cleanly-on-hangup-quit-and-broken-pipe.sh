# SIGHUP (a closed terminal, logrotate's kill -HUP), SIGQUIT and SIGPIPE
# (a reader that went away: 'watch ... | head', 'snapshot ... 2>&1 | head')
# end 'watch' and 'snapshot' the way SIGTERM does, with their cleanup:
#  1. a watcher keeping a spare (storage on the snapshotted ext4) that gets
#     SIGHUP, then a new one that gets SIGQUIT: each gives its spare to the
#     snapshot and exits 0;
#  2. a watcher whose stdout reader has gone (storage on another file
#     system): the growth the next low-space event brings is logged into
#     the broken pipe; the watcher exits 0 and the growth is there;
#  3. 'snapshot' whose stderr reader has gone: its watcher's growth line
#     goes into the broken pipe; the command still runs to its end, the
#     snapshot is destroyed, the file it created deleted, and the exit
#     status is the command's.
#  4. 'snapshot' sent SIGQUIT by kill passes it on to its command, as
#     SIGTERM, and cleans up.
# Failed on 7e5f45f: the watcher died of SIGHUP (exit 129) with its spare
# not given, ignored SIGQUIT (sh starts a background job with it ignored),
# died of SIGPIPE (141), and 'snapshot' died of SIGPIPE (141) leaving its
# snapshot held and its storage pinned.
# timeout: 240
. /tests/common.sh

# Low-space events at 16 MiB free, asking for 16 MiB.
load_module diff_storage_minimum=32768
mkfs_of ext4 /dev/vdb
mkdir -p /mnt/o && run mount /dev/vdb /mnt/o
gen 11 $((40 * 1048576)) > /mnt/o/big && sync || fail "cannot write big"
id=$(snap_take /mnt/o/.diff 24M /mnt/o) || exit 1

# 1. SIGHUP, then SIGQUIT, to a watcher with a spare ready.
for sig in HUP QUIT; do
	watch_start "$id" /mnt/o/.diff /tmp/w-$sig.json --step 8M
	wait_for 30 grep -q '"event":"spare_ready"' /tmp/w-$sig.json ||
		fail "SIG$sig: no spare: $(cat /tmp/w-$sig.json /tmp/w-$sig.json.err | tr '\n' ' ')"
	kill -$sig "$WATCH_PID"
	wait_for 20 eval "! kill -0 $WATCH_PID 2>/dev/null" || fail "watch did not end on SIG$sig"
	wait "$WATCH_PID"
	rc=$?
	[ $rc = 0 ] || fail "watch exited $rc on SIG$sig (it died of it?): $(cat /tmp/w-$sig.json.err)"
	grep -q '"event":"stopped"' /tmp/w-$sig.json || fail "SIG$sig: no stopped event: $(tail -n 2 /tmp/w-$sig.json)"
	grep -q '"event":"spare_given"' /tmp/w-$sig.json ||
		fail "SIG$sig: the spare was not given: $(tr '\n' ' ' < /tmp/w-$sig.json)"
	held /mnt/o/.diff || fail "SIG$sig: the kernel no longer holds the storage file"
done
note "SIGHUP and SIGQUIT: the watcher gave its spare and exited 0"

# 2. A watcher whose reader went away after the first line.
snap_destroy "$id" /mnt/o/.diff
storage_fs
id=$(snap_take /mnt/st/w.diff 32M /dev/vdc) || exit 1
rm -f /tmp/p && mkfifo /tmp/p || fail "mkfifo"
blksnap-storage watch --json --snapshot "$id" --step 8M /mnt/st/w.diff > /tmp/p 2> /tmp/wp.err &
wp=$!
scn_track $wp
head -n 1 < /tmp/p > /tmp/first
grep -q '"event":"started"' /tmp/first || fail "the watcher's first line: $(cat /tmp/first /tmp/wp.err)"
# 28 MiB copied on write leave less than the 16 MiB threshold free (also
# after a growth for the event the create raised): an event comes, the
# watcher grows the file and logs it into the broken pipe.
gen 12 $((28 * 1048576)) | dd of=/dev/vdc bs=1M oflag=direct 2>/dev/null || fail "write to /dev/vdc failed"
wait_for 30 eval "! kill -0 $wp 2>/dev/null" || fail "the watcher still runs with its reader gone"
wait $wp
rc=$?
[ $rc = 0 ] || fail "watch exited $rc with its reader gone (141: killed by SIGPIPE): $(cat /tmp/wp.err)"
[ "$(unnamed_bytes "$id")" -gt 0 ] || fail "SIGPIPE: no growth was made (no unnamed storage recorded: $(ls /run/blksnap/$id))"
held /mnt/st/w.diff || fail "SIGPIPE: the kernel no longer holds the storage file"
blksnap-storage list | grep -q "^$id	taken	/mnt/st/w.diff$" || fail "list after SIGPIPE: $(blksnap-storage list)"
note "SIGPIPE: the watcher grew the file and exited 0"
snap_destroy "$id" /mnt/st/w.diff

# snapshot_ends PID SECONDS STATUS FILE HINT: 'snapshot' PID ends within
# SECONDS with its command's STATUS, its FILE deleted, no snapshot left.
snapshot_ends() {
	wait_for "$2" eval "! kill -0 $1 2>/dev/null" || fail "snapshot still runs ($5)"
	wait "$1"
	rc=$?
	[ $rc = "$3" ] || fail "snapshot exited $rc, not its command's $3 ($5)"
	[ -e "$4" ] && fail "snapshot left its storage file $4"
	no_snapshots
}

# 3. 'snapshot' whose stderr reader went away: its watcher logs growths there.
rm -f /tmp/p && mkfifo /tmp/p || fail "mkfifo"
# (COMMAND writes nothing there itself: it would die of SIGPIPE too.)
blksnap-storage snapshot --storage /mnt/st/s.diff --size 8M --step 8M /dev/vdc -- \
	sh -c 'sleep 1; bsctl gen 13 $((32 * 1048576)) | dd of=/dev/vdc bs=1M oflag=direct 2>/dev/null; sleep 1; exit 7' \
	> /tmp/p 2>&1 &
sp=$!
scn_track $sp
head -n 1 < /tmp/p > /tmp/first
grep -q watching /tmp/first || fail "snapshot's first line: $(cat /tmp/first)"
snapshot_ends $sp 60 7 /mnt/st/s.diff "141: killed by SIGPIPE"
note "SIGPIPE: snapshot ran its command to the end and cleaned up"

# 4. SIGQUIT sent to 'snapshot' alone (not from a terminal) is passed on
# to its command, as SIGTERM is, and the cleanup runs. On 926f177 it was
# ignored: the command ran on.
# (bsctl sigdfl: a background job of sh starts with SIGQUIT ignored, and
# COMMAND gets the dispositions 'snapshot' started with.)
bsctl sigdfl blksnap-storage snapshot --storage /mnt/st/q.diff --size 8M /dev/vdc -- \
	sh -c 'trap "kill \$!; exit 9" QUIT; sleep 60 & echo ready; wait' > /tmp/q.out 2>&1 &
sq=$!
scn_track $sq
wait_for 30 grep -q '^ready$' /tmp/q.out || fail "the command did not start: $(cat /tmp/q.out)"
kill -QUIT $sq
snapshot_ends $sq 20 9 /mnt/st/q.diff "the command did not get SIGQUIT?"
note "SIGQUIT: passed on to the command; snapshot cleaned up"
run umount /mnt/st
run umount /mnt/o
exit 0
