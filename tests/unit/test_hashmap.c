// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for lib/hashmap.c: insert, find, remove and the deleted slots
 * it leaves, growth, iteration, colliding keys, keys held by their hash,
 * many keys with exact counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "tap.h"

/* Keys after from whose probe sequences start at the same slot of 16. */
static size_t colliding(uint64_t from, uint64_t *keys, size_t n, int same_tag)
{
	uint64_t h0 = hashmap_mix(from);
	size_t got = 0;

	for (uint64_t k = from; got < n && k < from + (1u << 24); k++) {
		uint64_t h = hashmap_mix(k);

		if ((h & 15) == (h0 & 15) && (!same_tag || hashmap_tag(h) == hashmap_tag(h0)))
			keys[got++] = k;
	}
	return got;
}

static void test_basic(void)
{
	struct hashmap m;
	struct hashmap_slot *s;
	int added = -1;

	hashmap_init(&m);
	ok(!hashmap_find(&m, 42), "an empty map finds nothing");
	ok(!hashmap_next(&m, NULL), "and walks over nothing");
	s = hashmap_put(&m, 42, &added);
	ok(s && added && s->key == 42 && s->val == 0, "put adds a key with value 0");
	s->val = 7;
	s = hashmap_put(&m, 42, &added);
	ok(s && !added && s->val == 7, "put of a known key returns its slot");
	ok(hashmap_put(&m, 0, NULL) && hashmap_find(&m, 0), "key 0 is a key like any");
	ok(hashmap_put(&m, UINT64_MAX, NULL) && hashmap_find(&m, UINT64_MAX), "so is ~0");
	is_int(m.n, 3, "three keys");
	s = hashmap_find(&m, 42);
	ok(s && s->val == 7 && !hashmap_find_next(&m, s), "find 42, only once");
	hashmap_remove(&m, s);
	ok(!hashmap_find(&m, 42), "removed");
	ok(hashmap_find(&m, 0) && hashmap_find(&m, UINT64_MAX), "the others stay");
	is_int(m.n, 2, "two keys");
	hashmap_clear(&m);
	ok(!m.n && !m.used && !hashmap_find(&m, 0) && !hashmap_next(&m, NULL), "clear forgets all");
	ok(hashmap_mem(&m) > 0, "and keeps its slots");
	hashmap_release(&m);
	ok(!m.cap && !m.slots && !hashmap_find(&m, 0), "release");
	hashmap_release(&m);
}

static void test_collisions(void)
{
	uint64_t keys[6];
	struct hashmap m;
	struct hashmap_slot *s;
	int found = 0;

	hashmap_init(&m);
	is_int(colliding(1000, keys, 6, 1), 6, "six keys on one probe start, one tag");
	for (int i = 0; i < 6; i++)
		hashmap_put(&m, keys[i], NULL)->val = i;
	is_int(m.cap, 16, "in 16 slots");
	for (int i = 0; i < 6; i++)
		found += (s = hashmap_find(&m, keys[i])) && s->val == (uint64_t)i;
	is_int(found, 6, "each found with its value");
	/* remove from the middle of the run: the later ones stay reachable */
	hashmap_remove(&m, hashmap_find(&m, keys[2]));
	is_int(m.used, 6, "a removed key in a run leaves a deleted slot");
	found = 0;
	for (int i = 0; i < 6; i++)
		found += !!hashmap_find(&m, keys[i]);
	is_int(found, 5, "keys past the deleted slot are still found");
	hashmap_put(&m, keys[2], NULL)->val = 22;
	is_int(m.used, 6, "adding again reuses the deleted slot");
	ok(hashmap_find(&m, keys[2])->val == 22 && m.n == 6, "with its new value");
	/* removing the run's end empties the slot, and the deleted one before it stays */
	hashmap_remove(&m, hashmap_find(&m, keys[5]));
	is_int(m.used, 5, "a removed key before an empty slot frees it");
	hashmap_release(&m);
}

static void test_tombstones(void)
{
	struct hashmap m;
	size_t cap;
	int bad = 0;

	hashmap_init(&m);
	for (uint64_t k = 0; k < 4; k++)
		hashmap_put(&m, k, NULL);
	cap = m.cap;
	/* churn: the map must not grow when the keys held stay few */
	for (uint64_t k = 4; k < 100000; k++) {
		hashmap_put(&m, k, NULL);
		hashmap_remove(&m, hashmap_find(&m, k - 4));
		bad += m.n != 4;
	}
	is_int(bad, 0, "four keys held all along");
	ok(m.cap <= cap * 2, "churn did not grow the map (%zu slots)", m.cap);
	ok(m.used * 4 <= m.cap * 3, "deleted slots are reclaimed");
	for (uint64_t k = 99996; k < 100000; k++)
		bad += !hashmap_find(&m, k);
	is_int(bad, 0, "the last four are there");
	hashmap_release(&m);
}

