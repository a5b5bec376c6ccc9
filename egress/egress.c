/*
 * egress.c - the SOCKS5 proxy of egress.h.
 *
 * The acceptor thread owns the listening sockets: egress_slot_close only
 * marks a slot closed and wakes it, and the acceptor closes the socket, so
 * a listening descriptor is never closed while poll or accept may still use
 * its number. Each accepted connection gets a detached thread that holds a
 * reference on its slot until it ends; closing a slot shuts its
 * connections' sockets down, which wakes their threads out of poll.
 */
#define _GNU_SOURCE
#include "egress/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/rg.h"

#define MOD "egress"
#define RELAY_BUF 16384
#define CONN_STACK (128 * 1024)

/* SOCKS5 reply codes (RFC 1928, 6). */
enum {
    REP_OK = 0x00,
    REP_FAIL = 0x01,
    REP_RULESET = 0x02,
    REP_NET_UNREACH = 0x03,
    REP_HOST_UNREACH = 0x04,
    REP_REFUSED = 0x05,
    REP_CMD = 0x07,
    REP_ATYP = 0x08,
};

struct conn {
    int cfd; /* the browser's side */
    int dfd; /* the destination, -1 until connected */
    struct conn *prev, *next;
};

#define EGRESS_HOST_MAX 300 /* a host as the handshake gives it (a SOCKS5 name: at most 255 bytes) */

struct egress_slot {
    egress *e;
    int fd;
    int port;
    char tag[EGRESS_TAG_MAX];
    int closed;
    int refs; /* the owner until close, the acceptor's list, each connection */
    int conns;
    uint64_t refused; /* connections the rules refused (under e->mu) */
    uint64_t failed;  /* connections that failed otherwise (under e->mu) */
    struct {          /* the last of those, at failed % EGRESS_FAILED_KEPT */
        int port;
        char host[EGRESS_HOST_MAX];
    } recent[EGRESS_FAILED_KEPT];
    egress_refusals refusals; /* why the rules refused its last destinations (under e->mu) */
    struct conn *clist;
    egress_slot *next;
};

struct egress {
    egress_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t idle_cv; /* a connection thread ended */
    int wake[2];
    pthread_t acceptor;
    int stopping;
    egress_slot *slots;
    int threads;
    egress_stats st;
};

void egress_config_default(egress_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_conns = 2048;
    cfg->max_conns_per_slot = 256;
    cfg->handshake_timeout_ms = 10000;
    cfg->connect_timeout_ms = 10000;
    cfg->idle_timeout_ms = 300000;
}

void egress_config_from_env(egress_config *cfg)
{
    cfg->max_conns = (int)rg_env_long("REFGATE_EGRESS_MAX_CONNS", cfg->max_conns, 1, 1 << 20);
    cfg->max_conns_per_slot = (int)rg_env_long("REFGATE_EGRESS_MAX_CONNS_PER_SLOT",
                                               cfg->max_conns_per_slot, 1, 1 << 20);
    cfg->connect_timeout_ms = (int)rg_env_long("REFGATE_EGRESS_CONNECT_TIMEOUT_MS",
                                               cfg->connect_timeout_ms, 100, 600000);
    cfg->idle_timeout_ms = (int)rg_env_long("REFGATE_EGRESS_IDLE_TIMEOUT_MS",
                                            cfg->idle_timeout_ms, 1000, 86400000);
}

static void wake(egress *e)
{
    char c = 1;
    ssize_t n = write(e->wake[1], &c, 1);
    (void)n; /* a full pipe already wakes the acceptor */
}

/* Caller holds e->mu. */
static void slot_unref(egress_slot *s)
{
    if (--s->refs == 0)
        free(s);
}

/* ---- the SOCKS5 handshake ---- */

