/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * icrc: droce's ICRC (header masking included) against a plain CRC-32 of
 * the same bytes by zlib and by DPDK's rte_net_crc_calc(RTE_NET_CRC32_ETH).
 * icrc-copy: ICRC check fused with the payload copy into a 64 MiB ring,
 * against memcpy of the same payload into the same ring.
 * First at the EAL's SIMD bitwidth (256 unless --force-max-simd-bitwidth),
 * then, where the CPU has VPCLMULQDQ, with both sides allowed 512 bits.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <rte_ip.h>
#include <rte_memcpy.h>
#include <rte_net_crc.h>
#include <rte_udp.h>
#include <rte_vect.h>

#include "droce_roce.h"
#include "bench.h"

#define AREA (256u << 10)     /* packets cycle through an L2-sized area */
#define MEASURE_S 0.2         /* per method, size and round */
#define RING_BYTES (64u << 20)
#define COPY_PAYLOAD 4096u
#define COPY_PACKETS 256u

/* 124: a 64-byte payload's RDMA WRITE, as stream-pps sends. */
static const uint32_t sizes[] = { 64, 124, 256, 1408, 4096, 8192 };

/* A RoCEv2 packet from the IPv4 header on, @len bytes with its ICRC:
 * UC RDMA WRITE ONLY, payload filling the rest.
 */
static uint32_t
make_packet(uint8_t *l3, uint32_t len, uint32_t seed)
{
	const uint32_t hdr = sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) +
			     sizeof(struct droce_bth) + sizeof(struct droce_reth);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	struct droce_bth *bth = (struct droce_bth *)(udp + 1);
	uint32_t icrc;

	memset(l3, 0, len);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)len);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	udp->dst_port = RTE_BE16(DROCE_ROCE_UDP_PORT);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - sizeof(*ip)));
	droce_bth_set(bth, DROCE_OP_UC | DROCE_OP_WRITE_ONLY, false, false, 0,
		      0xffff, false, false, 1, false, seed & DROCE_PSN_MASK);
	for (uint32_t i = hdr; i < len - DROCE_ICRC_LEN; i++)
		l3[i] = (uint8_t)(i * 31 + seed);
	icrc = droce_icrc(l3, len - DROCE_ICRC_LEN);
	memcpy(l3 + len - DROCE_ICRC_LEN, &icrc, sizeof(icrc)); /* little-endian host */
	return hdr;
}

/* M_DROCE_X4: droce_icrc_ok_x4(), four packets a call: a check, its
 * compare included, where M_DROCE computes the value alone (one compare
 * more a packet); its verdicts are summed so that none is thrown away.
 */
enum method { M_DROCE, M_DROCE_X4, M_ZLIB, M_RTE, M_MAX };

static volatile uint32_t sink;

/* GB/s of one method over packets of @size bytes cycling through @area. */
static double
measure(enum method m, const uint8_t *area, uint32_t size)
{
	uint32_t count = AREA / size, done = 0;
	double t0 = bench_now(), t;
	uint32_t acc = 0;

	do {
		for (uint32_t i = 0; i < count; i++) {
			const uint8_t *p = area + (size_t)i * size;

			switch (m) {
			case M_DROCE_X4:
				if (i + 4 <= count) {
					const void *l3[4] = { p, p + size, p + 2 * size, p + 3 * size };

					acc += droce_icrc_ok_x4(l3, size);
					i += 3;
				} else {
					acc += droce_icrc_ok(p, size);
				}
				break;
			case M_DROCE:
				acc += droce_icrc(p, size - DROCE_ICRC_LEN);
				break;
			case M_ZLIB:
				acc += (uint32_t)crc32(0, p, size - DROCE_ICRC_LEN);
				break;
			default:
				acc += rte_net_crc_calc(p, size - DROCE_ICRC_LEN,
							RTE_NET_CRC32_ETH);
				break;
			}
		}
		done += count;
		t = bench_now() - t0;
	} while (t < MEASURE_S);
	sink = acc;
	return (double)done * size / t / 1e9;
}

static void
icrc_table(const struct bench_opts *o, uint8_t *area, const char *rte_alg)
{
	printf("  droce CRC: %s; rte_net_crc: %s; medians of %u rounds, GB/s\n",
	       droce_crc_impl_name(), rte_alg, o->rounds);
	printf("  %6s %10s %10s %10s %12s %14s %10s %9s\n", "bytes", "droce", "droce x4",
	       "zlib", "rte_net_crc", "droce/rte_net", "droce/zlib", "x4/droce");
	for (unsigned int s = 0; s < RTE_DIM(sizes); s++) {
		double v[M_MAX][BENCH_MAX_ROUNDS], med[M_MAX];

		for (uint32_t i = 0; i < AREA / sizes[s]; i++)
			make_packet(area + (size_t)i * sizes[s], sizes[s], i);
		for (unsigned int r = 0; r < o->rounds; r++)
			for (int m = 0; m < M_MAX; m++)
				v[m][r] = measure(m, area, sizes[s]);
		for (int m = 0; m < M_MAX; m++)
			med[m] = bench_median(v[m], o->rounds);
		printf("  %6u %10.2f %10.2f %10.2f %12.2f %13.2fx %9.2fx %8.2fx\n", sizes[s],
		       med[M_DROCE], med[M_DROCE_X4], med[M_ZLIB], med[M_RTE],
		       med[M_DROCE] / med[M_RTE], med[M_DROCE] / med[M_ZLIB],
		       med[M_DROCE_X4] / med[M_DROCE]);
	}
}

