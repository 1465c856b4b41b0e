// SPDX-License-Identifier: BSD-2-Clause
/* The event model; see model.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/array.h"
#include "model/gpu_clock.h"
#include "model/model.h"
#include "model/model_part.h"

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
	hashmap_release(&t->index);
	memset(t, 0, sizeof(*t));
}

uint32_t strtab_intern(struct strtab *t, const char *s)
{
	size_t len = strlen(s);
	uint64_t h = hashmap_hash_bytes(s, len);
	struct hashmap_slot *sl;
	char *copy;

	if (!len && t->n)
		return 0;
	for (sl = hashmap_find(&t->index, h); sl; sl = hashmap_find_next(&t->index, sl))
		if (!strcmp(t->strs[sl->val], s))
			return sl->val;
	if (array_grow(&t->strs, &t->cap, t->n + 1))
		return 0;
	copy = strdup(s);
	if (!copy)
		return 0;
	if (t->n && hashmap_add(&t->index, h, t->n)) {
		free(copy);
		return 0;
	}
	t->strs[t->n] = copy;
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
	hashmap_release(&m->kname_index);
	free(m->corrs);
	free(m->stacks);
	free(m->frames);
	free(m->funcs);
	hashmap_release(&m->stack_index);
	hashmap_release(&m->thread_index);
	model_states_release(m);
	free(m->wakes);
	model_carry_release(m->carry);
	memset(m, 0, sizeof(*m));
}

static uint64_t stack_hash(uint32_t pid, uint64_t id, int native)
{
	return hashmap_hash2(pid | (uint64_t)!!native << 32, id);
}

static const struct model_stack *find_stack(const struct model *m, uint32_t pid, uint64_t id,
					    int native)
{
	const struct hashmap *h = &m->stack_index;

	for (const struct hashmap_slot *sl = hashmap_find(h, stack_hash(pid, id, native)); sl;
	     sl = hashmap_find_next(h, sl)) {
		const struct model_stack *st = &m->stacks[sl->val];

		if (st->pid == pid && st->id == id && st->native == !!native)
			return st;
	}
	/* a later process at an ended one's pid: stacks come under the pid */
	return pid != model_real_pid(pid) ? find_stack(m, model_real_pid(pid), id, native) : NULL;
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

static int add_stack(struct model *m, uint32_t pid, uint64_t id, int native, int truncated,
		     uint32_t n, const uint32_t *frames, const uint32_t *funcs)
{
	if (find_stack(m, pid, id, native))
		return 0;
	if (array_grow(&m->stacks, &m->cap_stacks, m->nstacks + 1) ||
	    array_grow(&m->frames, &m->cap_frames, m->nframes + n) ||
	    array_grow(&m->funcs, &m->cap_funcs, m->nframes + n) ||
	    hashmap_add(&m->stack_index, stack_hash(pid, id, native), m->nstacks))
		return -ENOMEM;
	if (n) {        /* an empty stack: frames may still be NULL */
		memcpy(m->frames + m->nframes, frames, n * sizeof(*frames));
		memcpy(m->funcs + m->nframes, funcs, n * sizeof(*funcs));
	}
	m->stacks[m->nstacks++] = (struct model_stack){ .pid = pid, .n = n, .first = m->nframes,
							.truncated = !!truncated, .id = id,
							.native = !!native };
	m->nframes += n;
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
	if (array_grow(&m->corrs, &m->cap_corrs, m->ncorrs + 1))
		return -ENOMEM;
	m->corrs[m->ncorrs++] = (struct model_corr){ .ts = ts, .pid = pid, .tid = tid,
						     .result = result, .failed = 1 };
	return 0;
}

int model_add_corr(struct model *m, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t correlation)
{
	if (array_grow(&m->corrs, &m->cap_corrs, m->ncorrs + 1))
		return -ENOMEM;
	m->corrs[m->ncorrs++] = (struct model_corr){ .ts = ts, .pid = pid, .tid = tid,
						     .correlation = correlation };
	return 0;
}

struct model_event *model_add_event(struct model *m)
{
	struct model_event *e;

