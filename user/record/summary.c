// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record's closing lines: events written, dropped and missed, the
 * files' sizes (and how to open JSON too big for a browser), and the
 * warnings the recording gathered (a recorder that fell behind among them).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "lib/sink.h"
#include "record/record.h"

void record_size_text(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "kB", "MB", "GB", "TB" };
	double v = bytes;
	int u = 0;

	while (v >= 1000 && u < 4)
		v /= 1000, u++;
	snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

void record_open_hint(const char *path, uint64_t bytes, char *buf, size_t size)
{
	char text[32];

	buf[0] = 0;
	if (sink_format(path) != SINK_JSON || bytes <= RECORD_JSON_BROWSER_MAX)
		return;
	record_size_text(bytes, text, sizeof(text));
	snprintf(buf, size, "gpubpf: %s is %s of JSON, more than a browser opens: write "
		 ".pftrace instead (gpubpf convert %s run.pftrace), or serve it with "
		 "trace_processor_shell --httpd %s and open ui.perfetto.dev\n", path, text, path,
		 path);
}

/* " (12.3 MB)" after an output's name; its hint line appended to hints. */
static void print_output(const char *path, char *hints, size_t size)
{
	struct stat st;
	char text[32];
	size_t n = strlen(hints);

	fputs(path, stderr);
	if (stat(path, &st))
		return;
	record_size_text(st.st_size, text, sizeof(text));
	fprintf(stderr, " (%s)", text);
	record_open_hint(path, st.st_size, hints + n, size - n);
}

/*
 * Whether the reader waited for the decoding to catch up, which left the
 * rings unread: said when records were dropped (it may be why), or with -v.
 */
static void report_queue(struct record *r)
{
	const struct rec_queue *q = &r->reader.q;

	if (q->full_waits && (r->model.dropped_total || r->o->verbose))
		fprintf(stderr, "gpubpf: the recorder fell behind: its queue of records to decode "
			"was full (%zu MiB: --memory, at least 16M) and the ring buffers went unread "
			"for %.2f s in all%s\n", q->cap >> 20, q->full_ns / 1e9,
			r->model.dropped_total ? "; a larger --memory holds more" : "");
	if (r->o->verbose)
		fprintf(stderr, "gpubpf: at most %.1f MiB of records waited to be decoded at once "
			"(of %zu MiB)\n", q->queued_max / 1048576.0, q->cap >> 20);
}

/* A model pid as people read it: the pid, and which of its processes (model.h). */
static const char *pid_str(uint32_t pid, char *buf, size_t len)
{
	if (pid < MODEL_PID_AGAIN)
		snprintf(buf, len, "%u", pid);
	else
		snprintf(buf, len, "%u #%u", model_real_pid(pid), model_pid_nth(pid));
	return buf;
}

void record_summary(struct record *r)
{
	char pid[32];
	uint64_t gpu_dropped = 0;
	char missed[64] = "", hints[2048] = "";
	int nmissed = 0;

	/* the traced command printed its own; a -p or -a target's stderr is elsewhere */
	for (size_t i = 0; i < r->model.nprocs && r->o->mode != MODE_CMD; i++)
		if (r->model.procs[i].gpu_error && !targets_late_failed(r, r->model.procs[i].pid))
			fprintf(stderr, "gpubpf: pid %s: GPU timing off: %s\n",
				pid_str(r->model.procs[i].pid, pid, sizeof(pid)),
				strtab_get(&r->model.strs, r->model.procs[i].gpu_error));
	if (r->model.clock_repaired && r->o->verbose)
		fprintf(stderr, "gpubpf: %llu GPU records moved later by up to %.3f us, so that "
			"none starts before the call that launched it: CUPTI's GPU clock drifted\n",
			(unsigned long long)r->model.clock_repaired,
			r->model.max_clock_repair_ns / 1e3);
	if (r->model.skewed)
		fprintf(stderr, "gpubpf: warning: %llu GPU records start before the call that "
			"launched them (by up to %.3f us): host and GPU clocks disagree\n",
			(unsigned long long)r->model.skewed, r->model.max_skew_ns / 1e3);
	for (size_t i = 0; i < r->model.nprocs; i++) {
		gpu_dropped += r->model.procs[i].gpu_dropped;
		nmissed += !!r->model.procs[i].missed;
	}
	if (nmissed)
		snprintf(missed, sizeof(missed), ", calls of %d process%s may be missing", nmissed,
			 nmissed > 1 ? "es" : "");
	fprintf(stderr, "gpubpf: %llu events, %llu dropped%s, written to ",
		(unsigned long long)(r->coll.calls + r->coll.gpu_records),
		(unsigned long long)(r->model.dropped_total + gpu_dropped), missed);
	for (int i = 0; i < r->noutputs; i++) {
		fputs(i ? " and " : "", stderr);
		print_output(r->outputs[i], hints, sizeof(hints));
	}
	fprintf(stderr, "\n%s", hints);
	for (size_t i = 0; i < r->model.nprocs; i++)
		if (r->model.procs[i].missed)
			fprintf(stderr, "gpubpf: pid %s: calls may be missing: %s\n",
				pid_str(r->model.procs[i].pid, pid, sizeof(pid)),
				strtab_get(&r->model.strs, r->model.procs[i].missed));
	if (gpu_dropped)
		fprintf(stderr, "gpubpf: of the dropped, %llu GPU records were lost in the traced "
			"process (CUPTI or the injection library)\n", (unsigned long long)gpu_dropped);
	report_queue(r);
	if (r->coll.bad)
		fprintf(stderr, "gpubpf: %llu malformed records skipped\n",
			(unsigned long long)r->coll.bad);
	if (r->py_late_calls)
		fprintf(stderr, "gpubpf: %llu call%s of %d Python process%s came before gpubpf found "
			"%s: no Python stack\n", (unsigned long long)r->py_late_calls,
			r->py_late_calls > 1 ? "s" : "", r->py_late_procs,
			r->py_late_procs > 1 ? "es" : "",
			r->py_late_procs > 1 ? "their interpreters" : "its interpreter");
	if (r->coll.py_unresolved)
		fprintf(stderr, "gpubpf: %llu Python frames could not be named (%llu: their process "
			"had exited, or its memory could not be read; %llu: their code object had "
			"changed); they read \"?\"\n", (unsigned long long)r->coll.py_unresolved,
			(unsigned long long)(r->coll.py_unresolved - r->coll.py_stale),
			(unsigned long long)r->coll.py_stale);
}
