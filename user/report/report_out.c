// SPDX-License-Identifier: BSD-2-Clause
/* The report as text (for people) and JSON (for scripts). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "lib/json_writer.h"
#include "model/cuda_calls.h"
#include "model/thread_state.h"
#include "report/report.h"

#define TEXT_TOP 10

static double ms(uint64_t ns)
{
	return ns / 1e6;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * a / b : 0;
}

static bool proc_empty(const struct rep_proc *rp)
{
	return !rp->napi && !rp->ngpu && !rp->nwaits;
}

/* "qualname (file:line)" -> "file:line" and qualname, NULL when unknown */
static void frame_parts(const struct rt_table *t, uint32_t site, char *file, size_t flen,
			char *func, size_t fnlen)
{
	const char *f = rt_str(t, site), *qual, *s;
	size_t qlen;

	file[0] = func[0] = 0;
	if (!site)
		return;
	if (!report_split_frame(f, &qual, &qlen, &s)) {
		snprintf(file, flen, "%s", f);
		return;
	}
	snprintf(file, flen, "%.*s", (int)(strlen(s) - 1), s);
	snprintf(func, fnlen, "%.*s", (int)qlen, qual);
}

/* What follows a site taken from an attributed stack (report_table.h). */
static const char *attributed(uint32_t site)
{
	return rt_site_attributed(site) ? " (attributed)" : "";
}

static const char *bytes_h(uint64_t b, char *buf, size_t len)
{
	if (b >= 1ULL << 30)
		snprintf(buf, len, "%.2f GiB", b / 1073741824.0);
	else if (b >= 1ULL << 20)
		snprintf(buf, len, "%.2f MiB", b / 1048576.0);
	else if (b >= 1024)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
	return buf;
}

/* ---------------------------------------------------------------- text */

static void text_findings(const struct rt_table *t, const struct rep_proc *rp, FILE *f)
{
	char file[512], func[512], detail[1024];

	if (!rp->nfindings)
		return;
	fprintf(f, "  findings (costliest first; cost = GPU idle time, or GPU time for wasted or repeated work):\n");
	for (size_t k = 0; k < rp->nfindings && k < TEXT_TOP; k++) {
		const struct rep_finding *x = &rp->findings[k];

		frame_parts(t, x->site, file, sizeof(file), func, sizeof(func));
		report_finding_detail(t, rp, x, detail, sizeof(detail));
		fprintf(f, "    %zu. %-15s %10.3f ms  ", k + 1, report_finding_kind(x), ms(x->cost_ns));
		if (x->site)
			fprintf(f, "%s (%s)%s\n", func[0] ? func : "?", file, attributed(x->site));
		else
			fprintf(f, "stack unknown\n");
		fprintf(f, "       %s\n", detail);
	}
}

/* The function of frame "qualname (file:line)" into buf. */
static const char *function_of(const struct rt_table *t, uint32_t frame, char *buf, size_t len)
{
	char file[512];

	frame_parts(t, frame, file, sizeof(file), buf, len);
	return buf;
}

/* A phase's name: the function its line calls, else "line N". */
static const char *phase_name(const struct rt_table *t, const struct rep_phase *x, char *buf,
			      size_t len)
{
	if (!x->site)
		return "outside any phase";
	const char *line = strrchr(rt_str(t, x->site), ':');

	if (x->name)
		return function_of(t, x->name, buf, len);
	snprintf(buf, len, "line %.*s", line ? (int)strcspn(line + 1, ")") : 1, line ? line + 1 : "?");
	return buf;
}

/* The loop frame's function: "qualname (file)", the line left out. */
static const char *loop_name(const struct rt_table *t, uint32_t frame, char *buf, size_t len)
{
	const char *f = rt_str(t, frame), *colon = strrchr(f, ':');

	if (colon && strchr(colon, ')'))
		snprintf(buf, len, "%.*s)", (int)(colon - f), f);
	else
		snprintf(buf, len, "%s", f);
	return buf;
}

