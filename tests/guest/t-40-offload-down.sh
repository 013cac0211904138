#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# NETDEV_DOWN flushes exactly the SAs offloaded to the downed device, with
# the feature on and after "ethtool -K esp-hw-offload off"; stock 6.1 (run
# first, module not loaded) leaves the SA bound in the second case.  Then:
# re-adding after up works and the "hardware" carries packets with the SA;
# rmmod does not flush offloaded SAs of running devices.
#
#   netns o
#   +------------------------------------------------------------+
#   | sim1 (netdevsim41) 10.40.1.1/24   SAs 0x411 out, 0x412 in   |
#   | sim2 (netdevsim42) 10.40.2.1/24   SA  0x421 out             |
#   | software SA 0x430 (10.40.3.1 -> 10.40.3.2), 2 out policies  |
#   +------------------------------------------------------------+
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsim.sh"

trap nsim_cleanup EXIT
mod_loaded && fail "module loaded before the stock part"
nsim_load
ip netns add o
nsim_add 41 o sim1
nsim_add 42 o sim2
ip -n o addr add 10.40.1.1/24 dev sim1
ip -n o addr add 10.40.2.1/24 dev sim2
ip -n o xfrm policy add src 10.40.1.1 dst 10.40.1.2 dir out \
	tmpl proto esp mode transport || fail "policy add"
ip -n o xfrm policy add src 10.40.2.1 dst 10.40.2.2 dir out \
	tmpl proto esp mode transport || fail "policy add"

sas_add() {
	sa_add o 0x411 10.40.1.1 10.40.1.2 offload dev sim1 dir out || fail "add 0x411"
	sa_add o 0x412 10.40.1.2 10.40.1.1 offload dev sim1 dir in || fail "add 0x412"
	sa_add o 0x421 10.40.2.1 10.40.2.2 offload dev sim2 dir out || fail "add 0x421"
	sa_add o 0x430 10.40.3.1 10.40.3.2 || fail "add 0x430"
	expect_eq "SAs offloaded to sim1" "$(nsim_hw_sas 41)" 2
	expect_eq "SAs offloaded to sim2" "$(nsim_hw_sas 42)" 1
	expect_eq "0x411 bound to" "$(sa_offload_dev o 0x411)" sim1
}

# sim1's SAs gone (SAD and hardware); everything else as it was
expect_flushed() {
	local spi
	for spi in 0x411 0x412; do
		sa_exists o $spi && fail "$1: SA $spi still there"
	done
	expect_eq "$1: SAs in sim1's hardware" "$(nsim_hw_sas 41)" 0
	expect_eq "$1: 0x421 bound to" "$(sa_offload_dev o 0x421)" sim2
	expect_eq "$1: SAs in sim2's hardware" "$(nsim_hw_sas 42)" 1
	sa_exists o 0x430 || fail "$1: software SA 0x430 gone"
	expect_eq "$1: SAs left" "$(sa_count o)" 2
	expect_eq "$1: policies" "$(pol_count o)" 2
}

reset() {
	ip -n o link set sim1 up
	ip netns exec o ethtool -K sim1 esp-hw-offload on || fail "esp-hw-offload on"
	ip -n o xfrm state flush
	expect_eq "hardware SAs after flush" "$(nsim_hw_sas 41)/$(nsim_hw_sas 42)" 0/0
}

# --- stock: feature off, then down: the SA stays bound to a downed device
sas_add
ip netns exec o ethtool -K sim1 esp-hw-offload off ||
	fail "ethtool refused esp-hw-offload off (netdevsim.sh should make it toggleable)"
expect_eq "stock: esp-hw-offload" "$(esp_hw o sim1)" off
ip -n o link set sim1 down
sa_exists o 0x411 || fail "stock: 0x411 was flushed (expected the 6.1 leak)"
expect_eq "stock: 0x411 still bound to" "$(sa_offload_dev o 0x411)" sim1
expect_eq "stock: SAs left in sim1's (down) hardware" "$(nsim_hw_sas 41)" 2
log "stock 6.1: feature off + down leaves $(nsim_hw_sas 41) SAs bound to sim1"
reset

