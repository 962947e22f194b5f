/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CM_CONN_H
#define DROCE_CM_CONN_H

/*
 * One connection's side of the IB CM protocol (IBTA vol. 1 ch. 12, as
 * Linux's cm.c and rdma_cm run it), as a state machine that does no I/O:
 * each step takes what happened (a call of the application, a message, a
 * timer) and says what to do (a message to send, the QP attributes to set,
 * an event for the application, the timer to arm). The caller owns the
 * transport, the clock and the QP; tests drive two machines by hand.
 */

#include <stdbool.h>
#include <stdint.h>

#include "cm_mad.h"

enum cm_state {
	CM_IDLE,
	CM_REQ_SENT,            /* active: waiting for REP (or REJ, MRA) */
	CM_MRA_REQ_RCVD,        /* active: the peer asked for more time */
	CM_REQ_RCVD,            /* passive: the application decides */
	CM_REP_SENT,            /* passive: waiting for RTU */
	CM_ESTABLISHED,
	CM_DREQ_SENT,
	CM_TIMEWAIT,
	CM_STATE_MAX,
};

/* What the application learns. */
enum cm_event {
	CM_EV_NONE,
	CM_EV_CONNECT_REQUEST,  /* passive: a REQ came; accept or reject */
	CM_EV_ESTABLISHED,
	CM_EV_REJECTED,         /* reason and private data in the step */
	CM_EV_UNREACHABLE,      /* retries ran out */
	CM_EV_DISCONNECTED,
	CM_EV_TIMEWAIT_EXIT,
};

/* The QP's attributes as the exchange sets them, Linux's way. */
struct cm_qp_attrs {
	uint32_t dest_qpn;
	uint32_t rq_psn, sq_psn;
	uint8_t path_mtu;               /* IBTA code, 1..5 */
	uint8_t max_dest_rd_atomic, max_rd_atomic;
	uint8_t min_rnr_timer;          /* 0, as Linux's rdma_cm sets it */
	uint8_t timeout, retry_cnt, rnr_retry;
};

/* What a step asks the caller to do. */
struct cm_step {
	bool send;                      /* send msg to the peer */
	struct cm_msg msg;
	bool set_qp;                    /* take the QP to RTR and RTS with qp */
	struct cm_qp_attrs qp;
	enum cm_event event;
	uint16_t rej_reason;            /* CM_EV_REJECTED */
	const uint8_t *private_data;    /* of the message behind the event */
	uint32_t private_len;
	bool timer_change;              /* the timer is to be armed (timer_ms) or stopped (0) */
	uint32_t timer_ms;
};

/* What a connection offers or accepts (rdma_conn_param's numbers). */
struct cm_conn_param {
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;   /* 3 bits each */
	uint8_t cm_response_timeout;            /* connect: 0 for CM_RESPONSE_TIMEOUT */
	uint8_t max_cm_retries;                 /* connect: 0 for CM_MAX_RETRIES */
	uint8_t ack_timeout;                    /* the QP's; 0: the exchange's */
	const uint8_t *private_data;
	uint32_t private_len;
};

/* Times as Linux's rdma_cm uses them on RoCE. */
#define CM_PACKET_LIFETIME 16
#define CM_RESPONSE_TIMEOUT 20
#define CM_RESPONSE_TIMEOUT_MAX 24      /* a peer's longer one is cut to this (69 s) */
#define CM_MAX_RETRIES 15
#define CM_LOCAL_ACK_TIMEOUT 18
#define CM_TARGET_ACK_DELAY 15

struct cm_conn {
	enum cm_state state;
	bool active;
	uint32_t local_id, remote_id;
	uint64_t tid;                   /* the REQ's (and its answers'), or the DREQ's */
	uint32_t local_qpn, remote_qpn;
	uint32_t local_psn;             /* the PSN we expect first: the peer sends from it */
	uint8_t retries_left;
	uint8_t max_retries;
	uint32_t timeout_ms;            /* a try's wait */
	struct cm_msg last;             /* what a retry sends again */
	struct cm_req req;              /* passive: the REQ being answered */
	uint8_t responder_resources, initiator_depth;
	uint8_t ack_timeout;            /* active: the QP's, 0: from the REP */
};

const char *cm_state_name(enum cm_state s);
/* How long a connection stays in TIMEWAIT. */
uint32_t cm_conn_timewait_ms(void);
const char *cm_event_name(enum cm_event e);

/* Milliseconds a CM timeout code means (4.096 us * 2^t, as Linux rounds it). */
uint32_t cm_timeout_ms(uint8_t t);

/* Active side. @p req is filled by the caller as far as the path goes
 * (GIDs, service id, QPN, MTU, private data, and as starting PSN the one
 * this side expects first); the rest comes from @p p and the defaults
 * above.
 */
void cm_conn_connect(struct cm_conn *c, uint32_t local_id, const struct cm_req *req,
		     const struct cm_conn_param *p, struct cm_step *out);

/* Passive side: a REQ a listener took; CONNECT_REQUEST follows. */
void cm_conn_req_received(struct cm_conn *c, uint32_t local_id, const struct cm_msg *req,
			  struct cm_step *out);

/* Passive side: the application accepts, with its QP, the PSN it expects
 * first (@p psn, the REP's starting PSN) and @p p.
 */
void cm_conn_accept(struct cm_conn *c, uint32_t local_qpn, uint32_t psn,
		    const struct cm_conn_param *p, struct cm_step *out);

/* Passive side: the application refuses (REJ 28, consumer defined). */
void cm_conn_reject(struct cm_conn *c, const uint8_t *private_data, uint32_t len,
		    struct cm_step *out);

/* Either side, connected: DREQ. */
void cm_conn_disconnect(struct cm_conn *c, struct cm_step *out);
/* The application destroyed the id: what tells the peer, as Linux's
 * cm_destroy_id (REJ while connecting, a DREQ once established); IDLE.
 */
void cm_conn_destroyed(struct cm_conn *c, struct cm_step *out);

/* A message for this connection (the caller matched its ids). */
void cm_conn_input(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out);

/* The timer armed by the last step ran out. */
void cm_conn_timeout(struct cm_conn *c, struct cm_step *out);

#endif /* DROCE_CM_CONN_H */
