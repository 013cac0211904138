// SPDX-License-Identifier: GPL-2.0
/*
 * The replacement for xfrm_lookup_with_ifid(): find the output policy for a
 * flow and build its bundle from scratch, as stock 6.1, 6.12 and 7.3 do
 * (no bundle cache since 4.19), with what a user can observe the same case by
 * case (errno, the SA that carries the packet, policy use_time,
 * /proc/net/xfrm_stat), counted per namespace, and one policy search fewer
 * while the namespace has no outbound sub policy (subpol.c).
 *
 * Process or softirq context.  No lock of ours, no sleeping, no bottom-half
 * toggling; allocations are GFP_ATOMIC and counters this_cpu_*(), so the
 * path is preemptible on PREEMPT_RT as stock's is.
 */

#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <linux/timekeeping.h>
#include <net/dst.h>
#include <net/inet_sock.h>
#include <net/ip6_fib.h>
#include <net/xfrm.h>

#include "xfrm_nocache.h"
#include "xnc_compat.h"
#include "xnc_trace.h"

/* What the policies of a flow ask for, as xnc_expand() found them. */
struct xnc_expansion {
	int num_pols;		/* policies found, their references in pols[] */
	int num_tmpls;		/* templates they carry, in all */
	bool block;		/* one of them forbids the flow */
};

/*
 * Policies for a flow: the socket's or the namespace's, then, for a sub
 * policy that allows, the main policy it refines.  Returns 0 with @ex
 * filled in (no policy: num_pols 0), or a negative errno with no
 * references held.
 */
static int xnc_expand(const struct flowi *fl, u16 family,
		      struct xfrm_policy **pols, struct xnc_expansion *ex)
{
	int i;

	*ex = (struct xnc_expansion){};
	if (!pols[0])
		return 0;
	if (IS_ERR(pols[0]))
		return PTR_ERR(pols[0]);
	ex->num_pols = 1;
	ex->num_tmpls = pols[0]->xfrm_nr;

#ifdef CONFIG_XFRM_SUB_POLICY
	if (pols[0]->action == XFRM_POLICY_ALLOW &&
	    pols[0]->type != XFRM_POLICY_TYPE_MAIN) {
		pols[1] = xnc_xfrm_policy_lookup_bytype(xp_net(pols[0]),
							XFRM_POLICY_TYPE_MAIN,
							fl, family,
							XFRM_POLICY_OUT,
							pols[0]->if_id);
		if (IS_ERR(pols[1])) {
			xfrm_pol_put(pols[0]);
			*ex = (struct xnc_expansion){};
			return PTR_ERR(pols[1]);
		}
		if (pols[1]) {
			ex->num_pols = 2;
			ex->num_tmpls += pols[1]->xfrm_nr;
		}
	}
#endif
	for (i = 0; i < ex->num_pols; i++)
		if (pols[i]->action != XFRM_POLICY_ALLOW)
			ex->block = true;
	return 0;
}

/*
 * A bundle without transforms, to carry the policies of a flow that passes,
 * is blocked, or waits for its SAs.  With @queue it holds packets (sent by
 * the kernel's policy hold-queue timer once the SAs exist); otherwise its
 * route is NULL, which tells the caller the SAs are missing.
 */
