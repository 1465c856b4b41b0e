/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uprobe_multi links (Linux 6.6): one link attaches a program to many
 * offsets of one file, each with its cookie.  They postdate the UAPI
 * headers and libbpf of Debian 12, so the attach type and the
 * link_create layout are spelled out in uprobe_multi.c; the values are
 * the kernel's ABI.
 */
#ifndef GPUBPF_UPROBE_MULTI_H
#define GPUBPF_UPROBE_MULTI_H

#include <stdint.h>
#include <sys/types.h>

/* The attach type a program must be loaded with to be linked so. */
#define ATTACH_UPROBE_MULTI 48

/*
 * Link program prog_fd to the cnt file offsets offs of path, with cookies
 * (NULL: none), as return probes if ret, for process pid only if pid > 0:
 * the link's fd, or -errno.
 */
int uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offs,
		      const uint64_t *cookies, uint32_t cnt, pid_t pid, int ret);

/*
 * Whether this kernel's uprobe_multi links can be used: 1 if it makes
 * them and filters a link's pid by process; 0 if it lacks them, or if it
 * filters by thread (the first kernels that had them, until Linux 6.10
 * and the stable kernels that took the fix: a link for pid P saw P's
 * main thread only, and -p would miss every call of the job's other
 * threads).  Asked of the kernel with a two-instruction program and two
 * links that must fail: to the directory "/" (-EBADF where links are
 * made at all), and with pid -1 (-EINVAL first where the fix is in).
 */
int uprobe_multi_usable(void);

#endif
