/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The CQ reactor of lib/rc: two stacks in one process, each on a ring
 * port, with this test as the wire between them (as in test_rc_transport),
 * so that the sockets' messages cross the whole stack as RoCEv2 while the
 * test steps both sides. A sends through a send socket, B takes the
 * messages through a receive socket; the reactor's keys, callbacks,
 * arming and error reports are checked against what was sent.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "droce_core.h"
#include "droce_net.h"
#include "droce_rc.h"
#include "rc_private.h"
#include "test_eal.h"
#include "rc_pair.h"

#define BUF_SIZE (1u << 20)
#define MAX_WR 16               /* each QP's send and receive queue */
#define SEND_BUFFERS 8          /* a buffered socket's pool */
#define RECV_BUFFERS MAX_WR     /* a receive socket's pool */
#define MSG_MAX 4096            /* both pools' buffer size */
#define ZC_SLOT 8192            /* a zero-copy message's place in A.buf */
#define ZC_PLACES (2 * MAX_WR)
#define MESSAGES 100            /* more than either pool holds */

static struct side A = { .name = "rrA", .address = "198.18.0.1" };
static struct side B = { .name = "rrB", .address = "198.18.0.2" };

/* ---- the wire and the two sides ------------------------------------------------ */

static void
pump(void)
{
	rc_pair_pump(&A, &B);
}

static uint64_t
deadline(double seconds)
{
	return rte_get_timer_cycles() + (uint64_t)(seconds * (double)rte_get_timer_hz());
}

static void
side_up(struct side *s)
{
	rc_pair_side_up(s);
	s->scq = droce_create_cq(s->dev, 256);
	s->rcq = droce_create_cq(s->dev, 256);
	s->buf = aligned_alloc(4096, BUF_SIZE);
	assert_non_null(s->buf);
	s->mr = droce_reg_mr(s->pd, s->buf, BUF_SIZE,
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	assert_non_null(s->mr);
}

static void
side_down(struct side *s)
{
	assert_int_equal(droce_dereg_mr(s->mr), 0);
	assert_int_equal(droce_destroy_cq(s->scq), 0);
	assert_int_equal(droce_destroy_cq(s->rcq), 0);
	rc_pair_side_down(s);
	free(s->buf);
}

static struct droce_qp *
qp_create(struct side *s, struct droce_cq *send_cq, struct droce_cq *recv_cq)
{
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC, .send_cq = send_cq, .recv_cq = recv_cq,
		.cap = { .max_send_wr = MAX_WR, .max_recv_wr = MAX_WR, .max_send_sge = 2,
			 .max_recv_sge = 1 },
	};
	struct droce_qp *qp = droce_create_qp(s->pd, &ia);

	assert_non_null(qp);
	return qp;
}

static void
qps_up(uint8_t rnr_retry)
{
	const struct rc_pair_params p = {
		.access = DROCE_ACCESS_REMOTE_WRITE, .mtu = DROCE_MTU_1024, .timeout = 8,
		.retry_cnt = 7, .rnr_retry = rnr_retry, .min_rnr_timer = 1,
		.max_rd_atomic = 1, .max_dest_rd_atomic = 1,
	};

	A.qp = qp_create(&A, A.scq, A.rcq);
	B.qp = qp_create(&B, B.scq, B.rcq);
	rc_pair_connect(&A, &B, 0x10, 0x20000, &p);
	rc_pair_connect(&B, &A, 0x20000, 0x10, &p);
}

static void
qp_to_init(struct droce_qp *qp)
{
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_INIT, .port_num = 1 };

	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX |
					 DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS), 0);
}

static void
qp_to_err(struct droce_qp *qp)
{
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_ERR };

	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE), 0);
}

static void
qps_down(void)
{
	struct droce_wc wc[64];

	assert_int_equal(droce_destroy_qp(A.qp), 0);
	assert_int_equal(droce_destroy_qp(B.qp), 0);
	for (int i = 0; i < 10; i++)
		pump();
	while (droce_poll_cq(A.scq, 64, wc) > 0 || droce_poll_cq(A.rcq, 64, wc) > 0 ||
	       droce_poll_cq(B.scq, 64, wc) > 0 || droce_poll_cq(B.rcq, 64, wc) > 0)
		;
}

/* ---- what the callbacks saw ------------------------------------------------------- */

#define MAX_ERRORS 64

struct seen {
	unsigned int messages;          /* on_data calls */
	unsigned int wrong;             /* ... whose bytes were not the message's */
	unsigned int first_wrong;
	const void *last_data;
	uint32_t last_len;
	struct droce_wc last_wc;
	unsigned int completed;         /* on_send_completed calls */
	uint64_t next_completed_key;
	unsigned int completed_out_of_order;
	unsigned int errors;            /* on_error calls */
	struct droce_wc error_wc[MAX_ERRORS];
	bool error_send[MAX_ERRORS];
};

static struct seen seen;

