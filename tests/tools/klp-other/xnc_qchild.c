// SPDX-License-Identifier: GPL-2.0
/*
 * Test only (tests/guest/t-13-queue-ref.sh): make the running kernel behave,
 * in init_net, like one that releases a queue bundle's child when the
 * bundle is destroyed, the other way a kernel could fix the route leak of
 * stock's queue bundles.  xfrm_nocache must then see, at load, that
 * destroying a queue bundle drops two references on its route, and take
 * two for every one it builds; a module that took one would drop the
 * route's last reference early (a refcount underflow, a route freed while
 * in use).
 *
 * Done by wrapping the destroy hook of init_net's IPv4 xfrm dst_ops (a per
 * namespace copy): after the kernel's own destroy, a bundle without a
 * state that is a queue bundle releases its child as well.  Restored at
 * unload, after every destruction that may be running in the wrapper.
 * Never load it outside a test VM.
 */

#include <linux/module.h>
#include <linux/rcupdate.h>
#include <net/dst.h>
#include <net/net_namespace.h>
#include <net/xfrm.h>

static void (*xnc_qchild_orig)(struct dst_entry *dst);

static void xnc_qchild_destroy(struct dst_entry *dst)
{
	struct dst_entry *child = NULL;

	if (!dst->xfrm && (dst->flags & DST_XFRM_QUEUE))
		child = xfrm_dst_child(dst);
	xnc_qchild_orig(dst);
	if (child)
		dst_release_immediate(child);
}

static int __init xnc_qchild_init(void)
{
	struct dst_ops *ops = &init_net.xfrm.xfrm4_dst_ops;

	xnc_qchild_orig = ops->destroy;
	if (!xnc_qchild_orig)
		return -ENOENT;
	WRITE_ONCE(ops->destroy, xnc_qchild_destroy);
	pr_info("xnc_qchild: TEST ONLY: init_net's IPv4 queue bundles release their child\n");
	return 0;
}

static void __exit xnc_qchild_exit(void)
{
	WRITE_ONCE(init_net.xfrm.xfrm4_dst_ops.destroy, xnc_qchild_orig);
	/* destructions already in the wrapper, in RCU callbacks or not */
	synchronize_rcu();
	rcu_barrier();
}

module_init(xnc_qchild_init);
module_exit(xnc_qchild_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("TEST ONLY: queue bundles release their child (xfrm_nocache tests)");
