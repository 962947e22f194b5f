/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_TEST_FUZZ_STREAM_H
#define DROCE_TEST_FUZZ_STREAM_H

/*
 * For the fuzz targets that play a TCP client of a server in their own
 * process: an input's bytes on a fresh connection, then the client's
 * side closed and read until the server closes its own, so that every
 * byte was taken before the next input.
 */

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static inline void
fuzz_stream_to(uint16_t port, const uint8_t *data, size_t size, const char *who)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint8_t buf[65536];

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		abort();
	/* The server may close early (a bad frame): then the rest is not sent. */
	for (size_t off = 0; off < size;) {
		ssize_t w = send(fd, data + off, size - off, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 5000) != 1) {
			fprintf(stderr, "%s: the server did not close the session in 5 s\n", who);
			abort();
		}
		if (recv(fd, buf, sizeof(buf), 0) <= 0)
			break;
	}
	close(fd);
}

#endif /* DROCE_TEST_FUZZ_STREAM_H */