/* Reads exactly n bytes before deadline_ms; -1 on EOF, error or timeout. */
static int read_full(int fd, unsigned char *buf, size_t n, int64_t deadline_ms)
{
    size_t got = 0;
    while (got < n) {
        int left = (int)(deadline_ms - rg_now_ms());
        if (left <= 0)
            return -1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n, int64_t deadline_ms)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            int left = (int)(deadline_ms - rg_now_ms());
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (left <= 0 || poll(&pfd, 1, left) <= 0)
                return -1;
            continue;
        }
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void reply(int fd, int code, int64_t deadline_ms)
{
    /* The bound address is not meaningful to the browser: 0.0.0.0:0. */
    unsigned char r[10] = {5, (unsigned char)code, 0, 1, 0, 0, 0, 0, 0, 0};
    write_all(fd, r, sizeof r, deadline_ms);
}

/*
 * A host name as the browser sent it: the characters of a URL host after
 * Chromium's canonicalization (IDNs arrive as xn--), nothing else.
 */
static int name_ok(const char *h, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_' || c == ':' || c == '[' || c == ']'))
            return 0;
    }
    return 1;
}

/* Greeting and request (egress.h). */
int egress_handshake(int fd, char *host, size_t hostlen, int *port, int64_t deadline_ms)
{
    unsigned char b[262];
    if (read_full(fd, b, 2, deadline_ms) < 0 || b[0] != 5 || b[1] == 0 ||
        read_full(fd, b + 2, b[1], deadline_ms) < 0)
        return -1;
    int noauth = 0;
    for (int i = 0; i < b[1]; i++)
        noauth |= b[2 + i] == 0;
    unsigned char choice[2] = {5, noauth ? 0x00 : 0xff};
    if (write_all(fd, choice, 2, deadline_ms) < 0 || !noauth)
        return -1;

    if (read_full(fd, b, 4, deadline_ms) < 0 || b[0] != 5)
        return -1;
    int cmd = b[1], atyp = b[3];
    if (atyp == 1) {
        if (read_full(fd, b, 4 + 2, deadline_ms) < 0)
            return -1;
        if (!inet_ntop(AF_INET, b, host, (socklen_t)hostlen)) { /* no room in host */
            reply(fd, REP_FAIL, deadline_ms);
            return -1;
        }
        *port = b[4] << 8 | b[5];
    } else if (atyp == 4) {
        if (read_full(fd, b, 16 + 2, deadline_ms) < 0)
            return -1;
        if (!inet_ntop(AF_INET6, b, host, (socklen_t)hostlen)) { /* no room in host */
            reply(fd, REP_FAIL, deadline_ms);
            return -1;
        }
        *port = b[16] << 8 | b[17];
    } else if (atyp == 3) {
        if (read_full(fd, b, 1, deadline_ms) < 0)
            return -1;
        size_t n = b[0];
        if (read_full(fd, b, n + 2, deadline_ms) < 0)
            return -1;
        if (!name_ok((const char *)b, n) || n >= hostlen) {
            reply(fd, REP_FAIL, deadline_ms);
            return -1;
        }
        memcpy(host, b, n);
        host[n] = '\0';
        *port = b[n] << 8 | b[n + 1];
    } else {
        reply(fd, REP_ATYP, deadline_ms);
        return -1;
    }
    if (cmd != 1) {
        reply(fd, REP_CMD, deadline_ms);
        return -1;
    }
    if (*port == 0) {
        reply(fd, REP_FAIL, deadline_ms);
        return -1;
    }
    return 0;
}

/* ---- connecting ---- */

static int rep_for_errno(int err)
{
    switch (err) {
    case ECONNREFUSED:
        return REP_REFUSED;
    case ENETUNREACH:
        return REP_NET_UNREACH;
    case EHOSTUNREACH:
    case ETIMEDOUT:
        return REP_HOST_UNREACH;
    default:
        return REP_FAIL;
    }
}

