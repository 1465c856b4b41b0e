// SPDX-License-Identifier: BSD-2-Clause
/*
 * Symbolising Python frames; see pysym.h.
 *
 * A code object is read once per (pid, address, identity token): its
 * name (co_qualname; co_name in 3.10, which has no qualified name in the
 * code object), file name, first line and line table.  The token is
 * recomputed over the object's bytes when it is read, and again after its
 * strings are read, so an object freed and its address reused (before or
 * while we read it) resolves as "?" rather than as another function.
 * Strings are interned and live until pysym_free, so a process that exits
 * keeps the names already resolved; code entries live until pysym_forget.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/hashmap.h"
#include "lib/proc.h"
#include "sym/pyruntime.h"
#include "sym/pysym.h"

#define UNKNOWN "?"
#define STR_MAX 4096            /* characters of a name read */
#define LINETABLE_MAX (1 << 20)

struct pycode {                 /* a resolved code object */
	__u64 addr;
	pid_t pid;
	__u32 ident;
	const char *qualname, *filename;        /* interned */
	int firstlineno;
	__u32 version;
	__u32 tablen;
	int last_instr, last_line;              /* one-slot line cache */
	__u8 *table;
};

struct pyproc {                 /* per process: layout and memory */
	struct pyproc *next;
	pid_t pid;
	int memfd;
	struct py_code_layout lay;
};

struct pysym {
	struct hashmap codes;   /* hash of (pid, addr, ident) -> struct pycode * */
	struct hashmap strs;    /* hash of a string -> its interned copy */
	struct pyproc *procs;
	size_t bytes;           /* allocated, but for the maps */
};

static uint64_t code_hash(pid_t pid, __u64 addr, __u32 ident)
{
	return hashmap_hash2(addr, (__u64)ident << 32 | (__u32)pid);
}

/* The code entry of (pid, addr, ident), or NULL. */
static struct pycode *find_code(const struct pysym *s, pid_t pid, __u64 addr, __u32 ident)
{
	const struct hashmap_slot *sl = hashmap_find(&s->codes, code_hash(pid, addr, ident));

	for (; sl; sl = hashmap_find_next(&s->codes, sl)) {
		struct pycode *c = (struct pycode *)(uintptr_t)sl->val;

		if (c->addr == addr && c->pid == pid && c->ident == ident)
			return c;
	}
	return NULL;
}

struct pysym *pysym_new(void)
{
	struct pysym *s = calloc(1, sizeof(*s));

	if (s)
		s->bytes = sizeof(*s);
	return s;
}

static void free_code(struct pysym *s, struct pycode *c)
{
	s->bytes -= sizeof(*c) + c->tablen;
	free(c->table);
	free(c);
}

void pysym_forget(struct pysym *s, pid_t pid)
{
	struct hashmap_slot *sl;
	struct pyproc **pp;

	if (!s)
		return;
	hashmap_for_each(&s->codes, sl) {
		struct pycode *c = (struct pycode *)(uintptr_t)sl->val;

		if (c->pid != pid)
			continue;
		hashmap_remove(&s->codes, sl);
		free_code(s, c);
	}
	for (pp = &s->procs; *pp; pp = &(*pp)->next) {
		struct pyproc *p = *pp;

		if (p->pid != pid)
			continue;
		*pp = p->next;
		if (p->memfd >= 0)
			close(p->memfd);
		s->bytes -= sizeof(*p);
		free(p);
		break;
	}
}

void pysym_free(struct pysym *s)
{
	struct hashmap_slot *sl;

	if (!s)
		return;
	while (s->procs)
		pysym_forget(s, s->procs->pid);
	hashmap_for_each(&s->codes, sl)
		free_code(s, (struct pycode *)(uintptr_t)sl->val);
	hashmap_for_each(&s->strs, sl)
		free((char *)(uintptr_t)sl->val);
	hashmap_release(&s->codes);
	hashmap_release(&s->strs);
	free(s);
}

