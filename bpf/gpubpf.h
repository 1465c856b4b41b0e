/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Records shared by the BPF programs (bpf/cuda.bpf.c) and the collector
 * (user/record/collector.c).  Every record starts with a u32 type tag; the
 * collector switches on it and treats an unknown tag as an error.
 *
 * Plain fixed-width types only: this header is compiled both for the BPF
 * target and for x86-64 user space.
 */
#ifndef GPUBPF_H
#define GPUBPF_H

#include <linux/types.h>

#define GB_COMM_LEN 16
#define GB_NAME_LEN 1024  /* mangled C++ kernel names are long */
#define GB_NREG 6     /* register arguments captured raw */
#define GB_NSTACK 5   /* stack arguments captured when GB_CK_STACK is set */
#define GB_NEXT 8     /* words read through pointers (see enum gb_deref) */
#define GB_NSIG 65    /* signals 1 to 64: cmd_signal_ns[] */

enum gb_rec_type {
	GB_REC_CALL = 1,  /* one libcuda call: struct gb_call */
	GB_REC_NAME = 2,  /* a handle -> name binding: struct gb_name */
	GB_REC_GPU = 3,   /* a batch of GPU activity records: struct gb_gpu */
	GB_REC_CORR = 4,  /* a driver call's correlation id: struct gb_corr */
	GB_REC_PYSTACK = 5, /* a Python stack, sent once per (pid, id): struct gb_pystack */
	GB_REC_NATIVE = 6,  /* a native stack, sent once per (pid, id): struct gb_native */
	GB_REC_MAP = 7,     /* a traced process maps a libcuda not yet probed: struct gb_map */
	GB_REC_APIERR = 8,  /* a driver call failed, from the injection library: struct gb_apierr */
	GB_REC_EXIT = 9,    /* a traced thread exits: struct gb_exit */
	GB_REC_STATE = 10,  /* a traced thread changes state: struct gb_state */
	GB_REC_SAMPLE = 11, /* a CPU-clock sample of a traced thread: struct gb_sample */
	GB_REC_WAKE = 12,   /* a thread wakes another of its process: struct gb_wake */
	GB_REC_NODE = 13,   /* PyTorch's autograd makes or runs a node: struct gb_node */
	GB_REC_KICK = 14,   /* a CPU's call ring (struct gb_cring) wants reading: a type alone */
	GB_REC_EXEC = 15,   /* a process gpubpf knows runs a new program: struct gb_exec */
	GB_REC_END = 16,    /* a process whose stacks are walked begins to end: struct gb_end */
	GB_REC_FORK = 17,   /* a process whose stacks are walked forks: struct gb_fork */
};

/*
 * A call ring per CPU.  The records of entry-only calls (launches, async
 * copies, memsets: the calls made most often) go to the ring of the CPU
 * their program runs on, one element per CPU of the mmapable array map
 * "cpu_rings", which the recorder maps and reads: no lock, and fewer pages
 * and cache lines touched per record than a BPF ring buffer's.  Each line
 * of the head is written by one side only, and the recorder only reads the
 * data, so that a program waits on no line held by the recorder's CPU: it
 * reads cons again only when the ring looks full by the value it read last
 * (cons_seen; so it wakes the reader at each quarter of the ring written,
 * whether or not the reader read meanwhile), and publishes prod with a
 * plain store, which x86-64 orders after the record's (a weakly ordered
 * CPU would need a release store), where a locked exchange would wait for
 * every store before it to reach the other CPU.  Each element is a head
 * page, then the ring's data (a power of two), then a slack page that the
 * verifier's bounds need and nothing writes.  In the data, records start
 * at multiples of 64 bytes (a launch's 128 bytes are two cache lines) and
 * are padded to one; a record's first word is its type with its length in
 * 8-byte words in the top byte (GB_CRING_WORD()), which the reader masks
 * off.  A record never wraps round the end: a first word of GB_CRING_WRAP
 * says the next record is at the data's start.  A program finding the ring
 * busy (another program on this CPU, preempted, is writing it) or full
 * sends its record to the shared ring instead, so the records of one
 * thread can come through both: user space orders calls by their time.
 */
