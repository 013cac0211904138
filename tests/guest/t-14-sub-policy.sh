#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sub policies (src/subpol.c): the module searches a namespace's sub
# policies only while it may have an outbound one, and a sub policy that
# blocks is never missed.  Topology of diff-lib.sh; a and b have ESP
# transport SAs and main policies both ways.
#
# - no sub policy: lookups do not search (SubPolicySearches stays put);
# - an outbound sub policy that blocks: the datagram sent after "ip xfrm
#   policy add" returned is refused, and lookups search; after delete,
#   flush or hard expiry they stop searching again; the same for IPv6; an
#   inbound one or one in another namespace does not make them search;
# - 100 rounds of delete then add again under steady traffic: the datagram
#   sent after each add is refused (an add racing the recount that the
#   delete queued must not be lost), the one after each delete passes;
# - 60 rounds of add then delete while a connected socket sends as fast
#   as it can: it keeps its route, or bundle, until the route generation
#   changes, so a lookup it made between the policy's insertion and the
#   module learning of it must not outlive the add: after each add, no
#   more of its packets cross the main policy's SA;
# - loaded while a sub policy exists: it blocks at once; unloaded and
#   loaded again with it there: the same;
# - a namespace deleted right after its sub policy (a recount queued as it
#   dies) leaves nothing behind (the console check fails a splat).
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"
knob ROUNDS XNC_SUB_ROUNDS 100 1 100000
knob CROUNDS XNC_SUB_CROUNDS 60 1 100000
A4=10.0.0.1 B4=10.0.0.2
XSTREAM=$XNC_TOP/tests/tools/xstream
{ [ -x "$XSEND" ] && [ -x "$XSTREAM" ]; } || fail "xsend/xstream missing (make tools)"

searches() { xnc_stat SubPolicySearches "${1:-a}"; }
# one datagram from a: what xsend says ("sent=1" or "sent=0 errno=EPERM x1")
one() { ip netns exec a "$XSEND" -n 1 $B4 5000 | tr '\n' ' ' | sed 's/ $//'; }
# not_searching NS: a lookup in NS (a datagram to the peer) leaves the
# counter where it was; lookups may search until the recount has run
not_searching() {
	local ns=${1:-a} dst=$B4 s
	[ "$ns" = b ] && dst=$A4
	s=$(searches "$ns")
	ip netns exec "$ns" "$XSEND" -n 1 $dst 5000 >/dev/null
	[ "$(searches "$ns")" = "$s" ]
}
no_subs() { [ -z "$(ip -n a xfrm policy list ptype sub)" ]; }
add_block() { pol a src $A4 dst $B4 dir out ptype sub action block "$@"; }
del_block() { ip -n a xfrm policy del src $A4 dst $B4 dir out ptype sub; }

xnc_load || fail "load failed"
dmesg_mark
pair
sa "a b" $A4 $B4 0x100 transport
sa "a b" $B4 $A4 0x200 transport
pol a src $A4 dst $B4 dir out tmpl proto esp mode transport
pol b src $B4 dst $A4 dir out tmpl proto esp mode transport

wait_for $((5 * XNC_SLOW)) not_searching a || fail "lookups search with no sub policy"
expect_eq "main only" "$(one)" "sent=1"

s0=$(searches)
add_block
expect_eq "sub added" "$(one)" "sent=0 errno=EPERM x1"
expect_ge "searches with a sub policy" "$(searches)" $((s0 + 1))
not_searching a && fail "a lookup did not search with a sub policy there"
del_block
expect_eq "sub deleted" "$(one)" "sent=1"
wait_for $((5 * XNC_SLOW)) not_searching a || fail "still searching after delete"

add_block
ip -n a xfrm policy flush ptype sub
expect_eq "subs flushed" "$(one)" "sent=1"
wait_for $((5 * XNC_SLOW)) not_searching a || fail "still searching after flush"

add_block limit time-hard 2
expect_eq "sub with a lifetime" "$(one)" "sent=0 errno=EPERM x1"
wait_for $((15 * XNC_SLOW)) no_subs ||
	fail "the sub policy did not expire"
expect_eq "sub expired" "$(one)" "sent=1"
wait_for $((5 * XNC_SLOW)) not_searching a || fail "still searching after expiry"

