// SPDX-License-Identifier: BSD-2-Clause
/*
 * The struct layouts the BPF program reads (bpf/gpubpf.h GB_*) against the
 * CUDA 13.0 headers, and the call table (user/model/cuda_calls.c) against the
 * stub libcuda and the limits of the BPF program.
 */
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/cuda_calls.h"
#include "sym/elf_syms.h"
#include "gpubpf.h"
#include "tap.h"

#define STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

/* collector.c's view of the launch configuration (struct launch_config) */
#define LC_GRID 0
#define LC_BLOCK 12
#define LC_SHMEM 24
#define LC_STREAM 32

static void test_launch_config(void)
{
	is_int(CUDA_VERSION / 1000, 13, "cuda.h is CUDA 13 (%d)", CUDA_VERSION);
	ok(GB_LAUNCH_CONFIG_SIZE >= offsetof(CUlaunchConfig, hStream) + sizeof(CUstream),
	   "GB_LAUNCH_CONFIG_SIZE (%d) covers hStream", GB_LAUNCH_CONFIG_SIZE);
	ok(GB_LAUNCH_CONFIG_SIZE <= sizeof(CUlaunchConfig),
	   "GB_LAUNCH_CONFIG_SIZE within CUlaunchConfig (%zu)", sizeof(CUlaunchConfig));
	ok(GB_LAUNCH_CONFIG_SIZE <= GB_NEXT * 8, "launch config fits in gb_call.ext");
	is_int(offsetof(CUlaunchConfig, gridDimX), LC_GRID, "gridDimX offset");
	is_int(offsetof(CUlaunchConfig, gridDimY), LC_GRID + 4, "gridDimY offset");
	is_int(offsetof(CUlaunchConfig, gridDimZ), LC_GRID + 8, "gridDimZ offset");
	is_int(offsetof(CUlaunchConfig, blockDimX), LC_BLOCK, "blockDimX offset");
	is_int(offsetof(CUlaunchConfig, blockDimY), LC_BLOCK + 4, "blockDimY offset");
	is_int(offsetof(CUlaunchConfig, blockDimZ), LC_BLOCK + 8, "blockDimZ offset");
	is_int(offsetof(CUlaunchConfig, sharedMemBytes), LC_SHMEM, "sharedMemBytes offset");
	is_int(offsetof(CUlaunchConfig, hStream), LC_STREAM, "hStream offset");
	is_int(sizeof(((CUlaunchConfig *)0)->gridDimX), 4, "grid dims are 32-bit");
	is_int(sizeof(((CUlaunchConfig *)0)->sharedMemBytes), 4, "sharedMemBytes is 32-bit");
}

