// SPDX-License-Identifier: BSD-2-Clause
/*
 * The report's table, from model events: see report_table.h.  Strings
 * move from the model's strtab to the table's once, through a map by
 * model id; each Python stack's user frames (and what each was calling)
 * are found once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/hashmap.h"
#include "lib/json_writer.h"
#include "model/cuda_calls.h"
#include "model/memory.h"
#include "model/thread_state.h"
#include "report/report_table.h"
#include "trace/schema.h"
#include "trace/trace_import.h"

/* Per-name facts, cached by table string id. */
enum { NC_KNOWN = 1, NC_SYNC = 2, NC_LAUNCH = 4, NC_NCCL = 8 };


/* s's id; on allocation failure 0, and rt_finish() fails. */
static uint32_t intern(struct rt_table *t, const char *s)
{
	uint32_t id = strtab_intern(&t->strs, s);

	if (!id && *s)
		t->nomem = true;
	return id;
}

/*
 * s as a trace holds it, ill-formed UTF-8 replaced by U+FFFD as the JSON
 * writer does, so that the report of a model and of its trace agree.
 */
static uint32_t intern_utf8(struct rt_table *t, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, k, bad;
	uint32_t id;
	char *fixed;

	while (i < n && (u[i] < 0x80 || (k = utf8_seq(u + i, n - i, &bad))))
		i += u[i] < 0x80 ? 1 : k;
	if (i == n)
		return intern(t, s);
	fixed = malloc(3 * n + 1);      /* at worst one U+FFFD per byte */
	if (!fixed) {
		t->nomem = true;
		return 0;
	}
	for (i = 0; i < n;) {
		if (u[i] < 0x80) {
			fixed[o++] = s[i++];
		} else if ((k = utf8_seq(u + i, n - i, &bad))) {
			memcpy(fixed + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(fixed + o, "\xef\xbf\xbd", 3);
			o += 3;
			i += bad;
		}
	}
	fixed[o] = 0;
	id = intern(t, fixed);
	free(fixed);
	return id;
}

/* The table's id of model string id (0 on allocation failure, see intern()). */
static uint32_t str_id(struct rt_table *t, const struct model *m, uint32_t id)
{
	if (array_grow_zeroed(&t->ids, &t->nids, id + 1)) {
		t->nomem = true;
		return 0;
	}
	if (!t->ids[id])
		t->ids[id] = intern_utf8(t, strtab_get(&m->strs, id)) + 1;
	return t->ids[id] - 1;
}

/* The file of frame f ("qualname (file:line)", or a bare file). */
static const char *frame_file(const char *f, size_t len)
{
	for (size_t i = len; i-- > 0;)
		if (f[i] == '(')
			return f + i + 1;
	return f;
}

static bool frame_is_frozen(const char *f, size_t len)
{
	return !strncmp(frame_file(f, len), "<frozen", 7);
}

bool rt_frame_is_library(const char *f, size_t len)
{
	const char *file = frame_file(f, len);

	if (frame_is_frozen(f, len))
		return true;
	/* site-packages, dist-packages and the standard library all live
	 * under .../lib/pythonX.Y/ (or .../lib64/...) */
	return memmem(file, len - (file - f), "-packages/", 10) ||
	       memmem(file, len - (file - f), "/lib/python", 11) ||
	       memmem(file, len - (file - f), "/lib64/python", 13);
}

const char *rt_frame_package(const char *f, size_t len, size_t *n)
{
	const char *file = frame_file(f, len), *end = f + len, *p, *q;

	if (frame_is_frozen(f, len))
		return NULL;
	if ((p = memmem(file, end - file, "-packages/", 10))) {
		p += 10;
	} else if ((p = memmem(file, end - file, "/lib/python", 11)) ||
		   (p = memmem(file, end - file, "/lib64/python", 13))) {
		p = memchr(p + 1, '/', end - p - 1);    /* past "/lib/pythonX.Y" */
		p = p ? memchr(p + 1, '/', end - p - 1) : NULL;
		if (!p++)
			return NULL;
	} else {
		return NULL;
	}
	for (q = p; q < end && *q != '/' && *q != ':'; q++)
		;
	*n = q - p;
	return p;
}

/*
 * Does library frame f only pass the call on to the frame under it?  A
 * closure (a decorator's wrapper: torch.optim's hooks around step(),
 * torch's _disable_dynamo around zero_grad()), a __call__ method, or
 * torch's Module._call_impl and _wrapped_call_impl.  Other private
 * methods do work of their own (transformers' Trainer._maybe_log_save_evaluate).
 */
static bool frame_passes_on(const char *f, size_t len)
{
	const char *file = frame_file(f, len), *end;

	if (file == f || !rt_frame_is_library(f, len))
		return false;
	for (end = file - 1; end > f && end[-1] == ' '; end--)  /* file - 1: its '(' */
		;
	return memmem(f, end - f, "<locals>", 8) ||
	       (end - f >= 9 && !memcmp(end - 9, ".__call__", 9)) ||
	       (end - f >= 10 && !memcmp(end - 10, "_call_impl", 10));
}

/*
 * What frame i of model stack st (innermost 0) calls, by name: the first
 * frame under it that does more than pass the call on (the model's
 * forward under Module._call_impl), else the one right under it.  0 for
 * the innermost frame.
 */
static uint32_t callee_of(struct rt_table *t, const struct model *m,
			  const struct model_stack *st, uint32_t i)
{
	const char *f;

	if (!i)
		return 0;
	for (uint32_t j = i; j-- > 0;) {
		f = strtab_get(&m->strs, m->frames[st->first + j]);
		if (!frame_passes_on(f, strlen(f)))
			return str_id(t, m, m->frames[st->first + j]);
	}
	return str_id(t, m, m->frames[st->first + i - 1]);
}

/*
 * Frames of model stack st into t->frames, outermost first, with their
 * callees: those of user code (user), else all but `<frozen ...>` ones.
 * The number added.
 */
static uint32_t add_frames(struct rt_table *t, const struct model *m,
			   const struct model_stack *st, bool user)
{
	size_t first = t->nframes;

	for (uint32_t i = st->n; i-- > 0;) {   /* m's frames are innermost first */
		uint32_t id = m->frames[st->first + i];
		const char *f = strtab_get(&m->strs, id);

		if (*f && (user ? !rt_frame_is_library(f, strlen(f)) : !frame_is_frozen(f, strlen(f)))) {
			t->callees[t->nframes] = callee_of(t, m, st, i);
			t->frames[t->nframes++] = str_id(t, m, id);
		}
	}
	return t->nframes - first;
}

/*
 * The table's stack of model stack (index + 1 in m->stacks), made once:
 * its user frames outermost first, the innermost its site, and all its
 * frames but frozen ones (rt_stack).  A stack all of library code (a job
 * installed in site-packages and run with -m, a library's own thread)
 * has those as its user frames too: its innermost is the best site there
 * is.  Index + 1 into t->stacks, 0 on allocation failure (see intern()).
 */
static uint32_t table_stack(struct rt_table *t, const struct model *m, uint32_t stack)
{
	const struct model_stack *st = &m->stacks[stack - 1];
	struct rt_stack *ts;

	if (array_grow_zeroed(&t->stkmap, &t->nstkmap, stack + 1))
		goto nomem;
	if (t->stkmap[stack])
		return t->stkmap[stack];
	if (array_grow(&t->stacks, &t->capstk, t->nstk + 1) ||
	    array_grow(&t->frames, &t->capframes, t->nframes + 2 * st->n) ||
	    array_grow(&t->callees, &t->capcallees, t->nframes + 2 * st->n))
		goto nomem;
	ts = &t->stacks[t->nstk];
	*ts = (struct rt_stack){ .first = t->nframes };
	ts->n = add_frames(t, m, st, true);
	ts->afirst = t->nframes;
	ts->an = add_frames(t, m, st, false);
	if (!ts->n) {                           /* no user frame: all of them */
		ts->n = ts->an;
	} else if (ts->an == ts->n) {           /* no library frame: one list */
		t->nframes = ts->afirst;
		ts->afirst = ts->first;
	}
	if (ts->n)
		ts->site = t->frames[ts->first + ts->n - 1];
	t->stkmap[stack] = ++t->nstk;
	return t->stkmap[stack];
nomem:
	t->nomem = true;
	return 0;
}

static uint8_t classify(struct rt_table *t, uint32_t id)
{
	const char *n;
	uint8_t c = NC_KNOWN;
	int call;

	if (array_grow_zeroed(&t->cls, &t->ncls, id + 1)) {
		t->nomem = true;
		return 0;
	}
	if (t->cls[id])
		return t->cls[id];
	n = rt_str(t, id);
	call = cuda_call_find(n);
	if (call >= 0) {
		unsigned fam = cuda_calls[call].family;

		if (fam == CF_LAUNCH || fam == CF_GRAPH)
			c |= strstr(n, "Launch") ? NC_LAUNCH : 0;
		if (fam == CF_SYNC && strstr(n, "Synchronize"))
			c |= NC_SYNC;
		if (fam == CF_MEMCPY && !strstr(n, "Async"))
			c |= NC_SYNC;
	}
	if (!strcmp(ts_kernel_cat(n), TS_CAT_NCCL))
		c |= NC_NCCL;
	t->cls[id] = c | mem_call_op(n) << 4;
	return t->cls[id];
}

static int proc_index(struct rt_table *t, uint32_t pid, uint32_t *ix)
{
	struct rt_proc *p;

	if (t->last_proc < t->nprocs && t->procs[t->last_proc].pid == pid) {
		*ix = t->last_proc;
		return 0;
	}
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid) {
			*ix = t->last_proc = i;
			return 0;
		}
	p = realloc(t->procs, (t->nprocs + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->procs = p;
	t->procs[t->nprocs] = (struct rt_proc){ .pid = pid };
	*ix = t->last_proc = t->nprocs++;
	return 0;
}

/*
 * The named processes first, in the model's order (a trace names them
 * before its events), then the others as their events come.
 */
static int seed_procs(struct rt_table *t, const struct model *m)
{
	uint32_t ix;

	t->seeded = true;
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].name && proc_index(t, m->procs[i].pid, &ix))
			return -ENOMEM;
	return 0;
}

