/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The server side of perftest's ib_write_bw, ib_read_bw and ib_send_bw
 * (linux-rdma/perftest, src/perftest_communication.c and *_bw.c), over
 * its TCP exchange without rdma_cm. Each step the client takes a write
 * then a read, the server a read then a write, of these messages:
 *
 *   version       16 bytes, "6.06" and NULs; both must be 5.70 or later
 *   system data   cycle buffer, then cache line size: 4-byte big-endian
 *                 each, the larger of the two sides' counts
 *   MTU           2 bytes, the ibv_mtu number in decimal ("3" = 1024),
 *                 the smaller counts
 *   keys          108 bytes, "lid:out_reads:qpn:psn:rkey:vaddr:" in hex,
 *                 16 GID bytes "xx:", "srqn:" and a NUL (the format with a
 *                 GID, which RoCE always takes)
 *   BW report     size, iters, peak BW, average BW, message rate: 8 bytes
 *                 each, big-endian (the doubles byte-swapped whole)
 *   "done"        5 bytes, each side, at the end
 *
 * write/read: keys x3 (the third once the client's QP is in RTR/RTS),
 * then the client runs; keys once more when it is done, its report, keys
 * and "done". send: keys x3, the server posts its receives, keys once
 * more as the go, the client runs, keys and "done". The server's QP stays
 * in RTR, as perftest's does.
 *
 * With -R (rdma_cm) the same messages go over an RC connection of their
 * own that the client makes through the CM to the port: each one SEND,
 * taken by the one receive of 56 bytes the other side keeps posted, and
 * the keys are perftest's struct pingpong_dest itself (4-byte big-endian
 * lid, out_reads, qpn, psn, rkey, 4 bytes of padding, 8-byte big-endian
 * vaddr, 16 GID bytes, srqn, gid_index). After the MTU, keys once, the
 * client's second connection (the QP of the test) is accepted, keys once
 * more, then as without -R; no "done" at the end.
 */

#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_common.h>
#include <rte_random.h>

#include "droce_cm.h"
#include "rc_app.h"

#define PT_VERSION "6.06"       /* what Debian 12's perftest 4.5-0.17 says */
#define PT_VERSION_LEN 16
#define PT_MIN_VERSION 5.70     /* perftest refuses older peers */
#define PT_KEYS_LEN 108
#define PT_MTU_LEN 2
#define PT_CACHE_LINE 64
#define PT_DONE "done"
/* Its QP attributes: ACK timeout, RNR timer, GRH hop limit. */
#define PT_QP_TIMEOUT 14
#define PT_MIN_RNR_TIMER 12
#define PT_HOP_LIMIT 0xff
/* READs the client may have in flight: perftest's server offers its
 * device's maximum; droce offers fewer, so that a burst of answers fits
 * what a soft-RoCE peer in a VM takes in at once.
 */
#define PT_OUT_READS 16
#define PT_WC_BURST 32
/* -R: what one exchange message holds at most (sizeof(struct pingpong_dest)). */
#define PT_CM_DEST_LEN 56
#define PT_CM_RETRY 7           /* perftest's retry_count, for retries and RNR retries */
#define PT_TX_DEPTH 128         /* the client's work requests in flight, perftest's default */

enum { PT_CM_SEND = 1, PT_CM_RECV };

static const char *const verb_name[] = {
	[RCAPP_WRITE] = "write", [RCAPP_READ] = "read", [RCAPP_SEND] = "send",
};

/* perftest's struct pingpong_dest, as the exchange carries it. */
struct pt_keys {
	uint32_t lid, out_reads, qpn, psn, rkey, srqn;
	uint64_t vaddr;
	uint8_t gid[16];
};

/* The client's struct bw_report_data, as it sends it. */
struct pt_report {
	uint64_t size, iters;
	double bw_peak, bw_avg, msg_rate;
};

/* -R: the exchange's own connection, and the test's. */
struct pt_cm {
	struct droce_cm_channel *ch;
	struct droce_cm_id *listen_id, *comm_id, *data_id;
	uint8_t *buf;                   /* a SEND's at 0, the receive's at PT_CM_DEST_LEN */
	struct droce_mr *mr;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp;
};

struct pt_run {
	struct rcapp *app;
	const struct rcapp_opts *o;
	const char *verb;
	struct oob oob;                 /* the TCP exchange; its idle hook and timeout with -R too */
	struct pt_cm cm;
	bool client;                    /* -R --connect: droce-rc is perftest's client */
	struct pt_keys my, rem;
	char rem_version[PT_VERSION_LEN + 1];
	uint32_t cycle_buffer;
	enum droce_mtu mtu;
	/* send: what came, and the first completion that failed */
	uint64_t messages, bytes;
	struct droce_wc failed;
	bool has_failed;
	char err[512];
};

/* ---- the exchange: TCP, or -R's connection ----------------------------------------- */

