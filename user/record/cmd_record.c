// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record: attach the libcuda probes to running processes (-p), to
 * every CUDA process (-a) or to a command started held until the probes
 * are in place (-- CMD), collect until told to stop, write the trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "record/collector.h"
#include "commands.h"
#include "record/discover.h"
#include "trace/export.h"
#include "record/inject.h"
#include "model/model.h"
#include "lib/parse.h"
#include "record/probes.h"
#include "lib/proc.h"
#include "model/memory.h"
#include "report/report.h"
#include "sym/pyruntime.h"
#include "lib/sink.h"

#define DEFAULT_RINGBUF (16ULL << 20)
#define POLL_MS 100
#define WAIT_POLL_MS 10         /* while a -p target has no libcuda yet */
#define SCAN_NS 250000000ULL    /* how often to look for libcuda and exits */
#define SCAN_ALL_NS 1000000000ULL
#define GRACE_NS 150000000ULL   /* the injection library delivers every 50 ms */
#define PY_FAST_NS 3000000000ULL /* -- CMD: look for Python this long, closely */
#define PY_FAST_POLL_MS 2
#define PY_GIVE_UP_NS 10000000000ULL /* a process not found running Python by then runs none */
#define DEFAULT_STACK_DEPTH 64
#define MAX_TRACED 4096
#define INJECT_THREAD_MS 100    /* late attach: how long to wait for each thread to stop */

enum mode { MODE_PIDS, MODE_ALL, MODE_CMD };

struct target {
	pid_t pid;
	int seen_libcuda;       /* libcuda was mapped at some point */
	int markers;            /* the injection library's markers are attached */
	int gone;               /* exit reported */
};

struct record {
	enum mode mode;
	struct target *targets;
	int ntargets;
	char **cmd;
	uint64_t duration_ns;
	const char *output;
	char outbuf[PATH_MAX];
	const char *libcuda;
	char libcuda_buf[PATH_MAX];
	uint64_t ringbuf;
	int device;             /* GPU timing through the injection library */
	int inject;             /* late attach: load it into -p/-a targets that lack it */
	struct late { pid_t pid; int ret; struct inject_stats st; char why[256]; } *late;
	size_t nlate;
	char injlib[PATH_MAX];  /* its path */
	int nmarkers;           /* marker attachments made */
	int verbose;
	int quiet;              /* no report at the end */
	int stacks;             /* walk Python stacks */
	int native;             /* capture native stacks */
	uint32_t stack_depth;
	struct py_try { pid_t pid; int done; uint64_t first; } *py;
	size_t npy;
	int waiting;            /* a -p target has not loaded libcuda yet */
	int holding;            /* new libcuda mappings are held until probed */
	int collecting;         /* setup is over: a libcuda probed now is late */
	int nlibs;              /* libcuda files probed */
	pid_t last_pid;         /* of the latest call record */
	pid_t child;
	int child_status;
	int child_done;
	struct probes probes;
	struct ring_buffer *rb;
	struct model model;
	struct collector coll;
};

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t nsignals;

static void on_signal(int sig)
{
	stop_signal = sig;
	nsignals++;
}

static const char usage[] =
"usage: gpubpf record [options] -p PID[,PID...]\n"
"       gpubpf record [options] -a\n"
"       gpubpf record [options] -- CMD [ARGS...]\n"
"\n"
"Trace every libcuda driver call (launches, copies, memsets, syncs,\n"
"allocations, graphs, lookups) into a Chrome/Perfetto trace.\n"
"\n"
"  -p, --pid PID[,PID]    attach to running processes; waits for libcuda to\n"
"                         be loaded if it is not yet\n"
"  -a, --all              every process using libcuda, new ones included\n"
"  -- CMD [ARGS...]       run CMD, held until the probes are attached, and\n"
"                         trace it and its children; exit with its status\n"
"  -d, --duration TIME    stop after TIME (500ms, 10s, 2m); default: until\n"
"                         Ctrl-C or SIGTERM (or until CMD exits)\n"
"  -o, --output FILE      trace file, .json or .json.gz; default\n"
"                         gpubpf-<pid|all>-<YYYYmmdd-HHMMSS>.json\n"
"      --libcuda PATH     the libcuda to probe instead of the discovered one\n"
"      --no-device        host calls only: no GPU timing (with -- CMD, do not\n"
"                         set CUDA_INJECTION64_PATH)\n"
"      --cupti-lib PATH   the injection library (libgpubpf_cupti.so) to use\n"
"      --no-inject        -p, -a: GPU timing only for jobs started with\n"
"                         CUDA_INJECTION64_PATH; never load the library into\n"
"                         a running process (late attach, with ptrace)\n"
"      --buffer-size SIZE ring buffer size (default 16M; K, M, G suffixes)\n"
"      --stack MODE       python (default): the Python stack of every call;\n"
"                         native: its user-space return addresses, named\n"
"                         from the ELF symbols (up to 64 frames, through\n"
"                         frame pointers); python,native: both; none\n"
"      --stack-depth N    Python frames per stack, 1 to 256 (default 64);\n"
"                         deeper stacks are cut and flagged\n"
"      --sample-rate N    device memory counter tracks: a sample every N\n"
"                         allocations/frees (default 0: every change)\n"
"  -q, --quiet            no report at the end (see 'gpubpf report')\n"
"  -v, --verbose          libbpf's own messages\n"
"  -h, --help             this help\n"
"\n"
"Needs root (or CAP_BPF and CAP_PERFMON).\n";

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

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

