/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CM_H
#define DROCE_CM_H

/**
 * @file
 * Connections by IP address and port, as rdma_cm makes them: the
 * InfiniBand Communication Manager over QP1 of a RoCEv2 port, the TCP port
 * space's service ids and rdma_cm's header in a REQ's private data, so
 * that rdma_cm applications (rping, ucmatose, perftest -R) connect to
 * droce and droce to them. Shaped like librdmacm: ids, listen, connect,
 * accept, reject, disconnect, and events on a channel.
 *
 * The CM runs on the stack's control lcore: calls from other threads hand
 * their work to it and wait for its answer (they must not be made while
 * the control lcore does not run); on the control lcore, or in a program
 * that steps the stack itself, they run at once. The QP given to connect
 * or accept is taken to RTR and RTS by the CM with the attributes the
 * exchange sets (as Linux's rdma_cm sets them), and to ERR by disconnect.
 */

#include <stdbool.h>
#include <stdint.h>

#include "droce_net.h"
#include "droce_rc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A port's connection manager. */
struct droce_cm;
/** A connection, a listener, or an id not yet either (rdma_cm_id). */
struct droce_cm_id;
/** Where an application's ids report their events. */
struct droce_cm_channel;

/** What happened to an id (rdma_cm_event_type, those that apply). */
enum droce_cm_event_type {
	DROCE_CM_EVENT_CONNECT_REQUEST, /**< a listener's: a new id, to accept or reject */
	DROCE_CM_EVENT_ESTABLISHED,
	DROCE_CM_EVENT_REJECTED,        /**< status: the REJ's reason */
	DROCE_CM_EVENT_UNREACHABLE,     /**< no answer after the retries, status -ETIMEDOUT;
					 *  no ARP answer, -EHOSTUNREACH */
	DROCE_CM_EVENT_DISCONNECTED,
	DROCE_CM_EVENT_TIMEWAIT_EXIT,   /**< the id may be destroyed or used again */
};

/** Private data an event carries at most (a REP's). */
#define DROCE_CM_PRIVATE_MAX 196
/** Private data a reject carries at most (a REJ's). */
#define DROCE_CM_REJECT_PRIVATE_MAX 148

/** An event, copied out to the application (nothing to acknowledge). */
struct droce_cm_event {
	enum droce_cm_event_type event;
	struct droce_cm_id *id;         /**< CONNECT_REQUEST: the new connection's id */
	struct droce_cm_id *listen_id;  /**< CONNECT_REQUEST: the listener */
	int status;                     /**< REJECTED: reason; UNREACHABLE: -ETIMEDOUT or
					 *  -EHOSTUNREACH */
	uint32_t peer_ip;               /**< network order */
	uint16_t peer_port;             /**< CONNECT_REQUEST: rdma_cm's source port */
	uint8_t responder_resources;    /**< CONNECT_REQUEST: what the peer asks for */
	uint8_t initiator_depth;
	uint8_t private_data_len;       /**< 56 (REQ), 196 (REP), 148 (REJ), else 0 */
	uint8_t private_data[DROCE_CM_PRIVATE_MAX];
};

/** What a connect or accept offers (rdma_conn_param). */
struct droce_cm_conn_param {
	const void *private_data;
	uint8_t private_data_len;       /**< connect at most 56, accept 196 */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;            /**< 0..7 */
	uint8_t rnr_retry_count;        /**< 0..7 */
	/** connect: how long a try waits for the peer's CM, 4.096 us *
	 *  2^n (n 1..31); 0: Linux's 20 (4.3 s)
	 */
	uint8_t cm_response_timeout;
	/** connect: tries after the first before UNREACHABLE (1..15); 0: Linux's 15 */
	uint8_t max_cm_retries;
	/** The QP's local ACK timeout, 4.096 us * 2^n (n 1..31), as
	 *  rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT) sets it; 0: what the
	 *  exchange gives (about 1 s, as Linux's rdma_cm on RoCE)
	 */
	uint8_t ack_timeout;
};

/** The event's name ("ESTABLISHED"), as rdma_event_str names them. */
const char *droce_cm_event_str(enum droce_cm_event_type event);

