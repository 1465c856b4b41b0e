// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for the collector (user/record/collector.c): call records built by
 * hand the way bpf/cuda.bpf.c fills them, decoded through the call table.
 */
#include <cuda.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include "record/collector.h"
#include "model/cuda_calls.h"
#include "gpubpf.h"
#include "model/model.h"
#include "gpu_activity.h"
#include "tap.h"

/* pids above PID_MAX_LIMIT (4M): no /proc entry can name them */
#define P1 0x3ffff000u
#define P2 0x3ffff100u

static uint32_t id_of(const char *name)
{
	int id = cuda_call_find(name);

	if (id < 0) {
		printf("Bail out! %s missing from the call table\n", name);
		exit(1);
	}
	return id;
}

/* A record as the entry probe leaves it; ts_return 0 = entry-only. */
static struct gb_call call(const char *name, uint64_t ts, uint64_t ts_ret, int64_t ret)
{
	struct gb_call r;

	memset(&r, 0, sizeof(r));
	r.type = GB_REC_CALL;
	r.call_id = id_of(name);
	r.pid = P1;
	r.tid = P1;
	r.ts_entry = ts;
	r.ts_return = ts_ret;
	r.ret = ret;
	return r;
}

static int decode(const struct gb_call *r, struct model_event *ev)
{
	/* garbage first: decode must set what it reports */
	memset(ev, 0xa5, sizeof(*ev));
	return collector_decode_call(r, ev);
}

static void test_launch(void)
{
	struct gb_call r = call("cuLaunchKernel", 1000, 0, 0);
	struct model_event ev;

	r.arg[0] = 0x7f00deadbe00;      /* CUfunction */
	r.arg[1] = 64; r.arg[2] = 32; r.arg[3] = 2;
	r.arg[4] = 256; r.arg[5] = 4;
	r.stk[0] = 3;                   /* blockDimZ: 7th argument */
	r.stk[1] = 49152;               /* sharedMemBytes */
	r.stk[2] = 0x55550000;          /* hStream */
	r.stk[3] = 0x1234;              /* kernelParams: ignored */
	is_int(decode(&r, &ev), 0, "cuLaunchKernel decodes");
	is_int(ev.ts, 1000, "launch ts");
	is_int(ev.dur, 0, "entry-only launch: dur 0");
	is_int(ev.pid, P1, "launch pid");
	is_int(ev.tid, P1, "launch tid");
	is_int(ev.call_id, id_of("cuLaunchKernel"), "launch call id");
	is_int(ev.family, CF_LAUNCH, "launch family");
	is_int(ev.fields, MF_FUNC | MF_GRID | MF_BLOCK | MF_SHMEM | MF_STREAM,
	       "launch fields: func grid block shmem stream, no ret");
	ok(ev.func == 0x7f00deadbe00, "launch func = arg0");
	is_int(ev.grid[0], 64, "grid x = arg1");
	is_int(ev.grid[1], 32, "grid y = arg2");
	is_int(ev.grid[2], 2, "grid z = arg3");
	is_int(ev.block[0], 256, "block x = arg4");
	is_int(ev.block[1], 4, "block y = arg5");
	is_int(ev.block[2], 3, "block z = stk[0]");
	is_int(ev.shared_mem, 49152, "shared mem = stk[1]");
	ok(ev.stream == 0x55550000, "stream = stk[2]");

	/* cuLaunchGrid(f, grid_width, grid_height): two grid dims */
	r = call("cuLaunchGrid", 5, 0, 0);
	r.arg[0] = 0xf00; r.arg[1] = 7; r.arg[2] = 9; r.arg[3] = 99;
	is_int(decode(&r, &ev), 0, "cuLaunchGrid decodes");
	is_int(ev.fields, MF_FUNC | MF_GRID, "cuLaunchGrid fields");
	ok(ev.grid[0] == 7 && ev.grid[1] == 9 && ev.grid[2] == 1, "cuLaunchGrid grid = (7, 9, 1)");
}

static void test_launch_ex(void)
{
	struct gb_call r = call("cuLaunchKernelEx", 2000, 0, 0);
	struct model_event ev;
	CUlaunchConfig cfg;

	/* the probe copies the first GB_LAUNCH_CONFIG_SIZE bytes of *arg0 */
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = 1024; cfg.gridDimY = 3; cfg.gridDimZ = 5;
	cfg.blockDimX = 128; cfg.blockDimY = 2; cfg.blockDimZ = 1;
	cfg.sharedMemBytes = 8192;
	cfg.hStream = (CUstream)0x7f0011112222;
	cfg.attrs = (CUlaunchAttribute *)0x99;
	cfg.numAttrs = 1;
	memcpy(r.ext, &cfg, GB_LAUNCH_CONFIG_SIZE);
	r.arg[0] = 0x7ffc0000;          /* &cfg */
	r.arg[1] = 0xabcdef00;          /* CUfunction */
	is_int(decode(&r, &ev), 0, "cuLaunchKernelEx decodes");
	is_int(ev.fields, MF_FUNC | MF_GRID | MF_BLOCK | MF_SHMEM | MF_STREAM,
	       "cuLaunchKernelEx fields");
	ok(ev.func == 0xabcdef00, "cuLaunchKernelEx func = arg1");
	ok(ev.grid[0] == 1024 && ev.grid[1] == 3 && ev.grid[2] == 5, "grid from config");
	ok(ev.block[0] == 128 && ev.block[1] == 2 && ev.block[2] == 1, "block from config");
	is_int(ev.shared_mem, 8192, "shared mem from config");
	ok(ev.stream == 0x7f0011112222, "stream from config");
	is_int(ev.family, CF_LAUNCH, "family launch");
}

