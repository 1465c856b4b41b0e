// SPDX-License-Identifier: BSD-2-Clause
/*
 * CUPTI 12's records, laid out by its own headers (fill12.c), against the
 * converter built with CUDA 13.0's (cupti/cupti_convert.c): each must
 * convert to the very bytes of the same values in 13.0's struct versions.
 * With a libcupti.so.12 as argument, also its cuptiGetVersion(): the
 * headers' API version, of CUPTI major 12 to gpubpf (cupti_api_major).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cupti.h>

#include "cupti_convert.h"
#include "cupti_fill.h"
#include "cupti_pick.h"
#include "fill12.h"
#include "tap.h"

static uint8_t buf12[4096] __attribute__((aligned(8)));

/* Name ids from 100 on, the same for the same name. */
static char names[4][256];
static unsigned n_names;

static uint32_t name_id(const char *name, void *arg)
{
	unsigned i;

	(void)arg;
	for (i = 0; i < n_names; i++)
		if (!strcmp(names[i], name))
			return 100 + i;
	if (n_names == 4)
		return 0;
	snprintf(names[n_names], sizeof(names[0]), "%s", name);
	return 100 + n_names++;
}

static void test_records(void)
{
	size_t sizes13[CUPTI12_RECORDS] = {
		sizeof(CUpti_ActivityKernel10), sizeof(CUpti_ActivityMemcpy6),
		sizeof(CUpti_ActivityMemcpyPtoP4), sizeof(CUpti_ActivityMemset4),
		sizeof(CUpti_ActivitySynchronization2), sizeof(CUpti_ActivityMemory4),
	};
	size_t sizes12[CUPTI12_RECORDS], at12 = 0, at13 = 0;
	struct cupti_conv c13, c12;
	unsigned i;

	ok(cupti12_fill(buf12, sizeof(buf12), sizes12) > 0, "the CUPTI 12 records fit");
	fill_used = 0;
	FILL_FIRST(CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4,
		   CUpti_ActivityMemset4, CUpti_ActivitySynchronization2, CUpti_ActivityMemory4);
	cupti_conv_init(&c13, name_id, NULL);
	cupti_conv_init(&c12, name_id, NULL);
	for (i = 0; i < CUPTI12_RECORDS; i++) {
		union ga_record r13, r12;
		int n13 = cupti_convert(&c13, (const CUpti_Activity *)(fill_buf + at13), &r13);
		int n12 = cupti_convert(&c12, (const CUpti_Activity *)(buf12 + at12), &r12);

		ok(n13 > 0 && n12 == n13 && !memcmp(&r12, &r13, sizeof(r12)),
		   "%s (%zu bytes) converts as 13.0's (%d bytes converted)", cupti12_types[i],
		   sizes12[i], n12);
		if (i == 0) {
			is_int(r12.kernel.start, 1000000001ull, "kernel: its start read");
			is_int(r12.kernel.grid[0], 65535, "kernel: its grid read");
			is_int(r12.kernel.name_id, 100, "kernel: its name interned");
		}
		at12 += sizes12[i];
		at13 += sizes13[i];
	}
	is_str(names[0], KERNEL_NAME, "the kernel's name, read through the CUPTI 12 record");
	is_int(c12.skipped, 0, "no CUPTI 12 record skipped");
}

static void test_version(const char *lib)
{
	CUptiResult (*get)(uint32_t *);
	uint32_t v = 0;
	void *h;

	ok(cupti_api_major(cupti12_header_version()) == 12,
	   "the headers' CUPTI_API_VERSION %u is CUPTI 12's", cupti12_header_version());
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	ok(h != NULL, "%s loads (%s)", lib, h ? "ok" : dlerror());
	get = h ? (CUptiResult (*)(uint32_t *))dlsym(h, "cuptiGetVersion") : NULL;
	ok(get && get(&v) == CUPTI_SUCCESS, "its cuptiGetVersion() answers without a GPU");
	is_int(v, cupti12_header_version(), "the library's API version is its headers'");
	is_int(cupti_api_major(v), 12, "and gpubpf takes it for CUPTI 12");
}

int main(int argc, char **argv)
{
	test_records();
	if (argc > 1)
		test_version(argv[1]);
	return done_testing();
}
