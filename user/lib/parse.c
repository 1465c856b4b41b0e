// SPDX-License-Identifier: BSD-2-Clause
/* Parsing command-line values; see parse.h. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/parse.h"

int parse_duration_ns(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000ULL },
		{ "m", 60000000000ULL }, { "h", 3600000000000ULL }, { "", 1000000000ULL },
	};
	uint64_t whole = 0, frac = 0, scale = 1;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > (UINT64_MAX - (*p - '0')) / 10)
			return -EINVAL;
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (scale < 1000000000ULL) {
				frac = frac * 10 + (*p - '0');
				scale *= 10;
			}
		}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t u = units[i].ns;

		if (strcmp(p, units[i].unit))
			continue;
		__uint128_t total = (__uint128_t)whole * u + (__uint128_t)frac * u / scale;

		if (total > UINT64_MAX || !total)
			return -EINVAL;
		*ns = (uint64_t)total;
		return 0;
	}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end && !end[1]) {
		switch (toupper((unsigned char)*end)) {
		case 'K': mult = 1ULL << 10; break;
		case 'M': mult = 1ULL << 20; break;
		case 'G': mult = 1ULL << 30; break;
		default: return -EINVAL;
		}
	} else if (*end) {
		return -EINVAL;
	}
	if (!v || v > UINT64_MAX / mult)
		return -EINVAL;
	*bytes = v * mult;
	return 0;
}

int parse_pid_list(const char *s, pid_t **pids, int n)
{
	const char *p = s;

	do {
		char *end;
		long v;
		pid_t *np;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || v <= 0 || v > 0x3fffffff || (*end && *end != ','))
			return -EINVAL;
		np = realloc(*pids, (n + 1) * sizeof(*np));
		if (!np)
			return -ENOMEM;
		*pids = np;
		np[n++] = v;
		p = *end ? end + 1 : end;
	} while (*p);
	return p[-1] == ',' ? -EINVAL : n;
}
