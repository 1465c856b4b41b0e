// SPDX-License-Identifier: BSD-2-Clause
/*
 * Findings: what the other analyses found, as one list of problems per
 * process, costliest first, each with its cost (the GPU idle time it
 * caused, or for wasted work the GPU time it took) and the Python line to
 * change where the stacks say it.
 *
 *  sync            a sync hotspot (report_gpu.c) whose sync drained the
 *                  GPU: cost its sync-bound idle time
 *  serialised_comm NCCL kernels running with no compute kernel on their
 *                  device: cost the exposed time; site their launch's
 *  launch_bound    a launch-bound stream (report_gpu.c: its kernels at
 *                  most REP_LAUNCH_GAP_NS apart, median): cost the
 *                  host-bound idle time that ended with a kernel of that
 *                  stream, in gaps of up to REP_LONG_GAP_NS each; site
 *                  the launch site that ended most of it
 *  host_bound      the rest of the host-bound idle time (longer gaps on a
 *                  launch-bound stream: a startup, a data load, are not
 *                  the launches' overhead; the gaps of streams whose
 *                  kernels lie further apart), by the site of the launch that
 *                  ended each gap; its detail names what the launching
 *                  thread was doing most of it (report_cause.c)
 *  wasted_work     a phase of the loop body (report_phase.c) after the
 *                  optimizer step, or the calls outside any phase, that
 *                  start GPU work in every step: cost that GPU time, all
 *                  steps together; site the loop line.  The optimizer step
 *                  is the phase that calls a function named step or
 *                  ending in .step, or one in an optim/ folder
 *                  (torch.optim wraps step() in optimizer.py); zero_grad
 *                  after it is the optimizer's own work, not waste.
 *  repeated_work   a kernel run again in most steps on the same grid and
 *                  arguments (report_repeat.c): cost the GPU time of the
 *                  repeats; site the launch site of the repeats.
 * Findings that cost nothing are left out; at most REPORT_FINDINGS_MAX.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "report/report.h"

#define REPORT_FINDINGS_MAX 16

static const char *const kind_names[] = {
	[RF_SYNC] = "sync",
	[RF_COMM] = "serialised_comm",
	[RF_HOST_BOUND] = "host_bound",
	[RF_LAUNCH_BOUND] = "launch_bound",
	[RF_WASTED] = "wasted_work",
	[RF_REPEATED] = "repeated_work",
};

const char *report_finding_kind(const struct rep_finding *f)
{
	return kind_names[f->kind];
}

struct flist {
	struct rep_proc *rp;
	size_t cap;
};

static int add(struct flist *l, struct rep_finding f)
{
	struct rep_proc *rp = l->rp;

	if (!f.cost_ns)
		return 0;
	if (array_grow(&rp->findings, &l->cap, rp->nfindings + 1))
		return -ENOMEM;
	rp->findings[rp->nfindings++] = f;
	return 0;
}

static const struct rep_stream *stream_of(const struct rep_proc *rp, uint32_t device,
					  uint32_t stream)
{
	for (size_t k = 0; k < rp->nstreams; k++)
		if (rp->streams[k].device == device && rp->streams[k].stream == stream)
			return &rp->streams[k];
	return NULL;
}

/* One launch_bound finding per launch-bound stream. */
static int launch_bound(struct flist *l)
{
	const struct rep_proc *rp = l->rp;

	for (size_t k = 0; k < rp->nstreams; k++) {
		const struct rep_stream *s = &rp->streams[k];
		struct rep_finding f = { .kind = RF_LAUNCH_BOUND, .index = k };
		uint64_t top = 0;

		if (!s->launch_bound)
			continue;
		for (size_t i = 0; i < rp->nlate; i++) {
			const struct rep_late *x = &rp->late[i];

			if (x->device != s->device || x->stream != s->stream || x->long_gap)
				continue;
			f.cost_ns += x->idle_ns;
			f.count += x->count;
			if (x->idle_ns > top) {
				top = x->idle_ns;
				f.site = x->site;
			}
		}
		if (add(l, f))
			return -ENOMEM;
	}
	return 0;
}

/* A launch_bound finding has it: on a launch-bound stream, not a long gap. */
static int in_launch_bound(const struct rep_proc *rp, const struct rep_late *x)
{
	const struct rep_stream *s = stream_of(rp, x->device, x->stream);

	return s && s->launch_bound && !x->long_gap;
}

