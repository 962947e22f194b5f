/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The out-of-band TCP connection over which the tools swap QP numbers,
 * PSNs, GIDs and keys: the kernel's sockets, not droce. The socket never
 * blocks: between looks at it the caller's idle() runs a round of droce,
 * which must keep answering ARP and RoCE while the exchange goes on.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "rc_app.h"

/* Pause between connection attempts while the peer does not listen yet. */
#define RETRY_MS 200

void
oob_init(struct oob *o, unsigned int timeout_s, bool (*idle)(void *), void *arg)
{
	*o = (struct oob){ .fd = -1, .timeout_s = timeout_s, .idle = idle, .idle_arg = arg };
}

void
oob_close(struct oob *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}

bool
oob_part(struct oob *o, unsigned int wait_ms)
{
	uint64_t deadline = rcapp_now_ms() + wait_ms;
	bool parted = false;
	char scratch[64];

	if (o->fd < 0)
		return false;
	if (shutdown(o->fd, SHUT_WR) == 0)
		while (!rcapp_interrupted) {
			struct pollfd p = { .fd = o->fd, .events = POLLIN };
			uint64_t now = rcapp_now_ms();
			ssize_t n;

			if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
				break;
			n = read(o->fd, scratch, sizeof(scratch));
			if (n == 0) {
				parted = true;
				break;
			}
			if (n < 0 && errno != EINTR && errno != EAGAIN)
				break;
		}
	oob_close(o);
	return parted;
}

static int
set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void
peer_name(struct oob *o, const struct sockaddr_in *sa)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof(ip));
	snprintf(o->peer, sizeof(o->peer), "%s:%u", ip, ntohs(sa->sin_port));
}

/*
 * Wait until @p fd has @p events, running idle() meanwhile; the deadline
 * moves on whenever idle() saw the peer's RoCE packets. Returns 1 when
 * ready, 0 on timeout or interruption (with a message naming @p what).
 */
static int
wait_fd(struct oob *o, int fd, short events, uint64_t *deadline, const char *what,
	char *err, size_t errlen)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		if (poll(&p, 1, 0) > 0)
			return 1;
		if (rcapp_interrupted) {
			snprintf(err, errlen, "interrupted while waiting for %s", what);
			return 0;
		}
		if (o->idle != NULL && o->idle(o->idle_arg))
			*deadline = rcapp_now_ms() + o->timeout_s * 1000ull;
		if (rcapp_now_ms() > *deadline) {
			snprintf(err, errlen, "waited %u s (--timeout) for %s", o->timeout_s, what);
			return 0;
		}
	}
}

int
oob_accept(struct oob *o, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t salen = sizeof(sa);
	uint64_t deadline = rcapp_now_ms() + o->timeout_s * 1000ull;
	int one = 1, lfd, fd;
	char what[64];

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		snprintf(err, errlen, "TCP socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 1) != 0 ||
	    set_nonblocking(lfd) != 0) {
		snprintf(err, errlen, "cannot listen on TCP port %u: %s%s", port, strerror(errno),
			 errno == EADDRINUSE ? " (another process holds it; --port takes another)"
					     : "");
		close(lfd);
		return -1;
	}
	snprintf(what, sizeof(what), "a client on TCP port %u", port);
	do {
		if (!wait_fd(o, lfd, POLLIN, &deadline, what, err, errlen)) {
			close(lfd);
			return -1;
		}
		fd = accept4(lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	} while (fd < 0 && (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED));
	close(lfd); /* one client, as the tools take */
	if (fd < 0) {
		snprintf(err, errlen, "accept on TCP port %u: %s", port, strerror(errno));
		return -1;
	}
	o->fd = fd;
	peer_name(o, &sa);
	return 0;
}

/* One attempt: 0 connected, -1 failed for good, 1 worth trying again. */
static int
connect_once(struct oob *o, const struct sockaddr_in *sa, uint64_t *deadline, char *err,
	     size_t errlen)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (fd < 0) {
		snprintf(err, errlen, "TCP socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0) {
		if (errno != EINPROGRESS) {
			soerr = errno;
		} else if (!wait_fd(o, fd, POLLOUT, deadline, "an answer to the TCP connect", err,
				    errlen)) {
			close(fd);
			return -1;
		} else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) {
			soerr = errno;
		}
	}
	if (soerr == 0) {
		o->fd = fd;
		return 0;
	}
	close(fd);
	snprintf(err, errlen, "TCP connect to %s: %s", o->peer, strerror(soerr));
	/* The peer's listener may not be up yet, nor its ARP entry. */
	return soerr == ECONNREFUSED || soerr == ETIMEDOUT || soerr == EHOSTUNREACH ||
	       soerr == ENETUNREACH ? 1 : -1;
}

