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

#endif /* DROCE_GPU_PRIVATE_H */
