// SPDX-License-Identifier: BSD-2-Clause
/* The report: run every analysis over the table; see report.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

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

int report_analyze(const struct rt_table *t, struct report *r)
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
	if ((ret = report_gpu(t, r)) || (ret = report_top(t, r)) || (ret = report_iter(t, r)) ||
	    (ret = report_memory(t, r)))
		return ret;
	return report_findings(r);
}

void report_release(struct report *r)
{
	for (size_t p = 0; p < r->nprocs; p++) {
		struct rep_proc *rp = &r->procs[p];

		free(rp->findings);
		free(rp->late);
		free(rp->devs);
		free(rp->hot);
		free(rp->streams);
		free(rp->comm);
		free(rp->kernels);
		free(rp->calls);
		free(rp->errors);
		free(rp->mem);
	}
	free(r->procs);
	memset(r, 0, sizeof(*r));
}
