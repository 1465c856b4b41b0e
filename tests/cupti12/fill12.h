/* SPDX-License-Identifier: BSD-2-Clause */
/* What fill12.c, built against another CUPTI's headers, gives check12.c. */
#ifndef GPUBPF_TEST_FILL12_H
#define GPUBPF_TEST_FILL12_H

#include <stddef.h>
#include <stdint.h>

/* kernel, memcpy, peer copy, memset, synchronization, memory */
#define CUPTI12_RECORDS 6

/* The struct type of each record, as named in those headers. */
extern const char *const cupti12_types[CUPTI12_RECORDS];

/*
 * Lay the records out in buf, one after the other, each record's size in
 * sizes[]; returns the bytes used, 0 where they do not fit.
 */
size_t cupti12_fill(uint8_t *buf, size_t len, size_t sizes[CUPTI12_RECORDS]);

/* CUPTI_API_VERSION of those headers. */
unsigned cupti12_header_version(void);

#endif
