/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/cm's MAD codec: every field of every connection message written
 * where IBTA vol. 1 ch. 12 (and Linux's cm.c) put it, checked byte by
 * byte against offsets written out here, and read back the same; what a
 * receiver refuses; the rdma_cm header of a REQ's private data. Then QP1
 * on a stack with a ring port: MADs in, the packets it drops by reason,
 * a MAD out through ARP.
 */

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_arp.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "cm_conn.h"
#include "cm_gsi.h"
#include "cm_mad.h"
#include "droce_cm.h"
#include "droce_core.h"
#include "droce_roce.h"
#include "rc_pair.h"
#include "test_eal.h"

/* The big-endian number of @p n bytes at MAD offset @p off. */
static uint64_t
at(const uint8_t *mad, size_t off, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | mad[off + i];
	return v;
}

static void
fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* Encode, check the header, decode, and encode what was decoded: the
 * same bytes (the offsets are checked by each test).
 */
static void
round_trip(const struct cm_msg *m, uint8_t mad[CM_MAD_SIZE])
{
	uint8_t again[CM_MAD_SIZE];
	struct cm_msg back;

	cm_mad_encode(m, mad);
	assert_int_equal(mad[0], 1);
	assert_int_equal(mad[1], 0x07);
	assert_int_equal(mad[2], 2);
	assert_int_equal(mad[3], 0x03);
	assert_int_equal(at(mad, 8, 8), m->hdr.tid);
	assert_int_equal(at(mad, 16, 2), m->hdr.attr_id);
	assert_int_equal(at(mad, 20, 4), m->hdr.attr_mod);
	assert_int_equal(cm_mad_decode(mad, CM_MAD_SIZE, &back), CM_DECODE_OK);
	assert_int_equal(back.hdr.attr_id, m->hdr.attr_id);
	cm_mad_encode(&back, again);
	assert_memory_equal(again, mad, CM_MAD_SIZE);
}

static void
path_check(const uint8_t *mad, size_t base, const struct cm_path *p)
{
	assert_int_equal(at(mad, base, 2), p->local_lid);
	assert_int_equal(at(mad, base + 2, 2), p->remote_lid);
	assert_memory_equal(mad + base + 4, p->local_gid, 16);
	assert_memory_equal(mad + base + 20, p->remote_gid, 16);
	assert_int_equal(at(mad, base + 36, 4), (uint64_t)p->flow_label << 12 | p->packet_rate);
	assert_int_equal(mad[base + 40], p->traffic_class);
	assert_int_equal(mad[base + 41], p->hop_limit);
	assert_int_equal(mad[base + 42], p->sl << 4 | p->subnet_local << 3);
	assert_int_equal(mad[base + 43], p->local_ack_timeout << 3);
}

static void
test_req(void **state)
{
	struct cm_msg m = { .hdr = { .tid = 0x1122334455667788ull, .attr_id = CM_ATTR_REQ,
				     .attr_mod = 0 } };
	struct cm_req *r = &m.req;
	uint8_t mad[CM_MAD_SIZE];

	(void)state;
	*r = (struct cm_req){
		.local_comm_id = 0xa1b2c3d4, .vendor_id = 0x123456,
		.service_id = 0x0000000001064b97ull, .local_ca_guid = 0x0102030405060708ull,
		.local_qkey = 0, .local_qpn = 0x010203, .responder_resources = 4,
		.local_eecn = 0x0a0b0c, .initiator_depth = 5, .remote_eecn = 0x0d0e0f,
		.remote_cm_response_timeout = 20, .transport = CM_TRANSPORT_UC,
		.end_to_end_flow_control = true, .starting_psn = 0xabcdef,
		.local_cm_response_timeout = 19, .retry_count = 7, .pkey = 0xffff,
		.path_mtu = 3, .rdc_exists = true, .rnr_retry_count = 6, .max_cm_retries = 15,
		.srq = true, .extended_transport = 5,
		.primary = { .local_lid = 0xffff, .remote_lid = 0xfffe, .flow_label = 0xabcde,
			     .packet_rate = 0x2a, .traffic_class = 0x10, .hop_limit = 64,
			     .sl = 9, .subnet_local = true, .local_ack_timeout = 17 },
		.alternate = { .local_lid = 0x1234, .remote_lid = 0x4321, .flow_label = 0x12345,
			       .packet_rate = 0x15, .traffic_class = 0x20, .hop_limit = 3,
			       .sl = 2, .subnet_local = false, .local_ack_timeout = 31 },
	};
	fill(r->primary.local_gid, 16, 1);
	fill(r->primary.remote_gid, 16, 2);
	fill(r->alternate.local_gid, 16, 3);
	fill(r->alternate.remote_gid, 16, 4);
	fill(r->private_data, sizeof(r->private_data), 5);
	round_trip(&m, mad);
	assert_int_equal(at(mad, 24, 4), 0xa1b2c3d4);
	assert_int_equal(mad[28], 0);
	assert_int_equal(at(mad, 29, 3), 0x123456);
	assert_int_equal(at(mad, 32, 8), 0x0000000001064b97ull);
	assert_int_equal(at(mad, 40, 8), 0x0102030405060708ull);
	assert_int_equal(at(mad, 48, 4), 0);
	assert_int_equal(at(mad, 52, 4), 0);
	assert_int_equal(at(mad, 56, 3), 0x010203);
	assert_int_equal(mad[59], 4);
	assert_int_equal(at(mad, 60, 3), 0x0a0b0c);
	assert_int_equal(mad[63], 5);
	assert_int_equal(at(mad, 64, 3), 0x0d0e0f);
	assert_int_equal(mad[67], 20 << 3 | 1 << 1 | 1);
	assert_int_equal(at(mad, 68, 3), 0xabcdef);
	assert_int_equal(mad[71], 19 << 3 | 7);
	assert_int_equal(at(mad, 72, 2), 0xffff);
	assert_int_equal(mad[74], 3 << 4 | 1 << 3 | 6);
	assert_int_equal(mad[75], 15 << 4 | 1 << 3 | 5);
	path_check(mad, 76, &r->primary);
	path_check(mad, 120, &r->alternate);
	assert_memory_equal(mad + 164, r->private_data, CM_REQ_PRIVATE);
	assert_int_equal(164 + CM_REQ_PRIVATE, CM_MAD_SIZE);
}

static void
test_rep(void **state)
{
	struct cm_msg m = { .hdr = { .tid = 7, .attr_id = CM_ATTR_REP } };
	struct cm_rep *r = &m.rep;
	uint8_t mad[CM_MAD_SIZE];

	(void)state;
	*r = (struct cm_rep){
		.local_comm_id = 0x01020304, .remote_comm_id = 0x05060708,
		.local_qkey = 0x80010000, .local_qpn = 0x112233, .local_eecn = 0x445566,
		.starting_psn = 0x778899, .responder_resources = 16, .initiator_depth = 8,
		.target_ack_delay = 15, .failover_accepted = 2, .end_to_end_flow_control = true,
		.rnr_retry_count = 7, .srq = true, .local_ca_guid = 0xdeadbeefcafef00dull,
	};
	fill(r->private_data, sizeof(r->private_data), 9);
	round_trip(&m, mad);
	assert_int_equal(at(mad, 24, 4), 0x01020304);
	assert_int_equal(at(mad, 28, 4), 0x05060708);
	assert_int_equal(at(mad, 32, 4), 0x80010000);
	assert_int_equal(at(mad, 36, 3), 0x112233);
	assert_int_equal(mad[39], 0);
	assert_int_equal(at(mad, 40, 3), 0x445566);
	assert_int_equal(at(mad, 44, 3), 0x778899);
	assert_int_equal(mad[48], 16);
	assert_int_equal(mad[49], 8);
	assert_int_equal(mad[50], 15 << 3 | 2 << 1 | 1);
	assert_int_equal(mad[51], 7 << 5 | 1 << 4);
	assert_int_equal(at(mad, 52, 8), 0xdeadbeefcafef00dull);
	assert_memory_equal(mad + 60, r->private_data, CM_REP_PRIVATE);
	assert_int_equal(60 + CM_REP_PRIVATE, CM_MAD_SIZE);
}

static void
test_mra_rej(void **state)
{
	struct cm_msg m = { .hdr = { .tid = 9, .attr_id = CM_ATTR_MRA } };
	uint8_t mad[CM_MAD_SIZE];

	(void)state;
	m.mra = (struct cm_mra){ .local_comm_id = 1, .remote_comm_id = 2,
				 .msg_mraed = CM_MSG_REP, .service_timeout = 24 };
	fill(m.mra.private_data, sizeof(m.mra.private_data), 11);
	round_trip(&m, mad);
	assert_int_equal(at(mad, 24, 4), 1);
	assert_int_equal(at(mad, 28, 4), 2);
	assert_int_equal(mad[32], 1 << 6);
	assert_int_equal(mad[33], 24 << 3);
	assert_memory_equal(mad + 34, m.mra.private_data, CM_MRA_PRIVATE);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 10, .attr_id = CM_ATTR_REJ };
	m.rej = (struct cm_rej){ .local_comm_id = 0, .remote_comm_id = 0x99,
				 .msg_rejected = CM_MSG_REQ, .ari_length = 16, .reason = 28 };
	fill(m.rej.ari, sizeof(m.rej.ari), 13);
	fill(m.rej.private_data, sizeof(m.rej.private_data), 17);
	round_trip(&m, mad);
	assert_int_equal(at(mad, 24, 4), 0);
	assert_int_equal(at(mad, 28, 4), 0x99);
	assert_int_equal(mad[32], 0);
	assert_int_equal(mad[33], 16 << 1);
	assert_int_equal(at(mad, 34, 2), 28);
	assert_memory_equal(mad + 36, m.rej.ari, CM_REJ_ARI);
	assert_memory_equal(mad + 108, m.rej.private_data, CM_REJ_PRIVATE);
	assert_int_equal(108 + CM_REJ_PRIVATE, CM_MAD_SIZE);
}

