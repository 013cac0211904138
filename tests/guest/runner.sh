#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of "make check": run each tests/guest/t-*.sh in name order,
# one line per test ("ok NAME", "FAIL NAME: reason", "skip NAME: reason")
# into $XNC_OUT/guest.results, and "N passed, N failed" at the end.
#
# A test passes by exiting 0, skips by exiting 4, fails otherwise; its last
# line of output is the reason.  Between tests the runner removes what a
# test may have left (namespaces, the module) and fails the test if the
# kernel log gained a splat while it ran.

here=$(cd "$(dirname "$0")" && pwd)
pattern=${1:-.}
res=$XNC_OUT/guest.results
: >"$res"
export XNC_TOP=${here%/tests/guest}
splat='BUG:|WARNING:|Oops|general protection|refcount_t|unregister_netdevice: waiting|RCU stall|rcu: INFO'

# Kernel modules the tests use; load up front so each test's timing is its own.
for m in xfrm_user xfrm_interface esp4 esp6 ah4 ah6 xfrm_ipcomp ipcomp ipcomp6 \
	 veth xfrm4_tunnel xfrm6_tunnel tunnel4 tunnel6 dummy; do
	modprobe -q "$m" 2>/dev/null
done

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
	# leave nothing behind for the next test
	for ns in $(ip netns list | awk '{print $1}'); do ip netns del "$ns"; done
	ip xfrm policy flush; ip xfrm state flush
	"$XNC_TOP/tests/guest/lib.sh" unload >/dev/null 2>&1
done
echo "$pass passed, $fail failed, $skip skipped" | tee -a "$XNC_OUT/guest.summary"
[ $fail -eq 0 ]
