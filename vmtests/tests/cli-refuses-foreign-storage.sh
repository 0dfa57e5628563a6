# blksnap-storage runs as root: it never adopts, hands to the kernel or
# deletes a file another user controls, nor trusts a state directory
# another user controls (issue 13, items 1-3), with the real module:
#  1. 'add' refuses an empty file of uid 1000 (mode 0666) and a directory
#     of uid 1000, leaving them as they were (not held); a file it creates
#     is root's, mode 0600, one link, held by the kernel.
#  2. 'destroy' finds a file by the device and inode recorded at add:
#     when the file's directory was swapped for a symbolic link to another
#     directory, or for a directory holding another file of that name, it
#     says so in one line each, touches neither, and forgets the records;
#     'snapshot' deletes the file it created only if the name still leads
#     to it, never a file put in its place.
#  3. A /run/blksnap that is a symbolic link to uid 1000's directory is
#     refused; a FIFO as a record file is an error, not a hang.
#  4. (item 6) destroy of a file whose directory was renamed does not
#     say "released": one line names its inode.
#  4b. (review S1) destroy of a record whose name now leads to a FIFO, or
#     to another user's file locked by them, says so in one line each
#     without waiting for the lock, forgets the record and gives the find
#     -inum hint. Before the fix it said "Invalid argument" for
#     the FIFO, "in use by another blksnap-storage process" after 5 s for
#     the locked file, and kept the record, so destroy never succeeded.
#  5. (item 9) 'list' escapes a comma, tab, ESC in a path; 'list --json'
#     is valid UTF-8 with a 0xff byte in a path (\udcff).
# On 2cf2299 this failed at the first step: add adopted the 0666 file of
# uid 1000 (and destroy unpinned the other file through the swapped
# directory; snapshot's cleanup deleted the file put in its place). On
# e4476eb it failed at step 2: the line for the other file did not say the
# record was forgotten nor how to find the file (find -inum), so the record
# stayed and destroy could never finish.
# timeout: 180
. /tests/common.sh

load_module
mkfs_of ext4 /dev/vdb
mkdir -p /mnt/o && run mount /dev/vdb /mnt/o
storage_fs ext4
chmod 755 /mnt/st
immutable() { lsattr "$1" 2>/dev/null | cut -d' ' -f1 | grep -q i; }
# destroyed_with_lines ID N: destroy exits 0 with N lines on stderr.
destroyed_with_lines() {
	blksnap-storage destroy "$1" > /tmp/out 2> /tmp/err
	rc=$?
	[ $rc = 0 ] || fail "destroy exited $rc: $(cat /tmp/out /tmp/err | tr '\n' ' ')"
	grep -q released /tmp/out && fail "destroy said 'released' of a file not at its path: $(cat /tmp/out)"
	[ "$(wc -l < /tmp/err)" = "$2" ] || fail "destroy: not one line per file: $(tr '\n' '|' < /tmp/err)"
}
# refused WHAT REGEX CMD...: exit 1 and one line on stderr matching REGEX.
refused() {
	local what=$1 regex=$2 rc
	shift 2
	timeout 20 "$@" > /tmp/out 2> /tmp/err < /dev/null
	rc=$?
	[ $rc = 124 ] && fail "$what: '$*' hung"
	[ $rc = 1 ] || fail "$what: '$*' exited $rc: $(cat /tmp/err /tmp/out | tr '\n' ' ')"
	[ "$(wc -l < /tmp/err)" = 1 ] || fail "$what: not one line: $(tr '\n' '|' < /tmp/err)"
	grep -Eq "^blksnap-storage: [a-z]+: .*$regex" /tmp/err ||
		fail "$what: '$(cat /tmp/err)' does not match '$regex'"
	log "$what: $(cat /tmp/err)"
}

id=$(blksnap-storage create /mnt/o) || fail "create failed"

log "1. foreign files and directories"
mkdir -m 700 /mnt/st/safe
: > /mnt/st/safe/foreign && chown 1000:1000 /mnt/st/safe/foreign && chmod 666 /mnt/st/safe/foreign
refused "file of uid 1000" "owned by uid 1000" \
	blksnap-storage add --snapshot "$id" /mnt/st/safe/foreign 16M
[ "$(stat -c '%u %a %s' /mnt/st/safe/foreign)" = "1000 666 0" ] ||
	fail "the foreign file changed: $(stat -c '%u %a %s' /mnt/st/safe/foreign)"
held /mnt/st/safe/foreign && fail "the foreign file was given to the kernel"
mkdir -m 755 /mnt/st/pub && chown 1000:1000 /mnt/st/pub
refused "directory of uid 1000" "/mnt/st/pub: directory owned by uid 1000" \
	blksnap-storage add --snapshot "$id" /mnt/st/pub/snap.diff 16M
