// SPDX-License-Identifier: BSD-2-Clause
/*
 * The report's table: the trace streamed once through trace_reader, each
 * host call and GPU activity kept as a 48-byte row, strings interned.
 * trace_reader has checked every event against the JSON grammar, so the
 * members of "args" are located by skipping values over valid text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "lib/array.h"
#include "model/cuda_calls.h"
#include "model/memory.h"
#include "report/report.h"
#include "trace/trace_reader.h"

/* Per-name facts, cached by string id. */
enum { NC_KNOWN = 1, NC_SYNC = 2, NC_LAUNCH = 4 };

struct loader {
	struct rt_table *t;
	uint8_t *ncls;          /* per string id: NC_* | mem op << 4 */
	size_t nncls;
	uint32_t last_pid, last_proc;
	char *buf;              /* unescaped strings */
	size_t bufcap;
};

/* Past the JSON value at s (valid JSON). */
static const char *skip_value(const char *s, const char *end)
{
	int depth = 0;

	do {
		if (*s == '"') {
			for (s++; s < end && *s != '"'; s++)
				if (*s == '\\')
					s++;
			s++;
		} else if (*s == '{' || *s == '[') {
			depth++;
			s++;
		} else if (*s == '}' || *s == ']') {
			depth--;
			s++;
		} else if (depth) {
			s++;
		} else {
			while (s < end && *s != ',' && *s != '}' && *s != ']' && *s != ' ' &&
			       *s != '\t' && *s != '\n' && *s != '\r')
				s++;
		}
	} while (depth > 0 && s < end);
	return s;
}

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
		s++;
	return s;
}

struct span {
	const char *p;
	size_t len;
};

enum { A_KERNEL, A_CORR, A_RET, A_STACK, A_PTR, A_BYTES, A_HANDLE, A_DEVICE, A_STREAM, A_NAME,
       A_ADDRESS, A_MEMKIND, A_N };
static const char *const akeys[A_N] = {
	"kernel", "correlation", "ret", "stack", "ptr", "bytes", "handle", "device", "stream", "name",
	"address", "memory_kind",
};

/* Locate the args members we use inside the object at [s, end). */
static void scan_args(const char *s, const char *end, struct span *a)
{
	memset(a, 0, A_N * sizeof(*a));
	s = skip_ws(s, end);
	if (s >= end || *s != '{')
		return;
	s++;
	for (;;) {
		const char *k, *v;
		size_t klen;

		s = skip_ws(s, end);
		if (s >= end || *s != '"')
			return;
		k = ++s;
		while (s < end && *s != '"')
			s += *s == '\\' ? 2 : 1;
		klen = s - k;
		s = skip_ws(s + 1, end);
		if (s >= end || *s != ':')
			return;
		v = skip_ws(s + 1, end);
		s = skip_value(v, end);
		for (int i = 0; i < A_N; i++)
			if (strlen(akeys[i]) == klen && !memcmp(akeys[i], k, klen)) {
				a[i].p = v;
				a[i].len = s - v;
			}
		s = skip_ws(s, end);
		if (s >= end || *s != ',')
			return;
		s++;
	}
}

/* A JSON string's contents, unescaped (\uXXXX kept as '?' past ASCII). */
static const char *unescape(struct loader *l, const char *p, size_t len)
{
	size_t n = 0;

	if (len < 2 || *p != '"')
		return NULL;
	if (array_grow(&l->buf, &l->bufcap, len + 1))
		return NULL;
	for (size_t i = 1; i + 1 < len; i++) {
		char c = p[i];

		if (c == '\\' && i + 2 < len) {
			c = p[++i];
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u': {
				unsigned v = 0;

				if (i + 4 < len && sscanf(p + i + 1, "%4x", &v) == 1)
					i += 4;
				c = v && v < 0x80 ? (char)v : '?';
				break;
			}
			default: break;
			}
		}
		l->buf[n++] = c;
	}
	l->buf[n] = 0;
	return l->buf;
}

static int64_t num(const struct span *s)
{
	int64_t v = 0;

	if (s->p && tr_parse_int(s->p, s->len, &v))
		v = 0;
	return v;
}

/* "0x1234" (our exporter) or a plain number */
static uint64_t addr(const struct span *s)
{
	char tmp[32];
	size_t n;

	if (!s->p)
		return 0;
	if (*s->p != '"')
		return (uint64_t)num(s);
	n = s->len - 2 < sizeof(tmp) - 1 ? s->len - 2 : sizeof(tmp) - 1;
	memcpy(tmp, s->p + 1, n);
	tmp[n] = 0;
	return strtoull(tmp, NULL, 0);
}

