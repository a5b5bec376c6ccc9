/*
 * http.c - refgate-cli's HTTP/1.1 client: URL parsing, request formatting, an
 * incremental response parser (status, headers, Content-Length, chunked, or
 * up to the close) and the transport on a plain TCP socket, where every wait
 * (connect, send, receive) is a poll with the time left before a deadline.
 * One request per connection (Connection: close). No TLS: https is refused.
 */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/wire.h"

#define RECV_CHUNK 65536

/* ---- URLs ---------------------------------------------------------------- */

static int parse_port(const char *s, size_t n, char out[8])
{
    if (n == 0 || n > 5)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    snprintf(out, 8, "%ld", v);
    return 0;
}

/* The part after the authority: a path prefix of printable characters. */
static int parse_prefix(const char *p, cli_url *u, char *err, size_t errlen)
{
    size_t n = strlen(p);
    while (n && p[n - 1] == '/')
        n--;
    if (n >= sizeof u->prefix)
        return rg_errf(err, errlen, RG_EBADREQ, "the URL's path is too long");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch <= 0x20 || ch >= 0x7f || ch == '?' || ch == '#')
            return rg_errf(err, errlen, RG_EBADREQ,
                           "the URL's path may not hold spaces, a query or a fragment");
    }
    memcpy(u->prefix, p, n);
    u->prefix[n] = '\0';
    return 0;
}

int cli_url_parse(const char *s, cli_url *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof *u);
    if (!strncasecmp(s, "https://", 8))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "refgate-cli speaks plain http only: use http://, or reach an https "
                       "gateway through a local tunnel (ssh -L, stunnel)");
    if (strncasecmp(s, "http://", 7))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "the gateway URL must look like http://host:port (got \"%.80s\")", s);
    const char *a = s + 7;
    size_t alen = strcspn(a, "/?#");
    if (memchr(a, '@', alen))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "the gateway URL may not hold a user name or "
                       "password: pass the API key with --key");
    const char *host = a, *port = NULL;
    size_t hlen;
    if (alen && a[0] == '[') {
        const char *close = memchr(a, ']', alen);
        if (!close)
            return rg_errf(err, errlen, RG_EBADREQ, "an IPv6 address in a URL needs a closing ']'");
        host = a + 1;
        hlen = (size_t)(close - host);
        if (close + 1 < a + alen) {
            if (close[1] != ':')
                return rg_errf(err, errlen, RG_EBADREQ, "unexpected text after ']' in the URL");
            port = close + 2;
        }
    } else {
        const char *colon = memchr(a, ':', alen);
        hlen = colon ? (size_t)(colon - a) : alen;
        port = colon ? colon + 1 : NULL;
    }
    if (hlen == 0 || hlen >= sizeof u->host)
        return rg_errf(err, errlen, RG_EBADREQ, "the gateway URL has no host");
    memcpy(u->host, host, hlen);
    size_t plen = port ? (size_t)(a + alen - port) : 0;
    if (port && parse_port(port, plen, u->port) < 0)
        return rg_errf(err, errlen, RG_EBADREQ, "the URL's port must be a number from 1 to 65535");
    if (!port)
        strcpy(u->port, "80");
    int v6 = a[0] == '[';
    snprintf(u->authority, sizeof u->authority, "%s%s%s%s%s", v6 ? "[" : "", u->host, v6 ? "]" : "",
             port ? ":" : "", port ? u->port : "");
    if (a[alen] == '?' || a[alen] == '#')
        return rg_errf(err, errlen, RG_EBADREQ, "the gateway URL may not hold a query or fragment");
    return parse_prefix(a + alen, u, err, errlen);
}

/* ---- requests ------------------------------------------------------------ */

