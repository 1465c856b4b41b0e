// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for native symbolisation (user/sym/native_sym.c, the function
 * tables of user/sym/elf_syms.c, user/sym/demangle.c): this test's own executable
 * is the known ELF (checked against nm), libc a stripped one (.dynsym),
 * the stub libcuda a library loaded after the process's maps were read.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sym/demangle.h"
#include "sym/elf_syms.h"
#include "sym/native_sym.h"
#include "tap.h"

#define STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

__attribute__((noinline)) int gb_fn_a(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int gb_fn_b(int x)
{
	return gb_fn_a(x) * 7;
}

/* Symbol value and size of name in path per nm; 0 if absent. */
static uint64_t nm_sym(const char *path, const char *name, uint64_t *size)
{
	char cmd[512], line[1024], sym[512], type;
	uint64_t v, sz, found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %511s", &v, &sz, &type, sym) == 4 &&
		    !strcmp(sym, name)) {
			found = v;
			*size = sz;
		}
	pclose(f);
	return found;
}

static void test_demangle(void)
{
	char *d = demangle("_ZN6gbtest7TrainerIfE4stepEi");

	is_str(d ? d : "(null)", "gbtest::Trainer<float>::step(int)", "demangle: a template member");
	free(d);
	ok(!demangle("main"), "demangle: a C name is not mangled");
	ok(!demangle("_Zgarbage!"), "demangle: a bad name gives NULL");
}

static void test_segs(void)
{
	struct elf_seg s[2] = { { .vaddr = 0x400000, .memsz = 0x2000, .offset = 0, .filesz = 0x1800 },
				{ .vaddr = 0x603000, .memsz = 0x3000, .offset = 0x2000, .filesz = 0x800 } };
	uint64_t v = 0, o = 0;

	ok(!elf_seg_offset_to_vaddr(s, 2, 0x2100, &v) && v == 0x603100, "offset -> vaddr, 2nd segment");
	ok(elf_seg_offset_to_vaddr(s, 2, 0x1900, &v) == -ENOENT, "offset past a segment's file bytes");
	ok(!elf_seg_vaddr_to_offset(s, 2, 0x401234, &o) && o == 0x1234, "vaddr -> offset");
	ok(elf_seg_vaddr_to_offset(s, 2, 0x500000, &o) == -ENOENT, "vaddr in no segment");
}

static void test_funcs(const char *exe)
{
	struct elf_funcs f;
	uint64_t size_a = 0, size_b = 0, a = nm_sym(exe, "gb_fn_a", &size_a), b = nm_sym(exe, "gb_fn_b", &size_b);
	const struct elf_func *fn;
	int sorted = 1;

	ok(a && b && size_a, "nm sees gb_fn_a and gb_fn_b");
	is_int(elf_funcs_load(exe, &f), 0, "load this executable's functions");
	for (size_t i = 1; i < f.n; i++)
		sorted &= f.funcs[i - 1].addr < f.funcs[i].addr;
	ok(f.n > 10 && sorted, "functions sorted by address, aliases folded (%zu)", f.n);
	fn = elf_funcs_find(&f, a);
	ok(fn && !strcmp(f.names + fn->name, "gb_fn_a") && fn->size == size_a, "gb_fn_a at its nm value and size");
	fn = elf_funcs_find(&f, a + size_a - 1);
	ok(fn && !strcmp(f.names + fn->name, "gb_fn_a"), "its last byte is in it");
	fn = elf_funcs_find(&f, b + 1);
	ok(fn && !strcmp(f.names + fn->name, "gb_fn_b"), "gb_fn_b + 1");
	ok(!elf_funcs_find(&f, 1), "an address below every symbol");
	elf_funcs_release(&f);
	ok(elf_funcs_load("/proc/self/status", &f) == -ENOEXEC, "not an ELF file: -ENOEXEC");
}

static void test_nsym(const char *exe)
{
	struct nsym *s = nsym_new();
	char buf[512], want[512];
	const char *base = strrchr(exe, '/') + 1;
	uint64_t size_a = 0, a = (uintptr_t)gb_fn_a;
	size_t files = 0, n;
	void *anon, *h;
	int r;

	nm_sym(exe, "gb_fn_a", &size_a);
	r = nsym_name(s, getpid(), a + 1, 0, buf, sizeof(buf));
	snprintf(want, sizeof(want), "gb_fn_a+0x1 (%s)", base);
	ok(r == 1 && !strcmp(buf, want), "an address in gb_fn_a: %s", buf);
	r = nsym_name(s, getpid(), a + size_a, 1, buf, sizeof(buf));
	snprintf(want, sizeof(want), "gb_fn_a+0x%" PRIx64 " (%s)", size_a, base);
	ok(r == 1 && !strcmp(buf, want), "a return address just past its end names it: %s", buf);
	r = nsym_name(s, getpid(), (uintptr_t)puts + 3, 1, buf, sizeof(buf));
	ok(r == 1 && (!strncmp(buf, "puts+0x3 ", 9) || !strncmp(buf, "_IO_puts+0x3 ", 13)) &&
	   strstr(buf, " (libc.so.6)"), "libc (stripped: .dynsym): %s", buf);
	anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r = nsym_name(s, getpid(), (uintptr_t)anon + 16, 0, buf, sizeof(buf));
	snprintf(want, sizeof(want), "0x%" PRIxPTR, (uintptr_t)anon + 16);
	ok(r == 0 && !strcmp(buf, want), "anonymous code: its address: %s", buf);
	/* a library loaded since the maps were read: read again */
	h = access(STUB, R_OK) ? NULL : dlopen(STUB, RTLD_NOW | RTLD_LOCAL);
	if (h) {
		r = nsym_name(s, getpid(), (uintptr_t)dlsym(h, "cuInit"), 0, buf, sizeof(buf));
		ok(r == 1 && !strcmp(buf, "cuInit+0x0 (libcuda.so)"), "a library loaded later: %s", buf);
	} else {
		ok(1, "# SKIP no stub libcuda");
	}
	r = nsym_name(s, 0x7ffffffe, 0x1234, 0, buf, sizeof(buf));
	ok(r == 0 && !strcmp(buf, "0x1234"), "a process that does not exist: the address");
	n = nsym_mem(s, &files);
	ok(n > 1000 && files >= 2, "memory accounted: %zu bytes, %zu files loaded", n, files);
	nsym_forget(s, getpid());
	r = nsym_name(s, getpid(), a, 0, buf, sizeof(buf));
	ok(r == 1 && !strncmp(buf, "gb_fn_a+0x0 ", 12), "after forgetting the process: read again");
	nsym_free(s);
	munmap(anon, 4096);
}

int main(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return 1;
	exe[n] = 0;
	test_demangle();
	test_segs();
	test_funcs(exe);
	test_nsym(exe);
	ok(gb_fn_b(1) == 28, "the functions ran");
	return done_testing();
}
