// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record's targets: the -p processes, every CUDA process (-a) or
 * the command and its children (-- CMD); the libcuda each maps, probed
 * for that process or for all; GPU timing through the injection library,
 * loaded late into a running process when it lacks it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/proc.h"
#include "record/discover.h"
#include "record/record.h"
#include "record/remote_exec.h"

#define MAX_TRACED 4096
#define INJECT_THREAD_MS 100    /* late attach: how long to wait for each thread to stop */
#define REMOTE_EXEC_MS 1000     /* and for a Python thread to run the script instead */
#define STOP_WAIT_MS 20         /* for a process held at its libcuda mapping to stop */

int targets_init(struct record *r)
{
	const struct record_opts *o = r->o;

	r->targets = calloc(o->npids ? o->npids : 1, sizeof(*r->targets));
	if (!r->targets)
		return -ENOMEM;
	for (int i = 0; i < o->npids; i++)
		r->targets[i].pid = o->pids[i];
	r->ntargets = o->npids;
	return 0;
}

static int attach_lib(struct record *r, const char *path, pid_t pid)
{
	char err[512];
	int n = probes_attach(&r->probes, path, pid, err, sizeof(err));

	if (n < 0)
		fprintf(stderr, "gpubpf: %s\n", err);
	if (n > 0)
		r->nlibs++;
	if (n > 0 && r->o->verbose)
		fprintf(stderr, "gpubpf: attached %d probes to %s%s\n", n, path,
			pid > 0 ? "" : " for all processes");
	return n;
}

/*
 * The injection library's markers at path, for pid (-1: all processes);
 * owner: the process whose library it is (0: the one every process
 * loads), named where it fails (a process killed meanwhile: not said; it
 * read as GPU timing off for the whole recording).
 */
static int attach_markers(struct record *r, const char *path, pid_t pid, pid_t owner)
{
	char err[512];
	int n = probes_attach_markers(&r->probes, path, pid, err, sizeof(err));

	if (n >= 0)
		r->nmarkers += n;
	else if (!owner)
		fprintf(stderr, "gpubpf: GPU timing off: %s\n", err);
	else if (proc_alive(owner))
		fprintf(stderr, "gpubpf: pid %d: GPU timing off: %s\n", owner, err);
	return n;
}

void targets_mark_missed(struct record *r, pid_t pid, const char *why)
{
	targets_mark_process_missed(r, collector_pid(&r->coll, pid), why);
}

void targets_mark_process_missed(struct record *r, uint32_t key, const char *why)
{
	struct model_process *p = model_process(&r->model, key, NULL);

	if (p && !p->missed)
		p->missed = strtab_intern(&r->model.strs, why);
}

/*
 * Late attach: load the injection library into pid, once per recording.
 * 0 if it is there now; else the reason is printed once and kept in the
 * trace.
 */
