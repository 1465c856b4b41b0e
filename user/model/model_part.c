// SPDX-License-Identifier: BSD-2-Clause
/* A model finished in parts; see model_part.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/array.h"
#include "model/model.h"
#include "model/model_part.h"

void model_carry_release(struct model_carry *c)
{
	if (!c)
		return;
	free(c->ev);
	free(c->states);
	free(c->samples);
	free(c->walk);
	hashmap_release(&c->walks);
	hashmap_release(&c->callers);
	hashmap_release(&c->pids);
	free(c);
}

/*
 * Calls from PARTS_LATER_NS after the cutoff on: none of their GPU work
 * can be in the part (it comes after its call, bar clock skew, which
 * gpu_clock.h repairs to well under this), and their announcements
 * (timed at their call's entry) wait with them (link_correlations() in
 * model.c), so finishing the part without them writes what it would with
 * them.  Calls at the cutoff itself stay: a call that began before it may
 * have announcements just after it.
 */
#define PARTS_LATER_NS 50000000ULL

/* Set the calls at or after c->later_from aside, in c->ev (empty now). */
static int set_later_aside(struct model *m)
{
	struct model_carry *c = m->carry;
	uint32_t pid = 0;
	size_t k = 0;

	for (size_t i = 0; i < m->nev; i++) {
		struct model_event *e = &m->ev[i];

		if (e->kind != EV_API || e->ts < c->later_from) {
			m->ev[k++] = *e;
			continue;
		}
		if (array_grow(&c->ev, &c->cap_ev, c->nlater + 1))
			return -ENOMEM;
		/* its process has events, whose states this part may write */
		if (e->pid != pid && !hashmap_put(&c->pids, e->pid, NULL))
			return -ENOMEM;
		pid = e->pid;
		e->link = MODEL_NO_LINK;
		c->ev[c->nlater++] = *e;
	}
	m->nev = k;
	c->nev = c->nlater;
	return 0;
}

int model_part_take(struct model *m, uint64_t cutoff)
{
	struct model_carry *c = m->carry;

	if (!c) {
		c = m->carry = calloc(1, sizeof(*m->carry));
		if (!c)
			return -ENOMEM;
		hashmap_init(&c->walks);
		hashmap_init(&c->callers);
		hashmap_init(&c->pids);
	}
	cutoff = cutoff < UINT64_MAX ? cutoff : UINT64_MAX - 1;
	c->later_from = cutoff < UINT64_MAX - PARTS_LATER_NS ? cutoff + PARTS_LATER_NS : UINT64_MAX;
	return set_later_aside(m) ?: model_finish_part(m, cutoff);
}

/* Keep the events at or after cutoff, and GPU work whose call is, in c. */
static int split_events(struct model *m, uint64_t cutoff, uint32_t *api, size_t *napi)
{
	struct model_carry *c = m->carry;
	uint32_t *where = malloc((m->nev ? m->nev : 1) * sizeof(*where));
	size_t k = 0, n = 0;

	if (!where)
		return -ENOMEM;
	for (size_t i = 0; i < m->nev; i++) {
		const struct model_event *e = &m->ev[i];
		bool keep = e->ts >= cutoff || e->kept ||
			    (e->kind != EV_API && e->link != MODEL_NO_LINK &&
			     (m->ev[e->link].ts >= cutoff || m->ev[e->link].kept));

		where[i] = keep ? UINT32_MAX : k++;
		if (!hashmap_put(&c->pids, e->pid, NULL)) {
			free(where);
			return -ENOMEM;
		}
	}
	c->nev = c->nlater;
	if (array_grow(&c->ev, &c->cap_ev, c->nev + m->nev - k)) {
		free(where);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nev; i++) {
		struct model_event *e = &m->ev[i];

		/* links into the part are fixed here; others are made again */
		if (e->link != MODEL_NO_LINK)
			e->link = where[e->link] == UINT32_MAX ? MODEL_NO_LINK : where[e->link];
		if (where[i] == UINT32_MAX)
			c->ev[c->nev++] = *e;
		else
			m->ev[where[i]] = *e;
	}
	m->nev = k;
	/* a call that began before the first part's base (a very long one) */
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].ts < m->ts_base_ns)
			m->ev[i].ts = m->ts_base_ns;
	for (size_t j = 0; j < *napi; j++)
		if (where[api[j]] != UINT32_MAX)
			api[n++] = where[api[j]];
	*napi = n;
	free(where);
	return 0;
}

