/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef HCOM_HCOM4DB_H
#define HCOM_HCOM4DB_H

/**
 * @file
 * The hcom4db RPC interface (as openGauss uses it), for droce's lib/rpc:
 * the same names, types, values and struct layouts as the closed
 * library's header, so that its applications build against this one
 * unchanged and programs that load libhcom4db.so by name find the same
 * symbols. Servers listen and clients connect over droce's RoCEv2 RC
 * transport (type "RDMA", connected through droce's CM) or over kernel
 * TCP (type "TCP"); messages go to services numbered 0..999.
 *
 * Each comment says what droce does where it differs from, or says more
 * than, the closed library's documentation. Type "RDMA" needs a droce
 * port, named by the file in the environment variable DROCE_HCOM_CONF
 * (see droce's README); without one a start or connect returns
 * OCK_RPC_ERR_RDMA_NOT_ENABLE. Rendezvous and one-sided operations need
 * type "RDMA" (over "TCP": OCK_RPC_ERR_RDMA_NOT_ENABLE).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Results: droce returns the most specific that applies (a timeout
 *  OCK_RPC_ERR_UCP_TIMEOUT, a broken session OCK_RPC_ERR_CONN_BROKEN);
 *  the UCX-era values keep their numbers for old callers.
 */
typedef enum {
	OCK_RPC_OK = 0,
	OCK_RPC_ERR = -1,
	OCK_RPC_ERR_INVALID_PARAM = -2,
	OCK_RPC_ERR_MISMATCH_MSG_ID = -3,
	OCK_RPC_ERR_CONN_UNCONNECTED = -4,
	OCK_RPC_ERR_SERIALIZE = -5,
	OCK_RPC_ERR_DESERIALIZE = -6,
	OCK_RPC_ERR_NO_MEMORY = -7,
	OCK_RPC_ERR_RDMA_NOT_ENABLE = -8,
	OCK_RPC_ERR_UNPACK_RKEY = -9,
	OCK_RPC_ERR_UCP_TAG_SEND = -10,
	OCK_RPC_ERR_UCP_TAG_RECV = -11,
	OCK_RPC_ERR_UCP_PUT = -12,
	OCK_RPC_ERR_UCP_GET = -13,
	OCK_RPC_ERR_UNSUPPORT = -14,
	OCK_RPC_ERR_SERVICE_EXIST = -15,
	OCK_RPC_ERR_ENCRYPT = -16,
	OCK_RPC_ERR_DECRYPT = -17,
	OCK_RPC_ERR_SINATURE = -18,
	OCK_RPC_ERR_UCP_TIMEOUT = -19,
	OCK_RPC_ERR_UCP_CLOSE = -20,
	OCK_RPC_ERR_CONN_BROKEN = -21,
	OCK_RPC_ERR_INVALID_RKEY = -22,
} OckRpcStatus;

/* ---- configuration keys (RpcConfigPair.key); unknown keys are ignored ---------- */

/** The server's name, at most 64 characters ["service"]; a client names
 *  the server it connects to with it.
 */
#define OCK_RPC_STR_SERVER_NAME "server.create.name"
/** Ports to choose from when the port given is 0: "first-last" ["4000-5000"]. */
#define OCK_RPC_STR_SERVER_PORT_RANGE "server.create.range"
/** "RDMA" (droce's RoCEv2 RC over DPDK) ["RDMA"], "TCP" (kernel sockets),
 *  or "UBC" (refused: not supported); anything else is INVALID_PARAM.
 */
#define OCK_RPC_STR_COMMUNICATION_TYPE "server.create.type"
/** Bytes of one message without rendezvous, up to 943718400 [65536]. */
#define OCK_RPC_STR_PRE_SEGMENT_SIZE "server.create.segsize"
/** Segments registered per connection, 0..65535 [1024]; 0 registers none. */
#define OCK_RPC_STR_PRE_SEGMENT_COUNT "server.create.segcount"
/** An OckRpcClientHandler, its address cast to const char * (not text):
 *  run when a client connects (with its client.create.info) ...
 */
