/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * ICRC as Linux soft-RoCE computes it: CRC-32 over 8 bytes of 0xFF, then
 * the IP header, UDP header and BTH with their variant fields set to all
 * ones (IPv4 TOS, TTL, checksum; IPv6 traffic class, flow label, hop
 * limit; UDP checksum; BTH byte 4), then the rest of the packet. The
 * prefix is folded into the seed; the value goes on the wire little-endian.
 */

#include <errno.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "crc32_private.h"
#include "roce_private.h"

/* Register value after the 8-byte 0xFF prefix from the initial ~0. */
#define ICRC_SEED 0xdebb20e3u
/* Register value after any message and its good CRC (CRC-32's residue):
 * the CRC of four 0xFF bytes from a zero register, as the seed is (the
 * first four bytes of ones cancel the initial ~0).
 */
#define CRC_RESIDUE ICRC_SEED
/* IPv4 without options, UDP and BTH: the masked fields lie in these. */
#define MASKED_IPV4_LEN (sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) + \
			 sizeof(struct droce_bth))
/* The headers whose variant fields are masked: IPv4 with options at most. */
#define MASKED_MAX (60 + sizeof(struct rte_udp_hdr) + sizeof(struct droce_bth))

/* Copy the IP, UDP and BTH headers with their variant fields set to ones.
 * Returns how many bytes of the packet that covers (at most @len).
 */
static uint32_t
masked_headers(const uint8_t *l3, uint32_t len, uint8_t *out)
{
	bool v6 = (l3[0] >> 4) == 6;
	uint32_t ip_len = v6 ? sizeof(struct rte_ipv6_hdr)
			     : (uint32_t)(l3[0] & 0x0f) * 4u;
	uint32_t n = RTE_MIN(len, ip_len + (uint32_t)(sizeof(struct rte_udp_hdr) +
						      sizeof(struct droce_bth)));
	uint8_t ones[8];

	memcpy(out, l3, n);
	memset(ones, 0xff, sizeof(ones));
	/* Each mask is applied only where those bytes were copied. */
#define MASK(off, cnt) do { \
		if ((off) + (cnt) <= n) \
			memcpy(out + (off), ones, (cnt)); \
	} while (0)
	if (v6) {
		out[0] |= 0x0f;         /* traffic class, high nibble */
		MASK(1, 3);             /* traffic class, flow label */
		MASK(7, 1);             /* hop limit */
	} else {
		MASK(1, 1);             /* TOS */
		MASK(8, 1);             /* TTL */
		MASK(10, 2);            /* header checksum */
	}
	MASK(ip_len + 6, 2);            /* UDP checksum */
	MASK(ip_len + 8 + 4, 1);        /* BTH FECN, BECN, reserved */
#undef MASK
	return n;
}

/* Where the masked fields cannot be ORed in as the CRC loads them (IPv6,
 * IPv4 options, the table CRC), the masked headers go through the CRC
 * from a copy; the copy takes in the bytes after them up to a whole
 * 16-byte block (a short packet whole), so that the folding code sees
 * few, long runs.
 */
#define HEAD_MAX 256

static uint32_t
head_len(uint32_t masked, uint32_t len)
{
	return len <= HEAD_MAX ? len : RTE_ALIGN_CEIL(masked, 16);
}

/* The masked bytes of IPv4 with no options, UDP and BTH as ones in the
 * packet's first 64 bytes: TOS, TTL, header checksum, UDP checksum, BTH
 * byte 4 (zeros after them, as far as a short message's lanes reach).
 * ORed into the packet's bytes as the CRC loads them, the headers need no
 * copy and the CRC one pass instead of two, each with its own reduction.
 */
static const uint8_t ipv4_ones[CRC_SHORT_MAX] __rte_aligned(64) = {
	[1] = 0xff, [8] = 0xff, [10] = 0xff, [11] = 0xff,
	[20 + 6] = 0xff, [20 + 7] = 0xff, [20 + 8 + 4] = 0xff,
};

/* The register over the first @p n bytes of a packet where every masked
 * field lies in them (IPv4 without options, a whole BTH), the fields ORed
 * in as the CRC loads them: no masked copy. False where that does not
 * apply, or the CRC in use has no such pass.
 */
