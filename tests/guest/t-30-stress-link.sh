#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stress, interfaces (topology: stress-lib.sh; traffic through 32 tunnel
# SAs, monitor and dump readers in gw and sink throughout).  For
# XNC_STRESS_SECS, in turn: gw's underlay toward sink (g1) down and up;
# that veth deleted and created again; gw's link toward src (g0) down and
# up; that veth deleted and created again.  Addresses and routes are put
# back as a routing daemon would; SAs and policies are left alone and must
# survive.  Traffic must be back within 1 s of each, counted from when
# the links are operationally up again (st_links_up: the kernel's own delay
# for that, up to a second, is reported apart); the module's notifier sees
# every NETDEV_DOWN and flushes nothing (no SA is offloaded).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/stress-lib.sh"

st_setup
st_readers_start gw sink
st_traffic_start

ev0=$(st_gw_stat NotifierEvents)
round=0 downs=0 recreated=0
st_deadline
while st_more $((round + 1)); do
	round=$((round + 1))
	case $((round % 4)) in
	1)	# underlay down/up: the route through it goes with it
		ip -n gw link set g1 down || fail "round $round: g1 down"
		ip -n gw link set g1 up || fail "round $round: g1 up"
		ip -n gw route replace 10.2.0.0/16 via 192.168.100.2 ||
			fail "round $round: route back"
		downs=$((downs + 1))
		st_links_up gw/g1 sink/k1
		st_resume "g1 down/up (round $round)"
		;;
	2)	# underlay deleted and made again
		ip -n gw link del g1 || fail "round $round: cannot delete g1"
		st_link_sink || fail "round $round: cannot re-create g1/k1"
		recreated=$((recreated + 1))
		st_links_up gw/g1 sink/k1
		st_resume "g1/k1 re-created (round $round)"
		;;
	3)	# inner side down/up
		ip -n gw link set g0 down || fail "round $round: g0 down"
		ip -n gw link set g0 up || fail "round $round: g0 up"
		downs=$((downs + 1))
		st_links_up gw/g0 src/s0
		st_resume "g0 down/up (round $round)"
		;;
	0)
		ip -n src link del s0 || fail "round $round: cannot delete s0"
		st_link_src || fail "round $round: cannot re-create s0/g0"
		recreated=$((recreated + 1))
		st_links_up gw/g0 src/s0
		st_resume "s0/g0 re-created (round $round)"
		;;
	esac
done
ev=$(($(st_gw_stat NotifierEvents) - ev0))
log "churn: $round rounds in $ST_SECS s: $downs down/up, $recreated veths re-created;" \
	"module notifier: $ev NETDEV_DOWN events in gw, SAsFlushed $(st_gw_stat SAsFlushed)"
expect_ge "NETDEV_DOWN events seen by the module in gw" "$ev" $((downs + recreated))
expect_eq "software SAs flushed by the notifier" "$(st_gw_stat SAsFlushed)" 0
st_finish
echo "interface churn: $round rounds; SAs and policies survived, traffic back within 1 s every time"
