// SPDX-License-Identifier: GPL-2.0
/*
 * Resolve the non-exported kernel symbols we call, once, at load.
 *
 * kallsyms_lookup_name() itself is not exported since 5.7; a kprobe on it
 * hands us its address.  Every symbol is looked up before any is used, and
 * the load fails (-ENOENT) naming each one that is missing, so we never run
 * with half a table.  A symbol must resolve to the start of a function of
 * exactly that name: GCC clones (".constprop.0", ".isra.0", ".part.0") have
 * a different calling convention and are never acceptable, and kallsyms
 * does not hand them out for the plain name; we check anyway, since calling
 * the wrong code through a pointer cannot be caught later.
 *
 * Calling static kernel functions through pointers needs a kernel without
 * IBT (endbr64 is only emitted for address-taken functions): refuse to
 * build otherwise.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/string.h>

#include "xfrm_nocache.h"

#ifdef CONFIG_X86_KERNEL_IBT
#error "xfrm_nocache calls static kernel functions by pointer: needs CONFIG_X86_KERNEL_IBT off"
#endif

struct xnc_ksyms xnc_k __read_mostly;

static char *extra_symbol;
module_param(extra_symbol, charp, 0);
MODULE_PARM_DESC(extra_symbol,
		 "test only: also require this symbol at load (simulates a kernel lacking one)");

struct xnc_ksym {
	const char *name;
	void **slot;
	bool data;
};

#define XNC_FN(n, f)	{ .name = n, .slot = (void **)&xnc_k.f }
#define XNC_DATA(n, f)	{ .name = n, .slot = (void **)&xnc_k.f, .data = true }

static const struct xnc_ksym xnc_ksym_table[] = {
	XNC_FN("xfrm_sk_policy_lookup", sk_policy_lookup),
	XNC_FN("xfrm_policy_lookup_bytype", policy_lookup_bytype),
	XNC_FN("xfrm_resolve_and_create_bundle", resolve_and_create_bundle),
	XNC_FN("xdst_queue_output", queue_output),
	XNC_DATA("xfrm_policy_afinfo", policy_afinfo),
	XNC_DATA("klp_patches", klp_patches),
	XNC_DATA("klp_mutex", klp_mutex),
	XNC_DATA("event_mutex", event_mutex),
};

typedef unsigned long (*xnc_lookup_name_t)(const char *name);

static xnc_lookup_name_t xnc_get_lookup_name(void)
{
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };
	xnc_lookup_name_t fn;

	if (register_kprobe(&kp) < 0)
		return NULL;
	fn = (xnc_lookup_name_t)kp.addr;
	unregister_kprobe(&kp);
	return fn;
}

/* The address must be the first byte of a symbol called exactly @name. */
static bool xnc_exact(unsigned long addr, const char *name)
{
	char buf[KSYM_SYMBOL_LEN];

	sprint_symbol(buf, addr);
	/* "name+0x0/0x..." */
	return !strncmp(buf, name, strlen(name)) &&
	       !strncmp(buf + strlen(name), "+0x0/", 5);
}

static int xnc_resolve_one(xnc_lookup_name_t lookup, const char *name,
			   void **slot, bool data)
{
	unsigned long addr = lookup(name);

	if (!addr) {
		pr_err("required kernel symbol '%s' not found\n", name);
		return -ENOENT;
	}
	if (!data && !xnc_exact(addr, name)) {
		pr_err("kernel symbol '%s' resolves to %pS, not a plain function of that name\n",
		       name, (void *)addr);
		return -ENOENT;
	}
	if (slot)
		*slot = (void *)addr;
	return 0;
}

int xnc_ksyms_resolve(void)
{
	xnc_lookup_name_t lookup = xnc_get_lookup_name();
	int i, err = 0;

	if (!lookup) {
		pr_err("cannot find kallsyms_lookup_name (needs CONFIG_KPROBES)\n");
		return -ENOENT;
	}

	for (i = 0; i < ARRAY_SIZE(xnc_ksym_table); i++) {
		const struct xnc_ksym *s = &xnc_ksym_table[i];

		if (xnc_resolve_one(lookup, s->name, s->slot, s->data))
			err = -ENOENT;
	}
	if (extra_symbol && xnc_resolve_one(lookup, extra_symbol, NULL, false))
		err = -ENOENT;

	if (err) {
		memset(&xnc_k, 0, sizeof(xnc_k));
		pr_err("refusing to load: this kernel lacks symbols listed above\n");
	}
	return err;
}
