// SPDX-License-Identifier: BSD-2-Clause
/*
 * Late attach through CPython's remote execution; see remote_exec.h.
 *
 * The script and a copy of the library go in a new directory of the
 * target's own /tmp (else /dev/shm, /var/tmp), reached through
 * /proc/PID/root so that a container's job finds them, owned by the
 * target's user.  The request is PEP 768's, written into the chosen thread
 * state (pyruntime_remote) while that thread is held still, so that it
 * cannot exit and free it meanwhile: the script's path in its
 * debugger_script_path, debugger_pending_call = 1, then bit 5
 * (_PY_EVAL_PLEASE_STOP_BIT) of its eval_breaker, read-modify-write as
 * CPython's own sys.remote_exec does.  The interpreter runs the script in
 * a namespace of its own at the thread's next safe point; the script
 * writes "ok NS" or "error WHAT" to `done` beside it.  Then, or once the
 * request is withdrawn (debugger_pending_call = 0, after a grace period
 * for a thread that took it just before), the directory is removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "lib/proc.h"
#include "sym/pyruntime.h"
#include "record/remote_exec.h"

#define LIB_NAME "libgpubpf_cupti.so"
#define HOLD_MS 200             /* for the chosen thread to stop */
#define GRACE_MS 100            /* after withdrawing the request */
#define PLEASE_STOP_BIT (1ULL << 5)

/*
 * Run in the target, in a namespace of its own (not __main__'s).  Every
 * failure is caught, so that the interpreter prints nothing; a second
 * copy of the library is never loaded.  %s: the directory.
 */
static const char script_fmt[] =
	"try:\n"
	"    import os, time\n"
	"    t0 = time.monotonic_ns()\n"
	"    d = '%s'\n"
	"    with open('/proc/self/maps') as m:\n"
	"        loaded = any('" LIB_NAME "' in l for l in m)\n"
	"    if not loaded:\n"
	"        import ctypes\n"
	"        fd = os.memfd_create('" LIB_NAME "')\n"
	"        try:\n"
	"            with open(d + '/" LIB_NAME "', 'rb') as f:\n"
	"                b = memoryview(f.read())\n"
	"            while b:\n"
	"                b = b[os.write(fd, b):]\n"
	"            r = ctypes.CDLL('/proc/self/fd/%%d' %% fd).gpubpf_late_attach()\n"
	"        finally:\n"
	"            os.close(fd)\n"
	"        if r:\n"
	"            raise OSError(r, os.strerror(r))\n"
	"    msg = 'ok %%d' %% (time.monotonic_ns() - t0)\n"
	"except BaseException as e:\n"
	"    msg = 'error %%s: %%s' %% (type(e).__name__, e)\n"
	"try:\n"
	"    with open(d + '/done.part', 'w') as f:\n"
	"        f.write(msg)\n"
	"    os.rename(d + '/done.part', d + '/done')\n"
	"except BaseException:\n"
	"    pass\n";

/* The filesystem uid and gid of pid (what its opens are checked against). */
static int target_ids(pid_t pid, uid_t *uid, gid_t *gid)
{
	unsigned long u[4], g[4];
	char val[128];
	int ret;

	if ((ret = proc_status_field(pid, "Uid", val, sizeof(val))))
		return ret;
	if (sscanf(val, "%lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) != 4)
		return -EINVAL;
	if ((ret = proc_status_field(pid, "Gid", val, sizeof(val))))
		return ret;
	if (sscanf(val, "%lu %lu %lu %lu", &g[0], &g[1], &g[2], &g[3]) != 4)
		return -EINVAL;
	*uid = (uid_t)u[3];
	*gid = (gid_t)g[3];
	return 0;
}

/*
 * A new file at path, mode 0600, owned by uid:gid, with len bytes of buf,
 * or (buf NULL) a copy of the file at lib.
 */
static int put_file(const char *path, const void *buf, size_t len, const char *lib,
		    uid_t uid, gid_t gid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), ret = 0;
	const char *p = buf;

	if (fd < 0)
		return -errno;
	if (!buf)
		ret = inject_copy_lib(lib, fd);
	while (buf && len && !ret) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno != EINTR)
			ret = -errno;
		else if (n > 0)
			p += n, len -= (size_t)n;
	}
	if (!ret && fchown(fd, uid, gid))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -EIO;
	return ret;
}

