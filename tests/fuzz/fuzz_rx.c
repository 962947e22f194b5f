/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * libFuzzer target: the sensor stream packet handler, reached the way a
 * NIC reaches it. The input is a packet from its IP header on; it gets an
 * Ethernet header and goes through a ring-backed port, the stack's worker
 * poll (IPv4 and UDP checks) and lib/rx into three started streams, each
 * with guard regions around its frame memory. After every input the
 * guards must be intact: any byte placed outside a stream's buffer traps,
 * as do the sanitizers' reports.
 *
 * Random bytes almost never name a stream's QP and rkey, let alone carry
 * the PSN it expects and a good ICRC, so the harness makes them: unless
 * the low byte of the IPv4 identification field (the ICRC covers it,
 * nothing else in droce reads it) says to keep a part as it is, the
 * packet is fixed up to pass each check before it is handed over. The
 * fuzzer finds the refusals by setting bits, and everything behind the
 * checks by leaving them clear:
 *   bits 0-1  stream 0..2 gets the QP and rkey; 3: the packet's own
 *   bit 2     keep the IP addresses (else sensor -> droce)
 *   bit 3     keep the RETH VA (else folded into the buffers, and
 *             two pages beyond)
 *   bit 4     keep the ICRC (else recomputed after the fix-ups)
 *   bit 5     keep the IP and UDP lengths and the IP checksum
 *   bit 6     keep the RETH DMA length (else what the payload needs)
 *   bit 7     keep the PSN (else the one the stream expects next)
 * and the high byte makes the input a burst of up to four packets, since
 * lib/rx carries state from one packet of a burst to the next (the stream
 * of the one before, the ICRC checked ahead), and spreads them over the
 * port's two RX queues, one per worker, as a NIC's RSS or af_packet's
 * fanout does (a packet on the queue of a worker that does not own its
 * stream is checked there and handed over; a forged one must not take
 * the stream):
 *   bits 0-1  copies after the first, in the same burst (fixed up each:
 *             the PSN one further, the VA one payload further)
 *   bit 2     every copy's ICRC broken after the fix-ups
 *   bit 3     copy k to stream (s + k) % 3 instead of stream s
 *   bit 4     the first packet to queue 1 (worker 1) instead of queue 0
 *   bit 5     copies on alternate queues
 *   bit 6     worker 1 polls first
 * Stream 0 holds packets after a PSN gap (a reorder window of 16), so
 * fuzzed PSNs reach the reorder code too.
 */

#include <inttypes.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_gpudev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_timer.h>
#include <rte_udp.h>

#include "droce_core.h"
#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "droce_hsb.h"
#include "droce_net.h"
#include "droce_roce.h"
#include "droce_rx.h"
#include "rx_private.h"
#include "test_eal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NB_STREAMS 3
#define GUARD 4096
#define GUARD_FILL 0x5a
#define TX_RINGS 3          /* the control lcore and two workers */
#define RX_QUEUES 2
#define OUR_IP "198.18.0.1"
#define PEER_IP "198.18.0.2"

struct fuzz_stream {
	struct droce_rx_stream *st;
	struct droce_gpu_buf whole;      /* guard | buffer | guard */
	struct droce_gpu_buf buf;
	uint32_t qp, rkey;
};

static struct droce_stack *stack;
static struct droce_rx *rx;
static struct rte_mempool *pool;
static struct rte_ring *rx_ring[RX_QUEUES], *tx_ring[TX_RINGS];
static struct rte_ether_addr our_mac;
static struct fuzz_stream streams[NB_STREAMS];
static uint64_t span;             /* the largest stream buffer */
static int16_t gpu_dev;

static void
die(const char *what, const char *err)
{
	fprintf(stderr, "fuzz_rx: %s: %s\n", what, err != NULL ? err : "failed");
	exit(1);
}

