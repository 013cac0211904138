#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark's page from a run's samples: docs/bench.md, docs/bench.png
# and a copy of RAW, docs/bench.raw, on 6.1; on another kernel (XNC_KLINE,
# make's KERNEL, as for bench/bench.sh) e.g. docs/bench-6.12.md, .png, .raw.
# Then docs/bench-kernels.md, module/stock of every kernel with a RAW in
# DOCS_DIR.  The page: a title, a table of the run's parameters, the
# tables of the samples, the charts; no text made from the data.
#
#   bench/report.sh RAW DOCS_DIR [RUN_SECONDS]
#   XNC_KLINE=6.12 bench/report.sh RAW DOCS_DIR [RUN_SECONDS]
#   XNC_BENCH_MERGE=1 bench/report.sh RAW DOCS_DIR   RAW into the page's samples
#   bench/report.sh --profile-only PROFILE_DIR OUT_DIR
#
# XNC_BENCH_SETTINGS: the run's own settings (bench/bench.sh), e.g.
# XNC_BENCH_N="1 32", put before "make bench" in the page's command.
# RAW lines (bench/guest/bench.sh):
#   cipher n variant round pps sent received elapsed_us lookups hits misses backlog_drops
# RAW being DOCS_DIR's own copy, the page is made again from it, keeping
# what RAW does not hold (the run's date, kernel, command, time, discarded
# samples, why there is no profile) from the page there.
#
# The profile (where a packet's instructions go, by phase) comes from the
# run's profile directory next to RAW (bench/guest/bench.sh), parsed by
# bench/profile.py into DOCS_DIR/bench-profile.tsv (bench-6.12-profile.tsv
# on 6.12, ...) and charted in bench-profile.png; a page made from
# DOCS_DIR's own RAW uses the TSV there.  --profile-only writes the
# profile alone as OUT_DIR/bench-profile.md, .tsv and .png (make bench
# with XNC_BENCH_PROFILE=only).

set -euo pipefail

profile_only=
if [ "${1:-}" = --profile-only ]; then
	profile_only=1
	shift
fi
raw=$1 docs=$2 secs=${3:-}
top=$(cd "$(dirname "$0")/.." && pwd)
kline=$("$top/scripts/kernel.sh" name)
kver=$("$top/scripts/kernel.sh" version)
# bench.* on 6.1 (the names they always had), bench-<kernel>.* elsewhere
base=bench on='' regen="make bench" env=''
if [ "$kline" != 6.1 ]; then
	base=bench-$kline on=" on $kline" regen="make bench KERNEL=$kline" env="XNC_KLINE=$kline "
fi
regen="${XNC_BENCH_SETTINGS:-}$regen"
mkdir -p "$docs"
page=$docs/$base.md
# the page made again from its own RAW: what RAW does not say, from it
again=
[ -n "$profile_only" ] || ! [ "$raw" -ef "$docs/$base.raw" ] || [ ! -f "$page" ] || again=1
# XNC_BENCH_MERGE=1: RAW's samples replace the page's for the same cipher
# (plan) and N, the page's others stay (each cell still from one boot);
# the merged samples beside RAW, where its profile directory is
merged=
if [ "${XNC_BENCH_MERGE:-0}" = 1 ] && [ -z "$profile_only" ] && ! [ "$raw" -ef "$docs/$base.raw" ]; then
	merged=1
	if [ -f "$docs/$base.raw" ]; then
		awk 'NR == FNR { run[$1 " " $2] = 1; print; next }
		     !(($1 " " $2) in run)' "$raw" "$docs/$base.raw" >"$raw.merged"
	else
		cp "$raw" "$raw.merged"
	fi
	raw=$raw.merged
fi

# cell PAGE NAME: the value of row NAME of PAGE's parameter table
cell() { awk -v k="| $2 | " 'index($0, k) == 1 { s = substr($0, length(k) + 1); sub(/ [|]$/, "", s); print s; exit }' "$1" 2>/dev/null; }