/* Wait until @p done says so, the stack running and the idle hook too;
 * the timeout counts from the last RoCE packet.
 */
static int
cm_wait(struct pt_run *r, bool (*done)(struct pt_run *r, void *arg), void *arg,
	const char *what)
{
	uint64_t until = rcapp_now_ms() + r->oob.timeout_s * 1000ull;

	while (!done(r, arg)) {
		if (r->err[0] != '\0')
			return -1;
		if (r->oob.idle(r->oob.idle_arg))
			until = rcapp_now_ms() + r->oob.timeout_s * 1000ull;
		if (rcapp_now_ms() > until || rcapp_interrupted) {
			snprintf(r->err, sizeof(r->err), "no %s in %u s (--timeout)", what,
				 r->oob.timeout_s);
			return -1;
		}
	}
	return 0;
}

struct cm_completion {
	struct droce_cq *cq;
	struct droce_wc wc;
	const char *what;
};

static bool
completion_came(struct pt_run *r, void *arg)
{
	struct cm_completion *c = arg;

	if (droce_poll_cq(c->cq, 1, &c->wc) != 1)
		return false;
	if (c->wc.status != DROCE_WC_SUCCESS)
		snprintf(r->err, sizeof(r->err), "%s: the exchange's connection failed: %s (the peer gone?)",
			 c->what, droce_wc_status_str(c->wc.status));
	return c->wc.status == DROCE_WC_SUCCESS;
}

