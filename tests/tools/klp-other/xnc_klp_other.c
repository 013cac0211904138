// SPDX-License-Identifier: GPL-2.0
/*
 * Test only: "another" livepatch of xfrm_lookup_with_ifid(), for the
 * stacking tests of tests/guest/t-02-refusals.sh.  Its replacement applies
 * no xfrm at all: every flow gets the route it came with, untransformed,
 * so a test can tell which patch of the function is in force.  It switches
 * IPsec output off: never load it outside a test VM.
 */

#include <linux/livepatch.h>
#include <linux/module.h>
#include <net/dst.h>

static struct dst_entry *xnc_other_lookup(struct net *net,
					  struct dst_entry *dst_orig,
					  const struct flowi *fl,
					  const struct sock *sk,
					  int flags, u32 if_id)
{
	return dst_orig;
}

static struct klp_func xnc_other_funcs[] = {
	{
		.old_name = "xfrm_lookup_with_ifid",
		.new_func = xnc_other_lookup,
	}, { }
};

static struct klp_object xnc_other_objs[] = {
	{
		.funcs = xnc_other_funcs,
	}, { }
};

static struct klp_patch xnc_other_patch = {
	.mod = THIS_MODULE,
	.objs = xnc_other_objs,
};

static int __init xnc_other_init(void)
{
	return klp_enable_patch(&xnc_other_patch);
}

static void __exit xnc_other_exit(void)
{
}

module_init(xnc_other_init);
module_exit(xnc_other_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test only: a livepatch of xfrm_lookup_with_ifid() that applies no xfrm");
MODULE_INFO(livepatch, "Y");