int cli_path_escape(rg_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            rg_buf_append(out, p, 1);
        else
            rg_buf_printf(out, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
    return out->failed ? RG_ENOMEM : 0;
}

static int header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

int cli_http_format(const cli_url *u, const cli_http_req *r, rg_buf *out, char *err, size_t errlen)
{
    if (r->key && (!*r->key || !header_safe(r->key)))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "the API key is empty or holds spaces or control characters");
    if (!header_safe(r->path) || r->path[0] != '/')
        return rg_errf(err, errlen, RG_EBADREQ, "the request path is not valid");
    rg_buf_printf(out, "%s %s%s HTTP/1.1\r\nHost: %s\r\n", r->method, u->prefix, r->path,
                  u->authority);
    rg_buf_puts(out, "User-Agent: refgate-cli/1\r\nAccept: application/msgpack\r\n");
    if (r->key)
        rg_buf_printf(out, "Authorization: Bearer %s\r\n", r->key);
    if (r->body || !strcmp(r->method, "POST")) {
        rg_buf_printf(out, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                      r->ctype ? r->ctype : "application/msgpack", r->body ? r->body_len : 0);
    }
    rg_buf_puts(out, "Connection: close\r\n\r\n");
    if (r->body)
        rg_buf_append(out, r->body, r->body_len);
    return out->failed ? RG_ENOMEM : 0;
}

/* ---- responses ----------------------------------------------------------- */

enum { P_HEAD, P_LENGTH, P_CLOSE, P_CHUNK_SIZE, P_CHUNK_DATA, P_CHUNK_END, P_TRAILER, P_DONE };

void cli_http_resp_init(cli_http_resp *r)
{
    memset(r, 0, sizeof *r);
    r->retry_after_s = -1;
    rg_buf_init(&r->body);
}

void cli_http_resp_destroy(cli_http_resp *r)
{
    rg_buf_destroy(&r->body);
    memset(r, 0, sizeof *r);
}

void cli_http_parser_init(cli_http_parser *p)
{
    memset(p, 0, sizeof *p);
    p->state = P_HEAD;
    p->content_length = -1;
}

/* The end of the line starting at in[pos] (the index of its '\n'), or -1. */
static long line_end(const char *in, size_t len, size_t pos)
{
    const char *nl = memchr(in + pos, '\n', len - pos);
    return nl ? (long)(nl - in) : -1;
}

/* The header block's length up to and including its empty line, or 0. */
static size_t head_end(const char *in, size_t len, size_t pos)
{
    size_t at = pos;
    for (;;) {
        long e = line_end(in, len, at);
        if (e < 0)
            return 0;
        size_t line_len = (size_t)e - at;
        if (at > pos && (line_len == 0 || (line_len == 1 && in[at] == '\r')))
            return (size_t)e + 1 - pos;
        at = (size_t)e + 1;
    }
}

static const char *trim(const char *s, size_t *n)
{
    while (*n && (*s == ' ' || *s == '\t')) {
        s++;
        (*n)--;
    }
    while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t' || s[*n - 1] == '\r'))
        (*n)--;
    return s;
}

static int parse_status(const char *s, size_t n, int *status)
{
    if (n < 12 || strncmp(s, "HTTP/1.", 7) || (s[7] != '0' && s[7] != '1') || s[8] != ' ')
        return -1;
    for (int i = 9; i < 12; i++)
        if (s[i] < '0' || s[i] > '9')
            return -1;
    if (n > 12 && s[12] != ' ' && s[12] != '\r')
        return -1;
    *status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    return *status >= 100 ? 0 : -1;
}

static int parse_decimal(const char *v, size_t n, uint64_t max, uint64_t *out)
{
    uint64_t x = 0;
    if (n == 0 || n > 19)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    if (x > max)
        return -1;
    *out = x;
    return 0;
}

/* Does the comma-separated list v (n bytes) end with the token "chunked"? */
static int ends_chunked(const char *v, size_t n)
{
    const char *last = v;
    for (size_t i = 0; i < n; i++)
        if (v[i] == ',')
            last = v + i + 1;
    size_t ln = (size_t)(v + n - last);
    last = trim(last, &ln);
    return ln == 7 && !strncasecmp(last, "chunked", 7);
}

struct head_info {
    int chunked;
    int64_t length;
};

