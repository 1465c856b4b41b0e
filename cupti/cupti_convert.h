/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUPTI activity records (CUPTI 12 and 13 layouts) to gpu_activity.h records.
 * Pure: no libcupti calls, no publishing, so the unit test can feed it
 * records from hand-filled buffers.  Needs -I$(CUDA_HOME)/include.
 *
 * Converted kinds and the structs read:
 *	KERNEL, CONCURRENT_KERNEL  CUpti_ActivityKernel10        -> ga_kernel
 *	MEMCPY                     CUpti_ActivityMemcpy6         -> ga_memcpy
 *	MEMCPY2 (peer)             CUpti_ActivityMemcpyPtoP4     -> ga_memcpy
 *	MEMSET                     CUpti_ActivityMemset4         -> ga_memset
 *	SYNCHRONIZATION            CUpti_ActivitySynchronization2 -> ga_sync
 *	MEMORY2                    CUpti_ActivityMemory4         -> ga_memory
 * Other kinds are skipped and counted.  CUPTI 12's versions of these
 * structs (Kernel8/9, Memcpy5, Synchronization, Memory3) hold every field
 * read at the same offset: cupti_convert.c checks it at compile time.
 */
#ifndef GPUBPF_CUPTI_CONVERT_H
#define GPUBPF_CUPTI_CONVERT_H

#include <stdint.h>
#include <cupti.h>
#include "gpu_activity.h"

/*
 * ga_where.device of a sync record whose context has not been seen in a
 * record that names its device (CUPTI sync records carry no device id).
 */
#define CUPTI_DEVICE_UNKNOWN UINT32_MAX

/* How many contexts the context -> device map remembers. */
#define CUPTI_CONV_CONTEXTS 64

/* Any one converted record. */
union ga_record {
	struct ga_hdr h;
	struct ga_kernel kernel;
	struct ga_memcpy memcpy;
	struct ga_memset memset;
	struct ga_sync sync;
	struct ga_memory memory;
};

/* The id of a kernel name (publish_name() in the library); name never NULL. */
typedef uint32_t (*cupti_name_fn)(const char *name, void *arg);

/* Conversion state; not thread-safe: one converter per buffer reader. */
struct cupti_conv {
	cupti_name_fn name;
	void *name_arg;
	uint64_t skipped;       /* records of kinds not converted */
	/* context -> device, learned from the records that carry both */
	struct {
		uint32_t context, device;
	} ctx_dev[CUPTI_CONV_CONTEXTS];
	unsigned n_ctx;
	/*
	 * CUPTI's clock minus CLOCK_MONOTONIC: 0 when CUPTI takes its
	 * timestamps from our callback, else (CUPTI's own CLOCK_REALTIME) the
	 * offset measured when collection started.
	 */
	int64_t clock_offset_ns;
};

void cupti_conv_init(struct cupti_conv *c, cupti_name_fn name, void *name_arg);

/*
 * Convert one record into *out (padding zeroed).  Returns the size of the
 * converted record (out->h.size), 0 for a kind that is not converted (and
 * counted in c->skipped), -EINVAL for a NULL argument.
 */
int cupti_convert(struct cupti_conv *c, const CUpti_Activity *rec,
		  union ga_record *out);

#endif
