# MARK_DIRTY_BLOCKS on a snapshot image works while another snapshot is not
# taken yet, fails with ENODEV for an unknown image, and refuses ranges
# that are empty or past the end without marking anything. (The seed
# walked snapimage_array with a broken index and dereferenced the NULL
# image of an untaken snapshot.)
# timeout: 120
. /tests/common.sh

load_module tracking_block_minimum_shift=16
a=$(make_loop 64); b=$(make_loop 64); store=$(make_loop 64)
untaken=$(bsok create "$(devnum $a)")
id=$(bsok create "$(devnum $b)")
bsok append "$id" "$(devnum $store)" 0:65536 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $b)
major=$(cat /sys/class/misc/blksnap/major)
minor=$(devnum "$img" | cut -d: -f2)
bsok markdirty "$major:$minor" 256:8 > /dev/null
got=$(bsok cbtread "$(devnum $b)" 0 1024)
[ "$got" = "1024 2=1" ] || fail "after marking sector 256 the map is '$got'"
expect_err ENODEV bsctl markdirty "$major:$((minor + 7))" 0:8
expect_err EINVAL bsctl markdirty "$major:$minor" 0:0
expect_err EINVAL bsctl markdirty "$major:$minor" 131064:16
expect_err EINVAL bsctl markdirty "$(devnum $b)" 8:8 131072:8
got=$(bsok cbtread "$(devnum $b)" 0 1024)
[ "$got" = "1024 2=1" ] || fail "a refused call changed the map: '$got'"
bsok destroy "$id" > /dev/null
bsok destroy "$untaken" > /dev/null
exit 0
