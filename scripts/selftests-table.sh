#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's own xfrm selftests (scripts/selftests.sh) twice each,
# stock (module not loaded) and with the module loaded, one VM boot per
# suite (so other VM users get the machine between suites), and write the
# side-by-side table to docs/selftests.md (kernel line 6.1) or
# docs/selftests-6.12.md (6.12).
#
#   scripts/selftests-table.sh            (or: make selftests-table)
#   XNC_KLINE=6.12 scripts/selftests-table.sh   (make selftests-table KERNEL=6.12)
#
# The kernel is XNC_KLINE (make's KERNEL: 6.1, the default, 6.12, 6.1-rt or
# 6.12-rt; another kernel writes docs/selftests-<kernel>.md): Debian's
# kernel boots, the selftests come from its line's linux-source, and the
# module is built for it (scripts/build.sh, into XNC_OUT; XNC_KO for
# another build).
# Environment: XNC_SELFTESTS (suites to run, default all; a subset writes
# the table into $XNC_OUT instead of docs/), XNC_OUT (results and raw suite
# logs, default a fresh /tmp dir), XNC_TABLE_TIMEOUT (VM seconds per suite,
# default 5400).  "guest" is the part that runs inside the VM.

set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
st=$top/scripts/selftests.sh

guest() {
	export XNC_TOP=$top
	# shellcheck source=../tests/guest/lib.sh
	. "$top/tests/guest/lib.sh"
	local res=$XNC_OUT/table.results T=/sys/kernel/tracing probe=xnc_table
	local suite mode r hits splat
	splat='BUG:|WARNING:|Oops|general protection|refcount_t|unregister_netdevice: waiting|RCU stall|rcu: INFO'
	uname -r >"$XNC_OUT/guest.kver"
	for m in xfrm_user xfrm_interface esp4 esp6 ah4 ah6 xfrm_ipcomp ipcomp \
		 ipcomp6 veth dummy vrf xt_policy; do
		modprobe -q "$m" 2>/dev/null
	done
	echo 0 >$T/tracing_on
	for suite in "$@"; do
		for mode in stock module; do
			for ns in $(ip netns list | awk '{print $1}'); do ip netns del "$ns"; done
			ip xfrm policy flush; ip xfrm state flush
			dmesg -c >/dev/null
			hits=-
			if [ $mode = module ]; then
				xnc_load || { echo "# $suite $mode: insmod failed" >>"$res"; continue; }
				echo "p:$probe xnc_lookup_with_ifid" >>$T/kprobe_events &&
					echo 1 >$T/events/kprobes/$probe/enable
			else
				mod_loaded && xnc_unload
				[ ! -e $LP ] || { echo "# $suite $mode: livepatch still present" >>"$res"; continue; }
			fi
			echo "== $suite $mode" >&2
			r=$("$st" run "$suite" "$XNC_OUT/$suite.$mode.log")
			echo "$r" >&2
			if [ $mode = module ]; then
				hits=$(awk -v p="$probe" '$1 == p { print $2 }' $T/kprobe_profile)
				[ "$(cat $LP/enabled 2>/dev/null)" = 1 ] ||
					r="$r"$'\n'"# FAIL livepatch no longer enabled after the suite"
				echo 0 >$T/events/kprobes/$probe/enable
				echo "-:$probe" >>$T/kprobe_events
				xnc_unload || r="$r"$'\n'"# FAIL module did not unload"
			fi
			dmesg >"$XNC_OUT/$suite.$mode.dmesg"
			if grep -qE "$splat" "$XNC_OUT/$suite.$mode.dmesg"; then
				r="$r"$'\n'"# FAIL kernel splat: $(grep -m1 -E "$splat" "$XNC_OUT/$suite.$mode.dmesg")"
			fi
			echo "$r" | sed -n "s/^RESULT /RESULT mode=$mode hits=$hits /p" >>"$res"
			echo "$r" | grep '^# ' | sed "s/^# /# $suite $mode: /" >>"$res"
		done
	done
	echo 1 >$T/tracing_on
}

# field NAME LINE
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

