/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The connection state machine (see cm_conn.h). Each state has a small
 * function per thing that can happen to it; what does not apply to a
 * state is ignored, as a duplicate or a stray message should be.
 *
 *   active:  IDLE -connect-> REQ_SENT -REP/RTU-> ESTABLISHED
 *            REQ_SENT -MRA-> MRA_REQ_RCVD -REP-> ESTABLISHED
 *            REQ_SENT, MRA_REQ_RCVD -REJ-> IDLE; -retries out-> IDLE
 *   passive: IDLE -REQ-> REQ_RCVD -accept/REP-> REP_SENT -RTU-> ESTABLISHED
 *            REQ_RCVD -reject/REJ-> IDLE; REP_SENT -retries out-> IDLE
 *   both:    ESTABLISHED -disconnect/DREQ-> DREQ_SENT -DREP-> TIMEWAIT
 *            ESTABLISHED, DREQ_SENT -DREQ/DREP-> TIMEWAIT -timer-> IDLE
 *
 * A REQ's or REP's starting PSN is the one its sender expects first (its
 * receive PSN): the other side sends from it. So Linux's cm.c and rdma_cm
 * read it, and a peer that reads it the other way takes no packet.
 */

#include <string.h>

#include "cm_conn.h"

const char *
cm_state_name(enum cm_state s)
{
	static const char *const names[CM_STATE_MAX] = {
		[CM_IDLE] = "IDLE", [CM_REQ_SENT] = "REQ_SENT",
		[CM_MRA_REQ_RCVD] = "MRA_REQ_RCVD", [CM_REQ_RCVD] = "REQ_RCVD",
		[CM_REP_SENT] = "REP_SENT", [CM_ESTABLISHED] = "ESTABLISHED",
		[CM_DREQ_SENT] = "DREQ_SENT", [CM_TIMEWAIT] = "TIMEWAIT",
	};

	return (unsigned int)s < CM_STATE_MAX ? names[s] : "?";
}

