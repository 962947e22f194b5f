/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * A gpudev device per CUDA device, through the CUDA driver API loaded at
 * run time. Devices are enumerated by the driver: no PCI id table, so any
 * CUDA GPU works (H100 and H200 included). Each device runs in its primary
 * context, made current on the calling thread by every operation.
 *
 * mem_alloc: cuMemAlloc, over-allocated to the alignment asked, with
 *   SYNC_MEMOPS set (GPUDirect RDMA writes then stay ordered);
 * mem_register: cuMemHostRegister (portable, device-mapped); droce needs
 *   unified addressing, where the device sees host memory at its address;
 * mem_cpu_map: GDRCopy when libgdrapi.so.2 loads, else not supported;
 * wmb: cuFlushGPUDirectRDMAWrites.
 * The gather engine is a persistent kernel (gather_kernel.cu).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_log.h>

#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "gpudev_driver_compat.h"
#include "cuda_api.h"

RTE_LOG_REGISTER(droce_gpu_cuda_logtype, droce.gpu.cuda, INFO);
#define CUDA_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_gpu_cuda_logtype, \
		"droce.gpu.cuda: " fmt "\n", ##__VA_ARGS__)

/* GPUDirect pins and maps GPU memory in 64 KiB pages. */
#define GPU_PAGE (1ul << 16)

/* One allocation: what cuMemAlloc returned and what the caller got. */
struct cuda_alloc {
	CUdeviceptr base;
	void *ptr;
	size_t size;
};

/* One CPU mapping through GDRCopy. */
struct cuda_map {
	void *gpu;
	void *cpu;
	void *map_va;
	size_t map_len;
	gdr_mh_t mh;
};

struct cuda_gpu {
	CUdevice cu_dev;
	CUcontext ctx;
	unsigned int nb_allocs, cap_allocs;
	struct cuda_alloc *allocs;
	unsigned int nb_maps, cap_maps;
	struct cuda_map *maps;
};

static struct cuda_api api;
static struct gdr_api gdr;
static bool gdr_tried, gdr_ok;

static struct cuda_gpu *
priv(struct rte_gpu *dev)
{
	return dev->mpshared->dev_private;
}

/* A thread's current context stays until it sets another: set it only
 * then, so that a worker's write barrier a frame makes one driver call,
 * not two.
 */
static __thread CUcontext thread_ctx;

static int
use_ctx(struct rte_gpu *dev)
{
	CUcontext ctx = priv(dev)->ctx;

	if (ctx == thread_ctx)
		return 0;
	if (api.CtxSetCurrent(ctx) != CUDA_SUCCESS)
		return -EIO;
	thread_ctx = ctx;
	return 0;
}

static int
check(struct rte_gpu *dev, CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return 0;
	CUDA_LOG(ERR, "%s: %s: %s", dev->mpshared->name, what, cuda_strerror(&api, r));
	return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}

static void *
grow(void *array, unsigned int *cap, size_t elem)
{
	unsigned int n = *cap ? *cap * 2 : 16;
	void *p = realloc(array, n * elem);

	if (p != NULL)
		*cap = n;
	return p;
}

static int
cuda_mem_alloc(struct rte_gpu *dev, size_t size, unsigned int align, void **ptr)
{
	struct cuda_gpu *g = priv(dev);
	size_t a = align != 0 ? align : 1;
	CUdeviceptr base;
	int flag = 1;
	int ret;

	if (use_ctx(dev) != 0)
		return -EIO;
	if (g->nb_allocs == g->cap_allocs) {
		void *p = grow(g->allocs, &g->cap_allocs, sizeof(*g->allocs));

		if (p == NULL)
			return -ENOMEM;
		g->allocs = p;
	}
	ret = check(dev, api.MemAlloc(&base, size + a - 1), "cuMemAlloc");
	if (ret != 0)
		return ret;
	ret = check(dev, api.PointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
						  base), "SYNC_MEMOPS");
	if (ret != 0) {
		api.MemFree(base);
		return ret;
	}
	g->allocs[g->nb_allocs].base = base;
	g->allocs[g->nb_allocs].ptr = (void *)RTE_ALIGN_CEIL((uintptr_t)base, a);
	g->allocs[g->nb_allocs].size = size;
	*ptr = g->allocs[g->nb_allocs++].ptr;
	return 0;
}