#define GB_CRING_HEAD 4096
#define GB_CRING_SLACK 4096
#define GB_CRING_ALIGN 64
#define GB_CRING_WRAP 0xffffffffu
#define GB_CRING_WORD(type, bytes) ((type) | (__u32)(bytes) / 8 << 24)
#define GB_CRING_TYPE(word) ((word) & 0xffffff)
#define GB_CRING_BYTES(word) ((word) >> 24 << 3)

struct gb_cring {
	__u64 prod;             /* bytes written, by the programs */
	__u64 pad0[7];
	__u64 cons;             /* bytes read, by the recorder */
	__u64 pad1[7];
	__u32 busy;             /* a program is writing: taken with xchg */
	__u32 pad2;
	__u64 cons_seen;        /* cons as the programs last read it */
};

/*
 * What the BPF programs know of each process id, two bits per id in the
 * global array pid_bits[] (no map lookup on the hot path; user space sets
 * bits through the skeleton's mapping of it, atomically).
 */
#define GB_PID_TRACED 1         /* record -p, -- CMD: trace it */
#define GB_PID_PYTHON 2         /* "py_procs" holds its layout: walk its stacks */
#define GB_PID_LIMIT (1U << 22) /* PID_MAX_LIMIT on 64-bit: ids are below it */
#define GB_PID_WORDS (GB_PID_LIMIT / 16)
#define GB_PID_WORD(pid) ((pid) / 16)
#define GB_PID_SHIFT(pid) ((pid) % 16 * 2)

/*
 * The attach cookie of every libcuda uprobe tells the BPF program what to
 * capture for that entry point, so one program serves them all.
 */
#define GB_CK_ID(ck)      ((__u32)((ck) & 0xffff))          /* call id */
#define GB_CK_DEREF(ck)   ((__u32)(((ck) >> 16) & 0xff))    /* enum gb_deref */
#define GB_CK_OUT(ck)     ((__u32)(((ck) >> 24) & 0xff))    /* out arg + 1 */
#define GB_CK_STACK       (1ULL << 32) /* read GB_NSTACK stack arguments */
#define GB_CK_RET         (1ULL << 33) /* probe the return too */
#define GB_CK_NAME_ARG2   (1ULL << 34) /* name string at arg2, handle = out */
#define GB_CK_NAME_OUT    (1ULL << 35) /* name string at out, handle = arg1 */
#define GB_CK_MAKE(id, deref, out_plus1) \
	((__u64)(id) | ((__u64)(deref) << 16) | ((__u64)(out_plus1) << 24))

/* What the entry probe reads through a pointer argument into gb_call.ext. */
enum gb_deref {
	GB_DEREF_NONE = 0,
	GB_DEREF_LAUNCH_CONFIG, /* arg0 CUlaunchConfig: ext = its first 40 bytes */
	GB_DEREF_MEMCPY2D,      /* arg0 CUDA_MEMCPY2D: ext0 src type, ext1 dst type,
				   ext2 width, ext3 height, ext4 1 */
	GB_DEREF_MEMCPY3D,      /* arg0 CUDA_MEMCPY3D(_PEER): the same, ext4 depth */
	GB_DEREF_MEMCPY2D_V1,   /* arg0 CUDA_MEMCPY2D_v1 (32-bit fields), as 2D */
	GB_DEREF_MEMCPY3D_V1,   /* arg0 CUDA_MEMCPY3D_v1, as 3D */
	GB_DEREF_SIZES,         /* arg2 size_t[arg3]: ext0 = sum, ext1 = count */
	GB_DEREF_BATCH3D,       /* arg1 CUDA_MEMCPY3D_BATCH_OP[arg0]: sum of extents */
};