static uint32_t
msg_len(unsigned int i)
{
	return i == 1 ? MSG_MAX : (i * 997u) % (MSG_MAX + 1);
}

static void
fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* Message i of a run must arrive i-th, with its own length and bytes (a
 * WRITE with immediate brings none here, and counts without a check).
 */
static void
on_data(void *arg, const void *data, uint32_t len, const struct droce_wc *wc)
{
	static uint8_t expect[MSG_MAX];
	unsigned int i = seen.messages++;

	assert_ptr_equal(arg, &seen);
	seen.last_data = data;
	seen.last_len = len;
	seen.last_wc = *wc;
	if (wc->opcode != DROCE_WC_RECV)
		return;
	fill(expect, msg_len(i), i);
	if (len != msg_len(i) || (len != 0 && memcmp(data, expect, len) != 0)) {
		if (seen.wrong++ == 0)
			seen.first_wrong = i;
	}
}

static void
on_error(void *arg, const struct droce_wc *wc, bool send)
{
	assert_ptr_equal(arg, &seen);
	if (seen.errors < MAX_ERRORS) {
		seen.error_wc[seen.errors] = *wc;
		seen.error_send[seen.errors] = send;
	}
	seen.errors++;
}

static void
on_send_completed(void *arg, uint64_t key)
{
	assert_ptr_equal(arg, &seen);
	if (key != seen.next_completed_key)
		seen.completed_out_of_order++;
	seen.next_completed_key = key + 1;
	seen.completed++;
}

/* ---- helpers ------------------------------------------------------------------------ */

static struct droce_rc_send_socket *
send_socket(enum droce_rc_send_kind kind)
{
	struct droce_rc_send_socket_attr attr = {
		.kind = kind, .on_send_completed = on_send_completed, .arg = &seen,
	};
	struct droce_rc_send_socket *sock;

	if (kind == DROCE_RC_SEND_BUFFERED) {
		attr.nb_buffers = SEND_BUFFERS;
		attr.buffer_size = MSG_MAX;
	}
	sock = droce_rc_send_socket_create(A.reactor, A.qp, &attr);
	assert_non_null(sock);
	return sock;
}

static struct droce_rc_recv_socket *
recv_socket(void)
{
	struct droce_rc_recv_socket_attr attr = {
		.nb_buffers = RECV_BUFFERS, .buffer_size = MSG_MAX,
	};
	struct droce_rc_recv_socket *sock = droce_rc_recv_socket_create(B.reactor, B.qp, &attr);

	assert_non_null(sock);
	assert_int_equal(droce_rc_recv_socket_posted(sock), RECV_BUFFERS);
	return sock;
}

/* Send message @p i with key KEY0 + i, from a pool buffer or from its
 * place in A.buf in two SGEs.
 */
#define KEY0 1000u

static int
send_message(struct droce_rc_send_socket *sock, enum droce_rc_send_kind kind, unsigned int i)
{
	static uint8_t data[MSG_MAX];
	uint32_t len = msg_len(i);

	if (kind == DROCE_RC_SEND_BUFFERED) {
		fill(data, len, i);
		return droce_rc_send_socket_send(sock, data, len, KEY0 + i);
	} else {
		uint8_t *src = A.buf + (size_t)(i % ZC_PLACES) * ZC_SLOT;
		struct droce_sge sge[2] = {
			{ (uintptr_t)src, len / 3, A.mr->lkey },
			{ (uintptr_t)src + len / 3, len - len / 3, A.mr->lkey },
		};

		/* At most MAX_WR are in flight, the newest ones: the place's
		 * last message, ZC_PLACES back, has completed, even when this
		 * send is refused.
		 */
		fill(src, len, i);
		return droce_rc_send_socket_send_zc(sock, sge, 2, KEY0 + i);
	}
}

