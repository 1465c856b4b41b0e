// SPDX-License-Identifier: BSD-2-Clause
/*
 * The records of tests/unit/cupti_fill.h laid out by another release's
 * CUPTI headers: compiled by tests/t0406-cupti12.sh with Debian's CUPTI 12
 * include directory ahead of the toolkit's, and the struct versions that
 * release writes (the newest its headers declare) given as KERNEL_T,
 * MEMCPY_T, PEER_T, MEMSET_T, SYNC_T and MEMORY_T.  Linked into check12.c,
 * which converts them with the converter built against CUDA 13.0.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cupti.h>

#include "cupti_fill.h"
#include "fill12.h"

#define NAME_(t) #t
#define NAME(t) NAME_(t)

const char *const cupti12_types[CUPTI12_RECORDS] = {
	NAME(KERNEL_T), NAME(MEMCPY_T), NAME(PEER_T), NAME(MEMSET_T), NAME(SYNC_T), NAME(MEMORY_T),
};

static uint8_t *out;
static size_t used, cap, n_rec, *rec_sizes;
static uint8_t spare[1024] __attribute__((aligned(8)));

/* Append a zeroed record; one that does not fit goes to spare and is not counted. */
static void *add(CUpti_ActivityKind kind, size_t size)
{
	CUpti_Activity *a = (CUpti_Activity *)(out + used);

	if (used + size > cap || n_rec == CUPTI12_RECORDS || size > sizeof(spare)) {
		cap = 0;
		return memset(spare, 0, sizeof(spare));
	}
	memset(a, 0, size);
	a->kind = kind;
	rec_sizes[n_rec++] = size;
	used += size;
	return a;
}

size_t cupti12_fill(uint8_t *buf, size_t len, size_t sizes[CUPTI12_RECORDS])
{
	out = buf;
	cap = len;
	used = n_rec = 0;
	rec_sizes = sizes;
	FILL_FIRST(KERNEL_T, MEMCPY_T, PEER_T, MEMSET_T, SYNC_T, MEMORY_T);
	return cap && n_rec == CUPTI12_RECORDS ? used : 0;
}

unsigned cupti12_header_version(void)
{
	return CUPTI_API_VERSION;
}
