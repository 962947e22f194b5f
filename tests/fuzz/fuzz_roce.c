/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * libFuzzer target: an IPv4 or IPv6 packet from its IP header on, as a
 * port would hand it over. Parse the RoCEv2 part, touch every byte the
 * parse says is there, and run the ICRC checks (plain and copying) on
 * any bytes at all. AddressSanitizer and UBSan watch the reads.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "droce_roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint32_t sink;

static void
touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc += b[i];
	sink = acc;
}

static void
parse_roce(const uint8_t *bth, uint32_t len)
{
	struct droce_pkt pkt;

	if (droce_roce_parse(bth, len, &pkt) != DROCE_PARSE_OK)
		return;
	/* What the parse promises must add up and lie inside the input. */
	if ((uint32_t)pkt.hdr_len + pkt.payload_len + pkt.pad + DROCE_ICRC_LEN != len)
		__builtin_trap();
	touch(pkt.bth, pkt.hdr_len);
	touch(pkt.payload, pkt.payload_len);
	touch(pkt.icrc, DROCE_ICRC_LEN);
	for (int e = 0; e < DROCE_EXT_MAX; e++)
		if (droce_pkt_ext(&pkt, e) != NULL &&
		    (const uint8_t *)droce_pkt_ext(&pkt, e) >= pkt.payload)
			__builtin_trap();
	sink = droce_bth_psn(pkt.bth) + droce_bth_dqpn(pkt.bth) + pkt.opcode;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t dst[65536];
	uint32_t len = (uint32_t)(size > 65535 ? 65535 : size);
	uint32_t l4;

	if (len == 0)
		return 0;
	l4 = (data[0] >> 4) == 6 ? 40 : (data[0] & 0x0f) * 4u;
	if (l4 + 8 <= len)
		parse_roce(data + l4 + 8, len - l4 - 8);

	sink = droce_icrc_ok(data, len);
	if (len >= 4) {
		/* A payload window from the input's own bytes, in range or not. */
		uint32_t off = (uint32_t)(data[len - 1] | data[len - 2] << 8) % (len + 8);
		uint32_t plen = (uint32_t)(data[len - 3] | data[len - 4] << 8) % (len + 8);

		sink = droce_icrc_copy_ok(data, len, off, plen, dst);
	}
	return 0;
}
