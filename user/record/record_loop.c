// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record's loop: read the ring buffer into the collector, look
 * for new libcuda mappings and exits, until a signal, the duration, the
 * end of the -p targets or of the command.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/resource.h>
#include "lib/proc.h"
#include "model/model_part.h"
#include "record/record.h"

#define POLL_MS 100
#define WAIT_POLL_MS 10         /* while a -p target has no libcuda yet */
#define SCAN_NS 250000000ULL    /* how often to look for libcuda and exits */
#define SCAN_ALL_NS 1000000000ULL
#define GRACE_NS 150000000ULL   /* the injection library delivers every 50 ms */
#define WINDOW_WAIT_NS 1000000000ULL /* for injection libraries to start collecting */
#define PY_FAST_NS 3000000000ULL /* -- CMD: look for Python this long, closely */
#define PY_FAST_POLL_MS 2
#define COLLECTOR_HUNG_NS 5000000000ULL /* no sign of life so long: the hold ends */
/* -- CMD: a signal that stops us is passed on to the command (or not) this long after */
#define FORWARD_AFTER_NS 20000000ULL
#define SAME_SIGNAL_NS 1000000000ULL    /* the kernel sent it the same signal so shortly before */
#define SAME_SENDER_NS 1000000000ULL    /* one process's signal twice within: once */
/* records read but not decoded wait in memory, up to --memory and at least this */
#define READER_MIN_BYTES (16ULL << 20)

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t nsignals;

/*
 * A second signal stops us at once, the command left to run untraced.
 * One process's same signal twice within a second counts once: timeout(1)
 * and other supervisors signal gpubpf, then its whole process group.  (A
 * terminal's, sent by the kernel, always counts: Ctrl-C twice.)
 */
static void on_signal(int sig, siginfo_t *si, void *uctx)
{
	static uint64_t last_at;
	static pid_t last_from;
	static int last_sig;
	uint64_t now = now_ns(CLOCK_MONOTONIC);    /* clock_gettime: async-signal-safe */
	int again = nsignals && sig == last_sig && si->si_code <= 0 &&
		    si->si_pid == last_from && now - last_at < SAME_SENDER_NS;

	last_at = now;
	last_from = si->si_pid;
	last_sig = sig;
	stop_signal = sig;
	nsignals += !again;
	(void)uctx;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct record *r = ctx;
	int ret;

	if (size == sizeof(struct gb_map) && *(const uint32_t *)data == GB_REC_MAP) {
		targets_on_map(r, data);
		return 0;
	}
	if (size == sizeof(struct gb_exec) && *(const uint32_t *)data == GB_REC_EXEC) {
		const struct gb_exec *e = data;

		pystacks_exec(r, e->pid, e->ts);
		return 0;
	}
	if (size == sizeof(struct gb_end) && *(const uint32_t *)data == GB_REC_END) {
		pystacks_end(r, data);
		return 0;
	}
	if (size == sizeof(struct gb_fork) && *(const uint32_t *)data == GB_REC_FORK) {
		pystacks_forked(r, data);
		return 0;
	}
	/* the collector names the thread; its pid is free for another process */
	if (size >= sizeof(struct gb_exit) && *(const uint32_t *)data == GB_REC_EXIT &&
	    ((const struct gb_exit *)data)->ended)
		pystacks_ended(r, ((const struct gb_exit *)data)->pid);
	if (size >= GB_CALL_HEAD && *(const uint32_t *)data == GB_REC_CALL && r->o->stacks) {
		const struct gb_call *c = data;

		/* -a, -- CMD: a process not held at its libcuda (a shell job, a
		 * fork, or one running before us): look for its Python at its
		 * first call */
		if (r->o->mode != MODE_PIDS && (pid_t)c->pid != r->last_pid &&
		    !pystacks_tried(r, c->pid))
			pystacks_try(r, c->pid);
		r->last_pid = c->pid;
		if (!c->pystack)
			pystacks_unwalked(r, c->pid, c->ts_entry);
	}
	ret = collector_record(&r->coll, data, size);
	/* past --memory, the older events go out before the next record comes in */
	if (ret != -ENOMEM && model_event_bytes(&r->model) > r->spill_at &&
	    record_parts_spill(r, now_ns(CLOCK_MONOTONIC)))
		return -EIO;
	/* a malformed record is counted; only running out of memory stops us */
	return ret == -ENOMEM ? ret : 0;
}

static void add_unfinished(void *ctx, const struct gb_call *c)
{
	struct record *r = ctx;

	/*
	 * Entered while the probes were being attached: its return probe may
	 * have come after its entry, and the return have gone unseen
	 */
	if (c->ts_entry < r->collecting_since)
		return;
	if (collector_unfinished(&r->coll, c, r->ended) == -ENOMEM)
		fprintf(stderr, "gpubpf: out of memory: a call in flight at the end is left out\n");
}

