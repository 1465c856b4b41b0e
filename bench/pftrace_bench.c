// SPDX-License-Identifier: BSD-2-Clause
/*
 * pftrace_bench - trace size and export time, .pftrace against JSON.
 *
 *	pftrace_bench [-s SECONDS] [-c CALLS_PER_S] [-k DEPTH] [-r REPS] [-d DIR]
 *
 * Builds the model of a synthetic PyTorch-like job (default: 60 s at 25k
 * driver calls/s, each with a Python stack of 30 frames), then REPS times
 * exports it as Chrome JSON and as .pftrace into DIR, timing each (sink
 * open to commit, which syncs the file to disk; and CPU time).  The job repeats a training step of NSITES call sites
 * (distinct stacks: the same outer frames, then a phase and a layer), on
 * one thread: 70% kernel launches, 10% async copies, 5% memsets, 10% event
 * records, 5% stream syncs; each launch, copy and memset has its GPU
 * record on stream 7 (linked by correlation id).  Prints one line per
 * repetition and a "median" line of key=value pairs; bytes per event are
 * per model event (calls, GPU records, Python scopes).  The last
 * repetition's files are then read back REPS times each, as `gpubpf
 * report` reads them (trace_import.h: every event, one at a time), timed
 * the same way ("read_s"); each file is removed once done with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/sink.h"
#include "model/cuda_calls.h"
#include "model/model.h"
#include "trace/export.h"
#include "trace/trace_import.h"

#define PID 4242
#define NSITES 400              /* call sites (distinct stacks) per step */
#define NKERNELS 256
#define GPU_STREAM 7
#define MAX_DEPTH 256

struct bench {
	unsigned secs, rate, depth, reps;
	const char *dir;
};

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
	fprintf(stderr, "pftrace_bench: %s\n", what);
	exit(1);
}

static uint32_t intern(struct model *m, const char *s)
{
	uint32_t id = strtab_intern(&m->strs, s);

	if (!id)
		die("out of memory");
	return id;
}

/*
 * Frame j (outermost 0) of call site s: the training loop's frames, the
 * phase (forward, backward, optimizer), then the module tree down to the
 * site's op: a chain of modules, then the last 5 levels a binary tree
 * whose leaves make 4 calls each, so that consecutive sites share all but
 * their line or a frame or two, as in a model's forward pass.  frame: "qualname (file:line)", func "qualname (file)".
 */
static void frame_of(unsigned s, unsigned j, unsigned depth, char *frame, char *func,
		     size_t size)
{
	static const char *const outer[] = {
		"<module>", "main", "run", "Trainer.fit", "Trainer.train_epoch",
		"Trainer.train_step",
	};
	static const char *const phase[] = { "Model.forward", "Tensor.backward",
					     "Optimizer.step" };
	static const char *const mod[] = { "Sequential", "Block", "Attention", "MLP",
					   "Linear", "LayerNorm", "Dropout" };
	unsigned nouter = sizeof(outer) / sizeof(outer[0]), per = (NSITES + 2) / 3;
	unsigned below = depth - 2 - j, node = below < 5 ? s % per >> (below + 2) : 0;
	char q[96];
	const char *file = "torch/nn/modules/module.py";
	unsigned line = 1500 + j;

	if (j < nouter) {
		snprintf(q, sizeof(q), "%s", outer[j]);
		file = "train.py", line = 100 + 10 * j;
	} else if (j == nouter) {
		snprintf(q, sizeof(q), "%s", phase[s / per]);
		file = "model.py", line = 40 + s / per;
	} else if (j + 1 < depth) {
		snprintf(q, sizeof(q), "%s.forward", mod[(node + j) % 7]);
		line = 200 + (node * 7 + j) % 50;
	} else {
		snprintf(q, sizeof(q), "torch._C._nn.op%u", s / 4 % 5);
		file = "torch/functional.py", line = 300 + s % 200;
	}
	snprintf(func, size, "%s (%s)", q, file);
	snprintf(frame, size, "%s (%s:%u)", q, file, line);
}

static void add_stacks(struct model *m, unsigned depth)
{
	uint32_t frames[MAX_DEPTH], funcs[MAX_DEPTH];
	char frame[160], func[160];

	for (unsigned s = 0; s < NSITES; s++) {
		for (unsigned j = 0; j < depth; j++) {
			frame_of(s, j, depth, frame, func, sizeof(frame));
			/* innermost first */
			frames[depth - 1 - j] = intern(m, frame);
			funcs[depth - 1 - j] = intern(m, func);
		}
		if (model_add_stack(m, PID, s + 1, 0, depth, frames, funcs))
			die("out of memory");
	}
}

static struct model_event *add_event(struct model *m, int kind, uint64_t ts, uint64_t dur)
{
	struct model_event *e = model_add_event(m);

	if (!e)
		die("out of memory");
	e->kind = kind;
	e->ts = ts;
	e->dur = dur;
	e->pid = PID;
	e->tid = PID;
	return e;
}

static uint64_t gpu_free;       /* when the stream is next idle */

