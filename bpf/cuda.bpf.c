// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * uprobes on libcuda entry points.  One entry program and one return
 * program serve every entry point: the attach cookie (see gpubpf.h) says
 * which call it is and what to read.  Calls whose return is probed keep
 * their record in "inflight" until the return fires and then emit it
 * whole; the others are emitted from the entry probe.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <stdbool.h>
#include <bpf/usdt.bpf.h>
#include "kernel_types.h"
#include "gpubpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u8 filter_pids = 0;    /* only tgids with GB_PID_TRACED in pid_bits */
const volatile __u8 follow_forks = 0;   /* children of traced tgids join */
const volatile __u32 wake_shift = 18;  /* wake the reader each 1 << this bytes of rb */
const volatile __u32 gpu_wake_shift = 22; /* the same for gpu_rb */
const volatile __u8 native_stacks = 0;  /* capture user-space stacks */
const volatile __u32 self_tgid = 0;     /* the recorder, never held */
const volatile __u8 hold_each = 0;      /* hold every process at its first libcuda map */
const volatile __u8 hold_exec = 0;      /* and a traced one at its first after an exec */
const volatile __u8 crings_on = 0;      /* entry-only calls go to cpu_rings */
const volatile __u64 cring_mask = 0;    /* a CPU ring's data bytes - 1 (a power of two) */
const volatile __u32 cring_wake_shift = 14; /* kick the reader each 1 << this unread bytes */
const volatile __u8 may_goto_on = 0;    /* the kernel knows may_goto (Linux 6.9; py_stack_walk()) */
const volatile __u8 test_nested_search = 0; /* tests: a sample's search amid each call's walk */

/*
 * Two rings, both resized by the loader.  rb takes every record but the
 * GPU batches: small, so that the memory each probe hit writes into is
 * still in the CPU's caches from its last time round (a record into a
 * 16 MiB ring costs ~0.3 us more on a VM whose traps empty the TLB).
 * gpu_rb takes the injection library's batches, which come in bursts of
 * megabytes: large, and a burst there never crowds out host calls.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} gpu_rb SEC(".maps");

/* a call ring per CPU (struct gb_cring, see gpubpf.h); sized by the loader */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, GB_CRING_HEAD + 4096 + GB_CRING_SLACK);
} cpu_rings SEC(".maps");

/* GB_PID_TRACED and GB_PID_PYTHON of every process id (see gpubpf.h) */
__u32 pid_bits[GB_PID_WORDS];

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);             /* tgid */
	__type(value, __u64);           /* failed reserves */
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);             /* tid << 32 | call id */
	__type(value, struct gb_call);
} inflight SEC(".maps");

/*
 * Per-CPU scratch space is shared by programs that can interrupt one
 * another on a CPU: a sampler tick (perf_event) lands in a uprobe's or a
 * tracepoint's program, and on a kernel with full preemption one task's
 * uprobe program can be preempted by another's.  So each scratch map holds
 * SCRATCH_SLOTS entries per CPU, and a program takes the next free one for
 * as long as it runs (scratch_take, scratch_put): nested programs never
 * write each other's.  Nesting deeper than that finds no slot, and what
 * needed it is lost and counted.
 */
#define SCRATCH_SLOTS 4
enum { NEST_CALL, NEST_GPU, NEST_PY, NEST_NATIVE, NEST_N };

struct scratch_nest {
	__u32 depth[NEST_N];            /* slots in use, per scratch map */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch_nest);
} scratch_nest SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct gb_call);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct gb_gpu);
} gpu_scratch SEC(".maps");

/* Python: per-process layouts (from user space), per-thread state, stacks sent. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);             /* tgid */
	__type(value, struct gb_py_config);
} py_procs SEC(".maps");

/*
 * Bumped at each change of py_procs (py_thread's cfg): by user space, by
 * the exec and exit tracepoints, and by gb_py_code_free at each code
 * object that a process with walks frees (the code tokens the walks
 * remember are of the generation they were read in: py_ident_slot).
 */
__u64 py_procs_gen;

struct py_seen_key {
	__u32 tgid;
	__u32 pad;
	__u64 id;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct py_seen_key);
	__type(value, __u8);
} py_seen SEC(".maps");

/*
 * What a Python thread's walks keep between calls, in the thread's own
 * task storage (no hashing, freed with the thread): its PyThreadState, and
 * the identity token of the code object each of its frames held at the
 * last walk, by frame address in a direct-mapped table.  A frame still at
 * the same address with the same code object there is the same code
 * object, and its token need not be read again, as long as no code object
 * was freed since (py_procs_gen unchanged: gb_py_code_free).  A frame
 * popped and another pushed in its place can hold a new code object at
 * the freed one's address: a notebook's next cell, code exec'd or
 * reloaded anew, the same program run again by exec without ASLR (the
 * task storage outlives an exec; the exec bumps the generation too).  The
 * frames below the top of a stack persist from call to call, so most of a
 * walk is found here.  The slot is the frame's address in
 * 64-byte units: 3.11+ frames lie one after the other on the thread's data
 * stack, each 80 bytes or more, so a stack of up to 16 KiB (a hundred
 * frames and more) has a slot per frame, where hashed slots would have
 * some frames evict each other at every walk.
 */
#define PY_IDENT_SLOTS 256      /* a power of two */
#define PY_IDENT_UNIT 6         /* log2 of the bytes a slot stands for: < 80 */

struct py_ident_slot {
	__u64 frame;
	__u64 code;
	__u32 ident;
	__u32 gen;              /* py_procs_gen's low half when read */
};

/*
 * The stack being walked, and the bytes read.  CPython 3.11+ keeps a
 * thread's frames one after the other on its data stack, so one read of
 * the frame's page up to the frame covers the frames below it too: win
 * holds the process's memory from win_base on (frame_at).
 */
#define PY_PAGE 4096
#define PY_FRAME_READ 128       /* bytes of a frame the layouts reach into */
#define PY_TSTATE_SPAN 256      /* thread_id and the top frame's field in one read */

struct py_scratch {
	struct gb_pystack st;
	__u64 tstate[PY_TSTATE_SPAN / 8];
	__u64 win_base;
	__u64 win_last;
	__u64 win_low;          /* frame_at()'s hint: the thread's last walk's lowest frame */
	__u64 win_addr;         /* win's own address, as a number (frame_at()) */
	__u64 win_top;          /* the walk's first frame (not a variable: see py_stack_walk()) */
	__u64 win[(PY_PAGE + PY_FRAME_READ) / 8];
	__u64 ident[GB_PY_IDENT_LEN / 8];
	__u64 file[GB_PY_FILE_LEN / 8]; /* 3.6-3.11: its file name's str (gb_py_ident_file()) */
};

#define PY_SENT_SLOTS 16        /* a power of two */

/*
 * own: the scratch space of the thread's uprobe programs.  A thread runs
 * one of them at a time, and nothing else of its own meanwhile, so unlike
 * the per-CPU slots it needs no locked take and give back (two locked
 * additions, ~35 ns a call on the VMs of BENCHMARKS.md).  Its other walks,
 * made in a scheduler tracepoint or a sampler tick, which can land while a
 * uprobe program of its runs, use the per-CPU slots.  It makes a Python
 * thread's storage ~15 KiB, allocated at its first walk.
 */
struct py_thread {
	__u64 tstate;           /* its PyThreadState, 0 until found */
	/*
	 * py_procs' entry of its process as of py_procs_gen cfg_gen, for its
	 * uprobe programs' walks: found in the storage they take anyway, not
	 * by a lookup (~5% of the entry program's time at depth 30)
	 */
	struct gb_py_config cfg;
	__u64 cfg_gen;
	__u32 cfg_tgid;
	struct py_ident_slot idents[PY_IDENT_SLOTS];
	__u64 low;              /* its last walk's lowest frame, near the top: frame_at()'s hint */
	__u64 sent[PY_SENT_SLOTS]; /* ids of stacks known sent, by id: spares "py_seen" */
	struct py_scratch own;
	__u64 interp;           /* the interpreter whose thread list holds tstate */
	__u64 searched;         /* py_threads_key() after its last search; 0: search again */
	__u64 searched_part;    /* after its last search cut short (PY_THREADS_SEARCHED) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct py_thread);
} py_threads SEC(".maps");

static __always_inline struct py_ident_slot *ident_slot(struct py_thread *t, __u64 frame)
{
	return &t->idents[(frame >> PY_IDENT_UNIT) & (PY_IDENT_SLOTS - 1)];
}

/* py_stack_walk()'s slot for the thread's own scratch space */
#define PY_OWN_SLOT SCRATCH_SLOTS

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct py_scratch);
} py_scratch SEC(".maps");

/*
 * CPython 3.6-3.10's thread states name their thread by pthread_self() only
 * (thread_id, the fsbase on x86-64), not by tid: the tid of each thread of
 * a 3.6-3.10 process by its fsbase, as the scheduler and the sampler see them
 * run, so that a GIL wait can name its holder.
 */
struct fsbase_key {
	__u32 tgid;
	__u32 pad;
	__u64 fsbase;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct fsbase_key);
	__type(value, __u32);           /* tid */
} py_fsbase SEC(".maps");

/* set by user space once a traced process needs py_fsbase (runs 3.7-3.10) */
__u8 py_fsbase_on;

/* Native stacks: the stacks sent, and the one being captured. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct py_seen_key);        /* (tgid, stack id) */
	__type(value, __u8);
} native_seen SEC(".maps");

struct native_scratch {
	struct gb_native st;
	__u64 raw[GB_NATIVE_MAX_DEPTH];         /* as bpf_get_stack() returns it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct native_scratch);
} native_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);           /* records lost, all processes */
} drops_total SEC(".maps");

/*
 * libcuda files already probed (struct gb_lib_key), filled by user space:
 * for every process (pid 0), or seen mapped by one process (pid).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct gb_lib_key);
	__type(value, __u8);
} libs_known SEC(".maps");

/*
 * Per tgid: processes held now (hold_current()), since when, until user
 * space continues them and deletes them here.  Should gpubpf die first
 * (SIGKILL, the OOM killer), its keeper (user/record/keeper.c) continues
 * those left.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} held SEC(".maps");

/* Per tgid: libcuda mappings not reported (the ring buffer was full), so not held. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} unheld SEC(".maps");

/*
 * Per tgid: it ran a new program (exec) since its libcuda was known, so
 * that the new program's first libcuda mapping is held and reported again
 * (hold_exec: its Python is looked for then, before its first call).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} execed SEC(".maps");

/* n records of process tgid lost. */
static __always_inline void count_drops(__u32 tgid, __u64 n)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&drops_total, &zero);

	/*
	 * Atomic even on this CPU's copy: a uprobe's program can be preempted
	 * by another task's, on the same CPU, amid an add (a few of 500k
	 * drops went missing from the total)
	 */
	if (v)
		__sync_fetch_and_add(v, n);
	v = bpf_map_lookup_elem(&drops, &tgid);
	if (!v) {
		if (!bpf_map_update_elem(&drops, &tgid, &n, BPF_NOEXIST))
			return;
		/* another CPU's first drop of tgid was inserted first: add to it */
		v = bpf_map_lookup_elem(&drops, &tgid);
	}
	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void count_drop(__u32 tgid)
{
	count_drops(tgid, 1);
}

