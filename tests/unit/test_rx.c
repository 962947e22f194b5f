/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/rx, the sensor frame receiver, against the receiver interface's
 * semantics and a hostile wire. Two ring-backed ethdevs stand in for NICs
 * (as in test_net); the test plays the sensor: it builds HSB frames with
 * lib/hsb, enqueues them on a port's RX ring and runs worker polls by
 * hand, so every outcome is deterministic. blocking_monitor() runs on a
 * thread of its own, as an application runs it. Frame memory comes from
 * the host gpudev driver with guard regions around it, and a model of
 * what it must hold: every test ends with the buffer byte-exact and the
 * guards untouched.
 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_gpudev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_timer.h>

#include "droce_core.h"
#include "droce_gpu_drivers.h"
#include "droce_hsb.h"
#include "droce_net.h"
#include "droce_rx.h"
#include "guarded_buf.h"
#include "rx_private.h"
#include "test_eal.h"

#define NB_PORTS 2
#define NB_WORKERS 2
#define TX_RINGS (NB_WORKERS + 1) /* 0: control lcore, 1 + i: worker i */
/* Port 0 has a queue for each worker (queue i polled by worker i), so
 * that a test can send a stream's packets to either; port 1 has one,
 * polled by worker 0.
 */
#define PORT0_QUEUES NB_WORKERS

/* The layout most tests use: 4 packets of data (3 x 1408 + 776), then
 * the metadata packet.
 */
#define FRAME 5000
#define PAGES 4
#define PAYLOAD 1408

static struct droce_stack *stack;
static struct droce_rx *rx;
#define TEST_POOL_MBUFS 8192
static struct rte_mempool *test_pool;
static struct rte_ring *rx_ring[NB_PORTS][PORT0_QUEUES];
static struct rte_ring *tx_ring[NB_PORTS][TX_RINGS];
static struct rte_ether_addr our_mac[NB_PORTS];
static int16_t host_dev;

static const struct rte_ether_addr sensor_mac = {
	.addr_bytes = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } };

static const char *const our_ip[NB_PORTS] = { "198.18.0.1", "198.18.1.1" };
static const char *const sensor_ip[NB_PORTS] = { "198.18.0.2", "198.18.1.2" };

static rte_be32_t
ip(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		abort();
	return a.s_addr;
}

/* ---- a stream under test: buffer, receiver, monitor thread, sensor ---- */

struct fixture {
	struct guarded g;
	struct droce_hsb_layout layout;
	struct droce_rx_params params;
	struct droce_rx_stream *st;
	struct droce_hsb_sender tx;
	uint16_t port;
	pthread_t monitor;
	bool monitor_running;
	int monitor_ret;
	uint8_t *frame;       /* the next frame's content */
	uint64_t seed;
	/* The sensor's metadata layout and first page (by default the
	 * separate layout from page 0, which the older tests count on).
	 */
	enum droce_hsb_metadata_layout metadata_layout;
	unsigned int first_page;
	unsigned int payload;   /* a packet's, but the frame's last (PAYLOAD) */
};

static void
fixture_init(struct fixture *f, uint16_t port, size_t frame_size,
	     unsigned int pages, unsigned int queue_size)
{
	memset(f, 0, sizeof(*f));
	droce_hsb_layout(frame_size, pages, 4096, &f->layout);
	guarded_alloc_size(&f->g, host_dev, f->layout.buffer_size);
	f->port = port;
	f->params = (struct droce_rx_params){
		.port = port, .queue = DROCE_RX_ANY_QUEUE, .buf = &f->g.buf,
		.frame_size = frame_size, .page_size = f->layout.page_size,
		.pages = pages, .metadata_offset = f->layout.metadata_offset,
		.peer_ip = sensor_ip[port], .queue_size = queue_size,
	};
	f->st = droce_rx_stream_new(rx);
	assert_non_null(f->st);
	f->metadata_layout = DROCE_HSB_METADATA_SEPARATE;
	f->payload = PAYLOAD;
	f->frame = malloc(frame_size);
	assert_non_null(f->frame);
	f->seed = 1;
}

