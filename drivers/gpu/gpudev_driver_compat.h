/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_GPUDEV_DRIVER_COMPAT_H
#define DROCE_GPUDEV_DRIVER_COMPAT_H

/*
 * gpudev's driver side. DPDK installs gpudev_driver.h only when built with
 * the driver SDK; Debian's 22.11 is not. Then droce declares the 22.11
 * layouts here (reference/gpudev-22.11.md), checks them against the sizes
 * and offsets measured there, and refuses any other DPDK version: a
 * mismatch would corrupt gpudev's device array.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <rte_common.h>
#include <rte_dev.h>
#include <rte_gpudev.h>
#include <rte_version.h>

#ifdef DROCE_HAVE_GPUDEV_DRIVER_H
#include <gpudev_driver.h>
#else

#if RTE_VERSION < RTE_VERSION_NUM(22, 11, 0, 0) || \
	RTE_VERSION >= RTE_VERSION_NUM(22, 12, 0, 0)
#error "droce declares gpudev's driver structures as DPDK 22.11 lays them out, and this DPDK is another version. Use DPDK 22.11, or a DPDK built with -Denable_driver_sdk=true so that its gpudev_driver.h is installed."
#endif

enum rte_gpu_state {
	RTE_GPU_STATE_UNUSED,
	RTE_GPU_STATE_INITIALIZED,
};

struct rte_gpu;
typedef int (rte_gpu_close_t)(struct rte_gpu *dev);
typedef int (rte_gpu_info_get_t)(struct rte_gpu *dev, struct rte_gpu_info *info);
typedef int (rte_gpu_mem_alloc_t)(struct rte_gpu *dev, size_t size,
				  unsigned int align, void **ptr);
typedef int (rte_gpu_mem_free_t)(struct rte_gpu *dev, void *ptr);
typedef int (rte_gpu_mem_register_t)(struct rte_gpu *dev, size_t size, void *ptr);
typedef int (rte_gpu_mem_unregister_t)(struct rte_gpu *dev, void *ptr);
typedef int (rte_gpu_mem_cpu_map_t)(struct rte_gpu *dev, size_t size,
				    void *ptr_in, void **ptr_out);
typedef int (rte_gpu_mem_cpu_unmap_t)(struct rte_gpu *dev, void *ptr);
typedef int (rte_gpu_wmb_t)(struct rte_gpu *dev);

struct rte_gpu_ops {
	rte_gpu_info_get_t *dev_info_get;
	rte_gpu_close_t *dev_close;
	rte_gpu_mem_alloc_t *mem_alloc;
	rte_gpu_mem_free_t *mem_free;
	rte_gpu_mem_register_t *mem_register;
	rte_gpu_mem_unregister_t *mem_unregister;
	rte_gpu_mem_cpu_map_t *mem_cpu_map;
	rte_gpu_mem_cpu_unmap_t *mem_cpu_unmap;
	rte_gpu_wmb_t *wmb;
};

struct rte_gpu_mpshared {
	char name[RTE_DEV_NAME_MAX_LEN];
	void *dev_private;
	struct rte_gpu_info info;
	uint16_t process_refcnt;
};

struct rte_gpu_callback;

struct rte_gpu {
	struct rte_device *device;
	struct rte_gpu_mpshared *mpshared;
	struct rte_gpu_ops ops;
	TAILQ_HEAD(rte_gpu_callback_list, rte_gpu_callback) callbacks;
	enum rte_gpu_state process_state;
	void *process_private;
} __rte_cache_aligned;

/* The INTERNAL-versioned entry points librte_gpudev.so.23 exports. */
struct rte_gpu *rte_gpu_get_by_name(const char *name);
struct rte_gpu *rte_gpu_allocate(const char *name);
struct rte_gpu *rte_gpu_attach(const char *name);
void rte_gpu_complete_new(struct rte_gpu *dev);
int rte_gpu_release(struct rte_gpu *dev);
void rte_gpu_notify(struct rte_gpu *dev, enum rte_gpu_event event);

#endif /* DROCE_HAVE_GPUDEV_DRIVER_H */

/* The x86-64 layout of 22.11, as measured with gcc. */
#if defined(RTE_ARCH_X86_64) && RTE_VERSION < RTE_VERSION_NUM(22, 12, 0, 0)
_Static_assert(sizeof(struct rte_gpu_info) == 48, "rte_gpu_info: not the 22.11 layout");
_Static_assert(sizeof(struct rte_gpu_ops) == 9 * sizeof(void *),
	       "rte_gpu_ops: not the 22.11 layout");
_Static_assert(sizeof(struct rte_gpu_mpshared) == 128,
	       "rte_gpu_mpshared: not the 22.11 layout");
_Static_assert(offsetof(struct rte_gpu_mpshared, info) == 72,
	       "rte_gpu_mpshared.info: not the 22.11 layout");
_Static_assert(offsetof(struct rte_gpu_mpshared, process_refcnt) == 120,
	       "rte_gpu_mpshared.process_refcnt: not the 22.11 layout");
_Static_assert(sizeof(struct rte_gpu) == 128, "rte_gpu: not the 22.11 layout");
_Static_assert(offsetof(struct rte_gpu, ops) == 16, "rte_gpu.ops: not the 22.11 layout");
_Static_assert(offsetof(struct rte_gpu, callbacks) == 88,
	       "rte_gpu.callbacks: not the 22.11 layout");
_Static_assert(offsetof(struct rte_gpu, process_state) == 104,
	       "rte_gpu.process_state: not the 22.11 layout");
_Static_assert(offsetof(struct rte_gpu, process_private) == 112,
	       "rte_gpu.process_private: not the 22.11 layout");
#endif

#endif /* DROCE_GPUDEV_DRIVER_COMPAT_H */
