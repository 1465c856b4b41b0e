/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The event model: what the collector builds and the exporters read.
 * Events are kept in one array, sorted by start time by model_finish();
 * strings (names, kernel names, thread names) are interned once and
 * referred to by id.  Exporters must treat the model as read-only.
 */
#ifndef GPUBPF_MODEL_H
#define GPUBPF_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "lib/hashmap.h"
#include "model/thread_state.h"
#include "model/attrib.h"

#define GB_SCOPE_MAX 256        /* Python frames followed as scopes */

/* Interned strings: id 0 is the empty string. */
struct strtab {
	char **strs;
	size_t n, cap;
	struct hashmap index;     /* hash of a string -> its id */
};

void strtab_init(struct strtab *t);
void strtab_release(struct strtab *t);
/* Return the id of s, adding it if new; 0 on allocation failure. */
uint32_t strtab_intern(struct strtab *t, const char *s);
const char *strtab_get(const struct strtab *t, uint32_t id);

/* Fields present in a model_event (bitmask in ev->fields). */
enum {
	MF_GRID = 1 << 0,       /* grid[3] */
	MF_BLOCK = 1 << 1,      /* block[3] */
	MF_SHMEM = 1 << 2,      /* shared_mem */
	MF_STREAM = 1 << 3,     /* stream */
	MF_FUNC = 1 << 4,       /* func (kernel handle), kernel name id if known */
	MF_BYTES = 1 << 5,      /* bytes */
	MF_KIND = 1 << 6,       /* copy_kind (enum cuda_copy_kind) */
	MF_PTR = 1 << 7,        /* ptr: allocated/freed/copied-to address */
	MF_RET = 1 << 8,        /* ret */
	MF_COUNT = 1 << 9,      /* count: batch entries */
	MF_HANDLE = 1 << 10,    /* handle: event, graph, graph exec, module */
	MF_UNFINISHED = 1 << 11, /* in the call when the recording stopped: dur
				   runs to then, and it has no return */
};

/* What an event is. */
enum model_kind {
	EV_API = 0,             /* a host-side driver call */
	EV_KERNEL,              /* GPU work, from the injection library: */
	EV_MEMCPY,
	EV_MEMSET,
	EV_GPU_SYNC,
	EV_MEMORY,              /* an allocation or release seen by the GPU side */
	EV_SCOPE,               /* a Python function active across calls (model_finish) */
};

#define MODEL_NO_LINK UINT32_MAX

struct model_event {
	uint64_t ts;            /* start, ns, CLOCK_MONOTONIC */
	uint64_t dur;           /* ns; 0 when the return was not probed */
	uint32_t pid, tid;
	uint32_t name;          /* strtab id of the entry point's symbol */
	uint16_t call_id;       /* index in the call table (cuda_calls.h) */
	uint8_t family;         /* enum cuda_family */
	uint8_t copy_kind;      /* enum cuda_copy_kind; EV_MEMORY: CUpti_ActivityMemoryKind */
	uint32_t fields;        /* MF_* */
	int32_t ret;
	uint32_t kernel;        /* strtab id of the kernel name, 0 unknown */
	uint32_t grid[3], block[3];
	uint32_t shared_mem;
	uint32_t count;
	uint32_t args;          /* EV_KERNEL: hash of its launch's arguments, 0 unknown */
	uint64_t func, stream, bytes, ptr, handle; /* EV_KERNEL without a kernel name
						     yet: func is its GPU name's handle */
	uint64_t seq;           /* arrival order: the tie-break that keeps sorting stable */
	/* GPU side (kind != EV_API); API events use correlation only */
	uint8_t kind;           /* enum model_kind */
	uint8_t gpu_kind;       /* copies: enum ga_copy_kind; syncs: ga_sync_kind; memory: op */
	uint32_t correlation;   /* CUPTI correlation id, 0 if none */
	uint32_t device, gpu_stream;
	union {
		struct {        /* EV_KERNEL */
			uint32_t registers, static_shmem;
		};
		struct {        /* EV_API: the PyTorch autograd node its thread ran
				   then (record/autograd_nodes.h) */
			uint32_t ag_node;       /* strtab id of the node's class, 0 none */
			uint32_t ag_fwd;        /* index + 1 in m->stacks of the Python
						   stack that made the node, 0 unknown */
		};
	};
	uint64_t graph_node;
	uint32_t link;          /* after model_finish: GPU event -> index of the
				   API event that caused it, else MODEL_NO_LINK */
	uint32_t flow_k;        /* after model_finish, with flow: a call's number of
				   GPU records linked to it, a record's rank among
				   them (0, 1, ...) */
	uint64_t pystack;       /* API: id of the thread's Python stack, 0 none */
	uint64_t nstack;        /* API: id of its native stack, 0 none */
	uint32_t native;        /* after model_finish: API: index + 1 of its native
				   stack in m->stacks, 0 none */
	uint32_t stack;         /* after model_finish: API: index + 1 of its stack in
				   m->stacks, 0 none; EV_SCOPE: the frame's string id */
	uint32_t stack_tid;     /* API: stack is attributed, not walked: the thread it
				   was walked on, whose wake this thread served
				   (attrib.h); 0: walked on this thread, or none */
	uint16_t depth;         /* EV_SCOPE: depth from the outermost frame */
	uint8_t kept;           /* taking a part: an entry-only call kept for the next
				   (model_part.h), so that a later announcement is not
				   taken for its own */
	uint64_t flow;          /* after model_finish: the id of the arrows from a
				   call that caused GPU work to that work (on both),
				   unique in the trace; 0 none */
};