/* Point the sensor at the stream as started. */
static void
sensor_init(struct fixture *f, enum droce_hsb_imm imm, uint32_t first_psn)
{
	struct droce_hsb_sender_conf c = {
		.src_mac = sensor_mac, .dst_mac = our_mac[f->port],
		.src_ip = ip(sensor_ip[f->port]), .dst_ip = ip(our_ip[f->port]),
		.qp = droce_rx_stream_qp_number(f->st),
		.rkey = droce_rx_stream_rkey(f->st),
		.page_base = droce_rx_stream_external_frame_memory(f->st),
		.frame_size = f->layout.frame_size, .page_size = f->layout.page_size,
		.metadata_offset = f->layout.metadata_offset,
		.pages = f->layout.pages, .payload_per_packet = f->payload,
		.imm = imm, .first_psn = first_psn,
		.metadata = f->metadata_layout, .first_page = f->first_page,
	};
	char err[256];

	if (droce_hsb_sender_init(&f->tx, &c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

static void
start(struct fixture *f)
{
	char err[256];

	if (droce_rx_stream_start(f->st, &f->params, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	sensor_init(f, f->params.imm, 0);
}

static void *
monitor_main(void *arg)
{
	struct fixture *f = arg;

	f->monitor_ret = droce_rx_stream_blocking_monitor(f->st);
	return NULL;
}

static void
monitor_start(struct fixture *f)
{
	assert_int_equal(pthread_create(&f->monitor, NULL, monitor_main, f), 0);
	f->monitor_running = true;
	/* Frames arrive only once it runs. */
	for (int i = 0; i < 100000 && !droce_rx_stream_monitoring(f->st); i++)
		usleep(10);
	assert_true(droce_rx_stream_monitoring(f->st));
}

/* The usual stream of a test: port 0, FRAME-byte frames in PAGES pages,
 * @p queue_size frames waiting at most, started and monitored.
 */
static void
fixture_running(struct fixture *f, unsigned int queue_size)
{
	fixture_init(f, 0, FRAME, PAGES, queue_size);
	start(f);
	monitor_start(f);
}

/* close(), and the monitor returns 0. */
static void
close_stream(struct fixture *f)
{
	droce_rx_stream_close(f->st);
	if (f->monitor_running) {
		assert_int_equal(pthread_join(f->monitor, NULL), 0);
		f->monitor_running = false;
		assert_int_equal(f->monitor_ret, 0);
	}
}

static bool
rx_rings_empty(void)
{
	for (uint16_t p = 0; p < NB_PORTS; p++)
		for (unsigned int q = 0; q < PORT0_QUEUES; q++)
			if (rx_ring[p][q] != NULL && !rte_ring_empty(rx_ring[p][q]))
				return false;
	return true;
}

/* Worker 0's rounds, then worker 1's, until neither has anything left
 * (a packet one hands to the other is taken in the other's next round).
 */
static void
poll_all(void)
{
	for (int i = 0; i < 64; i++) {
		unsigned int busy = 0;

		for (unsigned int w = 0; w < NB_WORKERS; w++)
			busy += droce_worker_poll(stack, w);
		if (busy == 0 && rx_rings_empty())
			break;
	}
	droce_control_poll(stack);
}

static void
fixture_fini(struct fixture *f)
{
	close_stream(f);
	/* Every packet sent went back to the pool: placed (a burst's at its
	 * end), refused, or sent on to the control lcore and freed there.
	 */
	poll_all();
	if (rte_mempool_avail_count(test_pool) != TEST_POOL_MBUFS)
		fail_msg("%u of %u test mbufs not back in their pool",
			 TEST_POOL_MBUFS - rte_mempool_avail_count(test_pool),
			 TEST_POOL_MBUFS);
	guarded_check(&f->g);
	droce_rx_stream_free(f->st);
	guarded_free(&f->g);
	free(f->frame);
}

/* ---- the sensor ------------------------------------------------------ */

/* What a test may do to packet @i of a frame before it is built. */
typedef bool (*packet_fault_t)(struct droce_frame_spec *spec, unsigned int i,
			       void *arg);

static struct rte_mbuf *
build(const struct droce_frame_spec *spec)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(test_pool);

	assert_non_null(m);
	assert_int_equal(droce_frame_build(m, spec), 0);
	return m;
}

/* A packet for RX queue @p queue of @p port. */
static void
inject_queue(uint16_t port, unsigned int queue, struct rte_mbuf *m)
{
	assert_int_equal(rte_ring_enqueue(rx_ring[port][queue], m), 0);
}

static void
inject(uint16_t port, struct rte_mbuf *m)
{
	inject_queue(port, 0, m);
}

/* New content for the next frame, and the model updated as if it landed
 * in the page the sensor writes next.
 */
static void
next_content(struct fixture *f)
{
	for (size_t i = 0; i < f->layout.frame_size; i++) {
		f->seed = f->seed * 6364136223846793005ull + 1442695040888963407ull;
		f->frame[i] = (uint8_t)(f->seed >> 56);
	}
}

static void
model_data(struct fixture *f, uint32_t page, size_t off, const void *p, size_t len)
{
	memcpy(f->g.model + (size_t)page * f->layout.page_size + off, p, len);
}

/* Queue one frame's packets on the port; @fault may change or drop
 * (return false) packets. The model takes what should land: the caller
 * says with @lands.
 */
static void
queue_frame(struct fixture *f, packet_fault_t fault, void *arg, bool lands)
{
	struct droce_hsb_metadata md = { .timestamp_s = 1700000000,
					 .timestamp_ns = 123, .flags = 0 };
	uint32_t page = f->tx.page;
	struct droce_frame_spec spec;
	unsigned int i = 0;

	next_content(f);
	md.bytes_written = f->layout.frame_size;
	md.crc = droce_hsb_frame_crc(f->frame, f->layout.frame_size);
	droce_hsb_frame_begin(&f->tx, f->frame, &md);
	if (lands) {
		static const uint8_t zeros[128];

		model_data(f, page, 0, f->frame, f->layout.frame_size);
		/* An embedded block comes with the zeros up to it. */
		if (droce_hsb_metadata_embedded(&f->tx.conf))
			model_data(f, page, f->layout.frame_size, zeros,
				   f->layout.metadata_offset - f->layout.frame_size);
		model_data(f, page, f->layout.metadata_offset, f->tx.metadata,
			   DROCE_HSB_METADATA_SIZE);
	}
	while (droce_hsb_frame_next(&f->tx, &spec)) {
		if (fault == NULL || fault(&spec, i, arg))
			inject(f->port, build(&spec));
		i++;
	}
}

/* One frame, as queue_frame() makes it, taken in. */
static void
send_frame_faulty(struct fixture *f, packet_fault_t fault, void *arg, bool lands)
{
	queue_frame(f, fault, arg, lands);
	poll_all();
}

static void
send_frame(struct fixture *f)
{
	send_frame_faulty(f, NULL, NULL, true);
}

static void
take(struct fixture *f, struct droce_rx_frame_info *info)
{
	if (!droce_rx_stream_get_next_frame(f->st, 1000, info))
		fail_msg("no frame within 1 s");
}

static void
expect_no_frame(struct fixture *f)
{
	struct droce_rx_frame_info info;

	assert_false(droce_rx_stream_get_next_frame(f->st, 0, &info));
}

static uint64_t
refused(struct fixture *f, enum droce_rx_refusal why)
{
	struct droce_rx_stream_stats s;

	droce_rx_stream_stats(f->st, &s);
	return s.refused[why];
}

/* Only @why, @n times, since @before. */
static void
expect_refusals(struct fixture *f, const struct droce_rx_stream_stats *before,
		enum droce_rx_refusal why, uint64_t n)
{
	struct droce_rx_stream_stats now;

	droce_rx_stream_stats(f->st, &now);
	for (int r = 0; r < DROCE_RX_REFUSAL_MAX; r++) {
		uint64_t d = now.refused[r] - before->refused[r];

		if (d != (r == (int)why ? n : 0))
			fail_msg("refusal %s: %" PRIu64 " new, expected %" PRIu64,
				 droce_rx_refusal_name(r), d, r == (int)why ? n : 0);
	}
}

/* ---- setup ------------------------------------------------------------ */

static void
make_ring_port(uint16_t port)
{
	unsigned int queues = port == 0 ? PORT0_QUEUES : 1;
	char name[32];

	for (unsigned int q = 0; q < queues; q++) {
		snprintf(name, sizeof(name), "rxr%u_%u", port, q);
		rx_ring[port][q] = rte_ring_create(name, 4096, SOCKET_ID_ANY,
						   RING_F_SP_ENQ | RING_F_SC_DEQ);
		assert_non_null(rx_ring[port][q]);
	}
	for (unsigned int r = 0; r < TX_RINGS; r++) {
		snprintf(name, sizeof(name), "txr%u_%u", port, r);
		tx_ring[port][r] = rte_ring_create(name, 4096, SOCKET_ID_ANY,
						   RING_F_SP_ENQ | RING_F_SC_DEQ);
		assert_non_null(tx_ring[port][r]);
	}
	snprintf(name, sizeof(name), "r%u", port);
	assert_true(rte_eth_from_rings(name, rx_ring[port], queues, tx_ring[port],
				       TX_RINGS, SOCKET_ID_ANY) >= 0);
}

static void
drain_tx(void)
{
	struct rte_mbuf *out[64];
	unsigned int n;

	for (uint16_t p = 0; p < NB_PORTS; p++)
		for (unsigned int r = 0; r < TX_RINGS; r++)
			while ((n = rte_ring_dequeue_burst(tx_ring[p][r], (void **)out,
							   RTE_DIM(out), NULL)) != 0)
				rte_pktmbuf_free_bulk(out, n);
}

static int
setup(void **state)
{
	char *const overrides[] = {
		"port.0.device=net_ring_r0", "port.0.address=198.18.0.1/24",
		"port.0.rxd=1024", "port.0.txd=256",
		"port.1.device=net_ring_r1", "port.1.address=198.18.1.1/24",
		"port.1.rxd=1024", "port.1.txd=256",
		"stats.period=0", "worker.thread.groups=2",
	};
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN];
	int dev;

	(void)state;
	for (uint16_t p = 0; p < NB_PORTS; p++)
		make_ring_port(p);
	test_pool = rte_pktmbuf_pool_create("test_pool", TEST_POOL_MBUFS, 0, 0,
					    RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(test_pool);
	dev = droce_gpu_host_create("droce_host0", NULL);
	assert_true(dev >= 0);
	host_dev = (int16_t)dev;
	if (droce_conf_load(&conf, NULL, overrides, RTE_DIM(overrides), err,
			    sizeof(err)) != 0)
		fail_msg("%s", err);
	if (droce_lcores_layout(&conf, "--lcores (test)", &layout, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	stack = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (stack == NULL)
		fail_msg("%s", err);
	rx = droce_rx_create(stack, err, sizeof(err));
	if (rx == NULL)
		fail_msg("%s", err);
	for (uint16_t p = 0; p < NB_PORTS; p++)
		droce_port_mac(stack, p, &our_mac[p]);
	assert_int_equal(droce_stack_start(stack, false), 0);
	poll_all();
	drain_tx();    /* gratuitous ARPs */
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	droce_stack_stop(stack);
	droce_rx_destroy(rx);
	droce_stack_destroy(stack);
	rte_gpu_close(host_dev);
	return 0;
}

/* ---- start() and the getters ----------------------------------------- */

static void
expect_start_error(struct fixture *f, const struct droce_rx_params *p, int ret,
		   const char *msg)
{
	char err[256];

	assert_int_equal(droce_rx_stream_start(f->st, p, err, sizeof(err)), ret);
	if (strstr(err, msg) == NULL)
		fail_msg("start error \"%s\" does not say \"%s\"", err, msg);
	/* Refused: not started (or still running as before, for -EBUSY). */
	assert_int_equal(atomic_load(&f->st->started), ret == -EBUSY);
}

static void
test_start_errors(void **state)
{
	struct droce_rx_frame_info info;
	struct droce_rx_params p;
	struct droce_gpu_buf small;
	struct fixture f, g;
	char err[256];

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 4);
	/* Before any start: no monitor, no frames, close does nothing. */
	assert_int_equal(droce_rx_stream_blocking_monitor(f.st), -EINVAL);
	rte_errno = 0;
	assert_false(droce_rx_stream_get_next_frame(f.st, 10, &info));
	assert_int_equal(rte_errno, EINVAL);
	droce_rx_stream_close(f.st);
	assert_false(droce_rx_stream_frames_ready(f.st));
	rte_errno = 0;
	assert_int_equal(droce_rx_stream_qp_number(f.st), 0);
	assert_int_equal(rte_errno, EINVAL);
	rte_errno = 0;
	assert_int_equal(droce_rx_stream_rkey(f.st), 0);
	assert_int_equal(rte_errno, EINVAL);
	assert_false(droce_rx_stream_receive_path_failed(f.st));

	p = f.params; p.pages = 0;
	expect_start_error(&f, &p, -EINVAL, "0 pages; allowed: 1..4096");
	p = f.params; p.pages = 4097;
	expect_start_error(&f, &p, -EINVAL, "4097 pages; allowed: 1..4096");
	p = f.params; p.imm = DROCE_HSB_IMM_LITE; p.pages = 257;
	expect_start_error(&f, &p, -EINVAL, "hsb-lite immediate names at most 256");
	/* An offset so large that offset + 128 wraps: refused, not a page
	 * size that seems to hold it.
	 */
	p = f.params; p.metadata_offset = SIZE_MAX - 127; p.page_size = 128;
	expect_start_error(&f, &p, -EINVAL, "metadata offset");
	p = f.params; p.reorder_window = 100;
	expect_start_error(&f, &p, -EINVAL, "reorder window 100; allowed: 0 (off) or a power of two");
	p = f.params; p.frame_size = 0;
	expect_start_error(&f, &p, -EINVAL, "frame size 0");
	p = f.params; p.metadata_offset = 4992;
	expect_start_error(&f, &p, -EINVAL, "metadata offset 4992: allowed: a multiple of 128, at least the frame size 5000");
	p = f.params; p.metadata_offset = 5121;
	expect_start_error(&f, &p, -EINVAL, "metadata offset 5121");
	p = f.params; p.page_size = 5200;
	expect_start_error(&f, &p, -EINVAL, "page size 5200: allowed: a multiple of 128, at least metadata offset + 128 = 5248");
	p = f.params; p.queue_size = 0;
	expect_start_error(&f, &p, -EINVAL, "queue size 0; allowed: 1..65536");
	p = f.params; p.qp = 1;
	expect_start_error(&f, &p, -EINVAL, "QP 0x1; allowed: 0 (droce picks), 2..0xffffff");
	p = f.params; p.qp = 0x1000000;
	expect_start_error(&f, &p, -EINVAL, "QP 0x1000000");
	p = f.params; p.peer_ip = "198.18.0";
	expect_start_error(&f, &p, -EINVAL, "peer_ip \"198.18.0\" is not a valid IPv4 address");
	p = f.params; p.peer_ip = NULL;
	expect_start_error(&f, &p, -EINVAL, "peer_ip \"(none)\"");
	p = f.params; p.port = 2;
	expect_start_error(&f, &p, -ENODEV, "port 2: no such port; allowed: 0..1");
	p = f.params; p.device = "net_ring_nope";
	expect_start_error(&f, &p, -ENODEV, "device \"net_ring_nope\": not a port of this stack");
	p = f.params; p.icrc = (enum droce_rx_icrc)7;
	expect_start_error(&f, &p, -EINVAL, "ICRC mode 7; allowed: on, fused, off");
	p = f.params; p.copy_stores = (enum droce_copy_stores)5;
	expect_start_error(&f, &p, -EINVAL, "copy stores 5; allowed: streaming, cached");
	p = f.params; p.imm = (enum droce_hsb_imm)9;
	expect_start_error(&f, &p, -EINVAL, "immediate format 9");
	p = f.params; p.buf = NULL;
	expect_start_error(&f, &p, -EINVAL, "no frame buffer");
	small = f.g.buf;
	small.size = f.layout.page_size * PAGES - 1;
	p = f.params; p.buf = &small;
	expect_start_error(&f, &p, -EINVAL, "");
	/* The message of the buffer check names both sizes. */
	assert_int_equal(droce_rx_stream_start(f.st, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "20991"));

	/* Started: a second start is refused, the QP cannot be shared. */
	p = f.params; p.qp = 0x4242; p.rkey = 0x1234;
	assert_int_equal(droce_rx_stream_start(f.st, &p, err, sizeof(err)), 0);
	assert_int_equal(droce_rx_stream_qp_number(f.st), 0x4242);
	assert_int_equal(droce_rx_stream_rkey(f.st), 0x1234);
	assert_int_equal(droce_rx_stream_external_frame_memory(f.st), 0);
	assert_int_equal(droce_rx_stream_frame_size(f.st), FRAME);
	assert_int_equal(droce_rx_stream_page_size(f.st), f.layout.page_size);
	assert_int_equal(droce_rx_stream_pages(f.st), PAGES);
	expect_start_error(&f, &p, -EBUSY, "is running; close it first");
	assert_true(atomic_load(&f.st->started));
	fixture_init(&g, 0, FRAME, PAGES, 4);
	p.buf = &g.g.buf;
	expect_start_error(&g, &p, -EEXIST, "QP 0x4242 is another stream's");
	/* Picked QP and rkey: distinct, valid, and the device name works. */
	p.qp = 0;
	p.rkey = 0;
	p.device = "net_ring_r0";
	assert_int_equal(droce_rx_stream_start(g.st, &p, err, sizeof(err)), 0);
	assert_int_not_equal(droce_rx_stream_qp_number(g.st), 0x4242);
	assert_true(droce_rx_stream_qp_number(g.st) >= 2 &&
		    droce_rx_stream_qp_number(g.st) <= DROCE_QPN_MASK);
	assert_int_not_equal(droce_rx_stream_rkey(g.st), 0);
	fixture_fini(&g);
	fixture_fini(&f);
}

/* ---- frames: content, order, info ------------------------------------ */

static void
test_frames_in_order_byte_exact(void **state)
{
	struct droce_rx_frame_info info;
	struct droce_rx_stream_stats s;
	struct timespec now;
	struct fixture f;
	uint64_t now_ns;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 16);
	f.params.pkey = 0;   /* 0xffff */
	start(&f);
	monitor_start(&f);
	assert_false(droce_rx_stream_frames_ready(f.st));
	for (int i = 0; i < 6; i++)
		send_frame(&f);
	assert_true(droce_rx_stream_frames_ready(f.st));
	clock_gettime(CLOCK_REALTIME, &now);
	now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	for (uint32_t i = 0; i < 6; i++) {
		uint32_t page = i % PAGES, psn = 5 * i + 4;

		take(&f, &info);
		assert_int_equal(info.sequence, i + 1);
		assert_int_equal(info.page, page);
		assert_int_equal(info.frame_memory,
				 (uint64_t)(uintptr_t)f.g.buf.gpu + page * f.layout.page_size);
		assert_int_equal(info.metadata_memory, info.frame_memory + 5120);
		assert_int_equal(info.psn, psn);
		assert_int_equal(info.immediate, psn << 12 | page);
		assert_int_equal(info.packets, 5);
		assert_int_equal(info.bytes, FRAME + 128);
		assert_int_equal(info.lost_packets, 0);
		assert_false(info.lossy);
		assert_int_equal(info.dropped, 0);
		/* Pages 0 and 1 were written again by frames 5 and 6. */
		assert_int_equal(info.overwritten, i < 2);
		assert_true(info.metadata.present);
		assert_int_equal(info.metadata.psn, psn);
		assert_int_equal(info.metadata.frame_number, i);
		assert_int_equal(info.metadata.bytes_written, FRAME);
		assert_int_equal(info.metadata.timestamp_s, 1700000000);
		assert_int_equal(info.metadata.timestamp_ns, 123);
		assert_true(info.received_tsc != 0);
		/* CLOCK_REALTIME from the TSC: within a second of now. */
		assert_true(info.received_ns + 1000000000ull > now_ns &&
			    info.received_ns < now_ns + 1000000000ull);
	}
	/* The metadata's CRC is the frame's, as the device computes it. */
	assert_int_equal(info.metadata.crc,
			 droce_hsb_frame_crc((uint8_t *)f.g.buf.cpu + f.layout.page_size,
					     FRAME));
	assert_false(droce_rx_stream_frames_ready(f.st));
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.frames, 6);
	assert_int_equal(s.packets, 30);
	assert_int_equal(s.bytes, 6 * (FRAME + 128));
	assert_int_equal(s.frames_dropped, 0);
	guarded_check(&f.g);
	fixture_fini(&f);
}

static void
test_queue_discards_oldest(void **state)
{
	struct droce_rx_frame_info info;
	struct droce_rx_stream_stats s;
	struct fixture f;

	(void)state;
	fixture_running(&f, 2);
	for (int i = 0; i < 5; i++)
		send_frame(&f);
	/* Frames 1..3 were recycled for 4 and 5, oldest first. */
	take(&f, &info);
	assert_int_equal(info.sequence, 4);
	assert_int_equal(info.dropped, 3);
	take(&f, &info);
	assert_int_equal(info.sequence, 5);
	assert_int_equal(info.dropped, 3);
	expect_no_frame(&f);
	send_frame(&f);
	take(&f, &info);
	assert_int_equal(info.sequence, 6);
	assert_int_equal(info.dropped, 3);   /* cumulative */
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.frames_dropped, 3);
	fixture_fini(&f);
}

struct slow_consumer {
	struct droce_rx_stream *st;
	struct droce_rx_frame_info taken;
	atomic_bool holding;
};

/* What get_next_frame() does, with a pause inside the stream's lock before
 * the frame is taken: a consumer that the worker catches mid-take.
 */
static void *
take_slowly(void *arg)
{
	struct slow_consumer *c = arg;

	pthread_mutex_lock(&c->st->lock);
	atomic_store(&c->holding, true);
	usleep(100 * 1000);
	assert_int_equal(rte_ring_mc_dequeue_elem(c->st->frames, &c->taken, sizeof(c->taken)), 0);
	pthread_mutex_unlock(&c->st->lock);
	return NULL;
}

/* The queue is full while the application is taking a frame: the frame
 * it takes makes the room, and no frame is dropped for it.
 */
static void
test_full_queue_waits_for_a_consumer_mid_take(void **state)
{
	struct slow_consumer c = { .holding = false };
	struct droce_rx_frame_info info;
	struct droce_rx_stream_stats s;
	struct fixture f;
	pthread_t consumer;

	(void)state;
	fixture_running(&f, 2);
	send_frame(&f);
	send_frame(&f);
	c.st = f.st;
	assert_int_equal(pthread_create(&consumer, NULL, take_slowly, &c), 0);
	while (!atomic_load(&c.holding))
		usleep(100);
	send_frame(&f);
	assert_int_equal(pthread_join(consumer, NULL), 0);
	assert_int_equal(c.taken.sequence, 1);
	take(&f, &info);
	assert_int_equal(info.sequence, 2);
	take(&f, &info);
	assert_int_equal(info.sequence, 3);
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.frames_dropped, 0);
	fixture_fini(&f);
}

static void
test_frames_only_while_monitoring(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 4);
	start(&f);
	send_frame(&f);      /* placed, but no monitor: not delivered */
	assert_false(droce_rx_stream_frames_ready(f.st));
	expect_no_frame(&f);
	monitor_start(&f);
	send_frame(&f);
	take(&f, &info);
	assert_int_equal(info.sequence, 2);
	assert_int_equal(info.dropped, 1);
	fixture_fini(&f);
}

struct callback_log {
	pthread_t thread[64];
	atomic_uint calls;
};

static void
frame_ready(void *arg)
{
	struct callback_log *log = arg;
	unsigned int n = atomic_load(&log->calls);

	if (n < RTE_DIM(log->thread))
		log->thread[n] = pthread_self();
	atomic_store(&log->calls, n + 1);
}

static void
wait_calls(struct callback_log *log, unsigned int n)
{
	for (int i = 0; i < 100000 && atomic_load(&log->calls) < n; i++)
		usleep(10);
	assert_int_equal(atomic_load(&log->calls), n);
}

static void
test_callback_on_monitor_thread(void **state)
{
	struct callback_log log = { .calls = 0 };
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 4);
	/* Registered before start; stays across starts. */
	droce_rx_stream_set_frame_ready(f.st, frame_ready, &log);
	for (int run = 0; run < 2; run++) {
		start(&f);
		monitor_start(&f);
		send_frame(&f);
		send_frame(&f);
		wait_calls(&log, 2 * (unsigned int)run + 2);
		for (unsigned int i = 0; i < atomic_load(&log.calls); i++)
			assert_true(run == 1 && i < 2 ? true
				    : pthread_equal(log.thread[i], f.monitor));
		take(&f, &info);
		take(&f, &info);
		close_stream(&f);
	}
	/* Stopped: no more calls. */
	droce_rx_stream_set_frame_ready(f.st, NULL, NULL);
	start(&f);
	monitor_start(&f);
	send_frame(&f);
	take(&f, &info);
	assert_int_equal(atomic_load(&log.calls), 4);
	fixture_fini(&f);
}

/* A frame-ready callback that keeps the monitor thread until released. */
struct held_callback {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, release;
};

static void
hold_monitor(void *arg)
{
	struct held_callback *h = arg;

	pthread_mutex_lock(&h->lock);
	h->entered = true;
	pthread_cond_broadcast(&h->cond);
	while (!h->release)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

/* A monitor of an earlier run that returns late (it was in a callback
 * while the stream was closed, started and monitored again) leaves the
 * new run's monitoring alone: its frames still arrive.
 */
static void
test_late_monitor_leaves_next_run(void **state)
{
	struct held_callback h = { .entered = false, .release = false };
	struct droce_rx_frame_info info;
	pthread_t old_monitor;
	struct fixture f;

	(void)state;
	pthread_mutex_init(&h.lock, NULL);
	pthread_cond_init(&h.cond, NULL);
	fixture_init(&f, 0, FRAME, PAGES, 4);
	droce_rx_stream_set_frame_ready(f.st, hold_monitor, &h);
	start(&f);
	monitor_start(&f);
	send_frame(&f);
	pthread_mutex_lock(&h.lock);
	while (!h.entered)
		pthread_cond_wait(&h.cond, &h.lock);
	pthread_mutex_unlock(&h.lock);
	/* The first monitor is in the callback: close, start, monitor. */
	old_monitor = f.monitor;
	f.monitor_running = false;
	droce_rx_stream_close(f.st);
	droce_rx_stream_set_frame_ready(f.st, NULL, NULL);
	start(&f);
	monitor_start(&f);
	pthread_mutex_lock(&h.lock);
	h.release = true;
	pthread_cond_broadcast(&h.cond);
	pthread_mutex_unlock(&h.lock);
	assert_int_equal(pthread_join(old_monitor, NULL), 0);
	assert_true(droce_rx_stream_monitoring(f.st));
	send_frame(&f);
	take(&f, &info);
	assert_int_equal(info.sequence, 1);
	fixture_fini(&f);
	pthread_cond_destroy(&h.cond);
	pthread_mutex_destroy(&h.lock);
}

struct waiter {
	struct droce_rx_stream *st;
	bool got;
	double seconds;
};

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct droce_rx_frame_info info;
	double t0 = now_s();

	w->got = droce_rx_stream_get_next_frame(w->st, 5000, &info);
	w->seconds = now_s() - t0;
	return NULL;
}

