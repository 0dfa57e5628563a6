# Demo: the built kernel in QEMU, a root filesystem backed up with tar from
# a blksnap snapshot while a workload changes it, step by step.
#   make demo [VM_SKIP_KERNEL=1] [VM_OUT=dir] [DEMO_TIMEOUT=seconds]
# Needs mk/kernel.mk, mk/vmtest.mk and mk/userland.mk (included before).

DEMO_OUT := $(VM_OUT)/demo

.PHONY: demo
demo: $(if $(filter 1,$(VM_SKIP_KERNEL)),,kernel) cli vm-deps $(INITRAMFS) ## boot the kernel in QEMU and show a snapshot-backed backup, step by step
	@vmtests/demo-run.sh $(BZIMAGE) $(INITRAMFS) $(DEMO_OUT)
