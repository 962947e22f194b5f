/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_ROCE_H
#define DROCE_ROCE_H

/**
 * @file
 * droce roce: the one place that knows RoCEv2 bytes.
 *
 * Frame: Ethernet | IPv4 or IPv6 | UDP (dst 4791) | BTH | extension
 * headers | payload | pad | ICRC. All header fields are big-endian; the
 * accessors below are the only code that converts them.
 *
 * One table row per opcode (RC, UC, UD, CNP) says which headers follow
 * the BTH, where, and whether payload may follow; parsing and building
 * both read it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "droce_net.h"

#ifdef __cplusplus
extern "C" {
#endif

/** UDP destination port of RoCEv2. */
#define DROCE_ROCE_UDP_PORT 4791
/** Default partition key. */
#define DROCE_PKEY_DEFAULT 0xffff
/** ICRC length. */
#define DROCE_ICRC_LEN 4

/* ---- headers ---------------------------------------------------------- */

/** Base transport header (12 bytes). */
struct droce_bth {
	uint8_t opcode;
	uint8_t flags;      /**< SE(0x80) MigReq(0x40) PadCnt(0x30) TVer(0x0f) */
	rte_be16_t pkey;
	rte_be32_t qpn;     /**< FECN(0x80) BECN(0x40) in byte 0; dest QP below */
	rte_be32_t apsn;    /**< AckReq(bit 31); PSN in the low 24 bits */
} __rte_packed;

/** RDMA extended transport header (16 bytes). */
struct droce_reth {
	rte_be64_t va;
	rte_be32_t rkey;
	rte_be32_t dma_len;
} __rte_packed;

/** ACK extended transport header (4 bytes). */
struct droce_aeth {
	rte_be32_t smsn;    /**< syndrome in the top byte, MSN below */
} __rte_packed;

/** Immediate data (4 bytes, opaque). */
struct droce_immdt {
	rte_be32_t imm;
} __rte_packed;

/** Datagram extended transport header (8 bytes). */
struct droce_deth {
	rte_be32_t qkey;
	rte_be32_t sqp;     /**< source QP in the low 24 bits */
} __rte_packed;

/** Atomic extended transport header (28 bytes). */
struct droce_atmeth {
	rte_be64_t va;
	rte_be32_t rkey;
	rte_be64_t swap_add;
	rte_be64_t compare;
} __rte_packed;

/** Atomic ACK extended transport header (8 bytes). */
struct droce_atmack {
	rte_be64_t orig;
} __rte_packed;

#define DROCE_BTH_SE      0x80
#define DROCE_BTH_MIGREQ  0x40
#define DROCE_BTH_PAD_MASK 0x30
#define DROCE_BTH_TVER_MASK 0x0f
#define DROCE_BTH_FECN    0x80000000u
#define DROCE_BTH_BECN    0x40000000u
#define DROCE_BTH_ACKREQ  0x80000000u
#define DROCE_QPN_MASK    0x00ffffffu
#define DROCE_PSN_MASK    0x00ffffffu
#define DROCE_MSN_MASK    0x00ffffffu

static inline uint8_t droce_bth_opcode(const struct droce_bth *b) { return b->opcode; }
static inline bool droce_bth_se(const struct droce_bth *b) { return b->flags & DROCE_BTH_SE; }
static inline bool droce_bth_migreq(const struct droce_bth *b) { return b->flags & DROCE_BTH_MIGREQ; }
static inline uint8_t droce_bth_pad(const struct droce_bth *b) { return (b->flags & DROCE_BTH_PAD_MASK) >> 4; }
static inline uint8_t droce_bth_tver(const struct droce_bth *b) { return b->flags & DROCE_BTH_TVER_MASK; }
static inline uint16_t droce_bth_pkey(const struct droce_bth *b) { return rte_be_to_cpu_16(b->pkey); }
static inline bool droce_bth_fecn(const struct droce_bth *b) { return rte_be_to_cpu_32(b->qpn) & DROCE_BTH_FECN; }
static inline bool droce_bth_becn(const struct droce_bth *b) { return rte_be_to_cpu_32(b->qpn) & DROCE_BTH_BECN; }
static inline uint32_t droce_bth_dqpn(const struct droce_bth *b) { return rte_be_to_cpu_32(b->qpn) & DROCE_QPN_MASK; }
static inline bool droce_bth_ackreq(const struct droce_bth *b) { return rte_be_to_cpu_32(b->apsn) & DROCE_BTH_ACKREQ; }
static inline uint32_t droce_bth_psn(const struct droce_bth *b) { return rte_be_to_cpu_32(b->apsn) & DROCE_PSN_MASK; }

