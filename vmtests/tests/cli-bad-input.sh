# Bad input to every blksnap-storage command: missing, extra and malformed
# arguments and options, unknown snapshot IDs, nonexistent paths, files,
# directories and character devices where a block device is needed,
# storage on tmpfs, too much storage, a device in another snapshot, an
# untaken snapshot, a file left pinned by a crash, a stale record of a
# snapshot destroyed behind the tool's back, and the module not loaded. Each call exits 2 (usage)
# or 1 (runtime) as the case demands, prints nothing on stdout and one
# line "blksnap-storage: CMD: ..." on stderr (a usage error adds the
# "Try 'blksnap-storage CMD --help'" hint line). 'snapshot' with a
# COMMAND that does not exist exits 127 (COMMAND's status, as
# documented). Afterwards no snapshot, state record or stray file is left
# and the kernel printed no warning.
# timeout: 240
. /tests/common.sh

U=01234567-89ab-cdef-0123-456789abcdef
cases=0
# bad RC ARGS...: blksnap-storage ARGS gives RC and the one-line message
# of its command ("cbt read" for cbt read, none for an unknown command);
# badn NAME RC ARGS... names the command of the message.
bad() {
	local want=$1 name
	case "$2" in
	cbt) case "$3" in info | read | mark-dirty) name="cbt $3" ;; *) name=cbt ;; esac ;;
	create | add | take | watch | images | list | destroy | snapshot | ranges | version) name=$2 ;;
	*) name=- ;;
	esac
	shift
	badn "$name" "$want" "$@"
}
badn() {
	local name=$1 want=$2 rc l1 prefix hint
	shift 2
	cases=$((cases + 1))
	blksnap-storage "$@" > /tmp/out 2> /tmp/err.all < /dev/null
	rc=$?
	# 'snapshot' logs its watcher's growth on stderr while COMMAND runs.
	if [ "$want" = 127 ]; then
		grep -v '^[0-9-]*T[0-9:]*Z /' /tmp/err.all > /tmp/err
	else
		cp /tmp/err.all /tmp/err
	fi
	[ $rc = "$want" ] || fail "'blksnap-storage $*': exit code $rc, expected $want; stderr: $(head -n 2 /tmp/err | tr '\n' ' ')"
	[ -s /tmp/out ] && fail "'blksnap-storage $*' printed on stdout: $(head -n 2 /tmp/out | tr '\n' ' ')"
	if [ "$name" = - ]; then
		prefix="blksnap-storage: " hint="Try 'blksnap-storage --help' for more information."
	else
		prefix="blksnap-storage: $name: " hint="Try 'blksnap-storage $name --help' for more information."
	fi
	l1=$(head -n 1 /tmp/err)
	case "$l1" in
	"$prefix"?*) ;;
	*) fail "'blksnap-storage $*': message '$l1' does not start with '$prefix'" ;;
	esac
	if [ "$want" = 2 ]; then
		[ "$(wc -l < /tmp/err)" = 2 ] && [ "$(sed -n 2p /tmp/err)" = "$hint" ] ||
			fail "'blksnap-storage $*': not one message and the hint: $(tr '\n' '|' < /tmp/err)"
	else
		[ "$(wc -l < /tmp/err)" = 1 ] ||
			fail "'blksnap-storage $*': $(wc -l < /tmp/err) lines on stderr: $(tr '\n' '|' < /tmp/err)"
	fi
}

storage_fs
mkdir -p /tmp/bi
# Mode 0600: a file readable by others is refused for that reason first.
(umask 077 && echo data > /mnt/st/existing)
echo data > /tmp/bi/tmpfile
# The state directory itself may appear; nothing may be left in it.
snapshot_files() { find /mnt/st /tmp/bi /run -xdev | grep -vx /run/blksnap | sort; }
snapshot_files > /tmp/files.before
free_loop=$(losetup -f) || fail "no free loop device"

# The module is not loaded yet.
for a in "create /dev/vdb" "take $U" "destroy $U" "images $U" "list" \
	"add /mnt/st/f 1M" "watch /mnt/st/f" \
	"snapshot --storage /mnt/st/f --size 1M /dev/vdb -- true"; do
	bad 1 $a
	grep -q '/dev/blksnap: not found (is the blksnap module loaded?)$' /tmp/err ||
		fail "'$a' without the module: $(cat /tmp/err)"
done
bad 1 cbt info

load_module

