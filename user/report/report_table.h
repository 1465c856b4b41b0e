/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The report's table: each host call and GPU activity of a model as a
 * 48-byte row, strings interned in the table's own strtab, so that the
 * analyses (report.h) run on a compact view of the model.  It is filled
 * from model events, one at a time: from a trace file streamed through
 * trace_import (rt_load, the model is never held whole), or from the model
 * record has just built (report_print_model()).
 *
 *	struct rt_table t;
 *	rt_init(&t, path);
 *	for each finished event ev of model m: rt_add(&t, m, ev);
 *	rt_finish(&t, m);
 *	... the analyses ...
 *	rt_release(&t);
 */
#ifndef GPUBPF_REPORT_TABLE_H
#define GPUBPF_REPORT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

enum rt_kind { RT_API, RT_KERNEL, RT_NCCL, RT_MEMCPY, RT_MEMSET };

enum {
	RTF_SYNC = 1,           /* a blocking sync: stream/ctx/event sync, synchronous copy */
	RTF_LAUNCH = 2,         /* kernel or graph launch */
	RTF_FAILED = 4,         /* returned an error (ret != 0) */
	RTF_ATTRIBUTED = 8,     /* its stack is attributed: walked on the thread whose
				   wake this thread served (model/attrib.h) */
	RTF_UNFINISHED = 16,    /* still in the call when the recording stopped */
};

/*
 * A site (a table string id) taken from an attributed stack has this bit
 * set: it groups apart from the same line walked on the calling thread,
 * and outputs say "(attributed)".  rt_str() reads the string either way.
 */
#define RT_SITE_ATTRIBUTED (1U << 31)

/* One host call or GPU activity (48 bytes). */
struct rt_event {
	int64_t ts, dur;        /* ns */
	uint32_t name;          /* call name, or kernel name for GPU work */
	uint32_t aux;           /* launches: kernel name id; kernels: their launch's grid,
				   block, shared memory and arguments, hashed (0: the
				   arguments are not known) */
	uint32_t stack;         /* host calls: index + 1 into rt_table.stacks, 0 none */
	uint32_t corr;          /* correlation id, 0 none */
	uint32_t tid;           /* host: thread id; GPU: stream */
	uint32_t proc;          /* index into rt_table.procs */
	uint16_t device;        /* GPU work only */
	uint8_t kind;           /* enum rt_kind */
	uint8_t flags;          /* RTF_* */
	int32_t ret;            /* host calls: ret, 0 when not known */
};

/*
 * Device-memory calls and CUPTI memory records (EV_MEMORY, device and
 * managed memory only), kept apart (few).  A record takes the site
 * and call name of the host call with its correlation id.
 */
enum { RTM_ALLOC = 1, RTM_FREE = 2 };
struct rt_mem {
	int64_t ts;
	uint64_t key;           /* address, or VMM handle | RT_MEM_HANDLE */
	uint64_t bytes;
	uint32_t stack;         /* the call's (a record's: the call with its
				   correlation id): table stack id, 0 none */
	uint32_t name, proc;
	uint32_t corr;          /* records: correlation id, 0 none */
	uint16_t device;        /* records only */
	uint8_t op;
	uint8_t gpu;            /* a CUPTI memory record, not a call */
	uint8_t attributed;     /* the call's stack is attributed (RTF_ATTRIBUTED) */
};
#define RT_MEM_HANDLE (1ULL << 63)

/*
 * A Python stack, kept once however many calls share it: its site (the
 * innermost user frame; inside a loop that library code runs, with no
 * user frame under the loop, the innermost frame: report_loop_resite())
 * and its user frames, outermost first, in
 * rt_table.frames[first .. first + n) (a stack without any: all its frames
 * but frozen ones); all its frames but frozen ones in [afirst .. afirst +
 * an), for a loop that library code runs (report_phase.c).
 * rt_table.callees[k] is the frame that frames[k] was calling (library
 * code or not; past library frames that only pass the call on, such as
 * Module._call_impl and decorators' wrappers), 0 for the innermost frame
 * of the stack.
 */
struct rt_stack {
	uint32_t site;          /* "qualname (file:line)", 0 no frame */
	uint32_t first, n;
	uint32_t afirst, an;
};

/*
 * A host call made while PyTorch's autograd engine ran a node on its
 * thread (model_event.ag_node), kept apart: backward work only.
 */
struct rt_node {
	uint32_t proc;
	uint32_t corr;          /* its correlation id, 0 none */
	uint32_t node;          /* table string id of the node's class */
	uint32_t fwd;           /* table stack id of the Python stack that made the
				   node (its forward call), 0 unknown */
	bool launch;            /* a kernel or graph launch */
};

/* A thread state span (thread_state.h), for the host-bound causes. */
struct rt_state {
	int64_t ts, dur;        /* ns */
	uint32_t pid, tid;
	uint32_t state;         /* enum model_state */
	uint32_t stack;         /* a wait's: the table stack id it blocked in, 0 none */
};

