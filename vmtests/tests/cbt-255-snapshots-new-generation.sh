# 255 snapshots of one device start a new CBT generation: snapshots 1 to
# 254 share a generation (snap_number counts 1..254, and a block written
# before the 254th take is listed after it), the 255th take switches to a
# new generation with nothing listed as changed, 'cbt read --generation
# OLD' then fails, and tracking goes on normally in the new generation.
# The loop uses bsctl (raw ioctls) for speed; its time is logged.
# timeout: 300
. /tests/common.sh

load_module
dev=$(make_loop 16) || exit 1
store=/dev/vdd
d=$(devno $dev)
s=$(devno $store)

# cycle: create, append 32 MiB of raw storage, take, destroy. bsctl is
# called directly, not through bsok (whose pipe to sed doubled the
# processes per call): it exits non-zero on any error.
cycle() {
	local id out
	id=$(bsctl create "$d") || fail "create: $id"
	id=${id#OK }
	out=$(bsctl append "$id" "$s" 0:65536) || fail "append: $out"
	out=$(bsctl take "$id") || fail "take: $out"
	out=$(bsctl destroy "$id") || fail "destroy: $out"
}

t0=$(uptime_s)
cycle
gen1=$(cbt_field $dev generation) || exit 1
n=1
while [ $n -lt 253 ]; do
	cycle
	n=$((n + 1))
done
[ "$(cbt_field $dev generation)" = "$gen1" ] || fail "the generation changed before 254 snapshots"
[ "$(cbt_field $dev snap_number)" = 253 ] || fail "snap_number is $(cbt_field $dev snap_number) after 253 takes"
write_bytes $dev 1048576 4096 1
id=$(bsok create "$d") || fail "$id"
bsok append "$id" "$s" 0:65536 > /dev/null
bsok take "$id" > /dev/null
[ "$(cbt_field $dev generation)" = "$gen1" ] || fail "the generation changed at the 254th take"
[ "$(cbt_field $dev snap_number)" = 254 ] || fail "snap_number is not 254 at the 254th take"
[ "$(cbt_blocks $dev | tr '\n' ' ')" = "$((1048576 / $(cbt_field $dev block_size))) " ] ||
	fail "the write before the 254th take is not listed"
bsok destroy "$id" > /dev/null

write_bytes $dev 2097152 4096 2
id=$(bsok create "$d") || fail "$id"
bsok append "$id" "$s" 0:65536 > /dev/null
bsok take "$id" > /dev/null
t1=$(uptime_s)
note "255 snapshots (create, append, take, destroy) took $(echo "$t0 $t1" | awk '{ print $2 - $1 }') s"
gen2=$(cbt_field $dev generation) || exit 1
[ "$gen2" != "$gen1" ] || fail "still generation $gen1 after 255 snapshots"
[ -z "$(cbt_blocks $dev --since 0)" ] || fail "blocks listed as changed in the new generation"
out=$(blksnap-storage cbt read --generation "$gen1" $dev 2>&1)
[ $? = 1 ] || fail "cbt read --generation OLD did not fail: $out"
bsok destroy "$id" > /dev/null

# The new generation tracks as usual.
write_bytes $dev 3145728 4096 3
id=$(bsok create "$d") || fail "$id"
bsok append "$id" "$s" 0:65536 > /dev/null
bsok take "$id" > /dev/null
[ "$(cbt_field $dev generation)" = "$gen2" ] || fail "the generation changed again"
[ "$(cbt_blocks $dev | tr '\n' ' ')" = "$((3145728 / $(cbt_field $dev block_size))) " ] ||
	fail "a write in the new generation is not listed"
bsok destroy "$id" > /dev/null
no_snapshots
exit 0
