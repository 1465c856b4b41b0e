// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for the choice of libcupti (cupti/cupti_pick.c): exact
 * candidate lists for CUDA 12 and 13 drivers, wheels in site-packages and
 * dist-packages, an unknown driver and one too old; and the CUPTI major of
 * cuptiGetVersion()'s API versions.
 */
#include <stdio.h>
#include <string.h>
#include "cupti_pick.h"
#include "tap.h"

static void is_list(const struct cupti_pick *p, const char *const *want, unsigned n,
		    const char *what)
{
	unsigned i;

	is_int(p->n, n, "%s: %u candidates", what, n);
	for (i = 0; i < n && i < p->n; i++)
		is_str(p->path[i], want[i], "%s: candidate %u", what, i);
}

/* A CUDA 12 PyTorch job: its wheel's CUPTI 12 first, never CUPTI 13. */
static void cuda12_wheel(void)
{
	const char *objs[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
		"/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12",
		"/lib/x86_64-linux-gnu/libcuda.so.1",
	};
	const char *want[] = {
		"/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
		"libcupti.so.12",
		"/opt/cuda/extras/CUPTI/lib64/libcupti.so.12",
		"/opt/cuda/lib64/libcupti.so.12",
	};
	struct cupti_pick p;

	cupti_pick(&p, 12, objs, 4, "/opt/cuda");
	is_list(&p, want, 4, "driver 12, cu12 wheel");
	is_int(p.majors[0], 12, "driver 12: CUPTI 12 tried");
	is_int(p.majors[1], 0, "driver 12: CUPTI 13 (newer than the driver) never");
}

/* A CUDA 13 driver: 13's copies (wheel layout nvidia/cu13) first, then 12's. */
static void cuda13_driver(void)
{
	const char *objs[] = {
		"/usr/lib/python3/dist-packages/cupy/_core/core.so",
		"/home/u/.local/lib/python3.11/site-packages/nvidia/cu13/lib/libcudart.so.13",
	};
	const char *want[] = {
		"/usr/lib/python3/dist-packages/nvidia/cu13/lib/libcupti.so.13",
		"/home/u/.local/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13",
		"libcupti.so.13",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
		"/usr/local/cuda/lib64/libcupti.so.13",
		"/usr/lib/python3/dist-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
		"/home/u/.local/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
		"libcupti.so.12",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12",
		"/usr/local/cuda/lib64/libcupti.so.12",
	};
	struct cupti_pick p;

	cupti_pick(&p, 13, objs, 2, "");
	is_list(&p, want, 10, "driver 13, two package dirs, default CUDA_HOME");
	is_int(p.majors[0] * 100 + p.majors[1], 1312, "driver 13: CUPTI 13 then 12");
}

static void other_drivers(void)
{
	const char *objs[] = { "/venv/site-packages/a.so", "/venv/site-packages/b.so", NULL };
	struct cupti_pick p;

	cupti_pick(&p, 0, objs, 3, NULL);
	is_int(p.n, 8, "unknown driver: 13's then 12's, one wheel dir named once");
	is_str(p.path[0], "/venv/site-packages/nvidia/cu13/lib/libcupti.so.13",
	       "unknown driver: the wheel's 13 first");
	is_str(p.path[4], "/venv/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
	       "unknown driver: then the wheel's 12");
	cupti_pick(&p, 14, NULL, 0, "/c");
	is_int(p.majors[0] * 100 + p.majors[1], 1312, "driver 14: the newest CUPTI read");
	is_int(p.n, 6, "driver 14: no objects, 6 candidates");
	cupti_pick(&p, 11, objs, 2, "/c");
	is_int(p.n, 0, "driver 11: nothing (too old for CUPTI 12)");
	is_int(p.majors[0], 0, "driver 11: no major");
}

static void long_paths(void)
{
	static char longdir[PATH_MAX + 64];
	const char *objs[] = { longdir };
	struct cupti_pick p;

	memset(longdir, 'x', sizeof(longdir) - 1);
	memcpy(longdir, "/a/site-packages/", 17);
	memcpy(longdir + PATH_MAX - 40, "/site-packages/t.so", 20);
	cupti_pick(&p, 12, objs, 1, "/c");
	is_str(p.path[0], "/a/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
	       "the first site-packages of a path is the one used");
	memcpy(longdir, "/aaaaaaaaaaaaaaaa", 17);
	cupti_pick(&p, 12, objs, 1, "/c");
	is_int(p.n, 3, "a wheel path past PATH_MAX is left out, the rest kept");
	is_str(p.path[0], "libcupti.so.12", "then the loader's name first");
}

static void api_majors(void)
{
	is_int(cupti_api_major(18), 0, "API 18 (CUDA 11.8): not read");
	is_int(cupti_api_major(19), 12, "API 19: CUDA 12.0");
	is_int(cupti_api_major(24), 12, "API 24: CUDA 12.6");
	is_int(cupti_api_major(28), 12, "API 28: CUDA 12.9 update 1");
	is_int(cupti_api_major(130001), 13, "API 130001: CUDA 13.0 update 1");
	is_int(cupti_api_major(130400), 13, "API 130400: CUDA 13.4");
	is_int(cupti_api_major(140000), 14, "API 140000: CUDA 14");
}

int main(void)
{
	cuda12_wheel();
	cuda13_driver();
	other_drivers();
	long_paths();
	api_majors();
	return done_testing();
}
