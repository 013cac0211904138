#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench/report.sh on the samples of partial runs, made up here in
# RAW's format: "Reading it" names only what the run measured.  The null
# cipher alone at N = 1, 32 and 1024 (XNC_BENCH_CIPHERS=null
# XNC_BENCH_N="1 32 1024"), and gcm alone at N=1, each on 6.1 (the
# reading of docs/bench.md) and on another kernel (6.12-rt's): no
# cipher, no N that was not run, no empty value where a number was
# missing, no sentinel of an empty minimum or maximum (+800%, -100%).
# No VM: qemu is a stub that gives its version; a few seconds (gnuplot).
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
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "QEMU emulator version 0 (test stub)"\n' >"$tmp/bin/qemu-system-x86_64"
chmod +x "$tmp/bin/qemu-system-x86_64"

# raw CIPHER "N...": three rounds of stock, module (0.5% ahead) and
# pcpu-ref (25% ahead at N=1, 0.2% behind the module at every N > 1),
# and the ceiling; 2 guest seconds a sample
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

# render NAME KERNEL CIPHER "N...": the page's "Reading it", into
# $tmp/NAME.txt
render() {
	local d=$tmp/$1 base=bench
	[ "$2" = 6.1 ] || base=bench-$2
	mkdir -p "$d/run" "$d/docs"
	raw "$3" "$4" >"$d/run/$base.raw"
	PATH=$tmp/bin:$PATH XNC_KLINE=$2 "$top/bench/report.sh" "$d/run/$base.raw" "$d/docs" \
		>"$d/out" 2>"$d/err" || { cat "$d/err"; fail "$1: bench-report.sh exited $?"; }
	sed -n '/^## Reading it$/,/^!\[/p' "$d/docs/$base.md" >"$tmp/$1.txt"
	[ -s "$tmp/$1.txt" ] || fail "$1: no \"Reading it\" in $d/docs/$base.md"
}

