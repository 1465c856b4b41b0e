/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Finding a process's CPython runtime and its layout, for the BPF frame
 * walker (struct gb_py_config in bpf/gpubpf.h).
 */
#ifndef GPUBPF_PYRUNTIME_H
#define GPUBPF_PYRUNTIME_H

#include <stddef.h>
#include <sys/types.h>
#include "gpubpf.h"

/*
 * Find the mapping of pid that defines _PyRuntime (the executable or
 * libpython3.X.so; 3.6: interp_head, for want of one), the interpreter's
 * version and its layout, and fill cfg (cfg->depth is left for the
 * caller).  Layouts: tables for 3.6 to 3.12; _Py_DebugOffsets for 3.13
 * to 3.15.
 * Returns 0; -ENOENT if the process runs no CPython (not an error: say
 * nothing); -ENOTSUP for a CPython gpubpf cannot walk (unknown version,
 * free-threaded build, unreadable runtime) or for PyPy, with a one-line
 * reason in why;
 * other -errno with a reason.
 */
int pyruntime_find(pid_t pid, struct gb_py_config *cfg, char *why, size_t whylen);

/*
 * Where the CPython interpreter of pid frees code objects: the file that
 * defines PyCode_Type (its executable or libpython), as a path to it that
 * can be opened here, and the file offset of the function its tp_dealloc
 * points to in the process.  0, or -errno with a one-line reason in why
 * (-ENOENT: no such file; -EAGAIN: it points to no code of a file, as
 * before the loader relocates it).
 */
int pyruntime_code_free(pid_t pid, char *path, size_t pathlen, __u64 *off, char *why,
			size_t whylen);
/*
 * Where the CPython interpreter of pid finalizes (Py_FinalizeEx, run as
 * it exits, before the code objects of its modules are freed): the file
 * that defines it, as a path that can be opened here, and its file
 * offset.  0, or -errno with a one-line reason in why (-ENOENT: none).
 */
int pyruntime_finalize(pid_t pid, char *path, size_t pathlen, __u64 *off, char *why,
		       size_t whylen);

/*
 * The identity token of the code object at code, whose GB_PY_IDENT_LEN
 * bytes from cfg->code_ident are w, in the process whose memory fd is
 * (proc_mem_open()), as the BPF walker makes it (gb_py_ident(), and
 * gb_py_ident_file() and gb_py_ident_lines() before 3.12).  0 or -errno.
 */
int pyruntime_code_ident(int fd, const struct gb_py_config *cfg, __u64 code,
			 const __u64 w[GB_PY_IDENT_LEN / 8], __u32 *ident);

/*
 * Where a code object's fields are (for pysym), and how str and bytes
 * objects are laid out, in the process whose layout is cfg: a table for
 * 3.6 to 3.12, the process's _Py_DebugOffsets for 3.13+ (read from its
 * memory).  qualname is GB_PY_NONE before 3.11 (no co_qualname there).
 */
struct py_code_layout {
	__u32 filename, name, qualname, firstlineno, linetable;
	__u32 str_length;       /* PyASCIIObject.length */
	__u32 str_state;        /* PyASCIIObject.state (kind, compact, ascii bits) */
	__u32 ascii_size;       /* sizeof(PyASCIIObject): data of a compact ASCII str */
	__u32 compact_size;     /* sizeof(PyCompactUnicodeObject): other compact strs */
	__u32 bytes_size;       /* PyBytesObject ob_size */
	__u32 bytes_sval;       /* PyBytesObject ob_sval */
};
int pyruntime_code_layout(pid_t pid, const struct gb_py_config *cfg,
			  struct py_code_layout *out);

/*
 * Walk, from user space through /proc/PID/mem, the Python frames of the
 * thread whose tstate->thread_id is thread_id (pthread_self() of that
 * thread), or with thread_id 0 of the thread tid (by its native_thread_id
 * on 3.11+, else by the tid glibc keeps in its struct pthread), the way
 * the BPF walker does: up to max frames, innermost first, shim frames
 * (owner >= 3) skipped, instr computed as gb_py_frame says.  Returns the
 * number of frames, -ESRCH if no such thread state, -errno.  The tests'
 * oracle for the BPF walker, and the stack of a thread that waits since
 * before a recording (collector_seed_stacks()).
 */
int pyruntime_walk(pid_t pid, const struct gb_py_config *cfg, __u64 thread_id, pid_t tid,
		   struct gb_py_frame *frames, int max);

/*
 * PEP 768 (CPython 3.14+): where a debugger asks a thread to run a Python
 * script at its next safe point, addresses in the process.
 */
struct py_remote {
	__u64 tstate;           /* the thread state */
	__u64 eval_breaker;     /* its eval_breaker (uintptr_t) */
	__u64 pending;          /* its debugger_pending_call (int) */
	__u64 path;             /* its debugger_script_path (char[path_size]) */
	__u32 path_size;
	__u32 native_tid;       /* that thread (0: unknown) */
};

/*
 * Fill rx for the thread of pid to ask (cfg from pyruntime_find()): the
 * last holder of the GIL if it runs Python code, else the main thread if
 * it does, else the first thread that does, else the main thread.  0; -EOPNOTSUPP before 3.14; -EPERM where the
 * interpreter's remote debugging is off; -ESRCH, -ENOTSUP or -errno
 * otherwise; why says which.
 */
int pyruntime_remote(pid_t pid, const struct gb_py_config *cfg, struct py_remote *rx,
		     char *why, size_t whylen);

#endif
