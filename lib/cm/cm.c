/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The connection manager of a port (include/droce_cm.h): ids, listeners
 * and channels around cm_conn.c's state machine, on the control lcore.
 * MADs from QP1 (cm_gsi.c) are matched to an id by the comm id they name
 * as ours, or, for a REQ, to a listener by service id; each step of the
 * state machine is applied here: the QP's attributes, the MAD, the timer
 * (an rte_timer on the control lcore), the event. Calls from other
 * threads are handed to the control lcore on a ring, and wait for it.
 */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_random.h>
#include <rte_ring.h>
#include <rte_timer.h>

#include "cm_conn.h"
#include "cm_gsi.h"
#include "droce_cm.h"

extern int droce_cm_logtype;
#define CM_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_cm_logtype, "droce.cm: " fmt "\n", ## __VA_ARGS__)

#define CM_SLOTS 4096                   /* ids at once; a power of two */
#define CM_HALF_OPEN_MAX 1024           /* REQs taken and not yet established */
#define CM_RING_SIZE 1024
#define CM_CALL_WAIT_S 5
#define CM_RESOLVE_S 3                  /* ARP's answer for a connect, at most */
#define CM_TIMEWAIT_KEPT 256            /* timewaits kept after their ids are destroyed */

/* A connection whose id is gone but whose timewait is not over yet: as
 * Linux's CM, its peer's QP may not connect again until then.
 */
struct cm_timewait {
	uint32_t ip, qpn;
	uint64_t until;                 /* timer cycles; 0: a free entry */
};

struct droce_cm_channel {
	struct droce_cm *cm;
	struct rte_ring *events;        /* struct droce_cm_event *, control lcore -> application */
	int efd;
	uint32_t nb_ids;
};

struct droce_cm_id {
	struct droce_cm *cm;
	struct droce_cm_channel *ch;
	void *context;
	/* The application's reference and one for each event naming the id
	 * that waits on a channel: a destroyed id lives on (dead) until the
	 * events that name it are taken. Atomic.
	 */
	uint32_t refs;
	bool dead;                      /* atomic */
	uint32_t slot;                  /* in cm->id; CM_SLOTS: not yet */
	bool listening;
	uint16_t port;
	bool half_open;                 /* counted in cm->half_open */
	struct cm_conn conn;
	struct droce_qp *qp;
	uint32_t peer_ip;
	struct rte_timer timer;
	/* A connect waits for ARP before its REQ, as rdma_connect follows
	 * rdma_resolve_addr: a REQ lost to an unresolved neighbour would
	 * wait out a whole CM response timeout.
	 */
	bool resolving;
	bool arp_failed;                /* UNREACHABLE: ARP had no answer */
	uint64_t resolve_until;         /* timer cycles */
	struct cm_req req;
	struct cm_conn_param param;
};

struct droce_cm {
	struct droce_stack *stack;
	uint16_t port;
	uint32_t ip;
	enum droce_mtu mtu;             /* the largest path MTU the port carries */
	struct cm_gsi *gsi;
	struct rte_ring *calls;         /* struct cm_call *, threads -> control lcore */
	struct droce_cm_id *id[CM_SLOTS];
	uint32_t hint;
	uint32_t nb_ids, nb_channels, half_open;
	struct droce_cm_stats stats;
	struct cm_timewait timewait[CM_TIMEWAIT_KEPT];
	uint32_t timewait_next;
};

/* A call handed to the control lcore. */
enum cm_call_op { CALL_LISTEN, CALL_CONNECT, CALL_ACCEPT, CALL_REJECT, CALL_DISCONNECT,
		  CALL_DESTROY };

/* A call handed over: QUEUED -> RUNNING -> DONE, or QUEUED -> ABANDONED by
 * a caller that gave up waiting (the control lcore then frees it).
 */
enum cm_call_state { CALL_QUEUED, CALL_RUNNING, CALL_DONE, CALL_ABANDONED };

struct cm_call {
	enum cm_call_op op;
	struct droce_cm_id *id;
	uint32_t ip;
	uint16_t port;
	struct droce_qp *qp;
	struct droce_cm_conn_param param;
	uint8_t pdata[DROCE_CM_PRIVATE_MAX];
	int result;
	uint32_t state;                 /* enum cm_call_state, atomic */
};

/* ---- ids and events ------------------------------------------------------------ */

/* Not the main lcore: in an application's EAL that is the application's. */
static bool
on_control_lcore(const struct droce_cm *cm)
{
	return rte_lcore_id() == droce_control_lcore(cm->stack);
}

/* A comm id for slot @p slot (its low 12 bits), random above them; never
 * 0, which messages use for "none".
 */
static uint32_t
comm_id_for(uint32_t slot)
{
	uint32_t id;

	do
		id = ((uint32_t)rte_rand() & ~(uint32_t)(CM_SLOTS - 1)) | slot;
	while (id == 0);
	return id;
}