#define OCK_RPC_STR_CLIENT_NEW "server.client.new"
/** ... and when its session breaks or ends, once. */
#define OCK_RPC_STR_CLIENT_BREAK "server.client.break"
/** Separates the groups of worker.thread.groups and worker.thread.cpuset. */
#define OCK_RPC_STR_SEP_THR_GRP ","
/** Separates the first and last cpu of a range in worker.thread.cpuset. */
#define OCK_RPC_STR_SEP_CPU_SET "-"
/** Worker lcores in groups, e.g. "4" or "1,2,3" (at most 64 characters). */
#define OCK_RPC_STR_WRK_THR_GRP "worker.thread.groups"
/** Each group's cpus, e.g. "1-4" or "1-1,2-3,na" ("na": not pinned). */
#define OCK_RPC_STR_WRK_CPU_SET "worker.thread.cpuset"
/** "yes": workers busy-poll; "no": they sleep on events ["no"]. */
#define OCK_RPC_STR_ENABLE_POLL_WORKER "worker.poll.enable"
/** "yes": take rendezvous messages (the receiving side sets it) ["no"]. */
#define OCK_RPC_STR_ENABLE_SEND_RNDV "server.rndv.enable"
/** With rendezvous: an OckRpcRndvMemAllocate and an OckRpcRndvMemFree,
 *  their addresses cast to const char *.
 */
#define OCK_RPC_STR_RNDV_MALLOC "server.rndv.malloc"
#define OCK_RPC_STR_RNDV_MFREE "server.rndv.mfree"
/** Seconds a session may be idle before it is probed, 1 or more ["1"]. */
#define OCK_RPC_STR_HEATBEAT_IDLE "server.heartbeat.idle"
/** "yes": TLS 1.3 on every session, with the three OckRpcCreateConfig
 *  callbacks (mask OCK_RPC_CONFIG_USE_SSL_CALLBACK) ["yes"]; "no": none.
 */
#define OCK_RPC_STR_ENABLE_TLS "server.tls.enable"

#define OCK_RPC_BIT(i) (1UL << (i))

/* ---- handles ------------------------------------------------------------------- */

typedef uintptr_t OckRpcServer;
typedef uintptr_t OckRpcClient;
/** A received message's context: valid in its handler, or until
 *  OckRpcDeCloneCtx when cloned.
 */
typedef uintptr_t OckRpcServerContext;
typedef uintptr_t OckRpcClientContext;
typedef uintptr_t OckRpcServerRndvContext;

/** A connection's news: a client came (@p payLoad: its client.create.info)
 *  or its session ended. Return 0.
 */
typedef int (*OckRpcClientHandler)(OckRpcClient client, uint64_t usrCtx, const char *payLoad);

/* ---- TLS callbacks -------------------------------------------------------------- */

/** Wipes the key's passphrase; called once the handshake no longer needs it. */
typedef void (*OckRpcTlsKeypassErase)(char *keypass);
/** The private key's file, its passphrase (malloc'ed) and how to erase it. */
typedef void (*OckRpcTlsGetPrivateKey)(const char **priKeyPath, char **keypass,
				       OckRpcTlsKeypassErase *erase);
/** The certificate's file. */
typedef void (*OckRpcTlsGetCert)(const char **certPath);
/** Checks a peer's certificate: @p x509 is an X509_STORE_CTX; 1 accepts, -1 refuses. */
typedef int (*OckRpcTlsCertVerify)(void *x509, const char *crlPath);
/** The CA file(s) (':' between paths), the CRL path ("" for none) and the check. */
typedef void (*OckRpcTlsGetCAAndVerify)(const char **caPath, const char **crlPath,
					OckRpcTlsCertVerify *verify);

/* ---- messages ------------------------------------------------------------------- */

