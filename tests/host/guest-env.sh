#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Of the host's environment only the XNC_* variables tests/guest/env lists
# reach the guest (scripts/vm.sh).  Every XNC_* variable the guest's code
# names outside a comment must be listed there, or be one the guest sets
# itself, or one a script both sides run reads only on its host path (the
# two lists below); each one listed must be named by the guest's code.
# The guest's code: tests/guest/*, bench/guest/*, the scripts they run
# (scripts/selftests.sh, with the kernel.sh and trixie-source.sh it runs,
# and scripts/xfrm-nocache-stats).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
fail() { echo "FAIL: $*"; exit 1; }

# set in the guest: by runner.sh (XNC_TOP, which lib.sh also defaults;
# XNC_LOAD_ARGS), lib.sh (XNC_RC, XNC_AT_EXIT, XNC_DMESG_MARK),
# bench/guest/latency.sh (XNC_BENCH_LIB), t-70-package from the run's
# package.env (XNC_PKG_*)
internal="XNC_TOP XNC_LOAD_ARGS XNC_RC XNC_AT_EXIT XNC_DMESG_MARK XNC_BENCH_LIB
XNC_PKG_DEB XNC_PKG_K2 XNC_PKG_HDR2 XNC_PKG_HDR2_DEB"
# host paths only: scripts/kernel.sh's version (XNC_KVER_OF) and error
# messages (XNC_DEPS_KERNELS; the guest runs only its line and source
# --cached), trixie-source.sh's fetch (XNC_TRIXIE_SUITES), the sample
# /proc of xfrm-nocache-stats that host test stats-prom gives it
hostonly="XNC_KVER_OF XNC_DEPS_KERNELS XNC_TRIXIE_SUITES XNC_STATS_PROC_DIR"

vm=$(grep -v '^[[:space:]]*#' scripts/vm.sh)
if ! grep -q 'tests/guest/env' <<<"$vm" || grep -q compgen <<<"$vm"; then
	fail "scripts/vm.sh does not take the variables it passes from tests/guest/env alone"
fi
listed=$(grep -oE '^XNC_[A-Z0-9_]+' tests/guest/env | sort)
dup=$(uniq -d <<<"$listed")
[ -z "$dup" ] || fail "tests/guest/env lists twice: $dup"
named=$({
	for f in tests/guest/* bench/guest/* scripts/selftests.sh scripts/kernel.sh \
		scripts/trixie-source.sh scripts/xfrm-nocache-stats; do
		[ "$f" = tests/guest/env ] || cat "$f"
	done
} | grep -v '^[[:space:]]*#' | grep -oE 'XNC_[A-Z0-9_]+' | sort -u)

bad=0
has() { grep -qxF -- "$1" <<<"$2"; }
known=$(xargs -n1 <<<"$internal $hostonly")
for v in $named; do
	has "$v" "$listed" || has "$v" "$known" ||
		{ echo "guest code reads $v: not in tests/guest/env, nor known here as not crossing"; bad=1; }
done
for v in $listed; do
	! has "$v" "$known" || { echo "$v is in tests/guest/env and known as not crossing"; bad=1; }
done
for v in $listed $known; do
	has "$v" "$named" || { echo "$v is listed, but no guest code reads it"; bad=1; }
done
[ $bad = 0 ] || fail "tests/guest/env is out of step with the guest's code"
echo "$(wc -w <<<"$listed") variables cross, of the $(wc -w <<<"$named") XNC_* ones guest code reads"