/* The files' directory: here (through /proc/PID/root) and as the target sees it. */
struct spot {
	char here[PATH_MAX];
	const char *there;      /* inside here: the part after /proc/PID/root */
};

static int make_spot(pid_t pid, struct spot *sp, uid_t uid, gid_t gid)
{
	static const char *const bases[] = { "/tmp", "/dev/shm", "/var/tmp" };
	int root_len, ret = -ENOENT;

	root_len = snprintf(sp->here, sizeof(sp->here), "/proc/%d/root", pid);
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		snprintf(sp->here + root_len, sizeof(sp->here) - root_len, "%s/gpubpf-XXXXXX",
			 bases[i]);
		if (!mkdtemp(sp->here)) {
			ret = -errno;
			continue;
		}
		if (chown(sp->here, uid, gid)) {
			ret = -errno;
			rmdir(sp->here);
			continue;
		}
		sp->there = sp->here + root_len;
		return 0;
	}
	return ret;
}

static void remove_spot(const struct spot *sp)
{
	static const char *const names[] = { "attach.py", LIB_NAME, "done.part", "done" };
	char path[PATH_MAX + 16];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", sp->here, names[i]);
		unlink(path);
	}
	rmdir(sp->here);
}

/* The script's report: 1 and its text once it is there, else 0. */
static int script_done(const struct spot *sp, char *text, size_t len)
{
	char path[PATH_MAX + 16];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/done", sp->here);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, text, len - 1);
	close(fd);
	text[n > 0 ? n : 0] = 0;
	return 1;
}

/* Ask thread state rx to run the script at path (in the target's view). */
static int request(pid_t pid, const struct py_remote *rx, const char *path, int pending,
		   char *why, size_t whylen)
{
	char mem[64], buf[4096];
	int fd, sig = 0, held, ret = 0;
	__s32 flag = pending;
	__u64 breaker;

	/*
	 * Held still, the thread cannot exit and free its state under us; one
	 * that cannot be held (gone, or traced by another) is not written to.
	 * A state that names no thread (0) is written as CPython's own
	 * sys.remote_exec writes any.
	 */
	held = rx->native_tid ? inject_hold((pid_t)rx->native_tid, HOLD_MS, &sig) : 1;
	if (held < 0) {
		snprintf(why, whylen, "thread %u could not be held still to take the request (%s)",
			 rx->native_tid, strerror(-held));
		return held;
	}
	snprintf(mem, sizeof(mem), "/proc/%d/mem", pid);
	fd = open(mem, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "cannot write the memory of pid %d: %s", pid, strerror(errno));
		goto out;
	}
	/* another debugger's request, not taken yet: not ours to overwrite */
	if (pending && (pread(fd, &flag, sizeof(flag), (off_t)rx->pending) != sizeof(flag) ||
			flag != 0)) {
		ret = -EBUSY;
		snprintf(why, whylen, "another remote execution request is pending in thread %u",
			 rx->native_tid);
		close(fd);
		goto out;
	}
	flag = pending;
	if (pending) {
		memset(buf, 0, sizeof(buf));
		snprintf(buf, sizeof(buf), "%s", path);
		if (pwrite(fd, buf, rx->path_size, (off_t)rx->path) != (ssize_t)rx->path_size)
			ret = -EFAULT;
	}
	if (!ret && pwrite(fd, &flag, sizeof(flag), (off_t)rx->pending) != sizeof(flag))
		ret = -EFAULT;
	if (!ret && pending &&
	    (pread(fd, &breaker, sizeof(breaker), (off_t)rx->eval_breaker) != sizeof(breaker) ||
	     (breaker |= PLEASE_STOP_BIT,
	      pwrite(fd, &breaker, sizeof(breaker), (off_t)rx->eval_breaker) != sizeof(breaker))))
		ret = -EFAULT;
	if (ret)
		snprintf(why, whylen, "cannot write the remote execution request into pid %d", pid);
	close(fd);
out:
	if (!held)
		inject_release((pid_t)rx->native_tid, sig);
	return ret;
}

