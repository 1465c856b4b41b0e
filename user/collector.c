// SPDX-License-Identifier: BSD-2-Clause
/* The collector; see collector.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector.h"
#include "cuda_calls.h"
#include "proc.h"

/* CUmemorytype values in CUDA_MEMCPY2D/3D. */
enum { MT_HOST = 1, MT_DEVICE = 2, MT_ARRAY = 3, MT_UNIFIED = 4 };

/* The launch configuration as read by GB_DEREF_LAUNCH_CONFIG. */
struct launch_config {
	uint32_t grid[3], block[3], shared_mem, pad;
	uint64_t stream;
};

void collector_init(struct collector *c, struct model *m)
{
	memset(c, 0, sizeof(*c));
	c->m = m;
}

void collector_release(struct collector *c)
{
	free(c->seen);
	memset(c, 0, sizeof(*c));
}

static uint64_t role(const struct gb_call *r, int idx)
{
	return idx < GB_NREG ? r->arg[idx] : r->stk[idx - GB_NREG];
}

/* The low 32 bits of a v1 argument: the rest of its register is undefined. */
static uint64_t narrow(uint64_t v, int is_narrow)
{
	return is_narrow ? (uint32_t)v : v;
}

static uint8_t nd_kind(uint64_t src, uint64_t dst)
{
	static const uint8_t kinds[4][4] = {
		/* dst:  host     device   array */
		[MT_HOST] = { 0, CK_HTOH, CK_HTOD, CK_HTOA },
		[MT_DEVICE] = { 0, CK_DTOH, CK_DTOD, CK_DTOA },
		[MT_ARRAY] = { 0, CK_ATOH, CK_ATOD, CK_ATOA },
	};

	if (src == MT_UNIFIED || dst == MT_UNIFIED)
		return CK_DEFAULT;
	if (src < MT_HOST || src > MT_ARRAY || dst < MT_HOST || dst > MT_ARRAY)
		return CK_NONE;
	return kinds[src][dst];
}

int collector_decode_call(const struct gb_call *r, struct model_event *ev)
{
	const struct cuda_call *cc;
	struct launch_config lc;

	if (r->call_id >= cuda_ncalls)
		return -EINVAL;
	cc = &cuda_calls[r->call_id];
	ev->ts = r->ts_entry;
	ev->dur = r->ts_return > r->ts_entry ? r->ts_return - r->ts_entry : 0;
	ev->pid = r->pid;
	ev->tid = r->tid;
	ev->call_id = r->call_id;
	ev->family = cc->family;
	ev->fields = 0;
	if (r->ts_return) {
		ev->fields |= MF_RET;
		ev->ret = (int32_t)r->ret;
	}
	if (cc->func != NOARG) {
		ev->fields |= MF_FUNC;
		ev->func = role(r, cc->func);
	}
	if (cc->grid != NOARG) {
		ev->fields |= MF_GRID;
		for (int i = 0; i < 3; i++)
			ev->grid[i] = i < cc->ngrid ? (uint32_t)role(r, cc->grid + i) : 1;
	}
	if (cc->block != NOARG) {
		ev->fields |= MF_BLOCK;
		for (int i = 0; i < 3; i++)
			ev->block[i] = (uint32_t)role(r, cc->block + i);
	}
	if (cc->shmem != NOARG) {
		ev->fields |= MF_SHMEM;
		ev->shared_mem = (uint32_t)role(r, cc->shmem);
	}
	if (cc->stream != NOARG) {
		ev->fields |= MF_STREAM;
		ev->stream = role(r, cc->stream);
	}
	if (cc->bytes != NOARG) {
		ev->fields |= MF_BYTES;
		ev->bytes = narrow(role(r, cc->bytes), cc->narrow & NARROW_SIZE) * cc->elem;
		if (cc->layout == CL_AREA)
			ev->bytes *= narrow(role(r, cc->bytes + 1), cc->narrow & NARROW_SIZE);
	}
	if (cc->ptr != NOARG) {
		ev->fields |= MF_PTR;
		ev->ptr = narrow(role(r, cc->ptr), cc->narrow & NARROW_PTR);
	}
	if (cc->handle != NOARG) {
		ev->fields |= MF_HANDLE;
		ev->handle = role(r, cc->handle);
	}
	if (cc->kind != CK_NONE) {
		ev->fields |= MF_KIND;
		ev->copy_kind = cc->kind;
	}
	switch (cc->layout) {
	case CL_LAUNCH_EX:
		memcpy(&lc, r->ext, sizeof(lc));
		ev->fields |= MF_GRID | MF_BLOCK | MF_SHMEM | MF_STREAM;
		memcpy(ev->grid, lc.grid, sizeof(ev->grid));
		memcpy(ev->block, lc.block, sizeof(ev->block));
		ev->shared_mem = lc.shared_mem;
		ev->stream = lc.stream;
		break;
	case CL_MEMCPY_ND:
		ev->fields |= MF_BYTES;
		ev->bytes = r->ext[2] * r->ext[3] * r->ext[4];
		if (cc->kind == CK_NONE)
			ev->copy_kind = nd_kind(r->ext[0], r->ext[1]);
		if (ev->copy_kind != CK_NONE)
			ev->fields |= MF_KIND;
		break;
	case CL_BATCH:
		ev->fields |= MF_BYTES | MF_COUNT;
		ev->bytes = r->ext[0];
		ev->count = (uint32_t)r->ext[1];
		break;
	}
	if (r->ts_return && !r->ret && cc->out != NOARG) {
		switch (cc->out_as) {
		case OUT_PTR:
			ev->fields |= MF_PTR;
			ev->ptr = narrow(r->out, cc->narrow & NARROW_PTR);
			break;
		case OUT_HANDLE:
			ev->fields |= MF_HANDLE;
			ev->handle = r->out;
			break;
		case OUT_FUNC:
			ev->fields |= MF_FUNC;
			ev->func = r->out;
			break;
		}
	}
	return 0;
}

