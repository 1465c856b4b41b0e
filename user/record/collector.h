/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector: decodes ring-buffer records (bpf/gpubpf.h) into the
 * model, naming processes and threads as they first appear.
 */
#ifndef GPUBPF_COLLECTOR_H
#define GPUBPF_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>
#include "gpubpf.h"
#include "lib/hashmap.h"
#include "model/model.h"
#include "record/autograd_nodes.h"

struct pysym;
struct nsym;

/* A process whose Python stacks are walked, and its interpreter's layout. */
struct collector_py {
	uint32_t pid;
	struct gb_py_config cfg;
};

struct collector {
	struct model *m;
	uint64_t records;       /* records decoded */
	uint64_t calls;         /* of which driver calls */
	uint64_t gpu_records;   /* GPU activity records (kernels, copies...) */
	uint64_t gpu_untimed;   /* of which skipped: CUPTI gave them no timestamps */
	uint64_t bad;           /* malformed or unknown records */
	uint16_t *call_size;    /* per call id, the bytes its records hold (gb_call_size) */
	struct hashmap seen;    /* pid << 32 | tid of threads already named -> the entry
				   time of its latest call, 0 none */
	struct hashmap exit_comm; /* pid << 32 | tid -> its name as it exited (a string
				   of the model's), for a process not known then */
	struct hashmap ends;    /* pid -> when a process that had it, and events, ended:
				   one entry each (model.h, MODEL_PID_AGAIN) */
	struct hashmap seeded;  /* pids of collector_seed_states(): the job's (-p) with or
				   without events (a hung one makes no call) */
	void *again;            /* a record of a later process at an ended one's pid */
	size_t again_cap;
	struct pysym *pysym;    /* resolves Python frames as stacks arrive */
	struct collector_py *py;
	size_t npy;
	uint64_t py_unresolved; /* frames that could not be named */
	uint64_t py_stale;      /* of those, whose code object had changed (the
				   others': their process had exited, or its
				   memory could not be read) */
	uint64_t py_unresolved_sampled; /* of stacks walked for samples: their process
				   may exit before it is read (not a warning) */
	struct nsym *nsym;      /* names native frames as stacks arrive */
	uint64_t native_unnamed; /* native frames no symbol named */
	uint64_t states;        /* thread state changes */
	uint64_t samples;       /* CPU-clock samples */
	struct autograd_nodes ag; /* PyTorch's autograd: the node each thread runs */
};

/* Python stacks of pid are walked with layout cfg: resolve them with it. 0 or -ENOMEM. */
int collector_set_python(struct collector *c, uint32_t pid, const struct gb_py_config *cfg);
/* pid runs a new program (exec): forget its interpreter's layout and code objects. */
void collector_forget_python(struct collector *c, uint32_t pid);

/* The model's pid of the latest process given pid (model.h, MODEL_PID_AGAIN). */
uint32_t collector_pid(const struct collector *c, uint32_t pid);
/*
 * The same as the recording ends: where pid's last process ended and none
 * came after it (a command, exited), that one's, not the number a next
 * one would have had.
 */
uint32_t collector_pid_at_end(const struct collector *c, uint32_t pid);

void collector_init(struct collector *c, struct model *m);
void collector_release(struct collector *c);
/*
 * Decode one record into the model.  Returns 0, or -EINVAL for a record of
 * unknown type or wrong size (counted in c->bad), -ENOMEM.
 */
int collector_record(struct collector *c, const void *data, size_t size);
/*
 * The threads of pid, traced from ts on, start in the state /proc says
 * they are in (those the ring buffer has already placed keep theirs):
 * a thread blocked all along a recording is not missing.  0 or -errno.
 */
int collector_seed_states(struct collector *c, uint32_t pid, uint64_t ts);
/*
 * And those of them that wait still in that first state, of a Python
 * process (collector_set_python() first), get the Python stack they wait
 * in.  0 or -ENOMEM.
 */
int collector_seed_stacks(struct collector *c, uint32_t pid);
/*
 * A call still in the driver as the recording ends at ts (its record
 * waited for a return that had not come): added, flagged MF_UNFINISHED,
 * its slice running to ts, or to its process's end where that came first.
 * Before collector_end().  0 or -errno.
 */
int collector_unfinished(struct collector *c, const struct gb_call *r, uint64_t ts);
/* The recording ends at ts: every thread's state lasts until then; threads
 * not named yet are named from /proc. */
void collector_end(struct collector *c, uint64_t ts);
/*
 * Fill ev from a call record using the call table: the pure part of
 * decoding, without naming.  Returns 0 or -EINVAL (unknown call id).
 */
int collector_decode_call(const struct gb_call *rec, struct model_event *ev);

#endif