static void
fd_clear(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

static bool
fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void
reactor_stats(struct side *s, struct droce_cq_reactor_stats *st)
{
	droce_cq_reactor_query_stats(s->reactor, st);
}

/* ---- the tests ---------------------------------------------------------------------- */

/* MESSAGES through a send socket of @p kind into a receive socket: more
 * than the send pool (or queue) and the receive pool hold, so buffers must
 * come back and be posted again. Every key comes back once, in order;
 * every message reaches on_data once, in order, byte for byte.
 */
static void
run_messages(enum droce_rc_send_kind kind)
{
	struct droce_cq_reactor_stats sa0, sb0, sa, sb;
	struct droce_rc_send_socket *ss;
	struct droce_rc_recv_socket *rs;
	unsigned int sent = 0, keys_back = 0, refused = 0;
	uint32_t pool;
	uint64_t until = deadline(20);

	memset(&seen, 0, sizeof(seen));
	seen.next_completed_key = KEY0;
	qps_up(7);
	ss = send_socket(kind);
	rs = recv_socket();
	pool = droce_rc_send_socket_available(ss);
	assert_int_equal(pool, kind == DROCE_RC_SEND_BUFFERED ? SEND_BUFFERS : MAX_WR);
	reactor_stats(&A, &sa0);
	reactor_stats(&B, &sb0);
	while ((keys_back < MESSAGES || seen.messages < MESSAGES) &&
	       rte_get_timer_cycles() < until) {
		uint64_t keys[DROCE_CQ_REACTOR_MAX_EVENTS];
		int n, ret;

		while (sent < MESSAGES) {
			ret = send_message(ss, kind, sent);
			if (ret == -EAGAIN) {
				/* Only an empty pool says so. */
				assert_int_equal(droce_rc_send_socket_available(ss), 0);
				refused++;
				break;
			}
			assert_int_equal(ret, 0);
			sent++;
		}
		pump();
		assert_true(droce_cq_reactor_on_recv_cq_event(B.reactor, rs) >= 0);
		n = droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, (int)RTE_DIM(keys));
		assert_true(n >= 0);
		for (int k = 0; k < n; k++) {
			if (keys[k] != KEY0 + keys_back)
				fail_msg("key %lu came back when %u was next",
					 (unsigned long)keys[k], KEY0 + keys_back);
			keys_back++;
		}
	}
	if (seen.wrong != 0)
		fail_msg("%u messages differ, the first is %u", seen.wrong, seen.first_wrong);
	assert_int_equal(keys_back, MESSAGES);
	assert_int_equal(seen.messages, MESSAGES);
	assert_int_equal(seen.completed, MESSAGES);
	assert_int_equal(seen.completed_out_of_order, 0);
	assert_int_equal(seen.errors, 0);
	assert_true(refused > 0);
	/* Every buffer back in the pool, every receive buffer posted again. */
	assert_int_equal(droce_rc_send_socket_available(ss), pool);
	assert_int_equal(droce_rc_recv_socket_posted(rs), RECV_BUFFERS);
	reactor_stats(&A, &sa);
	reactor_stats(&B, &sb);
	assert_int_equal(sa.sends_completed - sa0.sends_completed, MESSAGES);
	assert_int_equal(sa.send_errors - sa0.send_errors, 0);
	assert_int_equal(sb.messages - sb0.messages, MESSAGES);
	assert_int_equal(sb.recv_errors - sb0.recv_errors, 0);
	assert_int_equal(sb.repost_failures - sb0.repost_failures, 0);
	assert_true(sa.arms > sa0.arms && sb.arms > sb0.arms);

	/* Nothing in flight: the sockets go with their QPs in RTS. */
	assert_int_equal(droce_rc_send_socket_destroy(ss), 0);
	qp_to_err(B.qp);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), 0);
	qps_down();
}

static void
test_buffered_messages(void **state)
{
	(void)state;
	run_messages(DROCE_RC_SEND_BUFFERED);
}

static void
test_zero_copy_messages(void **state)
{
	(void)state;
	run_messages(DROCE_RC_SEND_ZERO_COPY);
}

/* A zero-copy socket refuses a send with EAGAIN while its QP's send queue
 * is full of sends in flight, and takes one again when a completion came.
 */
static void
test_zero_copy_queue_full(void **state)
{
	struct droce_rc_send_socket *ss;
	uint64_t keys[4];

	(void)state;
	memset(&seen, 0, sizeof(seen));
	seen.next_completed_key = KEY0;
	qps_up(7);
	ss = send_socket(DROCE_RC_SEND_ZERO_COPY);
	/* No receive socket on B: the sends wait on RNR NAKs. */
	for (unsigned int i = 0; i < MAX_WR; i++)
		assert_int_equal(send_message(ss, DROCE_RC_SEND_ZERO_COPY, i), 0);
	assert_int_equal(droce_rc_send_socket_available(ss), 0);
	assert_int_equal(send_message(ss, DROCE_RC_SEND_ZERO_COPY, MAX_WR), -EAGAIN);
	/* ERR flushes them all at once; a batch of 4 is reported, its slots
	 * free again and one taken by a new send (flushed too).
	 */
	qp_to_err(A.qp);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, 4), 0);
	assert_int_equal(seen.errors, 4);
	assert_int_equal(droce_rc_send_socket_available(ss), 4);
	assert_int_equal(send_message(ss, DROCE_RC_SEND_ZERO_COPY, MAX_WR), 0);
	assert_int_equal(droce_rc_send_socket_available(ss), 3);
	/* The other 13 are taken by destroy, without callbacks. */
	assert_int_equal(droce_rc_send_socket_destroy(ss), 0);
	assert_int_equal(seen.errors, 4);
	qp_to_err(B.qp);
	qps_down();
}

struct waiter {
	int fd[2];
	short revents[2];
	atomic_bool done;
};

/* Sleep in poll(2) on both eventfds until each has woken it (5 s at most). */
static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct pollfd p[2] = { { .fd = w->fd[0], .events = POLLIN },
			       { .fd = w->fd[1], .events = POLLIN } };
	int left = 2;

	while (left > 0 && poll(p, 2, 5000) > 0)
		for (int i = 0; i < 2; i++)
			if (p[i].revents & POLLIN) {
				w->revents[i] = p[i].revents;
				p[i].fd = -1;       /* seen: poll no more */
				left--;
			}
	atomic_store(&w->done, true);
	return NULL;
}