	if (array_grow(&m->ev, &m->cap_ev, m->nev + 1))
		return NULL;
	e = &m->ev[m->nev++];
	memset(e, 0, sizeof(*e));
	return e;
}

const struct model_process *model_find_process(const struct model *m, uint32_t pid)
{
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

struct model_process *model_process(struct model *m, uint32_t pid, const char *name)
{
	struct model_process *p = (struct model_process *)model_find_process(m, pid);

	if (!p) {
		if (array_grow(&m->procs, &m->cap_procs, m->nprocs + 1))
			return NULL;
		p = &m->procs[m->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
	}
	if (name && *name)
		p->name = strtab_intern(&m->strs, name);
	return p;
}

int model_event_pids(const struct model *m, struct hashmap *pids)
{
	for (size_t i = 0; i < m->nev; i++)
		if (!hashmap_put(pids, m->ev[i].pid, NULL))
			return -ENOMEM;
	if (m->carry) {         /* and those of parts already written */
		const struct hashmap_slot *s;

		hashmap_for_each(&m->carry->pids, s)
			if (!hashmap_put(pids, s->key, NULL))
				return -ENOMEM;
	}
	return 0;
}

const struct model_thread *model_find_thread(const struct model *m, uint32_t pid, uint32_t tid)
{
	const struct hashmap_slot *s = hashmap_find(&m->thread_index, (uint64_t)pid << 32 | tid);

	return s ? &m->threads[s->val] : NULL;
}

struct model_thread *model_thread(struct model *m, uint32_t pid, uint32_t tid, const char *name)
{
	struct hashmap_slot *s;
	struct model_thread *t;
	int added;

	if (array_grow(&m->threads, &m->cap_threads, m->nthreads + 1))
		return NULL;
	s = hashmap_put(&m->thread_index, (uint64_t)pid << 32 | tid, &added);
	if (!s)
		return NULL;
	if (added) {
		s->val = m->nthreads++;
		t = &m->threads[s->val];
		memset(t, 0, sizeof(*t));
		t->pid = pid;
		t->tid = tid;
	}
	t = &m->threads[s->val];
	if (name && *name)
		t->name = strtab_intern(&m->strs, name);
	return t;
}

static uint64_t kname_hash(uint32_t pid, uint64_t handle)
{
	return hashmap_hash2(pid, handle);
}

/* The entry of (pid, handle), or NULL. */
static struct model_kname *kname_find(const struct model *m, uint32_t pid, uint64_t handle)
{
	const struct hashmap *h = &m->kname_index;

	for (const struct hashmap_slot *sl = hashmap_find(h, kname_hash(pid, handle)); sl;
	     sl = hashmap_find_next(h, sl)) {
		struct model_kname *k = &m->knames[sl->val];

		if (k->pid == pid && k->handle == handle)
			return k;
	}
	return NULL;
}

int model_set_kernel_name(struct model *m, uint32_t pid, uint64_t handle, const char *name)
{
	uint32_t id = strtab_intern(&m->strs, name);
	struct model_kname *k;

	if (!id)
		return -EINVAL;
	k = kname_find(m, pid, handle);
	if (k) {
		k->name = id;
		return 0;
	}
	if (array_grow(&m->knames, &m->cap_knames, m->nknames + 1) ||
	    hashmap_add(&m->kname_index, kname_hash(pid, handle), m->nknames))
		return -ENOMEM;
	m->knames[m->nknames++] = (struct model_kname){ .pid = pid, .name = id, .handle = handle };
	return 0;
}

uint32_t model_kernel_name(const struct model *m, uint32_t pid, uint64_t handle)
{
	const struct model_kname *k = kname_find(m, pid, handle);

	return k ? k->name : 0;
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

static uint64_t thread_key(const struct model_event *e)
{
	return (uint64_t)e->pid << 32 | e->tid;
}

/*
 * The indexes api[0..napi) of API events, in the order of m's sorted
 * events, into (pid, tid, ts) order, the index breaking ties: a stable
 * grouping by thread, since each thread's calls are in that order
 * already.  0 or -ENOMEM.
 */
static int sort_by_thread(const struct model *m, uint32_t *api, size_t napi)
{
	struct hashmap groups;          /* thread -> its group */
	struct group { uint64_t key; size_t at; } *g = NULL;  /* count, then where it starts */
	size_t ngroups = 0, cap = 0, n = 0, cur = 0;
	uint64_t last = UINT64_MAX;
	uint32_t *out = NULL, *grp = malloc((napi ? napi : 1) * sizeof(*grp));
	int ret = grp ? 0 : -ENOMEM;

	hashmap_init(&groups);
	for (size_t k = 0; k < napi && !ret; k++) {
		uint64_t key = thread_key(&m->ev[api[k]]);
		struct hashmap_slot *s;
		int added;

		if (key != last) {
			last = key;
			if (!(s = hashmap_put(&groups, key, &added)) ||
			    (added && array_grow(&g, &cap, ngroups + 1))) {
				ret = -ENOMEM;
				break;
			}
			if (added)
				g[s->val = ngroups++] = (struct group){ key, 0 };
			cur = s->val;
		}
		grp[k] = cur;
		g[cur].at++;
	}
	if (!ret && ngroups > 1) {
		uint64_t *keys = malloc(ngroups * sizeof(*keys));

		out = malloc(napi * sizeof(*out));
		if (!keys || !out) {
			ret = -ENOMEM;
		} else {
			for (size_t i = 0; i < ngroups; i++)
				keys[i] = g[i].key;
			qsort(keys, ngroups, sizeof(*keys), array_cmp_u64);
			for (size_t i = 0; i < ngroups; i++) {
				struct group *e = &g[hashmap_find(&groups, keys[i])->val];
				size_t c = e->at;

				e->at = n;
				n += c;
			}
			for (size_t k = 0; k < napi; k++)
				out[g[grp[k]].at++] = api[k];
			memcpy(api, out, napi * sizeof(*api));
		}
		free(keys);
	}
	free(out);
	free(grp);
	free(g);
	hashmap_release(&groups);
	return ret;
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
 *
 * Taking a part (model_part.h), calls are linked again each time, and
 * not every call has arrived: one in flight is sent at its return, after
 * announcements made during it.  So the part's last entry-only call of
 * each thread (whose own announcement may come after the cutoff) is kept
 * for the next part with the announcements it took, and no other
 * entry-only call of the part takes one after the cutoff (it is of a
 * call not received yet).
 */
static int link_correlations(struct model *m, uint64_t cutoff, uint32_t **api_out,
			     size_t *napi_out)
{
	bool parted = m->carry && cutoff != UINT64_MAX;
	uint64_t later = parted ? m->carry->later_from : UINT64_MAX;
	uint32_t *api;
	size_t napi = 0, j = 0;

	api = malloc((m->nev ? m->nev : 1) * sizeof(*api));
	if (!api)
		return -ENOMEM;
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].kind == EV_API)
			api[napi++] = i;
	if (sort_by_thread(m, api, napi)) {
		free(api);
		return -ENOMEM;
	}
	for (size_t k = 0; k < napi && m->carry; k++) {
		struct model_event *e = &m->ev[api[k]];
		const struct model_event *next = k + 1 < napi ? &m->ev[api[k + 1]] : NULL;

		if (!m->read_back)      /* announcements say them again */
			e->correlation = 0;
		e->kept = parted && !e->dur && e->ts < cutoff &&
			  (!next || next->pid != e->pid || next->tid != e->tid || next->ts >= cutoff);
	}
	if (m->ncorrs)  /* m->corrs is NULL without correlations */
		qsort(m->corrs, m->ncorrs, sizeof(*m->corrs), cmp_corr);
	for (size_t k = 0; k < m->ncorrs; k++) {
		struct model_corr *c = &m->corrs[k];
		struct model_event *e;

		if (c->ts >= later) {   /* its call was set aside (model_part.c) */
			c->kept = 0;
			continue;
		}
		/* advance to the last call of this thread entered at or before c->ts */
		while (j + 1 < napi && cmp_thread_ts(m->ev[api[j + 1]].pid, m->ev[api[j + 1]].tid,
						     m->ev[api[j + 1]].ts, c->pid, c->tid, c->ts) <= 0)
			j++;
		if (!napi)
			break;
		e = &m->ev[api[j]];
		c->kept = 0;
		if (e->pid != c->pid || e->tid != c->tid || e->ts > c->ts ||
		    (e->dur && c->ts > e->ts + e->dur))
			continue;
		if (parted && c->ts >= cutoff && !e->dur && e->ts < cutoff && !e->kept)
			continue;
		c->kept = e->kept;
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
 * After a re-sort, links (indexes of API events) are stale: map old
 * positions (seq) to new ones, in m's events, in those kept for the next
 * part (whose links point into m) and in api[0..napi) (API events' indexes).
 */
static int relink(struct model *m, uint32_t *api, size_t napi)
{
	uint32_t *where = malloc((m->nev ? m->nev : 1) * sizeof(*where));
	struct model_carry *c = m->carry;

	if (!where)
		return -ENOMEM;
	for (size_t i = 0; i < m->nev; i++)
		where[m->ev[i].seq] = i;
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].link != MODEL_NO_LINK)
			m->ev[i].link = where[m->ev[i].link];
	for (size_t i = 0; c && i < c->nev; i++)
		if (c->ev[i].link != MODEL_NO_LINK)
			c->ev[i].link = where[c->ev[i].link];
	for (size_t k = 0; k < napi; k++)
		api[k] = where[api[k]];
	free(where);
	return 0;
}

static uint64_t corr_key(const struct model_event *e)
{
	return (uint64_t)e->pid << 32 | e->correlation;
}

/* (pid, correlation) -> the first of the API events api holding it */
static int index_calls(struct hashmap *calls, const struct model *m, const uint32_t *api,
		       size_t napi)
{
	if (hashmap_reserve(calls, napi))
		return -ENOMEM;
	for (size_t k = 0; k < napi; k++) {
		const struct model_event *e = &m->ev[api[k]];
		struct hashmap_slot *s;
		int added;

		if (!e->correlation)
			continue;
		s = hashmap_put(calls, corr_key(e), &added);
		if (!s)
			return -ENOMEM;
		if (added)
			s->val = api[k];
	}
	return 0;
}

/*
 * Link each GPU event to the call with its (pid, correlation), and name
 * every launch of a function handle under the GPU's name of its kernel,
 * which is complete where a lookup's may have been cut.  GPU work whose
 * call an earlier part wrote keeps the arrow it was given then.
 */
static int link_gpu(struct model *m, const uint32_t *api, size_t napi)
{
	struct hashmap calls;
	int ret;

	hashmap_init(&calls);
	ret = index_calls(&calls, m, api, napi);
	for (size_t g = 0; g < m->nev && !ret; g++) {
		struct model_event *e = &m->ev[g], *h;
		const struct hashmap_slot *c;

		/* a GPU name that came after its kernel (a recorder that joined late) */
		if (e->kind == EV_KERNEL && !e->kernel && e->func)
			e->kernel = model_kernel_name(m, e->pid, e->func);
		if (e->kind == EV_API || e->flow || !e->correlation ||
		    !(c = hashmap_find(&calls, corr_key(e))))
			continue;
		h = &m->ev[c->val];
		e->link = c->val;
		/* handle 0: a launch read back from a trace by its name alone */
		if (e->kind == EV_KERNEL && e->kernel && (h->fields & MF_FUNC) && h->func &&
		    h->kernel != e->kernel &&
		    model_set_kernel_name(m, h->pid, h->func, strtab_get(&m->strs, e->kernel)))
			ret = -ENOMEM;
	}
	hashmap_release(&calls);
	for (size_t i = 0; i < m->nev && !ret; i++) {
		struct model_event *e = &m->ev[i];
		uint32_t k;

		if (e->kind == EV_API && (e->fields & MF_FUNC) && e->func &&
		    (k = model_kernel_name(m, e->pid, e->func)))
			e->kernel = k;
	}
	return ret;
}

/* GPU work put back after its calls (gpu_clock.h), in time order again. */
static int repair_gpu_clock(struct model *m, uint32_t *api, size_t napi)
{
	uint64_t moved;
	int ret = gpu_clock_repair(m, &moved);

	if (ret || !moved)
		return ret;
	for (size_t i = 0; i < m->nev; i++)
		m->ev[i].seq = i;
	array_sort(m->ev, m->nev, sizeof(*m->ev), cmp_event);
	return relink(m, api, napi);
}

/* Count GPU events that start before the call that caused them. */
static void count_skew(struct model *m)
{
	for (size_t i = 0; i < m->nev; i++) {
		const struct model_event *e = &m->ev[i], *h;

		if (e->kind == EV_API || e->link == MODEL_NO_LINK)
			continue;
		h = &m->ev[e->link];
		if (e->ts < h->ts) {
			m->skewed++;
			if (h->ts - e->ts > m->max_skew_ns)
				m->max_skew_ns = h->ts - e->ts;
		}
	}
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
 * Leave thread w's walk: close its scopes, or, when a later part may
 * continue them, keep them open in the carry.
 */
static int leave_walk(struct model *m, struct scope_walk *w, bool last)
{
	struct model_carry *c = m->carry;
	struct hashmap_slot *s;
	int added;

	if (last || !w->n)
		return close_scopes(m, w, 0);
	s = hashmap_put(&c->walks, (uint64_t)w->pid << 32 | w->tid, &added);
	if (!s)
		return -ENOMEM;
	if (added) {
		if (array_grow(&c->walk, &c->cap_walk, c->nwalk + 1))
			return -ENOMEM;
		s->val = ++c->nwalk;
	}
	c->walk[s->val - 1] = *w;
	return 0;
}

/* Enter thread (pid, tid): its scopes kept open by an earlier part, if any. */
static void enter_walk(struct model *m, struct scope_walk *w, uint32_t pid, uint32_t tid)
{
	struct model_carry *c = m->carry;
	struct hashmap_slot *s = c ? hashmap_find(&c->walks, (uint64_t)pid << 32 | tid) : NULL;

	if (s && c->walk[s->val - 1].n) {
		*w = c->walk[s->val - 1];
		c->walk[s->val - 1].n = 0;
		return;
	}
	w->pid = pid;
	w->tid = tid;
	w->n = 0;
	w->end = 0;
}

/*
 * Walk each thread's calls in time order (the API index is sorted by
 * pid, tid, ts), keeping the functions on the stack open as scopes.
 * Scopes still open at the end are closed (last), or kept open for the
 * next part.
 */
static int derive_scopes(struct model *m, const uint32_t *api, size_t napi, bool last)
{
	struct scope_walk walk = { 0 }, *w = &walk;
	int ret = 0;

	for (size_t k = 0; k < napi && !ret; k++) {
		/* copies: closing scopes adds events, which may move m->ev */
		const struct model_event e = m->ev[api[k]];
		/* an attributed stack's functions did not run on this thread */
		const struct model_stack *st = e.stack && !e.stack_tid ? &m->stacks[e.stack - 1]
								       : NULL;
		uint32_t n = st ? (st->n < GB_SCOPE_MAX ? st->n : GB_SCOPE_MAX) : 0, same = 0;

		if (!k || e.pid != w->pid || e.tid != w->tid) {
			ret = k ? leave_walk(m, w, last) : 0;
			enter_walk(m, w, e.pid, e.tid);
		}
		/* compare root first: a stack's outermost frame is its last */
		while (same < w->n && same < n &&
		       w->func[same] == m->funcs[st->first + st->n - 1 - same])
			same++;
		if (!ret)
			ret = close_scopes(m, w, same);
		for (; w->n < n && !ret; w->n++) {
			uint32_t f = st->first + st->n - 1 - w->n;

			w->func[w->n] = m->funcs[f];
			w->frame[w->n] = m->frames[f];
			w->start[w->n] = e.ts;
		}
		/* slices are [start, end): a scope ends after a zero-length
		 * call at its last instant, so that call stays inside it */
		if (e.ts + (e.dur ? e.dur : 1) > w->end)
			w->end = e.ts + (e.dur ? e.dur : 1);
	}
	if (!ret && napi)
		ret = leave_walk(m, w, last);
	/* the last part: threads whose scopes an earlier part left open */
	for (size_t i = 0; last && m->carry && i < m->carry->nwalk && !ret; i++)
		ret = close_scopes(m, &m->carry->walk[i], 0);
	return ret;
}

/*
 * The whole second at or before the first instant of the trace (its
 * first event, or a GPU window opened before it): exporters write times
 * relative to it, so that they stay exact at any uptime.
 */
static void set_ts_base(struct model *m)
{
	uint64_t first = m->nev ? m->ev[0].ts : UINT64_MAX;    /* events are sorted */

	if (model_states_first(m) < first)
		first = model_states_first(m);
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].gpu_window_ns && m->procs[i].gpu_window_ns < first)
			first = m->procs[i].gpu_window_ns;
	m->ts_base_ns = first == UINT64_MAX ? 0 : first - first % 1000000000;
}

/*
 * Arrow ids: each call with GPU work linked to it (here, or kept for a
 * later part) gets its index + 1 after flow_base, and its work the same;
 * flow_k counts the work of each call, and ranks it.
 */
static void set_flows(struct model *m)
{
	struct model_carry *c = m->carry;

	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].kind == EV_API)
			m->ev[i].flow = m->ev[i].flow_k = 0;
	for (size_t i = 0; i < m->nev; i++) {
		struct model_event *e = &m->ev[i];

		if (e->kind != EV_API && e->link != MODEL_NO_LINK) {
			m->ev[e->link].flow = m->flow_base + e->link + 1;
			e->flow_k = m->ev[e->link].flow_k++;
		}
	}
	for (size_t i = 0; c && i < c->nev; i++) {
		struct model_event *e = &c->ev[i];

		if (e->link != MODEL_NO_LINK) {
			m->ev[e->link].flow = m->flow_base + e->link + 1;
			e->flow_k = m->ev[e->link].flow_k++;
		}
	}
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].kind != EV_API && m->ev[i].link != MODEL_NO_LINK)
			m->ev[i].flow = m->ev[m->ev[i].link].flow;
	/* work kept for a later part: its call is written now */
	for (size_t i = 0; c && i < c->nev; i++) {
		if (c->ev[i].link == MODEL_NO_LINK)
			continue;
		c->ev[i].flow = m->ev[c->ev[i].link].flow;
		c->ev[i].link = MODEL_NO_LINK;
	}
}

