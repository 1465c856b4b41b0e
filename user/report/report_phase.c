// SPDX-License-Identifier: BSD-2-Clause
/*
 * The training loop of a thread, found from its Python stacks, and the
 * anatomy of its steps: how much GPU and host time each phase of the
 * loop body takes.
 *
 * The loop frame: going from the outermost user frame inwards, the
 * function that at least 80% of the thread's calls with a stack (of those
 * still under the frames above) run under, until the first such function
 * whose line differs between calls: its lines are the statements of the
 * loop body, and each is a phase (named by the function called on it,
 * library code or not: the line's callee in rt_table, past frames that
 * only pass the call on).  When the steps found from it do not hold
 * (report_iter.c: they must cover half the launches), the
 * search goes on inwards from its commonest line: a run() whose set-up
 * and tear-down lines surround the one line calling train_step() has its
 * loop in train_step().  A call under the loop frame belongs to the phase
 * of the line it is under; any other call is outside any phase.
 *
 * Anatomy, per step [s, e) (report_iter.c finds the steps): a phase's GPU
 * time is the time of the GPU work its launches started; its host time is
 * the thread's time from the end of its previous call (or s) to the end
 * of each of the phase's calls, and the phases' host times add up to the
 * step.  Between two calls, the time the thread ran (its thread states)
 * goes to the phases its CPU samples there were taken in, in proportion
 * to their number, and the time it waited to the phase of the line it
 * blocked in (a line that makes no call, such as data loading, gets its
 * time so); the rest of the gap, and all of a gap without samples or
 * states, counts in the phase of the call it led to.
 * The time after the step's last call counts so in the phase that starts
 * the next step.  Phases are listed by their line in the loop function,
 * outside any phase last; lines with no call nor sample in any step (the
 * loop function's own set-up) are left out.
 *
 * The calls of worker threads with attributed stacks walked on the thread
 * (rt_served(): an autograd engine's, for the thread in loss.backward())
 * count as the thread's own: for the loop frame and the phases, and in
 * the phase and step where they fall, their launches, GPU work and host
 * time (the thread waits for its workers).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/hashmap.h"
#include "report/report.h"

#define LOOP_SHARE 0.8

/*
 * The index in t->frames of the frame at depth (outermost 0) of stack id
 * (index + 1) among its user frames, or all its frames: UINT32_MAX none.
 */
static uint32_t frame_index(const struct rt_table *t, bool all, uint32_t stack, uint32_t depth)
{
	const struct rt_stack *s;

	if (!stack)
		return UINT32_MAX;
	s = &t->stacks[stack - 1];
	if (all)
		return depth < s->an ? s->afirst + depth : UINT32_MAX;
	return depth < s->n ? s->first + depth : UINT32_MAX;
}

/* The frame at depth of stack id among the frames lp searches, 0 if none. */
static uint32_t frame_at(const struct rt_table *t, const struct rep_loop *lp, uint32_t stack,
			 uint32_t depth)
{
	uint32_t k = frame_index(t, lp->all, stack, depth);

	return k == UINT32_MAX ? 0 : t->frames[k];
}

/* Do frames a and b ("qualname (file:line)") run the same function? */
static bool same_function(const struct rt_table *t, uint32_t a, uint32_t b)
{
	const char *x = rt_str(t, a), *y = rt_str(t, b);
	const char *cx = strrchr(x, ':'), *cy = strrchr(y, ':');
	size_t nx = cx ? (size_t)(cx - x) : strlen(x), ny = cy ? (size_t)(cy - y) : strlen(y);

	return a == b || (a && b && nx == ny && !memcmp(x, y, nx));
}

struct loop_stack {
	uint32_t stack;
	uint64_t count;         /* calls */
	bool in;                /* still under the frames chosen so far */
};

