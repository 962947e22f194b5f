/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The CQ reactor: send and receive sockets over a QP's two sides, each
 * with a pool of registered buffers, and the calls that turn their
 * completions into keys and on_data calls. It is built on the public verbs
 * of this library (post, poll, arm); it looks inside a QP only for what
 * those do not show: its PD and CQs, and its lock to see a move to ERR
 * finished.
 *
 * A send is named on the wire by its slot: wr_id is the slot's index, and
 * the slot holds the caller's key (and, buffered, is the index of its
 * buffer). Free slots are a stack, so that the buffer used last, still in
 * cache, goes out next.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_spinlock.h>

#include "rc_private.h"

#define REACTOR_BATCH DROCE_CQ_REACTOR_MAX_EVENTS

struct droce_cq_reactor {
	struct droce_rc_device *dev;
	droce_on_data_cb on_data;
	void *data_arg;
	droce_on_cq_error_cb on_error;
	void *error_arg;
	uint32_t nb_sockets;
	struct droce_cq_reactor_stats stats;   /* relaxed atomic adds */
};

struct send_slot {
	uint64_t key;
	bool in_flight;
};

struct droce_rc_send_socket {
	struct droce_cq_reactor *reactor;
	struct droce_qp *qp;
	struct droce_cq *cq;
	enum droce_rc_send_kind kind;
	uint32_t nb_slots;              /* buffered: nb_buffers; zero copy: max_send_wr */
	uint32_t buffer_size;
	size_t stride;                  /* bytes from one buffer to the next */
	uint8_t *buffers;               /* buffered: nb_slots buffers */
	struct droce_mr *mr;
	droce_on_send_completed_cb on_send_completed;
	void *arg;
	/* Senders (any thread) and the reactor's thread share the free stack. */
	rte_spinlock_t lock;
	uint32_t nb_free;
	uint32_t *free_slots;
	struct send_slot *slots;
	uint32_t flushed;               /* completions flushed (log_error()) */
};

struct droce_rc_recv_socket {
	struct droce_cq_reactor *reactor;
	struct droce_qp *qp;
	struct droce_cq *cq;
	uint32_t nb_buffers;
	uint32_t buffer_size;
	size_t stride;
	uint8_t *buffers;
	struct droce_mr *mr;
	bool *posted;                   /* per buffer: the QP holds it */
	uint32_t nb_posted;
	uint32_t flushed;               /* completions flushed (log_error()) */
};

#define STAT_ADD(reactor, field, n) \
	__atomic_fetch_add(&(reactor)->stats.field, (uint64_t)(n), __ATOMIC_RELAXED)

/* ---- the reactor ------------------------------------------------------------ */

