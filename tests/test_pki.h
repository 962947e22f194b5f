/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_TEST_PKI_H
#define DROCE_TEST_PKI_H

/*
 * The hcom4db TLS callbacks for a folder of tests/tools/make_test_pki.sh's
 * certificates: a process plays the server (server.pem, its key's
 * passphrase "server-pass") or a client (client.pem, "client-pass"),
 * trusting ca.pem and enforcing crl.pem. The passphrase is a copy of the
 * process's own, wiped and freed when the library erases it.
 */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcom4db.h"

static struct {
	char dir[256];
	bool server;
	char path[4][320];
} test_pki;

static inline const char *
test_pki_file(int i, const char *name)
{
	snprintf(test_pki.path[i], sizeof(test_pki.path[i]), "%s/%s", test_pki.dir, name);
	return test_pki.path[i];
}

static inline void
test_pki_cert(const char **path)
{
	*path = test_pki_file(0, test_pki.server ? "server.pem" : "client.pem");
}

static inline void
test_pki_erase(char *pass)
{
	memset(pass, 0, strlen(pass));
	free(pass);
}

static inline void
test_pki_key(const char **path, char **pass, OckRpcTlsKeypassErase *erase)
{
	*path = test_pki_file(1, test_pki.server ? "server.key" : "client.key");
	*pass = strdup(test_pki.server ? "server-pass" : "client-pass");
	*erase = test_pki_erase;
}

static inline int
test_pki_verify(void *x509, const char *crl)
{
	return x509 != NULL && crl != NULL ? 1 : -1;
}

static inline void
test_pki_ca(const char **ca, const char **crl, OckRpcTlsCertVerify *verify)
{
	*ca = test_pki_file(2, "ca.pem");
	*crl = test_pki_file(3, "crl.pem");
	*verify = test_pki_verify;
}

/* @p cfg with TLS on, as the side @p server says, from folder @p dir. */
static inline void
test_pki_use(OckRpcCreateConfig *cfg, const char *dir, bool server)
{
	snprintf(test_pki.dir, sizeof(test_pki.dir), "%s", dir);
	test_pki.server = server;
	cfg->mask |= OCK_RPC_CONFIG_USE_SSL_CALLBACK;
	cfg->getCaAndVerify = test_pki_ca;
	cfg->getCert = test_pki_cert;
	cfg->getPriKey = test_pki_key;
}

#endif /* DROCE_TEST_PKI_H */
