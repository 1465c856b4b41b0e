// SPDX-License-Identifier: BSD-2-Clause
/* Device memory in use from allocation and free calls: see memory.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "model/memory.h"
#include "model/model.h"

int mem_call_op(const char *n)
{
	if (strncmp(n, "cuMem", 5))
		return MEM_OP_NONE;
	n += 5;
	if (!strcmp(n, "Create"))
		return MEM_OP_ALLOC_HANDLE;
	if (!strcmp(n, "Release"))
		return MEM_OP_FREE_HANDLE;
	/* cuMemAllocHost, cuMemFreeHost: pinned host memory */
	if (!strncmp(n, "AllocHost", 9) || !strncmp(n, "FreeHost", 8))
		return MEM_OP_NONE;
	if (!strncmp(n, "Alloc", 5))
		return MEM_OP_ALLOC;
	if (!strncmp(n, "Free", 4) && strncmp(n, "FreeHost", 8))
		return MEM_OP_FREE;
	return MEM_OP_NONE;
}

void mem_tracker_init(struct mem_tracker *mt)
{
	memset(mt, 0, sizeof(*mt));
}

void mem_tracker_release(struct mem_tracker *mt)
{
	free(mt->blocks);
	hashmap_release(&mt->live);
	memset(mt, 0, sizeof(*mt));
}

void mem_tracker_free(struct mem_tracker *mt, uint64_t key, int64_t ts)
{
	struct hashmap_slot *s = hashmap_find(&mt->live, key);
	struct mem_block *b;

	if (!s) {
		mt->unknown_frees++;
		return;
	}
	b = &mt->blocks[s->val];
	b->t_free = ts;
	mt->in_use -= b->bytes;
	hashmap_remove(&mt->live, s);
	mt->frees++;
}

int mem_tracker_alloc(struct mem_tracker *mt, uint64_t key, uint64_t bytes, int64_t ts,
		      uint32_t site, uint32_t name)
{
	struct hashmap_slot *s;

	if (hashmap_find(&mt->live, key))
		mem_tracker_free(mt, key, ts);
	if (array_grow(&mt->blocks, &mt->cap, mt->nblocks + 1) ||
	    !(s = hashmap_put(&mt->live, key, NULL)))
		return -ENOMEM;
	s->val = mt->nblocks;
	mt->blocks[mt->nblocks++] = (struct mem_block){ key, bytes, ts, -1, site, name };
	mt->in_use += bytes;
	mt->allocs++;
	if (mt->in_use > mt->peak) {
		mt->peak = mt->in_use;
		mt->peak_ts = ts;
		mt->peak_block = mt->nblocks - 1;
	}
	return 0;
}

static const char *const mem_kinds[] = {
	"unknown", "pageable", "pinned", "device", "array", "managed", "device_static",
	"managed_static",
};

const char *mem_kind_name(unsigned kind)
{
	return kind < sizeof(mem_kinds) / sizeof(mem_kinds[0]) ? mem_kinds[kind] : "unknown";
}

unsigned mem_kind_from_name(const char *name)
{
	for (unsigned k = 0; k < sizeof(mem_kinds) / sizeof(mem_kinds[0]); k++)
		if (!strcmp(name, mem_kinds[k]))
			return k;
	return 0;
}

int mem_kind_is_device(unsigned kind)
{
	return kind == MEM_KIND_UNKNOWN || kind == MEM_KIND_DEVICE || kind == MEM_KIND_MANAGED;
}

/* Per process: does it have CUPTI memory records, and its first device. */
struct pid_info {
	uint32_t pid, device;
	int cupti;
};

struct pid_state {
	uint32_t pid, device;
	struct mem_tracker mt;
	size_t nchanges, peak_change;
};

struct mem_counting {
	struct pid_state *st;
	struct pid_info *pi;
	size_t nst, npi;
};

struct change {
	uint64_t ts, bytes;
	uint32_t st;            /* pid_state index */
	size_t nth;             /* change number within the process */
};

static int cmp_change(const void *a, const void *b)
{
	const struct change *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->st != y->st)
		return x->st < y->st ? -1 : 1;
	return (x->nth > y->nth) - (x->nth < y->nth);
}

static struct pid_info *pid_info(struct pid_info **pi, size_t *n, uint32_t pid)
{
	struct pid_info *p;

	for (size_t j = *n; j-- > 0;)
		if ((*pi)[j].pid == pid)
			return &(*pi)[j];
	p = realloc(*pi, (*n + 1) * sizeof(**pi));
	if (!p)
		return NULL;
	*pi = p;
	p = &p[(*n)++];
	*p = (struct pid_info){ pid, UINT32_MAX, 0 };
	return p;
}

/* The state of (pid, device), added if new; NULL when out of memory. */
static struct pid_state *pid_state(struct mem_counting *mc, uint32_t pid, uint32_t device)
{
	struct pid_state *s;

	for (size_t j = 0; j < mc->nst; j++)
		if (mc->st[j].pid == pid && mc->st[j].device == device)
			return &mc->st[j];
	s = realloc(mc->st, (mc->nst + 1) * sizeof(*s));
	if (!s)
		return NULL;
	mc->st = s;
	s = &s[mc->nst++];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->device = device;
	s->peak_change = SIZE_MAX;
	mem_tracker_init(&s->mt);
	return s;
}

