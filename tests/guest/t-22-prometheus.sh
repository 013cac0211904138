#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prometheus metrics as an operator gets them: traffic through the module
# (latency=1) in diff-lib.sh's namespaces a and b, an ESP transport SA each
# way; xfrm-nocache-stats --textfile into the directory of Debian's own
# node_exporter (/usr/bin/prometheus-node-exporter, textfile collector
# only, on 127.0.0.1), scraped over HTTP.  For a and b the scrape must hold
# what /proc/net/xfrm_nocache and /proc/net/xfrm_nocache_latency say:
# Lookups, the outcomes, BundlesCreated, Errors, each bucket cumulated,
# +Inf and _count the histogram's total, _sum NaN; the outcomes must add up
# to Lookups.  Labels: "init", "a", "b" (b also has a process: counted
# once), "inode:N" for a namespace only a process is in (unshare).
# promtool check metrics prints nothing on the file or the scrape.  With
# latency switched off the next write has no histogram (the module freed
# it), and once the module is unloaded no samples at all.  The binaries
# are the host's (scripts/deps.sh installs them): skipped only if one is
# missing.  About 15 s under TCG.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"
NE=/usr/bin/prometheus-node-exporter
STATS=$XNC_TOP/scripts/xfrm-nocache-stats
NORM=$XNC_TOP/tests/tools/prom-samples.awk
M=xfrm_nocache
H=${M}_lookup_duration_seconds
out=${XNC_OUT:-/tmp}
for b in "$NE" promtool curl nsenter unshare ss; do
	command -v "$b" >/dev/null || skip "no $b here (scripts/deps.sh installs it)"
done
[ -x "$XSEND" ] || fail "xsend missing (make tools)"

dir=$(mktemp -d /tmp/xnc-t22.XXXXXX)
nepid='' up='' bp=''
cleanup() {
	local p
	for p in $nepid $up $bp; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	ip netns del a 2>/dev/null
	ip netns del b 2>/dev/null
	rm -rf "$dir"
	"$XNC_TOP/tests/guest/lib.sh" unload >/dev/null 2>&1
}
at_exit cleanup

xnc_load latency=1 || fail "load failed"
pair
setup=$(sa "a b" 10.0.0.1 10.0.0.2 0x100 transport
	sa "a b" 10.0.0.2 10.0.0.1 0x200 transport
	pol a src 10.0.0.1 dst 10.0.0.2 dir out tmpl proto esp mode transport
	pol b src 10.0.0.2 dst 10.0.0.1 dir out tmpl proto esp mode transport)
[ -z "$setup" ] || fail "$setup"
expect_eq "a -> b" "$(udp a 10.0.0.2)" "sent=3 received=3"
expect_eq "b -> a" "$(RXNS=a udp b 10.0.0.1)" "sent=3 received=3"

# a namespace with a process and no name, and a process in b
ino() { stat -L -c %i "$1" 2>/dev/null; }
init_ino=$(ino /proc/1/ns/net)
b_ino=$(ino /run/netns/b)
unshare --net sleep 600 &
up=$!
ip netns exec b sleep 600 &
bp=$!
in_own_ns() { [ "$(ino /proc/$up/ns/net)" != "$init_ino" ]; }
in_b() { [ "$(ino /proc/$bp/ns/net)" = "$b_ino" ]; }
wait_for 10 in_own_ns || fail "unshare --net: no namespace of its own"
wait_for 10 in_b || fail "ip netns exec b: not in b"
u_ino=$(ino /proc/$up/ns/net)

port=''
for p in $(seq 19100 19199); do
	[ -n "$(ss -Hltn "sport = :$p")" ] || { port=$p; break; }
done
[ -n "$port" ] || fail "no free port in 19100-19199"
$NE --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$dir" \
	>"$out/t22.node-exporter.log" 2>&1 &
nepid=$!
scrape() { curl -sf --max-time 10 "http://127.0.0.1:$port/metrics" >"$out/t22.scrape"; }
wait_for $((20 * XNC_SLOW)) scrape ||
	fail "node_exporter on port $port did not answer: $(tail -n 2 "$out/t22.node-exporter.log")"

# Write the file while a's and b's files stand still (a namespace's own
# packets, IPv6 link-local ones say, are lookups too, at any moment)
snap() { ip netns exec "$1" cat /proc/net/xfrm_nocache /proc/net/xfrm_nocache_latency; }
for try in 1 2 3 4 5; do
	pa=$(snap a) pb=$(snap b) pu=$(nsenter --net=/proc/$up/ns/net cat /proc/net/xfrm_nocache)
	"$STATS" --textfile "$dir" || fail "xfrm-nocache-stats --textfile failed"
	[ "$pa$pb" != "$(snap a)$(snap b)" ] || break
	log "a or b counted a lookup while the file was written (try $try): again"
	pa=
done
[ -n "$pa" ] || fail "a's and b's counters never stood still while the file was written"
lint=$(promtool check metrics <"$dir/xfrm_nocache.prom" 2>&1) || fail "promtool check metrics (file): $lint"
[ -z "$lint" ] || fail "promtool check metrics (file): $lint"

scrape || fail "no scrape from node_exporter"
grep -qx 'node_textfile_scrape_error 0' "$out/t22.scrape" ||
	fail "node_exporter could not read the file: $(grep textfile_scrape_error "$out/t22.scrape")"
