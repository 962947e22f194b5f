/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The host gpudev driver and the placement engine on it: every gpudev call
 * droce makes, both placement modes against a model of what the bytes must
 * be (random entries, page boundaries, zero lengths), with guard regions
 * around the buffer, and every error path.
 */

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_atomic.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_gpudev.h>
#include <rte_mbuf.h>
#include <rte_vect.h>

#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "droce_roce.h"
#include "gpu_private.h"
#include "guarded_buf.h"
#include "test_eal.h"

#define BUF_SIZE (1u << 20)

static struct rte_mempool *pool;
static int16_t host_dev;

static void
test_host_device(void **state)
{
	struct rte_gpu_info info;
	int16_t id;
	char err[256];

	(void)state;
	assert_int_equal(rte_gpu_info_get(host_dev, &info), 0);
	assert_string_equal(info.name, "droce_host0");
	assert_int_equal(info.total_memory, 64u << 20);
	assert_int_equal(info.page_size, (size_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(droce_gpu_host_create("droce_host0", NULL), -EEXIST);
	assert_int_equal(droce_gpu_find("host", &id, err, sizeof(err)), 0);
	assert_int_equal(id, host_dev);
	assert_int_equal(droce_gpu_find("auto", &id, err, sizeof(err)), 0);
	assert_int_equal(id, host_dev);
	assert_int_equal(droce_gpu_find("cuda:3", &id, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "no gpudev device droce_cuda3; devices: droce_host0"));
	assert_int_equal(droce_gpu_find("cuda:x", &id, err, sizeof(err)), -EINVAL);
	assert_int_equal(droce_gpu_find("gpu0", &id, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "allowed: host, cuda:N, auto"));
}

static void
test_alloc_free_align(void **state)
{
	static const unsigned int aligns[] = { 0, 64, 4096, 1u << 16, 1u << 21 };
	void *p[RTE_DIM(aligns)];

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(aligns); i++) {
		p[i] = rte_gpu_mem_alloc(host_dev, 1000 + i, aligns[i]);
		assert_non_null(p[i]);
		if (aligns[i] != 0)
			assert_int_equal((uintptr_t)p[i] % aligns[i], 0);
		memset(p[i], 0xab, 1000 + i); /* it is memory */
	}
	for (unsigned int i = 0; i < RTE_DIM(aligns); i++)
		assert_int_equal(rte_gpu_mem_free(host_dev, p[i]), 0);
	/* Not a power of two; not ours; twice. */
	assert_null(rte_gpu_mem_alloc(host_dev, 100, 3000));
	assert_int_equal(rte_errno, EINVAL);
	assert_int_not_equal(rte_gpu_mem_free(host_dev, p[0]), 0);
	assert_int_not_equal(rte_gpu_mem_free(host_dev, &pool), 0);
	/* Out of memory: the device has 64 MiB. */
	assert_null(rte_gpu_mem_alloc(host_dev, 65u << 20, 0));
	assert_int_equal(rte_errno, ENOMEM);
}

static void
test_register_and_map(void **state)
{
	static uint8_t host[8192];
	uint8_t *g = rte_gpu_mem_alloc(host_dev, 8192, 4096);
	void *m;

	(void)state;
	assert_int_equal(rte_gpu_mem_register(host_dev, sizeof(host), host), 0);
	/* A range is registered once, as with cuMemHostRegister. */
	assert_int_not_equal(rte_gpu_mem_register(host_dev, 100, host + 50), 0);
	assert_int_equal(rte_gpu_mem_unregister(host_dev, host), 0);
	assert_int_not_equal(rte_gpu_mem_unregister(host_dev, host), 0);

	m = rte_gpu_mem_cpu_map(host_dev, 4096, g + 4096);
	assert_ptr_equal(m, g + 4096);
	assert_int_equal(rte_gpu_mem_cpu_unmap(host_dev, g + 4096), 0);
	assert_null(rte_gpu_mem_cpu_map(host_dev, 8193, g));     /* too long */
	assert_null(rte_gpu_mem_cpu_map(host_dev, 16, host));    /* not its memory */
	assert_int_not_equal(rte_gpu_mem_cpu_unmap(host_dev, g), 0);
	assert_int_equal(rte_gpu_wmb(host_dev), 0);
	assert_int_equal(rte_gpu_mem_free(host_dev, g), 0);
}

static void
test_comm_list(void **state)
{
	struct rte_gpu_comm_list *l = rte_gpu_comm_create_list(host_dev, 8);
	struct rte_mbuf *m[3];
	enum rte_gpu_comm_list_status st;

	(void)state;
	assert_non_null(l);
	assert_int_equal(rte_gpu_comm_get_status(&l[5], &st), 0);
	assert_int_equal(st, RTE_GPU_COMM_LIST_FREE);
	for (int i = 0; i < 3; i++) {
		m[i] = rte_pktmbuf_alloc(pool);
		rte_pktmbuf_append(m[i], 100);
	}
	assert_int_equal(rte_gpu_comm_populate_list_pkts(&l[2], m, 3), 0);
	assert_int_equal(rte_gpu_comm_get_status(&l[2], &st), 0);
	assert_int_equal(st, RTE_GPU_COMM_LIST_READY);
	assert_int_equal(l[2].num_pkts, 3);
	assert_int_equal(l[2].pkt_list[1].size, 100);
	assert_int_equal(rte_gpu_comm_set_status(&l[2], RTE_GPU_COMM_LIST_DONE), 0);
	assert_int_equal(rte_gpu_comm_cleanup_list(&l[2]), 0);
	for (int i = 0; i < 3; i++)
		rte_pktmbuf_free(m[i]);
	assert_int_equal(rte_gpu_comm_destroy_list(l, 8), 0);
}

static void
test_buffers_and_mempool(void **state)
{
	struct droce_gpu_buf b;
	char err[256];

	(void)state;
	assert_int_equal(droce_gpu_buf_alloc(host_dev, 3 * 4096, 128, &b, err,
					     sizeof(err)), 0);
	assert_ptr_equal(b.cpu, b.gpu);
	assert_int_equal(droce_gpu_buf_fits(&b, 4096, 3, err, sizeof(err)), 0);
	assert_int_equal(droce_gpu_buf_fits(&b, 4096, 4, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "too small for 4 pages of 4096 bytes"));
	droce_gpu_buf_free(&b);
	droce_gpu_buf_free(&b); /* a zeroed buffer is fine */
	assert_int_equal(droce_gpu_buf_alloc(host_dev, 100u << 20, 0, &b, err,
					     sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, "cannot allocate 104857600 bytes"));
	assert_int_equal(droce_gpu_buf_alloc(host_dev, 0, 0, &b, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(droce_gpu_buf_alloc(host_dev, 10, 3, &b, err, sizeof(err)),
			 -EINVAL);

	assert_int_equal(droce_gpu_mempool_register(host_dev, pool, err, sizeof(err)), 0);
	/* Twice is refused, and nothing is left half registered. */
	assert_int_not_equal(droce_gpu_mempool_register(host_dev, pool, err,
							sizeof(err)), 0);
	assert_non_null(strstr(err, "cannot register its memory"));
	assert_int_equal(droce_gpu_mempool_unregister(host_dev, pool), 0);
	assert_int_equal(droce_gpu_mempool_register(host_dev, pool, err, sizeof(err)), 0);
	assert_int_equal(droce_gpu_mempool_unregister(host_dev, pool), 0);
}

/* A buffer with guard regions before and after it, and a model of it. */
static void
guarded_alloc(struct guarded *g)
{
	guarded_alloc_size(g, host_dev, BUF_SIZE);
}

static struct rte_mbuf *
random_mbuf(unsigned int *seed, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint8_t *p;

	assert_non_null(m);
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	assert_true(len == 0 || p != NULL);
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)rand_r(seed);
	return m;
}

/* Wait until batch @p ticket is complete, polling the engine unless it
 * has a thread. Bounded in time, not in spins: on a loaded machine (the
 * tests run in parallel on two cores) the engine thread may wait for a
 * core for milliseconds, and a million spins once ran out first.
 */
static void
wait_completed(struct droce_placer *pl, uint64_t ticket, bool thread)
{
	uint64_t deadline = rte_get_timer_cycles() + 10 * rte_get_timer_hz();

	while (droce_placer_completed(pl) < ticket) {
		if (thread)
			sched_yield();  /* give the engine the core */
		else
			droce_placer_engine_poll(pl);
		if (rte_get_timer_cycles() > deadline)
			fail_msg("batch %" PRIu64 " not complete after 10 s", ticket);
	}
}

/* Place random entries, some across page boundaries, some empty; check
 * the buffer against the model and that every mbuf came back.
 */
static void
random_entries(enum droce_place_mode mode, bool thread, enum droce_copy_stores stores)
{
	struct droce_placer_conf conf = {
		.mode = mode, .nb_items = 8, .item_entries = 16,
		.engine_thread = thread, .stores = stores,
	};
	unsigned int avail = rte_mempool_avail_count(pool), seed = mode * 7 + thread;
	struct droce_placer_stats st;
	struct droce_placer *pl;
	struct guarded g;
	char err[256];
	uint64_t ticket = 0;

	guarded_alloc(&g);
	conf.buf = &g.buf;
	pl = droce_placer_create(&conf, err, sizeof(err));
	if (pl == NULL)
		fail_msg("%s", err);
	assert_int_equal(droce_placer_mode(pl), mode);
	for (int batch = 0; batch < 40; batch++) {
		for (int e = 0; e < 25; e++) {
			uint32_t len = (uint32_t)rand_r(&seed) % 1500;
			uint32_t src_off = (uint32_t)rand_r(&seed) % 64;
			uint64_t dst;
			struct rte_mbuf *m;

			if (e % 9 == 0)
				len = 0;
			if (e % 5 == 0) /* straddle a 4 KiB page */
				dst = ((uint64_t)(rand_r(&seed) % 250) + 1) * 4096 - len / 2;
			else
				dst = (uint64_t)rand_r(&seed) % (BUF_SIZE - len);
			if (e == 24) /* the very end */
				dst = BUF_SIZE - len;
			m = random_mbuf(&seed, src_off + len);
			memcpy(g.model + dst, rte_pktmbuf_mtod_offset(m, uint8_t *, src_off), len);
			assert_int_equal(droce_place(pl, m, src_off, dst, len), 0);
		}
		ticket = droce_placer_submit(pl);
		if (mode == DROCE_PLACE_GATHER && !thread)
			droce_placer_engine_poll(pl);
		/* Items may still be busy: wait for this batch. */
		wait_completed(pl, ticket, thread);
	}
	assert_int_equal(droce_placer_completed(pl), ticket);
	guarded_check(&g);
	droce_placer_stats(pl, &st);
	assert_int_equal(st.entries, 40 * 25);
	assert_int_equal(st.submitted, 40);
	assert_int_equal(st.completed, 40);
	assert_int_equal(st.out_of_range + st.no_item + st.device_failed, 0);
	droce_placer_destroy(pl);
	assert_int_equal(rte_mempool_avail_count(pool), avail);
	guarded_free(&g);
}

static void
test_copy_random(void **state)
{
	(void)state;
	random_entries(DROCE_PLACE_COPY, false, DROCE_COPY_STREAMING);
	random_entries(DROCE_PLACE_COPY, false, DROCE_COPY_CACHED);
}

static void
test_gather_random(void **state)
{
	(void)state;
	random_entries(DROCE_PLACE_GATHER, false, DROCE_COPY_STREAMING);
}

static void
test_gather_thread(void **state)
{
	(void)state;
	random_entries(DROCE_PLACE_GATHER, true, DROCE_COPY_STREAMING);
}

/* A placer of @p conf over a fresh guarded buffer. */
static struct droce_placer *
placer_over(struct guarded *g, struct droce_placer_conf *conf)
{
	struct droce_placer *pl;
	char err[256];

	guarded_alloc(g);
	conf->buf = &g->buf;
	pl = droce_placer_create(conf, err, sizeof(err));
	if (pl == NULL)
		fail_msg("%s", err);
	return pl;
}

static void
test_out_of_range(void **state)
{
	/* copy, copy with the check fused into the copy, gather */
	for (int variant = 0; variant < 3; variant++) {
		enum droce_place_mode mode = variant < 2 ? DROCE_PLACE_COPY
							 : DROCE_PLACE_GATHER;
		struct droce_placer_conf conf = { .mode = mode,
						  .fused_icrc = variant == 1 };
		unsigned int avail = rte_mempool_avail_count(pool), seed = 9;
		struct droce_placer_stats st;
		struct guarded g;
		struct droce_placer *pl = placer_over(&g, &conf);

		(void)state;
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 100), 0,
					     BUF_SIZE - 99, 100), -ERANGE);
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 100), 0,
					     BUF_SIZE, 1), -ERANGE);
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 100), 0,
					     UINT64_MAX - 10, 100), -ERANGE);
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 100), 1, 0, 100),
				 -ERANGE);                 /* past the mbuf */
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 10), 0, BUF_SIZE, 0),
				 0);                       /* empty, at the end */
		droce_placer_submit(pl);
		droce_placer_engine_poll(pl);
		droce_placer_completed(pl);
		droce_placer_stats(pl, &st);
		assert_int_equal(st.out_of_range, 4);
		guarded_check(&g);
		droce_placer_destroy(pl);
		assert_int_equal(rte_mempool_avail_count(pool), avail);
		guarded_free(&g);
	}
}

