/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * RPC over kernel TCP: non-blocking sockets on the workers' epoll sets.
 * A session's bytes are read into its buffer and cut into frames there
 * (rpc_frame_decode() says how many bytes a frame still needs, and the
 * buffer grows to that, never past one frame of the segment size); what
 * goes out waits in the session's queue while the socket is full.
 */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "rpc_tcp.h"
#include "rpc_tls.h"

/* Frames one sendmsg() takes at most. */
#define FLUSH_FRAMES 64
/* Bytes a session reads at once, and its buffer's first size. */
#define READ_CHUNK 65536

/* ---- sessions --------------------------------------------------------------------- */

static void
want_out(struct rpc_session *s, bool want)
{
	if (s->want_out == want)
		return;
	s->want_out = want;
	rpc_worker_rewatch(s->w, s->fd, EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0), &s->watch);
}

void
rpc_tcp_flush(struct rpc_session *s)
{
	while (s->state != SESSION_ENDED && !STAILQ_EMPTY(&s->out)) {
		struct iovec iov[FLUSH_FRAMES];
		struct msghdr mh = { .msg_iov = iov };
		struct rpc_out *o;
		ssize_t n;

		/* Many frames in one call: a syscall per frame would be TCP's
		 * pipeline cost again for each call.
		 */
		STAILQ_FOREACH(o, &s->out, link) {
			if (mh.msg_iovlen == FLUSH_FRAMES)
				break;
			iov[mh.msg_iovlen++] = (struct iovec){ o->buf + o->off, o->len - o->off };
		}
		n = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			want_out(s, true);
			return;
		}
		if (n < 0) {
			RPC_LOG(NOTICE, "session with %s: send: %s", s->peer, strerror(errno));
			rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
			return;
		}
		/* The frames that went whole are done (their callbacks may queue
		 * more, or end the session).
		 */
		while ((o = STAILQ_FIRST(&s->out)) != NULL && (size_t)n >= o->len - o->off) {
			n -= (ssize_t)(o->len - o->off);
			STAILQ_REMOVE_HEAD(&s->out, link);
			rpc_session_out_sent(s, o);
			if (s->state == SESSION_ENDED)
				return;
		}
		if (o != NULL && n > 0) {
			o->off += (size_t)n;
			want_out(s, true);
			return;
		}
	}
	if (s->state != SESSION_ENDED)
		want_out(s, false);
}

static ssize_t
tcp_write(struct rpc_session *s, const void *data, size_t len)
{
	ssize_t n = send(s->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n >= 0) {
		if ((size_t)n < len)
			want_out(s, true);
		return n;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		want_out(s, true);
		return -EAGAIN;
	}
	return -errno;
}

static void
tcp_written(struct rpc_session *s)
{
	want_out(s, false);
}

/* Up to @p len bytes of the socket into @p buf: how many; 0 when none
 * came now, or when the connection ended (the session is closed then).
 */
static size_t
take_bytes(struct rpc_session *s, void *buf, size_t len)
{
	ssize_t n = recv(s->fd, buf, len, MSG_DONTWAIT);

	if (n > 0)
		return (size_t)n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n < 0)
		RPC_LOG(NOTICE, "session with %s: recv: %s", s->peer, strerror(errno));
	else
		RPC_LOG(INFO, "session with %s: the peer closed it", s->peer);
	rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
	return 0;
}

/* With TLS: records into the session's pair, as much as it has room for. */
static bool
tls_read(struct rpc_session *s)
{
	size_t room, n;
	void *p = rpc_tls_in_room(s, &room);

	n = take_bytes(s, p, room);
	if (n == 0)
		return false;
	rpc_tls_commit(s, n);
	return true;
}

