// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for PyTorch's autograd nodes as the collector sees them
 * (user/record/autograd_nodes.c): node records built the way
 * bpf/cuda.bpf.c sends them, fed through collector_record() with call
 * records, and the node each call is stamped with.  The nodes' vtables
 * are laid out here as the Itanium C++ ABI lays them out (vtable[-1]: the
 * typeinfo, whose second word is the type's mangled name), in this
 * process, which the class names are read from.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpubpf.h"
#include "model/cuda_calls.h"
#include "model/model.h"
#include "record/autograd_nodes.h"
#include "record/collector.h"
#include "tap.h"

/* A class as the ABI describes it: typeinfo {vptr, name}, vtable {offset, &typeinfo, ...}. */
struct fake_class {
	uint64_t typeinfo[2];
	uint64_t vtable[3];
};

static void make_class(struct fake_class *c, const char *mangled)
{
	c->typeinfo[0] = 0;
	c->typeinfo[1] = (uintptr_t)mangled;
	c->vtable[0] = 0;
	c->vtable[1] = (uintptr_t)c->typeinfo;
	c->vtable[2] = 0;
}

/* the vtable pointer an object of c holds: past offset-to-top and typeinfo */
static uint64_t vptr(const struct fake_class *c)
{
	return (uintptr_t)&c->vtable[2];
}

static struct fake_class mul, expo, cpp, local;
static uint32_t pid, tid;

static struct gb_node node_rec(uint32_t kind, uint32_t t, uint64_t node, uint64_t vt,
			       uint64_t seq, uint64_t sp, uint64_t pystack)
{
	struct gb_node r;

	memset(&r, 0, sizeof(r));
	r.type = GB_REC_NODE;
	r.pid = pid;
	r.tid = t;
	r.kind = kind;
	r.node = node;
	r.vtable = vt;
	r.seq = seq;
	r.sp = sp;
	r.pystack = pystack;
	return r;
}

static void send(struct collector *c, struct gb_node r)
{
	int ret = collector_record(c, &r, sizeof(r));

	if (ret)
		printf("# node record %u: %d\n", r.kind, ret);
}

/* A launch on thread t; the event it became. */
static const struct model_event *launch(struct collector *c, uint32_t t)
{
	struct gb_call r;

	memset(&r, 0, sizeof(r));
	r.type = GB_REC_CALL;
	r.call_id = cuda_call_find("cuLaunchKernel");
	r.pid = pid;
	r.tid = t;
	r.ts_entry = 1000 + c->m->nev;
	if (collector_record(c, &r, sizeof(r)))
		return NULL;
	return &c->m->ev[c->m->nev - 1];
}

/* "node | line of the forward stack's innermost frame" of a launch on t. */
static const char *stamped(struct collector *c, uint32_t t)
{
	static char buf[256];
	const struct model_event *e = launch(c, t);
	const struct model *m = c->m;

	if (!e)
		return "(no event)";
	snprintf(buf, sizeof(buf), "%s | %s", e->ag_node ? strtab_get(&m->strs, e->ag_node) : "-",
		 e->ag_fwd ? strtab_get(&m->strs, m->frames[m->stacks[e->ag_fwd - 1].first]) : "-");
	return buf;
}

static uint64_t add_stack(struct model *m, uint64_t id, const char *frame)
{
	uint32_t f = strtab_intern(&m->strs, frame);

	model_add_stack(m, pid, id, 0, 1, &f, &f);
	return id;
}

static void test_class_names(void)
{
	char buf[256];

	is_int(autograd_class_name(pid, vptr(&mul), buf, sizeof(buf)), 0, "class name read");
	is_str(buf, "MulBackward0", "a generated node: its name without namespaces");
	is_int(autograd_class_name(pid, vptr(&cpp), buf, sizeof(buf)), 0, "template class read");
	is_str(buf, "CppNode<my::Fn>", "a C++ custom function's node: its template argument kept");
	is_int(autograd_class_name(pid, vptr(&local), buf, sizeof(buf)), 0, "local class read");
	is_str(buf, "LocalNode", "a class of an anonymous namespace (its name starts with '*')");
	is_int(autograd_class_name(pid, 8, buf, sizeof(buf)), -EFAULT,
	       "a vtable pointer into nothing: -EFAULT");
	is_int(autograd_class_name(0x3ffff000u, vptr(&mul), buf, sizeof(buf)), -ESRCH,
	       "a process that is gone: -ESRCH");
}

static void test_stamps(void)
{
	struct model m;
	struct collector c;
	uint64_t s1, s2;

	model_init(&m);
	collector_init(&c, &m);
	s1 = add_stack(&m, 0x51, "layer (model.py:10)");
	s2 = add_stack(&m, 0x52, "layer (model.py:11)");

	is_str(stamped(&c, tid), "- | -", "no node run yet: no node");
	/* forward: two nodes made (the first twice: two outputs) */
	send(&c, node_rec(GB_NODE_MADE, tid, 0xa000, vptr(&mul), 5, 0x7000, s1));
	send(&c, node_rec(GB_NODE_MADE, tid, 0xa000, vptr(&mul), 5, 0x7000, s2));
	send(&c, node_rec(GB_NODE_MADE, tid, 0xb000, vptr(&expo), 6, 0x7000, s2));
	/* backward: B runs, then A inside it (re-entrant), on a worker thread */
	send(&c, node_rec(GB_NODE_RUN, tid + 1, 0xb000, vptr(&expo), 6, 0x9000, 0));
	is_str(stamped(&c, tid + 1), "ExpBackward0 | layer (model.py:11)",
	       "inside a run: the node, and the line that made it");
	is_str(stamped(&c, tid), "- | -", "another thread: not stamped");
	send(&c, node_rec(GB_NODE_RUN, tid + 1, 0xa000, vptr(&mul), 5, 0x8000, 0));
	is_str(stamped(&c, tid + 1), "MulBackward0 | layer (model.py:10)",
	       "a nested run: the innermost; a node of two outputs: its first one's line");
	send(&c, node_rec(GB_NODE_DONE, tid + 1, 0, 0, 0, 0x8008, 0));
	is_str(stamped(&c, tid + 1), "ExpBackward0 | layer (model.py:11)",
	       "its return: the outer run again");
	send(&c, node_rec(GB_NODE_DONE, tid + 1, 0, 0, 0, 0x9008, 0));
	is_str(stamped(&c, tid + 1), "- | -", "the outer one's return: none");

	/* an exception unwound a run (no return): the next run at that depth replaces it */
	send(&c, node_rec(GB_NODE_RUN, tid + 1, 0xa000, vptr(&mul), 5, 0x9000, 0));
	send(&c, node_rec(GB_NODE_RUN, tid + 1, 0xb000, vptr(&expo), 6, 0x9000, 0));
	is_str(stamped(&c, tid + 1), "ExpBackward0 | layer (model.py:11)",
	       "a run that never returned is over when another starts at its depth");
	send(&c, node_rec(GB_NODE_DONE, tid + 1, 0, 0, 0, 0x9008, 0));
	is_str(stamped(&c, tid + 1), "- | -", "and the return closes both");
	/* a return whose run was lost (attached mid-run), on a thread never seen */
	send(&c, node_rec(GB_NODE_DONE, tid + 2, 0, 0, 0, 0x9008, 0));
	is_str(stamped(&c, tid + 2), "- | -", "a return without its run: nothing");

	/* the node's memory reused by a later node: that one's line is not known */
	send(&c, node_rec(GB_NODE_RUN, tid + 1, 0xa000, vptr(&mul), 7, 0x9000, 0));
	is_str(stamped(&c, tid + 1), "MulBackward0 | -",
	       "a node made before the recording (its address made another): line unknown");
	send(&c, node_rec(GB_NODE_DONE, tid + 1, 0, 0, 0, 0x9008, 0));
	/* a class whose name cannot be read */
	send(&c, node_rec(GB_NODE_RUN, tid + 1, 0xc000, 8, 1, 0x9000, 0));
	is_str(stamped(&c, tid + 1), "- | -", "a class not readable: no name");
	is_int(c.ag.unnamed, 1, "counted as unnamed");
	send(&c, node_rec(GB_NODE_DONE, tid + 1, 0, 0, 0, 0x9008, 0));

	/* deeper than the runs kept: the innermost ones are right */
	for (int i = 0; i < 10; i++)
		send(&c, node_rec(GB_NODE_RUN, tid + 3, 0xa000, vptr(i & 1 ? &expo : &mul), 5,
				  0x9000 - 0x100 * i, 0));
	is_str(stamped(&c, tid + 3), "ExpBackward0 | layer (model.py:10)", "10 nested runs: the 10th");
	send(&c, node_rec(GB_NODE_DONE, tid + 3, 0, 0, 0, 0x9000 - 0x900 + 8, 0));
	is_str(stamped(&c, tid + 3), "MulBackward0 | layer (model.py:10)", "its return: the 9th");
	is_int(c.ag.runs, 16, "runs counted");
	collector_release(&c);
	model_release(&m);
}

int main(void)
{
	pid = getpid();
	tid = pid + 1;
	make_class(&mul, "N5torch8autograd9generated12MulBackward0E");
	make_class(&expo, "N5torch8autograd9generated12ExpBackward0E");
	make_class(&cpp, "N5torch8autograd7CppNodeIN2my2FnEEE");
	make_class(&local, "*N12_GLOBAL__N_19LocalNodeE");
	test_class_names();
	test_stamps();
	return done_testing();
}
