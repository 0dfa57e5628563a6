#!/bin/bash
# Write the kernel series as `git format-patch` output: the bdev_filter
# patch, one patch per logical part of the driver, the Kconfig/Makefile
# hooks and the documentation, with a cover letter; then run
# checkpatch --strict on it.
# usage: make-series.sh TARBALL WORKDIR OUTDIR
# env:   AUTHOR="Name <mail>"  the submitter: author and Signed-off-by of
#                              every patch (required, but with UNSIGNED=1)
#        UNSIGNED=1            a series without Signed-off-by, for checking
#                              only (make series-check): never to be sent
set -euo pipefail

tarball=$1 work=$2 out=$3
top=$(cd "$(dirname "$0")/.." && pwd)
drv=drivers/block/blksnap

# The Developer's Certificate of Origin is given by a person, at export:
# the repository holds no identity to sign with.
AUTHOR=${AUTHOR:-}
if [ -n "$AUTHOR" ]; then
	if ! [[ $AUTHOR =~ ^([^\<\>]*[^\<\>\ ])\ \<([^\<\>@\ ]+@[^\<\>@\ .]+(\.[^\<\>@\ .]+)+)\>$ ]]; then
		echo "make series: AUTHOR='$AUTHOR' is not 'Real Name <address>': give the identity you sign the patches with" >&2
		exit 2
	fi
	name=${BASH_REMATCH[1]} mail=${BASH_REMATCH[2]} signoff=-s
	# Addresses that cannot receive mail, and the names of examples.
	if [[ ${mail,,} =~ (@|\.)(example\.(com|org|net)|[^@]*\.example|[^@]*\.invalid|[^@]*\.test|localhost|localdomain)$ ]] ||
	   [[ ${mail,,} =~ @(example|invalid|test|localhost)$ ]] ||
	   [[ ${name,,} =~ ^(your name|test person|real name|name|john doe|jane doe)$ ]]; then
		echo "make series: AUTHOR='$AUTHOR' is an example or an address that receives no mail: sign off with your own name and address" >&2
		exit 2
	fi
	checkpatch_opts=
elif [ "${UNSIGNED:-0}" = 1 ]; then
	name="unsigned series, for checking only" mail="nobody@invalid" signoff=
	checkpatch_opts=--no-signoff
else
	echo "make series: AUTHOR is required: every patch is signed off by the person who sends it (make series AUTHOR=\"Real Name <address>\"); 'make series-check' checks an unsigned series" >&2
	exit 2
fi

rm -rf "$work" "$out"
mkdir -p "$work" "$out"
echo "  SERIES  extracting a pristine tree into $work"
tar -xf "$tarball" -C "$work" --strip-components=1
cd "$work"
export GIT_AUTHOR_NAME="$name" GIT_AUTHOR_EMAIL="$mail"
export GIT_COMMITTER_NAME="$name" GIT_COMMITTER_EMAIL="$mail"
git init -q .
git add -f -A . >/dev/null
git commit -q -m "Linux 6.1 (Debian linux-source-6.1)"
git tag base