static void text_anatomy(const struct rt_table *t, const struct rep_iter *it, FILE *f)
{
	char name[512], file[512], func[512];
	int w = 28;             /* the phase column: its longest name */

	if (!it->nphases)
		return;
	for (size_t k = 0; k < it->nphases; k++) {
		int n = strlen(phase_name(t, &it->phases[k], name, sizeof(name)));

		w = n > w ? n : w;
	}
	fprintf(f, "  iteration anatomy (per step: median [min-max] ms; the loop is %s):\n",
		loop_name(t, it->loop, func, sizeof(func)));
	fprintf(f, "    %-*s %-24s %-24s %9s  %s\n", w, "phase", "GPU ms", "host ms", "launches",
		"loop line");
	for (size_t k = 0; k < it->nphases; k++) {
		const struct rep_phase *x = &it->phases[k];
		char g[64], h[64];

		snprintf(g, sizeof(g), "%.3f [%.3f-%.3f]", ms(x->gpu_ns[0]), ms(x->gpu_ns[1]),
			 ms(x->gpu_ns[2]));
		snprintf(h, sizeof(h), "%.3f [%.3f-%.3f]", ms(x->host_ns[0]), ms(x->host_ns[1]),
			 ms(x->host_ns[2]));
		frame_parts(t, x->site, file, sizeof(file), func, sizeof(func));
		fprintf(f, "    %-*s %-24s %-24s %9" PRIu64 "  %s\n",
			w, phase_name(t, x, name, sizeof(name)), g, h, x->launches[0],
			x->site ? file : "-");
	}
}

/* Host-bound idle time by the launching thread's state, costliest first. */
static void text_causes(const struct rt_table *t, const struct rep_device *v, FILE *f)
{
	if (!v->ncauses)
		return;
	fprintf(f, "      host-bound, by what the launching thread was doing:\n");
	for (size_t k = 0; k < v->ncauses && k < TEXT_TOP; k++) {
		const struct rep_cause *c = &v->causes[k];

		fprintf(f, "        %10.3f ms (%3.0f%%)  %-9s  %s%s\n", ms(c->ns),
			pct(c->ns, v->host_bound_ns), report_cause_name(c->cause),
			c->site ? rt_str(t, c->site) : "site unknown", attributed(c->site));
	}
}

