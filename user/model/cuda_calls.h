/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libcuda entry points gpubpf probes, and how to read each one's
 * arguments.  The same table drives the attach cookies (what BPF captures)
 * and the decoding of records into model events, so the two cannot drift.
 */
#ifndef GPUBPF_CUDA_CALLS_H
#define GPUBPF_CUDA_CALLS_H

#include <stdint.h>

enum cuda_family {
	CF_LAUNCH,
	CF_GRAPH,
	CF_MEMCPY,
	CF_MEMSET,
	CF_SYNC,
	CF_ALLOC,
	CF_FREE,
	CF_LOOKUP,
	CF_NFAMILIES,
};

enum cuda_copy_kind {
	CK_NONE,
	CK_HTOD, CK_DTOH, CK_DTOD, CK_HTOH,
	CK_HTOA, CK_ATOH, CK_DTOA, CK_ATOD, CK_ATOA,
	CK_PEER,
	CK_DEFAULT,     /* direction inferred by the driver from the pointers */
	CK_NKINDS,
};

/* How arguments are laid out beyond the simple roles below. */
enum cuda_layout {
	CL_PLAIN,       /* roles only */
	CL_LAUNCH_EX,   /* grid, block, shmem, stream from CUlaunchConfig */
	CL_MEMCPY_ND,   /* bytes and kind from CUDA_MEMCPY2D/3D(_PEER) */
	CL_BATCH,       /* bytes and count from the batch arrays */
	CL_AREA,        /* bytes = arg[bytes] * arg[bytes + 1] * element */
};

/* Where a kernel name comes from, for lookups (see GB_CK_NAME_*). */
enum cuda_name_src { NAME_NONE, NAME_ARG2, NAME_OUT };

/*
 * The unsuffixed names of entry points that have a _v2 are the CUDA 3.x
 * (v1) ABI: 32-bit sizes and device pointers, whose upper register halves
 * are undefined.
 */
enum { NARROW_SIZE = 1, NARROW_PTR = 2, NARROW_ALL = 3 };

/* What the value read through the out pointer at return is. */
enum cuda_out { OUT_NONE, OUT_PTR, OUT_HANDLE, OUT_FUNC };

#define NOARG (-1)

struct cuda_call {
	const char *name;
	uint8_t family;         /* enum cuda_family */
	uint8_t layout;         /* enum cuda_layout */
	uint8_t deref;          /* enum gb_deref */
	uint8_t ret;            /* probe the return */
	uint8_t kind;           /* enum cuda_copy_kind */
	uint8_t elem;           /* memset element size in bytes */
	uint8_t name_src;       /* enum cuda_name_src */
	uint8_t out_as;         /* enum cuda_out: what the out value is */
	uint8_t narrow;         /* NARROW_*: a CUDA 3.x (v1) signature */
	/* argument roles: index 0..5 registers, 6..10 stack, NOARG none */
	int8_t out;             /* out-pointer read at return (register arg) */
	int8_t func, grid, block, shmem, stream, bytes, ptr, handle;
	uint8_t ngrid;          /* 3, or 2 for cuLaunchGrid* */
};

extern const struct cuda_call cuda_calls[];
extern const unsigned cuda_ncalls;

const char *cuda_family_name(unsigned family);
/* CUDA_ERROR_NOT_READY: what the queries answer for unfinished work, not a failure. */
#define CUDA_RESULT_NOT_READY 600
/* 1 if a call that returned result failed (not CUDA_SUCCESS nor NOT_READY). */
int cuda_result_failed(int result);
/* The name of a CUresult ("CUDA_ERROR_INVALID_VALUE"), NULL if unknown. */
const char *cuda_result_name(int result);
/* Its name, else "CUresult <n>" written in buf (len >= 24). */
const char *cuda_result_label(int result, char *buf, size_t len);
const char *cuda_copy_kind_name(unsigned kind);
/* Index of the named entry point, or -1. */
int cuda_call_find(const char *name);
/* The attach cookie for call id (see bpf/gpubpf.h). */
uint64_t cuda_call_cookie(unsigned id);

#endif