static void test_memcpy_nd(void)
{
	is_int(offsetof(CUDA_MEMCPY2D, srcMemoryType), GB_M2D_SRC_TYPE, "2D srcMemoryType");
	is_int(offsetof(CUDA_MEMCPY2D, dstMemoryType), GB_M2D_DST_TYPE, "2D dstMemoryType");
	is_int(offsetof(CUDA_MEMCPY2D, WidthInBytes), GB_M2D_WIDTH, "2D WidthInBytes");
	is_int(offsetof(CUDA_MEMCPY2D, Height), GB_M2D_HEIGHT, "2D Height");
	is_int(sizeof(((CUDA_MEMCPY2D *)0)->srcMemoryType), 4, "2D memory type read as 4 bytes");
	is_int(sizeof(((CUDA_MEMCPY2D *)0)->WidthInBytes), 8, "2D width read as 8 bytes");
	is_int(sizeof(((CUDA_MEMCPY2D *)0)->Height), 8, "2D height read as 8 bytes");

	is_int(offsetof(CUDA_MEMCPY3D, srcMemoryType), GB_M3D_SRC_TYPE, "3D srcMemoryType");
	is_int(offsetof(CUDA_MEMCPY3D, dstMemoryType), GB_M3D_DST_TYPE, "3D dstMemoryType");
	is_int(offsetof(CUDA_MEMCPY3D, WidthInBytes), GB_M3D_WIDTH, "3D WidthInBytes");
	is_int(offsetof(CUDA_MEMCPY3D, Height), GB_M3D_HEIGHT, "3D Height");
	is_int(offsetof(CUDA_MEMCPY3D, Depth), GB_M3D_DEPTH, "3D Depth");
	is_int(sizeof(((CUDA_MEMCPY3D *)0)->Depth), 8, "3D depth read as 8 bytes");

	/* the same deref serves cuMemcpy3DPeer*: the offsets must agree */
	is_int(offsetof(CUDA_MEMCPY3D_PEER, srcMemoryType), GB_M3D_SRC_TYPE, "3D peer srcMemoryType");
	is_int(offsetof(CUDA_MEMCPY3D_PEER, dstMemoryType), GB_M3D_DST_TYPE, "3D peer dstMemoryType");
	is_int(offsetof(CUDA_MEMCPY3D_PEER, WidthInBytes), GB_M3D_WIDTH, "3D peer WidthInBytes");
	is_int(offsetof(CUDA_MEMCPY3D_PEER, Height), GB_M3D_HEIGHT, "3D peer Height");
	is_int(offsetof(CUDA_MEMCPY3D_PEER, Depth), GB_M3D_DEPTH, "3D peer Depth");

	is_int(sizeof(CUDA_MEMCPY3D_BATCH_OP), GB_BATCH3D_OP_SIZE, "batch op size");
	is_int(offsetof(CUDA_MEMCPY3D_BATCH_OP, extent), GB_BATCH3D_EXTENT, "batch op extent");
	is_int(offsetof(CUextent3D, width), 0, "extent width first");
	is_int(offsetof(CUextent3D, height), 8, "extent height second");
	is_int(offsetof(CUextent3D, depth), 16, "extent depth third");
	is_int(sizeof(CUextent3D), 24, "extent is three 8-byte words");

	is_int(CU_MEMORYTYPE_HOST, 1, "CU_MEMORYTYPE_HOST");
	is_int(CU_MEMORYTYPE_DEVICE, 2, "CU_MEMORYTYPE_DEVICE");
	is_int(CU_MEMORYTYPE_ARRAY, 3, "CU_MEMORYTYPE_ARRAY");
	is_int(CU_MEMORYTYPE_UNIFIED, 4, "CU_MEMORYTYPE_UNIFIED");
	is_int(sizeof(CUdeviceptr), 8, "CUdeviceptr is 8 bytes");
	is_int(sizeof(CUresult), 4, "CUresult is 4 bytes (ret truncated to int32)");
}

static int role_ok(int r, int max)
{
	return r == NOARG || (r >= 0 && r < max);
}

