/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The HSB data-plane format: the metadata block, the immediate, the
 * payload rule, and the order in which a device sends a frame. Facts in
 * shared/reference/hsb-wire.md.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include "droce_hsb.h"

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void
put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint32_t
get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* Offsets in the block. */
enum {
	MD_FLAGS = 0, MD_PSN = 4, MD_CRC = 8, MD_TS_S = 12, MD_TS_NS = 20,
	MD_BYTES = 24, MD_RESERVED = 32, MD_FRAME = 34, MD_META_S = 36,
	MD_META_NS = 44,
};

void
droce_hsb_metadata_encode(const struct droce_hsb_metadata *md,
			  uint8_t out[DROCE_HSB_METADATA_SIZE])
{
	memset(out, 0, DROCE_HSB_METADATA_SIZE);
	put_be32(out + MD_FLAGS, md->flags);
	put_be32(out + MD_PSN, md->psn);
	put_be32(out + MD_CRC, md->crc);
	put_be64(out + MD_TS_S, md->timestamp_s);
	put_be32(out + MD_TS_NS, md->timestamp_ns);
	put_be64(out + MD_BYTES, md->bytes_written);
	out[MD_FRAME] = (uint8_t)(md->frame_number >> 8);
	out[MD_FRAME + 1] = (uint8_t)md->frame_number;
	put_be64(out + MD_META_S, md->metadata_s);
	put_be32(out + MD_META_NS, md->metadata_ns);
}

void
droce_hsb_metadata_decode(const uint8_t *in, struct droce_hsb_metadata *md)
{
	md->present = true;
	md->flags = get_be32(in + MD_FLAGS);
	md->psn = get_be32(in + MD_PSN);
	md->crc = get_be32(in + MD_CRC);
	md->timestamp_s = get_be64(in + MD_TS_S);
	md->timestamp_ns = get_be32(in + MD_TS_NS);
	md->bytes_written = get_be64(in + MD_BYTES);
	md->frame_number = (uint16_t)(in[MD_FRAME] << 8 | in[MD_FRAME + 1]);
	md->metadata_s = get_be64(in + MD_META_S);
	md->metadata_ns = get_be32(in + MD_META_NS);
}

uint32_t
droce_hsb_imm_encode(enum droce_hsb_imm fmt, uint32_t page, uint32_t psn)
{
	switch (fmt) {
	case DROCE_HSB_IMM_CURRENT:
		return (psn & DROCE_HSB_PSN_MASK) << 12 | (page & 0xfff);
	case DROCE_HSB_IMM_LITE:
		return (psn & 0xffffff) << 8 | (page & 0xff);
	default:
		return page;
	}
}

static const char *const imm_names[] = {
	[DROCE_HSB_IMM_CURRENT] = "hsb",
	[DROCE_HSB_IMM_LITE] = "hsb-lite",
	[DROCE_HSB_IMM_OPAQUE] = "opaque",
};

const char *
droce_hsb_imm_name(enum droce_hsb_imm fmt)
{
	return (unsigned int)fmt < RTE_DIM(imm_names) ? imm_names[fmt] : NULL;
}

int
droce_hsb_imm_parse(const char *s, enum droce_hsb_imm *fmt)
{
	for (unsigned int i = 0; i < RTE_DIM(imm_names); i++)
		if (strcmp(s, imm_names[i]) == 0) {
			*fmt = (enum droce_hsb_imm)i;
			return 0;
		}
	return -EINVAL;
}

static const char *const layout_names[] = {
	[DROCE_HSB_METADATA_EMBEDDED] = "embedded",
	[DROCE_HSB_METADATA_SEPARATE] = "separate",
};

const char *
droce_hsb_metadata_layout_name(enum droce_hsb_metadata_layout l)
{
	return (unsigned int)l < RTE_DIM(layout_names) ? layout_names[l] : NULL;
}

int
droce_hsb_metadata_layout_parse(const char *s, enum droce_hsb_metadata_layout *l)
{
	for (unsigned int i = 0; i < RTE_DIM(layout_names); i++)
		if (strcmp(s, layout_names[i]) == 0) {
			*l = (enum droce_hsb_metadata_layout)i;
			return 0;
		}
	return -EINVAL;
}

uint32_t
droce_hsb_payload_per_packet(uint32_t mtu)
{
	return mtu < DROCE_HSB_OVERHEAD ? 0 : (mtu - DROCE_HSB_OVERHEAD) / 128 * 128;
}

uint32_t
droce_hsb_frame_crc(const void *frame, size_t len)
{
	return ~droce_crc32(0, frame, len);
}

static inline uint32_t
pattern_word(uint64_t frame_number, size_t j)
{
	return (uint32_t)frame_number * 0x9e3779b1u + (uint32_t)j;
}

