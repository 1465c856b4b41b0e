/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probe loader: opens and loads the BPF programs, attaches them to
 * libcuda files, keeps the set of traced processes.  The only code besides
 * the collector that touches libbpf.
 */
#ifndef GPUBPF_PROBES_H
#define GPUBPF_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpubpf.h"
#include "record/cpu_rings.h"

struct cuda_bpf;
struct bpf_link;

#define PROBES_HOST_RING_PART 16
#define PROBES_HOST_RING_MIN (256u << 10)
#define PROBES_CPU_RING_MIN (128u << 10)

struct probes_opts {
	int filter_pids;        /* trace only the pids added */
	int follow_forks;       /* children of traced pids are traced too */
	uint64_t ringbuf_bytes; /* the GPU batches' ring, rounded up to a power of
				   two; the other records' ring is a sixteenth of it,
				   at least 256 KiB (see probes_ringbuf_fds()) */
	int verbose;            /* libbpf's own messages */
	int native_stacks;      /* capture the user-space stack of every call */
	int no_hold;            /* do not load the mmap hook (as on a kernel without it) */
	int no_may_goto;        /* walk Python stacks with bpf_loop (as on a kernel
				   without may_goto, before Linux 6.9) */
	int no_multi;           /* a link per entry point, as on a kernel without
				   usable uprobe_multi links (uprobe_multi.h) */
	int test_nested_search; /* tests: a sample's search amid each call's walk
				   that finds its cached state not its own */
	int hold_each;          /* hold every process that maps libcuda, once (see
				   probes_hold_maps), not only for a new library */
	int hold_exec;          /* hold a traced process that runs a new program
				   (exec) again at its libcuda */
	int states;             /* thread states from the scheduler (struct gb_state) */
	uint32_t sample_hz;     /* CPU-clock samples per second per CPU; 0: none */
	int wakes;              /* wakes within Python processes (struct gb_wake) */
	int one_ring;           /* no per-CPU call rings: every record through the
				   shared ring, in the order made (--autograd stamps
				   each call with the node its thread runs then) */
	int cmd_signals;        /* note the signals sent to the command
				   (probes_watch_signals()) */
	int autograd;           /* load the autograd engine's programs
				   (probes_attach_autograd()) */
};


/* One library attached for one pid (-1: every process). */
struct probe_target {
	dev_t dev;
	ino_t ino;
	uint64_t site;            /* the file offset of its one uprobe; 0: a library's probes */
	pid_t pid;
	char *path;
	struct bpf_link **links;  /* per-entry-point links (older kernels) */
	size_t nlinks;
	int multi_fds[2];         /* uprobe_multi links: entries, returns; -1 none */
};

struct probes {
	struct cuda_bpf *skel;
	struct probe_target *targets;
	size_t ntargets;
	int verbose;
	int multi;              /* uprobe_multi links, not a link per entry point */
	int hold;               /* the hooks that stop processes (gb_mmap, gb_end) loaded */
	struct bpf_link *hold_link; /* and attached */
	int ends_released;      /* probes_release_ends(): no holds at a process's end */
	struct bpf_link **samplers; /* one CPU-clock perf event per CPU */
	int nsamplers;
	struct cpu_rings crings;   /* the per-CPU call rings, mapped */
};

/*
 * Open and load the BPF programs.  On failure returns -errno and writes a
 * one-line reason, saying what to do, into err.
 */
int probes_open(struct probes *p, const struct probes_opts *o, char *err, size_t errlen);
/*
 * Attach every probed entry point that the library at path defines, for
 * pid (-1: all processes).  Returns the number of probes attached, 0 if
 * this library (by inode) was already attached for pid, or -errno with a
 * one-line reason in err.
 */
int probes_attach(struct probes *p, const char *path, pid_t pid, char *err, size_t errlen);
/*
 * Attach to the markers of the injection library (libgpubpf_cupti.so) at
 * path, for pid (-1: all processes).  Attaching raises the markers'
 * semaphores in every process that maps the library, which wakes it up.
 * Returns 1 when attached, 0 if already attached, or -errno with a
 * one-line reason in err.
 */
int probes_attach_markers(struct probes *p, const char *path, pid_t pid, char *err,
			  size_t errlen);
/*
 * Attach to PyTorch's autograd engine in the libtorch at path (the one
 * that defines it: libtorch_cpu.so), for pid (-1: all processes): the
 * nodes forward code makes and those the engine runs (struct gb_node).
 * Returns 1 when attached, 0 if already attached, or -errno with a
 * one-line reason in err (-ENOENT: it does not define the functions).
 */
int probes_attach_autograd(struct probes *p, const char *path, pid_t pid, char *err,
			   size_t errlen);
/*
 * Attach to where the CPython interpreter in the file at path frees code
 * objects (its file offset off: pyruntime_code_free()), for pid (-1: all
 * processes): each free in a process whose stacks are walked makes its
 * walks read their code tokens anew (gb_py_code_free).  Returns 1 when
 * attached, 0 if already attached, or -errno with a one-line reason in
 * err.
 */