/* The per-CPU count of slots in use of scratch map which (NEST_*), or NULL. */
static __always_inline __u32 *scratch_depth(int which)
{
	__u32 zero = 0;
	struct scratch_nest *n = bpf_map_lookup_elem(&scratch_nest, &zero);

	return n ? &n->depth[which] : NULL;
}

/* Take the next slot: its index, SCRATCH_SLOTS for none.  Always scratch_put() after. */
static __always_inline __u32 scratch_take(__u32 *depth)
{
	return depth ? __sync_fetch_and_add(depth, 1) : SCRATCH_SLOTS;
}

static __always_inline void scratch_put(__u32 *depth)
{
	if (depth)
		__sync_fetch_and_add(depth, -1);
}

/*
 * Batch wakeups: waking the reader costs ~7 us, so a record wakes it only
 * when it takes the unread data across a multiple of 1 << wake_shift, not for
 * every record once the reader lags (the reader also polls with a
 * timeout, should two CPUs cross together and neither see it).  size: the
 * record's bytes; reserved: it is already counted in the unread data
 * (reserve/submit), else it is about to be (output).
 */
/* Adding size bytes took the unread data, now after, across a multiple of 1 << shift. */
static __always_inline int wake_crossed(__u64 after, __u64 size, __u32 shift)
{
	return after >> shift != (after - size) >> shift;
}

static __always_inline __u64 ring_wake_flags(void *ring, __u32 shift, __u64 size, int reserved)
{
	__u64 after = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);

	size = (size + BPF_RINGBUF_HDR_SZ + 7) & ~7ULL;  /* as the ring holds it */
	if (!reserved)
		after += size;
	return wake_crossed(after, size, shift) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* ring_wake_flags() of rb, where every record but the GPU batches goes. */
static __always_inline __u64 wake_flags(__u64 size, int reserved)
{
	return ring_wake_flags(&rb, wake_shift, size, reserved);
}

/* The index of tgid's word in pid_bits[], bounded where the verifier sees it. */
static __always_inline __u32 pid_word(__u32 tgid)
{
	__u32 w = GB_PID_WORD(tgid);

	asm volatile("" : "+r"(w));     /* keep clang from folding the mask away */
	return w & (GB_PID_WORDS - 1);
}

static __always_inline __u32 pid_flags(__u32 tgid)
{
	if (tgid >= GB_PID_LIMIT)
		return 0;
	return pid_bits[pid_word(tgid)] >> GB_PID_SHIFT(tgid) & 3;
}

static __always_inline int traced(__u32 tgid)
{
	return !filter_pids || (pid_flags(tgid) & GB_PID_TRACED);
}

static __always_inline __u64 read_field(const char *p, __u32 off, int wide)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, wide ? 8 : 4, p + off);
	return v;
}

/* The memory types and extent of a 2D/3D copy descriptor (depth 0: 2D). */
static __always_inline void read_nd(struct gb_call *c, __u32 src, __u32 dst, __u32 width,
				    __u32 height, __u32 depth, int wide)
{
	const char *p = (const char *)c->arg[0];

	c->ext[0] = read_field(p, src, 0);
	c->ext[1] = read_field(p, dst, 0);
	c->ext[2] = read_field(p, width, wide);
	c->ext[3] = read_field(p, height, wide);
	c->ext[4] = depth ? read_field(p, depth, wide) : 1;
}

static __always_inline void read_deref(struct gb_call *c, __u32 deref)
{
	const char *p;
	__u64 sum = 0, n, v;

	switch (deref) {
	case GB_DEREF_LAUNCH_CONFIG:
		bpf_probe_read_user(c->ext, GB_LAUNCH_CONFIG_SIZE, (void *)c->arg[0]);
		break;
	case GB_DEREF_MEMCPY2D:
		read_nd(c, GB_M2D_SRC_TYPE, GB_M2D_DST_TYPE, GB_M2D_WIDTH, GB_M2D_HEIGHT, 0, 1);
		break;
	case GB_DEREF_MEMCPY3D:
		read_nd(c, GB_M3D_SRC_TYPE, GB_M3D_DST_TYPE, GB_M3D_WIDTH, GB_M3D_HEIGHT,
			GB_M3D_DEPTH, 1);
		break;
	case GB_DEREF_MEMCPY2D_V1:
		read_nd(c, GB_M2D1_SRC_TYPE, GB_M2D1_DST_TYPE, GB_M2D1_WIDTH, GB_M2D1_HEIGHT, 0, 0);
		break;
	case GB_DEREF_MEMCPY3D_V1:
		read_nd(c, GB_M3D1_SRC_TYPE, GB_M3D1_DST_TYPE, GB_M3D1_WIDTH, GB_M3D1_HEIGHT,
			GB_M3D1_DEPTH, 0);
		break;
	case GB_DEREF_SIZES:
		p = (const char *)c->arg[2];
		n = c->arg[3];
		for (int i = 0; i < GB_MAX_BATCH; i++) {
			if (i >= n)
				break;
			v = 0;
			bpf_probe_read_user(&v, 8, p + 8 * i);
			sum += v;
		}
		c->ext[0] = sum;
		c->ext[1] = n;
		c->ext[2] = n > GB_MAX_BATCH;
		break;
	case GB_DEREF_BATCH3D:
		p = (const char *)c->arg[1];
		n = c->arg[0];
		for (int i = 0; i < GB_MAX_BATCH; i++) {
			__u64 e[3] = {};

			if (i >= n)
				break;
			bpf_probe_read_user(e, sizeof(e), p + GB_BATCH3D_OP_SIZE * i + GB_BATCH3D_EXTENT);
			sum += e[0] * e[1] * e[2];
		}
		c->ext[0] = sum;
		c->ext[1] = n;
		c->ext[2] = n > GB_MAX_BATCH;
		break;
	}
}

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

/* A walk: what it reads with, and how far it has come. */
struct py_walk {
	const struct gb_py_config *cfg;
	struct py_scratch *s;
	struct py_thread *t;
	__u64 frame;            /* the next frame to read, 0 at the bottom */
	__u64 last;             /* the last frame recorded */
	__u64 hash;
	__u64 tried;            /* the thread's cached state, as py_thread_state() read it */
	__u32 n;                /* frames recorded */
	__u32 depth;            /* frames wanted */
	__u32 gen;              /* py_procs_gen's low half, read before the walk */
};

/*
 * The top frame of thread state ts, 0 when the thread runs no Python
 * (3.11/3.12: through its cframe; 3.15+: such a thread is at its sentinel
 * frame).
 */
static __always_inline __u64 py_top_frame(const struct gb_py_config *cfg, __u64 ts)
{
	__u64 frame = read_u64(ts + cfg->tstate_frame);

	if (cfg->cframe_frame != GB_PY_NONE && frame)
		frame = read_u64(frame + cfg->cframe_frame);
	if (cfg->tstate_base_frame != GB_PY_NONE && frame &&
	    frame == read_u64(ts + cfg->tstate_base_frame))
		frame = 0;
	return frame;
}

/*
 * The calling thread's PyThreadState: not the interpreter's "current"
 * one, which is 0 or another thread's while this thread runs C code with
 * the GIL released (as it does when it launches kernels), but the entry of
 * a thread list whose thread_id is this thread's pthread_self(), the
 * fsbase register on x86-64.  Cached per thread, with its interpreter, and
 * checked on every use: here, 0 if the cached one is not the thread's
 * (py_thread_find() then searches).  Also sets w->frame to its
 * tstate_frame field (0 at 3.15's sentinel frame: it runs no Python), read
 * with the check in one copy where they lie close: each read of user
 * memory costs more than the bytes it copies.
 */
#define PY_TSTATE_NEAR 128      /* 3.11+'s span fits: read onto the stack */
static __noinline __u64 py_thread_state(struct py_walk *w, struct task_struct *task)
{
	const struct gb_py_config *cfg = w->cfg;
	struct py_scratch *s = w->s;
	struct py_thread *t = w->t;
	__u64 fsbase = task->thread.fsbase, ts = t->tstate, near[PY_TSTATE_NEAR / 8];
	__u32 id = cfg->tstate_thread_id, top = cfg->tstate_frame, base = cfg->tstate_base_frame;
	__u32 lo = id < top ? id : top, hi = id < top ? top : id, span;

	w->tried = ts;
	/* 3.15+: its sentinel frame, where a thread that runs no Python is */
	if (base != GB_PY_NONE) {
		lo = base < lo ? base : lo;
		hi = base > hi ? base : hi;
	}
	span = hi - lo + 8;
	/* onto the stack, where a read costs less than into a map (bench section 15) */
	if (ts && span <= sizeof(near) && !bpf_probe_read_user(near, span, (void *)(ts + lo))) {
		if (near[((id - lo) & (sizeof(near) - 8)) / 8] == fsbase) {
			w->frame = near[((top - lo) & (sizeof(near) - 8)) / 8];
			if (base != GB_PY_NONE && near[((base - lo) & (sizeof(near) - 8)) / 8] == w->frame)
				w->frame = 0;
			return ts;
		}
	} else if (ts && span > sizeof(near) && span <= sizeof(s->tstate) &&
		   !bpf_probe_read_user(s->tstate, span, (void *)(ts + lo))) {
		if (s->tstate[((id - lo) & (sizeof(s->tstate) - 8)) / 8] == fsbase) {
			w->frame = s->tstate[((top - lo) & (sizeof(s->tstate) - 8)) / 8];
			if (base != GB_PY_NONE &&
			    s->tstate[((base - lo) & (sizeof(s->tstate) - 8)) / 8] == w->frame)
				w->frame = 0;
			return ts;
		}
	} else if (ts && read_u64(ts + id) == fsbase) {
		w->frame = read_u64(ts + top);
		if (base != GB_PY_NONE && read_u64(ts + base) == w->frame)
			w->frame = 0;
		return ts;
	}
	return 0;
}

/*
 * py_thread_find()'s search: every interpreter's thread list, newest first
 * (a process that made a subinterpreter has its main interpreter last),
 * as a bpf_loop, whose body the verifier checks once, not for each turn.
 * A thread can hold a state in more than one interpreter (3.12's
 * _xxsubinterpreters.create() leaves its caller one in the new
 * interpreter): one that runs Python is taken before one that does not.
 */
/*
 * Thread states searched, in all interpreters: by a walk in the scheduler
 * (which holds the CPU's run queue) or for a sample, 128 (~25 us); by a
 * walk at a call, in the calling thread's own time, 4096.  A process's
 * first thread lies last: attached to with -p once it runs 300 threads, its
 * calls had no stacks.  A search cut short by the first bound is made again
 * at the thread's next call, but not at its next switch or sample.  A
 * young thread (PY_THREAD_YOUNG_NS), searched for at each walk, searches
 * 128 at its calls too: its own state, if any, is new, near the head.
 */
