/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Late attach: load the injection library (libgpubpf_cupti.so) into a
 * running process that was started without CUDA_INJECTION64_PATH, with
 * ptrace.  One thread of the target is stopped, only at the entry of a
 * blocking system call (futex, poll, epoll_wait, nanosleep, read, select,
 * wait4...), never while it runs user code or sits in ioctl/mmap/open; the
 * library is copied into a memfd created in the target (so it loads in
 * another mount namespace) and opened with the target's own dlopen; its
 * entry gpubpf_late_attach() only starts the library's thread; then the
 * thread's registers, FPU state and signal mask are restored, the
 * interrupted system call is replayed, and the thread is detached.
 * x86-64 only.  Every failure leaves the target as it was and says why.
 */
#ifndef GPUBPF_INJECT_H
#define GPUBPF_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The injection library's entry that a late attach calls (cupti/late.c). */
#define INJECT_ENTRY "gpubpf_late_attach"

struct inject_stats {
	pid_t tid;              /* the thread borrowed */
	long syscall_nr;        /* the system call it was stopped in */
	uint64_t stall_ns;      /* how long that thread was stopped */
	uint64_t total_ns;      /* the whole injection, thread search included */
	int threads_tried;      /* threads interrupted before one was usable */
	int via_memfd;          /* 0: loaded from the library's own path */
};

/*
 * Load the library at lib into pid and start it.  timeout_ms bounds the
 * wait for each thread to stop (a thread that does not stop in time is
 * passed over).  Returns 0, or -errno with a one-line reason in why
 * (e.g. "ptrace not allowed (yama ptrace_scope 3)", "no thread at a safe
 * point", "seccomp filter denies memfd_create").
 */
int inject_library(pid_t pid, const char *lib, int timeout_ms, struct inject_stats *st,
		   char *why, size_t whylen);

/* Copy the file lib into out (at its position): 0 or -errno. */
int inject_copy_lib(const char *lib, int out);

/* CLOCK_MONOTONIC in ns: the injections' timings. */
uint64_t inject_now_ns(void);

/*
 * Stop thread tid (PTRACE_SEIZE + PTRACE_INTERRUPT, unseen by its parent),
 * to change its memory while it cannot run: 0 once stopped, with the
 * signal its stop took (0: none) in *sig, to give back to
 * inject_release(); -ETIMEDOUT if it did not stop in timeout_ms (it is
 * let go by inject_reap() once it does), -errno.
 */
int inject_hold(pid_t tid, int timeout_ms, int *sig);
int inject_release(pid_t tid, int sig);

/*
 * Let go of threads an injection interrupted that had not stopped when it
 * returned (a thread in uninterruptible sleep): call now and then from the
 * thread that called inject_library().  Returns how many are still held.
 */
int inject_reap(void);

/*
 * The path through which the injection library mapped in pid can be
 * opened from here: /proc/PID/map_files/START-END for a memfd copy
 * (late attach) or a deleted file, else /proc/PID/root/PATH.  0, -ENOENT
 * when it is not mapped, or -errno.
 */
int inject_find_lib(pid_t pid, const char *base, char *path, size_t len);

/*
 * Tell the injection library mapped in pid (base, as for
 * inject_find_lib(); lib, the path that function gave) that one more
 * recorder is attached to its markers: it adds one to the library's
 * gpubpf_joins.  A library already collecting for another recorder then
 * sends the kernel names again and opens a window for this one
 * (cupti/publish.h).  Call once the markers are attached.  0, -ENOENT (a
 * library without the counter, or not mapped), or -errno.
 */
int inject_lib_join(pid_t pid, const char *base, const char *lib);

/*
 * Safe points: 1 if a thread stopped in system call nr may be borrowed
 * (x86-64 numbers).
 */
int inject_safe_syscall(long nr);

/*
 * Whether the seccomp filter prog[0..n) (classic BPF, as
 * PTRACE_SECCOMP_GET_FILTER returns it) lets system call nr with args
 * through on x86-64: 1 allowed, 0 refused (any action but ALLOW, LOG or
 * TRACE-less ALLOW), -EINVAL if the program cannot be run.
 */
struct sock_filter;
int inject_seccomp_allows(const struct sock_filter *prog, size_t n, long nr,
			  const uint64_t args[6], uint64_t ip);

#endif
