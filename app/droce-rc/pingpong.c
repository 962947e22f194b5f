/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * rdma-core's ibv_rc_pingpong (libibverbs/examples/rc_pingpong.c), either
 * side, as it is on the wire. The TCP exchange: the client sends
 * "LLLL:QQQQQQ:PPPPPP:" and 32 hex digits of its GID, NUL-terminated (52
 * bytes); the server connects its QP, answers likewise, and the client
 * writes "done" (5 bytes). Then both post receives, the client sends
 * first, and each side sends again once its last send and a receive have
 * completed, until both counted -n of each.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_random.h>

#include "droce_net.h"
#include "rc_app.h"

enum {
	PINGPONG_RECV_WRID = 1,
	PINGPONG_SEND_WRID = 2,
};

/* "0000:000000:000000:" + 32 GID digits + NUL, as the tool's sizeof. */
#define PP_MSG_LEN 52
#define PP_DONE "done"

/* Time for the peer's last resend to be answered once we are done. */
#define PP_LINGER_MS 500

struct pp_dest {
	uint32_t lid, qpn, psn;
	uint8_t gid[16];
};

struct pp_run {
	struct rcapp *app;
	const struct rcapp_opts *o;
	uint32_t rcnt, scnt;
	uint32_t routs;                 /* receives posted */
	int pending;                    /* wr_ids still to complete before the next send */
};

static void
pp_format(const struct pp_dest *d, char msg[PP_MSG_LEN])
{
	int n = snprintf(msg, PP_MSG_LEN, "%04x:%06x:%06x:", d->lid, d->qpn, d->psn);

	/* The GID's bytes in order, two digits each. */
	for (int i = 0; i < 16; i++)
		n += snprintf(msg + n, (size_t)(PP_MSG_LEN - n), "%02x", d->gid[i]);
}

/* @p digits hex digits at @p p. */
static int
hex_value(const char *p, unsigned int digits, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned int i = 0; i < digits; i++) {
		char c = p[i];
		int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

		if (x < 0)
			return -1;
		v = v << 4 | (uint32_t)x;
	}
	*out = v;
	return 0;
}

/* The tool's sprintf("%04x:%06x:%06x:%s") puts every field in its place. */
static int
pp_parse(const char msg[PP_MSG_LEN], struct pp_dest *d, char *err, size_t errlen)
{
	uint32_t byte;

	if (hex_value(msg, 4, &d->lid) != 0 || msg[4] != ':' ||
	    hex_value(msg + 5, 6, &d->qpn) != 0 || msg[11] != ':' ||
	    hex_value(msg + 12, 6, &d->psn) != 0 || msg[18] != ':' || msg[PP_MSG_LEN - 1] != '\0')
		goto bad;
	for (int i = 0; i < 16; i++) {
		if (hex_value(msg + 19 + 2 * i, 2, &byte) != 0)
			goto bad;
		d->gid[i] = (uint8_t)byte;
	}
	return 0;
bad:
	snprintf(err, errlen, "the peer's address \"%.*s\" is not ibv_rc_pingpong's LLLL:QQQQQQ:PPPPPP:<32 hex GID digits>",
		 PP_MSG_LEN - 1, msg);
	return -1;
}

static void
pp_print_dest(const char *label, const struct pp_dest *d)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, d->gid, gid, sizeof(gid));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", label, d->lid, d->qpn, d->psn,
	       gid);
}

/* ibv_rc_pingpong's pp_connect_ctx(): RTR then RTS with its attributes. */
static int
pp_connect(struct pp_run *r, const struct pp_dest *my, const struct pp_dest *rem, char *err,
	   size_t errlen)
{
	struct rcapp_conn c = {
		.dest_qpn = rem->qpn, .rq_psn = rem->psn, .sq_psn = my->psn, .mtu = r->o->mtu,
		.hop_limit = 1, .min_rnr_timer = 12, .max_dest_rd_atomic = 1, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1,
	};

	if (rcapp_gid_check(rem->gid, "ibv_rc_pingpong", err, errlen) != 0)
		return -1;
	memcpy(c.dgid, rem->gid, sizeof(c.dgid));
	return rcapp_qp_connect(r->app, &c, false, err, errlen);
}

static int
pp_exchange_server(struct pp_run *r, struct oob *o, const struct pp_dest *my,
		   struct pp_dest *rem, char *err, size_t errlen)
{
	char msg[PP_MSG_LEN];
	long n;

	if (oob_accept(o, r->o->tcp_port, err, errlen) != 0 ||
	    oob_read(o, msg, sizeof(msg), "the client's address", err, errlen) != 0 ||
	    pp_parse(msg, rem, err, errlen) != 0 || pp_connect(r, my, rem, err, errlen) != 0)
		return -1;
	pp_format(my, msg);
	if (oob_write(o, msg, sizeof(msg), "our address", err, errlen) != 0)
		return -1;
	n = oob_read_upto(o, msg, sizeof(PP_DONE), "\"done\"", err, errlen);
	if (n < 0)
		return -1;
	if (n != (long)sizeof(PP_DONE) || memcmp(msg, PP_DONE, sizeof(PP_DONE)) != 0) {
		snprintf(err, errlen, "the client ended the exchange with %ld bytes, not \"done\"", n);
		return -1;
	}
	return 0;
}

static int
pp_exchange_client(struct pp_run *r, struct oob *o, const struct pp_dest *my,
		   struct pp_dest *rem, char *err, size_t errlen)
{
	char msg[PP_MSG_LEN];

