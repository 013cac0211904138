#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-debug: the guest tests on the debug kernel of
# scripts/debug-kernel.sh (KASAN, lockdep, PROVE_RCU, kmemleak, ...),
# built first if it is not yet.  The kernel is XNC_KLINE (make's KERNEL:
# 6.1, the default, 6.12, or the real-time 6.1-rt or 6.12-rt; RT=1): its
# debug kernel, built from its line's linux-source, the module built
# against that, its selftests.
#
#   scripts/check-debug.sh [PATTERN]   as tests/run.sh; also T=PATTERN
#   PART=N scripts/check-debug.sh      one part of the suite (1 to 4)
#   scripts/check-debug.sh --list-parts their patterns, one per line
#
# Without a pattern the whole suite runs as four parts, one VM boot each,
# each ending with its own kmemleak scan: a leak is then pinned to a part,
# and a failure or a timeout in one part does not cost the others.  The
# parts take 25 to 95 minutes each (docs/testing.md, "Debug kernel").
#
# The module and the test-only second livepatch are built against the debug
# tree into the run's directory (never into the source tree: a "make check"
# may be using the stock build), netdevsim into the cache (netdevsim.sh).
# tests/run.sh then boots the debug kernel (XNC_KERNEL) and runs the guest
# tests; a splat on the console fails the run as always (the debug kernel
# adds loglevel=5 so that lockdep and WARN() reach it), and a final
# kmemleak scan fails on leaks allocated through xfrm, dst or the module.
# The host tests are left out: they do not involve the kernel under test.
#
# Environment: XNC_OUT (default tests/out/debug-<date>-<pid>),
# XNC_TEST_TIMEOUT (VM seconds, default 4 x tests/run.sh's: the debug
# kernel is that much slower), XNC_SLOW (default 4, 12 on a real-time
# line: the same factor for the tests' own time limits, see
# tests/guest/lib.sh; the real-time debug kernel took 1.4 to 2.7 times as
# long as the other one for the same test), XNC_STRESS_MANY (default
# 2000: SAs and policies loaded at once by the stress suite, 10,000 in make
# check) and XNC_OFFLOAD_CYCLES (default 50 down/up cycles, 200 in make
# check): on this kernel each costs 10 to 25 times as much, and what they
# look for (resizes, rebuilds, a reference per cycle) comes long before.

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
pattern=${1:-${T:-}}
# the parts, in suite order; every guest test is in exactly one
parts=(
	'^(0|1|2)'				# load .. observability
	'^(30|40|50|70)'			# stress (CI profile), offload, strongSwan, package
	'^60-selftest-(ipsec|rtnetlink-ipsec)'	# ipsec.c is most of it
	'^60-selftest-(vrf-xfrm|xfrm-policy)'
)
if [ "$pattern" = --list-parts ]; then
	printf '%s\n' "${parts[@]}"
	exit 0
fi
if [ -n "${PART:-}" ]; then
	if ! [[ $PART =~ ^[1-9]$ ]] || [ "$PART" -gt ${#parts[@]} ]; then
		echo "check-debug.sh: PART must be 1 to ${#parts[@]}, not '$PART'" >&2
		exit 2
	fi
	[ -z "$pattern" ] || {
		echo "check-debug.sh: give PART or a pattern, not both" >&2
		exit 2
	}
	pattern=${parts[PART - 1]}
fi
# the kernel, checked, and the same for everything below (the debug
# kernel built, its headers, tests/run.sh)
kline=$(env -u XNC_KERNEL scripts/kernel.sh name) || exit 2
export XNC_KLINE=$kline
slow=4
case $kline in *-rt) slow=12 ;; esac

kernel=$(scripts/debug-kernel.sh)
kdir=$(XNC_KERNEL=$kernel scripts/kernel.sh kdir)
out=${XNC_OUT:-$top/tests/out/debug-$(date +%Y%m%d-%H%M%S)-$$}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# copies of the sources, built where the guest sees them
build() { # NAME DIR FILES...: make -C $kdir M=$out/NAME, log in NAME.build
	local name=$1 from=$2
	shift 2
	rm -rf "${out:?}/$name"
	mkdir -p "$out/$name"
	# shellcheck disable=SC2048,SC2086 # FILES may be globs, relative to DIR
	(cd "$from" && cp -r $* "$out/$name/")
	nice -n 19 make -C "$kdir" M="$out/$name" modules >"$out/$name.build" 2>&1 || {
		tail -n 30 "$out/$name.build" >&2
		echo "check-debug.sh: building $name against $kdir failed" >&2
		exit 1
	}
}
# the module and its test variants as every build of them is made: with
# the livepatch relocation step (scripts/build.sh)
{ nice -n 19 scripts/build.sh "$kdir" "$out/mod" &&
	nice -n 19 scripts/build.sh --variants "$kdir" "$out/mod"; } || {
	echo "check-debug.sh: building the module against $kdir failed" >&2
	exit 1
}
build klp-other "$top/tests/tools/klp-other" Kbuild '*.c'

echo "check-debug: $(cat "$kernel/kernelrelease") from $kernel; results in $out"
run() { # PATTERN DIR: one boot, its own kmemleak scan; prints its summary
	mkdir -p "$2"
	XNC_KERNEL=$kernel XNC_KLINES=$kline XNC_OUT=$2 XNC_HOST_TESTS=0 XNC_KMEMLEAK=1 XNC_SLOW=${XNC_SLOW:-$slow} \
		XNC_STRESS_MANY=${XNC_STRESS_MANY:-2000} XNC_OFFLOAD_CYCLES=${XNC_OFFLOAD_CYCLES:-50} \
		XNC_KO=$out/mod/xfrm_nocache.ko XNC_OTHER_KO=$out/klp-other/xnc_klp_other.ko \
		XNC_TEST_TIMEOUT=${XNC_TEST_TIMEOUT:-19200} \
		tests/run.sh "$1"
}
if [ -n "$pattern" ]; then
	run "$pattern" "$out"
	exit
fi

# the whole suite: every part, whatever the earlier ones gave
pass=0 fail=0 p=0
for pat in "${parts[@]}"; do
	p=$((p + 1))
	echo "check-debug: part $p of ${#parts[@]}: $pat"
	start=$SECONDS
	# a failed part must not end the loop (set -e, pipefail)
	run "$pat" "$out/part$p" | tee "$out/part$p.log" || true
	sum=$(tail -n1 "$out/part$p.log")
	echo "check-debug: part $p took $((SECONDS - start)) s: $sum"
	if [[ $sum =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		pass=$((pass + BASH_REMATCH[1]))
		fail=$((fail + BASH_REMATCH[2]))
	else
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