static void test_memcpy(void)
{
	struct gb_call r;
	struct model_event ev;

	r = call("cuMemcpyHtoD_v2", 10000, 10500, 0);
	r.arg[0] = 0x7f0000200000;      /* dstDevice */
	r.arg[1] = 0x5600000;           /* srcHost */
	r.arg[2] = 1 << 20;
	is_int(decode(&r, &ev), 0, "cuMemcpyHtoD_v2 decodes");
	is_int(ev.fields, MF_BYTES | MF_KIND | MF_PTR | MF_RET, "HtoD fields");
	is_int(ev.bytes, 1 << 20, "HtoD bytes = arg2");
	is_int(ev.copy_kind, CK_HTOD, "HtoD kind");
	ok(ev.ptr == 0x7f0000200000, "HtoD ptr = arg0");
	is_int(ev.ret, 0, "HtoD ret 0");
	is_int(ev.dur, 500, "HtoD dur = ts_return - ts_entry");
	is_int(ev.family, CF_MEMCPY, "HtoD family");

	r.ret = 700;                    /* CUDA_ERROR_ILLEGAL_ADDRESS */
	is_int(decode(&r, &ev), 0, "failed HtoD decodes");
	is_int(ev.ret, 700, "HtoD ret 700");
	ok(ev.fields & MF_RET, "failed HtoD has MF_RET");

	r.ts_return = 9000;             /* clock went backwards: no negative dur */
	decode(&r, &ev);
	is_int(ev.dur, 0, "return before entry gives dur 0");

	r = call("cuMemcpyDtoHAsync_v2", 20000, 0, 0);
	r.arg[0] = 0x5600000; r.arg[1] = 0x7f0000200000; r.arg[2] = 4096;
	r.arg[3] = 0x4444;
	is_int(decode(&r, &ev), 0, "cuMemcpyDtoHAsync_v2 decodes");
	is_int(ev.fields, MF_BYTES | MF_KIND | MF_PTR | MF_STREAM,
	       "DtoHAsync fields (entry-only: no MF_RET)");
	is_int(ev.bytes, 4096, "DtoHAsync bytes");
	is_int(ev.copy_kind, CK_DTOH, "DtoHAsync kind");
	ok(ev.stream == 0x4444, "DtoHAsync stream = arg3");
	ok(ev.ptr == 0x5600000, "DtoHAsync ptr = arg0 (dstHost)");
	is_int(ev.dur, 0, "DtoHAsync dur 0");
}

/*
 * The unsuffixed v1 entry points (CUDA 3.x ABI) take 32-bit sizes and
 * device pointers whose upper register halves are undefined; host
 * pointers (void *) stay 64-bit.
 */
static void test_v1(void)
{
	struct gb_call r;
	struct model_event ev;

	/* cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned ByteCount) */
	r = call("cuMemcpyHtoD", 10, 20, 0);
	r.arg[0] = 0xdead0000c0001000ULL; r.arg[1] = 0x7f1234567000ULL;
	r.arg[2] = 0xffffffff00010000ULL;
	is_int(decode(&r, &ev), 0, "v1 cuMemcpyHtoD decodes");
	ok(ev.bytes == 0x10000, "v1 HtoD bytes: low 32 bits of arg2");
	ok(ev.ptr == 0xc0001000, "v1 HtoD device ptr: low 32 bits of arg0");

	/* cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) */
	r = call("cuMemAlloc", 10, 20, 0);
	r.arg[0] = 0x7ffe1000; r.arg[1] = 0x1234567800000400ULL;
	r.out = 0xabcdabcd00200000ULL;  /* only the low half was written */
	decode(&r, &ev);
	ok(ev.bytes == 0x400, "v1 cuMemAlloc bytes: low 32 bits");
	ok(ev.ptr == 0x200000, "v1 cuMemAlloc ptr: low 32 bits of out");

	/* cuMemAllocHost(void **pp, unsigned int bytesize): host pointer kept */
	r = call("cuMemAllocHost", 10, 20, 0);
	r.arg[0] = 0x7ffe1000; r.arg[1] = 0xffffffff00000800ULL;
	r.out = 0x7f1234560000ULL;
	decode(&r, &ev);
	ok(ev.bytes == 0x800, "v1 cuMemAllocHost bytes: low 32 bits");
	ok(ev.ptr == 0x7f1234560000ULL, "v1 cuMemAllocHost host ptr kept whole");

	/* cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned ByteCount) */
	r = call("cuMemcpyDtoH", 10, 20, 0);
	r.arg[0] = 0x7f1234567000ULL; r.arg[1] = 0xdead0000c0001000ULL;
	r.arg[2] = 0xffffffff00010000ULL;
	decode(&r, &ev);
	ok(ev.bytes == 0x10000, "v1 DtoH bytes: low 32 bits");
	ok(ev.ptr == 0x7f1234567000ULL, "v1 DtoH ptr is dstHost (void *): kept whole");
	if (ev.ptr != 0x7f1234567000ULL)
		diag("got ptr 0x%llx", (unsigned long long)ev.ptr);

	/* cuMemcpyAtoH(void *dstHost, CUarray, unsigned srcOffset, unsigned ByteCount) */
	r = call("cuMemcpyAtoH", 10, 20, 0);
	r.arg[0] = 0x7f1234567000ULL; r.arg[3] = 0x100;
	decode(&r, &ev);
	ok(ev.ptr == 0x7f1234567000ULL, "v1 AtoH ptr is dstHost (void *): kept whole");

	/* _v2 is 64-bit throughout */
	r = call("cuMemcpyDtoH_v2", 10, 20, 0);
	r.arg[0] = 0x7f1234567000ULL; r.arg[2] = 0x100000000ULL;
	decode(&r, &ev);
	ok(ev.ptr == 0x7f1234567000ULL && ev.bytes == 0x100000000ULL, "v2 DtoH 64-bit ptr and size");
}

static void check_2d(uint64_t src, uint64_t dst, int want_kind)
{
	struct gb_call r = call("cuMemcpy2D_v2", 100, 160, 0);
	struct model_event ev;

	r.arg[0] = 0x7ffd0000;
	r.ext[0] = src; r.ext[1] = dst; r.ext[2] = 640; r.ext[3] = 480; r.ext[4] = 1;
	decode(&r, &ev);
	is_int(ev.copy_kind, want_kind, "2D memtypes (%llu, %llu) -> %s",
	       (unsigned long long)src, (unsigned long long)dst,
	       cuda_copy_kind_name(want_kind));
}

