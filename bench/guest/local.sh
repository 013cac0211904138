#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What the livepatch costs local traffic that never touches IPsec, inside
# the VM (bench/local.sh boots it with one vCPU and -icount
# shift=1: guest time counts instructions).  Namespace "a" is the box:
#   udp   1-byte sendto()s on an unconnected socket to 10.9.0.2 over a
#         dummy device (one output route lookup each, the packet dropped
#         by the device)
#   tcp   connect()/close() to a listener in namespace "b" over a veth
#         (the route looked up at connect and for the SYN-ACK)
# with P outbound tunnel policies in "a" that match none of it, for each
# P in XNC_LOCAL_POLICIES (default "0 1 10000").  Variants, from
# $XNC_OUT/ko/VARIANT/xfrm_nocache.ko (none for stock; idle: the module's,
# its patch disabled), interleaved in XNC_LOCAL_ROUNDS rounds (default
# 3), the order rotating every round.  Writes $XNC_OUT/local.raw, one
# line per sample:
#   policies test variant round ops ns lookups
# (lookups: those the module counted in a and b, - where nothing counts)

# shellcheck source=SCRIPTDIR/../../tests/guest/lib.sh disable=SC1091 # followed with -x
. "$(dirname "$0")/../../tests/guest/lib.sh"
VARIANTS=${XNC_LOCAL_VARIANTS:-stock redirect module}
knob ROUNDS XNC_LOCAL_ROUNDS 3 1 20
knob UDP XNC_LOCAL_UDP 100000 1000 10000000
knob TCP XNC_LOCAL_TCP 3000 100 1000000
XCOST=$XNC_TOP/tests/tools/xcost
RAW=$XNC_OUT/local.raw
: >"$RAW"
[ -x "$XCOST" ] || fail "$XCOST missing (make tools)"
mod_loaded && fail "module loaded before the benchmark"

cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null
	xnc_unload
	ip netns del a 2>/dev/null
	ip netns del b 2>/dev/null
}
trap cleanup EXIT

ip netns add a
ip netns add b
ip -n a link add d0 type dummy
ip -n a addr add 10.9.0.1/24 dev d0
ip -n a link set d0 up
ip -n a link add v0 type veth peer name v1 netns b
ip -n a addr add 10.8.0.1/24 dev v0
ip -n b addr add 10.8.0.2/24 dev v1
ip -n a link set v0 up
ip -n b link set v1 up
ip -n a link set lo up
ip -n b link set lo up
ip netns exec b "$XCOST" listen 7000 &
srv=$!
wait_for 10 ip netns exec a "$XCOST" tcp 10.8.0.2 7000 1 >/dev/null ||
	fail "no TCP listener in b"

# policies P: P outbound tunnel policies in a, for 10.200.0.0/16 and up,
# none of which the traffic matches
policies() {
	ip -n a xfrm policy flush
	awk -v n="$1" 'BEGIN {
		for (i = 0; i < n; i++)
			printf "xfrm policy add src 10.100.0.0/24 dst 10.%d.%d.0/24 dir out tmpl src 192.0.2.1 dst 192.0.2.%d proto esp reqid %d mode tunnel\n",
				200 + int(i / 256) % 50, i % 256, 2 + i % 250, i + 1
	}' >/tmp/local.batch
	[ "$1" = 0 ] || ip -n a -batch /tmp/local.batch ||
		fail "adding $1 policies failed"
	expect_eq "policies in a" \
		"$(ip -n a xfrm policy count |
		   awk '{ for (i = 1; i < NF; i++) if ($i == "OUT") print $(i + 1) }')" "$1"
}

variant_on() {
	[ "$1" = stock ] && return 0
	if [ "$1" = idle ]; then
		# shellcheck disable=SC2119 # xnc_load's arguments: optional
		XNC_KO=$XNC_OUT/ko/module/xfrm_nocache.ko xnc_load ||
			fail "idle: load failed"
		xnc_disable || fail "idle: disabling the patch failed"
		return
	fi
	# shellcheck disable=SC2119 # xnc_load's arguments: optional
	XNC_KO=$XNC_OUT/ko/$1/xfrm_nocache.ko xnc_load || fail "$1: load failed"
}

counts() { case $1 in stock|idle|redirect) return 1 ;; esac; }
lookups() {
	counts "$1" || { echo -; return; }
	echo $(($(xnc_stat Lookups a) + $(xnc_stat Lookups b)))
}

variant_off() {
	[ "$1" = stock ] && return 0
	xnc_unload || fail "$1: unload failed"
}

# sample P TEST VARIANT ROUND
sample() {
	local out ops ns l0 l1
	l0=$(lookups "$3")
	if [ "$2" = udp ]; then
		out=$(ip netns exec a "$XCOST" udp 10.9.0.2 "$UDP") ||
			fail "udp ($3): $out"
	else
		out=$(ip netns exec a "$XCOST" tcp 10.8.0.2 7000 "$TCP") ||
			fail "tcp ($3): $out"
	fi
	ops=${out#ops=}; ops=${ops%% *}
	ns=${out#*ns=}; ns=${ns%% *}
	l1=$(lookups "$3")
	[ "$l0" = - ] || l1=$((l1 - l0))
	echo "$1 $2 $3 $4 $ops $ns $l1" >>"$RAW"
}

read -ra vs <<<"$VARIANTS"
for p in ${XNC_LOCAL_POLICIES:-0 1 10000}; do
	policies "$p"
	for r in $(seq "$ROUNDS"); do
		for i in "${!vs[@]}"; do
			v=${vs[$(((i + r - 1) % ${#vs[@]}))]}
			variant_on "$v"
			# warm up: caches, the module's deferred work
			ip netns exec a "$XCOST" udp 10.9.0.2 $((UDP / 10)) >/dev/null
			if counts "$v"; then
				l=$(xnc_stat Lookups a)
				[ "${l:-0}" -ge $((UDP / 10)) ] ||
					fail "$v: $l lookups counted in a, expected $((UDP / 10))"
			fi
			sample "$p" udp "$v" "$r"
			sample "$p" tcp "$v" "$r"
			variant_off "$v"
		done
		log "policies $p: round $r of $ROUNDS done"
	done
done
echo "local: done"