# IPv6 (whose routes the module makes stale through IPv6's own hook)
one6() { ip netns exec a "$XSEND" -6 -n 1 fd00::2 5000 | tr '\n' ' ' | sed 's/ $//'; }
expect_eq "IPv6, no policy" "$(one6)" "sent=1"
pol a src fd00::1 dst fd00::2 dir out ptype sub action block
expect_eq "IPv6 sub added" "$(one6)" "sent=0 errno=EPERM x1"
ip -n a xfrm policy del src fd00::1 dst fd00::2 dir out ptype sub
expect_eq "IPv6 sub deleted" "$(one6)" "sent=1"
wait_for $((5 * XNC_SLOW)) not_searching a || fail "still searching after the IPv6 delete"

pol a src $A4 dst $B4 dir in ptype sub action block
pol a src $A4 dst $B4 dir fwd ptype sub action block
wait_for $((5 * XNC_SLOW)) not_searching a || fail "an inbound sub policy makes output search"
ip -n a xfrm policy flush ptype sub

add_block
not_searching b || fail "a's sub policy makes b's lookups search"
del_block

# delete and add again, under traffic; the recount the delete queues runs
# while the next add comes
ip netns exec a "$XSTREAM" -i 500 $B4 >/tmp/sub.stream &
st=$!
for ((i = 0; i < ROUNDS; i++)); do
	add_block
	r=$(one)
	[ "$r" = "sent=0 errno=EPERM x1" ] || { kill $st; fail "round $i: after add: $r"; }
	del_block
	r=$(one)
	[ "$r" = "sent=1" ] || { kill $st; fail "round $i: after delete: $r"; }
done
kill -TERM $st
wait $st
log "$ROUNDS rounds under traffic: $(cat /tmp/sub.stream)"
wait_for $((5 * XNC_SLOW)) not_searching a || fail "still searching after the rounds"

# a connected socket, sending as fast as it can while it may (a listener
# in b, so that no port unreachable comes back to it)
ip netns exec b "$XSEND" -l -w 600 5000 >/dev/null &
lst=$!
ip netns exec a "$XSTREAM" -c -i 0 $B4 >/tmp/sub.cstream &
cs=$!
moving() {
	# shellcheck disable=SC2155 # its status is not used
	local p=$(sa_packets a 0x100)
	sleep 0.1
	[ "$(sa_packets a 0x100)" != "$p" ]
}
wait_for $((5 * XNC_SLOW)) moving || fail "the connected socket sends nothing"
for ((i = 0; i < CROUNDS; i++)); do
	add_block
	sleep 0.2
	p1=$(sa_packets a 0x100)
	sleep 0.3
	p2=$(sa_packets a 0x100)
	[ "$p1" = "$p2" ] || { kill $cs $lst; fail "round $i: a connected socket still sends through the main policy's SA ($p1, then $p2 packets) after a sub policy blocked it"; }
	del_block
	wait_for $((5 * XNC_SLOW)) moving || { kill $cs $lst; fail "round $i: the connected socket did not resume after delete"; }
done
kill -TERM $cs $lst
wait $cs $lst
log "$CROUNDS rounds with a connected socket: $(cat /tmp/sub.cstream)"

# loaded with a sub policy there
add_block
xnc_unload || fail "unload failed"
expect_eq "stock, sub policy" "$(one)" "sent=0 errno=EPERM x1"
xnc_load || fail "load with a sub policy failed"
expect_eq "loaded with a sub policy" "$(one)" "sent=0 errno=EPERM x1"
expect_ge "searches after load" "$(searches)" 1
del_block
expect_eq "sub deleted after load" "$(one)" "sent=1"
wait_for $((5 * XNC_SLOW)) not_searching a || fail "still searching after load and delete"

# a namespace dying with a recount queued
for i in 1 2 3 4 5; do
	ip netns add c$i
	ip -n c$i xfrm policy add src $A4 dst $B4 dir out ptype sub action block
	ip -n c$i xfrm policy flush ptype sub
	ip netns del c$i
done
cleanup_ns
xnc_unload || fail "unload failed"
dmesg_since | grep -E "BUG|WARNING|refcount" && fail "kernel complained"
echo "ok: no search without an outbound sub policy, none missed in $ROUNDS rounds"