static int late_attach(struct record *r, pid_t pid)
{
	struct late *l = NULL, *nl;
	struct model_process *p;
	char lib[PATH_MAX];

	for (size_t i = 0; i < r->nlate && !l; i++)
		if (r->late[i].pid == pid)
			return r->late[i].ret;
	nl = realloc(r->late, (r->nlate + 1) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	r->late = nl;
	l = &r->late[r->nlate++];
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->ret = discover_late_injection_lib(pid, r->o->injlib, lib, sizeof(lib), l->why,
					     sizeof(l->why)) ?:
		 inject_library(pid, lib, INJECT_THREAD_MS, &l->st, l->why, sizeof(l->why));
	/* every thread busy: a Python 3.14+ job can run the loading at a safe point itself */
	if (l->ret == -EAGAIN) {
		char why2[sizeof(l->why)];
		struct inject_stats st2;
		int ret2 = remote_exec_library(pid, lib, REMOTE_EXEC_MS, &st2, why2, sizeof(why2));

		if (!ret2) {
			st2.total_ns += l->st.total_ns;         /* ptrace's search first */
			l->ret = 0;
			l->st = st2;
			l->remote_exec = 1;
		} else if (ret2 != -EOPNOTSUPP) {
			size_t n = strlen(l->why);

			snprintf(l->why + n, sizeof(l->why) - n, "; %s", why2);
		}
	}
	p = model_process(&r->model, collector_pid(&r->coll, pid), NULL);
	if (l->ret) {
		fprintf(stderr, "gpubpf: pid %d: GPU timing off: %s; recording host calls only\n",
			pid, l->why);
		if (p)
			p->gpu_error = strtab_intern(&r->model.strs, l->why);
		return l->ret;
	}
	if (p) {
		p->inject_stall_ns = l->st.stall_ns ? l->st.stall_ns : 1;
		p->inject_tid = l->st.tid;
	}
	if (r->o->verbose && l->remote_exec)
		fprintf(stderr, "gpubpf: pid %d: loaded %s (late attach: CPython ran gpubpf's script "
			"on thread %d, for %.3f ms; %.1f ms in all)\n", pid, INJECTION_LIB, l->st.tid,
			l->st.stall_ns / 1e6, l->st.total_ns / 1e6);
	else if (r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d: loaded %s (late attach through thread %d, "
			"stopped %.3f ms in system call %ld; %.1f ms in all)\n", pid, INJECTION_LIB, l->st.tid,
			l->st.stall_ns / 1e6, l->st.syscall_nr, l->st.total_ns / 1e6);
	return 0;
}

int targets_late_failed(struct record *r, pid_t pid)
{
	for (size_t i = 0; i < r->nlate; i++)
		if (r->late[i].pid == pid)
			return r->late[i].ret != 0;
	return 0;
}

/*
 * Our markers are attached to pid's library at path: tell it, once per
 * process (it may be collecting for another recorder already, which the
 * semaphores cannot show).  A library of an older gpubpf cannot be told:
 * collecting for another, it sends us no window and no kernel names.
 */
static void join(struct record *r, pid_t pid, const char *path)
{
	int added = 0;
	struct hashmap_slot *s = hashmap_put(&r->joined, collector_pid(&r->coll, pid), &added);
	int ret;

	if (!s || !added)
		return;
	ret = inject_lib_join(pid, INJECTION_LIB, path);
	if (ret && ret != -ENOENT && r->o->verbose)
		fprintf(stderr, "gpubpf: pid %d: cannot tell its %s that a recorder joined: %s\n",
			pid, INJECTION_LIB, strerror(-ret));
}

/*
 * -p: GPU timing comes from the injection library: the one the target
 * loaded at start, a copy an earlier recording loaded late (a memfd), or
 * one loaded now.
 */
static int target_markers(struct record *r, struct target *t)
{
	char path[PATH_MAX];

	if (!r->o->device || t->markers)
		return t->markers;
	if (inject_find_lib(t->pid, INJECTION_LIB, path, sizeof(path)) && r->o->inject &&
	    !late_attach(r, t->pid) && inject_find_lib(t->pid, INJECTION_LIB, path, sizeof(path)))
		return 0;
	if (!inject_find_lib(t->pid, INJECTION_LIB, path, sizeof(path)) &&
	    attach_markers(r, path, t->pid, t->pid) >= 0) {
		t->markers = 1;
		join(r, t->pid, path);
	}
	return t->markers;
}

/* -p: attach to the libcuda each target has mapped, note exits; the number alive. */
static int scan_targets(struct record *r)
{
	char path[PATH_MAX];
	int alive = 0;

	r->waiting = 0;
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];

		if (t->gone)
			continue;
		if (!proc_alive(t->pid)) {
			t->gone = 1;
			fprintf(stderr, "gpubpf: pid %d exited\n", t->pid);
			continue;
		}
		alive++;
		if (proc_find_mapping(t->pid, "libcuda.so", path, sizeof(path))) {
			r->waiting = 1;
			continue;
		}
		/*
		 * Held as it mapped libcuda: its record, on its way, probes it
		 * (targets_on_map()).  Probed here, it would be said to have
		 * run before its probes, which the hold prevents.
		 */
		if (probes_is_held(&r->probes, t->pid))
			continue;
		if (!t->seen_libcuda && r->o->verbose)
			fprintf(stderr, "gpubpf: pid %d has loaded %s\n", t->pid, path);
		t->seen_libcuda = 1;
		if (!r->o->libcuda && !probes_attached(&r->probes, path, t->pid) &&
		    attach_lib(r, path, t->pid) > 0)
			targets_mark_missed(r, t->pid, "its libcuda was probed only after it was loaded");
		target_markers(r, t);
		pystacks_try(r, t->pid);
		pystacks_autograd(r, t->pid);
	}
	return alive;
}

