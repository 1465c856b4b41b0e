// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for user/sym/pyruntime.c, with user/sym/pysym.c: for each installed
 * CPython (pyenv 3.6+, Debian's static non-PIE 3.11), a process parked in
 * time.sleep under a known stack: pyruntime_find gives its version and
 * offsets equal to offsetof on its own headers (scripts/py-offsets.sh),
 * and walking its main thread's frames with them, then symbolising them,
 * gives exactly the stack the process wrote (names, files, lines).  Plus:
 * a process without Python, an unsupported version (pyenv's 2.7), and a
 * libpython caught while the loader maps it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "sym/pyruntime.h"
#include "sym/pysym.h"
#include "tap.h"
#include "pytarget.h"

static char tmpdir[] = "/tmp/gpubpf-pyrt-XXXXXX";

/* offsetof on the headers in inc, key by key; 0 or -1. */
struct offs { char key[32]; long val; };

static int header_offsets(const char *inc, struct offs *o, int max)
{
	char cmd[1024], line[256];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "bash scripts/py-offsets.sh '%s' 2>/dev/null", inc);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %ld", o[n].key, &o[n].val) == 2)
			n++;
	return pclose(f) ? -1 : n;
}

static long get(const struct offs *o, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(o[i].key, key))
			return o[i].val;
	return GB_PY_NONE;
}

/*
 * PEP 768's request (3.14+): where pyruntime_remote() writes, against the
 * headers; the thread asked is the main one, which runs Python (parked in
 * time.sleep).  Before 3.14: not supported.
 */
static void check_remote(const struct pyinterp *py, pid_t pid, const struct gb_py_config *c,
			 const struct offs *o, int n)
{
	struct py_remote rx;
	char why[256];
	int err = pyruntime_remote(pid, c, &rx, why, sizeof(why));

	if (py->version < 314) {
		is_int(err, -EOPNOTSUPP, "%s: no remote execution before 3.14", py->python);
		return;
	}
	if (!is_int(err, 0, "%s: pyruntime_remote (%s)", py->python, err ? why : "ok"))
		return;
	is_int(rx.native_tid, pid, "%s: the main thread is asked", py->python);
	is_int(rx.eval_breaker - rx.tstate, get(o, n, "remote_eval_breaker"),
	       "%s: eval_breaker where the headers put it", py->python);
	is_int(rx.pending - rx.tstate, get(o, n, "remote_pending"),
	       "%s: debugger_pending_call where the headers put it", py->python);
	is_int(rx.path - rx.tstate, get(o, n, "remote_path"),
	       "%s: debugger_script_path where the headers put it", py->python);
	is_int(rx.path_size, get(o, n, "remote_path_size"), "%s: its size", py->python);
}

static void check_offsets(const struct pyinterp *py, pid_t pid, const struct gb_py_config *c)
{
	struct offs o[64];
	struct py_code_layout l;
	int n = header_offsets(py->include, o, 64), ok_all = 1;
	struct { const char *key; long got; } f[] = {
		{ "interp_head", c->interp_head }, { "interp_next", c->interp_next },
		{ "threads_head", c->threads_head },
		{ "tstate_next", c->tstate_next }, { "tstate_thread_id", c->tstate_thread_id },
		{ "tstate_frame", c->tstate_frame }, { "cframe_frame", c->cframe_frame },
		{ "frame_code", c->frame_code }, { "frame_prev", c->frame_prev },
		{ "frame_instr", c->frame_instr }, { "frame_owner", c->frame_owner },
		{ "code_adaptive", c->code_adaptive },
		{ "code_filename", 0 }, { "code_name", 0 }, { "code_qualname", 0 },
		{ "code_firstlineno", 0 }, { "code_linetable", 0 }, { "ascii_size", 0 },
		{ "compact_size", 0 }, { "bytes_size", 0 }, { "bytes_sval", 0 },
		/* 3.6's GIL is static variables, not a struct: unknown, 0 */
		{ "gil", c->gil ? c->gil : GB_PY_NONE },
		{ "gil_holder", c->gil_holder ? c->gil_holder : GB_PY_NONE },
		{ "tstate_native_tid", c->tstate_native_tid },
		{ "gc_collecting", c->gc_collecting },
		{ "tstate_base_frame", c->tstate_base_frame },
	};

	if (!ok(n > 10, "%s: offsetof from its headers", py->python))
		return;
	if (!ok(!pyruntime_code_layout(pid, c, &l), "%s: code layout", py->python))
		return;
	f[12].got = l.filename;
	f[13].got = l.name;
	f[14].got = l.qualname;
	f[15].got = l.firstlineno;
	f[16].got = l.linetable;
	f[17].got = l.ascii_size;
	f[18].got = l.compact_size;
	f[19].got = l.bytes_size;
	f[20].got = l.bytes_sval;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		long want = get(o, n, f[i].key);

		if (f[i].got != want) {
			diag("%s: %s is %ld, headers say %ld", py->python, f[i].key,
			     f[i].got, want);
			ok_all = 0;
		}
	}
	ok(ok_all, "%s: every offset equals offsetof on its headers", py->python);
	is_int(c->code_ident, get(o, n, "code_linetable") + 8 - GB_PY_IDENT_LEN,
	       "%s: identity window ends after co_linetable", py->python);
	/* 3.14+: the frame's f_executable is a tagged _PyStackRef */
	is_int(c->exec_tag_mask, get(o, n, "exec_tag_mask") == GB_PY_NONE ? 0 :
	       get(o, n, "exec_tag_mask"), "%s: the executable's tag bits", py->python);
	if (py->version >= 307)
		is_int(GB_PY_GIL_SIZE, get(o, n, "gil_size"), "%s: the GIL's size", py->python);
	is_int(c->gc_in_runtime, py->version == 307 || py->version == 308,
	       "%s: the collector's flag in the runtime (3.7, 3.8), else in the interpreter",
	       py->python);
	is_int(c->depth, 0, "%s: depth left to the caller", py->python);
	check_remote(py, pid, c, o, n);
}

