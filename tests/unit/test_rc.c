/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/rc's verbs layer: device, PD, MR keys and bounds, CQs and their
 * event, QP creation, ibverbs' QP state machine and attribute checks,
 * posting, and flushing in ERR. Each refusal is checked for its errno
 * and for the log line that says what was wrong.
 */

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/resource.h>

#include <cmocka.h>

#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_ring.h>

#include "droce_core.h"
#include "droce_gpu.h"
#include "droce_net.h"
#include "droce_rc.h"
#include "rc_private.h"
#include "test_eal.h"

static struct droce_stack *stack;
static struct droce_rc_device *dev;

/* ---- the log: what the last refusal said ------------------------------- */

static char log_text[8192];
static FILE *log_stream;

static void
log_clear(void)
{
	fflush(log_stream);
	rewind(log_stream);
	memset(log_text, 0, sizeof(log_text));
}

/* The log since log_clear() holds @p words. */
static void
log_says(const char *words)
{
	fflush(log_stream);
	if (strstr(log_text, words) == NULL)
		fail_msg("the log does not say \"%s\"; it says: %s", words, log_text);
}

/* ---- setup --------------------------------------------------------------- */

static int
setup(void **state)
{
	char *const overrides[] = {
		"port.0.device=net_ring_rc0", "port.0.address=198.18.0.1/24",
		"stats.period=0",
	};
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	struct rte_ring *rx_ring, *tx_ring[2];
	char err[DROCE_ERR_LEN];

	(void)state;
	rx_ring = rte_ring_create("rc_rx", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	tx_ring[0] = rte_ring_create("rc_tx0", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	tx_ring[1] = rte_ring_create("rc_tx1", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	assert_true(rte_eth_from_rings("rc0", &rx_ring, 1, tx_ring, 2, SOCKET_ID_ANY) >= 0);
	if (droce_conf_load(&conf, NULL, overrides, RTE_DIM(overrides), err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (droce_lcores_layout(&conf, "--lcores (test)", &layout, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	stack = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (stack == NULL)
		fail_msg("%s", err);
	dev = droce_rc_open(stack, 0, err, sizeof(err));
	if (dev == NULL)
		fail_msg("%s", err);
	log_stream = fmemopen(log_text, sizeof(log_text) - 1, "w");
	assert_non_null(log_stream);
	rte_openlog_stream(log_stream);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rte_openlog_stream(NULL);
	fclose(log_stream);
	assert_int_equal(droce_rc_close(dev), 0);
	droce_stack_destroy(stack);
	return 0;
}

/* ---- a QP and what it needs ------------------------------------------------ */

struct qp_fixture {
	struct droce_pd *pd;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp;
	struct droce_mr *mr, *ro_mr;
	uint8_t buf[4096], ro_buf[4096];
};

static void
qp_fixture_up(struct qp_fixture *f, enum droce_qp_type type, uint32_t max_wr)
{
	struct droce_qp_init_attr ia = {
		.qp_type = type,
		.cap = { .max_send_wr = max_wr, .max_recv_wr = max_wr, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
	};

	memset(f, 0, sizeof(*f));
	f->pd = droce_alloc_pd(dev);
	f->scq = droce_create_cq(dev, 64);
	f->rcq = droce_create_cq(dev, 64);
	assert_non_null(f->pd);
	assert_non_null(f->scq);
	assert_non_null(f->rcq);
	ia.send_cq = f->scq;
	ia.recv_cq = f->rcq;
	f->qp = droce_create_qp(f->pd, &ia);
	assert_non_null(f->qp);
	f->mr = droce_reg_mr(f->pd, f->buf, sizeof(f->buf),
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	f->ro_mr = droce_reg_mr(f->pd, f->ro_buf, sizeof(f->ro_buf), DROCE_ACCESS_REMOTE_READ);
	assert_non_null(f->mr);
	assert_non_null(f->ro_mr);
}

static void
qp_fixture_down(struct qp_fixture *f)
{
	assert_int_equal(droce_destroy_qp(f->qp), 0);
	assert_int_equal(droce_dereg_mr(f->mr), 0);
	assert_int_equal(droce_dereg_mr(f->ro_mr), 0);
	assert_int_equal(droce_destroy_cq(f->scq), 0);
	assert_int_equal(droce_destroy_cq(f->rcq), 0);
	assert_int_equal(droce_dealloc_pd(f->pd), 0);
}

static int
to_init(struct droce_qp *qp)
{
	struct droce_qp_attr a = {
		.qp_state = DROCE_QPS_INIT, .port_num = 1,
		.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ,
	};

	return droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX | DROCE_QP_PORT |
				       DROCE_QP_ACCESS_FLAGS);
}

static struct droce_qp_attr
rtr_attr(void)
{
	struct droce_qp_attr a = {
		.qp_state = DROCE_QPS_RTR, .path_mtu = DROCE_MTU_1024, .dest_qp_num = 0x11,
		.rq_psn = 0x123456, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .hop_limit = 64 },
	};

	droce_gid_from_ipv4(inet_addr("198.18.0.2"), a.ah_attr.dgid);
	return a;
}

#define RTR_MASK (DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN | \
		  DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER)
#define RTS_MASK (DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT | \
		  DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC)

static struct droce_qp_attr
rts_attr(void)
{
	return (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTS, .sq_psn = 0x654321, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 1,
	};
}

static void
to_rts(struct droce_qp *qp)
{
	struct droce_qp_attr a = rtr_attr();

	assert_int_equal(to_init(qp), 0);
	assert_int_equal(droce_modify_qp(qp, &a, RTR_MASK), 0);
	a = rts_attr();
	assert_int_equal(droce_modify_qp(qp, &a, RTS_MASK), 0);
	assert_int_equal(droce_qp_state(qp), DROCE_QPS_RTS);
}

/* ---- device ---------------------------------------------------------------- */

static void
test_device_and_gids(void **state)
{
	struct droce_rc_device_attr attr;
	uint8_t gid[16];
	uint32_t ip;
	char err[DROCE_ERR_LEN];

	(void)state;
	droce_rc_query_device(dev, &attr);
	assert_true(attr.max_qp > 0 && attr.max_sge > 0);
	assert_int_equal(attr.max_msg_size, 1u << 31);
	droce_rc_query_gid(dev, gid);
	assert_int_equal(droce_gid_to_ipv4(gid, &ip), 0);
	assert_int_equal(ip, inet_addr("198.18.0.1"));
	/* A link-local GID is not an IPv4 address. */
	gid[0] = 0xfe;
	assert_int_equal(droce_gid_to_ipv4(gid, &ip), -EINVAL);
	assert_null(droce_rc_open(stack, 3, err, sizeof(err)));
	assert_non_null(strstr(err, "no port 3"));
}

/* Who runs the QPs: a value that is none, and workers that do not
 * busy-poll, are refused with what is allowed.
 */
static void
test_open_owners(void **state)
{
	char *const overrides[] = {
		"port.0.device=net_ring_rc1", "port.0.address=198.18.0.9/24",
		"stats.period=0", "worker.poll.enable=no",
	};
	struct droce_rc_conf rc_conf = { .owners = (enum droce_rc_owners)7 };
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	struct rte_ring *rx_ring, *tx_ring[2];
	struct droce_stack *sleepy;
	char err[DROCE_ERR_LEN];

	(void)state;
	assert_null(droce_rc_open_conf(stack, 0, &rc_conf, err, sizeof(err)));
	assert_non_null(strstr(err, "owners 7; allowed: DROCE_RC_OWNERS_CONTROL, DROCE_RC_OWNERS_WORKERS"));
	rx_ring = rte_ring_create("rc1_rx", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	tx_ring[0] = rte_ring_create("rc1_tx0", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	tx_ring[1] = rte_ring_create("rc1_tx1", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	assert_true(rte_eth_from_rings("rc1", &rx_ring, 1, tx_ring, 2, SOCKET_ID_ANY) >= 0);
	if (droce_conf_load(&conf, NULL, overrides, RTE_DIM(overrides), err, sizeof(err)) != 0 ||
	    droce_lcores_layout(&conf, "--lcores (test)", &layout, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	sleepy = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (sleepy == NULL)
		fail_msg("%s", err);
	rc_conf.owners = DROCE_RC_OWNERS_WORKERS;
	assert_null(droce_rc_open_conf(sleepy, 0, &rc_conf, err, sizeof(err)));
	assert_non_null(strstr(err, "need busy-polling workers (worker.poll.enable=yes)"));
	droce_stack_destroy(sleepy);
}

static void
test_close_busy(void **state)
{
	struct droce_pd *pd = droce_alloc_pd(dev);

	(void)state;
	log_clear();
	assert_int_equal(droce_rc_close(dev), -EBUSY);
	log_says("1 PDs");
	assert_int_equal(droce_dealloc_pd(pd), 0);
	/* Its hooks run on the stack's lcores: not while they run. */
	assert_int_equal(droce_stack_start(stack, false), 0);
	log_clear();
	assert_int_equal(droce_rc_close(dev), -EBUSY);
	log_says("stop it first");
	droce_stack_stop(stack);
}

/* ---- memory regions ---------------------------------------------------------- */

static void
test_mr_registration_errors(void **state)
{
	struct droce_pd *pd = droce_alloc_pd(dev);
	uint8_t buf[64];

	(void)state;
	log_clear();
	assert_null(droce_reg_mr(pd, NULL, 64, DROCE_ACCESS_LOCAL_WRITE));
	assert_int_equal(rte_errno, EINVAL);
	log_says("no address");
	assert_null(droce_reg_mr(pd, buf, 0, DROCE_ACCESS_LOCAL_WRITE));
	assert_int_equal(rte_errno, EINVAL);
	log_says("length 0");
	assert_null(droce_reg_mr(pd, buf, sizeof(buf), 1 << 12));
	assert_int_equal(rte_errno, EINVAL);
	log_says("unknown access bits 0x1000");
	assert_null(droce_reg_mr(pd, buf, sizeof(buf), DROCE_ACCESS_REMOTE_WRITE));
	assert_int_equal(rte_errno, EINVAL);
	log_says("needs local write");
	assert_null(droce_reg_mr_iova(pd, buf, sizeof(buf), UINT64_MAX - 10,
				      DROCE_ACCESS_LOCAL_WRITE));
	assert_int_equal(rte_errno, EINVAL);
	log_says("wraps");
	assert_int_equal(droce_dealloc_pd(pd), 0);
}

static void
test_mr_keys_bounds_and_access(void **state)
{
	struct droce_pd *pd = droce_alloc_pd(dev), *other = droce_alloc_pd(dev);
	static uint8_t buf[4096];
	struct droce_mr *rw, *ro, *zb, *again;
	uint32_t old_key;

	(void)state;
	rw = droce_reg_mr(pd, buf, 1024, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	ro = droce_reg_mr(pd, buf + 1024, 1024, DROCE_ACCESS_REMOTE_READ);
	zb = droce_reg_mr(pd, buf + 2048, 1024,
			  DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_ZERO_BASED);
	assert_non_null(rw);
	assert_non_null(ro);
	assert_non_null(zb);
	assert_int_not_equal(rw->rkey, ro->rkey);
	assert_int_equal(rw->lkey, rw->rkey);
	assert_true(rw->lkey > 0xff);
	/* Inside, at both ends; one byte past; a range that wraps. */
	assert_ptr_equal(rc_mr_check(pd, rw->rkey, (uintptr_t)buf, 1024, 0), rw);
	assert_ptr_equal(rc_mr_check(pd, rw->rkey, (uintptr_t)buf + 1023, 1, 0), rw);
	assert_null(rc_mr_check(pd, rw->rkey, (uintptr_t)buf + 1, 1024, 0));
	assert_null(rc_mr_check(pd, rw->rkey, (uintptr_t)buf - 1, 2, 0));
	assert_null(rc_mr_check(pd, rw->rkey, (uintptr_t)buf + 8, UINT64_MAX - 4, 0));
	/* A read-only region takes no write; another PD's key is none. */
	assert_ptr_equal(rc_mr_check(pd, ro->rkey, (uintptr_t)buf + 1024, 8,
				     DROCE_ACCESS_REMOTE_READ), ro);
	assert_null(rc_mr_check(pd, ro->rkey, (uintptr_t)buf + 1024, 8,
				DROCE_ACCESS_REMOTE_WRITE));
	assert_null(rc_mr_check(other, rw->rkey, (uintptr_t)buf, 8, 0));
	/* Zero-based: named from 0, reached where it lies. */
	assert_int_equal(zb->iova, 0);
	assert_ptr_equal(rc_mr_check(pd, zb->lkey, 1000, 24, DROCE_ACCESS_LOCAL_WRITE), zb);
	assert_ptr_equal(rc_mr_cpu(zb, 1000), buf + 2048 + 1000);
	/* A stale key names nothing, even once its slot is used again. */
	old_key = rw->rkey;
	assert_int_equal(droce_dealloc_pd(pd), -EBUSY);
	assert_int_equal(droce_dereg_mr(rw), 0);
	assert_null(rc_mr_of_key(dev, old_key));
	for (int i = 0; i < 3; i++) {
		again = droce_reg_mr(pd, buf, 64, DROCE_ACCESS_LOCAL_WRITE);
		assert_non_null(again);
		assert_int_not_equal(again->lkey, old_key);
		assert_null(rc_mr_of_key(dev, old_key));
		assert_int_equal(droce_dereg_mr(again), 0);
	}
	assert_int_equal(droce_dereg_mr(ro), 0);
	assert_int_equal(droce_dereg_mr(zb), 0);
	assert_int_equal(droce_dealloc_pd(pd), 0);
	assert_int_equal(droce_dealloc_pd(other), 0);
}

/* Keys a peer was told of say nothing of the others: regions registered
 * one after another do not get keys one after another.
 */
static void
test_mr_keys_not_guessable(void **state)
{
	struct droce_pd *pd = droce_alloc_pd(dev);
	static uint8_t buf[64];
	struct droce_mr *mr[32];
	uint32_t high_bytes_seen = 0;

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(mr); i++) {
		mr[i] = droce_reg_mr(pd, buf, sizeof(buf), DROCE_ACCESS_REMOTE_READ);
		assert_non_null(mr[i]);
		assert_ptr_equal(rc_mr_of_key(dev, mr[i]->rkey), mr[i]);
		/* The key with its random byte changed names nothing. */
		assert_null(rc_mr_of_key(dev, mr[i]->rkey ^ 0x01000000u));
		high_bytes_seen |= 1u << (mr[i]->rkey >> 24 & 31);
	}
	/* 32 random bytes all in one of 32 classes: 32^-31, never by chance. */
	assert_true(__builtin_popcount(high_bytes_seen) > 1);
	for (unsigned int i = 0; i < RTE_DIM(mr); i++)
		assert_int_equal(droce_dereg_mr(mr[i]), 0);
	assert_int_equal(droce_dealloc_pd(pd), 0);
}

static void
test_mr_gpu(void **state)
{
	struct droce_pd *pd = droce_alloc_pd(dev);
	static uint8_t cpu[8192];
	struct droce_gpu_buf buf = { .dev_id = 0, .gpu = (void *)(uintptr_t)0x7000000000ull,
				     .cpu = cpu, .size = sizeof(cpu) };
	struct droce_mr *mr;

	(void)state;
	mr = droce_reg_mr_gpu(pd, &buf, 4096, 4096, DROCE_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(mr->iova, 0x7000000000ull + 4096);
	assert_ptr_equal(rc_mr_cpu(mr, mr->iova + 10), cpu + 4096 + 10);
	assert_int_equal(droce_dereg_mr(mr), 0);
	log_clear();
	assert_null(droce_reg_mr_gpu(pd, &buf, 4096, 4097, DROCE_ACCESS_LOCAL_WRITE));
	assert_int_equal(rte_errno, ERANGE);
	buf.cpu = NULL;
	assert_null(droce_reg_mr_gpu(pd, &buf, 0, 64, DROCE_ACCESS_LOCAL_WRITE));
	assert_int_equal(rte_errno, ENOTSUP);
	log_says("no CPU mapping");
	assert_int_equal(droce_dealloc_pd(pd), 0);
}

/* ---- completion queues ------------------------------------------------------- */

static bool
fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void
count_notify(void *arg)
{
	(*(int *)arg)++;
}

static int notified;

static void
test_cq_limits_and_event(void **state)
{
	struct droce_wc wc[4];
	struct droce_wc one = { .wr_id = 7 };
	struct droce_cq *cq;
	uint64_t count;

	(void)state;
	log_clear();
	assert_null(droce_create_cq(dev, 0));
	assert_int_equal(rte_errno, EINVAL);
	log_says("0 entries; allowed: 1..");
	assert_null(droce_create_cq(dev, RC_MAX_CQE + 1));
	cq = droce_create_cq(dev, 2);
	assert_non_null(cq);
	assert_int_equal(droce_poll_cq(cq, 4, wc), 0);
	assert_int_equal(droce_poll_cq(cq, -1, wc), -EINVAL);
	/* Not armed: a completion does not signal. */
	assert_int_equal(rc_cq_add(cq, &one), 0);
	assert_false(fd_readable(droce_cq_event_fd(cq)));
	/* Armed: the next one signals, once. */
	assert_int_equal(droce_req_notify_cq(cq, 0), 0);
	assert_int_equal(rc_cq_add(cq, &one), 0);
	assert_true(fd_readable(droce_cq_event_fd(cq)));
	assert_int_equal(read(droce_cq_event_fd(cq), &count, sizeof(count)), sizeof(count));
	assert_int_equal(count, 1);
	/* Full at exactly its size: the next is an overrun. */
	assert_int_equal(rc_cq_add(cq, &one), -ENOSPC);
	assert_int_equal(cq->overruns, 1);
	assert_false(fd_readable(droce_cq_event_fd(cq)));
	assert_int_equal(droce_poll_cq(cq, 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 7);
	/* A notify function instead of the eventfd: called once an arming,
	 * never without one, and the eventfd written nothing.
	 */
	notified = 0;
	assert_int_equal(droce_cq_set_notify(cq, count_notify, &notified), 0);
	assert_int_equal(rc_cq_add(cq, &one), 0);
	assert_int_equal(notified, 0);
	assert_int_equal(droce_req_notify_cq(cq, 0), 0);
	assert_int_equal(rc_cq_add(cq, &one), 0);
	assert_int_equal(notified, 1);
	assert_false(fd_readable(droce_cq_event_fd(cq)));
	assert_int_equal(droce_poll_cq(cq, 4, wc), 2);
	assert_int_equal(rc_cq_add(cq, &one), 0);
	assert_int_equal(notified, 1);
	assert_int_equal(droce_poll_cq(cq, 4, wc), 1);
	/* Taken away: the eventfd again. */
	assert_int_equal(droce_cq_set_notify(cq, NULL, NULL), 0);
	assert_int_equal(droce_req_notify_cq(cq, 0), 0);
	assert_int_equal(rc_cq_add(cq, &one), 0);
	assert_int_equal(notified, 1);
	assert_true(fd_readable(droce_cq_event_fd(cq)));
	assert_int_equal(droce_poll_cq(cq, 4, wc), 1);
	assert_int_equal(droce_destroy_cq(cq), 0);
	assert_string_equal(droce_wc_status_str(DROCE_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	assert_string_equal(droce_wc_status_str((enum droce_wc_status)99), "unknown");
}

/* Completions the owner makes under a QP's lock wait in its stage and
 * reach their CQ together, in order: when published, when one for
 * another CQ comes, before a flush on the owner's lcore, and what does
 * not fit is an overrun, logged.
 */
static void
test_completions_staged(void **state)
{
	struct droce_wc got[8];
	struct droce_recv_wr rwr = { .wr_id = 200 }, *bad;
	struct droce_qp_attr err = { .qp_state = DROCE_QPS_ERR };
	struct qp_fixture f;
	struct droce_cq *tiny;
	struct rc_owner *o;

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_RC, 8);
	o = f.qp->owner;
	for (uint64_t i = 0; i < 3; i++)
		rc_complete(f.qp, f.rcq, &(struct droce_wc){ .wr_id = 100 + i });
	assert_int_equal(droce_poll_cq(f.rcq, 8, got), 0);
	rc_owner_publish(o);
	assert_int_equal(droce_poll_cq(f.rcq, 8, got), 3);
	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(got[i].wr_id, 100 + i);
	/* Another CQ's completion: the staged ones go first. */
	rc_complete(f.qp, f.rcq, &(struct droce_wc){ .wr_id = 1 });
	rc_complete(f.qp, f.scq, &(struct droce_wc){ .wr_id = 2 });
	assert_int_equal(droce_poll_cq(f.rcq, 8, got), 1);
	assert_int_equal(droce_poll_cq(f.scq, 8, got), 0);
	rc_owner_publish(o);
	assert_int_equal(droce_poll_cq(f.scq, 8, got), 1);
	/* A flush on the owner's lcore comes after what the owner staged. */
	assert_int_equal(o->lcore_id, rte_lcore_id());
	assert_int_equal(to_init(f.qp), 0);
	assert_int_equal(droce_post_recv(f.qp, &rwr, &bad), 0);
	rc_complete(f.qp, f.rcq, &(struct droce_wc){ .wr_id = 100 });
	assert_int_equal(droce_modify_qp(f.qp, &err, DROCE_QP_STATE), 0);
	rc_owner_publish(o);
	assert_int_equal(droce_poll_cq(f.rcq, 8, got), 2);
	assert_int_equal(got[0].wr_id, 100);
	assert_int_equal(got[1].wr_id, 200);
	assert_int_equal(got[1].status, DROCE_WC_WR_FLUSH_ERR);
	/* Three for a CQ of two: one overrun, logged with its wr_id. */
	tiny = droce_create_cq(dev, 2);
	assert_non_null(tiny);
	log_clear();
	for (uint64_t i = 0; i < 3; i++)
		rc_complete(f.qp, tiny, &(struct droce_wc){ .wr_id = 300 + i });
	rc_owner_publish(o);
	assert_int_equal(tiny->overruns, 1);
	log_says("CQ full, a completion (wr_id 302");
	assert_int_equal(droce_poll_cq(tiny, 8, got), 2);
	assert_int_equal(got[1].wr_id, 301);
	assert_int_equal(droce_destroy_cq(tiny), 0);
	qp_fixture_down(&f);
}

/* More CQs than DPDK has memzones (RTE_MAX_MEMZONE): a thousand
 * sessions hold two each, and their rings must not take one apiece.
 */
static void
test_cqs_past_the_memzone_limit(void **state)
{
	enum { CQS = RTE_MAX_MEMZONE + 64 };
	static struct droce_cq *cqs[CQS];
	struct rlimit rl;
	struct droce_wc one = { .wr_id = 9 }, wc;

	(void)state;
	/* Each CQ has an eventfd: more descriptors than the usual 1024. */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max < CQS + 256)
		skip();
	rl.rlim_cur = rl.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	for (unsigned int i = 0; i < CQS; i++) {
		cqs[i] = droce_create_cq(dev, 16);
		assert_non_null(cqs[i]);
	}
	/* The last one works as a CQ. */
	assert_int_equal(rc_cq_add(cqs[CQS - 1], &one), 0);
	assert_int_equal(droce_poll_cq(cqs[CQS - 1], 1, &wc), 1);
	assert_int_equal(wc.wr_id, 9);
	for (unsigned int i = 0; i < CQS; i++)
		assert_int_equal(droce_destroy_cq(cqs[i]), 0);
}

/* ---- queue pairs: creation --------------------------------------------------- */

static void
test_create_qp_checks(void **state)
{
	struct droce_pd *pd = droce_alloc_pd(dev);
	struct droce_cq *cq = droce_create_cq(dev, 16);
	struct droce_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = DROCE_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct droce_qp_init_attr bad;
	struct droce_qp *a, *b;

	(void)state;
	log_clear();
	bad = ia;
	bad.send_cq = NULL;
	assert_null(droce_create_qp(pd, &bad));
	assert_int_equal(rte_errno, EINVAL);
	log_says("a send and a receive CQ are needed");
	bad = ia;
	bad.cap.max_send_wr = RC_MAX_QP_WR + 1;
	assert_null(droce_create_qp(pd, &bad));
	log_says("max_send_wr 16385");
	bad = ia;
	bad.cap.max_recv_sge = RC_MAX_SGE + 1;
	assert_null(droce_create_qp(pd, &bad));
	log_says("max_recv_sge 33");
	bad = ia;
	bad.cap.max_inline_data = RC_MAX_INLINE + 1;
	assert_null(droce_create_qp(pd, &bad));
	log_says("max_inline_data 257");
	bad = ia;
	bad.qp_type = DROCE_QPT_UD;
	assert_null(droce_create_qp(pd, &bad));
	assert_int_equal(rte_errno, ENOTSUP);
	bad.qp_type = (enum droce_qp_type)9;
	assert_null(droce_create_qp(pd, &bad));
	assert_int_equal(rte_errno, EINVAL);
	/* QPNs: distinct, 24 bits, clear of the low numbers. */
	a = droce_create_qp(pd, &ia);
	b = droce_create_qp(pd, &ia);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_not_equal(droce_qp_num(a), droce_qp_num(b));
	assert_true(droce_qp_num(a) >= 1u << 16 && droce_qp_num(a) <= DROCE_QPN_MASK);
	assert_ptr_equal(rc_qp_of_num(dev, droce_qp_num(b)), b);
	assert_int_equal(droce_qp_state(a), DROCE_QPS_RESET);
	assert_int_equal(droce_destroy_cq(cq), -EBUSY);
	assert_int_equal(droce_destroy_qp(a), 0);
	assert_null(rc_qp_of_num(dev, droce_qp_num(a)));
	assert_int_equal(droce_destroy_qp(b), 0);
	assert_int_equal(droce_destroy_cq(cq), 0);
	assert_int_equal(droce_dealloc_pd(pd), 0);
}

/* ---- queue pairs: the state machine ------------------------------------------- */

static void
test_rc_path_to_rts(void **state)
{
	struct qp_fixture f;
	struct droce_qp_attr q;
	struct droce_qp_init_attr qi;

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_RC, 8);
	to_rts(f.qp);
	assert_int_equal(droce_query_qp(f.qp, &q, 0, &qi), 0);
	assert_int_equal(q.qp_state, DROCE_QPS_RTS);
	assert_int_equal(q.dest_qp_num, 0x11);
	assert_int_equal(q.rq_psn, 0x123456);
	assert_int_equal(q.sq_psn, 0x654321);
	assert_int_equal(q.min_rnr_timer, 12);
	assert_int_equal(q.timeout, 14);
	assert_int_equal(qi.cap.max_send_wr, 8);
	/* RTS -> RTS may change the access flags, not the PSNs. */
	q = (struct droce_qp_attr){ .qp_state = DROCE_QPS_RTS,
				    .qp_access_flags = DROCE_ACCESS_REMOTE_READ };
	assert_int_equal(droce_modify_qp(f.qp, &q, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS), 0);
	log_clear();
	assert_int_equal(droce_modify_qp(f.qp, &q, DROCE_QP_STATE | DROCE_QP_SQ_PSN), -EINVAL);
	log_says("RTS -> RTS does not take SQ_PSN");
	/* SQD and back. */
	q.qp_state = DROCE_QPS_SQD;
	assert_int_equal(droce_modify_qp(f.qp, &q, DROCE_QP_STATE), 0);
	q.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f.qp, &q, DROCE_QP_STATE), 0);
	/* Any state to ERR, ERR only to RESET (or ERR). */
	q.qp_state = DROCE_QPS_ERR;
	assert_int_equal(droce_modify_qp(f.qp, &q, DROCE_QP_STATE), 0);
	q.qp_state = DROCE_QPS_RTS;
	log_clear();
	assert_int_equal(droce_modify_qp(f.qp, &q, DROCE_QP_STATE), -EINVAL);
	log_says("ERR -> RTS is not a transition");
	q.qp_state = DROCE_QPS_RESET;
	assert_int_equal(droce_modify_qp(f.qp, &q, DROCE_QP_STATE), 0);
	assert_int_equal(droce_query_qp(f.qp, &q, 0, NULL), 0);
	assert_int_equal(q.qp_state, DROCE_QPS_RESET);
	assert_int_equal(q.dest_qp_num, 0);
	/* And all the way again. */
	to_rts(f.qp);
	qp_fixture_down(&f);
}

static void
test_transitions_refused(void **state)
{
	struct qp_fixture f;
	struct droce_qp_attr a = rtr_attr();

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_RC, 8);
	log_clear();
	/* Skipping a state. */
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f.qp, &a, DROCE_QP_STATE), -EINVAL);
	log_says("RESET -> RTS is not a transition");
	/* RESET -> INIT without its required attributes. */
	a.qp_state = DROCE_QPS_INIT;
	assert_int_equal(droce_modify_qp(f.qp, &a, DROCE_QP_STATE | DROCE_QP_PORT), -EINVAL);
	log_says("RESET -> INIT requires ACCESS_FLAGS");
	assert_int_equal(to_init(f.qp), 0);
	/* INIT -> RTR: each required attribute, one at a time missing. */
	for (int bit = 1; bit < 21; bit++) {
		int mask = RTR_MASK & ~(1 << bit);

		if (!(RTR_MASK & (1 << bit)))
			continue;
		a = rtr_attr();
		assert_int_equal(droce_modify_qp(f.qp, &a, mask), -EINVAL);
		assert_int_equal(droce_qp_state(f.qp), DROCE_QPS_INIT);
	}
	log_says("INIT -> RTR requires MIN_RNR_TIMER");
	/* ... an attribute it does not take. */
	a = rtr_attr();
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK | DROCE_QP_SQ_PSN), -EINVAL);
	log_says("INIT -> RTR does not take SQ_PSN");
	/* ... what droce has not. */
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK | DROCE_QP_ALT_PATH), -ENOTSUP);
	log_says("alternate paths");
	/* ... a stated current state that is not the QP's. */
	a.cur_qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(f.qp, &a, DROCE_QP_STATE | DROCE_QP_CUR_STATE |
					 DROCE_QP_ACCESS_FLAGS), -EINVAL);
	assert_int_equal(droce_modify_qp(f.qp, &a, 1 << 25), -EINVAL);
	log_says("unknown attribute bits");
	assert_int_equal(droce_qp_state(f.qp), DROCE_QPS_INIT);
	qp_fixture_down(&f);
}

/* Each attribute's range: refused, logged, nothing changed. */
static void
test_attribute_ranges(void **state)
{
	struct qp_fixture f;
	struct droce_qp_attr a;

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_RC, 8);
	assert_int_equal(to_init(f.qp), 0);
	log_clear();
	a = rtr_attr();
	a.path_mtu = (enum droce_mtu)6;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK), -EINVAL);
	log_says("path MTU 6; allowed: 1 (256) .. 5 (4096)");
	a = rtr_attr();
	a.path_mtu = DROCE_MTU_2048;    /* the port's IP MTU is 1500 */
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK), -EINVAL);
	log_says("path MTU 2048 needs an IP MTU of 2128; the port's is 1500");
	a = rtr_attr();
	a.rq_psn = 1u << 24;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK), -EINVAL);
	log_says("rq_psn 0x1000000");
	a = rtr_attr();
	a.dest_qp_num = 1u << 24;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK), -EINVAL);
	log_says("dest_qp_num 0x1000000");
	a = rtr_attr();
	a.min_rnr_timer = 32;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK), -EINVAL);
	log_says("min_rnr_timer 32");
	a = rtr_attr();
	a.max_dest_rd_atomic = RC_MAX_RD_ATOMIC + 1;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK), -EINVAL);
	log_says("max_dest_rd_atomic 129");
	a = rtr_attr();
	a.ah_attr.dgid[0] = 0xfe;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK), -EINVAL);
	log_says("not IPv4-mapped");
	assert_int_equal(droce_qp_state(f.qp), DROCE_QPS_INIT);
	a = rtr_attr();
	assert_int_equal(droce_modify_qp(f.qp, &a, RTR_MASK), 0);
	a = rts_attr();
	a.timeout = 32;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTS_MASK), -EINVAL);
	log_says("timeout 32; allowed: 0..31");
	a = rts_attr();
	a.retry_cnt = 8;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTS_MASK), -EINVAL);
	log_says("retry_cnt 8; allowed: 0..7");
	a = rts_attr();
	a.rnr_retry = 8;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTS_MASK), -EINVAL);
	log_says("rnr_retry 8");
	a = rts_attr();
	a.sq_psn = 0xffffffff;
	assert_int_equal(droce_modify_qp(f.qp, &a, RTS_MASK), -EINVAL);
	log_says("sq_psn 0xffffffff");
	assert_int_equal(droce_qp_state(f.qp), DROCE_QPS_RTR);
	qp_fixture_down(&f);
}

