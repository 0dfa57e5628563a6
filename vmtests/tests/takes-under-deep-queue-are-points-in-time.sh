# A raw direct writer at queue depth 32 (fio, libaio, 4 KiB random writes)
# writes on through takes and destroys of its device, which holds each
# write for long after it passed the filter, so that writes are in flight
# at every take: each image reads the same right after its take and again
# once every write in flight at the take has landed, and the writer sees
# no error. (The data the writer had completed by each take is not
# checked block by block: fio keeps no completion log to check it
# against.) Three devices:
# - a blk-mq one, a loop device with direct I/O over a dm-delay device
#   that holds each write 500 ms, so each request is in flight 500 ms;
# - a bio-based one that counts its writes in flight, dm-linear over
#   such a loop device;
# - a partition of such a loop device (its first create freezes the
#   whole disk's queue and counts the partition's writes in flight);
#   for each, the tracker is removed after each destroy, so that each of
#   6 takes is the first after the device was first tracked, with the
#   writer running: the writes in flight then passed no filter, and the
#   create must wait for them (a queue freeze for the loop device, the
#   count of writes in flight for dm-linear). Failed on 5cdcb17 at the
#   loop device's take 2, and with that phase left out at dm-linear's
#   take 2 (the image changed after the take; whether it does depends on
#   when in its 500 ms the take comes: at some takes only).
# - a bio-based one, dm-delay holding each write 500 ms (5 takes). It is
#   tracked before its writer starts: dm-delay counts a write in flight
#   only once it lets it go, so the first create cannot wait for the
#   writes it holds (blksnap.rst, "Copy-on-write"). Failed on d1a337d,
#   whose take did not wait for the writes in flight: the image changed
#   at take 2 (and at 8 of takes 2 to 12 in a longer run).
# Each device is 4 MiB and each image is read with "bsctl sum ... direct",
# a fraction of a second; a take costs little more than its waits. (With
# 16 MiB devices and two sha256sum reads a take cost twice as long, and
# 5cdcb17 was caught about as often: 2 of 10 and 1 of 8 takes on a
# loaded host, in both ways. The three first phases keep their 6 takes
# each: on 5cdcb17 a take is a trial of that chance, not a repetition.)
# timeout: 300
. /tests/common.sh

load_module
store=$(make_loop 32)
# The size of each device: 16 chunks of 256 KiB. Small, so that an image
# is read in a moment right after its take.
MIB=4

# The running phase's writer is stopped whichever way the test ends: by
# the EXIT trap, and by the guest when the script itself is killed (the
# harness's timeout sends SIGKILL, which runs no trap; the guest kills
# what is left of the test's session). fio runs its job as a thread
# (--thread), so that killing its one process ends it all.
# The trap then takes its devices apart, top down: a loop left on a
# dm-delay device keeps it from the cleanup's "dmsetup remove_all", and a
# later test that makes a device of the same name would fail.
writer=
id=
stop_writer() {
	[ -n "$writer" ] && kill -KILL "$writer" 2> /dev/null && wait "$writer" 2> /dev/null
	writer=
}
cleanup() {
	stop_writer
	[ -n "$id" ] && bsctl destroy "$id" > /dev/null 2>&1
	dmsetup remove --noudevsync lin 2> /dev/null
	losetup -D 2> /dev/null
	for d in slow slow2 slow3 dly; do
		dmsetup remove --noudevsync $d 2> /dev/null
	done
}
trap cleanup EXIT

# bs ARGS...: bsok in one process, not run in a subshell (a failure ends
# the test): what follows "OK" in $r.
bs() {
	r=$(bsctl "$@" 2>&1)
	case "$r" in
	OK*) r=${r#OK}; r=${r# } ;;
	*) fail "bsctl $* gave '$r'" ;;
	esac
}