# --- module
xnc_load || fail "load failed"
ev0=$(xnc_stat NotifierEvents o); fl0=$(xnc_stat SAsFlushed o)
iev0=$(xnc_stat NotifierEvents); ifl0=$(xnc_stat SAsFlushed)
expect_eq "counters at load" "$ev0/$fl0" 0/0

# (1) feature on; the xnc_flush tracepoint reports the flush
sas_add
TR=/sys/kernel/tracing
echo >$TR/trace
echo 1 >$TR/events/xfrm_nocache/xnc_flush/enable || fail "no xnc_flush tracepoint"
ip -n o link set sim1 down
echo 0 >$TR/events/xfrm_nocache/xnc_flush/enable
grep -qE "xnc_flush: netns=$(stat -L -c %i /run/netns/o) dev=sim1 ifindex=[0-9]+ flushed=2" $TR/trace ||
	fail "no xnc_flush event for sim1 with flushed=2: $(grep xnc_flush $TR/trace)"
expect_flushed "feature on"
expect_eq "NotifierEvents" "$(xnc_stat NotifierEvents o)" $((ev0 + 1))
expect_eq "SAsFlushed" "$(xnc_stat SAsFlushed o)" $((fl0 + 2))
reset

# (2) feature off, then down: the module removes what stock left
sas_add
ip netns exec o ethtool -K sim1 esp-hw-offload off || fail "esp-hw-offload off"
expect_eq "esp-hw-offload" "$(esp_hw o sim1)" off
ip -n o link set sim1 down
expect_flushed "feature off"
expect_eq "NotifierEvents" "$(xnc_stat NotifierEvents o)" $((ev0 + 2))
expect_eq "SAsFlushed" "$(xnc_stat SAsFlushed o)" $((fl0 + 4))
log "module: feature off + down leaves $(nsim_hw_sas 41) SAs bound to sim1"

# a down with nothing bound counts the event and no SA
ip -n o link set sim1 up
ip -n o link set sim1 down
expect_eq "NotifierEvents (empty down)" "$(xnc_stat NotifierEvents o)" $((ev0 + 3))
expect_eq "SAsFlushed (empty down)" "$(xnc_stat SAsFlushed o)" $((fl0 + 4))
# the counters are per namespace: the init namespace saw nothing
expect_eq "init netns counters" "$(xnc_stat NotifierEvents)/$(xnc_stat SAsFlushed)" \
	"$iev0/$ifl0"

# (5) after up, re-adding works and the hardware carries packets with it
ip -n o link set sim1 up
ip netns exec o ethtool -K sim1 esp-hw-offload on || fail "esp-hw-offload on"
sa_add o 0x411 10.40.1.1 10.40.1.2 offload dev sim1 dir out ||
	fail "re-adding 0x411 after up failed"
expect_eq "re-added 0x411 bound to" "$(sa_offload_dev o 0x411)" sim1
expect_eq "SAs in sim1's hardware after re-add" "$(nsim_hw_sas 41)" 1
tx0=$(nsim_hw_tx 41); tr0=$(xnc_stat Transformed o)
ip netns exec o ping -c 3 -i 0.2 -W 1 -I sim1 10.40.1.2 >/dev/null
expect_eq "packets sent by sim1's hardware with 0x411" "$(nsim_hw_tx 41)" $((tx0 + 3))
expect_ge "Transformed (module lookups)" "$(xnc_stat Transformed o)" $((tr0 + 3))

# rmmod replays NETDEV_DOWN for running devices to the notifier it
# removes: that must not flush offloaded SAs of devices still up
xnc_unload || fail "unload failed"
expect_eq "0x411 after rmmod" "$(sa_offload_dev o 0x411)" sim1
expect_eq "0x421 after rmmod" "$(sa_offload_dev o 0x421)" sim2
expect_eq "hardware SAs after rmmod" "$(nsim_hw_sas 41)/$(nsim_hw_sas 42)" 1/1
echo "offloaded SAs flushed on down exactly (stock leaves them with the feature off)"
