/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * include/hcom4db.h against the closed library's header, which its users
 * compile with: every struct's size and members' offsets (LP64), every
 * value, every key string, every function's type. Checked as the program
 * compiles; the run only reports.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hcom4db.h"

#define LAYOUT(type, size) _Static_assert(sizeof(type) == (size), #type " is " #size " bytes")
#define AT(type, member, off) \
	_Static_assert(offsetof(type, member) == (off), #type "." #member " at " #off)
#define MEMBER(type, member, mtype) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(((type *)0)->member), mtype), \
		       #type "." #member " is " #mtype)
#define SAME_TYPE(fn, ...) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&fn), __VA_ARGS__), #fn "'s type")

_Static_assert(sizeof(void *) == 8, "the layouts below are LP64's");

LAYOUT(OckRpcMessage, 16);
AT(OckRpcMessage, len, 8);
LAYOUT(OckRpcMessageInfo, 16);
AT(OckRpcMessageInfo, lKey, 8);
AT(OckRpcMessageInfo, size, 12);
LAYOUT(OckRpcMessageIov, 16);
AT(OckRpcMessageIov, msgs, 8);
LAYOUT(OckRpcMessageInfoIov, 16);
AT(OckRpcMessageInfoIov, reqs, 8);
LAYOUT(OckRpcRndvMessage, 72);
AT(OckRpcRndvMessage, msg, 8);
LAYOUT(OckRpcService, 16);
AT(OckRpcService, handler, 8);
LAYOUT(OckRpcRndvService, 16);
LAYOUT(OckRpcCallDone, 16);
AT(OckRpcCallDone, arg, 8);
LAYOUT(RpcConfigPair, 16);
LAYOUT(RpcConfigs, 16);
AT(RpcConfigs, pairs, 8);
LAYOUT(OckRpcCreateConfig, 64);
AT(OckRpcCreateConfig, configs, 8);
AT(OckRpcCreateConfig, serverCtxbuilder, 24);
AT(OckRpcCreateConfig, serverCtxCleanup, 32);
AT(OckRpcCreateConfig, getCaAndVerify, 40);
AT(OckRpcCreateConfig, getCert, 48);
AT(OckRpcCreateConfig, getPriKey, 56);
LAYOUT(OckRpcClientCallParams, 72);
AT(OckRpcClientCallParams, client, 8);
AT(OckRpcClientCallParams, context, 16);
AT(OckRpcClientCallParams, msgId, 24);
AT(OckRpcClientCallParams, reqIov, 32);
AT(OckRpcClientCallParams, rspIov, 48);
AT(OckRpcClientCallParams, done, 64);
LAYOUT(OckRpcMemoryRegionInfo, 16);
LAYOUT(OckRpcRequest, 28);
AT(OckRpcRequest, rAddress, 8);
AT(OckRpcRequest, lKey, 16);
AT(OckRpcRequest, rKey, 20);
AT(OckRpcRequest, size, 24);
LAYOUT(OckRpcSglRequest, 10);
AT(OckRpcSglRequest, iovCount, 8);
LAYOUT(OckRpcMemoryAllocatorOptions, 40);
AT(OckRpcMemoryAllocatorOptions, size, 8);
AT(OckRpcMemoryAllocatorOptions, minBlockSize, 16);
AT(OckRpcMemoryAllocatorOptions, bucketCount, 20);
AT(OckRpcMemoryAllocatorOptions, alignedAddress, 24);
AT(OckRpcMemoryAllocatorOptions, cacheTierCount, 26);
AT(OckRpcMemoryAllocatorOptions, cacheBlockCountPerTier, 28);
AT(OckRpcMemoryAllocatorOptions, cacheTierPolicy, 32);
MEMBER(OckRpcMessage, len, size_t);
MEMBER(OckRpcMessageInfo, lAddress, uintptr_t);
MEMBER(OckRpcMessageInfo, size, uint32_t);
MEMBER(OckRpcMessageIov, count, size_t);
MEMBER(OckRpcRndvMessage, cnt, uint16_t);
MEMBER(OckRpcService, id, uint16_t);
MEMBER(OckRpcRndvService, id, uint16_t);
MEMBER(RpcConfigs, size, int);
MEMBER(OckRpcCreateConfig, mask, uint64_t);
MEMBER(OckRpcClientCallParams, msgId, uint16_t);
MEMBER(OckRpcRequest, size, uint32_t);
MEMBER(OckRpcSglRequest, iovCount, uint16_t);
MEMBER(OckRpcMemoryAllocatorOptions, alignedAddress, uint16_t);
MEMBER(OckRpcMemoryAllocatorOptions, cacheTierPolicy, OckRpcMemoryAllocatorCacheTierPolicy);
_Static_assert(sizeof(OckRpcServer) == 8 && sizeof(OckRpcClient) == 8 &&
	       sizeof(OckRpcServerContext) == 8 && sizeof(OckRpcServerRndvContext) == 8 &&
	       sizeof(OckRpcMemoryRegion) == 8 && sizeof(OckRpcMemoryAllocator) == 8,
	       "handles are uintptr_t");

SAME_TYPE(OckRpcSetExternalLogger, void (*)(OckRpcLogHandler));
SAME_TYPE(OckRpcServerCreateWithCfg,
	  OckRpcStatus (*)(const char *, uint16_t, OckRpcServer *, OckRpcCreateConfig *));
SAME_TYPE(OckRpcGetOobIpAndPort, bool (*)(OckRpcServer, char ***, uint16_t **, int *));
SAME_TYPE(OckRpcServerAddService, OckRpcStatus (*)(OckRpcServer, OckRpcService *));
SAME_TYPE(OckRpcServerAddRndvService, OckRpcStatus (*)(OckRpcServer, OckRpcRndvService *));
SAME_TYPE(OckRpcServerStart, OckRpcStatus (*)(OckRpcServer));
SAME_TYPE(OckRpcServerDestroy, void (*)(OckRpcServer));
SAME_TYPE(OckRpcServerReply, OckRpcStatus (*)(OckRpcServerContext, uint16_t, OckRpcMessage *,
					       OckRpcCallDone *));
SAME_TYPE(OckRpcServerReplyRndv, OckRpcStatus (*)(OckRpcServerRndvContext, uint16_t,
						   OckRpcMessage *, OckRpcCallDone *));
SAME_TYPE(OckRpcGetClient, int (*)(OckRpcServerContext, OckRpcClient *));
SAME_TYPE(OckRpcGetRndvClient, int (*)(OckRpcServerRndvContext, OckRpcClient *));
SAME_TYPE(OckRpcCloneCtx, OckRpcServerContext (*)(OckRpcServerContext));
SAME_TYPE(OckRpcDeCloneCtx, void (*)(OckRpcServerContext));
SAME_TYPE(OckRpcServerCleanupCtx, void (*)(OckRpcServerContext));
SAME_TYPE(OckRpcServerCleanupRndvCtx, int (*)(OckRpcServerRndvContext));
SAME_TYPE(OckRpcServerCtxBuilderThreadLocal, OckRpcServerContext (*)(OckRpcServer));
SAME_TYPE(OckRpcServerCtxCleanupThreadLocal, void (*)(OckRpcServer, OckRpcServerContext));
SAME_TYPE(OckRpcClientConnectWithCfg, OckRpcStatus (*)(const char *, uint16_t, OckRpcClient *,
							OckRpcCreateConfig *));
SAME_TYPE(OckRpcClientDisconnect, void (*)(OckRpcClient));
SAME_TYPE(OckRpcClientDisconnectBreakHandler, void (*)(OckRpcClient));
SAME_TYPE(OckRpcSetUpCtx, int (*)(OckRpcClient, uint64_t));
SAME_TYPE(OckRpcGetUpCtx, int (*)(OckRpcClient, uint64_t *));
SAME_TYPE(OckRpcClientCall, OckRpcStatus (*)(OckRpcClient, uint16_t, OckRpcMessage *,
					      OckRpcMessage *, OckRpcCallDone *));
SAME_TYPE(OckRpcClientCallWithParam, OckRpcStatus (*)(OckRpcClientCallParams *));
SAME_TYPE(OckRpcClientCallRndv, OckRpcStatus (*)(OckRpcClient, uint16_t, OckRpcMessageInfo *,
						  OckRpcMessage *, OckRpcCallDone *));
SAME_TYPE(OckRpcClientCallRndvIov, OckRpcStatus (*)(OckRpcClient, uint16_t,
						     OckRpcMessageInfoIov *, OckRpcMessage *,
						     OckRpcCallDone *));
SAME_TYPE(OckRpcRegisterMemoryRegion, int (*)(OckRpcServer, uint64_t, OckRpcMemoryRegion *));
SAME_TYPE(OckRpcRegisterAssignMemoryRegion, int (*)(OckRpcServer, uintptr_t, uint64_t,
						     OckRpcMemoryRegion *));
SAME_TYPE(OckRpcGetMemoryRegionInfo, int (*)(OckRpcMemoryRegion, OckRpcMemoryRegionInfo *));
SAME_TYPE(OckRpcDestroyMemoryRegion, void (*)(OckRpcServer, OckRpcMemoryRegion));
SAME_TYPE(OckRpcRead, int (*)(OckRpcClient, OckRpcRequest *, OckRpcCallDone *));
SAME_TYPE(OckRpcReadSgl, int (*)(OckRpcClient, OckRpcSglRequest *, OckRpcCallDone *));
SAME_TYPE(OckRpcWrite, int (*)(OckRpcClient, OckRpcRequest *, OckRpcCallDone *));
SAME_TYPE(OckRpcWriteSgl, int (*)(OckRpcClient, OckRpcSglRequest *, OckRpcCallDone *));
SAME_TYPE(OckRpcClientSetTimeout, void (*)(OckRpcClient, int64_t));
SAME_TYPE(OckRpcMemoryAllocatorCreate, int (*)(OckRpcMemoryAllocatorType,
						OckRpcMemoryAllocatorOptions *,
						OckRpcMemoryAllocator *));
SAME_TYPE(OckRpcMemoryAllocatorDestroy, int (*)(OckRpcMemoryAllocator));
SAME_TYPE(OckRpcMemoryAllocatorSetMrKey, int (*)(OckRpcMemoryAllocator, uint32_t));
SAME_TYPE(OckRpcMemoryAllocatorMemOffset, int (*)(OckRpcMemoryAllocator, uintptr_t,
						   uintptr_t *));
SAME_TYPE(OckRpcMemoryAllocatorFreeSize, int (*)(OckRpcMemoryAllocator, uintptr_t *));
SAME_TYPE(OckRpcMemoryAllocatorAllocate, int (*)(OckRpcMemoryAllocator, uint64_t, uintptr_t *,
						  uint32_t *));
SAME_TYPE(OckRpcMemoryAllocatorFree, int (*)(OckRpcMemoryAllocator, uintptr_t));
SAME_TYPE(OckRpcDisableSecureHmac, void (*)(void));

/* The values users switch on and the keys they pass, as the closed
 * header has them.
 */
static void
test_values_and_keys(void **state)
{
	static const struct {
		const char *got, *want;
	} keys[] = {
		{ OCK_RPC_STR_SERVER_NAME, "server.create.name" },
		{ OCK_RPC_STR_SERVER_PORT_RANGE, "server.create.range" },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, "server.create.type" },
		{ OCK_RPC_STR_PRE_SEGMENT_SIZE, "server.create.segsize" },
		{ OCK_RPC_STR_PRE_SEGMENT_COUNT, "server.create.segcount" },
		{ OCK_RPC_STR_CLIENT_NEW, "server.client.new" },
		{ OCK_RPC_STR_CLIENT_BREAK, "server.client.break" },
		{ OCK_RPC_STR_SEP_THR_GRP, "," },
		{ OCK_RPC_STR_SEP_CPU_SET, "-" },
		{ OCK_RPC_STR_WRK_THR_GRP, "worker.thread.groups" },
		{ OCK_RPC_STR_WRK_CPU_SET, "worker.thread.cpuset" },
		{ OCK_RPC_STR_ENABLE_POLL_WORKER, "worker.poll.enable" },
		{ OCK_RPC_STR_ENABLE_SEND_RNDV, "server.rndv.enable" },
		{ OCK_RPC_STR_RNDV_MALLOC, "server.rndv.malloc" },
		{ OCK_RPC_STR_RNDV_MFREE, "server.rndv.mfree" },
		{ OCK_RPC_STR_HEATBEAT_IDLE, "server.heartbeat.idle" },
		{ OCK_RPC_STR_ENABLE_TLS, "server.tls.enable" },
		{ OCK_RPC_STR_CLIENT_CREATE_INFO, "client.create.info" },
		{ OCK_RPC_STR_ENABLE_SELFPOLLING, "client.enable.selfpolling" },
	};
	static const int status[] = {
		OCK_RPC_OK, OCK_RPC_ERR, OCK_RPC_ERR_INVALID_PARAM, OCK_RPC_ERR_MISMATCH_MSG_ID,
		OCK_RPC_ERR_CONN_UNCONNECTED, OCK_RPC_ERR_SERIALIZE, OCK_RPC_ERR_DESERIALIZE,
		OCK_RPC_ERR_NO_MEMORY, OCK_RPC_ERR_RDMA_NOT_ENABLE, OCK_RPC_ERR_UNPACK_RKEY,
		OCK_RPC_ERR_UCP_TAG_SEND, OCK_RPC_ERR_UCP_TAG_RECV, OCK_RPC_ERR_UCP_PUT,
		OCK_RPC_ERR_UCP_GET, OCK_RPC_ERR_UNSUPPORT, OCK_RPC_ERR_SERVICE_EXIST,
		OCK_RPC_ERR_ENCRYPT, OCK_RPC_ERR_DECRYPT, OCK_RPC_ERR_SINATURE,
		OCK_RPC_ERR_UCP_TIMEOUT, OCK_RPC_ERR_UCP_CLOSE, OCK_RPC_ERR_CONN_BROKEN,
		OCK_RPC_ERR_INVALID_RKEY,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_string_equal(keys[i].got, keys[i].want);
	/* OCK_RPC_OK is 0, then -1, -2, ... -22 in the header's order. */
	for (size_t i = 0; i < sizeof(status) / sizeof(status[0]); i++)
		assert_int_equal(status[i], -(int)i);
	assert_int_equal(OCK_RPC_CONFIG_USE_RPC_CONFIGS, 1);
	assert_int_equal(OCK_RPC_CONFIG_USE_SERVER_CTX_BUILD, 2);
	assert_int_equal(OCK_RPC_CONFIG_USE_SSL_CALLBACK, 4);
	assert_int_equal(OCK_RPC_BIT(63), 1UL << 63);
	assert_int_equal(OCK_RPC_CLIENT_CALL_DEFAULT, 0);
	assert_int_equal(MEM_TIER_TIMES, 0);
	assert_int_equal(MEM_TIER_POWER, 1);
	assert_int_equal(MEM_DYNAMIC_SIZE, 0);
	assert_int_equal(MEM_DYNAMIC_SIZE_WITH_CACHE, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_and_keys),
	};

	return cmocka_run_group_tests_name("hcom4db.h", tests, NULL, NULL);
}