# row NAME VALUE: a row of the parameter table; VALUE empty: none.  Made
# again from its own RAW, the page's row NAME, if it has one and RAW does
# not give it, stays.
row() {
	local v=$2 old
	if [ -n "$again" ] && [[ $1 =~ ^(kernel|date|command|run\ time|runs|samples\ discarded.*|profile)$ ]]; then
		old=$(cell "$page" "$1")
		[ -z "$old" ] || v=$old
	fi
	[ -z "$v" ] || echo "| $1 | $v |"
}

# profile_section SRC: the profile's section, on stdout, from SRC: the
# guest's profile directory, or a TSV bench/profile.py wrote; its table
# (bench/profile.py's, without its notes) and chart.  Writes
# $docs/$base-profile.tsv and .png.  Not measured: nothing on stdout, the
# reason in $docs/$base.noprof.tmp, the TSV and PNG removed (they would be
# another run's).
profile_section() {
	local src=$1 ptsv=$docs/$base-profile.tsv png=$docs/$base-profile.png
	local md=$docs/$base-profile.md.tmp dat=$docs/$base-profile.dat.tmp rc=0 ncol cipher
	if [ -f "$src" ]; then
		[ "$src" -ef "$ptsv" ] || cp "$src" "$ptsv"
		python3 "$top/bench/profile.py" --from-tsv "$ptsv" --md "$md" --plot "$dat" || rc=$?
	else
		python3 "$top/bench/profile.py" "$src" --tsv "$ptsv" --md "$md" --plot "$dat" || rc=$?
	fi
	if [ $rc != 0 ]; then
		rm -f "$ptsv" "$png" "$dat"
		sed -n 's/^Profile: not measured (\(.*\))\.$/\1/p' "$md" 2>/dev/null >"$docs/$base.noprof.tmp"
		[ -s "$docs/$base.noprof.tmp" ] || echo "bench/profile.py failed" >"$docs/$base.noprof.tmp"
		rm -f "$md"
		return 0
	fi
	cipher=$(python3 "$top/bench/profile.py" --from-tsv "$ptsv" --cipher-label)
	echo "## Where a packet's instructions go"
	echo
	echo "| profile | |"
	echo "|---|---|"
	echo "| cipher | $cipher |"
	echo "| unit | guest instructions per forwarded packet, ± sqrt(samples) |"
	echo "| method | \`perf record -a -g -e cpu-clock\`, $(sed -n 's/^# period_ns=//p' "$ptsv") ns period; phases: \`bench/profile.py\` |"
	echo "| data | \`docs/$base-profile.tsv\` |"
	echo
	sed -n '/^|/p; /^$/q' "$md"
	rm -f "$md"
	if command -v gnuplot >/dev/null; then
		# columns: cell, then the phases in the report's order, the
		# lookup's own first; the last three are ESP output, the rest of
		# forwarding and other.  The right panel is the same stack up to
		# the top of the tallest lookup part: a zoom on the lookup.  A
		# phase keeps its colour whether the policy lookup is split (one
		# column more) or not.
		ncol=$(awk -F'\t' 'NR == 1 { print NF; exit }' "$dat")
		lt0=$((10 - ncol))
		nrow=$(($(wc -l <"$dat") - 1))
		zoom=$(awk -F'\t' -v last=$((ncol - 3)) 'NR > 1 {
				t = 0; for (i = 2; i <= last; i++) t += $i
				if (t > m) m = t }
			END { print int(m * 1.25) + 1 }' "$dat")
		gnuplot <<GNUPLOT
set terminal pngcairo size 1300,600 font ",10" noenhanced
set output "$png"
set multiplot title "Guest instructions per forwarded packet, by phase$on ($cipher; perf cpu-clock samples under -icount shift=1)"
set datafile separator "\t"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:$nrow - 0.4]
set grid ytics
set key autotitle columnhead
set linetype 1 lc rgb "#542788"
set linetype 2 lc rgb "#998ec3"
set linetype 3 lc rgb "#1b9e77"
set linetype 4 lc rgb "#66a61e"
set linetype 5 lc rgb "#e6ab02"
set linetype 6 lc rgb "#d95f02"
set linetype 7 lc rgb "#1f78b4"
set linetype 8 lc rgb "#a6cee3"
set linetype 9 lc rgb "#bdbdbd"
set xlabel "tunnels (N), variant"
set origin 0, 0
set size 0.36, 0.95
set title "every phase"
set ylabel "guest instructions per forwarded packet"
set yrange [0:*]
unset key
plot for [i=2:$ncol] "$dat" using i:xtic(1) lt (i - 1 + $lt0)
set origin 0.36, 0
set size 0.64, 0.95
set title "zoom on the lookup's phases"
unset ylabel
set yrange [0:$zoom]
set key outside right top vertical Left reverse invert
plot for [i=2:$ncol] "$dat" using i:xtic(1) lt (i - 1 + $lt0) title columnheader(i)
unset multiplot
GNUPLOT
		echo
		echo "![instructions per packet, by phase]($base-profile.png)"
	else
		rm -f "$png"
		echo "bench/report.sh: no gnuplot, no profile chart" >&2
	fi
	rm -f "$dat"
}

