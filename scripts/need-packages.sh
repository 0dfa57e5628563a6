#!/bin/bash
# Make sure the Debian packages given as arguments are installed.
# As root, missing ones are installed with apt-get (and named first);
# otherwise they are named in one message and the script fails.
set -euo pipefail

missing=()
for pkg in "$@"; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	[[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "blksnap: missing Debian packages: ${missing[*]}" >&2
	echo "blksnap: install them with: apt-get install ${missing[*]}" >&2
	exit 1
fi

echo "blksnap: installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt may be running: wait for its lock (up to 10 minutes)
# instead of failing with "Could not get lock".
apt=(apt-get -o DPkg::Lock::Timeout=600)
if ! "${apt[@]}" install -y -q --no-install-recommends "${missing[@]}" >/dev/null; then
	"${apt[@]}" update -q >/dev/null
	"${apt[@]}" install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