static void
test_close_while_monitoring(void **state)
{
	struct waiter w;
	struct fixture f;
	pthread_t t;

	(void)state;
	fixture_running(&f, 4);
	/* A consumer waiting in get_next_frame() returns at close. */
	w.st = f.st;
	assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
	usleep(50000);
	close_stream(&f);     /* from this thread, the monitor returns 0 */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_false(w.got);
	assert_true(w.seconds < 2.0);
	/* Closed: the QP is gone and its packets are counted, not placed. */
	send_frame_faulty(&f, NULL, NULL, false);
	{
		uint64_t r[DROCE_RX_REFUSAL_MAX];

		droce_rx_refusals(rx, r);
		assert_true(r[DROCE_RX_UNKNOWN_QP] >= 5);
	}
	droce_rx_stream_close(&f.st[0]);   /* twice is harmless */
	fixture_fini(&f);
}

static void
test_get_next_frame_timeout(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;
	double t0, dt;

	(void)state;
	fixture_running(&f, 4);
	t0 = now_s();
	assert_false(droce_rx_stream_get_next_frame(f.st, 100, &info));
	dt = now_s() - t0;
	assert_true(dt >= 0.09 && dt < 2.0);
	fixture_fini(&f);
}

/* ---- fatal events ----------------------------------------------------- */

/* What a PMD calls to report an event (ethdev_driver.h, which Debian's
 * DPDK does not install; the symbols are exported as INTERNAL).
 */
struct rte_eth_dev;
struct rte_eth_dev *rte_eth_dev_allocated(const char *name);
int rte_eth_dev_callback_process(struct rte_eth_dev *dev,
				 enum rte_eth_event_type event, void *ret_param);

static void
pmd_event(const char *name, enum rte_eth_event_type event)
{
	struct rte_eth_dev *dev = rte_eth_dev_allocated(name);

	assert_non_null(dev);
	rte_eth_dev_callback_process(dev, event, NULL);
}

static void
expect_failed(struct fixture *f)
{
	struct droce_rx_frame_info info;
	double t0 = now_s();

	assert_true(droce_rx_stream_receive_path_failed(f->st));
	assert_true(droce_rx_stream_frames_ready(f->st));
	assert_false(droce_rx_stream_get_next_frame(f->st, 3000, &info));
	assert_true(now_s() - t0 < 0.5);     /* at once, not after 3 s */
}

static void
test_port_removed(void **state)
{
	struct droce_rx_stream_stats before;
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_running(&f, 4);
	send_frame(&f);
	/* The PMD's removal event, as DPDK delivers it. */
	pmd_event("net_ring_r0", RTE_ETH_EVENT_INTR_RMV);
	expect_failed(&f);
	/* The frame that waited will not be taken: dropped. */
	droce_rx_stream_stats(f.st, &before);
	assert_int_equal(before.frames_dropped, 1);
	/* Nothing arrives until start again. */
	droce_rx_stream_stats(f.st, &before);
	send_frame_faulty(&f, NULL, NULL, false);
	expect_refusals(&f, &before, DROCE_RX_NOT_STARTED, 5);
	expect_failed(&f);
	/* The monitor still runs until close; start again after it. */
	close_stream(&f);
	start(&f);
	assert_false(droce_rx_stream_receive_path_failed(f.st));
	monitor_start(&f);
	send_frame(&f);
	take(&f, &info);
	assert_int_equal(info.sequence, 1);
	assert_false(info.lossy);
	/* A reset is fatal too; start() after a failure needs no close(). */
	pmd_event("net_ring_r0", RTE_ETH_EVENT_INTR_RESET);
	expect_failed(&f);
	start(&f);         /* closes the failed run: its monitor returns */
	assert_int_equal(pthread_join(f.monitor, NULL), 0);
	f.monitor_running = false;
	assert_false(droce_rx_stream_receive_path_failed(f.st));
	monitor_start(&f);
	send_frame(&f);
	take(&f, &info);
	assert_false(info.lossy);
	fixture_fini(&f);
}

static void
test_port_failed_only_its_streams(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture a, b;

	(void)state;
	fixture_init(&a, 0, FRAME, PAGES, 4);
	fixture_init(&b, 1, FRAME, PAGES, 4);
	start(&a);
	start(&b);
	monitor_start(&b);
	droce_rx_port_failed(rx, 0);
	assert_true(droce_rx_stream_receive_path_failed(a.st));
	assert_false(droce_rx_stream_receive_path_failed(b.st));
	send_frame(&b);
	take(&b, &info);
	fixture_fini(&b);
	fixture_fini(&a);
}

static void
test_placement_device_fails(void **state)
{
	struct fixture f;

	(void)state;
	fixture_running(&f, 4);
	assert_int_equal(droce_gpu_host_set_failed(host_dev, true), 0);
	/* The write barrier at the frame's end fails: fatal. The bytes did
	 * land (host memory), so the model takes them.
	 */
	send_frame(&f);
	poll_all();
	assert_int_equal(droce_gpu_host_set_failed(host_dev, false), 0);
	expect_failed(&f);
	/* The frame the engine did not finish counts as dropped. */
	{
		struct droce_rx_stream_stats s;

		droce_rx_stream_stats(f.st, &s);
		assert_int_equal(s.frames_dropped, 1);
	}
	close_stream(&f);
	start(&f);
	monitor_start(&f);
	send_frame(&f);
	{
		struct droce_rx_frame_info info;

		take(&f, &info);
		assert_false(info.lossy);
	}
	fixture_fini(&f);
}

/* ---- loss, duplicates, overwrite ---------------------------------------- */

/* Packets in [from, to) of one frame are lost; with @p bad_imm its
 * metadata packet names a page out of range (refused, lands nothing).
 */
struct lose_range {
	unsigned int from, to;
	bool bad_imm;
};

static bool
drop_range(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	const struct lose_range *r = arg;

	if (r->bad_imm && (spec->opcode & 0x1f) == DROCE_OP_WRITE_ONLY_IMM)
		spec->imm |= 0xfff;
	return i < r->from || i >= r->to;
}

/* Send a frame with @p r's losses; the model keeps old bytes there. */
static void
send_frame_lossy(struct fixture *f, const struct lose_range *r)
{
	uint32_t page = f->tx.page;
	size_t page_size = f->layout.page_size;
	uint8_t *old = malloc(page_size);

	assert_non_null(old);
	memcpy(old, f->g.model + page * page_size, page_size);
	send_frame_faulty(f, drop_range, (void *)(uintptr_t)r, true);
	for (unsigned int i = 0; i * PAYLOAD < FRAME + PAYLOAD; i++) {
		size_t off = i * PAYLOAD < FRAME ? i * PAYLOAD : f->layout.metadata_offset;
		size_t len = i * PAYLOAD < FRAME ? RTE_MIN((size_t)PAYLOAD, FRAME - off)
						 : DROCE_HSB_METADATA_SIZE;

		if ((i >= r->from && i < r->to) || (r->bad_imm && i * PAYLOAD >= FRAME))
			model_data(f, page, off, old + off, len);
	}
	free(old);
}

static void
send_frame_losing(struct fixture *f, unsigned int from, unsigned int to)
{
	send_frame_lossy(f, &(struct lose_range){ .from = from, .to = to });
}

static void
test_loss_flags_frame(void **state)
{
	struct droce_rx_frame_info info;
	struct droce_rx_stream_stats s;
	struct fixture f;

	(void)state;
	fixture_running(&f, 8);
	send_frame(&f);
	send_frame_losing(&f, 1, 2);
	send_frame(&f);
	take(&f, &info);
	assert_false(info.lossy);
	take(&f, &info);
	assert_true(info.lossy);
	assert_int_equal(info.lost_packets, 1);
	assert_int_equal(info.packets, 4);
	assert_int_equal(info.bytes, FRAME + 128 - PAYLOAD);
	take(&f, &info);
	assert_false(info.lossy);
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.lost_packets, 1);
	assert_int_equal(s.frames_lossy, 1);
	fixture_fini(&f);
}

static void
test_lost_end_of_frame(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_running(&f, 8);
	send_frame_losing(&f, 4, 5);    /* the metadata packet */
	/* The frame ends when the next one starts elsewhere: lossy. */
	send_frame(&f);
	take(&f, &info);
	assert_int_equal(info.page, 0);
	assert_true(info.lossy);
	assert_int_equal(info.lost_packets, 1);
	assert_false(info.metadata.present);
	take(&f, &info);
	assert_int_equal(info.page, 1);
	assert_false(info.lossy);
	fixture_fini(&f);
}

/* A gap across the end of one frame and the start of the next: both are
 * lossy, though the next one's own packets after the gap come in order.
 * So is a frame whose start came before the stream saw its first packet.
 */
static void
test_lost_start_of_frame(void **state)
{
	/* Of 5 packets each: 4 of data (the last one short), then metadata. */
	static const struct {
		uint64_t packets, lost;
		bool lossy, metadata;
	} want[] = {
		{ 3, 0, true, true },   /* the stream started at its third */
		{ 3, 2, true, false },  /* a gap took its last two */
		{ 4, 1, true, true },   /* and this one's first */
		{ 4, 1, true, false },  /* a gap took its metadata */
		{ 1, 4, true, true },   /* and all this one's data */
		{ 5, 0, false, true },
	};
	struct droce_rx_frame_info info;
	struct droce_rx_stream_stats s;
	struct fixture f;

	(void)state;
	fixture_running(&f, 8);
	send_frame_losing(&f, 0, 2);
	send_frame_losing(&f, 3, 5);
	send_frame_losing(&f, 0, 1);
	send_frame_losing(&f, 4, 5);
	send_frame_losing(&f, 0, 4);
	send_frame(&f);
	for (unsigned int i = 0; i < RTE_DIM(want); i++) {
		take(&f, &info);
		assert_int_equal(info.page, i % PAGES);
		assert_int_equal(info.lossy, want[i].lossy);
		assert_int_equal(info.metadata.present, want[i].metadata);
		assert_int_equal(info.packets, want[i].packets);
		assert_int_equal(info.lost_packets, want[i].lost);
	}
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.lost_packets, 8);
	assert_int_equal(s.frames_lossy, 5);
	fixture_fini(&f);
}

/* A packet refused after a gap is lost once: as the next gap's part. */
static void
test_refused_after_gap_lost_once(void **state)
{
	struct droce_rx_frame_info info;
	struct droce_rx_stream_stats s;
	struct fixture f;

	(void)state;
	fixture_running(&f, 8);
	send_frame_lossy(&f, &(struct lose_range){ .from = 3, .to = 4, .bad_imm = true });
	send_frame(&f);
	take(&f, &info);
	assert_true(info.lossy);
	assert_false(info.metadata.present);
	assert_int_equal(info.packets, 3);
	assert_int_equal(info.lost_packets, 2);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.lost_packets, 0);
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.refused[DROCE_RX_BAD_IMM_PAGE], 1);
	assert_int_equal(s.lost_packets, 2);
	fixture_fini(&f);
}

struct dup {
	struct fixture *f;
	unsigned int which;
};

static bool
duplicate_packet(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	struct dup *d = arg;

	if (i == d->which)
		inject(d->f->port, build(spec));
	return true;
}

/* Packets 1 and 2 swapped: 1 comes late, behind the PSN; with @p twice, 2
 * comes twice before it.
 */
struct swap {
	struct fixture *f;
	bool twice;
};

static bool
swap_packets(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	static struct droce_frame_spec held;
	const struct swap *sw = arg;

	if (i == 1) {
		held = *spec;
		return false;
	}
	inject(sw->f->port, build(spec));
	if (i == 2 && sw->twice)
		inject(sw->f->port, build(spec));
	if (i == 2)
		inject(sw->f->port, build(&held));
	return false;
}

static void
test_duplicates_and_reorder(void **state)
{
	struct droce_rx_stream_stats before;
	struct droce_rx_frame_info info;
	struct fixture f;
	struct dup d = { .f = &f, .which = 2 };

	(void)state;
	fixture_running(&f, 8);
	droce_rx_stream_stats(f.st, &before);
	send_frame_faulty(&f, duplicate_packet, &d, true);
	expect_refusals(&f, &before, DROCE_RX_STALE_PSN, 1);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.packets, 5);
	/* 1 and 2 swapped: 2 counts 1 lost, 1 then is late. UC cannot
	 * repair that; the frame is flagged. The late packet's bytes do not
	 * land (refused), the model keeps the old ones.
	 */
	{
		uint32_t page = f.tx.page;
		uint8_t old[PAYLOAD];

		memcpy(old, f.g.model + page * f.layout.page_size + PAYLOAD, PAYLOAD);
		droce_rx_stream_stats(f.st, &before);
		send_frame_faulty(&f, swap_packets, &(struct swap){ .f = &f }, true);
		model_data(&f, page, PAYLOAD, old, PAYLOAD);
	}
	expect_refusals(&f, &before, DROCE_RX_STALE_PSN, 1);
	take(&f, &info);
	assert_true(info.lossy);
	assert_int_equal(info.lost_packets, 1);
	fixture_fini(&f);
}

static void
test_overwritten_before_taken(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_init(&f, 0, FRAME, 2, 8);
	start(&f);
	monitor_start(&f);
	send_frame(&f);            /* page 0 */
	take(&f, &info);
	assert_false(info.overwritten);
	send_frame(&f);            /* page 1 */
	send_frame(&f);            /* page 0 again, frame 2 not taken yet */
	take(&f, &info);
	assert_int_equal(info.page, 1);
	assert_false(info.overwritten);
	take(&f, &info);
	assert_int_equal(info.page, 0);
	assert_false(info.overwritten);
	send_frame(&f);            /* 1 */
	send_frame(&f);            /* 0 */
	send_frame(&f);            /* 1: overwrites the first waiting one */
	take(&f, &info);
	assert_int_equal(info.page, 1);
	assert_true(info.overwritten);
	take(&f, &info);
	assert_false(info.overwritten);
	take(&f, &info);
	assert_false(info.overwritten);
	fixture_fini(&f);
}