const char *
cm_event_name(enum cm_event e)
{
	static const char *const names[] = {
		[CM_EV_NONE] = "none", [CM_EV_CONNECT_REQUEST] = "CONNECT_REQUEST",
		[CM_EV_ESTABLISHED] = "ESTABLISHED", [CM_EV_REJECTED] = "REJECTED",
		[CM_EV_UNREACHABLE] = "UNREACHABLE", [CM_EV_DISCONNECTED] = "DISCONNECTED",
		[CM_EV_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	};

	return (unsigned int)e < sizeof(names) / sizeof(names[0]) ? names[e] : "?";
}

uint32_t
cm_timeout_ms(uint8_t t)
{
	return 1u << (t > 8 ? (t > 31 ? 23 : t - 8) : 0);
}

/* The active side's local ACK timeout from the REP's target ACK delay
 * @p d and the packet lifetime @p l, as Linux's cm.c works it out.
 */
static uint8_t
active_ack_timeout(uint8_t d, uint8_t l)
{
	unsigned int t = l + 1u;

	if (t >= d)
		t += d >= l;
	else
		t = d + (t >= d - 1u);
	return (uint8_t)(t > 31 ? 31 : t);
}

static uint8_t
min8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

/* Private data into a message: at most its room, none from NULL. */
static void
copy_private(uint8_t *dst, uint32_t room, const uint8_t *src, uint32_t len)
{
	if (src != NULL && len != 0)
		memcpy(dst, src, len < room ? len : room);
}

static void
step_clear(struct cm_step *out)
{
	memset(out, 0, sizeof(*out));
}

/* Arm the timer for @p ms, or stop it (0). */
static void
set_timer(struct cm_step *out, uint32_t ms)
{
	out->timer_change = true;
	out->timer_ms = ms;
}

/* Send @p msg now and again on each timeout, @p retries times. */
static void
send_with_retries(struct cm_conn *c, const struct cm_msg *msg, uint8_t retries,
		  struct cm_step *out)
{
	c->last = *msg;
	c->retries_left = retries;
	out->send = true;
	out->msg = *msg;
	set_timer(out, c->timeout_ms);
}

static void
send_once(const struct cm_msg *msg, struct cm_step *out)
{
	out->send = true;
	out->msg = *msg;
}

static void
event(struct cm_step *out, enum cm_event e, const uint8_t *pdata, uint32_t len)
{
	out->event = e;
	out->private_data = pdata;
	out->private_len = len;
}

uint32_t
cm_conn_timewait_ms(void)
{
	return cm_timeout_ms(CM_LOCAL_ACK_TIMEOUT);
}

/* ---- the application's calls ------------------------------------------------------ */

void
cm_conn_connect(struct cm_conn *c, uint32_t local_id, const struct cm_req *req,
		const struct cm_conn_param *p, struct cm_step *out)
{
	uint8_t response_timeout = p->cm_response_timeout != 0 ? p->cm_response_timeout
								: CM_RESPONSE_TIMEOUT;
	uint8_t retries = p->max_cm_retries != 0 ? p->max_cm_retries : CM_MAX_RETRIES;
	struct cm_msg m = { .hdr = { .attr_id = CM_ATTR_REQ } };

	step_clear(out);
	*c = (struct cm_conn){ .state = CM_REQ_SENT, .active = true, .local_id = local_id,
			       .local_qpn = req->local_qpn, .local_psn = req->starting_psn,
			       .max_retries = retries, .ack_timeout = p->ack_timeout,
			       .responder_resources = p->responder_resources,
			       .initiator_depth = p->initiator_depth };
	c->tid = (uint64_t)1 << 32 | local_id;
	m.hdr.tid = c->tid;
	m.req = *req;
	m.req.local_comm_id = local_id;
	m.req.responder_resources = p->responder_resources;
	m.req.initiator_depth = p->initiator_depth;
	m.req.remote_cm_response_timeout = response_timeout;
	m.req.local_cm_response_timeout = response_timeout;
	m.req.transport = CM_TRANSPORT_RC;
	m.req.retry_count = p->retry_count & 7;
	m.req.rnr_retry_count = p->rnr_retry_count & 7;
	m.req.max_cm_retries = retries;
	m.req.primary.local_ack_timeout = CM_LOCAL_ACK_TIMEOUT;
	c->req = m.req;
	/* A try waits for the REQ's round trip and the peer's answer. */
	c->timeout_ms = 2 * cm_timeout_ms(CM_PACKET_LIFETIME) + cm_timeout_ms(response_timeout);
	send_with_retries(c, &m, retries, out);
}

void
cm_conn_req_received(struct cm_conn *c, uint32_t local_id, const struct cm_msg *req,
		     struct cm_step *out)
{
	step_clear(out);
	*c = (struct cm_conn){ .state = CM_REQ_RCVD, .active = false, .local_id = local_id,
			       .remote_id = req->req.local_comm_id, .tid = req->hdr.tid,
			       .remote_qpn = req->req.local_qpn, .req = req->req,
			       .max_retries = req->req.max_cm_retries,
			       /* A peer's 31 would hold a half-open slot for hours. */
			       .timeout_ms = cm_timeout_ms(min8(req->req.local_cm_response_timeout,
								CM_RESPONSE_TIMEOUT_MAX)) };
	event(out, CM_EV_CONNECT_REQUEST, c->req.private_data, CM_REQ_PRIVATE);
}

void
cm_conn_accept(struct cm_conn *c, uint32_t local_qpn, uint32_t psn,
	       const struct cm_conn_param *p, struct cm_step *out)
{
	struct cm_msg m = { .hdr = { .tid = c->tid, .attr_id = CM_ATTR_REP } };
	const struct cm_req *r = &c->req;

	step_clear(out);
	if (c->state != CM_REQ_RCVD)
		return;
	c->local_qpn = local_qpn;
	c->local_psn = psn;
	/* What the peer asked for, at most what we give. */
	c->responder_resources = min8(p->responder_resources, r->initiator_depth);
	c->initiator_depth = min8(p->initiator_depth, r->responder_resources);
	out->set_qp = true;
	out->qp = (struct cm_qp_attrs){
		.dest_qpn = r->local_qpn, .rq_psn = psn, .sq_psn = r->starting_psn,
		.path_mtu = r->path_mtu, .max_dest_rd_atomic = c->responder_resources,
		.max_rd_atomic = c->initiator_depth, .min_rnr_timer = 0,
		.timeout = p->ack_timeout != 0 ? p->ack_timeout : r->primary.local_ack_timeout,
		.retry_cnt = r->retry_count,
		.rnr_retry = r->rnr_retry_count,
	};
	m.rep = (struct cm_rep){
		.local_comm_id = c->local_id, .remote_comm_id = c->remote_id,
		.local_qpn = local_qpn, .starting_psn = psn,
		.responder_resources = c->responder_resources,
		.initiator_depth = c->initiator_depth, .target_ack_delay = CM_TARGET_ACK_DELAY,
		.rnr_retry_count = p->rnr_retry_count & 7,
	};
	copy_private(m.rep.private_data, CM_REP_PRIVATE, p->private_data, p->private_len);
	c->state = CM_REP_SENT;
	send_with_retries(c, &m, c->max_retries, out);
}

void
cm_conn_reject(struct cm_conn *c, const uint8_t *private_data, uint32_t len,
	       struct cm_step *out)
{
	struct cm_msg m = { .hdr = { .tid = c->tid, .attr_id = CM_ATTR_REJ } };

	step_clear(out);
	if (c->state != CM_REQ_RCVD)
		return;
	/* As Linux's cm_format_rej: from REQ_RCVD, no local comm id. */
	m.rej = (struct cm_rej){ .remote_comm_id = c->remote_id, .msg_rejected = CM_MSG_REQ,
				 .reason = CM_REJ_CONSUMER_DEFINED };
	copy_private(m.rej.private_data, CM_REJ_PRIVATE, private_data, len);
	c->state = CM_IDLE;
	send_once(&m, out);
}

void
cm_conn_destroyed(struct cm_conn *c, struct cm_step *out)
{
	struct cm_msg m = { .hdr = { .tid = c->tid, .attr_id = CM_ATTR_REJ } };

	step_clear(out);
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		/* As Linux: REJ "timeout", our CA GUID as its information. */
		m.rej = (struct cm_rej){ .local_comm_id = c->local_id, .msg_rejected = CM_MSG_OTHER,
					 .reason = CM_REJ_TIMEOUT, .ari_length = 8 };
		for (int i = 0; i < 8; i++)
			m.rej.ari[i] = (uint8_t)(c->req.local_ca_guid >> (56 - 8 * i));
		break;
	case CM_REQ_RCVD:
	case CM_REP_SENT:
		/* As Linux's cm_format_rej: from REQ_RCVD no local comm id and
		 * the REQ rejected; later, "other".
		 */
		m.rej = (struct cm_rej){ .local_comm_id = c->state == CM_REQ_RCVD ? 0 : c->local_id,
					 .remote_comm_id = c->remote_id,
					 .msg_rejected = c->state == CM_REQ_RCVD ? CM_MSG_REQ
					 : CM_MSG_OTHER,
					 .reason = CM_REJ_CONSUMER_DEFINED };
		break;
	case CM_ESTABLISHED:
		/* Sent once: nothing is left here to hear the DREP. */
		m.hdr = (struct cm_mad_hdr){ .tid = (uint64_t)2 << 32 | c->local_id,
					     .attr_id = CM_ATTR_DREQ };
		m.dreq = (struct cm_dreq){ .local_comm_id = c->local_id,
					   .remote_comm_id = c->remote_id,
					   .remote_qpn = c->remote_qpn };
		break;
	default:
		return;
	}
	c->state = CM_IDLE;
	set_timer(out, 0);
	send_once(&m, out);
}

