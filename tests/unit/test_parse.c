// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests for command-line value parsing (user/lib/parse.c). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "lib/parse.h"
#include "tap.h"

#define SENTINEL 0xdeadbeefcafef00dULL

static void dur_ok(const char *s, uint64_t want)
{
	uint64_t ns = SENTINEL;
	int ret = parse_duration_ns(s, &ns);

	is_int(ret, 0, "duration '%s' accepted", s);
	ok(ns == want, "duration '%s' = %llu ns", s, (unsigned long long)want);
	if (ns != want)
		diag("got %llu", (unsigned long long)ns);
}

static void dur_bad(const char *s)
{
	uint64_t ns = SENTINEL;

	is_int(parse_duration_ns(s, &ns), -EINVAL, "duration '%s' rejected", s);
}

static void size_ok(const char *s, uint64_t want)
{
	uint64_t b = SENTINEL;
	int ret = parse_size(s, &b);

	is_int(ret, 0, "size '%s' accepted", s);
	ok(b == want, "size '%s' = %llu", s, (unsigned long long)want);
	if (b != want)
		diag("got %llu", (unsigned long long)b);
}

static void size_bad(const char *s)
{
	uint64_t b = SENTINEL;

	is_int(parse_size(s, &b), -EINVAL, "size '%s' rejected", s);
	ok(b == SENTINEL, "size '%s' leaves the output alone", s);
}

static void pids_bad(const char *s)
{
	pid_t *pids = malloc(sizeof(*pids));

	pids[0] = 7;
	is_int(parse_pid_list(s, &pids, 1), -EINVAL, "pid list '%s' rejected", s);
	is_int(pids[0], 7, "pid list '%s' keeps the existing entry", s);
	free(pids);
}

int main(void)
{
	pid_t *pids = NULL;
	int n;

	/* durations */
	dur_ok("500ms", 500000000ULL);
	dur_ok("10s", 10000000000ULL);
	dur_ok("2m", 120000000000ULL);
	dur_ok("1h", 3600000000000ULL);
	dur_ok("1.5s", 1500000000ULL);
	dur_ok("1.5m", 90000000000ULL);
	dur_ok("250us", 250000ULL);
	dur_ok("100ns", 100ULL);
	dur_ok("1ns", 1ULL);
	dur_ok("3", 3000000000ULL);
	dur_ok("0.001s", 1000000ULL);
	dur_ok("0.5", 500000000ULL);
	dur_ok("2.25ms", 2250000ULL);
	dur_ok("0.000000001s", 1ULL);
	/* the largest whole seconds that fit in u64 ns */
	dur_ok("18446744073s", 18446744073000000000ULL);

	dur_bad("0");
	dur_bad("0s");
	dur_bad("0.0s");
	dur_bad("0.0000000001s");   /* rounds down to 0 ns */
	dur_bad("-1s");
	dur_bad("abc");
	dur_bad("");
	dur_bad("10x");
	dur_bad("1.");
	dur_bad(".5s");
	dur_bad("s");
	dur_bad("99999999999999999999h");
	dur_bad("18446744074s");    /* whole * unit overflows */
	dur_bad("5124096h");
	/* whole * unit fits, adding the fraction overflows u64 */
	dur_bad("18446744073.9s");
	dur_bad("10 s");
	dur_bad(" 10s");
	dur_bad("10s ");
	dur_bad("10S");
	dur_bad("10sec");
	dur_bad("1e3s");
	dur_bad("+1s");

	/* sizes */
	size_ok("16M", 16ULL << 20);
	size_ok("16m", 16ULL << 20);
	size_ok("4k", 4ULL << 10);
	size_ok("4K", 4ULL << 10);
	size_ok("1G", 1ULL << 30);
	size_ok("4096", 4096);
	size_ok("1", 1);
	size_ok("17179869183G", 17179869183ULL << 30);

	size_bad("0");
	size_bad("0K");
	size_bad("-1M");
	size_bad("1T");
	size_bad("M");
	size_bad("");
	size_bad("16MB");
	size_bad("1.5M");
	size_bad(" 16M");
	size_bad("17179869184G");           /* 2^64 */
	size_bad("99999999999999999999");  /* strtoull range */

	/* pid lists */
	n = parse_pid_list("42", &pids, 0);
	is_int(n, 1, "'42' gives one pid");
	ok(pids && pids[0] == 42, "'42' -> 42");
	n = parse_pid_list("1,2,3", &pids, n);
	is_int(n, 4, "'1,2,3' appends three pids to one");
	ok(pids && pids[0] == 42 && pids[1] == 1 && pids[2] == 2 && pids[3] == 3,
	   "list is 42,1,2,3");
	n = parse_pid_list("1073741823", &pids, n);
	is_int(n, 5, "largest accepted pid appended");
	is_int(pids[4], 1073741823, "largest accepted pid value");
	free(pids);

	pids_bad("1,,2");
	pids_bad("1,");
	pids_bad(",1");
	pids_bad("abc");
	pids_bad("0");
	pids_bad("-5");
	pids_bad("1x");
	pids_bad("");
	pids_bad("1, 2");
	pids_bad("1073741824");
	pids_bad("99999999999999999999");
	return done_testing();
}
