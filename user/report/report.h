/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `gpubpf report`: diagnoses from the model of a trace.  Its events are
 * kept as a compact table (report_table.h), one 48-byte row per host call
 * or GPU activity, filled from the model record built or from a trace file
 * streamed through the importer; the analyses (report_gpu.c with
 * report_cause.c, report_top.c, report_iter.c with report_phase.c,
 * report_repeat.c, report_autograd.c, report_memory.c; report.c runs
 * them) read the table (report_iter.c first: where library code runs the
 * loop, it sets the sites of the stacks in it, report_loop_resite()),
 * report_findings.c ranks what they found, and all
 * of them fill a struct report, which report_out.c prints as text or JSON
 * and report_svg.c draws.  Data flows one way: model -> table -> results
 * -> output; cmd_report.c ties them together.
 *
 *	struct rt_table t;
 *	struct report rep;
 *	rt_load(&t, path, err, sizeof(err));   one line "PATH: problem" on error
 *	report_analyze(&t, &rep);
 *	report_text(&t, &rep, file) / report_json(&t, &rep, file)
 *	report_release(&rep); rt_release(&t);
 */
#ifndef GPUBPF_REPORT_H
#define GPUBPF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report_table.h"

/* --- results --------------------------------------------------------- */

/*
 * Host-bound idle time by what the launching thread was doing
 * (report_cause.c): cause an enum model_state, MS_OTHER_WAIT also where no
 * state was recorded, or REP_CAUSE_GC for running time its samples show in
 * the garbage collector; site the innermost user frame (its samples' when
 * running, else the launch's), 0 unknown.
 */
enum { REP_CAUSE_GC = MS_COUNT, REP_NCAUSES };

struct rep_cause {
	uint32_t cause, site;
	uint64_t ns;
};

struct rep_device {
	uint32_t device;
	uint64_t busy_ns, span_ns, first_ns, last_ns;
	uint64_t host_bound_ns, sync_bound_ns, other_ns;
	uint64_t nwork;
	struct rep_cause *causes;       /* summing to host_bound_ns, costliest first */
	size_t ncauses, capcauses;
};

struct rep_hotspot {
	uint32_t site;          /* 0 unknown */
	uint32_t call;          /* the call (hotspots are per site and call) */
	uint64_t count, blocked_ns, gpu_idle_ns;
};

struct rep_stream {
	uint32_t device, stream;
	uint64_t kernels;
	uint64_t median_kernel_ns, median_gap_ns;
	double late_fraction;   /* gaps where the next launch came after the GPU went idle */
	double launch_rate;     /* launches per second */
	uint64_t host_per_launch_ns;
	bool launch_bound;
};

struct rep_comm {
	uint32_t kernel, device, stream;
	uint32_t site;          /* of its first launch with a known site, 0 unknown */
	uint64_t count, total_ns, exposed_ns;
	bool same_stream_as_compute;
};

/*
 * Host-bound idle time that ended with a launch from one site onto one
 * stream: the GPU ran dry until the host launched from there; cause_ns
 * splits it by the launching thread's state (rep_cause).
 */
/*
 * A host-bound gap longer than this was the host doing something else than
 * launching (a startup, a data load): on a launch-bound stream it is not
 * the launches' overhead, and goes to a host_bound finding of its own.
 */
#define REP_LONG_GAP_NS 10000000        /* 10 ms */

/*
 * A stream whose kernels are more than this apart (median) waits for the
 * host's work between its launches (a data loader's stream, one kernel a
 * batch), not for the launches: it is not launch-bound, and its gaps go
 * to host_bound findings.  A launch costs the host microseconds.
 */
#define REP_LAUNCH_GAP_NS 1000000       /* 1 ms */

struct rep_late {
	uint32_t site, device, stream;
	uint8_t long_gap;       /* its gaps are each over REP_LONG_GAP_NS */
	uint64_t count, idle_ns;
	uint64_t cause_ns[REP_NCAUSES];
};

/* One finding: a problem, its cost and where to change it (report_findings.c). */
enum rep_finding_kind {
	RF_SYNC,                /* a blocking sync that drained the GPU: hot[index] */
	RF_COMM,                /* communication with no compute beside it: comm[index] */
	RF_HOST_BOUND,          /* the host launched late: late[] entries of site */
	RF_LAUNCH_BOUND,        /* a stream of kernels shorter than their launches: streams[index] */
	RF_WASTED,              /* GPU work every step after the optimizer step or outside any
				   phase: iter.phases[index] */
	RF_REPEATED,            /* a kernel run again in a step on the same arguments:
				   repeats[index] */
};

struct rep_finding {
	uint32_t kind;          /* enum rep_finding_kind */
	uint32_t site;          /* the Python line to change, 0 unknown */
	uint32_t index;         /* into the list named by kind */
	uint64_t cost_ns;       /* GPU idle time it caused */
	uint64_t count;         /* the calls, gaps or kernels it covers */
};

struct rep_top {
	uint32_t name;
	uint64_t count, total_ns, max_ns;
	double share;           /* kernels: of the process's summed kernel time */
};