static void
test_uc_needs_less(void **state)
{
	struct qp_fixture f;
	struct droce_qp_attr a = rtr_attr();

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_UC, 8);
	assert_int_equal(to_init(f.qp), 0);
	assert_int_equal(droce_modify_qp(f.qp, &a, DROCE_QP_STATE | DROCE_QP_AV |
					 DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN |
					 DROCE_QP_RQ_PSN), 0);
	/* A UC QP has no RNR timer or read resources to set. */
	a = rts_attr();
	log_clear();
	assert_int_equal(droce_modify_qp(f.qp, &a, RTS_MASK), -EINVAL);
	log_says("RTR -> RTS does not take TIMEOUT");
	assert_int_equal(droce_modify_qp(f.qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN), 0);
	qp_fixture_down(&f);
}

/* ---- posting ------------------------------------------------------------------- */

static void
test_post_send_checks(void **state)
{
	struct qp_fixture f;
	struct droce_sge sge[3];
	struct droce_send_wr wr[3], *bad = NULL;

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_RC, 4);
	sge[0] = (struct droce_sge){ (uintptr_t)f.buf, 64, f.mr->lkey };
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 3; i++)
		wr[i] = (struct droce_send_wr){ .wr_id = 100 + (uint64_t)i, .sg_list = sge,
					       .num_sge = 1, .opcode = DROCE_WR_SEND,
					       .next = i < 2 ? &wr[i + 1] : NULL };
	log_clear();
	/* Not in RTS yet. */
	assert_int_equal(droce_post_send(f.qp, wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr[0]);
	log_says("is in RESET; sends are posted in RTS");
	to_rts(f.qp);
	/* The second of three is bad: the first is queued, bad_wr is it. */
	wr[1].num_sge = 3;
	assert_int_equal(droce_post_send(f.qp, wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr[1]);
	log_says("wr_id 101: num_sge 3; allowed: 0..2");
	assert_int_equal(atomic_load(&f.qp->sq.producer), 1);
	wr[1].num_sge = 1;
	/* A key that does not cover the range. */
	sge[1] = (struct droce_sge){ (uintptr_t)f.buf + 4090, 64, f.mr->lkey };
	wr[2].sg_list = &sge[1];
	assert_int_equal(droce_post_send(f.qp, &wr[2], &bad), -EINVAL);
	log_says("is not inside a region of the QP's PD");
	/* A READ lands in a region this side may write. */
	sge[1] = (struct droce_sge){ (uintptr_t)f.ro_buf, 64, f.ro_mr->lkey };
	wr[2].opcode = DROCE_WR_RDMA_READ;
	assert_int_equal(droce_post_send(f.qp, &wr[2], &bad), -EINVAL);
	log_says("with local write");
	/* Atomics: one 8-byte SGE, an aligned target. */
	sge[1] = (struct droce_sge){ (uintptr_t)f.buf, 8, f.mr->lkey };
	wr[2].opcode = DROCE_WR_ATOMIC_FETCH_AND_ADD;
	wr[2].wr.atomic.remote_addr = 0x1004;
	assert_int_equal(droce_post_send(f.qp, &wr[2], &bad), -EINVAL);
	log_says("is not 8-byte aligned");
	/* Inline: within max_inline_data, and only for SEND and WRITE. */
	sge[1] = (struct droce_sge){ (uintptr_t)f.buf, 65, 0 };
	wr[2].opcode = DROCE_WR_SEND;
	wr[2].send_flags = DROCE_SEND_INLINE;
	assert_int_equal(droce_post_send(f.qp, &wr[2], &bad), -EINVAL);
	log_says("65 inline bytes; allowed: up to 64");
	/* More than 2^31 bytes in one message. */
	{
		struct droce_mr *big = droce_reg_mr(f.pd, f.buf, 3ull << 30, DROCE_ACCESS_LOCAL_WRITE);
		struct droce_sge two[2] = { { (uintptr_t)f.buf, 1u << 30, big->lkey },
					    { (uintptr_t)f.buf, (1u << 30) + 1, big->lkey } };

		wr[2] = (struct droce_send_wr){ .wr_id = 7, .sg_list = two, .num_sge = 2,
					        .opcode = DROCE_WR_RDMA_WRITE };
		assert_int_equal(droce_post_send(f.qp, &wr[2], &bad), -EINVAL);
		log_says("2147483649 bytes; allowed: up to 2147483648");
		assert_int_equal(droce_dereg_mr(big), 0);
	}
	/* Unknown opcode. */
	wr[2] = (struct droce_send_wr){ .wr_id = 8, .opcode = (enum droce_wr_opcode)42 };
	assert_int_equal(droce_post_send(f.qp, &wr[2], &bad), -EINVAL);
	log_says("opcode 42");
	/* Full: 1 queued + 3 more fit in 4; the fifth is refused. */
	wr[0].next = &wr[1];
	wr[1].next = NULL;
	assert_int_equal(droce_post_send(f.qp, wr, &bad), 0);
	wr[2] = wr[0];
	wr[2].next = NULL;
	assert_int_equal(droce_post_send(f.qp, &wr[2], &bad), 0);
	assert_int_equal(droce_post_send(f.qp, &wr[2], &bad), -ENOMEM);
	log_says("the send queue holds its 4 requests");
	qp_fixture_down(&f);
}

static void
test_uc_has_no_read(void **state)
{
	struct qp_fixture f;
	struct droce_sge sge;
	struct droce_send_wr wr, *bad;
	struct droce_qp_attr a = rtr_attr();

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_UC, 4);
	assert_int_equal(to_init(f.qp), 0);
	assert_int_equal(droce_modify_qp(f.qp, &a, DROCE_QP_STATE | DROCE_QP_AV |
					 DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN |
					 DROCE_QP_RQ_PSN), 0);
	a = rts_attr();
	assert_int_equal(droce_modify_qp(f.qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN), 0);
	sge = (struct droce_sge){ (uintptr_t)f.buf, 64, f.mr->lkey };
	wr = (struct droce_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				     .opcode = DROCE_WR_RDMA_READ };
	log_clear();
	assert_int_equal(droce_post_send(f.qp, &wr, &bad), -EINVAL);
	log_says("a UC QP has no RDMA READ or atomics");
	qp_fixture_down(&f);
}

