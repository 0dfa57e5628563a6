# blksnap demo, guest side (run by guest/init when the kernel command line
# has bsvm.mode=demo; vmtests/demo-run.sh is the host side).
#
# /dev/vda (16 GiB) becomes the root filesystem of a small Linux machine:
# ext4 holding this initramfs's userland as /bin, /lib, /usr, and user
# data in /home, /srv and /var. The demo then works in that root (chroot)
# as its administrator would: a snapshot of / with 4 GiB of storage in
# /var/snap.diff, 'watch' growing it while a workload changes more than
# 4 GiB, a tar backup of the snapshot's image onto /dev/vdb, checked
# against checksums taken before the snapshot, destroy, storage released.
#
# Everything printed goes to the virtio-serial port the host streams to
# the terminal. The last line is "DEMO RESULT: ...".

. /tests/common.sh

port=
for p in /sys/class/virtio-ports/*; do
	[ "$(cat "$p/name" 2>/dev/null)" = results ] && port=/dev/$(basename "$p")
done
[ -n "$port" ] && exec > "$port" 2>&1

R=/mnt/root                # the machine's root, as seen from the initramfs
T0=$(cut -d. -f1 /proc/uptime)
STEP=0
ID=
# What the backup covers: everything on / but the storage file and the
# (empty) mount points.
TREE="bin etc home lib lib64 root sbin srv usr var/cache var/lib var/log var/mail"
IMPORT_PARTS=20            # the workload's import: 20 x 256 MiB = 5 GiB
DB_MIB=192                 # the application's database, rewritten in place

clock() {
	local s=$(($(cut -d. -f1 /proc/uptime) - T0))
	printf '%d:%02d' $((s / 60)) $((s % 60))
}

# step TITLE: a numbered heading with the time since the demo started.
step() {
	STEP=$((STEP + 1))
	echo
	echo "=== [$(clock)] Step $STEP: $*"
}

# say TEXT: an explanation, not a command.
say() {
	echo "  -- $*"
}

# result TEXT: the closing line; the demo ends here.
result() {
	echo
	echo "DEMO RESULT: $*"
	finish
	exit 0
}

die() {
	result "demo failed in step $STEP: $*"
}

# in_root CMD: run CMD in the machine's root (a shell there, cwd /,
# $id = the snapshot's ID).
in_root() {
	id=$ID HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		chroot $R /bin/sh -c "$1"
}

# show CMD: print CMD as typed at the root prompt, run it; its status.
show() {
	echo "# $1"
	in_root "$1"
}

# setup CMD: a set-up command run from the initramfs, shown as such.
setup() {
	echo "(setup)# $1"
	eval "$1" > /dev/null || die "'$1' failed"
}

# must CMD: show CMD; the demo fails if it fails.
must() {
	show "$1" || die "'$1' failed"
}

# long WHAT MEASURE CMD: must CMD, a long one: every 5 s a progress line
# with what MEASURE (a shell command run outside the machine) prints.
long() {
	local what=$1 measure=$2 cmd=$3 pid n=0
	echo "# $cmd"
	in_root "$cmd" &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		sleep 1
		n=$((n + 1))
		[ $((n % 5)) = 0 ] && kill -0 $pid 2>/dev/null &&
			echo "   ... [$(clock)] $what: $(eval "$measure" 2>/dev/null) so far"
	done
	wait $pid || die "'$cmd' failed"
}

finish() {
	[ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null
	grep -q " $R/mnt/snapshot " /proc/mounts && umount $R/mnt/snapshot
	[ -n "$ID" ] && in_root 'blksnap-storage destroy $id' > /dev/null 2>&1
	for m in $(grep " $R" /proc/mounts | cut -d' ' -f2 | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	sync
}
WATCH_PID=

# --- filling the machine -----------------------------------------------------
FILL_TOTAL=0
FILL_DONE=0
FILL_SHOWN=0
# filled MIB: MIB more written; a progress line when a 10% mark is passed.
filled() {
	local pct
	FILL_DONE=$((FILL_DONE + $1))
	pct=$((FILL_DONE * 100 / FILL_TOTAL / 10 * 10))
	[ $pct -gt 100 ] && pct=100
	if [ $pct -gt $FILL_SHOWN ]; then
		FILL_SHOWN=$pct
		echo "   ... [$(clock)] filling /: $pct% ($FILL_DONE of $FILL_TOTAL MiB)"
	fi
}

# text_file PATH LINES SEED: a text file of LINES log-like lines.
text_file() {
	awk -v n="$2" -v s="$3" 'BEGIN { srand(s);
		for (i = 0; i < n; i++)
			printf "2025-11-%02d %02d:%02d:%02d host app[%d]: request %d served in %d ms\n",
				1 + i % 28, i % 24, i % 60, (i * 7) % 60, 1000 + s, int(rand() * 1e6), int(rand() * 900) }' > "$1"
}

fill_machine() {
	local i kver
	# The userland of this initramfs (real binaries and libraries), the
	# module where modprobe finds it, configuration, user data.
	FILL_TOTAL=$(( $(du -sm /bin /sbin /lib /lib64 /usr | awk '{ s += $1 } END { print s }') + 64 + DB_MIB + 10 ))
	echo "   ... [$(clock)] filling /: $FILL_TOTAL MiB to write"
	cp -a /bin /sbin /lib /lib64 /usr $R/ || die "cannot copy the userland"
	kver=$(uname -r)
	mkdir -p $R/lib/modules/$kver/extra
	mv $R/lib/modules/blksnap.ko $R/lib/modules/$kver/extra/ && depmod -b $R "$kver" ||
		die "cannot install blksnap.ko in the root"
	filled "$(du -sm $R | cut -f1)"

	mkdir -p $R/etc $R/root $R/tmp $R/proc $R/sys $R/dev $R/run $R/mnt/snapshot $R/backup \
		$R/home/alice/Documents $R/home/alice/Photos $R/srv/www $R/usr/local/sbin \
		$R/var/cache/app $R/var/lib/app $R/var/log $R/var/mail $R/var/tmp
	cp /etc/passwd /etc/group $R/etc/
	echo demo > $R/etc/hostname
	printf '/dev/vda / ext4 defaults 0 1\n/dev/vdb /backup ext4 defaults 0 2\n' > $R/etc/fstab
	printf 'listen 8080\nworkers 4\ndatabase /var/lib/app/data.db\n' > $R/etc/app.conf
	echo "alice:x:1000:1000:Alice:/home/alice:/bin/sh" >> $R/etc/passwd
	i=0
	while [ $i -lt 120 ]; do
		text_file $R/home/alice/Documents/note-$i.txt $((20 + i * 5)) $i
		i=$((i + 1))
	done
	i=0
	while [ $i -lt 200 ]; do
		gen $((500 + i)) $((4096 + i * 977)) > $R/srv/www/page-$i.html
		i=$((i + 1))
	done
	filled 8
	# 64 photos of about 1 MiB.
	i=0
	while [ $i -lt 64 ]; do
		gen $((1000 + i)) $((768 * 1024 + (i % 5) * 131072)) > $R/home/alice/Photos/IMG_$((1000 + i)).jpg
		i=$((i + 1))
		[ $((i % 8)) = 0 ] && filled 8
	done
	i=0
	while [ $i -lt 40 ]; do
		gen $((2000 + i)) $((16384 + i * 4096)) > $R/var/cache/app/thumb-$i.bin
		i=$((i + 1))
	done
	# The application's database: rewritten in place by the workload.
	i=0
	while [ $i -lt $((DB_MIB / 32)) ]; do
		gen $((3000 + i)) $((32 * 1048576)) >> $R/var/lib/app/data.db
		filled 32
		i=$((i + 1))
	done
	i=1
	for f in syslog auth.log app.log kern.log; do
		text_file $R/var/log/$f 4000 $((4000 + i))
		i=$((i + 1))
	done
	text_file $R/var/mail/alice 3000 7
	filled 2
	sync
}

# The workload: a script on the machine, so that the transcript shows it
# run as the machine's own program.
install_workload() {
	cat > $R/usr/local/sbin/app-workload <<EOF
#!/bin/sh
# app-workload: what the machine does while its backup runs.
set -e
echo "app-workload: rotating logs, editing documents, deleting 16 photos"
mv /var/log/app.log /var/log/app.log.1
echo "\$(date) app restarted" > /var/log/app.log
for n in 0 1 2 3 4 5 6 7 8 9; do echo "edited \$(date)" >> /home/alice/Documents/note-\$n.txt; done
echo "workers 8" >> /etc/app.conf
rm /home/alice/Photos/IMG_100?.jpg /home/alice/Photos/IMG_101[0-5].jpg
echo "app-workload: rewriting the $DB_MIB MiB database in place"
fio --name=db --filename=/var/lib/app/data.db --rw=randwrite --bs=64k --size=${DB_MIB}m \\
	--direct=1 --ioengine=psync --output=/dev/null
echo "app-workload: importing $((IMPORT_PARTS * 256)) MiB of new data into /srv/import"
mkdir -p /srv/import
n=1
while [ \$n -le $IMPORT_PARTS ]; do
	fio --name=import --filename=/srv/import/part\$n.dat --rw=write --bs=1m --size=256m \\
		--direct=1 --ioengine=psync --output=/dev/null
	[ \$((n % 2)) = 0 ] && echo "app-workload:   \$((n * 256)) of $((IMPORT_PARTS * 256)) MiB imported"
	n=\$((n + 1))
done
sync
echo "app-workload: done"
EOF
	chmod +x $R/usr/local/sbin/app-workload
}

# --- the demo ----------------------------------------------------------------

echo "blksnap demo: a file-level backup of a live root filesystem from a snapshot"
echo "Linux $(uname -r) in QEMU; every command below is run for real."
echo "'# command' lines are what the administrator types, as root, on the machine;"
echo "'  --' lines explain; '   ...' lines are progress."

step "Prepare the machine: an ext4 root on /dev/vda (16 GiB), a backup disk /dev/vdb"
say "set-up, done from the initramfs ('(setup)#'); from step 2 on everything runs"
say "inside the machine's root (chroot /mnt/root), as on a booted system"
setup "mkfs.ext4 -q -F -N 65536 -E lazy_itable_init=0,lazy_journal_init=0 /dev/vda"
setup "mkdir -p $R && mount /dev/vda $R"
say "the root gets this initramfs's userland (/bin, /lib, /usr: busybox, e2fsprogs,"
say "fio, blksnap-storage, blksnap.ko), /etc, and user data in /home, /srv, /var"
fill_machine
install_workload
setup "mount -t proc proc $R/proc && mount -t sysfs sys $R/sys && mount -t devtmpfs dev $R/dev"
setup "mount -t tmpfs run $R/run && mount -t tmpfs tmp $R/tmp"
setup "mkfs.ext4 -q -F /dev/vdb && mount /dev/vdb $R/backup"

step "The machine"
must "df -h / /backup"
must "du -sh /bin /etc /home /lib /srv /usr /var"
say "the application's files:"
must "ls -l /var/lib/app /var/log | head -n 8"

step "Checksums of every file, before the snapshot (to check the backup with later)"
long "checksums" "echo \$(wc -l < $R/backup/before.sha256) files" "cd / && find $TREE -type f | xargs sha256sum > /backup/before.sha256"
must "wc -l < /backup/before.sha256"
NFILES=$(wc -l < $R/backup/before.sha256)
[ "$NFILES" -gt 500 ] || die "only $NFILES files on the root"

step "Snapshot of / with 4 GiB of difference storage in /var/snap.diff"
say "blksnap keeps the old content of blocks changed after the take in the storage;"
say "blksnap-storage makes it out of ordinary files: allocated, their sectors given to"
say "the kernel, which holds them (nobody can delete or move them) until destroy."
say "The module asks for more when less than"
say "diff_storage_minimum sectors (default 2097152 = 1 GiB) are left."
must "modprobe blksnap"
must "cat /sys/module/blksnap/parameters/diff_storage_minimum"
must "blksnap-storage version"
echo "# id=\$(blksnap-storage create /); echo \$id"
ID=$(in_root 'blksnap-storage create /') || die "create failed"
echo "$ID"
must "blksnap-storage add /var/snap.diff 4G"
say "the kernel holds the file: even root cannot delete it while the snapshot lives"
show "rm /var/snap.diff; ls -l /var/snap.diff"
must "blksnap-storage take \$id"
must "blksnap-storage images \$id"
must "blksnap-storage list"
IMG=$(in_root 'blksnap-storage images $id' | awk '{ print $2 }')
[ -b "$R$IMG" ] || die "no image device ($IMG)"

step "Watch the snapshot in the background: it grows the storage when asked"
say "each growth is a new unnamed file next to /var/snap.diff (a held file cannot grow)"
say "its log lines are marked [watch] and appear as the events happen"
echo "# blksnap-storage watch /var/snap.diff &"
: > /tmp/watch.log
(
	in_root 'exec blksnap-storage watch /var/snap.diff' 2>&1
	echo "(watch exited with status $?)"
) | while IFS= read -r l; do
	echo "   [watch] $l"
	echo "$l" >> /tmp/watch.log
done &
WATCH_PID=$!
wait_for 20 grep -q ': watching$' /tmp/watch.log || die "watch did not start: $(cat /tmp/watch.log)"

step "The workload: the machine goes on working while the snapshot is held"
say "it edits files, rewrites the $DB_MIB MiB database in place and imports"
say "$((IMPORT_PARTS * 256)) MiB of new data. blksnap works below the filesystem: the old content of"
say "every block written for the first time since the take goes to the storage, free"
say "blocks too; so about $(((IMPORT_PARTS * 256 + DB_MIB) / 1024)) GiB: more than the 4 GiB given at the start"
T_WL=$(cut -d. -f1 /proc/uptime)
must "app-workload"
T_WL=$(($(cut -d. -f1 /proc/uptime) - T_WL))
sleep 2
say "the workload took ${T_WL}s"
must "ls -l /var/snap.diff"
must "df -h /"
must "blksnap-storage list"
SIZE=$(sed -n 's/.*: grown to \([0-9]*\) bytes.*/\1/p' /tmp/watch.log | tail -n 1)
SIZE=${SIZE:-4294967296}
GROWTHS=$(grep -c ': grown to ' /tmp/watch.log)
grep -q 'corrupted' /tmp/watch.log && die "the snapshot was corrupted: $(grep corrupted /tmp/watch.log)"
say "the storage grew $GROWTHS times, from 4 GiB to $((SIZE / 1073741824)) GiB, while the workload ran"

