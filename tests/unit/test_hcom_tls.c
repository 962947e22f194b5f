/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * TLS 1.3 on hcom4db sessions over TCP, with certificates that
 * tests/tools/make_test_pki.sh makes with the openssl command for this
 * run: calls byte-exact through a real handshake, and each refusal a
 * reviewer would try (wrong CA, expired, not yet valid, revoked, no
 * client certificate, the verify callback's -1, a TLS 1.2 client, a
 * plaintext peer either way, a wrong passphrase, a missing callback),
 * each with its own reason in the log and nothing for the handlers. The
 * passphrase is erased once per key load and found nowhere in memory.
 */

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_common.h>

#include "hcom4db.h"
#include "hcom_checks.h"
#include "private_loopback.h"

#define LOCAL_IP "127.0.0.1"
#define SERVER_NAME "droce-tls-test"
#define SVC_ECHO 0
/* Passphrases as make_test_pki.sh sets them. */
#define SERVER_PASS "server-pass"
#define CLIENT_PASS "client-pass"

/* ---- certificates, and the callbacks that hand them out ---------------------------------- */

/* What the callbacks give the next server create or connect. */
struct side {
	const char *cert, *key, *pass, *ca, *crl;
	int verdict;                    /* what the verify callback returns */
};

static struct {
	char dir[64];
	char cert[128], key[128], ca[256], crl[128];
	const char *pass;
	int verdict[2];                 /* the client's, the server's */
	atomic_int loads, erased, verified;
} P;

static void
set_path(char *out, size_t len, const char *name)
{
	if (name == NULL || name[0] == '\0')
		snprintf(out, len, "%s", name == NULL ? "" : name);
	else
		snprintf(out, len, "%s/%s", P.dir, name);
}

static void
use(const struct side *s, bool server)
{
	set_path(P.cert, sizeof(P.cert), s->cert);
	set_path(P.key, sizeof(P.key), s->key);
	set_path(P.ca, sizeof(P.ca), s->ca);
	set_path(P.crl, sizeof(P.crl), s->crl);
	P.pass = s->pass;
	P.verdict[server] = s->verdict != 0 ? s->verdict : 1;
}

static void
get_cert(const char **path)
{
	*path = P.cert[0] != '\0' ? P.cert : NULL;
}

/* As real users do: a passphrase of its own, wiped and freed on erase. */
static void
erase_pass(char *pass)
{
	memset(pass, 0, strlen(pass));
	free(pass);
	atomic_fetch_add(&P.erased, 1);
}

static void
get_key(const char **path, char **pass, OckRpcTlsKeypassErase *erase)
{
	atomic_fetch_add(&P.loads, 1);
	*path = P.key;
	*pass = strdup(P.pass);
	*erase = erase_pass;
}

/* A side's verify callback: each side's verdict its own, since a
 * server verifies during a client's connect.
 */
static int
verify(bool server, void *x509, const char *crl)
{
	assert_non_null(x509);
	assert_non_null(crl);
	atomic_fetch_add(&P.verified, 1);
	return P.verdict[server];
}

static int
server_verify(void *x509, const char *crl)
{
	return verify(true, x509, crl);
}

static int
client_verify(void *x509, const char *crl)
{
	return verify(false, x509, crl);
}

static void
server_ca(const char **ca, const char **crl, OckRpcTlsCertVerify *v)
{
	*ca = P.ca;
	*crl = P.crl;
	*v = server_verify;
}

static void
client_ca(const char **ca, const char **crl, OckRpcTlsCertVerify *v)
{
	*ca = P.ca;
	*crl = P.crl;
	*v = client_verify;
}

static const struct side good_server = {
	"server.pem", "server.key", SERVER_PASS, "ca.pem", "crl.pem", 1,
};
static const struct side good_client = {
	"client.pem", "client.key", CLIENT_PASS, "ca.pem", "", 1,
};

/* ---- the log: each refusal says why ------------------------------------------------------ */