static struct rt_event *new_row(struct rt_table *t, const struct model_event *ev)
{
	struct rt_event *r;

	if (array_grow(&t->ev, &t->cap, t->nev + 1))
		return NULL;
	r = &t->ev[t->nev++];
	memset(r, 0, sizeof(*r));
	r->ts = ev->ts;
	r->dur = ev->dur;
	r->corr = ev->correlation;
	if (proc_index(t, ev->pid, &r->proc))
		return NULL;
	if (t->nev == 1 || r->ts < t->t_first)
		t->t_first = r->ts;
	if (r->ts + r->dur > t->t_last)
		t->t_last = r->ts + r->dur;
	return r;
}

static struct rt_mem *new_mem(struct rt_table *t)
{
	if (array_grow(&t->mem, &t->capmem, t->nmem + 1))
		return NULL;
	memset(&t->mem[t->nmem], 0, sizeof(t->mem[0]));
	return &t->mem[t->nmem++];
}

/* A launch's kernel: its name, else its function handle as the trace writes it. */
static uint32_t launch_kernel(struct rt_table *t, const struct model *m,
			      const struct model_event *ev)
{
	char hex[24];

	if (ev->kernel)
		return str_id(t, m, ev->kernel);
	snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)ev->func);
	return intern(t, hex);
}

