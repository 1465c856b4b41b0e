// SPDX-License-Identifier: BSD-2-Clause
/*
 * failcalls: launches, memsets and copies of which a known number fail,
 * for the tests of failed-call reporting.
 *
 *	failcalls LIBPATH TRUTH.json
 *
 * LIBPATH (the simulated driver) is dlopen'ed.  Failures come from invalid
 * handles and pointers, which every driver refuses with
 * CUDA_ERROR_INVALID_VALUE.  TRUTH.json:
 *	{"pid":P, "calls":{"NAME":{"total":N, "failed":F, "ret":R}, ...}}
 * with R the result of the failed ones (0 when none failed).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*getfunc_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*memset8a_fn)(CUdeviceptr, unsigned char, size_t, CUstream);
typedef CUresult (*memset32_fn)(CUdeviceptr, unsigned, size_t);
typedef CUresult (*htoda_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*sync_fn)(void);

#define NCALLS 8
static struct tally {
	const char *name;
	unsigned total, failed;
	int ret;
} tally[NCALLS];

static void *lib;

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "failcalls: %s not exported\n", name);
		exit(1);
	}
	return p;
}

/* Count one call of name that returned r. */
static void note(const char *name, CUresult r)
{
	int i;

	for (i = 0; i < NCALLS && tally[i].name && strcmp(tally[i].name, name); i++)
		;
	if (i == NCALLS) {
		fprintf(stderr, "failcalls: too many call names\n");
		exit(1);
	}
	tally[i].name = name;
	tally[i].total++;
	if (r != CUDA_SUCCESS) {
		tally[i].failed++;
		tally[i].ret = r;
	}
}

#define CALL(name, fn, ...) note(name, ((fn)sym(name))(__VA_ARGS__))

int main(int argc, char **argv)
{
	static char host[256];
	CUfunction f = NULL, bad_f = (CUfunction)(uintptr_t)0xdead0;
	CUdeviceptr d = 0, bad_d = 0x10;
	unsigned us = 1;
	void *params[] = { &us };
	FILE *out;
	int i;

	if (argc != 3) {
		fprintf(stderr, "usage: failcalls LIBPATH TRUTH.json\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "failcalls: %s\n", dlerror());
		return 1;
	}
	if (((init_fn)sym("cuInit"))(0) ||
	    ((getfunc_fn)sym("cuModuleGetFunction"))(&f, NULL, "ok_kernel") ||
	    ((alloc_fn)sym("cuMemAlloc_v2"))(&d, 4096)) {
		fprintf(stderr, "failcalls: set-up failed\n");
		return 1;
	}
	/* launches: 10 good, 3 with an invalid function, 2 with an empty grid */
	for (i = 0; i < 15; i++)
		CALL("cuLaunchKernel", launch_fn, i < 13 && i >= 10 ? bad_f : f,
		     i >= 13 ? 0 : 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
	/* one launch with no configuration */
	CALL("cuLaunchKernelEx", launch_ex_fn, NULL, f, params, NULL);
	/* memsets: 4 good, 2 outside any allocation; one synchronous failure */
	for (i = 0; i < 6; i++)
		CALL("cuMemsetD8Async", memset8a_fn, i < 4 ? d : bad_d, 0, 64, NULL);
	CALL("cuMemsetD32_v2", memset32_fn, bad_d, 0, 4);
	/* copies: 3 good, 2 to no allocation; one synchronous failure */
	for (i = 0; i < 5; i++)
		CALL("cuMemcpyHtoDAsync_v2", htoda_fn, i < 3 ? d : bad_d, host, sizeof(host), NULL);
	CALL("cuMemcpyHtoD_v2", htod_fn, bad_d, host, sizeof(host));
	CALL("cuCtxSynchronize", sync_fn);
	((free_fn)sym("cuMemFree_v2"))(d);

	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	fprintf(out, "{\"pid\":%d,\"calls\":{", getpid());
	for (i = 0; i < NCALLS && tally[i].name; i++)
		fprintf(out, "%s\"%s\":{\"total\":%u,\"failed\":%u,\"ret\":%d}", i ? "," : "",
			tally[i].name, tally[i].total, tally[i].failed, tally[i].ret);
	fprintf(out, "}}\n");
	return fclose(out) ? 1 : 0;
}
