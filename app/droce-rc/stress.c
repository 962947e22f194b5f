/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Two droce-rc processes, one RC QP each, and a long run of random work:
 * SENDs, RDMA WRITEs with immediate and RDMA READs of random sizes, the
 * client's side of each in a random scatter/gather list. Both sides derive
 * every message from the run's seed and its index, so each checks what it
 * got byte for byte, that every completion came once, and in order.
 *
 * The client drives: it sends its QP, the run's seed, count and largest
 * size over TCP; the server answers with its QP and the place and key of
 * its memory. The server's memory holds receive buffers, the places the
 * WRITEs land (one per message index modulo their count, reused only once
 * the server has checked the last message there: see STRESS_WRITE_SLOTS)
 * and a region the READs take from, filled from the seed. The client ends
 * with "done" on the TCP connection once its last completion is checked.
 */

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <rte_random.h>

#include "droce_net.h"
#include "rc_app.h"

/* Work requests the client keeps in flight. */
#define STRESS_WINDOW 8
/* Receives the server keeps posted. */
#define STRESS_RECVS 8
/* Places for WRITEs, counted in the messages that take a receive (SENDs
 * and WRITEs; READs take none, so they prove nothing of the server's
 * progress): the k-th such message lands in slot k % STRESS_WRITE_SLOTS.
 * The client posts the (k + STRESS_WRITE_SLOTS)-th only with at most
 * STRESS_WINDOW - 1 others in flight, so the (k + STRESS_RECVS)-th has
 * completed; it took the receive the server posted after checking the
 * k-th: the server is done with slot k first. (A WRITE's first packets
 * land before its last one finds no receive, so receives alone do not
 * hold it back.)
 */
#define STRESS_WRITE_SLOTS (STRESS_WINDOW + STRESS_RECVS)
/* Scatter/gather entries of a client's work request, at most. */
#define STRESS_MAX_SGE 4
/* The message index the READ region's bytes come from. */
#define STRESS_READ_REGION UINT64_MAX
#define STRESS_DONE "done"
#define STRESS_LINGER_MS 500

enum stress_op {
	STRESS_SEND,
	STRESS_WRITE_IMM,
	STRESS_READ,
};

static const char *const stress_op_name[] = {
	[STRESS_SEND] = "SEND", [STRESS_WRITE_IMM] = "WRITE_WITH_IMM", [STRESS_READ] = "READ",
};

/* Message @p index of a run, as both sides derive it. */
struct stress_msg {
	enum stress_op op;
	uint32_t len;
	uint32_t read_off;              /* READ: where in the server's region */
	unsigned int nb_pieces;         /* the client's SGL */
	uint32_t piece[STRESS_MAX_SGE]; /* lengths, in message order */
	bool reversed;                  /* pieces lie in the slot last first */
};

/* What one side tells the other, big-endian on the wire. */
struct stress_dest {
	uint32_t qpn, psn, rkey, max_size, ops;
	uint64_t seed, vaddr;
	uint8_t gid[16];
};

#define STRESS_DEST_LEN (5 * 4 + 2 * 8 + 16)

struct stress_run {
	struct rcapp *app;
	const struct rcapp_opts *o;
	uint64_t seed;
	uint32_t max_size, ops;
	enum droce_mtu mtu;
	uint8_t *expect;                /* scratch: the bytes a message should have */
	uint8_t *got;                   /* scratch: a READ's pieces put in order */
	uint8_t *read_region;           /* client: the server's READ region, as expected */
	const struct oob *oob;          /* the TCP connection: the peer's end shows */
	uint64_t remote_vaddr;
	uint32_t remote_rkey;
	uint64_t counts[3], bytes;
	uint64_t recv_seq;              /* messages so far that take a receive: a WRITE's slot */
};

static uint64_t
mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The bytes of message @p index: xorshift64 from the seed and the index. */
static void
fill_pattern(uint8_t *dst, size_t len, uint64_t seed, uint64_t index)
{
	uint64_t s = mix64(seed ^ mix64(index)) | 1;
	size_t i = 0;

	for (; i < len; i += 8) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		memcpy(dst + i, &s, RTE_MIN((size_t)8, len - i));
	}
}

