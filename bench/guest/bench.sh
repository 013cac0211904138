#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark, inside the VM (bench/bench.sh boots it with one vCPU and
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
# Two addressing plans (XNC_BENCH_PLANS, default "random hub"):
#   random   every SA to the sink's 192.168.1.2, told apart by its reqid
#   hub      hub and spokes as strongSwan numbers them: tunnel x's SA goes
#            to spoke 172.20.0.0 + x + 1 (consecutive addresses, routed
#            to the sink), its CHILD_SA reqid x + 1 assigned in the same
#            order; the SA hash combines addresses and reqid, so such a
#            plan may crowd the SAs into few buckets (stock and module
#            call the same SA lookup).  Samples of this plan carry the
#            cipher as "null-hub" or "gcm-hub"; stock and module only.
# Variants, interleaved round by round (the order rotates every round):
#   stock        no module: Debian's own xfrm_lookup_with_ifid
#   module       xfrm_nocache.ko
#   pcpu-ref     xnc_pcpu_ref.ko: the same plus a 4.14-style per-CPU
#                last-bundle cache (bench/ref/pcpu_ref.c), reference only
#   module-lat   xfrm_nocache.ko latency=1            (only N in XNC_BENCH_EXTRA_N,
#   module-trace xfrm_nocache.ko + xnc_lookup enabled  null cipher)
# and the ceiling: the same traffic with no policy at all.  One more, in
# every block with XNC_BENCH_IDLE=1:
#   idle         xfrm_nocache.ko loaded, its patch disabled: stock's lookup
# and for each K in XNC_BENCH_PIN (e.g. "1 4"), in every block:
#   pinK         xnc_slab_pin.ko count=K (bench/ref/slab_pin.c): stock's
#                lookup with K more 1 KiB kmalloc objects held, as loading
#                any module leaves a few in that cache
#
# Writes $XNC_OUT/bench.raw, one line per sample:
#   cipher n variant round pps sent received elapsed_us lookups hits misses
#   backlog_drops sub_searches
# (sub_searches: the module's lookups that searched the sub policies, 0 in
# a namespace without any once its first recount ran, src/subpol.c)
#
# Then the profile (XNC_BENCH_PROFILE: 1, the default: after the throughput
# blocks; only: alone, no throughput; 0: none): for N in
# XNC_BENCH_PROFILE_N (1 1024), ESP with XNC_BENCH_PROFILE_CIPHER (null, or
# gcm: AES-GCM; bench/bench.sh refuses any other), the variants of
# XNC_BENCH_PROFILE_VARIANTS (stock module; any of the benchmark's, e.g.
# module-trace) interleaved over XNC_BENCH_PROFILE_ROUNDS (2) rounds, one pktgen sample each under
# `perf record -a -g -e cpu-clock -c XNC_BENCH_PROFILE_PERIOD` (500000 ns
# of guest time: under -icount shift=1, a sample every 250,000 guest
# instructions, about 4,000 in a 2 s sample), enabled only while pktgen
# runs.  Into $XNC_OUT/profile/ (bench/profile.py reads it):
#   N-VARIANT-ROUND.txt.gz   perf script of the sample, with callchains
#   N-VARIANT-ROUND.sample   received= sent= elapsed_us= pps= pps_noperf=
#                            (the same count just before, without perf)
#                            backlog_drops=
#   N-VARIANT.sites.gz       perf script of a kprobe on
#                            xfrm_policy_lookup_bytype recording its type
#                            argument with its callchain (round 1 only):
#                            which call site searches which policy type
#   info, status             period, cipher and versions; "ok" or why not
#                            measured
# perf is the guest userland's: the host's (Debian 12's linux-perf, 6.1)
# seen over 9p, or on Debian 13's kernels the trixie root's (linux-perf
# 6.12, on 7.3 too; the options and script fields used here are the
# same); perf script runs in the guest while the variant is still loaded,
# so module symbols resolve through /proc/kallsyms.  A profile that cannot
# be taken (no perf, perf failing) is logged and left out; the throughput
# stands.

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
KO=${XNC_KO:-$top/xfrm_nocache.ko}
REF_KO=${XNC_REF_KO:-}
PIN_KO=${XNC_PIN_KO:-}
NS_LIST=${XNC_BENCH_N:-1 8 32 256 1024 10000}
EXTRA_N=${XNC_BENCH_EXTRA_N:-1 32 1024}
CIPHERS=${XNC_BENCH_CIPHERS:-null gcm}
PLANS=${XNC_BENCH_PLANS:-random hub}
IDLE=${XNC_BENCH_IDLE:-0}
PINS=
for k in ${XNC_BENCH_PIN:-}; do PINS="$PINS pin$k"; done
ROUNDS=${XNC_BENCH_ROUNDS:-7}
SECS=${XNC_BENCH_SECS:-2}		# guest seconds per sample
PROFILE=${XNC_BENCH_PROFILE:-1}
PROFILE_N=${XNC_BENCH_PROFILE_N:-1 1024}
PROFILE_CIPHER=${XNC_BENCH_PROFILE_CIPHER:-null}
PROFILE_ROUNDS=${XNC_BENCH_PROFILE_ROUNDS:-2}
read -ra PROFILE_VARIANTS <<<"${XNC_BENCH_PROFILE_VARIANTS:-stock module}"
PROFILE_PERIOD=${XNC_BENCH_PROFILE_PERIOD:-500000}	# ns of guest time
PROF=$XNC_OUT/profile
RAW=$XNC_OUT/bench.raw
REJ=$XNC_OUT/bench.rejected
GCM_KEY=0x0102030405060708090a0b0c0d0e0f1011121314