#define PY_THREADS_SEARCHED 128
#define PY_THREADS_SEARCHED_CALL 4096
/*
 * A thread is searched for again only once the thread lists have changed
 * since its last search: one that has no state (a C++ thread of a Python
 * process: a driver's, a library's worker) would cost a search at each
 * call and each blocking switch (~0.2 us a state: ~23 us among 100
 * threads), and every state made goes first in its interpreter's list.  A
 * state found that runs no Python now is checked that way too, whether it
 * ran Python or was found idle: a C thread that calls Python (ctypes
 * callbacks, PyGILState_Ensure) gets a new state for each call, where the
 * last one's memory, freed, still reads as its own.
 * Not in a thread's first PY_THREAD_YOUNG_NS: a new Python thread can be
 * walked (sampled, or switched out) before it has put its id in the state
 * its creator made for it, which changes no list.
 */
#define PY_THREAD_YOUNG_NS 100000000ULL
#define PY_KEY_INTERPS 4        /* with more interpreters, always search */

struct py_search {
	const struct gb_py_config *cfg;
	__u64 fsbase;
	__u64 interp, ts;       /* where it has come to */
	__u64 idle, idle_interp; /* the first state found that runs no Python */
	__u64 found, found_interp;
};

static long py_search_step(__u32 i, void *data)
{
	struct py_search *q = data;
	const struct gb_py_config *cfg = q->cfg;
	__u64 ts = q->ts;

	if (!q->interp)
		return 1;
	if (!ts) {              /* this interpreter's threads are done: the next one's */
		q->interp = read_u64(q->interp + cfg->interp_next);
		q->ts = q->interp ? read_u64(q->interp + cfg->threads_head) : 0;
		return 0;
	}
	if (read_u64(ts + cfg->tstate_thread_id) == q->fsbase) {
		if (py_top_frame(cfg, ts)) {
			q->found = ts;
			q->found_interp = q->interp;
			return 1;
		}
		if (!q->idle) {
			q->idle = ts;
			q->idle_interp = q->interp;
		}
	}
	q->ts = read_u64(ts + cfg->tstate_next);
	return 0;
}

/*
 * What changes when a thread state is made for thread t: the first state
 * of its interpreter's list, or where its interpreter is not known, that
 * of each interpreter's, hashed; 0: unknown.  unbound: also unknown while
 * a list's first state has no thread id yet (3.12+ lists a new state
 * before it sets its thread's id: a search then may have missed the
 * thread's own, whose id will change no list).
 */
static __always_inline __u64 py_threads_key(const struct gb_py_config *cfg,
					    const struct py_thread *t, int unbound)
{
	__u64 interp, key, head;

	if (t->interp) {
		head = read_u64(t->interp + cfg->threads_head);
		if (unbound && head && !read_u64(head + cfg->tstate_thread_id))
			return 0;
		return head ^ 1;        /* 0 is a list too */
	}
	key = interp = read_u64(cfg->runtime + cfg->interp_head);
	for (int i = 0; i < PY_KEY_INTERPS && interp; i++) {
		head = read_u64(interp + cfg->threads_head);
		if (unbound && head && !read_u64(head + cfg->tstate_thread_id))
			return 0;
		key = (key ^ head) * 0x100000001b3ULL;
		interp = read_u64(interp + cfg->interp_next);
	}
	return interp ? 0 : key;
}

/*
 * py_thread_state() when the thread's cached state is not its own, or runs
 * no Python: search, if the lists changed since the last search.  The
 * state found, else 0.  That last search may be a sample's, made amid this
 * walk (a CPU-clock tick is an interrupt, which a uprobe's program does
 * not keep out), which found the thread's state after this walk read the
 * cached one: then the lists unchanged say nothing of the state this walk
 * tried, and it searches too (before: that call had no stack).
 */
static __noinline __u64 py_thread_find(struct py_walk *w, struct task_struct *task, int at_call)
{
	const struct gb_py_config *cfg = w->cfg;
	struct py_thread *t = w->t;
	struct py_search q = { .cfg = cfg, .fsbase = task->thread.fsbase };
	__u64 key = py_threads_key(cfg, t, 0);
	int young, all, running;

	/* the common case first, without the clock (a helper call) */
	if (key && t->tstate == w->tried && t->searched == key)
		return 0;
	young = bpf_ktime_get_ns() - task->start_time < PY_THREAD_YOUNG_NS;
	all = at_call && !young;
	if (key && t->tstate == w->tried && !all && t->searched_part == key)
		return 0;
	q.interp = read_u64(cfg->runtime + cfg->interp_head);
	q.ts = q.interp ? read_u64(q.interp + cfg->threads_head) : 0;
	bpf_loop(all ? PY_THREADS_SEARCHED_CALL : PY_THREADS_SEARCHED, py_search_step, &q, 0);
	running = q.found != 0;
	if (!running) {
		q.found = q.idle;
		q.found_interp = q.idle_interp;
	}
	t->tstate = q.found;
	t->interp = q.found ? q.found_interp : 0;
	/*
	 * Ours cannot be made meanwhile: only this thread makes its own; but
	 * one listed without its id yet may be ours, its thread walked
	 * (sampled, blocked) between the two: then search again.  So too
	 * where only an idle state was found: the thread may be making the
	 * one it will run Python in, and delete the idle one, whose memory,
	 * freed, still reads as its idle state (before: the lists unchanged
	 * since, its calls trusted that and had no stack).
	 */
	key = young ? 0 : py_threads_key(cfg, t, !running);
	if (q.found || !q.interp || all)
		t->searched = key;
	else
		t->searched_part = key;
	if (!q.found)
		return 0;
	w->frame = read_u64(q.found + cfg->tstate_frame);
	return q.found;
}

/*
 * Fields of the frame at byte at of the window, at an offset from the
 * layout.  Frames and their pointer fields are 8-byte aligned, so the
 * masks bound the index without a branch and the loads are whole words
 * (a 3.6-3.10 f_lasti, an int, may sit at 4 mod 8: frame_u32).
 */
static __always_inline __u64 frame_u64(const struct py_scratch *s, __u32 at, __u32 off)
{
	return s->win[((at & (PY_PAGE - 8)) + (off & (PY_FRAME_READ - 8))) / 8];
}

static __always_inline __u32 frame_u32(const struct py_scratch *s, __u32 at, __u32 off)
{
	return ((const __u32 *)s->win)[((at & (PY_PAGE - 8)) + (off & (PY_FRAME_READ - 4))) / 4];
}

static __always_inline __u8 frame_u8(const struct py_scratch *s, __u32 at, __u32 off)
{
	return ((const __u8 *)s->win)[(at & (PY_PAGE - 8)) + (off & (PY_FRAME_READ - 1))];
}

/*
 * Bring the frame at addr into the window; its position there, or -1.
 * need: the bytes of a frame the layout reaches into, which stay inside
 * the frame (3.11+: sizeof(_PyInterpreterFrame) is 80; 3.6-3.10: the
 * PyFrameObject's first 128 bytes, f_lasti among them, of 350 and more).  3.11+, frames one after the other on the
 * thread's data stack: read from s->win_low, where the thread's last walk
 * found its lowest frame, up to the frame's end: the frames that walk
 * found below this one, in one read even where they lie across pages (the
 * last PY_PAGE bytes of them where they span more).  Without it (a first
 * walk, a frame below it), or if that read fails (the stack is elsewhere
 * now: it is not tried again in this walk), read from the start of the
 * frame's page, memory the frame's own pages are part of (a read for each
 * page the frames lie on: 3.3 KiB of frames, 30 of ~110 bytes, lie across
 * two pages four times in five); if that fails, for a frame above the
 * window, or for 3.6-3.10's separately allocated frames, read just the
 * frame.
 * s->win_last: the last position at which a whole frame is in the window.
 * A global function, checked once by the verifier: inlined into the walk's
 * loop, each of its paths was checked again in each state of the loop.
 */
#define PY_NEED_311 80
#define PY_NEED_310 128      /* f_lasti: 3.10 at 96, 3.7-3.9 at 104, 3.6 at 120 */
/*
 * How far below the top frame the last frame recorded may lie and still be
 * taken for one of the same data stack (chunks of 16 KiB and more): the
 * next walk's s->win_low.
 */
#define PY_LOW_REACH (64 * 1024)

__noinline int frame_at(struct py_scratch *s, __u64 addr, int contiguous)
{
	__u32 need = contiguous ? PY_NEED_311 : PY_NEED_310, len, lead;
	__u64 base, reach;

	if (!s)                 /* a global function: checked on its own, with any s */
		return -1;
	reach = addr - s->win_low;
	/*
	 * Above the window: not further down the data stack, which grows up,
	 * but a 3.12+ shim on the C stack (one at the bottom of each stack)
	 * or a generator's frame: just the frame, not its page.
	 */
	if (s->win_base && addr > s->win_base) {
		len = need;
		goto read;
	}
	if (contiguous && s->win_low && reach < PY_LOW_REACH) {
		/* bounded by constants, in a way the verifier follows */
		len = reach < PY_PAGE - PY_NEED_311 ? (__u32)reach + PY_NEED_311 : PY_PAGE;
		base = addr + PY_NEED_311 - len;
		/*
		 * From where the copy has win's place in a cache line: up to
		 * 56 bytes more, in the same page.  A copy whose destination
		 * lies a few bytes past its source in their pages waits at
		 * each load for the bytes just stored ("4K aliasing"): on the
		 * VM of 2026-12-03, 4 KiB 8 to 24 bytes apart took 2,400 to
		 * 3,000 ns, against ~310 at the same place or 32 bytes apart
		 * and more (bench section 15).
		 */
		lead = (base - s->win_addr) & 56;
		if ((base & (PY_PAGE - 1)) < lead)
			lead = base & (PY_PAGE - 1);
		len += lead;
		base -= lead;
		if (!bpf_probe_read_user(s->win, len, (void *)base))
			goto done;
		s->win_low = 0;
	}
	/* a masked length, as bounded */
	len = contiguous ? (__u32)(addr & (PY_PAGE - 1)) + PY_NEED_311 : PY_NEED_310;
read:
	base = addr + need - len;
	/* from the page's start: up to 56 bytes further on, as above, where the frame allows */
	lead = s->win_addr & 56;
	if (len > need && contiguous && (addr & (PY_PAGE - 1)) >= lead) {
		base += lead;
		len -= lead;
	}
	if (len > need && bpf_probe_read_user(s->win, len, (void *)base)) {
		len = need;
		base = addr;
	} else if (len > need) {
		goto done;
	}
	if (bpf_probe_read_user(s->win, need, (void *)addr)) {
		s->win_base = 0;
		s->win_last = 0;
		return -1;
	}
done:
	s->win_base = base;
	s->win_last = len - need;
	return addr - base;
}

/*
 * The GB_PY_FILE_LEN bytes of a str or bytes object from addr (its length
 * on) that a code token folds; 0, or -1 where the object itself cannot be
 * read here.  Where they run past its mapping, or into a page not faulted
 * in (a small object at the end of a pool), the object's own: its head
 * bytes, then as many of those after them as its length says (where the
 * head's state word has all of state_mask's bits), the rest not folded.
 * User space reads the same (pyruntime_code_ident()).
 */
