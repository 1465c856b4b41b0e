// SPDX-License-Identifier: BSD-2-Clause
/*
 * CUPTI activity records to gpu_activity.h records (see cupti_convert.h).
 * Field by field: the CUPTI structs are packed, versioned and grow with
 * each CUDA release, the ga_* records are what the collector decodes.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "cupti_convert.h"

/*
 * One reader for CUPTI 12 and 13: each record version keeps the fields read
 * here where its predecessor had them and appends its new ones.  CUDA
 * 12.6 emits Kernel9, Memcpy5, Synchronization and Memory4 (the versions
 * its header defines) where 13.0 emits Kernel10, Memcpy6, Synchronization2
 * and Memory4 (PtoP4 and Memset4 in both); earlier 12.x releases emit these
 * or older ones (Kernel8, Memory3).  The 13.0 headers still declare the
 * older structs, so the compiler checks every offset read.
 */
#define SAME_AT(a, b, f) _Static_assert(offsetof(a, f) == offsetof(b, f), #a "." #f " moved")
#define KERNEL_FIELDS(X, a, b) X(a, b, start); X(a, b, end); X(a, b, deviceId);		\
	X(a, b, contextId); X(a, b, streamId); X(a, b, correlationId); X(a, b, gridX);	\
	X(a, b, gridY); X(a, b, gridZ); X(a, b, blockX); X(a, b, blockY); X(a, b, blockZ);	\
	X(a, b, registersPerThread); X(a, b, staticSharedMemory);			\
	X(a, b, dynamicSharedMemory); X(a, b, name); X(a, b, graphNodeId); X(a, b, graphId)
#define COPY_FIELDS(X, a, b) X(a, b, copyKind); X(a, b, bytes); X(a, b, start);		\
	X(a, b, end); X(a, b, deviceId); X(a, b, contextId); X(a, b, streamId);		\
	X(a, b, correlationId); X(a, b, graphNodeId)
#define SYNC_FIELDS(X, a, b) X(a, b, type); X(a, b, start); X(a, b, end);		\
	X(a, b, correlationId); X(a, b, contextId); X(a, b, streamId); X(a, b, cudaEventId)
#define MEMORY_FIELDS(X, a, b) X(a, b, memoryOperationType); X(a, b, memoryKind);	\
	X(a, b, correlationId); X(a, b, address); X(a, b, bytes); X(a, b, timestamp);	\
	X(a, b, deviceId); X(a, b, contextId); X(a, b, streamId)
KERNEL_FIELDS(SAME_AT, CUpti_ActivityKernel10, CUpti_ActivityKernel9);
KERNEL_FIELDS(SAME_AT, CUpti_ActivityKernel10, CUpti_ActivityKernel8);
COPY_FIELDS(SAME_AT, CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5);
SYNC_FIELDS(SAME_AT, CUpti_ActivitySynchronization2, CUpti_ActivitySynchronization);
MEMORY_FIELDS(SAME_AT, CUpti_ActivityMemory4, CUpti_ActivityMemory3);

void cupti_conv_init(struct cupti_conv *c, cupti_name_fn name, void *name_arg)
{
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->name_arg = name_arg;
}

/* A CUPTI timestamp on the host's CLOCK_MONOTONIC; 0 (unknown) stays 0. */
static uint64_t mono(const struct cupti_conv *c, uint64_t ts)
{
	return ts ? ts - (uint64_t)c->clock_offset_ns : 0;
}

/* Remember which device a context belongs to, for sync records. */
static void learn_context(struct cupti_conv *c, uint32_t context, uint32_t device)
{
	unsigned i;

	for (i = 0; i < c->n_ctx; i++)
		if (c->ctx_dev[i].context == context)
			return;
	/* a full map only costs sync records their device */
	if (c->n_ctx == CUPTI_CONV_CONTEXTS)
		return;
	c->ctx_dev[c->n_ctx].context = context;
	c->ctx_dev[c->n_ctx].device = device;
	c->n_ctx++;
}

static uint32_t context_device(const struct cupti_conv *c, uint32_t context)
{
	unsigned i;

	for (i = 0; i < c->n_ctx; i++)
		if (c->ctx_dev[i].context == context)
			return c->ctx_dev[i].device;
	return CUPTI_DEVICE_UNKNOWN;
}

static void set_where(struct cupti_conv *c, struct ga_where *w,
		      uint32_t device, uint32_t context, uint32_t stream)
{
	w->device = device;
	w->context = context;
	w->stream = stream;
	learn_context(c, context, device);
}

