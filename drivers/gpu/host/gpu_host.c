/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * A gpudev device backed by host memory. It keeps the bookkeeping a GPU
 * driver would (allocations, registrations, CPU mappings) and refuses what
 * a GPU driver refuses (freeing or unmapping what is not its own,
 * registering the same range twice, more memory than it has), so that
 * code tested on it behaves on a real GPU too.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_atomic.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>

#include "droce_gpu_drivers.h"
#include "gpudev_driver_compat.h"

RTE_LOG_REGISTER(droce_gpu_host_logtype, droce.gpu.host, INFO);
#define HOST_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_gpu_host_logtype, \
		"droce.gpu.host: " fmt "\n", ##__VA_ARGS__)

/* A range of memory the device knows: allocated, registered or mapped. */
struct host_range {
	uint8_t *ptr;
	size_t size;
	uint8_t *map_base;   /* allocations: what mmap returned */
	size_t map_len;
};

struct range_list {
	unsigned int n, cap;
	struct host_range *r;
};

struct host_gpu {
	size_t total;
	size_t used;
	bool no_cpu_map;
	bool failed;
	struct range_list allocs, regs, maps;
};

static int
range_add(struct range_list *l, const struct host_range *r)
{
	if (l->n == l->cap) {
		unsigned int cap = l->cap ? l->cap * 2 : 16;
		struct host_range *nr = realloc(l->r, cap * sizeof(*nr));

		if (nr == NULL)
			return -ENOMEM;
		l->r = nr;
		l->cap = cap;
	}
	l->r[l->n++] = *r;
	return 0;
}

static int
range_find(const struct range_list *l, const void *ptr)
{
	for (unsigned int i = 0; i < l->n; i++)
		if (l->r[i].ptr == ptr)
			return (int)i;
	return -1;
}

static void
range_del(struct range_list *l, unsigned int i)
{
	l->r[i] = l->r[--l->n];
}

/* Does [ptr, ptr + size) lie inside one allocation? */
static bool
inside_alloc(const struct host_gpu *h, const uint8_t *ptr, size_t size)
{
	for (unsigned int i = 0; i < h->allocs.n; i++) {
		const struct host_range *a = &h->allocs.r[i];

		if (ptr >= a->ptr && size <= a->size &&
		    (size_t)(ptr - a->ptr) <= a->size - size)
			return true;
	}
	return false;
}

static bool
overlaps(const struct range_list *l, const uint8_t *ptr, size_t size)
{
	for (unsigned int i = 0; i < l->n; i++)
		if (ptr < l->r[i].ptr + l->r[i].size && l->r[i].ptr < ptr + size)
			return true;
	return false;
}

static struct host_gpu *
priv(struct rte_gpu *dev)
{
	return dev->mpshared->dev_private;
}

/* Fault in @p len bytes at @p p for writing; 0 or -1. */
static int
populate(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return -1;
#endif
	/* A kernel before 5.14: touch each page. */
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t off = 0; off < len; off += page)
		((volatile uint8_t *)p)[off] = 0;
	return 0;
}

