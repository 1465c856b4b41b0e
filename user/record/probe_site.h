/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a uprobe goes on a function (x86-64).  A uprobe replaces one
 * instruction with int3 and then either emulates that instruction (push of
 * a register, nops, relative jumps and calls: ~0.4 us a hit on kernel
 * 6.18) or single-steps a copy of it out of line (almost everything else,
 * endbr64 included: ~14 us).  A function that begins with endbr64 is
 * probed on the instruction after it: endbr64 changes neither the stack
 * pointer nor a register, so the probe still sees the arguments and the
 * return address exactly as at the entry, and a return probe still finds
 * its return address at the stack pointer.
 */
#ifndef GPUBPF_PROBE_SITE_H
#define GPUBPF_PROBE_SITE_H

#include <stddef.h>
#include <stdint.h>

#define PROBE_SITE_BYTES 16     /* bytes of a function's entry looked at */

struct probe_site {
	uint64_t off;           /* file offset the probe goes to */
	uint8_t skipped;        /* bytes skipped before it (endbr64) */
	uint8_t emulated;       /* the kernel emulates the probed instruction */
	char insn[40];          /* the probed instruction: "push %rbp", "other (48 83 ec 08)" */
};

/*
 * The probe site of a function at file offset entry whose first bytes are
 * code[0..len) (len may be short near the end of the file).
 */
void probe_site_decide(const uint8_t *code, size_t len, uint64_t entry, struct probe_site *s);
/*
 * The probe sites of the functions at file offsets entries[0..n) of the
 * file at path (an entry of 0 gets a site of 0).  0 or -errno.
 */
int probe_sites(const char *path, const uint64_t *entries, size_t n, struct probe_site *sites);

#endif