static struct xfrm_dst *xnc_dummy_bundle(struct net *net, u16 family,
					 const struct flowi *fl,
					 struct dst_entry *dst_orig,
					 bool queue)
{
	const struct xfrm_policy_afinfo *afinfo = NULL;
	struct net_device *dev;
	struct xfrm_dst *xdst;
	struct dst_entry *dst;
	int i, err;

	/* afinfo (and the IPv6 module behind it) stays put while we hold RCU */
	rcu_read_lock();
	if (family <= AF_INET6)
		afinfo = rcu_dereference(xnc_policy_afinfo[family]);
	if (!afinfo) {
		xdst = ERR_PTR(-EINVAL);
		goto out;
	}
	xdst = xnc_dst_alloc(family == AF_INET ? &net->xfrm.xfrm4_dst_ops :
						 &net->xfrm.xfrm6_dst_ops,
			     DST_OBSOLETE_NONE, 0);
	if (!xdst) {
		xdst = ERR_PTR(-ENOBUFS);
		goto out;
	}
	memset_after(xdst, 0, u.dst);
	if (!queue)
		goto out;

	/*
	 * dst_alloc() left input/output on the kernel's discard handlers;
	 * output now goes to the kernel's hold queue.  Never point a dst at
	 * our own text: dsts outlive the module.
	 */
	dst = &xdst->u.dst;
	for (i = 0; i < xnc_queue_route_refs; i++)
		dst_hold(dst_orig);
	xdst->route = dst_orig;
	dst_copy_metrics(dst, dst_orig);
	dst->obsolete = DST_OBSOLETE_FORCE_CHK;
	dst->flags |= DST_XFRM_QUEUE;
	dst->lastuse = jiffies;
	dst->output = xnc_xdst_queue_output;
	/*
	 * As many references on dst_orig as destroying the bundle drops
	 * (queue.c): on 6.1, 6.12 and 7.3 one, xdst->route's.  Stock takes a
	 * second one for the child, but dst_destroy() releases a child only
	 * for a bundle with a state (dst->xfrm), which this one never has:
	 * every queued lookup leaks a route there (kmemleak finds them).
	 * Child and path only borrow.
	 */
	xfrm_dst_set_child(xdst, dst_orig);
	xdst->path = dst_orig;
	if (dst_orig->ops->family == AF_INET6) {
		xdst->path_cookie = rt6_get_cookie(dst_rt6_info(dst_orig));
		xdst->u.rt6.rt6i_nfheader_len = 0;
	}

	dev = xnc_dst_dev_rcu(dst_orig);
	err = dev ? afinfo->fill_dst(xdst, dev, fl) : -ENODEV;
	if (err) {
		dst_release(dst);
		xdst = ERR_PTR(err);
	}
out:
	rcu_read_unlock();
	return xdst;
}

/* What one lookup did, accounted once on the way out. */
struct xnc_acct {
	enum xnc_stat outcome;
	bool sk_policy;
	bool sub_search;	/* searched the sub policies */
	bool bundle;
	int xfrms;		/* transforms the bundle resolved */
	u64 start;		/* ns, only when timing */
};

/* What only some lookups have to account: out of the common path. */
static noinline void xnc_account_more(struct net *net, const struct flowi *fl,
				      u16 family, u32 if_id,
				      const struct xnc_expansion *ex,
				      const struct xnc_acct *a, int err)
{
	struct xnc_pcpu_stats __percpu *stats;
	struct xnc_net *xn;
	u64 ns = 0;

	if (static_branch_unlikely(&xnc_latency_key) && a->start)
		ns = ktime_get_ns() - a->start;

	preempt_disable_notrace();
	xn = xnc_net_sched(net);
	stats = READ_ONCE(xn->stats_live);
	if (stats) {
		if (a->sk_policy)
			this_cpu_inc(stats->v[0][XNC_SOCKET_POLICY]);
		if (a->sub_search)
			this_cpu_inc(stats->v[0][XNC_SUB_SEARCHES]);
		if (a->bundle)
			this_cpu_inc(stats->v[0][XNC_BUNDLES]);
	}
	if (static_branch_unlikely(&xnc_latency_key) && a->start) {
		struct xnc_pcpu_hist __percpu *hist = READ_ONCE(xn->hist);

		if (hist)
			this_cpu_inc(hist->b[min_t(int, ilog2(ns | 1),
						   XNC_LAT_BUCKETS - 1)]);
	}
	preempt_enable_notrace();

	if (trace_xnc_lookup_enabled())
		trace_xnc_lookup(net, fl, family, if_id, ex->num_pols,
				 ex->block ? -1 : a->xfrms,
				 err, a->outcome, ns);
}