static int
cuda_mem_free(struct rte_gpu *dev, void *ptr)
{
	struct cuda_gpu *g = priv(dev);

	if (use_ctx(dev) != 0)
		return -EIO;
	for (unsigned int i = 0; i < g->nb_allocs; i++) {
		if (g->allocs[i].ptr != ptr)
			continue;
		api.MemFree(g->allocs[i].base);
		g->allocs[i] = g->allocs[--g->nb_allocs];
		return 0;
	}
	CUDA_LOG(ERR, "%s: free of %p, which it did not allocate", dev->mpshared->name, ptr);
	return -EINVAL;
}

static int
cuda_mem_register(struct rte_gpu *dev, size_t size, void *ptr)
{
	CUdeviceptr dptr;
	int ret;

	if (use_ctx(dev) != 0)
		return -EIO;
	ret = check(dev, api.MemHostRegister(ptr, size, CU_MEMHOSTREGISTER_PORTABLE |
					     CU_MEMHOSTREGISTER_DEVICEMAP),
		    "cuMemHostRegister");
	if (ret != 0)
		return ret;
	/* droce hands the GPU host addresses as they are. */
	if (api.MemHostGetDevicePointer(&dptr, ptr, 0) != CUDA_SUCCESS ||
	    (void *)dptr != ptr) {
		CUDA_LOG(ERR, "%s: registered host memory %p is not at the same address on the device (no unified addressing)",
			 dev->mpshared->name, ptr);
		api.MemHostUnregister(ptr);
		return -ENOTSUP;
	}
	return 0;
}

static int
cuda_mem_unregister(struct rte_gpu *dev, void *ptr)
{
	if (use_ctx(dev) != 0)
		return -EIO;
	return check(dev, api.MemHostUnregister(ptr), "cuMemHostUnregister");
}

static bool
gdr_ready(void)
{
	char why[256];

	if (!gdr_tried) {
		gdr_tried = true;
		gdr_ok = gdr_api_load(&gdr, why, sizeof(why));
		if (!gdr_ok)
			CUDA_LOG(NOTICE, "%s: no CPU mapping of GPU memory, so no copy placement (gather works)",
				 why);
	}
	return gdr_ok;
}

static int
cuda_mem_cpu_map(struct rte_gpu *dev, size_t size, void *ptr_in, void **ptr_out)
{
	struct cuda_gpu *g = priv(dev);
	uintptr_t start = RTE_ALIGN_FLOOR((uintptr_t)ptr_in, GPU_PAGE);
	size_t len = RTE_ALIGN_CEIL((uintptr_t)ptr_in + size, GPU_PAGE) - start;
	struct cuda_map m = { .gpu = ptr_in, .map_len = len };
	uint64_t info[16] = { 0 }; /* gdr_info_t; its first field is the GPU va */

	if (!gdr_ready())
		return -ENOTSUP;
	if (g->nb_maps == g->cap_maps) {
		void *p = grow(g->maps, &g->cap_maps, sizeof(*g->maps));

		if (p == NULL)
			return -ENOMEM;
		g->maps = p;
	}
	if (gdr.pin_buffer(gdr.g, start, len, 0, 0, &m.mh) != 0) {
		CUDA_LOG(ERR, "%s: gdr_pin_buffer of %zu bytes at %p failed",
			 dev->mpshared->name, len, (void *)start);
		return -EIO;
	}
	if (gdr.map(gdr.g, m.mh, &m.map_va, len) != 0 ||
	    gdr.get_info(gdr.g, m.mh, info) != 0) {
		CUDA_LOG(ERR, "%s: gdr_map of %zu bytes failed", dev->mpshared->name, len);
		gdr.unpin_buffer(gdr.g, m.mh);
		return -EIO;
	}
	/* The mapping starts at the pinned range's first GPU page. */
	m.cpu = (uint8_t *)m.map_va + ((uintptr_t)ptr_in - info[0]);
	g->maps[g->nb_maps++] = m;
	*ptr_out = m.cpu;
	return 0;
}

