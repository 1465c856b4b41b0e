// SPDX-License-Identifier: BSD-2-Clause
/* The collector; see collector.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "record/collector.h"
#include "model/cuda_calls.h"
#include "sym/demangle.h"
#include "gpu_activity.h"
#include "sym/native_sym.h"
#include "lib/proc.h"
#include "sym/pyruntime.h"
#include "sym/pysym.h"

/*
 * Kernel names as people read them (and as framework profilers show
 * them): C++ names demangled, others kept.
 */
static int set_kernel_name(struct model *m, uint32_t pid, uint64_t handle, const char *name)
{
	char *d = demangle(name);
	int ret;

	ret = model_set_kernel_name(m, pid, handle, d ? d : name);
	free(d);
	return ret;
}

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
	autograd_nodes_init(&c->ag);
}

void collector_release(struct collector *c)
{
	pysym_free(c->pysym);
	nsym_free(c->nsym);
	free(c->py);
	hashmap_release(&c->seen);
	hashmap_release(&c->exit_comm);
	hashmap_release(&c->ends);
	hashmap_release(&c->seeded);
	free(c->again);
	free(c->call_size);
	autograd_nodes_release(&c->ag);
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

int collector_set_python(struct collector *c, uint32_t pid, const struct gb_py_config *cfg)
{
	struct collector_py *np;

	if (!c->pysym && !(c->pysym = pysym_new()))
		return -ENOMEM;
	for (size_t i = 0; i < c->npy; i++)
		if (c->py[i].pid == pid) {
			/* another process of that pid, or a new program: its code is new */
			pysym_forget(c->pysym, pid);
			c->py[i].cfg = *cfg;
			return 0;
		}
	np = realloc(c->py, (c->npy + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	c->py = np;
	c->py[c->npy++] = (struct collector_py){ .pid = pid, .cfg = *cfg };
	return 0;
}

void collector_forget_python(struct collector *c, uint32_t pid)
{
	for (size_t i = 0; i < c->npy; i++)
		if (c->py[i].pid == pid) {
			c->py[i] = c->py[--c->npy];
			break;
		}
	/* its code objects were the old program's, and so is its memory's file */
	pysym_forget(c->pysym, pid);
}

/*
 * Name a stack's frames now, while the process still runs: strings
 * "qualname (file:line)" for the frame, "qualname (file)" for its function.
 */
static int on_pystack(struct collector *c, const struct gb_pystack *st, size_t size)
{
	uint32_t frames[GB_PY_MAX_DEPTH], funcs[GB_PY_MAX_DEPTH];
	const struct gb_py_config *cfg = NULL;
	struct py_frame_info fi;
	char buf[1024];

	if (st->depth > GB_PY_MAX_DEPTH ||
	    size < offsetof(struct gb_pystack, frames) + st->depth * sizeof(st->frames[0]))
		return -EINVAL;
	for (size_t i = 0; i < c->npy && !cfg; i++)
		if (c->py[i].pid == st->pid)
			cfg = &c->py[i].cfg;
	if (!cfg)
		return -EINVAL;
	for (uint32_t i = 0; i < st->depth; i++) {
		int err = pysym_resolve(c->pysym, st->pid, cfg, &st->frames[i], &fi);

		if (err && st->sampled) {
			c->py_unresolved_sampled++;
		} else if (err) {
			c->py_unresolved++;
			c->py_stale += err == -ESTALE;
		}
		snprintf(buf, sizeof(buf), "%s (%s:%d)", fi.qualname, fi.filename, fi.line);
		frames[i] = strtab_intern(&c->m->strs, buf);
		snprintf(buf, sizeof(buf), "%s (%s)", fi.qualname, fi.filename);
		funcs[i] = strtab_intern(&c->m->strs, buf);
		if (!frames[i] || !funcs[i])
			return -ENOMEM;
	}
	return model_add_stack(c->m, st->pid, st->id, st->truncated, st->depth, frames, funcs);
}

/*
 * Name a native stack's addresses now, while the process runs and its
 * mappings are there: "symbol+0xoff (file)", innermost first (the entry
 * point itself, then return addresses).
 */
static int on_native(struct collector *c, const struct gb_native *st, size_t size)
{
	uint32_t frames[GB_NATIVE_MAX_DEPTH];
	char buf[1024];
	int ret;

	if (st->n > GB_NATIVE_MAX_DEPTH ||
	    size < offsetof(struct gb_native, addrs) + st->n * sizeof(st->addrs[0]))
		return -EINVAL;
	if (!c->nsym && !(c->nsym = nsym_new()))
		return -ENOMEM;
	for (uint32_t i = 0; i < st->n; i++) {
		ret = nsym_name(c->nsym, st->pid, st->addrs[i], i > 0, buf, sizeof(buf));
		if (ret < 0)
			return ret;
		if (!ret)
			c->native_unnamed++;
		frames[i] = strtab_intern(&c->m->strs, buf);
		if (!frames[i])
			return -ENOMEM;
	}
	return model_add_native_stack(c->m, st->pid, st->id, st->n, frames);
}

/*
 * A process has a pid that ended processes of this recording had: how
 * many ended before ts.  A process that ended, and its threads, leave
 * records for a while after the instant its last thread exits (that
 * thread's last switch); the kernel gives its pid to no one before it
 * is reaped, and a new program needs far more than PID_AGAIN_NS to make
 * a call.
 */
#define PID_AGAIN_NS 1000000ull

static uint32_t pid_key(const struct collector *c, uint32_t pid, uint64_t ts)
{
	uint32_t n = 0;

	if (!c->ends.n || pid >= MODEL_PID_AGAIN)
		return pid;
	for (const struct hashmap_slot *s = hashmap_find(&c->ends, pid); s;
	     s = hashmap_find_next(&c->ends, s))
		n += s->val + PID_AGAIN_NS < ts;
	return n < UINT32_MAX / MODEL_PID_AGAIN ? pid + n * MODEL_PID_AGAIN : pid;
}

uint32_t collector_pid(const struct collector *c, uint32_t pid)
{
	return pid_key(c, pid, UINT64_MAX);
}

uint32_t collector_pid_at_end(const struct collector *c, uint32_t pid)
{
	uint32_t key = collector_pid(c, pid);

	/* an end is counted only for a process with events: the one before is one */
	return key >= MODEL_PID_AGAIN && !model_find_process(c->m, key) ? key - MODEL_PID_AGAIN : key;
}

/* The processes of pid that ended */
static uint32_t nends(const struct collector *c, uint32_t pid)
{
	uint32_t n = 0;

	for (const struct hashmap_slot *s = hashmap_find(&c->ends, pid); s;
	     s = hashmap_find_next(&c->ends, s))
		n++;
	return n;
}

/* The pid of a process pid_key() named; other pids as they are. */
static uint32_t real_pid(const struct collector *c, uint32_t pid)
{
	uint32_t real = model_real_pid(pid);

	return pid == real || nends(c, real) >= model_pid_nth(pid) - 1 ? real : pid;
}

/* Add (pid, tid) to the threads seen; 1 if it was new, 0 if known, -ENOMEM. */
static int first_sighting(struct collector *c, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	int added;

	if (hashmap_find(&c->seen, key))
		return 0;
	return hashmap_put(&c->seen, key, &added) ? added : -ENOMEM;
}

/*
 * first_sighting() of a call's thread, which keeps its latest call's entry
 * time: 1 also for the first call of a thread seen so far only by its
 * states or samples (time 0), which named neither it nor its process (the
 * model knew no such process at its exit, which was then not counted, and
 * a later process at its pid was taken for it).
 */
static int call_sighting(struct collector *c, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct hashmap_slot *sl;
	int added;

	sl = hashmap_put(&c->seen, (uint64_t)pid << 32 | tid, &added);
	if (!sl)
		return -ENOMEM;
	added |= !sl->val;
	if (ts > sl->val)
		sl->val = ts;
	return added;
}

/*
 * Name a thread, and its process, from comm (NULL: read both from /proc,
 * which shows only the latest process of a pid).  A thread keeps the
 * first name it gets; a process is named by its main thread, and a later
 * process of an ended one's pid says so.
 */
static int name_thread(struct collector *c, uint32_t pid, uint32_t tid, const char *comm)
{
	uint32_t real = real_pid(c, pid);
	int live = collector_pid(c, real) == pid;
	char buf[64], pname[64], again[96];
	struct model_thread *t;
	struct model_process *p;

	if (!comm && live && !proc_comm(real, tid, buf, sizeof(buf)))
		comm = buf;
	t = model_thread(c->m, pid, tid, NULL);
	if (!t)
		return -ENOMEM;
	if (comm && *comm && !t->name && !(t->name = strtab_intern(&c->m->strs, comm)))
		return -ENOMEM;
	p = model_process(c->m, pid, NULL);
	if (!p)
		return -ENOMEM;
	if (p->name)
		return 0;
	if (real == tid && comm)
		snprintf(pname, sizeof(pname), "%s", comm);
	else if (!live || proc_comm(real, 0, pname, sizeof(pname)))
		return 0;
	if (pid != real) {
		snprintf(again, sizeof(again), "%s (pid %u #%u)", pname, real, model_pid_nth(pid));
		return model_process(c->m, pid, again) ? 0 : -ENOMEM;
	}
	return model_process(c->m, pid, pname) ? 0 : -ENOMEM;
}

/*
 * A traced thread exits: name it if it was gone before it could be.  The
 * last one of a process that had events: a later process given its pid
 * is another.  A process the model does not know yet (its threads seen
 * only by the scheduler so far, its calls still to be decoded) may turn
 * out to have events: its threads' names are kept for collector_end().
 */
static int on_exit_rec(struct collector *c, const struct gb_exit *e)
{
	uint64_t key = (uint64_t)e->pid << 32 | e->tid;
	uint32_t real = real_pid(c, e->pid);
	char comm[GB_COMM_LEN + 1];
	struct hashmap_slot *sl;
	int added;

	memcpy(comm, e->comm, GB_COMM_LEN);
	comm[GB_COMM_LEN] = 0;
	/* a process the model knows made calls or ran GPU work: not a helper the job ran */
	if (!model_find_process(c->m, e->pid)) {
		if (!hashmap_find(&c->seen, key) || !comm[0])
			return 0;
		sl = hashmap_put(&c->exit_comm, key, &added);
		if (!sl || !(sl->val = strtab_intern(&c->m->strs, comm)))
			return -ENOMEM;
		return 0;
	}
	/* once: threads exiting at once may each see the last go */
	if (e->ended && real < MODEL_PID_AGAIN && nends(c, real) == model_pid_nth(e->pid) - 1 &&
	    hashmap_add(&c->ends, real, e->ts))
		return -ENOMEM;
	if (!hashmap_find(&c->seen, key))
		return 0;
	return name_thread(c, e->pid, e->tid, comm);
}

/* A thread changes state (struct gb_state). */
static int on_state(struct collector *c, const struct gb_state *s)
{
	enum model_state st;
	int ret;

	switch (s->state) {
	case GB_ST_RUNNING:
		st = MS_RUNNING;
		break;
	case GB_ST_RUNNABLE:
		st = MS_RUNNABLE;
		break;
	case GB_ST_BLOCKED:
		st = s->syscall < 0 ? MS_OTHER_WAIT : model_state_of_syscall(s->syscall);
		break;
	case GB_ST_GIL:
		st = MS_GIL_WAIT;
		break;
	case GB_ST_EXIT:
		c->states++;
		return model_thread_exit(c->m, s->pid, s->tid, s->ts);
	case GB_ST_WOKEN:
		c->states++;
		return model_thread_woken(c->m, s->pid, s->tid, s->ts);
	default:
		return -EINVAL;
	}
	ret = model_thread_state(c->m, s->pid, s->tid, s->ts, st,
				 s->syscall < 0 || s->syscall > INT16_MAX ? -1 : s->syscall,
				 st == MS_GIL_WAIT ? s->holder : 0);
	if (!ret && s->pystack)
		model_state_stack(c->m, s->pid, s->tid, s->pystack);
	if (ret)
		return ret;
	c->states++;
	/* named later: a state may come before the thread's exec */
	ret = first_sighting(c, s->pid, s->tid);
	return ret < 0 ? ret : 0;
}

static int on_sample(struct collector *c, const struct gb_sample *s)
{
	struct model_sample ms = {
		.ts = s->ts, .pid = s->pid, .tid = s->tid, .cpu = s->cpu, .pystack = s->pystack,
		.nstack = s->nstack, .flags = s->flags & GB_SAMPLE_GC ? MODEL_SAMPLE_GC : 0,
	};
	int ret = model_add_sample(c->m, &ms);

	if (ret)
		return ret;
	c->samples++;
	ret = first_sighting(c, s->pid, s->tid);
	return ret < 0 ? ret : 0;
}

/*
 * Thread tid of pid (real, as /proc knows it), of a Python process,
 * waits since before the recording: its open state gets the Python stack
 * it waits in, walked from here (BPF walks a thread's frames as it leaves
 * its CPU, which this one did before the probes were there).
 */
static int seed_stack(struct collector *c, uint32_t pid, uint32_t real, pid_t tid)
{
	const struct gb_py_config *cfg = NULL;
	struct gb_pystack *st;
	int n, ret = 0;

	for (size_t i = 0; i < c->npy && !cfg; i++)
		if (c->py[i].pid == real)
			cfg = &c->py[i].cfg;
	if (!cfg)
		return 0;
	st = malloc(sizeof(*st));
	if (!st)
		return -ENOMEM;
	/* one frame more than the depth: a deeper stack is flagged truncated */
	n = pyruntime_walk(real, cfg, 0, tid, st->frames,
			   cfg->depth < GB_PY_MAX_DEPTH ? cfg->depth + 1 : GB_PY_MAX_DEPTH);
	if (n > 0) {
		st->type = GB_REC_PYSTACK;
		st->pid = real;
		st->truncated = (__u32)n > cfg->depth;
		st->depth = st->truncated ? cfg->depth : (__u32)n;
		st->sampled = 1;        /* its frames' names, if unresolved, counted apart */
		st->id = hashmap_hash_bytes(st->frames, st->depth * sizeof(st->frames[0])) | 1;
		ret = collector_record(c, st, offsetof(struct gb_pystack, frames) +
				       st->depth * sizeof(st->frames[0]));
		if (!ret)
			model_state_stack(c->m, pid, tid, st->id);
	}
	free(st);
	return ret == -ENOMEM ? ret : 0;
}

int collector_seed_states(struct collector *c, uint32_t real, uint64_t ts)
{
	uint32_t pid = pid_key(c, real, ts);
	const struct model_thread *t;
	enum model_state st;
	pid_t *tids = NULL;
	int n, ret = 0;
	char state;
	long nr;

	n = proc_list_threads(real, &tids);
	if (n < 0)
		return n;
	if (!hashmap_put(&c->seeded, pid, NULL)) {
		free(tids);
		return -ENOMEM;
	}
	for (int i = 0; i < n && !ret; i++) {
		t = model_find_thread(c->m, pid, tids[i]);
		if ((t && t->open_state) || proc_thread_wait(real, tids[i], &state, &nr))
			continue;
		if (state == 'R')
			st = MS_RUNNING;        /* or runnable: its next switch says */
		else
			st = nr < 0 ? MS_OTHER_WAIT : model_state_of_syscall(nr);
		ret = model_thread_state(c->m, pid, tids[i], ts, st,
					 st == MS_RUNNING || nr > INT16_MAX ? -1 : nr, 0);
		if (!ret && (ret = first_sighting(c, pid, tids[i])) > 0)
			ret = name_thread(c, pid, tids[i], NULL);
	}
	free(tids);
	return ret < 0 ? ret : 0;
}

int collector_seed_stacks(struct collector *c, uint32_t real)
{
	uint32_t pid = pid_key(c, real, UINT64_MAX);
	const struct model_thread *t;
	pid_t *tids = NULL;
	int n, ret = 0;

	n = proc_list_threads(real, &tids);
	if (n < 0)
		return n;
	for (int i = 0; i < n && !ret; i++) {
		t = model_find_thread(c->m, pid, tids[i]);
		if (t && t->open_state && c->m->states[t->open_state - 1].state != MS_RUNNING &&
		    !c->m->states[t->open_state - 1].pystack)
			ret = seed_stack(c, pid, real, tids[i]);
	}
	free(tids);
	return ret;
}

int collector_unfinished(struct collector *c, const struct gb_call *r, uint64_t ts)
{
	uint32_t pid = pid_key(c, r->pid, r->ts_entry);
	const struct hashmap_slot *last = hashmap_find(&c->seen, (uint64_t)pid << 32 | r->tid);
	size_t n = c->m->nev;
	struct model_event *ev;
	uint64_t end = ts;
	int ret;

	/*
	 * Its thread made a later call: this one returned unseen (entered as
	 * its probes were attached, before the return probe was), not in
	 * flight: left out, as a call whose return was not seen always was
	 */
	if (r->ts_return || r->ts_entry >= ts || (last && last->val > r->ts_entry))
		return 0;
	/* its process ended in the call: the first end after it began */
	for (const struct hashmap_slot *s = hashmap_find(&c->ends, r->pid); s;
	     s = hashmap_find_next(&c->ends, s))
		if (s->val > r->ts_entry && s->val < end)
			end = s->val;
	ret = collector_record(c, r, sizeof(*r));
	if (ret || c->m->nev != n + 1)
		return ret;
	ev = &c->m->ev[n];
	ev->fields |= MF_UNFINISHED;
	ev->dur = end - ev->ts;
	return 0;
}

void collector_end(struct collector *c, uint64_t ts)
{
	const struct hashmap_slot *s;
	struct hashmap pids;
	int err = 0;

	model_states_end(c->m, ts);
	/* the states and samples of the job's processes (with events, or
	 * named with -p) only; its threads seen only by the scheduler or the
	 * sampler named as they are now (an exec renames), those gone as they
	 * exited */
	hashmap_init(&pids);
	hashmap_for_each(&c->seeded, s)
		if (!hashmap_put(&pids, s->key, NULL))
			err = -ENOMEM;
	if (!err && !model_event_pids(c->m, &pids)) {
		model_states_keep(c->m, &pids);
		for (size_t i = 0; i < c->m->nthreads; i++) {
			const struct model_thread *t = &c->m->threads[i];
			const struct hashmap_slot *gone;

			if (t->name || !hashmap_find(&pids, t->pid))
				continue;
			gone = hashmap_find(&c->exit_comm, (uint64_t)t->pid << 32 | t->tid);
			name_thread(c, t->pid, t->tid,
				    gone ? strtab_get(&c->m->strs, (uint32_t)gone->val) : NULL);
		}
	}
	hashmap_release(&pids);
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
	ev->pystack = r->pystack;
	ev->nstack = r->nstack;
	autograd_nodes_stamp(&c->ag, ev);
	/* cuKernelGetFunction: the function inherits its kernel's name */
	if (kernel_get_function < 0)
		kernel_get_function = cuda_call_find("cuKernelGetFunction");
	if (r->call_id == (uint32_t)kernel_get_function && !r->ret && r->ts_return &&
	    (kname = model_kernel_name(c->m, r->pid, ev->handle)))
		model_set_kernel_name(c->m, r->pid, ev->func, strtab_get(&c->m->strs, kname));
	c->calls++;
	ret = call_sighting(c, r->pid, r->tid, r->ts_entry);
	return ret > 0 ? name_thread(c, r->pid, r->tid, NULL) : ret;
}

/*
 * A call record holds the parts its call has (gb_call_size()): widen it to
 * a whole struct gb_call, the rest zero (bytes past one are ignored).
 */
static int on_call_record(struct collector *c, const void *data, size_t size)
{
	struct gb_call r;
	uint32_t id;

	if (!c->call_size) {    /* the sizes, from the cookies the probes carry */
		c->call_size = malloc(cuda_ncalls * sizeof(*c->call_size));
		if (!c->call_size)
			return -ENOMEM;
		for (unsigned i = 0; i < cuda_ncalls; i++)
			c->call_size[i] = gb_call_size(cuda_call_cookie(i));
	}
	if (size < GB_CALL_HEAD)
		return -EINVAL;
	memcpy(&id, (const char *)data + offsetof(struct gb_call, call_id), sizeof(id));
	if (id >= cuda_ncalls || size < c->call_size[id])
		return -EINVAL;
	if (size >= sizeof(r))  /* whole: decode in place (ring records are 8-aligned) */
		return on_call(c, data);
	memset(&r, 0, sizeof(r));
	memcpy(&r, data, size);
	return on_call(c, &r);
}

static void set_where(struct model_event *ev, const struct ga_where *w, uint32_t pid)
{
	ev->pid = pid;
	ev->tid = 0;
	ev->device = w->device;
	ev->gpu_stream = w->stream;
}

/* A BPF batch record carries one injection-library batch whole. */
_Static_assert(GB_GPU_BATCH_MAX == GA_BATCH_MAX, "gb_gpu.data holds exactly one GA batch");

/* Kernels, copies, memsets and syncs begin alike: the untimed check reads k. */
_Static_assert(offsetof(struct ga_kernel, start) == offsetof(struct ga_memcpy, start) &&
	       offsetof(struct ga_kernel, start) == offsetof(struct ga_memset, start) &&
	       offsetof(struct ga_kernel, start) == offsetof(struct ga_sync, start) &&
	       offsetof(struct ga_kernel, end) == offsetof(struct ga_sync, end),
	       "GPU activity records share their where/start/end prefix");

/* One activity record; its size has been checked against the batch. */
static int on_gpu_record(struct collector *c, uint32_t pid, const struct ga_hdr *h)
{
	const struct ga_kernel *k = (const void *)h;
	const struct ga_memcpy *cp = (const void *)h;
	const struct ga_memset *ms = (const void *)h;
	const struct ga_sync *sy = (const void *)h;
	const struct ga_memory *mem = (const void *)h;
	const struct ga_name *n = (const void *)h;
	const struct ga_error *er = (const void *)h;
	static const uint16_t min_size[] = {
		[GA_KERNEL] = sizeof(struct ga_kernel), [GA_MEMCPY] = sizeof(struct ga_memcpy),
		[GA_MEMSET] = sizeof(struct ga_memset), [GA_SYNC] = sizeof(struct ga_sync),
		[GA_MEMORY] = sizeof(struct ga_memory), [GA_NAME] = sizeof(struct ga_name) + 8,
		[GA_DROPPED] = sizeof(struct ga_dropped), [GA_ERROR] = sizeof(struct ga_error) + 8,
		[GA_WINDOW] = sizeof(struct ga_window),
	};
	struct model_process *p;
	struct model_event *ev;
	char buf[GA_NAME_MAX];
	size_t len;

	if (!h->type || h->type > GA_WINDOW || h->size < min_size[h->type])
		return -EINVAL;
	switch (h->type) {
	case GA_NAME:
	case GA_ERROR:
		len = h->size - (h->type == GA_NAME ? sizeof(*n) : sizeof(*er));
		len = len < sizeof(buf) ? len : sizeof(buf) - 1;
		memcpy(buf, h->type == GA_NAME ? n->name : er->message, len);
		buf[len] = 0;
		if (h->type == GA_NAME)
			return set_kernel_name(c->m, pid, MODEL_GPU_NAME | n->id, buf[0] ? buf : "?");
		p = model_process(c->m, pid, NULL);
		if (!p)
			return -ENOMEM;
		p->gpu_error = strtab_intern(&c->m->strs, buf);
		return 0;
	case GA_WINDOW:
		p = model_process(c->m, pid, NULL);
		if (!p)
			return -ENOMEM;
		if (!p->gpu_window_ns || ((const struct ga_window *)h)->ts < p->gpu_window_ns)
			p->gpu_window_ns = ((const struct ga_window *)h)->ts;
		return 0;
	case GA_DROPPED:
		p = model_process(c->m, pid, NULL);
		if (!p)
			return -ENOMEM;
		p->gpu_dropped += ((const struct ga_dropped *)h)->records;
		return 0;
	}
	/* CUPTI gives no timing to work it could not time (start = end = 0) */
	if (h->type != GA_MEMORY && !k->start && !k->end) {
		c->gpu_untimed++;
		return 0;
	}
	ev = model_add_event(c->m);
	if (!ev)
		return -ENOMEM;
	ev->correlation = h->correlation;
	ev->link = MODEL_NO_LINK;
	switch (h->type) {
	case GA_KERNEL:
		set_where(ev, &k->w, pid);
		ev->kind = EV_KERNEL;
		ev->ts = k->start;
		ev->dur = k->end > k->start ? k->end - k->start : 0;
		ev->kernel = model_kernel_name(c->m, pid, MODEL_GPU_NAME | k->name_id);
		if (!ev->kernel)        /* its name may come later: named at the end */
			ev->func = MODEL_GPU_NAME | k->name_id;
		memcpy(ev->grid, k->grid, sizeof(ev->grid));
		memcpy(ev->block, k->block, sizeof(ev->block));
		ev->registers = k->registers;
		ev->static_shmem = k->static_shmem;
		ev->shared_mem = k->dynamic_shmem;
		ev->graph_node = k->graph_node;
		ev->args = k->args;
		break;
	case GA_MEMCPY:
		set_where(ev, &cp->w, pid);
		ev->kind = EV_MEMCPY;
		ev->ts = cp->start;
		ev->dur = cp->end > cp->start ? cp->end - cp->start : 0;
		ev->bytes = cp->bytes;
		ev->gpu_kind = cp->kind;
		ev->graph_node = cp->graph_node;
		break;
	case GA_MEMSET:
		set_where(ev, &ms->w, pid);
		ev->kind = EV_MEMSET;
		ev->ts = ms->start;
		ev->dur = ms->end > ms->start ? ms->end - ms->start : 0;
		ev->bytes = ms->bytes;
		ev->graph_node = ms->graph_node;
		break;
	case GA_SYNC:
		set_where(ev, &sy->w, pid);
		ev->kind = EV_GPU_SYNC;
		ev->ts = sy->start;
		ev->dur = sy->end > sy->start ? sy->end - sy->start : 0;
		ev->gpu_kind = sy->kind;
		ev->handle = sy->event;
		break;
	case GA_MEMORY:
		set_where(ev, &mem->w, pid);
		ev->kind = EV_MEMORY;
		ev->ts = mem->ts;
		ev->ptr = mem->address;
		ev->bytes = mem->bytes;
		ev->gpu_kind = mem->op;
		ev->copy_kind = mem->memory_kind;
		break;
	}
	c->gpu_records++;
	return 0;
}

static int on_gpu_batch(struct collector *c, const struct gb_gpu *g, size_t size)
{
	size_t off = 0, len = g->len;
	int ret;

	if (len > sizeof(g->data) || size < offsetof(struct gb_gpu, data) + len)
		return -EINVAL;
	while (off + sizeof(struct ga_hdr) <= len) {
		struct ga_hdr h;
		const void *rec = g->data + off;

		memcpy(&h, rec, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || off + h.size > len)
			return -EINVAL;
		/* records are 8-byte aligned in the batch, which the ring buffer keeps */
		ret = on_gpu_record(c, g->pid, rec);
		if (ret)
			return ret;
		off += h.size;
	}
	return off == len ? 0 : -EINVAL;
}

/*
 * Where each kind of record has its process id and its time (0: none);
 * pid 0: records whose pid stays real (stacks) or that the recorder takes.
 */
static const struct {
	uint16_t pid, ts;
} rec_at[] = {
	[GB_REC_CALL] = { offsetof(struct gb_call, pid), offsetof(struct gb_call, ts_entry) },
	[GB_REC_NAME] = { offsetof(struct gb_name, pid), 0 },
	[GB_REC_GPU] = { offsetof(struct gb_gpu, pid), offsetof(struct gb_gpu, ts) },
	[GB_REC_CORR] = { offsetof(struct gb_corr, pid), offsetof(struct gb_corr, ts) },
	[GB_REC_APIERR] = { offsetof(struct gb_apierr, pid), offsetof(struct gb_apierr, ts) },
	[GB_REC_EXIT] = { offsetof(struct gb_exit, pid), offsetof(struct gb_exit, ts) },
	[GB_REC_STATE] = { offsetof(struct gb_state, pid), offsetof(struct gb_state, ts) },
	[GB_REC_SAMPLE] = { offsetof(struct gb_sample, pid), offsetof(struct gb_sample, ts) },
	[GB_REC_WAKE] = { offsetof(struct gb_wake, pid), offsetof(struct gb_wake, ts) },
	[GB_REC_NODE] = { offsetof(struct gb_node, pid), offsetof(struct gb_node, ts) },
};

/*
 * A record of a later process at an ended one's pid: a copy, in
 * c->again, with that process's key for a pid (pid_key, model.h); NULL
 * when out of memory.  Others as they are.  A kernel name has no time:
 * it comes in the shared ring, in order with the exit records, so it is
 * the latest process's.  A later process's record read before the one
 * that said its pid ended (the reader stalled across both, and read the
 * per-CPU call rings first) is taken for the earlier process's.
 */
static const void *rekey(struct collector *c, uint32_t type, const void *data, size_t size)
{
	uint64_t ts = UINT64_MAX;
	uint32_t pid, key;

	if (type >= sizeof(rec_at) / sizeof(rec_at[0]) || !rec_at[type].pid ||
	    size < rec_at[type].pid + sizeof(pid) || size < rec_at[type].ts + sizeof(ts))
		return data;
	memcpy(&pid, (const char *)data + rec_at[type].pid, sizeof(pid));
	if (rec_at[type].ts)
		memcpy(&ts, (const char *)data + rec_at[type].ts, sizeof(ts));
	key = pid_key(c, pid, ts);
	if (key == pid)
		return data;
	if (size > c->again_cap) {
		void *p = realloc(c->again, size);

		if (!p)
			return NULL;
		c->again = p;
		c->again_cap = size;
	}
	memcpy(c->again, data, size);
	memcpy((char *)c->again + rec_at[type].pid, &key, sizeof(key));
	return c->again;
}

int collector_record(struct collector *c, const void *data, size_t size)
{
	const struct gb_name *n;
	char name[GB_NAME_LEN + 1];
	uint32_t type;
	int ret = -EINVAL;

	if (size < sizeof(type)) {
		c->bad++;
		return -EINVAL;
	}
	memcpy(&type, data, sizeof(type));
	if (c->ends.n && !(data = rekey(c, type, data, size)))
		return -ENOMEM;
	switch (type) {
	case GB_REC_CALL:
		ret = on_call_record(c, data, size);
		break;
	case GB_REC_NAME:
		n = data;
		if (size < sizeof(*n))
			break;
		memcpy(name, n->name, GB_NAME_LEN);
		name[GB_NAME_LEN] = 0;
		ret = name[0] ? set_kernel_name(c->m, n->pid, n->handle, name) : 0;
		break;
	case GB_REC_GPU:
		if (size >= offsetof(struct gb_gpu, data))
			ret = on_gpu_batch(c, data, size);
		break;
	case GB_REC_PYSTACK:
		if (size >= offsetof(struct gb_pystack, frames))
			ret = on_pystack(c, data, size);
		break;
	case GB_REC_NATIVE:
		if (size >= offsetof(struct gb_native, addrs))
			ret = on_native(c, data, size);
		break;
	case GB_REC_EXIT:
		if (size >= sizeof(struct gb_exit))
			ret = on_exit_rec(c, data);
		break;
	case GB_REC_STATE:
		if (size >= sizeof(struct gb_state))
			ret = on_state(c, data);
		break;
	case GB_REC_SAMPLE:
		if (size >= sizeof(struct gb_sample))
			ret = on_sample(c, data);
		break;
	case GB_REC_WAKE:
		if (size >= sizeof(struct gb_wake)) {
			const struct gb_wake *w = data;

			ret = model_add_wake(c->m, w->ts, w->pid, w->tid, w->waker, w->pystack);
		}
		break;
	case GB_REC_NODE:
		if (size >= sizeof(struct gb_node))
			ret = autograd_nodes_record(&c->ag, c->m, data);
		break;
	case GB_REC_CORR:
		if (size >= sizeof(struct gb_corr)) {
			const struct gb_corr *k = data;

			ret = model_add_corr(c->m, k->ts, k->pid, k->tid, k->correlation);
		}
		break;
	case GB_REC_APIERR:
		if (size >= sizeof(struct gb_apierr)) {
			const struct gb_apierr *k = data;

			ret = model_add_call_error(c->m, k->ts, k->pid, k->tid, k->result);
		}
		break;
	}
	if (ret == -EINVAL)
		c->bad++;
	else
		c->records++;
	return ret;
}