static void
test_rtu_dreq_drep(void **state)
{
	struct cm_msg m = { .hdr = { .tid = 11, .attr_id = CM_ATTR_RTU } };
	uint8_t mad[CM_MAD_SIZE];

	(void)state;
	m.rtu = (struct cm_rtu){ .local_comm_id = 3, .remote_comm_id = 4 };
	fill(m.rtu.private_data, sizeof(m.rtu.private_data), 19);
	round_trip(&m, mad);
	assert_int_equal(at(mad, 24, 4), 3);
	assert_int_equal(at(mad, 28, 4), 4);
	assert_memory_equal(mad + 32, m.rtu.private_data, CM_RTU_PRIVATE);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 12, .attr_id = CM_ATTR_DREQ };
	m.dreq = (struct cm_dreq){ .local_comm_id = 5, .remote_comm_id = 6,
				   .remote_qpn = 0x10abcd };
	fill(m.dreq.private_data, sizeof(m.dreq.private_data), 23);
	round_trip(&m, mad);
	assert_int_equal(at(mad, 32, 3), 0x10abcd);
	assert_int_equal(mad[35], 0);
	assert_memory_equal(mad + 36, m.dreq.private_data, CM_DREQ_PRIVATE);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 13, .attr_id = CM_ATTR_DREP };
	m.drep = (struct cm_drep){ .local_comm_id = 7, .remote_comm_id = 8 };
	fill(m.drep.private_data, sizeof(m.drep.private_data), 29);
	round_trip(&m, mad);
	assert_memory_equal(mad + 32, m.drep.private_data, CM_DREP_PRIVATE);
}

/* What is not a connection message droce takes, by reason. */
static void
test_refused(void **state)
{
	struct cm_msg m = { .hdr = { .tid = 1, .attr_id = CM_ATTR_RTU } }, out;
	uint8_t mad[CM_MAD_SIZE];

	(void)state;
	cm_mad_encode(&m, mad);
	assert_int_equal(cm_mad_decode(mad, CM_MAD_SIZE - 1, &out), CM_DECODE_SHORT);
	mad[0] = 2;
	assert_int_equal(cm_mad_decode(mad, CM_MAD_SIZE, &out), CM_DECODE_BASE_VERSION);
	mad[0] = 1;
	mad[1] = 0x03; /* subnet administration */
	assert_int_equal(cm_mad_decode(mad, CM_MAD_SIZE, &out), CM_DECODE_CLASS);
	mad[1] = 0x07;
	mad[2] = 1;
	assert_int_equal(cm_mad_decode(mad, CM_MAD_SIZE, &out), CM_DECODE_CLASS_VERSION);
	mad[2] = 2;
	mad[3] = 0x01; /* Get */
	assert_int_equal(cm_mad_decode(mad, CM_MAD_SIZE, &out), CM_DECODE_METHOD);
	mad[3] = 0x03;
	for (uint16_t attr = 0; attr < 0x30; attr++) {
		mad[16] = (uint8_t)(attr >> 8);
		mad[17] = (uint8_t)attr;
		assert_int_equal(cm_mad_decode(mad, CM_MAD_SIZE, &out),
				 attr >= CM_ATTR_REQ && attr <= CM_ATTR_DREP ? CM_DECODE_OK
									   : CM_DECODE_ATTR);
	}
	assert_string_equal(cm_attr_name(CM_ATTR_DREQ), "DREQ");
	assert_string_equal(cm_attr_name(0x17), "?");
	assert_string_equal(cm_decode_error_name(CM_DECODE_METHOD), "method");
}

/* rdma_cm's 36 bytes ahead of a REQ's user data, and its service ids. */
static void
test_rdma_hdr(void **state)
{
	struct cm_rdma_hdr h = { .version = 0, .ip_version = 4, .src_port = 0xbeef }, back;
	uint8_t b[CM_RDMA_HDR_SIZE];
	uint32_t ip;

	(void)state;
	cm_rdma_addr_from_ipv4(inet_addr("198.18.0.2"), h.src_addr);
	cm_rdma_addr_from_ipv4(inet_addr("198.18.0.1"), h.dst_addr);
	cm_rdma_hdr_encode(&h, b);
	assert_int_equal(b[0], 0x00);
	assert_int_equal(b[1], 0x40);
	assert_int_equal(b[2], 0xbe);
	assert_int_equal(b[3], 0xef);
	for (int i = 4; i < 16; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(b[16], 198);
	assert_int_equal(b[19], 2);
	assert_int_equal(b[32], 198);
	assert_int_equal(b[35], 1);
	cm_rdma_hdr_decode(b, &back);
	assert_memory_equal(&back, &h, sizeof(h));
	assert_true(cm_rdma_addr_to_ipv4(back.dst_addr, &ip));
	assert_int_equal(ip, inet_addr("198.18.0.1"));
	back.dst_addr[10] = 0xff; /* ::ffff:a.b.c.d is not how rdma_cm writes IPv4 */
	assert_false(cm_rdma_addr_to_ipv4(back.dst_addr, &ip));
	assert_int_equal(cm_service_id(CM_PS_TCP, 7174), 0x0000000001061c06ull);
	assert_int_equal(CM_RDMA_REQ_USER, 56);
}

/* ---- the connection state machine ------------------------------------------------- */

static const uint8_t hello[] = "hello from the active side";
static const struct cm_conn_param active_param = {
	.responder_resources = 4, .initiator_depth = 4, .retry_count = 7, .rnr_retry_count = 7,
	.private_data = hello, .private_len = sizeof(hello),
};

/* What a step sends, as the peer reads it off the wire. */
static struct cm_msg
wire(const struct cm_step *s)
{
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg m;

	assert_true(s->send);
	cm_mad_encode(&s->msg, mad);
	assert_int_equal(cm_mad_decode(mad, sizeof(mad), &m), CM_DECODE_OK);
	return m;
}

static void
connect_a(struct cm_conn *a, struct cm_step *s)
{
	struct cm_req req = { .service_id = cm_service_id(CM_PS_TCP, 7174), .local_qpn = 0x10001,
			      .starting_psn = 0x111, .pkey = 0xffff, .path_mtu = 3 };

	memcpy(req.private_data, hello, sizeof(hello));
	cm_conn_connect(a, 0xa1, &req, &active_param, s);
	assert_int_equal(a->state, CM_REQ_SENT);
	assert_int_equal(s->msg.hdr.attr_id, CM_ATTR_REQ);
	/* A try waits 2 * 2^(16-8) + 2^(20-8) ms, as rdma_cm's. */
	assert_int_equal(s->timer_ms, 4608);
}

/* A connects to B, which accepts: the QP attributes both ways, Linux's. */
static void
handshake(struct cm_conn *a, struct cm_conn *b)
{
	const struct cm_conn_param bp = { .responder_resources = 2, .initiator_depth = 8,
					  .rnr_retry_count = 6 };
	struct cm_step sa, sb;
	struct cm_msg m;

	connect_a(a, &sa);
	m = wire(&sa);
	cm_conn_req_received(b, 0xb2, &m, &sb);
	assert_int_equal(sb.event, CM_EV_CONNECT_REQUEST);
	assert_memory_equal(sb.private_data, hello, sizeof(hello));
	assert_int_equal(b->state, CM_REQ_RCVD);
	cm_conn_accept(b, 0x20002, 0x222, &bp, &sb);
	assert_int_equal(b->state, CM_REP_SENT);
	assert_true(sb.set_qp);
	/* Each side sends from the PSN the other said it expects. */
	assert_int_equal(sb.qp.dest_qpn, 0x10001);
	assert_int_equal(sb.qp.rq_psn, 0x222);
	assert_int_equal(sb.qp.sq_psn, 0x111);
	assert_int_equal(sb.qp.path_mtu, 3);
	assert_int_equal(sb.qp.max_dest_rd_atomic, 2);  /* min(2, A's depth 4) */
	assert_int_equal(sb.qp.max_rd_atomic, 4);       /* min(8, A's resources 4) */
	assert_int_equal(sb.qp.min_rnr_timer, 0);
	assert_int_equal(sb.qp.timeout, CM_LOCAL_ACK_TIMEOUT);
	assert_int_equal(sb.qp.retry_cnt, 7);
	assert_int_equal(sb.qp.rnr_retry, 7);
	assert_int_equal(sb.timer_ms, 4096);            /* 2^(20-8) ms */
	m = wire(&sb);
	assert_int_equal(m.hdr.tid, sa.msg.hdr.tid);
	cm_conn_input(a, &m, &sa);
	assert_int_equal(a->state, CM_ESTABLISHED);
	assert_int_equal(sa.event, CM_EV_ESTABLISHED);
	assert_true(sa.set_qp);
	assert_int_equal(sa.qp.dest_qpn, 0x20002);
	assert_int_equal(sa.qp.rq_psn, 0x111);
	assert_int_equal(sa.qp.sq_psn, 0x222);
	assert_int_equal(sa.qp.max_dest_rd_atomic, 4);
	assert_int_equal(sa.qp.max_rd_atomic, 2);
	assert_int_equal(sa.qp.timeout, 17);             /* from target ACK delay 15 */
	assert_int_equal(sa.qp.rnr_retry, 6);
	assert_int_equal(sa.timer_ms, 0);
	m = wire(&sa);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_RTU);
	cm_conn_input(b, &m, &sb);
	assert_int_equal(b->state, CM_ESTABLISHED);
	assert_int_equal(sb.event, CM_EV_ESTABLISHED);
}

