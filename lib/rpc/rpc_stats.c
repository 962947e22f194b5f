/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The process's RPC counters: one relaxed atomic each, shared by every
 * worker (a call already costs several atomics; these add one or two),
 * read by droce_rpc_stats_get(), the /droce/rpc telemetry command and a
 * lent stack's stats line and JSON.
 */

#include <inttypes.h>
#include <stdio.h>

#include <rte_telemetry.h>

#include "droce_net.h"
#include "droce_rpc.h"
#include "rpc_private.h"

atomic_uint_fast64_t rpc_counters[RPC_COUNTER_MAX];

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
		*(uint64_t *)((char *)stats + counter_info[i].offset) =
			atomic_load_explicit(&rpc_counters[i], memory_order_relaxed);
}

static int
tel_rpc(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	for (unsigned int i = 0; i < RPC_COUNTER_MAX; i++)
		rte_tel_data_add_dict_u64(d, counter_info[i].name,
					  atomic_load_explicit(&rpc_counters[i],
							       memory_order_relaxed));
	rte_tel_data_add_dict_u64(d, "sessions_open",
				  atomic_load(&rpc_counters[RPC_SESSIONS_OPENED]) -
				  atomic_load(&rpc_counters[RPC_SESSIONS_ENDED]));
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
	uint64_t calls = atomic_load(&rpc_counters[RPC_CALLS_SERVED]) +
			 atomic_load(&rpc_counters[RPC_CALLS_MADE]);

	(void)arg;
	fprintf(out, " | rpc %" PRIu64 " sessions, %.0f calls/s",
		atomic_load(&rpc_counters[RPC_SESSIONS_OPENED]) -
		atomic_load(&rpc_counters[RPC_SESSIONS_ENDED]),
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
			(uint64_t)atomic_load(&rpc_counters[i]));
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