static void
test_psn_wraps_at_20_bits(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_running(&f, 8);
	sensor_init(&f, DROCE_HSB_IMM_CURRENT, DROCE_HSB_PSN_MASK - 2);
	send_frame(&f);            /* PSNs 0xffffd..0xfffff, 0, 1 */
	send_frame(&f);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.psn, 1);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.psn, 6);
	fixture_fini(&f);
}

static void
test_hsb_lite_immediate_and_24_bit_psn(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.imm = DROCE_HSB_IMM_LITE;
	start(&f);
	monitor_start(&f);
	sensor_init(&f, DROCE_HSB_IMM_LITE, 0xfffffe);
	send_frame(&f);
	send_frame(&f);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.page, 0);
	assert_int_equal(info.psn, 2);
	assert_int_equal(info.immediate, 2u << 8 | 0);
	take(&f, &info);
	assert_int_equal(info.page, 1);
	assert_false(info.lossy);
	fixture_fini(&f);
}

static void
test_frame_number_extended(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;

	/* Numbers sent, and what they must read as: first a step back that
	 * would go below zero (read forward), then across the wrap, a frame
	 * late behind the one after it, a sensor started again.
	 */
	static const struct {
		uint16_t sent;
		uint64_t read;
	} numbers[] = {
		{ 2, 2 }, { 0xfffe, 0xfffe }, { 0xffff, 0xffff }, { 1, 0x10001 },
		{ 0, 0x10000 }, { 2, 0x10002 }, { 0x7000, 0x17000 }, { 0, 0x10000 },
		{ 1, 0x10001 },
	};

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, RTE_DIM(numbers));
	start(&f);
	monitor_start(&f);
	for (unsigned int i = 0; i < RTE_DIM(numbers); i++) {
		f.tx.frame_number = numbers[i].sent;
		send_frame(&f);
	}
	for (unsigned int i = 0; i < RTE_DIM(numbers); i++) {
		take(&f, &info);
		assert_int_equal(info.metadata.frame_number, numbers[i].read);
	}
	fixture_fini(&f);
}

/* ---- the hostile wire ------------------------------------------------- */

enum attack {
	WRONG_PEER, WRONG_QP, WRONG_RKEY, SEND_OPCODE, READ_OPCODE, WRONG_PKEY,
	BAD_ICRC, VA_BELOW, VA_ABOVE, VA_CROSSES_PAGE, HUGE_DMA_LENGTH,
	SHORT_DMA_LENGTH, IMM_PAGE_OUT_OF_RANGE, MIDDLE_WITHOUT_FIRST,
	PART_OF_BLOCK, ATTACK_MAX
};

static const struct {
	const char *name;
	enum droce_rx_refusal why;
} attacks[ATTACK_MAX] = {
	[WRONG_PEER] = { "wrong peer", DROCE_RX_WRONG_PEER },
	[WRONG_QP] = { "wrong QP", DROCE_RX_UNKNOWN_QP },
	[WRONG_RKEY] = { "wrong rkey", DROCE_RX_BAD_RKEY },
	[SEND_OPCODE] = { "SEND", DROCE_RX_BAD_OPCODE },
	[READ_OPCODE] = { "READ request", DROCE_RX_BAD_OPCODE },
	[WRONG_PKEY] = { "wrong P_Key", DROCE_RX_BAD_PKEY },
	[BAD_ICRC] = { "bad ICRC", DROCE_RX_BAD_ICRC },
	[VA_BELOW] = { "VA below the buffer", DROCE_RX_BAD_VA },
	[VA_ABOVE] = { "VA above the buffer", DROCE_RX_BAD_VA },
	[VA_CROSSES_PAGE] = { "VA..VA+len crosses a page", DROCE_RX_BAD_VA },
	[HUGE_DMA_LENGTH] = { "huge DMA length", DROCE_RX_BAD_VA },
	[SHORT_DMA_LENGTH] = { "DMA length shorter than the payload", DROCE_RX_BAD_LENGTH },
	[IMM_PAGE_OUT_OF_RANGE] = { "page in the immediate out of range", DROCE_RX_BAD_IMM_PAGE },
	[MIDDLE_WITHOUT_FIRST] = { "WRITE MIDDLE without FIRST", DROCE_RX_NO_MESSAGE },
	[PART_OF_BLOCK] = { "half of the metadata block", DROCE_RX_PARTIAL_METADATA },
};

struct attack_arg {
	enum attack a;
	struct fixture *f;
};

/* Turn every packet of a frame into the attack. */
static bool
make_attack(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	const struct attack_arg *aa = arg;
	const struct fixture *f = aa->f;
	uint64_t buf_end = (uint64_t)f->layout.page_size * f->layout.pages;
	static uint8_t junk[4096];

	memset(junk, 0xee, sizeof(junk));
	switch (aa->a) {
	case WRONG_PEER:
		spec->src_ip4 = ip("198.18.0.99");
		break;
	case WRONG_QP:
		spec->dest_qp ^= 0x800;
		break;
	case WRONG_RKEY:
		spec->rkey ^= 1;
		break;
	case SEND_OPCODE:
		spec->opcode = DROCE_OP_UC | DROCE_OP_SEND_ONLY;
		break;
	case READ_OPCODE:
		spec->opcode = DROCE_OP_RC | DROCE_OP_READ_REQUEST;
		spec->payload_len = 0;
		spec->payload = NULL;
		break;
	case WRONG_PKEY:
		spec->pkey = 0x8001;
		break;
	case BAD_ICRC:
		break;               /* corrupted after building */
	case VA_BELOW:
		spec->va = (uint64_t)-(int64_t)spec->payload_len;
		break;
	case VA_ABOVE:
		spec->va = buf_end + i * 128;
		break;
	case VA_CROSSES_PAGE:
		spec->va = f->layout.page_size - spec->payload_len / 2;
		break;
	case HUGE_DMA_LENGTH:
		spec->dma_len = 0xffffffffu;
		spec->opcode = (spec->opcode & 0xe0) | DROCE_OP_WRITE_FIRST;
		break;
	case SHORT_DMA_LENGTH:
		spec->dma_len = spec->payload_len - 1;
		break;
	case IMM_PAGE_OUT_OF_RANGE:
		if ((spec->opcode & 0x1f) != DROCE_OP_WRITE_ONLY_IMM)
			return false;
		spec->imm = (spec->imm & ~0xfffu) | 0xfff;
		break;
	case MIDDLE_WITHOUT_FIRST:
		spec->opcode = DROCE_OP_UC | DROCE_OP_WRITE_MIDDLE;
		break;
	case PART_OF_BLOCK:   /* its first half with bytes before, or its second */
		spec->va = f->layout.metadata_offset + (i % 2 ? 64 : -64);
		spec->payload_len = i % 2 ? 64 : 128;
		break;
	default:
		break;
	}
	if (aa->a != READ_OPCODE && aa->a != IMM_PAGE_OUT_OF_RANGE) {
		spec->payload = junk;
		spec->payload_len = RTE_MIN(spec->payload_len, sizeof(junk));
		if (aa->a != HUGE_DMA_LENGTH && aa->a != SHORT_DMA_LENGTH)
			spec->dma_len = spec->payload_len;
	}
	{
		struct rte_mbuf *m = build(spec);

		if (aa->a == BAD_ICRC)
			rte_pktmbuf_mtod_offset(m, uint8_t *, rte_pktmbuf_pkt_len(m) - 10)[0] ^= 0x40;
		inject(f->port, m);
	}
	return false;
}

static void
test_malicious_packets_write_nothing(void **state)
{
	for (int a = 0; a < ATTACK_MAX; a++) {
		struct droce_rx_stream_stats before, after;
		struct droce_rx_frame_info info;
		struct attack_arg aa;
		uint64_t r0[DROCE_RX_REFUSAL_MAX], r1[DROCE_RX_REFUSAL_MAX];
		uint64_t n;
		struct fixture f;

		(void)state;
		fixture_init(&f, 0, FRAME, PAGES, 8);
		start(&f);
		monitor_start(&f);
		send_frame(&f);
		take(&f, &info);
		aa.a = (enum attack)a;
		aa.f = &f;
		droce_rx_stream_stats(f.st, &before);
		droce_rx_refusals(rx, r0);
		send_frame_faulty(&f, make_attack, &aa, false);
		droce_rx_stream_stats(f.st, &after);
		droce_rx_refusals(rx, r1);
		n = a == IMM_PAGE_OUT_OF_RANGE ? 1 : 5;
		if (attacks[a].why == DROCE_RX_UNKNOWN_QP) {
			assert_int_equal(r1[DROCE_RX_UNKNOWN_QP] - r0[DROCE_RX_UNKNOWN_QP], n);
		} else {
			print_message("  %-40s refused as %s\n", attacks[a].name,
				      droce_rx_refusal_name(attacks[a].why));
			expect_refusals(&f, &before, attacks[a].why, n);
		}
		assert_int_equal(after.packets, before.packets);
		assert_int_equal(after.bytes, before.bytes);
		/* No frame, no byte anywhere (the model is unchanged). */
		expect_no_frame(&f);
		guarded_check(&f.g);
		/* And the stream still works. */
		sensor_init(&f, DROCE_HSB_IMM_CURRENT, f.tx.psn);
		f.tx.page = 1;
		send_frame(&f);
		take(&f, &info);
		assert_int_equal(info.page, 1);
		fixture_fini(&f);
	}
}

/* ---- the fast path against the general path ---------------------------- */

/* What is done to one packet in the middle of a frame, where the fast
 * path looks at it: the packets before it in its burst were its stream's.
 */
enum variation {
	V_NONE, V_DROPPED, V_WRONG_PEER, V_WRONG_QP, V_WRONG_RKEY, V_WRONG_PKEY,
	V_SEND, V_RC_WRITE, V_WRITE_FIRST, V_WRITE_MIDDLE, V_WRITE_ONLY_IMM,
	V_BAD_ICRC, V_TVER, V_ODD_LENGTH, V_SHORT_DMA, V_LONG_DMA, V_VA_BELOW,
	V_VA_ABOVE, V_VA_CROSSES_PAGE, V_VA_NEXT_PAGE, V_BAD_IN_NEXT_PAGE,
	V_PART_OF_BLOCK, V_WHOLE_BLOCK, V_PSN_AHEAD, V_PSN_AGAIN, V_OTHER_WORKER, V_MAX
};

static const char *const variation_name[V_MAX] = {
	[V_NONE] = "none", [V_DROPPED] = "dropped", [V_WRONG_PEER] = "wrong peer",
	[V_WRONG_QP] = "wrong QP", [V_WRONG_RKEY] = "wrong rkey",
	[V_WRONG_PKEY] = "wrong P_Key", [V_SEND] = "SEND ONLY",
	[V_RC_WRITE] = "RC WRITE ONLY", [V_WRITE_FIRST] = "WRITE FIRST",
	[V_WRITE_MIDDLE] = "WRITE MIDDLE", [V_WRITE_ONLY_IMM] = "WRITE ONLY with immediate",
	[V_BAD_ICRC] = "bad ICRC", [V_TVER] = "transport version 1",
	[V_ODD_LENGTH] = "odd length (pad)", [V_SHORT_DMA] = "DMA length short",
	[V_LONG_DMA] = "DMA length long", [V_VA_BELOW] = "VA below the buffer",
	[V_VA_ABOVE] = "VA above the buffer", [V_VA_CROSSES_PAGE] = "VA crosses a page",
	[V_VA_NEXT_PAGE] = "VA in the next page",
	[V_BAD_IN_NEXT_PAGE] = "bad ICRC in the next page, then a good one there",
	[V_PART_OF_BLOCK] = "part of the block", [V_WHOLE_BLOCK] = "the whole block",
	[V_PSN_AHEAD] = "PSN one ahead", [V_PSN_AGAIN] = "PSN of the packet before",
	[V_OTHER_WORKER] = "the rest of the frame to the other worker",
};

struct variation_arg {
	enum variation v;
	unsigned int packet;
	struct fixture *f;
};

static bool
vary_one(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	const struct variation_arg *va = arg;
	const struct fixture *f = va->f;
	uint64_t base = droce_rx_stream_external_frame_memory(f->st);
	uint64_t page_size = f->layout.page_size;
	uint64_t page_start = base + (spec->va - base) / page_size * page_size;
	struct rte_mbuf *m;

	/* The packet after it goes to the next page too, with its PSN:
	 * the refused one did not use it up.
	 */
	if (va->v == V_BAD_IN_NEXT_PAGE && i == va->packet + 1) {
		spec->va = base + (spec->va - base + page_size) % (page_size * f->layout.pages);
		spec->psn = (spec->psn - 1) & DROCE_HSB_PSN_MASK;
		return true;
	}
	/* The packet again on the other worker's queue, and the packets
	 * after it only there: that worker hands them over to the owner.
	 */
	if (va->v == V_OTHER_WORKER && i >= va->packet) {
		if (i == va->packet)
			inject(f->port, build(spec));
		inject_queue(f->port, 1, build(spec));
		return false;
	}
	if (i != va->packet || va->v == V_NONE)
		return true;
	switch (va->v) {
	case V_DROPPED:
		return false;
	case V_WRONG_PEER:
		spec->src_ip4 = ip("198.18.0.99");
		break;
	case V_WRONG_QP:
		spec->dest_qp ^= 0x800;
		break;
	case V_WRONG_RKEY:
		spec->rkey ^= 1;
		break;
	case V_WRONG_PKEY:
		spec->pkey = 0x8001;
		break;
	case V_SEND:
		spec->opcode = DROCE_OP_UC | DROCE_OP_SEND_ONLY;
		break;
	case V_RC_WRITE:
		spec->opcode = DROCE_OP_RC | DROCE_OP_WRITE_ONLY;
		break;
	case V_WRITE_FIRST:
		spec->opcode = DROCE_OP_UC | DROCE_OP_WRITE_FIRST;
		spec->dma_len = 2 * spec->payload_len;
		break;
	case V_WRITE_MIDDLE:
		spec->opcode = DROCE_OP_UC | DROCE_OP_WRITE_MIDDLE;
		break;
	case V_WRITE_ONLY_IMM:
		spec->opcode = DROCE_OP_UC | DROCE_OP_WRITE_ONLY_IMM;
		spec->imm = f->tx.page;
		break;
	case V_ODD_LENGTH:
		spec->payload_len--;
		spec->dma_len = spec->payload_len;
		break;
	case V_SHORT_DMA:
		spec->dma_len--;
		break;
	case V_LONG_DMA:
		spec->dma_len += 4;
		break;
	case V_VA_BELOW:
		spec->va = base - spec->payload_len;
		break;
	case V_VA_ABOVE:
		spec->va = base + page_size * f->layout.pages + 128;
		break;
	case V_VA_CROSSES_PAGE:
		spec->va = page_start + page_size - spec->payload_len / 2;
		break;
	case V_VA_NEXT_PAGE:
	case V_BAD_IN_NEXT_PAGE:
		spec->va = base + (spec->va - base + page_size) % (page_size * f->layout.pages);
		break;
	case V_PART_OF_BLOCK:
	case V_WHOLE_BLOCK:
		spec->va = page_start + f->layout.metadata_offset -
			   (va->v == V_PART_OF_BLOCK ? 64 : 0);
		spec->payload_len = DROCE_HSB_METADATA_SIZE;
		spec->dma_len = spec->payload_len;
		break;
	case V_PSN_AHEAD:
		spec->psn = (spec->psn + 1) & DROCE_HSB_PSN_MASK;
		break;
	case V_PSN_AGAIN:
		spec->psn = (spec->psn - 1) & DROCE_HSB_PSN_MASK;
		break;
	default:
		break;
	}
	m = build(spec);
	if (va->v == V_BAD_ICRC || va->v == V_BAD_IN_NEXT_PAGE)
		rte_pktmbuf_mtod_offset(m, uint8_t *, rte_pktmbuf_pkt_len(m) - 10)[0] ^= 0x40;
	if (va->v == V_TVER) {
		struct droce_bth *bth = rte_pktmbuf_mtod_offset(m, struct droce_bth *,
				RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) +
				sizeof(struct rte_udp_hdr));

		bth->flags |= 1;
		assert_int_equal(droce_icrc_fill_mbuf(m, RTE_ETHER_HDR_LEN), 0);
	}
	inject(f->port, m);
	return false;
}