# takes_under_writer DEV LABEL TAKES SETTLE_SECONDS [untrack]
takes_under_writer() {
	local i=1 img first second t0 dno sno pair
	dno=$(devno "$1")
	sno=$(devnum $store)
	fio --name=qd32 --filename="$1" --ioengine=libaio --iodepth=32 \
		--direct=1 --bs=4k --rw=randwrite --time_based --runtime=600 \
		--thread > /tmp/fio.out 2>&1 &
	writer=$!
	sleep 1
	kill -0 $writer 2> /dev/null || fail "$2: fio did not start: $(tail -n 3 /tmp/fio.out)"
	t0=$(uptime_s)
	while [ $i -le "$3" ]; do
		bs create "$dno"
		id=$r
		bs append "$id" "$sno" 0:65536
		bs take "$id"
		bs images "$id"
		img=
		for pair in $r; do
			[ "${pair%%=*}" = "$dno" ] && img=/dev/blksnap-image${pair##*:}
		done
		[ -n "$img" ] || fail "$2, take $i: no image of $dno in snapshot $id: $r"
		# The image right after the take, read at once (a few MiB,
		# direct: past the page cache), and again once every write in
		# flight at the take has landed.
		first=$(bsctl sum "$img" direct)
		sleep "$4"
		second=$(bsctl sum "$img" direct)
		case "$first$second" in
		*ERR*|"") fail "$2, take $i: cannot read the image: $first $second" ;;
		esac
		[ "$first" = "$second" ] ||
			fail "$2, take $i: the image changed after the take: writes in flight at the take landed in it uncopied"
		bs destroy "$id"
		id=
		[ "$5" = untrack ] && bs tracker-remove "$dno"
		i=$((i + 1))
	done
	kill -0 $writer 2> /dev/null || fail "$2: fio stopped early: $(tail -n 3 /tmp/fio.out)"
	kill -INT $writer
	wait $writer
	writer=
	grep -q "err= 0" /tmp/fio.out || fail "$2: the writer saw errors: $(grep -m1 err= /tmp/fio.out)"
	echo "$2: $3 takes in $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }') s, each image unchanged after its take"
}

# direct_loop NAME: a loop device with direct I/O over a new dm-delay
# device NAME that holds each write 500 ms.
direct_loop() {
	local dev l
	dev=$(make_loop $MIB)
	dm_create "$1" "0 $(sectors $dev) delay $dev 0 0 $dev 0 500"
	l=$(losetup --direct-io=on -f --show "/dev/mapper/$1") ||
		fail "losetup --direct-io=on /dev/mapper/$1 failed"
	[ "$(cat "/sys/block/${l#/dev/}/loop/dio")" = 1 ] ||
		fail "$l does not do direct I/O: its writes would land in the page cache at once"
	echo "$l"
}

mq=$(direct_loop slow)
takes_under_writer "$mq" "loop over dm-delay (blk-mq), each take the first after tracking began" 6 0.7 untrack

below=$(direct_loop slow2)
dm_create lin "0 $(sectors "$below") linear $below 0"
takes_under_writer /dev/mapper/lin "dm-linear over it (bio-based), each take the first after tracking began" 6 0.7 untrack

# The same loop device over dm-delay, with an MBR partition from 1 MiB.
part_loop() {
	local dev l
	dev=$(make_loop $MIB)
	{
		dd if=/dev/zero bs=446 count=1 2>/dev/null
		printf "\\000\\000\\002\\000\\203\\376\\377\\377$(le32 2048)$(le32 $((MIB * 2048 - 2048)))"
		dd if=/dev/zero bs=48 count=1 2>/dev/null
		printf '\125\252'
	} | dd of=$dev conv=notrunc 2>/dev/null || fail "cannot write the partition table"
	dm_create "$1" "0 $(sectors $dev) delay $dev 0 0 $dev 0 500"
	l=$(losetup -P --direct-io=on -f --show "/dev/mapper/$1") ||
		fail "losetup -P --direct-io=on /dev/mapper/$1 failed"
	wait_for 5 test -b "${l}p1" || fail "no partition ${l}p1"
	echo "${l}p1"
}
p1=$(part_loop slow3)
takes_under_writer "$p1" "a partition of a loop disk over dm-delay, each take the first after tracking began" 6 0.7 untrack

dev=$(make_loop $MIB)
dm_create dly "0 $(sectors $dev) delay $dev 0 0 $dev 0 500"
# Tracked from here on; the tracker stays after the destroy.
id=$(bsok create "$(devno /dev/mapper/dly)")
bsok destroy "$id" > /dev/null
id=
takes_under_writer /dev/mapper/dly "dm-delay (bio-based)" 5 0.7

dmesg | grep -m1 -i corrupt && fail "a snapshot was corrupted (above)"
exit 0
