/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a kernel launch passed its kernel: a 32-bit hash of its argument
 * bytes, so the report can tell a kernel recomputed on the same inputs
 * (same kernel, grid and arguments) from one run again on others.  The
 * argument sizes come from the driver (cuFuncGetParamInfo, or
 * cuKernelGetParamInfo for a CUkernel; CUDA 12.4 and later), asked once
 * per function; a driver without it, or a function it
 * cannot describe, gives 0 (unknown).  The hash is taken on the launching
 * thread at the call's entry (the arguments are only valid then) and kept
 * by correlation id until the kernel's record is converted.  Thread-safe.
 */
#ifndef GPUBPF_LAUNCH_ARGS_H
#define GPUBPF_LAUNCH_ARGS_H

#include <stdint.h>

/*
 * Find the driver's parameter queries (a dlopen: call it on the library's
 * own thread, before launches are hashed; launch_args_hash() does it
 * otherwise).
 */
void launch_args_init(void);

/*
 * The hash of a launch's arguments, given as kernelParams (an array of
 * pointers to each argument) or as extra (CU_LAUNCH_PARAM_BUFFER_POINTER
 * and _SIZE: all of them in one buffer); never 0 when known, 0 when not.
 */
uint32_t launch_args_hash(void *func, void **params, void **extra);

/* Keep hash for the call of correlation id corr; the oldest are overwritten. */
void launch_args_put(uint32_t corr, uint32_t hash);

/* The hash kept for corr, 0 if none (never kept, or overwritten since). */
uint32_t launch_args_get(uint32_t corr);

#endif
