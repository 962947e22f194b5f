/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * CM messages to and from MAD bytes: one place per message that names
 * every field with its offset, in both directions.
 */

#include <string.h>

#include "cm_mad.h"

/* ---- fields ------------------------------------------------------------------- */

/* @p bits bits of byte @p off, from bit @p first counted from the MSB. */
static uint8_t
get_bits(const uint8_t *m, size_t off, unsigned int first, unsigned int bits)
{
	return (uint8_t)((m[off] >> (8 - first - bits)) & ((1u << bits) - 1));
}

static void
put_bits(uint8_t *m, size_t off, unsigned int first, unsigned int bits, uint32_t v)
{
	unsigned int shift = 8 - first - bits;
	uint8_t mask = (uint8_t)(((1u << bits) - 1) << shift);

	m[off] = (uint8_t)((m[off] & ~mask) | ((v << shift) & mask));
}

/* Big-endian numbers of @p bytes bytes. */
static uint64_t
get_be(const uint8_t *m, size_t off, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v = v << 8 | m[off + i];
	return v;
}

static void
put_be(uint8_t *m, size_t off, unsigned int bytes, uint64_t v)
{
	for (unsigned int i = bytes; i-- > 0; v >>= 8)
		m[off + i] = (uint8_t)v;
}

/* One codec for both ways: each field is named once, with its place. */
struct codec {
	uint8_t *mad;
	bool encode;
};

static void
be(const struct codec *c, size_t off, unsigned int bytes, void *field, unsigned int width)
{
	uint64_t v = 0;

	if (c->encode) {
		switch (width) {
		case 1: v = *(const uint8_t *)field; break;
		case 2: v = *(const uint16_t *)field; break;
		case 4: v = *(const uint32_t *)field; break;
		default: v = *(const uint64_t *)field; break;
		}
		put_be(c->mad, off, bytes, v);
		return;
	}
	v = get_be(c->mad, off, bytes);
	switch (width) {
	case 1: *(uint8_t *)field = (uint8_t)v; break;
	case 2: *(uint16_t *)field = (uint16_t)v; break;
	case 4: *(uint32_t *)field = (uint32_t)v; break;
	default: *(uint64_t *)field = v; break;
	}
}

#define BE(c, off, bytes, field) be(c, off, bytes, &(field), sizeof(field))

static void
bits8(const struct codec *c, size_t off, unsigned int first, unsigned int n, uint8_t *field)
{
	if (c->encode)
		put_bits(c->mad, off, first, n, *field);
	else
		*field = get_bits(c->mad, off, first, n);
}

static void
flag(const struct codec *c, size_t off, unsigned int first, bool *field)
{
	uint8_t v = *field;

	bits8(c, off, first, 1, &v);
	*field = v != 0;
}

static void
bytes(const struct codec *c, size_t off, size_t len, uint8_t *field)
{
	if (c->encode)
		memcpy(c->mad + off, field, len);
	else
		memcpy(field, c->mad + off, len);
}

#define BYTES(c, off, field) bytes(c, off, sizeof(field), field)

/* ---- the messages --------------------------------------------------------------- */

static void
code_hdr(const struct codec *c, struct cm_mad_hdr *h)
{
	BE(c, 0, 1, h->base_version);
	BE(c, 1, 1, h->mgmt_class);
	BE(c, 2, 1, h->class_version);
	BE(c, 3, 1, h->method);
	BE(c, 4, 2, h->status);
	BE(c, 6, 2, h->class_specific);
	BE(c, 8, 8, h->tid);
	BE(c, 16, 2, h->attr_id);
	BE(c, 20, 4, h->attr_mod);
}

/* A REQ's path, 44 bytes from @p at. */
static void
code_path(const struct codec *c, size_t at, struct cm_path *p)
{
	uint32_t word;

	BE(c, at, 2, p->local_lid);
	BE(c, at + 2, 2, p->remote_lid);
	BYTES(c, at + 4, p->local_gid);
	BYTES(c, at + 20, p->remote_gid);
	/* Flow label: the top 20 bits of a word whose low 6 are the rate. */
	word = (p->flow_label & 0xfffff) << 12 | (p->packet_rate & 0x3f);
	BE(c, at + 36, 4, word);
	p->flow_label = word >> 12;
	p->packet_rate = word & 0x3f;
	BE(c, at + 40, 1, p->traffic_class);
	BE(c, at + 41, 1, p->hop_limit);
	bits8(c, at + 42, 0, 4, &p->sl);
	flag(c, at + 42, 4, &p->subnet_local);
	bits8(c, at + 43, 0, 5, &p->local_ack_timeout);
}

