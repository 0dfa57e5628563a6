# The guest loses power while a snapshot of an ext4 origin is held (storage
# file inside the origin) and unsynced files are being written; before
# that, with copy-on-write going on, files were written, overwritten in
# place, moved and deleted, and synced. Their checksums are recorded on
# another disk. The check after the reboot is
# crash-with-held-snapshot-ext4-after.
# reboot: crash-with-held-snapshot-ext4-after
# timeout: 150
. /tests/common.sh

crash_before ext4
exit 0