/*
 * A Python stack, innermost frame first: frames[i] are strtab ids of
 * "qualname (file:line)", funcs[i] of "qualname (file)" (the frame's
 * function, for scopes).
 */
struct model_stack {
	uint32_t pid;
	uint32_t n;
	uint32_t first;         /* index of its first frame in m->frames / m->funcs */
	uint32_t truncated;     /* deeper than the walk */
	uint64_t id;            /* as sent by the BPF walker */
	uint32_t native;        /* a native stack: frames are "symbol+0xoff (file)",
				   funcs the same; never scopes */
};

/*
 * A correlation id announced on a thread during a driver call, or (failed)
 * the error that call returned, announced as it returned.
 */
struct model_corr {
	uint64_t ts;
	uint32_t pid, tid;
	uint32_t correlation;
	int32_t result;         /* failed: the CUresult */
	uint8_t failed;
	uint8_t kept;           /* taking a part: it names a call kept for the next */
};

struct model_thread {
	uint32_t pid, tid;
	uint32_t name;          /* strtab id */
	uint32_t open_state;    /* index + 1 of its open span in m->states, 0 none */
};

/*
 * A process given a pid that an earlier process of the same recording had
 * (the kernel hands pids out again after pid_max more, 32768 on small
 * machines) is another process: the n-th such is kept, and written, as
 * pid + n * MODEL_PID_AGAIN, above every real pid (at most 2^22), and
 * named "comm (pid P #n+1)".  Its GPU work links only to its own calls
 * (correlation ids restart at 1 in each process), its threads, memory and
 * kernel names are its own.  Stacks come under the pid (sent once per
 * pid and id, with their content in the id): a process's stack is found
 * under its pid when not under its key.
 */
#define MODEL_PID_AGAIN (1u << 22)

static inline uint32_t model_real_pid(uint32_t pid)
{
	return pid & (MODEL_PID_AGAIN - 1);
}

/* Which process of its real pid: 1 for the first, the n in "#n" */
static inline uint32_t model_pid_nth(uint32_t pid)
{
	return pid / MODEL_PID_AGAIN + 1;
}

struct model_process {
	uint32_t pid;
	uint32_t name;          /* strtab id */
	uint64_t dropped;       /* events lost for this process */
	uint64_t gpu_dropped;   /* GPU records the injection library or CUPTI lost */
	uint32_t gpu_error;     /* strtab id: why GPU timing went off, 0 if it did not */
	uint64_t gpu_window_ns; /* GPU collection started (GA_WINDOW); 0: unknown */
	uint32_t first_corr;    /* the lowest correlation id of its calls here; 0: none yet */
	/* late attach (record -p without CUDA_INJECTION64_PATH) */
	uint64_t inject_stall_ns;  /* the borrowed thread's stop; 0: not injected */
	uint32_t inject_tid;    /* the thread borrowed */
	uint32_t missed;        /* strtab id: why some of its calls may be missing, 0 none */
};

/* (pid, handle) -> kernel name, from lookup calls. */
struct model_kname {
	uint32_t pid;
	uint32_t name;
	uint64_t handle;
};

struct model {
	struct strtab strs;
	struct model_event *ev;
	size_t nev, cap_ev;
	struct model_thread *threads;
	size_t nthreads, cap_threads;
	struct hashmap thread_index; /* pid << 32 | tid -> index into threads */
	struct model_process *procs;
	size_t nprocs, cap_procs;
	struct model_kname *knames;
	size_t nknames, cap_knames;
	struct hashmap kname_index;  /* hash of (pid, handle) -> index into knames */
	struct model_corr *corrs;
	size_t ncorrs, cap_corrs;
	struct model_stack *stacks;
	size_t nstacks, cap_stacks;
	uint32_t *frames, *funcs;
	size_t nframes, cap_frames, cap_funcs;
	struct hashmap stack_index;  /* hash of (pid, id, native) -> index into stacks */
	struct model_state_span *states; /* thread states: see thread_state.h */
	size_t nstates, cap_states;
	struct model_sample *samples;
	size_t nsamples, cap_samples;
	struct model_wake *wakes;    /* see attrib.h */
	size_t nwakes, cap_wakes;
	/* trace-level metadata */
	int64_t realtime_offset_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	uint64_t ts_base_ns;         /* from model_finish: the second at or before the
					first instant; exporters write times after it */
	char host[256];
	uint64_t dropped_total;      /* all lost events, per-process or not */
	/* clock sanity, from model_finish: GPU work that starts before its call */
	uint64_t skewed;             /* such GPU events */
	uint64_t max_skew_ns;        /* the largest such lead */
	/* ... after the repair of a drifting GPU clock (gpu_clock.h), which
	   moved these GPU events later, by up to this */
	uint64_t clock_repaired;
	uint64_t max_clock_repair_ns;
	/* finished in parts (model_part.h): what waits for the next part, and
	   the arrow ids the earlier parts used (the next part's start after) */
	struct model_carry *carry;
	uint64_t flow_base;
	/* a trace read back (trace_import.h): its calls carry their correlations
	   and attributions, and its states are those of processes with events */
	bool read_back;
};