/* A slot and a comm id that names it (its low 12 bits). */
static int
id_slot_take(struct droce_cm *cm, struct droce_cm_id *id)
{
	for (uint32_t n = 0; n < CM_SLOTS; n++) {
		uint32_t slot = (cm->hint + n) % CM_SLOTS;

		if (cm->id[slot] == NULL) {
			cm->id[slot] = id;
			cm->hint = slot + 1;
			id->slot = slot;
			id->conn.local_id = comm_id_for(slot);
			return 0;
		}
	}
	return -ENOSPC;
}

static struct droce_cm_id *
id_of_comm_id(const struct droce_cm *cm, uint32_t comm_id)
{
	struct droce_cm_id *id = cm->id[comm_id & (CM_SLOTS - 1)];

	return id != NULL && id->conn.local_id == comm_id ? id : NULL;
}

static void
id_get(struct droce_cm_id *id)
{
	if (id != NULL)
		__atomic_fetch_add(&id->refs, 1, __ATOMIC_RELAXED);
}

static void
id_put(struct droce_cm_id *id)
{
	if (id != NULL && __atomic_fetch_sub(&id->refs, 1, __ATOMIC_ACQ_REL) == 1)
		free(id);
}

static void
post_event(struct droce_cm_channel *ch, const struct droce_cm_event *ev)
{
	struct droce_cm_event *copy = malloc(sizeof(*copy));
	uint64_t one = 1;

	if (copy == NULL)
		return; /* out of memory: lost */
	/* Whole before it is on the ring: the application may take it at once. */
	*copy = *ev;
	id_get(copy->id);
	id_get(copy->listen_id);
	if (rte_ring_enqueue(ch->events, copy) != 0) {
		id_put(copy->id);
		id_put(copy->listen_id);
		free(copy);
		return; /* the application does not take its events: lost */
	}
	if (write(ch->efd, &one, sizeof(one)) < 0)
		return;
}

static void
half_open_end(struct droce_cm_id *id)
{
	if (id->half_open) {
		id->half_open = false;
		id->cm->half_open--;
	}
}

static void timer_expired(struct rte_timer *t, void *arg);

/* What a step of the state machine asks for, in its order: the QP (the
 * message may be an RTU or REP the peer answers at once), the MAD, the
 * timer, the event.
 */
static void
apply(struct droce_cm_id *id, const struct cm_step *s)
{
	struct droce_cm *cm = id->cm;

	if (s->set_qp && id->qp != NULL) {
		struct droce_qp_attr a = {
			/* At most what this port carries, whatever the REQ says. */
			.qp_state = DROCE_QPS_RTR,
			.path_mtu = (enum droce_mtu)RTE_MIN((uint32_t)s->qp.path_mtu,
							    (uint32_t)cm->mtu),
			.dest_qp_num = s->qp.dest_qpn, .rq_psn = s->qp.rq_psn,
			.max_dest_rd_atomic = s->qp.max_dest_rd_atomic,
			.min_rnr_timer = s->qp.min_rnr_timer, .ah_attr = { .hop_limit = 64 },
		};

		droce_gid_from_ipv4(id->peer_ip, a.ah_attr.dgid);
		if (droce_modify_qp(id->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
				    DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
				    DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER) != 0)
			CM_LOG(ERR, "QP 0x%x: RTR refused (the droce.rc line above says why)",
			       droce_qp_num(id->qp));
		a = (struct droce_qp_attr){
			.qp_state = DROCE_QPS_RTS, .sq_psn = s->qp.sq_psn, .timeout = s->qp.timeout,
			.retry_cnt = s->qp.retry_cnt, .rnr_retry = s->qp.rnr_retry,
			.max_rd_atomic = s->qp.max_rd_atomic,
		};
		if (droce_modify_qp(id->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
				    DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
				    DROCE_QP_MAX_QP_RD_ATOMIC) != 0)
			CM_LOG(ERR, "QP 0x%x: RTS refused (the droce.rc line above says why)",
			       droce_qp_num(id->qp));
	}
	if (s->send)
		cm_gsi_send(cm->gsi, id->peer_ip, &s->msg);
	if (s->timer_change && s->timer_ms != 0)
		rte_timer_reset(&id->timer, rte_get_timer_hz() / 1000 * s->timer_ms, SINGLE,
				droce_control_lcore(cm->stack), timer_expired, id);
	else if (s->timer_change)
		rte_timer_stop(&id->timer);
	if (s->event == CM_EV_NONE || s->event == CM_EV_CONNECT_REQUEST)
		return;
	{
		struct droce_cm_event ev = { .id = id, .peer_ip = id->peer_ip };

		switch (s->event) {
		case CM_EV_ESTABLISHED:
			ev.event = DROCE_CM_EVENT_ESTABLISHED;
			cm->stats.established++;
			half_open_end(id);
			break;
		case CM_EV_REJECTED:
			ev.event = DROCE_CM_EVENT_REJECTED;
			ev.status = s->rej_reason;
			half_open_end(id);
			break;
		case CM_EV_UNREACHABLE:
			ev.event = DROCE_CM_EVENT_UNREACHABLE;
			ev.status = id->arp_failed ? -EHOSTUNREACH : -ETIMEDOUT;
			cm->stats.unreachable++;
			half_open_end(id);
			break;
		case CM_EV_DISCONNECTED:
			ev.event = DROCE_CM_EVENT_DISCONNECTED;
			/* As rdma_cm: the peer's DREQ stops the QP too. */
			if (id->qp != NULL) {
				struct droce_qp_attr a = { .qp_state = DROCE_QPS_ERR };

				droce_modify_qp(id->qp, &a, DROCE_QP_STATE);
			}
			break;
		default:
			ev.event = DROCE_CM_EVENT_TIMEWAIT_EXIT;
			break;
		}
		if (s->private_data != NULL && s->private_len != 0) {
			ev.private_data_len = (uint8_t)RTE_MIN(s->private_len,
							       (uint32_t)DROCE_CM_PRIVATE_MAX);
			memcpy(ev.private_data, s->private_data, ev.private_data_len);
		}
		post_event(id->ch, &ev);
	}
}

