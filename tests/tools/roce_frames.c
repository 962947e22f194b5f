/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Frames from droce's builder, for the independent decoders (tshark,
 * scapy, zlib in Python) to check:
 *   roce_frames opcodes OUT.pcap EXPECT.csv   every opcode, fields listed
 *   roce_frames random4 N SEED OUT.pcap       N random IPv4 frames
 *   roce_frames random6 N SEED OUT.pcap       N random IPv6 frames
 *   roce_frames cm OUT.pcap EXPECT.csv        CM MADs to QP1, a field and
 *                                             its value per line
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_mbuf.h>

#include "cm_mad.h"
#include "droce_rc.h"
#include "droce_roce.h"
#include "test_eal.h"

static struct rte_mempool *pool;

static void
pcap_header(FILE *f)
{
	const uint32_t hdr[6] = { 0xa1b2c3d4, 2 | 4u << 16, 0, 0, 65535, 1 };

	fwrite(hdr, sizeof(hdr), 1, f);
}

static void
pcap_record(FILE *f, const struct rte_mbuf *m, uint32_t n)
{
	uint32_t rec[4] = { n, 0, rte_pktmbuf_pkt_len(m), rte_pktmbuf_pkt_len(m) };

	fwrite(rec, sizeof(rec), 1, f);
	fwrite(rte_pktmbuf_mtod(m, const void *), rte_pktmbuf_pkt_len(m), 1, f);
}

static struct rte_mbuf *
build_or_die(const struct droce_frame_spec *spec)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	int ret;

	if (m == NULL) {
		fprintf(stderr, "roce_frames: out of mbufs\n");
		exit(1);
	}
	ret = droce_frame_build(m, spec);
	if (ret != 0) {
		fprintf(stderr, "roce_frames: opcode 0x%02x: build failed (%d)\n",
			spec->opcode, ret);
		exit(1);
	}
	return m;
}

static void
base(struct droce_frame_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->src_mac = (struct rte_ether_addr){ { 0x02, 0, 0, 0, 0, 1 } };
	s->dst_mac = (struct rte_ether_addr){ { 0x02, 0, 0, 0, 0, 2 } };
	s->src_ip4 = RTE_BE32(0xc6120001);
	s->dst_ip4 = RTE_BE32(0xc6120002);
	s->src_ip6[0] = 0xfd;
	s->src_ip6[15] = 1;
	s->dst_ip6[0] = 0xfd;
	s->dst_ip6[15] = 2;
}

