/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * libFuzzer target: any bytes as a MAD from QP1. Decode; a message that
 * decodes must encode, decode and encode again to the same bytes, and its
 * rdma_cm header (for a REQ) must decode; AddressSanitizer and UBSan watch.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t once[CM_MAD_SIZE], twice[CM_MAD_SIZE];
	struct cm_msg msg, again;

	if (cm_mad_decode(data, size, &msg) != CM_DECODE_OK)
		return 0;
	if (msg.hdr.attr_id == CM_ATTR_REQ) {
		struct cm_rdma_hdr h;
		uint32_t ip;

		cm_rdma_hdr_decode(msg.req.private_data, &h);
		(void)cm_rdma_addr_to_ipv4(h.dst_addr, &ip);
	}
	cm_mad_encode(&msg, once);
	if (cm_mad_decode(once, sizeof(once), &again) != CM_DECODE_OK)
		abort();
	cm_mad_encode(&again, twice);
	if (memcmp(once, twice, sizeof(once)) != 0)
		abort();
	return 0;
}
