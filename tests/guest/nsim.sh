#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for the offload tests (t-40-offload-*): source it after lib.sh.
# netdevsim, the kernel's simulated NIC, built on the host by
# scripts/netdevsim.sh (Debian does not ship it); its ports implement ESP
# offload (xfrmdev_ops) and show the SAs the "hardware" holds in debugfs.

NSIM_KO=$(cat "$XNC_OUT/netdevsim.path" 2>/dev/null)
NSIM_KO=${NSIM_KO:-/var/cache/xfrm_nocache/netdevsim-$(uname -r)/netdevsim.ko}
NSIM_IDS=
# AES-GCM, the algorithm netdevsim accepts for offload
NSIM_AEAD="rfc4106(gcm(aes))"
NSIM_KEY=0x3132333435363738393031323334353664636261

# Load netdevsim (and esp4_offload, without which no SA can be offloaded).
nsim_load() {
	[ -d /sys/bus/netdevsim ] && return 0
	[ -f "$NSIM_KO" ] ||
		fail "no netdevsim.ko at $NSIM_KO (scripts/netdevsim.sh failed on the host?)"
	modprobe psample || fail "modprobe psample failed"
	insmod "$NSIM_KO" || fail "insmod $NSIM_KO failed"
}

# nsim_add ID NETNS NAME: a one-port netdevsim bus device, created from
# inside NETNS so its port lives there, renamed to NAME and brought up.
# Its port does no ARP: 6.1's netdevsim sets IFF_NOARP itself, 6.12's no
# longer does (its ports can be linked to a peer), and the tests send to
# addresses nothing answers for, the packets counted by the "hardware".
nsim_add() {
	local id=$1 ns=$2 name=$3 dev
	ip netns exec "$ns" sh -c "echo '$id 1' >/sys/bus/netdevsim/new_device" ||
		fail "cannot create netdevsim$id"
	NSIM_IDS="$NSIM_IDS $id"
	wait_for 5 nsim_has_port "$id" "$ns" || fail "netdevsim$id: no port"
	dev=$(ip netns exec "$ns" ls "/sys/bus/netdevsim/devices/netdevsim$id/net/")
	ip -n "$ns" link set "$dev" name "$name" || fail "rename $dev"
	ip -n "$ns" link set "$name" arp off || fail "$name arp off"
	ip -n "$ns" link set "$name" up || fail "$name up"
	[ -f "$(nsim_dbg "$id")" ] || fail "netdevsim$id has no ipsec debugfs file"
}

nsim_has_port() {
	[ -n "$(ip netns exec "$2" ls "/sys/bus/netdevsim/devices/netdevsim$1/net/" 2>/dev/null)" ]
}

# nsim_del ID: remove the bus device (unregisters its netdev)
nsim_del() {
	echo "$1" >/sys/bus/netdevsim/del_device
}

# Remove what nsim_add created, then the driver; for a trap on EXIT.
nsim_cleanup() {
	local id
	for id in $NSIM_IDS; do
		[ -e "/sys/bus/netdevsim/devices/netdevsim$id" ] && nsim_del "$id"
	done
	rmmod netdevsim 2>/dev/null
	return 0
}

nsim_dbg() { echo "/sys/kernel/debug/netdevsim/netdevsim$1/ports/0/ipsec"; }

# nsim_hw_sas ID: how many SAs the simulated hardware holds
nsim_hw_sas() {
	sed -n 's/^SA count=\([0-9]*\).*/\1/p' "$(nsim_dbg "$1")"
}

# sa_add NETNS SPI SRC DST [offload dev DEV dir out|in]: an ESP transport SA
sa_add() {
	local ns=$1 spi=$2 src=$3 dst=$4
	shift 4
	ip -n "$ns" xfrm state add src "$src" dst "$dst" proto esp spi "$spi" \
		mode transport aead "$NSIM_AEAD" "$NSIM_KEY" 128 "$@"
}

# sa_exists NETNS SPI: the SA is in the SAD
sa_exists() {
	ip -n "$1" xfrm state list spi "$2" | grep -q '^src '
}

# sa_offload_dev NETNS SPI: the device the SA is offloaded to ("" if none)
sa_offload_dev() {
	ip -n "$1" xfrm state list spi "$2" |
		sed -n 's/.*crypto offload parameters: dev \([^ ]*\) .*/\1/p'
}

# nsim_hw_tx ID: packets the simulated hardware transmitted with an SA
nsim_hw_tx() {
	sed -n 's/^SA count=[0-9]* tx=\([0-9]*\).*/\1/p' "$(nsim_dbg "$1")"
}

# esp_hw NETNS DEV: the esp-hw-offload feature, "on" or "off"
esp_hw() {
	ip netns exec "$1" ethtool -k "$2" | awk '$1 == "esp-hw-offload:" { print $2 }'
}

sa_count() { ip -n "$1" xfrm state count | awk '{ print $NF }'; }
pol_count() { ip -n "$1" xfrm policy list | grep -c '^src '; }