static void test_memcpy_nd(void)
{
	struct gb_call r;
	struct model_event ev;

	r = call("cuMemcpy2D_v2", 100, 160, 0);
	r.arg[0] = 0x7ffd0000;
	r.ext[0] = CU_MEMORYTYPE_HOST; r.ext[1] = CU_MEMORYTYPE_DEVICE;
	r.ext[2] = 640; r.ext[3] = 480; r.ext[4] = 1;
	is_int(decode(&r, &ev), 0, "cuMemcpy2D_v2 decodes");
	is_int(ev.fields, MF_BYTES | MF_KIND | MF_RET, "2D fields");
	is_int(ev.bytes, 640 * 480, "2D bytes = width * height");
	is_int(ev.copy_kind, CK_HTOD, "2D host->device = HtoD");
	is_int(ev.dur, 60, "2D dur");

	check_2d(1, 2, CK_HTOD);
	check_2d(2, 1, CK_DTOH);
	check_2d(2, 2, CK_DTOD);
	check_2d(1, 1, CK_HTOH);
	check_2d(1, 3, CK_HTOA);
	check_2d(3, 1, CK_ATOH);
	check_2d(2, 3, CK_DTOA);
	check_2d(3, 2, CK_ATOD);
	check_2d(3, 3, CK_ATOA);
	check_2d(4, 2, CK_DEFAULT);
	check_2d(2, 4, CK_DEFAULT);
	check_2d(4, 4, CK_DEFAULT);
	check_2d(0, 2, CK_NONE);
	check_2d(2, 5, CK_NONE);
	check_2d(0x100000001ULL, 2, CK_NONE);

	r = call("cuMemcpy3D_v2", 300, 400, 0);
	r.ext[0] = CU_MEMORYTYPE_DEVICE; r.ext[1] = CU_MEMORYTYPE_HOST;
	r.ext[2] = 256; r.ext[3] = 64; r.ext[4] = 10;
	is_int(decode(&r, &ev), 0, "cuMemcpy3D_v2 decodes");
	is_int(ev.fields, MF_BYTES | MF_KIND | MF_RET, "3D fields");
	is_int(ev.bytes, 256 * 64 * 10, "3D bytes = width * height * depth");
	is_int(ev.copy_kind, CK_DTOH, "3D device->host = DtoH");

	r = call("cuMemcpy3DPeerAsync", 300, 0, 0);
	r.arg[1] = 0x777;
	r.ext[0] = CU_MEMORYTYPE_DEVICE; r.ext[1] = CU_MEMORYTYPE_DEVICE;
	r.ext[2] = 8; r.ext[3] = 4; r.ext[4] = 2;
	is_int(decode(&r, &ev), 0, "cuMemcpy3DPeerAsync decodes");
	is_int(ev.fields, MF_BYTES | MF_KIND | MF_STREAM, "3D peer async fields");
	is_int(ev.copy_kind, CK_PEER, "3D peer kind stays Peer");
	is_int(ev.bytes, 64, "3D peer bytes");
	ok(ev.stream == 0x777, "3D peer stream = arg1");

	/* cuMemcpyBatchAsync_v2(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream) */
	r = call("cuMemcpyBatchAsync_v2", 500, 0, 0);
	r.arg[3] = 3; r.arg[6] = 0;
	r.stk[0] = 1;                   /* numAttrs: 7th argument */
	r.stk[1] = 0x8888;              /* hStream: 8th argument */
	r.ext[0] = 300; r.ext[1] = 3;
	is_int(decode(&r, &ev), 0, "cuMemcpyBatchAsync_v2 decodes");
	is_int(ev.fields, MF_BYTES | MF_COUNT | MF_KIND | MF_STREAM, "batch fields");
	is_int(ev.bytes, 300, "batch bytes = ext0");
	is_int(ev.count, 3, "batch count = ext1");
	ok(ev.stream == 0x8888, "batch stream = stk[1]");
	is_int(ev.copy_kind, CK_DEFAULT, "batch kind Default");
}

static void test_memset(void)
{
	struct gb_call r;
	struct model_event ev;

	r = call("cuMemsetD32_v2", 10, 30, 0);
	r.arg[0] = 0x7f0000300000; r.arg[1] = 0xffffffff; r.arg[2] = 1000;
	is_int(decode(&r, &ev), 0, "cuMemsetD32_v2 decodes");
	is_int(ev.fields, MF_BYTES | MF_PTR | MF_RET, "memset D32 fields");
	is_int(ev.bytes, 4000, "memset D32 bytes = 4 * N");
	ok(ev.ptr == 0x7f0000300000, "memset ptr");
	is_int(ev.family, CF_MEMSET, "memset family");
	is_int(ev.dur, 20, "memset dur");

	/* cuMemsetD2D16Async(dst, pitch, us, width, height, stream) */
	r = call("cuMemsetD2D16Async", 10, 0, 0);
	r.arg[0] = 0x7f0000400000; r.arg[1] = 4096; r.arg[2] = 0xbeef;
	r.arg[3] = 100; r.arg[4] = 50; r.arg[5] = 0x9999;
	is_int(decode(&r, &ev), 0, "cuMemsetD2D16Async decodes");
	is_int(ev.fields, MF_BYTES | MF_PTR | MF_STREAM, "memset 2D16 async fields");
	is_int(ev.bytes, 100 * 50 * 2, "memset 2D16 bytes = width * height * 2");
	ok(ev.stream == 0x9999, "memset 2D16 stream = arg5");
}

static void test_alloc_free(void)
{
	struct gb_call r;
	struct model_event ev;

	r = call("cuMemAlloc_v2", 10, 110, 0);
	r.arg[0] = 0x7ffe1000;          /* &dptr */
	r.arg[1] = 1 << 24;
	r.out = 0x7f0000500000;
	is_int(decode(&r, &ev), 0, "cuMemAlloc_v2 decodes");
	is_int(ev.fields, MF_BYTES | MF_PTR | MF_RET, "alloc fields");
	is_int(ev.bytes, 1 << 24, "alloc bytes = arg1");
	ok(ev.ptr == 0x7f0000500000, "alloc ptr = value read through out");
	is_int(ev.family, CF_ALLOC, "alloc family");
	is_int(ev.dur, 100, "alloc dur");

	r.ret = 2;                      /* CUDA_ERROR_OUT_OF_MEMORY */
	r.out = 0x1111;                 /* whatever was in *dptr */
	decode(&r, &ev);
	is_int(ev.fields, MF_BYTES | MF_RET, "failed alloc: no MF_PTR");
	is_int(ev.ret, 2, "failed alloc ret");

	r = call("cuMemAllocPitch_v2", 10, 20, 0);
	r.arg[0] = 0x7ffe1000; r.arg[1] = 0x7ffe1008;
	r.arg[2] = 1000; r.arg[3] = 30; r.arg[4] = 4;
	r.out = 0x7f0000600000;
	is_int(decode(&r, &ev), 0, "cuMemAllocPitch_v2 decodes");
	is_int(ev.bytes, 30000, "alloc pitch bytes = width * height");
	ok(ev.ptr == 0x7f0000600000, "alloc pitch ptr = out");
	is_int(ev.fields, MF_BYTES | MF_PTR | MF_RET, "alloc pitch fields");

	r = call("cuMemFree_v2", 10, 15, 0);
	r.arg[0] = 0x7f0000500000;
	is_int(decode(&r, &ev), 0, "cuMemFree_v2 decodes");
	is_int(ev.fields, MF_PTR | MF_RET, "free fields");
	ok(ev.ptr == 0x7f0000500000, "free ptr = arg0");
	is_int(ev.family, CF_FREE, "free family");
}