static int
host_mem_alloc(struct rte_gpu *dev, size_t size, unsigned int align, void **ptr)
{
	struct host_gpu *h = priv(dev);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t a = RTE_MAX((size_t)align, page);
	size_t len = RTE_ALIGN_CEIL(size, page);
	struct host_range r;
	uint8_t *base;

	if (__atomic_load_n(&h->failed, __ATOMIC_RELAXED))
		return -EIO;
	if (size > h->total - h->used)
		return -ENOMEM;
	/* Over-map by the alignment, keep the aligned part. */
	base = mmap(NULL, len + a - page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	r.map_base = base;
	r.map_len = len + a - page;
	r.ptr = RTE_PTR_ALIGN_CEIL(base, a);
	r.size = size;
	/* Resident from the start, as GPU memory is: the placement path then
	 * takes no first-touch page fault. Short of memory, -ENOMEM here
	 * rather than the OOM killer later.
	 */
	if (populate(r.ptr, len) != 0 || range_add(&h->allocs, &r) != 0) {
		munmap(base, r.map_len);
		return -ENOMEM;
	}
	h->used += size;
	*ptr = r.ptr;
	return 0;
}

static int
host_mem_free(struct rte_gpu *dev, void *ptr)
{
	struct host_gpu *h = priv(dev);
	int i = range_find(&h->allocs, ptr);

	if (i < 0) {
		HOST_LOG(ERR, "%s: free of %p, which it did not allocate",
			 dev->mpshared->name, ptr);
		return -EINVAL;
	}
	if (overlaps(&h->maps, ptr, h->allocs.r[i].size))
		HOST_LOG(WARNING, "%s: %p freed while still mapped for the CPU",
			 dev->mpshared->name, ptr);
	munmap(h->allocs.r[i].map_base, h->allocs.r[i].map_len);
	h->used -= h->allocs.r[i].size;
	range_del(&h->allocs, (unsigned int)i);
	return 0;
}

static int
host_mem_register(struct rte_gpu *dev, size_t size, void *ptr)
{
	struct host_gpu *h = priv(dev);
	struct host_range r = { .ptr = ptr, .size = size };

	if (__atomic_load_n(&h->failed, __ATOMIC_RELAXED))
		return -EIO;
	/* As cuMemHostRegister: a range is registered once. */
	if (overlaps(&h->regs, ptr, size)) {
		HOST_LOG(ERR, "%s: %p (%zu bytes) overlaps registered memory",
			 dev->mpshared->name, ptr, size);
		return -EEXIST;
	}
	return range_add(&h->regs, &r);
}

static int
host_mem_unregister(struct rte_gpu *dev, void *ptr)
{
	struct host_gpu *h = priv(dev);
	int i = range_find(&h->regs, ptr);

	if (i < 0) {
		HOST_LOG(ERR, "%s: unregister of %p, which is not registered",
			 dev->mpshared->name, ptr);
		return -EINVAL;
	}
	range_del(&h->regs, (unsigned int)i);
	return 0;
}

static int
host_mem_cpu_map(struct rte_gpu *dev, size_t size, void *ptr_in, void **ptr_out)
{
	struct host_gpu *h = priv(dev);
	struct host_range r = { .ptr = ptr_in, .size = size };

	if (__atomic_load_n(&h->failed, __ATOMIC_RELAXED))
		return -EIO;
	if (h->no_cpu_map)
		return -ENOTSUP;
	if (!inside_alloc(h, ptr_in, size))
		return -EINVAL;
	if (range_add(&h->maps, &r) != 0)
		return -ENOMEM;
	*ptr_out = ptr_in; /* host memory: the mapping is the memory */
	return 0;
}

static int
host_mem_cpu_unmap(struct rte_gpu *dev, void *ptr)
{
	struct host_gpu *h = priv(dev);
	int i = range_find(&h->maps, ptr);

	if (i < 0)
		return -EINVAL;
	range_del(&h->maps, (unsigned int)i);
	return 0;
}

static int
host_wmb(struct rte_gpu *dev)
{
	if (__atomic_load_n(&priv(dev)->failed, __ATOMIC_RELAXED))
		return -EIO;
	rte_wmb();
	return 0;
}

/* Name, total memory and page size are set at creation and do not change. */
static int
host_info_get(struct rte_gpu *dev, struct rte_gpu_info *info)
{
	*info = dev->mpshared->info;
	return 0;
}

static int
host_close(struct rte_gpu *dev)
{
	struct host_gpu *h = priv(dev);

	if (h == NULL)
		return 0;
	if (h->allocs.n != 0)
		HOST_LOG(WARNING, "%s closed with %u allocations; freeing them",
			 dev->mpshared->name, h->allocs.n);
	for (unsigned int i = 0; i < h->allocs.n; i++)
		munmap(h->allocs.r[i].map_base, h->allocs.r[i].map_len);
	free(h->allocs.r);
	free(h->regs.r);
	free(h->maps.r);
	free(h);
	dev->mpshared->dev_private = NULL;
	return 0;
}

int
droce_gpu_host_create(const char *name, const struct droce_gpu_host_opts *opts)
{
	struct rte_gpu *dev;
	struct host_gpu *h;
	long pages = sysconf(_SC_PHYS_PAGES);
	long page = sysconf(_SC_PAGESIZE);

	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->total = opts != NULL && opts->total_memory != 0 ? opts->total_memory
		   : (size_t)pages * (size_t)page / 2;
	h->no_cpu_map = opts != NULL && opts->no_cpu_map;

	dev = rte_gpu_allocate(name);
	if (dev == NULL) {
		free(h);
		return -rte_errno;
	}
	dev->mpshared->dev_private = h;
	dev->mpshared->info.processor_count = rte_lcore_count();
	dev->mpshared->info.total_memory = h->total;
	dev->mpshared->info.page_size = (size_t)page;
	dev->mpshared->info.numa_node = (int16_t)rte_socket_id();
	dev->ops.dev_info_get = host_info_get;
	dev->ops.dev_close = host_close;
	dev->ops.mem_alloc = host_mem_alloc;
	dev->ops.mem_free = host_mem_free;
	dev->ops.mem_register = host_mem_register;
	dev->ops.mem_unregister = host_mem_unregister;
	dev->ops.mem_cpu_map = host_mem_cpu_map;
	dev->ops.mem_cpu_unmap = host_mem_cpu_unmap;
	dev->ops.wmb = host_wmb;
	rte_gpu_complete_new(dev);
	HOST_LOG(INFO, "%s: gpudev device %d, host memory, %zu MiB",
		 name, dev->mpshared->info.dev_id, h->total >> 20);
	return dev->mpshared->info.dev_id;
}

static struct host_gpu *
host_of(int16_t dev_id)
{
	struct rte_gpu_info info;
	struct rte_gpu *dev;

	if (rte_gpu_info_get(dev_id, &info) != 0 ||
	    strncmp(info.name, DROCE_GPU_HOST_PREFIX,
		    strlen(DROCE_GPU_HOST_PREFIX)) != 0)
		return NULL;
	dev = rte_gpu_get_by_name(info.name);
	return dev != NULL && dev->ops.mem_alloc == host_mem_alloc ? priv(dev) : NULL;
}

int
droce_gpu_host_set_failed(int16_t dev_id, bool failed)
{
	struct host_gpu *h = host_of(dev_id);

	if (h == NULL)
		return -ENODEV;
	__atomic_store_n(&h->failed, failed, __ATOMIC_RELAXED);
	return 0;
}

bool
droce_gpu_host_failed(int16_t dev_id)
{
	struct host_gpu *h = host_of(dev_id);

	return h != NULL && __atomic_load_n(&h->failed, __ATOMIC_RELAXED);
}