if [ -n "$profile_only" ]; then
	prof=$(profile_section "$raw")
	{
		echo "# Benchmark$on, profile only: where a forwarded packet's instructions go"
		echo
		echo "| run | |"
		echo "|---|---|"
		echo "| kernel | \`$kver\`, TCG, one vCPU, \`-icount shift=1\` |"
		echo "| date | $(date -u +%Y-%m-%d) |"
		echo "| command | \`XNC_BENCH_PROFILE=only make bench\` |"
		[ -n "$prof" ] || echo "| profile | not measured ($(cat "$docs/$base.noprof.tmp")) |"
		echo
		[ -z "$prof" ] || echo "$prof"
	} >"$docs/$base-profile.md"
	rm -f "$docs/$base.noprof.tmp"
	cat "$docs/$base-profile.md"
	exit 0
fi

rej=$(grep -vc ' warmup ' "${raw%.raw}.rejected" 2>/dev/null || true)
tab=$docs/$base.tsv.tmp
trap 'rm -f "$tab" "$docs/$base".*.dat "$docs/$base.noprof.tmp"' EXIT

# one line per (cipher, n, variant): median, min, max, samples, hit rate,
# lookups per packet, packets lost
grep -v ' warmup ' "$raw" | sort -k1,1 -k2,2n -k3,3 -k5,5n | awk '
	function flush() {
		if (!cnt) return
		med = cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
		hr = (h + m) ? sprintf("%.1f", 100 * h / (h + m)) : "-"
		lpp = rxs ? sprintf("%.2f", lk / rxs) : "-"
		print key, med, v[1], v[cnt], cnt, hr, lpp, lost
	}
	{ k = $1 " " $2 " " $3
	  if (k != key) { flush(); key = k; cnt = 0; h = m = lk = rxs = lost = 0 }
	  v[++cnt] = $5; h += $10; m += $11; lk += $9; rxs += $7; if ($6 > $7) lost += $6 - $7 }
	END { flush() }' >"$tab"

# ratios: to stock at the same (cipher, n); to the same variant at n=1
awk '
	NR == FNR { med[$1 " " $2 " " $3] = $4; next }
	{ s = med[$1 " " $2 " stock"]; o = med[$1 " 1 " $3]
	  print $0, (s ? sprintf("%.3f", $4 / s) : "-"), (o ? sprintf("%.3f", $4 / o) : "-") }
' "$tab" "$tab" >"$tab.2"
mv "$tab.2" "$tab"

# the ciphers (and plans) run, in the page's order
ciphers=
for c in null gcm null-hub gcm-hub; do
	grep -q "^$c " "$tab" && ciphers="$ciphers $c"
done
# list FIELD: the values of $tab's field FIELD, once each, ", "-separated
list() { awk -v f="$1" '$1 != "none" { print $f }' "$tab" | sort -u -V | paste -sd, - | sed 's/,/, /g'; }
# the variants run, in a fixed order, a short gloss each
variants() {
	local v
	for v in stock module pcpu-ref module-lat module-trace idle $(awk '$3 ~ /^pin[0-9]+$/ { print $3 }' "$tab" | sort -u -V); do
		grep -q "^[^ ]* [0-9]* $v " "$tab" || continue
		case $v in
		stock) echo "stock (no module)" ;;
		module) echo "module (\`xfrm_nocache.ko\`)" ;;
		pcpu-ref) echo "pcpu-ref (4.14-style per-CPU bundle cache, \`bench/ref/pcpu_ref.c\`)" ;;
		module-lat) echo "module-lat (\`latency=1\`)" ;;
		module-trace) echo "module-trace (\`xnc_lookup\` tracepoint on, no reader)" ;;
		idle) echo "idle (module loaded, patch disabled)" ;;
		pin*) echo "$v (stock, ${v#pin} more 1 KiB \`kmalloc\` objects held, \`bench/ref/slab_pin.c\`)" ;;
		esac
	done | paste -sd';' - | sed 's/;/; /g'
}

