// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for ELF symbol lookup (user/sym/elf_syms.c): offsets are checked
 * against nm + readelf, and against where the loader mapped our own code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/elf_syms.h"
#include "tap.h"

#define STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

static char dir[] = "/tmp/gpubpf-elf-XXXXXX";

/*
 * Value of the function or data symbol name per `nm` (dynamic: nm -D
 * --defined-only); 0 if absent.
 */
static uint64_t nm_value(const char *path, const char *name, int dynamic)
{
	char cmd[512], line[1024], sym[512], type;
	uint64_t v, found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm %s --defined-only '%s' 2>/dev/null",
		 dynamic ? "-D" : "", path);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %511s", &v, &type, sym) == 3 &&
		    strchr("TtDd", type) && !strcmp(sym, name))
			found = v;
	}
	pclose(f);
	return found;
}

/* vaddr -> file offset through the LOAD lines of `readelf -lW`; 0 if none. */
static uint64_t readelf_offset(const char *path, uint64_t vaddr)
{
	char cmd[512], line[1024];
	uint64_t off, va, pa, filesz, memsz, found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64
			   " 0x%" SCNx64 " 0x%" SCNx64, &off, &va, &pa, &filesz, &memsz) == 5 &&
		    vaddr >= va && vaddr < va + memsz)
			found = vaddr - va + off;
	}
	pclose(f);
	return found;
}

static int have_tools(void)
{
	return !system("nm --version >/dev/null 2>&1 && readelf --version >/dev/null 2>&1");
}

static void test_stub(void)
{
	static const char *const names[] = {
		"cuLaunchKernel", "cuMemcpyHtoD_v2", "cuNoSuchFunction",
		"cuStreamSynchronize_ptsz", "",
	};
	enum { N = sizeof(names) / sizeof(names[0]) };
	uint64_t off[N];
	int ret;

	if (access(STUB, R_OK) || !have_tools()) {
		for (int i = 0; i < 6; i++)
			printf("ok %d # SKIP no %s or no binutils\n", ++tap_count, STUB);
		return;
	}
	memset(off, 0xff, sizeof(off));
	ret = elf_sym_offsets(STUB, names, N, off);
	is_int(ret, 3, "stub libcuda: 3 of 5 names found");
	for (int i = 0; i < N; i++) {
		uint64_t want;

		if (!names[i][0] || !strcmp(names[i], "cuNoSuchFunction")) {
			is_int(off[i], 0, "'%s' not found: offset 0", names[i]);
			continue;
		}
		want = readelf_offset(STUB, nm_value(STUB, names[i], 1));
		ok(want && off[i] == want, "%s at file offset 0x%" PRIx64, names[i], want);
		if (off[i] != want)
			diag("got 0x%" PRIx64, off[i]);
	}
}

/*
 * A library whose first segment sits at 0x400000, so that virtual
 * addresses and file offsets differ; one exported function, one hidden
 * one that only .symtab knows, and an exported array in .data.
 */
static void test_built_lib(void)
{
	static const char *const names[] = { "gb_pub_fn", "gb_hidden_fn", "gb_data" };
	char src[300], lib[300], cmd[1024];
	uint64_t off[3], va, want;
	FILE *f;
	int ret;

	snprintf(src, sizeof(src), "%s/l.c", dir);
	snprintf(lib, sizeof(lib), "%s/l.so", dir);
	f = fopen(src, "w");
	if (!f) {
		ok(0, "write %s", src);
		return;
	}
	fputs("int gb_data[64] = { 1 };\n"
	      "int gb_pub_fn(int x) { return x + gb_data[x & 63]; }\n"
	      "__attribute__((visibility(\"hidden\"), noinline))\n"
	      "int gb_hidden_fn(int x) { return x * 3 + gb_data[0]; }\n"
	      "int gb_call_hidden(int x) { return gb_hidden_fn(x); }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "${CC:-cc} -shared -fPIC -O1 -Wl,-Ttext-segment=0x400000 "
		 "-o '%s' '%s' 2>/dev/null", lib, src);
	if (system(cmd) || !have_tools()) {
		for (int i = 0; i < 6; i++)
			printf("ok %d # SKIP cannot build a test library\n", ++tap_count);
		return;
	}
	ret = elf_sym_offsets(lib, names, 3, off);
	is_int(ret, 3, "built lib: 2 functions and the data object found");
	va = nm_value(lib, "gb_pub_fn", 1);
	want = readelf_offset(lib, va);
	ok(va >= 0x400000 && want && want != va, "gb_pub_fn: vaddr 0x%" PRIx64 " != offset 0x%"
	   PRIx64, va, want);
	is_int(off[0], want, "gb_pub_fn (.dynsym) at its file offset");
	va = nm_value(lib, "gb_hidden_fn", 0);
	ok(va && !nm_value(lib, "gb_hidden_fn", 1), "gb_hidden_fn only in .symtab");
	is_int(off[1], readelf_offset(lib, va), "gb_hidden_fn (.symtab) at its file offset");
	va = nm_value(lib, "gb_data", 1);
	is_int(off[2], readelf_offset(lib, va), "data symbol gb_data (.data) at its file offset");
	unlink(src);
	unlink(lib);
}