static int resolve_step(struct droce_cm_id *id);

static void
timer_expired(struct rte_timer *t, void *arg)
{
	struct droce_cm_id *id = arg;
	struct cm_step s;

	(void)t;
	if (id->resolving) {
		if (resolve_step(id) != 0) {
			s = (struct cm_step){ .event = CM_EV_UNREACHABLE };
			id->arp_failed = true;
			apply(id, &s);
		}
		return;
	}
	cm_conn_timeout(&id->conn, &s);
	apply(id, &s);
}

/* ---- MADs from QP1 ------------------------------------------------------------- */

static void
send_reply(struct droce_cm *cm, uint32_t ip, const struct cm_msg *m)
{
	cm_gsi_send(cm->gsi, ip, m);
}

static void
reject_req(struct droce_cm *cm, const struct cm_msg *req, uint32_t ip, uint16_t reason)
{
	struct cm_msg rej = { .hdr = { .tid = req->hdr.tid, .attr_id = CM_ATTR_REJ } };

	rej.rej = (struct cm_rej){ .remote_comm_id = req->req.local_comm_id,
				   .msg_rejected = CM_MSG_REQ, .reason = reason };
	if (reason == CM_REJ_INVALID_GID) {
		/* As Linux: the additional information is the GID we have. */
		droce_gid_from_ipv4(cm->ip, rej.rej.ari);
		rej.rej.ari_length = 16;
	}
	send_reply(cm, ip, &rej);
}

/* Whether a connection to @p ip's QP @p qpn is in timewait, its id kept
 * or destroyed.
 */
static bool
in_timewait(const struct droce_cm *cm, uint32_t ip, uint32_t qpn)
{
	uint64_t now = rte_get_timer_cycles();

	for (uint32_t n = 0; n < CM_SLOTS; n++) {
		struct droce_cm_id *id = cm->id[n];

		if (id != NULL && !id->listening && id->peer_ip == ip &&
		    id->conn.remote_qpn == qpn && id->conn.state == CM_TIMEWAIT)
			return true;
	}
	for (uint32_t n = 0; n < CM_TIMEWAIT_KEPT; n++) {
		const struct cm_timewait *t = &cm->timewait[n];

		if (t->until > now && t->ip == ip && t->qpn == qpn)
			return true;
	}
	return false;
}

/* An id destroyed before its timewait is over leaves the rest of it here
 * (the oldest entry makes room when all are taken).
 */
static void
timewait_keep(struct droce_cm *cm, const struct droce_cm_id *id)
{
	uint64_t expiry;

	if (id->conn.state != CM_TIMEWAIT && id->conn.state != CM_DREQ_SENT)
		return;
	/* The whole of it from now: a little longer than what was left. */
	expiry = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * cm_conn_timewait_ms();
	cm->timewait[cm->timewait_next] = (struct cm_timewait){
		.ip = id->peer_ip, .qpn = id->conn.remote_qpn, .until = expiry };
	cm->timewait_next = (cm->timewait_next + 1) % CM_TIMEWAIT_KEPT;
}

static struct droce_cm_id *
listener_of(const struct droce_cm *cm, uint64_t service_id)
{
	if ((service_id >> 16) != CM_PS_TCP)
		return NULL;
	for (uint32_t s = 0; s < CM_SLOTS; s++) {
		struct droce_cm_id *id = cm->id[s];

		if (id != NULL && id->listening && id->port == (uint16_t)service_id)
			return id;
	}
	return NULL;
}