static void text_proc(const struct rt_table *t, const struct rep_proc *rp, FILE *f)
{
	char file[512], func[512], b1[32], b2[32], b3[32];

	fprintf(f, "\nprocess %u (%s): %" PRIu64 " host calls, %" PRIu64 " GPU activities\n",
		rp->pid, rp->name ? rt_str(t, rp->name) : "?", rp->napi, rp->ngpu);
	text_findings(t, rp, f);
	if (rp->nwaits) {
		fprintf(f, "  no driver call or GPU work in the recording (hung before it?); its threads' "
			"longest waits:\n");
		fprintf(f, "    %8s %12s %12s %12s  %-11s %s\n", "thread", "traced ms", "running ms",
			"waited ms", "in", "at");
	}
	for (size_t k = 0; k < rp->nwaits; k++) {
		const struct rep_wait *w = &rp->waits[k];

		frame_parts(t, w->site, file, sizeof(file), func, sizeof(func));
		fprintf(f, "    %8u %12.3f %12.3f %12.3f  %-11s ", w->tid, ms(w->span_ns),
			ms(w->running_ns), ms(w->wait_ns), w->wait_ns ? model_state_name(w->state) : "-");
		if (w->site)
			fprintf(f, "%s (%s)\n", func[0] ? func : "?", file);
		else
			fprintf(f, "%s\n", w->wait_ns ? "stack unknown" : "-");
	}
	if (rp->nopen)
		fprintf(f, "  still in a driver call when the recording stopped (a hang, or a long wait):\n");
	for (size_t k = 0; k < rp->nopen && k < TEXT_TOP; k++) {
		const struct rep_open *o = &rp->open[k];

		frame_parts(t, o->site, file, sizeof(file), func, sizeof(func));
		fprintf(f, "    %s on thread %u since +%.3f ms, %.3f ms so far, from ", rt_str(t, o->name),
			o->tid, ms(o->ts - t->t_first), ms(o->dur));
		if (o->site)
			fprintf(f, "%s (%s)%s\n", func[0] ? func : "?", file, attributed(o->site));
		else
			fprintf(f, "stack unknown\n");
	}
	if (!rp->ndevs)
		fprintf(f, "  no GPU activity in the trace for this process\n");
	for (size_t d = 0; d < rp->ndevs; d++) {
		const struct rep_device *v = &rp->devs[d];
		uint64_t idle = v->span_ns - v->busy_ns;

		fprintf(f, "  GPU %u: busy %.1f%% (%.3f ms of a %.3f ms span, %" PRIu64 " activities)\n",
			v->device, pct(v->busy_ns, v->span_ns), ms(v->busy_ns), ms(v->span_ns), v->nwork);
		fprintf(f, "    idle %.3f ms: host-bound %.3f ms (%.0f%%), sync-bound %.3f ms (%.0f%%), "
			"other %.3f ms (%.0f%%)\n", ms(idle), ms(v->host_bound_ns),
			pct(v->host_bound_ns, idle), ms(v->sync_bound_ns), pct(v->sync_bound_ns, idle),
			ms(v->other_ns), pct(v->other_ns, idle));
		text_causes(t, v, f);
	}
	if (rp->nhot) {
		fprintf(f, "  sync hotspots (blocking syncs by the Python line that made them and call, costliest first):\n");
		fprintf(f, "    %7s %12s %12s  %s\n", "count", "blocked ms", "GPU idle ms", "site");
		for (size_t k = 0; k < rp->nhot && k < TEXT_TOP; k++) {
			const struct rep_hotspot *h = &rp->hot[k];

			frame_parts(t, h->site, file, sizeof(file), func, sizeof(func));
			fprintf(f, "    %7" PRIu64 " %12.3f %12.3f  ", h->count, ms(h->blocked_ns),
				ms(h->gpu_idle_ns));
			if (h->site)
				fprintf(f, "%s (%s)%s  [%s]\n", func[0] ? func : "?", file,
					attributed(h->site), rt_str(t, h->call));
			else
				fprintf(f, "stack unknown  [%s]\n", rt_str(t, h->call));
		}
	}
	if (rp->ncomm) {
		fprintf(f, "  communication (NCCL kernels; exposed = running with no compute kernel on the device):\n");
		fprintf(f, "    %7s %10s %10s %8s  %-11s %s\n", "count", "total ms", "exposed ms",
			"exposed", "same stream", "kernel");
		for (size_t k = 0; k < rp->ncomm; k++) {
			const struct rep_comm *c = &rp->comm[k];

			fprintf(f, "    %7" PRIu64 " %10.3f %10.3f %7.0f%%  %-11s %s (GPU %u / stream %u)\n",
				c->count, ms(c->total_ns), ms(c->exposed_ns), pct(c->exposed_ns, c->total_ns),
				c->same_stream_as_compute ? "yes" : "no", rt_str(t, c->kernel), c->device,
				c->stream);
		}
	}
	for (size_t k = 0, any = 0; k < rp->nstreams; k++) {
		const struct rep_stream *s = &rp->streams[k];

		if (!s->launch_bound)
			continue;
		if (!any++)
			fprintf(f, "  launch-bound streams (kernels shorter than the gaps between them):\n");
		fprintf(f, "    GPU %u / stream %u: %" PRIu64 " kernels, median kernel %.1f us, median gap "
			"%.1f us, next launch late in %.0f%% of gaps, %.0f launches/s, %.1f us host time per launch\n",
			s->device, s->stream, s->kernels, s->median_kernel_ns / 1e3, s->median_gap_ns / 1e3,
			100 * s->late_fraction, s->launch_rate, s->host_per_launch_ns / 1e3);
	}
	if (rp->iter.found) {
		const struct rep_iter *it = &rp->iter;
		uint32_t from = rt_site(t, it->anchor_call);

		fprintf(f, "  iterations: %" PRIu64 " steps, %.3f ms mean (median %.3f, min %.3f, max %.3f, "
			"sd %.3f), %" PRIu64 " launches per step on thread %u; from the %s, each step "
			"starting at %s", it->steps, it->mean_ns / 1e6, it->median_ns / 1e6,
			it->min_ns / 1e6, it->max_ns / 1e6, it->stddev_ns / 1e6, it->kernels_per_step,
			it->tid, it->from_stacks ? "Python stacks" : "kernel launch sequence",
			rt_str(t, it->anchor));
		if (from)
			fprintf(f, " from %s%s", rt_str(t, from), attributed(from));
		fprintf(f, "\n");
		text_anatomy(t, it, f);
	} else if (rp->ngpu || rp->napi) {
		fprintf(f, "  iterations: no repeating step structure found\n");
	}
	if (rp->nnodes) {
		fprintf(f, "  backward work by PyTorch autograd node, and the forward line that made it:\n");
		fprintf(f, "    %10s %8s %8s  %-24s %s\n", "GPU ms", "launches", "calls", "node",
			"forward call");
		for (size_t k = 0; k < rp->nnodes && k < TEXT_TOP; k++) {
			const struct rep_node *x = &rp->nodes[k];

			frame_parts(t, x->site, file, sizeof(file), func, sizeof(func));
			fprintf(f, "    %10.3f %8" PRIu64 " %8" PRIu64 "  %-24s ", ms(x->gpu_ns),
				x->launches, x->calls, rt_str(t, x->node));
			if (x->site)
				fprintf(f, "%s (%s)\n", func[0] ? func : "?", file);
			else
				fprintf(f, "made before the recording, or outside Python\n");
		}
	}
	for (size_t k = 0; k < rp->nmem; k++) {
		const struct rep_mem_dev *m = &rp->mem[k];

		frame_parts(t, m->peak_site, file, sizeof(file), func, sizeof(func));
		fprintf(f, "  device memory (GPU %u): peak %s at +%.3f ms, reached by %s of %s at %s%s%s%s%s; "
			"%" PRIu64 " allocations, %" PRIu64 " frees, %s in use at the end\n",
			m->device, bytes_h(m->peak_bytes, b1, sizeof(b1)), ms(m->peak_ts - t->t_first),
			rt_str(t, m->peak_call), bytes_h(m->peak_alloc_bytes, b2, sizeof(b2)),
			m->peak_site ? func : "stack unknown", m->peak_site ? " (" : "",
			m->peak_site ? file : "", m->peak_site ? ")" : "", attributed(m->peak_site),
			m->allocs, m->frees,
			bytes_h(m->end_bytes, b3, sizeof(b3)));
	}
	if (rp->nkernels) {
		fprintf(f, "  top kernels by GPU time:\n    %8s %10s %10s %7s  %s\n", "count", "total ms",
			"mean us", "share", "kernel");
		for (size_t k = 0; k < rp->nkernels && k < TEXT_TOP; k++) {
			const struct rep_top *x = &rp->kernels[k];

			fprintf(f, "    %8" PRIu64 " %10.3f %10.1f %6.1f%%  %s\n", x->count, ms(x->total_ns),
				x->total_ns / 1e3 / x->count, 100 * x->share, rt_str(t, x->name));
		}
	}
	if (rp->nfailed) {
		fprintf(f, "  failed driver calls: %" PRIu64 "\n    %8s  %-40s %s\n", rp->nfailed,
			"count", "call", "error");
		for (size_t k = 0; k < rp->nerrors && k < TEXT_TOP; k++) {
			const struct rep_err *x = &rp->errors[k];
			char buf[32];

			fprintf(f, "    %8" PRIu64 "  %-40s %s\n", x->count, rt_str(t, x->name),
				cuda_result_label(x->ret, buf, sizeof(buf)));
		}
	}
	if (rp->ncalls) {
		fprintf(f, "  top driver calls by host time:\n    %8s %10s %10s %10s  %s\n", "count",
			"total ms", "mean us", "max us", "call");
		for (size_t k = 0; k < rp->ncalls && k < TEXT_TOP; k++) {
			const struct rep_top *x = &rp->calls[k];

			fprintf(f, "    %8" PRIu64 " %10.3f %10.1f %10.1f  %s\n", x->count, ms(x->total_ns),
				x->total_ns / 1e3 / x->count, x->max_ns / 1e3, rt_str(t, x->name));
		}
	}
}