# Credit for the patches that started from the v1 posting's code, and a
# plain statement for those whose v1 patch was not at hand.
v1="the blksnap v1 posting by Sergei Shtepa <sergei.shtepa@veeam.com>
(linux-block, 2 November 2022)"
# from_v1 'NN/17 "SUBJECT"' [...]: the v1 patches this one is based on.
from_v1() {
	local what=$1
	[ $# -eq 1 ] || what="$1 and $2"
	printf 'Based on v1 %s of %s; the cover letter lists what changed.' \
		"$what" "$v1" | fmt -w 72
}
# new_for_v2 'NN/17 "SUBJECT"' [...]: the v1 patches not at hand.
new_for_v2() {
	local what=$1 was=was
	[ $# -eq 1 ] || what="$1 and $2" was=were
	printf 'Written anew for this series: v1 %s %s not at hand. After the design of the rest of %s.' \
		"$what" "$was" "$v1" | fmt -w 72
}

# apply_patch FILE CREDIT: a kernel/patches file (Subject, message, diff)
# as one commit of ours.
apply_patch() {
	local f=$1 credit=$2 subject body
	subject=$(sed -n 's/^Subject: \[PATCH\] //p' "$f" | head -n 1)
	body=$(awk 'h && /^---$/ { exit } h { print } /^$/ && !h { h = 1 }' "$f")
	git apply --index "$f"
	git commit -q $signoff -m "$subject" -m "$body" -m "$credit"
}

# commit SUBJECT BODY CREDIT FILE...: add the files from the project and commit.
commit() {
	local subject=$1 body=$2 credit=$3 f
	shift 3
	for f in "$@"; do
		mkdir -p "$(dirname "$f")"
		cp "$top/kernel/$f" "$f"
		git add -f "$f"
	done
	git commit -q $signoff -m "$subject" -m "$body" -m "$credit"
}

# Makefile for the driver files committed so far: the project's Makefile
# without the objects whose sources are not in the tree yet, so that each
# patch builds what it adds (make series-check builds every step).
staged_makefile() {
	local o
	while IFS= read -r line; do
		if [[ $line =~ ^[[:space:]]+([a-z_]+)\.o ]]; then
			o=${BASH_REMATCH[1]}
			[ -f "$drv/$o.c" ] || continue
		fi
		printf '%s\n' "$line"
	done < "$top/kernel/$drv/Makefile" |
		# the last object listed ends the list: no continuation
		awk '{ l[NR] = $0 } END { for (i = 1; i <= NR; i++) {
			if (l[i] ~ /^[ \t]+[a-z_]+\.o \\$/ && l[i + 1] !~ /^[ \t]+[a-z_]+\.o/)
				sub(/ \\$/, "", l[i])
			print l[i] } }'
}

# driver SUBJECT BODY CREDIT FILE...: add driver files and the Makefile
# lines that build them.
driver() {
	local f
	for f in "${@:4}"; do
		mkdir -p "$(dirname "$f")"
		cp "$top/kernel/$f" "$f"
	done
	staged_makefile > "$drv/Makefile"
	git add -f "$drv/Makefile"
	commit "$@"
}

tested="Tested in QEMU (x86_64, TCG; Linux 6.1 with this series, and a debug
build with KASAN, lockdep and fault injection) by the blksnap project's
VM tests"

apply_patch "$top/kernel/patches/0001-block-bdev_filter-enable-block-device-filters.patch" \
	"$(from_v1 '01/17 "block, bdev_filter: enable block device filters"')"

commit "block, blksnap: header file of the module interface" \
"The control device /dev/blksnap takes these ioctls: the version, change
block tracking (collect the tracked devices, read a device's change map,
mark ranges dirty), and the life of a snapshot (create it for a set of
devices, append difference storage as sector ranges, take it, list its
images, wait for its events, destroy it).

The structures are those of the v1 posting, unchanged, so that its user
space keeps working; the cover letter lists their known problems.

Tested: the header compiles on its own in user space (make headers, then
gcc -fsyntax-only -Wall on an #include of it), and the blksnap project's
user space tool is built against it; in QEMU by ioctl-version,
ioctl-bad-pointers and ioctl-fuzz." \
"$(from_v1 '02/17 "block, blksnap: header file of the module interface"')" \
	include/uapi/linux/blksnap.h

# From here on the driver builds at every patch: Kconfig and Makefile come
# first, and each patch adds what it needs of the files before it.
mkdir -p $drv
cp "$top/kernel/$drv/Kconfig" $drv/Kconfig
(cd "$top/kernel" && cat patches/0002-*.patch) | sed -n '/^--- a\//,$p' | patch -p1 -s
git add -f $drv/Kconfig drivers/block/Kconfig drivers/block/Makefile
driver "block, blksnap: Kconfig, Makefile and module parameters" \
"Add the driver to drivers/block, with the module's identity and its
parameters, so that every following patch builds its part into
blksnap.ko as it adds it.

The parameters size the chunk (the unit of copy-on-write) and the change
tracking block from the size of each device: the smallest power of two
above a minimum that keeps their count under a maximum. They bound the
chunk buffers kept in memory, say when the difference storage asks user
space for more (diff_storage_minimum) and how long copy-on-write waits
for it before the snapshot is given up (diff_storage_wait_seconds).
They are read-only once loaded, and params_check() refuses to load the
module with a value out of its bounds instead of running with it.

$tested: modinfo shows each parameter with its bounds and default;
loading with one out of bounds fails with -EINVAL and a message naming
it (module-load-unload)." \
"$(new_for_v2 '16/17 "block, blksnap: Kconfig and Makefile"' '17/17 "block, blksnap: adds a blksnap to the kernel tree"')" \
	$drv/params.c $drv/params.h $drv/version.h
driver "block, blksnap: event queue from the difference storage" \
"Events for user space: the difference storage is running low (with the
number of sectors it asks for), and the snapshot is corrupted (with the
device and the error). Each snapshot has one queue, which
IOCTL_BLK_SNAP_SNAPSHOT_WAIT_EVENT waits on with a timeout. The events
are raised on the copy-on-write path, so the caller passes the
allocation flags it may use. Closing the queue wakes every waiter at
once: a thread waiting for the events of a destroyed snapshot learns at
once that it is gone (-ESRCH) instead of sleeping out its timeout.

