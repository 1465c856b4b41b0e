// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf merge's inputs: opened (a .pftrace through a temporary JSON
 * copy, see open_input()), checked to come from one gpubpf
 * major.minor, labelled by host, and their clocks shifted onto the first
 * trace's by the realtime offsets, then with --align-collectives by the
 * skew the NCCL kernels show (see merge_align.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "merge/merge.h"
#include "model/model_part.h"
#include "trace/export.h"

#define MAX_SHIFT_NS (1LL << 62)

/* "0.1.0" -> major and minor; -EINVAL if it does not start N.N. */
static int major_minor(const char *v, long *maj, long *min)
{
	char *end;

	*maj = strtol(v, &end, 10);
	if (end == v || *end != '.')
		return -EINVAL;
	v = end + 1;
	*min = strtol(v, &end, 10);
	return end == v ? -EINVAL : 0;
}

static void make_labels(struct merge *m)
{
	for (int i = 0; i < m->nin; i++) {
		struct input *in = &m->in[i];
		const char *base = in->r.host;
		int dup = 1;

		if (!*base) {
			base = strrchr(in->path, '/');
			base = base ? base + 1 : in->path;
		}
		for (int j = 0; j < i && in->r.host[0]; j++)
			if (!strcmp(m->in[j].r.host, in->r.host))
				dup++;
		if (dup > 1)
			snprintf(in->label, sizeof(in->label), "%s#%d", base, dup);
		else
			snprintf(in->label, sizeof(in->label), "%s", base);
	}
}

int merge_temp_json(const char *out, char *tmp, size_t len)
{
	const char *slash = strrchr(out, '/');
	int dir = slash ? (int)(slash - out) + 1 : 0, fd;

	if ((size_t)snprintf(tmp, len, "%.*s.merge-XXXXXX.json", dir, out) >= len) {
		fprintf(stderr, "gpubpf: %s: name too long\n", out);
		tmp[0] = 0;
		return -ENAMETOOLONG;
	}
	fd = mkstemps(tmp, 5);
	if (fd < 0) {
		fprintf(stderr, "gpubpf: cannot write beside '%s': %s\n", out, strerror(errno));
		tmp[0] = 0;
		return -errno;
	}
	close(fd);
	return 0;
}

/*
 * Open in's trace.  A .pftrace's events lack what the JSON exporter
 * derives (flows, scopes, track names) and merge copies events as they
 * are: it is converted to JSON first, beside the output (its model held
 * in memory meanwhile), and that copy read, unlinked once open.
 */
static int open_input(struct merge *m, struct input *in)
{
	char tmp[PATH_MAX], err[600];
	struct stat st;
	int ret;

	/* a pipe's first bytes would be gone once its type is seen, a FIFO's writer too */
	if (stat(in->path, &st)) {
		fprintf(stderr, "gpubpf: %s: cannot open: %s\n", in->path, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "gpubpf: %s: not a regular file (merge reads each input more "
			"than once: save it to a file first)\n", in->path);
		return -EINVAL;
	}
	if (!trace_reader_is_pftrace(in->path)) {
		if (trace_reader_open(&in->r, in->path) < 0) {
			fprintf(stderr, "gpubpf: %s\n", trace_reader_errmsg(&in->r));
			return -EINVAL;
		}
		return 0;
	}
	if (merge_temp_json(m->o->output, tmp, sizeof(tmp)))
		return -EINVAL;
	ret = export_convert(in->path, &(struct export_opts){ 0 }, MODEL_PART_MEMORY, 0, tmp, err,
			     sizeof(err));
	if (ret)
		fprintf(stderr, "gpubpf: %s\n", err);
	else if (trace_reader_open(&in->r, tmp) < 0)
		fprintf(stderr, "gpubpf: %s\n", trace_reader_errmsg(&in->r));
	unlink(tmp);
	return ret || trace_reader_errmsg(&in->r)[0] ? -EINVAL : 0;
}

int merge_open_inputs(struct merge *m)
{
	long maj0 = 0, min0 = 0;

	for (int i = 0; i < m->nin; i++) {
		struct input *in = &m->in[i];
		long maj, min;

		if (open_input(m, in))
			return -EINVAL;
		if (major_minor(in->r.version, &maj, &min)) {
			fprintf(stderr, "gpubpf: %s: unknown gpubpf version '%s'\n",
				in->path, in->r.version);
			return -EINVAL;
		}
		if (i == 0) {
			maj0 = maj;
			min0 = min;
		} else if (maj != maj0 || min != min0) {
			fprintf(stderr,
				"gpubpf: %s: recorded by gpubpf %s, but %s by %s (major.minor differ: record every host with one version)\n",
				in->path, in->r.version, m->in[0].path, m->in[0].r.version);
			return -EINVAL;
		}
		if (__builtin_sub_overflow(in->r.realtime_offset_ns, m->in[0].r.realtime_offset_ns,
					   &in->clock_shift_ns) ||
		    in->clock_shift_ns < -MAX_SHIFT_NS || in->clock_shift_ns > MAX_SHIFT_NS) {
			fprintf(stderr, "gpubpf: %s: realtime_offset_ns %" PRId64 " is too far from %s's (%" PRId64 ")\n",
				in->path, in->r.realtime_offset_ns, m->in[0].path,
				m->in[0].r.realtime_offset_ns);
			return -EINVAL;
		}
		in->shift_ns = in->clock_shift_ns;
	}
	make_labels(m);
	m->next_big = m->nin * PID_STRIDE;
	return 0;
}

int merge_align_pass(struct merge *m)
{
	struct align_names names = {};
	struct align_set *sets;
	bool reported = false;
	int ret = 0, err = 0;

	sets = calloc(m->nin, sizeof(*sets));
	if (!sets)
		return -ENOMEM;
	for (int i = 0; i < m->nin && !ret; i++) {
		struct input *in = &m->in[i];
		struct tr_event *ev;

		while ((ret = trace_reader_next(&in->r, &ev)) > 0) {
			int n = ev->key[TRK_NAME];
			uint32_t id;

			if (ev->has_ts && ev->has_dur && n >= 0 &&
			    tr_event_str_is(ev, ev->key[TRK_CAT], "nccl") &&
			    tr_event_str_is(ev, ev->key[TRK_PH], "X")) {
				const struct tr_span *v = &ev->m[n].val;
				int64_t end;

				if (shift_ts(ev->ts_ns, ev->dur_ns, &end) ||
				    shift_ts(end, in->clock_shift_ns, &end)) {
					fprintf(stderr, "gpubpf: %s: the end of the event at line %llu is out of range once moved to %s's clock\n",
						in->path, (unsigned long long)ev->line, m->in[0].label);
					free(ev);
					ret = -EINVAL;
					reported = true;
					break;
				}
				err = align_intern(&names, ev->text + v->off, v->len, &id) ?:
				      align_add(&sets[i], id, end);
			}
			free(ev);
			if (err) {
				ret = err;
				break;
			}
		}
		if (reported)
			break;
		if (ret == 0)
			ret = trace_reader_rewind(&in->r);
		if (ret < 0 && ret != -ENOMEM)
			fprintf(stderr, "gpubpf: %s\n", trace_reader_errmsg(&in->r));
	}
	for (int i = 1; i < m->nin && !ret; i++)
		ret = align_estimate(&sets[0], &sets[i], &m->in[i].align);
	if (!ret && !sets[0].n)
		fprintf(stderr, "gpubpf: %s: no NCCL kernels (cat \"nccl\") in the reference trace, clocks not refined\n",
			m->in[0].label);
	for (int i = 1; i < m->nin && !ret; i++) {
		struct input *in = &m->in[i];

		if (!in->align.matched) {
			if (sets[0].n)
				fprintf(stderr, "gpubpf: %s: no NCCL kernels to match with %s, clock not refined\n",
					in->label, m->in[0].label);
			continue;
		}
		in->shift_ns -= in->align.skew_ns;
		if (!m->o->quiet)
			fprintf(stderr, "gpubpf: %s: clock skew %+.3f us against %s (%" PRIu64
				" NCCL kernels matched, spread %.3f us), removed\n",
				in->label, in->align.skew_ns / 1e3, m->in[0].label,
				in->align.matched, in->align.spread_ns / 1e3);
	}
	if (!ret)
		m->in[0].align.matched = sets[0].n;
	for (int i = 0; i < m->nin; i++)
		align_set_release(&sets[i]);
	free(sets);
	align_names_release(&names);
	if (ret == -ENOMEM)
		fprintf(stderr, "gpubpf: out of memory\n");
	return ret;
}

int merge_rebase(struct merge *m)
{
	int64_t lo = 0, b;
	int first = 0;

	m->realtime_offset_ns = m->in[0].r.realtime_offset_ns;
	for (int i = 0; i < m->nin; i++)
		if (!shift_ts(m->in[i].r.ts_base_ns, m->in[i].shift_ns, &b) && b < lo) {
			lo = b;
			first = i;
		}
	if (!lo)
		return 0;
	/* whole seconds: the merged ts_base_ns stays one (merge_header.c) */
	m->clock_added_ns = -lo + (1000000000 - -lo % 1000000000) % 1000000000;
	if (__builtin_sub_overflow(m->in[0].r.realtime_offset_ns, m->clock_added_ns,
				   &m->realtime_offset_ns)) {
		fprintf(stderr, "gpubpf: %s: realtime_offset_ns %" PRId64 " is out of range\n",
			m->in[0].path, m->in[0].r.realtime_offset_ns);
		return -EINVAL;
	}
	/* |shift| <= 2^62 and clock_added_ns <= 2^61 + 1 s: no overflow */
	for (int i = 0; i < m->nin; i++)
		m->in[i].shift_ns += m->clock_added_ns;
	m->earliest = first;
	return 0;
}
