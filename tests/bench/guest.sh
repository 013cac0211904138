#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark, inside the VM (scripts/bench.sh boots it with one vCPU and
# -icount shift=1, so guest time counts instructions).  Forwarded packets/s
# through a gateway holding N tunnel-mode ESP SAs and policies, one per
# inner /24; pktgen picks a random destination per packet over all N /24s,
# so consecutive packets rarely share a tunnel once N grows.
#
#  +-----------+ s0     g0 +------------------------+ g1     k1 +-------------+
#  | bsrc      |-----------| bgw  ip_forward        |-----------| bsink       |
#  | pktgen    |           | N x (policy out, SA)   |   ESP     | counts rx   |
#  | 10.0.0.1  |           | 10.0.0.2  192.168.1.1  |           | 192.168.1.2 |
#  +-----------+           +------------------------+           +-------------+
#  destinations 10.128.0.0 + x*256 (x = 0..N-1) -> tunnel x, reqid x+1
#
# Variants, interleaved round by round (the order rotates every round):
#   stock        no module: Debian's own xfrm_lookup_with_ifid
#   module       xfrm_nocache.ko
#   pcpu-ref     xnc_pcpu_ref.ko: the same plus a 4.14-style per-CPU
#                last-bundle cache (tests/bench/pcpu_ref.c), reference only
#   module-lat   xfrm_nocache.ko latency=1            (only N in XNC_BENCH_EXTRA_N,
#   module-trace xfrm_nocache.ko + xnc_lookup enabled  null cipher)
# and the ceiling: the same traffic with no policy at all.
#
# Writes $XNC_OUT/bench.raw, one line per sample:
#   cipher n variant round pps sent received elapsed_us lookups hits misses
#   backlog_drops

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
KO=${XNC_KO:-$top/xfrm_nocache.ko}
REF_KO=${XNC_REF_KO:-}
NS_LIST=${XNC_BENCH_N:-1 8 32 256 1024 10000}
EXTRA_N=${XNC_BENCH_EXTRA_N:-1 32 1024}
CIPHERS=${XNC_BENCH_CIPHERS:-null gcm}
ROUNDS=${XNC_BENCH_ROUNDS:-7}
SECS=${XNC_BENCH_SECS:-2}		# guest seconds per sample
RAW=$XNC_OUT/bench.raw
REJ=$XNC_OUT/bench.rejected
GCM_KEY=0x0102030405060708090a0b0c0d0e0f1011121314

die() { echo "bench: $*" >&2; exit 1; }
[ -n "$REF_KO" ] || [ "${XNC_BENCH_LIB:-}" = 1 ] || die "XNC_REF_KO: path of xnc_pcpu_ref.ko"
log() { echo "# [${SECONDS}s] $*"; }

pg() { ip netns exec bsrc sh -c "echo '$2' > /proc/net/pktgen/$1" || die "pktgen $1: $2"; }
rx() { ip netns exec bsink cat /sys/class/net/k1/statistics/rx_packets; }
lookups() { ip netns exec bgw awk '$1 == "Lookups" { print $2 }' /proc/net/xfrm_nocache 2>/dev/null || echo 0; }
# packets dropped because a CPU's backlog was full (all CPUs, all netns)
backlog_drops() {
	local s=0 a b rest
	while read -r a b rest; do s=$((s + 0x$b)); done </proc/net/softnet_stat
	echo $s
}
param() { cat "/sys/module/$1/parameters/$2" 2>/dev/null || echo 0; }

