// SPDX-License-Identifier: GPL-2.0
/*
 * On NETDEV_DOWN, delete the SAs (and, 6.12, policies) offloaded to the
 * device, keyed on what is bound to it rather than on NETIF_F_HW_ESP: the
 * kernel's own notifier flushes only while that feature is on, and then we
 * leave it to stock.  Only a device with xfrmdev_ops can hold any; others
 * cost one counter.  Flushing is the kernel's xfrm_dev_state_flush() and
 * xfrm_dev_policy_flush(); they return no count, so a walk before counts
 * what they will remove.  unregister_netdevice_notifier() replays
 * NETDEV_DOWN for every device that is up: ignored (docs/testing.md).
 */

#include <linux/netdevice.h>
#include <linux/notifier.h>
#include <net/xfrm.h>

#include "xfrm_nocache.h"
#include "xnc_compat.h"
#include "xnc_trace.h"

/*
 * Cleared before unregistering, by the task that then replays the events;
 * read in the callback, under RTNL.
 */
static bool xnc_notifier_live;

struct xnc_bound {
	const struct net_device *dev;
	u64 n;
};

/* xfrm_state_walk() callback, under xfrm_state_lock; dead SAs are skipped */
static int xnc_bound_state(struct xfrm_state *x, int count, void *ptr)
{
	struct xnc_bound *b = ptr;

	/* the flush's test; 6.12 clears xso.dev outside the state lock */
	if (READ_ONCE(x->xso.dev) == b->dev && !xfrm_state_kern(x))
		b->n++;
	return 0;
}

/* Live SAs of @net that xfrm_dev_state_flush(@net, @dev) would delete. */
static u64 xnc_bound_states(struct net *net, const struct net_device *dev)
{
	struct xnc_bound b = { .dev = dev };
	struct xfrm_state_walk walk;

	/* proto 0: every protocol, as the flush does; no address filter */
	xfrm_state_walk_init(&walk, 0, NULL);
	/* the callback never fails, so one call walks everything */
	xfrm_state_walk(net, &walk, xnc_bound_state, &b);
	xfrm_state_walk_done(&walk, net);
	return b.n;
}

#ifdef XNC_POLICY_OFFLOAD
/* xfrm_policy_walk() callback, under xfrm_policy_lock; dead ones skipped */
static int xnc_bound_policy(struct xfrm_policy *pol, int dir, int count,
			    void *ptr)
{
	struct xnc_bound *b = ptr;

	/* the flush's test: socket policies are never offloaded */
	if (dir < XFRM_POLICY_MAX && pol->xdo.dev == b->dev)
		b->n++;
	return 0;
}

/* Live policies of @net that xfrm_dev_policy_flush() would delete. */
static u64 xnc_bound_policies(struct net *net, const struct net_device *dev)
{
	struct xnc_bound b = { .dev = dev };
	struct xfrm_policy_walk walk;

	xfrm_policy_walk_init(&walk, XFRM_POLICY_TYPE_ANY);
	/* -ENOENT for an empty table; the callback never fails */
	xfrm_policy_walk(net, &walk, xnc_bound_policy, &b);
	xfrm_policy_walk_done(&walk, net);
	return b.n;
}
#else
/* 6.1: policies cannot be offloaded (packet offload came with 6.2) */
static u64 xnc_bound_policies(struct net *net, const struct net_device *dev)
{
	return 0;
}
#endif

static void xnc_dev_down(struct net_device *dev)
{
	struct net *net = dev_net(dev);
	u64 sas, pols;

	xnc_count(net, XNC_NOTIFIER_EVENTS, 1);
	/* nothing can be bound to a device without offload ops */
	if (!dev->xfrmdev_ops)
		return;
	/*
	 * With the offload feature on, the kernel's notifier, right after
	 * us in this chain and under the same RTNL, flushes what is bound to
	 * the device, keyed on xso.dev/xdo.dev as we would: leave it to stock.
	 */
	if (dev->features & NETIF_F_HW_ESP)
		return;

	sas = xnc_bound_states(net, dev);
	if (sas && xfrm_dev_state_flush(net, dev, true))
		sas = 0;
	pols = xnc_bound_policies(net, dev);
	if (pols && xnc_dev_policy_flush(net, dev, true))
		pols = 0;
	if (sas)
		xnc_count(net, XNC_SAS_FLUSHED, sas);
	if (pols)
		xnc_count(net, XNC_POLICIES_FLUSHED, pols);
	if (sas || pols)
		trace_xnc_flush(dev, sas, pols);
}

static int xnc_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	if (!READ_ONCE(xnc_notifier_live))
		return NOTIFY_DONE;
	if (event == NETDEV_DOWN)
		xnc_dev_down(netdev_notifier_info_to_dev(ptr));
	return NOTIFY_DONE;
}

static struct notifier_block xnc_netdev_nb = {
	.notifier_call = xnc_netdev_event,
	/* ahead of the kernel's xfrm_dev_notifier (priority 0) */
	.priority = 1,
};

int xnc_notifier_init(void)
{
	int err;

	/*
	 * Registration replays NETDEV_REGISTER and NETDEV_UP for existing
	 * devices (ignored); no NETDEV_DOWN, since we never fail a call.
	 */
	WRITE_ONCE(xnc_notifier_live, true);
	err = register_netdevice_notifier(&xnc_netdev_nb);
	if (err)
		WRITE_ONCE(xnc_notifier_live, false);
	return err;
}

void xnc_notifier_exit(void)
{
	/* before the replayed NETDEV_DOWNs, see the top of the file */
	WRITE_ONCE(xnc_notifier_live, false);
	unregister_netdevice_notifier(&xnc_netdev_nb);
}