static void
test_no_free_item(void **state)
{
	struct droce_placer_conf conf = { .mode = DROCE_PLACE_GATHER, .nb_items = 2,
					  .item_entries = 4 };
	unsigned int avail = rte_mempool_avail_count(pool), seed = 3;
	struct droce_placer_stats st;
	struct guarded g;
	struct droce_placer *pl = placer_over(&g, &conf);
	uint64_t t;

	(void)state;
	/* No engine runs: two batches fill both items, the third waits. */
	for (int b = 0; b < 2; b++) {
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 8), 0, 64 * b, 8), 0);
		droce_placer_submit(pl);
	}
	assert_int_equal(droce_place(pl, random_mbuf(&seed, 8), 0, 512, 8), -ENOBUFS);
	droce_placer_stats(pl, &st);
	assert_int_equal(st.no_item, 1);
	/* Once the engine runs, there is room again. */
	droce_placer_engine_poll(pl);
	assert_int_equal(droce_place(pl, random_mbuf(&seed, 8), 0, 512, 8), 0);
	t = droce_placer_submit(pl);
	droce_placer_engine_poll(pl);
	assert_int_equal(droce_placer_completed(pl), t);
	droce_placer_destroy(pl);
	assert_int_equal(rte_mempool_avail_count(pool), avail);
	guarded_free(&g);
}