$tested: v1-event-flow, low-space-event-with-large-storage,
wait-event-returns-on-destroy." \
"$(new_for_v2 '12/17 "lock, blksnap: event queue from the difference storage"')" \
	$drv/event_queue.c $drv/event_queue.h
driver "block, blksnap: map of change block tracking" \
"A byte per tracking block holds the number of the snapshot in which the
block last changed: a backup tool compares it with the number of the
snapshot it last backed up to copy only the blocks changed since. Writes
mark the write map; taking a snapshot switches to a new number and
copies it to the read map that user space reads, so that a read sees
one consistent state. The maps are in virtual memory (two bytes per
tracking block, at most 4 MiB per device by default). When the numbers
run out (255 snapshots) or the device changes size, the map starts a new
generation, which tells user space that a full backup is needed. A
reset that cannot allocate keeps the old maps, marked corrupted, instead
of leaving none.

$tested: cbt-raw-writes-tracked-exactly, cbt-read-offset-and-bounds,
cbt-mark-dirty-exact, cbt-255-snapshots-new-generation,
cbt-resize-new-generation, cbt-block-size-grows-by-one-shift, and the
file-level checks cbt-ext4-file-writes-tracked and
cbt-xfs-file-writes-tracked." \
"$(from_v1 '07/17 "block, blksnap: map of change block tracking"')" \
	$drv/cbt_map.c $drv/cbt_map.h
driver "block, blksnap: buffer in memory for the minimum data storage unit" \
"A struct diff_buffer holds the data of one chunk in pages. Each device
has a pool of buffers: a reserve allocated at take, which lets a copy go
on when no memory can be had, and free buffers kept for reuse (at most
free_diff_buffer_pool_size, and half of buffer_memory_maximum_mb), which
saves allocations on a write-heavy device. As kcopyd takes its pages, a
buffer comes from the pool, else from an allocation that does not retry
reclaim, else the owner is asked to empty its cache and the taker waits
for a buffer in use to come back. A shrinker frees the free buffers
down to the reserve and has the owners empty their caches. A buffer
taken for a write that must not wait (REQ_NOWAIT) comes from the pool or
from an allocation that does not sleep, or not at all.

The pages carry a marker in their private field. A write of a chunk to
the difference storage that a stacked device clones (an LV or md array
on a snapshotted disk) loses BIO_FILTERED on the way down, but its pages
are still ours: the filter must not copy it on write into the storage
itself, which would wait for itself when the region lies in the chunk
being stored.

$tested: storage-on-dm-over-snapshotted-disk,
nowait-writes-wait-for-their-copy." \
"$(new_for_v2 '09/17 "lock, blksnap: buffer in memory for the minimum data storage unit"')" \
	$drv/diff_buffer.c $drv/diff_buffer.h
