/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The reference build's (bench/ref/pcpu_ref.c) links into the shipped
 * sources, included first in each of them by bench/pcpu-ref-tree.sh.
 */
#ifndef _XNC_PCPU_REF_H
#define _XNC_PCPU_REF_H

#include <linux/types.h>

struct xfrm_dst;
struct xfrm_policy;
struct dst_entry;
struct flowi;

/* every bundle creation of src/lookup.c, through the per-CPU cache */
struct xfrm_dst *xnc_ref_bundle(struct xfrm_policy **pols, int num_pols,
				const struct flowi *fl, u16 family,
				struct dst_entry *dst_orig);

/* src/main.c's, called from the reference module's own */
int xnc_init(void);
void xnc_exit(void);

#endif /* _XNC_PCPU_REF_H */
