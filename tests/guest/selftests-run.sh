#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest side of the kernel's xfrm selftests: run one of the suites
# scripts/selftests.sh prepared on the host and count its verdicts.  The
# suites and the cache dir come from its "list" and "dir", which only read.
#
#   tests/guest/selftests-run.sh run SUITE LOG
#                     run one suite, full output to LOG, then print one
#                     summary line:
#     RESULT suite=S checks=N pass=P fail=F skip=K rc=R secs=T [ping_ms=M]
#                     (ping_ms: ipsec's pause between pings) followed by
#                     "# FAIL ..." / "# SKIP ..." lines quoting the suite's
#                     own output.
#   tests/guest/selftests-run.sh parse SUITE LOG RC SECS
#                     the same lines for a LOG already written (RC: the
#                     suite's exit status); text only, the host's
#                     tests/host/selftests-parse.sh checks it
#
# The suites and their output formats: scripts/selftests.sh.  A suite that
# reports no check, or fails without a failed check, counts as one failed
# check.  6.12's scripts source the lib.sh next to them (extracted too)
# from the current directory: they run in their own.

set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
st=$top/scripts/selftests.sh
SEL=tools/testing/selftests

die() { echo "selftests-run.sh: $*" >&2; exit 1; }

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
	local suite=$1 log=$2 all dir d start rc secs slow ms
	all=$("$st" list | paste -sd' ') || exit 1
	case " $all " in
	*" $suite "*) ;;
	*) die "no suite $suite on $("$top/scripts/kernel.sh" line) (one of: $all)" ;;
	esac
	dir=$("$st" dir) || exit 1
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
	nft-flowtable) nft_flowtable "$d/netfilter" ;;
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
	# the number of checks run() asked for, its "selftests.sh: plan N:"
	# line first in the log (pmtu-vti, xfrm-state; the name logs have
	# always had): one that never reported is a failure
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

case "${1:-}" in
run)
	[ $# -eq 3 ] || die "usage: $0 run SUITE LOG"
	run "$2" "$3"
	;;
parse)
	[ $# -eq 5 ] || die "usage: $0 parse SUITE LOG RC SECS"
	parse "$2" "$3" "$4" "$5"
	;;
*) die "usage: $0 run SUITE LOG | parse SUITE LOG RC SECS" ;;
esac
