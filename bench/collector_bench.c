// SPDX-License-Identifier: BSD-2-Clause
/*
 * collector_bench - collector decode and Chrome-trace export throughput.
 *
 *	collector_bench [-n EVENTS] [-r REPS] [-d DIR]
 *
 * Synthesises EVENTS ring-buffer records (struct gb_call, as bpf/cuda.bpf.c
 * writes them: mostly cuLaunchKernel, plus async and sync copies, memsets,
 * event records and stream syncs from 4 threads, after 256 kernel-name
 * records), then REPS times, single-threaded:
 *   decode  collector_record() of every record into a fresh model
 *   finish  model_finish() (sort, resolve kernel names)
 *   json    export_chrome into DIR/collector-bench.json (sink commit incl.)
 *   gz      the same into DIR/collector-bench.json.gz
 * Prints one line per repetition and a final "median" line of key=value
 * pairs.  The output files are removed at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "gpubpf.h"
#include "record/collector.h"
#include "model/cuda_calls.h"
#include "trace/export.h"
#include "model/model.h"
#include "lib/sink.h"

#define NKERNELS 256
#define NTHREADS 4

struct rec {
	union {
		struct gb_call call;
		struct gb_name name;
	};
	size_t size;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int id_of(const char *name)
{
	int id = cuda_call_find(name);

	if (id < 0) {
		fprintf(stderr, "collector_bench: %s not in the call table\n", name);
		exit(1);
	}
	return id;
}

/* A tiny deterministic PRNG (xorshift64*). */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static struct rec *synthesise(size_t n, size_t *nrec)
{
	int launch = id_of("cuLaunchKernel"), htod = id_of("cuMemcpyHtoDAsync_v2"),
	    dtoh = id_of("cuMemcpyDtoHAsync_v2"), dtoh_sync = id_of("cuMemcpyDtoH_v2"),
	    memset32 = id_of("cuMemsetD32Async"), evrec = id_of("cuEventRecord"),
	    ssync = id_of("cuStreamSynchronize");
	uint32_t pid = getpid();
	uint64_t ts = 1000000000000ULL;
	struct rec *r = calloc(n + NKERNELS, sizeof(*r));
	size_t k = 0;

	if (!r)
		return NULL;
	for (int i = 0; i < NKERNELS; i++, k++) {
		r[k].name.type = GB_REC_NAME;
		r[k].name.pid = pid;
		r[k].name.handle = 0x7f0000100000ULL + i * 0x40;
		snprintf(r[k].name.name, GB_NAME_LEN,
			 "void at::native::vectorized_elementwise_kernel<4, at::native::"
			 "CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, %d)", i);
		r[k].size = sizeof(struct gb_name);
	}
	for (size_t i = 0; i < n; i++, k++) {
		struct gb_call *c = &r[k].call;
		unsigned t = rnd() % NTHREADS, p = rnd() % 100;

		r[k].size = sizeof(*c);
		c->type = GB_REC_CALL;
		c->pid = pid;
		c->tid = pid + t;
		/* ~2 us apart; per-CPU ring order makes neighbours slightly unsorted */
		ts += 2000;
		c->ts_entry = ts - rnd() % 3000;
		if (p < 70) {
			c->call_id = launch;
			c->arg[0] = 0x7f0000100000ULL + (rnd() % NKERNELS) * 0x40;
			c->arg[1] = 1 + rnd() % 4096, c->arg[2] = 1, c->arg[3] = 1;
			c->arg[4] = 256, c->arg[5] = 1;
			c->stk[0] = 1, c->stk[1] = 0, c->stk[2] = 0x5000 + t;
			c->stk[3] = 0x7ffd00001000ULL, c->stk[4] = 0;
		} else if (p < 80 || p < 85) {
			c->call_id = p < 80 ? htod : dtoh;
			c->arg[0] = 0x7f1000000000ULL + rnd() % (1ULL << 30);
			c->arg[1] = 0x560000000000ULL + rnd() % (1ULL << 30);
			c->arg[2] = 4 << (rnd() % 20);
			c->arg[3] = 0x5000 + t;
		} else if (p < 90) {
			c->call_id = memset32;
			c->arg[0] = 0x7f1000000000ULL + rnd() % (1ULL << 30);
			c->arg[1] = 0, c->arg[2] = 1024 << (rnd() % 8), c->arg[3] = 0x5000 + t;
		} else if (p < 95) {
			c->call_id = evrec;
			c->arg[0] = 0x6000 + rnd() % 64, c->arg[1] = 0x5000 + t;
		} else {
			c->call_id = p < 98 ? ssync : dtoh_sync;
			c->arg[0] = p < 98 ? 0x5000 + t : 0x560000000000ULL;
			c->arg[1] = 0x7f1000000000ULL, c->arg[2] = 4096;
			c->ts_return = c->ts_entry + 1000 + rnd() % 500000;
			c->ret = 0;
		}
	}
	*nrec = k;
	return r;
}

