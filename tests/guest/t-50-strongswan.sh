#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# strongSwan over the module: two gateways, one charon each, N IKEv2
# connections (SWAN_N, default 30) with one CHILD_SA per client subnet pair,
# forwarded traffic, rekeying under traffic, terminate/re-initiate, and
# disable+rmmod / insmod of the livepatch while traffic flows.
#
#   swan-ca            swan-ga                swan-gb            swan-cb
#   10.1.X.10 --lan-- 10.1.X.1 [charon A] ==wan/ESP== [charon B] 10.2.X.1 --lan-- 10.2.X.10
#                     192.0.2.1                      192.0.2.2
#   tunnel X (X = 1..N): IKE_SA "netX", CHILD_SA 10.1.X.0/24 <=> 10.2.X.0/24
#
# Asserts: all N IKE_SAs and CHILD_SAs up on both sides, established within
# 240 s (this and every time here, rekey_time included, are multiplied by
# XNC_SLOW on a slower kernel, see lib.sh); exactly N out, N in, N fwd
# policies and 2N SAs per gateway (later on, rekeys in flight accounted for);
# a different number of probes per tunnel crosses exactly that tunnel's four
# SAs (both gateways, both directions), and the modules count one transformed
# lookup per forwarded probe; CHILD_SAs rekey under traffic (at least N rekeys
# in SWAN_REKEY_RUN s, every SA replaced, old SAs gone, loss < 1%); a
# terminated subset comes back with new SAs that carry traffic while the other
# tunnels lose < 1%; disable+rmmod and insmod under traffic: every tunnel's
# SAs keep moving on the stock path, the counters move again after insmod, no
# tunnel loses more than one probe; charon's exit leaves no SA or policy.
# Numbers go to the log as "# " lines.

# shellcheck disable=SC2119 # xnc_load, swan_all_up: no arguments here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/swan-lib.sh"
log() { echo "# [${SECONDS}s] $*"; }
slow() { awk -v t="$1" -v s="$XNC_SLOW" 'BEGIN { print t * s }'; }	# T x XNC_SLOW

SWAN_DIR=/tmp/t50-swan
REKEY_RUN=${SWAN_REKEY_RUN:-$((60 * XNC_SLOW))}	# seconds of traffic while rekeying
SUBSET=${SWAN_SUBSET:-5}		# tunnels terminated and re-initiated
N=$SWAN_N
[ "$SWAN_REKEY" -gt 0 ] 2>/dev/null || skip "SWAN_REKEY must be > 0 for this test"

why=$(swan_have) || skip "$why"
at_exit keep
P=$SWAN_DIR/ping

# packets of SA SPI in a swan_sas snapshot
pk() { swan_pk "$@"; }
spis() { awk '{ print $1 }' "$1" | sort; }
snap() { swan_sas swan-ga >"$1.ga"; swan_sas swan-gb >"$1.gb"; swan_tunnels swan-ga >"$1.map"; }

