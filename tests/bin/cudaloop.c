// SPDX-License-Identifier: BSD-2-Clause
/*
 * cudaloop: a plain C CUDA job for late-attach tests, started without
 * CUDA_INJECTION64_PATH and recorded with `gpubpf record -p`.
 *
 *	cudaloop LIBPATH STEPS [STOPFILE]
 *
 * Each step launches 3 kernels ("step_a", "step_b" on the default stream,
 * "step_c" on a created stream, 50 us each), synchronises both streams and
 * sleeps 5 ms.  With STOPFILE, it steps on after STEPS steps until STOPFILE
 * exists (so it outlasts recordings however slow the machine).  Prints
 * "cudaloop: steps=N kernels=3N errors=E" at the end and exits 0 when no
 * call failed.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef void *CUfunction, *CUstream, *CUmodule;

int main(int argc, char **argv)
{
	CUresult (*init)(unsigned), (*getfn)(CUfunction *, CUmodule, const char *),
		(*mkstream)(CUstream *, unsigned), (*sync)(CUstream),
		(*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			  unsigned, CUstream, void **, void **);
	static const char *const names[3] = { "step_a", "step_b", "step_c" };
	static uint32_t dur_us = 50;
	void *params[] = { &dur_us }, *h;
	CUfunction f[3];
	CUstream s;
	long steps, kernels = 0, errors = 0;

	if (argc != 3 && argc != 4)
		return 2;
	steps = strtol(argv[2], NULL, 10);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 2;
	init = (CUresult (*)(unsigned))dlsym(h, "cuInit");
	getfn = (CUresult (*)(CUfunction *, CUmodule, const char *))dlsym(h, "cuModuleGetFunction");
	mkstream = (CUresult (*)(CUstream *, unsigned))dlsym(h, "cuStreamCreate");
	sync = (CUresult (*)(CUstream))dlsym(h, "cuStreamSynchronize");
	launch = (CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			       unsigned, unsigned, CUstream, void **, void **))dlsym(h, "cuLaunchKernel");
	if (!init || !getfn || !mkstream || !sync || !launch || init(0) || mkstream(&s, 0))
		return 2;
	for (int i = 0; i < 3; i++)
		if (getfn(&f[i], NULL, names[i]))
			return 2;
	for (long i = 0; i < steps || (argc == 4 && access(argv[3], F_OK)); i++) {
		struct timespec ts = { 0, 5000000 };

		for (int k = 0; k < 3; k++, kernels++)
			errors += launch(f[k], 1, 1, 1, 32, 1, 1, 0, k == 2 ? s : NULL, params, NULL) != 0;
		errors += sync(NULL) != 0;
		errors += sync(s) != 0;
		nanosleep(&ts, NULL);
	}
	printf("cudaloop: steps=%ld kernels=%ld errors=%ld\n", kernels / 3, kernels, errors);
	return errors != 0;
}
