/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * librdmacm's example tools, either side, as they are on the wire,
 * connected through droce_cm.h (rdma_cm's TCP port space).
 *
 * ucmatose (examples/cmatose.c): both sides post -n receives, and once
 * connected each sends -n messages of -s bytes (100) to the other; the
 * server disconnects when all are through.
 *
 * rping (examples/rping.c). Each ping:
 *   client: SEND its start buffer's address, key and size (struct
 *           rping_rdma_info, big-endian); wait for the server's SEND;
 *           SEND its sink buffer's; wait for the server's SEND; the sink
 *           must then hold what the start buffer holds
 *   server: take the first; RDMA READ the start buffer; SEND (go on);
 *           take the second; RDMA WRITE what it read into the sink; SEND
 * The client fills its start buffer as rping does: "rdma-ping-N: " and
 * letters from 'A' on, a NUL at the end.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_mempool.h>
#include <rte_random.h>

#include "droce_cm.h"
#include "droce_net.h"
#include "rc_app.h"

#define RPING_INFO_LEN 16
#define RPING_RECVS 2
/* A server takes what its client's -S says, up to this (rping's own
 * largest buffer is 64 KiB).
 */
#define RPING_SERVER_BUF 65536
#define RPING_LINGER_MS 200

enum {
	WR_SEND = 1,
	WR_READ,
	WR_WRITE,
	WR_RECV = 100,
};

/* The run's buffer: the start and sink (or the server's copy), the info
 * each SEND carries, the receives.
 */
struct rping_run {
	struct rcapp *app;
	const struct rcapp_opts *o;
	struct droce_cm_channel *ch;
	struct droce_cm_id *listen_id, *id;
	uint8_t *start, *sink, *send_info, *recv_info;
	uint32_t size;                  /* the client's pings; the server's buffer */
	uint32_t cycle;                 /* connections made before this one */
	bool flushed;                   /* a completion came back flushed: the QP stopped */
	struct droce_cm_conn_param param;
	/* ucmatose --connections: a QP for each, on one CQ */
	struct droce_cq *many_cq;
	struct tose_conn *conns;
	char err[256];
};

/* One of ucmatose's connections at once. */
struct tose_conn {
	struct droce_cm_id *id;
	struct droce_qp *qp;
	uint32_t sent, received;
	uint64_t t0;
	bool disconnecting, disconnected;
};

/* IBA's names of the REJ reasons one meets (ib_cm.h's numbers). */
static const char *
rej_reason_str(int reason)
{
	switch (reason) {
	case 3: return "no resources";
	case 4: return "timeout";
	case 8: return "invalid service id: nothing listens on that port";
	case 10: return "stale connection";
	case 12: return "invalid GID";
	case 26: return "invalid path MTU";
	case 27: return "insufficient responder resources";
	case 28: return "consumer defined";
	default: return "see the IBA's table of REJ reasons";
	}
}

/* What an event that ends a connection attempt says, in r->err. */
static void
cm_event_failure(struct rping_run *r, const struct droce_cm_event *ev,
		 enum droce_cm_event_type want)
{
	if (ev->event == DROCE_CM_EVENT_REJECTED)
		snprintf(r->err, sizeof(r->err),
			 "rejected by the peer: reason %d (%s), private data \"%.*s\"", ev->status,
			 rej_reason_str(ev->status),
			 (int)strnlen((const char *)ev->private_data, ev->private_data_len),
			 (const char *)ev->private_data);
	else if (ev->event == DROCE_CM_EVENT_UNREACHABLE && ev->status == -EHOSTUNREACH)
		snprintf(r->err, sizeof(r->err), "UNREACHABLE: no ARP answer from the peer");
	else if (ev->event == DROCE_CM_EVENT_UNREACHABLE)
		snprintf(r->err, sizeof(r->err),
			 "UNREACHABLE: the peer's CM did not answer the REQ, sent %u times (--cm-retries, --cm-timeout)",
			 (r->o->cm_retries != 0 ? r->o->cm_retries : 15) + 1u);
	else
		snprintf(r->err, sizeof(r->err), "CM event %s (status %d) where %s was awaited",
			 droce_cm_event_str(ev->event), ev->status, droce_cm_event_str(want));
}

