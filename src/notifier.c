// SPDX-License-Identifier: GPL-2.0
/*
 * A netdevice notifier: when a device goes down, delete every SA offloaded
 * to it (x->xso.dev == dev), whatever the device's features say now.
 *
 * The kernel's own notifier (net/xfrm/xfrm_device.c) flushes on
 * NETDEV_DOWN only while the device still advertises NETIF_F_HW_ESP, so an
 * SA whose device had "esp-hw-offload" switched off afterwards stays bound
 * to a downed device.  We key on what the SA is bound to instead.  Software
 * SAs, SAs offloaded to other devices and policies are never touched, and
 * NETDEV_UNREGISTER is left to the kernel's notifier (there is no cache of
 * ours to flush).
 *
 * The deletion itself is the kernel's xfrm_dev_state_flush(): under
 * xfrm_state_lock it walks the namespace's states and deletes each one
 * bound to @dev that is not held by the kernel (xfrm_state_kern(): IPcomp
 * tunnel states), dropping the lock around each xfrm_state_delete(), which
 * also tells the driver (xdo_dev_state_delete).  It does not look at the
 * device's features.  task_valid only says whether the audit record may
 * name the current task: we run in the process that downed the device,
 * with RTNL held, exactly like the kernel's notifier, which passes true.
 * The flush and xfrm_state_walk() take the state lock with BHs off
 * themselves; nothing here toggles bottom halves.
 *
 * Counting (SAsFlushed): xfrm_dev_state_flush() returns 0 or -ESRCH, not a
 * count.  So we count, with xfrm_state_walk() (under the state lock), the
 * live SAs the flush would delete, once before and once after it; the
 * difference is what the flush removed.  That is exact unless another
 * agent adds or deletes an SA bound to this very device in the few
 * microseconds of the flush (a hard lifetime expiring in that window would
 * be counted as flushed: it is gone either way).
 *
 * Our notifier runs before the kernel's (higher priority), so it removes
 * every offloaded SA of a downed device and SAsFlushed counts them all; the
 * kernel's flush that follows finds nothing.
 *
 * Careful with unregister_netdevice_notifier(): it replays NETDEV_DOWN for
 * every device that is up, in every namespace, to the notifier being
 * removed.  Acting on that would delete the offloaded SAs of every running
 * device at rmmod, so @xnc_notifier_live is cleared first and the callback
 * ignores everything while it is clear.
 */

#include <linux/netdevice.h>
#include <linux/notifier.h>
#include <net/xfrm.h>

#include "xfrm_nocache.h"
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
static int xnc_bound_one(struct xfrm_state *x, int count, void *ptr)
{
	struct xnc_bound *b = ptr;

	/* the same test as xfrm_dev_state_flush() */
	if (x->xso.dev == b->dev && !xfrm_state_kern(x))
		b->n++;
	return 0;
}

/* Live SAs of @net that xfrm_dev_state_flush(@net, @dev) would delete. */
static u64 xnc_bound_count(struct net *net, const struct net_device *dev)
{
	struct xnc_bound b = { .dev = dev };
	struct xfrm_state_walk walk;

	/* proto 0: every protocol, as the flush does; no address filter */
	xfrm_state_walk_init(&walk, 0, NULL);
	/* the callback never fails, so one call walks everything */
	xfrm_state_walk(net, &walk, xnc_bound_one, &b);
	xfrm_state_walk_done(&walk, net);
	return b.n;
}

static void xnc_dev_down(struct net_device *dev)
{
	struct net *net = dev_net(dev);
	u64 before, after;

	xnc_count(net, XNC_NOTIFIER_EVENTS, 1);
	before = xnc_bound_count(net, dev);
	if (!before)
		return;
	xfrm_dev_state_flush(net, dev, true);
	after = xnc_bound_count(net, dev);
	if (before > after)
		xnc_count(net, XNC_SAS_FLUSHED, before - after);
	trace_xnc_flush(dev, before > after ? before - after : 0);
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