/*
 * Thread states: closed spans before cutoff go in the part (those of
 * processes with events), open ones and later ones are kept, and so is a
 * GIL wait with its holder's span when either is kept, so that their
 * arrow is drawn; each thread's open span is found at its new place.
 * Samples likewise.
 */
static int split_states(struct model *m, uint64_t cutoff)
{
	struct model_carry *c = m->carry;
	size_t k = 0, *links = NULL;
	uint8_t *keep;
	int ret;

	c->nstates = c->nsamples = 0;
	for (size_t i = 0; i < m->nthreads; i++) {
		struct model_thread *t = &m->threads[i];

		if (t->open_state)      /* marked open, as lasting for ever */
			m->states[t->open_state - 1].dur = UINT64_MAX;
		t->open_state = 0;
	}
	model_states_sort(m);
	keep = calloc(m->nstates + 1, 1);
	ret = keep ? model_gil_links(m, &links) : -ENOMEM;
	for (size_t i = 0; i < m->nstates && !ret; i++)
		keep[i] = m->states[i].dur == UINT64_MAX || m->states[i].ts >= cutoff;
	for (int pass = 0; pass < 2 && !ret; pass++)    /* waits to holders, then back */
		for (size_t i = 0; i < m->nstates; i++)
			if (links[i] && (keep[i] || keep[links[i] - 1]))
				keep[i] = keep[links[i] - 1] = 1;
	for (size_t i = 0; i < m->nstates && !ret; i++) {
		struct model_state_span s = m->states[i];

		if (keep[i]) {
			if (array_grow(&c->states, &c->cap_states, c->nstates + 1))
				ret = -ENOMEM;
			else
				c->states[c->nstates++] = s;
		} else if (m->read_back || hashmap_find(&c->pids, s.pid)) {
			m->states[k++] = s;
		}
	}
	free(keep);
	free(links);
	if (ret)
		return ret;
	m->nstates = k;
	for (size_t i = 0; i < c->nstates; i++) {
		struct model_state_span *s = &c->states[i];

		if (s->dur == UINT64_MAX) {
			s->dur = 0;
			model_thread(m, s->pid, s->tid, NULL)->open_state = i + 1;
		}
	}
	k = 0;
	for (size_t i = 0; i < m->nsamples; i++) {
		struct model_sample s = m->samples[i];

		if (s.ts >= cutoff) {
			if (array_grow(&c->samples, &c->cap_samples, c->nsamples + 1))
				return -ENOMEM;
			c->samples[c->nsamples++] = s;
		} else if (m->read_back || hashmap_find(&c->pids, s.pid)) {
			m->samples[k++] = s;
		}
	}
	m->nsamples = k;
	return 0;
}

/*
 * Announcements before cutoff have found their calls, but for those of
 * calls kept (link_correlations() in model.c).  Of the wakes
 * (sorted by thread by model_attribute()), each thread keeps its latest
 * before cutoff (or before the earliest call kept), its attribution
 * resolved, and those after it.
 */
static void split_wakes(struct model *m, uint64_t cutoff)
{
	const struct model_carry *c = m->carry;
	uint64_t wcut = cutoff;
	size_t k = 0;

	for (size_t i = 0; i < m->ncorrs; i++)
		if (m->corrs[i].ts >= cutoff || m->corrs[i].kept)
			m->corrs[k++] = m->corrs[i];
	m->ncorrs = k;
	/* a call kept from before cutoff takes the attribution of its time */
	for (size_t i = 0; i < c->nev; i++)
		if (c->ev[i].kind == EV_API && c->ev[i].ts < wcut)
			wcut = c->ev[i].ts;
	k = 0;
	for (size_t i = 0; i < m->nwakes; i++) {
		struct model_wake *w = &m->wakes[i];
		const struct model_wake *next = i + 1 < m->nwakes ? &m->wakes[i + 1] : NULL;
		bool last_before = w->ts < wcut &&
			(!next || next->pid != w->pid || next->tid != w->tid || next->ts >= wcut);

		if (w->ts < wcut && !last_before)
			continue;
		w->resolved = w->ts < wcut;
		m->wakes[k++] = *w;
	}
	m->nwakes = k;
}