/* A REQ: a duplicate of one taken, or a new connection for a listener. */
static void
req_input(struct droce_cm *cm, const struct cm_msg *msg, const struct cm_gsi_from *from)
{
	struct droce_cm_event ev = { .event = DROCE_CM_EVENT_CONNECT_REQUEST,
				     .peer_ip = from->ip };
	struct droce_cm_id *listener, *id;
	uint8_t gid[16];
	uint32_t dst;
	struct cm_rdma_hdr h;
	struct cm_step s;

	/* In Linux's order: the QP's last connection here has not yet waited
	 * out its late packets (this REQ again included), then a duplicate,
	 * then the listener, then what the REQ asks for.
	 */
	if (in_timewait(cm, from->ip, msg->req.local_qpn)) {
		cm->stats.rejected_stale++;
		return reject_req(cm, msg, from->ip, CM_REJ_STALE_CONN);
	}
	for (uint32_t n = 0; n < CM_SLOTS; n++) {
		id = cm->id[n];
		if (id != NULL && !id->listening && id->peer_ip == from->ip &&
		    id->conn.remote_id == msg->req.local_comm_id && !id->conn.active) {
			cm_conn_input(&id->conn, msg, &s);
			return apply(id, &s);
		}
	}
	listener = listener_of(cm, msg->req.service_id);
	if (listener == NULL) {
		cm->stats.rejected_no_listener++;
		return reject_req(cm, msg, from->ip, CM_REJ_INVALID_SERVICE_ID);
	}
	droce_gid_from_ipv4(cm->ip, gid);
	if (memcmp(msg->req.primary.remote_gid, gid, sizeof(gid)) != 0) {
		cm->stats.rejected_invalid_gid++;
		return reject_req(cm, msg, from->ip, CM_REJ_INVALID_GID);
	}
	/* rdma_cm's header, for this address; as Linux, a REQ it cannot take
	 * is refused as its consumer would. A path MTU this port does not
	 * carry is refused too: the peer would send what we cannot take.
	 */
	cm_rdma_hdr_decode(msg->req.private_data, &h);
	if (h.version != 0 || h.ip_version != 4 || !cm_rdma_addr_to_ipv4(h.dst_addr, &dst) ||
	    dst != cm->ip) {
		cm->stats.rejected_bad_header++;
		return reject_req(cm, msg, from->ip, CM_REJ_CONSUMER_DEFINED);
	}
	if (msg->req.path_mtu < DROCE_MTU_256 || msg->req.path_mtu > cm->mtu) {
		cm->stats.rejected_bad_header++;
		return reject_req(cm, msg, from->ip, CM_REJ_INVALID_MTU);
	}
	/* Bounded: half-open connections, and room for the event that
	 * announces this one (an id the application never hears of would
	 * never be destroyed).
	 */
	id = cm->half_open < CM_HALF_OPEN_MAX && rte_ring_free_count(listener->ch->events) != 0
	     ? calloc(1, sizeof(*id)) : NULL;
	if (id == NULL || id_slot_take(cm, id) != 0) {
		free(id);
		cm->stats.rejected_no_resources++;
		return reject_req(cm, msg, from->ip, CM_REJ_NO_RESOURCES);
	}
	*id = (struct droce_cm_id){ .cm = cm, .ch = listener->ch, .context = listener->context,
				    .refs = 1, .slot = id->slot, .peer_ip = from->ip, .half_open = true,
				    .conn = { .local_id = id->conn.local_id } };
	rte_timer_init(&id->timer);
	cm->half_open++;
	__atomic_fetch_add(&cm->nb_ids, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&listener->ch->nb_ids, 1, __ATOMIC_RELAXED);
	cm->stats.connect_requests++;
	cm_conn_req_received(&id->conn, id->conn.local_id, msg, &s);
	apply(id, &s);
	ev.id = id;
	ev.listen_id = listener;
	ev.peer_port = h.src_port;
	ev.responder_resources = msg->req.responder_resources;
	ev.initiator_depth = msg->req.initiator_depth;
	ev.private_data_len = CM_RDMA_REQ_USER;
	memcpy(ev.private_data, msg->req.private_data + CM_RDMA_HDR_SIZE, CM_RDMA_REQ_USER);
	post_event(listener->ch, &ev);
}

/* The comm id a message names as ours (0: none). */
static uint32_t
ours(const struct cm_msg *m)
{
	switch (m->hdr.attr_id) {
	case CM_ATTR_REP: return m->rep.remote_comm_id;
	case CM_ATTR_REJ: return m->rej.remote_comm_id;
	case CM_ATTR_MRA: return m->mra.remote_comm_id;
	case CM_ATTR_RTU: return m->rtu.remote_comm_id;
	case CM_ATTR_DREQ: return m->dreq.remote_comm_id;
	case CM_ATTR_DREP: return m->drep.remote_comm_id;
	default: return 0;
	}
}

/* The comm id a message names as its sender's (0: none). */
static uint32_t
theirs(const struct cm_msg *m)
{
	switch (m->hdr.attr_id) {
	case CM_ATTR_REP: return m->rep.local_comm_id;
	case CM_ATTR_REJ: return m->rej.local_comm_id;
	case CM_ATTR_MRA: return m->mra.local_comm_id;
	case CM_ATTR_RTU: return m->rtu.local_comm_id;
	case CM_ATTR_DREQ: return m->dreq.local_comm_id;
	case CM_ATTR_DREP: return m->drep.local_comm_id;
	default: return 0;
	}
}

/* A message for @p id from its peer's side of this connection, not a late
 * one of an earlier connection (the REP tells an active id which it is).
 */
static bool
from_this_connection(const struct droce_cm_id *id, const struct cm_msg *msg,
		     const struct cm_gsi_from *from)
{
	if (id->peer_ip != from->ip)
		return false;
	if (msg->hdr.attr_id == CM_ATTR_REP || id->conn.remote_id == 0 || theirs(msg) == 0)
		return true;
	return theirs(msg) == id->conn.remote_id;
}

