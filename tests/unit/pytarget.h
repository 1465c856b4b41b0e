/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the CPython unit tests (test_pyruntime.c, test_pysym.c):
 * the installed interpreters, and target processes that park under a
 * known stack (tests/py/stack_target.py) and say so in a file.
 * Run from the repository root (tests/run.sh does).
 */
#ifndef GPUBPF_PYTARGET_H
#define GPUBPF_PYTARGET_H

#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct pyinterp {
	char python[512];       /* the interpreter */
	char include[512];      /* its headers (Python.h), for py-offsets.sh */
	unsigned version;       /* 306 ... 315 (207: Python 2.7) */
};

/*
 * The interpreters 3.6+ of pyenv ($PYENV_ROOT or ~/.pyenv, /root/.pyenv),
 * Debian's /usr/bin/python3.11 (static, non-PIE) and Debian unstable's
 * 3.14 and 3.15 (non-PIE, run chrooted: tests/sid-python3.X, from the
 * repository's root); pyenv's Python 2 too when with_old (for the "not
 * supported" tests).  Returns how many were found.
 */
static __attribute__((unused)) int py_interps(struct pyinterp *v, int max, int with_old)
{
	const char *roots[3] = { getenv("PYENV_ROOT"), NULL, "/root/.pyenv" }, *sid;
	char pat[600], home[512];
	int n = 0;

	if (getenv("HOME")) {
		snprintf(home, sizeof(home), "%s/.pyenv", getenv("HOME"));
		roots[1] = home;
	}
	for (int r = 0; r < 3 && !n; r++) {
		for (int major = 3; major >= (with_old ? 2 : 3); major--) {
			glob_t g;

			if (!roots[r])
				continue;
			snprintf(pat, sizeof(pat), "%s/versions/%d.*/bin/python%d", roots[r],
				 major, major);
			if (glob(pat, 0, NULL, &g))
				continue;
			for (size_t i = 0; i < g.gl_pathc && n < max; i++) {
				const char *ver = strstr(g.gl_pathv[i], "/versions/") + 10;
				int minor = atoi(ver + 2);
				char *slash;

				if ((major == 3 && minor < 6) || strchr(ver, 't') < strchr(ver, '/'))
					continue;
				snprintf(v[n].python, sizeof(v[n].python), "%s", g.gl_pathv[i]);
				snprintf(v[n].include, sizeof(v[n].include), "%s", g.gl_pathv[i]);
				slash = strstr(v[n].include, "/bin/python");
				/* 3.6 and 3.7 name theirs after their ABI flags: python3.7m */
				snprintf(slash, sizeof(v[n].include) - (slash - v[n].include),
					 "/include/python%d.%d%s", major, minor,
					 major == 3 && minor < 8 ? "m" : "");
				v[n++].version = major * 100 + minor;
			}
			globfree(&g);
		}
	}
	if (n < max && !access("/usr/bin/python3.11", X_OK) &&
	    !access("/usr/include/python3.11/Python.h", R_OK)) {
		snprintf(v[n].python, sizeof(v[n].python), "/usr/bin/python3.11");
		snprintf(v[n].include, sizeof(v[n].include), "/usr/include/python3.11");
		v[n++].version = 311;
	}
	/* Debian unstable's 3.14 and 3.15 in its chroot (scripts/sid-python.sh) */
	sid = getenv("GPUBPF_SID") ? getenv("GPUBPF_SID") : "/var/lib/gpubpf/sid";
	for (int minor = 14; minor <= 15 && n < max; minor++) {
		snprintf(home, sizeof(home), "%s/usr/bin/python3.%d", sid, minor);
		snprintf(pat, sizeof(pat), "%s/usr/include/python3.%d/Python.h", sid, minor);
		snprintf(v[n].python, sizeof(v[n].python), "tests/sid-python3.%d", minor);
		if (access(home, X_OK) || access(pat, R_OK) || access(v[n].python, X_OK) ||
		    strlen(pat) >= sizeof(v[n].include))
			continue;
		snprintf(v[n].include, sizeof(v[n].include), "%.*s", (int)(strlen(pat) - 9), pat);
		v[n++].version = 300 + minor;
	}
	return n;
}

/*
 * Start argv (which tells the process to write the file out), and wait
 * (10 s at most) until out holds a line "done".  Returns the pid, or -1
 * (the child is killed).
 */
static __attribute__((unused)) pid_t py_spawn(char *const argv[], const char *out)
{
	pid_t pid;

	unlink(out);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		freopen("/dev/null", "r", stdin);
		execv(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		char buf[65536];
		FILE *f = fopen(out, "r");
		size_t n;

		if (f) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = 0;
			if (strstr(buf, "done\n"))
				return pid;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static __attribute__((unused)) void py_kill(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* The stack tests/py/stack_target.py wrote. */
struct py_expect {
	unsigned long long thread;
	int n;
	struct { char qualname[256], file[512]; int line; } f[64];
};

static __attribute__((unused)) int py_read_expect(const char *path, struct py_expect *e)
{
	char line[1024];
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	memset(e, 0, sizeof(*e));
	while (fgets(line, sizeof(line), f)) {
		char *q, *file, *ln;

		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "thread ", 7)) {
			e->thread = strtoull(line + 7, NULL, 10);
		} else if (!strncmp(line, "frame ", 6) && e->n < 64) {
			q = line + 6;
			file = strchr(q, '\t');
			ln = file ? strchr(file + 1, '\t') : NULL;
			if (!ln)
				continue;
			*file++ = 0;
			*ln++ = 0;
			snprintf(e->f[e->n].qualname, sizeof(e->f[0].qualname), "%.255s", q);
			snprintf(e->f[e->n].file, sizeof(e->f[0].file), "%.511s", file);
			e->f[e->n++].line = atoi(ln);
		}
	}
	fclose(f);
	return e->n ? 0 : -EINVAL;
}

/* Start tests/py/stack_target.py under python; its stack in e. */
static __attribute__((unused)) pid_t py_start_target(const char *python, const char *tmp,
						     struct py_expect *e)
{
	char script[1024], *argv[4];
	pid_t pid;

	if (!realpath("tests/py/stack_target.py", script))
		return -1;
	argv[0] = (char *)python;
	argv[1] = script;
	argv[2] = (char *)tmp;
	argv[3] = NULL;
	pid = py_spawn(argv, tmp);
	if (pid > 0 && py_read_expect(tmp, e)) {
		py_kill(pid);
		return -1;
	}
	return pid;
}

#endif
