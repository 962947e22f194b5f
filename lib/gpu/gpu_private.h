/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_GPU_PRIVATE_H
#define DROCE_GPU_PRIVATE_H

#include <rte_gpudev.h>
#include <rte_log.h>

#include "droce_gpu.h"

#define GPU_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_gpu_logtype, \
		"droce.gpu: " fmt "\n", ##__VA_ARGS__)

/* The engine registered for @dev_id's driver, or NULL (the CPU engine). */
const struct droce_gather_engine *gpu_engine_for(int16_t dev_id);

/* CPU reference engine (gather_cpu.c). */
unsigned int gather_cpu_step(const struct droce_gather_job *job,
			     uint32_t *next_item);
void *gather_cpu_thread_start(const struct droce_gather_job *job, char *err,
			      size_t errlen);
void gather_cpu_thread_stop(void *handle);

/* Streaming copies (copy_stream.c). A copier of whole 64-byte lines to a
 * line-aligned destination with non-temporal stores.
 */
typedef void gpu_copy_lines_t(uint8_t *dst, const uint8_t *src, size_t lines);

/* The line copier for this CPU and the EAL's SIMD bitwidth, or NULL where
 * the CPU has no streaming stores droce uses.
 */
gpu_copy_lines_t *gpu_copy_lines_select(void);

/* @p len bytes to @p dst: its whole lines by @p lines, a line's part at
 * either end through the cache. Fence (rte_wmb) before announcing them.
 */
void gpu_copy_streaming(gpu_copy_lines_t *lines, uint8_t *dst, const uint8_t *src,
			size_t len);

#endif /* DROCE_GPU_PRIVATE_H */
