# A write to the original device does not wait for image reads that go to
# the difference storage: they cannot see the original change. Only an
# image read of the original device itself holds such a write back (see
# image-reads-race-origin-writes). Here the storage is a dm-delay device
# whose reads take 1.5 s; while a 1 MiB image read of four stored chunks is
# in flight there (its reader seen waiting), a 4 KiB write to the first
# of those chunks on the original device must take less than half that,
# and the read must still return the data of the take.
# Failed on ab7156e (the write took 1250 ms; in this final form, 1300 ms
# on 2c2039c): copy-on-write waited for every tracked read of its chunk,
# wherever the read went.
# timeout: 180
. /tests/common.sh

orig=/dev/vdb
delay=$((1500 * ${TSCALE:-1}))	# ms, the storage's reads
# ms: milliseconds since boot (to 10 ms).
ms() {
	awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime
}

unload_module
load_module
dm_create slow "0 $(sectors /dev/vdd) delay /dev/vdd 0 $delay /dev/vdd 0 0"
write_random $orig 0 4 1
dd if=$orig of=/tmp/take bs=1M count=4 status=none
id=$(bsok create "$(devnum $orig)")
bsok append "$id" "$(devno /dev/mapper/slow)" 0:409600 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $orig)
# Every chunk of the first MiB copied to the storage (writes there are not
# delayed).
write_random $orig 0 1 2

dd if="$img" of=/tmp/read.out bs=1M count=1 iflag=direct status=none &
reader=$!
# The write is timed once the reader has waited for its I/O twice in a
# row 0.1 s apart (/dev/mapper/slow's inflight count does not show reads
# that dm-delay holds).
n=0 seen=0
while [ $seen -lt 2 ]; do
	kill -0 $reader 2> /dev/null ||
		fail "test setup: the image read ended before it was seen waiting"
	if [ "$(cut -d' ' -f3 /proc/$reader/stat 2> /dev/null)" = D ]; then
		seen=$((seen + 1))
	else
		seen=0
	fi
	n=$((n + 1))
	[ $n -lt 100 ] || fail "test setup: the image read never waited in 10 s"
	sleep 0.1
done
t0=$(ms)
dd if=/dev/zero of=$orig bs=4k count=1 oflag=direct conv=notrunc status=none ||
	fail "the write to $orig failed"
took=$(($(ms) - t0))
kill -0 $reader 2> /dev/null && pending=1 || pending=0
wait $reader || fail "the image read failed"
note "a write to a chunk being read from the storage took $took ms"
cmp -s -n 1048576 /tmp/read.out /tmp/take ||
	fail "the image read did not return the data of the take"
[ "$took" -lt $((delay / 2)) ] ||
	fail "a write to $orig waited $took ms for an image read of the storage (its delay is $delay ms)"
[ $pending = 1 ] ||
	fail "test setup: the image read ended before the write did, so nothing raced"
dmesg | grep -q "corrupted" && fail "the snapshot was marked corrupted"
bsok destroy "$id" > /dev/null
run dmsetup remove --noudevsync slow
exit 0
