#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# NETDEV_DOWN flushes exactly the SAs offloaded to the downed device, with
# the feature on and after "ethtool -K esp-hw-offload off"; stock (run
# first, module not loaded) leaves the SA bound in the second case; with
# the feature on the kernel's flush does it, as in stock, and the module's
# counters and xnc_flush count only what it removed itself.  A device that
# cannot hold offloaded state, or has the feature on, costs no walk of
# ours.  Then:
# re-adding after up works and the "hardware" carries packets with the SA;
# with the livepatch disabled the notifier still flushes and counts; rmmod
# does not flush offloaded SAs of running devices.
#
#   netns o
#   +------------------------------------------------------------+
#   | sim1 (netdevsim41) 10.40.1.1/24   SAs 0x411 out, 0x412 in   |
#   | sim2 (netdevsim42) 10.40.2.1/24   SA  0x421 out             |
#   | software SA 0x430 (10.40.3.1 -> 10.40.3.2), 2 out policies  |
#   +------------------------------------------------------------+
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsim.sh"

at_exit nsim_cleanup
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
sa_exists o 0x411 || fail "stock: 0x411 was flushed (expected the stock leak)"
expect_eq "stock: 0x411 still bound to" "$(sa_offload_dev o 0x411)" sim1
expect_eq "stock: SAs left in sim1's (down) hardware" "$(nsim_hw_sas 41)" 2
log "stock $(uname -r): feature off + down leaves $(nsim_hw_sas 41) SAs bound to sim1"
reset

# --- module
xnc_load || fail "load failed"
ev0=$(xnc_stat NotifierEvents o); fl0=$(xnc_stat SAsFlushed o)
iev0=$(xnc_stat NotifierEvents); ifl0=$(xnc_stat SAsFlushed)
expect_eq "counters at load" "$ev0/$fl0" 0/0

# (1) feature on: xfrm's own notifier flushes, as in stock; the module
# only counts the event (SAsFlushed and xnc_flush are what it removed)
TR=/sys/kernel/tracing
sas_add
echo >$TR/trace
echo 1 >$TR/events/xfrm_nocache/xnc_flush/enable || fail "no xnc_flush tracepoint"
ip -n o link set sim1 down
expect_flushed "feature on"
expect_eq "NotifierEvents" "$(xnc_stat NotifierEvents o)" $((ev0 + 1))
expect_eq "SAsFlushed (feature on: stock's flush)" "$(xnc_stat SAsFlushed o)" "$fl0"
grep -q xnc_flush: $TR/trace && fail "xnc_flush event for a stock flush: $(grep xnc_flush: $TR/trace)"
reset

# (2) feature off, then down: the module removes what stock left; the
# xnc_flush tracepoint reports it
sas_add
ip netns exec o ethtool -K sim1 esp-hw-offload off || fail "esp-hw-offload off"
expect_eq "esp-hw-offload" "$(esp_hw o sim1)" off
echo >$TR/trace
ip -n o link set sim1 down
echo 0 >$TR/events/xfrm_nocache/xnc_flush/enable
grep -qE "xnc_flush: netns=$(stat -L -c %i /run/netns/o) dev=sim1 ifindex=[0-9]+ flushed=2" $TR/trace ||
	fail "no xnc_flush event for sim1 with flushed=2: $(grep xnc_flush $TR/trace)"
expect_flushed "feature off"
expect_eq "NotifierEvents" "$(xnc_stat NotifierEvents o)" $((ev0 + 2))
expect_eq "SAsFlushed" "$(xnc_stat SAsFlushed o)" $((fl0 + 2))
log "module: feature off + down leaves $(nsim_hw_sas 41) SAs bound to sim1"

# a down with nothing bound counts the event and no SA
ip -n o link set sim1 up
ip -n o link set sim1 down
expect_eq "NotifierEvents (empty down)" "$(xnc_stat NotifierEvents o)" $((ev0 + 3))
expect_eq "SAsFlushed (empty down)" "$(xnc_stat SAsFlushed o)" $((fl0 + 2))
# the counters are per namespace: the init namespace saw nothing
expect_eq "init netns counters" "$(xnc_stat NotifierEvents)/$(xnc_stat SAsFlushed)" \
	"$iev0/$ifl0"

