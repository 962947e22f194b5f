/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * droce's RPC server (rpc.port): an hcom4db server over RDMA on the
 * stack droce runs, lent to the library (droce_rpc_attach()), so that
 * its sessions share port 0 and the control lcore with the sensor
 * streams. Service 0 echoes. With server.tls.enable the certificate, key
 * and CAs come from the rpc.tls.* keys. Clients that come and go are
 * told on stdout, a broken session with the time since its last call.
 */

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <openssl/crypto.h>

#include <rte_common.h>

#include "droce_rpc.h"
#include "hcom4db.h"

#include "app_rpc.h"

#define SVC_ECHO 0
#define KEYPASS_MAX 256

struct app_rpc {
	OckRpcServer server;
	char ip[INET_ADDRSTRLEN];
	pthread_t stopper;
	bool stopping;
};

/* The TLS callbacks take no argument: the configuration they read. */
static const struct droce_conf *tls_conf;
static atomic_uint_fast64_t clients_came, clients_broke;

static void
echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcServerReply(ctx, SVC_ECHO, &msg, NULL);
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Each client's number is its session's up ctx. */
static int
on_client(OckRpcClient client, uint64_t ctx, const char *info)
{
	uint64_t n = atomic_fetch_add(&clients_came, 1) + 1;

	(void)ctx;
	OckRpcSetUpCtx(client, n);
	printf("droce: rpc: client %" PRIu64 " came (%s) at %.3f s\n", n,
	       info != NULL ? info : "", now_s());
	return 0;
}

static int
on_break(OckRpcClient client, uint64_t ctx, const char *payload)
{
	(void)client;
	(void)payload;
	printf("droce: rpc: client %" PRIu64 "'s session ended (break handler, %" PRIu64
	       " so far) at %.3f s\n", ctx, atomic_fetch_add(&clients_broke, 1) + 1, now_s());
	return 0;
}

static void
tls_cert(const char **path)
{
	*path = tls_conf->rpc_tls_cert;
}

static void
erase_pass(char *pass)
{
	OPENSSL_cleanse(pass, strlen(pass));
	free(pass);
}

/* The passphrase from rpc.tls.keypass's first line, erased once used. */
static void
tls_key(const char **path, char **pass, OckRpcTlsKeypassErase *erase)
{
	FILE *f;

	*path = tls_conf->rpc_tls_key;
	*pass = NULL;
	*erase = NULL;
	if (tls_conf->rpc_tls_keypass[0] == '\0')
		return;
	f = fopen(tls_conf->rpc_tls_keypass, "r");
	*pass = calloc(1, KEYPASS_MAX);
	if (f == NULL || *pass == NULL || fgets(*pass, KEYPASS_MAX, f) == NULL) {
		fprintf(stderr, "droce: rpc.tls.keypass \"%s\" (%s): cannot read a line from it\n",
			tls_conf->rpc_tls_keypass, droce_conf_origin(tls_conf, "rpc.tls.keypass"));
		free(*pass);
		*pass = NULL;
	} else {
		(*pass)[strcspn(*pass, "\r\n")] = '\0';
		*erase = erase_pass;
	}
	if (f != NULL)
		fclose(f);
}

/* OpenSSL's verdict stands. */
static int
tls_verify(void *x509, const char *crl)
{
	(void)crl;
	return x509 != NULL ? 1 : -1;
}

static void
tls_ca(const char **ca, const char **crl, OckRpcTlsCertVerify *verify)
{
	*ca = tls_conf->rpc_tls_ca;
	*crl = tls_conf->rpc_tls_crl;
	*verify = tls_verify;
}

/* With TLS, the keys it needs: NULL, or what is missing. */
static const char *
tls_missing(const struct droce_conf *conf)
{
	if (!conf->rpc_tls)
		return NULL;
	if (conf->rpc_tls_cert[0] == '\0')
		return "rpc.tls.cert";
	if (conf->rpc_tls_key[0] == '\0')
		return "rpc.tls.key";
	if (conf->rpc_tls_ca[0] == '\0')
		return "rpc.tls.ca";
	return NULL;
}

