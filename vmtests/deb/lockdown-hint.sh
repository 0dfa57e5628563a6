#!/bin/bash
# Scenario: the Debian 12 system of install-and-backup.sh booted with
# lockdown=integrity (what Secure Boot turns on): the kernel refuses the
# DKMS-signed modules, and "modprobe blksnap" and blksnap-storage each say
# how to enrol DKMS's key (guest/lockdown-hint.sh).
#
# usage: lockdown-hint.sh DEBDIR OUTDIR
# Boots OUTDIR/root.img if install-and-backup.sh left one (DEB_REUSE=0
# rebuilds it). env: DEB_TEST_TIMEOUT (guest seconds, 900)
set -uo pipefail
. "$(dirname "$0")/common.sh"

debdir=$1 out=$2
t=lockdown-hint
start=$SECONDS
if [ "${DEB_REUSE:-1}" != 1 ] || [ ! -f "$out/root.img" ]; then
	deb_test_system "$debdir" "$out" || { fail $t "could not build the Debian system"; finish; }
fi
deb_boot "$out" $t "${DEB_TEST_TIMEOUT:-900}" lockdown=integrity
qrc=$?
verdict=$(grep -aE "^(PASS|FAIL) $t" "$out/$t.results" | tail -n 1)
if [ -n "$verdict" ]; then
	sed -n "/@@@ START $t/,/@@@ END $t/p" "$out/$t.console" | tr -d '\r' |
		grep -av '^@@@' | sed 's/^/    /'
	case "$verdict" in
	PASS*) pass "${verdict#PASS }" ;;
	*) fail $t "${verdict#FAIL $t: }" ;;
	esac
elif [ "$qrc" -eq 137 ]; then
	fail $t "the guest did not finish in ${DEB_TEST_TIMEOUT:-900} s (console: $out/$t.console)"
else
	fail $t "no verdict from the guest, QEMU exited $qrc (console: $out/$t.console)"
fi
echo "  took $(elapsed $start) in all"
finish
