// SPDX-License-Identifier: BSD-2-Clause
/* The event model; see model.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model/model.h"

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

#define HASH_SEED 14695981039346656037ULL

/* Grow an array of elem-sized items so that it holds at least want. */
static int grow(void **arr, size_t *cap, size_t want, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *p;

	if (want <= *cap)
		return 0;
	while (ncap < want)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

void strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	strtab_intern(t, "");
}

void strtab_release(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static int strtab_rehash(struct strtab *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 256;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t id = 1; id < t->n; id++) {
		size_t i = hash_bytes(t->strs[id], strlen(t->strs[id]), HASH_SEED) & (n - 1);

		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = id;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = n;
	return 0;
}

uint32_t strtab_intern(struct strtab *t, const char *s)
{
	size_t len = strlen(s), i;
	char *copy;

	if (!len && t->n)
		return 0;
	if ((t->n + 1) * 2 > t->nslots && strtab_rehash(t))
		return 0;
	i = hash_bytes(s, len, HASH_SEED) & (t->nslots - 1);
	for (; t->slots[i]; i = (i + 1) & (t->nslots - 1))
		if (!strcmp(t->strs[t->slots[i]], s))
			return t->slots[i];
	if (grow((void **)&t->strs, &t->cap, t->n + 1, sizeof(*t->strs)))
		return 0;
	copy = strdup(s);
	if (!copy)
		return 0;
	t->strs[t->n] = copy;
	if (t->n)
		t->slots[i] = t->n;
	return t->n++;
}

const char *strtab_get(const struct strtab *t, uint32_t id)
{
	return id < t->n ? t->strs[id] : "";
}

void model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	strtab_init(&m->strs);
}

void model_release(struct model *m)
{
	strtab_release(&m->strs);
	free(m->ev);
	free(m->threads);
	free(m->procs);
	free(m->knames);
	free(m->kname_slots);
	free(m->corrs);
	free(m->stacks);
	free(m->frames);
	free(m->funcs);
	free(m->stack_slots);
	model_states_release(m);
	memset(m, 0, sizeof(*m));
}

static size_t stack_slot(uint32_t pid, uint64_t id, int native, size_t nslots)
{
	uint64_t key[2] = { pid | (uint64_t)!!native << 32, id };

	return hash_bytes(key, sizeof(key), HASH_SEED) & (nslots - 1);
}

static const struct model_stack *find_stack(const struct model *m, uint32_t pid, uint64_t id,
					    int native)
{
	if (!m->nstack_slots)
		return NULL;
	for (size_t i = stack_slot(pid, id, native, m->nstack_slots); m->stack_slots[i];
	     i = (i + 1) & (m->nstack_slots - 1)) {
		const struct model_stack *st = &m->stacks[m->stack_slots[i] - 1];

		if (st->pid == pid && st->id == id && st->native == !!native)
			return st;
	}
	return NULL;
}

const struct model_stack *model_find_stack(const struct model *m, uint32_t pid, uint64_t id)
{
	return find_stack(m, pid, id, 0);
}

const struct model_stack *model_find_native_stack(const struct model *m, uint32_t pid,
						  uint64_t id)
{
	return find_stack(m, pid, id, 1);
}

static int stack_rehash(struct model *m)
{
	size_t n = m->nstack_slots ? m->nstack_slots * 2 : 256;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t k = 0; k < m->nstacks; k++) {
		size_t i = stack_slot(m->stacks[k].pid, m->stacks[k].id, m->stacks[k].native, n);

		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = k + 1;
	}
	free(m->stack_slots);
	m->stack_slots = slots;
	m->nstack_slots = n;
	return 0;
}