static void test_sync_graph(void)
{
	struct gb_call r;
	struct model_event ev;

	r = call("cuStreamSynchronize", 1000, 251000, 0);
	r.arg[0] = 0x3333;
	is_int(decode(&r, &ev), 0, "cuStreamSynchronize decodes");
	is_int(ev.fields, MF_STREAM | MF_RET, "stream sync fields");
	ok(ev.stream == 0x3333, "stream sync stream");
	is_int(ev.dur, 250000, "stream sync dur");
	is_int(ev.family, CF_SYNC, "sync family");

	r = call("cuEventRecord", 5, 0, 0);
	r.arg[0] = 0xe0e0; r.arg[1] = 0x3333;
	is_int(decode(&r, &ev), 0, "cuEventRecord decodes");
	is_int(ev.fields, MF_HANDLE | MF_STREAM, "event record fields");
	ok(ev.handle == 0xe0e0, "event record handle = arg0");
	ok(ev.stream == 0x3333, "event record stream = arg1");

	r = call("cuGraphLaunch", 5, 0, 0);
	r.arg[0] = 0x6a6a; r.arg[1] = 0x3334;
	is_int(decode(&r, &ev), 0, "cuGraphLaunch decodes");
	is_int(ev.fields, MF_HANDLE | MF_STREAM, "graph launch fields");
	ok(ev.handle == 0x6a6a, "graph launch handle = arg0");
	ok(ev.stream == 0x3334, "graph launch stream = arg1");
	is_int(ev.family, CF_GRAPH, "graph family");

	/* cuStreamEndCapture(hStream, CUgraph *phGraph) */
	r = call("cuStreamEndCapture", 5, 50, 0);
	r.arg[0] = 0x3335; r.arg[1] = 0x7ffe2000;
	r.out = 0x6b6b;
	is_int(decode(&r, &ev), 0, "cuStreamEndCapture decodes");
	is_int(ev.fields, MF_STREAM | MF_HANDLE | MF_RET, "end capture fields");
	ok(ev.handle == 0x6b6b, "end capture handle = out");
	ok(ev.stream == 0x3335, "end capture stream = arg0");

	r = call("cuStreamSynchronize", 5, 6, 0);
	r.call_id = cuda_ncalls;
	is_int(decode(&r, &ev), -EINVAL, "call id == cuda_ncalls: -EINVAL");
	r.call_id = 0xffffffff;
	is_int(decode(&r, &ev), -EINVAL, "call id 0xffffffff: -EINVAL");
}

static struct gb_name name_rec(uint32_t pid, uint64_t handle, const char *name)
{
	struct gb_name n;

	memset(&n, 0, sizeof(n));
	n.type = GB_REC_NAME;
	n.pid = pid;
	n.handle = handle;
	memcpy(n.name, name, strnlen(name, sizeof(n.name)));
	return n;
}

static const struct model_event *find_ts(const struct model *m, uint64_t ts)
{
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].ts == ts)
			return &m->ev[i];
	return NULL;
}