size_t pysym_mem(const struct pysym *s, size_t *codes)
{
	if (codes)
		*codes = s ? s->codes.n : 0;
	return s ? s->bytes + hashmap_mem(&s->codes) + hashmap_mem(&s->strs) : 0;
}

/* The interned copy of str, or NULL (out of memory). */
static const char *intern(struct pysym *s, const char *str)
{
	size_t len = strlen(str);
	uint64_t h = hashmap_hash_bytes(str, len);
	const struct hashmap_slot *sl;
	char *p;

	for (sl = hashmap_find(&s->strs, h); sl; sl = hashmap_find_next(&s->strs, sl))
		if (!strcmp((const char *)(uintptr_t)sl->val, str))
			return (const char *)(uintptr_t)sl->val;
	p = malloc(len + 1);
	if (!p)
		return NULL;
	memcpy(p, str, len + 1);
	if (hashmap_add(&s->strs, h, (uintptr_t)p)) {
		free(p);
		return NULL;
	}
	s->bytes += len + 1;
	return p;
}

/* Line tables -------------------------------------------------------------- */

/*
 * 3.6-3.9 co_lnotab: (byte-offset delta, signed line delta) pairs, each
 * pair's line starting at its offset: the line of the last offset at or
 * before addr.
 */
static int line_lnotab(const __u8 *tab, size_t len, int line, int addr)
{
	int at = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		at += tab[i];
		if (at > addr)
			break;
		line += (__s8)tab[i + 1];
	}
	return line;
}

/* 3.10: (byte-offset delta, signed line delta) pairs; -128: no line. */
static int line_310(const __u8 *tab, size_t len, int line, int addr)
{
	int start, end = 0, ar_line;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int ldelta = (__s8)tab[i + 1];

		start = end;
		end += tab[i];
		if (ldelta == -128) {
			ar_line = -1;
		} else {
			line += ldelta;
			ar_line = line;
		}
		if (addr >= start && addr < end)
			return ar_line;
	}
	return -1;
}

