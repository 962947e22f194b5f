/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The process's RPC counters: a block per thread that counts (a worker,
 * an application thread that calls), summed when read by
 * droce_rpc_stats_get(), the /droce/rpc telemetry command and a lent
 * stack's stats line and JSON. A thread that ends adds its block to
 * the retired counts.
 */

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_telemetry.h>

#include "droce_net.h"
#include "droce_rpc.h"
#include "rpc_private.h"

__thread struct rpc_counter_block *rpc_thread_counters;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpc_counter_block *blocks;        /* of the living threads */
static atomic_uint_fast64_t retired[RPC_COUNTER_MAX];
static pthread_key_t block_key;
static pthread_once_t block_key_once = PTHREAD_ONCE_INIT;
static bool block_key_made;

/* A thread that counted ends: its counts stay, its block goes. This
 * runs on that thread: a count after it (another key's destructor) makes
 * a new block, which the next pass of destructors retires.
 */
static void
block_retire(void *arg)
{
	struct rpc_counter_block *b = arg, **p;

	rpc_thread_counters = NULL;
	pthread_mutex_lock(&blocks_lock);
	for (p = &blocks; *p != NULL && *p != b; p = &(*p)->next)
		;
	if (*p == b)
		*p = b->next;
	for (unsigned int i = 0; i < RPC_COUNTER_MAX; i++)
		atomic_fetch_add_explicit(&retired[i], atomic_load(&b->c[i]), memory_order_relaxed);
	pthread_mutex_unlock(&blocks_lock);
	free(b);
}

static void
block_key_make(void)
{
	block_key_made = pthread_key_create(&block_key, block_retire) == 0;
}

struct rpc_counter_block *
rpc_counters_attach(void)
{
	struct rpc_counter_block *b;

	if (pthread_once(&block_key_once, block_key_make) != 0 || !block_key_made)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	if (pthread_setspecific(block_key, b) != 0) {
		free(b);
		return NULL;
	}
	pthread_mutex_lock(&blocks_lock);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&blocks_lock);
	rpc_thread_counters = b;
	return b;
}

void
rpc_count_shared(enum rpc_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&retired[c], n, memory_order_relaxed);
}

uint64_t
rpc_counter_read(enum rpc_counter c)
{
	uint64_t sum;

	pthread_mutex_lock(&blocks_lock);
	sum = atomic_load_explicit(&retired[c], memory_order_relaxed);
	for (const struct rpc_counter_block *b = blocks; b != NULL; b = b->next)
		sum += atomic_load_explicit(&b->c[c], memory_order_relaxed);
	pthread_mutex_unlock(&blocks_lock);
	return sum;
}

/* Sessions open now; 0 where an end was counted before its opening was. */
static uint64_t
sessions_open(void)
{
	uint64_t opened = rpc_counter_read(RPC_SESSIONS_OPENED);
	uint64_t ended = rpc_counter_read(RPC_SESSIONS_ENDED);

	return opened > ended ? opened - ended : 0;
}

/* Each counter's name (telemetry, JSON) and its place in the struct. */
static const struct {
	const char *name;
	size_t offset;
} counter_info[RPC_COUNTER_MAX] = {
#define COUNTER(id, field) [id] = { #field, offsetof(struct droce_rpc_stats, field) }
	COUNTER(RPC_SESSIONS_OPENED, sessions_opened),
	COUNTER(RPC_SESSIONS_ENDED, sessions_ended),
	COUNTER(RPC_CALLS_MADE, calls_made),
	COUNTER(RPC_CALLS_SERVED, calls_served),
	COUNTER(RPC_FRAMES_OUT, frames_out),
	COUNTER(RPC_FRAMES_IN, frames_in),
	COUNTER(RPC_BYTES_OUT, bytes_out),
	COUNTER(RPC_BYTES_IN, bytes_in),
	COUNTER(RPC_ERR_REFUSED, err_refused),
	COUNTER(RPC_ERR_BROKEN, err_broken),
	COUNTER(RPC_ERR_DECRYPT, err_decrypt),
	COUNTER(RPC_ERR_PROTOCOL, err_protocol),
	COUNTER(RPC_ERR_TIMEOUT, err_timeout),
	COUNTER(RPC_HEARTBEATS_SENT, heartbeats_sent),
	COUNTER(RPC_HEARTBEATS_ANSWERED, heartbeats_answered),
	COUNTER(RPC_TLS_HANDSHAKES, tls_handshakes),
	COUNTER(RPC_TLS_FAILURES, tls_failures),
	COUNTER(RPC_OPENINGS_DROPPED, openings_dropped),
#undef COUNTER
};

void
droce_rpc_stats_get(struct droce_rpc_stats *stats)
{
	for (unsigned int i = 0; i < RPC_COUNTER_MAX; i++)
		*(uint64_t *)((char *)stats + counter_info[i].offset) = rpc_counter_read(i);
}

static int
tel_rpc(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	for (unsigned int i = 0; i < RPC_COUNTER_MAX; i++)
		rte_tel_data_add_dict_u64(d, counter_info[i].name, rpc_counter_read(i));
	rte_tel_data_add_dict_u64(d, "sessions_open", sessions_open());
	return 0;
}

int
droce_rpc_telemetry_register(void)
{
	return rte_telemetry_register_cmd("/droce/rpc", tel_rpc,
					  "RPC sessions, calls, bytes, errors by kind, heartbeats, TLS handshakes. No parameters");
}

/* A lent stack's stats line and JSON (rpc_stats_register()). */
static void
stats_line(FILE *out, double seconds, void *arg)
{
	static uint64_t last_calls;
	uint64_t calls = rpc_counter_read(RPC_CALLS_SERVED) + rpc_counter_read(RPC_CALLS_MADE);

	(void)arg;
	fprintf(out, " | rpc %" PRIu64 " sessions, %.0f calls/s",
		sessions_open(),
		seconds > 0 ? (double)(calls - last_calls) / seconds : 0.0);
	last_calls = calls;
}

static void
stats_json(FILE *out, void *arg)
{
	(void)arg;
	fputs("\"rpc\": {", out);
	for (unsigned int i = 0; i < RPC_COUNTER_MAX; i++)
		fprintf(out, "%s\"%s\": %" PRIu64, i == 0 ? "" : ", ", counter_info[i].name,
			rpc_counter_read(i));
	fputc('}', out);
}

int
rpc_stats_register(struct droce_stack *stack)
{
	const struct droce_stats_ext ext = { .line = stats_line, .json = stats_json };

	return droce_stats_ext_register(stack, &ext);
}

void
rpc_count_session_end(OckRpcStatus status, bool on_purpose)
{
	rpc_count(RPC_SESSIONS_ENDED, 1);
	switch (status) {
	case OCK_RPC_ERR_CONN_BROKEN:
		/* Ended as asked (a BYE, or here), it did not break. */
		if (!on_purpose)
			rpc_count(RPC_ERR_BROKEN, 1);
		break;
	case OCK_RPC_ERR_DECRYPT:
		rpc_count(RPC_ERR_DECRYPT, 1);
		break;
	case OCK_RPC_ERR_DESERIALIZE:
		rpc_count(RPC_ERR_PROTOCOL, 1);
		break;
	default:
		break;
	}
}