# check NAME OTHER "N...": the reading names neither cipher OTHER nor an N
# not in N..., has no value left empty or "-", and no percentage of
# 100 or more
check() {
	local t=$tmp/$1.txt bad
	bad=$(grep -wn -- "$2" "$t") && fail "$1: names $2, which was not run: $bad"
	# an empty value: two spaces in a line (past its indent), a space
	# before "." or ",", "( " or " )"; a missing ratio: "-"
	bad=$(sed 's/^ *//' "$t" | grep -nE '  | [.,)]|\( |[^-0-9.]-[ ,)]') && fail "$1: a value missing: $bad"
	bad=$(grep -oE 'N=[0-9]+' "$t" | sort -u | awk -v ns="$3" '
		BEGIN { split(ns, n, " "); for (i in n) ok["N=" n[i]] = 1 }
		!($0 in ok)') && [ -n "$bad" ] && fail "$1: names an N not run: ${bad//$'\n'/ }"
	bad=$(grep -oE '[-+]?[0-9]+(\.[0-9]+)?%' "$t" | awk '{ v = $0 + 0; if (v >= 100 || v <= -100) print }') &&
		[ -n "$bad" ] && fail "$1: a percentage out of range: ${bad//$'\n'/ }"
	return 0
}
# want NAME TEXT: the reading has TEXT (a fixed string)
want() {
	grep -qF -- "$2" "$tmp/$1.txt" || { cat "$tmp/$1.txt"; fail "$1: no \"$2\""; }
}

render null-6.1 6.1 null "1 32 1024"
render null-rt 6.12-rt null "1 32 1024"
render gcm1-6.1 6.1 gcm "1"
render gcm1-rt 6.12-rt gcm "1"
for t in null-6.1 null-rt; do
	check $t gcm "1 32 1024"
	want $t '- **module vs stock**: +0.5% to +0.5% (null) across N:'
	want $t '- **module N=1024 vs N=1**: 0.999 (null): '
	want $t 'at N=32 and 0.'
	want $t 'behind the uncached'
	want $t 'penalty with many tunnels is only 0.2% here** (N=1024, null; on'
done
want null-rt '  (1.005 x stock at N=1, 1.005 at N=1024, null).'
want null-rt '- **pcpu-ref** at N=1: 1.250 x stock (null): every packet hits and'
want null-6.1 '  (it does not change with N).'
want null-6.1 '- **pcpu-ref** is ahead at N=1 (1.250 x stock null: every packet hits'
for t in gcm1-6.1 gcm1-rt; do
	check $t null "1"
	want $t '- **module vs stock**: +0.5% (gcm, N=1):'
	want $t 'it was measured at no N > 1.'
	want $t 'penalty with many tunnels would be small here** (not measured in this run'
	! grep -qF 'vs N=1**' "$tmp/$t.txt" || fail "$t: module N vs N=1 with N=1 alone"
done
want gcm1-rt '  (1.005 x stock at N=1, gcm).'
# "Against the targets" on a cell where the module is 1% behind stock and
# idle (the module loaded, its patch off) 1.2% behind: the target is
# missed, and module / idle says the lookup is not what lost it; where
# the module is not behind stock, no such reading
d=$tmp/idle
mkdir -p "$d/run" "$d/docs"
{ raw null "1"; raw null "32" | grep -v '^none' | awk '$3 == "module" { $5 = int($5 / 1.005 * 0.99) } 1'
  raw null "1 32" | awk '$3 == "stock" && $1 != "none" { $3 = "idle"; if ($2 == 32) $5 = int($5 * 0.988); print }'
} >"$d/run/bench.raw"
PATH=$tmp/bin:$PATH XNC_KLINE=6.1 "$top/bench/report.sh" "$d/run/bench.raw" "$d/docs" \
	>"$d/out" 2>"$d/err" || { cat "$d/err"; fail "idle: bench-report.sh exited $?"; }
targets=$(sed -n '/^## Against the targets$/,/^## Reading it$/p' "$d/docs/bench.md")
for w in '- null N=32: module / stock = 0.990 (target >= 1.00: MISSED; idle / stock = 0.988, module / idle = 1.002: ' \
	'- null N=1: module / stock = 1.005 (target >= 1.00: ok); '; do
	grep -qF -- "$w" <<<"$targets" || { echo "$targets"; fail "idle: no \"$w\""; }
done
# bench-kernels.md: a table for each plan run, a column for each kernel
# and cipher that ran it, "-" where that N did not run there
d=$tmp/kernels
mkdir -p "$d/run" "$d/docs"
{ raw null "1 1024"; raw null-hub "1 1024" | grep -v -e pcpu-ref -e '^none'; } >"$d/run/bench.raw"
raw null "1" >"$d/run/bench-6.12-rt.raw"
for k in 6.1 6.12-rt; do
	base=bench
	[ $k = 6.1 ] || base=bench-$k
	PATH=$tmp/bin:$PATH XNC_KLINE=$k "$top/bench/report.sh" "$d/run/$base.raw" "$d/docs" \
		>"$d/out" 2>"$d/err" || { cat "$d/err"; fail "kernels $k: bench-report.sh exited $?"; }
done
kt=$d/docs/bench-kernels.md
random=$(sed -n '/^## Random plan$/,/^## /p' "$kt")
hub=$(sed -n '/^## Hub-and-spoke plan$/,$p' "$kt")
for w in '| N | 6.1 null | 6.12-rt null |' '| 1 | 1.005 | 1.005 |' '| 1024 | 1.005 | - |'; do
	grep -qxF -- "$w" <<<"$random" || { cat "$kt"; fail "bench-kernels.md: random plan: no \"$w\""; }
done
for w in '| N | 6.1 null |' '| 1 | 1.005 |' '| 1024 | 1.005 |'; do
	grep -qxF -- "$w" <<<"$hub" || { cat "$kt"; fail "bench-kernels.md: hub plan: no \"$w\""; }
done
! grep -q 'gcm' "$kt" || fail "bench-kernels.md names gcm, which was not run"
echo "bench-report.sh: the reading of null at N=1, 32, 1024 and of gcm at N=1, on 6.1 and 6.12-rt, names only what was run; the targets read module / idle where idle is behind stock; bench-kernels.md has each plan's table"