/* Failed driver calls of one name with one error (CUDA_ERROR_NOT_READY is no failure). */
struct rep_err {
	uint32_t name;
	int32_t ret;
	uint64_t count;
};

/*
 * A thread of a process that made no driver call in the trace (a hang
 * from before the recording): its time, and its longest wait.
 */
struct rep_wait {
	uint32_t tid;
	uint32_t state;         /* enum model_state of its longest wait */
	uint32_t site;          /* table string id of the line it waited at, 0 unknown */
	int64_t span_ns, running_ns, wait_ns;   /* its states', running (or runnable), that wait */
};

/* A call the thread was still in when the recording stopped (a hung sync). */
struct rep_open {
	uint32_t name, tid;
	uint32_t site;          /* table string id of its line, 0 unknown */
	int64_t ts, dur;        /* dur: until the recording stopped */
};

/* One phase of the loop body: its line, and per step median, min, max. */
struct rep_phase {
	uint32_t site;          /* the loop frame at the line; 0: outside any phase */
	uint32_t name;          /* the frame under it (the function it calls), 0 none */
	uint64_t gpu_ns[3];     /* GPU work its launches started */
	uint64_t gpu_total_ns;  /* over all steps */
	uint64_t host_ns[3];    /* the launching thread's time, see report_phase.c */
	uint64_t launches[3];
};

/*
 * A kernel launched again within a step on the same grid, block, shared
 * memory and arguments (report_repeat.c), from one launch site: the
 * launches after the first in each step.
 */
struct rep_repeat {
	uint32_t kernel, site;  /* site 0 unknown */
	uint64_t steps;         /* steps it repeated in */
	uint64_t count, gpu_ns; /* the repeats, their GPU time */
};
/*
 * Backward work of one autograd node class made at one forward line
 * (report_autograd.c): the calls made while the engine ran such nodes,
 * and the GPU time of the work they launched.
 */
struct rep_node {
	uint32_t node;          /* the node's class ("MulBackward0") */
	uint32_t site;          /* innermost user frame of the stack that made it, 0 unknown */
	uint64_t calls, launches, gpu_ns;
};
struct rep_iter {
	bool found;
	bool from_stacks;
	uint32_t loop;          /* the loop frame (at one of its lines) steps were found from, 0 none */
	struct rep_phase *phases;       /* the anatomy: in loop-body order, outside any phase last */
	size_t nphases;
	uint32_t tid;           /* the launching thread */
	uint32_t anchor;        /* kernel name id that starts each step */
	const struct rt_event *anchor_call;     /* its launch: rt_site() is the steps' site */
	uint64_t steps;
	int64_t *starts;        /* steps + 1 anchor launch times: step k is
				   [starts[k], starts[k + 1]) */
	uint64_t kernels_per_step;
	double mean_ns, median_ns, min_ns, max_ns, stddev_ns;
};

struct rep_mem_dev {
	uint32_t device;
	uint64_t allocs, frees, peak_bytes, end_bytes;
	int64_t peak_ts;
	uint32_t peak_site, peak_call;  /* of the allocation that reached the peak */
	uint64_t peak_alloc_bytes;
};

struct rep_proc {
	uint32_t pid, name;
	struct rep_finding *findings;   /* costliest first */
	size_t nfindings;
	struct rep_device *devs;
	size_t ndevs;
	struct rep_hotspot *hot;
	size_t nhot;
	struct rep_stream *streams;
	size_t nstreams;
	struct rep_comm *comm;
	size_t ncomm;
	struct rep_late *late;
	size_t nlate;
	struct rep_top *kernels, *calls;
	size_t nkernels, ncalls;
	struct rep_err *errors; /* most frequent first */
	size_t nerrors;
	uint64_t nfailed;       /* failed calls, all names */
	struct rep_open *open;  /* in the order they began */
	size_t nopen;
	struct rep_wait *waits; /* no call or GPU work in the trace: each thread's */
	size_t nwaits;
	struct rep_iter iter;
	struct rep_repeat *repeats;     /* costliest first */
	size_t nrepeats;
	struct rep_node *nodes; /* most GPU time first */
	size_t nnodes;
	struct rep_mem_dev *mem;
	size_t nmem;
	uint64_t napi, ngpu, nsync;
};

struct report {
	struct rep_proc *procs;
	size_t nprocs;
	bool any_gpu, any_stacks;
};

int report_analyze(struct rt_table *t, struct report *r);
void report_release(struct report *r);

/* analyses, each filling its part of every rep_proc */
int report_iter(struct rt_table *t, struct report *r);         /* iter; first: it may set sites */
int report_gpu(const struct rt_table *t, struct report *r);   /* devs, hot, streams, comm, late */
int report_top(const struct rt_table *t, struct report *r);      /* kernels, calls, errors, open */
int report_repeats(const struct rt_table *t, struct report *r);  /* repeats, from iter */
int report_autograd(const struct rt_table *t, struct report *r); /* nodes */
int report_memory(const struct rt_table *t, struct report *r);   /* mem */
int report_hang(const struct rt_table *t, struct report *r);     /* waits */
int report_findings(const struct rt_table *t, struct report *r); /* findings, from the others */

