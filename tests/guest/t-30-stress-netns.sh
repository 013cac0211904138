#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stress, namespaces (topology: stress-lib.sh).  The gateway namespace,
# with its 32 tunnels, forwarding traffic and its own monitor and dump
# readers, is deleted (ip netns del) and built afresh, round after round:
# for XNC_STRESS_SECS, and at least XNC_STRESS_ROUNDS rounds (make stress:
# 50), at most 50.  Each deletion must complete within 10 s: the namespace
# really freed (net_namespace slab objects back to the count before it was
# made: our per-namespace counters and proc files go in its exit, before
# the free), not listed by ip netns, its veth peers gone from src and sink.
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

st_setup
st_readers_start sink
st_traffic_start

round=0 del_max=0 del_sum=0 lookups=0
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
	objs=$(ns_objs)
	t0=$(st_ms)
	ip netns del gw || fail "round $round: ip netns del failed"
	wait_for 10 gone $((objs - 1)) ||
		fail "round $round: namespace not freed within 10 s (net_namespace objects $(ns_objs), want <= $((objs - 1)))"
	dt=$(($(st_ms) - t0))
	del_sum=$((del_sum + dt))
	[ $dt -gt $del_max ] && del_max=$dt
	# and a new one
	st_gw_up || fail "round $round: cannot build a new gateway"
	st_links_up src/s0 gw/g0 gw/g1 sink/k1
	st_resume "new gateway (round $round)"
done
log "$round gateway namespaces deleted and rebuilt under traffic; deletion (until freed): mean $((del_sum / round)) ms, max $del_max ms; $lookups lookups through them"
st_readers_start gw
sleep 1
st_finish
echo "$round namespaces with 32 tunnels deleted under traffic, each freed within ${del_max} ms"