/** Bytes and their length. */
typedef struct {
	void *data;
	size_t len;
} OckRpcMessage;

/** Registered bytes: address, the region's key, length. */
typedef struct {
	uintptr_t lAddress;
	uint32_t lKey;
	uint32_t size;
} OckRpcMessageInfo;

typedef struct {
	size_t count;
	OckRpcMessage *msgs;
} OckRpcMessageIov;

typedef struct {
	size_t count;
	OckRpcMessageInfo *reqs;
} OckRpcMessageInfoIov;

/** A rendezvous message as its handler gets it: 1..4 buffers. */
typedef struct {
	uint16_t cnt;
	OckRpcMessage msg[4];
} OckRpcRndvMessage;

/** Runs on the session's lcore for each message to its service; @p msg
 *  lives as long as @p ctx (the handler's return, or OckRpcDeCloneCtx).
 */
typedef void (*OckRpcMsgHandler)(OckRpcServerContext ctx, OckRpcMessage msg);
/** As OckRpcMsgHandler, for rendezvous messages; OckRpcServerCleanupRndvCtx ends @p ctx. */
typedef void (*OckRpcMsgRndvHandler)(OckRpcServerRndvContext ctx, OckRpcRndvMessage msg);
/** An asynchronous operation's end, with @p arg as given. */
typedef void (*OckRpcDoneCallback)(OckRpcStatus status, void *arg);

/** Deprecated (the UCX-era context builder): accepted, no effect. */
typedef OckRpcServerContext (*OckRpcServerCtxBuilderHandler)(OckRpcServer server);
typedef void (*OckRpcServerCtxCleanupHandler)(OckRpcServer server, OckRpcServerContext ctx);
OckRpcServerContext OckRpcServerCtxBuilderThreadLocal(OckRpcServer server);
void OckRpcServerCtxCleanupThreadLocal(OckRpcServer server, OckRpcServerContext ctx);

/** Rendezvous receive memory: @p size bytes, registered (@p key); 0 on success. */
typedef int (*OckRpcRndvMemAllocate)(uint64_t size, uintptr_t *address, uint32_t *key);
/** Gives back what OckRpcRndvMemAllocate gave; 0 on success. */
typedef int (*OckRpcRndvMemFree)(uintptr_t address);

/** A service: messages with @p id (0..999) go to @p handler. */
typedef struct {
	uint16_t id;
	OckRpcMsgHandler handler;
} OckRpcService;

typedef struct {
	uint16_t id;
	OckRpcMsgRndvHandler handler;
} OckRpcRndvService;

/** Makes an operation asynchronous: copied when it starts; on an OK
 *  return @p cb runs exactly once (perhaps before the return), on an
 *  error return never.
 */
typedef struct {
	OckRpcDoneCallback cb;
	void *arg;
} OckRpcCallDone;

typedef struct {
	const char *key;
	const char *value;
} RpcConfigPair;

typedef struct {
	int size;
	RpcConfigPair *pairs;
} RpcConfigs;

/** Which members of OckRpcCreateConfig are set: only those are read. */
typedef enum {
	OCK_RPC_CONFIG_USE_RPC_CONFIGS = OCK_RPC_BIT(0),
	OCK_RPC_CONFIG_USE_SERVER_CTX_BUILD = OCK_RPC_BIT(1),
	OCK_RPC_CONFIG_USE_SSL_CALLBACK = OCK_RPC_BIT(2),
} OckRpcCreateConfigMask;

typedef struct {
	uint64_t mask;
	RpcConfigs configs;
	/** Deprecated: read with OCK_RPC_CONFIG_USE_SERVER_CTX_BUILD, not used. */
	OckRpcServerCtxBuilderHandler serverCtxbuilder;
	OckRpcServerCtxCleanupHandler serverCtxCleanup;
	/** TLS, with OCK_RPC_CONFIG_USE_SSL_CALLBACK: all three set. */
	OckRpcTlsGetCAAndVerify getCaAndVerify;
	OckRpcTlsGetCert getCert;
	OckRpcTlsGetPrivateKey getPriKey;
} OckRpcCreateConfig;

