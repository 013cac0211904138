// SPDX-License-Identifier: GPL-2.0
/*
 * Refuse to load on top of another livepatch of xfrm_lookup_with_ifid().
 *
 * Livepatches of one function stack: the patch enabled last is the one
 * every caller runs, the others stay loaded, enabled in sysfs, and are
 * never called.  Stacking ours on another patch of the same function would
 * silently hide that one (whatever it does, and whatever it counts, stops
 * without a word), and whoever reads our counters or theirs would be told
 * a story that is not true of one of them.  So at load, before our patch
 * exists, we walk the kernel's list of livepatches and fail with -EBUSY,
 * naming the module, when an enabled one other than ours replaces the
 * function we replace.
 *
 * The list and its mutex are not exported (kernel/livepatch/core.c):
 * they are bound like the functions we call (klp.c).  The walk uses only
 * the public layout of struct klp_patch/klp_object/klp_func and holds
 * klp_mutex, which serializes every change to the list.  Functions of
 * module objects cannot be ours (xfrm is built into vmlinux here), and
 * "nop" functions of an atomic-replace patch restore the original code,
 * so neither counts as a conflict.
 *
 * What this cannot see: a patch whose transition to disabled is still in
 * progress (enabled is already false; klp_enable_patch() then fails with
 * -EBUSY by itself), and another livepatch module loading in the few
 * instructions between our check and our klp_enable_patch() (the lock
 * cannot be held across it: klp_enable_patch() takes it).  A patch loaded
 * after ours follows the usual stacking rule, see README.md.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/livepatch.h>
#include <linux/mutex.h>
#include <linux/string.h>

#include "xfrm_nocache.h"

static bool xnc_patch_replaces(struct klp_patch *patch, const char *name)
{
	struct klp_object *obj;
	struct klp_func *func;

	klp_for_each_object(patch, obj) {
		if (obj->name)
			continue;
		klp_for_each_func(obj, func) {
			if (!func->nop && func->old_name &&
			    !strcmp(func->old_name, name))
				return true;
		}
	}
	return false;
}

int xnc_refuse_stacking(struct klp_patch *ours, const char *name)
{
	struct klp_patch *patch;
	int err = 0;

	mutex_lock(&xnc_klp_mutex);
	list_for_each_entry(patch, &xnc_klp_patches, list) {
		if (patch == ours || !patch->enabled ||
		    !xnc_patch_replaces(patch, name))
			continue;
		pr_err("livepatch '%s' already replaces %s(): refusing to load on top of it (disable it first)\n",
		       patch->mod ? patch->mod->name : "?", name);
		err = -EBUSY;
		break;
	}
	mutex_unlock(&xnc_klp_mutex);
	return err;
}
