/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* lib/roce: CRC-32 and ICRC against zlib and a hardware vector, the
 * opcode table, the parser's every refusal, PSN arithmetic, the builder.
 */

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <zlib.h>

#include <rte_atomic.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "droce_roce.h"
#include "crc32_private.h"
#include "test_eal.h"

static struct rte_mempool *pool;

/* Vector 1 of reference/roce-wire.md: a CNP from a ConnectX-4 Lx. */
static const char cnp_hex[] =
	"e41d2dab2bc27cfe90643b320800" "45c2003c718c400040119161" "0a001101"
	"0a001201" "0000" "12b7" "0028" "0000" "8100ffff" "40000118" "00000000"
	"00000000000000000000000000000000" "82fd002a";

static size_t
unhex(const char *hex, uint8_t *out)
{
	size_t n = 0;

	for (; hex[0] != '\0' && hex[1] != '\0'; hex += 2) {
		unsigned int b;

		assert_int_equal(sscanf(hex, "%2x", &b), 1);
		out[n++] = (uint8_t)b;
	}
	return n;
}

static const enum droce_crc_impl impls[] = {
	DROCE_CRC_TABLE, DROCE_CRC_PCLMUL, DROCE_CRC_VPCLMUL256, DROCE_CRC_AVX512,
};

static void
test_fold_constants(void **state)
{
	(void)state;
	/* Derived at start from the polynomial; these are the published values
	 * (Intel's white paper, Linux crc32-pclmul, zlib-ng).
	 */
	assert_int_equal(crc_k.k544, 0x154442bd4ull);
	assert_int_equal(crc_k.k480, 0x1c6e41596ull);
	assert_int_equal(crc_k.k160, 0x1751997d0ull);
	assert_int_equal(crc_k.k96, 0x0ccaa009eull);
	assert_int_equal(crc_k.k64, 0x163cd6124ull);
	assert_int_equal(crc_k.mu, 0x1f7011641ull);
	assert_int_equal(crc_k.poly, 0x1db710641ull);
}

/* main() took a CRC before rte_eal_init(), when DPDK has no SIMD policy
 * yet: the implementation in use now, with the EAL up, is the one AUTO
 * chooses under its policy, not one fixed before it (128-bit PCLMULQDQ
 * on a CPU with 256-bit VPCLMULQDQ).
 */
static char crc_before_eal[32];

static void
test_crc_chosen_after_eal(void **state)
{
	char in_use[sizeof(crc_before_eal)];

	(void)state;
	snprintf(in_use, sizeof(in_use), "%s", droce_crc_impl_name());
	droce_crc_select(DROCE_CRC_AUTO);
	print_message("CRC before the EAL: %s, after it: %s\n", crc_before_eal, in_use);
	assert_string_equal(in_use, droce_crc_impl_name());
}

/* What the app prints at start: the CPU has an implementation exactly
 * when it can be selected; AUTO and values past the last are none.
 */
static void
test_crc_cpu_has(void **state)
{
	(void)state;
	assert_true(droce_crc_cpu_has(DROCE_CRC_TABLE));
	assert_false(droce_crc_cpu_has(DROCE_CRC_AUTO));
	assert_false(droce_crc_cpu_has((enum droce_crc_impl)(DROCE_CRC_AVX512 + 1)));
	for (unsigned int k = 0; k < RTE_DIM(impls); k++)
		assert_int_equal(droce_crc_cpu_has(impls[k]), droce_crc_select(impls[k]) >= 0);
	droce_crc_select(DROCE_CRC_AUTO);
}

static void
test_crc32_matches_zlib(void **state)
{
	static uint8_t buf[9000], dst[9000] __rte_aligned(64);
	unsigned int seed = 1;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand_r(&seed);
	for (unsigned int k = 0; k < RTE_DIM(impls); k++) {
		if (droce_crc_select(impls[k]) < 0) {
			print_message("CRC implementation %d not on this CPU\n",
				      impls[k]);
			continue;
		}
		for (int t = 0; t < 3000; t++) {
			size_t len = (size_t)rand_r(&seed) % (t < 600 ? 600 : 8900);
			size_t off = (size_t)rand_r(&seed) % 64;
			uint32_t start = t % 3 ? (uint32_t)rand_r(&seed) : 0;
			uint32_t want = (uint32_t)crc32(start, buf + off, (uInt)len);
			uint32_t copied;

			if (droce_crc32(start, buf + off, len) != want)
				fail_msg("%s: len %zu off %zu", droce_crc_impl_name(),
					 len, off);
			/* Destinations aligned for streaming stores (every
			 * seventh) and not: the same bytes and sum.
			 */
			memset(dst, 0, sizeof(dst));
			copied = ~crc_reg_copy(~start, buf + off, dst + (t % 7), len, t % 2);
			rte_wmb();
			if (copied != want || memcmp(dst + (t % 7), buf + off, len) != 0 ||
			    dst[(t % 7) + len] != 0)
				fail_msg("%s copy: len %zu off %zu dst %d stream %d",
					 droce_crc_impl_name(), len, off, t % 7, t % 2);
		}
		/* Every length of the short-message path and past it, each
		 * with a register of its own.
		 */
		for (size_t len = 0; len <= CRC_SHORT_MAX + 16; len++) {
			uint32_t start = (uint32_t)rand_r(&seed);

			if (droce_crc32(start, buf + len % 64, len) !=
			    (uint32_t)crc32(start, buf + len % 64, (uInt)len))
				fail_msg("%s: len %zu", droce_crc_impl_name(), len);
		}
		/* Chaining equals one pass. */
		assert_int_equal(droce_crc32(droce_crc32(0, buf, 1000), buf + 1000, 3000),
				 (uint32_t)crc32(0, buf, 4000));
	}
	droce_crc_select(DROCE_CRC_AUTO);
}