__attribute__((noinline, used)) int gb_elf_test_target(int x)
{
	return x * 7 + 1;
}

/* File offset of addr in our own mapping, from /proc/self/maps. */
static int self_offset(uintptr_t addr, uint64_t *off)
{
	char line[1024], perms[8];
	unsigned long start, end, foff;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s %lx", &start, &end, perms, &foff) != 4)
			continue;
		if (addr >= start && addr < end && perms[2] == 'x') {
			*off = addr - start + foff;
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

int main(void);

static void test_self(void)
{
	static const char *const names[] = { "gb_elf_test_target", "main" };
	uint64_t off[2] = { 1, 1 }, want = 0;
	int ret;

	ret = self_offset((uintptr_t)&gb_elf_test_target, &want);
	is_int(ret, 0, "found our own r-xp mapping");
	ret = elf_sym_offsets("/proc/self/exe", names, 2, off);
	is_int(ret, 2, "/proc/self/exe: both names found");
	ok(off[0] && off[0] == want, "gb_elf_test_target at runtime file offset 0x%" PRIx64, want);
	if (off[0] != want)
		diag("got 0x%" PRIx64, off[0]);
	ret = self_offset((uintptr_t)&main, &want);
	ok(!ret && off[1] == want, "main at runtime file offset 0x%" PRIx64, want);
}

static void test_errors(void)
{
	static const char *const names[] = { "cuLaunchKernel" };
	char txt[300];
	uint64_t off[1] = { 5 };
	FILE *f;

	snprintf(txt, sizeof(txt), "%s/not-elf.txt", dir);
	f = fopen(txt, "w");
	fputs("this is not an ELF file\n", f);
	fclose(f);
	is_int(elf_sym_offsets(txt, names, 1, off), -ENOEXEC, "text file: -ENOEXEC");
	is_int(off[0], 0, "offsets cleared on -ENOEXEC");
	f = fopen(txt, "w");
	fclose(f);
	is_int(elf_sym_offsets(txt, names, 1, off), -ENOEXEC, "empty file: -ENOEXEC");
	f = fopen(txt, "w");
	fputs("\177ELF", f);
	fclose(f);
	is_int(elf_sym_offsets(txt, names, 1, off), -ENOEXEC, "truncated ELF header: -ENOEXEC");
	unlink(txt);
	off[0] = 5;
	is_int(elf_sym_offsets("/nonexistent/gpubpf/libcuda.so", names, 1, off), -ENOENT,
	       "missing file: -ENOENT");
	is_int(off[0], 0, "offsets cleared on -ENOENT");
	is_int(elf_sym_offsets("/proc/self/exe", names, 0, off), 0, "no names: 0 found");
}

/* elf_syms.h: "store its file offset in offsets[i]" for each i */
static void test_duplicate_names(void)
{
	static const char *const names[] = { "gb_elf_test_target", "gb_elf_test_target" };
	uint64_t off[2] = { 0, 0 }, want = 0;
	int ret;

	self_offset((uintptr_t)&gb_elf_test_target, &want);
	ret = elf_sym_offsets("/proc/self/exe", names, 2, off);
	is_int(off[0], want, "duplicate name: first entry at its offset");
	is_int(off[1], want, "duplicate name: second entry at its offset too");
	is_int(ret, 2, "duplicate name: counted for both entries");
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_stub();
	test_built_lib();
	test_self();
	test_errors();
	test_duplicate_names();
	rmdir(dir);
	return done_testing();
}