static bool
headers_one_pass(const uint8_t *l3, uint32_t n, uint32_t *reg)
{
	return n >= MASKED_IPV4_LEN && l3[0] == 0x45 &&
	       crc_reg_ones(ICRC_SEED, l3, n, ipv4_ones, reg);
}

uint32_t
icrc_prefix_reg(const uint8_t *l3, uint32_t n)
{
	uint8_t head[MASKED_MAX];

	n = masked_headers(l3, n, head);
	return crc_reg(ICRC_SEED, head, n);
}

static uint32_t
icrc_reg(const uint8_t *l3, uint32_t len)
{
	uint8_t head[HEAD_MAX];
	uint32_t n, h, reg;

	if (l3[0] == 0x45 && crc_reg_ones(ICRC_SEED, l3, len, ipv4_ones, &reg))
		return reg;
	n = masked_headers(l3, len, head);
	h = head_len(n, len);
	memcpy(head + n, l3 + n, h - n);
	return crc_reg(crc_reg(ICRC_SEED, head, h), l3 + h, len - h);
}

static uint32_t
wire_icrc(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

uint32_t
droce_icrc(const void *l3, uint32_t len)
{
	return ~icrc_reg(l3, len);
}

bool
droce_icrc_ok(const void *l3, uint32_t len)
{
	if (len < DROCE_ICRC_LEN)
		return false;
	return droce_icrc(l3, len - DROCE_ICRC_LEN) ==
	       wire_icrc((const uint8_t *)l3 + len - DROCE_ICRC_LEN);
}

/* The four-at-once pass runs the ICRC bytes through the CRC too (a good
 * packet leaves the residue: no value to take out of each lane), so they
 * must lie past the masked fields, after a whole BTH.
 */
#define ICRC_X4_MIN (MASKED_IPV4_LEN + DROCE_ICRC_LEN)

static inline uint8_t
first_byte(const void *p)
{
	return *(const uint8_t *)p;
}

unsigned int
droce_icrc_ok_x4(const void *const l3[4], uint32_t len)
{
	unsigned int ok = 0;

	if (len >= ICRC_X4_MIN && len <= DROCE_ICRC_X4_MAX_LEN &&
	    first_byte(l3[0]) == 0x45 && first_byte(l3[1]) == 0x45 &&
	    first_byte(l3[2]) == 0x45 && first_byte(l3[3]) == 0x45 &&
	    crc_ones_x4_equal(ICRC_SEED, l3, len, ipv4_ones, CRC_RESIDUE, &ok))
		return ok;
	/* One by one; a packet given twice (a short group filled up) once. */
	for (unsigned int k = 0; k < 4; k++)
		ok |= (k > 0 && l3[k] == l3[k - 1] ? ok >> (k - 1) & 1
			: (unsigned int)droce_icrc_ok(l3[k], len)) << k;
	return ok;
}

/* The register over a packet's first @p payload_off bytes, its headers:
 * in one pass, or in one masked copy where they fit.
 */
static uint32_t
headers_reg(const uint8_t *l3, uint32_t payload_off)
{
	uint8_t head[HEAD_MAX];
	uint32_t n, h, reg;

	if (headers_one_pass(l3, payload_off, &reg))
		return reg;
	n = masked_headers(l3, payload_off, head);
	h = payload_off <= HEAD_MAX ? payload_off : n;
	memcpy(head + n, l3 + n, h - n);
	reg = crc_reg(ICRC_SEED, head, h);
	return crc_reg(reg, l3 + h, payload_off - h);
}

void
icrc_fill_copy(uint8_t *l3, uint32_t len, uint32_t payload_off, const void *payload,
	       uint32_t payload_len)
{
	uint32_t end = len - DROCE_ICRC_LEN, reg;
	uint8_t *after = l3 + payload_off + payload_len;

	reg = headers_reg(l3, payload_off);
	reg = ~crc_reg(crc_reg_copy(reg, payload, l3 + payload_off, payload_len, false),
		       after, (uint32_t)(l3 + end - after));
	for (int i = 0; i < DROCE_ICRC_LEN; i++)
		l3[end + i] = (uint8_t)(reg >> (8 * i));
}

static bool
icrc_copy(const void *l3_bytes, uint32_t len, uint32_t payload_off,
	  uint32_t payload_len, void *dst, bool stream)
{
	const uint8_t *l3 = l3_bytes;
	uint32_t reg, end;

	if (len < DROCE_ICRC_LEN ||
	    (uint64_t)payload_off + payload_len > len - DROCE_ICRC_LEN)
		return false;
	end = len - DROCE_ICRC_LEN;
	reg = headers_reg(l3, payload_off);
	reg = crc_reg_copy(reg, l3 + payload_off, dst, payload_len, stream);
	reg = crc_reg(reg, l3 + payload_off + payload_len,
		      end - payload_off - payload_len);
	return ~reg == wire_icrc(l3 + end);
}

bool
droce_icrc_copy_ok(const void *l3, uint32_t len, uint32_t payload_off,
		   uint32_t payload_len, void *dst)
{
	return icrc_copy(l3, len, payload_off, payload_len, dst, false);
}

bool
droce_icrc_copy_stream_ok(const void *l3, uint32_t len, uint32_t payload_off,
			  uint32_t payload_len, void *dst)
{
	return icrc_copy(l3, len, payload_off, payload_len, dst, true);
}

/* CRC over bytes [from, to) of a packet, whatever its segments. */
static uint32_t
crc_mbuf_range(uint32_t reg, const struct rte_mbuf *m, uint32_t from,
	       uint32_t to)
{
	uint32_t seg_start = 0;

	for (const struct rte_mbuf *seg = m; seg != NULL && seg_start < to;
	     seg_start += rte_pktmbuf_data_len(seg), seg = seg->next) {
		uint32_t a = RTE_MAX(from, seg_start);
		uint32_t b = RTE_MIN(to, seg_start + rte_pktmbuf_data_len(seg));

		if (a < b)
			reg = crc_reg(reg, rte_pktmbuf_mtod_offset(seg,
					const uint8_t *, a - seg_start), b - a);
	}
	return reg;
}

/* headers_one_pass() over the packet's first segment (a built frame's
 * headers): the bytes from @p l3_off it covered; 0 where it does not apply.
 */
static uint32_t
first_segment_masked(const struct rte_mbuf *m, uint32_t l3_off, uint32_t end, uint32_t *reg)
{
	uint32_t seg_end = RTE_MIN((uint32_t)rte_pktmbuf_data_len(m), end);
	const uint8_t *l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, l3_off);

	if (seg_end < l3_off || !headers_one_pass(l3, seg_end - l3_off, reg))
		return 0;
	return seg_end - l3_off;
}

