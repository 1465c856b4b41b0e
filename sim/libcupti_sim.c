// SPDX-License-Identifier: BSD-2-Clause
/*
 * libcupti_sim.so: the part of CUPTI's API that gpubpf's CUPTI backend
 * (cupti/backend_cupti.c) calls, over the simulated driver's profiler
 * interface (simcu_profiler.h), so the shipped injection library runs
 * end to end without a GPU: GPUBPF_CUPTI_LIB=build/sim/libcupti_sim.so.
 *
 * It behaves as NVIDIA's headers document CUPTI, where gpubpf depends on it:
 *  - one subscriber at a time (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
 *  - driver-API callbacks by id (the ids and names of cupti_driver_cbid.h),
 *    at entry and exit of each call, with its correlation id and result;
 *  - activity records in the CUDA 13 layouts (Kernel10, Memcpy6, Memset4)
 *    of work whose call came after its kind was enabled, in buffers the
 *    client gives, handed back full or on a flush, read
 *    with cuptiActivityGetNextRecord; timestamps from the client's
 *    timestamp callback, else CLOCK_REALTIME;
 *  - once any of it is used, CUPTI stays attached to the driver (each call
 *    pays for it) until cuptiFinalize, even after cuptiUnsubscribe;
 *  - cuptiFinalize is safe only from an API-exit callback: called anywhere
 *    else it aborts the process, which is how a test sees the mistake.
 *
 * Test knobs: SIMCUPTI_API_VERSION (the version cuptiGetVersion returns),
 * SIMCUPTI_BUSY=1 (another profiler holds CUPTI), SIMCUPTI_LOG=PATH (one
 * line per subscribe, unsubscribe and finalize, with the finalizing
 * thread's place).  Never installed.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <cupti.h>
#include "simcu_profiler.h"
#include "cupti_cbid_names.h"   /* generated: cbid_names[], from cupti_driver_cbid.h */

#define EXPORT __attribute__((visibility("default")))
#define NCBIDS (sizeof(cbid_names) / sizeof(cbid_names[0]))
#define REC_ALIGN 8

