# 'cbt mark-dirty' marks exactly the tracking blocks of the ranges it is
# given, on the original device and on its snapshot image (a single
# sector, a range across a block boundary, whole blocks, the last sector):
# 'cbt read' lists those blocks and nothing else, a call with one range
# past the end fails (exit 1) and marks nothing, and the marks are carried
# into the next snapshot of the same generation. The origin is a raw,
# unmounted device so that nothing else writes to it.
# timeout: 150
. /tests/common.sh

orig=/dev/vdb
load_module
storage_fs
cap=$(sectors $orig)
id=$(snap_take /mnt/st/diff1 64M $orig) || exit 1
img=$(cli_image "$id" $orig) || exit 1
bs=$(($(cbt_field $orig block_size) / 512))
gen1=$(cbt_field $orig generation) || exit 1
[ -z "$(cbt_blocks $orig --since 0)" ] || fail "blocks flagged before anything was written"

# On the original: START:COUNT in sectors.
r1="7:1 $((bs * 5 - 1)):2 $((bs * 100)):$((bs * 3)) $((cap - 1)):1"
run blksnap-storage cbt mark-dirty $orig $r1
echo "$r1" | tr ' :' '\n ' | ranges_blocks $bs > /tmp/want1
[ "$(tr '\n' ' ' < /tmp/want1)" = "0 4 5 100 101 102 $(((cap - 1) / bs)) " ] ||
	fail "test bug: ranges map to $(tr '\n' ' ' < /tmp/want1)"
got=$(cbt_blocks $orig --since 0 | tr '\n' ' ') || exit 1
[ "$got" = "$(tr '\n' ' ' < /tmp/want1)" ] || fail "after mark-dirty on $orig: '$got', want '$(tr '\n' ' ' < /tmp/want1)'"

# On the image: the same table.
r2="$((bs * 200 + 3)):5 $((bs * 300)):$((bs + 1))"
run blksnap-storage cbt mark-dirty "$img" $r2
echo "$r1 $r2" | tr ' :' '\n ' | ranges_blocks $bs > /tmp/want2
[ "$(wc -l < /tmp/want2)" = 10 ] || fail "test bug: $(wc -l < /tmp/want2) blocks expected"
got=$(cbt_blocks $orig --since 0 | tr '\n' ' ') || exit 1
[ "$got" = "$(tr '\n' ' ' < /tmp/want2)" ] || fail "after mark-dirty on $img: '$got', want '$(tr '\n' ' ' < /tmp/want2)'"

# One bad range: refused as a whole, nothing marked.
for dev in $orig "$img"; do
	out=$(blksnap-storage cbt mark-dirty $dev $((bs * 400)):8 $((cap - 4)):8 2>&1)
	[ $? = 1 ] || fail "mark-dirty $dev with a range past the end did not exit 1: $out"
	case "$out" in "blksnap-storage: cbt mark-dirty: "*) ;; *) fail "unexpected message: $out" ;; esac
done
got=$(cbt_blocks $orig --since 0 | tr '\n' ' ') || exit 1
[ "$got" = "$(tr '\n' ' ' < /tmp/want2)" ] || fail "a refused mark-dirty changed the map: '$got'"

# The next snapshot still lists them as changed since the previous one.
snap_destroy "$id" /mnt/st/diff1
id=$(snap_take /mnt/st/diff2 64M $orig) || exit 1
[ "$(cbt_field $orig generation)" = "$gen1" ] || fail "the generation changed"
got=$(cbt_blocks $orig | tr '\n' ' ') || exit 1
[ "$got" = "$(tr '\n' ' ' < /tmp/want2)" ] || fail "marks not carried into the next snapshot: '$got'"
snap_destroy "$id" /mnt/st/diff2
no_snapshots
exit 0
