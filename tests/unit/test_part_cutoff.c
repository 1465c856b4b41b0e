// SPDX-License-Identifier: BSD-2-Clause
/*
 * Where a recording in parts is cut (model_part_cutoff()) and when the
 * next part is due (model_part_next_at()), user/model/model_part.c: the
 * median of what is held, 5 s back at most and 250 ms back at least,
 * never after the earliest call in flight, unless that keeps more than
 * three quarters of the events; even then never within the last 250 ms,
 * where GPU work of the calls is still on its way.  The next part is due
 * at the budget, or once as much again as was kept came, where that is
 * more.
 */
#include <stdint.h>
#include <stdlib.h>

#include "model/model.h"
#include "model/model_part.h"
#include "tap.h"

#define MS 1000000ULL
#define NOW (100000 * MS)
#define N 1000

/* A model of N launches, the i-th at first + i * step. */
static void model_of(struct model *m, uint64_t first, uint64_t step)
{
	model_init(m);
	for (uint64_t i = 0; i < N; i++) {
		struct model_event *e = model_add_event(m);

		if (!e) {
			printf("Bail out! out of memory\n");
			exit(1);
		}
		e->kind = EV_API;
		e->ts = first + i * step;
		e->pid = 1;
		e->tid = 1;
	}
}

static uint64_t cut_of(uint64_t first, uint64_t step, uint64_t inflight)
{
	struct model m;
	uint64_t cut = 0;

	model_of(&m, first, step);
	ok(model_part_cutoff(&m, NOW, inflight, &cut) == 0, "cutoff computed");
	model_release(&m);
	return cut;
}

int main(void)
{
	struct model m;

	/* the last 10 s: the median is 5 s back, as far as the lag goes */
	is_int(cut_of(NOW - 10000 * MS, 10 * MS, UINT64_MAX), NOW - 5000 * MS,
	       "10 s held: cut 5 s back, at the median");
	/* the last 2 s: at the median, 1 s back */
	is_int(cut_of(NOW - 2000 * MS, 2 * MS, UINT64_MAX), NOW - 1000 * MS,
	       "2 s held: cut at the median, 1 s back");
	/* a call in flight since 8 s back, the last 4 s held: past it, at the first quartile */
	is_int(cut_of(NOW - 4000 * MS, 4 * MS, NOW - 8000 * MS), NOW - 3000 * MS,
	       "a call in flight long before what is held: cut past it, at the first quartile");
	/* a call in flight since 1.5 s back, the last 2 s held: at it */
	is_int(cut_of(NOW - 2000 * MS, 2 * MS, NOW - 1500 * MS), NOW - 1500 * MS,
	       "a call in flight within what is held: cut at its entry");
	/* everything within the last 100 ms: not at its quartile, but 250 ms back */
	is_int(cut_of(NOW - 100 * MS, 100 * MS / N, UINT64_MAX), NOW - 250 * MS,
	       "100 ms held: nothing cut within the last 250 ms, whatever it holds");
	is_int(cut_of(NOW - 400 * MS, 400 * MS / N, NOW - 300 * MS), NOW - 300 * MS,
	       "400 ms held, a call in flight since 300 ms back: cut at it");
	is_int(cut_of(NOW - 400 * MS, 400 * MS / N, NOW - 390 * MS), NOW - 300 * MS,
	       "a call in flight since 390 ms back: the first quartile, 300 ms back");
	is_int(cut_of(NOW - 300 * MS, 300 * MS / N, NOW - 290 * MS), NOW - 250 * MS,
	       "300 ms held, a call in flight since 290 ms back: past it, but 250 ms back at most");

	/* the next part: at the budget, or as much again as was kept */
	model_of(&m, 0, 1);
	is_int(model_part_next_at(&m, 64ULL << 20), 64ULL << 20,
	       "little kept: the next part at the budget");
	is_int(model_part_next_at(&m, 1ULL << 10), model_event_bytes(&m) * 2,
	       "more kept than half the budget: as much again");
	is_int(model_part_next_at(&m, 2 * model_event_bytes(&m)), 2 * model_event_bytes(&m),
	       "half the budget kept: the next part at the budget");
	model_release(&m);
	return done_testing();
}
