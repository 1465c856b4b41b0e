// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for launch argument hashes (cupti/launch_args.c) without a
 * driver: arguments in one buffer (CU_LAUNCH_PARAM_BUFFER_*), hashed by
 * their bytes; kernelParams, which need the driver's parameter sizes,
 * unknown (0) when no libcuda is loaded; the correlation table keeping the
 * newest call of each slot.  Hashes through the driver are tested end to
 * end (t0525, both backends).
 */
#include <stdint.h>
#include <string.h>
#include <cuda.h>
#include "launch_args.h"
#include "tap.h"

static uint32_t buffer_hash(const void *buf, size_t size)
{
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)buf,
			  CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END };

	return launch_args_hash(NULL, NULL, extra);
}

static void buffers(void)
{
	uint64_t a[3] = { 0x7f0000100000, 0x7f0000200000, 42 }, b[3];
	void *no_size[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, a, CU_LAUNCH_PARAM_END };
	uint32_t h = buffer_hash(a, sizeof(a));

	memcpy(b, a, sizeof(a));
	ok(h != 0, "a buffer of arguments has a hash");
	is_int(buffer_hash(b, sizeof(b)), h, "the same bytes elsewhere: the same hash");
	b[2] = 43;
	ok(buffer_hash(b, sizeof(b)) != h, "one argument changed: another hash");
	ok(buffer_hash(a, 16) != h, "fewer bytes: another hash");
	is_int(launch_args_hash(NULL, NULL, no_size), 0, "a buffer without its size: unknown");
}

static void params_without_driver(void)
{
	uint32_t us = 10;
	void *params[] = { &us };
	int f;

	is_int(launch_args_hash(&f, params, NULL), 0, "kernelParams with no driver to describe them: unknown");
	is_int(launch_args_hash(&f, NULL, NULL), 0, "no arguments given: unknown");
}

static void table(void)
{
	is_int(launch_args_get(7), 0, "a call never kept: 0");
	launch_args_put(7, 0x1234);
	is_int(launch_args_get(7), 0x1234, "a call's hash comes back");
	launch_args_put(7 + (1u << 16), 0x5678);
	is_int(launch_args_get(7), 0, "overwritten by a call 65536 later: 0, not the newer's");
	is_int(launch_args_get(7 + (1u << 16)), 0x5678, "the newer call's hash");
	launch_args_put(9, 0);
	is_int(launch_args_get(9), 0, "an unknown hash is not kept");
}

int main(void)
{
	buffers();
	params_without_driver();
	table();
	return done_testing();
}
