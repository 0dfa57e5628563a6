# APPEND_STORAGE refuses empty, unaligned, past-the-end and overlapping
# ranges, zero and huge counts and bad pointers, and appends nothing when
# one range of a call is bad. (The seed accepted all of them; unaligned
# storage later failed in diff_io, ranges past the end wrote who knows
# where.)
# timeout: 120
. /tests/common.sh

load_module
dev=$(make_loop 64)
store=$(make_loop 64)      # 131072 sectors
s=$(devnum $store)
id=$(bsok create "$(devnum $dev)")
expect_err EINVAL bsctl append "$id" "$s" 0:0
expect_err EINVAL bsctl append "$id" "$s" 4:64
expect_err EINVAL bsctl append "$id" "$s" 0:60
expect_err EINVAL bsctl append "$id" "$s" 131072:8
expect_err EINVAL bsctl append "$id" "$s" 131064:16
expect_err EINVAL bsctl append "$id" "$s" 18446744073709551608:16
expect_err EINVAL bsctl append "$id" "$s" 0:64 32:64
expect_err EINVAL bsctl append-raw "$id" "$s" 0 BUF
expect_err E2BIG bsctl append-raw "$id" "$s" 4294967295 BUF
expect_err EFAULT bsctl append-raw "$id" "$s" 1 NULL
expect_err EFAULT bsctl append-raw "$id" "$s" 1 WILD
expect_err ESRCH bsctl append 00000000-0000-0000-0000-000000000000 "$s" 0:64
bsctl append "$id" 4095:1048575 0:64 | grep -Eq '^ERR (ENXIO|ENODEV)$' ||
	fail "a nonexistent storage device was not refused"
bsctl append "$id" 5000:0 0:64 | grep -q '^ERR EINVAL$' ||
	fail "a device number too large for dev_t was not refused"
# A good and a bad range in one call: nothing is appended ...
expect_err EINVAL bsctl append "$id" "$s" 0:64 200000:8
# ... so the good one can be given again, after which it overlaps.
bsok append "$id" "$s" 0:64 > /dev/null
expect_err EINVAL bsctl append "$id" "$s" 56:8
bsok append "$id" "$s" 64:65472 > /dev/null
bsok take "$id" > /dev/null
bsok destroy "$id" > /dev/null
exit 0
