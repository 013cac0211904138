#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own xfrm selftests, taken at test time from Debian's
# linux-source-<line> tarball of the kernel line under test (XNC_KLINE: 6.1,
# the default, 6.12, their -rt flavors, or Debian 13's 13, 13-rt, 7.3;
# scripts/kernel.sh); nothing of them is kept in this repository.  The
# tarball: the host's installed package for Debian 12's kernels; for
# Debian 13's, trixie's linux-source-6.12 or trixie-backports'
# linux-source-7.3 (scripts/trixie-source.sh), fetched into the cache
# once; XNC_KSRC_TARBALL: another one.
#
#   scripts/selftests.sh [prepare]   host: extract + build into the cache
#                                    (idempotent), print the cache dir
#   scripts/selftests.sh dir         print the cache dir if it is ready
#   scripts/selftests.sh source      print "TARBALL VERSION": the tarball
#                                    and its Debian version, as prepare
#                                    takes them (no network: the cached one)
#   scripts/selftests.sh list [core] the suites of this kernel line, one per
#                                    line (core: make check's only)
#   scripts/selftests.sh run SUITE LOG
#                                    guest: run one suite, full output to
#                                    LOG, then print one summary line:
#     RESULT suite=S checks=N pass=P fail=F skip=K rc=R secs=T [ping_ms=M]
#                                    (ping_ms: ipsec's pause between pings)
#                                    followed by "# FAIL ..." / "# SKIP ..."
#                                    lines quoting the suite's own output.
#   scripts/selftests.sh parse SUITE LOG RC SECS
#                                    the same lines for a LOG already written
#                                    (RC: the suite's exit status)
#
# Suites (tools/testing/selftests/net/ of the tarball).  The core ones,
# which make check runs too (tests/guest/t-60-selftest-*):
#   xfrm_policy      xfrm_policy.sh            PASS:/FAIL:/SKIP: lines
#   ipsec            ipsec.c, built here       kselftest TAP: ok/not ok
#                    with one child, as its Makefile runs it, and its
#                    pings 1 ms apart, not 50 (IPSEC_PING_MS below)
#   vrf-xfrm         vrf-xfrm-tests.sh         TEST: ... [ OK ]/[FAIL]
#   rtnetlink-ipsec  rtnetlink.sh's kci_test_ipsec and kci_test_ipsec_offload
#                    only: 6.12's with its -t option; 6.1's has none, so its
#                    functions are sourced and only those two are called,
#                    on the dummy device the script itself sets up
# and the others that put xfrm to work, for scripts/selftests-table.sh:
#   pmtu-vti         pmtu.sh's tests named pmtu_vti*, given as its
#                    arguments (nettest.c built here for the ESP-in-UDP
#                    ones)                     TEST: ... [ OK ]/[FAIL]/[SKIP]
#   l2tp             l2tp.sh: L2TPv3 over IP, then with ESP transport mode
#                    under it                  TEST: ... [ OK ]/[FAIL]
#   nft-flowtable    netfilter's nft_flowtable.sh (not 6.1's, in
#                    net/netfilter/ from 6.8 on), whole: flowtable offload,
#                    its last check TCP through an ESP tunnel
#                                              PASS:/FAIL:/SKIP: lines
#   xfrm-policy-add-speed
#                    xfrm_policy_add_speed.sh (not 6.1's): policy
#                    insertion, timed; a check per batch, "Inserted N
#                    policies in T ms", failed by a WARNING: line
#   xfrm-state       xfrm_state.sh (7.x only), whole: ICMP errors and
#                    PMTU through an ESP tunnel between two gateways
#                                              TEST: ... [ PASS ]/[ FAIL ]/[SKIP]
# A suite that reports no check, or fails without a failed check, counts
# as one failed check.
# 6.12's scripts source the lib.sh next to them (extracted too) from the
# current directory: they run in their own.  A kernel has its upstream
# line's suites (scripts/kernel.sh line): 13's and 13-rt's are 6.12's.
#
# Cache: $XNC_CACHE/selftests-<linux-source-<line> version>-<manifest sum>
# (default /var/cache/xfrm_nocache), outside the repo: the files taken and
# the programs built (manifest()) are part of its name, so that a cache
# made for another list is never used for this one, nor one that an older
# checkout may be reading replaced.  The guest reads it over the
# read-only host root, so "prepare" must run on the host first
# (tests/run.sh and scripts/selftests-table.sh do).

set -uo pipefail

XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
SEL=tools/testing/selftests
# the selftest Makefile's flags for ipsec.c and nettest.c
CFLAGS=(-Wall "-Wl,--no-as-needed" -O2 -g)
# ipsec.c's one change: the pause between two of a test's pings.  Each of
# its 100 tunnel tests sends 100 UDP pings each way and passes when 80
# came back within 300 us; the 50 ms pause between them is most of its
# 18 minutes under TCG.  What it checks stays the same.  (Its nr_process
# argument is no way out: its children share one pair of namespaces, and
# two of them running the "expire state" and "expire policy" checks at
# once can each read the other's expiry message, which all listeners of
# XFRMNLGRP_EXPIRE get.)
IPSEC_PING_MS=1

die() { echo "selftests.sh: $*" >&2; exit 1; }

# the kernel line and its source package
here=$(dirname "$0")
kline=$("$here/kernel.sh" line) || exit 1
srcpkg=linux-source-$kline

# The suites: make check's (CORE) and the table's others, with the files
# they take from the tarball, the helpers their scripts source included.
CORE="xfrm_policy ipsec vrf-xfrm rtnetlink-ipsec"
SUITES="$CORE pmtu-vti l2tp"
FILES=(Makefile "$SEL/kselftest.h" "$SEL/net/ipsec.c" "$SEL/net/xfrm_policy.sh"
       "$SEL/net/vrf-xfrm-tests.sh" "$SEL/net/rtnetlink.sh"
       "$SEL/net/pmtu.sh" "$SEL/net/nettest.c" "$SEL/net/l2tp.sh")
# 6.1 has no nft-flowtable: its nft_flowtable.sh kills both ends of each
# TCP transfer 3 s after it starts them, and under TCG its 20 MB take
# longer, stock's as well (2026-12-06: stock failed 9 of its 16 checks
# with files cut short, the module 6 of 15)
if [ "$kline" != 6.1 ]; then
	# from 6.8 on: the scripts' shared helpers (setup_ns, ...),
	# pmtu.sh's net_helper.sh, the netfilter tests under net/ with a
	# lib.sh of their own that sources net/lib.sh; and a policy
	# insertion benchmark
	NFT=$SEL/net/netfilter
	SUITES="$SUITES nft-flowtable xfrm-policy-add-speed"
	FILES+=("$SEL/net/lib.sh")
	# (7.x: gone into lib.sh)
	[ "$kline" != 6.12 ] || FILES+=("$SEL/net/net_helper.sh")
	FILES+=("$NFT/nft_flowtable.sh" "$NFT/lib.sh" "$SEL/net/xfrm_policy_add_speed.sh")
fi
# 7.x: lib.sh sources lib/sh/defer.sh; ipsec.c includes "kselftest.h",
# found by its Makefile's -I../ (6.12's has it too, unneeded there: left
# out, so that the caches made without it stay valid); xfrm_state.sh, new
case $kline in
6.1 | 6.12) ;;
*)
	SUITES="$SUITES xfrm-state"
	FILES+=("$SEL/net/lib/sh/defer.sh" "$SEL/net/xfrm_state.sh")
	CFLAGS+=(-I../)
	;;
esac

# what the cache holds: the files taken and the programs built (how)
manifest() {
	printf 'file %s\n' "${FILES[@]}"
	echo "built $SEL/net/ipsec $SEL/net/nettest: gcc ${CFLAGS[*]}"
	echo "ipsec.c: ping_delay_nsec = $IPSEC_PING_MS ms"
}

# srcinfo [fetch]: print "TARBALL VERSION" of the line's source
# (scripts/kernel.sh source): Debian 13's the cached one, or with "fetch"
# (prepare, on the host) fetched when there is none; the guest never
# fetches.
srcinfo() {
	if [ "${1:-}" = fetch ]; then
		"$here/kernel.sh" source
	else
		"$here/kernel.sh" source --cached
	fi
}

# cachedir VERSION
cachedir() {
	local m
	m=$(manifest | md5sum | cut -c1-8)
	echo "$XNC_CACHE/selftests-$1-$m"
}

