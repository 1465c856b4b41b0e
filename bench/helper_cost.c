// SPDX-License-Identifier: BSD-2-Clause
/*
 * helper_cost - what one BPF helper call costs on this machine.
 *
 *	helper_cost [-l LIB] [-n CALLS]
 *
 * Loads bench/helper_cost.bpf.c and attaches each of its programs in turn
 * to cuLaunchKernel of LIB (default build/bench/push/libcuda.so.1, whose
 * entry the kernel emulates) in this process, calls it CALLS times
 * (default 200000) and reads the program's run time (BPF_ENABLE_STATS,
 * held only while this runs).  Prints one line per kind of call:
 *	op=NAME ns=X
 * X: ns per call of that kind, the empty program's run time taken off
 * (op=empty_program: that run time itself; the programs that make one
 * call, or a set of calls once each, per run: that run's cost).  Exits 1
 * if a program ran other than CALLS times.  Needs root.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "helper_cost.skel.h"

#define HC_N 8          /* calls per run of the repeating programs (helper_cost.bpf.c) */
#define HC_TURNS 64

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, unsigned, void *, void **, void **);

/* ns per run of prog over calls calls of fn, or -1 */
static double run_ns(struct bpf_program *prog, const char *lib, launch_fn fn, long calls)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "cuLaunchKernel");
	struct bpf_prog_info a = {}, b = {};
	__u32 len = sizeof(a);
	struct bpf_link *link;
	int fd = bpf_program__fd(prog);

	link = bpf_program__attach_uprobe_opts(prog, getpid(), lib, 0, &uo);
	if (!link) {
		fprintf(stderr, "helper_cost: cannot attach %s to %s: %s\n",
			bpf_program__name(prog), lib, strerror(errno));
		return -1;
	}
	for (int i = 0; i < 1000; i++)  /* warm: caches, the task storage's first use */
		fn(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	bpf_obj_get_info_by_fd(fd, &a, &len);
	for (long i = 0; i < calls; i++)
		fn(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	len = sizeof(b);
	bpf_obj_get_info_by_fd(fd, &b, &len);
	bpf_link__destroy(link);
	if (b.run_cnt - a.run_cnt != (__u64)calls) {
		fprintf(stderr, "helper_cost: %s ran %llu times for %ld calls\n",
			bpf_program__name(prog), (unsigned long long)(b.run_cnt - a.run_cnt), calls);
		return -1;
	}
	return (double)(b.run_time_ns - a.run_time_ns) / calls;
}

int main(int argc, char **argv)
{
	const char *lib = "build/bench/push/libcuda.so.1";
	struct helper_cost_bpf *skel;
	struct bpf_program *p;
	long calls = 200000;
	double ns[32], empty = 0;
	const char *names[32];
	int c, n = 0, stats, ret = 0;
	launch_fn fn;
	void *h;

	while ((c = getopt(argc, argv, "l:n:")) != -1) {
		switch (c) {
		case 'l': lib = optarg; break;
		case 'n': calls = atol(optarg); break;
		default:
			fprintf(stderr, "usage: helper_cost [-l LIB] [-n CALLS]\n");
			return 2;
		}
	}
	if (calls <= 0) {
		fprintf(stderr, "helper_cost: -n wants a positive count\n");
		return 2;
	}
	h = dlopen(lib, RTLD_NOW);
	fn = h ? (launch_fn)dlsym(h, "cuLaunchKernel") : NULL;
	if (!fn) {
		fprintf(stderr, "helper_cost: %s: no cuLaunchKernel (%s)\n", lib, dlerror());
		return 1;
	}
	skel = helper_cost_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "helper_cost: cannot load the programs: %s\n", strerror(errno));
		return 1;
	}
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats < 0) {
		fprintf(stderr, "helper_cost: cannot enable BPF run-time statistics: %s\n",
			strerror(errno));
		helper_cost_bpf__destroy(skel);
		return 1;
	}
	bpf_object__for_each_program(p, skel->obj) {
		if (n == 32 || (ns[n] = run_ns(p, lib, fn, calls)) < 0) {
			ret = 1;
			break;
		}
		names[n++] = bpf_program__name(p);
	}
	for (int i = 0; i < n && !ret; i++)
		if (!strcmp(names[i], "hc_empty"))
			empty = ns[i];
	for (int i = 0; i < n && !ret; i++) {
		const char *op = names[i] + 3;  /* less "hc_" */
		double per = (ns[i] - empty) / HC_N;

		if (!strcmp(op, "empty")) {
			op = "empty_program";
			per = ns[i];
		} else if (!strcmp(op, "read4k_map") || !strcmp(op, "read4k_alias") ||
			   strstr(op, "_once") || !strcmp(op, "entry_calls")) {
			per = ns[i] - empty;
		} else if (!strcmp(op, "loop_one")) {
			continue;
		} else if (!strcmp(op, "loop_many")) {
			double one = 0;

			for (int j = 0; j < n; j++)
				if (!strcmp(names[j], "hc_loop_one"))
					one = ns[j];
			op = "loop_turn";
			per = (ns[i] - one) / (HC_TURNS - 1);
		}
		printf("op=%s ns=%.1f\n", op, per);
	}
	close(stats);
	helper_cost_bpf__destroy(skel);
	return ret;
}