int
app_rpc_start(const struct droce_conf *conf, struct droce_stack *stack, struct app_rpc **out,
	      char *err, size_t errlen)
{
	char port[8], idle[16];
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, "droce" },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" },
		{ OCK_RPC_STR_ENABLE_TLS, conf->rpc_tls ? "yes" : "no" },
		{ OCK_RPC_STR_HEATBEAT_IDLE, idle },
		{ OCK_RPC_STR_CLIENT_NEW, (const char *)(uintptr_t)on_client },
		{ OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)on_break },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { RTE_DIM(pairs), pairs } };
	OckRpcService svc = { SVC_ECHO, echo };
	const char *missing = tls_missing(conf);
	struct in_addr a = { .s_addr = conf->port[0].addr };
	struct app_rpc *r;
	int ret;

	*out = NULL;
	if (conf->rpc_port == 0)
		return 0;
	if (missing != NULL) {
		snprintf(err, errlen, "rpc.port = %u (%s) with server.tls.enable = yes (%s) needs %s",
			 conf->rpc_port, droce_conf_origin(conf, "rpc.port"),
			 droce_conf_origin(conf, "server.tls.enable"), missing);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		snprintf(err, errlen, "rpc: out of memory");
		return -ENOMEM;
	}
	ret = droce_rpc_attach(stack, conf, err, errlen);
	if (ret != 0) {
		free(r);
		return ret;
	}
	tls_conf = conf;
	if (conf->rpc_tls) {
		cfg.mask |= OCK_RPC_CONFIG_USE_SSL_CALLBACK;
		cfg.getCaAndVerify = tls_ca;
		cfg.getCert = tls_cert;
		cfg.getPriKey = tls_key;
	}
	snprintf(idle, sizeof(idle), "%u", conf->rpc_heartbeat_idle);
	inet_ntop(AF_INET, &a, r->ip, sizeof(r->ip));
	snprintf(port, sizeof(port), "%u", conf->rpc_port);
	if (OckRpcServerCreateWithCfg(r->ip, conf->rpc_port, &r->server, &cfg) != OCK_RPC_OK ||
	    OckRpcServerAddService(r->server, &svc) != OCK_RPC_OK ||
	    OckRpcServerStart(r->server) != OCK_RPC_OK) {
		snprintf(err, errlen, "rpc: no hcom4db server on %s:%s (its log says why)", r->ip,
			 port);
		if (r->server != 0)
			OckRpcServerDestroy(r->server);
		droce_rpc_detach();
		free(r);
		return -EINVAL;
	}
	if (droce_rpc_telemetry_register() != 0)
		fprintf(stderr, "droce: warning: the /droce/rpc telemetry command is not registered\n");
	printf("droce: rpc: hcom4db server \"droce\" on %s:%s over RDMA, TLS %s, heartbeat %u s\n",
	       r->ip, port, conf->rpc_tls ? "on" : "off", conf->rpc_heartbeat_idle);
	*out = r;
	return 0;
}

struct stopper_arg {
	struct app_rpc *r;
	void (*then)(void *arg);
	void *arg;
};

static void *
stopper(void *p)
{
	struct stopper_arg *a = p;

	OckRpcServerDestroy(a->r->server);
	a->r->server = 0;
	a->then(a->arg);
	free(a);
	return NULL;
}

int
app_rpc_stop_async(struct app_rpc *r, void (*then)(void *arg), void *arg)
{
	struct stopper_arg *a;

	if (r->stopping)
		return 0;
	a = malloc(sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	*a = (struct stopper_arg){ r, then, arg };
	if (pthread_create(&r->stopper, NULL, stopper, a) != 0) {
		free(a);
		return -EAGAIN;
	}
	r->stopping = true;
	return 0;
}

void
app_rpc_destroy(struct app_rpc *r)
{
	if (r == NULL)
		return;
	if (r->stopping)
		pthread_join(r->stopper, NULL);
	droce_rpc_detach();
	free(r);
}

void
app_rpc_print_summary(FILE *out)
{
	struct droce_rpc_stats st;

	droce_rpc_stats_get(&st);
	fprintf(out, "droce: rpc: %" PRIu64 " sessions (%" PRIu64 " broke), %" PRIu64
		" calls served, %" PRIu64 " frames in, %" PRIu64 " out; heartbeats %" PRIu64
		" sent, %" PRIu64 " answered; TLS handshakes %" PRIu64 ", failed %" PRIu64
		"; errors: %" PRIu64 " refused, %" PRIu64 " decrypt, %" PRIu64 " protocol\n",
		st.sessions_opened, st.err_broken, st.calls_served, st.frames_in, st.frames_out,
		st.heartbeats_sent, st.heartbeats_answered, st.tls_handshakes, st.tls_failures,
		st.err_refused, st.err_decrypt, st.err_protocol);
}
