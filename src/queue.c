// SPDX-License-Identifier: GPL-2.0
/*
 * How many references a queue bundle must hold on its route, observed at
 * load: destroying one drops xdst->route's, and the child's only for a
 * bundle with a state, which a queue bundle never has (stock takes both and
 * leaks a route per queued lookup).  A stable fix either way changes the
 * count, so build a bundle shaped like one over a private dst, release it
 * and count; only 1 or 2 make sense (docs/testing.md, "How it works").
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
