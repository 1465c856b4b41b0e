// SPDX-License-Identifier: BSD-2-Clause
/* Arrays that grow by doubling; see array.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/array.h"

#define ARRAY_MIN 64

/* array_grow_bytes() when the array is full */
int array_realloc(void **arr, size_t *cap, size_t want, size_t elem)
{
	size_t ncap = *cap ? *cap : ARRAY_MIN;
	void *p;

	if (want > SIZE_MAX / 2 / elem)         /* ncap * 2 * elem must not wrap */
		return -ENOMEM;
	while (ncap < want)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int array_grow_zeroed_bytes(void **arr, size_t *cap, size_t want, size_t elem)
{
	size_t old = *cap;

	if (want <= old)
		return 0;
	if (array_realloc(arr, cap, want, elem))
		return -ENOMEM;
	memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
	return 0;
}

int array_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The first of [lo, hi) that cmp puts after key (or, after_equal unset, not before it). */
static size_t bound(const char *b, size_t lo, size_t hi, size_t elem, const void *key,
		    int (*cmp)(const void *, const void *), int after_equal)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp(b + mid * elem, key);

		if (c < 0 || (c == 0 && after_equal))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Merge the sorted runs [lo, mid) and [mid, hi) of b in place: the head
 * of the first run that is not after the second's first item stays, and
 * so does the tail of the second not before the first's last; what lies
 * between goes through *tmp (grown as needed).  0 or -ENOMEM.
 */
static int merge_runs(char *b, size_t lo, size_t mid, size_t hi, size_t elem, void **tmp,
		      size_t *tmp_cap, int (*cmp)(const void *, const void *))
{
	size_t i, j, k, na;
	char *t;

	if (cmp(b + (mid - 1) * elem, b + mid * elem) <= 0)
		return 0;       /* in order already */
	lo = bound(b, lo, mid, elem, b + mid * elem, cmp, 1);
	hi = bound(b, mid, hi, elem, b + (mid - 1) * elem, cmp, 0);
	na = mid - lo;
	if (array_grow_bytes(tmp, tmp_cap, na, elem))
		return -ENOMEM;
	t = *tmp;
	memcpy(t, b + lo * elem, na * elem);
	for (i = 0, j = mid, k = lo; i < na && j < hi; k++) {
		/* the first run's item first at equal keys: stable */
		if (cmp(b + j * elem, t + i * elem) < 0)
			memcpy(b + k * elem, b + j++ * elem, elem);
		else
			memcpy(b + k * elem, t + i++ * elem, elem);
	}
	memcpy(b + k * elem, t + i * elem, (na - i) * elem);
	return 0;
}

void array_sort(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *))
{
	char *b = base;
	void *tmp = NULL;
	size_t *start = NULL, nrun = 0, cap = 0, tmp_cap = 0;

	/* start[r]: where run r begins; start[nrun] = n */
	for (size_t i = 0; i <= n; i++) {
		if (i && i < n && cmp(b + (i - 1) * elem, b + i * elem) <= 0)
			continue;
		if (array_grow(&start, &cap, nrun + 1))
			goto fallback;
		start[nrun++] = i;
	}
	nrun--;                 /* the last entry is n, the end */
	while (nrun > 1) {
		size_t k = 0;

		for (size_t r = 0; r + 1 < nrun; r += 2) {
			if (merge_runs(b, start[r], start[r + 1], start[r + 2], elem, &tmp, &tmp_cap,
				       cmp))
				goto fallback;
			start[k++] = start[r];
		}
		if (nrun & 1)
			start[k++] = start[nrun - 1];
		start[k] = n;
		nrun = k;
	}
	free(start);
	free(tmp);
	return;
fallback:
	free(start);
	free(tmp);
	qsort(base, n, elem, cmp);
}