static int add_stack(struct model *m, uint32_t pid, uint64_t id, int native, int truncated,
		     uint32_t n, const uint32_t *frames, const uint32_t *funcs)
{
	size_t i;

	if (find_stack(m, pid, id, native))
		return 0;
	if ((m->nstacks + 1) * 2 > m->nstack_slots && stack_rehash(m))
		return -ENOMEM;
	if (grow((void **)&m->stacks, &m->cap_stacks, m->nstacks + 1, sizeof(*m->stacks)) ||
	    grow((void **)&m->frames, &m->cap_frames, m->nframes + n, sizeof(*m->frames)) ||
	    grow((void **)&m->funcs, &m->cap_funcs, m->nframes + n, sizeof(*m->funcs)))
		return -ENOMEM;
	memcpy(m->frames + m->nframes, frames, n * sizeof(*frames));
	memcpy(m->funcs + m->nframes, funcs, n * sizeof(*funcs));
	m->stacks[m->nstacks] = (struct model_stack){ .pid = pid, .n = n, .first = m->nframes,
						      .truncated = !!truncated, .id = id,
						      .native = !!native };
	m->nframes += n;
	for (i = stack_slot(pid, id, native, m->nstack_slots); m->stack_slots[i];
	     i = (i + 1) & (m->nstack_slots - 1))
		;
	m->stack_slots[i] = ++m->nstacks;
	return 0;
}

int model_add_stack(struct model *m, uint32_t pid, uint64_t id, int truncated, uint32_t n,
		    const uint32_t *frames, const uint32_t *funcs)
{
	return add_stack(m, pid, id, 0, truncated, n, frames, funcs);
}

int model_add_native_stack(struct model *m, uint32_t pid, uint64_t id, uint32_t n,
			   const uint32_t *frames)
{
	return add_stack(m, pid, id, 1, 0, n, frames, frames);
}

int model_add_call_error(struct model *m, uint64_t ts, uint32_t pid, uint32_t tid, int32_t result)
{
	if (grow((void **)&m->corrs, &m->cap_corrs, m->ncorrs + 1, sizeof(*m->corrs)))
		return -ENOMEM;
	m->corrs[m->ncorrs++] = (struct model_corr){ .ts = ts, .pid = pid, .tid = tid,
						     .result = result, .failed = 1 };
	return 0;
}

int model_add_corr(struct model *m, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t correlation)
{
	if (grow((void **)&m->corrs, &m->cap_corrs, m->ncorrs + 1, sizeof(*m->corrs)))
		return -ENOMEM;
	m->corrs[m->ncorrs++] = (struct model_corr){ .ts = ts, .pid = pid, .tid = tid,
						     .correlation = correlation };
	return 0;
}

struct model_event *model_add_event(struct model *m)
{
	struct model_event *e;

	if (grow((void **)&m->ev, &m->cap_ev, m->nev + 1, sizeof(*m->ev)))
		return NULL;
	e = &m->ev[m->nev++];
	memset(e, 0, sizeof(*e));
	return e;
}

struct model_process *model_process(struct model *m, uint32_t pid, const char *name)
{
	struct model_process *p = NULL;

	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].pid == pid)
			p = &m->procs[i];
	if (!p) {
		if (grow((void **)&m->procs, &m->cap_procs, m->nprocs + 1, sizeof(*m->procs)))
			return NULL;
		p = &m->procs[m->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
	}
	if (name && *name)
		p->name = strtab_intern(&m->strs, name);
	return p;
}

struct model_thread *model_thread(struct model *m, uint32_t pid, uint32_t tid, const char *name)
{
	struct model_thread *t = NULL;

	for (size_t i = m->nthreads; i-- > 0;)
		if (m->threads[i].tid == tid && m->threads[i].pid == pid) {
			t = &m->threads[i];
			break;
		}
	if (!t) {
		if (grow((void **)&m->threads, &m->cap_threads, m->nthreads + 1, sizeof(*m->threads)))
			return NULL;
		t = &m->threads[m->nthreads++];
		memset(t, 0, sizeof(*t));
		t->pid = pid;
		t->tid = tid;
	}
	if (name && *name)
		t->name = strtab_intern(&m->strs, name);
	return t;
}

static size_t kname_slot(const struct model *m, uint32_t pid, uint64_t handle)
{
	uint64_t key[2] = { pid, handle };

	return hash_bytes(key, sizeof(key), HASH_SEED) & (m->nkname_slots - 1);
}

static int kname_rehash(struct model *m)
{
	size_t n = m->nkname_slots ? m->nkname_slots * 2 : 256;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	free(m->kname_slots);
	m->kname_slots = slots;
	m->nkname_slots = n;
	for (size_t k = 0; k < m->nknames; k++) {
		size_t i = kname_slot(m, m->knames[k].pid, m->knames[k].handle);

		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = k + 1;
	}
	return 0;
}