int
bench_icrc(const struct bench_opts *o)
{
	uint8_t *area = aligned_alloc(64, AREA);
	uint16_t bitwidth = rte_vect_get_max_simd_bitwidth();

	if (area == NULL)
		return 1;
	droce_crc_select(DROCE_CRC_AUTO);
	rte_net_crc_set_alg(RTE_NET_CRC_SSE42);
	printf("  at the EAL's SIMD bitwidth %u:\n", bitwidth);
	icrc_table(o, area, "sse42-pclmulqdq");
	if (bitwidth < RTE_VECT_SIMD_512 && bench_allow_512()) {
		droce_crc_select(DROCE_CRC_AUTO);
		rte_net_crc_set_alg(RTE_NET_CRC_AVX512);
		printf("  with 512-bit vectors allowed on both sides:\n");
		icrc_table(o, area, "avx512-vpclmulqdq");
		rte_vect_set_max_simd_bitwidth(bitwidth);
		droce_crc_select(DROCE_CRC_AUTO);
	}
	free(area);
	return 0;
}

enum copy_kind { COPY_PLAIN, COPY_FUSED, COPY_CHECK_FIRST };

static double
copy_round(enum copy_kind kind, uint8_t *const *pkts, uint32_t hdr, uint32_t len,
	   uint8_t *ring, unsigned int *bad)
{
	const uint32_t slots = RING_BYTES / COPY_PAYLOAD;
	double t0 = bench_now();

	for (uint32_t i = 0; i < slots * 4; i++) {
		uint8_t *pkt = pkts[i % COPY_PACKETS];
		uint8_t *dst = ring + (size_t)(i % slots) * COPY_PAYLOAD;

		switch (kind) {
		case COPY_FUSED:
			*bad += !droce_icrc_copy_ok(pkt, len, hdr, COPY_PAYLOAD, dst);
			break;
		case COPY_CHECK_FIRST:
			if (droce_icrc_ok(pkt, len))
				rte_memcpy(dst, pkt + hdr, COPY_PAYLOAD);
			else
				++*bad;
			break;
		default:
			memcpy(dst, pkt + hdr, COPY_PAYLOAD);
		}
	}
	return (double)slots * 4 * COPY_PAYLOAD / (bench_now() - t0) / 1e9;
}

static int
copy_table(const struct bench_opts *o, uint8_t *const *pkts, uint32_t hdr,
	   uint32_t len, uint8_t *ring)
{
	double fused[BENCH_MAX_ROUNDS] = { 0 }, first[BENCH_MAX_ROUNDS] = { 0 };
	double plain[BENCH_MAX_ROUNDS] = { 0 }, mf, mc, mp;
	unsigned int bad = 0;

	for (unsigned int r = 0; r < o->rounds; r++) {
		plain[r] = copy_round(COPY_PLAIN, pkts, hdr, len, ring, &bad);
		fused[r] = copy_round(COPY_FUSED, pkts, hdr, len, ring, &bad);
		first[r] = copy_round(COPY_CHECK_FIRST, pkts, hdr, len, ring, &bad);
	}
	mf = bench_median(fused, o->rounds);
	mc = bench_median(first, o->rounds);
	mp = bench_median(plain, o->rounds);
	printf("  droce CRC %s: fused verify+copy %.2f GB/s (%.2fx), verify then copy %.2f GB/s (%.2fx), memcpy %.2f GB/s (medians of %u rounds)\n",
	       droce_crc_impl_name(), mf, mf / mp, mc, mc / mp, mp, o->rounds);
	if (bad != 0)
		printf("  %u ICRC checks FAILED\n", bad);
	return bad != 0;
}

int
bench_icrc_copy(const struct bench_opts *o)
{
	const uint32_t len = 20 + 8 + 12 + 16 + COPY_PAYLOAD + DROCE_ICRC_LEN;
	uint8_t *pkts[COPY_PACKETS];
	uint8_t *ring = aligned_alloc(64, RING_BYTES);
	uint16_t bitwidth = rte_vect_get_max_simd_bitwidth();
	uint32_t hdr = 0;
	int ret;

	if (ring == NULL)
		return 1;
	memset(ring, 0, RING_BYTES); /* fault the pages in before timing */
	for (unsigned int i = 0; i < COPY_PACKETS; i++) {
		pkts[i] = aligned_alloc(64, RTE_ALIGN_CEIL(len, 64));
		if (pkts[i] == NULL)
			return 1;
		hdr = make_packet(pkts[i], len, i);
	}
	printf("  %u-byte payloads, %u packets, into a %u MiB ring; 1 GiB per side and round\n",
	       COPY_PAYLOAD, COPY_PACKETS, RING_BYTES >> 20);
	droce_crc_select(DROCE_CRC_AUTO);
	ret = copy_table(o, pkts, hdr, len, ring);
	if (bitwidth < RTE_VECT_SIMD_512 && bench_allow_512()) {
		droce_crc_select(DROCE_CRC_AUTO);
		ret |= copy_table(o, pkts, hdr, len, ring);
		rte_vect_set_max_simd_bitwidth(bitwidth);
		droce_crc_select(DROCE_CRC_AUTO);
	}
	for (unsigned int i = 0; i < COPY_PACKETS; i++)
		free(pkts[i]);
	free(ring);
	return ret;
}