/* Every opcode, with field values that differ per opcode. */
static int
opcodes(const char *pcap, const char *csv)
{
	FILE *pf = fopen(pcap, "wb"), *cf = fopen(csv, "w");
	static uint8_t payload[600];
	uint32_t n = 0;

	if (pf == NULL || cf == NULL) {
		perror("roce_frames");
		return 1;
	}
	pcap_header(pf);
	fprintf(cf, "opcode,psn,destqp,ackreq,pkey,padcnt,reth_va,reth_rkey,reth_dmalen,immdt,aeth_syndrome,aeth_msn,deth_qkey,deth_srcqp,atomic_swap,atomic_cmp,atomic_orig\n");
	for (unsigned int op = 0; op < 256; op++) {
		const struct droce_opcode_info *info = droce_opcode((uint8_t)op);
		struct droce_frame_spec s;
		struct rte_mbuf *m;
		uint32_t f = 0;

		if (info == NULL)
			continue;
		f = info->flags;
		base(&s);
		s.opcode = (uint8_t)op;
		s.psn = (0xfffff0u + op * 0x10101u) & DROCE_PSN_MASK;
		s.dest_qp = 0x100000u + op * 0x1234u;
		s.src_qp = op == DROCE_OP_UD ? 1 : 0x200 + op;
		s.ackreq = op % 2;
		s.pkey = op % 3 ? 0xffff : 0x8001;
		s.va = 0x0123456789abcdefull ^ ((uint64_t)op << 40);
		s.rkey = 0xa0000000u | op;
		s.dma_len = 100 + op;
		s.imm = 0xfeed0000u | op;
		s.syndrome = op % 2 ? 0x1f : 0x60;
		s.msn = 0xabc000u + op;
		s.qkey = 0x80010000u + op;
		s.swap_add = 0x1000000000ull + op;
		s.compare = 0x2000000000ull + op;
		s.orig = 0x3000000000ull + op;
		s.payload = payload;
		s.payload_len = (f & DROCE_HDR_PAYLOAD) ? 1 + (op * 37) % 500 : 0;
		for (uint32_t i = 0; i < s.payload_len; i++)
			payload[i] = (uint8_t)(i ^ op);
		m = build_or_die(&s);
		pcap_record(pf, m, ++n);
		rte_pktmbuf_free(m);

		fprintf(cf, "%u,%u,%u,%u,%u,%u,", op, s.psn, s.dest_qp, s.ackreq,
			s.pkey, (0u - s.payload_len) & 3);
		/* Wireshark shows the AtomicETH's VA and R_Key as RETH fields. */
		if (f & DROCE_HDR_RETH)
			fprintf(cf, "%llu,%u,%u,", (unsigned long long)s.va, s.rkey,
				s.dma_len);
		else if (f & DROCE_HDR_ATMETH)
			fprintf(cf, "%llu,%u,,", (unsigned long long)s.va, s.rkey);
		else
			fputs(",,,", cf);
		if (f & DROCE_HDR_IMMDT)
			fprintf(cf, "%u,", s.imm);
		else
			fputc(',', cf);
		if (f & DROCE_HDR_AETH)
			fprintf(cf, "%u,%u,", s.syndrome, s.msn);
		else
			fputs(",,", cf);
		if (f & DROCE_HDR_DETH)
			fprintf(cf, "%u,%u,", s.qkey, s.src_qp);
		else
			fputs(",,", cf);
		if (f & DROCE_HDR_ATMETH)
			fprintf(cf, "%llu,%llu,", (unsigned long long)s.swap_add,
				(unsigned long long)s.compare);
		else
			fputs(",,", cf);
		if (f & DROCE_HDR_ATMACK)
			fprintf(cf, "%llu\n", (unsigned long long)s.orig);
		else
			fputs("\n", cf);
	}
	fclose(cf);
	return fclose(pf) != 0;
}

/* Opcodes that carry payload, for random frames. */
static const uint8_t payload_opcodes[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
	0x0d, 0x0e, 0x0f, 0x10, 0x24, 0x25, 0x2a, 0x2b, 0x64, 0x65,
};

static int
random_frames(unsigned int count, unsigned int seed, bool v6, const char *pcap)
{
	FILE *pf = fopen(pcap, "wb");
	static uint8_t payload[4096];

	if (pf == NULL) {
		perror("roce_frames");
		return 1;
	}
	pcap_header(pf);
	for (unsigned int i = 0; i < count; i++) {
		struct droce_frame_spec s;
		struct rte_mbuf *m;

		base(&s);
		s.ipv6 = v6;
		s.opcode = payload_opcodes[rand_r(&seed) % sizeof(payload_opcodes)];
		s.psn = (uint32_t)rand_r(&seed) & DROCE_PSN_MASK;
		s.dest_qp = (uint32_t)rand_r(&seed) & DROCE_QPN_MASK;
		s.src_qp = (uint32_t)rand_r(&seed) & DROCE_QPN_MASK;
		s.traffic_class = (uint8_t)rand_r(&seed);
		s.ttl = (uint8_t)(1 + rand_r(&seed) % 255);
		s.flow_label = (uint32_t)rand_r(&seed) & 0xfffff;
		s.becn = rand_r(&seed) & 1;
		s.fecn = rand_r(&seed) & 1;
		s.ackreq = rand_r(&seed) & 1;
		s.va = (uint64_t)rand_r(&seed) << 32 | (uint32_t)rand_r(&seed);
		s.rkey = (uint32_t)rand_r(&seed);
		s.imm = (uint32_t)rand_r(&seed);
		s.payload_len = (uint32_t)rand_r(&seed) % 4097;
		for (uint32_t b = 0; b < s.payload_len; b++)
			payload[b] = (uint8_t)rand_r(&seed);
		s.payload = payload;
		m = build_or_die(&s);
		pcap_record(pf, m, i + 1);
		rte_pktmbuf_free(m);
	}
	return fclose(pf) != 0;
}