/*
 * Whether e is GPU work whose correlation id is below that of its
 * process's first call (first: pid -> that id; *f: the last slot found).
 */
static bool gpu_before_calls(const struct hashmap *first, const struct model_event *e,
			     const struct hashmap_slot **f)
{
	if (e->kind == EV_API || !e->correlation)
		return false;
	if (!*f || (*f)->key != e->pid)
		*f = hashmap_find(first, e->pid);
	return *f && (*f)->key == e->pid && (int32_t)(e->correlation - (uint32_t)(*f)->val) < 0;
}

/*
 * GPU work of calls made before this recording saw any call of its
 * process: a recording that joined another finds the injection library
 * collecting already and is sent the records of work queued before it
 * came (cupti/publish.h).  The driver numbers a process's calls in
 * order, so work whose correlation id is below that of every call of the
 * process here (linked to its announcement: one made before the call's
 * probe was attached has no call) is of such a call: dropped, as the
 * library drops work from before its own window, rather than shown
 * without its call.  api[0..napi) is kept pointing at the calls.
 */
static int drop_gpu_before_calls(struct model *m, uint32_t *api, size_t napi)
{
	struct hashmap first;   /* pid -> the lowest correlation of its calls */
	struct hashmap_slot *s = NULL;
	const struct hashmap_slot *f = NULL;
	uint32_t *where = NULL;
	size_t i = 0, k;
	int added, ret = -ENOMEM;

	hashmap_init(&first);
	for (size_t p = 0; p < m->nprocs; p++)
		if (m->procs[p].first_corr && hashmap_add(&first, m->procs[p].pid,
							  m->procs[p].first_corr))
			goto out;
	for (size_t j = 0; j < napi; j++) {
		const struct model_event *e = &m->ev[api[j]];

		if (!e->correlation)
			continue;
		if ((!s || s->key != e->pid) && !(s = hashmap_put(&first, e->pid, &added)))
			goto out;
		if (!s->val || (int32_t)(e->correlation - (uint32_t)s->val) < 0)
			s->val = e->correlation;
	}
	for (size_t p = 0; p < m->nprocs; p++)
		if ((f = hashmap_find(&first, m->procs[p].pid)))
			m->procs[p].first_corr = f->val;
	f = NULL;
	while (i < m->nev && !gpu_before_calls(&first, &m->ev[i], &f))
		i++;
	ret = 0;
	if (i == m->nev)        /* none to drop */
		goto out;
	where = malloc(m->nev * sizeof(*where));
	if (!where) {
		ret = -ENOMEM;
		goto out;
	}
	for (k = 0; k < i; k++)
		where[k] = k;
	for (; i < m->nev; i++) {
		if (gpu_before_calls(&first, &m->ev[i], &f)) {
			where[i] = UINT32_MAX;
			continue;
		}
		where[i] = k;
		m->ev[k++] = m->ev[i];
	}
	m->nev = k;
	for (size_t j = 0; j < napi; j++)       /* calls are all kept */
		api[j] = where[api[j]];
out:
	free(where);
	hashmap_release(&first);
	return ret;
}

