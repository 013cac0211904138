#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lookup latency under load, inside the VM (bench/latency.sh boots
# it as make bench does: one vCPU, -icount shift=1, so guest nanoseconds
# count instructions and one kernel's figures compare with another's).
#
# The topology of bench/guest/bench.sh, N tunnels (XNC_LAT_N, default 32),
# the module loaded with latency=1.  pktgen forwards XNC_LAT_COUNT packets
# (default 40000) over all N tunnels per sample, in two scenarios,
# interleaved for XNC_LAT_ROUNDS rounds (default 3):
#   quiet   the traffic alone
#   churn   the traffic while the gateway's control plane churns as in the
#           stress suite's policy and SA scenarios: 200 more policies
#           (never matching the traffic) added and deleted in batches, the
#           policy hash thresholds changed (a rebuild of the hash), 200
#           more SAs added and deleted, an "ip xfrm monitor" and a dump
#           loop reading it all
# The histogram (/proc/net/xfrm_nocache_latency of the gateway) is read
# before and after each sample; the difference is the sample's.
#
# Writes $XNC_OUT/latency.raw, one line per non-empty bucket of a sample:
#   scenario round from_ns count
# and $XNC_OUT/latency.samples, one line per sample:
#   scenario round forwarded lookups churn_rounds backlog_drops
# (backlog_drops: packets a full CPU backlog dropped, sink's included: a
# packet looked up and not forwarded, the lookup not to blame)

set -u
# shellcheck disable=SC2034 # read by bench.sh, sourced next
XNC_BENCH_LIB=1
# shellcheck source=SCRIPTDIR/bench.sh
. "$(dirname "$0")/bench.sh"

N=${XNC_LAT_N:-32}
COUNT=${XNC_LAT_COUNT:-40000}
ROUNDS=${XNC_LAT_ROUNDS:-3}
RAW=$XNC_OUT/latency.raw
SAMPLES=$XNC_OUT/latency.samples
T=/tmp/latency

# the gateway's histogram: "from_ns count" per non-empty bucket
hist() {
	# shellcheck disable=SC2016 # awk's own fields
	ip netns exec bgw awk 'NR > 2 { print $1, $3 }' /proc/net/xfrm_nocache_latency
}

# the churn's batches: 200 policies and 200 SAs that no packet uses
churn_files() {
	mkdir -p $T
	awk 'BEGIN {
		for (x = 0; x < 200; x++) {
			d = sprintf("172.16.%d.0/24", x)
			printf "xfrm policy add src 10.0.0.0/24 dst %s dir out tmpl src 192.168.1.1 dst 192.168.1.2 proto esp reqid %d mode tunnel\n", d, 5000 + x
		}
	}' >$T/pol-add
	sed 's/^xfrm policy add \(src [^ ]* dst [^ ]* dir out\).*/xfrm policy delete \1/' $T/pol-add >$T/pol-del
	awk 'BEGIN {
		for (x = 0; x < 200; x++)
			printf "xfrm state add src 192.168.1.1 dst 192.168.1.2 proto esp spi %d reqid %d mode tunnel enc cipher_null \"\"\n", 1048576 + x, 5000 + x
	}' >$T/sa-add
	sed 's/^xfrm state add \(src [^ ]* dst [^ ]* proto esp spi [0-9]*\).*/xfrm state delete \1/' $T/sa-add >$T/sa-del
}

# churn: until $T/stop exists; counts its rounds in $T/rounds
churn() {
	local r=0 th
	while [ ! -e $T/stop ]; do
		r=$((r + 1))
		ip -n bgw -batch $T/pol-add || die "churn: adding policies failed"
		ip -n bgw -batch $T/sa-add || die "churn: adding SAs failed"
		th=(24 24)
		[ $((r % 2)) = 0 ] || th=(16 16)
		ip -n bgw xfrm policy set hthresh4 "${th[@]}" || die "churn: hthresh4 ${th[*]} refused"
		ip -n bgw -batch $T/pol-del || die "churn: deleting policies failed"
		ip -n bgw -batch $T/sa-del || die "churn: deleting SAs failed"
		echo $r >$T/rounds
	done
}

# sample SCENARIO ROUND
sample() {
	local sc=$1 r=$2 rx0 rx1 l0 l1 d0 d1 cpid='' mpid='' dpid=''
	declare -A h0=() h1=()
	local from c
	while read -r from c; do h0[$from]=$c; done < <(hist)
	rm -f $T/stop $T/rounds
	if [ "$sc" = churn ]; then
		ip -n bgw xfrm monitor >/dev/null 2>&1 &
		mpid=$!
		(while [ ! -e $T/stop ]; do
			ip -n bgw -s xfrm policy list >/dev/null
			ip -n bgw -s xfrm state list >/dev/null
		done) &
		dpid=$!
		churn &
		cpid=$!
	fi
	rx0=$(rx) l0=$(lookups) d0=$(backlog_drops)
	pg s0 "count $COUNT"
	pg pgctrl start
	rx1=$(rx) l1=$(lookups) d1=$(backlog_drops)
	touch $T/stop
	if [ -n "$cpid" ]; then
		wait $cpid || die "$sc round $r: the churn failed"
		wait $dpid
		kill $mpid
		wait $mpid 2>/dev/null
	fi
	while read -r from c; do h1[$from]=$c; done < <(hist)
	for from in "${!h1[@]}"; do
		c=$((h1[$from] - ${h0[$from]:-0}))
		[ $c -eq 0 ] || echo "$sc $r $from $c" >>"$RAW"
	done
	echo "$sc $r $((rx1 - rx0)) $((l1 - l0)) $(cat $T/rounds 2>/dev/null || echo 0) $((d1 - d0))" >>"$SAMPLES"
	[ $((l1 - l0)) -ge $((rx1 - rx0 - 2)) ] ||
		die "$sc round $r: $((l1 - l0)) lookups for $((rx1 - rx0)) packets"
	log "$sc round $r: $((rx1 - rx0)) forwarded, $((l1 - l0)) lookups, churn rounds $(cat $T/rounds 2>/dev/null || echo 0), backlog drops $((d1 - d0))"
}

: >"$RAW"
: >"$SAMPLES"
setup_net
tunnels null "$N"
dst_range "$N"
churn_files
variant_on module-lat
log "setup done: $N tunnels, $COUNT packets per sample, $ROUNDS rounds; $(uname -r)"
# warm up
pg s0 "count 2000"
pg pgctrl start
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then
		sample quiet "$r"
		sample churn "$r"
	else
		sample churn "$r"
		sample quiet "$r"
	fi
done
variant_off module-lat
tunnels null 0
log "done"
