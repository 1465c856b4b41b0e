/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Clock refinement from collective kernels, for `gpubpf merge
 * --align-collectives`.  The kernels of one NCCL collective end within
 * microseconds of each other on every rank (none can finish before the
 * last one joined), so after the coarse alignment by realtime offsets the
 * remaining difference between the ends of matching kernels on two hosts
 * is the residual clock skew between them.
 *
 * Kernels are matched by name and rank in time: the k-th kernel of a name
 * (by end time) on one host against the k-th of that name on the
 * reference.  Recording windows never start at exactly the same instant,
 * so one host may have missed the first few: the match is also tried
 * shifted by up to ALIGN_MAX_LAG kernels, and the shift whose differences
 * agree best (smallest median absolute deviation; ties, within a
 * microsecond, go to the smallest skew) wins.  The skew is the median of
 * the differences of all matched kernels of all names.  This assumes the
 * residual skew is under half the interval between two kernels of one
 * name when they are evenly spaced.
 */
#ifndef GPUBPF_MERGE_ALIGN_H
#define GPUBPF_MERGE_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#define ALIGN_MAX_LAG 8

/* Kernel names, interned: the same name gets the same id on every host. */
struct align_names {
	char **s;
	size_t *len;
	size_t n, cap;
};

/* The collective kernel ends of one host. */
struct align_set {
	struct align_end {
		uint32_t name;
		int64_t end_ns;
	} *v;
	size_t n, cap;
};

struct align_result {
	int64_t skew_ns;        /* host minus reference: subtract from the host */
	int64_t spread_ns;      /* median absolute deviation of the differences */
	uint64_t matched;       /* kernels matched; 0: no estimate, skew 0 */
};

/* The id of name (len bytes, any content), added if new.  0 or -ENOMEM. */
int align_intern(struct align_names *t, const char *name, size_t len, uint32_t *id);
void align_names_release(struct align_names *t);

/* Record one kernel end.  Returns 0 or -ENOMEM. */
int align_add(struct align_set *s, uint32_t name, int64_t end_ns);
void align_set_release(struct align_set *s);

/*
 * Estimate host's clock skew against ref.  Sorts both sets in place.
 * Returns 0 (res->matched is 0 when no name is common to both) or -ENOMEM.
 */
int align_estimate(struct align_set *ref, struct align_set *host,
		   struct align_result *res);

#endif