lint=$(promtool check metrics <"$out/t22.scrape" 2>&1) || fail "promtool check metrics (scrape): $lint"
[ -z "$lint" ] || fail "promtool check metrics (scrape): $lint"
samples=$out/t22.samples
awk -f "$NORM" "$out/t22.scrape" | sort >"$samples"

# scraped NAME{LABELS}: its value ("" if none)
scraped() { awk -v k="$1" 'substr($0, 1, length(k) + 1) == k " " { print $NF }' "$samples"; }
# procv TEXT NAME: a counter of a snapshot
procv() { awk -v n="$2" 'NF == 2 && $1 == n { print $2 }' <<<"$1"; }

for n in a b; do
	if [ $n = a ]; then s=$pa; else s=$pb; fi
	expect_eq "$n: Lookups" "$(scraped "${M}_lookups_total{netns=\"$n\"}")" "$(procv "$s" Lookups)"
	expect_eq "$n: Transformed" \
		"$(scraped "${M}_lookup_outcomes_total{netns=\"$n\",outcome=\"transformed\"}")" \
		"$(procv "$s" Transformed)"
	expect_eq "$n: NoPolicy" \
		"$(scraped "${M}_lookup_outcomes_total{netns=\"$n\",outcome=\"no_policy\"}")" \
		"$(procv "$s" NoPolicy)"
	expect_eq "$n: BundlesCreated" "$(scraped "${M}_bundles_created_total{netns=\"$n\"}")" \
		"$(procv "$s" BundlesCreated)"
	expect_eq "$n: Errors" "$(scraped "${M}_errors_total{netns=\"$n\"}")" "$(procv "$s" Errors)"
	expect_ge "$n: Transformed" "$(procv "$s" Transformed)" 3
	read -r nout sum <<<"$(awk -v k="${M}_lookup_outcomes_total{netns=\"$n\"," \
		'index($0, k) == 1 { s += $NF; c++ } END { print c + 0, s + 0 }' "$samples")"
	expect_ge "$n: outcomes" "$nout" 10
	expect_eq "$n: the outcomes' sum" "$sum" "$(procv "$s" Lookups)"
	# the histogram: each nonempty bucket's bound, cumulated; +Inf, _count
	want=$(awk -v h="$H" -v n="$n" 'NF == 3 && $1 ~ /^[0-9]+$/ {
			t += $3
			if ($1 < 2147483648)
				printf "%s_bucket{netns=\"%s\",le=\"%s\"} %.0f\n", h, n, $2, t
		}
		END { printf "%s_bucket{netns=\"%s\",le=\"+Inf\"} %.0f\n", h, n, t
		      printf "%s_count{netns=\"%s\"} %.0f\n", h, n, t
		      printf "%s_sum{netns=\"%s\"} NaN\n", h, n }' <<<"$s")
	while read -r k v; do
		expect_eq "$n: $k" "$(scraped "$k")" "$v"
	done <<<"$want"
	expect_ge "$n: lookups timed" "$(scraped "${H}_count{netns=\"$n\"}")" 3
	nb=$(grep -c "^${H}_bucket{netns=\"$n\"," "$samples")
	expect_eq "$n: buckets" "$nb" 32
done
expect_eq "latency_enabled" "$(scraped "${M}_latency_enabled")" 1

# the namespaces, each once; others may be there (a process another test
# left in a namespace of its own), but only as inode:N
labels=$(awk -F'"' -v k="${M}_lookups_total{" 'index($0, k) == 1 { print $2 }' "$samples")
for l in init a b "inode:$u_ino"; do
	expect_eq "samples of ${M}_lookups_total labelled netns=\"$l\"" "$(grep -cx "$l" <<<"$labels")" 1
done
grep -qx "inode:$b_ino" <<<"$labels" && fail "b is there twice: as b and as inode:$b_ino"
others=$(grep -vxE "init|a|b|inode:$u_ino" <<<"$labels" || true)
[ -z "$others" ] || log "other namespaces: $(echo "$others" | paste -sd' ')"
grep -vq '^inode:[0-9]*$' <<<"${others:-inode:0}" && fail "unexpected labels: $others"
expect_eq "inode:$u_ino: Lookups" "$(scraped "${M}_lookups_total{netns=\"inode:$u_ino\"}")" \
	"$(procv "$pu" Lookups)"

# latency off: the module freed the histograms, none is written
echo 0 >/sys/module/xfrm_nocache/parameters/latency || fail "latency=0 refused"
"$STATS" --textfile "$dir" || fail "xfrm-nocache-stats --textfile failed (latency off)"
scrape || fail "no scrape from node_exporter (latency off)"
if grep "^$H" "$out/t22.scrape"; then
	fail "a histogram served while latency is off"
fi
grep -qx "${M}_latency_enabled 0" "$out/t22.scrape" || fail "latency off, but the gauge says otherwise"
grep -q "^${M}_lookups_total{netns=\"a\"} " "$out/t22.scrape" || fail "no counters with latency off"

# unloaded: the next write leaves no samples (none linger), exit 0
xnc_unload || fail "unload failed"
"$STATS" --textfile "$dir" 2>"$out/t22.err" || fail "--textfile without the module failed"
grep -q 'module not loaded' "$out/t22.err" || fail "no message without the module: $(cat "$out/t22.err")"
scrape || fail "no scrape from node_exporter after the unload"
if grep "^$M" "$out/t22.scrape"; then
	fail "samples served after the unload"
fi
echo "node_exporter on :$port served a ($(procv "$pa" Lookups) lookups)," \
	"b ($(procv "$pb" Lookups)), init and inode:$u_ino as /proc says; promtool silent"
