/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RPC_FRAME_H
#define DROCE_RPC_FRAME_H

/*
 * The RPC sessions' frames, the same on both transports: over RDMA each
 * frame is one RC SEND; over TCP frames follow one another on the stream.
 * A 32-byte header, big-endian, then the payload:
 *
 *    0  magic "DRPC" (0x44525043)
 *    4  version (1)
 *    5  kind (enum rpc_kind)
 *    6  flags (RPC_FLAG_*)
 *    8  service id: a REQUEST's 0..999, echoed in its RESPONSE; a sealed
 *       one-sided frame's piece, 0..15
 *   10  status: a RESPONSE's or WELCOME's (an OckRpcStatus), else 0
 *   12  reserved, 0
 *   16  sequence: a call's number, echoed in its RESPONSE
 *   24  payload length
 *   28  rendezvous descriptors in the payload (0, or 1..4 with RPC_FLAG_RNDV)
 *   29  reserved, 0 (3 bytes)
 *
 * A HELLO's payload is the server's name and the client's info, each
 * ended by a NUL, and the client's segment size (4 bytes); an accepting
 * WELCOME's is the server's segment size, a refusing one's a text. Each
 * side sends the other nothing longer than the other's size.
 *
 * A rendezvous frame's payload is its descriptors (struct rpc_rndv, 16
 * bytes each: address, length, rkey): the receiver allocates their total
 * and RDMA-READs them, so what the frame carries stays small. On a TLS
 * session the buffers are sealed (RPC_FLAG_SEALED): AES-256-GCM
 * ciphertext, each descriptor 44 bytes with its nonce (12) and tag (16).
 *
 * One-sided READs and WRITEs on a TLS session move ciphertext too, one
 * piece of an SGL at a time, each piece told in a 56-byte payload
 * (struct rpc_sealed_piece): the target's address, length and rkey, the
 * initiator's address and rkey, the nonce and the tag. A SEALED_WRITE
 * follows the initiator's WRITE of sealed bytes: the target unseals them
 * in place. A SEALED_READ asks the target to seal its bytes and WRITE
 * them to the initiator, which unseals them in place. The target answers
 * each with a SEALED_DONE (status, and a READ's nonce and tag).
 *
 * Decoding checks every field against what the kind allows and every
 * length against what arrived, and says which check failed.
 */

#include <stddef.h>
#include <stdint.h>

#define RPC_FRAME_MAGIC 0x44525043u
#define RPC_FRAME_VERSION 1
#define RPC_FRAME_HDR_SIZE 32
#define RPC_SERVICE_MAX 999             /* users' service ids are 0..999 */
#define RPC_RNDV_MAX 4                  /* buffers in one rendezvous message */
#define RPC_RNDV_DESC_SIZE 16
#define RPC_RNDV_SEALED_DESC_SIZE 44
#define RPC_SEAL_NONCE 12
#define RPC_SEAL_TAG 16
#define RPC_SGL_MAX 16                  /* pieces of one one-sided operation */
#define RPC_SEALED_PIECE_SIZE 56

enum rpc_kind {
	RPC_HELLO = 1,          /* client -> server: the session's opening (name, info) */
	RPC_WELCOME,            /* server -> client: taken (status 0) or refused */
	RPC_REQUEST,            /* a call */
	RPC_RESPONSE,           /* its answer */
	RPC_HEARTBEAT,          /* are you there? */
	RPC_HEARTBEAT_ACK,
	RPC_BYE,                /* the session ends */
	RPC_SEALED_WRITE,       /* initiator -> target: unseal what I wrote there */
	RPC_SEALED_READ,        /* initiator -> target: seal that and write it to me */
	RPC_SEALED_DONE,        /* target -> initiator: a piece's end */
	RPC_KIND_END,
};

#define RPC_FLAG_WANT_RESPONSE 0x0001u  /* REQUEST: the caller waits for a RESPONSE */
#define RPC_FLAG_RNDV 0x0002u           /* REQUEST, RESPONSE: the payload is descriptors */
#define RPC_FLAG_SEALED 0x0004u         /* REQUEST with RNDV: the buffers are ciphertext */
#define RPC_FLAGS_KNOWN (RPC_FLAG_WANT_RESPONSE | RPC_FLAG_RNDV | RPC_FLAG_SEALED)

