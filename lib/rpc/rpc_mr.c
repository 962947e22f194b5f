/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * hcom4db's memory regions and one-sided operations. A region is memory
 * the library allocated or the caller assigned, with a key. Regions made
 * while the process's droce stack runs are registered with lib/rc on its
 * first port at once, and the key is that registration's rkey, so that a
 * peer given the key can READ and WRITE the region; any region is
 * registered on a session's port when a rendezvous first needs it there.
 * One-sided operations are rpc_one_sided.c's.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_random.h>

#include "rpc_private.h"
#include "rpc_rdma.h"

#define MR_ALIGN 4096

struct rpc_mr {
	LIST_ENTRY(rpc_mr) link;
	uintptr_t addr;
	uint64_t size;
	uint32_t key;
	bool owned;             /* allocated here: freed with it */
	struct droce_mr *droce[DROCE_MAX_PORTS]; /* its registration on each port */
};

/* Every region, for the lookups of rendezvous by key. */
static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, rpc_mr) regions = LIST_HEAD_INITIALIZER(regions);

static int
mr_new(uintptr_t addr, uint64_t size, bool owned, OckRpcMemoryRegion *out)
{
	struct rpc_mr *mr = calloc(1, sizeof(*mr));

	if (mr == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	mr->addr = addr;
	mr->size = size;
	mr->owned = owned;
	if (rpc_rdma_up()) {
		mr->droce[0] = rpc_rdma_reg(0, (void *)addr, size);
		if (mr->droce[0] == NULL) {
			free(mr);
			return OCK_RPC_ERR_NO_MEMORY;
		}
		mr->key = mr->droce[0]->rkey;
	} else {
		do
			mr->key = (uint32_t)rte_rand();
		while (mr->key == 0);
	}
	pthread_mutex_lock(&regions_lock);
	LIST_INSERT_HEAD(&regions, mr, link);
	pthread_mutex_unlock(&regions_lock);
	*out = (OckRpcMemoryRegion)(uintptr_t)mr;
	return OCK_RPC_OK;
}

static struct rpc_mr *
region_find(uint32_t key, uintptr_t addr, uint64_t len)
{
	struct rpc_mr *mr;

	LIST_FOREACH(mr, &regions, link)
		if (mr->key == key && addr >= mr->addr && len <= mr->size &&
		    addr - mr->addr <= mr->size - len)
			return mr;
	return NULL;
}

struct droce_mr *
rpc_mr_droce(uint32_t key, uintptr_t addr, uint64_t len, uint16_t port)
{
	struct droce_mr *dmr = NULL, *made;
	struct rpc_mr *mr;
	uintptr_t base;
	uint64_t size;

	pthread_mutex_lock(&regions_lock);
	mr = region_find(key, addr, len);
	if (mr != NULL) {
		dmr = mr->droce[port];
		base = mr->addr;
		size = mr->size;
	}
	pthread_mutex_unlock(&regions_lock);
	if (mr == NULL || dmr != NULL)
		return dmr;
	/* Registered outside the lock: that waits for the control lcore,
	 * whose handlers may want the lock meanwhile. A region destroyed or
	 * registered by another caller meanwhile keeps what it has.
	 */
	made = rpc_rdma_reg(port, (void *)base, size);
	if (made == NULL)
		return NULL;
	pthread_mutex_lock(&regions_lock);
	if (region_find(key, addr, len) == mr) {
		if (mr->droce[port] == NULL)
			mr->droce[port] = made;
		dmr = mr->droce[port];
	}
	pthread_mutex_unlock(&regions_lock);
	if (dmr != made)
		rpc_rdma_dereg(made);
	return dmr;
}

bool
rpc_mr_lock_remote(uint32_t rkey, uint64_t addr, uint32_t len, uint16_t port)
{
	const struct rpc_mr *mr;

	pthread_mutex_lock(&regions_lock);
	LIST_FOREACH(mr, &regions, link) {
		const struct droce_mr *dmr = mr->droce[port];

		if (dmr != NULL && dmr->rkey == rkey && addr >= mr->addr && len <= mr->size &&
		    addr - mr->addr <= mr->size - len)
			return true;
	}
	pthread_mutex_unlock(&regions_lock);
	return false;
}

void
rpc_mr_unlock_remote(void)
{
	pthread_mutex_unlock(&regions_lock);
}

/* What a region's info can say: a size of 1 byte to 4 GiB - 1. */
static bool
size_ok(uint64_t size)
{
	if (size != 0 && size <= UINT32_MAX)
		return true;
	RPC_LOG(ERR, "memory region of %" PRIu64 " bytes: 1..%" PRIu32, size, UINT32_MAX);
	return false;
}

int
OckRpcRegisterMemoryRegion(OckRpcServer server, uint64_t size, OckRpcMemoryRegion *mr)
{
	void *p;
	int ret;

	if (server == 0 || mr == NULL || !size_ok(size))
		return OCK_RPC_ERR_INVALID_PARAM;
	if (posix_memalign(&p, MR_ALIGN, size) != 0)
		return OCK_RPC_ERR_NO_MEMORY;
	ret = mr_new((uintptr_t)p, size, true, mr);
	if (ret != OCK_RPC_OK)
		free(p);
	return ret;
}

int
OckRpcRegisterAssignMemoryRegion(OckRpcServer server, uintptr_t address, uint64_t size,
				 OckRpcMemoryRegion *mr)
{
	if (server == 0 || mr == NULL || address == 0 || !size_ok(size))
		return OCK_RPC_ERR_INVALID_PARAM;
	return mr_new(address, size, false, mr);
}

int
OckRpcGetMemoryRegionInfo(OckRpcMemoryRegion mr, OckRpcMemoryRegionInfo *info)
{
	const struct rpc_mr *m = (const struct rpc_mr *)mr;

	if (m == NULL || info == NULL)
		return OCK_RPC_ERR_INVALID_PARAM;
	*info = (OckRpcMemoryRegionInfo){ .lAddress = m->addr, .lKey = m->key,
					  .size = (uint32_t)m->size };
	return OCK_RPC_OK;
}

void
OckRpcDestroyMemoryRegion(OckRpcServer server, OckRpcMemoryRegion mr)
{
	struct rpc_mr *m = (struct rpc_mr *)mr;
	bool busy = false;

	(void)server;
	if (m == NULL)
		return;
	pthread_mutex_lock(&regions_lock);
	LIST_REMOVE(m, link);
	pthread_mutex_unlock(&regions_lock);
	for (unsigned int p = 0; p < DROCE_MAX_PORTS; p++)
		busy |= rpc_rdma_dereg(m->droce[p]) != 0;
	/* Memory a port may still send from is never freed (rpc_rdma_dereg()). */
	if (busy && m->owned)
		RPC_LOG(WARNING, "region %p: %zu bytes kept allocated: a port still sends from them",
			(void *)m->addr, (size_t)m->size);
	else if (busy)
		RPC_LOG(ERR, "region %p: a port still sends from the application's %zu bytes there: never free them",
			(void *)m->addr, (size_t)m->size);
	else if (m->owned)
		free((void *)m->addr);
	free(m);
}
