#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lay out the benchmark's reference module in DIR: the shipped sources plus
# tests/bench/pcpu_ref.c, built as xnc_pcpu_ref.ko with -DXNC_PCPU_REF.
# Then: make -C $KDIR M=DIR modules.  Never part of the shipped module.
#
#   scripts/pcpu-ref-tree.sh DIR

set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: pcpu-ref-tree.sh DIR}
mkdir -p "$dir"
rm -rf "${dir:?}"/*
cp -r "$top/src" "$top/include" "$dir/"
cp "$top/tests/bench/pcpu_ref.c" "$dir/"
objs=$(sed -n 's/^xfrm_nocache-y[[:space:]]*:=//p' "$top/Kbuild")
[ -n "$objs" ] || { echo "pcpu-ref-tree.sh: no object list in Kbuild" >&2; exit 1; }
cat >"$dir/Kbuild" <<EOK
obj-m := xnc_pcpu_ref.o
xnc_pcpu_ref-y := $objs pcpu_ref.o
ccflags-y := -I\$(src)/include -I\$(src)/src -DXNC_PCPU_REF
EOK
