/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * place: the placement engine on the host gpudev driver, copy (streaming
 * and cached stores) and gather (the CPU reference engine on its own
 * thread, standing in for the GPU), against memcpy of the same bytes into
 * the same 64 MiB buffer. Entries of 1408 bytes (the HSB payload at MTU
 * 1500) and 4096 bytes, from 2048 mbufs that stay in the cache (as a NIC
 * writing into L3 leaves them).
 */

#include <stdio.h>
#include <string.h>

#include <rte_gpudev.h>
#include <rte_mbuf.h>

#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "bench.h"

#define BUF_BYTES (64u << 20)
#define NB_MBUFS 2048
#define TOTAL_BYTES (1ull << 30)   /* per side and round */

static const uint32_t entry_sizes[] = { 1408, 4096 };

enum side { SIDE_MEMCPY, SIDE_COPY, SIDE_COPY_CACHED, SIDE_GATHER, SIDE_MAX };
static const char *const side_name[SIDE_MAX] = {
	"memcpy", "copy", "copy (cached stores)", "gather"
};

static double
run_side(enum side side, struct droce_gpu_buf *buf, struct rte_mbuf **mbufs,
	 uint32_t len)
{
	struct droce_placer_conf conf = {
		.buf = buf, .engine_thread = true, .nb_items = 64, .item_entries = 256,
		.mode = side == SIDE_GATHER ? DROCE_PLACE_GATHER : DROCE_PLACE_COPY,
		.stores = side == SIDE_COPY_CACHED ? DROCE_COPY_CACHED : DROCE_COPY_STREAMING,
	};
	uint32_t slots = BUF_BYTES / len;
	uint64_t n = TOTAL_BYTES / len, ticket = 0;
	struct droce_placer *pl = NULL;
	char err[256];
	double t0;

	if (side != SIDE_MEMCPY) {
		pl = droce_placer_create(&conf, err, sizeof(err));
		if (pl == NULL) {
			fprintf(stderr, "droce-bench: %s\n", err);
			return -1;
		}
	}
	t0 = bench_now();
	for (uint64_t i = 0; i < n; i++) {
		struct rte_mbuf *m = mbufs[i % NB_MBUFS];
		uint64_t off = (uint64_t)(i % slots) * len;

		if (side == SIDE_MEMCPY) {
			memcpy((uint8_t *)buf->cpu + off, rte_pktmbuf_mtod(m, void *), len);
			continue;
		}
		/* The placer frees what it places: keep the mbuf for reuse. */
		rte_mbuf_refcnt_update(m, 1);
		while (droce_place(pl, m, 0, off, len) == -ENOBUFS) {
			rte_mbuf_refcnt_update(m, 1); /* refused and freed: again */
			droce_placer_completed(pl);
		}
		if ((i + 1) % 256 == 0)
			ticket = droce_placer_submit(pl);
	}
	if (pl != NULL) {
		ticket = droce_placer_submit(pl);
		while (droce_placer_completed(pl) < ticket)
			;
	}
	t0 = bench_now() - t0;
	droce_placer_destroy(pl);
	return (double)n * len / t0 / 1e9;
}

int
bench_place(const struct bench_opts *o)
{
	struct rte_mbuf *mbufs[NB_MBUFS];
	struct rte_mempool *mp;
	struct droce_gpu_buf buf;
	char err[256];
	int16_t dev;
	int ret = 0;

	if (droce_gpu_find("host", &dev, err, sizeof(err)) != 0) {
		int id = droce_gpu_host_create("droce_host0", NULL);

		if (id < 0)
			return 1;
		dev = (int16_t)id;
	}
	mp = rte_pktmbuf_pool_create("bench_place", NB_MBUFS * 2, 0, 0,
				     RTE_PKTMBUF_HEADROOM + 4096, SOCKET_ID_ANY);
	if (mp == NULL || droce_gpu_buf_alloc(dev, BUF_BYTES, 4096, &buf, err,
					      sizeof(err)) != 0) {
		fprintf(stderr, "droce-bench: place: %s\n", mp == NULL ? "no mempool" : err);
		return 1;
	}
	memset(buf.cpu, 0, BUF_BYTES);
	for (unsigned int i = 0; i < NB_MBUFS; i++) {
		mbufs[i] = rte_pktmbuf_alloc(mp);
		memset(rte_pktmbuf_append(mbufs[i], 4096), (int)i, 4096);
	}
	printf("  host gpudev buffer of %u MiB, %u mbufs, 1 GiB per side and round; gather's engine is a CPU thread\n",
	       BUF_BYTES >> 20, NB_MBUFS);
	for (unsigned int s = 0; s < RTE_DIM(entry_sizes); s++) {
		double v[SIDE_MAX][BENCH_MAX_ROUNDS], med[SIDE_MAX];

		for (unsigned int r = 0; r < o->rounds; r++)
			for (int side = 0; side < SIDE_MAX; side++)
				if ((v[side][r] = run_side(side, &buf, mbufs,
							   entry_sizes[s])) < 0)
					ret = 1;
		for (int side = 0; side < SIDE_MAX; side++)
			med[side] = bench_median(v[side], o->rounds);
		printf("  %4u-byte entries: %s %.2f GB/s", entry_sizes[s],
		       side_name[SIDE_MEMCPY], med[SIDE_MEMCPY]);
		for (int side = SIDE_COPY; side < SIDE_MAX; side++)
			printf(", %s %.2f GB/s (%.2fx)", side_name[side], med[side],
			       med[side] / med[SIDE_MEMCPY]);
		printf("\n");
	}
	for (unsigned int i = 0; i < NB_MBUFS; i++)
		rte_pktmbuf_free(mbufs[i]);
	droce_gpu_buf_free(&buf);
	rte_mempool_free(mp);
	return ret;
}
