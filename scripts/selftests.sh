#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own xfrm selftests, taken at test time from Debian's
# linux-source-<line> tarball of the kernel line under test (XNC_KLINE: 6.1,
# the default, or 6.12; scripts/kernel.sh); nothing of them is kept in this
# repository.
#
#   scripts/selftests.sh [prepare]   host: extract + build into the cache
#                                    (idempotent), print the cache dir
#   scripts/selftests.sh dir         print the cache dir if it is ready
#   scripts/selftests.sh list        the suites, one per line
#   scripts/selftests.sh run SUITE LOG
#                                    guest: run one suite, full output to
#                                    LOG, then print one summary line:
#     RESULT suite=S checks=N pass=P fail=F skip=K rc=R secs=T
#                                    followed by "# FAIL ..." / "# SKIP ..."
#                                    lines quoting the suite's own output.
#
# Suites (tools/testing/selftests/net/ of the tarball):
#   xfrm_policy      xfrm_policy.sh            PASS:/FAIL:/SKIP: lines
#   ipsec            ipsec.c, built here       kselftest TAP: ok/not ok
#   vrf-xfrm         vrf-xfrm-tests.sh         TEST: ... [ OK ]/[FAIL]
#   rtnetlink-ipsec  rtnetlink.sh's kci_test_ipsec and kci_test_ipsec_offload
#                    only: 6.12's with its -t option; 6.1's has none, so its
#                    functions are sourced and only those two are called,
#                    on the dummy device the script itself sets up
# 6.12's scripts source the lib.sh next to them (extracted too) from the
# current directory: they run in their own.
#
# Cache: $XNC_CACHE/selftests-<linux-source-<line> version> (default
# /var/cache/xfrm_nocache), outside the repo.  The guest reads it over the
# read-only host root, so "prepare" must run on the host first
# (tests/run.sh and scripts/selftests-table.sh do).

set -uo pipefail

XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
SUITES="xfrm_policy ipsec vrf-xfrm rtnetlink-ipsec"
SEL=tools/testing/selftests

die() { echo "selftests.sh: $*" >&2; exit 1; }

# the kernel line's source package and tarball
kline=$("$(dirname "$0")/kernel.sh" line) || exit 1
srcpkg=linux-source-$kline
TARBALL=${XNC_KSRC_TARBALL:-/usr/src/$srcpkg.tar.xz}

cachedir() {
	local v
	v=$(dpkg-query -W -f='${Version}' "$srcpkg" 2>/dev/null)
	[ -n "$v" ] || die "$srcpkg is not installed (run scripts/deps.sh)"
	echo "$XNC_CACHE/selftests-$v"
}

