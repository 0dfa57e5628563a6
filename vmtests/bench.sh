# Guest side of `make bench`: run by the guest init for bsvm.mode=bench.
# Measures, on the harness disks and with fio as the load, what a held
# snapshot costs: blksnap (storage on another disk / on the origin's own
# filesystem) against no snapshot and against dm-snapshot (transient,
# same chunk size; same storage disk but for the read section), the
# peak kernel memory of both with 8 MiB chunks, and their write IOPS at
# queue depth (libaio) on a raw origin. Prints nothing to judge: every raw
# figure goes to the host on the "results" virtio port, one a line:
#   BENCH key value        a number (seconds, KiB, counts)
#   FIO key {json}         fio's --output-format=json, on one line
#   INFO key text          versions and parameters
#   LOG text               progress;  ERROR section text: a section failed
#   PROFILE key text       a line of a perf profile (bench.profile=1)
# vmtests/bench-report.py turns them into the table, JSON and chart (and
# profile.txt).
#
# Disks (sparse; made by vmtests/bench-run.sh): vda 1G (another disk for
# the write section, blksnap's storage file system in the read one), vdb 2G
# origin, vdc 4G storage, vdd (64G or 15% of the largest scale origin)
# storage of the scale section (zero writes become holes), vde.. the scale origins (bench.scale sizes).
# Parameters on the kernel command line (defaults in brackets):
#   bench.sections=write,read,scale,growth,peakmem,deepq   bench.region=MiB [128]
#   bench.reps=N [1]   bench.rewrite_ios=N [2048]   bench.scale=GiB,.. [16]
#   bench.read_loops=N interleaved passes of each read figure [4]
#   bench.change=PCT,.. [1,10]   bench.change_cap=GiB of copy-on-write
#   per step [4]   bench.lat_rounds=N [3]   bench.bursts=MiB,.. [128,256,512]
#   bench.thresholds=MiB,.. [1,64]
#   bench.peakmem=MiB of the origin the peak-memory writes touch, one
#   per 8 MiB chunk [1024]
#   bench.deepq_chunks=N never-copied 256 KiB chunks each deep-queue row
#   writes to, a multiple of 4 [1024]
#   bench.configs=NAME,.. of the write section [none,blksnap_other,blksnap_same,dmsnap]
#   bench.profile=1: after the read figures, each kind of read again,
#   READ_LOOPS passes in one fio run, under `perf record -a` (needs perf
#   in the initramfs: make bench BENCH_PROFILE=1); its flat profile goes
#   to the host as PROFILE lines
#   bench.steer=0: leave the disks' interrupt lines where the guest put
#   them in the read section (the reader still takes turns on two CPUs,
#   and the report gives blksnap/dm per reader CPU): the placement
#   effect that steering removes, measured [1]
. /tests/common.sh

