// SPDX-License-Identifier: GPL-2.0
/* Instantiate the tracepoints declared in xnc_trace.h. */
#define CREATE_TRACE_POINTS
#include "xnc_trace.h"