static __always_inline int py_ident_obj(__u64 *buf, __u64 addr, __u32 head, __u64 state_mask)
{
	__u64 n;

	if (!bpf_probe_read_user(buf, GB_PY_FILE_LEN, (void *)addr))
		return 0;
	if (bpf_probe_read_user(buf, head, (void *)addr))
		return -1;
	if ((buf[2] & state_mask) != state_mask)
		return 0;
	n = buf[0];
	if (n > GB_PY_FILE_LEN - head)
		n = GB_PY_FILE_LEN - head;
	return bpf_probe_read_user((__u8 *)buf + head, n, (void *)(addr + head)) ? -1 : 0;
}

/*
 * The identity token of the code object of the frame at frame, read (the
 * frame's identity slot did not hold it) and remembered in the slot; 0
 * when it cannot be read here.  Out of line, as it is rare once a program
 * runs its loop: the four frames of a turn inline the common path only
 * (a turn's machine code 1.9 KiB, not 2.9; ~1% less time at depth 30).
 */
static __noinline __u32 py_ident_read(struct py_walk *w, __u64 frame, __u64 code)
{
	struct py_ident_slot *known = ident_slot(w->t, frame);
	struct py_scratch *s = w->s;
	__u32 ident;

	if (bpf_probe_read_user(s->ident, sizeof(s->ident), (void *)(code + w->cfg->code_ident)))
		/*
		 * Not readable here (the page is not mapped in: this runs where
		 * no fault is taken): unknown, and not remembered, so that the
		 * next walk reads it again rather than naming the frame "?".
		 */
		return 0;
	ident = gb_py_ident(s->ident);
	if (w->cfg->ident_file != GB_PY_NONE) {
		__u64 file = s->ident[(w->cfg->ident_file / 8) & (GB_PY_IDENT_LEN / 8 - 1)];
		__u64 lines = s->ident[GB_PY_IDENT_LEN / 8 - 1];
		__u32 first;

		if (py_ident_obj(s->file, file + GB_PY_FILE_AT, GB_PY_STR_HEAD,
				 GB_PY_STR_COMPACT_ASCII))
			return 0;
		ident = gb_py_ident_file(ident, s->file);
		if (bpf_probe_read_user(&first, 4, (void *)(code + w->cfg->ident_firstline)))
			return 0;
		/* the same buffer for the line table (gb_py_ident_lines()) */
		if (py_ident_obj(s->file, lines + GB_PY_FILE_AT, GB_PY_BYTES_HEAD, 0))
			return 0;
		ident = gb_py_ident_lines(ident, first, s->file);
	}
	known->frame = frame;
	known->code = code;
	known->ident = ident;
	/* a process whose frees are not counted keeps no token past its walk */
	known->gen = w->cfg->code_frees ? w->gen : w->gen - 1;
	return ident;
}

/*
 * One frame: 0 to go on, 1 to stop.  Most frames are already in the
 * window, and their identity tokens known from the last walk: that path
 * is a few loads and compares.
 */
static __always_inline int py_walk_frame(struct py_walk *w)
{
	const struct gb_py_config *cfg = w->cfg;
	struct py_scratch *s = w->s;
	struct py_ident_slot *known;
	struct gb_py_frame *f;
	__u64 code, instr, frame = w->frame, at = frame - s->win_base;
	__u32 n = w->n;

	if (!frame || n >= w->depth)
		return 1;
	if (at > s->win_last) {
		int got = frame_at(s, frame, cfg->frame_owner != GB_PY_NONE);

		if (got < 0)
			return 1;
		at = got;
	}
	w->frame = frame_u64(s, at, cfg->frame_prev);
	code = frame_u64(s, at, cfg->frame_code) & ~(__u64)cfg->exec_tag_mask;
	if (cfg->code_adaptive != GB_PY_NONE) {
		/* 3.12+: frames owned by the C stack are shims, not Python code */
		if (frame_u8(s, at, cfg->frame_owner) >= 3)
			return 0;
		instr = (frame_u64(s, at, cfg->frame_instr) - code - cfg->code_adaptive) / 2;
	} else {
		instr = frame_u32(s, at, cfg->frame_instr);     /* 3.6-3.10: f_lasti, an int */
	}
	w->last = frame;
	f = &s->st.frames[n & (GB_PY_MAX_DEPTH - 1)];
	f->code = code;
	f->instr = instr;
	known = ident_slot(w->t, frame);
	if (known->frame == frame && known->code == code && known->gen == w->gen)
		f->ident = known->ident;
	else
		f->ident = py_ident_read(w, frame, code);
	w->hash = (w->hash ^ code ^ ((__u64)f->ident << 32 | (__u32)instr)) * 0x100000001b3ULL;
	w->n = n + 1;
	return 0;
}

/*
 * Four frames, as a bpf_loop callback, where the kernel has no may_goto:
 * 0 to go on, 1 to stop.  A turn is a call, ~10 ns where retpolines and
 * safe returns guard calls (bench section 15), as much as two frames' own
 * work; eight frames a turn save less again and lengthen every load's
 * verification.
 */
static long py_walk_frames(__u32 i, void *data)
{
	return py_walk_frame(data) || py_walk_frame(data) || py_walk_frame(data) ||
	       py_walk_frame(data);
}

/*
 * Leave the loop it is in once the kernel's budget of iterations is spent
 * (BPF_JMP | BPF_JCOND, "may_goto": a count the JIT keeps on the stack).
 * The verifier then checks the loop's body until its state repeats, not
 * each iteration, and the loop makes no call.  Spelled as bytes: clang 14
 * has no name for the instruction.
 */
#define may_goto_break()                                                                \
	({                                                                              \
		__label__ l_break, l_continue;                                          \
		asm volatile goto("1: .byte 0xe5; .byte 0; "                           \
				  ".long ((%l[l_break] - 1b - 8) / 8) & 0xffff; .short 0"  \
				  :::: l_break);                                        \
		goto l_continue;                                                        \
	l_break:                                                                        \
		break;                                                                  \
	l_continue:;                                                                    \
	})

/*
 * Walk the calling thread's Python frames into scratch slot slot
 * (PY_OWN_SLOT: the thread's own); send the stack if this process has not
 * been sent it yet.  Returns its id, 0 when the thread runs no Python.  A
 * global function: the verifier checks it once per program, not once per
 * call site as it would a static one (the entry program alone has four),
 * which keeps the programs' load short.
 */
__noinline __u64 py_stack_walk(__u32 tgid, int sampled, __u32 slot)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct py_seen_key key = { .tgid = tgid };
	struct py_walk w = { .hash = 0x84222325cbf29ce4ULL };
	const struct gb_py_config *cfg;
	struct py_scratch *s;
	__u64 *sent, gen;
	__u32 n;
	__u8 one = 1;
	int searched;

	w.t = bpf_task_storage_get(&py_threads, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!w.t)
		return 0;
	/*
	 * The thread's uprobe programs keep a copy of the process's layout
	 * (one at a time, nothing of the thread's own interrupts them); its
	 * other walks, which can land amid a copy, look it up.  The
	 * generation is read before the lookup: a change after it is seen at
	 * the next walk.
	 */
	gen = *(volatile __u64 *)&py_procs_gen;
	if (slot != PY_OWN_SLOT || w.t->cfg_tgid != tgid || w.t->cfg_gen != gen) {
		cfg = bpf_map_lookup_elem(&py_procs, &tgid);
		if (!cfg)
			return 0;
		if (slot == PY_OWN_SLOT) {
			w.t->cfg = *cfg;
			w.t->cfg_tgid = tgid;
			w.t->cfg_gen = gen;
		}
	} else {
		cfg = &w.t->cfg;
	}
	w.cfg = cfg;
	w.gen = gen;
	w.s = s = slot == PY_OWN_SLOT ? &w.t->own : bpf_map_lookup_elem(&py_scratch, &slot);
	if (!s)
		return 0;
	/*
	 * Spelled so, inline and through w.cfg: clang then keeps more of the
	 * walk's loop below in registers (11 stack accesses a frame against
	 * 14 as a function of its own, or through cfg: llvm-objdump -d
	 * build/cuda.bpf.o), ~2-3% of the entry program at depth 30.
	 */
	searched = !py_thread_state(&w, task);
	/* tests: a sample's search lands here, as a CPU-clock tick can */
	if (test_nested_search && searched && slot == PY_OWN_SLOT)
		py_thread_find(&w, task, 0);
	if (searched && !py_thread_find(&w, task, slot == PY_OWN_SLOT))
		return 0;
	if (w.cfg->cframe_frame != GB_PY_NONE && w.frame)
		w.frame = read_u64(w.frame + w.cfg->cframe_frame);
	/*
	 * The cached state runs no Python now: a newer one, if the lists
	 * changed since the last search.  That costs a thread that keeps an
	 * idle state (PyTorch's autograd threads) a read a call, as it costs
	 * a thread with no state: a state found idle may since have been
	 * deleted, its memory still reading as the thread's, and the thread
	 * now run Python in a new one.
	 */
	if (!w.frame && !searched) {
		if (!py_thread_find(&w, task, slot == PY_OWN_SLOT))
			return 0;
		if (w.cfg->cframe_frame != GB_PY_NONE && w.frame)
			w.frame = read_u64(w.frame + w.cfg->cframe_frame);
	}
	w.depth = cfg->depth < GB_PY_MAX_DEPTH ? cfg->depth : GB_PY_MAX_DEPTH;
	s->win_base = 0;        /* the window is per walk: memory changes between calls */
	s->win_last = 0;
	/*
	 * kept in the scratch space: a variable live across the loop below
	 * made the verifier check 40% more instructions
	 */
	s->win_low = w.t->low;
	s->win_top = w.frame;
	s->win_addr = (unsigned long)s->win;    /* a pointer as a number: allowed to root */
	if (may_goto_on) {
		/*
		 * A frame an iteration, no call between them: on the VM of
		 * 2026-12-03, whose calls are dear, 5% less time for the
		 * entry program at depth 30, 7% at 60.  At most four
		 * iterations a frame wanted, shims included (which do not
		 * count towards the depth), as bpf_loop's four frames a turn.
		 * The bound is read from the map each time: against a
		 * constant the verifier would check each iteration in turn.
		 */
		for (__u32 i = 0;; i++) {
			may_goto_break();
			if (i >= 4 * (__u64)cfg->depth || py_walk_frame(&w))
				break;
		}
	} else {
		bpf_loop(GB_PY_MAX_DEPTH, py_walk_frames, &w, 0);
	}
	n = w.n;
	if (!n)
		return 0;
	w.t->low = s->win_top - w.last < PY_LOW_REACH ? w.last : 0;
	key.id = w.hash ? w.hash : 1;
	sent = &w.t->sent[key.id & (PY_SENT_SLOTS - 1)];
	if (*sent == key.id)
		return key.id;
	if (bpf_map_lookup_elem(&py_seen, &key)) {
		*sent = key.id;
		return key.id;
	}
	s->st.type = GB_REC_PYSTACK;
	s->st.pid = tgid;
	s->st.id = key.id;
	s->st.depth = n;
	s->st.truncated = w.frame != 0;
	if (w.frame && cfg->code_adaptive != GB_PY_NONE) {
		/*
		 * 3.12+: a stack of exactly the depth stops at the shims every
		 * thread's stack begins with (owned by the C stack or the
		 * interpreter; 3.15 has two): left out only if a frame of
		 * Python code follows them
		 */
		__u64 frame = w.frame;

		for (int i = 0; i < 4 && frame; i++) {
			__u8 owner = 0;

			bpf_probe_read_user(&owner, 1, (void *)(frame + cfg->frame_owner));
			if (owner < 3)
				break;
			if (bpf_probe_read_user(&frame, 8, (void *)(frame + cfg->frame_prev)))
				break;
		}
		s->st.truncated = frame != 0;
	}
	s->st.sampled = sampled;
	if (n > GB_PY_MAX_DEPTH)
		return 0;
	asm volatile("" : "+r"(n));     /* keep the bound where the verifier sees it */
	/*
	 * Wake the reader at once: it names the frames from the process's
	 * memory, which must still be there.  New stacks are rare once a
	 * program runs its loop.
	 */
	if (bpf_ringbuf_output(&rb, &s->st, offsetof(struct gb_pystack, frames) +
			       n * sizeof(struct gb_py_frame), BPF_RB_FORCE_WAKEUP)) {
		count_drop(tgid);
		return 0;
	}
	bpf_map_update_elem(&py_seen, &key, &one, BPF_ANY);
	*sent = key.id;
	return key.id;
}

