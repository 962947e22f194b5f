/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * libFuzzer target: any bytes as MADs from QP1, and as a sequence of what
 * can happen to a connection. The input's first 256 bytes are decoded as
 * one MAD; a message that decodes must encode, decode and encode again to
 * the same bytes. Then the rest drives one connection: each byte picks a
 * step (a MAD from the input, a timeout, connect, accept, reject,
 * disconnect, destroy, a REQ taken by a listener); every step must leave a state
 * that exists and send only messages that decode. ASan and UBSan watch.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_conn.h"
#include "cm_mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A step's message must be one a peer could read back. */
static void
check_step(const struct cm_conn *c, const struct cm_step *s)
{
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg back;

	if ((unsigned int)c->state >= CM_STATE_MAX)
		abort();
	if (!s->send)
		return;
	cm_mad_encode(&s->msg, mad);
	if (cm_mad_decode(mad, sizeof(mad), &back) != CM_DECODE_OK)
		abort();
}

static void
drive(const uint8_t *data, size_t size)
{
	const struct cm_conn_param p = { .responder_resources = 4, .initiator_depth = 4,
					 .retry_count = 7, .rnr_retry_count = 7 };
	struct cm_req req = { .local_qpn = 0x10001, .starting_psn = 1, .path_mtu = 3 };
	struct cm_conn c = { .state = CM_IDLE };
	struct cm_step s;

	for (size_t i = 0; i < size; i++) {
		uint8_t op = data[i] % 9;
		struct cm_msg m;

		switch (op) {
		case 0: /* the next 256 bytes as a MAD for this connection */
			if (size - i - 1 < CM_MAD_SIZE ||
			    cm_mad_decode(data + i + 1, CM_MAD_SIZE, &m) != CM_DECODE_OK)
				continue;
			i += CM_MAD_SIZE;
			cm_conn_input(&c, &m, &s);
			break;
		case 1:
			cm_conn_timeout(&c, &s);
			break;
		case 2:
			cm_conn_connect(&c, 0x1234, &req, &p, &s);
			break;
		case 3:
			cm_conn_accept(&c, 0x20002, 2, &p, &s);
			break;
		case 4:
			cm_conn_reject(&c, data, (uint32_t)(size - i), &s);
			break;
		case 5:
			cm_conn_disconnect(&c, &s);
			break;
		case 6:
			cm_conn_destroyed(&c, &s);
			break;
		default: /* a listener takes a REQ made from the next bytes */
			memset(&m, 0, sizeof(m));
			m.hdr.attr_id = CM_ATTR_REQ;
			memcpy(&m.req, data + i, size - i < sizeof(m.req) ? size - i : sizeof(m.req));
			cm_conn_req_received(&c, 0x5678, &m, &s);
			break;
		}
		check_step(&c, &s);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t once[CM_MAD_SIZE], twice[CM_MAD_SIZE];
	struct cm_msg msg, again;

	if (cm_mad_decode(data, size, &msg) == CM_DECODE_OK) {
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
	}
	drive(data, size);
	return 0;
}
