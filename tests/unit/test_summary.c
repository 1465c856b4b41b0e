// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for record's closing lines (record/summary.c): file sizes,
 * and how to open JSON too big for a browser.
 */
#include <string.h>

#include "record/record.h"
#include "tap.h"

int main(void)
{
	char buf[512];

	record_size_text(512, buf, sizeof(buf));
	is_str(buf, "512 B", "bytes");
	record_size_text(12345678, buf, sizeof(buf));
	is_str(buf, "12.3 MB", "megabytes, one decimal");
	record_size_text(3360420732ULL, buf, sizeof(buf));
	is_str(buf, "3.4 GB", "gigabytes");
	record_open_hint("run.json", RECORD_JSON_BROWSER_MAX, buf, sizeof(buf));
	is_str(buf, "", "1 GB of JSON: opens as it is");
	record_open_hint("run.json", 3360420732ULL, buf, sizeof(buf));
	is_str(buf, "gpubpf: run.json is 3.4 GB of JSON, more than a browser opens: write "
	       ".pftrace instead (gpubpf convert run.json run.pftrace), or serve it with "
	       "trace_processor_shell --httpd run.json and open ui.perfetto.dev\n",
	       "past it: one line, how to open it");
	record_open_hint("run.pftrace", 3360420732ULL, buf, sizeof(buf));
	is_str(buf, "", "a .pftrace of any size: no hint");
	record_open_hint("run.json.gz", 3360420732ULL, buf, sizeof(buf));
	is_str(buf, "", "nor for .json.gz (its size says little of the JSON's)");
	return done_testing();
}
