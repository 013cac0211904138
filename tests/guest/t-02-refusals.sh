#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Loads that must be refused, cleanly, each leaving no module and no
# livepatch behind, with a message naming the cause; test-only builds of
# the module (scripts/build.sh --variants) stand in for kernels we cannot
# boot:
#  - a prototype that differs from the kernel's BTF ("badproto" declares
#    xfrm_policy_insert() with a long excl);
#  - a release not in scripts/kernel.record ("unchecked" lists none of
#    this kernel's): EPERM, naming it; unchecked=1 loads it with a warning;
#  - a kernel lacking a symbol we bind ("missing" binds one no kernel has):
#    the livepatch core refuses while loading, naming it;
#  - a compiler clone of the function we replace ("clone" looks for clones
#    of xfrm_expand_policies, which has only its .constprop copy);
#  - a module built without the livepatch relocation step ("unbound"):
#    its init refuses, naming the first unbound symbol and the step;
# and a second copy is refused while the first keeps working.
#
# Stacking with another livepatch of xfrm_lookup_with_ifid (the test-only
# tests/tools/klp-other, whose replacement applies no xfrm at all):
#  - the other one first: loading ours fails with EBUSY and a message
#    naming the other module, and leaves nothing behind; once the other is
#    disabled and removed, ours loads;
#  - ours first: the other one loads on top and takes over (our Lookups
#    and the SA's packets stop, though ours still says enabled); once it is
#    disabled and removed, ours is in force again.
#
#   +-----------------+  veth  +-----------------+
#   | a  10.9.0.1  va |--------| vb  10.9.0.2  b |   ESP transport SA 0x101
#   +-----------------+        +-----------------+   a -> b (b accepts clear)
. "$(dirname "$0")/lib.sh"
OTHER_KO=${XNC_OTHER_KO:-$XNC_TOP/tests/tools/klp-other/xnc_klp_other.ko}
OLP=/sys/kernel/livepatch/xnc_klp_other
other_loaded() { grep -q '^xnc_klp_other ' /proc/modules; }
other_settled() { [ "$(cat $OLP/transition 2>/dev/null)" = 0 ]; }
other_gone() { [ ! -e $OLP ]; }
other_unload() {
	[ -e $OLP ] && echo 0 >$OLP/enabled
	wait_for 30 other_gone || return 1
	! other_loaded || wait_for 10 rmmod xnc_klp_other 2>/dev/null
}
# lib.sh only removes xfrm_nocache: never leave the other one behind
at_exit other_unload

VARIANTS=${XNC_VARIANTS:-$(dirname "$XNC_KO")/variants}
# refused VARIANT ERRNO MESSAGE: loading it fails with ERRNO, leaves
# nothing, and the kernel log gains MESSAGE
refused() {
	local ko=$VARIANTS/$1/xfrm_nocache.ko
	[ -f "$ko" ] || fail "$ko missing (scripts/build.sh --variants)"
	dmesg_mark
	expect_eq "errno loading the '$1' build" "$(load_errno "$ko" "${XNC_LOAD_ARGS:-}")" "$2"
	mod_loaded && fail "the '$1' build stayed loaded"
	[ -e $LP ] && fail "livepatch registered by the '$1' build"
	[ -e /proc/net/xfrm_nocache ] && fail "proc file left by the '$1' build"
	dmesg_since >/tmp/t02.dmesg
	grep -qF -- "$3" /tmp/t02.dmesg ||
		fail "no message '$3' loading the '$1' build: $(tail -n 3 /tmp/t02.dmesg)"
	echo "$1: $(grep -F -- "$3" /tmp/t02.dmesg | head -n1)"
}
refused missing 22 "livepatch: symbol 'xnc_no_such_symbol' not found in symbol table"
refused clone 8 "a compiler clone of xfrm_expand_policies(): its callers cannot be patched"
refused unbound 8 "kernel symbols are not bound, 'xfrm_sk_policy_lookup' first"
refused badproto 8 "xfrm_policy_insert(): this kernel declares 'int xfrm_policy_insert(int dir, struct xfrm_policy *policy, int excl)', the module was built for 'int xfrm_policy_insert(int dir, struct xfrm_policy *policy, long excl)'; refusing to load"

