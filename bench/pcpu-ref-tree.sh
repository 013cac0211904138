#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lay out the benchmark's reference module in DIR: the shipped sources,
# with every bundle creation in src/lookup.c going through xnc_ref_bundle()
# and src/main.c's init and exit called from bench/ref/pcpu_ref.c's,
# which hold the per-CPU cache, built as xnc_pcpu_ref.ko.  Then, with DIR
# absolute (for Debian 13's kernels inside this repository, all the
# trixie root sees): scripts/kernel.sh build make -C
# "$(scripts/kernel.sh bkdir)" M=DIR modules.
# The shipped sources have no hook for it.
#
#   bench/pcpu-ref-tree.sh DIR

set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: pcpu-ref-tree.sh DIR}
die() { echo "pcpu-ref-tree.sh: $*" >&2; exit 1; }
mkdir -p "$dir"
rm -rf "${dir:?}"/*
cp -r "$top/src" "$top/include" "$dir/"
cp "$top/bench/ref/pcpu_ref.c" "$top/bench/ref/pcpu_ref.h" "$dir/"

# sub FILE COUNT SED: apply SED to DIR/FILE, which must change COUNT lines
sub() {
	local f=$dir/$1 n
	sed -i.orig -e "$3" "$f"
	n=$(diff "$f.orig" "$f" | grep -c '^>' || true)
	rm -f "$f.orig"
	[ "$n" = "$2" ] || die "$1: '$3' changed $n lines, not $2: the shipped source moved"
}
sub src/lookup.c 2 's/xnc_xfrm_resolve_and_create_bundle(/xnc_ref_bundle(/'
sub src/main.c 1 's/^static int __init xnc_init(void)$/int __init xnc_init(void)/'
sub src/main.c 1 's/^static void __exit xnc_exit(void)$/void __exit xnc_exit(void)/'
sub src/main.c 1 's/^module_init(xnc_init);$//'
sub src/main.c 1 's/^module_exit(xnc_exit);$//'

objs=$(sed -n 's/^xfrm_nocache-y[[:space:]]*:=//p' "$top/Kbuild")
[ -n "$objs" ] || die "no object list in Kbuild"
cat >"$dir/Kbuild" <<EOK
obj-m := xnc_pcpu_ref.o
xnc_pcpu_ref-y := $objs pcpu_ref.o
ccflags-y := -I\$(src)/include -I\$(src)/src -include \$(src)/pcpu_ref.h
EOK
