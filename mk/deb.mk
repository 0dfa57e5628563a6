# Debian packages: blksnap-dkms (both modules' sources, built by DKMS for
# Debian 12's Linux 6.1) and blksnap-storage (the command), from debian/.
#   make deb                -> build/deb/*.deb (dpkg-buildpackage, then lintian)
#   make deb-test           -> Debian 12 from the archive plus the packages,
#                              booted in QEMU: modprobe blksnap and a backup
#   make deb-lockdown-test  -> the same, booted with lockdown=integrity
#   make deb-abi-test       -> DKMS builds for two kernel ABIs, refuses others
# The kernels these install go into chroots under build/; they run only in
# QEMU, under flock /tmp/blksnap-vm.lock.

DEB_OUT        := $(BUILD)/deb
DEB_TEST_OUT   ?= $(BUILD)/deb-test
DEB_FILES      := $(DEB_OUT)/blksnap-dkms_1.0.0_all.deb $(DEB_OUT)/blksnap-storage_1.0.0_amd64.deb
DEB_BUILD_PKGS := dpkg-dev debhelper dh-dkms fakeroot lintian build-essential
DEB_TEST_PKGS  := mmdebstrap e2fsprogs qemu-system-x86
# What goes into the packages: rebuilt when any of it changes.
DEB_SRC_FILES  := $(wildcard debian/* debian/source/* $(shell git ls-files -co --exclude-standard \
		  cli storagefile kernel/standalone kernel/drivers kernel/include mk Makefile 2>/dev/null))

.PHONY: deb deb-deps deb-test-deps deb-test deb-lockdown-test deb-abi-test
deb-deps:
	@scripts/need-packages.sh $(DEB_BUILD_PKGS)

deb-test-deps:
	@scripts/need-packages.sh $(DEB_TEST_PKGS)

deb: $(DEB_FILES) ## build the Debian packages blksnap-dkms and blksnap-storage into build/deb (lintian-checked)

$(DEB_FILES) &: $(DEB_SRC_FILES) | deb-deps
	@scripts/build-deb.sh $(DEB_OUT)

deb-test: $(DEB_FILES) | deb-test-deps ## install the packages on Debian 12 from the archive, boot it in QEMU, modprobe blksnap and back up
	@vmtests/deb/install-and-backup.sh $(DEB_OUT) $(DEB_TEST_OUT)

deb-lockdown-test: $(DEB_FILES) | deb-test-deps ## boot that system with lockdown=integrity: loading blksnap says how to enrol the DKMS key
	@vmtests/deb/lockdown-hint.sh $(DEB_OUT) $(DEB_TEST_OUT)

deb-abi-test: $(DEB_FILES) | deb-test-deps ## DKMS builds the modules for two Debian kernel ABIs and refuses unsupported kernels (chroot, no boot)
	@vmtests/deb/dkms-abis.sh $(DEB_OUT) $(BUILD)/deb-abi-test
	@vmtests/deb/dkms-refuses.sh $(BUILD)/deb-abi-test