die() { echo "bench: $*" >&2; exit 1; }
[ -n "$REF_KO" ] || [ "${XNC_BENCH_LIB:-}" = 1 ] || die "XNC_REF_KO: path of xnc_pcpu_ref.ko"
[ -z "$PINS" ] || [ -n "$PIN_KO" ] || die "XNC_PIN_KO: path of xnc_slab_pin.ko (XNC_BENCH_PIN is set)"
log() { echo "# [${SECONDS}s] $*"; }

pg() { ip netns exec bsrc sh -c "echo '$2' > /proc/net/pktgen/$1" || die "pktgen $1: $2"; }
rx() { ip netns exec bsink cat /sys/class/net/k1/statistics/rx_packets; }
# counter NAME: one of the gateway's /proc/net/xfrm_nocache (0 without it)
# shellcheck disable=SC2016 # awk's own fields
counter() { ip netns exec bgw awk -v n="$1" '$1 == n { print $2 }' /proc/net/xfrm_nocache 2>/dev/null || echo 0; }
lookups() { counter Lookups; }
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
		# shellcheck disable=SC2086 # namespace and device
		set -- $n
		ip -n "$1" link set "$2" up
	done
	ip -n bsrc route add default via 10.0.0.2
	ip -n bgw route add 10.128.0.0/9 via 192.168.1.2
	# the hub plan's spokes, all behind the sink
	ip -n bgw route add 172.20.0.0/16 via 192.168.1.2
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

# tunnels CIPHER N [PLAN]: exactly N policies and SAs on the gateway, in
# the addressing plan PLAN (random, the default, or hub)
tunnels() {
	ip -n bgw xfrm policy flush
	ip -n bgw xfrm state flush
	[ "$2" -gt 0 ] || return 0
	awk -v n="$2" -v c="$1" -v plan="${3:-random}" -v key="$GCM_KEY" 'BEGIN {
		for (x = 0; x < n; x++) {
			d = sprintf("10.%d.%d.0/24", 128 + int(x / 256), x % 256)
			peer = "192.168.1.2"
			if (plan == "hub")
				peer = sprintf("172.20.%d.%d", int((x + 1) / 256), (x + 1) % 256)
			printf "xfrm policy add src 10.0.0.0/24 dst %s dir out tmpl src 192.168.1.1 dst %s proto esp reqid %d mode tunnel\n", d, peer, x + 1
			printf "xfrm state add src 192.168.1.1 dst %s proto esp spi %d reqid %d mode tunnel ", peer, 65536 + x, x + 1
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

lp_dir() { echo "/sys/kernel/livepatch/$1"; }

# lp_off MODULE VARIANT: disable MODULE's livepatch and wait until it is gone
lp_off() {
	local t=300
	echo 0 >"$(lp_dir "$1")/enabled" || die "$2: cannot disable the patch"
	while [ -e "$(lp_dir "$1")" ]; do
		t=$((t - 1)); [ $t -gt 0 ] || die "$2: livepatch did not go away"
		sleep 0.1
	done
}

variant_on() {
	case $1 in
	stock|plain) return 0 ;;
	module) insmod "$KO" ;;
	module-lat) insmod "$KO" latency=1 ;;
	module-trace) insmod "$KO" &&
		echo 1 >/sys/kernel/tracing/events/xfrm_nocache/xnc_lookup/enable ;;
	pcpu-ref) insmod "$REF_KO" ;;
	idle) insmod "$KO" ;;
	# no livepatch to wait for
	pin*) insmod "$PIN_KO" count="${1#pin}" || die "cannot load $1"; return ;;
	esac || die "cannot load $1"
	local m=xfrm_nocache t=300
	[ "$1" = pcpu-ref ] && m=xnc_pcpu_ref
	while [ "$(cat "$(lp_dir $m)/transition" 2>/dev/null)" != 0 ]; do
		t=$((t - 1)); [ $t -gt 0 ] || die "$1: livepatch transition stuck"
		sleep 0.1
	done
	# idle: the module stays loaded, its patch disabled: stock's lookup
	# in the kernel as loading the module left it
	[ "$1" != idle ] || lp_off $m idle
}