static unsigned read_varint(const __u8 *tab, size_t len, size_t *i)
{
	unsigned val = 0, shift = 0, b;

	do {
		if (*i >= len || shift > 24)
			return val;
		b = tab[(*i)++];
		val |= (b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return val;
}

static int read_svarint(const __u8 *tab, size_t len, size_t *i)
{
	unsigned u = read_varint(tab, len, i);

	return u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
}

/*
 * 3.11+: entries of a first byte 1CCCCLLL (code C, L+1 code units) and
 * code-dependent varints.  Codes 0-9: short form, same line; 10-12: one
 * line form, line delta C-10; 13: no columns; 14: long form (both start
 * with a signed line delta); 15: no location.
 */
static int line_311(const __u8 *tab, size_t len, int line, int addr)
{
	size_t i = 0;
	int end = 0;

	while (i < len) {
		__u8 b = tab[i];
		int code = (b >> 3) & 15, start = end, ar_line;
		size_t j = i + 1;

		if (!(b & 0x80)) {              /* not an entry start: resync */
			i++;
			continue;
		}
		if (code == 13 || code == 14)
			line += read_svarint(tab, len, &j);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		ar_line = code == 15 ? -1 : line;
		end += ((b & 7) + 1) * 2;
		for (i++; i < len && !(tab[i] & 0x80); i++)
			;
		if (addr >= start && addr < end)
			return ar_line;
	}
	return -1;
}

int pysym_line(unsigned version, const uint8_t *tab, size_t len, int firstlineno,
	       int32_t instr)
{
	if (instr < 0)
		return firstlineno;
	if (instr > (1 << 28))
		return -1;
	if (version <= 309)
		return line_lnotab(tab, len, firstlineno, instr);
	if (version <= 310)
		return line_310(tab, len, firstlineno, instr * 2);
	return line_311(tab, len, firstlineno, instr * 2);
}

/* Reading a process --------------------------------------------------------- */

static struct pyproc *get_proc(struct pysym *s, pid_t pid, const struct gb_py_config *cfg)
{
	struct pyproc *p;

	for (p = s->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->memfd = proc_mem_open(pid);
	if (p->memfd < 0 || pyruntime_code_layout(pid, cfg, &p->lay)) {
		if (p->memfd >= 0)
			close(p->memfd);
		free(p);
		return NULL;
	}
	p->next = s->procs;
	s->procs = p;
	s->bytes += sizeof(*p);
	return p;
}

static char *put_utf8(char *o, __u32 c)
{
	if (c < 0x80) {
		*o++ = c;
	} else if (c < 0x800) {
		*o++ = 0xc0 | c >> 6;
		*o++ = 0x80 | (c & 63);
	} else if (c < 0x10000) {
		*o++ = 0xe0 | c >> 12;
		*o++ = 0x80 | ((c >> 6) & 63);
		*o++ = 0x80 | (c & 63);
	} else {
		*o++ = 0xf0 | (c >> 18 & 7);
		*o++ = 0x80 | ((c >> 12) & 63);
		*o++ = 0x80 | ((c >> 6) & 63);
		*o++ = 0x80 | (c & 63);
	}
	return o;
}

/*
 * A str object at addr, as malloc'd UTF-8 in *out.  Code objects hold
 * compact strs: the characters follow the header (PyASCIIObject for ASCII,
 * PyCompactUnicodeObject else), 1, 2 or 4 bytes each (state.kind).
 */
static int read_str(const struct pyproc *p, __u64 addr, char **out)
{
	const struct py_code_layout *l = &p->lay;
	__u8 hdr[128];
	__s64 length;
	__u32 state, kind;
	__u8 *raw = NULL;
	char *s, *o;
	int err;

	if (l->compact_size > sizeof(hdr) || l->str_state + 4 > sizeof(hdr))
		return -EINVAL;
	if ((err = proc_mem_read(p->memfd, addr, hdr, l->str_state + 4)))
		return err;
	memcpy(&length, hdr + l->str_length, 8);
	memcpy(&state, hdr + l->str_state, 4);
	kind = (state >> 2) & 7;
	if (!(state >> 5 & 1) || length < 0 || length > STR_MAX ||
	    (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	raw = malloc(length * kind + 1);
	s = malloc(length * 4 + 1);
	if (!raw || !s) {
		free(raw);
		free(s);
		return -ENOMEM;
	}
	addr += (state >> 6 & 1) ? l->ascii_size : l->compact_size;
	if (length && (err = proc_mem_read(p->memfd, addr, raw, length * kind))) {
		free(raw);
		free(s);
		return err;
	}
	o = s;
	for (__s64 i = 0; i < length; i++) {
		__u32 c = kind == 1 ? raw[i] : kind == 2 ? ((__u16 *)raw)[i] : ((__u32 *)raw)[i];

		o = put_utf8(o, c > 0x10ffff ? 0xfffd : c);
	}
	*o = 0;
	free(raw);
	*out = s;
	return 0;
}

static int read_bytes(const struct pyproc *p, __u64 addr, __u8 **out, __u32 *len)
{
	__s64 n;
	int err;

	if ((err = proc_mem_read(p->memfd, addr + p->lay.bytes_size, &n, 8)))
		return err;
	if (n < 0 || n > LINETABLE_MAX)
		return -EINVAL;
	*out = malloc(n ? n : 1);
	if (!*out)
		return -ENOMEM;
	if (n && (err = proc_mem_read(p->memfd, addr + p->lay.bytes_sval, *out, n))) {
		free(*out);
		*out = NULL;    /* the caller frees what it was handed */
		return err;
	}
	*len = n;
	return 0;
}

static __u32 umax(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/* The code object's first bytes, and its token; 0 or -errno. */
static int read_head(const struct pyproc *p, const struct gb_py_config *cfg,
		     __u64 addr, __u8 *hdr, size_t hdrlen, __u32 *ident)
{
	__u64 w[GB_PY_IDENT_LEN / 8];
	int err = proc_mem_read(p->memfd, addr, hdr, hdrlen);

	if (err)
		return err;
	memcpy(w, hdr + cfg->code_ident, sizeof(w));
	return pyruntime_code_ident(p->memfd, cfg, addr, w, ident);
}

static void unknown(struct py_frame_info *out)
{
	out->qualname = UNKNOWN;
	out->filename = UNKNOWN;
	out->line = 0;
}

static void frame_line(struct pycode *c, const struct gb_py_frame *f,
		       struct py_frame_info *out)
{
	int instr = (__s32)f->instr;

	if (instr != c->last_instr) {
		c->last_line = pysym_line(c->version, c->table, c->tablen,
					  c->firstlineno, instr);
		c->last_instr = instr;
	}
	out->qualname = c->qualname;
	out->filename = c->filename;
	out->line = c->last_line > 0 ? c->last_line : 0;
}

int pysym_resolve(struct pysym *s, pid_t pid, const struct gb_py_config *cfg,
		  const struct gb_py_frame *f, struct py_frame_info *out)
{
	const struct py_code_layout *l;
	struct pyproc *p;
	struct pycode *c;
	__u8 hdr[512];
	__u64 name_ptr, file_ptr, tab_ptr;
	__u32 hdrlen, ident;
	char *name = NULL, *file = NULL;
	__u8 *table = NULL;
	__u32 tablen = 0;
	int first, err;

	unknown(out);
	if (!f->code)
		return -EINVAL;
	c = find_code(s, pid, f->code, f->ident);
	if (c) {
		frame_line(c, f, out);
		return 0;
	}
	p = get_proc(s, pid, cfg);
	if (!p)
		return -ESRCH;
	l = &p->lay;
	hdrlen = umax(cfg->code_ident + GB_PY_IDENT_LEN,
		      umax(umax(l->filename, l->name), umax(l->linetable, l->firstlineno)) + 8);
	if (l->qualname != GB_PY_NONE)
		hdrlen = umax(hdrlen, l->qualname + 8);
	if (hdrlen > sizeof(hdr))
		return -EINVAL;
	if ((err = read_head(p, cfg, f->code, hdr, hdrlen, &ident)))
		return err;
	if (ident != f->ident)
		return -ESTALE;
	memcpy(&name_ptr, hdr + (l->qualname != GB_PY_NONE ? l->qualname : l->name), 8);
	memcpy(&file_ptr, hdr + l->filename, 8);
	memcpy(&tab_ptr, hdr + l->linetable, 8);
	memcpy(&first, hdr + l->firstlineno, 4);
	if ((err = read_str(p, name_ptr, &name)) || (err = read_str(p, file_ptr, &file)) ||
	    (err = read_bytes(p, tab_ptr, &table, &tablen)))
		goto cleanup;
	/* freed and reused while we read it? */
	if ((err = read_head(p, cfg, f->code, hdr, hdrlen, &ident)))
		goto cleanup;
	if (ident != f->ident) {
		err = -ESTALE;
		goto cleanup;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		err = -ENOMEM;
		goto cleanup;
	}
	c->addr = f->code;
	c->pid = pid;
	c->ident = f->ident;
	c->qualname = intern(s, name);
	c->filename = intern(s, file);
	c->firstlineno = first;
	c->version = cfg->version;
	c->table = table;
	c->tablen = tablen;
	c->last_instr = INT32_MIN;
	if (!c->qualname || !c->filename ||
	    hashmap_add(&s->codes, code_hash(pid, c->addr, c->ident), (uintptr_t)c)) {
		free(c);
		err = -ENOMEM;
		goto cleanup;
	}
	table = NULL;
	s->bytes += sizeof(*c) + c->tablen;
	frame_line(c, f, out);
cleanup:
	free(name);
	free(file);
	free(table);
	return err;
}
