#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: forwarded IPsec packets/s against the number of tunnels, for
# stock 6.1 (or 6.12), xfrm_nocache and a 4.14-style per-CPU cache
# (reference build), in one boot of Debian's kernel with one vCPU and
# -icount shift=1.  Writes docs/bench.md, docs/bench.png and docs/bench.raw
# (bench/report.sh); on another kernel, e.g. docs/bench-6.12.md,
# .png and .raw.  Then a profile of where a forwarded packet's instructions go, by phase
# (perf in the guest; bench/profile.py): a section of bench.md,
# docs/bench-profile.tsv and docs/bench-profile.png (e.g. bench-6.12-profile.*).
#
# The kernel is XNC_KLINE (make's KERNEL: 6.1, the default, 6.12, 6.1-rt,
# 6.12-rt, or Debian 13's 13, 13-rt, 7.3): its Debian kernel boots, and the
# modules are built against its headers; Debian 13's in the trixie root
# (scripts/kernel.sh build), which sees only this repository, so the run's
# directory must be inside it (the default, tests/out/), and KDIR, if
# set, is the headers as seen there (scripts/kernel.sh bkdir).
#
# Settings (environment, all optional):
#   XNC_BENCH_N="1 8 32 256 1024 10000"  tunnel counts
#   XNC_BENCH_CIPHERS="null gcm"          ESP with cipher_null, or AES-GCM
#   XNC_BENCH_ROUNDS=7                    interleaved rounds per N
#   XNC_BENCH_SECS=2                      guest seconds per sample
#   XNC_BENCH_EXTRA_N="1 32 1024"         N where latency=1 and the enabled
#                                         tracepoint are measured too
#   XNC_BENCH_IDLE=1                      an "idle" variant in every block:
#                                         the module loaded, its patch off
#                                         (stock's lookup; docs/testing.md)
#   XNC_BENCH_PIN="1 4"                   a "pinK" variant in every block for
#                                         each K (0-64): stock's lookup with
#                                         bench/ref/slab_pin.c holding K
#                                         1 KiB kmalloc objects
#   XNC_BENCH_DOCS=docs                   where the report goes
#   XNC_BENCH_MERGE=1                     keep the page's samples of the
#                                         ciphers/plans and N this run did
#                                         not measure (e.g. only
#                                         XNC_BENCH_PLANS=hub), and its
#                                         profile if this run took none
#   XNC_BENCH_PROFILE=1                   the profile after the throughput; 0:
#                                         none; only: the profile alone, its
#                                         report (bench-profile.md, .tsv, .png)
#                                         into the run's directory, or into
#                                         XNC_BENCH_DOCS if set; docs/bench.md
#                                         stays as it is
#   XNC_BENCH_PROFILE_N="1 1024"          tunnel counts profiled
#   XNC_BENCH_PROFILE_CIPHER=null         the cipher profiled: null or gcm,
#                                         as in XNC_BENCH_CIPHERS
#   XNC_BENCH_PROFILE_ROUNDS=2            interleaved rounds of the variants
#   XNC_BENCH_PROFILE_VARIANTS="stock module"  the variants profiled
#   XNC_BENCH_PROFILE_PERIOD=500000       ns of guest time per perf sample

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# a cipher the guest does not know would be profiled as gcm and named wrong
case ${XNC_BENCH_PROFILE_CIPHER:-null} in
null|gcm) ;;
*) echo "bench.sh: XNC_BENCH_PROFILE_CIPHER='$XNC_BENCH_PROFILE_CIPHER': must be null or gcm (the names XNC_BENCH_CIPHERS uses)" >&2
   exit 1 ;;
esac
for k in ${XNC_BENCH_PIN:-}; do
	if ! [[ $k =~ ^[0-9]+$ ]] || [ "$k" -gt 64 ]; then
		echo "bench.sh: XNC_BENCH_PIN: '$k' is not a count of objects from 0 to 64" >&2
		exit 1
	fi