/* A record in a buffer: its size, then the CUPTI struct. */
struct slot {
	uint64_t size;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static simcu_subscribe_fn sim_subscribe;
static int attached;                    /* subscribed to the simulated driver */
static CUpti_SubscriberHandle subscriber;
static CUpti_CallbackFunc callback;
static void *callback_data;
static unsigned char enabled_cb[NCBIDS];
static uint64_t kinds;                  /* bit k: CUpti_ActivityKind k enabled */
static uint32_t kind_from[64];          /* kind k: the first correlation id it records */
static uint32_t last_corr;              /* the highest correlation id entered */
static CUpti_BuffersCallbackRequestFunc buf_request;
static CUpti_BuffersCallbackCompleteFunc buf_complete;
static CUpti_TimestampCallbackFunc timestamp;
static int64_t ts_offset;               /* set_clock_locked() */
static uint8_t *buf;                    /* the buffer being filled */
static size_t buf_size, buf_used;
static size_t dropped;
static char **names;                    /* kernel names, alive until finalize */
static size_t nnames;
static __thread int in_exit_callback;

static void log_line(const char *fmt, ...)
{
	const char *path = getenv("SIMCUPTI_LOG");
	va_list ap;
	FILE *f;

	if (!path || !*path || !(f = fopen(path, "a")))
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/*
 * The callback id of a driver entry point, by its name.  The simulated
 * driver names each call by its own string constant: a direct-mapped cache
 * of (address << 16 | id), one atomic word each, spares the search.
 */
static CUpti_CallbackId cbid_of(const char *function)
{
	static uint64_t cache[256];
	uint64_t *c = &cache[((uintptr_t)function >> 3) % 256], v;
	CUpti_CallbackId id = 0;

	v = __atomic_load_n(c, __ATOMIC_RELAXED);
	if (v >> 16 == (uintptr_t)function)
		return (CUpti_CallbackId)(v & 0xffff);
	for (size_t i = 1; i < NCBIDS && !id; i++)
		if (cbid_names[i] && !strcmp(cbid_names[i], function))
			id = (CUpti_CallbackId)i;
	__atomic_store_n(c, (uint64_t)(uintptr_t)function << 16 | id, __ATOMIC_RELAXED);
	return id;
}

static void call_back(CUpti_ApiCallbackSite site, uint32_t corr, const char *function,
		      const void *params, CUresult *result)
{
	CUpti_CallbackId id = cbid_of(function);
	CUpti_CallbackFunc cb = __atomic_load_n(&callback, __ATOMIC_ACQUIRE);
	CUpti_CallbackData d = {
		.callbackSite = site,
		.functionName = function,
		.functionParams = params,
		.functionReturnValue = result,
		.correlationId = corr,
	};

	if (!cb || !id || !__atomic_load_n(&enabled_cb[id], __ATOMIC_RELAXED))
		return;
	cb(callback_data, CUPTI_CB_DOMAIN_DRIVER_API, id, &d);
}

/*
 * A launch's parameters as CUPTI gives them (generated_cuda_meta.h): the
 * cuLaunchKernelEx form, or the cuLaunchKernel one (its grid and stream are
 * not filled: the simulated driver's hook does not pass them).
 */
union launch_params {
	cuLaunchKernel_params k;
	cuLaunchKernelEx_params ex;
};

static const void *launch_params(union launch_params *u, const char *function,
				 const struct simcu_launch *l)
{
	memset(u, 0, sizeof(*u));
	if (!l)
		return NULL;
	if (!strncmp(function, "cuLaunchKernelEx", 16)) {
		u->ex.f = l->func;
		u->ex.kernelParams = l->params;
		u->ex.extra = l->extra;
	} else {
		u->k.f = l->func;
		u->k.kernelParams = l->params;
		u->k.extra = l->extra;
	}
	return u;
}

static void api_enter(void *ctx, uint32_t corr, const char *function,
		      const struct simcu_launch *launch)
{
	uint32_t seen = __atomic_load_n(&last_corr, __ATOMIC_RELAXED);
	union launch_params u;

	while ((int32_t)(corr - seen) > 0 &&
	       !__atomic_compare_exchange_n(&last_corr, &seen, corr, 1, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	call_back(CUPTI_API_ENTER, corr, function, launch_params(&u, function, launch), NULL);
}

static void api_exit(void *ctx, uint32_t corr, const char *function, int result)
{
	CUresult r = (CUresult)result;

	in_exit_callback++;
	call_back(CUPTI_API_EXIT, corr, function, NULL, &r);
	in_exit_callback--;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * CUPTI's clock minus CLOCK_MONOTONIC, measured once per clock (each
 * record's own measure would jitter work that runs back to back into
 * overlaps): the client's timestamp callback, else CLOCK_REALTIME.
 */
static void set_clock_locked(void)
{
	uint64_t mono = now_ns(CLOCK_MONOTONIC);

	ts_offset = (int64_t)((timestamp ? timestamp() : now_ns(CLOCK_REALTIME)) - mono);
}

/* A simulated GPU time (CLOCK_MONOTONIC) on CUPTI's clock. */
static uint64_t cupti_ts(uint64_t mono)
{
	return mono + (uint64_t)ts_offset;
}

static const char *intern_locked(const char *name)
{
	char **grown;

	for (size_t i = 0; i < nnames; i++)
		if (!strcmp(names[i], name))
			return names[i];
	grown = realloc(names, (nnames + 1) * sizeof(*names));
	if (!grown)
		return "";
	names = grown;
	if (!(names[nnames] = strdup(name)))
		return "";
	return names[nnames++];
}

/* Hand the current buffer back to the client; called with mu held, returns with it held. */
static void complete_locked(void)
{
	uint8_t *b = buf;
	size_t size = buf_size, used = buf_used;
	CUpti_BuffersCallbackCompleteFunc done = buf_complete;

	buf = NULL;
	buf_size = buf_used = 0;
	if (!b || !done)
		return;
	pthread_mutex_unlock(&mu);
	done(NULL, 0, b, size, used);
	pthread_mutex_lock(&mu);
}

/* Room for a record of len bytes: a slot in the current or a new buffer, or NULL. */
static void *reserve_locked(size_t len)
{
	size_t need = sizeof(struct slot) + (len + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN;
	size_t max = 0;
	struct slot *s;

	if (buf && buf_used + need > buf_size)
		complete_locked();
	if (!buf && buf_request) {
		buf_request(&buf, &buf_size, &max);
		buf_used = 0;
		if (buf && buf_size < need)
			buf = NULL;     /* CUPTI needs room for one record at least */
	}
	if (!buf) {
		dropped++;
		return NULL;
	}
	s = (struct slot *)(buf + buf_used);
	s->size = need;
	buf_used += need;
	memset(s + 1, 0, need - sizeof(*s));
	return s + 1;
}

/* Kind k is on, and was when the call of correlation id corr entered. */
static int kind_on(CUpti_ActivityKind k, uint32_t corr)
{
	return (unsigned)k < 64 && (kinds & (1ull << k)) && (int32_t)(corr - kind_from[k]) >= 0;
}

/* The fields every record kind here has, from a. */
#define FILL_WHERE(r, a) do {					\
		(r)->start = cupti_ts((a)->start);		\
		(r)->end = cupti_ts((a)->end);			\
		(r)->deviceId = (a)->device;			\
		(r)->contextId = 1;				\
		(r)->streamId = (a)->stream;			\
		(r)->correlationId = (a)->correlation;		\
		(r)->graphNodeId = (a)->graph_node;		\
	} while (0)

static void activity(void *ctx, const struct simcu_activity *a)
{
	uint32_t corr = a->correlation;

	pthread_mutex_lock(&mu);
	if (a->kind == SIMCU_KERNEL && (kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, corr) ||
					kind_on(CUPTI_ACTIVITY_KIND_KERNEL, corr))) {
		CUpti_ActivityKernel10 *k = reserve_locked(sizeof(*k));

		if (k) {
			k->kind = kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, corr) ?
				  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
			FILL_WHERE(k, a);
			k->gridX = a->grid[0];
			k->gridY = a->grid[1];
			k->gridZ = a->grid[2];
			k->blockX = a->block[0];
			k->blockY = a->block[1];
			k->blockZ = a->block[2];
			k->dynamicSharedMemory = a->shared_mem;
			k->name = intern_locked(a->name ? a->name : "");
		}
	} else if (a->kind == SIMCU_MEMCPY && kind_on(CUPTI_ACTIVITY_KIND_MEMCPY, corr)) {
		CUpti_ActivityMemcpy6 *m = reserve_locked(sizeof(*m));

		if (m) {
			m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
			FILL_WHERE(m, a);
			m->copyKind = (uint8_t)a->copy_kind;
			m->bytes = a->bytes;
		}
	} else if (a->kind == SIMCU_MEMSET && kind_on(CUPTI_ACTIVITY_KIND_MEMSET, corr)) {
		CUpti_ActivityMemset4 *m = reserve_locked(sizeof(*m));

		if (m) {
			m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
			FILL_WHERE(m, a);
			m->bytes = a->bytes;
		}
	}
	pthread_mutex_unlock(&mu);
}

/* Any CUPTI use attaches to the driver, for good (until cuptiFinalize). */
static CUptiResult attach_locked(void)
{
	static const struct simcu_profiler p = {
		.api_enter = api_enter, .activity = activity, .api_exit = api_exit,
	};
	void *driver;

	if (attached)
		return CUPTI_SUCCESS;
	if (!sim_subscribe) {
		driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (driver) {
			sim_subscribe = (simcu_subscribe_fn)dlsym(driver, SIMCU_SUBSCRIBE);
			dlclose(driver);
		}
		if (!sim_subscribe)
			return CUPTI_ERROR_NOT_INITIALIZED;
	}
	if (sim_subscribe(&p))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	attached = 1;
	set_clock_locked();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	const char *v = getenv("SIMCUPTI_API_VERSION");

	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = v && *v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	switch (result) {
	case CUPTI_SUCCESS:
		*str = "CUPTI_SUCCESS";
		break;
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		*str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
		break;
	case CUPTI_ERROR_NOT_INITIALIZED:
		*str = "CUPTI_ERROR_NOT_INITIALIZED";
		break;
	case CUPTI_ERROR_INVALID_PARAMETER:
		*str = "CUPTI_ERROR_INVALID_PARAMETER";
		break;
	case CUPTI_ERROR_INVALID_KIND:
		*str = "CUPTI_ERROR_INVALID_KIND";
		break;
	default:
		*str = "CUPTI_ERROR_UNKNOWN";
		break;
	}
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *handle, CUpti_CallbackFunc fn,
				  void *userdata)
{
	static int token;
	CUptiResult st;

	if (!handle)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (getenv("SIMCUPTI_BUSY") && !strcmp(getenv("SIMCUPTI_BUSY"), "1"))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	pthread_mutex_lock(&mu);
	st = subscriber ? CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED : attach_locked();
	if (st == CUPTI_SUCCESS) {
		subscriber = (CUpti_SubscriberHandle)&token;
		callback_data = userdata;
		memset(enabled_cb, 0, sizeof(enabled_cb));
		__atomic_store_n(&callback, fn, __ATOMIC_RELEASE);
		*handle = subscriber;
		log_line("subscribe");
	}
	pthread_mutex_unlock(&mu);
	return st;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle)
{
	pthread_mutex_lock(&mu);
	if (!handle || handle != subscriber) {
		pthread_mutex_unlock(&mu);
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
	__atomic_store_n(&callback, NULL, __ATOMIC_RELEASE);
	subscriber = NULL;
	log_line("unsubscribe");
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
					const char **name)
{
	if (!name || domain != CUPTI_CB_DOMAIN_DRIVER_API || !cbid || cbid >= NCBIDS ||
	    !cbid_names[cbid])
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = cbid_names[cbid];
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle handle,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (!handle || handle != subscriber || domain != CUPTI_CB_DOMAIN_DRIVER_API ||
	    !cbid || cbid >= NCBIDS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	__atomic_store_n(&enabled_cb[cbid], enable ? 1 : 0, __ATOMIC_RELAXED);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
						  CUpti_BuffersCallbackCompleteFunc complete)
{
	if (!request || !complete)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&mu);
	buf_request = request;
	buf_complete = complete;
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	pthread_mutex_lock(&mu);
	timestamp = fn;
	set_clock_locked();
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	CUptiResult st;

	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&mu);
	if ((st = attach_locked()) == CUPTI_SUCCESS && !(kinds & (1ull << kind))) {
		kinds |= 1ull << kind;
		kind_from[kind] = __atomic_load_n(&last_corr, __ATOMIC_RELAXED) + 1;
	}
	pthread_mutex_unlock(&mu);
	return st;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&mu);
	kinds &= ~(1ull << kind);
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	pthread_mutex_lock(&mu);
	if (buf && (buf_used || (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)))
		complete_locked();
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
					      CUpti_Activity **record)
{
	size_t at;

	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	at = *record ? (size_t)((uint8_t *)*record - buffer) - sizeof(struct slot) +
		       ((struct slot *)*record - 1)->size : 0;
	if (at + sizeof(struct slot) > valid) {
		*record = NULL;
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	}
	*record = (CUpti_Activity *)(buffer + at + sizeof(struct slot));
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
						     size_t *n)
{
	if (!n)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&mu);
	*n = dropped;
	dropped = 0;
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

/*
 * Detach from the driver and forget everything; the next CUPTI call starts
 * afresh.  Only from an API-exit callback: anywhere else a thread may be
 * inside the driver with CUPTI's state in use.
 */
EXPORT CUptiResult cuptiFinalize(void)
{
	size_t unflushed;
	int was_attached;

	if (!in_exit_callback) {
		fprintf(stderr, "libcupti_sim: cuptiFinalize called outside an API-exit callback\n");
		abort();
	}
	/*
	 * Detach from the driver first, without mu: detaching waits for the
	 * callbacks in flight, and a stream's worker in activity() waits for mu.
	 */
	pthread_mutex_lock(&mu);
	was_attached = attached;
	attached = 0;
	pthread_mutex_unlock(&mu);
	if (was_attached)
		sim_subscribe(NULL);    /* from the driver's own callback: allowed */
	pthread_mutex_lock(&mu);
	unflushed = buf_used;
	free(buf);      /* unflushed records are lost, as with CUPTI (the client's malloc) */
	buf = NULL;
	buf_size = buf_used = 0;
	__atomic_store_n(&callback, NULL, __ATOMIC_RELEASE);
	subscriber = NULL;
	memset(enabled_cb, 0, sizeof(enabled_cb));
	kinds = 0;
	buf_request = NULL;
	buf_complete = NULL;
	timestamp = NULL;
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	names = NULL;
	nnames = 0;
	log_line("finalize tid=%ld in=exit-callback unflushed_bytes=%zu", (long)syscall(SYS_gettid),
		 unflushed);
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}