/* Sizes spread over every power of two up to the largest: as many tiny
 * messages as ones near a MiB.
 */
static void
msg_of(const struct stress_run *r, uint64_t index, struct stress_msg *m)
{
	uint64_t s = mix64(r->seed * 0x100000001b3ull + index);
	unsigned int bits = 0;
	uint32_t left;

	while ((1ull << bits) < r->max_size)
		bits++;
	s = mix64(s);
	m->op = (enum stress_op)(s % 3);
	s = mix64(s);
	bits = (unsigned int)(s % (bits + 1));
	s = mix64(s);
	m->len = (uint32_t)(s % ((1ull << bits) + 1));
	if (m->len > r->max_size)
		m->len = r->max_size;
	s = mix64(s);
	m->read_off = (uint32_t)(s % ((uint64_t)r->max_size - m->len + 1));
	s = mix64(s);
	m->nb_pieces = m->len == 0 ? 0 : (unsigned int)RTE_MIN(1 + s % STRESS_MAX_SGE, m->len);
	m->reversed = (s >> 32) & 1;
	left = m->len;
	for (unsigned int k = 0; k < m->nb_pieces; k++) {
		uint32_t rest = m->nb_pieces - 1 - k; /* each later piece keeps a byte */

		s = mix64(s);
		m->piece[k] = k + 1 == m->nb_pieces ? left
			      : 1 + (uint32_t)(s % (left - rest));
		left -= m->piece[k];
	}
}

/* Where piece @p k of @p m lies in its slot. */
static uint32_t
piece_offset(const struct stress_msg *m, unsigned int k)
{
	uint32_t before = 0;

	for (unsigned int i = 0; i < k; i++)
		before += m->piece[i];
	return m->reversed ? m->len - before - m->piece[k] : before;
}

static void
put32(uint8_t **p, uint32_t v)
{
	v = htonl(v);
	memcpy(*p, &v, 4);
	*p += 4;
}

static void
put64(uint8_t **p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p, (uint32_t)v);
}

static uint32_t
get32(const uint8_t **p)
{
	uint32_t v;

	memcpy(&v, *p, 4);
	*p += 4;
	return ntohl(v);
}

static uint64_t
get64(const uint8_t **p)
{
	uint64_t hi = get32(p);

	return hi << 32 | get32(p);
}

static void
dest_encode(const struct stress_dest *d, uint8_t out[STRESS_DEST_LEN])
{
	uint8_t *p = out;

	put32(&p, d->qpn);
	put32(&p, d->psn);
	put32(&p, d->rkey);
	put32(&p, d->max_size);
	put32(&p, d->ops);
	put64(&p, d->seed);
	put64(&p, d->vaddr);
	memcpy(p, d->gid, sizeof(d->gid));
}

static void
dest_decode(const uint8_t in[STRESS_DEST_LEN], struct stress_dest *d)
{
	const uint8_t *p = in;

	d->qpn = get32(&p);
	d->psn = get32(&p);
	d->rkey = get32(&p);
	d->max_size = get32(&p);
	d->ops = get32(&p);
	d->seed = get64(&p);
	d->vaddr = get64(&p);
	memcpy(d->gid, p, sizeof(d->gid));
}

static int
stress_connect(struct stress_run *r, const struct stress_dest *my, const struct stress_dest *rem,
	       char *err, size_t errlen)
{
	struct rcapp_conn c = {
		.dest_qpn = rem->qpn, .rq_psn = rem->psn, .sq_psn = my->psn, .mtu = r->mtu,
		.hop_limit = 1, .min_rnr_timer = 12, .max_dest_rd_atomic = STRESS_WINDOW,
		.timeout = 12, .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = STRESS_WINDOW,
	};

	if (rcapp_gid_check(rem->gid, "the peer", err, errlen) != 0)
		return -1;
	if (rem->qpn == 0 || rem->qpn > 0xffffff) {
		snprintf(err, errlen, "the peer's QPN 0x%x is not a QPN (1..0xffffff)", rem->qpn);
		return -1;
	}
	memcpy(c.dgid, rem->gid, sizeof(c.dgid));
	return rcapp_qp_connect(r->app, &c, false, err, errlen);
}