/* Host-bound idle time no launch_bound finding has, one finding per site. */
static int host_bound(struct flist *l)
{
	struct rep_proc *rp = l->rp;
	size_t first = rp->nfindings;

	for (size_t i = 0; i < rp->nlate; i++) {
		const struct rep_late *x = &rp->late[i];
		size_t k;

		if (in_launch_bound(rp, x))
			continue;
		for (k = first; k < rp->nfindings && rp->findings[k].site != x->site; k++)
			;
		if (k < rp->nfindings) {
			rp->findings[k].cost_ns += x->idle_ns;
			rp->findings[k].count += x->count;
		} else if (add(l, (struct rep_finding){ .kind = RF_HOST_BOUND, .site = x->site,
							.cost_ns = x->idle_ns, .count = x->count })) {
			return -ENOMEM;
		}
	}
	return 0;
}

/* What the launching thread did most in the gaps of host_bound finding f. */
static void dominant_cause(const struct rep_proc *rp, const struct rep_finding *f,
			   unsigned *cause, double *share)
{
	uint64_t ns[REP_NCAUSES] = { 0 }, all = 0;

	for (size_t i = 0; i < rp->nlate; i++) {
		const struct rep_late *x = &rp->late[i];

		if (x->site != f->site || in_launch_bound(rp, x))
			continue;
		for (unsigned c = 0; c < REP_NCAUSES; c++)
			ns[c] += x->cause_ns[c];
	}
	*cause = 0;
	for (unsigned c = 0; c < REP_NCAUSES; c++) {
		all += ns[c];
		if (ns[c] > ns[*cause])
			*cause = c;
	}
	*share = all ? (double)ns[*cause] / all : 0;
}

/* Does phase x call a function named name, or ending in .name? */
static bool calls(const struct rt_table *t, const struct rep_phase *x, const char *name,
		  const char **site)
{
	size_t n = strlen(name), qlen;
	const char *qual;

	if (!x->name || !report_split_frame(rt_str(t, x->name), &qual, &qlen, site))
		return false;
	return qlen >= n && !memcmp(qual + qlen - n, name, n) &&
	       (qlen == n || qual[qlen - n - 1] == '.');
}

/* Does phase x call the optimizer's step? */
static bool optimizer_step(const struct rt_table *t, const struct rep_phase *x)
{
	const char *site = "";

	return calls(t, x, "step", &site) || strstr(site, "/optim/");
}

/* GPU work every step after the optimizer step, and outside any phase. */
static int wasted(const struct rt_table *t, struct flist *l)
{
	const struct rep_iter *it = &l->rp->iter;
	bool after = false;

	for (size_t k = 0; k < it->nphases; k++) {
		const struct rep_phase *x = &it->phases[k];

		const char *site;

		/* zeroing the gradients is the optimizer's own bookkeeping */
		if ((after || !x->site) && x->gpu_ns[1] && !calls(t, x, "zero_grad", &site) &&
		    add(l, (struct rep_finding){ .kind = RF_WASTED, .index = k, .site = x->site,
						 .cost_ns = x->gpu_total_ns,
						 .count = it->steps * x->launches[0] }))
			return -ENOMEM;
		after |= optimizer_step(t, x);
	}
	return 0;
}

