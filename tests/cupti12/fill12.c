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

size_t cupti12_fill(uint8_t *buf, size_t len, size_t sizes[CUPTI12_RECORDS])
{
	const size_t n[CUPTI12_RECORDS] = {
		sizeof(KERNEL_T), sizeof(MEMCPY_T), sizeof(PEER_T), sizeof(MEMSET_T),
		sizeof(SYNC_T), sizeof(MEMORY_T),
	};

	fill_used = 0;
	FILL_FIRST(KERNEL_T, MEMCPY_T, PEER_T, MEMSET_T, SYNC_T, MEMORY_T);
	if (fill_used > len)
		return 0;
	memcpy(buf, fill_buf, fill_used);
	memcpy(sizes, n, sizeof(n));
	return fill_used;
}

unsigned cupti12_header_version(void)
{
	return CUPTI_API_VERSION;
}