[ -e /mnt/st/pub/snap.diff ] && fail "a file was created in uid 1000's directory"
mkdir -m 700 /mnt/st/d /mnt/st/e
run blksnap-storage add --snapshot "$id" /mnt/st/d/snap.diff 16M > /dev/null
run blksnap-storage add --snapshot "$id" /mnt/st/e/snap.diff 16M > /dev/null
for f in /mnt/st/d/snap.diff /mnt/st/e/snap.diff; do
	[ "$(stat -c '%u %a %h' $f)" = "0 600 1" ] ||
		fail "$f is not root's, mode 0600, one link: $(stat -c '%u %a %h' $f)"
	held $f || fail "$f not held after add"
done
run blksnap-storage take "$id" > /dev/null

log "2. destroy through swapped directories"
mkdir -m 700 /mnt/st/protected /mnt/st/other
echo secret > /mnt/st/protected/snap.diff && chattr +i /mnt/st/protected/snap.diff
echo other > /mnt/st/other/snap.diff && chattr +i /mnt/st/other/snap.diff
mv /mnt/st/d /mnt/st/d.moved && ln -s /mnt/st/protected /mnt/st/d
mv /mnt/st/e /mnt/st/e.moved && mv /mnt/st/other /mnt/st/e
destroyed_with_lines "$id" 2
grep -q '^blksnap-storage: destroy: /mnt/st/d/snap.diff: /mnt/st/d: directory is a symbolic link.*; record forgotten;.*-inum' /tmp/err ||
	fail "destroy: no clear line for the symbolic link: $(tr '\n' '|' < /tmp/err)"
grep -q '^blksnap-storage: destroy: /mnt/st/e/snap.diff: is now another file (device [0-9:]* inode [0-9]*), not the one recorded at add: left as it is; record forgotten;.*-inum' /tmp/err ||
	fail "destroy: no clear line for the other file: $(tr '\n' '|' < /tmp/err)"
immutable /mnt/st/protected/snap.diff && [ "$(cat /mnt/st/protected/snap.diff)" = secret ] ||
	fail "destroy touched root's unrelated protected/snap.diff"
immutable /mnt/st/e/snap.diff && [ "$(cat /mnt/st/e/snap.diff)" = other ] ||
	fail "destroy touched the unrelated file in the swapped directory"
[ -z "$(blksnap-storage list)" ] || fail "records left: $(blksnap-storage list)"
# Put the directories back: the kernel let the real files go.
rm /mnt/st/d && mv /mnt/st/d.moved /mnt/st/d
mv /mnt/st/e /mnt/st/other && mv /mnt/st/e.moved /mnt/st/e
held /mnt/st/d/snap.diff && fail "d/snap.diff still held after destroy"
held /mnt/st/e/snap.diff && fail "e/snap.diff still held after destroy"

log "2b. snapshot's cleanup deletes only its own file"
mkdir -m 700 /mnt/st/t
blksnap-storage snapshot --storage /mnt/st/t/snap.diff --size 16M /mnt/o -- \
	sh -c 'mv /mnt/st/t /mnt/st/t.moved && mkdir -m 700 /mnt/st/t && echo victim > /mnt/st/t/snap.diff' \
	> /tmp/out 2> /tmp/err || fail "snapshot failed: $(tr '\n' '|' < /tmp/err)"
[ "$(cat /mnt/st/t/snap.diff 2>&1)" = victim ] ||
	fail "snapshot's cleanup deleted the file put in its storage file's place"
no_snapshots

log "3. state directory and records"
chattr -i /mnt/st/protected/snap.diff /mnt/st/other/snap.diff
id=$(blksnap-storage create /mnt/o) || fail "create failed"
mkdir -m 777 /mnt/st/s1000 && chown 1000:1000 /mnt/st/s1000
rm -rf /run/blksnap && ln -s /mnt/st/s1000 /run/blksnap
refused "state directory symlink" "/run/blksnap: state directory is a symbolic link" \
	blksnap-storage add --snapshot "$id" /mnt/st/safe/s.diff 16M
[ -e /mnt/st/safe/s.diff ] && fail "add left a file after refusing the state directory"
[ -z "$(ls /mnt/st/s1000)" ] || fail "records written to uid 1000's directory: $(ls /mnt/st/s1000)"
rm /run/blksnap
run blksnap-storage add --snapshot "$id" /mnt/st/safe/s.diff 16M > /dev/null
mv "/run/blksnap/$id/files" /tmp/files.saved
mkfifo -m 600 "/run/blksnap/$id/files"
refused "FIFO record" "/run/blksnap/$id/files: not a regular file" \
	blksnap-storage destroy "$id"
