#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The notifier's cost, inside the VM (bench/notifier.sh boots it
# with one vCPU and -icount shift=1, so guest time counts instructions).
# One namespace holds XNC_NB_SAS software SAs (default 10,000) and, on a
# netdevsim port, XNC_NB_BOUND SAs offloaded to it (default 32; netdevsim
# holds 33 at most).  Timed: each "ip link set DEV down" (the command as
# an operator runs it: exec, netlink, the NETDEV_DOWN notifier chain) of
#   veth   a device without xfrmdev_ops: the module returns at once
#   nsim   the netdevsim port: stock flushes its bound SAs (the port has
#          the ESP offload feature), the module first, then stock's flush
#          finds none
# for stock (no module) and the module, interleaved in XNC_NB_ROUNDS
# rounds (default 5, order alternating) of XNC_NB_CYCLES down/up cycles
# per device (default 40: 200 in all).  The netdevsim port gets its bound
# SAs back after each down (untimed).  Besides the command's time, the
# kernel's own: __dev_notify_flags(), which sends NETDEV_DOWN through the
# notifier chain (ours and xfrm's among it) and the rtnetlink message,
# timed by the function_graph tracer with only that function instrumented
# (nothing inside it is slowed).  Writes $XNC_OUT/notifier.raw:
#   device variant round cycles command_ns kernel_ns
# and checks what each down did: every bound SA gone, none of the others.

# shellcheck source=SCRIPTDIR/../../tests/guest/lib.sh disable=SC1091 # followed with -x
. "$(dirname "$0")/../../tests/guest/lib.sh"
# shellcheck source=SCRIPTDIR/../../tests/guest/nsim.sh disable=SC1091 # followed with -x
. "$(dirname "$0")/../../tests/guest/nsim.sh"
SAS=${XNC_NB_SAS:-10000}
BOUND=${XNC_NB_BOUND:-32}
ROUNDS=${XNC_NB_ROUNDS:-5}
CYCLES=${XNC_NB_CYCLES:-40}
RAW=$XNC_OUT/notifier.raw
: >"$RAW"
trap nsim_cleanup EXIT
mod_loaded && fail "module loaded before the benchmark"

modprobe veth
nsim_load
ip netns add n
ip -n n link add v0 type veth peer name v1
ip -n n link set v1 up
ip -n n link set v0 up
nsim_add 51 n sim1
ip -n n addr add 10.51.0.1/16 dev sim1

# the software SAs: 10.1.x.y -> 10.2.x.y, never bound to a device
b=$XNC_OUT/sas.batch
awk -v n="$SAS" -v k="$NSIM_KEY" -v a="$NSIM_AEAD" 'BEGIN {
	for (i = 0; i < n; i++)
		printf "xfrm state add src 10.1.%d.%d dst 10.2.%d.%d proto esp spi %d mode tunnel aead %s %s 128\n",
			i / 256, i % 256, i / 256, i % 256, 0x10000 + i, a, k
}' >"$b"
ip -n n -batch "$b" || fail "adding $SAS SAs failed"
bound_batch=$XNC_OUT/bound.batch
awk -v n="$BOUND" -v k="$NSIM_KEY" -v a="$NSIM_AEAD" 'BEGIN {
	for (i = 0; i < n; i++)
		printf "xfrm state add src 10.51.0.1 dst 10.51.1.%d proto esp spi %d mode transport aead %s %s 128 offload dev sim1 dir out\n",
			i + 1, 0x5100 + i, a, k
}' >"$bound_batch"
states() { ip -n n xfrm state count | awk '{ print $3 }'; }
ip -n n -batch "$bound_batch" || fail "offloading $BOUND SAs to sim1 failed"
expect_eq "SAs offloaded to sim1" "$(nsim_hw_sas 51)" "$BOUND"
total=$((SAS + BOUND))
expect_eq "SAs in the namespace" "$(states)" "$total"

now() { date +%s%N; }
T=/sys/kernel/tracing
grep -qx '__dev_notify_flags' $T/available_filter_functions ||
	fail "__dev_notify_flags cannot be traced on this kernel"
echo 0 >$T/tracing_on
echo __dev_notify_flags >$T/set_ftrace_filter
echo function_graph >$T/current_tracer
echo >$T/trace
# kernel_ns: the summed durations of the traced calls since the last read
kernel_ns() {
	awk '/__dev_notify_flags\(\);/ {
		for (i = 1; i < NF; i++) if ($(i + 1) == "us") { n++; t += $i * 1000 }
	} END { printf "%d %d\n", n, t }' $T/trace
	echo >$T/trace
}
# cycle DEV VARIANT ROUND: CYCLES timed downs of DEV, one raw line
cycle() {
	local dev=$1 var=$2 r=$3 t0 t1 sum=0
	for _ in $(seq "$CYCLES"); do
		echo 1 >$T/tracing_on
		t0=$(now)
		ip -n n link set "$dev" down
		t1=$(now)
		echo 0 >$T/tracing_on
		sum=$((sum + t1 - t0))
		if [ "$dev" = sim1 ]; then
			expect_eq "SAs after sim1 down ($var)" "$(states)" "$SAS"
			expect_eq "SAs offloaded after sim1 down" "$(nsim_hw_sas 51)" 0
			ip -n n link set sim1 up
			ip -n n -batch "$bound_batch" || fail "re-adding the bound SAs failed"
		else
			ip -n n link set "$dev" up
			expect_eq "SAs after $dev down ($var)" "$(states)" "$total"
		fi
	done
	read -r n k < <(kernel_ns)
	[ "$n" = "$CYCLES" ] || fail "$n traced downs of $dev in $CYCLES cycles"
	echo "$dev $var $r $CYCLES $sum $k" >>"$RAW"
}

variant() {
	local var=$1 r=$2
	if [ "$var" = module ]; then
		# shellcheck disable=SC2119 # xnc_load's arguments: optional
		xnc_load || fail "load failed"
	fi
	cycle v0 "$var" "$r"
	cycle sim1 "$var" "$r"
	if [ "$var" = module ]; then
		xnc_unload || fail "unload failed"
	fi
}

for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then
		variant stock "$r"
		variant module "$r"
	else
		variant module "$r"
		variant stock "$r"
	fi
	echo "round $r of $ROUNDS done"
done
echo nop >$T/current_tracer
echo >$T/set_ftrace_filter
ip netns del n
