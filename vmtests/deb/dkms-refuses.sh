#!/bin/bash
# Scenario: DKMS refuses, at build time and with one line saying why, a
# kernel that blksnap-dkms does not support (another version; a 6.1
# without the ftrace feature the hook needs), and such a kernel still
# installs: the refusal is a DKMS "skip" (status 77), not an error of the
# kernel's postinst hook. Host chroot only, no boot.
#
# usage: dkms-refuses.sh OUTDIR   (the chroot dkms-abis.sh left in OUTDIR/root)
# The refused kernels are header directories made from 6.1.0-57's: only
# their version or their .config differs, which is what DKMS looks at.
set -uo pipefail
. "$(dirname "$0")/common.sh"

root=$1/root
src=$root/usr/src/linux-headers-$DEB_ABI
if [ ! -f "$src/.config" ]; then
	echo "dkms-refuses: no chroot with $DEB_ABI headers in $root: run dkms-abis.sh first" >&2
	exit 2
fi
mounts=()
cleanup() {
	local m
	for m in "${mounts[@]}"; do umount "$m"; done
	rm -rf "$root"/lib/modules/6.12.0-99-amd64 "$root"/lib/modules/6.1.0-98-amd64 \
		"$root"/var/lib/dkms/blksnap/1.0.0/6.12.0-99-amd64 \
		"$root"/var/lib/dkms/blksnap/1.0.0/6.1.0-98-amd64
}
trap cleanup EXIT
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
mount --bind /dev "$root/dev" && mounts+=("$root/dev")

# fake_kernel VERSION SED: /lib/modules/VERSION/build with 6.1.0-57's
# .config edited by SED.
fake_kernel() {
	local d=$root/lib/modules/$1/build
	rm -rf "$root/lib/modules/$1" && mkdir -p "$d/include"
	sed "$2" "$src/.config" > "$d/.config"
}

# refused NAME VERSION EXPECTED-REASON
refused() {
	local name=$1 kver=$2 want=$3 outp rc hookout hookrc
	outp=$(chroot "$root" dkms build blksnap/1.0.0 -k "$kver" 2>&1)
	rc=$?
	echo "$outp" | grep '^blksnap-dkms:' | sed 's/^/    /'
	# What a kernel installation runs (linux-headers' postinst hook).
	hookout=$(chroot "$root" /etc/kernel/header_postinst.d/dkms "$kver" 2>&1)
	hookrc=$?
	if [ "$rc" -ne 77 ]; then
		fail "$name" "dkms build exited $rc, not 77 (skipped): $(echo "$outp" | tail -n 2 | tr '\n' ' ')"
	elif ! echo "$outp" | grep -q "^blksnap-dkms: not building for kernel $kver: $want"; then
		fail "$name" "no line saying '$want': $(echo "$outp" | tr '\n' ' ')"
	elif [ "$hookrc" -ne 0 ]; then
		fail "$name" "the kernel's dkms hook failed ($hookrc): $(echo "$hookout" | tail -n 2 | tr '\n' ' ')"
	elif ! echo "$hookout" | grep -q "^blksnap-dkms: not building for kernel $kver"; then
		fail "$name" "the kernel's dkms hook did not say why: $(echo "$hookout" | tr '\n' ' ')"
	elif ls "$root/lib/modules/$kver/updates/dkms/"*.ko* >/dev/null 2>&1; then
		fail "$name" "modules were installed for $kver"
	else
		pass "$name"
	fi
}

fake_kernel 6.12.0-99-amd64 's/^CONFIG_LOCALVERSION=.*/&/'
refused dkms-refuses-linux-6.12 6.12.0-99-amd64 "it is Linux 6.12.0"

fake_kernel 6.1.0-98-amd64 '/^CONFIG_DYNAMIC_FTRACE_WITH_ARGS=/d'
refused dkms-refuses-6.1-without-ftrace-args 6.1.0-98-amd64 \
	"its configuration lacks CONFIG_DYNAMIC_FTRACE_WITH_ARGS"
finish
