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

/* BPF_LINK_CREATE of a uprobe_multi link, pid as the kernel reads it: the fd, or -errno */
static int link_create(int prog_fd, const char *path, const uint64_t *offs,
		       const uint64_t *cookies, uint32_t cnt, uint32_t pid, int ret)
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
	a.lc.pid = pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

int uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offs,
		      const uint64_t *cookies, uint32_t cnt, pid_t pid, int ret)
{
	return link_create(prog_fd, path, offs, cookies, cnt, pid > 0 ? pid : 0, ret);
}

int uprobe_multi_usable(void)
{
	/* r0 = 0; exit */
	static const uint64_t insns[2] = { 0xb7, 0x95 };
	static const uint64_t off0;
	union bpf_attr a;
	int prog, fd, usable;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_KPROBE;
	a.insn_cnt = 2;
	a.insns = (uintptr_t)insns;
	a.license = (uintptr_t)"GPL";
	a.expected_attach_type = ATTACH_UPROBE_MULTI;
	prog = syscall(__NR_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	if (prog < 0)
		return 0;
	fd = link_create(prog, "/", &off0, NULL, 1, 0, 0);
	usable = fd == -EBADF;
	if (usable)
		fd = link_create(prog, "/", &off0, NULL, 1, (uint32_t)-1, 0);
	usable = usable && fd == -EINVAL;
	if (fd >= 0)
		close(fd);
	close(prog);
	return usable;
}