done
kline=$(scripts/kernel.sh name)
export XNC_KLINE=$kline
# every module build runs in the kernel's root (/ on bookworm's lines,
# the trixie root on Debian 13's), against its headers as seen there
kdir=${KDIR:-$(scripts/kernel.sh bkdir)}
kb=(scripts/kernel.sh build)
out=${XNC_OUT:-$top/tests/out/bench-$(date +%Y%m%d-%H%M%S)}
docs=${XNC_BENCH_DOCS:-$top/docs}
profile=${XNC_BENCH_PROFILE:-1}
[ "$profile" != only ] || docs=${XNC_BENCH_DOCS:-$out}
mkdir -p "$out" "$docs"
# absolute: the builds' M= is read in the root, from its /
out=$(cd "$out" && pwd)
if [ "$(scripts/kernel.sh root)" != / ] && [[ $out != "$top"/* ]]; then
	echo "bench.sh: $out is outside $top, which the trixie root that builds $kline's modules does not see (XNC_OUT)" >&2
	exit 1
fi
start=$(date +%s)

# The reference module (bench/ref/pcpu_ref.c), built in a scratch tree
# inside $out, where the guest sees it.
ref=$out/pcpu-ref
bench/pcpu-ref-tree.sh "$ref"
{ "${kb[@]}" make -s -C "$kdir" M="$ref" modules &&
  python3 scripts/klp-relocs.py "$ref/xnc_pcpu_ref.ko"; } >"$out/pcpu-ref.build" 2>&1 ||
	{ cat "$out/pcpu-ref.build" >&2; exit 1; }
# the slab control (XNC_BENCH_PIN), likewise
pin=$out/slab-pin
bench/slab-pin-tree.sh "$pin"
"${kb[@]}" make -s -C "$kdir" M="$pin" modules >"$out/slab-pin.build" 2>&1 ||
	{ cat "$out/slab-pin.build" >&2; exit 1; }
# the module as every build of it is made (scripts/build.sh), in $out: the
# tree's .ko may be another kernel's, or rebuilt while the benchmark runs
KDIR=$kdir scripts/build.sh --line "$out/mod" >"$out/mod.build" 2>&1 ||
	{ cat "$out/mod.build" >&2; exit 1; }

# the settings this run had, for the report's "Regenerate" line
XNC_BENCH_SETTINGS=$(for v in XNC_BENCH_N XNC_BENCH_CIPHERS XNC_BENCH_PLANS XNC_BENCH_ROUNDS \
	XNC_BENCH_SECS XNC_BENCH_EXTRA_N XNC_BENCH_IDLE XNC_BENCH_PIN XNC_BENCH_PROFILE XNC_BENCH_PROFILE_N \
	XNC_BENCH_PROFILE_CIPHER; do
	[ -z "${!v+x}" ] || printf '%s="%s" ' "$v" "${!v}"
done)
export XNC_BENCH_SETTINGS
echo "bench: running in the VM (one vCPU, -icount shift=1); progress in $out/bench.log"
rc=0
XNC_KO=$out/mod/xfrm_nocache.ko XNC_REF_KO=$ref/xnc_pcpu_ref.ko XNC_PIN_KO=$pin/xnc_slab_pin.ko XNC_QUIET=${XNC_QUIET-1} \
	scripts/vm.sh --smp 1 --icount --mem 4096 --timeout "${XNC_BENCH_TIMEOUT:-5400}" \
	--out "$out" --log "$out/console.log" -- \
	bash -c "'$top/bench/guest/bench.sh' > '$out/bench.log' 2>&1" || rc=$?
tail -n 3 "$out/bench.log" || true
[ $rc -eq 0 ] || { echo "bench.sh: the VM run failed ($rc); see $out/bench.log and $out/console.log" >&2; exit 1; }

if [ "$profile" = only ]; then
	echo "bench: profile only; its report in $docs/bench*-profile.md"
	bench/report.sh --profile-only "$out/profile" "$docs"
elif [ "${XNC_BENCH_MERGE:-0}" = 1 ]; then
	# into the page's samples (bench/report.sh): no one run's time
	bench/report.sh "$out/bench.raw" "$docs"
else
	bench/report.sh "$out/bench.raw" "$docs" $(( $(date +%s) - start ))
fi