/* The GPU record of the last event, a call (correlation corr), queued on the stream. */
static void add_gpu(struct model *m, int kind, uint32_t corr, uint64_t dur)
{
	const struct model_event *c = &m->ev[m->nev - 1];
	uint64_t ts = c->ts + 8000 > gpu_free ? c->ts + 8000 : gpu_free;
	struct model_event *g = add_event(m, kind, ts, dur);

	c = g - 1;      /* the array may have moved */

	g->correlation = corr;
	g->gpu_stream = GPU_STREAM;
	g->kernel = kind == EV_KERNEL ? c->kernel : 0;
	g->grid[0] = c->grid[0], g->grid[1] = g->grid[2] = 1;
	g->block[0] = 256, g->block[1] = g->block[2] = 1;
	g->registers = 32;
	g->bytes = c->bytes;
	g->gpu_kind = 1;        /* HtoD */
	gpu_free = ts + dur;
}

/* Call i of the job, at site i % NSITES, with its GPU record. */
static void add_call(struct model *m, uint64_t i, uint64_t ts, const uint32_t *names,
		     const uint32_t *knames)
{
	unsigned site = i % NSITES, p = (site * 37) % 100;
	struct model_event *c = add_event(m, EV_API, ts, 4000 + site % 5 * 500);
	uint32_t corr = i + 1;

	c->pystack = site + 1;
	c->fields = MF_STREAM | MF_RET;
	c->stream = 0x5570a000;
	if (p < 70) {
		c->name = names[0], c->family = CF_LAUNCH;
		c->fields |= MF_FUNC | MF_GRID | MF_BLOCK | MF_SHMEM;
		c->func = 0x7f0000100000ULL + site % NKERNELS * 0x40;
		c->kernel = knames[site % NKERNELS];
		c->grid[0] = 1 + site * 13 % 4096, c->grid[1] = c->grid[2] = 1;
		c->block[0] = 256, c->block[1] = c->block[2] = 1;
		add_gpu(m, EV_KERNEL, corr, 20000 + site % 17 * 1000);
	} else if (p < 80) {
		c->name = names[1], c->family = CF_MEMCPY;
		c->fields |= MF_BYTES | MF_KIND;
		c->bytes = 4096 << site % 10, c->copy_kind = CK_HTOD;
		add_gpu(m, EV_MEMCPY, corr, 5000);
	} else if (p < 85) {
		c->name = names[2], c->family = CF_MEMSET;
		c->fields |= MF_BYTES | MF_PTR;
		c->bytes = 1024 << site % 8, c->ptr = 0x7f1000000000ULL + site * 0x10000;
		add_gpu(m, EV_MEMSET, corr, 2000);
	} else if (p < 95) {
		c->name = names[3], c->family = CF_SYNC;
		c->fields |= MF_HANDLE;
		c->handle = 0x6000 + site % 64;
		return;
	} else {
		c->name = names[4], c->family = CF_SYNC;
		c->dur = 30000;
		return;
	}
	if (model_add_corr(m, ts + 1000, PID, PID, corr))
		die("out of memory");
}

static void build(struct model *m, const struct bench *b)
{
	static const char *const calls[] = { "cuLaunchKernel", "cuMemcpyHtoDAsync_v2",
					     "cuMemsetD32Async", "cuEventRecord",
					     "cuStreamSynchronize" };
	uint32_t names[5], knames[NKERNELS];
	uint64_t n = (uint64_t)b->secs * b->rate, gap = 1000000000ULL / b->rate;
	uint64_t t0 = 1000000000000ULL;
	char k[160];

	model_init(m);
	snprintf(m->host, sizeof(m->host), "bench");
	model_process(m, PID, "python3");
	model_thread(m, PID, PID, "python3");
	add_stacks(m, b->depth);
	for (int i = 0; i < 5; i++)
		names[i] = intern(m, calls[i]);
	for (int i = 0; i < NKERNELS; i++) {
		snprintf(k, sizeof(k), "void at::native::vectorized_elementwise_kernel<4, "
			 "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, %d)", i);
		knames[i] = intern(m, k);
	}
	for (uint64_t i = 0; i < n; i++)
		add_call(m, i, t0 + i * gap, names, knames);
	if (model_finish(m))
		die("model_finish failed");
}

/*
 * Export m with e into path: seconds from open to commit (the commit
 * syncs the file to disk), CPU seconds in *cpu, the file's size.
 */
