// SPDX-License-Identifier: BSD-2-Clause
/* Where a uprobe goes on a function: see probe_site.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "record/probe_site.h"

static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

static int starts(const uint8_t *c, size_t len, const uint8_t *pat, size_t n)
{
	return len >= n && !memcmp(c, pat, n);
}

/* Name the instruction at c and say whether the kernel emulates it. */
static void classify(const uint8_t *c, size_t len, struct probe_site *s)
{
	static const char *const regs[16] = {
		"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
	};
	size_t p = 0;
	int n;

	s->emulated = 1;
	if (len >= 1 && c[0] >= 0x50 && c[0] <= 0x57) {
		snprintf(s->insn, sizeof(s->insn), "push %%%s", regs[c[0] - 0x50]);
		return;
	}
	if (len >= 2 && c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57) {
		snprintf(s->insn, sizeof(s->insn), "push %%%s", regs[8 + c[1] - 0x50]);
		return;
	}
	while (p < len && (c[p] == 0x66 || c[p] == 0x2e))       /* nop padding prefixes */
		p++;
	if (p < len && c[p] == 0x90) {
		snprintf(s->insn, sizeof(s->insn), "nop");
		return;
	}
	if (p + 1 < len && c[p] == 0x0f && c[p + 1] == 0x1f) {
		snprintf(s->insn, sizeof(s->insn), "nopl");
		return;
	}
	if (len >= 1 && (c[0] == 0xe8 || c[0] == 0xe9 || c[0] == 0xeb)) {
		snprintf(s->insn, sizeof(s->insn), "%s", c[0] == 0xe8 ? "call rel32" :
			 c[0] == 0xe9 ? "jmp rel32" : "jmp rel8");
		return;
	}
	if ((len >= 1 && c[0] >= 0x70 && c[0] <= 0x7f) ||
	    (len >= 2 && c[0] == 0x0f && c[1] >= 0x80 && c[1] <= 0x8f)) {
		snprintf(s->insn, sizeof(s->insn), "jcc");
		return;
	}
	s->emulated = 0;
	if (starts(c, len, endbr64, sizeof(endbr64))) {
		snprintf(s->insn, sizeof(s->insn), "endbr64");
		return;
	}
	if (starts(c, len, (const uint8_t[]){ 0x31, 0xc0 }, 2)) {
		snprintf(s->insn, sizeof(s->insn), "xor %%eax,%%eax");
		return;
	}
	if (starts(c, len, (const uint8_t[]){ 0x48, 0x83, 0xec }, 3) && len >= 4) {
		snprintf(s->insn, sizeof(s->insn), "sub $%u,%%rsp", c[3]);
		return;
	}
	n = snprintf(s->insn, sizeof(s->insn), "other (");
	for (size_t i = 0; i < len && i < 4; i++)
		n += snprintf(s->insn + n, sizeof(s->insn) - n, "%s%02x", i ? " " : "", c[i]);
	snprintf(s->insn + n, sizeof(s->insn) - n, ")");
}

void probe_site_decide(const uint8_t *code, size_t len, uint64_t entry, struct probe_site *s)
{
	memset(s, 0, sizeof(*s));
	s->off = entry;
	/* endbr64 then something: probe the something (not past the bytes we have) */
	if (starts(code, len, endbr64, sizeof(endbr64)) && len > sizeof(endbr64)) {
		s->skipped = sizeof(endbr64);
		s->off += s->skipped;
	}
	classify(code + s->skipped, len - s->skipped, s);
}

int probe_sites(const char *path, const uint64_t *entries, size_t n, struct probe_site *sites)
{
	uint8_t code[PROBE_SITE_BYTES];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		ssize_t got;

		if (!entries[i]) {
			memset(&sites[i], 0, sizeof(sites[i]));
			continue;
		}
		got = pread(fd, code, sizeof(code), entries[i]);
		if (got < 0) {
			ret = -errno;
			break;
		}
		probe_site_decide(code, got, entries[i], &sites[i]);
	}
	close(fd);
	return ret;
}
