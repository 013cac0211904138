#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Load: the livepatch is enabled, patches xfrm_lookup_with_ifid in vmlinux,
# and /proc/net/xfrm_nocache exists in every namespace, old and new.
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
set -e

ip netns add before
xnc_load || fail "insmod failed"
expect_eq "enabled" "$(cat $LP/enabled)" 1
[ -d $LP/vmlinux/xfrm_lookup_with_ifid,1 ] || fail "xfrm_lookup_with_ifid is not patched"
grep -q 'K' /proc/sys/kernel/tainted 2>/dev/null || true
[ $(( $(cat /proc/sys/kernel/tainted) & 32768 )) -ne 0 ] || fail "kernel not tainted K (livepatch)"
ip netns add after
for ns in "" before after; do
	v=$(xnc_stat Lookups $ns)
	[ -n "$v" ] || fail "no /proc/net/xfrm_nocache in netns '${ns:-init}'"
done
xnc_unload || fail "unload failed"
[ ! -e /proc/net/xfrm_nocache ] || fail "/proc/net/xfrm_nocache left after unload"
echo "loaded, patched, counters in 3 namespaces, unloaded"