# a kernel release the module was not checked against: refused (EPERM),
# naming the release; unchecked=1 loads it, saying so
rel=$(uname -v | sed -n 's/.* Debian \([^ ]*\) .*/\1/p')
[ -n "$rel" ] || fail "no Debian release in uname -v: $(uname -v)"
XNC_LOAD_ARGS='' refused unchecked 1 "Debian kernel $rel was not checked against this module (newest checked: 6.0.0-0); stock lookups stay"
dmesg_mark
XNC_KO=$VARIANTS/unchecked/xfrm_nocache.ko xnc_load unchecked=1 ||
	fail "the 'unchecked' build with unchecked=1 did not load"
dmesg_since | grep -qF "Debian kernel $rel was not checked against this module (newest checked: 6.0.0-0): loading unchecked (unchecked=1)" ||
	fail "no warning loading the 'unchecked' build with unchecked=1: $(dmesg_since | tail -n 3)"
xnc_unload || fail "unload of the 'unchecked' build failed"

xnc_load || fail "normal load failed"
insmod "$XNC_KO" 2>/dev/null && fail "a second copy loaded"
expect_eq "first copy still enabled" "$(cat $LP/enabled)" 1
xnc_unload || fail "unload failed"

# --- another livepatch of xfrm_lookup_with_ifid first: refused -----------------
[ -f "$OTHER_KO" ] || fail "$OTHER_KO missing (make tools)"
insmod "$OTHER_KO" || fail "cannot load the other livepatch"
wait_for 30 other_settled || fail "the other livepatch did not settle"
expect_eq "errno loading on top of another livepatch" "$(load_errno "$XNC_KO" "${XNC_LOAD_ARGS:-}")" 16
echo "dmesg: $(dmesg | grep xfrm_nocache)"
dmesg | grep -q "xfrm_nocache: livepatch 'xnc_klp_other' already replaces xfrm_lookup_with_ifid()" ||
	fail "no message naming the other livepatch module"
mod_loaded && fail "module loaded on top of another livepatch"
[ -e $LP ] && fail "livepatch registered on top of another livepatch"
[ -e /proc/net/xfrm_nocache ] && fail "proc file left by a refused load"
[ -e /sys/kernel/tracing/events/xfrm_nocache ] && fail "trace events left by a refused load"
expect_eq "the other livepatch, still enabled" "$(cat $OLP/enabled)" 1
other_unload || fail "cannot remove the other livepatch"
xnc_load || fail "load once the other livepatch is gone failed"
xnc_unload || fail "unload failed"

# --- ours first, the other loaded on top: it takes over until removed ----------
esp_pair one
xnc_load || fail "load failed"
ip netns exec a ping -q -i 0.05 -w 120 10.9.0.2 >/dev/null 2>&1 &
pinger=$!
# shellcheck disable=SC2155 # their status is not used
ours() { local l=$(xnc_stat Lookups a) e=$(sa_packets b 0x101); sleep 0.5
	 [ "$(xnc_stat Lookups a)" -gt "$l" ] && [ "$(sa_packets b 0x101)" -gt "$e" ]; }
wait_for 5 ours || fail "traffic not through our patch before the other one"
insmod "$OTHER_KO" || { kill $pinger; fail "the other livepatch refused to load on top of ours"; }
wait_for 30 other_settled || fail "the other livepatch did not settle"
l=$(xnc_stat Lookups a); e=$(sa_packets b 0x101)
sleep 1
expect_eq "our Lookups while the other patch is on top" "$(xnc_stat Lookups a)" "$l"
expect_eq "ESP packets while the other patch is on top" "$(sa_packets b 0x101)" "$e"
expect_eq "ours, still saying enabled" "$(cat $LP/enabled)" 1
other_unload || fail "cannot remove the other livepatch"
wait_for 5 ours || fail "our patch did not take over again once the other was removed"
kill $pinger; wait $pinger 2>/dev/null
xnc_unload || fail "unload failed"
echo "missing symbol, clone and unbound build refused by name; second copy refused;" \
	"refused on top of another livepatch (EBUSY, named); another on top takes over until removed"
