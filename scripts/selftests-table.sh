#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's own xfrm selftests (scripts/selftests.sh) twice each,
# stock (module not loaded) and with the module loaded, one VM boot per
# suite (so other VM users get the machine between suites), and write the
# side-by-side table to docs/selftests.md (kernel 6.1) or
# docs/selftests-<kernel>.md (docs/selftests-6.12.md, -13.md, -7.3.md, ...).
#
#   scripts/selftests-table.sh            (or: make selftests-table)
#   XNC_KLINE=6.12 scripts/selftests-table.sh   (make selftests-table KERNEL=6.12)
#   scripts/selftests-table.sh render     no VM: the table from the results
#                                         XNC_TABLE_MERGE names alone
#
# The kernel is XNC_KLINE (make's KERNEL: 6.1, the default, 6.12, 6.1-rt,
# 6.12-rt, or Debian 13's 13, 13-rt, 7.3; scripts/kernel.sh): Debian's
# kernel boots, the selftests come from its line's linux-source (as
# scripts/selftests.sh takes it: Debian 13's from trixie or
# trixie-backports), and the module is built for it (scripts/build.sh,
# into XNC_OUT; in the trixie root for Debian 13's; XNC_KO for another
# build).
# Environment: XNC_SELFTESTS (suites to run, default all those of the
# line: scripts/selftests.sh list), XNC_TABLE_MERGE (table.results files of
# earlier runs, space-separated: their suites that this run did not run are
# shown too, a suite's results from the first file that has it), XNC_OUT
# (results and raw suite logs, default a fresh /tmp dir),
# XNC_TABLE_TIMEOUT (VM seconds per suite, default 5400).  The results all
# come from one kernel (guest.kver beside each file).  A table that lacks a
# suite of the line is written into $XNC_OUT instead of docs/.  Inside the
# VM: tests/guest/selftests-table.sh.

set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
st=$top/scripts/selftests.sh

# field NAME LINE
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# verdict SUITE: the format of a suite's checks, and its program
verdict() {
	case $1 in
	xfrm_policy) echo "pf xfrm_policy.sh" ;;
	rtnetlink-ipsec) echo "pf rtnetlink.sh" ;;
	nft-flowtable) echo "pf nft_flowtable.sh" ;;
	ipsec) echo "tap ipsec.c" ;;
	vrf-xfrm) echo "test vrf-xfrm-tests.sh" ;;
	pmtu-vti) echo "test pmtu.sh" ;;
	l2tp) echo "test l2tp.sh" ;;
	xfrm-policy-add-speed) echo "batch xfrm_policy_add_speed.sh" ;;
	xfrm-state) echo "testp xfrm_state.sh" ;;
	*) echo "other $1" ;;
	esac
}

# verdicts SUITE...: the sentence naming the formats of their checks
verdicts() {
	local f v k w progs out=
	for f in pf tap test testp batch other; do
		progs=
		for v in "$@"; do
			read -r k w <<<"$(verdict "$v")"
			[ "$k" != "$f" ] || progs="${progs:+$progs, }$w"
		done
		[ -n "$progs" ] || continue
		case $f in
		pf) w="\`PASS:\`/\`FAIL:\` lines" ;;
		tap) w="TAP \`ok\`/\`not ok\`" ;;
		test) w="\`TEST: ... [ OK ]\`" ;;
		testp) w="\`TEST: ... [ PASS ]\`" ;;
		batch) w="a batch of policies inserted (\`Inserted N policies in T ms\`) and no \`WARNING:\` about it" ;;
		other) w="their own" ;;
		esac
		out="${out:+$out, }$w ($progs)"
	done
	echo "Checks are the suite's own verdicts: $out."
}

