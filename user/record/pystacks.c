// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record's Python stacks: when to look for a traced process's
 * interpreter, and handing its layout to the BPF walker and the collector.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "record/record.h"
#include "lib/proc.h"
#include "sym/elf_syms.h"
#include "sym/pyruntime.h"

#define PY_GIVE_UP_NS 10000000000ULL /* a process not found running Python by then runs none */

/* pid's entry, added if new; NULL if out of memory. */
static struct py_try *py_try_of(struct record *r, pid_t pid)
{
	struct py_try *nt;

	for (size_t i = 0; i < r->npy; i++)
		if (r->py[i].pid == pid)
			return &r->py[i];
	nt = realloc(r->py, (r->npy + 1) * sizeof(*nt));
	if (!nt)
		return NULL;
	r->py = nt;
	r->py[r->npy] = (struct py_try){ .pid = pid, .first = now_ns(CLOCK_MONOTONIC) };
	return &r->py[r->npy++];
}

/*
 * Count the code objects pid frees (gb_py_code_free), so that its walks
 * may keep the code tokens they read from call to call: 1, 0 where that
 * cannot be (its walks read each frame's, at every call), or -EAGAIN
 * while its loader has yet to relocate libpython (look again).
 */
static int pystacks_watch_frees(struct record *r, struct py_try *t)
{
	pid_t pid = t->pid;
	pid_t who = r->o->mode == MODE_PIDS ? pid : -1;
	char path[PATH_MAX], why[512];
	__u64 off;
	int ret;

	ret = pyruntime_code_free(pid, path, sizeof(path), &off, why, sizeof(why));
	if (ret == -EAGAIN && now_ns(CLOCK_MONOTONIC) - t->first < PY_GIVE_UP_NS)
		return ret;
	if (!ret)
		ret = probes_attach_code_free(&r->probes, path, off, who, why, sizeof(why));
	if (ret < 0 && r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d: its walks read every frame's code object at "
			"each call: %s\n", pid, why);
	else if (ret > 0 && r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d: counting the code objects %s frees%s\n", pid,
			path, who > 0 ? "" : " in all processes");
	return ret >= 0;
}

/*
 * A process walked before its code frees could be counted: once they are,
 * its walks keep their tokens from call to call.
 */
static void pystacks_frees_again(struct record *r, struct py_try *t)
{
	int ret = pystacks_watch_frees(r, t);

	if (ret == -EAGAIN)
		return;
	t->frees_pending = 0;
	t->cfg.code_frees = ret;
	if (ret && probes_set_python(&r->probes, t->pid, &t->cfg))
		fprintf(stderr, "gpubpf: pid %d: no Python stacks: out of memory\n", t->pid);
}

/*
 * libc's _exit and execve in pid: the file (glibc, or musl's loader) and
 * their offsets (execve's 0 where there is none); 0, -EAGAIN where no libc
 * is mapped (yet: a process found at its exec, before its loader runs),
 * or -ENOENT.  execv, execvp and the others come to execve (an alias of
 * glibc's __execve), so does Python's os.exec*().
 */
static int libc_ends(pid_t pid, char *path, size_t len, uint64_t off[2], char *why,
		     size_t whylen)
{
	static const char *const names[] = { "_exit", "execve" };

	if (proc_find_mapping(pid, "libc.so", path, len) &&
	    proc_find_mapping(pid, "ld-musl", path, len)) {
		snprintf(why, whylen, "it maps no libc.so");
		return -EAGAIN;
	}
	if (elf_sym_offsets(path, names, 2, off) < 1 || !off[0]) {
		snprintf(why, whylen, "no _exit in %.400s", path);
		return -ENOENT;
	}
	return 0;
}

/*
 * Hold pid where it begins to end (its interpreter's Py_FinalizeEx, libc's
 * _exit and execve) until the stacks it sent before are named: its memory
 * goes with it, and a process that ends right after a call (os._exit in a
 * worker, a short script, os.execv into another program) left the frames
 * of that call unnamed ("?").
 */