static int
cuda_mem_cpu_unmap(struct rte_gpu *dev, void *ptr)
{
	struct cuda_gpu *g = priv(dev);

	for (unsigned int i = 0; i < g->nb_maps; i++) {
		struct cuda_map *m = &g->maps[i];

		if (m->gpu != ptr)
			continue;
		gdr.unmap(gdr.g, m->mh, m->map_va, m->map_len);
		gdr.unpin_buffer(gdr.g, m->mh);
		g->maps[i] = g->maps[--g->nb_maps];
		return 0;
	}
	return -EINVAL;
}

static int
cuda_wmb(struct rte_gpu *dev)
{
	if (use_ctx(dev) != 0)
		return -EIO;
	return check(dev, api.FlushGPUDirectRDMAWrites(
			CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
			CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER),
		     "cuFlushGPUDirectRDMAWrites");
}

/* What the driver said at probe; the context is the primary context. */
static int
cuda_info_get(struct rte_gpu *dev, struct rte_gpu_info *info)
{
	*info = dev->mpshared->info;
	return 0;
}

static int
cuda_close(struct rte_gpu *dev)
{
	struct cuda_gpu *g = priv(dev);

	if (g == NULL)
		return 0;
	use_ctx(dev);
	while (g->nb_maps != 0)
		cuda_mem_cpu_unmap(dev, g->maps[0].gpu);
	for (unsigned int i = 0; i < g->nb_allocs; i++)
		api.MemFree(g->allocs[i].base);
	api.DevicePrimaryCtxRelease(g->cu_dev);
	thread_ctx = NULL;   /* (this thread's: the others' end with them) */
	free(g->allocs);
	free(g->maps);
	free(g);
	dev->mpshared->dev_private = NULL;
	return 0;
}

static int
attribute(CUdevice d, CUdevice_attribute a)
{
	int v = 0;

	api.DeviceGetAttribute(&v, a, d);
	return v;
}