# merge OUT FILE...: the RESULT and "# " lines of the results FILEs into
# OUT, each suite's from the first FILE that has it (this run's first)
merge() {
	local o=$1
	shift
	awk 'FNR == 1 { fi++ }
	     /^RESULT / { s = ""; for (i = 2; i <= NF; i++) if ($i ~ /^suite=/) s = substr($i, 7) }
	     /^# / { s = $2 }
	     /^(RESULT |# )/ { if (!(s in from)) from[s] = fi; if (from[s] == fi) print }' \
		"$@" >"$o"
}

# build_mod: the module, built for this line's kernel (not the tree's .ko,
# which may be another line's) into $out/mod, where the guest sees it
build_mod() {
	if ! nice -n 19 "$top/scripts/build.sh" --line "$out/mod" >"$out/mod.build" 2>&1 ||
	   [ ! -f "$out/mod/xfrm_nocache.ko" ]; then
		cat "$out/mod.build" >&2
		echo "selftests-table: building the module for $XNC_KLINE failed" >&2
		return 1
	fi
}

# run_suites SUITES: each in a VM boot of its own, stock then module,
# results into $out/table.results
run_suites() {
	local suite vrc
	if [ -z "${XNC_KO:-}" ]; then
		build_mod || return 1
		export XNC_KO=$out/mod/xfrm_nocache.ko
	fi
	# netdevsim for rtnetlink.sh's kci_test_ipsec_offload (both columns)
	if [ -x "$top/scripts/netdevsim.sh" ]; then
		"$top/scripts/netdevsim.sh" >"$out/netdevsim.path" 2>"$out/netdevsim.log" ||
			{ rm -f "$out/netdevsim.path"; echo "selftests-table: netdevsim.sh failed" >&2; }
	fi
	echo "selftests-table: VM runs, results and raw logs in $out"
	: >"$out/table.results"
	for suite in $1; do
		XNC_QUIET=${XNC_QUIET-1} "$top/scripts/vm.sh" --timeout "${XNC_TABLE_TIMEOUT:-5400}" \
			--out "$out" --log "$out/console.$suite.log" -- \
			"$top/tests/guest/selftests-table.sh" "$suite"
		vrc=$?
		if [ $vrc -ne 0 ] || ! grep -q "suite=$suite " "$out/table.results"; then
			echo "selftests-table: $suite: scripts/vm.sh exited $vrc (console: $out/console.$suite.log)" >&2
			[ -s "$out/splats" ] && head -n 20 "$out/splats" >&2
			return 1
		fi
	done
}

# same_kernel KVER FILE...: the results FILEs come from kernel KVER (from
# that of the first one that names its own if KVER is empty), as the
# guest.kver beside each says; print it
same_kernel() {
	local kver=$1 f k
	shift
	for f in "$@"; do
		if ! k=$(cat "$(dirname "$f")/guest.kver" 2>/dev/null); then
			echo "selftests-table: no guest.kver beside $f: its kernel is not checked" >&2
			continue
		fi
		: "${kver:=$k}"
		[ "$k" = "$kver" ] ||
			{ echo "selftests-table: $f comes from kernel $k, not $kver" >&2; return 1; }
	done
	[ -n "$kver" ] || { echo "selftests-table: no guest.kver: which kernel ran?" >&2; return 1; }
	echo "$kver"
}

# host [render]: run the suites (not with "render"), then write the table
# from this run's results and those of XNC_TABLE_MERGE
host() {
	local dir out doc kver suites rel srcver suite s m bad=0 when
	local kline srcpkg name rtnl regen mins all core f res files=() shown='' runs ms
	local groot from guest
	local render=${1:-}
	kline=$("$top/scripts/kernel.sh" name) || exit 1
	export XNC_KLINE=$kline
	srcpkg=$("$top/scripts/kernel.sh" srcpkg)
	groot=$("$top/scripts/kernel.sh" root) || exit 1
	dir=$("$st") || exit 1
	all=" $("$st" list | paste -sd' ') "
	core=$("$st" list core | paste -sd' ' | sed 's/ /, /g')
	suites=${XNC_SELFTESTS:-$all}
	[ -z "$render" ] || suites=
	for suite in $suites; do
		case $all in
		*" $suite "*) ;;
		*) echo "selftests-table: no suite $suite on $kline (one of:${all% })" >&2; exit 1 ;;
		esac
	done
	out=${XNC_OUT:-$(mktemp -d /tmp/xnc-selftests.XXXXXX)}
	mkdir -p "$out"
	# earlier runs' results, for the suites this one does not run,
	# checked before any boot: the kernel that is to boot, or for
	# "render" that of the first results that name theirs
	for f in ${XNC_TABLE_MERGE:-}; do
		[ -r "$f" ] || { echo "selftests-table: cannot read $f" >&2; exit 1; }
		files+=("$f")
	done
	if [ -z "$render" ]; then
		kver=$("$top/scripts/kernel.sh" version) || exit 1
		same_kernel "$kver" "${files[@]}" >/dev/null || exit 1
		run_suites "$suites" || exit 1
		files=("$out/table.results" "${files[@]}")
		kver=$(cat "$out/guest.kver")
	elif [ ${#files[@]} -eq 0 ]; then
		echo "selftests-table: render: XNC_TABLE_MERGE names no results" >&2
		exit 1
	fi
	kver=$(same_kernel "${kver:-}" "${files[@]}") || exit 1
	res=$out/table.merged
	merge "$res" "${files[@]}"
	# the line's suites that have results, in its order; the table goes
	# to docs/ when they all have, else beside the results
	for suite in $all; do
		grep -q "^RESULT .*suite=$suite " "$res" && shown="$shown $suite"
	done
	[ -n "$shown" ] || { echo "selftests-table: no results to show" >&2; exit 1; }
	# results of earlier runs too: say so (a suite's columns, one boot)
	runs=
	[ ${#files[@]} -le 1 ] ||
		runs=" (results of ${#files[@]} runs, \`XNC_TABLE_MERGE\`)"
	rel=$(cat "$dir/RELEASE")
	# the source version the selftests were taken from (selftests.sh's)
	read -r _ srcver <<<"$("$st" source)"
	[ -n "$srcver" ] || exit 1
	from="Debian's" guest="Debian's own image"
	if [ "$groot" != / ]; then
		guest="Debian 13's own image and userland"
		case $srcpkg in
		linux-source-6.12) from="Debian 13's" ;;
		*) from="Debian 13 backports'" ;;
		esac
	fi
	when=$(date -u '+%Y-%m-%d %H:%M UTC')
	# the suites' own time, both columns (builds and boots not counted)
	mins=$(awk '/^RESULT / { for (i = 2; i <= NF; i++) if ($i ~ /^secs=/) t += substr($i, 6) }
		    END { printf "%d", (t + 30) / 60 }' "$res")
	# 6.1 keeps the name it always had
	name=selftests-$kline.md regen="make selftests-table KERNEL=$kline"
	[ "$kline" != 6.1 ] || name=selftests.md regen="make selftests-table"
	doc=$top/docs/$name
	[ "$shown " = "$all" ] || doc=$out/$name
	mkdir -p "$(dirname "$doc")"
	# how rtnetlink-ipsec runs: as tests/guest/selftests-run.sh decides
	if grep -q '^while getopts t:' "$dir/tools/testing/selftests/net/rtnetlink.sh"; then
		rtnl="$kline's script takes them with its \`-t\` option."
	else
		rtnl="$kline's script has no \`-t\`, so its functions are sourced and those two are called."
	fi
	{
		cat <<EOF
# The kernel's xfrm selftests: stock vs. xfrm_nocache

Generated by \`make selftests-table\` (scripts/selftests-table.sh) on $when.
Guest kernel $kver ($guest) under qemu TCG, 2 vCPUs, one boot
per suite$runs;
selftests from $from $srcpkg $srcver (Linux $rel),
tools/testing/selftests/, extracted and built at test time by
scripts/selftests.sh and not kept in this repository.

EOF
		# one paragraph, what it says depends on the suites shown
		{
			echo "Each suite runs twice: **stock** (module not loaded) and **module**"
			echo "(xfrm_nocache loaded, livepatch enabled, a kprobe counting the calls of its"
			echo "replacement \`xnc_xfrm_lookup_with_ifid()\` during the suite)."
			# shellcheck disable=SC2086 # a word per suite
			verdicts $shown
			echo "A check that a suite was asked for and never reported, or a suite that"
			echo "failed without a failed check or reported none, counts as a failed check."
			# ipsec.c's pause between pings, as the run's results give it
			# (older results have none: their runs had ipsec.c's own)
			ms=
			case "$shown " in *" ipsec "*)
				ms=$(field ping_ms "$(grep -m1 '^RESULT .*suite=ipsec ' "$res")") ;;
			esac
			if [ -n "$ms" ] && [ "$ms" != 50 ]; then
				echo "Nothing in a suite's scripts was changed but the pause between two"
				echo "pings of ipsec.c, $ms ms instead of its 50 (scripts/selftests.sh); what"
				echo "it checks, 80 of 100 replies each back within 300 us, is the same."
			else
				echo "Nothing in a suite's scripts was changed."
			fi
			case "$shown " in *" rtnetlink-ipsec "*)
				echo "rtnetlink-ipsec is only the ipsec part of rtnetlink.sh (\`kci_test_ipsec\`,"
				echo "\`kci_test_ipsec_offload\`): $rtnl" ;;
			esac
			case "$shown " in *" pmtu-vti "*)
				echo "pmtu-vti is only pmtu.sh's vti tests, those named \`pmtu_vti*\` (ESP"
				echo "through vti and vti6 devices, in UDP too, and their MTU rules): the"
				echo "others involve no xfrm." ;;
			esac
			case "$shown " in *" nft-flowtable "*)
				echo "nft-flowtable is nft_flowtable.sh whole, its last check TCP through an"
				echo "ESP tunnel, with its default MTUs given as options: without options"
				echo "6.12's runs again with random MTUs and file size, and both columns"
				echo "must run the same test." ;;
			esac
			case "$shown " in *" xfrm-policy-add-speed "*)
				echo "xfrm-policy-add-speed runs with \`KSFT_MACHINE_SLOW=yes\` (batches up"
				echo "to 10,000 policies, not 100,000): policy insertion only, no packet is"
				echo "looked up." ;;
			esac
			case "$shown " in *" xfrm-state "*)
				echo "xfrm-state is xfrm_state.sh whole (new in 7.x): ICMP errors and"
				echo "PMTU messages sent back through an ESP tunnel between two gateways." ;;
			esac
		} | fmt -w 76
		cat <<EOF

| suite | checks | stock pass/fail/skip | module pass/fail/skip | same | stock time | module time | module lookups |
|---|---|---|---|---|---|---|---|
EOF
		for suite in $shown; do
			s=$(grep "^RESULT mode=stock .*suite=$suite " "$res")
			m=$(grep "^RESULT mode=module .*suite=$suite " "$res")
			local sp sf ss mp mf ms same
			sp=$(field pass "$s") sf=$(field fail "$s") ss=$(field skip "$s")
			mp=$(field pass "$m") mf=$(field fail "$m") ms=$(field skip "$m")
			same=no
			if [ -n "$s" ] && [ -n "$m" ] && [ "$sp/$sf/$ss" = "$mp/$mf/$ms" ] &&
			   ! grep -q "^# $suite module: FAIL" "$res"; then
				same=yes
			fi
			[ $same = yes ] && [ "$mf" = 0 ] || bad=1
			echo "| $suite | $(field checks "$s") | $sp/$sf/$ss | $mp/$mf/$ms | $same | $(field secs "$s") s | $(field secs "$m") s | $(field hits "$m") |"
		done
		echo
		if grep -q '^# ' "$res"; then
			echo "Skips and failures, as the suites reported them:"
			echo
			for suite in $shown; do
				grep "^# $suite " "$res" | sed 's/^# /- /; s/  */ /g'
			done
		else
			echo "No check skipped or failed in either run."
		fi
		cat <<EOF

Regenerate (one VM boot per suite; under TCG the suites took $mins minutes
in all, both columns):

    $regen

EOF
		if [ "$kline" = 6.1 ]; then
			echo "\`make check\` runs the module column of $core only"
			echo "(tests/guest/t-60-selftest-*.sh)."
		else
			echo "\`make check KERNEL=$kline\` and \`make check-all\` run the module column"
			echo "of $core only (tests/guest/t-60-selftest-*.sh); \`make check\`"
			echo "alone leaves the selftests out on $kline."
		fi | fmt -w 76
	} >"$doc"
	echo "selftests-table: wrote $doc"
	cat "$doc"
	[ $bad = 0 ]
}

case "${1:-}" in
"") host ;;
render) host render ;;
*) echo "usage: $0 [render]" >&2; exit 2 ;;
esac