static void pystacks_hold_ends(struct record *r, struct py_try *t)
{
	pid_t who = r->o->mode == MODE_PIDS ? t->pid : -1;
	char path[PATH_MAX], why[512];
	uint64_t offs[2];
	__u64 off;
	int ret;

	if (!t->exit_pending) {
		ret = pyruntime_finalize(t->pid, path, sizeof(path), &off, why, sizeof(why));
		if (!ret)
			ret = probes_attach_end(&r->probes, path, off, who, why, sizeof(why));
		if (ret < 0 && r->o->verbose)
			fprintf(stderr, "gpubpf: pid %d: not held as its interpreter finalizes (a "
				"call made just before may have its frames unnamed): %s\n", t->pid,
				why);
	}
	ret = libc_ends(t->pid, path, sizeof(path), offs, why, sizeof(why));
	/* again at its next look (its libcuda, the targets' poll) */
	t->exit_pending = ret == -EAGAIN;
	if (!ret)
		ret = probes_attach_end(&r->probes, path, offs[0], who, why, sizeof(why));
	if (ret < 0 && !t->exit_pending && r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d: not held at its _exit (a call made just before "
			"may have its frames unnamed): %s\n", t->pid, why);
	if (ret >= 0 && offs[1] &&
	    probes_attach_end(&r->probes, path, offs[1], who, why, sizeof(why)) < 0 &&
	    r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d: not held at its execve (a call made just before "
			"may have its frames unnamed): %s\n", t->pid, why);
}

void pystacks_end(struct record *r, const struct gb_end *e)
{
	static const char *const why[] = {
		[GB_NOT_HELD] = "the kernel did not stop it",
		[GB_SHELL_JOB] = "a job of an interactive shell",
		[GB_PTRACED] = "it runs under a debugger",
		[GB_RECORDER_AWAY] = "gpubpf had not run for a second",
	};
	int ret;

	if (e->held != GB_HELD) {
		if (r->o->verbose)
			fprintf(stderr, "gpubpf: pid %u not held as it ends (%s): a call made just "
				"before may have its frames unnamed\n", e->pid,
				e->held < sizeof(why) / sizeof(why[0]) && why[e->held] ?
				why[e->held] : "?");
		return;
	}
	if ((ret = probes_continue(&r->probes, e->pid)))
		fprintf(stderr, "gpubpf: cannot continue pid %u: %s\n", e->pid, strerror(-ret));
	else if (r->o->verbose)
		fprintf(stderr, "gpubpf: pid %u held as it ends, %.3f ms, until its stacks were "
			"named\n", e->pid, (now_ns(CLOCK_MONOTONIC) - e->ts) / 1e6);
}

/*
 * Python stacks for pid: find its interpreter and hand the layout to the
 * BPF walker and the collector.  A process is tried until it is found to
 * run CPython, to run one gpubpf cannot walk (said once), or for
 * PY_GIVE_UP_NS (it runs none).  Returns 1 when pid is settled.
 */
int pystacks_try(struct record *r, pid_t pid)
{
	struct gb_py_config cfg;
	struct py_try *t;
	char why[256];
	int ret;

	if (!r->o->stacks)
		return 1;
	t = py_try_of(r, pid);
	if (!t)
		return 1;
	if (t->done) {
		if (t->frees_pending)
			pystacks_frees_again(r, t);
		if (t->exit_pending)
			pystacks_hold_ends(r, t);
		return 1;
	}
	t->last = now_ns(CLOCK_MONOTONIC);
	ret = pyruntime_find(pid, &cfg, why, sizeof(why));
	if (ret == -ENOENT || ret == -EAGAIN) {
		t->done = now_ns(CLOCK_MONOTONIC) - t->first >= PY_GIVE_UP_NS;
		return t->done;
	}
	t->done = 1;
	if (ret) {
		fprintf(stderr, "gpubpf: pid %d: no Python stacks: %s\n", pid, why);
		return 1;
	}
	cfg.depth = r->o->stack_depth;
	/* walked at once all the same: its walks read every token until then */
	ret = pystacks_watch_frees(r, t);
	t->frees_pending = ret == -EAGAIN;
	cfg.code_frees = ret > 0;
	t->cfg = cfg;
	if (collector_set_python(&r->coll, pid, &cfg) || probes_set_python(&r->probes, pid, &cfg)) {
		fprintf(stderr, "gpubpf: pid %d: no Python stacks: out of memory\n", pid);
		return 1;
	}
	pystacks_hold_ends(r, t);
	t->found = 1;
	t->found_ns = now_ns(CLOCK_MONOTONIC);
	if (t->unwalked) {
		r->py_late_calls += t->unwalked;
		r->py_late_procs++;
	}
	if (r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d runs CPython %u.%u: walking its stacks\n", pid,
			cfg.version / 100, cfg.version % 100);
	return 1;
}

int pystacks_tried(struct record *r, pid_t pid)
{
	for (size_t i = 0; i < r->npy; i++)
		if (r->py[i].pid == pid)
			return 1;
	return 0;
}

void pystacks_unwalked(struct record *r, pid_t pid, uint64_t ts)
{
	struct py_try *t = NULL;

	/* at each call without a stack: the last one's process first */
	if (r->py_hint < r->npy && r->py[r->py_hint].pid == pid)
		t = &r->py[r->py_hint];
	for (size_t i = 0; i < r->npy && !t; i++)
		if (r->py[i].pid == pid) {
			t = &r->py[i];
			r->py_hint = i;
		}
	/* not looked for yet, or given up on: it runs no Python we know of */
	if (!t || (t->done && !t->found))
		return;
	if (!t->found) {                /* counted if it is found */
		t->unwalked++;
		return;
	}
	if (ts >= t->found_ns)          /* a thread that runs no Python */
		return;
	r->py_late_procs += !t->unwalked;
	t->unwalked++;
	r->py_late_calls++;
}

void pystacks_forked(struct record *r, const struct gb_fork *f)
{
	struct py_try *parent = NULL, *t;
	struct gb_py_config cfg;
	int exit_pending;

	for (size_t i = 0; i < r->npy && !parent; i++)
		if (r->py[i].pid == (pid_t)f->parent && r->py[i].found)
			parent = &r->py[i];
	if (!parent)
		return;
	cfg = parent->cfg;              /* the layout BPF copied */
	/*
	 * Its parent's _exit hook still to attach (found before its libc was
	 * mapped): its own next look (its libcuda) attaches it too, or a
	 * worker that ends before its parent's next look is not held there
	 */
	exit_pending = parent->exit_pending;
	t = py_try_of(r, f->pid);       /* may move r->py */
	if (!t)
		return;
	t->cfg = cfg;
	t->done = t->found = 1;
	t->found_ns = f->ts;
	t->exit_pending = exit_pending;
	t->frees_pending = 0;
	if (collector_set_python(&r->coll, f->pid, &t->cfg))
		fprintf(stderr, "gpubpf: pid %u: no Python stacks: out of memory\n", f->pid);
	else if (r->o->verbose)
		fprintf(stderr, "gpubpf: pid %u, a fork of %u: walking its stacks as its parent's\n",
			f->pid, f->parent);
}

void pystacks_exec(struct record *r, pid_t pid, uint64_t ts)
{
	int found = 0;
	size_t i;

	for (i = 0; i < r->npy && r->py[i].pid != pid; i++)
		;
	/* looked for since: what was found (or not) is the new program's */
	if (i < r->npy && r->py[i].last >= ts)
		return;
	if (i < r->npy) {
		found = r->py[i].found;
		r->py[i] = r->py[--r->npy];
	}
	/*
	 * BPF holds it at its new program's libcuda (hold_exec), for it to be
	 * looked for before its first call, where the hook that holds is
	 * attached: -p attaches it only now, when first needed (its detach
	 * costs 0.1-0.3 s); a program that maps libcuda before that is looked
	 * for by the targets' poll
	 */
	if (r->o->stacks && !r->holding)
		r->holding = !probes_hold_maps(&r->probes);
	collector_forget_python(&r->coll, pid);
	if (r->last_pid == pid)
		r->last_pid = 0;
	if (!found) {
		if (r->o->verbose)
			fprintf(stderr, "gpubpf: pid %d runs a new program: looking for its Python\n",
				pid);
		/* -p: the targets' poll tries it; -a, -- CMD: its next call, or the next scan */
		return;
	}
	/*
	 * Its Python was found, and it may have been the new program's: the
	 * exec's record comes after the new program is mapped, and a look
	 * then finds it (~1 run in 5 of a chroot's python under load).  The
	 * walks of the new program, with that layout, have sent stacks since,
	 * each once: they are decoded if it is found again now, before any of
	 * its records is read.  Not found: nothing is walked until it is.
	 */
	probes_forget_python(&r->probes, pid);
	if (r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d ran Python and runs a new program: looking for its "
			"Python now\n", pid);
	pystacks_try(r, pid);
}

void pystacks_ended(struct record *r, pid_t pid)
{
	for (size_t i = 0; i < r->npy; i++)
		if (r->py[i].pid == pid) {
			r->py[i] = r->py[--r->npy];
			break;
		}
	if (r->last_pid == pid)
		r->last_pid = 0;
}

void pystacks_autograd(struct record *r, pid_t pid)
{
	pid_t who = r->o->mode == MODE_PIDS ? pid : -1;
	struct py_try *t;
	char path[PATH_MAX], err[512];
	int n;

	if (!r->o->autograd || !(t = py_try_of(r, pid)) || t->autograd)
		return;
	t->autograd = 1;
	/* libtorch_cpu.so defines the engine; before 1.6 it was all in libtorch.so */
	if (proc_find_mapping(pid, "libtorch_cpu.so", path, sizeof(path)) &&
	    proc_find_mapping(pid, "libtorch.so", path, sizeof(path))) {
		if (r->o->mode == MODE_PIDS)
			fprintf(stderr, "gpubpf: pid %d maps no libtorch: no autograd nodes\n", pid);
		return;
	}
	if (probes_attached(&r->probes, path, who))
		return;
	n = probes_attach_autograd(&r->probes, path, who, err, sizeof(err));
	if (n < 0)
		fprintf(stderr, "gpubpf: pid %d: no autograd nodes: %s\n", pid, err);
	else if (n > 0 && r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d: probing the autograd engine of %s%s\n", pid, path,
			who > 0 ? "" : " for all processes");
}
