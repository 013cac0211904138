#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The differential cases (see diff-lib.sh for the topology and how a case
# is run).  Each case_NAME sets up, probes and prints observations; expect
# states what stock 6.1 does.  DIFF_CASES lists them in run order.

A4=10.0.0.1 B4=10.0.0.2 A6=fd00::1 B6=fd00::2

# both directions, both namespaces: SAs a->b 0x100, b->a 0x200, out policies
esp_both() {
	local mode=$1 a=$2 b=$3 extra=${4:-}
	pair
	# beet carries the inner addresses in the SA's selector
	sa "a b" "$a" "$b" 0x100 "$mode" sel src "$a" dst "$b"
	sa "a b" "$b" "$a" 0x200 "$mode" sel src "$b" dst "$a"
	# shellcheck disable=SC2086 # extra: ip xfrm policy words, none if empty
	pol a src "$a" dst "$b" dir out $extra tmpl src "$a" dst "$b" proto esp mode "$mode"
	# shellcheck disable=SC2086 # extra: ip xfrm policy words, none if empty
	pol b src "$b" dst "$a" dir out $extra tmpl src "$b" dst "$a" proto esp mode "$mode"
	# tunnel and beet: decapsulated packets must match an inbound policy
	pol a src "$b" dst "$a" dir in tmpl src "$b" dst "$a" proto esp mode "$mode"
	pol b src "$a" dst "$b" dir in tmpl src "$a" dst "$b" proto esp mode "$mode"
}

case_esp4_transport() {
	esp_both transport $A4 $B4
	expect ping "$(pings a $B4 3)" 3
	udp a $B4
	expect "SA a->b" "$(sa_packets b 0x100)" 6
}

case_esp4_tunnel() {
	esp_both tunnel $A4 $B4
	expect ping "$(pings a $B4 3)" 3
	udp a $B4
	expect "SA a->b" "$(sa_packets b 0x100)" 6
}

case_esp6_transport() {
	esp_both transport $A6 $B6
	expect ping "$(pings a $B6 3)" 3
	udp a $B6
	expect "SA a->b" "$(sa_packets b 0x100)" 6
}

case_esp6_tunnel() {
	esp_both tunnel $A6 $B6
	expect ping "$(pings a $B6 3)" 3
	expect "SA a->b" "$(sa_packets b 0x100)" 3
}

# IPv4 inside an IPv6 tunnel, and IPv6 inside IPv4
case_tunnel_4in6() {
	pair
	sa "a b" $A6 $B6 0x100 tunnel sel src $A4 dst $B4
	sa "a b" $B6 $A6 0x200 tunnel sel src $B4 dst $A4
	pol a src $A4 dst $B4 dir out tmpl src $A6 dst $B6 proto esp mode tunnel
	pol b src $B4 dst $A4 dir out tmpl src $B6 dst $A6 proto esp mode tunnel
	pol a src $B4 dst $A4 dir in tmpl src $B6 dst $A6 proto esp mode tunnel
	pol b src $A4 dst $B4 dir in tmpl src $A6 dst $B6 proto esp mode tunnel
	expect ping "$(pings a $B4 3)" 3
	expect "SA a->b" "$(sa_packets b 0x100)" 3
}

case_tunnel_6in4() {
	pair
	sa "a b" $A4 $B4 0x100 tunnel sel src $A6 dst $B6
	sa "a b" $B4 $A4 0x200 tunnel sel src $B6 dst $A6
	pol a src $A6 dst $B6 dir out tmpl src $A4 dst $B4 proto esp mode tunnel
	pol b src $B6 dst $A6 dir out tmpl src $B4 dst $A4 proto esp mode tunnel
	pol a src $B6 dst $A6 dir in tmpl src $B4 dst $A4 proto esp mode tunnel
	pol b src $A6 dst $B6 dir in tmpl src $A4 dst $B4 proto esp mode tunnel
	expect ping "$(pings a $B6 3)" 3
	expect "SA a->b" "$(sa_packets b 0x100)" 3
}

case_beet4() {
	esp_both beet $A4 $B4
	expect ping "$(pings a $B4 3)" 3
	expect "SA a->b" "$(sa_packets b 0x100)" 3
}

