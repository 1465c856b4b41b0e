// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests for the event model (user/model/model.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model_util.h"
#include "tap.h"

/*
 * model_finish() must be stable whatever qsort() it gets: glibc before
 * 2.37 happens to merge-sort (stable), later ones do not.  This qsort,
 * which the linker prefers over libc's for model.o, reverses the array and
 * then merge-sorts it, so elements the comparator calls equal come out in
 * reverse arrival order: only a real tie-break keeps them in order.
 */
static int qsort_calls;

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	char *a = base, *tmp = malloc(n * size + size), *t = tmp + n * size;

	qsort_calls++;
	if (!tmp)
		abort();
	for (size_t i = 0; i < n / 2; i++) {
		memcpy(t, a + i * size, size);
		memcpy(a + i * size, a + (n - 1 - i) * size, size);
		memcpy(a + (n - 1 - i) * size, t, size);
	}
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				if (cmp(a + j * size, a + i * size) < 0)
					memcpy(tmp + k++ * size, a + j++ * size, size);
				else
					memcpy(tmp + k++ * size, a + i++ * size, size);
			while (i < mid)
				memcpy(tmp + k++ * size, a + i++ * size, size);
			while (j < hi)
				memcpy(tmp + k++ * size, a + j++ * size, size);
		}
		memcpy(a, tmp, n * size);
	}
	free(tmp);
}

static void test_strtab(void)
{
	struct strtab t;
	uint32_t a, b, a2, e;
	char buf[32];

	strtab_init(&t);
	is_int(t.n, 1, "fresh strtab holds only the empty string");
	is_str(strtab_get(&t, 0), "", "id 0 is the empty string");
	e = strtab_intern(&t, "");
	is_int(e, 0, "interning \"\" gives id 0");
	a = strtab_intern(&t, "cuLaunchKernel");
	b = strtab_intern(&t, "cuMemcpyHtoD_v2");
	is_int(a, 1, "first string gets id 1");
	is_int(b, 2, "second string gets id 2");
	strcpy(buf, "cuLaunchKernel");
	a2 = strtab_intern(&t, buf);
	is_int(a2, a, "equal string (different pointer) gives the same id");
	is_int(t.n, 3, "no duplicate added");
	ok(strtab_get(&t, a) != buf, "strtab keeps its own copy");
	buf[0] = 'X';
	is_str(strtab_get(&t, a), "cuLaunchKernel", "id %u round-trips", a);
	is_str(strtab_get(&t, b), "cuMemcpyHtoD_v2", "id %u round-trips", b);
	is_str(strtab_get(&t, 3), "", "unknown id 3 gives \"\"");
	is_str(strtab_get(&t, 0xffffffffu), "", "unknown id UINT32_MAX gives \"\"");
	is_int(strtab_intern(&t, "cuLaunchKernel "), 3, "trailing space is a distinct string");
	strtab_release(&t);
	is_int(t.n, 0, "release empties the table");
	ok(!t.strs && !t.index.slots, "release frees the arrays");
}

static void test_strtab_many(void)
{
	enum { N = 100000 };
	struct strtab t;
	char buf[32];
	int bad_id = 0, bad_get = 0, bad_again = 0;

	strtab_init(&t);
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "kernel_%d", i);
		if (strtab_intern(&t, buf) != (uint32_t)i + 1)
			bad_id++;
	}
	is_int(bad_id, 0, "%d strings get ids 1..%d in order", N, N);
	is_int(t.n, N + 1, "table holds %d + 1 strings", N);
	ok(t.index.cap >= 2 * (size_t)N, "hash grew past twice the count (%zu slots)", t.index.cap);
	ok(t.index.cap && !(t.index.cap & (t.index.cap - 1)), "slot count is a power of two");
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "kernel_%d", i);
		if (strcmp(strtab_get(&t, i + 1), buf))
			bad_get++;
		if (strtab_intern(&t, buf) != (uint32_t)i + 1)
			bad_again++;
	}
	is_int(bad_get, 0, "all ids round-trip after rehashes");
	is_int(bad_again, 0, "re-interning finds every string after rehashes");
	is_int(t.n, N + 1, "re-interning added nothing");
	is_int(strtab_intern(&t, ""), 0, "\"\" is still id 0");
	strtab_release(&t);
}

struct evspec {
	uint64_t ts;
	uint32_t pid, tid;
};

