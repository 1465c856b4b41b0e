// SPDX-License-Identifier: BSD-2-Clause
/*
 * cudacalls: call every libcuda entry point gpubpf probes, once each, with
 * distinctive arguments, and write what was called as ground truth.
 *
 *	cudacalls LIBPATH TRUTH.json
 *
 * With CUDACALLS_LINGER_MS set it waits that long before exiting, for tests
 * that name native frames from /proc/PID/maps while the process lives (a
 * stack first seen in a process's last instant may not be named).
 *
 * LIBPATH is dlopen'ed (the simulated driver build/sim/libcuda.so.1, the
 * toolkit's stub libcuda.so, or a real driver) and every entry point is
 * looked up by its exact exported name, so _v2, _ptsz and _ptds variants are
 * each called, whatever cuda.h's macros say.  The function pointer types
 * below carry each export's real signature (the unversioned legacy exports
 * take 32-bit device pointers and sizes).
 *
 * Against the stub every call returns CUDA_ERROR_STUB_LIBRARY and touches
 * nothing, so failed out-parameters are replaced by distinctive fake handles
 * and pointers.  Against the simulator every pointer passed is valid memory
 * that the simulator allocated (or host memory we own).
 *
 * TRUTH.json:
 *	{"pid":P, "tid":T, "lib":"...", "stub":true|false,
 *	 "calls":[{"name":"cuLaunchKernel", "phase":"probe", "ret":0,
 *	           "t0":NS, "t1":NS, "args":{...}}, ...],
 *	 "skipped":["name", ...]}
 *
 * phase is "setup" (handles the probed calls need), "probe" (the entry
 * points under test: each called exactly once) or "cleanup" (freeing what
 * the probed calls left).  t0/t1 are CLOCK_MONOTONIC ns around the call.
 * The argument fields are documented at each family below.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- legacy (v1) types: only declared by cuda.h for the driver itself ---- */

typedef unsigned int devptr32;

struct memcpy2d_v1 {
	unsigned int srcXInBytes, srcY;
	CUmemorytype srcMemoryType;
	const void *srcHost;
	devptr32 srcDevice;
	CUarray srcArray;
	unsigned int srcPitch;
	unsigned int dstXInBytes, dstY;
	CUmemorytype dstMemoryType;
	void *dstHost;
	devptr32 dstDevice;
	CUarray dstArray;
	unsigned int dstPitch;
	unsigned int WidthInBytes, Height;
};

struct memcpy3d_v1 {
	unsigned int srcXInBytes, srcY, srcZ, srcLOD;
	CUmemorytype srcMemoryType;
	const void *srcHost;
	devptr32 srcDevice;
	CUarray srcArray;
	void *reserved0;
	unsigned int srcPitch, srcHeight;
	unsigned int dstXInBytes, dstY, dstZ, dstLOD;
	CUmemorytype dstMemoryType;
	void *dstHost;
	devptr32 dstDevice;
	CUarray dstArray;
	void *reserved1;
	unsigned int dstPitch, dstHeight;
	unsigned int WidthInBytes, Height, Depth;
};

/* ---- entry point signatures ---- */

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*device_get_fn)(CUdevice *, int);
typedef CUresult (*ctx_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*ctx_set_fn)(CUcontext);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned int);
typedef CUresult (*event_create_fn)(CUevent *, unsigned int);
typedef CUresult (*default_pool_fn)(CUmemoryPool *, CUdevice);
typedef CUresult (*granularity_fn)(size_t *, const CUmemAllocationProp *,
				   CUmemAllocationGranularity_flags);
typedef CUresult (*addr_reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
				    unsigned long long);
typedef CUresult (*addr_free_fn)(CUdeviceptr, size_t);

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned, CUstream,
			      void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **,
				 void **);
typedef CUresult (*launch_coop_fn)(CUfunction, unsigned, unsigned, unsigned,
				   unsigned, unsigned, unsigned, unsigned,
				   CUstream, void **);
typedef CUresult (*launch_host_fn)(CUstream, CUhostFn, void *);

typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*graph_inst_legacy_fn)(CUgraphExec *, CUgraph, CUgraphNode *,
					 char *, size_t);
typedef CUresult (*graph_inst_flags_fn)(CUgraphExec *, CUgraph,
					unsigned long long);
typedef CUresult (*graph_inst_params_fn)(CUgraphExec *, CUgraph,
					 CUDA_GRAPH_INSTANTIATE_PARAMS *);
typedef CUresult (*begin_capture_v1_fn)(CUstream);
typedef CUresult (*begin_capture_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_capture_fn)(CUstream, CUgraph *);
typedef CUresult (*graph_exec_destroy_fn)(CUgraphExec);
typedef CUresult (*graph_destroy_fn)(CUgraph);

typedef CUresult (*memcpy_fn)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*memcpy_async_fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*htod_v1_fn)(devptr32, const void *, unsigned int);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*dtoh_v1_fn)(void *, devptr32, unsigned int);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);
typedef CUresult (*dtod_v1_fn)(devptr32, devptr32, unsigned int);
typedef CUresult (*dtod_fn)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*htod_async_v1_fn)(devptr32, const void *, unsigned int,
				     CUstream);
typedef CUresult (*htod_async_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*dtoh_async_v1_fn)(void *, devptr32, unsigned int, CUstream);
typedef CUresult (*dtoh_async_fn)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*dtod_async_v1_fn)(devptr32, devptr32, unsigned int,
				     CUstream);
typedef CUresult (*dtod_async_fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*peer_fn)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext,
			    size_t);
typedef CUresult (*peer_async_fn)(CUdeviceptr, CUcontext, CUdeviceptr,
				  CUcontext, size_t, CUstream);
typedef CUresult (*m2d_v1_fn)(const struct memcpy2d_v1 *);
typedef CUresult (*m2d_fn)(const CUDA_MEMCPY2D *);
typedef CUresult (*m2d_async_v1_fn)(const struct memcpy2d_v1 *, CUstream);
typedef CUresult (*m2d_async_fn)(const CUDA_MEMCPY2D *, CUstream);
typedef CUresult (*m3d_v1_fn)(const struct memcpy3d_v1 *);
typedef CUresult (*m3d_fn)(const CUDA_MEMCPY3D *);
typedef CUresult (*m3d_async_v1_fn)(const struct memcpy3d_v1 *, CUstream);
typedef CUresult (*m3d_async_fn)(const CUDA_MEMCPY3D *, CUstream);
typedef CUresult (*m3d_peer_fn)(const CUDA_MEMCPY3D_PEER *);
typedef CUresult (*m3d_peer_async_fn)(const CUDA_MEMCPY3D_PEER *, CUstream);
typedef CUresult (*batch_v1_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
				CUmemcpyAttributes *, size_t *, size_t,
				size_t *, CUstream);
typedef CUresult (*batch_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
			     CUmemcpyAttributes *, size_t *, size_t, CUstream);
typedef CUresult (*batch3d_v1_fn)(size_t, CUDA_MEMCPY3D_BATCH_OP *, size_t *,
				  unsigned long long, CUstream);
typedef CUresult (*batch3d_fn)(size_t, CUDA_MEMCPY3D_BATCH_OP *,
			       unsigned long long, CUstream);

typedef CUresult (*ctx_sync_fn)(void);
typedef CUresult (*ctx_sync_v2_fn)(CUcontext);
typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*event_fn)(CUevent);
typedef CUresult (*wait_event_fn)(CUstream, CUevent, unsigned int);
typedef CUresult (*event_record_fn)(CUevent, CUstream);
typedef CUresult (*event_record_flags_fn)(CUevent, CUstream, unsigned int);

typedef CUresult (*alloc_v1_fn)(devptr32 *, unsigned int);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*alloc_pitch_v1_fn)(devptr32 *, unsigned int *, unsigned int,
				      unsigned int, unsigned int);
typedef CUresult (*alloc_pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t,
				   unsigned int);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool,
				  CUstream);
typedef CUresult (*alloc_host_v1_fn)(void **, unsigned int);
typedef CUresult (*alloc_host_fn)(void **, size_t);
typedef CUresult (*host_alloc_fn)(void **, size_t, unsigned int);
typedef CUresult (*alloc_managed_fn)(CUdeviceptr *, size_t, unsigned int);
typedef CUresult (*free_v1_fn)(devptr32);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*free_host_fn)(void *);
typedef CUresult (*mem_create_fn)(CUmemGenericAllocationHandle *, size_t,
				  const CUmemAllocationProp *,
				  unsigned long long);
typedef CUresult (*mem_release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*mem_map_fn)(CUdeviceptr, size_t, size_t,
			       CUmemGenericAllocationHandle,
			       unsigned long long);
typedef CUresult (*mem_unmap_fn)(CUdeviceptr, size_t);

typedef CUresult (*module_load_fn)(CUmodule *, const char *);
typedef CUresult (*module_load_data_fn)(CUmodule *, const void *);
typedef CUresult (*module_load_data_ex_fn)(CUmodule *, const void *,
					   unsigned int, CUjit_option *,
					   void **);
typedef CUresult (*module_get_function_fn)(CUfunction *, CUmodule,
					   const char *);
typedef CUresult (*library_load_data_fn)(CUlibrary *, const void *,
					 CUjit_option *, void **, unsigned int,
					 CUlibraryOption *, void **,
					 unsigned int);
typedef CUresult (*library_load_file_fn)(CUlibrary *, const char *,
					 CUjit_option *, void **, unsigned int,
					 CUlibraryOption *, void **,
					 unsigned int);
typedef CUresult (*library_get_kernel_fn)(CUkernel *, CUlibrary, const char *);
typedef CUresult (*kernel_get_function_fn)(CUfunction *, CUkernel);
typedef CUresult (*func_get_name_fn)(const char **, CUfunction);
typedef CUresult (*kernel_get_name_fn)(const char **, CUkernel);