static void
test_icrc_hardware_vector(void **state)
{
	uint8_t frame[128], l3[128];
	size_t n = unhex(cnp_hex, frame);
	uint32_t len = (uint32_t)n - RTE_ETHER_HDR_LEN;
	/* Offsets from the IPv4 header of the fields the ICRC does not cover. */
	static const unsigned int masked[] = { 1, 8, 10, 11, 26, 27, 32 };

	(void)state;
	memcpy(l3, frame + RTE_ETHER_HDR_LEN, len);
	for (unsigned int k = 0; k < RTE_DIM(impls); k++) {
		if (droce_crc_select(impls[k]) < 0)
			continue;
		assert_int_equal(droce_icrc(l3, len - 4), 0x2a00fd82);
		assert_true(droce_icrc_ok(l3, len));
		/* Every covered bit matters. */
		for (uint32_t byte = 0; byte < len - 4; byte++) {
			bool is_masked = false;

			for (unsigned int m = 0; m < RTE_DIM(masked); m++)
				is_masked |= masked[m] == byte;
			for (int bit = 0; bit < 8; bit++) {
				l3[byte] ^= (uint8_t)(1 << bit);
				if (droce_icrc_ok(l3, len) == !is_masked)
					fail_msg("%s: byte %u bit %d (%s)",
						 droce_crc_impl_name(), byte, bit,
						 is_masked ? "masked" : "covered");
				l3[byte] ^= (uint8_t)(1 << bit);
			}
		}
		/* And so does every bit of the ICRC itself. */
		for (int bit = 0; bit < 32; bit++) {
			l3[len - 4 + bit / 8] ^= (uint8_t)(1 << (bit % 8));
			assert_false(droce_icrc_ok(l3, len));
			l3[len - 4 + bit / 8] ^= (uint8_t)(1 << (bit % 8));
		}
	}
	droce_crc_select(DROCE_CRC_AUTO);
}

/* The ICRC by its definition: CRC-32 over 8 bytes of ones and the packet
 * with its variant fields set to ones, each field written out here.
 */
static uint32_t
icrc_by_definition(const uint8_t *l3, uint32_t len)
{
	static uint8_t copy[8 + 9216];
	uint8_t *c = copy + 8;
	uint32_t ip_len;

	memset(copy, 0xff, 8);
	memcpy(c, l3, len);
	if ((c[0] >> 4) == 6) {
		ip_len = 40;
		c[0] |= 0x0f;
		c[1] = c[2] = c[3] = 0xff;
		c[7] = 0xff;
	} else {
		ip_len = (c[0] & 0x0fu) * 4;
		c[1] = 0xff;
		c[8] = 0xff;
		c[10] = c[11] = 0xff;
	}
	c[ip_len + 6] = c[ip_len + 7] = 0xff;   /* UDP checksum */
	c[ip_len + 8 + 4] = 0xff;               /* BTH byte 4 */
	return (uint32_t)crc32(0, copy, (uInt)(len + 8));
}

/* Random IPv4 packets with and without options and IPv6 ones, every
 * length class each implementation folds differently (the one-pass path
 * of IPv4 without options among them): the definition's value.
 */
static void
test_icrc_matches_definition(void **state)
{
	static uint8_t pkt[9216 + 64];
	unsigned int seed = 3;

	(void)state;
	for (unsigned int k = 0; k < RTE_DIM(impls); k++) {
		if (droce_crc_select(impls[k]) < 0)
			continue;
		for (int t = 0; t < 4000; t++) {
			/* IPv4 without options from the shortest packet (IP,
			 * UDP, BTH, ICRC), the others from 80 bytes.
			 */
			uint32_t len = (t % 3 == 0 ? 40 : 80) +
				       (uint32_t)rand_r(&seed) % (t < 2000 ? 600 : 9100);
			uint32_t off = (uint32_t)rand_r(&seed) % 64;
			uint8_t *l3 = pkt + off;

			for (uint32_t i = 0; i < len; i++)
				l3[i] = (uint8_t)rand_r(&seed);
			switch (t % 3) {
			case 0: l3[0] = 0x45; break;              /* no options */
			case 1: l3[0] = 0x40 | (6 + t % 10); break; /* options */
			default: l3[0] = 0x60 | (l3[0] & 0x0f); break;
			}
			if (droce_icrc(l3, len) != icrc_by_definition(l3, len))
				fail_msg("%s: header %#x, %u bytes at offset %u",
					 droce_crc_impl_name(), l3[0], len, off);
		}
	}
	droce_crc_select(DROCE_CRC_AUTO);
}

/* Four packets at a time: every length from the shortest to past the
 * four-at-once pass's longest, any of the four with a bad ICRC or
 * another header (taken one by one), one of them given twice, each
 * verdict droce_icrc_ok()'s.
 */
static void
test_icrc_ok_x4(void **state)
{
	static uint8_t pkt[4][512];
	unsigned int seed = 11;

	(void)state;
	for (unsigned int k = 0; k < RTE_DIM(impls); k++) {
		if (droce_crc_select(impls[k]) < 0)
			continue;
		for (uint32_t len = 0; len <= 300; len++)
			for (int t = 0; t < 8; t++) {
				const void *l3[4];
				unsigned int want = 0;

				for (int q = 0; q < 4; q++) {
					uint8_t *p = pkt[q] + (uint32_t)rand_r(&seed) % 64;

					for (uint32_t i = 0; i < len; i++)
						p[i] = (uint8_t)rand_r(&seed);
					if (len > 0)
						p[0] = t == 7 && q == 2 ? 0x46 : 0x45;
					if (len >= 4 + DROCE_ICRC_LEN) {
						uint32_t v = droce_icrc(p, len - DROCE_ICRC_LEN);

						if ((rand_r(&seed) & 3) == 0)
							v ^= 1u << (rand_r(&seed) % 32);
						memcpy(p + len - DROCE_ICRC_LEN, &v, sizeof(v));
					}
					want |= (unsigned int)droce_icrc_ok(p, len) << q;
					l3[q] = p;
				}
				/* A packet given twice, as a short group is filled up. */
				if (t >= 5) {
					l3[3] = l3[2];
					want = (want & 7) | (want >> 2 & 1) << 3;
				}
				if (droce_icrc_ok_x4(l3, len) != want)
					fail_msg("%s: %u bytes: %#x, want %#x", droce_crc_impl_name(),
						 len, droce_icrc_ok_x4(l3, len), want);
			}
	}
	droce_crc_select(DROCE_CRC_AUTO);
}