static struct {
	pthread_mutex_t lock;
	char text[16384];
	size_t len;
} L = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void
keep_log(int level, const char *msg)
{
	size_t n = strlen(msg);

	(void)level;
	pthread_mutex_lock(&L.lock);
	if (L.len + n + 1 < sizeof(L.text)) {
		memcpy(L.text + L.len, msg, n);
		L.len += n;
		L.text[L.len] = '\0';
	}
	pthread_mutex_unlock(&L.lock);
}

static void
log_clear(void)
{
	pthread_mutex_lock(&L.lock);
	L.len = 0;
	L.text[0] = '\0';
	pthread_mutex_unlock(&L.lock);
}

/* Whether the log says @p what, waiting up to 5 s (a server's worker
 * logs on its own time).
 */
static bool
logged(const char *what)
{
	for (int i = 0; i < 5000; i++) {
		bool found;

		pthread_mutex_lock(&L.lock);
		found = strstr(L.text, what) != NULL;
		pthread_mutex_unlock(&L.lock);
		if (found)
			return true;
		usleep(1000);
	}
	fprintf(stderr, "the log does not say \"%s\"; it says:\n%s\n", what, L.text);
	return false;
}

/* ---- a server and its clients ------------------------------------------------------------ */

static struct {
	OckRpcServer server;
	uint16_t port;
	atomic_int news, handled;
} S;

struct cfg {
	RpcConfigPair pairs[8];
	OckRpcCreateConfig c;
};

static void
cfg_make(struct cfg *g, bool tls, bool server)
{
	memset(g, 0, sizeof(*g));
	g->pairs[0] = (RpcConfigPair){ OCK_RPC_STR_SERVER_NAME, SERVER_NAME };
	g->pairs[1] = (RpcConfigPair){ OCK_RPC_STR_COMMUNICATION_TYPE, "TCP" };
	g->pairs[2] = (RpcConfigPair){ OCK_RPC_STR_ENABLE_TLS, tls ? "yes" : "no" };
	g->pairs[3] = (RpcConfigPair){ OCK_RPC_STR_SERVER_PORT_RANGE, "22000-22999" };
	g->c.mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS;
	g->c.configs = (RpcConfigs){ 4, g->pairs };
	if (tls) {
		g->c.mask |= OCK_RPC_CONFIG_USE_SSL_CALLBACK;
		g->c.getCaAndVerify = server ? server_ca : client_ca;
		g->c.getCert = get_cert;
		g->c.getPriKey = get_key;
	}
}

static int
on_new(OckRpcClient client, uint64_t usr, const char *payload)
{
	(void)client;
	(void)usr;
	(void)payload;
	atomic_fetch_add(&S.news, 1);
	return 0;
}

static void
echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	atomic_fetch_add(&S.handled, 1);
	OckRpcServerReply(ctx, SVC_ECHO, &msg, NULL);
}

/* A server as @p side says (NULL: plaintext), listening. */
static void
server_up(const struct side *side)
{
	OckRpcService svc = { SVC_ECHO, echo };
	char **ips;
	uint16_t *ports;
	int n;
	struct cfg g;

	atomic_store(&S.news, 0);
	atomic_store(&S.handled, 0);
	cfg_make(&g, side != NULL, true);
	g.pairs[g.c.configs.size++] = (RpcConfigPair){ OCK_RPC_STR_CLIENT_NEW,
						       (const char *)(uintptr_t)on_new };
	if (side != NULL)
		use(side, true);
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &S.server, &g.c), OCK_RPC_OK);
	assert_int_equal(OckRpcServerAddService(S.server, &svc), OCK_RPC_OK);
	assert_int_equal(OckRpcServerStart(S.server), OCK_RPC_OK);
	assert_true(OckRpcGetOobIpAndPort(S.server, &ips, &ports, &n));
	S.port = ports[0];
	free(ips[0]);
	free(ips);
	free(ports);
}

static void
server_down(void)
{
	OckRpcServerDestroy(S.server);
}