setup_net() {
	local n
	for n in bsrc bgw bsink; do ip netns add $n; ip -n $n link set lo up; done
	ip link add s0 netns bsrc type veth peer name g0 netns bgw
	ip link add g1 netns bgw type veth peer name k1 netns bsink
	ip -n bsrc addr add 10.0.0.1/24 dev s0
	ip -n bgw addr add 10.0.0.2/24 dev g0
	ip -n bgw addr add 192.168.1.1/24 dev g1
	ip -n bsink addr add 192.168.1.2/24 dev k1
	for n in "bsrc s0" "bgw g0" "bgw g1" "bsink k1"; do
		set -- $n
		ip -n "$1" link set "$2" up
	done
	ip -n bsrc route add default via 10.0.0.2
	ip -n bgw route add 10.128.0.0/9 via 192.168.1.2
	ip netns exec bgw sysctl -qw net.ipv4.ip_forward=1
	# /24 destination and source selectors go into the policy hash, not
	# the inexact tree: what a router with thousands of tunnels sets
	ip -n bgw xfrm policy set hthresh4 24 24
	ip netns exec bsrc ping -qc1 -W2 10.0.0.2 >/dev/null || die "no underlay src-gw"
	ip netns exec bgw ping -qc1 -W2 192.168.1.2 >/dev/null || die "no underlay gw-sink"

	modprobe pktgen || die "no pktgen"
	pg kpktgend_0 rem_device_all
	pg kpktgend_0 "add_device s0"
	pg s0 "clone_skb 0"
	pg s0 "pkt_size 64"
	pg s0 "delay 0"
	pg s0 "src_min 10.0.0.1"
	pg s0 "src_max 10.0.0.1"
	pg s0 "udp_src_min 9"
	pg s0 "udp_src_max 9"
	pg s0 "udp_dst_min 9"
	pg s0 "udp_dst_max 9"
	pg s0 "dst_mac $(ip -n bgw -br link show g0 | awk '{ print $3 }')"
	pg s0 "flag IPDST_RND"
}

# tunnels CIPHER N: exactly N policies and SAs on the gateway
tunnels() {
	ip -n bgw xfrm policy flush
	ip -n bgw xfrm state flush
	[ "$2" -gt 0 ] || return 0
	awk -v n="$2" -v c="$1" -v key="$GCM_KEY" 'BEGIN {
		for (x = 0; x < n; x++) {
			d = sprintf("10.%d.%d.0/24", 128 + int(x / 256), x % 256)
			printf "xfrm policy add src 10.0.0.0/24 dst %s dir out tmpl src 192.168.1.1 dst 192.168.1.2 proto esp reqid %d mode tunnel\n", d, x + 1
			printf "xfrm state add src 192.168.1.1 dst 192.168.1.2 proto esp spi %d reqid %d mode tunnel ", 65536 + x, x + 1
			if (c == "null")
				print "enc cipher_null \"\""
			else
				printf "aead rfc4106(gcm(aes)) %s 128\n", key
		}
	}' >/tmp/bench.batch
	ip -n bgw -batch /tmp/bench.batch || die "loading $2 tunnels failed"
	[ "$(ip -n bgw xfrm state list | grep -c '^src ')" = "$2" ] ||
		die "gateway has $(ip -n bgw xfrm state list | grep -c '^src ') SAs, want $2"
}

# destinations: every address of the N /24s
dst_range() {
	local last=$(($1 - 1))
	pg s0 "dst_min 10.128.0.1"
	pg s0 "dst_max 10.$((128 + last / 256)).$((last % 256)).254"
}

lp_dir() { echo /sys/kernel/livepatch/$1; }

variant_on() {
	case $1 in
	stock|plain) return 0 ;;
	module) insmod "$KO" ;;
	module-lat) insmod "$KO" latency=1 ;;
	module-trace) insmod "$KO" &&
		echo 1 >/sys/kernel/tracing/events/xfrm_nocache/xnc_lookup/enable ;;
	pcpu-ref) insmod "$REF_KO" ;;
	esac || die "cannot load $1"
	local m=xfrm_nocache t=300
	[ "$1" = pcpu-ref ] && m=xnc_pcpu_ref
	while [ "$(cat "$(lp_dir $m)/transition" 2>/dev/null)" != 0 ]; do
		t=$((t - 1)); [ $t -gt 0 ] || die "$1: livepatch transition stuck"
		sleep 0.1
	done
}

variant_off() {
	local m=xfrm_nocache t=300
	case $1 in
	stock|plain) return 0 ;;
	pcpu-ref) m=xnc_pcpu_ref ;;
	module-trace)
		echo 0 >/sys/kernel/tracing/events/xfrm_nocache/xnc_lookup/enable
		: >/sys/kernel/tracing/trace ;;
	esac
	echo 0 >"$(lp_dir $m)/enabled"
	while [ -e "$(lp_dir $m)" ]; do
		t=$((t - 1)); [ $t -gt 0 ] || die "$1: livepatch did not go away"
		sleep 0.1
	done
	t=100
	until rmmod $m 2>/dev/null; do
		t=$((t - 1)); [ $t -gt 0 ] || die "cannot rmmod $m"
		sleep 0.1
	done
}

