/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory in use, from the allocation and free calls: which calls
 * allocate and free device memory, and a tracker mapping each live
 * allocation (address, or VMM handle) to its size.  Pure functions over
 * what they are given: the report feeds it rows of its table, the
 * timeline's counter tracks feed it model events.
 */
#ifndef GPUBPF_MEMORY_H
#define GPUBPF_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include "lib/hashmap.h"

struct model;

enum mem_op {
	MEM_OP_NONE,
	MEM_OP_ALLOC,           /* cuMemAlloc*, async and pool variants, pitch, managed: out ptr */
	MEM_OP_FREE,            /* cuMemFree, cuMemFreeAsync*: ptr */
	MEM_OP_ALLOC_HANDLE,    /* cuMemCreate: physical memory, out handle */
	MEM_OP_FREE_HANDLE,     /* cuMemRelease: handle */
};

/* What the driver call name does to device memory (host allocations:
 * MEM_OP_NONE). */
int mem_call_op(const char *name);

/* One allocation, from alloc to free (t_free < 0: never freed). */
struct mem_block {
	uint64_t key, bytes;
	int64_t t_alloc, t_free;
	uint32_t site;          /* caller's tag: call site or name id */
	uint32_t name;
};

struct mem_tracker {
	struct mem_block *blocks;
	size_t nblocks, cap;
	struct hashmap live;    /* key of a live allocation -> index into blocks */
	uint64_t in_use, peak;
	int64_t peak_ts;
	size_t peak_block;      /* the allocation that reached the peak */
	uint64_t allocs, frees, unknown_frees;
};

void mem_tracker_init(struct mem_tracker *mt);
void mem_tracker_release(struct mem_tracker *mt);
/* A live key allocated again is first freed.  0 or -ENOMEM. */
int mem_tracker_alloc(struct mem_tracker *mt, uint64_t key, uint64_t bytes, int64_t ts,
		      uint32_t site, uint32_t name);
/* Frees of unknown keys (allocated before the trace) are counted only. */
void mem_tracker_free(struct mem_tracker *mt, uint64_t key, int64_t ts);

/* A counter sample: bytes in use on (pid, device) from ts on. */
struct mem_sample {
	uint64_t ts;
	uint32_t pid, device;
	uint64_t bytes;
};

/*
 * CUPTI memory records' kinds (CUpti_ActivityMemoryKind), as the trace
 * names them in args.memory_kind: "device", "pinned", ...  Device memory
 * counts device and managed allocations, and those of no stated kind.
 */
enum {
	MEM_KIND_UNKNOWN = 0,
	MEM_KIND_PINNED = 2,
	MEM_KIND_DEVICE = 3,
	MEM_KIND_MANAGED = 5,
};
const char *mem_kind_name(unsigned kind);
unsigned mem_kind_from_name(const char *name);     /* 0 if unknown */
int mem_kind_is_device(unsigned kind);

/*
 * Device memory in use over time from a finished model, per process and
 * device: from the process's CUPTI memory records (EV_MEMORY, on their
 * device) when it has any, which see every allocation, a library's
 * included; else from its allocation and free calls (on the device of the
 * process's first GPU work, else 0), so no allocation counts twice.  One
 * sample after every sample_rate-th change of each (process, device) total
 * (0 or 1: every change), plus the first, the peak and the last, in time
 * order.  *out is malloc'd (free it).  Returns 0 or -ENOMEM.
 */
int memory_counters(const struct model *m, unsigned sample_rate, struct mem_sample **out,
		    size_t *n);

/*
 * The same over a model finished in parts (model_part.h): the totals,
 * blocks in use and change counts go on from one part to the next; each
 * part's samples are those memory_counters() keeps, the peak and last
 * being those of the part.
 */
struct mem_counting;
struct mem_counting *mem_counting_new(void);       /* NULL when out of memory */
int mem_counting_run(struct mem_counting *mc, const struct model *m, unsigned sample_rate,
		     struct mem_sample **out, size_t *n);
void mem_counting_free(struct mem_counting *mc);

#endif
