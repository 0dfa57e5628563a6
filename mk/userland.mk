# Userland: storagefile library, the blksnap-storage CLI and host unit tests.
# Fragments are owned by each directory.
-include storagefile/storagefile.mk
-include cli/cli.mk
-include unit/unit.mk

USERLAND_PKGS := build-essential libcmocka-dev e2fsprogs

.PHONY: userland-deps
userland-deps:
	@scripts/need-packages.sh $(USERLAND_PKGS)

$(SF_OBJS) $(UNIT_BINS) $(CLI_OBJS): | userland-deps