static void test_record_names(void)
{
	struct model m;
	struct collector c;
	struct gb_call r;
	struct gb_name n;
	const struct model_event *e;
	char long_name[GB_NAME_LEN + 1];

	model_init(&m);
	collector_init(&c, &m);

	/* cuModuleGetFunction: the name record comes before the call record */
	n = name_rec(P1, 0xf1, "vecAdd");
	is_int(collector_record(&c, &n, sizeof(n)), 0, "name record accepted");
	r = call("cuModuleGetFunction", 100, 200, 0);
	r.arg[0] = 0x7ffe3000; r.arg[1] = 0xa0d; r.arg[2] = 0x7ffe4000;
	r.out = 0xf1;
	is_int(collector_record(&c, &r, sizeof(r)), 0, "cuModuleGetFunction record");
	r = call("cuLaunchKernel", 300, 0, 0);
	r.arg[0] = 0xf1; r.arg[1] = r.arg[2] = r.arg[3] = 1;
	is_int(collector_record(&c, &r, sizeof(r)), 0, "launch of 0xf1 recorded");
	/* same handle in another pid: no name */
	r.pid = P2; r.tid = P2; r.ts_entry = 310;
	is_int(collector_record(&c, &r, sizeof(r)), 0, "launch of 0xf1 in pid 2 recorded");

	/* cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) */
	n = name_rec(P1, 0xc1, "reduceKernel");
	collector_record(&c, &n, sizeof(n));
	r = call("cuKernelGetFunction", 400, 410, 0);
	r.arg[0] = 0x7ffe5000; r.arg[1] = 0xc1;
	r.out = 0xf2;
	is_int(collector_record(&c, &r, sizeof(r)), 0, "cuKernelGetFunction record");
	is_str(strtab_get(&m.strs, model_kernel_name(&m, P1, 0xf2)), "reduceKernel",
	       "cuKernelGetFunction gives the function its kernel's name");
	r = call("cuLaunchKernel", 500, 0, 0);
	r.arg[0] = 0xf2;
	collector_record(&c, &r, sizeof(r));

	/* failed cuKernelGetFunction: nothing propagated */
	n = name_rec(P1, 0xc2, "otherKernel");
	collector_record(&c, &n, sizeof(n));
	r = call("cuKernelGetFunction", 600, 610, 1);
	r.arg[0] = 0x7ffe5000; r.arg[1] = 0xc2;
	r.out = 0xf3;
	collector_record(&c, &r, sizeof(r));
	is_int(model_kernel_name(&m, P1, 0xf3), 0, "failed cuKernelGetFunction propagates nothing");

	/* a name that arrives after the launch still resolves at finish */
	r = call("cuLaunchKernel", 700, 0, 0);
	r.arg[0] = 0xf4;
	collector_record(&c, &r, sizeof(r));
	n = name_rec(P1, 0xf4, "lateName");
	collector_record(&c, &n, sizeof(n));

	/* empty name: accepted, nothing stored */
	n = name_rec(P1, 0xf5, "");
	is_int(collector_record(&c, &n, sizeof(n)), 0, "empty name record accepted");
	is_int(model_kernel_name(&m, P1, 0xf5), 0, "empty name not stored");

	/* a full-length name without a terminator is cut at GB_NAME_LEN */
	memset(long_name, 'k', GB_NAME_LEN);
	long_name[GB_NAME_LEN] = 0;
	n = name_rec(P1, 0xf6, "");
	memset(n.name, 'k', GB_NAME_LEN);
	collector_record(&c, &n, sizeof(n));
	is_str(strtab_get(&m.strs, model_kernel_name(&m, P1, 0xf6)), long_name,
	       "unterminated name truncated to %d chars", GB_NAME_LEN);

	is_int(c.calls, 7, "7 call records counted");
	is_int(c.records, 13, "13 records counted (7 calls, 6 names)");
	is_int(c.bad, 0, "no bad records");
	is_int(m.nev, 7, "7 events");

	model_finish(&m);
	e = find_ts(&m, 300);
	ok(e && e->fields & MF_FUNC, "launch at 300 found");
	is_str(e ? strtab_get(&m.strs, e->kernel) : NULL, "vecAdd", "launch named vecAdd");
	is_str(e ? strtab_get(&m.strs, e->name) : NULL, "cuLaunchKernel", "event name is the entry point");
	e = find_ts(&m, 310);
	is_int(e ? e->kernel : 99, 0, "launch in the other pid unnamed");
	e = find_ts(&m, 100);
	is_str(e ? strtab_get(&m.strs, e->name) : NULL, "cuModuleGetFunction", "lookup event name");
	ok(e && e->func == 0xf1 && (e->fields & MF_FUNC), "cuModuleGetFunction func = out");
	ok(e && e->handle == 0xa0d && (e->fields & MF_HANDLE), "cuModuleGetFunction handle = module");
	is_str(e ? strtab_get(&m.strs, e->kernel) : NULL, "vecAdd", "lookup event carries the name too");
	e = find_ts(&m, 500);
	is_str(e ? strtab_get(&m.strs, e->kernel) : NULL, "reduceKernel",
	       "launch of the function from cuKernelGetFunction named");
	e = find_ts(&m, 700);
	is_str(e ? strtab_get(&m.strs, e->kernel) : NULL, "lateName", "late name resolved");

	collector_release(&c);
	model_release(&m);
}

static void test_record_errors(void)
{
	struct model m;
	struct collector c;
	struct gb_call r = call("cuStreamSynchronize", 10, 20, 0);
	struct gb_name n = name_rec(P1, 1, "x");
	uint32_t junk[64] = { 99 };
	uint16_t tiny = GB_REC_CALL;

	model_init(&m);
	collector_init(&c, &m);
	is_int(collector_record(&c, junk, sizeof(junk)), -EINVAL, "unknown type: -EINVAL");
	is_int(c.bad, 1, "bad = 1");
	junk[0] = 0;
	is_int(collector_record(&c, junk, sizeof(junk)), -EINVAL, "type 0: -EINVAL");
	is_int(collector_record(&c, &tiny, sizeof(tiny)), -EINVAL, "2-byte record: -EINVAL");
	is_int(collector_record(&c, &r, GB_CALL_RET - 1), -EINVAL,
	       "a sync's record without its return part: -EINVAL");
	is_int(collector_record(&c, &n, sizeof(n) - 1), -EINVAL, "short name record: -EINVAL");
	r.call_id = cuda_ncalls + 5;
	is_int(collector_record(&c, &r, sizeof(r)), -EINVAL, "unknown call id: -EINVAL");
	is_int(c.bad, 6, "six bad records counted");
	is_int(c.records, 0, "no good records");
	is_int(c.calls, 0, "no calls");
	is_int(m.nev, 0, "no events left behind");
	is_int(m.nthreads, 0, "no threads named from bad records");
	r = call("cuStreamSynchronize", 10, 20, 0);
	is_int(collector_record(&c, &r, sizeof(r) + 8), 0, "longer call record accepted");
	is_int(c.records, 1, "records = 1");
	is_int(c.calls, 1, "calls = 1");
	is_int(c.bad, 6, "bad unchanged");
	/* records hold only the parts their call has */
	r = call("cuStreamSynchronize", 30, 40, 0);
	is_int(collector_record(&c, &r, GB_CALL_RET), 0, "a sync's record: head, stack part, return part");
	r = call("cuLaunchKernel", 50, 0, 0);
	r.stk[2] = 0x5000;      /* hStream, argument 9 */
	is_int(collector_record(&c, &r, GB_CALL_STK), 0, "a launch's record: head and stack part");
	is_int(m.nev >= 3 ? (long long)m.ev[2].stream : -1, 0x5000, "its stream from the stack part");
	is_int(collector_record(&c, &r, GB_CALL_HEAD), -EINVAL, "a launch's record without its stack part: -EINVAL");
	r = call("cuMemcpyHtoDAsync_v2", 60, 0, 0);
	is_int(collector_record(&c, &r, GB_CALL_HEAD), 0, "an async copy's record: the head alone");
	is_int(c.calls, 4, "calls = 4");
	collector_release(&c);
	model_release(&m);
}

static const struct model_thread *thread(const struct model *m, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < m->nthreads; i++)
		if (m->threads[i].pid == pid && m->threads[i].tid == tid)
			return &m->threads[i];
	return NULL;
}