void
droce_hsb_pattern_fill(void *frame, size_t len, uint64_t frame_number)
{
	uint8_t *p = frame;
	size_t words = len / 4;

	for (size_t j = 0; j < words; j++) {
		uint32_t w = rte_cpu_to_le_32(pattern_word(frame_number, j));

		memcpy(p + 4 * j, &w, 4);
	}
	if (len % 4 != 0) {
		uint32_t w = rte_cpu_to_le_32(pattern_word(frame_number, words));

		memcpy(p + 4 * words, &w, len % 4);
	}
}

/* The first byte of p[0..n) that differs from the pattern, from word j0. */
static ssize_t
pattern_first_difference(const uint8_t *p, size_t n, uint64_t frame_number,
			 size_t j0)
{
	for (size_t b = 0; b < n; b++) {
		uint32_t w = rte_cpu_to_le_32(pattern_word(frame_number, j0 + b / 4));

		if (p[b] != ((const uint8_t *)&w)[b % 4])
			return (ssize_t)b;
	}
	return -1;
}

/* Whole blocks of words are compared without a branch, so the compiler can
 * use vectors (a frame checked byte by byte costs the consumer more than
 * the receive); only a block that differs is looked at byte by byte.
 */
#define PATTERN_BLOCK_WORDS 256

ssize_t
droce_hsb_pattern_check(const void *frame, size_t len, uint64_t frame_number)
{
	const uint8_t *p = frame;
	size_t words = len / 4;
	size_t j = 0;
	ssize_t at;

	for (; j < words; j += PATTERN_BLOCK_WORDS) {
		size_t n = RTE_MIN((size_t)PATTERN_BLOCK_WORDS, words - j);
		uint32_t diff = 0;

		for (size_t k = 0; k < n; k++) {
			uint32_t got;

			memcpy(&got, p + 4 * (j + k), 4);
			diff |= got ^ rte_cpu_to_le_32(pattern_word(frame_number, j + k));
		}
		if (diff != 0) {
			at = pattern_first_difference(p + 4 * j, 4 * n, frame_number, j);
			return (ssize_t)(4 * j) + at;
		}
	}
	at = pattern_first_difference(p + 4 * words, len % 4, frame_number, words);
	return at < 0 ? -1 : (ssize_t)(4 * words) + at;
}

void
droce_hsb_layout(size_t frame_size, unsigned int pages, size_t align,
		 struct droce_hsb_layout *l)
{
	l->frame_size = frame_size;
	l->metadata_offset = RTE_ALIGN_CEIL(frame_size, 128);
	l->page_size = l->metadata_offset + DROCE_HSB_METADATA_SIZE;
	l->pages = pages;
	l->buffer_size = RTE_ALIGN_CEIL(l->page_size * pages, align);
}

int
droce_hsb_sender_init(struct droce_hsb_sender *s,
		      const struct droce_hsb_sender_conf *c, char *err,
		      size_t errlen)
{
	if (c->payload_per_packet == 0 || c->payload_per_packet % 128 != 0 ||
	    c->payload_per_packet > DROCE_HSB_MAX_PAYLOAD) {
		snprintf(err, errlen, "sender: payload per packet %u; allowed: a positive multiple of 128, at most %u (MTU 9600)",
			 c->payload_per_packet, DROCE_HSB_MAX_PAYLOAD);
		return -EINVAL;
	}
	if (c->pages < 1 || c->pages > DROCE_HSB_MAX_PAGES) {
		snprintf(err, errlen, "sender: %u pages; allowed: 1..%u", c->pages,
			 DROCE_HSB_MAX_PAGES);
		return -EINVAL;
	}
	if (c->first_page >= c->pages) {
		snprintf(err, errlen, "sender: first page %u; allowed: 0..%u (%u pages)",
			 c->first_page, c->pages - 1, c->pages);
		return -EINVAL;
	}
	if (c->frame_size == 0 || c->metadata_offset < c->frame_size ||
	    c->page_size < c->metadata_offset + DROCE_HSB_METADATA_SIZE) {
		snprintf(err, errlen, "sender: frame %zu, metadata offset %zu, page %zu bytes; allowed: 0 < frame <= offset, offset + 128 <= page",
			 c->frame_size, c->metadata_offset, c->page_size);
		return -EINVAL;
	}
	if (c->imm == DROCE_HSB_IMM_LITE && c->pages > 256) {
		snprintf(err, errlen, "sender: %u pages; the HSB-Lite immediate has room for 256",
			 c->pages);
		return -EINVAL;
	}
	if (droce_hsb_metadata_layout_name(c->metadata) == NULL) {
		snprintf(err, errlen, "sender: metadata layout %d; allowed: embedded (%d), separate (%d)",
			 (int)c->metadata, DROCE_HSB_METADATA_EMBEDDED,
			 DROCE_HSB_METADATA_SEPARATE);
		return -EINVAL;
	}
	memset(s, 0, sizeof(*s));
	s->conf = *c;
	s->psn_mask = c->imm == DROCE_HSB_IMM_CURRENT ? DROCE_HSB_PSN_MASK
						      : DROCE_PSN_MASK;
	s->psn = c->first_psn & s->psn_mask;
	s->page = c->first_page;
	s->embedded = droce_hsb_metadata_embedded(c);
	return 0;
}

