#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-latency: the module's lookup latency histogram under forwarded
# traffic, alone and with the control plane churning (bench/guest/latency.sh),
# in one boot of Debian's kernel with one vCPU and -icount shift=1 (guest
# nanoseconds count instructions: kernels compare, machines do not).
# KERNEL (XNC_KLINE: 6.1, 6.12, 6.1-rt or 6.12-rt) picks the kernel; each
# run replaces that kernel's rows in docs/latency.tsv, and docs/latency.md
# is written again from all the rows there, so that the real-time kernels
# stand next to the others.  XNC_LAT_N, XNC_LAT_COUNT and XNC_LAT_ROUNDS
# pass through; --report only writes docs/latency.md again from the TSV;
# --section prints the p99/maximum section that the benchmark pages
# (docs/bench*.md, bench/report.sh) carry, each run replacing it.

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
docs=${XNC_BENCH_DOCS:-$top/docs}
tsv=$docs/latency.tsv
mkdir -p "$docs"

# pct RAW SCENARIO Q: the bucket ("from_ns") holding quantile Q (0..1) of
# the scenario's lookups, all rounds together; Q=1: the highest non-empty
pct() {
	awk -v sc="$2" -v q="$3" '
		$1 == sc { c[$3] += $4; n += $4 }
		END {
			if (!n) { print "-"; exit }
			k = 0
			for (f in c) b[++k] = f + 0
			# ascending
			for (i = 2; i <= k; i++)
				for (j = i; j > 1 && b[j - 1] > b[j]; j--) {
					t = b[j]; b[j] = b[j - 1]; b[j - 1] = t
				}
			s = 0
			for (i = 1; i <= k; i++) {
				s += c[b[i]]
				if (s >= q * n) { print b[i]; exit }
			}
			print b[k]
		}' "$1"
}

# a bucket as its range in ns
range() { [ "$1" = - ] && echo - || echo "$1–$((2 * $1 - 1))"; }

# the section of the benchmark pages (docs/bench*.md): p99 and the
# maximum per kernel, between markers, so that a run here replaces it there
# and bench/report.sh writes the same
section() {
	echo "<!-- latency: bench/latency.sh --section -->"
	echo "## Lookup latency under load"
	echo
	echo "The module's lookup latency (\`latency=1\`) with 32 tunnels, forwarded"
	echo "traffic alone (\`quiet\`) and with the control plane churning (\`churn\`),"
	echo "every kernel, from \`make bench-latency\`: log2 buckets in guest ns (one"
	echo "vCPU, \`-icount shift=1\`). Setup and p50, p99.9: [latency.md](latency.md)."
	echo
	echo "| kernel | scenario | lookups | p99 (ns) | max (ns) | run |"
	echo "|---|---|---:|---|---|---|"
	while IFS=$'\t' read -r k v sc ns lk fw cr p50 p99 p999 mx when; do
		echo "| $k | $sc | $lk | $(range "$p99") | $(range "$mx") | $when |"
	done <"$tsv"
	echo "<!-- /latency -->"
}

if [ "${1:-}" = --section ]; then
	[ -f "$tsv" ] || exit 0
	section
	exit 0
fi