static void
cm_post_recv(struct pt_run *r)
{
	struct droce_sge sge = { (uintptr_t)r->cm.buf + PT_CM_DEST_LEN, PT_CM_DEST_LEN,
				 r->cm.mr->lkey };
	struct droce_recv_wr wr = { .wr_id = PT_CM_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;

	droce_post_recv(r->cm.qp, &wr, &bad);
}

/* Exactly @p len bytes from the peer (@p what names them in messages). */
static int
xchg_read(struct pt_run *r, void *buf, size_t len, const char *what)
{
	struct cm_completion c = { .cq = r->cm.rcq, .what = what };

	if (!r->o->rdma_cm)
		return oob_read(&r->oob, buf, len, what, r->err, sizeof(r->err));
	if (cm_wait(r, completion_came, &c, what) != 0)
		return -1;
	if (c.wc.byte_len != len) {
		snprintf(r->err, sizeof(r->err), "%s: a SEND of %u bytes where perftest sends %zu",
			 what, c.wc.byte_len, len);
		return -1;
	}
	memcpy(buf, r->cm.buf + PT_CM_DEST_LEN, len);
	cm_post_recv(r);
	return 0;
}

static int
xchg_write(struct pt_run *r, const void *buf, size_t len, const char *what)
{
	struct droce_sge sge = { (uintptr_t)r->cm.buf, (uint32_t)len, 0 };
	struct droce_send_wr wr = { .wr_id = PT_CM_SEND, .sg_list = &sge, .num_sge = 1,
				    .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED },
			     *bad;
	struct cm_completion c = { .cq = r->cm.scq, .what = what };
	int ret;

	if (!r->o->rdma_cm)
		return oob_write(&r->oob, buf, len, what, r->err, sizeof(r->err));
	memcpy(r->cm.buf, buf, len);
	sge.lkey = r->cm.mr->lkey;
	ret = droce_post_send(r->cm.qp, &wr, &bad);
	if (ret != 0) {
		snprintf(r->err, sizeof(r->err), "%s: post_send: %s", what, strerror(-ret));
		return -1;
	}
	return cm_wait(r, completion_came, &c, what);
}

/* One message each way: the client writes first, the server answers. */
static int
xchg_pair(struct pt_run *r, const void *mine, void *theirs, size_t len, const char *name)
{
	char what[96], ours[96];

	snprintf(what, sizeof(what), "the %s's %s", r->client ? "server" : "client", name);
	snprintf(ours, sizeof(ours), "our %s", name);
	if (r->client)
		return xchg_write(r, mine, len, ours) != 0 || xchg_read(r, theirs, len, what) != 0
		       ? -1 : 0;
	return xchg_read(r, theirs, len, what) != 0 || xchg_write(r, mine, len, ours) != 0
	       ? -1 : 0;
}

/* ---- the messages ---------------------------------------------------------------- */

static void
keys_format(const struct pt_keys *k, char msg[PT_KEYS_LEN])
{
	int n = snprintf(msg, PT_KEYS_LEN, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":", k->lid,
			 k->out_reads, k->qpn, k->psn, k->rkey, k->vaddr);

	for (int i = 0; i < 16; i++)
		n += snprintf(msg + n, (size_t)(PT_KEYS_LEN - n), "%02x:", k->gid[i]);
	snprintf(msg + n, (size_t)(PT_KEYS_LEN - n), "%08x:", k->srqn);
}

/* One hex field ending in ':'; advances @p p past it. */
static int
keys_field(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	for (; s < end && *s != ':'; s++, digits++) {
		int x = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;

		if (x < 0 || digits == 16)
			return -1;
		v = v << 4 | (uint64_t)x;
	}
	if (s == end || digits == 0)
		return -1;
	*p = s + 1;
	*out = v;
	return 0;
}

static int
keys_parse(struct pt_run *r, const char msg[PT_KEYS_LEN], struct pt_keys *k)
{
	const char *p = msg, *end = memchr(msg, '\0', PT_KEYS_LEN);
	uint64_t f[6], v;

	if (end == NULL)
		goto bad;
	for (int i = 0; i < 6; i++)
		if (keys_field(&p, end, &f[i]) != 0)
			goto bad;
	for (int i = 0; i < 16; i++) {
		if (keys_field(&p, end, &v) != 0 || v > 0xff)
			goto bad;
		k->gid[i] = (uint8_t)v;
	}
	if (keys_field(&p, end, &v) != 0 || p != end)
		goto bad;
	k->lid = (uint32_t)f[0];
	k->out_reads = (uint32_t)f[1];
	k->qpn = (uint32_t)f[2] & 0xffffff;
	k->psn = (uint32_t)f[3] & 0xffffff;
	k->rkey = (uint32_t)f[4];
	k->vaddr = f[5];
	k->srqn = (uint32_t)v;
	return 0;
bad:
	snprintf(r->err, sizeof(r->err), "the peer's keys \"%.*s\" are not perftest's lid:out_reads:qpn:psn:rkey:vaddr:<16 GID bytes>:srqn: (droce-rc takes the exchange with a GID, as RoCE has; no -R)",
		 PT_KEYS_LEN - 1, msg);
	return -1;
}

/* -R's keys: struct pingpong_dest as it is in memory, its numbers big-endian. */
static void
keys_pack(const struct pt_keys *k, uint8_t msg[PT_CM_DEST_LEN])
{
	const uint32_t words[5] = { htonl(k->lid), htonl(k->out_reads), htonl(k->qpn),
				    htonl(k->psn), htonl(k->rkey) };
	const uint32_t tail[2] = { htonl(k->srqn), 0 };
	uint64_t vaddr = htobe64(k->vaddr);

	memset(msg, 0, PT_CM_DEST_LEN);
	memcpy(msg, words, sizeof(words));
	memcpy(msg + 24, &vaddr, sizeof(vaddr));
	memcpy(msg + 32, k->gid, 16);
	memcpy(msg + 48, tail, sizeof(tail));
}

static void
keys_unpack(const uint8_t msg[PT_CM_DEST_LEN], struct pt_keys *k)
{
	uint32_t words[5];
	uint64_t vaddr;

	memcpy(words, msg, sizeof(words));
	memcpy(&vaddr, msg + 24, sizeof(vaddr));
	k->lid = ntohl(words[0]);
	k->out_reads = ntohl(words[1]);
	k->qpn = ntohl(words[2]) & 0xffffff;
	k->psn = ntohl(words[3]) & 0xffffff;
	k->rkey = ntohl(words[4]);
	k->vaddr = be64toh(vaddr);
	memcpy(k->gid, msg + 32, 16);
}

/* ctx_hand_shake(): the keys both ways. */
static int
handshake(struct pt_run *r, const char *when)
{
	char mine[PT_KEYS_LEN], theirs[PT_KEYS_LEN], name[96];
	uint8_t dest[PT_CM_DEST_LEN], rem[PT_CM_DEST_LEN];

	snprintf(name, sizeof(name), "keys (%s)", when);
	if (r->o->rdma_cm) {
		keys_pack(&r->my, dest);
		if (xchg_pair(r, dest, rem, sizeof(rem), name) != 0)
			return -1;
		keys_unpack(rem, &r->rem);
		return 0;
	}
	keys_format(&r->my, mine);
	if (xchg_pair(r, mine, theirs, sizeof(theirs), name) != 0)
		return -1;
	return keys_parse(r, theirs, &r->rem);
}

/* exchange_versions(), check_sys_data() and check_mtu(). */
static int
negotiate(struct pt_run *r)
{
	char ours[PT_VERSION_LEN] = PT_VERSION, mtu[PT_MTU_LEN + 1] = "";
	uint32_t remote, cycle = htonl(r->cycle_buffer), line = htonl(PT_CACHE_LINE);
	long rem_mtu;

	char rem[PT_MTU_LEN + 1] = "";

	if (xchg_pair(r, ours, r->rem_version, PT_VERSION_LEN, "version") != 0)
		return -1;
	r->rem_version[PT_VERSION_LEN] = '\0';
	if (atof(r->rem_version) < PT_MIN_VERSION) {
		snprintf(r->err, sizeof(r->err), "the %s is perftest \"%s\"; droce-rc speaks the exchange of perftest %.2f and later",
			 r->client ? "server" : "client", r->rem_version, PT_MIN_VERSION);
		return -1;
	}
	if (xchg_pair(r, &cycle, &remote, sizeof(remote), "cycle buffer") != 0)
		return -1;
	r->cycle_buffer = RTE_MAX(r->cycle_buffer, ntohl(remote));
	if (xchg_pair(r, &line, &remote, sizeof(remote), "cache line size") != 0)
		return -1;
	snprintf(mtu, sizeof(mtu), "%d", (int)r->mtu);
	if (xchg_pair(r, mtu, rem, PT_MTU_LEN, "MTU") != 0)
		return -1;
	rem_mtu = strtol(rem, NULL, 10);
	/* As perftest: the smaller of the two, when the peer's is one. */
	if (rem_mtu >= DROCE_MTU_256 && rem_mtu <= DROCE_MTU_4096 && rem_mtu < (long)r->mtu)
		r->mtu = (enum droce_mtu)rem_mtu;
	return 0;
}

static int
report_pair(struct pt_run *r, uint64_t mine, uint64_t *theirs, const char *name)
{
	mine = htobe64(mine);
	if (xchg_pair(r, &mine, theirs, sizeof(*theirs), name) != 0)
		return -1;
	*theirs = be64toh(*theirs);
	return 0;
}

/* xchg_bw_reports(), for peers of 5.33 and later (8-byte iters). The
 * server's own report is never read by perftest's client: zeros.
 */
static int
reports(struct pt_run *r, const struct pt_report *mine, struct pt_report *rep)
{
	uint64_t bits[3], ours[3];

	memcpy(&ours[0], &mine->bw_peak, sizeof(double));
	memcpy(&ours[1], &mine->bw_avg, sizeof(double));
	memcpy(&ours[2], &mine->msg_rate, sizeof(double));
	if (report_pair(r, mine->size, &rep->size, "report (size)") != 0 ||
	    report_pair(r, mine->iters, &rep->iters, "report (iterations)") != 0 ||
	    report_pair(r, ours[0], &bits[0], "report (peak BW)") != 0 ||
	    report_pair(r, ours[1], &bits[1], "report (average BW)") != 0 ||
	    report_pair(r, ours[2], &bits[2], "report (message rate)") != 0)
		return -1;
	memcpy(&rep->bw_peak, &bits[0], sizeof(double));
	memcpy(&rep->bw_avg, &bits[1], sizeof(double));
	memcpy(&rep->msg_rate, &bits[2], sizeof(double));
	return 0;
}

/* ctx_close_connection(): keys once more, then "done" both ways. */
static int
close_connection(struct pt_run *r)
{
	char done[sizeof(PT_DONE)];
	long n;

	if (r->o->rdma_cm)
		return handshake(r, "close");
	if (handshake(r, "close") != 0 ||
	    oob_write(&r->oob, PT_DONE, sizeof(PT_DONE), "\"done\"", r->err, sizeof(r->err)) != 0)
		return -1;
	n = oob_read_upto(&r->oob, done, sizeof(done), "\"done\"", r->err, sizeof(r->err));
	if (n < 0)
		return -1;
	if (n != (long)sizeof(done) || memcmp(done, PT_DONE, sizeof(done)) != 0) {
		snprintf(r->err, sizeof(r->err), "the client ended with %ld bytes, not \"done\"", n);
		return -1;
	}
	return 0;
}

/* ---- the QP ------------------------------------------------------------------------ */

static int
setup_qp(struct pt_run *r)
{
	static const int qp_access[] = {
		[RCAPP_WRITE] = DROCE_ACCESS_REMOTE_WRITE,
		[RCAPP_READ] = DROCE_ACCESS_REMOTE_READ,
		[RCAPP_SEND] = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_LOCAL_WRITE,
	};
	const struct rcapp_opts *o = r->o;
	bool send = o->verb == RCAPP_SEND;
	/* The client writes or reads in turn over max(size, cycle buffer). */
	size_t len = send ? o->size : RTE_MAX(o->size, r->cycle_buffer);

	if (rcapp_qp_create(r->app, len, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
			    DROCE_ACCESS_REMOTE_READ, r->client ? PT_TX_DEPTH : 1,
			    send && !r->client ? o->rx_depth : 1, 1,
			    qp_access[o->verb], r->err, sizeof(r->err)) != 0)
		return -1;
	r->my = (struct pt_keys){
		.out_reads = o->verb == RCAPP_READ ? PT_OUT_READS : 1,
		.qpn = droce_qp_num(r->app->qp), .psn = (uint32_t)rte_rand() & 0xffffff,
		.rkey = r->app->mr->rkey, .vaddr = (uintptr_t)r->app->buf,
	};
	droce_rc_query_gid(r->app->dev, r->my.gid);
	return 0;
}

/* ctx_connect() on perftest's server: RTR only. */
static int
connect_qp(struct pt_run *r)
{
	struct rcapp_conn c = {
		.dest_qpn = r->rem.qpn, .rq_psn = r->rem.psn, .mtu = r->mtu,
		.hop_limit = PT_HOP_LIMIT, .min_rnr_timer = PT_MIN_RNR_TIMER,
		.max_dest_rd_atomic = (uint8_t)r->my.out_reads, .timeout = PT_QP_TIMEOUT,
	};

	if (rcapp_gid_check(r->rem.gid, "the perftest client", r->err, sizeof(r->err)) != 0)
		return -1;
	memcpy(c.dgid, r->rem.gid, sizeof(c.dgid));
	return rcapp_qp_connect(r->app, &c, true, r->err, sizeof(r->err));
}

/* -R: the next CM event, which must be @p want. */
struct cm_wanted {
	enum droce_cm_event_type want;
	struct droce_cm_event ev;
};

static bool
cm_event_came(struct pt_run *r, void *arg)
{
	struct cm_wanted *w = arg;

	if (droce_cm_get_event(r->cm.ch, &w->ev) != 0)
		return false;
	if (w->ev.event == w->want)
		return true;
	/* The RTU of a connection accepted before: perftest's server does
	 * not wait for it either.
	 */
	if (w->ev.event == DROCE_CM_EVENT_ESTABLISHED)
		return false;
	if (w->ev.event == DROCE_CM_EVENT_CONNECT_REQUEST)
		droce_cm_destroy_id(w->ev.id);
	snprintf(r->err, sizeof(r->err), "CM event %s (status %d) where %s was awaited",
		 droce_cm_event_str(w->ev.event), w->ev.status, droce_cm_event_str(w->want));
	return false;
}

/* -R: the client's next connection, accepted with @p qp. */
static struct droce_cm_id *
cm_accept(struct pt_run *r, struct droce_qp *qp, uint8_t rd_atomic, const char *what)
{
	struct droce_cm_conn_param p = { .responder_resources = rd_atomic,
					 .initiator_depth = rd_atomic,
					 .retry_count = PT_CM_RETRY,
					 .rnr_retry_count = PT_CM_RETRY };
	struct cm_wanted w = { .want = DROCE_CM_EVENT_CONNECT_REQUEST };

	if (cm_wait(r, cm_event_came, &w, what) != 0)
		return NULL;
	if (droce_cm_accept(w.ev.id, qp, &p) != 0) {
		droce_cm_destroy_id(w.ev.id);
		snprintf(r->err, sizeof(r->err), "%s: the accept was refused (the droce.cm log says why)",
			 what);
		return NULL;
	}
	return w.ev.id;
}

/* -R client: connect @p qp to the server's port; as perftest, a refusal
 * (the server not listening yet) is tried again, 10 times 100 ms apart.
 */
static struct droce_cm_id *
cm_connect(struct pt_run *r, struct droce_qp *qp, uint8_t rd_atomic, const char *what)
{
	struct droce_cm_conn_param p = { .responder_resources = rd_atomic,
					 .initiator_depth = rd_atomic,
					 .retry_count = PT_CM_RETRY,
					 .rnr_retry_count = PT_CM_RETRY };

	for (int attempt = 0;; attempt++) {
		struct droce_cm_id *id = droce_cm_create_id(r->cm.ch, NULL);
		struct cm_wanted w = { .want = DROCE_CM_EVENT_ESTABLISHED };

		if (id == NULL || droce_cm_connect(id, r->o->connect_ip.s_addr, r->o->tcp_port, qp,
						   &p) != 0) {
			if (id != NULL)
				droce_cm_destroy_id(id);
			snprintf(r->err, sizeof(r->err), "%s: connect refused", what);
			return NULL;
		}
		if (cm_wait(r, cm_event_came, &w, what) == 0)
			return id;
		droce_cm_destroy_id(id);
		if (w.ev.event != DROCE_CM_EVENT_REJECTED || w.ev.status != 8 || attempt == 9)
			return NULL;
		r->err[0] = '\0';
		rcapp_linger(r->app, 100);
	}
}

/* -R: the exchange's channel and QP, its receive posted; a listener on
 * the server.
 */
static int
cm_exchange_open(struct pt_run *r)
{
	struct pt_cm *cm = &r->cm;
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_INIT, .port_num = 1 };

	cm->ch = droce_cm_create_channel(r->app->cm);
	if (cm->ch == NULL) {
		snprintf(r->err, sizeof(r->err), "no CM channel (out of memory)");
		return -1;
	}
	if (!r->client) {
		cm->listen_id = droce_cm_create_id(cm->ch, NULL);
		if (cm->listen_id == NULL || droce_cm_listen(cm->listen_id, r->o->tcp_port) != 0) {
			snprintf(r->err, sizeof(r->err), "cannot listen on port %u", r->o->tcp_port);
			return -1;
		}
	}
	cm->buf = aligned_alloc(64, 2 * PT_CM_DEST_LEN);
	cm->mr = cm->buf != NULL ? droce_reg_mr(r->app->pd, cm->buf, 2 * PT_CM_DEST_LEN,
						DROCE_ACCESS_LOCAL_WRITE) : NULL;
	cm->scq = droce_create_cq(r->app->dev, 1);
	cm->rcq = droce_create_cq(r->app->dev, 1);
	if (cm->mr != NULL && cm->scq != NULL && cm->rcq != NULL) {
		ia.send_cq = cm->scq;
		ia.recv_cq = cm->rcq;
		cm->qp = droce_create_qp(r->app->pd, &ia);
	}
	if (cm->qp == NULL ||
	    droce_modify_qp(cm->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX | DROCE_QP_PORT |
			    DROCE_QP_ACCESS_FLAGS) != 0) {
		snprintf(r->err, sizeof(r->err), "no QP for the exchange (the droce.rc log says why)");
		return -1;
	}
	cm_post_recv(r);
	cm->comm_id = r->client ? cm_connect(r, cm->qp, 0, "the exchange's connection")
		      : cm_accept(r, cm->qp, 0, "connection from ib_*_bw -R");
	return cm->comm_id != NULL ? 0 : -1;
}

