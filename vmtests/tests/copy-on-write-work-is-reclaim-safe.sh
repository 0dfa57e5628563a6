# The work copy-on-write goes on with (the completions of its reads and
# writes, the release of cached chunks, the wait for storage) runs on the
# driver's own workqueues, made with WQ_MEM_RECLAIM: writeback that frees
# memory may wait for a copy, and a copy whose completion needs a new
# kworker, which needs memory, could wait for ever (workqueue.rst: "all
# wq which might be used in the memory reclaim paths MUST have this flag
# set"; dm-snapshot's kcopyd has its own). Such a workqueue has a rescuer
# thread named after it, which is what can be seen from here: present
# while the module is loaded, gone after rmmod; and a copy-on-write
# through them keeps the image right. Failed on 5e4aec0: the driver
# queued that work on system_wq and system_highpri_wq.
# timeout: 120
. /tests/common.sh

# The rescuers of the driver's workqueues, one name a line.
rescuers() {
	cat /proc/[0-9]*/comm 2>/dev/null | grep -E '^blksnap(_io)?$' | sort
}

[ -z "$(rescuers)" ] || fail "test bug: rescuers before the module: $(rescuers | tr '\n' ' ')"
load_module
for wq in blksnap_io blksnap; do
	rescuers | grep -qx "$wq" ||
		fail "no rescuer of workqueue $wq: kernel threads named blksnap*: $(grep -h '^blksnap' /proc/[0-9]*/comm | tr '\n' ' ')"
done

orig=/dev/vdb
head16() { dd if="$1" bs=1M count=16 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1; }
write_random $orig 0 16 5
sum0=$(head16 $orig)
storage_fs
id=$(snap_take /mnt/st/snap.diff 64M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1
write_random $orig 0 16 6
[ "$(head16 "$img")" = "$sum0" ] || fail "the image differs from the origin at take time"
snap_destroy "$id" /mnt/st/snap.diff
run umount /mnt/st
unload_module
[ -z "$(rescuers)" ] || fail "rescuers left after rmmod: $(rescuers | tr '\n' ' ')"
exit 0