int model_part_split(struct model *m, uint64_t cutoff, uint32_t *api, size_t *napi)
{
	int ret = split_events(m, cutoff, api, napi);

	if (ret || cutoff == UINT64_MAX)
		return ret;
	split_wakes(m, cutoff);
	return split_states(m, cutoff);
}

int model_part_next(struct model *m)
{
	struct model_carry *c = m->carry;

	c->parts++;
	c->events += m->nev;
	/* the part's arrows: calls' ids, then its states' GIL flows */
	m->flow_base += m->nev + m->nstates + 1;
	m->nev = m->nstates = m->nsamples = 0;
	if (array_grow(&m->ev, &m->cap_ev, c->nev) ||
	    array_grow(&m->states, &m->cap_states, c->nstates) ||
	    array_grow(&m->samples, &m->cap_samples, c->nsamples))
		return -ENOMEM;
	memcpy(m->ev, c->ev, c->nev * sizeof(*m->ev));
	memcpy(m->states, c->states, c->nstates * sizeof(*m->states));
	memcpy(m->samples, c->samples, c->nsamples * sizeof(*m->samples));
	m->nev = c->nev;
	m->nstates = c->nstates;
	m->nsamples = c->nsamples;
	c->nev = c->nlater = c->nstates = c->nsamples = 0;
	c->later_from = UINT64_MAX;
	return 0;
}

#define PARTS_LAG_NS 5000000000ULL
#define PARTS_MIN_LAG_NS 250000000ULL   /* the injection library delivers every 50 ms */

/*
 * PARTS_LAG_NS before now, or later, the median event time, when that
 * holds less than half the events, but PARTS_MIN_LAG_NS before now at
 * the latest; and not after inflight.  Unless that would leave more than
 * three quarters of the events: then the first quartile's time (memory
 * first: a call in flight for minutes does not hold everything after
 * it), still PARTS_MIN_LAG_NS before now at the latest.  Cutting within
 * that lag wrote calls before their GPU work came (a graph launch's
 * kernels arrive tens of ms after it), which then had no arrow; what the
 * lag holds is bounded by the call rate, not by the recording's length.
 */
int model_part_cutoff(const struct model *m, uint64_t now, uint64_t inflight, uint64_t *cut)
{
	uint64_t *ts, lag = now > PARTS_LAG_NS ? now - PARTS_LAG_NS : 0;
	uint64_t latest = now > PARTS_MIN_LAG_NS ? now - PARTS_MIN_LAG_NS : 0;
	size_t n = m->nev, older = 0;

	ts = malloc((n ? n : 1) * sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ts[i] = m->ev[i].ts;
	array_sort(ts, n, sizeof(*ts), array_cmp_u64);  /* mostly in order */
	*cut = n && ts[n / 2] > lag ? ts[n / 2] : lag;
	if (latest < *cut)
		*cut = latest;
	if (inflight < *cut)
		*cut = inflight;
	while (older < n && ts[older] < *cut)
		older++;
	if (n && older < n / 4)
		*cut = ts[n / 4] < latest ? ts[n / 4] : latest;
	free(ts);
	return 0;
}

size_t model_part_next_at(const struct model *m, size_t memory)
{
	size_t kept = model_event_bytes(m);

	return kept > memory / 2 ? 2 * kept : memory;
}

size_t model_event_bytes(const struct model *m)
{
	return m->nev * sizeof(*m->ev) + m->ncorrs * sizeof(*m->corrs) +
	       m->nstates * sizeof(*m->states) + m->nsamples * sizeof(*m->samples) +
	       m->nwakes * sizeof(*m->wakes);
}
