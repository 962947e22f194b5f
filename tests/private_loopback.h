/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_TEST_PRIVATE_LOOPBACK_H
#define DROCE_TEST_PRIVATE_LOOPBACK_H

/*
 * Tests that talk TCP over loopback do it in a network namespace of
 * their own, with its loopback up, where they may make one (as root);
 * elsewhere over the host's loopback, which nothing leaves either.
 */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static inline void
private_loopback(void)
{
	struct ifreq ifr;
	int fd;

	if (unshare(CLONE_NEWNET) != 0) {
		fprintf(stderr, "(no network namespace of our own: %s; the host's loopback)\n",
			strerror(errno));
		return;
	}
	memset(&ifr, 0, sizeof(ifr));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
		abort();
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
		abort();
	close(fd);
}

#endif /* DROCE_TEST_PRIVATE_LOOPBACK_H */