static void
cm_close(struct pt_run *r)
{
	struct pt_cm *cm = &r->cm;
	struct droce_cm_event ev;
	struct droce_wc wc;

	if (cm->data_id != NULL)
		droce_cm_destroy_id(cm->data_id);
	if (cm->comm_id != NULL)
		droce_cm_destroy_id(cm->comm_id);
	if (cm->listen_id != NULL)
		droce_cm_destroy_id(cm->listen_id);
	if (cm->ch != NULL) {
		while (droce_cm_get_event(cm->ch, &ev) == 0)
			if (ev.event == DROCE_CM_EVENT_CONNECT_REQUEST)
				droce_cm_destroy_id(ev.id);
		droce_cm_destroy_channel(cm->ch);
	}
	if (cm->qp != NULL) {
		droce_modify_qp(cm->qp, &(struct droce_qp_attr){ .qp_state = DROCE_QPS_ERR },
				DROCE_QP_STATE);
		droce_destroy_qp(cm->qp);
	}
	while (cm->scq != NULL && droce_poll_cq(cm->scq, 1, &wc) == 1)
		;
	while (cm->rcq != NULL && droce_poll_cq(cm->rcq, 1, &wc) == 1)
		;
	if (cm->scq != NULL)
		droce_destroy_cq(cm->scq);
	if (cm->rcq != NULL)
		droce_destroy_cq(cm->rcq);
	/* Memory a port still sends from (zero copy) stays allocated. */
	if (cm->mr == NULL || droce_dereg_mr(cm->mr) == 0)
		free(cm->buf);
}