/* One CM message in a UD SEND ONLY to QP1 (GSI), as rdma_cm sends it. */
static void
cm_frame(FILE *pf, uint32_t n, const struct cm_msg *msg)
{
	static uint8_t mad[CM_MAD_SIZE];
	struct droce_frame_spec s;
	struct rte_mbuf *m;

	base(&s);
	cm_mad_encode(msg, mad);
	s.opcode = DROCE_OP_UD | DROCE_OP_SEND_ONLY;
	s.psn = n;
	s.dest_qp = 1;
	s.src_qp = 1;
	s.pkey = 0xffff;
	s.qkey = 0x80010000u;
	s.payload = mad;
	s.payload_len = CM_MAD_SIZE;
	m = build_or_die(&s);
	pcap_record(pf, m, n);
	rte_pktmbuf_free(m);
}

#define EXPECT(cf, n, field, fmt, ...) \
	fprintf(cf, "%u,infiniband.%s," fmt "\n", n, field, __VA_ARGS__)

/* A REQ with rdma_cm's header, then each other connection message, with
 * the tshark fields (InfiniBand dissector) each should show.
 */
static int
cm_messages(const char *pcap, const char *csv)
{
	FILE *pf = fopen(pcap, "wb"), *cf = fopen(csv, "w");
	struct cm_rdma_hdr rh = { .version = 0, .ip_version = 4, .src_port = 40001 };
	struct cm_msg m;
	uint32_t n = 0;

	if (pf == NULL || cf == NULL) {
		perror("roce_frames");
		return 1;
	}
	pcap_header(pf);
	fputs("frame,field,value\n", cf);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 0x0000000100000abcull, .attr_id = CM_ATTR_REQ };
	m.req = (struct cm_req){
		.local_comm_id = 0x11223344, .service_id = cm_service_id(CM_PS_TCP, 7174),
		.local_ca_guid = 0x0002c9fffe0a0b0cull, .local_qpn = 0x010203,
		.responder_resources = 16, .initiator_depth = 8,
		.remote_cm_response_timeout = 20, .transport = CM_TRANSPORT_RC,
		.starting_psn = 0xabcdef, .local_cm_response_timeout = 20, .retry_count = 7,
		.pkey = 0xffff, .path_mtu = 3, .rnr_retry_count = 6, .max_cm_retries = 15,
		.primary = { .local_lid = 0xffff, .remote_lid = 0xffff, .flow_label = 0x12345,
			     .packet_rate = 7, .traffic_class = 0x20, .hop_limit = 64, .sl = 3,
			     .local_ack_timeout = 18 },
	};
	droce_gid_from_ipv4(RTE_BE32(0xc6120002), m.req.primary.local_gid);
	droce_gid_from_ipv4(RTE_BE32(0xc6120001), m.req.primary.remote_gid);
	cm_rdma_addr_from_ipv4(RTE_BE32(0xc6120002), rh.src_addr);
	cm_rdma_addr_from_ipv4(RTE_BE32(0xc6120001), rh.dst_addr);
	cm_rdma_hdr_encode(&rh, m.req.private_data);
	cm_frame(pf, ++n, &m);
	EXPECT(cf, n, "mad.attributeid", "%u", CM_ATTR_REQ);
	EXPECT(cf, n, "mad.transactionid", "%llu", 0x0000000100000abcull);
	EXPECT(cf, n, "cm.req.serviceid.dport", "%u", 7174);
	EXPECT(cf, n, "cm.req.localcaguid", "%llu", 0x0002c9fffe0a0b0cull);
	EXPECT(cf, n, "cm.req.localqpn", "%u", 0x010203);
	EXPECT(cf, n, "cm.req.responderres", "%u", 16);
	EXPECT(cf, n, "cm.req.initdepth", "%u", 8);
	EXPECT(cf, n, "cm.req.remoteresptout", "%u", 20);
	EXPECT(cf, n, "cm.req.transpsvctype", "%u", 0);
	EXPECT(cf, n, "cm.req.startpsn", "%u", 0xabcdef);
	EXPECT(cf, n, "cm.req.localresptout", "%u", 20);
	EXPECT(cf, n, "cm.req.retrcount", "%u", 7);
	EXPECT(cf, n, "cm.req.pkey", "%u", 0xffff);
	EXPECT(cf, n, "cm.req.pppmtu", "%u", 3);
	EXPECT(cf, n, "cm.req.rnrretrcount", "%u", 6);
	EXPECT(cf, n, "cm.req.maxcmretr", "%u", 15);
	EXPECT(cf, n, "cm.req.prim_locallid", "%u", 0xffff);
	/* Not the flow label and packet rate: Wireshark 4.0 reads them 3
	 * bytes from 112 and 1 byte at 112, where Linux's cm.c writes the
	 * top 20 bits of the word at 112 and the low 6 of byte 115
	 * (CM_REQ_PRIMARY_FLOW_LABEL, _PACKET_RATE); test_cm checks those.
	 */
	EXPECT(cf, n, "cm.req.prim_tfcclass", "%u", 0x20);
	EXPECT(cf, n, "cm.req.prim_hoplim", "%u", 64);
	EXPECT(cf, n, "cm.req.prim_sl", "%u", 3);
	EXPECT(cf, n, "cm.req.prim_localacktout", "%u", 18);
	EXPECT(cf, n, "cm.req.prim_localgid_ipv4", "%s", "198.18.0.2");
	EXPECT(cf, n, "cm.req.prim_remotegid_ipv4", "%s", "198.18.0.1");
	EXPECT(cf, n, "cm.req.ip_cm.ipv", "%u", 4);
	EXPECT(cf, n, "cm.req.ip_cm.sport", "%u", 40001);
	EXPECT(cf, n, "cm.req.ip_cm.sip4", "%s", "198.18.0.2");
	EXPECT(cf, n, "cm.req.ip_cm.dip4", "%s", "198.18.0.1");

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 0x0000000100000abcull, .attr_id = CM_ATTR_REP };
	m.rep = (struct cm_rep){
		.local_comm_id = 0x55667788, .remote_comm_id = 0x11223344,
		.local_qpn = 0x040506, .starting_psn = 0x123456, .responder_resources = 4,
		.initiator_depth = 2, .target_ack_delay = 15, .rnr_retry_count = 7,
		.local_ca_guid = 0x0002c9fffe0d0e0full,
	};
	cm_frame(pf, ++n, &m);
	EXPECT(cf, n, "cm.rep.remotecommid", "%u", 0x11223344);
	EXPECT(cf, n, "cm.rep.localqpn", "%u", 0x040506);
	EXPECT(cf, n, "cm.rep.startpsn", "%u", 0x123456);
	EXPECT(cf, n, "cm.rep.respres", "%u", 4);
	EXPECT(cf, n, "cm.rep.initdepth", "%u", 2);
	EXPECT(cf, n, "cm.rep.tgtackdelay", "%u", 15);
	EXPECT(cf, n, "cm.rep.rnrretrcount", "%u", 7);
	EXPECT(cf, n, "cm.rep.localcaguid", "%llu", 0x0002c9fffe0d0e0full);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 0x0000000100000abcull, .attr_id = CM_ATTR_RTU };
	m.rtu = (struct cm_rtu){ .local_comm_id = 0x11223344, .remote_comm_id = 0x55667788 };
	cm_frame(pf, ++n, &m);
	EXPECT(cf, n, "cm.rtu.localcommid", "%u", 0x11223344);
	EXPECT(cf, n, "cm.rtu.remotecommid", "%u", 0x55667788);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 0x0000000100000abdull, .attr_id = CM_ATTR_REJ };
	m.rej = (struct cm_rej){ .local_comm_id = 0, .remote_comm_id = 0x11223344,
				 .msg_rejected = CM_MSG_REQ, .ari_length = 0, .reason = 28 };
	cm_frame(pf, ++n, &m);
	EXPECT(cf, n, "cm.rej.localcommid", "%u", 0);
	EXPECT(cf, n, "cm.rej.remotecommid", "%u", 0x11223344);
	EXPECT(cf, n, "cm.rej.msgrej", "%u", 0);
	EXPECT(cf, n, "cm.rej.reason", "%u", 28);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 0x0000000100000abeull, .attr_id = CM_ATTR_DREQ };
	m.dreq = (struct cm_dreq){ .local_comm_id = 0x11223344, .remote_comm_id = 0x55667788,
				   .remote_qpn = 0x040506 };
	cm_frame(pf, ++n, &m);
	EXPECT(cf, n, "cm.dreq.localcommid", "%u", 0x11223344);
	EXPECT(cf, n, "cm.dreq.remotecommid", "%u", 0x55667788);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 0x0000000100000abeull, .attr_id = CM_ATTR_DREP };
	m.drep = (struct cm_drep){ .local_comm_id = 0x55667788, .remote_comm_id = 0x11223344 };
	cm_frame(pf, ++n, &m);
	EXPECT(cf, n, "cm.drsp.localcommid", "%u", 0x55667788);
	EXPECT(cf, n, "cm.drsp.remotecommid", "%u", 0x11223344);

	memset(&m, 0, sizeof(m));
	m.hdr = (struct cm_mad_hdr){ .tid = 0x0000000100000abcull, .attr_id = CM_ATTR_MRA };
	m.mra = (struct cm_mra){ .local_comm_id = 0x55667788, .remote_comm_id = 0x11223344,
				 .msg_mraed = CM_MSG_REQ, .service_timeout = 24 };
	cm_frame(pf, ++n, &m);
	EXPECT(cf, n, "mad.attributeid", "%u", CM_ATTR_MRA);
	fclose(cf);
	return fclose(pf) != 0;
}