typedef enum {
	OCK_RPC_CLIENT_CALL_DEFAULT = 0,
} OckcRpcClientCallParamsMask;

/** OckRpcClientCallWithParam's call. */
typedef struct {
	uint64_t mask;
	OckRpcClient client;
	/** Unused by droce (may be 0). */
	OckRpcClientContext context;
	uint16_t msgId;
	/** 1..8 pieces; the handler gets them as one message, one after another. */
	OckRpcMessageIov reqIov;
	/** count 0: no response; 1 with {NULL, 0}: the library allocates it and
	 *  the caller frees msgs[0].data; else buffers of known size (a longer
	 *  response is an error, never an overflow).
	 */
	OckRpcMessageIov rspIov;
	/** NULL: synchronous; else as OckRpcCallDone says. */
	OckRpcCallDone *done;
} OckRpcClientCallParams;

/** droce's log lines: @p level 0 debug, 1 info, 2 warning, 3 error. */
typedef void (*OckRpcLogHandler)(int level, const char *msg);

/** Every droce log line goes to @p h from now on (NULL: back to droce's own). */
void OckRpcSetExternalLogger(OckRpcLogHandler h);

/* ---- servers -------------------------------------------------------------------- */

/**
 * A server on @p ip:@p port (port 0: one free port of server.create.range;
 * else 1024 or more), not yet listening. @p configs may be NULL.
 */
OckRpcStatus OckRpcServerCreateWithCfg(const char *ip, uint16_t port, OckRpcServer *server,
				       OckRpcCreateConfig *configs);

/** The addresses and ports the server listens on (arrays allocated for the caller). */
bool OckRpcGetOobIpAndPort(OckRpcServer server, char ***ipArray, uint16_t **portArray,
			   int *length);

/** Add or replace service @p service->id, before or after the start. */
OckRpcStatus OckRpcServerAddService(OckRpcServer server, OckRpcService *service);

/** As OckRpcServerAddService, for rendezvous messages (server.rndv.enable=yes). */
OckRpcStatus OckRpcServerAddRndvService(OckRpcServer server, OckRpcRndvService *service);

/** Listen; returns once listening. */
OckRpcStatus OckRpcServerStart(OckRpcServer server);

/** End every session (calls in flight fail), stop and free the server. */
void OckRpcServerDestroy(OckRpcServer server);

/**
 * Answer the message of @p ctx with @p reply (@p msgId: the message's).
 * Synchronous without @p done; else @p reply must stay until done runs.
 */
OckRpcStatus OckRpcServerReply(OckRpcServerContext ctx, uint16_t msgId, OckRpcMessage *reply,
			       OckRpcCallDone *done);

/** OckRpcServerReply for a rendezvous message's context. */
OckRpcStatus OckRpcServerReplyRndv(OckRpcServerRndvContext ctx, uint16_t msgId,
				   OckRpcMessage *reply, OckRpcCallDone *done);

/** The client (session) a message came from; 0 on success. */
int OckRpcGetClient(OckRpcServerContext ctx, OckRpcClient *client);

/** The client a rendezvous message came from; 0 on success. */
int OckRpcGetRndvClient(OckRpcServerRndvContext ctx, OckRpcClient *client);

/** Keep a message (and its context) past its handler; 0 if that fails. */
OckRpcServerContext OckRpcCloneCtx(OckRpcServerContext ctx);

/** Let go of a context kept with OckRpcCloneCtx. */
void OckRpcDeCloneCtx(OckRpcServerContext ctx);

/** Deprecated: accepted, no effect (contexts end with their handlers). */
void OckRpcServerCleanupCtx(OckRpcServerContext ctx);

