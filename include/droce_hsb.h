/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_HSB_H
#define DROCE_HSB_H

/**
 * @file
 * droce hsb: what a Holoscan Sensor Bridge puts on the wire, both ways.
 *
 * A frame is a run of RDMA WRITE ONLY packets (UC) carrying the frame's
 * bytes into one page of the host's buffer and one RDMA WRITE ONLY with
 * IMMEDIATE that ends it, its immediate naming the page and its own PSN.
 * The 128-byte metadata block lands at the page's metadata offset, in one
 * of two layouts: embedded (the device's default), where the packet that
 * ends the frame carries its last data, zeros up to the metadata offset
 * and the block, when one packet has room for them; or separate, where
 * the data ends in a plain WRITE ONLY and the block travels alone in the
 * frame's last packet. The receiver (lib/rx) decodes with these
 * functions; the sender (app/droce-sensor, tests, benchmarks) builds
 * frames with them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rte_byteorder.h>
#include <rte_ether.h>

#include "droce_roce.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of the metadata block; the device writes the first 48. */
#define DROCE_HSB_METADATA_SIZE 128
#define DROCE_HSB_METADATA_USED 48
/** UDP source port the device sends from. */
#define DROCE_HSB_UDP_SPORT 12288
/** PSNs of the current IP wrap at 20 bits (they share the immediate). */
#define DROCE_HSB_PSN_MASK 0xfffffu
/** Most pages a receiver cycles through. */
#define DROCE_HSB_MAX_PAGES 4096
/** Bytes of headers around a data packet's payload: Ethernet 14, IPv4
 *  20, UDP 8, BTH 12, RETH 16, ICRC 4.
 */
#define DROCE_HSB_OVERHEAD 74

/** Most payload per packet: the payload rule at the largest MTU a sender
 *  takes (9600).
 */
#define DROCE_HSB_MAX_PAYLOAD 9472

/** How the immediate of a frame's last packet names page and PSN. */
enum droce_hsb_imm {
	DROCE_HSB_IMM_CURRENT = 0, /**< page = imm & 0xfff, psn = imm >> 12 */
	DROCE_HSB_IMM_LITE,        /**< HSB-Lite 2510: page = imm & 0xff, psn = imm >> 8 */
	DROCE_HSB_IMM_OPAQUE,      /**< not HSB: the page comes from the VA */
};

/** Where a sender puts a frame's metadata block (see the file comment). */
enum droce_hsb_metadata_layout {
	/** The device's default: in the packet with the frame's last data
	 *  when it has room, else as SEPARATE.
	 */
	DROCE_HSB_METADATA_EMBEDDED = 0,
	/** Always alone, in a 128-byte packet after the frame's data (a
	 *  device built with SEPARATE_FRAMEMETADATA_PACKET).
	 */
	DROCE_HSB_METADATA_SEPARATE,
};

/** The metadata block, decoded (the wire is big-endian). */
struct droce_hsb_metadata {
	bool present;           /**< the frame's last packet carried it */
	uint32_t flags;         /**< bit 0 early TLAST, bit 1 bytes-per-window */
	uint32_t psn;           /**< the immediate's PSN */
	uint32_t crc;           /**< CRC-32/JAMCRC of the frame */
	uint64_t timestamp_s;   /**< PTP time, start of frame */
	uint32_t timestamp_ns;
	uint64_t bytes_written;
	uint64_t frame_number;  /**< 16 bits on the wire; receivers extend it */
	uint64_t metadata_s;    /**< PTP time, end of frame */
	uint32_t metadata_ns;
};

/** Write @p md as the device does (frame_number's low 16 bits). */
void droce_hsb_metadata_encode(const struct droce_hsb_metadata *md,
			       uint8_t out[DROCE_HSB_METADATA_SIZE]);

/** Read the first DROCE_HSB_METADATA_USED bytes of a block. */
void droce_hsb_metadata_decode(const uint8_t *in, struct droce_hsb_metadata *md);

/** The immediate for @p page and @p psn in format @p fmt. */
uint32_t droce_hsb_imm_encode(enum droce_hsb_imm fmt, uint32_t page,
			      uint32_t psn);

/** Name of an immediate format ("hsb", "hsb-lite", "opaque"). */
const char *droce_hsb_imm_name(enum droce_hsb_imm fmt);

/** Parse an immediate format name; -EINVAL for anything else. */
int droce_hsb_imm_parse(const char *s, enum droce_hsb_imm *fmt);

/** Name of a metadata layout ("embedded", "separate"); NULL for others. */
const char *droce_hsb_metadata_layout_name(enum droce_hsb_metadata_layout l);

/** Parse a metadata layout name; -EINVAL for anything else. */
int droce_hsb_metadata_layout_parse(const char *s,
				    enum droce_hsb_metadata_layout *l);

/**
 * Payload bytes per data packet at @p mtu (IP MTU): the device's rule,
 * floor((mtu - 74) / 128) * 128 with 74 counting the Ethernet header too;
 * 1408 at MTU 1500. 0 when the MTU leaves no room for 128 bytes.
 */
uint32_t droce_hsb_payload_per_packet(uint32_t mtu);

/** CRC-32/JAMCRC of a frame, as the device puts it in the metadata. */
uint32_t droce_hsb_frame_crc(const void *frame, size_t len);

