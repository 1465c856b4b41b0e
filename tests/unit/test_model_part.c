// SPDX-License-Identifier: BSD-2-Clause
/*
 * A model finished in parts (user/model/model_part.c, the Chrome
 * exporter's parts) against the same model finished whole.
 *
 * A recording is simulated in the order a recorder receives it: a Python
 * thread's launches (each announced while it runs, sent at its return),
 * GPU work delivered in batches tens of ms late, allocations and frees,
 * a worker without Python woken by the main thread (attributed stacks),
 * thread states (GIL waits linked to their holder), CPU samples, a long sync every 50 steps, and Python
 * functions that stay on the stack across every part (main, train).
 *
 *	test_model_part [DIR [MEMORY_RATE]]
 *
 * writes DIR (default: a new one in /tmp, removed after) /whole.json and
 * whole.pftrace (fed whole, model_finish()) and DIR/parts.json and
 * parts.pftrace (fed in chunks, a part taken after each, PARTS_LAG behind
 * the latest arrival, or the entry of the earliest call in flight then,
 * as the recorder does; every third part 90 ms behind, so that the calls
 * after its first 40 ms are set aside while it is finished), and checks
 * what can be told in C: the parts, the
 * event counts, the ids.  Launches are entry-only (announced after they are
 * sent); a 15 ms copy and a 30 ms sync are in flight across cutoffs, the
 * copy announced while in flight, after an entry-only call without one.
 * t0167 then compares each pair event by event (tests/check_parts.py, the
 * .pftrace files read back by gpubpf convert) and checks the .pftrace
 * files with Perfetto's importer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sink.h"
#include "model/model.h"
#include "model/model_part.h"
#include "trace/export.h"
#include "model_util.h"
#include "tap.h"

#define PID 100
#define MAIN 101
#define WORKER 102
#define LOADER 103
#define SLOW 104                /* launches once every 70 steps, every other one failing */
#define STEPS 400
#define STEP_NS 1000000ULL
#define T0 5000000000123ULL
#define PARTS_LAG 10000000ULL   /* calls but the long ones, and GPU work, arrive within it */
#define PARTS_LAG_LONG 90000000ULL /* every third part's: calls well after its cutoff
				      are set aside while it is finished */

enum item_kind { IT_CALL, IT_CORR, IT_GPU, IT_STATE, IT_SAMPLE, IT_WAKE, IT_END };

/* Something the recorder receives, at arrival. */
struct item {
	uint64_t arrival;
	int kind;
	struct model_event ev;  /* IT_CALL, IT_GPU */
	uint64_t ts;            /* IT_CORR, IT_STATE, IT_SAMPLE, IT_WAKE */
	uint32_t tid, corr, waker, state;
	int32_t result;         /* IT_CORR: a failed call's announcement, not 0 */
	uint64_t pystack;
	uint32_t seq;
};

static struct item *items;
static size_t nitems, capitems;
static const char *kernel_names[] = { "fwd_kernel<float, 128>", "bwd_kernel<float, 128>",
				      "sgd_kernel<float>", "load_kernel" };

static struct item *item(uint64_t arrival, int kind)
{
	if (nitems == capitems) {
		capitems = capitems ? 2 * capitems : 4096;
		items = realloc(items, capitems * sizeof(*items));
		if (!items) {
			printf("Bail out! out of memory\n");
			exit(1);
		}
	}
	memset(&items[nitems], 0, sizeof(items[nitems]));
	items[nitems].arrival = arrival;
	items[nitems].kind = kind;
	items[nitems].seq = nitems;
	return &items[nitems++];
}

