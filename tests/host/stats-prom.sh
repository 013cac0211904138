#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xfrm-nocache-stats without the module: its Prometheus exposition of /proc
# files written as src/stats.c writes them (the XNC_STATS_PROC_DIR test
# hook: the initial namespace and two named ones, one whose name needs
# escaping, one with a counter the command does not know).  Every counter
# of src/stats.c must have its metric, the outcomes (src/xnc_trace.h's
# names) in xfrm_nocache_lookup_outcomes_total, the others as
# xfrm_nocache_<snake case>_total, so a counter added to the module and
# not to the command fails here.  promtool check metrics must print
# nothing; the values must be the files' (a u64 past 2^53 copied as text,
# cumulative buckets, the clamped last bucket only in +Inf, _sum NaN; no
# histogram while latency is off); --textfile writes the same file
# atomically, readable by node_exporter's user; with no namespace there
# are no samples.  If prometheus-node-exporter is installed, its textfile
# collector serves the file and the scrape holds the same samples.  The
# table mode and usage errors too.  Skipped without promtool
# (scripts/deps.sh installs the prometheus package).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cmd=$top/scripts/xfrm-nocache-stats
norm=$top/tests/tools/prom-samples.awk
fail() { echo "$*"; exit 1; }
command -v promtool >/dev/null || { echo "no promtool (package prometheus)"; exit 4; }
tmp=$(mktemp -d /tmp/xnc-stats-prom.XXXXXX)
nepid=
cleanup() {
	[ -z "$nepid" ] || kill "$nepid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# counters NAME=VALUE...: /proc/net/xfrm_nocache as xnc_stats_show() prints it
counters() {
	local c
	for c in "$@"; do
		printf '%-24s\t%s\n' "${c%%=*}" "${c#*=}"
	done
}
# every counter of src/stats.c, in its order; the outcomes, as the
# xnc_lookup trace event names them (src/xnc_trace.h)
all=$(sed -n 's/^\t\[XNC_[A-Z0-9_]*\]\t*= "\([A-Za-z0-9]*\)",$/\1/p' "$top/src/stats.c")
outcomes=$(sed -n '/__print_symbolic(__entry->outcome/,/)/s/.*{ *[0-9]*, *"\([A-Za-z0-9]*\)" *}.*/\1/p' \
	"$top/src/xnc_trace.h")
[ "$(grep -c . <<<"$all")" -ge 20 ] || fail "src/stats.c: $(grep -c . <<<"$all") counter names read"
[ "$(grep -c . <<<"$outcomes")" -ge 10 ] || fail "src/xnc_trace.h: $(grep -c . <<<"$outcomes") outcomes read"
for o in $outcomes; do
	grep -qx "$o" <<<"$all" || fail "outcome $o of src/xnc_trace.h is no counter of src/stats.c"
done
# snake NAME: xfrm-nocache-stats's metric name for it (LookupsIPv4:
# lookups_ipv4, SAsFlushed: sas_flushed)
# shellcheck disable=SC2001 # groups: no ${var//...} for it
snake() { sed 's/\([a-z0-9]\)\([A-Z]\)/\1_\2/g' <<<"$1" | tr '[:upper:]' '[:lower:]'; }
# zero NAME=VALUE...: every counter 0 but those given
zero() {
	local a c v
	for c in $all; do
		v=0
		for a in "$@"; do [ "${a%%=*}" != "$c" ] || v=${a#*=}; done
		echo "$c=$v"
	done
}
p=$tmp/proc
mkdir -p "$p/gw" "$p/we\"ird\\ns"
# shellcheck disable=SC2046 # a word per counter
counters $(zero Lookups=59 LookupsIPv4=58 LookupsIPv6=1 NoPolicy=8 Transformed=51 \
	BundlesCreated=51) >"$p/xfrm_nocache"
# xnc_latency_show(): on, nonzero buckets; the last one is the module's clamp
{
	printf 'latency on\nfrom_ns\tto_ns\tcount\n'
	printf '%s\t%s\t%s\n' 1 1 3  512 1023 1  32768 65535 44  131072 262143 5 \
		2147483648 4294967295 2
} >"$p/xfrm_nocache_latency"
# shellcheck disable=SC2046
counters $(zero Lookups=18446744073709551615 Errors=7 Blocked=1 SAsFlushed=2) \
	ExtraEvents=5 >"$p/gw/xfrm_nocache"
printf 'latency on\nfrom_ns\tto_ns\tcount\n' >"$p/gw/xfrm_nocache_latency"
# shellcheck disable=SC2046
counters $(zero Queued=4) >"$p/we\"ird\\ns/xfrm_nocache"
printf 'latency on\nfrom_ns\tto_ns\tcount\n%s\t%s\t%s\n' 1024 2047 9 \
	>"$p/we\"ird\\ns/xfrm_nocache_latency"

out=$tmp/out.prom
XNC_STATS_PROC_DIR=$p "$cmd" --prometheus >"$out" || fail "--prometheus failed"
lint=$(promtool check metrics <"$out" 2>&1) || fail "promtool check metrics failed: $lint"
[ -z "$lint" ] || fail "promtool check metrics: $lint"

awk -f "$norm" "$out" | sort >"$tmp/samples"
# has LINE: that sample, normalized
has() { grep -qxF -- "$1" "$tmp/samples" || { cat "$out"; fail "no sample '$1' (output above)"; }; }
m=xfrm_nocache
has "${m}_lookups_total{netns=\"init\"} 59"
has "${m}_lookups_ipv4_total{netns=\"init\"} 58"
has "${m}_lookups_ipv6_total{netns=\"init\"} 1"
has "${m}_bundles_created_total{netns=\"init\"} 51"
has "${m}_lookup_outcomes_total{netns=\"init\",outcome=\"transformed\"} 51"
has "${m}_lookup_outcomes_total{netns=\"init\",outcome=\"no_policy\"} 8"
has "${m}_lookup_outcomes_total{netns=\"init\",outcome=\"icmp_no_policy\"} 0"
has "${m}_sub_policy_searches_total{netns=\"init\"} 0"
has "${m}_errors_total{netns=\"gw\"} 7"
has "${m}_sas_flushed_total{netns=\"gw\"} 2"
has "${m}_extra_events_total{netns=\"gw\"} 5"
has "${m}_lookup_outcomes_total{netns=\"we\\\"ird\\\\ns\",outcome=\"queued\"} 4"
grep -qx "${m}_lookups_total{netns=\"gw\"} 18446744073709551615" "$out" ||
	fail "gw's Lookups not copied as text: $(grep "${m}_lookups_total{netns=\"gw\"}" "$out")"
# every counter has its metric, with one sample per namespace (and the
# unknown one in gw only)
nout=0
for c in $all; do
	if grep -qx "$c" <<<"$outcomes"; then
		n=$(grep -c "^${m}_lookup_outcomes_total{.*,outcome=\"$(snake "$c")\"} " "$out")
		nout=$((nout + 1))
	else
		n=$(grep -c "^${m}_$(snake "$c")_total{" "$out")
	fi
	[ "$n" = 3 ] || fail "$c: $n samples of its metric, not 3 (one per namespace)"
done
n=$(grep -c "^${m}_lookup_outcomes_total{netns=\"init\"," "$out")
[ "$n" = $nout ] || fail "$n outcomes in init's samples, src/xnc_trace.h has $nout"
[ "$(grep -c '^# TYPE xfrm_nocache_lookup_outcomes_total counter$' "$out")" = 1 ] ||
	fail "the outcomes are not one family"
nfam=$(($(grep -c . <<<"$all") - nout + 1 + 1 + 2))
[ "$(grep -c '^# TYPE' "$out")" = $nfam ] ||
	fail "$(grep -c '^# TYPE' "$out") families, not $nfam (counters, outcomes, the unknown one, histogram, gauge)"

# the histogram: cumulative, le at 2^(k+1)-1 ns, the clamped bucket in +Inf only
h=${m}_lookup_duration_seconds
has "${h}_bucket{netns=\"init\",le=\"1\"} 3"
has "${h}_bucket{netns=\"init\",le=\"511\"} 3"
has "${h}_bucket{netns=\"init\",le=\"1023\"} 4"
has "${h}_bucket{netns=\"init\",le=\"65535\"} 48"
has "${h}_bucket{netns=\"init\",le=\"262143\"} 53"
has "${h}_bucket{netns=\"init\",le=\"2147483647\"} 53"
has "${h}_bucket{netns=\"init\",le=\"+Inf\"} 55"
has "${h}_count{netns=\"init\"} 55"
has "${h}_sum{netns=\"init\"} NaN"
has "${h}_bucket{netns=\"gw\",le=\"+Inf\"} 0"
has "${h}_bucket{netns=\"we\\\"ird\\\\ns\",le=\"1023\"} 0"
has "${h}_bucket{netns=\"we\\\"ird\\\\ns\",le=\"2047\"} 9"
grep -qx "${h}_bucket{netns=\"init\",le=\"0.000001023\"} 4" "$out" ||
	fail "le not written as 0.000001023 s"
n=$(grep -c "^${h}_bucket{netns=\"gw\"," "$out")
[ "$n" = 32 ] || fail "gw: $n buckets, not 31 and +Inf"
has "${m}_latency_enabled 1"

# latency off: the module has no histogram; the gauge says so
off=$tmp/off
mkdir "$off"
cp "$p/xfrm_nocache" "$off/"
printf 'latency off\nfrom_ns\tto_ns\tcount\n' >"$off/xfrm_nocache_latency"
o=$(XNC_STATS_PROC_DIR=$off "$cmd" -p) || fail "-p with latency off failed"
lint=$(promtool check metrics <<<"$o" 2>&1) || fail "promtool (latency off): $lint"
[ -z "$lint" ] || fail "promtool (latency off): $lint"
if grep "$m"_lookup_duration <<<"$o"; then
	fail "a histogram while latency is off"
fi
grep -qx "${m}_latency_enabled 0" <<<"$o" || fail "latency off: $(grep latency_enabled <<<"$o")"
grep -qx "${m}_lookups_total{netns=\"init\"} 59" <<<"$o" || fail "latency off: no counters"

# --textfile: the same, atomically (no temporary file left), mode 0644
d=$tmp/textfile
mkdir "$d"
XNC_STATS_PROC_DIR=$p "$cmd" --textfile "$d" || fail "--textfile failed"
cmp -s "$out" "$d/xfrm_nocache.prom" || fail "--textfile wrote other than --prometheus"
[ "$(stat -c %a "$d/xfrm_nocache.prom")" = 644 ] ||
	fail "xfrm_nocache.prom is mode $(stat -c %a "$d/xfrm_nocache.prom"), not 644"
left=$(ls -A "$d")
[ "$left" = xfrm_nocache.prom ] || fail "--textfile left: $left"
"$cmd" --textfile "$tmp/none" 2>/dev/null && fail "--textfile into a missing directory succeeded"

# no module: no samples, a message, exit 0; promtool still content
mkdir "$tmp/empty"
e=$(XNC_STATS_PROC_DIR=$tmp/empty "$cmd" -p 2>"$tmp/err") || fail "-p without the module failed"
grep -q . <<<"$(grep -v '^#' <<<"$e")" && fail "samples without the module: $e"
grep -q 'module not loaded' "$tmp/err" || fail "no message without the module"
lint=$(promtool check metrics <<<"$e" 2>&1) || fail "promtool on the empty exposition: $lint"

# usage: 2
for a in "-p 1" "-n gw -p" "--textfile" "-x" "1 2"; do
	rc=0
	# shellcheck disable=SC2086 # words
	XNC_STATS_PROC_DIR=$p "$cmd" $a >/dev/null 2>&1 || rc=$?
	[ $rc = 2 ] || fail "'$a': exit $rc, not 2"
done

# the table, as before: the counters, the histogram's rows; -n NS
t=$(XNC_STATS_PROC_DIR=$p "$cmd")
grep -qE '^Lookups +59$' <<<"$t" || fail "table: $t"
grep -qE '^ +512-1023 +ns +1 +1\.8% *#*$' <<<"$t" || fail "table's histogram: $t"
t=$(XNC_STATS_PROC_DIR=$p "$cmd" -n gw 0.1)
grep -qE '^Lookups +18446744073709551615 +0\.0$' <<<"$t" || fail "table of gw, 0.1 s: $t"

# node_exporter's textfile collector: what it serves is what was written
ne=/usr/bin/prometheus-node-exporter
if [ ! -x $ne ] || ! command -v curl >/dev/null; then
	echo "stats-prom ok: $(grep -c '^xfrm_nocache_' "$out") samples, promtool silent;" \
		"no node_exporter or curl here: not served"
	exit 0
fi
port=
for p2 in $(seq 19100 19199); do
	[ -n "$(ss -Hltn "sport = :$p2")" ] || { port=$p2; break; }
done
[ -n "$port" ] || fail "no free port in 19100-19199"
$ne --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$d" >"$tmp/ne.log" 2>&1 &
nepid=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/scrape" 2>/dev/null && break
	kill -0 $nepid 2>/dev/null || fail "node_exporter died: $(tail -n 3 "$tmp/ne.log")"
	sleep 0.1
done
[ -s "$tmp/scrape" ] || fail "no answer from node_exporter on port $port"
grep -qx 'node_textfile_scrape_error 0' "$tmp/scrape" ||
	fail "node_exporter could not read the file: $(grep textfile "$tmp/scrape")"
lint=$(promtool check metrics <"$tmp/scrape" 2>&1) || fail "promtool on the scrape: $lint"
[ -z "$lint" ] || fail "promtool on the scrape: $lint"
# (the u64 past 2^53 is a float64 in Prometheus: both sides round it alike)
if ! diff <(awk -f "$norm" "$tmp/scrape" | sort) "$tmp/samples" >"$tmp/diff"; then
	cat "$tmp/diff"
	fail "node_exporter serves other samples than the file's"
fi
echo "stats-prom ok: $(grep -c . "$tmp/samples") samples, promtool silent on the file" \
	"and on node_exporter's scrape of it, the same samples"
