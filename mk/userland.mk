# Userland: storagefile library, the blksnap-storage CLI and host unit tests.
# Fragments are owned by each directory.
-include storagefile/storagefile.mk
-include cli/cli.mk
-include unit/unit.mk
