// SPDX-License-Identifier: GPL-2.0
/*
 * xsend: send or receive UDP datagrams and report what the kernel said,
 * for differential tests of the xfrm output path.
 *
 *   xsend [-6] [-n COUNT] [-m MARK] [-P bypass|esp-transport] DST PORT
 *       sends COUNT datagrams, prints "sent=N" and one "errno=NAME xK" per
 *       distinct error (e.g. EPERM from a blocking policy)
 *   xsend -l [-6] [-w SECONDS] PORT
 *       receives until SECONDS of silence (default 2), or until SIGINT or
 *       SIGTERM, prints "received=N"
 *
 * -P installs a per-socket output policy (IP_XFRM_POLICY/IPV6_XFRM_POLICY)
 * before sending: "bypass" allows with no templates (what IKE daemons set
 * on their sockets), "esp-transport" requires ESP in transport mode.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/ipsec.h>
#include <linux/xfrm.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef IPV6_XFRM_POLICY
#define IPV6_XFRM_POLICY 35
#endif

static int set_policy(int fd, int v6, const char *kind)
{
	struct {
		struct xfrm_userpolicy_info info;
		struct xfrm_user_tmpl tmpl;
	} p;
	socklen_t len = sizeof(p.info);

	memset(&p, 0, sizeof(p));
	p.info.dir = XFRM_POLICY_OUT;
	p.info.action = XFRM_POLICY_ALLOW;
	p.info.sel.family = v6 ? AF_INET6 : AF_INET;
	p.info.lft.soft_byte_limit = XFRM_INF;
	p.info.lft.hard_byte_limit = XFRM_INF;
	p.info.lft.soft_packet_limit = XFRM_INF;
	p.info.lft.hard_packet_limit = XFRM_INF;
	if (!strcmp(kind, "esp-transport")) {
		p.tmpl.id.proto = IPPROTO_ESP;
		p.tmpl.family = v6 ? AF_INET6 : AF_INET;
		p.tmpl.mode = XFRM_MODE_TRANSPORT;
		p.tmpl.aalgos = p.tmpl.ealgos = p.tmpl.calgos = ~0U;
		len = sizeof(p);
	} else if (strcmp(kind, "bypass")) {
		fprintf(stderr, "xsend: unknown policy '%s'\n", kind);
		return -1;
	}
	if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		       v6 ? IPV6_XFRM_POLICY : IP_XFRM_POLICY, &p, len)) {
		perror("xsend: setsockopt XFRM_POLICY");
		return -1;
	}
	return 0;
}

/*
 * only there to interrupt ppoll(), the one place SIGINT and SIGTERM are
 * not blocked: a signal that comes while the listener is busy receiving
 * waits for the next ppoll(), which then returns at once (with poll(), it
 * was lost, and the listener waited out its silence, 600 s in some tests)
 */
static void on_stop(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	int v6 = 0, listen_mode = 0, count = 1, wait_s = 2, mark = -1;
	const char *policy = NULL;
	struct sockaddr_storage ss;
	int errs[256] = { 0 };
	int fd, opt, i, sent = 0;

	while ((opt = getopt(argc, argv, "6ln:m:P:w:")) != -1) {
		switch (opt) {
		case '6': v6 = 1; break;
		case 'l': listen_mode = 1; break;
		case 'n': count = atoi(optarg); break;
		case 'm': mark = atoi(optarg); break;
		case 'P': policy = optarg; break;
		case 'w': wait_s = atoi(optarg); break;
		default: return 2;
		}
	}
	if (argc - optind != (listen_mode ? 1 : 2)) {
		fprintf(stderr, "usage: see the comment at the top of xsend.c\n");
		return 2;
	}
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("xsend: socket");
		return 1;
	}
	memset(&ss, 0, sizeof(ss));
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(atoi(argv[argc - 1]));
		if (!listen_mode && inet_pton(AF_INET6, argv[optind], &s6->sin6_addr) != 1)
			return 2;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(atoi(argv[argc - 1]));
		if (!listen_mode && inet_pton(AF_INET, argv[optind], &s4->sin_addr) != 1)
			return 2;
	}

	if (listen_mode) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct sigaction sa = { .sa_handler = on_stop };
		struct timespec ts = { .tv_sec = wait_s };
		sigset_t stop, open;
		char buf[2048];
		int got = 0;

		if (bind(fd, (struct sockaddr *)&ss, sizeof(ss))) {
			perror("xsend: bind");
			return 1;
		}
		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		sigprocmask(SIG_BLOCK, &stop, &open);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		printf("listening\n");
		fflush(stdout);
		while (ppoll(&pfd, 1, &ts, &open) > 0)
			if (recv(fd, buf, sizeof(buf), 0) >= 0)
				got++;
		printf("received=%d\n", got);
		return 0;
	}

	if (mark >= 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark))) {
		perror("xsend: SO_MARK");
		return 1;
	}
	if (policy && set_policy(fd, v6, policy))
		return 1;
	for (i = 0; i < count; i++) {
		if (sendto(fd, "xsend", 5, 0, (struct sockaddr *)&ss, sizeof(ss)) < 0)
			errs[errno & 255]++;
		else
			sent++;
		usleep(10000);
	}
	printf("sent=%d\n", sent);
	for (i = 0; i < 256; i++)
		if (errs[i])
			printf("errno=%s x%d\n", strerrorname_np(i) ?: "?", errs[i]);
	return 0;
}