if [ "${1:-}" != --report ]; then
	kname=$(scripts/kernel.sh name)
	kver=$(scripts/kernel.sh version)
	out=${XNC_OUT:-$top/tests/out/bench-latency-$(date +%Y%m%d-%H%M%S)}
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	if [ "$(scripts/kernel.sh root)" != / ] && [[ $out != "$top"/* ]]; then
		echo "bench/latency.sh: $out is outside $top, which the trixie root does not see (XNC_OUT)" >&2
		exit 1
	fi
	scripts/build.sh --line "$out/mod" >"$out/mod.build" 2>&1 ||
		{ cat "$out/mod.build" >&2; exit 1; }
	echo "bench-latency: $kver in the VM (one vCPU, -icount shift=1); progress in $out/latency.log"
	rc=0
	XNC_KO=$out/mod/xfrm_nocache.ko XNC_QUIET=${XNC_QUIET-1} \
		scripts/vm.sh --smp 1 --icount --mem 4096 --timeout "${XNC_BENCH_TIMEOUT:-3600}" \
		--out "$out" --log "$out/console.log" -- \
		bash -c "'$top/bench/guest/latency.sh' > '$out/latency.log' 2>&1" || rc=$?
	tail -n 3 "$out/latency.log" || true
	[ $rc -eq 0 ] || { echo "bench/latency.sh: the VM run failed ($rc); see $out/latency.log and $out/console.log" >&2; exit 1; }

	# this kernel's rows: kernel version scenario samples lookups
	# forwarded churn_rounds p50 p99 p99.9 max date
	when=$(date -u +%Y-%m-%d)
	{
		[ -f "$tsv" ] && awk -F'\t' -v k="$kname" '$1 != k' "$tsv"
		for sc in quiet churn; do
			read -r ns lk fw cr < <(awk -v sc=$sc '$1 == sc { n++; f += $3; l += $4; c += $5 }
				END { print n + 0, l + 0, f + 0, c + 0 }' "$out/latency.samples")
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kname" "$kver" "$sc" \
				"$ns" "$lk" "$fw" "$cr" \
				"$(pct "$out/latency.raw" $sc 0.5)" "$(pct "$out/latency.raw" $sc 0.99)" \
				"$(pct "$out/latency.raw" $sc 0.999)" "$(pct "$out/latency.raw" $sc 1)" "$when"
		done
	} | sort -t"$(printf '\t')" -k1,1 -k3,3r >"$tsv.tmp"
	mv "$tsv.tmp" "$tsv"
	cp "$out/latency.raw" "$docs/latency-$kname.raw"
fi

[ -f "$tsv" ] || { echo "bench/latency.sh: no $tsv yet (run make bench-latency)" >&2; exit 1; }
{
	echo "# Lookup latency under load"
	echo
	echo "Written by \`make bench-latency\` (bench/latency.sh,"
	echo "bench/guest/latency.sh), one row pair per kernel, each from its own run"
	echo "(\`make bench-latency KERNEL=...\` replaces its kernel's rows). One vCPU,"
	echo "\`-icount shift=1\`: guest nanoseconds count instructions, so the figures"
	echo "compare kernels, not machines (TCG runs far slower than hardware)."
	echo
	echo "The bench topology (docs/bench.md) with 32 tunnels, the module with"
	echo "\`latency=1\`; pktgen forwards 40,000 packets per sample over all"
	echo "tunnels, \`quiet\` alone, \`churn\` while the gateway adds and deletes"
	echo "200 policies and 200 SAs no packet uses, rebuilds its policy hash"
	echo "(\`hthresh4\`) and an \`ip xfrm monitor\` and a dump loop read it all,"
	echo "the load of the stress suite's policy and SA scenarios. Scenarios"
	echo "interleaved, the histogram's difference over each sample, rounds summed."
	echo "Each figure is the log2 bucket (ns) that holds that share of the"
	echo "lookups: the histogram of \`/proc/net/xfrm_nocache_latency\` has no finer"
	echo "grain. A lookup's time is wall time inside the VM: on a PREEMPT_RT"
	echo "kernel a lookup can be preempted (forwarding runs in a preemptible"
	echo "thread there), and that time counts."
	echo
	echo "| kernel | scenario | lookups | churn rounds | p50 (ns) | p99 (ns) | p99.9 (ns) | max (ns) | run |"
	echo "|---|---|---|---|---|---|---|---|---|"
	while IFS=$'\t' read -r k v sc ns lk fw cr p50 p99 p999 mx when; do
		echo "| $k ($v) | $sc | $lk | $cr | $(range "$p50") | $(range "$p99") | $(range "$p999") | $(range "$mx") | $when |"
	done <"$tsv"
	echo
	echo "Raw histograms: \`docs/latency-<kernel>.raw\` (scenario round from_ns"
	echo "count). Regenerate a kernel's rows: \`make bench-latency KERNEL=<kernel>\`"
	echo "(about 10 minutes); the page alone: \`bench/latency.sh --report\`."
} >"$docs/latency.md"
echo "bench-latency: $docs/latency.md"
# the benchmark pages' section: replaced where they have one, else put
# where bench/report.sh puts it (before the profile, or at the end)
sec=$(section)
for page in "$docs"/bench.md "$docs"/bench-[0-9]*.md; do
	[ -f "$page" ] || continue
	grep -q '^# Benchmark' "$page" || continue
	awk -v sec="$sec" '
		/^<!-- latency:/ { print sec; done = 1; skip = 1; next }
		skip && /^<!-- \/latency -->/ { skip = 0; next }
		skip { next }
		/^## Where a packet/ && !done { print sec; print ""; done = 1 }
		{ print }
		END { if (!done) { print ""; print sec } }' "$page" >"$page.tmp" &&
		mv "$page.tmp" "$page"
	echo "bench-latency: its section in $page"
done