/* ---- the record of calls ---- */

struct call {
	const char *name;
	const char *phase;
	int ret;
	uint64_t t0, t1;
	char *args;             /* JSON object members, without braces */
};

static void *lib;
static struct call *calls;
static size_t ncalls, calls_cap;
static const char *skipped[512];
static size_t nskipped;
static const char *phase = "setup";
static uint64_t t_begin;
static bool stub;               /* device allocations fail: use fake values */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "cudacalls: out of memory\n");
		exit(1);
	}
	return p;
}

/* Look NAME up into the function pointer at FNP; false (and noted as
 * skipped) when the library does not export it.  Starts the call's clock. */
static bool sym(const char *name, void *fnp)
{
	void *p = dlsym(lib, name);

	if (!p) {
		for (size_t k = 0; k < nskipped; k++)
			if (strcmp(skipped[k], name) == 0)
				return false;
		if (nskipped < sizeof(skipped) / sizeof(skipped[0]))
			skipped[nskipped++] = name;
		return false;
	}
	memcpy(fnp, &p, sizeof(p));
	t_begin = now_ns();
	return true;
}

/* Record a call that just returned RET; FMT formats the args members. */
__attribute__((format(printf, 3, 4)))
static void rec(const char *name, CUresult ret, const char *fmt, ...)
{
	uint64_t t1 = now_ns();
	struct call *c;
	va_list ap;
	int n;

	if (ncalls == calls_cap) {
		calls_cap = calls_cap ? 2 * calls_cap : 256;
		calls = realloc(calls, calls_cap * sizeof(*calls));
		if (!calls) {
			fprintf(stderr, "cudacalls: out of memory\n");
			exit(1);
		}
	}
	c = &calls[ncalls++];
	c->name = name;
	c->phase = phase;
	c->ret = (int)ret;
	c->t0 = t_begin;
	c->t1 = t1;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	c->args = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(c->args, (size_t)n + 1, fmt, ap);
	va_end(ap);
}

/* A JSON string literal for S (static buffer, for short strings). */
static const char *jstr(const char *s)
{
	static char buf[4][512];
	static int k;
	char *b = buf[k++ & 3];
	size_t o = 0;

	if (!s)
		return "null";
	b[o++] = '"';
	for (; *s && o < sizeof(buf[0]) - 8; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			b[o++] = '\\';
			b[o++] = (char)ch;
		} else if (ch < 0x20) {
			o += (size_t)snprintf(b + o, 8, "\\u%04x", ch);
		} else {
			b[o++] = (char)ch;
		}
	}
	b[o++] = '"';
	b[o] = 0;
	return b;
}

#define H(x) ((unsigned long long)(uintptr_t)(x))

/* ---- state shared by the families ---- */

#define REGION    (512u << 10)          /* src half, then dst half */
#define FAKE_DEV  0xd00000000ull        /* stub: fake device memory */
#define FAKE_DEV32 0x0d000000u

static CUdevice dev;
static CUcontext ctx;
static CUstream stream;                 /* NULL: fake per call */
static CUstream cap_stream[4];
static CUevent event;
static CUmemoryPool pool;
static CUfunction func;
static CUkernel kernel;
static CUlibrary library;
static CUmodule module;

static CUdeviceptr dbase;               /* cuMemAlloc_v2, 1 MiB + */
static devptr32 d32base;                /* cuMemAlloc (v1), or MAP_32BIT */
static bool d32_from_alloc;
static unsigned char *hsrc, *hdst;      /* 1 MiB host buffers */

static CUstream strm(unsigned i)
{
	return stream ? stream : (CUstream)(uintptr_t)(0x5000 + i);
}

static CUdeviceptr dsrc(size_t off) { return dbase + off; }
static CUdeviceptr ddst(size_t off) { return dbase + REGION + off; }
static devptr32 d32src(size_t off) { return d32base + (devptr32)off; }
static devptr32 d32dst(size_t off) { return d32base + REGION + (devptr32)off; }

/* ---- set-up ---- */

static void setup(void)
{
	init_fn init;
	device_get_fn device_get;
	ctx_retain_fn retain;
	ctx_set_fn set_current;
	stream_create_fn stream_create;
	event_create_fn event_create;
	default_pool_fn default_pool;
	CUresult r;

	phase = "setup";
	if (sym("cuInit", &init)) {
		r = init(0);
		rec("cuInit", r, "\"flags\":0");
	}
	if (sym("cuDeviceGet", &device_get)) {
		r = device_get(&dev, 0);
		rec("cuDeviceGet", r, "\"ordinal\":0,\"device\":%d", dev);
	}
	if (sym("cuDevicePrimaryCtxRetain", &retain)) {
		r = retain(&ctx, dev);
		rec("cuDevicePrimaryCtxRetain", r, "\"ctx\":\"0x%llx\"", H(ctx));
		if (r != CUDA_SUCCESS)
			ctx = NULL;
	}
	if (ctx && sym("cuCtxSetCurrent", &set_current)) {
		r = set_current(ctx);
		rec("cuCtxSetCurrent", r, "\"ctx\":\"0x%llx\"", H(ctx));
	}
	if (!ctx)
		ctx = (CUcontext)(uintptr_t)0x6000;
	if (sym("cuStreamCreate", &stream_create)) {
		r = stream_create(&stream, CU_STREAM_NON_BLOCKING);
		if (r != CUDA_SUCCESS)
			stream = NULL;
		rec("cuStreamCreate", r, "\"stream\":\"0x%llx\"", H(stream));
		for (int k = 0; k < 4; k++) {
			CUstream s = NULL;

			t_begin = now_ns();
			r = stream_create(&s, CU_STREAM_NON_BLOCKING);
			if (r != CUDA_SUCCESS)
				s = NULL;
			rec("cuStreamCreate", r, "\"stream\":\"0x%llx\"", H(s));
			cap_stream[k] = s ? s : (CUstream)(uintptr_t)(0x5100 + k);
		}
	}
	if (sym("cuEventCreate", &event_create)) {
		r = event_create(&event, 0);
		if (r != CUDA_SUCCESS)
			event = NULL;
		rec("cuEventCreate", r, "\"event\":\"0x%llx\"", H(event));
	}
	if (!event)
		event = (CUevent)(uintptr_t)0x7000;
	if (sym("cuDeviceGetDefaultMemPool", &default_pool)) {
		r = default_pool(&pool, dev);
		if (r != CUDA_SUCCESS)
			pool = NULL;
		rec("cuDeviceGetDefaultMemPool", r, "\"pool\":\"0x%llx\"", H(pool));
	}
	if (!pool)
		pool = (CUmemoryPool)(uintptr_t)0xa000;
}

/* ---- allocations: args bytes, ptr (returned; "0x0" on failure) ---- */

#define ALLOC_BYTES(i) ((1u << 20) + (i) * 4096u)

struct allocation {
	const char *by;
	CUdeviceptr ptr;        /* device pointers */
	void *host;             /* host allocations */
	bool ok;
};

static struct allocation a_v1, a_v2, a_pitch_v1, a_pitch_v2, a_async,
	a_async_ptsz, a_pool, a_pool_ptsz, a_host_v1, a_host_v2, a_hostalloc,
	a_managed;
static CUmemGenericAllocationHandle vmm_handle;
static bool vmm_ok;
static size_t vmm_size;

static void do_alloc_device(struct allocation *a, const char *name,
			    unsigned i)
{
	alloc_fn f;
	CUresult r;

	a->by = name;
	if (!sym(name, &f))
		return;
	r = f(&a->ptr, ALLOC_BYTES(i));
	a->ok = r == CUDA_SUCCESS && a->ptr;
	if (!a->ok)
		a->ptr = 0;
	rec(name, r, "\"bytes\":%u,\"ptr\":\"0x%llx\"", ALLOC_BYTES(i), H(a->ptr));
}

static void do_alloc_pitch(struct allocation *a, const char *name, unsigned i)
{
	/* 4096 bytes wide, 256 + i rows: the same byte count as the others */
	size_t width = 4096, height = 256 + i, pitch = 0;
	CUresult r;

	a->by = name;
	if (strcmp(name, "cuMemAllocPitch") == 0) {
		alloc_pitch_v1_fn f;
		devptr32 p = 0;
		unsigned int pitch32 = 0;

		if (!sym(name, &f))
			return;
		r = f(&p, &pitch32, (unsigned)width, (unsigned)height, 4);
		a->ptr = p;
		pitch = pitch32;
	} else {
		alloc_pitch_fn f;

		if (!sym(name, &f))
			return;
		r = f(&a->ptr, &pitch, width, height, 4);
	}
	a->ok = r == CUDA_SUCCESS && a->ptr;
	if (!a->ok)
		a->ptr = 0;
	rec(name, r, "\"bytes\":%zu,\"width\":%zu,\"height\":%zu,\"elem\":4,"
	    "\"pitch\":%zu,\"ptr\":\"0x%llx\"", width * height, width, height,
	    pitch, H(a->ptr));
}

static void do_alloc_stream(struct allocation *a, const char *name, unsigned i,
			    bool from_pool)
{
	CUresult r;

	a->by = name;
	if (from_pool) {
		alloc_pool_fn f;

		if (!sym(name, &f))
			return;
		r = f(&a->ptr, ALLOC_BYTES(i), pool, strm(i));
	} else {
		alloc_async_fn f;

		if (!sym(name, &f))
			return;
		r = f(&a->ptr, ALLOC_BYTES(i), strm(i));
	}
	a->ok = r == CUDA_SUCCESS && a->ptr;
	if (!a->ok)
		a->ptr = 0;
	if (from_pool)
		rec(name, r, "\"bytes\":%u,\"ptr\":\"0x%llx\",\"pool\":\"0x%llx\","
		    "\"stream\":\"0x%llx\"", ALLOC_BYTES(i), H(a->ptr), H(pool),
		    H(strm(i)));
	else
		rec(name, r, "\"bytes\":%u,\"ptr\":\"0x%llx\",\"stream\":\"0x%llx\"",
		    ALLOC_BYTES(i), H(a->ptr), H(strm(i)));
}