static void
test_conn_handshake(void **state)
{
	struct cm_conn a, b;

	(void)state;
	handshake(&a, &b);
	assert_string_equal(cm_state_name(a.state), "ESTABLISHED");
}

/* An ACK timeout given (rdma_set_option's) is each QP's, whatever the
 * exchange would give.
 */
static void
test_conn_ack_timeout(void **state)
{
	struct cm_conn_param ap = active_param, bp = { .responder_resources = 2,
							.initiator_depth = 8, .ack_timeout = 12 };
	struct cm_req req = { .service_id = cm_service_id(CM_PS_TCP, 7174), .local_qpn = 0x10001,
			      .starting_psn = 0x111, .pkey = 0xffff, .path_mtu = 3 };
	struct cm_conn a, b;
	struct cm_step sa, sb;
	struct cm_msg m;

	(void)state;
	ap.ack_timeout = 14;
	cm_conn_connect(&a, 0xa1, &req, &ap, &sa);
	m = wire(&sa);
	cm_conn_req_received(&b, 0xb2, &m, &sb);
	cm_conn_accept(&b, 0x20002, 0x222, &bp, &sb);
	assert_true(sb.set_qp);
	assert_int_equal(sb.qp.timeout, 12);
	m = wire(&sb);
	cm_conn_input(&a, &m, &sa);
	assert_int_equal(a.state, CM_ESTABLISHED);
	assert_true(sa.set_qp);
	assert_int_equal(sa.qp.timeout, 14);
}

/* REQs unanswered: sent again 15 times (the same TID), then UNREACHABLE. */
static void
test_conn_unreachable(void **state)
{
	struct cm_conn a;
	struct cm_step s;
	uint64_t tid;

	(void)state;
	connect_a(&a, &s);
	tid = s.msg.hdr.tid;
	for (int i = 0; i < CM_MAX_RETRIES; i++) {
		cm_conn_timeout(&a, &s);
		assert_true(s.send);
		assert_int_equal(s.msg.hdr.attr_id, CM_ATTR_REQ);
		assert_int_equal(s.msg.hdr.tid, tid);
		assert_int_equal(s.timer_ms, 4608);
	}
	cm_conn_timeout(&a, &s);
	assert_false(s.send);
	assert_int_equal(s.event, CM_EV_UNREACHABLE);
	assert_int_equal(a.state, CM_IDLE);
}

/* An MRA buys the peer its service timeout; the REP then completes. */
static void
test_conn_mra(void **state)
{
	struct cm_msg mra = { .hdr = { .attr_id = CM_ATTR_MRA },
			      .mra = { .msg_mraed = CM_MSG_REQ, .service_timeout = 24 } };
	struct cm_msg rep = { .hdr = { .attr_id = CM_ATTR_REP },
			      .rep = { .local_comm_id = 0xb2, .local_qpn = 0x20002 } };
	struct cm_conn a;
	struct cm_step s;

	(void)state;
	connect_a(&a, &s);
	cm_conn_input(&a, &mra, &s);
	assert_int_equal(a.state, CM_MRA_REQ_RCVD);
	assert_int_equal(s.timer_ms, (1u << 16) + 2 * 256);
	cm_conn_input(&a, &rep, &s);
	assert_int_equal(a.state, CM_ESTABLISHED);
	assert_int_equal(s.event, CM_EV_ESTABLISHED);
}

/* The application says no: REJ 28 with its words; the active side hears
 * REJECTED with both.
 */
static void
test_conn_reject(void **state)
{
	static const uint8_t no[] = "not now";
	struct cm_conn a, b;
	struct cm_step sa, sb;
	struct cm_msg m;

	(void)state;
	connect_a(&a, &sa);
	m = wire(&sa);
	cm_conn_req_received(&b, 0xb2, &m, &sb);
	cm_conn_reject(&b, no, sizeof(no), &sb);
	assert_int_equal(b.state, CM_IDLE);
	m = wire(&sb);
	assert_int_equal(m.rej.reason, 28);
	assert_int_equal(m.rej.remote_comm_id, 0xa1);
	cm_conn_input(&a, &m, &sa);
	assert_int_equal(a.state, CM_IDLE);
	assert_int_equal(sa.event, CM_EV_REJECTED);
	assert_int_equal(sa.rej_reason, 28);
	assert_memory_equal(sa.private_data, no, sizeof(no));
}

/* The RTU is lost: B sends its REP again, A (established) its RTU again. */
static void
test_conn_lost_rtu(void **state)
{
	const struct cm_conn_param bp = { .responder_resources = 2, .initiator_depth = 2 };
	struct cm_conn a, b;
	struct cm_step sa, sb;
	struct cm_msg m;

	(void)state;
	connect_a(&a, &sa);
	m = wire(&sa);
	cm_conn_req_received(&b, 0xb2, &m, &sb);
	cm_conn_accept(&b, 0x20002, 0x222, &bp, &sb);
	m = wire(&sb);
	cm_conn_input(&a, &m, &sa);            /* RTU lost */
	cm_conn_timeout(&b, &sb);
	assert_int_equal(sb.msg.hdr.attr_id, CM_ATTR_REP);
	m = wire(&sb);
	cm_conn_input(&a, &m, &sa);
	assert_int_equal(sa.event, CM_EV_NONE);
	assert_false(sa.set_qp);
	m = wire(&sa);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_RTU);
	cm_conn_input(&b, &m, &sb);
	assert_int_equal(sb.event, CM_EV_ESTABLISHED);
	/* A REP's retries run out: UNREACHABLE on the passive side. */
	connect_a(&a, &sa);
	m = wire(&sa);
	cm_conn_req_received(&b, 0xb3, &m, &sb);
	cm_conn_accept(&b, 0x20003, 0x333, &bp, &sb);
	for (int i = 0; i < CM_MAX_RETRIES; i++) {
		cm_conn_timeout(&b, &sb);
		assert_int_equal(sb.msg.hdr.attr_id, CM_ATTR_REP);
	}
	cm_conn_timeout(&b, &sb);
	assert_int_equal(sb.event, CM_EV_UNREACHABLE);
	assert_int_equal(b.state, CM_IDLE);
}

