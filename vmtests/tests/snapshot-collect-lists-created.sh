# Snapshots created one after the other are all listed by COLLECT, and
# destroyed ones disappear. (The seed's snapshot_create() called
# list_add_tail() with its arguments swapped: the list lost snapshots.)
# timeout: 120
. /tests/common.sh

load_module
a=$(make_loop 64); b=$(make_loop 64); c=$(make_loop 64)
ida=$(bsok create "$(devnum $a)")
idb=$(bsok create "$(devnum $b)")
idc=$(bsok create "$(devnum $c)")
got=$(bsok collect)
[ "$got" = "3 $ida $idb $idc" ] || fail "collect gave '$got', expected 3 snapshots $ida $idb $idc"
bsok destroy "$idb" > /dev/null
got=$(bsok collect)
[ "$got" = "2 $ida $idc" ] || fail "after destroy collect gave '$got'"
bsok destroy "$ida" > /dev/null
bsok destroy "$idc" > /dev/null
[ "$(bsok collect)" = "0" ] || fail "snapshots left after destroying all"
expect_err ESRCH bsctl destroy "$ida"
exit 0
