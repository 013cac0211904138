#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own tools/testing/selftests/net/xfrm_policy.sh (taken from
# Debian's linux-source-6.1 at test time, see scripts/selftests.sh) with the
# module loaded: policy resolution with exceptions, overlapping block
# policies, hash-threshold rebuilds and random insertion order, checked by
# pings whose ipsec-ness an iptables -m policy counter shows.  Passes when
# all 18 checks pass (as on stock), the livepatch stayed enabled and the
# pings went through xnc_lookup_with_ifid (kprobe hit count).
#
#   ns1 --- ns3 ===ESP tunnel=== ns4 --- ns2
#   10.0.1.2  10.0.3.1      10.0.3.10   10.0.2.2
suite=xfrm_policy want_pass=18 want_skip=0 want_hits=1
. "$(dirname "$0")/lib.sh"

st=$XNC_TOP/scripts/selftests.sh
out=$XNC_OUT/selftest-$suite.log
"$st" dir >/dev/null || fail "selftests not prepared on the host (scripts/selftests.sh)"

# Count calls of the module's replacement function while the suite runs: a
# kprobe on it (kprobe_profile counts hits even with tracing off).
T=/sys/kernel/tracing
probe=xnc_selftest
tron=$(cat $T/tracing_on)
cleanup() {
	echo 0 >$T/events/kprobes/$probe/enable 2>/dev/null
	echo "-:$probe" >>$T/kprobe_events 2>/dev/null
	echo "$tron" >$T/tracing_on
}
trap cleanup EXIT

xnc_load || fail "insmod failed"
echo 0 >$T/tracing_on
echo "p:$probe xnc_lookup_with_ifid" >>$T/kprobe_events || fail "cannot kprobe xnc_lookup_with_ifid"
echo 1 >$T/events/kprobes/$probe/enable || fail "cannot enable the kprobe"

res=$("$st" run "$suite" "$out")
echo "$res"
hits=$(awk -v p="$probe" '$1 == p { print $2 }' $T/kprobe_profile)
log "calls of xnc_lookup_with_ifid during the suite: $hits"
r=$(echo "$res" | grep '^RESULT ')
[ -n "$r" ] || fail "no RESULT line from selftests.sh run $suite"
val() { echo "$r" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# the module stayed in the path the whole time
expect_eq "livepatch enabled after the suite" "$(cat $LP/enabled)" 1
[ "$want_hits" = 0 ] || expect_ge "calls of the replacement function" "$hits" 1
# every check of the suite passed, as many as on stock
expect_eq "$suite failed checks" "$(val fail)" 0
expect_eq "$suite passed checks" "$(val pass)" "$want_pass"
expect_eq "$suite skipped checks" "$(val skip)" "$want_skip"
echo "$suite: $(val pass)/$(val checks) passed, $(val skip) skipped, $(val secs)s, $hits lookups via the module"
