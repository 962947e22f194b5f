/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * RPC frames to and from bytes (the layout is in rpc_frame.h), with what
 * each kind of frame may carry.
 */

#include <stdbool.h>
#include <string.h>

#include "rpc_frame.h"

/* What a kind of frame may carry besides its header. */
struct kind_rule {
	uint16_t flags;                 /* flags allowed */
	bool service, status, payload;
	bool piece;                     /* a sealed one-sided piece's frame */
};

static const struct kind_rule kind_rules[RPC_KIND_END] = {
	[RPC_HELLO] = { .payload = true },
	[RPC_WELCOME] = { .status = true, .payload = true },
	[RPC_REQUEST] = { .flags = RPC_FLAG_WANT_RESPONSE | RPC_FLAG_RNDV | RPC_FLAG_SEALED,
			  .service = true, .payload = true },
	[RPC_RESPONSE] = { .flags = RPC_FLAG_RNDV, .service = true, .status = true,
			   .payload = true },
	[RPC_HEARTBEAT] = { 0 },
	[RPC_HEARTBEAT_ACK] = { 0 },
	[RPC_BYE] = { 0 },
	[RPC_SEALED_WRITE] = { .service = true, .payload = true, .piece = true },
	[RPC_SEALED_READ] = { .service = true, .payload = true, .piece = true },
	[RPC_SEALED_DONE] = { .service = true, .status = true, .payload = true, .piece = true },
};