# the profile first: not measured, it is a row of the parameters
prof=$(dirname "$raw")/profile
if [ "$(cat "$prof/status" 2>/dev/null)" != ok ] && [ -f "$docs/$base-profile.tsv" ] &&
	{ [ "$(dirname "$raw")" -ef "$docs" ] || [ -n "$merged" ]; }; then
	prof=$docs/$base-profile.tsv
fi
profile=$(profile_section "$prof")

{
	echo "# Benchmark$on: forwarded IPsec packets/s against the number of tunnels"
	echo
	echo "| run | |"
	echo "|---|---|"
	row kernel "\`$kver\`, TCG, one vCPU, \`-icount shift=1\`"
	row date "$(date -u +%Y-%m-%d)"
	row command "\`$regen\`"
	row "run time" "${secs:+$((secs / 60)) min $((secs % 60)) s}"
	row runs "${merged:+more than one (\`XNC_BENCH_MERGE=1\`), each cipher, plan and N from one boot}"
	row ciphers "$(for c in $ciphers; do echo "${c%-hub}"; done | awk '!s[$0]++' | paste -sd, - | sed 's/,/, /g')"
	row plans "$(for c in $ciphers; do case $c in *-hub) echo hub ;; *) echo random ;; esac; done | awk '!s[$0]++' | paste -sd, - | sed 's/,/, /g')"
	row N "$(list 2)"
	row variants "$(variants)"
	row rounds "$(list 7)"
	row "guest s/sample" "$(awk '$3 == "stock" { printf "%.0f", $8 / 1e6; exit }' "$raw")"
	row "samples discarded (backlog overflow)" "${rej:-0} of $((rej + $(grep -vc ' warmup ' "$raw")))"
	row "ceiling (no IPsec)" "$(awk '$1 == "none" { print $4 }' "$tab") pps"
	row cell "median of the rounds; spread = (max - min) / median; hit % = pcpu-ref's cache hits"
	[ -n "$profile" ] || row profile "not measured ($(cat "$docs/$base.noprof.tmp"))"
	row raw "\`docs/$base.raw\`: cipher n variant round pps sent received elapsed_us lookups hits misses backlog_drops"
	row report "\`${env}bench/report.sh docs/$base.raw docs\`"
	row "all kernels" "[bench-kernels.md](bench-kernels.md)"
	echo
	echo "## module/stock and pcpu-ref/stock"
	echo
	awk -v cl="$ciphers" '
		$1 != "none" { r[$1 " " $2 " " $3] = $11; ns[$2 + 0] = 1 }
		END {
			nc = split(cl, c, " ")
			printf "| N |"
			for (q = 1; q <= nc; q++) for (v = 1; v <= 2; v++)
				if (col(c[q], v)) printf " %s %s |", c[q], (v == 1 ? "module" : "pcpu-ref")
			printf "\n|---:|"
			for (q = 1; q <= nc; q++) for (v = 1; v <= 2; v++) if (col(c[q], v)) printf "---:|"
			printf "\n"
			n = 0; for (x in ns) nl[++n] = x + 0
			for (i = 2; i <= n; i++) for (j = i; j > 1 && nl[j - 1] > nl[j]; j--) { t = nl[j]; nl[j] = nl[j - 1]; nl[j - 1] = t }
			for (i = 1; i <= n; i++) {
				printf "| %d |", nl[i]
				for (q = 1; q <= nc; q++) for (v = 1; v <= 2; v++) if (col(c[q], v)) {
					k = c[q] " " nl[i] " " (v == 1 ? "module" : "pcpu-ref")
					printf " %s |", (k in r) ? r[k] : "-"
				}
				printf "\n"
			}
		}
		# whether cipher c has a column for variant v (1: module, 2: pcpu-ref)
		function col(c, v,   k, x) {
			for (k in r) { split(k, x, " "); if (x[1] == c && x[3] == (v == 1 ? "module" : "pcpu-ref")) return 1 }
			return 0
		}' "$tab"
	for c in $ciphers; do
		echo
		case $c in
		*-hub) echo "## ESP ${c%-hub}, hub-and-spoke plan" ;;
		*) echo "## ESP $c" ;;
		esac
		echo
		echo "| N | variant | median pps | spread | vs stock | vs N=1 | hit % | lookups/pkt | lost |"
		echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
		awk -v c="$c" '$1 == c {
			printf "| %d | %s | %d | %.1f%% | %s | %s | %s | %s | %d |\n",
			    $2, $3, $4, 100 * ($6 - $5) / $4, $11, $12, $8, $9, $10 }' "$tab"
	done
	echo
	echo "![packets/s against tunnels]($base.png)"
	# every kernel's lookup latency under load (make bench-latency), the
	# cost to local traffic (make bench-local): their sections, if measured
	if [ -f "$docs/latency.tsv" ]; then
		echo
		XNC_BENCH_DOCS=$docs "$top/bench/latency.sh" --section
	fi
	if [ -f "$docs/local${base#bench}.raw" ]; then
		echo
		XNC_BENCH_DOCS=$docs "$top/bench/local.sh" --section
	fi
	[ -z "$profile" ] || printf '\n%s\n' "$profile"
} >"$page.tmp"
mv "$page.tmp" "$page"
# (not onto itself: the page made again from DOCS_DIR's own RAW)
[ "$raw" -ef "$docs/$base.raw" ] || cp "$raw" "$docs/$base.raw"