/* DREQ, DREP, timewait on both sides; a DREQ again in timewait gets its
 * DREP again; both disconnecting at once works too.
 */
static void
test_conn_disconnect(void **state)
{
	struct cm_conn a, b;
	struct cm_step sa, sb;
	struct cm_msg m, dreq;

	(void)state;
	handshake(&a, &b);
	cm_conn_disconnect(&a, &sa);
	assert_int_equal(a.state, CM_DREQ_SENT);
	dreq = wire(&sa);
	assert_int_equal(dreq.hdr.attr_id, CM_ATTR_DREQ);
	assert_int_equal(dreq.dreq.remote_qpn, 0x20002);
	cm_conn_input(&b, &dreq, &sb);
	assert_int_equal(sb.event, CM_EV_DISCONNECTED);
	assert_int_equal(b.state, CM_TIMEWAIT);
	assert_int_equal(sb.timer_ms, 1024);           /* 2^(18-8) ms */
	m = wire(&sb);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_DREP);
	assert_int_equal(m.hdr.tid, dreq.hdr.tid);
	cm_conn_input(&a, &m, &sa);
	assert_int_equal(sa.event, CM_EV_DISCONNECTED);
	assert_int_equal(a.state, CM_TIMEWAIT);
	cm_conn_input(&b, &dreq, &sb);
	assert_true(sb.send);
	assert_int_equal(sb.event, CM_EV_NONE);
	cm_conn_timeout(&a, &sa);
	cm_conn_timeout(&b, &sb);
	assert_int_equal(sa.event, CM_EV_TIMEWAIT_EXIT);
	assert_int_equal(sb.event, CM_EV_TIMEWAIT_EXIT);
	assert_int_equal(a.state, CM_IDLE);

	handshake(&a, &b);
	cm_conn_disconnect(&a, &sa);
	cm_conn_disconnect(&b, &sb);
	m = wire(&sb);
	cm_conn_input(&a, &m, &sa);
	assert_int_equal(sa.event, CM_EV_DISCONNECTED);
	assert_int_equal(wire(&sa).hdr.attr_id, CM_ATTR_DREP);
	/* A DREQ nobody answers: after the retries, timewait all the same. */
	handshake(&a, &b);
	cm_conn_disconnect(&a, &sa);
	for (int i = 0; i < CM_MAX_RETRIES; i++)
		cm_conn_timeout(&a, &sa);
	cm_conn_timeout(&a, &sa);
	assert_int_equal(sa.event, CM_EV_DISCONNECTED);
	assert_int_equal(a.state, CM_TIMEWAIT);
}

/* What does not fit a state changes nothing. */
static void
test_conn_ignores(void **state)
{
	const struct cm_conn_param bp = { .responder_resources = 1, .initiator_depth = 1 };
	struct cm_conn a, b;
	struct cm_step sa, sb;
	struct cm_msg req;

	(void)state;
	connect_a(&a, &sa);
	req = wire(&sa);
	cm_conn_req_received(&b, 0xb2, &req, &sb);
	cm_conn_input(&b, &req, &sb);          /* a duplicate REQ while deciding */
	assert_false(sb.send);
	assert_int_equal(b.state, CM_REQ_RCVD);
	cm_conn_disconnect(&b, &sb);           /* not connected */
	assert_false(sb.send);
	cm_conn_input(&a, &req, &sa);          /* a REQ to the active side */
	assert_false(sa.send);
	assert_int_equal(a.state, CM_REQ_SENT);
	cm_conn_accept(&a, 1, 1, &bp, &sa);    /* accept on the active side */
	assert_false(sa.send);
	assert_int_equal(cm_timeout_ms(0), 1);
	assert_int_equal(cm_timeout_ms(20), 4096);
	assert_string_equal(cm_event_name(CM_EV_UNREACHABLE), "UNREACHABLE");
}

/* ---- QP1 on a stack ------------------------------------------------------------ */

#define OUR_IP "198.18.0.1"
#define PEER_IP "198.18.0.2"

static struct droce_stack *stack;
static struct rte_ring *rx_ring, *tx_ring[2];
static struct rte_mempool *test_pool;
static struct cm_gsi *gsi;
static struct rte_ether_addr our_mac;
static const struct rte_ether_addr peer_mac = { { 0x02, 0, 0, 0, 0, 0x22 } };
static struct cm_msg got[8];
static struct cm_gsi_from got_from[8];
static unsigned int nb_got;

static void
on_mad(void *arg, const struct cm_msg *msg, const struct cm_gsi_from *from)
{
	(void)arg;
	if (nb_got < RTE_DIM(got)) {
		got[nb_got] = *msg;
		got_from[nb_got] = *from;
	}
	nb_got++;
}

static void
poll_stack(void)
{
	for (int i = 0; i < 4; i++) {
		droce_worker_poll(stack, 0);
		droce_control_poll(stack);
	}
}

/* A UD SEND to QPN 1 from the peer, built by lib/roce, with @p mad_len
 * bytes of @p msg's MAD.
 */