/**
 * Fill a BTH. @p qpn and @p psn are cut to 24 bits, @p pad to 2.
 */
static inline void
droce_bth_set(struct droce_bth *b, uint8_t opcode, bool se, bool migreq,
	      uint8_t pad, uint16_t pkey, bool fecn, bool becn, uint32_t qpn,
	      bool ackreq, uint32_t psn)
{
	b->opcode = opcode;
	b->flags = (uint8_t)((se ? DROCE_BTH_SE : 0) |
			     (migreq ? DROCE_BTH_MIGREQ : 0) | ((pad & 3) << 4));
	b->pkey = rte_cpu_to_be_16(pkey);
	b->qpn = rte_cpu_to_be_32((fecn ? DROCE_BTH_FECN : 0) |
				  (becn ? DROCE_BTH_BECN : 0) |
				  (qpn & DROCE_QPN_MASK));
	b->apsn = rte_cpu_to_be_32((ackreq ? DROCE_BTH_ACKREQ : 0) |
				   (psn & DROCE_PSN_MASK));
}

static inline uint64_t droce_reth_va(const struct droce_reth *r) { return rte_be_to_cpu_64(r->va); }
static inline uint32_t droce_reth_rkey(const struct droce_reth *r) { return rte_be_to_cpu_32(r->rkey); }
static inline uint32_t droce_reth_len(const struct droce_reth *r) { return rte_be_to_cpu_32(r->dma_len); }
static inline uint8_t droce_aeth_syndrome(const struct droce_aeth *a) { return (uint8_t)(rte_be_to_cpu_32(a->smsn) >> 24); }
static inline uint32_t droce_aeth_msn(const struct droce_aeth *a) { return rte_be_to_cpu_32(a->smsn) & DROCE_MSN_MASK; }
static inline uint32_t droce_immdt(const struct droce_immdt *i) { return rte_be_to_cpu_32(i->imm); }
static inline uint32_t droce_deth_qkey(const struct droce_deth *d) { return rte_be_to_cpu_32(d->qkey); }
static inline uint32_t droce_deth_sqpn(const struct droce_deth *d) { return rte_be_to_cpu_32(d->sqp) & DROCE_QPN_MASK; }
static inline uint64_t droce_atmeth_va(const struct droce_atmeth *a) { return rte_be_to_cpu_64(a->va); }
static inline uint32_t droce_atmeth_rkey(const struct droce_atmeth *a) { return rte_be_to_cpu_32(a->rkey); }
static inline uint64_t droce_atmeth_swap_add(const struct droce_atmeth *a) { return rte_be_to_cpu_64(a->swap_add); }
static inline uint64_t droce_atmeth_compare(const struct droce_atmeth *a) { return rte_be_to_cpu_64(a->compare); }
static inline uint64_t droce_atmack_orig(const struct droce_atmack *a) { return rte_be_to_cpu_64(a->orig); }

/* ---- opcodes ------------------------------------------------------------ */