/*
 * py_stack_walk() in a scratch space of its own: the thread's for a
 * uprobe's program (uprobe), else a per-CPU slot.
 */
static __always_inline __u64 py_stack(__u32 tgid, int sampled, int uprobe)
{
	if (uprobe)
		return py_stack_walk(tgid, sampled, PY_OWN_SLOT);

	__u32 *depth = scratch_depth(NEST_PY), slot = scratch_take(depth);
	__u64 id = slot < SCRATCH_SLOTS ? py_stack_walk(tgid, sampled, slot) : 0;

	scratch_put(depth);
	return id;
}

/*
 * The calling thread's user-space stack, unwound by the kernel through
 * frame pointers; sent if this process has not been sent it yet.  Returns
 * its id, 0 when none could be read.  at_entry: ctx is a uprobe's at a
 * function's first instruction (else a CPU-clock sample's, anywhere).
 */
static __noinline __u64 native_stack_walk(struct pt_regs *ctx, __u32 tgid, int at_entry,
					  __u32 slot)
{
	struct py_seen_key key = { .tgid = tgid };
	__u64 h = 0x84222325cbf29ce4ULL, ret_addr = 0;
	struct native_scratch *s;
	__u32 n, shift = 0;
	__u8 one = 1;
	long got;

	s = bpf_map_lookup_elem(&native_scratch, &slot);
	if (!s)
		return 0;
	got = bpf_get_stack(ctx, s->raw, sizeof(s->raw), BPF_F_USER_STACK);
	if (got < 8)
		return 0;
	n = got / 8;
	/*
	 * At a function's entry its caller has not been linked into the frame
	 * chain: the caller's return address is at sp.  The kernel adds it
	 * only when the probed instruction is push %rbp or endbr64.
	 */
	if (at_entry)
		bpf_probe_read_user(&ret_addr, sizeof(ret_addr), (void *)PT_REGS_SP(ctx));
	s->st.addrs[0] = s->raw[0];
	if (ret_addr && (n < 2 || s->raw[1] != ret_addr)) {
		s->st.addrs[1] = ret_addr;
		shift = 1;
	}
	for (__u32 i = 1; i < GB_NATIVE_MAX_DEPTH; i++) {
		if (i >= n || i + shift >= GB_NATIVE_MAX_DEPTH)
			break;
		s->st.addrs[(i + shift) & (GB_NATIVE_MAX_DEPTH - 1)] = s->raw[i];
	}
	n += shift;
	if (n > GB_NATIVE_MAX_DEPTH)
		n = GB_NATIVE_MAX_DEPTH;
	for (__u32 i = 0; i < GB_NATIVE_MAX_DEPTH; i++) {
		if (i >= n)
			break;
		h = (h ^ s->st.addrs[i]) * 0x100000001b3ULL;
	}
	key.id = h ? h : 1;
	if (bpf_map_lookup_elem(&native_seen, &key))
		return key.id;
	s->st.type = GB_REC_NATIVE;
	s->st.pid = tgid;
	s->st.id = key.id;
	s->st.n = n;
	s->st.pad = 0;
	asm volatile("" : "+r"(n));     /* keep the bound where the verifier sees it */
	if (n > GB_NATIVE_MAX_DEPTH)
		return 0;
	/* woken at once: user space reads the process's maps while it runs */
	if (bpf_ringbuf_output(&rb, &s->st, offsetof(struct gb_native, addrs) + n * sizeof(__u64),
			       BPF_RB_FORCE_WAKEUP)) {
		count_drop(tgid);
		return 0;
	}
	bpf_map_update_elem(&native_seen, &key, &one, BPF_ANY);
	return key.id;
}

/* native_stack_walk() in a scratch slot of its own. */
static __always_inline __u64 native_stack(struct pt_regs *ctx, __u32 tgid, int at_entry)
{
	__u32 *depth = scratch_depth(NEST_NATIVE), slot = scratch_take(depth);
	__u64 id = slot < SCRATCH_SLOTS ? native_stack_walk(ctx, tgid, at_entry, slot) : 0;

	scratch_put(depth);
	return id;
}

/*
 * Fill the first n bytes of a call record at its entry (see gb_call_size();
 * n is a constant wherever this is inlined, so the verifier sees every
 * access inside the record).
 */
static __always_inline void fill_entry(struct gb_call *c, __u32 n, struct pt_regs *ctx,
				       __u64 ck, __u64 pid_tgid, int python)
{
	c->type = GB_REC_CALL;
	c->call_id = GB_CK_ID(ck);
	c->pid = pid_tgid >> 32;
	c->tid = (__u32)pid_tgid;
	c->ts_entry = bpf_ktime_get_ns();
	c->arg[0] = PT_REGS_PARM1(ctx);
	c->arg[1] = PT_REGS_PARM2(ctx);
	c->arg[2] = PT_REGS_PARM3(ctx);
	c->arg[3] = PT_REGS_PARM4(ctx);
	c->arg[4] = PT_REGS_PARM5(ctx);
	c->arg[5] = ctx->r9; /* PT_REGS_PARM6 is missing from libbpf 1.1 */
	c->pystack = python ? py_stack(c->pid, 0, 1) : 0;
	c->nstack = native_stacks ? native_stack(ctx, c->pid, 1) : 0;
	if (n < GB_CALL_STK)
		return;
	if (!(ck & GB_CK_STACK)) {
		__builtin_memset(c->stk, 0, sizeof(c->stk));
	} else {
		__u64 stk[GB_NSTACK];

		/*
		 * Read onto the program's stack, then copied into the record:
		 * a read into a map's memory (the call rings' included) costs
		 * more (bench section 15), ~55 ns a launch where calls are
		 * dear.  The helper zeroes what it cannot read.
		 */
		bpf_probe_read_user(stk, sizeof(stk), (void *)(PT_REGS_SP(ctx) + 8));
		__builtin_memcpy(c->stk, stk, sizeof(stk));
	}
	if (n < GB_CALL_RET)
		return;
	c->ts_return = 0;
	c->ret = 0;
	c->out = 0;
	if (n < sizeof(*c))
		return;
	__builtin_memset(c->ext, 0, sizeof(c->ext));
	read_deref(c, GB_CK_DEREF(ck));
}

/*
 * An entry-only call's record of n bytes (a constant, a multiple of 8)
 * into this CPU's call ring: 1 if written, 0 if the ring is busy or full.
 */
static __always_inline int cring_emit(__u32 n, struct pt_regs *ctx, __u64 ck, __u64 pid_tgid,
				      int python)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct gb_cring *r = bpf_map_lookup_elem(&cpu_rings, &cpu);
	__u64 prod, cons, pos, skip = 0, unread;
	__u64 need = (n + GB_CRING_ALIGN - 1) & ~(GB_CRING_ALIGN - 1ULL);
	struct gb_call *c;
	char *data;

	if (!r || __sync_lock_test_and_set(&r->busy, 1))
		return 0;
	prod = r->prod;                 /* only this CPU's programs write it, one at a time */
	cons = r->cons_seen;
	pos = prod & cring_mask;
	if (pos + need > cring_mask + 1)
		skip = cring_mask + 1 - pos;    /* no room before the end: go on at the start */
	unread = prod + skip + need - cons;
	if (unread > cring_mask + 1) {
		/* full by the last look at what the recorder read: look again */
		cons = *(volatile __u64 *)&r->cons;
		r->cons_seen = cons;
		unread = prod + skip + need - cons;
		if (unread > cring_mask + 1) {
			r->busy = 0;
			return 0;
		}
	}
	data = (char *)r + GB_CRING_HEAD;
	if (skip) {
		*(__u32 *)(data + (pos & cring_mask)) = GB_CRING_WRAP;
		pos = 0;
	}
	c = (void *)(data + (pos & cring_mask));
	fill_entry(c, n, ctx, ck, pid_tgid, python);
	c->type = GB_CRING_WORD(GB_REC_CALL, n);        /* fill_entry's, with the length */
	/* the record before the position that shows it (gpubpf.h) */
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&r->prod = prod + skip + need;
	r->busy = 0;
	if (wake_crossed(unread, skip + need, cring_wake_shift)) {
		__u32 kick = GB_REC_KICK;

		bpf_ringbuf_output(&rb, &kick, sizeof(kick), BPF_RB_FORCE_WAKEUP);
	}
	return 1;
}

/*
 * An entry-only call: its record of n bytes (a constant) into this CPU's
 * call ring, else straight into the shared ring.
 */
static __always_inline int emit_entry(__u32 n, struct pt_regs *ctx, __u64 ck, __u64 pid_tgid,
				      int python)
{
	struct gb_call *c;

	if (crings_on && cring_emit(n, ctx, ck, pid_tgid, python))
		return 0;
	c = bpf_ringbuf_reserve(&rb, n, 0);
	if (!c) {
		count_drop(pid_tgid >> 32);
		return 0;
	}
	fill_entry(c, n, ctx, ck, pid_tgid, python);
	bpf_ringbuf_submit(c, wake_flags(n, 1));
	return 0;
}