int
oob_connect(struct oob *o, struct in_addr ip, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr = ip };
	uint64_t deadline = rcapp_now_ms() + o->timeout_s * 1000ull;
	int ret;

	peer_name(o, &sa);
	while ((ret = connect_once(o, &sa, &deadline, err, errlen)) == 1) {
		uint64_t again = rcapp_now_ms() + RETRY_MS;

		if (rcapp_now_ms() + RETRY_MS > deadline) {
			size_t used = strlen(err);

			snprintf(err + used, errlen - used, "; gave up after %u s (--timeout)",
				 o->timeout_s);
			return -1;
		}
		while (rcapp_now_ms() < again && !rcapp_interrupted)
			if (o->idle != NULL)
				o->idle(o->idle_arg);
		if (rcapp_interrupted) {
			snprintf(err, errlen, "interrupted while connecting to %s", o->peer);
			return -1;
		}
	}
	return ret;
}

/* Read into @p buf until @p len bytes, or the peer's close when @p upto. */
static long
read_bytes(struct oob *o, void *buf, size_t len, bool upto, const char *what, char *err,
	   size_t errlen)
{
	uint64_t deadline = rcapp_now_ms() + o->timeout_s * 1000ull;
	char desc[160];
	size_t got = 0;

	snprintf(desc, sizeof(desc), "%s from %s", what, o->peer);
	while (got < len) {
		ssize_t n = read(o->fd, (char *)buf + got, len - got);

		if (n > 0) {
			got += (size_t)n;
			deadline = rcapp_now_ms() + o->timeout_s * 1000ull;
			continue;
		}
		if (n == 0) {
			if (upto)
				break;
			snprintf(err, errlen, "%s closed the TCP connection after %zu of the %zu bytes of %s",
				 o->peer, got, len, what);
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			snprintf(err, errlen, "reading %s: %s", desc, strerror(errno));
			return -1;
		}
		if (!wait_fd(o, o->fd, POLLIN, &deadline, desc, err, errlen))
			return -1;
	}
	return (long)got;
}

int
oob_read(struct oob *o, void *buf, size_t len, const char *what, char *err, size_t errlen)
{
	return read_bytes(o, buf, len, false, what, err, errlen) < 0 ? -1 : 0;
}

long
oob_read_upto(struct oob *o, void *buf, size_t len, const char *what, char *err, size_t errlen)
{
	return read_bytes(o, buf, len, true, what, err, errlen);
}

int
oob_write(struct oob *o, const void *buf, size_t len, const char *what, char *err,
	  size_t errlen)
{
	uint64_t deadline = rcapp_now_ms() + o->timeout_s * 1000ull;
	char desc[160];
	size_t done = 0;

	snprintf(desc, sizeof(desc), "room to send %s to %s", what, o->peer);
	while (done < len) {
		ssize_t n = send(o->fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			snprintf(err, errlen, "sending %s to %s: %s", what, o->peer, strerror(errno));
			return -1;
		}
		if (!wait_fd(o, o->fd, POLLOUT, &deadline, desc, err, errlen))
			return -1;
	}
	return 0;
}