/* Gather: a placer destroyed (a stream closed or started again) with an
 * item half filled, not yet handed to the engine, frees that item's mbufs
 * too (the item says how many only once it is ready).
 */
static void
test_gather_destroy_frees_half_item(void **state)
{
	struct droce_placer_conf conf = { .mode = DROCE_PLACE_GATHER, .nb_items = 2,
					  .item_entries = 8 };
	unsigned int avail = rte_mempool_avail_count(pool), seed = 4;
	struct guarded g;
	struct droce_placer *pl = placer_over(&g, &conf);

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 8), 0, 64 * i, 8), 0);
	droce_placer_destroy(pl);
	assert_int_equal(rte_mempool_avail_count(pool), avail);
	guarded_free(&g);
}

static void
test_device_fails(void **state)
{
	/* copy with the check first, copy in the check's pass, gather */
	for (int variant = 0; variant < 3; variant++) {
		struct droce_placer_conf conf = {
			.mode = variant < 2 ? DROCE_PLACE_COPY : DROCE_PLACE_GATHER,
			.fused_icrc = variant == 1,
		};
		unsigned int avail = rte_mempool_avail_count(pool), seed = 5;
		struct droce_placer_stats st;
		struct droce_placer *pl;
		struct guarded g;
		char err[256];
		uint64_t t1, t2;

		(void)state;
		guarded_alloc(&g);
		conf.buf = &g.buf;
		pl = droce_placer_create(&conf, err, sizeof(err));
		assert_non_null(pl);
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 8), 0, 0, 8), 0);
		t1 = droce_placer_submit(pl);
		droce_placer_engine_poll(pl);
		assert_int_equal(droce_placer_completed(pl), t1);

		assert_int_equal(droce_gpu_host_set_failed(host_dev, true), 0);
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 8), 0, 8, 8), 0);
		t2 = droce_placer_submit(pl);
		droce_placer_engine_poll(pl);
		/* The failed batch never completes; later entries are refused. */
		assert_int_equal(droce_placer_completed(pl), t1);
		assert_true(droce_placer_failed(pl));
		assert_int_equal(droce_place(pl, random_mbuf(&seed, 8), 0, 16, 8), -EIO);
		droce_placer_stats(pl, &st);
		assert_true(st.device_failed >= 2);
		assert_true(t2 > t1);
		assert_int_equal(droce_gpu_host_set_failed(host_dev, false), 0);
		droce_placer_destroy(pl);
		assert_int_equal(rte_mempool_avail_count(pool), avail);
		guarded_free(&g);
	}
}