struct mem_tracker;
/* Replay process proc's allocations and frees on device in time order
 * into mt (initialised here; release it): its CUPTI memory records on
 * that device if it has any, else its calls (device ignored), never
 * both.  0 or -ENOMEM. */
int report_mem_track(const struct rt_table *t, uint32_t proc, uint32_t device,
		     struct mem_tracker *mt);

/*
 * Attribute host-bound idle time [a, b), ended by a launch l, to the
 * state of l's thread over it: into d->causes and x->cause_ns.  0 or
 * -ENOMEM.
 */
int report_causes_add(const struct rt_table *t, struct rep_device *d, struct rep_late *x,
		      const struct rt_event *l, int64_t a, int64_t b);
/* d->causes costliest first. */
void report_causes_sort(struct rep_device *d);
/* "running", "runnable", "gil_wait", "lock_wait", "io", "sleep", "other". */
const char *report_cause_name(unsigned cause);

/* The kind of finding f as the JSON names it, and one line of its evidence. */
const char *report_finding_kind(const struct rep_finding *f);
void report_finding_detail(const struct rt_table *t, const struct rep_proc *rp,
			   const struct rep_finding *f, char *buf, size_t len);

/*
 * The training loop of thread tid (report_phase.c): a candidate loop
 * frame and the phases met so far.
 */
struct loop_stack;
struct rep_loop {
	struct loop_stack *w;   /* the thread's stacks, those under the candidate marked */
	size_t nw;
	bool all;               /* the frames searched: all but frozen ones (rt_stack.afirst),
				   once the user frames held no loop; else the user frames */
	uint32_t depth;         /* of the loop frame among those frames, outermost 0 */
	uint32_t frame;         /* the loop frame, at one of its lines; 0 none yet */
	uint32_t stack;         /* a stack under it (the frames above it) */
	struct rep_phase *phases;       /* site and name only */
	size_t nphases, cap;
	uint32_t *of;           /* per stack id: phase + 1, 0 not yet */
	size_t nof;
};
/* lp over the calls of thread tid of proc, no candidate yet: 0 or -ENOMEM. */
int report_loop_init(const struct rt_table *t, uint32_t proc, uint32_t tid, struct rep_loop *lp);
/* The next candidate, inwards from the last: 1 found, 0 none left, -ENOMEM. */
int report_loop_next(const struct rt_table *t, struct rep_loop *lp);
/* The phase of host call e: 0 outside any phase, k + 1 lp->phases[k]; UINT32_MAX no memory. */
uint32_t report_loop_phase(const struct rt_table *t, struct rep_loop *lp, const struct rt_event *e);
void report_loop_release(struct rep_loop *lp);
/*
 * Inside a loop that library code runs (lp->all: transformers' Trainer
 * under one line of user code) that line is every call's site, and says
 * nothing.  Each stack in the loop with no user frame under the loop frame
 * takes another site (rt_stack.site): its innermost frame in the package
 * that runs the loop (the Trainer's line that led to the call: past
 * bindings such as the simulated driver's), else its innermost frame (the
 * optimizer's line in torch, under accelerate's wrapper).  Stacks alike
 * in several processes are one table stack, and change alike.
 */
void report_loop_resite(struct rt_table *t, const struct rep_loop *lp);
/* it->phases from the nsteps steps of thread it->tid starting at st[0..nsteps]
 * (st[nsteps]: the end of the last); 0 or -ENOMEM. */
int report_anatomy(const struct rt_table *t, uint32_t proc, struct rep_loop *lp,
		   struct rep_iter *it, const int64_t *st, size_t nsteps, uint32_t anchor_phase);

/* output */
int report_text(const struct rt_table *t, const struct report *r, FILE *f);
int report_json(const struct rt_table *t, const struct report *r, FILE *f);
/* The memory picture of the process and device with the highest peak. */
int report_svg(const struct rt_table *t, const struct report *r, FILE *f);

/* helpers shared by the analyses */
struct hashmap;
/* c (initialised): (proc, correlation) -> index of the (last) host call holding it. */
int report_corr_build(struct hashmap *c, const struct rt_table *t);
/* The host call that launched GPU work e, through c, or NULL. */
const struct rt_event *report_launch_of(const struct hashmap *c, const struct rt_table *t,
					const struct rt_event *e);
uint64_t report_median_u64(uint64_t *v, size_t n);      /* sorts v */
/* Split "qualname (file:line)" into its parts; false if it is not one. */
bool report_split_frame(const char *frame, const char **qual, size_t *qlen,
			const char **site);

/*
 * Print the report of finished model m, the trace record wrote to path,
 * to f as text: what 'gpubpf report PATH' prints.  Returns 0 or -errno
 * (message on stderr).
 */
int report_print_model(const struct model *m, const char *path, FILE *f);
/* The same from the trace at path, read back as 'gpubpf report PATH' reads it. */
int report_print_file(const char *path, FILE *f);

#endif
