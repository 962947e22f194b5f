/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * rpc-tls: what TLS 1.3 costs hcom4db calls over TCP, TLS on against TLS
 * off in the same run, between this process and a child that serves
 * both (two servers):
 *   - synchronous calls of 64 bytes answered with 64 bytes: p50;
 *   - one-way asynchronous calls of 64 KiB, as many in flight as the
 *     session takes, and one synchronous call at the end: GB/s.
 * The certificates (an EC P-256 CA and its server and client) are made
 * for the run in a temporary folder with OpenSSL.
 */

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <rte_cycles.h>

#include "hcom4db.h"
#include "bench.h"

#define TLS_RTT_ITERS 10000
#define TLS_BULK_BYTES 65536
#define TLS_BULK_CALLS 4000
#define SVC_ECHO 0
#define SVC_SINK 1

/* ---- certificates for the run ------------------------------------------------------------ */

static char pki_dir[64];
static bool as_server;
static char pki_path[3][128];

static EVP_PKEY *
new_key(void)
{
	return EVP_EC_gen("P-256");
}

/* A certificate for @p key named @p cn, signed by @p ca_key (itself when
 * NULL: the CA).
 */
static X509 *
new_cert(EVP_PKEY *key, const char *cn, EVP_PKEY *ca_key, X509 *ca, long serial)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	X509V3_CTX v3;
	X509_EXTENSION *ext;

	if (x == NULL || name == NULL)
		goto fail;
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_subject_name(x, name);
	X509_set_issuer_name(x, ca != NULL ? X509_get_subject_name(ca) : name);
	X509_set_pubkey(x, key);
	X509V3_set_ctx(&v3, ca != NULL ? ca : x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints,
				  ca == NULL ? "critical,CA:TRUE" : "CA:FALSE");
	if (ext == NULL || X509_add_ext(x, ext, -1) != 1)
		goto fail;
	X509_EXTENSION_free(ext);
	if (X509_sign(x, ca_key != NULL ? ca_key : key, EVP_sha256()) == 0)
		goto fail;
	X509_NAME_free(name);
	return x;
fail:
	X509_NAME_free(name);
	X509_free(x);
	return NULL;
}

static bool
write_pem(const char *name, X509 *x, EVP_PKEY *k)
{
	char path[128];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", pki_dir, name);
	f = fopen(path, "w");
	if (f == NULL)
		return false;
	ok = x != NULL ? PEM_write_X509(f, x) == 1
		       : PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
	return fclose(f) == 0 && ok;
}

static bool
make_pki(void)
{
	EVP_PKEY *ca_key = new_key(), *s_key = new_key(), *c_key = new_key();
	X509 *ca = NULL, *s = NULL, *c = NULL;
	bool ok = false;

	snprintf(pki_dir, sizeof(pki_dir), "/tmp/droce-bench-tls.XXXXXX");
	if (mkdtemp(pki_dir) == NULL || ca_key == NULL || s_key == NULL || c_key == NULL)
		goto out;
	ca = new_cert(ca_key, "droce-bench CA", NULL, NULL, 1);
	s = ca != NULL ? new_cert(s_key, "droce-bench server", ca_key, ca, 2) : NULL;
	c = ca != NULL ? new_cert(c_key, "droce-bench client", ca_key, ca, 3) : NULL;
	ok = s != NULL && c != NULL && write_pem("ca.pem", ca, NULL) &&
	     write_pem("server.pem", s, NULL) && write_pem("server.key", NULL, s_key) &&
	     write_pem("client.pem", c, NULL) && write_pem("client.key", NULL, c_key);
out:
	X509_free(ca);
	X509_free(s);
	X509_free(c);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(s_key);
	EVP_PKEY_free(c_key);
	return ok;
}

static void
remove_pki(void)
{
	static const char *const names[] = { "ca.pem", "server.pem", "server.key", "client.pem",
					     "client.key" };
	char path[128];

	for (size_t i = 0; i < RTE_DIM(names); i++) {
		snprintf(path, sizeof(path), "%s/%s", pki_dir, names[i]);
		unlink(path);
	}
	rmdir(pki_dir);
}

static void
tls_cert(const char **path)
{
	snprintf(pki_path[0], sizeof(pki_path[0]), "%s/%s.pem", pki_dir,
		 as_server ? "server" : "client");
	*path = pki_path[0];
}

static void
tls_key(const char **path, char **pass, OckRpcTlsKeypassErase *erase)
{
	snprintf(pki_path[1], sizeof(pki_path[1]), "%s/%s.key", pki_dir,
		 as_server ? "server" : "client");
	*path = pki_path[1];
	*pass = NULL;           /* the keys are not encrypted */
	*erase = NULL;
}