static struct rte_mbuf *
gsi_frame(const struct cm_msg *msg, uint8_t opcode, uint16_t pkey, uint32_t qkey,
	  uint32_t mad_len)
{
	static uint8_t mad[CM_MAD_SIZE];
	struct droce_frame_spec s = {
		.src_mac = peer_mac, .dst_mac = our_mac,
		.src_ip4 = inet_addr(PEER_IP), .dst_ip4 = inet_addr(OUR_IP),
		.opcode = opcode, .pkey = pkey, .dest_qp = 1, .src_qp = 1, .qkey = qkey,
		.payload = mad, .payload_len = mad_len,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(test_pool);

	assert_non_null(m);
	cm_mad_encode(msg, mad);
	assert_int_equal(droce_frame_build(m, &s), 0);
	return m;
}

static void
inject(struct rte_mbuf *m)
{
	assert_int_equal(rte_ring_enqueue(rx_ring, m), 0);
	poll_stack();
}

static const struct cm_msg a_req = {
	.hdr = { .tid = 0x42, .attr_id = CM_ATTR_REQ },
	.req = { .local_comm_id = 0x1234, .service_id = 0x0000000001061c06ull,
		 .local_qpn = 0x10203, .starting_psn = 0x777 },
};

static void
test_gsi_receives(void **state)
{
	struct cm_gsi_stats st;

	(void)state;
	nb_got = 0;
	inject(gsi_frame(&a_req, DROCE_OP_UD | DROCE_OP_SEND_ONLY, 0xffff, CM_GSI_QKEY,
			 CM_MAD_SIZE));
	assert_int_equal(nb_got, 1);
	assert_int_equal(got[0].hdr.attr_id, CM_ATTR_REQ);
	assert_int_equal(got[0].hdr.tid, 0x42);
	assert_int_equal(got[0].req.local_comm_id, 0x1234);
	assert_int_equal(got[0].req.service_id, 0x0000000001061c06ull);
	assert_int_equal(got_from[0].ip, inet_addr(PEER_IP));
	assert_int_equal(got_from[0].src_qp, 1);
	cm_gsi_stats(gsi, &st);
	assert_int_equal(st.rx_mads, 1);
}

/* Each packet a GSI must not take: counted under its reason, not given
 * to the CM.
 */
static void
test_gsi_refuses(void **state)
{
	struct cm_msg sa = a_req;
	struct cm_gsi_stats before, after;
	struct rte_mbuf *m;
	uint8_t mad[CM_MAD_SIZE];

	(void)state;
	nb_got = 0;
	cm_gsi_stats(gsi, &before);
	inject(gsi_frame(&a_req, DROCE_OP_UD | DROCE_OP_SEND_ONLY, 0xffff, 0x11111111,
			 CM_MAD_SIZE));
	inject(gsi_frame(&a_req, DROCE_OP_RC | DROCE_OP_SEND_ONLY, 0xffff, 0, CM_MAD_SIZE));
	inject(gsi_frame(&a_req, DROCE_OP_UD | DROCE_OP_SEND_ONLY, 0x8001, CM_GSI_QKEY,
			 CM_MAD_SIZE));
	inject(gsi_frame(&a_req, DROCE_OP_UD | DROCE_OP_SEND_ONLY, 0xffff, CM_GSI_QKEY, 200));
	m = gsi_frame(&a_req, DROCE_OP_UD | DROCE_OP_SEND_ONLY, 0xffff, CM_GSI_QKEY,
		      CM_MAD_SIZE);
	rte_pktmbuf_mtod_offset(m, uint8_t *, 100)[0] ^= 0x40; /* inside the MAD */
	inject(m);
	/* A subnet administration MAD: not the CM's. */
	cm_mad_encode(&sa, mad);
	sa.hdr.attr_id = CM_ATTR_RTU;
	m = gsi_frame(&sa, DROCE_OP_UD | DROCE_OP_SEND_ONLY, 0xffff, CM_GSI_QKEY, CM_MAD_SIZE);
	rte_pktmbuf_mtod_offset(m, uint8_t *, 14 + 20 + 8 + 12 + 8 + 1)[0] = 0x03;
	droce_icrc_fill_mbuf(m, RTE_ETHER_HDR_LEN);
	inject(m);
	cm_gsi_stats(gsi, &after);
	assert_int_equal(nb_got, 0);
	assert_int_equal(after.dropped[CM_GSI_BAD_QKEY] - before.dropped[CM_GSI_BAD_QKEY], 1);
	assert_int_equal(after.dropped[CM_GSI_NOT_UD_SEND] - before.dropped[CM_GSI_NOT_UD_SEND],
			 1);
	assert_int_equal(after.dropped[CM_GSI_BAD_PKEY] - before.dropped[CM_GSI_BAD_PKEY], 1);
	assert_int_equal(after.dropped[CM_GSI_BAD_LENGTH] - before.dropped[CM_GSI_BAD_LENGTH],
			 1);
	assert_int_equal(after.dropped[CM_GSI_BAD_ICRC] - before.dropped[CM_GSI_BAD_ICRC], 1);
	assert_int_equal(after.not_cm[CM_DECODE_CLASS] - before.not_cm[CM_DECODE_CLASS], 1);
	assert_string_equal(cm_gsi_drop_name(CM_GSI_BAD_QKEY), "bad_qkey");
}

/* A MAD to the peer: held while ARP asks, then out as a UD SEND ONLY to
 * QP1 with the GSI Q_Key, its ICRC right, its MAD the message.
 */
static void
test_gsi_sends(void **state)
{
	struct cm_msg rep = { .hdr = { .tid = 0x42, .attr_id = CM_ATTR_REP },
			      .rep = { .local_comm_id = 9, .remote_comm_id = 0x1234,
				       .local_qpn = 0x10005, .starting_psn = 0x999 } };
	uint8_t want[CM_MAD_SIZE];
	const struct rte_ipv4_hdr *ip;
	const struct rte_udp_hdr *udp;
	const struct droce_deth *deth;
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;
	struct droce_pkt pkt = { .bth = NULL };
	struct rte_mbuf *m = NULL;
	uint32_t l4;

	(void)state;
	assert_int_equal(cm_gsi_send(gsi, inet_addr(PEER_IP), &rep), 0);
	poll_stack();
	/* ARP asks first; the MAD waits. */
	assert_int_equal(rte_ring_dequeue(tx_ring[0], (void **)&m), 0);
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	assert_int_equal(eth->ether_type, RTE_BE16(RTE_ETHER_TYPE_ARP));
	rte_pktmbuf_free(m);
	assert_true(rte_ring_empty(tx_ring[0]));
	/* The peer answers. */
	m = rte_pktmbuf_alloc(test_pool);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*arp));
	eth->dst_addr = our_mac;
	eth->src_addr = peer_mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	arp = (struct rte_arp_hdr *)(eth + 1);
	*arp = (struct rte_arp_hdr){
		.arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER),
		.arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4), .arp_hlen = 6, .arp_plen = 4,
		.arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY),
		.arp_data = { .arp_sha = peer_mac, .arp_sip = inet_addr(PEER_IP),
			      .arp_tha = our_mac, .arp_tip = inet_addr(OUR_IP) },
	};
	inject(m);
	assert_int_equal(rte_ring_dequeue(tx_ring[0], (void **)&m), 0);
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	assert_memory_equal(&eth->dst_addr, &peer_mac, sizeof(peer_mac));
	ip = (const struct rte_ipv4_hdr *)(eth + 1);
	udp = (const struct rte_udp_hdr *)(ip + 1);
	assert_int_equal(ip->dst_addr, inet_addr(PEER_IP));
	assert_int_equal(ip->src_addr, inet_addr(OUR_IP));
	assert_int_equal(udp->dst_port, RTE_BE16(4791));
	l4 = rte_be_to_cpu_16(udp->dgram_len);
	assert_int_equal(droce_roce_parse(udp + 1, l4 - 8, &pkt), DROCE_PARSE_OK);
	assert_int_equal(pkt.opcode, DROCE_OP_UD | DROCE_OP_SEND_ONLY);
	assert_int_equal(droce_bth_dqpn(pkt.bth), 1);
	assert_int_equal(droce_bth_pkey(pkt.bth), 0xffff);
	deth = (const struct droce_deth *)droce_pkt_ext(&pkt, DROCE_EXT_DETH);
	assert_int_equal(droce_deth_qkey(deth), CM_GSI_QKEY);
	assert_int_equal(droce_deth_sqpn(deth), 1);
	assert_true(droce_icrc_ok(ip, 20 + l4));
	assert_int_equal(pkt.payload_len, CM_MAD_SIZE);
	cm_mad_encode(&rep, want);
	assert_memory_equal(pkt.payload, want, CM_MAD_SIZE);
	rte_pktmbuf_free(m);
}

static int
stack_up(void **state)
{
	char *const overrides[] = {
		"port.0.device=net_ring_cm0", "port.0.address=" OUR_IP "/24", "stats.period=0",
	};
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN];

	(void)state;
	rx_ring = rte_ring_create("cm_rx", 1024, SOCKET_ID_ANY, 0);
	tx_ring[0] = rte_ring_create("cm_tx0", 1024, SOCKET_ID_ANY, 0);
	tx_ring[1] = rte_ring_create("cm_tx1", 1024, SOCKET_ID_ANY, 0);
	assert_true(rte_eth_from_rings("cm0", &rx_ring, 1, tx_ring, 2, SOCKET_ID_ANY) >= 0);
	test_pool = rte_pktmbuf_pool_create("cm_test", 1023, 0, 0, 2048 + RTE_PKTMBUF_HEADROOM,
					    SOCKET_ID_ANY);
	assert_non_null(test_pool);
	if (droce_conf_load(&conf, NULL, overrides, RTE_DIM(overrides), err, sizeof(err)) != 0 ||
	    droce_lcores_layout(&conf, "--lcores (test)", &layout, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	stack = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (stack == NULL)
		fail_msg("%s", err);
	gsi = cm_gsi_open(stack, 0, on_mad, NULL, err, sizeof(err));
	if (gsi == NULL)
		fail_msg("%s", err);
	droce_port_mac(stack, 0, &our_mac);
	assert_int_equal(droce_stack_start(stack, false), 0);
	/* What the start sent (a gratuitous ARP) is not the tests'. */
	poll_stack();
	while (rte_ring_count(tx_ring[0]) != 0) {
		struct rte_mbuf *m = NULL;

		assert_int_equal(rte_ring_dequeue(tx_ring[0], (void **)&m), 0);
		rte_pktmbuf_free(m);
	}
	return 0;
}

static int
stack_down(void **state)
{
	(void)state;
	droce_stack_stop(stack);
	cm_gsi_close(gsi);
	droce_stack_destroy(stack);
	return 0;
}

/* ---- the API: two stacks, each with a CM, the test as the wire ---------------------- */

static struct side A = { .name = "cmA", .address = "198.18.0.1" };
static struct side B = { .name = "cmB", .address = "198.18.0.2" };
static struct droce_cm_channel *cha, *chb;

static void
cm_open(struct side *s)
{
	char err[DROCE_ERR_LEN];

	s->user = droce_cm_open(s->stack, 0, err, sizeof(err));
	if (s->user == NULL)
		fail_msg("%s", err);
}

static void
pump(void)
{
	rc_pair_pump(&A, &B);
}

/* The next event of @p ch within @p seconds, else fail. */
static void
next_event(struct droce_cm_channel *ch, struct droce_cm_event *ev, double seconds)
{
	uint64_t until = rte_get_timer_cycles() + (uint64_t)(seconds * (double)rte_get_timer_hz());

	while (droce_cm_get_event(ch, ev) != 0) {
		if (rte_get_timer_cycles() > until)
			fail_msg("no CM event within %.1f s", seconds);
		pump();
	}
}

static struct droce_qp *
rc_qp(struct side *s)
{
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC, .send_cq = s->scq, .recv_cq = s->rcq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_INIT, .port_num = 1,
				   .qp_access_flags = DROCE_ACCESS_REMOTE_WRITE };
	struct droce_qp *qp = droce_create_qp(s->pd, &ia);

	assert_non_null(qp);
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX |
					 DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS), 0);
	return qp;
}