bool rt_frame_is_library(const char *f, size_t len)
{
	const char *open = NULL, *file;

	for (size_t i = len; i-- > 0;)
		if (f[i] == '(') {
			open = f + i;
			break;
		}
	file = open ? open + 1 : f;
	if (!strncmp(file, "<frozen", 7))
		return true;
	/* site-packages, dist-packages and the standard library all live
	 * under .../lib/pythonX.Y/ (or .../lib64/...) */
	return memmem(file, len - (file - f), "-packages/", 10) ||
	       memmem(file, len - (file - f), "/lib/python", 11) ||
	       memmem(file, len - (file - f), "/lib64/python", 13);
}

/* The innermost user frame of args.stack (innermost first), 0 if none. */
static uint32_t user_site(struct loader *l, const struct span *st)
{
	const char *s = st->p, *end = st->p + st->len;

	if (!s || *s != '[')
		return 0;
	s++;
	for (;;) {
		const char *v, *str;

		s = skip_ws(s, end);
		if (s >= end || *s != '"')
			return 0;
		v = s;
		s = skip_value(s, end);
		str = unescape(l, v, s - v);
		if (str && *str && !rt_frame_is_library(str, strlen(str)))
			return strtab_intern(&l->t->strs, str);
		s = skip_ws(s, end);
		if (s >= end || *s != ',')
			return 0;
		s++;
	}
}

static uint8_t classify(struct loader *l, uint32_t id)
{
	const char *n;
	uint8_t c = NC_KNOWN;
	int call;

	if (id >= l->nncls) {
		size_t old = l->nncls;

		if (array_grow(&l->ncls, &l->nncls, id + 1))
			return 0;
		memset(l->ncls + old, 0, l->nncls - old);
	}
	if (l->ncls[id])
		return l->ncls[id];
	n = rt_str(l->t, id);
	call = cuda_call_find(n);
	if (call >= 0) {
		unsigned fam = cuda_calls[call].family;

		if (fam == CF_LAUNCH || fam == CF_GRAPH)
			c |= strstr(n, "Launch") ? NC_LAUNCH : 0;
		if (fam == CF_SYNC && strstr(n, "Synchronize"))
			c |= NC_SYNC;
		if (fam == CF_MEMCPY && !strstr(n, "Async"))
			c |= NC_SYNC;
	}
	c |= mem_call_op(n) << 4;
	l->ncls[id] = c;
	return c;
}

static int proc_index(struct loader *l, uint32_t pid, uint32_t *ix)
{
	struct rt_table *t = l->t;

	if (t->nprocs && pid == l->last_pid) {
		*ix = l->last_proc;
		return 0;
	}
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid) {
			*ix = l->last_proc = i;
			l->last_pid = pid;
			return 0;
		}
	{
		struct rt_proc *p = realloc(t->procs, (t->nprocs + 1) * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->procs = p;
	}
	t->procs[t->nprocs] = (struct rt_proc){ .pid = pid };
	*ix = l->last_proc = t->nprocs++;
	l->last_pid = pid;
	return 0;
}

/*
 * A CUPTI memory record (cat "gpu_memory", name "alloc" or "free"): kept
 * when it is device or managed memory (memory.h).
 */
static int add_gpu_memory(struct loader *l, const struct tr_event *ev, int64_t pid)
{
	struct rt_table *t = l->t;
	int nm = ev->key[TRK_NAME], iargs = ev->key[TRK_ARGS];
	struct span a[A_N];
	struct rt_mem *m;
	const char *s;
	uint32_t proc;
	uint8_t op;

	if (tr_event_str_is(ev, nm, "alloc"))
		op = RTM_ALLOC;
	else if (tr_event_str_is(ev, nm, "free"))
		op = RTM_FREE;
	else
		return 0;
	if (iargs < 0)
		return 0;
	scan_args(ev->text + ev->m[iargs].val.off,
		  ev->text + ev->m[iargs].val.off + ev->m[iargs].val.len, a);
	if (a[A_MEMKIND].p && (s = unescape(l, a[A_MEMKIND].p, a[A_MEMKIND].len)) &&
	    !mem_kind_is_device(mem_kind_from_name(s)))
		return 0;
	if (proc_index(l, pid, &proc) ||
	    array_grow(&t->mem, &t->capmem, t->nmem + 1))
		return -ENOMEM;
	m = &t->mem[t->nmem++];
	memset(m, 0, sizeof(*m));
	m->ts = ev->ts_ns;
	m->op = op;
	m->key = addr(&a[A_ADDRESS]);
	m->bytes = (uint64_t)num(&a[A_BYTES]);
	m->proc = proc;
	m->corr = (uint32_t)num(&a[A_CORR]);
	m->device = (uint16_t)num(&a[A_DEVICE]);
	m->gpu = 1;
	/* until the call with its correlation id names it */
	m->name = strtab_intern(&t->strs, op == RTM_ALLOC ? "alloc" : "free");
	return 0;
}