static void test_sort(void)
{
	/* inserted in this order; bytes = insertion index + 100 */
	static const struct evspec in[] = {
		{ 30, 1, 1 }, { 10, 2, 5 }, { 10, 1, 9 }, { 20, 1, 1 },
		{ 10, 1, 9 }, { 10, 1, 3 }, { 30, 1, 1 }, { 5, 9, 9 },
		{ 10, 1, 9 }, { 30, 1, 1 }, { 10, 2, 5 }, { 30, 0, 7 },
	};
	/* expected order, as insertion indexes */
	static const int want[] = { 7, 5, 2, 4, 8, 1, 10, 3, 11, 0, 6, 9 };
	enum { N = sizeof(in) / sizeof(in[0]) };
	struct model m;
	int bad = 0;

	model_init(&m);
	for (int i = 0; i < N; i++) {
		struct model_event *e = model_add_event(&m);

		if (!e) {
			ok(0, "model_add_event");
			return;
		}
		e->ts = in[i].ts;
		e->pid = in[i].pid;
		e->tid = in[i].tid;
		e->bytes = 100 + i;
		/* seq deliberately reversed: model_finish must not trust it */
		e->seq = N - i;
	}
	is_int(m.nev, N, "%d events added", N);
	qsort_calls = 0;
	model_finish(&m);
	ok(qsort_calls >= 1, "model_finish sorted with the test's order-reversing qsort");
	is_int(m.nev, N, "model_finish keeps %d events", N);
	for (int i = 0; i < N; i++) {
		if (m.ev[i].bytes != 100 + (uint64_t)want[i]) {
			diag("position %d: bytes %llu, want %d", i,
			     (unsigned long long)m.ev[i].bytes, 100 + want[i]);
			bad++;
		}
	}
	is_int(bad, 0, "sorted by ts, pid, tid; equal keys keep insertion order");
	bad = 0;
	for (int i = 1; i < N; i++)
		if (m.ev[i - 1].ts > m.ev[i].ts)
			bad++;
	is_int(bad, 0, "timestamps non-decreasing");
	model_release(&m);
}

static void test_sort_large_stable(void)
{
	/* many equal keys: qsort alone is not stable at this size */
	enum { N = 20000 };
	struct model m;
	int bad = 0;

	model_init(&m);
	for (int i = 0; i < N; i++) {
		struct model_event *e = model_add_event(&m);

		e->ts = 1000 + (uint64_t)(i % 7);
		e->pid = 4;
		e->tid = 4 + (i % 3);
		e->bytes = i;
	}
	model_finish(&m);
	for (int i = 1; i < N; i++) {
		const struct model_event *x = &m.ev[i - 1], *y = &m.ev[i];

		if (x->ts > y->ts || (x->ts == y->ts && x->tid > y->tid) ||
		    (x->ts == y->ts && x->tid == y->tid && x->bytes >= y->bytes))
			bad++;
	}
	is_int(bad, 0, "%d events with repeated keys: sorted and stable", N);
	model_release(&m);
}

static void test_knames(void)
{
	struct model m;
	uint32_t id;
	int bad = 0;
	char buf[48];

	model_init(&m);
	is_int(model_kernel_name(&m, 1, 0x1000), 0, "no names: lookup gives 0");
	is_int(model_set_kernel_name(&m, 100, 0xabc0, "vecAdd"), 0, "set (100, 0xabc0)");
	is_int(model_set_kernel_name(&m, 200, 0xabc0, "matMul"), 0, "set (200, 0xabc0)");
	id = model_kernel_name(&m, 100, 0xabc0);
	is_str(strtab_get(&m.strs, id), "vecAdd", "(100, 0xabc0) -> vecAdd");
	id = model_kernel_name(&m, 200, 0xabc0);
	is_str(strtab_get(&m.strs, id), "matMul", "same handle in pid 200 -> matMul");
	is_int(model_kernel_name(&m, 300, 0xabc0), 0, "same handle, other pid: unknown");
	is_int(model_kernel_name(&m, 100, 0xabc8), 0, "other handle, same pid: unknown");
	is_int(model_set_kernel_name(&m, 100, 0xabc0, "vecAdd2"), 0, "overwrite (100, 0xabc0)");
	id = model_kernel_name(&m, 100, 0xabc0);
	is_str(strtab_get(&m.strs, id), "vecAdd2", "overwritten name wins");
	is_int(m.nknames, 2, "overwrite adds no entry");
	id = model_kernel_name(&m, 200, 0xabc0);
	is_str(strtab_get(&m.strs, id), "matMul", "other pid untouched by overwrite");
	ok(model_set_kernel_name(&m, 100, 0xdead, "") < 0, "empty name rejected");
	is_int(model_kernel_name(&m, 100, 0xdead), 0, "rejected name not stored");

	for (int i = 0; i < 10000; i++) {
		snprintf(buf, sizeof(buf), "k%d", i);
		if (model_set_kernel_name(&m, 1000 + (i & 3), 0x7f0000000000ULL + 64 * i, buf))
			bad++;
	}
	is_int(bad, 0, "10000 names set");
	is_int(m.nknames, 10002, "10002 names stored");
	for (int i = 0; i < 10000; i++) {
		snprintf(buf, sizeof(buf), "k%d", i);
		id = model_kernel_name(&m, 1000 + (i & 3), 0x7f0000000000ULL + 64 * i);
		if (strcmp(strtab_get(&m.strs, id), buf))
			bad++;
		if (model_kernel_name(&m, 1000 + ((i + 1) & 3), 0x7f0000000000ULL + 64 * i))
			bad++;
	}
	is_int(bad, 0, "all 10000 names found after rehash, none under the wrong pid");
	id = model_kernel_name(&m, 100, 0xabc0);
	is_str(strtab_get(&m.strs, id), "vecAdd2", "early name survives rehash");
	model_release(&m);
}