int report_text(const struct rt_table *t, const struct report *r, FILE *f)
{
	size_t np = 0;

	for (size_t p = 0; p < r->nprocs; p++)
		np += !proc_empty(&r->procs[p]);
	fprintf(f, "gpubpf report: %s: %zu events, %zu process%s\n", t->path, t->nev, np,
		np == 1 ? "" : "es");
	if (t->dropped)
		fprintf(f, "%" PRIu64 " events were lost while recording: counts below are low\n",
			t->dropped);
	for (size_t i = 0; i < t->nmissed; i++)
		fprintf(f, "calls of pid %u may be missing: %s\n", t->missed[2 * i],
			rt_str(t, t->missed[2 * i + 1]));
	if (!r->any_stacks)
		fprintf(f, "Python stacks: not in this trace; call sites are unknown\n");
	if (!r->any_gpu)
		fprintf(f, "no GPU activity in this trace (recorded with --no-device, or without GPU timing): "
			"GPU usage, idle time and kernels are not known\n");
	for (size_t p = 0; p < r->nprocs; p++)
		if (!proc_empty(&r->procs[p]))
			text_proc(t, &r->procs[p], f);
	return ferror(f) ? -EIO : 0;
}

/* ---------------------------------------------------------------- json */

/* Members of the JSON report, through the streaming writer. */
/* A call site as "file:line" and its function, null when unknown. */
static void ksite(struct jw *jw, const struct rt_table *t, uint32_t site, const char *key_site,
		  const char *key_func)
{
	char file[512], func[512];

	frame_parts(t, site, file, sizeof(file), func, sizeof(func));
	jw_key(jw, key_site);
	if (site)
		jw_str(jw, file);
	else
		jw_null(jw);
	jw_key(jw, key_func);
	if (func[0])
		jw_str(jw, func);
	else
		jw_null(jw);
	/* "attributed" beside "site", "peak_attributed" beside "peak_site"... */
	if (rt_site_attributed(site)) {
		char key[64];

		snprintf(key, sizeof(key), "%.*sattributed", (int)(strlen(key_site) - strlen("site")),
			 key_site);
		jw_kv_bool(jw, key, true);
	}
}

