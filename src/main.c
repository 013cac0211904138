// SPDX-License-Identifier: GPL-2.0
/*
 * xfrm_nocache: resolve every outbound flow's xfrm policy to a bundle with
 * no cache at all, as a livepatch of xfrm_lookup_with_ifid().
 *
 * Usage:
 *   insmod xfrm_nocache.ko          patch applied; see
 *                                   /sys/kernel/livepatch/xfrm_nocache/
 *   cat /proc/net/xfrm_nocache      this namespace's counters
 *   echo 0 > /sys/kernel/livepatch/xfrm_nocache/enabled
 *   rmmod xfrm_nocache              stock path again
 *
 * Order matters: the binding check first (nothing unbound is ever called),
 * the queue bundle probe (queue.c: how many references a queue bundle
 * holds, before any lookup builds one),
 * then the refusal to stack on another livepatch of the same function
 * (stacking.c: nothing is registered yet, so a refusal leaves no trace),
 * trace events (the patched path may fire them), counters (it expects them
 * in every namespace), the patch last.  On unload the livepatch core has
 * already switched every task back to the stock function before
 * module_exit can run.
 *
 * The netdevice notifier (notifier.c) comes after the counters it adds to
 * and before the patch: when klp_enable_patch() fails it is unregistered
 * again, counters last.  It does not depend on the patched function, so it
 * stays in force from load to rmmod, including the time between disabling
 * the livepatch and rmmod; module_exit removes it before the counters.
 * So does the sub policy tracking (subpol.c), a key manager that only
 * listens: registered after the counters, whose namespaces it marks, and
 * before the patch, whose lookups read the marks.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/livepatch.h>
#include <linux/module.h>

#include "xfrm_nocache.h"

/* refuses to build for kernel lines other than 6.1, 6.12 and 7.3 */
#include "xnc_compat.h"

static struct klp_func xnc_funcs[] = {
	{
		.old_name = XNC_PATCHED_FUNC,
		.new_func = xnc_xfrm_lookup_with_ifid,
	}, { }
};

static struct klp_object xnc_objs[] = {
	{
		/* NULL name: vmlinux, where CONFIG_XFRM=y puts net/xfrm */
		.funcs = xnc_funcs,
	}, { }
};

static struct klp_patch xnc_patch = {
	.mod = THIS_MODULE,
	.objs = xnc_objs,
};

static int __init xnc_init(void)
{
	int err;

	err = xnc_klp_check();
	if (err)
		return err;
	err = xnc_verify_release();
	if (err)
		return err;
	err = xnc_verify_btf();
	if (err)
		return err;
	err = xnc_queue_probe();
	if (err)
		return err;
	err = xnc_refuse_stacking(&xnc_patch, XNC_PATCHED_FUNC);
	if (err)
		return err;
	err = xnc_trace_init();
	if (err) {
		pr_err("cannot register trace events: %d\n", err);
		return err;
	}
	err = xnc_stats_init();
	if (err)
		goto out_trace;
	err = xnc_notifier_init();
	if (err) {
		pr_err("cannot register the netdevice notifier: %d\n", err);
		goto out_stats;
	}
	err = xnc_sub_init();
	if (err)
		goto out_notifier;
	err = klp_enable_patch(&xnc_patch);
	if (err) {
		pr_err("cannot enable the livepatch: %d\n", err);
		goto out_sub;
	}
	return 0;

out_sub:
	xnc_sub_exit();
out_notifier:
	xnc_notifier_exit();
out_stats:
	xnc_stats_exit();
out_trace:
	xnc_trace_exit();
	return err;
}

static void __exit xnc_exit(void)
{
	xnc_sub_exit();
	xnc_notifier_exit();
	xnc_stats_exit();
	xnc_trace_exit();
}

module_init(xnc_init);
module_exit(xnc_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Uncached xfrm policy to bundle resolution (livepatch)");
MODULE_INFO(livepatch, "Y");