/* The host calls made for thread tid of proc (rt_served()) by stack; *n distinct stacks. */
static struct loop_stack *call_stacks(const struct rt_table *t, uint32_t proc, uint32_t tid,
				      size_t *n)
{
	struct hashmap m;
	struct loop_stack *w = NULL;
	size_t cap = 0;

	*n = 0;
	hashmap_init(&m);
	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i];
		struct hashmap_slot *s;
		int added;

		if (e->proc != proc || e->kind != RT_API || !e->stack || rt_served(t, e) != tid)
			continue;
		s = hashmap_put(&m, e->stack, &added);
		if (!s || (added && array_grow(&w, &cap, *n + 1)))
			goto nomem;
		if (added) {
			s->val = (*n)++;
			w[s->val] = (struct loop_stack){ .stack = e->stack, .in = true };
		}
		w[s->val].count++;
	}
	hashmap_release(&m);
	if (!w)
		w = calloc(1, sizeof(*w));
	return w;
nomem:
	hashmap_release(&m);
	free(w);
	return NULL;
}

/* The hash of frame's function: "qualname (file", the line left out. */
static uint64_t function_hash(const struct rt_table *t, uint32_t frame)
{
	const char *f = rt_str(t, frame), *c = strrchr(f, ':');

	return hashmap_hash_bytes(f, c ? (size_t)(c - f) : strlen(f));
}

/*
 * The commonest function at depth among the stacks in, as one of its
 * frames, with its calls in *count; 0 none, UINT32_MAX no memory.
 */
static uint32_t commonest(const struct rt_table *t, const struct rep_loop *lp, uint32_t depth,
			  uint64_t *count)
{
	const struct loop_stack *w = lp->w;
	size_t n = lp->nw;
	struct hashmap m;
	uint32_t best = 0;

	*count = 0;
	hashmap_init(&m);
	for (size_t i = 0; i < n; i++) {
		uint32_t f = frame_at(t, lp, w[i].stack, depth);
		struct hashmap_slot *s;

		if (!w[i].in || !f)
			continue;
		s = hashmap_put(&m, function_hash(t, f), NULL);
		if (!s) {
			best = UINT32_MAX;
			break;
		}
		s->val += w[i].count;
		if (s->val > *count) {
			*count = s->val;
			best = f;
		}
	}
	hashmap_release(&m);
	return best;
}

int report_loop_init(const struct rt_table *t, uint32_t proc, uint32_t tid, struct rep_loop *lp)
{
	memset(lp, 0, sizeof(*lp));
	lp->w = call_stacks(t, proc, tid, &lp->nw);
	return lp->w ? 0 : -ENOMEM;
}

/* Keep in only the stacks with frame f at depth; their calls. */
static uint64_t keep_frame(const struct rt_table *t, struct rep_loop *lp, uint32_t depth,
			   uint32_t f)
{
	uint64_t total = 0;

	for (size_t i = 0; i < lp->nw; i++) {
		struct loop_stack *x = &lp->w[i];

		x->in = x->in && frame_at(t, lp, x->stack, depth) == f;
		total += x->in ? x->count : 0;
	}
	return total;
}

/*
 * The commonest frame (function and line) at depth among the stacks in;
 * 0 none, UINT32_MAX no memory.
 */
static uint32_t commonest_line(const struct rt_table *t, const struct rep_loop *lp,
			       uint32_t depth)
{
	struct hashmap m;
	uint32_t best = 0;
	uint64_t most = 0;

	hashmap_init(&m);
	for (size_t i = 0; i < lp->nw; i++) {
		uint32_t f = frame_at(t, lp, lp->w[i].stack, depth);
		struct hashmap_slot *s;

		if (!lp->w[i].in || !f)
			continue;
		s = hashmap_put(&m, f, NULL);
		if (!s) {
			best = UINT32_MAX;
			break;
		}
		s->val += lp->w[i].count;
		if (s->val > most) {
			most = s->val;
			best = f;
		}
	}
	hashmap_release(&m);
	return best;
}