/* The test's QP connected: by the keys (RTR, as perftest's server), or
 * with -R through the CM (to RTS, as rdma_accept does), keys around it.
 */
static int
connect_test_qp(struct pt_run *r)
{
	if (!r->o->rdma_cm)
		return handshake(r, "QP") != 0 || connect_qp(r) != 0 ? -1 : 0;
	uint8_t rd_atomic = (uint8_t)(r->o->verb == RCAPP_READ ? r->my.out_reads : 0);

	if (handshake(r, "before the test's connection") != 0)
		return -1;
	r->cm.data_id = r->client ? cm_connect(r, r->app->qp, rd_atomic, "the test's connection")
			: cm_accept(r, r->app->qp, rd_atomic,
				    "the test's connection from ib_*_bw -R");
	if (r->cm.data_id == NULL || handshake(r, "after the test's connection") != 0 ||
	    handshake(r, "QP") != 0)
		return -1;
	return 0;
}

static void
print_peers(const struct pt_run *r)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, r->my.gid, gid, sizeof(gid));
	printf("droce-rc: perftest %s: local  QPN 0x%06x PSN 0x%06x RKey 0x%08x VAddr 0x%016" PRIx64
	       " GID %s\n", r->verb, r->my.qpn, r->my.psn, r->my.rkey, r->my.vaddr, gid);
	inet_ntop(AF_INET6, r->rem.gid, gid, sizeof(gid));
	printf("droce-rc: perftest %s: remote QPN 0x%06x PSN 0x%06x GID %s, perftest %s, path MTU %u, buffer %zu bytes\n",
	       r->verb, r->rem.qpn, r->rem.psn, gid, r->rem_version, droce_mtu_to_bytes(r->mtu),
	       r->app->buf_len);
	fflush(stdout);
}