static int add_event(struct loader *l, const struct tr_event *ev)
{
	struct rt_table *t = l->t;
	int ph = ev->key[TRK_PH], cat = ev->key[TRK_CAT], nm = ev->key[TRK_NAME];
	int ipid = ev->key[TRK_PID], itid = ev->key[TRK_TID], iargs = ev->key[TRK_ARGS];
	struct span a[A_N];
	struct rt_event *r;
	const char *s;
	int64_t pid = 0, tid = 0;
	uint32_t proc, name;
	uint8_t kind, cls;

	if (ipid < 0 || tr_parse_int(ev->text + ev->m[ipid].val.off, ev->m[ipid].val.len, &pid))
		return 0;
	if (tr_event_str_is(ev, ph, "M")) {
		if (tr_event_str_is(ev, nm, "process_name") && iargs >= 0) {
			scan_args(ev->text + ev->m[iargs].val.off,
				  ev->text + ev->m[iargs].val.off + ev->m[iargs].val.len, a);
			if (proc_index(l, pid, &proc))
				return -ENOMEM;
			if (a[A_NAME].p && (s = unescape(l, a[A_NAME].p, a[A_NAME].len)))
				t->procs[proc].name = strtab_intern(&t->strs, s);
		}
		return 0;
	}
	if (cat >= 0 && nm >= 0 && ev->has_ts && tr_event_str_is(ev, cat, "gpu_memory"))
		return add_gpu_memory(l, ev, pid);
	if (!tr_event_str_is(ev, ph, "X") || cat < 0 || nm < 0 || !ev->has_ts)
		return 0;
	if (tr_event_str_is(ev, cat, "cuda_api"))
		kind = RT_API;
	else if (tr_event_str_is(ev, cat, "kernel"))
		kind = RT_KERNEL;
	else if (tr_event_str_is(ev, cat, "nccl"))
		kind = RT_NCCL;
	else if (tr_event_str_is(ev, cat, "gpu_memcpy"))
		kind = RT_MEMCPY;
	else if (tr_event_str_is(ev, cat, "gpu_memset"))
		kind = RT_MEMSET;
	else
		return 0;
	if (itid >= 0)
		tr_parse_int(ev->text + ev->m[itid].val.off, ev->m[itid].val.len, &tid);
	s = unescape(l, ev->text + ev->m[nm].val.off, ev->m[nm].val.len);
	name = s ? strtab_intern(&t->strs, s) : 0;
	if (proc_index(l, pid, &proc))
		return -ENOMEM;
	if (iargs >= 0)
		scan_args(ev->text + ev->m[iargs].val.off,
			  ev->text + ev->m[iargs].val.off + ev->m[iargs].val.len, a);
	else
		memset(a, 0, sizeof(a));
	if (array_grow(&t->ev, &t->cap, t->nev + 1))
		return -ENOMEM;
	r = &t->ev[t->nev++];
	memset(r, 0, sizeof(*r));
	r->ts = ev->ts_ns;
	r->dur = ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0;
	r->name = name;
	r->proc = proc;
	r->kind = kind;
	r->corr = (uint32_t)num(&a[A_CORR]);
	if (t->nev == 1 || r->ts < t->t_first)
		t->t_first = r->ts;
	if (r->ts + r->dur > t->t_last)
		t->t_last = r->ts + r->dur;
	if (kind != RT_API) {
		r->device = (uint16_t)num(&a[A_DEVICE]);
		r->tid = (uint32_t)num(&a[A_STREAM]);
		return 0;
	}
	r->tid = (uint32_t)tid;
	if (a[A_RET].p && num(&a[A_RET]) != 0) {
		r->flags |= RTF_FAILED;
		r->ret = (int32_t)num(&a[A_RET]);
	}
	if (a[A_STACK].p) {
		t->nstacks++;
		r->site = user_site(l, &a[A_STACK]);
	}
	cls = classify(l, name);
	if (cls & NC_SYNC)
		r->flags |= RTF_SYNC;
	if (cls & NC_LAUNCH) {
		r->flags |= RTF_LAUNCH;
		if (a[A_KERNEL].p && (s = unescape(l, a[A_KERNEL].p, a[A_KERNEL].len)))
			r->aux = strtab_intern(&t->strs, s);
	}
	if ((cls >> 4) && !(r->flags & RTF_FAILED)) {
		struct rt_mem *m;
		int op = cls >> 4;

		if (array_grow(&t->mem, &t->capmem, t->nmem + 1))
			return -ENOMEM;
		m = &t->mem[t->nmem++];
		memset(m, 0, sizeof(*m));
		m->ts = op == MEM_OP_ALLOC || op == MEM_OP_ALLOC_HANDLE ? r->ts + r->dur : r->ts;
		m->op = op == MEM_OP_ALLOC || op == MEM_OP_ALLOC_HANDLE ? RTM_ALLOC : RTM_FREE;
		m->key = op == MEM_OP_ALLOC_HANDLE || op == MEM_OP_FREE_HANDLE
			 ? addr(&a[A_HANDLE]) | RT_MEM_HANDLE : addr(&a[A_PTR]);
		m->bytes = (uint64_t)num(&a[A_BYTES]);
		m->site = r->site;
		m->name = name;
		m->proc = proc;
	}
	return 0;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct rt_event *x = a, *y = b;

	return (x->ts > y->ts) - (x->ts < y->ts);
}