/* A call (sent at its return) announcing corr (0: none) during it; and its GPU work. */
static void call(uint64_t ts, uint64_t dur, uint32_t tid, int call_kind, uint64_t pystack,
		 uint32_t corr, uint64_t gpu_arrival)
{
	struct item *it = item(ts + dur, IT_CALL), *c;
	struct model_event *e = &it->ev;

	e->ts = ts;
	e->dur = dur;
	e->pid = PID;
	e->tid = tid;
	e->pystack = pystack;
	e->kind = EV_API;
	e->correlation = 0;
	e->call_id = call_kind;         /* the name, set when fed */
	if (call_kind < 4 || call_kind == 7)    /* entry-only: sent at entry */
		it->arrival = ts;
	if (call_kind < 4) {            /* a launch of kernel call_kind */
		e->fields = MF_FUNC | MF_GRID | MF_BLOCK | MF_STREAM | MF_RET;
		e->func = 0x7000 + call_kind;
		e->grid[0] = 64;
		e->block[0] = 128;
		e->stream = 0x50;
	} else if (call_kind == 4 || call_kind == 5) {  /* cuMemAlloc_v2 / cuMemFree_v2 */
		e->fields = MF_PTR | MF_RET | (call_kind == 4 ? MF_BYTES : 0);
		e->ptr = 0x100000 + (ts / STEP_NS % 64) * 0x1000;
		e->bytes = 4096 * (1 + ts / STEP_NS % 7);
	} else if (call_kind == 7) {    /* cuEventRecord */
		e->fields = MF_HANDLE | MF_STREAM;
		e->handle = 0xe0;
	} else if (call_kind == 8) {    /* cuMemcpyDtoH_v2 */
		e->fields = MF_PTR | MF_BYTES | MF_RET;
		e->ptr = 0x200000;
		e->bytes = 4;
	} else {                        /* cuCtxSynchronize */
		e->fields = MF_RET;
	}
	if (corr) {             /* announced inside the call, after its entry */
		c = item(ts + 1000, IT_CORR);
		c->ts = ts + 1000;
		c->tid = tid;
		c->corr = corr;
	}
	if (corr && call_kind < 4) {
		struct item *g = item(gpu_arrival, IT_GPU);

		g->ev = (struct model_event){
			.ts = ts + 2 * STEP_NS, .dur = 300000, .pid = PID, .kind = EV_KERNEL,
			.correlation = corr, .device = 0, .gpu_stream = tid == LOADER ? 9 : 7,
			.grid = { 64, 1, 1 }, .block = { 128, 1, 1 }, .registers = 32,
		};
		g->ev.call_id = call_kind;
	}
	if (corr && call_kind == 8) {   /* the copy ran at the end of the call */
		struct item *g = item(ts + dur + 100000, IT_GPU);

		g->ev = (struct model_event){
			.ts = ts + dur - 5000, .dur = 1000, .pid = PID, .kind = EV_MEMCPY,
			.correlation = corr, .device = 0, .gpu_stream = 7, .bytes = 4,
			.gpu_kind = 2,
		};
	}
}

/* holder: of the GIL, for MS_GIL_WAIT */
static void state_held(uint64_t ts, uint32_t tid, int st, uint32_t holder)
{
	struct item *it = item(ts, IT_STATE);

	it->ts = ts;
	it->tid = tid;
	it->state = st;
	it->waker = holder;
}

static void state(uint64_t ts, uint32_t tid, int st)
{
	state_held(ts, tid, st, 0);
}

