// SPDX-License-Identifier: GPL-2.0
/*
 * Is the running kernel the one this module was checked against?
 *
 * The release: its Debian source version must be one scripts/kernel.record
 * lists, whose sources `make drift` compared with what we copy and bind.
 * Otherwise refuse (unchecked=1 loads anyway): stock is uncached too, so
 * a refusal costs the counters, not traffic.
 *
 * The interface: every function we replace, call through a livepatch
 * relocation or probe must have, in the kernel's own BTF, the prototype we
 * were compiled with (xfrm_nocache.h), and every structure we read the
 * size and member offsets our headers gave.  The BTF functions themselves
 * are checked against this kernel's headers when we are compiled.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/livepatch.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/trace_events.h>
#include <linux/utsname.h>
#include <net/dst.h>
#include <net/ip6_fib.h>
#include <net/xfrm.h>

#include "xfrm_nocache.h"
#include "xnc_record.h"

bool xnc_unchecked;
module_param_named(unchecked, xnc_unchecked, bool, 0444);
MODULE_PARM_DESC(unchecked,
		 "Load on a Debian kernel release the module was not checked against");

/* ours, as this kernel's headers declare them */
static_assert(__builtin_types_compatible_p(typeof(xnc_bpf_get_btf_vmlinux),
					   typeof(bpf_get_btf_vmlinux)));
static_assert(__builtin_types_compatible_p(typeof(xnc_btf_find_by_name_kind),
					   typeof(btf_find_by_name_kind)));
static_assert(__builtin_types_compatible_p(typeof(xnc_btf_name_by_offset),
					   typeof(btf_name_by_offset)));

#ifdef XNC_TEST_NO_RELEASE
/* test builds only: checked against no release there is (t-02-refusals) */
static const char * const xnc_releases[] = { "6.0.0-0" };
#else
static const char * const xnc_releases[] = { XNC_RECORD_RELEASES };
#endif

/* the Debian source version in "... Debian 7.3.4-1~bpo13+1 (2026-11-15)" */
static bool xnc_release(char *buf, size_t size)
{
	const char *v = strstr(init_utsname()->version, "Debian ");
	size_t n;

	if (!v)
		return false;
	v += strlen("Debian ");
	n = strcspn(v, " ");
	if (!n || n >= size)
		return false;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return true;
}

int xnc_verify_release(void)
{
	char rel[64];
	int i;

	if (!xnc_release(rel, sizeof(rel))) {
		if (xnc_unchecked) {
			pr_warn("kernel '%s' names no Debian release: loading unchecked (unchecked=1)\n",
				init_utsname()->version);
			return 0;
		}
		pr_err("kernel '%s' names no Debian release, so none this module was checked against; load with unchecked=1 to run it anyway\n",
		       init_utsname()->version);
		return -EPERM;
	}
	for (i = 0; i < ARRAY_SIZE(xnc_releases); i++)
		if (!strcmp(rel, xnc_releases[i]))
			return 0;
	if (xnc_unchecked) {
		pr_warn("Debian kernel %s was not checked against this module (newest checked: %s): loading unchecked (unchecked=1)\n",
			rel, xnc_releases[ARRAY_SIZE(xnc_releases) - 1]);
		return 0;
	}
	pr_err("Debian kernel %s was not checked against this module (newest checked: %s); stock lookups stay: update xfrm_nocache, or load with unchecked=1 to run it anyway\n",
	       rel, xnc_releases[ARRAY_SIZE(xnc_releases) - 1]);
	return -EPERM;
}

/* A prototype as C writes it, compared with the spaces C needs only. */
struct xnc_proto {
	const char *name;
	const char *ret;
	const char *params[8];	/* NULL-terminated */
};

/*
 * What xfrm_nocache.h and xnc_compat.h declare, and the exported function
 * subpol.c probes; make drift keeps these as those declarations and as
 * scripts/kernel.record's prototypes.
 */
