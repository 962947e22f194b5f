/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * rc: lib/rc between two processes over net_memif, one polling lcore
 * each (the lcore that polls the port runs the QPs too), against the
 * kernel's TCP over loopback (where the scheduler runs it best):
 *   - SEND ping-pong of 64 bytes: round-trip p50 and p99;
 *   - RDMA WRITE of 64 KiB messages, 32 in flight: GB/s, against memcpy
 *     of the same bytes on one core; and the same WRITEs sent from the
 *     MR (zero copy) instead of copied into the frames;
 *   - 64-byte SENDs, 64 in flight: messages per second, against a TCP
 *     pipeline of the same messages (a write(2) each).
 * The peer is this program again (--rc-peer), started with its own EAL;
 * the two exchange QP numbers over its stdin and stdout. For reference, the
 * transport alone, over a second memif pair that no stack owns: frames of
 * the ping's size bounced off the peer's lcore, and a stream of frames the
 * size of the WRITEs' packets (the floor and the ceiling of any protocol
 * on memif between these two cpus).
 */

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "droce_core.h"
#include "droce_net.h"
#include "droce_rc.h"
#include "bench.h"

#define PING_BYTES BENCH_TCP_BYTES
#define PING_ITERS 20000
#define WRITE_BYTES (64u * 1024)
#define WRITE_WINDOW 32
#define WRITE_COUNT 16384           /* 1 GiB */
#define RATE_BYTES BENCH_TCP_BYTES
#define RATE_WINDOW 64
#define RATE_SIGNAL_EVERY 16
#define RATE_COUNT BENCH_TCP_RATE_COUNT
#define PEER_RECVS 1024
#define RECV_SIZE (64u * 1024)
#define IMM_ECHO 1                  /* a SEND with this immediate is sent back */
#define OUR_IP "198.18.0.1"
#define PEER_IP "198.18.0.2"
/* The ping's frame: Ethernet, IPv4, UDP, BTH, ImmDt, 64 bytes, ICRC. */
#define RAW_FRAME_BYTES (14 + 20 + 8 + 12 + 4 + PING_BYTES + 4)
#define RAW_DEVICE "net_memif_rcraw0"
/* A WRITE's middle packet at path MTU 1024: Ethernet, IPv4, UDP, BTH,
 * 1 KiB, ICRC; the transport alone streams them as the WRITEs do.
 */
#define RAW_STREAM_PAYLOAD 1024u
#define RAW_STREAM_FRAME (14 + 20 + 8 + 12 + RAW_STREAM_PAYLOAD + 4)
#define RAW_STREAM_COUNT (WRITE_COUNT * (WRITE_BYTES / RAW_STREAM_PAYLOAD))
#define RAW_STREAM_WINDOW 256
/* One frame in so many asks for an answer (its first payload byte set),
 * as RC asks for an ACK every few packets.
 */
#define RAW_STREAM_ANSWER_EVERY 16
#define RAW_STREAM_MARK_OFFSET (14 + 20 + 8 + 12)

/* One end: a stack on the memif port and a QP with a big region. */
struct rc_end {
	struct droce_stack *stack;
	struct droce_rc_device *dev;
	struct droce_pd *pd;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	uint32_t psn;
};

static int
end_up(struct rc_end *e, const char *device, const char *address, size_t buf_len,
       char *err, size_t errlen)
{
	char dev_kv[96], addr_kv[64];
	/* Two RX queues: memif pairs each side's TX rings (one per lcore) with RX
	 * rings of the other, and refuses a link whose counts differ.
	 */
	char *kv[] = { dev_kv, addr_kv, "stats.period=0", "port.0.rxd=1024", "port.0.txd=1024",
		       "port.0.queues=2", "port.0.tx.chains=yes" };
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC,
		.cap = { .max_send_wr = 1024, .max_recv_wr = PEER_RECVS, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};

	snprintf(dev_kv, sizeof(dev_kv), "port.0.device=%s", device);
	snprintf(addr_kv, sizeof(addr_kv), "port.0.address=%s/24", address);
	if (droce_conf_load(&conf, NULL, kv, RTE_DIM(kv), err, errlen) != 0 ||
	    droce_lcores_layout(&conf, "droce-bench", &layout, err, errlen) != 0)
		return -1;
	e->stack = droce_stack_create(&conf, &layout, err, errlen);
	if (e->stack == NULL)
		return -1;
	e->dev = droce_rc_open(e->stack, 0, err, errlen);
	if (e->dev == NULL)
		return -1;
	if (droce_stack_start(e->stack, false) != 0) {
		snprintf(err, errlen, "the stack does not start");
		return -1;
	}
	e->buf_len = buf_len;
	e->buf = aligned_alloc(4096, buf_len);
	e->pd = droce_alloc_pd(e->dev);
	e->scq = droce_create_cq(e->dev, 4096);
	e->rcq = droce_create_cq(e->dev, 4096);
	if (e->buf == NULL || e->pd == NULL || e->scq == NULL || e->rcq == NULL) {
		snprintf(err, errlen, "out of memory for the QP's objects");
		return -1;
	}
	memset(e->buf, 0x42, buf_len);
	e->mr = droce_reg_mr(e->pd, e->buf, buf_len,
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
			     DROCE_ACCESS_REMOTE_READ);
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	e->qp = e->mr != NULL ? droce_create_qp(e->pd, &ia) : NULL;
	if (e->qp == NULL) {
		snprintf(err, errlen, "no MR or QP (see the droce.rc log)");
		return -1;
	}
	e->psn = (uint32_t)rte_rdtsc() & 0xffffff;
	/* INIT now, so that receives can be posted before the peer is known. */
	struct droce_qp_attr a = {
		.qp_state = DROCE_QPS_INIT, .port_num = 1,
		.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ,
	};

	if (droce_modify_qp(e->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX | DROCE_QP_PORT |
			    DROCE_QP_ACCESS_FLAGS) != 0) {
		snprintf(err, errlen, "modify_qp INIT (see the droce.rc log)");
		return -1;
	}
	return 0;
}

