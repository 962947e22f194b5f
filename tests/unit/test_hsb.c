/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/hsb: the metadata block byte by byte (big-endian, the offsets of
 * reference/hsb-wire.md), both immediate formats, the payload rule, the
 * page layout, and the packets a sender makes of a frame.
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
		cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_pattern_any_position),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