static int header(const char *name, size_t nn, const char *v, size_t vn, cli_http_resp *r,
                  struct head_info *h, char *err, size_t errlen)
{
    if (nn == 14 && !strncasecmp(name, "content-length", nn)) {
        uint64_t x;
        if (parse_decimal(v, vn, UINT64_MAX / 2, &x) < 0)
            return rg_errf(err, errlen, RG_EPROTO, "the reply's Content-Length is not a number");
        if (h->length >= 0 && (uint64_t)h->length != x)
            return rg_errf(err, errlen, RG_EPROTO, "the reply has two different Content-Lengths");
        if (x > CLI_MAX_BODY_BYTES)
            return rg_errf(err, errlen, RG_ETOOLARGE, "the reply is larger than %u bytes",
                           CLI_MAX_BODY_BYTES);
        h->length = (int64_t)x;
    } else if (nn == 17 && !strncasecmp(name, "transfer-encoding", nn)) {
        h->chunked = ends_chunked(v, vn);
    } else if (nn == 12 && !strncasecmp(name, "content-type", nn)) {
        const char *semi = memchr(v, ';', vn);
        size_t tn = semi ? (size_t)(semi - v) : vn;
        v = trim(v, &tn);
        if (tn >= sizeof r->ctype)
            tn = sizeof r->ctype - 1;
        for (size_t i = 0; i < tn; i++)
            r->ctype[i] = (char)(v[i] >= 'A' && v[i] <= 'Z' ? v[i] - 'A' + 'a' : v[i]);
        r->ctype[tn] = '\0';
    } else if (nn == 11 && !strncasecmp(name, "retry-after", nn)) {
        uint64_t x;
        if (parse_decimal(v, vn, 86400 * 365, &x) == 0)
            r->retry_after_s = (long)x;
    }
    return 0;
}