# (3) the cost: no table walk of ours when a device that cannot hold
# offloaded state goes down (a veth: no xfrmdev_ops) or one whose offload
# feature is on (xfrm's flush, which uses neither walker, does it); one
# walk of the SAs (and on 6.12 one of the policies, which can be offloaded
# there) when the feature is off; counted by kprobes on the walkers
T=/sys/kernel/tracing
walk_probes() { # on|off
	if [ "$1" = on ]; then
		echo "p:xnc_sw xfrm_state_walk" >>$T/kprobe_events &&
		echo "p:xnc_pw xfrm_policy_walk" >>$T/kprobe_events &&
		echo 1 >$T/events/kprobes/xnc_sw/enable &&
		echo 1 >$T/events/kprobes/xnc_pw/enable
	else
		echo 0 >$T/events/kprobes/xnc_sw/enable
		echo 0 >$T/events/kprobes/xnc_pw/enable
		echo "-:xnc_sw" >>$T/kprobe_events
		echo "-:xnc_pw" >>$T/kprobe_events
	fi 2>/dev/null
}
hits() { awk -v p="$1" '$1 == p { print $2 }' $T/kprobe_profile; }
at_exit walk_probes off
walk_probes on || fail "cannot kprobe xfrm_state_walk/xfrm_policy_walk"
ip -n o link add vx0 type veth peer name vx1
ip -n o link set vx0 up
ip -n o link set sim1 up
ip netns exec o ethtool -K sim1 esp-hw-offload on || fail "esp-hw-offload on"
sa_add o 0x411 10.40.1.1 10.40.1.2 offload dev sim1 dir out || fail "add 0x411"
ev=$(xnc_stat NotifierEvents o); fl=$(xnc_stat SAsFlushed o)
sw=$(hits xnc_sw); pw=$(hits xnc_pw)
ip -n o link set vx0 down
expect_eq "NotifierEvents (veth down)" "$(xnc_stat NotifierEvents o)" $((ev + 1))
expect_eq "SA walks on a veth down" "$(hits xnc_sw)" "$sw"
expect_eq "policy walks on a veth down" "$(hits xnc_pw)" "$pw"
ip -n o link set sim1 down
# first: listing SAs (sa_exists) is a dump, which walks them too
expect_eq "SA walks on a netdevsim down, feature on" "$(hits xnc_sw)" "$sw"
expect_eq "policy walks on a netdevsim down, feature on" "$(hits xnc_pw)" "$pw"
sa_exists o 0x411 && fail "0x411 not flushed (feature on)"
expect_eq "SAsFlushed (sim1 down, feature on)" "$(xnc_stat SAsFlushed o)" "$fl"
ip -n o link set sim1 up
sa_add o 0x411 10.40.1.1 10.40.1.2 offload dev sim1 dir out || fail "add 0x411"
ip netns exec o ethtool -K sim1 esp-hw-offload off || fail "esp-hw-offload off"
sw=$(hits xnc_sw); pw=$(hits xnc_pw)
ip -n o link set sim1 down
expect_eq "SAsFlushed (sim1 down, feature off)" "$(xnc_stat SAsFlushed o)" $((fl + 1))
expect_eq "SA walks on a netdevsim down, feature off" "$(hits xnc_sw)" $((sw + 1))
case $(uname -r) in
6.1.*) pwalks=0 ;;
*) pwalks=1 ;;
esac
expect_eq "policy walks on a netdevsim down, feature off" "$(hits xnc_pw)" $((pw + pwalks))
walk_probes off
ip -n o link del vx0
log "veth down, netdevsim down with the feature on: no walk; feature off: 1 SA walk, $pwalks policy walk"

# (4) after up, re-adding works and the hardware carries packets with it
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

# (5) livepatch disabled (echo 0 > enabled: stock lookups), module still
# loaded: the notifier stays until rmmod, and still flushes and counts
nsim_add 43 o sim3
ip -n o addr add 10.40.4.1/24 dev sim3
sa_add o 0x441 10.40.4.1 10.40.4.2 offload dev sim3 dir out || fail "add 0x441"
ip netns exec o ethtool -K sim3 esp-hw-offload off || fail "sim3 esp-hw-offload off"
xnc_disable || fail "disable failed"
ev=$(xnc_stat NotifierEvents o); fl=$(xnc_stat SAsFlushed o)
ip -n o link set sim3 down
sa_exists o 0x441 && fail "disabled: SA 0x441 of sim3 not flushed"
expect_eq "disabled: SAs in sim3's hardware" "$(nsim_hw_sas 43)" 0
expect_eq "disabled: NotifierEvents" "$(xnc_stat NotifierEvents o)" $((ev + 1))
expect_eq "disabled: SAsFlushed" "$(xnc_stat SAsFlushed o)" $((fl + 1))

# rmmod replays NETDEV_DOWN for running devices to the notifier it
# removes: that must not flush offloaded SAs of devices still up
xnc_unload || fail "unload failed"
expect_eq "0x411 after rmmod" "$(sa_offload_dev o 0x411)" sim1
expect_eq "0x421 after rmmod" "$(sa_offload_dev o 0x421)" sim2
expect_eq "hardware SAs after rmmod" "$(nsim_hw_sas 41)/$(nsim_hw_sas 42)" 1/1
echo "offloaded SAs flushed on down exactly (stock leaves them with the feature off)"
