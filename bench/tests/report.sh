#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench/report.sh on samples made up here in RAW's format: partial runs
# (null at N = 1, 32 and 1024; gcm at N=1 alone; idle and pin variants),
# on 6.1 and on another kernel (6.12-rt).  Every cell of RAW is in the
# page's tables with the median, spread and ratios to stock and to N=1
# that an independent computation here gives, the summary table has
# module/stock and pcpu-ref/stock of each N, the parameter table names
# only what was run, and the page has no line of text: headings, tables,
# images and the latency/local sections only.  Made again from its own
# RAW, the page keeps its date and command; XNC_BENCH_MERGE=1 adds a
# run's cells to the page's.  bench-kernels.md: a table per plan, a column
# per kernel and cipher.  No VM; a few seconds (gnuplot).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/xnc-brep.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset XNC_KERNEL XNC_BENCH_MERGE XNC_BENCH_SETTINGS
for k in 6.1 6.12-rt; do
	XNC_KLINE=$k "$top/scripts/kernel.sh" version >/dev/null 2>&1 ||
		{ echo "no $k kernel version (scripts/kernel.sh version: apt-cache)"; exit 4; }
done
command -v python3 >/dev/null || { echo "no python3"; exit 4; }

# raw CIPHER "N...": three rounds of stock, module (0.5% ahead) and
# pcpu-ref (25% ahead at N=1, 0.3% at N > 1), and the ceiling; 2 guest
# seconds a sample
raw() {
	awk -v c="$1" -v ns="$2" 'BEGIN {
		print "none 0 warmup 0 38000 2000 2000 51642 0 0 0 0"
		for (r = 1; r <= 3; r++) print "none 0 plain", r, 38000 + r, 76000, 76000, 2000000, 0, 0, 0, 0
		nn = split(ns, n, " ")
		for (i = 1; i <= nn; i++)
			for (r = 1; r <= 3; r++) {
				s = 30000 - 10 * i + 5 * r
				line(c, n[i], "stock", r, s, 0, 0)
				line(c, n[i], "module", r, s * 1.005, 0, 0)
				p = n[i] == 1 ? s * 1.25 : s * 1.003
				line(c, n[i], "pcpu-ref", r, p, int(2 * p / n[i]), 2 * int(p) - int(2 * p / n[i]))
			}
	}
	function line(c, n, v, r, pps, h, m,   rx) {
		pps = int(pps); rx = 2 * pps
		print c, n, v, r, pps, rx, rx, 2000000, (v == "stock" ? 0 : rx), h, m, 0
	}'
}

# report NAME KERNEL RAW [ENV...]: bench/report.sh RAW into $tmp/NAME/docs
report() {
	local d=$tmp/$1 k=$2 r=$3
	shift 3
	mkdir -p "$d/docs"
	env "$@" XNC_KLINE="$k" "$top/bench/report.sh" "$r" "$d/docs" >"$d/out" 2>"$d/err" ||
		{ cat "$d/err"; fail "$(basename "$d"): report.sh exited $?"; }
}