/* Add tid to the seen set; 1 if it was new, 0 if known, -ENOMEM. */
static int first_sighting(struct collector *c, uint32_t tid)
{
	size_t i;

	if ((c->nseen + 1) * 2 > c->nseen_slots) {
		size_t n = c->nseen_slots ? c->nseen_slots * 2 : 1024;
		uint32_t *s = calloc(n, sizeof(*s));

		if (!s)
			return -ENOMEM;
		for (size_t k = 0; k < c->nseen_slots; k++) {
			if (!c->seen[k])
				continue;
			for (i = c->seen[k] * 2654435761u & (n - 1); s[i]; i = (i + 1) & (n - 1))
				;
			s[i] = c->seen[k];
		}
		free(c->seen);
		c->seen = s;
		c->nseen_slots = n;
	}
	for (i = tid * 2654435761u & (c->nseen_slots - 1); c->seen[i];
	     i = (i + 1) & (c->nseen_slots - 1))
		if (c->seen[i] == tid)
			return 0;
	c->seen[i] = tid;
	c->nseen++;
	return 1;
}

static int name_thread(struct collector *c, const struct gb_call *r)
{
	char comm[GB_COMM_LEN + 1], pname[64];
	struct model_process *p;
	int ret = first_sighting(c, r->tid);

	if (ret <= 0)
		return ret;
	memcpy(comm, r->comm, GB_COMM_LEN);
	comm[GB_COMM_LEN] = 0;
	if (!model_thread(c->m, r->pid, r->tid, comm))
		return -ENOMEM;
	/* a process is named by its main thread, read while it still runs */
	p = model_process(c->m, r->pid, r->pid == r->tid ? comm : NULL);
	if (!p)
		return -ENOMEM;
	if (!p->name && !proc_comm(r->pid, 0, pname, sizeof(pname)))
		model_process(c->m, r->pid, pname);
	return 0;
}

static int on_call(struct collector *c, const struct gb_call *r)
{
	static int kernel_get_function = -1;
	struct model_event *ev;
	uint32_t kname;
	int ret;

	ev = model_add_event(c->m);
	if (!ev)
		return -ENOMEM;
	ret = collector_decode_call(r, ev);
	if (ret) {
		c->m->nev--;
		return ret;
	}
	ev->name = strtab_intern(&c->m->strs, cuda_calls[r->call_id].name);
	/* cuKernelGetFunction: the function inherits its kernel's name */
	if (kernel_get_function < 0)
		kernel_get_function = cuda_call_find("cuKernelGetFunction");
	if (r->call_id == (uint32_t)kernel_get_function && !r->ret && r->ts_return &&
	    (kname = model_kernel_name(c->m, r->pid, ev->handle)))
		model_set_kernel_name(c->m, r->pid, ev->func, strtab_get(&c->m->strs, kname));
	c->calls++;
	return name_thread(c, r);
}

int collector_record(struct collector *c, const void *data, size_t size)
{
	const struct gb_name *n = data;
	char name[GB_NAME_LEN + 1];
	uint32_t type;
	int ret = -EINVAL;

	if (size < sizeof(type)) {
		c->bad++;
		return -EINVAL;
	}
	memcpy(&type, data, sizeof(type));
	switch (type) {
	case GB_REC_CALL:
		if (size >= sizeof(struct gb_call))
			ret = on_call(c, data);
		break;
	case GB_REC_NAME:
		if (size < sizeof(*n))
			break;
		memcpy(name, n->name, GB_NAME_LEN);
		name[GB_NAME_LEN] = 0;
		ret = name[0] ? model_set_kernel_name(c->m, n->pid, n->handle, name) : 0;
		break;
	}
	if (ret == -EINVAL)
		c->bad++;
	else
		c->records++;
	return ret;
}
