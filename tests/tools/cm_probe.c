/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * What a peer's connection manager answers to lib/cm's REQ: droce's stack
 * on port 0, QP1 open, a REQ as rdma_cm sends it (service id in the TCP
 * port space, the 36-byte header first in its private data) every second
 * until the peer answers with the REQ's TID or the time is up.
 *
 *   cm_probe [EAL options] -- PEER_IP PORT rep|rej:REASON|establish|listen|flood:N SECONDS key=value...
 *
 * Prints the answer's fields; exit status 0 when it is the one expected,
 * 1 otherwise (no answer, another one), 2 for bad arguments. A REJ with
 * another reason is waited past while a REP is expected: the peer may not
 * listen yet.
 *
 * establish: a whole connection through droce_cm.h with a lib/rc QP: REQ,
 * the REP's attributes on the QP (RTR, RTS), RTU; then, as
 * rping's client starts, one SEND of its buffer's address, key and size
 * (struct rping_rdma_info), which the peer's QP must take; then DREQ and
 * the peer's DREP. Exit status 0 when all of it happened.
 *
 * listen: the passive side of the same: wait for the peer's REQ to PORT,
 * accept (QP to RTR and RTS, REP), RTU; then, as rping's server starts,
 * take the client's first SEND (its buffer's address, key and size) and
 * RDMA READ that buffer, which an rping client fills with "rdma-ping-";
 * then DREQ and DREP. Exit status 0 when all of it happened and the bytes
 * read begin so.
 *
 * flood:N: N REQs as fast as the stack sends them, each a new connection
 * (its own communication id, transaction id and QPN) that never sends an
 * RTU, as a hostile or broken peer would; then answers are counted until
 * SECONDS have passed since the first. Prints what was sent and how it
 * was answered; exit status 0 when all N were sent.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <rte_random.h>

#include "cm_gsi.h"
#include "cm_mad.h"
#include "droce_cm.h"
#include "droce_core.h"
#include "droce_net.h"
#include "droce_rc.h"

#define PROG "cm_probe"

static struct cm_msg answer;
static bool answered;
static uint64_t tid;
static uint32_t peer;
/* flood: the answers, counted rather than awaited. */
static bool flooding;
static uint64_t flood_reps, flood_mras, flood_rejs[64];

static double now(void);

