#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check-debug runs the suite as parts (scripts/check-debug.sh): every
# guest test must fall in exactly one of them, or a new test would go
# unrun on the debug kernel (or run twice) without anyone noticing.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mapfile -t parts < <("$top/scripts/check-debug.sh" --list-parts)
[ ${#parts[@]} -ge 2 ] || { echo "only ${#parts[@]} parts listed"; exit 1; }
bad=0 n=0
for t in "$top"/tests/guest/t-*.sh; do
	name=$(basename "$t" .sh)
	name=${name#t-}
	in=0
	for p in "${parts[@]}"; do
		if echo "$name" | grep -qE -- "$p"; then in=$((in + 1)); fi
	done
	n=$((n + 1))
	[ $in = 1 ] || { echo "$name is in $in parts"; bad=1; }
done
[ $bad = 0 ] || { echo "parts of check-debug do not cover the suite once"; exit 1; }
echo "$n guest tests, each in exactly one of ${#parts[@]} parts"
