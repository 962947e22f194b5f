/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/hsb: the metadata block byte by byte (big-endian, the offsets of
 * reference/hsb-wire.md), both immediate formats, the payload rule, the
 * page layout, and the packets a sender makes of a frame in either
 * metadata layout (the device's rule for embedding the block).
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "droce_hsb.h"

static void
test_metadata_bytes(void **state)
{
	const struct droce_hsb_metadata md = {
		.flags = 0x00000003, .psn = 0x000abcde, .crc = 0xdeadbeef,
		.timestamp_s = 0x0000000165a0bc00ull, .timestamp_ns = 999999999,
		.bytes_written = 0x0000000100000010ull, .frame_number = 0x1fffe,
		.metadata_s = 0x0102030405060708ull, .metadata_ns = 0x0a0b0c0d,
	};
	static const uint8_t wire[48] = {
		0x00, 0x00, 0x00, 0x03,  0x00, 0x0a, 0xbc, 0xde,
		0xde, 0xad, 0xbe, 0xef,
		0x00, 0x00, 0x00, 0x01, 0x65, 0xa0, 0xbc, 0x00,
		0x3b, 0x9a, 0xc9, 0xff,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10,
		0x00, 0x00,  0xff, 0xfe,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x0a, 0x0b, 0x0c, 0x0d,
	};
	uint8_t block[DROCE_HSB_METADATA_SIZE], zero[80] = { 0 };
	struct droce_hsb_metadata back;

	(void)state;
	memset(block, 0x77, sizeof(block));
	droce_hsb_metadata_encode(&md, block);
	assert_memory_equal(block, wire, sizeof(wire));
	assert_memory_equal(block + 48, zero, 80);   /* padded with zeros */
	droce_hsb_metadata_decode(block, &back);
	assert_true(back.present);
	assert_int_equal(back.flags, md.flags);
	assert_int_equal(back.psn, md.psn);
	assert_int_equal(back.crc, md.crc);
	assert_int_equal(back.timestamp_s, md.timestamp_s);
	assert_int_equal(back.timestamp_ns, md.timestamp_ns);
	assert_int_equal(back.bytes_written, md.bytes_written);
	assert_int_equal(back.frame_number, 0xfffe);  /* 16 bits on the wire */
	assert_int_equal(back.metadata_s, md.metadata_s);
	assert_int_equal(back.metadata_ns, md.metadata_ns);
}

static void
test_immediates(void **state)
{
	enum droce_hsb_imm f;

	(void)state;
	assert_int_equal(droce_hsb_imm_encode(DROCE_HSB_IMM_CURRENT, 0xabc, 0x12345),
			 0x12345abc);
	/* The PSN keeps 20 bits, the page 12. */
	assert_int_equal(droce_hsb_imm_encode(DROCE_HSB_IMM_CURRENT, 0x1001, 0x123456),
			 0x23456001);
	assert_int_equal(droce_hsb_imm_encode(DROCE_HSB_IMM_LITE, 0x17, 0xabcdef),
			 0xabcdef17);
	assert_int_equal(droce_hsb_imm_encode(DROCE_HSB_IMM_OPAQUE, 5, 9), 5);
	assert_int_equal(droce_hsb_imm_parse("hsb-lite", &f), 0);
	assert_int_equal(f, DROCE_HSB_IMM_LITE);
	assert_int_equal(droce_hsb_imm_parse("hsb2", &f), -EINVAL);
	assert_string_equal(droce_hsb_imm_name(DROCE_HSB_IMM_CURRENT), "hsb");
	assert_null(droce_hsb_imm_name((enum droce_hsb_imm)3));
}

static void
test_payload_rule_and_layout(void **state)
{
	struct droce_hsb_layout l;

	(void)state;
	assert_int_equal(droce_hsb_payload_per_packet(1500), 1408);
	assert_int_equal(droce_hsb_payload_per_packet(9000), 8832);
	assert_int_equal(droce_hsb_payload_per_packet(4096), 3968);
	assert_int_equal(droce_hsb_payload_per_packet(201), 0);
	assert_int_equal(droce_hsb_payload_per_packet(202), 128);
	assert_int_equal(droce_hsb_payload_per_packet(10), 0);
	droce_hsb_layout(1920 * 1080 * 2 + 1, 3, 4096, &l);
	assert_int_equal(l.metadata_offset, 4147328);
	assert_int_equal(l.page_size, 4147328 + 128);
	assert_int_equal(l.buffer_size, 12443648);
	/* JAMCRC is CRC-32 without its final inversion. */
	assert_int_equal(droce_hsb_frame_crc("123456789", 9), 0x340bc6d9);
}

static void
test_sender_packets(void **state)
{
	struct droce_hsb_sender_conf c = {
		.src_ip = RTE_BE32(0xc6120002), .dst_ip = RTE_BE32(0xc6120001),
		.qp = 0x123, .rkey = 0xabcd, .page_base = 0x100000,
		.frame_size = 3000, .page_size = 3200, .metadata_offset = 3072,
		.pages = 2, .payload_per_packet = 1408,
		.imm = DROCE_HSB_IMM_CURRENT, .first_psn = 0xffffe,
		.metadata = DROCE_HSB_METADATA_SEPARATE,
	};
	static uint8_t frame[3000];
	struct droce_hsb_metadata md = { .crc = 1 };
	struct droce_frame_spec spec;
	struct droce_hsb_sender s;
	uint32_t lens[] = { 1408, 1408, 184, 128 };
	char err[128];

	(void)state;
	assert_int_equal(droce_hsb_packets_per_frame(&c), 4);
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), 0);
	for (unsigned int frame_no = 0; frame_no < 3; frame_no++) {
		uint64_t page_va = 0x100000 + (frame_no % 2) * 3200ull;

		droce_hsb_frame_begin(&s, frame, &md);
		assert_int_equal(md.frame_number, frame_no);
		for (unsigned int i = 0; i < 4; i++) {
			uint32_t psn = (0xffffe + frame_no * 4 + i) & 0xfffff;

			assert_true(droce_hsb_frame_next(&s, &spec));
			assert_int_equal(spec.psn, psn);
			assert_int_equal(spec.dest_qp, 0x123);
			assert_int_equal(spec.rkey, 0xabcd);
			assert_int_equal(spec.udp_src_port, DROCE_HSB_UDP_SPORT);
			assert_int_equal(spec.payload_len, lens[i]);
			assert_int_equal(spec.dma_len, lens[i]);
			if (i < 3) {
				assert_int_equal(spec.opcode, DROCE_OP_UC | DROCE_OP_WRITE_ONLY);
				assert_int_equal(spec.va, page_va + 1408 * i);
				assert_ptr_equal(spec.payload, frame + 1408 * i);
			} else {
				assert_int_equal(spec.opcode,
						 DROCE_OP_UC | DROCE_OP_WRITE_ONLY_IMM);
				assert_int_equal(spec.va, page_va + 3072);
				assert_int_equal(spec.imm, psn << 12 | (frame_no % 2));
				/* The block names the last packet's PSN. */
				assert_int_equal(md.psn, psn);
				assert_int_equal(((const uint8_t *)spec.payload)[7],
						 psn & 0xff);
			}
		}
		assert_false(droce_hsb_frame_next(&s, &spec));
	}
	/* Refused configurations say what is allowed. */
	c.payload_per_packet = 1400;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "payload per packet 1400; allowed: a positive multiple of 128"));
	c.payload_per_packet = 1408;
	c.pages = 0;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "0 pages; allowed: 1..4096"));
	c.pages = 300;
	c.imm = DROCE_HSB_IMM_LITE;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "HSB-Lite immediate has room for 256"));
	c.pages = 2;
	c.metadata_offset = 2944;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "frame 3000, metadata offset 2944"));
}