static void test_many(void)
{
	const uint64_t n = 200000;
	struct hashmap_slot *s;
	struct hashmap m;
	uint64_t sum = 0, cnt = 0;
	int bad = 0;

	hashmap_init(&m);
	for (uint64_t k = 0; k < n; k++)
		bad += !hashmap_put(&m, k * 0x10000, NULL) || hashmap_add(&m, ~k, k);
	is_int(bad, 0, "%llu keys added", (unsigned long long)(2 * n));
	is_int(m.n, 2 * n, "exact count");
	ok(m.used * 4 <= m.cap * 3, "at most three quarters full (%zu of %zu)", m.used, m.cap);
	for (uint64_t k = 0; k < n; k++)
		bad += !(s = hashmap_find(&m, ~k)) || s->val != k;
	is_int(bad, 0, "every key found with its value");
	for (uint64_t k = 0; k < n; k += 2)
		hashmap_remove(&m, hashmap_find(&m, k * 0x10000));
	is_int(m.n, 2 * n - n / 2, "half of one kind removed");
	hashmap_for_each(&m, s) {
		cnt++;
		sum += s->key >> 63 ? s->val : 0;
	}
	is_int(cnt, m.n, "iteration visits each key once");
	ok(sum == n * (n - 1) / 2, "and each value");
	for (uint64_t k = 0; k < n; k++)
		bad += !hashmap_find(&m, k * 0x10000) != (k % 2 == 0);
	is_int(bad, 0, "exactly the removed keys are gone");
	hashmap_release(&m);
}

static void test_prune_while_walking(void)
{
	struct hashmap_slot *s;
	struct hashmap m;
	int bad = 0;

	hashmap_init(&m);
	for (uint64_t k = 1; k <= 1000; k++)
		hashmap_put(&m, k, NULL)->val = k % 3;
	hashmap_for_each(&m, s)
		if (!s->val)
			hashmap_remove(&m, s);
	is_int(m.n, 1000 - 333, "removing in a walk removes just those");
	for (uint64_t k = 1; k <= 1000; k++)
		bad += !hashmap_find(&m, k) != (k % 3 == 0);
	is_int(bad, 0, "and the others are found");
	hashmap_release(&m);
}

/* Keys held by their hash: equal hashes, told apart by what they point at. */
static void test_by_hash(void)
{
	static const char *const names[] = { "alpha", "beta", "gamma", "delta" };
	struct hashmap_slot *s;
	struct hashmap m;
	int seen = 0, bad = 0;

	hashmap_init(&m);
	for (int i = 0; i < 4; i++)
		bad += hashmap_add(&m, 99, i) != 0;
	is_int(bad, 0, "four values under one hash");
	for (s = hashmap_find(&m, 99); s; s = hashmap_find_next(&m, s))
		seen |= 1 << s->val;
	is_int(seen, 15, "find / find_next visit all four");
	for (s = hashmap_find(&m, 99); s && strcmp(names[s->val], "gamma");)
		s = hashmap_find_next(&m, s);
	ok(s && s->val == 2, "the one whose name matches");
	ok(hashmap_hash_bytes("gamma", 5) == hashmap_hash_bytes("gamma", 5) &&
	   hashmap_hash_bytes("gamma", 5) != hashmap_hash_bytes("gammb", 5), "hash_bytes");
	ok(hashmap_hash2(1, 2) != hashmap_hash2(2, 1) && hashmap_hash2(0, 0) != hashmap_hash2(0, 1),
	   "hash2 tells the words' order and values apart");
	hashmap_release(&m);
}

static void test_reserve(void)
{
	struct hashmap m;
	size_t cap;

	hashmap_init(&m);
	is_int(hashmap_reserve(&m, 1000), 0, "reserve");
	cap = m.cap;
	ok(cap * 3 >= 1000 * 4, "room for 1000 keys at three quarters load (%zu slots)", cap);
	for (uint64_t k = 0; k < 1000; k++)
		hashmap_add(&m, k, k);
	is_int(m.cap, cap, "1000 keys added without growing");
	is_int(hashmap_reserve(&m, 10), 0, "reserving less");
	is_int(m.cap, cap, "shrinks nothing");
	is_int(hashmap_mem(&m), cap * (sizeof(struct hashmap_slot) + 1), "mem counts the slots");
	is_int(hashmap_reserve(&m, SIZE_MAX / 2), -ENOMEM, "reserving past memory: -ENOMEM");
	is_int(m.cap, cap, "and the map is as it was");
	hashmap_release(&m);
}

int main(void)
{
	test_basic();
	test_collisions();
	test_tombstones();
	test_many();
	test_prune_while_walking();
	test_by_hash();
	test_reserve();
	return done_testing();
}