driver "block, blksnap: functions and structures for performing block I/O operations" \
"Reads and writes a chunk with as many bios as it takes (a chunk may be
larger than one bio can carry), synchronously or with a completion run
from a work queue. A struct diff_io is part of what it serves (a chunk,
or a sync reader's stack): starting a copy allocates only its bios, from
a bio_set. The bios carry BIO_FILTERED: the filter never
intercepts the module's own I/O, even when the difference storage is on
a tracked device. A bio that may not wait is allocated without sleeping,
and only when the chunk fits in one bio.

The module's workqueues are made here: writeback that frees memory may
wait for a copy, so the work copy-on-write goes on with runs on
WQ_MEM_RECLAIM queues of its own (blksnap_io for the completions,
blksnap for the release of cached chunks and the wait for storage), not
on the system workqueues.

$tested: chunk-larger-than-one-bio, storage-on-the-snapshotted-device,
storage-io-error-corrupts-only-snapshot-ext4 and -xfs,
copy-on-write-work-is-reclaim-safe." \
"$(new_for_v2 '10/17 "block, blksnap: functions and structures for performing block I/O operations"')" \
	$drv/diff_io.c $drv/diff_io.h
driver "block, blksnap: storage for storing difference blocks" \
"The difference storage is a set of sector ranges on block devices, given
by user space (typically the blocks of a preallocated file), shared by
all the devices of a snapshot. Ranges are checked when they are
appended: aligned to the storage device's logical block size, inside the
device, not overlapping each other or ranges given before; an append is
all or nothing. Storage can be appended while the snapshot is held.

When less than diff_storage_minimum sectors are left, a low free space
event asks user space for more, as in v1 also at creation, for the first
storage. When the storage runs out, copy-on-write does not fail at once:
the chunks that found no room wait, up to diff_storage_wait_seconds, for
an append (as dm-thin's no_space_timeout), and writers that would need
more storage wait before starting new copies. Only then is the snapshot
marked corrupted; the original devices are never affected.

$tested: append-storage-validation, v1-event-flow,
burst-waits-for-storage-growth, destroy-ends-wait-for-storage,
overflow-corrupts-only-image-ext4 and -xfs, image-reads-from-4k-storage,
and the autogrow tests (storage grown by user space while files are
written on the snapshotted file system)." \
"$(from_v1 '11/17 "block, blksnap: storage for storing difference blocks"')" \
	$drv/diff_storage.c $drv/diff_storage.h
driver "block, blksnap: copy-on-write of chunks, the diff area" \
"A struct diff_area holds the copy-on-write state of one original device
of a taken snapshot; a struct chunk is the unit it copies: read from the
original device, stored in the difference storage, read back for the
snapshot image. The v1 posting added these in two patches; they call
each other, so they come together here to build.

Chunk descriptors are allocated when a chunk is first copied, not all at
take: taking a snapshot of a 256 GiB device allocates kilobytes instead
of more than 100 MiB. A descriptor lives only while its chunk is in use;
a stored chunk that is idle is freed, and the place of its data is kept
as a record in an xarray slot per 64 chunks, so that a changed chunk
costs less memory than a dm-snapshot exception. A write waits, not
interruptibly, until every chunk it overlaps is read: a killed writer
must not cost the snapshot, since its write reaches the device anyway.
Copies run in batches of at most 4 MiB of chunks, so that one
WRITE_ZEROES of a whole disk needs bounded memory; discards are
completed without reaching the device while a snapshot is held (nothing
to copy, nothing lost). Chunks whose data is in memory are cached up to
chunk_maximum_in_cache (and a quarter of buffer_memory_maximum_mb each)
and released by a work item. Descriptors come from a mempool per device
with a reserve of one batch, and a stored chunk's place is part of its
descriptor: a copy does not fail for want of memory. Any failure marks
the snapshot corrupted and lets the original write go on.

$tested: consistency-storage-on-same-fs and -other-fs (ext4, xfs),
copy-on-write-survives-killed-writers,
write-zeroes-copied-in-bounded-batches, discard-while-held-costs-nothing,
multi-device-snapshot-consistent,
idle-snapshot-memory-independent-of-origin-size,
changed-chunk-memory-at-most-dm-snapshots,
take-survives-failed-allocations (each allocation of a take failed in
turn, on the debug kernel), copy-on-write-survives-starved-submitter
(every allocation of the writer failing, on the debug kernel),
swap-on-snapshotted-fs-under-memory-pressure." \
"$(from_v1 '08/17 "block, blksnap: minimum data storage unit of the original block device"' '13/17 "block, blksnap: owner of information about overwritten blocks of the original block device"')" \
	$drv/chunk.c $drv/chunk.h $drv/diff_area.c $drv/diff_area.h
driver "block, blksnap: attaching and detaching the filter and handling bios" \
"A struct tracker is the bdev_filter of one tracked device. It marks the
blocks that every write changes in the change tracking map and, while a
snapshot is held, has the diff area copy the chunks a write overlaps
before the write goes on. Writes flagged REQ_NOWAIT are not made to
wait: they fail with -EAGAIN when their copy would have to. A device
can be in one snapshot at a time, and removing a tracker claims it the
way creating a snapshot does, so that the two cannot race into a
snapshot whose tracker is gone. A tracked disk sees the writes to its
partitions.

$tested: partition-and-whole-disk-writes-are-copied,
dm-linear-writes-are-copied, tracker-remove-races-snapshot-create,
nowait-writes-wait-for-their-copy, rmmod-after-tracked-disk-unplugged,
origin-grows-while-snapshot-held." \
"$(from_v1 '06/17 "block, blksnap: attaching and detaching the filter and handling a bios"')" \
	$drv/tracker.c $drv/tracker.h
driver "block, blksnap: snapshot image block device" \
"A bio-based block device /dev/blksnap-imageN shows each original device
of a taken snapshot as it was at take. A read of a chunk that was never
copied is remapped to the original device, one of a copied chunk to its
place in the difference storage, in the reader's context (as
dm-snapshot remaps). A run of up to 16 chunks whose data lies one after
another on one device is sent as one bio. A copy-on-write waits for the
image reads of the original device it overlaps, not for those of the
difference storage; storing a chunk again waits for every read of it. A
chunk is copied out of its buffer only when the buffer is newer than its
place, its place is not known yet, or the storage has larger logical
blocks than the image. The image takes its queue limits from both the
original and the storage devices, so that a remapped read is valid on
either. Writes to
the image (a file system replaying its journal at mount) are kept in the
difference storage and never reach the original device. Reads of a
corrupted snapshot fail with -EIO.

$tested: image-reads-race-origin-writes, destroy-while-image-read,
image-reads-span-chunks-in-one-request,
origin-writes-do-not-wait-for-storage-reads, image-reads-from-4k-storage,
image-queue-limits-follow-origin, image-writes-stay-in-image-ext4 and
-xfs." \
"$(from_v1 '14/17 "block, blksnap: snapshot image block device"')" \
	$drv/snapimage.c $drv/snapimage.h
driver "block, blksnap: snapshot" \
"A struct snapshot combines a set of original devices, their images and
one difference storage. Creating one attaches trackers to devices that
have none, takes the devices into the snapshot and raises the first low
free space event; taking it freezes the file systems on the devices and
their partitions, switches the change tracking maps and creates the
images, all or nothing; destroying it releases everything, wakes the
threads that wait for its events, and ends the copies that wait for
storage. There may be several snapshots at a time, of different
devices.

$tested: snapshot-collect-lists-created,
take-freezes-partitions-of-whole-disk,
take-with-empty-storage-fails-cleanly,
take-not-stalled-by-another-snapshots-copy,
create-survives-failed-allocations, crash-with-held-snapshot-ext4 and
-xfs." \
"$(from_v1 '15/17 "block, blksnap: snapshot"')" \
	$drv/snapshot.c $drv/snapshot.h
driver "block, blksnap: interaction with sysfs" \
"The control device shows two read-only attributes in
/sys/class/misc/blksnap/: the major number of the snapshot images, so
that a tool can tell an image from an original device, and the module
version. Documentation/ABI/testing/sysfs-class-misc-blksnap describes
them.

$tested: module-load-unload (reads major), ioctl-version (reads
version)." \
"$(new_for_v2 '05/17 "block, blksnap: interaction with sysfs"')" \
	$drv/sysfs.c $drv/sysfs.h Documentation/ABI/testing/sysfs-class-misc-blksnap
driver "block, blksnap: module management interface functions" \
"The control device /dev/blksnap (CAP_SYS_ADMIN) and its ioctls. Every
argument that crosses the ioctl boundary is checked before use: device
numbers against what a dev_t can hold, array counts against upper bounds
(256 devices, 262144 ranges per call), user pointers, and the full ioctl
number, so that a call built for another structure size is refused.

$tested: create-validation, append-storage-validation,
collect-reports-bad-buffers, ioctl-bad-pointers, ioctl-version,
mark-dirty-image-validation, and ioctl-fuzz (100,000 calls with random
numbers, sizes and pointers, on the debug kernel with KASAN)." \
"$(new_for_v2 '03/17 "block, blksnap: module management interface functions"')" \
	$drv/ctrl.c $drv/ctrl.h
driver "block, blksnap: init() and exit() functions" \
"Module initialization and release: the parameters are checked first,
then the I/O bio_set and the module's two WQ_MEM_RECLAIM workqueues
(diff_io_init()), the trackers, the image block device major and the
control device, unwound in reverse on failure. Unloading destroys
every snapshot and detaches every filter; an original device unplugged
while tracked does not keep rmmod waiting.

$tested: module-load-unload, module-unload-with-held-snapshot-ext4 and
-xfs, rmmod-after-tracked-disk-unplugged." \
"$(new_for_v2 '04/17 "block, blksnap: init() and exit() functions"')" \
	$drv/main.c
cmp -s $drv/Makefile "$top/kernel/$drv/Makefile" || { echo "make series: the staged Makefile does not end as kernel/$drv/Makefile" >&2; exit 1; }

sed -i 's/^   blk-mq$/   blk-mq\n   blksnap/' Documentation/block/index.rst
grep -q '^   blksnap$' Documentation/block/index.rst || { echo "cannot add blksnap to Documentation/block/index.rst" >&2; exit 1; }
git add -f Documentation/block/index.rst
commit "Documentation, blksnap: document the module" \
"How blksnap works, its ioctl interface, parameters and the block device
filter it uses; the lock order of the driver; and what user space of the
v1 posting can notice of the changes since.

Checked with docutils (rst2pseudoxml --halt=warning: no warning) and
scripts/spdxcheck.py; the parameters, lock names and limits it gives are
those of the code in this series." \
"New in this series: the v1 posting had no documentation." \
	Documentation/block/blksnap.rst

git format-patch -q --cover-letter --subject-prefix="PATCH v2" -o "$out" base..HEAD
cover=$(ls "$out"/0000-*.patch)
python3 - "$cover" "$top/kernel/series/cover-letter.txt" <<'PY'
import sys
cover, text = sys.argv[1], open(sys.argv[2]).read()
subject, _, blurb = text.partition("\n\n")
s = open(cover).read()
s = s.replace("*** SUBJECT HERE ***", subject.strip()).replace("*** BLURB HERE ***", blurb.strip())
open(cover, "w").write(s)
PY
echo "  SERIES  $(ls "$out"/*.patch | wc -l) files in $out"

echo "  CHECK   Documentation/block/blksnap.rst with docutils"
rst2pseudoxml --halt=warning --report=warning Documentation/block/blksnap.rst > /dev/null

echo "  CHECK   scripts/checkpatch.pl --strict"
# Every patch but the cover letter (0000), each once. Debian's python3
# first: its SPDX check needs python3-ply and python3-git, which another
# python3 on the PATH (pyenv's) does not have.
PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --terse $checkpatch_opts $(ls "$out"/00[0-9][0-9]-*.patch | grep -v '/0000-') \
	> "$out/checkpatch.txt" 2>&1 || true
grep -E 'ERROR|WARNING|CHECK|Traceback' "$out/checkpatch.txt" || true
errors=$(grep -c 'ERROR' "$out/checkpatch.txt" || true)
# The only warning expected: new files without a MAINTAINERS entry, which
# the maintainers decide. A python failure means the SPDX tags went
# unchecked.
others=$(grep -E 'WARNING|CHECK|Traceback|Died|Can.t locate' "$out/checkpatch.txt" | grep -vc 'does MAINTAINERS need updating' || true)
# The patches that add files get that warning: without it, checkpatch
# did not run through.
grep -q 'does MAINTAINERS need updating' "$out/checkpatch.txt" ||
	{ echo "make series: checkpatch printed nothing: see $out/checkpatch.txt" >&2; exit 1; }
echo "  CHECK   $errors errors, $others warnings other than MAINTAINERS; full report in $out/checkpatch.txt"
[ "$errors" -eq 0 ] && [ "$others" -eq 0 ]
