// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for user/sym/pysym.c: line tables of real code objects from every
 * installed CPython 3.6+ (tests/py/linetab.py prints each table and the
 * line CPython gives each code unit), decoded by pysym_line, unit by unit;
 * malformed tables; and, on a live process, the identity check (a token
 * that does not match never yields a name), the cache, and a process that
 * exits keeping what was resolved; a code object whose line table cannot
 * be read is "?", nothing freed twice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "lib/proc.h"
#include "sym/pyruntime.h"
#include "sym/pysym.h"
#include "tap.h"
#include "pytarget.h"

static char tmpdir[] = "/tmp/gpubpf-pysym-XXXXXX";

static int unhex(const char *h, uint8_t *out, size_t max)
{
	size_t n = 0;

	if (!strcmp(h, "-"))
		return 0;
	for (; h[0] && h[1] && n < max; h += 2) {
		unsigned b;

		if (sscanf(h, "%2x", &b) != 1)
			return -1;
		out[n++] = b;
	}
	return n;
}

static void test_tables(const struct pyinterp *py)
{
	static char line[1 << 20];
	static uint8_t tab[1 << 18];
	char cmd[1200], name[512] = "";
	int tablen = 0, first = 0, codes = 0, units = 0, bad = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s' tests/py/linetab.py", py->python);
	f = popen(cmd, "r");
	if (!ok(f != NULL, "%s: linetab.py", py->python))
		return;
	while (fgets(line, sizeof(line), f)) {
		char hex[sizeof(line)];

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "code %511s %d %s", name, &first, hex) == 3) {
			tablen = unhex(hex, tab, sizeof(tab));
			codes++;
		} else if (!strncmp(line, "lines", 5) && tablen >= 0) {
			char *p = line + 5, *end;
			int i = 0;

			for (long want = strtol(p, &end, 10); end != p;
			     p = end, want = strtol(p, &end, 10), i++) {
				/* f_lasti is in bytes before 3.10 */
				int got = pysym_line(py->version, tab, tablen, first,
						     py->version < 310 ? 2 * i : i);

				units++;
				if (got != want && bad++ < 5)
					diag("%s: %s unit %d: line %d, CPython says %ld",
					     py->python, name, i, got, want);
			}
		}
	}
	ok(!pclose(f) && codes > 10 && units > 200,
	   "%s: %d code objects, %d code units read", py->python, codes, units);
	is_int(bad, 0, "%s: every unit's line equals co_lines()/co_positions() (before 3.10: "
	       "dis.findlinestarts())", py->python);
}

static void test_malformed(void)
{
	/* 3.6-3.9 co_lnotab: byte offsets; +1 at 0, +2 -3 at 6, +254 at 262 in two pairs */
	const uint8_t t309[] = { 0, 1, 6, 2, 0, 0xfd, 255, 0, 1, 127, 0, 127 };
	const uint8_t t310[] = { 6, 1, 4, 0x80, 2, 2 };          /* 0-5 +1, 6-9 none, 10-11 +2 */
	const uint8_t t311[] = { 0xf0, 0x02, 0x01 };             /* long form +1, truncated */
	const uint8_t t311b[] = { 0xe8, 0x05, 0xd1 };            /* no-column -2; one-line 0, 2 units */
	const uint8_t junk[] = { 0x13, 0x7f, 0x7f, 0x7f, 0x7f };  /* no entry start */
	const uint8_t manyvar[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01 };

	is_int(pysym_line(309, t309, sizeof(t309), 10, -1), 10, "lnotab: not started, first line");
	is_int(pysym_line(309, t309, sizeof(t309), 10, 5), 11, "lnotab: byte 5");
	is_int(pysym_line(309, t309, sizeof(t309), 10, 6), 10, "lnotab: pairs at one offset add up");
	is_int(pysym_line(309, t309, sizeof(t309), 10, 261), 10, "lnotab: an offset step of 255 keeps the line");
	is_int(pysym_line(309, t309, sizeof(t309), 10, 262), 264, "lnotab: a line step split in two");
	is_int(pysym_line(309, t309, sizeof(t309), 10, 9999), 264, "lnotab: past the end, the last line");
	is_int(pysym_line(309, t309, sizeof(t309) - 1, 10, 262), 137, "lnotab: odd length, last byte ignored");
	is_int(pysym_line(310, t310, sizeof(t310), 10, -1), 10, "not started: first line");
	is_int(pysym_line(310, t310, sizeof(t310), 10, 0), 11, "3.10 pairs: unit 0");
	is_int(pysym_line(310, t310, sizeof(t310), 10, 2), 11, "3.10 pairs: unit 2");
	is_int(pysym_line(310, t310, sizeof(t310), 10, 3), -1, "3.10 pairs: no line");
	is_int(pysym_line(310, t310, sizeof(t310), 10, 5), 13, "3.10 pairs: -128 keeps the line");
	is_int(pysym_line(310, t310, sizeof(t310), 10, 6), -1, "3.10 pairs: past the end");
	is_int(pysym_line(310, t310, 5, 10, 5), -1, "3.10 pairs: odd length ignored");
	is_int(pysym_line(311, t311, sizeof(t311), 7, 0), 8, "3.11 long form, truncated");
	is_int(pysym_line(311, t311, sizeof(t311), 7, 1), -1, "3.11 past the end");
	is_int(pysym_line(311, t311b, sizeof(t311b), 7, 0), 5, "3.11 no-column, negative delta");
	is_int(pysym_line(311, t311b, sizeof(t311b), 7, 2), 5, "3.11 one-line form 0, second unit");
	is_int(pysym_line(311, t311b, sizeof(t311b), 7, 3), -1, "3.11 past the end");
	is_int(pysym_line(311, junk, sizeof(junk), 7, 0), -1, "3.11 junk: no line, no crash");
	ok(pysym_line(311, manyvar, sizeof(manyvar), 7, 0) != 0, "3.11 endless varint: bounded");
	is_int(pysym_line(312, NULL, 0, 7, 0), -1, "empty table");
	is_int(pysym_line(313, t311b, sizeof(t311b), 7, 1 << 30), -1, "absurd offset");
}

