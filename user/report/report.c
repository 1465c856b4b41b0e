// SPDX-License-Identifier: BSD-2-Clause
/* The report: run every analysis over the table; see report.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "report/report.h"

static uint64_t corr_key(const struct rt_event *e)
{
	return (uint64_t)(e->proc + 1) << 32 | e->corr;
}

int report_corr_build(struct hashmap *c, const struct rt_table *t)
{
	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i];
		struct hashmap_slot *s;

		if (e->kind != RT_API || !e->corr)
			continue;
		s = hashmap_put(c, corr_key(e), NULL);
		if (!s)
			return -ENOMEM;
		s->val = i;
	}
	return 0;
}

const struct rt_event *report_launch_of(const struct hashmap *c, const struct rt_table *t,
					const struct rt_event *e)
{
	const struct hashmap_slot *s = e->corr ? hashmap_find(c, corr_key(e)) : NULL;

	return s ? &t->ev[s->val] : NULL;
}

bool report_split_frame(const char *f, const char **qual, size_t *qlen, const char **site)
{
	const char *open = strrchr(f, '(');
	size_t n = strlen(f);

	if (!open || open == f || n < 2 || f[n - 1] != ')')
		return false;
	*qual = f;
	*qlen = open - f;
	while (*qlen && f[*qlen - 1] == ' ')
		--*qlen;
	*site = open + 1;       /* "file:line)" */
	return true;
}

int report_analyze(struct rt_table *t, struct report *r)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->procs = calloc(t->nprocs + 1, sizeof(*r->procs));
	if (!r->procs)
		return -ENOMEM;
	r->nprocs = t->nprocs;
	for (size_t p = 0; p < t->nprocs; p++) {
		r->procs[p].pid = t->procs[p].pid;
		r->procs[p].name = t->procs[p].name;
	}
	for (size_t i = 0; i < t->nev; i++)
		if (t->ev[i].kind != RT_API) {
			r->any_gpu = true;
			break;
		}
	r->any_stacks = t->nstacks > 0;
	/* the steps first: a loop that library code runs sets the sites (report_loop_resite()) */
	if ((ret = report_iter(t, r)) || (ret = report_gpu(t, r)) || (ret = report_top(t, r)) ||
	    (ret = report_repeats(t, r)) || (ret = report_autograd(t, r)) ||
	    (ret = report_memory(t, r)) || (ret = report_hang(t, r)))
		return ret;
	return report_findings(t, r);
}

void report_release(struct report *r)
{
	for (size_t p = 0; p < r->nprocs; p++) {
		struct rep_proc *rp = &r->procs[p];

		free(rp->findings);
		free(rp->late);
		for (size_t d = 0; d < rp->ndevs; d++)
			free(rp->devs[d].causes);
		free(rp->devs);
		free(rp->hot);
		free(rp->streams);
		free(rp->comm);
		free(rp->kernels);
		free(rp->calls);
		free(rp->errors);
		free(rp->open);
		free(rp->waits);
		free(rp->mem);
		free(rp->iter.phases);
		free(rp->iter.starts);
		free(rp->repeats);
		free(rp->nodes);
	}
	free(r->procs);
	memset(r, 0, sizeof(*r));
}