	pp_format(my, msg);
	if (oob_connect(o, r->o->connect_ip, r->o->tcp_port, err, errlen) != 0 ||
	    oob_write(o, msg, sizeof(msg), "our address", err, errlen) != 0 ||
	    oob_read(o, msg, sizeof(msg), "the server's address", err, errlen) != 0 ||
	    oob_write(o, PP_DONE, sizeof(PP_DONE), "\"done\"", err, errlen) != 0)
		return -1;
	oob_close(o);
	return pp_parse(msg, rem, err, errlen) != 0 ? -1 : pp_connect(r, my, rem, err, errlen);
}

/* ibv_rc_pingpong's parse_single_wc(). */
static int
pp_completion(struct pp_run *r, const struct droce_wc *wc)
{
	if (wc->status != DROCE_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
			droce_wc_status_str(wc->status), wc->status, (int)wc->wr_id);
		return -1;
	}
	switch ((int)wc->wr_id) {
	case PINGPONG_SEND_WRID:
		r->scnt++;
		break;
	case PINGPONG_RECV_WRID:
		if (--r->routs <= 1) {
			r->routs += rcapp_post_recvs(r->app, PINGPONG_RECV_WRID, r->o->size,
						     r->o->rx_depth - r->routs);
			if (r->routs < r->o->rx_depth) {
				fprintf(stderr, "Couldn't post receive (%u)\n", r->routs);
				return -1;
			}
		}
		r->rcnt++;
		break;
	default:
		fprintf(stderr, "Completion for unknown wr_id %d\n", (int)wc->wr_id);
		return -1;
	}
	r->pending &= ~(int)wc->wr_id;
	if (r->scnt < r->o->iters && r->pending == 0) {
		if (rcapp_post_send(r->app, PINGPONG_SEND_WRID, r->o->size) != 0) {
			fprintf(stderr, "Couldn't post send\n");
			return -1;
		}
		r->pending = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
	}
	return 0;
}

/* The ping-pong itself, with a bounded wait for each completion. */
static int
pp_loop(struct pp_run *r)
{
	uint64_t last = rcapp_now_ms();

	while (r->rcnt < r->o->iters || r->scnt < r->o->iters) {
		struct droce_wc wc[2];
		int ne;

		rcapp_poll(r->app);
		ne = droce_poll_cq(r->app->cq, 2, wc);
		for (int i = 0; i < ne; i++)
			if (pp_completion(r, &wc[i]) != 0)
				return -1;
		if (ne > 0) {
			last = rcapp_now_ms();
		} else if (rcapp_interrupted) {
			fprintf(stderr, "droce-rc: interrupted after %u sends and %u receives\n",
				r->scnt, r->rcnt);
			return -1;
		} else if (rcapp_now_ms() - last > r->o->timeout_s * 1000ull) {
			fprintf(stderr, "droce-rc: no completion for %u s (--timeout) after %u sends and %u receives of %u\n",
				r->o->timeout_s, r->scnt, r->rcnt, r->o->iters);
			return -1;
		}
	}
	return 0;
}

static void
pp_report(const struct rcapp_opts *o, uint64_t usec)
{
	long long bytes = (long long)o->size * o->iters * 2;
	double us = (double)usec;

	printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, us / 1000000.,
	       (double)bytes * 8. / us);
	printf("%u iters in %.2f seconds = %.2f usec/iter\n", o->iters, us / 1000000.,
	       us / o->iters);
}

int
rcapp_pingpong(struct rcapp *app, const struct rcapp_opts *o)
{
	struct pp_run r = { .app = app, .o = o };
	struct pp_dest my = { 0 }, rem = { 0 };
	char err[512] = "";
	struct oob oob;
	uint64_t t0, t1;
	int ret = 1;

	oob_init(&oob, o->timeout_s, rcapp_idle, app);
	if (rcapp_qp_create(app, o->size, DROCE_ACCESS_LOCAL_WRITE, 1, o->rx_depth, 1, 0, err,
			    sizeof(err)) != 0)
		goto out;
	r.routs = rcapp_post_recvs(app, PINGPONG_RECV_WRID, o->size, o->rx_depth);
	if (r.routs < o->rx_depth) {
		snprintf(err, sizeof(err), "Couldn't post receive (%u)", r.routs);
		goto out;
	}
	my.qpn = droce_qp_num(app->qp);
	my.psn = (uint32_t)rte_rand() & 0xffffff;
	droce_rc_query_gid(app->dev, my.gid);
	pp_print_dest("local address: ", &my);
	fflush(stdout);

	if ((o->server ? pp_exchange_server(&r, &oob, &my, &rem, err, sizeof(err))
		       : pp_exchange_client(&r, &oob, &my, &rem, err, sizeof(err))) != 0)
		goto out;
	oob_close(&oob);
	pp_print_dest("remote address:", &rem);
	fflush(stdout);

	r.pending = PINGPONG_RECV_WRID;
	if (!o->server) {
		if (rcapp_post_send(app, PINGPONG_SEND_WRID, o->size) != 0) {
			snprintf(err, sizeof(err), "Couldn't post send");
			goto out;
		}
		r.pending |= PINGPONG_SEND_WRID;
	}
	t0 = rcapp_now_us();
	if (pp_loop(&r) != 0)
		goto out;
	t1 = rcapp_now_us();
	pp_report(o, t1 - t0);
	ret = 0;
	/* Our last ACK may be lost: answer the peer's resend for a while. */
	rcapp_linger(app, PP_LINGER_MS);
out:
	oob_close(&oob);
	if (ret != 0 && err[0] != '\0')
		fprintf(stderr, "droce-rc: pingpong: %s\n", err);
	rcapp_print_stats(app);
	rcapp_qp_destroy(app);
	return ret;
}
