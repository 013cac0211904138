#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Shared by the stress tests (t-30-stress-*.sh); source after lib.sh.  Every
# scenario runs with traffic forwarded through 32 tunnel-mode ESP SAs (null
# cipher: what is measured is the xfrm path, not crypto):
#
#  +------------+ s0     g0 +-----------------------+ g1     k1 +------------------+
#  | src        |-----------| gw (ip_forward)       |-----------| sink             |
#  | 10.255.0.1 |           | 10.255.0.2            |  ESP x 32 | 192.168.100.2    |
#  | xstream    |           | 192.168.100.1         |           | 10.2.X.1 (d0)    |
#  +------------+           | 32 out policies + SAs |           | xsend -l :5000   |
#                           +-----------------------+           +------------------+
#
# src sends UDP to 10.2.X.1:5000, X = 1..32 in turn, ST_PPS datagrams/s in
# all.  gw's policy "src 10.255.0.0/24 dst 10.2.X.0/24" (priority 100)
# puts each /24 into its own SA (reqid X, SPI 0x1000+X); sink's "dir in"
# policies accept them only through that SA, so a datagram counted at the
# sink (Udp InDatagrams of its namespace) came through the tunnel.
#
#   st_setup            namespaces, links, base SAs/policies, module
#                       loaded, baseline (slab objects, SA/policy counts)
#   st_traffic_start    listener in sink, xstream in src; waits for arrivals
#   st_readers_start NS...  "ip xfrm monitor" and "ip -s xfrm state/policy"
#                       dump loops in each NS until st_readers_stop
#   st_readers_pause / st_readers_cont  hold all readers still (SIGSTOP)
#                       and let them go on, e.g. around a measurement
#   st_resume WHAT      after a disturbance: time until the sink counts a new
#                       datagram; fails beyond 1 s
#   st_finish           end state: SA/policy counts as at the start, every
#                       SA carrying traffic; then stop, flush, and the slab
#                       objects back to the baseline; module unloaded
#
# XNC_STRESS_SECS bounds each scenario's churn loop (default 15);
# XNC_STRESS_ROUNDS is the least number of rounds of the counted churns
# (namespaces, module), which may then run past XNC_STRESS_SECS (default 0,
# make stress: 50).  XNC_STRESS_MANY is how many more SAs (t-30-stress-sa)
# and policies (t-30-stress-policy) are loaded at once (default 10000;
# make check-debug: 2000, where each costs twenty times as much and the
# hash resizes and tree rebuilds it is after happen well before 2000).
# Figures are logged as "# " lines.

XSEND=$XNC_TOP/tests/tools/xsend
XSTREAM=$XNC_TOP/tests/tools/xstream
ST_SECS=${XNC_STRESS_SECS:-15}
ST_ROUNDS=${XNC_STRESS_ROUNDS:-0}
ST_PPS=${XNC_STRESS_PPS:-250}
knob ST_MANY XNC_STRESS_MANY 10000 1000 100000
ST_RESUME_MS=$((1000 * XNC_SLOW))
N=32
# ESP with null encryption and null authentication
ST_ALG='enc cipher_null "" auth digest_null ""'

ST_TMP=$(mktemp -d /tmp/stress.XXXXXX)
ST_START=$SECONDS
ST_RES_N=0 ST_RES_SUM=0 ST_RES_MAX=0 ST_RES_WHAT=
ST_UP_N=0 ST_UP_SUM=0 ST_UP_MAX=0
ST_RXPID='' ST_TXPID='' ST_GWPID=''
declare -A ST_READERS

# st_nap SECONDS: sleep without forking (a read with a timeout on a fifo
# nobody writes)
mkfifo "$ST_TMP/nap"
exec {ST_NAPFD}<>"$ST_TMP/nap"
st_nap() { read -r -t "$1" -u $ST_NAPFD; }