/*
 * Finish m, or the part of it before cutoff when it is finished in parts
 * (m->carry set; see model_part.h).
 */
int model_finish_part(struct model *m, uint64_t cutoff)
{
	bool last = cutoff == UINT64_MAX;
	uint32_t *api = NULL;
	size_t napi = 0;
	int ret;

	for (size_t i = 0; i < m->nev; i++)
		m->ev[i].seq = i;
	if (m->nev)
		array_sort(m->ev, m->nev, sizeof(*m->ev), cmp_event);
	for (size_t i = 0; i < m->nev; i++) {
		struct model_event *e = &m->ev[i];
		const struct model_stack *st;

		e->link = MODEL_NO_LINK;
		if (e->kind != EV_API)
			continue;
		/* a call kept from an earlier part is attributed again, with
		 * the wakes known now */
		if (m->carry && e->stack_tid && !m->read_back)
			e->stack = e->stack_tid = 0;
		if (e->pystack && (st = model_find_stack(m, e->pid, e->pystack)))
			e->stack = st - m->stacks + 1;
		if (e->nstack && (st = model_find_native_stack(m, e->pid, e->nstack)))
			e->native = st - m->stacks + 1;
	}
	if (m->carry && !m->carry->base_set) {
		set_ts_base(m);
		m->carry->base_set = true;
	}
	ret = model_attribute(m) ?: link_correlations(m, cutoff, &api, &napi) ?:
	      (m->read_back ? 0 : drop_gpu_before_calls(m, api, napi)) ?:
	      link_gpu(m, api, napi) ?: repair_gpu_clock(m, api, napi);
	if (!ret && m->carry)
		ret = model_part_split(m, cutoff, api, &napi);
	if (!ret) {
		size_t before = m->nev;

		count_skew(m);
		/* scopes are new events: sort again so exporters see one timeline */
		if (m->nstacks)
			ret = derive_scopes(m, api, napi, last);
		if (!ret && m->nev > before) {
			for (size_t i = 0; i < m->nev; i++)
				m->ev[i].seq = i;
			array_sort(m->ev, m->nev, sizeof(*m->ev), cmp_event);
			ret = relink(m, NULL, 0);
		}
	}
	free(api);
	if (!ret) {
		set_flows(m);
		ret = model_states_finish(m, last);
	}
	if (!m->carry)
		set_ts_base(m);
	return ret;
}

int model_finish(struct model *m)
{
	return model_finish_part(m, UINT64_MAX);
}