/* Bytes of the frame's last data packet: a whole packet's worth when the
 * frame fills its packets exactly.
 */
static size_t
last_chunk(const struct droce_hsb_sender_conf *c)
{
	size_t rem = c->frame_size % c->payload_per_packet;

	return rem != 0 ? rem : c->payload_per_packet;
}

bool
droce_hsb_metadata_embedded(const struct droce_hsb_sender_conf *c)
{
	int64_t rem = (int64_t)last_chunk(c);
	int64_t pad = (int64_t)(c->metadata_offset - c->frame_size);
	int64_t spare = (int64_t)c->payload_per_packet - rem -
			DROCE_HSB_METADATA_SIZE - 4 - pad;

	/* The device keeps 128 bytes of the packet free, and has 128 zero
	 * bytes to pad with: a block further off goes alone.
	 */
	return c->metadata == DROCE_HSB_METADATA_EMBEDDED &&
	       spare >= DROCE_HSB_METADATA_SIZE && pad <= DROCE_HSB_METADATA_SIZE;
}

unsigned int
droce_hsb_packets_per_frame(const struct droce_hsb_sender_conf *c)
{
	return (unsigned int)((c->frame_size + c->payload_per_packet - 1) /
			      c->payload_per_packet) +
	       (droce_hsb_metadata_embedded(c) ? 0 : 1);
}

void
droce_hsb_frame_begin(struct droce_hsb_sender *s, const void *data,
		      struct droce_hsb_metadata *md)
{
	unsigned int n = droce_hsb_packets_per_frame(&s->conf);

	s->data = data;
	s->offset = 0;
	s->metadata_sent = false;
	/* The block names the PSN of the packet that carries it: the
	 * frame's last, in either layout.
	 */
	md->psn = (s->psn + n - 1) & s->psn_mask;
	md->frame_number = s->frame_number;
	droce_hsb_metadata_encode(md, s->metadata);
}

/* Make @p spec the frame's end: a WRITE ONLY with IMMEDIATE naming the
 * page and its PSN; the sender moves on to the next frame's page.
 */
static void
frame_end(struct droce_hsb_sender *s, struct droce_frame_spec *spec)
{
	spec->opcode = DROCE_OP_UC | DROCE_OP_WRITE_ONLY_IMM;
	spec->imm = droce_hsb_imm_encode(s->conf.imm, s->page, spec->psn);
	s->metadata_sent = true;
	s->page = (s->page + 1) % s->conf.pages;
	s->frame_number++;
}

/* The last @p len data bytes, the zeros up to the metadata offset and the
 * block, as one payload in s->last_payload.
 */
static uint32_t
embed_metadata(struct droce_hsb_sender *s, uint32_t len)
{
	const struct droce_hsb_sender_conf *c = &s->conf;
	size_t pad = c->metadata_offset - c->frame_size;

	memcpy(s->last_payload, s->data + s->offset, len);
	memset(s->last_payload + len, 0, pad);
	memcpy(s->last_payload + len + pad, s->metadata, DROCE_HSB_METADATA_SIZE);
	return len + (uint32_t)pad + DROCE_HSB_METADATA_SIZE;
}

bool
droce_hsb_frame_next(struct droce_hsb_sender *s, struct droce_frame_spec *spec)
{
	const struct droce_hsb_sender_conf *c = &s->conf;
	uint64_t page_va = c->page_base + (uint64_t)s->page * c->page_size;

	if (s->metadata_sent)
		return false;
	memset(spec, 0, sizeof(*spec));
	spec->src_mac = c->src_mac;
	spec->dst_mac = c->dst_mac;
	spec->src_ip4 = c->src_ip;
	spec->dst_ip4 = c->dst_ip;
	spec->udp_src_port = DROCE_HSB_UDP_SPORT;
	spec->dest_qp = c->qp;
	spec->rkey = c->rkey;
	spec->psn = s->psn;
	s->psn = (s->psn + 1) & s->psn_mask;
	if (s->offset < c->frame_size) {
		uint32_t len = (uint32_t)RTE_MIN((size_t)c->payload_per_packet,
						 c->frame_size - s->offset);

		spec->opcode = DROCE_OP_UC | DROCE_OP_WRITE_ONLY;
		spec->va = page_va + s->offset;
		if (s->embedded && s->offset + len == c->frame_size) {
			spec->payload = s->last_payload;
			spec->payload_len = spec->dma_len = embed_metadata(s, len);
			s->offset += len;
			frame_end(s, spec);
			return true;
		}
		spec->payload = s->data + s->offset;
		spec->payload_len = spec->dma_len = len;
		s->offset += len;
		return true;
	}
	spec->va = page_va + c->metadata_offset;
	spec->payload = s->metadata;
	spec->payload_len = spec->dma_len = DROCE_HSB_METADATA_SIZE;
	frame_end(s, spec);
	return true;
}
