#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Turn the samples of a benchmark run into docs/bench.md and docs/bench.png
# (and a copy of RAW, docs/bench.raw): kernel 6.1; on another kernel, e.g.
# docs/bench-6.12.md, .png and .raw.  The kernel is XNC_KLINE (make's
# KERNEL, 6.1 by default), as for bench/bench.sh.
#
#   bench/report.sh RAW DOCS_DIR [RUN_SECONDS]
#   XNC_KLINE=6.12 bench/report.sh RAW DOCS_DIR [RUN_SECONDS]
#   XNC_BENCH_MERGE=1 bench/report.sh RAW DOCS_DIR  RAW into the page's
#   (XNC_BENCH_SETTINGS: the run's own settings, e.g. XNC_BENCH_N="1 32",
#   put before "make bench" where the report says how to make it again)
#   bench/report.sh --profile-only PROFILE_DIR OUT_DIR
#
# RAW lines (bench/guest/bench.sh):
#   cipher n variant round pps sent received elapsed_us lookups hits misses
#
# The profile (where a packet's instructions go, by phase) comes from the
# run's profile directory next to RAW (bench/guest/bench.sh), parsed by
# bench/profile.py into DOCS_DIR/bench-profile.tsv (bench-6.12-
# profile.tsv on 6.12, and so on) and charted in bench-profile.png; a
# report made from DOCS_DIR's own copy of RAW uses the TSV it finds there.
# --profile-only writes the profile's section alone, as
# OUT_DIR/bench-profile.md with its .tsv and .png (what make bench does
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
# the report's files: bench.* on 6.1 (the names they always had), e.g.
# bench-6.12.* on another line; with what the texts say of the line
base=bench on='' regen="make bench" stock="no module, Debian's" ratio_stock=stock
if [ "$kline" != 6.1 ]; then
	base=bench-$kline on=" on $kline" regen="make bench KERNEL=$kline"
	stock="no module: stock $kline, Debian's" ratio_stock="stock $kline"
fi
# a run with settings of its own (bench/bench.sh says which) is made
# again with them
regen="${XNC_BENCH_SETTINGS:-}$regen"
mkdir -p "$docs"
# XNC_BENCH_MERGE=1: RAW's samples replace the page's for the same cipher
# (plan) and N, the page's others stay (a part of the benchmark at a
# time, each cell still from one boot); the merged samples beside RAW,
# where its profile directory is
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

# profile_section SRC: the profile's section of the report, on stdout, from
# SRC: the guest's profile directory, or a TSV bench-profile.py wrote.
# Writes $docs/$base-profile.tsv and .png, or removes them when there is
# no profile to show (they would be another run's).
profile_section() {
	local src=$1 ptsv=$docs/$base-profile.tsv png=$docs/$base-profile.png
	local md=$docs/$base-profile.md.tmp dat=$docs/$base-profile.dat.tmp rc=0 ncol cipher
	echo "## Where a packet's instructions go"
	echo
	if [ -f "$src" ]; then
		[ "$src" -ef "$ptsv" ] || cp "$src" "$ptsv"
		python3 "$top/bench/profile.py" --from-tsv "$ptsv" --md "$md" \
			--plot "$dat" || rc=$?
	else
		python3 "$top/bench/profile.py" "$src" --tsv "$ptsv" --md "$md" \
			--plot "$dat" || rc=$?
	fi
	if [ $rc != 0 ]; then
		rm -f "$ptsv" "$png" "$dat"
		if [ -s "$md" ]; then
			cat "$md"
		else
			echo "Profile: not measured (bench-profile.py failed)."
		fi
		rm -f "$md"
		return 0
	fi
	cat "$md"
	rm -f "$md"
	echo
	# the profiled cipher, as the report names it
	cipher=$(python3 "$top/bench/profile.py" --from-tsv "$ptsv" --cipher-label)
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
		echo "![instructions per packet, by phase]($base-profile.png)"
		echo
	else
		rm -f "$png"
		echo "bench-report.sh: no gnuplot, no profile chart" >&2
	fi
	rm -f "$dat"
	echo "Profile data: \`docs/$base-profile.tsv\` (n variant phase samples"
	echo "instr_per_pkt pm share_pct, then one line per column). How samples are"
	echo "attributed: \`bench/profile.py\` and [testing.md](testing.md#benchmark)."
}

