/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * What a peer's connection manager answers to lib/cm's REQ: droce's stack
 * on port 0, QP1 open, a REQ as rdma_cm sends it (service id in the TCP
 * port space, the 36-byte header first in its private data) every second
 * until the peer answers with the REQ's TID or the time is up.
 *
 *   cm_probe [EAL options] -- PEER_IP PORT rep|rej:REASON SECONDS key=value...
 *
 * Prints the answer's fields; exit status 0 when it is the one expected,
 * 1 otherwise (no answer, another one), 2 for bad arguments. A REJ with
 * another reason is waited past while a REP is expected: the peer may not
 * listen yet.
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
#include "droce_core.h"
#include "droce_net.h"
#include "droce_rc.h"

#define PROG "cm_probe"

static struct cm_msg answer;
static bool answered;
static uint64_t tid;
static uint32_t peer;

static void
on_mad(void *arg, const struct cm_msg *msg, const struct cm_gsi_from *from)
{
	(void)arg;
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
make_req(struct cm_msg *m, uint32_t ours, uint32_t peer_ip, uint16_t port, uint32_t comm_id)
{
	struct cm_rdma_hdr h = { .version = 0, .ip_version = 4,
				 .src_port = (uint16_t)(40000 + rte_rand() % 20000) };

	memset(m, 0, sizeof(*m));
	m->hdr.tid = tid;
	m->hdr.attr_id = CM_ATTR_REQ;
	m->req = (struct cm_req){
		.local_comm_id = comm_id, .service_id = cm_service_id(CM_PS_TCP, port),
		.local_ca_guid = 0x0200c6fffe120001ull, .local_qpn = 0x010001,
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
	unsigned long port, seconds;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	if (conf == NULL || sep == 0 || argc - sep < 5 ||
	    inet_pton(AF_INET, argv[sep + 1], &peer) != 1 ||
	    (port = strtoul(argv[sep + 2], NULL, 10)) == 0 || port > 65535 ||
	    (strcmp(argv[sep + 3], "rep") != 0 &&
	     sscanf(argv[sep + 3], "rej:%d", &rej_reason) != 1) ||
	    (seconds = strtoul(argv[sep + 4], NULL, 10)) == 0) {
		fprintf(stderr, "usage: " PROG " [EAL options] -- PEER_IP PORT rep|rej:REASON SECONDS key=value...\n");
		return 2;
	}
	if (droce_conf_load(conf, NULL, argv + sep + 5, argc - sep - 5, err, sizeof(err)) != 0 ||
	    droce_eal_start(&eal, conf, sep, argv, err, sizeof(err)) != 0 ||
	    droce_lcores_layout(conf, eal.lcore_option, &layout, err, sizeof(err)) != 0 ||
	    (stack = droce_stack_create(conf, &layout, err, sizeof(err))) == NULL) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	gsi = cm_gsi_open(stack, 0, on_mad, NULL, err, sizeof(err));
	if (gsi == NULL || droce_stack_start(stack, true) != 0) {
		fprintf(stderr, PROG ": %s\n", gsi == NULL ? err : "the stack does not start");
		return 1;
	}
	comm_id = (uint32_t)rte_rand();
	tid = (uint64_t)0x00000001 << 32 | comm_id;
	until = now() + (double)seconds;
	while (now() < until && !answered) {
		droce_control_poll(stack);
		if (now() >= next) {
			struct cm_msg req;

			make_req(&req, droce_port_addr(stack, 0), peer, (uint16_t)port, comm_id);
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
	if (!answered) {
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
