/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * TLS 1.3 for RPC sessions with OpenSSL: mutual authentication from the
 * hcom4db callbacks, AES-GCM only, no tickets. A session's SSL talks to
 * one end of a BIO pair (fixed buffers, so the data path allocates
 * nothing); the transport moves the other end's bytes. A server's
 * handshake runs on its worker as bytes arrive; a client's runs in its
 * connect, over the opening's blocking I/O, a record at a time.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "rpc_tls.h"

/* Each direction of a session's BIO pair: four full records. */
#define TLS_PAIR_BYTES (64 * 1024)
/* A record's header: type, version, length. */
#define TLS_RECORD_HDR 5
#define TLS_RECORD_MAX (16384 + 256)
/* Plaintext a read takes at most: a record's. */
#define TLS_READ_CHUNK 16384
#define TLS_CIPHERS "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256"
/* The key rendezvous buffers are sealed with: TLS's exporter's, the
 * session's own.
 */
#define SEAL_LABEL "EXPORTER-droce-rndv"
#define SEAL_KEY_BYTES 32
/* EVP takes an int: buffers of up to 4 GiB go in pieces. */
#define SEAL_PIECE (1u << 30)

struct rpc_tls_ctx {
	SSL_CTX *ssl;
	atomic_int refs;
	OckRpcTlsCertVerify verify;     /* the user's verdict after OpenSSL's */
	char *crl;                      /* its path, for the verify callback */
	char who[160];
};

struct rpc_tls {
	struct rpc_tls_ctx *ctx;
	SSL *ssl;
	BIO *net;                       /* the pair's end the transport moves */
	bool server;
	bool established;
	bool first_byte_seen;           /* a server looked at what the client speaks */
	/* Set once the handshake is done; read by any thread after. */
	uint8_t seal_key[SEAL_KEY_BYTES];
	atomic_uint_fast64_t seal_seq;  /* a sealing's nonce: never twice */
	/* A client's opening: the blocking I/O under it. */
	const struct rpc_opening *io;
};

/* ---- messages ---------------------------------------------------------------------- */

/* OpenSSL's error queue, emptied into @p buf ("" if empty). */
static const char *
tls_errors(char *buf, size_t len)
{
	unsigned long e;
	size_t off = 0;

	buf[0] = '\0';
	while ((e = ERR_get_error()) != 0 && off + 2 < len) {
		char one[256];

		ERR_error_string_n(e, one, sizeof(one));
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off != 0 ? "; " : "", one);
	}
	return buf;
}

/* ---- contexts ---------------------------------------------------------------------- */

static int
verify_peer(X509_STORE_CTX *x, void *arg)
{
	struct rpc_tls_ctx *c = arg;
	int v;

	/* OpenSSL's verdict first: the chain to a CA given, the dates and
	 * the CRL; then the user's.
	 */
	if (X509_verify_cert(x) <= 0)
		return 0;
	if (c->verify == NULL)
		return 1;
	v = c->verify(x, c->crl != NULL ? c->crl : "");
	if (v == 1)
		return 1;
	RPC_LOG(ERR, "%s: the verify callback refused the peer's certificate (it returned %d)",
		c->who, v);
	X509_STORE_CTX_set_error(x, X509_V_ERR_APPLICATION_VERIFICATION);
	return 0;
}

/* The passphrase goes to OpenSSL's buffer (which it wipes), nowhere else. */
static int
give_passphrase(char *buf, int size, int rwflag, void *arg)
{
	const char *pass = arg;
	size_t n = pass != NULL ? strlen(pass) : 0;

	(void)rwflag;
	if (n > (size_t)size)
		return -1;
	memcpy(buf, pass, n);
	return (int)n;
}

