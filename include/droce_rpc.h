/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RPC_H
#define DROCE_RPC_H

/**
 * @file
 * droce's side of lib/rpc, the hcom4db.h library: its counters, and a
 * droce stack that an application runs itself lent to it, so that RPC
 * sessions over RDMA share the stack's ports and control lcore with
 * what else it does (sensor streams).
 */

#include <stddef.h>
#include <stdint.h>

#include "droce_core.h"

struct droce_stack;

/** What the process's RPC sessions did, both transports, every server and client. */
struct droce_rpc_stats {
	uint64_t sessions_opened;     /**< Sessions that opened (HELLO taken or WELCOME read). */
	uint64_t sessions_ended;      /**< Sessions that ended, for any reason. */
	uint64_t calls_made;          /**< Calls this process's clients started. */
	uint64_t calls_served;        /**< Requests this process's services took. */
	uint64_t frames_out;          /**< Frames queued to go out. */
	uint64_t frames_in;           /**< Frames taken. */
	uint64_t bytes_out;           /**< Their bytes (headers too, before TLS). */
	uint64_t bytes_in;            /**< The same, in. */
	uint64_t err_refused;         /**< Sessions refused at their opening. */
	uint64_t err_broken;          /**< Sessions that broke (peer gone or silent, RC failed), not by a BYE. */
	uint64_t err_decrypt;         /**< Sessions ended by a record or sealed bytes that failed their tag. */
	uint64_t err_protocol;        /**< Sessions ended by a frame against the protocol. */
	uint64_t err_timeout;         /**< Calls that passed their deadline. */
	uint64_t heartbeats_sent;     /**< Probes of idle sessions. */
	uint64_t heartbeats_answered; /**< Probes of ours answered. */
	uint64_t tls_handshakes;      /**< TLS handshakes done. */
	uint64_t tls_failures;        /**< TLS handshakes that failed (refused either way). */
	uint64_t openings_dropped;    /**< Server sessions ended before their HELLO to make room
				       *   for newer ones (more than 64 waiting: a flood). */
};

/** The counters now (each read on its own, not one snapshot). */
void droce_rpc_stats_get(struct droce_rpc_stats *stats);

/**
 * Register the /droce/rpc telemetry command: the counters of
 * droce_rpc_stats_get() as a dictionary. 0, or a negative errno.
 */
int droce_rpc_telemetry_register(void);

/**
 * Lend @p stack, which the caller created and runs, to this process's
 * hcom4db library: RPC over RDMA then uses its port 0 and runs on its
 * control lcore, beside the rest of its work, instead of starting a stack
 * of its own (DROCE_HCOM_CONF). Call before droce_stack_start(), and
 * before any hcom4db server or client over RDMA.
 *
 * Servers and clients over RDMA must be destroyed while the stack still
 * runs (from a thread that is not its control lcore), and
 * droce_rpc_detach() called once it stopped.
 *
 * @return
 *   0; -EBUSY when the library has a stack already; another negative
 *   errno with @p err set (lib/rc or lib/cm refused the port).
 */
int droce_rpc_attach(struct droce_stack *stack, const struct droce_conf *conf, char *err,
		     size_t errlen);

/** After the lent stack's control loop ended: the library lets go of it. */
void droce_rpc_detach(void);

#endif /* DROCE_RPC_H */
