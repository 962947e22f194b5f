/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The persistent gather kernel. Block b serves items b, b + G, b + 2G, ...
 * of the comm list ring (G blocks, G divides the ring): its first thread
 * waits for the item to be READY, then every warp takes entries in turn and
 * its lanes copy the entry's bytes from registered host memory (the mbuf
 * payload) to GPU memory; after a system-wide fence the item is DONE, or
 * ERROR if an entry fell outside the buffer. The CPU sets *quit to stop.
 */

#include <stddef.h>
#include <stdint.h>

/* DPDK 22.11's struct rte_gpu_comm_pkt and rte_gpu_comm_list. */
struct comm_pkt {
	uintptr_t addr;
	size_t size;
};

struct comm_list {
	uint16_t dev_id;
	void **mbufs;
	struct comm_pkt *pkt_list;
	uint32_t num_pkts;
	int *status_h;
	int *status_d;
};

static_assert(sizeof(struct comm_pkt) == 16, "rte_gpu_comm_pkt layout");
static_assert(sizeof(struct comm_list) == 48, "rte_gpu_comm_list layout");
static_assert(offsetof(struct comm_list, status_d) == 40, "rte_gpu_comm_list layout");

enum { ST_FREE = 0, ST_READY = 1, ST_DONE = 2, ST_ERROR = 3 };
#define PKTS_MAX 1024

/* One warp copies one entry. 16-byte moves where source and destination
 * share their alignment; where only the destination is word-aligned, each
 * lane builds its word from the two source words it straddles.
 */
__device__ static void
warp_copy(uint8_t *dst, const uint8_t *src, size_t len, unsigned int lane)
{
	size_t i = 0;

	if ((((uintptr_t)dst ^ (uintptr_t)src) & 15) == 0) {
		size_t head = (16 - ((uintptr_t)dst & 15)) & 15;

		if (head > len)
			head = len;
		if (lane < head)
			dst[lane] = src[lane];
		i = head;
		for (size_t k = i + lane * 16; k + 16 <= len; k += 32 * 16)
			*(uint4 *)(dst + k) = *(const uint4 *)(src + k);
		i += (len - i) / 16 * 16;
	} else if (((uintptr_t)dst & 3) == 0) {
		const uint32_t *s = (const uint32_t *)((uintptr_t)src & ~(uintptr_t)3);
		unsigned int shift = ((uintptr_t)src & 3) * 8;
		size_t words = len / 4;

		/* Word w of the output is bytes 4w..4w+3 of src: from aligned
		 * words w and w + 1 of s. The last word may read 3 bytes past
		 * the entry's end, inside its aligned word (same page).
		 */
		for (size_t w = lane; w < words; w += 32)
			((uint32_t *)dst)[w] = __funnelshift_r(s[w], s[w + 1], shift);
		i = words * 4;
	}
	for (size_t k = i + lane; k < len; k += 32)
		dst[k] = src[k];
}

extern "C" __global__ void
droce_gather(struct comm_list *list, uint32_t nb_items, const uint64_t *dst_off,
	     uint8_t *dst, uint64_t dst_size, volatile uint32_t *quit)
{
	__shared__ int ready;
	__shared__ int bad;
	unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	unsigned int warps = blockDim.x >> 5;
	volatile int *status = list[0].status_d;

	for (uint32_t item = blockIdx.x;; item = (item + gridDim.x) % nb_items) {
		if (threadIdx.x == 0) {
			int s;

			while ((s = status[item]) != ST_READY && *quit == 0)
				__nanosleep(200);
			/* Acquire: the host wrote the entries, then READY (with
			 * rte_gpu_wmb() between); nothing of the item may be
			 * read before the status was.
			 */
			__threadfence_system();
			ready = s == ST_READY;
			bad = 0;
		}
		__syncthreads();
		if (!ready)
			return;

		/* The item's entries are read past the cache: the last lap's
		 * may still be there.
		 */
		const volatile struct comm_list *it = &list[item];
		uint32_t n = it->num_pkts;
		const volatile struct comm_pkt *pkts = it->pkt_list;
		const volatile uint64_t *offs = dst_off + (size_t)item * PKTS_MAX;

		for (uint32_t e = warp; e < n; e += warps) {
			uint64_t off = offs[e];
			size_t len = pkts[e].size;

			if (off > dst_size || len > dst_size - off) {
				bad = 1;
				continue;
			}
			warp_copy(dst + off, (const uint8_t *)(uintptr_t)pkts[e].addr, len, lane);
		}
		/* The bytes are visible before the status says so. */
		__threadfence_system();
		__syncthreads();
		if (threadIdx.x == 0) {
			status[item] = bad ? ST_ERROR : ST_DONE;
			__threadfence_system();
		}
		__syncthreads();
	}
}