static OckRpcStatus
load_key(struct rpc_tls_ctx *c, const struct rpc_conf *conf)
{
	const char *path = NULL;
	char *pass = NULL, err[512];
	OckRpcTlsKeypassErase erase = NULL;
	EVP_PKEY *key = NULL;
	BIO *f;

	conf->tls_key(&path, &pass, &erase);
	if (path != NULL && (f = BIO_new_file(path, "r")) != NULL) {
		key = PEM_read_bio_PrivateKey(f, NULL, give_passphrase, pass);
		BIO_free(f);
	}
	/* Once loaded (or not), the passphrase is not needed: erased now,
	 * by the user's function, or here if there is none.
	 */
	if (pass != NULL) {
		if (erase != NULL)
			erase(pass);
		else
			OPENSSL_cleanse(pass, strlen(pass));
	}
	if (key == NULL) {
		tls_errors(err, sizeof(err));
		RPC_LOG(ERR, "%s: cannot load the private key %s: %s%s", c->who,
			path != NULL ? path : "(the key callback gave no path)", err,
			strstr(err, "bad decrypt") != NULL ? " (a wrong passphrase?)" : "");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (SSL_CTX_use_PrivateKey(c->ssl, key) != 1 || SSL_CTX_check_private_key(c->ssl) != 1) {
		RPC_LOG(ERR, "%s: the private key %s does not go with the certificate: %s", c->who,
			path, tls_errors(err, sizeof(err)));
		EVP_PKEY_free(key);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	EVP_PKEY_free(key);
	return OCK_RPC_OK;
}

/* CA files or folders, ':'-separated. */
static OckRpcStatus
load_cas(struct rpc_tls_ctx *c, const char *paths)
{
	char *copy, *save = NULL, err[512];
	int n = 0;

	if (paths == NULL || paths[0] == '\0') {
		RPC_LOG(ERR, "%s: no CA: the CA callback gave no path", c->who);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	copy = strdup(paths);
	if (copy == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	for (char *p = strtok_r(copy, ":", &save); p != NULL; p = strtok_r(NULL, ":", &save)) {
		struct stat st;
		int ok = stat(p, &st) == 0 && S_ISDIR(st.st_mode) ?
			 SSL_CTX_load_verify_dir(c->ssl, p) : SSL_CTX_load_verify_file(c->ssl, p);

		if (ok != 1) {
			RPC_LOG(ERR, "%s: cannot load the CA %s: %s", c->who, p,
				tls_errors(err, sizeof(err)));
			free(copy);
			return OCK_RPC_ERR_INVALID_PARAM;
		}
		n++;
	}
	free(copy);
	if (n == 0) {
		RPC_LOG(ERR, "%s: no CA in \"%s\"", c->who, paths);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	return OCK_RPC_OK;
}

/* Every CRL of a PEM file, enforced for the peer's certificate. */
static OckRpcStatus
load_crl(struct rpc_tls_ctx *c, const char *path)
{
	X509_STORE *store = SSL_CTX_get_cert_store(c->ssl);
	X509_CRL *crl;
	char err[512];
	int n = 0;
	BIO *f;

	f = BIO_new_file(path, "r");
	if (f == NULL) {
		RPC_LOG(ERR, "%s: cannot open the CRL %s: %s", c->who, path,
			tls_errors(err, sizeof(err)));
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	while ((crl = PEM_read_bio_X509_CRL(f, NULL, NULL, NULL)) != NULL) {
		X509_STORE_add_crl(store, crl);
		X509_CRL_free(crl);
		n++;
	}
	BIO_free(f);
	ERR_clear_error();      /* the end of the file */
	if (n == 0) {
		RPC_LOG(ERR, "%s: no CRL in %s (PEM expected)", c->who, path);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
	return OCK_RPC_OK;
}

static OckRpcStatus
load_cert(struct rpc_tls_ctx *c, const struct rpc_conf *conf, bool server, bool *have)
{
	const char *path = NULL;
	char err[512];

	conf->tls_cert(&path);
	*have = path != NULL && path[0] != '\0';
	if (!*have) {
		/* A client may have none; the server will refuse it. */
		if (!server)
			return OCK_RPC_OK;
		RPC_LOG(ERR, "%s: the certificate callback gave no path", c->who);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (SSL_CTX_use_certificate_chain_file(c->ssl, path) != 1) {
		RPC_LOG(ERR, "%s: cannot load the certificate %s: %s", c->who, path,
			tls_errors(err, sizeof(err)));
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	return OCK_RPC_OK;
}

struct rpc_tls_ctx *
rpc_tls_ctx_new(const struct rpc_conf *conf, bool server, const char *who,
		OckRpcStatus *status)
{
	struct rpc_tls_ctx *c = calloc(1, sizeof(*c));
	const char *ca = NULL, *crl = NULL;
	char err[512];
	bool have_cert = false;
	OckRpcStatus st = OCK_RPC_ERR_NO_MEMORY;

	if (c == NULL) {
		RPC_LOG(ERR, "%s: out of memory for TLS", who);
		goto fail;
	}
	atomic_init(&c->refs, 1);
	snprintf(c->who, sizeof(c->who), "%s", who);
	c->ssl = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (c->ssl == NULL) {
		RPC_LOG(ERR, "%s: SSL_CTX_new: %s", who, tls_errors(err, sizeof(err)));
		goto fail;
	}
	/* TLS 1.3 alone, AES-GCM alone (AES-NI), no tickets to resume with. */
	SSL_CTX_set_min_proto_version(c->ssl, TLS1_3_VERSION);
	SSL_CTX_set_max_proto_version(c->ssl, TLS1_3_VERSION);
	SSL_CTX_set_options(c->ssl, SSL_OP_NO_TICKET);
	SSL_CTX_set_num_tickets(c->ssl, 0);
	SSL_CTX_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE);
	if (SSL_CTX_set_ciphersuites(c->ssl, TLS_CIPHERS) != 1) {
		RPC_LOG(ERR, "%s: ciphersuites %s: %s", who, TLS_CIPHERS,
			tls_errors(err, sizeof(err)));
		st = OCK_RPC_ERR;
		goto fail;
	}
	st = load_cert(c, conf, server, &have_cert);
	if (st == OCK_RPC_OK && have_cert)
		st = load_key(c, conf);
	if (st != OCK_RPC_OK)
		goto fail;
	conf->tls_ca(&ca, &crl, &c->verify);
	st = load_cas(c, ca);
	if (st == OCK_RPC_OK && crl != NULL && crl[0] != '\0') {
		c->crl = strdup(crl);
		st = c->crl != NULL ? load_crl(c, crl) : OCK_RPC_ERR_NO_MEMORY;
	}
	if (st != OCK_RPC_OK)
		goto fail;
	/* Both sides show a certificate and check the other's. */
	SSL_CTX_set_verify(c->ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_cert_verify_callback(c->ssl, verify_peer, c);
	return c;
fail:
	*status = st;
	rpc_tls_ctx_free(c);
	return NULL;
}

void
rpc_tls_ctx_free(struct rpc_tls_ctx *c)
{
	if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	SSL_CTX_free(c->ssl);
	free(c->crl);
	free(c);
}

/* ---- sessions ---------------------------------------------------------------------- */

struct rpc_tls *
rpc_tls_new(struct rpc_tls_ctx *c, bool server)
{
	struct rpc_tls *t = calloc(1, sizeof(*t));
	BIO *inner = NULL;

	if (t == NULL)
		return NULL;
	t->ssl = SSL_new(c->ssl);
	if (t->ssl == NULL ||
	    BIO_new_bio_pair(&inner, TLS_PAIR_BYTES, &t->net, TLS_PAIR_BYTES) != 1) {
		SSL_free(t->ssl);
		free(t);
		return NULL;
	}
	SSL_set_bio(t->ssl, inner, inner);
	if (server)
		SSL_set_accept_state(t->ssl);
	else
		SSL_set_connect_state(t->ssl);
	t->server = server;
	t->ctx = c;
	atomic_fetch_add(&c->refs, 1);
	return t;
}

void
rpc_tls_free(struct rpc_tls *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);       /* and the pair's inner end */
	BIO_free(t->net);
	rpc_tls_ctx_free(t->ctx);
	free(t);
}

/* Why a handshake failed: our verdict on the peer's certificate, or
 * OpenSSL's reasons (the peer's alert among them).
 */
static void
handshake_failed(struct rpc_tls *t, const char *peer, const char *what)
{
	long v = SSL_get_verify_result(t->ssl);
	bool old = ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNSUPPORTED_PROTOCOL;
	char err[512];

	rpc_count(RPC_TLS_FAILURES, 1);
	tls_errors(err, sizeof(err));
	if (v != X509_V_OK)
		RPC_LOG(ERR, "%s: TLS %s: the %s's certificate was refused: %s", peer, what,
			t->server ? "client" : "server", X509_verify_cert_error_string(v));
	else
		RPC_LOG(ERR, "%s: TLS %s failed: %s%s", peer, what, err[0] != '\0' ? err :
			"the peer closed the connection",
			old ? " (the peer offers no TLS 1.3; droce speaks TLS 1.3 only)" : "");
}

/* What a failed handshake returns: our verdict on the peer's
 * certificate, or any other refusal.
 */
static OckRpcStatus
handshake_status(const struct rpc_tls *t)
{
	return SSL_get_verify_result(t->ssl) != X509_V_OK ? OCK_RPC_ERR_SINATURE
							  : OCK_RPC_ERR_ENCRYPT;
}

/* The handshake is done: the sealing key, from TLS's exporter. */
static bool
handshake_done(struct rpc_tls *t, const char *peer)
{
	char err[512];

	if (SSL_export_keying_material(t->ssl, t->seal_key, sizeof(t->seal_key), SEAL_LABEL,
				       strlen(SEAL_LABEL), NULL, 0, 0) != 1) {
		RPC_LOG(ERR, "%s: TLS exporter: %s", peer, tls_errors(err, sizeof(err)));
		rpc_count(RPC_TLS_FAILURES, 1);
		return false;
	}
	atomic_init(&t->seal_seq, 0);
	t->established = true;
	rpc_count(RPC_TLS_HANDSHAKES, 1);
	return true;
}

/* ---- a client's opening -------------------------------------------------------------- */

/* What SSL wrote, to the opening's I/O. */
static int
opening_push(struct rpc_tls *t)
{
	char *p;
	int n;

	while ((n = BIO_nread0(t->net, &p)) > 0) {
		int ret = t->io->write_all(t->io->arg, p, (size_t)n);

		if (ret != 0)
			return ret;
		BIO_nread(t->net, &p, n);
	}
	return 0;
}

/* One record from the opening's I/O, to SSL. */
static int
opening_pull(struct rpc_tls *t)
{
	uint8_t rec[TLS_RECORD_HDR + TLS_RECORD_MAX];
	size_t len;
	int ret = t->io->read_exact(t->io->arg, rec, TLS_RECORD_HDR);

	if (ret != 0)
		return ret;
	len = ((size_t)rec[3] << 8) | rec[4];
	if (len > TLS_RECORD_MAX)
		return -EPROTO;
	ret = t->io->read_exact(t->io->arg, rec + TLS_RECORD_HDR, len);
	if (ret != 0)
		return ret;
	return BIO_write(t->net, rec, (int)(TLS_RECORD_HDR + len)) ==
	       (int)(TLS_RECORD_HDR + len) ? 0 : -ENOBUFS;
}

/* Run @p op (a handshake step, a read or a write) until it is done,
 * moving records both ways; its result (> 0), or -1 (and *io_err if the
 * I/O under it failed).
 */
static int
opening_drive(struct rpc_tls *t, int (*op)(struct rpc_tls *t, void *buf, int len), void *buf,
	      int len, int *io_err)
{
	for (;;) {
		int r = op(t, buf, len), e;

		*io_err = opening_push(t);
		if (*io_err != 0)
			return -1;
		if (r > 0)
			return r;
		e = SSL_get_error(t->ssl, r);
		if (e == SSL_ERROR_WANT_WRITE)
			continue;       /* the pair had no room: pushed now */
		if (e != SSL_ERROR_WANT_READ)
			return -1;
		*io_err = opening_pull(t);
		if (*io_err != 0)
			return -1;
	}
}

static int
op_connect(struct rpc_tls *t, void *buf, int len)
{
	(void)buf;
	(void)len;
	return SSL_do_handshake(t->ssl);
}

static int
op_read(struct rpc_tls *t, void *buf, int len)
{
	return SSL_read(t->ssl, buf, len);
}

static int
op_write(struct rpc_tls *t, void *buf, int len)
{
	return SSL_write(t->ssl, buf, len);
}

static int
tls_write_all(void *arg, const void *buf, size_t len)
{
	struct rpc_tls *t = arg;
	int io_err = 0;

	while (len != 0) {
		int n = opening_drive(t, op_write, (void *)(uintptr_t)buf,
				      (int)RTE_MIN(len, (size_t)TLS_READ_CHUNK), &io_err);

		if (n <= 0)
			return io_err != 0 ? io_err : -EPROTO;
		buf = (const uint8_t *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

static int
tls_read_exact(void *arg, void *buf, size_t len)
{
	struct rpc_tls *t = arg;
	int io_err = 0;

	while (len != 0) {
		int n = opening_drive(t, op_read, buf, (int)RTE_MIN(len, (size_t)TLS_READ_CHUNK),
				      &io_err);

		if (n <= 0) {
			/* The server's refusal of our certificate comes as an
			 * alert where its WELCOME would.
			 */
			handshake_failed(t, t->io->where, "session (the server's verdict on ours)");
			return io_err != 0 ? io_err : -EPROTO;
		}
		buf = (uint8_t *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

OckRpcStatus
rpc_tls_client_open(struct rpc_tls *t, const struct rpc_opening *io, struct rpc_opening *tls_io)
{
	int io_err = 0;

	t->io = io;
	if (opening_drive(t, op_connect, NULL, 0, &io_err) <= 0) {
		char what[96];

		snprintf(what, sizeof(what), "handshake%s%s", io_err != 0 ? " (" : "",
			 io_err != 0 ? strerror(-io_err) : "");
		if (io_err != 0)
			strcat(what, ")");
		handshake_failed(t, io->where, what);
		if (io_err != 0 && SSL_get_verify_result(t->ssl) == X509_V_OK)
			RPC_LOG(ERR, "%s: the server closed the connection during the TLS handshake: is its %s no?",
				io->where, OCK_RPC_STR_ENABLE_TLS);
		return handshake_status(t);
	}
	if (!handshake_done(t, io->where))
		return OCK_RPC_ERR_ENCRYPT;
	*tls_io = (struct rpc_opening){ .write_all = tls_write_all, .read_exact = tls_read_exact,
					.arg = t, .where = io->where };
	return OCK_RPC_OK;
}

/* ---- the session's data path --------------------------------------------------------------- */

bool
rpc_tls_pending(const struct rpc_session *s)
{
	return BIO_ctrl_pending(s->tls->net) != 0;
}

/* A server's TLS meets a client that speaks plaintext RPC: it hears why
 * in a plaintext WELCOME, which it can read.
 */
static void
refuse_plaintext(struct rpc_session *s, uint8_t first)
{
	static const char why[] = "this server speaks TLS only (server.tls.enable=yes)";
	struct rpc_frame f = { .kind = RPC_WELCOME, .status = OCK_RPC_ERR_ENCRYPT,
			       .payload_len = sizeof(why) };
	uint8_t buf[RPC_FRAME_HDR_SIZE + sizeof(why)];

	RPC_LOG(ERR, "session with %s refused: it speaks plaintext (its first byte %#04x is not a TLS handshake record), and %s=yes here",
		s->peer, first, OCK_RPC_STR_ENABLE_TLS);
	rpc_frame_encode(&f, buf);
	memcpy(buf + RPC_FRAME_HDR_SIZE, why, sizeof(why));
	s->ops->write(s, buf, sizeof(buf));
	rpc_session_close(s, OCK_RPC_ERR_ENCRYPT);
}

/* Decrypted bytes to the session's frames, until SSL wants more. */
static void
take_plaintext(struct rpc_session *s)
{
	struct rpc_tls *t = s->tls;
	char err[512];

	while (s->state != SESSION_ENDED) {
		size_t want = RTE_MIN(s->rx_len + TLS_READ_CHUNK,
				      (size_t)RPC_FRAME_HDR_SIZE + s->max_payload);
		int n, e;

		if (!rpc_session_rx_room(s, RTE_MAX(want, s->rx_len + 1))) {
			rpc_session_close(s, OCK_RPC_ERR_NO_MEMORY);
			return;
		}
		n = SSL_read(t->ssl, s->rx + s->rx_len, (int)(s->rx_cap - s->rx_len));
		if (n > 0) {
			s->rx_len += (size_t)n;
			rpc_session_take_frames(s);
			continue;
		}
		e = SSL_get_error(t->ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			return;
		if (e == SSL_ERROR_ZERO_RETURN) {
			RPC_LOG(INFO, "session with %s: the peer closed its TLS", s->peer);
			rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
			return;
		}
		/* A record that fails its tag: tampered with on the way. */
		RPC_LOG(ERR, "session with %s: TLS: %s; the session ends", s->peer,
			tls_errors(err, sizeof(err)));
		rpc_session_close(s, OCK_RPC_ERR_DECRYPT);
		return;
	}
}

/* What came is in the pair: a handshake step, then the plaintext. */
static void
take_records(struct rpc_session *s)
{
	struct rpc_tls *t = s->tls;

	if (!t->established) {
		int r = SSL_do_handshake(t->ssl);

		if (r != 1) {
			if (SSL_get_error(t->ssl, r) != SSL_ERROR_WANT_READ) {
				handshake_failed(t, s->peer, "handshake");
				/* Its alert, for the peer to read. */
				rpc_tls_flush(s);
				rpc_session_close(s, handshake_status(t));
				return;
			}
			rpc_tls_flush(s);
			return;
		}
		if (!handshake_done(t, s->peer)) {
			rpc_session_close(s, OCK_RPC_ERR_ENCRYPT);
			return;
		}
	}
	take_plaintext(s);
	/* Anything SSL answered on its own (a key update, an alert). */
	if (s->state != SESSION_ENDED && rpc_tls_pending(s))
		rpc_tls_flush(s);
}

/* A server looks at the first byte: plaintext RPC is refused so that
 * the client can read why.
 */
static bool
plaintext_client(struct rpc_session *s, uint8_t first)
{
	struct rpc_tls *t = s->tls;

	if (!t->server || t->first_byte_seen)
		return false;
	t->first_byte_seen = true;
	if (first == RPC_TLS_HANDSHAKE_RECORD)
		return false;
	refuse_plaintext(s, first);
	return true;
}

void *
rpc_tls_in_room(struct rpc_session *s, size_t *room)
{
	char *p = NULL;
	ssize_t n = BIO_nwrite0(s->tls->net, &p);

	*room = n > 0 ? (size_t)n : 0;
	return p;
}

void
rpc_tls_commit(struct rpc_session *s, size_t len)
{
	char *p = NULL;

	if (len == 0 || s->state == SESSION_ENDED)
		return;
	BIO_nwrite0(s->tls->net, &p);
	if (plaintext_client(s, *(uint8_t *)p))
		return;
	BIO_nwrite(s->tls->net, &p, (int)len);
	rpc_session_peer_alive(s);
	take_records(s);
}

void
rpc_tls_take(struct rpc_session *s)
{
	if (s->state != SESSION_ENDED)
		take_records(s);
}

void
rpc_tls_bytes_in(struct rpc_session *s, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len != 0 && s->state != SESSION_ENDED) {
		size_t room;
		void *to = rpc_tls_in_room(s, &room);

		if (room == 0) {
			/* SSL holds a whole pair's worth it cannot read yet. */
			RPC_LOG(ERR, "session with %s: TLS: %d bytes wait undecrypted; the session ends",
				s->peer, TLS_PAIR_BYTES);
			rpc_session_close(s, OCK_RPC_ERR_DECRYPT);
			return;
		}
		room = RTE_MIN(room, len);
		memcpy(to, p, room);
		rpc_tls_commit(s, room);
		p += room;
		len -= room;
	}
}

void
rpc_tls_say_bye(struct rpc_session *s)
{
	struct rpc_frame f = { .kind = RPC_BYE };
	uint8_t hdr[RPC_FRAME_HDR_SIZE];

	/* Only between frames, as over plaintext. */
	if (!s->tls->established || !STAILQ_EMPTY(&s->out))
		return;
	rpc_frame_encode(&f, hdr);
	if (SSL_write(s->tls->ssl, hdr, sizeof(hdr)) == (int)sizeof(hdr)) {
		rpc_count_bye();
		rpc_tls_flush(s);
	} else {
		ERR_clear_error();
	}
}

void
rpc_tls_flush(struct rpc_session *s)
{
	struct rpc_tls *t = s->tls;
	char err[512];
	bool progress = true;

	while (progress && s->state != SESSION_ENDED) {
		struct rpc_out *o;
		char *p;
		int n;

		progress = false;
		while (t->established && (o = STAILQ_FIRST(&s->out)) != NULL) {
			n = SSL_write(t->ssl, o->buf + o->off, (int)(o->len - o->off));
			if (n <= 0) {
				if (SSL_get_error(t->ssl, n) == SSL_ERROR_WANT_WRITE)
					break;
				RPC_LOG(ERR, "session with %s: TLS write: %s", s->peer,
					tls_errors(err, sizeof(err)));
				rpc_session_close(s, OCK_RPC_ERR_ENCRYPT);
				return;
			}
			progress = true;
			o->off += (size_t)n;
			if (o->off < o->len)
				continue;
			STAILQ_REMOVE_HEAD(&s->out, link);
			rpc_session_out_sent(s, o);
			if (s->state == SESSION_ENDED)
				return;
		}
		while ((n = BIO_nread0(t->net, &p)) > 0) {
			ssize_t w = s->ops->write(s, p, (size_t)n);

			if (w == -EAGAIN)
				return;         /* the transport calls again */
			if (w < 0) {
				RPC_LOG(NOTICE, "session with %s: send: %s", s->peer,
					strerror((int)-w));
				rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
				return;
			}
			BIO_nread(t->net, &p, (int)w);
			progress = true;
		}
	}
	if (s->state != SESSION_ENDED && STAILQ_EMPTY(&s->out) && !rpc_tls_pending(s) &&
	    s->ops->written != NULL)
		s->ops->written(s);
}

void
rpc_tls_library_init(void)
{
	OPENSSL_init_ssl(0, NULL);
}

/* ---- sealed rendezvous buffers ------------------------------------------------------------ */

static pthread_once_t seal_once = PTHREAD_ONCE_INIT;
static pthread_key_t seal_ctx_key;
static EVP_CIPHER *seal_cipher;

static void
seal_ctx_free(void *c)
{
	EVP_CIPHER_CTX_free(c);
}

static void
seal_init(void)
{
	seal_cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
	pthread_key_create(&seal_ctx_key, seal_ctx_free);
}

/* Threads that end free theirs (the key's destructor); the main thread,
 * which does not end, at exit.
 */
static void __attribute__((destructor))
seal_fini(void)
{
	EVP_CIPHER_CTX *c;

	if (seal_cipher == NULL)
		return;
	c = pthread_getspecific(seal_ctx_key);
	pthread_setspecific(seal_ctx_key, NULL);
	EVP_CIPHER_CTX_free(c);
	EVP_CIPHER_free(seal_cipher);
	seal_cipher = NULL;
}

/* This thread's cipher context: made once, reused for every buffer. */
static EVP_CIPHER_CTX *
seal_ctx(void)
{
	EVP_CIPHER_CTX *c;

	pthread_once(&seal_once, seal_init);
	if (seal_cipher == NULL)
		return NULL;
	c = pthread_getspecific(seal_ctx_key);
	if (c == NULL) {
		c = EVP_CIPHER_CTX_new();
		if (c != NULL && pthread_setspecific(seal_ctx_key, c) != 0) {
			EVP_CIPHER_CTX_free(c);
			c = NULL;
		}
	}
	return c;
}

/* A buffer's length is its additional data: a tag binds it. */
static void
seal_aad(uint32_t len, uint8_t aad[4])
{
	rpc_put_be32(aad, len);
}

bool
rpc_tls_seal(struct rpc_tls *t, const void *in, void *out, uint32_t len,
	     uint8_t nonce[RPC_SEAL_NONCE], uint8_t tag[RPC_SEAL_TAG])
{
	EVP_CIPHER_CTX *c = seal_ctx();
	uint64_t seq = atomic_fetch_add(&t->seal_seq, 1);
	uint8_t aad[4];
	int n;

	/* Both sides seal with the one key: each its own nonces. */
	memset(nonce, 0, RPC_SEAL_NONCE);
	nonce[0] = t->server ? 1 : 0;
	for (int i = 0; i < 8; i++)
		nonce[RPC_SEAL_NONCE - 1 - i] = (uint8_t)(seq >> (8 * i));
	seal_aad(len, aad);
	if (c == NULL || EVP_EncryptInit_ex2(c, seal_cipher, t->seal_key, nonce, NULL) != 1 ||
	    EVP_EncryptUpdate(c, NULL, &n, aad, sizeof(aad)) != 1)
		return false;
	for (uint32_t off = 0; off < len;) {
		int piece = (int)RTE_MIN(len - off, SEAL_PIECE);

		if (EVP_EncryptUpdate(c, (uint8_t *)out + off, &n, (const uint8_t *)in + off,
				      piece) != 1)
			return false;
		off += (uint32_t)piece;
	}
	return EVP_EncryptFinal_ex(c, (uint8_t *)out + len, &n) == 1 &&
	       EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, RPC_SEAL_TAG, tag) == 1;
}

bool
rpc_tls_unseal(struct rpc_tls *t, void *buf, uint32_t len, const uint8_t nonce[RPC_SEAL_NONCE],
	       const uint8_t tag[RPC_SEAL_TAG])
{
	EVP_CIPHER_CTX *c = seal_ctx();
	uint8_t aad[4];
	int n;

	seal_aad(len, aad);
	if (c == NULL || EVP_DecryptInit_ex2(c, seal_cipher, t->seal_key, nonce, NULL) != 1 ||
	    EVP_DecryptUpdate(c, NULL, &n, aad, sizeof(aad)) != 1)
		return false;
	for (uint32_t off = 0; off < len;) {
		int piece = (int)RTE_MIN(len - off, SEAL_PIECE);

		if (EVP_DecryptUpdate(c, (uint8_t *)buf + off, &n, (uint8_t *)buf + off,
				      piece) != 1)
			return false;
		off += (uint32_t)piece;
	}
	/* The tag last: a wrong one fails the final step. */
	return EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, RPC_SEAL_TAG, (void *)tag) == 1 &&
	       EVP_DecryptFinal_ex(c, (uint8_t *)buf + len, &n) == 1;
}