/* An empty CQ is armed: its eventfd stays quiet until a completion comes,
 * then wakes a thread asleep in poll(2) on it.
 */
static void
test_empty_cq_arms_eventfd(void **state)
{
	struct droce_cq_reactor_stats sa0, sb0, sa, sb;
	struct droce_rc_send_socket *ss;
	struct droce_rc_recv_socket *rs;
	struct waiter w = { 0 };
	pthread_t thread;
	uint64_t keys[4];
	uint64_t until = deadline(10);

	(void)state;
	memset(&seen, 0, sizeof(seen));
	seen.next_completed_key = KEY0;
	qps_up(7);
	ss = send_socket(DROCE_RC_SEND_BUFFERED);
	rs = recv_socket();
	w.fd[0] = droce_rc_send_socket_event_fd(ss);
	w.fd[1] = droce_rc_recv_socket_event_fd(rs);
	assert_int_equal(w.fd[0], droce_cq_event_fd(A.scq));
	assert_int_equal(w.fd[1], droce_cq_event_fd(B.rcq));
	fd_clear(w.fd[0]);
	fd_clear(w.fd[1]);
	reactor_stats(&A, &sa0);
	reactor_stats(&B, &sb0);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, 4), 0);
	assert_int_equal(droce_cq_reactor_on_recv_cq_event(B.reactor, rs), 0);
	reactor_stats(&A, &sa);
	reactor_stats(&B, &sb);
	assert_int_equal(sa.arms - sa0.arms, 1);
	assert_int_equal(sb.arms - sb0.arms, 1);
	assert_false(fd_readable(w.fd[0]));
	assert_false(fd_readable(w.fd[1]));

	assert_int_equal(pthread_create(&thread, NULL, waiter_main, &w), 0);
	usleep(20000);  /* let it fall asleep: the wake must come from the CQ */
	assert_false(atomic_load(&w.done));
	assert_int_equal(send_message(ss, DROCE_RC_SEND_BUFFERED, 0), 0);
	while (!atomic_load(&w.done) && rte_get_timer_cycles() < until)
		pump();
	assert_int_equal(pthread_join(thread, NULL), 0);
	assert_true(w.revents[0] & POLLIN);
	assert_true(w.revents[1] & POLLIN);

	/* The woken caller finds the completions. */
	fd_clear(w.fd[0]);
	fd_clear(w.fd[1]);
	assert_int_equal(droce_cq_reactor_on_recv_cq_event(B.reactor, rs), 1);
	assert_int_equal(seen.messages, 1);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, 4), 1);
	assert_int_equal(keys[0], KEY0);
	/* Both drained and armed again: quiet. */
	assert_false(fd_readable(w.fd[0]));
	assert_false(fd_readable(w.fd[1]));

	assert_int_equal(droce_rc_send_socket_destroy(ss), 0);
	qp_to_err(B.qp);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), 0);
	qps_down();
}

/* A call that fills its batch may leave completions that armed nothing:
 * it makes the eventfd readable itself, so that a sleeper comes back, and
 * the call that drains the CQ leaves it armed and quiet.
 */
static void
test_full_batch_wakes_again(void **state)
{
	struct droce_cq_reactor_stats st0, st;
	struct droce_rc_send_socket *ss;
	struct droce_rc_recv_socket *rs;
	uint64_t keys[4];
	uint64_t until = deadline(10);
	int fd;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	seen.next_completed_key = KEY0;
	qps_up(7);
	ss = send_socket(DROCE_RC_SEND_BUFFERED);
	rs = recv_socket();
	fd = droce_rc_send_socket_event_fd(ss);
	for (unsigned int i = 0; i < SEND_BUFFERS; i++)
		assert_int_equal(send_message(ss, DROCE_RC_SEND_BUFFERED, i), 0);
	while (rte_ring_count(A.scq->entries) < SEND_BUFFERS && rte_get_timer_cycles() < until) {
		pump();
		droce_cq_reactor_on_recv_cq_event(B.reactor, rs);
	}
	assert_int_equal(rte_ring_count(A.scq->entries), SEND_BUFFERS);
	assert_int_equal(seen.messages, SEND_BUFFERS);
	reactor_stats(&A, &st0);
	for (unsigned int round = 0; round < SEND_BUFFERS / 4; round++) {
		fd_clear(fd);
		assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, 4), 4);
		for (unsigned int k = 0; k < 4; k++)
			assert_int_equal(keys[k], KEY0 + round * 4 + k);
		assert_true(fd_readable(fd));
	}
	reactor_stats(&A, &st);
	assert_int_equal(st.self_wakes - st0.self_wakes, SEND_BUFFERS / 4);
	fd_clear(fd);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, 4), 0);
	assert_false(fd_readable(fd));
	assert_int_equal(droce_rc_send_socket_available(ss), SEND_BUFFERS);

	assert_int_equal(droce_rc_send_socket_destroy(ss), 0);
	qp_to_err(B.qp);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), 0);
	qps_down();
}

