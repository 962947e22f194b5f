/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* Parsing is a bounds-checked lookup in the opcode table. */

#include "droce_roce.h"

static const char *const result_names[DROCE_PARSE_MAX] = {
	[DROCE_PARSE_OK] = "ok",
	[DROCE_PARSE_TRUNCATED] = "truncated",
	[DROCE_PARSE_BAD_TVER] = "bad_tver",
	[DROCE_PARSE_UNKNOWN_OPCODE] = "unknown_opcode",
	[DROCE_PARSE_HDR_TOO_LONG] = "hdr_too_long",
	[DROCE_PARSE_BAD_PAD] = "bad_pad",
	[DROCE_PARSE_UNEXPECTED_PAYLOAD] = "unexpected_payload",
};

const char *
droce_parse_result_name(enum droce_parse_result r)
{
	return (unsigned int)r < DROCE_PARSE_MAX ? result_names[r] : NULL;
}

enum droce_parse_result
droce_roce_parse(const void *bth_bytes, uint32_t len, struct droce_pkt *pkt)
{
	const struct droce_bth *bth = bth_bytes;
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