static int parse_args(struct record *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "libcuda", required_argument, NULL, 'L' },
		{ "buffer-size", required_argument, NULL, 'B' },
		{ "no-device", no_argument, NULL, 'N' },
		{ "stack", required_argument, NULL, 'S' },
		{ "stack-depth", required_argument, NULL, 'D' },
		{ "cupti-lib", required_argument, NULL, 'C' },
		{ "no-inject", no_argument, NULL, 'I' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "sample-rate", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	pid_t *pids = NULL;
	int c, n = 0, all = 0;

	r->ringbuf = DEFAULT_RINGBUF;
	r->device = 1;
	r->inject = 1;
	r->stacks = 1;
	r->stack_depth = DEFAULT_STACK_DEPTH;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:ad:o:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			n = parse_pid_list(optarg, &pids, n);
			if (n < 0) {
				fprintf(stderr, "gpubpf: invalid pid list '%s'\n", optarg);
				return -1;
			}
			break;
		case 'a':
			all = 1;
			break;
		case 'd':
			if (parse_duration_ns(optarg, &r->duration_ns)) {
				fprintf(stderr, "gpubpf: invalid duration '%s' (use e.g. 500ms, 10s, 2m)\n",
					optarg);
				return -1;
			}
			break;
		case 'o':
			r->output = optarg;
			break;
		case 'L':
			r->libcuda = optarg;
			break;
		case 'B':
			if (parse_size(optarg, &r->ringbuf) || r->ringbuf > (1ULL << 30)) {
				fprintf(stderr, "gpubpf: invalid buffer size '%s' (use e.g. 64M, at most 1G)\n",
					optarg);
				return -1;
			}
			break;
		case 'N':
			r->device = 0;
			break;
		case 'I':
			r->inject = 0;
			break;
		case 'S': {
			/* a list: python, native, python,native; or none alone */
			const char *p = optarg;
			size_t len;

			r->stacks = r->native = 0;
			for (; *p; p += len + !!p[len]) {
				len = strcspn(p, ",");
				if (len == 6 && !strncmp(p, "python", 6))
					r->stacks = 1;
				else if (len == 6 && !strncmp(p, "native", 6))
					r->native = 1;
				else if (!(len == 4 && !strncmp(p, "none", 4) && !strcmp(optarg, "none")))
					break;
			}
			if (!*p && *optarg && p[-1] != ',')
				break;
			fprintf(stderr, "gpubpf: invalid --stack '%s' (python, native, "
				"python,native or none)\n", optarg);
			return -1;
		}
		case 'D': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 1 || v > GB_PY_MAX_DEPTH) {
				fprintf(stderr, "gpubpf: invalid --stack-depth '%s' (1 to %d)\n", optarg,
					GB_PY_MAX_DEPTH);
				return -1;
			}
			r->stack_depth = v;
			break;
		}
		case 'C':
			if (!realpath(optarg, r->injlib)) {
				fprintf(stderr, "gpubpf: cannot read injection library '%s': %s\n",
					optarg, strerror(errno));
				return -1;
			}
			break;
		case 'M': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (!*optarg || *end || *optarg == '-' || v > UINT32_MAX) {
				fprintf(stderr, "gpubpf: invalid sample rate '%s' (a number of operations, 0 for every change)\n",
					optarg);
				return -1;
			}
			memory_sample_rate = v;
			break;
		}
		case 'q':
			r->quiet = 1;
			break;
		case 'v':
			r->verbose = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fprintf(stderr, "gpubpf: %s '%s' (see 'gpubpf record --help')\n",
				c == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		r->cmd = &argv[optind];
		r->mode = MODE_CMD;
	} else {
		r->mode = all ? MODE_ALL : MODE_PIDS;
	}
	if ((!!n + all + !!r->cmd) != 1) {
		fprintf(stderr, "gpubpf: record needs exactly one of -p PID, -a or -- CMD "
			"(see 'gpubpf record --help')\n");
		free(pids);
		return -1;
	}
	r->targets = calloc(n ? n : 1, sizeof(*r->targets));
	if (!r->targets) {
		free(pids);
		return -1;
	}
	for (int i = 0; i < n; i++)
		r->targets[i].pid = pids[i];
	r->ntargets = n;
	free(pids);
	return 0;
}