# table_counts NS: "out in fwd other SAs" (other: policies that are neither
# charon's socket policies nor in/out/fwd)
table_counts() {
	{ ip -n "$1" xfrm policy; echo STATES; ip -n "$1" xfrm state; } | awk '
		$1 == "STATES" { st = 1; next }
		!st && /^src / { all++ }
		!st && $1 == "dir" { n[$2]++ }
		!st && $1 == "socket" { sock++ }
		st && /^src / { sas++ }
		END { print n["out"] + 0, n["in"] + 0, n["fwd"] + 0,
			    all - n["out"] - n["in"] - n["fwd"] - sock, sas + 0 }'
}
# tables_exact NTUNNELS: exactly N out, N in, N fwd policies (besides
# charon's socket policies) and 2N SAs on both gateways
tables_exact() {
	[ "$(table_counts swan-ga)" = "$1 $1 $1 0 $((2 * $1))" ] &&
	[ "$(table_counts swan-gb)" = "$1 $1 $1 0 $((2 * $1))" ]
}
# tables_rekeying NS NTUNNELS: the SAs of NS, allowing for rekeys in flight:
# every tunnel (reqid of an out policy) has one SA per direction, or two
# while it is being rekeyed, and no SA belongs to no tunnel.  Prints the
# number of tunnels being rekeyed.  (Rekeys change SAs, not policies or
# reqids, so reading the two one after the other is fine.)
tables_rekeying() {
	local me
	[ "$1" = swan-ga ] && me=192.0.2.1 || me=192.0.2.2
	{ ip -n "$1" xfrm policy list dir out; echo SAS; swan_sas "$1"; } | awk -v n="$2" -v me="$me" '
		$1 == "SAS" { sa = 1; next }
		!sa { for (i = 1; i < NF; i++) if ($i == "reqid") t[$(i + 1)] = 1; next }
		!($2 in t) { bad = 1 }
		$3 == me { o[$2]++; next }
		{ in_[$2]++ }
		END { for (r in t) { c++; if (o[r] < 1 || o[r] > 2 || in_[r] < 1 || in_[r] > 2) bad = 1
				     if (o[r] + in_[r] > 2) k++ }
		      if (bad || c != n) exit 1; print k + 0 }'
}
# check_tables WHAT NTUNNELS: exactly N out, N in, N fwd policies (and no
# other but charon's socket policies) on both gateways, and 2N SAs.  With N
# tunnels rekeying every SWAN_REKEY s there is often a rekey in flight (one
# more SA per direction for a moment, and charon keeps the old inbound SA
# for charon.delete_rekeyed_delay = 5 s after a rekey): try for an exact
# count for 10 s (times XNC_SLOW, as every time limit here), then accept
# those if every SA belongs to a tunnel and every tunnel has its pair (or two
# while being rekeyed).
check_tables() {
	local end=$((SECONDS + 10 * XNC_SLOW)) ns c ra rb
	while [ $SECONDS -lt $end ]; do
		tables_exact "$2" && return 0
		sleep 0.2
	done
	for ns in swan-ga swan-gb; do
		c=$(table_counts $ns)
		[ "${c% *}" = "$2 $2 $2 0" ] ||
			fail "$1: $ns policies out/in/fwd/other $c, want $2 $2 $2 0"
	done
	end=$((SECONDS + 10 * XNC_SLOW))
	while [ $SECONDS -lt $end ]; do
		if ra=$(tables_rekeying swan-ga "$2") && rb=$(tables_rekeying swan-gb "$2"); then
			log "$1: policies exact, SAs match the tunnels with $ra/$rb rekeys in flight"
			return 0
		fi
		sleep 0.2
	done
	fail "$1: SAs do not match the $2 tunnels (A: $(table_counts swan-ga), B: $(table_counts swan-gb))"
}

