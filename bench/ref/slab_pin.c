// SPDX-License-Identifier: GPL-2.0
/*
 * xnc_slab_pin: a benchmark control, never shipped.  It holds @count
 * kmalloc() objects of @size bytes from load to unload and does nothing
 * else, so that "pinN" in make bench runs stock's own lookup with N more
 * objects in one kmalloc cache, as loading any module leaves some there
 * (its sysfs section attributes; a livepatch module's copy of its ELF
 * headers).  docs/testing.md, "Real-time kernels", says what it showed.
 */
#include <linux/module.h>
#include <linux/slab.h>

#define XNC_PIN_MAX	64

static unsigned int count = 1;
module_param(count, uint, 0444);
MODULE_PARM_DESC(count, "objects to hold (0-64)");

static unsigned int size = 1024;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "bytes of each (1-4096)");

static void *pinned[XNC_PIN_MAX];

static void xnc_pin_release(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pinned); i++) {
		kfree(pinned[i]);
		pinned[i] = NULL;
	}
}

static int __init xnc_pin_init(void)
{
	unsigned int i;

	if (count > XNC_PIN_MAX || !size || size > PAGE_SIZE) {
		pr_err("xnc_slab_pin: count must be 0-%d and size 1-%lu\n",
		       XNC_PIN_MAX, PAGE_SIZE);
		return -EINVAL;
	}
	for (i = 0; i < count; i++) {
		pinned[i] = kmalloc(size, GFP_KERNEL);
		if (!pinned[i]) {
			xnc_pin_release();
			return -ENOMEM;
		}
	}
	return 0;
}

static void __exit xnc_pin_exit(void)
{
	xnc_pin_release();
}

module_init(xnc_pin_init);
module_exit(xnc_pin_exit);
MODULE_DESCRIPTION("xfrm_nocache benchmark control: holds kmalloc objects");
MODULE_LICENSE("GPL");
