#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of "make check": run each tests/guest/t-*.sh in name order,
# one line per test ("ok NAME", "FAIL NAME: reason", "skip NAME: reason")
# into $XNC_OUT/guest.results, and "N passed, N failed" at the end.
#
# A test passes by exiting 0, skips by exiting 4, fails otherwise; its last
# line of output is the reason.  After each test the runner removes what it
# may have left (namespaces, SAs, policies, the module) and then fails the
# test if the kernel log gained a splat while it ran or was cleaned up.
#
# With XNC_KMEMLEAK=1 (make check-debug, on a kernel with kmemleak) a last
# line, "kmemleak", fails if a leak suspect left at the end was allocated
# through xfrm, dst or this module, except while a test ran the stock path
# (lib.sh, stock_window); all suspects go to $XNC_OUT/kmemleak.txt.

here=$(cd "$(dirname "$0")" && pwd)
pattern=${1:-.}
res=$XNC_OUT/guest.results
: >"$res"
export XNC_TOP=${here%/tests/guest}
splat='BUG:|kernel BUG at|WARNING:|Oops|general protection|refcount_t|unregister_netdevice: waiting|RCU stall|rcu: INFO'

# Kernel modules the tests use; load up front so each test's timing is its own.
for m in xfrm_user xfrm_interface esp4 esp6 ah4 ah6 xfrm_ipcomp ipcomp ipcomp6 \
	 veth xfrm4_tunnel xfrm6_tunnel tunnel4 tunnel6 dummy; do
	modprobe -q "$m" 2>/dev/null
done

# A kernel release scripts/kernel.record does not list (a newer point
# release, or a debug kernel) is refused by default; its sources were
# compared with the record by the host's drift test in the same make check
# (a newer release whose functions changed fails there), so the tests load
# the module with unchecked=1 on it (lib.sh, xnc_load).
rel=$(uname -v | sed -n 's/.* Debian \([^ ]*\) .*/\1/p')
if ! awk -v r="$rel" '$1 == "release" && $2 == r { f = 1 } END { exit !f }' \
	"$XNC_TOP/scripts/kernel.record"; then
	export XNC_LOAD_ARGS=unchecked=1
	echo "# release '${rel:-none}' ($(uname -v)) is not in scripts/kernel.record: loading with unchecked=1"
fi

# the userland the tests ran on, for the record (docs/kernels.md)
# shellcheck disable=SC2016 # dpkg-query's format
echo "# userland: $(. /etc/os-release && echo "$PRETTY_NAME");" \
	"$(dpkg-query -W -f='${Package} ${Version}; ' iproute2 strongswan-charon 2>/dev/null)" \
	"$(uname -r)" | tee "$XNC_OUT/userland"

kmemleak=/sys/kernel/debug/kmemleak
if [ "${XNC_KMEMLEAK:-0}" = 1 ] && [ -e $kmemleak ]; then
	# forget what boot left behind: only what the tests leak counts
	echo scan >$kmemleak
	echo clear >$kmemleak
fi

# kmemleak_check: print the result line of the leak scan, fail if it failed
kmemleak_check() {
	local f=$XNC_OUT/kmemleak.txt n bad stock
	if [ ! -e $kmemleak ]; then
		echo "FAIL kmemleak: no $kmemleak in this kernel"
		return 1
	fi
	# objects younger than 5 s are never reported; the second scan drops
	# suspects whose only pointer was in flight during the first
	sleep 6
	if ! { echo scan >$kmemleak && echo scan >$kmemleak; } 2>/dev/null; then
		echo "FAIL kmemleak: scan refused (kmemleak disabled itself? see dmesg)"
		return 1
	fi
	cat $kmemleak >"$f"
	n=$(grep -c '^unreferenced object' "$f")
	# ours: allocated through xfrm, dst or a test module, apart from
	# those allocated while a test ran the stock path (kmemleak-ours.awk)
	touch "$XNC_OUT/stock-windows"
	read -r bad stock <<<"$(awk -f "$here/kmemleak-ours.awk" "$XNC_OUT/stock-windows" "$f")"
	if [ "$bad" -gt 0 ]; then
		echo "FAIL kmemleak: $bad of $n leak suspects allocated through xfrm, dst or a test module (kmemleak.txt)"
		return 1
	fi
	if [ "$stock" -gt 0 ]; then
		echo "ok kmemleak ($n suspects: none of ours through xfrm, dst or a test module; $stock of the stock kernel, allocated while a test ran its path: stock-windows)"
		return 0
	fi
	echo "ok kmemleak ($n suspects, none through xfrm, dst or a test module)"
}

# settle: give the deferred teardown of deleted namespaces (cleanup_net,
# netdev_run_todo) a second to run and log before the log is read; a
# leaked reference ("unregister_netdevice: waiting", after 10 s) still
# reaches the console, which scripts/vm.sh scans
settle() { sleep 1; }

pass=0 fail=0 skip=0
for t in "$here"/t-*.sh; do
	name=$(basename "$t" .sh)
	name=${name#t-}
	echo "$name" | grep -qE -- "$pattern" || continue
	log=$XNC_OUT/t-$name.log
	dmesg -c >/dev/null
	start=$(date +%s)
	bash "$t" >"$log" 2>&1 </dev/null
	rc=$?
	secs=$(($(date +%s) - start))
	reason=$(grep -v '^+' "$log" | tail -n1)
	# leave nothing behind for the next test; what the teardown logs
	# (netns cleanup runs from a workqueue) is still this test's
	for ns in $(ip netns list | awk '{print $1}'); do ip netns del "$ns"; done
	ip xfrm policy flush; ip xfrm state flush
	"$XNC_TOP/tests/guest/lib.sh" unload >/dev/null 2>&1
	settle
	dmesg >"$XNC_OUT/t-$name.dmesg"
	if grep -qE "$splat" "$XNC_OUT/t-$name.dmesg"; then
		rc=99
		reason="kernel splat: $(grep -m1 -E "$splat" "$XNC_OUT/t-$name.dmesg")"
	fi
	case $rc in
	0) line="ok $name (${secs}s)"; pass=$((pass + 1)) ;;
	4) line="skip $name: $reason"; skip=$((skip + 1)) ;;
	*) line="FAIL $name: $reason"; fail=$((fail + 1)) ;;
	esac
	echo "$line" | tee -a "$res"
done
if [ "${XNC_KMEMLEAK:-0}" = 1 ]; then
	if kmemleak_check >"$XNC_OUT/kmemleak.result"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
	tee -a "$res" <"$XNC_OUT/kmemleak.result"
fi
echo "$pass passed, $fail failed, $skip skipped" | tee -a "$XNC_OUT/guest.summary"
[ $fail -eq 0 ]
