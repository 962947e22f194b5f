/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The CUDA driver against a real GPU: every gpudev call droce makes, both
 * placement modes into GPU memory checked byte for byte with cuMemcpyDtoH
 * (guard regions around the buffer), and, with --bench, the gather kernel
 * against cuMemcpyHtoD of one contiguous block of the same size.
 *
 * In CI (no GPU, no CUDA driver) it says why and exits 77: skipped.
 * tests/device/run.sh runs it on a machine with a GPU.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_gpudev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "test_eal.h"

#define BUF (16u << 20)
#define GUARD (64u << 10)

static int failures;
static int16_t dev;
static struct rte_mempool *pool;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failures++; \
		printf("FAIL %s:%d: ", __func__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} \
} while (0)

static double
now(void)
{
	return (double)rte_get_tsc_cycles() / (double)rte_get_tsc_hz();
}

static void
check_device(void)
{
	struct rte_gpu_info info;
	void *a, *b;
	uint8_t *host;

	CHECK(rte_gpu_info_get(dev, &info) == 0, "info");
	printf("device %s: %zu MiB, %u SMs, GPU page %zu\n", info.name,
	       info.total_memory >> 20, info.processor_count, info.page_size);
	CHECK(info.total_memory > 0 && info.processor_count > 0, "info values");
	a = rte_gpu_mem_alloc(dev, 1000, 4096);
	b = rte_gpu_mem_alloc(dev, 3u << 20, 1u << 21);
	CHECK(a != NULL && (uintptr_t)a % 4096 == 0, "alloc aligned 4096: %p", a);
	CHECK(b != NULL && (uintptr_t)b % (1u << 21) == 0, "alloc aligned 2 MiB: %p", b);
	CHECK(rte_gpu_mem_free(dev, a) == 0 && rte_gpu_mem_free(dev, b) == 0, "free");
	CHECK(rte_gpu_mem_free(dev, a) != 0, "double free refused");
	CHECK(rte_gpu_mem_alloc(dev, info.total_memory * 2, 0) == NULL, "too much refused");

	host = rte_malloc(NULL, 1u << 20, 4096);
	CHECK(rte_gpu_mem_register(dev, 1u << 20, host) == 0, "register host memory");
	CHECK(rte_gpu_mem_unregister(dev, host) == 0, "unregister");
	rte_free(host);
	CHECK(rte_gpu_wmb(dev) == 0, "wmb (cuFlushGPUDirectRDMAWrites)");
}

struct guarded {
	struct droce_gpu_buf whole, buf;
	uint8_t *model, *back;
};

static void
guarded_alloc(struct guarded *g)
{
	char err[256];
	uint8_t *fill = malloc(BUF + 2 * GUARD);

	CHECK(droce_gpu_buf_alloc(dev, BUF + 2 * GUARD, 1u << 16, &g->whole, err,
				  sizeof(err)) == 0, "%s", err);
	memset(fill, 0x5a, BUF + 2 * GUARD);
	CHECK(droce_gpu_cuda_htod(dev, g->whole.gpu, fill, BUF + 2 * GUARD) == 0, "htod");
	free(fill);
	g->buf = g->whole;
	g->buf.gpu = (uint8_t *)g->whole.gpu + GUARD;
	g->buf.cpu = g->whole.cpu != NULL ? (uint8_t *)g->whole.cpu + GUARD : NULL;
	g->buf.size = BUF;
	g->model = malloc(BUF);
	g->back = malloc(BUF + 2 * GUARD);
	memset(g->model, 0x5a, BUF);
}