port=/dev/console
for p in /sys/class/virtio-ports/*; do
	[ "$(cat "$p/name" 2>/dev/null)" = results ] && port=/dev/$(basename "$p")
done

# --- parameters --------------------------------------------------------------
SECTIONS=write,read,scale,growth,peakmem,deepq REGION=128 REPS=1 REWRITE_IOS=2048 SCALE=16
CHANGE=1,10 CHANGE_CAP=4 LAT_ROUNDS=3 BURSTS=128,256,512 THRESHOLDS=1,64
CONFIGS=none,blksnap_other,blksnap_same,dmsnap READ_LOOPS=4 PROFILE=0 STEER=1
PEAKMEM=1024 DEEPQ_CHUNKS=1024
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	bench.sections=*) SECTIONS=${arg#*=} ;;
	bench.region=*) REGION=${arg#*=} ;;
	bench.reps=*) REPS=${arg#*=} ;;
	bench.rewrite_ios=*) REWRITE_IOS=${arg#*=} ;;
	bench.scale=*) SCALE=${arg#*=} ;;
	bench.change=*) CHANGE=${arg#*=} ;;
	bench.change_cap=*) CHANGE_CAP=${arg#*=} ;;
	bench.lat_rounds=*) LAT_ROUNDS=${arg#*=} ;;
	bench.bursts=*) BURSTS=${arg#*=} ;;
	bench.thresholds=*) THRESHOLDS=${arg#*=} ;;
	bench.configs=*) CONFIGS=${arg#*=} ;;
	bench.read_loops=*) READ_LOOPS=${arg#*=} ;;
	bench.profile=*) PROFILE=${arg#*=} ;;
	bench.steer=*) STEER=${arg#*=} ;;
	bench.peakmem=*) PEAKMEM=${arg#*=} ;;
	bench.deepq_chunks=*) DEEPQ_CHUNKS=${arg#*=} ;;
	esac
done
CHUNK=262144		# blksnap's default chunk (chunk_minimum_shift=18)
ORIG=/dev/vdb
STOR=/dev/vdc
SCALE_STOR=/dev/vdd
MiB=1048576

# --- reporting ---------------------------------------------------------------
out() { echo "$*" > "$port"; }
val() { out "BENCH $1 $2"; }
info() { out "INFO $*"; }
progress() {
	out "LOG $*"
	echo "bench: $*" > /dev/kmsg
}

# now: wall clock in seconds with microseconds (busybox ts).
now() { echo | ts '%.s' | cut -d' ' -f1; }
# since T0: seconds from T0 to now.
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.6f", b - a }'; }

# mem KEY: kernel memory after dropping caches (KiB): MemFree, Slab
# (all of SLOB's kmalloc), VmallocUsed, and the page cache left.
mem() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
	awk -v k="$1" '
		$1 == "MemFree:" { f = $2 } $1 == "Slab:" { s = $2 }
		$1 == "VmallocUsed:" { v = $2 } $1 == "Cached:" { c = $2 }
		END { printf "BENCH %s.memfree_kb %d\nBENCH %s.slab_kb %d\nBENCH %s.vmalloc_kb %d\nBENCH %s.cached_kb %d\n", k, f, k, s, k, v, k, c }
	' /proc/meminfo > "$port"
}

# counters_start / counters_end KEY: /proc/diskstats and CPU deltas of
# what ran in between, for every device that moved (KEY.disk.DEV.FIELD:
# ios, sectors and ms per direction, busy_ms = time with I/O in flight,
# queue_ms = the sum of every I/O's time, so queue_ms / busy_ms is the
# mean number of I/Os in flight while busy), and the CPU time
# (KEY.cpu.FIELD, in USER_HZ ticks).
counters_start() {
	cat /proc/diskstats > /tmp/ds0
	head -n 1 /proc/stat > /tmp/cpu0
}
counters_end() {
	cat /proc/diskstats > /tmp/ds1
	head -n 1 /proc/stat > /tmp/cpu1
	awk -v k="$1" '
		FNR == NR { for (i = 4; i <= NF; i++) a[$3, i] = $i; next }
		$3 ~ /^(vd|dm-|blksnap|loop)/ {
			r = $4 - a[$3, 4]; rs = $6 - a[$3, 6]; rt = $7 - a[$3, 7]
			w = $8 - a[$3, 8]; ws = $10 - a[$3, 10]; wt = $11 - a[$3, 11]
			busy = $13 - a[$3, 13]; queue = $14 - a[$3, 14]
			if (r + w == 0) next
			printf "BENCH %s.disk.%s.r_ios %d\nBENCH %s.disk.%s.r_sectors %d\nBENCH %s.disk.%s.r_ms %d\n", k, $3, r, k, $3, rs, k, $3, rt
			printf "BENCH %s.disk.%s.w_ios %d\nBENCH %s.disk.%s.w_sectors %d\nBENCH %s.disk.%s.w_ms %d\n", k, $3, w, k, $3, ws, k, $3, wt
			printf "BENCH %s.disk.%s.busy_ms %d\nBENCH %s.disk.%s.queue_ms %d\n", k, $3, busy, k, $3, queue
		}' /tmp/ds0 /tmp/ds1 > "$port"
	awk -v k="$1" 'FNR == NR { split($0, a); next } {
		printf "BENCH %s.cpu.user %d\nBENCH %s.cpu.sys %d\nBENCH %s.cpu.idle %d\nBENCH %s.cpu.iowait %d\nBENCH %s.cpu.irq %d\n",
			k, $2 + $3 - a[2] - a[3], k, $4 - a[4], k, $5 - a[5], k, $6 - a[6], k, $7 + $8 - a[7] - a[8] }' \
		/tmp/cpu0 /tmp/cpu1 > "$port"
}

# fio_run KEY FIO-ARGS...: one fio job (psync, direct unless told), its
# JSON to the host, with the counters around it. Fails the section if fio
# does.
fio_run() {
	local key=$1
	shift
	counters_start
	fio --name="$key" --ioengine=psync --direct=1 --output-format=json \
		--output=/tmp/fio.json "$@" > /tmp/fio.err 2>&1 ||
		fail "fio $key failed: $(tail -n 3 /tmp/fio.err /tmp/fio.json | tr '\n' ' ')"
	counters_end "$key"
	out "FIO $key $(tr -d '\n\t' < /tmp/fio.json)"
}

# timed KEY CMD...: run CMD, report its wall time as KEY (seconds).
timed() {
	local key=$1 t0 rc
	shift
	t0=$(now)
	"$@" > /tmp/timed.out 2>&1
	rc=$?
	val "$key" "$(since "$t0")"
	[ $rc = 0 ] || fail "'$*' failed: $(tail -n 3 /tmp/timed.out | tr '\n' ' ')" >&2
	cat /tmp/timed.out
}

list() { echo "$1" | tr ',' ' '; }

dm_remove() {
	local n
	for n in "$@"; do
		dmsetup remove --noudevsync "$n" > /dev/null 2>&1 ||
			{ sleep 1; run dmsetup remove --noudevsync "$n"; }
	done
}

# dm_take ORIGIN_DM DEV COW CHUNK_SECTORS: a transient dm-snapshot "bs" of
# DEV, taken the way LVM does it: the origin device is suspended (its file
# system frozen) while the snapshot table is loaded.
dm_take() {
	run dmsetup suspend --noudevsync "$1"
	dm_create bs "0 $(sectors "$2") snapshot $2 $3 N $4"
	run dmsetup resume --noudevsync "$1"
}

# chunk_bytes CAPACITY_BYTES: blksnap's chunk for a device with the default
# parameters (chunk_minimum_shift 18, chunk_maximum_count 2097152).
chunk_bytes() {
	local c=$CHUNK
	while [ $(($1 / c)) -gt 2097152 ]; do c=$((c * 2)); done
	echo $c
}

# --- write cost on the origin --------------------------------------------------
# The origin is ext4 on vdb; the load is a 2 x REGION MiB file written in
# full before (so that O_DIRECT overwrites touch no metadata). Every
# configuration runs the same three jobs on a fresh snapshot:
#   rand4k_new      one 4 KiB write in each chunk of the first region,
#                   in a shuffled order (a fio replay log): every write
#                   copies a chunk first
#   rand4k_rewrite  REWRITE_IOS random 4 KiB writes in that region: every
#                   chunk is copied already
#   seq1m_new       1 MiB sequential writes over the second region
# none = no snapshot; blksnap_other = storage file on xfs on vdc;
# blksnap_same = storage file next to the load on the origin's ext4;
# dmsnap = ext4 on a snapshot-origin of vdb, transient snapshot with
# vdc as its COW device, 256 KiB chunks; other_filtered = no snapshot of
# vdb, but one created of vda: what a filter on another disk costs every
# write (on a stock kernel, bdev_filter.ko's hook is then installed).
w_setup_none() { :; }
w_teardown_none() { :; }

w_setup_other_filtered() {
	W_ID=$(blksnap-storage create /dev/vda) || fail "create of vda failed"
}
w_teardown_other_filtered() {
	run blksnap-storage destroy "$W_ID" > /dev/null
	w_untrack
}

# A destroyed snapshot leaves its devices tracked (CBT goes on, and on a
# stock kernel bdev_filter's hook stays installed): reload the module so
# that the next configuration starts with no filter anywhere.
w_untrack() {
	unload_module
	load_module
}

w_setup_blksnap_other() {
	mkfs_of xfs $STOR
	mkdir -p /mnt/st && run mount $STOR /mnt/st
	W_ID=$(blksnap-storage create $ORIG) || fail "create failed"
	run blksnap-storage add --snapshot "$W_ID" /mnt/st/diff $((2 * REGION + 64))M > /dev/null
	timed "$1.take_s" blksnap-storage take "$W_ID" > /dev/null
}
w_teardown_blksnap_other() {
	run blksnap-storage destroy "$W_ID" > /dev/null
	rm -f /mnt/st/diff
	run umount /mnt/st
	w_untrack
}

w_setup_blksnap_same() {
	W_ID=$(blksnap-storage create $ORIG) || fail "create failed"
	run blksnap-storage add --snapshot "$W_ID" /mnt/o/diff $((2 * REGION + 64))M > /dev/null
	timed "$1.take_s" blksnap-storage take "$W_ID" > /dev/null
}
w_teardown_blksnap_same() {
	run blksnap-storage destroy "$W_ID" > /dev/null
	rm -f /mnt/o/diff || fail "cannot delete /mnt/o/diff"
	w_untrack
}

w_setup_dmsnap() {
	run umount /mnt/o
	dm_create bo "0 $(sectors $ORIG) snapshot-origin $ORIG"
	run mount -o noatime,lazytime /dev/mapper/bo /mnt/o
	timed "$1.take_s" dm_take bo $ORIG $STOR $((CHUNK / 512))
}
w_teardown_dmsnap() {
	run umount /mnt/o
	dm_remove bs bo
	run mount -o noatime,lazytime $ORIG /mnt/o
}

section_write() {
	local n rep cfg k cfgs count
	load_module
	mkfs_of ext4 $ORIG
	mkdir -p /mnt/o && run mount -o noatime,lazytime $ORIG /mnt/o
	fio_run write.fill --filename=/mnt/o/bench.dat --rw=write --bs=1M --size=$((2 * REGION))M
	sync
	n=$((REGION * MiB / CHUNK))
	{
		echo "fio version 2 iolog"
		echo "/mnt/o/bench.dat add"
		echo "/mnt/o/bench.dat open"
		seq 0 $((n - 1)) | shuf | awk -v c=$CHUNK '{ print "/mnt/o/bench.dat write", $1 * c, 4096 }'
		echo "/mnt/o/bench.dat close"
	} > /tmp/rand_new.iolog
	val write.chunks_per_region "$n"
	rep=1
	while [ $rep -le "$REPS" ]; do
		# A different order each time, so that drift of the host's load
		# does not always favour the same configuration.
		cfgs=$(list "$CONFIGS")
		count=$(echo $cfgs | wc -w)
		case " $cfgs " in *" none "*) ;; *) fail "bench.configs=$CONFIGS: 'none' (the baseline) is needed" ;; esac
		for cfg in $(echo $cfgs $cfgs |
				cut -d' ' -f$(((rep - 1) % count + 1))-$(((rep - 1) % count + count))); do
			k=write.$cfg.r$rep
			progress "write cost: $cfg (rep $rep)"
			w_setup_$cfg "$k"
			fio_run "$k.rand4k_new" --read_iolog=/tmp/rand_new.iolog --replay_no_stall=1
			fio_run "$k.rand4k_rewrite" --filename=/mnt/o/bench.dat --rw=randwrite --bs=4k \
				--offset=0 --size=${REGION}M --io_size=$((REWRITE_IOS * 4))k
			fio_run "$k.seq1m_new" --filename=/mnt/o/bench.dat --rw=write --bs=1M \
				--offset=${REGION}M --size=${REGION}M
			w_teardown_$cfg
		done
		rep=$((rep + 1))
	done
	run umount /mnt/o
}

# --- image read speed ------------------------------------------------------------
# Raw vdb: region U (first REGION MiB) is never written after the take,
# region C (the next REGION MiB) is overwritten in full (every chunk
# copied). Both snapshots are held at once: blksnap's of vdb with its
# storage file on xfs on vda, and dm-snapshot's (same chunk size, COW on
# vdc) through a snapshot-origin of vdb; region C is overwritten through
# that origin, so both copy the same chunks and read back the same data.
# Then sequential 1 MiB reads of both regions, O_DIRECT and buffered
# (readahead), of the origin, blksnap's image and dm's snapshot device,
# in single passes, interleaved: for each figure, READ_LOOPS rounds of
# one pass of the origin, then one of each snapshot, the order of the two
# snapshots swapped from one round to the next (ABBA) and the first one
# swapped from one figure and repetition to the next. The host's speed
# drifts by +-20% over seconds: when each snapshot read its region
# READ_LOOPS times in one go (0.7 s), blksnap's and dm's figure of the
# same repetition differed by up to 1.5x either way, and the median of 5
# landed on either side of 1.0 from one run to the next. A pass of 256 MiB
# lasts 0.1-0.15 s direct and about 0.3 s buffered under TCG; the report
# adds up the passes of a figure.
# All three devices get the image's read-ahead (blksnap sets
# io_opt to its chunk, so its default is twice the chunk, dm's 128 KiB),
# so that buffered reads compare the drivers, not their defaults.
# Where a read's completion runs is fixed too. The test kernel has no
# PCI MSI: the virtio disks share IO-APIC lines, which the guest spreads
# over its CPUs (in the runs of 159f731's day: vda's and vdb's line on
# CPU 1, vdc's on CPU 0). In one run (3 repetitions) that read the storage
# file's sectors on vda and dm's COW area on vdc raw, no snapshot driver
# in the way, with fio pinned to either CPU: buffered 1 MiB reads were
# 11-12% faster with the disk's interrupt on the CPU other than the
# reader's, direct ones 14-23% faster with it on the reader's. blksnap's
# changed data comes from vda and dm's from vdc, so an unpinned reader
# measured that placement along with the drivers (changed data came out
# at 1.13 of dm direct and 0.96 buffered, unchanged data, vdb for both,
# at 1.15 and 1.01). A bench.steer=0 run of 81006ca showed it for direct
# reads of changed data (0.79-0.92 of dm in every repetition with the
# reader on vdc's CPU, 1.07-1.32 on vda's), not for buffered ones (1.04
# and 1.01): what gave the buffered 0.96 is not shown. So for this section every
# IO-APIC virtio line is steered to one CPU, and the reader runs on that
# CPU in half the passes and on another in the other half, two passes at
# a time (read_cpu): each round reads the three devices with the same
# placement, with READ_LOOPS a multiple of 4 every order of the two
# snapshots meets both placements, and the report gives blksnap/dm for
# each placement too. bench.steer=0 leaves the lines where the guest put
# them (read.disk_irqs says where) and the report gives blksnap/dm per
# reader CPU: the effect itself. One CPU: the reader shares it. More
# than two: the others stay idle but for the guest's own work.
# What still differs: blksnap's changed data is read from a file on xfs
# on vda, dm's from its own COW disk vdc (the same kind of virtio disk;
# the file's extents need not start on a chunk boundary: in one run,
# reading vdc 40 KiB off its chunk boundary went as fast as on it); dm's
# reads of unchanged data pass blksnap's filter on vdb (a lookup that
# finds no snapshot bio to copy). The storage file takes REGION + 64 MiB
# of the 1 GiB vda: bench.region up to 850.
# Each pass drops the page cache first (drop_caches, and fio's
# invalidate=1): a buffered pass reads the device. fio rounds a job's
# runtime up to the millisecond: 0.3% of a 256 MiB pass, the same for
# every device.
# read_cpu REP PASS: the reader's CPU for that pass: the completions' CPU
# and another in turns of two passes, starting with the other in even
# repetitions, so that the ABBA order (which turns every pass) meets
# both CPUs alike.
read_cpu() {
	if [ $((($2 - 1) / 2 % 2)) = $(($1 % 2)) ]; then
		echo "$OTHER_CPU"
	else
		echo "$COMPLETION_CPU"
	fi
}

# read_pass NAME DEV DATA MODE REP PASS: one pass, key
# read.NAME.DATA.MODE.rREP.pPASS, with .reader_cpu, the CPU its reader
# ran on (read_cpu), and, when the lines were steered, .on_completion_cpu
# 1 or 0.
read_pass() {
	local direct=0 offset=0 cpu
	[ "$4" = direct ] && direct=1
	[ "$3" = changed ] && offset=$REGION
	cpu=$(read_cpu "$5" "$6")
	sync
	echo 3 > /proc/sys/vm/drop_caches
	fio_run "read.$1.$3.$4.r$5.p$6" --filename="$2" --rw=read --bs=1M \
		--offset=${offset}M --size=${REGION}M --direct=$direct \
		--invalidate=1 --cpus_allowed="$cpu"
	val "read.$1.$3.$4.r$5.p$6.reader_cpu" "$cpu"
	# Not steered, or one CPU: no placement to report.
	[ "$STEERED" = 1 ] && [ "$COMPLETION_CPU" != "$OTHER_CPU" ] || return 0
	if [ "$cpu" = "$COMPLETION_CPU" ]; then
		val "read.$1.$3.$4.r$5.p$6.on_completion_cpu" 1
	else
		val "read.$1.$3.$4.r$5.p$6.on_completion_cpu" 0
	fi
}

# The virtio disks' IO-APIC lines (a kernel with MSI has per-queue
# vectors that it places itself: none).
virtio_irqs() {
	awk -F: '/IO-APIC.*virtio/ { gsub(/ /, "", $1); print $1 }' /proc/interrupts
}

# disk_irqs: each virtio disk, its interrupt line and the line's CPU
# (vda:10:1 ...), so that a run says which disks shared a CPU.
disk_irqs() {
	local dev v irq out=
	for dev in /sys/block/vd?; do
		v=$(basename "$(readlink -f "$dev/device")")
		irq=$(awk -F: -v v="$v" '$0 ~ ("[ ,]" v "(,|$)") { gsub(/ /, "", $1); print $1; exit }' /proc/interrupts)
		[ -n "$irq" ] || irq=none
		out="$out $(basename "$dev"):$irq:$(cat /proc/irq/$irq/effective_affinity_list 2> /dev/null || echo -)"
	done
	echo "${out# }"
}

irq_cpus() {
	local irq out=
	for irq in $(virtio_irqs); do
		out="$out $irq:$(cat /proc/irq/$irq/effective_affinity_list)"
	done
	echo "${out# }"
}

# irqs_fire: one interrupt on each line, which is when an IO-APIC line
# moves to its new CPU: a read of each virtio disk.
irqs_fire() {
	local dev
	for dev in /dev/vd?; do
		dd if="$dev" of=/dev/null bs=4096 count=1 iflag=direct 2> /dev/null ||
			return 1
	done
}

# irqs_settle WANT: the lines on the CPUs WANT says (irq:cpu ...), after
# a few rounds of interrupts (a move may wait for the previous one).
irqs_settle() {
	local round=0
	while [ "$(irq_cpus)" != "$1" ]; do
		round=$((round + 1))
		[ $round -le 10 ] || return 1
		irqs_fire || return 1
		sleep 1
	done
}

# read_steer_irqs: every virtio line to COMPLETION_CPU, until the section
# ends (read_restore_irqs, from its EXIT trap: the later sections run
# with the lines where the guest put them).
read_steer_irqs() {
	local irq want=
	SAVED_MASKS= SAVED_CPUS=$(irq_cpus) STEERED=0
	if [ "$STEER" = 0 ]; then
		info read.completion_cpu "not steered (bench.steer=0; IRQ:CPU $SAVED_CPUS)"
		return 0
	fi
	if [ -z "$SAVED_CPUS" ]; then
		info read.completion_cpu "not steered (no IO-APIC virtio line)"
		return 0
	fi
	trap read_restore_irqs EXIT
	for irq in $(virtio_irqs); do
		SAVED_MASKS="$SAVED_MASKS $irq:$(cat /proc/irq/$irq/smp_affinity_list)"
		echo "$COMPLETION_CPU" > /proc/irq/$irq/smp_affinity_list ||
			fail "cannot steer IRQ $irq to CPU $COMPLETION_CPU"
		want="$want $irq:$COMPLETION_CPU"
	done
	irqs_settle "${want# }" ||
		fail "virtio IRQs still on CPUs '$(irq_cpus)', not all on $COMPLETION_CPU"
	STEERED=1
	info read.completion_cpu "$COMPLETION_CPU (IRQ:CPU before: $SAVED_CPUS)"
	if [ "$COMPLETION_CPU" = "$OTHER_CPU" ]; then
		info read.reader_cpus "$COMPLETION_CPU (one CPU)"
	else
		info read.reader_cpus "$COMPLETION_CPU and $OTHER_CPU, two passes each in turn"
	fi
}

# read_restore_irqs: each line back on its CPU (a line stays where it is
# when its new mask still holds that CPU), then its mask.
read_restore_irqs() {
	local saved
	for saved in $SAVED_CPUS; do
		echo "${saved#*:}" > "/proc/irq/${saved%%:*}/smp_affinity_list"
	done
	# The later sections would run with every disk on one CPU: say so.
	irqs_settle "$SAVED_CPUS" ||
		out "ERROR read virtio IRQs on CPUs '$(irq_cpus)', not back on '$SAVED_CPUS'"
	for saved in $SAVED_MASKS; do
		echo "${saved#*:}" > "/proc/irq/${saved%%:*}/smp_affinity_list"
	done
	info read.irqs_after "$(irq_cpus)"
}

# read_reps IMAGE: REPS repetitions of every figure.
read_reps() {
	local rep=1 mode data fig=0 pass
	while [ $rep -le "$REPS" ]; do
		for mode in direct buffered; do
			for data in unchanged changed; do
				fig=$((fig + 1))
				pass=1
				while [ $pass -le "$READ_LOOPS" ]; do
					read_pass origin $ORIG $data $mode $rep $pass
					if [ $(((fig + rep + pass) % 2)) = 1 ]; then
						read_pass blksnap_image "$1" $data $mode $rep $pass
						read_pass dm_snap /dev/mapper/bs $data $mode $rep $pass
					else
						read_pass dm_snap /dev/mapper/bs $data $mode $rep $pass
						read_pass blksnap_image "$1" $data $mode $rep $pass
					fi
					pass=$((pass + 1))
				done
			done
		done
		rep=$((rep + 1))
	done
}

# read_profile NAME DEV DATA MODE: the read of a figure again, READ_LOOPS
# passes in one fio run, under perf (the cpu-clock of every CPU, the
# guest kernel's symbols; fio's start-up included); its symbols above
# 0.05% to the host, a line each (blksnap's own are 0.1-0.7% of a read):
#   PROFILE read.NAME.DATA.MODE  PERCENT  [k]|[.]  SYMBOL  DSO
# The figures themselves are never measured under perf. The reader runs
# on OTHER_CPU: when the lines are steered and there are two CPUs, the
# one without the disks' interrupts, one of the placements the figures
# measure (the profile adds up both CPUs).
read_profile() {
	local direct=0 offset=0 key="read.$1.$3.$4"
	[ "$4" = direct ] && direct=1
	[ "$3" = changed ] && offset=$REGION
	sync
	echo 3 > /proc/sys/vm/drop_caches
	perf record -q -N -a -e cpu-clock -F 997 -o /tmp/perf.data -- \
		fio --name="$key" --ioengine=psync --filename="$2" --rw=read --bs=1M \
		--offset=${offset}M --size=${REGION}M --direct=$direct \
		--loops=$READ_LOOPS --invalidate=1 --cpus_allowed="$OTHER_CPU" > /tmp/perf.out 2>&1 ||
		fail "perf record of $key failed: $(tail -n 3 /tmp/perf.out | tr '\n' ' ')"
	perf report -i /tmp/perf.data --stdio --no-children --sort sym,dso \
		--percent-limit 0.05 > /tmp/perf.report 2> /tmp/perf.out
	awk -v k="$key" '/^ *[0-9.]+%/ { $1 = $1; print "PROFILE " k " " $0 }' \
		/tmp/perf.report > /tmp/perf.lines
	[ -s /tmp/perf.lines ] ||
		fail "perf report of $key gave no profile: $(tail -n 3 /tmp/perf.out | tr '\n' ' ')"
	cat /tmp/perf.lines > "$port"
}

section_read() {
	local id img ra orig_ra mode data
	if [ "$PROFILE" = 1 ] && ! command -v perf > /dev/null; then
		fail "bench.profile=1 needs perf in the initramfs (make bench BENCH_PROFILE=1)"
	fi
	load_module
	fio_run read.fill --filename=$ORIG --rw=write --bs=1M --size=$((2 * REGION))M
	mkfs_of xfs /dev/vda
	mkdir -p /mnt/st && run mount /dev/vda /mnt/st

	progress "image read: blksnap and dm-snapshot, alternately"
	id=$(blksnap-storage create $ORIG) || fail "create failed"
	run blksnap-storage add --snapshot "$id" /mnt/st/diff $((REGION + 64))M > /dev/null
	run blksnap-storage take "$id" > /dev/null
	img=$(blksnap-storage images "$id" | awk '{ print $2 }')
	[ -b "$img" ] || fail "no image for $ORIG: '$img'"
	dm_create bo "0 $(sectors $ORIG) snapshot-origin $ORIG"
	dm_take bo $ORIG $STOR $((CHUNK / 512))
	fio_run read.overwrite --filename=/dev/mapper/bo --rw=write --bs=1M --offset=${REGION}M --size=${REGION}M
	cmp -s -n $((2 * REGION * 1048576)) "$img" /dev/mapper/bs ||
		fail "blksnap's image and dm's snapshot do not read the same"
	ra=$(blockdev --getra "$img")
	orig_ra=$(blockdev --getra $ORIG)
	info read.read_ahead_default "origin $orig_ra image $ra dm $(blockdev --getra /dev/mapper/bs) (sectors)"
	run blockdev --setra "$ra" $ORIG
	run blockdev --setra "$ra" /dev/mapper/bs
	info read.read_ahead_sectors "$ra"
	COMPLETION_CPU=0 OTHER_CPU=0
	[ "$(nproc)" -ge 2 ] && COMPLETION_CPU=1
	info read.disk_irqs "$(disk_irqs)"
	read_steer_irqs
	read_reps "$img"
	if [ "$PROFILE" = 1 ]; then
		progress "image read: profiles"
		for mode in direct buffered; do
			for data in unchanged changed; do
				read_profile origin $ORIG $data $mode
				read_profile blksnap_image "$img" $data $mode
				read_profile dm_snap /dev/mapper/bs $data $mode
			done
		done
	fi
	run blockdev --setra "$orig_ra" $ORIG
	dm_remove bs bo
	run blksnap-storage destroy "$id" > /dev/null
	rm -f /mnt/st/diff
	run umount /mnt/st
}

# --- scale: memory and take time on big sparse origins ------------------------
# For each size: memory before create, after create + add, after take,
# after writing 4 KiB (zeros) in every (100/PCT)th chunk for each PCT
# (cumulative), after destroy and (blksnap) after rmmod; the time of
# create, take and destroy.
# A step is skipped (reported as such) if it would copy more than
# CHANGE_CAP GiB. Zero writes and zero chunk copies become holes on the
# host (detect-zeroes=unmap), so they cost no host disk.
scale_changes() {
	local tool=$1 gib=$2 dev=$3 chunk=$4 pct stride count
	for pct in $(list "$CHANGE"); do
		stride=$((100 / pct * chunk))
		count=$(((gib * 1073741824 + stride - 1) / stride))
		if [ $((count * chunk / 1073741824)) -ge "$CHANGE_CAP" ]; then
			val "scale.$tool.${gib}g.change$pct.skipped_copy_gib" $((count * chunk / 1073741824))
			continue
		fi
		progress "scale: $tool ${gib} GiB, $pct% of the chunks"
		fio_run "scale.$tool.${gib}g.change$pct" --filename="$dev" --rw=write:$((stride - 4096)) \
			--bs=4k --size=${gib}G --number_ios="$count" --zero_buffers
		val "scale.$tool.${gib}g.change$pct.chunks" "$count"
		mem "scale.$tool.${gib}g.mem.change$pct"
	done
}

scale_blksnap() {
	local gib=$1 dev=$2 chunk id need
	chunk=$(chunk_bytes $((gib * 1073741824)))
	val "scale.blksnap.${gib}g.chunk_bytes" "$chunk"
	val "scale.blksnap.${gib}g.chunks" $((gib * 1073741824 / chunk))
	# Storage for the largest step that is not skipped, plus 256 MiB.
	need=256
	for pct in $(list "$CHANGE"); do
		c=$((gib * 1073741824 / (100 / pct * chunk) + 1))
		[ $((c * chunk / 1073741824)) -lt "$CHANGE_CAP" ] && need=$((c * chunk / MiB + 256))
	done
	progress "scale: blksnap ${gib} GiB (chunk $chunk)"
	mem "scale.blksnap.${gib}g.mem.before"
	id=$(timed "scale.blksnap.${gib}g.create_s" blksnap-storage create "$dev") || exit 1
	run blksnap-storage add --snapshot "$id" /mnt/sc/diff ${need}M > /dev/null
	mem "scale.blksnap.${gib}g.mem.created"
	timed "scale.blksnap.${gib}g.take_s" blksnap-storage take "$id" > /dev/null
	mem "scale.blksnap.${gib}g.mem.taken"
	scale_changes blksnap "$gib" "$dev" "$chunk"
	timed "scale.blksnap.${gib}g.destroy_s" blksnap-storage destroy "$id" > /dev/null
	rm -f /mnt/sc/diff
	# Slab falls only a moment after a big destroy returns: let it settle.
	sleep 2
	mem "scale.blksnap.${gib}g.mem.destroyed"
	# The tracker (and its CBT map) stays until the module goes.
	unload_module
	mem "scale.blksnap.${gib}g.mem.unloaded"
	load_module
}

scale_dm() {
	local gib=$1 dev=$2 chunk
	chunk=$(chunk_bytes $((gib * 1073741824)))
	val "scale.dm.${gib}g.chunk_bytes" "$chunk"
	progress "scale: dm-snapshot ${gib} GiB (chunk $chunk)"
	mem "scale.dm.${gib}g.mem.before"
	timed "scale.dm.${gib}g.create_s" dm_create bo "0 $(sectors "$dev") snapshot-origin $dev" > /dev/null
	mem "scale.dm.${gib}g.mem.created"
	timed "scale.dm.${gib}g.take_s" dm_take bo "$dev" $SCALE_STOR $((chunk / 512)) > /dev/null
	mem "scale.dm.${gib}g.mem.taken"
	scale_changes dm "$gib" /dev/mapper/bo "$chunk"
	timed "scale.dm.${gib}g.destroy_s" dm_remove bs bo > /dev/null
	sleep 2
	mem "scale.dm.${gib}g.mem.destroyed"
}

section_scale() {
	local gib i letters=efghijklmnop dev
	load_module
	mkfs_of xfs $SCALE_STOR
	mkdir -p /mnt/sc && run mount $SCALE_STOR /mnt/sc
	i=1
	for gib in $(list "$SCALE"); do
		dev=/dev/vd$(echo $letters | cut -c$i)
		[ "$(sectors "$dev")" = $((gib * 2097152)) ] ||
			fail "$dev is not $gib GiB: $(sectors "$dev") sectors"
		scale_blksnap "$gib" "$dev"
		i=$((i + 1))
	done
	run umount /mnt/sc
	i=1
	for gib in $(list "$SCALE"); do
		scale_dm "$gib" /dev/vd$(echo $letters | cut -c$i)
		i=$((i + 1))
	done
}

# --- peak kernel memory with large chunks ----------------------------------------
# Raw vdb (2 GiB) is the origin, raw vdc its storage (blksnap: the whole
# disk as one range, no file system; dm-snapshot: its transient COW
# device), 8 MiB chunks for both: blksnap loaded with
# chunk_minimum_shift=23 (and the default buffer_memory_maximum_mb),
# dm-snapshot given a chunk of 16384 sectors. The load: one 4 KiB O_DIRECT
# write (fio psync, QD1) at a random 4 KiB slot of each 8 MiB chunk of
# the first PEAKMEM MiB, the chunks in a shuffled order (a fio replay
# log, the same offsets for both): every chunk is copied once, PEAKMEM
# MiB in all. Kernel memory is sampled every 0.1 s while the writes run,
# and its peak set against the figure before create (after dropping
# caches; blksnap's module already loaded, dm-snapshot is built in). In
# each repetition blksnap and dm-snapshot run once, their order swapped
# from one repetition to the next (ABBA). The module is reloaded around
# each of blksnap's runs, so that its pools start empty; afterwards it
# is loaded again with the defaults, as the other sections expect.
PEAKMEM_SHIFT=23
PEAKMEM_CHUNK=$((1 << PEAKMEM_SHIFT))

# pm_meminfo [STOP]: kernel memory from /proc/meminfo, in KiB, as lines
# "NAME VALUE":
#   kernel  MemTotal - MemFree - Buffers - Cached - AnonPages - PageTables:
#           every page that is neither free, nor page cache, nor a
#           process's own: slab, vmalloc, kernel stacks, per-CPU data and
#           the pages drivers allocate for themselves (blksnap's chunk
#           buffers, dm-kcopyd's pages), which no other field counts. The
#           writer's memory (anonymous, shmem in Cached, its page tables)
#           and the page cache its binary fills are left out.
#   slabvm  Slab + VmallocUsed (what the scale section counts)
#   avail   MemAvailable (what the VM test buffer-memory-bounded-with-
#           large-chunks counts; it also falls with the writer's memory)
# With STOP, samples every 0.1 s until the file STOP exists, then once
# more, and prints the largest kernel and slabvm, the smallest avail,
# and how many samples (samples).
pm_meminfo() {
	awk -v stop="${1:-}" '
		function sample(   l, a, m, k, s) {
			while ((getline l < "/proc/meminfo") > 0) {
				split(l, a, /:? +/)
				m[a[1]] = a[2]
			}
			close("/proc/meminfo")
			k = m["MemTotal"] - m["MemFree"] - m["Buffers"] - m["Cached"] - m["AnonPages"] - m["PageTables"]
			s = m["Slab"] + m["VmallocUsed"]
			if (n == 0 || k > kernel) kernel = k
			if (n == 0 || s > slabvm) slabvm = s
			if (n == 0 || m["MemAvailable"] < avail) avail = m["MemAvailable"]
			n++
		}
		BEGIN {
			sample()
			if (stop != "") {
				for (;;) {
					done = (getline x < stop) >= 0
					close(stop)
					if (done)
						break
					system("sleep 0.1")
					sample()
				}
				sample()
			}
			printf "kernel %d\nslabvm %d\navail %d\nsamples %d\n", kernel, slabvm, avail, n
		}'
}

# pm_report KEY FILE: FILE's figures (pm_meminfo) as KEY.NAME_kb lines.
pm_report() {
	awk -v k="$1" '{ printf "BENCH %s.%s%s %d\n", k, $1, ($1 == "samples" ? "" : "_kb"), $2 }' \
		"$2" > "$port"
}

# pm_settled KEY: the figures once the kernel has settled: caches
# dropped, deferred frees given a second.
pm_settled() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
	sleep 1
	pm_meminfo > /tmp/pm.now
	pm_report "$1" /tmp/pm.now
}

# pm_run TOOL REP: one run, keys peakmem.TOOL.rREP.{before,taken,peak,
# after}.*: before create, after take, the peak while the writes ran
# (with .peak.samples) and after destroy (blksnap: and rmmod).
pm_run() {
	local k=peakmem.$1.r$2 id dev
	if [ "$1" = blksnap ]; then
		load_module chunk_minimum_shift=$PEAKMEM_SHIFT
		[ "$(cat /sys/module/blksnap/parameters/chunk_minimum_shift)" = $PEAKMEM_SHIFT ] ||
			fail "blksnap did not take chunk_minimum_shift=$PEAKMEM_SHIFT"
		info peakmem.blksnap_params "chunk_minimum_shift=$PEAKMEM_SHIFT buffer_memory_maximum_mb=$(cat /sys/module/blksnap/parameters/buffer_memory_maximum_mb)"
	fi
	pm_settled "$k.before"
	if [ "$1" = blksnap ]; then
		id=$(raw_take $ORIG $STOR "0:$(sectors $STOR)") || fail "blksnap take failed"
		dev=$ORIG
	else
		dm_create bo "0 $(sectors $ORIG) snapshot-origin $ORIG"
		dm_take bo $ORIG $STOR $((PEAKMEM_CHUNK / 512))
		dev=/dev/mapper/bo
	fi
	pm_meminfo > /tmp/pm.now
	pm_report "$k.taken" /tmp/pm.now
	{
		echo "fio version 2 iolog"
		echo "$dev add"
		echo "$dev open"
		awk -v d="$dev" '{ print d " write", $1, 4096 }' /tmp/pm.offsets
		echo "$dev close"
	} > /tmp/pm.iolog
	rm -f /tmp/pm.stop
	pm_meminfo /tmp/pm.stop > /tmp/pm.peak &
	PM_SAMPLER=$!
	fio_run "$k.write" --read_iolog=/tmp/pm.iolog --replay_no_stall=1
	touch /tmp/pm.stop
	wait "$PM_SAMPLER"
	PM_SAMPLER=
	pm_report "$k.peak" /tmp/pm.peak
	# A snapshot that broke down stops copying: no figure.
	if [ "$1" = blksnap ]; then
		dd if="$(image_of "$id" $ORIG)" of=/dev/null bs=1M count=1 iflag=direct 2> /dev/null ||
			fail "blksnap's image cannot be read after the writes"
		bsok destroy "$id" > /dev/null
		unload_module
	else
		dmsetup status bs | grep -q Invalid && fail "dm-snapshot invalidated: $(dmsetup status bs)"
		dm_remove bs bo
	fi
	pm_settled "$k.after"
}

section_peakmem() {
	local n rep tool order
	n=$((PEAKMEM * MiB / PEAKMEM_CHUNK))
	[ "$n" -ge 1 ] && [ $((PEAKMEM * 2048)) -le "$(sectors $ORIG)" ] ||
		fail "bench.peakmem=$PEAKMEM: want 8 to $(($(sectors $ORIG) / 2048)) MiB"
	[ "$(sectors $STOR)" -ge $((PEAKMEM * 2048 + 65536)) ] ||
		fail "$STOR is too small for $PEAKMEM MiB of copies"
	val peakmem.chunk_bytes $PEAKMEM_CHUNK
	val peakmem.region_mib "$PEAKMEM"
	val peakmem.writes "$n"
	seq 0 $((n - 1)) | shuf | awk -v c=$PEAKMEM_CHUNK 'BEGIN { srand(23) }
		{ printf "%d\n", $1 * c + int(rand() * (c / 4096)) * 4096 }' > /tmp/pm.offsets
	# The sampler stops with the section, whatever ends it.
	PM_SAMPLER=
	trap 'touch /tmp/pm.stop; [ -n "$PM_SAMPLER" ] && wait "$PM_SAMPLER"' EXIT
	unload_module
	rep=1
	while [ $rep -le "$REPS" ]; do
		if [ $((rep % 2)) = 1 ]; then order="blksnap dm"; else order="dm blksnap"; fi
		for tool in $order; do
			progress "peak memory: $tool (rep $rep)"
			pm_run "$tool" "$rep"
		done
		rep=$((rep + 1))
	done
	load_module
}

# --- write IOPS at queue depth -------------------------------------------------
# What a held snapshot costs a writer that keeps a queue (issue 32: blksnap
# copies a chunk in the submitting task, dm-snapshot queues the bio and
# copies through kcopyd). fio, libaio, O_DIRECT on the raw origin vdb (no
# file system), four rows:
#   rand4k_qd1    4 KiB random writes, 1 job, QD1
#   rand4k_qd32   4 KiB random writes, 1 job, QD32
#   rand4k_qd8x4  4 KiB random writes, 4 jobs of QD8 each
#   seq1m_qd8     1 MiB sequential writes, 1 job, QD8
# Every write goes to chunks never copied since the take. Each row runs on
# a snapshot taken for it alone and writes only the first N chunks of 256
# KiB of vdb (N = DEEPQ_CHUNKS), each of them once:
#  - the random rows replay fio logs (read_iolog) that hold one 4 KiB
#    write at a random 4 KiB slot of each chunk, the chunks in a shuffled
#    order (made once per run: the same writes for every configuration
#    and repetition). rand4k_qd8x4's four jobs each replay their own log,
#    of chunks 0 to N/4-1, N/4 to N/2-1, ...: no two jobs touch one chunk.
#    Before the first row the section checks (dq_hits) that the logs name
#    each of the N chunks exactly once;
#  - seq1m_qd8 writes the region once from its start in 1 MiB writes, each
#    aligned to and covering 4 whole chunks.
# So each random write copies one chunk, and every row copies the N chunks
# once each (the report gives what the storage disk took per chunk).
# Configurations: none (no snapshot; the module loaded and tracking
# nothing), blksnap (its default parameters: 256 KiB chunks on this 2 GiB
# origin; the whole raw vdc appended as its storage, no file system) and
# dmsnap (vdb under a snapshot-origin, a transient snapshot with 256 KiB
# chunks and the raw vdc as its COW device). For each row the three run
# one after the other, in ABBA order: none, blksnap, dmsnap when the
# repetition and the row's place have the same parity, else the reverse,
# so that the host's drift favours none of them. The region of vdb and
# the start of vdc are written in full before the first row, so that no
# configuration pays for the host allocating blocks of a sparse image.
DQ_ROWS="rand4k_qd1 rand4k_qd32 rand4k_qd8x4 seq1m_qd8"

# dq_offsets FIRST COUNT: one offset in each of the chunks FIRST to
# FIRST+COUNT-1, a random 4 KiB slot of it, the chunks shuffled.
dq_offsets() {
	seq "$1" $(($1 + $2 - 1)) | shuf | awk -v c=$CHUNK -v s="$1" 'BEGIN { srand(32 + s) }
		{ printf "%d\n", $1 * c + int(rand() * (c / 4096)) * 4096 }'
}

# dq_hits < OFFSETS: "WRITES CHUNKS END": how many offsets, how many
# chunks they fall in, and 1 + the last chunk's number.
dq_hits() {
	awk -v c=$CHUNK '{ n++; k = int($1 / c); if (!(k in s)) { s[k]; d++ } if (k + 1 > e) e = k + 1 }
		END { print n + 0, d + 0, e + 0 }'
}

# dq_iolog DEV OFFSETS: a fio replay log of one 4 KiB write to DEV at
# each offset in the file OFFSETS, in its order.
dq_iolog() {
	echo "fio version 2 iolog"
	echo "$1 add"
	echo "$1 open"
	awk -v d="$1" '{ print d " write", $1, 4096 }' "$2"
	echo "$1 close"
}

# dq_jobfile ROW DEV: ROW's fio jobs on DEV, in /tmp/dq.fio.
dq_jobfile() {
	local j
	printf '[global]\nioengine=libaio\ndirect=1\ngroup_reporting=1\n' > /tmp/dq.fio
	case "$1" in
	rand4k_qd1 | rand4k_qd32)
		dq_iolog "$2" /tmp/dq.all.offsets > /tmp/dq.all.iolog
		printf '[%s]\niodepth=%s\nread_iolog=/tmp/dq.all.iolog\nreplay_no_stall=1\n' \
			"$1" "${1#rand4k_qd}" >> /tmp/dq.fio ;;
	rand4k_qd8x4)
		for j in 0 1 2 3; do
			dq_iolog "$2" /tmp/dq.j$j.offsets > /tmp/dq.j$j.iolog
			printf '[%s.j%s]\niodepth=8\nread_iolog=/tmp/dq.j%s.iolog\nreplay_no_stall=1\n' \
				"$1" $j $j >> /tmp/dq.fio
		done ;;
	seq1m_qd8)
		printf '[%s]\nfilename=%s\nrw=write\nbs=1M\niodepth=8\noffset=0\nsize=%s\n' \
			"$1" "$2" $((DEEPQ_CHUNKS * CHUNK)) >> /tmp/dq.fio ;;
	*) fail "no deep-queue row $1" ;;
	esac
}

# fio_jobs KEY JOBFILE: fio_run for a job file; with group_reporting its
# jobs are one entry of the JSON.
fio_jobs() {
	counters_start
	fio --output-format=json --output=/tmp/fio.json "$2" > /tmp/fio.err 2>&1 ||
		fail "fio $1 failed: $(tail -n 3 /tmp/fio.err /tmp/fio.json | tr '\n' ' ')"
	counters_end "$1"
	out "FIO $1 $(tr -d '\n\t' < /tmp/fio.json)"
}

# dq_run CFG ROW KEY: ROW under configuration CFG, on a fresh snapshot.
dq_run() {
	local id dev=$ORIG
	case "$1" in
	none) ;;
	blksnap) id=$(raw_take $ORIG $STOR "0:$(sectors $STOR)") || fail "blksnap take failed" ;;
	dmsnap)
		dm_create bo "0 $(sectors $ORIG) snapshot-origin $ORIG"
		dm_take bo $ORIG $STOR $((CHUNK / 512))
		dev=/dev/mapper/bo ;;
	*) fail "no deep-queue configuration $1" ;;
	esac
	dq_jobfile "$2" "$dev"
	fio_jobs "$3" /tmp/dq.fio
	# A snapshot that broke down stops copying: no figure.
	case "$1" in
	blksnap)
		dd if="$(image_of "$id" $ORIG)" of=/dev/null bs=1M count=1 iflag=direct 2> /dev/null ||
			fail "blksnap's image cannot be read after $3"
		bsok destroy "$id" > /dev/null
		# The destroyed snapshot leaves vdb tracked: none tracks nothing.
		unload_module
		load_module ;;
	dmsnap)
		dmsetup status bs | grep -q Invalid && fail "dm-snapshot invalidated in $3: $(dmsetup status bs)"
		dm_remove bs bo ;;
	esac
}

section_deepq() {
	local n=$DEEPQ_CHUNKS rep i row cfg order
	[ "$n" -ge 4 ] && [ $((n % 4)) = 0 ] && [ $((n * CHUNK / 512)) -le "$(sectors $ORIG)" ] ||
		fail "bench.deepq_chunks=$n: want a multiple of 4 up to $(($(sectors $ORIG) * 512 / CHUNK))"
	[ "$(sectors $STOR)" -ge $(((n * CHUNK + 64 * MiB) / 512)) ] ||
		fail "$STOR is too small for $n chunks of copies"
	[ "$(chunk_bytes $(($(sectors $ORIG) * 512)))" = $CHUNK ] ||
		fail "blksnap's chunk on $ORIG is not $CHUNK bytes"
	val deepq.chunk_bytes $CHUNK
	val deepq.chunks "$n"
	dq_offsets 0 "$n" > /tmp/dq.all.offsets
	for i in 0 1 2 3; do
		dq_offsets $((i * n / 4)) $((n / 4)) > /tmp/dq.j$i.offsets
	done
	# Each of the N chunks once: the single job's log, and the four jobs'
	# logs together.
	[ "$(dq_hits < /tmp/dq.all.offsets)" = "$n $n $n" ] ||
		fail "the single job's offsets do not hit each of the $n chunks once: $(dq_hits < /tmp/dq.all.offsets)"
	[ "$(cat /tmp/dq.j?.offsets | dq_hits)" = "$n $n $n" ] ||
		fail "the four jobs' offsets do not hit each of the $n chunks once: $(cat /tmp/dq.j?.offsets | dq_hits)"
	load_module
	# The host allocates a sparse image's blocks at the first write to them.
	fio_run deepq.fill --filename=$ORIG --rw=write --bs=1M --size=$((n * CHUNK))
	fio_run deepq.fill_storage --filename=$STOR --rw=write --bs=1M --size=$((n * CHUNK + 64 * MiB))
	rep=1
	while [ $rep -le "$REPS" ]; do
		i=1
		for row in $DQ_ROWS; do
			if [ $(((rep + i) % 2)) = 0 ]; then
				order="none blksnap dmsnap"
			else
				order="dmsnap blksnap none"
			fi
			for cfg in $order; do
				progress "deep queues: $row, $cfg (rep $rep)"
				dq_run "$cfg" "$row" "deepq.$cfg.r$rep.$row"
			done
			i=$((i + 1))
		done
		rep=$((rep + 1))
	done
}

# --- growth --------------------------------------------------------------------
# watch_bg FILE ID OUT [OPTION...]: 'blksnap-storage watch --json' in the
# background, its lines in OUT as they come and, once it has stopped,
# in OUT.ts each stamped (busybox ts) when it arrived; waits for "started".
watch_bg() {
	local file=$1 id=$2 o=$3
	shift 3
	rm -f /tmp/wfifo "$o" "$o.ts" && mkfifo /tmp/wfifo
	tee "$o" < /tmp/wfifo | ts '%.s' > "$o.ts" &
	TS_PID=$!
	blksnap-storage watch --json --snapshot "$id" "$@" "$file" > /tmp/wfifo 2> "$o.err" &
	WATCH_PID=$!
	wait_for 20 grep -q '"event":"started"' "$o" ||
		fail "watch did not start: $(cat "$o" "$o.err" | tr '\n' ' ')"
}
# watch_stop: end the watcher (if destroy has not) and its stamping.
watch_stop() {
	kill "$WATCH_PID" 2> /dev/null
	wait "$WATCH_PID" 2> /dev/null
	wait "$TS_PID" 2> /dev/null
}

# Low-space event to appended storage, with 'watch' already waiting: the
# threshold is 64 MiB and the storage 64 MiB, so the first copy-on-write
# after the take raises the event; it is a single 4 KiB O_DIRECT write on
# the raw origin. Latency = the "grown" line's arrival - the write's start
# (both stamped by busybox ts; the start includes dd's exec).
growth_latency() {
	local r id t0 tw tg
	load_module diff_storage_minimum=131072
	r=1
	while [ $r -le "$LAT_ROUNDS" ]; do
		id=$(blksnap-storage create $ORIG) || fail "create failed"
		run blksnap-storage add --snapshot "$id" /mnt/st/lat 64M > /dev/null
		run blksnap-storage take "$id" > /dev/null
		watch_bg /mnt/st/lat "$id" /tmp/lat.json --step 64M
		# One stamping process for the start and the end of the write.
		{
			echo start
			dd if=/dev/zero of=$ORIG bs=4k count=1 seek=$((r * 64)) oflag=direct conv=notrunc 2>&1
			echo "end $?"
		} | ts '%.s' > /tmp/trig.ts
		grep -q ' end 0$' /tmp/trig.ts || fail "trigger write failed: $(cat /tmp/trig.ts | tr '\n' ' ')"
		t0=$(awk '$2 == "start" { print $1 }' /tmp/trig.ts)
		tw=$(awk -v a="$t0" '$2 == "end" { printf "%.6f", $1 - a }' /tmp/trig.ts)
		wait_for 30 grep -q '"event":"grown"' /tmp/lat.json ||
			fail "no growth after the low-space event: $(cat /tmp/lat.json /tmp/lat.json.err | tr '\n' ' ')"
		run blksnap-storage destroy "$id" > /dev/null
		watch_stop
		tg=$(grep '"event":"grown"' /tmp/lat.json.ts | head -n 1 | cut -d' ' -f1)
		[ -n "$tg" ] || fail "no stamped growth: $(cat /tmp/lat.json.ts | tr '\n' ' ')"
		val "growth.latency.r$r.s" "$(awk -v a="$t0" -v b="$tg" 'BEGIN { printf "%.6f", b - a }')"
		val "growth.latency.r$r.trigger_write_s" "$tw"
		rm -f /mnt/st/lat
		r=$((r + 1))
	done
	unload_module
}

# One 'add' of 64 MiB after the take, storage on another filesystem vs on
# the snapshotted ext4 (which must mount the image and read its in-use
# map at take time to withhold blocks freed since).
growth_add_after_take() {
	local r id
	load_module
	mkfs_of ext4 $ORIG
	mkdir -p /mnt/o && run mount -o noatime,lazytime $ORIG /mnt/o
	run fallocate -l 256M /mnt/o/ballast
	sync
	r=1
	while [ $r -le "$LAT_ROUNDS" ]; do
		id=$(blksnap-storage create $ORIG) || fail "create failed"
		run blksnap-storage add --snapshot "$id" /mnt/st/a 64M > /dev/null
		run blksnap-storage add --snapshot "$id" /mnt/o/a 64M > /dev/null
		run blksnap-storage take "$id" > /dev/null
		timed "growth.add_after_take.other_fs.r$r.s" blksnap-storage add --snapshot "$id" /mnt/st/a 64M > /dev/null
		timed "growth.add_after_take.same_fs.r$r.s" blksnap-storage add --snapshot "$id" /mnt/o/a 64M > /dev/null
		run blksnap-storage destroy "$id" > /dev/null
		rm -f /mnt/st/a /mnt/o/a
		r=$((r + 1))
	done
	run umount /mnt/o
	unload_module
}

# Full-speed sequential burst (fio, 1 MiB O_DIRECT writes from the start
# of the raw origin) against 'watch --step 64M' with 64 MiB given at take,
# for each low-space threshold: bursts of growing size until one
# overflows the storage (corrupted event / image read fails).
growth_bursts() {
	local thr b id img ok n
	for thr in $(list "$THRESHOLDS"); do
		load_module diff_storage_minimum=$((thr * 2048))
		for b in $(list "$BURSTS"); do
			progress "growth: ${b} MiB burst, threshold ${thr} MiB"
			id=$(blksnap-storage create $ORIG) || fail "create failed"
			run blksnap-storage add --snapshot "$id" /mnt/st/burst 64M > /dev/null
			run blksnap-storage take "$id" > /dev/null
			# Room the storage can grow into: free space less the
			# margin 'watch' keeps, min(5%, 256 MiB); the burst should
			# survive any size up to it (issue 15 item 1).
			df -Pm /mnt/st | awk -v k="growth.burst.t$thr.b$b" 'NR == 2 {
				m = int($2 * 5 / 100); if (m > 256) m = 256
				printf "BENCH %s.free_at_take_mib %d\nBENCH %s.growable_at_take_mib %d\n", k, $4, k, ($4 > m ? $4 - m : 0)
			}' > "$port"
			img=$(blksnap-storage images "$id" | awk '{ print $2 }')
			watch_bg /mnt/st/burst "$id" /tmp/burst.json --step 64M
			fio_run "growth.burst.t$thr.b$b" --filename=$ORIG --rw=write --bs=1M --size=${b}M
			sleep 1
			ok=1
			grep -q '"event":"corrupted"' /tmp/burst.json && ok=0
			dd if="$img" of=/dev/null bs=1M count=1 iflag=direct 2> /dev/null || ok=0
			n=$(grep -c '"event":"grown"' /tmp/burst.json)
			val "growth.burst.t$thr.b$b.survived" $ok
			val "growth.burst.t$thr.b$b.growths" "$n"
			val "growth.burst.t$thr.b$b.storage_bytes" "$(stat -c %s /mnt/st/burst)"
			run blksnap-storage destroy "$id" > /dev/null
			watch_stop
			rm -f /mnt/st/burst
			[ $ok = 1 ] || break
		done
		unload_module
	done
}

section_growth() {
	mkfs_of xfs $STOR
	mkdir -p /mnt/st && run mount $STOR /mnt/st
	progress "growth: event to appended storage"
	growth_latency
	progress "growth: add after take"
	growth_add_after_take
	growth_bursts
	run umount /mnt/st
}

# --- main ----------------------------------------------------------------------
info guest.kernel "$(uname -r) $(uname -v)"
info guest.fio "$(fio --version)"
info guest.dmsetup "$(dmsetup --version 2>&1 | tr '\n' ' ')"
info guest.cpus "$(nproc)"
info guest.mem_kb "$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo)"
for k in SECTIONS REGION REPS READ_LOOPS REWRITE_IOS SCALE CHANGE CHANGE_CAP LAT_ROUNDS BURSTS THRESHOLDS CONFIGS PROFILE PEAKMEM DEEPQ_CHUNKS; do
	eval "info param.$k \"\$$k\""
done
load_module
info guest.blksnap "$(blksnap-storage version 2>&1 | tr '\n' ' ')"
for p in /sys/module/blksnap/parameters/*; do
	info "module.$(basename "$p")" "$(cat "$p")"
done
guest_cleanup > /dev/null 2>&1
dmesg -c > /dev/null

for s in $(list "$SECTIONS"); do
	progress "section $s"
	t0=$(now)
	( section_"$s" ) > "/tmp/bench-$s.log" 2>&1
	rc=$?
	val "section.$s.s" "$(since "$t0")"
	if [ $rc != 0 ]; then
		out "ERROR $s $(grep '^FAIL:' "/tmp/bench-$s.log" | tail -n 1 | cut -c7-) (exit $rc)"
		tail -n 15 "/tmp/bench-$s.log" | while IFS= read -r l; do out "LOG $s: $l"; done
	fi
	# A complaint while the section's leftovers are removed is its own.
	guest_cleanup > /dev/null 2>&1
	bad=$(dmesg | grep -E "$KERNEL_BAD_PATTERN" | grep -v 'Call Trace' | head -n 1)
	[ -n "$bad" ] || bad=$(dmesg | grep -E "$KERNEL_BAD_PATTERN" | head -n 1)
	[ -n "$bad" ] && out "ERROR $s kernel reported: $bad"
	dmesg -c > /dev/null
done
exit 0