static void check_stack(const struct pyinterp *py, pid_t pid, const struct gb_py_config *cfg,
			const struct py_expect *e)
{
	struct gb_py_frame fr[GB_PY_MAX_DEPTH];
	struct pysym *s = pysym_new();
	int n = pyruntime_walk(pid, cfg, e->thread, 0, fr, GB_PY_MAX_DEPTH), same = 1;

	is_int(n, e->n, "%s: walked as many frames as extract_stack()", py->python);
	for (int i = 0; i < n && i < e->n; i++) {
		struct py_frame_info fi;
		int err = pysym_resolve(s, pid, cfg, &fr[i], &fi);

		if (err || strcmp(fi.qualname, e->f[i].qualname) ||
		    strcmp(fi.filename, e->f[i].file) || fi.line != e->f[i].line) {
			diag("%s frame %d: got %s (%s:%d) err %d, expected %s (%s:%d)",
			     py->python, i, fi.qualname, fi.filename, fi.line, err,
			     e->f[i].qualname, e->f[i].file, e->f[i].line);
			same = 0;
		}
	}
	ok(same && n == e->n, "%s: names, files and lines equal the process's own stack",
	   py->python);
	n = pyruntime_walk(pid, cfg, e->thread, 0, fr, 3);
	is_int(n, 3, "%s: a walk stops at its depth", py->python);
	n = pyruntime_walk(pid, cfg, e->thread + 1, 0, fr, 3);
	is_int(n, -ESRCH, "%s: no such thread", py->python);
	pysym_free(s);
}

static void test_interp(const struct pyinterp *py)
{
	char out[600], why[256];
	struct gb_py_config cfg;
	struct py_expect e;
	pid_t pid;
	int err;

	snprintf(out, sizeof(out), "%s/stack-%d", tmpdir, py->version);
	pid = py_start_target(py->python, out, &e);
	if (!ok(pid > 0, "%s: target parked", py->python))
		return;
	memset(&cfg, 0xa5, sizeof(cfg));
	cfg.depth = 0;
	err = pyruntime_find(pid, &cfg, why, sizeof(why));
	is_int(err, 0, "%s: pyruntime_find (%s)", py->python, why);
	if (!err) {
		is_int(cfg.version, py->version, "%s: version", py->python);
		ok(cfg.runtime != 0, "%s: runtime at %#llx", py->python,
		   (unsigned long long)cfg.runtime);
		check_offsets(py, pid, &cfg);
		check_stack(py, pid, &cfg, &e);
	}
	py_kill(pid);
}

static void test_not_python(void)
{
	char why[256], *argv[] = { "/bin/sh", "-c", NULL, NULL }, cmd[700], out[600];
	struct gb_py_config cfg;
	pid_t pid;

	is_int(pyruntime_find(getpid(), &cfg, why, sizeof(why)), -ENOENT,
	       "this test process runs no CPython");
	snprintf(out, sizeof(out), "%s/sh", tmpdir);
	snprintf(cmd, sizeof(cmd), "echo done > %s; exec sleep 60", out);
	argv[2] = cmd;
	pid = py_spawn(argv, out);
	if (ok(pid > 0, "a shell started")) {
		usleep(100000);         /* let it exec sleep */
		is_int(pyruntime_find(pid, &cfg, why, sizeof(why)), -ENOENT,
		       "sleep runs no CPython");
	}
	py_kill(pid);
	is_int(pyruntime_find(999999999, &cfg, why, sizeof(why)) < 0, 1,
	       "no such process: an error");
}