step "Back up the snapshot's image with tar"
say "the image shows / as it was at the take; mounted read-only"
say "(noload: its journal is not replayed, nothing is written to it)"
must "mount -t ext4 -o ro,noload $IMG /mnt/snapshot"
must "ls -C /mnt/snapshot /mnt/snapshot/var"
say "a photo the workload deleted is gone from / but still in the snapshot:"
show "ls -l /home/alice/Photos/IMG_1000.jpg /mnt/snapshot/home/alice/Photos/IMG_1000.jpg"
say "the image serves reads by whole chunks (256 KiB here) and sets its read-ahead"
say "to two chunks; a few MiB keeps more chunks in flight and makes tar faster"
must "blockdev --setra 8192 $IMG"
say "everything but the storage file itself and the empty mount points:"
long "tar" "echo \$((\$(stat -c %s $R/backup/root.tar) >> 20)) MiB written" "tar -cf /backup/root.tar -C /mnt/snapshot $TREE"
must "ls -l /backup/root.tar"
must "umount /mnt/snapshot"

step "Check the backup against the checksums taken before the snapshot"
RB=$(df -m $R/backup | awk 'NR == 2 { print $3 }')
long "restore" "echo \$((\$(df -m $R/backup | awk 'NR == 2 { print \$3 }') - $RB)) MiB restored" "mkdir /backup/restore && tar -xf /backup/root.tar -C /backup/restore"
echo "# cd /backup/restore && sha256sum -c /backup/before.sha256 > /backup/verify.txt; echo \$?"
in_root "cd /backup/restore && sha256sum -c /backup/before.sha256 > /backup/verify.txt 2>&1; echo \$?" > /tmp/verify.rc
cat /tmp/verify.rc
must "grep -c ': OK\$' /backup/verify.txt"
show "grep -v ': OK\$' /backup/verify.txt | head -n 5"
must "cd /backup/restore && find . -type f | wc -l"
OK=$(grep -c ': OK$' $R/backup/verify.txt)
RESTORED=$(cd $R/backup/restore && find . -type f | wc -l)
MIB=$(cd $R/backup/restore && du -sm . | cut -f1)
say "the live root has changed since the take (the workload); the same check there:"
show "cd / && sha256sum -c /backup/before.sha256 > /tmp/live.txt 2>/dev/null; grep -vc ': OK\$' /tmp/live.txt"
show "grep -v ': OK\$' /tmp/live.txt | head -n 5"
LIVE_DIFF=$(grep -vc ': OK$' $R/tmp/live.txt)
say "$LIVE_DIFF files on the live root differ from the checksums now (changed or deleted"
say "by the workload); in the backup $((NFILES - OK)) of $NFILES do: it holds / as it was at the take"

