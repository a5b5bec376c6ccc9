/* net.c - loopback HTTP/1.1 and WebSocket clients for tests and benchmarks. */
#define _GNU_SOURCE
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define IO_TIMEOUT_MS 30000

int net_dial(int port)
{
    return net_dial_at("127.0.0.1", port);
}

int net_dial_at(const char *ip, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int wait_fd(int fd, short ev, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = ev};
    int n;
    do
        n = poll(&p, 1, timeout_ms);
    while (n < 0 && errno == EINTR);
    return n > 0 ? 0 : -1;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads at least want bytes more into b (timeout); 0, or -1 (EOF counts as -1). */
static int read_more(int fd, rg_buf *b, size_t want, int timeout_ms)
{
    size_t goal = b->len + want;
    while (b->len < goal) {
        if (wait_fd(fd, POLLIN, timeout_ms) < 0)
            return -1;
        char tmp[16384];
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        rg_buf_append(b, tmp, (size_t)r);
    }
    return 0;
}

const char *http_header_value(const char *head, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
        if (!strncasecmp(p + 2, name, nl) && p[2 + nl] == ':') {
            const char *v = p + 3 + nl;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r\n");
            snprintf(out, len, "%.*s", (int)n, v);
            return out;
        }
    }
    return NULL;
}

/* An empty reply: no status yet, no Retry-After, an empty body. */
static void resp_init(http_resp *resp)
{
    memset(resp, 0, sizeof *resp);
    resp->retry_after = -1;
    rg_buf_init(&resp->body);
}

static int exchange(int fd, const char *method, const char *path, const char *headers,
                    const void *body, size_t len, int keep, http_resp *resp)
{
    resp_init(resp);
    rg_buf req;
    rg_buf_init(&req);
    rg_buf_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: %s\r\n", method, path,
                  keep ? "keep-alive" : "close");
    if (body || !strcmp(method, "POST"))
        rg_buf_printf(&req, "Content-Length: %zu\r\n", len);
    if (headers)
        rg_buf_puts(&req, headers);
    rg_buf_puts(&req, "\r\n");
    int rc = write_all(fd, req.data, req.len);
    rg_buf_destroy(&req);
    if (rc == 0 && len)
        rc = write_all(fd, body, len);
    if (rc < 0)
        return -1;
    rg_buf in;
    rg_buf_init(&in);
    char *end = NULL;
    while (!(end = in.data ? strstr(in.data, "\r\n\r\n") : NULL))
        if (read_more(fd, &in, 1, IO_TIMEOUT_MS) < 0) {
            rg_buf_destroy(&in);
            return -1;
        }
    size_t head_len = (size_t)(end - in.data) + 4;
    *end = '\0';
    if (sscanf(in.data, "HTTP/1.%*d %d", &resp->status) != 1) {
        rg_buf_destroy(&in);
        return -1;
    }
    char v[128];
    if (http_header_value(in.data, "Content-Type", v, sizeof v))
        snprintf(resp->content_type, sizeof resp->content_type, "%s", v);
    if (http_header_value(in.data, "Retry-After", v, sizeof v))
        resp->retry_after = atoi(v);
    resp->closed = http_header_value(in.data, "Connection", v, sizeof v) && !strcasecmp(v, "close");
    long cl = http_header_value(in.data, "Content-Length", v, sizeof v) ? atol(v) : -1;
    int chunked = http_header_value(in.data, "Transfer-Encoding", v, sizeof v) &&
                  strstr(v, "chunked") != NULL;
    rg_buf_append(&resp->body, in.data + head_len, in.len - head_len);
    rg_buf_destroy(&in);
    if (resp->status == 204 || resp->status == 304 || !strcmp(method, "HEAD"))
        return 0; /* no body, whatever the headers say (RFC 9112, 6.3) */
    if (chunked) {
        /* Decode in place once the terminating chunk arrived. */
        rg_buf raw = resp->body;
        rg_buf_init(&resp->body);
        size_t pos = 0;
        for (;;) {
            char *crlf = raw.data ? memmem(raw.data + pos, raw.len - pos, "\r\n", 2) : NULL;
            if (!crlf) {
                if (read_more(fd, &raw, 1, IO_TIMEOUT_MS) < 0)
                    break;
                continue;
            }
            size_t n = (size_t)strtoul(raw.data + pos, NULL, 16);
            size_t start = (size_t)(crlf - raw.data) + 2;
            if (raw.len < start + n + 2) {
                if (read_more(fd, &raw, start + n + 2 - raw.len, IO_TIMEOUT_MS) < 0)
                    break;
                continue;
            }
            if (n == 0)
                break;
            rg_buf_append(&resp->body, raw.data + start, n);
            pos = start + n + 2;
        }
        rg_buf_destroy(&raw);
        return 0;
    }
    if (cl >= 0) {
        if (resp->body.len < (size_t)cl &&
            read_more(fd, &resp->body, (size_t)cl - resp->body.len, IO_TIMEOUT_MS) < 0)
            return -1;
        return 0;
    }
    while (read_more(fd, &resp->body, 1, IO_TIMEOUT_MS) == 0)
        ;
    return 0;
}