static void
test_icrc_copy(void **state)
{
	uint8_t frame[128], dst[64];
	size_t n = unhex(cnp_hex, frame);
	uint8_t *l3 = frame + RTE_ETHER_HDR_LEN;
	uint32_t len = (uint32_t)n - RTE_ETHER_HDR_LEN;

	(void)state;
	/* The CNP's 16 reserved bytes (after IP 20, UDP 8, BTH 12) as payload. */
	memset(dst, 0xaa, sizeof(dst));
	assert_true(droce_icrc_copy_ok(l3, len, 40, 16, dst));
	assert_memory_equal(dst, l3 + 40, 16);
	assert_int_equal(dst[16], 0xaa);
	l3[45] ^= 1;
	assert_false(droce_icrc_copy_ok(l3, len, 40, 16, dst));
	assert_int_equal(dst[5], l3[45]); /* written anyway, as documented */
	l3[45] ^= 1;
	/* Ranges outside the packet are refused before anything is written. */
	dst[0] = 0x55;
	assert_false(droce_icrc_copy_ok(l3, len, 40, 17, dst));
	assert_false(droce_icrc_copy_ok(l3, len, 60, 1, dst));
	assert_false(droce_icrc_copy_ok(l3, 3, 0, 0, dst));
	assert_int_equal(dst[0], 0x55);
}

static void
test_psn_arithmetic(void **state)
{
	(void)state;
	assert_int_equal(droce_psn_add(0xffffff, 1), 0);
	assert_int_equal(droce_psn_add(0xfffffe, 5), 3);
	assert_int_equal(droce_psn_sub(2, 0xfffffe), 4);
	assert_int_equal(droce_psn_sub(0, 1), 0xffffff);
	assert_true(droce_psn_cmp(0, 0xffffff) > 0);   /* 0 follows 0xffffff */
	assert_true(droce_psn_cmp(0xffffff, 0) < 0);
	assert_int_equal(droce_psn_cmp(5, 5), 0);
	assert_int_equal(droce_psn_cmp(3, 0xfffffe), 5);
	assert_int_equal(droce_psn_cmp(0xfffffe, 3), -5);
	/* Half the space ahead is "after", the rest "before". */
	assert_true(droce_psn_cmp(0x7fffff, 0) > 0);
	assert_true(droce_psn_cmp(0x800000, 0) < 0);
	assert_true(droce_psn_in_window(1, 0xfffff0, 32));
	assert_false(droce_psn_in_window(0xffffef, 0xfffff0, 32));
	assert_false(droce_psn_in_window(0x10, 0xfffff0, 32));
	assert_true(droce_psn_in_window(0xf, 0xfffff0, 32));
	assert_int_equal(droce_msn_add(0xffffff, 2), 1);
	assert_true(droce_msn_cmp(1, 0xffffff) > 0);
}

static void
test_opcode_table(void **state)
{
	unsigned int known = 0;

	(void)state;
	for (unsigned int op = 0; op < 256; op++) {
		const struct droce_opcode_info *i = droce_opcode((uint8_t)op);
		unsigned int end = sizeof(struct droce_bth);
		static const uint8_t ext_len[DROCE_EXT_MAX] = {
			[DROCE_EXT_RETH] = 16, [DROCE_EXT_AETH] = 4,
			[DROCE_EXT_ATMACK] = 8, [DROCE_EXT_ATMETH] = 28,
			[DROCE_EXT_DETH] = 8, [DROCE_EXT_IMMDT] = 4,
		};
		static const uint32_t ext_flag[DROCE_EXT_MAX] = {
			[DROCE_EXT_RETH] = DROCE_HDR_RETH, [DROCE_EXT_AETH] = DROCE_HDR_AETH,
			[DROCE_EXT_ATMACK] = DROCE_HDR_ATMACK,
			[DROCE_EXT_ATMETH] = DROCE_HDR_ATMETH,
			[DROCE_EXT_DETH] = DROCE_HDR_DETH, [DROCE_EXT_IMMDT] = DROCE_HDR_IMMDT,
		};

		if (i == NULL)
			continue;
		known++;
		/* Offsets agree with the flags and add up to the length. */
		for (unsigned int e = 0; e < DROCE_EXT_MAX; e++) {
			bool has = (i->flags & ext_flag[e]) != 0;

			assert_int_equal(has, i->offset[e] != 0);
			if (has)
				end = RTE_MAX(end, (unsigned int)i->offset[e] + ext_len[e]);
		}
		if (op != DROCE_OP_CNP)
			assert_int_equal(end, i->hdr_len);
	}
	/* RC: 12 SEND/WRITE + READ req/resp x4 + 2 ACKs + 2 atomics; UC 12; UD 2; CNP. */
	assert_int_equal(known, 21 + 12 + 2 + 1);
	assert_string_equal(droce_opcode(0x2b)->name, "UC RDMA WRITE ONLY with IMMEDIATE");
	assert_int_equal(droce_opcode(0x2b)->hdr_len, 32);
	assert_int_equal(droce_opcode(0x2b)->offset[DROCE_EXT_IMMDT], 28);
	assert_int_equal(droce_opcode(0x65)->offset[DROCE_EXT_IMMDT], 20);
	assert_int_equal(droce_opcode(0x12)->offset[DROCE_EXT_ATMACK], 16);
	assert_null(droce_opcode(0x15));
	assert_null(droce_opcode(0x30));
}

static struct rte_mbuf *
build(struct droce_frame_spec *spec)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	assert_non_null(m);
	if (droce_frame_build(m, spec) != 0)
		fail_msg("building opcode 0x%02x failed", spec->opcode);
	return m;
}