# two transforms in one bundle: AH over ESP, and IPcomp then ESP
case_nested_ah_esp() {
	pair
	local n
	for n in a b; do
		ip -n $n xfrm state add src $A4 dst $B4 proto ah spi 0x300 mode transport \
			auth 'hmac(sha256)' "$KEY"
		ip -n $n xfrm state add src $B4 dst $A4 proto ah spi 0x400 mode transport \
			auth 'hmac(sha256)' "$KEY"
	done
	sa "a b" $A4 $B4 0x100 transport
	sa "a b" $B4 $A4 0x200 transport
	pol a src $A4 dst $B4 dir out tmpl proto esp mode transport tmpl proto ah mode transport
	pol b src $B4 dst $A4 dir out tmpl proto esp mode transport tmpl proto ah mode transport
	expect ping "$(pings a $B4 3)" 3
	expect "ESP a->b" "$(sa_packets b 0x100)" 3
	expect "AH a->b" "$(sa_packets b 0x300)" 3
}

case_nested_comp_esp() {
	pair
	local n
	for n in a b; do
		ip -n $n xfrm state add src $A4 dst $B4 proto comp spi 0x300 mode transport comp deflate
		ip -n $n xfrm state add src $B4 dst $A4 proto comp spi 0x400 mode transport comp deflate
	done
	sa "a b" $A4 $B4 0x100 transport
	sa "a b" $B4 $A4 0x200 transport
	pol a src $A4 dst $B4 dir out tmpl proto comp mode transport level use \
		tmpl proto esp mode transport
	pol b src $B4 dst $A4 dir out tmpl proto comp mode transport level use \
		tmpl proto esp mode transport
	# 1200-byte pings compress; IPcomp's CPI is the SA's spi
	expect ping "$(pings a $B4 3 -s 1200 -p 41)" 3
	expect "ESP a->b" "$(sa_packets b 0x100)" 3
}

case_block() {
	pair
	pol a src $A4 dst $B4 dir out action block
	expect udp "$(udp a $B4)" "sent=0 errno=EPERM x3 received=0"
	expect XfrmOutPolBlock "$(mib XfrmOutPolBlock a)" 3
	pings a $B4 2
}

# no policy, but the namespace's default for output is block
case_default_block() {
	pair
	ip -n a xfrm policy setdefault out block
	expect udp "$(udp a $B4)" "sent=0 errno=EPERM x3 received=0"
	# loopback is exempt
	expect "loopback ping" "$(pings a 127.0.0.1 2)" 2
	# an allow policy lets its flow through
	pol a src $A4 dst $B4 proto udp dir out
	expect "udp with allow policy" "$(udp a $B4)" "sent=3 received=3"
}

# ICMP errors for a flow under a policy (XFRM_LOOKUP_ICMP): sent through
# the SA only when the policy has the icmp flag; otherwise in the clear.
icmp_case() {
	local flag=$1
	pair
	sa "a b" $B4 $A4 0x200 transport
	# shellcheck disable=SC2086 # flag: "flag icmp" or none
	pol b src $B4 dst $A4 proto udp dir out $flag tmpl proto esp mode transport
	# UDP to a closed port of b: b answers port-unreachable
	ip netns exec a "$XSEND" -n 2 $B4 6000
	sleep 0.5
}

case_icmp_flag() {
	icmp_case "flag icmp"
	expect "ICMP errors through the SA" "$(sa_packets a 0x200)" 2
}

case_icmp_noflag() {
	icmp_case ""
	expect "ICMP errors through the SA" "$(sa_packets a 0x200)" 0
}

# a policy without SAs: larval_drop=1 blackholes and counts no-states
case_larval_drop() {
	pair
	ip netns exec a sysctl -qw net.core.xfrm_larval_drop=1
	pol a src $A4 dst $B4 dir out tmpl proto esp mode transport
	# a key manager listening: each lookup without SA sends an ACQUIRE
	ip -n a xfrm monitor acquire >/tmp/acquire.mon &
	local m=$!
	sleep 0.5
	expect ping "$(pings a $B4 2)" 0
	expect "udp" "$(udp a $B4)" "sent=3 received=0"
	kill $m
	wait $m 2>/dev/null
	expect "ACQUIREs seen" "$(grep -c '^acquire' /tmp/acquire.mon)" 1
	expect "larval states" "$(ip -n a xfrm state | grep -c '^src')" 1
}

