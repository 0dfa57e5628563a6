# Benchmarks: the built kernel in QEMU once, fio as the load, blksnap
# against no snapshot and against dm-snapshot; prints the table and
# writes $(BENCH_OUT)/results.json, results.md, results.svg.
#   make bench [VM_SKIP_KERNEL=1] [VM_OUT=dir] [BENCH_QUICK=1] [BENCH_STOCK=0]
#              [BENCH_PROFILE=1]
# BENCH_PROFILE=1 puts the host's perf (Debian's linux-perf, installed
# if missing) into the guest and adds a flat profile of each image read
# (bench.profile=1) to $(BENCH_OUT)/profile.txt; the figures are
# measured without perf running.
# BENCH_STOCK=1 (the default, but for BENCH_QUICK=1) also runs the write section on Debian's own
# kernel with the standalone modules (mk/standalone.mk): the standalone
# route against the patched kernel.
# BENCH_ARGS="bench.KEY=VALUE ..." passes guest parameters (vmtests/bench.sh),
# e.g. "bench.sections=read bench.steer=0": the read section with the
# disks' interrupt lines left where the guest put them, blksnap/dm per
# reader CPU.
#   make bench-report-test: the report's arithmetic on made-up lines (host).
# Needs mk/kernel.mk, mk/vmtest.mk and mk/userland.mk (included before).

# The results go to build/bench unless VM_OUT is given.
BENCH_OUT       := $(if $(filter command line environment,$(origin VM_OUT)),$(VM_OUT),$(BUILD)/bench)
BENCH_PROFILE   ?= 0
BENCH_INITRAMFS := $(BENCH_OUT)/bench-initramfs$(if $(filter 1,$(BENCH_PROFILE)),-perf).cpio.gz
BENCH_SFGROW    := $(BUILD)/bench-sfgrow

$(BENCH_SFGROW): vmtests/bench/sfgrow.c $(SF_LIB) storagefile/storagefile.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ vmtests/bench/sfgrow.c $(SF_LIB)

.PHONY: bench-profile-deps
bench-profile-deps:
	@scripts/need-packages.sh linux-perf

$(BENCH_INITRAMFS): $(BLKSNAP_KO) $(CLI_BIN) $(BSCTL) $(VM_INPUTS) vmtests/bench.sh mk/bench.mk | vm-deps $(if $(filter 1,$(BENCH_PROFILE)),bench-profile-deps)
	@mkdir -p $(dir $@)
	@echo "  INITRD  $@"
	@VM_EXTRA_TOOLS="$(if $(filter 1,$(BENCH_PROFILE)),perf)" \
		vmtests/mkinitramfs.sh $@ $(BLKSNAP_KO) $(CLI_BIN) $(BSCTL)

BENCH_STOCK ?= $(if $(filter 1,$(BENCH_QUICK)),0,1)
BENCH_STOCK_DEPS := $(if $(filter 1,$(BENCH_STOCK)),$(STOCK_INITRAMFS) stock-image-deps)

.PHONY: bench
bench: $(if $(filter 1,$(VM_SKIP_KERNEL)),,kernel) cli $(BENCH_INITRAMFS) $(BENCH_SFGROW) $(BENCH_STOCK_DEPS) ## run the benchmarks in QEMU: table, results.json/.svg in build/bench (BENCH_QUICK=1: small)
	@BENCH_COMMAND="make bench$(if $(BENCH_QUICK), BENCH_QUICK=$(BENCH_QUICK))$(if $(filter 1,$(BENCH_PROFILE)), BENCH_PROFILE=1)" \
		$(if $(filter 1,$(BENCH_PROFILE)),BENCH_ARGS="bench.profile=1 $(BENCH_ARGS)") \
		$(if $(filter 1,$(BENCH_STOCK)),BENCH_STOCK_KERNEL=$(STOCK_VMLINUZ) BENCH_STOCK_INITRAMFS=$(STOCK_INITRAMFS)) \
		vmtests/bench-run.sh $(BZIMAGE) $(BENCH_INITRAMFS) $(BENCH_SFGROW) $(BENCH_OUT)

.PHONY: bench-report-test
bench-report-test: ## check bench-report.py's arithmetic and exit codes on made-up result lines (host, no VM)
	@scripts/need-packages.sh python3
	@python3 vmtests/bench/report-test.py
