/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Completion queues: a ring of work completions that QP owners add to
 * (any lcore) and one thread polls, and an eventfd that an armed CQ
 * signals once, as an ibverbs completion channel does.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "rc_private.h"

static const char *const status_name[] = {
	[DROCE_WC_SUCCESS] = "success",
	[DROCE_WC_LOC_LEN_ERR] = "local length error",
	[DROCE_WC_LOC_QP_OP_ERR] = "local QP operation error",
	[DROCE_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	[DROCE_WC_LOC_PROT_ERR] = "local protection error",
	[DROCE_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	[DROCE_WC_MW_BIND_ERR] = "memory management operation error",
	[DROCE_WC_BAD_RESP_ERR] = "bad response error",
	[DROCE_WC_LOC_ACCESS_ERR] = "local access error",
	[DROCE_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[DROCE_WC_REM_ACCESS_ERR] = "remote access error",
	[DROCE_WC_REM_OP_ERR] = "remote operation error",
	[DROCE_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[DROCE_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[DROCE_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	[DROCE_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	[DROCE_WC_REM_ABORT_ERR] = "aborted error",
	[DROCE_WC_INV_EECN_ERR] = "invalid EE context number",
	[DROCE_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	[DROCE_WC_FATAL_ERR] = "fatal error",
	[DROCE_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	[DROCE_WC_GENERAL_ERR] = "general error",
};

const char *
droce_wc_status_str(enum droce_wc_status status)
{
	if ((unsigned int)status >= RTE_DIM(status_name))
		return "unknown";
	return status_name[status];
}

struct droce_cq *
droce_create_cq(struct droce_rc_device *dev, int cqe)
{
	static unsigned int instance;
	char name[RTE_RING_NAMESIZE];
	struct droce_cq *cq;
	ssize_t ring_bytes;

	if (cqe <= 0 || (uint32_t)cqe > dev->attr.max_cqe) {
		RC_LOG(ERR, "create_cq: %d entries; allowed: 1..%u", cqe, dev->attr.max_cqe);
		rte_errno = EINVAL;
		return NULL;
	}
	cq = rte_zmalloc("droce_cq", sizeof(*cq), 0);
	if (cq == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	snprintf(name, sizeof(name), "droce_cq%u",
		 __atomic_fetch_add(&instance, 1, __ATOMIC_RELAXED));
	/* In rte_malloc memory, not a memzone of its own: thousands of
	 * sessions with two CQs each would exhaust RTE_MAX_MEMZONE.
	 */
	ring_bytes = rte_ring_get_memsize_elem(sizeof(struct droce_wc),
					       rte_align32pow2((uint32_t)cqe + 1));
	cq->entries = ring_bytes > 0 ? rte_zmalloc("droce_cq_ring", (size_t)ring_bytes,
						   RTE_CACHE_LINE_SIZE) : NULL;
	if (cq->entries != NULL &&
	    rte_ring_init(cq->entries, name, (unsigned int)cqe, RING_F_SC_DEQ | RING_F_EXACT_SZ) != 0) {
		rte_free(cq->entries);
		cq->entries = NULL;
	}
	cq->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cq->entries == NULL || cq->event_fd < 0) {
		RC_LOG(ERR, "create_cq: no memory for a ring of %d entries, or no eventfd (%s)", cqe,
		       cq->event_fd < 0 ? strerror(errno) : "rte_malloc");
		rte_free(cq->entries);
		if (cq->event_fd >= 0)
			close(cq->event_fd);
		rte_free(cq);
		rte_errno = ENOMEM;
		return NULL;
	}
	cq->dev = dev;
	cq->size = (uint32_t)cqe;
	dev->nb_cq++;
	return cq;
}

int
droce_destroy_cq(struct droce_cq *cq)
{
	if (cq->users != 0)
		return RC_REFUSE(EBUSY, "destroy_cq: %u QPs still use the CQ", cq->users);
	cq->dev->nb_cq--;
	rte_free(cq->entries);
	close(cq->event_fd);
	rte_free(cq);
	return 0;
}

int
droce_poll_cq(struct droce_cq *cq, int num_entries, struct droce_wc *wc)
{
	if (num_entries < 0)
		return RC_REFUSE(EINVAL, "poll_cq: %d entries asked for", num_entries);
	return (int)rte_ring_sc_dequeue_burst_elem(cq->entries, wc, sizeof(*wc),
						   (unsigned int)num_entries, NULL);
}

int
droce_cq_event_fd(const struct droce_cq *cq)
{
	return cq->event_fd;
}

int
droce_req_notify_cq(struct droce_cq *cq, int solicited_only)
{
	/* Every completion signals: a solicited-only CQ wakes on more than
	 * it asked for, which ibverbs allows.
	 */
	RTE_SET_USED(solicited_only);
	/* Sequentially consistent, as the fence in rc_cq_add(): either the
	 * caller's next poll sees the completion or the adder sees the arming.
	 * A CQ that signals by callback is armed on the lcore that adds to
	 * it (droce_cq_set_notify()): program order does that.
	 */
	if (cq->notify != NULL)
		atomic_store_explicit(&cq->armed, 1, memory_order_relaxed);
	else
		atomic_store_explicit(&cq->armed, 1, memory_order_seq_cst);
	return 0;
}

unsigned int
rc_cq_enqueue(struct droce_cq *cq, const struct droce_wc *wc, unsigned int n)
{
	unsigned int added = rte_ring_mp_enqueue_burst_elem(cq->entries, wc, sizeof(*wc), n,
							    NULL);

	if (added < n)
		__atomic_fetch_add(&cq->overruns, n - added, __ATOMIC_RELAXED);
	return added;
}

void
rc_cq_added(struct droce_cq *cq)
{
	if (cq->notify != NULL) {
		/* Armed on this lcore too: no other thread to order against. */
		if (atomic_load_explicit(&cq->armed, memory_order_relaxed)) {
			atomic_store_explicit(&cq->armed, 0, memory_order_relaxed);
			cq->notify(cq->notify_arg);
		}
		return;
	}
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&cq->armed, memory_order_relaxed) &&
	    atomic_exchange_explicit(&cq->armed, 0, memory_order_acq_rel))
		rc_cq_signal(cq);
}

unsigned int
rc_cq_add_burst(struct droce_cq *cq, const struct droce_wc *wc, unsigned int n)
{
	unsigned int added = rc_cq_enqueue(cq, wc, n);

	if (added != 0)
		rc_cq_added(cq);
	return added;
}

int
rc_cq_add(struct droce_cq *cq, const struct droce_wc *wc)
{
	return rc_cq_add_burst(cq, wc, 1) == 1 ? 0 : -ENOSPC;
}

void
rc_cq_signal(struct droce_cq *cq)
{
	uint64_t one = 1;

	if (cq->notify != NULL) {
		cq->notify(cq->notify_arg);
		return;
	}
	/* The counter cannot overflow with one write per arming. */
	if (write(cq->event_fd, &one, sizeof(one)) != sizeof(one))
		RC_LOG(WARNING, "CQ event: eventfd write failed");
}

int
droce_cq_set_notify(struct droce_cq *cq, void (*fn)(void *arg), void *arg)
{
	if (fn != NULL && cq->mixed_owners)
		return RC_REFUSE(EINVAL, "cq_set_notify: the CQ serves QPs of more than one owner lcore; a callback runs on the lcore that adds a completion, so its CQ's QPs must share one (droce_qp_owner())");
	cq->notify_arg = arg;
	cq->notify = fn;
	return 0;
}

void
rc_cq_join(struct droce_cq *cq, const struct rc_owner *owner)
{
	if (cq->users++ == 0)
		cq->owner = owner;
	else if (cq->owner != owner)
		cq->mixed_owners = true;
}

void
rc_cq_leave(struct droce_cq *cq)
{
	if (--cq->users != 0)
		return;
	cq->owner = NULL;
	cq->mixed_owners = false;
}

const struct rc_owner *
rc_cq_owner_wanted(const struct droce_cq *cq)
{
	return cq->notify != NULL && cq->users != 0 ? cq->owner : NULL;
}

int
rc_cq_flush_check(const struct droce_cq *cq, const struct rc_owner *owner, uint32_t qpn,
		  const char *what)
{
	char here[32] = "a thread that is no lcore";

	/* A flush adds completions, and calls the callback, where it is caused. */
	if (cq->notify == NULL || owner->lcore_id == RC_LCORE_UNKNOWN ||
	    owner->lcore_id == rte_lcore_id())
		return 0;
	if (rte_lcore_id() != LCORE_ID_ANY)
		snprintf(here, sizeof(here), "lcore %u", rte_lcore_id());
	return RC_REFUSE(EINVAL, "%s: QP 0x%x: its CQ signals by callback (droce_cq_set_notify()), so it goes to ERR (or is posted to in ERR) on its owner, lcore %u, not on %s",
			 what, qpn, owner->lcore_id, here);
}