int probes_attach_code_free(struct probes *p, const char *path, uint64_t off, pid_t pid,
			    char *err, size_t errlen);
/*
 * Attach where a process whose Python stacks are walked begins to end (the
 * file offset off of the file at path: the interpreter's Py_FinalizeEx,
 * libc's _exit), for pid (-1: all processes): it is held there (SIGSTOP)
 * and a GB_REC_END record sent; the reader of that record, having read
 * every one before, sends SIGCONT.  Returns 1 when attached, 0 if already
 * attached, or -errno with a one-line reason in err (-EOPNOTSUPP: the
 * kernel cannot hold processes).
 */
int probes_attach_end(struct probes *p, const char *path, uint64_t off, pid_t pid, char *err,
		      size_t errlen);
/*
 * Hold no process at its end from now on (then drain the ring buffer): 1
 * if some could be held until now.
 */
int probes_release_ends(struct probes *p);
/* 1 if the library file at path is attached for pid (or for all). */
int probes_attached(struct probes *p, const char *path, pid_t pid);
/*
 * Say the recorder is alive (before each poll of the ring buffer, and
 * from the reader thread): the hold stops a process only while this was
 * said within the last second.  Safe from any thread.
 */
void probes_heartbeat(struct probes *p);
/*
 * Hold every traced process that maps a libcuda no probe covers yet: the
 * mapping thread is stopped (SIGSTOP) and a GB_REC_MAP record sent; the
 * reader of that record must attach, call probes_lib_known() and send
 * SIGCONT.  0, -EOPNOTSUPP when the kernel could not load the hook.
 */
int probes_hold_maps(struct probes *p);
/* Stop holding new mappings (then drain the ring buffer: records may remain). */
void probes_release_maps(struct probes *p);
/*
 * The libcuda file (kernel dev_t, inode) is probed for pid (0: for all):
 * its mappings are not held any more.  probes_attach() calls it.
 */
int probes_lib_known(struct probes *p, uint64_t dev, uint64_t ino, pid_t pid);
/* Per pid, the libcuda mappings that could not be held. */
void probes_unheld(struct probes *p, void (*per_pid)(void *ctx, uint32_t pid, uint64_t n),
		   void *ctx);
/*
 * Continue pid, held by the programs (GB_HELD in its record), and forget
 * it among the held.  0, or -errno (a process gone is not an error).
 */
int probes_continue(struct probes *p, pid_t pid);
/* The map of the processes held now (tgid keys), for the keeper (keeper.h). */
int probes_held_fd(struct probes *p);
/* pid is held now: stopped by the programs, its record yet to be handled. */
bool probes_is_held(struct probes *p, pid_t pid);
/*
 * -- CMD (with probes_opts.cmd_signals): note, from now, when the kernel
 * generates each signal for pid.  probes_signal_sent(): when it last sent
 * sig (CLOCK_MONOTONIC ns), 0 if never.
 */
void probes_watch_signals(struct probes *p, pid_t pid);
uint64_t probes_signal_sent(const struct probes *p, int sig);
/* Add pid to the traced set (with filter_pids). */
int probes_trace_pid(struct probes *p, pid_t pid);
/* The pids in the traced set (children joined by fork included); count or -errno. */
int probes_traced_pids(struct probes *p, pid_t *pids, int max);
/*
 * Walk pid's Python stacks at every probed call, with layout cfg (one
 * without native thread ids whose GIL is known, 3.7-3.10, turns on the BPF
 * map of threads by their pthread_self()).
 */
int probes_set_python(struct probes *p, pid_t pid, const struct gb_py_config *cfg);
/* Stop walking pid's Python stacks (it runs a new program). */
void probes_forget_python(struct probes *p, pid_t pid);
/*
 * The ring buffers' map fds, into fds; their number.  The first takes
 * every record but the GPU batches, which go to the second.
 */
#define PROBES_RINGS 2
int probes_ringbuf_fds(struct probes *p, int fds[PROBES_RINGS]);
/* The per-CPU call rings, base NULL when there are none. */
struct cpu_rings probes_crings(const struct probes *p);
/*
 * The entry time of the earliest call still in flight (its record waits
 * for its return), of threads still alive; UINT64_MAX if none.
 */
uint64_t probes_inflight_since(struct probes *p);
/* Each call still in flight, through fn (its record as the entry left it). */
void probes_each_inflight(struct probes *p, void (*fn)(void *ctx, const struct gb_call *c),
			  void *ctx);
/* Lost records: total, and per pid through the callback. */
uint64_t probes_dropped(struct probes *p, void (*per_pid)(void *ctx, uint32_t pid, uint64_t n),
			void *ctx);
void probes_close(struct probes *p);

#endif