variant_off() {
	local m=xfrm_nocache t=100
	case $1 in
	stock|plain) return 0 ;;
	pcpu-ref) m=xnc_pcpu_ref ;;
	pin*) rmmod xnc_slab_pin || die "cannot rmmod xnc_slab_pin"; return ;;
	module-trace)
		echo 0 >/sys/kernel/tracing/events/xfrm_nocache/xnc_lookup/enable
		: >/sys/kernel/tracing/trace ;;
	esac
	# idle's patch went at variant_on
	[ "$1" = idle ] || lp_off $m "$1"
	until rmmod $m 2>/dev/null; do
		t=$((t - 1)); [ $t -gt 0 ] || die "cannot rmmod $m"
		sleep 0.1
	done
}

# sample CIPHER N VARIANT ROUND COUNT: one pktgen run; leaves its raw line
# in /tmp/bench.sample and prints "pps backlog_drops"
sample() {
	local r0 r1 l0 l1 h0 h1 m0 m1 d0 d1 q0 q1 res us sent pps
	pg s0 "count $5"
	d0=$(backlog_drops); r0=$(rx); l0=$(lookups); q0=$(counter SubPolicySearches)
	h0=$(param xnc_pcpu_ref ref_hits); m0=$(param xnc_pcpu_ref ref_misses)
	# under the profile: perf records while pktgen runs, and only then
	[ -z "${perf_on:-}" ] || prof_ctl enable
	pg pgctrl start
	[ -z "${perf_on:-}" ] || prof_ctl disable
	r1=$(rx); l1=$(lookups); d1=$(backlog_drops); q1=$(counter SubPolicySearches)
	h1=$(param xnc_pcpu_ref ref_hits); m1=$(param xnc_pcpu_ref ref_misses)
	res=$(ip netns exec bsrc cat /proc/net/pktgen/s0)
	us=$(echo "$res" | sed -n 's/.*Result: OK: \([0-9]*\)(.*/\1/p')
	sent=$(echo "$res" | sed -n 's/.*sofar: \([0-9]*\).*/\1/p')
	[ "${us:-0}" -gt 0 ] || die "pktgen gave no result: $res"
	pps=$(((r1 - r0) * 1000000 / us))
	echo "$1 $2 $3 $4 $pps $sent $((r1 - r0)) $us $((l1 - l0)) $((h1 - h0)) $((m1 - m0)) $((d1 - d0)) $((q1 - q0))" >/tmp/bench.sample
	# the variant really ran: the module resolved the forwarded packets
	# (give or take one in flight while the counters are read)
	case $3 in
	module*|pcpu-ref)
		[ $((l1 - l0)) -ge $((r1 - r0 - 2)) ] ||
			die "$3: $((l1 - l0)) lookups for $((r1 - r0)) packets" ;;
	stock)
		grep -qE '^(xfrm_nocache|xnc_pcpu_ref|xnc_slab_pin) ' /proc/modules && die "stock with a module loaded" ;;
	pin*)
		grep -qE '^(xfrm_nocache|xnc_pcpu_ref) ' /proc/modules && die "$3 with a module of ours loaded"
		grep -q '^xnc_slab_pin ' /proc/modules || die "$3 without xnc_slab_pin" ;;
	idle)
		grep -q '^xfrm_nocache ' /proc/modules || die "idle without the module"
		[ $((l1 - l0)) = 0 ] || die "idle: the module resolved $((l1 - l0)) lookups" ;;
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
			log "$c N=$n round $r $v: $pps pps$(awk '$13 > 0 { print ", " $13 " sub policy searches" }' /tmp/bench.sample)"
		done
	done
}

# --- the profile ---------------------------------------------------------

prof_status() { echo "$*" >"$PROF/status"; log "profile: $*"; }