# verify PAGE RAW: the page's tables against RAW, computed here
verify() {
	python3 - "$1" "$2" <<'EOF' || fail "$1: the tables do not match its RAW"
import sys
page, raw = open(sys.argv[1]).read(), sys.argv[2]
cells = {}
for l in open(raw):
    f = l.split()
    if f[2] == "warmup":
        continue
    cells.setdefault((f[0], int(f[1]), f[2]), []).append(int(f[4]))
def med(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
m = {k: med(v) for k, v in cells.items()}
bad = []
# the detail tables: one per cipher/plan, "## ESP null" or "## ESP null, hub-and-spoke plan"
detail = {}
sect = None
for l in page.splitlines():
    if l.startswith("## "):
        sect = l[3:]
        continue
    if sect and sect.startswith("ESP ") and l.startswith("| ") and l[2].isdigit():
        c = sect[4:].replace(", hub-and-spoke plan", "-hub")
        x = [s.strip() for s in l.strip("|").split("|")]
        if (c, int(x[0]), x[1]) in detail:
            bad.append("twice: %s" % l)
        detail[(c, int(x[0]), x[1])] = x
for k, v in sorted(cells.items()):
    if k[0] == "none":
        continue
    c, n, var = k
    x = detail.pop(k, None)
    if x is None:
        bad.append("no row for %s N=%d %s" % k)
        continue
    s, o = m.get((c, n, "stock")), m.get((c, 1, var))
    want = ["%d" % m[k], "%.1f%%" % (100 * (max(v) - min(v)) / m[k]),
            "%.3f" % (m[k] / s) if s else "-", "%.3f" % (m[k] / o) if o else "-"]
    if x[2:6] != want:
        bad.append("%s N=%d %s: %s, not %s" % (c, n, var, x[2:6], want))
for k in detail:
    bad.append("a row RAW has no cell for: %s N=%d %s" % k)
# the summary: module/stock and pcpu-ref/stock at every N
summ = page.split("## module/stock and pcpu-ref/stock\n\n")[1].split("\n\n")[0].splitlines()
hdr = [h.strip() for h in summ[0].strip("|").split("|")][1:]
got = {}
for l in summ[2:]:
    x = [s.strip() for s in l.strip("|").split("|")]
    for h, v in zip(hdr, x[1:]):
        c, var = h.split()
        if v != "-":
            got[(c, int(x[0]), var)] = v
want = {k: "%.3f" % (m[k] / m[(k[0], k[1], "stock")]) for k in m
        if k[2] in ("module", "pcpu-ref") and (k[0], k[1], "stock") in m}
if got != want:
    bad.append("summary: %s" % sorted(set(got.items()) ^ set(want.items())))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF
}

# param PAGE NAME VALUE: the parameter table's row NAME is VALUE
param() {
	grep -qxF -- "| $2 | $3 |" "$1" || { grep '^| ' "$1" | head -n 20; fail "$1: no row \"| $2 | $3 |\""; }
}

# prose PAGE: no line but headings, table rows, images, blank lines and
# the sections bench/latency.sh and bench/local.sh write
prose() {
	local bad
	bad=$(awk '/^<!-- (latency|local):/ { skip = 1 } skip { if (/^<!-- \//) skip = 0; next }
		!/^(#|[|]|!\[|$)/' "$1")
	[ -z "$bad" ] || fail "$1: a line of text: $bad"
}

mkdir -p "$tmp/run"
raw null "1 32 1024" >"$tmp/run/null.raw"
raw gcm "1" >"$tmp/run/gcm.raw"
for k in 6.1 6.12-rt; do
	base=bench on=
	[ $k = 6.1 ] || base=bench-$k on=" on $k"
	report "null-$k" $k "$tmp/run/null.raw"
	p=$tmp/null-$k/docs/$base.md
	[ -f "$p" ] || fail "null-$k: no $base.md"
	head -n1 "$p" | grep -qxF "# Benchmark$on: forwarded IPsec packets/s against the number of tunnels" ||
		fail "$p: title $(head -n1 "$p")"
	verify "$p" "$tmp/run/null.raw"
	prose "$p"
	param "$p" ciphers null
	param "$p" plans random
	param "$p" N "1, 32, 1024"
	param "$p" rounds 3
	param "$p" "ceiling (no IPsec)" "38002 pps"
	param "$p" "guest s/sample" 2
	! grep -qw gcm "$p" || fail "$p: names gcm, which was not run"
	grep -qxF '| 32 | 1.005 | 1.003 |' "$p" || fail "$p: no module/stock 1.005, pcpu-ref/stock 1.003 at N=32"
	[ -f "$tmp/null-$k/docs/$base.png" ] || ! command -v gnuplot >/dev/null || fail "null-$k: no $base.png"
	cmp -s "$tmp/run/null.raw" "$tmp/null-$k/docs/$base.raw" || fail "null-$k: $base.raw is not RAW"

	report "gcm1-$k" $k "$tmp/run/gcm.raw"
	p=$tmp/gcm1-$k/docs/$base.md
	verify "$p" "$tmp/run/gcm.raw"
	prose "$p"
	param "$p" ciphers gcm
	param "$p" N 1
	! grep -qw null "$p" || fail "$p: names null, which was not run"
	grep -qxF '| 1 | 1.005 | 1.250 |' "$p" || fail "$p: no module/stock 1.005, pcpu-ref/stock 1.250 at N=1"
done

# idle and pin variants, the hub plan without pcpu-ref, and the run's
# time: each in its table and named in the parameters
d=$tmp/variants
mkdir -p "$d"
{ raw null "1 32"
  raw null "1 32" | awk '$3 == "stock" && $1 != "none" { $3 = "idle"; $5 = int($5 * 0.988); print
	$3 = "pin4"; $5 = int($5 * 0.99); print }'
  raw null-hub "1 32" | grep -v -e pcpu-ref -e '^none'
} >"$d/bench.raw"
report variants 6.1 "$d/bench.raw" XNC_BENCH_SETTINGS='XNC_BENCH_N="1 32" '
p=$d/docs/bench.md
verify "$p" "$d/bench.raw"
prose "$p"
param "$p" plans "random, hub"
cmd="\`XNC_BENCH_N=\"1 32\" make bench\`"
param "$p" command "$cmd"
grep -q '^| variants | .*idle (.*pin4 (' "$p" || fail "$p: idle, pin4 not among the variants"
grep -qxF '| N | null module | null pcpu-ref | null-hub module |' "$p" ||
	fail "$p: summary columns: $(grep -m1 '^| N | null' "$p")"
XNC_BENCH_SETTINGS='XNC_BENCH_N="1 32" ' XNC_KLINE=6.1 "$top/bench/report.sh" "$d/bench.raw" "$d/docs" 754 \
	>/dev/null 2>&1 || fail "variants: with RUN_SECONDS"
param "$p" "run time" "12 min 34 s"

# made again from its own RAW: the date and command stay, the tables too
sed -i 's/^| date | .* |$/| date | 2000-01-02 |/' "$p"
cp "$p" "$tmp/before.md"
report variants 6.1 "$d/docs/bench.raw"
param "$p" date 2000-01-02
param "$p" command "$cmd"
diff "$tmp/before.md" "$p" >/dev/null || { diff "$tmp/before.md" "$p"; fail "made again from its own RAW, the page changed"; }

# XNC_BENCH_MERGE=1: gcm's cells added to the page's null and null-hub
raw gcm "1" >"$tmp/run/bench.raw"
report variants 6.1 "$tmp/run/bench.raw" XNC_BENCH_MERGE=1
verify "$p" "$d/docs/bench.raw"
param "$p" ciphers "null, gcm"
grep -q '^| runs | more than one' "$p" || fail "merged: no runs row"
for w in 'gcm 1 module ' 'null-hub 32 module '; do
	grep -q "^$w" "$d/docs/bench.raw" || fail "merged: docs/bench.raw lacks \"$w\""
done

# bench-kernels.md: a table for each plan run, a column for each kernel
# and cipher that ran it, "-" where that N did not run there
d=$tmp/kernels
mkdir -p "$d/run"
{ raw null "1 1024"; raw null-hub "1 1024" | grep -v -e pcpu-ref -e '^none'; } >"$d/run/bench.raw"
raw null "1" >"$d/run/bench-6.12-rt.raw"
report kernels 6.1 "$d/run/bench.raw"
report kernels 6.12-rt "$d/run/bench-6.12-rt.raw"
kt=$d/docs/bench-kernels.md
prose "$kt"
random=$(sed -n '/^## Random plan$/,/^## /p' "$kt")
hub=$(sed -n '/^## Hub-and-spoke plan$/,/^## Runs/p' "$kt")
for w in '| N | 6.1 null | 6.12-rt null |' '| 1 | 1.005 | 1.005 |' '| 1024 | 1.005 | - |'; do
	grep -qxF -- "$w" <<<"$random" || { cat "$kt"; fail "bench-kernels.md: random plan: no \"$w\""; }
done
for w in '| N | 6.1 null |' '| 1 | 1.005 |' '| 1024 | 1.005 |'; do
	grep -qxF -- "$w" <<<"$hub" || { cat "$kt"; fail "bench-kernels.md: hub plan: no \"$w\""; }
done
today=$(date -u +%Y-%m-%d)
grep -qF "| 6.12-rt | [bench-6.12-rt.md](bench-6.12-rt.md) | $today | $(XNC_KLINE=6.12-rt "$top/scripts/kernel.sh" version) |" "$kt" ||
	{ cat "$kt"; fail "bench-kernels.md: no run row of 6.12-rt"; }
! grep -q 'gcm' "$kt" || fail "bench-kernels.md names gcm, which was not run"
echo "bench/report.sh: every cell of partial runs (null at N=1, 32, 1024, gcm at N=1, idle, pin4, the hub plan) on 6.1 and 6.12-rt in its tables as computed here, no text; made again from its RAW, the same page; merged runs; bench-kernels.md has each plan's table"
