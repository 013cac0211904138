#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of "make check": run the tests/guest/t-*.sh whose names match
# PATTERN in name order and report them in KTAP, on stdout and in
# $XNC_OUT/guest.ktap, each test's output in $XNC_OUT/t-NAME.log.
#
# A test passes by exiting 0, skips by exiting 4, fails otherwise; its last
# line of output is the reason.  It cleans up after itself (lib.sh); the
# runner fails it if it left a namespace, an xfrm policy or SA, or a
# module of ours loaded, or if the kernel log gained a splat
# (tests/splat.re) while it ran or was cleaned up, or if it ran longer than
# its time limit (tests/guest/settings).
#
# With XNC_KMEMLEAK=1 (make check-debug, on a kernel with kmemleak) a last
# test, "kmemleak", fails if a leak suspect left at the end was allocated
# through xfrm, dst or this module, except while a test ran the stock path
# (lib.sh, stock_window); all suspects go to $XNC_OUT/kmemleak.txt.

here=$(cd "$(dirname "$0")" && pwd)
pattern=${1:-.}
export XNC_TOP=${here%/tests/guest}
splat=$(<"$XNC_TOP/tests/splat.re")
ktap=$XNC_OUT/guest.ktap
: >"$ktap"
say() { echo "$*" | tee -a "$ktap"; }

while read -r m; do
	modprobe -q "$m" 2>/dev/null
done < <(grep -v '^#' "$here/modules")

# A kernel release scripts/kernel.record does not list (a newer point
# release, or a debug kernel) is refused by default; its sources were
# compared with the record by the host's drift test in the same make check
# (a newer release whose functions changed fails there), so the tests load
# the module with unchecked=1 on it (lib.sh, xnc_load).
rel=$(uname -v | sed -n 's/.* Debian \([^ ]*\) .*/\1/p')
notes=()
if ! awk -v r="$rel" '$1 == "release" && $2 == r { f = 1 } END { exit !f }' \
	"$XNC_TOP/scripts/kernel.record"; then
	export XNC_LOAD_ARGS=unchecked=1
	notes+=("release '${rel:-none}' ($(uname -v)) is not in scripts/kernel.record: loading with unchecked=1")
fi

# the userland the tests ran on, for the record
# shellcheck disable=SC2016,SC1091 # dpkg-query's format; the guest's file
echo "$(. /etc/os-release && echo "$PRETTY_NAME");" \
	"$(dpkg-query -W -f='${Package} ${Version}; ' iproute2 strongswan-charon 2>/dev/null)" \
	"$(uname -r)" >"$XNC_OUT/userland"
notes+=("userland: $(cat "$XNC_OUT/userland")")

kmemleak=/sys/kernel/debug/kmemleak
leakcheck=
if [ "${XNC_KMEMLEAK:-0}" = 1 ]; then
	leakcheck=1
	if [ -e $kmemleak ]; then
		# forget what boot left behind: only what the tests leak counts
		echo scan >$kmemleak
		echo clear >$kmemleak
	fi
fi

# kmemleak_check: the reason of the leak scan's verdict; fails if it failed
kmemleak_check() {
	local f=$XNC_OUT/kmemleak.txt n bad stock
	if [ ! -e $kmemleak ]; then
		echo "no $kmemleak in this kernel"
		return 1
	fi
	# objects younger than 5 s are never reported; the second scan drops
	# suspects whose only pointer was in flight during the first
	sleep 6
	if ! { echo scan >$kmemleak && echo scan >$kmemleak; } 2>/dev/null; then
		echo "scan refused (kmemleak disabled itself? see dmesg)"
		return 1
	fi
	cat $kmemleak >"$f"
	n=$(grep -c '^unreferenced object' "$f")
	# ours: allocated through xfrm, dst or a test module, apart from
	# those allocated while a test ran the stock path (kmemleak-ours.awk)
	touch "$XNC_OUT/stock-windows"
	read -r bad stock <<<"$(awk -f "$here/kmemleak-ours.awk" "$XNC_OUT/stock-windows" "$f")"
	if [ "$bad" -gt 0 ]; then
		echo "$bad of $n leak suspects allocated through xfrm, dst or a test module (kmemleak.txt)"
		return 1
	fi
	if [ "$stock" -gt 0 ]; then
		echo "$n suspects: none of ours; $stock of the stock kernel, allocated while a test ran its path (stock-windows)"
	else
		echo "$n suspects, none through xfrm, dst or a test module"
	fi
}

