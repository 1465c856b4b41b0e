// SPDX-License-Identifier: BSD-2-Clause
/* The report as text (for people) and JSON (for scripts). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "report.h"

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
	return !rp->napi && !rp->ngpu;
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

static void text_proc(const struct rt_table *t, const struct rep_proc *rp, FILE *f)
{
	char file[512], func[512], b1[32], b2[32], b3[32];

	fprintf(f, "\nprocess %u (%s): %" PRIu64 " host calls, %" PRIu64 " GPU activities\n",
		rp->pid, rp->name ? rt_str(t, rp->name) : "?", rp->napi, rp->ngpu);
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
	}
	if (rp->nhot) {
		fprintf(f, "  sync hotspots (blocking syncs by innermost user Python frame, costliest first):\n");
		fprintf(f, "    %7s %12s %12s  %s\n", "count", "blocked ms", "GPU idle ms", "site");
		for (size_t k = 0; k < rp->nhot && k < TEXT_TOP; k++) {
			const struct rep_hotspot *h = &rp->hot[k];

			frame_parts(t, h->site, file, sizeof(file), func, sizeof(func));
			fprintf(f, "    %7" PRIu64 " %12.3f %12.3f  ", h->count, ms(h->blocked_ns),
				ms(h->gpu_idle_ns));
			if (h->site)
				fprintf(f, "%s (%s)  [%s]\n", func[0] ? func : "?", file, rt_str(t, h->call));
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

		fprintf(f, "  iterations: %" PRIu64 " steps, %.3f ms mean (median %.3f, min %.3f, max %.3f, "
			"sd %.3f), %" PRIu64 " launches per step on thread %u; from the %s, each step "
			"starting at %s", it->steps, it->mean_ns / 1e6, it->median_ns / 1e6,
			it->min_ns / 1e6, it->max_ns / 1e6, it->stddev_ns / 1e6, it->kernels_per_step,
			it->tid, it->from_stacks ? "Python stacks" : "kernel launch sequence",
			rt_str(t, it->anchor));
		if (it->anchor_site)
			fprintf(f, " from %s", rt_str(t, it->anchor_site));
		fprintf(f, "\n");
	} else if (rp->ngpu || rp->napi) {
		fprintf(f, "  iterations: no repeating step structure found\n");
	}
	for (size_t k = 0; k < rp->nmem; k++) {
		const struct rep_mem_dev *m = &rp->mem[k];

		frame_parts(t, m->peak_site, file, sizeof(file), func, sizeof(func));
		fprintf(f, "  device memory (GPU %u): peak %s at +%.3f ms, reached by %s of %s at %s%s%s%s; "
			"%" PRIu64 " allocations, %" PRIu64 " frees, %s in use at the end\n",
			m->device, bytes_h(m->peak_bytes, b1, sizeof(b1)), ms(m->peak_ts - t->t_first),
			rt_str(t, m->peak_call), bytes_h(m->peak_alloc_bytes, b2, sizeof(b2)),
			m->peak_site ? func : "stack unknown", m->peak_site ? " (" : "",
			m->peak_site ? file : "", m->peak_site ? ")" : "", m->allocs, m->frees,
			bytes_h(m->end_bytes, b3, sizeof(b3)));
	}
	if (rp->nkernels) {
		fprintf(f, "  top kernels by GPU time:\n    %8s %10s %10s %7s  %s\n", "count", "total ms",
			"mean us", "busy", "kernel");
		for (size_t k = 0; k < rp->nkernels && k < TEXT_TOP; k++) {
			const struct rep_top *x = &rp->kernels[k];

			fprintf(f, "    %8" PRIu64 " %10.3f %10.1f %6.1f%%  %s\n", x->count, ms(x->total_ns),
				x->total_ns / 1e3 / x->count, 100 * x->share, rt_str(t, x->name));
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

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void jnum(FILE *f, double v)
{
	fprintf(f, "%.6g", v);
}

static void jms(FILE *f, uint64_t ns)
{
	fprintf(f, "%.6f", ns / 1e6);
}

static void jsite(FILE *f, const struct rt_table *t, uint32_t site, const char *key_site,
		  const char *key_func)
{
	char file[512], func[512];

	frame_parts(t, site, file, sizeof(file), func, sizeof(func));
	fprintf(f, "\"%s\":", key_site);
	if (site)
		jstr(f, file);
	else
		fputs("null", f);
	fprintf(f, ",\"%s\":", key_func);
	if (func[0])
		jstr(f, func);
	else
		fputs("null", f);
}

static void json_proc(const struct rt_table *t, const struct rep_proc *rp, FILE *f)
{
	fprintf(f, "{\"pid\":%u,\"name\":", rp->pid);
	jstr(f, rp->name ? rt_str(t, rp->name) : "");
	fprintf(f, ",\"host_calls\":%" PRIu64 ",\"gpu_activities\":%" PRIu64 ",\"devices\":[",
		rp->napi, rp->ngpu);
	for (size_t d = 0; d < rp->ndevs; d++) {
		const struct rep_device *v = &rp->devs[d];

		fprintf(f, "%s{\"device\":%u,\"gpu_usage_ratio\":", d ? "," : "", v->device);
		jnum(f, v->span_ns ? (double)v->busy_ns / v->span_ns : 0);
		fputs(",\"busy_ms\":", f);
		jms(f, v->busy_ns);
		fputs(",\"span_ms\":", f);
		jms(f, v->span_ns);
		fputs(",\"idle\":{\"host_bound_ms\":", f);
		jms(f, v->host_bound_ns);
		fputs(",\"sync_bound_ms\":", f);
		jms(f, v->sync_bound_ns);
		fputs(",\"other_ms\":", f);
		jms(f, v->other_ns);
		fprintf(f, "},\"activities\":%" PRIu64 "}", v->nwork);
	}
	fputs("],\"sync_hotspots\":[", f);
	for (size_t k = 0; k < rp->nhot; k++) {
		const struct rep_hotspot *h = &rp->hot[k];

		fputs(k ? ",{" : "{", f);
		jsite(f, t, h->site, "site", "function");
		fputs(",\"call\":", f);
		jstr(f, rt_str(t, h->call));
		fprintf(f, ",\"count\":%" PRIu64 ",\"blocked_ms\":", h->count);
		jms(f, h->blocked_ns);
		fputs(",\"gpu_idle_ms\":", f);
		jms(f, h->gpu_idle_ns);
		fputs("}", f);
	}
	fputs("],\"comm_overlap\":[", f);
	for (size_t k = 0; k < rp->ncomm; k++) {
		const struct rep_comm *c = &rp->comm[k];

		fputs(k ? ",{\"kernel\":" : "{\"kernel\":", f);
		jstr(f, rt_str(t, c->kernel));
		fprintf(f, ",\"device\":%u,\"stream\":%u,\"same_stream_as_compute\":%s,\"count\":%" PRIu64
			",\"total_ms\":", c->device, c->stream, c->same_stream_as_compute ? "true" : "false",
			c->count);
		jms(f, c->total_ns);
		fputs(",\"exposed_ms\":", f);
		jms(f, c->exposed_ns);
		fputs(",\"exposed_fraction\":", f);
		jnum(f, c->total_ns ? (double)c->exposed_ns / c->total_ns : 0);
		fputs("}", f);
	}
	fputs("],\"streams\":[", f);
	for (size_t k = 0; k < rp->nstreams; k++) {
		const struct rep_stream *s = &rp->streams[k];

		fprintf(f, "%s{\"device\":%u,\"stream\":%u,\"kernels\":%" PRIu64 ",\"median_kernel_us\":",
			k ? "," : "", s->device, s->stream, s->kernels);
		jnum(f, s->median_kernel_ns / 1e3);
		fputs(",\"median_gap_us\":", f);
		jnum(f, s->median_gap_ns / 1e3);
		fputs(",\"late_launch_fraction\":", f);
		jnum(f, s->late_fraction);
		fputs(",\"launch_rate_per_s\":", f);
		jnum(f, s->launch_rate);
		fputs(",\"host_us_per_launch\":", f);
		jnum(f, s->host_per_launch_ns / 1e3);
		fprintf(f, ",\"launch_bound\":%s}", s->launch_bound ? "true" : "false");
	}
	fputs("],\"top_kernels\":[", f);
	for (size_t k = 0; k < rp->nkernels; k++) {
		const struct rep_top *x = &rp->kernels[k];

		fputs(k ? ",{\"name\":" : "{\"name\":", f);
		jstr(f, rt_str(t, x->name));
		fprintf(f, ",\"count\":%" PRIu64 ",\"total_ms\":", x->count);
		jms(f, x->total_ns);
		fputs(",\"mean_us\":", f);
		jnum(f, x->total_ns / 1e3 / x->count);
		fputs(",\"share_of_busy\":", f);
		jnum(f, x->share);
		fputs("}", f);
	}
	fputs("],\"top_calls\":[", f);
	for (size_t k = 0; k < rp->ncalls; k++) {
		const struct rep_top *x = &rp->calls[k];

		fputs(k ? ",{\"name\":" : "{\"name\":", f);
		jstr(f, rt_str(t, x->name));
		fprintf(f, ",\"count\":%" PRIu64 ",\"total_ms\":", x->count);
		jms(f, x->total_ns);
		fputs(",\"mean_us\":", f);
		jnum(f, x->total_ns / 1e3 / x->count);
		fputs(",\"max_us\":", f);
		jnum(f, x->max_ns / 1e3);
		fputs("}", f);
	}
	fprintf(f, "],\"iterations\":{\"detected\":%s,\"source\":\"%s\",\"thread\":%u",
		rp->iter.found ? "true" : "false",
		rp->iter.from_stacks ? "python_stack" : "launch_sequence", rp->iter.tid);
	if (rp->iter.found) {
		const struct rep_iter *it = &rp->iter;

		fputs(",\"anchor_kernel\":", f);
		jstr(f, rt_str(t, it->anchor));
		fputs(",", f);
		jsite(f, t, it->anchor_site, "anchor_site", "anchor_function");
		fprintf(f, ",\"steps\":%" PRIu64 ",\"kernels_per_step\":%" PRIu64 ",\"step_ms\":{\"mean\":",
			it->steps, it->kernels_per_step);
		jms(f, it->mean_ns);
		fputs(",\"median\":", f);
		jms(f, it->median_ns);
		fputs(",\"min\":", f);
		jms(f, it->min_ns);
		fputs(",\"max\":", f);
		jms(f, it->max_ns);
		fputs(",\"stddev\":", f);
		jms(f, it->stddev_ns);
		fputs("}", f);
	}
	fputs("},\"memory\":[", f);
	for (size_t k = 0; k < rp->nmem; k++) {
		const struct rep_mem_dev *m = &rp->mem[k];

		fprintf(f, "%s{\"device\":%u,\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"peak_bytes\":%"
			PRIu64 ",\"peak_ms\":", k ? "," : "", m->device, m->allocs, m->frees,
			m->peak_bytes);
		jms(f, m->peak_ts - t->t_first);
		fputs(",", f);
		jsite(f, t, m->peak_site, "peak_site", "peak_function");
		fputs(",\"peak_call\":", f);
		jstr(f, rt_str(t, m->peak_call));
		fprintf(f, ",\"peak_alloc_bytes\":%" PRIu64 ",\"end_bytes\":%" PRIu64 "}",
			m->peak_alloc_bytes, m->end_bytes);
	}
	fputs("]}", f);
}

int report_json(const struct rt_table *t, const struct report *r, FILE *f)
{
	bool first = true;

	fputs("{\"trace\":", f);
	jstr(f, t->path);
	fprintf(f, ",\"events\":%zu,\"gpu_activity\":%s,\"stacks\":%s,\"processes\":[", t->nev,
		r->any_gpu ? "true" : "false", r->any_stacks ? "true" : "false");
	for (size_t p = 0; p < r->nprocs; p++) {
		if (proc_empty(&r->procs[p]))
			continue;
		if (!first)
			fputs(",\n", f);
		first = false;
		json_proc(t, &r->procs[p], f);
	}
	fputs("]}\n", f);
	return ferror(f) ? -EIO : 0;
}
