// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for the command lines of record and merge (parsed into their
 * option structs) and for starting record's held command.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "merge/merge_opts.h"
#include "record/record_opts.h"
#include "record/spawn.h"
#include "tap.h"

/* Messages of refused options go to /dev/null while hushed. */
static int hush(void)
{
	int saved, nul = open("/dev/null", O_WRONLY);

	fflush(stderr);
	saved = dup(2);
	dup2(nul, 2);
	close(nul);
	return saved;
}

static void unhush(int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
}

static int argc_of(char **argv)
{
	int n = 0;

	while (argv[n])
		n++;
	return n;
}

static int record_parse(struct record_opts *o, char **argv)
{
	int saved = hush(), ret;

	memset(o, 0, sizeof(*o));
	ret = record_opts_parse(o, argc_of(argv), argv);
	unhush(saved);
	return ret;
}

static int merge_parse(struct merge_opts *o, char **argv)
{
	int saved = hush(), ret;

	memset(o, 0, sizeof(*o));
	ret = merge_opts_parse(o, argc_of(argv), argv);
	unhush(saved);
	return ret;
}

static void test_record_opts(void)
{
	char *pids[] = { "record", "-p", "12,34", "-d", "2s", "--stack", "python,native",
			 "--sample-rate", "8", "-q", NULL };
	char *cmd[] = { "record", "--no-device", "--stack", "none", "--", "sleep", "1", NULL };
	char *all[] = { "record", "-a", "--buffer-size", "64M", "--stack-depth", "8", NULL };
	char *two[] = { "record", "-a", "-p", "1", NULL };
	char *none[] = { "record", NULL };
	char *bad_stack[] = { "record", "-a", "--stack", "python,", NULL };
	char *bad_rate[] = { "record", "-a", "--sample-rate", "-1", NULL };
	char *bad_depth[] = { "record", "-a", "--stack-depth", "257", NULL };
	char *sched[] = { "record", "-a", "--sample-hz", "0", "--no-states", NULL };
	char *bad_hz[] = { "record", "-a", "--sample-hz", "1k", NULL };
	struct record_opts o;

	ok(!record_parse(&o, pids), "-p with values parses");
	ok(o.mode == MODE_PIDS && o.npids == 2 && o.pids[0] == 12 && o.pids[1] == 34,
	   "-p 12,34: two pids");
	ok(o.duration_ns == 2000000000ULL, "-d 2s");
	ok(o.stacks && o.native, "--stack python,native");
	ok(o.export.mem_sample_rate == 8, "--sample-rate reaches the exporter's options");
	ok(o.quiet && o.device && o.inject && o.ringbuf == 16ULL << 20 && o.stack_depth == 64,
	   "defaults kept for what was not given");
	ok(o.states && o.sample_hz == 1000, "thread states and 1000 samples/s by default");
	record_opts_release(&o);

	ok(!record_parse(&o, cmd), "-- CMD parses");
	ok(o.mode == MODE_CMD && !strcmp(o.cmd[0], "sleep") && !strcmp(o.cmd[1], "1") &&
	   !o.cmd[2], "the command and its arguments");
	ok(!o.device && !o.stacks && !o.native, "--no-device, --stack none");
	record_opts_release(&o);

	ok(!record_parse(&o, all) && o.mode == MODE_ALL && o.ringbuf == 64ULL << 20 &&
	   o.stack_depth == 8 && !o.npids, "-a, --buffer-size, --stack-depth");
	record_opts_release(&o);

	ok(record_parse(&o, two) == -EINVAL, "-a and -p together are refused");
	ok(record_parse(&o, none) == -EINVAL, "no target is refused");
	ok(record_parse(&o, bad_stack) == -EINVAL, "--stack python, is refused");
	ok(record_parse(&o, bad_rate) == -EINVAL, "--sample-rate -1 is refused");
	ok(record_parse(&o, bad_depth) == -EINVAL, "--stack-depth 257 is refused");
	ok(!record_parse(&o, sched) && !o.states && !o.sample_hz, "--sample-hz 0, --no-states");
	record_opts_release(&o);
	ok(record_parse(&o, bad_hz) == -EINVAL, "--sample-hz 1k is refused");
}

static void test_merge_opts(void)
{
	char *args[] = { "merge", "-o", "out.json", "--align-collectives", "--reorder-window",
			 "16", "--reorder-window-bytes", "1M", "-q", "a.json", "b.json", NULL };
	char *dflt[] = { "merge", "a.json", NULL };
	char *none[] = { "merge", "-q", NULL };
	char *bad[] = { "merge", "--reorder-window", "0", "a.json", NULL };
	struct merge_opts o;

	ok(!merge_parse(&o, args), "merge options parse");
	ok(!strcmp(o.output, "out.json") && o.align && o.window == 16 &&
	   o.window_bytes == 1 << 20 && o.quiet, "each option lands in the struct");
	ok(o.npaths == 2 && !strcmp(o.paths[0], "a.json") && !strcmp(o.paths[1], "b.json"),
	   "the traces, in order");
	ok(!merge_parse(&o, dflt) && o.output == o.outbuf &&
	   !strncmp(o.output, "gpubpf-merged-", 14) && o.window == 4096 &&
	   o.window_bytes == 64ULL << 20 && !o.align, "defaults");
	ok(merge_parse(&o, none) == -EINVAL, "no trace is refused");
	ok(merge_parse(&o, bad) == -EINVAL, "--reorder-window 0 is refused");
}

static void test_spawn(void)
{
	char *t[] = { "sh", "-c", "exit 3", NULL };
	char *missing[] = { "/nonexistent/gpubpf-test", NULL };
	struct spawn s;

	spawn_init(&s);
	spawn_release(&s, 1);
	ok(s.pid == 0, "nothing to release before a command");

	spawn_init(&s);
	ok(!spawn_held(&s, t, NULL) && s.pid > 0, "a command is started held");
	ok(!spawn_poll(&s) && !s.done, "it does not run before it is let go");
	ok(spawn_go(&s) == 0, "let go, it runs");
	while (!spawn_poll(&s))
		usleep(1000);
	ok(s.done && s.status == 3, "its exit status is kept");
	spawn_release(&s, 1);

	spawn_init(&s);
	ok(!spawn_held(&s, missing, NULL), "a missing command is forked");
	ok(spawn_go(&s) == ENOENT && s.pid == 0, "its failed exec says ENOENT, the child reaped");
	spawn_release(&s, 1);
}

int main(void)
{
	test_record_opts();
	test_merge_opts();
	test_spawn();
	return done_testing();
}
