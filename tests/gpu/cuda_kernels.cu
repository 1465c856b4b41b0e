// SPDX-License-Identifier: BSD-2-Clause
/*
 * A CUDA program of its own for the GPU machine checks: no framework, so
 * no libcupti is in the process before gpubpf's library loads one (the
 * one GPUBPF_CUPTI_LIB names, for tests/gpu/t0980-gpu-cupti12.sh).
 *
 *	cuda_kernels LAUNCHES [SECONDS]
 *
 * Launches gpubpf_add LAUNCHES times on a stream of its own, synchronising
 * every 100 launches; with SECONDS, goes on in rounds of LAUNCHES (1 ms
 * asleep between rounds) for that long.  Then prints the launches made
 * and the libcupti it has mapped ("libcupti none" if none).
 * Built by `make gpu-carry` with the toolkit's nvcc (static cudart).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

__global__ void gpubpf_add(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] += 1.0f;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "cuda_kernels: %s: %s\n", what, cudaGetErrorString(e));
	exit(1);
}

int main(int argc, char **argv)
{
	const int n = 1 << 16;
	long launches = argc > 1 ? atol(argv[1]) : 1000, done = 0;
	double seconds = argc > 2 ? atof(argv[2]) : 0, end;
	cudaStream_t s;
	char line[4096];
	const char *cupti = "none";
	float *x;
	FILE *maps;

	check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
	check(cudaStreamCreate(&s), "cudaStreamCreate");
	end = now() + seconds;
	do {
		for (long i = 0; i < launches; i++) {
			gpubpf_add<<<n / 256, 256, 0, s>>>(x, n);
			check(cudaGetLastError(), "launch");
			if (++done % 100 == 0)
				check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
		}
		check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
		if (seconds > 0)
			usleep(1000);
	} while (now() < end);
	maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof(line), maps))
		if (strstr(line, "libcupti.so")) {
			line[strcspn(line, "\n")] = 0;
			cupti = strchr(line, '/') ? strchr(line, '/') : line;
			break;
		}
	printf("launches %ld\nlibcupti %s\n", done, cupti);
	if (maps)
		fclose(maps);
	cudaFree(x);
	return 0;
}