static const struct model_process *process(const struct model *m, uint32_t pid)
{
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

/* The exit record of a thread: its name. */
static void thread_exit(struct collector *c, uint32_t pid, uint32_t tid, const char *comm)
{
	struct gb_exit e;

	memset(&e, 0, sizeof(e));
	e.type = GB_REC_EXIT;
	e.pid = pid;
	e.tid = tid;
	memcpy(e.comm, comm, strnlen(comm, GB_COMM_LEN));
	collector_record(c, &e, sizeof(e));
}

static const char *thread_name(const struct model *m, uint32_t pid, uint32_t tid)
{
	const struct model_thread *t = thread(m, pid, tid);

	return t && t->name ? strtab_get(&m->strs, t->name) : NULL;
}

/*
 * Threads are named from /proc when first seen, or from their exit record
 * when they were gone by then (P1, P2: no such processes).
 */
static void test_naming(void)
{
	struct model m;
	struct collector c;
	struct gb_call r;
	const struct model_process *p;
	char self[64] = "", pself[64] = "";
	FILE *f;
	int bad = 0;

	model_init(&m);
	collector_init(&c, &m);

	r = call("cuStreamSynchronize", 1, 2, 0);
	collector_record(&c, &r, sizeof(r));
	r.tid = P1 + 1; r.ts_entry = 3;
	collector_record(&c, &r, sizeof(r));
	is_str(thread_name(&m, P1, P1 + 1), NULL, "a thread gone before it was seen: unnamed");
	thread_exit(&c, P1, P1 + 1, "worker");
	thread_exit(&c, P1, P1, "trainer");
	thread_exit(&c, P1, P1 + 1, "renamed");  /* a named thread keeps its name */
	thread_exit(&c, P1, P1 + 50, "never");   /* a thread never seen: ignored */
	/* a non-main thread of P2 first: the process stays unnamed */
	r.pid = P2; r.tid = P2 + 7; r.ts_entry = 5;
	collector_record(&c, &r, sizeof(r));
	thread_exit(&c, P2, P2 + 7, "p2worker");
	p = process(&m, P2);
	ok(p != NULL, "process P2 added");
	is_int(p ? p->name : 99, 0, "P2 unnamed while only a worker was named");
	r.tid = P2; r.ts_entry = 6;
	collector_record(&c, &r, sizeof(r));
	thread_exit(&c, P2, P2, "p2main");
	/* a 16-char comm without terminator */
	r.tid = P2 + 8; r.ts_entry = 7;
	collector_record(&c, &r, sizeof(r));
	thread_exit(&c, P2, P2 + 8, "0123456789abcdef");

	is_int(m.nthreads, 5, "five threads");
	is_int(m.nprocs, 2, "two processes");
	is_int(c.calls, 5, "five calls");
	is_int(c.records, 12, "twelve records: five calls, seven exits");
	is_str(thread_name(&m, P1, P1), "trainer", "main thread named at its exit");
	is_str(thread_name(&m, P1, P1 + 1), "worker", "worker named at its exit, once");
	is_int(thread(&m, P1, P1 + 50) != NULL, 0, "an unseen thread's exit adds nothing");
	p = process(&m, P1);
	is_str(p ? strtab_get(&m.strs, p->name) : NULL, "trainer", "process named by main thread");
	p = process(&m, P2);
	is_str(p ? strtab_get(&m.strs, p->name) : NULL, "p2main", "P2 named once its main thread is");
	is_str(thread_name(&m, P2, P2 + 7), "p2worker", "P2 worker named");
	is_str(thread_name(&m, P2, P2 + 8), "0123456789abcdef", "16-char comm kept whole and terminated");

	/* a live thread: named from /proc/PID/task/TID/comm when first seen */
	f = fopen("/proc/thread-self/comm", "r");
	if (f) {
		if (fgets(self, sizeof(self), f))
			self[strcspn(self, "\n")] = 0;
		fclose(f);
	}
	f = fopen("/proc/self/comm", "r");
	if (f) {
		if (fgets(pself, sizeof(pself), f))
			pself[strcspn(pself, "\n")] = 0;
		fclose(f);
	}
	r = call("cuStreamSynchronize", 8, 9, 0);
	r.pid = getpid(); r.tid = gettid();
	collector_record(&c, &r, sizeof(r));
	is_str(thread_name(&m, getpid(), gettid()), self, "live thread named from /proc (%s)", self);
	p = process(&m, getpid());
	is_str(p ? strtab_get(&m.strs, p->name) : NULL, pself, "its process too (%s)", pself);

	/* many threads: the seen set grows */
	for (uint32_t i = 0; i < 3000; i++) {
		char comm[GB_COMM_LEN];

		r = call("cuStreamSynchronize", 100 + i, 101 + i, 0);
		r.pid = P2; r.tid = 0x20000000u + i * 16;
		collector_record(&c, &r, sizeof(r));
		r.ts_entry = 100000 + i;
		collector_record(&c, &r, sizeof(r));
		snprintf(comm, sizeof(comm), "t%u", i);
		thread_exit(&c, P2, r.tid, comm);
		thread_exit(&c, P2, r.tid, "again");
	}
	is_int(m.nthreads, 5 + 1 + 3000, "3000 more threads, each once");
	for (uint32_t i = 0; i < 3000; i++) {
		char want[GB_COMM_LEN];
		const char *got = thread_name(&m, P2, 0x20000000u + i * 16);

		snprintf(want, sizeof(want), "t%u", i);
		if (!got || strcmp(got, want))
			bad++;
	}
	is_int(bad, 0, "every thread keeps its first name across seen-set growth");
	is_int(c.calls, 5 + 1 + 6000, "call count");
	collector_release(&c);
	model_release(&m);
}

/*
 * A process gone before its calls are decoded: its threads, first seen by
 * the scheduler, exit before the collector knows it has events.  Named
 * as they exited once its calls come (before: unnamed, "?"); a helper
 * process with no events stays unnamed.
 */
static void test_naming_gone_first(void)
{
	const uint32_t job = P2 + 0x40, helper = P2 + 0x80;
	struct gb_state st = { .type = GB_REC_STATE, .state = GB_ST_RUNNING, .ts = 10,
			       .syscall = -1 };
	const struct model_process *p;
	struct model m;
	struct collector c;
	struct gb_call r;

	model_init(&m);
	collector_init(&c, &m);
	st.pid = job;
	st.tid = job;
	collector_record(&c, &st, sizeof(st));
	st.tid = job + 1;
	collector_record(&c, &st, sizeof(st));
	st.pid = st.tid = helper;
	collector_record(&c, &st, sizeof(st));
	thread_exit(&c, job, job + 1, "job-worker");
	thread_exit(&c, job, job, "job");
	thread_exit(&c, helper, helper, "sh");
	r = call("cuStreamSynchronize", 20, 30, 0);
	r.pid = r.tid = job;
	collector_record(&c, &r, sizeof(r));
	collector_end(&c, 1000);
	p = process(&m, job);
	is_str(p && p->name ? strtab_get(&m.strs, p->name) : NULL, "job",
	       "a process gone before its calls: named as its main thread exited");
	is_str(thread_name(&m, job, job + 1), "job-worker", "its other thread too");
	is_str(thread_name(&m, helper, helper), NULL, "a helper without events: unnamed");
	collector_release(&c);
	model_release(&m);
}

static int state_rec(struct collector *c, uint32_t tid, uint64_t ts, uint32_t state,
		     int32_t nr, uint32_t holder)
{
	struct gb_state r = {
		.type = GB_REC_STATE, .pid = P1, .tid = tid, .state = state, .ts = ts,
		.syscall = nr, .holder = holder,
	};

	return collector_record(c, &r, sizeof(r));
}

/*
 * Thread states: a thread's records become spans that tile its time, a
 * wakeup of a thread still on its CPU changes nothing, blocked states take
 * their kind from the syscall, exit ends the last span, the end of the
 * recording the open ones.
 */
static void test_states(void)
{
	static const struct { uint64_t ts, dur; uint8_t state; int16_t nr; uint32_t holder; } want[] = {
		{ 100, 100, MS_RUNNING, -1, 0 }, { 200, 100, MS_IO, 0, 0 },
		{ 300, 50, MS_RUNNABLE, -1, 0 }, { 350, 50, MS_RUNNING, -1, 0 },
		{ 400, 50, MS_RUNNABLE, -1, 0 }, { 450, 150, MS_RUNNING, -1, 0 },
		{ 600, 100, MS_GIL_WAIT, 202, 77 }, { 700, 10, MS_RUNNABLE, -1, 0 },
		{ 710, 90, MS_RUNNING, -1, 0 }, { 800, 100, MS_LOCK_WAIT, 202, 0 },
		{ 900, 50, MS_OTHER_WAIT, -1, 0 }, { 950, 50, MS_SLEEP, 230, 0 },
	};
	struct gb_sample smp = { .type = GB_REC_SAMPLE, .pid = P1, .tid = P1, .cpu = 1,
				 .ts = 460, .pystack = 0x1234 };
	struct model m;
	struct collector c;
	int okall = 1;

	model_init(&m);
	collector_init(&c, &m);
	state_rec(&c, P1, 100, GB_ST_RUNNING, -1, 0);
	state_rec(&c, P1, 200, GB_ST_BLOCKED, 0, 0);
	state_rec(&c, P1, 300, GB_ST_WOKEN, -1, 0);
	state_rec(&c, P1, 350, GB_ST_RUNNING, -1, 0);
	state_rec(&c, P1, 400, GB_ST_RUNNABLE, -1, 0);
	state_rec(&c, P1, 450, GB_ST_RUNNING, -1, 0);
	is_int(state_rec(&c, P1, 500, GB_ST_WOKEN, -1, 0), 0, "a wakeup of a running thread");
	state_rec(&c, P1, 600, GB_ST_GIL, 202, 77);
	state_rec(&c, P1, 700, GB_ST_WOKEN, -1, 0);
	state_rec(&c, P1, 710, GB_ST_RUNNING, -1, 0);
	state_rec(&c, P1, 800, GB_ST_BLOCKED, 202, 0);
	state_rec(&c, P1, 900, GB_ST_BLOCKED, -1, 0);
	state_rec(&c, P1, 950, GB_ST_BLOCKED, 230, 0);
	/* a thread first seen woken, that exits; a record out of time order */
	state_rec(&c, P1 + 1, 120, GB_ST_WOKEN, -1, 0);
	state_rec(&c, P1 + 1, 130, GB_ST_RUNNING, -1, 0);
	state_rec(&c, P1 + 1, 125, GB_ST_BLOCKED, 35, 0);
	state_rec(&c, P1 + 1, 140, GB_ST_EXIT, -1, 0);
	is_int(state_rec(&c, P1, 960, 99, -1, 0), -EINVAL, "an unknown state is refused");
	is_int(collector_record(&c, &smp, sizeof(smp) - 1), -EINVAL, "a short sample is refused");
	is_int(collector_record(&c, &smp, sizeof(smp)), 0, "a sample");
	/* the job made a call; a helper process it ran (pid P1 + 7) made none */
	{
		struct gb_state helper = {
			.type = GB_REC_STATE, .pid = P1 + 7, .tid = P1 + 7,
			.state = GB_ST_RUNNING, .ts = 150, .syscall = -1,
		};
		struct model_event *e = model_add_event(&m);

		is_int(collector_record(&c, &helper, sizeof(helper)), 0, "a helper's state");
		e->pid = P1;
		e->tid = P1;
		e->ts = 500;
	}
	collector_end(&c, 1000);
	is_int(model_finish(&m), 0, "model_finish");
	is_int(c.states, 18, "state records counted");
	is_int(c.bad, 2, "bad records counted");
	is_int(m.nstates, 12 + 3, "spans");
	for (size_t i = 0; i < 12 && m.nstates >= 15; i++) {
		const struct model_state_span *s = &m.states[i];

		if (s->tid != P1 || s->ts != want[i].ts || s->dur != want[i].dur ||
		    s->state != want[i].state || s->syscall != want[i].nr ||
		    s->holder != want[i].holder) {
			diag("span %zu: ts %llu dur %llu %s syscall %d holder %u", i,
			     (unsigned long long)s->ts, (unsigned long long)s->dur,
			     model_state_name(s->state), s->syscall, s->holder);
			okall = 0;
		}
	}
	ok(okall, "the first thread's spans, in time order, tile [100, 1000)");
	ok(m.nstates == 15 && m.states[12].state == MS_RUNNABLE && m.states[12].dur == 10 &&
	   m.states[13].state == MS_RUNNING && m.states[13].dur == 0 &&
	   m.states[14].state == MS_SLEEP && m.states[14].ts == 130 && m.states[14].dur == 10,
	   "the second thread: an earlier record starts where the open span did; exit ends it");
	ok(m.nsamples == 1 && m.samples[0].tid == P1 && m.samples[0].cpu == 1 &&
	   !m.samples[0].stack, "the sample, without a stack the model lacks");
	is_str(model_syscall_name(232), "epoll_wait", "syscall names");
	is_int(model_state_of_syscall(45), MS_IO, "recvfrom is I/O");
	is_int(model_state_of_syscall(61), MS_OTHER_WAIT, "wait4 is another wait");
	collector_release(&c);
	model_release(&m);
}


static const struct model_event *find_kind(const struct model *m, enum model_kind kind)
{
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].kind == kind)
			return &m->ev[i];
	return NULL;
}

