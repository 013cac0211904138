#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# (0) Stock leaks a route for every queued lookup (its queue bundle takes a
# second reference for its child, which nothing releases); the module none.
# COUNT UDP datagrams to a multicast group, whose output routes the kernel
# never caches (a default route: each lookup gets a route of its own), are
# queued for an SA that never comes, then the policy (and its queue) is
# flushed; the IPv4 routes still alive afterwards (first column of
# /proc/net/stat/rt_cache, dst_entries of ipv4_dst_ops) are the leak.  This
# is the reproducer of docs/upstream/.
#
# Then, queue bundles hold their route exactly as often as destroying one
# releases it (src/queue.c), on this kernel and on one that releases a
# queue bundle's child too, simulated in init_net by the test-only
# tests/tools/klp-other/xnc_qchild.ko.  On the first, the module's probe
# finds one reference (and says nothing); on the second, two, and says so.
# Either way COUNT queued lookups and the hold queue's retries on them end
# with every route reference accounted for: a reference dropped once too
# often frees a route still in use (a refcount underflow, "dst_release
# underflow" or "rcuref - imbalanced put()", a splat that fails the test).
#
#   init_net                          netns b
#   +------------------+   veth   +------------------+
#   | va  10.13.0.1     |----------| vb  10.13.0.2     |
#   +------------------+          +------------------+
#   policy 10.13.0.1 -> 10.13.0.2 ESP transport, no SA, xfrm_larval_drop=0
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
knob COUNT XNC_QUEUE_COUNT 20 1 1000
XSEND=$XNC_TOP/tests/tools/xsend
QCHILD_KO=${XNC_QCHILD_KO:-$(dirname "${XNC_OTHER_KO:-$XNC_TOP/tests/tools/klp-other/x}")/xnc_qchild.ko}
[ -x "$XSEND" ] || fail "$XSEND missing (make tools)"
[ -f "$QCHILD_KO" ] || fail "$QCHILD_KO missing (built with klp-other)"

# --- (0) the leak -----------------------------------------------------------
dsts() { printf '%d\n' "0x$(awk 'NR == 2 { print $1 }' /proc/net/stat/rt_cache)"; }
settled() { [ "$(dsts)" -le "$1" ]; }
# leak: COUNT queued multicast datagrams in a namespace of their own; prints
# the IPv4 routes left once its policy is flushed
leak() {
	local base
	base=$(dsts)
	ip netns add q
	ip -n q link add d0 type dummy
	ip -n q addr add 10.13.1.1/24 dev d0
	ip -n q link set d0 up
	ip -n q route add default dev d0
	ip netns exec q sysctl -qw net.core.xfrm_larval_drop=0
	ip -n q xfrm policy add src 10.13.1.1 dst 239.1.1.1 dir out \
		tmpl proto esp mode transport
	ip netns exec q "$XSEND" -n "$COUNT" 239.1.1.1 5000 >/dev/null
	sleep 1
	# the queue goes with the policy, its bundles with it
	ip -n q xfrm policy flush
	wait_for 10 settled "$base" || true
	sleep 1
	echo $(($(dsts) - base))
	ip netns del q
}
mod_loaded && fail "module loaded before the stock part"
stock_window leak >/tmp/t13.stock
stock=$(cat /tmp/t13.stock)
xnc_load || fail "load failed"
mod=$(leak)
xnc_unload || fail "unload failed"
log "$COUNT queued lookups leave $stock IPv4 routes on stock $(uname -r), $mod with the module"
[ "$mod" -le 1 ] || fail "module: $mod IPv4 routes left after $COUNT queued lookups (stock: $stock)"
[ "$stock" -ge "$COUNT" ] ||
	log "stock no longer leaks a route per queued lookup ($stock for $COUNT): fixed upstream? see docs/upstream/"

# --- (1), (2) the probe --------------------------------------------------------
larval=$(sysctl -n net.core.xfrm_larval_drop)
cleanup() {
	ip xfrm policy delete src 10.13.0.1/32 dst 10.13.0.2/32 dir out 2>/dev/null
	sysctl -qw net.core.xfrm_larval_drop="$larval"
	ip link del va 2>/dev/null
	ip netns del b 2>/dev/null
	grep -q '^xnc_qchild ' /proc/modules && rmmod xnc_qchild
}
at_exit cleanup

ip netns add b
ip link add va type veth peer name vb netns b
ip addr add 10.13.0.1/24 dev va; ip link set va up
ip -n b addr add 10.13.0.2/24 dev vb; ip -n b link set vb up
sysctl -qw net.core.xfrm_larval_drop=0

# queued: COUNT datagrams held for an SA that never comes, retried by the
# hold queue's timer, then purged with the policy
queued() {
	local q0
	ip xfrm policy add src 10.13.0.1 dst 10.13.0.2 dir out \
		tmpl proto esp mode transport || fail "policy add"
	q0=$(xnc_stat Queued)
	"$XSEND" -n "$COUNT" 10.13.0.2 5000 >/dev/null
	expect_ge "$1: Queued" "$(xnc_stat Queued)" $((q0 + COUNT))
	sleep 1
	ip xfrm policy delete src 10.13.0.1/32 dst 10.13.0.2/32 dir out ||
		fail "policy delete"
	sleep 1
}

# (1) this kernel: one reference, nothing said
dmesg_mark
xnc_load || fail "load failed"
dmesg_since | grep -q 'queue bundles hold their route' &&
	fail "this kernel: the probe found other than one reference"
queued "this kernel"
xnc_unload || fail "unload failed"

# (2) a kernel that also releases a queue bundle's child: two
insmod "$QCHILD_KO" || fail "cannot load $QCHILD_KO"
dmesg_mark
xnc_load || fail "load on the simulated kernel failed"
dmesg_since | grep -q 'queue bundles hold their route 2 times' ||
	fail "simulated kernel: the probe did not find two references"
queued "simulated kernel"
xnc_unload || fail "unload failed"
rmmod xnc_qchild || fail "cannot remove xnc_qchild"
echo "queued lookups leave $stock routes on stock, $mod with the module; queue bundles" \
	"hold 1 route reference here, 2 where the child is released too, none dropped twice"
