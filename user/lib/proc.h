/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading processes through /proc. */
#ifndef GPUBPF_PROC_H
#define GPUBPF_PROC_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* 1 if pid is a live process (not a zombie), 0 if not. */
int proc_alive(pid_t pid);
/* 1 if pid is a kernel thread (kthreadd, a kworker...), 0 if not or gone. */
int proc_kernel_thread(pid_t pid);
/* The process thread tid belongs to (tid itself for a main thread), or -ESRCH. */
pid_t proc_tgid(pid_t tid);
/* Command name of pid (tid 0) or of its thread tid; -errno if gone. */
int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len);
/* One line of /proc/PID/maps. */
struct proc_map {
	uint64_t start, end, offset, inode;
	unsigned major, minor;          /* the file's device */
	char perms[8];
	char path[PATH_MAX];            /* "" if none; may end in " (deleted)" */
};

/*
 * Call fn on each mapping of pid, in address order, until it returns
 * non-zero, and return that; 0 at the end, -errno if the maps cannot be
 * read.
 */
int proc_maps_each(pid_t pid, int (*fn)(const struct proc_map *m, void *arg), void *arg);
/*
 * A path that opens m's file from our mount namespace: /proc/PID/root and
 * the path the maps give, when that is the mapped file (its inode); the
 * path itself, when it is that file here (its device and inode: a process
 * of another user, whose root needs CAP_SYS_PTRACE); else
 * /proc/PID/map_files/START-END, the mapping itself (a file deleted or
 * replaced since, or one whose path the kernel prints from another root:
 * a process chrooted inside a mount namespace of its own, as Apptainer
 * runs containers).  0 or -ENAMETOOLONG.
 */
int proc_map_file(pid_t pid, const struct proc_map *m, char *out, size_t len);
/*
 * proc_map_file() of the first mapped file of pid whose base name starts
 * with prefix (e.g. "libcuda.so"), one deleted since it was mapped only
 * where no other is (its /proc/PID/map_files entry).  0 on success,
 * -ENOENT if none is mapped, -errno if the process cannot be read.
 */
int proc_find_mapping(pid_t pid, const char *prefix, char *path, size_t len);
/* The same for the mapped file with inode number ino. */
int proc_find_mapping_ino(pid_t pid, const char *prefix, unsigned long ino, char *path,
			  size_t len);
/* All pids on the machine, in a malloc'd array; the count or -errno. */
int proc_list(pid_t **pids);
/* The thread ids of pid, in a malloc'd array; the count or -errno. */
int proc_list_threads(pid_t pid, pid_t **tids);
/*
 * What thread tid of pid is doing: its state letter from its stat ('R',
 * 'S', 'D'...) and the syscall it is in (-1: none, or not readable).
 * 0 or -errno.
 */
int proc_thread_wait(pid_t pid, pid_t tid, char *state, long *nr);
/* 1 if pid is stopped (state T: SIGSTOP), else 0 (running, gone...). */
int proc_stopped(pid_t pid);
/*
 * The value of field key ("Uid", "Seccomp"...) in /proc/PID/status, what
 * follows "key:" and its blanks, into val: 0, -ENOENT if pid's status has
 * no such field, or -errno.
 */
int proc_status_field(pid_t pid, const char *key, char *val, size_t len);
/*
 * What reading another process's maps, executable or memory takes, for
 * messages on EACCES: the kernel's ptrace access check.
 */
#define PROC_ACCESS_HINT "needs CAP_SYS_PTRACE where it runs as another user or with " \
	"capabilities gpubpf lacks"
/* pid's memory (/proc/PID/mem), for proc_mem_read(): an fd or -errno. */
int proc_mem_open(pid_t pid);
/*
 * len bytes at addr of the memory open at fd: 0, -ESRCH when the process
 * is gone, -EFAULT when they cannot all be read (unmapped, or addr 0).
 */
int proc_mem_read(int fd, uint64_t addr, void *buf, size_t len);

#endif
