// SPDX-License-Identifier: BSD-2-Clause
/* Thread states and CPU samples in the model; see thread_state.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "lib/array.h"
#include "model/model.h"
#include "model/thread_state.h"

static const char *const state_names[MS_COUNT] = {
	[MS_RUNNING] = "running", [MS_RUNNABLE] = "runnable", [MS_GIL_WAIT] = "gil_wait",
	[MS_LOCK_WAIT] = "lock_wait", [MS_IO] = "io", [MS_SLEEP] = "sleep",
	[MS_OTHER_WAIT] = "other_wait",
};

const char *model_state_name(unsigned state)
{
	return state < MS_COUNT ? state_names[state] : "unknown";
}

enum model_state model_state_of_name(const char *name)
{
	unsigned state = 0;

	while (state < MS_COUNT && strcmp(state_names[state], name))
		state++;
	return state;
}

/* x86-64 syscalls a thread commonly blocks in, and what waiting in them is. */
static const struct {
	short nr;
	uint8_t state;
	const char *name;
} syscalls[] = {
	{ 0, MS_IO, "read" }, { 1, MS_IO, "write" }, { 2, MS_IO, "open" },
	{ 7, MS_IO, "poll" }, { 17, MS_IO, "pread64" }, { 18, MS_IO, "pwrite64" },
	{ 19, MS_IO, "readv" }, { 20, MS_IO, "writev" }, { 23, MS_IO, "select" },
	{ 34, MS_SLEEP, "pause" }, { 35, MS_SLEEP, "nanosleep" }, { 42, MS_IO, "connect" },
	{ 43, MS_IO, "accept" }, { 44, MS_IO, "sendto" }, { 45, MS_IO, "recvfrom" },
	{ 46, MS_IO, "sendmsg" }, { 47, MS_IO, "recvmsg" }, { 61, MS_OTHER_WAIT, "wait4" },
	{ 74, MS_IO, "fsync" }, { 75, MS_IO, "fdatasync" }, { 202, MS_LOCK_WAIT, "futex" },
	{ 230, MS_SLEEP, "clock_nanosleep" }, { 232, MS_IO, "epoll_wait" },
	{ 247, MS_OTHER_WAIT, "waitid" }, { 257, MS_IO, "openat" }, { 270, MS_IO, "pselect6" },
	{ 271, MS_IO, "ppoll" }, { 281, MS_IO, "epoll_pwait" }, { 288, MS_IO, "accept4" },
	{ 295, MS_IO, "preadv" }, { 296, MS_IO, "pwritev" }, { 299, MS_IO, "recvmmsg" },
	{ 307, MS_IO, "sendmmsg" }, { 441, MS_IO, "epoll_pwait2" },
	{ 449, MS_LOCK_WAIT, "futex_waitv" },
};