static void
test_unmappable(void **state)
{
	struct droce_gpu_host_opts opts = { .total_memory = 8u << 20, .no_cpu_map = true };
	int dev = droce_gpu_host_create("droce_host_nomap", &opts);
	struct droce_placer_conf conf = { .mode = DROCE_PLACE_COPY };
	struct droce_gpu_buf b;
	struct droce_placer *pl;
	char err[512];

	(void)state;
	assert_true(dev >= 0);
	assert_int_equal(droce_gpu_buf_alloc((int16_t)dev, 65536, 0, &b, err,
					     sizeof(err)), 0);
	assert_null(b.cpu);
	conf.buf = &b;
	assert_null(droce_placer_create(&conf, err, sizeof(err)));
	assert_non_null(strstr(err, "copy placement needs a CPU mapping"));
	conf.mode = DROCE_PLACE_AUTO;
	pl = droce_placer_create(&conf, err, sizeof(err));
	assert_non_null(pl);
	assert_int_equal(droce_placer_mode(pl), DROCE_PLACE_GATHER);
	droce_placer_destroy(pl);
	droce_gpu_buf_free(&b);
	assert_int_equal(rte_gpu_close((int16_t)dev), 0);
	/* Item entries beyond what a comm list holds. */
	conf.mode = DROCE_PLACE_GATHER;
	conf.item_entries = 1025;
	{
		struct guarded g;

		guarded_alloc(&g);
		conf.buf = &g.buf;
		assert_null(droce_placer_create(&conf, err, sizeof(err)));
		assert_non_null(strstr(err, "allowed: 1..1024"));
		guarded_free(&g);
	}
}