/** End a rendezvous message's context (its buffers freed); 0 on success. */
int OckRpcServerCleanupRndvCtx(OckRpcServerRndvContext ctx);

/* ---- clients -------------------------------------------------------------------- */

/** What the server's new-client handler gets, at most 64 characters ["hello"]. */
#define OCK_RPC_STR_CLIENT_CREATE_INFO "client.create.info"
/** "yes": the calling thread drives its own calls; "no": the session's
 *  lcore does ["yes"].
 */
#define OCK_RPC_STR_ENABLE_SELFPOLLING "client.enable.selfpolling"

/** Connect to the server at @p ip:@p port; its server.create.name must be ours. */
OckRpcStatus OckRpcClientConnectWithCfg(const char *ip, uint16_t port, OckRpcClient *client,
					OckRpcCreateConfig *configs);

/** End the session; pending calls fail. */
void OckRpcClientDisconnect(OckRpcClient client);

/** OckRpcClientDisconnect from within a break handler. */
void OckRpcClientDisconnectBreakHandler(OckRpcClient client);

/** Keep @p ctx with the client (readable in later handlers); 0 on success. */
int OckRpcSetUpCtx(OckRpcClient client, uint64_t ctx);

/** What OckRpcSetUpCtx kept; 0 on success. */
int OckRpcGetUpCtx(OckRpcClient client, uint64_t *ctx);

/**
 * Send @p request to service @p msgId. @p response NULL: no answer
 * awaited; {NULL, 0}: the library allocates it (the caller frees it);
 * else a buffer of @p response->len bytes (a longer answer is an error).
 * Synchronous without @p done.
 */
OckRpcStatus OckRpcClientCall(OckRpcClient client, uint16_t msgId, OckRpcMessage *request,
			      OckRpcMessage *response, OckRpcCallDone *done);

/** A call of 1..8 pieces, as OckRpcClientCallParams says. */
OckRpcStatus OckRpcClientCallWithParam(OckRpcClientCallParams *params);

/** A call whose registered payload the server RDMA-READs (rendezvous). */
OckRpcStatus OckRpcClientCallRndv(OckRpcClient client, uint16_t msgId,
				  OckRpcMessageInfo *request, OckRpcMessage *response,
				  OckRpcCallDone *done);

/** A rendezvous call of 1..4 registered buffers. */
OckRpcStatus OckRpcClientCallRndvIov(OckRpcClient client, uint16_t msgId,
				     OckRpcMessageInfoIov *request, OckRpcMessage *response,
				     OckRpcCallDone *done);

/* ---- memory regions and one-sided operations ---------------------------------------- */

typedef uintptr_t OckRpcMemoryRegion;

typedef struct {
	uintptr_t lAddress;
	uint32_t lKey;
	uint32_t size;
} OckRpcMemoryRegionInfo;

/** Allocate and register @p size bytes; 0 on success. */
int OckRpcRegisterMemoryRegion(OckRpcServer server, uint64_t size, OckRpcMemoryRegion *mr);

/** Register the caller's @p size bytes at @p address; 0 on success. */
int OckRpcRegisterAssignMemoryRegion(OckRpcServer server, uintptr_t address, uint64_t size,
				     OckRpcMemoryRegion *mr);

/** A region's address, key and size; 0 on success. */
int OckRpcGetMemoryRegionInfo(OckRpcMemoryRegion mr, OckRpcMemoryRegionInfo *info);

/** Deregister (and free what OckRpcRegisterMemoryRegion allocated). With
 *  zero copy (port.N.tx.chains), a port that still holds packets sent from
 *  the region a second later keeps it: the deregistration ends later, what
 *  droce allocated is never freed, and an error log asks the application
 *  never to free its own memory there.
 */
void OckRpcDestroyMemoryRegion(OckRpcServer server, OckRpcMemoryRegion mr);

