/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The sensor stream path with no NIC in the way: pre-built HSB packets
 * go through a ring-backed port into the stack's worker poll (Ethernet,
 * IPv4 and UDP checks), lib/rx (every stream check, ICRC) and placement
 * on the host gpudev driver, on one core that feeds and polls in turns.
 *
 *   stream-place  placed GB/s, 1408- and 4096-byte payloads, ICRC off,
 *                 on and fused, vs memcpy of the same payload bytes to
 *                 the same places in the same buffer; the ICRC sides
 *                 again with 512-bit vectors allowed. Packets cold (as a
 *                 NIC's DMA leaves them) in sequential and in shuffled
 *                 buffers, and hot. For reference, a bare receive (below)
 *                 and the placement's own work alone, as fast as this
 *                 machine does it: each packet prefetched in two steps
 *                 and its payload copied as the placer does (streaming
 *                 stores), with and without the ICRC checked first, and
 *                 the check with no copy. droce's stream path costs what
 *                 it adds to that work.
 *   stream-pps    64-byte payloads: packets/s through the stream path vs
 *                 testpmd's io forwarding loop (rx burst of 32 from the
 *                 same port, tx burst to net_null) with the same feed;
 *                 a bare receive too
 *   stream-scale  GB/s with 1, 16 and 256 streams sharing one worker, the
 *                 same bytes in the same number of pages
 *   stream-rpc    stream-place's 1408-byte ICRC-on row with and without
 *                 a saturating RPC load on the same port (see its function)
 *
 * The bare receive takes the same packets from the same port and does
 * nothing with them but copy each payload to its place with memcpy and
 * free the burst in bulk: no check, no prefetch. It shows what the port
 * and the mbufs cost; it is a reference, not a bound (prefetching and
 * streaming stores can beat memcpy where memory is slow).
 *
 * The packets are used again and again. Each goes in as a NIC hands it
 * over (one reference, from a pool with a per-lcore cache) and is freed
 * into its pool after placement; its bytes stay, and between passes, with
 * the clock stopped, the bench takes every one back from the pool and
 * sets its lengths again. Their PSNs repeat, so the streams are closed and
 * started again then too. Every timed pass is checked afterwards: each
 * packet placed, none refused, none lost; a pass that is not clean fails
 * the case.
 */

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_atomic.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_vect.h>

#include "droce_core.h"
#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "droce_hsb.h"
#include "droce_net.h"
#include "droce_roce.h"
#include "droce_rpc.h"
#include "droce_rx.h"
#include "gpu_private.h"  /* the placer's streaming copy, for the work alone */
#include "bench.h"

#define OUR_IP "198.18.0.1"
#define PEER_IP "198.18.0.2"
#define FIRST_QP 0x100
#define FEED_BURST 32
#define RX_RING_SIZE 1024
#define TX_RINGS 2
#define PAGE_ALIGN 4096

/* A stack on a ring port whose one worker this thread polls by hand. */
struct rig {
	struct droce_stack *stack;
	const struct droce_conf *conf;
	struct droce_rx *rx;
	struct rte_ring *rx_ring, *tx_ring[TX_RINGS];
	uint16_t port_id;
	struct rte_ether_addr mac;
	int16_t gpu;
};

/* Where one packet's payload goes: what memcpy does instead of droce.
 * The packet's bytes from its IP header on, for the work alone.
 */
struct copy_ref {
	uint8_t *dst;
	const uint8_t *src;
	uint32_t len;
	const uint8_t *l3;
	uint32_t l3_len;
};

struct bench_stream {
	struct droce_rx_stream *st;
	struct droce_rx_params params;
	struct droce_gpu_buf buf;
	struct droce_hsb_sender tx;
	/* while the packets are built */
	unsigned int frames_left;
	bool in_frame;
	uint32_t psn, page;           /* of the hand-built 64-byte packets */
};

/* A built packet's place in its mbuf, to set again after a pass. */
struct pkt_shape {
	uint16_t data_off, data_len;
	uint32_t pkt_len;
};

/*
 * Which buffers the packets lie in, in the order they arrive. A NIC
 * writes into the buffers its ring was given, one after another; where
 * those lie depends on the pool's history. Sequential: buffers at rising
 * addresses (a freshly filled ring). Shuffled: the same buffers in a
 * random order (a ring refilled for a while from a per-lcore cache).
 * Either way, with cold packets the bench first flushes their bytes from
 * the caches, as a NIC's DMA into memory leaves them.
 */
enum buffer_order { ORDER_SEQUENTIAL, ORDER_SHUFFLED };

/* Streams and the packets that fill each of their pages once. */
struct workload {
	struct bench_stream *streams;
	unsigned int nb_streams;
	struct rte_mempool *pool;
	struct rte_mbuf **pkts;
	struct pkt_shape *shapes;
	struct rte_mbuf **bufs;       /* the pool's mbufs in arrival order: the
				       * first nb_pkts are pkts, the rest held */
	void **back;                  /* room for taking nb_pkts back */
	uint32_t nb_bufs;
	bool held;                    /* the packets are the bench's, not in the pool */
	bool cold;                    /* flushed from the caches before each pass */
	struct copy_ref *copies;
	uint32_t nb_pkts, max_pkts;
	uint64_t bytes;               /* payload per pass */
	uint64_t frames;              /* per pass */
};

enum side {
	SIDE_BASELINE, SIDE_BARE, SIDE_COPY_ALONE, SIDE_CHECK_ALONE, SIDE_CHECK_COPY_ALONE,
	SIDE_ICRC_OFF, SIDE_ICRC_ON, SIDE_ICRC_FUSED, SIDE_MAX
};

static const enum droce_rx_icrc side_icrc[SIDE_MAX] = {
	[SIDE_ICRC_OFF] = DROCE_RX_ICRC_OFF,
	[SIDE_ICRC_ON] = DROCE_RX_ICRC_ON,
	[SIDE_ICRC_FUSED] = DROCE_RX_ICRC_FUSED,
};

/* The rig's stack, not started. @p bridged (stream-rpc): its port is
 * bridged to another process's net_memif, so that its RX ring takes
 * packets from two threads, and its MTU is that port's (RC connections
 * refuse a path MTU that one end cannot carry).
 */