# all_moving WHAT: every tunnel's SAs on A carry traffic in both directions:
# in each direction, one of the tunnel's SAs (two while a rekey is in
# flight) has more packets than in a snapshot 1.5 s before (XNC_SLOW x
# that, as the probes come that much slower), an SA new since then counting
# from 0.  A tunnel that did not (its SA replaced right then, say) is looked
# at again in the next snapshot, up to 4 in all; a tunnel that moved once
# is done.
all_moving() {
	local d=$SWAN_DIR/mv i left
	left=$(seq 1 "$N")
	swan_sas swan-ga >"$d.0"
	# shellcheck disable=SC2034 # i: the round, not used
	for i in 1 2 3 4; do
		sleep "$(slow 1.5)"
		swan_sas swan-ga >"$d.1"
		swan_tunnels swan-ga >"$d.1.map"
		# shellcheck disable=SC2086,SC2116 # $left: tunnel numbers, on one line
		left=$(awk -v todo="$(echo $left)" '
			BEGIN { n = split(todo, t, " "); for (i = 1; i <= n; i++) want[t[i]] = 1 }
			FILENAME == ARGV[1] { p0[$1] = $5; next }
			FILENAME == ARGV[2] { p1[$1] = $5; next }
			!($1 in want) { next }
			{ moved = 0
			  for (k = 3; k <= 4; k++) {
				c = split($k, s, ",")
				for (j = 1; j <= c; j++)
					if (p1[s[j]] > p0[s[j]] + 0) { moved++; break }
			  }
			  if (moved == 2) delete want[$1] }
			END { for (x in want) print x }' "$d.0" "$d.1" "$d.1.map" | sort -n)
		[ -z "$left" ] && return 0
		# shellcheck disable=SC2086 # $left: tunnel numbers, on one line
		log "$1: not moving yet:" $left
		mv "$d.1" "$d.0"
	done
	# shellcheck disable=SC2086,SC2116 # $left: tunnel numbers, on one line
	why="$1: tunnel(s) $(echo $left): SAs on A did not move"
	return 1
}

# on failure keep what explains it
keep() {
	local rc=${XNC_RC:-$?} d=${XNC_OUT:-/tmp}/t-50-swan
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ]; then
		mkdir -p "$d"
		cp -r "$SWAN_DIR"/a/charon.log "$d/charon-a.log" 2>/dev/null
		cp -r "$SWAN_DIR"/b/charon.log "$d/charon-b.log" 2>/dev/null
		cp "$SWAN_DIR"/*.g? "$SWAN_DIR"/*.map "$d/" 2>/dev/null
		for ns in swan-ga swan-gb; do
			ip -n $ns -s xfrm state >"$d/$ns.state" 2>&1
			ip -n $ns xfrm policy >"$d/$ns.policy" 2>&1
			swan_ctl ${ns#swan-g} --list-sas >"$d/$ns.sas" 2>&1
		done
	fi
	swan_cleanup
	return "$rc"
}

xnc_load || fail "insmod failed"
swan_net || fail "network setup failed"
swan_start || fail "strongSwan did not start"
log "N=$N rekey_time=${SWAN_REKEY}s (A only), charon A pid $(cat $SWAN_DIR/a/pid), B pid $(cat $SWAN_DIR/b/pid)"

# --- 1. establish -----------------------------------------------------------
t0=$(date +%s%N)
swan_initiate || fail "loading A's connections failed"
wait_for $((240 * XNC_SLOW)) swan_all_up ||
	fail "not all up after $((240 * XNC_SLOW))s: A $(swan_ike_up a) IKE/$(swan_child_up a) CHILD, B $(swan_ike_up b)/$(swan_child_up b)"
t_up=$(( ($(date +%s%N) - t0) / 1000000 ))
log "all $N tunnels established in $((t_up / 1000)).$(printf %03d $((t_up % 1000)))s"
check_tables "established" "$N"

# --- 2. every tunnel's traffic on its own SAs --------------------------------
# Tunnel X sends 2 + X % 5 probes.  Each of its four SAs (A out = B in,
# B out = A in) must move by exactly that number between two snapshots, and
# the gateways' modules must count one transformed lookup per forwarded
# probe.  With N tunnels rekeying every SWAN_REKEY s, some tunnel often
# rekeys during a round: those are checked again in the next round.  All
# tunnels came up together, so their first rekeys come in one wave, 20 to
# 25 s later, which the first rounds often meet; later rounds are shorter
# (fewer tunnels) and get through it.
todo=$(seq 1 "$N") verified=0 clean=0 sent_all=0
for round in $(seq 1 12); do
	[ -n "$todo" ] || break
	snap $SWAN_DIR/b0
	tr0=$(xnc_stat Transformed swan-ga) trb0=$(xnc_stat Transformed swan-gb)
	lk0=$(xnc_stat Lookups swan-ga)
	# shellcheck disable=SC2086
	swan_ping_start $P var 0.2 $todo
	swan_ping_wait $P
	tr1=$(xnc_stat Transformed swan-ga) trb1=$(xnc_stat Transformed swan-gb)
	lk1=$(xnc_stat Lookups swan-ga)
	snap $SWAN_DIR/b1
	sent=0 again=
	for x in $todo; do
		c=$((2 + x % 5))
		sent=$((sent + c))
		m0=$(awk -v x="$x" '$1 == x && NF == 4 { print $3, $4 }' $SWAN_DIR/b0.map)
		m1=$(awk -v x="$x" '$1 == x && NF == 4 { print $3, $4 }' $SWAN_DIR/b1.map)
		read -r out in <<<"$m0"
		if [ -z "$m0" ] || [ "$m0" != "$m1" ] || [ "${m0#*,}" != "$m0" ] ||
		   [ "$(awk '/transmitted/ { print $1 - $4 }' "$P/$x.ping")" != 0 ] ||
		   ! grep -q "^$out " $SWAN_DIR/b0.gb || ! grep -q "^$in " $SWAN_DIR/b1.gb; then
			again="$again $x"	# rekeyed (or a probe lost) meanwhile
			continue
		fi
		for f in ga:$out ga:$in gb:$out gb:$in; do
			s=${f#*:} g=${f%%:*}
			d=$(( $(pk "$SWAN_DIR/b1.$g" "$s") - $(pk "$SWAN_DIR/b0.$g" "$s") ))
			expect_eq "tunnel $x: packets on SA $s at $g" "$d" "$c"
		done
		verified=$((verified + 1))
	done
	sent_all=$((sent_all + sent))
	expect_ge "A: transformed lookups for $sent forwarded probes" $((tr1 - tr0)) "$sent"
	expect_ge "B: transformed lookups for $sent forwarded replies" $((trb1 - trb0)) "$sent"
	expect_ge "A: lookups" $((lk1 - lk0)) "$sent"
	if [ -z "$again" ]; then
		# no SA changed: exactly one transformed lookup per probe
		expect_eq "A: transformed lookups for $sent forwarded probes" $((tr1 - tr0)) "$sent"
		expect_eq "B: transformed lookups for $sent forwarded replies" $((trb1 - trb0)) "$sent"
		clean=1
	fi
	log "per-tunnel round $round: $sent probes each way, A Transformed +$((tr1 - tr0)) Lookups +$((lk1 - lk0)), B Transformed +$((trb1 - trb0)); again:${again:- none}"
	todo=$again
done
[ -z "$todo" ] || fail "tunnels never checked without a rekey in between:$todo"
expect_eq "tunnels whose four SAs carried exactly their probes" "$verified" "$N"
[ -n "$clean" ] || log "no round without a rekey: transformed counts checked as lower bounds only"

# --- 3. rekeying under traffic ----------------------------------------------
snap $SWAN_DIR/r0
rk0=$(swan_rekeys)
tr0=$(xnc_stat Transformed swan-ga)
cnt=$((REKEY_RUN * 4))
swan_ping_start $P "$cnt" 0.25
swan_ping_wait $P
rekeys=$(( $(swan_rekeys) - rk0 ))
read -r s r <<<"$(swan_ping_sum $P)"
rk_s=$s rk_r=$r
log "rekey run: ${REKEY_RUN}s, $rekeys CHILD_SA rekeys, probes $s sent $r answered, lost $((s - r))"
expect_eq "probes sent during rekeys" "$s" $((cnt * N))
[ $(((s - r) * 100)) -lt "$s" ] || fail "rekey run lost $((s - r)) of $s probes (>= 1%)"
expect_ge "rekeys during the run" "$rekeys" "$N"
check_tables "after rekeying" "$N"
swan_all_up || fail "not all up after rekeying"
snap $SWAN_DIR/r1
for s in $(spis $SWAN_DIR/r0.ga); do
	grep -q "^$s " $SWAN_DIR/r1.ga && fail "SA $s still on A after the rekey run"
	grep -q "^$s " $SWAN_DIR/r1.gb && fail "SA $s still on B after the rekey run"
done
expect_ge "A: transformed during rekeys" $(( $(xnc_stat Transformed swan-ga) - tr0 )) "$r"

# --- 4. terminate and re-initiate a subset under traffic --------------------
snap $SWAN_DIR/l0
swan_ping_start $P 100 0.25
sleep 3
for x in $(seq 1 "$SUBSET"); do swan_ctl a --terminate --ike "net$x" >/dev/null || fail "terminate net$x"; done
log "terminate done"
check_tables "$SUBSET terminated" $((N - SUBSET))
expect_eq "IKE_SAs on A after terminate" "$(swan_ike_up a)" $((N - SUBSET))
expect_eq "IKE_SAs on B after terminate" "$(swan_ike_up b)" $((N - SUBSET))
log "terminated net1..net$SUBSET"
t0=$(date +%s%N)
for x in $(seq 1 "$SUBSET"); do swan_ctl a --initiate --child "net$x" >/dev/null || fail "initiate net$x"; done
wait_for $((60 * XNC_SLOW)) swan_all_up || fail "not all up after re-initiate"
t_re=$(( ($(date +%s%N) - t0) / 1000000 ))
log "re-initiated in $((t_re / 1000)).$(printf %03d $((t_re % 1000)))s"
# the re-initiated tunnels: new SAs, and 10 probes each cross them (right
# away: well before these new SAs' first rekey)
snap $SWAN_DIR/l1
swan_ping_start $P-sub 10 0.2 $(seq 1 "$SUBSET")
swan_ping_wait $P-sub
snap $SWAN_DIR/l2
for x in $(seq 1 "$SUBSET"); do
	read -r _ _ out in <<<"$(awk -v x="$x" '$1 == x' $SWAN_DIR/l1.map)"
	{ [ -n "$out" ] && [ -n "$in" ]; } || fail "tunnel $x: no SAs after re-initiate"
	grep -q "^$out " $SWAN_DIR/l0.ga && fail "tunnel $x: same SA $out after re-initiate"
	expect_eq "tunnel $x: probes lost after re-initiate" "$(swan_ping_lost $P-sub "$x")" 0
	for s in $out $in; do
		a=$(pk $SWAN_DIR/l1.ga "$s") b=$(pk $SWAN_DIR/l2.ga "$s")
		expect_ge "tunnel $x: packets on new SA $s" $((b - a)) 10
	done
done
check_tables "re-initiated" "$N"
swan_ping_wait $P
lost_rest=0 sent_rest=0
for x in $(seq $((SUBSET + 1)) "$N"); do
	lost_rest=$((lost_rest + $(swan_ping_lost $P "$x")))
	sent_rest=$((sent_rest + 100))
done
log "terminate+initiate of $SUBSET tunnels: back in $((t_re / 1000)).$(printf %03d $((t_re % 1000)))s; other tunnels lost $lost_rest of $sent_rest"
[ $((lost_rest * 100)) -lt "$sent_rest" ] || fail "untouched tunnels lost $lost_rest of $sent_rest"

# --- 5. disable + rmmod, then insmod, under traffic -------------------------
# Probes, 5/s per tunnel (1/XNC_SLOW that on a slower kernel), from before
# disable and rmmod until the checks after insmod are done, however long
# they take
swan_ping_start $P open "$(slow 0.2)"
sleep 2
lk0=$(xnc_stat Lookups swan-ga)
t0=$(date +%s%N)
xnc_unload || fail "disable+rmmod under traffic failed"
log "disable+rmmod under traffic took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
[ ! -e /proc/net/xfrm_nocache ] || fail "proc file left after rmmod"
all_moving "stock path (module removed)" || fail "$why"
xnc_load || fail "insmod again failed"
tra=$(xnc_stat Transformed swan-ga) trb=$(xnc_stat Transformed swan-gb)
all_moving "after insmod" || fail "$why"
expect_ge "A: Transformed after insmod" "$(xnc_stat Transformed swan-ga)" $((tra + N))
expect_ge "B: Transformed after insmod" "$(xnc_stat Transformed swan-gb)" $((trb + N))
log "insmod again: A Transformed $tra -> $(xnc_stat Transformed swan-ga), B $trb -> $(xnc_stat Transformed swan-gb)"
swan_ping_stop $P
worst=0
for x in $(seq 1 "$N"); do
	l=$(swan_ping_lost $P "$x")
	[ "$l" -gt "$worst" ] && worst=$l
done
read -r s r <<<"$(swan_ping_sum $P)"
log "rmmod/insmod under traffic: lookups before rmmod $lk0, probes $s sent $r answered, worst tunnel lost $worst"
[ "$worst" -le 1 ] || fail "a tunnel lost $worst probes across disable/rmmod/insmod"
log "after the run: A $(xnc_stat Transformed swan-ga) transformed, B $(xnc_stat Transformed swan-gb)"
swan_all_up || fail "not all up at the end"

# --- 6. daemons stop cleanly -------------------------------------------------
total_rekeys=$(swan_rekeys)
swan_stop
for ns in swan-ga swan-gb; do
	expect_eq "$ns: SAs after charon stopped" "$(swan_states $ns)" 0
	expect_eq "$ns: policies after charon stopped" "$(ip -n $ns xfrm policy | grep -c '^src')" 0
done
echo "N=$N up in $((t_up / 1000))s, $total_rekeys rekeys, rekey-run loss $((rk_s - rk_r))/$rk_s"