/* A CPU sample: its thread and its stack. */
struct rt_sample {
	int64_t ts;
	uint32_t pid, tid;
	uint32_t stack;         /* table stack id (index + 1), 0 none */
	bool gc;                /* in the garbage collector (MODEL_SAMPLE_GC) */
};

struct rt_proc {
	uint32_t pid;
	uint32_t name;          /* strtab id */
};

struct rt_table {
	char *path;
	struct strtab strs;
	struct rt_event *ev;
	size_t nev, cap;
	struct rt_mem *mem;
	size_t nmem, capmem;
	struct rt_proc *procs;
	size_t nprocs;
	struct rt_stack *stacks;
	size_t nstk, capstk;
	uint32_t *frames, *callees;     /* table string ids, see rt_stack */
	size_t nframes, capframes, capcallees;
	uint64_t nstacks;       /* host calls with a Python stack */
	struct rt_node *nodes;  /* in the order added */
	size_t nnodes, capnodes;
	struct hashmap served;  /* proc << 32 | tid of a thread with attributed stacks ->
				   the thread its (last) one was walked on: see rt_served() */
	struct rt_state *states;        /* both by (pid, tid, ts) */
	size_t nstates;
	struct rt_sample *samples;
	size_t nsamples;
	uint64_t dropped;       /* the model's dropped_total */
	uint32_t *missed;       /* processes whose calls may be missing: pid, strtab id
				   of why; pairs */
	size_t nmissed;
	int64_t t_first, t_last;
	/* while filled: per model string and stack, what rt_add made of it */
	uint32_t *ids;          /* model string id -> table string id + 1, 0 not yet */
	size_t nids;
	uint8_t *cls;           /* per table string id: NC_* */
	size_t ncls;
	uint32_t *stkmap;       /* model stack index -> table stack index + 1, 0 not yet */
	size_t nstkmap;
	uint32_t last_proc;     /* the process of the last row */
	bool seeded;            /* named processes added, in the model's order */
	bool nomem;             /* a string could not be added */
};

/* An empty table of the trace at path (as the report names it). */
void rt_init(struct rt_table *t, const char *path);
/*
 * Add one event of model m (its strings, stacks and processes): host
 * calls, GPU work and device memory records become rows, the rest is
 * skipped.  Events come in time order, with their stack set as
 * model_finish() sets it.  0 or -ENOMEM.
 */
int rt_add(struct rt_table *t, const struct model *m, const struct model_event *ev);
/*
 * After the last event: processes, drops and missing calls, thread states
 * and samples from m (its states finished: model_states_finish()); 0 or
 * -ENOMEM.
 */
int rt_finish(struct rt_table *t, const struct model *m);
/*
 * The table of the trace file at path, streamed through trace_import; 0,
 * or -errno with "PATH: problem" in err.
 */
int rt_load(struct rt_table *t, const char *path, char *err, size_t errlen);
void rt_release(struct rt_table *t);
static inline const char *rt_str(const struct rt_table *t, uint32_t id)
{
	return strtab_get(&t->strs, id & ~RT_SITE_ATTRIBUTED);
}

/* The site of table stack id stack (rt_stack), 0 none; RT_SITE_ATTRIBUTED set when
 * attributed. */
static inline uint32_t rt_stack_site(const struct rt_table *t, uint32_t stack, bool attributed)
{
	uint32_t site = stack ? t->stacks[stack - 1].site : 0;

	return site && attributed ? site | RT_SITE_ATTRIBUTED : site;
}

/* The site of host call e (rt_stack_site()), 0 unknown. */
static inline uint32_t rt_site(const struct rt_table *t, const struct rt_event *e)
{
	return rt_stack_site(t, e->stack, e->flags & RTF_ATTRIBUTED);
}

static inline bool rt_site_attributed(uint32_t site)
{
	return site & RT_SITE_ATTRIBUTED;
}

/*
 * The thread host call e was made for: its own, or for a call with an
 * attributed stack, the thread that stack was walked on (the one its
 * thread serves; a worker serving several takes the last one's).
 */
static inline uint32_t rt_served(const struct rt_table *t, const struct rt_event *e)
{
	const struct hashmap_slot *s;

	if (!(e->flags & RTF_ATTRIBUTED) ||
	    !(s = hashmap_find(&t->served, (uint64_t)e->proc << 32 | e->tid)))
		return e->tid;
	return s->val;
}

/* Is the frame "qualname (file:line)" library code (site/dist-packages,
 * the standard library, <frozen ...>)? */
bool rt_frame_is_library(const char *frame, size_t len);
/* The package of library frame f: the first name in its file's path under
 * site-packages, dist-packages or the standard library ("transformers",
 * "torch", "asyncio", "threading.py"), *n bytes; NULL for user code and
 * <frozen ...>. */
const char *rt_frame_package(const char *frame, size_t len, size_t *n);

#endif
