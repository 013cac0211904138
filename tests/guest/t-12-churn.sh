#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Replace, delete and re-add SAs and policies while traffic flows (topology
# of diff-lib.sh): traffic follows the new configuration at once; then the
# namespaces go away promptly (a leaked dst or policy reference would keep
# them, and the veth, alive).
#
# "Gone" is counted in net_namespace slab objects: at most the namespaces
# that stay, plus one.  The one: the kernel frees a dead namespace's struct
# net only in the next cleanup_net (its defer_free_list), and a and b may be
# cleaned up together, so a throwaway namespace is deleted after them, one
# at a time and at most once a second, until one cleanup has freed them.
# A namespace kept by a leaked reference is never freed, whatever follows.
# The slab is shrunk before each count: SLUB counts every object of a
# CPU's slabs as in use, freed or not.
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"

slab() { awk -v c="$1" '$1 == c { print $2 }' /proc/slabinfo; }
ns_objs() {
	echo 1 >/sys/kernel/slab/net_namespace/shrink
	slab net_namespace
}
kicks=0 kicked=0
freed() {
	local now
	[ "$(ns_objs)" -le $((others + 1)) ] && return 0
	now=$(date +%s)
	[ "$now" -gt "$kicked" ] || return 1
	{ ip netns add xnc-churn-kick && ip netns del xnc-churn-kick; } ||
		fail "cannot add and delete a throwaway namespace"
	kicked=$now kicks=$((kicks + 1))
	return 1
}

xnc_load || fail "load failed"
pair
A=10.0.0.1 B=10.0.0.2
sa "a b" $A $B 0x100 transport
pol a src $A dst $B dir out tmpl proto esp mode transport
ip netns exec a ping -q -i 0.05 -w 120 $B >/tmp/churn.ping 2>&1 &
pinger=$!

# shellcheck disable=SC2155 # its status is not used
grows() { local v=$(sa_packets b "$1"); sleep 0.5; [ "$(sa_packets b "$1")" -gt "${v:-0}" ]; }
wait_for 3 grows 0x100 || fail "no traffic through SA 0x100"

# replace the SA: new SPI, traffic moves to it
ip -n a xfrm state del src $A dst $B proto esp spi 0x100
sa "a b" $A $B 0x101 transport
wait_for 1 grows 0x101 || fail "traffic did not move to the new SA 0x101"

# delete the policy: traffic leaves the SA (and still arrives, in clear)
ip -n a xfrm policy del src $A dst $B dir out
v=$(sa_packets b 0x101)
sleep 1
expect_eq "SA 0x101 after policy delete" "$(sa_packets b 0x101)" "$v"

# re-add it: back through the SA
pol a src $A dst $B dir out tmpl proto esp mode transport
wait_for 1 grows 0x101 || fail "traffic did not return to SA 0x101"

# switch the policy to block: no more packets anywhere
ip -n a xfrm policy update src $A dst $B dir out action block
v=$(sa_packets b 0x101)
sleep 1
expect_eq "SA 0x101 while blocked" "$(sa_packets b 0x101)" "$v"
ip -n a xfrm policy update src $A dst $B dir out tmpl proto esp mode transport
wait_for 1 grows 0x101 || fail "traffic did not resume after unblocking"

# flush everything under traffic, re-add
ip -n a xfrm state flush; ip -n a xfrm policy flush
sa a $A $B 0x101 transport
pol a src $A dst $B dir out tmpl proto esp mode transport
wait_for 1 grows 0x101 || fail "traffic did not resume after flush"

kill $pinger; wait $pinger 2>/dev/null
lookups=$(xnc_stat Lookups a)
expect_ge "lookups in a" "$lookups" 100

# the namespaces that stay
others=$(ip netns list | awk '$1 != "a" && $1 != "b"' | wc -l)
start=$(date +%s%N)
ip netns del a; ip netns del b
wait_for $((10 * XNC_SLOW)) freed ||
	fail "namespaces not freed within $((10 * XNC_SLOW)) s (leaked reference?): net_namespace objects $(ns_objs), want <= $((others + 1)); $kicks throwaway namespaces deleted after them"
ms=$((($(date +%s%N) - start) / 1000000))
echo "traffic followed every change ($lookups lookups); namespaces freed in ${ms} ms ($kicks throwaway namespaces deleted after them)"