/* What a stream made of three frames, the second with a variation. */
struct rx_outcome {
	struct droce_rx_stream_stats stats;
	uint64_t unknown_qp;
	unsigned int frames;
	struct droce_rx_frame_info info[4];
	uint8_t *memory;
	uint64_t fast_taken;
};

static void
run_variation(enum variation v, enum droce_rx_icrc icrc, unsigned int pages,
	      unsigned int payload, bool fast, struct rx_outcome *o)
{
	uint64_t r0[DROCE_RX_REFUSAL_MAX], r1[DROCE_RX_REFUSAL_MAX];
	struct fixture f;
	struct variation_arg va = { .v = v, .packet = 2, .f = &f };
	uint64_t fast_before = rx->workers[0].fast_taken;

	memset(o, 0, sizeof(*o));
	rx_fast_path = fast;
	fixture_init(&f, 0, FRAME, pages, 8);
	f.params.icrc = icrc;
	f.payload = payload;
	start(&f);
	monitor_start(&f);
	droce_rx_refusals(rx, r0);
	/* The first two in one burst: the fast path looks on from one frame
	 * to the next. The third after the owner took the second (a packet
	 * handed over must be the next it expects).
	 */
	queue_frame(&f, NULL, NULL, false);
	queue_frame(&f, vary_one, &va, false);
	poll_all();
	queue_frame(&f, NULL, NULL, false);
	poll_all();
	while (o->frames < RTE_DIM(o->info) &&
	       droce_rx_stream_get_next_frame(f.st, 0, &o->info[o->frames]))
		o->frames++;
	droce_rx_stream_stats(f.st, &o->stats);
	droce_rx_refusals(rx, r1);
	o->unknown_qp = r1[DROCE_RX_UNKNOWN_QP] - r0[DROCE_RX_UNKNOWN_QP];
	o->fast_taken = rx->workers[0].fast_taken - fast_before;
	o->memory = malloc(f.g.size);
	assert_non_null(o->memory);
	memcpy(o->memory, f.g.buf.cpu, f.g.size);
	/* The variation's bytes are the two paths' to agree on, not the
	 * model's: only the guards are checked at the end.
	 */
	memcpy(f.g.model, f.g.buf.cpu, f.g.size);
	rx_fast_path = true;
	fixture_fini(&f);
}

#define SAME(field) \
	do { \
		if (a->field != b->field) \
			fail_msg("%s: %s %" PRIu64 " with the fast path, %" PRIu64 " without", \
				 what, #field, (uint64_t)a->field, (uint64_t)b->field); \
	} while (0)

static void
expect_same_outcome(const char *what, const struct rx_outcome *a, const struct rx_outcome *b,
		    size_t size)
{
	SAME(stats.frames);
	SAME(stats.frames_lossy);
	SAME(stats.frames_dropped);
	SAME(stats.packets);
	SAME(stats.bytes);
	SAME(stats.lost_packets);
	SAME(stats.held);
	SAME(stats.handed_over);
	SAME(stats.acks);
	for (int r = 0; r < DROCE_RX_REFUSAL_MAX; r++)
		if (a->stats.refused[r] != b->stats.refused[r])
			fail_msg("%s: refused as %s %" PRIu64 " with the fast path, %" PRIu64
				 " without", what, droce_rx_refusal_name(r), a->stats.refused[r],
				 b->stats.refused[r]);
	SAME(unknown_qp);
	SAME(frames);
	for (unsigned int i = 0; i < a->frames; i++) {
		SAME(info[i].page);
		SAME(info[i].immediate);
		SAME(info[i].psn);
		SAME(info[i].packets);
		SAME(info[i].bytes);
		SAME(info[i].lost_packets);
		SAME(info[i].lossy);
		SAME(info[i].overwritten);
		SAME(info[i].sequence);
		SAME(info[i].metadata.present);
		SAME(info[i].metadata.frame_number);
		SAME(info[i].metadata.crc);
	}
	if (memcmp(a->memory, b->memory, size) != 0)
		fail_msg("%s: the buffers differ", what);
}

/*
 * Each variation of a packet the fast path looks at, with the ICRC
 * checked first, in the copy and not at all, with frames in turns of
 * pages and all in one, with payloads that placement copies with
 * streaming stores and with payloads the fast path copies itself (128
 * bytes; 127 in the odd-length variation, 8 at the frame's end): the
 * fast path must leave the
 * same stream behind as the general path does alone (counters, frames,
 * every byte of the buffer). It must also have taken packets: a fast
 * path that never runs would agree too.
 */
static void
test_fast_path_judges_as_the_general_path(void **state)
{
	static const enum droce_rx_icrc modes[] = {
		DROCE_RX_ICRC_ON, DROCE_RX_ICRC_FUSED, DROCE_RX_ICRC_OFF,
	};
	static const unsigned int pages[] = { PAGES, 1 };
	static const unsigned int payloads[] = { PAYLOAD, 128 };

	(void)state;
	for (unsigned int k = 0; k < RTE_DIM(modes) * RTE_DIM(pages) * RTE_DIM(payloads); k++)
		for (int v = 0; v < V_MAX; v++) {
			enum droce_rx_icrc icrc = modes[k % RTE_DIM(modes)];
			unsigned int np = pages[k / RTE_DIM(modes) % RTE_DIM(pages)];
			unsigned int payload = payloads[k / (RTE_DIM(modes) * RTE_DIM(pages))];
			struct rx_outcome fast, general;
			struct droce_hsb_layout l;
			char what[160];

			droce_hsb_layout(FRAME, np, 4096, &l);
			snprintf(what, sizeof(what), "%s, ICRC %s, %u page%s, %u-byte payloads",
				 variation_name[v],
				 icrc == DROCE_RX_ICRC_ON ? "on" :
				 icrc == DROCE_RX_ICRC_FUSED ? "fused" : "off", np, np > 1 ? "s" : "",
				 payload);
			run_variation((enum variation)v, icrc, np, payload, true, &fast);
			run_variation((enum variation)v, icrc, np, payload, false, &general);
			expect_same_outcome(what, &fast, &general, l.buffer_size);
			/* Packets 1 to 3 of the frames before and after, and in
			 * the clean case the middle frame's too.
			 */
			if (fast.fast_taken < (v == V_NONE ? 9u : 4u))
				fail_msg("%s: the fast path took %" PRIu64 " packets", what,
					 fast.fast_taken);
			assert_int_equal(general.fast_taken, 0);
			free(fast.memory);
			free(general.memory);
		}
}

static void
test_truncated_and_not_roce(void **state)
{
	struct droce_frame_spec spec;
	struct droce_hsb_metadata md = { .psn = 0 };
	uint64_t r0[DROCE_RX_REFUSAL_MAX], r1[DROCE_RX_REFUSAL_MAX];
	struct fixture f;
	struct rte_mbuf *m;
	uint32_t cuts[] = { 60, 40, 30, 20 };

	(void)state;
	fixture_running(&f, 8);
	next_content(&f);
	droce_hsb_frame_begin(&f.tx, f.frame, &md);
	assert_true(droce_hsb_frame_next(&f.tx, &spec));
	droce_rx_refusals(rx, r0);
	/* The UDP and IP lengths say the same short length: the RoCE part
	 * cannot hold its headers or the payload its RETH promises.
	 */
	for (unsigned int c = 0; c < RTE_DIM(cuts); c++) {
		spec.payload_len = cuts[c];
		spec.dma_len = 1408;
		m = build(&spec);
		inject(0, m);
	}
	/* A frame cut at the end: IP says more than there is (net drops it). */
	spec.payload_len = 1408;
	m = build(&spec);
	rte_pktmbuf_trim(m, 700);
	inject(0, m);
	poll_all();
	droce_rx_refusals(rx, r1);
	/* Payload shorter than the DMA length of a WRITE ONLY. */
	assert_int_equal(refused(&f, DROCE_RX_BAD_LENGTH), 4);
	assert_int_equal(r1[DROCE_RX_NOT_ROCE], r0[DROCE_RX_NOT_ROCE]);
	expect_no_frame(&f);
	fixture_fini(&f);
}

/* ---- two streams, two ports --------------------------------------------- */

/* A stream started again with smaller pages: each address is placed by
 * the new layout, not by what the last run learnt of its pages.
 */
static void
test_restart_with_smaller_pages(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;
	size_t old_page;

	(void)state;
	fixture_running(&f, 8);
	for (uint32_t page = 0; page < 2; page++) {
		send_frame(&f);
		take(&f, &info);
		assert_int_equal(info.page, page);
	}
	close_stream(&f);
	/* Smaller pages in the same buffer, the first frame into the new
	 * page 2, which starts inside the old page 1, the last written.
	 */
	old_page = f.layout.page_size;
	droce_hsb_layout(3000, 3, 4096, &f.layout);
	assert_true(2 * f.layout.page_size > old_page && 2 * f.layout.page_size < 2 * old_page);
	f.params.frame_size = 3000;
	f.params.page_size = f.layout.page_size;
	f.params.pages = 3;
	f.params.metadata_offset = f.layout.metadata_offset;
	start(&f);
	monitor_start(&f);
	f.tx.page = 2;
	for (uint32_t k = 0; k < 3; k++) {
		uint32_t page = (2 + k) % 3;

		send_frame(&f);
		take(&f, &info);
		assert_int_equal(info.page, page);
		assert_int_equal(info.frame_memory,
				 (uint64_t)(uintptr_t)f.g.buf.gpu + page * f.layout.page_size);
		assert_int_equal(info.bytes, 3000 + 128);
		assert_false(info.lossy);
	}
	fixture_fini(&f);
}

static void
test_two_streams_one_port(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture a, b;

	(void)state;
	fixture_init(&a, 0, FRAME, PAGES, 8);
	fixture_init(&b, 0, 3000, 3, 8);
	start(&a);
	start(&b);
	assert_int_not_equal(droce_rx_stream_qp_number(a.st),
			     droce_rx_stream_qp_number(b.st));
	monitor_start(&a);
	monitor_start(&b);
	b.seed = 99;
	for (int i = 0; i < 3; i++) {
		send_frame(&a);
		send_frame(&b);
	}
	for (uint32_t i = 0; i < 3; i++) {
		take(&a, &info);
		assert_int_equal(info.sequence, i + 1);
		assert_int_equal(info.page, i);
		assert_false(info.lossy);
		assert_int_equal(info.bytes, FRAME + 128);
		take(&b, &info);
		assert_int_equal(info.sequence, i + 1);
		assert_int_equal(info.bytes, 3000 + 128);
		assert_int_equal(info.frame_memory,
				 (uint64_t)(uintptr_t)b.g.buf.gpu + i * b.layout.page_size);
		assert_false(info.lossy);
	}
	fixture_fini(&b);
	fixture_fini(&a);
}

/* One frame of @p f as packets, not injected, its packet @p corrupt (a
 * data packet) with its first payload byte flipped after the ICRC was
 * taken. The model takes the frame, that byte flipped if @p corrupt_lands,
 * else with none of that packet's bytes.
 */
static unsigned int
frame_packets(struct fixture *f, struct rte_mbuf **out, unsigned int max,
	      unsigned int corrupt, bool corrupt_lands)
{
	struct droce_hsb_metadata md = { .timestamp_s = 1700000000 };
	uint32_t page = f->tx.page;
	size_t off = (size_t)corrupt * PAYLOAD;
	size_t len = RTE_MIN((size_t)PAYLOAD, f->layout.frame_size - off);
	uint8_t *at = f->g.model + (size_t)page * f->layout.page_size + off;
	struct droce_frame_spec spec;
	uint8_t old[PAYLOAD];
	unsigned int n = 0;

	assert_true(off < f->layout.frame_size);
	next_content(f);
	md.bytes_written = f->layout.frame_size;
	droce_hsb_frame_begin(&f->tx, f->frame, &md);
	memcpy(old, at, len);
	model_data(f, page, 0, f->frame, f->layout.frame_size);
	model_data(f, page, f->layout.metadata_offset, f->tx.metadata, DROCE_HSB_METADATA_SIZE);
	if (corrupt_lands)
		at[0] ^= 0x01;
	else
		memcpy(at, old, len);
	while (droce_hsb_frame_next(&f->tx, &spec)) {
		assert_true(n < max);
		out[n] = build(&spec);
		if (n == corrupt)   /* first payload byte, after 14 + 20 + 8 + 12 + 16 */
			rte_pktmbuf_mtod_offset(out[n], uint8_t *, 70)[0] ^= 0x01;
		n++;
	}
	return n;
}

/* Two streams' packets alternating within one burst: each packet finds
 * its own stream though the one before was the other's, and an ICRC
 * verdict taken ahead for the next packet holds for that packet whatever
 * its stream (a is checked first; b first and then not at all).
 */
static void
test_two_streams_in_one_burst(void **state)
{
	static const enum droce_rx_icrc b_modes[] = { DROCE_RX_ICRC_ON, DROCE_RX_ICRC_OFF };

	(void)state;
	for (unsigned int k = 0; k < RTE_DIM(b_modes); k++) {
		struct rte_mbuf *pa[8], *pb[8];
		struct droce_rx_frame_info info;
		unsigned int na, nb;
		struct fixture a, b;

		fixture_init(&a, 0, FRAME, PAGES, 8);
		fixture_init(&b, 0, FRAME, PAGES, 8);
		b.params.icrc = b_modes[k];
		b.seed = 99;
		start(&a);
		start(&b);
		monitor_start(&a);
		monitor_start(&b);
		na = frame_packets(&a, pa, RTE_DIM(pa), 1, false);
		nb = frame_packets(&b, pb, RTE_DIM(pb), 2, b_modes[k] == DROCE_RX_ICRC_OFF);
		for (unsigned int i = 0; i < RTE_MAX(na, nb); i++) {
			if (i < na)
				inject(0, pa[i]);
			if (i < nb)
				inject(0, pb[i]);
		}
		poll_all();
		take(&a, &info);
		assert_true(info.lossy);
		assert_int_equal(info.packets, na - 1);
		assert_int_equal(refused(&a, DROCE_RX_BAD_ICRC), 1);
		take(&b, &info);
		assert_int_equal(info.lossy, b_modes[k] == DROCE_RX_ICRC_ON);
		assert_int_equal(info.packets, b_modes[k] == DROCE_RX_ICRC_ON ? nb - 1 : nb);
		assert_int_equal(refused(&b, DROCE_RX_BAD_ICRC),
				 b_modes[k] == DROCE_RX_ICRC_ON ? 1 : 0);
		fixture_fini(&b);
		fixture_fini(&a);
	}
}

static void
test_stream_on_second_port(void **state)
{
	struct droce_rx_stream_stats before;
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_init(&f, 1, FRAME, PAGES, 8);
	f.params.device = "net_ring_r1";
	start(&f);
	monitor_start(&f);
	send_frame(&f);
	take(&f, &info);
	assert_false(info.lossy);
	/* Its packets on port 0 are refused. */
	droce_rx_stream_stats(f.st, &before);
	f.port = 0;
	sensor_init(&f, DROCE_HSB_IMM_CURRENT, f.tx.psn);
	send_frame_faulty(&f, NULL, NULL, false);
	expect_refusals(&f, &before, DROCE_RX_WRONG_PORT, 5);
	f.port = 1;
	fixture_fini(&f);
}

/* ---- generic RDMA senders: UC and RC multi-packet messages -------------- */

/* One message of @len bytes at @va as FIRST/MIDDLE/LAST (or ONLY), the
 * last with an immediate when @imm_end.
 */
static uint32_t
send_message(struct fixture *f, uint8_t transport, uint32_t psn, uint64_t va,
	     const uint8_t *data, uint32_t len, bool imm_end, uint32_t imm,
	     uint32_t src_qp, bool ackreq_last)
{
	uint32_t mtu = 1024, off = 0;

	while (off < len || (len == 0 && off == 0)) {
		uint32_t chunk = RTE_MIN(mtu, len - off);
		bool first = off == 0, last = off + chunk == len;
		struct droce_frame_spec spec = {
			.src_mac = sensor_mac, .dst_mac = our_mac[f->port],
			.src_ip4 = ip(sensor_ip[f->port]),
			.dst_ip4 = ip(our_ip[f->port]), .src_qp = src_qp,
			.dest_qp = droce_rx_stream_qp_number(f->st), .psn = psn,
			.payload = data + off, .payload_len = chunk,
		};
		uint8_t op;

		if (first && last)
			op = imm_end ? DROCE_OP_WRITE_ONLY_IMM : DROCE_OP_WRITE_ONLY;
		else if (first)
			op = DROCE_OP_WRITE_FIRST;
		else if (last)
			op = imm_end ? DROCE_OP_WRITE_LAST_IMM : DROCE_OP_WRITE_LAST;
		else
			op = DROCE_OP_WRITE_MIDDLE;
		spec.opcode = transport | op;
		if (first) {
			spec.va = va;
			spec.rkey = droce_rx_stream_rkey(f->st);
			spec.dma_len = len;
		}
		spec.imm = imm;
		spec.ackreq = last && ackreq_last;
		inject(f->port, build(&spec));
		psn = (psn + 1) & DROCE_PSN_MASK;
		off += chunk;
		if (len == 0)
			break;
	}
	return psn;
}

static void
test_uc_multi_packet_messages(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;
	uint32_t psn = 100;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.imm = DROCE_HSB_IMM_OPAQUE;
	start(&f);
	monitor_start(&f);
	next_content(&f);
	/* Page 2: data as one 3-packet message, then one 2-packet message
	 * with an immediate ending the frame.
	 */
	psn = send_message(&f, DROCE_OP_UC, psn, 2 * f.layout.page_size, f.frame,
			   3000, false, 0, 0, false);
	psn = send_message(&f, DROCE_OP_UC, psn, 2 * f.layout.page_size + 3000,
			   f.frame + 3000, 2000, true, 0xabcdef01, 0, false);
	model_data(&f, 2, 0, f.frame, 5000);
	poll_all();
	take(&f, &info);
	assert_int_equal(info.page, 2);
	assert_int_equal(info.immediate, 0xabcdef01);
	assert_int_equal(info.psn, psn - 1);
	assert_int_equal(info.packets, 5);
	assert_int_equal(info.bytes, 5000);
	assert_false(info.lossy);
	assert_false(info.metadata.present);
	/* A lost MIDDLE: the rest of its message has nowhere to go. */
	next_content(&f);
	{
		uint32_t p0 = psn;

		psn = send_message(&f, DROCE_OP_UC, psn, 0, f.frame, 3072, true, 7,
				   0, false);
		/* take the MIDDLE (second packet) back out of the ring */
		struct rte_mbuf *pk[3];

		assert_int_equal(rte_ring_dequeue_bulk(rx_ring[0][0], (void **)pk, 3, NULL), 3);
		inject(0, pk[0]);
		inject(0, pk[2]);
		rte_pktmbuf_free(pk[1]);
		model_data(&f, 0, 0, f.frame, 1024);
		(void)p0;
	}
	poll_all();
	assert_int_equal(refused(&f, DROCE_RX_NO_MESSAGE), 1);
	/* The frame never got its end; the next one (page 1) closes it. */
	next_content(&f);
	psn = send_message(&f, DROCE_OP_UC, psn, f.layout.page_size, f.frame, 100,
			   true, 9, 0, false);
	model_data(&f, 1, 0, f.frame, 100);
	poll_all();
	take(&f, &info);
	assert_int_equal(info.page, 0);
	assert_true(info.lossy);
	assert_int_equal(info.lost_packets, 2);   /* the MIDDLE and the LAST */
	take(&f, &info);
	assert_int_equal(info.page, 1);
	assert_false(info.lossy);
	fixture_fini(&f);
}

/* What the worker sent back: one ACK/NAK expected. */
static void
expect_ack(uint8_t syndrome, uint32_t psn, uint32_t msn, uint32_t dest_qp)
{
	struct rte_mbuf *out[8];
	unsigned int n = rte_ring_dequeue_burst(tx_ring[0][1], (void **)out, 8, NULL);
	const struct droce_aeth *aeth;
	struct droce_pkt pkt = { 0 };
	uint32_t off = 14 + 20 + 8;

	assert_int_equal(n, 1);
	assert_int_equal(droce_roce_parse(rte_pktmbuf_mtod_offset(out[0], uint8_t *, off),
					  rte_pktmbuf_pkt_len(out[0]) - off, &pkt),
			 DROCE_PARSE_OK);
	assert_int_equal(pkt.opcode, DROCE_OP_RC | DROCE_OP_ACKNOWLEDGE);
	assert_true(droce_icrc_ok(rte_pktmbuf_mtod_offset(out[0], uint8_t *, 14),
				  rte_pktmbuf_pkt_len(out[0]) - 14));
	assert_int_equal(droce_bth_dqpn(pkt.bth), dest_qp);
	assert_int_equal(droce_bth_psn(pkt.bth), psn);
	aeth = droce_pkt_ext(&pkt, DROCE_EXT_AETH);
	assert_int_equal(droce_aeth_syndrome(aeth), syndrome);
	assert_int_equal(droce_aeth_msn(aeth), msn);
	assert_memory_equal(rte_pktmbuf_mtod(out[0], struct rte_ether_hdr *)->dst_addr.addr_bytes,
			    sensor_mac.addr_bytes, 6);
	rte_pktmbuf_free_bulk(out, n);
}

static void
expect_no_ack(void)
{
	assert_int_equal(rte_ring_count(tx_ring[0][1]), 0);
}

static void
test_rc_acks(void **state)
{
	struct droce_rx_frame_info info;
	struct droce_rx_stream_stats s;
	struct fixture f;
	uint32_t psn = 0xfffffe, p0;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.imm = DROCE_HSB_IMM_OPAQUE;
	f.params.remote_qp = 0x77;
	start(&f);
	monitor_start(&f);
	drain_tx();
	next_content(&f);
	/* Two messages in one burst: one ACK, for the newest PSN (24-bit
	 * wrap on the way), MSN 2.
	 */
	psn = send_message(&f, DROCE_OP_RC, psn, 0, f.frame, 3000, false, 0, 0x77, true);
	psn = send_message(&f, DROCE_OP_RC, psn, 3000, f.frame + 3000, 2000, true, 5,
			   0x77, true);
	model_data(&f, 0, 0, f.frame, 5000);
	poll_all();
	assert_int_equal(psn, 3);
	expect_ack(0x1f, 2, 2, 0x77);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.bytes, 5000);
	/* A gap: one NAK (sequence error) naming the expected PSN, then
	 * silence for the rest; nothing of it lands.
	 */
	next_content(&f);
	p0 = psn;
	send_message(&f, DROCE_OP_RC, (psn + 1) & DROCE_PSN_MASK, f.layout.page_size,
		     f.frame, 3072, true, 6, 0x77, true);
	poll_all();
	expect_ack(0x60, p0, 2, 0x77);
	assert_int_equal(refused(&f, DROCE_RX_STALE_PSN), 3);
	/* The requester goes back: all lands, one ACK. */
	psn = send_message(&f, DROCE_OP_RC, p0, f.layout.page_size, f.frame, 3072,
			   true, 6, 0x77, true);
	model_data(&f, 1, 0, f.frame, 3072);
	poll_all();
	expect_ack(0x1f, (psn - 1) & DROCE_PSN_MASK, 3, 0x77);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.lost_packets, 0);
	/* A duplicate (the ACK was lost): ACKed again, not placed again. */
	send_message(&f, DROCE_OP_RC, (psn - 1) & DROCE_PSN_MASK, 0, f.frame, 10,
		     false, 0, 0x77, true);
	poll_all();
	expect_ack(0x1f, (psn - 1) & DROCE_PSN_MASK, 3, 0x77);
	expect_no_ack();
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.acks, 4);
	fixture_fini(&f);
}