# sample CIPHER N VARIANT ROUND COUNT: one pktgen run; leaves its raw line
# in /tmp/bench.sample and prints "pps backlog_drops"
sample() {
	local r0 r1 l0 l1 h0 h1 m0 m1 d0 d1 res us sent pps
	pg s0 "count $5"
	d0=$(backlog_drops); r0=$(rx); l0=$(lookups)
	h0=$(param xnc_pcpu_ref ref_hits); m0=$(param xnc_pcpu_ref ref_misses)
	pg pgctrl start
	r1=$(rx); l1=$(lookups); d1=$(backlog_drops)
	h1=$(param xnc_pcpu_ref ref_hits); m1=$(param xnc_pcpu_ref ref_misses)
	res=$(ip netns exec bsrc cat /proc/net/pktgen/s0)
	us=$(echo "$res" | sed -n 's/.*Result: OK: \([0-9]*\)(.*/\1/p')
	sent=$(echo "$res" | sed -n 's/.*sofar: \([0-9]*\).*/\1/p')
	[ -n "$us" ] && [ "$us" -gt 0 ] || die "pktgen gave no result: $res"
	pps=$(((r1 - r0) * 1000000 / us))
	echo "$1 $2 $3 $4 $pps $sent $((r1 - r0)) $us $((l1 - l0)) $((h1 - h0)) $((m1 - m0)) $((d1 - d0))" >/tmp/bench.sample
	# the variant really ran: the module resolved the forwarded packets
	# (give or take one in flight while the counters are read)
	case $3 in
	module*|pcpu-ref)
		[ $((l1 - l0)) -ge $((r1 - r0 - 2)) ] ||
			die "$3: $((l1 - l0)) lookups for $((r1 - r0)) packets" ;;
	stock)
		grep -qE '^(xfrm_nocache|xnc_pcpu_ref) ' /proc/modules && die "stock with a module loaded" ;;
	esac
	echo "$pps $((d1 - d0))"
}

# measure CIPHER N VARIANT ROUND COUNT: a sample in which a backlog
# overflowed is discarded (kept in bench.rejected) and run again: once
# softirqs are deferred to ksoftirqd, the one CPU is split between pktgen
# and ksoftirqd and the sample measures the scheduler, not the lookup path
measure() {
	local a res
	for a in 1 2 3 4 5; do
		res=$(sample "$@") || exit 1
		if [ "${res#* }" = 0 ]; then
			cat /tmp/bench.sample >>"$RAW"
			echo "${res% *}"
			return 0
		fi
		cat /tmp/bench.sample >>"$REJ"
		log "$1 N=$2 $3: sample discarded, ${res#* } backlog drops" >&2
	done
	die "$1 N=$2 $3: backlog drops in 5 samples in a row"
}

# block CIPHER N VARIANTS...: ROUNDS interleaved rounds
block() {
	local c=$1 n=$2; shift 2
	local vs=("$@") nv=$# r i v pps count
	dst_range $((n > 0 ? n : 1))
	# warm up, and size the samples to about SECS guest seconds
	pps=$(measure "$c" "$n" warmup 0 2000) || exit 1
	count=$((pps * SECS))
	[ $count -ge 2000 ] || count=2000
	for r in $(seq 1 "$ROUNDS"); do
		for i in $(seq 0 $((nv - 1))); do
			v=${vs[$(((i + r) % nv))]}
			variant_on "$v"
			# let the load's deferred work settle, then warm up
			sleep 0.5
			sample "$c" "$n" warmup "$r" 1000 >/dev/null || exit 1
			pps=$(measure "$c" "$n" "$v" "$r" $count) || exit 1
			variant_off "$v"
			log "$c N=$n round $r $v: $pps pps"
		done
	done
}

# tests/bench/latency.sh uses the functions above, not what follows
[ "${XNC_BENCH_LIB:-}" != 1 ] || return 0

: >"$RAW"
: >"$REJ"
setup_net
log "setup done; N in {$NS_LIST}, ciphers {$CIPHERS}, $ROUNDS rounds, ${SECS}s samples"

# the ceiling: forwarding with no policy (no xfrm lookup happens at all)
tunnels null 0
block none 0 plain

for c in $CIPHERS; do
	for n in $NS_LIST; do
		t0=$SECONDS
		tunnels "$c" "$n"
		log "$c: $n tunnels loaded in $((SECONDS - t0))s"
		vs="stock module pcpu-ref"
		if [ "$c" = null ] && echo " $EXTRA_N " | grep -q " $n "; then
			vs="$vs module-lat module-trace"
		fi
		block "$c" "$n" $vs
	done
done
tunnels null 0
grep -c . "$RAW" | sed 's/^/# samples: /'
log "done"
