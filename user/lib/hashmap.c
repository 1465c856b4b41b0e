// SPDX-License-Identifier: BSD-2-Clause
/* The hash map of user/; see hashmap.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hashmap.h"

#define HASHMAP_MIN 16

void hashmap_init(struct hashmap *m)
{
	memset(m, 0, sizeof(*m));
}

void hashmap_release(struct hashmap *m)
{
	free(m->slots);
	free(m->meta);
	hashmap_init(m);
}

void hashmap_clear(struct hashmap *m)
{
	if (m->meta)
		memset(m->meta, HASHMAP_EMPTY, m->cap);
	m->n = 0;
	m->used = 0;
}

/* The first empty or deleted slot on key's probe sequence. */
static size_t free_slot(const struct hashmap *m, uint64_t h)
{
	size_t i = h & (m->cap - 1);

	while (m->meta[i] != HASHMAP_EMPTY && m->meta[i] != HASHMAP_DELETED)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static struct hashmap_slot *place(struct hashmap *m, uint64_t key, uint64_t val)
{
	uint64_t h = hashmap_mix(key);
	size_t i = free_slot(m, h);

	if (m->meta[i] == HASHMAP_EMPTY)
		m->used++;
	m->meta[i] = hashmap_tag(h);
	m->slots[i] = (struct hashmap_slot){ key, val };
	m->n++;
	return &m->slots[i];
}

/* Move the keys into cap slots, dropping the deleted ones. */
static int rehash(struct hashmap *m, size_t cap)
{
	struct hashmap old = *m;

	m->slots = malloc(cap * sizeof(*m->slots));
	m->meta = calloc(cap, 1);
	if (!m->slots || !m->meta) {
		free(m->slots);
		free(m->meta);
		*m = old;
		return -ENOMEM;
	}
	m->cap = cap;
	m->n = m->used = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.meta[i] >= 0x80)
			place(m, old.slots[i].key, old.slots[i].val);
	free(old.slots);
	free(old.meta);
	return 0;
}

int hashmap_reserve(struct hashmap *m, size_t count)
{
	size_t cap = m->cap ? m->cap : HASHMAP_MIN;

	if (count > SIZE_MAX / 4 / sizeof(*m->slots))  /* cap * sizeof must not wrap */
		return -ENOMEM;
	while (count * 4 > cap * 3)
		cap *= 2;
	return cap > m->cap ? rehash(m, cap) : 0;
}

/*
 * Room for one more key: double when keys fill half the slots, else
 * rehash in place to drop the deleted ones (a quarter free at least).
 */
static int make_room(struct hashmap *m)
{
	size_t cap = m->cap ? m->cap : HASHMAP_MIN;

	if ((m->used + 1) * 4 <= m->cap * 3)
		return 0;
	if ((m->n + 1) * 2 > cap)
		cap *= 2;
	return rehash(m, cap);
}

int hashmap_add(struct hashmap *m, uint64_t key, uint64_t val)
{
	if (make_room(m))
		return -ENOMEM;
	place(m, key, val);
	return 0;
}

struct hashmap_slot *hashmap_put(struct hashmap *m, uint64_t key, int *added)
{
	struct hashmap_slot *s = hashmap_find(m, key);

	if (added)
		*added = !s;
	if (s)
		return s;
	if (make_room(m))
		return NULL;
	return place(m, key, 0);
}

void hashmap_remove(struct hashmap *m, struct hashmap_slot *s)
{
	size_t i = s - m->slots;

	/* before an empty slot no probe needs this one: empty it too */
	if (m->meta[(i + 1) & (m->cap - 1)] == HASHMAP_EMPTY) {
		m->meta[i] = HASHMAP_EMPTY;
		m->used--;
	} else {
		m->meta[i] = HASHMAP_DELETED;
	}
	m->n--;
}

struct hashmap_slot *hashmap_next(const struct hashmap *m, const struct hashmap_slot *prev)
{
	for (size_t i = prev ? (size_t)(prev - m->slots) + 1 : 0; i < m->cap; i++)
		if (m->meta[i] >= 0x80)
			return &m->slots[i];
	return NULL;
}

size_t hashmap_mem(const struct hashmap *m)
{
	return m->cap * (sizeof(*m->slots) + 1);
}