static uint64_t
get_be(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

static void
put_be(uint8_t *p, unsigned int bytes, uint64_t v)
{
	for (unsigned int i = bytes; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

/* The rules of the header's kind; the fields are the header's. */
static int
check_header(const uint8_t *h, const struct rpc_frame *f)
{
	static const uint8_t zero[3];
	const struct kind_rule *rule;

	if (get_be(h, 4) != RPC_FRAME_MAGIC)
		return RPC_FRAME_BAD_MAGIC;
	if (h[4] != RPC_FRAME_VERSION)
		return RPC_FRAME_BAD_VERSION;
	if (h[5] == 0 || h[5] >= RPC_KIND_END)
		return RPC_FRAME_BAD_KIND;
	if (get_be(h + 12, 4) != 0 || memcmp(h + 29, zero, sizeof(zero)) != 0)
		return RPC_FRAME_BAD_RESERVED;
	rule = &kind_rules[f->kind];
	if ((f->flags & ~rule->flags) != 0)
		return RPC_FRAME_BAD_FLAGS;
	if (f->service > RPC_SERVICE_MAX || (!rule->service && f->service != 0))
		return RPC_FRAME_BAD_SERVICE;
	if (!rule->status && f->status != 0)
		return RPC_FRAME_BAD_STATUS;
	if (!rule->payload && f->payload_len != 0)
		return RPC_FRAME_BAD_LENGTH;
	/* A piece's index and its fixed payload. */
	if (rule->piece && (f->service >= RPC_SGL_MAX || f->payload_len != RPC_SEALED_PIECE_SIZE))
		return RPC_FRAME_BAD_PIECE;
	/* Sealed buffers are rendezvous buffers. */
	if ((f->flags & RPC_FLAG_SEALED) && !(f->flags & RPC_FLAG_RNDV))
		return RPC_FRAME_BAD_FLAGS;
	/* Descriptors exactly when the flag says so, and all of the payload. */
	if ((f->flags & RPC_FLAG_RNDV) == 0 ? f->rndv_count != 0
	    : f->rndv_count == 0 || f->rndv_count > RPC_RNDV_MAX ||
	      f->payload_len != (uint32_t)f->rndv_count * rpc_rndv_desc_size(f->flags))
		return RPC_FRAME_BAD_RNDV;
	return RPC_FRAME_OK;
}

int
rpc_frame_decode(const uint8_t *buf, size_t len, uint32_t max_payload, struct rpc_frame *f,
		 size_t *frame_len)
{
	struct rpc_frame d;
	int ret;

	if (len < RPC_FRAME_HDR_SIZE) {
		*frame_len = RPC_FRAME_HDR_SIZE;
		return RPC_FRAME_SHORT;
	}
	d = (struct rpc_frame){
		.kind = (enum rpc_kind)buf[5], .flags = (uint16_t)get_be(buf + 6, 2),
		.service = (uint16_t)get_be(buf + 8, 2), .status = (int16_t)get_be(buf + 10, 2),
		.seq = get_be(buf + 16, 8), .payload_len = (uint32_t)get_be(buf + 24, 4),
		.rndv_count = buf[28],
	};
	ret = check_header(buf, &d);
	if (ret != RPC_FRAME_OK)
		return ret;
	if (d.payload_len > max_payload)
		return RPC_FRAME_TOO_LONG;
	*frame_len = RPC_FRAME_HDR_SIZE + (size_t)d.payload_len;
	if (len < *frame_len)
		return RPC_FRAME_SHORT;
	*f = d;
	return RPC_FRAME_OK;
}

void
rpc_frame_encode(const struct rpc_frame *f, uint8_t out[RPC_FRAME_HDR_SIZE])
{
	memset(out, 0, RPC_FRAME_HDR_SIZE);
	put_be(out, 4, RPC_FRAME_MAGIC);
	out[4] = RPC_FRAME_VERSION;
	out[5] = (uint8_t)f->kind;
	put_be(out + 6, 2, f->flags);
	put_be(out + 8, 2, f->service);
	put_be(out + 10, 2, (uint16_t)f->status);
	put_be(out + 16, 8, f->seq);
	put_be(out + 24, 4, f->payload_len);
	out[28] = f->rndv_count;
}

uint64_t
rpc_rndv_decode(const struct rpc_frame *f, const uint8_t *payload, uint64_t max_total,
		struct rpc_rndv desc[RPC_RNDV_MAX])
{
	uint64_t total = 0;

	uint32_t size = rpc_rndv_desc_size(f->flags);

	if ((f->flags & RPC_FLAG_RNDV) == 0 || f->rndv_count == 0 ||
	    f->rndv_count > RPC_RNDV_MAX || f->payload_len != (uint32_t)f->rndv_count * size)
		return 0;
	for (unsigned int i = 0; i < f->rndv_count; i++) {
		const uint8_t *d = payload + i * size;

		desc[i] = (struct rpc_rndv){ .addr = get_be(d, 8), .len = (uint32_t)get_be(d + 8, 4),
					     .rkey = (uint32_t)get_be(d + 12, 4) };
		if (f->flags & RPC_FLAG_SEALED) {
			memcpy(desc[i].nonce, d + RPC_RNDV_DESC_SIZE, RPC_SEAL_NONCE);
			memcpy(desc[i].tag, d + RPC_RNDV_DESC_SIZE + RPC_SEAL_NONCE, RPC_SEAL_TAG);
		}
		/* Four 32-bit lengths cannot overflow the 64-bit total. */
		total += desc[i].len;
		if (desc[i].len == 0)
			return 0;
	}
	return total <= max_total ? total : 0;
}

void
rpc_rndv_encode(const struct rpc_rndv *desc, unsigned int n, uint16_t flags, uint8_t *out)
{
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *d = out + i * rpc_rndv_desc_size(flags);

		put_be(d, 8, desc[i].addr);
		put_be(d + 8, 4, desc[i].len);
		put_be(d + 12, 4, desc[i].rkey);
		if (flags & RPC_FLAG_SEALED) {
			memcpy(d + RPC_RNDV_DESC_SIZE, desc[i].nonce, RPC_SEAL_NONCE);
			memcpy(d + RPC_RNDV_DESC_SIZE + RPC_SEAL_NONCE, desc[i].tag, RPC_SEAL_TAG);
		}
	}
}

/* Offsets in a sealed piece's payload. */
enum {
	PIECE_ADDR = 0, PIECE_LEN = 8, PIECE_RKEY = 12, PIECE_BACK_ADDR = 16,
	PIECE_BACK_RKEY = 24, PIECE_NONCE = 28, PIECE_TAG = PIECE_NONCE + RPC_SEAL_NONCE,
};

void
rpc_sealed_piece_decode(const uint8_t *payload, struct rpc_sealed_piece *p)
{
	p->addr = get_be(payload + PIECE_ADDR, 8);
	p->len = (uint32_t)get_be(payload + PIECE_LEN, 4);
	p->rkey = (uint32_t)get_be(payload + PIECE_RKEY, 4);
	p->back_addr = get_be(payload + PIECE_BACK_ADDR, 8);
	p->back_rkey = (uint32_t)get_be(payload + PIECE_BACK_RKEY, 4);
	memcpy(p->nonce, payload + PIECE_NONCE, RPC_SEAL_NONCE);
	memcpy(p->tag, payload + PIECE_TAG, RPC_SEAL_TAG);
}

void
rpc_sealed_piece_encode(const struct rpc_sealed_piece *p, uint8_t *payload)
{
	put_be(payload + PIECE_ADDR, 8, p->addr);
	put_be(payload + PIECE_LEN, 4, p->len);
	put_be(payload + PIECE_RKEY, 4, p->rkey);
	put_be(payload + PIECE_BACK_ADDR, 8, p->back_addr);
	put_be(payload + PIECE_BACK_RKEY, 4, p->back_rkey);
	memcpy(payload + PIECE_NONCE, p->nonce, RPC_SEAL_NONCE);
	memcpy(payload + PIECE_TAG, p->tag, RPC_SEAL_TAG);
}

const char *
rpc_frame_result_str(int result)
{
	switch (result) {
	case RPC_FRAME_OK: return "ok";
	case RPC_FRAME_SHORT: return "shorter than its header says";
	case RPC_FRAME_BAD_MAGIC: return "bad magic (not a droce RPC frame)";
	case RPC_FRAME_BAD_VERSION: return "unknown version";
	case RPC_FRAME_BAD_KIND: return "unknown kind";
	case RPC_FRAME_BAD_FLAGS: return "flags unknown or not for its kind";
	case RPC_FRAME_BAD_SERVICE: return "service id over 999 or where its kind has none";
	case RPC_FRAME_BAD_STATUS: return "status where its kind has none";
	case RPC_FRAME_BAD_RESERVED: return "reserved bytes not 0";
	case RPC_FRAME_TOO_LONG: return "payload over the session's limit";
	case RPC_FRAME_BAD_LENGTH: return "payload where its kind has none";
	case RPC_FRAME_BAD_RNDV: return "rendezvous descriptors: count or lengths";
	case RPC_FRAME_BAD_PIECE: return "sealed one-sided piece: index over 15 or payload not 56 bytes";
	default: return "unknown result";
	}
}
