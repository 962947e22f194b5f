/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Frames from droce's builder, for the independent decoders (tshark,
 * scapy, zlib in Python) to check:
 *   roce_frames opcodes OUT.pcap EXPECT.csv   every opcode, fields listed
 *   roce_frames random4 N SEED OUT.pcap       N random IPv4 frames
 *   roce_frames random6 N SEED OUT.pcap       N random IPv6 frames
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_mbuf.h>

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
		fprintf(stderr, "usage: roce_frames opcodes OUT.pcap EXPECT.csv | random4|random6 N SEED OUT.pcap\n");
		return 2;
	}
	pool = rte_pktmbuf_pool_create("frames", 64, 0, 0, 9216, SOCKET_ID_ANY);
	if (pool == NULL)
		ret = 1;
	else if (strcmp(argv[1], "opcodes") == 0 && argc == 4)
		ret = opcodes(argv[2], argv[3]);
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