/* An RC requester counts PSNs in 24 bits, also on a stream that reads
 * HSB's immediates (whose PSNs have 20): past 0xfffff the packets are in
 * order and ACKed as such.
 */
static void
test_rc_psn_24_bits_with_hsb_immediates(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;
	uint32_t psn;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.remote_qp = 0x77;   /* imm stays hsb */
	start(&f);
	monitor_start(&f);
	drain_tx();
	next_content(&f);
	psn = send_message(&f, DROCE_OP_RC, 0xffffe, 0, f.frame, 3000, true,
			   droce_hsb_imm_encode(DROCE_HSB_IMM_CURRENT, 0, 0x100000), 0x77,
			   true);
	assert_int_equal(psn, 0x100001);
	model_data(&f, 0, 0, f.frame, 3000);
	poll_all();
	expect_ack(0x1f, 0x100000, 1, 0x77);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.bytes, 3000);
	/* A duplicate of the last one: ACKed again with the 24-bit PSN. */
	send_message(&f, DROCE_OP_RC, 0x100000, 2048, f.frame + 2048, 952, false, 0, 0x77,
		     true);
	poll_all();
	expect_ack(0x1f, 0x100000, 1, 0x77);
	fixture_fini(&f);
}

/* ---- ICRC modes ----------------------------------------------------------- */

static bool
corrupt_payload(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	struct fixture *f = arg;
	struct rte_mbuf *m;

	m = build(spec);
	if (i == 0)   /* first payload byte, after 14 + 20 + 8 + 12 + 16 */
		rte_pktmbuf_mtod_offset(m, uint8_t *, 70)[0] ^= 0x01;
	inject(f->port, m);
	return false;
}

static void
test_icrc_modes(void **state)
{
	/* each ICRC mode with streaming and with cached stores */
	for (int variant = 0; variant < 2 * (DROCE_RX_ICRC_OFF + 1); variant++) {
		int mode = variant / 2;
		struct droce_rx_frame_info info;
		struct fixture f;
		uint32_t page;

		(void)state;
		fixture_init(&f, 0, FRAME, PAGES, 8);
		f.params.icrc = (enum droce_rx_icrc)mode;
		f.params.copy_stores = variant % 2 ? DROCE_COPY_CACHED : DROCE_COPY_STREAMING;
		start(&f);
		monitor_start(&f);
		/* A good frame first: the stream knows which PSN comes next. */
		send_frame(&f);
		take(&f, &info);
		page = f.tx.page;
		{
			uint8_t old[PAYLOAD];

			memcpy(old, f.g.model + page * f.layout.page_size, PAYLOAD);
			send_frame_faulty(&f, corrupt_payload, &f, true);
			switch (mode) {
			case DROCE_RX_ICRC_ON:   /* refused before a byte is written */
				model_data(&f, page, 0, old, PAYLOAD);
				break;
			case DROCE_RX_ICRC_FUSED: /* refused, its bytes written */
			case DROCE_RX_ICRC_OFF:   /* taken as it came */
				f.g.model[page * f.layout.page_size] ^= 0x01;
				break;
			}
		}
		take(&f, &info);
		assert_int_equal(info.lossy, mode != DROCE_RX_ICRC_OFF);
		assert_int_equal(refused(&f, DROCE_RX_BAD_ICRC),
				 mode != DROCE_RX_ICRC_OFF ? 1 : 0);
		assert_int_equal(info.packets, mode != DROCE_RX_ICRC_OFF ? 4 : 5);
		fixture_fini(&f);
	}
}

/* Which packet of a frame corrupt_one() spoils. */
struct corrupt_at {
	struct fixture *f;
	unsigned int index;
};

static bool
corrupt_one(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	const struct corrupt_at *c = arg;
	struct rte_mbuf *m = build(spec);

	if (i == c->index)   /* its first payload byte */
		rte_pktmbuf_mtod_offset(m, uint8_t *, 70)[0] ^= 0x01;
	inject(c->f->port, m);
	return false;
}

/* A frame of @p packets whose packet @p bad has a bad ICRC: refused alone,
 * none of its @p payload bytes in the buffer.
 */
static void
send_with_bad_icrc(struct fixture *f, unsigned int bad, unsigned int payload,
		   unsigned int packets)
{
	struct corrupt_at c = { .f = f, .index = bad };
	size_t off = (size_t)f->tx.page * f->layout.page_size + bad * payload;
	uint64_t before = refused(f, DROCE_RX_BAD_ICRC);
	struct droce_rx_frame_info info;
	uint8_t *old = malloc(payload);

	assert_non_null(old);
	memcpy(old, f->g.model + off, payload);
	send_frame_faulty(f, corrupt_one, &c, true);
	memcpy(f->g.model + off, old, payload);
	free(old);
	take(f, &info);
	assert_true(info.lossy);
	assert_int_equal(info.packets, packets - 1);
	assert_int_equal(refused(f, DROCE_RX_BAD_ICRC), before + 1);
	guarded_check(&f->g);
}

/* Small packets have their ICRCs checked four at once, ahead of their
 * turn: a bad one first, last or amid a group, in a short group at a
 * burst's end or in the group taken at a burst's start, is refused, and
 * only it, before a byte of it lands (the buffer is compared with the
 * model after every frame). With every CRC the CPU has: the one-by-one
 * path judges the same groups.
 */
static void
test_icrc_small_packets(void **state)
{
	static const enum droce_crc_impl impls[] = {
		DROCE_CRC_PCLMUL, DROCE_CRC_VPCLMUL256, DROCE_CRC_AVX512,
	};
	static const unsigned int bad[] = {
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
	};
	const unsigned int payload = 128; /* the sender's least */
	const unsigned int packets = (FRAME + payload - 1) / payload + 1; /* and metadata */

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(impls); i++) {
		struct droce_rx_frame_info info;
		struct fixture f;

		if (droce_crc_select(impls[i]) < 0)
			continue;
		fixture_init(&f, 0, FRAME, PAGES, 8);
		f.payload = payload;
		f.params.icrc = DROCE_RX_ICRC_ON;
		start(&f);
		monitor_start(&f);
		/* A clean frame first: later bursts start with a group. */
		send_frame(&f);
		take(&f, &info);
		for (unsigned int k = 0; k < RTE_DIM(bad); k++)
			send_with_bad_icrc(&f, bad[k], payload, packets);
		fixture_fini(&f);
	}
	droce_crc_select(DROCE_CRC_AUTO);
}