/* rnr_retry 0 and no receive on B: the first send fails with RNR retry
 * exceeded, the second is flushed, and a send on the QP in ERR is flushed
 * at once. Each is logged and reported to on_error with its key, gives
 * no key back, and returns its buffer; both socket kinds alike.
 */
static void
run_send_errors(enum droce_rc_send_kind kind)
{
	struct droce_cq_reactor_stats st0, st;
	struct droce_rc_send_socket *ss;
	uint64_t keys[8];
	uint64_t until = deadline(10);
	uint32_t pool;

	memset(&seen, 0, sizeof(seen));
	qps_up(0);
	ss = send_socket(kind);
	pool = droce_rc_send_socket_available(ss);
	reactor_stats(&A, &st0);
	assert_int_equal(send_message(ss, kind, 0), 0);
	assert_int_equal(send_message(ss, kind, 1), 0);
	while (seen.errors < 2 && rte_get_timer_cycles() < until) {
		pump();
		assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, 8), 0);
	}
	assert_int_equal(seen.errors, 2);
	assert_true(seen.error_send[0] && seen.error_send[1]);
	assert_int_equal(seen.error_wc[0].wr_id, KEY0);
	assert_int_equal(seen.error_wc[0].status, DROCE_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(seen.error_wc[1].wr_id, KEY0 + 1);
	assert_int_equal(seen.error_wc[1].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(droce_qp_state(A.qp), DROCE_QPS_ERR);
	assert_int_equal(droce_rc_send_socket_available(ss), pool);

	assert_int_equal(send_message(ss, kind, 2), 0);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, 8), 0);
	assert_int_equal(seen.errors, 3);
	assert_int_equal(seen.error_wc[2].wr_id, KEY0 + 2);
	assert_int_equal(seen.error_wc[2].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(seen.completed, 0);
	reactor_stats(&A, &st);
	assert_int_equal(st.send_errors - st0.send_errors, 3);
	assert_int_equal(st.sends_completed - st0.sends_completed, 0);
	assert_int_equal(droce_rc_send_socket_available(ss), pool);
	assert_int_equal(droce_rc_send_socket_destroy(ss), 0);
	qp_to_err(B.qp);
	qps_down();
}

static void
test_buffered_send_errors(void **state)
{
	(void)state;
	run_send_errors(DROCE_RC_SEND_BUFFERED);
}

static void
test_zero_copy_send_errors(void **state)
{
	(void)state;
	run_send_errors(DROCE_RC_SEND_ZERO_COPY);
}

/* B's QP to ERR: its posted receives flush. Each is reported (buffer
 * index as wr_id, once), none reaches on_data, none is posted again.
 */
static void
test_receives_flushed(void **state)
{
	struct droce_cq_reactor_stats st0, st;
	struct droce_rc_recv_socket *rs;
	bool buffer_seen[RECV_BUFFERS] = { false };

	(void)state;
	memset(&seen, 0, sizeof(seen));
	qps_up(7);
	rs = recv_socket();
	reactor_stats(&B, &st0);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), -EBUSY);  /* RTS, posted */
	qp_to_err(B.qp);
	assert_int_equal(droce_cq_reactor_on_recv_cq_event(B.reactor, rs), 0);
	assert_int_equal(seen.errors, RECV_BUFFERS);
	for (unsigned int i = 0; i < RECV_BUFFERS; i++) {
		const struct droce_wc *wc = &seen.error_wc[i];

		assert_false(seen.error_send[i]);
		assert_int_equal(wc->status, DROCE_WC_WR_FLUSH_ERR);
		assert_int_equal(wc->qp_num, droce_qp_num(B.qp));
		assert_true(wc->wr_id < RECV_BUFFERS);
		assert_false(buffer_seen[wc->wr_id]);
		buffer_seen[wc->wr_id] = true;
	}
	assert_int_equal(seen.messages, 0);
	assert_int_equal(droce_rc_recv_socket_posted(rs), 0);
	/* Not posted again: nothing more comes. */
	assert_int_equal(droce_cq_reactor_on_recv_cq_event(B.reactor, rs), 0);
	assert_int_equal(seen.errors, RECV_BUFFERS);
	reactor_stats(&B, &st);
	assert_int_equal(st.recv_errors - st0.recv_errors, RECV_BUFFERS);
	assert_int_equal(st.repost_failures - st0.repost_failures, 0);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), 0);
	qp_to_err(A.qp);
	qps_down();
}

/* Sockets with work in flight refuse to go while their QP is in RTS; in
 * ERR they take the flushed completions themselves. A reactor with
 * sockets refuses to go.
 */