static void
on_mad(void *arg, const struct cm_msg *msg, const struct cm_gsi_from *from)
{
	(void)arg;
	if (flooding && from->ip == peer) {
		if (msg->hdr.attr_id == CM_ATTR_REP)
			flood_reps++;
		else if (msg->hdr.attr_id == CM_ATTR_MRA)
			flood_mras++;
		else if (msg->hdr.attr_id == CM_ATTR_REJ)
			flood_rejs[RTE_MIN(msg->rej.reason, RTE_DIM(flood_rejs) - 1)]++;
		return;
	}
	if (from->ip != peer || msg->hdr.tid != tid || answered)
		return;
	if (msg->hdr.attr_id != CM_ATTR_REP && msg->hdr.attr_id != CM_ATTR_REJ &&
	    msg->hdr.attr_id != CM_ATTR_MRA)
		return;
	answer = *msg;
	answered = msg->hdr.attr_id != CM_ATTR_MRA;
	printf(PROG ": %s from QP %u\n", cm_attr_name(msg->hdr.attr_id), from->src_qp);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A REQ of rdma_cm's shape, from @p ours to @p peer_ip's @p port. */
static void
make_req(struct cm_msg *m, uint32_t ours, uint32_t peer_ip, uint16_t port, uint32_t comm_id,
	 uint32_t qpn)
{
	struct cm_rdma_hdr h = { .version = 0, .ip_version = 4,
				 .src_port = (uint16_t)(40000 + rte_rand() % 20000) };

	memset(m, 0, sizeof(*m));
	m->hdr.tid = tid;
	m->hdr.attr_id = CM_ATTR_REQ;
	m->req = (struct cm_req){
		.local_comm_id = comm_id, .service_id = cm_service_id(CM_PS_TCP, port),
		.local_ca_guid = 0x0200c6fffe120001ull, .local_qpn = qpn,
		.responder_resources = 1, .initiator_depth = 1,
		.remote_cm_response_timeout = 20, .transport = CM_TRANSPORT_RC,
		.starting_psn = (uint32_t)rte_rand() & 0xffffff,
		.local_cm_response_timeout = 20, .retry_count = 7, .pkey = 0xffff,
		.path_mtu = 3, .rnr_retry_count = 7, .max_cm_retries = 15,
		.primary = { .local_lid = 0xffff, .remote_lid = 0xffff, .hop_limit = 64,
			     .local_ack_timeout = 18 },
	};
	droce_gid_from_ipv4(ours, m->req.primary.local_gid);
	droce_gid_from_ipv4(peer_ip, m->req.primary.remote_gid);
	cm_rdma_addr_from_ipv4(ours, h.src_addr);
	cm_rdma_addr_from_ipv4(peer_ip, h.dst_addr);
	cm_rdma_hdr_encode(&h, m->req.private_data);
}

static void
print_answer(void)
{
	if (answer.hdr.attr_id == CM_ATTR_REJ)
		printf(PROG ": REJ reason %u, message rejected %u, remote comm id 0x%x\n",
		       answer.rej.reason, answer.rej.msg_rejected, answer.rej.remote_comm_id);
	else
		printf(PROG ": REP local comm id 0x%x, remote comm id 0x%x, QPN 0x%06x, PSN 0x%06x, responder resources %u, initiator depth %u, target ACK delay %u, RNR retry %u\n",
		       answer.rep.local_comm_id, answer.rep.remote_comm_id, answer.rep.local_qpn,
		       answer.rep.starting_psn, answer.rep.responder_resources,
		       answer.rep.initiator_depth, answer.rep.target_ack_delay,
		       answer.rep.rnr_retry_count);
}

/* flood:N: @p n REQs, a burst a round, then answers until @p seconds
 * from the start; 0 when all were sent.
 */
static int
flood(struct droce_stack *stack, struct cm_gsi *gsi, uint16_t port, unsigned long n,
      unsigned long seconds)
{
	double t0 = now(), until = t0 + (double)seconds, sent_s = 0;
	uint32_t comm_id = (uint32_t)rte_rand();
	unsigned long sent = 0, refused = 0;

	/* ARP holds a few packets while it resolves: the peer's MAC first. */
	while (droce_neigh_ready(droce_control_ctx(stack), 0, peer) != 0 && now() < until)
		droce_stack_poll(stack);
	t0 = now();
	flooding = true;
	while (now() < until) {
		for (unsigned int b = 0; b < 32 && sent + refused < n; b++) {
			struct cm_msg req;

			/* Each its own connection, with a QPN of its own. */
			tid = (uint64_t)0x00000001 << 32 | (comm_id + sent);
			make_req(&req, droce_port_addr(stack, 0), peer, port, comm_id + (uint32_t)sent,
				 0x010000 + (uint32_t)(sent & 0xffff));
			if (cm_gsi_send(gsi, peer, &req) == 0)
				sent++;
			else
				refused++;
		}
		if (sent + refused == n && sent_s == 0)
			sent_s = now() - t0;
		/* The workers' rounds too, where worker.inline has them here. */
		droce_stack_poll(stack);
	}
	printf(PROG ": flood: %lu REQs sent in %.2f s (%.0f/s), %lu not sent; answers in %lu s: %" PRIu64
	       " REP, %" PRIu64 " MRA", sent, sent_s, sent_s > 0 ? (double)sent / sent_s : 0.0,
	       refused, seconds, flood_reps, flood_mras);
	for (unsigned int r = 0; r < RTE_DIM(flood_rejs); r++)
		if (flood_rejs[r] != 0)
			printf(", %" PRIu64 " REJ %u", flood_rejs[r], r);
	printf("\n");
	return sent == n ? 0 : 1;
}

/* The next event of @p ch within @p seconds; false when none came. */
static bool
next_event(struct droce_stack *stack, struct droce_cm_channel *ch, double seconds,
	   struct droce_cm_event *ev)
{
	static const char *const names[] = {
		"CONNECT_REQUEST", "ESTABLISHED", "REJECTED", "UNREACHABLE", "DISCONNECTED",
		"TIMEWAIT_EXIT",
	};

	for (double until = now() + seconds; now() < until;) {
		droce_control_poll(stack);
		if (droce_cm_get_event(ch, ev) == 0) {
			printf(PROG ": event %s, status %d\n", names[ev->event], ev->status);
			return true;
		}
	}
	printf(PROG ": no event in %.0f s\n", seconds);
	return false;
}

/* Wait for one completion of @p wr_id on @p cq; false on error or time. */
static bool
completion(struct droce_stack *stack, struct droce_cq *cq, uint64_t wr_id, double seconds,
	   struct droce_wc *out)
{
	for (double until = now() + seconds; now() < until;) {
		struct droce_wc wc;

		droce_control_poll(stack);
		while (droce_poll_cq(cq, 1, &wc) == 1) {
			printf(PROG ": completion wr_id %" PRIu64 ": %s, opcode %d, %u bytes\n",
			       wc.wr_id, droce_wc_status_str(wc.status), wc.opcode, wc.byte_len);
			if (wc.wr_id == wr_id) {
				*out = wc;
				return wc.status == DROCE_WC_SUCCESS;
			}
		}
	}
	return false;
}

/* establish: rping's client's first message, a SEND of the buffer's
 * address, key and size; the peer's QP must take it.
 */
static bool
client_steps(struct droce_stack *stack, struct droce_qp *qp, struct droce_cq *cq,
	     struct droce_mr *mr, uint8_t *buf)
{
	uint64_t va = rte_cpu_to_be_64((uintptr_t)buf);
	uint32_t rkey = rte_cpu_to_be_32(mr->rkey), size = rte_cpu_to_be_32(64);
	struct droce_sge sge = { (uintptr_t)buf + 512, 16, mr->lkey };
	struct droce_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				    .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED },
			     *bad;
	struct droce_wc wc;

	memset(buf, 0x5a, 64);
	memcpy(buf + 512, &va, 8);
	memcpy(buf + 520, &rkey, 4);
	memcpy(buf + 524, &size, 4);
	if (droce_post_send(qp, &wr, &bad) != 0 || !completion(stack, cq, 1, 10, &wc))
		return false;
	/* What the peer does next (rping's server reads the buffer and sends
	 * its go-ahead), for a moment.
	 */
	completion(stack, cq, 100, 2, &wc);
	return true;
}