int http_request(int port, const char *method, const char *path, const char *headers,
                 const void *body, size_t len, http_resp *resp)
{
    int fd = net_dial(port);
    if (fd < 0) {
        resp_init(resp);
        return -1;
    }
    int rc = exchange(fd, method, path, headers, body, len, 0, resp);
    close(fd);
    return rc;
}

int http_connect(int port)
{
    return net_dial(port);
}

int http_request_on(int fd, const char *method, const char *path, const char *headers,
                    const void *body, size_t len, http_resp *resp)
{
    return exchange(fd, method, path, headers, body, len, 1, resp);
}

double metric_value(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

/* ---- FastCGI ---- */

enum { FCGI_BEGIN = 1, FCGI_END = 3, FCGI_PARAMS = 4, FCGI_STDIN = 5, FCGI_STDOUT = 6 };

/* One record of request id 1: an 8-byte header, then the content. */
static void fcgi_record(rg_buf *out, int type, const void *data, size_t len)
{
    unsigned char h[8] = {
        1, (unsigned char)type, 0, 1, (unsigned char)(len >> 8), (unsigned char)len, 0, 0};
    rg_buf_append(out, h, sizeof h);
    if (len)
        rg_buf_append(out, data, len);
}

/* A name or value length: one byte below 128, else four with the top bit set. */
static void fcgi_length(rg_buf *out, size_t n)
{
    if (n < 128) {
        unsigned char c = (unsigned char)n;
        rg_buf_append(out, &c, 1);
        return;
    }
    unsigned char c[4] = {(unsigned char)(0x80 | (n >> 24)), (unsigned char)(n >> 16),
                          (unsigned char)(n >> 8), (unsigned char)n};
    rg_buf_append(out, c, sizeof c);
}

static void fcgi_stream(rg_buf *out, int type, const char *data, size_t len)
{
    for (size_t off = 0; off < len; off += 65535)
        fcgi_record(out, type, data + off, len - off < 65535 ? len - off : 65535);
    fcgi_record(out, type, NULL, 0);
}

/* BEGIN_REQUEST (responder, no kept connection) and the params into req. */
static void fcgi_head(rg_buf *req, const char *const *params)
{
    static const unsigned char responder[8] = {0, 1, 0, 0, 0, 0, 0, 0};
    fcgi_record(req, FCGI_BEGIN, responder, sizeof responder);
    rg_buf pairs;
    rg_buf_init(&pairs);
    for (int i = 0; params && params[i]; i++) {
        const char *eq = strchr(params[i], '=');
        size_t nl = eq ? (size_t)(eq - params[i]) : strlen(params[i]);
        const char *v = eq ? eq + 1 : "";
        fcgi_length(&pairs, nl);
        fcgi_length(&pairs, strlen(v));
        rg_buf_append(&pairs, params[i], nl);
        rg_buf_append(&pairs, v, strlen(v));
    }
    fcgi_stream(req, FCGI_PARAMS, pairs.data, pairs.len);
    rg_buf_destroy(&pairs);
}

/* Records until FCGI_END_REQUEST; FCGI_STDOUT's content is the reply. 0 or -1. */
static int fcgi_reply(int fd, http_resp *resp)
{
    rg_buf in, out;
    rg_buf_init(&in);
    rg_buf_init(&out);
    int rc = -1;
    size_t pos = 0;
    for (;;) {
        if (in.len - pos < 8 && read_more(fd, &in, 8 - (in.len - pos), IO_TIMEOUT_MS) < 0)
            goto out;
        const unsigned char *h = (const unsigned char *)in.data + pos;
        size_t clen = (size_t)h[4] << 8 | h[5], whole = 8 + clen + h[6];
        int type = h[1];
        if (in.len - pos < whole && read_more(fd, &in, whole - (in.len - pos), IO_TIMEOUT_MS) < 0)
            goto out;
        if (type == FCGI_STDOUT)
            rg_buf_append(&out, in.data + pos + 8, clen);
        pos += whole;
        if (type == FCGI_END)
            break;
    }
    char *end = out.data ? strstr(out.data, "\r\n\r\n") : NULL;
    if (!end)
        goto out;
    *end = '\0';
    /* header_value looks after a line break: put one in front of the head. */
    rg_buf head;
    rg_buf_init(&head);
    rg_buf_printf(&head, "\r\n%s", out.data);
    char v[128];
    if (http_header_value(head.data, "Status", v, sizeof v))
        resp->status = atoi(v);
    if (http_header_value(head.data, "Content-Type", v, sizeof v))
        snprintf(resp->content_type, sizeof resp->content_type, "%s", v);
    if (http_header_value(head.data, "Retry-After", v, sizeof v))
        resp->retry_after = atoi(v);
    rg_buf_destroy(&head);
    size_t head_len = (size_t)(end - out.data) + 4;
    rg_buf_append(&resp->body, out.data + head_len, out.len - head_len);
    rc = resp->status > 0 ? 0 : -1;
out:
    rg_buf_destroy(&in);
    rg_buf_destroy(&out);
    return rc;
}

int fcgi_request(int port, const char *const *params, const void *body, size_t len, http_resp *resp)
{
    return fcgi_request_at("127.0.0.1", port, params, body, len, resp);
}

int fcgi_request_at(const char *ip, int port, const char *const *params, const void *body,
                    size_t len, http_resp *resp)
{
    resp_init(resp);
    rg_buf req;
    rg_buf_init(&req);
    fcgi_head(&req, params);
    fcgi_stream(&req, FCGI_STDIN, body, len);
    int rc = -1, fd = net_dial_at(ip, port);
    if (fd >= 0 && write_all(fd, req.data, req.len) == 0)
        rc = fcgi_reply(fd, resp);
    if (fd >= 0)
        close(fd);
    rg_buf_destroy(&req);
    return rc;
}

int fcgi_flood(int port, const char *const *params, size_t len, size_t *sent, http_resp *resp)
{
    resp_init(resp);
    *sent = 0;
    rg_buf req;
    rg_buf_init(&req);
    fcgi_head(&req, params);
    int rc = -1, fd = net_dial(port);
    struct timeval tv = {IO_TIMEOUT_MS / 1000, 0};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0 ||
        write_all(fd, req.data, req.len) < 0)
        goto out;
    static const char zeros[65535];
    while (*sent < len) {
        size_t n = len - *sent < sizeof zeros ? len - *sent : sizeof zeros;
        rg_buf_reset(&req);
        fcgi_record(&req, FCGI_STDIN, zeros, n);
        if (write_all(fd, req.data, req.len) < 0)
            break;
        *sent += n;
    }
    if (*sent == len) {
        rg_buf_reset(&req);
        fcgi_record(&req, FCGI_STDIN, NULL, 0);
        write_all(fd, req.data, req.len);
    }
    rc = fcgi_reply(fd, resp);
out:
    if (fd >= 0)
        close(fd);
    rg_buf_destroy(&req);
    return rc;
}