static __always_inline int on_entry(struct pt_regs *ctx)
{
	__u64 ck = bpf_get_attach_cookie(ctx);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, slot, *depth;
	struct gb_call *c;
	__u32 flags = pid_flags(tgid);
	int python = flags & GB_PID_PYTHON;
	__u64 key = 0;

	if (filter_pids && !(flags & GB_PID_TRACED))
		return 0;
	if (!(ck & GB_CK_RET)) {
		if (GB_CK_DEREF(ck))
			return emit_entry(sizeof(*c), ctx, ck, pid_tgid, python);
		if (ck & GB_CK_STACK)
			return emit_entry(GB_CALL_STK, ctx, ck, pid_tgid, python);
		return emit_entry(GB_CALL_HEAD, ctx, ck, pid_tgid, python);
	}
	/* the whole record waits for the return in "inflight" */
	depth = scratch_depth(NEST_CALL);
	slot = scratch_take(depth);
	c = slot < SCRATCH_SLOTS ? bpf_map_lookup_elem(&scratch, &slot) : NULL;
	if (c) {
		fill_entry(c, sizeof(*c), ctx, ck, pid_tgid, python);
		key = (pid_tgid << 32) | GB_CK_ID(ck);
	}
	/* no slot, or the in-flight map full: the call is lost, and counted as such */
	if (!c || bpf_map_update_elem(&inflight, &key, c, BPF_ANY))
		count_drop(tgid);
	scratch_put(depth);
	return 0;
}

static __always_inline void emit_name(__u32 tgid, __u64 handle, const char *str)
{
	struct gb_name *n = bpf_ringbuf_reserve(&rb, sizeof(*n), 0);

	if (!n) {
		count_drop(tgid);
		return;
	}
	n->type = GB_REC_NAME;
	n->pid = tgid;
	n->handle = handle;
	if (bpf_probe_read_user_str(n->name, sizeof(n->name), str) < 0)
		n->name[0] = 0;
	bpf_ringbuf_submit(n, wake_flags(sizeof(*n), 1));
}

/* c->arg[i] through constant indices only: the verifier rejects variable ones */
static __always_inline __u64 reg_arg(const struct gb_call *c, __u32 i)
{
	switch (i) {
	case 0: return c->arg[0];
	case 1: return c->arg[1];
	case 2: return c->arg[2];
	case 3: return c->arg[3];
	case 4: return c->arg[4];
	case 5: return c->arg[5];
	}
	return 0;
}

static __always_inline int on_return(struct pt_regs *ctx)
{
	__u64 ck = bpf_get_attach_cookie(ctx);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 key = (pid_tgid << 32) | GB_CK_ID(ck);
	__u32 tgid = pid_tgid >> 32, out = GB_CK_OUT(ck), n;
	struct gb_call *c;

	c = bpf_map_lookup_elem(&inflight, &key);
	if (!c)
		return 0;
	c->ts_return = bpf_ktime_get_ns();
	c->ret = PT_REGS_RC(ctx);
	if (out)                /* onto the stack: see fill_entry() */
		c->out = read_u64(reg_arg(c, out - 1));
	if (c->ret == 0) {
		if (ck & GB_CK_NAME_ARG2)
			emit_name(tgid, c->out, (const char *)c->arg[2]);
		else if (ck & GB_CK_NAME_OUT)
			emit_name(tgid, c->arg[1], (const char *)c->out);
	}
	n = gb_call_size(ck);
	if (n > sizeof(*c))
		n = sizeof(*c);
	if (bpf_ringbuf_output(&rb, c, n, wake_flags(n, 0)))
		count_drop(tgid);
	bpf_map_delete_elem(&inflight, &key);
	return 0;
}

/*
 * PyTorch's autograd nodes (struct gb_node), from probes on libtorch:
 * which node the engine runs when a thread makes a driver call, and the
 * Python line that created it.  The Node's vtable pointer and sequence
 * number are read here; its class name is read once per vtable by user
 * space.
 */
static __always_inline int emit_node(struct pt_regs *ctx, __u32 kind, __u64 node)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u64 vtable = 0, seq = 0, stack = 0;
	struct gb_node *r;

	if (!traced(tgid))
		return 0;
	if (kind != GB_NODE_DONE &&
	    (!node || bpf_probe_read_user(&vtable, sizeof(vtable), (void *)node) ||
	     bpf_probe_read_user(&seq, sizeof(seq), (void *)(node + GB_NODE_SEQ_OFF))))
		return 0;
	if (kind == GB_NODE_MADE && (pid_flags(tgid) & GB_PID_PYTHON))
		stack = py_stack(tgid, 1, 1);
	r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count_drop(tgid);
		return 0;
	}
	r->type = GB_REC_NODE;
	r->pid = tgid;
	r->tid = (__u32)pid_tgid;
	r->kind = kind;
	r->ts = bpf_ktime_get_ns();
	r->node = node;
	r->vtable = vtable;
	r->seq = seq;
	r->sp = PT_REGS_SP(ctx);
	r->pystack = stack;
	bpf_ringbuf_submit(r, wake_flags(sizeof(*r), 1));
	return 0;
}

/* set_gradient_edge(const Variable &, Edge edge): edge (by reference) starts
 * with its shared_ptr<Node>, whose first word is the Node */
SEC("uprobe")
int gb_node_made(struct pt_regs *ctx)
{
	__u64 node = 0;

	bpf_probe_read_user(&node, sizeof(node), (void *)PT_REGS_PARM2(ctx));
	return emit_node(ctx, GB_NODE_MADE, node);
}

/* Engine::evaluate_function(this, shared_ptr<GraphTask> &, Node *func, ...) */
SEC("uprobe")
int gb_node_run(struct pt_regs *ctx)
{
	return emit_node(ctx, GB_NODE_RUN, PT_REGS_PARM3(ctx));
}

SEC("uretprobe")
int gb_node_done(struct pt_regs *ctx)
{
	return emit_node(ctx, GB_NODE_DONE, 0);
}

/*
 * Each probe exists twice: the _multi programs are attached with one
 * uprobe_multi link per library (kernel 6.6+: fast to attach and detach);
 * the others one perf-event link per entry point, on older kernels.
 */
SEC("uprobe")
int gb_entry(struct pt_regs *ctx)
{
	return on_entry(ctx);
}

SEC("uprobe")
int gb_entry_multi(struct pt_regs *ctx)
{
	return on_entry(ctx);
}

SEC("uretprobe")
int gb_return(struct pt_regs *ctx)
{
	return on_return(ctx);
}

SEC("uretprobe")
int gb_return_multi(struct pt_regs *ctx)
{
	return on_return(ctx);
}

/* The injection library's markers (cupti/publish.c). */
/* A batch of nrecs GPU records; losing it loses them all, and says so. */
SEC("usdt")
int BPF_USDT(gb_gpu_batch, const void *buf, __u64 len, __u64 nrecs)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, slot, *depth;
	struct gb_gpu *g;

	if (!traced(tgid))
		return 0;
	depth = scratch_depth(NEST_GPU);
	slot = scratch_take(depth);
	g = slot < SCRATCH_SLOTS ? bpf_map_lookup_elem(&gpu_scratch, &slot) : NULL;
	if (!g || !len || len > GB_GPU_BATCH_MAX) {
		count_drops(tgid, nrecs);
		scratch_put(depth);
		return 0;
	}
	g->type = GB_REC_GPU;
	g->pid = tgid;
	g->tid = (__u32)pid_tgid;
	g->len = len;
	g->ts = bpf_ktime_get_ns();
	if (bpf_probe_read_user(g->data, len & (GB_GPU_BATCH_MAX * 2 - 1) & ~0ULL, buf) ||
	    bpf_ringbuf_output(&gpu_rb, g, offsetof(struct gb_gpu, data) + (len & (GB_GPU_BATCH_MAX * 2 - 1)),
			       ring_wake_flags(&gpu_rb, gpu_wake_shift,
					       offsetof(struct gb_gpu, data) + len, 0)))
		count_drops(tgid, nrecs);
	scratch_put(depth);
	return 0;
}

/* The api marker's error site: the call failed with result. */
static __always_inline int api_error(__u64 pid_tgid, __u32 correlation, __u32 cbid, long result)
{
	__u32 tgid = pid_tgid >> 32;
	struct gb_apierr *e;

	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		count_drop(tgid);
		return 0;
	}
	e->type = GB_REC_APIERR;
	e->pid = tgid;
	e->tid = (__u32)pid_tgid;
	e->correlation = correlation;
	e->ts = bpf_ktime_get_ns();
	e->cbid = cbid;
	e->result = (__s32)result;
	bpf_ringbuf_submit(e, wake_flags(sizeof(*e), 1));
	return 0;
}

/*
 * Two sites: at a call's entry (correlation, cbid), and as a failing call
 * returns (correlation, cbid, result).
 */
SEC("usdt")
int BPF_USDT(gb_gpu_api, __u32 correlation, __u32 cbid)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct gb_corr *c;
	long result = 0;

	if (!traced(tgid))
		return 0;
	if (bpf_usdt_arg_cnt(ctx) >= 3 && !bpf_usdt_arg(ctx, 2, &result))
		return api_error(pid_tgid, correlation, cbid, result);
	c = bpf_ringbuf_reserve(&rb, sizeof(*c), 0);
	if (!c) {
		count_drop(tgid);
		return 0;
	}
	c->type = GB_REC_CORR;
	c->pid = tgid;
	c->tid = (__u32)pid_tgid;
	c->correlation = correlation;
	c->ts = bpf_ktime_get_ns();
	c->cbid = cbid;
	c->pad = 0;
	bpf_ringbuf_submit(c, wake_flags(sizeof(*c), 1));
	return 0;
}

/*
 * CPython frees a code object (the tp_dealloc of PyCode_Type, attached by
 * user space for each interpreter it walks): in a process whose stacks are
 * walked, the code tokens its threads' walks remember may be of that code
 * object, and a new one can come at its address (py_ident_slot).  A free
 * before the process's layout is in py_procs cannot matter: no walk of it
 * has remembered anything.
 */
SEC("uprobe")
int gb_py_code_free(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (bpf_map_lookup_elem(&py_procs, &tgid))
		__sync_fetch_and_add(&py_procs_gen, 1);
	return 0;
}