/** One-sided: local and remote address and key, and the size. */
typedef struct {
	uintptr_t lAddress;
	uintptr_t rAddress;
	uint32_t lKey;
	uint32_t rKey;
	uint32_t size;
} __attribute__((packed)) OckRpcRequest;

typedef struct {
	OckRpcRequest *iov;
	uint16_t iovCount;
} __attribute__((packed)) OckRpcSglRequest;

/** RDMA READ into local memory; synchronous without @p cb; 0 on success. */
int OckRpcRead(OckRpcClient client, OckRpcRequest *req, OckRpcCallDone *cb);

/** RDMA READs of @p req->iovCount pieces; 0 on success. */
int OckRpcReadSgl(OckRpcClient client, OckRpcSglRequest *req, OckRpcCallDone *cb);

/** RDMA WRITE from local memory; synchronous without @p cb; 0 on success. */
int OckRpcWrite(OckRpcClient client, OckRpcRequest *req, OckRpcCallDone *cb);

/** RDMA WRITEs of @p req->iovCount pieces; 0 on success. */
int OckRpcWriteSgl(OckRpcClient client, OckRpcSglRequest *req, OckRpcCallDone *cb);

/**
 * How long the client's calls and one-sided operations may take, in
 * milliseconds (droce keeps the millisecond): 0 fails at once what cannot
 * finish at once, < 0 waits for ever [-1].
 */
void OckRpcClientSetTimeout(OckRpcClient client, int64_t timeout);

/* ---- the memory allocator ----------------------------------------------------------- */

/** How cache tiers grow: by multiples of the smallest block, or by powers of two. */
typedef enum {
	MEM_TIER_TIMES = 0,
	MEM_TIER_POWER = 1,
} OckRpcMemoryAllocatorCacheTierPolicy;

typedef enum {
	MEM_DYNAMIC_SIZE = 0,
	MEM_DYNAMIC_SIZE_WITH_CACHE = 1,
} OckRpcMemoryAllocatorType;

typedef struct {
	uintptr_t address;              /**< the memory it hands out */
	uint64_t size;
	uint32_t minBlockSize;
	uint32_t bucketCount;
	uint16_t alignedAddress;
	uint16_t cacheTierCount;
	uint16_t cacheBlockCountPerTier;
	OckRpcMemoryAllocatorCacheTierPolicy cacheTierPolicy;
} OckRpcMemoryAllocatorOptions;

typedef uintptr_t OckRpcMemoryAllocator;

/** An allocator over @p options->address; 0 on success. */
int OckRpcMemoryAllocatorCreate(OckRpcMemoryAllocatorType t, OckRpcMemoryAllocatorOptions *options,
				OckRpcMemoryAllocator *allocator);

int OckRpcMemoryAllocatorDestroy(OckRpcMemoryAllocator allocator);

/** The key OckRpcMemoryAllocatorAllocate hands out with each block. */
int OckRpcMemoryAllocatorSetMrKey(OckRpcMemoryAllocator allocator, uint32_t mrKey);

/** @p address's offset from the allocator's start. */
int OckRpcMemoryAllocatorMemOffset(OckRpcMemoryAllocator allocator, uintptr_t address,
				   uintptr_t *offset);

/** Bytes not handed out. */
int OckRpcMemoryAllocatorFreeSize(OckRpcMemoryAllocator allocator, uintptr_t *size);

/** A block of @p size bytes and the key; a size of 0 or over what is free is an error. */
int OckRpcMemoryAllocatorAllocate(OckRpcMemoryAllocator allocator, uint64_t size,
				  uintptr_t *address, uint32_t *key);

/** Give a block back; freeing one twice is an error. */
int OckRpcMemoryAllocatorFree(OckRpcMemoryAllocator allocator, uintptr_t address);

/** Deprecated (UCX era): accepted, no effect. */
void OckRpcDisableSecureHmac(void);

#ifdef __cplusplus
}
#endif

#endif /* HCOM_HCOM4DB_H */