static int attach_lib(struct record *r, const char *path, pid_t pid)
{
	char err[512];
	int n = probes_attach(&r->probes, path, pid, err, sizeof(err));

	if (n < 0)
		fprintf(stderr, "gpubpf: %s\n", err);
	if (n > 0)
		r->nlibs++;
	if (n > 0 && r->verbose)
		fprintf(stderr, "gpubpf: attached %d probes to %s%s\n", n, path,
			pid > 0 ? "" : " for all processes");
	return n;
}

static int attach_markers(struct record *r, const char *path, pid_t pid)
{
	char err[512];
	int n = probes_attach_markers(&r->probes, path, pid, err, sizeof(err));

	if (n < 0)
		fprintf(stderr, "gpubpf: GPU timing off: %s\n", err);
	else
		r->nmarkers += n;
	return n;
}

/*
 * Some calls of pid may be missing from the trace: say why, once, in the
 * trace metadata and at the end of the recording.
 */
static void mark_missed(struct record *r, pid_t pid, const char *why)
{
	struct model_process *p = model_process(&r->model, pid, NULL);

	if (p && !p->missed)
		p->missed = strtab_intern(&r->model.strs, why);
}

static int py_try(struct record *r, pid_t pid);
static int target_markers(struct record *r, struct target *t);

/*
 * A traced process mapped a libcuda no probe covered (see struct gb_map):
 * probe it and let the process go on.  Whatever fails, a held process is
 * continued.
 */
static void on_map(struct record *r, const struct gb_map *m)
{
	pid_t who = r->mode == MODE_PIDS ? (pid_t)m->pid : -1;
	char path[PATH_MAX];
	int n = -ENOENT;

	/* by inode; an overlay file system may show another inode in the maps */
	if (!proc_find_mapping_ino(m->pid, "libcuda.so", m->ino, path, sizeof(path)) ||
	    !proc_find_mapping(m->pid, "libcuda.so", path, sizeof(path)))
		n = attach_lib(r, path, who);
	else if (proc_alive(m->pid))
		fprintf(stderr, "gpubpf: pid %u mapped %.*s but it cannot be found in its maps\n",
			m->pid, GB_MAP_NAME_LEN, m->name);
	/* this process is handled; a probe for all processes was noted by the attach */
	probes_lib_known(&r->probes, m->dev, m->ino, m->pid);
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].pid == (pid_t)m->pid) {
			r->targets[i].seen_libcuda = 1;
			target_markers(r, &r->targets[i]);
		}
	if (n >= 0 && r->mode != MODE_PIDS)
		py_try(r, m->pid);
	if (m->held == GB_HELD && kill(m->pid, SIGCONT) && errno != ESRCH)
		fprintf(stderr, "gpubpf: cannot continue pid %u: %s\n", m->pid, strerror(errno));
	/* n == 0: that file was probed already, no call can have been missed */
	if (n != 0 && m->held == GB_SHELL_JOB)
		mark_missed(r, m->pid, "it is a job of an interactive shell, which gpubpf does "
			    "not stop: its libcuda was probed only after it was loaded");
	else if (n != 0 && m->held == GB_RECORDER_AWAY)
		mark_missed(r, m->pid, "gpubpf had not read its events for over a second (stopped "
			    "or busy), so it did not stop the process: its libcuda was probed only "
			    "after it was loaded");
	else if (n != 0 && m->held == GB_PTRACED)
		mark_missed(r, m->pid, "it runs under a debugger, which would see a stop: its "
			    "libcuda was probed only after it was loaded");
	else if (n != 0 && m->held != GB_HELD)
		mark_missed(r, m->pid, "it could not be stopped while its probes were attached: "
			    "its libcuda was probed only after it was loaded");
	else if (n < 0)
		mark_missed(r, m->pid, "its libcuda could not be probed");
	if (r->verbose)
		fprintf(stderr, "gpubpf: pid %u loaded %s%s%.3f ms\n", m->pid, path,
			m->held == GB_HELD ? ", held until probed: " : ", not held: seen after ",
			(now_ns(CLOCK_MONOTONIC) - m->ts) / 1e6);
}

/*
 * Python stacks for pid: find its interpreter and hand the layout to the
 * BPF walker and the collector.  A process is tried until it is found to
 * run CPython, to run one gpubpf cannot walk (said once), or for
 * PY_GIVE_UP_NS (it runs none).  Returns 1 when pid is settled.
 */
static int py_try(struct record *r, pid_t pid)
{
	struct gb_py_config cfg;
	struct py_try *t = NULL, *nt;
	char why[256];
	int ret;

	if (!r->stacks)
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
	cfg.depth = r->stack_depth;
	if (collector_set_python(&r->coll, pid, &cfg) || probes_set_python(&r->probes, pid, &cfg))
		fprintf(stderr, "gpubpf: pid %d: no Python stacks: out of memory\n", pid);
	else if (r->verbose)
		fprintf(stderr, "gpubpf: pid %d runs CPython %u.%u: walking its stacks\n", pid,
			cfg.version / 100, cfg.version % 100);
	return 1;
}