/*
 * Connects to the first of addrs that answers before deadline_ms, with the
 * browser's socket watched too: a browser that gives up, or a slot closed
 * under us, ends the attempt. Returns the socket, or -1 with *rep set.
 */
static int connect_any(struct sockaddr_storage *addrs, size_t n, int port, int cfd,
                       int64_t deadline_ms, int *rep)
{
    *rep = REP_HOST_UNREACH;
    for (size_t i = 0; i < n; i++) {
        struct sockaddr_storage *ss = &addrs[i];
        socklen_t sl;
        if (ss->ss_family == AF_INET) {
            ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
            sl = sizeof(struct sockaddr_in);
        } else if (ss->ss_family == AF_INET6) {
            ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
            sl = sizeof(struct sockaddr_in6);
        } else {
            continue;
        }
        int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            *rep = REP_FAIL;
            continue;
        }
        int rc = connect(fd, (struct sockaddr *)ss, sl);
        int err = rc == 0 ? 0 : errno;
        while (err == EINPROGRESS || err == EINTR) {
            int left = (int)(deadline_ms - rg_now_ms());
            if (left <= 0) {
                err = ETIMEDOUT;
                break;
            }
            struct pollfd p[2] = {{.fd = fd, .events = POLLOUT}, {.fd = cfd, .events = POLLIN}};
            int pr = poll(p, 2, left);
            if (pr < 0 && errno == EINTR)
                continue;
            if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                /* The browser sent more or went away before our reply:
                   either way this connection is over. */
                close(fd);
                *rep = -1;
                return -1;
            }
            if (pr > 0 && p[0].revents) {
                socklen_t el = sizeof err;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                    err = errno;
                break;
            }
        }
        if (err == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        close(fd);
        *rep = rep_for_errno(err);
        if (err == ETIMEDOUT)
            return -1;
    }
    return -1;
}

/* ---- relaying ---- */

struct half {
    unsigned char buf[RELAY_BUF];
    size_t off, len;
    int eof; /* the source sent EOF */
    int done; /* EOF passed on */
};

