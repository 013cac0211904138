#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make lint: every finding fails.
#   1. W=1 build, no warnings
#   2. sparse (C=2: every file), no warnings
#   3. checkpatch --strict on src/ and include/ (and the benchmark's
#      reference module, which W=1 and sparse also build, and the test-only
#      tests/tools/klp-other)
#   4. the module never toggles bottom halves (disassembly check)
#   5. shellcheck on every shell script of the tree, no finding
# 1, 2 and 4 against the headers of every supported kernel (6.1, 6.12 and
# their real-time flavors 6.1-rt and 6.12-rt), of those in XNC_LINT_KERNELS
# (tests/host/lint.sh: the kernels of the test run), or only KDIR when it
# is set.

set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
if [ -n "${KDIR:-}" ]; then
	kdirs=$KDIR
else
	kdirs='' troots=()
	for k in ${XNC_LINT_KERNELS:-6.1 6.12 6.1-rt 6.12-rt}; do
		d=$(XNC_KLINE=$k scripts/kernel.sh bkdir) ||
			{ echo "lint: no headers for $k (XNC_DEPS_KERNELS='$k' scripts/deps.sh)"; exit 1; }
		# Debian 13's: this script again, in the trixie root (its gcc-14)
		if [ "$(XNC_KLINE=$k scripts/kernel.sh root)" != / ]; then
			troots+=("$k")
		else
			kdirs="$kdirs $d"
		fi
	done
fi
rc=0
bad() { echo "lint: $*"; rc=1; }
for k in "${troots[@]}"; do
	XNC_KLINE=$k scripts/kernel.sh build env KDIR="$(XNC_KLINE=$k scripts/kernel.sh bkdir)" \
		XNC_LINT_NO_CHECKPATCH=1 "$top/scripts/lint.sh" || rc=1
done

# Build in a scratch copy: the tree's own xfrm_nocache.ko may be in use by a
# VM run, and lint must not clean or replace it.
tmp=$(mktemp -d /tmp/xnc-lint.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# kbuild DIR ARGS...: make M=DIR ARGS... modules against $kdir, only
# what it found, paths relative to DIR
kbuild() {
	local dir=$1
	shift
	make -C "$kdir" M="$dir" "$@" modules 2>&1 |
		grep -vE '^make(\[[0-9]+\])?: |^  (CC|LD|MODPOST|BTF|CHECK)|Skipping BTF generation|^$' |
		sed "s|$dir/||g"
}
build() {
	rm -rf "${tmp:?}"/*
	cp -r Kbuild src include "$tmp"/
	kbuild "$tmp" "$@"
}

# testonly WHAT TREE: a test-only module that bench/TREE lays out (the
# benchmark's reference module, its slab control), W=1 and sparse clean
testonly() {
	local what=$1 dir=$tmp-$2 out
	out=$("bench/$2" "$dir" && kbuild "$dir" W=1)
	[ -z "$out" ] || bad "$k: W=1 build of $what is not clean:"$'\n'"$out"
	out=$("bench/$2" "$dir" && kbuild "$dir" C=2 CHECK="sparse -Wno-declaration-after-statement")
	[ -z "$out" ] || [ -n "$nosparse" ] || bad "$k: sparse on $what is not clean:"$'\n'"$out"
	rm -rf "$dir"
}

for kdir in $kdirs; do
	k=$(basename "$kdir")
	nosparse=
	out=$(build W=1)
	[ -z "$out" ] || bad "$k: W=1 build is not clean:"$'\n'"$out"
	out=$(build C=2 CHECK="sparse -Wno-declaration-after-statement")
	if grep -q 'not available or not up to date' <<<"$out"; then
		# 7.3's kbuild refuses trixie's sparse 0.6.4, which cannot
		# parse its headers (__typeof_unqual__): say so, go on
		echo "lint: $k: no sparse: $(grep -m1 -o 'C=.*' <<<"$out")"
		nosparse=1
	elif [ -n "$out" ]; then
		bad "$k: sparse is not clean:"$'\n'"$out"
	fi

	# No local_bh_disable()/local_bh_enable() anywhere in our object:
	# resolution must not toggle bottom halves (calls into the kernel
	# may, that is theirs).
	out=$(objdump -dr "$tmp/xfrm_nocache.ko" |
	      grep -E '(local_bh_(disable|enable)|__local_bh_enable_ip|_raw_spin_(un)?lock_bh)')
	[ -z "$out" ] || bad "$k: bottom-half toggling in the module:"$'\n'"$out"

	testonly "the reference module" pcpu-ref-tree.sh
	testonly "the slab control" slab-pin-tree.sh
done

# (once, by the host's run)
[ -z "${XNC_LINT_NO_CHECKPATCH:-}" ] || {
	[ $rc -ne 0 ] || echo "lint: clean (W=1, sparse, no BH toggling) against ${kdirs# }"
	exit $rc
}
# sources only: an in-tree build of klp-other (make tools) leaves kbuild's
# generated *.mod.c next to them
srcs=()
for f in src/*.c src/*.h include/*.h bench/ref/*.c tests/tools/klp-other/*.c; do
	[[ $f == *.mod.c ]] || srcs+=("$f")
done
out=$(scripts/checkpatch.sh "${srcs[@]}" 2>"$tmp/checkpatch.err")
cprc=$?
# findings, or (nothing said, yet a failure) checkpatch did not run at all
[ -z "$out" ] || bad "checkpatch --strict:"$'\n'"$out"
[ -n "$out" ] || [ $cprc -eq 0 ] || bad "checkpatch did not run: $(cat "$tmp/checkpatch.err")"

# every shell script git knows: *.sh, or a #! of sh or bash
shs=()
while IFS= read -r f; do
	[ -f "$f" ] || continue
	case $f in
	*.sh) shs+=("$f") ;;
	*) head -n1 "$f" | grep -qE '^#!(/usr/bin/env |/bin/)(ba)?sh' && shs+=("$f") ;;
	esac
done < <(git ls-files 2>/dev/null)
if [ ${#shs[@]} -eq 0 ]; then
	bad "shellcheck: no shell script found (not a git checkout?)"
elif ! command -v shellcheck >/dev/null; then
	bad "shellcheck is not installed (scripts/deps.sh)"
else
	out=$(shellcheck -x -P SCRIPTDIR "${shs[@]}" 2>&1) || bad "shellcheck:"$'\n'"$out"
fi

names=
for k in $kdirs; do names+=" $(basename "$k")"; done
[ $rc -ne 0 ] || echo "lint: clean (W=1, sparse, checkpatch --strict, no BH toggling, shellcheck on ${#shs[@]} scripts) against${names}${troots[*]:+ and in the trixie root ${troots[*]}}"
exit $rc