/* listen: rping's server's first steps: take the client's SEND (its
 * buffer's address, key and size) and RDMA READ that buffer, which an
 * rping client fills beginning with "rdma-ping-".
 */
static bool
server_steps(struct droce_stack *stack, struct droce_qp *qp, struct droce_cq *cq,
	     struct droce_mr *mr, uint8_t *buf)
{
	struct droce_sge sge = { (uintptr_t)buf + 2048, 0, mr->lkey };
	struct droce_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				    .opcode = DROCE_WR_RDMA_READ,
				    .send_flags = DROCE_SEND_SIGNALED }, *bad;
	struct droce_wc wc;
	uint64_t va;
	uint32_t rkey, size;

	if (!completion(stack, cq, 100, 10, &wc) || wc.byte_len < 16) {
		printf(PROG ": no rping_rdma_info from the client\n");
		return false;
	}
	memcpy(&va, buf + 1024, 8);
	memcpy(&rkey, buf + 1032, 4);
	memcpy(&size, buf + 1036, 4);
	wr.wr.rdma.remote_addr = rte_be_to_cpu_64(va);
	wr.wr.rdma.rkey = rte_be_to_cpu_32(rkey);
	sge.length = RTE_MIN(rte_be_to_cpu_32(size), 512u);
	printf(PROG ": the client's buffer: 0x%" PRIx64 ", rkey 0x%x, %u bytes\n",
	       wr.wr.rdma.remote_addr, wr.wr.rdma.rkey, sge.length);
	if (droce_post_send(qp, &wr, &bad) != 0 || !completion(stack, cq, 2, 10, &wc)) {
		printf(PROG ": the RDMA READ of the client's buffer failed\n");
		return false;
	}
	printf(PROG ": read from the client: \"%.*s\"\n", (int)RTE_MIN(sge.length, 40u),
	       (const char *)buf + 2048);
	return memcmp(buf + 2048, "rdma-ping-", 10) == 0;
}