/* The passive id answering @p ip's connection @p remote_id; a REJ of a
 * REQ the peer gave up names only that (Linux sends it from a destroyed id).
 */
static struct droce_cm_id *
passive_of(const struct droce_cm *cm, uint32_t ip, uint32_t remote_id)
{
	for (uint32_t n = 0; n < CM_SLOTS; n++) {
		struct droce_cm_id *id = cm->id[n];

		if (id != NULL && !id->listening && !id->conn.active && id->peer_ip == ip &&
		    id->conn.remote_id == remote_id && id->conn.state != CM_IDLE)
			return id;
	}
	return NULL;
}

static void
mad_input(void *arg, const struct cm_msg *msg, const struct cm_gsi_from *from)
{
	struct droce_cm *cm = arg;
	struct droce_cm_id *id;
	struct cm_step s;

	if (msg->hdr.attr_id == CM_ATTR_REQ)
		return req_input(cm, msg, from);
	id = id_of_comm_id(cm, ours(msg));
	if (id == NULL && msg->hdr.attr_id == CM_ATTR_REJ && msg->rej.remote_comm_id == 0)
		id = passive_of(cm, from->ip, msg->rej.local_comm_id);
	if (id != NULL && from_this_connection(id, msg, from)) {
		cm_conn_input(&id->conn, msg, &s);
		return apply(id, &s);
	}
	if (msg->hdr.attr_id == CM_ATTR_DREQ) {
		/* A connection already gone: its DREP, so the peer stops. */
		struct cm_msg drep = { .hdr = { .tid = msg->hdr.tid, .attr_id = CM_ATTR_DREP } };

		drep.drep = (struct cm_drep){ .local_comm_id = msg->dreq.remote_comm_id,
					      .remote_comm_id = msg->dreq.local_comm_id };
		cm->stats.drep_unknown++;
		return send_reply(cm, from->ip, &drep);
	}
	cm->stats.stray++;
}

/* ---- the calls, on the control lcore -------------------------------------------- */

/* An id made on another thread gets its slot on the control lcore. */
static int
id_placed(struct droce_cm_id *id)
{
	return id->slot < CM_SLOTS ? 0 : id_slot_take(id->cm, id);
}

static int
call_listen(struct droce_cm_id *id, uint16_t port)
{
	if (port == 0 || id->listening || id->conn.state != CM_IDLE || id->resolving)
		return -EINVAL;
	if (id_placed(id) != 0)
		return -ENOSPC;
	if (listener_of(id->cm, cm_service_id(CM_PS_TCP, port)) != NULL)
		return -EADDRINUSE;
	id->listening = true;
	id->port = port;
	return 0;
}

static int
call_connect(struct droce_cm_id *id, const struct cm_call *c)
{
	struct droce_cm *cm = id->cm;
	struct cm_conn_param p = {
		.responder_resources = c->param.responder_resources,
		.initiator_depth = c->param.initiator_depth,
		.retry_count = c->param.retry_count, .rnr_retry_count = c->param.rnr_retry_count,
		.cm_response_timeout = c->param.cm_response_timeout,
		.max_cm_retries = c->param.max_cm_retries,
		.ack_timeout = c->param.ack_timeout,
	};
	struct cm_rdma_hdr h = { .version = 0, .ip_version = 4,
				 .src_port = (uint16_t)(32768 + rte_rand() % 28232) };
	struct cm_req req = { .service_id = cm_service_id(CM_PS_TCP, c->port),
			      .local_ca_guid = 0x0200000000000000ull | cm->ip, .pkey = 0xffff,
			      .path_mtu = (uint8_t)cm->mtu,
			      .primary = { .local_lid = 0xffff, .remote_lid = 0xffff,
					   .hop_limit = 64 } };

	if (id->listening || id->conn.state != CM_IDLE || id->resolving || c->qp == NULL)
		return -EINVAL;
	if (id_placed(id) != 0)
		return -ENOSPC;
	/* A comm id (and so TIDs) of its own for each connection an id makes:
	 * late answers to the last one cannot be taken for this one's.
	 */
	id->conn.local_id = comm_id_for(id->slot);
	id->qp = c->qp;
	id->peer_ip = c->ip;
	req.local_qpn = droce_qp_num(c->qp);
	req.starting_psn = (uint32_t)rte_rand() & 0xffffff;
	droce_gid_from_ipv4(cm->ip, req.primary.local_gid);
	droce_gid_from_ipv4(c->ip, req.primary.remote_gid);
	cm_rdma_addr_from_ipv4(cm->ip, h.src_addr);
	cm_rdma_addr_from_ipv4(c->ip, h.dst_addr);
	cm_rdma_hdr_encode(&h, req.private_data);
	memcpy(req.private_data + CM_RDMA_HDR_SIZE, c->pdata, c->param.private_data_len);
	id->req = req;
	id->param = p;
	id->resolving = true;
	id->arp_failed = false;
	id->resolve_until = rte_get_timer_cycles() + rte_get_timer_hz() * CM_RESOLVE_S;
	return resolve_step(id);
}

/* The REQ out once ARP knows the peer; else wait a millisecond more.
 * @return 0, or -ENETUNREACH / -ETIMEDOUT when it cannot be sent.
 */