/* The next CM event, running the stack meanwhile. */
static int
cm_event(struct rping_run *r, enum droce_cm_event_type want, struct droce_cm_event *ev)
{
	uint64_t until = rcapp_now_ms() + r->o->timeout_s * 1000ull;

	while (rcapp_now_ms() < until && !rcapp_interrupted) {
		rcapp_poll(r->app);
		if (droce_cm_get_event(r->ch, ev) != 0)
			continue;
		if (ev->event == want)
			return 0;
		cm_event_failure(r, ev, want);
		if (ev->event == DROCE_CM_EVENT_CONNECT_REQUEST)
			droce_cm_destroy_id(ev->id);
		return -1;
	}
	snprintf(r->err, sizeof(r->err), "no CM event %s in %u s (--timeout)",
		 droce_cm_event_str(want), r->o->timeout_s);
	return -1;
}

/* The next completion before @p until (ms); 1 when none came, -1 for an
 * error completion (its status in r->err).
 */
static int
next_wc(struct rping_run *r, uint64_t until, struct droce_wc *wc)
{
	while (rcapp_now_ms() < until && !rcapp_interrupted) {
		rcapp_poll(r->app);
		if (droce_poll_cq(r->app->cq, 1, wc) != 1)
			continue;
		if (wc->status == DROCE_WC_SUCCESS)
			return 0;
		r->flushed |= wc->status == DROCE_WC_WR_FLUSH_ERR;
		snprintf(r->err, sizeof(r->err), "completion %" PRIu64 ": %s", wc->wr_id,
			 droce_wc_status_str(wc->status));
		return -1;
	}
	return 1;
}

/* The completion of @p wr_id; any other error completion fails too. */
static int
wait_wc(struct rping_run *r, uint64_t wr_id, struct droce_wc *out)
{
	uint64_t until = rcapp_now_ms() + r->o->timeout_s * 1000ull;
	struct droce_wc wc;
	int ret;

	while ((ret = next_wc(r, until, &wc)) == 0)
		if (wc.wr_id == wr_id || (wr_id == WR_RECV && wc.wr_id >= WR_RECV)) {
			if (out != NULL)
				*out = wc;
			return 0;
		}
	if (ret > 0)
		snprintf(r->err, sizeof(r->err), "no completion %" PRIu64 " in %u s (--timeout)",
			 wr_id, r->o->timeout_s);
	return -1;
}

static void
post_recv(struct rping_run *r)
{
	struct droce_sge sge = { (uintptr_t)r->recv_info, RPING_INFO_LEN, r->app->mr->lkey };
	struct droce_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;

	droce_post_recv(r->app->qp, &wr, &bad);
}

static int
post(struct rping_run *r, uint64_t wr_id, enum droce_wr_opcode op, uint8_t *local, uint32_t len,
     uint64_t remote, uint32_t rkey)
{
	struct droce_sge sge = { (uintptr_t)local, len, r->app->mr->lkey };
	struct droce_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				    .send_flags = DROCE_SEND_SIGNALED }, *bad;
	int ret;

	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = rkey;
	ret = droce_post_send(r->app->qp, &wr, &bad);
	if (ret != 0)
		snprintf(r->err, sizeof(r->err), "post_send: %s", strerror(-ret));
	return ret;
}

/* SEND the address, key and size of @p buf (rping_format_send). */
static int
send_info(struct rping_run *r, const uint8_t *buf)
{
	uint64_t va = rte_cpu_to_be_64((uintptr_t)buf);
	uint32_t rkey = rte_cpu_to_be_32(r->app->mr->rkey), size = rte_cpu_to_be_32(r->size);

	memcpy(r->send_info, &va, 8);
	memcpy(r->send_info + 8, &rkey, 4);
	memcpy(r->send_info + 12, &size, 4);
	if (post(r, WR_SEND, DROCE_WR_SEND, r->send_info, RPING_INFO_LEN, 0, 0) != 0)
		return -1;
	return wait_wc(r, WR_SEND, NULL);
}

/* A SEND's info taken: the peer's buffer. */
static int
take_info(struct rping_run *r, uint64_t *va, uint32_t *rkey, uint32_t *size)
{
	struct droce_wc wc;

	if (wait_wc(r, WR_RECV, &wc) != 0)
		return -1;
	if (wc.byte_len != RPING_INFO_LEN) {
		snprintf(r->err, sizeof(r->err), "a SEND of %u bytes, not rping's %u", wc.byte_len,
			 RPING_INFO_LEN);
		return -1;
	}
	memcpy(va, r->recv_info, 8);
	memcpy(rkey, r->recv_info + 8, 4);
	memcpy(size, r->recv_info + 12, 4);
	*va = rte_be_to_cpu_64(*va);
	*rkey = rte_be_to_cpu_32(*rkey);
	*size = rte_be_to_cpu_32(*size);
	post_recv(r);
	return 0;
}

