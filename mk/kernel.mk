# Kernel: Debian's linux-source-6.1 + the bdev_filter patch + the blksnap
# driver sources laid over it, built for QEMU.
#   make kernel          -> build/linux/arch/x86/boot/bzImage, blksnap.ko
#   make kernel DEBUG=1  -> the same in build/linux-debug with KASAN,
#                           lockdep, atomic-sleep checks and kmemleak

KERNEL_TARBALL := /usr/src/linux-source-6.1.tar.xz
KERNEL_PKGS    := linux-source-6.1 build-essential bc bison flex libelf-dev \
                  libssl-dev cpio xz-utils kmod
ifeq ($(DEBUG),1)
KSRC           := $(BUILD)/linux-debug
KCONFIG_FRAGS  := kernel/config/blksnap.config kernel/config/debug.config
else
KSRC           := $(BUILD)/linux
KCONFIG_FRAGS  := kernel/config/blksnap.config
endif
KPATCHES       := $(sort $(wildcard kernel/patches/*.patch))
KDRIVER_SRC    := $(wildcard kernel/drivers/block/blksnap/*) \
                  kernel/include/uapi/linux/blksnap.h
KJOBS          ?= $(shell nproc)
BZIMAGE        := $(KSRC)/arch/x86/boot/bzImage
BLKSNAP_KO     := $(KSRC)/drivers/block/blksnap/blksnap.ko

.PHONY: kernel kernel-deps kernel-overlay
kernel: $(BZIMAGE) $(BLKSNAP_KO) ## build the QEMU kernel and blksnap.ko (DEBUG=1: KASAN/lockdep tree)

kernel-deps:
	@scripts/need-packages.sh $(KERNEL_PKGS)

# Extract and patch once; the patches are part of the stamp's inputs.
$(KSRC)/.blksnap-patched: $(KPATCHES) | kernel-deps
	@echo "  KERNEL  extracting $(KERNEL_TARBALL) into $(KSRC)"
	@rm -rf $(KSRC) $(KSRC).tmp && mkdir -p $(KSRC).tmp
	@tar -xf $(KERNEL_TARBALL) -C $(KSRC).tmp --strip-components=1
	@for p in $(KPATCHES); do \
		echo "  PATCH   $$p"; \
		patch -d $(KSRC).tmp -p1 -s --no-backup-if-mismatch < $$p || exit 1; \
	done
	@mv $(KSRC).tmp $(KSRC) && touch $@

# Lay the driver sources over the tree; cp -u keeps unchanged files'
# times so that kbuild rebuilds only what was edited.
kernel-overlay: $(KSRC)/.blksnap-patched
	@mkdir -p $(KSRC)/drivers/block/blksnap
	@cp -u kernel/drivers/block/blksnap/* $(KSRC)/drivers/block/blksnap/
	@cp -u kernel/include/uapi/linux/blksnap.h $(KSRC)/include/uapi/linux/

$(KSRC)/.config: $(KCONFIG_FRAGS) $(KSRC)/.blksnap-patched
	@$(MAKE) kernel-overlay
	@echo "  CONFIG  tinyconfig + $(KCONFIG_FRAGS)"
	@$(MAKE) -s -C $(KSRC) tinyconfig >/dev/null
	@cd $(KSRC) && scripts/kconfig/merge_config.sh -m .config $(addprefix $(CURDIR)/,$(KCONFIG_FRAGS)) >/dev/null
	@$(MAKE) -s -C $(KSRC) olddefconfig >/dev/null
	@for f in $(KCONFIG_FRAGS); do grep -E '^CONFIG_[A-Z0-9_]+=' $$f | while read -r l; do \
		grep -qx "$$l" $(KSRC)/.config || echo "  WARNING $$l requested by $$f is not in .config"; \
	done; done

# VM_SKIP_KERNEL=1 uses the kernel as built, without asking kbuild: for
# running tests while the driver sources are being edited.
ifneq ($(VM_SKIP_KERNEL),1)
# One recipe makes both (grouped target), so kbuild is asked only once.
# kbuild's per-file lines become one progress line per 500 files, with
# the elapsed time; warnings and errors pass through.
$(BZIMAGE) $(BLKSNAP_KO) &: $(KSRC)/.config $(KDRIVER_SRC) FORCE
	@$(MAKE) -s kernel-overlay
	@echo "  KERNEL  building $(KSRC) with $(KJOBS) jobs (a full build takes a few minutes)"
	@{ $(MAKE) --no-print-directory -C $(KSRC) -j$(KJOBS) bzImage modules 2>&1; \
	   echo "kbuild-exit $$?"; } | \
		awk 'BEGIN { t0 = systime() } \
		/^kbuild-exit / { rc = $$2; next } \
		/^  [A-Z0-9_]+ / { if (++n % 500 == 0) { printf "  KERNEL  %d files built, %d s\n", n, systime() - t0; fflush() } next } \
		{ print; fflush() } END { exit rc }'
	@test -f $(BZIMAGE) && test -f $(BLKSNAP_KO)
endif

.PHONY: FORCE
FORCE:

SERIES_OUT := $(BUILD)/series

.PHONY: series series-check series-deps
series-deps:
	@scripts/need-packages.sh sparse python3-ply python3-git python3-docutils

series: | kernel-deps series-deps ## write the kernel patch series to build/series, signed off by AUTHOR="Name <mail>", and checkpatch it
	@AUTHOR="$(AUTHOR)" scripts/make-series.sh $(KERNEL_TARBALL) $(BUILD)/series-tree $(SERIES_OUT)

# The check needs no identity: without AUTHOR it checks an unsigned copy
# of the series (build/series-unsigned), never one to send.
SERIES_CHECKED := $(if $(AUTHOR),$(SERIES_OUT),$(BUILD)/series-unsigned)
series-check: | kernel-deps series-deps ## write the series (unsigned without AUTHOR), checkpatch it, apply it to a pristine tree with git am and build it
	@AUTHOR="$(AUTHOR)" UNSIGNED=$(if $(AUTHOR),0,1) scripts/make-series.sh $(KERNEL_TARBALL) $(BUILD)/series-tree $(SERIES_CHECKED)
	@scripts/check-series.sh $(KERNEL_TARBALL) $(SERIES_CHECKED) $(BUILD)/series-check $(CURDIR)/kernel/config/blksnap.config $(BUILD)/series-tree
	@# Two kernel trees (gigabytes; the second a git worktree of the
	@# first) that only a failed check needs to look at.
	@rm -rf $(BUILD)/series-tree $(BUILD)/series-check
