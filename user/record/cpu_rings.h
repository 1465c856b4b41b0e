/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-CPU call rings, read from user space: the BPF programs write
 * each ring (struct gb_cring in gpubpf.h) and publish its prod; this side
 * reads the records up to it and hands back the room by moving cons.
 *
 *	struct cpu_rings cr = { base, n, stride, size };
 *	cpu_rings_drain(&cr, fn, ctx)   each ring's records, oldest first
 *
 * One reader at a time.
 */
#ifndef GPUBPF_CPU_RINGS_H
#define GPUBPF_CPU_RINGS_H

#include <stddef.h>
#include <stdint.h>

/* n rings as mapped: ring i's head at base + i * stride, its size data bytes after it. */
struct cpu_rings {
	char *base;             /* NULL: none */
	unsigned n;
	size_t stride;
	uint64_t size;          /* a power of two */
};

/*
 * Hand every record the rings hold to fn (libbpf's ring_buffer callback
 * shape), ring after ring, and free their room.  A negative return of fn
 * stops there, the record not consumed, and is returned.  Returns the
 * number of records, or -EBADMSG when a ring's records did not add up (its
 * unread records are skipped; the other rings are read).
 */
int cpu_rings_drain(const struct cpu_rings *cr, int (*fn)(void *ctx, void *data, size_t size),
		    void *ctx);

#endif