prepare() {
	local dir tmp top p TARBALL v
	read -r TARBALL v <<<"$(srcinfo fetch)"
	[ -n "$v" ] || exit 1
	dir=$(cachedir "$v")
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
	echo "selftests.sh: extracting from $TARBALL" >&2
	tar -xJf "$TARBALL" -C "$tmp" --strip-components=1 "${FILES[@]/#/$top/}" ||
		die "tar failed"
	# ipsec.c's ping pause (IPSEC_PING_MS above)
	sed -i -E "s/^(const unsigned int ping_delay_nsec[[:space:]]*=) 50 (\* 1000 \* 1000;)\$/\1 $IPSEC_PING_MS \2/" \
		"$tmp/$SEL/net/ipsec.c"
	grep '^const unsigned int ping_delay_nsec' "$tmp/$SEL/net/ipsec.c" |
		grep -qF "= $IPSEC_PING_MS * 1000 * 1000;" ||
		die "ipsec.c: no 'ping_delay_nsec = 50 * 1000 * 1000;' to change"
	# the flags of the selftest's own Makefile, in its directory; uapi
	# headers from the installed linux-libc-dev (bookworm's, 6.1: 6.12's
	# and 7.3's ipsec.c and nettest.c need nothing newer).  Built here
	# for Debian 13's guests too: a bookworm binary runs on trixie's
	# newer glibc.
	for p in ipsec nettest; do
		(cd "$tmp/$SEL/net" && gcc "${CFLAGS[@]}" -o "$p" "$p.c") ||
			die "building $p.c failed"
	done
	manifest >"$tmp/MANIFEST"
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
	local dir v
	read -r _ v <<<"$(srcinfo)"
	[ -n "$v" ] || exit 1
	dir=$(cachedir "$v")
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

# pmtu.sh's vti tests only (the others involve no xfrm): those of its
# "tests" list named pmtu_vti*, as its arguments, in its own directory,
# where it finds the nettest built there (the ESP-in-UDP tests' UDP
# encapsulation sockets).  The plan line first lets parse() count a test
# that never reported: 6.12's pmtu.sh skips one without a TEST line when
# nettest is missing.
pmtu_vti() {
	local d=$1 t
	read -ra t <<<"$(awk '/^tests="/ { on = 1; next }
			     on && $1 ~ /^pmtu_vti/ { printf "%s ", $1 }
			     on && /"$/ { exit }' "$d/pmtu.sh")"
	[ ${#t[@]} -gt 0 ] || { echo "selftests.sh: pmtu.sh lists no pmtu_vti test"; return 1; }
	echo "selftests.sh: plan ${#t[@]}: ${t[*]}"
	(cd "$d" && timeout $((900 * slow)) bash ./pmtu.sh "${t[@]}")
}

# nft_flowtable.sh, whole (its checks build on one another; the last one is
# TCP through an ESP tunnel between the routers), in its own directory
# (6.12's sources its lib.sh from there), with its default MTUs given
# explicitly: without arguments 6.12's runs itself again with random MTUs
# and file size, and both columns of the table must run the same test.
nft_flowtable() {
	local d=$1 m=() o v
	for o in o l r; do
		v=$(sed -n "s/^${o}mtu=\([0-9]*\)$/\1/p" "$d/nft_flowtable.sh")
		[ -z "$v" ] || m+=("-$o" "$v")
	done
	(cd "$d" && timeout $((1800 * slow)) bash ./nft_flowtable.sh "${m[@]}")
}

# xfrm_state.sh, whole, in its own directory (". lib.sh"), with the -e
# of its #! line; the plan line first (its "tests" list), as pmtu_vti's
xfrm_state() {
	local d=$1 t
	read -ra t <<<"$(awk '/^tests="/ { on = 1; next }
			     on && NF { printf "%s ", $1 }
			     on && /"$/ { exit }' "$d/xfrm_state.sh")"
	[ ${#t[@]} -gt 0 ] || { echo "selftests.sh: xfrm_state.sh lists no test"; return 1; }
	echo "selftests.sh: plan ${#t[@]}: ${t[*]}"
	(cd "$d" && timeout $((900 * slow)) bash -e ./xfrm_state.sh)
}

run() {
	local suite=$1 log=$2 dir d start rc secs slow ms
	case " $SUITES " in
	*" $suite "*) ;;
	*) die "no suite $suite on $kline (one of: $SUITES)" ;;
	esac
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
	pmtu-vti) pmtu_vti "$d" ;;
	l2tp) (cd "$d" && timeout $((900 * slow)) bash ./l2tp.sh) ;;
	nft-flowtable) nft_flowtable "$dir/$NFT" ;;
	# KSFT_MACHINE_SLOW: its batches up to 10,000 policies, not
	# 100,000: the guest is TCG
	xfrm-policy-add-speed)
		(cd "$d" && KSFT_MACHINE_SLOW=yes timeout $((1800 * slow)) \
			bash ./xfrm_policy_add_speed.sh) ;;
	xfrm-state) xfrm_state "$d" ;;
	esac >"$log" 2>&1 </dev/null
	rc=$?
	secs=$(($(date +%s) - start))
	# ipsec.c's pause between pings as its build had it (the cache's
	# MANIFEST), for the tables that quote the run
	ms=
	[ "$suite" != ipsec ] ||
		ms=$(sed -n 's/^ipsec\.c: ping_delay_nsec = \([0-9]*\) ms$/\1/p' "$dir/MANIFEST")
	parse "$suite" "$log" "$rc" "$secs" | sed "/^RESULT /s/\$/${ms:+ ping_ms=$ms}/"
}

