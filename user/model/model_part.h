/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A model finished in parts, for recordings of any length: the recorder
 * takes the part of its model before a cutoff (model_part_take()), has
 * it written (a sorted run of each output, see export.h's export_parts), and
 * goes on (model_part_next()); the last part is model_finish()'s.
 *
 * What the model keeps between parts is bounded by what is still open,
 * not by the recording's length: the interned strings, stacks, threads,
 * processes and kernel names (caches), and in struct model_carry:
 *  - events at or after the cutoff, and GPU work at any time whose call
 *    is after it (written with that call);
 *  - correlation announcements at or after the cutoff;
 *  - the thread states still open and those after the cutoff (with
 *    the GIL waits linked to them, or the holders' spans they are linked
 *    to), samples after it;
 *  - each thread's latest wake before the cutoff, its attribution
 *    resolved, and the wakes after it;
 *  - each thread's open Python scopes (derive_scopes() in model.c);
 *  - the threads with driver calls and the processes with events.
 *
 * Calls well after the cutoff (PARTS_LATER_NS on) are set aside before the
 * part is finished and come back with what it kept: nothing of them is
 * written with it, and finishing them once for each part that keeps them
 * was half the recorder's work at a million calls a second.  Their
 * announcements wait with them.
 *
 * Each part is finished as model_finish() finishes a whole model: calls
 * get their correlations and the GPU work they caused (also work still
 * kept: its arrow id is fixed with the call's), scopes are closed when
 * their function leaves the stack (in the part where that happens), and
 * arrow ids (model_event.flow, and the GIL flows of thread states after
 * them) continue from one part to the next, so that they stay unique in
 * the trace.  The trace's ts_base_ns is fixed by the first part.
 *
 * What a part cannot see: GPU work that arrives after its call was
 * written gets no arrow, and a call that arrives after announcements made
 * during it were dropped has no correlation (both later than the
 * recorder's cutoff lag); the states and samples of a process with no
 * driver call yet when they are written out are dropped (as those of
 * processes that never make one are).
 */
#ifndef GPUBPF_MODEL_PART_H
#define GPUBPF_MODEL_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/hashmap.h"

struct model;
struct model_event;
struct model_corr;
struct model_state_span;
struct model_sample;
struct model_wake;
struct scope_walk;

struct model_carry {
	struct model_event *ev;         /* first the calls set aside, nlater of them */
	size_t nev, cap_ev;
	size_t nlater;
	uint64_t later_from;            /* calls from here on are set aside */
	struct model_state_span *states;
	size_t nstates, cap_states;
	struct model_sample *samples;
	size_t nsamples, cap_samples;
	struct hashmap walks;           /* pid << 32 | tid -> index + 1 in walk */
	struct scope_walk *walk;        /* open scopes of threads (model.c) */
	size_t nwalk, cap_walk;
	struct hashmap callers;         /* pid << 32 | tid of threads with driver calls */
	struct hashmap pids;            /* processes with events */
	uint64_t parts;                 /* parts taken */
	uint64_t events;                /* events of the parts taken */
	bool base_set;                  /* ts_base_ns is the first part's */
};

/*
 * Finish the part of m before cutoff: afterwards m holds that part only,
 * finished as by model_finish(), the rest kept in m->carry.  Write it,
 * then call model_part_next().  0 or -ENOMEM.
 */
int model_part_take(struct model *m, uint64_t cutoff);

/* Drop the part written and bring back what was kept.  0 or -ENOMEM. */
int model_part_next(struct model *m);

/* Bytes m's events, announcements, states, samples and wakes take now. */
size_t model_event_bytes(const struct model *m);

/* The default and the least budget of event bytes held (record --memory, convert). */
#define MODEL_PART_MEMORY (64ULL << 20)
#define MODEL_PART_MIN_MEMORY (1ULL << 20)

/*
 * Where to cut the next part, at time now (the latest arrival: of a
 * recording, the clock; of a trace read back, the latest event): what may
 * still change stays, calls whose announcement or GPU work has not
 * arrived yet (the injection library delivers every 50 ms, GPU work may
 * run seconds after its launch) and calls in flight since inflight
 * (UINT64_MAX: none), whose record comes at their return.  0 or -ENOMEM.
 */
int model_part_cutoff(const struct model *m, uint64_t now, uint64_t inflight, uint64_t *cut);

/*
 * Event bytes past which the next part is due, once one was taken, for a
 * budget of memory bytes: the budget, or twice what was kept where that
 * is more.  A part finishes again what it keeps but the calls set aside:
 * at a million calls a second the cutoff's lag alone keeps ~250,000 (52
 * MB), and a part due at half the budget on each time had every event
 * finished 2.5 times, not twice at most.
 */
size_t model_part_next_at(const struct model *m, size_t memory);

void model_carry_release(struct model_carry *c);

/* For model.c: finish m, or the part before cutoff (UINT64_MAX: all, the last). */
int model_finish_part(struct model *m, uint64_t cutoff);
/*
 * For model.c, once events are linked: keep what is at or after cutoff
 * in m->carry, leaving the part in m; api (calls sorted by thread) is
 * narrowed to the part's.  0 or -ENOMEM.
 */
int model_part_split(struct model *m, uint64_t cutoff, uint32_t *api, size_t *napi);

#endif
