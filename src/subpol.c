// SPDX-License-Identifier: GPL-2.0
/*
 * Whether a namespace may have an outbound sub policy, kept exact, so that
 * lookups search the sub policy tables only then (xnc_sub_search()).
 *
 * Additions: every policy enters the tables through xfrm_policy_insert(),
 * whoever calls it and whether or not a key manager is told.  A kretprobe
 * on it marks the namespace "maybe" on entry, before the policy is linked
 * and before the insertion makes routes stale, and again on return.  A
 * probe that cannot run counts in nmissed before the insertion does, and
 * lookups then always search: the skip never fails open.
 *
 * Removals (delete, hard expiry, flush), which key managers hear of,
 * queue a recount: a walk of the namespace's sub policies, which clears
 * "maybe" only if it found no outbound one, no insertion is under way and
 * the state did not change since before the walk (docs/testing.md, "Sub
 * policies").  A removal nobody reports leaves "maybe": a vain search, as
 * stock's.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
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

/* one more addition, and "maybe", in one fully ordered step */
static void xnc_sub_mark(struct xnc_net *xn)
{
	int old = atomic_read(&xn->sub_state), new;

	do {
		new = (int)(((unsigned int)old + 2) | XNC_SUB_MAYBE);
	} while (!atomic_try_cmpxchg(&xn->sub_state, &old, new));
}

/* xfrm_policy_insert(dir, policy, excl): the outbound sub policies */
static_assert(__builtin_types_compatible_p(typeof(xfrm_policy_insert),
					   int (int, struct xfrm_policy *, int)));

static int xnc_sub_insert_entry(struct kretprobe_instance *ri,
				struct pt_regs *regs)
{
	int dir = (int)regs_get_kernel_argument(regs, 0);
	struct xfrm_policy *xp =
		(struct xfrm_policy *)regs_get_kernel_argument(regs, 1);
	struct xnc_net **xn = (struct xnc_net **)ri->data;

	*xn = NULL;
	if (!xnc_sub_out(xp, dir))
		return 0;
	*xn = xnc_net(xp_net(xp));
	atomic_inc(&(*xn)->sub_inserting);
	xnc_sub_mark(*xn);
	return 0;
}

static int xnc_sub_insert_return(struct kretprobe_instance *ri,
				 struct pt_regs *regs)
{
	struct xnc_net *xn = *(struct xnc_net **)ri->data;

	if (xn) {
		xnc_sub_mark(xn);
		/* after the mark: a recount that sees it done sees the mark */
		atomic_dec_return_release(&xn->sub_inserting);
	}
	return 0;
}

struct kretprobe xnc_sub_probe = {
	.kp.symbol_name	= "xfrm_policy_insert",
	.entry_handler	= xnc_sub_insert_entry,
	.handler	= xnc_sub_insert_return,
	.data_size	= sizeof(struct xnc_net *),
	/* insertions under way at once (policy lock holders and waiters) */
	.maxactive	= 64,
};

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
	/* one the walk may not have seen yet; its return recounts nothing */
	if (atomic_read_acquire(&xn->sub_inserting))
		return;
	atomic_cmpxchg(&xn->sub_state, old, old & ~XNC_SUB_MAYBE);
}

static int xnc_sub_notify_policy(struct xfrm_policy *xp, int dir,
				 const struct km_event *c)
{
	switch (c->event) {
	case XFRM_MSG_NEWPOLICY:
	case XFRM_MSG_UPDPOLICY:
		/* the probe saw it inserted */
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
	atomic_set(&xn->sub_inserting, 0);
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

	err = register_kretprobe(&xnc_sub_probe);
	if (err) {
		pr_err("cannot probe xfrm_policy_insert(): %d\n", err);
		return err;
	}
	xfrm_register_km(&xnc_sub_km);
	err = register_pernet_subsys(&xnc_sub_net_ops);
	if (err) {
		xfrm_unregister_km(&xnc_sub_km);
		unregister_kretprobe(&xnc_sub_probe);
	}
	return err;
}

/*
 * No report comes after this; a recount still queued is cancelled by the
 * namespaces' exit (stats.c), whose pernet operations go after us.
 */
void xnc_sub_exit(void)
{
	unregister_kretprobe(&xnc_sub_probe);
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
