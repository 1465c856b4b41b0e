// SPDX-License-Identifier: BSD-2-Clause
/*
 * Iterations: the repeating step structure of a process's launches.
 *
 * The launches of the thread that launches most form a sequence of
 * tokens.  When its Python stacks show a training loop (report_phase.c),
 * a token is a run of calls in one phase of the loop body, and a step
 * begins at each run of the body's first statement (however often a step
 * launches one kernel, and whatever runs only every few steps), and the
 * steps' anatomy follows; else (or when that finds no steps) a token
 * is the kernel name, joined with the launch's innermost user Python
 * frame when stacks are present.  For every token seen at least 3 times, the commonest distance
 * (in launches) between its occurrences is a candidate period when at
 * least 60% of its distances are that one.  Candidates are tried longest
 * first; a period p is accepted when, between the token's first and last
 * occurrence, at least 80% of the launches equal the one p later.  The
 * smallest divisor of p that also passes is the period (a run repeats
 * every 2 steps too).  Steps begin at the occurrences of a token that
 * comes once per period (the anchor), within the run that repeats (not
 * its launches in set-up or after the loop); step time is the time
 * between two consecutive anchor launches.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "report/report.h"

struct tok {
	uint64_t token;
	uint32_t pos;
};

struct cand {
	uint64_t token;
	uint32_t period, count, first, last;
	double regular;
};

static int cmp_tok(const void *a, const void *b)
{
	const struct tok *x = a, *y = b;

	if (x->token != y->token)
		return x->token < y->token ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->period != y->period)
		return x->period < y->period ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->first > y->first) - (x->first < y->first);
}

static double periodic(const uint64_t *seq, uint32_t first, uint32_t last, uint32_t p)
{
	uint64_t same = 0, all = 0;

	for (uint32_t i = first; i + p <= last; i++, all++)
		same += seq[i] == seq[i + p];
	return all ? (double)same / all : 0;
}

/* seq[a..a+p) and seq[b..b+p) alike: at least 80% of their tokens equal. */
static bool alike(const uint64_t *seq, size_t a, size_t b, uint32_t p)
{
	uint32_t same = 0;

	for (uint32_t j = 0; j < p; j++)
		same += seq[a + j] == seq[b + j];
	return (uint64_t)same * 5 >= (uint64_t)p * 4;
}

/*
 * The steps of sequence seq[0..n) (events ix, launch ordinals pos) that
 * begin at each occurrence of token anchor, in the run that repeats with
 * period p (0: all of them): from the first occurrence whose period the next one repeats
 * to the last that repeats the one before (the anchor's launches in set-up
 * or after the loop made steps of their own); it's figures, the step
 * starts in st[0..it->steps] and the index of the first occurrence in
 * *first.
 */
static int anchor_steps(const struct rt_table *t, struct rep_iter *it, const uint64_t *seq,
			const uint32_t *ix, const uint32_t *pos, size_t n, uint64_t anchor,
			uint32_t p, int64_t *st, size_t *first)
{
	size_t na = 0, ngaps = 0, lo = n, hi = 0;
	double sum = 0, sq = 0;
	uint32_t prev = UINT32_MAX;
	uint64_t *d = malloc((n + 1) * sizeof(*d)), *kps = malloc((n + 1) * sizeof(*kps));

	if (!d || !kps) {
		free(d);
		free(kps);
		return -ENOMEM;
	}
	for (size_t i = 0; p && i + 2 * (size_t)p <= n && lo == n; i++)
		if (seq[i] == anchor && alike(seq, i, i + p, p))
			lo = i;
	for (size_t i = n; p && i-- > p && !hi;)
		if (seq[i] == anchor && i + p <= n && alike(seq, i - p, i, p))
			hi = i;
	if (lo >= hi) {         /* no period (p 0), or no run found: every occurrence */
		lo = 0;
		hi = n ? n - 1 : 0;
	}
	for (size_t i = lo; i <= hi && i < n; i++) {
		if (seq[i] != anchor)
			continue;
		if (prev != UINT32_MAX) {
			d[na] = t->ev[ix[i]].ts - t->ev[ix[prev]].ts;
			kps[ngaps++] = pos[i] - pos[prev];
			na++;
		} else {
			*first = i;
		}
		st[na] = t->ev[ix[i]].ts;
		prev = i;
	}
	if (na >= 1) {
		it->found = true;
		it->steps = na;
		for (size_t i = 0; i < na; i++) {
			sum += d[i];
			sq += (double)d[i] * d[i];
		}
		it->mean_ns = sum / na;
		it->stddev_ns = sqrt(fmax(0, sq / na - it->mean_ns * it->mean_ns));
		it->median_ns = report_median_u64(d, na);
		it->min_ns = d[0];
		it->max_ns = d[na - 1];
		it->kernels_per_step = report_median_u64(kps, ngaps);
	}
	free(kps);
	free(d);
	return 0;
}

