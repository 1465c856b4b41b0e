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