static struct droce_frame_spec
base_spec(uint8_t opcode, uint32_t payload_len)
{
	static uint8_t payload[4096];
	struct droce_frame_spec s = {
		.src_mac = { { 0x02, 0, 0, 0, 0, 1 } },
		.dst_mac = { { 0x02, 0, 0, 0, 0, 2 } },
		.src_ip4 = RTE_BE32(0xc6120001), .dst_ip4 = RTE_BE32(0xc6120002),
		.opcode = opcode, .dest_qp = 0x123456, .psn = 0xfffffe,
		.src_qp = 17, .ackreq = true, .va = 0x1122334455667788ull,
		.rkey = 0xabcdef01, .dma_len = payload_len, .imm = 0xdeadbeef,
		.syndrome = 0x1f, .msn = 77, .qkey = 0x80010000,
		.swap_add = 5, .compare = 6, .orig = 7,
		.payload = payload, .payload_len = payload_len,
	};

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	return s;
}

/* The IPv4 header checksum, summed from the fields the frame is built
 * from: every TOS and TTL, addresses whose halves carry, lengths up to a
 * full standard frame's, each checked over the bytes as built.
 */
static void
test_build_ipv4_checksum(void **state)
{
	static const rte_be32_t addrs[] = {
		RTE_BE32(0xc6120001), RTE_BE32(0xffffffff), RTE_BE32(0x00000000),
		RTE_BE32(0xfffe0001), RTE_BE32(0x8000ffff),
	};
	static const uint32_t lens[] = { 0, 1, 64, 1024, 1400 };

	(void)state;
	for (unsigned int v = 0; v < 256; v++)
		for (unsigned int a = 0; a < RTE_DIM(addrs); a++) {
			struct droce_frame_spec spec = base_spec(DROCE_OP_RC | DROCE_OP_SEND_ONLY,
								 lens[v % RTE_DIM(lens)]);
			struct rte_mbuf *m;

			spec.traffic_class = (uint8_t)v;
			spec.ttl = (uint8_t)(255 - v);
			spec.src_ip4 = addrs[a];
			spec.dst_ip4 = addrs[(a + v) % RTE_DIM(addrs)];
			m = build(&spec);
			assert_int_equal(rte_ipv4_cksum(rte_pktmbuf_mtod_offset(m,
					const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN)), 0);
			rte_pktmbuf_free(m);
		}
}

static void
test_build_and_parse_every_opcode(void **state)
{
	(void)state;
	for (unsigned int op = 0; op < 256; op++) {
		const struct droce_opcode_info *info = droce_opcode((uint8_t)op);

		if (info == NULL)
			continue;
		for (int v6 = 0; v6 <= 1; v6++) {
			uint32_t plen = (info->flags & DROCE_HDR_PAYLOAD) ? 1 + op * 3 : 0;
			struct droce_frame_spec spec = base_spec((uint8_t)op, plen);
			struct rte_mbuf *m;
			const uint8_t *l3;
			uint32_t l3_len, l4_off;
			struct droce_pkt pkt = { 0 };
			const struct rte_udp_hdr *udp;

			spec.ipv6 = v6;
			spec.src_ip6[15] = 1;
			spec.dst_ip6[15] = 2;
			m = build(&spec);
			assert_int_equal(rte_pktmbuf_pkt_len(m), droce_frame_len(&spec));
			l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, RTE_ETHER_HDR_LEN);
			l3_len = rte_pktmbuf_pkt_len(m) - RTE_ETHER_HDR_LEN;
			l4_off = v6 ? 40 : 20;
			assert_true(droce_icrc_ok(l3, l3_len));
			if (!v6)
				assert_int_equal(rte_ipv4_cksum((const void *)l3), 0);
			else
				assert_int_equal(rte_ipv6_udptcp_cksum_verify(
					(const void *)l3, l3 + 40), 0);
			udp = (const void *)(l3 + l4_off);
			assert_int_equal(rte_be_to_cpu_16(udp->dst_port), 4791);
			assert_int_equal(rte_be_to_cpu_16(udp->dgram_len), l3_len - l4_off);
			assert_int_equal(rte_be_to_cpu_16(udp->src_port),
					 droce_roce_udp_sport(17));
			assert_int_equal(droce_roce_parse(l3 + l4_off + 8,
							  l3_len - l4_off - 8, &pkt),
					 DROCE_PARSE_OK);
			assert_int_equal(pkt.opcode, op);
			assert_int_equal(pkt.payload_len, plen);
			assert_int_equal(pkt.pad, (0u - plen) & 3);
			assert_memory_equal(pkt.payload, spec.payload, plen);
			assert_int_equal(droce_bth_dqpn(pkt.bth), 0x123456);
			assert_int_equal(droce_bth_psn(pkt.bth), 0xfffffe);
			assert_true(droce_bth_ackreq(pkt.bth));
			assert_int_equal(droce_bth_pkey(pkt.bth), 0xffff);
			if (info->flags & DROCE_HDR_RETH) {
				const struct droce_reth *r = droce_pkt_ext(&pkt, DROCE_EXT_RETH);

				assert_int_equal(droce_reth_va(r), 0x1122334455667788ull);
				assert_int_equal(droce_reth_rkey(r), 0xabcdef01);
				assert_int_equal(droce_reth_len(r), plen);
			}
			if (info->flags & DROCE_HDR_IMMDT)
				assert_int_equal(droce_immdt(droce_pkt_ext(&pkt, DROCE_EXT_IMMDT)),
						 0xdeadbeef);
			if (info->flags & DROCE_HDR_AETH) {
				const struct droce_aeth *a = droce_pkt_ext(&pkt, DROCE_EXT_AETH);

				assert_int_equal(droce_aeth_syndrome(a), 0x1f);
				assert_int_equal(droce_aeth_msn(a), 77);
			}
			if (info->flags & DROCE_HDR_DETH) {
				const struct droce_deth *d = droce_pkt_ext(&pkt, DROCE_EXT_DETH);

				assert_int_equal(droce_deth_qkey(d), 0x80010000);
				assert_int_equal(droce_deth_sqpn(d), 17);
			}
			if (info->flags & DROCE_HDR_ATMETH) {
				const struct droce_atmeth *a = droce_pkt_ext(&pkt, DROCE_EXT_ATMETH);

				assert_int_equal(droce_atmeth_swap_add(a), 5);
				assert_int_equal(droce_atmeth_compare(a), 6);
				assert_int_equal(droce_atmeth_rkey(a), 0xabcdef01);
			}
			if (info->flags & DROCE_HDR_ATMACK)
				assert_int_equal(droce_atmack_orig(droce_pkt_ext(&pkt,
						 DROCE_EXT_ATMACK)), 7);
			rte_pktmbuf_free(m);
		}
	}
}

