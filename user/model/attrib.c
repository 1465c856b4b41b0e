// SPDX-License-Identifier: BSD-2-Clause
/* Attributed stacks: calls of threads without Python; see attrib.h. */
#include <errno.h>
#include <stdlib.h>
#include "lib/array.h"
#include "lib/hashmap.h"
#include "model/model.h"
#include "model/model_part.h"

int model_add_wake(struct model *m, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t waker,
		   uint64_t pystack)
{
	if (array_grow(&m->wakes, &m->cap_wakes, m->nwakes + 1))
		return -ENOMEM;
	m->wakes[m->nwakes] = (struct model_wake){
		.ts = ts, .pid = pid, .tid = tid, .waker = waker, .pystack = pystack,
		.seq = m->nwakes,
	};
	m->nwakes++;
	return 0;
}

static int cmp_wake_time(const void *a, const void *b)
{
	const struct model_wake *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_wake_thread(const void *a, const void *b)
{
	const struct model_wake *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return cmp_wake_time(a, b);
}

static uint64_t thread_key(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

/*
 * In time order, each thread's attribution after each of its wakes:
 * the waker's stack, else the attribution the waker had then if it makes
 * driver calls itself (a worker), else unchanged.  A helper thread that
 * makes none (a driver's, a stream's in the simulated driver) serves
 * every thread and passes nothing on.  Attributions are (stack, thread
 * walked on) pairs, one word in cur.
 */
static int sweep_wakes(struct model *m)
{
	/* callers: the threads with driver calls, earlier parts' included */
	struct hashmap cur, own, *callers = m->carry ? &m->carry->callers : &own;
	int ret = 0, added;

	hashmap_init(&cur);
	hashmap_init(&own);
	for (size_t i = 0; i < m->nev && !ret; i++)
		if (m->ev[i].kind == EV_API &&
		    !hashmap_put(callers, thread_key(m->ev[i].pid, m->ev[i].tid), &added))
			ret = -ENOMEM;
	qsort(m->wakes, m->nwakes, sizeof(*m->wakes), cmp_wake_time);
	for (size_t i = 0; i < m->nwakes && !ret; i++) {
		struct model_wake *w = &m->wakes[i];
		const struct model_stack *st = w->pystack ? model_find_stack(m, w->pid, w->pystack)
							  : NULL;
		const struct hashmap_slot *from;
		struct hashmap_slot *to;
		uint64_t a = 0;

		if (w->resolved)
			a = (uint64_t)w->stack << 32 | w->from;
		else if (st)
			a = (uint64_t)(st - m->stacks + 1) << 32 | w->waker;
		else if (hashmap_find(callers, thread_key(w->pid, w->waker)) &&
			 (from = hashmap_find(&cur, thread_key(w->pid, w->waker))))
			a = from->val;
		to = hashmap_put(&cur, thread_key(w->pid, w->tid), &added);
		if (!to) {
			ret = -ENOMEM;
			break;
		}
		if (added)
			to->val = 0;
		if (a || w->resolved)
			to->val = a;
		w->stack = to->val >> 32;
		w->from = (uint32_t)to->val;
	}
	hashmap_release(&cur);
	hashmap_release(&own);
	return ret;
}

/* The latest wake of (pid, tid) at or before ts, in wakes sorted by thread; NULL if none. */
static const struct model_wake *wake_before(const struct model *m, uint32_t pid, uint32_t tid,
					    uint64_t ts)
{
	size_t lo = 0, hi = m->nwakes;

	/* the first wake after (pid, tid, ts) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct model_wake *w = &m->wakes[mid];

		if (w->pid < pid || (w->pid == pid && (w->tid < tid || (w->tid == tid && w->ts <= ts))))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || m->wakes[lo - 1].pid != pid || m->wakes[lo - 1].tid != tid)
		return NULL;
	return &m->wakes[lo - 1];
}

int model_attribute(struct model *m)
{
	int ret;

	if (!m->nwakes)
		return 0;
	ret = sweep_wakes(m);
	if (ret)
		return ret;
	qsort(m->wakes, m->nwakes, sizeof(*m->wakes), cmp_wake_thread);
	for (size_t i = 0; i < m->nev; i++) {
		struct model_event *e = &m->ev[i];
		const struct model_wake *w;

		if (e->kind != EV_API || e->pystack || e->stack)
			continue;
		w = wake_before(m, e->pid, e->tid, e->ts);
		if (w && w->stack) {
			e->stack = w->stack;
			e->stack_tid = w->from;
		}
	}
	return 0;
}
