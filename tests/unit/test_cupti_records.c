// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for the CUPTI record conversion (cupti/cupti_convert.c): an
 * activity buffer filled by hand with CUDA 13.0 records, one after the
 * other as CUPTI lays them out, read back with libcupti's own iterator
 * (which works without a GPU or driver) and converted field by field; then
 * the same values in CUPTI 12's record versions.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cupti.h>

#include "cupti_convert.h"
#include "cupti_fill.h"
#include "tap.h"


/* The name callback: ids from 100 on, and what it was asked. */
static char names_seen[4][256];
static int n_names;

static uint32_t name_id(const char *name, void *arg)
{
	int *calls = arg;

	(*calls)++;
	if (n_names < 4)
		snprintf(names_seen[n_names], sizeof(names_seen[0]), "%s", name);
	return 100 + n_names++;
}

static void fill(void)
{
	CUpti_ActivityKernel10 *k;
	CUpti_ActivitySynchronization2 *y;
	CUpti_ActivityMemory4 *mem;
	CUpti_ActivityAPI *api;

	FILL_FIRST(CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4,
		   CUpti_ActivityMemset4, CUpti_ActivitySynchronization2, CUpti_ActivityMemory4);

	mem = add(CUPTI_ACTIVITY_KIND_MEMORY2, sizeof(*mem));
	mem->memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	mem->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	mem->correlationId = 4248;
	mem->address = 0x7f0000200000ull;
	mem->bytes = 2ull << 30;
	mem->timestamp = 6000000999ull;
	mem->deviceId = 1;
	mem->contextId = 7;
	mem->streamId = 13;

	/* a kind libcupti knows but the converter does not: skipped */
	api = add(CUPTI_ACTIVITY_KIND_DRIVER, sizeof(*api));
	api->cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	api->start = 900;
	api->end = 950;
	api->correlationId = 4242;

	/* an event sync in a context no record named a device for */
	y = add(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, sizeof(*y));
	y->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
	y->start = 7000000000ull;
	y->end = 7000000100ull;
	y->correlationId = 4249;
	y->contextId = 8;
	y->streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	y->cudaEventId = 31;

	/* a graph kernel with no name, of the serialising KERNEL kind */
	k = add(CUPTI_ACTIVITY_KIND_KERNEL, sizeof(*k));
	k->start = 8000000000ull;
	k->end = 8000000010ull;
	k->deviceId = 0;
	k->contextId = 1;
	k->streamId = 7;
	k->correlationId = 4250;
	k->gridX = k->gridY = k->gridZ = 1;
	k->blockX = k->blockY = k->blockZ = 32;
	k->registersPerThread = 8;
	k->name = NULL;
	k->graphNodeId = 0x0000000100000002ull;
	k->graphId = 12;
}

#define N_RECS 10

static union ga_record out[N_RECS];
static int ret[N_RECS];
static CUpti_ActivityKind seen_kind[N_RECS];

static void test_iterate(struct cupti_conv *c)
{
	CUpti_Activity *rec = NULL;
	CUptiResult st;
	int n = 0;

	while ((st = cuptiActivityGetNextRecord(fill_buf, fill_used, &rec)) == CUPTI_SUCCESS) {
		if (n < N_RECS) {
			seen_kind[n] = rec->kind;
			/* garbage first: the converter must clear what it leaves */
			memset(&out[n], 0xa5, sizeof(out[n]));
			ret[n] = cupti_convert(c, rec, &out[n]);
		}
		n++;
	}
	is_int(st, CUPTI_ERROR_MAX_LIMIT_REACHED, "iterator ends at the end of the buffer");
	is_int(n, N_RECS, "iterator returns every record");
	is_int(seen_kind[0], CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "first kind");
	is_int(seen_kind[7], CUPTI_ACTIVITY_KIND_DRIVER, "eighth kind");
	is_int(seen_kind[9], CUPTI_ACTIVITY_KIND_KERNEL, "last kind");
}