static void
stream_start(struct fuzz_stream *fs, int16_t dev, uint32_t qp, size_t frame_size,
	     unsigned int pages, enum droce_hsb_imm imm, enum droce_rx_icrc icrc,
	     uint32_t reorder_window)
{
	struct droce_hsb_layout l;
	struct droce_rx_params p;
	char err[256];

	droce_hsb_layout(frame_size, pages, 4096, &l);
	if (droce_gpu_buf_alloc(dev, l.buffer_size + 2 * GUARD, 4096, &fs->whole,
				err, sizeof(err)) != 0)
		die("buffer", err);
	memset(fs->whole.cpu, GUARD_FILL, fs->whole.size);
	fs->buf = fs->whole;
	fs->buf.gpu = (uint8_t *)fs->whole.gpu + GUARD;
	fs->buf.cpu = (uint8_t *)fs->whole.cpu + GUARD;
	fs->buf.size = l.buffer_size;
	fs->qp = qp;
	fs->rkey = 0x5eed + (qp - 0x100);
	p = (struct droce_rx_params){
		.port = 0, .queue = DROCE_RX_ANY_QUEUE, .buf = &fs->buf,
		.frame_size = l.frame_size, .page_size = l.page_size, .pages = pages,
		.metadata_offset = l.metadata_offset, .peer_ip = PEER_IP,
		.queue_size = 4, .qp = qp, .rkey = fs->rkey, .imm = imm, .icrc = icrc,
		.remote_qp = 0x77, .reorder_window = reorder_window,
	};
	fs->st = droce_rx_stream_new(rx);
	if (fs->st == NULL || droce_rx_stream_start(fs->st, &p, err, sizeof(err)) != 0)
		die("stream start", err);
	if ((uint64_t)l.page_size * pages > span)
		span = (uint64_t)l.page_size * pages;
}

/* At exit: everything given back, so LeakSanitizer (which does not scan
 * DPDK's memory for pointers) sees no leak.
 */
/* FUZZ_RX_STATS=1: what the streams did with the inputs, to see that
 * a corpus reaches placement at all.
 */
static void
print_stats(void)
{
	uint64_t unknown[DROCE_RX_REFUSAL_MAX];

	for (int s = 0; s < NB_STREAMS; s++) {
		struct droce_rx_stream_stats st;

		droce_rx_stream_stats(streams[s].st, &st);
		fprintf(stderr, "fuzz_rx: stream %#x: %" PRIu64 " packets placed, %" PRIu64
			" frames, %" PRIu64 " lost, %" PRIu64 " acks, %" PRIu64 " handed over, %"
			PRIu64 " held", streams[s].qp, st.packets, st.frames, st.lost_packets,
			st.acks, st.handed_over, st.held);
		for (int k = 0; k < DROCE_RX_REFUSAL_MAX; k++)
			if (st.refused[k] != 0)
				fprintf(stderr, ", %s %" PRIu64, droce_rx_refusal_name(k),
					st.refused[k]);
		fputc('\n', stderr);
	}
	droce_rx_refusals(rx, unknown);
	fprintf(stderr, "fuzz_rx: no stream:");
	for (int k = 0; k < DROCE_RX_REFUSAL_MAX; k++)
		if (unknown[k] != 0)
			fprintf(stderr, " %s %" PRIu64, droce_rx_refusal_name(k), unknown[k]);
	fputc('\n', stderr);
}

static void
teardown(void)
{
	if (getenv("FUZZ_RX_STATS") != NULL)
		print_stats();
	droce_stack_stop(stack);
	for (int s = 0; s < NB_STREAMS; s++) {
		droce_rx_stream_close(streams[s].st);
		droce_rx_stream_free(streams[s].st);
		droce_gpu_buf_free(&streams[s].whole);
	}
	droce_rx_destroy(rx);
	droce_stack_destroy(stack);
	rte_gpu_close(gpu_dev);
	droce_test_eal_cleanup();
}