# parse SUITE LOG RC SECS: count the suite's own verdicts
parse() {
	local suite=$1 log=$2 rc=$3 secs=$4 p f s asked
	case $suite in
	xfrm_policy | rtnetlink-ipsec | nft-flowtable)
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
	vrf-xfrm | pmtu-vti | l2tp)
		p=$(grep -cE '^TEST: .*\[ OK \]$' "$log")
		f=$(grep -cE '^TEST: .*\[FAIL\]$' "$log")
		s=$(grep -cE '^TEST: .*\[SKIP\]$' "$log")
		grep -E '^TEST: .*\[(FAIL|SKIP)\]$' "$log" | sed 's/^/# /'
		;;
	xfrm-state)
		# "[ FAIL ]" followed by the test's name
		p=$(grep -cE '^TEST: .*\[ PASS \]$' "$log")
		f=$(grep -cE '^TEST: .*\[ FAIL \]' "$log")
		s=$(grep -cE '^TEST: .*\[SKIP\]$' "$log")
		grep -E '^TEST: .*(\[ FAIL \]|\[SKIP\]$)' "$log" | sed 's/^/# /'
		;;
	xfrm-policy-add-speed)
		# a check per batch, "Inserted N policies in T ms"; a WARNING:
		# fails the batch it names: the one after it (insertion
		# cancelled at its time limit) or, for a mismatch, the one
		# before it.  A WARNING: with no batch after it (the script
		# stopped) is a failed check of its own.
		read -r p f <<<"$(awk '
			/^WARNING: mismatch/ { if (n) bad[n] = 1; next }
			/^WARNING:/ { pend = 1; next }
			/^Inserted [0-9]+ +policies/ { n++; if (pend) bad[n] = 1; pend = 0 }
			END { if (pend) bad[++n] = 1
			      for (i in bad) f++
			      print n - f, f + 0 }' "$log")"
		s=0
		grep '^WARNING:' "$log" | sed 's/^/# FAIL /'
		;;
	*) die "no parse rule for suite $suite" ;;
	esac
	# the number of checks selftests.sh asked for, in the log's first
	# lines (pmtu-vti, xfrm-state): one that never reported is a failure
	asked=$(sed -n 's/^selftests\.sh: plan \([0-9]*\):.*/\1/p' "$log" | head -n1)
	if [ -n "$asked" ] && [ $((p + f + s)) -lt "$asked" ]; then
		echo "# FAIL only $((p + f + s)) of the $asked planned checks reported"
		f=$((f + asked - p - f - s))
	fi
	# nft-flowtable's one check through xfrm (TCP through the ESP tunnel)
	# is its last: the script stopped before it, unless it skipped
	# altogether
	if [ "$suite" = nft-flowtable ] && [ "$rc" -ne 4 ] &&
	   ! grep -qE '^(PASS|FAIL): ipsec tunnel mode' "$log"; then
		echo "# FAIL no verdict on the ipsec tunnel mode check"
		f=$((f + 1))
	fi
	# a suite that fails (or times out: 124) without saying which check
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ] && [ "$f" -eq 0 ]; then
		echo "# FAIL suite exited $rc: $(tail -n1 "$log")"
		f=1
	fi
	if [ "$rc" -eq 4 ] && [ $((p + f + s)) -eq 0 ]; then
		echo "# SKIP whole suite: $(tail -n1 "$log")"
		s=1
	fi
	# a suite that ran nothing it reported
	if [ "$rc" -eq 0 ] && [ $((p + f + s)) -eq 0 ]; then
		echo "# FAIL no check reported: $(tail -n1 "$log")"
		f=1
	fi
	echo "RESULT suite=$suite checks=$((p + f + s)) pass=$p fail=$f skip=$s rc=$rc secs=$secs"
}

case "${1:-prepare}" in
prepare) prepare ;;
dir) readydir ;;
source) srcinfo ;;
list)
	case ${2:-} in
	"") echo "$SUITES" ;;
	core) echo "$CORE" ;;
	*) die "usage: $0 list [core]" ;;
	esac | tr ' ' '\n'
	;;
run)
	[ $# -eq 3 ] || die "usage: $0 run SUITE LOG"
	run "$2" "$3"
	;;
parse)
	[ $# -eq 5 ] || die "usage: $0 parse SUITE LOG RC SECS"
	parse "$2" "$3" "$4" "$5"
	;;
*) die "usage: $0 [prepare|dir|source|list [core]|run SUITE LOG|parse SUITE LOG RC SECS]" ;;
esac
