# A writer killed (SIGKILL: kill -9, the OOM killer) while it waits for the
# copy of the chunk it overwrites must not cost the snapshot: the write goes
# on either way, so the wait is not interruptible. The origin is a
# dm-delay device whose reads take 400 ms, so every copy is still being
# read when its writer is killed. Failed on d7861d9: the first kill gave
# "corrupted ... error code 4" (EINTR) and the image lost the chunk.
# About 10 s (it was about 60 s, nearly all of it two reads of 64 MiB
# through the 400 ms delay, 1 MiB at a time).
# timeout: 180
# kernels: both (the filter hook: the copy in the submitter's context)
. /tests/common.sh

load_module
storage_fs
# 32 MiB of data: the writers write in its eight 4 MiB parts.
write_random /dev/vdb 0 32 5
dm_create slow "0 $(sectors /dev/vdb) delay /dev/vdb 0 400 /dev/vdb 0 0"
orig=/dev/mapper/slow
# The origin, and later the image, in one 32 MiB read: its bios wait
# out the 400 ms together (1 MiB reads would wait one after another).
dd if=$orig of=/tmp/before.img bs=32M count=1 iflag=direct status=none &&
	[ "$(stat -c %s /tmp/before.img)" = $((32 << 20)) ] || fail "cannot read $orig"
before=$(bsctl sum /tmp/before.img)
id=$(snap_take /mnt/st/diff 200M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1

# Eight O_DIRECT writers, one per 4 MiB, each killed while it waits.
pids=
i=0
while [ $i -lt 8 ]; do
	gen $((40 + i)) 4096 | dd of=$orig bs=4096 seek=$((i * 1024)) \
		oflag=direct conv=notrunc status=none &
	pids="$pids $!"
	i=$((i + 1))
done
# At least one writer must be waiting (D) for its copy when it is killed;
# polled, since a loaded host may start them late.
count_waiting() {
	local line
	waiting=0
	for p in $pids; do
		# No process per check: the debug kernel starts them slowly.
		read -r line < /proc/$p/stat 2>/dev/null || continue
		set -- $line
		[ "$3" = D ] && waiting=$((waiting + 1))
	done
	[ $waiting -gt 0 ]
}
wait_for $((5 * ${TSCALE:-1})) count_waiting
kill -9 $pids 2>/dev/null
for p in $pids; do wait "$p" 2>/dev/null; done
note "$waiting of 8 writers were waiting for their copy when killed"
[ $waiting -gt 0 ] || fail "test bug: no writer was waiting for its copy when killed"

dmesg | grep -q "corrupted" && fail "a killed writer corrupted the snapshot: $(dmesg | grep corrupted | head -n 1)"
dd if="$img" of=/tmp/after.img bs=32M count=1 iflag=direct status=none &&
	[ "$(stat -c %s /tmp/after.img)" = $((32 << 20)) ] || fail "cannot read the image $img"
[ "$(bsctl sum /tmp/after.img)" = "$before" ] || fail "the image differs from the origin at take time"
rm -f /tmp/before.img /tmp/after.img
snap_destroy "$id" /mnt/st/diff
run dmsetup remove --noudevsync slow
umount /mnt/st
exit 0
