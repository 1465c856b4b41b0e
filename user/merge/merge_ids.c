// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf merge's pid and tid remapping: host i's values below 10^7 become
 * i * 10^7 + value, larger ones (synthetic track ids) fresh values above
 * every host's range; one table for pids and tids, so a main thread
 * stays pid == tid.
 */
#include <errno.h>
#include <stdlib.h>
#include "merge/merge.h"

static uint64_t hash_id(uint32_t host, int64_t v)
{
	uint64_t h = (uint64_t)v * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)host + 1) * 0xc2b2ae3d27d4eb4fULL;

	return h ^ (h >> 29);
}

static int ids_grow(struct merge *m)
{
	size_t cap = m->capids ? m->capids * 2 : 1024;
	struct ident *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < m->capids; i++) {
		struct ident *e = &m->ids[i];
		size_t k;

		if (!e->used)
			continue;
		for (k = hash_id(e->host, e->v) & (cap - 1); t[k].used; k = (k + 1) & (cap - 1))
			;
		t[k] = *e;
	}
	free(m->ids);
	m->ids = t;
	m->capids = cap;
	return 0;
}

struct ident *ident_get(struct merge *m, uint32_t host, int64_t v)
{
	size_t k;

	if (m->nids * 2 >= m->capids && ids_grow(m))
		return NULL;
	for (k = hash_id(host, v) & (m->capids - 1); m->ids[k].used;
	     k = (k + 1) & (m->capids - 1))
		if (m->ids[k].host == host && m->ids[k].v == v)
			return &m->ids[k];
	if (v >= 0 && v < PID_STRIDE) {
		m->ids[k].nv = host * PID_STRIDE + v;
	} else {
		if (m->next_big > (int64_t)UINT32_MAX)
			return NULL;
		m->ids[k].nv = m->next_big++;
	}
	m->ids[k].used = 1;
	m->ids[k].host = host;
	m->ids[k].v = v;
	m->nids++;
	return &m->ids[k];
}