static void
test_build_errors(void **state)
{
	struct droce_frame_spec spec = base_spec(0x30, 0);
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	(void)state;
	assert_int_equal(droce_frame_build(m, &spec), -EINVAL);  /* unknown */
	spec = base_spec(DROCE_OP_ACKNOWLEDGE, 8);
	assert_int_equal(droce_frame_build(m, &spec), -EINVAL);  /* payload */
	spec = base_spec(DROCE_OP_UC | DROCE_OP_WRITE_ONLY, 4000);
	assert_int_equal(droce_frame_build(m, &spec), -ENOSPC);  /* 2 KiB mbuf */
	assert_int_equal(rte_pktmbuf_pkt_len(m), 0);
	assert_int_equal(droce_frame_len(&(struct droce_frame_spec){ .opcode = 0x30 }), 0);
	rte_pktmbuf_free(m);
}

static void
build_payload_lengths(void)
{
	for (uint32_t plen = 0; plen <= 1900; plen += plen < 300 ? 1 : 37) {
		for (int v6 = 0; v6 <= 1; v6++) {
			struct droce_frame_spec spec = base_spec(DROCE_OP_SEND_ONLY, plen);
			uint32_t l4_off = v6 ? 40 : 20, l3_len, pad = (0u - plen) & 3;
			struct droce_pkt pkt = { 0 };
			struct rte_mbuf *m;
			const uint8_t *l3;

			spec.ipv6 = v6;
			m = build(&spec);
			l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, RTE_ETHER_HDR_LEN);
			l3_len = rte_pktmbuf_pkt_len(m) - RTE_ETHER_HDR_LEN;
			assert_true(droce_icrc_ok(l3, l3_len));
			if (v6)
				assert_int_equal(rte_ipv6_udptcp_cksum_verify((const void *)l3,
									      l3 + 40), 0);
			assert_int_equal(droce_roce_parse(l3 + l4_off + 8, l3_len - l4_off - 8, &pkt),
					 DROCE_PARSE_OK);
			assert_int_equal(pkt.payload_len, plen);
			assert_memory_equal(pkt.payload, spec.payload, plen);
			for (uint32_t k = 0; k < pad; k++)
				assert_int_equal(pkt.payload[plen + k], 0);
			rte_pktmbuf_free(m);
		}
	}
}

/* Every payload length up to what a 2 KiB mbuf holds, over both IP
 * versions and every CRC implementation here: the payload copied whole
 * (the copy runs it through the ICRC), the pad zero, the ICRC (and
 * IPv6's UDP checksum) right.
 */
static void
test_build_payload_lengths(void **state)
{
	(void)state;
	for (unsigned int k = 0; k < RTE_DIM(impls); k++)
		if (droce_crc_select(impls[k]) == 0)
			build_payload_lengths();
	droce_crc_select(DROCE_CRC_AUTO);
}

/* An ACK made from its prototype is the frame droce_frame_build() makes:
 * every byte, over addresses, QPNs, P_Keys, flags, TOS, TTL, ports, PSNs
 * at the wrap, every syndrome and MSN, the CRC implementations in turn;
 * its ICRC holds.
 */
static void
test_ack_proto(void **state)
{
	unsigned int seed = 4791;

	(void)state;
	for (int t = 0; t < 2000; t++) {
		struct droce_frame_spec spec = base_spec(DROCE_OP_ACKNOWLEDGE, 0);
		struct droce_ack_proto proto;
		struct rte_mbuf *want, *got = rte_pktmbuf_alloc(pool);

		droce_crc_select(impls[t % RTE_DIM(impls)]); /* one not here: the last stays */
		spec.payload = NULL;
		spec.src_ip4 = (rte_be32_t)rand_r(&seed);
		spec.dst_ip4 = (rte_be32_t)rand_r(&seed);
		spec.src_mac.addr_bytes[5] = (uint8_t)t;
		spec.dst_mac.addr_bytes[4] = (uint8_t)(t >> 8);
		spec.dest_qp = (uint32_t)rand_r(&seed) & DROCE_QPN_MASK;
		spec.src_qp = (uint32_t)rand_r(&seed) & DROCE_QPN_MASK;
		spec.udp_src_port = t % 3 == 0 ? 0 : (uint16_t)rand_r(&seed);
		spec.pkey = (uint16_t)rand_r(&seed);
		spec.traffic_class = (uint8_t)rand_r(&seed);
		spec.ttl = (uint8_t)rand_r(&seed);
		spec.se = t & 1;
		spec.migreq = t & 2;
		spec.fecn = t & 4;
		spec.becn = t & 8;
		spec.ackreq = false;
		spec.psn = t < 8 ? DROCE_PSN_MASK - (uint32_t)t : (uint32_t)rand_r(&seed);
		spec.syndrome = (uint8_t)rand_r(&seed);
		spec.msn = (uint32_t)rand_r(&seed);
		assert_int_equal(droce_ack_proto_init(&proto, &spec), 0);
		want = build(&spec);
		assert_non_null(got);
		assert_int_equal(droce_ack_build(got, &proto, spec.psn, spec.syndrome, spec.msn), 0);
		assert_int_equal(rte_pktmbuf_pkt_len(got), DROCE_ACK_FRAME_LEN);
		assert_int_equal(rte_pktmbuf_pkt_len(want), DROCE_ACK_FRAME_LEN);
		assert_memory_equal(rte_pktmbuf_mtod(got, void *), rte_pktmbuf_mtod(want, void *),
				    DROCE_ACK_FRAME_LEN);
		assert_true(droce_icrc_ok(rte_pktmbuf_mtod_offset(got, void *, RTE_ETHER_HDR_LEN),
					  DROCE_ACK_FRAME_LEN - RTE_ETHER_HDR_LEN));
		rte_pktmbuf_free(want);
		rte_pktmbuf_free(got);
	}
	droce_crc_select(DROCE_CRC_AUTO);
}