# larval_drop=0: packets wait in the policy's queue until the SA exists
case_queue() {
	pair
	ip netns exec a sysctl -qw net.core.xfrm_larval_drop=0
	sa b $A4 $B4 0x100 transport
	sa "a b" $B4 $A4 0x200 transport
	pol a src $A4 dst $B4 dir out tmpl proto esp mode transport
	pol b src $B4 dst $A4 dir out tmpl proto esp mode transport
	ip netns exec a ping -c 1 -W 10 $B4 >/tmp/queue.ping 2>&1 &
	local p=$!
	sleep 1
	expect "held, not sent" "$(sa_packets b 0x100)" 0
	ip -n a xfrm state add src $A4 dst $B4 proto esp spi 0x100 mode transport \
		aead 'rfc4106(gcm(aes))' "$KEY" 128
	wait $p
	expect "queued ping answered" "$(sed -n 's/.* \([0-9]*\) received.*/\1/p' /tmp/queue.ping)" 1
	expect "SA a->b" "$(sa_packets b 0x100)" 1
}

# disable_xfrm on the output device: DST_NOXFRM routes skip the lookup
case_noxfrm() {
	esp_both transport $A4 $B4
	# b takes a's packets in the clear
	ip -n b xfrm policy del src $A4 dst $B4 dir in
	ip netns exec a sysctl -qw net.ipv4.conf.va.disable_xfrm=1
	ip -n a route flush cache 2>/dev/null
	expect ping "$(pings a $B4 3)" 3
	expect "SA a->b (bypassed)" "$(sa_packets b 0x100)" 0
}

# an xfrm interface: policies and SAs with if_id, routed through ipsec0
case_ifid() {
	pair
	ip -n b addr add 10.7.0.2/32 dev lo
	ip -n a link add ipsec0 type xfrm dev va if_id 7
	ip -n a link set ipsec0 up
	ip -n a route add 10.7.0.0/24 dev ipsec0
	sa "a b" $A4 $B4 0x100 tunnel if_id 7
	pol a src 0.0.0.0/0 dst 10.7.0.0/24 dir out if_id 7 \
		tmpl src $A4 dst $B4 proto esp mode tunnel
	pol b src 0.0.0.0/0 dst 10.7.0.0/24 dir in \
		tmpl src $A4 dst $B4 proto esp mode tunnel
	expect "udp via ipsec0" "$(udp a 10.7.0.2)" "sent=3 received=3"
	expect "SA a->b" "$(sa_packets b 0x100)" 3
	# the same policy without if_id does not apply to ipsec0 traffic
	expect "plain route untouched" "$(pings a $B4 2)" 2
}

case_mark() {
	pair
	sa a $A4 $B4 0x100 transport mark 0x10 mask 0xff
	sa b $A4 $B4 0x100 transport
	pol a src $A4 dst $B4 dir out mark 0x10 mask 0xff tmpl proto esp mode transport
	expect "marked udp" "$(udp a $B4 -m 16)" "sent=3 received=3"
	expect "SA a->b" "$(sa_packets b 0x100)" 3
	expect "unmarked udp (no policy)" "$(udp a $B4)" "sent=3 received=3"
	expect "SA a->b after unmarked" "$(sa_packets b 0x100)" 3
}

# per-socket policies: a bypass socket passes a namespace policy whose SA is
# missing; a transforming socket policy uses an SA with no global policy
case_socket_bypass() {
	pair
	ip netns exec a sysctl -qw net.core.xfrm_larval_drop=1
	pol a src $A4 dst $B4 dir out tmpl proto esp mode transport
	expect "plain socket" "$(udp a $B4)" "sent=3 received=0"
	expect "bypass socket" "$(udp a $B4 -P bypass)" "sent=3 received=3"
}

case_socket_esp() {
	pair
	sa "a b" $A4 $B4 0x100 transport
	expect "esp socket" "$(udp a $B4 -P esp-transport)" "sent=3 received=3"
	expect "SA a->b" "$(sa_packets b 0x100)" 3
	expect "plain socket" "$(udp a $B4)" "sent=3 received=3"
	expect "SA a->b after plain" "$(sa_packets b 0x100)" 3
}

case_socket_esp6() {
	pair
	sa "a b" $A6 $B6 0x100 transport
	expect "esp socket" "$(udp a $B6 -P esp-transport)" "sent=3 received=3"
	expect "SA a->b" "$(sa_packets b 0x100)" 3
}