void model_init(struct model *m);
void model_release(struct model *m);

/*
 * Append an event; returns a pointer to fill or NULL on allocation failure
 * (the pointer is valid until the next call).
 */
struct model_event *model_add_event(struct model *m);
/* Find or add; the name is set (or replaced when non-empty). */
struct model_process *model_process(struct model *m, uint32_t pid, const char *name);
struct model_thread *model_thread(struct model *m, uint32_t pid, uint32_t tid, const char *name);
/* The pids of m's events (calls or GPU work) into pids (initialised); 0 or -ENOMEM. */
int model_event_pids(const struct model *m, struct hashmap *pids);
/* The process, NULL if none was added. */
const struct model_process *model_find_process(const struct model *m, uint32_t pid);
/* The thread, NULL if none was added. */
const struct model_thread *model_find_thread(const struct model *m, uint32_t pid, uint32_t tid);
int model_set_kernel_name(struct model *m, uint32_t pid, uint64_t handle, const char *name);
/* Kernel name id for (pid, handle), 0 if none is known. */
uint32_t model_kernel_name(const struct model *m, uint32_t pid, uint64_t handle);

/*
 * Add a Python stack of process pid under its id: n frames, innermost
 * first, as strtab ids of "qualname (file:line)" (frames) and of the
 * function alone, "qualname (file)" (funcs).  A second stack under the
 * same (pid, id) is ignored.  0 or -ENOMEM.
 */
int model_add_stack(struct model *m, uint32_t pid, uint64_t id, int truncated, uint32_t n,
		    const uint32_t *frames, const uint32_t *funcs);
/* The stack of (pid, id), NULL if none was added. */
const struct model_stack *model_find_stack(const struct model *m, uint32_t pid, uint64_t id);
/*
 * The same for native stacks, whose ids are their own: n frames, innermost
 * first, strtab ids of "symbol+0xoff (file)".  0 or -ENOMEM.
 */
int model_add_native_stack(struct model *m, uint32_t pid, uint64_t id, uint32_t n,
			   const uint32_t *frames);
const struct model_stack *model_find_native_stack(const struct model *m, uint32_t pid,
						  uint64_t id);

/* Record a correlation announcement; 0 or -ENOMEM. */
int model_add_corr(struct model *m, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t correlation);
/*
 * Record that the driver call thread tid was making at ts failed with
 * result: model_finish() gives that call its ret.  0 or -ENOMEM.
 */
int model_add_call_error(struct model *m, uint64_t ts, uint32_t pid, uint32_t tid, int32_t result);

/*
 * Kernel names of GPU records live in the same (pid, handle) table as the
 * lookups' names, under handles with this bit set (no user-space address
 * has it): the injection library's name id n is MODEL_GPU_NAME | n.
 */
#define MODEL_GPU_NAME (1ULL << 63)

/*
 * Call once, after the last event is added:
 *  - sort events by (ts, pid, tid), stably;
 *  - give each API event the correlation id announced on its thread during
 *    it, and link each GPU event to the API event with its (pid,
 *    correlation);
 *  - name kernels: API events by their function handle, under the name
 *    of the GPU kernel a launch of that handle ran if any (complete, where
 *    a lookup's may be cut), else the lookup's;
 *  - move GPU work of a process and device whose clock drifted before
 *    the calls that caused it back after them (gpu_clock.h:
 *    clock_repaired, max_clock_repair_ns), and count GPU events that
 *    still start before their call (skewed, max_skew_ns);
 *  - give API events their Python stack, and those of threads that run no
 *    Python the stack of the wake they served (model_attribute()); add
 *    EV_SCOPE events (walked stacks only): each
 *    Python function on a thread's stacks spans, as one event, the calls
 *    made while it stayed on the stack (from the first call's start to the
 *    last one's end), so Model.forward or Optimizer.step show as blocks
 *    around the calls made inside them;
 *  - give each call that caused GPU work, and that work, their arrow id
 *    (flow): the call's index + 1, after flow_base;
 *  - sort thread states and samples (model_states_finish());
 *  - set ts_base_ns.
 * A model finished in parts (model_part.h) is finished here as its last
 * part: every scope and thread state still open is closed.
 */
int model_finish(struct model *m);

#endif