/* Parses one header block of n bytes at s. */
static int parse_head(const char *s, size_t n, cli_http_resp *r, struct head_info *h, char *err,
                      size_t errlen)
{
    long e = line_end(s, n, 0);
    if (parse_status(s, (size_t)e, &r->status) < 0)
        return rg_errf(err, errlen, RG_EPROTO, "the server's reply is not HTTP/1.x (\"%.*s\")",
                       e > 40 ? 40 : (int)e, s);
    r->ctype[0] = '\0';
    r->retry_after_s = -1;
    h->chunked = 0;
    h->length = -1;
    for (size_t at = (size_t)e + 1; at < n;) {
        size_t ln = (size_t)line_end(s, n, at) - at;
        const char *line = s + at;
        at += ln + 1;
        if (ln && line[ln - 1] == '\r')
            ln--;
        if (ln == 0)
            break;
        if (line[0] == ' ' || line[0] == '\t')
            return rg_errf(err, errlen, RG_EPROTO, "the reply folds a header over two lines");
        const char *colon = memchr(line, ':', ln);
        if (!colon || colon == line)
            return rg_errf(err, errlen, RG_EPROTO, "the reply has a malformed header line");
        size_t nn = (size_t)(colon - line), vn = ln - nn - 1;
        const char *v = trim(colon + 1, &vn);
        int rc = header(line, nn, v, vn, r, h, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

static int body_append(cli_http_resp *r, const char *p, size_t n, char *err, size_t errlen)
{
    if (r->body.len + n > CLI_MAX_BODY_BYTES)
        return rg_errf(err, errlen, RG_ETOOLARGE, "the reply is larger than %u bytes",
                       CLI_MAX_BODY_BYTES);
    return rg_buf_append(&r->body, p, n) < 0 ? RG_ENOMEM : 0;
}

static int truncated(char *err, size_t errlen)
{
    return rg_errf(err, errlen, RG_EPROTO,
                   "the connection closed before the whole reply arrived (truncated reply)");
}

static int step_head(cli_http_parser *p, const char *in, size_t len, int eof, cli_http_resp *r,
                     char *err, size_t errlen)
{
    size_t n = head_end(in, len, p->pos);
    if (n == 0) {
        if (len - p->pos > CLI_MAX_HEADER_BYTES)
            return rg_errf(err, errlen, RG_ETOOLARGE, "the reply's headers exceed %d bytes",
                           CLI_MAX_HEADER_BYTES);
        if (eof && len == p->pos && p->pos == 0)
            return rg_errf(err, errlen, RG_EPROTO,
                           "the server closed the connection without a reply");
        return eof ? truncated(err, errlen) : CLI_AGAIN;
    }
    struct head_info h = {0, -1};
    int rc = parse_head(in + p->pos, n, r, &h, err, errlen);
    if (rc)
        return rc;
    p->pos += n;
    if (r->status < 200 && r->status != 101)
        return 0; /* an interim reply: the real one follows */
    if (r->status == 204 || r->status == 304 || r->status == 101)
        p->state = P_DONE;
    else if (h.chunked)
        p->state = P_CHUNK_SIZE;
    else if (h.length >= 0)
        p->state = P_LENGTH;
    else
        p->state = P_CLOSE;
    p->content_length = h.chunked ? -1 : h.length;
    return 0;
}

static int step_chunk_size(cli_http_parser *p, const char *in, size_t len, int eof, char *err,
                           size_t errlen)
{
    long e = line_end(in, len, p->pos);
    if (e < 0) {
        if (len - p->pos > CLI_MAX_CHUNK_LINE)
            return rg_errf(err, errlen, RG_EPROTO, "the reply has a malformed chunk header");
        return eof ? truncated(err, errlen) : CLI_AGAIN;
    }
    const char *s = in + p->pos;
    size_t n = (size_t)e - p->pos, digits = 0;
    uint64_t size = 0;
    for (int v; digits < n && digits <= 15 && (v = rg_hex_value(s[digits])) >= 0; digits++)
        size = size * 16 + (uint64_t)v;
    char next = digits < n ? s[digits] : '\n';
    if (digits == 0 || digits > 15 || !strchr(";\r\n \t", next))
        return rg_errf(err, errlen, RG_EPROTO, "the reply has a malformed chunk header");
    if (size > CLI_MAX_BODY_BYTES)
        return rg_errf(err, errlen, RG_ETOOLARGE, "the reply is larger than %u bytes",
                       CLI_MAX_BODY_BYTES);
    p->pos = (size_t)e + 1;
    p->chunk_left = size;
    p->state = size ? P_CHUNK_DATA : P_TRAILER;
    return 0;
}

static int step_chunk_end(cli_http_parser *p, const char *in, size_t len, int eof, char *err,
                          size_t errlen)
{
    size_t avail = len - p->pos;
    const char *s = in + p->pos;
    if (avail >= 1 && s[0] == '\n') {
        p->pos += 1;
    } else if (avail >= 2 && s[0] == '\r' && s[1] == '\n') {
        p->pos += 2;
    } else if (avail >= 2 || (avail == 1 && s[0] != '\r')) {
        return rg_errf(err, errlen, RG_EPROTO, "a chunk of the reply is longer than it said");
    } else {
        return eof ? truncated(err, errlen) : CLI_AGAIN;
    }
    p->state = P_CHUNK_SIZE;
    return 0;
}

static int step_trailer(cli_http_parser *p, const char *in, size_t len, int eof, char *err,
                        size_t errlen)
{
    long e = line_end(in, len, p->pos);
    if (e < 0) {
        if (len - p->pos > CLI_MAX_HEADER_BYTES)
            return rg_errf(err, errlen, RG_ETOOLARGE, "the reply's trailer is too long");
        if (eof && len == p->pos)
            p->state = P_DONE; /* the close ends a reply that skipped its last CRLF */
        else if (eof)
            return truncated(err, errlen);
        return p->state == P_DONE ? 0 : CLI_AGAIN;
    }
    size_t n = (size_t)e - p->pos;
    int empty = n == 0 || (n == 1 && in[p->pos] == '\r');
    p->pos = (size_t)e + 1;
    if (empty)
        p->state = P_DONE;
    return 0;
}

/* One step of the machine: 0 (progress; call again), CLI_AGAIN, or an error. */
static int step(cli_http_parser *p, const char *in, size_t len, int eof, cli_http_resp *r,
                char *err, size_t errlen)
{
    size_t avail = len - p->pos;
    switch (p->state) {
    case P_HEAD:
        return step_head(p, in, len, eof, r, err, errlen);
    case P_LENGTH: {
        uint64_t need = (uint64_t)p->content_length - r->body.len;
        size_t take = avail < need ? avail : (size_t)need;
        int rc = body_append(r, in + p->pos, take, err, errlen);
        if (rc)
            return rc;
        p->pos += take;
        if (r->body.len == (uint64_t)p->content_length)
            p->state = P_DONE;
        else if (eof)
            return rg_errf(err, errlen, RG_EPROTO,
                           "the connection closed after %zu of the reply's %lld bytes (truncated "
                           "reply)",
                           r->body.len, (long long)p->content_length);
        return p->state == P_DONE ? 0 : CLI_AGAIN;
    }
    case P_CLOSE: {
        int rc = body_append(r, in + p->pos, avail, err, errlen);
        if (rc)
            return rc;
        p->pos += avail;
        if (eof)
            p->state = P_DONE;
        return eof ? 0 : CLI_AGAIN;
    }
    case P_CHUNK_SIZE:
        return step_chunk_size(p, in, len, eof, err, errlen);
    case P_CHUNK_DATA: {
        size_t take = avail < p->chunk_left ? avail : (size_t)p->chunk_left;
        int rc = body_append(r, in + p->pos, take, err, errlen);
        if (rc)
            return rc;
        p->pos += take;
        p->chunk_left -= take;
        if (p->chunk_left == 0)
            p->state = P_CHUNK_END;
        else
            return eof ? truncated(err, errlen) : CLI_AGAIN;
        return 0;
    }
    case P_CHUNK_END:
        return step_chunk_end(p, in, len, eof, err, errlen);
    case P_TRAILER:
        return step_trailer(p, in, len, eof, err, errlen);
    default:
        return 0;
    }
}

int cli_http_parse(cli_http_parser *p, const char *in, size_t len, int eof, cli_http_resp *resp,
                   char *err, size_t errlen)
{
    if (len < p->pos)
        return rg_errf(err, errlen, RG_EINTERNAL, "the input shrank between calls");
    while (p->state != P_DONE) {
        int rc = step(p, in, len, eof, resp, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- transport ----------------------------------------------------------- */

/* Waits for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - rg_now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = events};
        int n = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* Sends everything: 0, RG_ETIMEOUT, or the errno of a failed send (> 0). */
static int send_all(int fd, const char *p, size_t n, int64_t deadline_ms)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = wait_fd(fd, POLLOUT, deadline_ms);
            if (w == 0)
                return RG_ETIMEOUT;
            if (w < 0)
                return errno;
        } else if (k < 0 && errno != EINTR) {
            return errno;
        }
    }
    return 0;
}

/* Receives until the parser has a whole response. */
static int receive(int fd, int64_t deadline_ms, cli_http_resp *resp, char *err, size_t errlen)
{
    rg_buf in;
    rg_buf_init(&in);
    cli_http_parser p;
    cli_http_parser_init(&p);
    int rc = CLI_AGAIN;
    while (rc == CLI_AGAIN) {
        if (rg_buf_reserve(&in, RECV_CHUNK) < 0) {
            rc = RG_ENOMEM;
            break;
        }
        ssize_t k = recv(fd, in.data + in.len, RECV_CHUNK, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = wait_fd(fd, POLLIN, deadline_ms);
            if (w == 0)
                rc = rg_errf(err, errlen, RG_ETIMEOUT, "no complete reply arrived in time");
            else if (w < 0)
                rc =
                    rg_errf(err, errlen, RG_EUNAVAIL, "waiting for the reply: %s", strerror(errno));
            continue;
        }
        if (k < 0) {
            rc = rg_errf(err, errlen, RG_EUNAVAIL, "reading the reply: %s", strerror(errno));
            break;
        }
        in.len += (size_t)k;
        in.data[in.len] = '\0';
        rc = cli_http_parse(&p, in.data, in.len, k == 0, resp, err, errlen);
        if (rc == CLI_AGAIN && k == 0) /* cannot happen: at the close the parser decides */
            rc = rg_errf(err, errlen, RG_EINTERNAL, "the reply parser wants bytes after the close");
    }
    rg_buf_destroy(&in);
    return rc;
}

int cli_http_exchange(int fd, const void *req, size_t len, int64_t deadline_ms, cli_http_resp *resp,
                      char *err, size_t errlen)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return rg_errf(err, errlen, RG_EUNAVAIL, "fcntl: %s", strerror(errno));
    int sent = send_all(fd, req, len, deadline_ms);
    if (sent == RG_ETIMEOUT)
        return rg_errf(err, errlen, RG_ETIMEOUT, "sending the request timed out");
    /* A peer that refused the body may have closed after replying: read it. */
    int rc = receive(fd, deadline_ms, resp, err, errlen);
    if (rc < 0 && sent > 0)
        return rg_errf(err, errlen, RG_EUNAVAIL, "sending the request: %s", strerror(sent));
    return rc;
}

static int connect_one(const struct addrinfo *ai, int64_t deadline_ms, int *fd, int *timed_out)
{
    int s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (s < 0)
        return errno;
    if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
        *fd = s;
        return 0;
    }
    int e = errno;
    if (e == EINPROGRESS) {
        int w = wait_fd(s, POLLOUT, deadline_ms);
        socklen_t sl = sizeof e;
        if (w == 0) {
            *timed_out = 1;
            e = ETIMEDOUT;
        } else if (w < 0) {
            e = errno;
        } else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &sl) < 0) {
            e = errno;
        }
        if (e == 0) {
            *fd = s;
            return 0;
        }
    }
    close(s);
    return e;
}

