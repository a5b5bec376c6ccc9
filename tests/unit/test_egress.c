/*
 * test_egress.c - the egress proxy (egress/egress.h) over real loopback
 * sockets, with the rules given by a table in the test (the decide hook is
 * the seam): what is allowed is relayed both ways, to the address the rules
 * returned and nowhere else; what is refused never reaches a socket; broken
 * handshakes, closed slots and the connection caps end cleanly.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/rg.h"
#include "egress/egress.h"

/* ---- a destination: echoes what it gets, counts connections ---- */

typedef struct dest {
    int lfd, port;
    int stop[2];
    pthread_t th;
    int accepted; /* atomic */
} dest;

static void *dest_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0)
        if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
            break;
    shutdown(fd, SHUT_WR);
    close(fd);
    return NULL;
}

static void *dest_main(void *arg)
{
    dest *d = arg;
    for (;;) {
        struct pollfd p[2] = {{d->lfd, POLLIN, 0}, {d->stop[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 || p[1].revents)
            break;
        int fd = accept(d->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        __atomic_fetch_add(&d->accepted, 1, __ATOMIC_SEQ_CST);
        pthread_t t;
        if (pthread_create(&t, NULL, dest_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
    return NULL;
}

static dest *dest_start(void)
{
    dest *d = calloc(1, sizeof *d);
    d->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(d->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(d->lfd, 64), 0);
    getsockname(d->lfd, (struct sockaddr *)&a, &al);
    d->port = ntohs(a.sin_port);
    assert_int_equal(pipe(d->stop), 0);
    assert_int_equal(pthread_create(&d->th, NULL, dest_main, d), 0);
    return d;
}

static void dest_stop(dest *d)
{
    assert_int_equal(write(d->stop[1], "x", 1), 1);
    pthread_join(d->th, NULL);
    close(d->lfd);
    close(d->stop[0]);
    close(d->stop[1]);
    free(d);
}

static int dest_accepted(dest *d)
{
    return __atomic_load_n(&d->accepted, __ATOMIC_SEQ_CST);
}

/* ---- the rules: a table, and a log of what was asked ---- */

static char asked_host[300];
static int asked_port;
static char asked_tag[EGRESS_TAG_MAX];
static int decide_calls;

static int decide(void *ud, const char *tag, const char *host, int port,
                  struct sockaddr_storage *addrs, size_t max, size_t *n, char *why, size_t whylen)
{
    (void)ud;
    (void)max;
    snprintf(asked_host, sizeof asked_host, "%s", host);
    snprintf(asked_tag, sizeof asked_tag, "%s", tag);
    asked_port = port;
    __atomic_fetch_add(&decide_calls, 1, __ATOMIC_SEQ_CST);
    *n = 0;
    struct sockaddr_in *a = (struct sockaddr_in *)&addrs[0];
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!strcmp(host, "allowed.test") || !strcmp(host, "::1")) {
        *n = 1;
        return 0;
    }
    if (!strcmp(host, "two.test")) {
        /* A dead address first (nothing listens on 127.0.0.2), then ours. */
        struct sockaddr_in *b = (struct sockaddr_in *)&addrs[1];
        *b = *a;
        a->sin_addr.s_addr = htonl(0x7f000002);
        *n = 2;
        return 0;
    }
    if (!strcmp(host, "nowhere.test")) {
        snprintf(why, whylen, "nowhere.test has no addresses");
        return RG_ENAVFAILED;
    }
    snprintf(why, whylen, "%s is refused", host);
    return RG_EBLOCKEDURL;
}

/* ---- a SOCKS5 client ---- */

static int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static int recv_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, (char *)buf + got, n - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* Greeting and CONNECT to a name; returns the reply code, or -1 for a close. */
static int socks_connect_name(int fd, const char *host, int port)
{
    unsigned char g[3] = {5, 1, 0}, ch[2];
    assert_int_equal(send(fd, g, 3, MSG_NOSIGNAL), 3);
    if (recv_full(fd, ch, 2) < 0)
        return -1;
    assert_int_equal(ch[0], 5);
    assert_int_equal(ch[1], 0);
    unsigned char req[300] = {5, 1, 0, 3, (unsigned char)strlen(host)};
    size_t n = 5;
    memcpy(req + n, host, strlen(host));
    n += strlen(host);
    req[n++] = (unsigned char)(port >> 8);
    req[n++] = (unsigned char)port;
    assert_int_equal(send(fd, req, n, MSG_NOSIGNAL), (ssize_t)n);
    unsigned char rep[10];
    if (recv_full(fd, rep, 10) < 0)
        return -1;
    assert_int_equal(rep[0], 5);
    return rep[1];
}

/* 1 if the peer closed fd (EOF or reset) before fd's receive timeout. */
static int closed_by_peer(int fd)
{
    char c;
    ssize_t r = recv(fd, &c, 1, 0);
    return r == 0 || (r < 0 && errno == ECONNRESET);
}

/* One SOCKS5 CONNECT to host:port through slot s, on a connection of its
   own: the reply code (0 granted, 2 the rules refused, 4 unreachable). */
static int socks_once(egress_slot *s, const char *host, int port)
{
    int fd = connect_port(egress_slot_port(s));
    int rep = socks_connect_name(fd, host, port);
    /* A refusal ends the connection: wait (connect_port's receive timeout
       at most) for the egress to close its end, which it does once the
       connection no longer counts against max_conns_per_slot. Without it
       the fifth of a quick loop of refusals could find the slot still full
       while the first's thread was finishing, and came back closed (a
       loaded CI machine, 7 December). */
    if (rep > 0)
        (void)closed_by_peer(fd);
    close(fd);
    return rep;
}

/* ---- fixtures ---- */

static egress *eg;
static dest *dst;

static int setup(void **state)
{
    (void)state;
    egress_config c;
    egress_config_default(&c);
    c.decide = decide;
    c.handshake_timeout_ms = 500;
    c.connect_timeout_ms = 2000;
    c.max_conns_per_slot = 4;
    if (egress_new(&c, &eg) < 0)
        return -1;
    dst = dest_start();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    egress_free(eg);
    dest_stop(dst);
    return 0;
}

static egress_slot *bound_slot(const char *tag)
{
    egress_slot *s;
    assert_int_equal(egress_slot_open(eg, &s), 0);
    assert_true(egress_slot_port(s) > 0);
    if (tag)
        egress_slot_bind(s, tag);
    return s;
}

/* ---- tests ---- */

static void test_allowed_connection_relays_both_ways(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    int before = dest_accepted(dst);
    int fd = connect_port(egress_slot_port(s));
    assert_int_equal(socks_connect_name(fd, "allowed.test", dst->port), 0);
    assert_string_equal(asked_host, "allowed.test");
    assert_string_equal(asked_tag, "acme");
    assert_int_equal(asked_port, dst->port);
    /* 200 KB through and back: more than one relay buffer each way. */
    size_t total = 200 * 1024;
    char *out = malloc(total), *in = malloc(total);
    for (size_t i = 0; i < total; i++)
        out[i] = (char)(i * 7 + 3);
    size_t sent = 0, got = 0;
    while (got < total) {
        if (sent < total) {
            ssize_t w = send(fd, out + sent, total - sent < 8192 ? total - sent : 8192, 0);
            assert_true(w > 0);
            sent += (size_t)w;
        }
        ssize_t r = recv(fd, in + got, total - got, sent < total ? MSG_DONTWAIT : 0);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        assert_true(r > 0);
        got += (size_t)r;
    }
    assert_memory_equal(in, out, total);
    /* Half-close passes through: our EOF reaches the echo, its EOF comes back. */
    shutdown(fd, SHUT_WR);
    assert_true(closed_by_peer(fd));
    close(fd);
    assert_int_equal(dest_accepted(dst), before + 1);
    egress_stats st;
    egress_get_stats(eg, &st);
    assert_true(st.bytes_out >= total && st.bytes_in >= total);
    free(out);
    free(in);
    egress_slot_close(s);
}

static void test_refused_reaches_nothing(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    int before = dest_accepted(dst);
    int fd = connect_port(egress_slot_port(s));
    assert_int_equal(socks_connect_name(fd, "refused.test", dst->port), 2); /* ruleset */
    assert_true(closed_by_peer(fd));
    close(fd);
    fd = connect_port(egress_slot_port(s));
    assert_int_equal(socks_connect_name(fd, "nowhere.test", dst->port), 4); /* unreachable */
    close(fd);
    assert_int_equal(dest_accepted(dst), before);
    egress_slot_close(s);
}

/* What a slot remembers for telling a refused navigation from a failed
   one (session/nav.c): refusals are counted, other failures kept with
   their host and port, both since a mark. */
static void test_slot_history_since_a_mark(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    egress_mark m0;
    egress_slot_mark(s, &m0);
    int failed = -1;
    assert_int_equal(egress_slot_since(s, &m0, "nowhere.test", dst->port, &failed), 0);
    assert_int_equal(failed, 0);
    assert_int_equal(socks_once(s, "refused.test", dst->port), 2);
    assert_int_equal(socks_once(s, "nowhere.test", dst->port), 4);
    assert_int_equal(egress_slot_since(s, &m0, "NOWHERE.test", dst->port, &failed), 1);
    assert_int_equal(failed, 1); /* names compare without case */
    assert_int_equal(egress_slot_since(s, &m0, "nowhere.test", dst->port + 1, &failed), 1);
    assert_int_equal(failed, 0); /* another port */
    assert_int_equal(egress_slot_since(s, &m0, "refused.test", dst->port, &failed), 1);
    assert_int_equal(failed, 0); /* refused by the rules is not failed */
    /* A mark after them sees none of it. */
    egress_mark m1;
    egress_slot_mark(s, &m1);
    assert_int_equal(egress_slot_since(s, &m1, "nowhere.test", dst->port, &failed), 0);
    assert_int_equal(failed, 0);
    /* More failures than are kept: the oldest since m1 is forgotten, the
       newest is there. */
    for (int i = 0; i <= EGRESS_FAILED_KEPT; i++) {
        assert_int_equal(socks_once(s, "nowhere.test", 1000 + i), 4);
    }
    assert_int_equal(egress_slot_since(s, &m1, "nowhere.test", 1000, &failed), 0);
    assert_int_equal(failed, 0);
    assert_int_equal(egress_slot_since(s, &m1, "nowhere.test", 1000 + EGRESS_FAILED_KEPT, &failed),
                     0);
    assert_int_equal(failed, 1);
    egress_slot_close(s);
}

/* What a slot remembers for telling a client why its page's request failed
   (session/netlog.c): the reason the rules gave for each refused
   destination, the last EGRESS_REFUSED_KEPT of them, one place each. */
static void test_slot_remembers_why_it_refused(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    char why[EGRESS_WHY_MAX];
    assert_int_equal(egress_slot_refusal(s, "refused.test", dst->port, why, sizeof why), 0);
    assert_int_equal(socks_once(s, "refused.test", dst->port), 2);
    assert_int_equal(socks_once(s, "nowhere.test", dst->port), 4);
    assert_int_equal(egress_slot_refusal(s, "REFUSED.test", dst->port, why, sizeof why), 1);
    assert_string_equal(why, "refused.test is refused");
    assert_int_equal(egress_slot_refusal(s, "refused.test", dst->port + 1, why, sizeof why), 0);
    /* a failure other than the rules' is no refusal */
    assert_int_equal(egress_slot_refusal(s, "nowhere.test", dst->port, why, sizeof why), 0);
    /* The same destination again many times takes one place: the others stay. */
    for (int i = 0; i < 2 * EGRESS_REFUSED_KEPT; i++) {
        assert_int_equal(socks_once(s, "refused.test", dst->port), 2);
    }
    for (int i = 0; i < EGRESS_REFUSED_KEPT - 1; i++) {
        char host[32];
        snprintf(host, sizeof host, "other%d.test", i);
        assert_int_equal(socks_once(s, host, 80), 2);
    }
    assert_int_equal(egress_slot_refusal(s, "refused.test", dst->port, why, sizeof why), 1);
    assert_int_equal(egress_slot_refusal(s, "other0.test", 80, why, sizeof why), 1);
    assert_string_equal(why, "other0.test is refused");
    /* One more destination: the oldest is forgotten. */
    assert_int_equal(socks_once(s, "one-more.test", 80), 2);
    assert_int_equal(egress_slot_refusal(s, "refused.test", dst->port, why, sizeof why), 0);
    assert_int_equal(egress_slot_refusal(s, "one-more.test", 80, why, sizeof why), 1);
    egress_slot_close(s);
}

static void test_unbound_slot_refuses_without_asking(void **state)
{
    (void)state;
    egress_slot *s = bound_slot(NULL);
    int calls = decide_calls;
    assert_int_equal(socks_once(s, "allowed.test", dst->port), 2);
    assert_int_equal(decide_calls, calls);
    egress_slot_close(s);
}

/* Only the addresses the rules gave are tried, in their order. */
static void test_connects_to_the_checked_addresses_in_order(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    int before = dest_accepted(dst);
    int fd = connect_port(egress_slot_port(s));
    assert_int_equal(socks_connect_name(fd, "two.test", dst->port), 0);
    assert_int_equal(send(fd, "hi", 2, 0), 2);
    char b[2];
    assert_int_equal(recv_full(fd, b, 2), 0);
    assert_memory_equal(b, "hi", 2);
    close(fd);
    assert_int_equal(dest_accepted(dst), before + 1);
    /* A destination that refuses: "connection refused" (5), not a hang. A
       closed port: one bound and let go. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    bind(lfd, (struct sockaddr *)&a, sizeof a);
    getsockname(lfd, (struct sockaddr *)&a, &al);
    close(lfd);
    assert_int_equal(socks_once(s, "allowed.test", ntohs(a.sin_port)), 5);
    egress_slot_close(s);
}

static void test_address_types(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    /* IPv4 address type: the rules see the dotted quad. */
    int fd = connect_port(egress_slot_port(s));
    unsigned char g[3] = {5, 1, 0}, ch[2], rep[10];
    assert_int_equal(send(fd, g, 3, 0), 3);
    assert_int_equal(recv_full(fd, ch, 2), 0);
    unsigned char r4[10] = {5, 1, 0, 1, 10, 0, 0, 1, 0, 80};
    assert_int_equal(send(fd, r4, sizeof r4, 0), (ssize_t)sizeof r4);
    assert_int_equal(recv_full(fd, rep, 10), 0);
    assert_int_equal(rep[1], 2);
    assert_string_equal(asked_host, "10.0.0.1");
    assert_int_equal(asked_port, 80);
    close(fd);
    /* IPv6 address type: the rules see the compressed text. */
    fd = connect_port(egress_slot_port(s));
    assert_int_equal(send(fd, g, 3, 0), 3);
    assert_int_equal(recv_full(fd, ch, 2), 0);
    unsigned char r6[22] = {5, 1, 0, 4};
    r6[4 + 10] = 0xff;
    r6[4 + 11] = 0xff;
    r6[4 + 12] = 127;
    r6[4 + 15] = 1;
    r6[20] = 0x1f;
    r6[21] = 0x90;
    assert_int_equal(send(fd, r6, sizeof r6, 0), (ssize_t)sizeof r6);
    assert_int_equal(recv_full(fd, rep, 10), 0);
    assert_int_equal(rep[1], 2);
    assert_string_equal(asked_host, "::ffff:127.0.0.1");
    assert_int_equal(asked_port, 8080);
    close(fd);
    egress_slot_close(s);
}

static void test_bad_handshakes(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    int calls = decide_calls;
    unsigned char ch[2], rep[10];
    /* SOCKS4. */
    int fd = connect_port(egress_slot_port(s));
    unsigned char v4[9] = {4, 1, 0, 80, 127, 0, 0, 1, 0};
    send(fd, v4, sizeof v4, 0);
    assert_true(closed_by_peer(fd));
    close(fd);
    /* Only username/password offered: "no acceptable method". */
    fd = connect_port(egress_slot_port(s));
    unsigned char up[3] = {5, 1, 2};
    send(fd, up, 3, 0);
    assert_int_equal(recv_full(fd, ch, 2), 0);
    assert_int_equal(ch[1], 0xff);
    assert_true(closed_by_peer(fd));
    close(fd);
    /* BIND and UDP ASSOCIATE: "command not supported". */
    for (int cmd = 2; cmd <= 3; cmd++) {
        fd = connect_port(egress_slot_port(s));
        unsigned char g[3] = {5, 1, 0};
        send(fd, g, 3, 0);
        assert_int_equal(recv_full(fd, ch, 2), 0);
        unsigned char r[10] = {5, (unsigned char)cmd, 0, 1, 127, 0, 0, 1, 0, 80};
        send(fd, r, sizeof r, 0);
        assert_int_equal(recv_full(fd, rep, 10), 0);
        assert_int_equal(rep[1], 7);
        close(fd);
    }
    /* An unknown address type: 8. A name with a slash or a NUL: refused as malformed. */
    fd = connect_port(egress_slot_port(s));
    unsigned char g[3] = {5, 1, 0};
    send(fd, g, 3, 0);
    assert_int_equal(recv_full(fd, ch, 2), 0);
    unsigned char r9[6] = {5, 1, 0, 9, 0, 0};
    send(fd, r9, sizeof r9, 0);
    assert_int_equal(recv_full(fd, rep, 10), 0);
    assert_int_equal(rep[1], 8);
    close(fd);
    const char *bad[] = {"a/b.test", "evil.test@allowed.test", "a\001b"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(socks_once(s, bad[i], 80), 1);
    }
    fd = connect_port(egress_slot_port(s));
    assert_int_equal(socks_connect_name(fd, "allowed.test", 0), 1); /* port 0 */
    close(fd);
    /* Silence after connecting, and a request cut short: closed after the
       handshake timeout (500 ms here), not held forever. */
    fd = connect_port(egress_slot_port(s));
    assert_true(closed_by_peer(fd));
    close(fd);
    fd = connect_port(egress_slot_port(s));
    send(fd, g, 3, 0);
    assert_int_equal(recv_full(fd, ch, 2), 0);
    unsigned char cut[5] = {5, 1, 0, 3, 40};
    send(fd, cut, sizeof cut, 0);
    assert_true(closed_by_peer(fd));
    close(fd);
    assert_int_equal(decide_calls, calls); /* none of these got as far as the rules */
    /* And the slot still serves. */
    assert_int_equal(socks_once(s, "allowed.test", dst->port), 0);
    egress_slot_close(s);
}

/*
 * egress_handshake on its own, over a socketpair: the browser's bytes (all
 * of them, then EOF) and a host buffer of hostlen bytes. Returns its result;
 * what it wrote back goes to out (*outlen bytes, at most 64).
 */
static int handshake_bytes(const unsigned char *in, size_t n, char *host, size_t hostlen, int *port,
                           unsigned char *out, size_t *outlen)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(send(sv[0], in, n, MSG_NOSIGNAL), (ssize_t)n);
    shutdown(sv[0], SHUT_WR);
    int rc = egress_handshake(sv[1], host, hostlen, port, rg_now_ms() + 2000);
    close(sv[1]);
    ssize_t r;
    *outlen = 0;
    while (*outlen < 64 && (r = recv(sv[0], out + *outlen, 64 - *outlen, 0)) > 0)
        *outlen += (size_t)r;
    close(sv[0]);
    return rc;
}

/*
 * The request in (n bytes) names an address whose text is want (port
 * want_port): with a host buffer one byte short of want and its NUL, the
 * handshake answers reply 1 and fails; with exactly enough, it succeeds and
 * writes back only the method choice (the reply is the caller's).
 */
static void check_address_fits(const unsigned char *in, size_t n, const char *want, int want_port)
{
    const unsigned char refused[12] = {5, 0, 5, 1, 0, 1, 0, 0, 0, 0, 0, 0};
    unsigned char out[64];
    size_t outlen;
    char host[300];
    int port = 0;
    memset(host, 'x', sizeof host);
    assert_int_equal(handshake_bytes(in, n, host, strlen(want), &port, out, &outlen), -1);
    assert_int_equal(outlen, sizeof refused);
    assert_memory_equal(out, refused, sizeof refused);
    assert_int_equal(handshake_bytes(in, n, host, strlen(want) + 1, &port, out, &outlen), 0);
    assert_string_equal(host, want);
    assert_int_equal(port, want_port);
    assert_int_equal(outlen, 2);
}

/*
 * An address whose text does not fit the caller's host buffer is refused
 * like a name too long for it (reply 1), never returned unterminated; the
 * proxy's own buffer (300 bytes) holds any. Found by tests/fuzz/fuzz_socks.c.
 */
static void test_handshake_address_longer_than_host(void **state)
{
    (void)state;
    /* CONNECT [2001:db8:1234:5678:9abc:def0:1234:5678]:443, 38 characters. */
    unsigned char in6[3 + 22] = {5, 1, 0, 5, 1, 0, 4};
    assert_int_equal(inet_pton(AF_INET6, "2001:db8:1234:5678:9abc:def0:1234:5678", in6 + 7), 1);
    in6[23] = 443 >> 8;
    in6[24] = 443 & 0xff;
    check_address_fits(in6, sizeof in6, "2001:db8:1234:5678:9abc:def0:1234:5678", 443);
    /* CONNECT 255.255.255.255:80, 15 characters. */
    unsigned char in4[3 + 10] = {5, 1, 0, 5, 1, 0, 1, 255, 255, 255, 255, 0, 80};
    check_address_fits(in4, sizeof in4, "255.255.255.255", 80);
}

static void test_closing_a_slot_ends_its_connections(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    egress_slot *other = bound_slot("other");
    int port = egress_slot_port(s);
    int fd = connect_port(port);
    assert_int_equal(socks_connect_name(fd, "allowed.test", dst->port), 0);
    int ofd = connect_port(egress_slot_port(other));
    assert_int_equal(socks_connect_name(ofd, "allowed.test", dst->port), 0);
    egress_slot_close(s);
    assert_true(closed_by_peer(fd));
    close(fd);
    /* The port no longer takes connections (the acceptor closes it). */
    int refused = 0;
    for (int i = 0; i < 50 && !refused; i++) {
        int t = connect_port(port);
        if (t < 0)
            refused = 1;
        else
            close(t);
        if (!refused)
            rg_sleep_ms(20);
    }
    assert_true(refused);
    /* The other slot's connection is untouched. */
    assert_int_equal(send(ofd, "ok", 2, 0), 2);
    char b[2];
    assert_int_equal(recv_full(ofd, b, 2), 0);
    assert_memory_equal(b, "ok", 2);
    close(ofd);
    egress_slot_close(other);
}

static void test_connection_cap_per_slot(void **state)
{
    (void)state;
    egress_slot *s = bound_slot("acme");
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = connect_port(egress_slot_port(s));
        assert_int_equal(socks_connect_name(fds[i], "allowed.test", dst->port), 0);
    }
    /* The fifth is closed at once, without a reply. */
    int fd = connect_port(egress_slot_port(s));
    unsigned char g[3] = {5, 1, 0};
    send(fd, g, 3, MSG_NOSIGNAL);
    assert_true(closed_by_peer(fd));
    close(fd);
    egress_stats st;
    egress_get_stats(eg, &st);
    assert_true(st.over_limit >= 1);
    /* One ends, and there is room again. */
    close(fds[0]);
    int ok = 0;
    for (int i = 0; i < 50 && !ok; i++) {
        fd = connect_port(egress_slot_port(s));
        ok = socks_connect_name(fd, "allowed.test", dst->port) == 0;
        close(fd);
        if (!ok)
            rg_sleep_ms(20);
    }
    assert_true(ok);
    for (int i = 1; i < 4; i++)
        close(fds[i]);
    egress_slot_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_connection_relays_both_ways),
        cmocka_unit_test(test_refused_reaches_nothing),
        cmocka_unit_test(test_slot_history_since_a_mark),
        cmocka_unit_test(test_slot_remembers_why_it_refused),
        cmocka_unit_test(test_unbound_slot_refuses_without_asking),
        cmocka_unit_test(test_connects_to_the_checked_addresses_in_order),
        cmocka_unit_test(test_address_types),
        cmocka_unit_test(test_bad_handshakes),
        cmocka_unit_test(test_handshake_address_longer_than_host),
        cmocka_unit_test(test_closing_a_slot_ends_its_connections),
        cmocka_unit_test(test_connection_cap_per_slot),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