/* establish or listen (see the top of the file), with droce_cm.h. */
static int
connection(struct droce_stack *stack, uint16_t port, unsigned long seconds, bool passive)
{
	const struct droce_cm_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
					       .retry_count = 7, .rnr_retry_count = 7 };
	static uint8_t buf[4096];
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct droce_qp_attr a = {
		.qp_state = DROCE_QPS_INIT, .port_num = 1,
		.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ,
	};
	char err[DROCE_ERR_LEN];
	struct droce_cm *cm = droce_cm_open(stack, 0, err, sizeof(err));
	struct droce_rc_device *dev = cm != NULL ? droce_rc_open(stack, 0, err, sizeof(err)) : NULL;
	struct droce_pd *pd = dev != NULL ? droce_alloc_pd(dev) : NULL;
	struct droce_mr *mr = pd != NULL ? droce_reg_mr(pd, buf, sizeof(buf),
						       DROCE_ACCESS_LOCAL_WRITE |
						       DROCE_ACCESS_REMOTE_READ |
						       DROCE_ACCESS_REMOTE_WRITE) : NULL;
	struct droce_cq *cq = dev != NULL ? droce_create_cq(dev, 16) : NULL;
	struct droce_cm_channel *ch = cm != NULL ? droce_cm_create_channel(cm) : NULL;
	struct droce_cm_id *id = ch != NULL ? droce_cm_create_id(ch, NULL) : NULL, *conn = NULL;
	struct droce_qp *qp;
	struct droce_cm_event ev;
	bool steps = false, down = false;

	if (id == NULL || cq == NULL || mr == NULL) {
		fprintf(stderr, PROG ": %s\n", cm == NULL || dev == NULL ? err : "refused (log above)");
		return 1;
	}
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qp = droce_create_qp(pd, &ia);
	if (qp == NULL || droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX |
					  DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS) != 0 ||
	    droce_stack_start(stack, true) != 0) {
		fprintf(stderr, PROG ": QP or start refused (log above)\n");
		return 1;
	}
	for (uint64_t i = 0; i < 4; i++) {
		struct droce_sge sge = { (uintptr_t)buf + 1024 + i * 256, 256, mr->lkey };
		struct droce_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 }, *bad;

		droce_post_recv(qp, &wr, &bad);
	}
	if (passive) {
		if (droce_cm_listen(id, port) != 0)
			goto out;
		printf(PROG ": listening on port %u\n", port);
		if (!next_event(stack, ch, (double)seconds, &ev) ||
		    ev.event != DROCE_CM_EVENT_CONNECT_REQUEST)
			goto out;
		conn = ev.id;
		if (droce_cm_accept(conn, qp, &p) != 0)
			goto out;
	} else {
		conn = id;
		if (droce_cm_connect(conn, peer, port, qp, &p) != 0)
			goto out;
	}
	if (!next_event(stack, ch, (double)seconds, &ev) || ev.event != DROCE_CM_EVENT_ESTABLISHED)
		goto out;
	steps = passive ? server_steps(stack, qp, cq, mr, buf) : client_steps(stack, qp, cq, mr, buf);
	if (droce_cm_disconnect(conn) == 0)
		down = next_event(stack, ch, 20, &ev) && ev.event == DROCE_CM_EVENT_DISCONNECTED;
	{
		struct droce_cm_stats st;

		droce_cm_stats(cm, &st);
		printf(PROG ": CM: %" PRIu64 " connect requests, %" PRIu64 " established, %" PRIu64
		       " REJ 8, %" PRIu64 " stray\n", st.connect_requests, st.established,
		       st.rejected_no_listener, st.stray);
	}
	printf(PROG ": established, %s %s, %s\n", passive ? "READ of the client's buffer" : "SEND",
	       steps ? "done" : "NOT done", down ? "disconnected" : "NOT disconnected");
out:
	droce_stack_stop(stack);
	droce_destroy_qp(qp);
	if (conn != NULL && conn != id)
		droce_cm_destroy_id(conn);
	droce_cm_destroy_id(id);
	droce_cm_destroy_channel(ch);
	droce_cm_close(cm);
	droce_destroy_cq(cq);
	droce_dereg_mr(mr);
	droce_dealloc_pd(pd);
	droce_rc_close(dev);
	return steps && down ? 0 : 1;
}