/* Slot holding (pid, handle), or the empty slot where it would go. */
static size_t kname_find(const struct model *m, uint32_t pid, uint64_t handle)
{
	size_t i = kname_slot(m, pid, handle);

	for (; m->kname_slots[i]; i = (i + 1) & (m->nkname_slots - 1)) {
		const struct model_kname *k = &m->knames[m->kname_slots[i] - 1];

		if (k->pid == pid && k->handle == handle)
			break;
	}
	return i;
}

int model_set_kernel_name(struct model *m, uint32_t pid, uint64_t handle, const char *name)
{
	uint32_t id = strtab_intern(&m->strs, name);
	size_t i;

	if (!id)
		return -EINVAL;
	if ((m->nknames + 1) * 2 > m->nkname_slots && kname_rehash(m))
		return -ENOMEM;
	i = kname_find(m, pid, handle);
	if (m->kname_slots[i]) {
		m->knames[m->kname_slots[i] - 1].name = id;
		return 0;
	}
	if (grow((void **)&m->knames, &m->cap_knames, m->nknames + 1, sizeof(*m->knames)))
		return -ENOMEM;
	m->knames[m->nknames] = (struct model_kname){ .pid = pid, .name = id, .handle = handle };
	m->kname_slots[i] = ++m->nknames;
	return 0;
}

uint32_t model_kernel_name(const struct model *m, uint32_t pid, uint64_t handle)
{
	size_t i;

	if (!m->nkname_slots)
		return 0;
	i = kname_find(m, pid, handle);
	return m->kname_slots[i] ? m->knames[m->kname_slots[i] - 1].name : 0;
}

static int cmp_event(const void *a, const void *b)
{
	const struct model_event *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	/* a scope opens before the calls inside it, outer scopes first */
	if ((x->kind == EV_SCOPE) != (y->kind == EV_SCOPE))
		return x->kind == EV_SCOPE ? -1 : 1;
	if (x->kind == EV_SCOPE && x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Order of API events and announcements within a thread, for linking. */
static int cmp_thread_ts(uint32_t pa, uint32_t ta, uint64_t sa, uint32_t pb, uint32_t tb,
			 uint64_t sb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return sa < sb ? -1 : sa > sb;
}

static const struct model *sort_model;  /* qsort has no context argument */

static int cmp_api_index(const void *a, const void *b)
{
	const struct model_event *x = &sort_model->ev[*(const uint32_t *)a];
	const struct model_event *y = &sort_model->ev[*(const uint32_t *)b];
	int c = cmp_thread_ts(x->pid, x->tid, x->ts, y->pid, y->tid, y->ts);

	return c ? c : (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

static int cmp_corr(const void *a, const void *b)
{
	const struct model_corr *x = a, *y = b;

	return cmp_thread_ts(x->pid, x->tid, x->ts, y->pid, y->tid, y->ts);
}

/*
 * Each announcement (correlation id or error) belongs to the latest call
 * its thread entered before it: the marker fires inside the call.  Both lists are sorted by
 * (pid, tid, ts), so one merge-like pass pairs them.
 */
static int link_correlations(struct model *m, uint32_t **api_out, size_t *napi_out)
{
	uint32_t *api;
	size_t napi = 0, j = 0;

	api = malloc((m->nev ? m->nev : 1) * sizeof(*api));
	if (!api)
		return -ENOMEM;
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].kind == EV_API)
			api[napi++] = i;
	sort_model = m;
	qsort(api, napi, sizeof(*api), cmp_api_index);
	if (m->ncorrs)  /* m->corrs is NULL without correlations */
		qsort(m->corrs, m->ncorrs, sizeof(*m->corrs), cmp_corr);
	for (size_t k = 0; k < m->ncorrs; k++) {
		const struct model_corr *c = &m->corrs[k];
		struct model_event *e;

		/* advance to the last call of this thread entered at or before c->ts */
		while (j + 1 < napi && cmp_thread_ts(m->ev[api[j + 1]].pid, m->ev[api[j + 1]].tid,
						     m->ev[api[j + 1]].ts, c->pid, c->tid, c->ts) <= 0)
			j++;
		if (!napi)
			break;
		e = &m->ev[api[j]];
		if (e->pid != c->pid || e->tid != c->tid || e->ts > c->ts ||
		    (e->dur && c->ts > e->ts + e->dur))
			continue;
		if (!c->failed) {
			e->correlation = c->correlation;
		} else if (!(e->fields & MF_RET)) {
			/* an entry-only call: its error is known from the injection library */
			e->ret = c->result;
			e->fields |= MF_RET;
		}
	}
	*api_out = api;
	*napi_out = napi;
	return 0;
}

/*
 * After a re-sort, GPU events' links (indexes of API events) are stale:
 * map old positions (seq) to new ones.
 */
static int relink(struct model *m)
{
	uint32_t *where = malloc((m->nev ? m->nev : 1) * sizeof(*where));

	if (!where)
		return -ENOMEM;
	for (size_t i = 0; i < m->nev; i++)
		where[m->ev[i].seq] = i;
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].link != MODEL_NO_LINK)
			m->ev[i].link = where[m->ev[i].link];
	free(where);
	return 0;
}