static void test_kernel(void)
{
	const struct ga_kernel *k = &out[0].kernel;

	is_int(ret[0], sizeof(struct ga_kernel), "kernel: converted, size returned");
	is_int(k->h.type, GA_KERNEL, "kernel: type");
	is_int(k->h.size, sizeof(*k), "kernel: size");
	is_int(k->h.correlation, 4242, "kernel: correlation");
	is_int(k->w.device, 1, "kernel: device");
	is_int(k->w.context, 7, "kernel: context");
	is_int(k->w.stream, 13, "kernel: stream");
	is_int(k->w.pad, 0, "kernel: where padding zeroed");
	is_int(k->start, 1000000001ull, "kernel: start");
	is_int(k->end, 1000005002ull, "kernel: end");
	is_int(k->name_id, 100, "kernel: name id from the name callback");
	is_int(k->grid[0], 65535, "kernel: grid x");
	is_int(k->grid[1], 3, "kernel: grid y");
	is_int(k->grid[2], 2, "kernel: grid z");
	is_int(k->block[0], 256, "kernel: block x");
	is_int(k->block[1], 4, "kernel: block y");
	is_int(k->block[2], 1, "kernel: block z");
	is_int(k->registers, 168, "kernel: registers");
	is_int(k->static_shmem, 49152, "kernel: static shared memory");
	is_int(k->dynamic_shmem, 65536, "kernel: dynamic shared memory");
	is_int(k->graph_node, 0, "kernel: no graph node");
	is_int(k->graph_id, 0, "kernel: no graph");
	is_int(k->args, 0, "kernel: no argument hash (the library adds it, not the conversion)");
}

static void test_memcpy(void)
{
	const struct ga_memcpy *m = &out[1].memcpy;

	is_int(ret[1], sizeof(struct ga_memcpy), "memcpy: converted");
	is_int(m->h.type, GA_MEMCPY, "memcpy: type");
	is_int(m->h.size, sizeof(*m), "memcpy: size");
	is_int(m->h.correlation, 4243, "memcpy: correlation");
	is_int(m->w.device, 1, "memcpy: device");
	is_int(m->w.context, 7, "memcpy: context");
	is_int(m->w.stream, 14, "memcpy: stream");
	is_int(m->start, 2000000000ull, "memcpy: start");
	is_int(m->end, 2000400000ull, "memcpy: end");
	is_int(m->bytes, 3ull << 30, "memcpy: bytes past 32 bits");
	is_int(m->kind, GA_COPY_HTOD, "memcpy: kind HtoD");
	is_int(m->dst_device, 1, "memcpy: dst device is the copying device");
	is_int(m->graph_node, 0x1122334455667788ull, "memcpy: graph node");
}

static void test_peer(void)
{
	const struct ga_memcpy *m = &out[2].memcpy;

	is_int(ret[2], sizeof(struct ga_memcpy), "peer: converted");
	is_int(m->h.type, GA_MEMCPY, "peer: type");
	is_int(m->h.size, sizeof(*m), "peer: size");
	is_int(m->h.correlation, 4244, "peer: correlation");
	is_int(m->w.device, 2, "peer: device");
	is_int(m->w.context, 9, "peer: context");
	is_int(m->w.stream, 21, "peer: stream");
	is_int(m->start, 3000000000ull, "peer: start");
	is_int(m->end, 3000100000ull, "peer: end");
	is_int(m->bytes, 1ull << 26, "peer: bytes");
	is_int(m->kind, GA_COPY_PTOP, "peer: kind PtoP");
	is_int(m->dst_device, 3, "peer: dst device");
	is_int(m->graph_node, 5, "peer: graph node");
}

static void test_memset(void)
{
	const struct ga_memset *s = &out[3].memset;

	is_int(ret[3], sizeof(struct ga_memset), "memset: converted");
	is_int(s->h.type, GA_MEMSET, "memset: type");
	is_int(s->h.size, sizeof(*s), "memset: size");
	is_int(s->h.correlation, 4245, "memset: correlation");
	is_int(s->w.device, 1, "memset: device");
	is_int(s->w.context, 7, "memset: context");
	is_int(s->w.stream, 15, "memset: stream");
	is_int(s->start, 4000000000ull, "memset: start");
	is_int(s->end, 4000000500ull, "memset: end");
	is_int(s->bytes, 4096, "memset: bytes");
	is_int(s->value, 0xdeadbeef, "memset: value");
	is_int(s->pad, 0, "memset: padding zeroed");
	is_int(s->graph_node, 6, "memset: graph node");
}

