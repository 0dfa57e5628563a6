#!/bin/bash
# Build the test initramfs: busybox-static, the guest init, blksnap.ko,
# blksnap-storage, bsctl, the tests, and the host's mkfs/fsck/fio/dmsetup
# binaries with the shared libraries they need.
# usage: mkinitramfs.sh OUT.cpio.gz BLKSNAP_KO BLKSNAP_STORAGE BSCTL
# env (for a stock kernel, see mk/standalone.mk): VM_KMODS, the kernel's
# own modules in load order, which the guest init loads at boot;
# VM_FILTER_KO, bdev_filter.ko, which load_module loads before blksnap;
# VM_TEST_KOS, test-only modules, put in /lib/modules/test/;
# VM_EXTRA_TOOLS, more host tools (perf for make bench BENCH_PROFILE=1).
set -euo pipefail

out=$1 ko=$2 cli=$3 bsctl=$4
here=$(cd "$(dirname "$0")" && pwd)
root=$(mktemp -d)
chmod 755 "$root"
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,lib/modules,etc,proc,sys,dev,tmp,run,mnt,var,tests}
cp /bin/busybox "$root/bin/busybox"
cp "$here/guest/init" "$root/init"
chmod +x "$root/init"
cp "$ko" "$root/lib/modules/blksnap.ko"
if [ -n "${VM_FILTER_KO:-}" ]; then
	cp "$VM_FILTER_KO" "$root/lib/modules/bdev_filter.ko"
fi
if [ -n "${VM_TEST_KOS:-}" ]; then
	mkdir -p "$root/lib/modules/test"
	for m in $VM_TEST_KOS; do cp "$m" "$root/lib/modules/test/"; done
fi
if [ -n "${VM_KMODS:-}" ]; then
	mkdir -p "$root/lib/modules/boot"
	n=0
	for m in $VM_KMODS; do
		n=$((n + 1))
		dst=$(printf '%02d-%s' $n "$(basename "$m" | sed 's/\.xz$//; s/\.zst$//')")
		case "$m" in
		*.xz) xz -dc "$m" > "$root/lib/modules/boot/$dst" ;;
		*.zst) zstd -qdc "$m" > "$root/lib/modules/boot/$dst" ;;
		*) cp "$m" "$root/lib/modules/boot/$dst" ;;
		esac
	done
fi
cp "$cli" "$root/usr/bin/blksnap-storage"
cp "$bsctl" "$root/usr/bin/bsctl"
cp "$here"/tests/*.sh "$here"/harness/*.sh "$root/tests/"
[ -f "$here/demo.sh" ] && cp "$here/demo.sh" "$root/tests/demo.sh"
[ -f "$here/bench.sh" ] && cp "$here/bench.sh" "$root/tests/bench.sh"
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "root:x:0:" > "$root/etc/group"
touch "$root/etc/mtab"

# Host tools the tests use, with their libraries.
tools="mke2fs e2fsck debugfs filefrag chattr lsattr e4defrag mkfs.xfs xfs_repair xfs_io xfs_db xfs_fsr
       fio dmsetup losetup blockdev fallocate flock blkdiscard strace chrt ${VM_EXTRA_TOOLS:-}"
for t in $tools; do
	path=$(command -v "$t" || true)
	[ -n "$path" ] || { echo "mkinitramfs: $t not found on the host" >&2; exit 1; }
	cp -L "$path" "$root/usr/sbin/$t"
	ldd "$path" 2>/dev/null | grep -oE '/[^ ]+' | while read -r lib; do
		[ -f "$lib" ] || continue
		mkdir -p "$root$(dirname "$lib")"
		cp -Ln "$lib" "$root$lib"
	done
done
ln -sf mke2fs "$root/usr/sbin/mkfs.ext4"
ln -sf e2fsck "$root/usr/sbin/fsck.ext4"
# mkfs.xfs reads its defaults from here when present.
[ -d /usr/share/xfsprogs ] && mkdir -p "$root/usr/share" && cp -r /usr/share/xfsprogs "$root/usr/share/"

(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