/* Layouts from the CUDA 13.0 headers, checked by tests/unit/test_cuda_abi.c. */
#define GB_LAUNCH_CONFIG_SIZE 40
#define GB_M2D_SRC_TYPE 16
#define GB_M2D_DST_TYPE 72
#define GB_M2D_WIDTH 112
#define GB_M2D_HEIGHT 120
#define GB_M3D_SRC_TYPE 32
#define GB_M3D_DST_TYPE 120
#define GB_M3D_WIDTH 176
#define GB_M3D_HEIGHT 184
#define GB_M3D_DEPTH 192
#define GB_M2D1_SRC_TYPE 8
#define GB_M2D1_DST_TYPE 52
#define GB_M2D1_WIDTH 84
#define GB_M2D1_HEIGHT 88
#define GB_M3D1_SRC_TYPE 16
#define GB_M3D1_DST_TYPE 80
#define GB_M3D1_WIDTH 128
#define GB_M3D1_HEIGHT 132
#define GB_M3D1_DEPTH 136
#define GB_BATCH3D_OP_SIZE 112
#define GB_BATCH3D_EXTENT 80
#define GB_MAX_BATCH 32         /* batch entries summed in BPF */

/*
 * One call.  A record holds the head and then only the parts its call has,
 * in this order, ending after the last (gb_call_size()): a launch is
 * head + stk, a sync head + stk + ret.  What a record does not hold reads
 * as zero.
 */
struct gb_call {
	__u32 type;             /* GB_REC_CALL */
	__u32 call_id;          /* index into the user-space call table */
	__u32 pid;              /* tgid */
	__u32 tid;
	__u64 ts_entry;         /* CLOCK_MONOTONIC ns */
	__u64 pystack;          /* id of the thread's Python stack, 0 if none */
	__u64 nstack;           /* id of the native (user-space) stack, 0 if none */
	__u64 arg[GB_NREG];
	/* GB_CK_STACK: */
	__u64 stk[GB_NSTACK];   /* arguments 7..11 */
	/* GB_CK_RET: */
	__u64 ts_return;        /* 0: return not probed */
	__s64 ret;              /* return value, valid when ts_return != 0 */
	__u64 out;              /* *(u64 *)arg[out] read at return */
	/* a GB_CK_DEREF: */
	__u64 ext[GB_NEXT];     /* see enum gb_deref */
};

#define GB_CALL_HEAD __builtin_offsetof(struct gb_call, stk)
#define GB_CALL_STK __builtin_offsetof(struct gb_call, ts_return)
#define GB_CALL_RET __builtin_offsetof(struct gb_call, ext)

/* The bytes of a record of a call with attach cookie ck. */
static inline __u32 gb_call_size(__u64 ck)
{
	if (GB_CK_DEREF(ck))
		return sizeof(struct gb_call);
	if (ck & GB_CK_RET)
		return GB_CALL_RET;
	if (ck & GB_CK_STACK)
		return GB_CALL_STK;
	return GB_CALL_HEAD;
}

/*
 * A thread's name is constant per thread, so calls do not carry it: user
 * space reads it from /proc when it first sees the thread, and from this
 * record, sent as any thread of a traced process exits (and of any
 * process once all its threads counted out: one may get there after the
 * last one forgot its process), when the thread was gone before it could.
 */
struct gb_exit {
	__u32 type;             /* GB_REC_EXIT */
	__u32 pid;              /* tgid */
	__u32 tid;
	__u32 ended;            /* the process's last thread: its pid is free for another */
	__u64 ts;               /* CLOCK_MONOTONIC ns */
	char comm[GB_COMM_LEN]; /* the thread's name */
};

/*
 * A process gpubpf traces, or walks the Python stacks of, execs a new
 * program: what it knew of the old one's interpreter is stale.  The BPF
 * side has already stopped walking its stacks (GB_PID_PYTHON cleared, its
 * "py_procs" entry deleted); user space looks for the new one's.
 */
