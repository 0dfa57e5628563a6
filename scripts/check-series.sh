#!/bin/bash
# Apply the format-patch series to a pristine tree with git am, one patch
# at a time, and build after each (W=1, sparse with C=2): the block layer
# files of the filter hook whenever a patch touches block/ or include/, the
# driver as soon as it has a Makefile. A patch fails the check if its tree
# does not build, if it adds a compiler or sparse warning (block files: one
# the pristine tree does not have; driver: any), or if the driver refers to
# a symbol of its own that a later patch defines (the module would not
# link: modpost cannot tell without a built vmlinux, so this checks it).
# usage: check-series.sh TARBALL SERIESDIR WORKDIR CONFIG_FRAGMENT [PRISTINE_GIT]
# PRISTINE_GIT: a git tree whose tag "base" is TARBALL as extracted (what
# make-series.sh leaves): the pristine tree is checked out from it, which
# takes seconds where extracting and committing the tarball takes a minute.
set -euo pipefail

tarball=$1 series=$2 work=$3 frag=$4 pristine=${5:-}
drv=drivers/block/blksnap
block_objs="block/bdev.o block/blk-core.o"
export GIT_AUTHOR_NAME="blksnap check" GIT_AUTHOR_EMAIL="check@localhost"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
if [ -n "$pristine" ] && git -C "$pristine" rev-parse -q --verify base^{commit} >/dev/null; then
	work=$(realpath -m "$work")
	rm -rf "$work"
	git -C "$pristine" worktree prune
	git -C "$pristine" worktree add -q --detach "$work" base
	cd "$work"
else
	rm -rf "$work" && mkdir -p "$work"
	tar -xf "$tarball" -C "$work" --strip-components=1
	cd "$work"
	git init -q . && git add -f -A . >/dev/null && git commit -q -m base
fi
jobs=$(nproc)

# The configuration for the tree as it is now (CONFIG_BLK_SNAP exists from
# the Kconfig patch on), synced into include/config for kbuild. Only a
# patch that touches a Kconfig file, a configuration fragment or kconfig
# itself can change it: the others keep the tree as configured (half a
# minute a patch saved).
configure() {
	make -s tinyconfig >/dev/null
	scripts/kconfig/merge_config.sh -m .config "$frag" >/dev/null
	make -s olddefconfig >/dev/null
	make -s -j"$jobs" modules_prepare
}

# The warnings of a build, one per line as "file: message" (no line
# numbers, which a patch moves), sorted.
warnings() {
	{ grep -aE '(warning|error):' || true; } | sed -E 's/^([^:]+):[0-9]+:[0-9]+: /\1: /; s/^([^:]+):[0-9]+: /\1: /' | sort -u
}

build_block() {
	make -s -j"$jobs" W=1 C=2 $block_objs 2>&1 | warnings
}

configure
build_block > ../block-warnings.base
echo "  BUILD   pristine tree: $(wc -l < ../block-warnings.base) W=1/sparse warnings in $block_objs"

undefined_log=../driver-undefined.log
: > "$undefined_log"
n=0 failed=0
for p in $(ls "$series"/*.patch | grep -v '/0000-'); do
	n=$((n + 1))
	git am -q "$p"
	name=$(basename "$p")
	changed=$(git diff --name-only HEAD~1)
	if grep -qE '(^|/)Kconfig[^/]*$|\.config$|^scripts/kconfig/' <<< "$changed"; then
		configure
	elif grep -qE '^(include|arch)/' <<< "$changed"; then
		# What prepare generates from headers (asm-offsets and the like).
		make -s -j"$jobs" modules_prepare
	fi
	if grep -qE '^(block|include)/' <<< "$changed"; then
		new=$(build_block | comm -13 ../block-warnings.base -)
		if [ -n "$new" ]; then
			echo "  FAIL    $name: new warnings in $block_objs:"
			echo "$new" | sed 's/^/          /'
			failed=$((failed + 1))
		fi
	fi
	if grep -q '^include/uapi/' <<< "$changed"; then
		make -s headers
		echo '#include <linux/blksnap.h>' | gcc -x c -fsyntax-only -Wall -Iusr/include - ||
			{ echo "  FAIL    $name: include/uapi/linux/blksnap.h does not compile on its own"; failed=$((failed + 1)); }
	fi
	if [ -f $drv/Makefile ]; then
		grep -q '^CONFIG_BLK_SNAP=m' .config || { echo "  FAIL    $name: CONFIG_BLK_SNAP=m is not in .config"; failed=$((failed + 1)); continue; }
		out=$(make -s -j"$jobs" W=1 C=2 M=$drv modules 2>&1) || {
			echo "  FAIL    $name: the driver does not build:"
			echo "$out" | tail -n 20 | sed 's/^/          /'
			failed=$((failed + 1))
			continue
		}
		# Without a built vmlinux, modpost cannot check symbols (that
		# is done below) and BTF is not generated.
		bad=$(echo "$out" | grep -vE 'WARNING: modpost: "[^"]*" \[[^]]*\] undefined!|unresolved symbol warnings because|Module.symvers is missing|Modules may not have dependencies|You may get many unresolved|Symbol info of vmlinux is missing|Skipping BTF generation|^[[:space:]]*$' || true)
		if [ -n "$bad" ]; then
			echo "  FAIL    $name: the driver builds with warnings:"
			echo "$bad" | sed 's/^/          /'
			failed=$((failed + 1))
		fi
		objs=$(sed -n 's/^[[:space:]]*\([a-z_]*\)\.o.*/\1/p' $drv/Makefile)
		for o in $objs; do nm -u $drv/$o.o | awk '{ print $2 }'; done | sort -u > ../undef
		for o in $objs; do nm --defined-only -g $drv/$o.o | awk '{ print $3 }'; done | sort -u > ../def
		comm -23 ../undef ../def | sed "s|^|$name |" >> "$undefined_log"
		echo "  BUILD   $n $name: $drv ($(echo $objs | wc -w) objects)"
	else
		echo "  BUILD   $n $name"
	fi
done
echo "  APPLY   $n patches applied with git am"

test -f $drv/blksnap.ko || { echo "  FAIL    the last patch does not build $drv/blksnap.ko"; exit 1; }
# The driver's own symbols, as the whole series defines them: a patch that
# uses one before the patch that defines it would not link.
objs=$(sed -n 's/^[[:space:]]*\([a-z_]*\)\.o.*/\1/p' $drv/Makefile)
for o in $objs; do nm --defined-only -g $drv/$o.o | awk '{ print $3 }'; done | sort -u > ../def.final
early=$(awk 'NR == FNR { own[$1] = 1; next } own[$2]' ../def.final "$undefined_log")
if [ -n "$early" ]; then
	echo "  FAIL    patches that use a symbol of the driver before it is defined:"
	echo "$early" | sed 's/^/          /'
	failed=$((failed + 1))
fi
[ "$failed" -eq 0 ] || { echo "  FAIL    $failed problems in the series"; exit 1; }
echo "  BUILD   every patch builds ($block_objs, $drv with W=1 and sparse), no new warnings"
