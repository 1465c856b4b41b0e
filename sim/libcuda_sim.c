// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libcuda_sim.c - a simulated CUDA driver, built as build/sim/libcuda.so.1.
 *
 * gpubpf hooks libcuda's exported entry points with uprobes.  Machines without
 * a GPU cannot run the real driver, so this library stands in for it: it
 * exports the driver entry points gpubpf traces, under their exact names
 * (every _v2/_ptsz/_ptds variant is its own function, as in NVIDIA's
 * libcuda), and behaves like an asynchronous GPU with realistic timing.  It
 * knows nothing about gpubpf.
 *
 * Contract (what tests rely on):
 *  - cuInit(0) is the only set-up a program needs: device 0 and one implicit
 *    context.  Any other call before cuInit returns CUDA_ERROR_NOT_INITIALIZED
 *    (cuDriverGetVersion and cuGetError* work before it).  The driver
 *    version is 13.0, or $SIMCUDA_DRIVER_VERSION (as cuDriverGetVersion
 *    gives it: 12080 is 12.8).
 *  - Streams are FIFO queues, each served by its own worker thread (started on
 *    first use; workers sleep on condition variables when idle).  Handles 0,
 *    CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, with or without _ptsz/_ptds,
 *    all name one default stream.  There is no implicit legacy-stream
 *    synchronisation with other streams: order work across streams with events.
 *  - Every stream keeps a virtual GPU clock: an operation starts at
 *    max(its enqueue time, end of the previous operation) and the worker
 *    holds the stream until start + duration (sleep, then spin the last 50 us).
 *  - Kernels: enqueued, host returns at once.  Duration in microseconds is the
 *    uint32_t that kernelParams[0] points to (or the first 4 bytes of an
 *    `extra` CU_LAUNCH_PARAM_BUFFER_POINTER buffer); none given -> 0 us.
 *    cuModuleGetFunction / cuLibraryGetKernel return one handle per kernel
 *    name (module/library may be NULL); cuFuncGetName/cuKernelGetName return
 *    the name.  A CUkernel may be launched where a CUfunction is expected.
 *  - Copies and memsets take 1 us per 10 KiB (about 10 GB/s), at least 1 us
 *    (never 0, as on a real GPU), and really move data: "device" memory is
 *    host memory from mmap.  A device-side pointer
 *    must lie inside a live allocation (else CUDA_ERROR_INVALID_VALUE); a host
 *    pointer is trusted, as the real driver does; unified pointers (cuMemcpy,
 *    batch copies, CU_MEMORYTYPE_UNIFIED) move data only when both sides are
 *    allocations of this driver, else only the time is simulated.  Arrays are
 *    timing only.  Allocations up to 256 MiB are pre-faulted (MAP_POPULATE)
 *    so that touching them stays within the simulated duration.  Synchronous copies and memsets queue on the default stream
 *    and return when they are done.  Allocations stay mapped until the last
 *    queued operation using them has finished, so freeing early never crashes.
 *  - Synchronisation: cuStreamSynchronize, cuCtxSynchronize (all streams),
 *    events (record = marker in the stream; query/synchronize/elapsed time;
 *    cuStreamWaitEvent makes the waiting stream's worker block until the
 *    marker recorded before the call has completed).  Host functions run on
 *    the stream worker, in order.
 *  - Graphs: while a stream captures, kernels, copies, memsets and host
 *    functions submitted to it are recorded instead of run (event records and
 *    waits are ignored); cuGraphLaunch replays them in order on its stream.
 *    Capturing the legacy default stream is refused (as in CUDA).
 *  - Invalid handles or NULL out-pointers return CUDA_ERROR_INVALID_VALUE and
 *    never crash.  Thread safe.  After fork() the child starts uninitialised
 *    and must call cuInit again.
 *  - Entry points never call other exported entry points (only static
 *    helpers), so one API call hits exactly one uprobe.
 *  - Profiling, as the real driver with CUPTI: cuInit loads
 *    CUDA_INJECTION64_PATH (once per process, and again in a forked child;
 *    gpubpf's shipped library is replaced by its simulator variant beside
 *    it, see injection_variant) and calls its InitializeInjection; simcuProfilerSubscribe
 *    (simcu_profiler.h) subscribes one profiler.  While subscribed, each
 *    launch, copy, memset and graph launch call (host functions included)
 *    draws a correlation id and calls api_enter on the calling thread before
 *    queueing its work; each kernel, copy and memset it queued is reported
 *    with the same id by activity() from the stream's worker when its
 *    virtual end has passed (before synchronisation sees it done).  Stream
 *    ids: 1 for the default stream (every default handle, and synchronous
 *    copies and memsets), created streams 2, 3, ... in creation order.  A
 *    graph launch's nodes share its id, node i reported as graph_node i + 1.
 *    Unsubscribed, a call costs one relaxed atomic load and its work is
 *    never reported, even if a profiler subscribes before it runs.  A launch,
 *    copy, memset or graph launch that fails (an invalid function, pointer
 *    or graph, an empty grid...) still returns through api_exit, with its
 *    CUresult, on the calling thread.
 */
#define _GNU_SOURCE
/* NVIDIA's own switch: declare every versioned entry point (v1, _v2, _ptsz,
 * _ptds) under its own name, so each definition below is checked against the
 * real CUDA 13.0 prototype. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "simcu_profiler.h"

#define SIM_DRIVER_VERSION 13000
#define SPIN_NS            (50 * 1000ull)	/* spin the last 50 us of a wait */
#define BYTES_PER_US       10240ull		/* copy/memset speed: 10 KiB/us */
#define MIN_XFER_NS        1000ull		/* and no copy/memset takes less */
#define PITCH_ALIGN        512			/* cuMemAllocPitch row alignment */
#define POPULATE_MAX       (256ull << 20)	/* pre-fault allocations up to this */

/* ------------------------------------------------------------------ time */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Block until CLOCK_MONOTONIC reaches deadline: sleep, then spin the rest. */
static void wait_until(uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_ns();
		struct timespec ts;

		if (now >= deadline)
			return;
		if (deadline - now <= SPIN_NS)
			continue;
		ts.tv_sec = (deadline - SPIN_NS) / 1000000000ull;
		ts.tv_nsec = (deadline - SPIN_NS) % 1000000000ull;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
}

/* How long a copy or memset of bytes takes: at 10 KiB/us, rounded up, and
 * at least 1 us (a small copy on a real GPU takes about that; never 0). */
