/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The objects every call makes and ends (its call, the server's context,
 * small frames out) are kept per thread. With 32 calls in flight glibc's
 * own per-thread cache (7 a size) overflows on every burst, and each
 * allocation then takes the arena's lock. An object goes back to the
 * thread that made it: into that thread's cache when that thread ends it,
 * onto its home's returned stack (one compare-and-swap) when another
 * thread does, as with one-way calls over TCP, made by the caller and
 * ended by the session's worker. The maker takes a kind's returned
 * stack whole when its cache of that kind runs dry, so neither side
 * calls malloc once the calls in flight have their objects; the maker
 * keeps RPC_CACHE_DEPTH of what it takes and frees the rest itself (a
 * free() on another thread than the maker's contends for its arena).
 * A returned stack is not bounded: a bound kept by the senders cost most
 * of what the stacks gain. It holds objects its thread made (or the
 * ended thread whose home it took over made) and has not taken back, no
 * more than those threads once had in use at the same time, much as
 * malloc's heap keeps its high-water mark.
 */

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "rpc_private.h"

/* Under AddressSanitizer a cached object is poisoned: a use after its
 * end is caught as a use after free() would be.
 */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define cache_poison(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define cache_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
/* An object ended twice would be handed out twice; its header is not
 * poisoned, so without this check ASan would not see it.
 */
#define cache_check_live(p) do {						\
	if (__asan_address_is_poisoned(p)) {				\
		fprintf(stderr, "rpc_obj_put: %p ended twice\n", (p));	\
		abort();						\
	}								\
} while (0)
#else
#define cache_poison(p, n) do { (void)(p); (void)(n); } while (0)
#define cache_unpoison(p, n) do { (void)(p); (void)(n); } while (0)
#define cache_check_live(p) do { (void)(p); } while (0)
#endif

#define RPC_CACHE_DEPTH 64

struct cache_home;

/* In front of every cached object, in the same allocation; the object
 * keeps malloc's alignment.
 */
struct obj_head {
	alignas(max_align_t) struct cache_home *home; /* NULL: back to malloc */
	struct obj_head *next;                        /* on a returned stack */
};

/* Where a thread's objects come back to. It outlives its thread, and the
 * library too (a thread may end an object after its maker, or the
 * library's destructor, has gone); a later thread takes the home over,
 * and objects sent to it then join that thread's cache.
 */
struct cache_home {
	/* A line of its own: the senders' compare-and-swaps on it take no
	 * neighbour's line from the thread that uses it.
	 */
	alignas(64) _Atomic(struct obj_head *) returned[RPC_OBJ_KINDS];
	struct cache_home *next_spare;
};

/* A home whose thread has ended, until another takes it over: objects
 * sent to it go to free().
 */
#define HOME_CLOSED ((struct obj_head *)1)

struct rpc_cache {
	unsigned int n[RPC_OBJ_KINDS];
	struct obj_head *obj[RPC_OBJ_KINDS][RPC_CACHE_DEPTH];
	struct cache_home *home;        /* NULL until the thread registers */
};

static const size_t obj_size[RPC_OBJ_KINDS] = {
	[RPC_OBJ_CALL] = sizeof(struct rpc_call),
	[RPC_OBJ_CTX] = sizeof(struct rpc_ctx),
	[RPC_OBJ_OUT] = sizeof(struct rpc_out) + RPC_OUT_CACHED_BYTES,
};

static _Thread_local struct rpc_cache cache;
/* Past this thread's drain (a later destructor's objects): malloc's. */
static _Thread_local bool cache_ended;
static pthread_key_t cache_key;
static bool cache_key_made;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;
/* Homes of ended threads, for the next threads to take. */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cache_home *spare_homes;
/* Past the library's end (exit, dlclose): objects go back to malloc. */
static atomic_bool cache_closed;

static inline void *
body_of(struct obj_head *h)
{
	return h + 1;
}

static inline struct obj_head *
head_of(void *obj)
{
	return (struct obj_head *)obj - 1;
}

static void
head_free(enum rpc_obj_kind kind, struct obj_head *h)
{
	cache_unpoison(body_of(h), obj_size[kind]);
	free(h);
}

static void
stack_free(enum rpc_obj_kind kind, struct obj_head *h)
{
	while (h != NULL) {
		struct obj_head *next = h->next;

		head_free(kind, h);
		h = next;
	}
}

static void
cache_drain(void *arg)
{
	struct rpc_cache *c = arg;
	struct cache_home *home = c->home;

	/* Objects made in later destructors (the key's last round may be
	 * past) are not kept.
	 */
	cache_ended = true;
	c->home = NULL;
	for (unsigned int k = 0; k < RPC_OBJ_KINDS; k++) {
		while (c->n[k] != 0)
			head_free(k, c->obj[k][--c->n[k]]);
		if (home != NULL)
			stack_free(k, atomic_exchange(&home->returned[k], HOME_CLOSED));
	}
	if (home != NULL) {
		pthread_mutex_lock(&spare_lock);
		home->next_spare = spare_homes;
		spare_homes = home;
		pthread_mutex_unlock(&spare_lock);
	}
}

/* A child forked while another thread held the lock would wait forever.
 * (The child's own homes work on; those of the threads that do not exist
 * in it stay open, and what it ends of theirs stays with them.)
 */
static void
spare_lock_take(void)
{
	pthread_mutex_lock(&spare_lock);
}

static void
spare_lock_give(void)
{
	pthread_mutex_unlock(&spare_lock);
}

static void
cache_key_create(void)
{
	cache_key_made = pthread_atfork(spare_lock_take, spare_lock_give, spare_lock_give) == 0 &&
			 pthread_key_create(&cache_key, cache_drain) == 0;
}

/* A thread keeps objects only once its exit is sure to give them back
 * (short of a first call from a destructor in the key's last round).
 */
static struct cache_home *
cache_register(struct rpc_cache *c)
{
	struct cache_home *home;

	pthread_once(&cache_key_once, cache_key_create);
	if (!cache_key_made || pthread_setspecific(cache_key, c) != 0)
		return NULL;
	pthread_mutex_lock(&spare_lock);
	home = spare_homes;
	if (home != NULL)
		spare_homes = home->next_spare;
	pthread_mutex_unlock(&spare_lock);
	if (home == NULL && (home = aligned_alloc(alignof(struct cache_home),
						  sizeof(*home))) == NULL)
		return NULL;
	for (unsigned int k = 0; k < RPC_OBJ_KINDS; k++)
		atomic_store(&home->returned[k], NULL);
	c->home = home;
	return home;
}

/* A dlclose() must not leave the key's destructor pointing into the
 * unloaded library; the closing thread's own objects go back now. The
 * homes stay, since a thread still running at exit may be sending an
 * object to one: after a dlclose() they, and other threads' caches, are
 * lost (64 bytes a home, and what each thread held).
 */
static void __attribute__((destructor))
cache_fini(void)
{
	atomic_store(&cache_closed, true);
	if (cache_key_made)
		pthread_key_delete(cache_key);
	cache_drain(&cache);
}

/* What other threads ended since, into @p c's empty cache of @p kind. */
static bool
take_returned(struct rpc_cache *c, enum rpc_obj_kind kind)
{
	struct obj_head *h;

	/* A load first: an exchange on an empty stack would take the
	 * senders' cache line for nothing.
	 */
	if (atomic_load_explicit(&c->home->returned[kind], memory_order_relaxed) == NULL)
		return false;
	h = atomic_exchange_explicit(&c->home->returned[kind], NULL, memory_order_acquire);
	while (h != NULL && c->n[kind] < RPC_CACHE_DEPTH) {
		c->obj[kind][c->n[kind]++] = h;
		h = h->next;
	}
	stack_free(kind, h);
	return c->n[kind] != 0;
}

/* The home a new object of this thread's goes back to; NULL: malloc's. */
static struct cache_home *
home_for_new(struct rpc_cache *c)
{
	if (atomic_load_explicit(&cache_closed, memory_order_relaxed) || cache_ended)
		return NULL;
	return c->home != NULL ? c->home : cache_register(c);
}

void *
rpc_obj_get(enum rpc_obj_kind kind)
{
	struct rpc_cache *c = &cache;
	struct obj_head *h;

	if (c->n[kind] != 0 || (c->home != NULL && take_returned(c, kind))) {
		h = c->obj[kind][--c->n[kind]];
		cache_unpoison(body_of(h), obj_size[kind]);
		return body_of(h);
	}
	h = malloc(sizeof(*h) + obj_size[kind]);
	if (h == NULL)
		return NULL;
	h->home = home_for_new(c);
	return body_of(h);
}

/* Onto @p home's stack of @p kind, unless its thread has ended. */
static void
send_home(struct cache_home *home, enum rpc_obj_kind kind, struct obj_head *h)
{
	struct obj_head *top = atomic_load_explicit(&home->returned[kind], memory_order_relaxed);

	/* Poisoned before it is out of our hands: its maker may take it at once. */
	cache_poison(body_of(h), obj_size[kind]);
	do {
		if (top == HOME_CLOSED) {
			head_free(kind, h);
			return;
		}
		h->next = top;
	} while (!atomic_compare_exchange_weak_explicit(&home->returned[kind], &top, h,
							memory_order_release,
							memory_order_relaxed));
}

void
rpc_obj_put(enum rpc_obj_kind kind, void *obj)
{
	struct rpc_cache *c = &cache;
	struct obj_head *h;

	if (obj == NULL)
		return;
	cache_check_live(obj);
	h = head_of(obj);
	if (h->home == NULL || atomic_load_explicit(&cache_closed, memory_order_relaxed)) {
		free(h);
	} else if (h->home != c->home) {
		send_home(h->home, kind, h);
	} else if (c->n[kind] == RPC_CACHE_DEPTH) {
		free(h);
	} else {
		c->obj[kind][c->n[kind]++] = h;
		cache_poison(obj, obj_size[kind]);
	}
}
