// SPDX-License-Identifier: GPL-2.0
/*
 * Per-namespace, per-CPU counters, shown in /proc/net/xfrm_nocache in the
 * "Name value" format of /proc/net/xfrm_stat.
 *
 * The hot path only does this_cpu_inc() on its own CPU's slot; summing is
 * left to the reader.  A reader racing an increment may see a total one
 * short; nobody can tell that from a packet arriving a moment later.
 *
 * A dying namespace can still see lookups after our exit handler ran: the
 * xfrm policy hold-queue timer is only stopped by xfrm's own exit, which
 * comes later.  So the hot path reads the per-CPU pointer with preemption
 * disabled, which synchronize_rcu() waits for, and tolerates NULL, and we
 * free it only after a grace period (once per batch of dying namespaces,
 * so netns teardown does not pay one each).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kstrtox.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "xfrm_nocache.h"

unsigned int xnc_net_id __read_mostly;

static const char * const xnc_stat_names[XNC_STAT_MAX] = {
	[XNC_LOOKUPS]		= "Lookups",
	[XNC_LOOKUPS_V4]	= "LookupsIPv4",
	[XNC_LOOKUPS_V6]	= "LookupsIPv6",
	[XNC_SOCKET_POLICY]	= "SocketPolicy",
	[XNC_NO_POLICY]		= "NoPolicy",
	[XNC_PASS]		= "PassUntransformed",
	[XNC_TRANSFORMED]	= "Transformed",
	[XNC_BUNDLES]		= "BundlesCreated",
	[XNC_QUEUED]		= "Queued",
	[XNC_BLOCKED]		= "Blocked",
	[XNC_DEFAULT_BLOCK]	= "DefaultBlock",
	[XNC_NO_STATES]		= "NoStates",
	[XNC_ICMP_REFUSED]	= "IcmpRefused",
	[XNC_POLICY_ERROR]	= "PolicyError",
	[XNC_BUNDLE_ERROR]	= "BundleError",
	[XNC_ICMP_NO_POLICY]	= "IcmpNoPolicy",
	[XNC_ERRORS]		= "Errors",
	[XNC_NOTIFIER_EVENTS]	= "NotifierEvents",
	[XNC_SAS_FLUSHED]	= "SAsFlushed",
	[XNC_POLICIES_FLUSHED]	= "PoliciesFlushed",
	[XNC_SUB_SEARCHES]	= "SubPolicySearches",
};

/*
 * Add @n to one counter of @net from outside the lookup path (process
 * context is fine: this_cpu_add() is preempt-safe).  The namespace may be
 * dying, as for the hot path.
 */
void xnc_count(struct net *net, enum xnc_stat stat, u64 n)
{
	struct xnc_pcpu_stats __percpu *stats;

	rcu_read_lock();
	stats = READ_ONCE(xnc_net(net)->stats_live);
	if (stats)
		this_cpu_add(stats->v[0][stat], n);
	rcu_read_unlock();
}

static int xnc_stats_show(struct seq_file *seq, void *v)
{
	struct xnc_net *xn = xnc_net(seq_file_single_net(seq));
	u64 sum[XNC_STAT_MAX] = {}, n;
	int cpu, f, i;

	for_each_possible_cpu(cpu) {
		const struct xnc_pcpu_stats *s = per_cpu_ptr(xn->stats, cpu);

		for (f = 0; f < 2; f++)
			for (i = 0; i < XNC_STAT_MAX; i++) {
				n = READ_ONCE(s->v[f][i]);
				sum[i] += n;
				if (!(XNC_OUTCOMES & BIT(i)))
					continue;
				sum[XNC_LOOKUPS] += n;
				sum[f ? XNC_LOOKUPS_V6 : XNC_LOOKUPS_V4] += n;
				if (XNC_ERROR_OUTCOMES & BIT(i))
					sum[XNC_ERRORS] += n;
			}
	}
	for (i = 0; i < XNC_STAT_MAX; i++)
		seq_printf(seq, "%-24s\t%llu\n", xnc_stat_names[i], sum[i]);
	return 0;
}

/*
 * latency, a bool parameter, at load or through sysfs.  Its histograms
 * exist only while it is on: switching it on allocates one for every
 * namespace (new ones get theirs at creation), off frees them.  Only the
 * words a bool parameter takes (0/1, y/n, on/off): a typo must not leave
 * the histogram off, or on, without a word.
 */
bool xnc_latency __read_mostly;
DEFINE_STATIC_KEY_FALSE(xnc_latency_key);

/* every namespace's xnc_net, and what switches latency: one at a time */
static LIST_HEAD(xnc_nets);
static DEFINE_MUTEX(xnc_nets_lock);

static void xnc_hist_free_all(void)
{
	struct xnc_net *xn;

	list_for_each_entry(xn, &xnc_nets, node) {
		xn->hist_old = xn->hist;
		WRITE_ONCE(xn->hist, NULL);
	}
	synchronize_rcu();
	list_for_each_entry(xn, &xnc_nets, node) {
		free_percpu(xn->hist_old);
		xn->hist_old = NULL;
	}
}

static int xnc_hist_alloc_all(void)
{
	struct xnc_net *xn;

	list_for_each_entry(xn, &xnc_nets, node) {
		if (xn->hist)
			continue;
		xn->hist = alloc_percpu(struct xnc_pcpu_hist);
		if (!xn->hist)
			return -ENOMEM;
	}
	return 0;
}