st_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
# st_log MSG: a "# " line with the time into the scenario and how the
# VM's CPU time went since the last one (user, system, softirq, idle)
st_log() {
	local u n s i w sq rest now=() d
	read -r _ u n s i w _ sq rest </proc/stat
	now=($((u + n)) "$s" "$sq" $((i + w)))
	d="${ST_CPU[*]:+; cpu since the last: $(st_cpu_pct "${now[@]}")}"
	ST_CPU=("${now[@]}")
	log "[$((SECONDS - ST_START)) s] $*$d"
}
ST_CPU=()
st_cpu_pct() {
	local du=$(($1 - ST_CPU[0])) ds=$(($2 - ST_CPU[1])) dq=$(($3 - ST_CPU[2])) di=$(($4 - ST_CPU[3])) t
	t=$((du + ds + dq + di))
	[ $t -gt 0 ] || t=1
	echo "user $((100 * du / t))%, system $((100 * ds / t))%, softirq $((100 * dq / t))%, idle $((100 * di / t))%"
}

# --- configuration, as ip -batch files --------------------------------------

# st_sa_lines SPIBASE: the 32 tunnel SAs (gw and sink hold the same ones)
st_sa_lines() {
	local x
	for x in $(seq 1 $N); do
		echo "xfrm state add src 192.168.100.1 dst 192.168.100.2 proto esp" \
			"spi $(($1 + x)) reqid $x mode tunnel $ST_ALG"
	done
}

# st_pol_lines DIR: the 32 tunnel policies
st_pol_lines() {
	local x
	for x in $(seq 1 $N); do
		echo "xfrm policy add src 10.255.0.0/24 dst 10.2.$x.0/24 dir $1 priority 100" \
			"tmpl src 192.168.100.1 dst 192.168.100.2 proto esp reqid $x mode tunnel"
	done
}

st_write_batches() {
	local x
	st_sa_lines 0x1000 >"$ST_TMP/sa"
	st_pol_lines out >"$ST_TMP/gw-pol"
	st_pol_lines in >"$ST_TMP/sink-pol"
	for x in $(seq 1 $N); do
		echo "addr add 10.2.$x.1/24 dev d0"
	done >"$ST_TMP/sink-addr"
}

# st_xfrm_base NS: the 32 SAs and the policies of NS (gw: out, sink: in)
st_xfrm_base() {
	ip -n "$1" -batch "$ST_TMP/sa" || return 1
	ip -n "$1" -batch "$ST_TMP/$1-pol"
}

# The veths retransmit ARP requests every 100 ms, not every second: a link
# coming up drops what it is given until the kernel has started its queue
# (see st_links_up), an ARP request among it, and the default retransmit
# would then hold traffic for up to a second after the link is back, which
# says nothing about xfrm.

# st_link_src: the src - gw veth, addresses, src's default route
st_link_src() {
	ip link add s0 netns src type veth peer name g0 netns gw || return 1
	ip -n src -batch - <<-EOF || return 1
		ntable change name arp_cache dev s0 retrans 100
		addr add 10.255.0.1/24 dev s0
		link set s0 up
		route add default via 10.255.0.2
	EOF
	ip -n gw -batch - <<-EOF
		ntable change name arp_cache dev g0 retrans 100
		addr add 10.255.0.2/24 dev g0
		link set g0 up
	EOF
}

# st_link_sink: the gw - sink veth, addresses, routes on both sides
st_link_sink() {
	ip link add g1 netns gw type veth peer name k1 netns sink || return 1
	ip -n gw -batch - <<-EOF || return 1
		ntable change name arp_cache dev g1 retrans 100
		addr add 192.168.100.1/24 dev g1
		link set g1 up
		route add 10.2.0.0/16 via 192.168.100.2
	EOF
	ip -n sink -batch - <<-EOF
		ntable change name arp_cache dev k1 retrans 100
		addr add 192.168.100.2/24 dev k1
		link set k1 up
		route add 10.255.0.0/24 via 192.168.100.1
	EOF
}

# st_gw_up: a fresh gateway namespace, linked and configured
st_gw_up() {
	ip netns add gw || return 1
	ip -n gw link set lo up
	ip netns exec gw sysctl -qw net.ipv4.ip_forward=1
	st_link_src || return 1
	st_link_sink || return 1
	st_xfrm_base gw || return 1
	# a process in gw: its /proc/PID/net is gw's, read without forking
	ip netns exec gw sleep 100000 &
	ST_GWPID=$!
}

# st_gw_anchor_stop: the anchor holds gw alive; stop it before deleting gw
st_gw_anchor_stop() {
	[ -n "$ST_GWPID" ] || return 0
	kill "$ST_GWPID" 2>/dev/null
	wait "$ST_GWPID" 2>/dev/null
	ST_GWPID=
}

