/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Arrays that grow by doubling: the one growth helper of user/.
 *
 *	struct item *v = NULL;
 *	size_t n = 0, cap = 0;
 *
 *	if (array_grow(&v, &cap, n + 1))
 *		return -ENOMEM;
 *	v[n++] = item;
 */
#ifndef GPUBPF_ARRAY_H
#define GPUBPF_ARRAY_H

#include <stddef.h>

int array_realloc(void **arr, size_t *cap, size_t want, size_t elem);

/*
 * Make *arr (of elem-byte items, room for *cap) hold at least want,
 * doubling from 64; on failure *arr and *cap are unchanged.  0 or -ENOMEM.
 */
static inline int array_grow_bytes(void **arr, size_t *cap, size_t want, size_t elem)
{
	return want <= *cap ? 0 : array_realloc(arr, cap, want, elem);
}

/* qsort()'s comparison of uint64_t values, ascending. */
int array_cmp_u64(const void *a, const void *b);

/*
 * Sort n items of elem bytes by cmp, stably, in time proportional to n
 * where they are in order but for a few places, as records merged from a
 * few rings are: one pass finds the runs already in order, then pairs of
 * runs are merged, each over where the two overlap only.  Any order costs
 * O(n log n); qsort() (not stable) where no memory is left for the merge.
 */
void array_sort(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *));

/* array_grow_bytes() for an array pointer arr (not a void **). */
#define array_grow(arr, cap, want) \
	array_grow_bytes((void **)(arr), (cap), (want), sizeof(**(arr)))

/* The same, the new items zeroed (tables indexed by id). */
int array_grow_zeroed_bytes(void **arr, size_t *cap, size_t want, size_t elem);
#define array_grow_zeroed(arr, cap, want) \
	array_grow_zeroed_bytes((void **)(arr), (cap), (want), sizeof(**(arr)))

#endif