static void
end_down(struct rc_end *e)
{
	if (e->stack != NULL)
		droce_stack_stop(e->stack);
	if (e->qp != NULL)
		droce_destroy_qp(e->qp);
	if (e->mr != NULL)
		droce_dereg_mr(e->mr);
	if (e->scq != NULL)
		droce_destroy_cq(e->scq);
	if (e->rcq != NULL)
		droce_destroy_cq(e->rcq);
	if (e->pd != NULL)
		droce_dealloc_pd(e->pd);
	if (e->dev != NULL)
		droce_rc_close(e->dev);
	droce_stack_destroy(e->stack);
	/* With the stack gone no port holds a packet sent from it, whatever
	 * droce_dereg_mr() said before.
	 */
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* RTS towards the peer's QP. */
static int
end_connect(struct rc_end *e, uint32_t peer_qpn, uint32_t peer_psn, const char *peer_ip)
{
	struct droce_qp_attr a;
	int ret = 0;

	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTR, .path_mtu = DROCE_MTU_1024, .dest_qp_num = peer_qpn,
		.rq_psn = peer_psn, .max_dest_rd_atomic = 16, .min_rnr_timer = 1,
		.ah_attr = { .hop_limit = 64 },
	};
	droce_gid_from_ipv4(inet_addr(peer_ip), a.ah_attr.dgid);
	if (ret == 0)
		ret = droce_modify_qp(e->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
				      DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
				      DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER);
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTS, .sq_psn = e->psn, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 16,
	};
	if (ret == 0)
		ret = droce_modify_qp(e->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN |
				      DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
				      DROCE_QP_MAX_QP_RD_ATOMIC);
	return ret;
}

/* One round of the lcore: the port, then the QPs. */
static inline void
end_poll(struct rc_end *e)
{
	droce_worker_poll(e->stack, 0);
	droce_control_poll(e->stack);
}

static int
post_recv_at(struct rc_end *e, uint64_t offset, uint32_t len, uint64_t wr_id)
{
	struct droce_sge sge = { (uintptr_t)e->buf + offset, len, e->mr->lkey };
	struct droce_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return droce_post_recv(e->qp, &wr, &bad);
}

static int
post(struct rc_end *e, enum droce_wr_opcode op, uint64_t offset, uint32_t len, bool signaled,
     uint32_t imm, uint64_t remote, uint32_t rkey)
{
	struct droce_sge sge = { (uintptr_t)e->buf + offset, len, e->mr->lkey };
	struct droce_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op, .imm_data = htonl(imm),
		.send_flags = (signaled ? DROCE_SEND_SIGNALED : 0) |
			      (len <= 64 && op != DROCE_WR_RDMA_READ ? DROCE_SEND_INLINE : 0),
	}, *bad;

	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = rkey;
	return droce_post_send(e->qp, &wr, &bad);
}

/* ---- the memif pair no stack owns -------------------------------------------- */

/* The peer's side: a frame of the ping's size goes back as it is; of a
 * stream's frames, those that ask for an answer go back cut to that size.
 */
static void
raw_echo(uint16_t port_id)
{
	struct rte_mbuf *pkts[32], *back[32];
	uint16_t n = rte_eth_rx_burst(port_id, 0, pkts, RTE_DIM(pkts)), nb_back = 0, sent;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		if (rte_pktmbuf_pkt_len(m) > RAW_FRAME_BYTES) {
			if (!rte_pktmbuf_is_contiguous(m) ||
			    *rte_pktmbuf_mtod_offset(m, uint8_t *, RAW_STREAM_MARK_OFFSET) == 0) {
				rte_pktmbuf_free(m);
				continue;
			}
			rte_pktmbuf_trim(m, rte_pktmbuf_pkt_len(m) - RAW_FRAME_BYTES);
		}
		back[nb_back++] = m;
	}
	sent = nb_back != 0 ? rte_eth_tx_burst(port_id, 0, back, nb_back) : 0;
	if (sent < nb_back)
		rte_pktmbuf_free_bulk(back + sent, nb_back - sent);
}