struct gb_exec {
	__u32 type;             /* GB_REC_EXEC */
	__u32 pid;              /* tgid */
	__u64 ts;               /* CLOCK_MONOTONIC ns: the new program is in place */
};

/*
 * A process whose Python stacks are walked forks a traced child: the child
 * is its copy, its interpreter at the same addresses, so the BPF side has
 * given it the parent's "py_procs" entry (and GB_PID_PYTHON) before it
 * runs, and walks its stacks from its first call; user space names them
 * with the parent's layout.
 */
struct gb_fork {
	__u32 type;             /* GB_REC_FORK */
	__u32 pid;              /* the child's tgid */
	__u32 parent;           /* the parent's tgid */
	__u32 pad;
	__u64 ts;               /* CLOCK_MONOTONIC ns */
};

/*
 * Thread states, from the scheduler (record --states): each record says
 * that thread tid entered state at ts; it stays there until its next
 * record.  Running: switched in.  Runnable: preempted: waiting for a
 * CPU.  Woken: runnable, unless it had not left its CPU yet.  Blocked: switched out to wait, in syscall (-1: not
 * in a syscall: a page fault, a stop...).  Gil: blocked on the futex of
 * the interpreter's GIL; holder is the tid of the thread that last took it
 * (0: unknown).  Exit: the thread is gone.
 */
enum gb_thread_state {
	GB_ST_RUNNING = 1,
	GB_ST_RUNNABLE = 2,
	GB_ST_BLOCKED = 3,
	GB_ST_GIL = 4,
	GB_ST_EXIT = 5,
	GB_ST_WOKEN = 6,
};

struct gb_state {
	__u32 type;             /* GB_REC_STATE */
	__u32 pid;              /* tgid */
	__u32 tid;
	__u32 state;            /* enum gb_thread_state */
	__u64 ts;               /* CLOCK_MONOTONIC ns */
	__s32 syscall;          /* blocked, gil: the syscall number, -1 none */
	__u32 holder;           /* gil: the holder's tid, 0 unknown */
	__u64 pystack;          /* blocked, gil: the Python stack it blocked in, 0 none */
};

/*
 * A CPU-clock sample (record --sample-hz) of a thread of a traced process
 * that was on a CPU: its Python stack and its native stack (as in gb_call),
 * 0 if none, and what it was doing (GB_SAMPLE_*).
 */
#define GB_SAMPLE_GC 1          /* the thread runs the interpreter's garbage
				   collector: collecting is set and it holds the GIL */

struct gb_sample {
	__u32 type;             /* GB_REC_SAMPLE */
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u64 ts;
	__u64 pystack;
	__u64 nstack;           /* record --stack native */
	__u32 flags;            /* GB_SAMPLE_* */
	__u32 pad;
};

/*
 * A thread of a traced Python process wakes another thread of the same
 * process (sched_waking, in the waker's own context, not from an
 * interrupt), one that is not known to run Python: the waker's Python
 * stack (as in gb_call; 0 when the waker runs no Python).  User space
 * gives the wakee's calls without a Python stack the stack of the wake
 * that preceded them (user/model/attrib.c).
 */
struct gb_wake {
	__u32 type;             /* GB_REC_WAKE */
	__u32 pid;              /* tgid */
	__u32 tid;              /* the thread woken */
	__u32 waker;            /* the waking thread */
	__u64 ts;
	__u64 pystack;          /* the waker's Python stack, 0 if none */
};

/*
 * PyTorch's autograd nodes, from probes on the libtorch a traced process
 * maps (user/record/autograd.c):
 *  - GB_NODE_MADE: forward code gives a new node an output
 *    (torch::autograd::impl::set_gradient_edge, once per output), with
 *    the Python stack of that moment: the line that created the node;
 *  - GB_NODE_RUN: the engine starts running a node on this thread
 *    (Engine::evaluate_function);
 *  - GB_NODE_DONE: that function returns.
 * Each carries the stack pointer at the function's entry (MADE, RUN) or
 * just after its return (DONE: the entry's + 8), which pairs a return
 * with its run, also when a record is lost or an exception unwinds the
 * engine's function without a return.
 */
