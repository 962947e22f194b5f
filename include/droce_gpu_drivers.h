/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_GPU_DRIVERS_H
#define DROCE_GPU_DRIVERS_H

/**
 * @file
 * droce's gpudev drivers. Debian's DPDK 22.11 has gpudev but no GPU
 * driver; droce brings two, registered from application code after
 * rte_eal_init() (gpudev needs no bus):
 *
 * - host: memory from the host; the CPU mapping is the memory itself.
 *   Runs everywhere, so every GPU path is tested without a GPU.
 * - cuda: any CUDA device, through the CUDA driver API loaded at run time
 *   (dlopen of libcuda.so.1), so droce has no link-time CUDA dependency.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Name prefix of host devices ("droce_host0"). */
#define DROCE_GPU_HOST_PREFIX "droce_host"
/** Name prefix of CUDA devices ("droce_cuda0" for CUDA device 0). */
#define DROCE_GPU_CUDA_PREFIX "droce_cuda"

/** Options of a host device. */
struct droce_gpu_host_opts {
	/** Most memory it hands out; 0: half the machine's memory. */
	size_t total_memory;
	/** Refuse mem_cpu_map, like a GPU without GDRCopy (for tests). */
	bool no_cpu_map;
};

/**
 * Create a host gpudev device.
 *
 * @param name
 *   Device name; should start with DROCE_GPU_HOST_PREFIX.
 * @param opts
 *   Options, or NULL for the defaults.
 * @return
 *   The gpudev device id, or a negative errno (-EEXIST, -ENOMEM, ...).
 */
int droce_gpu_host_create(const char *name, const struct droce_gpu_host_opts *opts);

/**
 * Make a host device fail from now on, as a GPU that fell off the bus:
 * every driver call returns an error. For tests of the failure paths.
 */
int droce_gpu_host_set_failed(int16_t dev_id, bool failed);

/** True when @p dev_id is a host device that droce_gpu_host_set_failed() failed. */
bool droce_gpu_host_failed(int16_t dev_id);

/**
 * Create one gpudev device per CUDA device the CUDA driver enumerates.
 *
 * @param err
 *   Receives why there are none: no CUDA driver on this machine, or droce
 *   built without CUDA.
 * @param errlen
 *   Size of @p err.
 * @return
 *   The number of devices created (0 or more), -ENOENT when no CUDA driver
 *   loads, -ENOTSUP when droce was built without cuda.h.
 */
int droce_gpu_cuda_probe(char *err, size_t errlen);

/** True when @p dev_id is one of droce's CUDA devices. */
bool droce_gpu_is_cuda(int16_t dev_id);

/**
 * Copy from GPU memory to host memory (cuMemcpyDtoH), to check what the
 * placement wrote. -ENOTSUP for a device that is not CUDA.
 */
int droce_gpu_cuda_dtoh(int16_t dev_id, void *dst, const void *gpu_src, size_t len);

/** Copy from host memory to GPU memory (cuMemcpyHtoD). */
int droce_gpu_cuda_htod(int16_t dev_id, void *gpu_dst, const void *src, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* DROCE_GPU_DRIVERS_H */
