#!/bin/bash
# Prove that each fixed seed defect has a test that catches it: for every
# vmtests/seed-defects/NN-name.patch (which puts one defect of the seed
# back into the current driver), build that module out of tree, boot it
# and run the test named in the patch's "Test:" line. The test must FAIL.
# usage: prove-seed-defects.sh KSRC BZIMAGE BLKSNAP_STORAGE BSCTL OUTDIR [NAME...]
set -uo pipefail

ksrc=$1 bzimage=$2 cli=$3 bsctl=$4 out=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
proven=0 unproven=0

for p in "$here"/seed-defects/*.patch; do
	name=$(basename "$p" .patch)
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
		continue
	fi
	test=$(sed -n 's/^Test: //p' "$p")
	dir=$out/$name
	rm -rf "$dir" && mkdir -p "$dir"
	cp -r "$top/kernel/drivers/block/blksnap" "$dir/src"
	if ! patch -s -d "$dir/src" -p1 < "$p" ||
	   ! make -s -C "$ksrc" M="$dir/src" modules > "$dir/build.log" 2>&1; then
		echo "NOT PROVEN $name: the defect does not apply or build (see $dir)"
		unproven=$((unproven + 1))
		continue
	fi
	"$here/mkinitramfs.sh" "$dir/initramfs.cpio.gz" "$dir/src/blksnap.ko" "$cli" "$bsctl"
	if "$here/run.sh" "$bzimage" "$dir/initramfs.cpio.gz" "$dir/vm" "$test" > "$dir/run.log" 2>&1; then
		echo "NOT PROVEN $name: $test passes with the defect"
		unproven=$((unproven + 1))
	else
		echo "PROVEN $name: $(grep -m 1 "^FAIL $test" "$dir/run.log")"
		proven=$((proven + 1))
	fi
done
echo "$proven passed, $unproven failed"
[ "$unproven" -eq 0 ]