int cli_http_connect(const cli_url *u, int timeout_ms, int *fd, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    *fd = -1;
    int g = getaddrinfo(u->host, u->port, &hints, &res);
    if (g)
        return rg_errf(err, errlen, RG_EUNAVAIL, "cannot resolve %s: %s", u->host, gai_strerror(g));
    int e = ECONNREFUSED, timed_out = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        e = connect_one(ai, rg_now_ms() + timeout_ms, fd, &timed_out);
        if (e == 0)
            break;
    }
    freeaddrinfo(res);
    if (e == 0)
        return 0;
    if (timed_out)
        return rg_errf(err, errlen, RG_ETIMEOUT, "connecting to %s timed out after %d ms",
                       u->authority, timeout_ms);
    return rg_errf(err, errlen, RG_EUNAVAIL, "cannot connect to %s: %s", u->authority, strerror(e));
}

int cli_http_do(const cli_url *u, const cli_http_req *r, int timeout_ms, cli_http_resp *resp,
                char *err, size_t errlen)
{
    rg_buf req;
    rg_buf_init(&req);
    int rc = cli_http_format(u, r, &req, err, errlen);
    int fd = -1;
    if (!rc)
        rc = cli_http_connect(u, timeout_ms, &fd, err, errlen);
    if (!rc) {
        int64_t deadline = rg_now_ms() + timeout_ms + CLI_REPLY_GRACE_MS;
        rc = cli_http_exchange(fd, req.data, req.len, deadline, resp, err, errlen);
        if (rc == RG_ETIMEOUT)
            rg_errf(err, errlen, RG_ETIMEOUT, "no reply from %s within %d ms", u->authority,
                    timeout_ms + CLI_REPLY_GRACE_MS);
    }
    if (fd >= 0)
        close(fd);
    if (req.data)
        explicit_bzero(req.data, req.len); /* it held the API key */
    rg_buf_destroy(&req);
    return rc;
}

int cli_reply_decode(const cli_http_resp *resp, cJSON **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!strcmp(resp->ctype, "application/msgpack") ||
        !strcmp(resp->ctype, "application/x-msgpack"))
        return wire_mp_decode(resp->body.data, resp->body.len, out, err, errlen);
    if (!strcmp(resp->ctype, "application/json"))
        return wire_json_decode(resp->body.data, resp->body.len, out, err, errlen);
    return rg_errf(err, errlen, RG_EMEDIA,
                   "HTTP %d with a %s body of %zu bytes, not a refgate reply", resp->status,
                   resp->ctype[0] ? resp->ctype : "untyped", resp->body.len);
}