/* A device-memory call: an allocation at its end, a free at its start. */
static int add_mem_call(struct rt_table *t, const struct model_event *ev,
			const struct rt_event *r, int op)
{
	bool alloc = op == MEM_OP_ALLOC || op == MEM_OP_ALLOC_HANDLE;
	struct rt_mem *mm = new_mem(t);

	if (!mm)
		return -ENOMEM;
	mm->ts = alloc ? r->ts + r->dur : r->ts;
	mm->op = alloc ? RTM_ALLOC : RTM_FREE;
	if (op == MEM_OP_ALLOC_HANDLE || op == MEM_OP_FREE_HANDLE)
		mm->key = (ev->fields & MF_HANDLE ? ev->handle : 0) | RT_MEM_HANDLE;
	else
		mm->key = ev->fields & MF_PTR ? ev->ptr : 0;
	mm->bytes = ev->fields & MF_BYTES ? ev->bytes : 0;
	mm->stack = r->stack;
	mm->attributed = !!(r->flags & RTF_ATTRIBUTED);
	mm->name = r->name;
	mm->proc = r->proc;
	return 0;
}

/* Host call r (of ev) ran within an autograd node: note it in t->nodes. */
static int add_node(struct rt_table *t, const struct model *m, const struct model_event *ev,
		    const struct rt_event *r)
{
	struct rt_node *n;

	if (array_grow(&t->nodes, &t->capnodes, t->nnodes + 1))
		return -ENOMEM;
	n = &t->nodes[t->nnodes++];
	n->proc = r->proc;
	n->corr = r->corr;
	n->node = str_id(t, m, ev->ag_node);
	n->fwd = ev->ag_fwd ? table_stack(t, m, ev->ag_fwd) : 0;
	n->launch = r->flags & RTF_LAUNCH;
	return 0;
}

