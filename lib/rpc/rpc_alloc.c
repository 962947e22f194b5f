/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * hcom4db's memory allocator: blocks of a region the caller owns (usually
 * registered memory), in multiples of the smallest block, first fit over
 * a list of free extents kept in address order and merged with their
 * neighbours when blocks come back. MEM_DYNAMIC_SIZE_WITH_CACHE keeps
 * freed blocks of the tier sizes (multiples of the smallest block, or its
 * powers of two) for the next allocation of that tier, up to a count per
 * tier; bigger sizes bypass the cache. Every handed-out block is in a
 * table by address, so that a free of an address that is not one (or not
 * any more) is an error, not a corruption. One lock: this is the control
 * path's allocator.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "rpc_private.h"

#define DEFAULT_MIN_BLOCK 4096u
#define MAX_TIERS 32

struct extent {
	uint64_t first, count;          /* in blocks */
};

struct tier {
	uint64_t blocks;                /* its block's size, in blocks */
	uint32_t nb_cached;
	uint64_t *cached;               /* first blocks of cached blocks */
};

struct rpc_allocator {
	pthread_mutex_t lock;
	uintptr_t base;
	uint64_t size, block, nb_blocks;
	uint32_t key;
	bool cache;
	/* Free extents, in address order. */
	struct extent *free;
	uint64_t nb_free, free_cap;
	uint64_t free_blocks;           /* in extents and in the caches */
	/* Handed out: first block -> blocks (0: empty slot), open addressing. */
	uint64_t *used_first, *used_count;
	uint64_t used_cap, nb_used;
	unsigned int nb_tiers;
	uint32_t per_tier;
	struct tier tier[MAX_TIERS];
};

static struct rpc_allocator *
allocator_of(OckRpcMemoryAllocator h)
{
	return (struct rpc_allocator *)h;
}

/* ---- handed-out blocks ------------------------------------------------------------ */

static uint64_t
slot_of(const struct rpc_allocator *a, uint64_t first)
{
	return (first * 0x9e3779b97f4a7c15ull) & (a->used_cap - 1);
}

static uint64_t *
used_find(struct rpc_allocator *a, uint64_t first)
{
	for (uint64_t i = slot_of(a, first);; i = (i + 1) & (a->used_cap - 1)) {
		if (a->used_count[i] == 0)
			return NULL;
		if (a->used_first[i] == first)
			return &a->used_count[i];
	}
}

static void
used_put(struct rpc_allocator *a, uint64_t first, uint64_t count)
{
	uint64_t i = slot_of(a, first);

	while (a->used_count[i] != 0)
		i = (i + 1) & (a->used_cap - 1);
	a->used_first[i] = first;
	a->used_count[i] = count;
	a->nb_used++;
}

/* Remove the entry at @p slot, moving later entries of its run back. */
static void
used_remove(struct rpc_allocator *a, uint64_t *count)
{
	uint64_t i = (uint64_t)(count - a->used_count), j = i;

	a->used_count[i] = 0;
	a->nb_used--;
	for (;;) {
		uint64_t home;

		j = (j + 1) & (a->used_cap - 1);
		if (a->used_count[j] == 0)
			return;
		home = slot_of(a, a->used_first[j]);
		/* Entry j may fill the hole at i if its home is not in (i, j]. */
		if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
			a->used_first[i] = a->used_first[j];
			a->used_count[i] = a->used_count[j];
			a->used_count[j] = 0;
			i = j;
		}
	}
}

/* ---- extents ------------------------------------------------------------------------ */

static int
extent_take(struct rpc_allocator *a, uint64_t count, uint64_t *first)
{
	for (uint64_t i = 0; i < a->nb_free; i++) {
		struct extent *e = &a->free[i];

		if (e->count < count)
			continue;
		*first = e->first;
		e->first += count;
		e->count -= count;
		if (e->count == 0) {
			memmove(e, e + 1, (a->nb_free - i - 1) * sizeof(*e));
			a->nb_free--;
		}
		return 0;
	}
	return -ENOSPC;
}

static int
extent_give(struct rpc_allocator *a, uint64_t first, uint64_t count)
{
	uint64_t i = 0;

	while (i < a->nb_free && a->free[i].first < first)
		i++;
	if (i > 0 && a->free[i - 1].first + a->free[i - 1].count == first) {
		a->free[i - 1].count += count;
		if (i < a->nb_free && first + count == a->free[i].first) {
			a->free[i - 1].count += a->free[i].count;
			memmove(&a->free[i], &a->free[i + 1], (a->nb_free - i - 1) * sizeof(struct extent));
			a->nb_free--;
		}
		return 0;
	}
	if (i < a->nb_free && first + count == a->free[i].first) {
		a->free[i].first = first;
		a->free[i].count += count;
		return 0;
	}
	if (a->nb_free == a->free_cap) {
		struct extent *f = realloc(a->free, (a->free_cap * 2) * sizeof(*f));

		if (f == NULL)
			return -ENOMEM;
		a->free = f;
		a->free_cap *= 2;
	}
	memmove(&a->free[i + 1], &a->free[i], (a->nb_free - i) * sizeof(struct extent));
	a->free[i] = (struct extent){ first, count };
	a->nb_free++;
	return 0;
}