# --- observation -------------------------------------------------------------

# st_slab CACHE: objects in use, exactly: per-CPU slabs are flushed first
# (SLUB counts objects sitting free in a CPU slab as in use).  The kernel
# has one cache for IPv4 and IPv6 bundles, ST_DST_SLAB: xfrm_dst_cache in
# 6.1, xfrm_dst in 6.12 (KMEM_CACHE names it after the struct); Debian's
# does not merge it.
st_slab() {
	local d=/sys/kernel/slab/$1 v
	echo 1 >"$d/shrink" 2>/dev/null
	read -r v _ <"$d/objects"
	echo "$v"
}
ST_DST_SLAB=xfrm_dst_cache
[ -e /sys/kernel/slab/$ST_DST_SLAB ] || ST_DST_SLAB=xfrm_dst

st_slab_back() {
	[ "$(st_slab $ST_DST_SLAB)" -le "$ST_DST0" ] &&
		[ "$(st_slab xfrm_state)" -le "$ST_STATE0" ]
}

# st_counts NS: SA and policy counts, e.g. "sa=32 pol=in:0/out:32/fwd:0"
st_counts() {
	local sa pol
	sa=$(ip -n "$1" xfrm state count | awk '{ print $3 }')
	pol=$(ip -n "$1" xfrm policy count | awk '{ print "in:" $3 "/out:" $5 "/fwd:" $7 }')
	echo "sa=$sa pol=$pol"
}

# st_settle NS WANT: ST_SETTLED = NS's counts (st_counts) once they are
# WANT, or as they are when every larval SA of NS would have expired.  A
# lookup that found no SA mid-churn and the SA's re-adding can cross in
# the kernel, stock's as well: xfrm_state_find() inserts its larval
# (ACQ) SA without searching again under the lock, so it may land next
# to the SA just added (which deletes only larval SAs already there) and
# count until its net.core.xfrm_acq_expires (30 s by default).  Seen on
# the debug kernel; an SA that does not go away in that time is real.
st_settle() {
	local ns=$1 want=$2 t0=$SECONDS lim larval
	lim=$(($(ip netns exec "$ns" sysctl -n net.core.xfrm_acq_expires) + 5 * XNC_SLOW))
	ST_SETTLED=$(st_counts "$ns")
	[ "$ST_SETTLED" != "$want" ] || return 0
	larval=$(ip -n "$ns" xfrm state list | grep -c 'spi 0x00000000')
	while [ "$ST_SETTLED" != "$want" ] && [ $((SECONDS - t0)) -lt "$lim" ]; do
		st_nap 0.5
		ST_SETTLED=$(st_counts "$ns")
	done
	log "$ns: $larval larval SAs (spi 0) beside the others; counts $ST_SETTLED after $((SECONDS - t0)) s"
}

# st_rx: RX = datagrams delivered in sink so far (Udp InDatagrams), read
# from the listener's /proc/PID/net: no fork
st_rx() {
	local k a
	RX=
	while read -r k a _; do
		if [ "$k" = Udp: ] && [ -z "${a//[0-9]/}" ]; then
			RX=$a
			return 0
		fi
	done <"/proc/$ST_RXPID/net/snmp"
	return 1
}

# st_gw_stat NAME: one line of gw's /proc/net/xfrm_nocache (or, with
# FILE=xfrm_stat, of its MIB), through the anchor process
st_gw_stat() {
	local k v
	while read -r k v; do
		[ "$k" = "$1" ] && { echo "$v"; return 0; }
	done <"/proc/$ST_GWPID/net/${FILE:-xfrm_nocache}"
	echo 0
}

# st_sa_counts NS: "SPI packets" per SA
st_sa_counts() {
	ip -n "$1" -s xfrm state |
		awk '/proto esp spi/ { spi = $4 }
		     /lifetime current:/ { getline; split($2, a, "("); print spi, a[1] }'
}