static void test_finish_resolves(void)
{
	struct model m;
	struct model_event *e;
	uint32_t preset;

	model_init(&m);
	/* a launch of 0x5000 in pid 7, named only after it was added */
	e = model_add_event(&m);
	e->ts = 20; e->pid = 7; e->tid = 7; e->fields = MF_FUNC; e->func = 0x5000;
	e->bytes = 1;
	/* same handle but no MF_FUNC: must stay unresolved */
	e = model_add_event(&m);
	e->ts = 30; e->pid = 7; e->tid = 7; e->fields = MF_HANDLE; e->func = 0x5000;
	e->bytes = 2;
	/* same handle in another pid that has no name for it */
	e = model_add_event(&m);
	e->ts = 10; e->pid = 8; e->tid = 8; e->fields = MF_FUNC; e->func = 0x5000;
	e->bytes = 3;
	/* already named: the handle's name, the best known, replaces it */
	preset = strtab_intern(&m.strs, "preset");
	e = model_add_event(&m);
	e->ts = 40; e->pid = 7; e->tid = 7; e->fields = MF_FUNC; e->func = 0x5000;
	e->kernel = preset; e->bytes = 4;

	model_set_kernel_name(&m, 7, 0x5000, "late_kernel");
	model_finish(&m);
	is_int(m.ev[0].bytes, 3, "pid 8 event first (ts 10)");
	is_int(m.ev[0].kernel, 0, "pid 8 launch stays unnamed");
	is_int(m.ev[1].bytes, 1, "pid 7 launch second");
	is_str(strtab_get(&m.strs, m.ev[1].kernel), "late_kernel",
	       "launch resolved to a name set after it was added");
	is_int(m.ev[2].bytes, 2, "non-launch third");
	is_int(m.ev[2].kernel, 0, "event without MF_FUNC not resolved");
	is_int(m.ev[3].bytes, 4, "preset event last");
	is_str(strtab_get(&m.strs, m.ev[3].kernel), "late_kernel",
	       "the handle's name replaces a name set on the event");
	ok(preset != 0, "the preset name was interned");
	model_release(&m);
}

/* An error announced during a call is that call's ret; a correlation is kept apart. */
static void test_call_errors(void)
{
	struct model m;
	struct model_event *e;

	model_init(&m);
	/* thread 7: an entry-only launch (dur 0) at 100, another at 200 */
	e = model_add_event(&m);
	e->ts = 100; e->pid = 7; e->tid = 7; e->bytes = 1;
	e = model_add_event(&m);
	e->ts = 200; e->pid = 7; e->tid = 7; e->bytes = 2;
	/* thread 8: a call probed at return, [150, 180), ret 0 */
	e = model_add_event(&m);
	e->ts = 150; e->dur = 30; e->pid = 7; e->tid = 8; e->fields = MF_RET; e->bytes = 3;
	/* the first launch failed with 1 and had correlation 5; the second is fine */
	ok(!model_add_call_error(&m, 101, 7, 7, 1), "error added");
	ok(!model_add_corr(&m, 100, 7, 7, 5), "correlation added");
	ok(!model_add_corr(&m, 200, 7, 7, 6), "correlation added");
	/* thread 8: an error after its call returned belongs to no call */
	ok(!model_add_call_error(&m, 190, 7, 8, 2), "late error added");
	/* an error on a thread with no call at all */
	ok(!model_add_call_error(&m, 50, 9, 9, 3), "orphan error added");
	ok(!model_finish(&m), "finish");
	is_int(m.ev[0].bytes, 1, "the first launch first");
	ok(m.ev[0].fields & MF_RET, "the failed launch has a ret");
	is_int(m.ev[0].ret, 1, "its ret is the announced error");
	is_int(m.ev[0].correlation, 5, "its correlation is kept");
	is_int(m.ev[1].bytes, 3, "the call of thread 8 second");
	is_int(m.ev[1].ret, 0, "an error after a call's return is not its");
	is_int(m.ev[2].bytes, 2, "the second launch last");
	ok(!(m.ev[2].fields & MF_RET), "the good launch has no ret");
	is_int(m.ev[2].correlation, 6, "and its own correlation");
	model_release(&m);
}

