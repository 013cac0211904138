// SPDX-License-Identifier: GPL-2.0
/*
 * xstream: steady UDP traffic for the stress tests, until stopped.
 *
 *   xstream [-c] [-i USEC] [-p PORT] DST...
 *
 * Sends one datagram to each DST in turn (IPv4 or IPv6 literals), one
 * every USEC microseconds (default 2000; 0: as fast as it can, but 1 ms
 * after a send that failed), to PORT (default 5000), with sendto() on one
 * socket per family, or with -c on a socket per DST connected to it (the
 * kernel then keeps the route, or the bundle, in the socket and looks it
 * up again only once it is stale), and goes on whatever the kernel says: while a tunnel is being torn down sendto()
 * may fail, and the test wants the traffic back as soon as the path is.
 * On SIGTERM or SIGINT prints "sent=N failed=N" and exits 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static socklen_t salen(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	long interval_us = 2000, sent = 0, failed = 0;
	struct sockaddr_storage *dst;
	int port = 5000, opt, n, i, fd4, fd6, connected = 0, *fds;
	struct sigaction sa;
	struct timespec next, now;

	while ((opt = getopt(argc, argv, "ci:p:")) != -1) {
		switch (opt) {
		case 'c': connected = 1; break;
		case 'i': interval_us = atol(optarg); break;
		case 'p': port = atoi(optarg); break;
		default: return 2;
		}
	}
	n = argc - optind;
	if (n < 1 || interval_us < 0) {
		fprintf(stderr, "usage: see the comment at the top of xstream.c\n");
		return 2;
	}
	dst = calloc(n, sizeof(*dst));
	fds = calloc(n, sizeof(*fds));
	if (!dst || !fds)
		return 1;
	for (i = 0; i < n; i++) {
		const char *a = argv[optind + i];
		struct sockaddr_in *s4 = (struct sockaddr_in *)&dst[i];
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&dst[i];

		if (inet_pton(AF_INET, a, &s4->sin_addr) == 1) {
			s4->sin_family = AF_INET;
			s4->sin_port = htons(port);
		} else if (inet_pton(AF_INET6, a, &s6->sin6_addr) == 1) {
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons(port);
		} else {
			fprintf(stderr, "xstream: bad address '%s'\n", a);
			return 2;
		}
	}
	fd4 = socket(AF_INET, SOCK_DGRAM, 0);
	fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd4 < 0) {
		perror("xstream: socket");
		return 1;
	}
	for (i = 0; connected && i < n; i++) {
		fds[i] = socket(dst[i].ss_family, SOCK_DGRAM, 0);
		if (fds[i] < 0 ||
		    connect(fds[i], (struct sockaddr *)&dst[i],
			    salen(&dst[i])) < 0) {
			perror("xstream: connect");
			return 1;
		}
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (i = 0; !stop; i = (i + 1) % n) {
		int v6 = dst[i].ss_family == AF_INET6;

		if (connected ? send(fds[i], "xstream", 7, 0) < 0 :
		    sendto(v6 ? fd6 : fd4, "xstream", 7, 0,
			   (struct sockaddr *)&dst[i], salen(&dst[i])) < 0) {
			failed++;
			/* as fast as it can, but not refusals: 1 ms apart */
			if (!interval_us)
				usleep(1000);
		} else {
			sent++;
		}
		if (!interval_us)
			continue;
		/*
		 * absolute deadlines: a slow send does not lower the rate;
		 * after a stall of more than 100 ms start afresh, no burst
		 */
		next.tv_nsec += interval_us * 1000;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - next.tv_sec) * 1000000000L +
		    (now.tv_nsec - next.tv_nsec) > 100000000L)
			next = now;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	printf("sent=%ld failed=%ld\n", sent, failed);
	return 0;
}