/* ---- the peer process --------------------------------------------------------- */

int
bench_rc_peer(void)
{
	struct rc_end e = { 0 };
	char err[DROCE_ERR_LEN], line[128];
	unsigned int peer_qpn, peer_psn, loops = 0;
	uint64_t until = rte_get_timer_cycles() + 600 * rte_get_timer_hz();
	struct rte_mempool *raw_pool = NULL;
	uint16_t raw_port;
	bool raw = false;

	if (bench_port_up(RAW_DEVICE, &raw_port, &raw_pool, err, sizeof(err)) != 0 ||
	    end_up(&e, "net_memif_rc0", PEER_IP, (size_t)PEER_RECVS * RECV_SIZE, err,
		   sizeof(err)) != 0) {
		fprintf(stderr, "droce-bench rc peer: %s\n", err);
		return 1;
	}
	for (uint32_t i = 0; i < PEER_RECVS; i++)
		post_recv_at(&e, (uint64_t)i * RECV_SIZE, RECV_SIZE, i);
	printf("%u %u %u %lu\n", droce_qp_num(e.qp), e.psn, e.mr->rkey,
	       (unsigned long)(uintptr_t)e.buf);
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL ||
	    sscanf(line, "%u %u", &peer_qpn, &peer_psn) != 2 ||
	    end_connect(&e, peer_qpn, peer_psn, OUR_IP) != 0) {
		fprintf(stderr, "droce-bench rc peer: no peer QP from the parent\n");
		end_down(&e);
		return 1;
	}
	/* Echo what asks for it, sink the rest, until the parent closes stdin. */
	while (rte_get_timer_cycles() < until) {
		struct droce_wc wc[32];
		int n;

		if (raw)
			raw_echo(raw_port);
		end_poll(&e);
		n = droce_poll_cq(e.rcq, 32, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != DROCE_WC_SUCCESS) {
				fprintf(stderr, "droce-bench rc peer: receive %s\n",
					droce_wc_status_str(wc[i].status));
				until = 0;
				break;
			}
			if ((wc[i].wc_flags & DROCE_WC_WITH_IMM) && ntohl(wc[i].imm_data) == IMM_ECHO)
				post(&e, DROCE_WR_SEND, wc[i].wr_id * RECV_SIZE, wc[i].byte_len, true,
				     0, 0, 0);
			post_recv_at(&e, wc[i].wr_id * RECV_SIZE, RECV_SIZE, wc[i].wr_id);
		}
		while (droce_poll_cq(e.scq, 32, wc) > 0)
			;
		if ((++loops & 0xfff) == 0) {
			struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };

			/* "pause": sleep until the next line, so that the kernel
			 * TCP baseline has this cpu to itself; "raw" and "rc":
			 * echo the other memif pair's frames or not; EOF: the end.
			 */
			if (poll(&pfd, 1, 0) > 0) {
				if (fgets(line, sizeof(line), stdin) == NULL ||
				    (strncmp(line, "pause", 5) == 0 &&
				     fgets(line, sizeof(line), stdin) == NULL))
					break;
				if (strncmp(line, "raw", 3) == 0 || strncmp(line, "rc", 2) == 0)
					raw = line[1] == 'a';
			}
		}
	}
	end_down(&e);
	bench_port_down(raw_port, raw_pool);
	return 0;
}

/* ---- the parent's side ---------------------------------------------------------- */

struct peer {
	pid_t pid;
	FILE *to, *from;
	char prefix[64], socket[96], raw_socket[96];
};