/* -a and -- CMD: attach, for all processes, to any libcuda a traced one maps. */
static void scan_libs(struct record *r)
{
	char path[PATH_MAX];
	pid_t *pids = NULL;
	int n;

	if (r->o->libcuda && !r->o->device && !r->o->stacks)
		return;
	if (r->o->mode == MODE_ALL) {
		n = proc_list(&pids);
	} else {
		pids = malloc(MAX_TRACED * sizeof(*pids));
		n = pids ? probes_traced_pids(&r->probes, pids, MAX_TRACED) : 0;
	}
	for (int i = 0; i < n; i++) {
		int cuda = !proc_find_mapping(pids[i], "libcuda.so", path, sizeof(path)), have;

		/* -a: its threads' states and samples too */
		if (cuda && r->o->mode == MODE_ALL)
			probes_trace_pid(&r->probes, pids[i]);
		if (cuda && !probes_attached(&r->probes, path, -1) && attach_lib(r, path, -1) > 0 &&
		    r->collecting)
			targets_mark_missed(r, pids[i], "its libcuda was probed only after it was loaded");
		if (cuda || r->o->mode == MODE_CMD)
			pystacks_try(r, pids[i]);
		if (cuda)
			pystacks_autograd(r, pids[i]);
		if (!r->o->device)
			continue;
		have = !inject_find_lib(pids[i], INJECTION_LIB, path, sizeof(path));
		/* -a: every CUDA process gets the library, late if it was started without */
		if (!have && cuda && r->o->mode == MODE_ALL && r->o->inject && pids[i] != getpid() &&
		    !late_attach(r, pids[i]))
			have = !inject_find_lib(pids[i], INJECTION_LIB, path, sizeof(path));
		if (have && !probes_attached(&r->probes, path, -1))
			attach_markers(r, path, -1, pids[i]);
		/* -a: a library loaded before we came may be another recorder's already */
		if (have && r->o->mode == MODE_ALL && probes_attached(&r->probes, path, -1))
			join(r, pids[i], path);
	}
	free(pids);
}

/*
 * The processes -p names: a thread's id (from top -H, a log line) stands
 * for its process, said once; each process once.  One that was there when
 * gpubpf started (record_opts_check()) and has ended since, during the
 * set-up, is said to have exited, as one that exits later, and the others
 * are recorded.  0, or -ESRCH or -EINVAL with the reason printed: none
 * left, or a kernel thread.
 */
static int targets_processes(struct record *r)
{
	int n = 0;

	for (int i = 0; i < r->ntargets; i++) {
		pid_t id = r->targets[i].pid, pid = proc_tgid(id);
		char comm[32] = "?";
		int dup = 0;

		if (pid < 0 || !proc_alive(pid)) {
			fprintf(stderr, "gpubpf: pid %d exited before the recording began\n", id);
			continue;
		}
		proc_comm(pid, 0, comm, sizeof(comm));
		if (proc_kernel_thread(pid)) {
			fprintf(stderr, "gpubpf: pid %d is a kernel thread (%s), not a CUDA program\n",
				id, comm);
			return -EINVAL;
		}
		if (pid != id)
			fprintf(stderr, "gpubpf: %d is a thread of process %d (%s): recording that "
				"process\n", id, pid, comm);
		for (int j = 0; j < n; j++)
			dup |= r->targets[j].pid == pid;
		if (!dup)
			r->targets[n++].pid = pid;
	}
	r->ntargets = n;
	return n ? 0 : -ESRCH;
}

int targets_setup_pids(struct record *r)
{
	char path[PATH_MAX];
	int have_default = 0;
	int ret = targets_processes(r);

	if (ret)
		return ret;
	if (r->o->libcuda)
		have_default = 1;
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];

		if (probes_trace_pid(&r->probes, t->pid))
			return -ENOMEM;
		if (r->o->states)
			collector_seed_states(&r->coll, t->pid, now_ns(CLOCK_MONOTONIC));
		ret = proc_find_mapping(t->pid, "libcuda.so", path, sizeof(path));
		if (ret == -EACCES || ret == -EPERM) {
			fprintf(stderr, "gpubpf: cannot read the maps of pid %d: %s (%s)\n",
				t->pid, strerror(-ret), PROC_ACCESS_HINT);
			return ret;
		}
		pystacks_try(r, t->pid);
		/* its Python found: a thread waiting already, in the stack it waits in */
		if (r->o->states && r->o->stacks && collector_seed_stacks(&r->coll, t->pid))
			return -ENOMEM;
		if (!ret) {
			t->seen_libcuda = 1;
			pystacks_autograd(r, t->pid);
			if (!r->o->libcuda && attach_lib(r, path, t->pid) < 0)
				return -EINVAL;
			if (r->o->device && !target_markers(r, t) && !targets_late_failed(r, t->pid))
				fprintf(stderr, "gpubpf: pid %d: GPU timing needs %s loaded at start: "
					"run the job with CUDA_INJECTION64_PATH=%s; recording host "
					"calls only\n", t->pid, INJECTION_LIB, r->o->injlib);
			if (!r->o->libcuda)
				continue;
		}
		/* not loaded yet: probe the library it will most likely load */
		if (!r->o->libcuda && !have_default) {
			have_default = !discover_libcuda(getenv("LD_LIBRARY_PATH"), r->libcuda_buf,
							 sizeof(r->libcuda_buf)) ? 1 : -1;
		}
		if (!r->o->libcuda) {
			fprintf(stderr, "gpubpf: pid %d has not loaded libcuda yet; waiting for it\n",
				t->pid);
			r->waiting = 1;
		}
		if (have_default > 0 &&
		    attach_lib(r, r->o->libcuda ? r->o->libcuda : r->libcuda_buf, t->pid) < 0)
			return -EINVAL;
	}
	return 0;
}