blksnap-storage > /dev/null 2>&1
[ $? = 2 ] || fail "no arguments: exit code is not 2"
bad 2 frobnicate
bad 2 help frobnicate
bad 2 --frobnicate

bad 2 create
bad 2 create --bogus /dev/vdb
bad 1 create /nonexistent
bad 1 create /etc/passwd
bad 1 create /dev/null
bad 1 create /tmp
bad 1 create /mnt
bad 1 create /dev/vdb /dev/vdb
bad 1 create /dev/vdb /nonexistent
bad 1 create "$free_loop"

for c in take destroy images; do
	bad 2 $c
	bad 2 $c not-a-uuid
	bad 2 $c 01234567-89ab-cdef-0123-456789abcdeg
	bad 2 $c $U $U
	bad 2 $c --bogus $U
	bad 1 $c $U
done
bad 2 images --json
bad 2 list extra
bad 2 list --bogus

bad 2 add
bad 2 add /mnt/st/f
bad 2 add /mnt/st/f 1M extra
bad 2 add /mnt/st/f notasize
bad 2 add /mnt/st/f -5M
bad 2 add /mnt/st/f 1.5M
bad 2 add /mnt/st/f 99999999999999999999T
bad 2 add --snapshot xyz /mnt/st/f 1M
bad 2 add --snapshot /mnt/st/f 1M
bad 2 add --bogus /mnt/st/f 1M
bad 1 add /mnt/st/f 1M
bad 1 add --snapshot $U /mnt/st/f 1M

bad 2 watch
bad 2 watch /mnt/st/a /mnt/st/b
bad 2 watch --step x /mnt/st/f
bad 2 watch --limit 1Q /mnt/st/f
bad 2 watch --snapshot xyz /mnt/st/f
bad 2 watch --json --bogus /mnt/st/f
bad 1 watch /mnt/st/f
bad 1 watch --snapshot $U /mnt/st/f

bad 2 snapshot
bad 2 snapshot --storage /mnt/st/f /dev/vdb -- true
bad 2 snapshot --size 16M /dev/vdb -- true
bad 2 snapshot --storage /mnt/st/f --size 16M /dev/vdb
bad 2 snapshot --storage /mnt/st/f --size 16M -- true
bad 2 snapshot --storage /mnt/st/f --size 16M /dev/vdb --
bad 2 snapshot --storage /mnt/st/f --size x /dev/vdb -- true
bad 2 snapshot --bogus --storage /mnt/st/f --size 16M /dev/vdb -- true
bad 1 snapshot --storage /mnt/st/f --size 16M /nonexistent -- true
bad 1 snapshot --storage /mnt/st/f --size 16M /etc/passwd -- true
bad 1 snapshot --storage /mnt/st/f --size 16M /dev/null -- true
bad 1 snapshot --storage /tmp/bi/f --size 16M /dev/vdb -- true
bad 1 snapshot --storage /nonexistent/f --size 16M /dev/vdb -- true
bad 1 snapshot --storage /mnt/st/existing --size 16M /dev/vdb -- true
bad 1 snapshot --storage /mnt/st/f --size 100T /dev/vdb -- true
bad 127 snapshot --storage /mnt/st/f --size 16M /dev/vdb -- /nonexistent-command

bad 2 cbt
bad 2 cbt frobnicate
bad 2 cbt --bogus info
bad 2 cbt info extra
bad 2 cbt info --raw
bad 2 cbt read
bad 2 cbt read /dev/vdb /dev/vdc
badn cbt 2 cbt read --since 256 /dev/vdb
badn cbt 2 cbt read --since x /dev/vdb
badn cbt 2 cbt read --since -1 /dev/vdb
badn cbt 2 cbt read --generation xyz /dev/vdb
bad 2 cbt read --json /dev/vdb
bad 1 cbt read /nonexistent
bad 1 cbt read /etc/passwd
bad 1 cbt read /dev/vdc
bad 2 cbt mark-dirty
bad 2 cbt mark-dirty /dev/vdb
bad 2 cbt mark-dirty /dev/vdb 5
bad 2 cbt mark-dirty /dev/vdb 0:0
bad 2 cbt mark-dirty /dev/vdb x:8
bad 2 cbt mark-dirty /dev/vdb 0:8:1
bad 2 cbt mark-dirty /dev/vdb 18446744073709551615:2
bad 2 cbt mark-dirty --raw /dev/vdb 0:8
bad 1 cbt mark-dirty /dev/vdc 0:8
bad 1 cbt mark-dirty /nonexistent 0:8
bad 1 cbt mark-dirty /etc/passwd 0:8