/*
 * Late attach: load the injection library into pid, once per recording.
 * 0 if it is there now; else the reason is printed once and kept in the
 * trace.
 */
static int late_attach(struct record *r, pid_t pid)
{
	struct late *l = NULL, *nl;
	struct model_process *p;

	for (size_t i = 0; i < r->nlate && !l; i++)
		if (r->late[i].pid == pid)
			return r->late[i].ret;
	nl = realloc(r->late, (r->nlate + 1) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	r->late = nl;
	l = &r->late[r->nlate++];
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->ret = inject_library(pid, r->injlib, INJECT_THREAD_MS, &l->st, l->why, sizeof(l->why));
	p = model_process(&r->model, pid, NULL);
	if (l->ret) {
		fprintf(stderr, "gpubpf: pid %d: GPU timing off: %s; recording host calls only\n",
			pid, l->why);
		if (p)
			p->gpu_error = strtab_intern(&r->model.strs, l->why);
		return l->ret;
	}
	if (p) {
		p->inject_stall_ns = l->st.stall_ns ? l->st.stall_ns : 1;
		p->inject_tid = l->st.tid;
	}
	if (r->verbose)
		fprintf(stderr, "gpubpf: pid %d: loaded %s (late attach through thread %d, "
			"stopped %.3f ms in system call %ld; %.1f ms in all)\n", pid, INJECTION_LIB, l->st.tid,
			l->st.stall_ns / 1e6, l->st.syscall_nr, l->st.total_ns / 1e6);
	return 0;
}

/* 1 if late attach already said why pid gets no GPU timing. */
static int late_failed(struct record *r, pid_t pid)
{
	for (size_t i = 0; i < r->nlate; i++)
		if (r->late[i].pid == pid)
			return r->late[i].ret != 0;
	return 0;
}

/* 1 if pid's Python was looked for already. */
static int py_tried(struct record *r, pid_t pid)
{
	for (size_t i = 0; i < r->npy; i++)
		if (r->py[i].pid == pid)
			return 1;
	return 0;
}

/*
 * -p: GPU timing comes from the injection library: the one the target
 * loaded at start, a copy an earlier recording loaded late (a memfd), or
 * one loaded now.
 */
static int target_markers(struct record *r, struct target *t)
{
	char path[PATH_MAX];

	if (!r->device || t->markers)
		return t->markers;
	if (inject_find_lib(t->pid, INJECTION_LIB, path, sizeof(path)) && r->inject &&
	    !late_attach(r, t->pid) && inject_find_lib(t->pid, INJECTION_LIB, path, sizeof(path)))
		return 0;
	if (!inject_find_lib(t->pid, INJECTION_LIB, path, sizeof(path)) &&
	    attach_markers(r, path, t->pid) >= 0)
		t->markers = 1;
	return t->markers;
}

/* -p: attach to the libcuda each target has mapped, note exits. */
static void scan_targets(struct record *r)
{
	char path[PATH_MAX];
	int alive = 0;

	r->waiting = 0;
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];

		if (t->gone)
			continue;
		if (!proc_alive(t->pid)) {
			t->gone = 1;
			fprintf(stderr, "gpubpf: pid %d exited\n", t->pid);
			continue;
		}
		alive++;
		if (proc_find_mapping(t->pid, "libcuda.so", path, sizeof(path))) {
			r->waiting = 1;
			continue;
		}
		if (!t->seen_libcuda && r->verbose)
			fprintf(stderr, "gpubpf: pid %d has loaded %s\n", t->pid, path);
		t->seen_libcuda = 1;
		if (!r->libcuda && !probes_attached(&r->probes, path, t->pid) &&
		    attach_lib(r, path, t->pid) > 0)
			mark_missed(r, t->pid, "its libcuda was probed only after it was loaded");
		target_markers(r, t);
		py_try(r, t->pid);
	}
	if (!alive && !stop_signal)
		stop_signal = -1;
}

/* -a and -- CMD: attach, for all processes, to any libcuda a traced one maps. */
static void scan_libs(struct record *r)
{
	char path[PATH_MAX];
	pid_t *pids = NULL;
	int n;

	if (r->libcuda && !r->device && !r->stacks)
		return;
	if (r->mode == MODE_ALL) {
		n = proc_list(&pids);
	} else {
		pids = malloc(MAX_TRACED * sizeof(*pids));
		n = pids ? probes_traced_pids(&r->probes, pids, MAX_TRACED) : 0;
	}
	for (int i = 0; i < n; i++) {
		int cuda = !proc_find_mapping(pids[i], "libcuda.so", path, sizeof(path)), have;

		if (cuda && !probes_attached(&r->probes, path, -1) && attach_lib(r, path, -1) > 0 &&
		    r->collecting)
			mark_missed(r, pids[i], "its libcuda was probed only after it was loaded");
		if (cuda || r->mode == MODE_CMD)
			py_try(r, pids[i]);
		if (!r->device)
			continue;
		have = !inject_find_lib(pids[i], INJECTION_LIB, path, sizeof(path));
		/* -a: every CUDA process gets the library, late if it was started without */
		if (!have && cuda && r->mode == MODE_ALL && r->inject && pids[i] != getpid() &&
		    !late_attach(r, pids[i]))
			have = !inject_find_lib(pids[i], INJECTION_LIB, path, sizeof(path));
		if (have && !probes_attached(&r->probes, path, -1))
			attach_markers(r, path, -1);
	}
	free(pids);
}