static uint64_t bytes_ns(uint64_t bytes)
{
	uint64_t ns = (bytes * 1000ull + BYTES_PER_US - 1) / BYTES_PER_US;

	return ns > MIN_XFER_NS ? ns : MIN_XFER_NS;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* ------------------------------------------------------------- profiler */

/* The profiler interface (simcu_profiler.h), what CUPTI is to the real
 * driver.  Unsubscribed, each launch/copy/memset/graph launch costs one
 * relaxed load of g_prof_on and nothing else: no correlation id is drawn and
 * its work is never reported.  Subscribed, the call draws the next id of a
 * process-wide counter (from 1), calls api_enter on the calling thread
 * before queueing the work, and each kernel/copy/memset it queued is
 * reported by activity() from the stream's worker once its virtual end time
 * has passed, before the stream counts it as done (so after a
 * synchronisation returns, its work has been reported).  Work is reported
 * only to the subscription that saw its call (g_prof_gen).
 *
 * Callbacks run inside g_cb_inflight (incremented before g_prof_on is
 * checked, Dekker style, both seq_cst); unsubscribing clears g_prof_on and
 * waits until no callback of another thread is in flight, so after it
 * returns no callback of the old subscriber runs.  g_prof is written only
 * while g_prof_on is clear and drained.  Subscription changes are
 * serialised by g_prof_mu; callbacks may call the driver, and may
 * unsubscribe (the call cannot wait for its own callback). */
static int g_prof_on;
static int g_cb_inflight;
static uint32_t g_prof_gen;
static uint32_t g_corr_next = 1;
static struct simcu_profiler g_prof;
static pthread_mutex_t g_prof_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int t_in_cb;		/* this thread's callbacks in flight */

/* One API call's profiler state: corr 0 = not reported. */
struct prof_call {
	const char *fn;			/* the exported entry point */
	const struct simcu_launch *launch;	/* a kernel launch's, else NULL */
	uint32_t corr, gen;
	bool entered;
};

static bool cb_begin(void)
{
	__atomic_add_fetch(&g_cb_inflight, 1, __ATOMIC_SEQ_CST);
	t_in_cb++;
	if (__atomic_load_n(&g_prof_on, __ATOMIC_SEQ_CST))
		return true;
	t_in_cb--;
	__atomic_sub_fetch(&g_cb_inflight, 1, __ATOMIC_RELEASE);
	return false;
}

static void cb_end(void)
{
	t_in_cb--;
	__atomic_sub_fetch(&g_cb_inflight, 1, __ATOMIC_RELEASE);
}

static void __attribute__((noinline)) prof_enter_slow(struct prof_call *pc)
{
	if (!cb_begin())
		return;
	pc->corr = __atomic_fetch_add(&g_corr_next, 1, __ATOMIC_RELAXED);
	if (!pc->corr)		/* 0 means "not reported": skip it on wrap */
		pc->corr = __atomic_fetch_add(&g_corr_next, 1, __ATOMIC_RELAXED);
	pc->gen = g_prof_gen;
	if (g_prof.api_enter)
		g_prof.api_enter(g_prof.ctx, pc->corr, pc->fn, pc->launch);
	cb_end();
}

/* Once per API call, after validation and before its work is queued. */
static inline void prof_enter(struct prof_call *pc)
{
	if (pc->entered)
		return;
	pc->entered = true;
	if (__atomic_load_n(&g_prof_on, __ATOMIC_RELAXED))
		prof_enter_slow(pc);
}

static void prof_activity(uint32_t gen, const struct simcu_activity *a)
{
	if (!cb_begin())
		return;
	if (gen == g_prof_gen && g_prof.activity)
		g_prof.activity(g_prof.ctx, a);
	cb_end();
}

/* A launch, copy, memset or graph launch returns rc. */
static CUresult prof_exit(const struct prof_call *pc, CUresult rc)
{
	if (__atomic_load_n(&g_prof_on, __ATOMIC_RELAXED) && cb_begin()) {
		if (g_prof.api_exit)
			g_prof.api_exit(g_prof.ctx, pc->corr, pc->fn, rc);
		cb_end();
	}
	return rc;
}

__attribute__((visibility("default")))
int simcuProfilerSubscribe(const struct simcu_profiler *p)
{
	int rc = 0;

	pthread_mutex_lock(&g_prof_mu);
	if (p) {
		if (__atomic_load_n(&g_prof_on, __ATOMIC_RELAXED)) {
			rc = 1;
		} else {
			g_prof = *p;
			g_prof_gen++;
			__atomic_store_n(&g_prof_on, 1, __ATOMIC_SEQ_CST);
		}
	} else if (__atomic_load_n(&g_prof_on, __ATOMIC_RELAXED)) {
		__atomic_store_n(&g_prof_on, 0, __ATOMIC_SEQ_CST);
		/* drain: callbacks of other threads still running */
		while (__atomic_load_n(&g_cb_inflight, __ATOMIC_SEQ_CST) > t_in_cb)
			sched_yield();
	}
	pthread_mutex_unlock(&g_prof_mu);
	return rc;
}

/* ------------------------------------------------------- handle registry */

/* Every handle given out points at a struct beginning with struct obj.  A
 * handle is valid while it is on g_objs, so garbage handles are rejected
 * without being dereferenced. */
enum obj_kind {
	OBJ_STREAM = 1, OBJ_EVENT, OBJ_FUNC, OBJ_KERNEL, OBJ_MODULE,
	OBJ_LIBRARY, OBJ_GRAPH, OBJ_EXEC, OBJ_MEMHANDLE,
};

struct obj {
	enum obj_kind kind;
	struct obj *next;
};

/* Lock discipline: no code path holds two of the global locks at once
 * (g_lock, g_mem_mu, g_ev_mu, a stream's mu), except the fork handler. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;	/* g_objs */
static struct obj *g_objs;
static volatile int g_inited;
static int g_ctx_dummy;			/* the one context handle */
#define SIM_CTX ((CUcontext)&g_ctx_dummy)

static void obj_add_locked(struct obj *o, enum obj_kind kind)
{
	o->kind = kind;
	o->next = g_objs;
	g_objs = o;
}

static struct obj *obj_find_locked(const void *h, enum obj_kind kind)
{
	struct obj *o;

	if (!h)
		return NULL;
	for (o = g_objs; o; o = o->next)
		if (o == h && o->kind == kind)
			return o;
	return NULL;
}

static bool obj_valid(const void *h, enum obj_kind kind)
{
	bool ok;

	pthread_mutex_lock(&g_lock);
	ok = obj_find_locked(h, kind) != NULL;
	pthread_mutex_unlock(&g_lock);
	return ok;
}

/* Unlink h if it is a live handle of that kind; true if it was. */
static bool obj_remove(const void *h, enum obj_kind kind)
{
	struct obj **pp;
	bool found = false;

	if (!h)
		return false;
	pthread_mutex_lock(&g_lock);
	for (pp = &g_objs; *pp; pp = &(*pp)->next) {
		if (*pp == h && (*pp)->kind == kind) {
			*pp = (*pp)->next;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return found;
}

/* Plain handles with nothing behind them (modules, libraries). */
static void *obj_new(enum obj_kind kind)
{
	struct obj *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	pthread_mutex_lock(&g_lock);
	obj_add_locked(o, kind);
	pthread_mutex_unlock(&g_lock);
	return o;
}

#define CHECK_INIT() do { if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED; } while (0)

/* -------------------------------------------------------- allocations */

enum mem_kind { MEM_DEVICE = 1, MEM_HOST = 2, MEM_MANAGED = 4 };

/* One live or still-referenced allocation.  refs: 1 for the table entry plus
 * one per queued operation touching it; unmapped when it drops to 0. */
struct sim_alloc {
	uintptr_t base;
	size_t size, map_len;
	enum mem_kind kind;
	int refs;
};

static pthread_mutex_t g_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sim_alloc **g_allocs;	/* live allocations, unordered */
static size_t g_nallocs, g_allocs_cap;

/* Map size bytes (low32: below 4 GiB for the 32-bit v1 API) and record them. */
static struct sim_alloc *alloc_new(size_t size, enum mem_kind kind, bool low32)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct sim_alloc *a;
	void *p;

	if (size == 0 || size > ((size_t)1 << 46))
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->map_len = (size + page - 1) / page * page;
	/* Pre-fault (up to POPULATE_MAX) so that a copy's first touch does not
	 * pay page faults beyond its simulated duration. */
	p = mmap(NULL, a->map_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | (low32 ? MAP_32BIT : 0) |
		 (size <= POPULATE_MAX ? MAP_POPULATE : MAP_NORESERVE),
		 -1, 0);
	if (p == MAP_FAILED) {
		free(a);
		return NULL;
	}
	a->base = (uintptr_t)p;
	a->size = size;
	a->kind = kind;
	a->refs = 1;

	pthread_mutex_lock(&g_mem_mu);
	if (g_nallocs == g_allocs_cap) {
		size_t cap = g_allocs_cap ? g_allocs_cap * 2 : 64;
		struct sim_alloc **n = realloc(g_allocs, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&g_mem_mu);
			munmap(p, a->map_len);
			free(a);
			return NULL;
		}
		g_allocs = n;
		g_allocs_cap = cap;
	}
	g_allocs[g_nallocs++] = a;
	pthread_mutex_unlock(&g_mem_mu);
	return a;
}

static void alloc_unref_locked(struct sim_alloc *a)
{
	if (--a->refs == 0) {
		munmap((void *)a->base, a->map_len);
		free(a);
	}
}

static void alloc_unpin(struct sim_alloc *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&g_mem_mu);
	alloc_unref_locked(a);
	pthread_mutex_unlock(&g_mem_mu);
}

static void alloc_ref(struct sim_alloc *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&g_mem_mu);
	a->refs++;
	pthread_mutex_unlock(&g_mem_mu);
}

/* The live allocation containing [addr, addr+span), referenced; or NULL. */
static struct sim_alloc *alloc_pin(uintptr_t addr, size_t span)
{
	struct sim_alloc *found = NULL;
	size_t i;

	if (!addr)
		return NULL;
	pthread_mutex_lock(&g_mem_mu);
	for (i = 0; i < g_nallocs; i++) {
		struct sim_alloc *a = g_allocs[i];

		if (addr >= a->base && addr - a->base <= a->size &&
		    span <= a->size - (addr - a->base)) {
			a->refs++;
			found = a;
			break;
		}
	}
	pthread_mutex_unlock(&g_mem_mu);
	return found;
}

/* Drop the allocation starting exactly at base whose kind is in kinds. */
static CUresult alloc_free(uintptr_t base, unsigned kinds)
{
	CUresult rc = CUDA_ERROR_INVALID_VALUE;
	size_t i;

	if (!base)
		return rc;
	pthread_mutex_lock(&g_mem_mu);
	for (i = 0; i < g_nallocs; i++) {
		struct sim_alloc *a = g_allocs[i];

		if (a->base == base && (a->kind & kinds)) {
			g_allocs[i] = g_allocs[--g_nallocs];
			alloc_unref_locked(a);
			rc = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&g_mem_mu);
	return rc;
}

/* ------------------------------------------------------------- events */

/* An event: each record bumps rec_gen and queues a marker carrying it; the
 * marker's completion sets done_gen and the GPU time.  Complete when
 * done_gen == rec_gen.  refs: the handle plus each queued marker/wait. */
struct sim_event {
	struct obj o;
	int refs;
	uint64_t rec_gen, done_gen, time_ns;
};

static pthread_mutex_t g_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_ev_cv = PTHREAD_COND_INITIALIZER;

static struct sim_event *event_get(CUevent h)
{
	struct sim_event *ev;

	pthread_mutex_lock(&g_lock);
	ev = (struct sim_event *)obj_find_locked(h, OBJ_EVENT);
	if (ev)
		__atomic_add_fetch(&ev->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&g_lock);
	return ev;
}

static void event_put(struct sim_event *ev)
{
	if (ev && __atomic_sub_fetch(&ev->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(ev);
}

/* ---------------------------------------------------- queued operations */

enum op_type { OP_KERNEL, OP_COPY, OP_MEMSET, OP_HOSTFN, OP_RECORD, OP_WAIT };

/* A strided 3-D copy: depth slices of height rows of width bytes. */
struct xfer {
	char *dst;
	const char *src;
	size_t width, height, depth;
	size_t dpitch, spitch, dslice, sslice;
};

/* A 2-D fill of height rows of width elements of elsize bytes. */
struct fill {
	char *dst;
	size_t pitch, width, height;
	unsigned elsize;
	uint32_t value;
};

struct op {
	struct op *next;
	enum op_type type;
	uint64_t enq_ns;		/* earliest start on the GPU clock */
	uint64_t dur_ns;
	bool move;			/* copy/memset really touches memory */
	struct sim_alloc *pin[2];	/* allocations kept mapped until done */
	/* profiler: corr 0 = not reported; the rest fills simcu_activity */
	uint32_t corr, gen;
	uint64_t graph_node;
	const char *name;		/* kernels: lives as long as the process */
	uint32_t grid[3], block[3], smem;
	uint32_t copy_kind;
	uint64_t bytes;
	union {
		struct xfer x;
		struct fill f;
		struct { CUhostFn fn; void *arg; } host;
		struct { struct sim_event *ev; uint64_t gen; } ev;
	} u;
};

static struct op *op_new(enum op_type type)
{
	struct op *op = calloc(1, sizeof(*op));

	if (op) {
		op->type = type;
		op->enq_ns = now_ns();
	}
	return op;
}

static void op_free(struct op *op)
{
	if (!op)
		return;
	alloc_unpin(op->pin[0]);
	alloc_unpin(op->pin[1]);
	if (op->type == OP_RECORD || op->type == OP_WAIT)
		event_put(op->u.ev.ev);
	free(op);
}

static void do_xfer(const struct xfer *x)
{
	size_t y, z;

	for (z = 0; z < x->depth; z++)
		for (y = 0; y < x->height; y++)
			memmove(x->dst + z * x->dslice + y * x->dpitch,
				x->src + z * x->sslice + y * x->spitch, x->width);
}

static void do_fill(const struct fill *f)
{
	size_t y, i;

	for (y = 0; y < f->height; y++) {
		char *row = f->dst + y * f->pitch;

		if (f->elsize == 1) {
			memset(row, (int)(f->value & 0xff), f->width);
		} else if (f->elsize == 2) {
			uint16_t v = (uint16_t)f->value;

			for (i = 0; i < f->width; i++)
				memcpy(row + 2 * i, &v, 2);
		} else {
			for (i = 0; i < f->width; i++)
				memcpy(row + 4 * i, &f->value, 4);
		}
	}
}

/* --------------------------------------------------------------- graphs */

/* A captured graph and an instantiated one: arrays of operation templates
 * (their pins are held by the array). */
struct sim_graph {
	struct obj o;
	struct op *ops;
	size_t n, cap;
};

struct sim_exec {
	struct obj o;
	struct op *ops;
	size_t n;
};

static void ops_release(struct op *ops, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		alloc_unpin(ops[i].pin[0]);
		alloc_unpin(ops[i].pin[1]);
	}
	free(ops);
}

/* Move op into the graph (on success the op node itself is freed). */
static CUresult graph_append(struct sim_graph *g, struct op *op)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 16;
		struct op *n = realloc(g->ops, cap * sizeof(*n));

		if (!n)
			return CUDA_ERROR_OUT_OF_MEMORY;
		g->ops = n;
		g->cap = cap;
	}
	g->ops[g->n] = *op;
	g->ops[g->n].next = NULL;
	g->n++;
	free(op);
	return CUDA_SUCCESS;
}