static void
test_destroy_in_flight(void **state)
{
	struct droce_rc_send_socket *ss;
	struct droce_rc_recv_socket *rs;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	qps_up(7);
	ss = send_socket(DROCE_RC_SEND_BUFFERED);
	rs = recv_socket();
	/* One round: B takes the messages, its ACK is not back at A yet. */
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(send_message(ss, DROCE_RC_SEND_BUFFERED, i), 0);
	pump();
	assert_int_equal(droce_rc_send_socket_destroy(ss), -EBUSY);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), -EBUSY);
	assert_int_equal(droce_cq_reactor_destroy(A.reactor), -EBUSY);
	qp_to_err(A.qp);
	qp_to_err(B.qp);
	assert_int_equal(droce_rc_send_socket_destroy(ss), 0);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), 0);
	assert_int_equal(seen.errors, 0);  /* taken without callbacks */
	qps_down();
}

/* SEND with immediate and WRITE with immediate, posted on A's QP by hand:
 * on_data gets the immediate, and for the WRITE no bytes (they went where
 * A wrote them). A's send socket finds completions it did not post: each
 * is reported, not dropped.
 */
static void
test_immediate_and_foreign(void **state)
{
	struct droce_rc_send_socket *ss;
	struct droce_rc_recv_socket *rs;
	struct droce_sge sge = { 0, 0, 0 };
	struct droce_send_wr wr, *bad;
	uint64_t keys[8];
	uint64_t until = deadline(10);

	(void)state;
	memset(&seen, 0, sizeof(seen));
	qps_up(7);
	ss = send_socket(DROCE_RC_SEND_BUFFERED);
	rs = recv_socket();
	/* Message 0 has no bytes; with immediate 0x1234. (An empty list, not
	 * NULL: post.c would pass NULL to memcpy, which UBSan reports.)
	 */
	wr = (struct droce_send_wr){ .wr_id = 777, .sg_list = &sge, .num_sge = 0,
				     .opcode = DROCE_WR_SEND_WITH_IMM,
				     .send_flags = DROCE_SEND_SIGNALED, .imm_data = htonl(0x1234) };
	assert_int_equal(droce_post_send(A.qp, &wr, &bad), 0);
	while (seen.messages < 1 && rte_get_timer_cycles() < until) {
		pump();
		droce_cq_reactor_on_recv_cq_event(B.reactor, rs);
	}
	assert_int_equal(seen.messages, 1);
	assert_int_equal(seen.wrong, 0);
	assert_true(seen.last_wc.wc_flags & DROCE_WC_WITH_IMM);
	assert_int_equal(ntohl(seen.last_wc.imm_data), 0x1234);
	assert_int_equal(seen.last_wc.opcode, DROCE_WC_RECV);
	assert_int_equal(seen.last_wc.src_qp, droce_qp_num(A.qp));

	fill(A.buf, 3000, 9);
	sge = (struct droce_sge){ (uintptr_t)A.buf, 3000, A.mr->lkey };
	wr = (struct droce_send_wr){ .wr_id = 778, .sg_list = &sge, .num_sge = 1,
				     .opcode = DROCE_WR_RDMA_WRITE_WITH_IMM,
				     .send_flags = DROCE_SEND_SIGNALED, .imm_data = htonl(0x5678) };
	wr.wr.rdma.remote_addr = (uintptr_t)B.buf + 8192;
	wr.wr.rdma.rkey = B.mr->rkey;
	assert_int_equal(droce_post_send(A.qp, &wr, &bad), 0);
	while (seen.messages < 2 && rte_get_timer_cycles() < until) {
		pump();
		droce_cq_reactor_on_recv_cq_event(B.reactor, rs);
	}
	assert_int_equal(seen.messages, 2);
	assert_int_equal(seen.wrong, 0);
	assert_null(seen.last_data);
	assert_int_equal(seen.last_len, 0);
	assert_int_equal(seen.last_wc.opcode, DROCE_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(seen.last_wc.byte_len, 3000);
	assert_int_equal(ntohl(seen.last_wc.imm_data), 0x5678);
	assert_memory_equal(B.buf + 8192, A.buf, 3000);
	assert_int_equal(droce_rc_recv_socket_posted(rs), RECV_BUFFERS);

	/* A's send CQ holds the two completions the socket never posted. */
	while (seen.errors < 2 && rte_get_timer_cycles() < until) {
		pump();
		assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, ss, keys, 8), 0);
	}
	assert_int_equal(seen.errors, 2);
	assert_int_equal(seen.error_wc[0].wr_id, 777);
	assert_int_equal(seen.error_wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(seen.error_wc[1].wr_id, 778);
	assert_true(seen.error_send[0] && seen.error_send[1]);
	assert_int_equal(droce_rc_send_socket_available(ss), SEND_BUFFERS);

	assert_int_equal(droce_rc_send_socket_destroy(ss), 0);
	qp_to_err(B.qp);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), 0);
	qps_down();
}