static int add_call(struct rt_table *t, const struct model *m, const struct model_event *ev)
{
	struct rt_event *r = new_row(t, ev);
	uint8_t cls;

	if (!r)
		return -ENOMEM;
	r->name = str_id(t, m, ev->name);
	r->kind = RT_API;
	r->tid = ev->tid;
	if ((ev->fields & MF_RET) && ev->ret) {
		r->flags |= RTF_FAILED;
		r->ret = ev->ret;
	}
	if (ev->fields & MF_UNFINISHED)
		r->flags |= RTF_UNFINISHED;
	if (ev->stack) {
		t->nstacks++;
		r->stack = table_stack(t, m, ev->stack);
		if (ev->stack_tid) {
			struct hashmap_slot *s = hashmap_put(&t->served,
							     (uint64_t)r->proc << 32 | r->tid, NULL);

			if (!s)
				return -ENOMEM;
			s->val = ev->stack_tid;
			r->flags |= RTF_ATTRIBUTED;
		}
	}
	cls = classify(t, r->name);
	if (cls & NC_SYNC)
		r->flags |= RTF_SYNC;
	if (cls & NC_LAUNCH) {
		r->flags |= RTF_LAUNCH;
		if (ev->fields & MF_FUNC)
			r->aux = launch_kernel(t, m, ev);
	}
	if (ev->ag_node && add_node(t, m, ev, r))
		return -ENOMEM;
	if ((cls >> 4) && !(r->flags & RTF_FAILED))
		return add_mem_call(t, ev, r, cls >> 4);
	return 0;
}

/*
 * A kernel's launch as far as its output goes: grid, block, shared memory
 * and the hash of its arguments; 0 when the arguments are not known.
 */
static uint32_t launch_identity(const struct model_event *ev)
{
	const uint32_t v[8] = { ev->grid[0], ev->grid[1], ev->grid[2], ev->block[0],
				ev->block[1], ev->block[2], ev->shared_mem, ev->args };
	uint64_t h;

	if (!ev->args)
		return 0;
	h = hashmap_hash_bytes(v, sizeof(v));
	h ^= h >> 32;
	return (uint32_t)h ? (uint32_t)h : 1;
}

/* Kernels, copies and memsets, named as the trace names them. */
static int add_gpu_work(struct rt_table *t, const struct model *m, const struct model_event *ev)
{
	struct rt_event *r = new_row(t, ev);
	char name[32];

	if (!r)
		return -ENOMEM;
	if (ev->kind == EV_KERNEL) {
		r->name = ev->kernel ? str_id(t, m, ev->kernel) : intern(t, TS_NAME_KERNEL);
		r->kind = classify(t, r->name) & NC_NCCL ? RT_NCCL : RT_KERNEL;
		r->aux = launch_identity(ev);
	} else if (ev->kind == EV_MEMCPY) {
		snprintf(name, sizeof(name), TS_NAME_MEMCPY, ts_copy_kind_name(ev->gpu_kind));
		r->name = intern(t, name);
		r->kind = RT_MEMCPY;
	} else {
		r->name = intern(t, TS_NAME_MEMSET);
		r->kind = RT_MEMSET;
	}
	r->device = ev->device;
	r->tid = ev->gpu_stream;
	return 0;
}