/* A fresh queue node from a template, pins referenced again. */
static struct op *op_clone(const struct op *t)
{
	struct op *op = malloc(sizeof(*op));

	if (!op)
		return NULL;
	*op = *t;
	op->next = NULL;
	op->enq_ns = now_ns();
	alloc_ref(op->pin[0]);
	alloc_ref(op->pin[1]);
	return op;
}

/* -------------------------------------------------------------- streams */

struct sim_stream {
	struct obj o;
	int refs;			/* handle + worker + transient users */
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	struct op *head, *tail;		/* FIFO of pending operations */
	uint64_t enq, done;		/* operations queued / completed */
	uint64_t gpu_ns;		/* worker only: end of the last operation */
	bool started, closing;
	struct sim_graph *capture;	/* non-NULL while capturing */
	unsigned id;			/* profiler stream id: default 1, then 2, 3... */
};

static struct sim_stream g_default = {
	.refs = 1,
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.work_cv = PTHREAD_COND_INITIALIZER,
	.done_cv = PTHREAD_COND_INITIALIZER,
	.id = 1,
};
static unsigned g_next_stream_id = 2;	/* under g_lock */

static bool is_default_handle(CUstream h)
{
	return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

/* Resolve a stream handle, referenced; NULL if invalid. */
static struct sim_stream *stream_get(CUstream h)
{
	struct sim_stream *s;

	if (is_default_handle(h))
		return &g_default;
	pthread_mutex_lock(&g_lock);
	s = (struct sim_stream *)obj_find_locked(h, OBJ_STREAM);
	if (s)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&g_lock);
	return s;
}

static void stream_put(struct sim_stream *s)
{
	if (!s || s == &g_default)
		return;
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->work_cv);
		pthread_cond_destroy(&s->done_cv);
		free(s);
	}
}

/* Tell the profiler that op (kernel, copy or memset) ran on s from start. */
static void report(struct sim_stream *s, const struct op *op, uint64_t start)
{
	struct simcu_activity a = {
		.kind = op->type == OP_KERNEL ? SIMCU_KERNEL :
			op->type == OP_COPY ? SIMCU_MEMCPY : SIMCU_MEMSET,
		.correlation = op->corr,
		.device = 0,
		.stream = s->id,
		.start = start,
		.end = start + op->dur_ns,
		.name = op->name ? op->name : "",
		.shared_mem = op->smem,
		.copy_kind = op->copy_kind,
		.bytes = op->bytes,
		.graph_node = op->graph_node,
	};

	memcpy(a.grid, op->grid, sizeof(a.grid));
	memcpy(a.block, op->block, sizeof(a.block));
	prof_activity(op->gen, &a);
}

/* Execute one operation on the stream's virtual GPU clock. */
static void run_op(struct sim_stream *s, struct op *op)
{
	uint64_t start = max_u64(op->enq_ns, s->gpu_ns);
	struct sim_event *ev;

	switch (op->type) {
	case OP_KERNEL:
	case OP_COPY:
	case OP_MEMSET:
		if (op->move && op->type == OP_COPY)
			do_xfer(&op->u.x);
		else if (op->move && op->type == OP_MEMSET)
			do_fill(&op->u.f);
		s->gpu_ns = start + op->dur_ns;
		wait_until(s->gpu_ns);
		if (op->corr)
			report(s, op, start);
		break;
	case OP_HOSTFN:
		op->u.host.fn(op->u.host.arg);
		s->gpu_ns = max_u64(start, now_ns());
		break;
	case OP_RECORD:
		ev = op->u.ev.ev;
		pthread_mutex_lock(&g_ev_mu);
		if (op->u.ev.gen > ev->done_gen) {
			ev->done_gen = op->u.ev.gen;
			ev->time_ns = start;
		}
		pthread_cond_broadcast(&g_ev_cv);
		pthread_mutex_unlock(&g_ev_mu);
		s->gpu_ns = start;
		break;
	case OP_WAIT:
		ev = op->u.ev.ev;
		pthread_mutex_lock(&g_ev_mu);
		while (ev->done_gen < op->u.ev.gen)
			pthread_cond_wait(&g_ev_cv, &g_ev_mu);
		start = max_u64(start, ev->time_ns);
		pthread_mutex_unlock(&g_ev_mu);
		s->gpu_ns = start;
		break;
	}
}

/* The worker: pop, run, count; sleeps on work_cv when the queue is empty and
 * exits once the stream is destroyed and drained. */
static void *stream_worker(void *arg)
{
	struct sim_stream *s = arg;
	char name[16];

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	snprintf(name, sizeof(name), "simgpu-s%u", s->id);
	pthread_setname_np(pthread_self(), name);

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct op *op;

		while (!s->head && !s->closing)
			pthread_cond_wait(&s->work_cv, &s->mu);
		op = s->head;
		if (!op)
			break;
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		pthread_mutex_unlock(&s->mu);

		run_op(s, op);
		op_free(op);

		pthread_mutex_lock(&s->mu);
		s->done++;
		pthread_cond_broadcast(&s->done_cv);
	}
	s->started = false;
	pthread_mutex_unlock(&s->mu);
	stream_put(s);
	return NULL;
}

/* Start the worker (s->mu held).  Signals are blocked in it, so they keep
 * going to the application's threads. */
static CUresult stream_start_locked(struct sim_stream *s)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thr;
	int err;

	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	err = pthread_create(&thr, &attr, stream_worker, s);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		__atomic_sub_fetch(&s->refs, 1, __ATOMIC_RELAXED);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	s->started = true;
	return CUDA_SUCCESS;
}

/* Queue op on s, or record it when s is capturing.  sync: the caller will
 * wait for it, which a capturing stream refuses.  *seq: its completion
 * number.  On success op is consumed; on error the caller still owns it. */
static CUresult stream_submit(struct sim_stream *s, struct op *op, bool sync, uint64_t *seq)
{
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&s->mu);
	if (s->capture) {
		rc = sync ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
			  : graph_append(s->capture, op);
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	if (!s->started)
		rc = stream_start_locked(s);
	if (rc == CUDA_SUCCESS) {
		op->next = NULL;
		if (s->tail)
			s->tail->next = op;
		else
			s->head = op;
		s->tail = op;
		if (seq)
			*seq = ++s->enq;
		else
			s->enq++;
		pthread_cond_signal(&s->work_cv);
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static void stream_wait_seq(struct sim_stream *s, uint64_t seq)
{
	pthread_mutex_lock(&s->mu);
	while (s->done < seq)
		pthread_cond_wait(&s->done_cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

/* Queue op on stream h (sync: on the default stream, then wait for it).
 * Consumes op in every case. */
static CUresult submit(CUstream h, struct op *op, bool sync)
{
	struct sim_stream *s = sync ? &g_default : stream_get(h);
	uint64_t seq = 0;
	CUresult rc;

	if (!s) {
		op_free(op);
		return CUDA_ERROR_INVALID_VALUE;
	}
	rc = stream_submit(s, op, sync, &seq);
	if (rc != CUDA_SUCCESS)
		op_free(op);
	else if (sync)
		stream_wait_seq(s, seq);
	stream_put(s);
	return rc;
}

static CUresult stream_sync(CUstream h)
{
	struct sim_stream *s;
	uint64_t seq;
	bool capturing;

	CHECK_INIT();
	s = stream_get(h);
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&s->mu);
	seq = s->enq;
	capturing = s->capture != NULL;
	pthread_mutex_unlock(&s->mu);
	if (!capturing)
		stream_wait_seq(s, seq);
	stream_put(s);
	return capturing ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

static CUresult stream_query(CUstream h)
{
	struct sim_stream *s;
	CUresult rc;

	CHECK_INIT();
	s = stream_get(h);
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&s->mu);
	rc = s->done == s->enq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
	pthread_mutex_unlock(&s->mu);
	stream_put(s);
	return rc;
}

/* Wait for everything queued on every stream before the call. */
static CUresult ctx_sync(void)
{
	struct sim_stream **list = NULL;
	size_t n = 0, cap = 0, i;
	struct obj *o;

	CHECK_INIT();
	pthread_mutex_lock(&g_lock);
	for (o = g_objs; o; o = o->next)
		if (o->kind == OBJ_STREAM)
			cap++;
	list = malloc((cap + 1) * sizeof(*list));
	if (list) {
		list[n++] = &g_default;
		for (o = g_objs; o && n < cap + 1; o = o->next) {
			if (o->kind != OBJ_STREAM)
				continue;
			__atomic_add_fetch(&((struct sim_stream *)o)->refs, 1, __ATOMIC_RELAXED);
			list[n++] = (struct sim_stream *)o;
		}
	}
	pthread_mutex_unlock(&g_lock);
	if (!list)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < n; i++) {
		uint64_t seq;

		pthread_mutex_lock(&list[i]->mu);
		seq = list[i]->enq;
		pthread_mutex_unlock(&list[i]->mu);
		stream_wait_seq(list[i], seq);
		stream_put(list[i]);
	}
	free(list);
	return CUDA_SUCCESS;
}

static CUresult stream_create(CUstream *out, unsigned flags)
{
	struct sim_stream *s;

	CHECK_INIT();
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->refs = 1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	pthread_mutex_lock(&g_lock);
	s->id = g_next_stream_id++;
	obj_add_locked(&s->o, OBJ_STREAM);
	pthread_mutex_unlock(&g_lock);
	*out = (CUstream)s;
	return CUDA_SUCCESS;
}

/* Destroy returns at once; queued work still completes (as in CUDA). */
static CUresult stream_destroy(CUstream h)
{
	struct sim_stream *s = (struct sim_stream *)h;
	struct sim_graph *g;

	CHECK_INIT();
	if (is_default_handle(h) || !obj_remove(h, OBJ_STREAM))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&s->mu);
	s->closing = true;
	g = s->capture;
	s->capture = NULL;
	pthread_cond_signal(&s->work_cv);
	pthread_mutex_unlock(&s->mu);
	if (g) {
		ops_release(g->ops, g->n);
		free(g);
	}
	stream_put(s);
	return CUDA_SUCCESS;
}

/* -------------------------------------------------------- kernel names */

struct sim_func {
	struct obj o;
	char *name;
};

struct sim_kernel {
	struct obj o;
	struct sim_func *func;
};

/* One CUfunction (and one CUkernel) per name; they live forever, so
 * names returned by cuFuncGetName stay valid. */
static void *name_handle(const char *name, enum obj_kind kind)
{
	struct sim_func *f = NULL;
	struct sim_kernel *k = NULL;
	struct obj *o;

	pthread_mutex_lock(&g_lock);
	for (o = g_objs; o; o = o->next) {
		if (o->kind == OBJ_FUNC && !strcmp(((struct sim_func *)o)->name, name))
			f = (struct sim_func *)o;
		if (o->kind == OBJ_KERNEL && kind == OBJ_KERNEL &&
		    !strcmp(((struct sim_kernel *)o)->func->name, name))
			k = (struct sim_kernel *)o;
	}
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (f && !(f->name = strdup(name))) {
			free(f);
			f = NULL;
		}
		if (f)
			obj_add_locked(&f->o, OBJ_FUNC);
	}
	if (f && kind == OBJ_KERNEL && !k) {
		k = calloc(1, sizeof(*k));
		if (k) {
			k->func = f;
			obj_add_locked(&k->o, OBJ_KERNEL);
		}
	}
	pthread_mutex_unlock(&g_lock);
	return kind == OBJ_KERNEL ? (void *)k : (void *)f;
}

