#!/bin/bash
# Host side of `make demo`: boot the built kernel in QEMU with
# bsvm.mode=demo; the guest (vmtests/demo.sh) prints its transcript on
# the virtio-serial port "results", which lands in OUTDIR/transcript.txt
# and is streamed to this terminal as it grows. Kernel messages go to
# OUTDIR/console.log, not to the terminal.
#
# Exit status 0 only if the guest ends with "DEMO RESULT: backup matched",
# the VM finished within the time limit and the kernel printed no
# warning, BUG or oops.
#
# usage: demo-run.sh BZIMAGE INITRAMFS OUTDIR
# env:   DEMO_TIMEOUT (seconds, default 1200), DEMO_KEEP_DISKS=1 to keep
#        the disk images, VM_ACCEL (tcg), VM_MEM (MiB, 2048), VM_CPUS (2)
set -uo pipefail

bzimage=$1 initramfs=$2 outdir=$3
tmo=${DEMO_TIMEOUT:-1200}
bad_pattern='BUG:|WARNING:|Oops|KASAN|UBSAN|possible circular|possible recursive|inconsistent lock|blocked for more than|general protection|Kernel panic|Call Trace'
out=$outdir/transcript.txt
con=$outdir/console.log
disks=$outdir/disks
started=$(date +%s)

mkdir -p "$outdir"
rm -rf "$disks" && mkdir -p "$disks"
# The disks are sparse; what the guest writes (5 GiB of it is the
# workload's new data) takes about 7 GiB here until the end.
avail=$(df -Pk "$disks" | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$avail" -lt 8 ]; then
	echo "demo: needs 8 GiB free for the VM's disks in $disks, has $avail GiB" >&2
	exit 1
fi
# The guest's root disk: sparse, large enough for 4 GiB of storage and
# its growth. Written zeros become holes (the copied-on-write blocks of
# never-used space are zeros), so that the host pays only for real data.
truncate -s 16G "$disks/root.img"
truncate -s 4G "$disks/backup.img"
zero=detect-zeroes=unmap,discard=unmap
: > "$out"
: > "$con"

echo "demo: booting $bzimage in QEMU (${VM_ACCEL:-tcg}, ${VM_CPUS:-2} vCPUs, ${VM_MEM:-2048} MiB),"
echo "demo: a 16 GiB root disk and a 4 GiB backup disk; kernel log in $con"
echo "demo: the guest's transcript follows (time limit ${tmo}s)"
echo
# (In a subshell: the shell's "Killed" notice goes to qemu.log.)
(timeout -s KILL "$tmo" qemu-system-x86_64 \
	-accel "${VM_ACCEL:-tcg}" -m "${VM_MEM:-2048}" -smp "${VM_CPUS:-2}" \
	-display none -monitor none -no-reboot \
	-kernel "$bzimage" -initrd "$initramfs" \
	-append "console=ttyS0 panic=-1 oops=panic loglevel=6 bsvm.mode=demo" \
	-serial "file:$con" \
	-device virtio-serial-pci \
	-chardev "file,id=results,path=$out" \
	-device virtserialport,chardev=results,name=results \
	-drive "file=$disks/root.img,if=virtio,format=raw,cache=unsafe,werror=report,rerror=report,$zero" \
	-drive "file=$disks/backup.img,if=virtio,format=raw,cache=unsafe,werror=report,rerror=report,$zero") \
	> "$outdir/qemu.log" 2>&1 &
qpid=$!
# Stream the transcript while QEMU runs; tail ends after QEMU does. The
# guest's result line is printed last, below, with the time taken.
tail -s 0.5 -n +1 -f --pid=$qpid "$out" | grep -av --line-buffered -e '^DONE$' -e '^DEMO RESULT:'
wait $qpid
qrc=$?
elapsed=$(($(date +%s) - started))
[ "${DEMO_KEEP_DISKS:-0}" = 1 ] || rm -rf "$disks"

res=$(grep -a '^DEMO RESULT:' "$out" | tail -n 1)
why=
bad=$(grep -aE "$bad_pattern" "$con" | head -n 1 | sed 's/^\[[ 0-9.]*\] //')
if [ $qrc -eq 137 ]; then
	why="the VM did not finish within ${tmo}s and was killed"
elif ! grep -aq '^DONE' "$out"; then
	why="the VM stopped before the demo ended (qemu exit $qrc)"
fi
if [ -n "$bad" ]; then
	why="${why:+$why; }the kernel reported: $bad"
fi
echo "demo: transcript in $out, kernel log in $con"
took="$((elapsed / 60)) min $((elapsed % 60)) s"
if [ -n "$why" ]; then
	echo "DEMO RESULT: FAILED after $took: $why${res:+ (the guest said: ${res#DEMO RESULT: })}"
	exit 1
fi
case "$res" in
"DEMO RESULT: backup matched"*)
	echo "$res; $took"
	;;
"")
	echo "DEMO RESULT: FAILED after $took: the guest gave no result"
	exit 1
	;;
*)
	echo "$res"
	exit 1
	;;
esac