static int
create_device(int ordinal, char *err, size_t errlen)
{
	char name[RTE_DEV_NAME_MAX_LEN], model[128];
	struct cuda_gpu *g = calloc(1, sizeof(*g));
	struct rte_gpu *dev;
	size_t mem = 0;

	if (g == NULL)
		return -ENOMEM;
	if (api.DeviceGet(&g->cu_dev, ordinal) != CUDA_SUCCESS ||
	    api.DevicePrimaryCtxRetain(&g->ctx, g->cu_dev) != CUDA_SUCCESS) {
		snprintf(err, errlen, "CUDA device %d: cannot open its primary context", ordinal);
		free(g);
		return -EIO;
	}
	if (!attribute(g->cu_dev, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))
		CUDA_LOG(WARNING, "CUDA device %d has no unified addressing: gather placement will refuse it",
			 ordinal);
	api.DeviceGetName(model, sizeof(model), g->cu_dev);
	api.DeviceTotalMem(&mem, g->cu_dev);
	snprintf(name, sizeof(name), "%s%d", DROCE_GPU_CUDA_PREFIX, ordinal);
	dev = rte_gpu_allocate(name);
	if (dev == NULL) {
		snprintf(err, errlen, "%s: rte_gpu_allocate: %s", name, rte_strerror(rte_errno));
		api.DevicePrimaryCtxRelease(g->cu_dev);
		free(g);
		return -rte_errno;
	}
	dev->mpshared->dev_private = g;
	dev->mpshared->info.context = (uint64_t)(uintptr_t)g->ctx;
	dev->mpshared->info.processor_count =
		(uint32_t)attribute(g->cu_dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
	dev->mpshared->info.total_memory = mem;
	dev->mpshared->info.page_size = GPU_PAGE;
	dev->ops.dev_info_get = cuda_info_get;
	dev->ops.dev_close = cuda_close;
	dev->ops.mem_alloc = cuda_mem_alloc;
	dev->ops.mem_free = cuda_mem_free;
	dev->ops.mem_register = cuda_mem_register;
	dev->ops.mem_unregister = cuda_mem_unregister;
	dev->ops.mem_cpu_map = cuda_mem_cpu_map;
	dev->ops.mem_cpu_unmap = cuda_mem_cpu_unmap;
	dev->ops.wmb = cuda_wmb;
	rte_gpu_complete_new(dev);
	CUDA_LOG(INFO, "%s: %s, %zu MiB, %u SMs, PCI %04x:%02x:%02x (gpudev %d)", name,
		 model, mem >> 20, dev->mpshared->info.processor_count,
		 attribute(g->cu_dev, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
		 attribute(g->cu_dev, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
		 attribute(g->cu_dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
		 dev->mpshared->info.dev_id);
	return 0;
}

extern const struct droce_gather_engine cuda_gather_engine;

int
droce_gpu_cuda_probe(char *err, size_t errlen)
{
	int count = 0, made = 0, ret;

	if (api.lib == NULL) {
		ret = cuda_api_load(&api, err, errlen);
		if (ret != 0)
			return ret;
	}
	if (api.DeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
		snprintf(err, errlen, "the CUDA driver (%d.%d) sees no device",
			 api.driver_version / 1000, api.driver_version % 1000 / 10);
		return 0;
	}
	for (int i = 0; i < count; i++) {
		char name[RTE_DEV_NAME_MAX_LEN];

		snprintf(name, sizeof(name), "%s%d", DROCE_GPU_CUDA_PREFIX, i);
		if (rte_gpu_get_by_name(name) != NULL) {
			made++; /* probed before */
			continue;
		}
		ret = create_device(i, err, errlen);
		if (ret != 0)
			return ret;
		made++;
	}
	droce_gather_engine_register(&cuda_gather_engine);
	return made;
}

static struct rte_gpu *
cuda_dev(int16_t dev_id)
{
	struct rte_gpu_info info;
	struct rte_gpu *dev;

	if (rte_gpu_info_get(dev_id, &info) != 0)
		return NULL;
	dev = rte_gpu_get_by_name(info.name);
	return dev != NULL && dev->ops.mem_alloc == cuda_mem_alloc ? dev : NULL;
}

bool
droce_gpu_is_cuda(int16_t dev_id)
{
	return cuda_dev(dev_id) != NULL;
}

int
droce_gpu_cuda_dtoh(int16_t dev_id, void *dst, const void *gpu_src, size_t len)
{
	struct rte_gpu *dev = cuda_dev(dev_id);

	if (dev == NULL)
		return -ENOTSUP;
	if (use_ctx(dev) != 0)
		return -EIO;
	return check(dev, api.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)gpu_src, len),
		     "cuMemcpyDtoH");
}

int
droce_gpu_cuda_htod(int16_t dev_id, void *gpu_dst, const void *src, size_t len)
{
	struct rte_gpu *dev = cuda_dev(dev_id);

	if (dev == NULL)
		return -ENOTSUP;
	if (use_ctx(dev) != 0)
		return -EIO;
	return check(dev, api.MemcpyHtoD((CUdeviceptr)(uintptr_t)gpu_dst, src, len),
		     "cuMemcpyHtoD");
}

/* For the gather engine (gather_engine.c). */
const struct cuda_api *
cuda_driver_api(void)
{
	return &api;
}

int
cuda_use_device(int16_t dev_id)
{
	struct rte_gpu *dev = cuda_dev(dev_id);

	return dev != NULL ? use_ctx(dev) : -ENODEV;
}