/* ---- the tests ---------------------------------------------------------------------- */

/* send: take the messages while waiting for the client's closing keys;
 * every receive that completes is posted again.
 */
static bool
take_messages(void *arg)
{
	struct pt_run *r = arg;
	struct droce_wc wc[PT_WC_BURST];
	bool progress = rcapp_idle(r->app);
	int n = droce_poll_cq(r->app->cq, PT_WC_BURST, wc);

	for (int i = 0; i < n; i++) {
		/* Receives left over when the client's DREQ stops the QP (-R);
		 * a failure before would have been kept.
		 */
		if (wc[i].status == DROCE_WC_WR_FLUSH_ERR)
			continue;
		if (wc[i].status != DROCE_WC_SUCCESS) {
			if (!r->has_failed)
				r->failed = wc[i];
			r->has_failed = true;
			continue;
		}
		r->messages++;
		r->bytes += wc[i].byte_len;
		rcapp_post_recvs(r->app, 0, r->o->size, 1);
	}
	return progress || n > 0;
}

/* The client's test (run_iter_bw): -n work requests of -s bytes, at most
 * PT_TX_DEPTH in flight; what it measured, as perftest's report.
 */
static int
client_run(struct pt_run *r, struct pt_report *rep)
{
	static const enum droce_wr_opcode opcode[] = {
		[RCAPP_WRITE] = DROCE_WR_RDMA_WRITE, [RCAPP_READ] = DROCE_WR_RDMA_READ,
		[RCAPP_SEND] = DROCE_WR_SEND,
	};
	struct droce_sge sge = { (uintptr_t)r->app->buf, r->o->size, r->app->mr->lkey };
	struct droce_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = opcode[r->o->verb],
				    .send_flags = DROCE_SEND_SIGNALED }, *bad;
	uint64_t t0 = rcapp_now_us(), until = rcapp_now_ms() + r->o->timeout_s * 1000ull;
	uint32_t posted = 0, done = 0, iters = r->o->iters;
	struct droce_wc wc[PT_WC_BURST];
	double s;

	wr.wr.rdma.remote_addr = r->rem.vaddr;
	wr.wr.rdma.rkey = r->rem.rkey;
	while (done < iters) {
		int n;

		while (posted < iters && posted - done < PT_TX_DEPTH) {
			int ret;

			wr.wr_id = posted;
			ret = droce_post_send(r->app->qp, &wr, &bad);
			if (ret != 0) {
				snprintf(r->err, sizeof(r->err), "post_send %u: %s", posted,
					 strerror(-ret));
				return -1;
			}
			posted++;
		}
		rcapp_poll(r->app);
		n = droce_poll_cq(r->app->cq, PT_WC_BURST, wc);
		for (int i = 0; i < n; i++)
			if (wc[i].status != DROCE_WC_SUCCESS) {
				snprintf(r->err, sizeof(r->err), "work request %" PRIu64 ": %s",
					 wc[i].wr_id, droce_wc_status_str(wc[i].status));
				return -1;
			}
		done += (uint32_t)RTE_MAX(n, 0);
		if (n > 0)
			until = rcapp_now_ms() + r->o->timeout_s * 1000ull;
		if (rcapp_now_ms() > until || rcapp_interrupted) {
			snprintf(r->err, sizeof(r->err), "%u of %u work requests done; none for %u s (--timeout)",
				 done, iters, r->o->timeout_s);
			return -1;
		}
	}
	s = (double)(rcapp_now_us() - t0) / 1e6;
	*rep = (struct pt_report){ .size = r->o->size, .iters = iters,
				   .bw_avg = (double)r->o->size * iters / s / 1048576.0,
				   .msg_rate = iters / s / 1e6 };
	rep->bw_peak = rep->bw_avg;
	printf("droce-rc: perftest %s: %u x %u bytes in %.3f s: %.2f MB/s (MiB), %.6f Mpps\n",
	       r->verb, iters, r->o->size, s, rep->bw_avg, rep->msg_rate);
	return 0;
}

