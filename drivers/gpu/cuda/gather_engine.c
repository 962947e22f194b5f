/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Starting and stopping the persistent gather kernel. Its image is built
 * with nvcc and embedded; it is loaded with cuModuleLoadData on the
 * device's primary context and launched on a stream of its own.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "cuda_api.h"

#ifdef DROCE_HAVE_GATHER_KERNEL
#include "gather_kernel_image.h"
#endif

const struct cuda_api *cuda_driver_api(void);
int cuda_use_device(int16_t dev_id);

#define THREADS_PER_BLOCK 256
#define MAX_BLOCKS 32

struct cuda_engine {
	struct droce_gather_job job;
	CUmodule mod;
	CUfunction fn;
	CUstream stream;
	uint64_t dst_size;
};

/* The most blocks that divide the ring: each block keeps its own items. */
static unsigned int
blocks_for(uint32_t nb_items)
{
	for (unsigned int g = MAX_BLOCKS; g > 1; g--)
		if (nb_items % g == 0)
			return g;
	return 1;
}

static void *
cuda_gather_start(const struct droce_gather_job *job, char *err, size_t errlen)
{
#ifdef DROCE_HAVE_GATHER_KERNEL
	const struct cuda_api *api = cuda_driver_api();
	struct cuda_engine *e = calloc(1, sizeof(*e));
	void *params[6];
	CUresult r;

	if (e == NULL || cuda_use_device(job->dev_id) != 0) {
		snprintf(err, errlen, "gather: CUDA device of gpudev %d unusable", job->dev_id);
		free(e);
		return NULL;
	}
	e->job = *job;
	e->dst_size = job->dst_size;
	r = api->ModuleLoadData(&e->mod, droce_gather_kernel_image);
	if (r == CUDA_SUCCESS)
		r = api->ModuleGetFunction(&e->fn, e->mod, "droce_gather");
	if (r == CUDA_SUCCESS)
		r = api->StreamCreate(&e->stream, CU_STREAM_NON_BLOCKING);
	if (r == CUDA_SUCCESS) {
		params[0] = &e->job.list;
		params[1] = &e->job.nb_items;
		params[2] = &e->job.dst_off;
		params[3] = &e->job.dst;
		params[4] = &e->dst_size;
		params[5] = &e->job.quit;
		r = api->LaunchKernel(e->fn, blocks_for(job->nb_items), 1, 1,
				      THREADS_PER_BLOCK, 1, 1, 0, e->stream, params, NULL);
	}
	if (r != CUDA_SUCCESS) {
		snprintf(err, errlen, "gather: cannot start the gather kernel: %s",
			 cuda_strerror(api, r));
		if (e->stream != NULL)
			api->StreamDestroy(e->stream);
		if (e->mod != NULL)
			api->ModuleUnload(e->mod);
		free(e);
		return NULL;
	}
	return e;
#else
	(void)job;
	snprintf(err, errlen,
		 "gather on CUDA needs the gather kernel, and droce was built without nvcc");
	return NULL;
#endif
}

static void
cuda_gather_stop(void *handle)
{
	const struct cuda_api *api = cuda_driver_api();
	struct cuda_engine *e = handle;

	/* *quit is set: the kernel returns; wait for it. */
	cuda_use_device(e->job.dev_id);
	api->StreamSynchronize(e->stream);
	api->StreamDestroy(e->stream);
	api->ModuleUnload(e->mod);
	free(e);
}

const struct droce_gather_engine cuda_gather_engine = {
	.name_prefix = DROCE_GPU_CUDA_PREFIX,
	.start = cuda_gather_start,
	.stop = cuda_gather_stop,
};