static struct rte_mbuf *
roce_frame(uint32_t payload_len, unsigned int *seed, uint8_t *payload)
{
	struct droce_frame_spec spec = {
		.opcode = DROCE_OP_UC | DROCE_OP_WRITE_ONLY,
		.src_ip4 = RTE_BE32(0xc6120002), .dst_ip4 = RTE_BE32(0xc6120001),
		.payload = payload, .payload_len = payload_len,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	for (uint32_t i = 0; i < payload_len; i++)
		payload[i] = (uint8_t)rand_r(seed);
	assert_int_equal(droce_frame_build(m, &spec), 0);
	return m;
}

/* caller_frees: a copy hands each placed mbuf back (1), with the ICRC
 * checked first or in the copy too; refusals are freed; gather keeps its
 * mbufs (0).
 */
static void
test_caller_frees(void **state)
{
	const uint32_t l3 = 14, payload_off = 70;

	(void)state;
	for (int variant = 0; variant < 3; variant++) {
		struct droce_placer_conf conf = {
			.mode = variant < 2 ? DROCE_PLACE_COPY : DROCE_PLACE_GATHER,
			.fused_icrc = variant == 1, .caller_frees = true,
		};
		unsigned int avail = rte_mempool_avail_count(pool), seed = 21;
		int placed = variant < 2 ? 1 : 0;
		struct droce_placer *pl;
		struct rte_mbuf *m[3];
		uint8_t payload[1408];
		struct guarded g;
		char err[256];
		uint64_t t;

		guarded_alloc(&g);
		conf.buf = &g.buf;
		pl = droce_placer_create(&conf, err, sizeof(err));
		assert_non_null(pl);
		m[0] = random_mbuf(&seed, 300);
		memcpy(g.model + 4096, rte_pktmbuf_mtod(m[0], uint8_t *), 300);
		assert_int_equal(droce_place(pl, m[0], 0, 4096, 300), placed);
		m[1] = roce_frame(1408, &seed, payload);
		memcpy(g.model, payload, 1408);
		assert_int_equal(droce_place_icrc(pl, m[1], l3, payload_off, 0, 1408), placed);
		m[2] = random_mbuf(&seed, 100);
		assert_int_equal(droce_place(pl, m[2], 0, BUF_SIZE, 100), -ERANGE);
		if (placed == 1) {
			/* The two placed ones are out of the pool until freed here. */
			assert_int_equal(rte_mempool_avail_count(pool), avail - 2);
			rte_pktmbuf_free_bulk(m, 2);
		}
		t = droce_placer_submit(pl);
		droce_placer_engine_poll(pl);
		assert_int_equal(droce_placer_completed(pl), t);
		guarded_check(&g);
		droce_placer_destroy(pl);
		assert_int_equal(rte_mempool_avail_count(pool), avail);
		guarded_free(&g);
	}
}

static void
test_place_with_icrc(void **state)
{
	/* Ethernet 14, IPv4 20, UDP 8, BTH 12, RETH 16: payload at 70. */
	const uint32_t l3 = 14, payload_off = 70;

	/* copy with the check first, copy in the check's pass, gather */
	for (int variant = 0; variant < 3; variant++) {
		struct droce_placer_conf conf = {
			.mode = variant < 2 ? DROCE_PLACE_COPY : DROCE_PLACE_GATHER,
			.fused_icrc = variant == 1,
		};
		unsigned int avail = rte_mempool_avail_count(pool), seed = 11;
		struct droce_placer_stats st;
		struct droce_placer *pl;
		struct guarded g;
		uint8_t payload[1408];
		char err[256];
		struct rte_mbuf *m;
		uint64_t t;

		(void)state;
		guarded_alloc(&g);
		conf.buf = &g.buf;
		pl = droce_placer_create(&conf, err, sizeof(err));
		assert_non_null(pl);
		for (int i = 0; i < 8; i++) {
			m = roce_frame(1408, &seed, payload);
			memcpy(g.model + 1408 * i, payload, 1408);
			assert_int_equal(droce_place_icrc(pl, m, l3, payload_off,
							  1408 * (uint64_t)i, 1408), 0);
		}
		/* A corrupted payload: refused. Only the fused copy has
		 * written it already (inside its range, as documented), so
		 * only there the model takes those bytes.
		 */
		m = roce_frame(1408, &seed, payload);
		rte_pktmbuf_mtod_offset(m, uint8_t *, payload_off + 5)[0] ^= 1;
		if (conf.fused_icrc) {
			memcpy(g.model + 1408 * 8, payload, 1408);
			g.model[1408 * 8 + 5] ^= 1;
		}
		assert_int_equal(droce_place_icrc(pl, m, l3, payload_off, 1408 * 8, 1408),
				 -EBADMSG);
		t = droce_placer_submit(pl);
		droce_placer_engine_poll(pl);
		assert_int_equal(droce_placer_completed(pl), t);
		guarded_check(&g);
		droce_placer_stats(pl, &st);
		assert_int_equal(st.entries, 8);
		assert_int_equal(st.icrc_failed, 1);
		droce_placer_destroy(pl);
		assert_int_equal(rte_mempool_avail_count(pool), avail);
		guarded_free(&g);
	}
}

/* Every alignment of the destination against a line, and lengths around
 * whole lines, with each streaming copier this CPU has: the bytes and
 * nothing next to them.
 */
static void
test_copy_streaming(void **state)
{
	static const uint16_t widths[] = { RTE_VECT_SIMD_256, RTE_VECT_SIMD_128 };
	static uint8_t src[1024], dst[1024 + 128] __rte_aligned(64);
	uint16_t allowed = rte_vect_get_max_simd_bitwidth();
	unsigned int seed = 5;

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)rand_r(&seed);
	for (unsigned int w = 0; w < RTE_DIM(widths); w++) {
		gpu_copy_lines_t *lines;

		rte_vect_set_max_simd_bitwidth(widths[w]);
		lines = gpu_copy_lines_select();
		if (lines == NULL) {
			print_message("no streaming stores on this CPU\n");
			break;
		}
		for (size_t align = 0; align < 64; align++) {
			for (size_t len = 0; len < 400; len += len < 140 ? 1 : 61) {
				size_t off = (size_t)rand_r(&seed) % 64;

				memset(dst, 0xee, sizeof(dst));
				gpu_copy_streaming(lines, dst + 64 + align, src + off, len);
				rte_wmb();
				if (memcmp(dst + 64 + align, src + off, len) != 0)
					fail_msg("width %u, align %zu, len %zu: wrong bytes",
						 widths[w], align, len);
				for (size_t i = 0; i < sizeof(dst); i++)
					if ((i < 64 + align || i >= 64 + align + len) &&
					    dst[i] != 0xee)
						fail_msg("width %u, align %zu, len %zu: byte %zu written",
							 widths[w], align, len, i);
			}
		}
	}
	rte_vect_set_max_simd_bitwidth(allowed);
}