/*
 * The steps of token sequence seq[0..n) (events ix, launch ordinals pos):
 * it's figures, the step starts in st[0..it->steps] and the index of the
 * first anchor token in *first.
 */
static int analyze(const struct rt_table *t, struct rep_iter *it, const uint64_t *seq,
		   const uint32_t *ix, const uint32_t *pos, size_t n, int64_t *st, size_t *first)
{
	struct tok *tk = malloc((n + 1) * sizeof(*tk));
	struct cand *cand = malloc((n + 1) * sizeof(*cand));
	uint64_t *gaps = malloc((n + 1) * sizeof(*gaps));
	size_t nc = 0;
	struct cand *best = NULL;
	uint32_t p = 0;
	int ret = -ENOMEM;

	if (!tk || !cand || !gaps)
		goto out;
	for (size_t i = 0; i < n; i++)
		tk[i] = (struct tok){ seq[i], (uint32_t)i };
	qsort(tk, n, sizeof(*tk), cmp_tok);
	for (size_t a = 0, b; a < n; a = b) {
		size_t c, mode_n = 0, run;
		uint64_t mode = 0;

		for (b = a; b < n && tk[b].token == tk[a].token; b++)
			;
		c = b - a;
		if (c < 3)
			continue;
		for (size_t i = a + 1; i < b; i++)
			gaps[i - a - 1] = tk[i].pos - tk[i - 1].pos;
		qsort(gaps, c - 1, sizeof(*gaps), array_cmp_u64);
		for (size_t i = 0; i < c - 1; i += run) {
			for (run = 1; i + run < c - 1 && gaps[i + run] == gaps[i]; run++)
				;
			if (run > mode_n) {
				mode_n = run;
				mode = gaps[i];
			}
		}
		if ((double)mode_n / (c - 1) < 0.6)
			continue;
		cand[nc++] = (struct cand){ tk[a].token, (uint32_t)mode, (uint32_t)c, tk[a].pos,
					    tk[b - 1].pos, (double)mode_n / (c - 1) };
	}
	qsort(cand, nc, sizeof(*cand), cmp_cand);
	for (size_t k = 0; k < nc && k < 64 && !best; k++)
		if (cand[k].last - cand[k].first >= 2 * cand[k].period &&
		    periodic(seq, cand[k].first, cand[k].last, cand[k].period) >= 0.8)
			best = &cand[k];
	ret = 0;
	if (!best)
		goto out;
	p = best->period;
	for (uint32_t q = 1; q < p; q++)
		if (p % q == 0 && periodic(seq, best->first, best->last, q) >= 0.8) {
			p = q;
			break;
		}
	if (p != best->period) {
		struct cand *b2 = NULL;

		for (size_t k = 0; k < nc; k++)
			if (cand[k].period == p && cand[k].regular >= 0.8 &&
			    (!b2 || cand[k].count > b2->count))
				b2 = &cand[k];
		if (!b2)
			goto out;       /* no token marks the shorter period */
		best = b2;
	}
	ret = anchor_steps(t, it, seq, ix, pos, n, best->token, p, st, first);
out:
	free(tk);
	free(cand);
	free(gaps);
	return ret;
}