static void test_procs_threads(void)
{
	struct model m;
	struct model_process *p;
	struct model_thread *t;

	model_init(&m);
	p = model_process(&m, 10, "app");
	ok(p != NULL, "process 10 added");
	is_int(p->pid, 10, "process pid");
	is_str(strtab_get(&m.strs, p->name), "app", "process named app");
	is_int(p->dropped, 0, "dropped starts at 0");
	p->dropped = 5;
	p = model_process(&m, 10, NULL);
	is_int(m.nprocs, 1, "same pid: found, not added");
	is_str(strtab_get(&m.strs, p->name), "app", "NULL name keeps the old one");
	is_int(p->dropped, 5, "found entry is the same one");
	p = model_process(&m, 10, "");
	is_str(strtab_get(&m.strs, p->name), "app", "\"\" keeps the old one");
	p = model_process(&m, 10, "app2");
	is_str(strtab_get(&m.strs, p->name), "app2", "non-empty name replaces");
	p = model_process(&m, 11, NULL);
	is_int(m.nprocs, 2, "second pid added");
	is_int(p->name, 0, "added without a name: id 0");
	is_int(m.procs[0].pid, 10, "first process still pid 10");

	t = model_thread(&m, 10, 10, "main");
	ok(t != NULL, "thread added");
	is_int(t->pid, 10, "thread pid");
	is_int(t->tid, 10, "thread tid");
	is_str(strtab_get(&m.strs, t->name), "main", "thread named main");
	t = model_thread(&m, 10, 12, "worker");
	t = model_thread(&m, 11, 12, NULL);
	is_int(m.nthreads, 3, "same tid in another pid is another thread");
	is_int(t->name, 0, "(11, 12) unnamed");
	t = model_thread(&m, 10, 12, NULL);
	is_int(m.nthreads, 3, "(10, 12) found again");
	is_str(strtab_get(&m.strs, t->name), "worker", "NULL keeps the thread name");
	t = model_thread(&m, 10, 12, "");
	is_str(strtab_get(&m.strs, t->name), "worker", "\"\" keeps the thread name");
	t = model_thread(&m, 10, 12, "worker2");
	is_str(strtab_get(&m.strs, t->name), "worker2", "non-empty replaces the thread name");
	is_int(m.nthreads, 3, "still three threads");
	is_str(strtab_get(&m.strs, m.threads[0].name), "main", "(10, 10) untouched");
	for (int i = 0; i < 1000; i++)
		model_thread(&m, 20, 1000 + i, "t");
	is_int(m.nthreads, 1003, "1000 more threads (array growth)");
	t = model_thread(&m, 10, 12, NULL);
	is_str(strtab_get(&m.strs, t->name), "worker2", "old thread found after growth");
	is_int(m.nthreads, 1003, "lookup after growth adds nothing");
	model_release(&m);
}

/* An API call of pid 1 / tid 1 at ts (dur) with Python stack id py. */
static void add_py_call(struct model *m, uint64_t ts, uint64_t dur, uint64_t py)
{
	struct model_event *e = model_add_event(m);

	e->ts = ts;
	e->dur = dur;
	e->pid = 1;
	e->tid = 1;
	e->pystack = py;
}

/*
 * Scopes are [start, end) slices around the calls made in them: one that
 * ends with a zero-length call reaches 1 ns past it (or the call would lie
 * outside), one that ends with a call of duration d ends exactly then.
 */