/* The client's send test: the server's receives posted ("go"), the
 * SENDs, then the end (ib_send_bw's client exchanges no report).
 */
static int
client_send(struct pt_run *r)
{
	struct pt_report rep;

	if (handshake(r, "connected") != 0 || handshake(r, "remote side") != 0 ||
	    handshake(r, "go") != 0 || client_run(r, &rep) != 0)
		return -1;
	return close_connection(r);
}

static int
run_send(struct pt_run *r)
{
	uint32_t depth = r->o->iters != 0 ? RTE_MIN(r->o->rx_depth, r->o->iters) : r->o->rx_depth;
	uint64_t t0, t1;
	double s;

	if (r->client)
		return client_send(r);
	if (handshake(r, "connected") != 0 || handshake(r, "remote side") != 0)
		return -1;
	if (rcapp_post_recvs(r->app, 0, r->o->size, depth) != depth) {
		snprintf(r->err, sizeof(r->err), "could not post %u receives", depth);
		return -1;
	}
	if (handshake(r, "go") != 0)
		return -1;
	t0 = rcapp_now_us();
	r->oob.idle = take_messages;
	r->oob.idle_arg = r;
	if (close_connection(r) != 0)
		return -1;
	t1 = rcapp_now_us();
	take_messages(r);
	s = (double)(t1 - t0) / 1e6;
	printf("droce-rc: perftest send: %" PRIu64 " messages, %" PRIu64 " bytes received in %.2f s = %.2f MB/s\n",
	       r->messages, r->bytes, s, (double)r->bytes / s / 1e6);
	if (r->has_failed) {
		snprintf(r->err, sizeof(r->err), "a receive completed with %s (%d)%s",
			 droce_wc_status_str(r->failed.status), r->failed.status,
			 r->failed.status == DROCE_WC_LOC_LEN_ERR ? ": the client sends more than -s bytes" : "");
		return -1;
	}
	if (r->o->iters != 0 && r->messages != r->o->iters) {
		snprintf(r->err, sizeof(r->err), "the client sent %" PRIu64 " messages; -n says %u",
			 r->messages, r->o->iters);
		return -1;
	}
	return 0;
}