/* The work the CQs hold (flushed when connections ended), taken. */
static void
drain_cqs(void)
{
	struct droce_wc wc;

	while (droce_poll_cq(A.scq, 1, &wc) > 0 || droce_poll_cq(A.rcq, 1, &wc) > 0 ||
	       droce_poll_cq(B.scq, 1, &wc) > 0 || droce_poll_cq(B.rcq, 1, &wc) > 0)
		;
}

/* A test's listener and QPs destroyed, and the stacks run a little to
 * free them.
 */
static void
test_end(struct droce_cm_id *listener, struct droce_qp *qpa, struct droce_qp *qpb)
{
	assert_int_equal(droce_cm_destroy_id(listener), 0);
	assert_int_equal(droce_destroy_qp(qpa), 0);
	if (qpb != NULL)
		assert_int_equal(droce_destroy_qp(qpb), 0);
	for (int i = 0; i < 4; i++)
		pump();
}

/* @p ida connected with @p qpa to B's listener on @p port, which accepts
 * with @p qpb; both ESTABLISHED. Returns B's id.
 */
static struct droce_cm_id *
establish(struct droce_cm_id *ida, uint16_t port, struct droce_qp *qpa, struct droce_qp *qpb)
{
	const struct droce_cm_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
					       .retry_count = 7, .rnr_retry_count = 7 };
	struct droce_cm_id *idb;
	struct droce_cm_event ev;

	assert_int_equal(droce_cm_connect(ida, inet_addr(B.address), port, qpa, &p), 0);
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_CONNECT_REQUEST);
	idb = ev.id;
	assert_int_equal(droce_cm_accept(idb, qpb, &p), 0);
	next_event(cha, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_ESTABLISHED);
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_ESTABLISHED);
	return idb;
}

/* A connects to B's listener with private data, B accepts with its own;
 * both ESTABLISHED; a SEND crosses the QPs the CM set up; A disconnects;
 * both DISCONNECTED, then TIMEWAIT_EXIT.
 */
static void
test_api_connect_send_disconnect(void **state)
{
	static const char hi[] = "hi from A", ok[] = "welcome";
	struct droce_cm_conn_param pa = { .private_data = hi, .private_data_len = sizeof(hi),
					  .responder_resources = 1, .initiator_depth = 1,
					  .retry_count = 7, .rnr_retry_count = 7 };
	struct droce_cm_conn_param pb = { .private_data = ok, .private_data_len = sizeof(ok),
					  .responder_resources = 1, .initiator_depth = 1,
					  .rnr_retry_count = 7 };
	struct droce_cm_id *listener = droce_cm_create_id(chb, (void *)0xb0),
			   *second = droce_cm_create_id(chb, NULL),
			   *ida = droce_cm_create_id(cha, (void *)0xa0), *idb;
	struct droce_qp *qpa = rc_qp(&A), *qpb = rc_qp(&B);
	struct droce_cm_event ev;
	struct droce_wc wc;

	(void)state;
	assert_int_equal(droce_cm_listen(listener, 7174), 0);
	assert_int_equal(droce_cm_listen(second, 7174), -EADDRINUSE);
	assert_int_equal(droce_cm_destroy_id(second), 0);
	assert_int_equal(droce_cm_connect(ida, inet_addr(B.address), 7174, qpa, &pa), 0);
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev.listen_id, listener);
	assert_ptr_equal(droce_cm_id_context(ev.id), (void *)0xb0);
	assert_int_equal(ev.peer_ip, inet_addr(A.address));
	assert_int_equal(ev.private_data_len, 56);
	assert_memory_equal(ev.private_data, hi, sizeof(hi));
	idb = ev.id;
	assert_int_equal(droce_cm_accept(idb, qpb, &pb), 0);
	next_event(cha, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_ESTABLISHED);
	assert_memory_equal(ev.private_data, ok, sizeof(ok));
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_ESTABLISHED);
	assert_int_equal(droce_qp_state(qpa), DROCE_QPS_RTS);
	assert_int_equal(droce_qp_state(qpb), DROCE_QPS_RTS);
	/* The QPs the CM set up carry a SEND. */
	{
		static char out[] = "through the CM's QPs", in[64];
		struct droce_mr *ma = droce_reg_mr(A.pd, out, sizeof(out), DROCE_ACCESS_LOCAL_WRITE);
		struct droce_mr *mb = droce_reg_mr(B.pd, in, sizeof(in), DROCE_ACCESS_LOCAL_WRITE);
		struct droce_sge sa = { (uintptr_t)out, sizeof(out), ma->lkey };
		struct droce_sge sb = { (uintptr_t)in, sizeof(in), mb->lkey };
		struct droce_recv_wr rw = { .wr_id = 2, .sg_list = &sb, .num_sge = 1 }, *rbad;
		struct droce_send_wr sw = { .wr_id = 1, .sg_list = &sa, .num_sge = 1,
					    .opcode = DROCE_WR_SEND,
					    .send_flags = DROCE_SEND_SIGNALED }, *sbad;
		int got = 0;

		assert_int_equal(droce_post_recv(qpb, &rw, &rbad), 0);
		assert_int_equal(droce_post_send(qpa, &sw, &sbad), 0);
		for (int i = 0; i < 1000 && got == 0; i++) {
			pump();
			got = droce_poll_cq(B.rcq, 1, &wc);
		}
		assert_int_equal(got, 1);
		assert_int_equal(wc.status, DROCE_WC_SUCCESS);
		assert_string_equal(in, out);
		while (droce_poll_cq(A.scq, 1, &wc) == 0)
			pump();
		assert_int_equal(wc.status, DROCE_WC_SUCCESS);
		assert_int_equal(droce_dereg_mr(ma), 0);
		assert_int_equal(droce_dereg_mr(mb), 0);
	}
	assert_int_equal(droce_cm_disconnect(ida), 0);
	assert_int_equal(droce_qp_state(qpa), DROCE_QPS_ERR);
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_DISCONNECTED);
	/* B disconnects too, after A's DREQ (as ucmatose's client does). */
	assert_int_equal(droce_cm_disconnect(idb), 0);
	assert_int_equal(droce_qp_state(qpb), DROCE_QPS_ERR);
	assert_int_equal(droce_cm_disconnect(ida), 0);
	next_event(cha, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_DISCONNECTED);
	next_event(cha, &ev, 3);
	assert_int_equal(ev.event, DROCE_CM_EVENT_TIMEWAIT_EXIT);
	next_event(chb, &ev, 3);
	assert_int_equal(ev.event, DROCE_CM_EVENT_TIMEWAIT_EXIT);
	assert_int_equal(droce_cm_disconnect(ida), -EINVAL);
	drain_cqs();
	assert_int_equal(droce_cm_destroy_id(ida), 0);
	assert_int_equal(droce_cm_destroy_id(idb), 0);
	test_end(listener, qpa, qpb);
}

/* No listener: REJ 8 from the peer's CM. A listener that says no: REJ 28
 * with its words. Private data too long: refused at the call.
 */