static void add_drops(void *ctx, uint32_t pid, uint64_t n)
{
	struct record *r = ctx;
	struct model_process *p = model_process(&r->model, collector_pid_at_end(&r->coll, pid),
						NULL);

	if (p)
		p->dropped = n;
}

/* The records waiting, waiting up to ms for one; < 0: stop recording. */
static int take(struct record *r, int ms)
{
	return ring_reader_take(&r->reader, ms, on_record, r);
}

/*
 * Say the collector is alive (before each poll): the hold stops a process
 * that maps libcuda only while someone will let it go (probes_heartbeat()).
 */
static void record_alive(struct record *r)
{
	__atomic_store_n(&r->alive_ns, now_ns(CLOCK_MONOTONIC), __ATOMIC_RELAXED);
	probes_heartbeat(&r->probes);
}

/*
 * The reader thread says so too, at least every 100 ms, while the
 * collector has shown life within COLLECTOR_HUNG_NS, whatever holds it
 * up meanwhile (its setup, a part written out, a backlog): a process
 * mapping libcuda is then let go unheld only when the whole recorder was
 * stopped or starved of the CPU for a second, or its collector seems hung.
 */
static void reader_alive(void *ctx)
{
	struct record *r = ctx;

	uint64_t now = now_ns(CLOCK_MONOTONIC);

	/* signed: the collector may have stored a time after this thread read its clock */
	if ((int64_t)(now - __atomic_load_n(&r->alive_ns, __ATOMIC_RELAXED)) <
	    (int64_t)COLLECTOR_HUNG_NS)
		probes_heartbeat(&r->probes);
}

/* Their records may still be in the ring buffer. */
void record_unhold(struct record *r)
{
	int ends = probes_release_ends(&r->probes);

	if (!r->holding && !ends)
		return;
	if (r->holding)
		probes_release_maps(&r->probes);
	r->holding = 0;
	/* a hook that ran just before the detach may still be submitting */
	for (int i = 0; i < 3; i++)
		record_alive(r), take(r, 5);
}

/* pid's injection library has not yet said that it collects, nor why not. */
static int window_unopened(const struct record *r, pid_t pid)
{
	const struct model_process *p = model_find_process(&r->model, collector_pid(&r->coll, pid));

	return proc_alive(pid) && (!p || (!p->gpu_window_ns && !p->gpu_error));
}

/*
 * A -p target whose injection library (loaded at its start, or late) has
 * our markers attached, or a process the library was loaded into late
 * (-p, -a), whose library has not opened its GPU window; 0 if none.
 */
static pid_t window_pending(const struct record *r)
{
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].markers && !r->targets[i].gone &&
		    window_unopened(r, r->targets[i].pid))
			return r->targets[i].pid;
	for (size_t i = 0; i < r->nlate; i++)
		if (!r->late[i].ret && window_unopened(r, r->late[i].pid))
			return r->late[i].pid;
	return 0;
}

/*
 * The injection library enables collection when its thread next sees our
 * markers attached, one to two of its 50-ms periods after we attached
 * them, and the driver (CUPTI, the simulator) never reports work launched
 * before that.  So "recording" is said once each such library has
 * opened its GPU window (or said why not): every launch after that line
 * has its GPU record.  Bounded, for a job stopped by a debugger or a
 * signal, which is then named.
 */
void record_wait_windows(struct record *r)
{
	uint64_t until = now_ns(CLOCK_MONOTONIC) + WINDOW_WAIT_NS;
	pid_t pid;

	while ((pid = window_pending(r)) && !stop_signal && now_ns(CLOCK_MONOTONIC) < until) {
		record_alive(r);
		if (take(r, 10) < 0)
			return;
	}
	if (pid && !stop_signal)
		fprintf(stderr, "gpubpf: pid %d: its injection library has not started collecting in "
			"%.1f s: its launches until it does have no GPU record (the trace's "
			"gpu.window_open_us says when it did)\n", pid, WINDOW_WAIT_NS / 1e9);
}

static void on_unheld(void *ctx, uint32_t pid, uint64_t n)
{
	struct record *r = ctx;

	targets_mark_process_missed(r, collector_pid_at_end(&r->coll, pid), "it loaded libcuda "
				    "while the ring buffer was full: the library was probed only "
				    "after it was loaded");
}

int record_nsignals(void)
{
	return nsignals;
}

