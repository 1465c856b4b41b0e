// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record: attach the libcuda probes to running processes (-p), to
 * every CUDA process (-a) or to a command started held until the probes
 * are in place (-- CMD), collect until told to stop, write the trace.
 *
 * This file is the command's flow: options, start, loop, finish; see
 * record.h for the files that do each part.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include "commands.h"
#include "lib/sink.h"
#include "record/keeper.h"
#include "record/record.h"
#include "report/report.h"
#include "trace/export.h"

/* CLOCK_REALTIME minus CLOCK_MONOTONIC, from the tightest of a few reads. */
static int64_t realtime_offset(void)
{
	int64_t best = 0;
	uint64_t best_gap = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = now_ns(CLOCK_MONOTONIC), r = now_ns(CLOCK_REALTIME);
		uint64_t b = now_ns(CLOCK_MONOTONIC);

		if (b - a < best_gap) {
			best_gap = b - a;
			best = (int64_t)(r - (a + (b - a) / 2));
		}
	}
	return best;
}

/*
 * CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, in the effective set: root
 * too may lack them (a container, setpriv, capsh --drop).
 */
static int has_capabilities(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};
	uint64_t eff;

	if (syscall(SYS_capget, &h, d))
		return geteuid() == 0;  /* cannot tell: let the kernel decide */
	eff = d[0].effective | (uint64_t)d[1].effective << 32;
#define CAP(n) (eff & (1ULL << (n)))
	return CAP(CAP_SYS_ADMIN) || (CAP(CAP_BPF) && CAP(CAP_PERFMON));
#undef CAP
}

/*
 * The BPF programs see pids as the host's PID namespace numbers them; a
 * recorder in another (a container without --pid=host) would match none
 * of them with its own (its -p, its command's pid, /proc) and record
 * nothing, or the wrong process.  0 here, else why not in why.
 */
#define PROC_PID_INIT_INO 0xEFFFFFFCU   /* the initial PID namespace's inode (Linux 3.8 on) */

static int host_pid_namespace(char *why, size_t len)
{
	char self[32] = "";
	struct stat st;

	/* no /proc/self/ns/pid: a kernel without PID namespaces */
	if (!stat("/proc/self/ns/pid", &st) && st.st_ino != PROC_PID_INIT_INO) {
		snprintf(why, len, "it runs in a PID namespace of its own (a container's)");
		return -1;
	}
	if (readlink("/proc/self", self, sizeof(self) - 1) < 0 || atoi(self) != getpid()) {
		snprintf(why, len, "/proc is mounted from another PID namespace (/proc/self is "
			 "%s%s%s, its pid %d)", *self ? "'" : "", *self ? self : "missing",
			 *self ? "'" : "", getpid());
		return -1;
	}
	return 0;
}

static void default_output(struct record *r)
{
	char stamp[32], who[32];
	time_t t = time(NULL);

	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&t));
	if (r->o->mode == MODE_ALL)
		snprintf(who, sizeof(who), "all");
	else
		snprintf(who, sizeof(who), "%d", r->o->mode == MODE_CMD ? r->child.pid : r->targets[0].pid);
	snprintf(r->outbuf, sizeof(r->outbuf), "gpubpf-%s-%s.json", who, stamp);
	r->outputs[r->noutputs++] = r->outbuf;
}

/* The model into each output, in the format of its extension. */
static int write_trace(struct record *r)
{
	char err[600];
	int ret;

	if (r->parts_failed)
		return -EIO;
	if (r->in_parts)
		return record_parts_write(r);
	ret = model_finish(&r->model);

	if (ret) {
		fprintf(stderr, "gpubpf: %s\n", strerror(-ret));
		return ret;
	}
	for (int i = 0; i < r->noutputs && !ret; i++) {
		ret = export_file(&r->model, &r->o->export, r->outputs[i], err, sizeof(err));
		if (ret)
			fprintf(stderr, "gpubpf: %s\n", err);
	}
	return ret;
}

