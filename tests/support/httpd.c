/*
 * httpd.c - a loopback HTTP server for fixture pages in tests and benchmarks.
 * One accept thread, one detached thread per connection, each response closes
 * its connection. Small on purpose: it serves tests, not users.
 */
#define _GNU_SOURCE
#include "support.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct httpd {
    int lfd;
    int port;
    int stop_pipe[2];
    char *docroot;
    pthread_t thread;
    atomic_size_t requests;
    atomic_int live; /* connection threads running */
    int no_icon;     /* /favicon.ico is 404 (httpd_no_icon) */
    pthread_mutex_t log_mu;
    char *paths[512];  /* the last 512 request paths (with queries) */
    size_t n_paths;
};

struct conn {
    httpd *h;
    int fd;
};

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Every response is no-store, so that no browser keeps a fixture between
   tests; with cacheable (a query of "cacheable"), max-age=0 instead: a page
   Chromium may keep in its back/forward cache, as it does most pages of
   the web (no-store ones it does not). */
static void respond(int fd, int status, const char *type, const char *body, size_t len,
                    int cacheable)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: %s\r\nConnection: close\r\n\r\n",
                     status, status == 200 ? "OK" : "Not Found", type, len,
                     cacheable ? "max-age=0" : "no-store");
    send_all(fd, head, (size_t)n);
    send_all(fd, body, len);
}

static const char *type_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && !strcmp(dot, ".html"))
        return "text/html; charset=utf-8";
    if (dot && !strcmp(dot, ".js"))
        return "text/javascript";
    if (dot && !strcmp(dot, ".css"))
        return "text/css";
    return "application/octet-stream";
}

