#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Observability: the latency parameter refuses anything but a bool's words
# (at load and at runtime), the histogram exists and fills only while on,
# an ICMP error's reverse lookup with no policy counts as IcmpNoPolicy
# (not NoPolicy), and the xnc_lookup
# tracepoint reports each resolution with its fields (xfrms: the SAs
# resolved, fewer than the templates when one is optional and missing; ns:
# its duration with latency=1, 0 without: no clock read then); a
# socket policy whose SA is missing counts as NoStates.  Topology:
# diff-lib.sh.
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"
P=/sys/module/xfrm_nocache/parameters/latency
T=/sys/kernel/tracing

# bad values at load: the module must not load
for v in 2 -1 yes ""; do
	if insmod "$XNC_KO" latency="$v" 2>/dev/null; then
		xnc_unload
		fail "insmod latency='$v' was accepted"
	fi
	mod_loaded && fail "module left loaded after latency='$v'"
done
dmesg | grep -q "latency must be 0 or 1 (or n/y, off/on), not '2'" || fail "no message naming the bad value"

xnc_load || fail "load failed"
expect_eq "default" "$(cat $P)" N
for v in 2 yes 01x; do
	echo "$v" >$P 2>/dev/null && fail "latency='$v' accepted at runtime"
done
expect_eq "after refused writes" "$(cat $P)" N

pair
sa "a b" 10.0.0.1 10.0.0.2 0x100 transport
pol a src 10.0.0.1 dst 10.0.0.2 dir out tmpl proto esp mode transport
# shellcheck disable=SC2016 # awk program
hist() { ip netns exec a awk 'NR > 2 { n += $3 } END { print n + 0 }' /proc/net/xfrm_nocache_latency; }

udp a 10.0.0.2 >/dev/null
expect_eq "histogram while off" "$(hist)" 0
# every entry is a lookup finished while on: at least the 3 datagrams,
# at most every lookup of the namespace since just before switching on
l0=$(xnc_stat Lookups a)
echo 1 >$P || fail "latency=1 refused"
ip netns exec a grep -q "latency on" /proc/net/xfrm_nocache_latency || fail "file does not say on"
udp a 10.0.0.2 >/dev/null
# the namespace's own packets (IPv6 autoconf, say) are lookups too and may
# come at any moment while on: lookups read after the histogram
h=$(hist)
l=$(($(xnc_stat Lookups a) - l0))
expect_ge "histogram entries while on" "$h" 3
expect_ge "lookups while on (>= histogram entries)" "$l" "$h"
# a namespace made while on has its own histogram
ip netns add c
ip -n c link set lo up
ip netns exec c ping -q -c 2 -W 1 127.0.0.1 >/dev/null
# shellcheck disable=SC2016 # awk program
[ "$(ip netns exec c awk 'NR > 2 { n += $3 } END { print n + 0 }' /proc/net/xfrm_nocache_latency)" -ge 1 ] ||
	fail "no histogram entries in a namespace created while on"
ip netns del c
# off: the histograms are freed, and stay empty
echo 0 >$P
ip netns exec a grep -q "latency off" /proc/net/xfrm_nocache_latency || fail "file does not say off"
expect_eq "histogram after switching off" "$(hist)" 0
udp a 10.0.0.2 >/dev/null
expect_eq "histogram while off again" "$(hist)" 0

# an ICMP error with no policy on its way back: b has no outbound policy;
# each port unreachable it sends makes an ICMP reverse lookup (-ENOENT)
i0=$(xnc_stat IcmpNoPolicy b)
ip netns exec a "$XSEND" -n 3 10.0.0.2 5999 >/dev/null
icmp_counted() { [ "$(xnc_stat IcmpNoPolicy b)" -ge $((i0 + 3)) ]; }
wait_for 5 icmp_counted ||
	fail "IcmpNoPolicy in b: $(xnc_stat IcmpNoPolicy b), want $((i0 + 3))"