/**
 * The counter pattern the sensor emulator sends, so that a receiver can
 * check every byte without the source: little-endian 32-bit words, word
 * j of frame n = n * 0x9e3779b1 + j (mod 2^32), cut at @p len.
 */
void droce_hsb_pattern_fill(void *frame, size_t len, uint64_t frame_number);

/**
 * Check a frame against the pattern.
 *
 * @return
 *   -1 when every byte matches, else the offset of the first that does not.
 */
ssize_t droce_hsb_pattern_check(const void *frame, size_t len,
				uint64_t frame_number);

/** Page layout of a receiver: page_size, metadata offset and buffer size
 *  for @p frame_size and @p pages, by the HSB rules.
 */
struct droce_hsb_layout {
	size_t frame_size;
	size_t metadata_offset; /**< round_up(frame_size, 128) */
	size_t page_size;       /**< metadata_offset + 128 */
	unsigned int pages;
	size_t buffer_size;     /**< round_up(page_size * pages, @p align) */
};

/** Fill @p l by the HSB rules; @p align is the system page size. */
void droce_hsb_layout(size_t frame_size, unsigned int pages, size_t align,
		      struct droce_hsb_layout *l);

/** What a sender needs to know about its receiver and itself. */
struct droce_hsb_sender_conf {
	struct rte_ether_addr src_mac, dst_mac;
	rte_be32_t src_ip, dst_ip;      /**< network order */
	uint32_t qp;                    /**< the receiver's QP */
	uint32_t rkey;                  /**< the receiver's rkey */
	uint64_t page_base;             /**< VA of page 0 (HSB: 0) */
	size_t frame_size, page_size, metadata_offset;
	unsigned int pages;
	uint32_t payload_per_packet;    /**< a multiple of 128, at most
					 *   DROCE_HSB_MAX_PAYLOAD
					 */
	enum droce_hsb_imm imm;
	enum droce_hsb_metadata_layout metadata; /**< 0: embedded */
	uint32_t first_psn;
	/** Page of the first frame, < pages. A device counts pages up before
	 *  each frame from 0, so its first frame lands in page 1 (0 when
	 *  there is one page); 0 here keeps the simple order.
	 */
	unsigned int first_page;
};

/** A sender's position: page, PSN and frame number move on per frame. */
struct droce_hsb_sender {
	struct droce_hsb_sender_conf conf;
	uint32_t psn_mask;
	uint32_t psn;                   /**< of the next packet */
	uint32_t page;                  /**< of the frame being sent */
	uint64_t frame_number;
	/* the frame being sent */
	const uint8_t *data;
	size_t offset;                  /**< bytes handed out so far */
	bool metadata_sent;
	bool embedded;                  /**< the block rides with the last data */
	uint8_t metadata[DROCE_HSB_METADATA_SIZE];
	/** The payload of an embedded frame end: the last data, zeros, the
	 *  block, contiguous as droce_frame_build() takes it.
	 */
	uint8_t last_payload[DROCE_HSB_MAX_PAYLOAD];
};

/**
 * Set up a sender.
 *
 * @return
 *   0, or -EINVAL with a message (payload not a multiple of 128 or over
 *   DROCE_HSB_MAX_PAYLOAD, frame larger than the metadata offset, pages
 *   out of 1..4096, first page not below pages, an unknown layout, ...).
 */
int droce_hsb_sender_init(struct droce_hsb_sender *s,
			  const struct droce_hsb_sender_conf *conf, char *err,
			  size_t errlen);

/**
 * Begin the next frame: @p data (frame_size bytes) goes to the current
 * page; @p md is written as its metadata block, with psn (that of the
 * packet that will carry the block, the frame's last) and frame number
 * set by the sender. @p data must stay valid until the frame's last
 * packet was built.
 */
void droce_hsb_frame_begin(struct droce_hsb_sender *s, const void *data,
			   struct droce_hsb_metadata *md);

/**
 * The next packet of the frame, as a frame spec for droce_frame_build()
 * (a caller may change it first: fault injection). The spec points into
 * the frame data and into @p s; the frame's last packet is always the
 * WRITE ONLY with IMMEDIATE.
 *
 * @return
 *   True with @p spec filled; false once the frame's last packet was
 *   given (the sender has moved to the next page).
 */
bool droce_hsb_frame_next(struct droce_hsb_sender *s,
			  struct droce_frame_spec *spec);

/**
 * Whether a frame's metadata block rides in the packet with its last data.
 * The device's rule, for the EMBEDDED layout: with rem bytes of data in
 * that packet and pad zeros between their end and the metadata offset,
 * payload_per_packet - rem - pad - 128 (block) - 4 (immediate) must leave
 * at least 128 bytes spare, and pad be at most 128. Always false for the
 * SEPARATE layout. @p c must be one droce_hsb_sender_init() accepts.
 */
bool droce_hsb_metadata_embedded(const struct droce_hsb_sender_conf *c);

/** Packets per frame: the data packets, and a packet for the metadata
 *  block unless it is embedded.
 */
unsigned int droce_hsb_packets_per_frame(const struct droce_hsb_sender_conf *c);

#ifdef __cplusplus
}
#endif

#endif /* DROCE_HSB_H */