/*
 * Every lookup: one increment, its outcome in its family's row, with
 * preemption disabled (the namespace's counters may be going away, see
 * stats.c).
 */
static __always_inline void xnc_count_outcome(struct net *net, u16 family,
					      enum xnc_stat outcome)
{
	struct xnc_pcpu_stats __percpu *stats;

	preempt_disable_notrace();
	stats = READ_ONCE(xnc_net_sched(net)->stats_live);
	if (likely(stats))
		this_cpu_inc(stats->v[family == AF_INET6][outcome]);
	preempt_enable_notrace();
}

/* The outcome, and the rest only where there is more to say. */
static __always_inline void xnc_account(struct net *net,
					const struct flowi *fl, u16 family,
					u32 if_id,
					const struct xnc_expansion *ex,
					const struct xnc_acct *a, int err)
{
	xnc_count_outcome(net, family, a->outcome);
	if (unlikely(a->sk_policy || a->sub_search || a->bundle) ||
	    static_branch_unlikely(&xnc_latency_key) ||
	    trace_xnc_lookup_enabled())
		xnc_account_more(net, fl, family, if_id, ex, a, err);
}

/*
 * The whole resolution, for every lookup xnc_xfrm_lookup_with_ifid() does
 * not finish on its own.
 */
static noinline struct dst_entry *xnc_lookup(struct net *net,
					     struct dst_entry *dst_orig,
					     const struct flowi *fl,
					     const struct sock *sk,
					     int flags, u32 if_id)
{
	struct xfrm_policy *pols[XFRM_POLICY_TYPE_MAX];
	struct xnc_acct acct = { .outcome = XNC_NO_POLICY };
	struct xnc_expansion ex = {};
	u16 family = dst_orig->ops->family;
	struct dst_entry *dst = NULL;
	struct xfrm_dst *xdst = NULL;
	/* transforms the policies want: 0 to pass (or block) */
	int num_xfrms = 0;
	/* references in pols[] we own; a bundle owns them otherwise */
	int own_pols = 0;
	int i, err;

	/*
	 * Two clock reads, only with latency=1 (a static key: a no-op
	 * otherwise), which also fills the trace event's ns.
	 */
	if (static_branch_unlikely(&xnc_latency_key))
		acct.start = ktime_get_ns();

	/* A per-socket policy comes first (IKE daemons bypass with these). */
	sk = sk_const_to_full_sk(sk);
	if (sk && rcu_access_pointer(sk->sk_policy[XFRM_POLICY_OUT])) {
		pols[0] = xnc_xfrm_sk_policy_lookup(sk, XFRM_POLICY_OUT, fl,
						    family, if_id);
		err = xnc_expand(fl, family, pols, &ex);
		if (err) {
			/* stock counts no MIB error for a socket policy */
			acct.outcome = XNC_POLICY_ERROR;
			goto drop_orig;
		}
		if (ex.num_pols) {
			acct.sk_policy = true;
			own_pols = ex.num_pols;
			num_xfrms = ex.block ? 0 : ex.num_tmpls;
			if (!num_xfrms)
				goto decide;
			xdst = xnc_xfrm_resolve_and_create_bundle(pols,
								  ex.num_pols,
								  fl, family,
								  dst_orig);
			if (IS_ERR(xdst)) {
				xfrm_pols_put(pols, ex.num_pols);
				own_pols = 0;
				err = PTR_ERR(xdst);
				xdst = NULL;
				if (err == -EREMOTE)
					goto no_policy;
				/*
				 * -EAGAIN: SAs missing.  Unlike for a namespace
				 * policy, stock returns it as is, counting no
				 * XfrmOutNoStates; we count it as NoStates all
				 * the same.
				 */
				acct.outcome = err == -EAGAIN ? XNC_NO_STATES :
								XNC_BUNDLE_ERROR;
				goto drop_orig;
			}
			if (!xdst) {
				/* the templates are all optional */
				num_xfrms = 0;
				goto decide;
			}
			acct.bundle = true;
			acct.xfrms = xdst->num_xfrms;
			own_pols = 0;
			dst = &xdst->u.dst;
			goto decide;
		}
	}

	/* Fast exits, as stock: nothing to look up for this route. */
	if (!if_id && ((dst_orig->flags & DST_NOXFRM) ||
		       !READ_ONCE(net->xfrm.policy_count[XFRM_POLICY_OUT])))
		goto no_policy;

	/*
	 * The namespace's policies: sub policies take precedence.  Stock
	 * searches them every time; we do only when the namespace may have
	 * an outbound one (subpol.c), which is exact, not a cache.
	 */
	pols[0] = NULL;
	if (xnc_sub_search(net)) {
		acct.sub_search = true;
		pols[0] = xnc_xfrm_policy_lookup_bytype(net,
							XFRM_POLICY_TYPE_SUB,
							fl, family,
							XFRM_POLICY_OUT, if_id);
	}
	if (!pols[0])
		pols[0] = xnc_xfrm_policy_lookup_bytype(net,
							XFRM_POLICY_TYPE_MAIN,
							fl, family,
							XFRM_POLICY_OUT, if_id);
	err = xnc_expand(fl, family, pols, &ex);
	if (err) {
		XFRM_INC_STATS(net, LINUX_MIB_XFRMOUTPOLERROR);
		acct.outcome = XNC_POLICY_ERROR;
		goto drop_orig;
	}
	if (!ex.num_pols)
		goto no_policy;

	num_xfrms = ex.block ? 0 : ex.num_tmpls;
	if (num_xfrms > 0) {
		xdst = xnc_xfrm_resolve_and_create_bundle(pols, ex.num_pols,
							  fl, family,
							  dst_orig);
		if (IS_ERR(xdst)) {
			err = PTR_ERR(xdst);
			xdst = NULL;
			if (err == -EREMOTE) {
				xfrm_pols_put(pols, ex.num_pols);
				goto no_policy;
			}
			if (err != -EAGAIN) {
				xfrm_pols_put(pols, ex.num_pols);
				acct.outcome = XNC_BUNDLE_ERROR;
				goto drop_orig;
			}
			/* no SA yet: a dummy bundle carries the policies */
		} else if (!xdst) {
			num_xfrms = 0;
		} else {
			acct.bundle = true;
			acct.xfrms = xdst->num_xfrms;
		}
	}
	if (!xdst) {
		bool queue = (flags & XFRM_LOOKUP_QUEUE) &&
			     !net->xfrm.sysctl_larval_drop && num_xfrms > 0;

		xdst = xnc_dummy_bundle(net, family, fl, dst_orig, queue);
		if (IS_ERR(xdst)) {
			xfrm_pols_put(pols, ex.num_pols);
			err = PTR_ERR(xdst);
			acct.outcome = XNC_BUNDLE_ERROR;
			goto drop_orig;
		}
		xdst->num_pols = ex.num_pols;
		xdst->num_xfrms = ex.block ? -1 : num_xfrms;
		memcpy(xdst->pols, pols, sizeof(pols[0]) * ex.num_pols);
	}
	/* the bundle now owns the policy references; pols[] borrows them */
	dst = &xdst->u.dst;

	if (!xdst->route && num_xfrms > 0) {
		/*
		 * Policies want transforms but the SAs are not there yet and
		 * the caller cannot queue: drop (larval_drop makes the route
		 * a blackhole in xfrm_lookup_route()) or ask to retry.
		 */
		XFRM_INC_STATS(net, LINUX_MIB_XFRMOUTNOSTATES);
		err = net->xfrm.sysctl_larval_drop ? -EREMOTE : -EAGAIN;
		acct.outcome = XNC_NO_STATES;
		goto drop_dst;
	}

decide:
	if ((flags & XFRM_LOOKUP_ICMP) &&
	    !(pols[0]->flags & XFRM_POLICY_ICMP)) {
		err = -ENOENT;
		acct.outcome = XNC_ICMP_REFUSED;
		goto drop_dst;
	}

	for (i = 0; i < ex.num_pols; i++)
		WRITE_ONCE(pols[i]->curlft.use_time, ktime_get_real_seconds());

	if (ex.block) {
		XFRM_INC_STATS(net, LINUX_MIB_XFRMOUTPOLBLOCK);
		err = -EPERM;
		acct.outcome = XNC_BLOCKED;
		goto drop_dst;
	}
	if (num_xfrms > 0) {
		dst_release(dst_orig);
		acct.outcome = dst->flags & DST_XFRM_QUEUE ? XNC_QUEUED :
							     XNC_TRANSFORMED;
	} else {
		dst_release(dst);
		dst = dst_orig;
		acct.outcome = XNC_PASS;
	}
	goto out;

no_policy:
	if ((!dst_orig->dev || !(dst_orig->dev->flags & IFF_LOOPBACK)) &&
	    READ_ONCE(net->xfrm.policy_default[XFRM_POLICY_OUT]) ==
	    XFRM_USERPOLICY_BLOCK) {
		err = -EPERM;
		acct.outcome = XNC_DEFAULT_BLOCK;
		goto drop_orig;
	}
	if (flags & XFRM_LOOKUP_ICMP) {
		/* no policy at all: nothing for ICMP to use */
		err = -ENOENT;
		acct.outcome = XNC_ICMP_NO_POLICY;
		goto drop_orig;
	}
	dst = dst_orig;
out:
	xfrm_pols_put(pols, own_pols);
	if (dst->xfrm && xnc_tunnel_mode(dst->xfrm->props.mode))
		dst->flags |= DST_XFRM_TUNNEL;
	xnc_account(net, fl, family, if_id, &ex, &acct, 0);
	return dst;

drop_dst:
	dst_release(dst);
drop_orig:
	if (!(flags & XFRM_LOOKUP_KEEP_DST_REF))
		dst_release(dst_orig);
	xfrm_pols_put(pols, own_pols);
	xnc_account(net, fl, family, if_id, &ex, &acct, err);
	return ERR_PTR(err);
}