int record_loop_init(struct record *r)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO }, hup;
	int fds[PROBES_RINGS], n = probes_ringbuf_fds(&r->probes, fds);
	struct cpu_rings cr = probes_crings(&r->probes);
	int ret;

	record_alive(r);        /* its setup, from now, counts as life */
	ret = ring_reader_init(&r->reader, fds, n, &cr,
			       r->o->memory > READER_MIN_BYTES ? r->o->memory : READER_MIN_BYTES,
			       reader_alive, r);
	if (ret)
		return ret;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/*
	 * A terminal that goes away (an ssh session dropped) ends the
	 * recording as Ctrl-C does: the trace is written and no process is
	 * left held.  Under nohup it stays ignored.
	 */
	if (!sigaction(SIGHUP, NULL, &hup) && hup.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static void progress(struct record *r, uint64_t start, int final)
{
	uint64_t drops = probes_dropped(&r->probes, NULL, NULL);

	fprintf(stderr, "\rgpubpf: recording %.1fs, %llu events, %llu dropped%s",
		(now_ns(CLOCK_MONOTONIC) - start) / 1e9, (unsigned long long)r->coll.calls,
		(unsigned long long)drops, final ? "\n" : "   ");
}

/*
 * The collector's thread records at the reader's priority.  Where the
 * traced threads take every CPU, at an ordinary priority it got a share
 * of what they left, its queue of records filled and the rings refused
 * calls (bench section 3: two threads calling the push stub at 1M/s on
 * two CPUs lost 22-40% of their calls at nice 0; at -20 none, the callers
 * slowed by as much as the collector's work took).  Its work is what the
 * records make it: no more CPU, only sooner.  It writes the trace at the
 * priority it was started with, as the job may run on.  The priority to
 * go back to.
 */
static int raise_priority(void)
{
	int was;

	errno = 0;
	was = getpriority(PRIO_PROCESS, gettid());
	if (errno)
		was = 0;
	(void)setpriority(PRIO_PROCESS, gettid(), RECORD_NICE);
	return was;
}

void record_loop(struct record *r)
{
	int nice_was = raise_priority();
	uint64_t start = now_ns(CLOCK_MONOTONIC), last_scan = start, last_progress = start;
	uint64_t signal_at = 0;
	int tty = isatty(2), forwarded = 0, py_fast = r->o->mode == MODE_CMD && r->o->stacks;

	while (!stop_signal || (r->o->mode == MODE_CMD && !r->child.done && nsignals < 2)) {
		uint64_t now;
		int e;

		/*
		 * The command's interpreter is there from its exec on, before
		 * it makes its first CUDA call: look for it closely at first.
		 */
		if (py_fast)
			py_fast = !pystacks_try(r, r->child.pid) && now_ns(CLOCK_MONOTONIC) - start < PY_FAST_NS;
		record_alive(r);
		e = take(r, py_fast ? PY_FAST_POLL_MS : r->waiting ? WAIT_POLL_MS : POLL_MS);
		if (e == -ENOMEM)
			fprintf(stderr, "\ngpubpf: out of memory: the recording stops here\n");
		if (e < 0)
			break;
		if (r->parts_failed)
			break;
		now = now_ns(CLOCK_MONOTONIC);
		if (r->o->mode == MODE_CMD) {
			if (spawn_poll(&r->child) && !stop_signal)
				stop_signal = -1;
			/*
			 * A signal to us goes on to the command, whose exit ends
			 * us, unless the kernel sent it that signal too (the
			 * terminal's Ctrl-C or hangup, a kill of the process
			 * group, timeout(1)): a program that counts its SIGTERMs
			 * sees one, as without gpubpf.  Looked at a moment after
			 * ours came, when a group's kill has reached them all.
			 */
			if (stop_signal > 0 && !forwarded && !r->child.done) {
				uint64_t sent;

				if (!signal_at) {
					signal_at = now;
				} else if (now - signal_at >= FORWARD_AFTER_NS) {
					sent = probes_signal_sent(&r->probes, stop_signal);
					if (!sent || sent + SAME_SIGNAL_NS < signal_at)
						kill(r->child.pid, stop_signal);
					forwarded = 1;
				}
			}
		}
		if (r->o->duration_ns && now - start >= r->o->duration_ns)
			break;
		if (r->waiting || now - last_scan >= (r->o->mode == MODE_ALL ? SCAN_ALL_NS : SCAN_NS)) {
			last_scan = now;
			if (!targets_scan(r) && !stop_signal)
				stop_signal = -1;
		}
		if (tty && now - last_progress >= 1000000000ULL) {
			last_progress = now;
			progress(r, start, 0);
		}
	}
	/*
	 * Still attached, the injection library delivers what it holds
	 * within one of its periods; a command that exited flushed at exit.
	 */
	if (r->nmarkers && !(r->o->mode == MODE_CMD && r->child.done)) {
		uint64_t until = now_ns(CLOCK_MONOTONIC) + GRACE_NS;

		while (now_ns(CLOCK_MONOTONIC) < until && take(r, 20) >= 0)
			record_alive(r);
	}
	record_unhold(r);
	/* the reader's last read, then whatever it holds */
	ring_reader_stop(&r->reader);
	while (take(r, 0) > 0)
		;
	/* calls still in the driver (a sync of a hung job): in, up to now */
	r->ended = now_ns(CLOCK_MONOTONIC);
	probes_each_inflight(&r->probes, add_unfinished, r);
	collector_end(&r->coll, r->ended);
	(void)setpriority(PRIO_PROCESS, gettid(), nice_was);
	if (tty)
		progress(r, start, 1);
	r->model.dropped_total = probes_dropped(&r->probes, add_drops, r);
	probes_unheld(&r->probes, on_unheld, r);
}
