// SPDX-License-Identifier: GPL-2.0
/*
 * xcost: what an output route lookup costs local traffic, timed in the
 * guest (make bench-local).
 *
 *   xcost udp DST COUNT        COUNT 1-byte sendto()s on one unconnected
 *                              socket: one route lookup each
 *   xcost tcp DST PORT COUNT   COUNT connect()/close() pairs, closed with
 *                              an RST (SO_LINGER 0: no TIME_WAIT to run
 *                              out of ports)
 *   xcost listen PORT          accepts and closes connections until killed
 *
 * udp and tcp print "ops=N ns=ELAPSED failed=N" (CLOCK_MONOTONIC) and
 * exit 1 if any operation failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int addr(struct sockaddr_in *sin, const char *ip, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	return inet_pton(AF_INET, ip, &sin->sin_addr) == 1 ? 0 : -1;
}

static int udp(const char *ip, long count, long *failed)
{
	struct sockaddr_in sin;
	int fd;
	long i;

	if (addr(&sin, ip, 9)) {
		fprintf(stderr, "xcost: bad address %s\n", ip);
		return -1;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("xcost: socket");
		return -1;
	}
	for (i = 0; i < count; i++)
		if (sendto(fd, "x", 1, 0, (struct sockaddr *)&sin,
			   sizeof(sin)) != 1)
			(*failed)++;
	close(fd);
	return 0;
}

static int tcp(const char *ip, int port, long count, long *failed)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct sockaddr_in sin;
	long i;
	int fd;

	if (addr(&sin, ip, port)) {
		fprintf(stderr, "xcost: bad address %s\n", ip);
		return -1;
	}
	for (i = 0; i < count; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) {
			perror("xcost: socket");
			return -1;
		}
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			(*failed)++;
		close(fd);
	}
	return 0;
}

static int listen_loop(int port)
{
	struct sockaddr_in sin;
	int fd, c, one = 1;

	addr(&sin, "0.0.0.0", port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, 1024)) {
		perror("xcost: listen");
		return 1;
	}
	for (;;) {
		c = accept(fd, NULL, NULL);
		if (c >= 0)
			close(c);
	}
}

int main(int argc, char **argv)
{
	long count, failed = 0;
	long long t0;
	int err;

	if (argc == 3 && !strcmp(argv[1], "listen"))
		return listen_loop(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "udp")) {
		count = atol(argv[3]);
		t0 = now_ns();
		err = udp(argv[2], count, &failed);
	} else if (argc == 5 && !strcmp(argv[1], "tcp")) {
		count = atol(argv[4]);
		t0 = now_ns();
		err = tcp(argv[2], atoi(argv[3]), count, &failed);
	} else {
		fprintf(stderr, "usage: see the comment at the top of xcost.c\n");
		return 2;
	}
	if (err)
		return 1;
	printf("ops=%ld ns=%lld failed=%ld\n", count, now_ns() - t0, failed);
	return failed ? 1 : 0;
}
