# The standalone route: the unchanged driver plus bdev_filter.ko, built
# against Debian 12's own kernel headers.
#   make standalone                -> build/standalone/{bdev_filter,blksnap}.ko
# STOCK_ABI picks the Debian kernel ABI (linux-headers-/linux-image-<ABI>).
# The packages only write files on the host; their kernel runs only in QEMU.

STOCK_ABI        ?= 6.1.0-57-amd64
STOCK_KDIR       := /lib/modules/$(STOCK_ABI)/build
STANDALONE_OUT   := $(BUILD)/standalone
STOCK_BLKSNAP_KO := $(STANDALONE_OUT)/blksnap.ko
STOCK_FILTER_KO  := $(STANDALONE_OUT)/bdev_filter.ko
STANDALONE_SRC   := $(wildcard kernel/standalone/*) $(KDRIVER_SRC)

.PHONY: standalone standalone-deps
standalone-deps:
	@scripts/need-packages.sh linux-headers-$(STOCK_ABI) build-essential kmod

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