/* Read the GPU memory back and compare, guards included. */
static void
guarded_check(struct guarded *g, const char *what)
{
	CHECK(droce_gpu_cuda_dtoh(dev, g->back, g->whole.gpu, BUF + 2 * GUARD) == 0, "dtoh");
	for (unsigned int i = 0; i < GUARD; i++)
		if (g->back[i] != 0x5a || g->back[GUARD + BUF + i] != 0x5a) {
			CHECK(0, "%s: byte written outside the buffer (guard %u)", what, i);
			break;
		}
	if (memcmp(g->back + GUARD, g->model, BUF) != 0) {
		for (unsigned int i = 0; i < BUF; i++)
			if (g->back[GUARD + i] != g->model[i]) {
				CHECK(0, "%s: byte %u is %#x in GPU memory, %#x expected", what,
				      i, g->back[GUARD + i], g->model[i]);
				break;
			}
	} else {
		printf("PASS %s: GPU memory byte-exact (read back with cuMemcpyDtoH)\n", what);
	}
}

static void
guarded_free(struct guarded *g)
{
	droce_gpu_buf_free(&g->whole);
	free(g->model);
	free(g->back);
}

struct span {
	uint64_t dst;
	uint32_t len;
};

/* Entries of one batch are copied by the GPU's warps in parallel, in no
 * set order, so the model (written in order) holds only where they do not
 * overlap.
 */
static bool
overlaps_batch(uint64_t dst, uint32_t len, const struct span *placed, int n)
{
	for (int i = 0; i < n; i++)
		if (dst < placed[i].dst + placed[i].len && placed[i].dst < dst + len)
			return true;
	return false;
}

/* @p batches of 40 random entries through a placer of @p items items of
 * @p entries entries: with few items, the gather kernel goes round its
 * ring many times, and each lap's entries must be read fresh. Unless
 * @p pipelined, each batch is done before the next is written; pipelined,
 * the host fills the next items while the kernel reads the last ones, and
 * waits only when every item is busy. Pipelined batches write consecutive
 * stripes, so a place is written again only some 280 batches later, long
 * after the ring's 4 items have made the earlier write DONE: the order in
 * which the GPU's blocks finish items cannot change the result.
 */
static void
place_random(enum droce_place_mode mode, uint32_t items, uint32_t entries, int batches,
	     bool pipelined, const char *what)
{
	struct droce_placer_conf conf = { .mode = mode, .nb_items = items,
					  .item_entries = entries };
	unsigned int seed = (unsigned int)mode, avail = rte_mempool_avail_count(pool);
	struct droce_placer_stats st;
	struct droce_placer *pl;
	struct guarded g;
	struct span placed[40];
	char err[256];
	uint64_t ticket = 0;

	guarded_alloc(&g);
	conf.buf = &g.buf;
	pl = droce_placer_create(&conf, err, sizeof(err));
	if (pl == NULL) {
		CHECK(0, "%s placer: %s", droce_place_mode_name(mode), err);
		guarded_free(&g);
		return;
	}
	for (int batch = 0; batch < batches; batch++) {
		for (int e = 0; e < 40; e++) {
			uint32_t len = (uint32_t)rand_r(&seed) % 1500, src_off = (uint32_t)rand_r(&seed) % 64;
			uint64_t dst;
			struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
			uint8_t *p;
			int rc = -ENOBUFS;

			if (e % 9 == 0)
				len = 0;
			do
				dst = e % 5 == 0
					? ((uint64_t)(rand_r(&seed) % 250) + 1) * 65536 - len / 2
					: (uint64_t)rand_r(&seed) % (BUF - len);
			while (overlaps_batch(dst, len, placed, e));
			if (e == 39 && !overlaps_batch(BUF - len, len, placed, e))
				dst = BUF - len;
			if (pipelined)
				dst = ((uint64_t)batch * 40 + (uint64_t)e) * 1500 % (BUF - 1500);
			placed[e].dst = dst;
			placed[e].len = len;
			p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(src_off + len));
			for (uint32_t i = 0; i < src_off + len; i++)
				p[i] = (uint8_t)rand_r(&seed);
			memcpy(g.model + dst, p + src_off, len);
			/* -ENOBUFS takes the mbuf too: keep a reference to retry with. */
			for (double t0 = now(); now() - t0 < 10;) {
				rte_mbuf_refcnt_update(m, 1);
				rc = droce_place(pl, m, src_off, dst, len);
				if (rc != -ENOBUFS)
					break;
				droce_placer_completed(pl);
			}
			rte_pktmbuf_free(m);
			CHECK(rc == 0, "place: %d", rc);
		}
		ticket = droce_placer_submit(pl);
		/* Unpipelined, each batch is done before the next: the kernel
		 * reads an item only after the host has rewritten it whole.
		 */
		for (double t0 = now(); !pipelined && droce_placer_completed(pl) < ticket &&
		     now() - t0 < 10;)
			;
	}
	for (double t0 = now(); droce_placer_completed(pl) < ticket && now() - t0 < 10;)
		;
	CHECK(droce_placer_completed(pl) == ticket, "%s: batches %lu of %lu done in 10 s",
	      what, (unsigned long)droce_placer_completed(pl), (unsigned long)ticket);
	/* Outside the buffer: refused before anything moves. */
	CHECK(droce_place(pl, rte_pktmbuf_alloc(pool), 0, BUF, 1) == -ERANGE, "range");
	droce_placer_stats(pl, &st);
	CHECK(st.entries == (uint64_t)batches * 40 && st.out_of_range == 1, "counters");
	droce_placer_destroy(pl);
	guarded_check(&g, what);
	CHECK(rte_mempool_avail_count(pool) == avail, "every mbuf back in the pool");
	guarded_free(&g);
}