static int
peer_start(struct peer *p, const struct bench_opts *o, char *err, size_t errlen)
{
	char lcores[160], vdev[160], raw_vdev[160], self[4096];
	const char *peer_cpu = strchr(o->cpus, ',') ? strchr(o->cpus, ',') + 1 : o->cpus;
	int to[2], from[2];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0) {
		snprintf(err, errlen, "readlink /proc/self/exe: %s", strerror(errno));
		return -1;
	}
	self[len] = '\0';
	snprintf(p->prefix, sizeof(p->prefix), "droce-bench-rcpeer-%d", getpid());
	snprintf(lcores, sizeof(lcores), "0@%s,1@%s", peer_cpu, peer_cpu);
	snprintf(vdev, sizeof(vdev), "net_memif_rc0,role=client,socket=%s", p->socket);
	snprintf(raw_vdev, sizeof(raw_vdev), "%s,role=client,socket=%s", RAW_DEVICE,
		 p->raw_socket);
	if (pipe(to) != 0 || pipe(from) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	p->pid = fork();
	if (p->pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (p->pid == 0) {
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		close(to[1]);
		close(from[0]);
		/* No shared files and no telemetry socket: its runtime folder
		 * stays empty, and peer_stop() can remove it. Without them
		 * memif warns, for each port, that a secondary process could not
		 * map its regions: there is none, so only its errors show.
		 */
		execl(self, self, "--no-pci", "--no-huge", "-m", "1536", "--no-shconf",
		      "--no-telemetry", "--file-prefix", p->prefix,
		      "--lcores", lcores, "--vdev", vdev, "--vdev", raw_vdev,
		      "--log-level", "lib.eal:error", "--log-level", "pmd.net.memif:error",
		      "--", "--rc-peer", (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", self, strerror(errno));
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	p->to = fdopen(to[1], "w");
	p->from = fdopen(from[0], "r");
	return 0;
}

/* End the peer: 0 if it ended well, -1 (and why on stderr) if not. */
static int
peer_stop(struct peer *p)
{
	char path[160];
	int status = 0, ret = 0;

	if (p->to != NULL)
		fclose(p->to); /* EOF ends the peer */
	if (p->from != NULL)
		fclose(p->from);
	if (p->pid > 0 && waitpid(p->pid, &status, 0) < 0) {
		kill(p->pid, SIGKILL);
		ret = -1;
	} else if (p->pid > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "droce-bench rc: the peer process died of signal %d\n",
				WTERMSIG(status));
		else
			fprintf(stderr, "droce-bench rc: the peer process exited with %d\n",
				WEXITSTATUS(status));
		ret = -1;
	}
	snprintf(path, sizeof(path), "/var/run/dpdk/%s", p->prefix);
	rmdir(path);
	return ret;
}

static void
peer_pause(struct peer *p, bool pause)
{
	fputs(pause ? "pause\n" : "resume\n", p->to);
	fflush(p->to);
	if (pause)
		usleep(100 * 1000); /* it looks at stdin every few thousand rounds */
}

/* Wait for @p n completions on @p cq, polling @p e; false on an error
 * completion or after 10 s.
 */
static bool
wait_cq(struct rc_end *e, struct droce_cq *cq, int n)
{
	uint64_t until = rte_get_timer_cycles() + 2 * rte_get_timer_hz();
	struct droce_wc wc[64];

	while (n > 0) {
		int got;

		end_poll(e);
		got = droce_poll_cq(cq, RTE_MIN(n, 64), wc);
		for (int i = 0; i < got; i++)
			if (wc[i].status != DROCE_WC_SUCCESS) {
				fprintf(stderr, "droce-bench rc: completion %s\n",
					droce_wc_status_str(wc[i].status));
				return false;
			}
		n -= got;
		if (got == 0 && rte_get_timer_cycles() > until)
			return false;
	}
	return true;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* p50 and p99 of @p n round trips, in microseconds. */
void
bench_percentiles(uint64_t *tsc, unsigned int n, double *p50, double *p99)
{
	double us = 1e6 / (double)rte_get_tsc_hz();

	qsort(tsc, n, sizeof(*tsc), cmp_u64);
	*p50 = (double)tsc[n / 2] * us;
	*p99 = (double)tsc[(size_t)n * 99 / 100] * us;
}

static bool
rc_pingpong(struct rc_end *e, uint64_t *rtt, unsigned int iters)
{
	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = rte_rdtsc();

		if (post_recv_at(e, 1u << 20, PING_BYTES, i) != 0 ||
		    post(e, DROCE_WR_SEND_WITH_IMM, 0, PING_BYTES, false, IMM_ECHO, 0, 0) != 0 ||
		    !wait_cq(e, e->rcq, 1))
			return false;
		rtt[i] = rte_rdtsc() - t0;
		/* Unsignaled sends still need their slots back: one in 64 asks. */
		if (i % 64 == 63 && (post(e, DROCE_WR_SEND, 0, 0, true, 0, 0, 0) != 0 ||
				     !wait_cq(e, e->scq, 1)))
			return false;
	}
	return true;
}

/* Our end of the memif pair no stack owns. */
struct raw_link {
	uint16_t port_id;
	struct rte_mempool *pool;       /* NULL: not up */
};

/* One frame there and back: its round trip in TSC cycles, 0 when none
 * came back within @p wait_ms.
 */
static uint64_t
raw_bounce(const struct raw_link *r, unsigned int wait_ms)
{
	uint64_t until, t0, rtt = 0;
	struct rte_mbuf *m = rte_pktmbuf_alloc(r->pool), *back[32];
	uint16_t n = 0;

	if (m == NULL || rte_pktmbuf_append(m, RAW_FRAME_BYTES) == NULL) {
		rte_pktmbuf_free(m);
		return 0;
	}
	memset(rte_pktmbuf_mtod(m, uint8_t *), 0x5a, RAW_FRAME_BYTES);
	t0 = rte_rdtsc();
	until = t0 + rte_get_tsc_hz() / 1000 * wait_ms;
	if (rte_eth_tx_burst(r->port_id, 0, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		return 0;
	}
	while (n == 0 && rte_rdtsc() < until)
		n = rte_eth_rx_burst(r->port_id, 0, back, RTE_DIM(back));
	if (n != 0)
		rtt = rte_rdtsc() - t0;
	rte_pktmbuf_free_bulk(back, n);
	return rtt;
}

/* The echoes of frames sent before the peer echoed (queued in the ring)
 * still on their way: gone, so that none passes for a timed frame's.
 */
static void
raw_drain(const struct raw_link *r)
{
	struct rte_mbuf *back[32];
	uint16_t n;

	rte_delay_us_sleep(10 * 1000);
	while ((n = rte_eth_rx_burst(r->port_id, 0, back, RTE_DIM(back))) != 0)
		rte_pktmbuf_free_bulk(back, n);
}

/* GB/s of payload in RAW_STREAM_COUNT frames of RAW_STREAM_FRAME bytes,
 * RAW_STREAM_WINDOW unanswered at most; -1 when the answers stop.
 */
static double
raw_stream(const struct raw_link *r)
{
	unsigned int sent = 0, answered = 0;
	double t0 = bench_now();
	uint64_t until = rte_get_timer_cycles() + 30 * rte_get_timer_hz();

	/* Answers count whole groups: the window and the count are of them. */
	RTE_BUILD_BUG_ON(RAW_STREAM_WINDOW % RAW_STREAM_ANSWER_EVERY != 0 ||
			 RAW_STREAM_COUNT % RAW_STREAM_ANSWER_EVERY != 0);
	while (answered < RAW_STREAM_COUNT) {
		struct rte_mbuf *m[32], *back[32];
		unsigned int want = RTE_MIN(RTE_MIN(32u, RAW_STREAM_COUNT - sent),
					    RAW_STREAM_WINDOW - (sent - answered));
		uint16_t n = 0, tx = 0;

		if (want != 0 && rte_pktmbuf_alloc_bulk(r->pool, m, want) == 0) {
			for (n = 0; n < want; n++)
				*(uint8_t *)rte_pktmbuf_append(m[n], RAW_STREAM_FRAME) = 0;
			for (n = 0; n < want; n++)
				*rte_pktmbuf_mtod_offset(m[n], uint8_t *, RAW_STREAM_MARK_OFFSET) =
					(sent + n) % RAW_STREAM_ANSWER_EVERY ==
					RAW_STREAM_ANSWER_EVERY - 1;
			tx = rte_eth_tx_burst(r->port_id, 0, m, n);
			if (tx < n)
				rte_pktmbuf_free_bulk(m + tx, n - tx);
			sent += tx;
		}
		n = rte_eth_rx_burst(r->port_id, 0, back, RTE_DIM(back));
		rte_pktmbuf_free_bulk(back, n);
		answered += n * RAW_STREAM_ANSWER_EVERY;
		if (rte_get_timer_cycles() > until)
			return -1;
	}
	return (double)RAW_STREAM_COUNT * RAW_STREAM_PAYLOAD / (bench_now() - t0) / 1e9;
}

/* The transport alone: @p iters frames of the ping's size echoed by the
 * peer's lcore, one at a time; then, in *gbps, a stream of WRITE-sized
 * frames.
 */
static bool
raw_pingpong(const struct raw_link *r, struct peer *p, uint64_t *rtt, unsigned int iters,
	     double *gbps)
{
	uint64_t until = rte_get_timer_cycles() + 3 * rte_get_timer_hz();
	bool ok = false;

	fputs("raw\n", p->to);
	fflush(p->to);
	/* The link comes up when the peer has connected, and the peer looks
	 * at its stdin every few thousand rounds.
	 */
	while (raw_bounce(r, 1) == 0)
		if (rte_get_timer_cycles() > until)
			goto out;
		else
			rte_delay_us_sleep(1000);
	raw_drain(r);
	for (unsigned int i = 0; i < iters; i++) {
		rtt[i] = raw_bounce(r, 100);
		if (rtt[i] == 0)
			goto out;
	}
	*gbps = raw_stream(r);
	ok = *gbps > 0;
out:
	fputs("rc\n", p->to);
	fflush(p->to);
	return ok;
}

/* GB/s of WRITE_COUNT 64 KiB WRITEs, WRITE_WINDOW in flight. */
static double
rc_write(struct rc_end *e, uint32_t rkey, uint64_t remote)
{
	unsigned int posted = 0, done = 0;
	double t0 = bench_now();

	while (done < WRITE_COUNT) {
		struct droce_wc wc[32];
		int n;

		while (posted < WRITE_COUNT && posted - done < WRITE_WINDOW) {
			uint64_t off = (uint64_t)(posted % WRITE_WINDOW) * WRITE_BYTES;

			if (post(e, DROCE_WR_RDMA_WRITE, off, WRITE_BYTES, true, 0, remote + off,
				 rkey) != 0)
				return -1;
			posted++;
		}
		end_poll(e);
		n = droce_poll_cq(e->scq, 32, wc);
		for (int i = 0; i < n; i++)
			if (wc[i].status != DROCE_WC_SUCCESS)
				return -1;
		done += (unsigned int)n;
	}
	return (double)WRITE_COUNT * WRITE_BYTES / (bench_now() - t0) / 1e9;
}

/* Messages per second of RATE_COUNT 64-byte SENDs, RATE_WINDOW in flight. */
static double
rc_rate(struct rc_end *e)
{
	unsigned int posted = 0, done = 0;
	double t0 = bench_now();

	while (done < RATE_COUNT) {
		struct droce_wc wc[32];
		int n;

		while (posted < RATE_COUNT && posted - done < RATE_WINDOW) {
			bool signaled = posted % RATE_SIGNAL_EVERY == RATE_SIGNAL_EVERY - 1;

			if (post(e, DROCE_WR_SEND, 0, RATE_BYTES, signaled, 0, 0, 0) != 0)
				return -1;
			posted++;
		}
		end_poll(e);
		n = droce_poll_cq(e->scq, 32, wc);
		for (int i = 0; i < n; i++)
			if (wc[i].status != DROCE_WC_SUCCESS)
				return -1;
		done += (unsigned int)n * RATE_SIGNAL_EVERY;
	}
	return RATE_COUNT / (bench_now() - t0);
}

static double
memcpy_gbps(uint8_t *src, uint8_t *dst)
{
	double t0 = bench_now();

	for (unsigned int i = 0; i < WRITE_COUNT; i++) {
		size_t off = (size_t)(i % WRITE_WINDOW) * WRITE_BYTES;

		memcpy(dst + off, src + off, WRITE_BYTES);
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	return (double)WRITE_COUNT * WRITE_BYTES / (bench_now() - t0) / 1e9;
}

/* ---- kernel TCP over loopback ------------------------------------------------ */

static bool
full_io(int fd, void *buf, size_t len, bool writing)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);

		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* A TCP peer in a child process: echoes PING_BYTES messages (mode 'e')
 * or sinks RATE_COUNT messages and answers one byte (mode 's'). It is
 * left to the scheduler, which runs it where TCP does best: pinned to
 * the other cpu, every message would wake it with an IPI (p50 57-72 us
 * here against 14-17 us unpinned).
 */
static pid_t
tcp_peer(int *fd, char mode)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	pid_t pid;

	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 1) != 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &alen) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		uint8_t buf[65536];
		int c;

		c = accept(ls, NULL, NULL);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (mode == 'e') {
			while (full_io(c, buf, PING_BYTES, false) && full_io(c, buf, PING_BYTES, true))
				;
		} else {
			uint64_t left = (uint64_t)RATE_COUNT * RATE_BYTES;

			while (left > 0) {
				ssize_t n = read(c, buf, RTE_MIN(left, sizeof(buf)));

				if (n <= 0)
					_exit(1);
				left -= (uint64_t)n;
			}
			full_io(c, buf, 1, true);
		}
		_exit(0);
	}
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (pid < 0 || *fd < 0 || connect(*fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		return -1;
	setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(ls);
	return pid;
}

bool
bench_tcp_pingpong(uint64_t *rtt, unsigned int iters)
{
	uint8_t buf[PING_BYTES] = { 0 };
	bool ok = true;
	int fd, status;
	pid_t pid = tcp_peer(&fd, 'e');

	if (pid < 0)
		return false;
	for (unsigned int i = 0; i < iters && ok; i++) {
		uint64_t t0 = rte_rdtsc();

		ok = full_io(fd, buf, PING_BYTES, true) && full_io(fd, buf, PING_BYTES, false);
		rtt[i] = rte_rdtsc() - t0;
	}
	close(fd);
	waitpid(pid, &status, 0);
	return ok;
}

double
bench_tcp_rate(void)
{
	uint8_t buf[RATE_BYTES] = { 0 };
	bool ok = true;
	int fd, status;
	pid_t pid = tcp_peer(&fd, 's');
	double t0 = bench_now(), rate;

	if (pid < 0)
		return -1;
	for (unsigned int i = 0; i < RATE_COUNT && ok; i++)
		ok = full_io(fd, buf, RATE_BYTES, true);
	ok = ok && full_io(fd, buf, 1, false);
	rate = RATE_COUNT / (bench_now() - t0);
	close(fd);
	waitpid(pid, &status, 0);
	return ok ? rate : -1;
}

/* ---- the case ------------------------------------------------------------------- */

static int
rc_rig_up(const struct bench_opts *o, struct rc_end *e, struct peer *p, struct raw_link *r,
	  uint32_t *peer_rkey, uint64_t *peer_va, char *err, size_t errlen)
{
	char devargs[160], line[128];
	unsigned int qpn, psn, rkey;
	unsigned long va;
	int ret;

	snprintf(p->socket, sizeof(p->socket), "/tmp/droce-bench-rc-%d.sock", getpid());
	snprintf(p->raw_socket, sizeof(p->raw_socket), "/tmp/droce-bench-rcraw-%d.sock",
		 getpid());
	snprintf(devargs, sizeof(devargs), "net_memif_rc0,role=server,socket=%s", p->socket);
	ret = rte_dev_probe(devargs);
	if (ret == 0) {
		snprintf(devargs, sizeof(devargs), "%s,role=server,socket=%s", RAW_DEVICE,
			 p->raw_socket);
		ret = rte_dev_probe(devargs);
	}
	if (ret != 0) {
		snprintf(err, errlen, "%s: %s", devargs, rte_strerror(-ret));
		return -1;
	}
	if (bench_port_up(RAW_DEVICE, &r->port_id, &r->pool, err, errlen) != 0 ||
	    end_up(e, "net_memif_rc0", OUR_IP, 4u << 20, err, errlen) != 0 ||
	    peer_start(p, o, err, errlen) != 0)
		return -1;
	if (fgets(line, sizeof(line), p->from) == NULL ||
	    sscanf(line, "%u %u %u %lu", &qpn, &psn, &rkey, &va) != 4) {
		snprintf(err, errlen, "the peer process did not start (see above)");
		return -1;
	}
	fprintf(p->to, "%u %u\n", droce_qp_num(e->qp), e->psn);
	fflush(p->to);
	*peer_rkey = rkey;
	*peer_va = va;
	if (end_connect(e, qpn, psn, PEER_IP) != 0) {
		snprintf(err, errlen, "modify_qp (see the droce.rc log)");
		return -1;
	}
	/* Until the memif link is up and ARP resolved: the first round trip. */
	for (int i = 0; i < 20; i++) {
		uint64_t rtt;

		if (rc_pingpong(e, &rtt, 1))
			return 0;
	}
	snprintf(err, errlen, "no round trip to the peer process");
	return -1;
}

/* Down in the order memif needs: it unmaps a leaving peer's rings under
 * a port that is still polled, so the peer leaves while this side polls
 * neither link, then this side. Returns peer_stop()'s verdict.
 */
static int
rc_rig_down(struct rc_end *e, struct peer *p, struct raw_link *r)
{
	int peer_ended = peer_stop(p);
	uint16_t port_id;

	end_down(e);
	if (r->pool != NULL)
		bench_port_down(r->port_id, r->pool);
	/* The stack leaves the port to whoever probed it. */
	if (rte_eth_dev_get_port_by_name("net_memif_rc0", &port_id) == 0) {
		struct rte_eth_dev_info info;
		int ret = rte_eth_dev_info_get(port_id, &info);

		rte_eth_dev_close(port_id);
		if (ret == 0 && info.device != NULL)
			rte_dev_remove(info.device);
	}
	unlink(p->socket);
	unlink(p->raw_socket);
	return peer_ended;
}

int
bench_rc(const struct bench_opts *o)
{
	static uint64_t rtt[PING_ITERS];
	double rc_p50[BENCH_MAX_ROUNDS], rc_p99[BENCH_MAX_ROUNDS];
	double raw_p50[BENCH_MAX_ROUNDS], raw_p99[BENCH_MAX_ROUNDS], raw_gbps[BENCH_MAX_ROUNDS];
	double tcp_p50[BENCH_MAX_ROUNDS], tcp_p99[BENCH_MAX_ROUNDS];
	double wr[BENCH_MAX_ROUNDS], wr_zc[BENCH_MAX_ROUNDS], mc[BENCH_MAX_ROUNDS];
	double rr[BENCH_MAX_ROUNDS], tr[BENCH_MAX_ROUNDS];
	struct rc_end e = { 0 };
	struct peer p = { 0 };
	struct raw_link raw = { .pool = NULL };
	char err[DROCE_ERR_LEN];
	uint32_t peer_rkey;
	uint64_t peer_va;
	uint8_t *src = NULL, *dst = NULL;
	bool zero_copy;
	int ret = 1;

	if (rc_rig_up(o, &e, &p, &raw, &peer_rkey, &peer_va, err, sizeof(err)) != 0) {
		fprintf(stderr, "droce-bench rc: %s\n", err);
		goto out;
	}
	src = aligned_alloc(4096, (size_t)WRITE_WINDOW * WRITE_BYTES);
	dst = aligned_alloc(4096, (size_t)WRITE_WINDOW * WRITE_BYTES);
	if (src == NULL || dst == NULL)
		goto out;
	memset(src, 1, (size_t)WRITE_WINDOW * WRITE_BYTES);
	memset(dst, 2, (size_t)WRITE_WINDOW * WRITE_BYTES);
	zero_copy = droce_rc_set_zero_copy(e.dev, true) == 0;
	droce_rc_set_zero_copy(e.dev, false); /* the baseline: copied, as without port.0.tx.chains */
	for (unsigned int r = 0; r < o->rounds; r++) {
		if (!rc_pingpong(&e, rtt, PING_ITERS)) {
			fprintf(stderr, "droce-bench rc: ping-pong failed\n");
			goto out;
		}
		bench_percentiles(rtt, PING_ITERS, &rc_p50[r], &rc_p99[r]);
		if (!raw_pingpong(&raw, &p, rtt, PING_ITERS, &raw_gbps[r])) {
			fprintf(stderr, "droce-bench rc: no frame came back over %s\n", RAW_DEVICE);
			goto out;
		}
		bench_percentiles(rtt, PING_ITERS, &raw_p50[r], &raw_p99[r]);
		wr[r] = rc_write(&e, peer_rkey, peer_va);
		/* The same WRITEs sent from the MR. */
		if (zero_copy) {
			droce_rc_set_zero_copy(e.dev, true);
			wr_zc[r] = rc_write(&e, peer_rkey, peer_va);
			droce_rc_set_zero_copy(e.dev, false);
		} else {
			wr_zc[r] = wr[r];
		}
		rr[r] = rc_rate(&e);
		mc[r] = memcpy_gbps(src, dst);
		peer_pause(&p, true);
		if (!bench_tcp_pingpong(rtt, PING_ITERS)) {
			fprintf(stderr, "droce-bench rc: TCP ping-pong failed\n");
			goto out;
		}
		bench_percentiles(rtt, PING_ITERS, &tcp_p50[r], &tcp_p99[r]);
		tr[r] = bench_tcp_rate();
		peer_pause(&p, false);
		if (wr[r] < 0 || wr_zc[r] < 0 || rr[r] < 0 || tr[r] < 0) {
			fprintf(stderr, "droce-bench rc: a WRITE or rate pass failed\n");
			goto out;
		}
		printf("  round %u: ping-pong p50 %.1f us (TCP %.1f, memif alone %.2f), p99 %.1f us (TCP %.1f); WRITE %.2f GB/s (zero copy %.2f, memif alone %.2f, memcpy %.2f); rate %.0f msg/s (TCP %.0f)\n",
		       r + 1, rc_p50[r], tcp_p50[r], raw_p50[r], rc_p99[r], tcp_p99[r], wr[r],
		       wr_zc[r], raw_gbps[r], mc[r], rr[r], tr[r]);
		fflush(stdout);
	}
	printf("  ping-pong 64 B: p50 %.1f us vs TCP %.1f us = %.2fx; p99 %.1f us vs %.1f us = %.2fx\n",
	       bench_median(rc_p50, o->rounds), bench_median(tcp_p50, o->rounds),
	       bench_median(rc_p50, o->rounds) / bench_median(tcp_p50, o->rounds),
	       bench_median(rc_p99, o->rounds), bench_median(tcp_p99, o->rounds),
	       bench_median(rc_p99, o->rounds) / bench_median(tcp_p99, o->rounds));
	printf("  the transport alone (%u-byte frames echoed over memif): p50 %.2f us = %.2fx TCP, p99 %.2f us; RC adds %.2f us at p50\n",
	       RAW_FRAME_BYTES, bench_median(raw_p50, o->rounds),
	       bench_median(raw_p50, o->rounds) / bench_median(tcp_p50, o->rounds),
	       bench_median(raw_p99, o->rounds),
	       bench_median(rc_p50, o->rounds) - bench_median(raw_p50, o->rounds));
	printf("  RDMA WRITE 64 KiB x%u in flight: %.2f GB/s vs memcpy %.2f GB/s = %.2fx\n",
	       WRITE_WINDOW, bench_median(wr, o->rounds), bench_median(mc, o->rounds),
	       bench_median(wr, o->rounds) / bench_median(mc, o->rounds));
	printf("  the transport alone (%u-byte frames of %u bytes of payload, the WRITEs' at path MTU 1024, one in %u answered): %.2f GB/s = %.2fx memcpy; RDMA WRITE reaches %.2fx of it\n",
	       RAW_STREAM_FRAME, RAW_STREAM_PAYLOAD, RAW_STREAM_ANSWER_EVERY, bench_median(raw_gbps, o->rounds),
	       bench_median(raw_gbps, o->rounds) / bench_median(mc, o->rounds),
	       bench_median(wr, o->rounds) / bench_median(raw_gbps, o->rounds));
	if (zero_copy)
		printf("  the same sent from the MR (zero copy): %.2f GB/s = %.2fx of copying\n",
		       bench_median(wr_zc, o->rounds),
		       bench_median(wr_zc, o->rounds) / bench_median(wr, o->rounds));
	else
		printf("  (no zero copy: the port takes no chained packets)\n");
	printf("  64 B SENDs x%u in flight: %.0f msg/s vs TCP pipeline %.0f msg/s = %.2fx\n",
	       RATE_WINDOW, bench_median(rr, o->rounds), bench_median(tr, o->rounds),
	       bench_median(rr, o->rounds) / bench_median(tr, o->rounds));
	ret = 0;
out:
	free(src);
	free(dst);
	if (rc_rig_down(&e, &p, &raw) != 0)
		ret = 1;
	return ret;
}
