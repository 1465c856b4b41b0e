// SPDX-License-Identifier: BSD-2-Clause
/* PyTorch's autograd nodes, as the collector sees them; see autograd_nodes.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/array.h"
#include "lib/proc.h"
#include "model/model.h"
#include "record/autograd_nodes.h"
#include "sym/demangle.h"

#define AG_DEPTH 8              /* nested runs kept per thread (a node whose
				   backward runs a backward: checkpointing) */
#define AG_NAME_MAX 512         /* bytes of a type's mangled name read */

struct ag_run {
	uint64_t sp;            /* the stack pointer at evaluate_function's entry */
	uint32_t name;          /* strtab id of the node's class */
	uint32_t fwd;           /* index + 1 of the stack that made it, 0 unknown */
};

struct ag_thread {
	uint32_t n;             /* runs open, innermost last */
	struct ag_run runs[AG_DEPTH];
};

void autograd_nodes_init(struct autograd_nodes *a)
{
	memset(a, 0, sizeof(*a));
	hashmap_init(&a->threads);
	hashmap_init(&a->made);
	hashmap_init(&a->classes);
}

void autograd_nodes_release(struct autograd_nodes *a)
{
	hashmap_release(&a->threads);
	hashmap_release(&a->made);
	hashmap_release(&a->classes);
	free(a->thr);
}

/* The last component of a C++ name, outside template arguments. */
static const char *short_name(const char *full)
{
	const char *last = full;
	int depth = 0;

	for (const char *p = full; *p; p++) {
		if (*p == '<' || *p == '(')
			depth++;
		else if ((*p == '>' || *p == ')') && depth)
			depth--;
		else if (!depth && p[0] == ':' && p[1] == ':')
			last = p + 2;
	}
	return last;
}

int autograd_class_name(uint32_t pid, uint64_t vtable, char *buf, size_t len)
{
	static const char prefix[] = "typeinfo name for ";
	char mangled[AG_NAME_MAX + 5] = "_ZTS";
	uint64_t typeinfo, name;
	char *full;
	size_t got;
	int fd, ret;

	fd = proc_mem_open(pid);
	if (fd < 0)
		return fd == -ENOENT ? -ESRCH : fd;
	/* vtable[-1]: the typeinfo; its second word: the type's mangled name */
	ret = proc_mem_read(fd, vtable - 8, &typeinfo, sizeof(typeinfo)) ?:
	      proc_mem_read(fd, typeinfo + 8, &name, sizeof(name));
	/* the name may end near the end of its mapping: read it in steps */
	for (got = 0; !ret && got < AG_NAME_MAX; got += 64) {
		ret = proc_mem_read(fd, name + got, mangled + 4 + got, 64);
		if (!ret && memchr(mangled + 4 + got, 0, 64))
			break;
	}
	close(fd);
	if (ret)
		return ret;
	mangled[sizeof(mangled) - 1] = 0;
	/* GCC marks the name of a type local to its library with a leading '*' */
	if (mangled[4] == '*')
		memmove(mangled + 4, mangled + 5, strlen(mangled + 5) + 1);
	full = demangle(mangled);
	if (!full || strncmp(full, prefix, sizeof(prefix) - 1)) {
		free(full);
		return -EINVAL;
	}
	snprintf(buf, len, "%s", short_name(full + sizeof(prefix) - 1));
	free(full);
	return 0;
}

/* The strtab id of the class of (pid, vtable), read once; 0 if unnamed. */
static int class_of(struct autograd_nodes *a, struct model *m, uint32_t pid, uint64_t vtable,
		    uint32_t *id)
{
	struct hashmap_slot *s;
	char name[256];
	int added;

	s = hashmap_put(&a->classes, hashmap_hash2(pid, vtable), &added);
	if (!s)
		return -ENOMEM;
	if (!added) {
		*id = (uint32_t)s->val;
		return 0;
	}
	*id = 0;
	if (autograd_class_name(model_real_pid(pid), vtable, name, sizeof(name)))
		a->unnamed++;
	else if (!(*id = strtab_intern(&m->strs, name)))
		return -ENOMEM;
	s->val = 1ULL << 32 | *id;
	return 0;
}