/* rping's start buffer for ping @p n. */
static void
fill_start(struct rping_run *r, uint32_t n)
{
	int len = snprintf((char *)r->start, r->size, "rdma-ping-%u: ", n);
	uint8_t c = 'A' + n % 58;

	for (uint32_t i = (uint32_t)len; i + 1 < r->size; i++) {
		r->start[i] = c++;
		if (c > 'z')
			c = 'A';
	}
	r->start[r->size - 1] = '\0';
}

static int
client_pings(struct rping_run *r)
{
	uint64_t va;
	uint32_t rkey, size;

	for (uint32_t n = 0; n < r->o->iters; n++) {
		fill_start(r, n);
		memset(r->sink, 0, r->size);
		if (send_info(r, r->start) != 0 || take_info(r, &va, &rkey, &size) != 0 ||
		    send_info(r, r->sink) != 0 || take_info(r, &va, &rkey, &size) != 0)
			return -1;
		if (memcmp(r->start, r->sink, r->size) != 0) {
			snprintf(r->err, sizeof(r->err), "ping %u: the sink holds \"%.24s\", not \"%.24s\"",
				 n, (const char *)r->sink, (const char *)r->start);
			return -1;
		}
	}
	if (r->cycle == 0)
		printf("droce-rc: rping: %u pings of %u bytes, each read, written back and checked\n",
		       r->o->iters, r->size);
	return 0;
}

/* Until the client stops (its last ping done, or it disconnects). */
static int
server_pings(struct rping_run *r)
{
	uint32_t n = 0;

	for (;;) {
		uint64_t va;
		uint32_t rkey, size, sink_size;

		if (take_info(r, &va, &rkey, &size) != 0)
			break;
		if (size > r->size) {
			snprintf(r->err, sizeof(r->err), "the client's buffer is %u bytes; allowed: up to %u (-s)",
				 size, r->size);
			return -1;
		}
		if (post(r, WR_READ, DROCE_WR_RDMA_READ, r->sink, size, va, rkey) != 0 ||
		    wait_wc(r, WR_READ, NULL) != 0 || send_info(r, r->sink) != 0 ||
		    take_info(r, &va, &rkey, &sink_size) != 0)
			return -1;
		size = RTE_MIN(size, sink_size);
		if (post(r, WR_WRITE, DROCE_WR_RDMA_WRITE, r->sink, size, va, rkey) != 0 ||
		    wait_wc(r, WR_WRITE, NULL) != 0)
			return -1;
		/* The client may take this last SEND and disconnect before its
		 * ACK is here (the peer's DREQ stops the QP): as rping, a
		 * flushed go-ahead ends the run.
		 */
		if (send_info(r, r->sink) != 0) {
			if (!r->flushed)
				return -1;
			n++;
			break;
		}
		if (n == 0 && r->cycle == 0)
			printf("droce-rc: rping: server ping data: %.*s\n", (int)RTE_MIN(size, 64u),
			       (const char *)r->sink);
		n++;
		if (r->o->iters != 0 && n == r->o->iters)
			break;
	}
	if (r->cycle == 0)
		printf("droce-rc: rping: served %u pings\n", n);
	return n != 0 ? 0 : -1;
}

/* A SEND whose completion came flushed once all the peer's messages are
 * in: the peer disconnects only when it has all of ours too, so it has
 * this one, and its DREQ stopped our QP before its ACK came.
 */
static bool
send_flushed_after_all(const struct rping_run *r, const struct droce_wc *wc, uint32_t received)
{
	return wc->status == DROCE_WC_WR_FLUSH_ERR && (uint32_t)wc->wr_id < WR_RECV &&
	       received == r->o->iters;
}

