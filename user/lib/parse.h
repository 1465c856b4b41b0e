/* SPDX-License-Identifier: BSD-2-Clause */
/* Parsing command-line values. */
#ifndef GPUBPF_PARSE_H
#define GPUBPF_PARSE_H

#include <stdint.h>
#include <sys/types.h>

/*
 * A positive duration: a number (decimals allowed) with a unit, one of
 * ns, us, ms, s, m, h ("500ms", "10s", "2m", "1.5s"); a bare number means
 * seconds.  0, negative values, overflow and junk give -EINVAL.
 */
int parse_duration_ns(const char *s, uint64_t *ns);
/* A positive byte size with an optional K, M or G suffix (powers of 1024). */
int parse_size(const char *s, uint64_t *bytes);
/*
 * A comma-separated list of positive pids, appended to *pids (realloc'd).
 * Returns the new count or -EINVAL / -ENOMEM.
 */
int parse_pid_list(const char *s, pid_t **pids, int n);

#endif
