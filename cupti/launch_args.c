// SPDX-License-Identifier: BSD-2-Clause
/*
 * Launch argument hashes (launch_args.h).  Two lock-free tables:
 *  - functions: the sizes of each function's parameters, filled once per
 *    function (under a lock, on a miss) and read without one: an entry is
 *    published by storing its function last;
 *  - hashes: correlation id -> hash, one 64-bit word per slot (the id in
 *    the high half), so a reader never sees half of another call's entry.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cuda.h>
#include "launch_args.h"

#define FUNCS      1024         /* functions described (more: unknown) */
#define MAX_PARAMS 64           /* parameters hashed; more: unknown */
#define SLOTS      (1u << 16)   /* calls between a launch and its record's conversion */

/* cuFuncGetParamInfo, and cuKernelGetParamInfo for a CUkernel launched as a CUfunction */
typedef CUresult (*param_info_fn)(void *, size_t, size_t *, size_t *);

struct func {
	void *func;             /* published last; NULL: free */
	uint16_t n;             /* parameters; 0: cannot be described */
	uint16_t size[MAX_PARAMS];
};

static struct func funcs[FUNCS];
static pthread_mutex_t funcs_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t slots[SLOTS];
static param_info_fn func_info, kernel_info;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!driver)
		return;
	func_info = (param_info_fn)dlsym(driver, "cuFuncGetParamInfo");
	kernel_info = (param_info_fn)dlsym(driver, "cuKernelGetParamInfo");
	dlclose(driver);        /* drops our reference; the driver stays */
}

void launch_args_init(void)
{
	pthread_once(&once, resolve);
}

static size_t func_slot(const void *f)
{
	uintptr_t x = (uintptr_t)f;

	return (size_t)((x >> 4) ^ (x >> 14)) % FUNCS;
}

/*
 * Ask the driver, with info, for f's parameter sizes into e (not yet
 * published): their number, 0 for a function it cannot describe (or with
 * none), -1 for more parameters than are hashed.
 */
static int describe_with(param_info_fn info, struct func *e, void *f)
{
	size_t off, size, i;

	if (!info)
		return 0;
	for (i = 0; i < MAX_PARAMS; i++) {
		/* past the last parameter the driver answers CUDA_ERROR_INVALID_VALUE */
		if (info(f, i, &off, &size) != CUDA_SUCCESS)
			break;
		if (size > UINT16_MAX)
			return -1;
		e->size[i] = (uint16_t)size;
	}
	return i < MAX_PARAMS ? (int)i : -1;
}

/*
 * f's parameter sizes into e; n stays 0 (unknown) when the driver cannot
 * describe f.  f may be a CUkernel (CUDA 12's launch APIs take one where a
 * CUfunction goes): asked as one when the driver knows no such function.
 */
static void describe(struct func *e, void *f)
{
	int n = describe_with(func_info, e, f);

	if (!n)
		n = describe_with(kernel_info, e, f);
	e->n = n > 0 ? (uint16_t)n : 0;
}

/* f's entry, described on first sight; NULL when the table is full. */
static const struct func *lookup(void *f)
{
	size_t h = func_slot(f), k;
	struct func *e;

	for (k = 0; k < FUNCS; k++) {
		e = &funcs[(h + k) % FUNCS];
		void *have = __atomic_load_n(&e->func, __ATOMIC_ACQUIRE);

		if (have == f)
			return e;
		if (!have)
			break;
	}
	if (k == FUNCS)
		return NULL;
	pthread_mutex_lock(&funcs_lock);
	for (k = 0; k < FUNCS; k++) {
		e = &funcs[(h + k) % FUNCS];
		if (e->func == f || !e->func)
			break;
	}
	if (k < FUNCS && !e->func) {
		describe(e, f);
		__atomic_store_n(&e->func, f, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&funcs_lock);
	return k < FUNCS ? e : NULL;
}

/*
 * Mix n bytes into h, eight at a time (a kernel's arguments can be
 * hundreds of bytes, on the program's launch path), the tail with its
 * length.
 */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t w;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 32;
	}
	if (n) {
		w = (uint64_t)n << 56;
		memcpy(&w, b, n);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 32;
	}
	return h;
}

static uint32_t fold(uint64_t h)
{
	uint32_t x = (uint32_t)(h ^ h >> 32);

	return x ? x : 1;
}

uint32_t launch_args_hash(void *func, void **params, void **extra)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const struct func *e;

	if (extra) {
		void *buf = NULL;
		size_t *size = NULL;

		for (size_t i = 0; i < 8 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = extra[i + 1];
		}
		return buf && size ? fold(mix(h, buf, *size)) : 0;
	}
	if (!params || !func)
		return 0;
	launch_args_init();
	if ((!func_info && !kernel_info) || !(e = lookup(func)) || !e->n)
		return 0;
	for (uint16_t i = 0; i < e->n; i++)
		h = mix(h, params[i], e->size[i]);
	return fold(h);
}

void launch_args_put(uint32_t corr, uint32_t hash)
{
	if (hash)
		__atomic_store_n(&slots[corr % SLOTS], (uint64_t)corr << 32 | hash,
				 __ATOMIC_RELAXED);
}

uint32_t launch_args_get(uint32_t corr)
{
	uint64_t v = __atomic_load_n(&slots[corr % SLOTS], __ATOMIC_RELAXED);

	return v >> 32 == corr ? (uint32_t)v : 0;
}
