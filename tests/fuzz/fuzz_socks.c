/*
 * fuzz_socks.c - libFuzzer target: the SOCKS5 greeting and CONNECT request
 * the browser sends the egress proxy, through egress_handshake. The host in
 * it comes from page URLs, so a hostile page chooses it.
 *
 * The input is the bytes the browser sends, as they are. They are written
 * to one end of a socketpair whose write side is then shut down, and the
 * handshake reads the other end: a request cut short ends at EOF, never at
 * the deadline, so a run takes no time and depends on nothing but the
 * input. Each input is run twice: with the 300 bytes of host the proxy's
 * connection threads give it, and with HOST_SMALL bytes (room for any IPv4
 * text, not for every IPv6 one); both buffers are allocated to their exact
 * size, so that ASan sees a write past hostlen.
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   - success only when the input holds version 5 with "no authentication"
 *     among the methods, then a version 5 CONNECT (command 1);
 *   - on success host is NUL-terminated within hostlen and is IPv4 or IPv6
 *     text that inet_pton reads back, or a name made only of the characters
 *     of a URL host (letters, digits, - . _ : [ ]); port is 1 to 65535;
 *   - the result, the bytes written back (method choice, reply) and the
 *     bytes left unread are those of RFC 1928 as egress.h serves it, read
 *     here apart from egress.c (expect below): the handshake never reads
 *     past the end of the request, whose next bytes belong to the relay.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rg.h"
#include "egress/egress.h"
#include "tests/fuzz/fuzz.h"

#define INPUT_MAX 600  /* longest handshake: 2 + 255 + 4 + 1 + 255 + 2 = 519 bytes */
#define HOST_PROXY 300 /* conn_main's host buffer */
#define HOST_SMALL 16  /* "255.255.255.255" and its NUL */
#define OUT_MAX 64     /* a method choice and a reply are 12 bytes */
#define DEADLINE_MS 5000

/* The characters egress.h lets a name have: those of a URL host. */
static const char name_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:[]";

static int name_char(uint8_t c)
{
    return c && memchr(name_chars, c, sizeof name_chars - 1);
}

/* ---- what RFC 1928 says should happen ------------------------------------ */

typedef struct outcome {
    int rc;
    char host[INET6_ADDRSTRLEN + 256];
    int port;
    uint8_t out[OUT_MAX]; /* written back to the browser */
    size_t outlen;
    size_t unread; /* input bytes left in the socket */
} outcome;

typedef struct cursor {
    const uint8_t *p;
    size_t n, off;
} cursor;

/* The next k bytes, or NULL at EOF (which consumes the rest). */
static const uint8_t *take(cursor *c, size_t k)
{
    if (c->n - c->off < k) {
        c->off = c->n;
        return NULL;
    }
    c->off += k;
    return c->p + c->off - k;
}

static void put(outcome *x, const uint8_t *b, size_t n)
{
    memcpy(x->out + x->outlen, b, n);
    x->outlen += n;
}

static void put_reply(outcome *x, uint8_t code)
{
    const uint8_t r[10] = {5, code, 0, 1, 0, 0, 0, 0, 0, 0};
    put(x, r, sizeof r);
}

static void expect_steps(cursor *c, size_t hostlen, outcome *x)
{
    const uint8_t *g = take(c, 2);
    if (!g || g[0] != 5 || g[1] == 0)
        return;
    const uint8_t *methods = take(c, g[1]);
    if (!methods)
        return;
    int noauth = memchr(methods, 0, g[1]) != NULL;
    const uint8_t choice[2] = {5, noauth ? 0x00 : 0xff};
    put(x, choice, 2);
    if (!noauth)
        return;

    const uint8_t *req = take(c, 4); /* VER CMD RSV ATYP */
    if (!req || req[0] != 5)
        return;
    const uint8_t *len = NULL, *addr;
    size_t alen;
    switch (req[3]) {
    case 1:
        alen = 4;
        break;
    case 4:
        alen = 16;
        break;
    case 3:
        len = take(c, 1);
        if (!len)
            return;
        alen = len[0];
        break;
    default:
        put_reply(x, 0x08);
        return;
    }
    addr = take(c, alen + 2);
    if (!addr)
        return;
    char text[sizeof x->host];
    if (len) {
        int ok = alen > 0 && alen < hostlen;
        for (size_t i = 0; i < alen; i++)
            ok &= name_char(addr[i]);
        if (!ok) {
            put_reply(x, 0x01);
            return;
        }
        memcpy(text, addr, alen);
        text[alen] = '\0';
    } else {
        inet_ntop(alen == 4 ? AF_INET : AF_INET6, addr, text, sizeof text);
        if (strlen(text) >= hostlen) {
            put_reply(x, 0x01);
            return;
        }
    }
    int port = addr[alen] << 8 | addr[alen + 1];
    if (req[1] != 1) {
        put_reply(x, 0x07);
        return;
    }
    if (port == 0) {
        put_reply(x, 0x01);
        return;
    }
    x->rc = 0;
    snprintf(x->host, sizeof x->host, "%s", text);
    x->port = port;
}