static size_t corr_slot(uint32_t pid, uint32_t corr, size_t nslots)
{
	uint64_t key[1] = { (uint64_t)pid << 32 | corr };

	return hash_bytes(key, sizeof(key), HASH_SEED) & (nslots - 1);
}

/* Open scopes of one thread while its calls are walked in time order. */
struct scope_walk {
	uint32_t pid, tid;
	uint32_t n;             /* open scopes, outermost first */
	uint32_t func[GB_SCOPE_MAX], frame[GB_SCOPE_MAX];
	uint64_t start[GB_SCOPE_MAX];
	uint64_t end;           /* end of the last call seen */
};

/* Close the scopes from depth keep on, at the end of the last call. */
static int close_scopes(struct model *m, struct scope_walk *w, uint32_t keep)
{
	while (w->n > keep) {
		struct model_event *e = model_add_event(m);

		if (!e)
			return -ENOMEM;
		w->n--;
		e->kind = EV_SCOPE;
		e->pid = w->pid;
		e->tid = w->tid;
		e->ts = w->start[w->n];
		e->dur = w->end - w->start[w->n];
		e->name = w->func[w->n];
		e->stack = w->frame[w->n];
		e->depth = w->n;
		e->link = MODEL_NO_LINK;
	}
	return 0;
}

/*
 * Walk each thread's calls in time order (the API index is sorted by
 * pid, tid, ts), keeping the functions on the stack open as scopes.
 */
static int derive_scopes(struct model *m, const uint32_t *api, size_t napi)
{
	struct scope_walk w = { 0 };
	int ret = 0;

	for (size_t k = 0; k < napi && !ret; k++) {
		/* copies: closing scopes adds events, which may move m->ev */
		const struct model_event e = m->ev[api[k]];
		const struct model_stack *st = e.stack ? &m->stacks[e.stack - 1] : NULL;
		uint32_t n = st ? (st->n < GB_SCOPE_MAX ? st->n : GB_SCOPE_MAX) : 0, same = 0;

		if (e.pid != w.pid || e.tid != w.tid) {
			ret = close_scopes(m, &w, 0);
			w.pid = e.pid;
			w.tid = e.tid;
			w.end = 0;
		}
		/* compare root first: a stack's outermost frame is its last */
		while (same < w.n && same < n && w.func[same] == m->funcs[st->first + st->n - 1 - same])
			same++;
		if (!ret)
			ret = close_scopes(m, &w, same);
		for (; w.n < n && !ret; w.n++) {
			uint32_t f = st->first + st->n - 1 - w.n;

			w.func[w.n] = m->funcs[f];
			w.frame[w.n] = m->frames[f];
			w.start[w.n] = e.ts;
		}
		/* slices are [start, end): a scope ends after a zero-length
		 * call at its last instant, so that call stays inside it */
		if (e.ts + (e.dur ? e.dur : 1) > w.end)
			w.end = e.ts + (e.dur ? e.dur : 1);
	}
	return ret ? ret : close_scopes(m, &w, 0);
}