static void
test_api_rejections(void **state)
{
	static const char no[] = "full up";
	uint8_t big[57] = { 0 };
	struct droce_cm_conn_param pa = { .responder_resources = 1, .initiator_depth = 1,
					  .retry_count = 7, .rnr_retry_count = 7 };
	struct droce_cm_id *listener = droce_cm_create_id(chb, NULL),
			   *ida = droce_cm_create_id(cha, NULL);
	struct droce_qp *qpa = rc_qp(&A);
	struct droce_cm_stats st;
	struct droce_cm_event ev;

	(void)state;
	assert_int_equal(droce_cm_connect(ida, inet_addr(B.address), 7000, qpa, &pa), 0);
	next_event(cha, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_REJECTED);
	assert_int_equal(ev.status, 8);
	droce_cm_stats((struct droce_cm *)B.user, &st);
	assert_int_equal(st.rejected_no_listener, 1);
	assert_int_equal(droce_cm_destroy_id(ida), 0);

	ida = droce_cm_create_id(cha, NULL);
	assert_int_equal(droce_cm_listen(listener, 7175), 0);
	assert_int_equal(droce_cm_connect(ida, inet_addr(B.address), 7175, qpa, &pa), 0);
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(droce_cm_reject(ev.id, no, sizeof(no)), 0);
	assert_int_equal(droce_cm_destroy_id(ev.id), 0);
	next_event(cha, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_REJECTED);
	assert_int_equal(ev.status, 28);
	assert_memory_equal(ev.private_data, no, sizeof(no));

	pa.private_data = big;
	pa.private_data_len = sizeof(big);
	assert_int_equal(droce_cm_connect(ida, inet_addr(B.address), 7175, qpa, &pa), -EINVAL);
	assert_int_equal(droce_cm_disconnect(ida), -EINVAL);
	assert_int_equal(droce_cm_destroy_id(ida), 0);
	assert_int_equal(droce_cm_destroy_id(listener), 0);
	assert_int_equal(droce_destroy_qp(qpa), 0);
	for (int i = 0; i < 4; i++)
		pump();
}

/* REQs from 1100 connections no one accepts: at most 1024 half-open
 * (each announced), the rest REJ 3; every id destroyed after, nothing
 * left on the channel.
 */
/* A REQ from A's address straight into B's receive ring, for B's GID
 * unless @p gid and B's address in its rdma_cm header unless @p dst; REQ
 * number @p i, for port @p port, from QP @p qpn.
 */
static void
inject_req(uint32_t i, uint16_t port, uint32_t qpn, const uint8_t *gid, uint32_t dst)
{
	struct cm_rdma_hdr h = { .version = 0, .ip_version = 4, .src_port = 40000 };
	static uint8_t mad[CM_MAD_SIZE];
	struct cm_msg req = { .hdr = { .tid = 0x100000000ull | i, .attr_id = CM_ATTR_REQ },
			      .req = { .local_comm_id = 0x7000 + i,
				       .service_id = cm_service_id(CM_PS_TCP, port),
				       .local_qpn = qpn, .path_mtu = 3 } };
	struct rte_ether_addr b_mac;
	struct droce_frame_spec f = {
		.src_mac = peer_mac,
		.src_ip4 = inet_addr(A.address), .dst_ip4 = inet_addr(B.address),
		.opcode = DROCE_OP_UD | DROCE_OP_SEND_ONLY, .dest_qp = 1, .src_qp = 1,
		.qkey = CM_GSI_QKEY, .payload = mad, .payload_len = CM_MAD_SIZE,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(test_pool);

	droce_port_mac(B.stack, 0, &b_mac);
	f.dst_mac = b_mac;
	if (gid != NULL)
		memcpy(req.req.primary.remote_gid, gid, 16);
	else
		droce_gid_from_ipv4(inet_addr(B.address), req.req.primary.remote_gid);
	cm_rdma_addr_from_ipv4(inet_addr(A.address), h.src_addr);
	cm_rdma_addr_from_ipv4(dst != 0 ? dst : inet_addr(B.address), h.dst_addr);
	cm_rdma_hdr_encode(&h, req.req.private_data);
	cm_mad_encode(&req, mad);
	assert_non_null(m);
	assert_int_equal(droce_frame_build(m, &f), 0);
	while (rte_ring_enqueue(B.rx, m) != 0)
		pump();
}

/* A REQ for another GID: REJ 12; for another address in its rdma_cm
 * header: REJ 28. A REQ from a QP whose connection to B is in timewait,
 * its id kept or destroyed: REJ 10. None reaches the listener.
 */
static void
test_api_req_refusals(void **state)
{
	static const uint8_t other_gid[16] = { 0xfe, 0x80, [15] = 1 };
	struct droce_cm_id *listener = droce_cm_create_id(chb, NULL),
			   *ida = droce_cm_create_id(cha, NULL), *idb;
	struct droce_qp *qpa = rc_qp(&A), *qpb = rc_qp(&B);
	struct droce_cm_stats before, after;
	struct droce_cm_event ev;

	(void)state;
	droce_cm_stats(B.user, &before);
	assert_int_equal(droce_cm_listen(listener, 7181), 0);
	inject_req(1, 7181, 0x12345, other_gid, 0);
	inject_req(2, 7181, 0x12346, NULL, inet_addr("198.18.0.99"));
	for (int i = 0; i < 8; i++)
		pump();
	droce_cm_stats(B.user, &after);
	assert_int_equal(after.rejected_invalid_gid - before.rejected_invalid_gid, 1);
	assert_int_equal(after.rejected_bad_header - before.rejected_bad_header, 1);
	assert_int_equal(droce_cm_get_event(chb, &ev), -EAGAIN);

	idb = establish(ida, 7181, qpa, qpb);
	assert_int_equal(droce_cm_disconnect(ida), 0);
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_DISCONNECTED);
	inject_req(3, 7181, droce_qp_num(qpa), NULL, 0);
	for (int i = 0; i < 8; i++)
		pump();
	droce_cm_stats(B.user, &after);
	assert_int_equal(after.rejected_stale - before.rejected_stale, 1);
	assert_int_equal(droce_cm_get_event(chb, &ev), -EAGAIN);
	assert_int_equal(after.connect_requests - before.connect_requests, 1);
	assert_int_equal(after.ids, before.ids + 1); /* idb */

	/* Destroyed in timewait, the connection still keeps its QPN out. */
	assert_int_equal(droce_cm_destroy_id(idb), 0);
	inject_req(4, 7181, droce_qp_num(qpa), NULL, 0);
	for (int i = 0; i < 8; i++)
		pump();
	droce_cm_stats(B.user, &after);
	assert_int_equal(after.rejected_stale - before.rejected_stale, 2);
	assert_int_equal(droce_cm_get_event(chb, &ev), -EAGAIN);

	while (droce_cm_get_event(cha, &ev) == 0)
		;
	drain_cqs();
	assert_int_equal(droce_cm_destroy_id(ida), 0);
	test_end(listener, qpa, qpb);
	droce_cm_stats(B.user, &after);
	assert_int_equal(after.ids, before.ids - 1); /* the listener was one */
}

/* Destroying an id tells the peer, as Linux's CM does: REJ 4 while it
 * connects (the passive id hears REJECTED), a DREQ once established (the
 * peer hears DISCONNECTED).
 */
static void
test_api_destroy_tells_peer(void **state)
{
	struct droce_cm_conn_param pa = { .responder_resources = 1, .initiator_depth = 1,
					  .retry_count = 7, .rnr_retry_count = 7 };
	struct droce_cm_id *listener = droce_cm_create_id(chb, NULL),
			   *ida = droce_cm_create_id(cha, NULL), *idb;
	struct droce_qp *qpa = rc_qp(&A), *qpb = rc_qp(&B);
	struct droce_cm_event ev;

	(void)state;
	assert_int_equal(droce_cm_listen(listener, 7183), 0);
	assert_int_equal(droce_cm_connect(ida, inet_addr(B.address), 7183, qpa, &pa), 0);
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_CONNECT_REQUEST);
	idb = ev.id;
	assert_int_equal(droce_cm_destroy_id(ida), 0);
	next_event(chb, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_REJECTED);
	assert_ptr_equal(ev.id, idb);
	assert_int_equal(ev.status, 4);
	assert_int_equal(droce_cm_accept(idb, qpb, &pa), -EINVAL);
	assert_int_equal(droce_cm_destroy_id(idb), 0);

	ida = droce_cm_create_id(cha, NULL);
	assert_int_equal(droce_qp_state(qpa), DROCE_QPS_INIT);
	idb = establish(ida, 7183, qpa, qpb);
	assert_int_equal(droce_cm_destroy_id(idb), 0);
	next_event(cha, &ev, 2);
	assert_int_equal(ev.event, DROCE_CM_EVENT_DISCONNECTED);
	assert_int_equal(droce_qp_state(qpa), DROCE_QPS_ERR);
	next_event(cha, &ev, 3);
	assert_int_equal(ev.event, DROCE_CM_EVENT_TIMEWAIT_EXIT);
	drain_cqs();
	assert_int_equal(droce_cm_destroy_id(ida), 0);
	test_end(listener, qpa, qpb);
}

