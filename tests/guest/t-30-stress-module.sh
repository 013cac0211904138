#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stress, the module itself (topology: stress-lib.sh; traffic through 32
# tunnel SAs, monitor and dump readers in gw and sink throughout, and gw's
# policies flushed and re-added in a background loop).  Round after round:
# insmod (every other round with latency=1), the patched path must count
# gw's traffic; disable the livepatch, the counters must freeze; rmmod,
# nothing left behind.  For XNC_STRESS_SECS and at least
# XNC_STRESS_ROUNDS rounds (make stress: 50), at most 50.  Traffic must
# be back within 1 s of each step.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/stress-lib.sh"

# gw's policies flushed and re-added, about 3 times a second
policy_churn() {
	trap 'exit 0' TERM
	while :; do
		ip -n gw xfrm policy flush
		ip -n gw -batch "$ST_TMP/gw-pol"
		echo >>"$ST_TMP/pol-churn"
		st_nap 0.3
	done
}
# shellcheck disable=SC2155 # its status is not used
moving() { local v=$(st_gw_stat Lookups); st_nap 0.2; [ "$(st_gw_stat Lookups)" -gt "$v" ]; }

st_setup
st_readers_start gw sink
st_traffic_start
xnc_unload || fail "unload failed"
policy_churn &
ST_BG=$!

round=0 lookups=0
COUNTED=1
st_deadline
while st_more $((round + 1)); do
	round=$((round + 1))
	if [ $((round % 2)) = 0 ]; then
		xnc_load latency=1 || fail "round $round: load (latency=1) failed"
	else
		xnc_load || fail "round $round: load failed"
	fi
	st_resume "insmod (round $round)"
	wait_for 5 moving || fail "round $round: the patched path does not count gw's traffic"
	xnc_disable || fail "round $round: disable failed"
	st_resume "livepatch disabled (round $round)"
	frozen=$(st_gw_stat Lookups)
	lookups=$((lookups + frozen))
	st_nap 0.3
	expect_eq "round $round: Lookups after disable" "$(st_gw_stat Lookups)" "$frozen"
	rmmod xfrm_nocache || fail "round $round: rmmod failed"
	mod_loaded && fail "round $round: module still loaded"
	[ -z "$(ls /sys/kernel/livepatch)" ] || fail "round $round: /sys/kernel/livepatch not empty"
	[ ! -e "/proc/$ST_GWPID/net/xfrm_nocache" ] || fail "round $round: proc file left in gw"
	st_resume "rmmod (round $round)"
done
kill $ST_BG
wait $ST_BG
ST_BG=
churns=$(wc -l <"$ST_TMP/pol-churn")
log "$round load/disable/rmmod rounds under traffic, $lookups lookups counted by the patched path;" \
	"$churns policy flush + re-add meanwhile"
expect_ge "policy churn rounds during the module churn" "$churns" 1
# the policy loop may have been stopped between flush and re-add
ip -n gw xfrm policy flush
ip -n gw -batch "$ST_TMP/gw-pol" || fail "re-adding the policies failed"
xnc_load || fail "final load failed"
st_finish
echo "$round module load/disable/rmmod rounds under traffic and policy churn"