if [ -n "$profile_only" ]; then
	{
		echo "# Benchmark$on, profile only: where a forwarded packet's instructions go"
		echo
		echo "Debian's \`$("$top/scripts/kernel.sh" version)\` under \`-icount shift=1\`, one vCPU;"
		echo "\`XNC_BENCH_PROFILE=only make bench\` on $(date -u +%Y-%m-%d)."
		echo
		profile_section "$raw"
	} >"$docs/$base-profile.md"
	cat "$docs/$base-profile.md"
	exit 0
fi

rej=$(cat "${raw%.raw}.rejected" 2>/dev/null | grep -vc ' warmup ' || true)
tab=$docs/$base.tsv.tmp
trap 'rm -f "$tab" "$docs/$base".*.dat' EXIT

# one line per (cipher, n, variant): median, min, max, samples, hit rate
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

ceiling=$(awk '$1 == "none" { print $4 }' "$tab")
rounds=$(awk '$1 != "none" { print $7; exit }' "$tab")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
qemu=$(qemu-system-x86_64 --version | head -n1)
kver=$("$top/scripts/kernel.sh" version)

{
	echo "# Benchmark$on: forwarded IPsec packets/s against the number of tunnels"
	echo
	echo "Generated by \`$regen\` (\`bench/bench.sh\`, \`bench/guest/bench.sh\`,"
	echo "\`bench/report.sh\`) on $(date -u +%Y-%m-%d)."
	echo
	echo "- Host: $(nproc) cores ($cpu), $(awk '/MemTotal/ { printf "%d GiB", $2 / 1048576 }' /proc/meminfo), Debian $(cat /etc/debian_version); $qemu."
	echo "- Guest: Debian's own \`$kver\`, TCG, one vCPU, \`-icount shift=1\`:"
	echo "  guest time counts instructions, so packets/s are packets per instruction"
	echo "  budget, not wall-clock speed. Absolute numbers mean little; ratios do."
	[ -n "$secs" ] && echo "- Whole run (build, boot, all samples): $((secs / 60)) min $((secs % 60)) s."
	[ -z "$merged" ] ||
		echo "- Samples of more than one run (\`XNC_BENCH_MERGE=1\`): each cipher (plan) and N from one boot."
	echo "- Every kernel's module/stock side by side: [bench-kernels.md](bench-kernels.md)."
	echo
	echo "## Setup"
	echo
	echo "A source namespace runs \`pktgen\` (64-byte UDP, one random destination per"
	echo "packet over all N inner /24s) into a gateway namespace that forwards it;"
	echo "the gateway has N tunnel-mode ESP SAs and N \`dir out\` policies, one per /24"
	echo "(\`hthresh4 24 24\`, so the policies are hashed). Every forwarded packet"
	echo "costs one \`xfrm_lookup_with_ifid\` call from \`__xfrm_route_forward\`. The"
	echo "sink namespace counts what arrives; packets/s = arrivals / pktgen's elapsed"
	echo "guest time. \`null\`: ESP with \`cipher_null\` (the lookup path dominates);"
	echo "\`gcm\`: \`rfc4106(gcm(aes))\` 128-bit."
	echo
	echo "Variants, loaded and unloaded in turn, in a rotating order every round:"
	echo
	echo "- **stock**: $stock \`xfrm_lookup_with_ifid\`."
	echo "- **module**: \`xfrm_nocache.ko\`."
	echo "- **pcpu-ref**: a reference build (\`tests/bench/pcpu_ref.c\`, built by"
	echo "  \`make bench\` as \`xnc_pcpu_ref.ko\`, never shipped) that adds a 4.14-style"
	echo "  per-CPU last-bundle cache: reuse the last bundle of this CPU when the"
	echo "  policies and device match and it validates, else build and keep a new one."
	echo "- **module-lat**, **module-trace**: the module with \`latency=1\`, or with the"
	echo "  \`xfrm_nocache:xnc_lookup\` tracepoint enabled (ring buffer, no reader)."
	if grep -q '^[^ ]* [0-9]* idle ' "$raw"; then
		echo "- **idle**: \`xfrm_nocache.ko\` loaded, its patch disabled: stock's own"
		echo "  lookup in the kernel as loading the module leaves it (module/idle is the"
		echo "  lookup's own share; docs/testing.md, Real-time kernels)."
	fi
	pins=$(awk '$3 ~ /^pin[0-9]+$/ { print $3 }' "$raw" | sort -u -V | sed 's/.*/**&**/' | paste -sd, - | sed 's/,/, /g')
	if [ -n "$pins" ]; then
		echo "- $pins: no module of ours; \`xnc_slab_pin.ko\` (\`tests/bench/slab_pin.c\`)"
		echo "  holds that many more 1 KiB \`kmalloc\` objects, as loading any module leaves"
		echo "  a few in that cache: stock's lookup, the slab allocator's layout moved."
	fi
	echo "- **ceiling**: the same traffic with no policy (no lookup at all)."
	echo
	echo "Each cell is the median of $rounds samples (one per round) of about $(awk '$3 == "stock" { printf "%.0f", $8 / 1e6; exit }' "$raw") guest"
	echo "seconds each. A sample in which a CPU backlog overflowed is discarded and"
	echo "run again ($rej of $((rej + $(grep -vc ' warmup ' "$raw"))) samples this run): once softirqs spill over to"
	echo "ksoftirqd, pktgen and ksoftirqd share the one CPU and such a sample measures"
	echo "the scheduler (about half the rate, for every variant alike), not the lookup."
	echo "*spread* is (max - min) / median; *hit %* the per-CPU cache's hit rate;"
	echo "*lookups/pkt* the module's \`Lookups\` per forwarded packet."
	echo
	echo "Ceiling (no IPsec): **$ceiling** packets/s."
	for c in null gcm null-hub gcm-hub; do
		grep -q "^$c " "$tab" || continue
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
	echo "## Against the targets"
	echo
	# module never below stock; flat with N on the random plan (the hub
	# plan's SA hash is the kernel's, shared by stock and module).  Where
	# the cell has an idle sample behind stock, the module's is read
	# against it as well: stock's own lookup lost that much with the
	# module merely loaded, and module / idle is the lookup's own share
	awk 'NR == FNR { if ($3 == "idle") { idle[$1 " " $2] = $4; ir[$1 " " $2] = $11 }; next }
	$3 == "module" && $1 != "none" {
		ok = $11 >= 1.00 ? "ok" : "MISSED"
		printf "- %s N=%d: module / stock = %s (target >= 1.00: %s", $1, $2, $11, ok
		k = $1 " " $2
		if (ok != "ok" && (k in idle) && ir[k] < 1.00)
			printf "; idle / stock = %s, module / idle = %.3f: %s", ir[k], $4 / idle[k],
			    ($4 >= idle[k]) ? "stock\047s own lookup is as far behind with the module loaded" : "the lookup is behind too"
		printf ")"
		if ($1 ~ /-hub$/) { printf "; module N / N=1 = %s\n", $12; next }
		ok = $12 >= 0.99 ? "ok" : "MISSED"
		printf "; module N / N=1 = %s (target >= 0.99: %s)\n", $12, ok }' "$tab" "$tab"
	echo
	echo "Observability costs (null cipher), against the module with both off:"
	echo
	awk '$1 == "null" { med[$2 " " $3] = $4 }
	     END { for (k in med) { split(k, a, " ")
			if (a[2] == "module-lat" || a[2] == "module-trace")
				printf "- N=%d %s / module = %.3f\n", a[1], a[2], med[k] / med[a[1] " module"] } }' \
		"$tab" | sort -t= -k2,2n
	echo
	echo "## Reading it"
	echo
	# The reading of the 6.1 run (docs/bench.md) in the words it was first
	# written in, each finding checked against the data (a finding the
	# data no longer bear out is said the other way); on another line the
	# same points, stating what its own run measured.  A partial run (some
	# ciphers, some N) is read by what it ran: no cipher it did not run,
	# its most N where a whole run has 10000, no point whose cells it lacks
	awk -v kl="$kline" '
		{ r[$1 " " $2 " " $3] = $11; n1[$1 " " $2 " " $3] = $12 }
		# the N > 1 measured for cipher c, variant v, ascending, into
		# p[1..]; their count.  The prose names the first two and the
		# last (8, 32 and 10000 in a whole run), only N that were run.
		function picks(c, v, p,   k, x, n, i, j, t) {
			n = 0
			for (k in n1) {
				split(k, x, " ")
				if (x[1] == c && x[3] == v && x[2] + 0 > 1) p[++n] = x[2] + 0
			}
			for (i = 2; i <= n; i++)
				for (j = i; j > 1 && p[j - 1] > p[j]; j--) { t = p[j]; p[j] = p[j - 1]; p[j - 1] = t }
			if (n > 3) { p[3] = p[n]; n = 3 }
			return n
		}
		# "0.81 of its N=1 rate at N=8, ..., 0.80 at N=10000"
		function rates(c, v,   p, n, i, s) {
			n = picks(c, v, p)
			s = ""
			for (i = 1; i <= n; i++)
				s = s (i > 1 ? (i == n ? " and " : ", ") : "") n1[c " " p[i] " " v] \
				    (i == 1 ? " of its N=1 rate" : "") " at N=" p[i]
			return s
		}
		function first(c, v,   p) { return picks(c, v, p) ? p[1] : 1 }
		function last(c, v,   p, n) { n = picks(c, v, p); return n ? p[n] : 1 }
		END {
			# the ciphers with module samples, null first; the first
			# with more than one N (null in a whole run) is the one the
			# prose quotes at its least and most N
			split("null gcm", cs, " ")
			nc = 0; c0 = ""; grew = 0; flat = 1; mlo = 9; mhi = 0; mv = ""
			for (q = 1; q <= 2; q++)
				if (nhi(cs[q], "module")) cl[++nc] = cs[q]
			for (q = 1; q <= nc; q++) {
				c = cl[q]; a = nlo(c, "module"); z = nhi(c, "module")
				if (z > a) {
					grew = 1
					if (c0 == "") c0 = c
					# "does not grow": the most N within half a
					# percent of the least
					if (!(r[c " " z " module"] - r[c " " a " module"] > -0.005)) flat = 0
				}
			}
			if (c0 == "") c0 = cl[1]
			for (q = 1; q <= nc; q++) {
				c = cl[q]; a = nlo(c, "module"); z = nhi(c, "module")
				if (lo(c, "module") < mlo) mlo = lo(c, "module")
				if (hi(c, "module") > mhi) mhi = hi(c, "module")
				if (z > a)
					s = sprintf("%+.1f%% to %+.1f%% (%s)", 100 * (lo(c, "module") - 1), 100 * (hi(c, "module") - 1), c)
				else
					s = sprintf("%+.1f%% (%s, N=%d)", 100 * (lo(c, "module") - 1), c, z)
				mv = mv (q > 1 ? ", " : "") s
			}
			if (nc) {
				printf "- **module vs stock**: %s%s:\n", mv, grew ? " across N" : ""
				# what the module saves (the sub policy search stock
				# makes on every lookup) against what it costs
				# (entering through the livepatch: ftrace trampoline
				# and klp handler; the per-CPU counters), said by the
				# sign of the result
				if (mlo > 1)
					print "  faster than stock: the sub policy search it skips outweighs entering the\n  replacement through the livepatch (ftrace trampoline and klp handler) and\n  the per-CPU counters"
				else if (mhi < 1)
					print "  the cost of entering the replacement through the livepatch (ftrace\n  trampoline and klp handler) and of the per-CPU counters, more than the sub\n  policy search it skips saves"
				else
					print "  what the skipped sub policy search saves and what entering the replacement\n  through the livepatch (ftrace trampoline and klp handler) and the per-CPU\n  counters cost about cancel"
				if (kl == "6.1" && grew && flat)
					print "  (it does not change with N)."
				else
					span(c0)
			}
			# the module at its most N against N=1, each cipher that
			# has both; a cipher whose most N is not that of the first
			# says its own
			mn = ""; z0 = 0; nb = 0; fl = 1
			for (q = 1; q <= nc; q++) {
				c = cl[q]; z = nhi(c, "module")
				if (z < 2 || !has(c, 1, "module")) continue
				if (!nb++) z0 = z
				mn = mn (nb > 1 ? ", " : "") n1[c " " z " module"] " (" c (z != z0 ? ", N=" z : "") ")"
				if (!(n1[c " " z " module"] >= 0.99)) fl = 0
			}
			# pcpu-ref at N=1, each cipher that has it; the first (null in
			# a whole run) is the one followed as N grows
			np = 0; ahead = 1; pv = ""; pw = ""
			for (q = 1; q <= 2; q++) {
				c = cs[q]
				if (!has(c, 1, "pcpu-ref")) continue
				pl[++np] = c
				if (!(r[c " 1 pcpu-ref"] > 1)) ahead = 0
				pv = pv (np > 1 ? ", " r[c " 1 pcpu-ref"] " " c : r[c " 1 pcpu-ref"] " x stock " c)
				pw = pw (np > 1 ? ", " r[c " 1 pcpu-ref"] " (" c ")" : r[c " 1 pcpu-ref"] " x stock (" c ")")
			}
			p0 = np ? pl[1] : ""
			zm = p0 != "" ? nhi(p0, "module") : 0
			zb = p0 != "" ? both(p0) : 0
			if (kl == "6.1") {
				if (nb) {
					printf "- **module N=%d vs N=1**: %s: ", z0, mn
					if (fl) {
						print "flat, because nothing is"
						print "  cached there is no hit rate to fall; the policy and SA lookups are hashed."
					} else {
						print "it falls, although"
						print "  nothing is cached (no hit rate to fall) and the policy and SA lookups are hashed."
					}
				}
				if (!np)
					exit
				printf "- **pcpu-ref** is %s at N=1 (%s: every packet hits\n",
				    ahead ? "ahead" : "not ahead even", pv
				if (!picks(p0, "pcpu-ref")) {
					print "  and skips building the bundle); it was measured at no N > 1."
					exit
				}
				falls = n1[p0 " " first(p0, "pcpu-ref") " pcpu-ref"] < 0.95
				printf "  and skips building the bundle), and %s as soon as tunnels interleave:\n",
				    ahead ? (falls ? "loses that" : "keeps most of it") : (falls ? "falls further" : "stays there")
				printf "  %s (%s); the hit rate\n", rates(p0, "pcpu-ref"), p0
				b = behind(p0)
				if (b != "") {
					printf "  is 1/N with random destinations. From N=%s on it is behind the uncached\n", b
					printf "  module (%s vs %s x stock at N=%d, %s): every miss pays the comparison and\n",
					    r[p0 " " zm " pcpu-ref"], r[p0 " " zm " module"], zm, p0
					lr = n1[p0 " " last(p0, "pcpu-ref") " pcpu-ref"]
					if (ahead && lr <= n1[p0 " " first(p0, "pcpu-ref") " pcpu-ref"]) {
						print "  the swap of the slot on top of a full resolution. That is the seed'"'"'s shape:"
						print "  ahead for one flow, behind with many tunnels, falling with N."
					} else {
						print "  the swap of the slot on top of a full resolution."
					}
				} else if (zb) {
					print "  is 1/N with random destinations. It is not behind the uncached module at"
					printf "  every N from some N on: %s vs %s x stock at N=%d (%s).\n",
					    r[p0 " " zb " pcpu-ref"], r[p0 " " zb " module"], zb, p0
				} else {
					print "  is 1/N with random destinations."
				}
				exit
			}
			if (nb) {
				printf "- **module N=%d vs N=1**: %s: nothing is cached, so there\n", z0, mn
				print "  is no hit rate to fall; the policy and SA lookups are hashed."
			}
			if (!np)
				exit
			printf "- **pcpu-ref** at N=1: %s: every packet hits and\n", pw
			if (!picks(p0, "pcpu-ref")) {
				print "  skips building the bundle; it was measured at no N > 1."
				exit
			}
			print "  skips building the bundle. With N tunnels interleaved the hit rate is 1/N"
			printf "  (random destinations): %s (%s).\n", rates(p0, "pcpu-ref"), p0
			b = behind(p0)
			if (b != "") {
				printf "  From N=%s on it is behind the uncached module (%s vs %s x stock at\n",
				    b, r[p0 " " zm " pcpu-ref"], r[p0 " " zm " module"]
				printf "  N=%d, %s): every miss pays the comparison and the swap of the slot\n", zm, p0
				print "  on top of a full resolution."
			} else if (zb) {
				printf "  At N=%d (%s) it is at %s x stock, the uncached module at %s.\n",
				    zb, p0, r[p0 " " zb " pcpu-ref"], r[p0 " " zb " module"]
			}
		}
		# "(1.005 x stock at N=1, 1.007 at N=10000, null)": the module at
		# the least and the most N measured for cipher c
		function span(c,   a, z) {
			a = nlo(c, "module"); z = nhi(c, "module")
			if (z > a)
				printf "  (%s x stock at N=%d, %s at N=%d, %s).\n", r[c " " a " module"], a, r[c " " z " module"], z, c
			else
				printf "  (%s x stock at N=%d, %s).\n", r[c " " a " module"], a, c
		}
		# whether cell k ("cipher N variant") was measured (a ratio to stock)
		function ok(k) { return (k in r) && r[k] != "-" && r[k] != "" }
		function has(c, n, v) { return ok(c " " n " " v) }
		# the least and the most N measured for cipher c, variant v; 0 when none
		function nlo(c, v,   k, x, m) { m = 0; for (k in r) { split(k, x, " "); if (x[1] == c && x[3] == v && ok(k) && (!m || x[2] + 0 < m)) m = x[2] + 0 } return m }
		function nhi(c, v,   k, x, m) { m = 0; for (k in r) { split(k, x, " "); if (x[1] == c && x[3] == v && ok(k) && x[2] + 0 > m) m = x[2] + 0 } return m }
		# the most N at which both module and pcpu-ref were measured for
		# cipher c; 0 when none
		function both(c,   k, x, m) { m = 0; for (k in r) { split(k, x, " "); if (x[1] == c && x[3] == "module" && has(c, x[2], "module") && has(c, x[2], "pcpu-ref") && x[2] + 0 > m) m = x[2] + 0 } return m }
		function lo(c, v,   k, m, x) { m = 9; for (k in r) { split(k, x, " "); if (x[1] == c && x[3] == v && ok(k) && r[k] < m) m = r[k] } return m }
		function hi(c, v,   k, m, x) { m = 0; for (k in r) { split(k, x, " "); if (x[1] == c && x[3] == v && ok(k) && r[k] > m) m = r[k] } return m }
		# the least N from which on pcpu-ref is behind the module at every
		# N measured, or ""
		# (has(): no look-up of a cell that was not measured, which would
		# add it to r)
		function behind(c,   k, x, ns, n, i, j, t, from) {
			n = 0
			for (k in r) { split(k, x, " "); if (x[1] == c && x[3] == "module") ns[++n] = x[2] + 0 }
			for (i = 2; i <= n; i++)
				for (j = i; j > 1 && ns[j - 1] > ns[j]; j--) { t = ns[j]; ns[j] = ns[j - 1]; ns[j - 1] = t }
			from = ""
			for (i = n; i >= 1; i--) {
				if (!has(c, ns[i], "pcpu-ref") || !has(c, ns[i], "module") ||
				    r[c " " ns[i] " pcpu-ref"] + 0 >= r[c " " ns[i] " module"] + 0) break
				from = ns[i]
			}
			return from
		}
	' "$tab"
	# module against pcpu-ref at the most tunnels both were measured
	# with (N > 1), null, else gcm: "PERCENT N CIPHER", or nothing
	read -r pen pn pc <<<"$(awk '($1 == "null" || $1 == "gcm") && $2 > 1 && ($3 == "module" || $3 == "pcpu-ref") {
			v[$1 " " $2 " " $3] = $4 }
		END { split("null gcm", cs, " ")
			for (q = 1; q <= 2; q++) {
				c = cs[q]; n = 0
				for (k in v) { split(k, x, " ")
					if (x[1] == c && x[3] == "module" && v[k] && (c " " x[2] " pcpu-ref") in v && v[c " " x[2] " pcpu-ref"] && x[2] + 0 > n) n = x[2] + 0 }
				if (n) {
					printf "%.1f %d %s\n", 100 * (v[c " " n " module"] - v[c " " n " pcpu-ref"]) / v[c " " n " module"], n, c
					exit
				}
			} }' "$tab")"
	case $pen in
	'') why="'s penalty with many tunnels would be small here** (not measured in this run: no N > 1 with both pcpu-ref and the module; on" ;;
	-* | 0.0) why=" costs nothing with many tunnels here** (N=$pn, $pc: pcpu-ref ${pen#-}% ahead; on" ;;
	*) why="'s penalty with many tunnels is only $pen% here** (N=$pn, $pc; on" ;;
	esac
	echo "- **Why the cache$why"
	echo "  the seed's 30-tunnel router, 4.14's cache cost -20% where no cache cost -5%):"
	echo "  under \`-icount\` time is instructions, and a miss is few instructions. On real hardware the 4.14 cache lost through memory effects that"
	echo "  TCG does not model: a missed bundle is cold in the CPU cache, and holding,"
	echo "  validating and releasing it bounces reference counts. The reference is not"
	echo "  tuned to show more: its hits are even cheaper than 4.14's (no template"
	echo "  resolution before the comparison), which favours the cache."
	# the hub-and-spoke plan: how stock and module fall with N there
	for c in null-hub gcm-hub; do
		awk -v c="$c" '$1 == c && ($3 == "stock" || $3 == "module") {
				if ($2 > n) n = $2
				r[$2 " " $3] = $12; if ($3 == "module") v[$2] = $11 }
			END {
				# (nothing to say without N=1 and a greater N,
				# each with both)
				if (n < 2 || !((n " stock") in r) || !((n " module") in r) ||
				    r[n " stock"] == "-" || r[n " module"] == "-") exit
				printf "- **hub-and-spoke plan** (%s): at N=%d stock keeps %s of its N=1 rate, the module %s (module/stock %s): the SA lookup is the kernel'"'"'s in both, and its hash of consecutive spoke addresses with reqids given in the same order is what this plan measures.\n",
				    substr(c, 1, length(c) - 4), n, r[n " stock"], r[n " module"], v[n]
			}' "$tab" | fold -s -w 78 | sed '1!s/^/  /; s/ *$//'
	done
	echo "- **latency=1** costs two clock reads and a histogram increment per lookup; the"
	echo "  **enabled tracepoint** records a ring-buffer event per lookup (no reader)."
	echo "  Both off, the module pays one predictable branch."
	echo
	echo "Spread: the ratios compare medians; the spread of a cell is the whole range of"
	if [ "$kline" = 6.1 ]; then
		# module vs stock against the median spread of the stock and
		# module cells; pcpu-ref vs module from the N on which it is
		# behind in every cell (per cipher), against those cells' spread
		awk '
			$1 == "none" { next }
			{ k = $1 " " $2; med[k " " $3] = $4; sp[k " " $3] = 100 * ($6 - $5) / $4 }
			$3 == "module" { d = 100 * ($11 - 1); if (!nm++ || d < mlo) mlo = d; if (nm == 1 || d > mhi) mhi = d
				c[$1] = 1; ns[$1, ++nn[$1]] = $2 + 0 }
			$3 == "stock" || $3 == "module" { s[++nsp] = 100 * ($6 - $5) / $4 }
			END {
				for (i = 2; i <= nsp; i++)
					for (j = i; j > 1 && s[j - 1] > s[j]; j--) { t = s[j]; s[j] = s[j - 1]; s[j - 1] = t }
				typ = nsp % 2 ? s[(nsp + 1) / 2] : (s[nsp / 2] + s[nsp / 2 + 1]) / 2
				small = mhi < 0 ? -mhi : (mlo > 0 ? mlo : 0)
				txt = sprintf("its samples (one outlier widens it). module vs stock (%.1f%% to %.1f%%) %s the typical spread (%.1f%%, the median over the stock and module cells)",
				    mlo, mhi, (small > typ ? "exceeds" : "is within"), typ)
				# pcpu-ref behind the module, per cipher
				nb = 0; out = ""
				split("null gcm", cs, " ")
				for (q = 1; q <= 2; q++) {
					ci = cs[q]
					if (!(ci in c)) continue
					n = nn[ci]
					for (i = 2; i <= n; i++)
						for (j = i; j > 1 && ns[ci, j - 1] > ns[ci, j]; j--) {
							t = ns[ci, j]; ns[ci, j] = ns[ci, j - 1]; ns[ci, j - 1] = t }
					from = 0
					for (i = n; i >= 1; i--) {
						k = ci " " ns[ci, i]
						if (!((k " pcpu-ref") in med) || med[k " pcpu-ref"] >= med[k " module"]) break
						from = i
					}
					if (!from) continue
					nb++
					dlo = 0; dhi = -100; beyond = 0
					for (i = from; i <= n; i++) {
						k = ci " " ns[ci, i]
						d = 100 * (med[k " pcpu-ref"] / med[k " module"] - 1)
						if (d < dlo) dlo = d
						if (d > dhi) dhi = d
						sm = sp[k " pcpu-ref"] > sp[k " module"] ? sp[k " pcpu-ref"] : sp[k " module"]
						if (-d > sm) beyond++
					}
					out = out sprintf("%s%s from N=%d on, %.2f%% to %.2f%%, beyond the spread of both its cells at %d of %d N",
					    (nb > 1 ? "; " : ""), ci, ns[ci, from], dlo, dhi, beyond, n - from + 1)
				}
				if (nb)
					txt = txt sprintf("; pcpu-ref behind module (%s) is of the same sign in every such cell%s.",
					    out, (nb > 1 ? ", both ciphers" : ""))
				else
					txt = txt "; pcpu-ref is not behind the module at every N from some N on."
				print txt
			}' "$tab" | fold -s -w 79 | sed 's/ *$//'
	else
		echo "its samples (one outlier widens it): a difference smaller than the spread of"
		echo "its cells is within this run's noise, unless it has the same sign in every"
		echo "such cell."
	fi
	echo
	echo "![packets/s against tunnels]($base.png)"
	echo
	echo "Raw samples: \`docs/$base.raw\` (cipher n variant round pps sent received"
	echo "elapsed_us lookups hits misses backlog_drops)."
	# how long it takes: this run's time, when known
	took=
	[ -z "$secs" ] || took=" (about $(((secs + 30) / 60)) minutes)"
	echo "Regenerate: \`$regen\`$took; the report alone:"
	if [ "$kline" = 6.1 ]; then
		echo "\`bench/report.sh RAW docs\`."
	else
		echo "\`XNC_KLINE=$kline bench/report.sh RAW docs\`."
	fi
	echo
	# every kernel's lookup latency under load, if measured
	# (make bench-latency; it replaces this section when it runs again)
	if [ -f "$docs/latency.tsv" ]; then
		XNC_BENCH_DOCS=$docs "$top/scripts/bench-latency.sh" --section
		echo
	fi
	# the cost to local traffic, if measured (make bench-local)
	if [ -f "$docs/local${base#bench}.raw" ]; then
		XNC_BENCH_DOCS=$docs "$top/scripts/bench-local.sh" --section
		echo
	fi
	# the run's profile, or the one DOCS already has for its own RAW (or
	# for the samples a merged run kept)
	# (a run with XNC_BENCH_PROFILE=0 has the directory, saying "off")
	prof=$(dirname "$raw")/profile
	if [ "$(cat "$prof/status" 2>/dev/null)" != ok ] && [ -f "$docs/$base-profile.tsv" ] &&
		{ [ "$(dirname "$raw")" -ef "$docs" ] || [ -n "$merged" ]; }; then
		prof=$docs/$base-profile.tsv
	fi
	profile_section "$prof"
} >"$docs/$base.md"
# (not onto itself: the report regenerated from DOCS_DIR's own copy)
[ "$raw" -ef "$docs/$base.raw" ] || cp "$raw" "$docs/$base.raw"