/*
 * The whole second at or before the first instant of the trace (its
 * first event, or a GPU window opened before it): exporters write times
 * relative to it, so that they stay exact at any uptime.
 */
static void set_ts_base(struct model *m)
{
	uint64_t first = m->nev ? m->ev[0].ts : UINT64_MAX;

	if (model_states_first(m) < first)
		first = model_states_first(m);
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].gpu_window_ns && m->procs[i].gpu_window_ns < first)
			first = m->procs[i].gpu_window_ns;
	m->ts_base_ns = first == UINT64_MAX ? 0 : first - first % 1000000000;
}

int model_finish(struct model *m)
{
	uint32_t *api = NULL, *slots = NULL;
	size_t napi = 0, nslots = 16;
	int ret;

	for (size_t i = 0; i < m->nev; i++)
		m->ev[i].seq = i;
	if (m->nev)
		qsort(m->ev, m->nev, sizeof(*m->ev), cmp_event);
	for (size_t i = 0; i < m->nev; i++) {
		struct model_event *e = &m->ev[i];
		const struct model_stack *st;

		e->link = MODEL_NO_LINK;
		if (e->kind == EV_API && e->pystack &&
		    (st = model_find_stack(m, e->pid, e->pystack)))
			e->stack = st - m->stacks + 1;
		if (e->kind == EV_API && e->nstack &&
		    (st = model_find_native_stack(m, e->pid, e->nstack)))
			e->native = st - m->stacks + 1;
	}
	ret = link_correlations(m, &api, &napi);
	if (ret)
		return ret;
	/* (pid, correlation) -> API event */
	while (nslots < napi * 2)
		nslots *= 2;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots) {
		free(api);
		return -ENOMEM;
	}
	for (size_t k = 0; k < napi; k++) {
		const struct model_event *e = &m->ev[api[k]];
		size_t i;

		if (!e->correlation)
			continue;
		for (i = corr_slot(e->pid, e->correlation, nslots); slots[i]; i = (i + 1) & (nslots - 1))
			;
		slots[i] = api[k] + 1;
	}
	for (size_t g = 0; g < m->nev; g++) {
		struct model_event *e = &m->ev[g], *h = NULL;

		if (e->kind == EV_API || !e->correlation)
			continue;
		for (size_t i = corr_slot(e->pid, e->correlation, nslots); slots[i];
		     i = (i + 1) & (nslots - 1)) {
			struct model_event *c = &m->ev[slots[i] - 1];

			if (c->pid == e->pid && c->correlation == e->correlation) {
				h = c;
				e->link = slots[i] - 1;
				break;
			}
		}
		if (!h)
			continue;
		if (e->ts < h->ts) {
			m->skewed++;
			if (h->ts - e->ts > m->max_skew_ns)
				m->max_skew_ns = h->ts - e->ts;
		}
		/*
		 * The GPU's kernel name is complete (a lookup's may have been
		 * cut): it names the launch's function handle from now on.
		 */
		if (e->kind == EV_KERNEL && e->kernel && (h->fields & MF_FUNC) &&
		    h->kernel != e->kernel &&
		    model_set_kernel_name(m, h->pid, h->func, strtab_get(&m->strs, e->kernel))) {
			free(slots);
			free(api);
			return -ENOMEM;
		}
	}
	/* every launch of a handle under its best name */
	for (size_t i = 0; i < m->nev; i++) {
		struct model_event *e = &m->ev[i];

		uint32_t k;

		if (e->kind == EV_API && (e->fields & MF_FUNC) &&
		    (k = model_kernel_name(m, e->pid, e->func)))
			e->kernel = k;
	}
	free(slots);
	/* scopes are new events: sort again so exporters see one timeline */
	if (m->nstacks) {
		size_t before = m->nev;

		ret = derive_scopes(m, api, napi);
		if (!ret && m->nev > before) {
			for (size_t i = 0; i < m->nev; i++)
				m->ev[i].seq = i;
			qsort(m->ev, m->nev, sizeof(*m->ev), cmp_event);
			ret = relink(m);
		}
	}
	free(api);
	if (!ret)
		ret = model_states_finish(m);
	set_ts_base(m);
	return ret;
}