enum gb_node_kind {
	GB_NODE_MADE = 1,
	GB_NODE_RUN = 2,
	GB_NODE_DONE = 3,
};

/*
 * Node's first data member, sequence_nr_, follows its vtable pointer and
 * its enable_shared_from_this base (a weak_ptr: two pointers), in every
 * PyTorch release since 1.x.
 */
#define GB_NODE_SEQ_OFF 24

struct gb_node {
	__u32 type;             /* GB_REC_NODE */
	__u32 pid;
	__u32 tid;
	__u32 kind;             /* enum gb_node_kind */
	__u64 ts;
	__u64 node;             /* the Node's address; 0 in DONE */
	__u64 vtable;           /* its vtable pointer, which names its class */
	__u64 seq;              /* its sequence_nr_ */
	__u64 sp;
	__u64 pystack;          /* MADE: the Python stack, 0 if none */
};

struct gb_name {
	__u32 type;             /* GB_REC_NAME */
	__u32 pid;
	__u64 handle;           /* CUfunction or CUkernel */
	char name[GB_NAME_LEN];
};

/*
 * A batch from the injection library's batch marker: len bytes of
 * cupti/gpu_activity.h records.  Emitted with its exact length.
 */
#define GB_GPU_BATCH_MAX 8192   /* GA_BATCH_MAX */

struct gb_gpu {
	__u32 type;             /* GB_REC_GPU */
	__u32 pid;
	__u32 tid;
	__u32 len;
	__u64 ts;               /* sent: CLOCK_MONOTONIC ns, while its process lives */
	__u8 data[GB_GPU_BATCH_MAX];
};

/*
 * From the injection library's api marker, on the thread making a driver
 * call and during it: the correlation id the GPU records of that call
 * carry.  The call is the thread's latest call whose entry precedes ts.
 */
struct gb_corr {
	__u32 type;             /* GB_REC_CORR */
	__u32 pid;
	__u32 tid;
	__u32 correlation;
	__u64 ts;
	__u32 cbid;
	__u32 pad;
};

/*
 * A traced process maps a file named libcuda.so* that is not in the
 * "libs_known" map (see struct gb_lib_key).  The mapping thread was sent
 * SIGSTOP (stopped = 1) from inside the mmap call, so neither the
 * library's constructors nor any call into it runs before user space has
 * attached the probes and sends SIGCONT.  Otherwise (see enum gb_held)
 * calls made before the probes are attached may be missed.
 */
#define GB_MAP_NAME_LEN 64

enum gb_held {
	GB_NOT_HELD = 0,        /* the stop signal could not be sent (nor noted among
				   the held, for the keeper) */
	GB_HELD = 1,            /* stopped: user space must send SIGCONT */
	GB_SHELL_JOB = 2,       /* not stopped: a job of an interactive shell */
	GB_PTRACED = 3,         /* not stopped: under a debugger, which would see the stop */
	GB_RECORDER_AWAY = 4,   /* not stopped: the recorder had not run for a second
				   (stopped, or starved of the CPU) or its collector
				   seemed hung, so nobody would let the process go */
};

struct gb_map {
	__u32 type;             /* GB_REC_MAP */
	__u32 pid;
	__u32 tid;
	__u32 held;             /* enum gb_held */
	__u64 ts;               /* when it mapped the file, CLOCK_MONOTONIC ns */
	__u64 dev;              /* the kernel's dev_t of the file system (MKDEV: 12:20) */
	__u64 ino;
	char name[GB_MAP_NAME_LEN]; /* the file's base name */
};