/* ---- the cache tiers ---------------------------------------------------------------- */

/* The smallest tier that holds @p blocks, or NULL (no cache, or bigger). */
static struct tier *
tier_for(struct rpc_allocator *a, uint64_t blocks)
{
	for (unsigned int t = 0; a->cache && t < a->nb_tiers; t++)
		if (a->tier[t].blocks >= blocks)
			return &a->tier[t];
	return NULL;
}

/* ---- the API -------------------------------------------------------------------------- */

static bool
power_of_two(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

static void
allocator_free(struct rpc_allocator *a)
{
	for (unsigned int t = 0; t < MAX_TIERS; t++)
		free(a->tier[t].cached);
	free(a->free);
	free(a->used_first);
	free(a->used_count);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

int
OckRpcMemoryAllocatorCreate(OckRpcMemoryAllocatorType t, OckRpcMemoryAllocatorOptions *o,
			    OckRpcMemoryAllocator *allocator)
{
	struct rpc_allocator *a;
	bool oom = false;
	uint64_t block;

	if (o == NULL || allocator == NULL ||
	    (t != MEM_DYNAMIC_SIZE && t != MEM_DYNAMIC_SIZE_WITH_CACHE)) {
		RPC_LOG(ERR, "allocator: no options or place for it, or type %d (0 or 1)", (int)t);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	block = o->minBlockSize != 0 ? o->minBlockSize : DEFAULT_MIN_BLOCK;
	if (o->address == 0 || !power_of_two(block) || o->size < block ||
	    (o->alignedAddress != 0 && (o->address & (block - 1)) != 0) ||
	    (t == MEM_DYNAMIC_SIZE_WITH_CACHE &&
	     (o->cacheTierCount == 0 || o->cacheTierCount > MAX_TIERS ||
	      o->cacheBlockCountPerTier == 0 ||
	      (o->cacheTierPolicy != MEM_TIER_TIMES && o->cacheTierPolicy != MEM_TIER_POWER)))) {
		RPC_LOG(ERR, "allocator: address %#" PRIxPTR ", %" PRIu64 " bytes, smallest block %"
			PRIu64 " (a power of two, at most the size; the address aligned to it when asked), %u tiers of %u blocks (1..%d, 1 or more; policy 0 or 1)",
			o->address, o->size, block, o->cacheTierCount, o->cacheBlockCountPerTier,
			MAX_TIERS);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	pthread_mutex_init(&a->lock, NULL);
	a->base = o->address;
	a->block = block;
	a->nb_blocks = o->size / block;
	a->size = a->nb_blocks * block;
	a->free_cap = 16;
	a->free = malloc(a->free_cap * sizeof(*a->free));
	a->used_cap = 64;
	while (a->used_cap < 2 * (uint64_t)RTE_MAX(o->bucketCount, 1u))
		a->used_cap *= 2;
	a->used_first = calloc(a->used_cap, sizeof(uint64_t));
	a->used_count = calloc(a->used_cap, sizeof(uint64_t));
	a->cache = t == MEM_DYNAMIC_SIZE_WITH_CACHE;
	a->nb_tiers = a->cache ? o->cacheTierCount : 0;
	a->per_tier = o->cacheBlockCountPerTier;
	for (unsigned int i = 0; i < a->nb_tiers; i++) {
		a->tier[i].blocks = o->cacheTierPolicy == MEM_TIER_POWER ? 1ull << RTE_MIN(i, 62u)
									  : (uint64_t)i + 1;
		a->tier[i].cached = malloc(a->per_tier * sizeof(uint64_t));
		oom |= a->tier[i].cached == NULL;
	}
	if (oom || a->free == NULL || a->used_first == NULL || a->used_count == NULL) {
		allocator_free(a);
		return OCK_RPC_ERR_NO_MEMORY;
	}
	a->free[0] = (struct extent){ 0, a->nb_blocks };
	a->nb_free = 1;
	a->free_blocks = a->nb_blocks;
	*allocator = (OckRpcMemoryAllocator)(uintptr_t)a;
	return OCK_RPC_OK;
}

int
OckRpcMemoryAllocatorDestroy(OckRpcMemoryAllocator allocator)
{
	if (allocator == 0)
		return OCK_RPC_ERR_INVALID_PARAM;
	allocator_free(allocator_of(allocator));
	return OCK_RPC_OK;
}

int
OckRpcMemoryAllocatorSetMrKey(OckRpcMemoryAllocator allocator, uint32_t mrKey)
{
	if (allocator == 0)
		return OCK_RPC_ERR_INVALID_PARAM;
	allocator_of(allocator)->key = mrKey;
	return OCK_RPC_OK;
}

int
OckRpcMemoryAllocatorMemOffset(OckRpcMemoryAllocator allocator, uintptr_t address,
			       uintptr_t *offset)
{
	struct rpc_allocator *a = allocator_of(allocator);

	if (a == NULL || offset == NULL || address < a->base || address - a->base >= a->size)
		return OCK_RPC_ERR_INVALID_PARAM;
	*offset = address - a->base;
	return OCK_RPC_OK;
}

int
OckRpcMemoryAllocatorFreeSize(OckRpcMemoryAllocator allocator, uintptr_t *size)
{
	struct rpc_allocator *a = allocator_of(allocator);

	if (a == NULL || size == NULL)
		return OCK_RPC_ERR_INVALID_PARAM;
	pthread_mutex_lock(&a->lock);
	*size = (uintptr_t)(a->free_blocks * a->block);
	pthread_mutex_unlock(&a->lock);
	return OCK_RPC_OK;
}

/* The handed-out table grows before it is half full. */
static int
used_room(struct rpc_allocator *a)
{
	uint64_t *old_first = a->used_first, *old_count = a->used_count;
	uint64_t old_cap = a->used_cap;

	if (2 * (a->nb_used + 1) <= a->used_cap)
		return 0;
	a->used_first = calloc(old_cap * 2, sizeof(uint64_t));
	a->used_count = calloc(old_cap * 2, sizeof(uint64_t));
	if (a->used_first == NULL || a->used_count == NULL) {
		free(a->used_first);
		free(a->used_count);
		a->used_first = old_first;
		a->used_count = old_count;
		return -ENOMEM;
	}
	a->used_cap = old_cap * 2;
	a->nb_used = 0;
	for (uint64_t i = 0; i < old_cap; i++)
		if (old_count[i] != 0)
			used_put(a, old_first[i], old_count[i]);
	free(old_first);
	free(old_count);
	return 0;
}

/* Every cached block back to the extents: a request that finds no
 * extent may fit once they merge.
 */
static void
flush_caches(struct rpc_allocator *a)
{
	for (unsigned int t = 0; t < a->nb_tiers; t++)
		while (a->tier[t].nb_cached != 0) {
			uint64_t first = a->tier[t].cached[--a->tier[t].nb_cached];

			if (extent_give(a, first, a->tier[t].blocks) != 0) {
				a->tier[t].nb_cached++;         /* kept where it was */
				return;
			}
		}
}

int
OckRpcMemoryAllocatorAllocate(OckRpcMemoryAllocator allocator, uint64_t size, uintptr_t *address,
			      uint32_t *key)
{
	struct rpc_allocator *a = allocator_of(allocator);
	uint64_t blocks, first;
	struct tier *t;
	int ret = 0;

	if (a == NULL || address == NULL || key == NULL || size == 0)
		return OCK_RPC_ERR_INVALID_PARAM;
	if (size > a->size)
		return OCK_RPC_ERR_NO_MEMORY;
	blocks = (size + a->block - 1) / a->block;
	pthread_mutex_lock(&a->lock);
	t = tier_for(a, blocks);
	if (t != NULL)
		blocks = t->blocks;
	if (used_room(a) != 0) {
		ret = OCK_RPC_ERR_NO_MEMORY;
	} else if (t != NULL && t->nb_cached != 0) {
		first = t->cached[--t->nb_cached];
	} else if (blocks > a->free_blocks) {
		ret = OCK_RPC_ERR_NO_MEMORY;
	} else if (extent_take(a, blocks, &first) != 0) {
		flush_caches(a);
		if (extent_take(a, blocks, &first) != 0)
			ret = OCK_RPC_ERR_NO_MEMORY;
	}
	if (ret == 0) {
		used_put(a, first, blocks);
		a->free_blocks -= blocks;
		*address = a->base + (uintptr_t)(first * a->block);
		*key = a->key;
	}
	pthread_mutex_unlock(&a->lock);
	if (ret != 0)
		RPC_LOG(DEBUG, "allocator: no %" PRIu64 " bytes free in one piece", size);
	return ret;
}

int
OckRpcMemoryAllocatorFree(OckRpcMemoryAllocator allocator, uintptr_t address)
{
	struct rpc_allocator *a = allocator_of(allocator);
	uint64_t first, blocks, *count;
	struct tier *t;
	int ret = 0;

	if (a == NULL || address < a->base || address - a->base >= a->size ||
	    (address - a->base) % a->block != 0)
		return OCK_RPC_ERR_INVALID_PARAM;
	first = (address - a->base) / a->block;
	pthread_mutex_lock(&a->lock);
	count = used_find(a, first);
	if (count == NULL) {
		pthread_mutex_unlock(&a->lock);
		RPC_LOG(ERR, "allocator: %#" PRIxPTR " is not a block handed out (freed twice?)",
			address);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	blocks = *count;
	used_remove(a, count);
	t = tier_for(a, blocks);
	if (t != NULL && t->blocks == blocks && t->nb_cached < a->per_tier)
		t->cached[t->nb_cached++] = first;
	else
		ret = extent_give(a, first, blocks);
	if (ret == 0)
		a->free_blocks += blocks;
	else
		used_put(a, first, blocks);     /* still its caller's: it may try again */
	pthread_mutex_unlock(&a->lock);
	return ret == 0 ? OCK_RPC_OK : OCK_RPC_ERR_NO_MEMORY;
}