/* ---- WebSocket ---- */

struct wsc {
    int fd;
    rg_buf in; /* bytes received and not yet consumed */
};

wsc *wsc_open(int port, const char *path, const char *headers, int *status)
{
    *status = 0;
    int fd = net_dial(port);
    if (fd < 0)
        return NULL;
    rg_buf req;
    rg_buf_init(&req);
    rg_buf_printf(&req,
                  "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  "Sec-WebSocket-Version: 13\r\n%s\r\n",
                  path, headers ? headers : "");
    int rc = write_all(fd, req.data, req.len);
    rg_buf_destroy(&req);
    wsc *w = calloc(1, sizeof *w);
    if (rc < 0 || !w) {
        free(w);
        close(fd);
        return NULL;
    }
    w->fd = fd;
    rg_buf_init(&w->in);
    char *end = NULL;
    while (!(end = w->in.data ? strstr(w->in.data, "\r\n\r\n") : NULL))
        if (read_more(fd, &w->in, 1, IO_TIMEOUT_MS) < 0)
            break;
    if (end)
        sscanf(w->in.data, "HTTP/1.%*d %d", status);
    if (!end || *status != 101) {
        wsc_close(w);
        return NULL;
    }
    size_t head = (size_t)(end - w->in.data) + 4;
    memmove(w->in.data, w->in.data + head, w->in.len - head);
    w->in.len -= head;
    return w;
}

