// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests for lib/array.c: arrays that grow by doubling, and their sort. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "tap.h"

struct item {
	uint32_t key, orig;     /* orig: the place it started at, for stability */
	char pad[192];          /* the size of a model event, about */
};

static size_t ncmp;

static int cmp_key(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	ncmp++;
	return (x->key > y->key) - (x->key < y->key);
}

/* the order array_sort() must give: by key, then as they started */
static int cmp_stable(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->orig > y->orig) - (x->orig < y->orig);
}

/*
 * Sort v[0..n) with array_sort() and check it against qsort() by key and
 * start; the pads must travel with their items.  Returns the comparisons made.
 */
static size_t check_sort(struct item *v, size_t n, const char *what)
{
	struct item *want = malloc((n ? n : 1) * sizeof(*want));
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		v[i].orig = i;
		memset(v[i].pad, (int)(v[i].key * 31 + i), sizeof(v[i].pad));
	}
	memcpy(want, v, n * sizeof(*v));
	qsort(want, n, sizeof(*want), cmp_stable);
	ncmp = 0;
	array_sort(v, n, sizeof(*v), cmp_key);
	for (size_t i = 0; i < n; i++)
		bad += memcmp(&v[i], &want[i], sizeof(*v)) != 0;
	is_int(bad, 0, "%s: %zu items in order, equal keys as they came", what, n);
	free(want);
	return ncmp;
}

static void test_sort(void)
{
	size_t n = 100000, c;
	struct item *v = calloc(n, sizeof(*v));
	uint32_t seed = 12345;

	check_sort(v, 0, "nothing");
	v[0].key = 7;
	check_sort(v, 1, "one item");
	for (size_t i = 0; i < n; i++)
		v[i].key = i / 3;       /* equal keys in threes */
	c = check_sort(v, n, "in order already");
	ok(c == n - 1, "in order already: one comparison an item (%zu for %zu)", c, n);
	for (size_t i = 0; i < n; i++)
		v[i].key = n - i;
	check_sort(v, n, "reversed");
	/*
	 * Two rings drained in turn, 500 records at a time: each batch is in
	 * time order, and the batches of the two overlap in time.
	 */
	for (size_t i = 0; i < n; i++) {
		size_t batch = i / 500, ring = batch & 1, k = (batch / 2) * 500 + i % 500;

		v[i].key = 2 * k + ring;
	}
	c = check_sort(v, n, "two rings' batches");
	ok(c < 3 * n, "two rings' batches: a few comparisons an item (%zu for %zu)", c, n);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245 + 12345;
		v[i].key = seed >> 16 & 1023;   /* many equal keys */
	}
	check_sort(v, n, "random, with equal keys");
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245 + 12345;
		v[i].key = i + (seed >> 16) % 64;       /* each a little out of place */
	}
	check_sort(v, n, "jittered");
	free(v);
}

int main(void)
{
	uint64_t *v = NULL;
	char *s = NULL;
	size_t cap = 0, scap = 0;
	int bad = 0;

	is_int(array_grow(&v, &cap, 0), 0, "growing to nothing");
	ok(!v && !cap, "allocates nothing");
	is_int(array_grow(&v, &cap, 1), 0, "room for one");
	is_int(cap, 64, "starts at 64");
	for (size_t n = 0; n < 1000; n++) {
		bad += array_grow(&v, &cap, n + 1) != 0;
		v[n] = n;
	}
	is_int(bad, 0, "1000 appended");
	is_int(cap, 1024, "by doubling");
	for (size_t n = 0; n < 1000; n++)
		bad += v[n] != n;
	is_int(bad, 0, "keeping what was there");
	is_int(array_grow(&v, &cap, 5000), 0, "a jump past the double");
	is_int(cap, 8192, "doubles until it fits");
	is_int(array_grow(&v, &cap, 10), 0, "asking for less");
	is_int(cap, 8192, "shrinks nothing");
	is_int(array_grow(&s, &scap, 100), 0, "bytes");
	is_int(scap, 128, "sized by the element");
	ok(array_grow(&v, &cap, SIZE_MAX / 4) == -ENOMEM && cap == 8192, "overflow: -ENOMEM, unchanged");
	ok(array_grow(&s, &scap, SIZE_MAX) == -ENOMEM && scap == 128, "even for bytes");
	free(v);
	free(s);
	test_sort();
	return done_testing();
}