static int cmp_finding(const void *a, const void *b)
{
	const struct rep_finding *x = a, *y = b;

	if (x->cost_ns != y->cost_ns)
		return x->cost_ns < y->cost_ns ? 1 : -1;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

static int proc_findings(const struct rt_table *t, struct rep_proc *rp)
{
	struct flist l = { .rp = rp };

	for (size_t k = 0; k < rp->nhot; k++)
		if (add(&l, (struct rep_finding){ .kind = RF_SYNC, .index = k,
						  .site = rp->hot[k].site,
						  .cost_ns = rp->hot[k].gpu_idle_ns,
						  .count = rp->hot[k].count }))
			return -ENOMEM;
	for (size_t k = 0; k < rp->ncomm; k++)
		if (add(&l, (struct rep_finding){ .kind = RF_COMM, .index = k,
						  .site = rp->comm[k].site,
						  .cost_ns = rp->comm[k].exposed_ns,
						  .count = rp->comm[k].count }))
			return -ENOMEM;
	if (launch_bound(&l) || host_bound(&l) || wasted(t, &l))
		return -ENOMEM;
	for (size_t k = 0; k < rp->nrepeats; k++)
		if (add(&l, (struct rep_finding){ .kind = RF_REPEATED, .index = k,
						  .site = rp->repeats[k].site,
						  .cost_ns = rp->repeats[k].gpu_ns,
						  .count = rp->repeats[k].count }))
			return -ENOMEM;
	if (rp->nfindings)
		qsort(rp->findings, rp->nfindings, sizeof(*rp->findings), cmp_finding);
	if (rp->nfindings > REPORT_FINDINGS_MAX)
		rp->nfindings = REPORT_FINDINGS_MAX;
	return 0;
}

int report_findings(const struct rt_table *t, struct report *r)
{
	for (size_t p = 0; p < r->nprocs; p++)
		if (proc_findings(t, &r->procs[p]))
			return -ENOMEM;
	return 0;
}

void report_finding_detail(const struct rt_table *t, const struct rep_proc *rp,
			   const struct rep_finding *f, char *buf, size_t len)
{
	const struct rep_hotspot *h;
	const struct rep_comm *c;
	const struct rep_stream *s;
	const struct rep_phase *x;
	const struct rep_repeat *p;
	static const char *const doing[REP_NCAUSES] = {
		[MS_RUNNING] = "running on a CPU",
		[MS_RUNNABLE] = "runnable, waiting for a CPU",
		[MS_GIL_WAIT] = "waiting for the GIL",
		[MS_LOCK_WAIT] = "waiting on a lock",
		[MS_IO] = "blocked in I/O",
		[MS_SLEEP] = "sleeping",
		[MS_OTHER_WAIT] = "in another wait, or not traced",
		[REP_CAUSE_GC] = "collecting garbage",
	};
	unsigned cause;
	double share;

	switch (f->kind) {
	case RF_SYNC:
		h = &rp->hot[f->index];
		snprintf(buf, len, "%" PRIu64 " x %s blocked the host %.3f ms, time it could have "
			 "spent queueing work ahead: the GPU idled that much longer after them, at most",
			 h->count, rt_str(t, h->call), h->blocked_ns / 1e6);
		break;
	case RF_COMM:
		c = &rp->comm[f->index];
		snprintf(buf, len, "%" PRIu64 " x %s on GPU %u / stream %u: %.3f of %.3f ms with no "
			 "compute beside it%s", c->count, rt_str(t, c->kernel), c->device, c->stream,
			 c->exposed_ns / 1e6, c->total_ns / 1e6,
			 c->same_stream_as_compute ? " (on the compute stream: serialised with it)" : "");
		break;
	case RF_LAUNCH_BOUND:
		s = &rp->streams[f->index];
		snprintf(buf, len, "GPU %u / stream %u: %" PRIu64 " kernels of %.1f us median, %.1f us "
			 "median gap, next launch late in %.0f%% of gaps, %.1f us host time per launch",
			 s->device, s->stream, s->kernels, s->median_kernel_ns / 1e3,
			 s->median_gap_ns / 1e3, 100 * s->late_fraction, s->host_per_launch_ns / 1e3);
		break;
	case RF_WASTED:
		x = &rp->iter.phases[f->index];
		snprintf(buf, len, "%.3f ms of GPU work in every step (median, %" PRIu64 " launches a "
			 "step) started %s", x->gpu_ns[0] / 1e6, x->launches[0],
			 x->site ? "after the optimizer step" : "outside any phase of the loop");
		break;
	case RF_REPEATED:
		p = &rp->repeats[f->index];
		snprintf(buf, len, "%s ran again on the same grid and arguments %" PRIu64 " times in "
			 "%" PRIu64 " of %" PRIu64 " steps: its output is possibly recomputed from the "
			 "same inputs", rt_str(t, p->kernel), p->count, p->steps, rp->iter.steps);
		break;
	case RF_HOST_BOUND:
		dominant_cause(rp, f, &cause, &share);
		snprintf(buf, len, "the GPU ran dry %" PRIu64 " time%s waiting for the host to launch "
			 "from here; the launching thread was most often %s (%s, %.0f%% of that time)",
			 f->count, f->count == 1 ? "" : "s", doing[cause], report_cause_name(cause),
			 100 * share);
		break;
	}
}
