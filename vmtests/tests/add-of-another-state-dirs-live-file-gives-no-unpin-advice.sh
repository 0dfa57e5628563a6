# A storage file that a live snapshot holds, given through another
# BLKSNAP_STATE_DIR (or another mount namespace), is not this snapshot's
# here: 'add' refuses it and must not advise unpinning or deleting it,
# which would hand the blocks the kernel writes into to other files. It
# says the kernel holds the file as a live snapshot's storage, and the
# file and the held snapshot are untouched. Failed on f76c335: the
# message said "(left pinned by a crash or reboot?): 'chattr -i' and
# delete it first".
# timeout: 120
. /tests/common.sh

load_module
storage_fs xfs
a=$(make_loop 64)
b=$(make_loop 64)
ida=$(snap_take /mnt/st/a.diff 16M $a) || exit 1
sectors_before=$(blksnap-storage ranges /mnt/st/a.diff) || fail "ranges failed"
idb=$(BLKSNAP_STATE_DIR=/run/other blksnap-storage create $b) || fail "create in another state dir failed"
out=$(BLKSNAP_STATE_DIR=/run/other blksnap-storage add --snapshot "$idb" /mnt/st/a.diff 16M 2>&1) &&
	fail "add of another state dir's live file succeeded: $out"
log "$out"
case "$out" in
*"held by the kernel as storage of snapshot $ida"*) ;;
*) fail "the refusal does not say the file may be live: $out" ;;
esac
echo "$out" | grep -q "and delete it first" && fail "the message advises deleting a live file: $out"
echo "$out" | grep -q chattr && fail "the message advises unpinning a live file: $out"
held /mnt/st/a.diff || fail "the kernel no longer holds the live file"
[ "$(blksnap-storage ranges /mnt/st/a.diff)" = "$sectors_before" ] || fail "the live file changed"
BLKSNAP_STATE_DIR=/run/other blksnap-storage destroy "$idb" > /dev/null || fail "destroy $idb failed"
snap_destroy "$ida" /mnt/st/a.diff
run umount /mnt/st
no_snapshots
exit 0