/* report_loop_next() among the frames lp->all says. */
static int next_candidate(const struct rt_table *t, struct rep_loop *lp)
{
	uint64_t total = 0;
	uint32_t depth = 0;

	free(lp->of);
	lp->of = NULL;
	lp->nof = lp->nphases = 0;
	if (lp->frame) {        /* the last candidate's steps did not hold: into its commonest line */
		uint32_t f = commonest_line(t, lp, lp->depth);

		if (f == UINT32_MAX)
			return -ENOMEM;
		depth = lp->depth + 1;
		total = keep_frame(t, lp, lp->depth, f);
	} else {
		for (size_t i = 0; i < lp->nw; i++)
			total += lp->w[i].count;
	}
	for (; total; depth++) {
		uint64_t count;
		uint32_t f = commonest(t, lp, depth, &count);
		bool varies = false;

		if (f == UINT32_MAX)
			return -ENOMEM;
		if (!f || count < LOOP_SHARE * total)
			return 0;
		total = 0;
		for (size_t i = 0; i < lp->nw; i++) {
			struct loop_stack *x = &lp->w[i];
			uint32_t g = frame_at(t, lp, x->stack, depth);

			x->in = x->in && same_function(t, g, f);
			if (x->in) {
				total += x->count;
				varies |= g != f;
				lp->stack = x->stack;
			}
		}
		if (varies) {
			lp->depth = depth;
			lp->frame = f;
			return 1;
		}
	}
	return 0;
}

/*
 * Among the user frames first; once none is left there, among all frames
 * but frozen ones: a loop that library code runs (transformers' Trainer,
 * under one line of user code), or code installed as a library.
 */
int report_loop_next(const struct rt_table *t, struct rep_loop *lp)
{
	int r = next_candidate(t, lp);

	if (r || lp->all)
		return r;
	lp->all = true;
	lp->frame = 0;
	for (size_t i = 0; i < lp->nw; i++)
		lp->w[i].in = true;
	return next_candidate(t, lp);
}

/* Does stack id stack run under the loop frame (the frames above it those of lp->stack)? */
static bool in_loop(const struct rt_table *t, const struct rep_loop *lp, uint32_t stack)
{
	if (!same_function(t, frame_at(t, lp, stack, lp->depth), lp->frame))
		return false;
	for (uint32_t d = 0; d < lp->depth; d++)
		if (frame_at(t, lp, stack, d) != frame_at(t, lp, lp->stack, d))
			return false;
	return true;
}

/* Do frames a and b lie in the same library package (rt_frame_package())? */
static bool same_package(const struct rt_table *t, uint32_t a, uint32_t b)
{
	const char *x = rt_str(t, a), *y = rt_str(t, b), *px, *py;
	size_t nx, ny;

	px = rt_frame_package(x, strlen(x), &nx);
	py = rt_frame_package(y, strlen(y), &ny);
	return px && py && nx == ny && !memcmp(px, py, nx);
}

void report_loop_resite(struct rt_table *t, const struct rep_loop *lp)
{
	const char *loop;

	if (!lp->all || !lp->frame)
		return;
	loop = rt_str(t, lp->frame);
	if (!rt_frame_is_library(loop, strlen(loop)))
		return;
	for (uint32_t k = 1; k <= t->nstk; k++) {
		struct rt_stack *s = &t->stacks[k - 1];
		uint32_t d, own = 0;

		if (!in_loop(t, lp, k))         /* in it: s->an > lp->depth */
			continue;
		/* the frames under the loop frame, innermost first */
		for (d = s->an; d-- > lp->depth + 1;) {
			uint32_t f = t->frames[s->afirst + d];
			const char *x = rt_str(t, f);

			if (!rt_frame_is_library(x, strlen(x)))
				break;
			if (!own && same_package(t, f, lp->frame))
				own = f;
		}
		if (d == lp->depth)     /* no user frame under it */
			s->site = own ? own : t->frames[s->afirst + s->an - 1];
	}
}

