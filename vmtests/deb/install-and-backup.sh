#!/bin/bash
# Scenario: Debian 12 built from the archive, with Debian's kernel, its
# headers and the two packages installed by apt (DKMS builds the modules
# in the chroot, on the host), booted under QEMU with Debian's vmlinuz,
# initrd and systemd: "modprobe blksnap" and a backup with
# "blksnap-storage snapshot ... / -- tar" whose files match the checksums
# taken before (guest/install-and-backup.sh).
#
# usage: install-and-backup.sh DEBDIR OUTDIR
# env:   DEB_ABI (6.1.0-57-amd64), DEB_TEST_TIMEOUT (guest seconds, 1500),
#        DEB_REUSE=1 boots the OUTDIR/root.img of a previous run as it is
set -uo pipefail
. "$(dirname "$0")/common.sh"

debdir=$1 out=$2
t=install-and-backup
start=$SECONDS
if [ "${DEB_REUSE:-0}" != 1 ] || [ ! -f "$out/root.img" ]; then
	deb_test_system "$debdir" "$out" || { fail $t "could not build the Debian system"; finish; }
fi
boot_start=$SECONDS
deb_boot "$out" $t "${DEB_TEST_TIMEOUT:-1500}"
qrc=$?
echo "  guest ran $(elapsed "$boot_start") (lock wait included); transcript: $out/$t.console"
verdict=$(grep -aE "^(PASS|FAIL) $t" "$out/$t.results" | tail -n 1)
if [ -n "$verdict" ]; then
	# The scenario's transcript, from the console.
	sed -n "/@@@ START $t/,/@@@ END $t/p" "$out/$t.console" | tr -d '\r' |
		grep -av '^\[ *[0-9.]*\] \|^@@@' | sed 's/^/    /'
	case "$verdict" in
	PASS*) pass "${verdict#PASS }" ;;
	*) fail $t "${verdict#FAIL $t: }" ;;
	esac
elif [ "$qrc" -eq 137 ]; then
	fail $t "the guest did not finish in ${DEB_TEST_TIMEOUT:-1500} s (console: $out/$t.console)"
else
	fail $t "no verdict from the guest, QEMU exited $qrc (console: $out/$t.console)"
fi
echo "  took $(elapsed $start) in all"
finish
