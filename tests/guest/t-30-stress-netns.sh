#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stress, namespaces (topology: stress-lib.sh).  The gateway namespace,
# with its 32 tunnels, forwarding traffic and its own monitor and dump
# readers, is deleted (ip netns del) and built afresh, round after round:
# for XNC_STRESS_SECS, and at least XNC_STRESS_ROUNDS rounds (make stress:
# 50), at most 50.  Each deletion must complete within 10 s (XNC_SLOW
# times that on a slower kernel, see lib.sh): not listed by ip netns, its
# veth peers gone from src and sink (its exit methods ran: our
# per-namespace counters and proc files go there too), and no more
# net_namespace slab objects than the other namespaces plus one.  The one:
# the kernel frees a dead namespace's struct net only at the start of the
# next cleanup (cleanup_net's defer_free_list, for an extra rcu_barrier), so
# a deletion frees the namespace deleted before it; a namespace leaked
# (a reference never dropped) shows as one object too many a round later.
# Each new gateway gets module counters of its own, that count its
# traffic, and traffic through it within 1 s of being configured (and its
# links operationally up, see st_links_up).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/stress-lib.sh"

ns_objs() { st_slab net_namespace; }
gw_counts() { [ "$(st_gw_stat Lookups)" -gt 0 ]; }
gone() {
	[ "$(ns_objs)" -le "$1" ] && ! ip netns list | grep -qw gw &&
		! ip -n src link show s0 >/dev/null 2>&1 &&
		! ip -n sink link show k1 >/dev/null 2>&1
}

# slow_free WANT T0: the deletion took too long (10 s; XNC_SLOW x that on a
# debug kernel): say what is left
# and where the kernel's workers are, then wait up to 60 s more for it
slow_free() {
	local p
	log "not complete after 10 s: net_namespace objects $(ns_objs) (want <= $1;" \
		"cache $(readlink -f /sys/kernel/slab/net_namespace | xargs basename)," \
		"aliases $(cat /sys/kernel/slab/net_namespace/aliases));" \
		"listed: $(ip netns list | grep -cw gw); s0: $(ip -n src -br link show s0 2>&1 | head -c 60);" \
		"k1: $(ip -n sink -br link show k1 2>&1 | head -c 60)"
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/net" 2>/dev/null)" = "net:[$gwino]" ] &&
			log "process ${p#/proc/} is still in the deleted gw: $(tr '\0' ' ' <"$p/cmdline")"
		grep -qE 'cleanup_net|netdev_run_todo|netdev_wait_allrefs|rcu_barrier|synchronize_rcu' \
			"$p/stack" 2>/dev/null || continue
		log "task ${p#/proc/} ($(cat "$p/comm")):"
		sed 's/^/#   /' "$p/stack"
	done
	if wait_for 60 gone "$1"; then
		log "complete after all, $(($(st_ms) - $2)) ms after ip netns del"
	else
		log "still not complete 70 s after ip netns del"
	fi
}

st_setup
st_readers_start sink
st_traffic_start
# the namespaces that stay (src, sink)
others=$(ip netns list | grep -cvw gw)

round=0 del_max=0 del_sum=0 lookups=0 strays=0
COUNTED=1
st_deadline
while st_more $((round + 1)); do
	round=$((round + 1))
	st_readers_start gw
	# traffic through this gateway, counted by its own module counters
	wait_for 5 gw_counts || fail "round $round: no lookups counted in the new gateway"
	lookups=$((lookups + $(st_gw_stat Lookups)))
	# delete it with everything in it
	st_readers_stop gw
	st_gw_anchor_stop
	# a reader's ip forked just as its loop was killed outlives the loop
	# and would keep gw alive: no process may be left in gw
	stray=$(ip netns pids gw)
	if [ -n "$stray" ]; then
		log "round $round: $(echo "$stray" | wc -w) reader process(es) left in gw:" \
			"$(for p in $stray; do tr '\0' ' ' <"/proc/$p/cmdline"; echo -n '; '; done)"
		# shellcheck disable=SC2086 # stray: pids, one a line
		kill $stray 2>/dev/null
		strays=$((strays + 1))
	fi
	# shellcheck disable=SC2016 # expanded by sh -c
	wait_for 5 sh -c '[ -z "$(ip netns pids gw)" ]' ||
		fail "round $round: processes still in gw: $(ip netns pids gw | tr '\n' ' ')"
	gwino=$(stat -L -c %i /run/netns/gw)
	t0=$(st_ms)
	ip netns del gw || fail "round $round: ip netns del failed"
	wait_for $((10 * XNC_SLOW)) gone $((others + 1)) || {
		slow_free $((others + 1)) "$t0"
		fail "round $round: deletion not complete within $((10 * XNC_SLOW)) s (net_namespace objects $(ns_objs), want <= $((others + 1)))"
	}
	dt=$(($(st_ms) - t0))
	del_sum=$((del_sum + dt))
	[ $dt -gt $del_max ] && del_max=$dt
	# and a new one
	st_gw_up || fail "round $round: cannot build a new gateway"
	st_links_up src/s0 gw/g0 gw/g1 sink/k1
	st_resume "new gateway (round $round)"
done
log "$round gateway namespaces deleted and rebuilt under traffic; deletion (until complete): mean $((del_sum / round)) ms, max $del_max ms; $lookups lookups through them;" \
	"reader processes left behind by their loops (killed before the deletion) in $strays rounds"
st_readers_start gw
sleep 1
st_finish
echo "$round namespaces with 32 tunnels deleted under traffic, each deletion complete within ${del_max} ms"
