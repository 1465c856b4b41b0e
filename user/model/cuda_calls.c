// SPDX-License-Identifier: BSD-2-Clause
/* The table of probed libcuda entry points; see cuda_calls.h. */
#include <stdio.h>
#include <string.h>
#include "gpubpf.h"
#include "model/cuda_calls.h"

/*
 * Roles default to NOARG; each row names the ones its entry point has.
 * Signatures are those of the CUDA 13.0 cuda.h, the legacy (v1) ones for
 * the unsuffixed names that have a _v2.  Calls that can block or
 * whose duration matters (syncs, synchronous copies and memsets,
 * allocations, frees, lookups) probe their return; launches and other
 * enqueue-only calls are entry-only, which halves their cost.
 */
#pragma GCC diagnostic ignored "-Woverride-init"
#define CALL(n, fam, ...) { .name = n, .family = fam, .elem = 1, .ngrid = 3, \
	.out = NOARG, .func = NOARG, .grid = NOARG, .block = NOARG, \
	.shmem = NOARG, .stream = NOARG, .bytes = NOARG, .ptr = NOARG, \
	.handle = NOARG, __VA_ARGS__ }

const struct cuda_call cuda_calls[] = {
	CALL("cuLaunchKernel", CF_LAUNCH, .func = 0, .grid = 1, .block = 4, .shmem = 7, .stream = 8),
	CALL("cuLaunchKernel_ptsz", CF_LAUNCH, .func = 0, .grid = 1, .block = 4, .shmem = 7, .stream = 8),
	CALL("cuLaunchKernelEx", CF_LAUNCH, .layout = CL_LAUNCH_EX, .deref = GB_DEREF_LAUNCH_CONFIG, .func = 1),
	CALL("cuLaunchKernelEx_ptsz", CF_LAUNCH, .layout = CL_LAUNCH_EX, .deref = GB_DEREF_LAUNCH_CONFIG, .func = 1),
	CALL("cuLaunchCooperativeKernel", CF_LAUNCH, .func = 0, .grid = 1, .block = 4, .shmem = 7, .stream = 8),
	CALL("cuLaunchCooperativeKernel_ptsz", CF_LAUNCH, .func = 0, .grid = 1, .block = 4, .shmem = 7, .stream = 8),
	CALL("cuLaunchCooperativeKernelMultiDevice", CF_LAUNCH),
	CALL("cuLaunchHostFunc", CF_LAUNCH, .stream = 0, .handle = 1),
	CALL("cuLaunchHostFunc_ptsz", CF_LAUNCH, .stream = 0, .handle = 1),
	CALL("cuLaunch", CF_LAUNCH, .func = 0),
	CALL("cuLaunchGrid", CF_LAUNCH, .func = 0, .grid = 1, .ngrid = 2),
	CALL("cuLaunchGridAsync", CF_LAUNCH, .func = 0, .grid = 1, .stream = 3, .ngrid = 2),
	CALL("cuGraphLaunch", CF_GRAPH, .stream = 1, .handle = 0),
	CALL("cuGraphLaunch_ptsz", CF_GRAPH, .stream = 1, .handle = 0),
	CALL("cuGraphUpload", CF_GRAPH, .stream = 1, .handle = 0),
	CALL("cuGraphUpload_ptsz", CF_GRAPH, .stream = 1, .handle = 0),
	CALL("cuGraphInstantiate", CF_GRAPH, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuGraphInstantiate_v2", CF_GRAPH, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuGraphInstantiateWithFlags", CF_GRAPH, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuGraphInstantiateWithParams", CF_GRAPH, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuGraphInstantiateWithParams_ptsz", CF_GRAPH, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuStreamBeginCapture", CF_GRAPH, .stream = 0),
	CALL("cuStreamBeginCapture_v2", CF_GRAPH, .stream = 0),
	CALL("cuStreamBeginCapture_ptsz", CF_GRAPH, .stream = 0),
	CALL("cuStreamBeginCapture_v2_ptsz", CF_GRAPH, .stream = 0),
	CALL("cuStreamBeginCaptureToGraph", CF_GRAPH, .stream = 0),
	CALL("cuStreamBeginCaptureToGraph_ptsz", CF_GRAPH, .stream = 0),
	CALL("cuStreamEndCapture", CF_GRAPH, .ret = 1, .out = 1, .out_as = OUT_HANDLE, .stream = 0),
	CALL("cuStreamEndCapture_ptsz", CF_GRAPH, .ret = 1, .out = 1, .out_as = OUT_HANDLE, .stream = 0),
	CALL("cuMemcpy", CF_MEMCPY, .ret = 1, .kind = CK_DEFAULT, .bytes = 2, .ptr = 0),
	CALL("cuMemcpy_ptds", CF_MEMCPY, .ret = 1, .kind = CK_DEFAULT, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyAsync", CF_MEMCPY, .kind = CK_DEFAULT, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyAsync_ptsz", CF_MEMCPY, .kind = CK_DEFAULT, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyHtoD", CF_MEMCPY, .ret = 1, .kind = CK_HTOD, .bytes = 2, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemcpyHtoD_v2", CF_MEMCPY, .ret = 1, .kind = CK_HTOD, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyHtoD_v2_ptds", CF_MEMCPY, .ret = 1, .kind = CK_HTOD, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyHtoDAsync", CF_MEMCPY, .kind = CK_HTOD, .stream = 3, .bytes = 2, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemcpyHtoDAsync_v2", CF_MEMCPY, .kind = CK_HTOD, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyHtoDAsync_v2_ptsz", CF_MEMCPY, .kind = CK_HTOD, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyDtoH", CF_MEMCPY, .ret = 1, .kind = CK_DTOH, .bytes = 2, .ptr = 0, .narrow = NARROW_SIZE),
	CALL("cuMemcpyDtoH_v2", CF_MEMCPY, .ret = 1, .kind = CK_DTOH, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyDtoH_v2_ptds", CF_MEMCPY, .ret = 1, .kind = CK_DTOH, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyDtoHAsync", CF_MEMCPY, .kind = CK_DTOH, .stream = 3, .bytes = 2, .ptr = 0, .narrow = NARROW_SIZE),
	CALL("cuMemcpyDtoHAsync_v2", CF_MEMCPY, .kind = CK_DTOH, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyDtoHAsync_v2_ptsz", CF_MEMCPY, .kind = CK_DTOH, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyDtoD", CF_MEMCPY, .ret = 1, .kind = CK_DTOD, .bytes = 2, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemcpyDtoD_v2", CF_MEMCPY, .ret = 1, .kind = CK_DTOD, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyDtoD_v2_ptds", CF_MEMCPY, .ret = 1, .kind = CK_DTOD, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyDtoDAsync", CF_MEMCPY, .kind = CK_DTOD, .stream = 3, .bytes = 2, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemcpyDtoDAsync_v2", CF_MEMCPY, .kind = CK_DTOD, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyDtoDAsync_v2_ptsz", CF_MEMCPY, .kind = CK_DTOD, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemcpyHtoA", CF_MEMCPY, .ret = 1, .kind = CK_HTOA, .bytes = 3, .narrow = NARROW_ALL),
	CALL("cuMemcpyAtoH", CF_MEMCPY, .ret = 1, .kind = CK_ATOH, .bytes = 3, .ptr = 0, .narrow = NARROW_SIZE),
	CALL("cuMemcpyDtoA", CF_MEMCPY, .ret = 1, .kind = CK_DTOA, .bytes = 3, .narrow = NARROW_ALL),
	CALL("cuMemcpyAtoD", CF_MEMCPY, .ret = 1, .kind = CK_ATOD, .bytes = 3, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemcpyAtoA", CF_MEMCPY, .ret = 1, .kind = CK_ATOA, .bytes = 4, .narrow = NARROW_ALL),
	CALL("cuMemcpyHtoA_v2", CF_MEMCPY, .ret = 1, .kind = CK_HTOA, .bytes = 3),
	CALL("cuMemcpyAtoH_v2", CF_MEMCPY, .ret = 1, .kind = CK_ATOH, .bytes = 3, .ptr = 0),
	CALL("cuMemcpyDtoA_v2", CF_MEMCPY, .ret = 1, .kind = CK_DTOA, .bytes = 3),
	CALL("cuMemcpyAtoD_v2", CF_MEMCPY, .ret = 1, .kind = CK_ATOD, .bytes = 3, .ptr = 0),
	CALL("cuMemcpyAtoA_v2", CF_MEMCPY, .ret = 1, .kind = CK_ATOA, .bytes = 4),
	CALL("cuMemcpyHtoA_v2_ptds", CF_MEMCPY, .ret = 1, .kind = CK_HTOA, .bytes = 3),
	CALL("cuMemcpyAtoH_v2_ptds", CF_MEMCPY, .ret = 1, .kind = CK_ATOH, .bytes = 3, .ptr = 0),
	CALL("cuMemcpyDtoA_v2_ptds", CF_MEMCPY, .ret = 1, .kind = CK_DTOA, .bytes = 3),
	CALL("cuMemcpyAtoD_v2_ptds", CF_MEMCPY, .ret = 1, .kind = CK_ATOD, .bytes = 3, .ptr = 0),
	CALL("cuMemcpyAtoA_v2_ptds", CF_MEMCPY, .ret = 1, .kind = CK_ATOA, .bytes = 4),
	CALL("cuMemcpyHtoAAsync", CF_MEMCPY, .kind = CK_HTOA, .stream = 4, .bytes = 3, .narrow = NARROW_ALL),
	CALL("cuMemcpyAtoHAsync", CF_MEMCPY, .kind = CK_ATOH, .stream = 4, .bytes = 3, .ptr = 0, .narrow = NARROW_SIZE),
	CALL("cuMemcpyHtoAAsync_v2", CF_MEMCPY, .kind = CK_HTOA, .stream = 4, .bytes = 3),
	CALL("cuMemcpyAtoHAsync_v2", CF_MEMCPY, .kind = CK_ATOH, .stream = 4, .bytes = 3, .ptr = 0),
	CALL("cuMemcpyHtoAAsync_v2_ptsz", CF_MEMCPY, .kind = CK_HTOA, .stream = 4, .bytes = 3),
	CALL("cuMemcpyAtoHAsync_v2_ptsz", CF_MEMCPY, .kind = CK_ATOH, .stream = 4, .bytes = 3, .ptr = 0),
	CALL("cuMemcpyPeer", CF_MEMCPY, .ret = 1, .kind = CK_PEER, .bytes = 4, .ptr = 0),
	CALL("cuMemcpyPeer_ptds", CF_MEMCPY, .ret = 1, .kind = CK_PEER, .bytes = 4, .ptr = 0),
	CALL("cuMemcpyPeerAsync", CF_MEMCPY, .kind = CK_PEER, .stream = 5, .bytes = 4, .ptr = 0),
	CALL("cuMemcpyPeerAsync_ptsz", CF_MEMCPY, .kind = CK_PEER, .stream = 5, .bytes = 4, .ptr = 0),
	CALL("cuMemcpy2D", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D_V1, .ret = 1, .narrow = NARROW_ALL),
	CALL("cuMemcpy2D_v2", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D, .ret = 1),
	CALL("cuMemcpy2D_v2_ptds", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D, .ret = 1),
	CALL("cuMemcpy2DUnaligned", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D_V1, .ret = 1, .narrow = NARROW_ALL),
	CALL("cuMemcpy2DUnaligned_v2", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D, .ret = 1),
	CALL("cuMemcpy2DUnaligned_v2_ptds", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D, .ret = 1),
	CALL("cuMemcpy2DAsync", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D_V1, .stream = 1, .narrow = NARROW_ALL),
	CALL("cuMemcpy2DAsync_v2", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D, .stream = 1),
	CALL("cuMemcpy2DAsync_v2_ptsz", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY2D, .stream = 1),
	CALL("cuMemcpy3D", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D_V1, .ret = 1, .narrow = NARROW_ALL),
	CALL("cuMemcpy3D_v2", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D, .ret = 1),
	CALL("cuMemcpy3D_v2_ptds", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D, .ret = 1),
	CALL("cuMemcpy3DAsync", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D_V1, .stream = 1, .narrow = NARROW_ALL),
	CALL("cuMemcpy3DAsync_v2", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D, .stream = 1),
	CALL("cuMemcpy3DAsync_v2_ptsz", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D, .stream = 1),
	CALL("cuMemcpy3DPeer", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D, .ret = 1, .kind = CK_PEER),
	CALL("cuMemcpy3DPeer_ptds", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D, .ret = 1, .kind = CK_PEER),
	CALL("cuMemcpy3DPeerAsync", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D, .kind = CK_PEER, .stream = 1),
	CALL("cuMemcpy3DPeerAsync_ptsz", CF_MEMCPY, .layout = CL_MEMCPY_ND, .deref = GB_DEREF_MEMCPY3D, .kind = CK_PEER, .stream = 1),
	CALL("cuMemcpyBatchAsync", CF_MEMCPY, .layout = CL_BATCH, .deref = GB_DEREF_SIZES, .kind = CK_DEFAULT, .stream = 8),
	CALL("cuMemcpyBatchAsync_v2", CF_MEMCPY, .layout = CL_BATCH, .deref = GB_DEREF_SIZES, .kind = CK_DEFAULT, .stream = 7),
	CALL("cuMemcpy3DBatchAsync", CF_MEMCPY, .layout = CL_BATCH, .deref = GB_DEREF_BATCH3D, .kind = CK_DEFAULT, .stream = 4),
	CALL("cuMemcpy3DBatchAsync_v2", CF_MEMCPY, .layout = CL_BATCH, .deref = GB_DEREF_BATCH3D, .kind = CK_DEFAULT, .stream = 3),
	CALL("cuMemcpyBatchAsync_ptsz", CF_MEMCPY, .layout = CL_BATCH, .deref = GB_DEREF_SIZES, .kind = CK_DEFAULT, .stream = 8),
	CALL("cuMemcpyBatchAsync_v2_ptsz", CF_MEMCPY, .layout = CL_BATCH, .deref = GB_DEREF_SIZES, .kind = CK_DEFAULT, .stream = 7),
	CALL("cuMemcpy3DBatchAsync_ptsz", CF_MEMCPY, .layout = CL_BATCH, .deref = GB_DEREF_BATCH3D, .kind = CK_DEFAULT, .stream = 4),
	CALL("cuMemcpy3DBatchAsync_v2_ptsz", CF_MEMCPY, .layout = CL_BATCH, .deref = GB_DEREF_BATCH3D, .kind = CK_DEFAULT, .stream = 3),
	CALL("cuMemsetD8", CF_MEMSET, .ret = 1, .elem = 1, .bytes = 2, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemsetD2D8", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 1, .bytes = 3, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemsetD8_v2", CF_MEMSET, .ret = 1, .elem = 1, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D8_v2", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 1, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD8_v2_ptds", CF_MEMSET, .ret = 1, .elem = 1, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D8_v2_ptds", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 1, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD8Async", CF_MEMSET, .elem = 1, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D8Async", CF_MEMSET, .layout = CL_AREA, .elem = 1, .stream = 5, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD8Async_ptsz", CF_MEMSET, .elem = 1, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D8Async_ptsz", CF_MEMSET, .layout = CL_AREA, .elem = 1, .stream = 5, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD16", CF_MEMSET, .ret = 1, .elem = 2, .bytes = 2, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemsetD2D16", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 2, .bytes = 3, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemsetD16_v2", CF_MEMSET, .ret = 1, .elem = 2, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D16_v2", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 2, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD16_v2_ptds", CF_MEMSET, .ret = 1, .elem = 2, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D16_v2_ptds", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 2, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD16Async", CF_MEMSET, .elem = 2, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D16Async", CF_MEMSET, .layout = CL_AREA, .elem = 2, .stream = 5, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD16Async_ptsz", CF_MEMSET, .elem = 2, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D16Async_ptsz", CF_MEMSET, .layout = CL_AREA, .elem = 2, .stream = 5, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD32", CF_MEMSET, .ret = 1, .elem = 4, .bytes = 2, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemsetD2D32", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 4, .bytes = 3, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemsetD32_v2", CF_MEMSET, .ret = 1, .elem = 4, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D32_v2", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 4, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD32_v2_ptds", CF_MEMSET, .ret = 1, .elem = 4, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D32_v2_ptds", CF_MEMSET, .layout = CL_AREA, .ret = 1, .elem = 4, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD32Async", CF_MEMSET, .elem = 4, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D32Async", CF_MEMSET, .layout = CL_AREA, .elem = 4, .stream = 5, .bytes = 3, .ptr = 0),
	CALL("cuMemsetD32Async_ptsz", CF_MEMSET, .elem = 4, .stream = 3, .bytes = 2, .ptr = 0),
	CALL("cuMemsetD2D32Async_ptsz", CF_MEMSET, .layout = CL_AREA, .elem = 4, .stream = 5, .bytes = 3, .ptr = 0),
	CALL("cuCtxSynchronize", CF_SYNC, .ret = 1),
	CALL("cuCtxSynchronize_v2", CF_SYNC, .ret = 1, .handle = 0),
	CALL("cuStreamSynchronize", CF_SYNC, .ret = 1, .stream = 0),
	CALL("cuStreamSynchronize_ptsz", CF_SYNC, .ret = 1, .stream = 0),
	CALL("cuEventSynchronize", CF_SYNC, .ret = 1, .handle = 0),
	CALL("cuStreamWaitEvent", CF_SYNC, .stream = 0, .handle = 1),
	CALL("cuEventRecord", CF_SYNC, .stream = 1, .handle = 0),
	CALL("cuEventRecordWithFlags", CF_SYNC, .stream = 1, .handle = 0),
	CALL("cuStreamQuery", CF_SYNC, .ret = 1, .stream = 0),
	CALL("cuStreamWaitEvent_ptsz", CF_SYNC, .stream = 0, .handle = 1),
	CALL("cuEventRecord_ptsz", CF_SYNC, .stream = 1, .handle = 0),
	CALL("cuEventRecordWithFlags_ptsz", CF_SYNC, .stream = 1, .handle = 0),
	CALL("cuStreamQuery_ptsz", CF_SYNC, .ret = 1, .stream = 0),
	CALL("cuEventQuery", CF_SYNC, .ret = 1, .handle = 0),
	CALL("cuMemAlloc", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .bytes = 1, .narrow = NARROW_ALL),
	CALL("cuMemAlloc_v2", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .bytes = 1),
	CALL("cuMemAllocHost", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .bytes = 1, .narrow = NARROW_SIZE),
	CALL("cuMemAllocHost_v2", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .bytes = 1),
	CALL("cuMemHostAlloc", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .bytes = 1),
	CALL("cuMemAllocManaged", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .bytes = 1),
	CALL("cuMemAllocPitch", CF_ALLOC, .layout = CL_AREA, .ret = 1, .out = 0, .out_as = OUT_PTR, .bytes = 2, .narrow = NARROW_ALL),
	CALL("cuMemAllocPitch_v2", CF_ALLOC, .layout = CL_AREA, .ret = 1, .out = 0, .out_as = OUT_PTR, .bytes = 2),
	CALL("cuMemAllocAsync", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .stream = 2, .bytes = 1),
	CALL("cuMemAllocFromPoolAsync", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .stream = 3, .bytes = 1, .handle = 2),
	CALL("cuMemAllocAsync_ptsz", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .stream = 2, .bytes = 1),
	CALL("cuMemAllocFromPoolAsync_ptsz", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_PTR, .stream = 3, .bytes = 1, .handle = 2),
	CALL("cuMemCreate", CF_ALLOC, .ret = 1, .out = 0, .out_as = OUT_HANDLE, .bytes = 1),
	CALL("cuMemMap", CF_ALLOC, .ret = 1, .bytes = 1, .ptr = 0, .handle = 3),
	CALL("cuMemFree", CF_FREE, .ret = 1, .ptr = 0, .narrow = NARROW_ALL),
	CALL("cuMemFree_v2", CF_FREE, .ret = 1, .ptr = 0),
	CALL("cuMemFreeHost", CF_FREE, .ret = 1, .ptr = 0),
	CALL("cuMemFreeAsync", CF_FREE, .ret = 1, .stream = 1, .ptr = 0),
	CALL("cuMemFreeAsync_ptsz", CF_FREE, .ret = 1, .stream = 1, .ptr = 0),
	CALL("cuMemRelease", CF_FREE, .ret = 1, .handle = 0),
	CALL("cuMemUnmap", CF_FREE, .ret = 1, .bytes = 1, .ptr = 0),
	CALL("cuInit", CF_LOOKUP, .ret = 1),
	CALL("cuModuleLoad", CF_LOOKUP, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuModuleLoadData", CF_LOOKUP, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuModuleLoadDataEx", CF_LOOKUP, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuModuleLoadFatBinary", CF_LOOKUP, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuLibraryLoadData", CF_LOOKUP, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuLibraryLoadFromFile", CF_LOOKUP, .ret = 1, .out = 0, .out_as = OUT_HANDLE),
	CALL("cuModuleGetFunction", CF_LOOKUP, .ret = 1, .name_src = NAME_ARG2, .out = 0, .out_as = OUT_FUNC, .handle = 1),
	CALL("cuLibraryGetKernel", CF_LOOKUP, .ret = 1, .name_src = NAME_ARG2, .out = 0, .out_as = OUT_FUNC, .handle = 1),
	CALL("cuKernelGetFunction", CF_LOOKUP, .ret = 1, .out = 0, .out_as = OUT_FUNC, .handle = 1),
	CALL("cuFuncGetName", CF_LOOKUP, .ret = 1, .name_src = NAME_OUT, .out = 0, .out_as = OUT_NONE, .func = 1),
	CALL("cuKernelGetName", CF_LOOKUP, .ret = 1, .name_src = NAME_OUT, .out = 0, .out_as = OUT_NONE, .func = 1),
};

const unsigned cuda_ncalls = sizeof(cuda_calls) / sizeof(cuda_calls[0]);

static const char *const family_names[CF_NFAMILIES] = {
	[CF_LAUNCH] = "launch", [CF_GRAPH] = "graph", [CF_MEMCPY] = "memcpy",
	[CF_MEMSET] = "memset", [CF_SYNC] = "sync", [CF_ALLOC] = "alloc",
	[CF_FREE] = "free", [CF_LOOKUP] = "lookup",
};

static const char *const kind_names[CK_NKINDS] = {
	[CK_NONE] = "", [CK_HTOD] = "HtoD", [CK_DTOH] = "DtoH",
	[CK_DTOD] = "DtoD", [CK_HTOH] = "HtoH", [CK_HTOA] = "HtoA",
	[CK_ATOH] = "AtoH", [CK_DTOA] = "DtoA", [CK_ATOD] = "AtoD",
	[CK_ATOA] = "AtoA", [CK_PEER] = "Peer", [CK_DEFAULT] = "Default",
};

const char *cuda_family_name(unsigned family)
{
	return family < CF_NFAMILIES ? family_names[family] : "unknown";
}

const char *cuda_copy_kind_name(unsigned kind)
{
	return kind < CK_NKINDS ? kind_names[kind] : "unknown";
}

int cuda_call_find(const char *name)
{
	for (unsigned i = 0; i < cuda_ncalls; i++)
		if (!strcmp(cuda_calls[i].name, name))
			return i;
	return -1;
}

static int max_role(const struct cuda_call *c)
{
	int8_t roles[] = { c->func, c->grid + 2, c->block + 2, c->shmem,
			   c->stream, c->bytes + (c->layout == CL_AREA),
			   c->ptr, c->handle };
	int m = NOARG;

	for (unsigned i = 0; i < sizeof(roles); i++)
		if (roles[i] > m)
			m = roles[i];
	return m;
}

uint64_t cuda_call_cookie(unsigned id)
{
	const struct cuda_call *c = &cuda_calls[id];
	uint64_t ck = GB_CK_MAKE(id, c->deref, c->out == NOARG ? 0 : c->out + 1);

	if (max_role(c) >= GB_NREG)
		ck |= GB_CK_STACK;
	if (c->ret)
		ck |= GB_CK_RET;
	if (c->name_src == NAME_ARG2)
		ck |= GB_CK_NAME_ARG2;
	else if (c->name_src == NAME_OUT)
		ck |= GB_CK_NAME_OUT;
	return ck;
}

/* CUresult names, from the CUDA 13.0 cuda.h (generated with a grep of its enum cudaError_enum). */
static const struct { int code; const char *name; } results[] = {
	{ 1, "CUDA_ERROR_INVALID_VALUE" },
	{ 2, "CUDA_ERROR_OUT_OF_MEMORY" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED" },
	{ 4, "CUDA_ERROR_DEINITIALIZED" },
	{ 5, "CUDA_ERROR_PROFILER_DISABLED" },
	{ 6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED" },
	{ 7, "CUDA_ERROR_PROFILER_ALREADY_STARTED" },
	{ 8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED" },
	{ 34, "CUDA_ERROR_STUB_LIBRARY" },
	{ 36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER" },
	{ 46, "CUDA_ERROR_DEVICE_UNAVAILABLE" },
	{ 100, "CUDA_ERROR_NO_DEVICE" },
	{ 101, "CUDA_ERROR_INVALID_DEVICE" },
	{ 102, "CUDA_ERROR_DEVICE_NOT_LICENSED" },
	{ 200, "CUDA_ERROR_INVALID_IMAGE" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT" },
	{ 202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT" },
	{ 205, "CUDA_ERROR_MAP_FAILED" },
	{ 206, "CUDA_ERROR_UNMAP_FAILED" },
	{ 207, "CUDA_ERROR_ARRAY_IS_MAPPED" },
	{ 208, "CUDA_ERROR_ALREADY_MAPPED" },
	{ 209, "CUDA_ERROR_NO_BINARY_FOR_GPU" },
	{ 210, "CUDA_ERROR_ALREADY_ACQUIRED" },
	{ 211, "CUDA_ERROR_NOT_MAPPED" },
	{ 212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY" },
	{ 213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER" },
	{ 214, "CUDA_ERROR_ECC_UNCORRECTABLE" },
	{ 215, "CUDA_ERROR_UNSUPPORTED_LIMIT" },
	{ 216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE" },
	{ 217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED" },
	{ 218, "CUDA_ERROR_INVALID_PTX" },
	{ 219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT" },
	{ 220, "CUDA_ERROR_NVLINK_UNCORRECTABLE" },
	{ 221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND" },
	{ 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" },
	{ 223, "CUDA_ERROR_JIT_COMPILATION_DISABLED" },
	{ 224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY" },
	{ 225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC" },
	{ 226, "CUDA_ERROR_CONTAINED" },
	{ 300, "CUDA_ERROR_INVALID_SOURCE" },
	{ 301, "CUDA_ERROR_FILE_NOT_FOUND" },
	{ 302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND" },
	{ 303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED" },
	{ 304, "CUDA_ERROR_OPERATING_SYSTEM" },
	{ 400, "CUDA_ERROR_INVALID_HANDLE" },
	{ 401, "CUDA_ERROR_ILLEGAL_STATE" },
	{ 402, "CUDA_ERROR_LOSSY_QUERY" },
	{ 500, "CUDA_ERROR_NOT_FOUND" },
	{ 600, "CUDA_ERROR_NOT_READY" },
	{ 700, "CUDA_ERROR_ILLEGAL_ADDRESS" },
	{ 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" },
	{ 702, "CUDA_ERROR_LAUNCH_TIMEOUT" },
	{ 703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING" },
	{ 704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED" },
	{ 705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED" },
	{ 708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE" },
	{ 709, "CUDA_ERROR_CONTEXT_IS_DESTROYED" },
	{ 710, "CUDA_ERROR_ASSERT" },
	{ 711, "CUDA_ERROR_TOO_MANY_PEERS" },
	{ 712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED" },
	{ 713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED" },
	{ 714, "CUDA_ERROR_HARDWARE_STACK_ERROR" },
	{ 715, "CUDA_ERROR_ILLEGAL_INSTRUCTION" },
	{ 716, "CUDA_ERROR_MISALIGNED_ADDRESS" },
	{ 717, "CUDA_ERROR_INVALID_ADDRESS_SPACE" },
	{ 718, "CUDA_ERROR_INVALID_PC" },
	{ 719, "CUDA_ERROR_LAUNCH_FAILED" },
	{ 720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE" },
	{ 721, "CUDA_ERROR_TENSOR_MEMORY_LEAK" },
	{ 800, "CUDA_ERROR_NOT_PERMITTED" },
	{ 801, "CUDA_ERROR_NOT_SUPPORTED" },
	{ 802, "CUDA_ERROR_SYSTEM_NOT_READY" },
	{ 803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" },
	{ 804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE" },
	{ 805, "CUDA_ERROR_MPS_CONNECTION_FAILED" },
	{ 806, "CUDA_ERROR_MPS_RPC_FAILURE" },
	{ 807, "CUDA_ERROR_MPS_SERVER_NOT_READY" },
	{ 808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED" },
	{ 809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED" },
	{ 810, "CUDA_ERROR_MPS_CLIENT_TERMINATED" },
	{ 811, "CUDA_ERROR_CDP_NOT_SUPPORTED" },
	{ 812, "CUDA_ERROR_CDP_VERSION_MISMATCH" },
	{ 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" },
	{ 901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED" },
	{ 902, "CUDA_ERROR_STREAM_CAPTURE_MERGE" },
	{ 903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED" },
	{ 904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED" },
	{ 905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION" },
	{ 906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT" },
	{ 907, "CUDA_ERROR_CAPTURED_EVENT" },
	{ 908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD" },
	{ 909, "CUDA_ERROR_TIMEOUT" },
	{ 910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE" },
	{ 911, "CUDA_ERROR_EXTERNAL_DEVICE" },
	{ 912, "CUDA_ERROR_INVALID_CLUSTER_SIZE" },
	{ 913, "CUDA_ERROR_FUNCTION_NOT_LOADED" },
	{ 914, "CUDA_ERROR_INVALID_RESOURCE_TYPE" },
	{ 915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" },
	{ 916, "CUDA_ERROR_KEY_ROTATION" },
	{ 999, "CUDA_ERROR_UNKNOWN" },
};

int cuda_result_failed(int result)
{
	return result != 0 && result != CUDA_RESULT_NOT_READY;
}

const char *cuda_result_label(int result, char *buf, size_t len)
{
	const char *name = cuda_result_name(result);

	if (name)
		return name;
	snprintf(buf, len, "CUresult %d", result);
	return buf;
}

const char *cuda_result_name(int result)
{
	if (!result)
		return "CUDA_SUCCESS";
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
		if (results[i].code == result)
			return results[i].name;
	return NULL;
}
