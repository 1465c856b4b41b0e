/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hash map of user/: 64-bit keys to 64-bit values, open addressing
 * with linear probing, at most three quarters full (deleted slots
 * included); a lookup reads a byte of metadata per slot it passes, and
 * the slot's key only where the byte's 7-bit tag matches.
 *
 * Keys are compared exactly.  A key the map cannot hold (a string, a
 * struct) is looked up by its hash instead: store the hash as the key
 * with hashmap_add(), which allows equal keys, and walk the slots of one
 * hash with hashmap_find() / hashmap_find_next(), comparing what the
 * value points at:
 *
 *	for (s = hashmap_find(m, h); s; s = hashmap_find_next(m, s))
 *		if (!strcmp(names[s->val], name))
 *			return s->val;
 *
 * Slot pointers stay valid until the next hashmap_put(), hashmap_add()
 * or hashmap_reserve(); hashmap_remove() moves nothing, so a map may be
 * pruned while it is walked with hashmap_for_each().
 */
#ifndef GPUBPF_HASHMAP_H
#define GPUBPF_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct hashmap_slot {
	uint64_t key, val;
};

struct hashmap {
	struct hashmap_slot *slots;
	uint8_t *meta;          /* per slot: HASHMAP_EMPTY, HASHMAP_DELETED or a tag */
	size_t cap;             /* slots: 0 or a power of two */
	size_t n;               /* keys held */
	size_t used;            /* slots not empty: keys and deleted ones */
};

#define HASHMAP_EMPTY 0
#define HASHMAP_DELETED 1

/* A bijective 64-bit mixer (MurmurHash3's finaliser). */
static inline uint64_t hashmap_mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

/* FNV-1a over n bytes: the hash of keys held by their hash. */
static inline uint64_t hashmap_hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

/* The hash of a key of two words. */
static inline uint64_t hashmap_hash2(uint64_t a, uint64_t b)
{
	return hashmap_mix(a ^ hashmap_mix(b));
}

static inline uint8_t hashmap_tag(uint64_t mixed)
{
	return 0x80 | mixed >> 57;
}

/* The slot of key from index i on, or NULL at the first empty slot. */
static inline struct hashmap_slot *hashmap_probe(const struct hashmap *m, uint64_t key,
						 size_t i, uint8_t tag)
{
	for (; m->meta[i] != HASHMAP_EMPTY; i = (i + 1) & (m->cap - 1))
		if (m->meta[i] == tag && m->slots[i].key == key)
			return &m->slots[i];
	return NULL;
}

/* The slot holding key (the first, where keys repeat), or NULL. */
static inline struct hashmap_slot *hashmap_find(const struct hashmap *m, uint64_t key)
{
	uint64_t h = hashmap_mix(key);

	return m->n ? hashmap_probe(m, key, h & (m->cap - 1), hashmap_tag(h)) : NULL;
}

/* The next slot holding s's key, or NULL. */
static inline struct hashmap_slot *hashmap_find_next(const struct hashmap *m,
						     const struct hashmap_slot *s)
{
	return hashmap_probe(m, s->key, (s - m->slots + 1) & (m->cap - 1),
			     hashmap_tag(hashmap_mix(s->key)));
}

void hashmap_init(struct hashmap *m);
void hashmap_release(struct hashmap *m);
/* Forget every key, keeping the slots. */
void hashmap_clear(struct hashmap *m);
/* Room for count keys without growing: 0 or -ENOMEM. */
int hashmap_reserve(struct hashmap *m, size_t count);

/*
 * The slot of key, added with value 0 if it was not there (*added, when
 * not NULL, says which); NULL when out of memory.
 */
struct hashmap_slot *hashmap_put(struct hashmap *m, uint64_t key, int *added);
/* Add key -> val even if key is there already: 0 or -ENOMEM. */
int hashmap_add(struct hashmap *m, uint64_t key, uint64_t val);
/* Remove the key of slot s (a slot of m holding a key). */
void hashmap_remove(struct hashmap *m, struct hashmap_slot *s);

/* The first slot holding a key after prev (NULL: the first of all), or NULL. */
struct hashmap_slot *hashmap_next(const struct hashmap *m, const struct hashmap_slot *prev);

#define hashmap_for_each(m, s) \
	for ((s) = hashmap_next((m), NULL); (s); (s) = hashmap_next((m), (s)))

/* Bytes the map has allocated. */
size_t hashmap_mem(const struct hashmap *m);

#endif