/* Take @p n clean frames, sequences 1..n, polling the worker while the
 * gather engine (on its own thread) finishes them.
 */
static void
take_gathered(struct fixture *f, uint32_t n)
{
	struct droce_rx_frame_info info;

	for (uint32_t i = 0; i < n; i++) {
		bool got = false;

		for (int t = 0; t < 20000 && !got; t++) {
			poll_all();
			got = droce_rx_stream_get_next_frame(f->st, 0, &info);
			if (!got)
				usleep(50);
		}
		assert_true(got);
		assert_int_equal(info.sequence, i + 1);
		assert_false(info.lossy);
	}
}

/* A stream with gather placement, started and monitored. */
static void
start_gather(struct fixture *f)
{
	fixture_init(f, 0, FRAME, PAGES, 8);
	f->params.placement = DROCE_PLACE_GATHER;
	start(f);
	assert_int_equal(droce_placer_mode(f->st->placer), DROCE_PLACE_GATHER);
	monitor_start(f);
}

/* Gather: the engine (the host driver's CPU reference on its own thread)
 * moves the bytes later; frames complete when it is done, in order.
 */
static void
test_gather_placement(void **state)
{
	struct fixture f;

	(void)state;
	start_gather(&f);
	for (int i = 0; i < 3; i++)
		send_frame(&f);
	take_gathered(&f, 3);
	fixture_fini(&f);
}

/* Nothing waits on the worker once a frame is complete, and the frames of
 * a run that ended (gather placement may still finish them) never reach
 * the next run.
 */
static void
wait_until_none_waiting(void)
{
	for (int t = 0; t < 20000 && rx->workers[0].nb_waiting != 0; t++) {
		poll_all();
		usleep(50);
	}
	assert_int_equal(rx->workers[0].nb_waiting, 0);
}

static void
test_frames_waiting_across_runs(void **state)
{
	struct fixture f;

	(void)state;
	start_gather(&f);
	send_frame(&f);
	close_stream(&f);
	start(&f);
	monitor_start(&f);
	for (int i = 0; i < 2; i++)
		send_frame(&f);
	take_gathered(&f, 2);
	wait_until_none_waiting();
	expect_no_frame(&f);
	fixture_fini(&f);
}

/* ---- the device's layouts and addresses -------------------------------------- */

/* The device's default layout: the block rides in the packet with the
 * frame's last data, after zeros up to its offset, and the first frame of
 * a run lands in page 1. Every frame has its metadata, and a page written
 * again is known by its block's PSN.
 */
static void
test_embedded_metadata(void **state)
{
	struct droce_rx_frame_info info, first;
	struct fixture f;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.metadata_layout = DROCE_HSB_METADATA_EMBEDDED;
	f.first_page = 1;
	start(&f);
	monitor_start(&f);
	assert_true(droce_hsb_metadata_embedded(&f.tx.conf));
	for (unsigned int i = 0; i < PAGES; i++) {
		send_frame(&f);
		take(&f, &info);
		assert_int_equal(info.page, (1 + i) % PAGES);
		assert_false(info.lossy);
		assert_true(info.metadata.present);
		assert_int_equal(info.metadata.frame_number, i);
		assert_int_equal(info.metadata.psn, info.psn);
		assert_int_equal(info.metadata.bytes_written, FRAME);
		/* 3 x 1408 bytes of data, then 776, the zeros and the block */
		assert_int_equal(info.packets, 4);
		assert_int_equal(info.bytes, f.layout.metadata_offset + DROCE_HSB_METADATA_SIZE);
		if (i == 0)
			first = info;
	}
	/* The first page again: the frame taken from it earlier is gone. */
	assert_true(droce_rx_stream_frame_intact(f.st, &info));
	send_frame(&f);
	assert_false(droce_rx_stream_frame_intact(f.st, &first));
	take(&f, &info);
	assert_int_equal(info.page, 1);
	assert_true(info.metadata.present);
	fixture_fini(&f);
}

/* rx.N.va: a sensor programmed to write page 0 at a base address of its
 * own; droce takes that range, and nothing below or past it.
 */
static void
test_device_va(void **state)
{
	const uint64_t base = 0x100000000ull;
	struct droce_rx_stream_stats before;
	struct droce_rx_frame_info info;
	struct droce_rx_params p;
	struct fixture f;
	uint64_t size;
	uint8_t junk[128];

	(void)state;
	memset(junk, 0xee, sizeof(junk));
	fixture_init(&f, 0, FRAME, PAGES, 8);
	size = (uint64_t)f.layout.page_size * PAGES;
	p = f.params;
	p.device_va = UINT64_MAX - size + 2;
	expect_start_error(&f, &p, -EINVAL, "passes 2^64");
	p.device_va = UINT64_MAX - size + 1;    /* the last page ends at 2^64 - 1 */
	assert_int_equal(droce_rx_stream_start(f.st, &p, (char *)junk, sizeof(junk)), 0);
	droce_rx_stream_close(f.st);
	f.params.device_va = base;
	start(&f);
	monitor_start(&f);
	assert_int_equal(droce_rx_stream_external_frame_memory(f.st), base);
	send_frame(&f);
	take(&f, &info);
	assert_false(info.lossy);
	assert_true(info.metadata.present);
	/* Below the base, at 0, and past the last page. */
	droce_rx_stream_stats(f.st, &before);
	send_message(&f, DROCE_OP_UC, f.tx.psn, base - 128, junk, 128, false, 0, 0, false);
	send_message(&f, DROCE_OP_UC, f.tx.psn, 0, junk, 128, false, 0, 0, false);
	send_message(&f, DROCE_OP_UC, f.tx.psn, base + size, junk, 128, false, 0, 0, false);
	send_message(&f, DROCE_OP_UC, f.tx.psn, base + size - 64, junk, 128, false, 0, 0, false);
	poll_all();
	expect_refusals(&f, &before, DROCE_RX_BAD_VA, 4);
	send_frame(&f);
	take(&f, &info);
	assert_int_equal(info.page, 1);
	assert_false(info.lossy);
	fixture_fini(&f);
}

/* ---- reordering and hand-overs --------------------------------------------- */

/* UC with a reorder window: packets that come ahead of a gap wait for it
 * to fill, so a swap costs nothing; a gap that does not fill is given up
 * on after the timeout, or at once when the window is full.
 */
static void
test_reorder_window(void **state)
{
	struct droce_rx_stream_stats before, s;
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.reorder_window = 8;
	f.params.reorder_timeout_us = 2000;
	start(&f);
	monitor_start(&f);
	droce_rx_stream_stats(f.st, &before);
	send_frame_faulty(&f, swap_packets, &(struct swap){ .f = &f }, true);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.lost_packets, 0);
	assert_int_equal(info.packets, 5);
	expect_refusals(&f, &before, DROCE_RX_STALE_PSN, 0);
	/* the copy of a held packet is a duplicate */
	send_frame_faulty(&f, swap_packets, &(struct swap){ .f = &f, .twice = true }, true);
	take(&f, &info);
	assert_false(info.lossy);
	expect_refusals(&f, &before, DROCE_RX_STALE_PSN, 1);
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.held, 2);
	/* A packet that never comes: the rest of its frame waits for it. */
	send_frame_losing(&f, 1, 2);
	expect_no_frame(&f);
	assert_int_equal(f.st->reorder.held, 3);
	usleep(3000);
	poll_all();
	take(&f, &info);
	assert_true(info.lossy);
	assert_int_equal(info.lost_packets, 1);
	assert_int_equal(info.packets, 4);
	/* Its first packet lost: 4 packets wait, the next frame's 5 fill
	 * the window of 8, and both go on at once.
	 */
	send_frame_losing(&f, 0, 1);
	send_frame(&f);
	take(&f, &info);
	assert_true(info.lossy);
	assert_int_equal(info.lost_packets, 1);
	assert_int_equal(info.packets, 4);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(f.st->reorder.held, 0);
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.lost_packets, 2);
	/* Held packets of a run that ends go back to their pool, unplaced. */
	send_frame_faulty(&f, drop_range, &(struct lose_range){ .from = 0, .to = 1 }, false);
	assert_int_equal(f.st->reorder.held, 4);
	fixture_fini(&f);
}

/* A gap that is being filled, a packet at a time (another worker's
 * backlog coming in order), is not given up however long the packets
 * after it wait: only a gap with nothing coming for the timeout is.
 */
static void
test_reorder_gap_being_filled(void **state)
{
	struct droce_hsb_metadata md = { .timestamp_s = 1 };
	struct droce_rx_frame_info info;
	struct rte_mbuf *pkts[5];
	struct droce_frame_spec spec;
	struct fixture f;
	unsigned int n = 0;
	uint32_t page;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.reorder_window = 16;
	f.params.reorder_timeout_us = 20000;
	start(&f);
	monitor_start(&f);
	send_frame(&f);
	take(&f, &info);
	page = f.tx.page;
	next_content(&f);
	md.bytes_written = FRAME;
	droce_hsb_frame_begin(&f.tx, f.frame, &md);
	while (droce_hsb_frame_next(&f.tx, &spec))
		pkts[n++] = build(&spec);
	assert_int_equal(n, 5);
	model_data(&f, page, 0, f.frame, FRAME);
	model_data(&f, page, f.layout.metadata_offset, f.tx.metadata, DROCE_HSB_METADATA_SIZE);
	/* 3 and 4 first; then 0, 1 and 2, each 12 ms after the one before:
	 * 3 and 4 wait 36 ms, past the 20 ms timeout.
	 */
	inject(0, pkts[3]);
	inject(0, pkts[4]);
	poll_all();
	for (unsigned int i = 0; i < 3; i++) {
		usleep(12000);
		poll_all();
		inject(0, pkts[i]);
		poll_all();
	}
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.packets, 5);
	fixture_fini(&f);
}

/* Packets @p from .. of a frame come in on RX queue 1 (worker 1's), the
 * others on queue 0 (worker 0's), all before either worker polls.
 */
struct split {
	struct fixture *f;
	unsigned int from, to;
};

static bool
split_queues(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	const struct split *sp = arg;

	inject_queue(sp->f->port, i >= sp->from && i < sp->to ? 1 : 0, build(spec));
	return false;
}

/* A stream's packets that come in on another worker's queue (af_packet's
 * fanout rollover moves a flow so under load) are handed to the worker
 * that owns it, and, with a reorder window, taken in PSN order.
 */
static void
test_hand_over_to_owner(void **state)
{
	struct droce_rx_stream_stats before, s;
	struct droce_rx_frame_info info;
	struct fixture f;
	struct split sp = { .f = &f };

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.reorder_window = 16;
	start(&f);
	monitor_start(&f);
	send_frame(&f);          /* queue 0: worker 0 owns the stream */
	take(&f, &info);
	assert_int_equal(atomic_load(&f.st->owner), 1);
	droce_rx_stream_stats(f.st, &before);
	/* The frame's tail on worker 1's queue: in order all the same. */
	sp.from = 2;
	sp.to = 5;
	send_frame_faulty(&f, split_queues, &sp, true);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.packets, 5);
	/* Its head there: worker 0 sees the tail first and holds it. */
	sp.from = 0;
	sp.to = 3;
	send_frame_faulty(&f, split_queues, &sp, true);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.lost_packets, 0);
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.handed_over - before.handed_over, 6);
	assert_int_equal(s.held - before.held, 2);
	expect_refusals(&f, &before, DROCE_RX_STALE_PSN, 0);
	assert_int_equal(atomic_load(&f.st->owner), 1);
	/* More than the owner's ring holds before it polls: the rest is
	 * refused, counted.
	 */
	{
		struct droce_frame_spec spec;
		struct droce_hsb_metadata md = { .psn = 0 };
		unsigned int n = 0, total = RX_HANDOFF_SIZE + 100;

		next_content(&f);
		droce_hsb_frame_begin(&f.tx, f.frame, &md);
		assert_true(droce_hsb_frame_next(&f.tx, &spec));
		droce_rx_stream_stats(f.st, &before);
		while (n < total) {
			for (unsigned int k = 0; k < 2000 && n < total; k++, n++)
				inject_queue(0, 1, build(&spec));
			while (!rte_ring_empty(rx_ring[0][1]))
				droce_worker_poll(stack, 1);
		}
		poll_all();
		droce_rx_stream_stats(f.st, &s);
		assert_int_equal(s.refused[DROCE_RX_HANDOFF_FULL] -
				 before.refused[DROCE_RX_HANDOFF_FULL],
				 total - (RX_HANDOFF_SIZE - 1));
		/* the ones taken: the first placed, the rest duplicates */
		assert_int_equal(s.refused[DROCE_RX_STALE_PSN] - before.refused[DROCE_RX_STALE_PSN],
				 RX_HANDOFF_SIZE - 2);
		while (droce_hsb_frame_next(&f.tx, &spec))
			inject(0, build(&spec));
		model_data(&f, f.tx.page == 0 ? PAGES - 1 : f.tx.page - 1, 0, f.frame, FRAME);
		model_data(&f, f.tx.page == 0 ? PAGES - 1 : f.tx.page - 1,
			   f.layout.metadata_offset, f.tx.metadata, DROCE_HSB_METADATA_SIZE);
		poll_all();
		take(&f, &info);
		assert_false(info.lossy);
	}
	fixture_fini(&f);
}

/* A stream is owned by the first worker that sees a packet of it that
 * passed every check: packets forged or broken on another worker's queue
 * before the sensor's first one do not take it.
 */
static bool
forge(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	struct fixture *f = arg;
	struct droce_frame_spec bad = *spec;
	struct rte_mbuf *m;

	if (i == 0) {
		bad.rkey ^= 1;
		inject_queue(f->port, 1, build(&bad));
		bad = *spec;
		bad.src_ip4 = ip("198.18.0.99");
		inject_queue(f->port, 1, build(&bad));
		m = build(spec);
		rte_pktmbuf_mtod_offset(m, uint8_t *, 70)[0] ^= 0x01;
		inject_queue(f->port, 1, m);
		bad = *spec;
		bad.opcode = DROCE_OP_UC | DROCE_OP_WRITE_MIDDLE;
		inject_queue(f->port, 1, build(&bad));
		/* worker 1 sees them first */
		while (!rte_ring_empty(rx_ring[f->port][1]))
			droce_worker_poll(stack, 1);
		assert_int_equal(atomic_load(&f->st->owner), 0);
	}
	inject(f->port, build(spec));
	return false;
}