/* A sender's packets against a model of the device written out here:
 * data in payload_per_packet chunks, and the block either in the packet
 * with the last chunk (@p embeds) or alone after it. @p frames frames, in
 * pages first_page, first_page + 1, ... The payloads, opcodes, VAs,
 * lengths, immediates and the block's psn are all checked.
 */
static void
check_frames(const struct droce_hsb_sender_conf *c, bool embeds,
	     unsigned int frames)
{
	static uint8_t frame[8192];
	static const uint8_t zeros[DROCE_HSB_METADATA_SIZE];
	unsigned int data_pkts = (unsigned int)((c->frame_size + c->payload_per_packet - 1) /
						c->payload_per_packet);
	unsigned int n = data_pkts + (embeds ? 0 : 1);
	size_t pad = c->metadata_offset - c->frame_size;
	struct droce_hsb_sender s;
	uint32_t psn = c->first_psn & DROCE_HSB_PSN_MASK;
	char err[256];

	assert_true(c->frame_size <= sizeof(frame));
	assert_int_equal(droce_hsb_metadata_embedded(c), embeds);
	assert_int_equal(droce_hsb_packets_per_frame(c), n);
	if (droce_hsb_sender_init(&s, c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	/* The zeros are written with each frame, not left over from init. */
	memset(s.last_payload, 0xee, sizeof(s.last_payload));
	for (unsigned int f = 0; f < frames; f++) {
		unsigned int page = (c->first_page + f) % c->pages;
		uint64_t page_va = c->page_base + (uint64_t)page * c->page_size;
		uint32_t last_psn = (psn + n - 1) & DROCE_HSB_PSN_MASK;
		struct droce_hsb_metadata md = { .crc = 0x1234, .bytes_written = c->frame_size };
		struct droce_hsb_metadata back;
		struct droce_frame_spec spec;

		droce_hsb_pattern_fill(frame, c->frame_size, f);
		droce_hsb_frame_begin(&s, frame, &md);
		assert_int_equal(md.psn, last_psn);
		assert_int_equal(md.frame_number, f);
		for (unsigned int i = 0; i < n; i++, psn = (psn + 1) & DROCE_HSB_PSN_MASK) {
			size_t off = (size_t)i * c->payload_per_packet;
			uint32_t len = (uint32_t)RTE_MIN((size_t)c->payload_per_packet,
							 c->frame_size - RTE_MIN(off, c->frame_size));
			const uint8_t *p;
			size_t block_at;

			assert_true(droce_hsb_frame_next(&s, &spec));
			assert_int_equal(spec.psn, psn);
			assert_int_equal(spec.dest_qp, c->qp);
			assert_int_equal(spec.rkey, c->rkey);
			/* Every packet fits the MTU the payload rule came from. */
			assert_true(droce_frame_len(&spec) <=
				    c->payload_per_packet + DROCE_HSB_OVERHEAD + 4);
			if (i + 1 < n) {
				assert_int_equal(spec.opcode, DROCE_OP_UC | DROCE_OP_WRITE_ONLY);
				assert_int_equal(spec.va, page_va + off);
				assert_int_equal(spec.dma_len, len);
				assert_int_equal(spec.payload_len, len);
				assert_memory_equal(spec.payload, frame + off, len);
				continue;
			}
			/* The frame's last packet ends it and carries the block. */
			p = spec.payload;
			assert_int_equal(spec.opcode, DROCE_OP_UC | DROCE_OP_WRITE_ONLY_IMM);
			assert_int_equal(spec.imm, psn << 12 | page);
			assert_int_equal(psn, last_psn);
			if (embeds) {
				assert_int_equal(spec.va, page_va + off);
				assert_int_equal(spec.dma_len, len + pad + DROCE_HSB_METADATA_SIZE);
				assert_int_equal(spec.payload_len, spec.dma_len);
				assert_memory_equal(p, frame + off, len);
				assert_memory_equal(p + len, zeros, pad);
				block_at = len + pad;
				/* The block lands at the metadata offset. */
				assert_int_equal(spec.va + block_at, page_va + c->metadata_offset);
			} else {
				assert_int_equal(spec.va, page_va + c->metadata_offset);
				assert_int_equal(spec.dma_len, DROCE_HSB_METADATA_SIZE);
				assert_int_equal(spec.payload_len, DROCE_HSB_METADATA_SIZE);
				block_at = 0;
			}
			droce_hsb_metadata_decode(p + block_at, &back);
			assert_int_equal(back.psn, psn);
			assert_int_equal(back.bytes_written, c->frame_size);
			assert_int_equal(back.crc, 0x1234);
			assert_int_equal(back.frame_number, f);
			assert_memory_equal(p + block_at + DROCE_HSB_METADATA_USED, zeros,
					    DROCE_HSB_METADATA_SIZE - DROCE_HSB_METADATA_USED);
		}
		assert_false(droce_hsb_frame_next(&s, &spec));
		assert_int_equal(s.page, (page + 1) % c->pages);
	}
}

static const struct droce_hsb_sender_conf base_conf = {
	.src_ip = RTE_BE32(0xc6120002), .dst_ip = RTE_BE32(0xc6120001),
	.qp = 0x123, .rkey = 0xabcd, .page_base = 0x100000,
	.frame_size = 3000, .page_size = 3200, .metadata_offset = 3072,
	.pages = 2, .payload_per_packet = 1408, .imm = DROCE_HSB_IMM_CURRENT,
};

/* 184 bytes left for the last packet, 72 zeros to the block: 1020 bytes
 * spare, so the block rides with them (the zero value of the conf is the
 * device's default, embedded). Across the 20-bit PSN wrap.
 */
static void
test_embedded(void **state)
{
	struct droce_hsb_sender_conf c = base_conf;

	(void)state;
	c.first_psn = 0xffffe;
	check_frames(&c, true, 3);
	assert_int_equal(droce_hsb_packets_per_frame(&c), 3);
	c.metadata = DROCE_HSB_METADATA_SEPARATE;
	check_frames(&c, false, 3);
	assert_int_equal(droce_hsb_packets_per_frame(&c), 4);
	/* The MTU 1500 payload and the most a packet takes. */
	c = base_conf;
	c.frame_size = 5000;
	c.metadata_offset = 5120;
	c.page_size = 5248;
	c.payload_per_packet = DROCE_HSB_MAX_PAYLOAD;
	check_frames(&c, true, 2);
}

/* The device embeds when 128 bytes or more stay spare: payload 1408 less
 * 1100 data, 48 zeros, 128 block and 4 immediate is 128 (embeds); one more
 * zero (or one more data byte) leaves 127 (separate). Only an offset that
 * is not a multiple of 128 can land there.
 */
static void
test_embedded_spare_boundary(void **state)
{
	struct droce_hsb_sender_conf c = base_conf;

	(void)state;
	c.frame_size = 1408 + 1100;
	c.metadata_offset = c.frame_size + 48;
	c.page_size = 2816;
	check_frames(&c, true, 2);
	c.metadata_offset++;
	check_frames(&c, false, 2);
	c.frame_size++;         /* 1101 data, 48 zeros */
	check_frames(&c, false, 2);
	c.metadata_offset--;    /* 1101 data, 47 zeros: 128 again */
	check_frames(&c, true, 2);
	/* With the usual offset (rounded up to 128) the spare steps by 128:
	 * 1408 - 1152 - 132 = 124 goes alone.
	 */
	c.frame_size = 1408 + 1100;
	c.metadata_offset = RTE_ALIGN_CEIL(c.frame_size, 128);
	check_frames(&c, false, 2);
	c.frame_size = 1408 + 1024;
	c.metadata_offset = RTE_ALIGN_CEIL(c.frame_size, 128);
	check_frames(&c, true, 2);
}

/* The device pads with at most 128 zeros: a block 200 bytes past the data
 * goes alone although the packet has room; 128 bytes past it, embedded.
 */
static void
test_embedded_pad_limit(void **state)
{
	struct droce_hsb_sender_conf c = base_conf;

	(void)state;
	c.metadata_offset = 3000 + 200;
	c.page_size = 3328;
	check_frames(&c, false, 2);
	c.metadata_offset = 3000 + 129;
	check_frames(&c, false, 2);
	c.metadata_offset = 3000 + 128;
	check_frames(&c, true, 2);
	c.metadata_offset = 3000;
	check_frames(&c, true, 2);
}

/* A frame of whole packets has no room in its last: the block follows. */
static void
test_embedded_full_packets(void **state)
{
	struct droce_hsb_sender_conf c = base_conf;

	(void)state;
	c.frame_size = c.metadata_offset = 2 * 1408;
	c.page_size = 2 * 1408 + 128;
	check_frames(&c, false, 2);
	assert_int_equal(droce_hsb_packets_per_frame(&c), 3);
	/* One packet's worth exactly, the smallest payload. */
	c.payload_per_packet = 128;
	c.frame_size = c.metadata_offset = 128;
	c.page_size = 256;
	check_frames(&c, false, 2);
	/* The smallest payload never has room: 128 - rem - 132 < 128. */
	c.frame_size = 100;
	check_frames(&c, false, 2);
}

/* The device's order: the first frame in page 1, then 2, ... and round to
 * page 0 after the last.
 */
static void
test_first_page(void **state)
{
	struct droce_hsb_sender_conf c = base_conf;

	(void)state;
	c.pages = 3;
	c.first_page = 1;
	check_frames(&c, true, 5);
	c.first_page = 2;
	c.metadata = DROCE_HSB_METADATA_SEPARATE;
	check_frames(&c, false, 4);
	c.pages = 1;
	c.first_page = 0;
	c.metadata = DROCE_HSB_METADATA_EMBEDDED;
	check_frames(&c, true, 2);
}

static void
test_sender_init_errors(void **state)
{
	struct droce_hsb_sender_conf c = base_conf;
	struct droce_hsb_sender s;
	char err[256];

	(void)state;
	c.payload_per_packet = DROCE_HSB_MAX_PAYLOAD + 128;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "payload per packet 9600; allowed: a positive multiple of 128, at most 9472"));
	c.payload_per_packet = 0;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "payload per packet 0"));
	c.payload_per_packet = 1408;
	c.first_page = 2;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "first page 2; allowed: 0..1 (2 pages)"));
	c.first_page = 1;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), 0);
	assert_int_equal(s.page, 1);
	c.metadata = (enum droce_hsb_metadata_layout)2;
	assert_int_equal(droce_hsb_sender_init(&s, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "metadata layout 2; allowed: embedded (0), separate (1)"));
}