# st_all_sas_flow: within 3 s, every SA of sink has carried new packets
st_all_sas_flow() {
	local moved t
	st_sa_counts sink >"$ST_TMP/sas.before"
	for t in 1 2 3; do
		sleep 1
		moved=$(st_sa_counts sink | awk 'NR == FNR { was[$1] = $2; next }
			$1 in was && $2 > was[$1] { m++ } END { print m + 0 }' "$ST_TMP/sas.before" -)
		[ "$moved" -ge $N ] && return 0
	done
	echo "only $moved of $N SAs carried traffic"
	return 1
}

# --- traffic -----------------------------------------------------------------

st_traffic_start() {
	local x dsts=
	ip netns exec sink "$XSEND" -l -w 100000 5000 >"$ST_TMP/rx.out" 2>&1 &
	ST_RXPID=$!
	wait_for 5 grep -q listening "$ST_TMP/rx.out" || fail "sink listener did not start"
	for x in $(seq 1 $N); do
		dsts="$dsts 10.2.$x.1"
	done
	# shellcheck disable=SC2086 # dsts: the 32 destinations, words
	ip netns exec src "$XSTREAM" -i $((1000000 / ST_PPS)) -p 5000 $dsts \
		>"$ST_TMP/tx.out" 2>&1 &
	ST_TXPID=$!
	st_resume "traffic start"
}

st_traffic_stop() {
	[ -n "$ST_TXPID" ] && kill "$ST_TXPID" 2>/dev/null && wait "$ST_TXPID" 2>/dev/null
	[ -n "$ST_RXPID" ] && st_rx && log "sink received $RX datagrams;" \
		"src: $(cat "$ST_TMP/tx.out" 2>/dev/null)"
	[ -n "$ST_RXPID" ] && kill "$ST_RXPID" 2>/dev/null && wait "$ST_RXPID" 2>/dev/null
	ST_TXPID='' ST_RXPID=''
}

# st_links_up NS/DEV...: wait until each device is operationally up.  The
# kernel starts a device's queue when it handles the carrier-on event
# (linkwatch, which runs at most once a second), so for up to a second after
# "ip link set up" or a new veth, packets sent through it are dropped: the
# link is not back yet.  Records the wait (reported by st_resume_report).
st_links_up() {
	local t0 l dt
	t0=$(st_ms)
	for l in "$@"; do
		wait_for 5 st_oper_up "${l%/*}" "${l#*/}" || fail "$l not operationally up within 5 s"
	done
	dt=$(($(st_ms) - t0))
	ST_UP_N=$((ST_UP_N + 1))
	ST_UP_SUM=$((ST_UP_SUM + dt))
	[ $dt -gt $ST_UP_MAX ] && ST_UP_MAX=$dt
	return 0
}
st_oper_up() { ip -n "$1" -o link show "$2" 2>/dev/null | grep -q 'state UP'; }

# st_resume WHAT: a disturbance (WHAT) has just ended: wait for the sink to
# count a new datagram; record the time it took, fail beyond ST_RESUME_MS.
# Waits up to 10 s so that a slow return is reported with its real time.
st_resume() {
	local t0 v0 dt
	t0=$(st_ms)
	st_rx || fail "$1: cannot read the sink's counters"
	v0=$RX
	while :; do
		st_rx
		[ "$RX" -gt "$v0" ] && break
		dt=$(($(st_ms) - t0))
		[ $dt -gt 10000 ] && fail "$1: traffic did not resume within 10 s"
		st_nap 0.005
	done
	dt=$(($(st_ms) - t0))
	[ $dt -gt $ST_RESUME_MS ] && fail "$1: traffic resumed only after $dt ms (> $ST_RESUME_MS)"
	ST_RES_N=$((ST_RES_N + 1))
	ST_RES_SUM=$((ST_RES_SUM + dt))
	if [ $dt -ge $ST_RES_MAX ]; then
		ST_RES_MAX=$dt
		ST_RES_WHAT=$1
	fi
}

st_resume_report() {
	[ $ST_UP_N -gt 0 ] && log "links operationally up again $ST_UP_N times after:" \
		"mean $((ST_UP_SUM / ST_UP_N)) ms, max $ST_UP_MAX ms (kernel linkwatch; not counted below)"
	[ $ST_RES_N -gt 0 ] || return 0
	log "traffic resumed after $ST_RES_N disturbances: mean $((ST_RES_SUM / ST_RES_N)) ms," \
		"max $ST_RES_MAX ms ($ST_RES_WHAT); limit $ST_RESUME_MS ms"
}

# --- readers (scenario 6: concurrent monitor and dumps) ----------------------

# (st_readers_stop kills the loops and their ip with SIGKILL: no traps)
st_monitor_loop() {
	while :; do
		ip -n "$1" xfrm monitor >>"$ST_TMP/monitor.$1" 2>&1
		st_nap 0.2
	done
}

# a round of dumps, then a pause as long as the round took (at least 0.5 s):
# with 10,000 entries a round takes seconds, and a reader hogging a CPU of
# the two would only measure the VM
st_dump_loop() {
	local t0 dt
	while :; do
		t0=$(st_ms)
		ip -n "$1" -s xfrm state >/dev/null 2>&1
		ip -n "$1" -s xfrm policy >/dev/null 2>&1
		echo >>"$ST_TMP/dumps.$1"
		dt=$(($(st_ms) - t0))
		[ $dt -lt 500 ] && dt=500
		st_nap "$((dt / 1000)).$(printf %03d $((dt % 1000)))"
	done
}

st_readers_start() {
	local ns
	for ns in "$@"; do
		st_monitor_loop "$ns" &
		ST_READERS[$ns]=$!
		st_dump_loop "$ns" &
		ST_READERS[$ns]="${ST_READERS[$ns]} $!"
	done
}

# st_readers_stop [NS...]: stop the readers of NS (default: all)
st_readers_stop() {
	local ns p
	[ $# -gt 0 ] || set -- "${!ST_READERS[@]}"
	for ns in "$@"; do
		[ -n "${ST_READERS[$ns]:-}" ] || continue
		# stopped first: a loop killed between forking its ip and
		# noting the pid would leave that ip running (in NS, keeping
		# it alive after an ip netns del); stopped, it forks no more.
		# Then SIGKILL, children first: no trap runs (bash 5.2 can
		# fail to parse a TERM trap caught inside a $(...), and the
		# loop then never exits)
		for p in ${ST_READERS[$ns]}; do
			kill -STOP "$p" 2>/dev/null
			pkill -KILL -P "$p" 2>/dev/null
			kill -KILL "$p" 2>/dev/null
			wait "$p" 2>/dev/null
		done
		unset "ST_READERS[$ns]"
	done
}

# st_readers_pause, st_readers_cont: SIGSTOP, then SIGCONT, every reader
# loop and the ip it may be running.  A dump held mid-way keeps only its
# walker entry in the kernel, no lock.
st_readers_signal() {
	local p
	# shellcheck disable=SC2068 # each entry: the pids of a namespace's loops
	for p in ${ST_READERS[@]}; do
		kill -"$1" "$p" 2>/dev/null
		pkill -"$1" -P "$p" 2>/dev/null
	done
	return 0
}
st_readers_pause() { st_readers_signal STOP; }
st_readers_cont() { st_readers_signal CONT; }

st_readers_report() {
	local ns d m
	for ns in "$@"; do
		# shellcheck disable=SC2002 # a missing file counts 0 lines
		d=$(cat "$ST_TMP/dumps.$ns" 2>/dev/null | wc -l)
		# shellcheck disable=SC2002 # a missing file counts 0 lines
		m=$(cat "$ST_TMP/monitor.$ns" 2>/dev/null | wc -l)
		log "readers in $ns: $d rounds of ip -s xfrm state + policy dumps, $m lines of ip xfrm monitor"
		[ "$d" -gt 0 ] || fail "the dump loop in $ns never completed a round"
	done
}

# --- time bounds ---------------------------------------------------------------

# st_deadline: start the churn clock (XNC_STRESS_SECS)
st_deadline() { ST_END=$((SECONDS + ST_SECS)); }
# st_more ROUND: go on with round ROUND?  Until the deadline, or, for the
# counted churns (COUNTED=1), until XNC_STRESS_ROUNDS rounds at least;
# never more than 50 of those.
st_more() {
	if [ "${COUNTED:-0}" = 1 ]; then
		[ "$1" -le 50 ] || return 1
		[ "$1" -le "$ST_ROUNDS" ] && return 0
	fi
	[ $SECONDS -lt "$ST_END" ]
}

# --- setup and end checks ------------------------------------------------------

st_cleanup() {
	st_readers_stop
	st_traffic_stop >/dev/null
	st_gw_anchor_stop
	[ -n "${ST_BG:-}" ] && kill "$ST_BG" 2>/dev/null && wait "$ST_BG" 2>/dev/null
	exec {ST_NAPFD}>&-
	rm -rf "$ST_TMP"
}

st_setup() {
	at_exit st_cleanup
	log "scenario bound: ${ST_SECS} s (XNC_STRESS_SECS); counted churns: at least $ST_ROUNDS rounds (XNC_STRESS_ROUNDS), at most 50"
	ST_DST0=$(st_slab $ST_DST_SLAB)
	ST_STATE0=$(st_slab xfrm_state)
	st_write_batches
	{ ip netns add src && ip -n src link set lo up; } || fail "cannot create src"
	{ ip netns add sink && ip -n sink link set lo up; } || fail "cannot create sink"
	{ ip -n sink link add d0 type dummy && ip -n sink link set d0 up &&
		ip -n sink -batch "$ST_TMP/sink-addr"; } || fail "cannot set up sink"
	st_gw_up || fail "cannot set up gw"
	st_xfrm_base sink || fail "cannot set up sink's SAs and policies"
	st_links_up src/s0 gw/g0 gw/g1 sink/k1
	ST_CNT_GW=$(st_counts gw)
	ST_CNT_SINK=$(st_counts sink)
	log "baseline: slab $ST_DST_SLAB $ST_DST0, xfrm_state $ST_STATE0;" \
		"gw $ST_CNT_GW; sink $ST_CNT_SINK"
	log "$ST_DST_SLAB holds IPv4 and IPv6 bundles alike (no IPv6 cache):" \
		"$(readlink /sys/kernel/slab/$ST_DST_SLAB), merged with" \
		"$(cat /sys/kernel/slab/$ST_DST_SLAB/aliases) other caches"
	xnc_load || fail "load failed"
}

# st_finish: the scenario has put the base configuration back
st_finish() {
	local dst state gwc sinkc lookups transformed bundles errors out ns
	st_resume "end of scenario"
	out=$(st_all_sas_flow) || fail "after the scenario: $out"
	st_settle gw "$ST_CNT_GW"
	gwc=$ST_SETTLED
	st_settle sink "$ST_CNT_SINK"
	sinkc=$ST_SETTLED
	log "counts after: gw $gwc; sink $sinkc"
	expect_eq "gw SA/policy counts after the scenario" "$gwc" "$ST_CNT_GW"
	expect_eq "sink SA/policy counts after the scenario" "$sinkc" "$ST_CNT_SINK"
	st_readers_report "${!ST_READERS[@]}"
	st_readers_stop
	st_traffic_stop
	st_resume_report
	if mod_loaded; then
		st_nap 0.2	# traffic stopped: the counters hold still
		lookups=$(st_gw_stat Lookups)
		transformed=$(st_gw_stat Transformed)
		bundles=$(st_gw_stat BundlesCreated)
		errors=$(st_gw_stat Errors)
		log "module counters in gw: Lookups $lookups, Transformed $transformed," \
			"BundlesCreated $bundles, Errors $errors"
		expect_eq "gw BundlesCreated (== Transformed: no reuse)" "$bundles" "$transformed"
	fi
	for ns in gw sink; do
		ip -n $ns xfrm policy flush
		ip -n $ns xfrm state flush
	done
	# bundles are freed after an RCU grace period, SAs by a work item
	wait_for 10 st_slab_back
	dst=$(st_slab $ST_DST_SLAB)
	state=$(st_slab xfrm_state)
	log "slab after the flush: $ST_DST_SLAB $ST_DST0 -> $dst, xfrm_state $ST_STATE0 -> $state"
	[ "$dst" -le "$ST_DST0" ] || fail "$ST_DST_SLAB: $dst objects after the flush, $ST_DST0 before (leaked bundles)"
	[ "$state" -le "$ST_STATE0" ] || fail "xfrm_state: $state objects after the flush, $ST_STATE0 before (leaked SAs)"
	expect_eq "gw counts after the flush" "$(st_counts gw)" "sa=0 pol=in:0/out:0/fwd:0"
	xnc_unload || fail "unload failed after the scenario"
	log "scenario took $((SECONDS - ST_START)) s"
}