static void test_sync(void)
{
	const struct ga_sync *y = &out[4].sync;

	is_int(ret[4], sizeof(struct ga_sync), "sync: converted");
	is_int(y->h.type, GA_SYNC, "sync: type");
	is_int(y->h.size, sizeof(*y), "sync: size");
	is_int(y->h.correlation, 4246, "sync: correlation");
	is_int(y->w.device, 1, "sync: device from an earlier record of its context");
	is_int(y->w.context, 7, "sync: context");
	is_int(y->w.stream, 13, "sync: stream");
	is_int(y->start, 5000000000ull, "sync: start");
	is_int(y->end, 5000700000ull, "sync: end");
	is_int(y->kind, GA_SYNC_STREAM, "sync: kind stream");
	is_int(y->event, 0xffffffffull, "sync: no event");
	is_int(y->pad, 0, "sync: padding zeroed");

	y = &out[8].sync;
	is_int(ret[8], sizeof(struct ga_sync), "event sync: converted");
	is_int(y->h.correlation, 4249, "event sync: correlation");
	is_int(y->w.device, CUPTI_DEVICE_UNKNOWN, "event sync: unknown context, unknown device");
	is_int(y->w.context, 8, "event sync: context");
	is_int(y->w.stream, 0xffffffffu, "event sync: no stream");
	is_int(y->start, 7000000000ull, "event sync: start");
	is_int(y->end, 7000000100ull, "event sync: end");
	is_int(y->kind, GA_SYNC_EVENT, "event sync: kind event");
	is_int(y->event, 31, "event sync: event id");
}

static void test_memory(void)
{
	const struct ga_memory *a = &out[5].memory, *f = &out[6].memory;

	is_int(ret[5], sizeof(struct ga_memory), "alloc: converted");
	is_int(a->h.type, GA_MEMORY, "alloc: type");
	is_int(a->h.size, sizeof(*a), "alloc: size");
	is_int(a->h.correlation, 4247, "alloc: correlation");
	is_int(a->w.device, 1, "alloc: device");
	is_int(a->w.context, 7, "alloc: context");
	is_int(a->w.stream, 13, "alloc: stream");
	is_int(a->ts, 6000000000ull, "alloc: timestamp");
	is_int(a->address, 0x7f0000200000ull, "alloc: address");
	is_int(a->bytes, 2ull << 30, "alloc: bytes");
	is_int(a->op, 1, "alloc: op allocation");
	is_int(a->memory_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "alloc: memory kind");

	is_int(ret[6], sizeof(struct ga_memory), "free: converted");
	is_int(f->h.correlation, 4248, "free: correlation");
	is_int(f->ts, 6000000999ull, "free: timestamp");
	is_int(f->address, 0x7f0000200000ull, "free: address");
	is_int(f->bytes, 2ull << 30, "free: bytes");
	is_int(f->op, 2, "free: op release");
}

static void test_skipped_and_graph(const struct cupti_conv *c, int name_calls)
{
	const struct ga_kernel *k = &out[9].kernel;

	is_int(ret[7], 0, "unconverted kind: skipped");
	is_int(c->skipped, 1, "unconverted kind: counted");

	is_int(ret[9], sizeof(struct ga_kernel), "graph kernel: converted");
	is_int(k->h.type, GA_KERNEL, "graph kernel: type");
	is_int(k->h.correlation, 4250, "graph kernel: correlation");
	is_int(k->w.device, 0, "graph kernel: device");
	is_int(k->w.context, 1, "graph kernel: context");
	is_int(k->w.stream, 7, "graph kernel: stream");
	is_int(k->grid[2], 1, "graph kernel: grid z");
	is_int(k->block[0], 32, "graph kernel: block x");
	is_int(k->registers, 8, "graph kernel: registers");
	is_int(k->graph_node, 0x0000000100000002ull, "graph kernel: graph node, 64 bits");
	is_int(k->graph_id, 12, "graph kernel: graph id");
	is_int(k->name_id, 101, "graph kernel: name id");

	is_int(name_calls, 2, "name callback: once per kernel record");
	is_str(names_seen[0], KERNEL_NAME, "name callback: the kernel's name");
	is_str(names_seen[1], "", "name callback: no name as empty string");
}

static void test_sizes(void)
{
	int i;

	for (i = 0; i < N_RECS; i++)
		if (ret[i] > 0)
			ok(out[i].h.size % 8 == 0 && out[i].h.size == ret[i],
			   "record %d: size %d, a multiple of 8", i, ret[i]);
}

static void test_bad_args(struct cupti_conv *c)
{
	union ga_record r;

	is_int(cupti_convert(c, NULL, &r), -EINVAL, "NULL record: -EINVAL");
	is_int(cupti_convert(NULL, (const CUpti_Activity *)fill_buf, &r), -EINVAL,
	       "NULL state: -EINVAL");
	is_int(cupti_convert(c, (const CUpti_Activity *)fill_buf, NULL), -EINVAL,
	       "NULL output: -EINVAL");
}