static double export_to(const struct model *m, const struct exporter *e, const char *path,
			double *cpu, unsigned long long *bytes)
{
	struct export_opts opts = { 0 };
	struct sink s;
	struct stat st;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	int ret = sink_open(&s, path);

	if (!ret) {
		ret = e->write(m, &opts, &s);
		if (ret)
			sink_abort(&s);
		else
			ret = sink_commit(&s);
	}
	if (ret) {
		fprintf(stderr, "pftrace_bench: %s: %s\n", path, sink_errmsg(&s));
		exit(1);
	}
	*bytes = stat(path, &st) ? 0 : (unsigned long long)st.st_size;
	*cpu = (now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e9;
	return (now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
}

/* Read path back event by event as report does: wall seconds, *cpu its CPU time. */
static double read_back(const char *path, double *cpu, size_t *nev)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	struct trace_import ti;
	struct model_event ev;
	struct model m;
	int ret;

	model_init(&m);
	*nev = 0;
	ret = trace_import_open(&ti, path, &m);
	if (!ret)
		while ((ret = trace_import_next(&ti, &ev)) > 0)
			++*nev;
	if (ret < 0) {
		fprintf(stderr, "pftrace_bench: %s\n", trace_import_errmsg(&ti));
		exit(1);
	}
	trace_import_close(&ti);
	model_release(&m);
	*cpu = (now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e9;
	return (now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: pftrace_bench [-s SECONDS] [-c CALLS_PER_S] [-k DEPTH] [-r REPS] "
		"[-d DIR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bench b = { .secs = 60, .rate = 25000, .depth = 30, .reps = 3, .dir = "/tmp" };
	unsigned long long jbytes = 0, pbytes = 0;
	char pjson[4096], ppf[4096];
	double *js, *ps, *jc, *pc, build_s;
	size_t calls = 0, gpu = 0, scopes = 0;
	struct model m;
	uint64_t t0;
	int c;

	while ((c = getopt(argc, argv, "s:c:k:r:d:")) != -1) {
		switch (c) {
		case 's': b.secs = atoi(optarg); break;
		case 'c': b.rate = atoi(optarg); break;
		case 'k': b.depth = atoi(optarg); break;
		case 'r': b.reps = atoi(optarg); break;
		case 'd': b.dir = optarg; break;
		default: usage();
		}
	}
	if (!b.secs || !b.rate || b.rate > 1000000 || b.depth < 8 || b.depth > MAX_DEPTH ||
	    !b.reps)
		usage();
	snprintf(pjson, sizeof(pjson), "%s/pftrace-bench.json", b.dir);
	snprintf(ppf, sizeof(ppf), "%s/pftrace-bench.pftrace", b.dir);
	js = calloc(b.reps, sizeof(*js));
	ps = calloc(b.reps, sizeof(*ps));
	jc = calloc(b.reps, sizeof(*jc));
	pc = calloc(b.reps, sizeof(*pc));
	if (!js || !ps || !jc || !pc)
		die("out of memory");
	t0 = now_ns(CLOCK_MONOTONIC);
	build(&m, &b);
	build_s = (now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
	for (size_t i = 0; i < m.nev; i++) {
		calls += m.ev[i].kind == EV_API;
		scopes += m.ev[i].kind == EV_SCOPE;
	}
	gpu = m.nev - calls - scopes;
	printf("model: %zu events (%zu calls, %zu GPU records, %zu Python scopes), %zu stacks "
	       "of %u frames, built in %.1f s\n", m.nev, calls, gpu, scopes, m.nstacks, b.depth,
	       build_s);
	for (unsigned r = 0; r < b.reps; r++) {
		js[r] = export_to(&m, &export_chrome, pjson, &jc[r], &jbytes);
		if (r + 1 < b.reps)
			unlink(pjson);
		ps[r] = export_to(&m, &export_perfetto, ppf, &pc[r], &pbytes);
		if (r + 1 < b.reps)
			unlink(ppf);
		printf("rep=%u json_s=%.2f json_cpu_s=%.2f json_bytes=%llu pftrace_s=%.2f "
		       "pftrace_cpu_s=%.2f pftrace_bytes=%llu\n", r, js[r], jc[r], jbytes, ps[r], pc[r],
		       pbytes);
		fflush(stdout);
	}
	/* export medians, before their arrays hold the reads */
	printf("median events=%zu calls=%zu gpu=%zu scopes=%zu json_bytes=%llu json_b_ev=%.1f "
	       "json_s=%.2f json_cpu_s=%.2f pftrace_bytes=%llu pftrace_b_ev=%.1f pftrace_s=%.2f "
	       "pftrace_cpu_s=%.2f\n", m.nev, calls, gpu, scopes, jbytes, (double)jbytes / m.nev,
	       median(js, b.reps), median(jc, b.reps), pbytes, (double)pbytes / m.nev,
	       median(ps, b.reps), median(pc, b.reps));
	fflush(stdout);
	{
		size_t nj = 0, np = 0;

		for (unsigned r = 0; r < b.reps; r++) {
			js[r] = read_back(pjson, &jc[r], &nj);
			ps[r] = read_back(ppf, &pc[r], &np);
			printf("rep=%u json_read_s=%.2f json_read_cpu_s=%.2f pftrace_read_s=%.2f "
			       "pftrace_read_cpu_s=%.2f events_read=%zu/%zu\n", r, js[r], jc[r], ps[r],
			       pc[r], nj, np);
			fflush(stdout);
		}
		unlink(pjson);
		unlink(ppf);
		if (nj != np)
			die("the two files read back differently");
		printf("median read events=%zu json_read_s=%.2f json_read_cpu_s=%.2f "
		       "pftrace_read_s=%.2f pftrace_read_cpu_s=%.2f\n", nj, median(js, b.reps),
		       median(jc, b.reps), median(ps, b.reps), median(pc, b.reps));
	}
	model_release(&m);
	free(js);
	free(ps);
	free(jc);
	free(pc);
	return 0;
}
