#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stress, SAs (topology: stress-lib.sh; traffic through 32 tunnel SAs,
# monitor and dump readers in gw and sink throughout).
#  1. For XNC_STRESS_SECS, in turn: 8 of the 32 SAs deleted and re-added
#     under a new SPI (break before make); all 32 updated in place (ip xfrm
#     state update, new lifetimes); every SA of gw and sink flushed
#     mid-traffic and re-added; 8 rekeyed make before break (new SPI added,
#     old deleted).  Traffic must be back within 1 s of each.
#  2. 10,000 more SAs in gw (XNC_STRESS_MANY; ip -batch, under traffic),
#     traffic still flowing, one rekey round and one flush of all of them.
#  3. The end checks of stress-lib.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/stress-lib.sh"

# SPI of tunnel X: 0x1000 + X or 0x3000 + X, alternating
declare -A spi
for x in $(seq 1 $N); do spi[$x]=$((0x1000 + x)); done
other() { [ "$1" -lt $((0x3000)) ] && echo $(($1 + 0x2000)) || echo $(($1 - 0x2000)); }
sa_args() { # X SPI [extra]
	echo "src 192.168.100.1 dst 192.168.100.2 proto esp spi $2 reqid $1 mode tunnel $ST_ALG ${3:-}"
}
batch_both() { # run the batch file $1 in sink, then gw
	ip -n sink -batch "$1" && ip -n gw -batch "$1"
}
current_sas() {
	local x
	for x in $(seq 1 $N); do
		echo "xfrm state add $(sa_args "$x" "${spi[$x]}")"
	done
}

st_setup
st_readers_start gw sink
st_traffic_start

# --- 1. add / delete / update / flush -----------------------------------------
round=0 replaced=0 updated=0 flushed=0 rekeyed=0
st_deadline
while st_more $((round + 1)); do
	round=$((round + 1))
	first=$(((round / 4 % 4) * 8 + 1))
	case $((round % 4)) in
	1)	# break before make: delete, then add under a new SPI
		for x in $(seq $first $((first + 7))); do
			echo "xfrm state delete src 192.168.100.1 dst 192.168.100.2 proto esp spi ${spi[$x]}"
			spi[$x]=$(other "${spi[$x]}")
			echo "xfrm state add $(sa_args "$x" "${spi[$x]}")"
		done >"$ST_TMP/b"
		batch_both "$ST_TMP/b" || fail "round $round: replace failed"
		replaced=$((replaced + 8))
		st_resume "8 SAs replaced (round $round)"
		;;
	2)	# update in place
		for x in $(seq 1 $N); do
			echo "xfrm state update $(sa_args "$x" "${spi[$x]}" "limit time-soft $((3600 + round)) limit time-hard $((7200 + round))")"
		done >"$ST_TMP/b"
		ip -n gw -batch "$ST_TMP/b" || fail "round $round: update failed"
		updated=$((updated + N))
		st_resume "32 SAs updated (round $round)"
		;;
	3)	# flush mid-traffic
		ip -n gw xfrm state flush || fail "round $round: flush failed in gw"
		ip -n sink xfrm state flush || fail "round $round: flush failed in sink"
		current_sas >"$ST_TMP/b"
		batch_both "$ST_TMP/b" || fail "round $round: re-adding after the flush failed"
		flushed=$((flushed + 1))
		st_resume "state flush + re-add (round $round)"
		;;
	0)	# make before break: the new SA first, then the old one goes
		: >"$ST_TMP/b"
		: >"$ST_TMP/b2"
		for x in $(seq $first $((first + 7))); do
			echo "xfrm state delete src 192.168.100.1 dst 192.168.100.2 proto esp spi ${spi[$x]}" >>"$ST_TMP/b2"
			spi[$x]=$(other "${spi[$x]}")
			echo "xfrm state add $(sa_args "$x" "${spi[$x]}")" >>"$ST_TMP/b"
		done
		batch_both "$ST_TMP/b" || fail "round $round: rekey (add) failed"
		{ ip -n gw -batch "$ST_TMP/b2" && ip -n sink -batch "$ST_TMP/b2"; } ||
			fail "round $round: rekey (delete) failed"
		rekeyed=$((rekeyed + 8))
		st_resume "8 SAs rekeyed (round $round)"
		;;
	esac
done
log "churn: $round rounds in $ST_SECS s: $replaced SAs replaced, $updated updated, $flushed flushes, $rekeyed rekeyed"
st_settle gw "$ST_CNT_GW"
expect_eq "gw counts after the churn" "$ST_SETTLED" "$ST_CNT_GW"

# --- 2. XNC_STRESS_MANY SAs at once --------------------------------------------------
for i in $(seq 1 "$ST_MANY"); do
	echo "xfrm state add src 192.168.100.1 dst 172.$((16 + i / 65536)).$((i / 256 % 256)).$((i % 256))" \
		"proto esp spi $((0x100000 + i)) reqid $((1000 + i)) mode tunnel $ST_ALG"
done >"$ST_TMP/many"
t0=$(st_ms)
ip -n gw -batch "$ST_TMP/many" || fail "adding $ST_MANY SAs failed"
log "$ST_MANY SAs added with ip -batch in $(($(st_ms) - t0)) ms under traffic; gw: $(st_counts gw)"
expect_eq "gw SAs" "$(ip -n gw xfrm state count | awk '{ print $3 }')" $((N + ST_MANY))
st_resume "$ST_MANY SAs added"
out=$(st_all_sas_flow) || fail "with $ST_MANY SAs: $out"
# one rekey round among them
: >"$ST_TMP/b"
: >"$ST_TMP/b2"
for x in $(seq 1 $N); do
	echo "xfrm state delete src 192.168.100.1 dst 192.168.100.2 proto esp spi ${spi[$x]}" >>"$ST_TMP/b2"
	spi[$x]=$(other "${spi[$x]}")
	echo "xfrm state add $(sa_args "$x" "${spi[$x]}")" >>"$ST_TMP/b"
done
{ batch_both "$ST_TMP/b" && ip -n gw -batch "$ST_TMP/b2" && ip -n sink -batch "$ST_TMP/b2"; } ||
	fail "rekey among $ST_MANY SAs failed"
st_resume "32 SAs rekeyed among $ST_MANY"
# and all of them flushed mid-traffic
t0=$(st_ms)
ip -n gw xfrm state flush || fail "flush of $((N + ST_MANY)) SAs failed"
log "flush of $((N + ST_MANY)) SAs: $(($(st_ms) - t0)) ms"
ip -n sink xfrm state flush
current_sas >"$ST_TMP/b"
batch_both "$ST_TMP/b" || fail "re-adding after the big flush failed"
st_resume "flush of $((N + ST_MANY)) SAs + re-add"

st_finish
echo "SA churn: $round rounds, $ST_MANY SAs at once; traffic back within 1 s every time"