static int setup_pids(struct record *r)
{
	char path[PATH_MAX];
	int have_default = 0;

	if (r->libcuda)
		have_default = 1;
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];

		if (!proc_alive(t->pid)) {
			fprintf(stderr, "gpubpf: no such process: %d\n", t->pid);
			return -ESRCH;
		}
		if (probes_trace_pid(&r->probes, t->pid))
			return -ENOMEM;
		py_try(r, t->pid);
		if (!proc_find_mapping(t->pid, "libcuda.so", path, sizeof(path))) {
			t->seen_libcuda = 1;
			if (!r->libcuda && attach_lib(r, path, t->pid) < 0)
				return -EINVAL;
			if (r->device && !target_markers(r, t) && !late_failed(r, t->pid))
				fprintf(stderr, "gpubpf: pid %d: GPU timing needs %s loaded at start: "
					"run the job with CUDA_INJECTION64_PATH=%s; recording host "
					"calls only\n", t->pid, INJECTION_LIB, r->injlib);
			if (!r->libcuda)
				continue;
		}
		/* not loaded yet: probe the library it will most likely load */
		if (!r->libcuda && !have_default) {
			have_default = !discover_libcuda(getenv("LD_LIBRARY_PATH"), r->libcuda_buf,
							 sizeof(r->libcuda_buf)) ? 1 : -1;
		}
		if (!r->libcuda) {
			fprintf(stderr, "gpubpf: pid %d has not loaded libcuda yet; waiting for it\n",
				t->pid);
			r->waiting = 1;
		}
		if (have_default > 0 &&
		    attach_lib(r, r->libcuda ? r->libcuda : r->libcuda_buf, t->pid) < 0)
			return -EINVAL;
	}
	return 0;
}

/* -- CMD and -a: always; -p: while a target has no libcuda yet. */
static int need_hold(struct record *r)
{
	char path[PATH_MAX];

	if (r->mode != MODE_PIDS)
		return 1;
	for (int i = 0; i < r->ntargets; i++)
		if (proc_find_mapping(r->targets[i].pid, "libcuda.so", path, sizeof(path)))
			return 1;
	return 0;
}

static int setup_global(struct record *r)
{
	const char *lib = r->libcuda;

	if (!lib && !discover_libcuda(getenv("LD_LIBRARY_PATH"), r->libcuda_buf,
				      sizeof(r->libcuda_buf)))
		lib = r->libcuda_buf;
	if (r->device)
		attach_markers(r, r->injlib, -1);
	if (lib && attach_lib(r, lib, -1) < 0)
		return -EINVAL;
	/* the CUDA processes running now: their libcuda, their Python, and with
	 * -a the injection library (late attach) */
	if (!lib || r->mode == MODE_ALL)
		scan_libs(r);
	if (r->mode == MODE_ALL && !r->probes.ntargets) {
		fprintf(stderr, "gpubpf: no libcuda.so.1 found on this machine "
			"(use --libcuda PATH)\n");
		return -ENOENT;
	}
	return 0;
}

/*
 * Fork the command, held on a pipe until the probes are attached.  A
 * second, close-on-exec pipe reports a failed exec.
 */