static void
code_req(const struct codec *c, struct cm_req *r)
{
	BE(c, 24, 4, r->local_comm_id);
	BE(c, 29, 3, r->vendor_id);
	BE(c, 32, 8, r->service_id);
	BE(c, 40, 8, r->local_ca_guid);
	BE(c, 52, 4, r->local_qkey);
	BE(c, 56, 3, r->local_qpn);
	BE(c, 59, 1, r->responder_resources);
	BE(c, 60, 3, r->local_eecn);
	BE(c, 63, 1, r->initiator_depth);
	BE(c, 64, 3, r->remote_eecn);
	bits8(c, 67, 0, 5, &r->remote_cm_response_timeout);
	bits8(c, 67, 5, 2, &r->transport);
	flag(c, 67, 7, &r->end_to_end_flow_control);
	BE(c, 68, 3, r->starting_psn);
	bits8(c, 71, 0, 5, &r->local_cm_response_timeout);
	bits8(c, 71, 5, 3, &r->retry_count);
	BE(c, 72, 2, r->pkey);
	bits8(c, 74, 0, 4, &r->path_mtu);
	flag(c, 74, 4, &r->rdc_exists);
	bits8(c, 74, 5, 3, &r->rnr_retry_count);
	bits8(c, 75, 0, 4, &r->max_cm_retries);
	flag(c, 75, 4, &r->srq);
	bits8(c, 75, 5, 3, &r->extended_transport);
	code_path(c, 76, &r->primary);
	code_path(c, 120, &r->alternate);
	BYTES(c, 164, r->private_data);
}

static void
code_mra(const struct codec *c, struct cm_mra *r)
{
	BE(c, 24, 4, r->local_comm_id);
	BE(c, 28, 4, r->remote_comm_id);
	bits8(c, 32, 0, 2, &r->msg_mraed);
	bits8(c, 33, 0, 5, &r->service_timeout);
	BYTES(c, 34, r->private_data);
}

static void
code_rej(const struct codec *c, struct cm_rej *r)
{
	BE(c, 24, 4, r->local_comm_id);
	BE(c, 28, 4, r->remote_comm_id);
	bits8(c, 32, 0, 2, &r->msg_rejected);
	bits8(c, 33, 0, 7, &r->ari_length);
	BE(c, 34, 2, r->reason);
	BYTES(c, 36, r->ari);
	BYTES(c, 108, r->private_data);
}

static void
code_rep(const struct codec *c, struct cm_rep *r)
{
	BE(c, 24, 4, r->local_comm_id);
	BE(c, 28, 4, r->remote_comm_id);
	BE(c, 32, 4, r->local_qkey);
	BE(c, 36, 3, r->local_qpn);
	BE(c, 40, 3, r->local_eecn);
	BE(c, 44, 3, r->starting_psn);
	BE(c, 48, 1, r->responder_resources);
	BE(c, 49, 1, r->initiator_depth);
	bits8(c, 50, 0, 5, &r->target_ack_delay);
	bits8(c, 50, 5, 2, &r->failover_accepted);
	flag(c, 50, 7, &r->end_to_end_flow_control);
	bits8(c, 51, 0, 3, &r->rnr_retry_count);
	flag(c, 51, 3, &r->srq);
	BE(c, 52, 8, r->local_ca_guid);
	BYTES(c, 60, r->private_data);
}

static void
code_rtu(const struct codec *c, struct cm_rtu *r)
{
	BE(c, 24, 4, r->local_comm_id);
	BE(c, 28, 4, r->remote_comm_id);
	BYTES(c, 32, r->private_data);
}

static void
code_dreq(const struct codec *c, struct cm_dreq *r)
{
	BE(c, 24, 4, r->local_comm_id);
	BE(c, 28, 4, r->remote_comm_id);
	BE(c, 32, 3, r->remote_qpn);
	BYTES(c, 36, r->private_data);
}

static void
code_drep(const struct codec *c, struct cm_drep *r)
{
	BE(c, 24, 4, r->local_comm_id);
	BE(c, 28, 4, r->remote_comm_id);
	BYTES(c, 32, r->private_data);
}