static const struct xnc_proto xnc_protos[] = {
	{ "xfrm_lookup_with_ifid", "struct dst_entry *",
	  { "struct net *net", "struct dst_entry *dst_orig",
	    "const struct flowi *fl", "const struct sock *sk", "int flags",
	    "u32 if_id" } },
	{ "xfrm_sk_policy_lookup", "struct xfrm_policy *",
	  { "const struct sock *sk", "int dir", "const struct flowi *fl",
	    "u16 family", "u32 if_id" } },
	{ "xfrm_policy_lookup_bytype", "struct xfrm_policy *",
	  { "struct net *net", "u8 type", "const struct flowi *fl",
	    "u16 family", "u8 dir", "u32 if_id" } },
	{ "xfrm_resolve_and_create_bundle", "struct xfrm_dst *",
	  { "struct xfrm_policy **pols", "int num_pols",
	    "const struct flowi *fl", "u16 family",
	    "struct dst_entry *dst_orig" } },
	{ "xdst_queue_output", "int",
	  { "struct net *net", "struct sock *sk", "struct sk_buff *skb" } },
#if LINUX_VERSION_MAJOR == 6 && LINUX_VERSION_PATCHLEVEL == 1
	{ "kallsyms_on_each_symbol", "int",
	  { "int (*fn)(void *, const char *, struct module *, unsigned long)",
	    "void *data" } },
#else
	{ "kallsyms_on_each_symbol", "int",
	  { "int (*fn)(void *, const char *, unsigned long)", "void *data" } },
#endif
	{ "xfrm_policy_insert", "int",
#ifndef XNC_TEST_BAD_PROTO
	  { "int dir", "struct xfrm_policy *policy", "int excl" } },
#else
	  /* test builds only: a prototype no kernel has (t-02-refusals) */
	  { "int dir", "struct xfrm_policy *policy", "long excl" } },
#endif
};

#define XNC_TEXT	256

struct xnc_btf {
	const struct btf *btf;
	char *tmp;		/* XNC_TEXT, scratch for the renderer */
};

static const struct btf_type *xnc_type(const struct xnc_btf *b, u32 id)
{
	return id ? btf_type_by_id(b->btf, id) : NULL;
}

static const char *xnc_name(const struct xnc_btf *b, u32 off)
{
	return xnc_btf_name_by_offset(b->btf, off);
}

