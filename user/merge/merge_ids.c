// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf merge's pid and tid remapping: host i's values below 10^7 become
 * i * 10^7 + value, larger ones (synthetic track ids) fresh values above
 * every host's range; one table for pids and tids, so a main thread
 * stays pid == tid.  The idents are kept in first-seen order, indexed by
 * a hash of (host, value).
 */
#include <errno.h>
#include <stdlib.h>
#include "lib/array.h"
#include "merge/merge.h"

struct ident *ident_get(struct merge *m, uint32_t host, int64_t v)
{
	uint64_t h = hashmap_hash2(host, (uint64_t)v);
	struct hashmap_slot *s;
	struct ident *id;

	for (s = hashmap_find(&m->id_index, h); s; s = hashmap_find_next(&m->id_index, s))
		if (m->ids[s->val].host == host && m->ids[s->val].v == v)
			return &m->ids[s->val];
	if (!(v >= 0 && v < PID_STRIDE) && m->next_big > (int64_t)UINT32_MAX)
		return NULL;
	if (array_grow(&m->ids, &m->capids, m->nids + 1) || hashmap_add(&m->id_index, h, m->nids))
		return NULL;
	id = &m->ids[m->nids++];
	*id = (struct ident){ .host = host, .v = v };
	id->nv = v >= 0 && v < PID_STRIDE ? host * PID_STRIDE + v : m->next_big++;
	return id;
}