/* The recording, in the order its items arrive. */
static void make_items(void)
{
	uint32_t corr = 1;

	for (int s = 0; s < STEPS; s++) {
		uint64_t t = T0 + s * STEP_NS;
		/* GPU work comes in batches of 5 steps, 3 ms after the batch */
		uint64_t gpu_at = T0 + (s / 5 * 5 + 5) * STEP_NS + 3 * STEP_NS;
		/* the phase's stack: forward, backward, step; every 100 steps train() is left */
		uint64_t py = s % 100 == 99 ? 4 : 1 + s % 3;

		state(t, MAIN, MS_RUNNING);
		for (int k = 0; k < 3; k++)
			call(t + 10000 + k * 100000, 0, MAIN, py < 4 ? (int)py - 1 : 2, py,
			     corr++, gpu_at);
		if (s % 5 == 0)
			call(t + 400000, 30000, MAIN, 4, py, 0, 0);
		if (s % 5 == 2)
			call(t + 400000, 15000, MAIN, 5, py, 0, 0);
		/* the main thread wakes the worker, which launches for it */
		{
			struct item *w = item(t + 500000, IT_WAKE);

			w->ts = t + 500000;
			w->tid = WORKER;
			w->waker = MAIN;
			w->pystack = py;
		}
		state(t + 500000, WORKER, MS_RUNNABLE);
		state(t + 510000, WORKER, MS_RUNNING);
		call(t + 520000, 0, WORKER, 1, 0, corr++, gpu_at);
		state_held(t + 600000, WORKER, MS_GIL_WAIT, MAIN);
		if (s % 50 == 49) {     /* a long sync, sent 30 ms after it began */
			call(t + 650000, 30 * STEP_NS, MAIN, 6, py, 0, 0);
			state(t + 650000, MAIN, MS_LOCK_WAIT);
		} else if (s % 50 == 20) {      /* .item(): a 15 ms copy after an event record */
			call(t + 640000, 0, MAIN, 7, py, 0, 0);
			call(t + 650000, 15 * STEP_NS, MAIN, 8, py, corr++, 0);
			state(t + 650000, MAIN, MS_LOCK_WAIT);
		} else {
			state(t + 700000, MAIN, MS_IO);
		}
		if (s % 2 == 0) {
			struct item *sm = item(t + 300000, IT_SAMPLE);

			sm->ts = t + 300000;
			sm->tid = MAIN;
			sm->pystack = py;
		}
		/*
		 * A thread idle for longer than a part's calls set aside: its
		 * launch before a cutoff is in flight (entry-only), its next one
		 * and that one's announcement (of a failure, every other time)
		 * set aside, and the failure is the later call's.
		 */
		if (s % 70 == 3) {
			size_t at = nitems;     /* the call's item, then its announcement's */

			call(t + 300000, 0, SLOW, 0, 0, corr++, gpu_at);
			items[at].ev.fields &= ~MF_RET;         /* known from its announcement */
			if (s % 140 == 73)
				items[at + 1].result = 700;     /* CUDA_ERROR_ILLEGAL_ADDRESS */
		}
		if (s % 4 == 1) {       /* the loader's copy-in, on its own stream */
			state(t + 200000, LOADER, MS_RUNNING);
			state_held(t + 202000, LOADER, MS_GIL_WAIT, MAIN);
			state(t + 206000, LOADER, MS_RUNNING);
			call(t + 210000, 0, LOADER, 3, 5, corr++, gpu_at);
			state(t + 250000, LOADER, MS_SLEEP);
		}
	}
	item(T0 + (STEPS + 60) * STEP_NS, IT_END);
}