# prof_start DATA EVENT-ARGS...: perf record, system-wide with callchains,
# in the background with its events disabled until prof_ctl enable
prof_start() {
	local data=$1; shift
	rm -f /tmp/prof.ctl /tmp/prof.ack "$data"
	mkfifo /tmp/prof.ctl /tmp/prof.ack || return 1
	exec 7<>/tmp/prof.ctl 8<>/tmp/prof.ack
	# -N -B: no build-id cache, no build-id pass at the end (perf script
	# runs right after, against this kernel's own /proc/kallsyms); -m 8M:
	# a buffer that holds a whole sample's records should perf's own
	# process not get the CPU from pktgen to drain it
	perf record -a -g "$@" -N -B -m 8M -D -1 --control fifo:/tmp/prof.ctl,/tmp/prof.ack \
		-o "$data" >/tmp/prof.rec 2>&1 &
	prof_pid=$!
}

# prof_ctl enable|disable: and wait for perf's answer
prof_ctl() {
	local ack=
	echo "$1" >&7
	read -r -t 60 -u 8 ack
	[ "$ack" = ack ] || { log "profile: perf did not answer '$1'" >&2; return 1; }
}

# prof_stop: end perf record (SIGINT: it writes its file and exits 130)
prof_stop() {
	kill -INT "$prof_pid" 2>/dev/null
	wait "$prof_pid"
	local rc=$?
	exec 7>&- 8>&-
	rm -f /tmp/prof.ctl /tmp/prof.ack
	prof_pid=
	[ $rc = 0 ] || [ $rc = 130 ] || { log "profile: perf record exited $rc: $(tail -n1 /tmp/prof.rec)" >&2; return 1; }
}

# profile_check: perf records, answers its control fifo and resolves
# kernel symbols, or the status says why not
profile_check() {
	command -v perf >/dev/null || { prof_status "no perf in the guest"; return 1; }
	# root sees kernel addresses; never throttle the sampling interrupt
	sysctl -qw kernel.kptr_restrict=0 kernel.perf_event_paranoid=-1 \
		kernel.perf_cpu_time_max_percent=0 2>/dev/null
	# shellcheck disable=SC2015 # any step failing is perf failing
	prof_start /tmp/prof.data -e cpu-clock -c "$PROFILE_PERIOD" &&
		prof_ctl enable && sleep 0.2 && prof_ctl disable && prof_stop ||
		{ prof_status "perf record failed: $(tail -n1 /tmp/prof.rec)"; return 1; }
	perf script -i /tmp/prof.data -F ip,sym,dso 2>/dev/null |
		grep -v '\[unknown\] (\[kernel' | grep -q '(\[kernel.kallsyms\])$' ||
		{ prof_status "perf resolves no kernel symbol"; return 1; }
	{
		echo "period_ns=$PROFILE_PERIOD"
		echo "rounds=$PROFILE_ROUNDS"
		echo "cipher=$PROFILE_CIPHER"
		echo "kernel=$(uname -r)"
		echo "perf=$(perf --version | tr ' ' _)"
	} >"$PROF/info"
}

# profile_sites N VARIANT: a kprobe on xfrm_policy_lookup_bytype records
# its type argument (%si: 1 SUB, 0 MAIN) with the callchain, for a few
# hundred packets: which call site searches which type
profile_sites() {
	local ev=/sys/kernel/tracing/kprobe_events out=$PROF/$1-$2.sites.gz
	echo '-:xncprof/bytype' 2>/dev/null >>$ev
	echo 'p:xncprof/bytype xfrm_policy_lookup_bytype type=%si:u8' 2>/dev/null >>$ev ||
		{ log "profile: no kprobe on xfrm_policy_lookup_bytype: the policy lookup stays one phase"; return 0; }
	if prof_start /tmp/sites.data -e xncprof:bytype; then
		perf_on=1 sample "$PROFILE_CIPHER" "$1" "$2" 0 300 >/dev/null || exit 1
		prof_stop && perf script -i /tmp/sites.data -F comm,tid,event,trace,ip,sym,symoff,dso \
			2>/dev/null | gzip -1 >"$out"
	fi
	echo '-:xncprof/bytype' >>$ev
	rm -f /tmp/sites.data
}