static int exit_rec(struct collector *c, uint32_t pid, uint64_t ts, int ended, const char *comm)
{
	struct gb_exit e = { .type = GB_REC_EXIT, .pid = pid, .tid = pid, .ended = ended, .ts = ts };

	memcpy(e.comm, comm, strnlen(comm, GB_COMM_LEN));
	return collector_record(c, &e, sizeof(e));
}

/*
 * A pid given to another process once its process ended (model.h,
 * MODEL_PID_AGAIN): the later process's records take the next key by
 * their time, whatever order they come in; a kernel name, timeless, is
 * the latest process's; the ended process's last switch, just after its
 * exit, is its own; stacks come under the pid.
 */
static void test_pid_again(void)
{
	/* a pid below PID_MAX_LIMIT, as pids given again are, that no process has */
	uint32_t P3 = 4194000, P3_2;
	struct gb_call r = call("cuLaunchKernel", 1000, 0, 0);
	struct gb_name na, nb;
	struct gb_state last;
	struct gb_gpu late = { .type = GB_REC_GPU };
	struct ga_kernel k = { .start = 3000000, .end = 3500000 };
	uint32_t frame = 1;
	const struct model_event *ev;
	const struct model_process *p;
	char want[64];
	struct model m;
	struct collector c;

	while (!kill(P3, 0) || errno != ESRCH)
		P3--;
	P3_2 = P3 + MODEL_PID_AGAIN;
	na = name_rec(P3, 0x50, "kernA");
	nb = name_rec(P3, 0x50, "kernB");
	last = (struct gb_state){ .type = GB_REC_STATE, .pid = P3, .tid = P3 };
	model_init(&m);
	collector_init(&c, &m);
	r.pid = r.tid = P3;
	collector_record(&c, &r, sizeof(r));
	collector_record(&c, &na, sizeof(na));
	model_add_stack(&m, P3, 77, 0, 1, &frame, &frame);
	last.state = GB_ST_RUNNING;
	last.ts = 4900000;
	collector_record(&c, &last, sizeof(last));
	ok(thread(&m, P3, P3) && thread(&m, P3, P3)->open_state, "the first runs from 4.9 ms");
	exit_rec(&c, P3 + 1, 2000000, 0, "worker");     /* a pid that made no call ends */
	is_int(exit_rec(&c, P3, 5000000, 1, "jobA"), 0, "the first process ends at 5 ms");
	is_int(collector_pid(&c, P3), P3_2, "the pid's next process is P3 + 2^22");
	exit_rec(&c, P3, 5000000 + 100, 1, "jobA");
	is_int(collector_pid(&c, P3), P3_2, "another thread seeing the last go ends nothing more");
	is_int(collector_pid(&c, P3 + 1), P3 + 1, "a process without events ending changes nothing");
	/* the next process's launch, then the first's last GPU batch, sent at 4 ms */
	r.ts_entry = 5000000 + 2000000;
	collector_record(&c, &r, sizeof(r));
	late.pid = late.tid = P3;
	late.len = sizeof(k);
	late.ts = 4000000;
	k.h = (struct ga_hdr){ .type = GA_KERNEL, .size = sizeof(k), .correlation = 1 };
	memcpy(late.data, &k, sizeof(k));
	is_int(collector_record(&c, &late, offsetof(struct gb_gpu, data) + sizeof(k)), 0,
	       "the first's late GPU batch");
	ev = find_kind(&m, EV_KERNEL);
	is_int(ev ? ev->pid : 0, P3, "... is the first process's");
	last.state = GB_ST_EXIT;
	last.ts = 5000000 + 500000;
	is_int(collector_record(&c, &last, sizeof(last)), 0, "its last switch, 0.5 ms after its exit");
	ok(!thread(&m, P3, P3)->open_state, "... ends its running");
	ok(m.nev == 3 && m.ev[0].pid == P3 && m.ev[1].pid == P3_2,
	   "the launches: one of each process");
	collector_record(&c, &nb, sizeof(nb));
	is_str(strtab_get(&m.strs, model_kernel_name(&m, P3, 0x50)), "kernA",
	       "the first's kernel name stays");
	is_str(strtab_get(&m.strs, model_kernel_name(&m, P3_2, 0x50)), "kernB",
	       "a name after the end is the next process's");
	ok(model_find_stack(&m, P3_2, 77) == model_find_stack(&m, P3, 77) &&
	   model_find_stack(&m, P3, 77), "the next process's stack 77 is the pid's");
	ok(!model_find_stack(&m, P3_2, 78), "... and no other");
	/* the second ends, a third starts */
	exit_rec(&c, P3, 9000000, 1, "jobB");
	r.ts_entry = 12000000;
	collector_record(&c, &r, sizeof(r));
	is_int(m.ev[m.nev - 1].pid, P3 + 2 * MODEL_PID_AGAIN, "a third process: P3 + 2 * 2^22");
	p = process(&m, P3);
	is_str(p && p->name ? strtab_get(&m.strs, p->name) : NULL, "jobA", "the first named as it was");
	p = process(&m, P3_2);
	snprintf(want, sizeof(want), "jobB (pid %u #2)", P3);
	is_str(p && p->name ? strtab_get(&m.strs, p->name) : NULL, want,
	       "the second's name says whose pid it has");
	is_int(collector_pid(&c, P3), P3 + 2 * MODEL_PID_AGAIN, "the latest is the third");
	collector_release(&c);
	model_release(&m);
}

int main(void)
{
	test_launch();
	test_launch_ex();
	test_memcpy();
	test_v1();
	test_memcpy_nd();
	test_memset();
	test_alloc_free();
	test_sync_graph();
	test_record_names();
	test_record_errors();
	test_naming();
	test_naming_gone_first();
	test_states();
	test_pid_again();
	return done_testing();
}
