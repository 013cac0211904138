#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A sub policy nobody announces: the test-only module xnc_subins inserts an
# outbound sub policy that blocks a -> b with xfrm_policy_insert() alone,
# no key manager told.  On stock the datagram sent after the insertion
# returned is refused; with the module it must be too (src/subpol.c sees
# every insertion, notified or not), and lookups search the sub policies
# until it is deleted.  Topology of diff-lib.sh, an ESP transport SA and
# main policy a -> b.
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"
SUBINS_KO=${XNC_SUBINS_KO:-$(dirname "${XNC_OTHER_KO:-$XNC_TOP/tests/tools/klp-other/x}")/xnc_subins.ko}
A4=10.0.0.1 B4=10.0.0.2
[ -x "$XSEND" ] || fail "xsend missing (make tools)"
[ -f "$SUBINS_KO" ] || fail "$SUBINS_KO missing (tests/tools/klp-other)"

cleanup() {
	rmmod xnc_subins 2>/dev/null
	ip netns del a 2>/dev/null
	ip netns del b 2>/dev/null
	"$XNC_TOP/tests/guest/lib.sh" unload >/dev/null 2>&1
}
at_exit cleanup

one() { ip netns exec a "$XSEND" -n 1 $B4 5000 | tr '\n' ' ' | sed 's/ $//'; }
searches() { xnc_stat SubPolicySearches a; }
not_searching() {
	local s
	s=$(searches)
	ip netns exec a "$XSEND" -n 1 $B4 5000 >/dev/null
	[ "$(searches)" = "$s" ]
}
insert() {
	ip netns exec a insmod "$SUBINS_KO" src=$A4 dst=$B4 ||
		fail "$1: xnc_subins could not insert the sub policy"
	rmmod xnc_subins
	[ -n "$(ip -n a xfrm policy list ptype sub dir out)" ] ||
		fail "$1: no sub policy in a after xnc_subins"
}
remove() { ip -n a xfrm policy del src $A4 dst $B4 dir out ptype sub; }

pair
sa "a b" $A4 $B4 0x100 transport
pol a src $A4 dst $B4 dir out tmpl proto esp mode transport

# stock, for reference
expect_eq "stock, main policy only" "$(one)" "sent=1"
insert stock
expect_eq "stock, after the silent insert" "$(one)" "sent=0 errno=EPERM x1"
remove
expect_eq "stock, after delete" "$(one)" "sent=1"

xnc_load || fail "load failed"
wait_for $((5 * XNC_SLOW)) not_searching ||
	fail "lookups search the sub policies with none there"
expect_eq "module, main policy only" "$(one)" "sent=1"
p0=$(sa_packets a 0x100)
s0=$(searches)
insert module
expect_eq "module, after the silent insert" "$(one)" "sent=0 errno=EPERM x1"
expect_eq "ESP packets of the blocked datagram" "$(sa_packets a 0x100)" "$p0"
expect_ge "SubPolicySearches after the silent insert" "$(searches)" $((s0 + 1))
remove
expect_eq "module, after delete" "$(one)" "sent=1"
wait_for $((5 * XNC_SLOW)) not_searching ||
	fail "still searching after the silent sub policy was deleted"
echo "a sub policy inserted without notification blocks the next datagram, as on stock; searching stops after its delete"
