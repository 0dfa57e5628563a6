# The standalone route: the unchanged driver plus bdev_filter.ko, built
# against Debian 12's own kernel headers, tested on Debian's own vmlinuz.
#   make standalone                -> build/standalone/{bdev_filter,blksnap}.ko
#   make vmtest-stock [TESTS="..."] -> the VM tests on /boot/vmlinuz-$(STOCK_ABI)
# STOCK_ABI picks the Debian kernel ABI (linux-headers-/linux-image-<ABI>).
# The packages only write files on the host; their kernel runs only in QEMU.

STOCK_ABI        ?= 6.1.0-57-amd64
STOCK_KDIR       := /lib/modules/$(STOCK_ABI)/build
STANDALONE_OUT   := $(BUILD)/standalone
STOCK_BLKSNAP_KO := $(STANDALONE_OUT)/blksnap.ko
STOCK_FILTER_KO  := $(STANDALONE_OUT)/bdev_filter.ko
STOCK_VMLINUZ    := /boot/vmlinuz-$(STOCK_ABI)
STANDALONE_SRC   := $(wildcard kernel/standalone/*) $(KDRIVER_SRC)
# Debian's modules the tests need (their dependencies come from modules.dep).
STOCK_KMODS      := virtio_pci virtio_blk virtio_console crc32c_generic ext4 \
                    xfs dm_mod dm_snapshot dm_flakey dm_delay loop null_blk
# Test-only modules for the guest (vmtests/stock/), never packaged.
STOCK_TEST_OUT   := $(BUILD)/standalone-test
STOCK_TEST_KOS   := $(STOCK_TEST_OUT)/ipmodify_holder.ko
STOCK_VM_OUT     ?= $(BUILD)/vm-stock
STOCK_INITRAMFS  := $(STOCK_VM_OUT)/initramfs.cpio.gz

.PHONY: standalone standalone-deps stock-image-deps vmtest-stock
standalone-deps:
	@scripts/need-packages.sh linux-headers-$(STOCK_ABI) build-essential kmod

# The image runs only in QEMU, with the initramfs from vmtests/: Debian's
# own initramfs would never be used, and making it on installation
# (initramfs-tools' hook, which INITRD=No skips) took 3 of CI's minutes.
stock-image-deps:
	@INITRD=No scripts/need-packages.sh linux-image-$(STOCK_ABI) kmod

standalone: $(STOCK_BLKSNAP_KO) ## build bdev_filter.ko and blksnap.ko for Debian's kernel (STOCK_ABI) into build/standalone

# One kbuild run makes both (grouped target); its per-file lines are dropped,
# warnings and errors pass through. "Skipping BTF generation" is kbuild's
# note that Debian's headers carry no vmlinux.
$(STOCK_BLKSNAP_KO) $(STOCK_FILTER_KO) &: $(STANDALONE_SRC) | standalone-deps
	@echo "  MODULES $(STANDALONE_OUT) against $(STOCK_KDIR)"
	@{ $(MAKE) --no-print-directory -s -C kernel/standalone KVER=$(STOCK_ABI) OUT=$(STANDALONE_OUT) 2>&1; \
	   echo "kbuild-exit $$?"; } | \
		awk '/^kbuild-exit / { rc = $$2; next } /^Skipping BTF generation/ { next } \
		{ print; fflush() } END { exit rc }'
	@test -f $(STOCK_BLKSNAP_KO) && test -f $(STOCK_FILTER_KO)
	@# kbuild relinks only what changed: mark both as built from these sources.
	@touch $(STOCK_BLKSNAP_KO) $(STOCK_FILTER_KO)

$(STOCK_TEST_KOS) &: $(wildcard vmtests/stock/*) | standalone-deps
	@mkdir -p $(STOCK_TEST_OUT)
	@for f in vmtests/stock/*; do ln -sfn $(CURDIR)/$$f $(STOCK_TEST_OUT)/$${f##*/}; done
	@echo "  MODULES $(STOCK_TEST_OUT) (test only) against $(STOCK_KDIR)"
	@{ $(MAKE) --no-print-directory -s -C $(STOCK_KDIR) M=$(STOCK_TEST_OUT) modules 2>&1; \
	   echo "kbuild-exit $$?"; } | \
		awk '/^kbuild-exit / { rc = $$2; next } /^Skipping BTF generation/ { next } \
		{ print; fflush() } END { exit rc }'
	@touch $(STOCK_TEST_KOS)

# Debian's modules in load order, dependencies first, each once.
stock_kmod_files = $(shell for m in $(STOCK_KMODS); do \
	modprobe -S $(STOCK_ABI) --show-depends $$m; done | \
	awk '$$1 == "insmod" && !seen[$$2]++ { print $$2 }')

$(STOCK_INITRAMFS): $(STOCK_BLKSNAP_KO) $(STOCK_FILTER_KO) $(STOCK_TEST_KOS) $(CLI_BIN) $(BSCTL) $(VM_INPUTS) vmtests/bench.sh | vm-deps stock-image-deps
	@mkdir -p $(dir $@)
	@echo "  INITRD  $@ (Debian $(STOCK_ABI) modules)"
	@VM_KMODS="$(stock_kmod_files)" VM_FILTER_KO=$(STOCK_FILTER_KO) VM_TEST_KOS="$(STOCK_TEST_KOS)" \
		vmtests/mkinitramfs.sh $@ $(STOCK_BLKSNAP_KO) $(CLI_BIN) $(BSCTL)

vmtest-stock: cli $(STOCK_INITRAMFS) | stock-image-deps ## run the VM tests on Debian's own kernel with the standalone modules (TESTS="a b")
	@VM_TIMEOUT_SCALE=$(or $(VM_TIMEOUT_SCALE),1) VM_APPEND="$(VM_APPEND)" VM_JOBS=$(or $(VM_JOBS),1) \
		vmtests/run.sh $(STOCK_VMLINUZ) $(STOCK_INITRAMFS) $(STOCK_VM_OUT) $(TESTS)
