// SPDX-License-Identifier: BSD-2-Clause
/* gpubpf record's command line and its usage text; see record_opts.h. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpubpf.h"
#include "lib/parse.h"
#include "lib/proc.h"
#include "lib/sink.h"
#include "model/model_part.h"
#include "record/discover.h"
#include "record/inject.h"
#include "sym/elf_syms.h"
#include "record/record_opts.h"

#define DEFAULT_RINGBUF (16ULL << 20)
#define DEFAULT_STACK_DEPTH 64
#define DEFAULT_SAMPLE_HZ 1000
#define MAX_SAMPLE_HZ 100000

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
"                         Ctrl-C, SIGTERM or SIGHUP (or until CMD exits)\n"
"  -o, --output FILE      trace file, .json, .json.gz or .pftrace (Perfetto);\n"
"                         repeat for several formats; default\n"
"                         gpubpf-<pid|all>-<YYYYmmdd-HHMMSS>.json\n"
"      --libcuda PATH     the libcuda to probe instead of the discovered one\n"
"      --no-device        host calls only: no GPU timing (with -- CMD, do not\n"
"                         set CUDA_INJECTION64_PATH)\n"
"      --cupti-lib PATH   the injection library (libgpubpf_cupti.so) to use\n"
"      --no-inject        -p, -a: GPU timing only for jobs started with\n"
"                         CUDA_INJECTION64_PATH; never load the library into\n"
"                         a running process (late attach: ptrace, or\n"
"                         CPython 3.14+'s remote execution)\n"
"      --buffer-size SIZE the BPF ring buffer of GPU records (default 16M;\n"
"                         K, M, G suffixes); calls have one a sixteenth of\n"
"                         its size, at least 256K\n"
"      --memory SIZE      events held in memory (default 64M): past it the\n"
"                         older ones go to temporary files beside the trace,\n"
"                         merged into it at the end; as much again (at\n"
"                         least 16M) of records read, not decoded yet\n"
"      --stack MODE       python (default): the Python stack of every call;\n"
"                         native: its user-space return addresses, named\n"
"                         from the ELF symbols (up to 64 frames, through\n"
"                         frame pointers); python,native: both; none\n"
"      --stack-depth N    Python frames per stack, 1 to 256 (default 64);\n"
"                         deeper stacks are cut and flagged\n"
"      --sample-hz N      sample the stacks of traced threads on a CPU N\n"
"                         times a second (default 1000; 0: off)\n"
"      --no-states        no thread states (running, runnable, waiting for\n"
"                         the GIL, a lock, I/O, a sleep) from the scheduler\n"
"      --autograd         PyTorch jobs: name the autograd node of each call\n"
"                         its backward makes, and the forward line that made\n"
"                         the node (probes libtorch: about 1.5 us per\n"
"                         forward op, 3 us per backward node)\n"
"      --sample-rate N    device memory counter tracks: a sample every N\n"
"                         allocations/frees (default 0: every change)\n"
"  -q, --quiet            no report at the end (see 'gpubpf report')\n"
"  -v, --verbose          libbpf's own messages, the ring buffers' sizes,\n"
"                         and each part written out past --memory\n"
"  -h, --help             this help\n"
"\n"
"Needs root (or CAP_BPF and CAP_PERFMON).\n";

int record_opts_parse(struct record_opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "libcuda", required_argument, NULL, 'L' },
		{ "buffer-size", required_argument, NULL, 'B' },
		{ "memory", required_argument, NULL, 'm' },
		{ "no-device", no_argument, NULL, 'N' },
		{ "stack", required_argument, NULL, 'S' },
		{ "stack-depth", required_argument, NULL, 'D' },
		{ "cupti-lib", required_argument, NULL, 'C' },
		{ "no-inject", no_argument, NULL, 'I' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "sample-rate", required_argument, NULL, 'M' },
		{ "sample-hz", required_argument, NULL, 'H' },
		{ "no-states", no_argument, NULL, 'T' },
		{ "autograd", no_argument, NULL, 'G' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	pid_t *pids = NULL;
	int c, n = 0, all = 0;

	o->ringbuf = DEFAULT_RINGBUF;
	o->memory = MODEL_PART_MEMORY;
	o->device = 1;
	o->inject = 1;
	o->stacks = 1;
	o->stack_depth = DEFAULT_STACK_DEPTH;
	o->states = 1;
	o->sample_hz = DEFAULT_SAMPLE_HZ;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:ad:o:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			n = parse_pid_list(optarg, &pids, n);
			if (n < 0) {
				fprintf(stderr, "gpubpf: invalid pid list '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'a':
			all = 1;
			break;
		case 'd':
			if (parse_duration_ns(optarg, &o->duration_ns)) {
				fprintf(stderr, "gpubpf: invalid duration '%s' (use e.g. 500ms, 10s, 2m)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			if (o->noutputs == RECORD_MAX_OUTPUTS) {
				fprintf(stderr, "gpubpf: at most %d -o\n", RECORD_MAX_OUTPUTS);
				return -EINVAL;
			}
			o->outputs[o->noutputs++] = optarg;
			break;
		case 'L':
			o->libcuda = optarg;
			break;
		case 'B':
			if (parse_size(optarg, &o->ringbuf) || o->ringbuf > (1ULL << 30)) {
				fprintf(stderr, "gpubpf: invalid buffer size '%s' (use e.g. 64M, at most 1G)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'm':
			if (parse_size(optarg, &o->memory) || o->memory < MODEL_PART_MIN_MEMORY) {
				fprintf(stderr, "gpubpf: invalid memory size '%s' (use e.g. 512M, at least 1M)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'N':
			o->device = 0;
			break;
		case 'I':
			o->inject = 0;
			break;
		case 'S': {
			/* a list: python, native, python,native; or none alone */
			const char *p = optarg;
			size_t len;

			o->stacks = o->native = 0;
			for (; *p; p += len + !!p[len]) {
				len = strcspn(p, ",");
				if (len == 6 && !strncmp(p, "python", 6))
					o->stacks = 1;
				else if (len == 6 && !strncmp(p, "native", 6))
					o->native = 1;
				else if (!(len == 4 && !strncmp(p, "none", 4) && !strcmp(optarg, "none")))
					break;
			}
			if (!*p && *optarg && p[-1] != ',')
				break;
			fprintf(stderr, "gpubpf: invalid --stack '%s' (python, native, "
				"python,native or none)\n", optarg);
			return -EINVAL;
		}
		case 'D': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 1 || v > GB_PY_MAX_DEPTH) {
				fprintf(stderr, "gpubpf: invalid --stack-depth '%s' (1 to %d)\n", optarg,
					GB_PY_MAX_DEPTH);
				return -EINVAL;
			}
			o->stack_depth = v;
			break;
		}
		case 'C': {
			const char *entry = INJECT_ENTRY;
			uint64_t off;

			if (!realpath(optarg, o->injlib)) {
				fprintf(stderr, "gpubpf: cannot read injection library '%s': %s\n",
					optarg, strerror(errno));
				return -EINVAL;
			}
			/* else the command would load it, and say so on its stderr */
			if (elf_sym_offsets(o->injlib, &entry, 1, &off) != 1) {
				fprintf(stderr, "gpubpf: --cupti-lib '%s' is not gpubpf's injection "
					"library (no %s in it)\n", optarg, entry);
				return -EINVAL;
			}
			break;
		}
		case 'M': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (!*optarg || *end || *optarg == '-' || v > UINT32_MAX) {
				fprintf(stderr, "gpubpf: invalid sample rate '%s' (a number of operations, 0 for every change)\n",
					optarg);
				return -EINVAL;
			}
			o->export.mem_sample_rate = v;
			break;
		}
		case 'H': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (!*optarg || *end || *optarg == '-' || v > MAX_SAMPLE_HZ) {
				fprintf(stderr, "gpubpf: invalid --sample-hz '%s' (0 to %d)\n", optarg,
					MAX_SAMPLE_HZ);
				return -EINVAL;
			}
			o->sample_hz = v;
			break;
		}
		case 'T':
			o->states = 0;
			break;
		case 'G':
			o->autograd = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fprintf(stderr, "gpubpf: %s '%s' (see 'gpubpf record --help')\n",
				c == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		o->cmd = &argv[optind];
		o->mode = MODE_CMD;
	} else {
		o->mode = all ? MODE_ALL : MODE_PIDS;
	}
	if (o->autograd && !o->stacks) {
		fprintf(stderr, "gpubpf: --autograd needs Python stacks (the forward lines are "
			"theirs): use it with --stack python\n");
		free(pids);
		return -EINVAL;
	}
	if ((!!n + all + !!o->cmd) != 1) {
		fprintf(stderr, "gpubpf: record needs exactly one of -p PID, -a or -- CMD "
			"(see 'gpubpf record --help')\n");
		free(pids);
		return -EINVAL;
	}
	o->pids = pids;
	o->npids = n;
	return 0;
}

