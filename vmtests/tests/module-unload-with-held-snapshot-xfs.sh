# Unloading blksnap while a snapshot of an xfs origin is held (storage
# file inside the origin): rmmod is refused (EBUSY/EAGAIN) and changes
# nothing while the image is open, while it is mounted, and while a
# watcher has /dev/blksnap open. With nothing open it either is refused
# too (the snapshot still works) or unloads cleanly: device nodes gone,
# the origin still writable, no kernel warning (and no kmemleak report on
# a debug kernel), and after reloading, 'blksnap-storage destroy ID'
# releases the storage file and a new snapshot works. Which of the two
# the kernel does is put on the console.
# timeout: 240
# kernels: both (module load and unload)
. /tests/common.sh

module_unload_test xfs
exit 0
