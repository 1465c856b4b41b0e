// SPDX-License-Identifier: BSD-2-Clause
/* Reading processes through /proc; see proc.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "lib/array.h"
#include "lib/proc.h"

/* The fields of pid's stat after "pid (comm) ", into buf; NULL if unreadable. */
static const char *stat_fields(pid_t pid, char *buf, size_t len)
{
	char path[64], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	/* comm may hold spaces and parentheses */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p + 2 : NULL;
}

int proc_alive(pid_t pid)
{
	char buf[512];
	const char *f = stat_fields(pid, buf, sizeof(buf));

	return f && *f != 'Z' && *f != 'X';
}

int proc_kernel_thread(pid_t pid)
{
	char buf[512];
	const char *f = stat_fields(pid, buf, sizeof(buf));
	unsigned long flags;

	/* state ppid pgrp session tty_nr tpgid flags */
	if (!f || sscanf(f, "%*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return 0;
	return !!(flags & 0x00200000);          /* PF_KTHREAD */
}

pid_t proc_tgid(pid_t tid)
{
	char val[32];
	char *end;
	long v;

	if (proc_status_field(tid, "Tgid", val, sizeof(val)))
		return -ESRCH;
	v = strtol(val, &end, 10);
	return end != val && v > 0 ? (pid_t)v : -ESRCH;
}

int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	size_t n;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int proc_find_mapping(pid_t pid, const char *prefix, char *path, size_t len)
{
	return proc_find_mapping_ino(pid, prefix, 0, path, len);
}

int proc_maps_each(pid_t pid, int (*fn)(const struct proc_map *m, void *arg), void *arg)
{
	char path[64], line[PATH_MAX + 128];
	struct proc_map m;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* "start-end perms offset major:minor inode path" */
	while (!ret && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off, ino;
		int pos = 0;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &e, m.perms, &off,
			   &m.major, &m.minor, &ino, &pos) < 7)
			continue;
		m.start = s;
		m.end = e;
		m.offset = off;
		m.inode = ino;
		snprintf(m.path, sizeof(m.path), "%s", pos ? line + pos : "");
		ret = fn(&m, arg);
	}
	fclose(f);
	return ret;
}

int proc_map_file(pid_t pid, const struct proc_map *m, char *out, size_t len)
{
	struct stat st;

	if ((size_t)snprintf(out, len, "/proc/%d/root%s", pid, m->path) >= len)
		return -ENAMETOOLONG;
	if (m->path[0] == '/' && !stat(out, &st) && st.st_ino == m->inode)
		return 0;
	/* /proc/PID/root needs ptrace access (a process of another user
	 * without CAP_SYS_PTRACE): the same path here, if it is that file */
	if (m->path[0] == '/' && !stat(m->path, &st) && st.st_ino == m->inode &&
	    major(st.st_dev) == m->major && minor(st.st_dev) == m->minor) {
		if (strlen(m->path) >= len)
			return -ENAMETOOLONG;
		strcpy(out, m->path);
		return 0;
	}
	if ((size_t)snprintf(out, len, "/proc/%d/map_files/%llx-%llx", pid,
			     (unsigned long long)m->start, (unsigned long long)m->end) >= len)
		return -ENAMETOOLONG;
	return 0;
}

struct find_prefix {
	const char *prefix;
	unsigned long ino;
	pid_t pid;
	char *out;
	size_t len;
	bool deleted;           /* out holds a deleted file's mapping */
};

static int match_prefix(const struct proc_map *m, void *arg)
{
	struct find_prefix *fp = arg;
	const char *base = strrchr(m->path, '/');

	if (!base || strncmp(base + 1, fp->prefix, strlen(fp->prefix)) ||
	    (fp->ino && m->inode != fp->ino))
		return 0;
	/*
	 * A file replaced or removed since it was mapped (a driver upgraded
	 * under a running job): its mapping, through map_files, unless a
	 * live one follows
	 */
	if (strstr(m->path, " (deleted)")) {
		if (m->inode && !fp->deleted && !proc_map_file(fp->pid, m, fp->out, fp->len))
			fp->deleted = true;
		return 0;
	}
	return proc_map_file(fp->pid, m, fp->out, fp->len) ?: 1;
}

int proc_find_mapping_ino(pid_t pid, const char *prefix, unsigned long ino, char *path,
			  size_t len)
{
	struct find_prefix fp = { prefix, ino, pid, path, len, false };
	int ret = proc_maps_each(pid, match_prefix, &fp);

	return ret == 1 || (!ret && fp.deleted) ? 0 : ret ? ret : -ENOENT;
}

/* The numeric entries of the directory path, in a malloc'd array; the count or -errno. */
static int list_ids(const char *path, pid_t **ids)
{
	DIR *d = opendir(path);
	struct dirent *de;
	pid_t *v = NULL;
	size_t n = 0, cap = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (array_grow(&v, &cap, n + 1)) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v[n++] = atoi(de->d_name);
	}
	closedir(d);
	*ids = v;
	return n;
}

int proc_list(pid_t **pids)
{
	return list_ids("/proc", pids);
}

int proc_list_threads(pid_t pid, pid_t **tids)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	return list_ids(path, tids);
}

int proc_thread_wait(pid_t pid, pid_t tid, char *state, long *nr)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	*state = p[2];
	*nr = -1;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%ld", nr) != 1)
		*nr = -1;       /* "running" */
	fclose(f);
	return 0;
}

int proc_stopped(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' && p[2] == 'T';
}

int proc_status_field(pid_t pid, const char *key, char *val, size_t len)
{
	char path[64], line[512];
	size_t klen = strlen(key);
	int ret = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			const char *v = line + klen + 1;

			v += strspn(v, " \t");
			snprintf(val, len, "%.*s", (int)strcspn(v, "\n"), v);
			ret = 0;
		}
	fclose(f);
	return ret;
}

int proc_mem_open(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int proc_mem_read(int fd, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (!addr || addr >= 1ULL << 63)
		return -EFAULT;
	n = pread(fd, buf, len, (off_t)addr);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -EFAULT;
	return (size_t)n == len ? 0 : -EFAULT;
}
