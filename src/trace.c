// SPDX-License-Identifier: GPL-2.0
/*
 * Instantiate the tracepoints declared in xnc_trace.h, and register their
 * events ourselves.
 *
 * The module loader refuses to create trace events for a module carrying
 * any taint but O/C/E, and a livepatch module always carries K
 * (trace_module_has_bad_taint(): "module has bad taint, not creating trace
 * events").  The tracepoints themselves work: their static keys live in
 * our own jump table.  So we add the event calls by hand, owned by this
 * module: an enabled event then holds a module reference, and rmmod waits
 * until it is disabled.
 *
 * Adding and removing event calls requires the tracing core's event_mutex
 * (not exported; ksyms.c resolves it), as the kprobe events hold it: without
 * it a concurrent enable or a tracefs reader could see a half-registered
 * event (lockdep reports the missing lock on a debug kernel).
 */
#include <linux/mutex.h>

#define CREATE_TRACE_POINTS
#include "xnc_trace.h"
#include "xfrm_nocache.h"

static struct trace_event_call *xnc_events[] = {
	&event_xnc_lookup,
	&event_xnc_flush,
};

int xnc_trace_init(void)
{
	int i, err = 0;

	mutex_lock(xnc_k.event_mutex);
	for (i = 0; i < ARRAY_SIZE(xnc_events); i++) {
		err = trace_add_event_call(xnc_events[i]);
		if (err) {
			while (--i >= 0)
				trace_remove_event_call(xnc_events[i]);
			break;
		}
		/* registration clears it; it makes an enabled event pin us */
		xnc_events[i]->module = THIS_MODULE;
	}
	mutex_unlock(xnc_k.event_mutex);
	return err;
}

void xnc_trace_exit(void)
{
	int i;

	mutex_lock(xnc_k.event_mutex);
	for (i = ARRAY_SIZE(xnc_events) - 1; i >= 0; i--)
		trace_remove_event_call(xnc_events[i]);
	mutex_unlock(xnc_k.event_mutex);
}