static void
test_ack_proto_errors(void **state)
{
	struct droce_frame_spec spec = base_spec(DROCE_OP_ACKNOWLEDGE, 0);
	struct droce_ack_proto proto;
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	(void)state;
	spec.payload = NULL;
	spec.opcode = DROCE_OP_ATOMIC_ACKNOWLEDGE;
	assert_int_equal(droce_ack_proto_init(&proto, &spec), -EINVAL);
	spec.opcode = DROCE_OP_ACKNOWLEDGE;
	spec.ipv6 = true;
	assert_int_equal(droce_ack_proto_init(&proto, &spec), -EINVAL);
	spec.ipv6 = false;
	spec.payload_len = 4;
	assert_int_equal(droce_ack_proto_init(&proto, &spec), -EINVAL);
	spec.payload_len = 0;
	assert_int_equal(droce_ack_proto_init(&proto, &spec), 0);
	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, (uint16_t)(rte_pktmbuf_tailroom(m) - 8)));
	assert_int_equal(droce_ack_build(m, &proto, 1, 0, 1), -ENOSPC);
	assert_int_equal(rte_pktmbuf_tailroom(m), 8);
	rte_pktmbuf_free(m);
}

static void
test_udp_source_port(void **state)
{
	(void)state;
	/* 0xC000 + hash_32(qpn, 14), hash_32 = (v * 0x61C88647) >> (32 - 14). */
	assert_int_equal(droce_roce_udp_sport(0), 0xc000);
	assert_int_equal(droce_roce_udp_sport(17), 0xc000 + ((17u * 0x61c88647u) >> 18));
	for (uint32_t q = 0; q < 100000; q += 77)
		assert_true(droce_roce_udp_sport(q) >= 0xc000);
}

static void
test_parse_refusals(void **state)
{
	struct droce_frame_spec spec = base_spec(DROCE_OP_UC | DROCE_OP_WRITE_ONLY_IMM, 10);
	struct rte_mbuf *m;
	struct droce_parse_stats stats = { 0 };
	struct droce_pkt pkt;
	uint8_t buf[256];
	uint32_t len;

	(void)state;
	m = build(&spec);
	len = rte_pktmbuf_pkt_len(m) - 42;
	memcpy(buf, rte_pktmbuf_mtod_offset(m, uint8_t *, 42), len);
	rte_pktmbuf_free(m);
	assert_int_equal(droce_roce_parse_count(buf, len, &pkt, &stats), DROCE_PARSE_OK);

	assert_int_equal(droce_roce_parse_count(buf, 15, &pkt, &stats),
			 DROCE_PARSE_TRUNCATED);
	assert_int_equal(droce_roce_parse_count(buf, 35, &pkt, &stats),
			 DROCE_PARSE_HDR_TOO_LONG);            /* 32 + ICRC > 35 */
	buf[1] |= 1;                                           /* TVer 1 */
	assert_int_equal(droce_roce_parse_count(buf, len, &pkt, &stats),
			 DROCE_PARSE_BAD_TVER);
	buf[1] &= (uint8_t)~0x0f;
	buf[0] = 0x1f;
	assert_int_equal(droce_roce_parse_count(buf, len, &pkt, &stats),
			 DROCE_PARSE_UNKNOWN_OPCODE);
	buf[0] = DROCE_OP_UC | DROCE_OP_WRITE_ONLY_IMM;
	/* Pad 3 with one payload byte. */
	buf[1] = (uint8_t)((buf[1] & ~DROCE_BTH_PAD_MASK) | (3 << 4));
	assert_int_equal(droce_roce_parse_count(buf, 32 + 1 + 4, &pkt, &stats),
			 DROCE_PARSE_BAD_PAD);
	buf[0] = DROCE_OP_ACKNOWLEDGE;
	buf[1] &= (uint8_t)~DROCE_BTH_PAD_MASK;
	assert_int_equal(droce_roce_parse_count(buf, 16 + 8 + 4, &pkt, &stats),
			 DROCE_PARSE_UNEXPECTED_PAYLOAD);
	assert_int_equal(droce_roce_parse_count(buf, 16 + 4, &pkt, &stats),
			 DROCE_PARSE_OK);

	assert_int_equal(stats.ok, 2);
	for (int r = DROCE_PARSE_TRUNCATED; r < DROCE_PARSE_MAX; r++) {
		assert_int_equal(stats.refused[r], 1);
		assert_non_null(droce_parse_result_name(r));
	}
	assert_null(droce_parse_result_name(DROCE_PARSE_MAX));
}

static void
test_fill_mbuf_chain(void **state)
{
	struct droce_frame_spec spec = base_spec(DROCE_OP_RC | DROCE_OP_SEND_ONLY, 1500);
	struct rte_mbuf *whole = build(&spec), *head = NULL, *prev = NULL;
	uint32_t len = rte_pktmbuf_pkt_len(whole);
	uint32_t cuts[] = { 7, 50, 3, 900, 1 }, off = 0;

	(void)state;
	/* The same frame split into odd segments; its ICRC zeroed. */
	for (unsigned int i = 0; off < len; i++) {
		uint32_t n = i < RTE_DIM(cuts) ? cuts[i] : len - off;
		struct rte_mbuf *seg = rte_pktmbuf_alloc(pool);

		n = RTE_MIN(n, len - off);
		memcpy(rte_pktmbuf_append(seg, (uint16_t)n),
		       rte_pktmbuf_mtod_offset(whole, uint8_t *, off), n);
		off += n;
		if (head == NULL)
			head = seg;
		else
			assert_int_equal(rte_pktmbuf_chain(head, seg), 0);
		prev = seg;
	}
	(void)prev;
	{
		uint8_t zero[4] = { 0 }, *tail = rte_pktmbuf_mtod_offset(rte_pktmbuf_lastseg(head),
					uint8_t *, rte_pktmbuf_data_len(rte_pktmbuf_lastseg(head)) - 4);

		memcpy(tail, zero, 4);
	}
	assert_int_equal(droce_icrc_fill_mbuf(head, RTE_ETHER_HDR_LEN), 0);
	{
		uint8_t a[2048], b[2048];

		assert_memory_equal(rte_pktmbuf_read(head, 0, len, a),
				    rte_pktmbuf_read(whole, 0, len, b), len);
	}
	assert_int_equal(droce_icrc_fill_mbuf(head, len), -EINVAL);
	rte_pktmbuf_free(head);
	rte_pktmbuf_free(whole);
}