/* Bad input: an errno (and a log line) each time, and nothing changed. */
static void
test_bad_input(void **state)
{
	struct droce_rc_send_socket_attr sa = {
		.kind = DROCE_RC_SEND_BUFFERED, .nb_buffers = 4, .buffer_size = 64,
	};
	struct droce_rc_recv_socket_attr ra = { .nb_buffers = 4, .buffer_size = 64 };
	struct droce_rc_send_socket *buffered, *zc;
	struct droce_rc_recv_socket *rs;
	struct droce_qp *one_cq, *reset, *small;
	struct droce_cq *small_cq;
	struct droce_sge sge[3];
	uint64_t keys[4];
	uint8_t data[128] = { 0 };

	(void)state;
	memset(&seen, 0, sizeof(seen));
	qps_up(7);

	/* The reactor. */
	rte_errno = 0;
	assert_null(droce_cq_reactor_create(NULL, on_data, &seen));
	assert_int_equal(rte_errno, EINVAL);
	rte_errno = 0;
	assert_null(droce_cq_reactor_create(A.dev, NULL, &seen));
	assert_int_equal(rte_errno, EINVAL);
	assert_int_equal(droce_cq_reactor_set_on_error(NULL, on_error, &seen), -EINVAL);
	assert_int_equal(droce_cq_reactor_destroy(NULL), 0);

	/* Making sockets. */
#define REFUSED(call) do { rte_errno = 0; assert_null(call); \
		assert_int_equal(rte_errno, EINVAL); } while (0)
	REFUSED(droce_rc_send_socket_create(NULL, A.qp, &sa));
	REFUSED(droce_rc_send_socket_create(A.reactor, NULL, &sa));
	REFUSED(droce_rc_send_socket_create(A.reactor, A.qp, NULL));
	REFUSED(droce_rc_send_socket_create(A.reactor, B.qp, &sa));  /* another device */
	sa.kind = 7;
	REFUSED(droce_rc_send_socket_create(A.reactor, A.qp, &sa));
	sa.kind = DROCE_RC_SEND_BUFFERED;
	sa.nb_buffers = 0;
	REFUSED(droce_rc_send_socket_create(A.reactor, A.qp, &sa));
	sa.nb_buffers = MAX_WR + 1;
	REFUSED(droce_rc_send_socket_create(A.reactor, A.qp, &sa));
	sa.nb_buffers = 4;
	sa.buffer_size = 0;
	REFUSED(droce_rc_send_socket_create(A.reactor, A.qp, &sa));
	sa.buffer_size = 64;
	sa.kind = DROCE_RC_SEND_ZERO_COPY;
	REFUSED(droce_rc_send_socket_create(A.reactor, A.qp, &sa));  /* a pool for zero copy */
	one_cq = qp_create(&A, A.scq, A.scq);
	sa.kind = DROCE_RC_SEND_BUFFERED;
	REFUSED(droce_rc_send_socket_create(A.reactor, one_cq, &sa));
	REFUSED(droce_rc_recv_socket_create(A.reactor, one_cq, &ra));
	assert_int_equal(droce_destroy_qp(one_cq), 0);
	small_cq = droce_create_cq(A.dev, MAX_WR - 1);
	assert_non_null(small_cq);
	small = qp_create(&A, small_cq, A.rcq);
	sa.nb_buffers = MAX_WR;
	REFUSED(droce_rc_send_socket_create(A.reactor, small, &sa));  /* CQ too small */
	sa.nb_buffers = 4;
	assert_int_equal(droce_destroy_qp(small), 0);
	small = qp_create(&A, A.scq, small_cq);
	qp_to_init(small);
	ra.nb_buffers = MAX_WR;
	REFUSED(droce_rc_recv_socket_create(A.reactor, small, &ra));
	ra.nb_buffers = 4;
	assert_int_equal(droce_destroy_qp(small), 0);
	assert_int_equal(droce_destroy_cq(small_cq), 0);
	reset = qp_create(&B, B.scq, B.rcq);
	REFUSED(droce_rc_recv_socket_create(B.reactor, reset, &ra));  /* RESET */
	assert_int_equal(droce_destroy_qp(reset), 0);
	REFUSED(droce_rc_recv_socket_create(NULL, B.qp, &ra));
	REFUSED(droce_rc_recv_socket_create(B.reactor, NULL, &ra));
	REFUSED(droce_rc_recv_socket_create(B.reactor, B.qp, NULL));
	ra.nb_buffers = MAX_WR + 1;
	REFUSED(droce_rc_recv_socket_create(B.reactor, B.qp, &ra));
	ra.nb_buffers = 4;
	ra.buffer_size = 0;
	REFUSED(droce_rc_recv_socket_create(B.reactor, B.qp, &ra));
	ra.buffer_size = 64;
