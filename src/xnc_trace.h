/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of xfrm_nocache: one per resolution, one per device-down
 * flush.  Attach with perf (-e xfrm_nocache:xnc_lookup), trace-cmd, or
 * tracefs (events/xfrm_nocache/).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM xfrm_nocache

#if !defined(_XNC_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _XNC_TRACE_H

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/netdevice.h>
#include <linux/tracepoint.h>
#include <net/net_namespace.h>
#include <net/xfrm.h>

#include "xnc_compat.h"

/*
 * One resolution.  pols: policies applied (socket or namespace, with the
 * main policy a sub policy refines).  xfrms: transforms of the bundle
 * built, the SAs actually resolved (stock's xdst->num_xfrms), which may be
 * fewer than the templates when some are optional ("level use"); 0 when
 * no bundle was built (no policy, pass, SAs missing, queued, errors); -1
 * when a policy blocks the flow.  ns: how long the resolution took, with
 * latency=1 only (0 otherwise: the clock is read for that parameter).
 */
TRACE_EVENT(xnc_lookup,
	    TP_PROTO(const struct net *net, const struct flowi *fl, u16 family,
		     u32 if_id, int num_pols, int xfrms, int err,
		     int outcome, u64 ns),

	TP_ARGS(net, fl, family, if_id, num_pols, xfrms, err, outcome, ns),

	TP_STRUCT__entry(__field(unsigned int, netns)
		__field(u16, family)
		__array(u8, src, sizeof(struct sockaddr_in6))
		__array(u8, dst, sizeof(struct sockaddr_in6))
		__field(u32, if_id)
		__field(int, num_pols)
		__field(int, xfrms)
		__field(int, err)
		__field(u8, outcome)
		__field(u64, ns)
	),

	TP_fast_assign(const xfrm_address_t *s = xfrm_flowi_saddr(fl, family);
		const xfrm_address_t *d = xfrm_flowi_daddr(fl, family);
		struct sockaddr_in6 *s6 = (void *)__entry->src;
		struct sockaddr_in6 *d6 = (void *)__entry->dst;

		memset(__entry->src, 0, sizeof(__entry->src));
		memset(__entry->dst, 0, sizeof(__entry->dst));
		s6->sin6_family = family;
		d6->sin6_family = family;
		if (family == AF_INET && s && d) {
			((struct sockaddr_in *)s6)->sin_addr.s_addr = s->a4;
			((struct sockaddr_in *)d6)->sin_addr.s_addr = d->a4;
		} else if (family == AF_INET6 && s && d) {
			s6->sin6_addr = s->in6;
			d6->sin6_addr = d->in6;
		}
		__entry->netns = net->ns.inum;
		__entry->family = family;
		__entry->if_id = if_id;
		__entry->num_pols = num_pols;
		__entry->xfrms = xfrms;
		__entry->err = err;
		__entry->outcome = outcome;
		__entry->ns = ns;
	),

	TP_printk("netns=%u family=%s src=%pISc dst=%pISc if_id=%u pols=%d xfrms=%d result=%s err=%d ns=%llu",
		  __entry->netns,
		  __print_symbolic(__entry->family, { AF_INET, "ipv4" },
				   { AF_INET6, "ipv6" }),
		  __entry->src, __entry->dst, __entry->if_id,
		  __entry->num_pols, __entry->xfrms,
		  /*
		   * enum xnc_stat's outcomes (the values are checked in
		   * trace.c), named as in /proc/net/xfrm_nocache: the record
		   * keeps the number, the name is found when it is read.
		   * Literal numbers, which perf and trace-cmd take from the
		   * format as they are (6.1 does not rewrite enum names in
		   * the formats of a livepatch module's events).
		   */
		  __print_symbolic(__entry->outcome,
				   { 4, "NoPolicy" },
				   { 5, "PassUntransformed" },
				   { 6, "Transformed" },
				   { 8, "Queued" },
				   { 9, "Blocked" },
				   { 10, "DefaultBlock" },
				   { 11, "NoStates" },
				   { 12, "IcmpRefused" },
				   { 13, "PolicyError" },
				   { 14, "BundleError" },
				   { 15, "IcmpNoPolicy" }),
		  __entry->err, __entry->ns)
);

TRACE_EVENT(xnc_flush,
	    TP_PROTO(const struct net_device *dev, unsigned int flushed,
		     unsigned int policies),

	TP_ARGS(dev, flushed, policies),

	TP_STRUCT__entry(__field(unsigned int, netns)
		__field(int, ifindex)
		__string(dev, dev->name)
		__field(unsigned int, flushed)
		__field(unsigned int, policies)
	),

	TP_fast_assign(__entry->netns = dev_net(dev)->ns.inum;
		__entry->ifindex = dev->ifindex;
		xnc_assign_str(dev, dev->name);
		__entry->flushed = flushed;
		__entry->policies = policies;
	),

	/* flushed: SAs; policies: offloaded policies (6.12) */
	TP_printk("netns=%u dev=%s ifindex=%d flushed=%u policies=%u",
		  __entry->netns, __get_str(dev), __entry->ifindex,
		  __entry->flushed, __entry->policies)
);

#endif /* _XNC_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE xnc_trace
#include <trace/define_trace.h>