rm "/run/blksnap/$id/files" && mv /tmp/files.saved "/run/blksnap/$id/files"
run blksnap-storage destroy "$id" > /dev/null
held /mnt/st/safe/s.diff && fail "s.diff still held after destroy"
no_snapshots
log "4. a record whose file moved (issue 13 item 6)"
id=$(blksnap-storage create /mnt/o) || fail "create failed"
run blksnap-storage add --snapshot "$id" /mnt/st/safe/m.diff 16M > /dev/null
ino=$(stat -c %i /mnt/st/safe/m.diff)
mv /mnt/st/safe /mnt/st/safe.moved
# On 2cf2299: "/mnt/st/safe/m.diff: unpinned, not deleted", exit 0.
destroyed_with_lines "$id" 1
grep -q "^blksnap-storage: destroy: /mnt/st/safe/m.diff: not found at its recorded path.*-inum $ino" /tmp/err ||
	fail "destroy of a moved file: $(tr '\n' '|' < /tmp/err)"
held /mnt/st/safe.moved/m.diff && fail "the moved file is still held after destroy"
[ -z "$(blksnap-storage list)" ] || fail "records left: $(blksnap-storage list)"
no_snapshots
log "4b. a record whose name now leads to a FIFO or another file (review S1)"
id=$(blksnap-storage create /mnt/o) || fail "create failed"
mkdir -m 700 /mnt/st/g
run blksnap-storage add --snapshot "$id" /mnt/st/g/fifo.diff 16M > /dev/null
run blksnap-storage add --snapshot "$id" /mnt/st/g/other.diff 16M > /dev/null
ino_fifo=$(stat -c %i /mnt/st/g/fifo.diff)
ino_other=$(stat -c %i /mnt/st/g/other.diff)
mv /mnt/st/g /mnt/st/g.moved && mkdir -m 755 /mnt/st/g
mkfifo -m 600 /mnt/st/g/fifo.diff
: > /mnt/st/g/other.diff && chown 1000:1000 /mnt/st/g/other.diff
# exec: the process killed below is the one holding the file open.
( exec 9< /mnt/st/g/other.diff && flock -x 9 && exec sleep 60 ) &
locker=$!
sleep 0.5
start=$(date +%s)
destroyed_with_lines "$id" 2 < /dev/null
took=$(($(date +%s) - start))
kill $locker 2>/dev/null; wait $locker 2>/dev/null
log "destroy: $(tr '\n' '|' < /tmp/err)"
grep -q "^blksnap-storage: destroy: /mnt/st/g/fifo.diff: is now a FIFO, not the file recorded at add: left as it is; record forgotten;.*-inum $ino_fifo" /tmp/err ||
	fail "destroy: no clear line for the FIFO: $(tr '\n' '|' < /tmp/err)"
grep -q "^blksnap-storage: destroy: /mnt/st/g/other.diff: is now another file (device [0-9:]* inode [0-9]*), not the one recorded at add: left as it is; record forgotten;.*-inum $ino_other" /tmp/err ||
	fail "destroy: no clear line for the other file: $(tr '\n' '|' < /tmp/err)"
[ $took -lt 4 ] || fail "destroy waited ${took}s for another user's lock on a file not ours"
[ -z "$(blksnap-storage list)" ] || fail "records left: $(blksnap-storage list)"
[ -p /mnt/st/g/fifo.diff ] && [ "$(stat -c %u /mnt/st/g/other.diff)" = 1000 ] ||
	fail "destroy changed what is at the names now"
rm -r /mnt/st/g /mnt/st/g.moved
no_snapshots
log "5. list output a script can trust (issue 13 item 9)"
id=$(blksnap-storage create /mnt/o) || fail "create failed"
weird=$(printf '/mnt/st/safe.moved/a,b\tc\033d\377e')
run blksnap-storage add --snapshot "$id" "$weird" 16M > /dev/null
# On 2cf2299 the raw comma, tab, ESC and 0xff byte were printed as they are.
blksnap-storage list > /tmp/out || fail "list failed"
[ "$(cut -f3 /tmp/out)" = "$(printf '/mnt/st/safe.moved/a\\x2cb\\tc\\x1bd\377e')" ] ||
	fail "text list: $(cat -v /tmp/out)"
blksnap-storage list --json > /tmp/out || fail "list --json failed"
grep -q '"storage":\["/mnt/st/safe.moved/a,b\\tc\\u001bd\\udcffe"\]' /tmp/out ||
	fail "list --json: $(cat -v /tmp/out)"
LC_ALL=C grep -q "$(printf '\377')" /tmp/out && fail "list --json printed a raw 0xff byte"
run blksnap-storage destroy "$id" > /dev/null
rm "$weird"
no_snapshots
run umount /mnt/o
run umount /mnt/st
exit 0
