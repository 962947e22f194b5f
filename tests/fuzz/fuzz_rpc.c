/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * libFuzzer target: any bytes as a stream of RPC frames, as the TCP
 * transport takes them (and each frame alone, as an RDMA SEND). A frame
 * that decodes must encode to the same header bytes and lie wholly inside
 * the input; a rendezvous frame's descriptors decode within their limits,
 * and a sealed one-sided piece to the same bytes again. ASan and UBSan
 * watch.
 */

#include <stdlib.h>
#include <string.h>

#include "rpc_frame.h"

#define MAX_PAYLOAD 4096u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct rpc_frame f;
		struct rpc_rndv desc[RPC_RNDV_MAX];
		uint8_t again[RPC_FRAME_HDR_SIZE];
		size_t len = 0;
		int ret = rpc_frame_decode(data + off, size - off, MAX_PAYLOAD, &f, &len);

		if (ret != RPC_FRAME_OK)
			break;
		if (len < RPC_FRAME_HDR_SIZE || len > size - off ||
		    len != RPC_FRAME_HDR_SIZE + (size_t)f.payload_len)
			abort();
		rpc_frame_encode(&f, again);
		if (memcmp(again, data + off, RPC_FRAME_HDR_SIZE) != 0)
			abort();
		if ((f.flags & RPC_FLAG_RNDV) != 0) {
			uint64_t total = rpc_rndv_decode(&f, data + off + RPC_FRAME_HDR_SIZE,
							 UINT32_MAX, desc);

			for (unsigned int i = 0; total != 0 && i < f.rndv_count; i++)
				if (desc[i].len == 0)
					abort();
		}
		if (f.kind == RPC_SEALED_WRITE || f.kind == RPC_SEALED_READ ||
		    f.kind == RPC_SEALED_DONE) {
			struct rpc_sealed_piece piece;
			uint8_t piece_again[RPC_SEALED_PIECE_SIZE];

			if (f.payload_len != RPC_SEALED_PIECE_SIZE || f.service >= RPC_SGL_MAX)
				abort();
			rpc_sealed_piece_decode(data + off + RPC_FRAME_HDR_SIZE, &piece);
			rpc_sealed_piece_encode(&piece, piece_again);
			if (memcmp(piece_again, data + off + RPC_FRAME_HDR_SIZE,
				   RPC_SEALED_PIECE_SIZE) != 0)
				abort();
		}
		off += len;
	}
	return 0;
}
