# Reads of never-copied chunks go straight to the origin while the chunk
# stays locked, so copy-on-write of that chunk waits for them. Here the
# first 128 MiB of the image are read three times (4 KiB buffered,
# 64 KiB direct, 1 MiB direct with several readers at once) while two
# writers rewrite that part of the origin at random offsets: every read
# of the image equals the origin at take time, and fio reads back and
# verifies each round of origin writes. Raw devices, no filesystem.
# The reads are compared with bsctl sum, not sha256sum: hashing the six
# reads of 128 MiB with sha256sum under TCG was most of the test's time.
# timeout: 240
. /tests/common.sh

orig=/dev/vdb
load_module
storage_fs
mib=128
write_random $orig 0 $mib 3
before=$(bsctl sum $orig direct $mib)
[ ${#before} = 32 ] || fail "cannot checksum $orig: $before"
id=$(snap_take /mnt/st/diff 400M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1

# Two writers, each on its own half of those 128 MiB, in rounds of 8 MiB of
# random 4 KiB writes that fio reads back and checks after each round.
rm -f /tmp/stop /tmp/writer.fail
(
	round=0
	while [ ! -e /tmp/stop ]; do
		round=$((round + 1))
		fio --name=w$round --filename=$orig --ioengine=psync --direct=1 \
			--rw=randwrite --bs=4k --numjobs=2 --size=$((mib / 2))M \
			--offset_increment=$((mib / 2))M --io_size=8M --verify=crc32c \
			--randseed=$round > /tmp/fio-w.out 2>&1 ||
			{ cp /tmp/fio-w.out /tmp/writer.fail; break; }
		echo $round > /tmp/rounds
	done
) &
writer=$!

check_read() {
	local what=$1 got
	shift
	got=$("$@" | bsctl sum /proc/self/fd/0) || fail "$what: the read failed"
	[ "$got" = "$before" ] || fail "$what: the image differs from the origin at take time"
}
check_read "4 KiB buffered" dd if="$img" bs=4k count=$((mib * 256)) status=none
check_read "64 KiB direct" dd if="$img" bs=64k count=$((mib * 16)) iflag=direct status=none
pids=
for r in 1 2 3; do
	dd if="$img" bs=1M count=$mib iflag=direct status=none | bsctl sum /proc/self/fd/0 > /tmp/par$r &
	pids="$pids $!"
done
check_read "1 MiB direct" dd if="$img" bs=1M count=$mib iflag=direct status=none
wait $pids
for r in 1 2 3; do
	[ "$(cat /tmp/par$r)" = "$before" ] || fail "parallel 1 MiB reader $r: the image differs from the origin at take time"
done

touch /tmp/stop
wait $writer
[ -e /tmp/writer.fail ] && fail "an origin writer failed: $(grep -i 'err\|verify' /tmp/writer.fail | head -n 3)"
[ -e /tmp/rounds ] || fail "no round of origin writes completed"
note "$(cat /tmp/rounds) rounds of origin writes ran during the reads"
snap_destroy "$id" /mnt/st/diff