static void do_alloc_host(struct allocation *a, const char *name, unsigned i)
{
	CUresult r;

	a->by = name;
	if (strcmp(name, "cuMemAllocHost") == 0) {
		alloc_host_v1_fn f;

		if (!sym(name, &f))
			return;
		r = f(&a->host, ALLOC_BYTES(i));
	} else if (strcmp(name, "cuMemAllocHost_v2") == 0) {
		alloc_host_fn f;

		if (!sym(name, &f))
			return;
		r = f(&a->host, ALLOC_BYTES(i));
	} else {
		host_alloc_fn f;

		if (!sym(name, &f))
			return;
		r = f(&a->host, ALLOC_BYTES(i), 0);
	}
	a->ok = r == CUDA_SUCCESS && a->host;
	if (!a->ok)
		a->host = NULL;
	rec(name, r, "\"bytes\":%u,\"ptr\":\"0x%llx\"", ALLOC_BYTES(i), H(a->host));
}

static void allocs(void)
{
	alloc_v1_fn alloc_v1;
	alloc_managed_fn managed;
	mem_create_fn create;
	granularity_fn granularity;
	CUmemAllocationProp prop;
	CUresult r;
	unsigned i = 0;

	phase = "probe";
	/* 0: the legacy 32-bit cuMemAlloc backs the legacy copies */
	a_v1.by = "cuMemAlloc";
	if (sym("cuMemAlloc", &alloc_v1)) {
		devptr32 p = 0;

		r = alloc_v1(&p, ALLOC_BYTES(i));
		a_v1.ok = r == CUDA_SUCCESS && p;
		a_v1.ptr = a_v1.ok ? p : 0;
		rec("cuMemAlloc", r, "\"bytes\":%u,\"ptr\":\"0x%llx\"",
		    ALLOC_BYTES(i), H(a_v1.ptr));
	}
	i++;
	/* 1: cuMemAlloc_v2 backs every other device pointer */
	do_alloc_device(&a_v2, "cuMemAlloc_v2", i++);
	stub = !a_v2.ok;
	dbase = stub ? FAKE_DEV : a_v2.ptr;
	if (a_v1.ok) {
		d32base = (devptr32)a_v1.ptr;
		d32_from_alloc = true;
	} else if (stub) {
		d32base = FAKE_DEV32;
	} else {
		/* the library has no usable 32-bit allocator: give the legacy
		 * calls real memory below 4 GiB so a pointer is never wild */
		void *p = mmap(NULL, 2 * REGION, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

		d32base = p == MAP_FAILED ? FAKE_DEV32 : (devptr32)(uintptr_t)p;
	}

	do_alloc_pitch(&a_pitch_v1, "cuMemAllocPitch", i++);
	do_alloc_pitch(&a_pitch_v2, "cuMemAllocPitch_v2", i++);
	do_alloc_stream(&a_async, "cuMemAllocAsync", i++, false);
	do_alloc_stream(&a_async_ptsz, "cuMemAllocAsync_ptsz", i++, false);
	do_alloc_stream(&a_pool, "cuMemAllocFromPoolAsync", i++, true);
	do_alloc_stream(&a_pool_ptsz, "cuMemAllocFromPoolAsync_ptsz", i++, true);
	do_alloc_host(&a_host_v1, "cuMemAllocHost", i++);
	do_alloc_host(&a_host_v2, "cuMemAllocHost_v2", i++);
	do_alloc_host(&a_hostalloc, "cuMemHostAlloc", i++);

	a_managed.by = "cuMemAllocManaged";
	if (sym("cuMemAllocManaged", &managed)) {
		r = managed(&a_managed.ptr, ALLOC_BYTES(i), CU_MEM_ATTACH_GLOBAL);
		a_managed.ok = r == CUDA_SUCCESS && a_managed.ptr;
		if (!a_managed.ok)
			a_managed.ptr = 0;
		rec("cuMemAllocManaged", r, "\"bytes\":%u,\"ptr\":\"0x%llx\",\"flags\":1",
		    ALLOC_BYTES(i), H(a_managed.ptr));
	}
	i++;

	/* cuMemCreate: round up to the granularity when the library tells it */
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	vmm_size = ALLOC_BYTES(i);
	phase = "setup";
	if (sym("cuMemGetAllocationGranularity", &granularity)) {
		size_t g = 0;

		r = granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
		rec("cuMemGetAllocationGranularity", r, "\"granularity\":%zu", g);
		if (r == CUDA_SUCCESS && g)
			vmm_size = (vmm_size + g - 1) / g * g;
	}
	phase = "probe";
	if (sym("cuMemCreate", &create)) {
		r = create(&vmm_handle, vmm_size, &prop, 0);
		vmm_ok = r == CUDA_SUCCESS;
		if (!vmm_ok)
			vmm_handle = 0;
		rec("cuMemCreate", r, "\"bytes\":%zu,\"handle\":\"0x%llx\"",
		    vmm_size, (unsigned long long)vmm_handle);
	}
	if (!vmm_ok)
		vmm_handle = 0xb000;

	hsrc = xmalloc(1u << 20);
	hdst = xmalloc(1u << 20);
	for (size_t k = 0; k < (1u << 20); k++)
		hsrc[k] = (unsigned char)(k * 7 + 1);
	memset(hdst, 0, 1u << 20);
}

/* ---- lookups: args name (passed), handle (returned) ---- */

static const char ptx_image[] =
	".version 8.0\n.target sm_52\n.address_size 64\n"
	".visible .entry kern_ptx()\n{\n\tret;\n}\n";

static void lookups(void)
{
	module_load_fn load;
	module_load_data_fn load_data;
	module_load_data_ex_fn load_data_ex;
	module_load_data_fn load_fatbin;
	module_get_function_fn get_function;
	library_load_data_fn lib_load_data;
	library_load_file_fn lib_load_file;
	library_get_kernel_fn get_kernel;
	kernel_get_function_fn kernel_function;
	func_get_name_fn func_name;
	kernel_get_name_fn kernel_name;
	static const unsigned char fatbin[256];   /* not a fat binary */
	const char *path = "gpubpf_cudacalls_missing.cubin";
	CUfunction kfunc = NULL;
	CUmodule m;
	CUlibrary l;
	CUresult r;

	phase = "probe";
	if (sym("cuModuleLoad", &load)) {
		m = NULL;
		r = load(&m, path);
		rec("cuModuleLoad", r, "\"name\":%s,\"handle\":\"0x%llx\"",
		    jstr(path), H(m));
	}
	if (sym("cuModuleLoadData", &load_data)) {
		m = NULL;
		r = load_data(&m, ptx_image);
		rec("cuModuleLoadData", r, "\"image\":\"0x%llx\",\"handle\":\"0x%llx\"",
		    H(ptx_image), H(m));
		if (r == CUDA_SUCCESS)
			module = m;
	}
	if (sym("cuModuleLoadDataEx", &load_data_ex)) {
		m = NULL;
		r = load_data_ex(&m, ptx_image, 0, NULL, NULL);
		rec("cuModuleLoadDataEx", r,
		    "\"image\":\"0x%llx\",\"handle\":\"0x%llx\"", H(ptx_image), H(m));
	}
	if (sym("cuModuleLoadFatBinary", &load_fatbin)) {
		m = NULL;
		r = load_fatbin(&m, fatbin);
		rec("cuModuleLoadFatBinary", r,
		    "\"image\":\"0x%llx\",\"handle\":\"0x%llx\"", H(fatbin), H(m));
	}
	/* a NULL module: the simulator makes a handle for any name */
	if (sym("cuModuleGetFunction", &get_function)) {
		r = get_function(&func, NULL, "kern_modfn");
		if (r != CUDA_SUCCESS)
			func = NULL;
		rec("cuModuleGetFunction", r,
		    "\"name\":\"kern_modfn\",\"module\":\"0x0\",\"handle\":\"0x%llx\"",
		    H(func));
	}
	if (!func)
		func = (CUfunction)(uintptr_t)0x4000;
	if (sym("cuLibraryLoadData", &lib_load_data)) {
		r = lib_load_data(&library, ptx_image, NULL, NULL, 0, NULL, NULL, 0);
		if (r != CUDA_SUCCESS)
			library = NULL;
		rec("cuLibraryLoadData", r,
		    "\"image\":\"0x%llx\",\"handle\":\"0x%llx\"", H(ptx_image),
		    H(library));
	}
	if (sym("cuLibraryLoadFromFile", &lib_load_file)) {
		l = NULL;
		r = lib_load_file(&l, path, NULL, NULL, 0, NULL, NULL, 0);
		rec("cuLibraryLoadFromFile", r, "\"name\":%s,\"handle\":\"0x%llx\"",
		    jstr(path), H(l));
	}
	if (sym("cuLibraryGetKernel", &get_kernel)) {
		r = get_kernel(&kernel, library, "kern_libk");
		if (r != CUDA_SUCCESS)
			kernel = NULL;
		rec("cuLibraryGetKernel", r,
		    "\"name\":\"kern_libk\",\"library\":\"0x%llx\",\"handle\":\"0x%llx\"",
		    H(library), H(kernel));
	}
	if (!kernel)
		kernel = (CUkernel)(uintptr_t)0x4100;
	if (sym("cuKernelGetFunction", &kernel_function)) {
		r = kernel_function(&kfunc, kernel);
		if (r != CUDA_SUCCESS)
			kfunc = NULL;
		rec("cuKernelGetFunction", r,
		    "\"kernel\":\"0x%llx\",\"handle\":\"0x%llx\"", H(kernel), H(kfunc));
	}
	if (sym("cuFuncGetName", &func_name)) {
		const char *name = NULL;

		r = func_name(&name, func);
		rec("cuFuncGetName", r, "\"func\":\"0x%llx\",\"name\":%s", H(func),
		    jstr(r == CUDA_SUCCESS ? name : NULL));
	}
	if (sym("cuKernelGetName", &kernel_name)) {
		const char *name = NULL;

		r = kernel_name(&name, kernel);
		rec("cuKernelGetName", r, "\"kernel\":\"0x%llx\",\"name\":%s",
		    H(kernel), jstr(r == CUDA_SUCCESS ? name : NULL));
	}
}

/* ---- launches: func, grid, block, shared_mem, stream ---- */

static uint32_t kernel_us = 50;         /* kernelParams[0]: duration in us */
static void *kparams[] = { &kernel_us };
static volatile int host_fn_runs;

static void host_fn(void *arg)
{
	__atomic_add_fetch(&host_fn_runs, 1, __ATOMIC_SEQ_CST);
}

#define LAUNCH_FMT "\"func\":\"0x%llx\",\"grid\":[%u,3,2],\"block\":[128,2,1]," \
	"\"shared_mem\":%u,\"stream\":\"0x%llx\""

static void launches(void)
{
	static const char *const plain[] = { "cuLaunchKernel", "cuLaunchKernel_ptsz" };
	static const char *const ex[] = { "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz" };
	static const char *const coop[] = { "cuLaunchCooperativeKernel",
					    "cuLaunchCooperativeKernel_ptsz" };
	static const char *const host[] = { "cuLaunchHostFunc", "cuLaunchHostFunc_ptsz" };
	unsigned i = 0;
	CUresult r;

	phase = "probe";
	for (int k = 0; k < 2; k++, i++) {
		launch_fn f;

		if (!sym(plain[k], &f))
			continue;
		r = f(func, 7 + i, 3, 2, 128, 2, 1, 1024 + i, strm(i), kparams, NULL);
		rec(plain[k], r, LAUNCH_FMT, H(func), 7 + i, 1024 + i, H(strm(i)));
	}
	for (int k = 0; k < 2; k++, i++) {
		CUlaunchConfig cfg = {
			.gridDimX = 7 + i, .gridDimY = 3, .gridDimZ = 2,
			.blockDimX = 128, .blockDimY = 2, .blockDimZ = 1,
			.sharedMemBytes = 1024 + i, .hStream = strm(i),
			.attrs = NULL, .numAttrs = 0,
		};
		launch_ex_fn f;

		if (!sym(ex[k], &f))
			continue;
		r = f(&cfg, func, kparams, NULL);
		rec(ex[k], r, LAUNCH_FMT ",\"config\":\"0x%llx\"", H(func), 7 + i,
		    1024 + i, H(strm(i)), H(&cfg));
	}
	for (int k = 0; k < 2; k++, i++) {
		launch_coop_fn f;

		if (!sym(coop[k], &f))
			continue;
		r = f(func, 7 + i, 3, 2, 128, 2, 1, 1024 + i, strm(i), kparams);
		rec(coop[k], r, LAUNCH_FMT, H(func), 7 + i, 1024 + i, H(strm(i)));
	}
	for (int k = 0; k < 2; k++, i++) {
		launch_host_fn f;

		if (!sym(host[k], &f))
			continue;
		r = f(strm(i), host_fn, (void *)(uintptr_t)(0x1000 + i));
		rec(host[k], r, "\"fn\":\"0x%llx\",\"user_data\":\"0x%llx\","
		    "\"stream\":\"0x%llx\"", H(host_fn), 0x1000ull + i, H(strm(i)));
	}
}

/* ---- copies: bytes, kind, dst, src, stream (async) ---- */

#define COPY_BYTES(i) (4096u * ((i) + 1))

static const char *kind_of(CUmemorytype src, CUmemorytype dst)
{
	static const char *const k[5][5] = {
		[CU_MEMORYTYPE_HOST] = { [CU_MEMORYTYPE_HOST] = "HtoH",
			[CU_MEMORYTYPE_DEVICE] = "HtoD", [CU_MEMORYTYPE_ARRAY] = "HtoA" },
		[CU_MEMORYTYPE_DEVICE] = { [CU_MEMORYTYPE_HOST] = "DtoH",
			[CU_MEMORYTYPE_DEVICE] = "DtoD", [CU_MEMORYTYPE_ARRAY] = "DtoA" },
		[CU_MEMORYTYPE_ARRAY] = { [CU_MEMORYTYPE_HOST] = "AtoH",
			[CU_MEMORYTYPE_DEVICE] = "AtoD", [CU_MEMORYTYPE_ARRAY] = "AtoA" },
	};

	if (src < 1 || src > 3 || dst < 1 || dst > 3)
		return "Default";
	return k[src][dst];
}

#define COPY_FMT "\"bytes\":%zu,\"kind\":\"%s\",\"dst\":\"0x%llx\",\"src\":\"0x%llx\""
#define ASYNC_FMT COPY_FMT ",\"stream\":\"0x%llx\""

static void copies_1d(unsigned *ip)
{
	unsigned i = *ip;
	CUresult r;
	size_t n;

	/* cuMemcpy / cuMemcpyAsync: unified addressing, the driver infers */
	{
		static const char *const names[] = { "cuMemcpy", "cuMemcpy_ptds" };

		for (int k = 0; k < 2; k++, i++) {
			memcpy_fn f;

			if (!sym(names[k], &f))
				continue;
			n = COPY_BYTES(i);
			r = f(ddst(0), dsrc(0), n);
			rec(names[k], r, COPY_FMT, n, "Default", H(ddst(0)), H(dsrc(0)));
		}
	}
	{
		static const char *const names[] = { "cuMemcpyAsync", "cuMemcpyAsync_ptsz" };

		for (int k = 0; k < 2; k++, i++) {
			memcpy_async_fn f;

			if (!sym(names[k], &f))
				continue;
			n = COPY_BYTES(i);
			r = f(ddst(0), dsrc(0), n, strm(i));
			rec(names[k], r, ASYNC_FMT, n, "Default", H(ddst(0)), H(dsrc(0)),
			    H(strm(i)));
		}
	}

	/* HtoD */
	{
		htod_v1_fn f1;

		if (sym("cuMemcpyHtoD", &f1)) {
			n = COPY_BYTES(i);
			r = f1(d32dst(0), hsrc, (unsigned)n);
			rec("cuMemcpyHtoD", r, COPY_FMT, n, "HtoD", H(d32dst(0)), H(hsrc));
		}
		i++;
	}
	{
		static const char *const names[] = { "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds" };

		for (int k = 0; k < 2; k++, i++) {
			htod_fn f;

			if (!sym(names[k], &f))
				continue;
			n = COPY_BYTES(i);
			r = f(ddst(0), hsrc, n);
			rec(names[k], r, COPY_FMT, n, "HtoD", H(ddst(0)), H(hsrc));
		}
	}
	/* DtoH */
	{
		dtoh_v1_fn f1;

		if (sym("cuMemcpyDtoH", &f1)) {
			n = COPY_BYTES(i);
			r = f1(hdst, d32src(0), (unsigned)n);
			rec("cuMemcpyDtoH", r, COPY_FMT, n, "DtoH", H(hdst), H(d32src(0)));
		}
		i++;
	}
	{
		static const char *const names[] = { "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds" };

		for (int k = 0; k < 2; k++, i++) {
			dtoh_fn f;

			if (!sym(names[k], &f))
				continue;
			n = COPY_BYTES(i);
			r = f(hdst, dsrc(0), n);
			rec(names[k], r, COPY_FMT, n, "DtoH", H(hdst), H(dsrc(0)));
		}
	}
	/* DtoD */
	{
		dtod_v1_fn f1;

		if (sym("cuMemcpyDtoD", &f1)) {
			n = COPY_BYTES(i);
			r = f1(d32dst(0), d32src(0), (unsigned)n);
			rec("cuMemcpyDtoD", r, COPY_FMT, n, "DtoD", H(d32dst(0)),
			    H(d32src(0)));
		}
		i++;
	}
	{
		static const char *const names[] = { "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds" };

		for (int k = 0; k < 2; k++, i++) {
			dtod_fn f;

			if (!sym(names[k], &f))
				continue;
			n = COPY_BYTES(i);
			r = f(ddst(0), dsrc(0), n);
			rec(names[k], r, COPY_FMT, n, "DtoD", H(ddst(0)), H(dsrc(0)));
		}
	}
	/* HtoDAsync */
	{
		static const char *const names[] = { "cuMemcpyHtoDAsync",
			"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz" };

		for (int k = 0; k < 3; k++, i++) {
			n = COPY_BYTES(i);
			if (k == 0) {
				htod_async_v1_fn f;

				if (!sym(names[k], &f))
					continue;
				r = f(d32dst(0), hsrc, (unsigned)n, strm(i));
				rec(names[k], r, ASYNC_FMT, n, "HtoD", H(d32dst(0)), H(hsrc),
				    H(strm(i)));
			} else {
				htod_async_fn f;

				if (!sym(names[k], &f))
					continue;
				r = f(ddst(0), hsrc, n, strm(i));
				rec(names[k], r, ASYNC_FMT, n, "HtoD", H(ddst(0)), H(hsrc),
				    H(strm(i)));
			}
		}
	}
	/* DtoHAsync */
	{
		static const char *const names[] = { "cuMemcpyDtoHAsync",
			"cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz" };

		for (int k = 0; k < 3; k++, i++) {
			n = COPY_BYTES(i);
			if (k == 0) {
				dtoh_async_v1_fn f;

				if (!sym(names[k], &f))
					continue;
				r = f(hdst, d32src(0), (unsigned)n, strm(i));
				rec(names[k], r, ASYNC_FMT, n, "DtoH", H(hdst), H(d32src(0)),
				    H(strm(i)));
			} else {
				dtoh_async_fn f;

				if (!sym(names[k], &f))
					continue;
				r = f(hdst, dsrc(0), n, strm(i));
				rec(names[k], r, ASYNC_FMT, n, "DtoH", H(hdst), H(dsrc(0)),
				    H(strm(i)));
			}
		}
	}
	/* DtoDAsync */
	{
		static const char *const names[] = { "cuMemcpyDtoDAsync",
			"cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz" };

		for (int k = 0; k < 3; k++, i++) {
			n = COPY_BYTES(i);
			if (k == 0) {
				dtod_async_v1_fn f;

				if (!sym(names[k], &f))
					continue;
				r = f(d32dst(0), d32src(0), (unsigned)n, strm(i));
				rec(names[k], r, ASYNC_FMT, n, "DtoD", H(d32dst(0)),
				    H(d32src(0)), H(strm(i)));
			} else {
				dtod_async_fn f;

				if (!sym(names[k], &f))
					continue;
				r = f(ddst(0), dsrc(0), n, strm(i));
				rec(names[k], r, ASYNC_FMT, n, "DtoD", H(ddst(0)), H(dsrc(0)),
				    H(strm(i)));
			}
		}
	}
	/* Peer: the same context on both sides */
	{
		static const char *const names[] = { "cuMemcpyPeer", "cuMemcpyPeer_ptds" };

		for (int k = 0; k < 2; k++, i++) {
			peer_fn f;

			if (!sym(names[k], &f))
				continue;
			n = COPY_BYTES(i);
			r = f(ddst(0), ctx, dsrc(0), ctx, n);
			rec(names[k], r, COPY_FMT ",\"dst_ctx\":\"0x%llx\",\"src_ctx\":\"0x%llx\"",
			    n, "Peer", H(ddst(0)), H(dsrc(0)), H(ctx), H(ctx));
		}
	}
	{
		static const char *const names[] = { "cuMemcpyPeerAsync",
			"cuMemcpyPeerAsync_ptsz" };

		for (int k = 0; k < 2; k++, i++) {
			peer_async_fn f;

			if (!sym(names[k], &f))
				continue;
			n = COPY_BYTES(i);
			r = f(ddst(0), ctx, dsrc(0), ctx, n, strm(i));
			rec(names[k], r, ASYNC_FMT ",\"dst_ctx\":\"0x%llx\",\"src_ctx\":\"0x%llx\"",
			    n, "Peer", H(ddst(0)), H(dsrc(0)), H(strm(i)), H(ctx), H(ctx));
		}
	}
	*ip = i;
}

/* 2D: 256 bytes wide, 8 + i rows, pitch 256 */
static void fill2d(CUDA_MEMCPY2D *c, CUmemorytype st, CUmemorytype dt, unsigned i)
{
	memset(c, 0, sizeof(*c));
	c->srcMemoryType = st;
	c->srcHost = hsrc;
	c->srcDevice = dsrc(0);
	c->srcPitch = 256;
	c->dstMemoryType = dt;
	c->dstHost = hdst;
	c->dstDevice = ddst(0);
	c->dstPitch = 256;
	c->WidthInBytes = 256;
	c->Height = 8 + i;
}

static void fill2d_v1(struct memcpy2d_v1 *c, CUmemorytype st, CUmemorytype dt,
		      unsigned i)
{
	memset(c, 0, sizeof(*c));
	c->srcMemoryType = st;
	c->srcHost = hsrc;
	c->srcDevice = d32src(0);
	c->srcPitch = 256;
	c->dstMemoryType = dt;
	c->dstHost = hdst;
	c->dstDevice = d32dst(0);
	c->dstPitch = 256;
	c->WidthInBytes = 256;
	c->Height = 8 + i;
}

/* 3D: 64 bytes wide, 4 rows, 2 layers, pitch 64 */
static void fill3d(CUDA_MEMCPY3D *c, CUmemorytype st, CUmemorytype dt)
{
	memset(c, 0, sizeof(*c));
	c->srcMemoryType = st;
	c->srcHost = hsrc;
	c->srcDevice = dsrc(0);
	c->srcPitch = 64;
	c->srcHeight = 4;
	c->dstMemoryType = dt;
	c->dstHost = hdst;
	c->dstDevice = ddst(0);
	c->dstPitch = 64;
	c->dstHeight = 4;
	c->WidthInBytes = 64;
	c->Height = 4;
	c->Depth = 2;
}

static void fill3d_v1(struct memcpy3d_v1 *c, CUmemorytype st, CUmemorytype dt)
{
	memset(c, 0, sizeof(*c));
	c->srcMemoryType = st;
	c->srcHost = hsrc;
	c->srcDevice = d32src(0);
	c->srcPitch = 64;
	c->srcHeight = 4;
	c->dstMemoryType = dt;
	c->dstHost = hdst;
	c->dstDevice = d32dst(0);
	c->dstPitch = 64;
	c->dstHeight = 4;
	c->WidthInBytes = 64;
	c->Height = 4;
	c->Depth = 2;
}

#define H_ CU_MEMORYTYPE_HOST
#define D_ CU_MEMORYTYPE_DEVICE
#define ND_FMT "\"bytes\":%zu,\"kind\":\"%s\",\"width\":%u,\"height\":%u," \
	"\"depth\":%u,\"desc\":\"0x%llx\""

static void copies_nd(unsigned *ip)
{
	/* name, legacy struct?, async?, src type, dst type */
	static const struct {
		const char *name;
		bool v1, async;
		CUmemorytype st, dt;
	} c2[] = {
		{ "cuMemcpy2D", true, false, H_, D_ },
		{ "cuMemcpy2D_v2", false, false, D_, H_ },
		{ "cuMemcpy2D_v2_ptds", false, false, D_, D_ },
		{ "cuMemcpy2DAsync", true, true, H_, D_ },
		{ "cuMemcpy2DAsync_v2", false, true, D_, H_ },
		{ "cuMemcpy2DAsync_v2_ptsz", false, true, D_, D_ },
		{ "cuMemcpy2DUnaligned", true, false, D_, H_ },
		{ "cuMemcpy2DUnaligned_v2", false, false, H_, D_ },
		{ "cuMemcpy2DUnaligned_v2_ptds", false, false, H_, H_ },
	}, c3[] = {
		{ "cuMemcpy3D", true, false, H_, D_ },
		{ "cuMemcpy3D_v2", false, false, D_, H_ },
		{ "cuMemcpy3D_v2_ptds", false, false, D_, D_ },
		{ "cuMemcpy3DAsync", true, true, D_, D_ },
		{ "cuMemcpy3DAsync_v2", false, true, H_, D_ },
		{ "cuMemcpy3DAsync_v2_ptsz", false, true, D_, H_ },
	};
	unsigned i = *ip;
	CUresult r;

	for (size_t k = 0; k < sizeof(c2) / sizeof(c2[0]); k++, i++) {
		const char *kind = kind_of(c2[k].st, c2[k].dt);
		size_t n = 256 * (size_t)(8 + i);
		struct memcpy2d_v1 d1;
		CUDA_MEMCPY2D d2;
		const void *desc = c2[k].v1 ? (const void *)&d1 : (const void *)&d2;

		if (c2[k].v1 && !c2[k].async) {
			m2d_v1_fn f;

			if (!sym(c2[k].name, &f))
				continue;
			fill2d_v1(&d1, c2[k].st, c2[k].dt, i);
			r = f(&d1);
		} else if (c2[k].v1) {
			m2d_async_v1_fn f;

			if (!sym(c2[k].name, &f))
				continue;
			fill2d_v1(&d1, c2[k].st, c2[k].dt, i);
			r = f(&d1, strm(i));
		} else if (!c2[k].async) {
			m2d_fn f;

			if (!sym(c2[k].name, &f))
				continue;
			fill2d(&d2, c2[k].st, c2[k].dt, i);
			r = f(&d2);
		} else {
			m2d_async_fn f;

			if (!sym(c2[k].name, &f))
				continue;
			fill2d(&d2, c2[k].st, c2[k].dt, i);
			r = f(&d2, strm(i));
		}
		if (c2[k].async)
			rec(c2[k].name, r, ND_FMT ",\"stream\":\"0x%llx\"", n, kind,
			    256u, 8 + i, 1u, H(desc), H(strm(i)));
		else
			rec(c2[k].name, r, ND_FMT, n, kind, 256u, 8 + i, 1u, H(desc));
	}
	for (size_t k = 0; k < sizeof(c3) / sizeof(c3[0]); k++, i++) {
		const char *kind = kind_of(c3[k].st, c3[k].dt);
		size_t n = 64 * 4 * 2;
		struct memcpy3d_v1 d1;
		CUDA_MEMCPY3D d3;
		const void *desc = c3[k].v1 ? (const void *)&d1 : (const void *)&d3;

		if (c3[k].v1 && !c3[k].async) {
			m3d_v1_fn f;

			if (!sym(c3[k].name, &f))
				continue;
			fill3d_v1(&d1, c3[k].st, c3[k].dt);
			r = f(&d1);
		} else if (c3[k].v1) {
			m3d_async_v1_fn f;

			if (!sym(c3[k].name, &f))
				continue;
			fill3d_v1(&d1, c3[k].st, c3[k].dt);
			r = f(&d1, strm(i));
		} else if (!c3[k].async) {
			m3d_fn f;

			if (!sym(c3[k].name, &f))
				continue;
			fill3d(&d3, c3[k].st, c3[k].dt);
			r = f(&d3);
		} else {
			m3d_async_fn f;

			if (!sym(c3[k].name, &f))
				continue;
			fill3d(&d3, c3[k].st, c3[k].dt);
			r = f(&d3, strm(i));
		}
		if (c3[k].async)
			rec(c3[k].name, r, ND_FMT ",\"stream\":\"0x%llx\"", n, kind,
			    64u, 4u, 2u, H(desc), H(strm(i)));
		else
			rec(c3[k].name, r, ND_FMT, n, kind, 64u, 4u, 2u, H(desc));
	}

	/* 3D peer: device to device within the one context */
	{
		static const char *const names[] = { "cuMemcpy3DPeer", "cuMemcpy3DPeer_ptds",
			"cuMemcpy3DPeerAsync", "cuMemcpy3DPeerAsync_ptsz" };

		for (int k = 0; k < 4; k++, i++) {
			CUDA_MEMCPY3D_PEER p;

			memset(&p, 0, sizeof(p));
			p.srcMemoryType = D_;
			p.srcDevice = dsrc(0);
			p.srcContext = ctx;
			p.srcPitch = 64;
			p.srcHeight = 4;
			p.dstMemoryType = D_;
			p.dstDevice = ddst(0);
			p.dstContext = ctx;
			p.dstPitch = 64;
			p.dstHeight = 4;
			p.WidthInBytes = 64;
			p.Height = 4;
			p.Depth = 2;
			if (k < 2) {
				m3d_peer_fn f;

				if (!sym(names[k], &f))
					continue;
				r = f(&p);
				rec(names[k], r, ND_FMT, (size_t)512, "Peer", 64u, 4u, 2u,
				    H(&p));
			} else {
				m3d_peer_async_fn f;

				if (!sym(names[k], &f))
					continue;
				r = f(&p, strm(i));
				rec(names[k], r, ND_FMT ",\"stream\":\"0x%llx\"", (size_t)512,
				    "Peer", 64u, 4u, 2u, H(&p), H(strm(i)));
			}
		}
	}
	*ip = i;
}

/* batches: three device-to-device copies of 100, 200 and 300 bytes */
#define BATCH_FMT "\"bytes\":600,\"count\":3,\"kind\":\"Default\",\"sizes\":[100,200,300]," \
	"\"stream\":\"0x%llx\""

static void copies_batch(unsigned *ip)
{
	static const char *const names[] = { "cuMemcpyBatchAsync",
		"cuMemcpyBatchAsync_ptsz", "cuMemcpyBatchAsync_v2",
		"cuMemcpyBatchAsync_v2_ptsz" };
	static const char *const names3[] = { "cuMemcpy3DBatchAsync",
		"cuMemcpy3DBatchAsync_ptsz", "cuMemcpy3DBatchAsync_v2",
		"cuMemcpy3DBatchAsync_v2_ptsz" };
	unsigned i = *ip;
	CUresult r;

	for (int k = 0; k < 4; k++, i++) {
		CUdeviceptr dsts[3], srcs[3];
		size_t sizes[3] = { 100, 200, 300 }, idxs[1] = { 0 };
		size_t fail_idx = ~(size_t)0;
		CUmemcpyAttributes attr;

		for (int j = 0; j < 3; j++) {
			dsts[j] = ddst(4096 * (size_t)j);
			srcs[j] = dsrc(4096 * (size_t)j);
		}
		memset(&attr, 0, sizeof(attr));
		attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		attr.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
		attr.srcLocHint.id = dev;
		attr.dstLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
		attr.dstLocHint.id = dev;
		if (k < 2) {
			batch_v1_fn f;

			if (!sym(names[k], &f))
				continue;
			r = f(dsts, srcs, sizes, 3, &attr, idxs, 1, &fail_idx, strm(i));
		} else {
			batch_fn f;

			if (!sym(names[k], &f))
				continue;
			r = f(dsts, srcs, sizes, 3, &attr, idxs, 1, strm(i));
		}
		rec(names[k], r, BATCH_FMT ",\"dst\":\"0x%llx\",\"src\":\"0x%llx\"",
		    H(strm(i)), H(dsts[0]), H(srcs[0]));
	}
	for (int k = 0; k < 4; k++, i++) {
		CUDA_MEMCPY3D_BATCH_OP ops[3];
		size_t fail_idx = ~(size_t)0;

		memset(ops, 0, sizeof(ops));
		for (int j = 0; j < 3; j++) {
			size_t sz = 100 * (size_t)(j + 1);

			ops[j].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
			ops[j].src.op.ptr.ptr = dsrc(4096 * (size_t)j);
			ops[j].src.op.ptr.rowLength = sz;
			ops[j].src.op.ptr.layerHeight = 1;
			ops[j].src.op.ptr.locHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
			ops[j].src.op.ptr.locHint.id = dev;
			ops[j].dst = ops[j].src;
			ops[j].dst.op.ptr.ptr = ddst(4096 * (size_t)j);
			ops[j].extent.width = sz;
			ops[j].extent.height = 1;
			ops[j].extent.depth = 1;
			ops[j].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		}
		if (k < 2) {
			batch3d_v1_fn f;

			if (!sym(names3[k], &f))
				continue;
			r = f(3, ops, &fail_idx, 0, strm(i));
		} else {
			batch3d_fn f;

			if (!sym(names3[k], &f))
				continue;
			r = f(3, ops, 0, strm(i));
		}
		rec(names3[k], r, BATCH_FMT ",\"ops\":\"0x%llx\"", H(strm(i)), H(ops));
	}
	*ip = i;
}

/* ---- memsets: bytes (elements * size), ptr, elem, value, stream ---- */

#define MEMSET_FAMILY(B, T, VAL)						\
typedef CUresult (*ms##B##_v1_fn)(devptr32, T, unsigned int);			\
typedef CUresult (*ms##B##_fn)(CUdeviceptr, T, size_t);			\
typedef CUresult (*ms##B##_async_fn)(CUdeviceptr, T, size_t, CUstream);	\
typedef CUresult (*ms2d##B##_v1_fn)(devptr32, unsigned int, T, unsigned int,	\
				    unsigned int);				\
typedef CUresult (*ms2d##B##_fn)(CUdeviceptr, size_t, T, size_t, size_t);	\
typedef CUresult (*ms2d##B##_async_fn)(CUdeviceptr, size_t, T, size_t,	\
				       size_t, CUstream);			\
static void memsets_##B(unsigned *ip)						\
{										\
	const size_t elem = sizeof(T);						\
	unsigned i = *ip;							\
	CUresult r;								\
	size_t n;								\
	{									\
		ms##B##_v1_fn f;						\
		if (sym("cuMemsetD" #B, &f)) {					\
			n = 1000 + i;						\
			r = f(d32dst(0), (T)(VAL), (unsigned)n);		\
			rec("cuMemsetD" #B, r, MS_FMT, n * elem, H(d32dst(0)),	\
			    elem, (unsigned long long)(VAL), n);		\
		}								\
		i++;								\
	}									\
	{									\
		static const char *const names[] = { "cuMemsetD" #B "_v2",	\
			"cuMemsetD" #B "_v2_ptds" };				\
		for (int k = 0; k < 2; k++, i++) {				\
			ms##B##_fn f;						\
			if (!sym(names[k], &f))					\
				continue;					\
			n = 1000 + i;						\
			r = f(ddst(0), (T)(VAL), n);				\
			rec(names[k], r, MS_FMT, n * elem, H(ddst(0)), elem,	\
			    (unsigned long long)(VAL), n);			\
		}								\
	}									\
	{									\
		static const char *const names[] = { "cuMemsetD" #B "Async",	\
			"cuMemsetD" #B "Async_ptsz" };				\
		for (int k = 0; k < 2; k++, i++) {				\
			ms##B##_async_fn f;					\
			if (!sym(names[k], &f))					\
				continue;					\
			n = 1000 + i;						\
			r = f(ddst(0), (T)(VAL), n, strm(i));			\
			rec(names[k], r, MS_FMT ",\"stream\":\"0x%llx\"",	\
			    n * elem, H(ddst(0)), elem,				\
			    (unsigned long long)(VAL), n, H(strm(i)));		\
		}								\
	}									\
	{									\
		ms2d##B##_v1_fn f;						\
		if (sym("cuMemsetD2D" #B, &f)) {				\
			n = 64 + i;						\
			r = f(d32dst(0), 512, (T)(VAL), (unsigned)n, 4);	\
			rec("cuMemsetD2D" #B, r, MS2D_FMT, n * 4 * elem,	\
			    H(d32dst(0)), elem, (unsigned long long)(VAL), n);	\
		}								\
		i++;								\
	}									\
	{									\
		static const char *const names[] = { "cuMemsetD2D" #B "_v2",	\
			"cuMemsetD2D" #B "_v2_ptds" };				\
		for (int k = 0; k < 2; k++, i++) {				\
			ms2d##B##_fn f;						\
			if (!sym(names[k], &f))					\
				continue;					\
			n = 64 + i;						\
			r = f(ddst(0), 512, (T)(VAL), n, 4);			\
			rec(names[k], r, MS2D_FMT, n * 4 * elem, H(ddst(0)),	\
			    elem, (unsigned long long)(VAL), n);		\
		}								\
	}									\
	{									\
		static const char *const names[] = { "cuMemsetD2D" #B "Async",	\
			"cuMemsetD2D" #B "Async_ptsz" };			\
		for (int k = 0; k < 2; k++, i++) {				\
			ms2d##B##_async_fn f;					\
			if (!sym(names[k], &f))					\
				continue;					\
			n = 64 + i;						\
			r = f(ddst(0), 512, (T)(VAL), n, 4, strm(i));		\
			rec(names[k], r, MS2D_FMT ",\"stream\":\"0x%llx\"",	\
			    n * 4 * elem, H(ddst(0)), elem,			\
			    (unsigned long long)(VAL), n, H(strm(i)));		\
		}								\
	}									\
	*ip = i;								\
}

#define MS_FMT "\"bytes\":%zu,\"ptr\":\"0x%llx\",\"elem\":%zu,\"value\":%llu," \
	"\"count\":%zu"
#define MS2D_FMT "\"bytes\":%zu,\"ptr\":\"0x%llx\",\"elem\":%zu,\"value\":%llu," \
	"\"width\":%zu,\"height\":4,\"pitch\":512"

MEMSET_FAMILY(8, unsigned char, 0xa5)
MEMSET_FAMILY(16, unsigned short, 0xbeef)
MEMSET_FAMILY(32, unsigned int, 0xdeadbeefu)

/* ---- synchronisation: stream, event, ctx ---- */

static void syncs(void)
{
	static const char *const rec_names[] = { "cuEventRecord", "cuEventRecord_ptsz" };
	static const char *const recf_names[] = { "cuEventRecordWithFlags",
		"cuEventRecordWithFlags_ptsz" };
	static const char *const wait_names[] = { "cuStreamWaitEvent",
		"cuStreamWaitEvent_ptsz" };
	static const char *const query_names[] = { "cuStreamQuery", "cuStreamQuery_ptsz" };
	static const char *const sync_names[] = { "cuStreamSynchronize",
		"cuStreamSynchronize_ptsz" };
	unsigned i = 0;
	CUresult r;

	phase = "probe";
	for (int k = 0; k < 2; k++, i++) {
		event_record_fn f;

		if (!sym(rec_names[k], &f))
			continue;
		r = f(event, strm(i));
		rec(rec_names[k], r, "\"event\":\"0x%llx\",\"stream\":\"0x%llx\"",
		    H(event), H(strm(i)));
	}
	for (int k = 0; k < 2; k++, i++) {
		event_record_flags_fn f;

		if (!sym(recf_names[k], &f))
			continue;
		r = f(event, strm(i), 0);
		rec(recf_names[k], r, "\"event\":\"0x%llx\",\"stream\":\"0x%llx\","
		    "\"flags\":0", H(event), H(strm(i)));
	}
	for (int k = 0; k < 2; k++, i++) {
		wait_event_fn f;

		if (!sym(wait_names[k], &f))
			continue;
		r = f(strm(i), event, 0);
		rec(wait_names[k], r, "\"stream\":\"0x%llx\",\"event\":\"0x%llx\","
		    "\"flags\":0", H(strm(i)), H(event));
	}
	for (int k = 0; k < 2; k++, i++) {
		stream_fn f;

		if (!sym(query_names[k], &f))
			continue;
		r = f(strm(i));
		rec(query_names[k], r, "\"stream\":\"0x%llx\"", H(strm(i)));
	}
	{
		event_fn f;

		if (sym("cuEventQuery", &f)) {
			r = f(event);
			rec("cuEventQuery", r, "\"event\":\"0x%llx\"", H(event));
		}
		if (sym("cuEventSynchronize", &f)) {
			r = f(event);
			rec("cuEventSynchronize", r, "\"event\":\"0x%llx\"", H(event));
		}
	}
	for (int k = 0; k < 2; k++, i++) {
		stream_fn f;

		if (!sym(sync_names[k], &f))
			continue;
		r = f(strm(i));
		rec(sync_names[k], r, "\"stream\":\"0x%llx\"", H(strm(i)));
	}
	{
		ctx_sync_fn f;
		ctx_sync_v2_fn f2;

		if (sym("cuCtxSynchronize", &f)) {
			r = f();
			rec("cuCtxSynchronize", r, "\"ctx\":\"0x0\"");
		}
		if (sym("cuCtxSynchronize_v2", &f2)) {
			r = f2(ctx);
			rec("cuCtxSynchronize_v2", r, "\"ctx\":\"0x%llx\"", H(ctx));
		}
	}
}

/* ---- graphs: stream, graph, exec ---- */

static CUgraph graphs[2];
static bool graph_ok[2];
static CUgraphExec execs[5];
static bool exec_ok[5];

/* A kernel launched into a capture: it becomes a node of the graph. */
static void capture_launch(CUstream s)
{
	uint32_t us = 20;
	void *params[] = { &us };
	launch_fn launch;
	CUresult r;

	if (!sym("cuLaunchKernel", &launch))
		return;
	r = launch(func, 2, 1, 1, 32, 1, 1, 0, s, params, NULL);
	rec("cuLaunchKernel", r, "\"func\":\"0x%llx\",\"grid\":[2,1,1],\"block\":[32,1,1],"
	    "\"shared_mem\":0,\"stream\":\"0x%llx\",\"duration_us\":20", H(func), H(s));
}

static void graph_calls(void)
{
	begin_capture_v1_fn begin1;
	begin_capture_fn begin2;
	end_capture_fn end;
	graph_inst_legacy_fn inst_legacy;
	graph_inst_flags_fn inst_flags;
	graph_inst_params_fn inst_params;
	CUresult r;

	phase = "probe";
	/* two complete captures of two kernels each, each on its own stream */
	if (sym("cuStreamBeginCapture", &begin1)) {
		r = begin1(cap_stream[0]);
		rec("cuStreamBeginCapture", r, "\"stream\":\"0x%llx\",\"mode\":0",
		    H(cap_stream[0]));
		capture_launch(cap_stream[0]);
		capture_launch(cap_stream[0]);
	}
	if (sym("cuStreamEndCapture", &end)) {
		r = end(cap_stream[0], &graphs[0]);
		graph_ok[0] = r == CUDA_SUCCESS && graphs[0];
		rec("cuStreamEndCapture", r, "\"stream\":\"0x%llx\",\"graph\":\"0x%llx\"",
		    H(cap_stream[0]), H(graph_ok[0] ? graphs[0] : NULL));
	}
	if (sym("cuStreamBeginCapture_v2", &begin2)) {
		r = begin2(cap_stream[1], CU_STREAM_CAPTURE_MODE_RELAXED);
		rec("cuStreamBeginCapture_v2", r, "\"stream\":\"0x%llx\",\"mode\":%d",
		    H(cap_stream[1]), CU_STREAM_CAPTURE_MODE_RELAXED);
		capture_launch(cap_stream[1]);
		capture_launch(cap_stream[1]);
	}
	if (sym("cuStreamEndCapture_ptsz", &end)) {
		r = end(cap_stream[1], &graphs[1]);
		graph_ok[1] = r == CUDA_SUCCESS && graphs[1];
		rec("cuStreamEndCapture_ptsz", r,
		    "\"stream\":\"0x%llx\",\"graph\":\"0x%llx\"", H(cap_stream[1]),
		    H(graph_ok[1] ? graphs[1] : NULL));
	}
	for (int k = 0; k < 2; k++)
		if (!graph_ok[k])
			graphs[k] = (CUgraph)(uintptr_t)(0x8000 + k);

	/* five instantiations */
	{
		static const char *const names[] = { "cuGraphInstantiate",
			"cuGraphInstantiate_v2" };

		for (int k = 0; k < 2; k++) {
			if (!sym(names[k], &inst_legacy))
				continue;
			r = inst_legacy(&execs[k], graphs[0], NULL, NULL, 0);
			exec_ok[k] = r == CUDA_SUCCESS && execs[k];
			rec(names[k], r, "\"graph\":\"0x%llx\",\"exec\":\"0x%llx\"",
			    H(graphs[0]), H(exec_ok[k] ? execs[k] : NULL));
		}
	}
	if (sym("cuGraphInstantiateWithFlags", &inst_flags)) {
		r = inst_flags(&execs[2], graphs[1], 0);
		exec_ok[2] = r == CUDA_SUCCESS && execs[2];
		rec("cuGraphInstantiateWithFlags", r,
		    "\"graph\":\"0x%llx\",\"exec\":\"0x%llx\",\"flags\":0",
		    H(graphs[1]), H(exec_ok[2] ? execs[2] : NULL));
	}
	{
		static const char *const names[] = { "cuGraphInstantiateWithParams",
			"cuGraphInstantiateWithParams_ptsz" };

		for (int k = 0; k < 2; k++) {
			CUDA_GRAPH_INSTANTIATE_PARAMS p;

			if (!sym(names[k], &inst_params))
				continue;
			memset(&p, 0, sizeof(p));
			p.hUploadStream = strm(0);
			r = inst_params(&execs[3 + k], graphs[k], &p);
			exec_ok[3 + k] = r == CUDA_SUCCESS && execs[3 + k];
			rec(names[k], r, "\"graph\":\"0x%llx\",\"exec\":\"0x%llx\","
			    "\"upload_stream\":\"0x%llx\"", H(graphs[k]),
			    H(exec_ok[3 + k] ? execs[3 + k] : NULL), H(strm(0)));
		}
	}
	for (int k = 0; k < 5; k++)
		if (!exec_ok[k])
			execs[k] = (CUgraphExec)(uintptr_t)(0x9000 + k);

	{
		static const char *const names[] = { "cuGraphUpload", "cuGraphUpload_ptsz",
			"cuGraphLaunch", "cuGraphLaunch_ptsz" };
		static const int which[] = { 0, 1, 0, 2 };

		for (int k = 0; k < 4; k++) {
			graph_launch_fn f;
			CUgraphExec e = execs[which[k]];

			if (!sym(names[k], &f))
				continue;
			r = f(e, strm(k));
			rec(names[k], r, "\"exec\":\"0x%llx\",\"stream\":\"0x%llx\"", H(e),
			    H(strm(k)));
		}
	}
}

/* the two captures without an end capture: the very last calls made */
static void open_captures(void)
{
	begin_capture_v1_fn begin1;
	begin_capture_fn begin2;
	CUresult r;

	phase = "probe";
	if (sym("cuStreamBeginCapture_ptsz", &begin1)) {
		r = begin1(cap_stream[2]);
		rec("cuStreamBeginCapture_ptsz", r, "\"stream\":\"0x%llx\",\"mode\":0",
		    H(cap_stream[2]));
	}
	if (sym("cuStreamBeginCapture_v2_ptsz", &begin2)) {
		r = begin2(cap_stream[3], CU_STREAM_CAPTURE_MODE_RELAXED);
		rec("cuStreamBeginCapture_v2_ptsz", r,
		    "\"stream\":\"0x%llx\",\"mode\":%d", H(cap_stream[3]),
		    CU_STREAM_CAPTURE_MODE_RELAXED);
	}
}

/* ---- frees: ptr ---- */

/* What to free: the allocation, or in stub mode a fake pointer. */
static CUdeviceptr free_ptr(const struct allocation *a, unsigned i)
{
	if (a->ok)
		return a->ptr;
	return stub ? FAKE_DEV + 0x100000000ull * (i + 1) : 0;
}

static void free_device(const char *name, struct allocation *a, unsigned i,
			bool async)
{
	CUdeviceptr p = free_ptr(a, i);
	CUresult r;

	if (async) {
		free_async_fn f;

		if (!sym(name, &f))
			return;
		r = f(p, strm(i));
		rec(name, r, "\"ptr\":\"0x%llx\",\"stream\":\"0x%llx\"", H(p), H(strm(i)));
	} else {
		free_fn f;

		if (!sym(name, &f))
			return;
		r = f(p);
		rec(name, r, "\"ptr\":\"0x%llx\"", H(p));
	}
	a->ok = false;
}

static void frees(void)
{
	free_v1_fn free_v1;
	free_host_fn free_host;
	mem_map_fn map;
	mem_unmap_fn unmap;
	mem_release_fn release;
	addr_reserve_fn reserve;
	CUdeviceptr va = 0;
	bool va_ok = false;
	unsigned i = 0;
	CUresult r;

	phase = "probe";
	if (sym("cuMemFree", &free_v1)) {
		devptr32 p = a_v1.ok ? (devptr32)a_v1.ptr : stub ? FAKE_DEV32 : 0;

		r = free_v1(p);
		rec("cuMemFree", r, "\"ptr\":\"0x%llx\"", (unsigned long long)p);
		a_v1.ok = false;
	}
	i++;
	free_device("cuMemFree_v2", &a_v2, i++, false);
	free_device("cuMemFreeAsync", &a_async, i++, true);
	free_device("cuMemFreeAsync_ptsz", &a_async_ptsz, i++, true);
	if (sym("cuMemFreeHost", &free_host)) {
		void *p = a_host_v1.ok ? a_host_v1.host :
			stub ? (void *)(uintptr_t)0xe000000 : NULL;

		r = free_host(p);
		rec("cuMemFreeHost", r, "\"ptr\":\"0x%llx\"", H(p));
		a_host_v1.ok = false;
	}
	i++;

	/* virtual memory management: reserve, map, unmap, release */
	phase = "setup";
	if (sym("cuMemAddressReserve", &reserve)) {
		r = reserve(&va, vmm_size, 0, 0, 0);
		va_ok = r == CUDA_SUCCESS && va;
		rec("cuMemAddressReserve", r, "\"bytes\":%zu,\"ptr\":\"0x%llx\"",
		    vmm_size, H(va_ok ? va : 0));
	}
	if (!va_ok)
		va = FAKE_DEV + 0x10000000000ull;
	phase = "probe";
	if (sym("cuMemMap", &map)) {
		r = map(va, vmm_size, 0, vmm_handle, 0);
		rec("cuMemMap", r, "\"ptr\":\"0x%llx\",\"bytes\":%zu,\"handle\":\"0x%llx\"",
		    H(va), vmm_size, (unsigned long long)vmm_handle);
	}
	if (sym("cuMemUnmap", &unmap)) {
		r = unmap(va, vmm_size);
		rec("cuMemUnmap", r, "\"ptr\":\"0x%llx\",\"bytes\":%zu", H(va), vmm_size);
	}
	if (sym("cuMemRelease", &release)) {
		r = release(vmm_handle);
		rec("cuMemRelease", r, "\"handle\":\"0x%llx\"",
		    (unsigned long long)vmm_handle);
	}
	phase = "cleanup";
	if (va_ok) {
		addr_free_fn addr_free;

		if (sym("cuMemAddressFree", &addr_free)) {
			r = addr_free(va, vmm_size);
			rec("cuMemAddressFree", r, "\"ptr\":\"0x%llx\",\"bytes\":%zu",
			    H(va), vmm_size);
		}
	}
}

/* Free what the probed calls left, so a simulator's books balance. */
static void cleanup(void)
{
	struct allocation *dev_left[] = { &a_pitch_v1, &a_pitch_v2, &a_pool,
		&a_pool_ptsz, &a_managed };
	struct allocation *host_left[] = { &a_host_v2, &a_hostalloc };
	graph_exec_destroy_fn exec_destroy;
	graph_destroy_fn graph_destroy;
	free_host_fn free_host;
	CUresult r;

	phase = "cleanup";
	for (size_t k = 0; k < sizeof(dev_left) / sizeof(dev_left[0]); k++)
		if (dev_left[k]->ok)
			free_device("cuMemFree_v2", dev_left[k], 0, false);
	for (size_t k = 0; k < sizeof(host_left) / sizeof(host_left[0]); k++) {
		if (!host_left[k]->ok || !sym("cuMemFreeHost", &free_host))
			continue;
		r = free_host(host_left[k]->host);
		rec("cuMemFreeHost", r, "\"ptr\":\"0x%llx\"", H(host_left[k]->host));
		host_left[k]->ok = false;
	}
	for (int k = 0; k < 5; k++) {
		if (!exec_ok[k] || !sym("cuGraphExecDestroy", &exec_destroy))
			continue;
		r = exec_destroy(execs[k]);
		rec("cuGraphExecDestroy", r, "\"exec\":\"0x%llx\"", H(execs[k]));
	}
	for (int k = 0; k < 2; k++) {
		if (!graph_ok[k] || !sym("cuGraphDestroy", &graph_destroy))
			continue;
		r = graph_destroy(graphs[k]);
		rec("cuGraphDestroy", r, "\"graph\":\"0x%llx\"", H(graphs[k]));
	}
	/* async frees and host functions must be done before the exit */
	{
		ctx_sync_fn f;

		if (sym("cuCtxSynchronize", &f)) {
			r = f();
			rec("cuCtxSynchronize", r, "\"ctx\":\"0x0\"");
		}
	}
}

/* ---- output ---- */

static int write_truth(const char *path, const char *libpath)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "cudacalls: cannot write %s: %s\n", path, strerror(errno));
		return -errno;
	}
	fprintf(f, "{\"pid\":%d,\"tid\":%ld,\"lib\":%s,\"stub\":%s,\"calls\":[\n",
		(int)getpid(), (long)syscall(SYS_gettid), jstr(libpath),
		stub ? "true" : "false");
	for (size_t k = 0; k < ncalls; k++) {
		const struct call *c = &calls[k];

		fprintf(f, "{\"name\":\"%s\",\"phase\":\"%s\",\"ret\":%d,"
			"\"t0\":%llu,\"t1\":%llu,\"args\":{%s}}%s\n", c->name,
			c->phase, c->ret, (unsigned long long)c->t0,
			(unsigned long long)c->t1, c->args,
			k + 1 < ncalls ? "," : "");
	}
	fprintf(f, "],\"skipped\":[");
	for (size_t k = 0; k < nskipped; k++)
		fprintf(f, "%s\"%s\"", k ? "," : "", skipped[k]);
	fprintf(f, "]}\n");
	if (fclose(f) != 0) {
		fprintf(stderr, "cudacalls: cannot write %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t nprobe = 0, nok = 0;
	unsigned i = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: cudacalls LIBPATH TRUTH.json\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "cudacalls: %s\n", dlerror());
		return 1;
	}

	setup();
	allocs();
	lookups();
	launches();
	copies_1d(&i);
	copies_nd(&i);
	copies_batch(&i);
	i = 0;
	memsets_8(&i);
	memsets_16(&i);
	memsets_32(&i);
	syncs();
	graph_calls();
	frees();
	cleanup();
	open_captures();

	if (write_truth(argv[2], argv[1]) < 0)
		return 1;
	for (size_t k = 0; k < ncalls; k++) {
		if (strcmp(calls[k].phase, "probe") != 0)
			continue;
		nprobe++;
		nok += calls[k].ret == CUDA_SUCCESS;
	}
	fprintf(stderr, "cudacalls: %zu calls (%zu probed entry points, %zu "
		"returned 0), %zu skipped%s\n", ncalls, nprobe, nok, nskipped,
		stub ? "; device allocation failed: fake pointers" : "");
	for (size_t k = 0; k < nskipped; k++)
		fprintf(stderr, "cudacalls: skipped %s (not exported)\n", skipped[k]);
	if (getenv("CUDACALLS_LINGER_MS"))
		usleep(atoi(getenv("CUDACALLS_LINGER_MS")) * 1000);
	return 0;
}
