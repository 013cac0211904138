#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 200 rapid down/up cycles (XNC_OFFLOAD_CYCLES; make check-debug: 50) of an
# offload device, its two SAs re-added after every up and flushed by every
# down (half of them with esp-hw-offload off, where stock would leave
# them and the module flushes; with it on, xfrm's own flush).  Counters
# move by exactly one event a cycle and two SAs every other cycle;
# afterwards the SAD, the "hardware" and the xfrm_state slab are back to
# their baseline, re-adding still works, and the device can be removed (no
# reference left on it).  The runner fails on any warning.
#
#   netns c
#   +--------------------------------------------------------+
#   | simc (netdevsim46): SAs 0x461 out, 0x462 in, re-added  |
#   | software SA 0x470 (stays), 1 out policy                |
#   +--------------------------------------------------------+
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsim.sh"

knob N XNC_OFFLOAD_CYCLES 200 2 100000
at_exit nsim_cleanup
nsim_load
xnc_load || fail "load failed"
ip netns add c
nsim_add 46 c simc
ip -n c xfrm policy add src 10.46.0.1 dst 10.46.0.2 dir out \
	tmpl proto esp mode transport || fail "policy add"
sa_add c 0x470 10.47.0.1 10.47.0.2 || fail "add 0x470"

# xfrm_state slab: active objects, and objects per slab; the cache shrunk
# first, so that objects freed into a CPU's slab (or, from 7.x on, its
# sheaves) count as free
slab() {
	echo 1 >/sys/kernel/slab/xfrm_state/shrink 2>/dev/null
	awk -v f="$1" '$1 == "xfrm_state" { print $f }' /proc/slabinfo
}
base_sad=$(sa_count c)
base_slab=$(slab 2)
per_slab=$(slab 5)
ev0=$(xnc_stat NotifierEvents c); fl0=$(xnc_stat SAsFlushed c)

for i in $(seq 1 "$N"); do
	sa_add c 0x461 10.46.0.1 10.46.0.2 offload dev simc dir out ||
		fail "cycle $i: add 0x461 after up"
	sa_add c 0x462 10.46.0.2 10.46.0.1 offload dev simc dir in ||
		fail "cycle $i: add 0x462 after up"
	[ $((i % 2)) = 0 ] && ip netns exec c ethtool -K simc esp-hw-offload off
	ip -n c link set simc down
	hw=$(nsim_hw_sas 46)
	[ "$hw" = 0 ] || fail "cycle $i: $hw SAs left in the hardware after down"
	[ $((i % 2)) = 0 ] && ip netns exec c ethtool -K simc esp-hw-offload on
	ip -n c link set simc up
	[ $((i % 50)) = 0 ] && log "cycle $i of $N after $SECONDS s"
done

expect_eq "NotifierEvents after $N cycles" "$(xnc_stat NotifierEvents c)" $((ev0 + N))
expect_eq "SAsFlushed after $N cycles" "$(xnc_stat SAsFlushed c)" $((fl0 + 2 * (N / 2)))
expect_eq "SAD count" "$(sa_count c)" "$base_sad"
sa_exists c 0x470 || fail "software SA 0x470 gone"
expect_eq "policies" "$(pol_count c)" 1

# Deleted SAs are freed by a work item after a grace period.  "baseline"
# holds to within one slab (what a shrink leaves); 2 * N leaked states
# would be far beyond that.
slab_back() { [ "$(slab 2)" -le $((base_slab + per_slab)) ]; }
wait_for 10 slab_back ||
	fail "xfrm_state slab: $(slab 2) active objects, baseline $base_slab (+$per_slab)"
log "xfrm_state slab: baseline $base_slab, after $N cycles $(slab 2) (objects per slab $per_slab)"

# (5) re-adding after up still works
sa_add c 0x461 10.46.0.1 10.46.0.2 offload dev simc dir out || fail "final re-add"
expect_eq "0x461 bound to" "$(sa_offload_dev c 0x461)" simc
expect_eq "SAs in the hardware" "$(nsim_hw_sas 46)" 1

# no reference left on the device: it goes away (with the SA still bound)
nsim_del 46 &
wait_for 20 sh -c '[ ! -e /sys/bus/netdevsim/devices/netdevsim46 ]' ||
	fail "netdevsim46 removal hung"
wait
sa_exists c 0x461 && fail "0x461 survived its device"
echo "$N down/up cycles: $N events, $((2 * N)) SAs flushed ($((2 * (N / 2))) by the module), back to baseline"