struct droce_cq_reactor *
droce_cq_reactor_create(struct droce_rc_device *dev, droce_on_data_cb on_data, void *arg)
{
	struct droce_cq_reactor *reactor;

	if (dev == NULL || on_data == NULL) {
		RC_LOG(ERR, "cq_reactor_create: %s is NULL; a reactor needs a device and an on_data callback",
		       dev == NULL ? "the device" : "on_data");
		rte_errno = EINVAL;
		return NULL;
	}
	reactor = rte_zmalloc("droce_cq_reactor", sizeof(*reactor), 0);
	if (reactor == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	reactor->dev = dev;
	reactor->on_data = on_data;
	reactor->data_arg = arg;
	return reactor;
}

int
droce_cq_reactor_set_on_error(struct droce_cq_reactor *reactor, droce_on_cq_error_cb on_error,
			      void *arg)
{
	if (reactor == NULL)
		return RC_REFUSE(EINVAL, "cq_reactor_set_on_error: the reactor is NULL");
	reactor->on_error = on_error;
	reactor->error_arg = arg;
	return 0;
}

void
droce_cq_reactor_query_stats(const struct droce_cq_reactor *reactor,
			     struct droce_cq_reactor_stats *stats)
{
	const struct droce_cq_reactor_stats *s = &reactor->stats;

	stats->sends_completed = __atomic_load_n(&s->sends_completed, __ATOMIC_RELAXED);
	stats->send_errors = __atomic_load_n(&s->send_errors, __ATOMIC_RELAXED);
	stats->messages = __atomic_load_n(&s->messages, __ATOMIC_RELAXED);
	stats->recv_errors = __atomic_load_n(&s->recv_errors, __ATOMIC_RELAXED);
	stats->repost_failures = __atomic_load_n(&s->repost_failures, __ATOMIC_RELAXED);
	stats->arms = __atomic_load_n(&s->arms, __ATOMIC_RELAXED);
	stats->self_wakes = __atomic_load_n(&s->self_wakes, __ATOMIC_RELAXED);
}

int
droce_cq_reactor_destroy(struct droce_cq_reactor *reactor)
{
	if (reactor == NULL)
		return 0;
	if (reactor->nb_sockets != 0)
		return RC_REFUSE(EBUSY, "cq_reactor_destroy: the reactor has sockets left (%u); destroy them first",
				 reactor->nb_sockets);
	rte_free(reactor);
	return 0;
}

/* ---- reading a CQ ----------------------------------------------------------- */

/* Read up to @p batch completions. A short read means the CQ was drained:
 * arm it, then poll again, as a completion added between the poll and the
 * arming would signal nothing. A full batch may leave more behind, added
 * before any arming: make the eventfd readable so a sleeper comes back.
 */
static int
cq_read(struct droce_cq_reactor *reactor, struct droce_cq *cq, struct droce_wc *wc, int batch)
{
	int n = droce_poll_cq(cq, batch, wc);

	if (n < batch) {
		droce_req_notify_cq(cq, 0);
		/* The arming store must be seen before the poll's loads, or a
		 * completion added meanwhile could find the CQ unarmed while
		 * this poll finds it empty.
		 */
		atomic_thread_fence(memory_order_seq_cst);
		STAT_ADD(reactor, arms, 1);
		n += droce_poll_cq(cq, batch - n, wc + n);
	}
	if (n == batch) {
		STAT_ADD(reactor, self_wakes, 1);
		rc_cq_signal(cq);
	}
	return n;
}

/* Take completions for a socket that is going away, its QP in ERR:
 * @p release is called for each of the QP's; no callbacks.
 */
static void
cq_drain(struct droce_cq *cq, uint32_t qpn, void (*release)(void *sock, uint64_t wr_id),
	 void *sock)
{
	struct droce_wc wc[REACTOR_BATCH];
	int n;

	while ((n = droce_poll_cq(cq, REACTOR_BATCH, wc)) > 0)
		for (int i = 0; i < n; i++)
			if (wc[i].qp_num == qpn)
				release(sock, wc[i].wr_id);
}

/* Whether @p qp is in ERR with its move there done: the owner changes the
 * state and flushes under the QP's lock, so after taking it the flush
 * completions are all in the CQ and no buffer is touched any more.
 */
static bool
qp_settled_in_err(struct droce_qp *qp)
{
	bool in_err;

	rte_spinlock_lock(&qp->lock);
	in_err = qp->attr.qp_state == DROCE_QPS_ERR;
	rc_unlock(&qp->lock);
	return in_err;
}

/* What both socket kinds need of their QP. */
static int
socket_qp_check(const struct droce_cq_reactor *reactor, const struct droce_qp *qp,
		const char *call)
{
	if (qp->dev != reactor->dev)
		return RC_REFUSE(EINVAL, "%s: QP 0x%x is of another device than the reactor's",
				 call, qp->qpn);
	if (qp->init.qp_type != DROCE_QPT_RC)
		return RC_REFUSE(EINVAL, "%s: QP 0x%x is of type %d; allowed: RC (%d)",
				 call, qp->qpn, qp->init.qp_type, DROCE_QPT_RC);
	if (qp->init.send_cq == qp->init.recv_cq)
		return RC_REFUSE(EINVAL, "%s: QP 0x%x has one CQ for sends and receives; a socket needs its side's CQ to itself",
				 call, qp->qpn);
	return 0;
}

/* A CQ that overflows loses completions, and with them the buffers or
 * slots they would give back: it must hold all a socket has out.
 */
static int
cq_room_check(const struct droce_cq *cq, uint32_t outstanding, const struct droce_qp *qp,
	      const char *call)
{
	if (cq->size < outstanding)
		return RC_REFUSE(EINVAL, "%s: QP 0x%x: its CQ holds %u completions, fewer than the %u work requests the socket may have out",
				 call, qp->qpn, cq->size, outstanding);
	return 0;
}

/* A pool of @p nb buffers of @p size bytes, registered with @p access. */
static int
pool_alloc(struct droce_pd *pd, uint32_t nb, uint32_t size, int access, uint8_t **buffers,
	   size_t *stride, struct droce_mr **mr)
{
	*stride = RTE_ALIGN_CEIL((size_t)size, (size_t)RTE_CACHE_LINE_SIZE);
	*buffers = rte_zmalloc("droce_socket_pool", (size_t)nb * *stride, RTE_CACHE_LINE_SIZE);
	if (*buffers == NULL)
		return -ENOMEM;
	*mr = droce_reg_mr(pd, *buffers, (size_t)nb * *stride, access);
	if (*mr == NULL) {
		int err = rte_errno;

		rte_free(*buffers);
		*buffers = NULL;
		return -err;
	}
	return 0;
}

static void
pool_free(uint8_t *buffers, struct droce_mr *mr)
{
	/* Buffers the port still reads (logged) stay allocated. */
	if (mr == NULL || droce_dereg_mr(mr) == 0)
		rte_free(buffers);
}

/* ---- send sockets ------------------------------------------------------------- */

static int
send_attr_check(const struct droce_cq_reactor *reactor, const struct droce_qp *qp,
		const struct droce_rc_send_socket_attr *attr)
{
	uint32_t max_wr = qp->init.cap.max_send_wr;

	if (attr->kind == DROCE_RC_SEND_ZERO_COPY) {
		if (attr->nb_buffers != 0 || attr->buffer_size != 0)
			return RC_REFUSE(EINVAL, "send_socket_create: QP 0x%x: a zero-copy socket has no pool; nb_buffers %u and buffer_size %u must be 0",
					 qp->qpn, attr->nb_buffers, attr->buffer_size);
		return cq_room_check(qp->init.send_cq, max_wr, qp, "send_socket_create");
	}
	if (attr->kind != DROCE_RC_SEND_BUFFERED)
		return RC_REFUSE(EINVAL, "send_socket_create: QP 0x%x: kind %d; allowed: buffered (%d), zero copy (%d)",
				 qp->qpn, attr->kind, DROCE_RC_SEND_BUFFERED,
				 DROCE_RC_SEND_ZERO_COPY);
	if (attr->nb_buffers == 0 || attr->nb_buffers > max_wr)
		return RC_REFUSE(EINVAL, "send_socket_create: QP 0x%x: nb_buffers %u; allowed: 1..%u (the QP's max_send_wr)",
				 qp->qpn, attr->nb_buffers, max_wr);
	if (attr->buffer_size == 0 || attr->buffer_size > reactor->dev->attr.max_msg_size)
		return RC_REFUSE(EINVAL, "send_socket_create: QP 0x%x: buffer_size %u; allowed: 1..%u (max_msg_size)",
				 qp->qpn, attr->buffer_size, reactor->dev->attr.max_msg_size);
	return cq_room_check(qp->init.send_cq, attr->nb_buffers, qp, "send_socket_create");
}

static void
send_socket_free(struct droce_rc_send_socket *sock)
{
	pool_free(sock->buffers, sock->mr);
	rte_free(sock->free_slots);
	rte_free(sock->slots);
	rte_free(sock);
}

struct droce_rc_send_socket *
droce_rc_send_socket_create(struct droce_cq_reactor *reactor, struct droce_qp *qp,
			    const struct droce_rc_send_socket_attr *attr)
{
	struct droce_rc_send_socket *sock;
	int ret;

	if (reactor == NULL || qp == NULL || attr == NULL) {
		RC_LOG(ERR, "send_socket_create: the %s is NULL",
		       reactor == NULL ? "reactor" : qp == NULL ? "QP" : "attribute struct");
		rte_errno = EINVAL;
		return NULL;
	}
	ret = socket_qp_check(reactor, qp, "send_socket_create");
	if (ret == 0)
		ret = send_attr_check(reactor, qp, attr);
	if (ret != 0) {
		rte_errno = -ret;
		return NULL;
	}
	sock = rte_zmalloc("droce_send_socket", sizeof(*sock), 0);
	if (sock == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	sock->reactor = reactor;
	sock->qp = qp;
	sock->cq = qp->init.send_cq;
	sock->kind = attr->kind;
	sock->nb_slots = attr->kind == DROCE_RC_SEND_BUFFERED ? attr->nb_buffers
							      : qp->init.cap.max_send_wr;
	sock->buffer_size = attr->buffer_size;
	sock->on_send_completed = attr->on_send_completed;
	sock->arg = attr->arg;
	rte_spinlock_init(&sock->lock);
	sock->slots = rte_calloc("droce_send_slots", sock->nb_slots, sizeof(*sock->slots), 0);
	sock->free_slots = rte_calloc("droce_send_free", sock->nb_slots,
				      sizeof(*sock->free_slots), 0);
	ret = sock->slots == NULL || sock->free_slots == NULL ? -ENOMEM : 0;
	if (ret == 0 && attr->kind == DROCE_RC_SEND_BUFFERED)
		ret = pool_alloc(qp->pd, sock->nb_slots, sock->buffer_size, 0, &sock->buffers,
				 &sock->stride, &sock->mr);
	if (ret != 0) {
		RC_LOG(ERR, "send_socket_create: QP 0x%x: no memory for %u slots of %u bytes (%s)",
		       qp->qpn, sock->nb_slots, sock->buffer_size, rte_strerror(-ret));
		send_socket_free(sock);
		rte_errno = -ret;
		return NULL;
	}
	/* Slot 0 on top: the first send takes the first buffer. */
	for (uint32_t i = 0; i < sock->nb_slots; i++)
		sock->free_slots[i] = sock->nb_slots - 1 - i;
	sock->nb_free = sock->nb_slots;
	reactor->nb_sockets++;
	return sock;
}

static void
send_slot_release(void *arg, uint64_t wr_id)
{
	struct droce_rc_send_socket *sock = arg;

	if (wr_id < sock->nb_slots && sock->slots[wr_id].in_flight) {
		sock->slots[wr_id].in_flight = false;
		sock->free_slots[sock->nb_free++] = (uint32_t)wr_id;
	}
}

int
droce_rc_send_socket_destroy(struct droce_rc_send_socket *sock)
{
	uint32_t in_flight;

	if (sock == NULL)
		return 0;
	in_flight = sock->nb_slots - __atomic_load_n(&sock->nb_free, __ATOMIC_ACQUIRE);
	if (in_flight != 0) {
		if (!qp_settled_in_err(sock->qp))
			return RC_REFUSE(EBUSY, "send_socket_destroy: QP 0x%x has %u sends in flight; let them complete or move the QP to ERR",
					 sock->qp->qpn, in_flight);
		rte_spinlock_lock(&sock->lock);
		cq_drain(sock->cq, sock->qp->qpn, send_slot_release, sock);
		in_flight = sock->nb_slots - sock->nb_free;
		rc_unlock(&sock->lock);
		/* In ERR the transport has let go of the buffers: a completion
		 * the CQ lost (an overrun) does not keep them.
		 */
		if (in_flight != 0)
			RC_LOG(WARNING, "send_socket_destroy: QP 0x%x: %u sends in flight had no completion in the CQ",
			       sock->qp->qpn, in_flight);
	}
	if (sock->flushed > 1)
		RC_LOG(INFO, "cq_reactor: QP 0x%x: %u sends flushed", sock->qp->qpn, sock->flushed);
	sock->reactor->nb_sockets--;
	send_socket_free(sock);
	return 0;
}

uint32_t
droce_rc_send_socket_available(const struct droce_rc_send_socket *sock)
{
	return __atomic_load_n(&sock->nb_free, __ATOMIC_RELAXED);
}

int
droce_rc_send_socket_event_fd(const struct droce_rc_send_socket *sock)
{
	return droce_cq_event_fd(sock->cq);
}

static int
slot_take(struct droce_rc_send_socket *sock, uint64_t key, uint32_t *index)
{
	rte_spinlock_lock(&sock->lock);
	if (sock->nb_free == 0) {
		rc_unlock(&sock->lock);
		return -EAGAIN;
	}
	*index = sock->free_slots[--sock->nb_free];
	rc_unlock(&sock->lock);
	/* Set before the post: the completion may be read on another
	 * thread before droce_post_send() returns here.
	 */
	sock->slots[*index].key = key;
	sock->slots[*index].in_flight = true;
	return 0;
}

static void
slot_put_back(struct droce_rc_send_socket *sock, uint32_t index)
{
	rte_spinlock_lock(&sock->lock);
	send_slot_release(sock, index);
	rc_unlock(&sock->lock);
}

/* Post one signalled SEND from slot @p index; the slot goes back on failure. */
static int
slot_post(struct droce_rc_send_socket *sock, uint32_t index, struct droce_sge *sge, int n)
{
	struct droce_send_wr wr = {
		.wr_id = index, .sg_list = sge, .num_sge = n, .opcode = DROCE_WR_SEND,
		/* Every send completes: its slot comes back only then. */
		.send_flags = DROCE_SEND_SIGNALED,
	};
	struct droce_send_wr *bad;
	int ret = droce_post_send(sock->qp, &wr, &bad);

	if (ret != 0) {
		/* droce_post_send() logged why, naming the slot: name the key. */
		RC_LOG(ERR, "send_socket: QP 0x%x: the send of key %" PRIu64 " was refused (%s)",
		       sock->qp->qpn, sock->slots[index].key, rte_strerror(-ret));
		slot_put_back(sock, index);
	}
	return ret;
}

int
droce_rc_send_socket_send(struct droce_rc_send_socket *sock, const void *data, size_t len,
			  uint64_t key)
{
	struct droce_sge sge;
	uint32_t index;
	uint8_t *buffer;

	if (sock == NULL)
		return RC_REFUSE(EINVAL, "send_socket_send: the socket is NULL");
	if (sock->kind != DROCE_RC_SEND_BUFFERED)
		return RC_REFUSE(EINVAL, "send_socket_send: QP 0x%x: the socket is zero copy; use droce_rc_send_socket_send_zc()",
				 sock->qp->qpn);
	if (data == NULL && len != 0)
		return RC_REFUSE(EINVAL, "send_socket_send: QP 0x%x, key %" PRIu64 ": %zu bytes at NULL",
				 sock->qp->qpn, key, len);
	if (len > sock->buffer_size)
		return RC_REFUSE(EMSGSIZE, "send_socket_send: QP 0x%x, key %" PRIu64 ": %zu bytes; allowed: up to %u (the socket's buffer size)",
				 sock->qp->qpn, key, len, sock->buffer_size);
	if (slot_take(sock, key, &index) != 0)
		return -EAGAIN;
	buffer = sock->buffers + (size_t)index * sock->stride;
	if (len != 0)
		memcpy(buffer, data, len);
	sge = (struct droce_sge){
		.addr = (uintptr_t)buffer, .length = (uint32_t)len, .lkey = sock->mr->lkey,
	};
	return slot_post(sock, index, &sge, len != 0 ? 1 : 0);
}

int
droce_rc_send_socket_send_zc(struct droce_rc_send_socket *sock, const struct droce_sge *sge,
			     int n, uint64_t key)
{
	struct droce_sge list[RC_MAX_SGE];
	uint32_t index;

	if (sock == NULL)
		return RC_REFUSE(EINVAL, "send_socket_send_zc: the socket is NULL");
	if (sock->kind != DROCE_RC_SEND_ZERO_COPY)
		return RC_REFUSE(EINVAL, "send_socket_send_zc: QP 0x%x: the socket is buffered; use droce_rc_send_socket_send()",
				 sock->qp->qpn);
	if (n < 0 || (uint32_t)n > sock->qp->init.cap.max_send_sge || (n != 0 && sge == NULL))
		return RC_REFUSE(EINVAL, "send_socket_send_zc: QP 0x%x, key %" PRIu64 ": %d SGEs at %p; allowed: 0..%u (the QP's max_send_sge), not NULL",
				 sock->qp->qpn, key, n, (const void *)sge,
				 sock->qp->init.cap.max_send_sge);
	if (slot_take(sock, key, &index) != 0)
		return -EAGAIN;
	/* droce_send_wr takes a mutable list; the caller's stays theirs. */
	if (n != 0)
		memcpy(list, sge, (size_t)n * sizeof(*sge));
	return slot_post(sock, index, list, n);
}

/* ---- send completions --------------------------------------------------------- */

static void
report_error(struct droce_cq_reactor *reactor, const struct droce_wc *wc, bool send)
{
	if (reactor->on_error != NULL)
		reactor->on_error(reactor->error_arg, wc, send);
}

/* @p flushed counts the socket's flushed completions. */
static void
log_error(const struct droce_wc *wc, uint32_t qpn, const char *what, uint64_t id,
	  uint32_t *flushed)
{
	/* A flush is the echo of an error logged before it, or of a QP put
	 * in ERR on purpose: worth a line, not an alarm, and one a socket (a
	 * broken session flushes every buffer it had posted).
	 */
	if (wc->status == DROCE_WC_WR_FLUSH_ERR) {
		if (__atomic_fetch_add(flushed, 1, __ATOMIC_RELAXED) == 0)
			RC_LOG(INFO, "cq_reactor: QP 0x%x: %s %" PRIu64 " completed with %s (status %d); the socket's other flushes are counted, not logged",
			       qpn, what, id, droce_wc_status_str(wc->status), wc->status);
	} else
		RC_LOG(ERR, "cq_reactor: QP 0x%x: %s %" PRIu64 " completed with %s (status %d, vendor_err %u)",
		       qpn, what, id, droce_wc_status_str(wc->status), wc->status,
		       wc->vendor_err);
}

/* Turn @p wc[i]'s wr_id into the caller's key and free its slot.
 * false when the completion names no send of this socket.
 */
static bool
send_completion_claim(struct droce_rc_send_socket *sock, struct droce_wc *wc)
{
	struct send_slot *slot;

	if (wc->qp_num != sock->qp->qpn || wc->wr_id >= sock->nb_slots ||
	    !sock->slots[wc->wr_id].in_flight) {
		RC_LOG(ERR, "cq_reactor: send CQ of QP 0x%x: a completion (QP 0x%x, wr_id %" PRIu64 ", %s) names no send of this socket; is the CQ shared?",
		       sock->qp->qpn, wc->qp_num, wc->wr_id, droce_wc_status_str(wc->status));
		return false;
	}
	slot = &sock->slots[wc->wr_id];
	slot->in_flight = false;
	sock->free_slots[sock->nb_free++] = (uint32_t)wc->wr_id;
	wc->wr_id = slot->key;
	return true;
}

int
droce_cq_reactor_on_send_cq_event(struct droce_cq_reactor *reactor,
				  struct droce_rc_send_socket *sock, uint64_t *keys, int max_keys)
{
	struct droce_wc wc[REACTOR_BATCH];
	bool known[REACTOR_BATCH];
	int n, nb_keys = 0, nb_errors = 0;

	if (reactor == NULL || sock == NULL || keys == NULL || max_keys < 1)
		return RC_REFUSE(EINVAL, "cq_reactor_on_send_cq_event: reactor %p, socket %p, keys %p, max_keys %d; all needed, max_keys at least 1",
				 (void *)reactor, (void *)sock, (void *)keys, max_keys);
	if (sock->reactor != reactor)
		return RC_REFUSE(EINVAL, "cq_reactor_on_send_cq_event: the send socket of QP 0x%x is another reactor's",
				 sock->qp->qpn);
	n = cq_read(reactor, sock->cq, wc, RTE_MIN(max_keys, REACTOR_BATCH));
	/* Free every slot first, so that the callbacks may send again. */
	rte_spinlock_lock(&sock->lock);
	for (int i = 0; i < n; i++)
		known[i] = send_completion_claim(sock, &wc[i]);
	rc_unlock(&sock->lock);
	for (int i = 0; i < n; i++) {
		if (known[i] && wc[i].status == DROCE_WC_SUCCESS) {
			keys[nb_keys++] = wc[i].wr_id;
			if (sock->on_send_completed != NULL)
				sock->on_send_completed(sock->arg, wc[i].wr_id);
			continue;
		}
		if (known[i])
			log_error(&wc[i], sock->qp->qpn, "send of key", wc[i].wr_id,
				  &sock->flushed);
		nb_errors++;
		report_error(reactor, &wc[i], true);
	}
	STAT_ADD(reactor, sends_completed, nb_keys);
	STAT_ADD(reactor, send_errors, nb_errors);
	return nb_keys;
}

/* ---- receive sockets ------------------------------------------------------------ */

static int
recv_attr_check(const struct droce_cq_reactor *reactor, const struct droce_qp *qp,
		const struct droce_rc_recv_socket_attr *attr)
{
	uint32_t max_wr = qp->init.cap.max_recv_wr;
	/* Receives posted outside the socket leave it less room. */
	uint32_t queued = atomic_load(&qp->rq.producer) - atomic_load(&qp->rq.consumer);

	if (qp->attr.qp_state == DROCE_QPS_RESET)
		return RC_REFUSE(EINVAL, "recv_socket_create: QP 0x%x is in RESET; receives are posted from INIT on",
				 qp->qpn);
	if (attr->nb_buffers == 0 || attr->nb_buffers > max_wr - queued)
		return RC_REFUSE(EINVAL, "recv_socket_create: QP 0x%x: nb_buffers %u; allowed: 1..%u (the QP's max_recv_wr %u, less %u receives posted already)",
				 qp->qpn, attr->nb_buffers, max_wr - queued, max_wr, queued);
	if (attr->buffer_size == 0 || attr->buffer_size > reactor->dev->attr.max_msg_size)
		return RC_REFUSE(EINVAL, "recv_socket_create: QP 0x%x: buffer_size %u; allowed: 1..%u (max_msg_size)",
				 qp->qpn, attr->buffer_size, reactor->dev->attr.max_msg_size);
	return cq_room_check(qp->init.recv_cq, attr->nb_buffers, qp, "recv_socket_create");
}

static void
recv_socket_free(struct droce_rc_recv_socket *sock)
{
	pool_free(sock->buffers, sock->mr);
	rte_free(sock->posted);
	rte_free(sock);
}

/* Post the buffers in @p index (n of them) as one chain; those the QP
 * refuses stay with the socket, counted.
 */
static int
recv_post(struct droce_rc_recv_socket *sock, const uint32_t *index, uint32_t n)
{
	struct droce_recv_wr wr[REACTOR_BATCH], *bad = NULL;
	struct droce_sge sge[REACTOR_BATCH];
	uint32_t done = 0;
	int ret = 0;

	while (done < n && ret == 0) {
		uint32_t chunk = RTE_MIN(n - done, (uint32_t)REACTOR_BATCH);
		uint32_t posted;

		for (uint32_t i = 0; i < chunk; i++) {
			uint32_t b = index[done + i];

			sge[i] = (struct droce_sge){
				.addr = (uintptr_t)(sock->buffers + (size_t)b * sock->stride),
				.length = sock->buffer_size, .lkey = sock->mr->lkey,
			};
			wr[i] = (struct droce_recv_wr){
				.wr_id = b, .next = i + 1 < chunk ? &wr[i + 1] : NULL,
				.sg_list = &sge[i], .num_sge = 1,
			};
			/* Marked before the post: its completion may come first. */
			sock->posted[b] = true;
		}
		ret = droce_post_recv(sock->qp, wr, &bad);
		posted = ret == 0 ? chunk : (uint32_t)(bad - wr);
		for (uint32_t i = posted; i < chunk; i++)
			sock->posted[index[done + i]] = false;
		sock->nb_posted += posted;
		done += posted;
	}
	if (ret != 0) {
		RC_LOG(ERR, "cq_reactor: QP 0x%x: %u receive buffers not posted (%s)",
		       sock->qp->qpn, n - done, rte_strerror(-ret));
		STAT_ADD(sock->reactor, repost_failures, n - done);
	}
	return ret;
}

struct droce_rc_recv_socket *
droce_rc_recv_socket_create(struct droce_cq_reactor *reactor, struct droce_qp *qp,
			    const struct droce_rc_recv_socket_attr *attr)
{
	struct droce_rc_recv_socket *sock;
	uint32_t *all;
	int ret;

	if (reactor == NULL || qp == NULL || attr == NULL) {
		RC_LOG(ERR, "recv_socket_create: the %s is NULL",
		       reactor == NULL ? "reactor" : qp == NULL ? "QP" : "attribute struct");
		rte_errno = EINVAL;
		return NULL;
	}
	ret = socket_qp_check(reactor, qp, "recv_socket_create");
	if (ret == 0)
		ret = recv_attr_check(reactor, qp, attr);
	if (ret != 0) {
		rte_errno = -ret;
		return NULL;
	}
	sock = rte_zmalloc("droce_recv_socket", sizeof(*sock), 0);
	if (sock == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	sock->reactor = reactor;
	sock->qp = qp;
	sock->cq = qp->init.recv_cq;
	sock->nb_buffers = attr->nb_buffers;
	sock->buffer_size = attr->buffer_size;
	sock->posted = rte_calloc("droce_recv_posted", attr->nb_buffers, sizeof(bool), 0);
	all = malloc((size_t)attr->nb_buffers * sizeof(*all));
	ret = sock->posted == NULL || all == NULL ? -ENOMEM : 0;
	if (ret == 0)
		ret = pool_alloc(qp->pd, sock->nb_buffers, sock->buffer_size,
				 DROCE_ACCESS_LOCAL_WRITE, &sock->buffers, &sock->stride, &sock->mr);
	if (ret != 0)
		RC_LOG(ERR, "recv_socket_create: QP 0x%x: no memory for %u buffers of %u bytes (%s)",
		       qp->qpn, sock->nb_buffers, sock->buffer_size, rte_strerror(-ret));
	if (ret == 0) {
		for (uint32_t i = 0; i < sock->nb_buffers; i++)
			all[i] = i;
		ret = recv_post(sock, all, sock->nb_buffers);
		/* Buffers posted are the QP's until they complete: the socket
		 * keeps them and goes on with fewer (recv_post logged it).
		 */
		if (sock->nb_posted != 0)
			ret = 0;
	}
	free(all);
	if (ret != 0) {
		recv_socket_free(sock);
		rte_errno = -ret;
		return NULL;
	}
	reactor->nb_sockets++;
	return sock;
}

static void
recv_buffer_release(void *arg, uint64_t wr_id)
{
	struct droce_rc_recv_socket *sock = arg;

	if (wr_id < sock->nb_buffers && sock->posted[wr_id]) {
		sock->posted[wr_id] = false;
		sock->nb_posted--;
	}
}

int
droce_rc_recv_socket_destroy(struct droce_rc_recv_socket *sock)
{
	if (sock == NULL)
		return 0;
	if (sock->nb_posted != 0) {
		if (!qp_settled_in_err(sock->qp))
			return RC_REFUSE(EBUSY, "recv_socket_destroy: QP 0x%x holds %u posted buffers of the socket; move the QP to ERR first",
					 sock->qp->qpn, sock->nb_posted);
		cq_drain(sock->cq, sock->qp->qpn, recv_buffer_release, sock);
		if (sock->nb_posted != 0)
			RC_LOG(WARNING, "recv_socket_destroy: QP 0x%x: %u posted buffers had no completion in the CQ",
			       sock->qp->qpn, sock->nb_posted);
	}
	if (sock->flushed > 1)
		RC_LOG(INFO, "cq_reactor: QP 0x%x: %u receives flushed", sock->qp->qpn,
		       sock->flushed);
	sock->reactor->nb_sockets--;
	recv_socket_free(sock);
	return 0;
}

uint32_t
droce_rc_recv_socket_posted(const struct droce_rc_recv_socket *sock)
{
	return sock->nb_posted;
}

int
droce_rc_recv_socket_event_fd(const struct droce_rc_recv_socket *sock)
{
	return droce_cq_event_fd(sock->cq);
}

/* ---- receive completions ---------------------------------------------------------- */

/* Hand one successful receive to on_data; false if it cannot be one. */
static bool
recv_deliver(struct droce_rc_recv_socket *sock, const struct droce_wc *wc)
{
	struct droce_cq_reactor *reactor = sock->reactor;
	const uint8_t *data = sock->buffers + (size_t)wc->wr_id * sock->stride;
	uint32_t len = wc->byte_len;

	if (wc->opcode == DROCE_WC_RECV_RDMA_WITH_IMM) {
		/* The bytes went where the peer wrote them. */
		data = NULL;
		len = 0;
	} else if (len > sock->buffer_size) {
		RC_LOG(ERR, "cq_reactor: QP 0x%x: buffer %" PRIu64 " completed with %u bytes, more than its %u",
		       sock->qp->qpn, wc->wr_id, len, sock->buffer_size);
		return false;
	}
	reactor->on_data(reactor->data_arg, data, len, wc);
	return true;
}

int
droce_cq_reactor_on_recv_cq_event(struct droce_cq_reactor *reactor,
				  struct droce_rc_recv_socket *sock)
{
	struct droce_wc wc[REACTOR_BATCH];
	uint32_t repost[REACTOR_BATCH], nb_repost = 0;
	int n, nb_messages = 0, nb_errors = 0;

	if (reactor == NULL || sock == NULL)
		return RC_REFUSE(EINVAL, "cq_reactor_on_recv_cq_event: reactor %p, socket %p; both needed",
				 (void *)reactor, (void *)sock);
	if (sock->reactor != reactor)
		return RC_REFUSE(EINVAL, "cq_reactor_on_recv_cq_event: the receive socket of QP 0x%x is another reactor's",
				 sock->qp->qpn);
	n = cq_read(reactor, sock->cq, wc, REACTOR_BATCH);
	for (int i = 0; i < n; i++) {
		if (wc[i].qp_num != sock->qp->qpn || wc[i].wr_id >= sock->nb_buffers ||
		    !sock->posted[wc[i].wr_id]) {
			RC_LOG(ERR, "cq_reactor: receive CQ of QP 0x%x: a completion (QP 0x%x, wr_id %" PRIu64 ", %s) names no buffer of this socket; is the CQ shared?",
			       sock->qp->qpn, wc[i].qp_num, wc[i].wr_id,
			       droce_wc_status_str(wc[i].status));
		} else {
			recv_buffer_release(sock, wc[i].wr_id);
			if (wc[i].status == DROCE_WC_SUCCESS && recv_deliver(sock, &wc[i])) {
				repost[nb_repost++] = (uint32_t)wc[i].wr_id;
				nb_messages++;
				continue;
			}
			if (wc[i].status != DROCE_WC_SUCCESS)
				log_error(&wc[i], sock->qp->qpn, "receive into buffer",
					  wc[i].wr_id, &sock->flushed);
		}
		nb_errors++;
		report_error(reactor, &wc[i], false);
	}
	/* After on_data: a buffer is the caller's until its callback returns. */
	if (nb_repost != 0)
		recv_post(sock, repost, nb_repost);
	STAT_ADD(reactor, messages, nb_messages);
	STAT_ADD(reactor, recv_errors, nb_errors);
	return nb_messages;
}