static void
test_post_recv_checks(void **state)
{
	struct qp_fixture f;
	struct droce_sge sge;
	struct droce_recv_wr wr, *bad;

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_RC, 4);
	sge = (struct droce_sge){ (uintptr_t)f.buf, 128, f.mr->lkey };
	wr = (struct droce_recv_wr){ .wr_id = 9, .sg_list = &sge, .num_sge = 1 };
	log_clear();
	assert_int_equal(droce_post_recv(f.qp, &wr, &bad), -EINVAL);
	log_says("is in RESET; receives are posted from INIT on");
	assert_int_equal(to_init(f.qp), 0);
	assert_int_equal(droce_post_recv(f.qp, &wr, &bad), 0);
	/* A receive lands only in a region this side may write. */
	sge = (struct droce_sge){ (uintptr_t)f.ro_buf, 128, f.ro_mr->lkey };
	assert_int_equal(droce_post_recv(f.qp, &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	log_says("with local write");
	qp_fixture_down(&f);
}

/* ERR completes every queued request with a flush error, in order, once;
 * a request posted in ERR is flushed at once.
 */
static void
test_flush_in_err(void **state)
{
	struct qp_fixture f;
	struct droce_sge sge = { 0, 16, 0 };
	struct droce_send_wr swr[3], *sbad;
	struct droce_recv_wr rwr, *rbad;
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_ERR };
	struct droce_wc wc[8];

	(void)state;
	qp_fixture_up(&f, DROCE_QPT_RC, 8);
	sge.addr = (uintptr_t)f.buf;
	sge.lkey = f.mr->lkey;
	to_rts(f.qp);
	for (int i = 0; i < 3; i++)
		swr[i] = (struct droce_send_wr){ .wr_id = 10 + (uint64_t)i, .sg_list = &sge,
						.num_sge = 1,
						.opcode = i == 1 ? DROCE_WR_RDMA_READ : DROCE_WR_SEND,
						.next = i < 2 ? &swr[i + 1] : NULL };
	rwr = (struct droce_recv_wr){ .wr_id = 20, .sg_list = &sge, .num_sge = 1 };
	assert_int_equal(droce_post_send(f.qp, swr, &sbad), 0);
	assert_int_equal(droce_post_recv(f.qp, &rwr, &rbad), 0);
	assert_int_equal(droce_req_notify_cq(f.rcq, 0), 0);
	assert_int_equal(droce_modify_qp(f.qp, &a, DROCE_QP_STATE), 0);
	assert_true(fd_readable(droce_cq_event_fd(f.rcq)));
	assert_int_equal(droce_poll_cq(f.scq, 8, wc), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 10 + (uint64_t)i);
		assert_int_equal(wc[i].status, DROCE_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].qp_num, droce_qp_num(f.qp));
	}
	assert_int_equal(wc[1].opcode, DROCE_WC_RDMA_READ);
	assert_int_equal(droce_poll_cq(f.rcq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 20);
	assert_int_equal(wc[0].opcode, DROCE_WC_RECV);
	assert_int_equal(droce_poll_cq(f.scq, 8, wc), 0);
	/* Posted in ERR: flushed at once. */
	swr[2].wr_id = 99;
	assert_int_equal(droce_post_send(f.qp, &swr[2], &sbad), 0);
	assert_int_equal(droce_poll_cq(f.scq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 99);
	assert_int_equal(wc[0].status, DROCE_WC_WR_FLUSH_ERR);
	qp_fixture_down(&f);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_and_gids),
		cmocka_unit_test(test_open_owners),
		cmocka_unit_test(test_close_busy),
		cmocka_unit_test(test_mr_registration_errors),
		cmocka_unit_test(test_mr_keys_bounds_and_access),
		cmocka_unit_test(test_mr_keys_not_guessable),
		cmocka_unit_test(test_mr_gpu),
		cmocka_unit_test(test_cq_limits_and_event),
		cmocka_unit_test(test_completions_staged),
		cmocka_unit_test(test_cqs_past_the_memzone_limit),
		cmocka_unit_test(test_create_qp_checks),
		cmocka_unit_test(test_rc_path_to_rts),
		cmocka_unit_test(test_transitions_refused),
		cmocka_unit_test(test_attribute_ranges),
		cmocka_unit_test(test_uc_needs_less),
		cmocka_unit_test(test_post_send_checks),
		cmocka_unit_test(test_uc_has_no_read),
		cmocka_unit_test(test_post_recv_checks),
		cmocka_unit_test(test_flush_in_err),
	};
	int ret;

	(void)argc;
	if (droce_test_eal_init_stepped(argv[0], "rc", "256") != 0)
		return 1;
	ret = cmocka_run_group_tests(tests, setup, teardown);
	droce_test_eal_cleanup();
	return ret;
}
