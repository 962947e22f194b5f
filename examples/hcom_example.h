/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef HCOM_EXAMPLE_H
#define HCOM_EXAMPLE_H

/*
 * What the example server and client agree on, shaped as openGauss uses
 * hcom4db: service 0 a synchronous handshake with a fixed-size answer,
 * service 1 one-way data sent asynchronously.
 */

#include <stdint.h>

#define EXAMPLE_SERVER_NAME "hcom-example"
#define EXAMPLE_HANDSHAKE 0
#define EXAMPLE_DATA 1
#define EXAMPLE_MAGIC 0x68636f6du    /* "hcom" */

struct example_hello {
	uint32_t magic;
	uint32_t client_pid;
};

/* The server's answer: what it took from this client so far. */
struct example_welcome {
	uint32_t magic;
	uint32_t session;       /* the server's number for this client */
	uint64_t messages;
	uint64_t bytes;
	uint64_t bad;           /* data messages whose bytes were wrong */
};

/* Data message @p n of @p len bytes: byte i is (n + i) * 31. */
static inline uint8_t
example_byte(uint64_t n, uint64_t i)
{
	return (uint8_t)((n + i) * 31);
}

#endif /* HCOM_EXAMPLE_H */