# sub policies (CONFIG_XFRM_SUB_POLICY): a sub policy that allows is
# combined with the main policy it refines; one that blocks wins
case_sub_policy() {
	pair
	local n
	for n in a b; do
		ip -n $n xfrm state add src $A4 dst $B4 proto ah spi 0x300 mode transport \
			auth 'hmac(sha256)' "$KEY"
	done
	sa "a b" $A4 $B4 0x100 transport
	pol a src $A4 dst $B4 dir out ptype sub tmpl proto esp mode transport
	pol a src $A4 dst $B4 dir out ptype main tmpl proto ah mode transport
	expect udp "$(udp a $B4)" "sent=3 received=3"
	expect "ESP (sub)" "$(sa_packets b 0x100)" 3
	expect "AH (main)" "$(sa_packets b 0x300)" 3
}

case_sub_block() {
	pair
	pol a src $A4 dst $B4 dir out ptype sub action block
	pol a src $A4 dst $B4 dir out ptype main
	expect udp "$(udp a $B4)" "sent=0 errno=EPERM x3 received=0"
}

# a sub policy that blocks, added and removed while a flow runs: the
# datagrams sent after each change, however it was made (add, delete,
# flush, hard expiry), meet the new policy set at once
case_sub_live() {
	esp_both transport $A4 $B4
	local blocked="sent=0 errno=EPERM x3 received=0"
	expect "main only" "$(udp a $B4)" "sent=3 received=3"
	pol a src $A4 dst $B4 dir out ptype sub action block
	expect "sub added" "$(udp a $B4)" "$blocked"
	ip -n a xfrm policy del src $A4 dst $B4 dir out ptype sub
	expect "sub deleted" "$(udp a $B4)" "sent=3 received=3"
	pol a src $A4 dst $B4 dir out ptype sub action block
	expect "sub added again" "$(udp a $B4)" "$blocked"
	ip -n a xfrm policy flush ptype sub
	expect "subs flushed" "$(udp a $B4)" "sent=3 received=3"
	pol a src $A4 dst $B4 dir out ptype sub action block \
		limit time-hard $((4 * XNC_SLOW))
	expect "sub with a lifetime" "$(udp a $B4)" "$blocked"
	# shellcheck disable=SC2016 # expanded by sh -c
	wait_for $((15 * XNC_SLOW)) sh -c \
		'[ -z "$(ip -n a xfrm policy list ptype sub)" ]' ||
		echo "EXPECT-FAIL the sub policy did not expire"
	expect "sub expired" "$(udp a $B4)" "sent=3 received=3"
	# an inbound sub policy does not apply to output
	pol a src $A4 dst $B4 dir in ptype sub action block
	expect "inbound sub" "$(udp a $B4)" "sent=3 received=3"
}

# per case: module counters that must have moved (namespace a, or NS:Name)
# shellcheck disable=SC2034 # used by diff_case (diff-lib.sh)
declare -A WANT=(
	[esp4_transport]="Transformed BundlesCreated LookupsIPv4"
	[esp6_transport]="Transformed BundlesCreated LookupsIPv6"
	[esp4_tunnel]="Transformed" [esp6_tunnel]="Transformed"
	[tunnel_4in6]="Transformed" [tunnel_6in4]="Transformed" [beet4]="Transformed"
	[nested_ah_esp]="Transformed" [nested_comp_esp]="Transformed"
	[block]="Blocked Errors" [default_block]="DefaultBlock Errors NoPolicy"
	[icmp_flag]="b:Transformed" [icmp_noflag]="b:IcmpRefused"
	[larval_drop]="NoStates Errors" [queue]="Queued"
	[noxfrm]="NoPolicy" [ifid]="Transformed" [mark]="Transformed NoPolicy"
	[socket_bypass]="SocketPolicy PassUntransformed NoStates"
	[socket_esp]="SocketPolicy Transformed" [socket_esp6]="SocketPolicy Transformed"
	[sub_policy]="Transformed SubPolicySearches" [sub_block]="Blocked"
	[sub_live]="Blocked Transformed SubPolicySearches"
)

# shellcheck disable=SC2034 # used by t-10-differential.sh
DIFF_CASES="esp4_transport esp4_tunnel esp6_transport esp6_tunnel tunnel_4in6
tunnel_6in4 beet4 nested_ah_esp nested_comp_esp block default_block icmp_flag
icmp_noflag larval_drop queue noxfrm ifid mark socket_bypass socket_esp
socket_esp6 sub_policy sub_block sub_live"
