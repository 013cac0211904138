#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The router case: traffic forwarded through a gateway with 32 tunnel-mode
# SAs, one per inner /24, resolved per packet; nothing is reused, so the
# gateway's BundlesCreated equals Transformed, and each SA carries exactly
# its subnet's packets.
#
#  +-------------+  s0      g0  +------------------+ g1      p1 +--------------+
#  | src         |--------------| gw (ip_forward)  |------------| peer         |
#  | 10.255.0.1  |              | 10.255.0.2       |  ESP x 32  | 192.168.100.2|
#  +-------------+              | 192.168.100.1    |            | 10.2.X.1 (X=1..32, dummy)
#                               +------------------+            +--------------+
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"
N=32
PER=3

for n in src gw peer; do ip netns add $n; ip -n $n link set lo up; done
ip link add s0 netns src type veth peer name g0 netns gw
ip link add g1 netns gw type veth peer name p1 netns peer
ip -n src addr add 10.255.0.1/24 dev s0; ip -n src link set s0 up
ip -n src route add default via 10.255.0.2
ip -n gw addr add 10.255.0.2/24 dev g0; ip -n gw link set g0 up
ip -n gw addr add 192.168.100.1/24 dev g1; ip -n gw link set g1 up
ip -n peer addr add 192.168.100.2/24 dev p1; ip -n peer link set p1 up
ip -n peer link add d0 type dummy; ip -n peer link set d0 up
ip -n peer route add 10.255.0.0/24 via 192.168.100.1
ip netns exec gw sysctl -qw net.ipv4.ip_forward=1
for x in $(seq 1 $N); do
	spi=$((0x1000 + x))
	ip -n peer addr add "10.2.$x.1/24" dev d0
	ip -n gw route add "10.2.$x.0/24" via 192.168.100.2
	for n in gw peer; do
		ip -n $n xfrm state add src 192.168.100.1 dst 192.168.100.2 proto esp \
			spi $spi reqid "$x" mode tunnel aead 'rfc4106(gcm(aes))' $KEY 128
	done
	ip -n gw xfrm policy add src 10.255.0.0/24 dst "10.2.$x.0/24" dir out \
		tmpl src 192.168.100.1 dst 192.168.100.2 proto esp reqid "$x" mode tunnel
	ip -n peer xfrm policy add src 10.255.0.0/24 dst "10.2.$x.0/24" dir in \
		tmpl src 192.168.100.1 dst 192.168.100.2 proto esp reqid "$x" mode tunnel
done
# resolve neighbours first so no packet waits
ip netns exec src ping -q -c1 -W2 10.255.0.2 >/dev/null || fail "no underlay"
ip netns exec gw ping -q -c1 -W2 192.168.100.2 >/dev/null || fail "no underlay"

xnc_load || fail "load failed"
b0=$(xnc_stat BundlesCreated gw); t0=$(xnc_stat Transformed gw); l0=$(xnc_stat Lookups gw)

ip netns exec peer "$XSEND" -l -w 3 5000 >/tmp/router.rx &
rx=$!
wait_for 5 grep -q listening /tmp/router.rx
# round-robin over all subnets, PER rounds
# shellcheck disable=SC2034 # r: the round, not used
for r in $(seq 1 $PER); do
	for x in $(seq 1 $N); do
		ip netns exec src "$XSEND" -n 1 "10.2.$x.1" 5000 >/dev/null
	done
done
wait $rx
got=$(sed -n 's/received=//p' /tmp/router.rx)
expect_eq "datagrams received through the tunnels" "$got" $((N * PER))
for x in $(seq 1 $N); do
	expect_eq "SA for 10.2.$x.0/24" "$(sa_packets peer $((0x1000 + x)))" $PER
done
b=$(($(xnc_stat BundlesCreated gw) - b0))
t=$(($(xnc_stat Transformed gw) - t0))
l=$(($(xnc_stat Lookups gw) - l0))
expect_eq "gateway Transformed" $t $((N * PER))
expect_eq "gateway BundlesCreated (== Transformed: no reuse)" $b $t
echo "forwarded $got datagrams over $N SAs: $l lookups, $t transformed, $b bundles created"
