// SPDX-License-Identifier: BSD-2-Clause
/*
 * The simulated driver's profiler hooks (simcu_profiler.h) as a backend of
 * the injection library (cupti/backend.h), built only into the
 * simulator's variant, build/sim/libgpubpf_cupti.so: the simulated GPU's
 * work reaches gpubpf through the same transport, correlation and records
 * as CUPTI's, so all of them are tested without a GPU.  The shipped
 * library has neither this file nor sim/ headers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include "backend.h"
#include "launch_args.h"
#include "publish.h"
#include "simcu_profiler.h"

static simcu_subscribe_fn subscribe;

static void api_enter(void *ctx, uint32_t correlation, const char *function,
		      const struct simcu_launch *launch)
{
	if (launch)
		launch_args_put(correlation,
				launch_args_hash(launch->func, launch->params, launch->extra));
	publish_api(correlation, 0);
}

static void api_exit(void *ctx, uint32_t correlation, const char *function, int result)
{
	if (result)
		publish_api_error(0, 0, result);
}

static void activity(void *ctx, const struct simcu_activity *a)
{
	struct ga_where w = { .device = a->device, .stream = a->stream };
	union {
		struct ga_hdr h;
		struct ga_kernel k;
		struct ga_memcpy c;
		struct ga_memset s;
	} r;

	memset(&r, 0, sizeof(r));
	r.h.correlation = a->correlation;
	switch (a->kind) {
	case SIMCU_KERNEL:
		r.h.type = GA_KERNEL;
		r.h.size = sizeof(r.k);
		r.k.w = w;
		r.k.start = a->start;
		r.k.end = a->end;
		r.k.name_id = publish_name(a->name ? a->name : "");
		memcpy(r.k.grid, a->grid, sizeof(r.k.grid));
		memcpy(r.k.block, a->block, sizeof(r.k.block));
		r.k.dynamic_shmem = a->shared_mem;
		r.k.graph_node = a->graph_node;
		r.k.args = a->graph_node ? 0 : launch_args_get(a->correlation);
		break;
	case SIMCU_MEMCPY:
		r.h.type = GA_MEMCPY;
		r.h.size = sizeof(r.c);
		r.c.w = w;
		r.c.start = a->start;
		r.c.end = a->end;
		r.c.bytes = a->bytes;
		r.c.kind = a->copy_kind;
		r.c.graph_node = a->graph_node;
		break;
	case SIMCU_MEMSET:
		r.h.type = GA_MEMSET;
		r.h.size = sizeof(r.s);
		r.s.w = w;
		r.s.start = a->start;
		r.s.end = a->end;
		r.s.bytes = a->bytes;
		r.s.graph_node = a->graph_node;
		break;
	default:
		return;
	}
	publish_record(&r.h);
}

/* The driver that loaded us, even if it was loaded RTLD_LOCAL (Python's ctypes). */
static int sim_probe(void)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!driver)
		return 0;
	subscribe = (simcu_subscribe_fn)dlsym(driver, SIMCU_SUBSCRIBE);
	dlclose(driver);	/* drops our extra reference; the driver stays */
	return subscribe != NULL;
}

static int sim_enable(void)
{
	static const struct simcu_profiler p = { .api_enter = api_enter, .activity = activity,
						 .api_exit = api_exit };

	launch_args_init();
	if (subscribe(&p)) {
		publish_error("sim: another profiler is subscribed");
		return -EBUSY;
	}
	return 0;
}

/* The simulated driver delivers each record as its work finishes. */
static void sim_flush(int forced)
{
}

static void sim_disable(void)
{
	subscribe(NULL);
}

const struct backend backend_sim = {
	.name = "sim",
	.probe = sim_probe,
	.enable = sim_enable,
	.flush = sim_flush,
	.disable = sim_disable,
};

/*
 * This variant's backends (cupti/backends.c in the shipped one): the
 * simulated driver when it is the one loaded, else CUPTI.
 */
const struct backend *const backends[] = { &backend_sim, &backend_cupti, NULL };
