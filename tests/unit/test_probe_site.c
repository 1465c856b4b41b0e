// SPDX-License-Identifier: BSD-2-Clause
/* Where probes go: each entry prologue shape, from its bytes. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "record/probe_site.h"
#include "tap.h"

struct shape {
	const char *what;
	uint8_t code[PROBE_SITE_BYTES];
	size_t len;
	unsigned skipped;
	int emulated;
	const char *insn;
};

static const struct shape shapes[] = {
	{ "xor first", { 0x31, 0xc0, 0xc3, 0x66, 0x66, 0x2e, 0x0f, 0x1f }, 8, 0, 0, "xor %eax,%eax" },
	{ "sub first", { 0x48, 0x83, 0xec, 0x08, 0x31, 0xc0 }, 6, 0, 0, "sub $8,%rsp" },
	{ "push %rbp first", { 0x55, 0x48, 0x89, 0xe5 }, 4, 0, 1, "push %rbp" },
	{ "push %r15 first", { 0x41, 0x57, 0x41, 0x56 }, 4, 0, 1, "push %r15" },
	{ "endbr64 then push", { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5 }, 8, 4, 1, "push %rbp" },
	{ "endbr64 then push %r12", { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x54 }, 6, 4, 1, "push %r12" },
	{ "endbr64 then sub", { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x18 }, 8, 4, 0, "sub $24,%rsp" },
	{ "endbr64 then mov", { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x07 }, 7, 4, 0, "other (48 8b 07)" },
	{ "endbr64 then jmp", { 0xf3, 0x0f, 0x1e, 0xfa, 0xe9, 1, 2, 3, 4 }, 9, 4, 1, "jmp rel32" },
	{ "endbr64 alone (end of file)", { 0xf3, 0x0f, 0x1e, 0xfa }, 4, 0, 0, "endbr64" },
	{ "nop first", { 0x90, 0x55 }, 2, 0, 1, "nop" },
	{ "nopl first", { 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55 }, 6, 0, 1, "nopl" },
	{ "nopw with prefixes", { 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 }, 10, 0, 1, "nopl" },
	{ "jmp rel8 first", { 0xeb, 0x10 }, 2, 0, 1, "jmp rel8" },
	{ "call first", { 0xe8, 0, 0, 0, 0 }, 5, 0, 1, "call rel32" },
	{ "mov first", { 0x48, 0x89, 0xf8 }, 3, 0, 0, "other (48 89 f8)" },
	{ "nothing readable", { 0 }, 0, 0, 0, "other ()" },
};

static void check_sites_of_file(void)
{
	char path[] = "/tmp/gpubpf-probe-site.XXXXXX";
	uint8_t file[64] = { 0 };
	uint64_t entries[3] = { 16, 0, 60 };
	struct probe_site s[3];
	int fd = mkstemp(path);

	/* at 16: endbr64; push; at 60: endbr64 cut by the end of the file */
	memcpy(file + 16, (uint8_t[]){ 0xf3, 0x0f, 0x1e, 0xfa, 0x55 }, 5);
	memcpy(file + 60, (uint8_t[]){ 0xf3, 0x0f, 0x1e, 0xfa }, 4);
	ok(fd >= 0 && write(fd, file, sizeof(file)) == sizeof(file), "test file written");
	is_int(probe_sites(path, entries, 3, s), 0, "probe_sites reads the file");
	is_int(s[0].off, 20, "endbr64 at 16: probed at 20");
	is_str(s[0].insn, "push %rbp", "on the push");
	is_int(s[1].off, 0, "an undefined entry stays 0");
	is_int(s[2].off, 60, "endbr64 with nothing after it in the file: probed on it");
	close(fd);
	unlink(path);
	is_int(probe_sites(path, entries, 3, s), -ENOENT, "a missing file: -ENOENT");
}

int main(void)
{
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *sh = &shapes[i];
		struct probe_site s;

		probe_site_decide(sh->code, sh->len, 0x1000, &s);
		is_int(s.off, 0x1000 + sh->skipped, "%s: probe offset", sh->what);
		is_int(s.skipped, sh->skipped, "%s: bytes skipped", sh->what);
		is_int(s.emulated, sh->emulated, "%s: %s", sh->what,
		       sh->emulated ? "emulated" : "single-stepped");
		is_str(s.insn, sh->insn, "%s: named", sh->what);
	}
	check_sites_of_file();
	return done_testing();
}
