#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-footprint: forwarded packets/s with no module, with the
# module loaded and its patch disabled ("idle": stock's own lookup), and
# with the module (tests/bench/footprint.sh), in one boot of Debian's
# kernel (KERNEL=, XNC_KLINE) with one vCPU and -icount shift=1, after
# make bench's earlier blocks.  It tells the module's lookup from the
# module merely being loaded: where idle is behind stock, the module is
# too, by the same cause.  Prints the samples and module/stock,
# idle/stock and module/idle (medians); writes nothing into docs/.
# XNC_FP_BEFORE, XNC_FP_CIPHER, XNC_FP_N, XNC_FP_ROUNDS and XNC_FP_COUNT
# pass through (tests/bench/footprint.sh).

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kver=$(scripts/kernel.sh version)
kdir=${KDIR:-$(scripts/kernel.sh kdir)}
out=${XNC_OUT:-$top/tests/out/bench-footprint-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
scripts/build.sh "$kdir" "$out/mod" >"$out/mod.build" 2>&1 ||
	{ cat "$out/mod.build" >&2; exit 1; }
echo "bench-footprint: $kver in the VM (one vCPU, -icount shift=1); progress in $out/footprint.log"
rc=0
XNC_KO=$out/mod/xfrm_nocache.ko XNC_QUIET=${XNC_QUIET-1} \
	scripts/vm.sh --smp 1 --icount --mem 4096 --timeout "${XNC_BENCH_TIMEOUT:-1800}" \
	--out "$out" --log "$out/console.log" -- \
	bash -c "'$top/tests/bench/footprint.sh' > '$out/footprint.log' 2>&1" || rc=$?
[ $rc -eq 0 ] || { tail -n 3 "$out/footprint.log" >&2; echo "bench-footprint: the VM run failed ($rc); see $out/footprint.log and $out/console.log" >&2; exit 1; }

grep -E '^# \[.*(before|round)' "$out/footprint.log"
# raw: cipher n variant round pps ...; medians per variant
awk '{ v[$3] = v[$3] " " $5 }
     function med(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
     END {
	s = med(v["stock"]); i = med(v["idle"]); m = med(v["module"])
	printf "medians: stock %d, idle %d, module %d packets/s\n", s, i, m
	printf "module/stock %.3f, idle/stock %.3f, module/idle %.3f\n", m / s, i / s, m / i }' "$out/footprint.raw"