host() {
	local dir out vrc doc kver suites rel srcver line suite s m bad=0 when
	local kline srcpkg kdir name rtnl regen start mins
	start=$(date +%s)
	kline=$("$top/scripts/kernel.sh" name) || exit 1
	export XNC_KLINE=$kline
	srcpkg=$("$top/scripts/kernel.sh" srcpkg)
	dir=$("$st") || exit 1
	suites=${XNC_SELFTESTS:-$("$st" list | tr '\n' ' ')}
	out=${XNC_OUT:-$(mktemp -d /tmp/xnc-selftests.XXXXXX)}
	mkdir -p "$out"
	# the module, built for this line's kernel (not the tree's .ko, which
	# may be another line's), where the guest sees it
	if [ -z "${XNC_KO:-}" ]; then
		kdir=$("$top/scripts/kernel.sh" kdir) || exit 1
		nice -n 19 "$top/scripts/build.sh" "$kdir" "$out/mod" >"$out/mod.build" 2>&1 || {
			cat "$out/mod.build" >&2
			echo "selftests-table: building the module against $kdir failed" >&2
			exit 1
		}
		export XNC_KO=$out/mod/xfrm_nocache.ko
	fi
	# netdevsim for rtnetlink.sh's kci_test_ipsec_offload (both columns)
	if [ -x "$top/scripts/netdevsim.sh" ]; then
		"$top/scripts/netdevsim.sh" >"$out/netdevsim.path" 2>"$out/netdevsim.log" ||
			{ rm -f "$out/netdevsim.path"; echo "selftests-table: netdevsim.sh failed" >&2; }
	fi
	echo "selftests-table: VM runs, results and raw logs in $out"
	: >"$out/table.results"
	for suite in $suites; do
		XNC_QUIET=${XNC_QUIET-1} "$top/scripts/vm.sh" --timeout "${XNC_TABLE_TIMEOUT:-5400}" \
			--out "$out" --log "$out/console.$suite.log" -- \
			"$top/scripts/selftests-table.sh" guest "$suite"
		vrc=$?
		if [ $vrc -ne 0 ] || ! grep -q "suite=$suite " "$out/table.results"; then
			echo "selftests-table: $suite: scripts/vm.sh exited $vrc (console: $out/console.$suite.log)" >&2
			[ -s "$out/splats" ] && head -n 20 "$out/splats" >&2
			exit 1
		fi
	done
	kver=$(cat "$out/guest.kver")
	rel=$(cat "$dir/RELEASE")
	srcver=$(dpkg-query -W -f='${Version}' "$srcpkg")
	when=$(date -u '+%Y-%m-%d %H:%M UTC')
	mins=$((($(date +%s) - start + 30) / 60))
	# 6.1 keeps the name it always had
	name=selftests-$kline.md regen="make selftests-table KERNEL=$kline"
	[ "$kline" != 6.1 ] || name=selftests.md regen="make selftests-table"
	doc=$top/docs/$name
	[ -n "${XNC_SELFTESTS:-}" ] && doc=$out/$name
	mkdir -p "$(dirname "$doc")"
	# how rtnetlink-ipsec runs: as scripts/selftests.sh decides
	if grep -q '^while getopts t:' "$dir/tools/testing/selftests/net/rtnetlink.sh"; then
		rtnl="$kline's script takes"$'\n'"them with its \`-t\` option."
	else
		rtnl="$kline's script has no \`-t\`,"$'\n'"so its functions are sourced and those two are called."
	fi
	{
		cat <<EOF
# The kernel's xfrm selftests: stock vs. xfrm_nocache

Generated by \`make selftests-table\` (scripts/selftests-table.sh) on $when.
Guest kernel $kver (Debian's own image) under qemu TCG, 2 vCPUs, one boot
per suite;
selftests from Debian's $srcpkg $srcver (Linux $rel),
tools/testing/selftests/net/, extracted and built at test time by
scripts/selftests.sh and not kept in this repository.

Each suite runs twice: **stock** (module not loaded) and **module**
(xfrm_nocache loaded, livepatch enabled, a kprobe counting the calls of its
replacement \`xnc_lookup_with_ifid()\` during the suite).  Checks are the
suite's own verdicts: \`PASS:\`/\`FAIL:\` lines (xfrm_policy.sh,
rtnetlink.sh), TAP \`ok\`/\`not ok\` (ipsec.c), \`TEST: ... [ OK ]\`
(vrf-xfrm-tests.sh).  Nothing in a suite was changed or shortened.
rtnetlink-ipsec is only the ipsec part of rtnetlink.sh (\`kci_test_ipsec\`,
\`kci_test_ipsec_offload\`), as the issue asks: $rtnl

| suite | checks | stock pass/fail/skip | module pass/fail/skip | same | stock time | module time | module lookups |
|---|---|---|---|---|---|---|---|
EOF
		for suite in $suites; do
			s=$(grep "^RESULT mode=stock .*suite=$suite " "$out/table.results")
			m=$(grep "^RESULT mode=module .*suite=$suite " "$out/table.results")
			local sp sf ss mp mf ms same
			sp=$(field pass "$s") sf=$(field fail "$s") ss=$(field skip "$s")
			mp=$(field pass "$m") mf=$(field fail "$m") ms=$(field skip "$m")
			same=no
			if [ -n "$s" ] && [ -n "$m" ] && [ "$sp/$sf/$ss" = "$mp/$mf/$ms" ] &&
			   ! grep -q "^# $suite module: FAIL" "$out/table.results"; then
				same=yes
			fi
			[ $same = yes ] && [ "$mf" = 0 ] || bad=1
			echo "| $suite | $(field checks "$s") | $sp/$sf/$ss | $mp/$mf/$ms | $same | $(field secs "$s") s | $(field secs "$m") s | $(field hits "$m") |"
		done
		echo
		if grep -q '^# ' "$out/table.results"; then
			echo "Skips and failures, as the suites reported them:"
			echo
			grep '^# ' "$out/table.results" | sed 's/^# /- /; s/  */ /g'
		else
			echo "No check skipped or failed in either run."
		fi
		if [ "$kline" = 6.1 ]; then
			cat <<EOF

Regenerate (one VM boot per suite, about 75 minutes in all under TCG):

    make selftests-table

\`make check\` runs the module column only (tests/guest/t-60-selftest-*.sh).
EOF
		else
			cat <<EOF

Regenerate (one VM boot per suite, $mins minutes in all for this run under TCG):

    $regen

\`make check KERNEL=$kline\` and \`make check-all\` run the module column only
(tests/guest/t-60-selftest-*.sh); \`make check\` alone leaves the selftests
out on $kline.
EOF
		fi
	} >"$doc"
	echo "selftests-table: wrote $doc"
	cat "$doc"
	[ $bad = 0 ]
}

case "${1:-}" in
guest) shift; guest "$@" ;;
"") host ;;
*) echo "usage: $0 [guest]" >&2; exit 2 ;;
esac
