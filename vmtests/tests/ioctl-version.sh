# IOCTL_BLK_SNAP_VERSION answers the module's version; every ioctl needs
# CAP_SYS_ADMIN; unknown ioctl numbers and mismatched sizes get ENOTTY.
# timeout: 60
. /tests/common.sh

load_module
v=$(bsok version)
[ "$v" = "1.0.0.0" ] || fail "version is '$v'"
[ "$(cat /sys/class/misc/blksnap/version)" = "$v" ] || fail "sysfs version differs"
# _IOC(dir=0, 'V', nr=99, size=0) and the version number with another size.
expect_err ENOTTY bsctl raw 0x5663 NULL
expect_err ENOTTY bsctl raw 0x80045600 NULL
# The same call without CAP_SYS_ADMIN.
out=$(chmod 666 /dev/blksnap && su -s /bin/sh nobody -c "bsctl version" 2>&1 || true)
case "$out" in
"ERR EPERM"|"ERR EACCES") ;;
*) echo "nobody:x:65534:65534::/:/bin/sh" >> /etc/passwd
   out=$(su -s /bin/sh nobody -c "bsctl version" 2>&1 || true)
   [ "$out" = "ERR EPERM" ] || fail "unprivileged caller got '$out'" ;;
esac
exit 0
