# Destroying a snapshot while its image is being read: 'destroy' succeeds
# at once, each reader ends (with an I/O error or end of file) instead of
# hanging, the image node goes, and nothing is left - the module unloads.
# Three rounds: a dd that has just started; a dd deep into the image while
# the origin is written (reads served from the difference storage); two
# dds at once. The origin holds what was written to it. Raw devices: no
# filesystem is involved in reading an image with dd.
# destroy's 30 s limit scales with the harness's (TSCALE): destroy syncs
# the origin (freeze_bdev() of a raw device), copying the writer's dirty
# pages on write first, and on the debug kernel (KASAN) that took 28 s
# at cc0c185 and 44 s at eeda307 in the cow round, which then failed on
# a limit meant for the fast kernels.
# timeout: 240
. /tests/common.sh

orig=/dev/vdb
load_module
storage_fs
write_random $orig 0 64 1

# dd_pos PID: how far the dd reading stdin has got, in bytes.
dd_pos() {
	sed -n 's/^pos:[[:space:]]*//p' "/proc/$1/fdinfo/0" 2>/dev/null
}
started() {
	local p
	p=$(dd_pos "$1")
	[ -n "$p" ] && [ "$p" -gt "$2" ]
}

round=0
for mode in early cow two; do
	round=$((round + 1))
	id=$(snap_take /mnt/st/diff$round 512M $orig) || exit 1
	img=$(cli_image "$id" $orig) || exit 1
	writer=
	if [ $mode = cow ]; then
		gen 7 $((48 * 1048576)) | dd of=$orig bs=1M conv=notrunc,fsync 2>/dev/null &
		writer=$!
	fi
	dd of=/dev/null bs=4k < "$img" 2> /tmp/dd1.err &
	r1=$!
	r2=
	if [ $mode = two ]; then
		dd of=/dev/null bs=64k < "$img" 2> /tmp/dd2.err &
		r2=$!
	fi
	at=0
	[ $mode = early ] || at=$((64 * 1048576))
	wait_for 60 started $r1 $at || fail "round $mode: the reader did not get past $at bytes"
	kill -0 $r1 2>/dev/null || fail "round $mode: the reader finished before destroy: the test proves nothing"
	pos=$(dd_pos $r1)
	t0=$(uptime_s)
	out=$(timeout $((30 * ${TSCALE:-1})) blksnap-storage destroy "$id" 2>&1) || fail "round $mode: destroy failed while reading: $out"
	t1=$(uptime_s)
	for r in $r1 $r2; do
		wait_for 60 eval "! kill -0 $r 2>/dev/null" || fail "round $mode: reader $r still runs 60 s after destroy"
		wait $r
		rc=$?
		[ $rc -lt 128 ] || fail "round $mode: the reader was killed by a signal ($rc)"
	done
	note "round $mode: destroy at byte $pos of the image took $(echo "$t0 $t1" | awk '{ print $2 - $1 }') s; reader: $(tail -n 1 /tmp/dd1.err)"
	[ -e "$img" ] && fail "round $mode: $img is still there after destroy"
	if [ -n "$writer" ]; then
		wait $writer || fail "the origin writer failed"
		[ "$(dd if=$orig bs=1M count=48 2>/dev/null | sha256sum | cut -d' ' -f1)" = \
		  "$(gen 7 $((48 * 1048576)) | sha256sum | cut -d' ' -f1)" ] ||
			fail "the origin does not hold what was written during the snapshot"
	fi
	rm -f /mnt/st/diff$round
	no_snapshots
done
run umount /mnt/st
unload_module
exit 0