static void test_table(void)
{
	int dup = 0, roles = 0, outs = 0, names = 0, cookie = 0, found;
	const char **list;
	uint64_t *off;

	ok(cuda_ncalls > 100, "call table has %u entries", cuda_ncalls);
	ok(cuda_ncalls <= 0xffff, "call ids fit in the 16-bit cookie field");
	for (unsigned i = 0; i < cuda_ncalls; i++) {
		const struct cuda_call *c = &cuda_calls[i];
		uint64_t ck = cuda_call_cookie(i);
		int maxr = GB_NREG + GB_NSTACK;

		for (unsigned j = i + 1; j < cuda_ncalls; j++)
			if (!strcmp(c->name, cuda_calls[j].name)) {
				diag("duplicate %s at %u and %u", c->name, i, j);
				dup++;
			}
		if (cuda_call_find(c->name) != (int)i)
			dup++;
		if (!role_ok(c->func, maxr) || !role_ok(c->shmem, maxr) ||
		    !role_ok(c->stream, maxr) || !role_ok(c->ptr, maxr) ||
		    !role_ok(c->handle, maxr) ||
		    (c->grid != NOARG && !role_ok(c->grid + c->ngrid - 1, maxr)) ||
		    (c->block != NOARG && !role_ok(c->block + 2, maxr)) ||
		    (c->bytes != NOARG && !role_ok(c->bytes + (c->layout == CL_AREA), maxr))) {
			diag("%s: argument role out of range", c->name);
			roles++;
		}
		/* out is read at return through a register argument */
		if (c->out != NOARG && (!c->ret || c->out < 0 || c->out >= GB_NREG)) {
			diag("%s: out %d without a return probe or not a register", c->name, c->out);
			outs++;
		}
		if (c->name_src != NAME_NONE && (!c->ret || c->out == NOARG)) {
			diag("%s: name source needs the return and the out value", c->name);
			names++;
		}
		if (GB_CK_ID(ck) != i || GB_CK_DEREF(ck) != c->deref ||
		    GB_CK_OUT(ck) != (c->out == NOARG ? 0u : (unsigned)c->out + 1) ||
		    !(ck & GB_CK_RET) != !c->ret ||
		    !(ck & GB_CK_NAME_ARG2) != (c->name_src != NAME_ARG2) ||
		    !(ck & GB_CK_NAME_OUT) != (c->name_src != NAME_OUT)) {
			diag("%s: cookie 0x%llx", c->name, (unsigned long long)ck);
			cookie++;
		}
		/* any stack role needs GB_CK_STACK */
		if ((c->stream >= GB_NREG || c->shmem >= GB_NREG ||
		     (c->block != NOARG && c->block + 2 >= GB_NREG) ||
		     c->bytes + (c->layout == CL_AREA) >= GB_NREG) && !(ck & GB_CK_STACK)) {
			diag("%s: stack role without GB_CK_STACK", c->name);
			cookie++;
		}
	}
	is_int(dup, 0, "every name in cuda_calls[] is unique and found by cuda_call_find");
	is_int(roles, 0, "every argument role is within the captured registers and stack");
	is_int(outs, 0, "every out pointer is a register argument read at return");
	is_int(names, 0, "every name source probes the return and reads out");
	is_int(cookie, 0, "every cookie encodes its row");
	is_int(cuda_call_find("cuNoSuchCall"), -1, "unknown name: -1");
	ok(cuda_call_cookie(cuda_call_find("cuLaunchKernel")) & GB_CK_STACK,
	   "cuLaunchKernel reads the stack");
	ok(!(cuda_call_cookie(cuda_call_find("cuLaunchKernel")) & GB_CK_RET),
	   "cuLaunchKernel is entry-only");
	ok(!(cuda_call_cookie(cuda_call_find("cuMemcpyHtoD_v2")) & GB_CK_STACK),
	   "cuMemcpyHtoD_v2 does not read the stack");
	is_str(cuda_family_name(CF_MEMCPY), "memcpy", "family name memcpy");
	is_str(cuda_family_name(CF_NFAMILIES), "unknown", "family out of range");
	is_str(cuda_copy_kind_name(CK_DEFAULT), "Default", "copy kind Default");
	is_str(cuda_copy_kind_name(CK_NKINDS), "unknown", "copy kind out of range");

	if (access(STUB, R_OK)) {
		printf("ok %d # SKIP no %s\n", ++tap_count, STUB);
		return;
	}
	list = calloc(cuda_ncalls, sizeof(*list));
	off = calloc(cuda_ncalls, sizeof(*off));
	for (unsigned i = 0; i < cuda_ncalls; i++)
		list[i] = cuda_calls[i].name;
	found = elf_sym_offsets(STUB, list, cuda_ncalls, off);
	for (unsigned i = 0; i < cuda_ncalls; i++)
		if (!off[i])
			diag("%s not exported by the stub libcuda", list[i]);
	is_int(found, cuda_ncalls, "the stub libcuda exports all %u entry points", cuda_ncalls);
	free(list);
	free(off);
}

int main(void)
{
	test_launch_config();
	test_memcpy_nd();
	test_table();
	return done_testing();
}
