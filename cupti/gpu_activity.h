/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU activity records: what the injection library (libgpubpf_cupti.so)
 * hands to gpubpf through its batch marker, concatenated in batches of at
 * most GA_BATCH_MAX bytes.  Each record starts with struct ga_hdr; size is
 * the whole record, a multiple of 8.  Timestamps are CLOCK_MONOTONIC ns, the
 * clock of the host events.  Plain fixed-width types: the collector decodes
 * them (user/record/collector.c) and treats an unknown type as an error.
 */
#ifndef GPUBPF_GPU_ACTIVITY_H
#define GPUBPF_GPU_ACTIVITY_H

#include <stdint.h>

#define GA_BATCH_MAX 8192
#define GA_NAME_MAX 1024        /* kernel names are cut to this, NUL included */

enum ga_type {
	GA_KERNEL = 1,
	GA_MEMCPY,
	GA_MEMSET,
	GA_SYNC,
	GA_MEMORY,
	GA_NAME,                /* a kernel name, sent once before its first use */
	GA_DROPPED,             /* records the library or CUPTI lost */
	GA_ERROR,               /* the library went dormant: a message */
	GA_WINDOW,              /* collection started: earlier work is never reported */
};

struct ga_hdr {
	uint16_t type;          /* enum ga_type */
	uint16_t size;          /* bytes, this header included, multiple of 8 */
	uint32_t correlation;   /* the driver call that caused it; 0: none */
};

/* Where work ran. */
struct ga_where {
	uint32_t device;
	uint32_t context;
	uint32_t stream;        /* the driver's stream id, unique in a context */
	uint32_t pad;
};

struct ga_kernel {
	struct ga_hdr h;
	struct ga_where w;
	uint64_t start, end;
	uint32_t name_id;       /* from a GA_NAME record */
	uint32_t grid[3], block[3];
	uint32_t registers;
	uint32_t static_shmem, dynamic_shmem;
	uint64_t graph_node;    /* 0: not launched from a graph */
	uint32_t graph_id;
	uint32_t args;          /* hash of its launch's arguments (launch_args.h), 0 unknown */
};

/* ga_memcpy.kind, as CUpti_ActivityMemcpyKind */
enum ga_copy_kind {
	GA_COPY_UNKNOWN = 0, GA_COPY_HTOD = 1, GA_COPY_DTOH = 2, GA_COPY_HTOA = 3,
	GA_COPY_ATOH = 4, GA_COPY_ATOA = 5, GA_COPY_ATOD = 6, GA_COPY_DTOA = 7,
	GA_COPY_DTOD = 8, GA_COPY_HTOH = 9, GA_COPY_PTOP = 10,
};

struct ga_memcpy {
	struct ga_hdr h;
	struct ga_where w;
	uint64_t start, end;
	uint64_t bytes;
	uint32_t kind;          /* enum ga_copy_kind */
	uint32_t dst_device;    /* peer copies */
	uint64_t graph_node;
};

struct ga_memset {
	struct ga_hdr h;
	struct ga_where w;
	uint64_t start, end;
	uint64_t bytes;
	uint32_t value;
	uint32_t pad;
	uint64_t graph_node;
};

/* ga_sync.kind, as CUpti_ActivitySynchronizationType */
enum ga_sync_kind {
	GA_SYNC_UNKNOWN = 0, GA_SYNC_EVENT = 1, GA_SYNC_STREAM_WAIT_EVENT = 2,
	GA_SYNC_STREAM = 3, GA_SYNC_CONTEXT = 4,
};

struct ga_sync {
	struct ga_hdr h;
	struct ga_where w;
	uint64_t start, end;
	uint32_t kind;          /* enum ga_sync_kind */
	uint32_t pad;
	uint64_t event;
};

struct ga_memory {
	struct ga_hdr h;
	struct ga_where w;
	uint64_t ts;
	uint64_t address;
	uint64_t bytes;
	uint32_t op;            /* 1 allocation, 2 release */
	uint32_t memory_kind;   /* CUpti_ActivityMemoryKind */
};

struct ga_name {
	struct ga_hdr h;        /* correlation unused */
	uint32_t id;
	uint32_t pad;
	char name[];            /* NUL-terminated, padded to 8 */
};

struct ga_dropped {
	struct ga_hdr h;
	uint64_t records;       /* lost since the last GA_DROPPED */
};

struct ga_error {
	struct ga_hdr h;
	char message[];         /* NUL-terminated, padded to 8 */
};

/*
 * The library started collecting (a recorder attached and the backend was
 * enabled) at ts: work launched before it is not reported (CUPTI cannot
 * see it), so launches before ts have no GPU record by design.
 */
struct ga_window {
	struct ga_hdr h;
	uint64_t ts;
};

/* Records are whole 8-byte words: publish.c drops any other size. */
_Static_assert(sizeof(struct ga_kernel) % 8 == 0 && sizeof(struct ga_memcpy) % 8 == 0 &&
	       sizeof(struct ga_memset) % 8 == 0 && sizeof(struct ga_sync) % 8 == 0 &&
	       sizeof(struct ga_memory) % 8 == 0 && sizeof(struct ga_name) % 8 == 0 &&
	       sizeof(struct ga_dropped) % 8 == 0 && sizeof(struct ga_error) % 8 == 0 &&
	       sizeof(struct ga_window) % 8 == 0, "GPU activity records are multiples of 8 bytes");
_Static_assert(GA_BATCH_MAX % 8 == 0 && GA_BATCH_MAX <= UINT16_MAX,
	       "a record as long as a batch fits ga_hdr.size");

#endif