/* Serves docroot/path when it is a regular file without "..". Returns 1 if served. */
static int serve_file(httpd *h, int fd, const char *path, int cacheable)
{
    if (!h->docroot || strstr(path, ".."))
        return 0;
    char full[4096];
    snprintf(full, sizeof full, "%s%s", h->docroot, path);
    struct stat st;
    if (stat(full, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 64 * 1024 * 1024)
        return 0;
    FILE *f = fopen(full, "rbe");
    if (!f)
        return 0;
    char *body = malloc((size_t)st.st_size + 1);
    size_t n = body ? fread(body, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!body)
        return 0;
    respond(fd, 200, type_of(path), body, n, cacheable);
    free(body);
    return 1;
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    httpd *h = c->h;
    char req[8192];
    size_t len = 0;
    /* Read the request head; Chromium may open sockets it never uses. */
    while (len < sizeof req - 1) {
        struct pollfd pf[2] = {{c->fd, POLLIN, 0}, {h->stop_pipe[0], POLLIN, 0}};
        if (poll(pf, 2, 5000) <= 0 || pf[1].revents)
            goto out;
        ssize_t n = recv(c->fd, req + len, sizeof req - 1 - len, 0);
        if (n <= 0)
            goto out;
        len += (size_t)n;
        req[len] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    atomic_fetch_add(&h->requests, 1);
    char method[16], path[2048];
    if (sscanf(req, "%15s %2047s", method, path) != 2)
        goto out;
    pthread_mutex_lock(&h->log_mu);
    free(h->paths[h->n_paths % 512]);
    h->paths[h->n_paths++ % 512] = strdup(path);
    pthread_mutex_unlock(&h->log_mu);
    char *q = strchr(path, '?');
    if (q)
        *q = '\0';
    int cacheable = q && !strcmp(q + 1, "cacheable");
    if (!strcmp(path, "/redirect") && q && !strncmp(q + 1, "to=", 3)) {
        /* GET /redirect?to=URL: a 302 to URL (not decoded: pass it plain). */
        char head[2300];
        int hn = snprintf(head, sizeof head,
                          "HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n"
                          "Connection: close\r\n\r\n",
                          q + 4);
        if (hn > 0 && send(c->fd, head, (size_t)hn, MSG_NOSIGNAL) < 0)
            goto out;
        goto out;
    }
    if (!strcmp(path, "/nocontent")) {
        /* GET /nocontent: 204, which a browser navigates to without leaving the page */
        static const char head[] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
        send(c->fd, head, sizeof head - 1, MSG_NOSIGNAL); /* the peer may be gone: nothing to do */
        goto out;
    }
    if (!strncmp(path, "/missing", 8) || (h->no_icon && !strcmp(path, "/favicon.ico"))) {
        /* a resource that is not there (and no site icon, as on many servers): 404 */
        respond(c->fd, 404, "text/plain", "not found\n", 10, cacheable);
        goto out;
    }
    if (!strncmp(path, "/late/", 6)) {
        /* GET /late/PATH: PATH, 300 ms late (a document that is still on its
           way when the test looks) */
        struct pollfd pf = {h->stop_pipe[0], POLLIN, 0};
        poll(&pf, 1, 300);
        memmove(path, path + 5, strlen(path + 5) + 1);
    }
    if (!strcmp(path, "/echo-cookie")) {
        /* GET /echo-cookie: a page that shows the Cookie header it was sent
           (HttpOnly cookies included, which no page script can read) */
        const char *ck = strcasestr(req, "\r\nCookie: ");
        size_t cl = ck ? strcspn(ck + 10, "\r\n") : 0;
        char body[2048];
        int n = snprintf(body, sizeof body,
                         "<!doctype html><title>cookies</title><p>sent: %.*s</p>", (int)cl,
                         ck ? ck + 10 : "");
        respond(c->fd, 200, "text/html; charset=utf-8", body, (size_t)n, 0);
        goto out;
    }
    if (!strcmp(path, "/echo-headers")) {
        /* GET /echo-headers: a page that shows the request's header lines, one per paragraph
           (names lowered; <, > and & left out) */
        char body[8192];
        size_t n = (size_t)snprintf(body, sizeof body,
                                    "<!doctype html><title>headers</title><h1>headers</h1>");
        const char *line = strstr(req, "\r\n");
        while (line && line[2] != '\r' && n < sizeof body - 64) {
            line += 2;
            size_t ll = strcspn(line, "\r\n"), colon = strcspn(line, ":");
            n += (size_t)snprintf(body + n, sizeof body - n, "<p>");
            for (size_t i = 0; i < ll && n < sizeof body - 16; i++)
                if (!strchr("<>&", line[i]))
                    body[n++] = i < colon ? (char)tolower((unsigned char)line[i]) : line[i];
            n += (size_t)snprintf(body + n, sizeof body - n, "</p>");
            line = strstr(line, "\r\n");
        }
        respond(c->fd, 200, "text/html; charset=utf-8", body, n, 0);
        goto out;
    }
    if (!strcmp(path, "/slow")) {
        struct pollfd pf = {h->stop_pipe[0], POLLIN, 0};
        poll(&pf, 1, 60000);
        goto out;
    }
    if (serve_file(h, c->fd, path, cacheable))
        goto out;
    char body[4096];
    int n = snprintf(body, sizeof body,
                     "<!doctype html><html><head><title>%s</title></head>"
                     "<body><h1>%s</h1><p>fixture page</p></body></html>",
                     path, path);
    respond(c->fd, 200, "text/html; charset=utf-8", body, (size_t)n, cacheable);
out:
    close(c->fd);
    atomic_fetch_sub(&h->live, 1);
    free(c);
    return NULL;
}

static void *accept_main(void *arg)
{
    httpd *h = arg;
    for (;;) {
        struct pollfd pf[2] = {{h->lfd, POLLIN, 0}, {h->stop_pipe[0], POLLIN, 0}};
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            break;
        if (pf[1].revents)
            break;
        if (!(pf[0].revents & POLLIN))
            continue;
        int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        struct conn *c = malloc(sizeof *c);
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (!c) {
            close(fd);
        } else {
            c->h = h;
            c->fd = fd;
            atomic_fetch_add(&h->live, 1);
            if (pthread_create(&t, &at, conn_main, c) != 0) {
                atomic_fetch_sub(&h->live, 1);
                close(fd);
                free(c);
            }
        }
        pthread_attr_destroy(&at);
    }
    return NULL;
}

void httpd_no_icon(httpd *h)
{
    h->no_icon = 1;
}

httpd *httpd_start(const char *docroot)
{
    return httpd_start_port(docroot, 0);
}

static httpd *start(const char *docroot, int port, int v6)
{
    httpd *h = calloc(1, sizeof *h);
    if (h)
        pthread_mutex_init(&h->log_mu, NULL);
    if (!h)
        return NULL;
    h->docroot = docroot ? strdup(docroot) : NULL;
    h->lfd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (v6) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        a6->sin6_addr = in6addr_loopback;
    } else {
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    socklen_t al = v6 ? sizeof *a6 : sizeof *a;
    if (h->lfd < 0 || bind(h->lfd, (struct sockaddr *)&ss, al) < 0 || listen(h->lfd, 128) < 0 ||
        getsockname(h->lfd, (struct sockaddr *)&ss, &al) < 0 ||
        pipe2(h->stop_pipe, O_CLOEXEC) < 0) {
        if (h->lfd >= 0)
            close(h->lfd);
        free(h->docroot);
        free(h);
        return NULL;
    }
    h->port = ntohs(v6 ? a6->sin6_port : a->sin_port);
    if (pthread_create(&h->thread, NULL, accept_main, h) != 0) {
        close(h->lfd);
        free(h->docroot);
        free(h);
        return NULL;
    }
    return h;
}

httpd *httpd_start_port(const char *docroot, int port)
{
    return start(docroot, port, 0);
}

httpd *httpd_start_ipv6(const char *docroot)
{
    return start(docroot, 0, 1);
}

int httpd_port(const httpd *h)
{
    return h->port;
}

const char *httpd_url(const httpd *h, const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "http://127.0.0.1:%d%s", h->port, path);
    return buf;
}

size_t httpd_requests(const httpd *h)
{
    return atomic_load(&((httpd *)h)->requests);
}

void httpd_stop(httpd *h)
{
    if (!h)
        return;
    ssize_t w = write(h->stop_pipe[1], "x", 1);
    (void)w;
    pthread_join(h->thread, NULL);
    /* Connection threads watch the stop pipe; wait for them before freeing. */
    for (int i = 0; i < 500 && atomic_load(&h->live) > 0; i++)
        usleep(10000);
    close(h->lfd);
    close(h->stop_pipe[0]);
    close(h->stop_pipe[1]);
    free(h->docroot);
    for (size_t i = 0; i < 512; i++)
        free(h->paths[i]);
    pthread_mutex_destroy(&h->log_mu);
    free(h);
}

size_t httpd_count(httpd *h, const char *prefix)
{
    size_t n = 0;
    pthread_mutex_lock(&h->log_mu);
    size_t have = h->n_paths < 512 ? h->n_paths : 512;
    for (size_t i = 0; i < have; i++)
        n += h->paths[i] && !strncmp(h->paths[i], prefix, strlen(prefix));
    pthread_mutex_unlock(&h->log_mu);
    return n;
}