/*
 * A process whose Python stacks are walked begins to end: its interpreter
 * finalizes (Py_FinalizeEx: the code objects of its modules are freed
 * next) or it calls _exit (os._exit, a multiprocessing worker, the end of
 * exit()).  Its stacks are named from its memory, which goes with it: it
 * is held (enum gb_held, as at a libcuda mapping) until user space has
 * read every record before this one, then sent SIGCONT.
 */
struct gb_end {
	__u32 type;             /* GB_REC_END */
	__u32 pid;              /* tgid */
	__u32 tid;
	__u32 held;             /* enum gb_held */
	__u64 ts;               /* CLOCK_MONOTONIC ns */
};

/* A probed libcuda file, for pid (0: for every process). */
struct gb_lib_key {
	__u64 dev;              /* kernel dev_t, as in struct gb_map */
	__u64 ino;
	__u32 pid;
	__u32 pad;
};

/*
 * From the injection library's api marker's error site, on the thread
 * making a driver call and as it returns: the call failed with result (a CUresult).
 * Like gb_corr, it belongs to the thread's latest call entered before ts.
 */
struct gb_apierr {
	__u32 type;             /* GB_REC_APIERR */
	__u32 pid;
	__u32 tid;
	__u32 correlation;      /* 0 if unknown */
	__u64 ts;
	__u32 cbid;
	__s32 result;
};

/*
 * Python stacks.  For each traced process running CPython, user space
 * finds the interpreter's layout (user/sym/pyruntime.c) and stores it in the
 * "py_procs" map; at each probed call the entry program walks the calling
 * thread's frames and records, per frame, the code object, an identity
 * token of it and the instruction offset.  A stack is sent once per
 * process (GB_REC_PYSTACK, keyed by a hash of its frames); each call
 * record carries that key.
 */
#define GB_PY_MAX_DEPTH 256     /* frames a stack can hold */
#define GB_PY_NONE 0xffffffffu  /* "no such field" in struct gb_py_config */
#define GB_PY_IDENT_LEN 64      /* bytes of the code object folded into its token */

struct gb_py_config {
	__u64 runtime;          /* address of _PyRuntime in the process (3.6:
				   of interp_head, which it has instead) */
	__u32 version;          /* major * 100 + minor: 306 ... 315 */
	__u32 interp_head;      /* offset of runtime->interpreters.head: the newest
				   interpreter, the main one last (interp_next) */
	__u32 threads_head;     /* of interp->threads.head */
	__u32 tstate_next;      /* of tstate->next */
	__u32 tstate_thread_id; /* of tstate->thread_id (pthread_self(), = fsbase) */
	__u32 tstate_frame;     /* 3.6-3.10 tstate->frame, 3.11/3.12 tstate->cframe,
				   3.13+ tstate->current_frame */
	__u32 cframe_frame;     /* 3.11/3.12: cframe->current_frame; GB_PY_NONE else */
	__u32 frame_code;       /* f_code / f_executable */
	__u32 frame_prev;       /* f_back / previous */
	__u32 frame_instr;      /* 3.6-3.10 f_lasti (an int: bytes, in 3.10 code
				   units); 3.11+ a pointer: prev_instr / instr_ptr */
	__u32 frame_owner;      /* 3.11+ owner (char); GB_PY_NONE before */
	__u32 code_adaptive;    /* co_code_adaptive (3.11+): instr = (ptr - code - this) / 2 */
	__u32 code_ident;       /* start of the GB_PY_IDENT_LEN bytes of the code
				   object folded into its identity token */
	__u32 depth;            /* frames to walk, <= GB_PY_MAX_DEPTH */
	__u8 exec_tag_mask;     /* 3.14+: low bits of f_executable that are tags */
	__u8 gil_in_interp;     /* gil is an offset in the interpreter (3.12+), not
				   in the runtime (3.7-3.11) */
	__u8 gc_in_runtime;     /* gc_collecting is an offset in the runtime (3.7,
				   3.8), not in the interpreter */
	__u8 pad;
	__u32 gil;              /* offset of the _gil_runtime_state; 0: unknown
				   (3.6: static variables, not a struct) */
	__u32 gil_holder;       /* of its last_holder (a PyThreadState *) */
	__u32 tstate_native_tid; /* of tstate->native_thread_id; GB_PY_NONE before 3.11 */
	__u32 gc_collecting;    /* of interp->gc.collecting (3.7, 3.8:
				   runtime->gc.collecting; an int, set while the
				   collector runs); GB_PY_NONE: unknown (3.6) */
	__u32 tstate_base_frame; /* 3.15+: of tstate->base_frame, the sentinel frame
				   at the bottom of every thread's stack (its top
				   when the thread runs no Python); GB_PY_NONE before */
	__u32 interp_next;      /* of interp->next: the next older interpreter */
	__u32 code_frees;       /* set by record: 1 when gb_py_code_free counts the
				   code objects the process frees, so that its walks
				   may keep code tokens from call to call; 0: each
				   walk reads every frame's */
	__u32 ident_file;       /* 3.6-3.11: where co_filename lies among the bytes
				   of the code object its token folds (its file name,
				   first line and line table are folded too:
				   gb_py_ident_file(), gb_py_ident_lines()); GB_PY_NONE
				   (3.12+: co_version among them) */
	__u32 ident_firstline;  /* 3.6-3.11: offset of co_firstlineno (an int) in the
				   code object, outside those bytes; GB_PY_NONE */
};

