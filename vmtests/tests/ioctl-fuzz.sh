# 100,000 random ioctls (valid and invalid commands, random structures,
# NULL and wild pointers, huge counts, real and made-up devices and
# snapshot ids) leave the kernel clean: no warning, no oops, and the
# module unloads afterwards.
# timeout: 900
. /tests/common.sh

load_module
a=$(make_loop 32); b=$(make_loop 32); c=$(make_loop 64)
out=$(bsctl fuzz 100000 12345 "$(devnum $a)" "$(devnum $b)" "$(devnum $c)") ||
	fail "fuzzer failed: $out"
echo "$out"
case "$out" in
"OK 100000 calls"*) ;;
*) fail "fuzzer said '$out'" ;;
esac
[ "$(bsok collect)" = 0 ] || fail "snapshots left after the fuzzer destroyed them"
unload_module
exit 0