static int kernel(struct cupti_conv *c, const CUpti_ActivityKernel10 *k,
		  struct ga_kernel *r)
{
	r->h.type = GA_KERNEL;
	r->h.size = sizeof(*r);
	r->h.correlation = k->correlationId;
	set_where(c, &r->w, k->deviceId, k->contextId, k->streamId);
	r->start = mono(c, k->start);
	r->end = mono(c, k->end);
	/* the name is CUPTI's until the buffer is freed: intern it now */
	r->name_id = c->name ? c->name(k->name ? k->name : "", c->name_arg) : 0;
	r->grid[0] = (uint32_t)k->gridX;
	r->grid[1] = (uint32_t)k->gridY;
	r->grid[2] = (uint32_t)k->gridZ;
	r->block[0] = (uint32_t)k->blockX;
	r->block[1] = (uint32_t)k->blockY;
	r->block[2] = (uint32_t)k->blockZ;
	r->registers = k->registersPerThread;
	r->static_shmem = (uint32_t)k->staticSharedMemory;
	r->dynamic_shmem = (uint32_t)k->dynamicSharedMemory;
	r->graph_node = k->graphNodeId;
	r->graph_id = k->graphId;
	return r->h.size;
}

static int memcpy_rec(struct cupti_conv *c, const CUpti_ActivityMemcpy6 *m,
		      struct ga_memcpy *r)
{
	r->h.type = GA_MEMCPY;
	r->h.size = sizeof(*r);
	r->h.correlation = m->correlationId;
	set_where(c, &r->w, m->deviceId, m->contextId, m->streamId);
	r->start = mono(c, m->start);
	r->end = mono(c, m->end);
	r->bytes = m->bytes;
	r->kind = m->copyKind;
	/* not a peer copy: the only device involved is the one that copied */
	r->dst_device = m->deviceId;
	r->graph_node = m->graphNodeId;
	return r->h.size;
}

static int peer_copy(struct cupti_conv *c, const CUpti_ActivityMemcpyPtoP4 *m,
		     struct ga_memcpy *r)
{
	r->h.type = GA_MEMCPY;
	r->h.size = sizeof(*r);
	r->h.correlation = m->correlationId;
	/* deviceId is the device doing the copy, usually the source */
	set_where(c, &r->w, m->deviceId, m->contextId, m->streamId);
	r->start = mono(c, m->start);
	r->end = mono(c, m->end);
	r->bytes = m->bytes;
	r->kind = m->copyKind;
	r->dst_device = m->dstDeviceId;
	r->graph_node = m->graphNodeId;
	return r->h.size;
}

static int memset_rec(struct cupti_conv *c, const CUpti_ActivityMemset4 *m,
		      struct ga_memset *r)
{
	r->h.type = GA_MEMSET;
	r->h.size = sizeof(*r);
	r->h.correlation = m->correlationId;
	set_where(c, &r->w, m->deviceId, m->contextId, m->streamId);
	r->start = mono(c, m->start);
	r->end = mono(c, m->end);
	r->bytes = m->bytes;
	r->value = m->value;
	r->graph_node = m->graphNodeId;
	return r->h.size;
}

/*
 * streamId and cudaEventId are CUPTI_SYNCHRONIZATION_INVALID_VALUE
 * (0xffffffff) where they do not apply (a context sync has neither): kept
 * as they are, the event widened without changing its value.
 */
static int sync_rec(struct cupti_conv *c, const CUpti_ActivitySynchronization2 *s,
		    struct ga_sync *r)
{
	r->h.type = GA_SYNC;
	r->h.size = sizeof(*r);
	r->h.correlation = s->correlationId;
	r->w.device = context_device(c, s->contextId);
	r->w.context = s->contextId;
	r->w.stream = s->streamId;
	r->start = mono(c, s->start);
	r->end = mono(c, s->end);
	r->kind = (uint32_t)s->type;
	r->event = s->cudaEventId;
	return r->h.size;
}

static int memory_rec(struct cupti_conv *c, const CUpti_ActivityMemory4 *m,
		      struct ga_memory *r)
{
	r->h.type = GA_MEMORY;
	r->h.size = sizeof(*r);
	r->h.correlation = m->correlationId;
	set_where(c, &r->w, m->deviceId, m->contextId, m->streamId);
	r->ts = mono(c, m->timestamp);
	r->address = m->address;
	r->bytes = m->bytes;
	r->op = (uint32_t)m->memoryOperationType;
	r->memory_kind = (uint32_t)m->memoryKind;
	return r->h.size;
}

int cupti_convert(struct cupti_conv *c, const CUpti_Activity *rec,
		  union ga_record *out)
{
	if (!c || !rec || !out)
		return -EINVAL;
	/* zeroed padding: records leave the process, and compare bytewise */
	memset(out, 0, sizeof(*out));
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return kernel(c, (const CUpti_ActivityKernel10 *)rec, &out->kernel);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return memcpy_rec(c, (const CUpti_ActivityMemcpy6 *)rec, &out->memcpy);
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		return peer_copy(c, (const CUpti_ActivityMemcpyPtoP4 *)rec, &out->memcpy);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return memset_rec(c, (const CUpti_ActivityMemset4 *)rec, &out->memset);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return sync_rec(c, (const CUpti_ActivitySynchronization2 *)rec, &out->sync);
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		return memory_rec(c, (const CUpti_ActivityMemory4 *)rec, &out->memory);
	default:
		/* a kind we did not enable, or a newer CUPTI's: not an error */
		c->skipped++;
		return 0;
	}
}
