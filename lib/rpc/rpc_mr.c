/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * hcom4db's memory regions and one-sided operations. A region is memory
 * the library allocated or the caller assigned, with a key. Regions made
 * while the process's droce stack runs are registered with lib/rc on its
 * first port at once, and the key is that registration's rkey, so that a
 * peer given the key can READ and WRITE the region; any region is
 * registered on a session's port when a rendezvous first needs it there.
 * One-sided READs and WRITEs go on the session's QP from its worker.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_random.h>

#include "rpc_private.h"
#include "rpc_rdma.h"

#define MR_ALIGN 4096

struct rpc_mr {
	LIST_ENTRY(rpc_mr) link;
	uintptr_t addr;
	uint64_t size;
	uint32_t key;
	bool owned;             /* allocated here: freed with it */
	struct droce_mr *droce[DROCE_MAX_PORTS]; /* its registration on each port */
};

/* Every region, for the lookups of rendezvous by key. */
static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, rpc_mr) regions = LIST_HEAD_INITIALIZER(regions);

static int
mr_new(uintptr_t addr, uint64_t size, bool owned, OckRpcMemoryRegion *out)
{
	struct rpc_mr *mr = calloc(1, sizeof(*mr));

	if (mr == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	mr->addr = addr;
	mr->size = size;
	mr->owned = owned;
	if (rpc_rdma_up()) {
		mr->droce[0] = rpc_rdma_reg(0, (void *)addr, size);
		if (mr->droce[0] == NULL) {
			free(mr);
			return OCK_RPC_ERR_NO_MEMORY;
		}
		mr->key = mr->droce[0]->rkey;
	} else {
		do
			mr->key = (uint32_t)rte_rand();
		while (mr->key == 0);
	}
	pthread_mutex_lock(&regions_lock);
	LIST_INSERT_HEAD(&regions, mr, link);
	pthread_mutex_unlock(&regions_lock);
	*out = (OckRpcMemoryRegion)(uintptr_t)mr;
	return OCK_RPC_OK;
}

static struct rpc_mr *
region_find(uint32_t key, uintptr_t addr, uint64_t len)
{
	struct rpc_mr *mr;

	LIST_FOREACH(mr, &regions, link)
		if (mr->key == key && addr >= mr->addr && len <= mr->size &&
		    addr - mr->addr <= mr->size - len)
			return mr;
	return NULL;
}

struct droce_mr *
rpc_mr_droce(uint32_t key, uintptr_t addr, uint64_t len, uint16_t port)
{
	struct droce_mr *dmr = NULL, *made;
	struct rpc_mr *mr;
	uintptr_t base;
	uint64_t size;

	pthread_mutex_lock(&regions_lock);
	mr = region_find(key, addr, len);
	if (mr != NULL) {
		dmr = mr->droce[port];
		base = mr->addr;
		size = mr->size;
	}
	pthread_mutex_unlock(&regions_lock);
	if (mr == NULL || dmr != NULL)
		return dmr;
	/* Registered outside the lock: that waits for the control lcore,
	 * whose handlers may want the lock meanwhile. A region destroyed or
	 * registered by another caller meanwhile keeps what it has.
	 */
	made = rpc_rdma_reg(port, (void *)base, size);
	if (made == NULL)
		return NULL;
	pthread_mutex_lock(&regions_lock);
	if (region_find(key, addr, len) == mr) {
		if (mr->droce[port] == NULL)
			mr->droce[port] = made;
		dmr = mr->droce[port];
	}
	pthread_mutex_unlock(&regions_lock);
	if (dmr != made)
		rpc_rdma_dereg(made);
	return dmr;
}

/* What a region's info can say: a size of 1 byte to 4 GiB - 1. */
static bool
size_ok(uint64_t size)
{
	if (size != 0 && size <= UINT32_MAX)
		return true;
	RPC_LOG(ERR, "memory region of %" PRIu64 " bytes: 1..%" PRIu32, size, UINT32_MAX);
	return false;
}

int
OckRpcRegisterMemoryRegion(OckRpcServer server, uint64_t size, OckRpcMemoryRegion *mr)
{
	void *p;
	int ret;

	if (server == 0 || mr == NULL || !size_ok(size))
		return OCK_RPC_ERR_INVALID_PARAM;
	if (posix_memalign(&p, MR_ALIGN, size) != 0)
		return OCK_RPC_ERR_NO_MEMORY;
	ret = mr_new((uintptr_t)p, size, true, mr);
	if (ret != OCK_RPC_OK)
		free(p);
	return ret;
}

int
OckRpcRegisterAssignMemoryRegion(OckRpcServer server, uintptr_t address, uint64_t size,
				 OckRpcMemoryRegion *mr)
{
	if (server == 0 || mr == NULL || address == 0 || !size_ok(size))
		return OCK_RPC_ERR_INVALID_PARAM;
	return mr_new(address, size, false, mr);
}

int
OckRpcGetMemoryRegionInfo(OckRpcMemoryRegion mr, OckRpcMemoryRegionInfo *info)
{
	const struct rpc_mr *m = (const struct rpc_mr *)mr;

	if (m == NULL || info == NULL)
		return OCK_RPC_ERR_INVALID_PARAM;
	*info = (OckRpcMemoryRegionInfo){ .lAddress = m->addr, .lKey = m->key,
					  .size = (uint32_t)m->size };
	return OCK_RPC_OK;
}

void
OckRpcDestroyMemoryRegion(OckRpcServer server, OckRpcMemoryRegion mr)
{
	struct rpc_mr *m = (struct rpc_mr *)mr;

	(void)server;
	if (m == NULL)
		return;
	pthread_mutex_lock(&regions_lock);
	LIST_REMOVE(m, link);
	pthread_mutex_unlock(&regions_lock);
	for (unsigned int p = 0; p < DROCE_MAX_PORTS; p++)
		rpc_rdma_dereg(m->droce[p]);
	if (m->owned)
		free((void *)m->addr);
	free(m);
}

/* ---- one-sided operations ------------------------------------------------------- */

/* hcom's SGL takes 16 pieces at most. */
#define SGL_MAX 16

enum { ONE_SIDED_RUNNING, ONE_SIDED_OK, ONE_SIDED_FAILED };

struct one_sided;

struct one_sided_piece {
	struct rpc_rdma_op op;
	struct one_sided *os;
};

/* One call of OckRpcRead/Write(Sgl): its pieces go on the session's QP
 * from its worker; the last completion ends it.
 */
struct one_sided {
	struct rpc_task task;
	struct rpc_session *s;
	unsigned int count, pending;
	bool failed;
	OckRpcCallDone cb;              /* asynchronous: runs on the worker */
	atomic_int state;               /* synchronous: the caller waits on it */
	struct one_sided_piece piece[SGL_MAX];
};

static void
one_sided_end(struct one_sided *os)
{
	struct rpc_session *s = os->s;

	if (os->cb.cb != NULL) {
		os->cb.cb(os->failed ? OCK_RPC_ERR : OCK_RPC_OK, os->cb.arg);
		free(os);
	} else {
		/* The caller frees it once it has seen the state. */
		atomic_store_explicit(&os->state, os->failed ? ONE_SIDED_FAILED : ONE_SIDED_OK,
				      memory_order_release);
		rpc_wake_state(&os->state);
	}
	rpc_session_unref(s);
}

static void
piece_done(struct rpc_rdma_op *op, enum droce_wc_status status)
{
	struct one_sided *os = container_of(op, struct one_sided_piece, op)->os;

	if (status == DROCE_WC_SUCCESS && op->opcode == DROCE_WR_RDMA_READ)
		rpc_session_peer_alive(os->s);
	if (status != DROCE_WC_SUCCESS && !os->failed) {
		os->failed = true;
		RPC_LOG(NOTICE, "session with %s: a one-sided %s of %" PRIu32 " bytes failed: %s",
			os->s->peer, op->opcode == DROCE_WR_RDMA_READ ? "READ" : "WRITE",
			op->local.length, droce_wc_status_str(status));
	}
	if (--os->pending == 0)
		one_sided_end(os);
}

static void
one_sided_task(struct rpc_task *t)
{
	struct one_sided *os = container_of(t, struct one_sided, task);

	/* The guard: pieces that fail at once must not end it mid-loop. */
	os->pending = os->count + 1;
	for (unsigned int i = 0; i < os->count; i++)
		rpc_rdma_post(os->s, &os->piece[i].op);
	if (--os->pending == 0)
		one_sided_end(os);
}

/* Each piece's local memory in a region with its key, on the session's
 * droce port; the remote address and key are the peer's region's.
 */
static int
one_sided(OckRpcClient client, const OckRpcRequest *req, unsigned int count,
	  enum droce_wr_opcode opcode, const OckRpcCallDone *cb, const char *what)
{
	struct rpc_session *s = (struct rpc_session *)(uintptr_t)client;
	struct one_sided *os;
	int state;

	if (client == 0 || req == NULL || count == 0 || count > SGL_MAX ||
	    (cb != NULL && cb->cb == NULL)) {
		RPC_LOG(ERR, "%s: %s", what, client == 0 ? "no client" : req == NULL ? "no request"
			: cb != NULL && cb->cb == NULL ? "a done without a callback"
			: "1..16 pieces");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (s->ops != &rpc_rdma_ops) {
		RPC_LOG(ERR, "%s: one-sided operations need %s=RDMA", what,
			OCK_RPC_STR_COMMUNICATION_TYPE);
		return OCK_RPC_ERR_RDMA_NOT_ENABLE;
	}
	if (cb == NULL && rpc_worker_would_wait_for(s->w)) {
		RPC_LOG(ERR, "%s: a synchronous one from where the session runs (its own worker, or droce's control lcore) would wait for itself",
			what);
		return OCK_RPC_ERR;
	}
	if (atomic_load(&s->ending))
		return OCK_RPC_ERR_CONN_BROKEN;
	os = calloc(1, sizeof(*os));
	if (os == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	for (unsigned int i = 0; i < count; i++) {
		struct droce_mr *mr = req[i].size == 0 ? NULL
				      : rpc_mr_droce(req[i].lKey, req[i].lAddress, req[i].size,
						     rpc_rdma_port(s));

		if (mr == NULL) {
			RPC_LOG(ERR, "%s: piece %u (%" PRIu32 " bytes at 0x%" PRIxPTR ", key 0x%" PRIx32
				") is not in a memory region with that key", what, i, req[i].size,
				req[i].lAddress, req[i].lKey);
			free(os);
			return OCK_RPC_ERR_INVALID_PARAM;
		}
		os->piece[i] = (struct one_sided_piece){
			.os = os,
			.op = { .done = piece_done, .opcode = opcode,
				.local = { .addr = req[i].lAddress, .length = req[i].size,
					   .lkey = mr->lkey },
				.remote = req[i].rAddress, .rkey = req[i].rKey },
		};
	}
	os->count = count;
	os->s = s;
	if (cb != NULL)
		os->cb = *cb;
	atomic_init(&os->state, ONE_SIDED_RUNNING);
	rpc_session_ref(s);
	os->task.run = one_sided_task;
	rpc_worker_push(s->w, &os->task);
	if (cb != NULL)
		return OCK_RPC_OK;
	state = rpc_wait_state(&os->state, 1u << ONE_SIDED_OK | 1u << ONE_SIDED_FAILED, 0);
	free(os);
	return state == ONE_SIDED_OK ? OCK_RPC_OK : OCK_RPC_ERR;
}

int
OckRpcRead(OckRpcClient client, OckRpcRequest *req, OckRpcCallDone *cb)
{
	return one_sided(client, req, 1, DROCE_WR_RDMA_READ, cb, "read");
}

int
OckRpcReadSgl(OckRpcClient client, OckRpcSglRequest *req, OckRpcCallDone *cb)
{
	return one_sided(client, req != NULL ? req->iov : NULL, req != NULL ? req->iovCount : 0,
			 DROCE_WR_RDMA_READ, cb, "read SGL");
}

int
OckRpcWrite(OckRpcClient client, OckRpcRequest *req, OckRpcCallDone *cb)
{
	return one_sided(client, req, 1, DROCE_WR_RDMA_WRITE, cb, "write");
}

int
OckRpcWriteSgl(OckRpcClient client, OckRpcSglRequest *req, OckRpcCallDone *cb)
{
	return one_sided(client, req != NULL ? req->iov : NULL, req != NULL ? req->iovCount : 0,
			 DROCE_WR_RDMA_WRITE, cb, "write SGL");
}