/* Identity, cache and exit on a live process of interpreter py. */
static void test_live(const struct pyinterp *py)
{
	struct gb_py_frame fr[64], bad;
	struct py_frame_info fi, fi2;
	struct gb_py_config cfg;
	struct py_expect e;
	struct pysym *s;
	char out[600], why[256], *keep = NULL;
	size_t mem0, mem1, codes;
	pid_t pid;
	int n, err;

	snprintf(out, sizeof(out), "%s/live-%d", tmpdir, py->version);
	pid = py_start_target(py->python, out, &e);
	if (!ok(pid > 0, "%s: target parked", py->python))
		return;
	s = pysym_new();
	if (!ok(s && !pyruntime_find(pid, &cfg, why, sizeof(why)), "%s: runtime (%s)",
		py->python, why))
		goto cleanup;
	n = pyruntime_walk(pid, &cfg, e.thread, 0, fr, 64);
	if (!ok(n == e.n && n > 4, "%s: %d frames", py->python, n))
		goto cleanup;
	mem0 = pysym_mem(s, NULL);

	err = pysym_resolve(s, pid, &cfg, &fr[0], &fi);
	is_int(err, 0, "resolve the innermost frame");
	is_str(fi.qualname, e.f[0].qualname, "its name");
	is_int(fi.line, e.f[0].line, "its line");

	/* a token that does not match: "?" and -ESTALE, never a name */
	bad = fr[1];
	bad.ident ^= 1;
	err = pysym_resolve(s, pid, &cfg, &bad, &fi2);
	is_int(err, -ESTALE, "changed token: -ESTALE");
	is_str(fi2.qualname, "?", "changed token: no name");
	is_str(fi2.filename, "?", "changed token: no file");
	is_int(fi2.line, 0, "changed token: no line");
	/* another code object at the address of a known one (address reuse) */
	bad = fr[2];
	bad.ident = fr[0].ident;
	is_int(pysym_resolve(s, pid, &cfg, &bad, &fi2), -ESTALE,
	       "another object at a known address: -ESTALE");
	is_str(fi2.qualname, "?", "  and not the other object's name");
	bad = fr[0];
	bad.code += 8;
	is_int(pysym_resolve(s, pid, &cfg, &bad, &fi2), -ESTALE, "a shifted address: -ESTALE");

	/* cached: the same strings, no memory growth */
	mem1 = pysym_mem(s, &codes);
	is_int(codes, 1, "one code object cached");
	err = pysym_resolve(s, pid, &cfg, &fr[0], &fi2);
	ok(!err && fi2.qualname == fi.qualname && fi2.filename == fi.filename,
	   "a second resolve hits the cache");
	is_int(pysym_mem(s, NULL), mem1, "  and allocates nothing");
	for (int i = 0; i < n - 1; i++)
		pysym_resolve(s, pid, &cfg, &fr[i], &fi2);
	mem1 = pysym_mem(s, &codes);
	diag("%s: %zu distinct code objects, %zu bytes: %.0f bytes per distinct frame",
	     py->python, codes, mem1 - mem0, (double)(mem1 - mem0) / codes);
	ok(codes > 3 && (mem1 - mem0) / codes < 4096, "memory per distinct frame is small");

	/* the process exits: what was resolved stays, the rest is unknown */
	keep = strdup(fi.qualname);
	py_kill(pid);
	err = pysym_resolve(s, pid, &cfg, &fr[0], &fi2);
	ok(!err && !strcmp(fi2.qualname, e.f[0].qualname) && fi2.line == e.f[0].line,
	   "after exit, a resolved frame still resolves");
	bad = fr[0];
	bad.ident ^= 2;
	err = pysym_resolve(s, pid, &cfg, &bad, &fi2);
	ok(err < 0 && !strcmp(fi2.qualname, "?"), "after exit, an unknown frame is \"?\" (%d)",
	   err);
	pysym_forget(s, pid);
	ok(pysym_mem(s, &codes) < mem1 && codes == 0, "forget drops the process's code objects");
	is_str(fi.qualname, keep, "strings handed out stay valid after forget");
	err = pysym_resolve(s, pid, &cfg, &fr[0], &fi2);
	ok(err < 0 && !strcmp(fi2.qualname, "?"), "after forget, nothing resolves (%d)", err);
	pid = -1;
cleanup:
	py_kill(pid);
	pysym_free(s);
	free(keep);
}

