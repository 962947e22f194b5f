/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The objects every call makes and ends (its call, the server's context,
 * small frames out) come from a cache of the thread that ends them. With
 * 32 calls in flight glibc's own per-thread cache (7 a size) overflows on
 * every burst, and each allocation then takes the arena's lock. A thread's
 * cache holds at most RPC_CACHE_DEPTH of a kind and is given back to
 * malloc when the thread ends; an object ended on another thread than the
 * one that made it simply joins that thread's cache.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "rpc_private.h"

/* Under AddressSanitizer a cached object is poisoned: a use after its
 * end is caught as a use after free() would be.
 */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define cache_poison(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define cache_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define cache_poison(p, n) do { (void)(p); (void)(n); } while (0)
#define cache_unpoison(p, n) do { (void)(p); (void)(n); } while (0)
#endif

#define RPC_CACHE_DEPTH 64

struct rpc_cache {
	unsigned int n[RPC_OBJ_KINDS];
	void *obj[RPC_OBJ_KINDS][RPC_CACHE_DEPTH];
};

static const size_t obj_size[RPC_OBJ_KINDS] = {
	[RPC_OBJ_CALL] = sizeof(struct rpc_call),
	[RPC_OBJ_CTX] = sizeof(struct rpc_ctx),
	[RPC_OBJ_OUT] = sizeof(struct rpc_out) + RPC_OUT_CACHED_BYTES,
};

static _Thread_local struct rpc_cache cache;
static _Thread_local bool cache_registered;
static pthread_key_t cache_key;
static bool cache_key_made;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;
/* Past the library's end (exit, dlclose): objects go back to malloc. */
static atomic_bool cache_closed;

static void
cache_drain(void *arg)
{
	struct rpc_cache *c = arg;

	/* Later destructors that end objects register the cache again. */
	cache_registered = false;
	for (unsigned int k = 0; k < RPC_OBJ_KINDS; k++)
		while (c->n[k] != 0) {
			void *obj = c->obj[k][--c->n[k]];

			cache_unpoison(obj, obj_size[k]);
			free(obj);
		}
}

static void
cache_key_create(void)
{
	cache_key_made = pthread_key_create(&cache_key, cache_drain) == 0;
}

/* A thread keeps objects only once its exit is sure to give them back. */
static bool
cache_register(void)
{
	pthread_once(&cache_key_once, cache_key_create);
	cache_registered = cache_key_made && pthread_setspecific(cache_key, &cache) == 0;
	return cache_registered;
}

/* A dlclose() must not leave the key's destructor pointing into the
 * unloaded library; the closing thread's own objects go back now (other
 * threads' stay with them, at most RPC_CACHE_DEPTH of a kind each).
 */
static void __attribute__((destructor))
cache_fini(void)
{
	atomic_store(&cache_closed, true);
	if (cache_key_made)
		pthread_key_delete(cache_key);
	cache_drain(&cache);
}

void *
rpc_obj_get(enum rpc_obj_kind kind)
{
	struct rpc_cache *c = &cache;

	if (c->n[kind] != 0) {
		void *obj = c->obj[kind][--c->n[kind]];

		cache_unpoison(obj, obj_size[kind]);
		return obj;
	}
	return malloc(obj_size[kind]);
}

void
rpc_obj_put(enum rpc_obj_kind kind, void *obj)
{
	struct rpc_cache *c = &cache;

	if (obj == NULL)
		return;
	if (c->n[kind] == RPC_CACHE_DEPTH ||
	    atomic_load_explicit(&cache_closed, memory_order_relaxed) ||
	    (!cache_registered && !cache_register())) {
		free(obj);
		return;
	}
	c->obj[kind][c->n[kind]++] = obj;
	cache_poison(obj, obj_size[kind]);
}
