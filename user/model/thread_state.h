/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Thread states and CPU samples in the model: what each traced thread was
 * doing over the recording (running, waiting for a CPU, for the GIL, a
 * lock, I/O, a sleep...), and where its CPU time went (sampled stacks).
 *
 * Per thread, states tile time: from the thread's first record to its exit
 * or the end of the recording, each instant is in exactly one span.  After
 * model_finish(), m->states is sorted by (pid, tid, ts): each thread's
 * spans are consecutive and in time order; m->samples by ts.
 */
#ifndef GPUBPF_THREAD_STATE_H
#define GPUBPF_THREAD_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct model;

enum model_state {
	MS_RUNNING = 0,         /* on a CPU */
	MS_RUNNABLE,            /* preempted or woken: waiting for a CPU */
	MS_GIL_WAIT,            /* blocked on the interpreter's GIL (holder) */
	MS_LOCK_WAIT,           /* blocked on another futex: a lock, a condition */
	MS_IO,                  /* blocked reading, writing, polling */
	MS_SLEEP,               /* in nanosleep, clock_nanosleep, pause... */
	MS_OTHER_WAIT,          /* blocked elsewhere: a page fault, other syscalls */
	MS_COUNT
};

struct model_state_span {
	uint64_t ts, dur;       /* ns, CLOCK_MONOTONIC; dur 0 while open */
	uint32_t pid, tid;
	uint8_t state;          /* enum model_state */
	int16_t syscall;        /* the syscall it blocked in, -1 none */
	uint32_t holder;        /* MS_GIL_WAIT: the GIL holder's tid, 0 unknown */
	uint32_t stack;         /* after model_finish: a wait's Python stack (index + 1
				   in m->stacks), where it blocked; 0 none */
	uint64_t pystack;       /* that stack's id as the walker sent it, 0 none */
};

struct model_sample {
	uint64_t ts;
	uint32_t pid, tid;
	uint32_t cpu;
	uint32_t stack;         /* after model_finish: index + 1 of its Python stack
				   in m->stacks, 0 none */
	uint64_t pystack;       /* the stack's id as the walker sent it, 0 none */
	uint64_t nstack;        /* its native stack's id, 0 none */
	uint32_t native;        /* after model_finish: index + 1 of its native stack */
	uint32_t flags;         /* MODEL_SAMPLE_* */
};

#define MODEL_SAMPLE_GC 1       /* the thread was running the garbage collector */

/* "running", "runnable", "gil_wait", "lock_wait", "io", "sleep", "other_wait". */
const char *model_state_name(unsigned state);
/* The state a thread blocked in syscall nr is in (-1: none). */
enum model_state model_state_of_syscall(long nr);
/* The syscall's name ("read", "futex"...), NULL for those not known. */
const char *model_syscall_name(long nr);
/* A span's name in a trace: "Running", "GIL wait (held by 12)", "read"... */
void model_state_label(const struct model_state_span *s, char *buf, size_t len);
/* The number of the syscall named name, -1 for those not known. */
int model_syscall_nr(const char *name);
/* The state named name (model_state_name()), MS_COUNT if none. */
enum model_state model_state_of_name(const char *name);

/*
 * Thread tid of pid entered state at ts (blocked in syscall, holding for
 * holder): end its open span there and open one for the new state.
 * Records of one thread come in time order; a record earlier than the
 * open span's start is taken at that start.  0 or -ENOMEM.
 */
int model_thread_state(struct model *m, uint32_t pid, uint32_t tid, uint64_t ts,
		       enum model_state state, int syscall, uint32_t holder);
/* The Python stack (walker's id) the thread's open span, a wait, began in. */
void model_state_stack(struct model *m, uint32_t pid, uint32_t tid, uint64_t pystack);
/* The thread is woken at ts: runnable, unless it has not left its CPU yet. */
int model_thread_woken(struct model *m, uint32_t pid, uint32_t tid, uint64_t ts);
/* The thread exits at ts: end its open span and open none. */
int model_thread_exit(struct model *m, uint32_t pid, uint32_t tid, uint64_t ts);
/* End every open span at ts (the end of the recording). */
void model_states_end(struct model *m, uint64_t ts);

/* Add a span already ended (a trace read back), and its thread; 0 or -ENOMEM. */
int model_add_state(struct model *m, const struct model_state_span *span);

/* Add sample s (its stack and native left for model_finish()); 0 or -ENOMEM. */
int model_add_sample(struct model *m, const struct model_sample *s);
/*
 * What a sample is named by (after model_finish): the function of its
 * innermost frame, Python's, else native ("spin_inner" of "spin_inner+0x1d
 * (prog)"), else "sample".  *name is set to its first character; returns
 * its length.
 */
size_t model_sample_name(const struct model *m, const struct model_sample *s, const char **name);

/* The first instant of a state or a sample, UINT64_MAX if none. */
uint64_t model_states_first(const struct model *m);
/*
 * The indexes of m->states by start time (then the GIL waits after the
 * others, then model order), for writers that merge them with the other
 * events; *order NULL when there are none.
 * 0 or -ENOMEM; the caller frees *order.
 */
int model_states_by_time(const struct model *m, size_t **order);
/*
 * The thread each GIL wait waited for, at that instant: for each span of
 * m->states (after model_finish()), 1 + the index of the span its GIL
 * holder was in as the wait began, 0 if none (not a GIL wait, the holder
 * unknown or with no span then, or itself in a GIL wait).  Spans that
 * begin together are ordered by model_states_by_time() with the GIL waits
 * last, so a holder's span always comes before the waits linked to it.
 * 0 or -ENOMEM; *links NULL when there are no states; the caller frees it.
 */
int model_gil_links(const struct model *m, size_t **links);
/*
 * Keep the states and samples of the processes in pids only (open spans
 * end where they began): record keeps those of processes with events, as
 * the shells and helpers a traced command runs first (a pyenv shim,
 * readlink...) are no part of the job.
 */
struct hashmap;
void model_states_keep(struct model *m, const struct hashmap *pids);
/* Sort spans by (pid, tid, ts), as model_finish() leaves m->states. */
void model_spans_sort(struct model_state_span *spans, size_t n);
void model_states_sort(struct model *m);
/*
 * From model_finish(): end the spans still open (last: not for a part
 * before the last, see model_part.h); sort; give spans and samples their
 * stacks.  0 or -ENOMEM.
 */
int model_states_finish(struct model *m, bool last);
void model_states_release(struct model *m);

#endif
