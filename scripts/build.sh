#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build xfrm_nocache.ko against one kernel's build dir, in a directory of
# its own, with the livepatch relocation step (scripts/klp-relocs.py).
#
#   scripts/build.sh KDIR DESTDIR [make args...]
#   scripts/build.sh --variants KDIR DESTDIR
#   scripts/build.sh --line [--variants] DESTDIR [make args...]
#
# --line: for the kernel XNC_KLINE names (scripts/kernel.sh), in its root
# (the trixie root for Debian 13's kernels) against its headers there (KDIR
# if set, as seen there); a DESTDIR the root does not see gets a copy.  The
# harness (tests/run.sh, bench/, the selftests table) builds this way.
#
# --variants builds the test-only variants that tests/guest/t-02-refusals.sh
# loads, each in DESTDIR/variants/NAME/xfrm_nocache.ko: "missing" binds a
# symbol no kernel has, "clone" looks for compiler clones of a function that
# has one (xfrm_expand_policies), "unbound" skips the livepatch relocation
# step, "badproto" declares one prototype wrong, "unchecked" was checked
# against no release of this kernel.  None of them is ever installed.
#
# DESTDIR gets copies of Kbuild, src/ and include/ and the module, so builds
# for several kernels (and a VM run using one of them) never share objects.
# Prints only the build's errors; exit status is the build's.

set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --line ]; then
	shift
	var=()
	[ "${1:-}" != --variants ] || { var=(--variants); shift; }
	[ $# -ge 1 ] || { echo "usage: scripts/build.sh --line [--variants] DESTDIR [make args]" >&2; exit 2; }
	dest=$1 ks=$top/scripts/kernel.sh
	shift
	kdir=${KDIR:-$("$ks" bkdir)}
	groot=$("$ks" root)
	mkdir -p "$dest"
	dest=$(cd "$dest" && pwd)
	if [ "$groot" = / ] || [[ $dest = "$top"/* ]]; then
		exec "$ks" build "$top/scripts/build.sh" "${var[@]}" "$kdir" "$dest" "$@"
	fi
	b=$(mktemp -d "$groot/var/tmp/xnc-build.XXXXXX")
	trap 'rm -rf "$b"' EXIT
	"$ks" build "$top/scripts/build.sh" "${var[@]}" "$kdir" "${b#"${groot%/}"}/m" "$@"
	cp -a "$b/m/." "$dest/"
	exit 0
fi
if [ "${1:-}" = --variants ]; then
	[ $# -eq 3 ] || { echo "usage: scripts/build.sh --variants KDIR DESTDIR" >&2; exit 2; }
	v=$3/variants
	"$0" "$2" "$v/missing" KCFLAGS=-DXNC_TEST_EXTRA_SYMBOL=xnc_no_such_symbol
	"$0" "$2" "$v/clone" KCFLAGS=-DXNC_TEST_CLONE_OF=xfrm_expand_policies
	"$0" "$2" "$v/badproto" KCFLAGS=-DXNC_TEST_BAD_PROTO
	"$0" "$2" "$v/unchecked" KCFLAGS=-DXNC_TEST_NO_RELEASE
	XNC_NO_KLP=1 "$0" "$2" "$v/unbound"
	exit 0
fi
[ $# -ge 2 ] || { echo "usage: scripts/build.sh KDIR DESTDIR [make args]" >&2; exit 2; }
kdir=$1 dest=$2
shift 2
[ -f "$kdir/Makefile" ] || { echo "build.sh: $kdir is not a kernel build dir" >&2; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
[ "$dest" != "$top" ] || { echo "build.sh: DESTDIR is the source tree" >&2; exit 1; }
rm -rf "${dest:?}/src" "${dest:?}/include" "$dest/xfrm_nocache.ko"
cp -r "$top/Kbuild" "$top/src" "$top/include" "$dest/"
log=$dest/build.log
if ! make -C "$kdir" M="$dest" "$@" modules >"$log" 2>&1; then
	grep -E 'error|Error' "$log" >&2 || tail -n 20 "$log" >&2
	exit 1
fi
[ -n "${XNC_NO_KLP:-}" ] ||
	python3 "$top/scripts/klp-relocs.py" "$dest/xfrm_nocache.ko" >>"$log"
