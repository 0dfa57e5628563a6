#!/bin/bash
# Scenario: a kernel upgrade. apt installs blksnap-dkms on a Debian 12
# system that has the headers of an older kernel ABI from the archive
# (DKMS builds, signs and installs both modules for it), then the headers
# of the current ABI, whose installation has DKMS build them again for
# that one. Host chroot only, no boot.
#
# usage: dkms-abis.sh DEBDIR OUTDIR
# env:   DEB_ABIS (default "6.1.0-50-amd64 6.1.0-57-amd64": installed, then upgraded to),
#        DEB_CACHE (the archive's .deb files, default OUTDIR/../deb-cache)
# Leaves the chroot in OUTDIR/root for dkms-refuses.sh.
set -uo pipefail
. "$(dirname "$0")/common.sh"

debdir=$1 out=$2
DEB_CACHE=${DEB_CACHE:-$(dirname "$out")/deb-cache}
read -r -a abis <<< "${DEB_ABIS:-6.1.0-50-amd64 6.1.0-57-amd64}"
t=dkms-builds-for-two-abis
mkdir -p "$out"
start=$SECONDS

pkgs=(dkms openssl kmod "linux-headers-${abis[0]}")
upgrade=("${abis[@]:1}")
echo "  CHROOT  $out/root: Debian 12 with ${pkgs[*]}, apt install the packages, then ${upgrade[*]/#/linux-headers-}"
if ! DEB_AFTER="echo @@@ upgrade; DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${upgrade[*]/#/linux-headers-}" deb_rootfs "$out/root" "$debdir" "$out/mmdebstrap.log" "${pkgs[@]}"; then
	fail $t "mmdebstrap or apt failed: $(grep -E '^E: |Error!|error' "$out/mmdebstrap.log" | tail -n 2 | tr '\n' ' ')(log: $out/mmdebstrap.log)"
	finish
fi
echo "  apt + DKMS took $(elapsed $start)"
grep -E '^(Building for|Building initial module|Signing|Done|Skipped|blksnap-dkms:|@@@ upgrade|dkms: running auto|dkms: autoinstall|.*blksnap.ko:|.*bdev_filter.ko:)' \
	"$out/mmdebstrap.log" | sed 's/^/    /'

mount -t proc proc "$out/root/proc"
status=$(chroot "$out/root" dkms status blksnap 2>&1)
umount "$out/root/proc"
echo "$status" | sed 's/^/    dkms status: /'
why=
for a in "${abis[@]}"; do
	echo "$status" | grep -q "^blksnap/1.0.0, $a, x86_64: installed" ||
		why="${why}not installed for $a; "
	for m in bdev_filter blksnap; do
		f=$(ls "$out/root/lib/modules/$a/updates/dkms/$m.ko"* 2>/dev/null | head -n 1)
		if [ -z "$f" ]; then
			why="${why}no $m.ko for $a; "
			continue
		fi
		# vermagic says which kernel it was built for; sig_id that DKMS signed it.
		info=$(chroot "$out/root" modinfo "${f#"$out/root"}")
		echo "$info" | grep -q "^vermagic: *$a " || why="${why}$m.ko vermagic is not $a; "
		echo "$info" | grep -q "^signer: *DKMS module signing key" || why="${why}$m.ko not signed by DKMS's key; "
	done
	# blksnap needs bdev_filter's symbols: depmod must have recorded that.
	grep -q "^updates/dkms/blksnap.ko[^:]*:.*updates/dkms/bdev_filter.ko" \
		"$out/root/lib/modules/$a/modules.dep" 2>/dev/null ||
		why="${why}modules.dep of $a lacks blksnap -> bdev_filter; "
done
if [ -z "$why" ]; then
	pass "$t (${abis[*]})"
else
	fail $t "$why(log: $out/mmdebstrap.log)"
fi
echo "  took $(elapsed $start)"
finish
