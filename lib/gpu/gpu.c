/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* Device choice, GPU buffers, mempool registration, the engine registry. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_mempool.h>

#include "droce_core.h"
#include "droce_gpu_drivers.h"
#include "gpu_private.h"

RTE_LOG_REGISTER(droce_gpu_logtype, droce.gpu, INFO);

#define MAX_ENGINES 4
static const struct droce_gather_engine *engines[MAX_ENGINES];

int
droce_gather_engine_register(const struct droce_gather_engine *engine)
{
	for (unsigned int i = 0; i < MAX_ENGINES; i++) {
		if (engines[i] == engine)
			return 0;
		if (engines[i] == NULL) {
			engines[i] = engine;
			return 0;
		}
	}
	return -ENOSPC;
}

const struct droce_gather_engine *
gpu_engine_for(int16_t dev_id)
{
	struct rte_gpu_info info;

	if (rte_gpu_info_get(dev_id, &info) != 0)
		return NULL;
	for (unsigned int i = 0; i < MAX_ENGINES && engines[i] != NULL; i++)
		if (strncmp(info.name, engines[i]->name_prefix,
			    strlen(engines[i]->name_prefix)) == 0)
			return engines[i];
	return NULL;
}

static void
list_devices(char *buf, size_t len)
{
	size_t used = 0;
	int16_t id;

	buf[0] = '\0';
	RTE_GPU_FOREACH(id) {
		struct rte_gpu_info info;

		if (rte_gpu_info_get(id, &info) == 0)
			droce_str_append(buf, len, &used, "%s%s", used ? ", " : "",
					 info.name);
	}
	if (used == 0)
		snprintf(buf, len, "none");
}

static int
find_by_name(const char *name, int16_t *dev_id)
{
	int16_t id;

	RTE_GPU_FOREACH(id) {
		struct rte_gpu_info info;

		if (rte_gpu_info_get(id, &info) == 0 &&
		    strcmp(info.name, name) == 0) {
			*dev_id = id;
			return 0;
		}
	}
	return -ENODEV;
}

int
droce_gpu_find(const char *spec, int16_t *dev_id, char *err, size_t errlen)
{
	char name[64], known[256];
	char *end;
	long n;

	if (strcmp(spec, "auto") == 0)
		return find_by_name(DROCE_GPU_CUDA_PREFIX "0", dev_id) == 0 ? 0
		       : droce_gpu_find("host", dev_id, err, errlen);
	if (strcmp(spec, "host") == 0) {
		snprintf(name, sizeof(name), "%s0", DROCE_GPU_HOST_PREFIX);
	} else if (strncmp(spec, "cuda:", 5) == 0) {
		n = strtol(spec + 5, &end, 10);
		if (end == spec + 5 || *end != '\0' || n < 0 || n > 255) {
			snprintf(err, errlen,
				 "GPU \"%s\": not a device; allowed: host, cuda:N (N = 0..255), auto",
				 spec);
			return -EINVAL;
		}
		snprintf(name, sizeof(name), "%s%ld", DROCE_GPU_CUDA_PREFIX, n);
	} else {
		snprintf(err, errlen,
			 "GPU \"%s\": not a device; allowed: host, cuda:N, auto", spec);
		return -EINVAL;
	}
	if (find_by_name(name, dev_id) == 0)
		return 0;
	list_devices(known, sizeof(known));
	snprintf(err, errlen, "GPU \"%s\": no gpudev device %s; devices: %s",
		 spec, name, known);
	return -ENODEV;
}

int
droce_gpu_buf_alloc(int16_t dev_id, size_t size, size_t align,
		    struct droce_gpu_buf *buf, char *err, size_t errlen)
{
	struct rte_gpu_info info;