/* ------------------------------------------------------------ launches */

/* Kernel duration (us): *(uint32_t *)kernelParams[0], else the first four
 * bytes of an extra CU_LAUNCH_PARAM_BUFFER_POINTER buffer, else 0. */
static uint32_t kernel_us(void **params, void **extra)
{
	uint32_t us = 0;
	int i;

	if (params && params[0]) {
		memcpy(&us, params[0], sizeof(us));
		return us;
	}
	for (i = 0; extra && i < 32 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER && extra[i + 1]) {
			memcpy(&us, extra[i + 1], sizeof(us));
			break;
		}
	}
	return us;
}

/* fn: the exported entry point, for the profiler. */
static CUresult launch_body(struct prof_call *pc, CUfunction f, unsigned gx, unsigned gy,
			    unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
			    CUstream h, void **params, void **extra)
{
	const char *name = NULL;
	struct obj *o;
	struct op *op;

	CHECK_INIT();
	pthread_mutex_lock(&g_lock);
	if ((o = obj_find_locked(f, OBJ_FUNC)))
		name = ((struct sim_func *)o)->name;
	else if ((o = obj_find_locked(f, OBJ_KERNEL)))
		name = ((struct sim_kernel *)o)->func->name;
	pthread_mutex_unlock(&g_lock);
	if (!o || !gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	op = op_new(OP_KERNEL);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->dur_ns = (uint64_t)kernel_us(params, extra) * 1000ull;
	op->name = name;
	op->grid[0] = gx; op->grid[1] = gy; op->grid[2] = gz;
	op->block[0] = bx; op->block[1] = by; op->block[2] = bz;
	op->smem = smem;
	prof_enter(pc);
	op->corr = pc->corr;
	op->gen = pc->gen;
	return submit(h, op, false);
}

static CUresult launch(const char *fn, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
		       unsigned bx, unsigned by, unsigned bz, unsigned smem,
		       CUstream h, void **params, void **extra)
{
	struct simcu_launch l = { .func = f, .params = params, .extra = extra };
	struct prof_call pc = { .fn = fn, .launch = &l };

	return prof_exit(&pc, launch_body(&pc, f, gx, gy, gz, bx, by, bz, smem, h, params, extra));
}

static CUresult launch_ex(const char *fn, const CUlaunchConfig *c, CUfunction f,
			  void **params, void **extra)
{
	if (!c)
		return prof_exit(&(struct prof_call){ .fn = fn },
				 g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED);
	return launch(fn, f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
		      c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream,
		      params, extra);
}

/* A host function gets a correlation id but is never reported as activity. */
static CUresult launch_host(const char *api, CUstream h, CUhostFn fn, void *arg)
{
	struct prof_call pc = { .fn = api };
	struct op *op;

	CHECK_INIT();
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	op = op_new(OP_HOSTFN);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.host.fn = fn;
	op->u.host.arg = arg;
	prof_enter(&pc);
	return submit(h, op, false);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			void **kernelParams, void **extra)
{
	return launch(__func__, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		      sharedMemBytes, hStream, kernelParams, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			     void **kernelParams, void **extra)
{
	return launch(__func__, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		      sharedMemBytes, hStream, kernelParams, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return launch_ex(__func__, config, f, kernelParams, extra);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return launch_ex(__func__, config, f, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
				   unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
				   void **kernelParams)
{
	return launch(__func__, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		      sharedMemBytes, hStream, kernelParams, NULL);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
					unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
					unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
					void **kernelParams)
{
	return launch(__func__, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		      sharedMemBytes, hStream, kernelParams, NULL);
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	return launch_host(__func__, hStream, fn, userData);
}

CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
	return launch_host(__func__, hStream, fn, userData);
}

/* -------------------------------------------------------------- copies */

/* How a copy endpoint is addressed. */
enum side {
	SIDE_HOST,	/* host pointer: trusted when non-NULL */
	SIDE_DEVICE,	/* must lie inside a live allocation */
	SIDE_ANY,	/* unified: data moves only if it is an allocation */
	SIDE_ARRAY,	/* CUDA array: timing only */
};

/* A normalised copy: 1-D copies have height = depth = 1. */
struct copy_desc {
	uintptr_t src, dst;
	enum side sk, dk;
	size_t width, height, depth;
	size_t spitch, dpitch, sheight, dheight;
	bool peer;		/* a peer copy (reported as such) */
};

/* Check one endpoint spanning span bytes; pin it if it is an allocation.
 * *movable is cleared when its data cannot be touched. */
static CUresult side_check(uintptr_t p, size_t span, enum side k,
			   struct sim_alloc **pin, bool *movable)
{
	*pin = NULL;
	if (span == 0)
		return CUDA_SUCCESS;
	switch (k) {
	case SIDE_HOST:
		if (!p)
			return CUDA_ERROR_INVALID_VALUE;
		*pin = alloc_pin(p, span);
		return CUDA_SUCCESS;
	case SIDE_DEVICE:
		*pin = alloc_pin(p, span);
		return *pin ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case SIDE_ANY:
		*pin = alloc_pin(p, span);
		if (!*pin)
			*movable = false;
		return CUDA_SUCCESS;
	case SIDE_ARRAY:
		*movable = false;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* The profiler's copy kind of one endpoint: true if device memory.  Arrays
 * are device memory; a unified pointer is device memory when it lies in a
 * device or managed allocation of this driver, host memory when it lies in
 * cuMemAllocHost memory or in no allocation at all (pageable host memory,
 * as every device pointer of this driver is an allocation). */
static bool side_is_device(enum side k, const struct sim_alloc *pin)
{
	switch (k) {
	case SIDE_HOST:   return false;
	case SIDE_DEVICE: return true;
	case SIDE_ARRAY:  return true;
	case SIDE_ANY:    return pin && pin->kind != MEM_HOST;
	}
	return false;
}

/* CUPTI's copy kinds: 1 HtoD, 2 DtoH, 8 DtoD, 9 HtoH, 10 peer. */
static uint32_t copy_kind(const struct copy_desc *d, const struct op *op)
{
	bool sdev = side_is_device(d->sk, op->pin[0]);
	bool ddev = side_is_device(d->dk, op->pin[1]);

	if (d->peer)
		return 10;
	return sdev ? (ddev ? 8 : 2) : (ddev ? 1 : 9);
}

/* pc: the API call's profiler state (one per call, shared by a batch). */
static CUresult copy_body(struct prof_call *pc, const struct copy_desc *d, CUstream h, bool sync)
{
	size_t sspan = 0, dspan = 0, bytes;
	struct op *op;
	CUresult rc;

	CHECK_INIT();
	if ((d->height > 1 && (d->spitch < d->width || d->dpitch < d->width)) ||
	    (d->depth > 1 && (d->sheight < d->height || d->dheight < d->height)))
		return CUDA_ERROR_INVALID_VALUE;
	bytes = d->width * d->height * d->depth;
	if (bytes) {
		sspan = (d->depth - 1) * d->spitch * d->sheight +
			(d->height - 1) * d->spitch + d->width;
		dspan = (d->depth - 1) * d->dpitch * d->dheight +
			(d->height - 1) * d->dpitch + d->width;
	}
	op = op_new(OP_COPY);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->move = bytes > 0;
	rc = side_check(d->src, sspan, d->sk, &op->pin[0], &op->move);
	if (rc == CUDA_SUCCESS)
		rc = side_check(d->dst, dspan, d->dk, &op->pin[1], &op->move);
	if (rc != CUDA_SUCCESS) {
		op_free(op);
		return rc;
	}
	op->dur_ns = bytes_ns(bytes);
	op->bytes = bytes;
	op->copy_kind = copy_kind(d, op);
	prof_enter(pc);
	op->corr = pc->corr;
	op->gen = pc->gen;
	op->u.x = (struct xfer){
		.dst = (char *)d->dst, .src = (const char *)d->src,
		.width = d->width, .height = d->height, .depth = d->depth,
		.dpitch = d->dpitch, .spitch = d->spitch,
		.dslice = d->dpitch * d->dheight, .sslice = d->spitch * d->sheight,
	};
	return submit(h, op, sync);
}

static CUresult copy_submit(struct prof_call *pc, const struct copy_desc *d, CUstream h, bool sync)
{
	return prof_exit(pc, copy_body(pc, d, h, sync));
}

static CUresult copy_1d_pc(struct prof_call *pc, uintptr_t dst, enum side dk, uintptr_t src,
			   enum side sk, size_t bytes, CUstream h, bool sync, bool peer)
{
	struct copy_desc d = {
		.src = src, .dst = dst, .sk = sk, .dk = dk,
		.width = bytes, .height = 1, .depth = 1,
		.spitch = bytes, .dpitch = bytes, .sheight = 1, .dheight = 1,
		.peer = peer,
	};

	return copy_submit(pc, &d, h, sync);
}

static CUresult copy_1d(const char *fn, uintptr_t dst, enum side dk, uintptr_t src, enum side sk,
			size_t bytes, CUstream h, bool sync)
{
	struct prof_call pc = { .fn = fn };

	return copy_1d_pc(&pc, dst, dk, src, sk, bytes, h, sync, false);
}

/* Endpoint address and kind from a CUmemorytype and its pointer fields. */
static CUresult side_from(CUmemorytype t, const void *host, CUdeviceptr dev,
			  uintptr_t *p, enum side *k)
{
	switch (t) {
	case CU_MEMORYTYPE_HOST:    *p = (uintptr_t)host; *k = SIDE_HOST;   return CUDA_SUCCESS;
	case CU_MEMORYTYPE_DEVICE:  *p = dev;             *k = SIDE_DEVICE; return CUDA_SUCCESS;
	case CU_MEMORYTYPE_UNIFIED: *p = dev;             *k = SIDE_ANY;    return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:   *p = 0;               *k = SIDE_ARRAY;  return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* Shared body of every 2-D/3-D descriptor: resolve both ends and offsets. */
#define COPY_DESC_FROM(d, c, srcz, dstz, depth_, srch, dsth)				\
	({										\
		CUresult _rc = side_from((c)->srcMemoryType, (c)->srcHost,		\
					 (c)->srcDevice, &(d).src, &(d).sk);		\
		if (_rc == CUDA_SUCCESS)						\
			_rc = side_from((c)->dstMemoryType, (c)->dstHost,		\
					(c)->dstDevice, &(d).dst, &(d).dk);		\
		(d).width = (c)->WidthInBytes;						\
		(d).height = (c)->Height;						\
		(d).depth = (depth_);							\
		(d).spitch = (c)->srcPitch ? (c)->srcPitch : (c)->WidthInBytes;		\
		(d).dpitch = (c)->dstPitch ? (c)->dstPitch : (c)->WidthInBytes;		\
		(d).sheight = (srch) ? (srch) : (c)->Height;				\
		(d).dheight = (dsth) ? (dsth) : (c)->Height;				\
		if ((d).sk != SIDE_ARRAY && (d).src)					\
			(d).src += (srcz) * (d).spitch * (d).sheight +			\
				   (c)->srcY * (d).spitch + (c)->srcXInBytes;		\
		if ((d).dk != SIDE_ARRAY && (d).dst)					\
			(d).dst += (dstz) * (d).dpitch * (d).dheight +			\
				   (c)->dstY * (d).dpitch + (c)->dstXInBytes;		\
		_rc;									\
	})

static CUresult copy_2d(const char *fn, const CUDA_MEMCPY2D *c, CUstream h, bool sync)
{
	struct prof_call pc = { .fn = fn };
	struct copy_desc d = { 0 };

	CHECK_INIT();
	if (!c || COPY_DESC_FROM(d, c, 0, 0, 1, 0, 0) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	return copy_submit(&pc, &d, h, sync);
}

static CUresult copy_2d_v1(const char *fn, const CUDA_MEMCPY2D_v1 *c, CUstream h, bool sync)
{
	struct prof_call pc = { .fn = fn };
	struct copy_desc d = { 0 };

	CHECK_INIT();
	if (!c || COPY_DESC_FROM(d, c, 0, 0, 1, 0, 0) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	return copy_submit(&pc, &d, h, sync);
}

static CUresult copy_3d(const char *fn, const CUDA_MEMCPY3D *c, CUstream h, bool sync)
{
	struct prof_call pc = { .fn = fn };
	struct copy_desc d = { 0 };

	CHECK_INIT();
	if (!c || COPY_DESC_FROM(d, c, c->srcZ, c->dstZ, c->Depth, c->srcHeight,
				 c->dstHeight) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	return copy_submit(&pc, &d, h, sync);
}

static CUresult copy_3d_v1(const char *fn, const CUDA_MEMCPY3D_v1 *c, CUstream h, bool sync)
{
	struct prof_call pc = { .fn = fn };
	struct copy_desc d = { 0 };

	CHECK_INIT();
	if (!c || COPY_DESC_FROM(d, c, c->srcZ, c->dstZ, c->Depth, c->srcHeight,
				 c->dstHeight) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	return copy_submit(&pc, &d, h, sync);
}

static CUresult copy_3d_peer(const char *fn, const CUDA_MEMCPY3D_PEER *c, CUstream h, bool sync)
{
	struct prof_call pc = { .fn = fn };
	struct copy_desc d = { .peer = true };

	CHECK_INIT();
	if (!c || COPY_DESC_FROM(d, c, c->srcZ, c->dstZ, c->Depth, c->srcHeight,
				 c->dstHeight) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	return copy_submit(&pc, &d, h, sync);
}

/* cuMemcpyBatchAsync: count independent unified-address copies. */
static CUresult copy_batch(const char *fn, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
			   size_t count, size_t *fail_idx, CUstream h)
{
	struct prof_call pc = { .fn = fn };	/* one correlation id for the batch */
	struct sim_stream *s;
	size_t i;
	CUresult rc = CUDA_SUCCESS;

	CHECK_INIT();
	if (!dsts || !srcs || !sizes || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	s = stream_get(h);
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	stream_put(s);
	for (i = 0; i < count && rc == CUDA_SUCCESS; i++)
		rc = copy_1d_pc(&pc, dsts[i], SIDE_ANY, srcs[i], SIDE_ANY, sizes[i], h, false, false);
	if (rc != CUDA_SUCCESS && fail_idx)
		*fail_idx = i - 1;
	return rc;
}

/* One cuMemcpy3DBatchAsync operand: pointer (unified) or array. */
static void batch_operand(const CUmemcpy3DOperand *o, const CUextent3D *e,
			  uintptr_t *p, enum side *k, size_t *pitch, size_t *height)
{
	if (o->type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
		*p = o->op.ptr.ptr;
		*k = SIDE_ANY;
		*pitch = o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width;
		*height = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
	} else {
		*p = 0;
		*k = SIDE_ARRAY;
		*pitch = e->width;
		*height = e->height;
	}
}

static CUresult copy_batch_3d(const char *fn, size_t n, CUDA_MEMCPY3D_BATCH_OP *ops,
			      size_t *fail_idx, CUstream h)
{
	struct prof_call pc = { .fn = fn };	/* one correlation id for the batch */
	struct sim_stream *s;
	size_t i;
	CUresult rc = CUDA_SUCCESS;

	CHECK_INIT();
	if (!ops || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	s = stream_get(h);
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	stream_put(s);
	for (i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		struct copy_desc d = { 0 };

		batch_operand(&ops[i].src, &ops[i].extent, &d.src, &d.sk, &d.spitch, &d.sheight);
		batch_operand(&ops[i].dst, &ops[i].extent, &d.dst, &d.dk, &d.dpitch, &d.dheight);
		d.width = ops[i].extent.width;
		d.height = ops[i].extent.height;
		d.depth = ops[i].extent.depth;
		rc = (d.width && d.height && d.depth) ? copy_submit(&pc, &d, h, false)
						      : CUDA_ERROR_INVALID_VALUE;
	}
	if (rc != CUDA_SUCCESS && fail_idx)
		*fail_idx = i - 1;
	return rc;
}

#define H(p)  ((uintptr_t)(p))

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{ return copy_1d(__func__, dst, SIDE_ANY, src, SIDE_ANY, ByteCount, NULL, true); }
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{ return copy_1d(__func__, dst, SIDE_ANY, src, SIDE_ANY, ByteCount, NULL, true); }
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{ return copy_1d(__func__, dst, SIDE_ANY, src, SIDE_ANY, ByteCount, hStream, false); }
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{ return copy_1d(__func__, dst, SIDE_ANY, src, SIDE_ANY, ByteCount, hStream, false); }

CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, H(srcHost), SIDE_HOST, ByteCount, NULL, true); }
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, H(srcHost), SIDE_HOST, ByteCount, NULL, true); }
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, H(srcHost), SIDE_HOST, ByteCount, NULL, true); }

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{ return copy_1d(__func__, H(dstHost), SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount, NULL, true); }
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{ return copy_1d(__func__, H(dstHost), SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount, NULL, true); }
CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{ return copy_1d(__func__, H(dstHost), SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount, NULL, true); }

CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, NULL, true); }
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, NULL, true); }
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, NULL, true); }

CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount, CUstream hStream)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, H(srcHost), SIDE_HOST, ByteCount, hStream, false); }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, H(srcHost), SIDE_HOST, ByteCount, hStream, false); }
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, H(srcHost), SIDE_HOST, ByteCount, hStream, false); }

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream)
{ return copy_1d(__func__, H(dstHost), SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount, hStream, false); }
CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{ return copy_1d(__func__, H(dstHost), SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount, hStream, false); }
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{ return copy_1d(__func__, H(dstHost), SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount, hStream, false); }

CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, hStream, false); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, hStream, false); }
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{ return copy_1d(__func__, dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, hStream, false); }

/* Peer copies: one device, so contexts must be the implicit one (or NULL). */
static CUresult copy_peer(const char *fn, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
			  CUcontext sctx, size_t bytes, CUstream h, bool sync)
{
	struct prof_call pc = { .fn = fn };

	if ((dctx && dctx != SIM_CTX) || (sctx && sctx != SIM_CTX))
		return g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	return copy_1d_pc(&pc, dst, SIDE_DEVICE, src, SIDE_DEVICE, bytes, h, sync, true);
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
		      CUcontext srcContext, size_t ByteCount)
{ return copy_peer(__func__, dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, true); }
CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
			   CUcontext srcContext, size_t ByteCount)
{ return copy_peer(__func__, dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, true); }
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
			   CUcontext srcContext, size_t ByteCount, CUstream hStream)
{ return copy_peer(__func__, dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, false); }
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
				CUcontext srcContext, size_t ByteCount, CUstream hStream)
{ return copy_peer(__func__, dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, false); }

CUresult cuMemcpy2D(const CUDA_MEMCPY2D_v1 *pCopy) { return copy_2d_v1(__func__, pCopy, NULL, true); }
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) { return copy_2d(__func__, pCopy, NULL, true); }
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy) { return copy_2d(__func__, pCopy, NULL, true); }
CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1 *pCopy) { return copy_2d_v1(__func__, pCopy, NULL, true); }
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy) { return copy_2d(__func__, pCopy, NULL, true); }
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy) { return copy_2d(__func__, pCopy, NULL, true); }
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream)
{ return copy_2d_v1(__func__, pCopy, hStream, false); }
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{ return copy_2d(__func__, pCopy, hStream, false); }
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{ return copy_2d(__func__, pCopy, hStream, false); }

CUresult cuMemcpy3D(const CUDA_MEMCPY3D_v1 *pCopy) { return copy_3d_v1(__func__, pCopy, NULL, true); }
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) { return copy_3d(__func__, pCopy, NULL, true); }
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy) { return copy_3d(__func__, pCopy, NULL, true); }
CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream)
{ return copy_3d_v1(__func__, pCopy, hStream, false); }
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{ return copy_3d(__func__, pCopy, hStream, false); }
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{ return copy_3d(__func__, pCopy, hStream, false); }
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy) { return copy_3d_peer(__func__, pCopy, NULL, true); }
CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy) { return copy_3d_peer(__func__, pCopy, NULL, true); }
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{ return copy_3d_peer(__func__, pCopy, hStream, false); }
CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{ return copy_3d_peer(__func__, pCopy, hStream, false); }

CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
			    CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
			    size_t *failIdx, CUstream hStream)
{ return copy_batch(__func__, dsts, srcs, sizes, count, failIdx, hStream); }
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				 CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
				 size_t *failIdx, CUstream hStream)
{ return copy_batch(__func__, dsts, srcs, sizes, count, failIdx, hStream); }
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
			       CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
			       CUstream hStream)
{ return copy_batch(__func__, dsts, srcs, sizes, count, NULL, hStream); }
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				    CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
				    CUstream hStream)
{ return copy_batch(__func__, dsts, srcs, sizes, count, NULL, hStream); }
CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
			      unsigned long long flags, CUstream hStream)
{ return copy_batch_3d(__func__, numOps, opList, failIdx, hStream); }
CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
				   unsigned long long flags, CUstream hStream)
{ return copy_batch_3d(__func__, numOps, opList, failIdx, hStream); }
CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
				 unsigned long long flags, CUstream hStream)
{ return copy_batch_3d(__func__, numOps, opList, NULL, hStream); }
CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
				      unsigned long long flags, CUstream hStream)
{ return copy_batch_3d(__func__, numOps, opList, NULL, hStream); }

/* ------------------------------------------------------------- memsets */