static void
test_layout_names(void **state)
{
	enum droce_hsb_metadata_layout l = DROCE_HSB_METADATA_EMBEDDED;

	(void)state;
	assert_int_equal(droce_hsb_metadata_layout_parse("separate", &l), 0);
	assert_int_equal(l, DROCE_HSB_METADATA_SEPARATE);
	assert_int_equal(droce_hsb_metadata_layout_parse("embedded", &l), 0);
	assert_int_equal(l, DROCE_HSB_METADATA_EMBEDDED);
	assert_int_equal(droce_hsb_metadata_layout_parse("embed", &l), -EINVAL);
	assert_string_equal(droce_hsb_metadata_layout_name(DROCE_HSB_METADATA_SEPARATE),
			    "separate");
	assert_string_equal(droce_hsb_metadata_layout_name(DROCE_HSB_METADATA_EMBEDDED),
			    "embedded");
	assert_null(droce_hsb_metadata_layout_name((enum droce_hsb_metadata_layout)2));
}

static void
test_pattern(void **state)
{
	uint8_t f[11];
	static const uint8_t frame1[11] = {
		0xb1, 0x79, 0x37, 0x9e,  0xb2, 0x79, 0x37, 0x9e,  0xb3, 0x79, 0x37,
	};

	(void)state;
	droce_hsb_pattern_fill(f, sizeof(f), 1);
	assert_memory_equal(f, frame1, sizeof(f));
	assert_int_equal(droce_hsb_pattern_check(f, sizeof(f), 1), -1);
	assert_int_equal(droce_hsb_pattern_check(f, sizeof(f), 2), 0);
	f[10] ^= 1;
	assert_int_equal(droce_hsb_pattern_check(f, sizeof(f), 1), 10);
	droce_hsb_pattern_fill(f, 8, 0);
	assert_int_equal(f[4], 1);
}

