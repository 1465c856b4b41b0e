// SPDX-License-Identifier: BSD-2-Clause
/* Clock refinement from collective kernels: see merge_align.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "merge/merge_align.h"

#define TIE_NS 1000     /* spreads this close count as equal */

int align_intern(struct align_names *t, const char *name, size_t len, uint32_t *id)
{
	size_t lcap = t->cap;

	for (size_t i = 0; i < t->n; i++)
		if (t->len[i] == len && !memcmp(t->s[i], name, len)) {
			*id = i;
			return 0;
		}
	/* len first: t->cap, which counts for both, moves when s grows */
	if (array_grow(&t->len, &lcap, t->n + 1) || array_grow(&t->s, &t->cap, t->n + 1))
		return -ENOMEM;
	t->s[t->n] = malloc(len + 1);
	if (!t->s[t->n])
		return -ENOMEM;
	memcpy(t->s[t->n], name, len);
	t->s[t->n][len] = '\0';
	t->len[t->n] = len;
	*id = t->n++;
	return 0;
}

void align_names_release(struct align_names *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
	memset(t, 0, sizeof(*t));
}

int align_add(struct align_set *s, uint32_t name, int64_t end_ns)
{
	if (array_grow(&s->v, &s->cap, s->n + 1))
		return -ENOMEM;
	s->v[s->n].name = name;
	s->v[s->n].end_ns = end_ns;
	s->n++;
	return 0;
}

void align_set_release(struct align_set *s)
{
	if (!s)
		return;
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int cmp_end(const void *a, const void *b)
{
	const struct align_end *x = a, *y = b;

	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

/* Median of v[0..n) (sorts v); n > 0. */
static int64_t median(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	if (n % 2)
		return v[n / 2];
	return v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

/* Median absolute deviation of v[0..n) from m; tmp holds n values. */
static int64_t mad(const int64_t *v, size_t n, int64_t m, int64_t *tmp)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = abs64(v[i] - m);
	return median(tmp, n);
}

/*
 * Differences host - ref of one name's ends (a: ref, b: host, both
 * sorted) at the best lag, appended to pool.
 */
static void match_name(const struct align_end *a, size_t na,
		       const struct align_end *b, size_t nb,
		       int64_t *pool, size_t *npool, int64_t *d, int64_t *tmp)
{
	size_t minn = na < nb ? na : nb, need = minn > 1 ? (minn + 1) / 2 : 1;
	int64_t best_spread = 0, best_med = 0;
	int best_lag = 0;
	bool found = false;

	for (int lag = -ALIGN_MAX_LAG; lag <= ALIGN_MAX_LAG; lag++) {
		size_t n = 0;
		int64_t med, spread;

		for (size_t k = 0; k < na; k++) {
			long j = (long)k + lag;

			if (j >= 0 && (size_t)j < nb)
				d[n++] = b[j].end_ns - a[k].end_ns;
		}
		if (n < need)
			continue;
		med = median(d, n);
		spread = mad(d, n, med, tmp);
		if (!found || spread < best_spread - TIE_NS ||
		    (spread <= best_spread + TIE_NS && abs64(med) < abs64(best_med))) {
			found = true;
			best_spread = spread;
			best_med = med;
			best_lag = lag;
		}
	}
	if (!found)
		return;
	for (size_t k = 0; k < na; k++) {
		long j = (long)k + best_lag;

		if (j >= 0 && (size_t)j < nb)
			pool[(*npool)++] = b[j].end_ns - a[k].end_ns;
	}
}

int align_estimate(struct align_set *ref, struct align_set *host,
		   struct align_result *res)
{
	size_t max = ref->n > host->n ? ref->n : host->n, npool = 0;
	int64_t *pool = NULL, *d = NULL, *tmp = NULL;
	size_t i = 0, j = 0;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	if (!ref->n || !host->n)
		return 0;
	qsort(ref->v, ref->n, sizeof(*ref->v), cmp_end);
	qsort(host->v, host->n, sizeof(*host->v), cmp_end);
	pool = malloc(max * sizeof(*pool));
	d = malloc(max * sizeof(*d));
	tmp = malloc(max * sizeof(*tmp));
	if (!pool || !d || !tmp) {
		ret = -ENOMEM;
		goto cleanup;
	}
	while (i < ref->n && j < host->n) {
		uint32_t name = ref->v[i].name;
		size_t i2 = i, j2;

		if (host->v[j].name < name) {
			j++;
			continue;
		}
		while (i2 < ref->n && ref->v[i2].name == name)
			i2++;
		j2 = j;
		while (j2 < host->n && host->v[j2].name == name)
			j2++;
		if (j2 > j)
			match_name(ref->v + i, i2 - i, host->v + j, j2 - j,
				   pool, &npool, d, tmp);
		i = i2;
		j = j2;
	}
	if (npool) {
		res->matched = npool;
		res->skew_ns = median(pool, npool);
		res->spread_ns = mad(pool, npool, res->skew_ns, tmp);
	}
cleanup:
	free(pool);
	free(d);
	free(tmp);
	return ret;
}