/* A connect as @p side says (NULL: plaintext). */
static OckRpcStatus
connect_as(const struct side *side, OckRpcClient *c)
{
	struct cfg g;

	cfg_make(&g, side != NULL, false);
	if (side != NULL)
		use(side, false);
	return OckRpcClientConnectWithCfg(LOCAL_IP, S.port, c, &g.c);
}

/* A client @p side refused with @p status, @p why in the log, and
 * nothing for the server's handlers.
 */
static void
refused(const struct side *side, OckRpcStatus status, const char *why)
{
	OckRpcClient c = 0;

	log_clear();
	assert_int_equal(connect_as(side, &c), status);
	assert_true(logged(why));
	assert_int_equal(atomic_load(&S.news), 0);
	assert_int_equal(atomic_load(&S.handled), 0);
}

/* ---- tests -------------------------------------------------------------------------------- */

static int
setup(void **state)
{
	char cmd[256];
	const char *script = getenv("DROCE_TEST_PKI");

	(void)state;
	assert_non_null(script);
	snprintf(P.dir, sizeof(P.dir), "/tmp/droce-tls-test.XXXXXX");
	assert_non_null(mkdtemp(P.dir));
	snprintf(cmd, sizeof(cmd), "%s %s", script, P.dir);
	assert_int_equal(system(cmd), 0);
	OckRpcSetExternalLogger(keep_log);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	OckRpcSetExternalLogger(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", P.dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* 10^4 calls of random sizes through TLS, every byte back; each key
 * loaded once per create or connect, its passphrase erased once.
 */
static void
test_calls_byte_exact(void **state)
{
	static uint8_t q[65536], r[65536];
	int loads = atomic_load(&P.loads), erased = atomic_load(&P.erased);
	unsigned int seed = 12345;
	OckRpcClient c;

	(void)state;
	server_up(&good_server);
	assert_int_equal(connect_as(&good_client, &c), OCK_RPC_OK);
	OckRpcClientSetTimeout(c, 20000);
	for (int i = 0; i < 10000; i++) {
		size_t len = (size_t)rand_r(&seed) % (i % 10 == 0 ? sizeof(q) : 2048);
		OckRpcMessage req = { q, len }, rsp = { r, sizeof(r) };

		for (size_t k = 0; k < len; k++)
			q[k] = (uint8_t)(k * 7 + (size_t)i);
		assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &req, &rsp, NULL), OCK_RPC_OK);
		assert_int_equal(rsp.len, len);
		assert_memory_equal(q, r, len);
	}
	assert_int_equal(atomic_load(&S.handled), 10000);
	assert_int_equal(atomic_load(&S.news), 1);
	/* Both sides checked the other with the verify callback. */
	assert_true(atomic_load(&P.verified) >= 2);
	assert_int_equal(atomic_load(&P.loads), loads + 2);
	assert_int_equal(atomic_load(&P.erased), erased + 2);
	OckRpcClientDisconnect(c);
	server_down();
}

static void
test_server_certificate_refused(void **state)
{
	struct side wrong_ca = good_client;

	(void)state;
	server_up(&good_server);
	wrong_ca.ca = "other-ca.pem";
	refused(&wrong_ca, OCK_RPC_ERR_SINATURE,
		"the server's certificate was refused: self-signed certificate in certificate chain");
	server_down();
}

static void
test_client_certificates_refused(void **state)
{
	struct side expired = good_client, future = good_client, revoked = good_client;
	struct side stranger = good_client, none = good_client;

	(void)state;
	expired.cert = "expired.pem";
	expired.key = "expired.key";
	future.cert = "future.pem";
	future.key = "future.key";
	revoked.cert = "revoked.pem";
	revoked.key = "revoked.key";
	stranger.cert = "stranger.pem";
	stranger.key = "stranger.key";
	none.cert = NULL;
	server_up(&good_server);
	refused(&expired, OCK_RPC_ERR_ENCRYPT,
		"the client's certificate was refused: certificate has expired");
	refused(&future, OCK_RPC_ERR_ENCRYPT,
		"the client's certificate was refused: certificate is not yet valid");
	refused(&revoked, OCK_RPC_ERR_ENCRYPT,
		"the client's certificate was refused: certificate revoked");
	refused(&stranger, OCK_RPC_ERR_ENCRYPT,
		"the client's certificate was refused: unable to get local issuer certificate");
	refused(&none, OCK_RPC_ERR_ENCRYPT, "peer did not return a certificate");
	assert_true(logged("the server's verdict on ours) failed: error:0A00045C:SSL routines::tlsv13 alert certificate required"));
	server_down();
}