# the chart: one column per cipher; packets/s on top, the ratio to stock below
for c in $ciphers; do
	for v in stock module pcpu-ref; do
		awk -v c="$c" -v v="$v" '$1 == c && $3 == v { print $2, $4, $11 }' "$tab" >"$docs/$base.$c.$v.dat"
	done
done
ceiling=$(awk '$1 == "none" { print $4 }' "$tab")
if command -v gnuplot >/dev/null; then
	gnuplot <<EOF
set terminal pngcairo size 1100,800 font ",10" noenhanced
set output "$docs/$base.png"
set multiplot layout 2,$(echo "$ciphers" | wc -w) title "Forwarded ESP packets/s through a gateway with N tunnels$on (qemu TCG, -icount shift=1, 1 vCPU)"
set logscale x
set xlabel "tunnels (N)"
set grid
set key bottom left
do for [c in "$ciphers"] {
	set title "ESP ".c.": packets/s"
	set ylabel "packets/s (guest time)"
	set yrange [0:*]
	plot "$docs/$base.".c.".stock.dat" using 1:2 with linespoints lw 2 title "stock $kline", \
	     "$docs/$base.".c.".module.dat" using 1:2 with linespoints lw 2 title "xfrm_nocache", \
	     "$docs/$base.".c.".pcpu-ref.dat" using 1:2 with linespoints lw 2 title "pcpu-ref (4.14-style cache)", \
	     $ceiling with lines dt 2 title "no IPsec"
}
set key top right
do for [c in "$ciphers"] {
	set title "ESP ".c.": relative to stock"
	set ylabel "packets/s / stock"
	set yrange [0.95:1.25]
	plot 1 with lines dt 2 lc rgb "gray" title "stock $kline", \
	     "$docs/$base.".c.".module.dat" using 1:3 with linespoints lw 2 lc 2 title "xfrm_nocache", \
	     "$docs/$base.".c.".pcpu-ref.dat" using 1:3 with linespoints lw 2 lc 3 title "pcpu-ref"
}
unset multiplot
EOF
else
	echo "bench/report.sh: no gnuplot, no chart" >&2
fi

