#!/bin/bash
# Apply the format-patch series with git am to a pristine tree and build
# what it touches: the block layer files of the filter hook and the module.
# usage: check-series.sh TARBALL SERIESDIR WORKDIR CONFIG_FRAGMENT
set -euo pipefail

tarball=$1 series=$2 work=$3 frag=$4
rm -rf "$work" && mkdir -p "$work"
tar -xf "$tarball" -C "$work" --strip-components=1
cd "$work"
export GIT_AUTHOR_NAME="blksnap check" GIT_AUTHOR_EMAIL="check@localhost"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
git init -q . && git add -f -A . >/dev/null && git commit -q -m base
patches=$(ls "$series"/*.patch | grep -v '/0000-')
git am -q $patches
echo "  APPLY   $(echo "$patches" | wc -l) patches applied with git am"
make -s tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m .config "$frag" >/dev/null
make -s olddefconfig >/dev/null
grep -q '^CONFIG_BLK_SNAP=m' .config || { echo "CONFIG_BLK_SNAP=m is not in .config" >&2; exit 1; }
make -s -j"$(nproc)" modules_prepare
make -s -j"$(nproc)" block/bdev.o block/blk-core.o
make -s -j"$(nproc)" M=drivers/block/blksnap modules 2>&1 | grep -v 'Module.symvers is missing' || true
test -f drivers/block/blksnap/blksnap.ko
echo "  BUILD   block/bdev.o block/blk-core.o drivers/block/blksnap/blksnap.ko built"
