// SPDX-License-Identifier: BSD-2-Clause
/*
 * pysym_bench - Python frame symbolisation: distinct frames per second and
 * memory per distinct frame (issue #3).
 *
 *	pysym_bench [-k FUNCS] [-r REPS] [-p PYTHON]
 *
 * Starts PYTHON holding FUNCS distinct functions (generated with exec into
 * one file) and reads their code object addresses from it; computes each
 * one's identity token as the BPF walker does (gb_py_ident over the bytes
 * at code + cfg.code_ident, read from /proc/PID/mem); then REPS times,
 * with a fresh (cold) cache: pysym_resolve() of every frame, timed, and
 * pysym_mem() after.  Every frame must resolve to its own name.  Prints a
 * line per repetition and a final "median" line of key=value pairs.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gpubpf.h"
#include "sym/pyruntime.h"
#include "sym/pysym.h"

static const char script[] =
"import sys\n"
"K = int(sys.argv[1])\n"
"src = ''.join('def f_%d(x):\\n    y = x + %d\\n    return y\\n' % (i, i) for i in range(K))\n"
"ns = {}\n"
"exec(compile(src, '/tmp/pysym_bench_gen.py', 'exec'), ns)\n"
"fs = [ns['f_%d' % i] for i in range(K)]\n"
"sys.stdout.write(''.join('%d\\n' % id(f.__code__) for f in fs) + 'ready\\n')\n"
"sys.stdout.flush()\n"
"sys.stdin.read()\n";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *python = "python3";
	int k = 20000, reps = 3, opt, in[2], out[2], memfd;
	struct gb_py_frame *frames;
	struct gb_py_config cfg;
	double *rate, *perframe;
	char why[256], path[64], line[64], kbuf[16];
	pid_t pid;
	FILE *f;
	int n = 0;

	while ((opt = getopt(argc, argv, "k:r:p:")) != -1) {
		switch (opt) {
		case 'k': k = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 'p': python = optarg; break;
		default:
			fprintf(stderr, "usage: pysym_bench [-k FUNCS] [-r REPS] [-p PYTHON]\n");
			return 2;
		}
	}
	if (k < 1 || reps < 1 || pipe(in) || pipe(out))
		return 2;
	snprintf(kbuf, sizeof(kbuf), "%d", k);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execlp(python, python, "-c", script, kbuf, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	frames = calloc(k, sizeof(*frames));
	rate = calloc(reps, sizeof(*rate));
	perframe = calloc(reps, sizeof(*perframe));
	f = fdopen(out[0], "r");
	if (!frames || !rate || !perframe || !f)
		return 1;
	while (n < k && fgets(line, sizeof(line), f))
		frames[n++].code = strtoull(line, NULL, 10);
	if (n != k || !fgets(line, sizeof(line), f) || strcmp(line, "ready\n")) {
		fprintf(stderr, "pysym_bench: %s gave %d of %d code objects\n", python, n, k);
		return 1;
	}
	if (pyruntime_find(pid, &cfg, why, sizeof(why))) {
		fprintf(stderr, "pysym_bench: pid %d: %s\n", pid, why);
		return 1;
	}
	/* identity tokens, as the BPF walker computes them */
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	memfd = open(path, O_RDONLY);
	if (memfd < 0)
		return 1;
	for (int i = 0; i < k; i++) {
		__u64 w[GB_PY_IDENT_LEN / 8];

		if (pread(memfd, w, sizeof(w), frames[i].code + cfg.code_ident) != sizeof(w))
			return 1;
		frames[i].ident = gb_py_ident(w);
		frames[i].instr = 0;
	}
	close(memfd);
	printf("# CPython %u.%u, %d distinct functions, cold cache each repetition\n",
	       cfg.version / 100, cfg.version % 100, k);
	for (int r = 0; r < reps; r++) {
		struct pysym *s = pysym_new();
		struct py_frame_info fi;
		size_t mem, codes = 0;
		int bad = 0;
		double t0, t;

		if (!s)
			return 1;
		t0 = now();
		for (int i = 0; i < k; i++)
			if (pysym_resolve(s, pid, &cfg, &frames[i], &fi))
				bad++;
		t = now() - t0;
		/* every frame under its own name (outside the timing) */
		for (int i = 0; i < k; i++) {
			char want[32];

			snprintf(want, sizeof(want), "f_%d", i);
			if (pysym_resolve(s, pid, &cfg, &frames[i], &fi) || strcmp(fi.qualname, want))
				bad++;
		}
		mem = pysym_mem(s, &codes);
		rate[r] = k / t;
		perframe[r] = (double)mem / k;
		printf("rep %d: %d frames in %.3f s = %.0f frames/s, %zu bytes (%zu code objects) = %.0f B/frame%s\n",
		       r + 1, k, t, rate[r], mem, codes, perframe[r], bad ? ", UNRESOLVED" : "");
		pysym_free(s);
		if (bad) {
			fprintf(stderr, "pysym_bench: %d frames not resolved to their names\n", bad);
			return 1;
		}
	}
	close(in[1]);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	qsort(rate, reps, sizeof(*rate), cmp_double);
	qsort(perframe, reps, sizeof(*perframe), cmp_double);
	printf("median frames=%d frames_per_s=%.0f bytes_per_frame=%.0f\n", k, rate[reps / 2],
	       perframe[reps / 2]);
	return 0;
}