/*
 * A code object of CPython 3.11's layout, made in this process's memory,
 * whose line table's size is readable and its bytes are not (they lie on
 * a page unmapped, as when the process changed under the read): "?" and
 * an error, nothing freed twice; the same object with its table readable
 * resolves (so the failure is the table's, not the object's).
 */
static void test_unreadable_table(void)
{
	struct gb_py_config cfg = { .version = 311, .code_ident = 256, .ident_file = GB_PY_NONE };
	struct py_code_layout l;
	struct py_frame_info fi;
	struct gb_py_frame fr = { 0 };
	static __u8 code[512], name[128], file[128], table[64];
	long page = sysconf(_SC_PAGESIZE);
	__u8 *pages, *tab;
	struct pysym *s;
	__u64 w[GB_PY_IDENT_LEN / 8], addr;
	__u32 state = 1u << 2 | 1u << 5 | 1u << 6;      /* kind 1, compact, ascii */
	__s64 len;
	int first = 7, err;

	if (!ok(!pyruntime_code_layout(getpid(), &cfg, &l), "CPython 3.11's code layout"))
		return;
	/* two strs: compact ASCII, their characters after the header */
	len = 7;
	memcpy(name + l.str_length, &len, 8);
	memcpy(name + l.str_state, &state, 4);
	memcpy(name + l.ascii_size, "fake_fn", 8);
	len = 8;
	memcpy(file + l.str_length, &len, 8);
	memcpy(file + l.str_state, &state, 4);
	memcpy(file + l.ascii_size, "/fake.py", 9);
	addr = (uintptr_t)name;
	memcpy(code + l.name, &addr, 8);
	memcpy(code + l.qualname, &addr, 8);
	addr = (uintptr_t)file;
	memcpy(code + l.filename, &addr, 8);
	memcpy(code + l.firstlineno, &first, 4);
	/* the line table: a bytes object of 16 bytes, at the end of a mapped page */
	pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!ok(pages != MAP_FAILED, "two pages mapped"))
		return;
	munmap(pages + page, page);
	tab = pages + page - l.bytes_sval;
	len = 16;
	memcpy(tab + l.bytes_size, &len, 8);
	addr = (uintptr_t)tab;
	memcpy(code + l.linetable, &addr, 8);
	memcpy(w, code + cfg.code_ident, sizeof(w));
	fr.code = (uintptr_t)code;
	fr.ident = gb_py_ident(w);

	s = pysym_new();
	err = pysym_resolve(s, getpid(), &cfg, &fr, &fi);
	ok(err < 0, "a line table that cannot be read: an error (%d)", err);
	is_str(fi.qualname, "?", "  and no name");

	/* the same object, its table readable (an empty one): resolved */
	len = 0;
	memcpy(table + l.bytes_size, &len, 8);
	addr = (uintptr_t)table;
	memcpy(code + l.linetable, &addr, 8);
	memcpy(w, code + cfg.code_ident, sizeof(w));
	fr.ident = gb_py_ident(w);
	err = pysym_resolve(s, getpid(), &cfg, &fr, &fi);
	is_int(err, 0, "with its line table readable it resolves");
	is_str(fi.qualname, "fake_fn", "  its name");
	is_str(fi.filename, "/fake.py", "  its file");
	pysym_free(s);
	munmap(pages, page);
}

/*
 * 3.6-3.11: a code object's token folds its file name's length and
 * characters, not what CPython sets later (its hash), and its line
 * table's (the last pointer of the bytes folded) size and bytes, not its
 * hash; the same for objects at the end of their mapping.
 */