static int
rig_make(struct rig *r, bool bridged, char *err, size_t errlen)
{
	static unsigned int instance;
	static struct droce_conf conf;
	char name[32], dev[64];
	char *kv[] = { dev, "port.0.address=" OUR_IP "/24",
		       bridged ? "port.0.mtu=1500" : "port.0.mtu=9000",
		       "port.0.rxd=256", "port.0.txd=256", "stats.period=0",
		       "worker.thread.groups=1" };
	struct droce_lcore_layout layout;
	int id;

	memset(r, 0, sizeof(*r));
	snprintf(name, sizeof(name), "bench_s%u", instance++);
	snprintf(dev, sizeof(dev), "port.0.device=net_ring_%s", name);
	r->rx_ring = rte_ring_create(name, RX_RING_SIZE, SOCKET_ID_ANY,
				     (bridged ? 0 : RING_F_SP_ENQ) | RING_F_SC_DEQ);
	for (int t = 0; t < TX_RINGS; t++) {
		char tname[40];

		snprintf(tname, sizeof(tname), "%s_tx%d", name, t);
		r->tx_ring[t] = rte_ring_create(tname, 1024, SOCKET_ID_ANY,
						RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (r->tx_ring[t] == NULL) {
			snprintf(err, errlen, "no tx ring: %s", rte_strerror(rte_errno));
			return -1;
		}
	}
	if (r->rx_ring == NULL ||
	    (id = rte_eth_from_rings(name, &r->rx_ring, 1, r->tx_ring, TX_RINGS,
				     SOCKET_ID_ANY)) < 0) {
		snprintf(err, errlen, "no ring port: %s", rte_strerror(rte_errno));
		return -1;
	}
	r->port_id = (uint16_t)id;
	if (droce_gpu_find("host", &r->gpu, err, errlen) != 0) {
		id = droce_gpu_host_create("droce_host0", NULL);
		if (id < 0) {
			snprintf(err, errlen, "no host gpudev");
			return -1;
		}
		r->gpu = (int16_t)id;
	}
	if (droce_conf_load(&conf, NULL, kv, RTE_DIM(kv), err, errlen) != 0 ||
	    droce_lcores_layout(&conf, "droce-bench", &layout, err, errlen) != 0)
		return -1;
	r->conf = &conf;
	r->stack = droce_stack_create(&conf, &layout, err, errlen);
	if (r->stack == NULL)
		return -1;
	r->rx = droce_rx_create(r->stack, err, errlen);
	if (r->rx == NULL)
		return -1;
	droce_port_mac(r->stack, 0, &r->mac);
	return 0;
}

static int
rig_start(struct rig *r, char *err, size_t errlen)
{
	if (droce_stack_start(r->stack, false) != 0) {
		snprintf(err, errlen, "the stack does not start");
		return -1;
	}
	return 0;
}

static int
rig_up(struct rig *r, char *err, size_t errlen)
{
	return rig_make(r, false, err, errlen) == 0 ? rig_start(r, err, errlen) : -1;
}

static void
rig_down(struct rig *r)
{
	if (r->stack != NULL)
		droce_stack_stop(r->stack);
	droce_rx_destroy(r->rx);
	droce_stack_destroy(r->stack);
	/* The stack leaves a port it did not probe to whoever made it. */
	if (r->rx_ring != NULL && r->tx_ring[TX_RINGS - 1] != NULL)
		rte_eth_dev_close(r->port_id);
	rte_ring_free(r->rx_ring);
	for (int t = 0; t < TX_RINGS; t++)
		rte_ring_free(r->tx_ring[t]);
}

/* This lcore's cached mbufs back into the pool's ring, where a bulk get
 * of more than the cache holds looks.
 */
static void
pool_flush(struct rte_mempool *mp)
{
	struct rte_mempool_cache *c = rte_mempool_default_cache(mp, rte_lcore_id());

	if (c != NULL)
		rte_mempool_cache_flush(c, mp);
}

static void
workload_free(struct workload *w)
{
	for (unsigned int s = 0; s < w->nb_streams && w->streams != NULL; s++) {
		droce_rx_stream_free(w->streams[s].st);
		droce_gpu_buf_free(&w->streams[s].buf);
	}
	/* After a pass that went wrong they are in the pool already, or
	 * still in the port's ring; the pool goes with them.
	 */
	for (uint32_t i = 0; i < w->nb_pkts && w->held; i++)
		rte_pktmbuf_free(w->pkts[i]);
	if (w->nb_bufs > w->nb_pkts)
		rte_mempool_put_bulk(w->pool, (void **)w->bufs + w->nb_pkts,
				     w->nb_bufs - w->nb_pkts);
	free(w->streams);
	free(w->pkts);
	free(w->shapes);
	free(w->bufs);
	free(w->back);
	free(w->copies);
	rte_mempool_free(w->pool);
	memset(w, 0, sizeof(*w));
}

/* Keep a built packet and note where its payload goes. */
static int
add_packet(struct workload *w, const struct bench_stream *bs,
	   const struct droce_frame_spec *spec, char *err, size_t errlen)
{
	struct rte_mbuf *m;
	struct droce_pkt pkt;
	const uint32_t bth = RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) +
			     sizeof(struct rte_udp_hdr);

	if (w->nb_pkts == w->max_pkts) {
		snprintf(err, errlen, "more packets than the %u planned", w->max_pkts);
		return -1;
	}
	m = w->bufs[w->nb_pkts];
	rte_pktmbuf_reset(m);
	if (droce_frame_build(m, spec) != 0 ||
	    droce_roce_parse(rte_pktmbuf_mtod_offset(m, const uint8_t *, bth),
			     rte_pktmbuf_data_len(m) - bth, &pkt) != DROCE_PARSE_OK) {
		snprintf(err, errlen, "cannot build packet %u", w->nb_pkts);
		return -1;
	}
	w->pkts[w->nb_pkts] = m;
	w->shapes[w->nb_pkts] = (struct pkt_shape){
		.data_off = m->data_off, .data_len = m->data_len, .pkt_len = m->pkt_len,
	};
	w->copies[w->nb_pkts] = (struct copy_ref){
		.dst = (uint8_t *)bs->buf.cpu + spec->va, .src = pkt.payload,
		.len = pkt.payload_len,
		.l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, RTE_ETHER_HDR_LEN),
		.l3_len = rte_pktmbuf_data_len(m) - RTE_ETHER_HDR_LEN,
	};
	w->nb_pkts++;
	w->bytes += pkt.payload_len;
	return 0;
}

/* The next packet of @p bs into @p spec; false when it had none (its
 * frame was over). @p small: 64-byte writes built by hand (the HSB rule
 * allows only multiples of 128), the last of @p per_frame ending the frame.
 */
static bool
next_packet(struct bench_stream *bs, const struct droce_hsb_layout *l,
	    const uint8_t *frame_data, uint32_t per_frame, bool small,
	    struct droce_frame_spec *spec)
{
	const struct droce_hsb_sender_conf *c = &bs->tx.conf;
	uint32_t k = bs->psn % per_frame;
	bool last = k + 1 == per_frame;

	if (!small) {
		if (!bs->in_frame) {
			struct droce_hsb_metadata md = { .present = true };

			droce_hsb_frame_begin(&bs->tx, frame_data, &md);
			bs->in_frame = true;
		}
		if (droce_hsb_frame_next(&bs->tx, spec))
			return true;
		bs->in_frame = false;
		bs->frames_left--;
		return false;
	}
	*spec = (struct droce_frame_spec){
		.src_mac = c->src_mac, .dst_mac = c->dst_mac,
		.src_ip4 = c->src_ip, .dst_ip4 = c->dst_ip,
		.udp_src_port = DROCE_HSB_UDP_SPORT,
		.opcode = DROCE_OP_UC | (last ? DROCE_OP_WRITE_ONLY_IMM : DROCE_OP_WRITE_ONLY),
		.dest_qp = c->qp, .psn = bs->psn,
		.va = (uint64_t)bs->page * l->page_size + 64ull * k,
		.rkey = c->rkey, .dma_len = 64,
		.imm = droce_hsb_imm_encode(DROCE_HSB_IMM_CURRENT, bs->page, bs->psn),
		.payload = frame_data + 64ull * k, .payload_len = 64,
	};
	bs->psn++;
	if (last) {
		bs->page++;
		bs->frames_left--;
	}
	return true;
}

/* A packet's buffer as droce's port pool makes it for the smallest usual
 * MTU that carries the packet: 1500, or 9000 for jumbo frames. Its size
 * sets how far apart the packets lie, which decides how much of them the
 * hardware prefetcher fetches on its own.
 */
static uint32_t
port_data_room(uint32_t payload)
{
	const uint32_t headers = sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) +
				 sizeof(struct droce_bth) + sizeof(struct droce_reth) +
				 DROCE_ICRC_LEN;
	uint32_t mtu = payload + headers <= RTE_ETHER_MTU ? RTE_ETHER_MTU : 9000;

	return RTE_MAX((uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE,
		       RTE_PKTMBUF_HEADROOM + mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN);
}

static int
by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(struct rte_mbuf *const *)a;
	uintptr_t y = (uintptr_t)*(struct rte_mbuf *const *)b;

	return x < y ? -1 : x > y;
}

/* Every mbuf of the pool, in @p order. The packets use the first ones;
 * only they go round, the others are held.
 */
static int
buffers_take(struct workload *w, enum buffer_order order)
{
	for (; w->nb_bufs < w->max_pkts; w->nb_bufs++) {
		w->bufs[w->nb_bufs] = rte_pktmbuf_alloc(w->pool);
		if (w->bufs[w->nb_bufs] == NULL)
			return -1;
	}
	qsort(w->bufs, w->nb_bufs, sizeof(*w->bufs), by_address);
	if (order == ORDER_SHUFFLED) {
		/* A fixed seed: every run measures the same order. */
		uint64_t x = 0x9e3779b97f4a7c15ull;

		for (uint32_t i = w->nb_bufs - 1; i > 0; i--) {
			uint32_t j;
			struct rte_mbuf *t;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			j = (uint32_t)(x % (i + 1));
			t = w->bufs[i];
			w->bufs[i] = w->bufs[j];
			w->bufs[j] = t;
		}
	}
	return 0;
}

