#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lay out the benchmark's slab control in DIR: bench/ref/slab_pin.c,
# built as xnc_slab_pin.ko (make bench's XNC_BENCH_PIN).  Then, with DIR
# absolute (for Debian 13's kernels inside this repository, all the
# trixie root sees): scripts/kernel.sh build make -C
# "$(scripts/kernel.sh bkdir)" M=DIR modules.
# Never part of the shipped module.
#
#   bench/slab-pin-tree.sh DIR

set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: slab-pin-tree.sh DIR}
mkdir -p "$dir"
rm -rf "${dir:?}"/*
cp "$top/bench/ref/slab_pin.c" "$dir/"
printf 'obj-m := xnc_slab_pin.o\nxnc_slab_pin-y := slab_pin.o\n' >"$dir/Kbuild"