/* ucmatose's exchange once connected: -n SENDs of -s bytes each way. */
static int
ucmatose_messages(struct rping_run *r)
{
	uint32_t sent = 0, received = 0;
	uint64_t until = rcapp_now_ms() + r->o->timeout_s * 1000ull;

	for (uint32_t i = 0; i < r->o->iters; i++)
		if (post(r, WR_SEND, DROCE_WR_SEND, r->start, r->size, 0, 0) != 0)
			return -1;
	while (sent < r->o->iters || received < r->o->iters) {
		struct droce_wc wc;
		int ret = next_wc(r, until, &wc);

		if (ret < 0 && !send_flushed_after_all(r, &wc, received)) {
			return -1;
		} else if (ret < 0) {
			r->err[0] = '\0';
			sent++;
			continue;
		}
		if (ret > 0)
			break;
		if (wc.wr_id >= WR_RECV)
			received++;
		else
			sent++;
	}
	if (sent < r->o->iters || received < r->o->iters) {
		snprintf(r->err, sizeof(r->err), "%u of %u sent, %u received in %u s (--timeout)",
			 sent, r->o->iters, received, r->o->timeout_s);
		return -1;
	}
	if (r->cycle == 0)
		printf("droce-rc: ucmatose: %u messages of %u bytes sent and %u received\n", sent,
		       r->size, received);
	return 0;
}

/* @p qp back to INIT with its receives posted, for a new connection;
 * their wr_ids from @p wr_base. The CQ @p cq drained of the last one's.
 */
static int
qp_fresh(struct rping_run *r, struct droce_qp *qp, struct droce_cq *cq, uint32_t recvs,
	 uint64_t wr_base)
{
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_RESET };
	struct droce_wc wc;

	r->flushed = false;
	if (droce_qp_state(qp) != DROCE_QPS_INIT) {
		if (droce_modify_qp(qp, &a, DROCE_QP_STATE) != 0)
			return -1;
		a = (struct droce_qp_attr){
			.qp_state = DROCE_QPS_INIT, .port_num = 1,
			.qp_access_flags = DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_WRITE,
		};
		if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX |
				    DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS) != 0)
			return -1;
		while (droce_poll_cq(cq, 1, &wc) == 1)
			; /* the last connection's flushed work */
	}
	if (r->o->mode != RCAPP_UCMATOSE)
		post_recv(r);
	else
		for (uint32_t i = 0; i < recvs; i++) {
			/* Its receives before its connection, as cmatose posts them. */
			struct droce_sge sge = { (uintptr_t)r->sink, r->size, r->app->mr->lkey };
			struct droce_recv_wr wr = { .wr_id = wr_base + WR_RECV + i, .sg_list = &sge,
						    .num_sge = 1 }, *bad;

			droce_post_recv(qp, &wr, &bad);
		}
	return 0;
}

/* One connection: made (@p setup_us: connect or accept to ESTABLISHED),
 * used, ended; its id destroyed.
 */
static int
one_connection(struct rping_run *r, uint64_t *setup_us)
{
	const struct droce_cm_conn_param *p = &r->param;
	bool ucmatose = r->o->mode == RCAPP_UCMATOSE;
	struct droce_cm_event ev;
	uint64_t t0;
	int ret = -1;

	if (r->o->server) {
		if (cm_event(r, DROCE_CM_EVENT_CONNECT_REQUEST, &ev) != 0)
			return -1;
		r->id = ev.id;
		t0 = rcapp_now_us();
		if (droce_cm_accept(r->id, r->app->qp, p) != 0) {
			snprintf(r->err, sizeof(r->err), "accept refused");
			goto out;
		}
	} else {
		r->id = droce_cm_create_id(r->ch, NULL);
		t0 = rcapp_now_us();
		if (r->id == NULL ||
		    droce_cm_connect(r->id, r->o->connect_ip.s_addr, r->o->tcp_port, r->app->qp,
				     p) != 0) {
			snprintf(r->err, sizeof(r->err), "connect refused");
			goto out;
		}
	}
	if (cm_event(r, DROCE_CM_EVENT_ESTABLISHED, &ev) != 0)
		goto out;
	*setup_us = rcapp_now_us() - t0;
	if (ucmatose ? ucmatose_messages(r) != 0
	    : (r->o->server ? server_pings(r) : client_pings(r)) != 0)
		goto out;
	/* rping's client disconnects, its server waits for the DREQ;
	 * cmatose's server disconnects (its client waits for that), and
	 * droce's client does too: two DREQs at once end it as well.
	 */
	if (!r->o->server || ucmatose) {
		int err = droce_cm_disconnect(r->id);

		if (err != 0) {
			snprintf(r->err, sizeof(r->err), "disconnect: %s", strerror(-err));
			goto out;
		}
	}
	if (cm_event(r, DROCE_CM_EVENT_DISCONNECTED, &ev) != 0)
		goto out;
	ret = 0;
out:
	if (r->id != NULL)
		droce_cm_destroy_id(r->id);
	r->id = NULL;
	return ret;
}