/* DWARF's names of C's integer types, as the kernel's sources spell them */
static const char *xnc_int_name(const char *n)
{
	static const char * const map[][2] = {
		{ "long unsigned int", "unsigned long" },
		{ "long int", "long" },
		{ "long long unsigned int", "unsigned long long" },
		{ "long long int", "long long" },
		{ "short unsigned int", "unsigned short" },
		{ "short int", "short" },
		{ "_Bool", "bool" },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (!strcmp(n, map[i][0]))
			return map[i][1];
	return n;
}

static int xnc_render(const struct xnc_btf *b, u32 id, const char *inner,
		      char *out, size_t size, int depth);

/* a parameter list: "(int dir, struct sock *sk)" into @out */
static int xnc_render_params(const struct xnc_btf *b,
			     const struct btf_type *proto, char *out,
			     size_t size, int depth)
{
	const struct btf_param *p = btf_params(proto);
	u32 i, n = btf_type_vlen(proto);
	size_t len = scnprintf(out, size, "(");
	int err;

	if (!n)
		len += scnprintf(out + len, size - len, "void");
	for (i = 0; i < n; i++) {
		if (i)
			len += scnprintf(out + len, size - len, ", ");
		if (!p[i].type) {
			len += scnprintf(out + len, size - len, "...");
			continue;
		}
		err = xnc_render(b, p[i].type, xnc_name(b, p[i].name_off),
				 out + len, size - len, depth + 1);
		if (err)
			return err;
		len += strlen(out + len);
	}
	len += scnprintf(out + len, size - len, ")");
	return len + 1 < size ? 0 : -E2BIG;
}

/*
 * Type @id declaring @inner (a name, or what declares it: "*name"), as C
 * writes it, into @out.
 */
static int xnc_render(const struct xnc_btf *b, u32 id, const char *inner,
		      char *out, size_t size, int depth)
{
	const struct btf_type *t = xnc_type(b, id);
	const char *sep = *inner ? " " : "";
	char *next;
	int err;

	if (depth > 8)
		return -ELOOP;
	if (!t) {
		snprintf(out, size, "void%s%s", sep, inner);
		return 0;
	}
	switch (btf_kind(t)) {
	case BTF_KIND_INT:
		snprintf(out, size, "%s%s%s",
			 xnc_int_name(xnc_name(b, t->name_off)), sep, inner);
		return 0;
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_FLOAT:
		snprintf(out, size, "%s%s%s", xnc_name(b, t->name_off), sep,
			 inner);
		return 0;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
	case BTF_KIND_FWD:
		snprintf(out, size, "%s %s%s%s",
			 btf_kind(t) == BTF_KIND_UNION ||
			 (btf_kind(t) == BTF_KIND_FWD && btf_type_kflag(t)) ?
			 "union" : btf_is_any_enum(t) ? "enum" : "struct",
			 xnc_name(b, t->name_off), sep, inner);
		return 0;
	case BTF_KIND_CONST:
	case BTF_KIND_VOLATILE: {
		const char *q = btf_kind(t) == BTF_KIND_CONST ? "const" :
								"volatile";
		const struct btf_type *to = xnc_type(b, t->type);

		next = kmalloc(XNC_TEXT, GFP_KERNEL);
		if (!next)
			return -ENOMEM;
		if (to && btf_kind(to) == BTF_KIND_PTR) {
			/* a constant pointer: "char *const p" */
			snprintf(next, XNC_TEXT, "%s%s%s", q, sep, inner);
			err = xnc_render(b, t->type, next, out, size,
					 depth + 1);
		} else {
			err = xnc_render(b, t->type, inner, next, XNC_TEXT,
					 depth + 1);
			if (!err)
				snprintf(out, size, "%s %s", q, next);
		}
		kfree(next);
		return err;
	}
	case BTF_KIND_PTR: {
		const struct btf_type *to = xnc_type(b, t->type);

		next = kmalloc(XNC_TEXT, GFP_KERNEL);
		if (!next)
			return -ENOMEM;
		if (to && btf_kind(to) == BTF_KIND_FUNC_PROTO) {
			/* a function pointer: "int (*fn)(void *)" */
			size_t len = snprintf(next, XNC_TEXT, "(*%s)", inner);

			err = xnc_render_params(b, to, next + len,
						XNC_TEXT - len, depth);
			if (!err)
				err = xnc_render(b, to->type, next, out, size,
						 depth + 1);
		} else {
			snprintf(next, XNC_TEXT, "*%s", inner);
			err = xnc_render(b, t->type, next, out, size,
					 depth + 1);
		}
		kfree(next);
		return err;
	}
	default:
		/* arrays and the rest: no prototype of ours has one */
		snprintf(out, size, "<BTF kind %u>%s%s", btf_kind(t), sep,
			 inner);
		return 0;
	}
}

static bool xnc_ident(char c)
{
	return isalnum(c) || c == '_';
}

/* @s[i] is a space C needs: between two identifiers or keywords */
static bool xnc_space_counts(const char *s, size_t i)
{
	return i && xnc_ident(s[i - 1]) && xnc_ident(s[i + 1]);
}

/* the same text, but for spaces next to punctuation? */
static bool xnc_same_text(const char *a, const char *b)
{
	size_t i = 0, j = 0;

	for (;;) {
		while (a[i] == ' ' && !xnc_space_counts(a, i))
			i++;
		while (b[j] == ' ' && !xnc_space_counts(b, j))
			j++;
		if (a[i] != b[j])
			return false;
		if (!a[i])
			return true;
		i++;
		j++;
	}
}

static int xnc_check_proto(const struct xnc_btf *b, const struct xnc_proto *p,
			   char *text)
{
	const struct btf_type *func, *proto;
	size_t len;
	char *ours;
	int i, err;
	s32 id;

	id = xnc_btf_find_by_name_kind(b->btf, p->name, BTF_KIND_FUNC);
	if (id < 0) {
		pr_err("%s() is not in this kernel's BTF: its prototype cannot be checked; refusing to load\n",
		       p->name);
		return -ENOEXEC;
	}
	func = xnc_type(b, id);
	proto = xnc_type(b, func->type);
	if (!proto || btf_kind(proto) != BTF_KIND_FUNC_PROTO)
		return -ENOEXEC;
	snprintf(b->tmp, XNC_TEXT, "%s", p->name);
	err = xnc_render_params(b, proto, b->tmp + strlen(b->tmp),
				XNC_TEXT - strlen(b->tmp), 0);
	if (!err)
		err = xnc_render(b, proto->type, b->tmp, text, XNC_TEXT, 0);
	if (err) {
		pr_err("cannot render %s() from this kernel's BTF (%d); refusing to load\n",
		       p->name, err);
		return -ENOEXEC;
	}
	ours = b->tmp;
	len = scnprintf(ours, XNC_TEXT, "%s %s(", p->ret, p->name);
	for (i = 0; i < ARRAY_SIZE(p->params) && p->params[i]; i++)
		len += scnprintf(ours + len, XNC_TEXT - len, "%s%s",
				 i ? ", " : "", p->params[i]);
	scnprintf(ours + len, XNC_TEXT - len, "%s)", i ? "" : "void");
	if (xnc_same_text(text, ours))
		return 0;
	pr_err("%s(): this kernel declares '%s', the module was built for '%s'; refusing to load\n",
	       p->name, text, ours);
	return -ENOEXEC;
}

/* A structure we read: its size, and where each member we read is. */
struct xnc_layout {
	const char *type;
	const char *member;	/* "a.b": member b of member a */
	size_t size;
	size_t offset;
};

#define XNC_LAYOUT(type, m)						\
	{ #type, #m, sizeof(struct type), offsetof(struct type, m) }

static const struct xnc_layout xnc_layouts[] = {
	XNC_LAYOUT(xfrm_policy, walk),
	XNC_LAYOUT(xfrm_policy, if_id),
	XNC_LAYOUT(xfrm_policy, index),
	XNC_LAYOUT(xfrm_policy, curlft.use_time),
	XNC_LAYOUT(xfrm_policy, family),
	XNC_LAYOUT(xfrm_policy, type),
	XNC_LAYOUT(xfrm_policy, action),
	XNC_LAYOUT(xfrm_policy, flags),
	XNC_LAYOUT(xfrm_policy, xfrm_nr),
#ifdef XNC_POLICY_OFFLOAD
	XNC_LAYOUT(xfrm_policy, xdo.dev),
#endif
	XNC_LAYOUT(xfrm_state, props.mode),
	XNC_LAYOUT(xfrm_state, xso.dev),
	XNC_LAYOUT(xfrm_dst, u.dst),
	XNC_LAYOUT(xfrm_dst, route),
	XNC_LAYOUT(xfrm_dst, child),
	XNC_LAYOUT(xfrm_dst, path),
	XNC_LAYOUT(xfrm_dst, pols),
	XNC_LAYOUT(xfrm_dst, num_pols),
	XNC_LAYOUT(xfrm_dst, num_xfrms),
	XNC_LAYOUT(xfrm_dst, path_cookie),
	XNC_LAYOUT(dst_entry, dev),
	XNC_LAYOUT(dst_entry, ops),
	XNC_LAYOUT(dst_entry, output),
	XNC_LAYOUT(dst_entry, xfrm),
	XNC_LAYOUT(dst_entry, flags),
	XNC_LAYOUT(dst_entry, obsolete),
	XNC_LAYOUT(dst_entry, lastuse),
	XNC_LAYOUT(net, xfrm),
	XNC_LAYOUT(sock, sk_policy),
	XNC_LAYOUT(net_device, flags),
	XNC_LAYOUT(dst_ops, family),
	XNC_LAYOUT(rt6_info, rt6i_nfheader_len),
	XNC_LAYOUT(km_event, data),
	XNC_LAYOUT(km_event, event),
	XNC_LAYOUT(km_event, net),
	XNC_LAYOUT(trace_event_call, event),
	XNC_LAYOUT(trace_event_call, module),
	XNC_LAYOUT(netns_xfrm, policy_count),
	XNC_LAYOUT(netns_xfrm, policy_default),
	XNC_LAYOUT(netns_xfrm, sysctl_larval_drop),
	XNC_LAYOUT(netns_xfrm, xfrm4_dst_ops),
	XNC_LAYOUT(netns_xfrm, xfrm6_dst_ops),
	XNC_LAYOUT(xfrm_policy_afinfo, fill_dst),
	XNC_LAYOUT(klp_patch, list),
	XNC_LAYOUT(klp_patch, mod),
	XNC_LAYOUT(klp_patch, obj_list),
	XNC_LAYOUT(klp_patch, enabled),
	XNC_LAYOUT(klp_object, name),
	XNC_LAYOUT(klp_object, func_list),
	XNC_LAYOUT(klp_object, node),
	XNC_LAYOUT(klp_func, old_name),
	XNC_LAYOUT(klp_func, node),
	XNC_LAYOUT(klp_func, nop),
};

/* the type behind typedefs and qualifiers */
static const struct btf_type *xnc_resolve(const struct xnc_btf *b, u32 id)
{
	const struct btf_type *t = xnc_type(b, id);
	int i;

	for (i = 0; t && i < 16; i++) {
		switch (btf_kind(t)) {
		case BTF_KIND_TYPEDEF:
		case BTF_KIND_CONST:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			t = xnc_type(b, t->type);
			break;
		default:
			return t;
		}
	}
	return NULL;
}

/*
 * Bit offset of member @name (up to @len characters) of struct or union
 * @t, looking inside its anonymous members too; -1 if it has none.
 */
static long xnc_member(const struct xnc_btf *b, const struct btf_type *t,
		       const char *name, size_t len, u32 *type, int depth)
{
	const struct btf_member *m = btf_members(t);
	u32 i, n = btf_type_vlen(t);
	const struct btf_type *inner;
	const char *mname;
	long off;

	if (depth > 8)
		return -1;
	for (i = 0; i < n; i++) {
		mname = xnc_name(b, m[i].name_off);
		if (*mname) {
			if (strlen(mname) == len && !strncmp(mname, name, len)) {
				*type = m[i].type;
				return __btf_member_bit_offset(t, &m[i]);
			}
			continue;
		}
		inner = xnc_resolve(b, m[i].type);
		if (!inner || !btf_is_composite(inner))
			continue;
		off = xnc_member(b, inner, name, len, type, depth + 1);
		if (off >= 0)
			return __btf_member_bit_offset(t, &m[i]) + off;
	}
	return -1;
}

/* struct @l->type, its size checked, or NULL after saying why not */
static const struct btf_type *xnc_struct(const struct xnc_btf *b,
					 const struct xnc_layout *l)
{
	const struct btf_type *t;
	s32 id;

	id = xnc_btf_find_by_name_kind(b->btf, l->type, BTF_KIND_STRUCT);
	t = id < 0 ? NULL : xnc_type(b, id);
	if (!t) {
		pr_err("struct %s is not in this kernel's BTF: its layout cannot be checked; refusing to load\n",
		       l->type);
		return NULL;
	}
	if (t->size != l->size) {
		pr_err("struct %s: %u bytes in this kernel, %zu in the headers the module was built with; refusing to load\n",
		       l->type, t->size, l->size);
		return NULL;
	}
	return t;
}

static int xnc_check_member(const struct xnc_btf *b, const struct btf_type *t,
			    const struct xnc_layout *l)
{
	const char *path = l->member;
	long bits = 0, off;
	u32 type;

	for (;;) {
		size_t len = strcspn(path, ".");

		off = t ? xnc_member(b, t, path, len, &type, 0) : -1;
		if (off < 0) {
			pr_err("struct %s has no member %s in this kernel's BTF; refusing to load\n",
			       l->type, l->member);
			return -ENOEXEC;
		}
		bits += off;
		if (!path[len])
			break;
		path += len + 1;
		t = xnc_resolve(b, type);
		if (t && !btf_is_composite(t))
			t = NULL;
	}
	if (bits != l->offset * BITS_PER_BYTE) {
		pr_err("struct %s: %s at byte %ld in this kernel, %zu in the headers the module was built with; refusing to load\n",
		       l->type, l->member, bits / BITS_PER_BYTE, l->offset);
		return -ENOEXEC;
	}
	return 0;
}

int xnc_verify_btf(void)
{
	const struct btf_type *t = NULL;
	struct xnc_btf b = {};
	struct btf *btf;
	char *text;
	int i, err = 0;

	btf = xnc_bpf_get_btf_vmlinux();
	if (IS_ERR_OR_NULL(btf)) {
		pr_err("this kernel has no BTF (CONFIG_DEBUG_INFO_BTF): prototypes cannot be checked; refusing to load\n");
		return -ENOEXEC;
	}
	b.btf = btf;
	b.tmp = kmalloc(2 * XNC_TEXT, GFP_KERNEL);
	if (!b.tmp)
		return -ENOMEM;
	text = b.tmp + XNC_TEXT;
	for (i = 0; !err && i < ARRAY_SIZE(xnc_protos); i++)
		err = xnc_check_proto(&b, &xnc_protos[i], text);
	for (i = 0; !err && i < ARRAY_SIZE(xnc_layouts); i++) {
		/* the entries of one structure are together: one search */
		if (!i || strcmp(xnc_layouts[i].type, xnc_layouts[i - 1].type))
			t = xnc_struct(&b, &xnc_layouts[i]);
		err = t ? xnc_check_member(&b, t, &xnc_layouts[i]) : -ENOEXEC;
	}
	kfree(b.tmp);
	return err;
}