# limit NAME: the test's time limit in seconds (settings, times XNC_SLOW)
limit() {
	local t
	t=$(awk -F= -v k="timeout.$1" '$1 == k { v = $2 } END { print v }' "$here/settings")
	[ -n "$t" ] || t=$(awk -F= '$1 == "timeout" { v = $2 } END { print v }' "$here/settings")
	echo $((${t:-1200} * ${XNC_SLOW:-1}))
}

# leftovers: what a test left that it should have removed
leftovers() {
	local n
	n=$(ip netns list | wc -l)
	[ "$n" = 0 ] || echo "$n namespaces"
	[ -z "$(ip xfrm policy list)" ] || echo "xfrm policies"
	[ -z "$(ip xfrm state list)" ] || echo "SAs"
	awk '$1 ~ /^(xfrm_nocache|xnc_.*|netdevsim)$/ { print "module " $1 }' /proc/modules
}

# reset: remove what a test left (leftovers), so that the next one starts
# clean
reset() {
	"$here/lib.sh" reset >/dev/null 2>&1
	awk '$1 ~ /^(xnc_.*|netdevsim)$/ { print $1 }' /proc/modules |
		while read -r m; do rmmod "$m" 2>/dev/null; done
}

tests=()
for t in "$here"/t-*.sh; do
	name=$(basename "$t" .sh)
	name=${name#t-}
	echo "$name" | grep -qE -- "$pattern" && tests+=("$name")
done

say "KTAP version 1"
say "1..$((${#tests[@]} + ${leakcheck:-0}))"
for n in "${notes[@]}"; do
	say "# $n"
done
pass=0 fail=0 skip=0 i=0
for name in "${tests[@]}"; do
	i=$((i + 1))
	log=$XNC_OUT/t-$name.log
	lim=$(limit "$name")
	dmesg -c >/dev/null
	start=$(date +%s)
	timeout -k 30 "$lim" bash "$here/t-$name.sh" >"$log" 2>&1 </dev/null
	rc=$?
	secs=$(($(date +%s) - start))
	reason=$(grep -v '^+' "$log" | tail -n1)
	[ -n "$reason" ] || reason="exit status $rc, no output"
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		rc=124 reason="TIMEOUT $lim seconds"
	fi
	left=$(leftovers | paste -sd, | sed 's/,/, /g')
	[ -z "$left" ] || reset
	# give the deferred teardown of deleted namespaces (cleanup_net,
	# netdev_run_todo) a second to log: that is still this test's; a
	# leaked reference ("unregister_netdevice: waiting", after 10 s)
	# reaches the console, which scripts/vm.sh scans
	sleep 1
	dmesg >"$XNC_OUT/t-$name.dmesg"
	if grep -qE "$splat" "$XNC_OUT/t-$name.dmesg"; then
		rc=99
		reason="kernel splat: $(grep -m1 -E "$splat" "$XNC_OUT/t-$name.dmesg")"
	elif [ -n "$left" ] && [ $rc = 0 ]; then
		rc=98
		reason="left behind: $left"
	fi
	say "# $name: ${secs} s"
	case $rc in
	0) say "ok $i $name"; pass=$((pass + 1)) ;;
	4) say "ok $i $name # SKIP $reason"; skip=$((skip + 1)) ;;
	124) say "not ok $i $name # $reason"; fail=$((fail + 1)) ;;
	*)
		grep -v '^+' "$log" | tail -n 10 | sed 's/^/# | /' | tee -a "$ktap"
		say "# $name: $reason"
		say "not ok $i $name"
		fail=$((fail + 1))
		;;
	esac
done
if [ -n "$leakcheck" ]; then
	i=$((i + 1))
	if reason=$(kmemleak_check); then
		say "# kmemleak: $reason"
		say "ok $i kmemleak"
		pass=$((pass + 1))
	else
		say "# kmemleak: $reason"
		say "not ok $i kmemleak"
		fail=$((fail + 1))
	fi
fi
say "# $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
