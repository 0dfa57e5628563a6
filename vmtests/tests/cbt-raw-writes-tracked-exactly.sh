# Change block tracking on a raw, unmounted device, block for block: known
# byte ranges (single bytes, ranges across and up to block boundaries, the
# first and the last sector, direct and cached) are written after 'create'
# of a first snapshot, while it is taken, and after it is destroyed. After
# the second take the CBT map holds exactly the tracking blocks those writes
# touched - 1 where the last write came before the first take, 2 where it
# came after, 0 everywhere else: nothing missed, nothing extra - 'cbt read'
# lists exactly the blocks changed since the first snapshot (--since 0:
# all), and the generation is the same for both snapshots.
# timeout: 180
# kernels: both (the filter hook: every write reaches the change tracking)
. /tests/common.sh

orig=/dev/vdb
load_module
storage_fs
cap=$(sectors $orig)

id=$(blksnap-storage create $orig) || fail "create failed"
B=$(cbt_field $orig block_size) || exit 1
bs=$((B / 512))
nblk=$(cbt_field $orig blocks) || exit 1
last=$((nblk - 1))
[ "$nblk" = $(((cap + bs - 1) / bs)) ] || fail "cbt info: $nblk blocks of $B bytes for $cap sectors"
[ "$(cbt_field $orig capacity)" = $((cap * 512)) ] || fail "cbt info: wrong capacity"

# Writes before the first take: their blocks must carry 1.
: > /tmp/w1
w() { write_bytes $orig "$1" "$2" "$3"; echo "$(($1 / 512)) $(((($1 + $2 + 511) / 512) - $1 / 512))" >> "$4"; }
w 0 512 1 /tmp/w1                      # the first sector: block 0
w $((B * 10 + 100)) 50 2 /tmp/w1       # 50 bytes inside block 10
blksnap-storage add --snapshot "$id" /mnt/st/diff1 64M > /dev/null || fail "add failed"
run blksnap-storage take "$id"
gen1=$(cbt_field $orig generation) || exit 1
[ "$(cbt_field $orig snap_number)" = 1 ] || fail "snap_number is not 1 after the first take"

# Writes while the first snapshot is held and after it is gone: 2.
: > /tmp/w2
w $((B * 20 - 1)) 2 3 /tmp/w2          # one byte each side of a boundary: 19, 20
w $((B * 30)) $((B * 3)) 4 /tmp/w2     # exactly blocks 30..32
w $((B * 40)) $B 5 /tmp/w2             # exactly block 40, up to the boundary
snap_destroy "$id" /mnt/st/diff1
w $((B * 10 + 4096)) 4096 6 /tmp/w2    # block 10 again, now 2
w $((B * 51 - 1)) 1 7 /tmp/w2          # the last byte of block 50
w $(((cap - 1) * 512)) 512 8 /tmp/w2   # the last sector of the device
[ "$(cbt_field $orig generation)" = "$gen1" ] || fail "the generation changed after destroy"

id=$(snap_take /mnt/st/diff2 64M $orig) || exit 1
[ "$(cbt_field $orig generation)" = "$gen1" ] || fail "the generation changed between two snapshots"
[ "$(cbt_field $orig snap_number)" = 2 ] || fail "snap_number is not 2 after the second take"

# The expected map, byte for byte (bsctl prints its non-zero bytes).
ranges_blocks $bs < /tmp/w1 > /tmp/b1
ranges_blocks $bs < /tmp/w2 > /tmp/b2
[ "$(tr '\n' ' ' < /tmp/b2)" = "10 19 20 30 31 32 40 50 $last " ] ||
	fail "test bug: the writes touch blocks $(tr '\n' ' ' < /tmp/b2)"
want=$( (sed 's/$/=1/' /tmp/b1; sed 's/$/=2/' /tmp/b2) |
	sort -t= -k1,1n -k2,2nr | awk -F= '!seen[$1]++' | tr '\n' ' ')
got=$(bsok cbtread "$(devno $orig)" 0 "$nblk" | cut -d' ' -f2- | tr ' ' '\n' | sort -t= -k1,1n | tr '\n' ' ')
[ "$got" = "$want" ] || fail "CBT map: got '$got', want '$want'"

# What a backup tool reads: the changes since snapshot 1, and since 0.
got=$(cbt_blocks $orig | tr '\n' ' ') || exit 1
[ "$got" = "$(tr '\n' ' ' < /tmp/b2)" ] || fail "cbt read lists blocks '$got', want '$(tr '\n' ' ' < /tmp/b2)'"
got=$(cbt_blocks $orig --since 0 | tr '\n' ' ') || exit 1
[ "$got" = "$(sort -n -u /tmp/b1 /tmp/b2 | tr '\n' ' ')" ] || fail "cbt read --since 0 lists '$got'"
# The last range is cut at the capacity, and --generation checks the UUID.
lastline=$(blksnap-storage cbt read $orig | tail -n 1)
[ "$lastline" = "$(devno $orig) $((last * bs)) $((cap - last * bs))" ] ||
	fail "the last range is '$lastline'"
blksnap-storage cbt read --generation "$gen1" $orig > /dev/null || fail "cbt read --generation (current) failed"
other=00000000-0000-0000-0000-000000000001
blksnap-storage cbt read --generation $other $orig > /dev/null 2>&1
[ $? = 1 ] || fail "cbt read --generation OTHER did not fail with exit code 1"

snap_destroy "$id" /mnt/st/diff2
no_snapshots
exit 0
