// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf merge's engine.  Each input is read one event at a time and
 * passes through a reorder window of --reorder-window events (a heap),
 * which absorbs inputs that are almost sorted; the inputs are merged by
 * timestamp through a heap of their next events, so memory does not grow
 * with the traces.  An event later than the window can fix stops the
 * merge with a message naming the file and line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "merge/merge.h"

#define KEY_META INT64_MIN              /* sort key of metadata events */

static bool slot_less(const struct slot *a, const struct slot *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static void win_push(struct input *in, struct slot s)
{
	size_t i = in->nwin++;

	while (i) {
		size_t p = (i - 1) / 2;

		if (!slot_less(&s, &in->win[p]))
			break;
		in->win[i] = in->win[p];
		i = p;
	}
	in->win[i] = s;
}

static struct slot win_pop(struct input *in)
{
	struct slot top = in->win[0], last = in->win[--in->nwin];
	size_t i = 0, n = in->nwin;

	in->win_bytes -= top.ev->len;
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && slot_less(&in->win[c + 1], &in->win[c]))
			c++;
		if (!slot_less(&in->win[c], &last))
			break;
		in->win[i] = in->win[c];
		i = c;
	}
	if (n)
		in->win[i] = last;
	return top;
}

/*
 * Read until the window is full (m->o->window events, or m->o->window_bytes of
 * their text; one event at least) or the input ends.  0 or -errno.
 */
static int refill(struct merge *m, struct input *in)
{
	while (!in->eof && in->nwin < m->o->window &&
	       (!in->nwin || in->win_bytes < m->o->window_bytes)) {
		struct tr_event *ev;
		struct slot s;
		int64_t key = 0;
		int ret = trace_reader_next(&in->r, &ev);

		if (ret < 0) {
			fprintf(stderr, "gpubpf: %s\n", trace_reader_errmsg(&in->r));
			return -EINVAL;         /* reported */
		}
		if (ret == 0) {
			in->eof = true;
			break;
		}
		s.ev = ev;
		s.seq = in->seq++;
		if (ev->has_ts && shift_ts(ev->ts_ns, in->shift_ns, &key)) {
			fprintf(stderr, "gpubpf: %s: \"ts\" of the event at line %llu is out of range once moved to %s's clock (%+.3f us)\n",
				in->path, (unsigned long long)ev->line, m->in[0].label,
				in->shift_ns / 1e3);
			free(ev);
			return -EINVAL;
		}
		if (tr_event_str_is(ev, ev->key[TRK_PH], "M")) {
			s.key = KEY_META;
		} else if (!ev->has_ts) {
			/* only metadata may go without: the rest has no place in time */
			fprintf(stderr, "gpubpf: %s: the event at line %llu has no \"ts\"\n",
				in->path, (unsigned long long)ev->line);
			free(ev);
			return -EINVAL;
		} else {
			s.key = key;
		}
		in->win_bytes += ev->len;
		win_push(in, s);
	}
	return 0;
}

/* Inputs ordered by their next event; ties go to the earlier input. */
static bool in_less(const struct merge *m, int a, int b)
{
	const struct slot *x = &m->in[a].win[0], *y = &m->in[b].win[0];

	return x->key < y->key || (x->key == y->key && a < b);
}

static void heap_down(struct merge *m, int i)
{
	int n = m->nheap, v = m->heap[i];

	for (;;) {
		int c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && in_less(m, m->heap[c + 1], m->heap[c]))
			c++;
		if (!in_less(m, m->heap[c], v))
			break;
		m->heap[i] = m->heap[c];
		i = c;
	}
	m->heap[i] = v;
}

int merge_events(struct merge *m)
{
	int ret;

	m->last_key = KEY_META;
	for (int i = 0; i < m->nin; i++) {
		m->in[i].win = calloc(m->o->window, sizeof(*m->in[i].win));
		if (!m->in[i].win)
			return -ENOMEM;
		ret = refill(m, &m->in[i]);
		if (ret)
			return ret;
		if (m->in[i].nwin)
			m->heap[m->nheap++] = i;
	}
	for (int i = m->nheap / 2 - 1; i >= 0; i--)
		heap_down(m, i);
	while (m->nheap) {
		int h = m->heap[0];
		struct input *in = &m->in[h];
		struct slot s = win_pop(in);

		if (s.key != KEY_META) {
			if (s.key < m->last_key) {
				fprintf(stderr,
					"gpubpf: %s: events out of time order beyond the reorder window (line %llu, ts %.3f us, after %.3f us); use a larger --reorder-window or --reorder-window-bytes\n",
					in->path, (unsigned long long)s.ev->line,
					s.ev->ts_ns / 1e3, ((double)m->last_key - in->shift_ns) / 1e3);
				free(s.ev);
				return -EINVAL;
			}
			m->last_key = s.key;
		}
		ret = merge_write_event(m, h, s.ev);
		free(s.ev);
		if (ret == -EOVERFLOW) {
			fprintf(stderr, "gpubpf: %s: too many distinct pids and tids to remap\n",
				in->path);
			return ret;
		}
		if (ret)
			return ret;
		ret = refill(m, in);
		if (ret)
			return ret;
		if (!in->nwin)
			m->heap[0] = m->heap[--m->nheap];
		if (m->nheap)
			heap_down(m, 0);
	}
	return 0;
}


void merge_window_release(struct input *in)
{
	while (in->win && in->nwin)
		free(win_pop(in).ev);
	free(in->win);
}