/* A queue of the ring port: @p what and @p n name it. */
static struct rte_ring *
ring(const char *what, int n, unsigned int size)
{
	char name[16];
	struct rte_ring *r;

	snprintf(name, sizeof(name), "%s%d", what, n);
	r = rte_ring_create(name, size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r == NULL)
		die("ring", name);
	return r;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char prefix[64], lcores[48];
	char *eal[] = { (*argv)[0], "--no-pci", "--no-huge", "-m", "256",
			"--file-prefix", prefix, DROCE_TEST_EAL_QUIET, "--lcores", lcores,
			"--log-level", "*:error", NULL };
	char *const overrides[] = {
		"port.0.device=net_ring_fuzz", "port.0.address=" OUR_IP "/24",
		"port.0.rxd=256", "port.0.txd=256", "stats.period=0",
		"worker.thread.groups=2",
	};
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN];
	cpu_set_t set;
	int cpu = 0, dev;

	(void)argc;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	/* Three lcores on one cpu; the workers are polled here, by hand. */
	snprintf(lcores, sizeof(lcores), "0@%d,1@%d,2@%d", cpu, cpu, cpu);
	snprintf(prefix, sizeof(prefix), "droce-fuzz-rx-%d", getpid());
	if (droce_test_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		die("rte_eal_init", NULL);
	rte_timer_subsystem_init();

	for (int q = 0; q < RX_QUEUES; q++)
		rx_ring[q] = ring("fuzz_rx", q, 256);
	for (int r = 0; r < TX_RINGS; r++)
		tx_ring[r] = ring("fuzz_tx", r, 1024);
	if (rte_eth_from_rings("fuzz", rx_ring, RX_QUEUES, tx_ring, TX_RINGS, SOCKET_ID_ANY) < 0)
		die("ring port", NULL);
	pool = rte_pktmbuf_pool_create("fuzz_pool", 1024, 0, 0, 10240, SOCKET_ID_ANY);
	if (pool == NULL)
		die("mbuf pool", NULL);
	dev = droce_gpu_host_create("droce_host_fuzz", NULL);
	if (dev < 0)
		die("host gpudev", NULL);
	gpu_dev = (int16_t)dev;
	if (droce_conf_load(&conf, NULL, overrides, RTE_DIM(overrides), err, sizeof(err)) != 0)
		die("config", err);
	if (droce_lcores_layout(&conf, "--lcores (fuzz)", &layout, err, sizeof(err)) != 0)
		die("lcores", err);
	stack = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (stack == NULL)
		die("stack", err);
	rx = droce_rx_create(stack, err, sizeof(err));
	if (rx == NULL)
		die("rx", err);
	droce_port_mac(stack, 0, &our_mac);
	if (droce_stack_start(stack, false) != 0)
		die("stack start", NULL);
	/* HSB with the ICRC checked first; a standard sender's writes with
	 * the ICRC off; the older immediate with the ICRC in the copy.
	 */
	stream_start(&streams[0], (int16_t)dev, 0x100, 5000, 4, DROCE_HSB_IMM_CURRENT,
		     DROCE_RX_ICRC_ON, 16);
	stream_start(&streams[1], (int16_t)dev, 0x101, 3000, 2, DROCE_HSB_IMM_OPAQUE,
		     DROCE_RX_ICRC_OFF, 0);
	stream_start(&streams[2], (int16_t)dev, 0x102, 1000, 3, DROCE_HSB_IMM_LITE,
		     DROCE_RX_ICRC_FUSED, 0);
	atexit(teardown);
	return 0;
}

/* The fix-ups the identification field asks for (see the top), for the
 * @p copy'th copy of the input in its burst.
 */
static void
fix_up(uint8_t *l3, uint32_t len, unsigned int copy)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;
	uint32_t ihl, ctl, burst;
	struct droce_bth *bth;
	struct droce_pkt pkt;

	if (len < sizeof(*ip) || (ip->version_ihl >> 4) != 4)
		return;
	ihl = (uint32_t)(ip->version_ihl & 0xf) * 4;
	if (ihl < sizeof(*ip) || len < ihl + sizeof(struct rte_udp_hdr) + sizeof(struct droce_bth))
		return;
	ctl = rte_be_to_cpu_16(ip->packet_id) & 0xff;
	burst = rte_be_to_cpu_16(ip->packet_id) >> 8;
	bth = (struct droce_bth *)(l3 + ihl + sizeof(struct rte_udp_hdr));
	if (!(ctl & 0x04)) {
		ip->src_addr = inet_addr(PEER_IP);
		ip->dst_addr = inet_addr(OUR_IP);
	}
	if ((ctl & 0x03) != 3) {
		const struct fuzz_stream *fs =
			&streams[((ctl & 0x03) + ((burst & 0x08) ? copy : 0)) % NB_STREAMS];

		/* FECN and BECN stay; the dest QP is the low 24 bits. */
		bth->qpn = (bth->qpn & rte_cpu_to_be_32(0xff000000u)) |
			   rte_cpu_to_be_32(fs->qp);
		if (droce_roce_parse((const uint8_t *)bth, len - ihl - sizeof(struct rte_udp_hdr),
				     &pkt) == DROCE_PARSE_OK &&
		    (pkt.info->flags & DROCE_HDR_RETH)) {
			struct droce_reth *reth =
				(struct droce_reth *)(uintptr_t)droce_pkt_ext(&pkt, DROCE_EXT_RETH);

			uint32_t dma = rte_be_to_cpu_32(reth->dma_len);

			if (!(ctl & 0x08))
				reth->va = rte_cpu_to_be_64((rte_be_to_cpu_64(reth->va) +
							     (uint64_t)copy * pkt.payload_len) %
							    (span + 2 * 8192));
			/* An ONLY packet carries all of it; a FIRST, some. */
			if (!(ctl & 0x40) && ((pkt.info->flags & DROCE_HDR_LAST) ||
					      dma < pkt.payload_len))
				reth->dma_len = rte_cpu_to_be_32(
					(pkt.info->flags & DROCE_HDR_LAST) ? pkt.payload_len
									   : 4 * pkt.payload_len);
			reth->rkey = rte_cpu_to_be_32(fs->rkey);
		}
		/* Read as the harness of a unit test reads it: the worker
		 * that writes it is this thread.
		 */
		/* Copies spread over the streams: the copy'th to this one. */
		if (!(ctl & 0x80))
			bth->apsn = (bth->apsn & rte_cpu_to_be_32(~DROCE_PSN_MASK)) |
				    rte_cpu_to_be_32((fs->st->expected_psn +
						      ((burst & 0x08) ? copy / NB_STREAMS : copy)) &
						     DROCE_PSN_MASK);
	}
	if (!(ctl & 0x20)) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(l3 + ihl);

		ip->next_proto_id = IPPROTO_UDP;
		ip->total_length = rte_cpu_to_be_16((uint16_t)len);
		udp->dst_port = rte_cpu_to_be_16(DROCE_ROCE_UDP_PORT);
		udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - ihl));
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	if (!(ctl & 0x10) && len >= ihl + sizeof(struct rte_udp_hdr) + sizeof(struct droce_bth) +
				   DROCE_ICRC_LEN) {
		uint32_t icrc = droce_icrc(l3, len - DROCE_ICRC_LEN);

		for (int i = 0; i < 4; i++)
			l3[len - DROCE_ICRC_LEN + i] = (uint8_t)(icrc >> (8 * i));
	}
	if (copy != 0 && (burst & 0x04) && len >= DROCE_ICRC_LEN)
		l3[len - 1] ^= 0x01;
}

