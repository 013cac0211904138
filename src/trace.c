// SPDX-License-Identifier: GPL-2.0
/*
 * Instantiate the tracepoints declared in xnc_trace.h, and make sure their
 * events exist.
 *
 * 6.12 creates trace events for livepatch modules like for any other.  6.1
 * does not for a module with the livepatch taint K ("module has bad taint,
 * not creating trace events"), although the tracepoints work: there we add
 * the event calls ourselves, under the tracing core's event_mutex, and
 * remove them at unload.  Whether the kernel did is read from the events
 * (their type), so they are never registered twice.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mutex.h>

#define CREATE_TRACE_POINTS
#include "xnc_trace.h"
#include "xfrm_nocache.h"

/* the outcome numbers xnc_lookup's format names (xnc_trace.h) */
static_assert(XNC_NO_POLICY == 4 && XNC_PASS == 5 && XNC_TRANSFORMED == 6 &&
	      XNC_QUEUED == 8 && XNC_BLOCKED == 9 && XNC_DEFAULT_BLOCK == 10 &&
	      XNC_NO_STATES == 11 && XNC_ICMP_REFUSED == 12 &&
	      XNC_POLICY_ERROR == 13 && XNC_BUNDLE_ERROR == 14 &&
	      XNC_ICMP_NO_POLICY == 15);

static struct trace_event_call *xnc_events[] = {
	&event_xnc_lookup,
	&event_xnc_flush,
};

#ifdef XNC_OWN_TRACE_EVENTS
/* we registered the events, and remove them at unload */
static bool xnc_events_ours;

int xnc_trace_init(void)
{
	int i, err = 0;

	/* registration gives an event its type; the kernel did it already */
	if (xnc_events[0]->event.type)
		return 0;

	mutex_lock(&xnc_event_mutex);
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
	mutex_unlock(&xnc_event_mutex);
	xnc_events_ours = !err;
	return err;
}

/*
 * Events in use at unload.  perf and event triggers (enable_event) hold a
 * reference on the event's module, so rmmod fails with EBUSY before this
 * runs.  An event enabled through tracefs (or trace-cmd) holds none: then
 * trace_remove_event_call() refuses with -EBUSY, and the kernel's module
 * notifier, which runs right after our exit for MODULE_STATE_GOING,
 * switches off and removes every event whose ->module is us and resets the
 * ring buffers, so no record of ours is left for our freed code to format.
 * That is the same handling as on 6.12, where the kernel owns our events.
 */
void xnc_trace_exit(void)
{
	int i;

	if (!xnc_events_ours)
		return;
	mutex_lock(&xnc_event_mutex);
	/* -EBUSY (enabled in tracefs) is handled as the module goes */
	for (i = ARRAY_SIZE(xnc_events) - 1; i >= 0; i--)
		trace_remove_event_call(xnc_events[i]);
	mutex_unlock(&xnc_event_mutex);
}

#else /* the kernel creates and removes our events */

int xnc_trace_init(void)
{
	if (xnc_events[0]->event.type)
		return 0;
	pr_err("the kernel created no trace events for us; refusing to load\n");
	return -ENOENT;
}

void xnc_trace_exit(void)
{
}

#endif