/* The check compares blocks of words: a changed byte anywhere, in any
 * block, at any length, is found at its own offset.
 */
static void
test_pattern_any_position(void **state)
{
	enum { LEN = 4 * 256 * 3 + 7 };
	static uint8_t f[LEN];

	(void)state;
	for (size_t len = LEN - 8; len <= LEN; len++) {
		droce_hsb_pattern_fill(f, len, 42);
		assert_int_equal(droce_hsb_pattern_check(f, len, 42), -1);
		for (size_t at = 0; at < len; at += (at % 997 == 0) ? 1 : 13) {
			f[at] ^= 0x80;
			assert_int_equal(droce_hsb_pattern_check(f, len, 42), (ssize_t)at);
			f[at] ^= 0x80;
		}
		f[len - 1] ^= 1;
		assert_int_equal(droce_hsb_pattern_check(f, len, 42), (ssize_t)len - 1);
		f[len - 1] ^= 1;
		f[1030] ^= 4;   /* the first of two differences counts */
		f[2000] ^= 4;
		assert_int_equal(droce_hsb_pattern_check(f, len, 42), 1030);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metadata_bytes),
		cmocka_unit_test(test_immediates),
		cmocka_unit_test(test_payload_rule_and_layout),
		cmocka_unit_test(test_sender_packets),
		cmocka_unit_test(test_embedded),
		cmocka_unit_test(test_embedded_spare_boundary),
		cmocka_unit_test(test_embedded_pad_limit),
		cmocka_unit_test(test_embedded_full_packets),
		cmocka_unit_test(test_first_page),
		cmocka_unit_test(test_sender_init_errors),
		cmocka_unit_test(test_layout_names),
		cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_pattern_any_position),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