# profile_one N VARIANT ROUND COUNT: the sample without perf, then under it;
# a sample whose backlog overflowed is taken again (up to 3 times, then
# kept: the report counts its drops)
profile_one() {
	local n=$1 v=$2 r=$3 count=$4 base=$PROF/$1-$2-$3 res0 res a
	local pps sent received us drops lost
	res0=$(sample "$PROFILE_CIPHER" "$n" "$v" "$r" "$count") || exit 1
	for a in 1 2 3; do
		prof_start /tmp/prof.data -e cpu-clock -c "$PROFILE_PERIOD" || return 1
		res=$(perf_on=1 sample "$PROFILE_CIPHER" "$n" "$v" "$r" "$count") || exit 1
		prof_stop || return 1
		if [ "${res#* }" = 0 ] || [ $a = 3 ]; then
			break
		fi
		log "profile N=$n $v: sample discarded, ${res#* } backlog drops"
	done
	read -r _ _ _ _ pps sent received us _ _ _ drops </tmp/bench.sample
	perf script -i /tmp/prof.data -F comm,tid,cpu,period,event,ip,sym,symoff,dso \
		2>/tmp/prof.script | gzip -1 >"$base.txt.gz"
	[ "${PIPESTATUS[0]}" = 0 ] ||
		{ log "profile: perf script failed: $(tail -n1 /tmp/prof.script)"; rm -f "$base".*; return 1; }
	# records perf lost ("Processed N events and lost M chunks!")
	lost=$(sed -n 's/.* and lost \([0-9]*\) chunks.*/\1/p' /tmp/prof.script)
	echo "received=$received sent=$sent elapsed_us=$us pps=$pps pps_noperf=${res0% *}" \
		"backlog_drops=$drops lost_chunks=${lost:-0}" >"$base.sample"
	rm -f /tmp/prof.data
	log "profile N=$n round $r $v: $pps pps under perf, ${res0% *} without"
}

# profile: N in PROFILE_N, ESP with PROFILE_CIPHER, the variants
# interleaved (run in a subshell: a failure here ends the profile, not the
# benchmark)
profile() {
	local n r i v pps count pvs=("${PROFILE_VARIANTS[@]}") ok=0 tried=0
	prof_pid=
	trap '[ -z "$prof_pid" ] || kill -INT "$prof_pid" 2>/dev/null' EXIT
	profile_check || return 0
	for n in $PROFILE_N; do
		tunnels "$PROFILE_CIPHER" "$n"
		dst_range "$n"
		pps=$(sample "$PROFILE_CIPHER" "$n" warmup 0 2000) || exit 1
		count=$((${pps% *} * SECS))
		[ $count -ge 2000 ] || count=2000
		for r in $(seq 1 "$PROFILE_ROUNDS"); do
			for i in "${!pvs[@]}"; do
				v=${pvs[$(((i + r) % ${#pvs[@]}))]}
				variant_on "$v"
				sleep 0.5
				sample "$PROFILE_CIPHER" "$n" warmup "$r" 1000 >/dev/null || exit 1
				[ "$r" != 1 ] || profile_sites "$n" "$v"
				tried=$((tried + 1))
				profile_one "$n" "$v" "$r" "$count" && ok=$((ok + 1))
				variant_off "$v"
			done
		done
	done
	tunnels null 0
	if [ $ok = 0 ]; then
		prof_status "perf failed in all $tried samples (see bench.log)"
	else
		prof_status ok
	fi
}

# bench/guest/latency.sh uses the functions above, not what follows
[ "${XNC_BENCH_LIB:-}" != 1 ] || return 0

: >"$RAW"
: >"$REJ"
setup_net
if [ "$PROFILE" != only ]; then
	log "setup done; N in {$NS_LIST}, ciphers {$CIPHERS}, plans {$PLANS}, $ROUNDS rounds, ${SECS}s samples"

	# the ceiling: forwarding with no policy (no xfrm lookup happens at all)
	tunnels null 0
	block none 0 plain

	for plan in $PLANS; do
		for c in $CIPHERS; do
			for n in $NS_LIST; do
				t0=$SECONDS
				tunnels "$c" "$n" "$plan"
				log "$c ($plan): $n tunnels loaded in $((SECONDS - t0))s"
				idle=
				[ "$IDLE" = 0 ] || idle=idle
				if [ "$plan" = hub ]; then
					# shellcheck disable=SC2086 # a list of variants
					block "$c-hub" "$n" stock module $idle$PINS
					continue
				fi
				vlist="stock module pcpu-ref $idle$PINS"
				if [ "$c" = null ] && echo " $EXTRA_N " | grep -q " $n "; then
					vlist="$vlist module-lat module-trace"
				fi
				# shellcheck disable=SC2086 # a list of variants
				block "$c" "$n" $vlist
			done
		done
	done
	tunnels null 0
	grep -c . "$RAW" | sed 's/^/# samples: /'
fi
rm -rf "$PROF"
mkdir -p "$PROF"
case $PROFILE in
0) echo "off: XNC_BENCH_PROFILE=0" >"$PROF/status" ;;
*)
	log "profile: N in {$PROFILE_N}, ESP $PROFILE_CIPHER, $PROFILE_ROUNDS rounds, a sample every $PROFILE_PERIOD ns"
	(profile) || prof_status "stopped by an error (see bench.log)" ;;
esac
log "done"