static void
test_forged_packets_take_no_stream(void **state)
{
	struct droce_rx_stream_stats s;
	struct droce_rx_frame_info info;
	struct fixture f;
	uint64_t unknown[DROCE_RX_REFUSAL_MAX];

	(void)state;
	fixture_running(&f, 8);
	send_frame_faulty(&f, forge, &f, true);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(atomic_load(&f.st->owner), 1);
	droce_rx_stream_stats(f.st, &s);
	assert_int_equal(s.handed_over, 0);
	assert_int_equal(s.refused[DROCE_RX_BAD_RKEY], 1);
	assert_int_equal(s.refused[DROCE_RX_WRONG_PEER], 1);
	assert_int_equal(s.refused[DROCE_RX_BAD_ICRC], 1);
	assert_int_equal(s.refused[DROCE_RX_NO_MESSAGE], 1);
	assert_int_equal(s.refused[DROCE_RX_HANDOFF_FULL], 0);
	droce_rx_refusals(rx, unknown);
	assert_int_equal(s.packets, 5);
	fixture_fini(&f);
}

/* A stream's first packet, kept to forge others from. */
static bool
keep_first(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	if (i == 0)
		*(struct droce_frame_spec *)arg = *spec;
	return true;
}

struct refusing_worker {
	unsigned int worker;
	atomic_bool *go;
};

/* Worker @p worker's rounds, on a cpu of its own where there is one,
 * from the moment both may start until its queue is empty.
 */
static void *
refuse_queue(void *arg)
{
	const struct refusing_worker *rw = arg;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)(rw->worker % (unsigned int)(cpus > 0 ? cpus : 1)), &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	while (!atomic_load(rw->go))
		;
	while (!rte_ring_empty(rx_ring[0][rw->worker]))
		droce_worker_poll(stack, rw->worker);
	return NULL;
}

/* Both workers refuse packets of one stream at the same time (one of them
 * owns it): the stream's refusal counter loses none of them.
 */
static void
test_refusals_counted_by_two_workers_at_once(void **state)
{
	enum { ROUNDS = 40, PER_QUEUE = 1000 };
	struct droce_rx_stream_stats before, after;
	struct droce_frame_spec spec, bad;
	struct droce_rx_frame_info info;
	struct fixture f;

	(void)state;
	fixture_running(&f, 8);
	send_frame_faulty(&f, keep_first, &spec, true);
	take(&f, &info);
	droce_rx_stream_stats(f.st, &before);
	bad = spec;
	bad.rkey ^= 1;
	for (int round = 0; round < ROUNDS; round++) {
		struct refusing_worker rw[NB_WORKERS];
		pthread_t thread[NB_WORKERS];
		atomic_bool go = false;

		for (unsigned int q = 0; q < NB_WORKERS; q++)
			for (int i = 0; i < PER_QUEUE; i++)
				inject_queue(0, q, build(&bad));
		for (unsigned int w = 0; w < NB_WORKERS; w++) {
			rw[w] = (struct refusing_worker){ .worker = w, .go = &go };
			assert_int_equal(pthread_create(&thread[w], NULL, refuse_queue, &rw[w]), 0);
		}
		atomic_store(&go, true);
		for (unsigned int w = 0; w < NB_WORKERS; w++)
			assert_int_equal(pthread_join(thread[w], NULL), 0);
	}
	droce_rx_stream_stats(f.st, &after);
	assert_int_equal(after.refused[DROCE_RX_BAD_RKEY] - before.refused[DROCE_RX_BAD_RKEY],
			 ROUNDS * PER_QUEUE * NB_WORKERS);
	fixture_fini(&f);
}

/* ---- what is placed is what is acknowledged --------------------------------- */

/* RC, ICRC checked in the copy's pass: a packet whose placement fails is
 * neither ACKed nor counted in the MSN; its PSN stays expected, the next
 * one is NAKed, and the requester's retry fills it.
 */
static void
test_rc_ack_only_placed(void **state)
{
	struct droce_rx_frame_info info;
	struct rte_mbuf *pk[3];
	struct fixture f;
	uint32_t psn = 10;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.imm = DROCE_HSB_IMM_OPAQUE;
	f.params.remote_qp = 0x77;
	f.params.icrc = DROCE_RX_ICRC_FUSED;
	start(&f);
	monitor_start(&f);
	drain_tx();
	next_content(&f);
	send_message(&f, DROCE_OP_RC, psn, 0, f.frame, 3000, true, 5, 0x77, true);
	assert_int_equal(rte_ring_dequeue_bulk(rx_ring[0][0], (void **)pk, 3, NULL), 3);
	rte_pktmbuf_mtod_offset(pk[1], uint8_t *, 14 + 20 + 8 + 12)[0] ^= 0x01;
	for (int i = 0; i < 3; i++)
		inject(0, pk[i]);
	poll_all();
	expect_ack(0x60, psn + 1, 0, 0x77);    /* NAK: still expects the second */
	assert_int_equal(refused(&f, DROCE_RX_BAD_ICRC), 1);
	expect_no_frame(&f);
	/* The requester goes back to the second packet. */
	{
		struct droce_frame_spec spec = {
			.src_mac = sensor_mac, .dst_mac = our_mac[0],
			.src_ip4 = ip(sensor_ip[0]), .dst_ip4 = ip(our_ip[0]),
			.src_qp = 0x77, .dest_qp = droce_rx_stream_qp_number(f.st),
			.opcode = DROCE_OP_RC | DROCE_OP_WRITE_MIDDLE, .psn = psn + 1,
			.payload = f.frame + 1024, .payload_len = 1024,
		};

		inject(0, build(&spec));
		spec.opcode = DROCE_OP_RC | DROCE_OP_WRITE_LAST_IMM;
		spec.psn = psn + 2;
		spec.payload = f.frame + 2048;
		spec.payload_len = 952;
		spec.imm = 5;
		spec.ackreq = true;
		inject(0, build(&spec));
	}
	model_data(&f, 0, 0, f.frame, 3000);
	poll_all();
	expect_ack(0x1f, psn + 2, 1, 0x77);
	take(&f, &info);
	assert_false(info.lossy);
	assert_int_equal(info.bytes, 3000);
	fixture_fini(&f);
}

/* Fused ICRC: a block whose packet fails its ICRC is not taken as the
 * frame's metadata (its bytes land, as fused ones do).
 */
static bool
corrupt_block(struct droce_frame_spec *spec, unsigned int i, void *arg)
{
	struct fixture *f = arg;
	struct rte_mbuf *m = build(spec);

	if (i == 4)   /* the block's first byte: after 14 + 20 + 8 + 12 + 16 + 4 */
		rte_pktmbuf_mtod_offset(m, uint8_t *, 74)[0] ^= 0x01;
	inject(f->port, m);
	return false;
}

static void
test_fused_bad_block_not_metadata(void **state)
{
	struct droce_rx_frame_info info;
	struct fixture f;
	uint32_t page;

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 8);
	f.params.icrc = DROCE_RX_ICRC_FUSED;
	start(&f);
	monitor_start(&f);
	send_frame(&f);
	take(&f, &info);
	assert_true(info.metadata.present);
	page = f.tx.page;
	send_frame_faulty(&f, corrupt_block, &f, true);
	f.g.model[page * f.layout.page_size + f.layout.metadata_offset] ^= 0x01;
	take(&f, &info);
	assert_true(info.lossy);
	assert_false(info.metadata.present);
	send_frame(&f);
	take(&f, &info);
	assert_true(info.metadata.present);
	assert_int_equal(info.metadata.frame_number, 2);
	fixture_fini(&f);
}

static void
test_refusal_names(void **state)
{
	(void)state;
	for (int r = 0; r < DROCE_RX_REFUSAL_MAX; r++)
		assert_non_null(droce_rx_refusal_name(r));
	assert_string_equal(droce_rx_refusal_name(DROCE_RX_BAD_RKEY), "bad_rkey");
	assert_null(droce_rx_refusal_name(DROCE_RX_REFUSAL_MAX));
}

/* A stream started and closed 40000 times, each time with a new QP,
 * beside streams that stay: the table's probes stay short (a lookup of a
 * QP no stream has is what every forged packet costs).
 */
static void
test_qp_table_stays_short(void **state)
{
	struct droce_rx_stream *stay[64];
	unsigned int longest = 0;
	struct fixture f;
	char err[256];

	(void)state;
	fixture_init(&f, 0, FRAME, PAGES, 4);
	for (unsigned int i = 0; i < RTE_DIM(stay); i++) {
		struct droce_rx_params p = f.params;

		p.qp = 0x20000 + i * 7;
		stay[i] = droce_rx_stream_new(rx);
		assert_non_null(stay[i]);
		if (droce_rx_stream_start(stay[i], &p, err, sizeof(err)) != 0)
			fail_msg("%s", err);
	}
	/* QPs from a fixed random sequence (sequential ones spread evenly
	 * under the table's hash and hide how runs of slots grow).
	 */
	for (uint32_t k = 0, x = 12345; k < 40000; k++) {
		x = x * 1103515245u + 12345u;
		f.params.qp = 0x100000 | (x >> 12);
		if (rx_stream_of_qp(rx, f.params.qp) != NULL)
			continue;
		start(&f);
		droce_rx_stream_close(f.st);
	}
	for (uint32_t q = 0, x = 777; q < 2000; q++) {
		x = x * 1103515245u + 12345u;
		longest = RTE_MAX(longest, rx_qp_probes(rx, 0x900000 | (x >> 12)));
	}
	print_message("  after 40000 QPs came and went: a lookup of an unknown QP looks at %u slots at most\n",
		      longest);
	assert_true(longest < 64);
	for (unsigned int i = 0; i < RTE_DIM(stay); i++) {
		assert_ptr_equal(rx_stream_of_qp(rx, 0x20000 + i * 7), stay[i]);
		droce_rx_stream_free(stay[i]);
	}
	f.params.qp = 0;
	start(&f);
	monitor_start(&f);
	fixture_fini(&f);
}

/* Many streams: each finds its own QP in the table. */
static void
test_many_streams(void **state)
{
	enum { N = 64 };
	struct droce_rx_stream *st[N];
	struct guarded g;
	char err[256];

	(void)state;
	guarded_alloc_size(&g, host_dev, 8192);
	for (unsigned int i = 0; i < N; i++) {
		struct droce_rx_params p = {
			.port = 0, .queue = DROCE_RX_ANY_QUEUE, .buf = &g.buf,
			.frame_size = 128, .page_size = 256, .pages = 1,
			.metadata_offset = 128, .peer_ip = "198.18.0.2",
			.queue_size = 1, .qp = 0x10000 + i * 8192,
		};

		st[i] = droce_rx_stream_new(rx);
		assert_non_null(st[i]);
		if (droce_rx_stream_start(st[i], &p, err, sizeof(err)) != 0)
			fail_msg("%s", err);
	}
	for (unsigned int i = 0; i < N; i++)
		assert_ptr_equal(rx_stream_of_qp(rx, 0x10000 + i * 8192), st[i]);
	/* Started but idle: the worker has nothing of theirs to look at. */
	droce_worker_poll(stack, 0);
	assert_int_equal(rx->workers[0].nb_waiting, 0);
	/* Remove every other one: probes still find the rest. */
	for (unsigned int i = 0; i < N; i += 2)
		droce_rx_stream_free(st[i]);
	for (unsigned int i = 0; i < N; i++)
		assert_ptr_equal(rx_stream_of_qp(rx, 0x10000 + i * 8192),
				 i % 2 ? st[i] : NULL);
	for (unsigned int i = 1; i < N; i += 2)
		droce_rx_stream_free(st[i]);
	guarded_free(&g);
}

int
main(int argc, char **argv)
{
	char prefix[64], lcores[48];
	cpu_set_t set;
	int cpu = 0;
	char *eal[] = { argv[0], "--no-pci", "--no-huge", "-m", "512",
			"--file-prefix", prefix, DROCE_TEST_EAL_QUIET, "--lcores", lcores,
			"--log-level", "lib.eal:error", "--log-level", "droce.rx:warning",
			NULL };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_errors),
		cmocka_unit_test(test_frames_in_order_byte_exact),
		cmocka_unit_test(test_queue_discards_oldest),
		cmocka_unit_test(test_full_queue_waits_for_a_consumer_mid_take),
		cmocka_unit_test(test_frames_only_while_monitoring),
		cmocka_unit_test(test_callback_on_monitor_thread),
		cmocka_unit_test(test_close_while_monitoring),
		cmocka_unit_test(test_late_monitor_leaves_next_run),
		cmocka_unit_test(test_get_next_frame_timeout),
		cmocka_unit_test(test_port_removed),
		cmocka_unit_test(test_port_failed_only_its_streams),
		cmocka_unit_test(test_placement_device_fails),
		cmocka_unit_test(test_loss_flags_frame),
		cmocka_unit_test(test_lost_end_of_frame),
		cmocka_unit_test(test_lost_start_of_frame),
		cmocka_unit_test(test_refused_after_gap_lost_once),
		cmocka_unit_test(test_duplicates_and_reorder),
		cmocka_unit_test(test_overwritten_before_taken),
		cmocka_unit_test(test_psn_wraps_at_20_bits),
		cmocka_unit_test(test_hsb_lite_immediate_and_24_bit_psn),
		cmocka_unit_test(test_frame_number_extended),
		cmocka_unit_test(test_malicious_packets_write_nothing),
		cmocka_unit_test(test_fast_path_judges_as_the_general_path),
		cmocka_unit_test(test_truncated_and_not_roce),
		cmocka_unit_test(test_two_streams_one_port),
		cmocka_unit_test(test_two_streams_in_one_burst),
		cmocka_unit_test(test_restart_with_smaller_pages),
		cmocka_unit_test(test_stream_on_second_port),
		cmocka_unit_test(test_uc_multi_packet_messages),
		cmocka_unit_test(test_rc_acks),
		cmocka_unit_test(test_rc_psn_24_bits_with_hsb_immediates),
		cmocka_unit_test(test_icrc_modes),
		cmocka_unit_test(test_icrc_small_packets),
		cmocka_unit_test(test_gather_placement),
		cmocka_unit_test(test_frames_waiting_across_runs),
		cmocka_unit_test(test_embedded_metadata),
		cmocka_unit_test(test_device_va),
		cmocka_unit_test(test_reorder_window),
		cmocka_unit_test(test_reorder_gap_being_filled),
		cmocka_unit_test(test_hand_over_to_owner),
		cmocka_unit_test(test_forged_packets_take_no_stream),
		cmocka_unit_test(test_refusals_counted_by_two_workers_at_once),
		cmocka_unit_test(test_rc_ack_only_placed),
		cmocka_unit_test(test_fused_bad_block_not_metadata),
		cmocka_unit_test(test_refusal_names),
		cmocka_unit_test(test_many_streams),
		cmocka_unit_test(test_qp_table_stays_short),
	};
	int ret;

	(void)argc;
	/* Every lcore on one cpu the process may use; only lcore 0 runs, and
	 * it runs the workers' rounds by hand.
	 */
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	snprintf(lcores, sizeof(lcores), "0@%d,1@%d,2@%d", cpu, cpu, cpu);
	snprintf(prefix, sizeof(prefix), "droce-test-rx-%d", getpid());
	if (droce_test_eal_init(RTE_DIM(eal) - 1, eal) < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	rte_timer_subsystem_init();
	/* DROCE_TEST_FILTER=test_name (cmocka's wildcards) runs only those. */
	if (getenv("DROCE_TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("DROCE_TEST_FILTER"));
	ret = cmocka_run_group_tests(tests, setup, teardown);
	droce_test_eal_cleanup();
	return ret;
}
