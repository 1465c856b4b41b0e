/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One recording's state, shared by the files of gpubpf record:
 *
 *	cmd_record.c   the command: options -> start -> loop -> finish
 *	record_opts.c  the command line
 *	targets.c      which processes are traced, their libcuda and GPU timing
 *	pystacks.c     which processes get Python stacks, and when to look;
 *	               PyTorch's autograd nodes for them
 *	spawn.c        -- CMD, started held
 *	keeper.c       the processes held, continued should gpubpf be killed
 *	record_loop.c  taking the ring buffer's records until told to stop
 *	ring_reader.c  reading the ring buffer, on a thread of its own
 *	summary.c      the lines printed once the trace is written
 *
 * The options are read only; everything else here changes as processes
 * come and go.
 */
#ifndef GPUBPF_RECORD_H
#define GPUBPF_RECORD_H

#include <limits.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include "gpubpf.h"
#include "lib/hashmap.h"
#include "model/model.h"
#include "record/collector.h"
#include "record/inject.h"
#include "record/probes.h"
#include "record/record_opts.h"
#include "record/ring_reader.h"
#include "record/spawn.h"

/* A -p process. */
struct target {
	pid_t pid;
	int seen_libcuda;       /* libcuda was mapped at some point */
	int markers;            /* the injection library's markers are attached */
	int gone;               /* exit reported */
};

/* A process the injection library was loaded into late (ptrace). */
struct late {
	pid_t pid;
	int ret;
	struct inject_stats st;
	int remote_exec;        /* loaded by CPython's remote execution, not ptrace */
	char why[512];
};

/* A process whose Python was looked for. */
struct py_try {
	pid_t pid;
	int done;
	int found;              /* its Python was found, its stacks walked */
	int autograd;           /* its libtorch was looked for */
	int frees_pending;      /* its code frees cannot be counted yet: looked at again */
	int exit_pending;       /* its libc is not mapped yet: its _exit held at a later look */
	struct gb_py_config cfg; /* its layout, once found */
	uint64_t first;
	uint64_t last;          /* when it was last looked for (CLOCK_MONOTONIC) */
	uint64_t found_ns;      /* when its Python was found: its calls before, unwalked */
	uint64_t unwalked;      /* calls without a stack while its Python was not found */
};

struct record {
	const struct record_opts *o;
	struct target *targets; /* -p: one per pid */
	int ntargets;
	const char *outputs[RECORD_MAX_OUTPUTS];  /* the options', or a made-up name */
	int noutputs;
	char outbuf[PATH_MAX];
	char libcuda_buf[PATH_MAX];     /* the discovered libcuda */
	struct late *late;
	size_t nlate;
	int nmarkers;           /* marker attachments made */
	struct hashmap joined;  /* model pids whose injection library was told we joined */
	pid_t keeper;           /* keeper.h; <= 0: none */
	struct py_try *py;
	size_t npy;
	size_t py_hint;         /* pystacks_unwalked()'s last entry */
	int waiting;            /* a -p target has not loaded libcuda yet */
	int holding;            /* new libcuda mappings are held until probed */
	int collecting;         /* setup is over: a libcuda probed now is late */
	uint64_t collecting_since; /* when it was over */
	uint64_t alive_ns;      /* atomic: the collector's last sign of life (record_alive()) */
	int nlibs;              /* libcuda files probed */
	pid_t last_pid;         /* of the latest call record */
	uint64_t ended;         /* when the loop stopped reading: calls in flight end there */
	uint64_t py_late_calls; /* calls of Python processes made before their Python was found */
	int py_late_procs;      /* and the processes that made them */
	struct spawn child;     /* -- CMD */
	struct probes probes;
	struct ring_reader reader;
	struct model model;
	struct collector coll;
	/* bounded memory (parts.c): each output written in parts */
	struct export_parts *parts[RECORD_MAX_OUTPUTS];
	int in_parts;
	int parts_failed;
	uint64_t spill_at;              /* event bytes past which a part is taken */
};

static inline uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* --- parts.c ------------------------------------------------------------ */

/*
 * Past r->spill_at bytes of events in the model (--memory at first), write
 * the older ones out (model_part.h): those before the last PARTS_LAG_NS,
 * or the older half when that is not enough.  Returns 0, or -errno with
 * the reason said (the recording stops).
 */
int record_parts_spill(struct record *r, uint64_t now);
/*
 * Write the trace of a recording written in parts: the last part, then
 * each output whole from its parts.  0 or -errno (said).
 */
int record_parts_write(struct record *r);
/* The trace the closing report reads, NULL when not in parts. */
const char *record_parts_trace(const struct record *r);
void record_parts_release(struct record *r);

