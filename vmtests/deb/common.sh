#!/bin/bash
# Shared by the Debian package tests (one scenario per script): a Debian 12
# root file system from the archive with mmdebstrap, the two packages
# installed into it with apt (DKMS builds the modules in the chroot, against
# Debian's linux-headers), and a QEMU boot of it with Debian's own kernel,
# initrd and systemd.
# Debian's kernels are only installed into the chroot; they run only in
# QEMU (TCG), never on the host.

DEB_SUITE=bookworm
DEB_MIRRORS=("deb http://deb.debian.org/debian bookworm main"
	     "deb http://deb.debian.org/debian bookworm-updates main"
	     "deb http://deb.debian.org/debian-security bookworm-security main")
DEB_ABI=${DEB_ABI:-6.1.0-57-amd64}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

passed=0 failed=0 skipped=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }
finish() {
	if [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
	[ "$failed" -eq 0 ]
	exit
}

# elapsed SECONDS_AT_START: "N min S s"
elapsed() {
	local s=$((SECONDS - $1))
	echo "$((s / 60)) min $((s % 60)) s"
}

# deb_rootfs DIR DEBDIR LOG PACKAGE...: a Debian 12 system in DIR with
# PACKAGE... from the archive, then blksnap-dkms and blksnap-storage from
# DEBDIR installed with apt, as a user would (dkms builds the modules for
# every kernel whose headers are there). The archive's .deb files are kept
# in $DEB_CACHE between runs. Everything goes to LOG; fails if apt or
# mmdebstrap does. DEB_WITH: archive packages installed by the same apt
# command as the two packages. DEB_AFTER (a shell command) runs in the
# chroot after that, while apt still has its lists.
deb_rootfs() {
	local dir=$1 debdir=$2 log=$3
	shift 3
	local cache=${DEB_CACHE:?}
	local pkgs
	pkgs=$(IFS=,; echo "$*")
	mkdir -p "$cache"
	rm -rf "$dir"
	nice -n 19 mmdebstrap --mode=root --variant=minbase \
		--aptopt='APT::Install-Recommends "false"' \
		--aptopt='Acquire::Retries "3"' \
		--include="$pkgs" \
		--skip=essential/unlink \
		--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
		--setup-hook="sync-in $cache /var/cache/apt/archives/" \
		--customize-hook="copy-in $debdir/blksnap-dkms_1.0.0_all.deb $debdir/blksnap-storage_1.0.0_amd64.deb /tmp" \
		--customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends '"${DEB_WITH:-}"' /tmp/blksnap-dkms_1.0.0_all.deb /tmp/blksnap-storage_1.0.0_amd64.deb' \
		--customize-hook='rm -f "$1"/tmp/blksnap-*.deb' \
		${DEB_AFTER:+--customize-hook="chroot \"\$1\" sh -c '$DEB_AFTER'"} \
		--customize-hook="sync-out /var/cache/apt/archives $cache" \
		"$DEB_SUITE" "$dir" "${DEB_MIRRORS[@]}" >"$log" 2>&1
}

# deb_test_system DEBDIR OUT: OUT/root.img (ext4, Debian 12 with systemd,
# Debian's kernel DEB_ABI and its headers, dkms, and the two packages
# installed with apt, which has DKMS build the modules), OUT/vmlinuz and
# OUT/initrd.img (Debian's, from the chroot). The guest scenarios of
# vmtests/deb/guest/ are in /usr/local/lib/blksnap-test/; a systemd unit
# runs the one named by blksnap.test= on the kernel command line, then
# powers off.
deb_test_system() {
	local debdir=$1 out=$2 root=$2/rootfs start=$SECONDS
	DEB_CACHE=${DEB_CACHE:-$(dirname "$out")/deb-cache}
	mkdir -p "$out"
	echo "  ROOTFS  $root: Debian 12 + linux-image-$DEB_ABI, then apt install linux-headers-$DEB_ABI linux-headers-amd64 and the packages (DKMS)"
	# The apt command is the README's "Install on Debian 12" one.
	DEB_WITH="linux-headers-$DEB_ABI linux-headers-amd64" \
	deb_rootfs "$root" "$debdir" "$out/mmdebstrap.log" \
		systemd-sysv udev kmod mount e2fsprogs initramfs-tools zstd \
		"linux-image-$DEB_ABI" || {
		echo "deb-test: mmdebstrap or apt failed: $(grep -E '^E: |Error!' "$out/mmdebstrap.log" | tail -n 2 | tr '\n' ' ')(log: $out/mmdebstrap.log)" >&2
		return 1
	}
	grep -E '^(Building for|Building initial module|Done|Skipped|blksnap-dkms:)' "$out/mmdebstrap.log" | sed 's/^/    /'
	cp "$root/boot/vmlinuz-$DEB_ABI" "$out/vmlinuz"
	cp "$root/boot/initrd.img-$DEB_ABI" "$out/initrd.img"

	echo "/dev/vda / ext4 defaults 0 1" > "$root/etc/fstab"
	echo blksnap-deb-test > "$root/etc/hostname"
	install -d "$root/usr/local/lib/blksnap-test"
	install -m 0755 "$here"/guest/*.sh "$root/usr/local/lib/blksnap-test/"
	cat > "$root/etc/systemd/system/blksnap-test.service" <<'UNIT'
[Unit]
Description=blksnap package test (blksnap.test= on the kernel command line)
After=local-fs.target systemd-udev-settle.service
Wants=systemd-udev-settle.service
ConditionKernelCommandLine=blksnap.test

[Service]
Type=oneshot
ExecStart=/usr/local/lib/blksnap-test/run.sh
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/ttyS0
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
UNIT
	chroot "$root" systemctl enable blksnap-test.service >/dev/null 2>&1
	# Nothing else to wait for in a one-shot test guest.
	chroot "$root" systemctl mask getty@tty1.service serial-getty@ttyS0.service \
		e2scrub_all.timer e2scrub_reap.service apt-daily.timer \
		apt-daily-upgrade.timer >/dev/null 2>&1
	rm -f "$out/root.img"
	# The backup needs 1 GiB of storage and room for the archive.
	nice -n 19 mkfs.ext4 -q -F -L debroot -d "$root" "$out/root.img" "$(( $(du -sm "$root" | cut -f1) + 3072 ))M"
	echo "  system ready in $(elapsed $start): $out/root.img ($(du -sh --apparent-size "$out/root.img" | cut -f1))"
}

# deb_boot OUT NAME SECONDS [APPEND...]: boot OUT/root.img with Debian's
# kernel and initrd under QEMU (TCG, under the VM lock), run guest scenario
# NAME, wait at most SECONDS. OUT/NAME.console has the serial console,
# OUT/NAME.results what the scenario wrote to its results port.
deb_boot() {
	local out=$1 name=$2 secs=$3 start
	shift 3
	: > "$out/$name.results"
	echo "  QEMU    $name: waiting for /tmp/blksnap-vm.lock"
	flock /tmp/blksnap-vm.lock bash -c '
		echo "  QEMU    '"$name"': lock taken at $(date -u +%H:%M:%S) UTC"
		exec "$@"' _ \
	timeout -s KILL "$secs" qemu-system-x86_64 \
		-accel "${VM_ACCEL:-tcg}" -m "${VM_MEM:-2048}" -smp "${VM_CPUS:-2}" \
		-display none -monitor none -no-reboot -nic none \
		-kernel "$out/vmlinuz" -initrd "$out/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=false blksnap.test=$name $*" \
		-serial "file:$out/$name.console" \
		-device virtio-serial-pci \
		-chardev "file,id=results,path=$out/$name.results" \
		-device virtserialport,chardev=results,name=results \
		-drive "file=$out/root.img,if=none,id=root,format=raw,cache=unsafe" \
		-device virtio-blk-pci,drive=root \
		> "$out/$name.qemu" 2>&1
}