/* A kind no libcupti knows: the converter skips it, the iterator stops. */
static void test_unknown_kind(struct cupti_conv *c)
{
	CUpti_ActivityAPI bogus __attribute__((aligned(8)));
	CUpti_Activity *rec = NULL;
	union ga_record r;
	uint64_t before = c->skipped;

	memset(&bogus, 0, sizeof(bogus));
	bogus.kind = (CUpti_ActivityKind)0x7777;
	is_int(cupti_convert(c, (const CUpti_Activity *)&bogus, &r), 0, "unknown kind: skipped");
	is_int(c->skipped, before + 1, "unknown kind: counted");
	is_int(cuptiActivityGetNextRecord((uint8_t *)&bogus, sizeof(bogus), &rec),
	       CUPTI_ERROR_INVALID_KIND, "unknown kind: libcupti's iterator stops");
}

static uint32_t name_100(const char *name, void *arg)
{
	(void)name;
	(void)arg;
	return 100;
}

/*
 * CUPTI 12's records (12.6's versions, then the older Kernel8 and
 * Memory3): the same values convert to the very same bytes as CUDA 13.0's
 * (out[0..5]).  libcupti 13's iterator steps by 13.0's sizes, so the
 * records are walked by their own.
 */
#define CHECK_CUPTI12(label, kernel_t, memcpy_t, sync_t, memory_t) do {		\
	const size_t sizes[] = { sizeof(kernel_t), sizeof(memcpy_t),			\
		sizeof(CUpti_ActivityMemcpyPtoP4), sizeof(CUpti_ActivityMemset4),	\
		sizeof(sync_t), sizeof(memory_t) };					\
	struct cupti_conv c12;								\
	size_t at = 0;									\
	unsigned i;									\
											\
	fill_used = 0;									\
	FILL_FIRST(kernel_t, memcpy_t, CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemset4,	\
		   sync_t, memory_t);							\
	cupti_conv_init(&c12, name_100, NULL);						\
	for (i = 0; i < 6; i++) {							\
		union ga_record r;							\
		int n = cupti_convert(&c12, (const CUpti_Activity *)(fill_buf + at), &r);	\
											\
		ok(n == ret[i] && !memcmp(&r, &out[i], sizeof(r)),			\
		   "%s: record %u (kind %d) converts as CUDA 13.0's", label, i,		\
		   (int)((const CUpti_Activity *)(fill_buf + at))->kind);			\
		at += sizes[i];								\
	}										\
} while (0)

static void test_cupti12(void)
{
	CHECK_CUPTI12("CUPTI 12.6", CUpti_ActivityKernel9, CUpti_ActivityMemcpy5,
		      CUpti_ActivitySynchronization, CUpti_ActivityMemory4);
	CHECK_CUPTI12("CUPTI 12.0", CUpti_ActivityKernel8, CUpti_ActivityMemcpy5,
		      CUpti_ActivitySynchronization, CUpti_ActivityMemory3);
}

/* CUPTI's own clock (CLOCK_REALTIME) is moved onto CLOCK_MONOTONIC. */
static void test_clock_offset(void)
{
	CUpti_ActivityKernel10 k __attribute__((aligned(8)));
	CUpti_ActivityMemory4 m __attribute__((aligned(8)));
	struct cupti_conv c;
	union ga_record r;

	cupti_conv_init(&c, name_100, NULL);
	c.clock_offset_ns = 1000000000;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	FILL_KERNEL(&k);
	cupti_convert(&c, (const CUpti_Activity *)&k, &r);
	is_int(r.kernel.start, 1, "clock offset: kernel start moved");
	is_int(r.kernel.end, 5002, "clock offset: kernel end moved");
	k.start = k.end = 0;
	cupti_convert(&c, (const CUpti_Activity *)&k, &r);
	is_int(r.kernel.start + r.kernel.end, 0, "clock offset: unknown (0) times stay 0");
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	FILL_ALLOC(&m);
	cupti_convert(&c, (const CUpti_Activity *)&m, &r);
	is_int(r.memory.ts, 5000000000ull, "clock offset: memory timestamp moved");
}

int main(void)
{
	struct cupti_conv c;
	int name_calls = 0;

	fill();
	cupti_conv_init(&c, name_id, &name_calls);
	test_iterate(&c);
	test_kernel();
	test_memcpy();
	test_peer();
	test_memset();
	test_sync();
	test_memory();
	test_skipped_and_graph(&c, name_calls);
	test_sizes();
	test_bad_args(&c);
	test_unknown_kind(&c);
	test_cupti12();
	test_clock_offset();
	return done_testing();
}