static int xnc_latency_set(const char *val, const struct kernel_param *kp)
{
	static const char * const words[] = { "0", "n", "N", "off",
					      "1", "y", "Y", "on" };
	int i, err = 0;
	bool on;

	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (sysfs_streq(val, words[i]))
			break;
	if (i == ARRAY_SIZE(words)) {
		/* one line, whatever was written: "echo 2" ends in '\n' */
		pr_err("latency must be 0 or 1 (or n/y, off/on), not '%.*s'\n",
		       (int)min_t(size_t, strcspn(val, "\n"), 32), val);
		return -EINVAL;
	}
	on = i >= ARRAY_SIZE(words) / 2;

	mutex_lock(&xnc_nets_lock);
	if (on) {
		err = xnc_hist_alloc_all();
		if (err)
			xnc_hist_free_all();
	}
	/* the histograms exist before the hot path times anything */
	if (!err) {
		WRITE_ONCE(*(bool *)kp->arg, on);
		if (on)
			static_branch_enable(&xnc_latency_key);
		else
			static_branch_disable(&xnc_latency_key);
	}
	if (!on)
		xnc_hist_free_all();
	mutex_unlock(&xnc_nets_lock);
	return err;
}

static const struct kernel_param_ops xnc_latency_ops = {
	.set = xnc_latency_set,
	.get = param_get_bool,
};

module_param_cb(latency, &xnc_latency_ops, &xnc_latency, 0644);
MODULE_PARM_DESC(latency, "1: time every resolution: a per-namespace latency histogram, and ns in the xnc_lookup trace event (default 0)");

/* Nonzero buckets as "from_ns to_ns count", e.g. "1024 2047 310". */
static int xnc_latency_show(struct seq_file *seq, void *v)
{
	struct xnc_net *xn = xnc_net(seq_file_single_net(seq));
	struct xnc_pcpu_hist __percpu *hist;
	u64 sum[XNC_LAT_BUCKETS] = {};
	int cpu, i;

	rcu_read_lock();
	hist = READ_ONCE(xn->hist);
	for_each_possible_cpu(cpu) {
		const struct xnc_pcpu_hist *h;

		if (!hist)
			break;
		h = per_cpu_ptr(hist, cpu);
		for (i = 0; i < XNC_LAT_BUCKETS; i++)
			sum[i] += READ_ONCE(h->b[i]);
	}
	rcu_read_unlock();
	seq_printf(seq, "latency %s\n", READ_ONCE(xnc_latency) ? "on" : "off");
	seq_puts(seq, "from_ns\tto_ns\tcount\n");
	for (i = 0; i < XNC_LAT_BUCKETS; i++)
		if (sum[i])
			seq_printf(seq, "%llu\t%llu\t%llu\n", 1ULL << i,
				   (2ULL << i) - 1, sum[i]);
	return 0;
}

static int __net_init xnc_net_init(struct net *net)
{
	struct xnc_net *xn = xnc_net(net);

	xn->stats = alloc_percpu(struct xnc_pcpu_stats);
	if (!xn->stats)
		return -ENOMEM;
	mutex_lock(&xnc_nets_lock);
	if (READ_ONCE(xnc_latency)) {
		xn->hist = alloc_percpu(struct xnc_pcpu_hist);
		if (!xn->hist) {
			mutex_unlock(&xnc_nets_lock);
			free_percpu(xn->stats);
			return -ENOMEM;
		}
	}
	list_add(&xn->node, &xnc_nets);
	mutex_unlock(&xnc_nets_lock);
	if (!proc_create_net_single("xfrm_nocache", 0444, net->proc_net,
				    xnc_stats_show, NULL))
		goto fail;
	if (!proc_create_net_single("xfrm_nocache_latency", 0444,
				    net->proc_net, xnc_latency_show, NULL)) {
		remove_proc_entry("xfrm_nocache", net->proc_net);
		goto fail;
	}
	xn->stats_live = xn->stats;
	xnc_sub_net_init(net);
	return 0;

fail:
	mutex_lock(&xnc_nets_lock);
	list_del(&xn->node);
	mutex_unlock(&xnc_nets_lock);
	free_percpu(xn->hist);
	free_percpu(xn->stats);
	return -ENOMEM;
}

static void __net_exit xnc_net_exit(struct net *net)
{
	struct xnc_net *xn = xnc_net(net);

	/* latency switches leave its histogram alone from now on */
	mutex_lock(&xnc_nets_lock);
	list_del(&xn->node);
	mutex_unlock(&xnc_nets_lock);
	xnc_sub_net_exit(net);
	remove_proc_entry("xfrm_nocache_latency", net->proc_net);
	remove_proc_entry("xfrm_nocache", net->proc_net);
}

static void __net_exit xnc_net_exit_batch(struct list_head *net_list)
{
	struct net *net;

	list_for_each_entry(net, net_list, exit_list) {
		WRITE_ONCE(xnc_net(net)->stats_live, NULL);
		WRITE_ONCE(xnc_net(net)->hist_old, xnc_net(net)->hist);
		WRITE_ONCE(xnc_net(net)->hist, NULL);
	}
	synchronize_rcu();
	list_for_each_entry(net, net_list, exit_list) {
		xnc_sub_net_release(net);
		free_percpu(xnc_net(net)->hist_old);
		free_percpu(xnc_net(net)->stats);
	}
}

static struct pernet_operations xnc_net_ops = {
	.init = xnc_net_init,
	.exit = xnc_net_exit,
	.exit_batch = xnc_net_exit_batch,
	.id = &xnc_net_id,
	.size = sizeof(struct xnc_net),
};

int xnc_stats_init(void)
{
	return register_pernet_subsys(&xnc_net_ops);
}

void xnc_stats_exit(void)
{
	unregister_pernet_subsys(&xnc_net_ops);
}