static int syscall_index(long nr)
{
	for (size_t i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if (syscalls[i].nr == nr)
			return i;
	return -1;
}

enum model_state model_state_of_syscall(long nr)
{
	int i = syscall_index(nr);

	return i < 0 ? MS_OTHER_WAIT : syscalls[i].state;
}

const char *model_syscall_name(long nr)
{
	int i = syscall_index(nr);

	return i < 0 ? NULL : syscalls[i].name;
}

/* A state span's slice name: "Running", "GIL wait (held by 12)", "read"... */
void model_state_label(const struct model_state_span *s, char *buf, size_t len)
{
	const char *sc = s->syscall >= 0 ? model_syscall_name(s->syscall) : NULL;

	switch (s->state) {
	case MS_RUNNING:
		snprintf(buf, len, "Running");
		break;
	case MS_RUNNABLE:
		snprintf(buf, len, "Runnable");
		break;
	case MS_GIL_WAIT:
		if (s->holder)
			snprintf(buf, len, "GIL wait (held by %u)", s->holder);
		else
			snprintf(buf, len, "GIL wait");
		break;
	case MS_SLEEP:
		snprintf(buf, len, "sleep");
		break;
	default:
		if (sc)
			snprintf(buf, len, "%s", sc);
		else if (s->syscall >= 0)
			snprintf(buf, len, "syscall %d", s->syscall);
		else
			snprintf(buf, len, "blocked");
		break;
	}
}

struct by_time {
	uint64_t ts;
	size_t idx;
	int gil;                /* a GIL wait: after the others at its instant */
};

static int cmp_by_time(const void *a, const void *b)
{
	const struct by_time *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->gil != y->gil)
		return x->gil - y->gil;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int model_states_by_time(const struct model *m, size_t **order)
{
	struct by_time *bt;

	*order = NULL;
	if (!m->nstates)
		return 0;
	bt = malloc(m->nstates * sizeof(*bt));
	*order = malloc(m->nstates * sizeof(**order));
	if (!bt || !*order) {
		free(bt);
		free(*order);
		*order = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nstates; i++)
		bt[i] = (struct by_time){ m->states[i].ts, i, m->states[i].state == MS_GIL_WAIT };
	qsort(bt, m->nstates, sizeof(*bt), cmp_by_time);
	for (size_t i = 0; i < m->nstates; i++)
		(*order)[i] = bt[i].idx;
	free(bt);
	return 0;
}

/* The span of thread (pid, tid) at instant ts in m->states (by pid, tid, ts), or -1. */
static ssize_t span_at(const struct model *m, uint32_t pid, uint32_t tid, uint64_t ts)
{
	size_t lo = 0, hi = m->nstates;
	const struct model_state_span *s;

	/* the first span after (pid, tid, ts) */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		s = &m->states[mid];
		if (s->pid < pid || (s->pid == pid && (s->tid < tid || (s->tid == tid && s->ts <= ts))))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	s = &m->states[lo - 1];
	return s->pid == pid && s->tid == tid && ts - s->ts < s->dur ? (ssize_t)lo - 1 : -1;
}

int model_gil_links(const struct model *m, size_t **links)
{
	*links = NULL;
	if (!m->nstates)
		return 0;
	*links = calloc(m->nstates, sizeof(**links));
	if (!*links)
		return -ENOMEM;
	for (size_t i = 0; i < m->nstates; i++) {
		const struct model_state_span *w = &m->states[i];
		ssize_t h;

		if (w->state != MS_GIL_WAIT || !w->holder || w->holder == w->tid)
			continue;
		h = span_at(m, w->pid, w->holder, w->ts);
		if (h >= 0 && m->states[h].state != MS_GIL_WAIT)
			(*links)[i] = h + 1;
	}
	return 0;
}

int model_syscall_nr(const char *name)
{
	for (size_t i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if (!strcmp(syscalls[i].name, name))
			return syscalls[i].nr;
	return -1;
}

/* End t's open span, if any, at ts. */
static void end_open(struct model *m, struct model_thread *t, uint64_t ts)
{
	struct model_state_span *s;

	if (!t->open_state)
		return;
	s = &m->states[t->open_state - 1];
	t->open_state = 0;
	s->dur = ts > s->ts ? ts - s->ts : 0;
}

int model_thread_state(struct model *m, uint32_t pid, uint32_t tid, uint64_t ts,
		       enum model_state state, int syscall, uint32_t holder)
{
	struct model_thread *t = model_thread(m, pid, tid, NULL);
	struct model_state_span *s;

	if (!t)
		return -ENOMEM;
	if (t->open_state) {
		s = &m->states[t->open_state - 1];
		if (s->state == state && s->syscall == syscall && s->holder == holder)
			return 0;
		if (ts < s->ts)
			ts = s->ts;
		end_open(m, t, ts);
	}
	if (array_grow(&m->states, &m->cap_states, m->nstates + 1))
		return -ENOMEM;
	m->states[m->nstates] = (struct model_state_span){
		.ts = ts, .pid = pid, .tid = tid, .state = state,
		.syscall = syscall, .holder = holder,
	};
	t->open_state = ++m->nstates;
	return 0;
}

void model_state_stack(struct model *m, uint32_t pid, uint32_t tid, uint64_t pystack)
{
	const struct model_thread *t = model_find_thread(m, pid, tid);
	struct model_state_span *s = t && t->open_state ? &m->states[t->open_state - 1] : NULL;

	/* a span continued by the same state keeps where it began */
	if (s && s->state != MS_RUNNING && s->state != MS_RUNNABLE && !s->pystack)
		s->pystack = pystack;
}

int model_thread_woken(struct model *m, uint32_t pid, uint32_t tid, uint64_t ts)
{
	const struct model_thread *t = model_find_thread(m, pid, tid);

	if (t && t->open_state && m->states[t->open_state - 1].state == MS_RUNNING)
		return 0;
	return model_thread_state(m, pid, tid, ts, MS_RUNNABLE, -1, 0);
}

int model_thread_exit(struct model *m, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct model_thread *t = model_thread(m, pid, tid, NULL);

	if (!t)
		return -ENOMEM;
	end_open(m, t, ts);
	return 0;
}

void model_states_end(struct model *m, uint64_t ts)
{
	for (size_t i = 0; i < m->nthreads; i++)
		end_open(m, &m->threads[i], ts);
}

int model_add_state(struct model *m, const struct model_state_span *span)
{
	if (!model_thread(m, span->pid, span->tid, NULL) ||
	    array_grow(&m->states, &m->cap_states, m->nstates + 1))
		return -ENOMEM;
	m->states[m->nstates++] = *span;
	return 0;
}

int model_add_sample(struct model *m, const struct model_sample *s)
{
	if (array_grow(&m->samples, &m->cap_samples, m->nsamples + 1))
		return -ENOMEM;
	m->samples[m->nsamples] = *s;
	m->samples[m->nsamples].stack = 0;
	m->samples[m->nsamples++].native = 0;
	return 0;
}

uint64_t model_states_first(const struct model *m)
{
	uint64_t first = UINT64_MAX;

	for (size_t i = 0; i < m->nstates; i++)
		if (m->states[i].ts < first)
			first = m->states[i].ts;
	for (size_t i = 0; i < m->nsamples; i++)
		if (m->samples[i].ts < first)
			first = m->samples[i].ts;
	return first;
}

static int cmp_span(const void *a, const void *b)
{
	const struct model_state_span *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct model_sample *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void model_states_keep(struct model *m, const struct hashmap *pids)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nthreads; i++)
		end_open(m, &m->threads[i], 0);
	for (size_t i = 0; i < m->nstates; i++)
		if (hashmap_find(pids, m->states[i].pid))
			m->states[n++] = m->states[i];
	m->nstates = n;
	n = 0;
	for (size_t i = 0; i < m->nsamples; i++)
		if (hashmap_find(pids, m->samples[i].pid))
			m->samples[n++] = m->samples[i];
	m->nsamples = n;
}

void model_spans_sort(struct model_state_span *spans, size_t n)
{
	if (n)
		qsort(spans, n, sizeof(*spans), cmp_span);
}

void model_states_sort(struct model *m)
{
	model_spans_sort(m->states, m->nstates);
}

int model_states_finish(struct model *m, bool last)
{
	const struct model_stack *st;

	/* spans still open (no model_states_end): end where they began;
	 * a part before the last holds none (model_part.h) */
	for (size_t i = 0; last && i < m->nthreads; i++)
		end_open(m, &m->threads[i], 0);
	model_states_sort(m);
	if (m->nsamples)
		qsort(m->samples, m->nsamples, sizeof(*m->samples), cmp_sample);
	for (size_t i = 0; i < m->nstates; i++) {
		struct model_state_span *s = &m->states[i];

		st = s->pystack ? model_find_stack(m, s->pid, s->pystack) : NULL;
		s->stack = st ? st - m->stacks + 1 : 0;
	}
	for (size_t i = 0; i < m->nsamples; i++) {
		struct model_sample *s = &m->samples[i];

		st = s->pystack ? model_find_stack(m, s->pid, s->pystack) : NULL;
		s->stack = st ? st - m->stacks + 1 : 0;
		st = s->nstack ? model_find_native_stack(m, s->pid, s->nstack) : NULL;
		s->native = st ? st - m->stacks + 1 : 0;
	}
	return 0;
}

void model_states_release(struct model *m)
{
	free(m->states);
	free(m->samples);
}

size_t model_sample_name(const struct model *m, const struct model_sample *s, const char **name)
{
	const struct model_stack *st = s->stack ? &m->stacks[s->stack - 1] : NULL;
	const char *f;

	if (!st || !st->n)
		st = s->native ? &m->stacks[s->native - 1] : NULL;
	if (!st || !st->n) {
		*name = "sample";
		return 6;
	}
	/*
	 * "qualname (file:line)": up to the first " (" (a path may hold one);
	 * "symbol+0xoff (file)": up to the "+0x" (a C++ symbol may hold " ("),
	 * "0xaddr (file)" without a symbol: up to the " (".
	 */
	f = strtab_get(&m->strs, m->frames[st->first]);
	*name = f;
	if (st->native && strstr(f, "+0x"))
		return strstr(f, "+0x") - f;
	return strstr(f, " (") ? (size_t)(strstr(f, " (") - f) : strlen(f);
}