/*
 * @p nb_streams HSB streams of @p pages pages each, and the packets that
 * write one frame into each page, the streams' packets interleaved one by
 * one (as from several sensors at once). @p payload 0: 64-byte packets,
 * built by hand (the HSB rule allows only multiples of 128), 64 to a frame.
 */
static int
workload_build(struct rig *r, struct workload *w, uint32_t first_qp,
	       unsigned int nb_streams, size_t frame_size, unsigned int pages,
	       uint32_t payload, enum buffer_order order, char *err, size_t errlen)
{
	static uint8_t *frame_data;
	static size_t frame_data_len;
	static unsigned int instance;
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	uint32_t per_frame, data_room;
	struct droce_hsb_layout l;

	memset(w, 0, sizeof(*w));
	droce_hsb_layout(frame_size, pages, PAGE_ALIGN, &l);
	if (frame_data_len < frame_size) {
		free(frame_data);
		frame_data = malloc(frame_size);
		if (frame_data == NULL) {
			frame_data_len = 0;
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		frame_data_len = frame_size;
		droce_hsb_pattern_fill(frame_data, frame_size, 0);
	}
	per_frame = payload != 0 ? (uint32_t)((frame_size + payload - 1) / payload) + 1
				 : (uint32_t)(frame_size / 64);
	w->max_pkts = per_frame * pages * nb_streams;
	data_room = port_data_room(payload);
	w->streams = calloc(nb_streams, sizeof(*w->streams));
	w->pkts = calloc(w->max_pkts, sizeof(*w->pkts));
	w->shapes = calloc(w->max_pkts, sizeof(*w->shapes));
	w->bufs = calloc(w->max_pkts, sizeof(*w->bufs));
	w->back = calloc(w->max_pkts, sizeof(*w->back));
	w->copies = calloc(w->max_pkts, sizeof(*w->copies));
	snprintf(pool_name, sizeof(pool_name), "bench_stream%u", instance++);
	/* A cache per lcore, as droce's port pools have (NET_MBUF_CACHE). */
	w->pool = rte_pktmbuf_pool_create(pool_name, w->max_pkts, RTE_MIN(256u, w->max_pkts / 2),
					  0, (uint16_t)data_room, SOCKET_ID_ANY);
	if (w->streams == NULL || w->pkts == NULL || w->shapes == NULL || w->bufs == NULL ||
	    w->back == NULL || w->copies == NULL || w->pool == NULL) {
		snprintf(err, errlen, "no room for %u packets (give the EAL more memory with -m)",
			 w->max_pkts);
		return -1;
	}
	if (buffers_take(w, order) != 0) {
		snprintf(err, errlen, "cannot take the pool's %u mbufs", w->max_pkts);
		return -1;
	}
	w->nb_streams = nb_streams;
	w->held = true;
	for (unsigned int s = 0; s < nb_streams; s++) {
		struct bench_stream *bs = &w->streams[s];
		struct droce_hsb_sender_conf c = {
			.src_mac = { .addr_bytes = { 0x02, 0, 0, 0, 0, 0x02 } },
			.dst_mac = r->mac,
			.src_ip = inet_addr(PEER_IP), .dst_ip = inet_addr(OUR_IP),
			.qp = first_qp + s, .rkey = 0x5eed0000 + first_qp + s,
			.frame_size = l.frame_size, .page_size = l.page_size,
			.metadata_offset = l.metadata_offset, .pages = pages,
			.payload_per_packet = payload != 0 ? payload : 128,
			.imm = DROCE_HSB_IMM_CURRENT,
		};

		if (droce_gpu_buf_alloc(r->gpu, l.buffer_size, PAGE_ALIGN, &bs->buf, err,
					errlen) != 0 ||
		    droce_hsb_sender_init(&bs->tx, &c, err, errlen) != 0)
			return -1;
		memset(bs->buf.cpu, 0, l.buffer_size);
		bs->params = (struct droce_rx_params){
			.port = 0, .queue = DROCE_RX_ANY_QUEUE, .buf = &bs->buf,
			.frame_size = l.frame_size, .page_size = l.page_size,
			.pages = pages, .metadata_offset = l.metadata_offset,
			.peer_ip = PEER_IP, .queue_size = 4, .qp = c.qp, .rkey = c.rkey,
			.imm = DROCE_HSB_IMM_CURRENT, .placement = DROCE_PLACE_COPY,
		};
		bs->st = droce_rx_stream_new(r->rx);
		if (bs->st == NULL) {
			snprintf(err, errlen, "no stream %u", s);
			return -1;
		}
		bs->frames_left = pages;
	}
	w->frames = (uint64_t)pages * nb_streams;
	for (bool more = true; more;) {
		more = false;
		for (unsigned int s = 0; s < nb_streams; s++) {
			struct bench_stream *bs = &w->streams[s];
			struct droce_frame_spec spec;

			if (bs->frames_left == 0)
				continue;
			more = true;
			if (next_packet(bs, &l, frame_data, per_frame, payload == 0, &spec) &&
			    add_packet(w, bs, &spec, err, errlen) != 0)
				return -1;
		}
	}
	return 0;
}

/* Take the packets back from the pool they were freed into, as built:
 * the pool holds nothing else, so what comes out is exactly them.
 */
static int
packets_back(struct workload *w, char *err, size_t errlen)
{
	pool_flush(w->pool);
	if (rte_mempool_get_bulk(w->pool, w->back, w->nb_pkts) != 0) {
		snprintf(err, errlen, "a pass did not free all %u packets (%u in the pool)",
			 w->nb_pkts, rte_mempool_avail_count(w->pool));
		return -1;
	}
	w->held = true;
	for (uint32_t i = 0; i < w->nb_pkts; i++) {
		struct rte_mbuf *m = w->pkts[i];

		m->data_off = w->shapes[i].data_off;
		m->data_len = w->shapes[i].data_len;
		m->pkt_len = w->shapes[i].pkt_len;
	}
	return 0;
}

/* Before a timed pass of cold packets: their bytes out of every cache,
 * where a NIC's DMA into memory leaves them (the mbuf headers stay: the
 * driver writes them as it hands the packets over). With @p r, its
 * worker polls now and then meanwhile, as it would between passes: the
 * port carries other traffic too (stream-rpc).
 */
static void
pass_prepare_polling(const struct workload *w, struct rig *r)
{
#ifdef RTE_ARCH_X86
	if (!w->cold)
		return;
	for (uint32_t i = 0; i < w->nb_pkts; i++) {
		if (r != NULL && i % FEED_BURST == 0)
			droce_worker_poll(r->stack, 0);
		const struct rte_mbuf *m = w->pkts[i];
		const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
		const uint8_t *end = b + rte_pktmbuf_data_len(m);

		for (b = RTE_PTR_ALIGN_FLOOR(b, RTE_CACHE_LINE_SIZE); b < end;
		     b += RTE_CACHE_LINE_SIZE)
			_mm_clflush(b);
	}
	_mm_mfence();
#else
	RTE_SET_USED(w);
	RTE_SET_USED(r);
#endif
}

static void
pass_prepare(const struct workload *w)
{
	pass_prepare_polling(w, NULL);
}

/* Start every stream with @p icrc: fresh PSN state. */
static int
streams_start(struct workload *w, enum droce_rx_icrc icrc, char *err, size_t errlen)
{
	for (unsigned int s = 0; s < w->nb_streams; s++) {
		struct bench_stream *bs = &w->streams[s];

		bs->params.icrc = icrc;
		if (droce_rx_stream_start(bs->st, &bs->params, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/* After a pass: everything placed, nothing refused or lost. */
static int
pass_check(const struct workload *w, char *err, size_t errlen)
{
	uint64_t packets = 0, frames = 0, refused = 0, lost = 0;

	for (unsigned int s = 0; s < w->nb_streams; s++) {
		struct droce_rx_stream_stats st;

		droce_rx_stream_stats(w->streams[s].st, &st);
		packets += st.packets;
		frames += st.frames;
		lost += st.lost_packets + st.frames_lossy;
		for (int k = 0; k < DROCE_RX_REFUSAL_MAX; k++)
			refused += st.refused[k];
	}
	if (packets == w->nb_pkts && frames == w->frames && refused == 0 && lost == 0)
		return 0;
	snprintf(err, errlen,
		 "a pass placed %" PRIu64 " of %u packets, %" PRIu64 " of %" PRIu64
		 " frames, %" PRIu64 " refused, %" PRIu64 " lost",
		 packets, w->nb_pkts, frames, w->frames, refused, lost);
	return -1;
}

/* Packets [i, i + n) arrive. */
static inline void
feed(struct rig *r, struct workload *w, uint32_t i, uint32_t n)
{
	rte_ring_sp_enqueue_burst(r->rx_ring, (void **)&w->pkts[i], n, NULL);
}

static void
streams_close(struct workload *w)
{
	for (unsigned int s = 0; s < w->nb_streams; s++)
		droce_rx_stream_close(w->streams[s].st);
}

/* After a timed pass of @p t seconds: checked, its streams closed and its
 * packets taken back; @p t, or -1 if it was not clean.
 */
static double
pass_end(struct workload *w, double t, char *err, size_t errlen)
{
	int ret = pass_check(w, err, errlen);

	streams_close(w);
	if (ret == 0)
		ret = packets_back(w, err, errlen);
	return ret == 0 ? t : -1;
}

/* Seconds for one pass through the stream path; -1 if it was not clean.
 * The streams run for their pass only: the next pass repeats its PSNs.
 */
static double
droce_pass(struct rig *r, struct workload *w, enum droce_rx_icrc icrc, char *err,
	   size_t errlen)
{
	double t;

	if (streams_start(w, icrc, err, errlen) != 0)
		return -1;
	pass_prepare(w);
	w->held = false;        /* from here on the path frees them */
	t = bench_now();
	for (uint32_t i = 0; i < w->nb_pkts; i += FEED_BURST) {
		feed(r, w, i, RTE_MIN((uint32_t)FEED_BURST, w->nb_pkts - i));
		droce_worker_poll(r->stack, 0);
	}
	while (droce_worker_poll(r->stack, 0) != 0)
		;
	return pass_end(w, bench_now() - t, err, errlen);
}

/* The bare receive (see the top of the file): seconds for one pass. The
 * port hands the packets over in the order they were fed, which is the
 * order of their copies.
 */
static double
bare_receive_pass(struct rig *r, struct workload *w, char *err, size_t errlen)
{
	struct rte_mbuf *burst[FEED_BURST];
	uint32_t got = 0;
	double t;

	pass_prepare(w);
	w->held = false;        /* from here on this pass frees them */
	t = bench_now();
	for (uint32_t i = 0; i < w->nb_pkts || got < w->nb_pkts;) {
		uint16_t n;

		if (i < w->nb_pkts) {
			uint32_t k = RTE_MIN((uint32_t)FEED_BURST, w->nb_pkts - i);

			feed(r, w, i, k);
			i += k;
		}
		n = rte_eth_rx_burst(r->port_id, 0, burst, FEED_BURST);
		if (n == 0 && i == w->nb_pkts)
			break;  /* lost in the port: packets_back() says so */
		for (uint16_t k = 0; k < n; k++, got++)
			memcpy(w->copies[got].dst, w->copies[got].src, w->copies[got].len);
		rte_pktmbuf_free_bulk(burst, n);
	}
	t = bench_now() - t;
	return packets_back(w, err, errlen) == 0 ? t : -1;
}

static double
memcpy_pass(const struct workload *w)
{
	double t;

	pass_prepare(w);
	t = bench_now();

	for (uint32_t i = 0; i < w->nb_pkts; i++)
		memcpy(w->copies[i].dst, w->copies[i].src, w->copies[i].len);
	return bench_now() - t;
}

/* The best prefetch found for the work alone on this kind of machine
 * (lib/rx's, packet.c): every line of a packet this far ahead into L2,
 * then this near into L1.
 */
#define ALONE_PREFETCH_FAR 8
#define ALONE_PREFETCH_NEAR 2

static inline void
prefetch_lines(const struct copy_ref *c, bool near)
{
	for (uint32_t o = 0; o < c->l3_len; o += RTE_CACHE_LINE_SIZE)
		if (near)
			rte_prefetch0(c->l3 + o);
		else
			rte_prefetch1(c->l3 + o);
}

/* The placement's own work alone, in a loop with nothing else: each
 * packet prefetched as well as this machine allows, with @p check its ICRC checked, with
 * @p copy its payload copied as the placer does (streaming stores). -1 if
 * a check failed.
 */
static double
work_alone_pass(const struct workload *w, gpu_copy_lines_t *lines, bool check, bool copy)
{
	unsigned int bad = 0;
	double t;

	pass_prepare(w);
	t = bench_now();
	for (uint32_t i = 0; i < w->nb_pkts; i++) {
		const struct copy_ref *c = &w->copies[i];

		if (i == 0)
			for (uint32_t k = 0; k < ALONE_PREFETCH_FAR && k < w->nb_pkts; k++)
				prefetch_lines(&w->copies[k], k < ALONE_PREFETCH_NEAR);
		if (i + ALONE_PREFETCH_FAR < w->nb_pkts)
			prefetch_lines(&w->copies[i + ALONE_PREFETCH_FAR], false);
		if (i + ALONE_PREFETCH_NEAR < w->nb_pkts)
			prefetch_lines(&w->copies[i + ALONE_PREFETCH_NEAR], true);
		if (check && !droce_icrc_ok(c->l3, c->l3_len))
			bad++;
		if (copy)
			gpu_copy_streaming(lines, c->dst, c->src, c->len);
	}
	rte_wmb();
	t = bench_now() - t;
	return bad == 0 ? t : -1;
}

static const char *const side_name[SIDE_MAX] = {
	[SIDE_BASELINE] = "memcpy", [SIDE_BARE] = "bare receive",
	[SIDE_COPY_ALONE] = "copy alone", [SIDE_CHECK_ALONE] = "check alone",
	[SIDE_CHECK_COPY_ALONE] = "check+copy alone",
	[SIDE_ICRC_OFF] = "ICRC off",
	[SIDE_ICRC_ON] = "ICRC on", [SIDE_ICRC_FUSED] = "ICRC fused",
};

/* Samples per round; a sample is one pass of each side, in an order that
 * turns from sample to sample, so that a drift of the machine's speed
 * reaches every side alike. Ratios are taken within a sample.
 */
#define SAMPLES_PER_ROUND 16

/* Median over @p n samples of a[i] / b[i]. */
static double
median_ratio(const double *a, const double *b, unsigned int n)
{
	double q[BENCH_MAX_SAMPLES];

	for (unsigned int i = 0; i < n; i++)
		q[i] = a[i] / b[i];
	return bench_median(q, n);
}

/* Seconds for @p passes passes of one side; -1 if one was not clean. */
static double
side_time(struct rig *r, struct workload *w, int side, gpu_copy_lines_t *lines,
	  unsigned int passes, char *err, size_t errlen)
{
	double sum = 0;

	for (unsigned int p = 0; p < passes; p++) {
		double t = side == SIDE_BASELINE ? memcpy_pass(w)
			: side == SIDE_BARE ? bare_receive_pass(r, w, err, errlen)
			: side == SIDE_COPY_ALONE ? work_alone_pass(w, lines, false, true)
			: side == SIDE_CHECK_ALONE ? work_alone_pass(w, lines, true, false)
			: side == SIDE_CHECK_COPY_ALONE ? work_alone_pass(w, lines, true, true)
			: droce_pass(r, w, side_icrc[side], err, errlen);

		if (t < 0 && (side == SIDE_CHECK_ALONE || side == SIDE_CHECK_COPY_ALONE))
			snprintf(err, errlen, "a packet failed its ICRC check");
		if (t < 0)
			return -1;
		sum += t;
	}
	return sum;
}

/* One table row: @p w's sides in @p sides (the baseline and the bare
 * receive always; the work alone only where the placer has streaming
 * stores), SAMPLES_PER_ROUND samples of @p passes passes per round,
 * printed with their ratios to the baseline, droce's to the bare receive
 * too.
 */
static int
place_row(struct rig *r, struct workload *w, const struct bench_opts *o,
	  uint32_t payload, unsigned int passes, unsigned int sides, char *err, size_t errlen)
{
	static double gbps[SIDE_MAX][BENCH_MAX_SAMPLES];
	unsigned int samples = o->rounds * SAMPLES_PER_ROUND;
	gpu_copy_lines_t *lines = gpu_copy_lines_select();
	const char *sep = "";

	sides |= (1u << SIDE_BASELINE) | (1u << SIDE_BARE);
	if (lines == NULL)
		sides &= ~((1u << SIDE_COPY_ALONE) | (1u << SIDE_CHECK_ALONE) |
			   (1u << SIDE_CHECK_COPY_ALONE));
	for (unsigned int n = 0; n < samples; n++)
		for (int k = 0; k < SIDE_MAX; k++) {
			int side = (int)((n + (unsigned int)k) % SIDE_MAX);
			double t;

			if (!(sides & (1u << side)))
				continue;
			t = side_time(r, w, side, lines, passes, err, errlen);
			if (t < 0)
				return -1;
			gbps[side][n] = (double)w->bytes * passes / t / 1e9;
		}
	printf("    %4u-byte payloads (%u packets a pass): memcpy %.2f GB/s", payload,
	       w->nb_pkts, bench_median(gbps[SIDE_BASELINE], samples));
	for (int side = SIDE_BARE; side < SIDE_ICRC_OFF; side++)
		if (sides & (1u << side))
			printf(", %s %.2f GB/s (%.2fx)", side_name[side],
			       bench_median(gbps[side], samples),
			       median_ratio(gbps[side], gbps[SIDE_BASELINE], samples));
	printf("; droce ");
	for (int side = SIDE_ICRC_OFF; side < SIDE_MAX; side++) {
		if (!(sides & (1u << side)))
			continue;
		printf("%s%s %.2f GB/s (%.2fx; %.2fx of bare)", sep, side_name[side],
		       bench_median(gbps[side], samples),
		       median_ratio(gbps[side], gbps[SIDE_BASELINE], samples),
		       median_ratio(gbps[side], gbps[SIDE_BARE], samples));
		sep = ", ";
	}
	printf("\n");
	fflush(stdout);
	return 0;
}

/* The conditions stream-place measures: where the packets lie and
 * whether they are in the caches. Cold ones fill 32 MiB of 1 MiB frames,
 * about the L3 of a server core's share; hot ones 512 KiB, each pass
 * repeated so that a sample lasts long enough to time.
 */
static const struct place_condition {
	const char *what;
	enum buffer_order order;
	bool cold;
	size_t frame_size;
	unsigned int pages, passes;
} place_conditions[] = {
	{ "cold (flushed, as a NIC's DMA leaves them), sequential buffers",
	  ORDER_SEQUENTIAL, true, 1u << 20, 32, 1 },
	{ "cold, shuffled buffers", ORDER_SHUFFLED, true, 1u << 20, 32, 1 },
	{ "hot (in the caches, 512 KiB a pass), sequential buffers",
	  ORDER_SEQUENTIAL, false, 128u << 10, 4, 16 },
};

static const uint32_t place_payloads[] = { 1408, 4096 };

#define PLACE_WORKLOADS (RTE_DIM(place_conditions) * RTE_DIM(place_payloads))

/* Every condition's rows for @p sides, at the bitwidth in force. */
static int
place_table(struct rig *r, struct workload *w, const struct bench_opts *o,
	    unsigned int sides, char *err, size_t errlen)
{
	for (unsigned int c = 0; c < RTE_DIM(place_conditions); c++) {
		printf("   %s:\n", place_conditions[c].what);
		for (unsigned int pi = 0; pi < RTE_DIM(place_payloads); pi++)
			if (place_row(r, &w[c * RTE_DIM(place_payloads) + pi], o,
				      place_payloads[pi], place_conditions[c].passes, sides,
				      err, errlen) != 0)
				return -1;
	}
	return 0;
}

/* The table at the EAL's SIMD bitwidth, and again for the ICRC sides with
 * 512-bit vectors allowed where the CPU has them (DPDK allows 256 unless
 * told otherwise; the baseline, glibc's memcpy, picks its own width).
 */
int
bench_stream_place(const struct bench_opts *o)
{
	const unsigned int all = (1u << SIDE_COPY_ALONE) | (1u << SIDE_CHECK_ALONE) |
				 (1u << SIDE_CHECK_COPY_ALONE) |
				 (1u << SIDE_ICRC_OFF) | (1u << SIDE_ICRC_ON) |
				 (1u << SIDE_ICRC_FUSED);
	const unsigned int unchecked = (1u << SIDE_COPY_ALONE) | (1u << SIDE_ICRC_OFF);
	uint16_t bitwidth = rte_vect_get_max_simd_bitwidth();
	struct workload w[PLACE_WORKLOADS];
	char err[DROCE_ERR_LEN];
	struct rig r;
	int ret = 1;

	RTE_BUILD_BUG_ON(BENCH_MAX_ROUNDS * SAMPLES_PER_ROUND > BENCH_MAX_SAMPLES);
	memset(w, 0, sizeof(w));
	if (rig_up(&r, err, sizeof(err)) != 0)
		goto out;
	for (unsigned int c = 0; c < RTE_DIM(place_conditions); c++)
		for (unsigned int pi = 0; pi < RTE_DIM(place_payloads); pi++) {
			const struct place_condition *pc = &place_conditions[c];
			struct workload *wl = &w[c * RTE_DIM(place_payloads) + pi];

			if (workload_build(&r, wl, FIRST_QP, 1, pc->frame_size, pc->pages,
					   place_payloads[pi], pc->order, err, sizeof(err)) != 0)
				goto out;
			wl->cold = pc->cold;
		}
	printf("  one stream (host gpudev); %u samples per side; ICRC on: checked before the copy, fused: in its pass\n",
	       o->rounds * SAMPLES_PER_ROUND);
	droce_crc_select(DROCE_CRC_AUTO);
	printf("  at the EAL's SIMD bitwidth %u (CRC %s):\n", bitwidth, droce_crc_impl_name());
	if (place_table(&r, w, o, all, err, sizeof(err)) != 0)
		goto out;
	if (bitwidth < RTE_VECT_SIMD_512 && bench_allow_512()) {
		int failed;

		droce_crc_select(DROCE_CRC_AUTO);
		printf("  with 512-bit vectors allowed (CRC %s):\n", droce_crc_impl_name());
		failed = place_table(&r, w, o, all & ~unchecked, err, sizeof(err));
		rte_vect_set_max_simd_bitwidth(bitwidth);
		droce_crc_select(DROCE_CRC_AUTO);
		if (failed != 0)
			goto out;
	}
	printf("  (ratios: medians of the ratio within each sample)\n");
	ret = 0;
out:
	if (ret != 0)
		fprintf(stderr, "droce-bench: stream-place: %s\n", err);
	for (unsigned int i = 0; i < PLACE_WORKLOADS; i++)
		workload_free(&w[i]);
	rig_down(&r);
	return ret;
}

/* A net_null port to transmit to, as testpmd's io forwarding would (its
 * RX queue is never polled, but it needs a pool).
 */
static int
null_port_up(const char *name, uint16_t *port_id, struct rte_mempool **pool, char *err,
	     size_t errlen)
{
	int ret = rte_dev_probe(name);

	if (ret != 0) {
		snprintf(err, errlen, "%s: %s", name, rte_strerror(-ret));
		return -1;
	}
	return bench_port_up(name, port_id, pool, err, errlen);
}

/* testpmd's io forwarding (pkt_burst_io_forward) on the same feed: one
 * pass, in seconds.
 */
static double
io_forward_pass(struct rig *r, struct workload *w, uint16_t tx_port, char *err,
		size_t errlen)
{
	struct rte_mbuf *burst[FEED_BURST];
	double t;

	pass_prepare(w);
	w->held = false;        /* from here on net_null frees them */
	t = bench_now();
	for (uint32_t i = 0; i < w->nb_pkts; i += FEED_BURST) {
		uint16_t n, sent;

		feed(r, w, i, RTE_MIN((uint32_t)FEED_BURST, w->nb_pkts - i));
		n = rte_eth_rx_burst(r->port_id, 0, burst, FEED_BURST);
		sent = rte_eth_tx_burst(tx_port, 0, burst, n);
		if (sent < n)
			rte_pktmbuf_free_bulk(burst + sent, n - sent);
	}
	t = bench_now() - t;
	return packets_back(w, err, errlen) == 0 ? t : -1;
}

/* 64 frames of 64 packets, one frame per page: 4096 packets cycle
 * through, as many as the buffers of a 4096-descriptor RX ring.
 */
int
bench_stream_pps(const struct bench_opts *o)
{
	static const char null_name[] = "net_null_bench_pps";
	enum { IO_FORWARD, BARE, DROCE_ON, DROCE_OFF, PPS_SIDES };
	static const char *const name[PPS_SIDES] = {
		[IO_FORWARD] = "io forwarding", [BARE] = "bare receive",
		[DROCE_ON] = "droce ICRC on", [DROCE_OFF] = "droce ICRC off",
	};
	static const enum droce_rx_icrc icrc[PPS_SIDES] = {
		[DROCE_ON] = DROCE_RX_ICRC_ON, [DROCE_OFF] = DROCE_RX_ICRC_OFF,
	};
	static double mpps[PPS_SIDES][BENCH_MAX_SAMPLES];
	const unsigned int pages = 64, passes_per_sample = 128;
	unsigned int samples = o->rounds * SAMPLES_PER_ROUND;
	char err[DROCE_ERR_LEN];
	uint16_t null_port = RTE_MAX_ETHPORTS;
	struct rte_mempool *null_pool = NULL;
	struct workload w = { 0 };
	struct rig r;
	int ret = 1;

	if (rig_up(&r, err, sizeof(err)) != 0 ||
	    null_port_up(null_name, &null_port, &null_pool, err, sizeof(err)) != 0 ||
	    workload_build(&r, &w, FIRST_QP, 1, 4096, pages, 0, ORDER_SEQUENTIAL, err,
			   sizeof(err)) != 0)
		goto out;
	printf("  64-byte payloads, 64 to a frame, %u pages (%u packets); %u samples of %u packets per side\n",
	       pages, w.nb_pkts, samples, passes_per_sample * w.nb_pkts);
	for (unsigned int n = 0; n < samples; n++)
		for (unsigned int k = 0; k < PPS_SIDES; k++) {
			unsigned int side = (n + k) % PPS_SIDES;
			double t = 0;

			for (unsigned int p = 0; p < passes_per_sample; p++) {
				double dt = side == IO_FORWARD
					    ? io_forward_pass(&r, &w, null_port, err, sizeof(err))
					    : side == BARE ? bare_receive_pass(&r, &w, err, sizeof(err))
					    : droce_pass(&r, &w, icrc[side], err, sizeof(err));

				if (dt < 0)
					goto out;
				t += dt;
			}
			mpps[side][n] = (double)passes_per_sample * w.nb_pkts / t / 1e6;
		}
	printf("  median: %s %.2f Mpps, %s %.2f Mpps (%.2fx)", name[IO_FORWARD],
	       bench_median(mpps[IO_FORWARD], samples), name[BARE],
	       bench_median(mpps[BARE], samples),
	       median_ratio(mpps[BARE], mpps[IO_FORWARD], samples));
	for (unsigned int side = DROCE_ON; side < PPS_SIDES; side++)
		printf(", %s %.2f Mpps (%.2fx; %.2fx of bare)", name[side],
		       bench_median(mpps[side], samples),
		       median_ratio(mpps[side], mpps[IO_FORWARD], samples),
		       median_ratio(mpps[side], mpps[BARE], samples));
	printf("\n");
	ret = 0;
out:
	if (ret != 0)
		fprintf(stderr, "droce-bench: stream-pps: %s\n", err);
	workload_free(&w);
	if (null_port != RTE_MAX_ETHPORTS)
		bench_port_down(null_port, null_pool);
	rig_down(&r);
	return ret;
}

/* The same bytes in the same number of pages, split among 1, 16 or 256
 * streams whose packets come interleaved one by one. memcpy of the same
 * payloads in the same order shows what the memory system alone makes of
 * so many places written at once.
 */
int
bench_stream_scale(const struct bench_opts *o)
{
	static const unsigned int counts[] = { 1, 16, 256 };
	static const uint32_t first_qp[] = { 0x100, 0x200, 0x400 };
	static double gbps[RTE_DIM(counts)][BENCH_MAX_SAMPLES];
	static double copy_gbps[RTE_DIM(counts)][BENCH_MAX_SAMPLES];
	const unsigned int total_pages = 512;
	const size_t frame_size = 64u << 10;
	unsigned int samples = o->rounds * SAMPLES_PER_ROUND;
	struct workload w[RTE_DIM(counts)];
	char err[DROCE_ERR_LEN];
	struct rig r;
	int ret = 1;

	memset(w, 0, sizeof(w));
	if (rig_up(&r, err, sizeof(err)) != 0)
		goto out;
	for (unsigned int c = 0; c < RTE_DIM(counts); c++) {
		if (workload_build(&r, &w[c], first_qp[c], counts[c], frame_size,
				   total_pages / counts[c], 1408, ORDER_SEQUENTIAL, err,
				   sizeof(err)) != 0)
			goto out;
		w[c].cold = true;
	}
	printf("  %u pages of %zu KiB frames in all, split among the streams; 1408-byte payloads, the streams' packets interleaved, ICRC on; %u samples of a pass per count\n",
	       total_pages, frame_size >> 10, samples);
	for (unsigned int n = 0; n < samples; n++)
		for (unsigned int k = 0; k < 2 * RTE_DIM(counts); k++) {
			unsigned int c = (n + k) % RTE_DIM(counts);
			double t = k < RTE_DIM(counts)
				   ? droce_pass(&r, &w[c], DROCE_RX_ICRC_ON, err, sizeof(err))
				   : memcpy_pass(&w[c]);

			if (t < 0)
				goto out;
			if (k < RTE_DIM(counts))
				gbps[c][n] = (double)w[c].bytes / t / 1e9;
			else
				copy_gbps[c][n] = (double)w[c].bytes / t / 1e9;
		}
	for (unsigned int c = 0; c < RTE_DIM(counts); c++)
		printf("  %3u stream%s: droce %.2f GB/s (%.2fx of 1 stream); memcpy in the same order %.2f GB/s (%.2fx)\n",
		       counts[c], counts[c] == 1 ? " " : "s", bench_median(gbps[c], samples),
		       median_ratio(gbps[c], gbps[0], samples),
		       bench_median(copy_gbps[c], samples),
		       median_ratio(copy_gbps[c], copy_gbps[0], samples));
	ret = 0;
out:
	if (ret != 0)
		fprintf(stderr, "droce-bench: stream-scale: %s\n", err);
	for (unsigned int c = 0; c < RTE_DIM(counts); c++)
		workload_free(&w[c]);
	rig_down(&r);
	return ret;
}

/* ---- stream-rpc: placement beside a saturating RPC load on the same port ---------------- */

#define RPC_SERVER_IP "198.18.0.3"
#define BRIDGE_PORT "net_memif_bench_rpc"
#define BRIDGE_QUEUES 2         /* as many as the server's side has (memif pairs them) */
#define BRIDGE_BURST 32
#define BRIDGE_MBUFS 4096
#define RPC_PASSES 4            /* a sample: this many passes of the workload */
#define RPC_WARMUP_S 0.002      /* the worker polls this long before a sample's clock starts */
#define RPC_LINK_WAIT_S 10.0

/*
 * The wire from the rig's ring port to the RPC server's process: the
 * control lcore's hook moves what the server's net_memif end sends into
 * the port's RX ring, where the worker takes it beside the sensor packets
 * and hands it back with its one ring enqueue, and what the port sends
 * (both its TX queues) out over net_memif. Counted on the control lcore
 * only.
 */
struct bridge {
	struct rig *r;
	uint16_t port_id;
	bool started;
	struct rte_mempool *pool;
	uint64_t in, out, dropped;
};

static unsigned int
bridge_round(struct droce_lcore_ctx *ctx, void *arg)
{
	struct bridge *b = arg;
	struct rte_mbuf *m[BRIDGE_BURST];
	unsigned int work = 0;

	(void)ctx;
	for (uint16_t q = 0; q < BRIDGE_QUEUES; q++) {
		uint16_t n = rte_eth_rx_burst(b->port_id, q, m, BRIDGE_BURST);
		unsigned int k = rte_ring_mp_enqueue_burst(b->r->rx_ring, (void **)m, n, NULL);

		if (k < n) {
			rte_pktmbuf_free_bulk(m + k, n - k);
			b->dropped += n - k;
		}
		b->in += k;
		work += n;
	}
	for (int t = 0; t < TX_RINGS; t++) {
		unsigned int n = rte_ring_sc_dequeue_burst(b->r->tx_ring[t], (void **)m,
							   BRIDGE_BURST, NULL);
		uint16_t k = rte_eth_tx_burst(b->port_id, 0, m, (uint16_t)n);

		if (k < n) {
			rte_pktmbuf_free_bulk(m + k, n - k);
			b->dropped += n - k;
		}
		b->out += k;
		work += n;
	}
	return work;
}

/* The client end of the server's net_memif pair, as a plain ethdev. */
static int
bridge_up(struct bridge *b, struct rig *r, const char *sock, char *err, size_t errlen)
{
	struct rte_eth_conf ec = { 0 };
	char args[256];
	int ret;

	memset(b, 0, sizeof(*b));
	b->r = r;
	b->port_id = RTE_MAX_ETHPORTS;
	snprintf(args, sizeof(args), "%s,role=client,socket=%s", BRIDGE_PORT, sock);
	ret = rte_dev_probe(args);
	if (ret == 0 && rte_eth_dev_get_port_by_name(BRIDGE_PORT, &b->port_id) != 0) {
		rte_vdev_uninit(BRIDGE_PORT);
		ret = -ENODEV;
	}
	if (ret != 0) {
		snprintf(err, errlen, "%s: %s", args, rte_strerror(-ret));
		return -1;
	}
	b->pool = rte_pktmbuf_pool_create("bench_bridge", BRIDGE_MBUFS, 256, 0,
					  RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	ret = b->pool == NULL ? -ENOMEM
			      : rte_eth_dev_configure(b->port_id, BRIDGE_QUEUES, BRIDGE_QUEUES, &ec);
	for (uint16_t q = 0; ret == 0 && q < BRIDGE_QUEUES; q++) {
		ret = rte_eth_rx_queue_setup(b->port_id, q, 1024, SOCKET_ID_ANY, NULL, b->pool);
		if (ret == 0)
			ret = rte_eth_tx_queue_setup(b->port_id, q, 1024, SOCKET_ID_ANY, NULL);
	}
	if (ret == 0)
		ret = rte_eth_dev_start(b->port_id);
	if (ret != 0) {
		snprintf(err, errlen, "%s: %s", BRIDGE_PORT, rte_strerror(-ret));
		return -1;
	}
	b->started = true;
	return 0;
}

static void
bridge_down(struct bridge *b)
{
	struct rte_eth_dev_info info;

	if (b->port_id == RTE_MAX_ETHPORTS)
		return;
	if (b->started)
		rte_eth_dev_stop(b->port_id);
	if (rte_eth_dev_info_get(b->port_id, &info) == 0 && info.device != NULL) {
		rte_eth_dev_close(b->port_id);
		rte_dev_remove(info.device);
	}
	/* Packets of its pool may still lie in the rig's rings: the pool's
	 * memory goes anyway.
	 */
	rte_mempool_free(b->pool);
	b->port_id = RTE_MAX_ETHPORTS;
}

enum rpc_side { RPC_MEMCPY, RPC_QUIET, RPC_LOADED, RPC_SIDES };

enum rpc_command { CMD_POLL, CMD_SAMPLE, CMD_EXIT };

/* What the control lcore asks of the worker lcore, and what it measured. */
struct rpc_worker_run {
	struct rig *r;
	struct workload *w;
	atomic_int command;
	atomic_bool sample_done;
	enum rpc_side side;
	double wall_s, cpu_s;   /* of the last sample */
	bool failed;
	char err[DROCE_ERR_LEN];
};

static double
thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* droce_pass() on a port that more than one thread feeds: the feed goes
 * in as the ring takes it, and the pass ends once every packet of it was
 * placed, while the other thread's packets may still come.
 */
static double
shared_pass(struct rig *r, struct workload *w, double *cpu_s, char *err, size_t errlen)
{
	struct droce_rx_stream_stats st = { 0 };
	double t, cpu;

	if (streams_start(w, DROCE_RX_ICRC_ON, err, errlen) != 0)
		return -1;
	pass_prepare_polling(w, r);
	w->held = false;        /* from here on the path frees them */
	cpu = thread_cpu_s();
	t = bench_now();
	for (uint32_t i = 0; i < w->nb_pkts;) {
		i += rte_ring_mp_enqueue_burst(r->rx_ring, (void **)&w->pkts[i],
					       RTE_MIN((uint32_t)FEED_BURST, w->nb_pkts - i), NULL);
		droce_worker_poll(r->stack, 0);
	}
	/* Bounded: a packet that the path lost would keep it polling. */
	for (unsigned int polls = 0; polls < 1000000; polls++) {
		droce_rx_stream_stats(w->streams[0].st, &st);
		if (st.packets + st.lost_packets >= w->nb_pkts)
			break;
		droce_worker_poll(r->stack, 0);
	}
	t = bench_now() - t;
	*cpu_s = thread_cpu_s() - cpu;
	return pass_end(w, t, err, errlen);
}

/* The worker lcore: polls the port (ARP and the RPC packets go through
 * it) until asked for a sample, which it runs after a short warm-up. It
 * polls by hand, outside droce_stack_run(), so droce_stack_quiesce() does
 * not wait for its rounds: nothing here unlinks what it reads (lib/rc's
 * QPs are the control lcore's, the streams close on this thread).
 */
static int
rpc_worker_main(void *arg)
{
	struct rpc_worker_run *run = arg;

	for (;;) {
		int cmd = atomic_load_explicit(&run->command, memory_order_acquire);
		double wall = 0, cpu = 0, t0;

		if (cmd == CMD_EXIT)
			return 0;
		droce_worker_poll(run->r->stack, 0);
		if (cmd != CMD_SAMPLE)
			continue;
		for (t0 = bench_now(); bench_now() - t0 < RPC_WARMUP_S;)
			droce_worker_poll(run->r->stack, 0);
		for (unsigned int p = 0; p < RPC_PASSES && !run->failed; p++) {
			double pass_cpu = 0;
			double t = run->side == RPC_MEMCPY
				   ? memcpy_pass(run->w)
				   : shared_pass(run->r, run->w, &pass_cpu, run->err,
						 sizeof(run->err));

			run->failed = t < 0;
			wall += t;
			cpu += pass_cpu;
		}
		run->cpu_s = cpu;       /* 0 for memcpy: not compared */
		run->wall_s = wall;
		/* Only a sample back to polling: an exit asked meanwhile stays. */
		atomic_compare_exchange_strong(&run->command, &(int){ CMD_SAMPLE }, CMD_POLL);
		atomic_store_explicit(&run->sample_done, true, memory_order_release);
	}
}

/* Until the worker's sample is over, the control lcore runs: idle, or
 * with the RPC client's calls; calls answered, -1 if one failed.
 */
static int64_t
rpc_sample(struct rpc_worker_run *run, enum rpc_side side, OckRpcClient c)
{
	uint64_t answered = 0;

	run->side = side;
	atomic_store(&run->sample_done, false);
	atomic_store_explicit(&run->command, CMD_SAMPLE, memory_order_release);
	if (side == RPC_LOADED)
		return bench_rpc_window_until(c, &run->sample_done, &answered) < 0
		       ? -1 : (int64_t)answered;
	while (!atomic_load_explicit(&run->sample_done, memory_order_acquire))
		bench_rpc_idle();
	return 0;
}

/* A session's end is lib/rpc's work on the control lcore: another thread
 * asks for it while this one runs the stack's rounds.
 */
struct disconnector {
	OckRpcClient c;
	atomic_bool done;
};

static void *
disconnect_main(void *arg)
{
	struct disconnector *d = arg;

	OckRpcClientDisconnect(d->c);
	atomic_store(&d->done, true);
	return NULL;
}

static void
rpc_client_end(OckRpcClient c)
{
	struct disconnector d = { .c = c };
	pthread_t t;

	atomic_init(&d.done, false);
	if (pthread_create(&t, NULL, disconnect_main, &d) != 0) {
		fprintf(stderr, "droce-bench: stream-rpc: no thread to end the RPC session; it stays open\n");
		return;
	}
	while (!atomic_load(&d.done))
		bench_rpc_idle();
	pthread_join(t, NULL);
}

static int
rpc_link_wait(uint16_t port_id, char *err, size_t errlen)
{
	struct rte_eth_link link = { 0 };
	double t0 = bench_now();

	while (bench_now() - t0 < RPC_LINK_WAIT_S) {
		if (rte_eth_link_get_nowait(port_id, &link) == 0 && link.link_status)
			return 0;
		bench_rpc_idle();
	}
	snprintf(err, errlen, "%s: no link to the RPC server's net_memif end in %.0f s",
		 BRIDGE_PORT, RPC_LINK_WAIT_S);
	return -1;
}

/* A client over RDMA on the rig's stack (lent), to the server's plaintext port. */
static int
rpc_client_connect(const struct bench_rdma_server *srv, OckRpcClient *c, char *err, size_t errlen)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, "droce-bench" },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" }, { OCK_RPC_STR_ENABLE_TLS, "no" },
		{ OCK_RPC_STR_HEATBEAT_IDLE, "60" },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { RTE_DIM(pairs), pairs } };

	if (OckRpcClientConnectWithCfg(RPC_SERVER_IP, srv->plain_port, c, &cfg) == OCK_RPC_OK)
		return 0;
	snprintf(err, errlen, "no RPC session with %s:%u", RPC_SERVER_IP, srv->plain_port);
	return -1;
}

/*
 * stream-rpc: one worker places HSB frames (1408-byte payloads, cold,
 * ICRC on) that it feeds itself into the rig's ring port, as stream-place
 * does; the same port is bridged by the control lcore to an RPC server in
 * another process. Quiet, the control lcore only polls; loaded, this
 * process's RPC client keeps BENCH_RPC_WINDOW 64-byte calls in flight,
 * as many as the control lcore and the server manage: every one of their
 * packets crosses the worker's RX queue. The worker runs on a cpu of its
 * own; the control lcore and the server share the other, each giving it
 * to the other after a round with nothing to do (two machines' worth of
 * pollers on two cpus). GB/s over wall time, and over the worker's own
 * cpu time (the figure that holds where cpus are shared), loaded against
 * quiet within each sample.
 */
int
bench_stream_rpc(const struct bench_opts *o)
{
	static double gbps[RPC_SIDES][BENCH_MAX_SAMPLES], cpu_gbps[RPC_SIDES][BENCH_MAX_SAMPLES];
	static double calls_s[BENCH_MAX_SAMPLES], pkts_s[BENCH_MAX_SAMPLES];
	unsigned int samples = o->rounds * SAMPLES_PER_ROUND, cpu0 = 0, cpu1 = 0;
	unsigned int worker = rte_get_next_lcore(-1, 1, 0);
	struct bench_rdma_server srv = { .pid = -1, .in = -1 };
	struct rpc_worker_run run = { 0 };
	struct workload w = { 0 };
	char err[DROCE_ERR_LEN] = "";
	bool attached = false, launched = false;
	OckRpcClient client = 0;
	struct bridge b = { .port_id = RTE_MAX_ETHPORTS };
	struct rig r = { 0 };
	int ret = 1;

	sscanf(o->cpus, "%u,%u", &cpu0, &cpu1);
	if (worker >= RTE_MAX_LCORE) {
		snprintf(err, sizeof(err), "needs a worker lcore");
		goto out;
	}
	if (bench_rdma_server_start(&srv, RPC_SERVER_IP, cpu0) != 0) {
		snprintf(err, sizeof(err), "no RPC server process");
		goto out;
	}
	if (rig_make(&r, true, err, sizeof(err)) != 0 ||
	    bridge_up(&b, &r, srv.sock, err, sizeof(err)) != 0)
		goto out;
	if (droce_rpc_attach(r.stack, r.conf, err, sizeof(err)) != 0)
		goto out;
	attached = true;
	if (droce_control_hook_register(r.stack, bridge_round, &b) != 0) {
		snprintf(err, sizeof(err), "cannot hook the bridge to the control lcore");
		goto out;
	}
	if (rig_start(&r, err, sizeof(err)) != 0 ||
	    workload_build(&r, &w, FIRST_QP, 1, 1u << 20, 32, 1408, ORDER_SEQUENTIAL, err,
			   sizeof(err)) != 0)
		goto out;
	w.cold = true;
	run.r = &r;
	run.w = &w;
	atomic_init(&run.command, CMD_POLL);
	atomic_init(&run.sample_done, false);
	if (rte_eal_remote_launch(rpc_worker_main, &run, worker) != 0) {
		snprintf(err, sizeof(err), "cannot launch the worker lcore");
		goto out;
	}
	launched = true;
	bench_rpc_stepped(r.stack, true);
	if (rpc_link_wait(b.port_id, err, sizeof(err)) != 0 ||
	    rpc_client_connect(&srv, &client, err, sizeof(err)) != 0)
		goto out;
	printf("  one worker (cpu %u) places 1408-byte payloads (cold, sequential, ICRC on) fed into its ring port; the control lcore (cpu %u) bridges that port to an RPC server process (cpu %u too; both give it away while idle) over net_memif and, loaded, keeps %u 64-byte calls in flight; %u samples of %u passes (%u packets) per side\n",
	       cpu1, cpu0, cpu0, BENCH_RPC_WINDOW, samples, RPC_PASSES, w.nb_pkts);
	fflush(stdout);
	for (unsigned int n = 0; n < samples; n++)
		for (unsigned int k = 0; k < RPC_SIDES; k++) {
			enum rpc_side side = (enum rpc_side)((n + k) % RPC_SIDES);
			uint64_t in0 = b.in;
			double t0 = bench_now(), bytes = (double)w.bytes * RPC_PASSES;
			int64_t calls = rpc_sample(&run, side, client);
			double dt = bench_now() - t0;

			if (calls < 0) {
				snprintf(err, sizeof(err), "an RPC call failed");
				goto out;
			}
			if (run.failed)
				goto out_worker;
			gbps[side][n] = bytes / run.wall_s / 1e9;
			if (side != RPC_MEMCPY)
				cpu_gbps[side][n] = bytes / run.cpu_s / 1e9;
			if (side == RPC_LOADED) {
				calls_s[n] = (double)calls / dt;
				pkts_s[n] = (double)(b.in - in0) / dt;
			}
		}
	printf("  memcpy %.2f GB/s; droce quiet %.2f GB/s (%.2fx memcpy), loaded %.2f GB/s (%.2fx memcpy): loaded %.3fx quiet; per second of the worker's cpu time %.3fx\n",
	       bench_median(gbps[RPC_MEMCPY], samples), bench_median(gbps[RPC_QUIET], samples),
	       median_ratio(gbps[RPC_QUIET], gbps[RPC_MEMCPY], samples),
	       bench_median(gbps[RPC_LOADED], samples),
	       median_ratio(gbps[RPC_LOADED], gbps[RPC_MEMCPY], samples),
	       median_ratio(gbps[RPC_LOADED], gbps[RPC_QUIET], samples),
	       median_ratio(cpu_gbps[RPC_LOADED], cpu_gbps[RPC_QUIET], samples));
	/* Over the whole sample, its warm-up and last answers too. */
	printf("  the load: %.0f calls/s, %.0f RPC packets/s into the worker's RX queue (medians; %" PRIu64 " dropped by the bridge)\n",
	       bench_median(calls_s, samples), bench_median(pkts_s, samples), b.dropped);
	ret = 0;
	goto out;
out_worker:
	snprintf(err, sizeof(err), "%s", run.err);
out:
	if (ret != 0)
		fprintf(stderr, "droce-bench: stream-rpc: %s\n", err);
	if (client != 0)
		rpc_client_end(client);
	if (launched) {
		atomic_store(&run.command, CMD_EXIT);
		rte_eal_wait_lcore(worker);
	}
	bench_rpc_stepped(NULL, false);
	if (r.stack != NULL && droce_stack_started(r.stack))
		droce_stack_stop(r.stack);
	/* rig_down() stops the stack again, which runs the control hooks. */
	if (r.stack != NULL)
		droce_control_hook_unregister(r.stack, bridge_round, &b);
	if (attached)
		droce_rpc_detach();
	workload_free(&w);
	/* After the stack: its rings may still hold packets of the bridge's pool. */
	rig_down(&r);
	bridge_down(&b);
	if (srv.pid > 0)
		bench_rdma_server_stop(&srv);
	return ret;
}