	memset(buf, 0, sizeof(*buf));
	if (size == 0 || (align != 0 && (align & (align - 1)) != 0) ||
	    align > UINT32_MAX) {
		snprintf(err, errlen,
			 "GPU buffer of %zu bytes aligned to %zu: allowed: a size > 0 and a power-of-two alignment",
			 size, align);
		return -EINVAL;
	}
	if (rte_gpu_info_get(dev_id, &info) != 0) {
		snprintf(err, errlen, "GPU device %d: no such device", dev_id);
		return -ENODEV;
	}
	buf->gpu = rte_gpu_mem_alloc(dev_id, size, (unsigned int)align);
	if (buf->gpu == NULL) {
		snprintf(err, errlen,
			 "%s: cannot allocate %zu bytes of GPU memory (%s; the device has %zu MiB)",
			 info.name, size, rte_strerror(rte_errno),
			 info.total_memory >> 20);
		return rte_errno == ENOMEM || rte_errno == E2BIG ? -ENOMEM : -EIO;
	}
	buf->dev_id = dev_id;
	buf->size = size;
	/* A mapping is optional: gather mode does without. */
	buf->cpu = rte_gpu_mem_cpu_map(dev_id, size, buf->gpu);
	if (buf->cpu == NULL)
		GPU_LOG(INFO, "%s: %zu bytes at %p have no CPU mapping; copy placement is not possible there",
			info.name, size, buf->gpu);
	return 0;
}

void
droce_gpu_buf_free(struct droce_gpu_buf *buf)
{
	if (buf->gpu == NULL)
		return;
	if (buf->cpu != NULL)
		rte_gpu_mem_cpu_unmap(buf->dev_id, buf->gpu);
	rte_gpu_mem_free(buf->dev_id, buf->gpu);
	memset(buf, 0, sizeof(*buf));
}

int
droce_gpu_buf_fits(const struct droce_gpu_buf *buf, size_t page_size,
		   unsigned int pages, char *err, size_t errlen)
{
	if (page_size != 0 && pages <= buf->size / page_size)
		return 0;
	snprintf(err, errlen,
		 "GPU buffer of %zu bytes is too small for %u pages of %zu bytes (%llu bytes)",
		 buf->size, pages, page_size,
		 (unsigned long long)page_size * pages);
	return -ENOSPC;
}

/* Walks the memory chunks of a mempool (in a stable order). */
struct mp_reg {
	int16_t dev_id;
	bool unregister;
	unsigned int limit;   /* chunks to visit */
	unsigned int done;    /* chunks registered */
	int ret;
};

static void
mp_chunk(struct rte_mempool *mp, void *opaque, struct rte_mempool_memhdr *hdr,
	 unsigned int idx)
{
	struct mp_reg *r = opaque;
	int ret;

	RTE_SET_USED(mp);
	if (idx >= r->limit || (r->ret != 0 && !r->unregister))
		return;
	ret = r->unregister ? rte_gpu_mem_unregister(r->dev_id, hdr->addr)
			    : rte_gpu_mem_register(r->dev_id, hdr->len, hdr->addr);
	if (ret == 0)
		r->done++;
	else if (r->ret == 0)
		r->ret = ret;
}

static int
mempool_unregister_first(int16_t dev_id, struct rte_mempool *mp,
			 unsigned int chunks)
{
	struct mp_reg r = { .dev_id = dev_id, .unregister = true, .limit = chunks };

	rte_mempool_mem_iter(mp, mp_chunk, &r);
	return r.ret;
}

int
droce_gpu_mempool_register(int16_t dev_id, struct rte_mempool *mp, char *err,
			   size_t errlen)
{
	struct mp_reg r = { .dev_id = dev_id, .limit = UINT32_MAX };

	rte_mempool_mem_iter(mp, mp_chunk, &r);
	if (r.ret != 0) {
		snprintf(err, errlen,
			 "mempool %s: cannot register its memory with GPU device %d: %s",
			 mp->name, dev_id, rte_strerror(-r.ret));
		mempool_unregister_first(dev_id, mp, r.done);
	}
	return r.ret;
}

int
droce_gpu_mempool_unregister(int16_t dev_id, struct rte_mempool *mp)
{
	return mempool_unregister_first(dev_id, mp, UINT32_MAX);
}
