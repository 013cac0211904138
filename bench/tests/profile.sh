#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench/profile.py, the benchmark profile's parser, on a small fixed
# profile directory laid out as bench/guest/bench.sh leaves it: perf script
# samples whose callchains each test one attribution rule (innermost
# phase-defining frame wins; memcpy under esp_output is ESP output,
# xfrm_state_find under the bundle build is SA resolution, the outer
# packet's veth transmit under xfrm_output is forwarding, a timer softirq on
# top of xfrm_state_find is other, an RCU batch freeing a dst is release,
# the sink's inbound SA lookup is forwarding; the module's functions, the
# livepatch entry and clone suffixes), the SUB/MAIN split of the policy
# lookup by call site, instructions per packet, the TSV round trip, a
# calibration missing and a profile not measured.  Then an AES-GCM profile
# (XNC_BENCH_PROFILE_CIPHER=gcm): its crypto is ESP output, in cryptd's
# worker and on a chain cut short too, an unknown function is other and
# still counted, and the report and its chart name the cipher.  No VM, no
# perf: a second.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null || { echo "no python3"; exit 4; }
tmp=$(mktemp -d /tmp/xnc-bprof.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
d=$tmp/profile
mkdir -p "$d"
fail() { echo "FAIL: $*"; exit 1; }

echo ok >"$d/status"
printf 'period_ns=500000\nrounds=1\nkernel=6.1.0-test-amd64\n' >"$d/info"
echo "received=10 sent=10 elapsed_us=1000 pps=100 pps_noperf=110 backlog_drops=0" >"$d/1-stock-1.sample"
echo "received=20 sent=20 elapsed_us=1000 pps=100 pps_noperf=100 backlog_drops=0" >"$d/1-module-1.sample"

# frames: f ADDR SYM+OFF (innermost first), kernel unless a dso is given
f() { printf '\t%s %s (%s)\n' "ffffffff8100$((RANDOM % 9000 + 1000))" "$1" "${2:-[kernel.kallsyms]}"; }
hdr() { printf '%s 42 [000]     500000 cpu-clock: \n' "${1:-kpktgend_0}"; }
# the forwarding path below the lookup and the output
fwd_in() {
	f ip_forward+0x2d0; f ip_sublist_rcv_finish+0x3f; f ip_sublist_rcv+0x1a0
	f ip_list_rcv+0x130; f __netif_receive_skb_list_core+0x2a0
	f netif_receive_skb_list_internal+0x1b0; f napi_complete_done+0x6e
	f process_backlog+0x12a; f __napi_poll+0x28; f net_rx_action+0x2a0
	f __do_softirq+0xc5; f do_softirq.part.0+0x3d; f __local_bh_enable_ip+0x60
	f pktgen_xmit+0x5b0 '[pktgen]'; f pktgen_thread_worker+0x1f0 '[pktgen]'
	f kthread+0xe0; f ret_from_fork+0x1f
}
lookup() { f xfrm_lookup_with_ifid+0x1b4; f xfrm_lookup+0x12; f __xfrm_route_forward+0x9c; fwd_in; }
create() { f xfrm_resolve_and_create_bundle+0x6c; f xfrm_bundle_lookup.constprop.0+0x56; lookup; }
output() { f xfrm_output_resume+0x4a; f xfrm_output+0x6e; f xfrm4_output+0x3a; f ip_forward_finish+0x7a; fwd_in; }
{
	# ESP output: memcpy inside esp_output_tail
	hdr; f memcpy_orig+0x10; f skb_copy_bits+0x120; f esp_output_tail+0x2c0 '[esp4]'
	f esp_output+0x130 '[esp4]'; f xfrm_output_one+0x3b0; output; echo
	# release: the bundle's last reference dropped in xfrm_output
	hdr; f dst_release+0x1c; f xfrm_output_one+0x2a0; output; echo
	# SA resolution inside the bundle build
	hdr; f xfrm_state_find+0x240; f xfrm_tmpl_resolve_one.constprop.0+0xd0
	f xfrm_tmpl_resolve+0x98; create; echo
	# xfrm_selector_match called by the state search is SA, not policy
	hdr; f xfrm_selector_match+0x20; f xfrm_state_look_at+0x5d; f xfrm_state_find+0x1f0
	f xfrm_tmpl_resolve_one.constprop.0+0xd0; f xfrm_tmpl_resolve+0x98; create; echo
	# bundle build
	hdr; f xfrm4_fill_dst+0x40; f xfrm_bundle_create.isra.0+0x3b0; create; echo
	# policy lookup, the SUB-type call site, then the MAIN one
	hdr; f xfrm_policy_lookup_bytype+0x90; f xfrm_policy_lookup+0x1d
	f xfrm_bundle_lookup.constprop.0+0x30; lookup; echo
	hdr; f xfrm_policy_inexact_lookup_rcu+0x40; f xfrm_policy_lookup_bytype+0x120
	f xfrm_policy_lookup+0x33; f xfrm_bundle_lookup.constprop.0+0x30; lookup; echo
	# an RCU batch freeing a bundle, in a softirq on top of xfrm_state_find
	hdr; f kmem_cache_free+0x2b0; f dst_destroy+0x90; f dst_destroy_rcu+0xe
	f rcu_do_batch+0x1b0; f rcu_core+0x24a; f __do_softirq+0xc5; f irq_exit_rcu+0x9a
	f sysvec_apic_timer_interrupt+0x6e; f asm_sysvec_apic_timer_interrupt+0x16
	f xfrm_state_find+0x250; f xfrm_tmpl_resolve_one.constprop.0+0xd0
	f xfrm_tmpl_resolve+0x98; create; echo
	# a timer softirq on top of xfrm_state_find: other
	hdr; f run_timer_softirq+0x30; f __do_softirq+0xc5; f irq_exit_rcu+0x9a
	f sysvec_apic_timer_interrupt+0x6e; f asm_sysvec_apic_timer_interrupt+0x16
	f xfrm_state_find+0x250; f xfrm_tmpl_resolve_one.constprop.0+0xd0
	f xfrm_tmpl_resolve+0x98; create; echo
	# the outer packet sent on by xfrm_output_resume: forwarding
	hdr; f veth_xmit+0x1f0 '[veth]'; f dev_hard_start_xmit+0xa0; f __dev_queue_xmit+0x2b0
	f ip_finish_output2+0x1a4; f ip_output+0x6e; output; echo
	# the livepatch's entry, through a dynamic ftrace trampoline
	hdr; f klp_ftrace_handler+0x60; f ftrace_trampoline+0x3a '[__builtin__ftrace]'
	f xfrm_lookup_with_ifid+0x5; f xfrm_lookup+0x12; f __xfrm_route_forward+0x9c; fwd_in; echo
	# a clone suffix
	hdr; f xfrm_lookup_with_ifid.cold+0x3; f xfrm_lookup+0x12; f __xfrm_route_forward+0x9c; fwd_in; echo
	# idle
	hdr swapper; f default_idle+0x10; f default_idle_call+0x2c; f do_idle+0x200
	f cpu_startup_entry+0x1d; f rest_init+0xd0; echo
	# user space, nothing resolved: other
	hdr perf; printf '\t%s [unknown] ([unknown])\n' 7f00aa; echo
	# pktgen building its packet: forwarding
	hdr; f memset_orig+0x33; f pktgen_xmit+0x2a0 '[pktgen]'; f pktgen_thread_worker+0x1f0 '[pktgen]'
	f kthread+0xe0; f ret_from_fork+0x1f; echo
	# the sink's inbound SA lookup: forwarding, not SA resolution
	hdr; f __xfrm_state_lookup+0x70; f xfrm_state_lookup+0x20; f xfrm_input+0x3c0
	f xfrm4_esp_rcv+0x35; f ip_protocol_deliver_rcu+0x3a; f ip_local_deliver_finish+0x77
	f ip_local_deliver+0x6e; f __netif_receive_skb_one_core+0x89; f process_backlog+0x12a
	f __napi_poll+0x28; f net_rx_action+0x2a0; f __do_softirq+0xc5; echo
	# another event: not counted
	printf 'kpktgend_0 42 [000]          1 xncprof:bytype: (ffffffff81001000) type=1\n'
	f xfrm_policy_lookup_bytype+0x5; f xfrm_policy_lookup+0x1d; echo
} >"$d/1-stock-1.txt"
{
	# the module's counters, and its one (MAIN) call site
	hdr; f xnc_account+0x40 '[xfrm_nocache]'; f xnc_lookup_with_ifid+0x2f0 '[xfrm_nocache]'
	f xfrm_lookup+0x12; f __xfrm_route_forward+0x9c; fwd_in; echo
	hdr; f xfrm_policy_lookup_bytype+0x90; f xnc_lookup_with_ifid+0x1a0 '[xfrm_nocache]'
	f xfrm_lookup+0x12; f __xfrm_route_forward+0x9c; fwd_in; echo
} >"$d/1-module-1.txt"
gzip "$d/1-module-1.txt"
site() { # TYPE CALLER+OFF [DSO]
	printf 'kpktgend_0 42 [000] xncprof:bytype: (ffffffff81001000) type=%s\n' "$1"
	f xfrm_policy_lookup_bytype+0x5; f "$2" "${3:-[kernel.kallsyms]}"; f xfrm_lookup+0x12; echo
}
{ site 1 xfrm_policy_lookup+0x1d; site 0 xfrm_policy_lookup+0x33; site 1 xfrm_policy_lookup+0x1d; } \
	>"$d/1-stock.sites"
site 0 xnc_lookup_with_ifid+0x1a0 '[xfrm_nocache]' | gzip >"$d/1-module.sites.gz"

bp() { python3 "$top/bench/profile.py" "$@"; }
bp "$d" --tsv "$tmp/p.tsv" --md "$tmp/p.md" --plot "$tmp/p.plot" --explain 2>"$tmp/explain" ||
	fail "profile.py exited $?"

# samples per phase in $tsv: N VARIANT PHASE COUNT
tsv=$tmp/p.tsv
want() {
	local got
	got=$(awk -F'\t' -v n="$1" -v v="$2" -v p="$3" '$1 == n && $2 == v && $3 == p { print $4 }' "$tsv")
	[ "$got" = "$4" ] || { cat "$tmp/explain"; fail "N=$1 $2 $3: $got samples, want $4"; }
}
want 1 stock policy_sub 1
want 1 stock policy 1
want 1 stock sa 2
want 1 stock bundle 1
want 1 stock release 2
want 1 stock glue 2
want 1 stock esp 1
want 1 stock fwd 3
want 1 stock other 2
want 1 stock idle 1
want 1 stock total 15
want 1 module glue 1
want 1 module policy 1
want 1 module policy_sub 0
want 1 module total 2
# 1 sample = 500000 ns = 250,000 instructions at shift 1, over 10 packets
awk -F'\t' '$1 == 1 && $2 == "stock" && $3 == "esp" { exit !($5 == "25000.0") }' "$tmp/p.tsv" ||
	fail "ESP output: not 25000 instructions per packet: $(grep -P '^1\tstock\tesp' "$tmp/p.tsv")"
awk -F'\t' '$1 == 1 && $2 == "stock" && $3 == "sa" { exit !($5 == "50000.0") }' "$tmp/p.tsv" ||
	fail "SA: not 50000 instructions per packet"
grep -q '^# split=yes$' "$tmp/p.tsv" || fail "the policy lookup is not split: $(grep split "$tmp/p.tsv")"
grep -q '^| policy lookup: SUB-type search | 25,000 ±25,000 | 0 ±0 | -25,000 ±25,000 |' "$tmp/p.md" ||
	{ cat "$tmp/p.md"; fail "no SUB-type row as expected in the table"; }
grep -q 'N=1 stock 9.1%' "$tmp/p.md" || fail "perf's cost not reported"
grep -q 'idle samples in all' "$tmp/p.md" || fail "idle samples not reported"
# (an info without cipher=, as before it was recorded: null)
grep -qF 'by phase (ESP null). ' "$tmp/p.md" || fail "the report does not name ESP null"
[ "$(head -n1 "$tmp/p.plot" | awk -F'\t' '{ print NF }')" = 10 ] || fail "plot data: not 9 phases"

# the TSV renders the same report
bp --from-tsv "$tmp/p.tsv" --md "$tmp/q.md" || fail "--from-tsv exited $?"
diff "$tmp/p.md" "$tmp/q.md" || fail "the report from the TSV differs"

# a variant without calibration: one policy phase, and why; a sample with
# fewer samples than pktgen's run holds periods: records lost
rm "$d/1-module.sites.gz"
sed -i 's/elapsed_us=1000 /elapsed_us=1000000 /' "$d/1-module-1.sample"
bp "$d" --tsv "$tmp/u.tsv" --md "$tmp/u.md" || fail "profile.py exited $? without calibration"
grep -q '^- 1-module-1.txt.gz: 2 samples while pktgen ran 2000 periods: records lost$' "$tmp/u.md" ||
	fail "lost records not reported"
grep -q '^# split=no: no call-site calibration for module$' "$tmp/u.tsv" || fail "no reason for not splitting"
want_u=$(awk -F'\t' '$2 == "stock" && $3 == "policy" { print $4 }' "$tmp/u.tsv")
[ "$want_u" = 2 ] || fail "unsplit policy lookup: $want_u samples, want 2"
grep -q '^| policy lookup (SUB and MAIN) |' "$tmp/u.md" || fail "no unsplit policy row"

# not measured
echo "no perf in the guest" >"$d/status"
rc=0
bp "$d" --md "$tmp/n.md" || rc=$?
[ $rc = 3 ] || fail "not measured: exit $rc, want 3"
grep -qx 'Profile: not measured (no perf in the guest).' "$tmp/n.md" || fail "not measured: $(cat "$tmp/n.md")"
# AES-GCM (XNC_BENCH_PROFILE_CIPHER=gcm), 6.1's and 6.12's AES-NI and the
# generic code
g=$tmp/gcm
mkdir -p "$g"
echo ok >"$g/status"
printf 'period_ns=500000\nrounds=1\ncipher=gcm\nkernel=6.1.0-test-amd64\n' >"$g/info"
echo "received=10 sent=10 elapsed_us=1000 pps=100 pps_noperf=100 backlog_drops=0" >"$g/1024-stock-1.sample"
worker() { f process_one_work+0x1e2; f worker_thread+0x50; f kthread+0xe0; f ret_from_fork+0x1f; }
{
	# 6.1, in the softirq: under esp_output
	hdr; f aesni_gcm_enc_update_avx_gen4+0x4c0 '[aesni_intel]'
	f gcmaes_crypt_by_sg.constprop.0+0x2d0 '[aesni_intel]'; f gcmaes_encrypt+0x6a '[aesni_intel]'
	f helper_rfc4106_encrypt+0xc9 '[aesni_intel]'; f simd_aead_encrypt+0x91; f crypto_aead_encrypt+0x26
	f esp_output_tail+0x3e0 '[esp4]'; f esp_output+0x130 '[esp4]'; f xfrm_output_one+0x3b0; output; echo
	# 6.1, in cryptd's worker: no esp_output on the stack
	hdr kworker/0:1; f aesni_gcm_enc_update_avx_gen4+0x4c0 '[aesni_intel]'
	f gcmaes_crypt_by_sg.constprop.0+0x2d0 '[aesni_intel]'; f gcmaes_encrypt+0x6a '[aesni_intel]'
	f helper_rfc4106_encrypt+0xc9 '[aesni_intel]'; f cryptd_aead_crypt+0x3a '[cryptd]'
	f cryptd_queue_worker+0x6d '[cryptd]'; worker; echo
	# 6.12, in cryptd's worker
	hdr kworker/0:1; f aes_gcm_enc_update_aesni_avx+0x1a0 '[aesni_intel]'
	f rfc4106_encrypt_aesni_avx+0x2b4 '[aesni_intel]'; f cryptd_aead_crypt+0x3a '[cryptd]'
	f cryptd_queue_worker+0x6d '[cryptd]'; worker; echo
	# generic GHASH and the scatterlist walk, on chains perf cut short
	hdr; f gf128mul_4k_lle+0x55; f ghash_update+0x8e; printf '\t%s [unknown] ([unknown])\n' 0; echo
	hdr; f memcpy_orig+0x10; f scatterwalk_copychunks+0x60; f scatterwalk_map_and_copy+0x85
	printf '\t%s [unknown] ([unknown])\n' 0; echo
	# the encrypted packet sent on from cryptd's completion: forwarding
	hdr kworker/0:1; f veth_xmit+0x1f0 '[veth]'; f dev_hard_start_xmit+0xa0
	f __dev_queue_xmit+0x2b0; f ip_finish_output2+0x1a4; f ip_output+0x6e
	f xfrm_output_resume+0x4a; f esp_output_done+0x110 '[esp4]'; f cryptd_aead_crypt+0x3a '[cryptd]'
	f cryptd_queue_worker+0x6d '[cryptd]'; worker; echo
	# a function no phase knows: other, not lost
	hdr kworker/0:1; f test_no_such_fn+0x10; worker; echo
} >"$g/1024-stock-1.txt"
bp "$g" --tsv "$tmp/g.tsv" --md "$tmp/g.md" --explain 2>"$tmp/explain" || fail "gcm: profile.py exited $?"
tsv=$tmp/g.tsv
want 1024 stock esp 5
want 1024 stock fwd 1
want 1024 stock other 1
want 1024 stock total 7
grep -qE '^  other +1  test_no_such_fn 1$' "$tmp/explain" ||
	{ cat "$tmp/explain"; fail "gcm: the unknown function is not named as other's"; }
grep -q '^# cipher=gcm$' "$tmp/g.tsv" || fail "gcm: no cipher in the TSV"
grep -qF 'by phase (AES-GCM). ' "$tmp/g.md" || { cat "$tmp/g.md"; fail "gcm: the report does not name AES-GCM"; }
! grep -q 'ESP null' "$tmp/g.md" || fail "gcm: the report names ESP null"
bp --from-tsv "$tmp/g.tsv" --md "$tmp/h.md" || fail "gcm: --from-tsv exited $?"
diff "$tmp/g.md" "$tmp/h.md" || fail "gcm: the report from the TSV differs"
# the report alone (XNC_BENCH_PROFILE=only), its chart's title through a
# gnuplot that keeps its script
mkdir -p "$tmp/bin"
printf '#!/bin/sh\ncat >"%s"\n' "$tmp/gnuplot.in" >"$tmp/bin/gnuplot"
chmod +x "$tmp/bin/gnuplot"
PATH=$tmp/bin:$PATH XNC_KLINE=6.1 "$top/bench/report.sh" --profile-only "$g" "$tmp/rep" \
	>"$tmp/rep.out" 2>&1 || { cat "$tmp/rep.out"; fail "gcm: report.sh --profile-only exited $?"; }
grep -qxF '| cipher | AES-GCM |' "$tmp/rep/bench-profile.md" || fail "gcm: bench-profile.md does not name AES-GCM"
grep -q '^| ESP output | ' "$tmp/rep/bench-profile.md" || fail "gcm: bench-profile.md has no ESP output row"
grep -qF 'by phase (AES-GCM; perf cpu-clock' "$tmp/gnuplot.in" ||
	fail "gcm: the chart's title does not name AES-GCM: $(grep -m1 title "$tmp/gnuplot.in")"
echo "bench/profile.py: 15 + 2 samples attributed as expected, SUB/MAIN split by call site, TSV round trip, unsplit and not-measured cases; an AES-GCM profile classed and named"
