/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xfrm_nocache: uncached xfrm policy->bundle resolution as a livepatch.
 */
#ifndef _XFRM_NOCACHE_H
#define _XFRM_NOCACHE_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/jump_label.h>
#include <linux/kprobes.h>
#include <linux/types.h>
#include <linux/percpu.h>
#include <linux/socket.h>
#include <linux/workqueue.h>
#include <net/flow.h>
#include <net/netns/generic.h>

#include "xnc_compat.h"

struct net;
struct sock;
struct dst_entry;
struct sk_buff;
struct xfrm_policy;
struct xfrm_dst;
struct xfrm_policy_afinfo;
struct klp_patch;
struct list_head;
struct mutex;
struct module;
struct btf;

/*
 * Kernel functions and data we need but that are not exported: bound by
 * the livepatch core when the module loads, through the livepatch
 * relocations scripts/klp-relocs.py makes of these weak undefined symbols
 * (the assembler name "xnc_klp.NAME" becomes vmlinux's NAME; weak keeps
 * modpost quiet).  The calls are direct calls: nothing here is ever called
 * through a pointer.  Until the module's init has run xnc_klp_check()
 * successfully, none of them may be used.  Every one is listed in klp.c.
 */

/*
 * Prototypes as this kernel line's source declares them, under our names:
 * scripts/kernel.record holds the source's, make drift compares them with
 * these and with verify.c's, and the load with the running kernel's BTF.
 */
struct xfrm_policy *xnc_xfrm_sk_policy_lookup(const struct sock *sk, int dir,
					      const struct flowi *fl,
					      u16 family, u32 if_id)
	__asm__("xnc_klp.xfrm_sk_policy_lookup") __weak;
struct xfrm_policy *xnc_xfrm_policy_lookup_bytype(struct net *net, u8 type,
						  const struct flowi *fl,
						  u16 family, u8 dir,
						  u32 if_id)
	__asm__("xnc_klp.xfrm_policy_lookup_bytype") __weak;
struct xfrm_dst *
xnc_xfrm_resolve_and_create_bundle(struct xfrm_policy **pols, int num_pols,
				   const struct flowi *fl, u16 family,
				   struct dst_entry *dst_orig)
	__asm__("xnc_klp.xfrm_resolve_and_create_bundle") __weak;
/* never called by us: stored in a queue bundle's dst->output */
int xnc_xdst_queue_output(struct net *net, struct sock *sk,
			  struct sk_buff *skb)
	__asm__("xnc_klp.xdst_queue_output") __weak;
/* what reads the kernel's BTF; verify.c checks these against its headers */
struct btf *xnc_bpf_get_btf_vmlinux(void)
	__asm__("xnc_klp.bpf_get_btf_vmlinux") __weak;
s32 xnc_btf_find_by_name_kind(const struct btf *btf, const char *name,
			      u8 kind)
	__asm__("xnc_klp.btf_find_by_name_kind") __weak;
const char *xnc_btf_name_by_offset(const struct btf *btf, u32 offset)
	__asm__("xnc_klp.btf_name_by_offset") __weak;
extern const struct xfrm_policy_afinfo __rcu *
	xnc_policy_afinfo[AF_INET6 + 1]
	__asm__("xnc_klp.xfrm_policy_afinfo") __weak;
/* kernel/livepatch/core.c: every registered livepatch ... */
extern struct list_head xnc_klp_patches
	__asm__("xnc_klp.klp_patches") __weak;
/* ... and the lock that serializes every change to that list */
extern struct mutex xnc_klp_mutex
	__asm__("xnc_klp.klp_mutex") __weak;

/* 0 when every symbol above is bound and the kernel is one we can patch */
int xnc_klp_check(void);

/* the one function we replace */
#define XNC_PATCHED_FUNC "xfrm_lookup_with_ifid"

/* -EBUSY if another enabled livepatch replaces @name (stacking.c) */
int xnc_refuse_stacking(struct klp_patch *ours, const char *name);

/*
 * Counters, one set per network namespace, per CPU.  The order here is the
 * order of the lines in /proc/net/xfrm_nocache (see xnc_stat_names).
 */
enum xnc_stat {
	XNC_LOOKUPS,		/* every call of the resolution path */
	XNC_LOOKUPS_V4,
	XNC_LOOKUPS_V6,
	XNC_SOCKET_POLICY,	/* resolved by a per-socket policy */
	XNC_NO_POLICY,		/* no policy matched: route returned as is */
	XNC_PASS,		/* policy allows, no transforms: passed */
	XNC_TRANSFORMED,	/* returned a transforming bundle */
	XNC_BUNDLES,		/* bundles freshly built (never reused) */
	XNC_QUEUED,		/* no SA yet: queueing bundle returned */
	XNC_BLOCKED,		/* policy action block (-EPERM) */
	XNC_DEFAULT_BLOCK,	/* default policy block (-EPERM) */
	XNC_NO_STATES,		/* no SA yet and not queued (-EREMOTE/-EAGAIN) */
	XNC_ICMP_REFUSED,	/* ICMP lookup, policy without the icmp flag */
	XNC_POLICY_ERROR,	/* policy lookup or expansion failed */
	XNC_BUNDLE_ERROR,	/* bundle creation failed */
	XNC_ICMP_NO_POLICY,	/* ICMP lookup, no policy (-ENOENT) */
	XNC_ERRORS,		/* every error return, all causes */
	XNC_NOTIFIER_EVENTS,	/* NETDEV_DOWN events seen (notifier.c) */
	XNC_SAS_FLUSHED,	/* offloaded SAs we deleted on NETDEV_DOWN */
	XNC_POLICIES_FLUSHED,	/* offloaded policies we deleted on NETDEV_DOWN */
	XNC_SUB_SEARCHES,	/* lookups that searched the sub policies */
	XNC_STAT_MAX
};