step "Destroy the snapshot and release the storage"
must "blksnap-storage destroy \$id"
sleep 2
ID=
wait_for 20 grep -q '^(watch exited' /tmp/watch.log || die "watch still runs after destroy"
grep -q '^(watch exited with status 0)' /tmp/watch.log || die "watch did not end cleanly: $(tail -n 2 /tmp/watch.log)"
WATCH_PID=
show "ls /dev/blksnap-image*"
[ -e "$R$IMG" ] && die "$IMG is still there after destroy"
must "df -h /"
must "rm /var/snap.diff"
must "sync; df -h /"
must "blksnap-storage list"

# --- the verdict ---------------------------------------------------------------
bad=
[ "$(cat /tmp/verify.rc)" = 0 ] && [ "$OK" = "$NFILES" ] || bad="$bad; $((NFILES - OK)) of $NFILES files missing or different"
[ "$RESTORED" = "$NFILES" ] || bad="$bad; the backup holds $RESTORED files, $NFILES were there before the snapshot"
[ "$GROWTHS" -ge 1 ] || bad="$bad; the storage never grew (the demo did not show growth)"
[ "$LIVE_DIFF" -ge 10 ] || bad="$bad; only $LIVE_DIFF files changed on the live root (the workload did not run)"
if [ -z "$bad" ]; then
	result "backup matched the snapshot ($NFILES files, $MIB MiB; the storage grew $GROWTHS times, 4 -> $((SIZE / 1073741824)) GiB)"
fi
result "backup DID NOT match the snapshot: ${bad#; }"