/* @p frame (@p len bytes) in up to three segments, cut at @p cut[0] and
 * @p cut[1] where they lie inside it.
 */
static struct rte_mbuf *
chain_cut(const uint8_t *frame, uint32_t len, const uint32_t cut[2])
{
	struct rte_mbuf *head = NULL;

	for (uint32_t from = 0, c = 0; from < len; c++) {
		uint32_t to = c < 2 && cut[c] > from ? cut[c] : len;
		struct rte_mbuf *seg = rte_pktmbuf_alloc(pool);

		assert_non_null(seg);
		memcpy(rte_pktmbuf_append(seg, (uint16_t)(to - from)), frame + from, to - from);
		if (head == NULL)
			head = seg;
		else
			assert_int_equal(rte_pktmbuf_chain(head, seg), 0);
		from = to;
	}
	return head;
}

/* droce_icrc_copy_ok() on a packet with a good ICRC, its payload from
 * anywhere after the masked headers: good, and bad with a bit flipped.
 */
static void
check_copy(uint8_t *l3, uint32_t l3_len, unsigned int *seed)
{
	static uint8_t dst[1600];
	uint32_t hdrs = ((l3[0] >> 4) == 6 ? 40u : (l3[0] & 0x0fu) * 4) + 20;
	uint32_t off = hdrs + (uint32_t)rand_r(seed) % (l3_len - DROCE_ICRC_LEN - hdrs + 1);
	uint32_t plen = (uint32_t)rand_r(seed) % (l3_len - DROCE_ICRC_LEN - off + 1);

	if (!droce_icrc_copy_ok(l3, l3_len, off, plen, dst) || memcmp(dst, l3 + off, plen) != 0)
		fail_msg("%s: copy: header %#x, %u bytes, payload %u at %u",
			 droce_crc_impl_name(), l3[0], l3_len, plen, off);
	l3[l3_len - DROCE_ICRC_LEN - 1] ^= 0x10; /* never masked */
	if (droce_icrc_copy_stream_ok(l3, l3_len, off, plen, dst))
		fail_msg("%s: copy: a flipped bit passed", droce_crc_impl_name());
}

/* droce_icrc_fill_mbuf() against the definition: IPv4 with and without
 * options and IPv6, whole and cut into two or three segments anywhere (for
 * IPv4 without options often around its headers' end, where the one-pass
 * CRC stops applying), with every CRC the CPU has; and droce_icrc_copy_ok()
 * on the frame it filled.
 */