static void
test_mode_names(void **state)
{
	enum droce_place_mode m;

	(void)state;
	assert_int_equal(droce_place_mode_parse("gather", &m), 0);
	assert_int_equal(m, DROCE_PLACE_GATHER);
	assert_int_equal(droce_place_mode_parse("split", &m), -EINVAL);
	assert_string_equal(droce_place_mode_name(DROCE_PLACE_COPY), "copy");
	assert_string_equal(droce_place_mode_name(DROCE_PLACE_AUTO), "auto");
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = { argv[0], "--no-pci", "--no-huge", "-m", "256",
			"--file-prefix", prefix, DROCE_TEST_EAL_QUIET,
			"-l", "0", "--log-level", "lib.eal:error", NULL };
	struct droce_gpu_host_opts opts = { .total_memory = 64u << 20 };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_device),
		cmocka_unit_test(test_alloc_free_align),
		cmocka_unit_test(test_register_and_map),
		cmocka_unit_test(test_comm_list),
		cmocka_unit_test(test_buffers_and_mempool),
		cmocka_unit_test(test_copy_random),
		cmocka_unit_test(test_gather_random),
		cmocka_unit_test(test_gather_thread),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_caller_frees),
		cmocka_unit_test(test_no_free_item),
		cmocka_unit_test(test_gather_destroy_frees_half_item),
		cmocka_unit_test(test_device_fails),
		cmocka_unit_test(test_unmappable),
		cmocka_unit_test(test_place_with_icrc),
		cmocka_unit_test(test_copy_streaming),
		cmocka_unit_test(test_mode_names),
	};
	int ret;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "droce-test-gpu-%d", getpid());
	if (droce_test_eal_init(RTE_DIM(eal) - 1, eal) < 0)
		return 1;
	pool = rte_pktmbuf_pool_create("gpu_test", 4096, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	host_dev = (int16_t)droce_gpu_host_create("droce_host0", &opts);
	ret = pool != NULL && host_dev >= 0
		? cmocka_run_group_tests(tests, NULL, NULL) : 1;
	if (host_dev >= 0)
		rte_gpu_close(host_dev);
	droce_test_eal_cleanup();
	return ret;
}
