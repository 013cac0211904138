#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run every test: host-side ones here, guest-side ones in one VM boot of
# Debian's kernel.  Prints one line per test and a final "N passed, N failed".
#
#   tests/run.sh [PATTERN]     only tests whose name matches PATTERN (grep -E)
#
# Environment: XNC_TEST_TIMEOUT (VM seconds, default 4800), XNC_OUT (results
# directory, default a new one under tests/out/), XNC_HOST_TESTS=0 (guest
# tests only: make check-debug, whose kernel the host tests do not use).

set -uo pipefail
shopt -s nullglob

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
pattern=${1:-${T:-.}}
# a fresh directory per run (several runs may wait on the VM lock at once);
# tests/out/latest points at the newest
out=${XNC_OUT:-$top/tests/out/$(date +%Y%m%d-%H%M%S)-$$}
mkdir -p "$out"
ln -sfn "$out" "$top/tests/out/latest" 2>/dev/null || true

pass=0 fail=0 skip=0
count() {
	pass=$((pass + $(grep -c '^ok ' "$1"))) || true
	fail=$((fail + $(grep -c '^FAIL ' "$1"))) || true
	skip=$((skip + $(grep -c '^skip ' "$1"))) || true
}

# Host-side tests (no VM): tests/host/*.sh
: >"$out/host.results"
[ "${XNC_HOST_TESTS:-1}" = 0 ] || for t in tests/host/*.sh; do
	name=host/$(basename "$t" .sh)
	echo "$name" | grep -qE -- "$pattern" || continue
	if bash "$t" >"$out/${name//\//_}.log" 2>&1; then
		echo "ok $name" | tee -a "$out/host.results"
	else
		rc=$?
		if [ $rc = 4 ]; then
			echo "skip $name: $(tail -n1 "$out/${name//\//_}.log")" | tee -a "$out/host.results"
		else
			echo "FAIL $name: $(tail -n1 "$out/${name//\//_}.log")" | tee -a "$out/host.results"
		fi
	fi
done
count "$out/host.results"

# Guest-side tests: one boot, tests/guest/runner.sh runs them in order.
if ls tests/guest/t-*.sh 2>/dev/null | xargs -n1 basename | sed 's/^t-//; s/\.sh$//' |
   grep -qE -- "$pattern"; then
	# The kernel's own selftests (t-60-selftest-*): extracted and built
	# into the host cache, which the guest only reads.
	scripts/selftests.sh >/dev/null ||
		echo "selftests.sh prepare failed: t-60-selftest-* will fail" >&2
	# netdevsim, the simulated offload NIC of t-40-offload-*: built into
	# the host cache; the guest reads the path from $out/netdevsim.path.
	scripts/netdevsim.sh >"$out/netdevsim.path" 2>"$out/netdevsim.log" || {
		rm -f "$out/netdevsim.path"
		echo "netdevsim.sh failed (see $out/netdevsim.log): t-40-offload-* will fail" >&2
	}
	XNC_QUIET=${XNC_QUIET-1} scripts/vm.sh --timeout "${XNC_TEST_TIMEOUT:-4800}" \
		--out "$out" --log "$out/console.log" -- \
		"$top/tests/guest/runner.sh" "$pattern"
	vrc=$?
	touch "$out/guest.results"
	cat "$out/guest.results"
	count "$out/guest.results"
	if [ $vrc -ne 0 ] && [ $vrc -ne 1 ]; then
		# 1 is "some test failed" (already counted); anything else is the
		# VM itself: timeout, crash, or a splat on the console.
		echo "FAIL vm: scripts/vm.sh exited $vrc (see $out/console.log)"
		if [ -s "$out/splats" ]; then
			head -n 20 "$out/splats"
			# the first splat with its backtrace, for a CI log
			first=$(head -n1 "$out/splats" | cut -d: -f1)
			echo "--- console.log from line $first ---"
			sed -n "${first},$((first + 80))p" "$out/console.log"
			echo "---"
		fi
		fail=$((fail + 1))
	fi
fi

if [ $skip -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ $fail -eq 0 ] && [ $((pass + fail)) -gt 0 ]