# docs/bench-kernels.md: module/stock at every N and cipher, side by side
# for every kernel with a RAW in DOCS (bench.raw: 6.1; bench-<kernel>.raw),
# one table for each addressing plan measured, written again by every page
kernels_table() {
	local f k md runs=() all
	for f in "$docs"/bench.raw "$docs"/bench-*.raw; do
		[ -f "$f" ] || continue
		k=${f##*/bench}
		k=${k%.raw}
		k=${k#-}
		runs+=("${k:-6.1}=$f")
	done
	[ ${#runs[@]} -gt 0 ] || return 0
	echo "# Benchmark: module/stock on every kernel"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| cell | median pps of the module / median pps of stock at that N; - : not run |"
	echo "| random plan | every SA to one peer, told apart by its reqid; a random tunnel's inner /24 per packet |"
	echo "| hub-and-spoke plan | each SA to its own spoke, consecutive addresses, reqids in the same order (as strongSwan numbers them) |"
	echo "| written by | \`bench/report.sh\`, from each kernel's \`docs/bench*.raw\` |"
	all=$(for f in "${runs[@]}"; do
		awk -v k="${f%%=*}" '$3 == "stock" || $3 == "module" {
				print k, $1, $2, $3, $5 }' "${f#*=}"
	done | sort -k1,1 -k2,2 -k3,3n -k4,4 -k5,5n)
	kernels_plan "$all" "null gcm" "Random plan"
	kernels_plan "$all" "null-hub gcm-hub" "Hub-and-spoke plan"
	echo
	echo "## Runs"
	echo
	echo "| kernel | page | date | version |"
	echo "|---|---|---|---|"
	for f in "${runs[@]}"; do
		k=${f%%=*}
		md=${f#*=}
		md=${md%.raw}.md
		echo "| $k | [${md##*/}](${md##*/}) | $(cell "$md" date) | $(cell "$md" kernel | cut -d'`' -f2) |"
	done
}

# kernels_plan SAMPLES "CIPHER..." TITLE: the table of one plan (its
# ciphers as RAW names them), nothing when no kernel ran it
kernels_plan() {
	echo "$1" | awk -v cls="$2" -v title="$3" '
		# medians per kernel, cipher, N, variant
		{ key = $1 " " $2 " " $3 " " $4; v[key, ++n[key]] = $5 }
		END {
			nc = split(cls, cl, " ")
			for (key in n) {
				c = n[key]
				m[key] = c % 2 ? v[key, (c + 1) / 2] : (v[key, c / 2] + v[key, c / 2 + 1]) / 2
				split(key, a, " ")
				for (q = 1; q <= nc; q++) if (a[2] == cl[q]) {
					ks[a[1]] = 1; cs[a[2]] = 1; ns[a[3]] = 1
				}
			}
			nk = 0; for (k in ks) kl[++nk] = k
			if (!nk) exit
			for (i = 2; i <= nk; i++) for (j = i; j > 1 && kl[j - 1] > kl[j]; j--) { t = kl[j]; kl[j] = kl[j - 1]; kl[j - 1] = t }
			nn = 0; for (x in ns) nl[++nn] = x + 0
			for (i = 2; i <= nn; i++) for (j = i; j > 1 && nl[j - 1] > nl[j]; j--) { t = nl[j]; nl[j] = nl[j - 1]; nl[j - 1] = t }
			printf "\n## %s\n\n| N |", title
			for (q = 1; q <= nc; q++) if (cl[q] in cs) for (i = 1; i <= nk; i++) {
				name = cl[q]; sub(/-hub$/, "", name)
				printf " %s %s |", kl[i], name
			}
			printf "\n|---:|"
			for (q = 1; q <= nc; q++) if (cl[q] in cs) for (i = 1; i <= nk; i++) printf "---:|"
			printf "\n"
			for (x = 1; x <= nn; x++) {
				printf "| %d |", nl[x]
				for (q = 1; q <= nc; q++) if (cl[q] in cs) for (i = 1; i <= nk; i++) {
					s = m[kl[i] " " cl[q] " " nl[x] " stock"]; o = m[kl[i] " " cl[q] " " nl[x] " module"]
					if (s && o) printf " %.3f |", o / s; else printf " - |"
				}
				printf "\n"
			}
		}'
}
kernels_table >"$docs/bench-kernels.md.tmp" && mv "$docs/bench-kernels.md.tmp" "$docs/bench-kernels.md"
[ -s "$docs/bench-kernels.md" ] || rm -f "$docs/bench-kernels.md"

cat "$page"