/* Fill height rows (pitch apart) of width elements of elsize bytes. */
static CUresult memset_body(struct prof_call *pc, CUdeviceptr dst, size_t pitch, uint32_t value,
			    unsigned elsize, size_t width, size_t height, CUstream h, bool sync)
{
	size_t row = width * elsize, span;
	struct op *op;

	CHECK_INIT();
	if (!dst || dst % elsize || (height > 1 && pitch < row))
		return CUDA_ERROR_INVALID_VALUE;
	span = row && height ? (height - 1) * pitch + row : 0;
	op = op_new(OP_MEMSET);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (span) {
		op->pin[0] = alloc_pin(dst, span);
		if (!op->pin[0]) {
			op_free(op);
			return CUDA_ERROR_INVALID_VALUE;
		}
		op->move = true;
	}
	op->dur_ns = bytes_ns(row * height);
	op->bytes = row * height;
	prof_enter(pc);
	op->corr = pc->corr;
	op->gen = pc->gen;
	op->u.f = (struct fill){
		.dst = (char *)dst, .pitch = pitch, .width = width, .height = height,
		.elsize = elsize, .value = value,
	};
	return submit(h, op, sync);
}

static CUresult memset_submit(const char *fn, CUdeviceptr dst, size_t pitch, uint32_t value,
			      unsigned elsize, size_t width, size_t height, CUstream h, bool sync)
{
	struct prof_call pc = { .fn = fn };

	return prof_exit(&pc, memset_body(&pc, dst, pitch, value, elsize, width, height, h, sync));
}

#define MS1(dst, v, sz, n, h, sync)  memset_submit(__func__, dst, (size_t)(n) * (sz), v, sz, n, 1, h, sync)

CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N)
{ return MS1(dstDevice, uc, 1, N, NULL, true); }
CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{ return MS1(dstDevice, uc, 1, N, NULL, true); }
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{ return MS1(dstDevice, uc, 1, N, NULL, true); }
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{ return MS1(dstDevice, uc, 1, N, hStream, false); }
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{ return MS1(dstDevice, uc, 1, N, hStream, false); }

CUresult cuMemsetD16(CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N)
{ return MS1(dstDevice, us, 2, N, NULL, true); }
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{ return MS1(dstDevice, us, 2, N, NULL, true); }
CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N)
{ return MS1(dstDevice, us, 2, N, NULL, true); }
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{ return MS1(dstDevice, us, 2, N, hStream, false); }
CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{ return MS1(dstDevice, us, 2, N, hStream, false); }

CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N)
{ return MS1(dstDevice, ui, 4, N, NULL, true); }
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{ return MS1(dstDevice, ui, 4, N, NULL, true); }
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{ return MS1(dstDevice, ui, 4, N, NULL, true); }
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{ return MS1(dstDevice, ui, 4, N, hStream, false); }
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{ return MS1(dstDevice, ui, 4, N, hStream, false); }

CUresult cuMemsetD2D8(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc,
		      unsigned int Width, unsigned int Height)
{ return memset_submit(__func__, dstDevice, dstPitch, uc, 1, Width, Height, NULL, true); }
CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height)
{ return memset_submit(__func__, dstDevice, dstPitch, uc, 1, Width, Height, NULL, true); }
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height)
{ return memset_submit(__func__, dstDevice, dstPitch, uc, 1, Width, Height, NULL, true); }
CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
			   size_t Height, CUstream hStream)
{ return memset_submit(__func__, dstDevice, dstPitch, uc, 1, Width, Height, hStream, false); }
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
				size_t Height, CUstream hStream)
{ return memset_submit(__func__, dstDevice, dstPitch, uc, 1, Width, Height, hStream, false); }

CUresult cuMemsetD2D16(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us,
		       unsigned int Width, unsigned int Height)
{ return memset_submit(__func__, dstDevice, dstPitch, us, 2, Width, Height, NULL, true); }
CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height)
{ return memset_submit(__func__, dstDevice, dstPitch, us, 2, Width, Height, NULL, true); }
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height)
{ return memset_submit(__func__, dstDevice, dstPitch, us, 2, Width, Height, NULL, true); }
CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
			    size_t Height, CUstream hStream)
{ return memset_submit(__func__, dstDevice, dstPitch, us, 2, Width, Height, hStream, false); }
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
				 size_t Height, CUstream hStream)
{ return memset_submit(__func__, dstDevice, dstPitch, us, 2, Width, Height, hStream, false); }

CUresult cuMemsetD2D32(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui,
		       unsigned int Width, unsigned int Height)
{ return memset_submit(__func__, dstDevice, dstPitch, ui, 4, Width, Height, NULL, true); }
CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height)
{ return memset_submit(__func__, dstDevice, dstPitch, ui, 4, Width, Height, NULL, true); }
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height)
{ return memset_submit(__func__, dstDevice, dstPitch, ui, 4, Width, Height, NULL, true); }
CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
			    size_t Height, CUstream hStream)
{ return memset_submit(__func__, dstDevice, dstPitch, ui, 4, Width, Height, hStream, false); }
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
				 size_t Height, CUstream hStream)
{ return memset_submit(__func__, dstDevice, dstPitch, ui, 4, Width, Height, hStream, false); }

/* ------------------------------------------------------ synchronisation */

static CUresult event_record(CUevent hEvent, CUstream h)
{
	struct sim_stream *s;
	struct sim_event *ev;
	struct op *op;
	CUresult rc;
	bool capturing;

	CHECK_INIT();
	ev = event_get(hEvent);
	s = ev ? stream_get(h) : NULL;
	if (!s) {
		event_put(ev);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&s->mu);
	capturing = s->capture != NULL;
	pthread_mutex_unlock(&s->mu);
	op = capturing ? NULL : op_new(OP_RECORD);
	if (!op) {
		event_put(ev);
		stream_put(s);
		return capturing ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&g_ev_mu);
	op->u.ev.gen = ++ev->rec_gen;
	pthread_mutex_unlock(&g_ev_mu);
	op->u.ev.ev = ev;		/* the op owns the reference now */
	rc = stream_submit(s, op, false, NULL);
	if (rc != CUDA_SUCCESS)
		op_free(op);
	stream_put(s);
	return rc;
}

static CUresult stream_wait_event(CUstream h, CUevent hEvent)
{
	struct sim_stream *s;
	struct sim_event *ev;
	struct op *op = NULL;
	uint64_t gen;
	bool capturing;
	CUresult rc = CUDA_SUCCESS;

	CHECK_INIT();
	ev = event_get(hEvent);
	s = ev ? stream_get(h) : NULL;
	if (!s) {
		event_put(ev);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&g_ev_mu);
	gen = ev->rec_gen;
	pthread_mutex_unlock(&g_ev_mu);
	pthread_mutex_lock(&s->mu);
	capturing = s->capture != NULL;
	pthread_mutex_unlock(&s->mu);
	/* never recorded: nothing to wait for; capturing: waits are ignored */
	if (gen && !capturing) {
		op = op_new(OP_WAIT);
		if (!op) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			op->u.ev.ev = ev;	/* the op owns the reference now */
			op->u.ev.gen = gen;
			ev = NULL;
			rc = stream_submit(s, op, false, NULL);
			if (rc != CUDA_SUCCESS)
				op_free(op);
		}
	}
	event_put(ev);
	stream_put(s);
	return rc;
}

/* CUDA_SUCCESS when the latest record has completed (or there was none),
 * else CUDA_ERROR_NOT_READY; wait: block until it has completed first. */
static CUresult event_state(CUevent hEvent, bool wait)
{
	struct sim_event *ev;
	bool done;

	CHECK_INIT();
	ev = event_get(hEvent);
	if (!ev)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_ev_mu);
	if (wait) {
		uint64_t gen = ev->rec_gen;

		while (ev->done_gen < gen)
			pthread_cond_wait(&g_ev_cv, &g_ev_mu);
	}
	done = ev->done_gen >= ev->rec_gen;
	pthread_mutex_unlock(&g_ev_mu);
	event_put(ev);
	return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuCtxSynchronize(void) { return ctx_sync(); }

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	if (ctx && ctx != SIM_CTX)
		return g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	return ctx_sync();
}

CUresult cuStreamSynchronize(CUstream hStream) { return stream_sync(hStream); }
CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return stream_sync(hStream); }
CUresult cuStreamQuery(CUstream hStream) { return stream_query(hStream); }
CUresult cuStreamQuery_ptsz(CUstream hStream) { return stream_query(hStream); }
CUresult cuEventSynchronize(CUevent hEvent) { return event_state(hEvent, true); }
CUresult cuEventQuery(CUevent hEvent) { return event_state(hEvent, false); }

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{ return stream_wait_event(hStream, hEvent); }
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{ return stream_wait_event(hStream, hEvent); }
CUresult cuEventRecord(CUevent hEvent, CUstream hStream) { return event_record(hEvent, hStream); }
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) { return event_record(hEvent, hStream); }
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{ return event_record(hEvent, hStream); }
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{ return event_record(hEvent, hStream); }

/* --------------------------------------------------- allocation entry points */

static CUresult mem_alloc(CUdeviceptr *out, size_t size, enum mem_kind kind)
{
	struct sim_alloc *a;

	CHECK_INIT();
	if (!out || !size)
		return CUDA_ERROR_INVALID_VALUE;
	a = alloc_new(size, kind, false);
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = a->base;
	return CUDA_SUCCESS;
}

