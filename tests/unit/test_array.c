// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests for lib/array.c: arrays that grow by doubling. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/array.h"
#include "tap.h"

int main(void)
{
	uint64_t *v = NULL;
	char *s = NULL;
	size_t cap = 0, scap = 0;
	int bad = 0;

	is_int(array_grow(&v, &cap, 0), 0, "growing to nothing");
	ok(!v && !cap, "allocates nothing");
	is_int(array_grow(&v, &cap, 1), 0, "room for one");
	is_int(cap, 64, "starts at 64");
	for (size_t n = 0; n < 1000; n++) {
		bad += array_grow(&v, &cap, n + 1) != 0;
		v[n] = n;
	}
	is_int(bad, 0, "1000 appended");
	is_int(cap, 1024, "by doubling");
	for (size_t n = 0; n < 1000; n++)
		bad += v[n] != n;
	is_int(bad, 0, "keeping what was there");
	is_int(array_grow(&v, &cap, 5000), 0, "a jump past the double");
	is_int(cap, 8192, "doubles until it fits");
	is_int(array_grow(&v, &cap, 10), 0, "asking for less");
	is_int(cap, 8192, "shrinks nothing");
	is_int(array_grow(&s, &scap, 100), 0, "bytes");
	is_int(scap, 128, "sized by the element");
	ok(array_grow(&v, &cap, SIZE_MAX / 4) == -ENOMEM && cap == 8192, "overflow: -ENOMEM, unchanged");
	ok(array_grow(&s, &scap, SIZE_MAX) == -ENOMEM && scap == 128, "even for bytes");
	free(v);
	free(s);
	return done_testing();
}
