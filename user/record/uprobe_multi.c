// SPDX-License-Identifier: BSD-2-Clause
/* uprobe_multi links; see uprobe_multi.h. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include "record/uprobe_multi.h"

#define UPROBE_MULTI_RETURN 1

union uprobe_multi_attr {
	struct {
		uint32_t prog_fd, target_fd, attach_type, flags;
		uint64_t path, offsets, ref_ctr_offsets, cookies;
		uint32_t cnt, um_flags, pid;
	} lc;
	char size[sizeof(union bpf_attr)];
};

int uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offs,
		      const uint64_t *cookies, uint32_t cnt, pid_t pid, int ret)
{
	union uprobe_multi_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.lc.prog_fd = prog_fd;
	a.lc.attach_type = ATTACH_UPROBE_MULTI;
	a.lc.path = (uintptr_t)path;
	a.lc.offsets = (uintptr_t)offs;
	a.lc.cookies = (uintptr_t)cookies;
	a.lc.cnt = cnt;
	a.lc.um_flags = ret ? UPROBE_MULTI_RETURN : 0;
	a.lc.pid = pid > 0 ? pid : 0;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}