static void test_old(const struct pyinterp *py)
{
	char why[256], out[600], want[128];
	char *argv[] = { (char *)py->python, "-c",
		"import sys, time; open(sys.argv[1], 'w').write('done\\n'); time.sleep(60)",
		out, NULL };
	struct gb_py_config cfg;
	pid_t pid;

	snprintf(out, sizeof(out), "%s/old-%d", tmpdir, py->version);
	pid = py_spawn(argv, out);
	if (!ok(pid > 0, "%s started", py->python))
		return;
	snprintf(want, sizeof(want), "CPython %u.%u is not supported (3.6 to 3.15)",
		 py->version / 100, py->version % 100);
	is_int(pyruntime_find(pid, &cfg, why, sizeof(why)), -ENOTSUP,
	       "%s: not supported", py->python);
	is_str(why, want, "%s: says why", py->python);
	py_kill(pid);
}

/*
 * The interpreter's libpython (a shared build's) mapped in this process
 * as the loader maps it: its whole span from the file, read-only, then
 * its writable segment over that, then (last) its bss.  Between the last
 * two, a runtime in the bss (3.7's to 3.9's _PyRuntime, 3.6's interp_head:
 * zero-initialised) reads
 * as the file's bytes: still being loaded, to be looked for again, not a
 * runtime gpubpf cannot read.  One in the writable segment's file part
 * (3.10+, initialised) is there already.
 */
static void test_mid_load(const struct pyinterp *py)
{
	char lib[600], why[256];
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	const Elf64_Phdr *w = NULL;
	struct gb_py_config cfg;
	uint64_t span = 0, wstart, wfile, wend, at;
	int fd, mid, err;
	char *base;

	snprintf(lib, sizeof(lib), "%.*s/../lib/libpython%u.%u%s.so.1.0",
		 (int)(strrchr(py->python, '/') - py->python), py->python,
		 py->version / 100, py->version % 100, py->version < 308 ? "m" : "");
	fd = open(lib, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		diag("%s: no %s (a static build): not loaded by the loader", py->python, lib);
		return;
	}
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || eh.e_phnum > 64 ||
	    pread(fd, ph, eh.e_phnum * sizeof(*ph), eh.e_phoff) != (ssize_t)(eh.e_phnum * sizeof(*ph))) {
		ok(0, "%s: its program headers", lib);
		close(fd);
		return;
	}
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_vaddr + ph[i].p_memsz > span)
			span = ph[i].p_vaddr + ph[i].p_memsz;
		if (ph[i].p_flags & PF_W)
			w = &ph[i];
	}
	span = (span + 4095) & ~4095ULL;
	base = w ? mmap(NULL, span, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (!ok(base != MAP_FAILED, "%s: mapped from its file", lib)) {
		close(fd);
		return;
	}
	wstart = w->p_vaddr & ~4095ULL;
	wfile = (w->p_vaddr + w->p_filesz + 4095) & ~4095ULL;
	wend = (w->p_vaddr + w->p_memsz + 4095) & ~4095ULL;
	ok(mmap(base + wstart, wfile - wstart, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
		w->p_offset & ~4095ULL) != MAP_FAILED, "%s: its writable segment over it", lib);
	mid = pyruntime_find(getpid(), &cfg, why, sizeof(why));
	if (wend > wfile)
		ok(mmap(base + wfile, wend - wfile, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0) != MAP_FAILED,
		   "%s: then its bss", lib);
	err = pyruntime_find(getpid(), &cfg, why, sizeof(why));
	is_int(err, 0, "%s: once mapped, its runtime is found (%s)", lib, why);
	if (!err) {
		at = cfg.runtime - (uint64_t)base;
		is_int(cfg.version, py->version, "%s: its version", lib);
		is_int(mid, at >= w->p_vaddr + w->p_filesz ? -EAGAIN : 0,
		       "%s: before its bss is mapped: %s", lib, at >= w->p_vaddr + w->p_filesz ?
		       "a runtime in the bss is still being loaded" : "a runtime in the data is found");
	}
	munmap(base, span);
	close(fd);
}

int main(void)
{
	struct pyinterp py[32];
	int n = py_interps(py, 32, 1), tested = 0, old = 0;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_not_python();
	for (int i = 0; i < n; i++) {
		if (py[i].version >= 306) {
			test_interp(&py[i]);
			test_mid_load(&py[i]);
			tested++;
		} else if (old < 2) {
			test_old(&py[i]);
			old++;
		}
	}
	if (!tested)
		diag("no CPython 3.6+ installed: only the negative tests ran");
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			diag("could not remove %s", tmpdir);
	}
	return done_testing();
}