# tracepoint
[ -d $T/events/xfrm_nocache/xnc_lookup ] || fail "no tracepoint xfrm_nocache:xnc_lookup"
echo >$T/trace
echo 1 >$T/events/xfrm_nocache/xnc_lookup/enable
udp a 10.0.0.2 >/dev/null
echo 0 >$T/events/xfrm_nocache/xnc_lookup/enable
inum=$(stat -L -c %i /run/netns/a)
ev=$(grep -m1 "xnc_lookup: netns=$inum family=ipv4 src=10.0.0.1 dst=10.0.0.2 " $T/trace)
[ -n "$ev" ] || { head -n 20 $T/trace; fail "no xnc_lookup event for a's flow"; }
# latency=0: no clock read, so no duration
echo "$ev" | grep -qE "if_id=0 pols=1 xfrms=1 result=Transformed err=0 ns=0$" ||
	fail "unexpected event fields (latency=0): $ev"
n=$(grep -c "xnc_lookup: netns=$inum family=ipv4 src=10.0.0.1 dst=10.0.0.2 .*result=Transformed" $T/trace)
expect_eq "events for 3 datagrams" "$n" 3
# latency=1: every event has its resolution's duration
echo >$T/trace
echo 1 >$P
echo 1 >$T/events/xfrm_nocache/xnc_lookup/enable
udp a 10.0.0.2 >/dev/null
echo 0 >$T/events/xfrm_nocache/xnc_lookup/enable
echo 0 >$P
evs=$(grep "xnc_lookup: netns=$inum family=ipv4 src=10.0.0.1 dst=10.0.0.2 .*result=Transformed" $T/trace)
expect_eq "events for 3 datagrams, latency=1" "$(echo "$evs" | grep -c .)" 3
echo "$evs" | grep -vqE " ns=[1-9][0-9]*$" && fail "an event without its duration (latency=1): $evs"
# the operator's view: rates over 1 s while traffic flows (from before
# xfrm-nocache-stats starts until it is done, however long that takes)
ip netns exec a ping -q -i 0.05 10.0.0.2 >/dev/null &
pp=$!
sleep 0.5
out=$("$XNC_TOP/scripts/xfrm-nocache-stats" -n a 1)
kill -INT $pp
wait $pp
echo "$out"
echo "$out" | grep -qE '^Transformed +[0-9]+ +[1-9][0-9.]*$' || fail "xfrm-nocache-stats shows no Transformed rate"
echo "$out" | grep -q 'resolution latency histogram (on' && fail "histogram claims on"
"$XNC_TOP/scripts/xfrm-nocache-stats" -n a x 2>/dev/null && fail "xfrm-nocache-stats accepted interval 'x'"

# a socket policy whose SA is missing: -EAGAIN, as stock, with no MIB
# counter (stock counts XfrmOutNoStates only for namespace policies);
# counted as NoStates, like a namespace policy's, not as BundleError
ns0=$(xnc_stat NoStates a); be0=$(xnc_stat BundleError a)
mib0=$(mib XfrmOutNoStates a)
ip -n a xfrm state flush
expect_eq "socket policy, SA missing" "$(udp a 10.0.0.2 -P esp-transport)" \
	"sent=0 errno=EAGAIN x3 received=0"
expect_eq "NoStates (socket policy, SA missing)" "$(xnc_stat NoStates a)" $((ns0 + 3))
expect_eq "BundleError (socket policy, SA missing)" "$(xnc_stat BundleError a)" "$be0"
expect_eq "XfrmOutNoStates (socket policy: none, as stock)" "$(mib XfrmOutNoStates a)" "$mib0"

# the event counts the transforms resolved, not the templates: an optional
# IPcomp template ("level use") without SA, then ESP with one: 1 SA used
ip -n a xfrm policy flush
sa a 10.0.0.1 10.0.0.2 0x100 transport
pol a src 10.0.0.1 dst 10.0.0.2 dir out tmpl proto comp mode transport level use \
	tmpl proto esp mode transport
echo >$T/trace
echo 1 >$T/events/xfrm_nocache/xnc_lookup/enable
out=$(udp a 10.0.0.2)
echo 0 >$T/events/xfrm_nocache/xnc_lookup/enable
expect_eq "optional template without SA" "$out" "sent=3 received=3"
expect_eq "packets of the one SA used" "$(sa_packets a 0x100)" 3
ev2=$(grep -m1 "xnc_lookup: netns=$inum family=ipv4 src=10.0.0.1 dst=10.0.0.2 " $T/trace)
echo "$ev2" | grep -qE "if_id=0 pols=1 xfrms=1 result=Transformed err=0 " ||
	fail "event for 2 templates, 1 SA resolved: $ev2"
echo "histogram $h entries for $l lookups; tracepoint: ${ev#*xnc_lookup: }"