/* One masked frame of opcode op. */
static int wsc_frame(wsc *w, int op, const void *data, size_t len)
{
    unsigned char h[14];
    size_t n = 0;
    h[n++] = (unsigned char)(0x80 | op);
    if (len < 126) {
        h[n++] = (unsigned char)(0x80 | len);
    } else if (len < 65536) {
        h[n++] = 0x80 | 126;
        h[n++] = (unsigned char)(len >> 8);
        h[n++] = (unsigned char)len;
    } else {
        h[n++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--)
            h[n++] = (unsigned char)((uint64_t)len >> (8 * i));
    }
    unsigned char mask[4];
    if (getrandom(mask, 4, 0) != 4)
        memset(mask, 0x5a, 4);
    memcpy(h + n, mask, 4);
    n += 4;
    unsigned char *m = malloc(len ? len : 1);
    if (!m)
        return -1;
    for (size_t i = 0; i < len; i++)
        m[i] = ((const unsigned char *)data)[i] ^ mask[i % 4];
    int rc = write_all(w->fd, h, n) == 0 && write_all(w->fd, m, len) == 0 ? 0 : -1;
    free(m);
    return rc;
}

int wsc_send(wsc *w, const void *data, size_t len, int text)
{
    return wsc_frame(w, text ? 1 : 2, data, len);
}

int wsc_recv(wsc *w, rg_buf *out, int timeout_ms)
{
    int64_t deadline = rg_now_ms() + timeout_ms;
    for (;;) {
        const unsigned char *p = (const unsigned char *)w->in.data;
        if (w->in.len >= 2) {
            size_t need = 2, len = p[1] & 0x7f;
            if (len == 126)
                need += 2;
            else if (len == 127)
                need += 8;
            if (w->in.len >= need) {
                if (len == 126)
                    len = (size_t)p[2] << 8 | p[3];
                else if (len == 127) {
                    len = 0;
                    for (int i = 0; i < 8; i++)
                        len = len << 8 | p[2 + i];
                }
                if (w->in.len >= need + len) {
                    int op = p[0] & 0x0f;
                    if (op == 1 || op == 2 || op == 8)
                        rg_buf_append(out, p + need, len);
                    if (op == 9) /* a pong, as clients do (the server may have closed) */
                        (void)wsc_frame(w, 10, p + need, len);
                    memmove(w->in.data, w->in.data + need + len, w->in.len - need - len);
                    w->in.len -= need + len;
                    if (op == 1 || op == 2 || op == 8)
                        return op;
                    continue; /* ping (answered), pong, continuation */
                }
            }
        }
        int64_t left = deadline - rg_now_ms();
        if (left <= 0 || read_more(w->fd, &w->in, 1, (int)left) < 0)
            return -1;
    }
}

void wsc_close(wsc *w)
{
    if (!w)
        return;
    close(w->fd);
    rg_buf_destroy(&w->in);
    free(w);
}