void
rpc_tcp_say_bye(struct rpc_session *s)
{
	struct rpc_frame f = { .kind = RPC_BYE };
	uint8_t hdr[RPC_FRAME_HDR_SIZE];

	/* Only between frames: after a part-written one it would be noise. */
	if (s->fd < 0 || !STAILQ_EMPTY(&s->out))
		return;
	rpc_frame_encode(&f, hdr);
	if (send(s->fd, hdr, sizeof(hdr), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		RPC_LOG(DEBUG, "session with %s: BYE: %s", s->peer, strerror(errno));
	else
		rpc_count_bye();
}

void
rpc_tcp_ready(struct rpc_watch *watch, uint32_t events)
{
	struct rpc_session *s = container_of(watch, struct rpc_session, watch);

	/* Handlers may end it meanwhile: it stays until this returns. */
	rpc_session_ref(s);
	if (events & EPOLLOUT)
		rpc_session_flush(s);
	while (s->state != SESSION_ENDED) {
		size_t n;

		/* Replies leave a read's worth at a time: a peer that keeps
		 * the socket full does not hold them.
		 */
		rpc_worker_flush_queued(s->w);
		if (s->tls != NULL) {
			if (!tls_read(s))
				break;
			continue;
		}
		if (!rpc_session_rx_room(s, RTE_MIN(s->rx_len + READ_CHUNK,
					(size_t)RPC_FRAME_HDR_SIZE + s->max_payload))) {
			rpc_session_close(s, OCK_RPC_ERR_NO_MEMORY);
			break;
		}
		n = take_bytes(s, s->rx + s->rx_len, s->rx_cap - s->rx_len);
		if (n == 0)
			break;
		/* Any bytes prove the peer alive, a frame's first part too. */
		rpc_session_peer_alive(s);
		s->rx_len += n;
		rpc_session_take_frames(s);
	}
	rpc_session_unref(s);
}

static int
tcp_attach(struct rpc_session *s)
{
	int ret;

	s->watch.ready = rpc_tcp_ready;
	ret = rpc_worker_watch(s->w, s->fd, EPOLLIN | EPOLLRDHUP, &s->watch);
	if (ret != 0) {
		RPC_LOG(ERR, "session with %s: cannot watch its socket: %s", s->peer,
			strerror(-ret));
		return ret;
	}
	/* Bytes may have come before the socket was watched. */
	rpc_tcp_ready(&s->watch, EPOLLIN);
	return 0;
}

static void
tcp_poll(struct rpc_session *s)
{
	rpc_tcp_ready(&s->watch, EPOLLIN);
}

static void
tcp_detach(struct rpc_session *s)
{
	rpc_worker_unwatch(s->w, s->fd);
	close(s->fd);
	s->fd = -1;
}

const struct rpc_transport_ops rpc_tcp_ops = {
	.attach = tcp_attach,
	.poll = tcp_poll,
	.flush = rpc_tcp_flush,
	.write = tcp_write,
	.written = tcp_written,
	.say_bye = rpc_tcp_say_bye,
	.detach = tcp_detach,
};

/* ---- servers ------------------------------------------------------------------------ */

static void
peer_name(const struct sockaddr_in *a, char *out, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(out, len, "%s:%u", ip, ntohs(a->sin_port));
}

static void
no_delay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void
accept_ready(struct rpc_watch *watch, uint32_t events)
{
	struct rpc_server *srv = container_of(watch, struct rpc_server, watch);

	(void)events;
	for (;;) {
		struct sockaddr_in a;
		socklen_t alen = sizeof(a);
		struct rpc_session *s;
		char peer[64];
		int fd = accept4(srv->listen_fd, (struct sockaddr *)&a, &alen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				RPC_LOG(WARNING, "server %s: accept: %s", srv->conf.name,
					strerror(errno));
			return;
		}
		no_delay(fd);
		peer_name(&a, peer, sizeof(peer));
		s = rpc_session_new(rpc_engine_pick(srv->engine), fd, false, &srv->conf, peer);
		if (s == NULL) {
			close(fd);
			continue;
		}
		s->server = srv;
		rpc_server_session_add(srv, s);
		rpc_session_adopt(s);
	}
}

static int
bind_port(int fd, const struct in_addr *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr = *ip,
				 .sin_port = htons(port) };

	return bind(fd, (struct sockaddr *)&a, sizeof(a));
}

OckRpcStatus
rpc_tcp_listen(struct rpc_server *srv)
{
	struct in_addr ip;
	int fd, one = 1, ret = -1;

	if (inet_pton(AF_INET, srv->ip, &ip) != 1) {
		RPC_LOG(ERR, "server %s: \"%s\" is not an IPv4 address", srv->conf.name, srv->ip);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		RPC_LOG(ERR, "server %s: socket: %s", srv->conf.name, strerror(errno));
		return OCK_RPC_ERR;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (srv->port != 0) {
		ret = bind_port(fd, &ip, srv->port);
	} else {
		for (uint32_t p = srv->conf.range_first; p <= srv->conf.range_last && ret != 0; p++)
			if ((ret = bind_port(fd, &ip, (uint16_t)p)) == 0)
				srv->port = (uint16_t)p;
	}
	if (ret != 0 || listen(fd, SOMAXCONN) != 0) {
		if (srv->port != 0)
			RPC_LOG(ERR, "server %s: cannot listen on %s:%u: %s", srv->conf.name, srv->ip,
				srv->port, strerror(errno));
		else
			RPC_LOG(ERR, "server %s: no free port on %s in %u-%u", srv->conf.name, srv->ip,
				srv->conf.range_first, srv->conf.range_last);
		close(fd);
		return OCK_RPC_ERR;
	}
	srv->listen_fd = fd;
	srv->watch.ready = accept_ready;
	ret = rpc_worker_watch(&srv->engine->workers[0], fd, EPOLLIN, &srv->watch);
	if (ret != 0) {
		RPC_LOG(ERR, "server %s: cannot watch its socket: %s", srv->conf.name,
			strerror(-ret));
		close(fd);
		srv->listen_fd = -1;
		return OCK_RPC_ERR;
	}
	RPC_LOG(INFO, "server %s listens on %s:%u (TCP)", srv->conf.name, srv->ip, srv->port);
	return OCK_RPC_OK;
}

struct unlisten {
	struct rpc_task task;
	struct rpc_server *srv;
	atomic_int done;
};

static void
unlisten_task(struct rpc_task *t)
{
	struct unlisten *u = container_of(t, struct unlisten, task);

	rpc_worker_unwatch(&u->srv->engine->workers[0], u->srv->listen_fd);
	atomic_store_explicit(&u->done, 1, memory_order_release);
	rpc_wake_state(&u->done);
}

void
rpc_tcp_unlisten(struct rpc_server *srv)
{
	struct unlisten u = { .task.run = unlisten_task, .srv = srv };

	if (srv->listen_fd < 0)
		return;
	/* On the worker that may be in accept_ready() for it. */
	atomic_init(&u.done, 0);
	rpc_worker_push(&srv->engine->workers[0], &u.task);
	rpc_wait_state(&u.done, 1u << 1, 0);
	close(srv->listen_fd);
	srv->listen_fd = -1;
}

/* ---- clients ------------------------------------------------------------------------ */

/* All of @p len bytes, by @p deadline_ms (a poll() clock). */
static int
io_all(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len != 0) {
		struct pollfd pfd = { .fd = fd, .events = out ? POLLOUT : POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, RPC_OPENING_TIMEOUT_MS) <= 0)
			return -ETIMEDOUT;
		n = out ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
			: recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
connect_socket(const struct sockaddr_in *a)
{
	struct pollfd pfd;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err = 0;
	socklen_t elen = sizeof(err);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) != 0 && errno != EINPROGRESS) {
		err = errno;
		close(fd);
		return -err;
	}
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&pfd, 1, RPC_OPENING_TIMEOUT_MS) != 1) {
		close(fd);
		return -ETIMEDOUT;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
	if (err != 0) {
		close(fd);
		return -err;
	}
	no_delay(fd);
	return fd;
}