static int
tls_verify(void *x509, const char *crl)
{
	(void)crl;
	return x509 != NULL ? 1 : -1;
}

static void
tls_ca(const char **ca, const char **crl, OckRpcTlsCertVerify *verify)
{
	snprintf(pki_path[2], sizeof(pki_path[2]), "%s/ca.pem", pki_dir);
	*ca = pki_path[2];
	*crl = "";
	*verify = tls_verify;
}

/* ---- both sides' configuration ------------------------------------------------------------- */

struct config {
	RpcConfigPair pairs[5];
	OckRpcCreateConfig c;
};

static void
config(struct config *g, bool tls)
{
	memset(g, 0, sizeof(*g));
	g->pairs[0] = (RpcConfigPair){ OCK_RPC_STR_SERVER_NAME, "droce-bench" };
	g->pairs[1] = (RpcConfigPair){ OCK_RPC_STR_COMMUNICATION_TYPE, "TCP" };
	g->pairs[2] = (RpcConfigPair){ OCK_RPC_STR_ENABLE_TLS, tls ? "yes" : "no" };
	g->pairs[3] = (RpcConfigPair){ OCK_RPC_STR_SERVER_PORT_RANGE, "24000-24999" };
	g->pairs[4] = (RpcConfigPair){ OCK_RPC_STR_HEATBEAT_IDLE, "60" };
	g->c.mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS;
	g->c.configs = (RpcConfigs){ 5, g->pairs };
	if (tls) {
		g->c.mask |= OCK_RPC_CONFIG_USE_SSL_CALLBACK;
		g->c.getCaAndVerify = tls_ca;
		g->c.getCert = tls_cert;
		g->c.getPriKey = tls_key;
	}
}

/* ---- the server process ---------------------------------------------------------------------- */

static void
echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcServerReply(ctx, SVC_ECHO, &msg, NULL);
}

static void
sink(OckRpcServerContext ctx, OckRpcMessage msg)
{
	(void)ctx;
	(void)msg;
}

static uint16_t
serve(bool tls, OckRpcServer *server)
{
	OckRpcService e = { SVC_ECHO, echo }, s = { SVC_SINK, sink };
	uint16_t port, *ports;
	struct config g;
	char **ips;
	int n;

	config(&g, tls);
	if (OckRpcServerCreateWithCfg("127.0.0.1", 0, server, &g.c) != OCK_RPC_OK ||
	    OckRpcServerAddService(*server, &e) != OCK_RPC_OK ||
	    OckRpcServerAddService(*server, &s) != OCK_RPC_OK ||
	    OckRpcServerStart(*server) != OCK_RPC_OK ||
	    !OckRpcGetOobIpAndPort(*server, &ips, &ports, &n))
		return 0;
	port = ports[0];
	free(ips[0]);
	free(ips);
	free(ports);
	return port;
}

/* Both servers until the parent goes; their ports up the pipe first. */
static void
server_main(int to_parent, int from_parent)
{
	OckRpcServer plain = 0, secure = 0;
	uint16_t ports[2];
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	as_server = true;
	ports[0] = serve(false, &plain);
	ports[1] = serve(true, &secure);
	if (write(to_parent, ports, sizeof(ports)) != sizeof(ports) || ports[0] == 0 ||
	    ports[1] == 0)
		_exit(1);
	while (read(from_parent, &c, 1) > 0)
		;
	OckRpcServerDestroy(plain);
	OckRpcServerDestroy(secure);
	_exit(0);
}

/* ---- the client ------------------------------------------------------------------------------- */

static atomic_ulong sunk;

static void
sunk_done(OckRpcStatus status, void *arg)
{
	(void)arg;
	if (status == OCK_RPC_OK)
		atomic_fetch_add(&sunk, 1);
}

/* p50 of 64-byte round trips, in microseconds; < 0 on a failure. */
static double
rtt_p50(OckRpcClient c)
{
	static uint64_t rtt[TLS_RTT_ITERS];
	uint8_t q[64] = { 1 }, r[64];
	double p50, p99;

	for (unsigned int i = 0; i < TLS_RTT_ITERS; i++) {
		OckRpcMessage req = { q, sizeof(q) }, rsp = { r, sizeof(r) };
		uint64_t t0 = rte_rdtsc();

		if (OckRpcClientCall(c, SVC_ECHO, &req, &rsp, NULL) != OCK_RPC_OK)
			return -1;
		rtt[i] = rte_rdtsc() - t0;
	}
	bench_percentiles(rtt, TLS_RTT_ITERS, &p50, &p99);
	return p50;
}