struct mem_counting *mem_counting_new(void)
{
	return calloc(1, sizeof(struct mem_counting));
}

void mem_counting_free(struct mem_counting *mc)
{
	if (!mc)
		return;
	for (size_t j = 0; j < mc->nst; j++)
		mem_tracker_release(&mc->st[j].mt);
	free(mc->st);
	free(mc->pi);
	free(mc);
}

int mem_counting_run(struct mem_counting *mc, const struct model *m, unsigned rate,
		     struct mem_sample **out, size_t *nout)
{
	struct change *ch = NULL;
	size_t nch = 0, cap = 0, k = 0;
	int ret = -ENOMEM;

	*out = NULL;
	*nout = 0;
	for (size_t j = 0; j < mc->nst; j++)
		mc->st[j].peak_change = SIZE_MAX;
	/*
	 * A process with CUPTI memory records is counted from them alone (they
	 * see every allocation, a library's included); one without, from its
	 * allocation and free calls, on the device of its first GPU work.
	 */
	for (size_t i = 0; i < m->nev; i++) {
		const struct model_event *e = &m->ev[i];
		struct pid_info *p;

		if (e->kind == EV_API || e->kind == EV_SCOPE)
			continue;
		p = pid_info(&mc->pi, &mc->npi, e->pid);
		if (!p)
			goto out;
		if (p->device == UINT32_MAX)
			p->device = e->device;
		if (e->kind == EV_MEMORY)
			p->cupti = 1;
	}
	for (size_t i = 0; i < m->nev; i++) {
		const struct model_event *e = &m->ev[i];
		struct pid_info *p = NULL;
		struct pid_state *s;
		uint32_t device;
		uint64_t before, key, ts;
		int op = MEM_OP_NONE;

		for (size_t j = mc->npi; j-- > 0;)
			if (mc->pi[j].pid == e->pid)
				p = &mc->pi[j];
		if (e->kind == EV_API && !(p && p->cupti)) {
			op = mem_call_op(strtab_get(&m->strs, e->name));
			if ((e->fields & MF_RET) && e->ret)
				op = MEM_OP_NONE;
		} else if (e->kind == EV_MEMORY && mem_kind_is_device(e->copy_kind)) {
			op = e->gpu_kind == 1 ? MEM_OP_ALLOC : e->gpu_kind == 2 ? MEM_OP_FREE
										: MEM_OP_NONE;
		}
		if (!op)
			continue;
		device = e->kind == EV_MEMORY ? e->device
			 : p && p->device != UINT32_MAX ? p->device : 0;
		s = pid_state(mc, e->pid, device);
		if (!s)
			goto out;
		before = s->mt.in_use;
		key = op == MEM_OP_ALLOC_HANDLE || op == MEM_OP_FREE_HANDLE
		      ? e->handle | (1ULL << 63) : e->ptr;
		/* calls: memory is in use from the allocation's return */
		ts = e->kind == EV_API && (op == MEM_OP_ALLOC || op == MEM_OP_ALLOC_HANDLE)
		     ? e->ts + e->dur : e->ts;
		if (op == MEM_OP_ALLOC || op == MEM_OP_ALLOC_HANDLE) {
			if (mem_tracker_alloc(&s->mt, key, e->bytes, ts, 0, e->name))
				goto out;
		} else {
			mem_tracker_free(&s->mt, key, ts);
		}
		if (s->mt.in_use == before)
			continue;
		if (nch == cap) {
			void *q = realloc(ch, (cap = cap ? cap * 2 : 256) * sizeof(*ch));

			if (!q)
				goto out;
			ch = q;
		}
		if (s->mt.in_use == s->mt.peak && s->mt.in_use > before)
			s->peak_change = s->nchanges;
		ch[nch++] = (struct change){ ts, s->mt.in_use, (uint32_t)(s - mc->st), s->nchanges++ };
	}
	if (!nch) {
		ret = 0;
		goto out;
	}
	*out = malloc(nch * sizeof(**out));
	if (!*out)
		goto out;
	for (size_t i = 0; i < nch; i++) {
		const struct pid_state *s = &mc->st[ch[i].st];
		size_t j = ch[i].nth;

		if (rate > 1 && j % rate && j != s->nchanges - 1 && j != s->peak_change)
			continue;
		ch[k++] = ch[i];
	}
	qsort(ch, k, sizeof(*ch), cmp_change);
	for (size_t i = 0; i < k; i++)
		(*out)[i] = (struct mem_sample){ ch[i].ts, mc->st[ch[i].st].pid,
						 mc->st[ch[i].st].device, ch[i].bytes };
	*nout = k;
	ret = 0;
out:
	free(ch);
	if (ret) {
		free(*out);
		*out = NULL;
	}
	return ret;
}

int memory_counters(const struct model *m, unsigned rate, struct mem_sample **out, size_t *nout)
{
	struct mem_counting *mc = mem_counting_new();
	int ret = mc ? mem_counting_run(mc, m, rate, out, nout) : -ENOMEM;

	mem_counting_free(mc);
	return ret;
}