struct rpc_frame {
	enum rpc_kind kind;
	uint16_t flags;
	uint16_t service;
	int16_t status;
	uint64_t seq;
	uint32_t payload_len;
	uint8_t rndv_count;
};

/* One buffer of a rendezvous message, where its sender registered it;
 * sealed, its nonce and tag.
 */
struct rpc_rndv {
	uint64_t addr;
	uint32_t len;
	uint32_t rkey;
	uint8_t nonce[RPC_SEAL_NONCE];
	uint8_t tag[RPC_SEAL_TAG];
};

/* A sealed one-sided frame's piece: the target's bytes, the
 * initiator's, and the seal's nonce and tag.
 */
struct rpc_sealed_piece {
	uint64_t addr;
	uint32_t len;
	uint32_t rkey;
	uint64_t back_addr;
	uint32_t back_rkey;
	uint8_t nonce[RPC_SEAL_NONCE];
	uint8_t tag[RPC_SEAL_TAG];
};

/* The bytes of a rendezvous frame's descriptors. */
static inline uint32_t
rpc_rndv_desc_size(uint16_t flags)
{
	return flags & RPC_FLAG_SEALED ? RPC_RNDV_SEALED_DESC_SIZE : RPC_RNDV_DESC_SIZE;
}

/* What decoding found: the frame, more bytes wanted, or what is wrong. */
enum rpc_frame_result {
	RPC_FRAME_OK = 0,
	RPC_FRAME_SHORT = 1,            /* *frame_len bytes are needed */
	RPC_FRAME_BAD_MAGIC = -1,
	RPC_FRAME_BAD_VERSION = -2,
	RPC_FRAME_BAD_KIND = -3,
	RPC_FRAME_BAD_FLAGS = -4,       /* unknown, or not for this kind */
	RPC_FRAME_BAD_SERVICE = -5,     /* over 999, or set where the kind has none */
	RPC_FRAME_BAD_STATUS = -6,      /* set where the kind has none */
	RPC_FRAME_BAD_RESERVED = -7,
	RPC_FRAME_TOO_LONG = -8,        /* payload over the session's limit */
	RPC_FRAME_BAD_LENGTH = -9,      /* payload where the kind has none */
	RPC_FRAME_BAD_RNDV = -10,       /* descriptor count or lengths */
	RPC_FRAME_BAD_PIECE = -11,      /* a sealed one-sided piece: index or size */
};

/**
 * Decode the frame at the start of @p buf (@p len bytes arrived).
 *
 * @return
 *   RPC_FRAME_OK with @p f and @p frame_len (header and payload) set;
 *   RPC_FRAME_SHORT with @p frame_len the bytes needed (a message
 *   transport treats it as an error); or an error, nothing set.
 */
int rpc_frame_decode(const uint8_t *buf, size_t len, uint32_t max_payload, struct rpc_frame *f,
		     size_t *frame_len);

/* The header of @p f (checked by the caller) into @p out. */
void rpc_frame_encode(const struct rpc_frame *f, uint8_t out[RPC_FRAME_HDR_SIZE]);

/**
 * A rendezvous frame's descriptors from its @p payload (f->payload_len
 * bytes, decoded before): each buffer 1 byte or more, their total at most
 * @p max_total.
 *
 * @return
 *   The total, or 0 with the descriptors refused (RPC_FRAME_BAD_RNDV).
 */
uint64_t rpc_rndv_decode(const struct rpc_frame *f, const uint8_t *payload, uint64_t max_total,
			 struct rpc_rndv desc[RPC_RNDV_MAX]);

/* @p n descriptors into @p out (n * rpc_rndv_desc_size(@p flags) bytes). */
void rpc_rndv_encode(const struct rpc_rndv *desc, unsigned int n, uint16_t flags, uint8_t *out);

/* A sealed one-sided frame's payload (RPC_SEALED_PIECE_SIZE bytes,
 * checked by rpc_frame_decode()) to and from @p p.
 */
void rpc_sealed_piece_decode(const uint8_t *payload, struct rpc_sealed_piece *p);
void rpc_sealed_piece_encode(const struct rpc_sealed_piece *p, uint8_t *payload);

/* A 4-byte big-endian number of a payload (the opening's segment sizes). */
static inline uint32_t
rpc_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void
rpc_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* What a result means, for logs ("bad magic"). */
const char *rpc_frame_result_str(int result);

#endif /* DROCE_RPC_FRAME_H */