/* ---- ucmatose -c: connections at once ------------------------------------------ */

#define CONN_WR_SHIFT 32        /* a wr_id's connection (plus one) above this bit */

static struct tose_conn *
conn_of_id(struct rping_run *r, const struct droce_cm_id *id)
{
	for (uint32_t i = 0; i < r->o->connections; i++)
		if (r->conns[i].id == id)
			return &r->conns[i];
	return NULL;
}

/* A CM event of the many: accept, start sending, or count the end. */
static int
many_event(struct rping_run *r, const struct droce_cm_event *ev, uint32_t *accepted,
	   uint32_t *disconnected, uint64_t *setup_us)
{
	struct tose_conn *c;

	switch (ev->event) {
	case DROCE_CM_EVENT_CONNECT_REQUEST:
		if (!r->o->server || *accepted == r->o->connections) {
			droce_cm_reject(ev->id, NULL, 0);
			droce_cm_destroy_id(ev->id);
			return 0;
		}
		c = &r->conns[(*accepted)++];
		c->id = ev->id;
		c->t0 = rcapp_now_us();
		if (droce_cm_accept(c->id, c->qp, &r->param) != 0) {
			snprintf(r->err, sizeof(r->err), "accept refused");
			return -1;
		}
		return 0;
	case DROCE_CM_EVENT_ESTABLISHED:
		c = conn_of_id(r, ev->id);
		if (c == NULL)
			return 0;
		setup_us[c - r->conns] = rcapp_now_us() - c->t0;
		for (uint32_t i = 0; i < r->o->iters; i++) {
			struct droce_sge sge = { (uintptr_t)r->start, r->size, r->app->mr->lkey };
			struct droce_send_wr wr = {
				.wr_id = (uint64_t)(c - r->conns + 1) << CONN_WR_SHIFT | WR_SEND,
				.sg_list = &sge, .num_sge = 1, .opcode = DROCE_WR_SEND,
				.send_flags = DROCE_SEND_SIGNALED }, *bad;
			int ret = droce_post_send(c->qp, &wr, &bad);

			if (ret != 0) {
				snprintf(r->err, sizeof(r->err), "post_send: %s", strerror(-ret));
				return -1;
			}
		}
		return 0;
	case DROCE_CM_EVENT_DISCONNECTED:
		c = conn_of_id(r, ev->id);
		if (c != NULL && !c->disconnected) {
			c->disconnected = true;
			(*disconnected)++;
		}
		return 0;
	case DROCE_CM_EVENT_TIMEWAIT_EXIT:
		return 0;
	default:
		cm_event_failure(r, ev, DROCE_CM_EVENT_ESTABLISHED);
		return -1;
	}
}

/* Completions of the many; a connection whose messages are all through
 * is disconnected (by both sides, as droce's one connection is).
 */
static int
many_completions(struct rping_run *r)
{
	struct droce_wc wc[32];
	int n = droce_poll_cq(r->many_cq, 32, wc);

	for (int k = 0; k < n; k++) {
		uint64_t conn = wc[k].wr_id >> CONN_WR_SHIFT;
		struct tose_conn *c;

		if (conn == 0 || conn > r->o->connections) {
			snprintf(r->err, sizeof(r->err), "a completion of no connection (0x%" PRIx64 ")",
				 wc[k].wr_id);
			return -1;
		}
		c = &r->conns[conn - 1];
		if (wc[k].status != DROCE_WC_SUCCESS &&
		    !send_flushed_after_all(r, &wc[k], c->received)) {
			snprintf(r->err, sizeof(r->err), "completion 0x%" PRIx64 ": %s", wc[k].wr_id,
				 droce_wc_status_str(wc[k].status));
			return -1;
		}
		if ((uint32_t)wc[k].wr_id >= WR_RECV)
			c->received++;
		else
			c->sent++;
		if (c->sent == r->o->iters && c->received == r->o->iters && !c->disconnecting) {
			int err = droce_cm_disconnect(c->id);

			if (err != 0) {
				snprintf(r->err, sizeof(r->err), "disconnect: %s", strerror(-err));
				return -1;
			}
			c->disconnecting = true;
		}
	}
	return 0;
}