#undef REFUSED

	/* Sending. */
	buffered = droce_rc_send_socket_create(A.reactor, A.qp, &sa);
	assert_non_null(buffered);
	sa = (struct droce_rc_send_socket_attr){ .kind = DROCE_RC_SEND_ZERO_COPY };
	zc = droce_rc_send_socket_create(A.reactor, A.qp, &sa);
	assert_non_null(zc);
	assert_int_equal(droce_rc_send_socket_send(NULL, data, 1, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_send(zc, data, 1, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_send(buffered, NULL, 1, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_send(buffered, data, 65, 1), -EMSGSIZE);
	sge[0] = (struct droce_sge){ (uintptr_t)A.buf, 16, A.mr->lkey };
	sge[1] = sge[2] = sge[0];
	assert_int_equal(droce_rc_send_socket_send_zc(NULL, sge, 1, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_send_zc(buffered, sge, 1, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_send_zc(zc, sge, -1, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_send_zc(zc, NULL, 1, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_send_zc(zc, sge, 3, 1), -EINVAL); /* max_send_sge 2 */
	/* Memory outside every region: droce_post_send refuses, the slot is kept. */
	sge[0].addr = (uintptr_t)data;
	assert_int_equal(droce_rc_send_socket_send_zc(zc, sge, 1, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_available(zc), MAX_WR);
	assert_int_equal(droce_rc_send_socket_available(buffered), 4);

	/* Handling events. */
	assert_int_equal(droce_cq_reactor_on_send_cq_event(NULL, zc, keys, 4), -EINVAL);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, NULL, keys, 4), -EINVAL);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, zc, NULL, 4), -EINVAL);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(A.reactor, zc, keys, 0), -EINVAL);
	assert_int_equal(droce_cq_reactor_on_send_cq_event(B.reactor, zc, keys, 4), -EINVAL);
	rs = droce_rc_recv_socket_create(B.reactor, B.qp, &ra);
	assert_non_null(rs);
	assert_int_equal(droce_cq_reactor_on_recv_cq_event(NULL, rs), -EINVAL);
	assert_int_equal(droce_cq_reactor_on_recv_cq_event(B.reactor, NULL), -EINVAL);
	assert_int_equal(droce_cq_reactor_on_recv_cq_event(A.reactor, rs), -EINVAL);
	/* Room for 4 receives is gone from B's queue: the next socket may
	 * post at most MAX_WR - 4.
	 */
	ra.nb_buffers = MAX_WR - 3;
	rte_errno = 0;
	assert_null(droce_rc_recv_socket_create(B.reactor, B.qp, &ra));
	assert_int_equal(rte_errno, EINVAL);

	/* A send on a QP that cannot send (INIT): refused, the buffer kept. */
	qp_to_err(A.qp);
	assert_int_equal(droce_modify_qp(A.qp, &(struct droce_qp_attr){
						 .qp_state = DROCE_QPS_RESET }, DROCE_QP_STATE), 0);
	qp_to_init(A.qp);
	assert_int_equal(droce_rc_send_socket_send(buffered, data, 8, 1), -EINVAL);
	assert_int_equal(droce_rc_send_socket_available(buffered), 4);
	assert_int_equal(seen.errors, 0);

	assert_int_equal(droce_rc_send_socket_destroy(buffered), 0);
	assert_int_equal(droce_rc_send_socket_destroy(zc), 0);
	assert_int_equal(droce_rc_send_socket_destroy(NULL), 0);
	qp_to_err(B.qp);
	assert_int_equal(droce_rc_recv_socket_destroy(rs), 0);
	assert_int_equal(droce_rc_recv_socket_destroy(NULL), 0);
	qps_down();
}

static int
setup(void **state)
{
	(void)state;
	side_up(&A);
	side_up(&B);
	A.reactor = droce_cq_reactor_create(A.dev, on_data, &seen);
	B.reactor = droce_cq_reactor_create(B.dev, on_data, &seen);
	assert_non_null(A.reactor);
	assert_non_null(B.reactor);
	assert_int_equal(droce_cq_reactor_set_on_error(A.reactor, on_error, &seen), 0);
	assert_int_equal(droce_cq_reactor_set_on_error(B.reactor, on_error, &seen), 0);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	assert_int_equal(droce_cq_reactor_destroy(A.reactor), 0);
	assert_int_equal(droce_cq_reactor_destroy(B.reactor), 0);
	side_down(&A);
	side_down(&B);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buffered_messages),
		cmocka_unit_test(test_zero_copy_messages),
		cmocka_unit_test(test_zero_copy_queue_full),
		cmocka_unit_test(test_empty_cq_arms_eventfd),
		cmocka_unit_test(test_full_batch_wakes_again),
		cmocka_unit_test(test_buffered_send_errors),
		cmocka_unit_test(test_zero_copy_send_errors),
		cmocka_unit_test(test_receives_flushed),
		cmocka_unit_test(test_destroy_in_flight),
		cmocka_unit_test(test_immediate_and_foreign),
		cmocka_unit_test(test_bad_input),
	};
	int ret;

	(void)argc;
	if (droce_test_eal_init_stepped(argv[0], "rcr", "256") != 0)
		return 1;
	ret = cmocka_run_group_tests(tests, setup, teardown);
	droce_test_eal_cleanup();
	return ret;
}