/* The phase of e as report_loop_phase() says, for a stack not seen yet. */
static uint32_t stack_phase(const struct rt_table *t, struct rep_loop *lp, uint32_t stack)
{
	uint32_t f = frame_at(t, lp, stack, lp->depth), k;

	if (!in_loop(t, lp, stack))
		return 0;
	for (k = 0; k < lp->nphases && lp->phases[k].site != f; k++)
		;
	if (k == lp->nphases) {
		if (array_grow(&lp->phases, &lp->cap, k + 1))
			return UINT32_MAX;
		lp->phases[lp->nphases++] = (struct rep_phase){
			.site = f, .name = t->callees[frame_index(t, lp->all, stack, lp->depth)] };
	}
	return k + 1;
}

/* The phase of table stack id stack (0 none), remembered per stack. */
static uint32_t phase_of_stack(const struct rt_table *t, struct rep_loop *lp, uint32_t stack)
{
	if (!stack)
		return 0;
	if (array_grow_zeroed(&lp->of, &lp->nof, stack + 1))
		return UINT32_MAX;
	if (!lp->of[stack]) {
		uint32_t k = stack_phase(t, lp, stack);

		if (k == UINT32_MAX)
			return k;
		lp->of[stack] = k + 1;
	}
	return lp->of[stack] - 1;
}

uint32_t report_loop_phase(const struct rt_table *t, struct rep_loop *lp, const struct rt_event *e)
{
	return phase_of_stack(t, lp, e->stack);
}

void report_loop_release(struct rep_loop *lp)
{
	free(lp->w);
	free(lp->phases);
	free(lp->of);
	memset(lp, 0, sizeof(*lp));
}

/* median, min, max of v[0..n) (sorted here) */
static void spread(uint64_t *v, size_t n, uint64_t out[3])
{
	out[0] = report_median_u64(v, n);
	out[1] = n ? v[0] : 0;
	out[2] = n ? v[n - 1] : 0;
}