/*
 * The thread of proc with the most launches (among its first 64 launchers),
 * counting a worker's launches with attributed stacks for the thread it
 * serves (rt_served()): the Python thread whose loss.backward() an
 * autograd engine's threads run.
 */
static uint32_t main_thread(const struct rt_table *t, uint32_t proc)
{
	uint32_t tids[64], counts[64], main_tid = 0, best = 0;
	size_t ntid = 0;

	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i];
		uint32_t tid;
		size_t k;

		if (e->proc != proc || !(e->flags & RTF_LAUNCH) || (e->flags & RTF_FAILED))
			continue;
		tid = rt_served(t, e);
		for (k = 0; k < ntid && tids[k] != tid; k++)
			;
		if (k == ntid) {
			if (ntid == 64)
				continue;
			tids[ntid] = tid;
			counts[ntid++] = 0;
		}
		if (++counts[k] > best) {
			best = counts[k];
			main_tid = tid;
		}
	}
	return main_tid;
}

struct seqs {
	uint64_t *tok;
	uint32_t *ix;           /* event index of each token */
	uint32_t *pos;          /* launches before it */
	int64_t *st;            /* step starts */
	size_t n;
	uint32_t launches;      /* of the thread */
};

/*
 * The calls made for the thread (its own and its workers' attributed ones)
 * as tokens.  With a loop frame, one token per run of calls in one phase
 * (a step that launches one kernel four times is still one step); else
 * one per launch: the kernel name with the innermost user frame (0
 * without stacks).
 */
static int tokens(const struct rt_table *t, uint32_t proc, struct rep_iter *it,
		  struct rep_loop *lp, bool loop, struct seqs *q)
{
	uint32_t nl = 0;

	q->n = 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i];
		bool launch = (e->flags & RTF_LAUNCH) && !(e->flags & RTF_FAILED);
		uint64_t tok;

		if (e->proc != proc || e->kind != RT_API || rt_served(t, e) != it->tid ||
		    (!loop && !launch))
			continue;
		nl += launch;
		it->from_stacks |= launch && rt_site(t, e) != 0;
		if (loop) {
			tok = report_loop_phase(t, lp, e);
			if (tok == UINT32_MAX)
				return -ENOMEM;
			if (q->n && q->tok[q->n - 1] == tok)
				continue;
		} else {
			tok = (uint64_t)(e->aux ? e->aux : e->name) << 32 | rt_site(t, e);
		}
		q->tok[q->n] = tok;
		q->pos[q->n] = nl - launch;
		q->ix[q->n++] = i;
	}
	q->launches = nl;
	return 0;
}

/*
 * Where a loop's steps begin: its body's first statement, the phase with
 * the lowest line among those met in at least half as many runs as the
 * commonest one (a statement run once in 100 passes starts no step) and
 * at least 3 times.  0 none, UINT64_MAX no memory.
 */
static uint64_t first_statement(const struct rt_table *t, const struct rep_loop *lp,
				const struct seqs *q)
{
	uint64_t *runs = calloc(lp->nphases + 1, sizeof(*runs)), most = 0, best = 0;
	long best_line = 0;

	if (!runs)
		return UINT64_MAX;
	for (size_t i = 0; i < q->n; i++)
		if (q->tok[i] && q->tok[i] <= lp->nphases && ++runs[q->tok[i]] > most)
			most = runs[q->tok[i]];
	for (uint64_t k = 1; k <= lp->nphases; k++) {
		const char *c = strrchr(rt_str(t, lp->phases[k - 1].site), ':');
		long line = c ? strtol(c + 1, NULL, 10) : 0;

		if (runs[k] >= 3 && 2 * runs[k] >= most && (!best || line < best_line)) {
			best = k;
			best_line = line;
		}
	}
	free(runs);
	return best;
}