/* What the script said: 0 and the time it took, or -EIO and why. */
static int script_said(const char *text, struct inject_stats *st, char *why, size_t whylen)
{
	unsigned long long ns;

	if (sscanf(text, "ok %llu", &ns) == 1) {
		st->stall_ns = ns ? ns : 1;
		return 0;
	}
	snprintf(why, whylen, "the script CPython ran for gpubpf failed: %s",
		 strncmp(text, "error ", 6) ? text : text + 6);
	return -EIO;
}

int remote_exec_library(pid_t pid, const char *lib, int timeout_ms, struct inject_stats *st,
			char *why, size_t whylen)
{
	char script[sizeof(script_fmt) + PATH_MAX], path[PATH_MAX + 32], text[512];
	uint64_t t0 = inject_now_ns(), until;
	struct gb_py_config cfg;
	struct py_remote rx;
	struct spot sp;
	uid_t uid = 0;
	gid_t gid = 0;
	int ret, n;

	memset(st, 0, sizeof(*st));
	st->syscall_nr = -1;
	ret = pyruntime_find(pid, &cfg, why, whylen);
	if (ret == -ENOENT || (!ret && cfg.version < 314)) {
		snprintf(why, whylen, "no CPython 3.14+ to run a script at a safe point");
		return -EOPNOTSUPP;
	}
	if (ret || (ret = pyruntime_remote(pid, &cfg, &rx, why, whylen)))
		return ret;
	if ((ret = target_ids(pid, &uid, &gid))) {
		snprintf(why, whylen, "cannot read the user of pid %d: %s", pid, strerror(-ret));
		return ret;
	}
	if ((ret = make_spot(pid, &sp, uid, gid))) {
		snprintf(why, whylen, "no directory for the script in the target's /tmp, /dev/shm "
			 "or /var/tmp: %s", strerror(-ret));
		return ret;
	}
	n = snprintf(script, sizeof(script), script_fmt, sp.there);
	snprintf(path, sizeof(path), "%s/" LIB_NAME, sp.here);
	ret = put_file(path, NULL, 0, lib, uid, gid);
	snprintf(path, sizeof(path), "%s/attach.py", sp.here);
	if (!ret)
		ret = put_file(path, script, (size_t)n, NULL, uid, gid);
	if (ret) {
		snprintf(why, whylen, "cannot write the script's files (%s) in %s: %s", lib,
			 sp.there, strerror(-ret));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/attach.py", sp.there);
	if (strlen(path) >= rx.path_size || strchr(sp.there, '\'') || strchr(sp.there, '\\')) {
		ret = -ENAMETOOLONG;
		snprintf(why, whylen, "the script's path %s does not fit CPython's request", path);
		goto out;
	}
	if ((ret = request(pid, &rx, path, 1, why, whylen)))
		goto out;
	st->tid = (pid_t)rx.native_tid;
	for (until = inject_now_ns() + timeout_ms * 1000000ULL; inject_now_ns() < until;) {
		struct timespec ts = { 0, 2000000 };

		if (script_done(&sp, text, sizeof(text))) {
			ret = script_said(text, st, why, whylen);
			goto out;
		}
		if (kill(pid, 0) && errno == ESRCH) {
			ret = -ESRCH;
			snprintf(why, whylen, "the target has exited");
			goto out;
		}
		nanosleep(&ts, NULL);
	}
	/* withdrawn; a thread that took it just before reports in the grace period */
	request(pid, &rx, path, 0, text, sizeof(text));
	for (until = inject_now_ns() + GRACE_MS * 1000000ULL; inject_now_ns() < until;) {
		struct timespec ts = { 0, 2000000 };

		if (script_done(&sp, text, sizeof(text))) {
			ret = script_said(text, st, why, whylen);
			goto out;
		}
		nanosleep(&ts, NULL);
	}
	ret = -ETIMEDOUT;
	snprintf(why, whylen, "no Python thread reached a safe point to run gpubpf's script "
		 "in %d ms (CPython remote execution)", timeout_ms);
out:
	remove_spot(&sp);
	st->total_ns = inject_now_ns() - t0;
	return ret;
}