static int spawn_held(struct record *r, int *release_fd, int *exec_err_fd)
{
	int go[2], err[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -errno;
	r->child = fork();
	if (r->child < 0)
		return -errno;
	if (r->child == 0) {
		char c;
		int e;

		close(go[1]);
		close(err[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		if (r->device)
			setenv("CUDA_INJECTION64_PATH", r->injlib, 1);
		execvp(r->cmd[0], r->cmd);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	*release_fd = go[1];
	*exec_err_fd = err[0];
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct record *r = ctx;
	int ret;

	if (size == sizeof(struct gb_map) && *(const uint32_t *)data == GB_REC_MAP) {
		on_map(r, data);
		return 0;
	}
	/* -a, -- CMD: a process not held at its libcuda (a shell job, or one
	 * running before us): look for its Python at its first call */
	if (size >= sizeof(struct gb_call) && *(const uint32_t *)data == GB_REC_CALL &&
	    r->stacks && r->mode != MODE_PIDS) {
		pid_t pid = ((const struct gb_call *)data)->pid;

		if (pid != r->last_pid && !py_tried(r, pid))
			py_try(r, pid);
		r->last_pid = pid;
	}
	ret = collector_record(&r->coll, data, size);

	/* a malformed record is counted; only running out of memory stops us */
	return ret == -ENOMEM ? ret : 0;
}

static void add_drops(void *ctx, uint32_t pid, uint64_t n)
{
	struct record *r = ctx;
	struct model_process *p = model_process(&r->model, pid, NULL);

	if (p)
		p->dropped = n;
}

/*
 * Stop holding new libcuda mappings, and continue every process held so
 * far: their records may still be in the ring buffer.
 */
static void unhold(struct record *r)
{
	if (!r->holding)
		return;
	probes_release_maps(&r->probes);
	r->holding = 0;
	/* a hook that ran just before the detach may still be submitting */
	for (int i = 0; i < 3; i++)
		probes_heartbeat(&r->probes), ring_buffer__poll(r->rb, 5), ring_buffer__consume(r->rb);
}

static void on_unheld(void *ctx, uint32_t pid, uint64_t n)
{
	mark_missed(ctx, pid, "it loaded libcuda while the ring buffer was full: the "
		    "library was probed only after it was loaded");
}

static void progress(struct record *r, uint64_t start, int final)
{
	uint64_t drops = probes_dropped(&r->probes, NULL, NULL);

	fprintf(stderr, "\rgpubpf: recording %.1fs, %llu events, %llu dropped%s",
		(now_ns(CLOCK_MONOTONIC) - start) / 1e9, (unsigned long long)r->coll.calls,
		(unsigned long long)drops, final ? "\n" : "   ");
}

static void check_child(struct record *r)
{
	int st;

	if (r->child_done || waitpid(r->child, &st, WNOHANG) != r->child)
		return;
	r->child_done = 1;
	r->child_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (!stop_signal)
		stop_signal = -1;
}

static void collect(struct record *r)
{
	uint64_t start = now_ns(CLOCK_MONOTONIC), last_scan = start, last_progress = start;
	int tty = isatty(2), forwarded = 0, py_fast = r->mode == MODE_CMD && r->stacks;

	while (!stop_signal || (r->mode == MODE_CMD && !r->child_done && nsignals < 2)) {
		uint64_t now;

		/*
		 * The command's interpreter is there from its exec on, before
		 * it makes its first CUDA call: look for it closely at first.
		 */
		if (py_fast)
			py_fast = !py_try(r, r->child) && now_ns(CLOCK_MONOTONIC) - start < PY_FAST_NS;
		probes_heartbeat(&r->probes);
		ring_buffer__poll(r->rb, py_fast ? PY_FAST_POLL_MS : r->waiting ? WAIT_POLL_MS : POLL_MS);
		/* records are submitted without wakeups: read what is there */
		if (ring_buffer__consume(r->rb) < 0 && errno == ENOMEM)
			break;
		now = now_ns(CLOCK_MONOTONIC);
		if (r->mode == MODE_CMD) {
			check_child(r);
			/* a signal to us goes on to the command, whose exit ends us */
			if (stop_signal > 0 && !forwarded && !r->child_done) {
				kill(r->child, stop_signal == SIGINT && tty ? 0 : stop_signal);
				forwarded = 1;
			}
		}
		if (r->duration_ns && now - start >= r->duration_ns)
			break;
		if (r->waiting || now - last_scan >= (r->mode == MODE_ALL ? SCAN_ALL_NS : SCAN_NS)) {
			last_scan = now;
			if (r->nlate)
				inject_reap();
			if (r->mode == MODE_PIDS)
				scan_targets(r);
			else
				scan_libs(r);
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
	if (r->nmarkers && !(r->mode == MODE_CMD && r->child_done)) {
		uint64_t until = now_ns(CLOCK_MONOTONIC) + GRACE_NS;

		while (now_ns(CLOCK_MONOTONIC) < until)
			probes_heartbeat(&r->probes), ring_buffer__poll(r->rb, 20), ring_buffer__consume(r->rb);
	}
	unhold(r);
	ring_buffer__consume(r->rb);
	if (tty)
		progress(r, start, 1);
}

static void default_output(struct record *r)
{
	char stamp[32], who[32];
	time_t t = time(NULL);

	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&t));
	if (r->mode == MODE_ALL)
		snprintf(who, sizeof(who), "all");
	else
		snprintf(who, sizeof(who), "%d", r->mode == MODE_CMD ? r->child : r->targets[0].pid);
	snprintf(r->outbuf, sizeof(r->outbuf), "gpubpf-%s-%s.json", who, stamp);
	r->output = r->outbuf;
}

static int write_trace(struct record *r)
{
	struct sink out;
	int ret;

	ret = model_finish(&r->model);
	if (ret) {
		fprintf(stderr, "gpubpf: %s\n", strerror(-ret));
		return ret;
	}
	ret = sink_open(&out, r->output);
	if (!ret)
		ret = export_chrome.write(&r->model, &out);
	if (ret) {
		fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&out)[0] ? sink_errmsg(&out) :
			strerror(-ret));
		sink_abort(&out);
		return ret;
	}
	ret = sink_commit(&out);
	if (ret)
		fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&out));
	return ret;
}

