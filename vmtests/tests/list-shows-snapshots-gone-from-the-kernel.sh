# A snapshot the kernel forgot (the module was unloaded with it held)
# still has recorded storage files: 'list' shows it as "gone" with its
# files (text and JSON), and 'destroy ID' forgets it. Failed on
# e4476eb: 'list' showed nothing, so nothing told the administrator why
# the files could not be deleted (issue 13 item 6).
# timeout: 120
. /tests/common.sh

load_module
storage_fs
id=$(blksnap-storage create /dev/vdb) || fail "create failed"
run blksnap-storage add --snapshot "$id" /mnt/st/diff 16M
rmmod blksnap 2> /tmp/rmmod.err ||
	skip "rmmod refused with a held snapshot: $(cat /tmp/rmmod.err)"
load_module

out=$(blksnap-storage list) || fail "list failed: $out"
[ "$out" = "$(printf '%s\tgone\t/mnt/st/diff' "$id")" ] ||
	fail "list does not show the forgotten snapshot: '$out'"
json=$(blksnap-storage list --json) || fail "list --json failed: $json"
echo "$json" | grep -q "\"id\":\"$id\",\"state\":\"gone\",\"taken\":false,.*\"storage\":\[\"/mnt/st/diff\"\]" ||
	fail "list --json does not show the forgotten snapshot: $json"
held /mnt/st/diff && fail "test bug: the file is held with no snapshot"

run blksnap-storage destroy "$id"
held /mnt/st/diff && fail "destroy left the file held"
out=$(blksnap-storage list) || fail "list failed: $out"
[ -z "$out" ] || fail "list after destroy: '$out'"
rm /mnt/st/diff || fail "cannot delete the storage file after destroy"
run umount /mnt/st
exit 0
