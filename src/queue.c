// SPDX-License-Identifier: GPL-2.0
/*
 * How many references a queue bundle must hold on its route, found out
 * once at load from the running kernel itself.
 *
 * A queue bundle (lookup.c, xfrm_larval_drop=0) points at the flow's route
 * twice: as xdst->route and as its child.  When the bundle is destroyed,
 * the kernel drops the route's reference (xfrm_dst_destroy()), and drops
 * the child's only for a bundle with a state (dst_destroy() looks at
 * dst->xfrm), which a queue bundle never has.  Stock takes a reference for
 * each anyway, so every queued lookup leaks a route; we take one.  That is
 * right for 6.1 and 6.12 as they are, but it rests on a rule inside the
 * kernel: if a later stable release fixed the leak the other way, by
 * making dst_destroy() release a queue bundle's child, one reference would
 * be dropped twice for every queued lookup, and DKMS would rebuild the
 * unchanged module for it without a word.
 *
 * So we do not assume the rule, we observe it: build a bundle shaped like
 * a queue bundle (no state, DST_XFRM_QUEUE, route and child the same dst)
 * over a private dst of ours, with two references on that dst for the
 * bundle, release the bundle, wait for its RCU-deferred destruction, and
 * count what the kernel dropped.  Queue bundles then take that many.  Only
 * one or two make sense; anything else refuses the load.
 *
 * Both dsts come from init_net's IPv4 xfrm dst_ops, built the way the
 * kernel builds a bundle that never got a route (xfrm_alloc_dst()), so
 * the kernel destroys them with its own code and nothing points at ours.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/rcupdate.h>
#include <net/dst.h>
#include <net/net_namespace.h>
#include <net/xfrm.h>

#include "xfrm_nocache.h"
#include "xnc_compat.h"

int xnc_queue_route_refs __read_mostly = 1;

static struct xfrm_dst *xnc_probe_dst(void)
{
	struct xfrm_dst *xdst;

	xdst = xnc_dst_alloc(&init_net.xfrm.xfrm4_dst_ops, DST_OBSOLETE_NONE, 0);
	if (xdst)
		memset_after(xdst, 0, u.dst);
	return xdst;
}

int xnc_queue_probe(void)
{
	struct xfrm_dst *route, *bundle;
	struct dst_entry *dst;
	int before, after, dropped;

	route = xnc_probe_dst();
	if (!route)
		return -ENOMEM;
	bundle = xnc_probe_dst();
	if (!bundle) {
		dst_release(&route->u.dst);
		return -ENOMEM;
	}

	/* ours, plus the two the bundle may own */
	dst = &route->u.dst;
	dst_hold(dst);
	dst_hold(dst);
	bundle->route = dst;
	xfrm_dst_set_child(bundle, dst);
	bundle->path = dst;
	bundle->u.dst.flags |= DST_XFRM_QUEUE;

	before = xnc_dst_refcnt(dst);
	dst_release(&bundle->u.dst);
	/* dst_release() left the destruction to an RCU callback */
	rcu_barrier();
	after = xnc_dst_refcnt(dst);
	dropped = before - after;

	while (after-- > 0)
		dst_release(dst);

	if (dropped < 1 || dropped > 2) {
		pr_err("destroying a queue bundle dropped %d references on its route, not 1 or 2: refusing to load\n",
		       dropped);
		return -ENOEXEC;
	}
	xnc_queue_route_refs = dropped;
	if (dropped != 1)
		pr_info("this kernel releases a queue bundle's child: queue bundles hold their route %d times\n",
			dropped);
	return 0;
}
