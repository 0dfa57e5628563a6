#!/bin/sh
# Guest scenario: on Debian 12 with Debian's kernel and the packages as apt
# installed them, "modprobe blksnap" loads the DKMS-built modules, and a
# backup of / taken with "blksnap-storage snapshot" (storage in a file on /
# itself) holds exactly the files of before the snapshot, although they
# are rewritten, deleted and added to while the backup runs.
t=install-and-backup
fail() { echo "FAIL $t: $*"; exit 1; }
step() { echo; echo "# $*"; }

step "the system"
uname -r
dkms status blksnap 2>/dev/null
step "modprobe blksnap"
modprobe blksnap || fail "modprobe blksnap failed"
lsmod | grep -E '^(blksnap|bdev_filter) ' || fail "blksnap or bdev_filter not loaded"
modinfo -F filename blksnap bdev_filter
blksnap-storage version || fail "blksnap-storage version failed"

step "data, and its checksums before the snapshot"
mkdir -p /srv/data/bin
cp -a /usr/bin/. /srv/data/bin/
for i in 1 2 3 4 5 6 7 8; do
	head -c $((i * 4))M /dev/urandom > /srv/data/random$i || fail "cannot write data"
done
(cd /srv/data && find . -type f -print0 | sort -z | xargs -0 sha256sum) > /root/before.sha256
sync
echo "$(wc -l < /root/before.sha256) files, $(du -sh /srv/data | cut -f1)"

step "blksnap-storage snapshot --storage /var/snap.diff --size 1G / -- (rewrite, delete, add; then tar the image)"
mkdir -p /mnt/snap
blksnap-storage snapshot --storage /var/snap.diff --size 1G / -- sh -c '
	set -e
	echo "snapshot $BLKSNAP_ID of $BLKSNAP_DEVICE_0: image $BLKSNAP_IMAGE_0"
	# While the snapshot is held: what the backup must not see.
	for i in 1 2 3 4; do dd if=/dev/urandom of=/srv/data/random$i bs=1M count=$((i * 4)) conv=notrunc status=none; done
	rm /srv/data/random5 /srv/data/bin/tar
	head -c 32M /dev/urandom > /srv/data/new-after-take
	sync
	mount -o ro,noload "$BLKSNAP_IMAGE_0" /mnt/snap
	tar -C /mnt/snap/srv -cf /root/backup.tar data
	umount /mnt/snap
	ls -l /var/snap.diff
'
rc=$?
[ "$rc" -eq 0 ] || fail "blksnap-storage snapshot exited $rc"
[ ! -e /var/snap.diff ] || fail "/var/snap.diff is left after the snapshot"

step "the archive against the checksums of before"
rm -rf /root/restore && mkdir -p /root/restore
tar -C /root/restore -xf /root/backup.tar || fail "cannot extract the archive"
(cd /root/restore/data && sha256sum --quiet -c /root/before.sha256) || fail "archived files differ from the checksums taken before"
n=$(cd /root/restore/data && find . -type f | wc -l)
[ "$n" -eq "$(wc -l < /root/before.sha256)" ] || fail "the archive has $n files, not $(wc -l < /root/before.sha256)"
cmp -s /srv/data/random1 /root/restore/data/random1 && fail "random1 in the archive is the rewritten one"
echo "PASS $t ($n files matched; the live files had changed)"