int targets_need_hold(struct record *r)
{
	char path[PATH_MAX];

	if (r->o->mode != MODE_PIDS)
		return 1;
	for (int i = 0; i < r->ntargets; i++)
		if (proc_find_mapping(r->targets[i].pid, "libcuda.so", path, sizeof(path)))
			return 1;
	return 0;
}

int targets_setup_global(struct record *r)
{
	const char *lib = r->o->libcuda;

	if (!lib && !discover_libcuda(getenv("LD_LIBRARY_PATH"), r->libcuda_buf,
				      sizeof(r->libcuda_buf)))
		lib = r->libcuda_buf;
	if (r->o->device) {
		char sim[PATH_MAX];

		attach_markers(r, r->o->injlib, -1, 0);
		/* what the simulated driver loads instead, if it is the driver */
		if (!discover_sim_injection_lib(sim, sizeof(sim)) && strcmp(sim, r->o->injlib))
			attach_markers(r, sim, -1, 0);
	}
	if (lib && attach_lib(r, lib, -1) < 0)
		return -EINVAL;
	/* the CUDA processes running now: their libcuda, their Python, and with
	 * -a the injection library (late attach) */
	if (!lib || r->o->mode == MODE_ALL)
		scan_libs(r);
	if (r->o->mode == MODE_ALL && !r->probes.ntargets) {
		fprintf(stderr, "gpubpf: no libcuda.so.1 found on this machine "
			"(use --libcuda PATH)\n");
		return -ENOENT;
	}
	return 0;
}

/*
 * pid, which our programs stopped, still stopped: its stop comes as its
 * mmap returns, which may not be yet.
 */
static int still_held(pid_t pid)
{
	for (int i = 0; i < STOP_WAIT_MS; i++) {
		if (proc_stopped(pid))
			return 1;
		usleep(1000);
	}
	return 0;
}

/*
 * A traced process mapped a libcuda no probe covered (see struct gb_map):
 * probe it and let the process go on.  Whatever fails, a held process is
 * continued.
 */