/* Write @len bytes at packet offset @off, across segments. */
static void
mbuf_write(struct rte_mbuf *m, uint32_t off, const uint8_t *src, uint32_t len)
{
	uint32_t seg_start = 0;

	for (struct rte_mbuf *seg = m; seg != NULL && seg_start < off + len;
	     seg_start += rte_pktmbuf_data_len(seg), seg = seg->next) {
		uint32_t a = RTE_MAX(off, seg_start);
		uint32_t b = RTE_MIN(off + len,
				     seg_start + rte_pktmbuf_data_len(seg));

		if (a < b)
			memcpy(rte_pktmbuf_mtod_offset(seg, uint8_t *,
						       a - seg_start),
			       src + (a - off), b - a);
	}
}

int
droce_icrc_fill_mbuf(struct rte_mbuf *m, uint32_t l3_off)
{
	uint32_t pkt_len = rte_pktmbuf_pkt_len(m);
	uint8_t hdr[HEAD_MAX], copy[MASKED_MAX], value[DROCE_ICRC_LEN];
	const uint8_t *first;
	uint32_t end, n, reg;

	if (pkt_len < l3_off + DROCE_ICRC_LEN)
		return -EINVAL;
	end = pkt_len - DROCE_ICRC_LEN;
	n = first_segment_masked(m, l3_off, end, &reg);
	if (n == 0) {
		first = rte_pktmbuf_read(m, l3_off,
					 RTE_MIN(end - l3_off, (uint32_t)MASKED_MAX), copy);
		if (first == NULL)
			return -EINVAL;
		n = masked_headers(first, end - l3_off, hdr);
		reg = crc_reg(ICRC_SEED, hdr, n);
	}
	reg = ~crc_mbuf_range(reg, m, l3_off + n, end);
	for (int i = 0; i < DROCE_ICRC_LEN; i++)
		value[i] = (uint8_t)(reg >> (8 * i));
	mbuf_write(m, end, value, DROCE_ICRC_LEN);
	return 0;
}