static int
resolve_step(struct droce_cm_id *id)
{
	struct droce_cm *cm = id->cm;
	int ret = droce_neigh_ready(droce_control_ctx(cm->stack), cm->port, id->peer_ip);
	struct cm_step s;

	if (ret == -EAGAIN && rte_get_timer_cycles() < id->resolve_until) {
		rte_timer_reset(&id->timer, rte_get_timer_hz() / 1000, SINGLE,
				droce_control_lcore(cm->stack), timer_expired, id);
		return 0;
	}
	id->resolving = false;
	if (ret != 0)
		return ret == -EAGAIN ? -ETIMEDOUT : ret;
	cm_conn_connect(&id->conn, id->conn.local_id, &id->req, &id->param, &s);
	apply(id, &s);
	return 0;
}

static int
call_accept(struct droce_cm_id *id, const struct cm_call *c)
{
	struct cm_conn_param p = {
		.responder_resources = c->param.responder_resources,
		.initiator_depth = c->param.initiator_depth,
		.retry_count = c->param.retry_count, .rnr_retry_count = c->param.rnr_retry_count,
		.ack_timeout = c->param.ack_timeout,
		.private_data = c->pdata, .private_len = c->param.private_data_len,
	};
	struct cm_step s;

	if (id->conn.state != CM_REQ_RCVD || c->qp == NULL)
		return -EINVAL;
	id->qp = c->qp;
	cm_conn_accept(&id->conn, droce_qp_num(c->qp), (uint32_t)rte_rand() & 0xffffff, &p, &s);
	apply(id, &s);
	return 0;
}

static int
call_reject(struct droce_cm_id *id, const struct cm_call *c)
{
	struct cm_step s;

	if (id->conn.state != CM_REQ_RCVD)
		return -EINVAL;
	cm_conn_reject(&id->conn, c->pdata, c->param.private_data_len, &s);
	apply(id, &s);
	half_open_end(id);
	return 0;
}

static int
call_disconnect(struct droce_cm_id *id)
{
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_ERR };
	struct cm_step s;

	if (id->conn.state != CM_ESTABLISHED && id->conn.state != CM_DREQ_SENT &&
	    id->conn.state != CM_TIMEWAIT)
		return -EINVAL;
	/* As rdma_disconnect: the QP stops first, then the DREQ. When the
	 * peer's DREQ came first (answered already) or ours is out, there is
	 * nothing more to send, and that is no error either.
	 */
	if (id->qp != NULL)
		droce_modify_qp(id->qp, &a, DROCE_QP_STATE);
	if (id->conn.state == CM_ESTABLISHED) {
		cm_conn_disconnect(&id->conn, &s);
		apply(id, &s);
	}
	return 0;
}

static int
call_destroy(struct droce_cm_id *id)
{
	struct droce_cm *cm = id->cm;
	struct cm_step s;

	rte_timer_stop_sync(&id->timer);
	timewait_keep(cm, id);
	cm_conn_destroyed(&id->conn, &s);
	if (s.send)
		cm_gsi_send(cm->gsi, id->peer_ip, &s.msg);
	half_open_end(id);
	if (id->slot < CM_SLOTS)
		cm->id[id->slot] = NULL;
	__atomic_fetch_sub(&cm->nb_ids, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&id->ch->nb_ids, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&id->dead, true, __ATOMIC_RELEASE);
	id_put(id);
	return 0;
}

static int
call_run(struct cm_call *c)
{
	switch (c->op) {
	case CALL_LISTEN: return call_listen(c->id, c->port);
	case CALL_CONNECT: return call_connect(c->id, c);
	case CALL_ACCEPT: return call_accept(c->id, c);
	case CALL_REJECT: return call_reject(c->id, c);
	case CALL_DISCONNECT: return call_disconnect(c->id);
	case CALL_DESTROY: return call_destroy(c->id);
	}
	return -EINVAL;
}

