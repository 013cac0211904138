#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tests/guest/selftests-run.sh counts each suite's verdicts as the table needs:
# its parse rules on small hand-made logs in each suite's output format,
# for the suites beyond make check's (t-60-selftest-* run the others), and
# the rules every suite shares: a suite that stops before a check it was
# asked for, reports nothing, or fails without a failed check, fails.
# No VM, no kernel: a second or so.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/xnc-stparse.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bad=0

# expect SUITE RC WANT: the log on stdin, parsed as SUITE exiting RC, must
# give the counts WANT ("checks=N pass=P fail=F skip=K")
n=0
expect() {
	local out got
	n=$((n + 1))
	cat >"$tmp/$n.log"
	out=$("$top/tests/guest/selftests-run.sh" parse "$1" "$tmp/$n.log" "$2" 7)
	got=$(echo "$out" | sed -n 's/^RESULT suite=[^ ]* \(.*\) rc=.*/\1/p')
	if [ "$got" != "$3" ]; then
		echo "case $n ($1, rc $2): got '$got', want '$3'"
		echo "$out"
		bad=1
	fi
}

# pmtu-vti: TEST lines; the plan line selftests-run.sh writes first
expect pmtu-vti 0 "checks=3 pass=2 fail=0 skip=1" <<'L'
selftests.sh: plan 3: t1 t2 t3
TEST: first                                                       [ OK ]
TEST: second                                                      [SKIP]
  why it skipped
TEST: third                                                       [ OK ]
L
# a test that never reported (skipped without a word, or the script
# stopped) is a failure
expect pmtu-vti 1 "checks=3 pass=1 fail=2 skip=0" <<'L'
selftests.sh: plan 3: t1 t2 t3
TEST: first                                                       [ OK ]
TEST: second                                                      [FAIL]
L
expect pmtu-vti 124 "checks=2 pass=0 fail=2 skip=0" <<'L'
selftests.sh: plan 2: t1 t2
L
# pmtu.sh exits 4 when everything skipped
expect pmtu-vti 4 "checks=2 pass=0 fail=0 skip=2" <<'L'
selftests.sh: plan 2: t1 t2
TEST: first                                                       [SKIP]
TEST: second                                                      [SKIP]
L

# l2tp: TEST lines, then its own totals (not counted again)
expect l2tp 0 "checks=3 pass=2 fail=1 skip=0" <<'L'
TEST: one                                                         [ OK ]
TEST: two                                                         [FAIL]
TEST: three                                                       [ OK ]

Tests passed:   2
Tests failed:   1
L
# it exits 0 whatever failed: no output at all is a failure
expect l2tp 0 "checks=1 pass=0 fail=1 skip=0" </dev/null
# stopped in its setup (set -e) before the first check
expect l2tp 2 "checks=1 pass=0 fail=1 skip=0" <<'L'
RTNETLINK answers: Operation not supported
L

# nft-flowtable: PASS:/FAIL:/SKIP: lines, its last check through ESP
expect nft-flowtable 0 "checks=4 pass=3 fail=0 skip=1" <<'L'
PASS: first
SKIP: could not do the second
PASS: third
PASS: ipsec tunnel mode for ns1/ns2
L
expect nft-flowtable 0 "checks=2 pass=1 fail=1 skip=0" <<'L'
PASS: first
FAIL: ipsec tunnel mode for ns1/ns2
L
# stopped (exit 0 after a failure, or an ERROR: exit 1) before the ESP
# check: that check fails too
expect nft-flowtable 0 "checks=3 pass=1 fail=2 skip=0" <<'L'
PASS: first
FAIL: second
L
expect nft-flowtable 1 "checks=2 pass=1 fail=1 skip=0" <<'L'
PASS: first
ERROR: cannot reach
L
# a tool missing: the whole suite skips
expect nft-flowtable 4 "checks=1 pass=0 fail=0 skip=1" <<'L'
SKIP: Could not run test without a tool
L

# xfrm-policy-add-speed: a check per batch, failed by its WARNING:
expect xfrm-policy-add-speed 0 "checks=3 pass=3 fail=0 skip=0" <<'L'
Inserted 100    policies in 52 ms
Inserted 1000   policies in 310 ms
Inserted 10000  policies in 4100 ms
L
# cancelled (WARNING: before its line) and then missing policies (after
# it): one failed batch
expect xfrm-policy-add-speed 1 "checks=3 pass=2 fail=1 skip=0" <<'L'
Inserted 100    policies in 52 ms
WARNING: policy insertion cancelled after 4m
Inserted 1000   policies in 240000 ms
WARNING: mismatch, have 900 policies, expected 1000
Inserted 10000  policies in 4100 ms
L
expect xfrm-policy-add-speed 1 "checks=2 pass=1 fail=1 skip=0" <<'L'
Inserted 100    policies in 52 ms
Inserted 1000   policies in 310 ms
WARNING: mismatch, have 900 policies, expected 1000
L
# killed in a batch: that batch fails
expect xfrm-policy-add-speed 124 "checks=2 pass=1 fail=1 skip=0" <<'L'
Inserted 100    policies in 52 ms
WARNING: policy insertion cancelled after 4m
L
expect xfrm-policy-add-speed 0 "checks=1 pass=0 fail=1 skip=0" </dev/null

# the suites of each line, and make check's
for l in 6.1 6.12; do
	all=$(XNC_KLINE=$l "$top/scripts/selftests.sh" list | paste -sd' ')
	core=$(XNC_KLINE=$l "$top/scripts/selftests.sh" list core | paste -sd' ')
	# 6.1's nft_flowtable.sh cannot pass under TCG (scripts/selftests.sh)
	want="xfrm_policy ipsec vrf-xfrm rtnetlink-ipsec pmtu-vti l2tp"
	[ $l = 6.1 ] || want="$want nft-flowtable xfrm-policy-add-speed"
	[ "$all" = "$want" ] || { echo "$l: list is '$all', want '$want'"; bad=1; }
	[ "$core" = "xfrm_policy ipsec vrf-xfrm rtnetlink-ipsec" ] ||
		{ echo "$l: list core is '$core'"; bad=1; }
done

[ $bad = 0 ] || exit 1
echo "selftests-run.sh parse: $n cases as expected"