static void
test_fill_mbuf_matches_definition(void **state)
{
	static uint8_t frame[1600];
	unsigned int seed = 5;

	(void)state;
	for (unsigned int k = 0; k < RTE_DIM(impls); k++) {
		if (droce_crc_select(impls[k]) < 0) {
			print_message("CRC implementation %d not on this CPU\n", (int)impls[k]);
			continue;
		}
		for (int t = 0; t < 900; t++) {
			/* From a 60-byte IPv4 header, UDP, BTH and ICRC up. */
			uint32_t len = RTE_ETHER_HDR_LEN + 84 + (uint32_t)rand_r(&seed) % 1400;
			uint8_t *l3 = frame + RTE_ETHER_HDR_LEN, v[DROCE_ICRC_LEN];
			uint32_t cut[2], want, got;
			struct rte_mbuf *head;
			const uint8_t *r;

			for (uint32_t i = 0; i < len; i++)
				frame[i] = (uint8_t)rand_r(&seed);
			switch (t % 3) {
			case 0: l3[0] = 0x45; break;
			case 1: l3[0] = 0x40 | (6 + t % 10); break;
			default: l3[0] = 0x60 | (l3[0] & 0x0f); break;
			}
			want = icrc_by_definition(l3, len - RTE_ETHER_HDR_LEN - DROCE_ICRC_LEN);
			cut[0] = t % 5 == 0 ? len : t % 5 == 1
				 ? RTE_ETHER_HDR_LEN + 30 + (uint32_t)rand_r(&seed) % 16
				 : 1 + (uint32_t)rand_r(&seed) % (len - 1);
			cut[1] = cut[0] + (cut[0] < len ? (uint32_t)rand_r(&seed) % (len - cut[0]) : 0);
			head = chain_cut(frame, len, cut);
			assert_int_equal(droce_icrc_fill_mbuf(head, RTE_ETHER_HDR_LEN), 0);
			/* Into v, also where the bytes lie in one segment. */
			r = rte_pktmbuf_read(head, len - DROCE_ICRC_LEN, DROCE_ICRC_LEN, v);
			assert_non_null(r);
			memmove(v, r, DROCE_ICRC_LEN);
			rte_pktmbuf_free(head);
			got = (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 |
			      (uint32_t)v[3] << 24;
			if (got != want)
				fail_msg("%s: header %#x, %u bytes cut at %u and %u",
					 droce_crc_impl_name(), l3[0], len, cut[0], cut[1]);
			memcpy(frame + len - DROCE_ICRC_LEN, v, DROCE_ICRC_LEN);
			check_copy(l3, len - RTE_ETHER_HDR_LEN, &seed);
		}
	}
	droce_crc_select(DROCE_CRC_AUTO);
}

static void
ext_free_none(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
}

/* A frame built with its payload attached from outside the mbuf: byte for
 * byte the contiguous build, IPv4 and IPv6 (whose UDP checksum covers
 * the chain), every pad; refusals chain nothing.
 */
static void
test_build_chained(void **state)
{
	static const uint32_t sizes[] = { 1, 1023, 1024, 1025, 1026, 4096 };
	struct rte_mbuf_ext_shared_info shinfo = { .free_cb = ext_free_none };
	uint8_t whole_bytes[4200], chained_bytes[4200];

	(void)state;
	for (unsigned int v6 = 0; v6 < 2; v6++)
		for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
			struct droce_frame_spec spec = base_spec(DROCE_OP_RC | DROCE_OP_WRITE_FIRST,
								 sizes[i]);
			struct rte_mbuf *whole = rte_pktmbuf_alloc(pool), *m = rte_pktmbuf_alloc(pool);
			struct rte_mbuf *payload = rte_pktmbuf_alloc(pool);
			struct rte_mbuf *trailer = rte_pktmbuf_alloc(pool);
			uint32_t len;

			spec.ipv6 = v6 != 0;
			spec.src_ip6[15] = 1;
			spec.dst_ip6[15] = 2;
			if (sizes[i] > 1500) { /* beyond the pool's 2 KiB: a bigger mbuf */
				rte_pktmbuf_free(whole);
				whole = NULL;
			} else {
				assert_int_equal(droce_frame_build(whole, &spec), 0);
			}
			rte_mbuf_ext_refcnt_set(&shinfo, 2);
			rte_pktmbuf_attach_extbuf(payload, (void *)(uintptr_t)spec.payload,
						  (rte_iova_t)(uintptr_t)spec.payload,
						  (uint16_t)sizes[i], &shinfo);
			payload->data_len = (uint16_t)sizes[i];
			payload->pkt_len = sizes[i];
			assert_int_equal(droce_frame_build_chained(m, &spec, payload, trailer), 0);
			len = rte_pktmbuf_pkt_len(m);
			assert_int_equal(len, droce_frame_len(&spec));
			assert_int_equal(m->nb_segs, 3);
			if (whole != NULL) {
				assert_int_equal(rte_pktmbuf_pkt_len(whole), len);
				assert_memory_equal(rte_pktmbuf_read(m, 0, len, chained_bytes),
						    rte_pktmbuf_read(whole, 0, len, whole_bytes), len);
				rte_pktmbuf_free(whole);
			}
			{
				/* The ICRC checks, whoever built it. */
				const uint8_t *l3 = rte_pktmbuf_read(m, 0, len, chained_bytes);

				assert_true(droce_icrc_ok(l3 + RTE_ETHER_HDR_LEN,
							  len - RTE_ETHER_HDR_LEN));
				if (v6)
					assert_int_equal(rte_ipv6_udptcp_cksum_verify(
						(const void *)(l3 + RTE_ETHER_HDR_LEN),
						(const void *)(l3 + RTE_ETHER_HDR_LEN +
							       sizeof(struct rte_ipv6_hdr))), 0);
			}
			rte_pktmbuf_free(m);
			/* The attached payload let go of the external buffer. */
			assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo), 1);
		}

	{
		struct droce_frame_spec spec = base_spec(DROCE_OP_RC | DROCE_OP_SEND_ONLY, 100);
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool), *payload = rte_pktmbuf_alloc(pool);
		struct rte_mbuf *trailer = rte_pktmbuf_alloc(pool);

		memcpy(rte_pktmbuf_append(payload, 99), spec.payload, 99);
		assert_int_equal(droce_frame_build_chained(m, &spec, payload, trailer), -EINVAL);
		spec.payload_len = 99;
		spec.opcode = DROCE_OP_ACKNOWLEDGE;
		assert_int_equal(droce_frame_build_chained(m, &spec, payload, trailer), -EINVAL);
		spec.opcode = 0x30;
		assert_int_equal(droce_frame_build_chained(m, &spec, payload, trailer), -EINVAL);
		assert_int_equal(rte_pktmbuf_pkt_len(m), 0);
		assert_int_equal(m->nb_segs, 1);
		assert_int_equal(payload->nb_segs, 1);
		assert_int_equal(rte_pktmbuf_pkt_len(trailer), 0);
		rte_pktmbuf_free(m);
		rte_pktmbuf_free(payload);
		rte_pktmbuf_free(trailer);
	}
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = { argv[0], "--no-pci", "--no-huge", "-m", "128",
			"--file-prefix", prefix, DROCE_TEST_EAL_QUIET,
			"-l", "0", "--log-level", "lib.eal:error", NULL };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc_chosen_after_eal),
		cmocka_unit_test(test_fold_constants),
		cmocka_unit_test(test_crc_cpu_has),
		cmocka_unit_test(test_crc32_matches_zlib),
		cmocka_unit_test(test_icrc_hardware_vector),
		cmocka_unit_test(test_icrc_matches_definition),
		cmocka_unit_test(test_icrc_ok_x4),
		cmocka_unit_test(test_icrc_copy),
		cmocka_unit_test(test_psn_arithmetic),
		cmocka_unit_test(test_opcode_table),
		cmocka_unit_test(test_build_and_parse_every_opcode),
		cmocka_unit_test(test_build_ipv4_checksum),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_udp_source_port),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_fill_mbuf_chain),
		cmocka_unit_test(test_fill_mbuf_matches_definition),
		cmocka_unit_test(test_build_chained),
		cmocka_unit_test(test_build_payload_lengths),
		cmocka_unit_test(test_ack_proto),
		cmocka_unit_test(test_ack_proto_errors),
	};
	int ret;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "droce-test-roce-%d", getpid());
	(void)droce_crc32(0, prefix, strlen(prefix));
	snprintf(crc_before_eal, sizeof(crc_before_eal), "%s", droce_crc_impl_name());
	if (droce_test_eal_init(RTE_DIM(eal) - 1, eal) < 0)
		return 1;
	pool = rte_pktmbuf_pool_create("roce_test", 1024, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	ret = pool != NULL ? cmocka_run_group_tests(tests, NULL, NULL) : 1;
	droce_test_eal_cleanup();
	return ret;
}