static int open_probes(struct record *r)
{
	const struct record_opts *o = r->o;
	struct probes_opts po = { 0 };
	char err[512];

	po.filter_pids = o->mode != MODE_ALL;
	po.follow_forks = o->mode == MODE_CMD;
	po.cmd_signals = o->mode == MODE_CMD;
	po.ringbuf_bytes = o->ringbuf;
	po.autograd = o->autograd;
	po.one_ring = o->autograd;
	po.verbose = o->verbose;
	po.native_stacks = o->native;
	po.states = o->states;
	po.sample_hz = o->sample_hz;
	/* calls of threads without Python get the stack of their waker */
	po.wakes = o->stacks;
	/* -a and -- CMD: find a new process's Python before its first call */
	po.hold_each = o->stacks && o->mode != MODE_PIDS;
	/* and a process that runs a new program, in every mode */
	po.hold_exec = o->stacks;
	/* tests: behave as on a kernel that cannot hold processes */
	po.no_hold = getenv("GPUBPF_TEST_NO_HOLD") && *getenv("GPUBPF_TEST_NO_HOLD");
	/* tests: walk Python stacks as on a kernel without may_goto */
	po.no_may_goto = getenv("GPUBPF_TEST_NO_MAY_GOTO") && *getenv("GPUBPF_TEST_NO_MAY_GOTO");
	/* tests: a link per entry point, as on a kernel without usable uprobe_multi */
	po.no_multi = getenv("GPUBPF_TEST_NO_MULTI") && *getenv("GPUBPF_TEST_NO_MULTI");
	/* tests: a sample's search amid a call's walk, as a CPU-clock tick can land */
	po.test_nested_search = getenv("GPUBPF_TEST_NESTED_SEARCH") &&
				*getenv("GPUBPF_TEST_NESTED_SEARCH");
	if (probes_open(&r->probes, &po, err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		return -EINVAL;
	}
	/* before any process is held: should gpubpf die holding one, it goes on */
	r->keeper = keeper_start(probes_held_fd(&r->probes));
	if (r->keeper < 0)
		fprintf(stderr, "gpubpf: cannot fork the keeper (%s): a process held as gpubpf "
			"is killed would stay stopped\n", strerror(-r->keeper));
	return 0;
}

/* -- CMD: let the command run, now that its libcuda will be probed. */
static int start_cmd(struct record *r)
{
	const char *busy = getenv("GPUBPF_TEST_BUSY_MS");
	int e = spawn_go(&r->child);

	if (e < 0)
		return 1;
	if (e > 0) {
		fprintf(stderr, "gpubpf: cannot run '%s': %s\n", r->o->cmd[0], strerror(e));
		/* as a shell, env and timeout say it: 127 not found, 126 found but not runnable */
		return e == ENOENT ? 127 : 126;
	}
	/* tests: a collector held up before its first poll (a slow setup, a backlog) */
	if (busy && *busy)
		usleep(atoi(busy) * 1000u);
	if (!r->nlibs && !r->holding)
		fprintf(stderr, "gpubpf: no libcuda.so.1 found yet and this kernel cannot "
			"hold the command when it loads one: its first calls may be missed "
			"(use --libcuda PATH to catch every call)\n");
	if (!r->holding)
		targets_mark_missed(r, r->child.pid, r->nlibs ?
				    "this kernel cannot hold processes as they load libcuda: calls "
				    "into a libcuda other than the one probed from the start may be "
				    "missing until gpubpf finds it" :
				    "this kernel cannot hold processes as they load libcuda and no "
				    "libcuda was probed from the start: calls made before gpubpf "
				    "found the command's may be missing");
	return 0;
}

/*
 * Open the probes and the ring buffer, probe the targets, start the
 * command.  0, or the exit status.
 */
static int start(struct record *r)
{
	const struct record_opts *o = r->o;
	int e;

	if (open_probes(r))
		return 2;
	e = record_loop_init(r);
	if (e) {
		fprintf(stderr, "gpubpf: cannot open the ring buffer: %s\n", strerror(-e));
		return 2;
	}
	r->model.realtime_offset_ns = realtime_offset();
	gethostname(r->model.host, sizeof(r->model.host) - 1);
	/*
	 * Before any scan, so that no libcuda loaded from now on escapes.
	 * Detaching the hook costs a kernel synchronisation (0.1-0.3 s): -p
	 * targets that all have their libcuda already do without it.
	 */
	e = targets_need_hold(r) ? probes_hold_maps(&r->probes) : -EALREADY;
	r->holding = !e;
	if (e && e != -EALREADY && o->verbose)
		fprintf(stderr, "gpubpf: cannot hold processes that load libcuda: %s\n",
			strerror(-e));

	if (o->mode == MODE_CMD) {
		e = spawn_held(&r->child, o->cmd, o->device ? o->injlib : NULL);
		if (e) {
			fprintf(stderr, "gpubpf: cannot start '%s': %s\n", o->cmd[0], strerror(-e));
			return 1;
		}
		probes_watch_signals(&r->probes, r->child.pid);
		if (probes_trace_pid(&r->probes, r->child.pid) || targets_setup_global(r))
			return 1;
	} else if ((o->mode == MODE_PIDS ? targets_setup_pids(r) : targets_setup_global(r))) {
		return 1;
	}
	for (int i = 0; i < o->noutputs; i++)
		r->outputs[r->noutputs++] = o->outputs[i];
	if (!r->noutputs) {
		char err[600];

		default_output(r);
		/* checked as -o's are, before the command runs */
		if (sink_check_path(r->outbuf, err, sizeof(err))) {
			fprintf(stderr, "gpubpf: %s (the default output, in the current directory: "
				"give -o PATH)\n", err);
			return 1;
		}
	}
	if (o->mode == MODE_CMD)
		return start_cmd(r);
	if (o->mode == MODE_ALL && !r->holding)
		fprintf(stderr, "gpubpf: this kernel cannot hold processes as they load libcuda: "
			"the first calls of a process that loads a libcuda not probed yet may be "
			"missed\n");
	return 0;
}

/* Write the trace, say what it holds, and the report.  The exit status. */
static int finish(struct record *r)
{
	targets_say_left_running(r);
	if (targets_check_seen(r) || write_trace(r))
		return 1;
	record_summary(r);
	if (!r->o->quiet) {     /* the diagnosis, of the model just written */
		fflush(stderr);
		if (record_parts_trace(r))      /* in parts: read back */
			report_print_file(record_parts_trace(r), stdout);
		else
			report_print_model(&r->model, r->outputs[0], stdout);
		fflush(stdout);
	}
	return r->o->mode == MODE_CMD ? r->child.status : 0;
}

static void record_release(struct record *r)
{
	record_unhold(r);       /* no process stays stopped */
	/* the command runs on, untraced, if we stopped first */
	spawn_release(&r->child, record_nsignals() < 2);
	if (r->child.pid > 0 && !r->child.done && r->child.release_fd < 0)
		fprintf(stderr, "gpubpf: the command (pid %d) runs on, untraced; its exit status "
			"is not gpubpf's\n", r->child.pid);
	ring_reader_release(&r->reader);
	if (r->keeper > 0)
		keeper_stop(r->keeper, probes_held_fd(&r->probes));
	probes_close(&r->probes);
	free(r->py);
	free(r->late);
	hashmap_release(&r->joined);
	collector_release(&r->coll);
	record_parts_release(r);
	model_release(&r->model);
	free(r->targets);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct record r = { .o = &o };
	char why[128];
	int ret;

	if (record_opts_parse(&o, argc, argv))
		return 1;
	if (!has_capabilities()) {
		if (geteuid() == 0)
			fprintf(stderr, "gpubpf: recording needs CAP_BPF and CAP_PERFMON (or "
				"CAP_SYS_ADMIN), which this root process lacks (its capabilities "
				"were dropped)\n");
		else
			fprintf(stderr, "gpubpf: recording needs root (or CAP_BPF and CAP_PERFMON): "
				"run it with sudo\n");
		record_opts_release(&o);
		return 2;
	}
	if (host_pid_namespace(why, sizeof(why))) {
		fprintf(stderr, "gpubpf: recording must run in the host's PID namespace, and %s: "
			"run the container with --pid=host (Kubernetes: hostPID: true)\n", why);
		record_opts_release(&o);
		return 2;
	}
	if (record_opts_check(&o) || targets_init(&r)) {
		record_opts_release(&o);
		return 1;
	}
	spawn_init(&r.child);
	model_init(&r.model);
	r.spill_at = o.memory;
	collector_init(&r.coll, &r.model);
	ret = start(&r);
	if (!ret) {
		r.collecting = 1;
		r.collecting_since = now_ns(CLOCK_MONOTONIC);
		record_wait_windows(&r);
		if (o.mode != MODE_CMD)
			fprintf(stderr, "gpubpf: recording%s; Ctrl-C to stop\n",
				o.mode == MODE_ALL ? " every CUDA process" : "");
		record_loop(&r);
		ret = finish(&r);
	}
	record_release(&r);
	/* -d ended the recording first: the command's status, once it ended */
	if (!ret && o.mode == MODE_CMD && r.child.done)
		ret = r.child.status;
	record_opts_release(&o);
	return ret;
}
