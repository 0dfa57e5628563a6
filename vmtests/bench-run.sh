#!/bin/bash
# Host side of `make bench`: time the storage-file growth on the host's
# ext4 (build/bench-sfgrow), boot the built kernel once in QEMU with
# bsvm.mode=bench (vmtests/bench.sh runs every guest measurement on the
# same virtual disks), then have vmtests/bench-report.py print the table
# and write OUTDIR/results.json, results.svg and results.md (and
# profile.txt with bench.profile=1).
#
# With BENCH_STOCK_KERNEL and BENCH_STOCK_INITRAMFS (Debian's vmlinuz and
# an initramfs with its modules and the standalone bdev_filter.ko), a
# second boot runs the write section on that kernel: the standalone
# route's rows (keys stock.write.*).
#
# usage: bench-run.sh BZIMAGE INITRAMFS SFGROW OUTDIR
# env:   BENCH_QUICK=1   small sizes, for trying the harness (~5 min)
#        BENCH_ARGS      more guest parameters (bench.NAME=VALUE, see
#                        vmtests/bench.sh), after the defaults
#        BENCH_SCALE     scale origins in GiB (default 16,256,1024)
#        BENCH_HOST_DIR  where the host growth is timed (default /tmp)
#        VM_ACCEL (tcg), VM_MEM (MiB, 2048), VM_CPUS (2)
set -uo pipefail

bzimage=$1 initramfs=$2 sfgrow=$3 outdir=$4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$outdir"
res=$outdir/bench.results
host=$outdir/host.results
disks=$outdir/disks
started=$(date +%s)

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	scale=${BENCH_SCALE:-16}
	args="bench.region=16 bench.rewrite_ios=256 bench.scale=$scale bench.change=1 bench.change_cap=1 bench.lat_rounds=2 bench.bursts=64,128 bench.thresholds=1,64 bench.peakmem=256 bench.deepq_chunks=256"
	wargs="bench.region=16 bench.rewrite_ios=256"
	host_reps=3
else
	scale=${BENCH_SCALE:-16,256,1024}
	args="bench.region=256 bench.rewrite_ios=2048 bench.reps=5 bench.scale=$scale bench.change=1,10 bench.change_cap=1000 bench.lat_rounds=5 bench.bursts=128,256,512,1024 bench.thresholds=1,16,64 bench.peakmem=1024 bench.deepq_chunks=1024"
	wargs="bench.region=256 bench.rewrite_ios=2048 bench.reps=5"
	host_reps=7
fi
configs="bench.configs=none,other_filtered,blksnap_other,blksnap_same,dmsnap"
args="$args $configs ${BENCH_ARGS:-}"
wargs="$wargs $configs bench.sections=write ${BENCH_ARGS:-}"

# --- host: storage file growth on ext4 ------------------------------------------
{
	echo "INFO host.kernel $(uname -r)"
	echo "INFO host.qemu $(qemu-system-x86_64 --version | head -n 1)"
	echo "INFO host.cpus $(nproc)"
	echo "INFO host.load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "INFO host.git $(git -C "$here/.." describe --always --dirty 2>/dev/null)"
	echo "INFO host.date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "INFO param.guest_cmdline $args"
	echo "INFO param.host_size 4G"
} > "$host"
echo "bench: host: blksnap-storage add's growth of 4 GiB vs fallocate, on ${BENCH_HOST_DIR:-/tmp}"
"$sfgrow" "${BENCH_HOST_DIR:-/tmp}" 4G "$host_reps" >> "$host" ||
	echo "ERROR host sfgrow failed" >> "$host"

# --- guest ---------------------------------------------------------------------
# Harness-like disks, plus the scale origins; the scale disks and their
# storage disk turn written zeros into holes, so that copying chunks of a
# sparse origin costs no host disk.
# boot NAME KERNEL INITRAMFS RESULTS SCALE ARGS: one guest, fresh disks.
boot() {
	local name=$1 kernel=$2 initrd=$3 results=$4 sizes=$5 gargs=$6 big gib i img qrc zero
	local -a drives=()
	rm -rf "$disks" && mkdir -p "$disks"
	truncate -s 1G "$disks/vda.img"
	truncate -s 2G "$disks/vdb.img"
	truncate -s 4G "$disks/vdc.img"
	# The scale storage holds 10% of the largest origin (holes on the host).
	big=64
	for gib in ${sizes//,/ }; do [ $((gib * 15 / 100)) -gt $big ] && big=$((gib * 15 / 100)); done
	truncate -s "${big}G" "$disks/vdd.img"
	for img in vda vdb vdc; do
		drives+=(-drive "file=$disks/$img.img,if=virtio,format=raw,cache=unsafe,werror=report,rerror=report")
	done
	zero=detect-zeroes=unmap,discard=unmap
	drives+=(-drive "file=$disks/vdd.img,if=virtio,format=raw,cache=unsafe,werror=report,rerror=report,$zero")
	i=0
	for gib in ${sizes//,/ }; do
		truncate -s "${gib}G" "$disks/scale$i.img"
		drives+=(-drive "file=$disks/scale$i.img,if=virtio,format=raw,cache=unsafe,werror=report,rerror=report,$zero")
		i=$((i + 1))
	done

	: > "$results"
	echo "bench: booting $kernel (guest: $gargs)"
	echo "bench: progress in $results, kernel log in $outdir/$name.console"
	timeout -s KILL "${BENCH_TIMEOUT:-7200}" qemu-system-x86_64 \
		-accel "${VM_ACCEL:-tcg}" -m "${VM_MEM:-2048}" -smp "${VM_CPUS:-2}" \
		-display none -monitor none -no-reboot \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 oops=panic loglevel=6 bsvm.mode=bench $gargs" \
		-serial "file:$outdir/$name.console" \
		-device virtio-serial-pci \
		-chardev "file,id=results,path=$results" \
		-device virtserialport,chardev=results,name=results \
		"${drives[@]}" > "$outdir/$name.qemu" 2>&1
	qrc=$?
	echo "INFO host.$name.disks_used_kib $(du -sk "$disks" | cut -f1)" >> "$host"
	rm -rf "$disks"
	grep -q '^DONE' "$results" ||
		echo "ERROR guest the $name guest did not finish (qemu exit $qrc); see $outdir/$name.console" >> "$host"
}

boot bench "$bzimage" "$initramfs" "$res" "$scale" "$args"
inputs=("$host" "$res")
if [ -n "${BENCH_STOCK_KERNEL:-}" ]; then
	: "${BENCH_STOCK_INITRAMFS:?is needed with BENCH_STOCK_KERNEL}"
	# The same write workloads on Debian's kernel with bdev_filter.ko.
	echo "INFO host.stock_kernel $(basename "$BENCH_STOCK_KERNEL")" >> "$host"
	boot stock "$BENCH_STOCK_KERNEL" "$BENCH_STOCK_INITRAMFS" "$outdir/stock.raw" "" "$wargs"
	# Every key of that run under "stock.", its lines marked as its own.
	sed -E 's/^(BENCH|FIO|INFO) /\1 stock./; s/^(ERROR|LOG) /\1 stock: /; s/^DONE.*/STOCK_DONE/' \
		"$outdir/stock.raw" > "$outdir/stock.results"
	inputs+=("$outdir/stock.results")
fi
elapsed=$(($(date +%s) - started))
echo "INFO host.elapsed_s $elapsed" >> "$host"

python3 "$here/bench-report.py" --out "$outdir" \
	--command "${BENCH_COMMAND:-make bench}" "${inputs[@]}"