# plot: one column per cipher; packets/s on top, the ratio to stock below
ciphers=
for c in null gcm null-hub gcm-hub; do
	grep -q "^$c " "$tab" && ciphers="$ciphers $c"
done
for c in $ciphers; do
	for v in stock module pcpu-ref; do
		awk -v c="$c" -v v="$v" '$1 == c && $3 == v { print $2, $4, $11 }' "$tab" >"$docs/$base.$c.$v.dat"
	done
done
if command -v gnuplot >/dev/null; then
	gnuplot <<EOF
set terminal pngcairo size 1100,800 font ",10" noenhanced
set output "$docs/$base.png"
set multiplot layout 2,$(echo $ciphers | wc -w) title "Forwarded ESP packets/s through a gateway with N tunnels$on (qemu TCG, -icount shift=1, 1 vCPU)"
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
	plot 1 with lines dt 2 lc rgb "gray" title "$ratio_stock", \
	     "$docs/$base.".c.".module.dat" using 1:3 with linespoints lw 2 lc 2 title "xfrm_nocache", \
	     "$docs/$base.".c.".pcpu-ref.dat" using 1:3 with linespoints lw 2 lc 3 title "pcpu-ref"
}
unset multiplot
EOF
else
	echo "bench-report.sh: no gnuplot, no plot" >&2
