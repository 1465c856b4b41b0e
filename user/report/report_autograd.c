// SPDX-License-Identifier: BSD-2-Clause
/*
 * Backward work by autograd node: the calls PyTorch's autograd engine
 * made while it ran each node (rt_table.nodes), grouped by the node's
 * class and the forward line that made it, with the GPU time of the work
 * they launched.  Where forward code built the graph, that line names the
 * layer whose backward it is.
 */
#include <errno.h>
#include <stdlib.h>
#include "lib/array.h"
#include "lib/hashmap.h"
#include "report/report.h"

static uint64_t group_key(uint32_t proc, uint32_t node, uint32_t site)
{
	return hashmap_hash2(proc, (uint64_t)node << 32 | site);
}

/* The group of (node, site) in rp, added if new; NULL on allocation failure. */
static struct rep_node *group_of(struct hashmap *groups, struct rep_proc *rp, size_t *cap,
				 uint32_t proc, uint32_t node, uint32_t site)
{
	uint64_t key = group_key(proc, node, site);
	struct rep_node *g;

	for (struct hashmap_slot *s = hashmap_find(groups, key); s;
	     s = hashmap_find_next(groups, s)) {
		g = &rp->nodes[s->val];
		if (g->node == node && g->site == site)
			return g;
	}
	if (array_grow(&rp->nodes, cap, rp->nnodes + 1) ||
	    hashmap_add(groups, key, rp->nnodes))
		return NULL;
	g = &rp->nodes[rp->nnodes++];
	*g = (struct rep_node){ .node = node, .site = site };
	return g;
}

static int cmp_node(const void *a, const void *b)
{
	const struct rep_node *x = a, *y = b;

	if (x->gpu_ns != y->gpu_ns)
		return x->gpu_ns > y->gpu_ns ? -1 : 1;
	if (x->launches != y->launches)
		return x->launches > y->launches ? -1 : 1;
	return x->calls > y->calls ? -1 : x->calls < y->calls;
}

int report_autograd(const struct rt_table *t, struct report *r)
{
	struct hashmap groups, by_corr;  /* (proc, corr) -> the group of its call */
	size_t *caps = calloc(r->nprocs + 1, sizeof(*caps));
	int ret = caps ? 0 : -ENOMEM;

	hashmap_init(&groups);
	hashmap_init(&by_corr);
	for (size_t i = 0; i < t->nnodes && !ret; i++) {
		const struct rt_node *n = &t->nodes[i];
		struct rep_proc *rp = &r->procs[n->proc];
		uint32_t site = n->fwd ? t->stacks[n->fwd - 1].site : 0;
		struct rep_node *g = group_of(&groups, rp, &caps[n->proc], n->proc, n->node, site);
		struct hashmap_slot *s;

		if (!g) {
			ret = -ENOMEM;
			break;
		}
		g->calls++;
		g->launches += n->launch;
		if (!n->corr)
			continue;
		s = hashmap_put(&by_corr, (uint64_t)n->proc << 32 | n->corr, NULL);
		if (!s)
			ret = -ENOMEM;
		else
			s->val = g - rp->nodes;
	}
	for (size_t i = 0; i < t->nev && !ret && t->nnodes; i++) {
		const struct rt_event *e = &t->ev[i];
		const struct hashmap_slot *s;

		if (e->kind == RT_API || !e->corr ||
		    !(s = hashmap_find(&by_corr, (uint64_t)e->proc << 32 | e->corr)))
			continue;
		r->procs[e->proc].nodes[s->val].gpu_ns += e->dur;
	}
	for (size_t p = 0; p < r->nprocs && !ret; p++)
		if (r->procs[p].nnodes)
			qsort(r->procs[p].nodes, r->procs[p].nnodes, sizeof(struct rep_node), cmp_node);
	hashmap_release(&groups);
	hashmap_release(&by_corr);
	free(caps);
	return ret;
}
