// SPDX-License-Identifier: GPL-2.0
/*
 * REFERENCE ONLY, for the benchmark (make bench): a per-CPU "last bundle"
 * cache in the manner of Linux 4.14 (xfrm_last_dst, removed upstream by
 * e4db5b61c572), built into a separate module, xnc_pcpu_ref.ko, so the
 * benchmark can measure what such a cache costs or saves against uncached
 * resolution.  Never part of xfrm_nocache.ko: the Kbuild of the shipped
 * module does not know this file.
 *
 * Every CPU keeps the bundle it built last.  The next resolution whose
 * policies and output device are the same reuses it, if it still validates
 * (dst_check(): every state valid, every route and genid current);
 * otherwise the slot is dropped and the bundle is built afresh and kept.
 *
 * Where it differs from 4.14, it differs in the cache's favour: 4.14
 * resolved the templates to states before comparing (so a hit still paid a
 * state hash lookup per transform); here a hit skips that too and trusts
 * that the same policies on a validating bundle mean the same states.  That
 * holds for the benchmark (one SA per policy) but not in general, which is
 * one more reason this is not shipped.
 *
 * Slots are emptied on NETDEV_DOWN and NETDEV_UNREGISTER (a cached bundle
 * holds its devices) and at module exit.
 *
 * bench/pcpu-ref-tree.sh builds it with the shipped sources, their
 * bundle creations sent to xnc_ref_bundle() and their init and exit
 * called from ours.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <net/dst.h>
#include <net/xfrm.h>

#include "xfrm_nocache.h"

static DEFINE_PER_CPU(struct xfrm_dst *, xnc_ref_last);

struct xnc_ref_stats {
	u64 hits;
	u64 misses;
};

static DEFINE_PER_CPU(struct xnc_ref_stats, xnc_ref_stats);

/* Put @xdst (with a reference for the slot) in this CPU's slot. */
static void xnc_ref_keep(struct xfrm_dst *xdst)
{
	struct xfrm_dst *prev = this_cpu_xchg(xnc_ref_last, xdst);

	if (prev)
		dst_release(&prev->u.dst);
}

static bool xnc_ref_usable(struct xfrm_dst *xdst, struct xfrm_policy **pols,
			   int num_pols, const struct dst_entry *dst_orig)
{
	return xdst->u.dst.dev == dst_orig->dev &&
	       xdst->num_pols == num_pols &&
	       !memcmp(xdst->pols, pols, sizeof(pols[0]) * num_pols) &&
	       dst_check(&xdst->u.dst, 0);
}

/* Stands in for xfrm_resolve_and_create_bundle(); same contract. */
struct xfrm_dst *xnc_ref_bundle(struct xfrm_policy **pols, int num_pols,
				const struct flowi *fl, u16 family,
				struct dst_entry *dst_orig)
{
	struct xfrm_dst *xdst = this_cpu_xchg(xnc_ref_last, NULL);

	if (xdst && xnc_ref_usable(xdst, pols, num_pols, dst_orig)) {
		/* the bundle holds its own policy references */
		xfrm_pols_put(pols, num_pols);
		dst_hold(&xdst->u.dst);
		xnc_ref_keep(xdst);
		this_cpu_inc(xnc_ref_stats.hits);
		return xdst;
	}
	if (xdst)
		dst_release(&xdst->u.dst);
	this_cpu_inc(xnc_ref_stats.misses);

	xdst = xnc_xfrm_resolve_and_create_bundle(pols, num_pols, fl, family,
						  dst_orig);
	if (!IS_ERR_OR_NULL(xdst)) {
		dst_hold(&xdst->u.dst);
		xnc_ref_keep(xdst);
	}
	return xdst;
}

static void xnc_ref_flush_cpu(void *unused)
{
	xnc_ref_keep(NULL);
}

static void xnc_ref_flush(void)
{
	on_each_cpu(xnc_ref_flush_cpu, NULL, 1);
}

static int xnc_ref_netdev_event(struct notifier_block *nb,
				unsigned long event, void *ptr)
{
	if (event == NETDEV_DOWN || event == NETDEV_UNREGISTER)
		xnc_ref_flush();
	return NOTIFY_DONE;
}

static struct notifier_block xnc_ref_nb = {
	.notifier_call = xnc_ref_netdev_event,
};

static u64 xnc_ref_sum(size_t off)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *(u64 *)((char *)per_cpu_ptr(&xnc_ref_stats, cpu) + off);
	return sum;
}

static int xnc_ref_get_hits(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%llu\n",
			  xnc_ref_sum(offsetof(struct xnc_ref_stats, hits)));
}

static int xnc_ref_get_misses(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%llu\n",
			  xnc_ref_sum(offsetof(struct xnc_ref_stats, misses)));
}

static const struct kernel_param_ops xnc_ref_hits_ops = {
	.get = xnc_ref_get_hits,
};

static const struct kernel_param_ops xnc_ref_misses_ops = {
	.get = xnc_ref_get_misses,
};

module_param_cb(ref_hits, &xnc_ref_hits_ops, NULL, 0444);
MODULE_PARM_DESC(ref_hits, "bundles reused from the per-CPU slot");
module_param_cb(ref_misses, &xnc_ref_misses_ops, NULL, 0444);
MODULE_PARM_DESC(ref_misses, "bundles built because the slot did not fit");

static int __init xnc_ref_init(void)
{
	int err = register_netdevice_notifier(&xnc_ref_nb);

	if (err)
		return err;
	err = xnc_init();
	if (err) {
		unregister_netdevice_notifier(&xnc_ref_nb);
		return err;
	}
	pr_info("REFERENCE build: per-CPU last-bundle cache, benchmark only\n");
	return 0;
}

/* The patch is gone (xnc_exit()): nothing resolves through us any more. */
static void __exit xnc_ref_exit(void)
{
	xnc_exit();
	unregister_netdevice_notifier(&xnc_ref_nb);
	xnc_ref_flush();
}

module_init(xnc_ref_init);
module_exit(xnc_ref_exit);