/* This process's open file descriptors. */
static int cmp_arrival(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static const char *call_names[] = { "cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernel",
				    "cuLaunchKernel", "cuMemAlloc_v2", "cuMemFree_v2",
				    "cuCtxSynchronize", "cuEventRecord", "cuMemcpyDtoH_v2" };

/* Stacks: 1 forward, 2 backward, 3 step (under train, main), 4 main alone; 5 the loader's. */
static void add_stacks(struct model *m)
{
	static const char *fr[][4] = {
		{ "forward (t.py:30)", "train (t.py:20)", "main (t.py:10)" },
		{ "backward (t.py:40)", "train (t.py:21)", "main (t.py:10)" },
		{ "step (t.py:50)", "train (t.py:22)", "main (t.py:10)" },
		{ "main (t.py:11)" },
		{ "load (t.py:60)", "loader (t.py:70)" },
	};
	static const char *fn[][4] = {
		{ "forward (t.py)", "train (t.py)", "main (t.py)" },
		{ "backward (t.py)", "train (t.py)", "main (t.py)" },
		{ "step (t.py)", "train (t.py)", "main (t.py)" },
		{ "main (t.py)" },
		{ "load (t.py)", "loader (t.py)" },
	};
	static const uint32_t n[] = { 3, 3, 3, 1, 2 };

	for (int i = 0; i < 5; i++) {
		uint32_t f[4], g[4];

		for (uint32_t k = 0; k < n[i]; k++) {
			f[k] = strtab_intern(&m->strs, fr[i][k]);
			g[k] = strtab_intern(&m->strs, fn[i][k]);
		}
		model_add_stack(m, PID, i + 1, 0, n[i], f, g);
	}
}

static void feed(struct model *m, const struct item *it)
{
	struct model_event *e;
	struct model_sample s = { 0 };

	switch (it->kind) {
	case IT_CALL:
	case IT_GPU:
		e = model_add_event(m);
		*e = it->ev;
		if (it->kind == IT_CALL) {
			e->name = strtab_intern(&m->strs, call_names[it->ev.call_id]);
			e->call_id = 0;
		} else {
			e->kernel = strtab_intern(&m->strs, kernel_names[it->ev.call_id]);
			e->call_id = 0;
		}
		break;
	case IT_CORR:
		if (it->result)
			model_add_call_error(m, it->ts, PID, it->tid, it->result);
		else
			model_add_corr(m, it->ts, PID, it->tid, it->corr);
		break;
	case IT_STATE:
		model_thread_state(m, PID, it->tid, it->ts, it->state,
				   it->state == MS_GIL_WAIT ? 202 : -1, it->waker);
		break;
	case IT_SAMPLE:
		s.ts = it->ts;
		s.pid = PID;
		s.tid = it->tid;
		s.pystack = it->pystack;
		model_add_sample(m, &s);
		break;
	case IT_WAKE:
		model_add_wake(m, it->ts, PID, it->tid, it->waker, it->pystack);
		break;
	case IT_END:
		model_states_end(m, it->arrival);
		break;
	}
}

static void setup(struct model *m)
{
	model_init(m);
	model_process(m, PID, "python3");
	model_thread(m, PID, MAIN, "python3");
	model_thread(m, PID, WORKER, "worker");
	model_thread(m, PID, LOADER, "loader");
	model_thread(m, PID, SLOW, "slow");
	add_stacks(m);
	/* the lookup's name is cut; the GPU's is whole */
	model_set_kernel_name(m, PID, 0x7000, "fwd_kernel<flo");
	m->realtime_offset_ns = 1000;
	snprintf(m->host, sizeof(m->host), "unit");
}

int main(int argc, char **argv)
{
	struct export_opts opts = { .mem_sample_rate = argc > 2 ? atoi(argv[2]) : 0 };
	/* whole.json, parts.json, whole.pftrace, parts.pftrace */
	static const char *const names[4] = { "whole.json", "parts.json", "whole.pftrace",
					      "parts.pftrace" };
	struct export_parts *p[2];
	struct model whole, m;
	struct sink out;
	char path[4][512], err[512];
	size_t next = 0;
	uint64_t parts = 0, gpu_flows = 0, inflight = 0, aside = 0, aside_parts = 0;
	int ret;

	if (argc < 2 && unit_mkdtemp("parts")) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	for (int f = 0; f < 4; f++)
		snprintf(path[f], sizeof(path[f]), "%s/%s", argc > 1 ? argv[1] : unit_dir, names[f]);
	make_items();
	qsort(items, nitems, sizeof(*items), cmp_arrival);

	setup(&whole);
	for (size_t i = 0; i < nitems; i++)
		feed(&whole, &items[i]);
	ok(model_finish(&whole) == 0, "whole: finished");
	ok(export_file(&whole, &opts, path[0], err, sizeof(err)) == 0, "whole: JSON written");
	ok(export_file(&whole, &opts, path[2], err, sizeof(err)) == 0, "whole: .pftrace written");
	for (size_t i = 0; i < whole.nev; i++)
		gpu_flows += whole.ev[i].kind != EV_API && whole.ev[i].flow;

	setup(&m);
	ok(export_parts_open(&p[0], path[1], &opts) == 0, "parts: JSON open");
	ok(export_parts_open(&p[1], path[3], &opts) == 0, "parts: .pftrace open");
	/* a part after every 200 items, as the recorder does past its memory */
	for (size_t i = 0; i < nitems; i++) {
		feed(&m, &items[i]);
		if (i + 1 - next == 200 && i + 1 < nitems && items[i].kind != IT_END) {
			uint64_t now = items[i].arrival;
			uint64_t cut = now - (parts % 3 == 2 ? PARTS_LAG_LONG : PARTS_LAG);

			/* calls entered and not sent yet */
			for (size_t k = i + 1; k < nitems; k++)
				if (items[k].kind == IT_CALL && items[k].ev.ts <= now &&
				    items[k].ev.ts < cut)
					cut = items[k].ev.ts;

			next = i + 1;
			ret = model_part_take(&m, cut);
			if (!ret) {
				aside += m.carry->nlater;
				aside_parts += m.carry->nlater > 0;
				for (size_t k = 0; k < m.nev; k++)
					if (m.ev[k].ts >= cut && m.ev[k].kind == EV_API)
						ret = -EINVAL;
				inflight += cut < now - (parts % 3 == 2 ? PARTS_LAG_LONG : PARTS_LAG);
				ret = ret ?: export_parts_add(p[0], &m) ?: export_parts_add(p[1], &m) ?:
				      model_part_next(&m);
			}
			if (ret) {
				printf("not ok - part at item %zu: %s\n", i, strerror(-ret));
				return 1;
			}
			parts++;
		}
	}
	/* runs merged twice on the way (16 into 1) */
	ok(parts >= 33, "parts: %llu taken before the last", (unsigned long long)parts);
	ok(open_fds() < 3 + 2 * 16, "parts: their runs merged as they come (%d files open)",
	   open_fds());
	ok(inflight >= 2, "parts: %llu cut before a call in flight", (unsigned long long)inflight);
	ok(aside_parts >= 10 && aside >= aside_parts * 20,
	   "parts: %llu set calls aside while finished, %llu calls in all",
	   (unsigned long long)aside_parts, (unsigned long long)aside);
	ok(model_finish(&m) == 0, "parts: the last finished");
	for (int f = 0; f < 2; f++) {
		ret = sink_open(&out, path[2 * f + 1]) ?: export_parts_finish(p[f], &m, &out) ?:
		      sink_commit(&out);
		ok(ret == 0, "parts: %s written (%s)", names[2 * f + 1], ret ? strerror(-ret) : "ok");
	}
	ok(m.carry->events + m.nev == whole.nev, "as many events: %llu + %zu, whole %zu",
	   (unsigned long long)m.carry->events, m.nev, whole.nev);
	ok(m.skewed == whole.skewed, "as many skewed GPU events: %llu",
	   (unsigned long long)m.skewed);
	ok(m.ts_base_ns == whole.ts_base_ns, "the same ts_base_ns: %llu",
	   (unsigned long long)m.ts_base_ns);
	ok(gpu_flows >= STEPS * 4 + STEPS / 4 + STEPS / 50, "the whole model links its GPU work: %llu",
	   (unsigned long long)gpu_flows);
	ok(m.flow_base > m.carry->events, "arrow ids of later parts after the earlier parts'");
	export_parts_free(p[0]);
	export_parts_free(p[1]);
	model_release(&m);
	model_release(&whole);
	free(items);
	if (argc < 2) {
		for (int f = 0; f < 4; f++)
			remove(path[f]);
		remove(unit_dir);
	}
	return done_testing();
}
