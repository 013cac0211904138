#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check-bench: the tests of the benchmark tooling, bench/tests/*.sh
# but this one, on the host (no VM).  One line per test, "ok NAME",
# "FAIL NAME: its last line" or "skip NAME: why" (exit 4: something it
# needs is missing), its output in $XNC_OUT (tests/out/check-bench-*);
# then "N passed, N failed".  Exit 1 on a failure.  T=pattern: the tests
# whose name matches.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${XNC_OUT:-$top/tests/out/check-bench-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
pass=0 failed=0
for t in "$top"/bench/tests/*.sh; do
	name=bench/$(basename "$t" .sh)
	[ "$t" -ef "$0" ] && continue
	echo "$name" | grep -qE -- "${T:-.}" || continue
	log=$out/${name//\//_}.log
	if bash "$t" >"$log" 2>&1; then
		echo "ok $name"
		pass=$((pass + 1))
	elif [ $? = 4 ]; then
		echo "skip $name: $(tail -n1 "$log")"
	else
		echo "FAIL $name: $(tail -n1 "$log")"
		failed=$((failed + 1))
	fi
done
echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
