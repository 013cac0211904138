#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 25 load / disable / rmmod cycles; each leaves no trace.  Traffic through a
# transport-mode SA runs during the cycles, so the switch between the stock
# and patched function happens with lookups in flight.
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"

esp_pair both

ip netns exec a ping -q -i 0.01 -w 600 10.9.0.2 >/tmp/cycles.ping 2>&1 &
pinger=$!
for i in $(seq 1 25); do
	xnc_load || fail "cycle $i: load failed"
	before=$(xnc_stat Lookups a)
	wait_for 5 sh -c "[ \$(ip netns exec a awk '\$1==\"Lookups\"{print \$2}' /proc/net/xfrm_nocache) -gt $before ]" ||
		fail "cycle $i: counters did not move under traffic"
	xnc_disable || fail "cycle $i: disable failed"
	frozen=$(xnc_stat Lookups a)
	sleep 0.3
	expect_eq "cycle $i: counters after disable" "$(xnc_stat Lookups a)" "$frozen"
	rmmod xfrm_nocache || fail "cycle $i: rmmod failed"
	mod_loaded && fail "cycle $i: module still loaded"
	[ -z "$(ls /sys/kernel/livepatch)" ] || fail "cycle $i: /sys/kernel/livepatch not empty"
	[ ! -e /proc/net/xfrm_nocache ] || fail "cycle $i: proc file left"
done
kill $pinger; wait $pinger 2>/dev/null
esp=$(sa_packets b 0x101)
expect_ge "ESP packets received by b" "${esp:-0}" 100
echo "25 cycles under traffic; $esp ESP packets crossed"
