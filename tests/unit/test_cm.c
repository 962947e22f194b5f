/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/cm's MAD codec: every field of every connection message written
 * where IBTA vol. 1 ch. 12 (and Linux's cm.c) put it, checked byte by
 * byte against offsets written out here, and read back the same; what a
 * receiver refuses; the rdma_cm header of a REQ's private data.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "cm_mad.h"

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req),
		cmocka_unit_test(test_rep),
		cmocka_unit_test(test_mra_rej),
		cmocka_unit_test(test_rtu_dreq_drep),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_rdma_hdr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