/*
 * Most output route lookups of a host are for flows no policy can match:
 * no socket policy, no if_id, and a route that bypasses xfrm or a
 * namespace without outbound policies.  Those end here, with one counter
 * increment and a frame smaller than stock's; everything else, and every
 * lookup while it is timed or traced, goes through xnc_lookup().
 */
struct dst_entry *xnc_xfrm_lookup_with_ifid(struct net *net,
					    struct dst_entry *dst_orig,
					    const struct flowi *fl,
					    const struct sock *sk,
					    int flags, u32 if_id)
{
	const struct sock *fsk = sk_const_to_full_sk(sk);

	if (static_branch_unlikely(&xnc_latency_key) ||
	    trace_xnc_lookup_enabled() || if_id ||
	    (fsk && rcu_access_pointer(fsk->sk_policy[XFRM_POLICY_OUT])) ||
	    (!(dst_orig->flags & DST_NOXFRM) &&
	     READ_ONCE(net->xfrm.policy_count[XFRM_POLICY_OUT])) ||
	    (flags & XFRM_LOOKUP_ICMP) ||
	    READ_ONCE(net->xfrm.policy_default[XFRM_POLICY_OUT]) ==
	    XFRM_USERPOLICY_BLOCK)
		return xnc_lookup(net, dst_orig, fl, sk, flags, if_id);

	xnc_count_outcome(net, dst_orig->ops->family, XNC_NO_POLICY);
	if (dst_orig->xfrm && xnc_tunnel_mode(dst_orig->xfrm->props.mode))
		dst_orig->flags |= DST_XFRM_TUNNEL;
	return dst_orig;
}