/* The step of time ts among the steps starting at st[0..n] (n steps), or -1. */
static long step_of(const int64_t *st, size_t n, int64_t ts)
{
	size_t lo = 0, hi = n + 1;

	if (!n || ts < st[0] || ts >= st[n])
		return -1;
	while (lo < hi) {       /* first start after ts */
		size_t mid = (lo + hi) / 2;

		if (st[mid] <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

static const struct rt_table *sort_t;

/* The line of frame "qualname (file:line)". */
static long frame_line(uint32_t frame)
{
	const char *c = strrchr(rt_str(sort_t, frame), ':');

	return c ? strtol(c + 1, NULL, 10) : 0;
}

/* phases by their line in the loop function: the loop body's order */
static int cmp_line(const void *a, const void *b)
{
	long x = frame_line(((const struct rep_phase *)a)->site);
	long y = frame_line(((const struct rep_phase *)b)->site);

	return (x > y) - (x < y);
}

/*
 * The thread's CPU samples and thread states, each by time: [*first,
 * *end) of t->samples and of t->states.
 */
struct thread_sched {
	const struct rt_sample *smp, *smp_end;
	const struct rt_state *st, *st_end;
};

static void thread_sched(const struct rt_table *t, uint32_t pid, uint32_t tid,
			 struct thread_sched *ts)
{
	size_t i = 0, j;

	while (i < t->nsamples && (t->samples[i].pid != pid || t->samples[i].tid != tid))
		i++;
	for (j = i; j < t->nsamples && t->samples[j].pid == pid && t->samples[j].tid == tid; j++)
		;
	ts->smp = t->samples + i;
	ts->smp_end = t->samples + j;
	for (i = 0; i < t->nstates && (t->states[i].pid != pid || t->states[i].tid != tid); i++)
		;
	for (j = i; j < t->nstates && t->states[j].pid == pid && t->states[j].tid == tid; j++)
		;
	ts->st = t->states + i;
	ts->st_end = t->states + j;
}

/* Meet every phase of the thread's calls and samples in the steps, so that their number is known. */
static int meet_phases(const struct rt_table *t, uint32_t proc, struct rep_loop *lp,
		       uint32_t tid, const int64_t *st, size_t nsteps,
		       const struct thread_sched *ts)
{
	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i];

		if (e->proc == proc && e->kind == RT_API && rt_served(t, e) == tid &&
		    step_of(st, nsteps, e->ts) >= 0 && report_loop_phase(t, lp, e) == UINT32_MAX)
			return -ENOMEM;
	}
	for (const struct rt_sample *x = ts->smp; x < ts->smp_end; x++)
		if (step_of(st, nsteps, x->ts) >= 0 && phase_of_stack(t, lp, x->stack) == UINT32_MAX)
			return -ENOMEM;
	for (const struct rt_state *x = ts->st; x < ts->st_end; x++)
		if (x->stack && step_of(st, nsteps, x->ts) >= 0 &&
		    phase_of_stack(t, lp, x->stack) == UINT32_MAX)
			return -ENOMEM;
	return 0;
}

/*
 * The thread's states in [a, b) (by time, *at moving on): how long it
 * ran; and the time of each wait with the Python line it blocked in,
 * added to that line's phase in row (*waited: their sum).  0 or -ENOMEM.
 */
static int spans(const struct rt_table *t, struct rep_loop *lp, const struct thread_sched *ts,
		 const struct rt_state **at, int64_t a, int64_t b, uint64_t *row, int64_t *run,
		 int64_t *waited)
{
	*run = *waited = 0;
	while (*at < ts->st_end && (*at)->ts + (*at)->dur <= a)
		++*at;
	for (const struct rt_state *x = *at; x < ts->st_end && x->ts < b; x++) {
		int64_t lo = x->ts > a ? x->ts : a, hi = x->ts + x->dur < b ? x->ts + x->dur : b;
		uint32_t q;

		if (hi <= lo)
			continue;
		if (x->state == MS_RUNNING) {
			*run += hi - lo;
		} else if (x->stack) {
			if ((q = phase_of_stack(t, lp, x->stack)) == UINT32_MAX)
				return -ENOMEM;
			row[q] += hi - lo;
			*waited += hi - lo;
		}
	}
	return 0;
}

/*
 * Host time [a, b) of step s, led to a call of phase ph: the time the
 * thread ran goes to the phases of its samples there, by their count;
 * the time it waited, to the phase of the line it blocked in; the rest to
 * ph.  row: the step's host times per phase.  0 or -ENOMEM.
 */
static int split_gap(const struct rt_table *t, struct rep_loop *lp,
		     const struct thread_sched *ts, const struct rt_state **st_at,
		     const struct rt_sample **smp_at, int64_t a, int64_t b, uint32_t ph,
		     uint64_t *row)
{
	const struct rt_sample *x, *first;
	int64_t run, waited, given = 0;
	size_t n = 0;

	if (b <= a)
		return 0;
	while (*smp_at < ts->smp_end && (*smp_at)->ts < a)
		++*smp_at;
	first = *smp_at;
	for (x = first; x < ts->smp_end && x->ts < b; x++)
		n++;
	if (spans(t, lp, ts, st_at, a, b, row, &run, &waited))
		return -ENOMEM;
	if (!n)
		run = 0;
	for (x = first; run && x < first + n; x++) {
		uint32_t q = phase_of_stack(t, lp, x->stack);

		if (q == UINT32_MAX)
			return -ENOMEM;
		/* the k-th sample's share, rounded so that the shares add up to run */
		row[q] += run * (int64_t)(x - first + 1) / (int64_t)n - given;
		given = run * (int64_t)(x - first + 1) / (int64_t)n;
	}
	row[ph] += (b - a) - given - waited;
	*smp_at = first + n;
	return 0;
}

int report_anatomy(const struct rt_table *t, uint32_t proc, struct rep_loop *lp,
		   struct rep_iter *it, const int64_t *st, size_t nsteps, uint32_t anchor_phase)
{
	size_t np, n;
	uint64_t *host, *gpu, *cnt, *col;
	int64_t cursor = 0;
	long cur = -1;
	struct hashmap cm;
	struct thread_sched ts;
	const struct rt_state *st_at;
	const struct rt_sample *smp_at;
	int ret;

	thread_sched(t, t->procs[proc].pid, it->tid, &ts);
	st_at = ts.st;
	smp_at = ts.smp;
	if ((ret = meet_phases(t, proc, lp, it->tid, st, nsteps, &ts)))
		return ret;
	np = lp->nphases + 1;   /* phase 0: outside any phase */
	n = nsteps * np;
	host = calloc(n + 1, sizeof(*host));
	gpu = calloc(n + 1, sizeof(*gpu));
	cnt = calloc(n + 1, sizeof(*cnt));
	col = malloc((nsteps + 1) * sizeof(*col));
	ret = -ENOMEM;
	hashmap_init(&cm);
	if (!host || !gpu || !cnt || !col || report_corr_build(&cm, t))
		goto out;
	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i], *l = e;
		long s;
		uint32_t ph;

		if (e->proc != proc)
			continue;
		if (e->kind != RT_API && !(l = report_launch_of(&cm, t, e)))
			continue;
		if (rt_served(t, l) != it->tid || (s = step_of(st, nsteps, l->ts)) < 0)
			continue;
		ph = report_loop_phase(t, lp, l);
		if (ph == UINT32_MAX)
			goto out;
		if (e->kind != RT_API) {
			gpu[s * np + ph] += e->dur;
			continue;
		}
		if (s != cur) {         /* the rest of the previous step: the anchor's phase */
			if (cur >= 0 && split_gap(t, lp, &ts, &st_at, &smp_at, cursor, st[cur + 1],
						  anchor_phase, host + cur * np))
				goto out;
			cur = s;
			cursor = st[s];
		}
		if (e->ts + e->dur > cursor) {
			int64_t end = e->ts + e->dur < st[s + 1] ? e->ts + e->dur : st[s + 1];
			int64_t start = e->ts > cursor ? (e->ts < end ? e->ts : end) : cursor;

			if (split_gap(t, lp, &ts, &st_at, &smp_at, cursor, start, ph, host + s * np))
				goto out;
			host[s * np + ph] += end - start;
			cursor = end;
		}
		cnt[s * np + ph] += !!(e->flags & RTF_LAUNCH);
	}
	if (cur >= 0 && split_gap(t, lp, &ts, &st_at, &smp_at, cursor, st[cur + 1], anchor_phase,
				  host + cur * np))
		goto out;
	it->phases = calloc(np, sizeof(*it->phases));
	if (!it->phases)
		goto out;
	for (size_t k = 0; k < np; k++) {   /* outside any phase last; phases of no step left out */
		struct rep_phase *x = &it->phases[it->nphases];
		size_t ph = (k + 1) % np;

		*x = ph ? lp->phases[ph - 1] : (struct rep_phase){ 0 };
		for (int what = 0; what < 3; what++) {
			const uint64_t *src = what == 0 ? gpu : what == 1 ? host : cnt;

			for (size_t s = 0; s < nsteps; s++) {
				col[s] = src[s * np + ph];
				x->gpu_total_ns += what == 0 ? col[s] : 0;
			}
			spread(col, nsteps, what == 0 ? x->gpu_ns : what == 1 ? x->host_ns : x->launches);
		}
		if (!ph || x->gpu_ns[2] || x->host_ns[2] || x->launches[2])
			it->nphases++;
	}
	sort_t = t;
	qsort(it->phases, it->nphases - 1, sizeof(*it->phases), cmp_line);
	ret = 0;
out:
	hashmap_release(&cm);
	free(host);
	free(gpu);
	free(cnt);
	free(col);
	return ret;
}