static void
code_body(const struct codec *c, struct cm_msg *msg)
{
	switch (msg->hdr.attr_id) {
	case CM_ATTR_REQ:
		code_req(c, &msg->req);
		break;
	case CM_ATTR_MRA:
		code_mra(c, &msg->mra);
		break;
	case CM_ATTR_REJ:
		code_rej(c, &msg->rej);
		break;
	case CM_ATTR_REP:
		code_rep(c, &msg->rep);
		break;
	case CM_ATTR_RTU:
		code_rtu(c, &msg->rtu);
		break;
	case CM_ATTR_DREQ:
		code_dreq(c, &msg->dreq);
		break;
	case CM_ATTR_DREP:
		code_drep(c, &msg->drep);
		break;
	}
}

static bool
is_connection_msg(uint16_t attr_id)
{
	return attr_id >= CM_ATTR_REQ && attr_id <= CM_ATTR_DREP;
}

enum cm_decode_error
cm_mad_decode(const uint8_t *mad, size_t len, struct cm_msg *msg)
{
	struct codec c = { .mad = (uint8_t *)(uintptr_t)mad, .encode = false };

	if (len < CM_MAD_SIZE)
		return CM_DECODE_SHORT;
	memset(msg, 0, sizeof(*msg));
	code_hdr(&c, &msg->hdr);
	if (msg->hdr.base_version != 1)
		return CM_DECODE_BASE_VERSION;
	if (msg->hdr.mgmt_class != CM_MGMT_CLASS)
		return CM_DECODE_CLASS;
	if (msg->hdr.class_version != CM_CLASS_VERSION)
		return CM_DECODE_CLASS_VERSION;
	if (msg->hdr.method != CM_METHOD_SEND)
		return CM_DECODE_METHOD;
	if (!is_connection_msg(msg->hdr.attr_id))
		return CM_DECODE_ATTR;
	code_body(&c, msg);
	return CM_DECODE_OK;
}

void
cm_mad_encode(const struct cm_msg *msg, uint8_t mad[CM_MAD_SIZE])
{
	struct codec c = { .mad = mad, .encode = true };
	struct cm_msg m = *msg;

	memset(mad, 0, CM_MAD_SIZE);
	m.hdr.base_version = 1;
	m.hdr.mgmt_class = CM_MGMT_CLASS;
	m.hdr.class_version = CM_CLASS_VERSION;
	m.hdr.method = CM_METHOD_SEND;
	code_hdr(&c, &m.hdr);
	code_body(&c, &m);
}

const char *
cm_decode_error_name(enum cm_decode_error e)
{
	static const char *const names[CM_DECODE_MAX] = {
		[CM_DECODE_OK] = "ok",
		[CM_DECODE_SHORT] = "short",
		[CM_DECODE_BASE_VERSION] = "base_version",
		[CM_DECODE_CLASS] = "class",
		[CM_DECODE_CLASS_VERSION] = "class_version",
		[CM_DECODE_METHOD] = "method",
		[CM_DECODE_ATTR] = "attribute",
	};

	return (unsigned int)e < CM_DECODE_MAX ? names[e] : "?";
}

const char *
cm_attr_name(uint16_t attr_id)
{
	static const char *const names[] = { "REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP" };

	return is_connection_msg(attr_id) ? names[attr_id - CM_ATTR_REQ] : "?";
}

/* ---- rdma_cm ------------------------------------------------------------------------ */

void
cm_rdma_hdr_encode(const struct cm_rdma_hdr *h, uint8_t out[CM_RDMA_HDR_SIZE])
{
	out[0] = h->version;
	out[1] = (uint8_t)(h->ip_version << 4);
	put_be(out, 2, 2, h->src_port);
	memcpy(out + 4, h->src_addr, 16);
	memcpy(out + 20, h->dst_addr, 16);
}

void
cm_rdma_hdr_decode(const uint8_t in[CM_RDMA_HDR_SIZE], struct cm_rdma_hdr *h)
{
	h->version = in[0];
	h->ip_version = in[1] >> 4;
	h->src_port = (uint16_t)get_be(in, 2, 2);
	memcpy(h->src_addr, in + 4, 16);
	memcpy(h->dst_addr, in + 20, 16);
}

void
cm_rdma_addr_from_ipv4(uint32_t ip, uint8_t addr[16])
{
	memset(addr, 0, 12);
	memcpy(addr + 12, &ip, 4);
}

bool
cm_rdma_addr_to_ipv4(const uint8_t addr[16], uint32_t *ip)
{
	static const uint8_t zero[12];

	if (memcmp(addr, zero, sizeof(zero)) != 0)
		return false;
	memcpy(ip, addr + 12, 4);
	return true;
}