/*
 * A lookup ends in exactly one outcome, counted in its address family's
 * row: one increment.  Lookups, LookupsIPv4, LookupsIPv6 and Errors are
 * sums of outcomes, made by the reader (stats.c).
 */
#define XNC_ERROR_OUTCOMES						\
	(BIT(XNC_BLOCKED) | BIT(XNC_DEFAULT_BLOCK) | BIT(XNC_NO_STATES) |	\
	 BIT(XNC_ICMP_REFUSED) | BIT(XNC_POLICY_ERROR) |		\
	 BIT(XNC_BUNDLE_ERROR) | BIT(XNC_ICMP_NO_POLICY))
#define XNC_OUTCOMES							\
	(BIT(XNC_NO_POLICY) | BIT(XNC_PASS) | BIT(XNC_TRANSFORMED) |	\
	 BIT(XNC_QUEUED) | XNC_ERROR_OUTCOMES)

/* resolution latency: bucket i counts lookups of [2^i, 2^(i+1)) ns */
#define XNC_LAT_BUCKETS	32

/* row 0: IPv4, and every count that is not an outcome; row 1: IPv6 */
struct xnc_pcpu_stats {
	u64 v[2][XNC_STAT_MAX];
};

/* allocated only while latency=1 (stats.c) */
struct xnc_pcpu_hist {
	u64 b[XNC_LAT_BUCKETS];
};

/* latency=1: time every resolution into the histogram (stats.c) */
extern bool xnc_latency;
DECLARE_STATIC_KEY_FALSE(xnc_latency_key);

struct xnc_net {
	/* what the hot path reads, under RCU; NULL once the netns is dying */
	struct xnc_pcpu_stats __percpu *stats_live;
	struct xnc_pcpu_stats __percpu *stats;
	/* the latency histogram, under RCU too; NULL while latency=0 */
	struct xnc_pcpu_hist __percpu *hist;
	struct xnc_pcpu_hist __percpu *hist_old;	/* being freed */
	struct list_head node;	/* in stats.c's list of namespaces */
	/*
	 * Whether the namespace may have an outbound sub policy (bit 0,
	 * XNC_SUB_MAYBE) and how many times one was added (the rest):
	 * subpol.c.  The hot path reads bit 0 only.
	 */
	atomic_t sub_state;
	atomic_t sub_inserting;	/* outbound sub policies being inserted */
	bool sub_dead;		/* past our pernet exit: no more recounts */
	struct work_struct sub_recount;
	struct net *net;
};

#define XNC_SUB_MAYBE	1

extern unsigned int xnc_net_id;

static inline struct xnc_net *xnc_net(const struct net *net)
{
	return net_generic(net, xnc_net_id);
}

/*
 * xnc_net() for the hot path, with preemption disabled: synchronize_rcu()
 * waits for that as for rcu_read_lock(), which net_generic() takes and
 * which on PREEMPT_RCU kernels is two calls.
 */
static __always_inline struct xnc_net *xnc_net_sched(const struct net *net)
{
	return rcu_dereference_sched(net->gen)->ptr[xnc_net_id];
}

int xnc_stats_init(void);
void xnc_stats_exit(void);
void xnc_count(struct net *net, enum xnc_stat stat, u64 n);

/*
 * Whether a lookup in @net has to search the namespace's sub policies: no
 * when it has no outbound one (subpol.c keeps that exact), so that the one
 * policy table search stock makes in vain on nearly every system is not
 * made.  Always, once the probe that sees insertions has missed one.
 * Without CONFIG_XFRM_SUB_POLICY there are none.
 */
extern struct kretprobe xnc_sub_probe;

static inline bool xnc_sub_search(const struct net *net)
{
	const struct xnc_net *xn;

	if (!IS_ENABLED(CONFIG_XFRM_SUB_POLICY))
		return false;
	/* xn itself lives as long as the namespace */
	preempt_disable_notrace();
	xn = xnc_net_sched(net);
	preempt_enable_notrace();
	return (atomic_read(&xn->sub_state) & XNC_SUB_MAYBE) ||
	       unlikely(READ_ONCE(xnc_sub_probe.nmissed) ||
			READ_ONCE(xnc_sub_probe.kp.nmissed));
}

void xnc_sub_net_init(struct net *net);
void xnc_sub_net_exit(struct net *net);
void xnc_sub_net_release(struct net *net);
int xnc_sub_init(void);
void xnc_sub_exit(void);

int xnc_trace_init(void);
void xnc_trace_exit(void);

/*
 * References a queue bundle holds on its route: what destroying one drops
 * on this kernel, found at load by xnc_queue_probe() (queue.c).
 */
extern int xnc_queue_route_refs;
int xnc_queue_probe(void);

int xnc_notifier_init(void);
void xnc_notifier_exit(void);

/* the function we replace */
struct dst_entry *xnc_xfrm_lookup_with_ifid(struct net *net,
					    struct dst_entry *dst_orig,
					    const struct flowi *fl,
					    const struct sock *sk,
					    int flags, u32 if_id);

/*
 * Load-time checks that this kernel is one the module was checked against
 * (verify.c): 0, or a negative errno after one log line naming the cause.
 */
extern bool xnc_unchecked;
int xnc_verify_release(void);
int xnc_verify_btf(void);

#endif /* _XFRM_NOCACHE_H */