/* secs: open + write + commit; wsecs: open + write (no flush, fsync, rename) */
static int export_to(const struct model *m, const char *path, double *secs,
		     double *wsecs, unsigned long long *bytes)
{
	struct export_opts opts = { 0 };
	struct sink s;
	struct stat st;
	uint64_t t0 = now_ns();
	int ret = sink_open(&s, path);

	*wsecs = 0;
	if (!ret) {
		ret = export_chrome.write(m, &opts, &s);
		*wsecs = (now_ns() - t0) / 1e9;
		if (ret)
			sink_abort(&s);
		else
			ret = sink_commit(&s);
	}
	*secs = (now_ns() - t0) / 1e9;
	if (ret) {
		fprintf(stderr, "collector_bench: %s: %s\n", path,
			sink_errmsg(&s)[0] ? sink_errmsg(&s) : strerror(-ret));
		return ret;
	}
	*bytes = stat(path, &st) ? 0 : (unsigned long long)st.st_size;
	return 0;
}

int main(int argc, char **argv)
{
	size_t n = 2000000, nrec;
	int reps = 3, c;
	const char *dir = "/tmp";
	char pjson[4096], pgz[4096];
	double *dec, *fin, *js, *jsmb, *jw, *jwmb, *gz, *gzmb;
	unsigned long long jbytes = 0, gbytes = 0;
	struct rec *r;

	while ((c = getopt(argc, argv, "n:r:d:")) != -1) {
		switch (c) {
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		case 'd': dir = optarg; break;
		default:
			fprintf(stderr, "usage: collector_bench [-n EVENTS] [-r REPS] [-d DIR]\n");
			return 2;
		}
	}
	if (reps < 1 || !n)
		return 2;
	snprintf(pjson, sizeof(pjson), "%s/collector-bench.json", dir);
	snprintf(pgz, sizeof(pgz), "%s/collector-bench.json.gz", dir);
	r = synthesise(n, &nrec);
	dec = calloc(reps, sizeof(double)), fin = calloc(reps, sizeof(double));
	js = calloc(reps, sizeof(double)), jsmb = calloc(reps, sizeof(double));
	gz = calloc(reps, sizeof(double)), gzmb = calloc(reps, sizeof(double));
	jw = calloc(reps, sizeof(double)), jwmb = calloc(reps, sizeof(double));
	if (!r || !dec || !fin || !js || !jsmb || !gz || !gzmb || !jw || !jwmb) {
		fprintf(stderr, "collector_bench: out of memory\n");
		return 1;
	}
	for (int rep = 0; rep < reps; rep++) {
		struct collector coll;
		struct model m;
		double sj, sjw, sg, sgw, sd, sf;
		uint64_t t0;

		model_init(&m);
		collector_init(&coll, &m);
		t0 = now_ns();
		for (size_t i = 0; i < nrec; i++)
			if (collector_record(&coll, &r[i], r[i].size)) {
				fprintf(stderr, "collector_bench: record %zu rejected\n", i);
				return 1;
			}
		sd = (now_ns() - t0) / 1e9;
		t0 = now_ns();
		model_finish(&m);
		sf = (now_ns() - t0) / 1e9;
		if (coll.calls != n) {
			fprintf(stderr, "collector_bench: %llu calls decoded, %zu expected\n",
				(unsigned long long)coll.calls, n);
			return 1;
		}
		if (export_to(&m, pjson, &sj, &sjw, &jbytes) || export_to(&m, pgz, &sg, &sgw, &gbytes))
			return 1;
		dec[rep] = n / sd;
		fin[rep] = n / sf;
		js[rep] = n / sj, jsmb[rep] = jbytes / sj / 1e6;
		jw[rep] = n / sjw, jwmb[rep] = jbytes / sjw / 1e6;
		gz[rep] = n / sg, gzmb[rep] = jbytes / sg / 1e6;
		printf("rep=%d events=%zu decode_ev_s=%.0f finish_ev_s=%.0f json_ev_s=%.0f "
		       "json_mb_s=%.1f jsonw_ev_s=%.0f jsonw_mb_s=%.1f json_bytes=%llu gz_ev_s=%.0f "
		       "gz_mb_s=%.1f gz_bytes=%llu\n",
		       rep, n, dec[rep], fin[rep], js[rep], jsmb[rep], jw[rep], jwmb[rep], jbytes, gz[rep], gzmb[rep],
		       gbytes);
		fflush(stdout);
		collector_release(&coll);
		model_release(&m);
	}
	printf("median events=%zu decode_ev_s=%.0f finish_ev_s=%.0f json_ev_s=%.0f json_mb_s=%.1f "
	       "jsonw_ev_s=%.0f jsonw_mb_s=%.1f json_bytes=%llu gz_ev_s=%.0f gz_mb_s=%.1f "
	       "gz_bytes=%llu\n",
	       n, median(dec, reps), median(fin, reps), median(js, reps), median(jsmb, reps),
	       median(jw, reps), median(jwmb, reps), jbytes, median(gz, reps), median(gzmb, reps), gbytes);
	unlink(pjson);
	unlink(pgz);
	return 0;
}