static int
socket_write(void *arg, const void *buf, size_t len)
{
	return io_all(*(int *)arg, (void *)(uintptr_t)buf, len, true);
}

static int
socket_read(void *arg, void *buf, size_t len)
{
	return io_all(*(int *)arg, buf, len, false);
}

OckRpcStatus
rpc_tcp_connect(const char *ip, uint16_t port, const struct rpc_conf *conf, struct rpc_tls *tls,
		int *fd_out, uint32_t *server_max)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char where[2 * RPC_NAME_MAX];
	OckRpcStatus st;
	int fd;

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		RPC_LOG(ERR, "connect: \"%s\" is not an IPv4 address", ip);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	snprintf(where, sizeof(where), "%s:%u (server %s)", ip, port, conf->name);
	fd = connect_socket(&a);
	if (fd < 0) {
		RPC_LOG(ERR, "connect to %s: %s", where, strerror(-fd));
		return OCK_RPC_ERR_CONN_UNCONNECTED;
	}
	st = rpc_session_open_client(&(struct rpc_opening){ .write_all = socket_write,
							       .read_exact = socket_read,
							       .arg = &fd, .where = where },
				     conf, tls, server_max);
	if (st != OCK_RPC_OK) {
		close(fd);
		return st;
	}
	*fd_out = fd;
	return OCK_RPC_OK;
}