/* sizeof(struct _gil_runtime_state) on x86-64 glibc, 3.7 to 3.15 (test_pyruntime checks it): its
   futex words (cond, mutex, switch_cond, switch_mutex) lie inside it */
#define GB_PY_GIL_SIZE 208

/* One frame: the code object, its identity token, the instruction offset. */
struct gb_py_frame {
	__u64 code;
	__u32 ident;            /* gb_py_ident() of the code object's bytes */
	__u32 instr;            /* offset of the current instruction, in code units
				   (3.6-3.9: in bytes, f_lasti) */
};

struct gb_pystack {
	__u32 type;             /* GB_REC_PYSTACK */
	__u32 pid;
	__u64 id;               /* hash of the frames: the key calls refer to */
	__u32 depth;            /* frames that follow, innermost first */
	__u16 truncated;        /* the stack was deeper than the walk */
	__u16 sampled;          /* first walked for a CPU sample (struct gb_sample) or
				   a wake (struct gb_wake), not for a call */
	struct gb_py_frame frames[GB_PY_MAX_DEPTH];
};

/*
 * The identity token of a code object: its GB_PY_IDENT_LEN bytes from
 * code_ident (pointers to its name, file name, line table...) folded.
 * Computed the same way in BPF and in user space, so that a code object
 * freed and its address reused by another is not taken for the first: on
 * 3.12+ by its serial among those bytes (co_version), before by its file
 * name too (gb_py_ident_file()).
 */
static inline __u32 gb_py_ident(const __u64 w[GB_PY_IDENT_LEN / 8])
{
	__u64 h = 0;

	for (int i = 0; i < GB_PY_IDENT_LEN / 8; i++)
		h = (h ^ w[i]) * 0x9e3779b97f4a7c15ULL;
	return (__u32)(h >> 32);
}

/*
 * The identity token of a code object of 3.6 to 3.11 folds its file name
 * too: its pointers and counts alone are those of a code object freed
 * before it where its file name and line table also lie where the freed
 * one's did (a notebook's next cell; 3.12+ code objects have a serial,
 * co_version).  GB_PY_FILE_LEN bytes of the str from its length on:
 * length, hash, state, wstr, then a compact ASCII str's characters.  The
 * length and characters are folded, up to GB_PY_FILE_LEN - 32 of them,
 * not what CPython sets later (hash, interned bits, wstr).  Where the
 * GB_PY_FILE_LEN bytes run past the object into memory that cannot be
 * read, both sides read the object's own bytes alone, its head and then
 * as many as its length says: what is folded is the same.
 */