/* The verify callback's -1 counts, on either side. */
static void
test_verify_callback_refuses(void **state)
{
	struct side says_no = good_server;

	(void)state;
	says_no.verdict = -1;
	server_up(&says_no);
	refused(&good_client, OCK_RPC_ERR_ENCRYPT, "the verify callback refused the peer's certificate (it returned -1)");
	server_down();
	server_up(&good_server);
	says_no = good_client;
	says_no.verdict = -1;
	refused(&says_no, OCK_RPC_ERR_SINATURE, "the verify callback refused the peer's certificate (it returned -1)");
	server_down();
}

/* openssl s_client offering TLS 1.2 alone gets an alert, no session. */
static void
test_tls12_client_refused(void **state)
{
	char cmd[512], out[4096] = "";
	size_t n;
	FILE *f;
	int rc;

	(void)state;
	server_up(&good_server);
	log_clear();
	snprintf(cmd, sizeof(cmd),
		 "openssl s_client -tls1_2 -connect %s:%u -CAfile %s/ca.pem -cert %s/client.pem -key %s/client.key -pass pass:" CLIENT_PASS " </dev/null 2>&1",
		 LOCAL_IP, S.port, P.dir, P.dir, P.dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	rc = pclose(f);
	assert_int_not_equal(rc, 0);
	assert_non_null(strstr(out, "alert protocol version"));
	assert_true(logged("unsupported protocol (the peer offers no TLS 1.3; droce speaks TLS 1.3 only)"));
	assert_int_equal(atomic_load(&S.news), 0);
	server_down();
}

/* A plaintext client hears that the server speaks TLS only; a TLS
 * client hears that the server closed at its hello.
 */
static void
test_plaintext_peers_refused(void **state)
{
	(void)state;
	server_up(&good_server);
	refused(NULL, OCK_RPC_ERR_ENCRYPT, "this server speaks TLS only");
	assert_true(logged("it speaks plaintext"));
	server_down();
	server_up(NULL);
	refused(&good_client, OCK_RPC_ERR_ENCRYPT, "is its server.tls.enable no?");
	assert_true(logged("speaks TLS, and server.tls.enable=no here"));
	server_down();
}

/* Configuration the server's create refuses, its key erased anyway. */
static void
test_bad_keys_and_callbacks(void **state)
{
	struct side wrong_pass = good_server;
	OckRpcServer srv = 0;
	OckRpcClient c = 0;
	struct cfg g;
	int erased;

	(void)state;
	wrong_pass.pass = "not-the-pass";
	use(&wrong_pass, true);
	cfg_make(&g, true, true);
	erased = atomic_load(&P.erased);
	log_clear();
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &g.c),
			 OCK_RPC_ERR_INVALID_PARAM);
	assert_true(logged("cannot load the private key"));
	assert_true(logged("(a wrong passphrase?)"));
	assert_int_equal(atomic_load(&P.erased), erased + 1);
	/* Each callback is needed. */
	use(&good_server, true);
	cfg_make(&g, true, true);
	g.c.getCert = NULL;
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &g.c),
			 OCK_RPC_ERR_INVALID_PARAM);
	cfg_make(&g, true, false);
	g.c.getPriKey = NULL;
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, 22000, &c, &g.c),
			 OCK_RPC_ERR_INVALID_PARAM);
	/* A CA or CRL that is not there. */
	wrong_pass = good_server;
	wrong_pass.ca = "no-such-ca.pem";
	use(&wrong_pass, true);
	cfg_make(&g, true, true);
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &g.c),
			 OCK_RPC_ERR_INVALID_PARAM);
	assert_true(logged("cannot load the CA"));
	wrong_pass = good_server;
	wrong_pass.crl = "no-such-crl.pem";
	use(&wrong_pass, true);
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &g.c),
			 OCK_RPC_ERR_INVALID_PARAM);
	assert_true(logged("cannot open the CRL"));
}

