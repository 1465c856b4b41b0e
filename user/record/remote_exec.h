/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Late attach through CPython's remote execution (PEP 768, CPython 3.14+),
 * for a Python job in which ptrace finds no thread asleep at a safe point
 * (every thread busy): the interpreter is asked to run a short script at
 * its next safe point between bytecodes, on a thread that runs Python
 * and holds the GIL, where loading a library is as safe as the program's
 * own ctypes calls.  The script copies the library into a memfd, opens it
 * with ctypes (the target's own dlopen) and calls gpubpf_late_attach(),
 * as the ptrace way does; it prints nothing, and reports in a file.
 */
#ifndef GPUBPF_REMOTE_EXEC_H
#define GPUBPF_REMOTE_EXEC_H

#include <stddef.h>
#include <sys/types.h>
#include "record/inject.h"

/*
 * Load the library at lib into pid and start it, waiting at most
 * timeout_ms for a thread to run the script.  Returns 0 (st->tid: the
 * thread that ran it, st->stall_ns: how long it took there), or -errno
 * with a one-line reason in why: -EOPNOTSUPP where the target runs no
 * CPython 3.14+, -EPERM where its remote debugging is disabled,
 * -ETIMEDOUT where no thread reached a safe point in time (the request is
 * then withdrawn).
 */
int remote_exec_library(pid_t pid, const char *lib, int timeout_ms, struct inject_stats *st,
			char *why, size_t whylen);

#endif