/* The 32-bit v1 API: memory mapped below 4 GiB so the address fits. */
static CUresult mem_alloc_v1(CUdeviceptr_v1 *out, size_t size, enum mem_kind kind)
{
	struct sim_alloc *a;

	CHECK_INIT();
	if (!out || !size)
		return CUDA_ERROR_INVALID_VALUE;
	a = alloc_new(size, kind, true);
	if (!a || a->base > UINT32_MAX) {
		if (a)
			alloc_free(a->base, kind);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = (CUdeviceptr_v1)a->base;
	return CUDA_SUCCESS;
}

static CUresult mem_alloc_host(void **out, size_t size)
{
	CUdeviceptr p = 0;
	CUresult rc;

	if (!out)
		return g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	rc = mem_alloc(&p, size, MEM_HOST);
	*out = rc == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
	return rc;
}

static CUresult mem_free(uintptr_t p, unsigned kinds)
{
	CHECK_INIT();
	return alloc_free(p, kinds);
}

/* Stream-ordered alloc/free act at once; the stream must be valid. */
static CUresult mem_async(CUdeviceptr *out, size_t size, CUdeviceptr p, CUstream h)
{
	struct sim_stream *s;

	CHECK_INIT();
	s = stream_get(h);
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	stream_put(s);
	return out ? mem_alloc(out, size, MEM_DEVICE) : mem_free(p, MEM_DEVICE | MEM_MANAGED);
}

static CUresult mem_alloc_pitch(CUdeviceptr *out, size_t *pitch, size_t width, size_t height,
				unsigned elsize)
{
	size_t p;
	CUresult rc;

	CHECK_INIT();
	if (!out || !pitch || !width || !height || (elsize != 4 && elsize != 8 && elsize != 16))
		return CUDA_ERROR_INVALID_VALUE;
	p = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
	rc = mem_alloc(out, p * height, MEM_DEVICE);
	if (rc == CUDA_SUCCESS)
		*pitch = p;
	return rc;
}

CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{ return mem_alloc_v1(dptr, bytesize, MEM_DEVICE); }
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{ return mem_alloc(dptr, bytesize, MEM_DEVICE); }

CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
			 unsigned int Height, unsigned int ElementSizeBytes)
{
	CUdeviceptr_v1 p = 0;
	size_t pitch;
	CUresult rc;

	CHECK_INIT();
	if (!dptr || !pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	pitch = (WidthInBytes + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
	rc = mem_alloc_v1(&p, pitch * Height, MEM_DEVICE);
	if (rc == CUDA_SUCCESS) {
		*dptr = p;
		*pPitch = (unsigned int)pitch;
	}
	return rc;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
			    unsigned int ElementSizeBytes)
{ return mem_alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); }

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{ return dptr ? mem_async(dptr, bytesize, 0, hStream) : (g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED); }
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{ return dptr ? mem_async(dptr, bytesize, 0, hStream) : (g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED); }
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{ return dptr ? mem_async(dptr, bytesize, 0, hStream) : (g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED); }
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{ return dptr ? mem_async(dptr, bytesize, 0, hStream) : (g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED); }
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{ return mem_async(NULL, 0, dptr, hStream); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{ return mem_async(NULL, 0, dptr, hStream); }

CUresult cuMemAllocHost(void **pp, unsigned int bytesize) { return mem_alloc_host(pp, bytesize); }
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) { return mem_alloc_host(pp, bytesize); }
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) { return mem_alloc_host(pp, bytesize); }
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{ return mem_alloc(dptr, bytesize, MEM_MANAGED); }

CUresult cuMemFree(CUdeviceptr_v1 dptr) { return mem_free(dptr, MEM_DEVICE | MEM_MANAGED); }
CUresult cuMemFree_v2(CUdeviceptr dptr) { return mem_free(dptr, MEM_DEVICE | MEM_MANAGED); }
CUresult cuMemFreeHost(void *p) { return mem_free(H(p), MEM_HOST); }

/* Virtual memory management: physical handles validated, mappings not
 * backed (such addresses are not usable by copies). */
struct sim_memhandle {
	struct obj o;
	size_t size;
};

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct sim_memhandle *m;

	CHECK_INIT();
	if (!handle || !prop || !size)
		return CUDA_ERROR_INVALID_VALUE;
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->size = size;
	pthread_mutex_lock(&g_lock);
	obj_add_locked(&m->o, OBJ_MEMHANDLE);
	pthread_mutex_unlock(&g_lock);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)m;
	return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	CHECK_INIT();
	if (!obj_remove((void *)(uintptr_t)handle, OBJ_MEMHANDLE))
		return CUDA_ERROR_INVALID_VALUE;
	free((void *)(uintptr_t)handle);
	return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	struct sim_memhandle *m;
	bool ok;

	CHECK_INIT();
	if (!ptr || !size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	m = (struct sim_memhandle *)obj_find_locked((void *)(uintptr_t)handle, OBJ_MEMHANDLE);
	ok = m && offset <= m->size && size <= m->size - offset;
	pthread_mutex_unlock(&g_lock);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CHECK_INIT();
	return ptr && size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------ module / lookup */

static CUresult new_handle(void **out, enum obj_kind kind)
{
	void *h;

	CHECK_INIT();
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	h = obj_new(kind);
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = h;
	return CUDA_SUCCESS;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	if (!fname)
		return g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	return new_handle((void **)module, OBJ_MODULE);
}
CUresult cuModuleLoadData(CUmodule *module, const void *image)
{ return new_handle((void **)module, OBJ_MODULE); }
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
			    CUjit_option *options, void **optionValues)
{ return new_handle((void **)module, OBJ_MODULE); }
CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{ return new_handle((void **)module, OBJ_MODULE); }
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
			   void **jitOptionsValues, unsigned int numJitOptions,
			   CUlibraryOption *libraryOptions, void **libraryOptionValues,
			   unsigned int numLibraryOptions)
{ return new_handle((void **)library, OBJ_LIBRARY); }

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
			       void **jitOptionsValues, unsigned int numJitOptions,
			       CUlibraryOption *libraryOptions, void **libraryOptionValues,
			       unsigned int numLibraryOptions)
{
	if (!fileName)
		return g_inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	return new_handle((void **)library, OBJ_LIBRARY);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	CUfunction f;

	CHECK_INIT();
	if (!hfunc || !name || (hmod && !obj_valid(hmod, OBJ_MODULE)))
		return CUDA_ERROR_INVALID_VALUE;
	f = name_handle(name, OBJ_FUNC);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*hfunc = f;
	return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	CUkernel k;

	CHECK_INIT();
	if (!pKernel || !name || (library && !obj_valid(library, OBJ_LIBRARY)))
		return CUDA_ERROR_INVALID_VALUE;
	k = name_handle(name, OBJ_KERNEL);
	if (!k)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pKernel = k;
	return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct sim_kernel *k;

	CHECK_INIT();
	if (!pFunc)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	k = (struct sim_kernel *)obj_find_locked(kernel, OBJ_KERNEL);
	if (k)
		*pFunc = (CUfunction)k->func;
	pthread_mutex_unlock(&g_lock);
	return k ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The parameters a function takes, from the signature its name may end
 * with: "name(u32,ptr,u64)", u32 4 bytes, u64 and ptr 8, each aligned to its
 * size.  A name without one cannot be described (CUDA_ERROR_NOT_SUPPORTED),
 * as by a driver older than CUDA 12.4.  Past the last: CUDA_ERROR_INVALID_VALUE. */
static CUresult param_info(const char *name, size_t index, size_t *offset, size_t *size)
{
	const char *p = strchr(name, '(');
	size_t off = 0, sz, i;

	if (!p)
		return CUDA_ERROR_NOT_SUPPORTED;
	for (i = 0, p++; *p && *p != ')'; i++) {
		sz = !strncmp(p, "u32", 3) ? 4 : !strncmp(p, "u64", 3) || !strncmp(p, "ptr", 3) ? 8 : 0;
		if (!sz)
			return CUDA_ERROR_INVALID_VALUE;
		off = (off + sz - 1) / sz * sz;
		if (i == index) {
			*offset = off;
			*size = sz;
			return CUDA_SUCCESS;
		}
		off += sz;
		p += 3;
		if (*p == ',')
			p++;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* A function's or a library kernel's parameters (param_info); names live
 * as long as the process. */
static CUresult obj_param_info(void *h, enum obj_kind kind, size_t index, size_t *offset,
			       size_t *size)
{
	const char *name = NULL;
	struct obj *o;

	CHECK_INIT();
	if (!offset || !size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	if ((o = obj_find_locked(h, kind)))
		name = kind == OBJ_FUNC ? ((struct sim_func *)o)->name :
					  ((struct sim_kernel *)o)->func->name;
	pthread_mutex_unlock(&g_lock);
	return name ? param_info(name, index, offset, size) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
			    size_t *paramSize)
{
	return obj_param_info(func, OBJ_FUNC, paramIndex, paramOffset, paramSize);
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
			      size_t *paramSize)
{
	return obj_param_info(kernel, OBJ_KERNEL, paramIndex, paramOffset, paramSize);
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	struct sim_func *f;

	CHECK_INIT();
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	f = (struct sim_func *)obj_find_locked(hfunc, OBJ_FUNC);
	if (f)
		*name = f->name;
	pthread_mutex_unlock(&g_lock);
	return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	struct sim_kernel *k;

	CHECK_INIT();
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	k = (struct sim_kernel *)obj_find_locked(hfunc, OBJ_KERNEL);
	if (k)
		*name = k->func->name;
	pthread_mutex_unlock(&g_lock);
	return k ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* -------------------------------------------------------- graph entry points */

/* legacy: whether handle 0 means the legacy stream (non-_ptsz variants). */
static CUresult begin_capture(CUstream h, bool legacy)
{
	struct sim_stream *s;
	struct sim_graph *g;
	CUresult rc = CUDA_SUCCESS;

	CHECK_INIT();
	if (h == CU_STREAM_LEGACY || (legacy && h == NULL))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	s = stream_get(h);
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	g = calloc(1, sizeof(*g));
	if (!g) {
		stream_put(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&s->mu);
	if (s->capture)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	else
		s->capture = g;
	pthread_mutex_unlock(&s->mu);
	if (rc != CUDA_SUCCESS)
		free(g);
	stream_put(s);
	return rc;
}

static CUresult end_capture(CUstream h, CUgraph *out)
{
	struct sim_stream *s;
	struct sim_graph *g;

	CHECK_INIT();
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	s = stream_get(h);
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&s->mu);
	g = s->capture;
	s->capture = NULL;
	pthread_mutex_unlock(&s->mu);
	stream_put(s);
	if (!g)
		return CUDA_ERROR_ILLEGAL_STATE;
	pthread_mutex_lock(&g_lock);
	obj_add_locked(&g->o, OBJ_GRAPH);
	pthread_mutex_unlock(&g_lock);
	*out = (CUgraph)g;
	return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph)
{
	struct sim_graph *g;
	struct sim_exec *e;
	size_t i;

	CHECK_INIT();
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&g_lock);
	g = (struct sim_graph *)obj_find_locked(hGraph, OBJ_GRAPH);
	if (g && g->n) {
		e->ops = malloc(g->n * sizeof(*e->ops));
		if (e->ops) {
			memcpy(e->ops, g->ops, g->n * sizeof(*e->ops));
			e->n = g->n;
		}
	}
	if (g && (e->ops || !g->n))
		obj_add_locked(&e->o, OBJ_EXEC);
	pthread_mutex_unlock(&g_lock);
	if (!g || (g->n && !e->ops)) {
		free(e);
		return g ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
	}
	for (i = 0; i < e->n; i++) {
		alloc_ref(e->ops[i].pin[0]);
		alloc_ref(e->ops[i].pin[1]);
	}
	*out = (CUgraphExec)e;
	return CUDA_SUCCESS;
}

/* Queue the instantiated operations, in order, on stream h. */
/* One correlation id for the call, carried by every node it runs; node i
 * is reported as graph node i + 1. */
static CUresult graph_launch_body(struct prof_call *pc, CUgraphExec hExec, CUstream h)
{
	struct sim_stream *s;
	struct sim_exec *e;
	struct op **ops = NULL;
	size_t n = 0, i;
	CUresult rc = CUDA_SUCCESS;

	CHECK_INIT();
	pthread_mutex_lock(&g_lock);
	e = (struct sim_exec *)obj_find_locked(hExec, OBJ_EXEC);
	if (e && e->n && (ops = calloc(e->n, sizeof(*ops)))) {
		for (n = 0; n < e->n; n++)
			if (!(ops[n] = op_clone(&e->ops[n])))
				break;
	}
	pthread_mutex_unlock(&g_lock);
	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	if (e->n && n < e->n)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	s = stream_get(h);
	if (!s)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		prof_enter(pc);
	for (i = 0; i < n; i++) {
		ops[i]->corr = pc->corr;
		ops[i]->gen = pc->gen;
		ops[i]->graph_node = i + 1;
		if (rc == CUDA_SUCCESS)
			rc = stream_submit(s, ops[i], false, NULL);
		if (rc != CUDA_SUCCESS)
			op_free(ops[i]);
	}
	stream_put(s);
	free(ops);
	return rc;
}

static CUresult graph_upload(CUgraphExec hExec, CUstream h)
{
	struct sim_stream *s;

	CHECK_INIT();
	if (!obj_valid(hExec, OBJ_EXEC))
		return CUDA_ERROR_INVALID_VALUE;
	s = stream_get(h);
	stream_put(s);
	return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuStreamBeginCapture(CUstream hStream) { return begin_capture(hStream, true); }
CUresult cuStreamBeginCapture_ptsz(CUstream hStream) { return begin_capture(hStream, false); }
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{ return begin_capture(hStream, true); }
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{ return begin_capture(hStream, false); }
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) { return end_capture(hStream, phGraph); }
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) { return end_capture(hStream, phGraph); }

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			    char *logBuffer, size_t bufferSize)
{ return instantiate(phGraphExec, hGraph); }
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize)
{ return instantiate(phGraphExec, hGraph); }
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{ return instantiate(phGraphExec, hGraph); }

static CUresult instantiate_params(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult rc = instantiate(out, g);

	if (p)
		p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
						   : CUDA_GRAPH_INSTANTIATE_ERROR;
	return rc;
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
				      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{ return instantiate_params(phGraphExec, hGraph, instantiateParams); }
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
					   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{ return instantiate_params(phGraphExec, hGraph, instantiateParams); }

static CUresult graph_launch(const char *fn, CUgraphExec hExec, CUstream h)
{
	struct prof_call pc = { .fn = fn };

	return prof_exit(&pc, graph_launch_body(&pc, hExec, h));
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) { return graph_launch(__func__, hGraphExec, hStream); }
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) { return graph_launch(__func__, hGraphExec, hStream); }
CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) { return graph_upload(hGraphExec, hStream); }
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) { return graph_upload(hGraphExec, hStream); }