#define GB_PY_FILE_LEN 128
#define GB_PY_FILE_AT 16                /* where they start in the str: its length */
#define GB_PY_STR_HEAD 32               /* length, hash, state, wstr: then the characters */
#define GB_PY_BYTES_HEAD 16             /* a bytes object's size and hash: then its bytes */
#define GB_PY_STR_COMPACT_ASCII 0x60    /* state's compact and ascii bits, 3.6-3.11 */

/* h with len bytes of words folded in, at most max words (bytes past len masked off) */
static inline __u64 gb_py_fold(__u64 h, const __u64 *words, __u64 len, int max)
{
	for (int i = 0; i < max; i++) {
		__u64 c = words[i];

		if (len <= (__u64)i * 8)
			break;
		if (len - (__u64)i * 8 < 8)
			c &= (1ULL << ((len - (__u64)i * 8) * 8)) - 1;
		h = (h ^ c) * 0x9e3779b97f4a7c15ULL;
	}
	return h;
}

static inline __u32 gb_py_ident_file(__u32 ident, const __u64 w[GB_PY_FILE_LEN / 8])
{
	__u64 len = w[0], h = ((__u64)ident ^ len) * 0x9e3779b97f4a7c15ULL;

	if ((w[2] & GB_PY_STR_COMPACT_ASCII) != GB_PY_STR_COMPACT_ASCII)
		return (__u32)(h >> 32);
	return (__u32)(gb_py_fold(h, w + 4, len, (GB_PY_FILE_LEN - 32) / 8) >> 32);
}

/*
 * And its first line and line table (co_firstlineno; co_lnotab,
 * co_linetable: a bytes object, the last pointer of the bytes the token
 * folds, 3.6-3.11): code compiled again from one file name (exec's
 * "<string>"), its function a few lines further down, has its name, file
 * name and line table where the freed one had them, and only their
 * contents tell them apart (a module's code starts at its first
 * statement's line, its table the same after it).  GB_PY_FILE_LEN
 * bytes of the bytes object from its size on: size, hash (set later, not
 * folded), then the table, folded up to its size.
 */
static inline __u32 gb_py_ident_lines(__u32 ident, __u32 first,
					const __u64 w[GB_PY_FILE_LEN / 8])
{
	__u64 len = w[0], h = ((((__u64)ident ^ len) * 0x9e3779b97f4a7c15ULL) ^ first) *
			      0x9e3779b97f4a7c15ULL;

	return (__u32)(gb_py_fold(h, w + 2, len, (GB_PY_FILE_LEN - 16) / 8) >> 32);
}

/*
 * Native stacks (record --stack native): the user-space return addresses
 * of the calling thread at the probed call, as bpf_get_stack() unwinds
 * them (frame pointers), innermost first: the entry point itself, then
 * its caller.  Sent once per process (GB_REC_NATIVE, keyed by a hash of
 * the addresses); call records carry that key in nstack.
 */
#define GB_NATIVE_MAX_DEPTH 64

struct gb_native {
	__u32 type;             /* GB_REC_NATIVE */
	__u32 pid;
	__u64 id;               /* hash of the addresses: the key calls refer to */
	__u32 n;                /* addresses that follow */
	__u32 pad;
	__u64 addrs[GB_NATIVE_MAX_DEPTH];
};

/* cuda.bpf.c bounds lengths and indexes with masks of these: powers of two */
_Static_assert(!(GB_GPU_BATCH_MAX & (GB_GPU_BATCH_MAX - 1)) &&
	       !(GB_PY_MAX_DEPTH & (GB_PY_MAX_DEPTH - 1)) &&
	       !(GB_NATIVE_MAX_DEPTH & (GB_NATIVE_MAX_DEPTH - 1)), "masked sizes are powers of two");

#endif
