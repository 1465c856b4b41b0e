/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector's view of PyTorch's autograd nodes (struct gb_node):
 * which node each thread runs, and the Python stack of the forward call
 * that made each node.  A call record is stamped with its thread's node
 * as it arrives: the records of one thread come in the order it made
 * them, so the node runs then are those whose run record came before it
 * and whose return record has not come yet.
 */
#ifndef GPUBPF_AUTOGRAD_NODES_H
#define GPUBPF_AUTOGRAD_NODES_H

#include <stddef.h>
#include <stdint.h>
#include "gpubpf.h"
#include "lib/hashmap.h"

struct model;
struct model_event;
struct ag_thread;

struct autograd_nodes {
	struct hashmap threads;  /* pid << 32 | tid -> index + 1 in thr */
	struct ag_thread *thr;
	size_t nthr, cap_thr;
	struct hashmap made;     /* hash of (pid, node) -> its sequence number's low
				    32 bits << 32 | index + 1 of its stack */
	struct hashmap classes;  /* hash of (pid, vtable) -> strtab id of its class
				    name | 1 << 32 (read, maybe unnamed) */
	uint64_t runs;           /* node runs seen */
	uint64_t unnamed;        /* vtables whose class could not be read */
};

void autograd_nodes_init(struct autograd_nodes *a);
void autograd_nodes_release(struct autograd_nodes *a);
/* A node record (its stack, if any, already in m).  0 or -ENOMEM. */
int autograd_nodes_record(struct autograd_nodes *a, struct model *m, const struct gb_node *r);
/* Give a call just decoded the node its thread runs now (ag_node, ag_fwd). */
void autograd_nodes_stamp(const struct autograd_nodes *a, struct model_event *ev);

/*
 * The class of the C++ object whose vtable pointer is vtable in process
 * pid, as people read it: its name without namespaces
 * ("torch::autograd::generated::MulBackward0" -> "MulBackward0"), read
 * through the Itanium ABI's typeinfo (vtable[-1] -> its name).  0 or
 * -errno (-ESRCH: the process is gone).
 */
int autograd_class_name(uint32_t pid, uint64_t vtable, char *buf, size_t len);

#endif