/* What egress_handshake should do with input d (n bytes) and hostlen. */
static void expect(const uint8_t *d, size_t n, size_t hostlen, outcome *x)
{
    cursor c = {d, n, 0};
    memset(x, 0, sizeof *x);
    x->rc = -1;
    expect_steps(&c, hostlen, x);
    x->unread = n - c.off;
}

/* ---- properties of a success, stated on their own ------------------------ */

static int is_addr_text(int family, const char *h)
{
    unsigned char b[16];
    char back[INET6_ADDRSTRLEN];
    return inet_pton(family, h, b) == 1 && inet_ntop(family, b, back, sizeof back) &&
           !strcmp(back, h);
}

static int is_name(const char *h)
{
    if (!h[0])
        return 0;
    for (; *h; h++)
        if (!name_char((uint8_t)*h))
            return 0;
    return 1;
}

/* The input really was version 5, offering no-auth, asking CONNECT. */
static int asked_connect(const uint8_t *d, size_t n)
{
    if (n < 2 || d[0] != 5 || d[1] == 0 || n < 2 + (size_t)d[1] + 4)
        return 0;
    if (!memchr(d + 2, 0, d[1]))
        return 0;
    const uint8_t *req = d + 2 + d[1];
    return req[0] == 5 && req[1] == 1;
}

static void check_success(const uint8_t *d, size_t n, const char *host, size_t hostlen, int port)
{
    FZ_CHECK(memchr(host, 0, hostlen), "host is not NUL-terminated within its %zu bytes", hostlen);
    FZ_CHECK(is_addr_text(AF_INET, host) || is_addr_text(AF_INET6, host) || is_name(host),
             "host \"%s\" is neither an address nor a name", host);
    FZ_CHECK(port >= 1 && port <= 65535, "port %d", port);
    FZ_CHECK(asked_connect(d, n), "success without version 5, no-auth and CONNECT (host %s)", host);
}

/* ---- the run ------------------------------------------------------------- */

static void run(const uint8_t *d, size_t n, size_t hostlen)
{
    int sv[2]; /* [0] the browser, [1] the proxy (non-blocking, as accepted) */
    FZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0,
             "socketpair: %s", strerror(errno));
    if (n)
        FZ_CHECK(send(sv[0], d, n, MSG_NOSIGNAL) == (ssize_t)n, "send: %s", strerror(errno));
    FZ_CHECK(shutdown(sv[0], SHUT_WR) == 0, "shutdown: %s", strerror(errno));

    char *host = malloc(hostlen);
    FZ_CHECK(host, "out of memory");
    memset(host, 0xa5, hostlen);
    int port = -1;
    int rc = egress_handshake(sv[1], host, hostlen, &port, rg_now_ms() + DEADLINE_MS);

    uint8_t rest[INPUT_MAX];
    size_t unread = 0;
    ssize_t r;
    while ((r = recv(sv[1], rest, sizeof rest, 0)) > 0) /* ends at the EOF we sent */
        unread += (size_t)r;
    close(sv[1]);
    uint8_t out[OUT_MAX];
    size_t outlen = 0;
    while (outlen < sizeof out && (r = recv(sv[0], out + outlen, sizeof out - outlen, 0)) > 0)
        outlen += (size_t)r;
    close(sv[0]);

    outcome x;
    expect(d, n, hostlen, &x);
    FZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
    if (rc == 0)
        check_success(d, n, host, hostlen, port);
    FZ_CHECK(rc == x.rc, "returned %d, RFC 1928 says %d (hostlen %zu)", rc, x.rc, hostlen);
    if (rc == 0)
        FZ_CHECK(!strcmp(host, x.host) && port == x.port, "read %s port %d, sent %s port %d", host,
                 port, x.host, x.port);
    FZ_CHECK(outlen == x.outlen && !memcmp(out, x.out, outlen),
             "wrote %zu bytes (second 0x%02x, last 0x%02x), RFC 1928 says %zu", outlen,
             outlen > 1 ? out[1] : 0, outlen ? out[outlen - 1] : 0, x.outlen);
    FZ_CHECK(unread == x.unread, "left %zu bytes unread, the request leaves %zu", unread, x.unread);
    free(host);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = size < INPUT_MAX ? size : INPUT_MAX;
    run(data, n, HOST_PROXY);
    run(data, n, HOST_SMALL);
    return 0;
}