prepare() {
	local dir tmp top files
	dir=$(cachedir) || exit 1
	if [ -f "$dir/.ready" ]; then
		echo "$dir"
		return 0
	fi
	[ -r "$TARBALL" ] || die "$TARBALL missing (run scripts/deps.sh)"
	mkdir -p "$XNC_CACHE"
	tmp=$(mktemp -d "$XNC_CACHE/.selftests.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	chmod 755 "$tmp"
	top=$srcpkg
	files=(Makefile "$SEL/kselftest.h" "$SEL/net/ipsec.c" "$SEL/net/xfrm_policy.sh"
	       "$SEL/net/vrf-xfrm-tests.sh" "$SEL/net/rtnetlink.sh")
	# the scripts' shared helpers (setup_ns, ...), from 6.8 on
	[ "$kline" = 6.1 ] || files+=("$SEL/net/lib.sh")
	echo "selftests.sh: extracting from $TARBALL" >&2
	tar -xJf "$TARBALL" -C "$tmp" --strip-components=1 "${files[@]/#/$top/}" ||
		die "tar failed"
	# the flags of the selftest's own Makefile; uapi headers from the
	# installed linux-libc-dev (bookworm's, 6.1: 6.12's ipsec.c is the
	# same file and needs nothing newer)
	gcc -Wall -Wl,--no-as-needed -O2 -g -o "$tmp/$SEL/net/ipsec" \
		"$tmp/$SEL/net/ipsec.c" || die "building ipsec.c failed"
	# the kernel release these came from, for the table
	awk '/^VERSION =/ { v = $3 } /^PATCHLEVEL =/ { p = $3 }
	     /^SUBLEVEL =/ { s = $3 } END { print v "." p "." s }' \
		"$tmp/Makefile" >"$tmp/RELEASE"
	rm -rf "$dir"
	mv "$tmp" "$dir" || die "cannot move into $dir"
	trap - EXIT
	touch "$dir/.ready"
	echo "$dir"
}

readydir() {
	local dir
	dir=$(cachedir) || exit 1
	[ -f "$dir/.ready" ] ||
		die "$dir not prepared: run scripts/selftests.sh on the host first"
	echo "$dir"
}

# rtnetlink.sh's two ipsec tests only.  6.12's takes them with -t (and
# sets up its dummy device itself).  6.1's has no -t: the script without its
# main part (its functions), then only the ipsec ones, with the dummy device
# kci_test_rtnl would have created.  For kci_test_ipsec_offload, netdevsim
# (Debian does not build it) is loaded from the path scripts/netdevsim.sh
# printed on the host into $XNC_OUT/netdevsim.path; without it the test
# skips, as the suite does.
rtnl_ipsec() {
	local src=$1 funcs rc nds=
	if [ ! -w /sys/bus/netdevsim/new_device ] && [ -s "${XNC_OUT:-}/netdevsim.path" ]; then
		modprobe -q psample
		insmod "$(cat "$XNC_OUT/netdevsim.path")" && nds=1
	fi
	if grep -q '^while getopts t:' "$src"; then
		bash "$src" -t "kci_test_ipsec kci_test_ipsec_offload"
		rc=$?
		[ -n "$nds" ] && rmmod netdevsim
		return $rc
	fi
	grep -q '^#check for needed privileges' "$src" ||
		{ echo "FAIL: rtnetlink.sh layout changed, cannot split it"; return 1; }
	# no process substitution: the guest has no /dev/fd
	funcs=$(mktemp /tmp/rtnetlink-funcs.XXXXXX)
	sed '/^#check for needed privileges/,$d' "$src" >"$funcs"
	(
		# shellcheck disable=SC1090
		source "$funcs"
		declare -F kci_test_ipsec kci_test_ipsec_offload >/dev/null ||
			{ echo "FAIL: rtnetlink.sh has no kci_test_ipsec"; exit 1; }
		ret=0
		kci_add_dummy
		[ $ret -eq 0 ] || { echo "FAIL: cannot add dummy interface"; exit 1; }
		rc=0
		kci_test_ipsec || rc=1
		kci_test_ipsec_offload
		r=$?
		[ $r -ne 0 ] && [ $r -ne 4 ] && rc=1
		kci_del_dummy
		exit $rc
	)
	rc=$?
	rm -f "$funcs"
	[ -n "$nds" ] && rmmod netdevsim
	return $rc
}

run() {
	local suite=$1 log=$2 dir d start rc secs slow
	dir=$(readydir) || exit 1
	d=$dir/$SEL/net
	# 6.12's scripts "source lib.sh" from the current directory
	if [ -f "$d/lib.sh" ]; then cd "$d"; else cd /tmp; fi || exit 1
	# The guest's devtmpfs lacks the links udev would make; without them
	# xfrm_policy.sh's "ip -batch /dev/stdin" silently installs none of
	# its ~1400 dummy policies.
	[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
	for f in stdin:0 stdout:1 stderr:2; do
		[ -e "/dev/${f%:*}" ] || ln -s "/proc/self/fd/${f#*:}" "/dev/${f%:*}"
	done
	start=$(date +%s)
	# time limits: several times the suites' time on Debian's kernel,
	# times XNC_SLOW on a slower one (lib.sh; the debug kernel's
	# xfrm_policy.sh takes more than an hour)
	slow=${XNC_SLOW:-1}
	case $suite in
	xfrm_policy) timeout $((3600 * slow)) bash "$d/xfrm_policy.sh" ;;
	ipsec) timeout $((3600 * slow)) "$d/ipsec" ;;
	vrf-xfrm) timeout $((900 * slow)) bash "$d/vrf-xfrm-tests.sh" ;;
	rtnetlink-ipsec) rtnl_ipsec "$d/rtnetlink.sh" ;;
	*) die "unknown suite $suite (one of: $SUITES)" ;;
	esac >"$log" 2>&1 </dev/null
	rc=$?
	secs=$(($(date +%s) - start))
	parse "$suite" "$log" "$rc" "$secs"
}

# parse SUITE LOG RC SECS: count the suite's own verdicts
parse() {
	local suite=$1 log=$2 rc=$3 secs=$4 p f s
	case $suite in
	xfrm_policy | rtnetlink-ipsec)
		p=$(grep -c '^PASS:' "$log")
		f=$(grep -c '^FAIL:' "$log")
		s=$(grep -c '^SKIP' "$log")
		grep -E '^(FAIL|SKIP)' "$log" | sed 's/^/# /'
		;;
	ipsec)
		p=$(grep -E '^ok [0-9]+' "$log" | grep -vc '# SKIP')
		f=$(grep -cE '^not ok [0-9]+' "$log")
		s=$(grep -E '^ok [0-9]+' "$log" | grep -c '# SKIP')
		grep -E '^not ok|^ok [0-9]+ # SKIP' "$log" | sed 's/^/# FAIL /; s/^# FAIL ok/# SKIP ok/'
		# the plan line ("1..N"): a check that never reported is a failure
		local plan
		plan=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$log" | head -n1)
		if [ -n "$plan" ] && [ $((p + f + s)) -lt "$plan" ]; then
			echo "# FAIL only $((p + f + s)) of the $plan planned checks reported"
			f=$((f + plan - p - f - s))
		fi
		;;
	vrf-xfrm)
		p=$(grep -cE '^TEST: .*\[ OK \]$' "$log")
		f=$(grep -cE '^TEST: .*\[FAIL\]$' "$log")
		s=$(grep -cE '^TEST: .*\[SKIP\]$' "$log")
		grep -E '^TEST: .*\[(FAIL|SKIP)\]$' "$log" | sed 's/^/# /'
		;;
	esac
	# a suite that fails (or times out: 124) without saying which check
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ] && [ "$f" -eq 0 ]; then
		echo "# FAIL suite exited $rc: $(tail -n1 "$log")"
		f=1
	fi
	if [ "$rc" -eq 4 ] && [ $((p + f + s)) -eq 0 ]; then
		echo "# SKIP whole suite: $(tail -n1 "$log")"
		s=1
	fi
	echo "RESULT suite=$suite checks=$((p + f + s)) pass=$p fail=$f skip=$s rc=$rc secs=$secs"
}

case "${1:-prepare}" in
prepare) prepare ;;
dir) readydir ;;
list) echo "$SUITES" | tr ' ' '\n' ;;
run)
	[ $# -eq 3 ] || die "usage: $0 run SUITE LOG"
	run "$2" "$3"
	;;
*) die "usage: $0 [prepare|dir|list|run SUITE LOG]" ;;
esac