/*
 * A CUPTI memory record: kept when it allocates or frees device or
 * managed memory (memory.h) as the trace names its kind.
 */
static int add_gpu_memory(struct rt_table *t, const struct model_event *ev)
{
	unsigned kind = mem_kind_from_name(mem_kind_name(ev->copy_kind));
	struct rt_mem *mm;

	if ((ev->gpu_kind != 1 && ev->gpu_kind != 2) || !mem_kind_is_device(kind))
		return 0;
	mm = new_mem(t);
	if (!mm || proc_index(t, ev->pid, &mm->proc))
		return -ENOMEM;
	mm->ts = ev->ts;
	mm->op = ev->gpu_kind == 1 ? RTM_ALLOC : RTM_FREE;
	mm->key = ev->ptr;
	mm->bytes = ev->bytes;
	mm->corr = ev->correlation;
	mm->device = ev->device;
	mm->gpu = 1;
	/* until the call with its correlation id names it */
	mm->name = intern(t, ev->gpu_kind == 1 ? TS_NAME_ALLOC : TS_NAME_FREE);
	return 0;
}

void rt_init(struct rt_table *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	strtab_init(&t->strs);
	t->path = strdup(path);
}

int rt_add(struct rt_table *t, const struct model *m, const struct model_event *ev)
{
	if (!t->seeded && seed_procs(t, m))
		return -ENOMEM;
	switch (ev->kind) {
	case EV_API:
		return add_call(t, m, ev);
	case EV_KERNEL:
	case EV_MEMCPY:
	case EV_MEMSET:
		return add_gpu_work(t, m, ev);
	case EV_MEMORY:
		return add_gpu_memory(t, ev);
	}
	return 0;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct rt_event *x = a, *y = b;

	return (x->ts > y->ts) - (x->ts < y->ts);
}

static const struct rt_table *sort_t;

/* host calls with a correlation id, by (proc, corr) */
static int cmp_corr(const void *a, const void *b)
{
	const struct rt_event *x = &sort_t->ev[*(const uint32_t *)a];
	const struct rt_event *y = &sort_t->ev[*(const uint32_t *)b];

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return (x->corr > y->corr) - (x->corr < y->corr);
}

/* Give each CUPTI memory record the site and name of the call with its
 * correlation id (cuMemAlloc, or the library call that allocated). */
static int mem_records_sites(struct rt_table *t)
{
	uint32_t *ix;
	size_t n = 0;
	bool any = false;

	for (size_t i = 0; i < t->nmem && !any; i++)
		any = t->mem[i].gpu && t->mem[i].corr;
	if (!any)
		return 0;
	ix = malloc((t->nev + 1) * sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < t->nev; i++)
		if (t->ev[i].kind == RT_API && t->ev[i].corr)
			ix[n++] = i;
	sort_t = t;
	qsort(ix, n, sizeof(*ix), cmp_corr);
	for (size_t i = 0; i < t->nmem; i++) {
		struct rt_mem *m = &t->mem[i];
		size_t lo = 0, hi = n;

		if (!m->gpu || !m->corr)
			continue;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			const struct rt_event *e = &t->ev[ix[mid]];

			if (e->proc < m->proc || (e->proc == m->proc && e->corr < m->corr))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && t->ev[ix[lo]].proc == m->proc && t->ev[ix[lo]].corr == m->corr) {
			m->stack = t->ev[ix[lo]].stack;
			m->attributed = !!(t->ev[ix[lo]].flags & RTF_ATTRIBUTED);
			m->name = t->ev[ix[lo]].name;
		}
	}
	free(ix);
	return 0;
}

/* Process names (a trace may name a process after its events), drops, missing calls. */
static int finish_procs(struct rt_table *t, const struct model *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nprocs; i++) {
		const struct model_process *p = &m->procs[i];

		for (size_t k = 0; k < t->nprocs && p->name; k++)
			if (t->procs[k].pid == p->pid)
				t->procs[k].name = str_id(t, m, p->name);
		n += !!p->missed;
	}
	t->dropped = m->dropped_total;
	if (!n)
		return 0;
	t->missed = calloc(2 * n, sizeof(*t->missed));
	if (!t->missed)
		return -ENOMEM;
	for (size_t i = 0; i < m->nprocs; i++) {
		const struct model_process *p = &m->procs[i];

		if (!p->missed)
			continue;
		t->missed[2 * t->nmissed] = p->pid;
		t->missed[2 * t->nmissed++ + 1] = str_id(t, m, p->missed);
	}
	return 0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct rt_sample *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