/* "site": the whole frame "function (file:line)", null when unknown. */
static void frame_site(struct jw *jw, const struct rt_table *t, uint32_t site)
{
	if (site)
		jw_kv_str(jw, "site", rt_str(t, site));
	else
		jw_kv_null(jw, "site");
	if (rt_site_attributed(site))
		jw_kv_bool(jw, "attributed", true);
}

/* A device's host-bound causes, each site the whole frame, null when unknown. */
static void json_causes(struct jw *jw, const struct rt_table *t, const struct rep_device *v)
{
	jw_key(jw, "host_bound_causes");
	jw_arr_begin(jw);
	for (size_t k = 0; k < v->ncauses; k++) {
		const struct rep_cause *c = &v->causes[k];

		jw_obj_begin(jw);
		jw_kv_str(jw, "cause", report_cause_name(c->cause));
		frame_site(jw, t, c->site);
		jw_kv_ms(jw, "ms", c->ns);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
}

/* The findings, each site the whole frame "function (file:line)", null when unknown. */
static void json_findings(const struct rt_table *t, const struct rep_proc *rp, struct jw *jw)
{
	char detail[1024];

	jw_key(jw, "findings");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->nfindings; k++) {
		const struct rep_finding *x = &rp->findings[k];

		jw_obj_begin(jw);
		jw_kv_str(jw, "kind", report_finding_kind(x));
		jw_kv_ms(jw, "cost_ms", x->cost_ns);
		frame_site(jw, t, x->site);
		report_finding_detail(t, rp, x, detail, sizeof(detail));
		jw_kv_str(jw, "detail", detail);
		jw_kv_uint(jw, "count", x->count);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
}

/* "loop_function" and "phases" of the iterations */
static void json_anatomy(const struct rt_table *t, const struct rep_iter *it, struct jw *jw)
{
	static const char *const stat[3] = { "median", "min", "max" };
	char name[512], key[32];

	jw_key(jw, "loop_function");
	if (it->loop)
		jw_str(jw, loop_name(t, it->loop, name, sizeof(name)));
	else
		jw_null(jw);
	jw_key(jw, "phases");
	jw_arr_begin(jw);
	for (size_t k = 0; k < it->nphases; k++) {
		const struct rep_phase *x = &it->phases[k];

		jw_obj_begin(jw);
		jw_kv_str(jw, "phase", phase_name(t, x, name, sizeof(name)));
		frame_site(jw, t, x->site);
		for (int s = 0; s < 3; s++) {
			snprintf(key, sizeof(key), "gpu_ms_%s", stat[s]);
			jw_kv_ms(jw, key, x->gpu_ns[s]);
			snprintf(key, sizeof(key), "host_ms_%s", stat[s]);
			jw_kv_ms(jw, key, x->host_ns[s]);
		}
		jw_kv_uint(jw, "launches_median", x->launches[0]);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
}

static void json_proc(const struct rt_table *t, const struct rep_proc *rp, struct jw *jw)
{
	jw_obj_begin(jw);
	jw_kv_uint(jw, "pid", rp->pid);
	jw_kv_str(jw, "name", rp->name ? rt_str(t, rp->name) : "");
	jw_kv_uint(jw, "host_calls", rp->napi);
	jw_kv_uint(jw, "gpu_activities", rp->ngpu);
	json_findings(t, rp, jw);
	jw_key(jw, "devices");
	jw_arr_begin(jw);
	for (size_t d = 0; d < rp->ndevs; d++) {
		const struct rep_device *v = &rp->devs[d];

		jw_obj_begin(jw);
		jw_kv_uint(jw, "device", v->device);
		jw_kv_double(jw, "gpu_usage_ratio", v->span_ns ? (double)v->busy_ns / v->span_ns : 0);
		jw_kv_ms(jw, "busy_ms", v->busy_ns);
		jw_kv_ms(jw, "span_ms", v->span_ns);
		jw_key(jw, "idle");
		jw_obj_begin(jw);
		jw_kv_ms(jw, "host_bound_ms", v->host_bound_ns);
		jw_kv_ms(jw, "sync_bound_ms", v->sync_bound_ns);
		jw_kv_ms(jw, "other_ms", v->other_ns);
		json_causes(jw, t, v);
		jw_obj_end(jw);
		jw_kv_uint(jw, "activities", v->nwork);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	jw_key(jw, "sync_hotspots");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->nhot; k++) {
		const struct rep_hotspot *h = &rp->hot[k];

		jw_obj_begin(jw);
		ksite(jw, t, h->site, "site", "function");
		jw_kv_str(jw, "call", rt_str(t, h->call));
		jw_kv_uint(jw, "count", h->count);
		jw_kv_ms(jw, "blocked_ms", h->blocked_ns);
		jw_kv_ms(jw, "gpu_idle_ms", h->gpu_idle_ns);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	jw_key(jw, "comm_overlap");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->ncomm; k++) {
		const struct rep_comm *c = &rp->comm[k];

		jw_obj_begin(jw);
		jw_kv_str(jw, "kernel", rt_str(t, c->kernel));
		jw_kv_uint(jw, "device", c->device);
		jw_kv_uint(jw, "stream", c->stream);
		jw_kv_bool(jw, "same_stream_as_compute", c->same_stream_as_compute);
		jw_kv_uint(jw, "count", c->count);
		jw_kv_ms(jw, "total_ms", c->total_ns);
		jw_kv_ms(jw, "exposed_ms", c->exposed_ns);
		jw_kv_double(jw, "exposed_fraction", c->total_ns ? (double)c->exposed_ns / c->total_ns : 0);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	jw_key(jw, "streams");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->nstreams; k++) {
		const struct rep_stream *st = &rp->streams[k];

		jw_obj_begin(jw);
		jw_kv_uint(jw, "device", st->device);
		jw_kv_uint(jw, "stream", st->stream);
		jw_kv_uint(jw, "kernels", st->kernels);
		jw_kv_double(jw, "median_kernel_us", st->median_kernel_ns / 1e3);
		jw_kv_double(jw, "median_gap_us", st->median_gap_ns / 1e3);
		jw_kv_double(jw, "late_launch_fraction", st->late_fraction);
		jw_kv_double(jw, "launch_rate_per_s", st->launch_rate);
		jw_kv_double(jw, "host_us_per_launch", st->host_per_launch_ns / 1e3);
		jw_kv_bool(jw, "launch_bound", st->launch_bound);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	for (int calls = 0; calls < 2; calls++) {
		const struct rep_top *top = calls ? rp->calls : rp->kernels;
		size_t n = calls ? rp->ncalls : rp->nkernels;

		jw_key(jw, calls ? "top_calls" : "top_kernels");
		jw_arr_begin(jw);
		for (size_t k = 0; k < n; k++) {
			const struct rep_top *x = &top[k];

			jw_obj_begin(jw);
			jw_kv_str(jw, "name", rt_str(t, x->name));
			jw_kv_uint(jw, "count", x->count);
			jw_kv_ms(jw, "total_ms", x->total_ns);
			jw_kv_double(jw, "mean_us", x->count ? x->total_ns / 1e3 / x->count : 0);
			if (calls)
				jw_kv_double(jw, "max_us", x->max_ns / 1e3);
			else
				jw_kv_double(jw, "share_of_kernel_time", x->share);
			jw_obj_end(jw);
		}
		jw_arr_end(jw);
	}
	jw_kv_uint(jw, "failed_calls", rp->nfailed);
	jw_key(jw, "errors");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->nerrors; k++) {
		const struct rep_err *x = &rp->errors[k];

		jw_obj_begin(jw);
		jw_kv_str(jw, "name", rt_str(t, x->name));
		jw_kv_int(jw, "ret", x->ret);
		if (cuda_result_name(x->ret))
			jw_kv_str(jw, "error", cuda_result_name(x->ret));
		jw_kv_uint(jw, "count", x->count);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	jw_key(jw, "waits");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->nwaits; k++) {
		const struct rep_wait *w = &rp->waits[k];

		jw_obj_begin(jw);
		jw_kv_uint(jw, "thread", w->tid);
		jw_kv_ms(jw, "traced_ms", w->span_ns);
		jw_kv_ms(jw, "running_ms", w->running_ns);
		jw_kv_ms(jw, "waited_ms", w->wait_ns);
		if (w->wait_ns)
			jw_kv_str(jw, "state", model_state_name(w->state));
		ksite(jw, t, w->site, "site", "function");
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	jw_key(jw, "unfinished_calls");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->nopen; k++) {
		const struct rep_open *o = &rp->open[k];

		jw_obj_begin(jw);
		jw_kv_str(jw, "name", rt_str(t, o->name));
		jw_kv_uint(jw, "thread", o->tid);
		jw_kv_ms(jw, "start_ms", o->ts - t->t_first);
		jw_kv_ms(jw, "so_far_ms", o->dur);
		ksite(jw, t, o->site, "site", "function");
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	jw_key(jw, "iterations");
	jw_obj_begin(jw);
	jw_kv_bool(jw, "detected", rp->iter.found);
	jw_kv_str(jw, "source", rp->iter.from_stacks ? "python_stack" : "launch_sequence");
	jw_kv_uint(jw, "thread", rp->iter.tid);
	if (rp->iter.found) {
		const struct rep_iter *it = &rp->iter;

		jw_kv_str(jw, "anchor_kernel", rt_str(t, it->anchor));
		ksite(jw, t, rt_site(t, it->anchor_call), "anchor_site", "anchor_function");
		jw_kv_uint(jw, "steps", it->steps);
		jw_kv_uint(jw, "kernels_per_step", it->kernels_per_step);
		jw_key(jw, "step_ms");
		jw_obj_begin(jw);
		jw_kv_ms(jw, "mean", it->mean_ns);
		jw_kv_ms(jw, "median", it->median_ns);
		jw_kv_ms(jw, "min", it->min_ns);
		jw_kv_ms(jw, "max", it->max_ns);
		jw_kv_ms(jw, "stddev", it->stddev_ns);
		jw_obj_end(jw);
		json_anatomy(t, it, jw);
	}
	jw_obj_end(jw);
	jw_key(jw, "autograd_nodes");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->nnodes; k++) {
		const struct rep_node *x = &rp->nodes[k];

		jw_obj_begin(jw);
		jw_kv_str(jw, "node", rt_str(t, x->node));
		ksite(jw, t, x->site, "site", "function");
		jw_kv_uint(jw, "calls", x->calls);
		jw_kv_uint(jw, "launches", x->launches);
		jw_kv_ms(jw, "gpu_ms", x->gpu_ns);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	jw_key(jw, "memory");
	jw_arr_begin(jw);
	for (size_t k = 0; k < rp->nmem; k++) {
		const struct rep_mem_dev *m = &rp->mem[k];

		jw_obj_begin(jw);
		jw_kv_uint(jw, "device", m->device);
		jw_kv_uint(jw, "allocs", m->allocs);
		jw_kv_uint(jw, "frees", m->frees);
		jw_kv_uint(jw, "peak_bytes", m->peak_bytes);
		jw_kv_ms(jw, "peak_ms", m->peak_ts - t->t_first);
		ksite(jw, t, m->peak_site, "peak_site", "peak_function");
		jw_kv_str(jw, "peak_call", rt_str(t, m->peak_call));
		jw_kv_uint(jw, "peak_alloc_bytes", m->peak_alloc_bytes);
		jw_kv_uint(jw, "end_bytes", m->end_bytes);
		jw_obj_end(jw);
	}
	jw_arr_end(jw);
	jw_obj_end(jw);
}

int report_json(const struct rt_table *t, const struct report *r, FILE *f)
{
	struct jw jw;
	int ret = jw_init_file(&jw, f);

	if (ret)
		return ret;
	jw_obj_begin(&jw);
	jw_kv_str(&jw, "trace", t->path);
	jw_kv_uint(&jw, "events", t->nev);
	jw_kv_bool(&jw, "gpu_activity", r->any_gpu);
	jw_kv_bool(&jw, "stacks", r->any_stacks);
	jw_kv_uint(&jw, "dropped_events", t->dropped);
	jw_key(&jw, "calls_may_be_missing");
	jw_obj_begin(&jw);
	for (size_t i = 0; i < t->nmissed; i++) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%u", t->missed[2 * i]);
		jw_kv_str(&jw, pid, rt_str(t, t->missed[2 * i + 1]));
	}
	jw_obj_end(&jw);
	jw_key(&jw, "processes");
	jw_arr_begin_lines(&jw);
	for (size_t p = 0; p < r->nprocs; p++)
		if (!proc_empty(&r->procs[p]))
			json_proc(t, &r->procs[p], &jw);
	jw_arr_end(&jw);
	jw_obj_end(&jw);
	ret = jw_finish(&jw);
	jw_release(&jw);
	if (!ret && (fputc('\n', f) == EOF || ferror(f)))
		ret = -EIO;
	return ret;
}