/* The first launch made for thread tid from event i on (the step's first kernel), or NULL. */
static const struct rt_event *launch_from(const struct rt_table *t, size_t i, uint32_t proc,
					  uint32_t tid)
{
	for (; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i];

		if (e->proc == proc && rt_served(t, e) == tid && (e->flags & RTF_LAUNCH) &&
		    !(e->flags & RTF_FAILED))
			return e;
	}
	return NULL;
}

/* The steps of process proc, from its loop frame when loop, else its launch sequence. */
static int proc_iter(const struct rt_table *t, uint32_t proc, struct rep_iter *it,
		     struct rep_loop *lp, bool loop, struct seqs *q)
{
	const struct rt_event *a;
	size_t first = 0;
	int ret;

	if ((ret = tokens(t, proc, it, lp, loop, q)) || q->n < 3)
		return ret;
	if (loop) {
		uint64_t anchor = first_statement(t, lp, q);

		if (anchor == UINT64_MAX)
			return -ENOMEM;
		ret = anchor ? anchor_steps(t, it, q->tok, q->ix, q->pos, q->n, anchor, 0, q->st,
					    &first) : 0;
	} else {
		ret = analyze(t, it, q->tok, q->ix, q->pos, q->n, q->st, &first);
	}
	if (ret || !it->found)
		return ret;
	a = launch_from(t, q->ix[first], proc, it->tid);
	if (!a)
		a = &t->ev[q->ix[first]];
	it->anchor = a->aux ? a->aux : a->name;
	it->anchor_call = a;
	if (!loop)
		return 0;
	it->loop = lp->frame;
	return report_anatomy(t, proc, lp, it, q->st, it->steps, (uint32_t)q->tok[first]);
}

/*
 * The steps of process proc: from the first candidate loop frame whose
 * steps hold half its main thread's launches or more, else from its
 * launch sequence.  A loop that library code runs gives the stacks in it
 * their sites (report_loop_resite()).
 */
static int proc_steps(struct rt_table *t, uint32_t proc, struct rep_iter *it,
		      struct seqs *q)
{
	uint32_t tid = main_thread(t, proc);
	struct rep_loop lp;
	int ret = report_loop_init(t, proc, tid, &lp);

	while (!ret && (ret = report_loop_next(t, &lp)) > 0) {
		*it = (struct rep_iter){ .tid = tid };
		ret = proc_iter(t, proc, it, &lp, true, q);
		if (ret || (it->found && 2 * it->steps * it->kernels_per_step >= q->launches))
			break;
		free(it->phases);
		*it = (struct rep_iter){ .tid = tid };
	}
	if (ret >= 0 && !it->found) {
		*it = (struct rep_iter){ .tid = tid };
		ret = proc_iter(t, proc, it, &lp, false, q);
	} else if (ret >= 0) {
		report_loop_resite(t, &lp);
	}
	report_loop_release(&lp);
	if (ret >= 0 && it->found) {
		it->starts = malloc((it->steps + 1) * sizeof(*it->starts));
		if (!it->starts)
			return -ENOMEM;
		memcpy(it->starts, q->st, (it->steps + 1) * sizeof(*it->starts));
	}
	return ret;
}

int report_iter(struct rt_table *t, struct report *r)
{
	struct seqs q = { 0 };
	int ret = -ENOMEM;

	q.tok = malloc((t->nev + 1) * sizeof(*q.tok));
	q.pos = malloc((t->nev + 1) * sizeof(*q.pos));
	q.st = malloc((t->nev + 1) * sizeof(*q.st));
	q.ix = malloc((t->nev + 1) * sizeof(*q.ix));
	if (!q.tok || !q.pos || !q.st || !q.ix)
		goto out;
	ret = 0;
	for (size_t p = 0; p < r->nprocs && !ret; p++)
		ret = proc_steps(t, p, &r->procs[p].iter, &q);
out:
	free(q.tok);
	free(q.pos);
	free(q.st);
	free(q.ix);
	return ret;
}