int
main(int argc, char **argv)
{
	static struct droce_eal_start eal;
	struct droce_lcore_layout layout;
	struct droce_stack *stack;
	struct droce_conf *conf = calloc(1, sizeof(*conf));
	char err[DROCE_ERR_LEN];
	int sep = 0, rej_reason = -1, ret = 1;
	uint32_t comm_id;
	struct cm_gsi *gsi;
	double until, next = 0;
	unsigned long port, seconds, flood_n = 0;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	if (conf == NULL || sep == 0 || argc - sep < 5 ||
	    inet_pton(AF_INET, argv[sep + 1], &peer) != 1 ||
	    (port = strtoul(argv[sep + 2], NULL, 10)) == 0 || port > 65535 ||
	    (strcmp(argv[sep + 3], "rep") != 0 && strcmp(argv[sep + 3], "establish") != 0 &&
	     strcmp(argv[sep + 3], "listen") != 0 &&
	     sscanf(argv[sep + 3], "rej:%d", &rej_reason) != 1 &&
	     (sscanf(argv[sep + 3], "flood:%lu", &flood_n) != 1 || flood_n == 0 ||
	      flood_n > 1000000)) ||
	    (seconds = strtoul(argv[sep + 4], NULL, 10)) == 0) {
		fprintf(stderr, "usage: " PROG " [EAL options] -- PEER_IP PORT rep|rej:REASON|establish|listen|flood:N (N 1..1000000) SECONDS key=value...\n");
		return 2;
	}
	if (droce_conf_load(conf, NULL, argv + sep + 5, argc - sep - 5, err, sizeof(err)) != 0 ||
	    droce_eal_start(&eal, conf, sep, argv, err, sizeof(err)) != 0 ||
	    droce_lcores_layout(conf, eal.lcore_option, &layout, err, sizeof(err)) != 0 ||
	    (stack = droce_stack_create(conf, &layout, err, sizeof(err))) == NULL) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	if (strcmp(argv[sep + 3], "establish") == 0 || strcmp(argv[sep + 3], "listen") == 0) {
		ret = connection(stack, (uint16_t)port, seconds, strcmp(argv[sep + 3], "listen") == 0);
		droce_stack_destroy(stack);
		droce_eal_stop(&eal);
		free(conf);
		return ret;
	}
	gsi = cm_gsi_open(stack, 0, on_mad, NULL, err, sizeof(err));
	if (gsi == NULL || droce_stack_start(stack, true) != 0) {
		fprintf(stderr, PROG ": %s\n", gsi == NULL ? err : "the stack does not start");
		return 1;
	}
	comm_id = (uint32_t)rte_rand();
	tid = (uint64_t)0x00000001 << 32 | comm_id;
	until = now() + (double)seconds;
	if (flood_n != 0) {
		ret = flood(stack, gsi, (uint16_t)port, flood_n, seconds);
		until = 0; /* no single REQ below */
		answered = true;
	}
	while (now() < until && !answered) {
		droce_control_poll(stack);
		if (now() >= next) {
			struct cm_msg req;

			make_req(&req, droce_port_addr(stack, 0), peer, (uint16_t)port, comm_id,
				 0x010001);
			if (cm_gsi_send(gsi, peer, &req) != 0)
				fprintf(stderr, PROG ": a REQ was not sent\n");
			next = now() + 1;
		}
		/* A REJ for another reason while a REP is awaited: the peer
		 * may not listen yet; ask again.
		 */
		if (answered && rej_reason < 0 && answer.hdr.attr_id == CM_ATTR_REJ) {
			print_answer();
			answered = false;
			comm_id++;
			tid = (uint64_t)0x00000001 << 32 | comm_id;
		}
	}
	if (flood_n != 0) {
		/* flood() printed its figures */
	} else if (!answered) {
		printf(PROG ": no answer in %lu s\n", seconds);
	} else {
		print_answer();
		ret = rej_reason < 0 ? answer.hdr.attr_id != CM_ATTR_REP
		      : !(answer.hdr.attr_id == CM_ATTR_REJ && answer.rej.reason == rej_reason);
	}
	{
		struct cm_gsi_stats st;

		cm_gsi_stats(gsi, &st);
		printf(PROG ": QP1: %" PRIu64 " MADs in, %" PRIu64 " out", st.rx_mads, st.tx_mads);
		for (unsigned int r = 0; r < CM_GSI_DROP_MAX; r++)
			if (st.dropped[r] != 0)
				printf(", %s %" PRIu64, cm_gsi_drop_name(r), st.dropped[r]);
		printf("\n");
	}
	droce_stack_stop(stack);
	cm_gsi_close(gsi);
	droce_stack_destroy(stack);
	droce_eal_stop(&eal);
	free(conf);
	return ret;
}