/** Opcodes (transport prefix | operation). */
enum droce_opcode {
	DROCE_OP_RC = 0x00, DROCE_OP_UC = 0x20, DROCE_OP_UD = 0x60,
	DROCE_OP_SEND_FIRST = 0x00,
	DROCE_OP_SEND_MIDDLE = 0x01,
	DROCE_OP_SEND_LAST = 0x02,
	DROCE_OP_SEND_LAST_IMM = 0x03,
	DROCE_OP_SEND_ONLY = 0x04,
	DROCE_OP_SEND_ONLY_IMM = 0x05,
	DROCE_OP_WRITE_FIRST = 0x06,
	DROCE_OP_WRITE_MIDDLE = 0x07,
	DROCE_OP_WRITE_LAST = 0x08,
	DROCE_OP_WRITE_LAST_IMM = 0x09,
	DROCE_OP_WRITE_ONLY = 0x0a,
	DROCE_OP_WRITE_ONLY_IMM = 0x0b,
	DROCE_OP_READ_REQUEST = 0x0c,
	DROCE_OP_READ_RESPONSE_FIRST = 0x0d,
	DROCE_OP_READ_RESPONSE_MIDDLE = 0x0e,
	DROCE_OP_READ_RESPONSE_LAST = 0x0f,
	DROCE_OP_READ_RESPONSE_ONLY = 0x10,
	DROCE_OP_ACKNOWLEDGE = 0x11,
	DROCE_OP_ATOMIC_ACKNOWLEDGE = 0x12,
	DROCE_OP_COMPARE_SWAP = 0x13,
	DROCE_OP_FETCH_ADD = 0x14,
	DROCE_OP_CNP = 0x81,
};

/** Which headers follow the BTH, and what the opcode is. */
enum droce_hdr_flags {
	DROCE_HDR_RETH    = 1u << 0,
	DROCE_HDR_AETH    = 1u << 1,
	DROCE_HDR_IMMDT   = 1u << 2,
	DROCE_HDR_DETH    = 1u << 3,
	DROCE_HDR_ATMETH  = 1u << 4,
	DROCE_HDR_ATMACK  = 1u << 5,
	DROCE_HDR_PAYLOAD = 1u << 6,  /**< payload may follow */
	DROCE_HDR_FIRST   = 1u << 7,
	DROCE_HDR_MIDDLE  = 1u << 8,
	DROCE_HDR_LAST    = 1u << 9,
	DROCE_HDR_ONLY    = DROCE_HDR_FIRST | DROCE_HDR_LAST,
	DROCE_HDR_REQ     = 1u << 10, /**< sent by a requester */
	DROCE_HDR_RESP    = 1u << 11, /**< sent by a responder */
	DROCE_HDR_SEND    = 1u << 12,
	DROCE_HDR_WRITE   = 1u << 13,
	DROCE_HDR_READ    = 1u << 14,
	DROCE_HDR_ATOMIC  = 1u << 15,
	DROCE_HDR_ACK     = 1u << 16,
	DROCE_HDR_CNP     = 1u << 17,
};

/** Extension headers, in wire order, for the offset table. */
enum droce_ext {
	DROCE_EXT_RETH, DROCE_EXT_AETH, DROCE_EXT_ATMACK, DROCE_EXT_ATMETH,
	DROCE_EXT_DETH, DROCE_EXT_IMMDT, DROCE_EXT_MAX
};

/** One opcode's row. */
struct droce_opcode_info {
	const char *name;      /**< "RC RDMA WRITE ONLY", NULL: not an opcode */
	uint32_t flags;        /**< enum droce_hdr_flags */
	uint8_t hdr_len;       /**< BTH and extension headers */
	uint8_t offset[DROCE_EXT_MAX]; /**< from the BTH; 0: absent */
};

/** The table, indexed by opcode. */
extern const struct droce_opcode_info droce_opcode_table[256];

/** The row of @p opcode, or NULL when it is not one droce knows. */
static inline const struct droce_opcode_info *
droce_opcode(uint8_t opcode)
{
	const struct droce_opcode_info *i = &droce_opcode_table[opcode];

	return i->name != NULL ? i : NULL;
}

/* ---- parsing ------------------------------------------------------------ */

/** Why a packet was refused. */
enum droce_parse_result {
	DROCE_PARSE_OK = 0,
	DROCE_PARSE_TRUNCATED,      /**< shorter than BTH + ICRC */
	DROCE_PARSE_BAD_TVER,       /**< transport version other than 0 */
	DROCE_PARSE_UNKNOWN_OPCODE, /**< no row in the table */
	DROCE_PARSE_HDR_TOO_LONG,   /**< headers longer than the packet */
	DROCE_PARSE_BAD_PAD,        /**< pad count larger than the payload */
	DROCE_PARSE_UNEXPECTED_PAYLOAD, /**< payload on an opcode without */
	DROCE_PARSE_MAX
};

