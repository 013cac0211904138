#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tests/guest/kmemleak-ours.awk, which make check-debug's leak scan
# (tests/guest/runner.sh) uses to tell our suspects from the kernel's, on
# reports made up here in both kmemleak formats: 6.1's ("backtrace:",
# frames "[<hash>] symbol") and 6.12's ("backtrace (crc N):", the symbol
# alone). A suspect allocated through dst or xfrm, or from an address
# that no longer resolves, is ours unless a stock window holds it; any
# other is the kernel's. No VM; under a second.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
awkf=$top/tests/guest/kmemleak-ours.awk
tmp=$(mktemp -d /tmp/xnc-kml.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# suspect FORMAT JIFFIES FRAME...: one report entry
suspect() {
	local fmt=$1 j=$2 f
	shift 2
	echo "unreferenced object 0xff11000105000000 (size 184):"
	echo "  comm \"ping\", pid 2208, jiffies $j"
	echo "  hex dump (first 32 bytes):"
	echo "    00 00 07 03 01 00 11 ff 64 73 74 00 00 00 00 00  ........dst....."
	if [ "$fmt" = 6.1 ]; then
		echo "  backtrace:"
		for f; do echo "    [<00000000c0ffee00>] $f"; done
	else
		echo "  backtrace (crc 536133f6):"
		for f; do echo "    $f"; done
	fi
}
echo "1000 2000 diff_stock queue" >"$tmp/windows"

# check NAME WANT (REPORT on stdin): the classifier prints WANT
check() {
	local got
	cat >"$tmp/$1"
	got=$(awk -f "$awkf" "$tmp/windows" "$tmp/$1")
	[ "$got" = "$2" ] || { cat "$tmp/$1"; fail "$1: '$got', not '$2' (ours, stock's)"; }
}

for fmt in 6.1 6.12; do
	dst=("kmem_cache_alloc+0x259/0x2a0" "dst_alloc+0x81/0x150" "ip_route_output_key_hash+0x12e/0x240")
	other=("__kmalloc+0x40/0x90" "load_elf_binary+0x1d0/0x1490")
	suspect $fmt 5000 "${dst[@]}" | check "$fmt-dst" "1 0"
	suspect $fmt 1500 "${dst[@]}" | check "$fmt-dst-stock" "0 1"
	suspect $fmt 5000 "${other[@]}" | check "$fmt-other" "0 0"
	suspect $fmt 5000 "__kmalloc+0x40/0x90" "xfrm_state_alloc+0x20/0x1c0" | check "$fmt-xfrm" "1 0"
	suspect $fmt 5000 "__kmalloc+0x40/0x90" "0xffffffffc0a01234" | check "$fmt-unloaded" "1 0"
	{ suspect $fmt 5000 "${other[@]}"; suspect $fmt 1500 "${dst[@]}"
	  suspect $fmt 5000 "${dst[@]}"; suspect $fmt 5000 "${other[@]}"; } | check "$fmt-mixed" "1 1"
done
: | check empty "0 0"
echo "kmemleak-ours.awk: ours and the kernel's told apart in 6.1's and 6.12's report formats"
