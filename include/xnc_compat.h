/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The differences between the kernel lines we build for, in one place.
 *
 * Only 6.1.x, 6.12.x and 7.3.x: src/lookup.c follows the control flow of
 * their xfrm_lookup_with_ifid(), and scripts/kernel.record holds what was
 * checked of each.  Any other line: refuse to build.  (version.h of
 * kernels before 5.11 has no LINUX_VERSION_MAJOR.)
 */
#ifndef _XNC_COMPAT_H
#define _XNC_COMPAT_H

#include <linux/compiler.h>
#include <linux/types.h>
#include <linux/version.h>
#include <linux/xfrm.h>

struct module;
struct mutex;

#if !defined(LINUX_VERSION_MAJOR) || \
	!((LINUX_VERSION_MAJOR == 6 && (LINUX_VERSION_PATCHLEVEL == 1 || \
					LINUX_VERSION_PATCHLEVEL == 12)) || \
	  (LINUX_VERSION_MAJOR == 7 && LINUX_VERSION_PATCHLEVEL == 3))
#error "xfrm_nocache supports Linux 6.1.x, 6.12.x and 7.3.x only: use the headers of one of them"
#endif

#ifdef CONFIG_X86_KERNEL_IBT
#include <asm/ibt.h>
#endif

#if LINUX_VERSION_MAJOR == 6 && LINUX_VERSION_PATCHLEVEL == 1

/* 6.1: dst_alloc() takes the initial reference count (6.7 made it 1) */
#define xnc_dst_alloc(ops, obsolete, flags) \
	dst_alloc(ops, NULL, 1, obsolete, flags)

/* 6.1: a dst's reference count is a plain atomic_t */
#define xnc_dst_refcnt(dst) atomic_read(&(dst)->__refcnt)

/* 6.1: the callback gets a module argument, always NULL for vmlinux */
#define XNC_KALLSYMS_MOD_ARG	struct module *mod,
int xnc_kallsyms_on_each_symbol(int (*fn)(void *, const char *,
					  struct module *, unsigned long),
				void *data)
	__asm__("xnc_klp.kallsyms_on_each_symbol") __weak;

/* 6.1: no packet offload, so no policy is ever bound to a device */
#define xnc_dev_policy_flush(net, dev, task_valid) (-ESRCH)

/* 6.1: __assign_str() names its source again (6.10 dropped it) */
#define xnc_assign_str(dst, src) __assign_str(dst, src)

/*
 * 6.1 does not create trace events for a module with the livepatch taint
 * (trace_module_has_bad_taint()): src/trace.c registers them itself, under
 * the tracing core's event_mutex (not exported: bound, src/klp.c).
 */
#define XNC_OWN_TRACE_EVENTS
extern struct mutex xnc_event_mutex
	__asm__("xnc_klp.event_mutex") __weak;

#else /* 6.12, 7.3 */

#define xnc_dst_alloc(ops, obsolete, flags) \
	dst_alloc(ops, NULL, obsolete, flags)

#define xnc_dst_refcnt(dst) rcuref_read(&(dst)->__rcuref)

/* policies can be offloaded (packet offload, 6.2) and flushed by device */
#define XNC_POLICY_OFFLOAD
#define xnc_dev_policy_flush xfrm_dev_policy_flush

/* the source given to __string() */
#define xnc_assign_str(dst, src) __assign_str(dst)

#define XNC_KALLSYMS_MOD_ARG
int xnc_kallsyms_on_each_symbol(int (*fn)(void *, const char *,
					  unsigned long),
				void *data)
	__asm__("xnc_klp.kallsyms_on_each_symbol") __weak;

#endif

/* The route's device, read as stock's dummy bundle reads it (RCU held). */
#if LINUX_VERSION_MAJOR >= 7
#define xnc_dst_dev_rcu(dst) dst_dev_rcu(dst)
#else
#define xnc_dst_dev_rcu(dst) ((dst)->dev)
#endif

/*
 * The modes whose bundle stock flags DST_XFRM_TUNNEL: tunnel, and from
 * 6.14 (uapi XFRM_MODE_IPTFS) IP-TFS too.
 */
static inline bool xnc_tunnel_mode(u8 mode)
{
#ifdef XFRM_MODE_IPTFS
	return mode == XFRM_MODE_TUNNEL || mode == XFRM_MODE_IPTFS;
#else
	return mode == XFRM_MODE_TUNNEL;
#endif
}

#endif /* _XNC_COMPAT_H */