int
main(int argc, char **argv)
{
	char prefix[64];
	int ret = 2;
	char *eal[] = { argv[0], "--no-pci", "--no-huge", "-m", "64",
			"--file-prefix", prefix, DROCE_TEST_EAL_QUIET, "-l", "0",
			"--log-level", "lib.eal:error", NULL };

	snprintf(prefix, sizeof(prefix), "droce-roce-frames-%d", getpid());
	if (argc < 2 || droce_test_eal_init(RTE_DIM(eal) - 1, eal) < 0) {
		fprintf(stderr, "usage: roce_frames opcodes|cm OUT.pcap EXPECT.csv | random4|random6 N SEED OUT.pcap\n");
		return 2;
	}
	pool = rte_pktmbuf_pool_create("frames", 64, 0, 0, 9216, SOCKET_ID_ANY);
	if (pool == NULL)
		ret = 1;
	else if (strcmp(argv[1], "opcodes") == 0 && argc == 4)
		ret = opcodes(argv[2], argv[3]);
	else if (strcmp(argv[1], "cm") == 0 && argc == 4)
		ret = cm_messages(argv[2], argv[3]);
	else if ((strcmp(argv[1], "random4") == 0 || strcmp(argv[1], "random6") == 0) &&
		 argc == 5)
		ret = random_frames((unsigned int)atoi(argv[2]), (unsigned int)atoi(argv[3]),
				    argv[1][6] == '6', argv[4]);
	else
		fprintf(stderr, "roce_frames: bad arguments\n");
	rte_mempool_free(pool);
	droce_test_eal_cleanup();
	return ret;
}