static const struct rt_table *sort_t;

/* host calls with a correlation id, by (proc, corr) */
static int cmp_corr(const void *a, const void *b)
{
	const struct rt_event *x = &sort_t->ev[*(const uint32_t *)a];
	const struct rt_event *y = &sort_t->ev[*(const uint32_t *)b];

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return (x->corr > y->corr) - (x->corr < y->corr);
}

/* Give each CUPTI memory record the site and name of the call with its
 * correlation id (cuMemAlloc, or the library call that allocated). */
static int mem_records_sites(struct rt_table *t)
{
	uint32_t *ix;
	size_t n = 0;
	bool any = false;

	for (size_t i = 0; i < t->nmem && !any; i++)
		any = t->mem[i].gpu && t->mem[i].corr;
	if (!any)
		return 0;
	ix = malloc((t->nev + 1) * sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < t->nev; i++)
		if (t->ev[i].kind == RT_API && t->ev[i].corr)
			ix[n++] = i;
	sort_t = t;
	qsort(ix, n, sizeof(*ix), cmp_corr);
	for (size_t i = 0; i < t->nmem; i++) {
		struct rt_mem *m = &t->mem[i];
		size_t lo = 0, hi = n;

		if (!m->gpu || !m->corr)
			continue;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			const struct rt_event *e = &t->ev[ix[mid]];

			if (e->proc < m->proc || (e->proc == m->proc && e->corr < m->corr))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && t->ev[ix[lo]].proc == m->proc && t->ev[ix[lo]].corr == m->corr) {
			m->site = t->ev[ix[lo]].site;
			m->name = t->ev[ix[lo]].name;
		}
	}
	free(ix);
	return 0;
}

/* Drops and the processes whose calls may be missing, from the "gpubpf" object. */
static int read_missed(struct rt_table *t, const struct trace_reader *r)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(r->meta, "calls_may_be_missing");
	const cJSON *v;
	size_t n = 0;

	t->dropped = r->dropped_total;
	if (!cJSON_IsObject(o))
		return 0;
	cJSON_ArrayForEach(v, o)
		n++;
	if (!n)
		return 0;
	t->missed = calloc(2 * n, sizeof(*t->missed));
	if (!t->missed)
		return -ENOMEM;
	cJSON_ArrayForEach(v, o) {
		if (!cJSON_IsString(v) || !v->string)
			continue;
		t->missed[2 * t->nmissed] = strtoul(v->string, NULL, 10);
		t->missed[2 * t->nmissed + 1] = strtab_intern(&t->strs, v->valuestring);
		if (!t->missed[2 * t->nmissed + 1])
			return -ENOMEM;
		t->nmissed++;
	}
	return 0;
}

int rt_load(struct rt_table *t, const char *path, char *err, size_t errlen)
{
	struct trace_reader r;
	struct loader l = { .t = t };
	struct tr_event *ev;
	bool sorted = true;
	int ret;

	memset(t, 0, sizeof(*t));
	strtab_init(&t->strs);
	t->path = strdup(path);
	ret = trace_reader_open(&r, path);
	if (ret < 0) {
		snprintf(err, errlen, "%s", trace_reader_errmsg(&r));
		goto out;
	}
	ret = read_missed(t, &r);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		goto out;
	}
	while ((ret = trace_reader_next(&r, &ev)) > 0) {
		int64_t prev = t->nev ? t->ev[t->nev - 1].ts : 0;

		t->nread++;
		ret = add_event(&l, ev);
		free(ev);
		if (ret) {
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
			goto out;
		}
		if (t->nev > 1 && t->ev[t->nev - 1].ts < prev)
			sorted = false;
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s", trace_reader_errmsg(&r));
		goto out;
	}
	if (!sorted)
		qsort(t->ev, t->nev, sizeof(*t->ev), cmp_ev);
	ret = mem_records_sites(t);
	if (ret)
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
out:
	trace_reader_close(&r);
	free(l.ncls);
	free(l.buf);
	return ret;
}

void rt_release(struct rt_table *t)
{
	strtab_release(&t->strs);
	free(t->missed);
	free(t->ev);
	free(t->mem);
	free(t->procs);
	free(t->path);
	memset(t, 0, sizeof(*t));
}