static void test_scope_ends(void)
{
	struct model m;
	uint32_t fr[2], fn[2];
	uint64_t outer = 0, inner = 0, other = 0;
	int nscopes = 0;

	model_init(&m);
	fr[0] = strtab_intern(&m.strs, "inner (a.py:2)");
	fn[0] = strtab_intern(&m.strs, "inner (a.py)");
	fr[1] = strtab_intern(&m.strs, "outer (a.py:9)");
	fn[1] = strtab_intern(&m.strs, "outer (a.py)");
	model_add_stack(&m, 1, 1, 0, 2, fr, fn);        /* outer > inner */
	model_add_stack(&m, 1, 2, 0, 1, fr + 1, fn + 1);        /* outer alone */
	add_py_call(&m, 100, 50, 1);
	add_py_call(&m, 300, 0, 1);     /* zero-length, last in inner */
	add_py_call(&m, 400, 20, 2);    /* outer's last call */
	is_int(model_finish(&m), 0, "scopes: finish");
	for (size_t i = 0; i < m.nev; i++) {
		const struct model_event *e = &m.ev[i];

		if (e->kind != EV_SCOPE)
			continue;
		nscopes++;
		if (e->name == fn[0])
			inner = e->ts << 32 | e->dur;
		else if (e->name == fn[1])
			outer = e->ts << 32 | e->dur;
		else
			other++;
	}
	is_int(nscopes, 2, "scopes: one per function");
	is_int(other, 0, "scopes: named by their function");
	ok(inner == (100ULL << 32 | 201), "scopes: inner [100, 301) holds its zero-length call at 300");
	ok(outer == (100ULL << 32 | 320), "scopes: outer [100, 420) ends with its last call");
	model_release(&m);
}

/*
 * Attributed stacks (attrib.h): process 1, Python thread 1, workers 2
 * and 3 (3 woken by 2), helper 4 (wakes, makes no calls), workers 5 and
 * 6 that Python never wakes.  Each call's expected stack id (0: none) and
 * the thread it was walked on.
 */
static void test_attribution(void)
{
	static const struct {
		uint64_t ts;
		uint32_t tid;
		uint64_t pystack;       /* its own */
		uint64_t want;          /* the stack it ends with */
		uint32_t from;          /* stack_tid */
		const char *what;
	} calls[] = {
		{ 50, 1, 11, 11, 0, "Python's own call keeps its stack, not attributed" },
		{ 90, 2, 0, 0, 0, "a worker's call before any wake: none" },
		{ 110, 2, 0, 11, 1, "woken by Python: Python's stack at the wake" },
		{ 130, 3, 0, 11, 1, "woken by that worker: inherits it" },
		{ 150, 2, 0, 11, 1, "a helper (no calls) passes on nothing, though Python woke it" },
		{ 200, 2, 0, 12, 1, "a wake at the call's instant counts" },
		{ 210, 3, 0, 11, 1, "worker 3 keeps its own wake's until woken again" },
		{ 230, 3, 0, 12, 1, "woken again by worker 2: the new stack" },
		{ 250, 3, 0, 12, 1, "the helper's wake leaves it" },
		{ 260, 1, 12, 12, 0, "Python's own again" },
		{ 300, 5, 0, 0, 0, "never woken by Python: none" },
		{ 320, 6, 0, 0, 0, "woken by a worker that has none: none" },
		{ 340, 2, 0, 12, 1, "a wake whose stack never came leaves it" },
	};
	static const struct {
		uint64_t ts;
		uint32_t waker, tid;
		uint64_t pystack;
	} wakes[] = {
		{ 100, 1, 2, 11 }, { 120, 2, 3, 0 }, { 135, 1, 4, 12 }, { 140, 4, 2, 0 }, { 200, 1, 2, 12 },
		{ 220, 2, 3, 0 }, { 240, 4, 3, 0 }, { 310, 5, 6, 0 },
	};
	uint32_t fr[2], fn[2];
	struct model m;
	size_t k = 0, scopes_off_python = 0;

	model_init(&m);
	fr[0] = strtab_intern(&m.strs, "step (w.py:16)");
	fn[0] = strtab_intern(&m.strs, "step (w.py)");
	fr[1] = strtab_intern(&m.strs, "step (w.py:20)");
	fn[1] = strtab_intern(&m.strs, "step (w.py)");
	model_add_stack(&m, 1, 11, 0, 1, fr, fn);
	model_add_stack(&m, 1, 12, 0, 1, fr + 1, fn + 1);
	/* added out of time order: the model sorts them */
	for (size_t i = sizeof(wakes) / sizeof(wakes[0]); i-- > 0;)
		is_int(model_add_wake(&m, wakes[i].ts, 1, wakes[i].tid, wakes[i].waker,
				      wakes[i].pystack), 0, "attribution: wake added");
	/* a wake of worker 2 by Python whose stack record was lost */
	model_add_wake(&m, 330, 1, 2, 1, 99);
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		struct model_event *e = model_add_event(&m);

		e->ts = calls[i].ts;
		e->dur = 5;
		e->pid = 1;
		e->tid = calls[i].tid;
		e->pystack = calls[i].pystack;
	}
	is_int(model_finish(&m), 0, "attribution: finish");
	for (size_t i = 0; i < m.nev; i++) {
		const struct model_event *e = &m.ev[i];
		const struct model_stack *st = e->stack ? &m.stacks[e->stack - 1] : NULL;

		if (e->kind == EV_SCOPE) {
			scopes_off_python += e->tid != 1;
			continue;
		}
		if (k >= sizeof(calls) / sizeof(calls[0]))
			break;
		ok(e->ts == calls[k].ts && (st ? st->id : 0) == calls[k].want &&
		   e->stack_tid == calls[k].from, "attribution: %s", calls[k].what);
		k++;
	}
	is_int(k, sizeof(calls) / sizeof(calls[0]), "attribution: every call seen");
	is_int(scopes_off_python, 0, "attribution: no Python scopes on the workers' tracks");
	model_release(&m);
}