/*
 * A process traced, or whose Python stacks are walked, execs (struct
 * gb_exec): the layout of its old interpreter goes, before any call of the
 * new program can be walked with it.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(gb_exec, struct task_struct *task)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, flags = pid_flags(tgid);
	struct gb_exec *e;
	__u8 one = 1;

	if (!flags)
		return 0;
	if (flags & GB_PID_PYTHON) {
		__sync_fetch_and_and(&pid_bits[pid_word(tgid)], ~(GB_PID_PYTHON << GB_PID_SHIFT(tgid)));
		bpf_map_delete_elem(&py_procs, &tgid);
		__sync_fetch_and_add(&py_procs_gen, 1);
	}
	if (hold_exec)
		bpf_map_update_elem(&execed, &tgid, &one, BPF_ANY);
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		count_drop(tgid);
		return 0;
	}
	e->type = GB_REC_EXEC;
	e->pid = tgid;
	e->ts = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * A thread of a traced process exits: its name, for user space (struct
 * gb_exit), also sent for threads of untraced processes once every thread
 * of theirs counted out.  The last one of a traced process: what is known
 * of the process by its pid is forgotten (its pid may be the next
 * process's, after pid_max, 32768 on small machines, processes), but for
 * its exec hold, which is forgotten as its first thread exits.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(gb_exit, struct task_struct *task)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct gb_exit *e;
	int ended, was_traced = traced(tgid);

	/* do_exit() counts the thread out before this tracepoint: a thread
	 * that gets here after the one that counted out last and forgot the
	 * process is the same process's (its pid is not free before all
	 * its threads are gone): user space keeps what it knows of a pid's
	 * process, exits of processes it never saw are dropped there */
	ended = !BPF_CORE_READ(task, signal, live.counter);
	if (!was_traced && !ended)
		return 0;
	if (hold_exec && (__u32)pid_tgid == tgid)       /* the process ends */
		bpf_map_delete_elem(&execed, &tgid);
	if (ended && was_traced && tgid < GB_PID_LIMIT) {
		if (pid_flags(tgid) & GB_PID_PYTHON) {
			bpf_map_delete_elem(&py_procs, &tgid);
			__sync_fetch_and_add(&py_procs_gen, 1);
		}
		__sync_fetch_and_and(&pid_bits[pid_word(tgid)],
				     ~((GB_PID_TRACED | GB_PID_PYTHON) << GB_PID_SHIFT(tgid)));
	}
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		if (was_traced)
			count_drop(tgid);
		return 0;
	}
	e->type = GB_REC_EXIT;
	e->pid = tgid;
	e->tid = (__u32)pid_tgid;
	e->ended = ended;
	e->ts = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, wake_flags(sizeof(*e), 1));
	return 0;
}

/*
 * A traced process maps a file executable: when it is a libcuda that no
 * probe covers yet, tell user space and stop the process.  SIGSTOP is delivered on the
 * way back from this mmap call, so the mapping is made, and the
 * dynamic loader has neither relocated the library nor run its
 * constructors: no call into it can have happened.  User space attaches
 * the probes (they cover existing mappings of the file too), adds the file
 * to libs_known and sends SIGCONT.
 */
#define GB_SIGSTOP 19
#define GB_PROT_EXEC 4
#define LIBCUDA_PREFIX "libcuda.so"

/*
 * A process that leads a process group inside another's session is how
 * an interactive shell runs a job: that shell would see the stop (waitpid
 * WUNTRACED), report the job stopped and take the terminal back, so such
 * a process is not stopped.  (Session leaders, made by setsid, are no
 * shell's jobs.)
 */
static __always_inline int shell_job(__u32 tgid)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct signal_struct *sig = BPF_CORE_READ(task, signal);
	struct pid *pg = NULL, *sid = NULL;

	bpf_core_read(&pg, sizeof(pg), &sig->pids[GB_PIDTYPE_PGID]);
	bpf_core_read(&sid, sizeof(sid), &sig->pids[GB_PIDTYPE_SID]);
	return pg && sid && BPF_CORE_READ(pg, numbers[0].nr) == (int)tgid &&
	       BPF_CORE_READ(sid, numbers[0].nr) != (int)tgid;
}

/*
 * When the recorder was last seen running (CLOCK_MONOTONIC ns, set by user
 * space through the skeleton's mapping: by its collector before each poll
 * and by its reader thread at each wake, at least every 100 ms, while the
 * collector shows life).  A process is stopped at its libcuda mapping only
 * while the recorder is seen alive, so a recorder that is itself stopped
 * (Ctrl-Z) or hung stops nobody.
 */
#define RECORDER_ALIVE_NS 1000000000ULL
__u64 recorder_alive_ns;

/*
 * Stop the current process (SIGSTOP, from inside the program: it stops
 * before it runs on) for user space to let go with SIGCONT once it has
 * read the record saying so: an enum gb_held.  Not a job of an
 * interactive shell (the shell would take the stop for ^Z), not one being
 * debugged, and not while the recorder is away.
 */
static __always_inline __u32 hold_current(__u32 tgid, __u64 now)
{
	if (shell_job(tgid))
		return GB_SHELL_JOB;
	if (BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), ptrace))
		return GB_PTRACED;
	/* signed: a heartbeat stored after now was read (another CPU) is fresh, not 584 years old */
	if ((__s64)(now - recorder_alive_ns) > (__s64)RECORDER_ALIVE_NS)
		return GB_RECORDER_AWAY;
	/* noted first: the keeper must know of every stop */
	if (bpf_map_update_elem(&held, &tgid, &now, BPF_ANY))
		return GB_NOT_HELD;
	if (!bpf_send_signal_thread(GB_SIGSTOP))
		return GB_HELD;
	bpf_map_delete_elem(&held, &tgid);
	return GB_NOT_HELD;
}

/* syscalls:sys_enter_mmap, as the tracepoint's format file lays it out */
struct mmap_args {
	__u64 common;
	__s64 nr;
	__u64 addr, len, prot, flags, fd, off;
};

SEC("tracepoint/syscalls/sys_enter_mmap")
int gb_mmap(struct mmap_args *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct gb_lib_key key = {};
	char name[sizeof(LIBCUDA_PREFIX)] = {};
	struct task_struct *task;
	struct fdtable *fdt;
	struct file *file = NULL, **fds;
	struct gb_map *m;
	__u64 one = 1, *n;
	int exec_new;

	/* the loader maps a library's code executable; readers of the file do not */
	if (!(ctx->prot & GB_PROT_EXEC) || (__s64)ctx->fd < 0 || tgid == self_tgid ||
	    !traced(tgid))
		return 0;
	task = (void *)bpf_get_current_task();
	fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || ctx->fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&file, sizeof(file), &fds[ctx->fd]);
	if (!file)
		return 0;
	bpf_probe_read_kernel(name, sizeof(name) - 1, BPF_CORE_READ(file, f_path.dentry, d_name.name));
	for (int i = 0; i < (int)sizeof(LIBCUDA_PREFIX) - 1; i++)
		if (name[i] != LIBCUDA_PREFIX[i])
			return 0;
	key.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	key.ino = BPF_CORE_READ(file, f_inode, i_ino);
	/*
	 * hold_each: user space wants each process once (to find its Python);
	 * a process that ran a new program, again
	 */
	exec_new = hold_exec && bpf_map_lookup_elem(&execed, &tgid);
	if (!hold_each && !exec_new && bpf_map_lookup_elem(&libs_known, &key))
		return 0;
	key.pid = tgid;
	if (!exec_new && bpf_map_lookup_elem(&libs_known, &key))
		return 0;
	bpf_map_delete_elem(&execed, &tgid);
	m = bpf_ringbuf_reserve(&rb, sizeof(*m), 0);
	if (m) {
		m->type = GB_REC_MAP;
		m->pid = tgid;
		m->tid = (__u32)pid_tgid;
		m->ts = bpf_ktime_get_ns();
		m->dev = key.dev;
		m->ino = key.ino;
		bpf_probe_read_kernel_str(m->name, sizeof(m->name),
					  BPF_CORE_READ(file, f_path.dentry, d_name.name));
		m->held = hold_current(tgid, m->ts);
		bpf_ringbuf_submit(m, BPF_RB_FORCE_WAKEUP);
		return 0;
	}
	/* not held, and user space does not know: count it */
	count_drop(tgid);
	n = bpf_map_lookup_elem(&unheld, &tgid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&unheld, &tgid, &one, BPF_NOEXIST);
	return 0;
}

/* Set by user space: 1 while it reads records, so that gb_end may hold. */
__u32 hold_ends;

/*
 * The interpreter's Py_FinalizeEx and libc's _exit, in a process whose
 * Python stacks are walked (struct gb_end): held there until user space
 * has named the stacks it sent before, from its memory.  A record that
 * cannot be sent holds nothing (its stacks may then read "?").
 */
SEC("uprobe")
int gb_end(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct gb_end *e;

	if (!hold_ends || !(pid_flags(tgid) & GB_PID_PYTHON) || !traced(tgid))
		return 0;
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	e->type = GB_REC_END;
	e->pid = tgid;
	e->tid = (__u32)pid_tgid;
	e->ts = bpf_ktime_get_ns();
	e->held = hold_current(tgid, e->ts);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * -- CMD: when the kernel last generated each signal for the command
 * (cmd_tgid, set by user space), CLOCK_MONOTONIC ns.  A signal that ends
 * the recording is passed on to the command only if the kernel did not
 * send it that signal too (the terminal's Ctrl-C, a process group's kill).
 */
__u32 cmd_tgid;
__u64 cmd_signal_ns[GB_NSIG];

SEC("tp_btf/signal_generate")
int BPF_PROG(gb_signal, int sig, void *info, struct task_struct *task,
	     int group, int result)
{
	if (!cmd_tgid || task->tgid != (int)cmd_tgid || sig <= 0 || sig >= GB_NSIG)
		return 0;
	cmd_signal_ns[sig] = bpf_ktime_get_ns();
	return 0;
}

/* The child of a process whose stacks are walked gets its layout (struct gb_fork). */
static __always_inline void py_fork(__u32 ptgid, __u32 ctgid)
{
	struct gb_py_config *cfg = bpf_map_lookup_elem(&py_procs, &ptgid);
	struct gb_fork *f;

	if (!cfg || bpf_map_update_elem(&py_procs, &ctgid, cfg, BPF_ANY))
		return;
	__sync_fetch_and_or(&pid_bits[pid_word(ctgid)], GB_PID_PYTHON << GB_PID_SHIFT(ctgid));
	__sync_fetch_and_add(&py_procs_gen, 1);
	f = bpf_ringbuf_reserve(&rb, sizeof(*f), 0);
	if (!f) {
		count_drop(ctgid);
		return;
	}
	f->type = GB_REC_FORK;
	f->pid = ctgid;
	f->parent = ptgid;
	f->pad = 0;
	f->ts = bpf_ktime_get_ns();
	bpf_ringbuf_submit(f, 0);
}

/*
 * A process forks (in the parent, before the child runs).  -- CMD: a
 * traced process's child is traced too (-p: only the pids given; -a:
 * every process is).  A traced child of a process whose stacks are walked
 * is walked from its first call: a worker that makes a few calls and
 * ends had none walked while user space looked for its Python.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(gb_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid, pflags = pid_flags(ptgid);

	if (ptgid == ctgid || ctgid >= GB_PID_LIMIT || !(pflags || !filter_pids))
		return 0;
	if (filter_pids) {
		if (!follow_forks || !(pflags & GB_PID_TRACED))
			return 0;
		__sync_fetch_and_or(&pid_bits[pid_word(ctgid)],
				    GB_PID_TRACED << GB_PID_SHIFT(ctgid));
	}
	if (pflags & GB_PID_PYTHON)
		py_fork(ptgid, ctgid);
	return 0;
}

/*
 * Thread states (struct gb_state): a record as a thread of a traced
 * process is switched in, switched out (preempted, blocked, or dead), and
 * woken.  Attached only with record --states.
 */
#define GB_ENOSYS 38
#define GB_NR_FUTEX 202
#define GB_TASK_DEAD 0x80

/* record -a marks the processes it finds traced too: never all of them here */
static __always_inline int state_traced(__u32 tgid)
{
	return tgid != self_tgid && (pid_flags(tgid) & GB_PID_TRACED);
}

static __always_inline void emit_state(__u32 tgid, __u32 tid, __u32 state, __u64 ts,
				       __s32 nr, __u32 holder, __u64 pystack)
{
	struct gb_state *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);

	if (!s) {
		count_drop(tgid);
		return;
	}
	s->type = GB_REC_STATE;
	s->pid = tgid;
	s->tid = tid;
	s->state = state;
	s->ts = ts;
	s->syscall = nr;
	s->holder = holder;
	s->pystack = pystack;
	bpf_ringbuf_submit(s, wake_flags(sizeof(*s), 1));
}