CUresult cuGraphDestroy(CUgraph hGraph)
{
	struct sim_graph *g = (struct sim_graph *)hGraph;

	CHECK_INIT();
	if (!obj_remove(hGraph, OBJ_GRAPH))
		return CUDA_ERROR_INVALID_VALUE;
	ops_release(g->ops, g->n);
	free(g);
	return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct sim_exec *e = (struct sim_exec *)hGraphExec;

	CHECK_INIT();
	if (!obj_remove(hGraphExec, OBJ_EXEC))
		return CUDA_ERROR_INVALID_VALUE;
	ops_release(e->ops, e->n);
	free(e);
	return CUDA_SUCCESS;
}

/* -------------------------------------------- set-up, streams and events */

/* CUDA_INJECTION64_PATH, as the real driver: the first cuInit of a process
 * (a forked child counts anew) dlopens it and calls its InitializeInjection
 * once, after the driver is initialised, so the library may call the
 * driver (even cuInit: that nested call returns at once).  Concurrent
 * cuInit calls wait for it.  A library that cannot be loaded costs one
 * line on stderr; cuInit still succeeds. */
static pthread_mutex_t g_inj_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_inj_cv = PTHREAD_COND_INITIALIZER;
static int g_inj_state;			/* 0 not yet, 1 running, 2 done */
static pthread_t g_inj_thread;

/*
 * gpubpf ships its injection library without the simulator's backend; the
 * variant with it is built as sim/libgpubpf_cupti.so beside the shipped
 * one.  Given the shipped library, the simulated driver loads that
 * variant (so `gpubpf record -- CMD` has GPU timing however CMD finds
 * this driver); any other library as it is.
 */
static const char *injection_variant(const char *path, char *buf, size_t len)
{
	static const char lib[] = "libgpubpf_cupti.so";
	const char *base = strrchr(path, '/');
	size_t dir = base ? (size_t)(base - path) + 1 : 0;

	if (strcmp(path + dir, lib) ||
	    (size_t)snprintf(buf, len, "%.*ssim/%s", (int)dir, path, lib) >= len ||
	    access(buf, R_OK))
		return path;
	return buf;
}

static void load_injection(void)
{
	char variant[4096];
	const char *path;
	void *lib;
	int (*init)(void);

	if (__atomic_load_n(&g_inj_state, __ATOMIC_ACQUIRE) == 2)
		return;
	pthread_mutex_lock(&g_inj_mu);
	if (g_inj_state == 1 && pthread_equal(g_inj_thread, pthread_self())) {
		pthread_mutex_unlock(&g_inj_mu);
		return;
	}
	while (g_inj_state == 1)
		pthread_cond_wait(&g_inj_cv, &g_inj_mu);
	if (g_inj_state == 2) {
		pthread_mutex_unlock(&g_inj_mu);
		return;
	}
	g_inj_state = 1;
	g_inj_thread = pthread_self();
	pthread_mutex_unlock(&g_inj_mu);

	path = getenv("CUDA_INJECTION64_PATH");
	if (path && *path) {
		path = injection_variant(path, variant, sizeof(variant));
		lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
		if (lib) {
			dlerror();
			init = (int (*)(void))dlsym(lib, "InitializeInjection");
			if (init)
				init();
		}
		if (!lib || !init)
			fprintf(stderr, "libcuda_sim: cannot load injection library %s: %s\n",
				path, dlerror());
	}

	pthread_mutex_lock(&g_inj_mu);
	__atomic_store_n(&g_inj_state, 2, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&g_inj_cv);
	pthread_mutex_unlock(&g_inj_mu);
}

CUresult cuInit(unsigned int Flags)
{
	if (Flags)
		return CUDA_ERROR_INVALID_VALUE;
	g_inited = 1;
	load_injection();
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	/* tests of version-dependent choices make it another driver */
	*driverVersion = getenv("SIMCUDA_DRIVER_VERSION") ? atoi(getenv("SIMCUDA_DRIVER_VERSION")) :
							    SIM_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CHECK_INIT();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	CHECK_INIT();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 1;
	return CUDA_SUCCESS;
}

static CUresult get_ctx(CUcontext *pctx, CUdevice dev)
{
	CHECK_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*pctx = SIM_CTX;
	return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) { return get_ctx(pctx, dev); }
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) { return get_ctx(pctx, dev); }
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) { return get_ctx(pctx, dev); }

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CHECK_INIT();
	return !ctx || ctx == SIM_CTX ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) { return stream_create(phStream, Flags); }
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{ return stream_create(phStream, flags); }
CUresult cuStreamDestroy(CUstream hStream) { return stream_destroy(hStream); }
CUresult cuStreamDestroy_v2(CUstream hStream) { return stream_destroy(hStream); }

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct sim_event *ev;

	CHECK_INIT();
	if (!phEvent)
		return CUDA_ERROR_INVALID_VALUE;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ev->refs = 1;
	pthread_mutex_lock(&g_lock);
	obj_add_locked(&ev->o, OBJ_EVENT);
	pthread_mutex_unlock(&g_lock);
	*phEvent = (CUevent)ev;
	return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent hEvent)
{
	CHECK_INIT();
	if (!obj_remove(hEvent, OBJ_EVENT))
		return CUDA_ERROR_INVALID_VALUE;
	event_put((struct sim_event *)hEvent);
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) { return event_destroy(hEvent); }
CUresult cuEventDestroy_v2(CUevent hEvent) { return event_destroy(hEvent); }

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	struct sim_event *a, *b;
	CUresult rc = CUDA_SUCCESS;

	CHECK_INIT();
	a = event_get(hStart);
	b = event_get(hEnd);
	if (!pMilliseconds || !a || !b) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto cleanup;
	}
	pthread_mutex_lock(&g_ev_mu);
	if (!a->rec_gen || !b->rec_gen)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (a->done_gen < a->rec_gen || b->done_gen < b->rec_gen)
		rc = CUDA_ERROR_NOT_READY;
	else
		*pMilliseconds = (float)(((double)b->time_ns - (double)a->time_ns) / 1e6);
	pthread_mutex_unlock(&g_ev_mu);
cleanup:
	event_put(a);
	event_put(b);
	return rc;
}

/* --------------------------------------------------------------- errors */

static const struct {
	CUresult code;
	const char *name, *text;
} err_tab[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
	  "the operation cannot be performed in the present state" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	  "operation not permitted when stream is capturing" },
};

static CUresult error_lookup(CUresult error, const char **pStr, bool name)
{
	size_t i;

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < sizeof(err_tab) / sizeof(err_tab[0]); i++) {
		if (err_tab[i].code == error) {
			*pStr = name ? err_tab[i].name : err_tab[i].text;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr) { return error_lookup(error, pStr, false); }
CUresult cuGetErrorName(CUresult error, const char **pStr) { return error_lookup(error, pStr, true); }

/* ----------------------------------------------------------------- fork */

/* Around fork() hold every global lock, so the child's copies are
 * consistent; the child has no stream workers, so it forgets all driver
 * state (leaking it) and starts uninitialised, like a fresh process. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&g_lock);
	pthread_mutex_lock(&g_default.mu);
	pthread_mutex_lock(&g_mem_mu);
	pthread_mutex_lock(&g_ev_mu);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&g_ev_mu);
	pthread_mutex_unlock(&g_mem_mu);
	pthread_mutex_unlock(&g_default.mu);
	pthread_mutex_unlock(&g_lock);
}

static void fork_child(void)
{
	g_inited = 0;
	g_objs = NULL;
	g_nallocs = 0;
	g_default.head = g_default.tail = NULL;
	g_default.enq = g_default.done = g_default.gpu_ns = 0;
	g_default.started = g_default.closing = false;
	g_default.capture = NULL;
	pthread_mutex_init(&g_default.mu, NULL);
	pthread_cond_init(&g_default.work_cv, NULL);
	pthread_cond_init(&g_default.done_cv, NULL);
	pthread_mutex_init(&g_ev_mu, NULL);
	pthread_cond_init(&g_ev_cv, NULL);
	pthread_mutex_init(&g_mem_mu, NULL);
	pthread_mutex_init(&g_lock, NULL);
	g_next_stream_id = 2;
	/* the child loads its injection library (again) at its cuInit, and
	 * starts unsubscribed with fresh correlation ids; only this thread
	 * survives, so only its own callbacks can still be in flight */
	g_inj_state = 0;
	pthread_mutex_init(&g_inj_mu, NULL);
	pthread_cond_init(&g_inj_cv, NULL);
	g_prof_on = 0;
	g_cb_inflight = t_in_cb;
	g_corr_next = 1;
	memset(&g_prof, 0, sizeof(g_prof));
	pthread_mutex_init(&g_prof_mu, NULL);
}

__attribute__((constructor)) static void sim_load(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
