// SPDX-License-Identifier: GPL-2.0
/*
 * Whether a namespace has an outbound sub policy, kept exact, so that the
 * lookup searches the sub policy tables only when one may match.
 *
 * With CONFIG_XFRM_SUB_POLICY (Debian's kernels have it) every output
 * lookup searches the policies twice, sub then main, although almost no
 * system has a sub policy: IKE daemons never install one.  Skipping the
 * first search is exact only if "none" is never stale: a sub policy that
 * blocks is a security boundary, and the packet sent after the command
 * that added it returned must meet it.
 *
 * Policies enter a namespace's tables only through xfrm_policy_insert(),
 * from netlink (xfrm_user) and PF_KEY (af_key), and both report every
 * insertion to the key managers before the request returns.  We register
 * as one (xfrm_register_km(), exported) that only listens:
 *
 *  - an outbound sub policy added or updated sets the namespace's state
 *    to "maybe" (XNC_SUB_MAYBE), then makes the routes of the policy's
 *    family stale, as xfrm_policy_insert() did just before: a socket that
 *    looked its route up again between the insertion and our report (and
 *    so skipped the sub policies) keeps that route, or bundle, only until
 *    its next packet;
 *  - anything that may have removed one (delete, hard expiry, flush of sub
 *    policies) queues a recount, which walks the namespace's policies
 *    (xfrm_policy_walk(), exported, under the kernel's policy lock) and
 *    clears "maybe" only if it found none and nothing was added since it
 *    began: the state also counts additions, and the recount clears it
 *    with a compare-and-exchange against the value it read before the
 *    walk.  An insertion the walk did not see comes after it, and so does
 *    its report: either that report has already changed the state (the
 *    exchange fails) or it sets "maybe" again.
 *
 * Removal that does not report (device-bound policies flushed with their
 * device, a namespace's teardown) at worst leaves "maybe" set: a search
 * that finds nothing, as stock's.  "maybe" is the state from a namespace's
 * creation (stats.c) until its first recount, which is queued only once we
 * are registered, by pernet operations registered after that: for the
 * namespaces that exist when the module loads and for every new one.
 *
 * The key manager hooks the kernel calls unconditionally (acquire,
 * compile_policy) answer as "not mine", leaving the result to the others
 * exactly as if we were not registered.  Every hook may run in atomic
 * context: a report only changes the state, bumps the route generation or
 * queues the work.
 */

#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <net/xfrm.h>

#include "xfrm_nocache.h"

#ifdef CONFIG_XFRM_SUB_POLICY

static bool xnc_sub_out(const struct xfrm_policy *xp, int dir)
{
	return xp->type == XFRM_POLICY_TYPE_SUB &&
	       (dir == XFRM_POLICY_OUT ||
		xfrm_policy_id2dir(xp->index) == XFRM_POLICY_OUT);
}

static void xnc_sub_add(const struct xfrm_policy *xp)
{
	struct net *net = xp_net(xp);
	atomic_t *state = &xnc_net(net)->sub_state;
	int old = atomic_read(state), new;

	/* one more addition, and "maybe", in one step (fully ordered) */
	do {
		new = (int)(((unsigned int)old + 2) | XNC_SUB_MAYBE);
	} while (!atomic_try_cmpxchg(state, &old, new));

	/*
	 * Then stale routes, as the insertion did (see the top): IPv6's is
	 * the kernel's own hook, called as xfrm_policy_insert() calls it
	 * (its target's address is taken, so it keeps its ENDBR).
	 */
	if (xp->family == AF_INET)
		rt_genid_bump_ipv4(net);
	else
		rt_genid_bump_ipv6(net);
}

/*
 * Under RCU (km_policy_notify()'s): a namespace past our exit may still
 * report an expiry, but gets no work queued; see xnc_sub_net_release().
 */
static void xnc_sub_queue_recount(struct net *net)
{
	struct xnc_net *xn = xnc_net(net);

	if (!READ_ONCE(xn->sub_dead))
		queue_work(system_wq, &xn->sub_recount);
}

/* a walk step: nonzero (stop) at the first outbound one */
static int xnc_sub_found(struct xfrm_policy *pol, int dir, int count,
			 void *data)
{
	return dir == XFRM_POLICY_OUT;
}

static void xnc_sub_recount(struct work_struct *work)
{
	struct xnc_net *xn = container_of(work, struct xnc_net, sub_recount);
	struct xfrm_policy_walk walk;
	int old, err;

	/* the state before the walk: acquire, the walk reads after it */
	old = atomic_read_acquire(&xn->sub_state);
	if (!(old & XNC_SUB_MAYBE))
		return;
	xfrm_policy_walk_init(&walk, XFRM_POLICY_TYPE_SUB);
	err = xfrm_policy_walk(xn->net, &walk, xnc_sub_found, NULL);
	xfrm_policy_walk_done(&walk, xn->net);
	/* 1: found one; -ENOENT: no sub policy; 0: none outbound */
	if (err && err != -ENOENT)
		return;
	atomic_cmpxchg(&xn->sub_state, old, old & ~XNC_SUB_MAYBE);
}

