#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every case of diff-cases.sh, stock then module, in this boot: what a user
# observes (delivery, errno, which SA carried it, policy use, xfrm_stat)
# must be identical, and must be what stock 6.1 does.  XNC_DIFF=pattern limits
# the cases.  The table is written to $XNC_OUT/differential.txt.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"
. "$(dirname "$0")/diff-cases.sh"

[ -x "$XSEND" ] || fail "$XSEND missing (make tools)"
failed=0 n=0
for c in $DIFF_CASES; do
	echo "$c" | grep -qE -- "${XNC_DIFF:-.}" || continue
	n=$((n + 1))
	line=$(diff_case "$c") || failed=$((failed + 1))
	echo "$line" | tee -a "$XNC_OUT/differential.txt"
done
[ $failed -eq 0 ] || fail "$failed of $n differential cases failed"
echo "$n differential cases identical to stock"