/* What a frame's write barrier costs the worker (rte_gpu_wmb(): the
 * context made current once, cuFlushGPUDirectRDMAWrites each time).
 */
static void
bench_wmb(void)
{
	const unsigned int calls = 100000;
	double t0 = now();

	for (unsigned int i = 0; i < calls; i++)
		if (rte_gpu_wmb(dev) != 0) {
			CHECK(0, "wmb failed at call %u", i);
			return;
		}
	printf("BENCH rte_gpu_wmb (once a frame on a worker): %.2f us a call (%u calls)\n",
	       (now() - t0) * 1e6 / calls, calls);
}

/* Gather from registered host memory vs one cuMemcpyHtoD of as many bytes. */
static void
bench_gather(unsigned int rounds)
{
	static const uint32_t sizes[] = { 1408, 4096 };
	const size_t gpu_bytes = 256u << 20, total = 2ull << 30;
	struct droce_gpu_buf buf;
	uint8_t *block;
	char err[256];

	if (droce_gpu_buf_alloc(dev, gpu_bytes, 1u << 16, &buf, err, sizeof(err)) != 0) {
		CHECK(0, "bench buffer: %s", err);
		return;
	}
	block = rte_malloc(NULL, gpu_bytes, 4096);
	memset(block, 1, gpu_bytes);
	rte_gpu_mem_register(dev, gpu_bytes, block);
	for (unsigned int s = 0; s < 2; s++) {
		struct droce_placer_conf conf = { .buf = &buf, .mode = DROCE_PLACE_GATHER,
						  .nb_items = 64, .item_entries = 1024 };
		double g[16], h[16];
		uint32_t len = sizes[s];

		for (unsigned int r = 0; r < rounds; r++) {
			struct droce_placer *pl = droce_placer_create(&conf, err, sizeof(err));
			uint64_t n = total / len, ticket = 0, slots = gpu_bytes / len;
			struct rte_mbuf *m[1024];
			double t0;

			if (pl == NULL) {
				CHECK(0, "bench placer: %s", err);
				goto out;
			}
			for (int i = 0; i < 1024; i++) {
				m[i] = rte_pktmbuf_alloc(pool);
				rte_pktmbuf_append(m[i], (uint16_t)len);
			}
			t0 = now();
			for (uint64_t i = 0; i < n; i++) {
				struct rte_mbuf *mb = m[i % 1024];

				rte_mbuf_refcnt_update(mb, 1);
				while (droce_place(pl, mb, 0, (i % slots) * len, len) == -ENOBUFS) {
					rte_mbuf_refcnt_update(mb, 1);
					droce_placer_completed(pl);
				}
				if ((i + 1) % 1024 == 0)
					ticket = droce_placer_submit(pl);
			}
			ticket = droce_placer_submit(pl);
			while (droce_placer_completed(pl) < ticket)
				;
			g[r] = (double)n * len / (now() - t0) / 1e9;
			droce_placer_destroy(pl);
			for (int i = 0; i < 1024; i++)
				rte_pktmbuf_free(m[i]);

			t0 = now();
			for (size_t done = 0; done < (size_t)n * len; done += gpu_bytes)
				droce_gpu_cuda_htod(dev, buf.gpu, block, gpu_bytes);
			h[r] = (double)n * len / (now() - t0) / 1e9;
		}
		{
			double mg = 0, mh = 0;

			/* median of few values: sort */
			for (unsigned int i = 0; i < rounds; i++)
				for (unsigned int j = i + 1; j < rounds; j++) {
					if (g[j] < g[i]) { double t = g[i]; g[i] = g[j]; g[j] = t; }
					if (h[j] < h[i]) { double t = h[i]; h[i] = h[j]; h[j] = t; }
				}
			mg = g[rounds / 2];
			mh = h[rounds / 2];
			printf("BENCH gather %u-byte entries from registered host memory: %.2f GB/s; cuMemcpyHtoD of one block: %.2f GB/s; ratio %.2f (medians of %u rounds, %.0f GiB each)\n",
			       len, mg, mh, mg / mh, rounds, (double)total / (1u << 30));
		}
	}
out:
	rte_gpu_mem_unregister(dev, block);
	rte_free(block);
	droce_gpu_buf_free(&buf);
}