static int
run_rdma(struct pt_run *r)
{
	struct droce_rc_stats before, after;
	struct pt_report mine = { 0 }, rep;

	if (handshake(r, "remote side") != 0 || handshake(r, "client in RTS") != 0)
		return -1;
	droce_rc_query_stats(r->app->dev, &before);
	/* The client runs now; on the server, RoCE packets from it keep the
	 * wait going.
	 */
	if ((r->client && client_run(r, &mine) != 0) || handshake(r, "end of test") != 0)
		return -1;
	droce_rc_query_stats(r->app->dev, &after);
	if (reports(r, &mine, &rep) != 0 || close_connection(r) != 0)
		return -1;
	if (r->client)
		return 0;
	printf("droce-rc: perftest %s: the client reports %" PRIu64 " iterations of %" PRIu64
	       " bytes: BW peak %.2f, average %.2f MB/s, %.6f Mpps\n", r->verb, rep.iters,
	       rep.size, rep.bw_peak, rep.bw_avg, rep.msg_rate);
	printf("droce-rc: perftest %s: droce took %" PRIu64 " RoCE packets and sent %" PRIu64
	       " during the test\n", r->verb, after.rx_packets - before.rx_packets,
	       after.tx_packets - before.tx_packets);
	if (rep.size > r->app->buf_len) {
		snprintf(r->err, sizeof(r->err), "the client says it moved %" PRIu64 "-byte messages; the buffer has %zu (-s)",
			 rep.size, r->app->buf_len);
		return -1;
	}
	if (r->o->iters != 0 && rep.iters != r->o->iters) {
		snprintf(r->err, sizeof(r->err), "the client ran %" PRIu64 " iterations; -n says %u",
			 rep.iters, r->o->iters);
		return -1;
	}
	return 0;
}

int
rcapp_perftest(struct rcapp *app, const struct rcapp_opts *o)
{
	struct pt_run *r = calloc(1, sizeof(*r));
	int ret = 1;

	if (r == NULL) {
		fprintf(stderr, "droce-rc: perftest: out of memory\n");
		return 1;
	}
	r->app = app;
	r->o = o;
	r->verb = verb_name[o->verb];
	r->client = !o->server;
	r->cycle_buffer = (uint32_t)sysconf(_SC_PAGESIZE);
	r->mtu = o->mtu != 0 ? o->mtu : rcapp_port_mtu(app);
	oob_init(&r->oob, o->timeout_s, rcapp_idle, app);
	if (r->client)
		printf("droce-rc: perftest %s: connecting to ib_%s_bw -R at %s port %u\n", r->verb,
		       r->verb, inet_ntoa(o->connect_ip), o->tcp_port);
	else
		printf("droce-rc: perftest %s: waiting for ib_%s_bw%s on %s port %u\n", r->verb,
		       r->verb, o->rdma_cm ? " -R" : "", o->rdma_cm ? "rdma_cm's TCP" : "TCP",
		       o->tcp_port);
	fflush(stdout);
	if (o->rdma_cm) {
		/* The exchange's QP comes from the PD the test's will use. */
		app->pd = droce_alloc_pd(app->dev);
		if (app->pd == NULL || cm_exchange_open(r) != 0)
			goto out;
	} else if (oob_accept(&r->oob, o->tcp_port, r->err, sizeof(r->err)) != 0) {
		goto out;
	}
	if (negotiate(r) != 0 || setup_qp(r) != 0 || connect_test_qp(r) != 0)
		goto out;
	print_peers(r);
	if ((o->verb == RCAPP_SEND ? run_send(r) : run_rdma(r)) == 0)
		ret = 0;
out:
	if (ret != 0)
		fprintf(stderr, "droce-rc: perftest %s: %s\n", r->verb, r->err);
	oob_close(&r->oob);
	rcapp_linger(app, 100);
	rcapp_print_stats(app);
	if (o->rdma_cm)
		cm_close(r);
	rcapp_qp_destroy(app);
	free(r);
	return ret;
}
