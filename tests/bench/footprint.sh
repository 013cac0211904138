#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of make bench-footprint (scripts/bench-footprint.sh): what
# loading the module costs forwarded packets/s apart from its lookup.
# After XNC_FP_BEFORE's blocks (cipher:N words, "null:1 null:32 gcm:1";
# each: its tunnels, then a sample of stock and one of the module, as
# make bench's earlier blocks leave the kernel),
# XNC_FP_ROUNDS interleaved rounds of three variants (tests/bench/guest.sh)
# with XNC_FP_N tunnels and ESP XNC_FP_CIPHER, XNC_FP_COUNT packets each:
#   stock    no module
#   idle     the module loaded, its patch disabled: stock's own lookup
#   module   the module
# idle behind stock is loading the module at work, not its lookup: on
# 6.1-rt, in such a state of the slab allocator, one of a packet's frees
# took SLUB's slow path every time (docs/testing.md, "Real-time kernels").
#
# Writes $XNC_OUT/footprint.raw, one line per sample, as make bench's
# bench.raw (tests/bench/guest.sh).

set -u
# shellcheck disable=SC2034 # read by guest.sh, sourced next
XNC_BENCH_LIB=1
. "$(dirname "$0")/guest.sh"

BEFORE=${XNC_FP_BEFORE-null:1 null:32 gcm:1}
CIPHER=${XNC_FP_CIPHER:-gcm}
N=${XNC_FP_N:-32}
ROUNDS=${XNC_FP_ROUNDS:-3}
COUNT=${XNC_FP_COUNT:-30000}
RAW=$XNC_OUT/footprint.raw

: >"$RAW"
setup_net
for b in $BEFORE; do
	c=${b%:*} n=${b#*:}
	tunnels "$c" "$n"
	dst_range "$n"
	sample "$c" "$n" warmup 0 20000 >/dev/null || exit 1
	for v in stock module; do
		variant_on "$v"
		sample "$c" "$n" warmup 0 20000 >/dev/null || exit 1
		variant_off "$v"
	done
	log "before: $c N=$n"
done
tunnels "$CIPHER" "$N"
dst_range "$N"
sample "$CIPHER" "$N" warmup 0 20000 >/dev/null || exit 1
vs=(stock idle module)
for r in $(seq 1 "$ROUNDS"); do
	for i in 0 1 2; do
		v=${vs[$(((i + r) % 3))]}
		variant_on "$v"
		sleep 0.5
		sample "$CIPHER" "$N" warmup "$r" 1000 >/dev/null || exit 1
		pps=$(measure "$CIPHER" "$N" "$v" "$r" "$COUNT") || exit 1
		variant_off "$v"
		log "$CIPHER N=$N round $r $v: $pps pps"
	done
done
log "done"
