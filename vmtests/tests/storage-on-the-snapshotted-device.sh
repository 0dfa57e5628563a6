# Difference storage may live on a device of the snapshot itself (a file
# in the origin's own file system is the usual case): the filter must not
# intercept its own writes to it. The image's sectors outside the storage
# range keep the data of take time.
# timeout: 180
# kernels: both (the filter hook: the driver's own I/O)
. /tests/common.sh

load_module
dev=$(make_loop 192)
# Data in the first 128 MiB, storage in the last 64 MiB (sector 262144 on).
write_random $dev 0 128 1
data_before=$(dd if=$dev bs=1M count=128 2>/dev/null | sha256sum | cut -d' ' -f1)
id=$(bsok create "$(devnum $dev)")
bsok append "$id" "$(devnum $dev)" 262144:131072 > /dev/null
bsok take "$id" > /dev/null
img=$(image_of "$id" $dev)
write_random $dev 8 48 2
img_data=$(dd if="$img" bs=1M count=128 2>/dev/null | sha256sum | cut -d' ' -f1)
[ "$img_data" = "$data_before" ] || fail "the image's data region changed"
dmesg | grep -q corrupted && fail "the snapshot was corrupted"
bsok destroy "$id" > /dev/null
exit 0