static struct ag_thread *find_thread(const struct autograd_nodes *a, uint32_t pid,
				    uint32_t tid)
{
	const struct hashmap_slot *s = hashmap_find(&a->threads, (uint64_t)pid << 32 | tid);

	return s ? &a->thr[s->val - 1] : NULL;
}

static struct ag_thread *get_thread(struct autograd_nodes *a, uint32_t pid, uint32_t tid)
{
	struct hashmap_slot *s;
	int added;

	if (array_grow(&a->thr, &a->cap_thr, a->nthr + 1))
		return NULL;
	s = hashmap_put(&a->threads, (uint64_t)pid << 32 | tid, &added);
	if (!s)
		return NULL;
	if (added) {
		memset(&a->thr[a->nthr], 0, sizeof(a->thr[0]));
		s->val = ++a->nthr;
	}
	return &a->thr[s->val - 1];
}

/* Close the runs whose function entered at or below sp: they have returned. */
static void close_runs(struct ag_thread *t, uint64_t sp)
{
	while (t->n && t->runs[t->n - 1].sp <= sp)
		t->n--;
}

static int on_made(struct autograd_nodes *a, struct model *m, const struct gb_node *r)
{
	const struct model_stack *st = r->pystack ? model_find_stack(m, r->pid, r->pystack) : NULL;
	struct hashmap_slot *s;
	uint64_t val;
	int added;

	if (!st)
		return 0;
	val = (r->seq & 0xffffffff) << 32 | (uint64_t)(st - m->stacks + 1);
	s = hashmap_put(&a->made, hashmap_hash2(r->pid, r->node), &added);
	if (!s)
		return -ENOMEM;
	/* a node with several outputs: the first one's stack (the same line) */
	if (added || s->val >> 32 != (r->seq & 0xffffffff))
		s->val = val;
	return 0;
}

static int on_run(struct autograd_nodes *a, struct model *m, const struct gb_node *r)
{
	struct ag_thread *t = get_thread(a, r->pid, r->tid);
	const struct hashmap_slot *s;
	struct ag_run run = { .sp = r->sp };
	int ret;

	if (!t)
		return -ENOMEM;
	ret = class_of(a, m, r->pid, r->vtable, &run.name);
	if (ret)
		return ret;
	s = hashmap_find(&a->made, hashmap_hash2(r->pid, r->node));
	if (s && s->val >> 32 == (r->seq & 0xffffffff))
		run.fwd = (uint32_t)s->val;
	/* a run left open at this depth or deeper (an exception unwound it) is over */
	close_runs(t, r->sp);
	if (t->n == AG_DEPTH)
		memmove(t->runs, t->runs + 1, --t->n * sizeof(t->runs[0]));
	t->runs[t->n++] = run;
	a->runs++;
	return 0;
}

int autograd_nodes_record(struct autograd_nodes *a, struct model *m, const struct gb_node *r)
{
	struct ag_thread *t;

	switch (r->kind) {
	case GB_NODE_MADE:
		return on_made(a, m, r);
	case GB_NODE_RUN:
		return on_run(a, m, r);
	case GB_NODE_DONE:
		/* sp is past the return address: the run entered at sp - 8 */
		if ((t = find_thread(a, r->pid, r->tid)))
			close_runs(t, r->sp - 8);
		return 0;
	}
	return -EINVAL;
}

void autograd_nodes_stamp(const struct autograd_nodes *a, struct model_event *ev)
{
	const struct ag_thread *t;

	if (!a->nthr || !(t = find_thread(a, ev->pid, ev->tid)) || !t->n)
		return;
	ev->ag_node = t->runs[t->n - 1].name;
	ev->ag_fwd = t->runs[t->n - 1].fwd;
}