/* --- targets.c ---------------------------------------------------------- */

/* -p: the targets, from the options.  0 or -ENOMEM. */
int targets_init(struct record *r);

/*
 * Whether new libcuda mappings must be held: -- CMD and -a always; -p
 * while a target has no libcuda yet.
 */
int targets_need_hold(struct record *r);

/*
 * -p: probe each target's libcuda (or the one it will load).  0 or -errno,
 * said on stderr.
 */
int targets_setup_pids(struct record *r);

/* -a, -- CMD: probe libcuda for all processes.  0 or -errno, said. */
int targets_setup_global(struct record *r);

/* A libcuda mapping reported by the probes (held or not): probe it. */
void targets_on_map(struct record *r, const struct gb_map *m);

/*
 * Look again for libcuda, exits, the injection library.  The number of
 * -p targets alive (-a, -- CMD: 1).
 */
int targets_scan(struct record *r);

/* -p: 0, or -ENOENT (said) if no target ever loaded libcuda. */
int targets_check_seen(struct record *r);

/*
 * -- CMD, once the command exited: say which processes it started still
 * run with libcuda mapped (their calls from now on are not recorded).
 */
void targets_say_left_running(struct record *r);

/* 1 if late attach already said why pid gets no GPU timing. */
int targets_late_failed(struct record *r, pid_t pid);

/*
 * Some calls of pid may be missing: say why, once, in the trace metadata
 * and at the end of the recording.
 */
void targets_mark_missed(struct record *r, pid_t pid, const char *why);
/* The same for the model's process key (collector_pid(), collector_pid_at_end()). */
void targets_mark_process_missed(struct record *r, uint32_t key, const char *why);

/* --- pystacks.c --------------------------------------------------------- */

/*
 * Look for pid's Python; 1 when pid is settled (found, refused, or given
 * up on), 0 to try again later.
 */
int pystacks_try(struct record *r, pid_t pid);

/* 1 if pid's Python was looked for already. */
int pystacks_tried(struct record *r, pid_t pid);
/*
 * A call of pid's at ts (CLOCK_MONOTONIC) has no Python stack: counted
 * where it was made before pid's Python was found (py_late_calls).
 */
void pystacks_unwalked(struct record *r, pid_t pid, uint64_t ts);
/* A process whose stacks are walked forked (struct gb_fork): its child is walked too. */
void pystacks_forked(struct record *r, const struct gb_fork *f);
/* pid runs a new program since ts (GB_REC_EXEC): look for its interpreter anew. */
void pystacks_exec(struct record *r, pid_t pid, uint64_t ts);
/* Process pid ended: a later process of that pid is looked for anew. */
void pystacks_ended(struct record *r, pid_t pid);
/*
 * A process whose stacks are walked begins to end (GB_REC_END): every
 * record before is read, its stacks named: let it go on if it is held.
 */
void pystacks_end(struct record *r, const struct gb_end *e);

/*
 * With --autograd, pid maps libcuda now: probe PyTorch's autograd engine
 * in the libtorch it maps (a PyTorch job loads libtorch before libcuda),
 * once per process, for pid (-p) or for all; said on stderr when it fails.
 */
void pystacks_autograd(struct record *r, pid_t pid);

/* --- record_loop.c ------------------------------------------------------ */

/* The ring buffer and the signals that stop the loop.  0 or -errno. */
int record_loop_init(struct record *r);

/*
 * Read records until a signal, the duration, or the end of the targets;
 * then count what was lost.
 */
void record_loop(struct record *r);

/*
 * Read records until the injection library of each -p target, and of each
 * process it was loaded into late, has opened its GPU window (or said why
 * not), at most a second.
 */
void record_wait_windows(struct record *r);

/* Continue every held process, stop holding new ones. */
void record_unhold(struct record *r);

/* Stop signals received (a second one does not wait for -- CMD). */
int record_nsignals(void);

/* --- summary.c ---------------------------------------------------------- */

/* What the recording saw, lost and missed, and the files' sizes, on stderr. */
void record_summary(struct record *r);

/* More JSON than a browser opens (ui.perfetto.dev, chrome://tracing). */
#define RECORD_JSON_BROWSER_MAX 1000000000ULL

/* A file's size in decimal units: "512 B", "12.3 MB", "3.4 GB". */
void record_size_text(uint64_t bytes, char *buf, size_t size);
/*
 * The line saying how to open the trace at path, bytes long, when it is
 * plain JSON past RECORD_JSON_BROWSER_MAX; "" when it opens as it is.
 */
void record_open_hint(const char *path, uint64_t bytes, char *buf, size_t size);

#endif