/*
 * The interpreter of the current thread, t its storage: the one whose
 * thread list holds its state (py_thread_state()), else the newest.
 */
static __always_inline __u64 py_interp(const struct gb_py_config *cfg, const struct py_thread *t)
{
	return t && t->interp ? t->interp : read_u64(cfg->runtime + cfg->interp_head);
}

/*
 * The address of the GIL (struct _gil_runtime_state) of the current
 * thread's interpreter, t its storage; 0 if unknown.  3.12+: each
 * interpreter has its own (a subinterpreter made to share the main one's
 * leaves its own unused).
 */
static __always_inline __u64 gil_addr(const struct gb_py_config *cfg, const struct py_thread *t)
{
	__u64 base = cfg->runtime;

	if (!cfg->gil)
		return 0;
	if (cfg->gil_in_interp)
		base = py_interp(cfg, t);
	return base ? base + cfg->gil : 0;
}

/*
 * The GIL's holder when the current thread, self, blocks on a futex at
 * uaddr in its process's GIL: the holder's tid, or 0 when the interpreter
 * does not say (3.6-3.10 keep no native thread id), or names self (the
 * thread that took the GIL has not yet recorded itself as its last
 * holder); -1 when uaddr is not the GIL.
 */
static __always_inline long gil_holder(__u32 tgid, __u32 self, __u64 uaddr)
{
	struct gb_py_config *cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	__u64 gil, holder;
	__u32 tid = 0;

	if (!cfg)
		return -1;
	gil = gil_addr(cfg, bpf_task_storage_get(&py_threads, bpf_get_current_task_btf(), NULL, 0));
	if (!gil || uaddr < gil || uaddr >= gil + GB_PY_GIL_SIZE)
		return -1;
	holder = read_u64(gil + cfg->gil_holder);
	if (holder && cfg->tstate_native_tid != GB_PY_NONE) {
		bpf_probe_read_user(&tid, sizeof(tid), (void *)(holder + cfg->tstate_native_tid));
	} else if (holder) {
		/* 3.6-3.10: the holder's pthread_self(), to its tid */
		struct fsbase_key key = { .tgid = tgid };
		__u32 *t;

		key.fsbase = read_u64(holder + cfg->tstate_thread_id);
		t = key.fsbase ? bpf_map_lookup_elem(&py_fsbase, &key) : NULL;
		tid = t ? *t : 0;
	}
	return tid == self ? 0 : tid;
}

/*
 * Thread task of Python process tgid runs: remember its tid by its fsbase
 * where the interpreter names threads by that only (3.6-3.10; py_fsbase).
 */
static __always_inline void note_fsbase(struct task_struct *task, __u32 tgid)
{
	struct fsbase_key key = { .tgid = tgid };
	struct gb_py_config *cfg;
	__u32 tid = task->pid, *known;

	if (!py_fsbase_on || !(pid_flags(tgid) & GB_PID_PYTHON))
		return;
	cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!cfg || cfg->tstate_native_tid != GB_PY_NONE)
		return;
	key.fsbase = task->thread.fsbase;
	known = bpf_map_lookup_elem(&py_fsbase, &key);
	if (!known || *known != tid)
		bpf_map_update_elem(&py_fsbase, &key, &tid, BPF_ANY);
}

/*
 * GB_SAMPLE_GC when the current thread, of Python process tgid, runs the
 * garbage collector: its interpreter's gc.collecting is set and the thread
 * holds the GIL (is its last holder: the collector runs with the GIL, and
 * other threads may run C code meanwhile).  After py_stack(), which found
 * the thread's PyThreadState.
 */
static __always_inline __u32 sample_flags(__u32 tgid)
{
	struct gb_py_config *cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_thread *t;
	__u64 interp, gil;
	__u32 collecting = 0;

	if (!cfg || cfg->gc_collecting == GB_PY_NONE)
		return 0;
	t = bpf_task_storage_get(&py_threads, bpf_get_current_task_btf(), NULL, 0);
	interp = cfg->gc_in_runtime ? cfg->runtime : py_interp(cfg, t);
	if (!interp ||
	    bpf_probe_read_user(&collecting, sizeof(collecting), (void *)(interp + cfg->gc_collecting)) ||
	    !collecting)
		return 0;
	gil = gil_addr(cfg, t);
	if (!t || !t->tstate || !gil)
		return 0;
	return read_u64(gil + cfg->gil_holder) == t->tstate ? GB_SAMPLE_GC : 0;
}

/* The current thread, prev, leaves its CPU: why. */
static __always_inline void switched_out(struct task_struct *prev, __u32 tgid,
					 unsigned int prev_state, __u64 now)
{
	struct pt_regs___gb *regs;
	long nr = -1, holder;
	__u64 pystack = 0;

	if (!prev_state) {
		emit_state(tgid, prev->pid, GB_ST_RUNNABLE, now, -1, 0, 0);
		return;
	}
	if (prev_state & GB_TASK_DEAD) {
		emit_state(tgid, prev->pid, GB_ST_EXIT, now, -1, 0, 0);
		return;
	}
	regs = (struct pt_regs___gb *)bpf_task_pt_regs(prev);
	if (regs && (long)BPF_CORE_READ(regs, ax) == -GB_ENOSYS)
		nr = BPF_CORE_READ(regs, orig_ax);
	/* the Python line it blocks in (this runs in prev's context) */
	if (pid_flags(tgid) & GB_PID_PYTHON)
		pystack = py_stack(tgid, 1, 0);
	if (nr == GB_NR_FUTEX && (pid_flags(tgid) & GB_PID_PYTHON)) {
		holder = gil_holder(tgid, prev->pid, BPF_CORE_READ(regs, di));
		if (holder >= 0) {
			emit_state(tgid, prev->pid, GB_ST_GIL, now, nr, holder, pystack);
			return;
		}
	}
	emit_state(tgid, prev->pid, GB_ST_BLOCKED, now, nr, 0, pystack);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(gb_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 ptgid = prev->tgid, ntgid = next->tgid;
	__u64 now;

	if (!state_traced(ptgid) && !state_traced(ntgid))
		return 0;
	now = bpf_ktime_get_ns();
	if (state_traced(ptgid))
		switched_out(prev, ptgid, prev_state, now);
	if (state_traced(ntgid)) {
		emit_state(ntgid, next->pid, GB_ST_RUNNING, now, -1, 0, 0);
		note_fsbase(next, ntgid);
	}
	return 0;
}

static __always_inline int woken(struct task_struct *p)
{
	__u32 tgid = p->tgid;

	if (state_traced(tgid))
		emit_state(tgid, p->pid, GB_ST_WOKEN, bpf_ktime_get_ns(), -1, 0, 0);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(gb_wakeup, struct task_struct *p)
{
	return woken(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(gb_wakeup_new, struct task_struct *p)
{
	return woken(p);
}

/*
 * The current thread is in a system call (futex, write...: how a thread
 * wakes another), not interrupted in user code by a timer or a device,
 * whose wakes are nobody's.  (An interrupt that comes while the thread
 * runs a system call on its CPU is not told apart.)
 */
static __always_inline int in_syscall(void)
{
	struct pt_regs___gb *regs;

	regs = (struct pt_regs___gb *)bpf_task_pt_regs(bpf_get_current_task_btf());
	return regs && (long)BPF_CORE_READ(regs, ax) == -GB_ENOSYS &&
	       (long)BPF_CORE_READ(regs, orig_ax) >= 0;
}

/*
 * Wakes (struct gb_wake), for the calls of threads that run no Python
 * (an autograd engine's, a C++ worker pool's): a thread of a traced
 * Python process wakes another thread of the same process, which the
 * woken one then works for.  sched_waking runs in the waker's context
 * (sched_wakeup may run on the wakee's CPU, in whoever is there), so the
 * waker's Python stack is walked here, when the waker is in a system
 * call: a wake from an interrupt (a timer, I/O) is nobody's.  Attached with
 * Python stacks on.  Wakes between processes, of untraced or non-Python
 * processes, and of a thread in Python code (it has its own stacks: GIL
 * hand-offs) cost a few loads and compares.  A thread with a thread state
 * but no frame runs no Python: PyTorch's autograd threads keep one so that
 * hooks can run on them.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(gb_waking, struct task_struct *p)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = p->tgid, waker = (__u32)pid_tgid;
	struct gb_py_config *cfg;
	struct py_thread *t;
	struct gb_wake *w;
	__u64 stack;

	if (pid_tgid >> 32 != tgid || waker == (__u32)p->pid ||
	    !(pid_flags(tgid) & GB_PID_PYTHON) || !state_traced(tgid) || !in_syscall())
		return 0;
	t = bpf_task_storage_get(&py_threads, p, NULL, 0);
	cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	/* the woken thread's memory is the waker's: one process */
	if (t && t->tstate && cfg && py_top_frame(cfg, t->tstate))
		return 0;
	stack = py_stack(tgid, 1, 0);
	w = bpf_ringbuf_reserve(&rb, sizeof(*w), 0);
	if (!w) {
		count_drop(tgid);
		return 0;
	}
	w->type = GB_REC_WAKE;
	w->pid = tgid;
	w->tid = p->pid;
	w->waker = waker;
	w->ts = bpf_ktime_get_ns();
	w->pystack = stack;
	bpf_ringbuf_submit(w, wake_flags(sizeof(*w), 1));
	return 0;
}

/*
 * CPU-clock samples (struct gb_sample), one perf event per CPU at record
 * --sample-hz: a thread of a traced process on the CPU, with its Python
 * stack, its native stack (--stack native) and whether it runs the garbage
 * collector.
 */
SEC("perf_event")
int gb_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct gb_sample *s;
	__u64 stack = 0, nstack = 0;
	__u32 flags = 0;

	if (!state_traced(tgid))
		return 0;
	if (pid_flags(tgid) & GB_PID_PYTHON) {
		stack = py_stack(tgid, 1, 0);
		flags = sample_flags(tgid);
		note_fsbase(bpf_get_current_task_btf(), tgid);
	}
	if (native_stacks)
		nstack = native_stack((struct pt_regs *)ctx, tgid, 0);
	s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);
	if (!s) {
		count_drop(tgid);
		return 0;
	}
	s->type = GB_REC_SAMPLE;
	s->pid = tgid;
	s->tid = (__u32)pid_tgid;
	s->cpu = bpf_get_smp_processor_id();
	s->ts = bpf_ktime_get_ns();
	s->pystack = stack;
	s->nstack = nstack;
	s->flags = flags;
	s->pad = 0;
	bpf_ringbuf_submit(s, wake_flags(sizeof(*s), 1));
	return 0;
}
