/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * droce as real hcom4db users take it: nothing linked, the library
 * dlopen()ed as "$OCK_RPC_LIB_PATH/libhcom4db.so" and every function of
 * hcom4db.h (and openGauss's Hcom4dbSetLogFunc) looked up by name, then
 * a server and a client doing calls through what was found. The header
 * gives the types only.
 */

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "hcom4db.h"
#include "private_loopback.h"

#define HCOM_FUNCTIONS(X) \
	X(OckRpcServerCtxBuilderThreadLocal) X(OckRpcServerCtxCleanupThreadLocal) \
	X(OckRpcSetExternalLogger) X(OckRpcServerCreateWithCfg) X(OckRpcGetOobIpAndPort) \
	X(OckRpcServerAddService) X(OckRpcServerAddRndvService) X(OckRpcServerStart) \
	X(OckRpcServerDestroy) X(OckRpcServerReply) X(OckRpcServerReplyRndv) \
	X(OckRpcGetClient) X(OckRpcGetRndvClient) X(OckRpcCloneCtx) X(OckRpcDeCloneCtx) \
	X(OckRpcServerCleanupCtx) X(OckRpcServerCleanupRndvCtx) X(OckRpcClientConnectWithCfg) \
	X(OckRpcClientDisconnect) X(OckRpcClientDisconnectBreakHandler) X(OckRpcSetUpCtx) \
	X(OckRpcGetUpCtx) X(OckRpcClientCall) X(OckRpcClientCallWithParam) \
	X(OckRpcClientCallRndv) X(OckRpcClientCallRndvIov) X(OckRpcRegisterMemoryRegion) \
	X(OckRpcRegisterAssignMemoryRegion) X(OckRpcGetMemoryRegionInfo) \
	X(OckRpcDestroyMemoryRegion) X(OckRpcRead) X(OckRpcReadSgl) X(OckRpcWrite) \
	X(OckRpcWriteSgl) X(OckRpcClientSetTimeout) X(OckRpcMemoryAllocatorCreate) \
	X(OckRpcMemoryAllocatorDestroy) X(OckRpcMemoryAllocatorSetMrKey) \
	X(OckRpcMemoryAllocatorMemOffset) X(OckRpcMemoryAllocatorFreeSize) \
	X(OckRpcMemoryAllocatorAllocate) X(OckRpcMemoryAllocatorFree) X(OckRpcDisableSecureHmac)

/* Each function as a pointer of its own type, found by its name. */
#define POINTER(name) __typeof__(name) *name;
static struct {
	HCOM_FUNCTIONS(POINTER)
	void (*Hcom4dbSetLogFunc)(OckRpcLogHandler h);
} F;

static void *lib;

static void
load(void)
{
	const char *dir = getenv("OCK_RPC_LIB_PATH");
	char path[4096];
	unsigned int n = 0;

	if (dir == NULL)
		fail_msg("OCK_RPC_LIB_PATH is not set");
	snprintf(path, sizeof(path), "%s/libhcom4db.so", dir);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL)
		fail_msg("dlopen %s: %s", path, dlerror());
#define FIND(name) \
	*(void **)&F.name = dlsym(lib, #name); \
	if (F.name == NULL) \
		fail_msg("%s is not in %s", #name, path); \
	n++;
	HCOM_FUNCTIONS(FIND)
	FIND(Hcom4dbSetLogFunc)
	print_message("  %u functions found in %s\n", n, path);
}

static void
echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	F.OckRpcServerReply(ctx, 7, &msg, NULL);
}

static atomic_int done_calls;

static void
call_done(OckRpcStatus status, void *arg)
{
	(void)arg;
	if (status == OCK_RPC_OK)
		atomic_fetch_add(&done_calls, 1);
}

static atomic_int log_lines;

static void
count_log(int level, const char *msg)
{
	(void)level;
	(void)msg;
	atomic_fetch_add(&log_lines, 1);
}

static void
test_calls_through_dlopen(void **state)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, "dl" }, { OCK_RPC_STR_COMMUNICATION_TYPE, "TCP" },
		{ OCK_RPC_STR_ENABLE_TLS, "no" }, { OCK_RPC_STR_SERVER_PORT_RANGE, "22000-22999" },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { 4, pairs } };
	OckRpcService svc = { 7, echo };
	char req[100] = "through dlopen", rsp[100];
	OckRpcMessage q = { req, sizeof(req) }, r = { rsp, sizeof(rsp) };
	OckRpcCallDone done = { call_done, NULL };
	OckRpcServer srv;
	OckRpcClient c;
	char **ips;
	uint16_t *ports;
	int n;

	(void)state;
	load();
	F.Hcom4dbSetLogFunc(count_log);
	assert_int_equal(F.OckRpcServerCreateWithCfg("127.0.0.1", 0, &srv, &cfg), OCK_RPC_OK);
	assert_int_equal(F.OckRpcServerAddService(srv, &svc), OCK_RPC_OK);
	assert_int_equal(F.OckRpcServerStart(srv), OCK_RPC_OK);
	assert_true(F.OckRpcGetOobIpAndPort(srv, &ips, &ports, &n));
	assert_int_equal(F.OckRpcClientConnectWithCfg(ips[0], ports[0], &c, &cfg), OCK_RPC_OK);
	assert_int_equal(F.OckRpcClientCall(c, 7, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, sizeof(req));
	assert_string_equal(rsp, "through dlopen");
	for (int i = 0; i < 100; i++)
		assert_int_equal(F.OckRpcClientCall(c, 7, &q, NULL, &done), OCK_RPC_OK);
	for (int i = 0; i < 5000 && atomic_load(&done_calls) < 100; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&done_calls), 100);
	F.OckRpcClientDisconnect(c);
	F.OckRpcServerDestroy(srv);
	/* droce's log lines went to the logger set by the old name. */
	assert_true(atomic_load(&log_lines) > 0);
	F.OckRpcSetExternalLogger(NULL);
	free(ips[0]);
	free(ips);
	free(ports);
	F.OckRpcDisableSecureHmac();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_through_dlopen),
	};

	private_loopback();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