/** Name of a parse result ("hdr_too_long"), or NULL. */
const char *droce_parse_result_name(enum droce_parse_result r);

/** A parsed packet: pointers into the caller's buffer. */
struct droce_pkt {
	const struct droce_bth *bth;
	const struct droce_opcode_info *info;
	uint8_t opcode;
	uint8_t pad;
	uint16_t hdr_len;     /**< BTH + extension headers */
	uint32_t payload_len; /**< without pad */
	const uint8_t *payload;
	const uint8_t *icrc;  /**< the 4 trailing bytes */
};

/** Extension header @p ext of @p pkt, or NULL when the opcode has none. */
static inline const void *
droce_pkt_ext(const struct droce_pkt *pkt, enum droce_ext ext)
{
	uint8_t off = pkt->info->offset[ext];

	return off != 0 ? (const uint8_t *)pkt->bth + off : NULL;
}

/**
 * Parse the RoCEv2 part of a packet (BTH to the end, ICRC included):
 * bounds-checked lookup in the opcode table. Does not check the ICRC.
 * Inline: it runs for every packet of a stream, and a caller that reads
 * the result at once keeps it in registers.
 *
 * @param bth_bytes
 *   First byte of the BTH.
 * @param len
 *   Bytes from the BTH to the end of the UDP payload.
 * @param pkt
 *   Filled when the result is DROCE_PARSE_OK.
 * @return
 *   DROCE_PARSE_OK or the reason for refusing it.
 */
static inline enum droce_parse_result
droce_roce_parse(const void *bth_bytes, uint32_t len, struct droce_pkt *pkt)
{
	const struct droce_bth *bth = (const struct droce_bth *)bth_bytes;
	const struct droce_opcode_info *info;
	uint32_t data_len;
	uint8_t pad;

	if (len < sizeof(*bth) + DROCE_ICRC_LEN)
		return DROCE_PARSE_TRUNCATED;
	info = droce_opcode(bth->opcode);
	if (info == NULL)
		return DROCE_PARSE_UNKNOWN_OPCODE;
	if (droce_bth_tver(bth) != 0)
		return DROCE_PARSE_BAD_TVER;
	if ((uint32_t)info->hdr_len + DROCE_ICRC_LEN > len)
		return DROCE_PARSE_HDR_TOO_LONG;
	data_len = len - info->hdr_len - DROCE_ICRC_LEN;
	pad = droce_bth_pad(bth);
	if (pad > data_len)
		return DROCE_PARSE_BAD_PAD;
	if (data_len != 0 && !(info->flags & DROCE_HDR_PAYLOAD))
		return DROCE_PARSE_UNEXPECTED_PAYLOAD;

	pkt->bth = bth;
	pkt->info = info;
	pkt->opcode = bth->opcode;
	pkt->pad = pad;
	pkt->hdr_len = info->hdr_len;
	pkt->payload_len = data_len - pad;
	pkt->payload = (const uint8_t *)bth + info->hdr_len;
	pkt->icrc = (const uint8_t *)bth + len - DROCE_ICRC_LEN;
	return DROCE_PARSE_OK;
}

/** Counters of refused packets, by reason; one writer. */
struct droce_parse_stats {
	uint64_t ok;
	uint64_t refused[DROCE_PARSE_MAX];
};

/** Parse and count the result in @p stats. */
static inline enum droce_parse_result
droce_roce_parse_count(const void *bth, uint32_t len, struct droce_pkt *pkt,
		       struct droce_parse_stats *stats)
{
	enum droce_parse_result r = droce_roce_parse(bth, len, pkt);

	if (likely(r == DROCE_PARSE_OK))
		stats->ok++;
	else
		stats->refused[r]++;
	return r;
}

/* ---- PSN and MSN arithmetic (24 bits) ----------------------------------- */