/* Whether @p len bytes of @p needle (kept XORed, so that the needle
 * itself is in no page looked at) are in a writable private mapping of
 * this process: the heap, anonymous memory, thread stacks. Read through
 * /proc/self/mem: a page unmapped meanwhile is an error there, not a
 * fault, and a sanitizer's shadow is read as it is.
 */
static bool
in_memory(const uint8_t *xored, size_t len)
{
	static uint8_t chunk[1 << 20];
	FILE *maps = fopen("/proc/self/maps", "r");
	int mem = open("/proc/self/mem", O_RDONLY);
	char line[512];
	bool found = false;

	assert_non_null(maps);
	assert_true(mem >= 0);
	while (!found && fgets(line, sizeof(line), maps) != NULL) {
		uintptr_t lo, hi;
		char perms[8], path[256] = "";

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %255s", &lo, &hi,
			   perms, path) < 3)
			continue;
		/* Files (the binary's text says the literal) and the kernel's. */
		/* Files (the binary's text says the literal), the kernel's, and
		 * reservations such as a sanitizer's shadow.
		 */
		if (perms[0] != 'r' || perms[1] != 'w' || path[0] == '/' ||
		    strcmp(path, "[vvar]") == 0 || strcmp(path, "[vsyscall]") == 0 ||
		    hi - lo > ((uintptr_t)256 << 20))
			continue;
		/* Chunks that overlap by the needle's length less one. */
		for (uintptr_t at = lo; !found && at + len <= hi; at += sizeof(chunk) - len + 1) {
			ssize_t n = pread(mem, chunk, RTE_MIN(sizeof(chunk), hi - at), (off_t)at);

			for (ssize_t i = 0; !found && i + (ssize_t)len <= n; i++) {
				size_t k = 0;

				while (k < len && (uint8_t)(chunk[i + k] ^ 0x5a) == xored[k])
					k++;
				found = k == len;
			}
		}
	}
	memset(chunk, 0, sizeof(chunk));
	close(mem);
	fclose(maps);
	return found;
}

/* The passphrases were given to OpenSSL and erased: no copy is left. */
static void
test_no_passphrase_left(void **state)
{
	uint8_t server_pass[sizeof(SERVER_PASS) - 1], client_pass[sizeof(CLIENT_PASS) - 1];
	OckRpcClient c;

	(void)state;
	for (size_t i = 0; i < sizeof(server_pass); i++)
		server_pass[i] = (uint8_t)(SERVER_PASS[i] ^ 0x5a);
	for (size_t i = 0; i < sizeof(client_pass); i++)
		client_pass[i] = (uint8_t)(CLIENT_PASS[i] ^ 0x5a);
	server_up(&good_server);
	assert_int_equal(connect_as(&good_client, &c), OCK_RPC_OK);
	assert_false(in_memory(server_pass, sizeof(server_pass)));
	assert_false(in_memory(client_pass, sizeof(client_pass)));
	OckRpcClientDisconnect(c);
	server_down();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_byte_exact),
		cmocka_unit_test(test_server_certificate_refused),
		cmocka_unit_test(test_client_certificates_refused),
		cmocka_unit_test(test_verify_callback_refuses),
		cmocka_unit_test(test_tls12_client_refused),
		cmocka_unit_test(test_plaintext_peers_refused),
		cmocka_unit_test(test_bad_keys_and_callbacks),
		cmocka_unit_test(test_no_passphrase_left),
	};

	private_loopback();
	return cmocka_run_group_tests(tests, setup, teardown);
}