/* The peer closed the TCP connection: it ended, failed or was stopped. */
static bool
peer_gone(const struct stress_run *r)
{
	struct pollfd pfd = { .fd = r->oob->fd, .events = POLLIN };
	char c;

	return poll(&pfd, 1, 0) == 1 && recv(r->oob->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Wait for a completion; fails after --timeout with nothing, or when the
 * peer is gone.
 */
static int
next_completion(struct stress_run *r, struct droce_wc *wc, const char *what, uint64_t done,
		char *err, size_t errlen)
{
	uint64_t last = rcapp_now_ms();

	for (unsigned int spins = 1;; spins++) {
		rcapp_poll(r->app);
		if (droce_poll_cq(r->app->cq, 1, wc) == 1)
			break;
		if (spins % 4096 == 0 && peer_gone(r)) {
			snprintf(err, errlen, "the peer closed the connection while we waited for %s after %" PRIu64 " of %u messages (its output says why)",
				 what, done, r->ops);
			return -1;
		}
		if (rcapp_interrupted) {
			snprintf(err, errlen, "interrupted waiting for %s after %" PRIu64 " of %u messages",
				 what, done, r->ops);
			return -1;
		}
		if (rcapp_now_ms() - last > r->o->timeout_s * 1000ull) {
			snprintf(err, errlen, "no completion for %u s (--timeout) waiting for %s after %" PRIu64 " of %u messages",
				 r->o->timeout_s, what, done, r->ops);
			return -1;
		}
	}
	if (wc->status != DROCE_WC_SUCCESS) {
		snprintf(err, errlen, "%s: completion for wr_id %" PRIu64 " with status %s (%d)", what,
			 wc->wr_id, droce_wc_status_str(wc->status), wc->status);
		return -1;
	}
	return 0;
}

static int
mismatch(const uint8_t *got, const uint8_t *want, uint32_t len, const char *what,
	 uint64_t index, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < len; i++)
		if (got[i] != want[i]) {
			snprintf(err, errlen, "message %" PRIu64 " (%s, %u bytes): byte %u is 0x%02x, 0x%02x expected",
				 index, what, len, i, got[i], want[i]);
			return -1;
		}
	return 0;
}

/* ---- the client ------------------------------------------------------------------ */

static uint8_t *
client_slot(const struct stress_run *r, uint64_t index)
{
	return r->app->buf + (size_t)(index % STRESS_WINDOW) * r->max_size;
}

static int
client_post(struct stress_run *r, uint64_t index, char *err, size_t errlen)
{
	static const enum droce_wr_opcode opcode[] = {
		[STRESS_SEND] = DROCE_WR_SEND, [STRESS_WRITE_IMM] = DROCE_WR_RDMA_WRITE_WITH_IMM,
		[STRESS_READ] = DROCE_WR_RDMA_READ,
	};
	struct droce_sge sge[STRESS_MAX_SGE];
	struct droce_send_wr wr = { .wr_id = index, .sg_list = sge, .send_flags = DROCE_SEND_SIGNALED },
			     *bad;
	uint8_t *slot = client_slot(r, index);
	struct stress_msg m;
	uint32_t msg_off = 0;
	int ret;

	msg_of(r, index, &m);
	wr.opcode = opcode[m.op];
	wr.num_sge = (int)m.nb_pieces;
	if (m.op != STRESS_READ)
		fill_pattern(r->expect, m.len, r->seed, index);
	for (unsigned int k = 0; k < m.nb_pieces; k++) {
		uint32_t at = piece_offset(&m, k);

		sge[k] = (struct droce_sge){ .addr = (uintptr_t)(slot + at), .length = m.piece[k],
					     .lkey = r->app->mr->lkey };
		if (m.op != STRESS_READ)
			memcpy(slot + at, r->expect + msg_off, m.piece[k]);
		msg_off += m.piece[k];
	}
	if (m.op == STRESS_WRITE_IMM) {
		wr.imm_data = htonl((uint32_t)index);
		wr.wr.rdma.remote_addr = r->remote_vaddr +
			(uint64_t)(STRESS_RECVS + r->recv_seq % STRESS_WRITE_SLOTS) * r->max_size;
		wr.wr.rdma.rkey = r->remote_rkey;
	} else if (m.op == STRESS_READ) {
		wr.wr.rdma.remote_addr = r->remote_vaddr +
			(uint64_t)(STRESS_RECVS + STRESS_WRITE_SLOTS) * r->max_size + m.read_off;
		wr.wr.rdma.rkey = r->remote_rkey;
	}
	ret = droce_post_send(r->app->qp, &wr, &bad);
	if (ret != 0) {
		snprintf(err, errlen, "post_send of message %" PRIu64 " (%s, %u bytes, %u SGEs): %s",
			 index, stress_op_name[m.op], m.len, m.nb_pieces, strerror(-ret));
		return -1;
	}
	r->counts[m.op]++;
	r->bytes += m.len;
	r->recv_seq += m.op != STRESS_READ;
	return 0;
}

/* A completion of the client's: the next in order, of the right kind;
 * a READ's bytes as the server's region holds them.
 */
static int
client_complete(struct stress_run *r, const struct droce_wc *wc, uint64_t index, char *err,
		size_t errlen)
{
	static const enum droce_wc_opcode wc_opcode[] = {
		[STRESS_SEND] = DROCE_WC_SEND, [STRESS_WRITE_IMM] = DROCE_WC_RDMA_WRITE,
		[STRESS_READ] = DROCE_WC_RDMA_READ,
	};
	const uint8_t *slot = client_slot(r, index);
	struct stress_msg m;
	uint32_t msg_off = 0;

	if (wc->wr_id != index) {
		snprintf(err, errlen, "completion for message %" PRIu64 " where %" PRIu64 " was next (out of order or twice)",
			 wc->wr_id, index);
		return -1;
	}
	msg_of(r, index, &m);
	if (wc->opcode != wc_opcode[m.op]) {
		snprintf(err, errlen, "message %" PRIu64 " (%s) completed as opcode %d", index,
			 stress_op_name[m.op], wc->opcode);
		return -1;
	}
	if (m.op != STRESS_READ)
		return 0;
	if (wc->byte_len != m.len) {
		snprintf(err, errlen, "READ %" PRIu64 " completed with %u bytes, %u asked", index,
			 wc->byte_len, m.len);
		return -1;
	}
	for (unsigned int k = 0; k < m.nb_pieces; k++) {
		memcpy(r->got + msg_off, slot + piece_offset(&m, k), m.piece[k]);
		msg_off += m.piece[k];
	}
	return mismatch(r->got, r->read_region + m.read_off, m.len, "READ", index, err, errlen);
}

static int
client_loop(struct stress_run *r, char *err, size_t errlen)
{
	uint64_t posted = 0, completed = 0;

	while (completed < r->ops) {
		struct droce_wc wc;

		while (posted < r->ops && posted - completed < STRESS_WINDOW)
			if (client_post(r, posted++, err, errlen) != 0)
				return -1;
		if (next_completion(r, &wc, "the client's completions", completed, err, errlen) != 0 ||
		    client_complete(r, &wc, completed, err, errlen) != 0)
			return -1;
		completed++;
	}
	return 0;
}

/* ---- the server ------------------------------------------------------------------ */

static uint8_t *
server_recv_slot(const struct stress_run *r, unsigned int slot)
{
	return r->app->buf + (size_t)slot * r->max_size;
}

static int
server_post_recv(struct stress_run *r, unsigned int slot, char *err, size_t errlen)
{
	struct droce_sge sge = { .addr = (uintptr_t)server_recv_slot(r, slot),
				 .length = r->max_size, .lkey = r->app->mr->lkey };
	struct droce_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret = droce_post_recv(r->app->qp, &wr, &bad);

	if (ret != 0)
		snprintf(err, errlen, "post_recv: %s", strerror(-ret));
	return ret;
}

/* The message that took receive @p slot: index, kind, length, bytes. */
static int
server_check(struct stress_run *r, const struct droce_wc *wc, uint64_t index, unsigned int slot,
	     char *err, size_t errlen)
{
	struct stress_msg m;
	const uint8_t *at;

	msg_of(r, index, &m);
	if (wc->wr_id != slot) {
		snprintf(err, errlen, "receive %" PRIu64 " completed where receive %u was next", wc->wr_id,
			 slot);
		return -1;
	}
	if (m.op == STRESS_SEND ? wc->opcode != DROCE_WC_RECV
				: wc->opcode != DROCE_WC_RECV_RDMA_WITH_IMM ||
				  !(wc->wc_flags & DROCE_WC_WITH_IMM) ||
				  ntohl(wc->imm_data) != (uint32_t)index) {
		snprintf(err, errlen, "message %" PRIu64 " (%s) arrived as opcode %d, immediate 0x%x: out of order or twice",
			 index, stress_op_name[m.op], wc->opcode, ntohl(wc->imm_data));
		return -1;
	}
	if (wc->byte_len != m.len) {
		snprintf(err, errlen, "message %" PRIu64 " (%s) arrived with %u bytes, %u sent", index,
			 stress_op_name[m.op], wc->byte_len, m.len);
		return -1;
	}
	at = m.op == STRESS_SEND ? server_recv_slot(r, slot)
		: r->app->buf + (size_t)(STRESS_RECVS + r->recv_seq % STRESS_WRITE_SLOTS) * r->max_size;
	fill_pattern(r->expect, m.len, r->seed, index);
	if (mismatch(at, r->expect, m.len, stress_op_name[m.op], index, err, errlen) != 0)
		return -1;
	r->counts[m.op]++;
	r->bytes += m.len;
	return 0;
}

static int
server_loop(struct stress_run *r, char *err, size_t errlen)
{
	unsigned int slot = 0;

	for (uint64_t index = 0; index < r->ops; index++) {
		struct stress_msg m;
		struct droce_wc wc;

		msg_of(r, index, &m);
		if (m.op == STRESS_READ) {
			r->counts[STRESS_READ]++;
			continue;
		}
		if (next_completion(r, &wc, "the server's receives", index, err, errlen) != 0 ||
		    server_check(r, &wc, index, slot, err, errlen) != 0 ||
		    server_post_recv(r, slot, err, errlen) != 0)
			return -1;
		slot = (slot + 1) % STRESS_RECVS;
		r->recv_seq++;
	}
	return 0;
}

/* ---- the run ---------------------------------------------------------------------- */

static int
exchange(struct stress_run *r, struct oob *oob, struct stress_dest *my, struct stress_dest *rem,
	 char *err, size_t errlen)
{
	uint8_t msg[STRESS_DEST_LEN];

	if (r->o->server) {
		if (oob_accept(oob, r->o->tcp_port, err, errlen) != 0 ||
		    oob_read(oob, msg, sizeof(msg), "the client's QP and run", err, errlen) != 0)
			return -1;
		dest_decode(msg, rem);
		if (rem->ops == 0 || rem->max_size == 0 || rem->max_size > r->max_size) {
			snprintf(err, errlen, "the client asks for %u messages of up to %u bytes; allowed: 1 or more, of up to %u bytes (-s here)",
				 rem->ops, rem->max_size, r->max_size);
			return -1;
		}
		r->ops = rem->ops;
		r->seed = rem->seed;
		r->max_size = rem->max_size;
		dest_encode(my, msg);
		return oob_write(oob, msg, sizeof(msg), "our QP", err, errlen);
	}
	dest_encode(my, msg);
	if (oob_connect(oob, r->o->connect_ip, r->o->tcp_port, err, errlen) != 0 ||
	    oob_write(oob, msg, sizeof(msg), "our QP and run", err, errlen) != 0 ||
	    oob_read(oob, msg, sizeof(msg), "the server's QP", err, errlen) != 0)
		return -1;
	dest_decode(msg, rem);
	r->remote_vaddr = rem->vaddr;
	r->remote_rkey = rem->rkey;
	return 0;
}

static void
report(const struct stress_run *r, uint64_t usec)
{
	double s = (double)usec / 1e6;

	printf("stress: %u messages (%" PRIu64 " SEND, %" PRIu64 " WRITE_WITH_IMM, %" PRIu64
	       " READ), %" PRIu64 " bytes%s in %.2f s (%.1f MB/s): byte-exact, every completion once and in order\n",
	       r->ops, r->counts[STRESS_SEND], r->counts[STRESS_WRITE_IMM], r->counts[STRESS_READ],
	       r->bytes, r->o->server ? " of SENDs and WRITEs checked" : "", s,
	       (double)r->bytes / s / 1e6);
}

int
rcapp_stress(struct rcapp *app, const struct rcapp_opts *o)
{
	struct oob oob;
	struct stress_run r = { .app = app, .o = o, .oob = &oob, .seed = o->seed, .max_size = o->size,
				.ops = o->iters, .mtu = o->mtu != 0 ? o->mtu : rcapp_port_mtu(app) };
	struct stress_dest my = { 0 }, rem = { 0 };
	size_t slots = o->server ? STRESS_RECVS + STRESS_WRITE_SLOTS + 1 : STRESS_WINDOW;
	int access = DROCE_ACCESS_LOCAL_WRITE |
		     (o->server ? DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ : 0);
	char err[512] = "", owner[32];
	uint64_t t0;
	int ret = 1;

	oob_init(&oob, o->timeout_s, rcapp_idle, app);
	r.expect = malloc(o->size);
	r.got = malloc(o->size);
	if (r.expect == NULL || r.got == NULL) {
		snprintf(err, sizeof(err), "no memory for two %u-byte buffers", o->size);
		goto out;
	}
	if (rcapp_qp_create(app, slots * o->size, access, STRESS_WINDOW, STRESS_RECVS,
			    STRESS_MAX_SGE, access & ~DROCE_ACCESS_LOCAL_WRITE, err,
			    sizeof(err)) != 0)
		goto out;
	my = (struct stress_dest){
		.qpn = droce_qp_num(app->qp), .psn = (uint32_t)rte_rand() & 0xffffff,
		.rkey = app->mr->rkey, .max_size = o->size, .ops = o->iters, .seed = o->seed,
		.vaddr = (uintptr_t)app->buf,
	};
	droce_rc_query_gid(app->dev, my.gid);
	if (exchange(&r, &oob, &my, &rem, err, sizeof(err)) != 0 ||
	    stress_connect(&r, &my, &rem, err, sizeof(err)) != 0)
		goto out;
	if (droce_qp_owner(app->qp) < 0)
		snprintf(owner, sizeof(owner), "the control lcore");
	else
		snprintf(owner, sizeof(owner), "worker %d", droce_qp_owner(app->qp));
	printf("stress: %s QP 0x%06x (run by %s), peer QP 0x%06x; %u messages of 0..%u bytes, seed %" PRIu64 "\n",
	       o->server ? "server" : "client", my.qpn, owner, rem.qpn, r.ops, r.max_size,
	       r.seed);
	if (o->server) {
		fill_pattern(app->buf + (size_t)(STRESS_RECVS + STRESS_WRITE_SLOTS) * r.max_size,
			     r.max_size, r.seed, STRESS_READ_REGION);
		for (unsigned int s = 0; s < STRESS_RECVS; s++)
			if (server_post_recv(&r, s, err, sizeof(err)) != 0)
				goto out;
		/* The client starts when it has our answer: receives first. */
	} else {
		r.read_region = malloc(r.max_size);
		if (r.read_region == NULL) {
			snprintf(err, sizeof(err), "no memory for a %u-byte buffer", r.max_size);
			goto out;
		}
		fill_pattern(r.read_region, r.max_size, r.seed, STRESS_READ_REGION);
	}
	t0 = rcapp_now_us();
	if ((o->server ? server_loop(&r, err, sizeof(err)) : client_loop(&r, err, sizeof(err))) != 0)
		goto out;
	report(&r, rcapp_now_us() - t0);
	if (o->server) {
		/* READs may still be on their way: the client says when it is done. */
		char done[sizeof(STRESS_DONE)];

		if (oob_read(&oob, done, sizeof(done), "\"done\"", err, sizeof(err)) != 0)
			goto out;
	} else if (oob_write(&oob, STRESS_DONE, sizeof(STRESS_DONE), "\"done\"", err,
			     sizeof(err)) != 0) {
		goto out;
	}
	ret = 0;
	rcapp_linger(app, STRESS_LINGER_MS);
out:
	if (ret != 0 && err[0] != '\0')
		fprintf(stderr, "droce-rc: stress: %s\n", err);
	rcapp_print_stats(app);
	rcapp_qp_destroy(app);
	rcapp_part(app, &oob, o->server);
	free(r.expect);
	free(r.got);
	free(r.read_region);
	return ret;
}
