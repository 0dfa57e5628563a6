#!/bin/bash
# Build the Debian packages blksnap-dkms and blksnap-storage with Debian's
# own tools (dpkg-buildpackage, debhelper, dh-dkms), then check them with
# lintian.
#
# usage: build-deb.sh OUTDIR
# The source tree (tracked and untracked files that git does not ignore,
# as they are in the work tree) is copied to OUTDIR/src first, so that the
# build's by-products (debian/.debhelper, debian/build, ...) never land in
# the checkout. OUTDIR receives the .deb, .changes and .buildinfo files
# and lintian.txt. Fails if lintian reports an error.
set -euo pipefail

out=$1
top=$(cd "$(dirname "$0")/.." && pwd)
src=$out/src/blksnap
rm -rf "$out" && mkdir -p "$src"

cd "$top"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# Deleted but still tracked files are left out.
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf - | tar -C "$src" -xf -
else
	tar --exclude=./build -cf - . | tar -C "$src" -xf -
fi

echo "  DEB     $out (dpkg-buildpackage in $src)"
(cd "$src" && nice -n 19 dpkg-buildpackage -b -uc -us --no-sign) > "$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
	exit 1
}
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
ls -1 "$out"/*.deb

# lintian on the built packages; the tags it prints are kept in lintian.txt.
nice -n 19 lintian --display-info --pedantic "$out"/*.changes > "$out/lintian.txt" 2>&1 || true
if [ -s "$out/lintian.txt" ]; then
	cat "$out/lintian.txt"
fi
if grep -q '^E: ' "$out/lintian.txt"; then
	echo "build-deb: lintian reports errors (above)" >&2
	exit 1
fi
echo "  LINTIAN no errors ($(grep -c '^W: ' "$out/lintian.txt" || true) warnings)"
