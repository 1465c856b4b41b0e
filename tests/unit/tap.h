/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A tiny TAP producer for the C unit tests (one test program per file):
 *
 *	ok(cond, "what %d", n);
 *	is_int(got, want, "what");
 *	is_str(got, want, "what");      NULL-safe
 *	return done_testing();          prints the plan, 0 if all passed
 */
#ifndef GPUBPF_TAP_H
#define GPUBPF_TAP_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int tap_count, tap_failed;

static void tap_vresult(int pass, const char *file, int line,
			const char *fmt, va_list ap)
{
	tap_count++;
	if (!pass)
		tap_failed++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	vprintf(fmt, ap);
	printf("\n");
	if (!pass)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
}

static __attribute__((format(printf, 4, 5), unused))
int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(pass, file, line, fmt, ap);
	va_end(ap);
	return pass;
}

static __attribute__((format(printf, 5, 6), unused))
int tap_is_int(long long got, long long want, const char *file, int line,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(got == want, file, line, fmt, ap);
	va_end(ap);
	if (got != want)
		printf("#   got: %lld\n#   expected: %lld\n", got, want);
	return got == want;
}

static __attribute__((format(printf, 5, 6), unused))
int tap_is_str(const char *got, const char *want, const char *file, int line,
	       const char *fmt, ...)
{
	int pass = got && want ? !strcmp(got, want) : got == want;
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(pass, file, line, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got: '%s'\n#   expected: '%s'\n",
		       got ? got : "(null)", want ? want : "(null)");
	return pass;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...) \
	tap_is_int((long long)(got), (long long)(want), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) \
	tap_is_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))

static __attribute__((unused)) int done_testing(void)
{
	printf("1..%d\n", tap_count);
	if (tap_failed)
		printf("# failed %d of %d\n", tap_failed, tap_count);
	return tap_failed ? 1 : 0;
}

#endif
