// SPDX-License-Identifier: BSD-2-Clause
/* What the exporters show of GPU records: see gpu_events.h. */
#include "gpu_activity.h"
#include "model/model.h"
#include "trace/gpu_events.h"

int gpu_on_track(const struct model_event *ev)
{
	return ev->kind == EV_KERNEL || ev->kind == EV_MEMCPY || ev->kind == EV_MEMSET;
}

int gpu_wait_event(const struct model_event *ev)
{
	return ev->kind == EV_GPU_SYNC && ev->gpu_kind == GA_SYNC_STREAM_WAIT_EVENT;
}

int gpu_has_track(const struct model_event *ev)
{
	return gpu_on_track(ev) || ev->kind == EV_MEMORY || gpu_wait_event(ev);
}