/* A QP of the many, on their CQ. */
static struct droce_qp *
many_qp(struct rping_run *r)
{
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC, .send_cq = r->many_cq, .recv_cq = r->many_cq,
		.cap = { .max_send_wr = r->o->iters, .max_recv_wr = r->o->iters,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return droce_create_qp(r->app->pd, &ia);
}

/* Whether a connection's work has still to complete (its last
 * completions can follow the peer's DREQ).
 */
static bool
many_completions_left(const struct rping_run *r)
{
	for (uint32_t i = 0; i < r->o->connections; i++)
		if (r->conns[i].sent != r->o->iters || r->conns[i].received != r->o->iters)
			return true;
	return false;
}

/* --connections at once: made (@p setup_us, one for each), used, ended. */
static int
many_connections(struct rping_run *r, uint64_t *setup_us)
{
	uint32_t n = r->o->connections, accepted = 0, disconnected = 0;
	uint64_t until = rcapp_now_ms() + r->o->timeout_s * 1000ull;
	struct droce_cm_event ev;
	int ret = -1;

	for (uint32_t i = 0; i < n; i++) {
		struct tose_conn *c = &r->conns[i];

		/* A new QP for each connection after the first, as for one. */
		if (r->cycle != 0) {
			droce_destroy_qp(c->qp);
			c->qp = many_qp(r);
		}
		*c = (struct tose_conn){ .qp = c->qp };
		if (c->qp == NULL || qp_fresh(r, c->qp, r->many_cq, r->o->iters,
					      (uint64_t)(i + 1) << CONN_WR_SHIFT) != 0) {
			snprintf(r->err, sizeof(r->err), "connection %u has no QP in INIT (the droce.rc log says why)",
				 i);
			return -1;
		}
	}
	for (uint32_t i = 0; i < n && !r->o->server; i++) {
		struct tose_conn *c = &r->conns[i];

		c->id = droce_cm_create_id(r->ch, c);
		c->t0 = rcapp_now_us();
		if (c->id == NULL ||
		    droce_cm_connect(c->id, r->o->connect_ip.s_addr, r->o->tcp_port, c->qp,
				     &r->param) != 0) {
			snprintf(r->err, sizeof(r->err), "connect %u refused", i);
			goto out;
		}
	}
	while (disconnected < n || many_completions_left(r)) {
		unsigned int work = rcapp_poll(r->app);

		while (droce_cm_get_event(r->ch, &ev) == 0) {
			if (many_event(r, &ev, &accepted, &disconnected, setup_us) != 0)
				goto out;
			work++;
		}
		if (many_completions(r) != 0)
			goto out;
		if (work != 0)
			until = rcapp_now_ms() + r->o->timeout_s * 1000ull;
		if (rcapp_now_ms() > until || rcapp_interrupted) {
			snprintf(r->err, sizeof(r->err), "%u of %u connections ended; nothing happened for %u s (--timeout)",
				 disconnected, n, r->o->timeout_s);
			goto out;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		if (r->conns[i].sent != r->o->iters || r->conns[i].received != r->o->iters) {
			snprintf(r->err, sizeof(r->err), "connection %u ended with %u of %u sent and %u received",
				 i, r->conns[i].sent, r->o->iters, r->conns[i].received);
			goto out;
		}
	ret = 0;
out:
	for (uint32_t i = 0; i < n; i++)
		if (r->conns[i].id != NULL) {
			droce_cm_destroy_id(r->conns[i].id);
			r->conns[i].id = NULL;
		}
	return ret;
}

/* QPs and their CQ for --connections. */
static int
many_create(struct rping_run *r)
{
	uint32_t n = r->o->connections;

	r->conns = calloc(n, sizeof(*r->conns));
	r->many_cq = r->conns != NULL
		     ? droce_create_cq(r->app->dev, (int)(2 * n * r->o->iters)) : NULL;
	if (r->many_cq == NULL) {
		snprintf(r->err, sizeof(r->err), "no CQ for %u connections", n);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		r->conns[i].qp = many_qp(r);
		if (r->conns[i].qp == NULL) {
			snprintf(r->err, sizeof(r->err), "QP %u of %u: %s (the droce.rc log above says why)",
				 i + 1, n, rte_strerror(rte_errno));
			return -1;
		}
	}
	return 0;
}

static void
many_destroy(struct rping_run *r)
{
	struct droce_wc wc;

	for (uint32_t i = 0; r->conns != NULL && i < r->o->connections; i++)
		if (r->conns[i].qp != NULL)
			droce_destroy_qp(r->conns[i].qp);
	if (r->many_cq != NULL) {
		while (droce_poll_cq(r->many_cq, 1, &wc) == 1)
			;
		droce_destroy_cq(r->many_cq);
	}
	free(r->conns);
}

/* ---- the tools --------------------------------------------------------------------- */

/* --reject: each of --cycles requests refused, with the words. */
static int
refuse_requests(struct rping_run *r, const char *tool)
{
	struct droce_cm_event ev;

	for (uint32_t n = 0; n < r->o->cycles; n++) {
		if (cm_event(r, DROCE_CM_EVENT_CONNECT_REQUEST, &ev) != 0)
			return -1;
		if (droce_cm_reject(ev.id, r->o->reject, (uint8_t)(strlen(r->o->reject) + 1)) != 0) {
			droce_cm_destroy_id(ev.id);
			snprintf(r->err, sizeof(r->err), "reject refused");
			return -1;
		}
		droce_cm_destroy_id(ev.id);
	}
	printf("droce-rc: %s: refused %u connection request%s with REJ 28 and \"%s\"\n", tool,
	       r->o->cycles, r->o->cycles == 1 ? "" : "s", r->o->reject);
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* mbufs of the port's pool out of it now. */
static unsigned int
mbufs_out(const struct rcapp *app)
{
	return rte_mempool_in_use_count(droce_port_pool(app->stack, 0));
}

/* After the run: what is left of it. Ids, QPs and mbufs: nothing. */
static void
print_left(const struct rcapp *app, unsigned int mbufs_before)
{
	struct droce_rc_objects objs;
	struct droce_cm_stats st;

	droce_cm_stats(app->cm, &st);
	droce_rc_query_objects(app->dev, &objs);
	printf("droce-rc: left after the run: %u CM ids, %u half-open, %u QPs, %u CQs, %u MRs; %u mbufs out of the pool (%u before)\n",
	       st.ids, st.half_open, objs.qps, objs.cqs, objs.mrs, mbufs_out(app), mbufs_before);
	printf("droce-rc: CM: %" PRIu64 " requests taken, %" PRIu64 " established, %" PRIu64 " unreachable; REJ sent: 8 %" PRIu64 ", 3 %" PRIu64 ", 12 %" PRIu64 ", 10 %" PRIu64 ", header %" PRIu64 "; %" PRIu64 " stray\n",
	       st.connect_requests, st.established, st.unreachable, st.rejected_no_listener,
	       st.rejected_no_resources, st.rejected_invalid_gid, st.rejected_stale,
	       st.rejected_bad_header, st.stray);
}

int
rcapp_cm_tool(struct rcapp *app, const struct rcapp_opts *o)
{
	bool ucmatose = o->mode == RCAPP_UCMATOSE;
	const char *tool = ucmatose ? "ucmatose" : "rping";
	struct rping_run r = {
		.app = app, .o = o,
		.size = o->server && !ucmatose ? RTE_MAX(o->size, (uint32_t)RPING_SERVER_BUF)
			: o->size,
		.param = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
			   .rnr_retry_count = 7, .cm_response_timeout = o->cm_response_timeout,
			   .max_cm_retries = o->cm_retries },
	};
	uint32_t recvs = ucmatose ? o->iters : RPING_RECVS, done = 0, nb_setup = 0;
	uint64_t *setup = calloc((size_t)o->cycles * o->connections, sizeof(*setup));
	unsigned int mbufs_before = mbufs_out(app);
	struct droce_cm_event ev;
	int ret = 1;

	/* The buffer: start (what is sent), sink (what arrives), the info a
	 * SEND carries and a receive takes (rping).
	 */
	if (setup == NULL ||
	    rcapp_qp_create(app, 2 * (size_t)r.size + 2 * RPING_INFO_LEN,
			    DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_READ |
			    DROCE_ACCESS_REMOTE_WRITE, ucmatose ? o->iters : 4, recvs, 1,
			    DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_WRITE, r.err,
			    sizeof(r.err)) != 0)
		goto out;
	if (o->connections > 1 && many_create(&r) != 0)
		goto out;
	r.start = app->buf;
	r.sink = app->buf + r.size;
	r.send_info = r.sink + r.size;
	r.recv_info = r.send_info + RPING_INFO_LEN;
	memset(r.start, 0x55, r.size);
	r.ch = droce_cm_create_channel(app->cm);
	if (r.ch == NULL) {
		snprintf(r.err, sizeof(r.err), "no CM channel (out of memory)");
		goto out;
	}
	if (o->server) {
		r.listen_id = droce_cm_create_id(r.ch, NULL);
		if (r.listen_id == NULL || droce_cm_listen(r.listen_id, o->tcp_port) != 0) {
			snprintf(r.err, sizeof(r.err), "cannot listen on port %u", o->tcp_port);
			goto out;
		}
		printf("droce-rc: %s: listening on port %u\n", tool, o->tcp_port);
	}
	/* Setup times count from a link that carries frames: before, ARP's
	 * first request is lost and answered only by its retry a second on.
	 */
	if (!rcapp_wait_link(app, o->timeout_s)) {
		snprintf(r.err, sizeof(r.err), "port 0's link is not up after %u s (--timeout)",
			 o->timeout_s);
		goto out;
	}
	if (o->reject != NULL) {
		ret = refuse_requests(&r, tool) != 0;
		goto out;
	}
	for (done = 0; done < o->cycles; done++) {
		r.cycle = done;
		if (o->connections > 1) {
			if (many_connections(&r, setup + nb_setup) != 0)
				goto out;
			nb_setup += o->connections;
			continue;
		}
		/* A new QP (a new QPN) for each connection, as rdma_cm programs
		 * make: the peer's CM refuses a QPN whose last connection is in
		 * timewait (REJ 10).
		 */
		if ((done != 0 && rcapp_qp_renew(app, r.err, sizeof(r.err)) != 0) ||
		    qp_fresh(&r, app->qp, app->cq, recvs, 0) != 0) {
			if (r.err[0] == '\0')
				snprintf(r.err, sizeof(r.err), "the QP does not go to INIT");
			goto out;
		}
		if (one_connection(&r, &setup[nb_setup++]) != 0)
			goto out;
		if (done == 0)
			printf("droce-rc: %s: connected and done (QP 0x%06x)\n", tool,
			       droce_qp_num(app->qp));
	}
	qsort(setup, nb_setup, sizeof(*setup), cmp_u64);
	if (o->connections > 1)
		printf("droce-rc: %s: %u x %u connections at once, each %u messages of %u bytes sent and received, then disconnected\n",
		       tool, o->cycles, o->connections, o->iters, r.size);
	printf("droce-rc: %s: %u connection%s, each made, used and disconnected; setup (%s to ESTABLISHED) p50 %" PRIu64 " us, p99 %" PRIu64 " us, max %" PRIu64 " us\n",
	       tool, nb_setup, nb_setup == 1 ? "" : "s", o->server ? "accept" : "connect",
	       setup[nb_setup / 2], setup[nb_setup * 99 / 100], setup[nb_setup - 1]);
	printf("droce-rc: %s: disconnected\n", tool);
	ret = 0;
out:
	if (ret != 0 && r.err[0] != '\0')
		fprintf(stderr, "droce-rc: %s: after %u connections: %s\n", tool, nb_setup, r.err);
	rcapp_linger(app, RPING_LINGER_MS);
	rcapp_print_stats(app);
	if (r.listen_id != NULL)
		droce_cm_destroy_id(r.listen_id);
	if (r.ch != NULL) {
		while (droce_cm_get_event(r.ch, &ev) == 0)
			if (ev.event == DROCE_CM_EVENT_CONNECT_REQUEST)
				droce_cm_destroy_id(ev.id);
		if (droce_cm_destroy_channel(r.ch) != 0 && ret == 0) {
			fprintf(stderr, "droce-rc: %s: the CM channel still has ids\n", tool);
			ret = 1;
		}
	}
	many_destroy(&r);
	rcapp_qp_destroy(app);
	print_left(app, mbufs_before);
	free(setup);
	return ret;
}
