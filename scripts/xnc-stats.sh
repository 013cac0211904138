#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Show xfrm_nocache's counters (and latency histogram) of one namespace in
# a table; with an interval, sample twice and add per-second rates.
#
#   scripts/xnc-stats.sh [-n NETNS] [INTERVAL_SECONDS]
#   make stats [NS=name] [INTERVAL=1]

set -euo pipefail
ns=
while getopts n: o; do
	case $o in
	n) ns=$OPTARG ;;
	*) echo "usage: $0 [-n NETNS] [INTERVAL]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
interval=${1:-}
if [ -n "$interval" ] && ! [[ $interval =~ ^[0-9]+([.][0-9]+)?$ ]]; then
	echo "xnc-stats: interval must be a number of seconds, not '$interval'" >&2
	exit 2
fi

rd() {
	if [ -n "$ns" ]; then ip netns exec "$ns" cat "/proc/net/$1"; else cat "/proc/net/$1"; fi
}
[ -n "$(rd xfrm_nocache 2>/dev/null)" ] ||
	{ echo "xnc-stats: no /proc/net/xfrm_nocache (module not loaded?)" >&2; exit 1; }

a=$(rd xfrm_nocache)
if [ -n "$interval" ]; then
	sleep "$interval"
	b=$(rd xfrm_nocache)
	paste <(echo "$a") <(echo "$b") | awk -v t="$interval" '
		BEGIN { printf "%-20s %14s %12s\n", "counter", "value", "per second" }
		{ printf "%-20s %14d %12.1f\n", $1, $4, ($4 - $2) / t }'
else
	echo "$a" | awk 'BEGIN { printf "%-20s %14s\n", "counter", "value" }
		{ printf "%-20s %14d\n", $1, $2 }'
fi
echo
rd xfrm_nocache_latency | awk '
	NR == 1 { print "resolution latency histogram (" $2 "; enable: echo 1 > /sys/module/xfrm_nocache/parameters/latency)"; next }
	NR == 2 { next }
	{ rows[NR] = $0; tot += $3; if ($3 > max) max = $3 }
	END {
		if (!tot) { print "  (empty)"; exit }
		for (i = 3; i <= NR; i++) {
			split(rows[i], f, "\t")
			bar = ""; for (j = 0; j < int(40 * f[3] / max); j++) bar = bar "#"
			printf "  %9d-%-9d ns %10d %5.1f%% %s\n", f[1], f[2], f[3], 100 * f[3] / tot, bar
		}
	}'
