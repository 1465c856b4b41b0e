// SPDX-License-Identifier: BSD-2-Clause
/*
 * CUPTI as a backend: activity records (kernels, copies, memsets, syncs,
 * memory) converted to gpu_activity.h records, and a driver-API callback
 * that announces each launch's correlation id on the launching thread.
 *
 * libcupti is opened with dlopen at probe time, never linked: the
 * injection library must load in any process, with or without CUPTI, and
 * must use the copy the process already has (PyTorch ships its own) rather
 * than load a second one.  Every CUPTI call goes through the table fn,
 * typed with the prototypes of the headers we build against.
 *
 * Fail soft: a CUPTI error in enable() (another profiler subscribed, a
 * libcupti other than CUPTI 12 or 13, no driver) is published, printed once
 * with a `gpubpf:` prefix, and undone; the program runs on untouched.
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cupti.h>
#include "backend.h"
#include "cupti_convert.h"
#include "cupti_pick.h"
#include "inject.h"
#include "launch_args.h"
#include "publish.h"

/* 4 MiB buffers: about 20000 kernel records, a few per second at most. */
#define BUF_SIZE  (4u << 20)
#define BUF_ALIGN 8

/* The CUPTI entry points used, resolved by name from the loaded libcupti. */
#define CUPTI_FUNCS(X)					\
	X(cuptiGetVersion)				\
	X(cuptiGetResultString)				\
	X(cuptiSubscribe)				\
	X(cuptiUnsubscribe)				\
	X(cuptiGetCallbackName)				\
	X(cuptiEnableCallback)				\
	X(cuptiSetThreadIdType)				\
	X(cuptiActivityRegisterCallbacks)		\
	X(cuptiActivityEnable)				\
	X(cuptiActivityDisable)				\
	X(cuptiActivityFlushAll)			\
	X(cuptiActivityGetNextRecord)			\
	X(cuptiActivityGetNumDroppedRecords)

/*
 * Used where present: without the first, CUPTI's own clock is converted
 * (clock_offset_ns); without the second, detaching only unsubscribes.
 */
#define CUPTI_OPTIONAL_FUNCS(X)				\
	X(cuptiActivityRegisterTimestampCallback)	\
	X(cuptiFinalize)

static struct {
#define X(f) __typeof__(f) *f;
	CUPTI_FUNCS(X)
	CUPTI_OPTIONAL_FUNCS(X)
#undef X
} fn;

static void *lib;

/* The activity kinds collected (DESIGN.md): CONCURRENT_KERNEL does not serialise. */
static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2,
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	CUPTI_ACTIVITY_KIND_MEMORY2,
};

/* enable()/flush()/disable() are serialised by the caller (inject.c). */
static CUpti_SubscriberHandle subscriber;
static unsigned kinds_on;               /* bit i: kinds[i] enabled */
static int active;                      /* enable() succeeded, no disable() since */

/*
 * The window's first call.  Calls are announced only once every activity
 * kind is on (active, read by api_callback); the first announced sets
 * first_corr.  CUPTI numbers calls process-wide in order, so a record of a
 * lower correlation id is work of a call made before the window, which was
 * not announced: dropped, rather than shown unlinked.  (The library marks
 * the window just after enable() returns: a call announced in between may
 * end before the mark, with its records all the same.)
 */
static uint32_t first_corr;
static int have_first;
static int warned;                      /* the stderr line was printed */

/* The buffer callbacks run on CUPTI's thread and on whoever flushes. */
static uint32_t name_id(const char *name, void *arg);
static pthread_mutex_t conv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cupti_conv conv = { .name = name_id };
static uint64_t bad_buffers;            /* iteration stopped on a bad record */

static char why_not[512];              /* why probe() found no usable libcupti */

/*
 * Detaching CUPTI (DESIGN.md, "Late attach").  Once used, CUPTI stays
 * attached to the driver, and every driver call of the job pays for it,
 * until cuptiFinalize, which is safe only from an API-exit callback.  So
 * disable() asks for it (FIN_WANTED) and waits up to FINALIZE_WAIT_MS for
 * one of the program's driver calls to return through api_callback, which
 * finalizes there, on the program's thread.  A job that makes no call in
 * that time finalizes at its next one.  An enable() that comes first takes
 * the request back and keeps the subscription.
 */
#define FINALIZE_WAIT_MS 200
enum { FIN_NONE, FIN_WANTED, FIN_RUNNING, FIN_DONE };
static int fin;                         /* FIN_*: under fin_lock, read lock-free by api_callback */
static pthread_mutex_t fin_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fin_cond = PTHREAD_COND_INITIALIZER;