static void
drain_tx(void)
{
	struct rte_mbuf *out[64];
	unsigned int n;

	for (int r = 0; r < TX_RINGS; r++)
		while ((n = rte_ring_dequeue_burst(tx_ring[r], (void **)out, RTE_DIM(out),
						   NULL)) != 0)
			rte_pktmbuf_free_bulk(out, n);
}

static void
check_guards(const struct fuzz_stream *fs)
{
	const uint8_t *w = fs->whole.cpu;
	size_t after = GUARD + fs->buf.size;

	for (size_t i = 0; i < GUARD; i++)
		if (w[i] != GUARD_FILL || w[after + i] != GUARD_FILL) {
			fprintf(stderr, "fuzz_rx: stream %#x: a byte %s its buffer was written\n",
				fs->qp, w[i] != GUARD_FILL ? "before" : "after");
			__builtin_trap();
		}
}

/* The high byte of an IPv4 header's identification field (see the top):
 * the burst's shape.
 */
static unsigned int
burst_bits(const uint8_t *data, size_t size)
{
	if (size < sizeof(struct rte_ipv4_hdr) || (data[0] >> 4) != 4)
		return 0;
	return data[offsetof(struct rte_ipv4_hdr, packet_id)];
}

static bool
any_rx_ring_full(void)
{
	for (int q = 0; q < RX_QUEUES; q++)
		if (!rte_ring_empty(rx_ring[q]))
			return true;
	return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int copies, burst, first;

	if (size == 0 || size > 9000)
		return -1;
	burst = burst_bits(data, size);
	copies = 1 + (burst & 0x03);
	for (unsigned int c = 0; c < copies; c++) {
		unsigned int queue = ((burst >> 4) & 1) ^ ((burst & 0x20) ? c & 1 : 0);
		uint32_t len = (uint32_t)size;
		struct rte_ether_hdr *eth;
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

		if (m == NULL || rte_pktmbuf_tailroom(m) < sizeof(*eth) + len)
			die("mbuf", NULL);
		eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)(sizeof(*eth) + len));
		eth->dst_addr = our_mac;
		eth->src_addr = (struct rte_ether_addr){ .addr_bytes = { 2, 0, 0, 0, 0, 2 } };
		eth->ether_type = rte_cpu_to_be_16((data[0] >> 4) == 6 ? RTE_ETHER_TYPE_IPV6
								       : RTE_ETHER_TYPE_IPV4);
		memcpy(eth + 1, data, len);
		fix_up((uint8_t *)(eth + 1), len, c);
		if (rte_ring_enqueue(rx_ring[queue], m) != 0)
			die("rx ring full", NULL);
	}
	/* The burst on both workers (in the order asked), the hand-overs
	 * between them, then the hooks that complete frames.
	 */
	first = (burst & 0x40) ? 1 : 0;
	for (int i = 0; i < 8; i++) {
		unsigned int busy = droce_worker_poll(stack, first) +
				    droce_worker_poll(stack, first ^ 1);

		if (busy == 0 && !any_rx_ring_full())
			break;
	}
	droce_control_poll(stack);
	drain_tx();
	for (int s = 0; s < NB_STREAMS; s++) {
		check_guards(&streams[s]);
		if (droce_rx_stream_receive_path_failed(streams[s].st)) {
			fprintf(stderr, "fuzz_rx: a packet failed stream %#x\n", streams[s].qp);
			__builtin_trap();
		}
	}
	return 0;
}