/** @p a + @p n, modulo 2^24. */
static inline uint32_t droce_psn_add(uint32_t a, uint32_t n) { return (a + n) & DROCE_PSN_MASK; }
/** @p a - @p b, modulo 2^24. */
static inline uint32_t droce_psn_sub(uint32_t a, uint32_t b) { return (a - b) & DROCE_PSN_MASK; }
/** Signed distance: < 0 when @p a comes before @p b (half the space back). */
static inline int32_t droce_psn_cmp(uint32_t a, uint32_t b) { return (int32_t)((a - b) << 8) >> 8; }
/** True when @p psn lies in [@p start, @p start + @p size). */
static inline bool
droce_psn_in_window(uint32_t psn, uint32_t start, uint32_t size)
{
	return droce_psn_sub(psn, start) < size;
}
/** MSN: same 24-bit arithmetic. */
static inline uint32_t droce_msn_add(uint32_t a, uint32_t n) { return (a + n) & DROCE_MSN_MASK; }
/** Signed MSN distance. */
static inline int32_t droce_msn_cmp(uint32_t a, uint32_t b) { return droce_psn_cmp(a, b); }

/* ---- CRC-32 and ICRC ---------------------------------------------------- */

/** The CRC-32 implementations droce has. */
enum droce_crc_impl {
	DROCE_CRC_AUTO = 0,   /**< the fastest this CPU and EAL allow */
	DROCE_CRC_TABLE,      /**< portable, slicing by 8 */
	DROCE_CRC_PCLMUL,     /**< x86 PCLMULQDQ, 4x128-bit folding */
	DROCE_CRC_VPCLMUL256, /**< x86 VPCLMULQDQ on AVX2 registers, 4x256-bit */
	DROCE_CRC_AVX512,     /**< x86 VPCLMULQDQ, 4x512-bit folding */
};

/**
 * Choose the CRC implementation. AUTO takes AVX512 where the CPU has
 * VPCLMULQDQ and the EAL's max SIMD bitwidth allows 512, else VPCLMUL256
 * where it allows 256 (DPDK's default), else PCLMUL where the CPU has it,
 * else TABLE. AUTO is also what is in use until this is called. Before
 * rte_eal_init() it goes by DPDK's default and is chosen again at the first
 * CRC after it, under the bitwidth the EAL was given.
 *
 * @return
 *   The implementation in use, or -ENOTSUP when this CPU lacks @p impl.
 */
int droce_crc_select(enum droce_crc_impl impl);

/** Name of the implementation in use ("pclmul"). */
const char *droce_crc_impl_name(void);

/** Whether this CPU has @p impl (whatever the EAL's SIMD bitwidth allows). */
bool droce_crc_cpu_has(enum droce_crc_impl impl);

/**
 * CRC-32 of Ethernet and zlib (reflected 0x04C11DB7), zlib's convention:
 * start with 0, chain by passing the previous result.
 */
uint32_t droce_crc32(uint32_t crc, const void *buf, size_t len);

/**
 * ICRC of a RoCEv2 packet.
 *
 * @param l3
 *   IPv4 or IPv6 header (the version field says which).
 * @param len
 *   From @p l3 to the end of the packet, ICRC excluded.
 * @return
 *   The ICRC value; on the wire it is stored little-endian.
 */
uint32_t droce_icrc(const void *l3, uint32_t len);

/**
 * Check the ICRC of a contiguous packet.
 *
 * @param l3
 *   IPv4 or IPv6 header.
 * @param len
 *   From @p l3 to the end of the packet, ICRC included.
 */
bool droce_icrc_ok(const void *l3, uint32_t len);

/** The longest packet (from the IP header on, ICRC included) that
 * droce_icrc_ok_x4() checks four at once.
 */
#define DROCE_ICRC_X4_MAX_LEN 256

/**
 * Check the ICRCs of four packets of the same length, each contiguous, at
 * once. Small IPv4 packets without options (up to DROCE_ICRC_X4_MAX_LEN
 * bytes) go through one pass several times the rate of four
 * droce_icrc_ok() calls, where the CRC in use is VPCLMULQDQ's (the CPU has
 * it and the EAL's SIMD bitwidth allows 256 bits); any others are checked
 * one by one, with the same verdicts.
 *
 * @param l3
 *   The four packets' IP headers; one packet may be given more than once
 *   (it is checked once where the pass is not used).
 * @param len
 *   From each @p l3 to the end of its packet, ICRC included.
 * @return
 *   Bit k set where packet k's ICRC is good (none for @p len under 4).
 */