void
cm_conn_disconnect(struct cm_conn *c, struct cm_step *out)
{
	struct cm_msg m = { .hdr = { .attr_id = CM_ATTR_DREQ } };

	step_clear(out);
	if (c->state != CM_ESTABLISHED)
		return;
	c->tid = (uint64_t)2 << 32 | c->local_id;
	m.hdr.tid = c->tid;
	m.dreq = (struct cm_dreq){ .local_comm_id = c->local_id, .remote_comm_id = c->remote_id,
				   .remote_qpn = c->remote_qpn };
	c->state = CM_DREQ_SENT;
	send_with_retries(c, &m, c->max_retries, out);
}

/* ---- messages, by state ---------------------------------------------------------- */

/* Active, REQ_SENT or MRA_REQ_RCVD: the peer's REP. Linux's active side
 * takes its QP to RTR and RTS and sends RTU at once.
 */
static void
active_rep(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	const struct cm_rep *rep = &msg->rep;
	struct cm_msg rtu = { .hdr = { .tid = c->tid, .attr_id = CM_ATTR_RTU } };

	c->remote_id = rep->local_comm_id;
	c->remote_qpn = rep->local_qpn;
	out->set_qp = true;
	out->qp = (struct cm_qp_attrs){
		.dest_qpn = rep->local_qpn, .rq_psn = c->local_psn, .sq_psn = rep->starting_psn,
		.path_mtu = c->req.path_mtu,
		.max_dest_rd_atomic = min8(c->responder_resources, rep->initiator_depth),
		.max_rd_atomic = min8(c->initiator_depth, rep->responder_resources),
		.min_rnr_timer = 0,
		.timeout = c->ack_timeout != 0 ? c->ack_timeout
			   : active_ack_timeout(rep->target_ack_delay, CM_PACKET_LIFETIME),
		.retry_cnt = c->req.retry_count, .rnr_retry = rep->rnr_retry_count,
	};
	rtu.rtu = (struct cm_rtu){ .local_comm_id = c->local_id, .remote_comm_id = c->remote_id };
	c->last = rtu;
	c->state = CM_ESTABLISHED;
	set_timer(out, 0);
	send_once(&rtu, out);
	event(out, CM_EV_ESTABLISHED, msg->rep.private_data, CM_REP_PRIVATE);
}

static void
rejected(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	c->state = CM_IDLE;
	set_timer(out, 0);
	out->rej_reason = msg->rej.reason;
	event(out, CM_EV_REJECTED, msg->rej.private_data, CM_REJ_PRIVATE);
}