int
main(int argc, char **argv)
{
	char prefix[64], err[256];
	char *eal[] = { argv[0], "--no-pci", "--no-huge", "-m", "2048",
			"--file-prefix", prefix, DROCE_TEST_EAL_QUIET, "-l", "0",
			"--log-level", "lib.eal:error", NULL };
	bool bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
	int n;

	snprintf(prefix, sizeof(prefix), "droce-gpu-cuda-%d", getpid());
	if (droce_test_eal_init(RTE_DIM(eal) - 1, eal) < 0)
		return 1;
	n = droce_gpu_cuda_probe(err, sizeof(err));
	if (n <= 0) {
		printf("SKIP: %s\n", err);
		droce_test_eal_cleanup();
		return 77;
	}
	if (droce_gpu_find("cuda:0", &dev, err, sizeof(err)) != 0) {
		printf("FAIL: %s\n", err);
		return 1;
	}
	pool = rte_pktmbuf_pool_create("cuda_check", 8192, 256, 0,
				       RTE_PKTMBUF_HEADROOM + 4096, SOCKET_ID_ANY);
	if (pool == NULL || droce_gpu_mempool_register(dev, pool, err, sizeof(err)) != 0) {
		printf("FAIL: mempool: %s\n", pool == NULL ? "none" : err);
		return 1;
	}
	check_device();
	place_random(DROCE_PLACE_GATHER, 64, 64, 50, false, "gather");
	place_random(DROCE_PLACE_GATHER, 4, 16, 400, false, "gather, 400 laps of a ring of 4 items");
	place_random(DROCE_PLACE_GATHER, 4, 16, 4000, true,
		     "gather, 4000 batches pipelined through a ring of 4 items");
	{
		struct droce_gpu_buf probe;

		if (droce_gpu_buf_alloc(dev, 1u << 16, 1u << 16, &probe, err, sizeof(err)) == 0 &&
		    probe.cpu != NULL)
			place_random(DROCE_PLACE_COPY, 64, 64, 50, false, "copy");
		else
			printf("NOTE copy placement not checked: no CPU mapping of GPU memory (no GDRCopy here)\n");
		droce_gpu_buf_free(&probe);
	}
	if (bench) {
		bench_gather(5);
		bench_wmb();
	}
	droce_gpu_mempool_unregister(dev, pool);
	printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures,
	       failures == 1 ? "" : "s");
	rte_gpu_close(dev);
	droce_test_eal_cleanup();
	return failures != 0;
}
