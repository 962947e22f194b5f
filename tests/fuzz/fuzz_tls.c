/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * libFuzzer target: droce's TLS glue (lib/rpc/rpc_tls.c), not OpenSSL.
 * The input's first byte picks a side:
 *   even: the rest is what a client sends a TLS server on a fresh TCP
 *         connection (the first-byte check, the BIO pair, the server's
 *         handshake and its failure paths); the harness reads until the
 *         server closes;
 *   odd:  the rest is what a server answers a TLS client's connect (the
 *         opening's record reader, the client's handshake): a listener
 *         of the harness's own sends it and closes; the connect must
 *         fail, or succeed and be disconnected.
 * The certificates come from tests/tools/make_test_pki.sh, made at start.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "hcom4db.h"
#include "fuzz_stream.h"
#include "private_loopback.h"
#include "test_pki.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static uint16_t tls_port, evil_port;
static int evil_fd;

static RpcConfigPair pairs[] = {
	{ OCK_RPC_STR_SERVER_NAME, "server" }, { OCK_RPC_STR_COMMUNICATION_TYPE, "TCP" },
	{ OCK_RPC_STR_ENABLE_TLS, "yes" }, { OCK_RPC_STR_PRE_SEGMENT_SIZE, "4096" },
	{ OCK_RPC_STR_SERVER_PORT_RANGE, "25000-25999" },
};
/* TLS's callbacks set at the start, for the server and then the clients. */
static OckRpcCreateConfig cfg = {
	.mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
	.configs = { 5, pairs },
};

/* Every refused input says why: not here, thousands of times a second. */
static void
quiet(int level, const char *msg)
{
	(void)level;
	(void)msg;
}

static void
echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcServerReply(ctx, 0, &msg, NULL);
}

/* What the harness's listener answers the next connect with. */
static struct {
	pthread_mutex_t lock;
	uint8_t bytes[16384];
	size_t len;
} evil = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *
evil_server(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(evil_fd, NULL, NULL);

		if (fd < 0)
			continue;
		pthread_mutex_lock(&evil.lock);
		for (size_t off = 0; off < evil.len;) {
			ssize_t w = send(fd, evil.bytes + off, evil.len - off, MSG_NOSIGNAL);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
		pthread_mutex_unlock(&evil.lock);
		close(fd);
	}
	return NULL;
}

static void
remove_pki(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_tls: %s failed\n", cmd);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	OckRpcService svc = { 0, echo };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	/* Static: LeakSanitizer must see a pointer to the server. */
	static OckRpcServer server;
	char cmd[256], **ips;
	uint16_t *ports;
	pthread_t t;
	int n;

	(void)argc;
	(void)argv;
	private_loopback();
	OckRpcSetExternalLogger(quiet);
	snprintf(dir, sizeof(dir), "/tmp/droce-fuzz-tls.XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(cmd, sizeof(cmd), "%s %s", DROCE_TEST_PKI, dir);
	if (system(cmd) != 0)
		abort();
	atexit(remove_pki);
	test_pki_use(&cfg, dir, true);
	if (OckRpcServerCreateWithCfg("127.0.0.1", 0, &server, &cfg) != OCK_RPC_OK ||
	    OckRpcServerAddService(server, &svc) != OCK_RPC_OK ||
	    OckRpcServerStart(server) != OCK_RPC_OK ||
	    !OckRpcGetOobIpAndPort(server, &ips, &ports, &n))
		abort();
	test_pki_use(&cfg, dir, false);
	tls_port = ports[0];
	free(ips[0]);
	free(ips);
	free(ports);
	evil_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (evil_fd < 0 || bind(evil_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(evil_fd, 16) != 0 || getsockname(evil_fd, (struct sockaddr *)&a, &alen) != 0 ||
	    pthread_create(&t, NULL, evil_server, NULL) != 0)
		abort();
	evil_port = ntohs(a.sin_port);
	return 0;
}

/* A TLS client's connect, answered with the bytes. */
static void
to_client(const uint8_t *data, size_t size)
{
	OckRpcClient c = 0;

	pthread_mutex_lock(&evil.lock);
	evil.len = size < sizeof(evil.bytes) ? size : sizeof(evil.bytes);
	memcpy(evil.bytes, data, evil.len);
	pthread_mutex_unlock(&evil.lock);
	if (OckRpcClientConnectWithCfg("127.0.0.1", evil_port, &c, &cfg) == OCK_RPC_OK)
		OckRpcClientDisconnect(c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		to_client(data + 1, size - 1);
	else
		fuzz_stream_to(tls_port, data + 1, size - 1, "fuzz_tls");
	return 0;
}