/* m's thread states (already by pid, tid, ts) and samples. */
static int copy_states(struct rt_table *t, const struct model *m)
{
	t->states = calloc(m->nstates + 1, sizeof(*t->states));
	t->samples = calloc(m->nsamples + 1, sizeof(*t->samples));
	if (!t->states || !t->samples)
		return -ENOMEM;
	for (size_t i = 0; i < m->nstates; i++) {
		const struct model_state_span *s = &m->states[i];
		uint32_t k = s->stack ? table_stack(t, m, s->stack) : 0;

		t->states[t->nstates++] = (struct rt_state){ .ts = s->ts, .dur = s->dur, .pid = s->pid,
							     .tid = s->tid, .state = s->state,
							     .stack = k };
	}
	for (size_t i = 0; i < m->nsamples; i++) {
		const struct model_sample *s = &m->samples[i];
		uint32_t k = s->stack ? table_stack(t, m, s->stack) : 0;

		t->samples[t->nsamples++] = (struct rt_sample){ .ts = s->ts, .pid = s->pid,
								.tid = s->tid, .stack = k,
								.gc = s->flags & MODEL_SAMPLE_GC };
	}
	if (t->nsamples)
		qsort(t->samples, t->nsamples, sizeof(*t->samples), cmp_sample);
	return 0;
}

int rt_finish(struct rt_table *t, const struct model *m)
{
	bool sorted = true;
	int ret;

	if (!t->seeded && seed_procs(t, m))
		return -ENOMEM;
	ret = finish_procs(t, m);
	if (!ret)
		ret = copy_states(t, m);
	if (ret || t->nomem)
		return ret ? ret : -ENOMEM;
	for (size_t i = 1; i < t->nev && sorted; i++)
		sorted = t->ev[i].ts >= t->ev[i - 1].ts;
	if (!sorted)
		qsort(t->ev, t->nev, sizeof(*t->ev), cmp_ev);
	free(t->ids);
	free(t->cls);
	free(t->stkmap);
	t->ids = NULL;
	t->cls = NULL;
	t->stkmap = NULL;
	t->nids = t->ncls = t->nstkmap = 0;
	return mem_records_sites(t);
}

/* The events of an open import into t; -errno with err set. */
static int load_events(struct rt_table *t, struct trace_import *ti, struct model *m,
		       char *err, size_t errlen)
{
	struct model_event ev;
	int ret;

	while ((ret = trace_import_next(ti, &ev)) > 0)
		if ((ret = rt_add(t, m, &ev))) {
			snprintf(err, errlen, "%s: %s", t->path, strerror(-ret));
			return ret;
		}
	if (ret)
		snprintf(err, errlen, "%s", trace_import_errmsg(ti));
	return ret;
}

int rt_load(struct rt_table *t, const char *path, char *err, size_t errlen)
{
	struct trace_import ti;
	struct model m;         /* strings, processes and stacks; no events */
	int ret;

	rt_init(t, path);
	model_init(&m);
	ret = trace_import_open(&ti, path, &m);
	if (ret)
		snprintf(err, errlen, "%s", trace_import_errmsg(&ti));
	else
		ret = load_events(t, &ti, &m, err, errlen);
	trace_import_close(&ti);
	if (!ret && ((ret = model_states_finish(&m, true)) || (ret = rt_finish(t, &m))))
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	model_release(&m);
	return ret;
}

void rt_release(struct rt_table *t)
{
	strtab_release(&t->strs);
	free(t->missed);
	free(t->ev);
	free(t->mem);
	free(t->nodes);
	free(t->procs);
	free(t->path);
	free(t->stacks);
	free(t->frames);
	free(t->callees);
	free(t->states);
	free(t->samples);
	free(t->ids);
	free(t->cls);
	free(t->stkmap);
	hashmap_release(&t->served);
	memset(t, 0, sizeof(*t));
}