/* h is libcupti: every function we call is there.  Else NULL, h closed. */
static void *check_cupti(void *h, const char *name, int from_env)
{
	const char *missing = NULL;

#define X(f)						\
	if (!missing && !dlsym(h, #f))			\
		missing = #f;
	CUPTI_FUNCS(X)
#undef X
	if (!missing)
		return h;
	if (!why_not[0])
		snprintf(why_not, sizeof(why_not), "%s'%s' is not libcupti (it has no %s)",
			 from_env ? "GPUBPF_CUPTI_LIB=" : "", name, missing);
	dlclose(h);
	return NULL;
}

/* The objects loaded in this process (their paths), and a libcupti among them. */
struct loaded {
	const char *path[512];
	size_t n;
	const char *cupti;
};

static int collect_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct loaded *l = arg;
	const char *name = info->dlpi_name, *slash;

	(void)size;
	if (!name || !*name)
		return 0;
	slash = strrchr(name, '/');
	if (!l->cupti && !strncmp(slash ? slash + 1 : name, "libcupti.so", 11))
		l->cupti = name;
	if (l->n < sizeof(l->path) / sizeof(l->path[0]))
		l->path[l->n++] = name;
	return 0;
}

/* The CUDA major of the driver this process uses; 0 unknown. */
static int driver_major(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	CUresult (*get)(int *);
	int v = 0;

	if (!h)
		return 0;
	get = (CUresult (*)(int *))dlsym(h, "cuDriverGetVersion");
	if (!get || get(&v) != CUDA_SUCCESS)
		v = 0;
	dlclose(h);
	return v / 1000;
}

/*
 * The libcupti already in the process, else GPUBPF_CUPTI_LIB, else the
 * first of cupti_pick()'s candidates that loads.  A candidate that is not
 * libcupti is skipped, the first reason kept.
 */
static void *open_cupti(void)
{
	/* static: ~100 KiB, and probe() runs once at a time (inject.c's lock) */
	static struct loaded objs;
	static struct cupti_pick pick;
	const char *env;
	unsigned i;
	int major;
	void *h;

	why_not[0] = 0;
	memset(&objs, 0, sizeof(objs));
	dl_iterate_phdr(collect_loaded, &objs);
	/* a framework's own CUPTI: never load a second copy */
	if (objs.cupti && (h = dlopen(objs.cupti, RTLD_NOW | RTLD_NOLOAD)))
		return h;
	env = getenv("GPUBPF_CUPTI_LIB");
	if (env && *env) {
		h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			snprintf(why_not, sizeof(why_not), "GPUBPF_CUPTI_LIB: %s", dlerror());
		else if ((h = check_cupti(h, env, 1)))
			return h;
	}
	major = driver_major();
	cupti_pick(&pick, major, objs.path, objs.n, getenv("CUDA_HOME"));
	for (i = 0; i < pick.n; i++)
		if ((h = dlopen(pick.path[i], RTLD_NOW | RTLD_LOCAL)) &&
		    (h = check_cupti(h, pick.path[i], 0)))
			goto found;
	if (!pick.majors[0])
		snprintf(why_not, sizeof(why_not), "the driver is CUDA %d; gpubpf reads CUPTI "
			 "%d and %d", major, CUPTI_OLDEST_MAJOR, CUPTI_NEWEST_MAJOR);
	else if (!why_not[0])
		snprintf(why_not, sizeof(why_not), "no libcupti.so.%d%s found (set "
			 "GPUBPF_CUPTI_LIB to its path)", pick.majors[0],
			 pick.majors[1] ? " or .12" : "");
	else if (env && *env)
		snprintf(why_not + strlen(why_not), sizeof(why_not) - strlen(why_not),
			 ", and no libcupti is installed");
	return NULL;
found:
	if (why_not[0])         /* GPUBPF_CUPTI_LIB was wrong, the installed one is used */
		inject_say("%s; using the installed libcupti", why_not);
	why_not[0] = 0;
	return h;
}

/* Silent: the caller says `gpubpf: GPU timing off` when no backend applies. */
static int cupti_probe(void)
{
	if (lib)
		return 1;
	lib = open_cupti();
	if (!lib)
		return 0;
#define X(f)						\
	if (!(fn.f = (__typeof__(fn.f))dlsym(lib, #f)))	\
		goto fail;
	CUPTI_FUNCS(X)
#undef X
#define X(f) fn.f = (__typeof__(fn.f))dlsym(lib, #f);
	CUPTI_OPTIONAL_FUNCS(X)
#undef X
	return 1;
fail:
	memset(&fn, 0, sizeof(fn));
	dlclose(lib);
	lib = NULL;
	return 0;
}

static const char *cupti_why_not(void)
{
	return why_not;
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The clock of bpf_ktime_get_ns, so GPU and host events share a timeline. */
static uint64_t CUPTIAPI monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC, read between two monotonic reads. */
static int64_t realtime_minus_monotonic_ns(void)
{
	uint64_t a = clock_ns(CLOCK_MONOTONIC), r = clock_ns(CLOCK_REALTIME);
	uint64_t b = clock_ns(CLOCK_MONOTONIC);

	return (int64_t)(r - (a + (b - a) / 2));
}

/* The lowest correlation id announced since enable(), of racing first calls. */
static void note_first(uint32_t corr)
{
	pthread_mutex_lock(&conv_lock);
	if (!have_first || (int32_t)(corr - first_corr) < 0)
		first_corr = corr;
	__atomic_store_n(&have_first, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&conv_lock);
}

/* A record of a call made before the window (see first_corr); conv_lock held. */
static int before_window(const union ga_record *out)
{
	uint32_t corr = out->h.correlation;

	return corr && (!have_first || (int32_t)(corr - first_corr) < 0);
}

/* A kernel launch's arguments, kept by correlation id for its record. */
static void keep_launch_args(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	const cuLaunchKernel_params *k = cb->functionParams;
	const cuLaunchKernelEx_params *ex = cb->functionParams;

	if (!cb->functionParams)
		return;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
		/* the _ptsz and cooperative forms share cuLaunchKernel's layout */
		launch_args_put(cb->correlationId,
				launch_args_hash(k->f, k->kernelParams, k->extra));
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
		launch_args_put(cb->correlationId,
				launch_args_hash(ex->f, ex->kernelParams, ex->extra));
		break;
	}
}

/* On the program's thread, at an API exit: the finalize disable() asked for. */
static void finalize_here(void)
{
	int wanted = FIN_WANTED;

	if (!__atomic_compare_exchange_n(&fin, &wanted, FIN_RUNNING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;         /* another thread got there first, or enable() took it back */
	fn.cuptiFinalize();
	pthread_mutex_lock(&fin_lock);
	__atomic_store_n(&fin, FIN_DONE, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&fin_cond);
	pthread_mutex_unlock(&fin_lock);
}

/*
 * On every enabled driver call, entry and exit: at entry the marker ties
 * the correlation id to this thread and its stack; at exit a failed call's
 * error is announced (launches are probed at entry only: this is how their
 * errors are known), and a finalize asked for is done.  Runs on the
 * program's launch path, so nothing but the checks and the markers.
 */
static void CUPTIAPI api_callback(void *userdata, CUpti_CallbackDomain domain,
				  CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *cb = data;

	if (cb->callbackSite == CUPTI_API_EXIT &&
	    __atomic_load_n(&fin, __ATOMIC_ACQUIRE) == FIN_WANTED) {
		finalize_here();
		return;
	}
	if (!publish_attached() || domain != CUPTI_CB_DOMAIN_DRIVER_API ||
	    !__atomic_load_n(&active, __ATOMIC_ACQUIRE))
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (!__atomic_load_n(&have_first, __ATOMIC_ACQUIRE))
			note_first(cb->correlationId);
		keep_launch_args(cbid, cb);
		publish_api(cb->correlationId, cbid);
	}
	else if (cb->callbackSite == CUPTI_API_EXIT && cb->functionReturnValue &&
		 *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		publish_api_error(cb->correlationId, cbid,
				  *(const CUresult *)cb->functionReturnValue);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
				      size_t *max_records)
{
	/* NULL makes CUPTI drop records, which it counts: reported below */
	*buffer = aligned_alloc(BUF_ALIGN, BUF_SIZE);
	*size = *buffer ? BUF_SIZE : 0;
	*max_records = 0;
}

static uint32_t name_id(const char *name, void *arg)
{
	return publish_name(name);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
				      uint8_t *buffer, size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;
	union ga_record out;
	size_t dropped = 0;
	CUptiResult st;

	pthread_mutex_lock(&conv_lock);
	while ((st = fn.cuptiActivityGetNextRecord(buffer, valid, &rec)) == CUPTI_SUCCESS)
		if (cupti_convert(&conv, rec, &out) > 0 && !before_window(&out)) {
			if (out.h.type == GA_KERNEL && !out.kernel.graph_node)
				out.kernel.args = launch_args_get(out.h.correlation);
			publish_record(&out.h);
		}
	/* MAX_LIMIT_REACHED is the end; anything else is an incomplete record */
	if (st != CUPTI_ERROR_MAX_LIMIT_REACHED)
		bad_buffers++;
	pthread_mutex_unlock(&conv_lock);
	free(buffer);
	if (fn.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS &&
	    dropped)
		publish_dropped(dropped);
}

static int cupti_errno(CUptiResult st)
{
	switch (st) {
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		return -EBUSY;
	case CUPTI_ERROR_NOT_INITIALIZED:
		return -ENODEV;
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
		return -EPERM;
	case CUPTI_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUPTI_ERROR_NOT_COMPATIBLE:
	case CUPTI_ERROR_NOT_SUPPORTED:
	case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
		return -ENOTSUP;
	default:
		return -EIO;
	}
}

/* Publish why GPU timing is off, and say it once on stderr. */
static __attribute__((format(printf, 1, 2))) void say_off(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	publish_error(msg);
	if (!warned) {
		inject_say("GPU timing off: %s", msg);
		warned = 1;
	}
}

static int cupti_failed(const char *what, CUptiResult st)
{
	const char *s = NULL;

	if (fn.cuptiGetResultString(st, &s) != CUPTI_SUCCESS || !s)
		s = "unknown error";
	say_off("cupti: %s: %s%s", what, s,
		st == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ?
		" (another profiler is attached)" : "");
	return cupti_errno(st);
}

/* The driver calls whose GPU work we record: launches, copies, memsets, graphs. */
static int wanted_callback(const char *name)
{
	if (!strncmp(name, "cuLaunchHostFunc", 16))
		return 0;       /* no GPU record of ours to link to */
	return !strncmp(name, "cuLaunch", 8) || !strncmp(name, "cuMemcpy", 8) ||
	       !strncmp(name, "cuMemset", 8) || !strncmp(name, "cuGraphLaunch", 13);
}

/*
 * Enable the callbacks by name rather than by a list of ids: picks up the
 * _v2/_ptsz/_ptds variants, and those of a newer libcupti of the same major
 * version (hence looking past the ids our headers know).
 */
static CUptiResult enable_callbacks(unsigned *n)
{
	CUpti_CallbackId cbid;
	const char *name;
	CUptiResult st;

	*n = 0;
	for (cbid = 1; cbid < 2 * CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++) {
		name = NULL;
		if (fn.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) !=
		    CUPTI_SUCCESS || !name || !wanted_callback(name))
			continue;
		st = fn.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
		if (st != CUPTI_SUCCESS)
			return st;
		(*n)++;
	}
	return CUPTI_SUCCESS;
}

/* Stop collecting activity, and deliver what ran since the last flush. */
static void stop_activity(void)
{
	unsigned i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds_on & (1u << i))
			fn.cuptiActivityDisable(kinds[i]);
	if (kinds_on)
		/* after disabling: also delivers what ran since the last flush */
		fn.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	kinds_on = 0;
}

/* Undo enable(), in whatever state it got to. */
static void stop(void)
{
	stop_activity();
	/* unsubscribing drops every callback enabled for the subscriber */
	if (subscriber)
		fn.cuptiUnsubscribe(subscriber);
	subscriber = NULL;
	__atomic_store_n(&active, 0, __ATOMIC_RELEASE);
}

/* A finalize done leaves nothing subscribed; fin_lock held. */
static void forget_finalized_locked(void)
{
	if (__atomic_load_n(&fin, __ATOMIC_ACQUIRE) == FIN_DONE) {
		subscriber = NULL;
		__atomic_store_n(&fin, FIN_NONE, __ATOMIC_RELEASE);
	}
}

/*
 * Before enabling: a finalize still wanted is taken back (the
 * subscription stays and is reused), one under way is waited for, and one
 * done leaves nothing subscribed.
 */
static void settle_finalize(void)
{
	int wanted = FIN_WANTED;

	pthread_mutex_lock(&fin_lock);
	if (!__atomic_compare_exchange_n(&fin, &wanted, FIN_NONE, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&fin, __ATOMIC_ACQUIRE) == FIN_RUNNING)
			pthread_cond_wait(&fin_cond, &fin_lock);
		forget_finalized_locked();
	}
	pthread_mutex_unlock(&fin_lock);
}

/*
 * Ask the program's next API exit to finalize CUPTI and wait a bounded
 * time for it; past that, the request stays for the next call.
 */
static void request_finalize(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += FINALIZE_WAIT_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&fin_lock);
	__atomic_store_n(&fin, FIN_WANTED, __ATOMIC_RELEASE);
	while (__atomic_load_n(&fin, __ATOMIC_ACQUIRE) != FIN_DONE &&
	       pthread_cond_timedwait(&fin_cond, &fin_lock, &until) == 0)
		;
	forget_finalized_locked();
	pthread_mutex_unlock(&fin_lock);
}

static int cupti_enable(void)
{
	const char *what;
	uint32_t version = 0;
	int64_t clock_offset;
	CUptiResult st;
	unsigned i, n;
	int ret;

	if (!lib)
		return -ENODEV;
	if (active)
		return 0;
	settle_finalize();
	launch_args_init();
	what = "cuptiGetVersion";
	if ((st = fn.cuptiGetVersion(&version)) != CUPTI_SUCCESS)
		goto fail;
	/* the records read are those of CUPTI 12 and 13 (cupti_convert.h) */
	if (cupti_api_major(version) < CUPTI_OLDEST_MAJOR ||
	    cupti_api_major(version) > CUPTI_NEWEST_MAJOR) {
		say_off("cupti: libcupti API version %u (CUDA %d); gpubpf reads CUPTI %d and %d",
			version, cupti_api_major(version), CUPTI_OLDEST_MAJOR,
			CUPTI_NEWEST_MAJOR);
		return -ENOTSUP;
	}
	/*
	 * Subscribe first: it is the check that no other profiler owns CUPTI,
	 * and the settings below are process-wide, so they must not be
	 * changed under another profiler.  They are set again at each enable
	 * because one (torch.profiler) may have run between two recordings.
	 */
	what = "cuptiSubscribe";
	if (!subscriber &&
	    (st = fn.cuptiSubscribe(&subscriber, api_callback, NULL)) != CUPTI_SUCCESS) {
		subscriber = NULL;
		goto fail;
	}
	/*
	 * Before any activity is enabled, or records mix clocks.  Where CUPTI
	 * lacks the callback or refuses it, its timestamps are CLOCK_REALTIME:
	 * converted with the offset of now (a clock step while recording
	 * shifts GPU work against the calls, which the collector's skew check
	 * then counts).
	 */
	clock_offset = 0;
	if (!fn.cuptiActivityRegisterTimestampCallback ||
	    fn.cuptiActivityRegisterTimestampCallback(monotonic_ns) != CUPTI_SUCCESS)
		clock_offset = realtime_minus_monotonic_ns();
	pthread_mutex_lock(&conv_lock);
	conv.clock_offset_ns = clock_offset;
	pthread_mutex_unlock(&conv_lock);
	what = "cuptiSetThreadIdType";
	if ((st = fn.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) !=
	    CUPTI_SUCCESS)
		goto fail;
	what = "cuptiActivityRegisterCallbacks";
	if ((st = fn.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) !=
	    CUPTI_SUCCESS)
		goto fail;
	what = "cuptiEnableCallback";
	if ((st = enable_callbacks(&n)) != CUPTI_SUCCESS)
		goto fail;
	if (!n) {
		say_off("cupti: no driver API callbacks for launches found");
		stop();
		return -ENOTSUP;
	}
	what = "cuptiActivityEnable";
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if ((st = fn.cuptiActivityEnable(kinds[i])) != CUPTI_SUCCESS)
			goto fail;
		kinds_on |= 1u << i;
	}
	pthread_mutex_lock(&conv_lock);
	have_first = 0;
	pthread_mutex_unlock(&conv_lock);
	__atomic_store_n(&active, 1, __ATOMIC_RELEASE);
	return 0;
fail:
	ret = cupti_failed(what, st);
	stop();
	return ret;
}

static void cupti_flush(int forced)
{
	if (active)
		fn.cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

/*
 * Deliver the rest, then leave: finalized where CUPTI has it, else (or
 * where the job was started with GPUBPF_CUPTI_FINALIZE=0) unsubscribed.
 */
static void cupti_disable(void)
{
	const char *env = getenv("GPUBPF_CUPTI_FINALIZE");

	if (!active)
		return;
	if (!fn.cuptiFinalize || (env && !strcmp(env, "0"))) {
		stop();
		publish_flush();
		return;
	}
	stop_activity();
	__atomic_store_n(&active, 0, __ATOMIC_RELEASE);
	publish_flush();
	request_finalize();
}

const struct backend backend_cupti = {
	.name = "cupti",
	.probe = cupti_probe,
	.enable = cupti_enable,
	.flush = cupti_flush,
	.disable = cupti_disable,
	.why_not = cupti_why_not,
};
