/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * TLS 1.3 on RPC sessions (OpenSSL), the same over both transports: a
 * session's SSL reads and writes a BIO pair, whose other end the
 * transport fills from its socket or RC receives and empties into its
 * socket or RC sends. Frames are encrypted as the worker writes them out
 * and decrypted as bytes come in; the worker owns the SSL.
 */

#ifndef DROCE_RPC_TLS_H
#define DROCE_RPC_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "rpc_private.h"

/* A server's or a client's certificates, key and trust (an SSL_CTX). */
struct rpc_tls_ctx;
/* One session's TLS. */
struct rpc_tls;

/* From @p conf's callbacks (conf->tls set): the certificate, the key
 * (its passphrase erased with the user's function once loaded), the CAs,
 * the CRL and the verify callback. NULL with the reason logged, and
 * *status the OckRpcStatus for it.
 */
struct rpc_tls_ctx *rpc_tls_ctx_new(const struct rpc_conf *conf, bool server, const char *who,
				    OckRpcStatus *status);
void rpc_tls_ctx_free(struct rpc_tls_ctx *c);

/* A session's TLS on @p c (which it holds a reference to); NULL when out
 * of memory.
 */
struct rpc_tls *rpc_tls_new(struct rpc_tls_ctx *c, bool server);
void rpc_tls_free(struct rpc_tls *t);

/* A client's handshake over the opening's I/O, then the opening's
 * frames through @p t: *tls_io is @p io wrapped (its arg points at
 * @p t's state). OK, or why not (logged).
 */
OckRpcStatus rpc_tls_client_open(struct rpc_tls *t, const struct rpc_opening *io,
				 struct rpc_opening *tls_io);

/* On the worker. Ciphertext came: decrypt it into the session's frames
 * (a server's handshake first). A refused handshake or a record that
 * fails its authentication ends the session.
 */
void rpc_tls_bytes_in(struct rpc_session *s, const void *data, size_t len);
/* Where the transport may put what it reads (*room bytes), and then how
 * much it put there (rpc_tls_commit() takes it as rpc_tls_bytes_in()).
 */
void *rpc_tls_in_room(struct rpc_session *s, size_t *room);
void rpc_tls_commit(struct rpc_session *s, size_t len);
/* After the attach: the plaintext SSL holds already. */
void rpc_tls_take(struct rpc_session *s);
/* A BYE through TLS, if nothing else is on the way. */
void rpc_tls_say_bye(struct rpc_session *s);
/* Encrypt the session's queued frames and hand the records to the
 * transport, as far as it takes them.
 */
void rpc_tls_flush(struct rpc_session *s);
/* Bytes waiting for the transport. */
bool rpc_tls_pending(const struct rpc_session *s);

/* OpenSSL up now: its exit handler is registered by then (see
 * rpc_rdma_start()).
 */
void rpc_tls_library_init(void);
/* @p len bytes (a rendezvous buffer, a one-sided piece) sealed with the
 * session's key (from TLS's exporter, so only its peer has it): @p in
 * encrypted into @p out with AES-256-GCM, a fresh @p nonce (each side
 * its own) and the @p tag. Any thread, once the handshake is done.
 */
bool rpc_tls_seal(struct rpc_tls *t, const void *in, void *out, uint32_t len,
		  uint8_t nonce[RPC_SEAL_NONCE], uint8_t tag[RPC_SEAL_TAG]);
/* Its peer's side: @p buf decrypted in place; false (and garbage) if the
 * tag does not match (tampered with, or not sealed by the peer).
 */
bool rpc_tls_unseal(struct rpc_tls *t, void *buf, uint32_t len,
		    const uint8_t nonce[RPC_SEAL_NONCE], const uint8_t tag[RPC_SEAL_TAG]);

#endif /* DROCE_RPC_TLS_H */
