// SPDX-License-Identifier: BSD-2-Clause
/*
 * The memory picture (--memory-svg): time on x, device address space on
 * y, each allocation a block from its alloc to its free (or the end of
 * the trace), coloured by call site (its innermost user Python frame, or
 * the call's name without stacks), the peak marked, a legend of the call
 * sites that allocated most.
 *
 * The address axis is compressed: allocations are merged into segments
 * of overlapping address ranges (a reused address joins its segment),
 * segments are stacked in address order with a small gap, each as tall as
 * its share of the bytes but at least MIN_SEG pixels, so small blocks
 * stay visible beside large ones and the empty address space between
 * segments takes no room.  VMM allocations (cuMemCreate: a handle, no
 * address) are segments of their own.  The process drawn is the one with
 * the highest peak.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/memory.h"
#include "report/report.h"

#define W 1000.0        /* plot area */
#define H 520.0
#define X0 90.0
#define Y0 40.0
#define MIN_SEG 4.0
#define SEG_GAP 2.0
#define MAX_RECTS 200000
#define LEGEND 10

struct seg {
	uint64_t lo, hi;
	double y, h;
};

static int cmp_key(const void *a, const void *b)
{
	const struct mem_block *x = *(struct mem_block *const *)a, *y = *(struct mem_block *const *)b;

	return (x->key > y->key) - (x->key < y->key);
}

static uint32_t tag(const struct mem_block *b)
{
	return b->site ? b->site : b->name;
}

static unsigned hue(uint32_t id, const struct rt_table *t)
{
	const char *s = rt_str(t, id);
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % 360;
}

static void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

struct legend {
	uint32_t tag;
	uint64_t bytes, count;
};