/* An event of an id destroyed before it was taken is skipped, and the id
 * is freed with it (ASan would see a use after free otherwise).
 */
static void
test_api_event_of_destroyed_id(void **state)
{
	struct droce_cm_conn_param pa = { .responder_resources = 1, .initiator_depth = 1,
					  .retry_count = 7, .rnr_retry_count = 7 };
	struct droce_cm_id *ida = droce_cm_create_id(cha, NULL);
	struct droce_qp *qpa = rc_qp(&A);
	struct droce_cm_stats st;
	struct droce_cm_event ev;
	uint64_t until = rte_get_timer_cycles() + 2 * rte_get_timer_hz();
	uint64_t rejected;

	(void)state;
	droce_cm_stats(B.user, &st);
	rejected = st.rejected_no_listener;
	assert_int_equal(droce_cm_connect(ida, inet_addr(B.address), 7001, qpa, &pa), 0);
	while (st.rejected_no_listener == rejected && rte_get_timer_cycles() < until) {
		pump();
		droce_cm_stats(B.user, &st);
	}
	for (int i = 0; i < 8; i++)
		pump();             /* the REJ back at A: REJECTED waits on cha */
	assert_int_equal(droce_cm_destroy_id(ida), 0);
	assert_int_equal(droce_cm_get_event(cha, &ev), -EAGAIN);
	assert_int_equal(droce_destroy_qp(qpa), 0);
}

struct thread_calls {
	struct droce_cm_channel *ch;
	struct droce_cm_id *id;
	int listen, destroy;
	bool done;                      /* atomic */
};

static void *
calls_from_thread(void *arg)
{
	struct thread_calls *t = arg;
	t->id = droce_cm_create_id(t->ch, NULL);
	t->listen = t->id != NULL ? droce_cm_listen(t->id, 7182) : -ENOMEM;
	t->destroy = t->id != NULL ? droce_cm_destroy_id(t->id) : -ENOMEM;
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Calls from a thread that is not the control lcore are handed over and
 * answered; one the control lcore does not take in time fails with
 * -ETIMEDOUT and leaves nothing behind (the call is freed when it is
 * found abandoned).
 */
static void
test_api_calls_from_thread(void **state)
{
	struct thread_calls t = { .ch = chb };
	struct droce_cm_stats before, after;
	pthread_t th;

	(void)state;
	droce_cm_stats(B.user, &before);
	assert_int_equal(pthread_create(&th, NULL, calls_from_thread, &t), 0);
	while (!__atomic_load_n(&t.done, __ATOMIC_ACQUIRE))
		pump();
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(t.listen, 0);
	assert_int_equal(t.destroy, 0);

	/* Nobody runs B's control lcore now: the thread's calls time out. */
	t = (struct thread_calls){ .ch = chb };
	assert_int_equal(pthread_create(&th, NULL, calls_from_thread, &t), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(t.listen, -ETIMEDOUT);
	assert_int_equal(t.destroy, -ETIMEDOUT);
	for (int i = 0; i < 4; i++)
		pump();             /* the abandoned calls are freed, not run */
	droce_cm_stats(B.user, &after);
	assert_int_equal(after.ids, before.ids + 1);
	assert_int_equal(droce_cm_destroy_id(t.id), 0);
	droce_cm_stats(B.user, &after);
	assert_int_equal(after.ids, before.ids);
}

static void
test_api_req_flood(void **state)
{
	struct droce_cm_id *listener = droce_cm_create_id(chb, NULL);
	struct droce_cm_stats before, after;
	struct droce_cm_event ev;
	unsigned int announced = 0;

	(void)state;
	droce_cm_stats(B.user, &before);
	assert_int_equal(droce_cm_listen(listener, 7180), 0);
	for (uint32_t i = 0; i < 1100; i++) {
		inject_req(i, 7180, 0x10000 + i, NULL, 0);
		if (i % 64 == 63)
			pump();
	}
	for (int i = 0; i < 64; i++)
		pump();
	droce_cm_stats(B.user, &after);
	assert_int_equal(after.connect_requests - before.connect_requests, 1023);
	assert_int_equal(after.rejected_no_resources - before.rejected_no_resources, 1100 - 1023);
	while (droce_cm_get_event(chb, &ev) == 0) {
		assert_int_equal(ev.event, DROCE_CM_EVENT_CONNECT_REQUEST);
		assert_int_equal(droce_cm_destroy_id(ev.id), 0);
		announced++;
	}
	assert_int_equal(announced, 1023);
	assert_int_equal(droce_cm_destroy_id(listener), 0);
	for (int i = 0; i < 8; i++)
		pump();
	while (droce_cm_get_event(cha, &ev) == 0)
		;
}

static int
pair_up(void **state)
{
	(void)state;
	if (test_pool == NULL)
		test_pool = rte_pktmbuf_pool_create("cm_flood", 2047, 0, 0,
						    2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
	assert_non_null(test_pool);
	A.before_start = cm_open;
	B.before_start = cm_open;
	rc_pair_side_up(&A);
	rc_pair_side_up(&B);
	A.scq = droce_create_cq(A.dev, 64);
	A.rcq = droce_create_cq(A.dev, 64);
	B.scq = droce_create_cq(B.dev, 64);
	B.rcq = droce_create_cq(B.dev, 64);
	cha = droce_cm_create_channel(A.user);
	chb = droce_cm_create_channel(B.user);
	assert_non_null(cha);
	assert_non_null(chb);
	return 0;
}

static int
pair_down(void **state)
{
	(void)state;
	assert_int_equal(droce_cm_destroy_channel(cha), 0);
	assert_int_equal(droce_cm_destroy_channel(chb), 0);
	droce_destroy_cq(A.scq);
	droce_destroy_cq(A.rcq);
	droce_destroy_cq(B.scq);
	droce_destroy_cq(B.rcq);
	droce_stack_stop(A.stack);
	droce_stack_stop(B.stack);
	assert_int_equal(droce_cm_close(A.user), 0);
	assert_int_equal(droce_cm_close(B.user), 0);
	A.user = B.user = NULL;
	assert_int_equal(droce_dealloc_pd(A.pd), 0);
	assert_int_equal(droce_dealloc_pd(B.pd), 0);
	assert_int_equal(droce_rc_close(A.dev), 0);
	assert_int_equal(droce_rc_close(B.dev), 0);
	droce_stack_destroy(A.stack);
	droce_stack_destroy(B.stack);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest codec[] = {
		cmocka_unit_test(test_req),
		cmocka_unit_test(test_rep),
		cmocka_unit_test(test_mra_rej),
		cmocka_unit_test(test_rtu_dreq_drep),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_rdma_hdr),
		cmocka_unit_test(test_conn_handshake),
		cmocka_unit_test(test_conn_ack_timeout),
		cmocka_unit_test(test_conn_unreachable),
		cmocka_unit_test(test_conn_mra),
		cmocka_unit_test(test_conn_reject),
		cmocka_unit_test(test_conn_lost_rtu),
		cmocka_unit_test(test_conn_disconnect),
		cmocka_unit_test(test_conn_ignores),
	};
	const struct CMUnitTest qp1[] = {
		cmocka_unit_test(test_gsi_receives),
		cmocka_unit_test(test_gsi_refuses),
		cmocka_unit_test(test_gsi_sends),
	};
	const struct CMUnitTest api[] = {
		cmocka_unit_test(test_api_connect_send_disconnect),
		cmocka_unit_test(test_api_rejections),
		cmocka_unit_test(test_api_req_refusals),
		cmocka_unit_test(test_api_event_of_destroyed_id),
		cmocka_unit_test(test_api_destroy_tells_peer),
		cmocka_unit_test(test_api_calls_from_thread),
		cmocka_unit_test(test_api_req_flood),
	};
	int ret;

	(void)argc;
	ret = cmocka_run_group_tests_name("CM messages", codec, NULL, NULL);
	if (droce_test_eal_init_stepped(argv[0], "cm", "256") != 0)
		return 1;
	ret |= cmocka_run_group_tests_name("QP1", qp1, stack_up, stack_down);
	ret |= cmocka_run_group_tests_name("CM API", api, pair_up, pair_down);
	droce_test_eal_cleanup();
	return ret;
}