/* -p: a process that never loaded libcuda is not a CUDA process. */
static int check_cuda_seen(struct record *r)
{
	int any = 0;

	if (r->mode != MODE_PIDS || r->libcuda)
		return 0;
	for (int i = 0; i < r->ntargets; i++) {
		any |= r->targets[i].seen_libcuda;
		if (!r->targets[i].seen_libcuda)
			fprintf(stderr, "gpubpf: pid %d never loaded libcuda (is it a CUDA program?)\n",
				r->targets[i].pid);
	}
	return any || r->coll.calls ? 0 : -ENOENT;
}

int cmd_record(int argc, char **argv)
{
	struct record r = { 0 };
	struct probes_opts po = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	char err[512];
	uint64_t gpu_dropped = 0;
	char missed[64] = "";
	int release_fd = -1, exec_err_fd = -1, e, ret = 1, nmissed = 0;

	if (parse_args(&r, argc, argv))
		return 1;
	if (!has_capabilities()) {
		if (geteuid() == 0)
			fprintf(stderr, "gpubpf: recording needs CAP_BPF and CAP_PERFMON (or "
				"CAP_SYS_ADMIN), which this root process lacks (its capabilities "
				"were dropped)\n");
		else
			fprintf(stderr, "gpubpf: recording needs root (or CAP_BPF and CAP_PERFMON): "
				"run it with sudo\n");
		free(r.targets);
		return 2;
	}
	if (r.libcuda && access(r.libcuda, R_OK)) {
		fprintf(stderr, "gpubpf: cannot read libcuda '%s': %s\n", r.libcuda, strerror(errno));
		free(r.targets);
		return 1;
	}
	if (r.output && sink_check_path(r.output, err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		free(r.targets);
		return 1;
	}
	if (r.device && !r.injlib[0] && discover_injection_lib(r.injlib, sizeof(r.injlib))) {
		fprintf(stderr, "gpubpf: GPU timing off: %s not found beside gpubpf "
			"(use --cupti-lib PATH)\n", INJECTION_LIB);
		r.device = 0;
	}
	if (r.device && r.mode == MODE_CMD && getenv("CUDA_INJECTION64_PATH") &&
	    strcmp(getenv("CUDA_INJECTION64_PATH"), r.injlib)) {
		fprintf(stderr, "gpubpf: GPU timing off: CUDA_INJECTION64_PATH is already set to "
			"'%s'\n", getenv("CUDA_INJECTION64_PATH"));
		r.device = 0;
	}
	model_init(&r.model);
	collector_init(&r.coll, &r.model);
	po.filter_pids = r.mode != MODE_ALL;
	po.follow_forks = r.mode == MODE_CMD;
	po.ringbuf_bytes = r.ringbuf;
	po.verbose = r.verbose;
	po.native_stacks = r.native;
	/* -a and -- CMD: find a new process's Python before its first call */
	po.hold_each = r.stacks && r.mode != MODE_PIDS;
	/* tests: behave as on a kernel that cannot hold processes */
	po.no_hold = getenv("GPUBPF_TEST_NO_HOLD") && *getenv("GPUBPF_TEST_NO_HOLD");
	if (probes_open(&r.probes, &po, err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		ret = 2;
		goto cleanup;
	}
	r.rb = ring_buffer__new(probes_ringbuf_fd(&r.probes), on_record, &r, NULL);
	if (!r.rb) {
		fprintf(stderr, "gpubpf: cannot open the ring buffer: %s\n", strerror(errno));
		ret = 2;
		goto cleanup;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	r.model.realtime_offset_ns = realtime_offset();
	gethostname(r.model.host, sizeof(r.model.host) - 1);
	/*
	 * Before any scan, so that no libcuda loaded from now on escapes.
	 * Detaching the hook costs a kernel synchronisation (0.1-0.3 s): -p
	 * targets that all have their libcuda already do without it.
	 */
	e = need_hold(&r) ? probes_hold_maps(&r.probes) : -EALREADY;
	r.holding = !e;
	if (e && e != -EALREADY && r.verbose)
		fprintf(stderr, "gpubpf: cannot hold processes that load libcuda: %s\n",
			strerror(-e));

	if (r.mode == MODE_CMD) {
		if (spawn_held(&r, &release_fd, &exec_err_fd)) {
			fprintf(stderr, "gpubpf: cannot start '%s': %s\n", r.cmd[0], strerror(errno));
			goto cleanup;
		}
		if (probes_trace_pid(&r.probes, r.child) || setup_global(&r))
			goto cleanup;
	} else if ((r.mode == MODE_PIDS ? setup_pids(&r) : setup_global(&r))) {
		goto cleanup;
	}
	if (!r.output)
		default_output(&r);
	if (r.mode == MODE_CMD) {
		if (write(release_fd, "g", 1) != 1)
			goto cleanup;
		close(release_fd);
		release_fd = -1;
		if (read(exec_err_fd, &e, sizeof(e)) == sizeof(e)) {
			fprintf(stderr, "gpubpf: cannot run '%s': %s\n", r.cmd[0], strerror(e));
			waitpid(r.child, NULL, 0);
			r.child = 0;
			ret = 127;
			goto cleanup;
		}
		if (!r.nlibs && !r.holding)
			fprintf(stderr, "gpubpf: no libcuda.so.1 found yet and this kernel cannot "
				"hold the command when it loads one: its first calls may be missed "
				"(use --libcuda PATH to catch every call)\n");
		if (!r.holding)
			mark_missed(&r, r.child, r.nlibs ?
				    "this kernel cannot hold processes as they load libcuda: calls "
				    "into a libcuda other than the one probed from the start may be "
				    "missing until gpubpf finds it" :
				    "this kernel cannot hold processes as they load libcuda and no "
				    "libcuda was probed from the start: calls made before gpubpf "
				    "found the command's may be missing");
	} else if (r.mode == MODE_ALL && !r.holding) {
		fprintf(stderr, "gpubpf: this kernel cannot hold processes as they load libcuda: "
			"the first calls of a process that loads a libcuda not probed yet may be "
			"missed\n");
	}
	r.collecting = 1;
	if (r.mode != MODE_CMD)
		fprintf(stderr, "gpubpf: recording%s; Ctrl-C to stop\n",
			r.mode == MODE_ALL ? " every CUDA process" : "");
	collect(&r);
	r.model.dropped_total = probes_dropped(&r.probes, add_drops, &r);
	probes_unheld(&r.probes, on_unheld, &r);
	if (check_cuda_seen(&r))
		goto cleanup;
	if (write_trace(&r))
		goto cleanup;
	/* the traced command printed its own; a -p or -a target's stderr is elsewhere */
	for (size_t i = 0; i < r.model.nprocs && r.mode != MODE_CMD; i++)
		if (r.model.procs[i].gpu_error && !late_failed(&r, r.model.procs[i].pid))
			fprintf(stderr, "gpubpf: pid %u: GPU timing off: %s\n", r.model.procs[i].pid,
				strtab_get(&r.model.strs, r.model.procs[i].gpu_error));
	if (r.model.skewed)
		fprintf(stderr, "gpubpf: warning: %llu GPU records start before the call that "
			"launched them (by up to %.3f us): host and GPU clocks disagree\n",
			(unsigned long long)r.model.skewed, r.model.max_skew_ns / 1e3);
	for (size_t i = 0; i < r.model.nprocs; i++) {
		gpu_dropped += r.model.procs[i].gpu_dropped;
		nmissed += !!r.model.procs[i].missed;
	}
	if (nmissed)
		snprintf(missed, sizeof(missed), ", calls of %d process%s may be missing", nmissed,
			 nmissed > 1 ? "es" : "");
	fprintf(stderr, "gpubpf: %llu events, %llu dropped%s, written to %s\n",
		(unsigned long long)(r.coll.calls + r.coll.gpu_records),
		(unsigned long long)(r.model.dropped_total + gpu_dropped), missed, r.output);
	for (size_t i = 0; i < r.model.nprocs; i++)
		if (r.model.procs[i].missed)
			fprintf(stderr, "gpubpf: pid %u: calls may be missing: %s\n",
				r.model.procs[i].pid,
				strtab_get(&r.model.strs, r.model.procs[i].missed));
	if (gpu_dropped)
		fprintf(stderr, "gpubpf: of the dropped, %llu GPU records were lost in the traced "
			"process (CUPTI or the injection library)\n", (unsigned long long)gpu_dropped);
	if (r.coll.bad)
		fprintf(stderr, "gpubpf: %llu malformed records skipped\n",
			(unsigned long long)r.coll.bad);
	if (r.coll.py_unresolved)
		fprintf(stderr, "gpubpf: %llu Python frames could not be named (their process had "
			"exited or changed); they read \"?\"\n",
			(unsigned long long)r.coll.py_unresolved);
	if (!r.quiet) {         /* the diagnosis, of the model just written */
		fflush(stderr);
		report_print_model(&r.model, r.output, stdout);
		fflush(stdout);
	}
	ret = r.mode == MODE_CMD ? r.child_status : 0;
cleanup:
	if (r.rb)
		unhold(&r);     /* no process stays stopped */
	if (r.mode == MODE_CMD && r.child > 0 && !r.child_done) {
		/* the command runs on, untraced, if we stopped first */
		if (release_fd >= 0)
			kill(r.child, SIGKILL);
		if (release_fd >= 0 || nsignals < 2)
			waitpid(r.child, NULL, 0);
	}
	if (release_fd >= 0)
		close(release_fd);
	if (exec_err_fd >= 0)
		close(exec_err_fd);
	ring_buffer__free(r.rb);
	probes_close(&r.probes);
	free(r.py);
	free(r.late);
	collector_release(&r.coll);
	model_release(&r.model);
	free(r.targets);
	return ret;
}
