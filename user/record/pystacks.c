// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record's Python stacks: when to look for a traced process's
 * interpreter, and handing its layout to the BPF walker and the collector.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "record/record.h"
#include "sym/pyruntime.h"

#define PY_GIVE_UP_NS 10000000000ULL /* a process not found running Python by then runs none */

/*
 * Python stacks for pid: find its interpreter and hand the layout to the
 * BPF walker and the collector.  A process is tried until it is found to
 * run CPython, to run one gpubpf cannot walk (said once), or for
 * PY_GIVE_UP_NS (it runs none).  Returns 1 when pid is settled.
 */
int pystacks_try(struct record *r, pid_t pid)
{
	struct gb_py_config cfg;
	struct py_try *t = NULL, *nt;
	char why[256];
	int ret;

	if (!r->o->stacks)
		return 1;
	for (size_t i = 0; i < r->npy && !t; i++)
		if (r->py[i].pid == pid)
			t = &r->py[i];
	if (!t) {
		nt = realloc(r->py, (r->npy + 1) * sizeof(*nt));
		if (!nt)
			return 1;
		r->py = nt;
		t = &r->py[r->npy++];
		*t = (struct py_try){ .pid = pid, .first = now_ns(CLOCK_MONOTONIC) };
	}
	if (t->done)
		return 1;
	ret = pyruntime_find(pid, &cfg, why, sizeof(why));
	if (ret == -ENOENT || ret == -EAGAIN) {
		t->done = now_ns(CLOCK_MONOTONIC) - t->first >= PY_GIVE_UP_NS;
		return t->done;
	}
	t->done = 1;
	if (ret) {
		fprintf(stderr, "gpubpf: pid %d: no Python stacks: %s\n", pid, why);
		return 1;
	}
	cfg.depth = r->o->stack_depth;
	if (collector_set_python(&r->coll, pid, &cfg) || probes_set_python(&r->probes, pid, &cfg))
		fprintf(stderr, "gpubpf: pid %d: no Python stacks: out of memory\n", pid);
	else if (r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d runs CPython %u.%u: walking its stacks\n", pid,
			cfg.version / 100, cfg.version % 100);
	return 1;
}

int pystacks_tried(struct record *r, pid_t pid)
{
	for (size_t i = 0; i < r->npy; i++)
		if (r->py[i].pid == pid)
			return 1;
	return 0;
}
