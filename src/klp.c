// SPDX-License-Identifier: GPL-2.0
/*
 * Check, at load and before anything else, that the kernel internals we
 * use are bound, and that this kernel is one we can patch correctly.
 *
 * The binding itself is the livepatch core's: scripts/klp-relocs.py turned
 * every reference to the "xnc_klp." symbols of xfrm_nocache.h into a
 * livepatch relocation, and the kernel resolved and applied them while
 * loading the module, by exact name, in vmlinux only, refusing a name that
 * is missing or not unique (its message names the symbol).  Calls are
 * direct: on a kernel with IBT, objtool seals the ENDBR of every function
 * whose address is never taken, and an indirect call to one would trap.
 *
 * What is left to check here:
 *  - that the post-link step ran at all: if not, the symbols are still
 *    weak undefined ones, which the module loader resolved to 0;
 *  - that xdst_queue_output() can be the target of an indirect call: we
 *    store its address in queue bundles' dst->output, which the stack
 *    calls through.  Ours is the only new caller of that kind if the
 *    kernel itself never takes its address; then objtool sealed it and the
 *    first queued packet would trap on IBT hardware.  Sealing replaces the
 *    ENDBR with a 4-byte NOP at boot whether or not the CPU has IBT, so
 *    this is checked the same way under emulation;
 *  - that the compiler did not clone the function we replace: a
 *    ".constprop"/".isra"/".part" copy of xfrm_lookup_with_ifid() would
 *    have callers the livepatch never redirects.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/stringify.h>

#include "xfrm_nocache.h"
#include "xnc_compat.h"

/*
 * Test builds only (tests/guest/t-02-refusals.sh), never the shipped
 * module: XNC_TEST_EXTRA_SYMBOL=NAME binds one more symbol, which the
 * kernel must refuse when NAME is missing or not unique;
 * XNC_TEST_CLONE_OF=NAME looks for clones of NAME instead of the function
 * we replace, which has none on the kernels we support.
 */
#ifdef XNC_TEST_EXTRA_SYMBOL
extern int xnc_test_extra
	__asm__("xnc_klp." __stringify(XNC_TEST_EXTRA_SYMBOL)) __weak;
#endif
#ifdef XNC_TEST_CLONE_OF
#define XNC_CLONES_OF __stringify(XNC_TEST_CLONE_OF)
#else
#define XNC_CLONES_OF XNC_PATCHED_FUNC
#endif

struct xnc_klp_target {
	const char *name;
	const void *addr;
};

#define XNC_TARGET(kname, sym)	{ .name = #kname, .addr = &(sym) }

static const struct xnc_klp_target xnc_klp_targets[] = {
	XNC_TARGET(xfrm_sk_policy_lookup, xnc_xfrm_sk_policy_lookup),
	XNC_TARGET(xfrm_policy_lookup_bytype, xnc_xfrm_policy_lookup_bytype),
	XNC_TARGET(xfrm_resolve_and_create_bundle,
		   xnc_xfrm_resolve_and_create_bundle),
	XNC_TARGET(xdst_queue_output, xnc_xdst_queue_output),
	XNC_TARGET(kallsyms_on_each_symbol, xnc_kallsyms_on_each_symbol),
	XNC_TARGET(bpf_get_btf_vmlinux, xnc_bpf_get_btf_vmlinux),
	XNC_TARGET(btf_find_by_name_kind, xnc_btf_find_by_name_kind),
	XNC_TARGET(btf_name_by_offset, xnc_btf_name_by_offset),
	XNC_TARGET(xfrm_policy_afinfo, xnc_policy_afinfo),
	XNC_TARGET(klp_patches, xnc_klp_patches),
	XNC_TARGET(klp_mutex, xnc_klp_mutex),
#ifdef XNC_OWN_TRACE_EVENTS
	XNC_TARGET(event_mutex, xnc_event_mutex),
#endif
#ifdef XNC_TEST_EXTRA_SYMBOL
	{ .name = __stringify(XNC_TEST_EXTRA_SYMBOL), .addr = &xnc_test_extra },
#endif
};

static bool xnc_queue_output_callable(void)
{
#ifdef CONFIG_X86_KERNEL_IBT
	u32 insn;

	/* the ENDBR64 itself: is_endbr() would also accept the sealed NOP */
	memcpy(&insn, xnc_xdst_queue_output, sizeof(insn));
	if (insn != gen_endbr()) {
		pr_err("xdst_queue_output() has no ENDBR (sealed by IBT): queue bundles would trap; refusing to load\n");
		return false;
	}
#endif
	return true;
}

struct xnc_clone_search {
	const char *name;
	size_t len;
	bool found;
};

static int xnc_clone_cb(void *data, const char *name, XNC_KALLSYMS_MOD_ARG
			unsigned long addr)
{
	struct xnc_clone_search *s = data;

	/*
	 * NAME.constprop.0, NAME.isra.0, NAME.part.0 have callers of their
	 * own; NAME.cold is a piece of NAME itself, entered only from it.
	 */
	if (!strncmp(name, s->name, s->len) &&
	    (str_has_prefix(name + s->len, ".constprop.") ||
	     str_has_prefix(name + s->len, ".isra.") ||
	     str_has_prefix(name + s->len, ".part."))) {
		pr_err("this kernel has %s, a compiler clone of %s(): its callers cannot be patched; refusing to load\n",
		       name, s->name);
		s->found = true;
	}
	return 0;
}

int xnc_klp_check(void)
{
	struct xnc_clone_search s = { .name = XNC_CLONES_OF };
	const char *first = NULL;
	int i, unbound = 0;

	for (i = 0; i < ARRAY_SIZE(xnc_klp_targets); i++) {
		if (xnc_klp_targets[i].addr)
			continue;
		if (!unbound++)
			first = xnc_klp_targets[i].name;
	}
	if (unbound) {
		pr_err("%d kernel symbols are not bound, '%s' first: this module was built without its livepatch relocations (scripts/klp-relocs.py); build it with the project's Makefile\n",
		       unbound, first);
		return -ENOEXEC;
	}

	if (!xnc_queue_output_callable())
		return -ENOEXEC;

	s.len = strlen(s.name);
	xnc_kallsyms_on_each_symbol(xnc_clone_cb, &s);
	return s.found ? -ENOEXEC : 0;
}