unsigned int droce_icrc_ok_x4(const void *const l3[4], uint32_t len);

/**
 * Check the ICRC while copying the payload: one pass over the bytes.
 * The payload is written to @p dst whatever the outcome; a caller that
 * refuses the packet must treat those bytes as garbage.
 *
 * @param l3
 *   IPv4 or IPv6 header; the packet is contiguous to its ICRC.
 * @param len
 *   From @p l3 to the end of the packet, ICRC included.
 * @param payload_off
 *   Offset of the payload from @p l3.
 * @param payload_len
 *   Payload bytes to copy (pad excluded).
 * @param dst
 *   Where the payload goes.
 * @return
 *   True when the ICRC matches.
 */
bool droce_icrc_copy_ok(const void *l3, uint32_t len, uint32_t payload_off,
			uint32_t payload_len, void *dst);

/**
 * droce_icrc_copy_ok() with streaming (non-temporal) stores where the CPU
 * and the SIMD bitwidth allow them and @p dst is aligned for them (32
 * bytes for 256-bit vectors, 64 for 512): the payload's lines are written
 * to memory without being read first or kept in this core's caches, for
 * memory that this core does not read again (a GPU's, or a frame another
 * thread takes later). Such stores are weakly ordered: fence them
 * (rte_wmb()) before telling anyone the bytes are there.
 *
 * @return
 *   True when the ICRC matches.
 */
bool droce_icrc_copy_stream_ok(const void *l3, uint32_t len, uint32_t payload_off,
			       uint32_t payload_len, void *dst);

/**
 * Compute and store the ICRC of a packet in an mbuf whose last 4 bytes
 * are reserved for it (any segment layout).
 *
 * @param m
 *   The packet.
 * @param l3_off
 *   Offset of the IP header.
 * @return
 *   0, or -EINVAL when the packet is too short.
 */
int droce_icrc_fill_mbuf(struct rte_mbuf *m, uint32_t l3_off);

/* ---- who takes which packets -------------------------------------------- */

/**
 * Take the RoCEv2 packets (UDP port 4791) for destination QPNs
 * @p first_qpn .. @p last_qpn on the workers of @p s: @p fn gets them in
 * bursts, as a UDP handler on the worker that received them. Ranges may
 * nest, and the narrowest one holding a QPN takes it; the range that
 * holds every QPN also takes packets too short for a BTH. Claim before
 * droce_stack_start().
 *
 * @return
 *   0; -EINVAL for an empty or out-of-range range or no @p fn; -EEXIST
 *   when it crosses (or equals) a range already taken; -ENOSPC when too
 *   many are; or what droce_udp_register() returns.
 */
int droce_roce_claim_qps(struct droce_stack *s, uint32_t first_qpn, uint32_t last_qpn,
			 droce_udp_handler_t fn, void *arg);

/** Give back every range claimed with @p fn and @p arg, once the stack
 * has stopped.
 */
void droce_roce_release_qps(struct droce_stack *s, droce_udp_handler_t fn, void *arg);

/** True when the packets for @p qpn go to @p fn with @p arg (and not to a
 * narrower claim of someone else's).
 */
bool droce_roce_qp_claimed_by(struct droce_stack *s, uint32_t qpn, droce_udp_handler_t fn,
			      const void *arg);

/* ---- building ----------------------------------------------------------- */

/** Everything a frame needs; fields of headers the opcode lacks are ignored. */
struct droce_frame_spec {
	struct rte_ether_addr src_mac, dst_mac;
	bool ipv6;
	rte_be32_t src_ip4, dst_ip4;    /**< IPv4, network order */
	uint8_t src_ip6[16], dst_ip6[16];
	uint8_t traffic_class;          /**< DSCP and ECN */
	uint8_t ttl;                    /**< 0: 64 */
	uint32_t flow_label;            /**< IPv6 */
	uint16_t udp_src_port;          /**< 0: soft-RoCE rule from src_qp */
	uint32_t src_qp;                /**< for that rule and the DETH */

	uint8_t opcode;
	bool se, migreq, ackreq, fecn, becn;
	uint16_t pkey;                  /**< 0: 0xFFFF */
	uint32_t dest_qp, psn;