/* Run @p c on the control lcore: here, or handed over and waited for. */
static int
call(struct droce_cm *cm, struct cm_call *c)
{
	double until;

	struct cm_call *h;
	uint32_t queued = CALL_QUEUED;
	int result;

	if (on_control_lcore(cm))
		return call_run(c);
	/* On the heap: a caller that gives up must leave nothing the control
	 * lcore could still write to.
	 */
	h = malloc(sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	*h = *c;
	h->state = CALL_QUEUED;
	if (rte_ring_mp_enqueue(cm->calls, h) != 0) {
		free(h);
		return -EAGAIN;
	}
	droce_control_wake(cm->stack);
	until = (double)rte_get_timer_cycles() + (double)rte_get_timer_hz() * CM_CALL_WAIT_S;
	while (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != CALL_DONE) {
		if ((double)rte_get_timer_cycles() > until &&
		    __atomic_compare_exchange_n(&h->state, &queued, CALL_ABANDONED, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return -ETIMEDOUT; /* the control lcore does not run */
		queued = CALL_QUEUED;
		sched_yield();
	}
	result = h->result;
	free(h);
	return result;
}

static unsigned int
calls_round(struct droce_lcore_ctx *ctx, void *arg)
{
	struct droce_cm *cm = arg;
	struct cm_call *c;
	unsigned int n = 0;

	(void)ctx;
	while (rte_ring_sc_dequeue(cm->calls, (void **)&c) == 0) {
		uint32_t queued = CALL_QUEUED;

		if (!__atomic_compare_exchange_n(&c->state, &queued, CALL_RUNNING, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			free(c); /* its caller gave up */
			continue;
		}
		c->result = call_run(c);
		__atomic_store_n(&c->state, CALL_DONE, __ATOMIC_RELEASE);
		n++;
	}
	return n;
}

/* ---- the API ------------------------------------------------------------------- */

struct droce_cm *
droce_cm_open(struct droce_stack *stack, uint16_t port, char *err, size_t errlen)
{
	struct droce_cm *cm = calloc(1, sizeof(*cm));
	char name[RTE_RING_NAMESIZE];
	uint16_t ip_mtu;

	if (cm == NULL) {
		snprintf(err, errlen, "CM: out of memory");
		return NULL;
	}
	cm->stack = stack;
	cm->port = port;
	cm->gsi = cm_gsi_open(stack, port, mad_input, cm, err, errlen);
	if (cm->gsi == NULL) {
		free(cm);
		return NULL;
	}
	cm->ip = droce_port_addr(stack, port);
	ip_mtu = droce_port_mtu(stack, port);
	cm->mtu = DROCE_MTU_4096;
	while (cm->mtu > DROCE_MTU_256 && droce_mtu_to_bytes(cm->mtu) + 80 > ip_mtu)
		cm->mtu--;
	snprintf(name, sizeof(name), "cm_calls_%p", (void *)cm);
	cm->calls = rte_ring_create(name, CM_RING_SIZE, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (cm->calls == NULL ||
	    droce_control_hook_register(stack, calls_round, cm) != 0) {
		snprintf(err, errlen, "CM: no call ring or control hook (open it before the stack starts)");
		droce_cm_close(cm);
		return NULL;
	}
	return cm;
}

int
droce_cm_close(struct droce_cm *cm)
{
	struct cm_call *c;

	if (cm == NULL)
		return 0;
	if (cm->nb_ids != 0 || cm->nb_channels != 0)
		return -EBUSY;
	droce_control_hook_unregister(cm->stack, calls_round, cm);
	cm_gsi_close(cm->gsi);
	/* What is left are calls whose callers gave up waiting. */
	while (rte_ring_sc_dequeue(cm->calls, (void **)&c) == 0)
		free(c);
	rte_ring_free(cm->calls);
	free(cm);
	return 0;
}

const char *
droce_cm_event_str(enum droce_cm_event_type event)
{
	static const char *const names[] = {
		[DROCE_CM_EVENT_CONNECT_REQUEST] = "CONNECT_REQUEST",
		[DROCE_CM_EVENT_ESTABLISHED] = "ESTABLISHED",
		[DROCE_CM_EVENT_REJECTED] = "REJECTED",
		[DROCE_CM_EVENT_UNREACHABLE] = "UNREACHABLE",
		[DROCE_CM_EVENT_DISCONNECTED] = "DISCONNECTED",
		[DROCE_CM_EVENT_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	};

	return (unsigned int)event < RTE_DIM(names) ? names[event] : "UNKNOWN";
}

void
droce_cm_stats(const struct droce_cm *cm, struct droce_cm_stats *stats)
{
	*stats = cm->stats;
	stats->ids = __atomic_load_n(&cm->nb_ids, __ATOMIC_RELAXED);
	stats->half_open = __atomic_load_n(&cm->half_open, __ATOMIC_RELAXED);
}

struct droce_cm_channel *
droce_cm_create_channel(struct droce_cm *cm)
{
	struct droce_cm_channel *ch = calloc(1, sizeof(*ch));
	char name[RTE_RING_NAMESIZE];

	if (ch == NULL)
		return NULL;
	ch->cm = cm;
	snprintf(name, sizeof(name), "cm_ev_%p", (void *)ch);
	ch->events = rte_ring_create(name, CM_RING_SIZE, SOCKET_ID_ANY,
				     RING_F_SP_ENQ | RING_F_SC_DEQ);
	ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->events == NULL || ch->efd < 0) {
		rte_ring_free(ch->events);
		if (ch->efd >= 0)
			close(ch->efd);
		free(ch);
		return NULL;
	}
	__atomic_fetch_add(&cm->nb_channels, 1, __ATOMIC_RELAXED);
	return ch;
}

int
droce_cm_destroy_channel(struct droce_cm_channel *ch)
{
	struct droce_cm_event *ev;

	if (__atomic_load_n(&ch->nb_ids, __ATOMIC_RELAXED) != 0)
		return -EBUSY;
	/* All its ids are destroyed: what names them here is all that keeps them. */
	while (rte_ring_dequeue(ch->events, (void **)&ev) == 0) {
		id_put(ev->id);
		id_put(ev->listen_id);
		free(ev);
	}
	rte_ring_free(ch->events);
	close(ch->efd);
	__atomic_fetch_sub(&ch->cm->nb_channels, 1, __ATOMIC_RELAXED);
	free(ch);
	return 0;
}

int
droce_cm_channel_fd(const struct droce_cm_channel *ch)
{
	return ch->efd;
}

int
droce_cm_get_event(struct droce_cm_channel *ch, struct droce_cm_event *ev)
{
	struct droce_cm_event *e;
	uint64_t n = 1;
	bool stale;

	do {
		if (rte_ring_dequeue(ch->events, (void **)&e) != 0) {
			/* Empty: the eventfd is read down, so poll() waits again;
			 * what came meanwhile makes it readable once more.
			 */
			if (read(ch->efd, &n, sizeof(n)) < 0 ||
			    rte_ring_dequeue(ch->events, (void **)&e) != 0)
				return -EAGAIN;
			n = 1;
			if (!rte_ring_empty(ch->events) && write(ch->efd, &n, sizeof(n)) < 0)
				n = 0;
		}
		*ev = *e;
		free(e);
		/* An id destroyed since: its event is no news to anyone; a
		 * connect request whose listener is gone is refused.
		 */
		stale = __atomic_load_n(&ev->id->dead, __ATOMIC_ACQUIRE) ||
			(ev->listen_id != NULL &&
			 __atomic_load_n(&ev->listen_id->dead, __ATOMIC_ACQUIRE));
		if (stale && ev->event == DROCE_CM_EVENT_CONNECT_REQUEST &&
		    !__atomic_load_n(&ev->id->dead, __ATOMIC_ACQUIRE))
			droce_cm_destroy_id(ev->id);
		id_put(ev->id);
		id_put(ev->listen_id);
	} while (stale);
	return 0;
}

struct droce_cm_id *
droce_cm_create_id(struct droce_cm_channel *ch, void *context)
{
	struct droce_cm_id *id = calloc(1, sizeof(*id));

	if (id == NULL)
		return NULL;
	*id = (struct droce_cm_id){ .cm = ch->cm, .ch = ch, .context = context, .refs = 1 };
	rte_timer_init(&id->timer);
	/* The table is the control lcore's: a slot from here is taken there. */
	if (on_control_lcore(ch->cm)) {
		if (id_slot_take(ch->cm, id) != 0) {
			free(id);
			return NULL;
		}
	} else {
		id->slot = CM_SLOTS;
	}
	__atomic_fetch_add(&ch->cm->nb_ids, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ch->nb_ids, 1, __ATOMIC_RELAXED);
	return id;
}

void *
droce_cm_id_context(const struct droce_cm_id *id)
{
	return id->context;
}

int
droce_cm_listen(struct droce_cm_id *id, uint16_t port)
{
	struct cm_call c = { .op = CALL_LISTEN, .id = id, .port = port };

	return call(id->cm, &c);
}

/* @p param into @p c, its private data at most @p max bytes. */
static int
take_param(struct cm_call *c, const struct droce_cm_conn_param *param, uint32_t max)
{
	if (param == NULL || param->private_data_len > max ||
	    (param->private_data_len != 0 && param->private_data == NULL) ||
	    param->ack_timeout > 31)
		return -EINVAL;
	c->param = *param;
	if (param->private_data_len != 0)
		memcpy(c->pdata, param->private_data, param->private_data_len);
	return 0;
}

int
droce_cm_connect(struct droce_cm_id *id, uint32_t dst_ip, uint16_t port, struct droce_qp *qp,
		 const struct droce_cm_conn_param *param)
{
	struct cm_call c = { .op = CALL_CONNECT, .id = id, .ip = dst_ip, .port = port, .qp = qp };

	if (port == 0 || dst_ip == 0 || take_param(&c, param, CM_RDMA_REQ_USER) != 0 ||
	    param->cm_response_timeout > 31 || param->max_cm_retries > 15)
		return -EINVAL;
	return call(id->cm, &c);
}

int
droce_cm_accept(struct droce_cm_id *id, struct droce_qp *qp,
		const struct droce_cm_conn_param *param)
{
	struct cm_call c = { .op = CALL_ACCEPT, .id = id, .qp = qp };

	if (take_param(&c, param, CM_REP_PRIVATE) != 0)
		return -EINVAL;
	return call(id->cm, &c);
}

int
droce_cm_reject(struct droce_cm_id *id, const void *private_data, uint8_t len)
{
	struct cm_call c = { .op = CALL_REJECT, .id = id, .param = { .private_data_len = len } };

	RTE_BUILD_BUG_ON(DROCE_CM_REJECT_PRIVATE_MAX != CM_REJ_PRIVATE);
	if (len > CM_REJ_PRIVATE || (len != 0 && private_data == NULL))
		return -EINVAL;
	if (len != 0)
		memcpy(c.pdata, private_data, len);
	return call(id->cm, &c);
}

int
droce_cm_disconnect(struct droce_cm_id *id)
{
	struct cm_call c = { .op = CALL_DISCONNECT, .id = id };

	return call(id->cm, &c);
}

int
droce_cm_destroy_id(struct droce_cm_id *id)
{
	struct cm_call c = { .op = CALL_DESTROY, .id = id };

	return call(id->cm, &c);
}