/** Counters of a CM. */
struct droce_cm_stats {
	uint64_t connect_requests;      /**< REQs a listener took */
	uint64_t rejected_no_listener;  /**< REQs answered REJ 8 */
	uint64_t rejected_no_resources; /**< REQs answered REJ 3: too many half-open */
	uint64_t rejected_invalid_gid;  /**< REQs answered REJ 12: not for this port's GID */
	uint64_t rejected_stale;        /**< REQs answered REJ 10: their QP's last connection
					 *  here is in timewait */
	uint64_t rejected_bad_header;   /**< REQs answered REJ 28 (rdma_cm header: version,
					 *  IP version or address not ours) or 26 (path MTU) */
	uint64_t established;
	uint64_t unreachable;
	uint64_t drep_unknown;          /**< DREQs for no connection, answered DREP */
	uint64_t stray;                 /**< messages for no id */
	uint32_t ids;                   /**< ids that exist now (listeners included) */
	uint32_t half_open;             /**< of them, connect requests not yet ESTABLISHED */
};

/**
 * The CM of port @p port, before the stack starts: QP1's claim and the
 * control lcore's hook.
 *
 * @return
 *   The CM, or NULL with the reason in @p err.
 */
struct droce_cm *droce_cm_open(struct droce_stack *stack, uint16_t port, char *err,
			       size_t errlen);

/** Close, the stack stopped; its ids and channels must be destroyed. */
int droce_cm_close(struct droce_cm *cm);

void droce_cm_stats(const struct droce_cm *cm, struct droce_cm_stats *stats);

/** A channel for events (rdma_create_event_channel); NULL without memory. */
struct droce_cm_channel *droce_cm_create_channel(struct droce_cm *cm);

/** Destroy a channel without ids. @return 0, -EBUSY while it has ids. */
int droce_cm_destroy_channel(struct droce_cm_channel *ch);

/** An eventfd, readable while events wait: for poll/epoll. */
int droce_cm_channel_fd(const struct droce_cm_channel *ch);

/**
 * The next event of @p ch, if any; one thread at a time takes a channel's
 * events. Events of ids destroyed since they were queued are skipped (a
 * CONNECT_REQUEST whose listener is gone: its id destroyed, which sends
 * the peer REJ 28); the ids an event names stay valid until they are
 * destroyed.
 *
 * @return
 *   0 with @p ev filled; -EAGAIN when none waits.
 */
int droce_cm_get_event(struct droce_cm_channel *ch, struct droce_cm_event *ev);

/** A new id on @p ch (rdma_create_id, RDMA_PS_TCP); NULL without memory. */
struct droce_cm_id *droce_cm_create_id(struct droce_cm_channel *ch, void *context);

/** What create_id was given. */
void *droce_cm_id_context(const struct droce_cm_id *id);

/**
 * Listen on TCP-space port @p port of the CM's address.
 *
 * @return
 *   0; -EINVAL for port 0 or an id already in use; -EADDRINUSE when another
 *   id listens there.
 */
int droce_cm_listen(struct droce_cm_id *id, uint16_t port);

/**
 * Connect to @p port at @p dst_ip (network order) with @p qp, an RC QP in
 * INIT on the CM's port. The REQ goes out once ARP knows the peer (as
 * rdma_resolve_addr does first); ESTABLISHED, REJECTED or UNREACHABLE
 * follows (UNREACHABLE, -EHOSTUNREACH, when ARP has no answer in 3 s).
 *
 * @return
 *   0; -EINVAL (bad argument, id in use, private data over 56 bytes, CM
 *   timeout or retries out of range); -ENETUNREACH (no route to the peer).
 */
int droce_cm_connect(struct droce_cm_id *id, uint32_t dst_ip, uint16_t port,
		     struct droce_qp *qp, const struct droce_cm_conn_param *param);

/**
 * Accept a CONNECT_REQUEST's id with @p qp (RC, INIT): it goes to RTR and
 * RTS, the REP goes out; ESTABLISHED follows with the peer's RTU.
 *
 * @return
 *   0; -EINVAL (not a connect request waiting, private data over 196).
 */
int droce_cm_accept(struct droce_cm_id *id, struct droce_qp *qp,
		    const struct droce_cm_conn_param *param);

/** Refuse a CONNECT_REQUEST's id: REJ 28 with up to 148 bytes. @return 0, -EINVAL. */
int droce_cm_reject(struct droce_cm_id *id, const void *private_data, uint8_t len);

/**
 * Disconnect: the QP to ERR, then DREQ; DISCONNECTED, then TIMEWAIT_EXIT,
 * follow. After the peer's DREQ (answered by the CM at once) or a first
 * disconnect, only the QP goes to ERR.
 *
 * @return
 *   0; -EINVAL when the id was never connected or its timewait is over.
 */
int droce_cm_disconnect(struct droce_cm_id *id);

/** Destroy an id; a listener stops listening. @return 0. */
int droce_cm_destroy_id(struct droce_cm_id *id);

#ifdef __cplusplus
}
#endif

#endif /* DROCE_CM_H */