static void test_ident_file(void)
{
	struct gb_py_config cfg = { .version = 311, .ident_file = 8, .ident_firstline = 4 };
	__u64 w[GB_PY_IDENT_LEN / 8] = { 0 }, len = 8;
	__u64 want_s[GB_PY_FILE_LEN / 8] = { 0 }, want_t[GB_PY_FILE_LEN / 8] = { 0 };
	__u32 state = 1u << 2 | GB_PY_STR_COMPACT_ASCII, a, b, c;
	long page = sysconf(_SC_PAGESIZE);
	int fd = proc_mem_open(getpid());
	__u8 *pages, *str, *tab, *code;
	__u64 tablen = 6;
	__u32 first = 3;

	pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!ok(fd >= 0 && pages != MAP_FAILED, "own memory open, two pages mapped"))
		return;
	munmap(pages + page, page);
	/* a compact ASCII str, as 3.6-3.11 lay it out: length, hash, state, wstr, characters */
	str = pages;
	memcpy(str + 16, &len, 8);
	memcpy(str + 32, &state, 4);
	memcpy(str + 48, "cell0.py", 8);
	w[1] = (uintptr_t)str;
	/* a bytes object: size, hash, bytes */
	tab = pages + 512;
	memcpy(tab + 16, &tablen, 8);
	memcpy(tab + 32, "\x02\x01\x04\x01\x08\x01", 6);
	w[GB_PY_IDENT_LEN / 8 - 1] = (uintptr_t)tab;
	/* the code object: its first line at ident_firstline */
	code = pages + 1024;
	memcpy(code + 4, &first, 4);
	is_int(pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &a), 0,
	       "a token with its file name");
	memcpy(str + 48, "cell1.py", 8);
	pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &b);
	ok(a != b, "another file name, another token (%#x, %#x)", a, b);
	memset(str + 24, 0x5a, 8);
	pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &c);
	is_int(c, b, "  the same once its hash is set");
	memcpy(str + 56, "garbage!", 8);
	pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &c);
	is_int(c, b, "  and whatever lies past its characters");
	tab[35] = 0x02;         /* its function a line further down */
	pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &a);
	ok(a != b, "another line table, another token (%#x, %#x)", a, b);
	memset(tab + 24, 0x5a, 8);
	tab[40] = 0x77;
	pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &c);
	is_int(c, a, "  the same once its hash is set, whatever lies past it");
	first = 4;              /* a module's code: its first statement a line further down */
	memcpy(code + 4, &first, 4);
	pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &b);
	ok(a != b, "another first line, another token (%#x, %#x)", a, b);
	/*
	 * Where the GB_PY_FILE_LEN bytes run past the mapping (or into a page
	 * BPF cannot read): the object's own bytes, folded as anywhere else
	 */
	memcpy(want_s, str + GB_PY_FILE_AT, 32);
	memcpy(want_s + 4, "cell1.py", 8);
	want_t[0] = tablen;
	memcpy(want_t + 2, tab + 32, tablen);
	memcpy(pages + page - 57, str, 57);     /* 48 bytes, 8 characters and a NUL */
	w[1] = (uintptr_t)(pages + page - 57);
	is_int(pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &c), 0,
	       "a file name at the end of its mapping");
	is_int(c, gb_py_ident_lines(gb_py_ident_file(gb_py_ident(w), want_s), first, want_t),
	       "  folded as anywhere else");
	w[1] = (uintptr_t)str;
	memcpy(pages + page - 39, tab, 39);     /* 32 bytes, 6 of table and a NUL */
	w[GB_PY_IDENT_LEN / 8 - 1] = (uintptr_t)(pages + page - 39);
	is_int(pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &c), 0,
	       "a line table at the end of its mapping");
	is_int(c, gb_py_ident_lines(gb_py_ident_file(gb_py_ident(w), want_s), first, want_t),
	       "  folded as anywhere else");
	w[GB_PY_IDENT_LEN / 8 - 1] = (uintptr_t)(pages + page - 20);
	is_int(pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &c), 0,
	       "a line table whose size lies past its mapping's end");
	want_t[0] = 0;
	is_int(c, gb_py_ident_lines(gb_py_ident_file(gb_py_ident(w), want_s), first, want_t),
	       "  none of it is folded (BPF's token: 0, unknown)");
	w[1] = (uintptr_t)(pages + page - 40);
	ok(pyruntime_code_ident(fd, &cfg, (uintptr_t)code, w, &c) < 0,
	   "a file name whose head lies past its mapping's end: an error");
	munmap(pages, page);
	close(fd);
}

int main(void)
{
	struct pyinterp py[32];
	int n = py_interps(py, 32, 0);

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_malformed();
	test_unreadable_table();
	test_ident_file();
	for (int i = 0; i < n; i++)
		test_tables(&py[i]);
	for (int i = 0; i < n; i++)
		test_live(&py[i]);
	if (!n)
		diag("no CPython 3.6+ installed: line tables from real code not tested");
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			diag("could not remove %s", tmpdir);
	}
	return done_testing();
}
