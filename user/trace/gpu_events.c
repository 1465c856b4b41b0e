// SPDX-License-Identifier: BSD-2-Clause
/* What the exporters show of GPU records: see gpu_events.h. */
#include <string.h>

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

static const char *const copy_kinds[] = {
	"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
};

const char *gpu_copy_kind(unsigned kind)
{
	return kind < sizeof(copy_kinds) / sizeof(copy_kinds[0]) ? copy_kinds[kind] : "Unknown";
}

int gpu_is_nccl(const char *kernel)
{
	return strstr(kernel, "nccl") != NULL;
}
