#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Removing an offload device that still has SAs bound completes: no
# "unregister_netdevice: waiting" (the runner fails on it too), no SA left
# in the driver at teardown, the SAs gone.  netdevsim ports cannot be
# removed with "ip link del" (no rtnl_link_ops: EOPNOTSUPP), so removal is
# the driver's: del_device (hot-unplug), and deleting the namespace (the
# port moves back to the init namespace).  Module loaded throughout.
#
#   netns u                               netns v (deleted)
#   +-------------------------------+     +---------------------------+
#   | sim3 (netdevsim43) 0x431 0x432|     | sim5 (netdevsim45) 0x451  |
#   | sim4 (netdevsim44) 0x441, off |     |   esp-hw-offload off      |
#   +-------------------------------+     +---------------------------+
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsim.sh"

at_exit nsim_cleanup
nsim_load
xnc_load || fail "load failed"
ip netns add u
ip netns add v
nsim_add 43 u sim3
nsim_add 44 u sim4
nsim_add 45 v sim5
sa_add u 0x431 10.43.0.1 10.43.0.2 offload dev sim3 dir out || fail "add 0x431"
sa_add u 0x432 10.43.0.2 10.43.0.1 offload dev sim3 dir in || fail "add 0x432"
sa_add u 0x441 10.44.0.1 10.44.0.2 offload dev sim4 dir out || fail "add 0x441"
sa_add v 0x451 10.45.0.1 10.45.0.2 offload dev sim5 dir out || fail "add 0x451"
ip netns exec u ethtool -K sim4 esp-hw-offload off || fail "sim4 esp-hw-offload off"
ip netns exec v ethtool -K sim5 esp-hw-offload off || fail "sim5 esp-hw-offload off"
expect_eq "hardware SAs" "$(nsim_hw_sas 43)/$(nsim_hw_sas 44)/$(nsim_hw_sas 45)" 2/1/1

ip -n u link del sim3 2>/dev/null && fail "ip link del of a netdevsim port succeeded?"
log "ip link del sim3: refused (netdevsim has no rtnl_link_ops), using del_device"

gone() { [ ! -e "/sys/bus/netdevsim/devices/netdevsim$1" ]; }

# del_device ID: unregister with SAs bound; must return within 20 s
unplug() {
	nsim_del "$1" &
	local pid=$!
	wait_for 20 gone "$1" || fail "netdevsim$1 removal hung (SA holding the device?)"
	wait $pid || fail "del_device $1 failed"
}

ev0=$(xnc_stat NotifierEvents u); fl0=$(xnc_stat SAsFlushed u)
unplug 43
sa_exists u 0x431 && fail "0x431 survived its device"
sa_exists u 0x432 && fail "0x432 survived its device"
# sim3's feature is on: xfrm's own flush at its NETDEV_DOWN, not counted
expect_eq "SAsFlushed (sim3 unplugged while up)" "$(xnc_stat SAsFlushed u)" "$fl0"
unplug 44
sa_exists u 0x441 && fail "0x441 survived its device"
expect_eq "SAsFlushed (sim4, feature off)" "$(xnc_stat SAsFlushed u)" $((fl0 + 1))
expect_eq "NotifierEvents" "$(xnc_stat NotifierEvents u)" $((ev0 + 2))
expect_eq "SAs left in u" "$(sa_count u)" 0

# namespace deletion: sim5 is closed and moved back to the init namespace
ip netns del v
# shellcheck disable=SC2016 # expanded by sh -c
wait_for 20 sh -c '[ -n "$(ls /sys/bus/netdevsim/devices/netdevsim45/net/ 2>/dev/null)" ]' ||
	fail "sim5 did not come back to the init namespace"
expect_eq "SAs in sim5's hardware after netns del" "$(nsim_hw_sas 45)" 0
unplug 45

dmesg | grep -E 'tearing down IPsec offload|unregister_netdevice: waiting' &&
	fail "device torn down with SAs bound"
echo "offload devices with SAs bound removed cleanly (del_device, netns del)"
