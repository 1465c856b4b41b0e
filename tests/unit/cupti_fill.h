/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUPTI activity records filled with known values, for the tests of the
 * record conversion: the same macros fill CUDA 13.0's struct versions
 * (tests/unit/test_cupti_records.c) and those of another release's
 * headers (tests/cupti12/, against Debian's CUPTI 12), so both must
 * convert to the same bytes.  The records go one after the other into
 * fill_buf, as CUPTI lays them out; include after <cupti.h>.
 */
#ifndef GPUBPF_TEST_CUPTI_FILL_H
#define GPUBPF_TEST_CUPTI_FILL_H

#include <stdint.h>
#include <string.h>

/* The buffer, 8-aligned as CUPTI's callbacks hand them out. */
static uint8_t fill_buf[8192] __attribute__((aligned(8)));
static size_t fill_used;

/* Append a zeroed record of that kind and size (the tests stay far below the end). */
static __attribute__((unused)) void *add(CUpti_ActivityKind kind, size_t size)
{
	CUpti_Activity *a = (CUpti_Activity *)(fill_buf + fill_used);

	memset(a, 0, size);
	a->kind = kind;
	fill_used += size;
	return a;
}

#define KERNEL_NAME "void gemm_kernel<float, 128>(float const*, float*, int)"

/*
 * The first records: fields read by the converter first, then some it
 * does not read, set anyway.
 */
#define FILL_KERNEL(k) do {						\
	(k)->start = 1000000001ull;					\
	(k)->end = 1000005002ull;					\
	(k)->deviceId = 1;						\
	(k)->contextId = 7;						\
	(k)->streamId = 13;						\
	(k)->correlationId = 4242;					\
	(k)->gridX = 65535;						\
	(k)->gridY = 3;							\
	(k)->gridZ = 2;							\
	(k)->blockX = 256;						\
	(k)->blockY = 4;						\
	(k)->blockZ = 1;						\
	(k)->registersPerThread = 168;					\
	(k)->staticSharedMemory = 49152;				\
	(k)->dynamicSharedMemory = 65536;				\
	(k)->name = KERNEL_NAME;					\
	(k)->graphNodeId = 0;						\
	(k)->graphId = 0;						\
	(k)->completed = 1000005003ull;					\
	(k)->localMemoryPerThread = 99;					\
} while (0)

#define FILL_MEMCPY(m) do {						\
	(m)->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;		\
	(m)->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;		\
	(m)->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;		\
	(m)->bytes = 3ull << 30;	/* more than 32 bits */		\
	(m)->start = 2000000000ull;					\
	(m)->end = 2000400000ull;					\
	(m)->deviceId = 1;						\
	(m)->contextId = 7;						\
	(m)->streamId = 14;						\
	(m)->correlationId = 4243;					\
	(m)->runtimeCorrelationId = 77;					\
	(m)->graphNodeId = 0x1122334455667788ull;			\
} while (0)

#define FILL_PEER(p) do {						\
	(p)->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;		\
	(p)->bytes = 1ull << 26;					\
	(p)->start = 3000000000ull;					\
	(p)->end = 3000100000ull;					\
	(p)->deviceId = 2;						\
	(p)->contextId = 9;						\
	(p)->streamId = 21;						\
	(p)->srcDeviceId = 2;						\
	(p)->srcContextId = 9;						\
	(p)->dstDeviceId = 3;						\
	(p)->dstContextId = 11;						\
	(p)->correlationId = 4244;					\
	(p)->graphNodeId = 5;						\
} while (0)

#define FILL_MEMSET(s) do {						\
	(s)->value = 0xdeadbeef;					\
	(s)->bytes = 4096;						\
	(s)->start = 4000000000ull;					\
	(s)->end = 4000000500ull;					\
	(s)->deviceId = 1;						\
	(s)->contextId = 7;						\
	(s)->streamId = 15;						\
	(s)->correlationId = 4245;					\
	(s)->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;		\
	(s)->graphNodeId = 6;						\
} while (0)

/* a stream sync in context 7, seen above on device 1 */
#define FILL_SYNC(y) do {						\
	(y)->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE; \
	(y)->start = 5000000000ull;					\
	(y)->end = 5000700000ull;					\
	(y)->correlationId = 4246;					\
	(y)->contextId = 7;						\
	(y)->streamId = 13;						\
	(y)->cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;		\
} while (0)

#define FILL_ALLOC(mem) do {						\
	(mem)->memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION; \
	(mem)->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;		\
	(mem)->correlationId = 4247;					\
	(mem)->address = 0x7f0000200000ull;				\
	(mem)->bytes = 2ull << 30;					\
	(mem)->timestamp = 6000000000ull;				\
	(mem)->PC = 0x1234;						\
	(mem)->processId = 555;						\
	(mem)->deviceId = 1;						\
	(mem)->contextId = 7;						\
	(mem)->streamId = 13;						\
} while (0)

/* The records FILL_* make, one of each kind converted, in the struct types given. */
#define FILL_FIRST(kernel_t, memcpy_t, peer_t, memset_t, sync_t, memory_t) do {	\
	kernel_t *k_ = add(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, sizeof(kernel_t)); \
	memcpy_t *m_;								\
	peer_t *p_;								\
	memset_t *s_;								\
	sync_t *y_;								\
	memory_t *a_;								\
										\
	FILL_KERNEL(k_);							\
	m_ = add(CUPTI_ACTIVITY_KIND_MEMCPY, sizeof(memcpy_t));			\
	FILL_MEMCPY(m_);							\
	p_ = add(CUPTI_ACTIVITY_KIND_MEMCPY2, sizeof(*p_));			\
	FILL_PEER(p_);								\
	s_ = add(CUPTI_ACTIVITY_KIND_MEMSET, sizeof(*s_));			\
	FILL_MEMSET(s_);							\
	y_ = add(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, sizeof(sync_t));		\
	FILL_SYNC(y_);								\
	a_ = add(CUPTI_ACTIVITY_KIND_MEMORY2, sizeof(memory_t));		\
	FILL_ALLOC(a_);								\
} while (0)

#endif
