#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stress, policies (topology: stress-lib.sh; traffic through 32 tunnel SAs,
# monitor and dump readers in gw and sink throughout but 2.'s probing).
#  1. For XNC_STRESS_SECS: all of gw's policies flushed and re-added, and
#     the hash thresholds (ip xfrm policy set hthresh4/hthresh6) changed,
#     in turn; traffic must be back within 1 s of each.
#  2. 10,000 more policies (XNC_STRESS_MANY) with overlapping selectors
#     (dst /16 to /32 over the tunnels' subnets, src /16 to /32, UDP ports)
#     and priorities (0-999, ties included; the tunnels' own are 100, so
#     the traffic's lookups walk the thousand or so ahead of them), some
#     blocking, the others through 32 probe SAs (reqid 101-132), loaded
#     with ip -batch under traffic.
#     Differential: 50 probe flows, one datagram each, stock and then
#     patched; for each probe the probe SA that carried it at the sink (or
#     blocked, or none: one of the tunnels' own policies won), and the set
#     of the extra ones whose use time the probes moved, must be identical.
#  3. Back to the 32 policies; then the end checks of stress-lib.sh.
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/stress-lib.sh"

st_setup
st_readers_start gw sink
st_traffic_start

# --- 1. flush + re-add, hash thresholds ---------------------------------------
th=("24 16 64 48" "16 8 48 32" "0 0 0 0" "28 24 96 64" "32 32 128 128")
round=0 flushes=0 rehashes=0
st_deadline
while st_more $((round + 1)); do
	round=$((round + 1))
	if [ $((round % 2)) = 1 ]; then
		ip -n gw xfrm policy flush || fail "round $round: flush failed"
		ip -n gw -batch "$ST_TMP/gw-pol" || fail "round $round: re-adding the policies failed"
		flushes=$((flushes + 1))
		st_resume "policy flush + re-add (round $round)"
	else
		# shellcheck disable=SC2086 # th[]: the four thresholds, words
		set -- ${th[$((round / 2 % ${#th[@]}))]}
		ip -n gw xfrm policy set hthresh4 "$1" "$2" hthresh6 "$3" "$4" ||
			fail "round $round: hthresh $* refused"
		rehashes=$((rehashes + 1))
		st_resume "hthresh4 $1 $2 hthresh6 $3 $4 (round $round)"
	fi
done
st_log "churn: $round rounds in $ST_SECS s: $flushes flush + re-add of $N policies, $rehashes hash threshold changes"

# --- 2. XNC_STRESS_MANY overlapping policies, stock vs. patched ------------------
# Out policies are hashed exactly when src prefix >= 24 and dst >= 28 here
# (hthresh4 LOCAL REMOTE), so the probes meet both the hash table and the
# inexact tree.  Set while only the 32 are present: the rebuild is quick.
ip -n gw xfrm policy set hthresh4 24 28 hthresh6 64 64 || fail "hthresh refused"
for r in $(seq 101 $((100 + N))); do
	echo "xfrm state add src 192.168.100.1 dst 192.168.100.2 proto esp" \
		"spi $((0x2000 + r)) reqid $r mode tunnel $ST_ALG"
done >"$ST_TMP/probe-sa"
for n in gw sink; do
	ip -n $n -batch "$ST_TMP/probe-sa" || fail "cannot add the probe SAs in $n"
done

# Policies with explicit indices 8000001 + 8k (out: index % 8 == 1), far
# from the kernel's own numbering of the 32.  Unique selectors (an equal
# selector is the same policy whatever the priority).  Policies with a dst
# prefix of 26 or more give the probe flows (an address inside, the port):
# the first 40 of those ahead of the tunnels' policies, the first 10 after.
awk -v n="$ST_MANY" -v pol="$ST_TMP/extra-pol" -v probes="$ST_TMP/probes" '
function ip(a) { return int(a / 16777216) "." int(a / 65536) % 256 "." int(a / 256) % 256 "." a % 256 }
function net(a, p) { return int(a / 2 ^ (32 - p)) * 2 ^ (32 - p) }
BEGIN {
	srand(30)
	split("16 20 20 24 24 24 24 26 26 28 28 30 32 32", dps, " ")
	split("16 24 24 24 25 28 32", sps, " ")
	while (i < n) {
		x = 1 + int(rand() * 32); y = int(rand() * 256)
		dp = dps[1 + int(rand() * 14)]; sp = sps[1 + int(rand() * 7)]
		d = ((10 * 256 + 2) * 256 + x) * 256 + y
		s = ((10 * 256 + 255) * 256 + 0) * 256 + (rand() < 0.6 ? 1 : int(rand() * 256))
		port = 6000 + int(rand() * 10)
		sel = "src " ip(net(s, sp)) "/" sp " dst " ip(net(d, dp)) "/" dp " proto udp dport " port
		if (sel in seen)
			continue
		seen[sel] = 1
		act = rand() < 0.08 ? "action block" : "tmpl src 192.168.100.1 dst 192.168.100.2 proto esp reqid " (101 + int(rand() * 32)) " mode tunnel"
		prio = int(rand() * 1000)
		print "xfrm policy add " sel " dir out priority " prio " index " (8000001 + 8 * i) " " act > pol
		if (dp >= 26 && (prio < 100 ? nlow++ < 40 : nhigh++ < 10))
			print ip(d), port > probes
		i++
	}
}'
t0=$(st_ms)
ip -n gw -batch "$ST_TMP/extra-pol" || fail "loading the $ST_MANY policies failed"
st_log "$ST_MANY policies loaded with ip -batch in $(($(st_ms) - t0)) ms under traffic; gw: $(st_counts gw)"
st_resume "$ST_MANY policies loaded"

# probe SAs' packet counts at the sink, "SPI packets"
probe_sas() { st_sa_counts sink | awk '$1 >= "0x00002000" && $1 < "0x00003000"'; }
# policies among the extra ones with their use time ("-": never used), as
# "INDEX DATE_TIME", sorted for join
extra_use() {
	ip -n gw -s xfrm policy | awk '
		/ index / { for (i = 1; i <= NF; i++) if ($i == "index") idx = $(i + 1) }
		/^\t  add / { sub(/.* use /, ""); gsub(/ /, "_"); if (idx >= 8000001) print idx, $0 }' | sort
}
# probe_round OUT: one datagram per probe flow; per probe the probe SA
# that carried it, "blocked" (XfrmOutPolBlock moved) or "none"
probe_round() {
	local j=0 dst port b0 b1 got
	probe_sas >"$ST_TMP/p.before"
	while read -r dst port; do
		j=$((j + 1))
		b0=$(FILE=xfrm_stat st_gw_stat XfrmOutPolBlock)
		ip netns exec src "$XSEND" -n 1 "$dst" "$port" >/dev/null
		st_nap 0.05
		b1=$(FILE=xfrm_stat st_gw_stat XfrmOutPolBlock)
		probe_sas >"$ST_TMP/p.after"
		got=$(awk 'NR == FNR { was[$1] = $2; next } $2 != was[$1] { printf "sa %s ", $1 }' \
			"$ST_TMP/p.before" "$ST_TMP/p.after")
		[ "$b1" != "$b0" ] && got="${got}blocked"
		echo "probe $j $dst:$port -> ${got:-none}"
		mv "$ST_TMP/p.after" "$ST_TMP/p.before"
	done <"$ST_TMP/probes"
}

# The readers are held still while probing: each probe is a handful of
# forks, and on a debug kernel dump loops over the extra policies would
# take the CPUs from them (10 s a probe).  They ran through the loading.
st_readers_pause
xnc_unload || fail "unload for the stock half failed"
st_log "stock half: probing"
probe_round >"$ST_TMP/stock.probes"
st_log "stock half: policy use times"
extra_use >"$ST_TMP/use.stock"
sleep 1.1	# use times are in seconds: the patched half must be later
xnc_load || fail "load for the patched half failed"
st_log "patched half: probing"
probe_round >"$ST_TMP/patched.probes"
st_log "patched half: policy use times"
extra_use >"$ST_TMP/use.patched"
st_log "differential done"
st_readers_cont

# used by the stock half: use time set; by the patched half: changed since
awk '$2 != "-" { print $1 }' "$ST_TMP/use.stock" >"$ST_TMP/used.stock"
join "$ST_TMP/use.stock" "$ST_TMP/use.patched" | awk '$2 != $3 { print $1 }' >"$ST_TMP/used.patched"
expect_eq "policies listed, stock and patched" "$(wc -l <"$ST_TMP/use.patched")" "$ST_MANY"
sed 's/^/# /' "$ST_TMP/patched.probes"
nsa=$(grep -c ' -> sa ' "$ST_TMP/stock.probes")
nblk=$(grep -c 'blocked' "$ST_TMP/stock.probes")
nnone=$(grep -c ' -> none' "$ST_TMP/stock.probes")
st_log "differential over 50 probe flows: $nsa through a probe SA, $nblk blocked, $nnone by a tunnel policy;" \
	"$(wc -l <"$ST_TMP/used.stock") of the $ST_MANY used (stock), $(wc -l <"$ST_TMP/used.patched") (patched)"
diff -u "$ST_TMP/stock.probes" "$ST_TMP/patched.probes" ||
	fail "probe outcomes differ between stock and patched (diff above)"
diff -u "$ST_TMP/used.stock" "$ST_TMP/used.patched" ||
	fail "the policies chosen differ between stock and patched (diff above: policy indices)"
# the check must be able to fail: the probes must exercise real choices
kinds=$(sed 's/.* -> //' "$ST_TMP/stock.probes" | sort -u | wc -l)
log "$kinds distinct outcomes among the 50 probe flows"
{ [ "$kinds" -ge 10 ] && [ "$nsa" -lt 50 ]; } || fail "probe flows too uniform to compare ($kinds distinct outcomes, $nsa via a probe SA)"
[ "$(wc -l <"$ST_TMP/used.stock")" -ge 10 ] || fail "fewer than 10 of the $ST_MANY policies used by the probes"

# --- 3. back to the 32 ------------------------------------------------------------
ip -n gw xfrm policy flush || fail "flush of $((N + ST_MANY)) policies failed"
ip -n gw -batch "$ST_TMP/gw-pol" || fail "re-adding the policies failed"
st_resume "flush of $((N + ST_MANY)) policies + re-add"
st_log "back to the $N policies"
for r in $(seq 101 $((100 + N))); do
	for n in gw sink; do
		ip -n $n xfrm state del src 192.168.100.1 dst 192.168.100.2 proto esp \
			spi $((0x2000 + r)) || fail "cannot delete probe SA $r in $n"
	done
done
ip -n gw xfrm policy set hthresh4 32 32 hthresh6 128 128 || fail "hthresh refused"
st_resume "hash thresholds back to the defaults"
st_finish
echo "policy churn: $round rounds, $ST_MANY policies, stock and patched chose alike for 50 probe flows"