static int xnc_sub_notify_policy(struct xfrm_policy *xp, int dir,
				 const struct km_event *c)
{
	switch (c->event) {
	case XFRM_MSG_NEWPOLICY:
	case XFRM_MSG_UPDPOLICY:
		if (xnc_sub_out(xp, dir))
			xnc_sub_add(xp);
		break;
	case XFRM_MSG_FLUSHPOLICY:
		/* no policy; c->net is set for a flush only */
		if (c->data.type != XFRM_POLICY_TYPE_MAIN)
			xnc_sub_queue_recount(c->net);
		break;
	case XFRM_MSG_POLEXPIRE:
		/* a soft expiry only warns: the policy stays */
		if (c->data.hard && xp && xnc_sub_out(xp, dir))
			xnc_sub_queue_recount(xp_net(xp));
		break;
	default:
		/* deleted: one fewer, perhaps */
		if (xp && xnc_sub_out(xp, dir))
			xnc_sub_queue_recount(xp_net(xp));
		break;
	}
	return 0;
}

/* never ours: the result of km_query() stays the other managers' */
static int xnc_sub_acquire(struct xfrm_state *x, struct xfrm_tmpl *t,
			   struct xfrm_policy *xp)
{
	return -EINVAL;
}

/* not ours either: *dir keeps the previous manager's answer */
static struct xfrm_policy *xnc_sub_compile_policy(struct sock *sk, int opt,
						  u8 *data, int len, int *dir)
{
	return NULL;
}

static struct xfrm_mgr xnc_sub_km = {
	.notify_policy	= xnc_sub_notify_policy,
	.acquire	= xnc_sub_acquire,
	.compile_policy	= xnc_sub_compile_policy,
};

/* from stats.c's pernet init: "maybe" until the first recount */
void xnc_sub_net_init(struct net *net)
{
	struct xnc_net *xn = xnc_net(net);

	xn->net = net;
	xn->sub_dead = false;
	atomic_set(&xn->sub_state, XNC_SUB_MAYBE);
	INIT_WORK(&xn->sub_recount, xnc_sub_recount);
}

/*
 * A dying namespace: lookups may still come (stats.c), and on 6.1 its
 * policies go, and their expiry timers may still report, only after our
 * exit (xfrm's pernet exit comes later; 6.12 flushes them in its
 * pre_exit, before): let lookups search, and queue no more recounts.  A
 * report that saw the namespace alive is an RCU reader (it runs under
 * km_policy_notify()'s read lock) that stats.c waits for before
 * xnc_sub_net_release().
 */
void xnc_sub_net_exit(struct net *net)
{
	struct xnc_net *xn = xnc_net(net);

	WRITE_ONCE(xn->sub_dead, true);
	atomic_or(XNC_SUB_MAYBE, &xn->sub_state);
}

/* after a grace period since xnc_sub_net_exit(): nothing queues any more */
void xnc_sub_net_release(struct net *net)
{
	cancel_work_sync(&xnc_net(net)->sub_recount);
}

/*
 * The first recount of every namespace, registered once we listen: its
 * init runs for each namespace there is, then for each new one (after
 * stats.c's, registered before).
 */
static int __net_init xnc_sub_net_start(struct net *net)
{
	xnc_sub_queue_recount(net);
	return 0;
}

static struct pernet_operations xnc_sub_net_ops = {
	.init = xnc_sub_net_start,
};

int xnc_sub_init(void)
{
	int err;

	xfrm_register_km(&xnc_sub_km);
	err = register_pernet_subsys(&xnc_sub_net_ops);
	if (err)
		xfrm_unregister_km(&xnc_sub_km);
	return err;
}

/*
 * No report comes after this; a recount still queued is cancelled by the
 * namespaces' exit (stats.c), whose pernet operations go after us.
 */
void xnc_sub_exit(void)
{
	xfrm_unregister_km(&xnc_sub_km);
	unregister_pernet_subsys(&xnc_sub_net_ops);
}

#else /* !CONFIG_XFRM_SUB_POLICY: no sub policies, nothing to track */

void xnc_sub_net_init(struct net *net)
{
}

void xnc_sub_net_exit(struct net *net)
{
}

void xnc_sub_net_release(struct net *net)
{
}

int xnc_sub_init(void)
{
	return 0;
}

void xnc_sub_exit(void)
{
}

#endif
