// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for memory.c: device memory counters from allocation and
 * free calls, or from CUPTI memory records when a process has them (never
 * both), per process and device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/memory.h"
#include "model/model.h"
#include "model_util.h"
#include "tap.h"

static struct model_event *ev(struct model *m, uint64_t ts, uint64_t dur, uint32_t pid,
			      const char *name)
{
	struct model_event *e = unit_event(m, ts, dur, pid, pid, name);

	e->link = MODEL_NO_LINK;
	return e;
}

static void call(struct model *m, uint64_t ts, uint32_t pid, const char *name, uint64_t ptr,
		 uint64_t bytes, int ret, uint32_t corr)
{
	struct model_event *e = ev(m, ts, 10, pid, name);

	e->kind = EV_API;
	e->fields = MF_PTR | MF_BYTES | MF_RET;
	e->ptr = ptr;
	e->bytes = bytes;
	e->ret = ret;
	e->correlation = corr;
}

/* a CUPTI memory record: op 1 allocation, 2 release */
static void record(struct model *m, uint64_t ts, uint32_t pid, uint32_t device, int op,
		   unsigned kind, uint64_t ptr, uint64_t bytes, uint32_t corr)
{
	struct model_event *e = ev(m, ts, 0, pid, "");

	e->kind = EV_MEMORY;
	e->gpu_kind = op;
	e->copy_kind = kind;
	e->device = device;
	e->ptr = ptr;
	e->bytes = bytes;
	e->correlation = corr;
}

static void kernel(struct model *m, uint64_t ts, uint32_t pid, uint32_t device)
{
	struct model_event *e = ev(m, ts, 5, pid, "");

	e->kind = EV_KERNEL;
	e->device = device;
	e->gpu_stream = 7;
}

/* "pid/device@ts=bytes ..." */
static char *fmt(const struct mem_sample *s, size_t n)
{
	static char buf[1024];
	size_t k = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n && k < sizeof(buf) - 64; i++)
		k += snprintf(buf + k, sizeof(buf) - k, "%s%u/%u@%llu=%llu", i ? " " : "",
			      s[i].pid, s[i].device, (unsigned long long)s[i].ts,
			      (unsigned long long)s[i].bytes);
	return buf;
}

static void test_calls_only(void)
{
	struct model m;
	struct mem_sample *s;
	size_t n;

	model_init(&m);
	call(&m, 100, 1, "cuMemAlloc_v2", 0xa000, 100, 0, 0);
	call(&m, 200, 1, "cuMemAlloc_v2", 0xb000, 50, 0, 0);
	call(&m, 250, 1, "cuMemAlloc_v2", 0xc000, 999, 2, 0);      /* failed */
	call(&m, 260, 1, "cuMemAllocHost_v2", 0xd000, 777, 0, 0);  /* host memory */
	call(&m, 300, 1, "cuMemFree_v2", 0xa000, 0, 0, 0);
	call(&m, 310, 1, "cuMemFree_v2", 0xe000, 0, 0, 0);         /* allocated before */
	kernel(&m, 400, 1, 2);
	model_finish(&m);
	is_int(memory_counters(&m, 0, &s, &n), 0, "calls: counters");
	is_str(fmt(s, n), "1/2@110=100 1/2@210=150 1/2@300=50",
	       "calls: in use from each allocation's return, on the device of the GPU work");
	free(s);
	model_release(&m);
}

static void test_records(void)
{
	struct model m;
	struct mem_sample *s;
	size_t n;

	model_init(&m);
	/* process 2: the call and its record are one allocation, counted once */
	call(&m, 100, 2, "cuMemAlloc_v2", 0xa000, 100, 0, 11);
	record(&m, 105, 2, 1, 1, MEM_KIND_DEVICE, 0xa000, 100, 11);
	/* a library's allocation no call of ours saw */
	record(&m, 200, 2, 1, 1, MEM_KIND_DEVICE, 0xc000, 300, 12);
	/* pinned host memory is not device memory */
	record(&m, 250, 2, 1, 1, MEM_KIND_PINNED, 0xd000, 5000, 13);
	record(&m, 260, 2, 1, 1, MEM_KIND_MANAGED, 0xf000, 20, 14);
	/* another device: its own series */
	record(&m, 270, 2, 0, 1, MEM_KIND_DEVICE, 0x9000, 7, 15);
	call(&m, 290, 2, "cuMemFree_v2", 0xa000, 0, 0, 16);
	record(&m, 300, 2, 1, 2, MEM_KIND_DEVICE, 0xa000, 100, 16);
	record(&m, 310, 2, 1, 2, MEM_KIND_PINNED, 0xd000, 5000, 17);
	kernel(&m, 400, 2, 0);
	/* process 3 has no records: its calls count */
	call(&m, 150, 3, "cuMemAlloc_v2", 0xa000, 64, 0, 0);
	model_finish(&m);
	is_int(memory_counters(&m, 0, &s, &n), 0, "records: counters");
	is_str(fmt(s, n), "2/1@105=100 3/0@160=64 2/1@200=400 2/1@260=420 2/0@270=7 2/1@300=320",
	       "records: from CUPTI when a process has them, per device, device and managed only; "
	       "calls otherwise");
	free(s);
	/* sampling keeps every rate-th change, the peak and the last of each series */
	is_int(memory_counters(&m, 2, &s, &n), 0, "records: sampled counters");
	is_str(fmt(s, n), "2/1@105=100 3/0@160=64 2/1@260=420 2/0@270=7 2/1@300=320",
	       "records: sampled every 2nd change, peak and last kept");
	free(s);
	model_release(&m);
}

int main(void)
{
	ok(mem_kind_is_device(MEM_KIND_DEVICE) && mem_kind_is_device(MEM_KIND_MANAGED) &&
	   !mem_kind_is_device(MEM_KIND_PINNED), "device and managed memory count, pinned not");
	is_str(mem_kind_name(MEM_KIND_PINNED), "pinned", "kind names");
	is_int(mem_kind_from_name("managed"), MEM_KIND_MANAGED, "kind from its name");
	test_calls_only();
	test_records();
	return done_testing();
}
