/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Attributed stacks: the driver calls of a thread that runs no Python (an
 * autograd engine's thread, a C++ worker pool's) get the Python stack of
 * the thread whose wake-up the worker serves.  The BPF wake hook sends,
 * for each wake within a traced Python process, the waker, the woken
 * thread and the waker's Python stack (0 when it runs no Python).
 *
 * A wake's attribution is the waker's stack, else, transitively, the
 * waker's own attribution at that instant when the waker makes driver
 * calls itself (a worker woken by a worker inherits what the first
 * served; a helper thread that makes none, which serves every thread,
 * passes nothing on); a thread's attribution at an instant
 * is that of its latest wake, at or before it, that has one (a wake by a
 * thread with none, such as a driver's helper thread, leaves it as it
 * was).  A call without a stack of its own takes its thread's
 * attribution at its start, marked by stack_tid (the thread the stack was
 * walked on).
 */
#ifndef GPUBPF_MODEL_ATTRIB_H
#define GPUBPF_MODEL_ATTRIB_H

#include <stddef.h>
#include <stdint.h>

struct model;

struct model_wake {
	uint64_t ts;
	uint32_t pid;
	uint32_t tid;           /* the thread woken */
	uint32_t waker;
	uint32_t stack;         /* model_attribute(): index + 1 in m->stacks of the
				   wakee's attribution after this wake, 0 none */
	uint64_t pystack;       /* the waker's Python stack id, 0 none */
	uint32_t from;          /* model_attribute(): the thread that stack was walked on */
	uint32_t seq;           /* arrival order: the tie-break of equal instants */
	uint8_t resolved;       /* kept from an earlier part (model_part.h): stack
				   and from are the thread's attribution from then */
};

/* Thread waker of pid woke thread tid at ts, with Python stack pystack.  0 or -ENOMEM. */
int model_add_wake(struct model *m, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t waker,
		   uint64_t pystack);

/*
 * From model_finish(), once API events have their own stacks: give each
 * API event that has none (no Python stack id) its thread's attribution
 * (stack and stack_tid).  0 or -ENOMEM.
 */
int model_attribute(struct model *m);

#endif
