/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Checks of the hcom4db API that test_hcom (TCP) and test_hcom_rdma
 * (RDMA) run alike against a server of theirs, and their helpers.
 * Include after cmocka.h and hcom4db.h.
 */

#ifndef DROCE_TEST_HCOM_CHECKS_H
#define DROCE_TEST_HCOM_CHECKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait up to @p seconds for *v to reach @p want. */
static inline bool
wait_for(atomic_int *v, int want, double seconds)
{
	double until = now_s() + seconds;

	while (atomic_load(v) < want) {
		if (now_s() > until)
			return false;
		usleep(1000);
	}
	return true;
}

/* What done callbacks said. */
struct done_log {
	atomic_int calls, ok, bad;
	OckRpcStatus last;
};

static inline void
count_done(OckRpcStatus status, void *arg)
{
	struct done_log *l = arg;

	l->last = status;
	if (status == OCK_RPC_OK)
		atomic_fetch_add(&l->ok, 1);
	else
		atomic_fetch_add(&l->bad, 1);
	atomic_fetch_add(&l->calls, 1);
}

/* 1..8 pieces to service @p echo (which answers with the request) arrive
 * as one message; the answer fills the buffers in turn.
 */
static inline void
check_call_with_params(OckRpcClient c, uint16_t echo)
{
	uint8_t a[10], b[20], d[30], out1[25], out2[40];
	OckRpcMessage req[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { d, sizeof(d) } };
	OckRpcMessage rsp[2] = { { out1, sizeof(out1) }, { out2, sizeof(out2) } };
	OckRpcClientCallParams p = {
		.client = c, .msgId = echo, .reqIov = { 3, req }, .rspIov = { 2, rsp },
	};
	OckRpcMessage nine[9];

	memset(a, 1, sizeof(a));
	memset(b, 2, sizeof(b));
	memset(d, 3, sizeof(d));
	assert_int_equal(OckRpcClientCallWithParam(&p), OCK_RPC_OK);
	assert_int_equal(rsp[0].len, 25);
	assert_int_equal(rsp[1].len, 35);
	assert_int_equal(out1[9], 1);
	assert_int_equal(out1[10], 2);
	assert_int_equal(out1[24], 2);
	assert_int_equal(out2[4], 2);
	assert_int_equal(out2[5], 3);
	assert_int_equal(out2[34], 3);
	for (int i = 0; i < 9; i++)
		nine[i] = (OckRpcMessage){ a, 1 };
	p.reqIov = (OckRpcMessageIov){ 9, nine };
	assert_int_equal(OckRpcClientCallWithParam(&p), OCK_RPC_ERR_INVALID_PARAM);
	p.reqIov = (OckRpcMessageIov){ 0, nine };
	assert_int_equal(OckRpcClientCallWithParam(&p), OCK_RPC_ERR_INVALID_PARAM);
}

/* Millisecond timeouts against service @p silent (which never answers):
 * 150 ms sync and async (its callback hears of it once), 0 at once; then
 * @p c takes @p restore_ms and a call to @p echo works.
 */
static inline void
check_timeouts(OckRpcClient c, uint16_t silent, uint16_t echo, int64_t restore_ms)
{
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	uint8_t buf[16];
	OckRpcMessage q = { "q", 1 }, r = { buf, sizeof(buf) };
	double t0, took;

	OckRpcClientSetTimeout(c, 150);
	t0 = now_s();
	assert_int_equal(OckRpcClientCall(c, silent, &q, &r, NULL), OCK_RPC_ERR_UCP_TIMEOUT);
	took = now_s() - t0;
	print_message("  a sync call to a silent service with 150 ms: %.0f ms\n", took * 1000);
	assert_true(took >= 0.149 && took < 2.0);
	t0 = now_s();
	assert_int_equal(OckRpcClientCall(c, silent, &q, &r, &done), OCK_RPC_OK);
	assert_true(wait_for(&log.calls, 1, 5));
	took = now_s() - t0;
	print_message("  an async call to a silent service with 150 ms: %.0f ms\n", took * 1000);
	assert_int_equal(log.last, OCK_RPC_ERR_UCP_TIMEOUT);
	assert_true(took >= 0.149 && took < 2.0);
	/* 0: what cannot be done at once fails at once. */
	OckRpcClientSetTimeout(c, 0);
	assert_int_equal(OckRpcClientCall(c, silent, &q, &r, NULL), OCK_RPC_ERR_UCP_TIMEOUT);
	OckRpcClientSetTimeout(c, restore_ms);
	r.len = sizeof(buf);
	assert_int_equal(OckRpcClientCall(c, echo, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, 1);
	usleep(50000);
	assert_int_equal(atomic_load(&log.calls), 1);
}

/* @p c, connected with a segment count of 3, takes three calls at once
 * and refuses a fourth (NO_MEMORY); once they end by their deadline it
 * takes calls again (@p restore_ms: its timeout then). It is disconnected.
 */
static inline void
check_full_session(OckRpcClient c, uint16_t silent, uint16_t echo, int64_t restore_ms)
{
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	OckRpcMessage q = { "q", 1 }, r = { NULL, 0 };

	OckRpcClientSetTimeout(c, 300);
	for (int i = 0; i < 3; i++)
		assert_int_equal(OckRpcClientCall(c, silent, &q, &r, &done), OCK_RPC_OK);
	assert_int_equal(OckRpcClientCall(c, silent, &q, &r, &done), OCK_RPC_ERR_NO_MEMORY);
	assert_true(wait_for(&log.calls, 3, 20));
	assert_int_equal(log.last, OCK_RPC_ERR_UCP_TIMEOUT);
	OckRpcClientSetTimeout(c, restore_ms);
	r = (OckRpcMessage){ NULL, 0 };
	assert_int_equal(OckRpcClientCall(c, echo, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, 1);
	free(r.data);
	OckRpcClientDisconnect(c);
}

#endif
