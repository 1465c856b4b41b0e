/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Symbolising Python frames: (code object, identity token, instruction
 * offset) to qualified name, file and line, read from the process's memory
 * (/proc/PID/mem) with caches.  A code object whose token no longer matches
 * what is at its address (freed, address reused) is never given the new
 * object's name: it resolves as unknown.
 */
#ifndef GPUBPF_PYSYM_H
#define GPUBPF_PYSYM_H

#include <stdint.h>
#include <sys/types.h>
#include "gpubpf.h"

struct pysym;   /* opaque: caches per process */

struct py_frame_info {
	const char *qualname;   /* "Model.forward", "<module>"; "?" if unknown */
	const char *filename;   /* "/path/train.py"; "?" if unknown */
	int line;               /* the line being executed, 0 if unknown */
};

struct pysym *pysym_new(void);
void pysym_free(struct pysym *s);
/*
 * Resolve one frame of process pid, whose layout is cfg.  Strings stay
 * valid until pysym_free.  Returns 0, or -errno when the frame cannot be
 * resolved (out is then filled with "?" and line 0): the process is gone
 * (and the code object was not cached), or the identity check failed.
 */
int pysym_resolve(struct pysym *s, pid_t pid, const struct gb_py_config *cfg,
		  const struct gb_py_frame *f, struct py_frame_info *out);
/* Forget process pid's code objects (it exited, or exec'd). */
void pysym_forget(struct pysym *s, pid_t pid);

/*
 * The line of the instruction at instr (as gb_py_frame.instr: code units,
 * bytes before 3.10; negative: the frame has not started, its first line)
 * in a code object's line table: 306 to 309, co_lnotab (byte-offset/line-
 * delta pairs); 310, co_linetable (the same, PEP 626); 311+, the location
 * table (Objects/locations.md).  Returns the line, or -1 when the
 * instruction has no line.  instr means what CPython's frame.f_lineno
 * computes from: 3.6 to 3.10 f_lasti, 3.11/3.12 prev_instr, 3.13+
 * instr_ptr, each relative to the first code unit.
 */
int pysym_line(unsigned version, const uint8_t *tab, size_t len, int firstlineno,
	       int32_t instr);
/* Bytes the caches hold (all allocations), and the code objects cached. */
size_t pysym_mem(const struct pysym *s, size_t *codes);

#endif