static void
req_sent_input(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	switch (msg->hdr.attr_id) {
	case CM_ATTR_REP:
		return active_rep(c, msg, out);
	case CM_ATTR_REJ:
		return rejected(c, msg, out);
	case CM_ATTR_MRA:
		if (msg->mra.msg_mraed != CM_MSG_REQ || c->state != CM_REQ_SENT)
			return;
		/* The peer needs its service timeout: wait that long once. */
		c->state = CM_MRA_REQ_RCVD;
		set_timer(out, cm_timeout_ms(msg->mra.service_timeout) +
			       2 * cm_timeout_ms(CM_PACKET_LIFETIME));
		return;
	}
}

static void
rep_sent_input(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	switch (msg->hdr.attr_id) {
	case CM_ATTR_RTU:
		c->state = CM_ESTABLISHED;
		set_timer(out, 0);
		return event(out, CM_EV_ESTABLISHED, msg->rtu.private_data, CM_RTU_PRIVATE);
	case CM_ATTR_REJ:
		return rejected(c, msg, out);
	}
	/* A REQ again: the peer has not seen our REP yet; the timer sends it. */
}

/* A DREQ: DREP, and the connection is over. */
static void
dreq_received(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	struct cm_msg drep = { .hdr = { .tid = msg->hdr.tid, .attr_id = CM_ATTR_DREP } };

	drep.drep = (struct cm_drep){ .local_comm_id = c->local_id,
				      .remote_comm_id = c->remote_id };
	send_once(&drep, out);
	if (c->state == CM_TIMEWAIT)
		return; /* a DREQ again: its DREP was lost */
	c->state = CM_TIMEWAIT;
	set_timer(out, cm_conn_timewait_ms());
	event(out, CM_EV_DISCONNECTED, msg->dreq.private_data, CM_DREQ_PRIVATE);
}

static void
established_input(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	switch (msg->hdr.attr_id) {
	case CM_ATTR_REP:
		/* Our RTU was lost: the active side sends it again. */
		if (c->active && c->last.hdr.attr_id == CM_ATTR_RTU)
			send_once(&c->last, out);
		return;
	case CM_ATTR_DREQ:
		return dreq_received(c, msg, out);
	}
}

static void
dreq_sent_input(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	switch (msg->hdr.attr_id) {
	case CM_ATTR_DREP:
		c->state = CM_TIMEWAIT;
		set_timer(out, cm_conn_timewait_ms());
		return event(out, CM_EV_DISCONNECTED, msg->drep.private_data, CM_DREP_PRIVATE);
	case CM_ATTR_DREQ:
		/* Both sides disconnect at once: each answers the other. */
		return dreq_received(c, msg, out);
	}
}

static void
timewait_input(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	if (msg->hdr.attr_id == CM_ATTR_DREQ)
		dreq_received(c, msg, out);
}

void
cm_conn_input(struct cm_conn *c, const struct cm_msg *msg, struct cm_step *out)
{
	step_clear(out);
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		return req_sent_input(c, msg, out);
	case CM_REP_SENT:
		return rep_sent_input(c, msg, out);
	case CM_ESTABLISHED:
		return established_input(c, msg, out);
	case CM_DREQ_SENT:
		return dreq_sent_input(c, msg, out);
	case CM_TIMEWAIT:
		return timewait_input(c, msg, out);
	case CM_REQ_RCVD:
		/* The peer gave up before the application decided. */
		if (msg->hdr.attr_id == CM_ATTR_REJ)
			rejected(c, msg, out);
		return; /* a REQ again while the application decides: ignored */
	case CM_IDLE:
	case CM_STATE_MAX:
		return;
	}
}

/* ---- timers ------------------------------------------------------------------------ */

void
cm_conn_timeout(struct cm_conn *c, struct cm_step *out)
{
	step_clear(out);
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
		if (c->retries_left != 0) {
			c->retries_left--;
			c->state = c->state == CM_MRA_REQ_RCVD ? CM_REQ_SENT : c->state;
			send_once(&c->last, out);
			set_timer(out, c->timeout_ms);
			return;
		}
		if (c->state == CM_DREQ_SENT) {
			/* No DREP: the connection is over all the same. */
			c->state = CM_TIMEWAIT;
			set_timer(out, cm_conn_timewait_ms());
			return event(out, CM_EV_DISCONNECTED, NULL, 0);
		}
		c->state = CM_IDLE;
		set_timer(out, 0);
		return event(out, CM_EV_UNREACHABLE, NULL, 0);
	case CM_TIMEWAIT:
		c->state = CM_IDLE;
		set_timer(out, 0);
		return event(out, CM_EV_TIMEWAIT_EXIT, NULL, 0);
	default:
		return;
	}
}