fi

# docs/bench-kernels.md: module/stock at every N and cipher, side by side
# for every kernel with a report in DOCS (bench.raw: 6.1; bench-<kernel>.raw),
# one table for each addressing plan measured, written again by every report
kernels_table() {
	local f k runs=() all
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
	echo "Written by \`bench/report.sh\` after every \`make bench\`, from each"
	echo "kernel's raw samples in docs/ ([bench.md](bench.md) for 6.1,"
	echo "bench-<kernel>.md for the others, which give each sample's boot and date)."
	echo "Each cell is the median pps of the module over the median of stock at"
	echo "that N, one vCPU under \`-icount shift=1\`; - where that N, cipher and"
	echo "plan did not run on that kernel."
	all=$(for f in "${runs[@]}"; do
		awk -v k="${f%%=*}" '$3 == "stock" || $3 == "module" {
				print k, $1, $2, $3, $5 }' "${f#*=}"
	done | sort -k1,1 -k2,2 -k3,3n -k4,4 -k5,5n)
	kernels_plan "$all" "null gcm" "Random plan" \
		"every SA to one peer, told apart by its reqid; pktgen sends to a random tunnel's inner /24"
	kernels_plan "$all" "null-hub gcm-hub" "Hub-and-spoke plan" \
		"each SA to its own spoke, at consecutive addresses, with reqids in the same order, as strongSwan numbers them"
	echo
	for f in "${runs[@]}"; do
		k=${f%%=*}
		md=${f#*=}
		md=${md%.raw}.md
		echo "- $k: $(sed -n 's/.*) on \([0-9-]*\)\.$/\1/p' "$md" 2>/dev/null | head -n1), $(sed -n 's/^- Guest: Debian.s own `\([^`]*\)`.*/\1/p' "$md" 2>/dev/null | head -n1)"
	done
}

# kernels_plan SAMPLES "CIPHER..." TITLE WHAT: the table of one plan (its
# ciphers as RAW names them), nothing when no kernel ran it
kernels_plan() {
	echo "$1" | awk -v cls="$2" -v title="$3" -v what="$4" '
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
			printf "\n## %s\n\n%s.\n\n| N |", title, toupper(substr(what, 1, 1)) substr(what, 2)
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

cat "$docs/$base.md"