static int cmp_legend(const void *a, const void *b)
{
	const struct legend *x = a, *y = b;

	return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

static int draw(const struct rt_table *t, const struct rep_proc *rp, const struct mem_tracker *mt,
		FILE *f)
{
	size_t n = mt->nblocks, nseg = 0, nleg = 0;
	const struct mem_block **ord = malloc((n + 1) * sizeof(*ord));
	struct seg *seg = malloc((n + 1) * sizeof(*seg));
	struct legend *leg = calloc(n + 1, sizeof(*leg));
	size_t *segof = malloc((n + 1) * sizeof(*segof));
	int64_t t0 = mt->blocks[0].t_alloc, t1 = t->t_last;
	uint64_t total = 0;
	double y, scale, plot_h;
	char b1[32];

	if (!ord || !seg || !leg || !segof) {
		free(ord);
		free(seg);
		free(leg);
		free(segof);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		ord[i] = &mt->blocks[i];
	qsort(ord, n, sizeof(*ord), cmp_key);
	for (size_t i = 0; i < n; i++) {
		uint64_t lo = ord[i]->key, hi = lo + (ord[i]->bytes ? ord[i]->bytes : 1);

		if (nseg && lo < seg[nseg - 1].hi && !((lo ^ seg[nseg - 1].lo) & RT_MEM_HANDLE)) {
			if (hi > seg[nseg - 1].hi)
				seg[nseg - 1].hi = hi;
		} else {
			seg[nseg++] = (struct seg){ lo, hi, 0, 0 };
		}
		if (ord[i]->t_alloc < t0)
			t0 = ord[i]->t_alloc;
	}
	for (size_t s = 0; s < nseg; s++)
		total += seg[s].hi - seg[s].lo;
	/* heights: share of the bytes, at least MIN_SEG; scaled to fit H */
	plot_h = H - SEG_GAP * (nseg - 1);
	if (plot_h < H / 2)
		plot_h = H / 2;
	scale = 1;
	for (int pass = 0; pass < 2; pass++) {
		double sum = 0;

		for (size_t s = 0; s < nseg; s++) {
			double h = plot_h * (double)(seg[s].hi - seg[s].lo) / total * scale;

			seg[s].h = h < MIN_SEG ? MIN_SEG : h;
			sum += seg[s].h;
		}
		if (sum > plot_h)
			scale *= (plot_h - (sum - plot_h > plot_h ? 0 : 0)) / sum;
	}
	/* segments from the bottom (low addresses) up */
	y = Y0 + H;
	for (size_t s = 0; s < nseg; s++) {
		seg[s].y = y - seg[s].h;
		y = seg[s].y - SEG_GAP;
		if (y < Y0)
			y = Y0;
	}
	if (t1 <= t0)
		t1 = t0 + 1;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", X0 + W + 20,
		Y0 + H + 60 + 18.0 * (LEGEND + 1));
	fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\">device memory of process %u (",
		X0, rp->pid);
	esc(f, rp->name ? rt_str(t, rp->name) : "?");
	fprintf(f, "): %" PRIu64 " allocations, peak %.2f MiB</text>\n", mt->allocs,
		mt->peak / 1048576.0);
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#f6f6f6\" "
		"stroke=\"#999\"/>\n", X0, Y0, W, H);
	/* blocks */
	for (size_t i = 0, s = 0, drawn = 0; i < n && drawn < MAX_RECTS; i++) {
		const struct mem_block *b = ord[i];
		int64_t e = b->t_free >= 0 ? b->t_free : t1;
		double x, w, by, bh;

		while (s + 1 < nseg && b->key >= seg[s + 1].lo &&
		       !((b->key ^ seg[s + 1].lo) & RT_MEM_HANDLE))
			s++;
		if (b->key >= seg[s].lo && (b->key ^ seg[s].lo) & RT_MEM_HANDLE && s + 1 < nseg)
			s++;
		x = X0 + W * (b->t_alloc - t0) / (double)(t1 - t0);
		w = W * (e - b->t_alloc) / (double)(t1 - t0);
		bh = seg[s].h * (double)(b->bytes ? b->bytes : 1) / (seg[s].hi - seg[s].lo);
		by = seg[s].y + seg[s].h - seg[s].h * (double)(b->key - seg[s].lo) /
			(seg[s].hi - seg[s].lo) - bh;
		if (w < 0.5)
			w = 0.5;
		if (bh < 1)
			bh = 1;
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
			"fill=\"hsl(%u,65%%,55%%)\" stroke=\"hsl(%u,65%%,35%%)\" stroke-width=\"0.3\">"
			"<title>", x, by, w, bh, hue(tag(b), t), hue(tag(b), t));
		esc(f, rt_str(t, tag(b)));
		fprintf(f, ": %" PRIu64 " bytes at 0x%" PRIx64 ", +%.3f ms to +%.3f ms</title></rect>\n",
			b->bytes, (uint64_t)(b->key & ~RT_MEM_HANDLE), (b->t_alloc - t->t_first) / 1e6,
			(e - t->t_first) / 1e6);
		drawn++;
	}
	/* peak */
	{
		double px = X0 + W * (mt->peak_ts - t0) / (double)(t1 - t0);

		fprintf(f, "<line x1=\"%.2f\" y1=\"%.0f\" x2=\"%.2f\" y2=\"%.0f\" stroke=\"red\" "
			"stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n", px, Y0 - 4, px, Y0 + H);
		fprintf(f, "<text x=\"%.2f\" y=\"%.0f\" fill=\"red\" text-anchor=\"%s\">peak %.2f MiB "
			"at +%.3f ms: ", px + (px > X0 + W / 2 ? -4 : 4), Y0 + 14,
			px > X0 + W / 2 ? "end" : "start", mt->peak / 1048576.0,
			(mt->peak_ts - t->t_first) / 1e6);
		esc(f, rt_str(t, tag(&mt->blocks[mt->peak_block])));
		fprintf(f, "</text>\n");
	}
	/* axes */
	for (int k = 0; k <= 5; k++) {
		double x = X0 + W * k / 5;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#999\"/>"
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">+%.1f ms</text>\n", x, Y0 + H,
			x, Y0 + H + 5, x, Y0 + H + 19, ((t0 - t->t_first) + (t1 - t0) * k / 5.0) / 1e6);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">time (from the trace start)</text>\n",
		X0 + W / 2, Y0 + H + 36);
	fprintf(f, "<text transform=\"translate(20 %.0f) rotate(-90)\" text-anchor=\"middle\">"
		"address (%zu segments, compressed; low at the bottom)</text>\n", Y0 + H / 2, nseg);
	(void)b1;
	/* legend: call sites by bytes allocated */
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < nleg && leg[k].tag != tag(&mt->blocks[i]); k++)
			;
		if (k == nleg)
			leg[nleg++].tag = tag(&mt->blocks[i]);
		leg[k].bytes += mt->blocks[i].bytes;
		leg[k].count++;
	}
	qsort(leg, nleg, sizeof(*leg), cmp_legend);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">call sites by bytes allocated%s</text>\n",
		X0, Y0 + H + 62, t->nstacks ? "" : " (no Python stacks in the trace: by driver call)");
	for (size_t k = 0; k < nleg && k < LEGEND; k++) {
		double ly = Y0 + H + 66 + 18.0 * k;

		fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"hsl(%u,65%%,55%%)\"/>"
			"<text x=\"%.0f\" y=\"%.0f\">", X0, ly + 2, hue(leg[k].tag, t), X0 + 18, ly + 12);
		esc(f, rt_str(t, leg[k].tag));
		fprintf(f, ": %" PRIu64 " allocations, %.2f MiB</text>\n", leg[k].count,
			leg[k].bytes / 1048576.0);
	}
	fprintf(f, "</svg>\n");
	free(ord);
	free(seg);
	free(leg);
	free(segof);
	return ferror(f) ? -EIO : 0;
}

int report_svg(const struct rt_table *t, const struct report *r, FILE *f)
{
	struct mem_tracker mt;
	size_t best = SIZE_MAX;
	uint32_t device = 0;
	uint64_t peak = 0;
	int ret;

	/* the (process, device) with the highest peak */
	for (size_t p = 0; p < r->nprocs; p++)
		for (size_t k = 0; k < r->procs[p].nmem; k++)
			if (best == SIZE_MAX || r->procs[p].mem[k].peak_bytes > peak) {
				best = p;
				device = r->procs[p].mem[k].device;
				peak = r->procs[p].mem[k].peak_bytes;
			}
	if (best == SIZE_MAX) {
		fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"60\" "
			"font-family=\"sans-serif\"><text x=\"10\" y=\"30\">no device memory allocations "
			"in this trace</text></svg>\n");
		return ferror(f) ? -EIO : 0;
	}
	ret = report_mem_track(t, best, device, &mt);
	if (!ret)
		ret = draw(t, &r->procs[best], &mt, f);
	mem_tracker_release(&mt);
	return ret;
}
