/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* Parsing (droce_roce_parse(), inline in droce_roce.h) is a bounds-checked
 * lookup in the opcode table; here, the names of its results.
 */

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
