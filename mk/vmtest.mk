# VM tests: the built kernel in QEMU with the initramfs from vmtests/.
#   make vmtest [TESTS="name ..."] [DEBUG=1] [VM_ACCEL=kvm] [VM_JOBS=guests at once]
#               [VM_SELECT=both: only the tests marked "# kernels: both"]

VM_PKGS     := qemu-system-x86 busybox-static e2fsprogs xfsprogs fio dmsetup \
               cpio util-linux strace
VM_OUT      ?= $(BUILD)/vm$(if $(filter 1,$(DEBUG)),-debug)
BSCTL       := $(BUILD)/bsctl
INITRAMFS   := $(VM_OUT)/initramfs.cpio.gz
VM_INPUTS   := $(wildcard vmtests/tests/*.sh vmtests/harness/*.sh) vmtests/guest/init \
               vmtests/mkinitramfs.sh $(wildcard vmtests/demo.sh)

.PHONY: vmtest vm-deps
vm-deps:
	@scripts/need-packages.sh $(VM_PKGS)

$(BSCTL): vmtests/tools/bsctl.c vmtests/tools/fuzz.c kernel/include/uapi/linux/blksnap.h
	@mkdir -p $(dir $@)
	$(CC) -static -O2 -Wall -Wextra -Ikernel/include/uapi -o $@ vmtests/tools/bsctl.c vmtests/tools/fuzz.c

$(INITRAMFS): $(BLKSNAP_KO) $(CLI_BIN) $(BSCTL) $(VM_INPUTS) | vm-deps
	@mkdir -p $(dir $@)
	@echo "  INITRD  $@"
	@vmtests/mkinitramfs.sh $@ $(BLKSNAP_KO) $(CLI_BIN) $(BSCTL)

# The debug kernel is several times slower: scale the tests' timeouts.
# Its ACPI table parsing under TCG with kmemleak and KASAN takes minutes
# and trips the soft-lockup detector at boot: boot it without ACPI
# (the MP table still gives it the CPUs).
ifeq ($(DEBUG),1)
VM_TIMEOUT_SCALE ?= 4
VM_APPEND ?= acpi=off
# One debug guest keeps about one host core busy: run two at once.
VM_JOBS ?= 2
endif

vmtest: $(if $(filter 1,$(VM_SKIP_KERNEL)),,kernel) cli $(INITRAMFS) ## run the VM tests in QEMU on the patched kernel (TESTS="a b" to pick, VM_SELECT=both for the "# kernels: both" ones, DEBUG=1 for the debug kernel)
	@VM_TIMEOUT_SCALE=$(or $(VM_TIMEOUT_SCALE),1) VM_APPEND="$(VM_APPEND)" VM_JOBS=$(or $(VM_JOBS),1) VM_SELECT=$(or $(VM_SELECT),all) \
		vmtests/run.sh $(BZIMAGE) $(INITRAMFS) $(VM_OUT) $(TESTS)

# The harness's own promises (a stuck guest, a full host file system).
.PHONY: harness-test
harness-test: $(if $(filter 1,$(VM_SKIP_KERNEL)),,kernel) cli $(INITRAMFS) ## check that the VM harness reports stuck guests and cleanups, a full host disk, and kernel complaints seen only on the console or during the cleanup
	@VM_TIMEOUT_SCALE=$(or $(VM_TIMEOUT_SCALE),1) VM_APPEND="$(VM_APPEND)" \
		scripts/harness-test.sh $(BZIMAGE) $(INITRAMFS) $(BUILD)/harness-test$(if $(filter 1,$(DEBUG)),-debug)

.PHONY: prove-seed-defects
prove-seed-defects: $(if $(filter 1,$(VM_SKIP_KERNEL)),,kernel) cli $(BSCTL) | vm-deps ## show that each fixed seed defect makes its test fail
	@vmtests/prove-seed-defects.sh $(KSRC) $(BZIMAGE) $(CLI_BIN) $(BSCTL) $(BUILD)/seed-defects $(DEFECTS)
