#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Shared body of the t-60-selftest-* tests: source after setting
#   suite       the name selftests-run.sh runs
#   want_pass   checks that pass on stock (all must pass with the module)
#   want_skip   checks that skip on stock
#   want_hits   1 if the suite must go through xnc_xfrm_lookup_with_ifid
# and after sourcing lib.sh.

# shellcheck disable=SC2154 # suite, want_*: set by the t-60-selftest-*.sh
st=$XNC_TOP/tests/guest/selftests-run.sh
out=$XNC_OUT/selftest-$suite.log
"$XNC_TOP/scripts/selftests.sh" dir >/dev/null ||
	fail "selftests not prepared on the host (scripts/selftests.sh)"

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
at_exit cleanup

xnc_load || fail "insmod failed"
echo 0 >$T/tracing_on
echo "p:$probe xnc_xfrm_lookup_with_ifid" >>$T/kprobe_events || fail "cannot kprobe xnc_xfrm_lookup_with_ifid"
echo 1 >$T/events/kprobes/$probe/enable || fail "cannot enable the kprobe"

res=$("$st" run "$suite" "$out")
echo "$res"
hits=$(awk -v p="$probe" '$1 == p { print $2 }' $T/kprobe_profile)
log "calls of xnc_xfrm_lookup_with_ifid during the suite: $hits"
r=$(echo "$res" | grep '^RESULT ')
[ -n "$r" ] || fail "no RESULT line from selftests-run.sh run $suite"
val() { echo "$r" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# the module stayed in the path the whole time
expect_eq "livepatch enabled after the suite" "$(cat "$LP/enabled")" 1
[ "$want_hits" = 0 ] || expect_ge "calls of the replacement function" "$hits" 1
# every check of the suite passed, as many as on stock
expect_eq "$suite failed checks" "$(val fail)" 0
expect_eq "$suite passed checks" "$(val pass)" "$want_pass"
expect_eq "$suite skipped checks" "$(val skip)" "$want_skip"
echo "$suite: $(val pass)/$(val checks) passed, $(val skip) skipped, $(val secs)s, $hits lookups via the module"
