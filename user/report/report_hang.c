// SPDX-License-Identifier: BSD-2-Clause
/*
 * A process in the trace that made no driver call and ran no GPU work
 * there (a job hung before the recording, attached with -p): what each of
 * its threads did, from its states.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/array.h"
#include "model/thread_state.h"
#include "report/report.h"

/* The states of thread (pid, tid) from t->states[*i] on (by pid, tid, ts), summed. */
static struct rep_wait thread_waits(const struct rt_table *t, size_t *i)
{
	const struct rt_state *s = &t->states[*i];
	struct rep_wait w = { .tid = s->tid };
	uint32_t pid = s->pid, tid = s->tid;

	for (; *i < t->nstates && t->states[*i].pid == pid && t->states[*i].tid == tid; (*i)++) {
		s = &t->states[*i];
		w.span_ns += s->dur;
		if (s->state == MS_RUNNING || s->state == MS_RUNNABLE) {
			w.running_ns += s->dur;
		} else if (s->dur > w.wait_ns) {
			w.wait_ns = s->dur;
			w.state = s->state;
			w.site = s->stack ? rt_stack_site(t, s->stack, false) : 0;
		}
	}
	return w;
}

int report_hang(const struct rt_table *t, struct report *r)
{
	for (size_t p = 0; p < r->nprocs; p++) {
		struct rep_proc *rp = &r->procs[p];
		size_t cap = 0;

		if (rp->napi || rp->ngpu)
			continue;
		for (size_t i = 0; i < t->nstates;) {
			struct rep_wait w;

			if (t->states[i].pid != rp->pid) {
				i++;
				continue;
			}
			w = thread_waits(t, &i);
			if (array_grow(&rp->waits, &cap, rp->nwaits + 1))
				return -ENOMEM;
			rp->waits[rp->nwaits++] = w;
		}
	}
	return 0;
}