/*
 * A recording that joined another: GPU work of calls made before it came
 * (correlation ids below those of all its calls, an announcement without
 * its call aside) is dropped; its own calls' work is linked, work without a correlation and that of a process
 * with no announcement are kept; a kernel whose name came after it is
 * named.
 */
static void test_joined_late(void)
{
	struct model m;
	struct model_event *e;
	size_t kernels = 0, linked = 0, named = 0;

	model_init(&m);
	/* pid 7: launches at 100 and 200, announced as correlations 50 and 51 */
	e = unit_event(&m, 100, 10, 7, 7, "cuLaunchKernel");
	e = unit_event(&m, 200, 10, 7, 7, "cuLaunchKernel");
	ok(!model_add_corr(&m, 105, 7, 7, 50) && !model_add_corr(&m, 205, 7, 7, 51),
	   "correlations added");
	/* announced on a thread whose call was made before the probes: no call */
	ok(!model_add_corr(&m, 90, 7, 9, 47), "a correlation without its call added");
	/* GPU work: of calls 48 and 49 (before), 50 and 51, and memory without one */
	for (uint32_t c = 48; c <= 51; c++) {
		e = model_add_event(&m);
		e->kind = EV_KERNEL; e->ts = 300 + c; e->dur = 5; e->pid = 7;
		e->correlation = c; e->func = MODEL_GPU_NAME | 3;
	}
	e = model_add_event(&m);
	e->kind = EV_MEMORY; e->ts = 400; e->pid = 7;
	/* pid 8 announced nothing: its work stays */
	e = model_add_event(&m);
	e->kind = EV_KERNEL; e->ts = 410; e->dur = 5; e->pid = 8; e->correlation = 9;
	ok(!model_set_kernel_name(&m, 7, MODEL_GPU_NAME | 3, "late_name"), "name set late");
	ok(!model_finish(&m), "finish");
	for (size_t i = 0; i < m.nev; i++) {
		e = &m.ev[i];
		if (e->kind != EV_KERNEL)
			continue;
		kernels++;
		linked += e->link != MODEL_NO_LINK;
		named += e->kernel && !strcmp(strtab_get(&m.strs, e->kernel), "late_name");
		ok(e->pid == 8 || e->correlation >= 50, "kernel of correlation %u kept",
		   e->correlation);
	}
	is_int(kernels, 3, "pid 7's kernels 50 and 51 and pid 8's kept; 48 and 49 dropped");
	is_int(linked, 2, "pid 7's two linked to their launches");
	is_int(named, 2, "and named from the name that came after them");
	is_int(m.nev, 6, "two calls, three kernels, the memory record");
	model_release(&m);
}

int main(void)
{
	test_strtab();
	test_strtab_many();
	test_sort();
	test_sort_large_stable();
	test_knames();
	test_finish_resolves();
	test_call_errors();
	test_joined_late();
	test_procs_threads();
	test_scope_ends();
	test_attribution();
	return done_testing();
}