bad 2 ranges
bad 2 ranges /mnt/st/a /mnt/st/b
bad 2 ranges --bogus /mnt/st/existing
bad 1 ranges /nonexistent
bad 1 ranges /tmp/bi/tmpfile
bad 1 ranges /dev/null

bad 2 version extra
bad 2 version --bogus

# A created, untaken snapshot of /dev/vdb.
id=$(blksnap-storage create /dev/vdb) || fail "create failed"
bad 1 create /dev/vdb
bad 1 create /dev/vdc /dev/vdb
bad 1 images "$id"
bad 1 take "$id"
blksnap-storage list | grep -q "^$id	created	-$" || fail "a failed take changed the snapshot: $(blksnap-storage list)"
bad 1 cbt read /dev/vdb
bad 1 add --snapshot "$id" /tmp/bi/f 1M
bad 1 add --snapshot "$id" /nonexistent/f 1M
bad 1 add --snapshot "$id" /mnt/st/existing 1M
# Immutable (pinned by an older blksnap-storage, maybe for a live
# snapshot), so the message does not advise freeing it while a snapshot
# exists (on f76c335 it said "'chattr -i' and delete it first" outright).
chattr +i /mnt/st/existing || fail "chattr +i failed"
bad 1 add --snapshot "$id" /mnt/st/existing 1M
grep -q "is immutable or append-only, so whether a snapshot holds it cannot be told: choose another path (a file an older blksnap-storage left pinned is freed with 'chattr -i' once no snapshot exists)$" /tmp/err ||
	fail "wrong message for a pinned file of no snapshot recorded here: $(cat /tmp/err)"
chattr -i /mnt/st/existing || fail "chattr -i failed"
bad 1 add --snapshot "$id" /mnt/st 1M
bad 1 add --snapshot "$id" /dev/null 1M
bad 1 add --snapshot "$id" /mnt/st/f 100T
bad 1 snapshot --storage /mnt/st/f --size 16M /dev/vdb -- true
bad 1 cbt mark-dirty /dev/vdb $(($(sectors /dev/vdb) - 8)):16
[ "$(cat /mnt/st/existing)" = data ] || fail "a refused add changed an existing file"
# A file another blksnap-storage holds (locked) is busy, not a leftover
# (issue 13 item 11: on 2cf2299 "exists and is not storage of this
# snapshot ... delete it first").
# $! must be the process holding the lock, or kill leaves it holding the
# file system busy: the subshell takes the lock on its descriptor and
# becomes the sleep (flock -o's child would outlive a killed flock).
( exec 9>> /mnt/st/existing && /usr/sbin/flock -n 9 && exec sleep 30 ) &
locker=$!
sleep 1
bad 1 add --snapshot "$id" /mnt/st/existing 1M
grep -q "in use by another blksnap-storage process" /tmp/err ||
	fail "a locked file is not reported busy: $(cat /tmp/err)"
kill $locker; wait $locker 2>/dev/null
id2=$(blksnap-storage create /dev/vdc) || fail "create of /dev/vdc failed"
# Several snapshots and no --snapshot: a usage error (exit 1 on 2cf2299).
bad 2 add /mnt/st/f 1M
bad 2 watch /mnt/st/f
run blksnap-storage add --snapshot "$id" /mnt/st/s1 16M > /dev/null
bad 1 add --snapshot "$id2" /mnt/st/s1 16M
run blksnap-storage take "$id"
bad 1 take "$id"
# Destroyed behind the tool's back: the record of s1 is stale, and says so.
bsok destroy "$id" > /dev/null
bad 1 add --snapshot "$id2" /mnt/st/s1 16M
grep -q "snapshot $id, which no longer exists: 'blksnap-storage destroy $id' releases it$" /tmp/err ||
	fail "a stale record is not explained: $(cat /tmp/err)"
run blksnap-storage destroy "$id" > /dev/null
run blksnap-storage destroy "$id2" > /dev/null
rm /mnt/st/s1 || fail "cannot delete /mnt/st/s1"
bad 1 destroy "$id"

# Nothing left behind.
no_snapshots
snapshot_files > /tmp/files.after
cmp -s /tmp/files.before /tmp/files.after ||
	fail "files left or removed: $(diff /tmp/files.before /tmp/files.after | grep '^[-+]/' | tr '\n' ' ')"
note "cli-bad-input: $cases cases"
exit 0
