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
	if ! [[ $AUTHOR =~ ^([^\<\>]*[^\<\>\ ])\ \<([^\<\>@\ ]+@[^\<\>@\ ]+)\>$ ]]; then
		echo "make series: AUTHOR='$AUTHOR' is not 'Real Name <address>': give the identity you sign the patches with" >&2
		exit 2
	fi
	name=${BASH_REMATCH[1]} mail=${BASH_REMATCH[2]} signoff=-s
	checkpatch_opts=
elif [ "${UNSIGNED:-0}" = 1 ]; then
	name="unsigned series, for checking only" mail="nobody@invalid" signoff=
	checkpatch_opts=--no-signoff
else
	echo "make series: AUTHOR is required: every patch is signed off by the person who sends it (make series AUTHOR=\"Your Name <you@example.org>\"); 'make series-check' checks an unsigned series" >&2
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
from_v1="Based on the patch with this subject in the blksnap v1 posting by
Sergei Shtepa <sergei.shtepa@veeam.com> (linux-block, 2 November 2022);
the cover letter lists what changed."
new_for_v2="The v1 posting's patch with this subject was not at hand: this one
is written anew for this series, after the design of the rest of the
blksnap v1 posting by Sergei Shtepa <sergei.shtepa@veeam.com>
(linux-block, 2 November 2022)."

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

apply_patch "$top/kernel/patches/0001-block-bdev_filter-enable-block-device-filters.patch" "$from_v1"

commit "block, blksnap: header file of the module interface" \
"The header file contains a set of declarations, structures and control
requests (ioctl) that allows to manage the module from the user space." \
"$from_v1" \
	include/uapi/linux/blksnap.h
commit "block, blksnap: module management interface functions" \
"Implements the control device /dev/blksnap and its ioctls. Every
argument that crosses the ioctl boundary is checked: device numbers,
counts against upper bounds, pointers, and the full ioctl number." \
"$new_for_v2" \
	$drv/ctrl.c $drv/ctrl.h
commit "block, blksnap: init() and exit() functions" \
"Module initialization and release, and the module parameters, which
are checked against their bounds at load time." \
"$new_for_v2" \
	$drv/main.c $drv/params.h $drv/version.h
commit "block, blksnap: interaction with sysfs" \
"The control device exposes the snapshot images' major number and the
module version in sysfs." \
"$new_for_v2" \
	$drv/sysfs.c $drv/sysfs.h
commit "block, blksnap: attaching and detaching the filter and handling bios" \
"The struct tracker handles the bios of a block device: it marks
written blocks in the change tracking map and, while a snapshot is
held, copies the data about to be overwritten to the difference
storage before the write proceeds." \
"$from_v1" \
	$drv/tracker.c $drv/tracker.h
commit "block, blksnap: map of change block tracking" \
"A byte per tracking block holds the number of the snapshot in which
the block last changed." \
"$from_v1" \
	$drv/cbt_map.c $drv/cbt_map.h
commit "block, blksnap: minimum data storage unit of the original block device" \
"The struct chunk describes the unit that is copied to the difference
storage and read back for the snapshot image." \
"$from_v1" \
	$drv/chunk.c $drv/chunk.h
commit "block, blksnap: buffer in memory for the minimum data storage unit" \
"The struct diff_buffer holds the data of a chunk in pages; free buffers
are pooled per device." \
"$new_for_v2" \
	$drv/diff_buffer.c $drv/diff_buffer.h
commit "block, blksnap: functions and structures for performing block I/O operations" \
"Reads and writes chunks with as many bios as a chunk needs. The bios
carry BIO_FILTERED: the filter never intercepts the module's own I/O,
even when the difference storage is on a tracked device." \
"$new_for_v2" \
	$drv/diff_io.c $drv/diff_io.h
commit "block, blksnap: storage for storing difference blocks" \
"The difference storage is a set of sector ranges on block devices; it
can be extended while the snapshot is held and asks for more space with
an event when it runs low." \
"$from_v1" \
	$drv/diff_storage.c $drv/diff_storage.h
commit "block, blksnap: event queue from the difference storage" \
"Events (low free space, corrupted) are queued for user space, which
waits for them with an ioctl." \
"$new_for_v2" \
	$drv/event_queue.c $drv/event_queue.h
commit "block, blksnap: owner of information about overwritten blocks of the original block device" \
"The struct diff_area implements copy-on-write for one original device
and the reads and writes of its snapshot image." \
"$from_v1" \
	$drv/diff_area.c $drv/diff_area.h
commit "block, blksnap: snapshot image block device" \
"A bio-based block device for each original device of a taken
snapshot." \
"$from_v1" \
	$drv/snapimage.c $drv/snapimage.h
commit "block, blksnap: snapshot" \
"A snapshot of a set of block devices: create, append storage, take,
collect, wait for events, destroy." \
"$from_v1" \
	$drv/snapshot.c $drv/snapshot.h

(cd "$top/kernel" && cat patches/0002-*.patch) | sed -n '/^--- a\//,$p' | patch -p1 -s
commit "block, blksnap: Kconfig and Makefile" \
"Allows to build the module and adds it to the drivers/block menu." \
"$new_for_v2" \
	$drv/Kconfig $drv/Makefile
git add -f drivers/block/Kconfig drivers/block/Makefile
git commit -q --amend --no-edit

sed -i 's/^   blk-mq$/   blk-mq\n   blksnap/' Documentation/block/index.rst
grep -q '^   blksnap$' Documentation/block/index.rst || { echo "cannot add blksnap to Documentation/block/index.rst" >&2; exit 1; }
git add -f Documentation/block/index.rst
commit "Documentation, blksnap: document the module" \
"How blksnap works, its ioctl interface, parameters and the block device
filter it uses." \
"$new_for_v2" \
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

echo "  CHECK   scripts/checkpatch.pl --strict"
# Every patch but the cover letter (0000), each once.
./scripts/checkpatch.pl --strict --terse $checkpatch_opts $(ls "$out"/00[0-9][0-9]-*.patch | grep -v '/0000-') \
	> "$out/checkpatch.txt" 2>&1 || true
grep -E 'ERROR|WARNING|CHECK' "$out/checkpatch.txt" || true
errors=$(grep -c 'ERROR' "$out/checkpatch.txt" || true)
echo "  CHECK   $errors errors; full report in $out/checkpatch.txt"
[ "$errors" -eq 0 ]
