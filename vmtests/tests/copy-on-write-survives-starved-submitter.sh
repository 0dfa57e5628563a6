# Copy-on-write goes on when the writer can allocate nothing: 300 direct
# 4 KiB writes to never-copied chunks of a raw origin, each made with
# every kmalloc and page allocation of the writing thread failing (fault
# injection's task filter), all complete; the snapshot is not corrupted
# and its image still reads as the origin did at take. Each device keeps
# a reserve of chunk descriptors and buffers for one batch of copies, and
# a copy's I/O and place are part of its chunk. Failed on c2aaf90: an
# allocation of a copy failed (-ENOMEM) and corrupted the snapshot.
# Needs fault injection (the debug kernel); skipped elsewhere.
# timeout: 600
. /tests/common.sh

fault_injection
fi=/sys/kernel/debug
for f in failslab fail_page_alloc; do
	echo Y > $fi/$f/task-filter
	echo 1 > $fi/$f/interval
	echo -1 > $fi/$f/times
	echo 100 > $fi/$f/probability
done
load_module
orig=$(make_loop 256)
store=$(make_loop 160)
gen 31 $((256 * 1048576)) > "$orig" || fail "cannot fill $orig"
id=$(raw_take "$orig" "$store" 0:327680) || exit 1
img=$(image_of "$id" "$orig")
before=$(sha "$img")

# 300 chunks of 256 KiB (the default chunk), more than the reserve (16)
# and the cache (32) together.
out=$(gen 32 $((300 * 4096)) | bsctl starved-write "$orig" 262144 300)
for f in failslab fail_page_alloc; do
	echo 0 > $fi/$f/probability
	echo N > $fi/$f/task-filter
done
[ "$out" = "OK writes=300" ] || fail "the starved writes gave '$out'"
dmesg | grep -m1 -i "corrupt" && fail "the snapshot was corrupted (above)"
[ "$(sha "$img")" = "$before" ] || fail "the image no longer reads as the origin at take"
fault_dmesg_clean
bsok destroy "$id" > /dev/null
exit 0
