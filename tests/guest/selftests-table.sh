#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest side of scripts/selftests-table.sh, in one VM boot:
#
#   tests/guest/selftests-table.sh SUITE...
#
# each SUITE twice, stock (module not loaded) then with the module loaded
# (tests/guest/selftests-run.sh run), its RESULT and "# " lines into
# $XNC_OUT/table.results, the suite's logs and dmesg and the guest's
# kernel release (guest.kver) beside it.

set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
export XNC_TOP=$top
# shellcheck source=SCRIPTDIR/lib.sh
. "$top/tests/guest/lib.sh"
st=$top/tests/guest/selftests-run.sh
res=$XNC_OUT/table.results T=/sys/kernel/tracing probe=xnc_table
splat=$(<"$top/tests/splat.re")
uname -r >"$XNC_OUT/guest.kver"
while read -r m; do
	modprobe -q "$m" 2>/dev/null
done < <(grep -v '^#' "$top/tests/guest/modules")
# and those of the suites beyond make check's, for them only (the
# others run as they always did): loaded before the stock run, so
# that neither column pays for it
for suite in "$@"; do
	case $suite in
	pmtu-vti) mods="ip_vti ip6_vti" ;;
	l2tp) mods="l2tp_core l2tp_netlink l2tp_ip l2tp_ip6 l2tp_eth" ;;
	nft-flowtable)
		mods="nf_tables nft_ct nft_nat nft_masq nft_chain_nat nf_flow_table_inet
		      nft_flow_offload bridge 8021q" ;;
	# its routers' nft filter, which logs what it passes and drops
	xfrm-state) mods="nf_tables nft_log nf_log_syslog" ;;
	*) mods= ;;
	esac
	for m in $mods; do
		modprobe -q "$m" 2>/dev/null
	done
done
echo 0 >$T/tracing_on
for suite in "$@"; do
	for mode in stock module; do
		for ns in $(ip netns list | awk '{print $1}'); do ip netns del "$ns"; done
		ip xfrm policy flush; ip xfrm state flush
		dmesg -c >/dev/null
		hits=-
		if [ $mode = module ]; then
			# shellcheck disable=SC2119 # no extra insmod parameters
			xnc_load || { echo "# $suite $mode: insmod failed" >>"$res"; continue; }
			echo "p:$probe xnc_xfrm_lookup_with_ifid" >>$T/kprobe_events &&
				echo 1 >$T/events/kprobes/$probe/enable
		else
			mod_loaded && xnc_unload
			[ ! -e "$LP" ] || { echo "# $suite $mode: livepatch still present" >>"$res"; continue; }
		fi
		echo "== $suite $mode" >&2
		r=$("$st" run "$suite" "$XNC_OUT/$suite.$mode.log")
		echo "$r" >&2
		if [ $mode = module ]; then
			hits=$(awk -v p="$probe" '$1 == p { print $2 }' $T/kprobe_profile)
			[ "$(cat "$LP/enabled" 2>/dev/null)" = 1 ] ||
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
