// SPDX-License-Identifier: GPL-2.0
/*
 * Test only (tests/guest/t-15-sub-insert.sh): insert an outbound sub policy
 * that blocks src -> dst, in the namespace of the task that loads this
 * module, with xfrm_policy_insert() and nothing else: no key manager is
 * told, as no netlink or PF_KEY request made it.  A module or a future
 * kernel path could do the same.  Removed with "ip xfrm policy del".
 *
 *   ip netns exec NS insmod xnc_subins.ko src=10.0.0.1 dst=10.0.0.2
 */

#include <linux/inet.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <net/xfrm.h>

static char *src = "";
static char *dst = "";
module_param(src, charp, 0444);
module_param(dst, charp, 0444);

static int __init xnc_subins_init(void)
{
	struct net *net = current->nsproxy->net_ns;
	struct xfrm_policy *xp;
	__be32 s, d;
	int err;

	if (!in4_pton(src, -1, (u8 *)&s, -1, NULL) ||
	    !in4_pton(dst, -1, (u8 *)&d, -1, NULL)) {
		pr_err("xnc_subins: src= and dst= must be IPv4 addresses\n");
		return -EINVAL;
	}
	xp = xfrm_policy_alloc(net, GFP_KERNEL);
	if (!xp)
		return -ENOMEM;
	xp->selector.family = AF_INET;
	xp->selector.saddr.a4 = s;
	xp->selector.daddr.a4 = d;
	xp->selector.prefixlen_s = 32;
	xp->selector.prefixlen_d = 32;
	xp->family = AF_INET;
	xp->type = XFRM_POLICY_TYPE_SUB;
	xp->action = XFRM_POLICY_BLOCK;
	xp->lft.soft_byte_limit = XFRM_INF;
	xp->lft.hard_byte_limit = XFRM_INF;
	xp->lft.soft_packet_limit = XFRM_INF;
	xp->lft.hard_packet_limit = XFRM_INF;
	err = xfrm_policy_insert(XFRM_POLICY_OUT, xp, 1);
	if (err) {
		/* never linked, as xfrm_user frees one it failed to insert */
		kfree(xp);
		return err;
	}
	/* the tables hold it now */
	xfrm_pol_put(xp);
	return 0;
}

static void __exit xnc_subins_exit(void)
{
}

module_init(xnc_subins_init);
module_exit(xnc_subins_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test only: an outbound sub policy inserted without notification");