	uint64_t va;                    /**< RETH / AtomicETH */
	uint32_t rkey, dma_len;
	uint32_t imm;                   /**< ImmDt, host order */
	uint8_t syndrome;               /**< AETH */
	uint32_t msn;
	uint32_t qkey;                  /**< DETH */
	uint64_t swap_add, compare;     /**< AtomicETH */
	uint64_t orig;                  /**< AtomicAckETH */

	const void *payload;            /**< NULL: zeros */
	uint32_t payload_len;
};

/** The UDP source port soft-RoCE uses for a QP: 0xC000 + hash(qpn). */
uint16_t droce_roce_udp_sport(uint32_t qpn);

/** Frame length @p spec makes (Ethernet header to ICRC), or 0 if invalid. */
uint32_t droce_frame_len(const struct droce_frame_spec *spec);

/**
 * Build a complete frame into an empty mbuf: Ethernet, IPv4 (with header
 * checksum) or IPv6, UDP (length; checksum 0 as RoCEv2 senders do), BTH,
 * the opcode's extension headers, payload, zero pad and ICRC.
 *
 * @return
 *   0; -EINVAL for an opcode droce does not know or payload on one that
 *   carries none; -ENOSPC when the mbuf has no room (nothing appended).
 */
int droce_frame_build(struct rte_mbuf *m, const struct droce_frame_spec *spec);

/**
 * Build a frame whose payload stays where it is: headers into the empty
 * mbuf @p m, then @p payload, then the zero pad and ICRC into the empty
 * mbuf @p trailer, chained in that order (the ICRC computed over all
 * three). For zero-copy sends: @p payload is typically an mbuf attached
 * to the application's memory as an external buffer. The port must
 * take multi-segment packets (RTE_ETH_TX_OFFLOAD_MULTI_SEGS).
 * spec->payload is ignored.
 *
 * @return
 *   0, the three chained behind @p m; -EINVAL for an opcode droce does
 *   not know, one without payload, a @p payload whose length is not
 *   spec->payload_len or a non-empty @p m or @p trailer; -ENOSPC when
 *   the headers or trailer do not fit or the chain would be too long.
 *   On error nothing is chained or appended.
 */
int droce_frame_build_chained(struct rte_mbuf *m, const struct droce_frame_spec *spec,
			      struct rte_mbuf *payload, struct rte_mbuf *trailer);

/** Bytes of an IPv4 ACKNOWLEDGE frame: Ethernet, IPv4, UDP, BTH, AETH, ICRC. */
#define DROCE_ACK_FRAME_LEN (14 + 20 + 8 + 12 + 4 + DROCE_ICRC_LEN)

/**
 * An IPv4 ACKNOWLEDGE frame prepared once for a connection: what its
 * ACKs share (addresses, ports, QPN, P_Key) written, and the ICRC's
 * register carried past those bytes. droce_ack_build() then makes one
 * with a copy, two stores and a CRC of the 8 bytes that differ (PSN and
 * AETH), where droce_frame_build() writes every header and runs the ICRC
 * over them all.
 */
struct droce_ack_proto {
	uint8_t bytes[DROCE_ACK_FRAME_LEN];
	uint32_t crc_reg;               /**< the ICRC's register before the PSN */
};

/**
 * Prepare @p proto from @p spec, an ACKNOWLEDGE over IPv4 (its PSN,
 * AckReq, syndrome and MSN are the frames' own, and ignored here).
 *
 * @return
 *   0; -EINVAL for another opcode, IPv6 or a payload.
 */
int droce_ack_proto_init(struct droce_ack_proto *proto, const struct droce_frame_spec *spec);

/**
 * Append to @p m the ACK of @p proto with @p psn, @p syndrome and @p msn:
 * the frame droce_frame_build() makes of the spec with those fields.
 *
 * @return
 *   0; -ENOSPC when the mbuf has no room (nothing appended).
 */
int droce_ack_build(struct rte_mbuf *m, const struct droce_ack_proto *proto, uint32_t psn,
		    uint8_t syndrome, uint32_t msn);

#ifdef __cplusplus
}
#endif

#endif /* DROCE_ROCE_H */