int record_opts_check(struct record_opts *o)
{
	const char *env = getenv("CUDA_INJECTION64_PATH"), *name = "cuInit";
	char err[512];
	uint64_t off;

	/* before the probes load (a second or more): a pid gone then is a typo */
	for (int i = 0; i < o->npids; i++)
		if (proc_tgid(o->pids[i]) < 0 || !proc_alive(proc_tgid(o->pids[i]))) {
			fprintf(stderr, "gpubpf: no such process: %d\n", o->pids[i]);
			return -ESRCH;
		}
	if (o->libcuda && access(o->libcuda, R_OK)) {
		fprintf(stderr, "gpubpf: cannot read libcuda '%s': %s\n", o->libcuda, strerror(errno));
		return -EINVAL;
	}
	if (o->libcuda && elf_sym_offsets(o->libcuda, &name, 1, &off) < 0) {
		fprintf(stderr, "gpubpf: libcuda '%s' is not an ELF file\n", o->libcuda);
		return -EINVAL;
	}
	for (int i = 0; i < o->noutputs; i++) {
		if (!sink_check_path(o->outputs[i], err, sizeof(err)))
			continue;
		fprintf(stderr, "gpubpf: %s\n", err);
		return -EINVAL;
	}
	if (o->device && !o->injlib[0] &&
	    discover_injection_lib(o->libcuda, o->injlib, sizeof(o->injlib))) {
		fprintf(stderr, "gpubpf: GPU timing off: %s not found beside gpubpf "
			"(use --cupti-lib PATH)\n", o->injlib);
		o->device = 0;
	}
	if (o->device && o->mode == MODE_CMD && env && strcmp(env, o->injlib)) {
		fprintf(stderr, "gpubpf: GPU timing off: CUDA_INJECTION64_PATH is already set to "
			"'%s'\n", env);
		o->device = 0;
	}
	return 0;
}

void record_opts_release(struct record_opts *o)
{
	free(o->pids);
	o->pids = NULL;
}