/* Moves bytes both ways until both sides are done, an error, or idleness. */
static void relay(egress *e, int cfd, int dfd)
{
    struct half *h = malloc(2 * sizeof *h); /* [0] browser -> dest, [1] dest -> browser */
    if (!h)
        return;
    for (int i = 0; i < 2; i++)
        h[i].off = h[i].len = 0, h[i].eof = h[i].done = 0;
    int fds[2] = {cfd, dfd};
    for (;;) {
        if (h[0].done && h[1].done)
            break;
        struct pollfd p[2];
        for (int i = 0; i < 2; i++) {
            p[i].fd = fds[i];
            p[i].events = 0;
            p[i].revents = 0;
        }
        for (int d = 0; d < 2; d++) {
            /* direction d reads fds[d] and writes fds[1 - d] */
            if (h[d].len == 0 && !h[d].eof)
                p[d].events |= POLLIN;
            if (h[d].len > 0)
                p[1 - d].events |= POLLOUT;
        }
        /* A socket with nothing to wait for is left out, or its hang-up
           would wake poll at once, again and again. */
        for (int i = 0; i < 2; i++)
            if (!p[i].events)
                p[i].fd = -1;
        int pr = poll(p, 2, e->cfg.idle_timeout_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break; /* idle, or poll failed */
        int fail = 0;
        for (int d = 0; d < 2 && !fail; d++) {
            int src = fds[d], dst = fds[1 - d];
            if (h[d].len == 0 && !h[d].eof && (p[d].revents & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t r = recv(src, h[d].buf, sizeof h[d].buf, 0);
                if (r > 0) {
                    h[d].off = 0;
                    h[d].len = (size_t)r;
                    __atomic_fetch_add(d == 0 ? &e->st.bytes_out : &e->st.bytes_in, (uint64_t)r,
                                       __ATOMIC_RELAXED);
                } else if (r == 0) {
                    h[d].eof = 1;
                } else if (errno != EAGAIN && errno != EINTR) {
                    fail = 1;
                }
            }
            if (h[d].len > 0 && (p[1 - d].revents & (POLLOUT | POLLERR | POLLHUP))) {
                ssize_t w = send(dst, h[d].buf + h[d].off, h[d].len, MSG_NOSIGNAL);
                if (w > 0) {
                    h[d].off += (size_t)w;
                    h[d].len -= (size_t)w;
                } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                    fail = 1;
                }
            }
            if (h[d].eof && h[d].len == 0 && !h[d].done) {
                shutdown(dst, SHUT_WR);
                h[d].done = 1;
            }
        }
        if (fail)
            break;
    }
    free(h);
}

/* ---- connections ---- */

struct conn_arg {
    egress *e;
    egress_slot *s;
    struct conn *c;
};

static void conn_end(egress *e, egress_slot *s, struct conn *c)
{
    pthread_mutex_lock(&e->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->clist = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->conns--;
    e->st.conns--;
    close(c->cfd);
    if (c->dfd >= 0)
        close(c->dfd);
    slot_unref(s);
    e->threads--;
    pthread_cond_broadcast(&e->idle_cv);
    pthread_mutex_unlock(&e->mu);
    free(c);
}

static void count(egress *e, uint64_t *what)
{
    pthread_mutex_lock(&e->mu);
    (*what)++;
    pthread_mutex_unlock(&e->mu);
}

/* The place of host:port in r, or EGRESS_REFUSED_KEPT. */
static unsigned refusal_at(const egress_refusals *r, const char *host, int port)
{
    uint64_t from = r->n > EGRESS_REFUSED_KEPT ? r->n - EGRESS_REFUSED_KEPT : 0;
    for (uint64_t k = from; k < r->n; k++) {
        unsigned j = (unsigned)(k % EGRESS_REFUSED_KEPT);
        if (r->at[j].port == port && !strcasecmp(r->at[j].host, host))
            return j;
    }
    return EGRESS_REFUSED_KEPT;
}

void egress_refusals_note(egress_refusals *r, const char *host, int port, const char *why)
{
    if (strlen(host) >= sizeof r->at[0].host)
        return;
    unsigned i = refusal_at(r, host, port);
    if (i == EGRESS_REFUSED_KEPT) {
        i = (unsigned)(r->n++ % EGRESS_REFUSED_KEPT);
        r->at[i].port = port;
        snprintf(r->at[i].host, sizeof r->at[i].host, "%s", host);
    }
    /* a reason longer than is kept is cut: it is for the client to read */
    snprintf(r->at[i].why, sizeof r->at[i].why, "%.*s", (int)sizeof r->at[i].why - 1, why);
}

int egress_refusals_find(const egress_refusals *r, const char *host, int port, char *why,
                         size_t whylen)
{
    unsigned i = refusal_at(r, host, port);
    if (i == EGRESS_REFUSED_KEPT)
        return 0;
    snprintf(why, whylen, "%s", r->at[i].why);
    return 1;
}

/* A connection to host:port that failed for a reason other than the rules. */
static void slot_failed(egress *e, egress_slot *s, const char *host, int port)
{
    pthread_mutex_lock(&e->mu);
    e->st.failed++;
    unsigned i = (unsigned)(s->failed++ % EGRESS_FAILED_KEPT);
    s->recent[i].port = port;
    snprintf(s->recent[i].host, sizeof s->recent[i].host, "%s", host);
    pthread_mutex_unlock(&e->mu);
}

static void *conn_main(void *arg)
{
    struct conn_arg a = *(struct conn_arg *)arg;
    free(arg);
    egress *e = a.e;
    int64_t deadline = rg_now_ms() + e->cfg.handshake_timeout_ms;
    char host[EGRESS_HOST_MAX];
    int port = 0;
    if (egress_handshake(a.c->cfd, host, sizeof host, &port, deadline) < 0) {
        count(e, &e->st.failed);
        conn_end(e, a.s, a.c);
        return NULL;
    }

    char tag[EGRESS_TAG_MAX];
    pthread_mutex_lock(&e->mu);
    int closed = a.s->closed;
    memcpy(tag, a.s->tag, sizeof tag);
    pthread_mutex_unlock(&e->mu);

    struct sockaddr_storage *addrs = calloc(EGRESS_MAX_ADDRS, sizeof *addrs);
    size_t n = 0;
    char why[512] = "";
    int rc;
    if (!addrs)
        rc = RG_ENOMEM;
    else if (closed || !tag[0]) {
        rc = RG_EBLOCKEDURL;
        snprintf(why, sizeof why, "the browser context has no owner");
    } else
        rc = e->cfg.decide(e->cfg.ud, tag, host, port, addrs, EGRESS_MAX_ADDRS, &n, why,
                           sizeof why);
    if (rc == 0 && n == 0)
        rc = RG_ENAVFAILED;
    int64_t reply_deadline = rg_now_ms() + e->cfg.handshake_timeout_ms;
    if (rc < 0) {
        /* counted before the browser hears of it: egress_slot_since */
        if (rc == RG_EBLOCKEDURL) {
            pthread_mutex_lock(&e->mu);
            e->st.refused++, a.s->refused++;
            egress_refusals_note(&a.s->refusals, host, port, why);
            pthread_mutex_unlock(&e->mu);
        } else {
            slot_failed(e, a.s, host, port);
        }
        if (e->cfg.refused)
            e->cfg.refused(e->cfg.ud, tag, host, port, rc, why);
        else
            rg_log(RG_LOG_INFO, MOD, "refused %s port %d for %s: %s", host, port,
                   tag[0] ? tag : "(no owner)", why);
        reply(a.c->cfd, rc == RG_EBLOCKEDURL ? REP_RULESET
                        : rc == RG_ENAVFAILED ? REP_HOST_UNREACH
                                              : REP_FAIL,
              reply_deadline);
        free(addrs);
        conn_end(e, a.s, a.c);
        return NULL;
    }

    int rep = REP_FAIL;
    int dfd = connect_any(addrs, n, port, a.c->cfd, rg_now_ms() + e->cfg.connect_timeout_ms,
                          &rep);
    free(addrs);
    if (dfd < 0) {
        slot_failed(e, a.s, host, port);
        if (rep >= 0)
            reply(a.c->cfd, rep, reply_deadline);
        conn_end(e, a.s, a.c);
        return NULL;
    }
    pthread_mutex_lock(&e->mu);
    a.c->dfd = dfd;
    closed = a.s->closed;
    e->st.connected++;
    pthread_mutex_unlock(&e->mu);
    if (!closed) {
        reply(a.c->cfd, REP_OK, reply_deadline);
        relay(e, a.c->cfd, dfd);
    }
    conn_end(e, a.s, a.c);
    return NULL;
}

/* Takes a new connection on s (acceptor thread). */
static void conn_start(egress *e, egress_slot *s, int cfd)
{
    pthread_mutex_lock(&e->mu);
    if (s->closed || e->stopping || e->st.conns >= e->cfg.max_conns ||
        s->conns >= e->cfg.max_conns_per_slot) {
        e->st.over_limit += !s->closed && !e->stopping;
        pthread_mutex_unlock(&e->mu);
        close(cfd);
        return;
    }
    struct conn *c = calloc(1, sizeof *c);
    struct conn_arg *a = malloc(sizeof *a);
    if (!c || !a) {
        pthread_mutex_unlock(&e->mu);
        free(c);
        free(a);
        close(cfd);
        return;
    }
    c->cfd = cfd;
    c->dfd = -1;
    c->next = s->clist;
    if (s->clist)
        s->clist->prev = c;
    s->clist = c;
    s->conns++;
    s->refs++;
    e->st.conns++;
    e->st.accepted++;
    e->threads++;
    *a = (struct conn_arg){.e = e, .s = s, .c = c};
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, CONN_STACK);
    pthread_t t;
    if (pthread_create(&t, &at, conn_main, a) != 0) {
        /* Undo, still under the lock: the acceptor's reference keeps s. */
        s->clist = c->next;
        if (c->next)
            c->next->prev = NULL;
        s->conns--;
        s->refs--;
        e->st.conns--;
        e->threads--;
        e->st.failed++;
        close(cfd);
        free(c);
        free(a);
        rg_log(RG_LOG_WARN, MOD, "cannot start a connection thread");
    }
    pthread_attr_destroy(&at);
    pthread_mutex_unlock(&e->mu);
}

/* ---- the acceptor ---- */

static void *acceptor_main(void *arg)
{
    egress *e = arg;
    struct pollfd *p = NULL;
    egress_slot **who = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        /* Drop closed slots (their sockets are ours to close). */
        for (egress_slot **sp = &e->slots; *sp;) {
            egress_slot *s = *sp;
            if (s->closed || e->stopping) {
                *sp = s->next;
                close(s->fd);
                s->fd = -1;
                e->st.slots--;
                slot_unref(s);
            } else {
                sp = &s->next;
            }
        }
        if (e->stopping) {
            pthread_mutex_unlock(&e->mu);
            break;
        }
        size_t n = 1;
        for (egress_slot *s = e->slots; s; s = s->next)
            n++;
        if (n > cap) {
            struct pollfd *np = realloc(p, n * sizeof *p);
            egress_slot **nw = np ? realloc(who, n * sizeof *who) : NULL;
            if (np)
                p = np;
            if (nw)
                who = nw;
            if (!np || !nw) {
                pthread_mutex_unlock(&e->mu);
                rg_sleep_ms(100);
                continue;
            }
            cap = n;
        }
        p[0] = (struct pollfd){.fd = e->wake[0], .events = POLLIN};
        size_t i = 1;
        for (egress_slot *s = e->slots; s; s = s->next, i++) {
            p[i] = (struct pollfd){.fd = s->fd, .events = POLLIN};
            who[i] = s;
            s->refs++; /* for this round of poll */
        }
        pthread_mutex_unlock(&e->mu);

        int pr = poll(p, n, -1);
        if (pr > 0 && (p[0].revents & POLLIN)) {
            char drain[64];
            while (read(e->wake[0], drain, sizeof drain) > 0) {
            }
        }
        for (i = 1; i < n; i++) {
            /* A slot closed during poll still has its socket: the acceptor
               closes it at the top of the loop, so accepting is safe, and
               conn_start turns the connection away. */
            if (pr > 0 && (p[i].revents & POLLIN)) {
                for (int k = 0; k < 64; k++) {
                    int cfd = accept4(p[i].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (cfd < 0)
                        break;
                    conn_start(e, who[i], cfd);
                }
            }
            pthread_mutex_lock(&e->mu);
            slot_unref(who[i]);
            pthread_mutex_unlock(&e->mu);
        }
    }
    free(p);
    free(who);
    return NULL;
}

int egress_new(const egress_config *cfg, egress **out)
{
    *out = NULL;
    if (!cfg->decide)
        return RG_EBADREQ;
    egress *e = calloc(1, sizeof *e);
    if (!e)
        return RG_ENOMEM;
    e->cfg = *cfg;
    if (pipe2(e->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        free(e);
        return RG_EINTERNAL;
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->idle_cv, NULL);
    if (pthread_create(&e->acceptor, NULL, acceptor_main, e) != 0) {
        close(e->wake[0]);
        close(e->wake[1]);
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->idle_cv);
        free(e);
        return RG_EINTERNAL;
    }
    *out = e;
    return 0;
}

/* Shuts down every connection of s. Caller holds e->mu. */
static void slot_kill_conns(egress_slot *s)
{
    for (struct conn *c = s->clist; c; c = c->next) {
        shutdown(c->cfd, SHUT_RDWR);
        if (c->dfd >= 0)
            shutdown(c->dfd, SHUT_RDWR);
    }
}

void egress_free(egress *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->stopping = 1;
    for (egress_slot *s = e->slots; s; s = s->next)
        slot_kill_conns(s);
    pthread_mutex_unlock(&e->mu);
    wake(e);
    pthread_join(e->acceptor, NULL);
    pthread_mutex_lock(&e->mu);
    while (e->threads > 0)
        pthread_cond_wait(&e->idle_cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    close(e->wake[0]);
    close(e->wake[1]);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->idle_cv);
    free(e);
}

int egress_slot_open(egress *e, egress_slot **out)
{
    *out = NULL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return RG_EUNAVAIL;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
        close(fd);
        return RG_EUNAVAIL;
    }
    egress_slot *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return RG_ENOMEM;
    }
    s->e = e;
    s->fd = fd;
    s->port = ntohs(a.sin_port);
    s->refs = 2; /* the owner and the acceptor's list */
    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        close(fd);
        free(s);
        return RG_EUNAVAIL;
    }
    s->next = e->slots;
    e->slots = s;
    e->st.slots++;
    pthread_mutex_unlock(&e->mu);
    wake(e);
    *out = s;
    return 0;
}

