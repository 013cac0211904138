#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where a forwarded packet's instructions go: the benchmark's profile.

bench/guest/bench.sh samples the gateway's kernel with
`perf record -a -g -e cpu-clock -c PERIOD` while pktgen runs, in a guest
under qemu `-icount shift=1`, where guest time counts instructions: a
cpu-clock sample every PERIOD ns of guest time is a sample every
PERIOD / 2**shift guest instructions, a statistical instruction profile.
This reads what it left in its profile directory and attributes every
sample to one phase of the forwarded IPsec path.

  bench/profile.py PROFILE_DIR [--tsv FILE] [--md FILE]
                           [--plot FILE] [--explain] [--shift 1]
  bench/profile.py --from-tsv FILE [--md FILE] [--plot FILE]

PROFILE_DIR ($XNC_OUT/profile) holds, per N, variant and round:
  N-VARIANT-ROUND.txt[.gz]  `perf script -F comm,tid,cpu,period,event,ip,
                            sym,symoff,dso` of the sample, callchains
                            innermost frame first
  N-VARIANT-ROUND.sample    key=value words: received= (packets the sink
                            got while perf ran), pps=, pps_noperf= (the
                            same count without perf, just before),
                            sent=, elapsed_us=, backlog_drops=,
                            lost_chunks= (perf script's count)
and, optionally, per N and variant:
  N-VARIANT.sites[.gz]      `perf script` of a kprobe on
                            xfrm_policy_lookup_bytype recording its type
                            argument (type=1: SUB, 0: MAIN) with its
                            callchain: which call site passes which type
  status                    "ok", or why the profile was not measured
  info                      key=value lines (period_ns=, cipher=, perf=,
                            kernel=); cipher= null (the default: a profile
                            from before it was recorded) or gcm

Outputs: --tsv, "# key=value" lines (period_ns, shift, split, ...), one
line per (N, variant, phase): n variant phase samples instr_per_pkt pm
share_pct (pm: the Poisson +- of instr_per_pkt, sqrt(samples) samples'
worth; phase "idle" has no instructions, "total" sums the others), then
"cell" lines (files, packets, packets/s with and without perf, backlog
drops); --md, the report's table and notes (on stdout without it);
--plot, gnuplot data for a row-stacked histogram (one row per N and
variant, one column per phase); --explain, per phase the innermost frames
that decided it, most frequent first, on stderr.  --from-tsv renders the
same report from a TSV written before (the report keeps the TSV, not the
perf output).  Exit status 3 when there is nothing to report (the reason
in --md, or on stdout), 0 otherwise.

Attribution (inclusive, by callchain): a sample goes to the phase of the
INNERMOST frame on its stack whose function is in MARKERS below (the
sampled function itself first, then its callers outward).  Nested phases
come out right that way: xfrm_state_find runs inside the bundle build
(xfrm_resolve_and_create_bundle -> xfrm_tmpl_resolve) and counts as SA
resolution, memcpy under esp_output as ESP output, and the outer packet's
transmission (ip_output, dev_queue_xmit, veth) under xfrm_output_resume
as the rest of forwarding.  Functions that several phases call (memcpy,
kmem_cache_alloc, the route lookups, xfrm_selector_match) are deliberately
not markers: they count for their caller's phase.  Softirq and interrupt
entries (__do_softirq, irq_exit_rcu, ...) are markers of "other", so that
a timer softirq running on top of, say, xfrm_state_find does not count
as SA resolution; a network softirq has net_rx_action inside it, which
is met first.  A frame's phase is fixed by MARKERS, a priority list:
its exact name (the first phase listing it), else the first prefix that
matches it, in table order.  Symbols are compared without GCC's clone
suffixes (.cold, .isra.0, .constprop.0, .part.0).

The policy lookup is split by the type the call passes to
xfrm_policy_lookup_bytype: stock searches the SUB-type policies on every
lookup, then the MAIN type; the module only while the namespace has an
outbound sub policy.  The callchain does not show arguments, but the
caller's return address tells the call sites apart, and N-VARIANT.sites
says which call site passed which type (measured, not read from the
code).  Without it, or if a sample comes from a call site it did not see,
the policy lookup is one phase.

Idle samples (the idle loop: a halted vCPU, whose guest time under
-icount is not instructions) are counted apart and left out of the
instructions.
"""

import argparse
import collections
import glob
import gzip
import math
import os
import re
import sys

# Phases, in the order of the report.
PHASES = [
    ("policy_sub", "policy lookup: SUB-type search"),
    ("policy", "policy lookup: MAIN type and the rest"),
    ("sa", "template/SA resolution"),
    ("bundle", "bundle build"),
    ("release", "bundle release (incl. RCU callback)"),
    ("glue", "lookup entry and glue"),
    ("esp", "ESP output"),
    ("fwd", "rest of forwarding"),
    ("other", "other (timers, perf, user space)"),
]
# the policy lookup when it cannot be split (row label in the report)
POLICY_ALL = "policy lookup (SUB and MAIN)"
# what each phase holds, for the report
PHASE_DOC = {
    "policy_sub": "`xfrm_policy_lookup_bytype` called for the SUB type",
    "policy": "`xfrm_policy_lookup_bytype` for the MAIN type, "
              "`xfrm_policy_lookup`, `xfrm_expand_policies`, the "
              "inexact-tree search",
    "sa": "`xfrm_tmpl_resolve(_one)`, `xfrm_state_find`, `km_query`",
    "bundle": "`xfrm_resolve_and_create_bundle`, `xfrm_bundle_create`, "
              "`dst_alloc`, `xfrm4_fill_dst`, the tunnel's route "
              "(`xfrm4_dst_lookup`), a bundle without transforms",
    "release": "`dst_release`, `dst_destroy(_rcu)`, `xfrm4_dst_destroy`, "
               "`call_rcu`, and RCU's callback batch (`rcu_do_batch`: every "
               "callback counts, here nearly all free bundles)",
    "glue": "`__xfrm_route_forward` (with its flow decode), `xfrm_lookup*`, "
            "stock's `xfrm_bundle_lookup`; the module's `xnc_*` functions, "
            "the livepatch's ftrace trampoline and `klp_ftrace_handler`",
    "esp": "`xfrm4_output`, `xfrm_output*`, `esp_output*`, the crypto "
           "(`cipher_null`'s, or AES-GCM's: `crypto_*`, `gcm_*`, `ghash_*`, "
           "`aesni_*`, `aes_gcm_*`, `scatterwalk_*`, ..., in cryptd's worker "
           "too)",
    "fwd": "pktgen, veth, `net_rx_action`, `ip_rcv`, `ip_forward`, the "
           "ESP packet's `ip_output` and transmit, the sink's receive "
           "(its `xfrm_input` too)",
    "other": "under none of these: softirq and interrupt entries (timers), "
             "user space (perf), RCU's grace periods",
}
# the profiled cipher (info's cipher=, XNC_BENCH_PROFILE_CIPHER) as the
# report names it
CIPHERS = {"null": "ESP null", "gcm": "AES-GCM"}
BYTYPE = "xfrm_policy_lookup_bytype"
TYPE_SUB, TYPE_MAIN = 1, 0

# What marks a phase: (phase, exact names, prefixes).  Names of Debian's
# 6.1 and 6.12 kernels (both are listed where they differ); a name that
# does not exist in a kernel simply never matches.
MARKERS = [
    ("policy", [
        BYTYPE, "xfrm_policy_lookup", "xfrm_sk_policy_lookup",
        "xfrm_expand_policies", "xfrm_policy_match",
        "xfrm_policy_inexact_lookup", "xfrm_policy_inexact_lookup_rcu",
        "xfrm_policy_find_inexact_candidates",
        "xfrm_policy_lookup_inexact_addr", "xfrm_policy_eval_candidates",
        "__xfrm_policy_eval_candidates",
        # the module's expansion of a sub policy (when not inlined)
        "xnc_expand",
    ], []),
    ("sa", [
        "xfrm_tmpl_resolve", "xfrm_tmpl_resolve_one", "xfrm_state_find",
        "xfrm_state_look_at", "xfrm_get_saddr", "km_query",
    ], []),
    ("bundle", [
        "xfrm_resolve_and_create_bundle", "xfrm_bundle_create",
        "xfrm_create_dummy_bundle", "xfrm_alloc_dst", "xfrm_fill_dst",
        "xfrm_init_path", "xfrm_init_pmtu", "xfrm4_fill_dst",
        "xfrm6_fill_dst", "xfrm_dst_lookup", "__xfrm_dst_lookup",
        "xfrm4_dst_lookup", "__xfrm4_dst_lookup", "xfrm6_dst_lookup",
        "xfrm_get_tos", "dst_alloc", "dst_init",
        # the module's bundle without transforms (when not inlined)
        "xnc_dummy_bundle",
    ], []),
    ("release", [
        "dst_release", "dst_release_immediate", "dst_destroy",
        "dst_destroy_rcu", "xfrm4_dst_destroy", "xfrm6_dst_destroy",
        "xfrm_dst_destroy", "call_rcu", "call_rcu_hurry",
        "__call_rcu_common", "rcu_do_batch",
    ], []),
    ("glue", [
        "xfrm_lookup_with_ifid", "xfrm_lookup", "xfrm_lookup_route",
        "__xfrm_route_forward", "xfrm_bundle_lookup",
        # the livepatch's way in: ftrace trampoline and klp's handler
        "klp_ftrace_handler", "arch_ftrace_ops_list_func",
    ], [
        "ftrace_",
        # the module's own functions: its lookup, counters, tracepoint
        "xnc_",
    ]),
    ("esp", [
        "xfrm4_output", "__xfrm4_output", "xfrm6_output", "__xfrm6_output",
        "xfrm_outer_mode_output", "xfrm4_prepare_output",
        "xfrm6_prepare_output", "xfrm4_extract_output",
        "xfrm6_extract_output", "xfrm_inner_extract_output",
        "xfrm4_tunnel_encap_add", "xfrm6_tunnel_encap_add",
        "xfrm4_beet_encap_add", "xfrm6_beet_encap_add",
        "xfrm4_transport_output", "xfrm6_transport_output",
        "xfrm_skb_check_space", "xfrm_dev_direct_output",
        "validate_xmit_xfrm",
        # the crypto: cipher_null's
        "null_skcipher_crypt", "null_crypt",
        "null_init", "null_update", "null_final", "null_digest",
        # AES-GCM's (rfc4106(gcm(aes))), wherever it runs: cryptd's
        # worker too, with no esp_output on its stack (simd_aead_encrypt
        # defers there when the softirq cannot use the FPU, or requests
        # wait there already)
        "__crypto_xor", "aes_encrypt", "ctr_crypt", "memcpy_sglist",
        "__clmul_gf128mul_ble",
    ], [
        "esp_output", "esp4_", "xfrm_output", "crypto_",
        # AES-NI: 6.1's helper_rfc4106_encrypt, gcmaes_crypt_by_sg,
        # aesni_gcm_enc_update_avx_gen4; 6.12's rfc4106_encrypt_aesni_avx,
        # gcm_process_assoc, aes_gcm_enc_update_aesni_avx
        "helper_rfc4106_", "gcmaes_", "generic_gcmaes_", "rfc4106_",
        "aesni_", "_aesni_", "aes_gcm_", "aes_ctr_enc_", "clmul_ghash_",
        # generic: crypto/gcm.c's gcm_hash_*, ghash_update, gf128mul_4k_lle
        # (and the SIMD and cryptd wrappers, lib/crypto's aesgcm)
        "gcm_", "ghash_", "gf128mul_", "scatterwalk_", "skcipher_walk_",
        "simd_aead_", "cryptd_", "aesgcm_",
    ]),
    ("fwd", [
        "ip_forward", "ip_forward_finish", "ip_rcv", "ip_rcv_core",
        "ip_rcv_finish", "ip_rcv_finish_core", "ip_list_rcv",
        "ip_sublist_rcv", "ip_sublist_rcv_finish", "ip_local_deliver",
        "ip_local_deliver_finish", "ip_protocol_deliver_rcu",
        "ip_output", "ip_finish_output", "__ip_finish_output",
        "ip_finish_output2", "ip_local_out", "__ip_local_out",
        "process_backlog", "net_rx_action", "__napi_poll", "napi_poll",
        "dev_queue_xmit", "__dev_queue_xmit", "dev_hard_start_xmit",
        "sch_direct_xmit", "__qdisc_run", "netif_rx", "__netif_rx",
        "netif_rx_internal", "enqueue_to_backlog", "eth_type_trans",
        "xfrm4_rcv", "xfrm_input", "xfrm4_esp_rcv", "xfrm4_rcv_encap",
        "udp_rcv", "__udp4_lib_rcv", "icmp_rcv",
        # a sending socket (the host-side test; pktgen in the guest)
        "udp_sendmsg", "ip_send_skb", "ip_push_pending_frames",
        "ip_make_skb", "__sys_sendto", "__sys_sendmsg",
    ], [
        "__netif_receive_skb", "netif_receive_skb", "pktgen_", "veth_",
    ]),
    ("other", [
        "__do_softirq", "handle_softirqs", "do_softirq", "irq_exit_rcu",
        "__irq_exit_rcu", "common_interrupt", "asm_common_interrupt",
    ], [
        "asm_sysvec_", "sysvec_", "__sysvec_",
    ]),
    ("idle", [
        "do_idle", "cpu_idle_poll", "default_idle", "default_idle_call",
        "arch_cpu_idle", "cpuidle_enter", "cpuidle_enter_state",
        "native_safe_halt", "pv_native_safe_halt", "acpi_safe_halt",
        "cpu_startup_entry",
    ], [
        "acpi_idle_", "mwait_idle", "intel_idle",
    ]),
]

EXACT = {}
PREFIXES = []
for _ph, _names, _prefixes in MARKERS:
    for _n in _names:
        EXACT.setdefault(_n, _ph)
    PREFIXES += [(_p, _ph) for _p in _prefixes]

CLONE = re.compile(r"(\.(cold|isra|constprop|part|lto_priv|localalias)(\.\d+)?)+$")
HEADER = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>\d+)(?:/\d+)?\s+(?:\[\d+\]\s+)?"
                    r"(?:(?P<period>\d+)\s+)?(?P<event>[\w:.-]+):\s*(?P<rest>.*)$")
FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>.*)\)\s*$")
SYMOFF = re.compile(r"^(?P<name>.*)\+0x(?P<off>[0-9a-f]+)$")


def norm(sym):
    """A symbol without its clone suffix."""
    return CLONE.sub("", sym)


def phase_of(sym):
    """The phase a function marks, or None."""
    s = norm(sym)
    ph = EXACT.get(s)
    if ph:
        return ph
    for p, ph in PREFIXES:
        if s.startswith(p):
            return ph
    return None


def opener(path):
    return gzip.open(path, "rt", errors="replace") if path.endswith(".gz") \
        else open(path, errors="replace")


def samples(path):
    """(header match, [(name, offset or None, dso)]) per perf script sample;
    the match is None for a header line this cannot read."""
    head, frames, seen = None, [], False
    with opener(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if seen:
                    yield head, frames
                head, frames, seen = None, [], False
                continue
            if line[0] in " \t":
                m = FRAME.match(line)
                if not m or not seen:
                    continue
                so = SYMOFF.match(m.group("sym"))
                if so:
                    frames.append((so.group("name"), int(so.group("off"), 16),
                                   m.group("dso")))
                else:
                    frames.append((m.group("sym"), None, m.group("dso")))
                continue
            if seen:
                yield head, frames
            head, frames, seen = HEADER.match(line), [], True
    if seen:
        yield head, frames


def site(frames, i):
    """The call site of the first xfrm_policy_lookup_bytype frame at or
    outside frames[i]: (caller, offset), or None."""
    for j in range(i, len(frames) - 1):
        if norm(frames[j][0]) == BYTYPE:
            name, off, _ = frames[j + 1]
            if off is None or name == "[unknown]":
                return None
            return norm(name), off
    return None


def classify(frames, sites):
    """(phase, deciding frame name) of one callchain.  sites: call site ->
    type, or None when the call sites are not known."""
    for i, (name, _, _) in enumerate(frames):
        if name == "[unknown]":
            continue
        ph = phase_of(name)
        if not ph:
            continue
        if ph == "policy":
            s = site(frames, i)
            if s is not None:
                t = sites.get(s) if sites is not None else None
                if t == TYPE_SUB:
                    ph = "policy_sub"
                elif t is None:
                    ph = "policy_unknown"
        return ph, norm(name)
    return "other", norm(frames[0][0]) if frames else "(no callchain)"


def read_sites(paths):
    """call site -> type from the kprobe samples; conflicting sites map to
    None (not split)."""
    out = {}
    for path in paths:
        for head, frames in samples(path):
            if not head:
                continue
            m = re.search(r"\btype=(0x)?([0-9a-f]+)", head.group("rest"))
            if not m:
                continue
            t = int(m.group(2), 16 if m.group(1) else 10)
            s = site(frames, 0)
            if s is None:
                continue
            if s in out and out[s] != t:
                out[s] = None
            else:
                out.setdefault(s, t)
    return {k: v for k, v in out.items() if v is not None}


def kv(path):
    d = {}
    try:
        with open(path) as f:
            for w in f.read().split():
                if "=" in w:
                    k, v = w.split("=", 1)
                    d[k] = v
    except OSError:
        pass
    return d


def natural(n):
    return int(n) if n.isdigit() else n


class Cell:
    """One N and variant: its rounds added up."""

    def __init__(self):
        self.count = collections.Counter()   # phase -> samples
        self.period = collections.Counter()  # phase -> sum of periods (ns)
        self.why = collections.defaultdict(collections.Counter)
        self.files = 0
        self.packets = 0
        self.pps = []
        self.pps_noperf = []
        self.drops = 0
        self.unparsed = 0


def load(pdir):
    """{(n, variant): Cell}, {variant: sites or None}, notes."""
    notes = []
    cells = {}
    sites = {}
    pat = re.compile(r"^(?P<n>\d+)-(?P<v>[\w.-]+?)-(?P<r>\d+)\.txt(\.gz)?$")
    for path in sorted(glob.glob(os.path.join(pdir, "*.txt*"))):
        m = pat.match(os.path.basename(path))
        if not m:
            continue
        n, v, r = m.group("n"), m.group("v"), m.group("r")
        meta = kv(os.path.join(pdir, "%s-%s-%s.sample" % (n, v, r)))
        try:
            received = int(meta.get("received", "0"))
        except ValueError:
            received = 0
        if received <= 0:
            notes.append("%s: no packet count, left out" % os.path.basename(path))
            continue
        if v not in sites:
            sp = glob.glob(os.path.join(pdir, "*-%s.sites*" % v))
            sites[v] = read_sites(sp) if sp else None
            if sites[v] is not None and not sites[v]:
                sites[v] = None
        c = cells.setdefault((n, v), Cell())
        got = busy = 0
        period = 0
        for head, frames in samples(path):
            if not head or not head.group("period"):
                c.unparsed += 1
                continue
            if not head.group("event").endswith("cpu-clock"):
                continue
            ph, why = classify(frames, sites[v])
            period = int(head.group("period"))
            c.count[ph] += 1
            c.period[ph] += period
            c.why[ph][why] += 1
            got += 1
            busy += ph != "idle"
        # perf recorded a little longer than pktgen ran: fewer busy samples
        # than pktgen's run holds periods means records were lost
        us = int(meta.get("elapsed_us", "0") or 0)
        if period and us and busy < 0.97 * us * 1000 / period:
            notes.append("%s: %d samples while pktgen ran %d periods: records lost" % (
                os.path.basename(path), busy, us * 1000 // period))
        if int(meta.get("lost_chunks", "0") or 0):
            notes.append("%s: perf lost %s chunks of records" % (
                os.path.basename(path), meta["lost_chunks"]))
        if c.unparsed:
            notes.append("%s: %d samples this could not read, left out" % (
                os.path.basename(path), c.unparsed))
            c.unparsed = 0
        if not got:
            notes.append("%s: no cpu-clock sample, left out" % os.path.basename(path))
            continue
        c.files += 1
        c.packets += received
        c.drops += int(meta.get("backlog_drops", "0") or 0)
        for k, lst in (("pps", c.pps), ("pps_noperf", c.pps_noperf)):
            if meta.get(k, "").isdigit():
                lst.append(int(meta[k]))
    cells = {k: c for k, c in cells.items() if c.files}
    return cells, sites, notes


def fmt(x):
    return "{:,}".format(int(round(x)))


def sfmt(x):
    """signed, for differences"""
    return "{:+,}".format(int(round(x)))


class Model:
    """What the report shows: per (n, variant) and phase, samples and
    instructions per packet; read from the profile directory or from the
    TSV written from it."""

    def __init__(self):
        self.meta = {}      # period_ns, shift, kernel, perf, split
        self.notes = []
        self.keys = []      # (n, variant), in report order
        self.ph = {}        # (n, variant) -> {phase: (samples, instr_per_pkt)}
        self.cell = {}      # (n, variant) -> dict(files, packets, pps_perf, ...)

    def rows(self):
        """(phase id, label) of the report's rows"""
        split = self.meta.get("split") == "yes"
        out = []
        for ph, label in PHASES:
            if ph == "policy_sub" and not split:
                continue
            out.append((ph, label if split or ph != "policy" else POLICY_ALL))
        return out


def from_dir(pdir, shift):
    """The Model of a profile directory, or (None, why not)."""
    status = "ok"
    try:
        with open(os.path.join(pdir, "status")) as f:
            status = f.read().strip() or "ok"
    except OSError:
        status = "no profile in this run" if not os.path.isdir(pdir) \
            else "the guest left no status"
    if status != "ok":
        return None, status
    cells, sites, notes = load(pdir)
    if not cells:
        return None, "; ".join(notes) or "no profile data"
    keys = sorted(cells, key=lambda k: (natural(k[0]), k[1] != "stock", k[1]))
    m = Model()
    m.meta = kv(os.path.join(pdir, "info"))
    m.meta["shift"] = str(shift)
    m.notes = notes
    unknown = sum(cells[k].count["policy_unknown"] for k in keys)
    missing = sorted({v for _, v in keys if not sites.get(v)})
    if missing:
        m.meta["split"] = "no: no call-site calibration for %s" % ", ".join(missing)
    elif unknown:
        m.meta["split"] = "no: %d samples from call sites the calibration did not see" % unknown
    else:
        m.meta["split"] = "yes"
        m.meta["sites"] = ";".join(
            "%s:%s+0x%x=%s" % (v, s[0], s[1], "SUB" if t == TYPE_SUB else "MAIN")
            for v in sorted(sites) for s, t in sorted(sites[v].items()))
    m.keys = keys
    ns_per_insn = 2 ** shift
    for k in keys:
        c = cells[k]
        d = {}
        for ph, _ in PHASES:
            if ph == "policy" and m.meta["split"] != "yes":
                group = ("policy", "policy_sub", "policy_unknown")
            else:
                group = (ph,)
            n = sum(c.count[g] for g in group)
            per = sum(c.period[g] for g in group)
            # as the TSV keeps it: a report from the TSV is the same
            d[ph] = (n, round(per / ns_per_insn / c.packets, 1))
        d["idle"] = (c.count["idle"], 0.0)
        m.ph[k] = d
        m.cell[k] = {
            "files": c.files, "packets": c.packets, "drops": c.drops,
            "pps_perf": int(sum(c.pps) / len(c.pps)) if c.pps else None,
            "pps_noperf": int(sum(c.pps_noperf) / len(c.pps_noperf)) if c.pps_noperf else None,
        }
    m.why = {k: cells[k].why for k in keys}
    m.sites = sites
    return m, None


def write_tsv(m, path):
    rows = m.rows()
    with open(path, "w") as f:
        f.write("# xfrm_nocache benchmark profile (bench/profile.py)\n")
        for k in ("period_ns", "shift", "rounds", "cipher", "kernel", "perf", "split",
                  "sites"):
            if k in m.meta:
                f.write("# %s=%s\n" % (k, m.meta[k]))
        for n in m.notes:
            f.write("# note=%s\n" % n)
        f.write("# n\tvariant\tphase\tsamples\tinstr_per_pkt\tpm\tshare_pct\n")
        for key in m.keys:
            d = m.ph[key]
            tk = sum(d[ph][0] for ph, _ in rows)
            tins = sum(d[ph][1] for ph, _ in rows)
            for ph, _ in rows + [("idle", "")]:
                k, ins = d[ph]
                pm = ins / math.sqrt(k) if k else 0.0
                share = 100.0 * ins / tins if tins else 0.0
                f.write("%s\t%s\t%s\t%d\t%.1f\t%.1f\t%.2f\n" % (key + (ph, k, ins, pm, share)))
            f.write("%s\t%s\ttotal\t%d\t%.1f\t%.1f\t100\n" % (
                key + (tk, tins, tins / math.sqrt(tk) if tk else 0.0)))
        f.write("# cell\tn\tvariant\tfiles\tpackets\tpps_perf\tpps_noperf\tbacklog_drops\n")
        for key in m.keys:
            c = m.cell[key]
            f.write("cell\t%s\t%s\t%d\t%d\t%s\t%s\t%d\n" % (key + (
                c["files"], c["packets"],
                "-" if c["pps_perf"] is None else c["pps_perf"],
                "-" if c["pps_noperf"] is None else c["pps_noperf"], c["drops"])))


def from_tsv(path):
    m = Model()
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# ") and "=" in line and "\t" not in line:
                k, v = line[2:].split("=", 1)
                if k == "note":
                    m.notes.append(v)
                else:
                    m.meta[k] = v
                continue
            if not line or line.startswith("#"):
                continue
            w = line.split("\t")
            if w[0] == "cell":
                m.cell[(w[1], w[2])] = {
                    "files": int(w[3]), "packets": int(w[4]),
                    "pps_perf": None if w[5] == "-" else int(w[5]),
                    "pps_noperf": None if w[6] == "-" else int(w[6]),
                    "drops": int(w[7])}
                continue
            key = (w[0], w[1])
            if key not in m.ph:
                m.ph[key] = {}
                m.keys.append(key)
            if w[2] != "total":
                m.ph[key][w[2]] = (int(w[3]), float(w[4]))
    return m


def write_plot(m, path):
    rows = m.rows()
    with open(path, "w") as f:
        f.write("cell\t" + "\t".join('"%s"' % l for _, l in rows) + "\n")
        for key in m.keys:
            f.write('"%s %s"\t' % key + "\t".join(
                "%.1f" % m.ph[key].get(ph, (0, 0.0))[1] for ph, _ in rows) + "\n")


def cipher_label(meta):
    """The profiled cipher, as the report names it"""
    c = meta.get("cipher", "null")
    return CIPHERS.get(c, "ESP " + c)


def render(m):
    """The report's table and notes, markdown."""
    rows = m.rows()
    shift = int(m.meta.get("shift", "1"))
    keys = m.keys
    ns = sorted({k[0] for k in keys}, key=natural)
    variants = sorted({k[1] for k in keys}, key=lambda v: (v != "stock", v))

    def get(key, ph):
        k, ins = m.ph[key].get(ph, (0, 0.0))
        return ins, (ins / math.sqrt(k) if k else 0.0), k

    def total(key):
        return sum(get(key, ph)[2] for ph, _ in rows), \
            sum(get(key, ph)[0] for ph, _ in rows)

    cols = []  # (title, key, base key or None)
    for n in ns:
        for v in variants:
            if (n, v) in m.ph:
                cols.append(("N=%s %s" % (n, v), (n, v), None))
        if (n, "stock") in m.ph and (n, "module") in m.ph:
            cols.append(("N=%s module − stock" % n, (n, "module"), (n, "stock")))
    md = ["| phase | " + " | ".join(c[0] for c in cols) + " |",
          "|---|" + "|".join("---:" for _ in cols) + "|"]
    for ph, label in rows:
        out = []
        for _, key, base in cols:
            ins, pm, _ = get(key, ph)
            if base is None:
                out.append("%s ±%s" % (fmt(ins), fmt(pm)))
            else:
                ins0, pm0, _ = get(base, ph)
                out.append("%s ±%s" % (sfmt(ins - ins0), fmt(math.hypot(pm, pm0))))
        md.append("| %s | %s |" % (label, " | ".join(out)))
    out = []
    for _, key, base in cols:
        if base is None:
            out.append("**%s**" % fmt(total(key)[1]))
        else:
            out.append("**%s**" % sfmt(total(key)[1] - total(base)[1]))
    md.append("| **total** | %s |" % " | ".join(out))
    out = [fmt(total(key)[0]) if base is None else "" for _, key, base in cols]
    md.append("| samples | %s |" % " | ".join(out))

    period = m.meta.get("period_ns")
    files = sorted({c["files"] for c in m.cell.values()})
    md.append("")
    md.append(
        "Guest instructions per forwarded packet, by phase (%s). The "
        "module's own functions count as lookup glue; the kernel's that it "
        "calls (policy lookup, bundle build) count in their phases, as for "
        "stock. Each column adds up %s "
        "pktgen sample%s (one per round, the variants interleaved) profiled "
        "by `perf record -a -g -e cpu-clock -c %s`: a sample every %s ns of "
        "guest time, %s guest instructions under `-icount shift=%d`. A "
        "phase's figure is its samples x that / the packets the sink "
        "received; ± is the Poisson error of its sample count, "
        "sqrt(samples): the sampling noise alone, not the run-to-run "
        "variation. A difference well inside its ± is noise." % (
            cipher_label(m.meta),
            " or ".join(str(x) for x in files), "" if files == [1] else "s",
            period or "PERIOD", fmt(int(period)) if period else "PERIOD",
            fmt(int(period) / 2 ** shift) if period else "PERIOD / 2", shift))
    md.append("")
    split = m.meta.get("split", "no: unknown")
    if split == "yes":
        md.append("- The policy lookup is split by the type it searches: "
                  "`xfrm_policy_lookup_bytype` called for the SUB type, or for "
                  "MAIN (with the rest of the policy step), told by the call "
                  "site, which a kprobe on it matched to the type passed "
                  "(%s)." % m.meta.get("sites", "").replace(";", ", "))
    else:
        md.append("- The policy lookup is not split into its SUB- and "
                  "MAIN-type searches: %s." % split[4:])
    over = []
    for key in keys:
        c = m.cell.get(key, {})
        if c.get("pps_perf") and c.get("pps_noperf"):
            over.append("N=%s %s %.1f%%" % (key[0], key[1],
                                            100.0 * (1 - c["pps_perf"] / c["pps_noperf"])))
    if over:
        md.append("- What perf costs, as packets/s under perf against the same "
                  "sample just before without it: %s. The sampling interrupt "
                  "runs with interrupts off and is never sampled itself, so its "
                  "instructions are spread over the phases in proportion; "
                  "perf's user-space side counts as other." % ", ".join(over))
    idle = sum(m.ph[k].get("idle", (0, 0))[0] for k in keys)
    md.append("- Left out: %d idle samples in all (the pktgen control polls "
              "for the end of the run; a halted vCPU's guest time is not "
              "instructions)." % idle)
    drops = sum(c["drops"] for c in m.cell.values())
    if drops:
        md.append("- %d packets were dropped at a full backlog in the profiled "
                  "samples (softirqs then spill over to ksoftirqd)." % drops)
    for n in m.notes:
        md.append("- %s" % n)
    md.append("")
    md.append("Phases: the innermost phase-defining function on a sample's "
              "callchain decides (`bench/profile.py` lists them):")
    md.append("")
    for ph, label in rows:
        doc = PHASE_DOC[ph]
        if ph == "policy" and m.meta.get("split") != "yes":
            doc = "`xfrm_policy_lookup_bytype`, " + doc.split(", ", 1)[1]
        md.append("- *%s*: %s." % (label, doc))

    return "\n".join(md) + "\n"


def explain(m):
    for key in m.keys:
        why = m.why[key]
        print("== N=%s %s: %d packets" % (key[0], key[1], m.cell[key]["packets"]),
              file=sys.stderr)
        for ph in [p for p, _ in PHASES] + ["policy_unknown", "idle"]:
            if not why[ph]:
                continue
            top = ", ".join("%s %d" % w for w in why[ph].most_common(12))
            print("  %-14s %6d  %s" % (ph, sum(why[ph].values()), top), file=sys.stderr)
    for v in sorted(m.sites):
        print("== call sites of %s, %s: %s" % (BYTYPE, v, ", ".join(
            "%s+0x%x=%s" % (s[0], s[1], "SUB" if t == TYPE_SUB else "MAIN")
            for s, t in sorted((m.sites[v] or {}).items())) or "none"), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", help="the guest's profile directory")
    ap.add_argument("--from-tsv", metavar="TSV",
                    help="render from a TSV this script wrote, not a directory")
    ap.add_argument("--tsv")
    ap.add_argument("--md")
    ap.add_argument("--plot")
    ap.add_argument("--shift", type=int, default=1,
                    help="qemu -icount shift: 2**shift ns per instruction")
    ap.add_argument("--explain", action="store_true")
    ap.add_argument("--cipher-label", action="store_true",
                    help="print the profiled cipher as the report names it "
                         "(for the chart's title), nothing else")
    a = ap.parse_args()
    if bool(a.dir) == bool(a.from_tsv):
        ap.error("give a profile directory or --from-tsv, one of them")

    if a.from_tsv:
        m = from_tsv(a.from_tsv)
        why = None if m.keys else "no data in %s" % a.from_tsv
    else:
        m, why = from_dir(a.dir, a.shift)
    if a.cipher_label:
        print(cipher_label(m.meta))
        return 0
    if why:
        msg = "Profile: not measured (%s)." % why
        if a.md:
            with open(a.md, "w") as f:
                f.write(msg + "\n")
        else:
            print(msg)
        return 3
    if a.explain and not a.from_tsv:
        explain(m)
    if a.tsv:
        write_tsv(m, a.tsv)
    if a.plot:
        write_plot(m, a.plot)
    md = render(m)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    else:
        sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