/* GB/s of one-way 64 KiB calls (and a sync one after them); < 0 on a failure. */
static double
bulk_gbps(OckRpcClient c)
{
	static uint8_t q[TLS_BULK_BYTES];
	uint8_t r[64];
	OckRpcMessage req = { q, sizeof(q) }, small = { q, sizeof(r) }, rsp = { r, sizeof(r) };
	OckRpcCallDone done = { sunk_done, NULL };
	double t0 = bench_now(), t;

	atomic_store(&sunk, 0);
	for (unsigned int i = 0; i < TLS_BULK_CALLS; i++) {
		OckRpcStatus st;

		while ((st = OckRpcClientCall(c, SVC_SINK, &req, NULL, &done)) ==
		       OCK_RPC_ERR_NO_MEMORY)
			;
		if (st != OCK_RPC_OK)
			return -1;
	}
	/* Answered after every call before it: the session keeps order. */
	if (OckRpcClientCall(c, SVC_ECHO, &small, &rsp, NULL) != OCK_RPC_OK)
		return -1;
	t = bench_now() - t0;
	while (atomic_load(&sunk) < TLS_BULK_CALLS)
		;
	return (double)TLS_BULK_CALLS * TLS_BULK_BYTES / t / 1e9;
}

int
bench_rpc_tls(const struct bench_opts *o)
{
	double plain_rtt[BENCH_MAX_ROUNDS], tls_rtt[BENCH_MAX_ROUNDS];
	double plain_bulk[BENCH_MAX_ROUNDS], tls_bulk[BENCH_MAX_ROUNDS];
	int to_child[2], to_parent[2], status, ret = 1;
	OckRpcClient plain = 0, secure = 0;
	uint16_t ports[2] = { 0, 0 };
	struct config g;
	pid_t pid;

	if (!make_pki()) {
		fprintf(stderr, "droce-bench rpc-tls: cannot make the certificates\n");
		return 1;
	}
	if (pipe(to_child) != 0 || pipe(to_parent) != 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		server_main(to_parent[1], to_child[0]);
	}
	close(to_child[0]);
	close(to_parent[1]);
	if (pid < 0 || read(to_parent[0], ports, sizeof(ports)) != sizeof(ports) || ports[0] == 0)
		goto no_server;
	config(&g, false);
	if (OckRpcClientConnectWithCfg("127.0.0.1", ports[0], &plain, &g.c) != OCK_RPC_OK)
		goto no_server;
	config(&g, true);
	if (OckRpcClientConnectWithCfg("127.0.0.1", ports[1], &secure, &g.c) != OCK_RPC_OK)
		goto no_server;
	printf("  over TCP loopback, server in a child process: %u round trips of 64 B, %u one-way calls of %u KiB a round\n",
	       TLS_RTT_ITERS, TLS_BULK_CALLS, TLS_BULK_BYTES / 1024);
	for (unsigned int r = 0; r < o->rounds; r++) {
		plain_rtt[r] = rtt_p50(plain);
		tls_rtt[r] = rtt_p50(secure);
		plain_bulk[r] = bulk_gbps(plain);
		tls_bulk[r] = bulk_gbps(secure);
		if (plain_rtt[r] < 0 || tls_rtt[r] < 0 || plain_bulk[r] < 0 || tls_bulk[r] < 0) {
			fprintf(stderr, "droce-bench rpc-tls: a pass failed\n");
			goto out;
		}
		printf("  round %u: 64 B call p50 %.1f us (TLS %.1f); 64 KiB one-way %.2f GB/s (TLS %.2f)\n",
		       r + 1, plain_rtt[r], tls_rtt[r], plain_bulk[r], tls_bulk[r]);
		fflush(stdout);
	}
	printf("  64 B sync call p50: TLS %.1f us vs plaintext %.1f us = %.2fx the time\n",
	       bench_median(tls_rtt, o->rounds), bench_median(plain_rtt, o->rounds),
	       bench_median(tls_rtt, o->rounds) / bench_median(plain_rtt, o->rounds));
	printf("  64 KiB one-way: TLS %.2f GB/s vs plaintext %.2f GB/s = %.2fx the throughput\n",
	       bench_median(tls_bulk, o->rounds), bench_median(plain_bulk, o->rounds),
	       bench_median(tls_bulk, o->rounds) / bench_median(plain_bulk, o->rounds));
	ret = 0;
	goto out;
no_server:
	fprintf(stderr, "droce-bench rpc-tls: no server\n");
out:
	if (plain != 0)
		OckRpcClientDisconnect(plain);
	if (secure != 0)
		OckRpcClientDisconnect(secure);
	close(to_child[1]);     /* the servers end */
	close(to_parent[0]);
	if (pid > 0 && waitpid(pid, &status, 0) < 0)
		kill(pid, SIGKILL);
	remove_pki();
	return ret;
}