int egress_slot_port(const egress_slot *s)
{
    return s->port;
}

void egress_slot_bind(egress_slot *s, const char *tag)
{
    pthread_mutex_lock(&s->e->mu);
    snprintf(s->tag, sizeof s->tag, "%s", tag ? tag : "");
    pthread_mutex_unlock(&s->e->mu);
}

void egress_slot_mark(egress_slot *s, egress_mark *m)
{
    pthread_mutex_lock(&s->e->mu);
    m->refused = s->refused;
    m->failed = s->failed;
    pthread_mutex_unlock(&s->e->mu);
}

uint64_t egress_slot_since(egress_slot *s, const egress_mark *mark, const char *host, int port,
                           int *host_failed)
{
    *host_failed = 0;
    pthread_mutex_lock(&s->e->mu);
    uint64_t refused = s->refused - mark->refused;
    uint64_t from = s->failed - mark->failed > EGRESS_FAILED_KEPT ? s->failed - EGRESS_FAILED_KEPT
                                                                  : mark->failed;
    for (uint64_t k = from; k < s->failed && !*host_failed; k++) {
        unsigned i = (unsigned)(k % EGRESS_FAILED_KEPT);
        *host_failed = s->recent[i].port == port && !strcasecmp(s->recent[i].host, host);
    }
    pthread_mutex_unlock(&s->e->mu);
    return refused;
}

int egress_slot_refusal(egress_slot *s, const char *host, int port, char *why, size_t whylen)
{
    pthread_mutex_lock(&s->e->mu);
    int found = egress_refusals_find(&s->refusals, host, port, why, whylen);
    pthread_mutex_unlock(&s->e->mu);
    return found;
}

void egress_slot_close(egress_slot *s)
{
    if (!s)
        return;
    egress *e = s->e;
    pthread_mutex_lock(&e->mu);
    s->closed = 1;
    s->tag[0] = '\0';
    slot_kill_conns(s);
    slot_unref(s);
    pthread_mutex_unlock(&e->mu);
    wake(e);
}

void egress_get_stats(egress *e, egress_stats *st)
{
    pthread_mutex_lock(&e->mu);
    *st = e->st;
    pthread_mutex_unlock(&e->mu);
    st->bytes_in = __atomic_load_n(&e->st.bytes_in, __ATOMIC_RELAXED);
    st->bytes_out = __atomic_load_n(&e->st.bytes_out, __ATOMIC_RELAXED);
}