void targets_on_map(struct record *r, const struct gb_map *m)
{
	pid_t who = r->o->mode == MODE_PIDS ? (pid_t)m->pid : -1;
	char path[PATH_MAX];
	int n = -ENOENT, ret;

	/*
	 * By inode; an overlay file system may show another inode in the
	 * maps.  The record comes as the mmap begins: a held process stops as
	 * it returns, and only then is the mapping surely in its maps (its
	 * Python was not looked for, and its libcuda said not probed).
	 */
	if (!proc_find_mapping_ino(m->pid, "libcuda.so", m->ino, path, sizeof(path)) ||
	    !proc_find_mapping(m->pid, "libcuda.so", path, sizeof(path)) ||
	    (m->held == GB_HELD && still_held(m->pid) &&
	     (!proc_find_mapping_ino(m->pid, "libcuda.so", m->ino, path, sizeof(path)) ||
	      !proc_find_mapping(m->pid, "libcuda.so", path, sizeof(path)))))
		n = attach_lib(r, path, who);
	else if (proc_alive(m->pid))
		fprintf(stderr, "gpubpf: pid %u mapped %.*s but it cannot be found in its maps\n",
			m->pid, GB_MAP_NAME_LEN, m->name);
	/* this process is handled; a probe for all processes was noted by the attach */
	probes_lib_known(&r->probes, m->dev, m->ino, m->pid);
	/* held: before its first call (-p: a target that loaded libcuda late or execed) */
	if (n >= 0) {
		pystacks_try(r, m->pid);
		pystacks_autograd(r, m->pid);
	}
	/*
	 * Another recorder, holding it too, may have let it go first: then
	 * its first calls may have come before our probes.
	 */
	if (m->held == GB_HELD && n > 0 && !still_held(m->pid))
		targets_mark_missed(r, m->pid, "another recorder (or a SIGCONT) let it go on before "
				    "this one had probed its libcuda: its first calls may be missing");
	if (m->held == GB_HELD && (ret = probes_continue(&r->probes, m->pid)))
		fprintf(stderr, "gpubpf: cannot continue pid %u: %s\n", m->pid, strerror(-ret));
	/* continued first: a late attach needs a thread that runs to a safe point */
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].pid == (pid_t)m->pid) {
			r->targets[i].seen_libcuda = 1;
			target_markers(r, &r->targets[i]);
		}
	/* n == 0: that file was probed already, no call can have been missed */
	if (n != 0 && m->held == GB_SHELL_JOB)
		targets_mark_missed(r, m->pid, "it is a job of an interactive shell, which gpubpf does "
				    "not stop: its libcuda was probed only after it was loaded");
	else if (n != 0 && m->held == GB_RECORDER_AWAY)
		targets_mark_missed(r, m->pid, "gpubpf was not running (stopped, or starved of the "
				    "CPU) or its collector seemed hung, so it did not stop the process: "
				    "its libcuda was probed only after it was loaded");
	else if (n != 0 && m->held == GB_PTRACED)
		targets_mark_missed(r, m->pid, "it runs under a debugger, which would see a stop: its "
				    "libcuda was probed only after it was loaded");
	else if (n != 0 && m->held != GB_HELD)
		targets_mark_missed(r, m->pid, "it could not be stopped while its probes were attached: "
				    "its libcuda was probed only after it was loaded");
	else if (n < 0)
		targets_mark_missed(r, m->pid, "its libcuda could not be probed");
	if (r->o->verbose)
		fprintf(stderr, "gpubpf: pid %u loaded %s%s%.3f ms\n", m->pid, path,
			m->held == GB_HELD ? ", held until probed: " : ", not held: seen after ",
			(now_ns(CLOCK_MONOTONIC) - m->ts) / 1e6);
}


int targets_scan(struct record *r)
{
	if (r->nlate)
		inject_reap();
	if (r->o->mode != MODE_PIDS) {
		scan_libs(r);
		return 1;
	}
	return scan_targets(r);
}

void targets_say_left_running(struct record *r)
{
	char path[PATH_MAX], list[128] = "";
	pid_t *pids;
	int n, left = 0;
	size_t len = 0;

	if (r->o->mode != MODE_CMD || !r->child.done)
		return;
	pids = malloc(MAX_TRACED * sizeof(*pids));
	n = pids ? probes_traced_pids(&r->probes, pids, MAX_TRACED) : 0;
	for (int i = 0; i < n; i++) {
		if (pids[i] == r->child.pid || !proc_alive(pids[i]) ||
		    proc_find_mapping(pids[i], "libcuda.so", path, sizeof(path)))
			continue;
		if (left++ < 8 && len < sizeof(list))
			len += snprintf(list + len, sizeof(list) - len, "%s%d", len ? ", " : "",
					pids[i]);
	}
	free(pids);
	if (left)
		fprintf(stderr, "gpubpf: the command exited, but %d CUDA process%s it started still "
			"run%s (pid %s%s): their calls from now on are not recorded\n", left,
			left == 1 ? "" : "es", left == 1 ? "s" : "", list, left > 8 ? ", ..." : "");
}

/* -p: a process that never loaded libcuda is not a CUDA process. */
int targets_check_seen(struct record *r)
{
	int any = 0;

	if (r->o->mode != MODE_PIDS || r->o->libcuda)
		return 0;
	for (int i = 0; i < r->ntargets; i++) {
		any |= r->targets[i].seen_libcuda;
		if (!r->targets[i].seen_libcuda)
			fprintf(stderr, "gpubpf: pid %d never loaded libcuda (is it a CUDA program?)\n",
				r->targets[i].pid);
	}
	return any || r->coll.calls ? 0 : -ENOENT;
}

