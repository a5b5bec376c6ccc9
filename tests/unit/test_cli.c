/*
 * test_cli.c - refgate-cli's pure parts and its HTTP client: URL parsing,
 * request formatting, the response parser (status, headers, Content-Length,
 * chunked, up to the close, 1xx, truncation, limits) fed whole and byte by
 * byte, the transport over a socketpair and a loopback listener answered by a
 * thread with canned bytes, reply decoding, the command line -> command map
 * for the session commands, the admin command line, and how replies print.
 *
 * The CLI's files are compiled into this test (the Makefile builds no cli
 * library), so their static helpers are in reach too.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/admin.c"
#include "cli/cmd.c"
#include "cli/http.c"
#include "cli/out.c"

/* ---- URLs ---------------------------------------------------------------- */

static void test_url_parse(void **state)
{
    (void)state;
    cli_url u;
    char err[256];
    assert_int_equal(cli_url_parse("http://127.0.0.1:8080", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_string_equal(u.port, "8080");
    assert_string_equal(u.prefix, "");
    assert_string_equal(u.authority, "127.0.0.1:8080");

    assert_int_equal(cli_url_parse("http://gateway.example", &u, err, sizeof err), 0);
    assert_string_equal(u.port, "80");
    assert_string_equal(u.authority, "gateway.example");

    assert_int_equal(cli_url_parse("HTTP://h:9/api/v0//", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "h");
    assert_string_equal(u.prefix, "/api/v0");
    assert_string_equal(u.authority, "h:9");

    assert_int_equal(cli_url_parse("http://[::1]:8080/x", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "::1");
    assert_string_equal(u.port, "8080");
    assert_string_equal(u.authority, "[::1]:8080");
    assert_string_equal(u.prefix, "/x");

    assert_int_equal(cli_url_parse("http://[::1]", &u, err, sizeof err), 0);
    assert_string_equal(u.port, "80");
    assert_string_equal(u.authority, "[::1]");
}

static void test_url_errors(void **state)
{
    (void)state;
    cli_url u;
    char err[256];
    assert_int_equal(cli_url_parse("https://gw:443", &u, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "https"));
    static const char *bad[] = {
        "ftp://h",        "h:8080",       "http://",       "http://:80",   "http://h:0",
        "http://h:65536", "http://h:80x", "http://h:",     "http://u:p@h", "http://h/?q=1",
        "http://h#f",     "http://[::1",  "http://[::1]x", "http://h/a b", "127.0.0.1:8080",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        if (cli_url_parse(bad[i], &u, err, sizeof err) != RG_EBADREQ)
            fail_msg("accepted %s", bad[i]);
        assert_true(strlen(err) > 10);
    }
}

/* ---- requests ------------------------------------------------------------ */

static void test_request_format(void **state)
{
    (void)state;
    cli_url u;
    char err[256];
    assert_int_equal(cli_url_parse("http://127.0.0.1:8080/gw", &u, err, sizeof err), 0);
    rg_buf b;
    rg_buf_init(&b);
    cli_http_req r = {"POST", "/v1/sessions/s1", "rgk_abc", NULL, "\x81\xa2op\xa4info", 9};
    assert_int_equal(cli_http_format(&u, &r, &b, err, sizeof err), 0);
    static const char want[] = "POST /gw/v1/sessions/s1 HTTP/1.1\r\n"
                               "Host: 127.0.0.1:8080\r\n"
                               "User-Agent: refgate-cli/1\r\n"
                               "Accept: application/msgpack\r\n"
                               "Authorization: Bearer rgk_abc\r\n"
                               "Content-Type: application/msgpack\r\n"
                               "Content-Length: 9\r\n"
                               "Connection: close\r\n"
                               "\r\n"
                               "\x81\xa2op\xa4info";
    assert_int_equal(b.len, sizeof want - 1);
    assert_memory_equal(b.data, want, b.len);

    rg_buf_reset(&b);
    cli_http_req g = {"GET", "/v1/sessions", "k", NULL, NULL, 0};
    assert_int_equal(cli_http_format(&u, &g, &b, err, sizeof err), 0);
    assert_null(strstr(b.data, "Content-Length"));
    assert_null(strstr(b.data, "Content-Type"));
    assert_non_null(strstr(b.data, "GET /gw/v1/sessions HTTP/1.1\r\n"));
    assert_non_null(strstr(b.data, "Connection: close\r\n\r\n"));

    rg_buf_reset(&b);
    cli_http_req p = {"POST", "/v1/sessions", "k", NULL, NULL, 0};
    assert_int_equal(cli_http_format(&u, &p, &b, err, sizeof err), 0);
    assert_non_null(strstr(b.data, "Content-Length: 0\r\n"));

    /* A key that would smuggle a header in is refused. */
    cli_http_req evil = {"GET", "/v1/sessions", "k\r\nX-Admin: 1", NULL, NULL, 0};
    assert_int_equal(cli_http_format(&u, &evil, &b, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "API key"));
    cli_http_req empty = {"GET", "/v1/sessions", "", NULL, NULL, 0};
    assert_int_equal(cli_http_format(&u, &empty, &b, err, sizeof err), RG_EBADREQ);
    rg_buf_destroy(&b);
}

static void test_path_escape(void **state)
{
    (void)state;
    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(cli_path_escape(&b, "a b/c?d%e~f.g_h-9\xc3\xa9"), 0);
    assert_string_equal(b.data, "a%20b%2Fc%3Fd%25e~f.g_h-9%C3%A9");
    rg_buf_destroy(&b);
}

/* ---- responses ----------------------------------------------------------- */

/* Parses raw (n bytes) in one go with eof after it: the result code. */
static int parse_whole(const char *raw, size_t n, cli_http_resp *r, char *err, size_t errlen)
{
    cli_http_parser p;
    cli_http_parser_init(&p);
    cli_http_resp_init(r);
    int rc = cli_http_parse(&p, raw, n, 0, r, err, errlen);
    if (rc == CLI_AGAIN)
        rc = cli_http_parse(&p, raw, n, 1, r, err, errlen);
    return rc;
}

/* Feeds raw one byte at a time (eof only after the last): the result code.
   Checks that the parser never claims completion early. */
static int parse_bytewise(const char *raw, size_t n, cli_http_resp *r, char *err, size_t errlen)
{
    cli_http_parser p;
    cli_http_parser_init(&p);
    cli_http_resp_init(r);
    int rc = CLI_AGAIN;
    for (size_t k = 1; k <= n && rc == CLI_AGAIN; k++)
        rc = cli_http_parse(&p, raw, k, 0, r, err, errlen);
    if (rc == CLI_AGAIN)
        rc = cli_http_parse(&p, raw, n, 1, r, err, errlen);
    return rc;
}

typedef int (*parse_fn)(const char *, size_t, cli_http_resp *, char *, size_t);

static const parse_fn parsers[] = {parse_whole, parse_bytewise};

static void expect_body(const char *raw, int status, const char *ctype, const char *body)
{
    for (size_t i = 0; i < 2; i++) {
        cli_http_resp r;
        char err[256] = "";
        int rc = parsers[i](raw, strlen(raw), &r, err, sizeof err);
        if (rc)
            fail_msg("parser %zu: %d %s", i, rc, err);
        assert_int_equal(r.status, status);
        assert_string_equal(r.ctype, ctype);
        assert_int_equal(r.body.len, strlen(body));
        if (r.body.len)
            assert_memory_equal(r.body.data, body, r.body.len);
        cli_http_resp_destroy(&r);
    }
}

static void test_parse_content_length(void **state)
{
    (void)state;
    expect_body("HTTP/1.1 200 OK\r\nContent-Type: application/msgpack\r\nContent-Length: 5\r\n"
                "X-Other: y\r\n\r\nhello",
                200, "application/msgpack", "hello");
    /* Case-insensitive names, parameters cut, value lowercased, OWS trimmed. */
    expect_body("HTTP/1.1 404 Not Found\r\ncontent-TYPE:  Application/JSON ; charset=utf-8\r\n"
                "CONTENT-LENGTH:2\r\n\r\n{}",
                404, "application/json", "{}");
    /* Bytes past Content-Length are ignored. */
    expect_body("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabcdef", 200, "", "abc");
    /* LF-only lines are read too. */
    expect_body("HTTP/1.1 200 OK\nContent-Length: 2\n\nok", 200, "", "ok");
    /* An empty body. */
    expect_body("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, "", "");
}

static void test_parse_until_close(void **state)
{
    (void)state;
    expect_body("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n\r\n<html>bad</html>", 502,
                "text/html", "<html>bad</html>");
    /* Without eof the parser waits. */
    static const char raw[] = "HTTP/1.1 200 OK\r\n\r\npartial";
    cli_http_parser p;
    cli_http_parser_init(&p);
    cli_http_resp r;
    cli_http_resp_init(&r);
    char err[128];
    assert_int_equal(cli_http_parse(&p, raw, sizeof raw - 1, 0, &r, err, sizeof err), CLI_AGAIN);
    assert_int_equal(cli_http_parse(&p, raw, sizeof raw - 1, 1, &r, err, sizeof err), 0);
    assert_string_equal(r.body.data, "partial");
    cli_http_resp_destroy(&r);
}

static void test_parse_chunked(void **state)
{
    (void)state;
    expect_body("HTTP/1.1 200 OK\r\nContent-Type: application/msgpack\r\n"
                "Transfer-Encoding: chunked\r\n\r\n"
                "5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n",
                200, "application/msgpack", "hello 0123456789");
    /* Chunked wins over a Content-Length. */
    expect_body("HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                "3\r\nabc\r\n0\r\n\r\n",
                200, "", "abc");
    /* Upper-case hex and LF-only framing. */
    expect_body("HTTP/1.1 200 OK\nTransfer-Encoding: Chunked\n\n1F\n0123456789012345678901234567890"
                "\n0\n\n",
                200, "", "0123456789012345678901234567890");
    /* A close right after the last chunk's size line still completes. */
    expect_body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n", 200, "",
                "ok");
}

static void test_parse_interim_and_empty(void **state)
{
    (void)state;
    expect_body("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nhi",
                201, "", "hi");
    /* 204 has no body, even without a length, and does not wait for the close. */
    static const char raw[] = "HTTP/1.1 204 No Content\r\n\r\n";
    cli_http_parser p;
    cli_http_parser_init(&p);
    cli_http_resp r;
    cli_http_resp_init(&r);
    char err[128];
    assert_int_equal(cli_http_parse(&p, raw, sizeof raw - 1, 0, &r, err, sizeof err), 0);
    assert_int_equal(r.status, 204);
    assert_int_equal(r.body.len, 0);
    cli_http_resp_destroy(&r);
}

static void test_parse_retry_after(void **state)
{
    (void)state;
    cli_http_resp r;
    char err[128];
    static const char raw[] =
        "HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n";
    assert_int_equal(parse_whole(raw, sizeof raw - 1, &r, err, sizeof err), 0);
    assert_int_equal(r.status, 429);
    assert_int_equal(r.retry_after_s, 3);
    cli_http_resp_destroy(&r);
    static const char none[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    assert_int_equal(parse_whole(none, sizeof none - 1, &r, err, sizeof err), 0);
    assert_int_equal(r.retry_after_s, -1);
    cli_http_resp_destroy(&r);
}

static void expect_error(const char *raw, int want, const char *words)
{
    for (size_t i = 0; i < 2; i++) {
        cli_http_resp r;
        char err[256] = "";
        int rc = parsers[i](raw, strlen(raw), &r, err, sizeof err);
        if (rc != want)
            fail_msg("parser %zu on %.40s: %d, not %d (%s)", i, raw, rc, want, err);
        if (!strstr(err, words))
            fail_msg("\"%s\" does not mention \"%s\"", err, words);
        cli_http_resp_destroy(&r);
    }
}

static void test_parse_truncated(void **state)
{
    (void)state;
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcde", RG_EPROTO, "truncated");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n", RG_EPROTO, "truncated");
    expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", RG_EPROTO,
                 "truncated");
    expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", RG_EPROTO,
                 "truncated");
    expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5", RG_EPROTO, "truncated");
    expect_error("HTTP/1.1 2", RG_EPROTO, "truncated");
    expect_error("", RG_EPROTO, "without a reply");
}

static void test_parse_malformed(void **state)
{
    (void)state;
    expect_error("SSH-2.0-OpenSSH\r\n\r\n", RG_EPROTO, "not HTTP");
    expect_error("HTTP/1.1 20 OK\r\n\r\n", RG_EPROTO, "not HTTP");
    expect_error("HTTP/2 200\r\n\r\n", RG_EPROTO, "not HTTP");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n", RG_EPROTO, "Content-Length");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", RG_EPROTO, "Content-Length");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab", RG_EPROTO,
                 "two different");
    expect_error("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", RG_EPROTO, "malformed header");
    expect_error("HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", RG_EPROTO, "folds");
    expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", RG_EPROTO,
                 "chunk header");
    expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
                 RG_EPROTO, "longer than it said");
    expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "10000000000000000\r\n",
                 RG_EPROTO, "chunk header");
    /* Limits. */
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n", RG_ETOOLARGE,
                 "larger than");
    expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFF\r\n",
                 RG_ETOOLARGE, "larger than");
}

static void test_parse_header_limit(void **state)
{
    (void)state;
    size_t n = CLI_MAX_HEADER_BYTES + 100;
    char *raw = malloc(n + 1);
    memcpy(raw, "HTTP/1.1 200 OK\r\nX: ", 21);
    memset(raw + 21, 'a', n - 21);
    raw[n] = '\0';
    cli_http_parser p;
    cli_http_parser_init(&p);
    cli_http_resp r;
    cli_http_resp_init(&r);
    char err[128];
    assert_int_equal(cli_http_parse(&p, raw, n, 0, &r, err, sizeof err), RG_ETOOLARGE);
    cli_http_resp_destroy(&r);
    free(raw);
}

/* ---- transport ------------------------------------------------------------ */

/* A peer thread: reads one request (headers and Content-Length bytes), then
   writes its canned pieces with a pause between them, then closes. */
struct peer {
    int fd;
    const char *pieces[4];
    int pause_ms;
    int read_request; /* 0: reply at once and close without reading */
    int never_reply;  /* read, then wait for the other side to give up */
    rg_buf request;
};

static void peer_read_request(struct peer *pr)
{
    char buf[4096];
    size_t want = SIZE_MAX;
    while (pr->request.len < want) {
        ssize_t k = read(pr->fd, buf, sizeof buf);
        if (k <= 0)
            return;
        rg_buf_append(&pr->request, buf, (size_t)k);
        const char *end = strstr(pr->request.data, "\r\n\r\n");
        if (end && want == SIZE_MAX) {
            const char *cl = strstr(pr->request.data, "Content-Length: ");
            size_t len = cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0;
            want = (size_t)(end - pr->request.data) + 4 + len;
        }
    }
}

static void *peer_run(void *arg)
{
    struct peer *pr = arg;
    if (pr->read_request)
        peer_read_request(pr);
    if (pr->never_reply) {
        char c;
        while (read(pr->fd, &c, 1) > 0) /* until the client closes */
            ;
    }
    for (int i = 0; i < 4 && pr->pieces[i]; i++) {
        if (i && pr->pause_ms)
            rg_sleep_ms(pr->pause_ms);
        if (write(pr->fd, pr->pieces[i], strlen(pr->pieces[i])) < 0)
            break;
    }
    close(pr->fd);
    return NULL;
}

static void peer_start(struct peer *pr, pthread_t *th, int *client_fd)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pr->fd = sv[1];
    rg_buf_init(&pr->request);
    *client_fd = sv[0];
    assert_int_equal(pthread_create(th, NULL, peer_run, pr), 0);
}

static void test_exchange_in_pieces(void **state)
{
    (void)state;
    struct peer pr = {.pieces = {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-",
                                 "Encoding: chunked\r\n\r\n7\r\n{\"a\"", ":1}\r\n0\r\n\r\n"},
                      .pause_ms = 20,
                      .read_request = 1};
    pthread_t th;
    int fd;
    peer_start(&pr, &th, &fd);
    static const char req[] = "POST /v1/sessions HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
    cli_http_resp r;
    cli_http_resp_init(&r);
    char err[256] = "";
    int rc = cli_http_exchange(fd, req, sizeof req - 1, rg_now_ms() + 5000, &r, err, sizeof err);
    pthread_join(th, NULL);
    close(fd);
    if (rc)
        fail_msg("%s", err);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.data, "{\"a\":1}");
    assert_string_equal(pr.request.data, req); /* the peer got the whole request */
    cJSON *v = NULL;
    assert_int_equal(cli_reply_decode(&r, &v, err, sizeof err), 0);
    assert_int_equal(cJSON_GetObjectItem(v, "a")->valueint, 1);
    cJSON_Delete(v);
    cli_http_resp_destroy(&r);
    rg_buf_destroy(&pr.request);
}

static void test_exchange_truncated(void **state)
{
    (void)state;
    struct peer pr = {.pieces = {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"},
                      .read_request = 1};
    pthread_t th;
    int fd;
    peer_start(&pr, &th, &fd);
    cli_http_resp r;
    cli_http_resp_init(&r);
    char err[256] = "";
    int rc = cli_http_exchange(fd, "GET / HTTP/1.1\r\n\r\n", 18, rg_now_ms() + 5000, &r, err,
                               sizeof err);
    pthread_join(th, NULL);
    close(fd);
    assert_int_equal(rc, RG_EPROTO);
    assert_non_null(strstr(err, "truncated"));
    cli_http_resp_destroy(&r);
    rg_buf_destroy(&pr.request);
}

static void test_exchange_times_out(void **state)
{
    (void)state;
    struct peer pr = {.read_request = 1, .never_reply = 1};
    pthread_t th;
    int fd;
    peer_start(&pr, &th, &fd);
    cli_http_resp r;
    cli_http_resp_init(&r);
    char err[256] = "";
    int64_t t0 = rg_now_ms();
    int rc = cli_http_exchange(fd, "GET / HTTP/1.1\r\n\r\n", 18, t0 + 200, &r, err, sizeof err);
    int64_t took = rg_now_ms() - t0;
    close(fd); /* lets the peer finish */
    pthread_join(th, NULL);
    assert_int_equal(rc, RG_ETIMEOUT);
    assert_true(took >= 190); /* it did wait, and it returned (the test would hang otherwise) */
    cli_http_resp_destroy(&r);
    rg_buf_destroy(&pr.request);
}

/* A peer that refuses a large body without reading it: its reply still arrives. */
static void test_exchange_reply_to_unread_body(void **state)
{
    (void)state;
    struct peer pr = {.pieces = {"HTTP/1.1 413 Payload Too Large\r\nContent-Type: "
                                 "application/json\r\nContent-Length: 9\r\n\r\n{\"ok\":0}\n"},
                      .read_request = 0};
    pthread_t th;
    int fd;
    peer_start(&pr, &th, &fd);
    size_t n = 8u << 20;
    char *big = malloc(n);
    memset(big, 'x', n);
    memcpy(big, "POST / HTTP/1.1\r\n\r\n", 19);
    cli_http_resp r;
    cli_http_resp_init(&r);
    char err[256] = "";
    int rc = cli_http_exchange(fd, big, n, rg_now_ms() + 5000, &r, err, sizeof err);
    pthread_join(th, NULL);
    close(fd);
    free(big);
    if (rc)
        fail_msg("%s", err);
    assert_int_equal(r.status, 413);
    cli_http_resp_destroy(&r);
    rg_buf_destroy(&pr.request);
}

/* A loopback listener answered by a thread: cli_http_do end to end (not the gateway). */
struct listener {
    int fd;
    int port;
    const char *reply;
    rg_buf request;
};

static void *listener_run(void *arg)
{
    struct listener *l = arg;
    int c = accept(l->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    struct peer pr = {.fd = c, .pieces = {l->reply}, .read_request = 1};
    rg_buf_init(&pr.request);
    peer_run(&pr);
    l->request = pr.request;
    return NULL;
}

static void listener_start(struct listener *l, pthread_t *th)
{
    l->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof a;
    assert_int_equal(bind(l->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l->fd, 4), 0);
    assert_int_equal(getsockname(l->fd, (struct sockaddr *)&a, &sl), 0);
    l->port = ntohs(a.sin_port);
    rg_buf_init(&l->request);
    assert_int_equal(pthread_create(th, NULL, listener_run, l), 0);
}

static void test_http_do_over_loopback(void **state)
{
    (void)state;
    /* The reply in msgpack, as the gateway sends it. */
    cJSON *reply = cJSON_CreateObject();
    cJSON_AddTrueToObject(reply, "ok");
    cJSON_AddItemToObject(reply, "result", cJSON_CreateObject());
    cJSON_AddStringToObject(cJSON_GetObjectItem(reply, "result"), "session", "s-42");
    rg_buf mp;
    rg_buf_init(&mp);
    assert_int_equal(wire_mp_encode(reply, &mp), 0);
    char head[160];
    snprintf(head, sizeof head,
             "HTTP/1.1 200 OK\r\nContent-Type: application/msgpack\r\nContent-Length: %zu\r\n\r\n",
             mp.len);
    rg_buf raw;
    rg_buf_init(&raw);
    rg_buf_puts(&raw, head);
    rg_buf_append(&raw, mp.data, mp.len); /* no NUL inside this small map */

    struct listener l = {.reply = raw.data};
    pthread_t th;
    listener_start(&l, &th);
    char url[64], err[256] = "";
    snprintf(url, sizeof url, "http://127.0.0.1:%d/pre", l.port);
    cli_url u;
    assert_int_equal(cli_url_parse(url, &u, err, sizeof err), 0);
    cli_http_req req = {"POST", "/v1/sessions", "rgk_k", NULL, "\x80", 1};
    cli_http_resp r;
    cli_http_resp_init(&r);
    int rc = cli_http_do(&u, &req, 2000, &r, err, sizeof err);
    pthread_join(th, NULL);
    close(l.fd);
    if (rc)
        fail_msg("%s", err);
    assert_non_null(strstr(l.request.data, "POST /pre/v1/sessions HTTP/1.1\r\n"));
    assert_non_null(strstr(l.request.data, "Authorization: Bearer rgk_k\r\n"));
    cJSON *got = NULL;
    assert_int_equal(cli_reply_decode(&r, &got, err, sizeof err), 0);
    assert_true(cJSON_Compare(got, reply, 1));
    cJSON_Delete(got);
    cJSON_Delete(reply);
    cli_http_resp_destroy(&r);
    rg_buf_destroy(&l.request);
    rg_buf_destroy(&raw);
    rg_buf_destroy(&mp);
}

static void test_connect_refused(void **state)
{
    (void)state;
    /* A port nobody listens on: bind one, then close it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &sl), 0);
    close(fd);
    char url[64], err[256] = "";
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    cli_url u;
    assert_int_equal(cli_url_parse(url, &u, err, sizeof err), 0);
    int c = -1;
    assert_int_equal(cli_http_connect(&u, 1000, &c, err, sizeof err), RG_EUNAVAIL);
    assert_int_equal(c, -1);
    assert_non_null(strstr(err, "cannot connect"));
}

static void test_reply_decode(void **state)
{
    (void)state;
    cli_http_resp r;
    cli_http_resp_init(&r);
    char err[256];
    cJSON *v = NULL;
    r.status = 502;
    strcpy(r.ctype, "text/html");
    rg_buf_puts(&r.body, "<html>");
    assert_int_equal(cli_reply_decode(&r, &v, err, sizeof err), RG_EMEDIA);
    assert_non_null(strstr(err, "502"));
    assert_null(v);
    strcpy(r.ctype, "application/json");
    assert_int_equal(cli_reply_decode(&r, &v, err, sizeof err), RG_EBADREQ);
    assert_null(v);
    rg_buf_reset(&r.body);
    rg_buf_append(&r.body, "\x81\xa2ok\xc3", 5);
    strcpy(r.ctype, "application/msgpack");
    assert_int_equal(cli_reply_decode(&r, &v, err, sizeof err), 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(v, "ok")));
    cJSON_Delete(v);
    cli_http_resp_destroy(&r);
}

/* ---- the command line ----------------------------------------------------- */

/* Parses a NULL-terminated word list with global options g (already set). */
static int parse_words(cli_global *g, cli_call *c, char *err, size_t errlen, ...)
{
    char *words[32];
    int n = 0;
    va_list ap;
    va_start(ap, errlen);
    for (char *w; (w = va_arg(ap, char *)) != NULL && n < 32;)
        words[n++] = w;
    va_end(ap);
    int admin_at;
    return cli_parse(n, words, g, c, &admin_at, err, errlen);
}

#define PARSE(g, c, err, ...) parse_words(g, c, err, sizeof err, __VA_ARGS__, (char *)NULL)

static void assert_body(const cli_call *c, const char *json)
{
    cJSON *want = cJSON_Parse(json);
    assert_non_null(want);
    if (!cJSON_Compare(c->body, want, 1)) {
        rg_buf b;
        rg_buf_init(&b);
        wire_json_encode(c->body, &b);
        fail_msg("body %s, want %s", b.data, json);
    }
    cJSON_Delete(want);
}

static void test_parse_click(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    cli_call c;
    char err[256] = "";
    assert_int_equal(PARSE(&g, &c, err, "-s", "S1", "click", "@btn", "--nth", "-1", "--button",
                           "right", "--count=2"),
                     CLI_CMD_GATEWAY);
    assert_string_equal(c.method, "POST");
    assert_string_equal(c.path, "/v1/sessions/S1");
    assert_int_equal(c.out, CLI_OUT_REF);
    assert_body(&c, "{\"op\":\"click\",\"args\":{\"target\":\"@btn\",\"nth\":-1,"
                    "\"button\":\"right\",\"click_count\":2}}");
    cli_call_destroy(&c);
    /* the answer for the dialogs the click opens */
    assert_int_equal(PARSE(&g, &c, err, "-s", "S1", "click", "@del", "--dialog", "accept",
                           "--prompt-text", "Ada"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"click\",\"args\":{\"target\":\"@del\",\"dialog\":\"accept\","
                    "\"prompt_text\":\"Ada\"}}");
    cli_call_destroy(&c);
    /* the console, after a count, errors only */
    assert_int_equal(PARSE(&g, &c, err, "-s", "S1", "console", "--since", "12", "--level", "error"),
                     CLI_CMD_GATEWAY);
    assert_int_equal(c.out, CLI_OUT_CONSOLE);
    assert_body(&c, "{\"op\":\"console\",\"args\":{\"since\":12,\"level\":\"error\"}}");
    cli_call_destroy(&c);
    /* the requests, after a count, with the static ones, those of a URL */
    assert_int_equal(PARSE(&g, &c, err, "-s", "S1", "network", "--since", "4", "--filter", "/api/",
                           "--static"),
                     CLI_CMD_GATEWAY);
    assert_int_equal(c.out, CLI_OUT_NETWORK);
    assert_body(&c, "{\"op\":\"network\",\"args\":{\"since\":4,\"filter\":\"/api/\","
                    "\"static\":true}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "-s", "S1", "resize", "--width", "390", "--height", "844"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"resize\",\"args\":{\"width\":390,\"height\":844}}");
    cli_call_destroy(&c);
}

static void test_parse_select_values(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    g.session = "abc";
    cli_call c;
    char err[256] = "";
    assert_int_equal(PARSE(&g, &c, err, "select", "css:#size", "Small", "Large", "-1", "--", "--x"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"select\",\"args\":{\"target\":\"css:#size\","
                    "\"values\":[\"Small\",\"Large\",\"-1\",\"--x\"]}}");
    assert_int_equal(c.out, CLI_OUT_SELECTED);
    cli_call_destroy(&c);
    /* One value is still an array. */
    assert_int_equal(PARSE(&g, &c, err, "select", "@s", "only"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"select\",\"args\":{\"target\":\"@s\",\"values\":[\"only\"]}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "select", "@s"), RG_EBADREQ);
    assert_non_null(strstr(err, "missing"));
}

static void test_parse_fill_type_press(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    g.session = "s";
    cli_call c;
    char err[256] = "";
    assert_int_equal(PARSE(&g, &c, err, "fill", "label:Age", "-5"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"fill\",\"args\":{\"target\":\"label:Age\",\"value\":\"-5\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "type", "hello world", "--target", "@q", "--delay-ms", "5"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"type\",\"args\":{\"text\":\"hello world\",\"target\":\"@q\","
                    "\"delay_ms\":5}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "press", "Control+a"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"press\",\"args\":{\"key\":\"Control+a\"}}");
    assert_int_equal(c.out, CLI_OUT_NONE);
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "scroll", "--dy", "-300", "--to", "bottom"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"scroll\",\"args\":{\"dy\":-300,\"to\":\"bottom\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "eval", "document.title", "--await"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"eval\",\"args\":{\"expression\":\"document.title\","
                    "\"await\":true}}");
    assert_int_equal(c.out, CLI_OUT_VALUE);
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "read"), CLI_CMD_GATEWAY); /* the page's text */
    assert_body(&c, "{\"op\":\"read\"}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "read", "@x", "--what", "attributes"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"read\",\"args\":{\"target\":\"@x\",\"what\":\"attributes\"}}");
    cli_call_destroy(&c);
}

static void test_parse_command_options_win_after_the_command(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    cli_call c;
    char err[256] = "";
    assert_int_equal(PARSE(&g, &c, err, "--url", "http://gw:1", "--key", "k1", "session", "create",
                           "--url", "https://example.com/", "--viewport", "800x600", "--locale",
                           "de-DE", "--timeout-ms", "9000"),
                     CLI_CMD_GATEWAY);
    assert_string_equal(g.url, "http://gw:1");
    assert_string_equal(g.key, "k1");
    assert_int_equal(g.timeout_ms, 9000);
    assert_string_equal(c.path, "/v1/sessions");
    assert_int_equal(c.out, CLI_OUT_SESSION);
    assert_body(&c, "{\"op\":\"session.create\",\"args\":{\"url\":\"https://example.com/\","
                    "\"viewport\":{\"width\":800,\"height\":600},\"locale\":\"de-DE\","
                    "\"timeout_ms\":9000}}");
    cli_call_destroy(&c);

    g.session = "s";
    assert_int_equal(PARSE(&g, &c, err, "wait", "--url", "/done", "--json"), CLI_CMD_GATEWAY);
    assert_string_equal(g.url, "http://gw:1");
    assert_int_equal(g.json, 1);
    assert_body(&c, "{\"op\":\"wait\",\"args\":{\"url\":\"/done\",\"timeout_ms\":9000}}");
    cli_call_destroy(&c);
}

/* session create --state FILE sends what the file holds; state asks for it. */
static void test_parse_state_file(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    cli_call c;
    char err[256] = "", path[] = "/tmp/rg-cli-state-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char js[] = "{\"cookies\":[{\"name\":\"a\",\"value\":\"b\",\"domain\":\"x.test\"}],"
                             "\"origins\":[]}";
    assert_int_equal(write(fd, js, sizeof js - 1), (ssize_t)(sizeof js - 1));
    close(fd);
    assert_int_equal(PARSE(&g, &c, err, "session", "create", "--state", path), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"session.create\",\"args\":{\"state\":{\"cookies\":[{\"name\":"
                    "\"a\",\"value\":\"b\",\"domain\":\"x.test\"}],\"origins\":[]}}}");
    cli_call_destroy(&c);
    /* not JSON, and no file: refused before anything is sent */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "{\"cookies\":", 11), 11);
    close(fd);
    assert_int_equal(PARSE(&g, &c, err, "session", "create", "--state", path), RG_EBADREQ);
    assert_non_null(strstr(err, "does not hold JSON"));
    unlink(path);
    assert_int_equal(PARSE(&g, &c, err, "session", "create", "--state", path), RG_EBADREQ);
    assert_non_null(strstr(err, "cannot read"));
    g.session = "s1";
    assert_int_equal(PARSE(&g, &c, err, "state"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"session.state\"}");
    cli_call_destroy(&c);
}

/* cookies and storage, with set and clear: the second word picks the op. */
static void test_parse_cookies(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    g.session = "s1";
    cli_call c;
    char err[256] = "";
    assert_int_equal(PARSE(&g, &c, err, "cookies"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"cookies\"}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "cookies", "https://a.test/", "https://b.test/x", "--name",
                           "sid"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"cookies\",\"args\":{\"urls\":[\"https://a.test/\","
                    "\"https://b.test/x\"],\"name\":\"sid\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "cookies", "set", "token", "abc", "--domain", "a.test",
                           "--expires", "1900000000", "--http-only", "--same-site", "Strict"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"cookies.set\",\"args\":{\"domain\":\"a.test\","
                    "\"expires\":1900000000,\"http_only\":true,\"same_site\":\"Strict\","
                    "\"name\":\"token\",\"value\":\"abc\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "cookies", "clear", "--name", "token"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"cookies.clear\",\"args\":{\"name\":\"token\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "cookies", "clear"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"cookies.clear\"}");
    cli_call_destroy(&c);
    /* a set needs its name and value */
    assert_int_equal(PARSE(&g, &c, err, "cookies", "set", "token"), RG_EBADREQ);
    assert_non_null(strstr(err, "missing an argument"));
    /* storage: the same three forms, on the page's storage */
    assert_int_equal(PARSE(&g, &c, err, "storage", "cart"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"storage\",\"args\":{\"key\":\"cart\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "storage", "set", "cart", "[42]", "--kind", "session"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"storage.set\",\"args\":{\"kind\":\"session\",\"key\":\"cart\","
                    "\"value\":\"[42]\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "storage", "clear"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"storage.clear\"}");
    cli_call_destroy(&c);
}

static void test_parse_observe_and_screenshot(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    cli_call c;
    char err[256] = "";
    /* input: the mouse at page coordinates, integers */
    assert_int_equal(PARSE(&g, &c, err, "input", "-s", "s9", "click", "120", "45", "--count", "2"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"input\",\"args\":{\"count\":2,\"type\":\"click\",\"x\":120,"
                    "\"y\":45}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "input", "-s", "s9", "drag", "10", "20", "--to-x", "30",
                           "--to-y", "40"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"input\",\"args\":{\"to_x\":30,\"to_y\":40,\"type\":\"drag\","
                    "\"x\":10,\"y\":20}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "input", "-s", "s9", "up"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"input\",\"args\":{\"type\":\"up\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "input", "-s", "s9", "move", "12", "4px"), RG_EBADREQ);
    assert_non_null(strstr(err, "y wants an integer"));
    assert_int_equal(PARSE(&g, &c, err, "emulate", "-s", "s9", "--color-scheme", "dark", "--media",
                           ""),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"emulate\",\"args\":{\"color_scheme\":\"dark\",\"media\":\"\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "wait", "-s", "s9", "--load", "networkidle"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"wait\",\"args\":{\"load\":\"networkidle\"}}");
    cli_call_destroy(&c);
    /* the network and the position: headers gather, the last switch wins */
    assert_int_equal(PARSE(&g, &c, err, "emulate", "-s", "s9", "--offline", "--header",
                           "X-Token: abc", "--header=X-Team:blue", "--geolocation", "52.52,13.4,25",
                           "--online"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"emulate\",\"args\":{\"geolocation\":{\"accuracy\":25,"
                    "\"latitude\":52.52,\"longitude\":13.4},\"headers\":{\"X-Team\":\"blue\","
                    "\"X-Token\":\"abc\"},\"offline\":false}}");
    cli_call_destroy(&c);
    assert_int_equal(
        PARSE(&g, &c, err, "emulate", "-s", "s9", "--no-headers", "--geolocation", "-33.9,18.4"),
        CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"emulate\",\"args\":{\"geolocation\":{\"latitude\":-33.9,"
                    "\"longitude\":18.4},\"headers\":{}}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "emulate", "-s", "s9", "--geolocation", "52.5"),
                     RG_EBADREQ);
    assert_non_null(strstr(err, "LAT,LON"));
    assert_int_equal(PARSE(&g, &c, err, "emulate", "-s", "s9", "--geolocation", "1,2,3,4"),
                     RG_EBADREQ);
    assert_int_equal(PARSE(&g, &c, err, "emulate", "-s", "s9", "--header", "no colon"), RG_EBADREQ);
    assert_non_null(strstr(err, "Name: value"));
    /* find is an observe with find */
    assert_int_equal(PARSE(&g, &c, err, "find", "--session=s9", "Buy milk", "--context", "1"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"observe\",\"args\":{\"context\":1,\"find\":\"Buy milk\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "find", "-s", "s9", "\\d+ items", "--regex"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"observe\",\"args\":{\"regex\":true,\"find\":\"\\\\d+ items\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "observe", "--session=s9", "--diff", "--format", "elements",
                           "--viewport-only", "--max-elements", "50", "--scope", "css:main"),
                     CLI_CMD_GATEWAY);
    assert_string_equal(c.path, "/v1/sessions/s9");
    assert_int_equal(c.observe_elements, 1);
    assert_body(&c, "{\"op\":\"observe\",\"args\":{\"diff\":true,\"format\":\"elements\","
                    "\"viewport_only\":true,\"max_elements\":50,\"scope\":\"css:main\"}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "observe"), CLI_CMD_GATEWAY);
    assert_int_equal(c.observe_elements, 0);
    assert_body(&c, "{\"op\":\"observe\"}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "observe", "-s", "s9", "--mode", "interactive", "--depth",
                           "3"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"observe\",\"args\":{\"mode\":\"interactive\",\"depth\":3}}");
    cli_call_destroy(&c);

    assert_int_equal(PARSE(&g, &c, err, "screenshot", "-o", "/tmp/x.png", "--full-page", "--format",
                           "jpeg", "--quality", "80"),
                     CLI_CMD_GATEWAY);
    assert_string_equal(c.out_file, "/tmp/x.png");
    assert_int_equal(c.out, CLI_OUT_FILE);
    assert_body(&c, "{\"op\":\"screenshot\",\"args\":{\"full_page\":true,\"format\":\"jpeg\","
                    "\"quality\":80}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "screenshot", "--output=-"), CLI_CMD_GATEWAY);
    assert_string_equal(c.out_file, "-");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "screenshot", "--full-page"), RG_EBADREQ);
    assert_non_null(strstr(err, "-o FILE"));
}

static void test_parse_session_ops(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    g.session = "a/b c";
    cli_call c;
    char err[256] = "";
    assert_int_equal(PARSE(&g, &c, err, "close"), CLI_CMD_GATEWAY);
    assert_string_equal(c.method, "DELETE");
    assert_string_equal(c.path, "/v1/sessions/a%2Fb%20c");
    assert_null(c.body);
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "list", "--timeout-ms", "100"), CLI_CMD_GATEWAY);
    assert_string_equal(c.method, "GET");
    assert_string_equal(c.path, "/v1/sessions");
    assert_null(c.body);
    cli_call_destroy(&c);
    /* A page of the list: its flags are the query, the cursor escaped as a value. */
    assert_int_equal(PARSE(&g, &c, err, "list", "--limit", "50", "--after", "1764504000123:s1"),
                     CLI_CMD_GATEWAY);
    assert_string_equal(c.path, "/v1/sessions?limit=50&after=1764504000123%3As1");
    assert_null(c.body);
    cli_call_destroy(&c);
    static const char *ops[][2] = {{"park", "session.park"},
                                   {"restore", "session.restore"},
                                   {"info", "session.info"},
                                   {"back", "back"},
                                   {"reload", "reload"}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        assert_int_equal(PARSE(&g, &c, err, ops[i][0]), CLI_CMD_GATEWAY);
        assert_string_equal(cJSON_GetObjectItem(c.body, "op")->valuestring, ops[i][1]);
        assert_string_equal(c.method, "POST");
        assert_string_equal(c.path, "/v1/sessions/a%2Fb%20c");
        cli_call_destroy(&c);
    }
    g.timeout_given = 0; /* the --timeout-ms of list above */
    assert_int_equal(PARSE(&g, &c, err, "navigate", "https://example.com", "--wait", "none"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"navigate\",\"args\":{\"url\":\"https://example.com\","
                    "\"wait\":\"none\"}}");
    assert_int_equal(c.out, CLI_OUT_URL);
    cli_call_destroy(&c);
}

static void test_parse_call(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    g.session = "s1";
    cli_call c;
    char err[256] = "";
    assert_int_equal(
        PARSE(&g, &c, err, "call", "click", "{\"target\":\"@a\",\"modifiers\":[\"Shift\"]}"),
        CLI_CMD_GATEWAY);
    assert_int_equal(c.out, CLI_OUT_REPLY);
    assert_string_equal(c.path, "/v1/sessions/s1");
    assert_body(&c, "{\"op\":\"click\",\"args\":{\"target\":\"@a\",\"modifiers\":[\"Shift\"]}}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "call", "session.info"), CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"session.info\"}");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "call", "observe", "{}", "--timeout-ms", "50"),
                     CLI_CMD_GATEWAY);
    assert_body(&c, "{\"op\":\"observe\",\"args\":{\"timeout_ms\":50}}");
    cli_call_destroy(&c);
    /* session.create needs no session and goes to /v1/sessions. */
    g.session = NULL;
    assert_int_equal(PARSE(&g, &c, err, "call", "session.create", "{\"url\":\"about:blank\"}"),
                     CLI_CMD_GATEWAY);
    assert_string_equal(c.path, "/v1/sessions");
    cli_call_destroy(&c);
    assert_int_equal(PARSE(&g, &c, err, "call", "observe"), RG_EBADREQ);
    assert_non_null(strstr(err, "session"));
    g.session = "s1";
    assert_int_equal(PARSE(&g, &c, err, "call", "click", "{bad json"), RG_EBADREQ);
    assert_non_null(strstr(err, "JSON"));
    assert_int_equal(PARSE(&g, &c, err, "call", "click", "[1]"), RG_EBADREQ);
    assert_non_null(strstr(err, "object"));
    assert_int_equal(PARSE(&g, &c, err, "call"), RG_EBADREQ);
}

static void test_parse_usage_errors(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    cli_call c;
    char err[256];
    struct {
        const char *words[6];
        const char *says;
    } cases[] = {
        {{"frobnicate"}, "unknown command"},
        {{"session", "destroy"}, "session create"},
        {{"-s", "s", "click"}, "missing"},
        {{"-s", "s", "click", "@a", "@b"}, "too many"},
        {{"click", "@a"}, "needs a session"},
        {{"-s", "s", "click", "@a", "--nth", "first"}, "integer"},
        {{"-s", "s", "click", "@a", "--nth"}, "needs a value"},
        {{"-s", "s", "click", "@a", "--bogus"}, "unknown option --bogus for click"},
        {{"-s", "s", "observe", "--diff=yes"}, "takes no value"},
        {{"session", "create", "--viewport", "800"}, "WIDTHxHEIGHT"},
        {{"--timeout-ms", "0", "list"}, "--timeout-ms"},
        {{"--json"}, "no command"},
        {{"-s", "s", "scroll", "--dy", "1.5"}, "integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *words[6];
        int n = 0;
        while (n < 6 && cases[i].words[n]) {
            words[n] = (char *)cases[i].words[n];
            n++;
        }
        int admin_at;
        err[0] = '\0';
        cli_global_init(&g);
        int rc = cli_parse(n, words, &g, &c, &admin_at, err, sizeof err);
        if (rc != RG_EBADREQ || !strstr(err, cases[i].says))
            fail_msg("case %zu: %d \"%s\" (want \"%s\")", i, rc, err, cases[i].says);
        assert_null(c.body);
    }
}

static void test_parse_help_and_admin(void **state)
{
    (void)state;
    cli_global g;
    cli_global_init(&g);
    cli_call c;
    char err[256];
    int admin_at;
    char *w1[] = {"click", "--help"};
    assert_int_equal(cli_parse(2, w1, &g, &c, &admin_at, err, sizeof err), CLI_CMD_HELP);
    char *w2[] = {"help"};
    assert_int_equal(cli_parse(1, w2, &g, &c, &admin_at, err, sizeof err), CLI_CMD_HELP);
    char *w3[] = {"--redis", "redis://h:1", "admin", "tenant", "list"};
    assert_int_equal(cli_parse(5, w3, &g, &c, &admin_at, err, sizeof err), CLI_CMD_ADMIN);
    assert_int_equal(admin_at, 3);
    assert_string_equal(g.redis, "redis://h:1");
}

static void test_global_from_env(void **state)
{
    (void)state;
    setenv("REFGATE_URL", "http://env:1", 1);
    setenv("REFGATE_KEY", "envkey", 1);
    setenv("REFGATE_SESSION", "", 1); /* empty means unset */
    cli_global g;
    cli_global_init(&g);
    cli_global_from_env(&g);
    assert_string_equal(g.url, "http://env:1");
    assert_string_equal(g.key, "envkey");
    assert_null(g.session);
    cli_call c;
    char err[256];
    assert_int_equal(PARSE(&g, &c, err, "--key", "flagkey", "list"), CLI_CMD_GATEWAY);
    assert_string_equal(g.key, "flagkey"); /* the flag wins */
    cli_call_destroy(&c);
    unsetenv("REFGATE_URL");
    unsetenv("REFGATE_KEY");
    unsetenv("REFGATE_SESSION");
    cli_global_init(&g);
    cli_global_from_env(&g);
    assert_string_equal(g.url, CLI_DEFAULT_URL);
    assert_null(g.key);
    assert_int_equal(g.timeout_ms, CLI_DEFAULT_TIMEOUT_MS);
}

/* ---- admin command line ---------------------------------------------------- */

static int admin_words(cli_admin *a, char *err, size_t errlen, ...)
{
    char *words[32];
    int n = 0;
    va_list ap;
    va_start(ap, errlen);
    for (char *w; (w = va_arg(ap, char *)) != NULL && n < 32;)
        words[n++] = w;
    va_end(ap);
    cli_global g;
    cli_global_init(&g);
    return cli_admin_parse(n, words, &g, a, err, errlen);
}

#define ADMIN(a, err, ...) admin_words(a, err, sizeof err, __VA_ARGS__, (char *)NULL)

static void test_admin_parse(void **state)
{
    (void)state;
    cli_admin a;
    char err[256] = "";
    assert_int_equal(ADMIN(&a, err, "tenant", "create", "acme", "--max-sessions", "5", "--rate=2.5",
                           "--allow-host", "*.a.com", "--allow-host", "b.com", "--deny-host",
                           "10.0.0.0/8", "--allow-eval", "--user-agent", "UA/1"),
                     0);
    assert_int_equal(a.action, CLI_ADMIN_TENANT_CREATE);
    assert_string_equal(a.arg, "acme");
    assert_int_equal(a.max_sessions, 5);
    assert_true(a.rate == 2.5);
    assert_int_equal(a.n_allow, 2);
    assert_int_equal(a.n_deny, 1);
    assert_int_equal(a.allow_eval, 1);
    assert_false(a.has & CLI_SET_PRIVATE);

    tenant t;
    tenant_init(&t);
    assert_int_equal(tenant_add_host(&t, 0, "old.example"), 0);
    assert_int_equal(cli_admin_apply(&a, &t), 0);
    assert_int_equal(t.max_sessions, 5);
    assert_int_equal(t.max_concurrent, TENANT_DEFAULT_MAX_CONCURRENT); /* untouched */
    assert_int_equal(t.n_allow, 2);                                    /* replaced, not appended */
    assert_string_equal(t.allow_hosts[0], "*.a.com");
    assert_string_equal(t.user_agent, "UA/1");
    assert_int_equal(t.allow_eval, 1);

    assert_int_equal(ADMIN(&a, err, "tenant", "update", "acme", "--no-allow-eval",
                           "--no-allow-hosts", "--user-agent", "", "--redis", "redis://x:1"),
                     0);
    assert_int_equal(a.action, CLI_ADMIN_TENANT_UPDATE);
    assert_int_equal(cli_admin_apply(&a, &t), 0);
    assert_int_equal(t.allow_eval, 0);
    assert_int_equal(t.n_allow, 0);
    assert_null(t.user_agent);
    assert_int_equal(t.n_deny, 1); /* not named: kept */
    tenant_destroy(&t);

    assert_int_equal(ADMIN(&a, err, "tenant", "list"), 0);
    assert_int_equal(a.action, CLI_ADMIN_TENANT_LIST);
    assert_int_equal(ADMIN(&a, err, "key", "revoke", "rgk_x"), 0);
    assert_int_equal(a.action, CLI_ADMIN_KEY_REVOKE);
    assert_string_equal(a.arg, "rgk_x");
    assert_int_equal(ADMIN(&a, err, "key", "create", "acme"), 0);
    assert_int_equal(ADMIN(&a, err, "tenant", "show", "acme", "--help"), CLI_CMD_HELP);
}

static void test_admin_usage_errors(void **state)
{
    (void)state;
    cli_admin a;
    char err[256];
    struct {
        const char *words[5];
        const char *says;
    } cases[] = {
        {{"tenant"}, "unknown admin command"},
        {{"tenant", "explode", "x"}, "unknown admin command"},
        {{"tenant", "create"}, "needs a tenant name"},
        {{"tenant", "create", "Bad Name"}, "not a valid tenant name"},
        {{"tenant", "create", "x", "--max-sessions", "many"}, "integer"},
        {{"tenant", "create", "x", "--max-sessions", "-1"}, "integer"},
        {{"tenant", "create", "x", "--rate", "0"}, "--rate"},
        {{"tenant", "create", "x", "--allow-host", "a b"}, "host"},
        {{"tenant", "create", "x", "--frobnicate"}, "unknown option"},
        {{"tenant", "create", "x", "--locale"}, "needs a value"},
        {{"tenant", "update", "x"}, "nothing to update"},
        {{"tenant", "show", "x", "--rate", "3"}, "takes no tenant options"},
        {{"tenant", "list", "x"}, "takes no argument"},
        {{"key", "revoke"}, "a key or its SHA-256"},
        {{"tenant", "show", "x", "y"}, "too many"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *words[5];
        int n = 0;
        while (n < 5 && cases[i].words[n]) {
            words[n] = (char *)cases[i].words[n];
            n++;
        }
        cli_global g;
        cli_global_init(&g);
        err[0] = '\0';
        int rc = cli_admin_parse(n, words, &g, &a, err, sizeof err);
        if (rc != RG_EBADREQ || !strstr(err, cases[i].says))
            fail_msg("case %zu: %d \"%s\" (want \"%s\")", i, rc, err, cases[i].says);
    }
}

/* ---- printing -------------------------------------------------------------- */

struct capture {
    char *out_buf, *err_buf;
    size_t out_len, err_len;
    FILE *out, *err;
};

static void capture_open(struct capture *c)
{
    memset(c, 0, sizeof *c);
    c->out = open_memstream(&c->out_buf, &c->out_len);
    c->err = open_memstream(&c->err_buf, &c->err_len);
}

static void capture_close(struct capture *c)
{
    fclose(c->out);
    fclose(c->err);
}

static void capture_free(struct capture *c)
{
    free(c->out_buf);
    free(c->err_buf);
}

/* Prints the JSON reply for a call of kind out; returns the exit status. */
static int print_json_reply(struct capture *cap, cli_call *c, int json, const char *reply)
{
    cJSON *v = cJSON_Parse(reply);
    assert_non_null(v);
    capture_open(cap);
    int rc = cli_print_reply(c, json, v, cap->out, cap->err);
    capture_close(cap);
    cJSON_Delete(v);
    return rc;
}

static void test_print_friendly(void **state)
{
    (void)state;
    struct capture cap;
    cli_call c = {.out = CLI_OUT_SESSION};
    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":true,\"result\":{\"session\":\"s-1\",\"worker\":"
                                      "\"w1\"},\"ms\":1.5}"),
                     0);
    assert_string_equal(cap.out_buf, "s-1\n");
    assert_string_equal(cap.err_buf, "");
    capture_free(&cap);

    /* dialogs go to stderr, the answer stays alone on stdout */
    c.out = CLI_OUT_REF;
    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":true,\"result\":{\"ref\":\"@del\",\"dialogs\":["
                                      "{\"type\":\"confirm\",\"message\":\"Sure?\",\"accepted\":"
                                      "false}]}}"),
                     0);
    assert_string_equal(cap.out_buf, "@del\n");
    assert_string_equal(cap.err_buf, "refgate-cli: confirm dialog \"Sure?\" dismissed (--dialog "
                                     "accept accepts it)\n");
    capture_free(&cap);
    /* and so do the page's errors */
    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":true,\"result\":{\"ref\":\"@save\",\"errors\":["
                                      "{\"type\":\"exception\",\"text\":\"Uncaught Error: no\"}]}}"),
                     0);
    assert_string_equal(cap.out_buf, "@save\n");
    assert_string_equal(cap.err_buf, "refgate-cli: page exception: Uncaught Error: no\n");
    capture_free(&cap);
    /* the console: a line a message, where it came from when known, then the count */
    c.out = CLI_OUT_CONSOLE;
    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":true,\"result\":{\"messages\":["
                                      "{\"seq\":3,\"type\":\"log\",\"text\":\"hi\",\"url\":\"http://a/\",\"line\":7},"
                                      "{\"seq\":4,\"type\":\"error\",\"text\":\"Failed\",\"url\":\"http://a/x.png\"},"
                                      "{\"seq\":5,\"type\":\"warning\",\"text\":\"w\"}],"
                                      "\"next\":5,\"dropped\":2}}"),
                     0);
    assert_string_equal(cap.out_buf, "[log] hi (http://a/:7)\n[error] Failed (http://a/x.png)\n"
                                     "[warning] w\n(2 earlier messages are no longer kept)\nnext 5\n");
    capture_free(&cap);
    /* the requests: a line each, as the Playwright MCP server lists them */
    c.out = CLI_OUT_NETWORK;
    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":true,\"result\":{\"requests\":["
                                      "{\"seq\":1,\"method\":\"GET\",\"url\":\"http://a/\",\"status\":200,"
                                      "\"status_text\":\"OK\"},"
                                      "{\"seq\":2,\"method\":\"POST\",\"url\":\"http://a/api\",\"status\":401,"
                                      "\"status_text\":\"\"},"
                                      "{\"seq\":3,\"method\":\"GET\",\"url\":\"http://b/\","
                                      "\"failure\":\"net::ERR_CONNECTION_REFUSED\"},"
                                      "{\"seq\":4,\"method\":\"GET\",\"url\":\"http://a/slow\",\"pending\":true}],"
                                      "\"next\":4}}"),
                     0);
    assert_string_equal(cap.out_buf, "[GET] http://a/ => [200] OK\n[POST] http://a/api => [401]\n"
                                     "[GET] http://b/ => net::ERR_CONNECTION_REFUSED\n"
                                     "[GET] http://a/slow => (pending)\nnext 4\n");
    capture_free(&cap);
    c.out = CLI_OUT_SESSION;

    c.out = CLI_OUT_OBSERVE;
    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":true,\"result\":{\"text\":\"- document \\\"x\\\"\","
                                      "\"elements\":[{\"ref\":\"@a\"}]}}"),
                     0);
    assert_string_equal(cap.out_buf, "- document \"x\"\n");
    capture_free(&cap);
    c.observe_elements = 1;
    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":true,\"result\":{\"text\":\"t\",\"elements\":[{"
                                      "\"ref\":\"@a\",\"bounds\":{\"x\":1}}]}}"),
                     0);
    assert_string_equal(cap.out_buf, "[{\"ref\":\"@a\",\"bounds\":{\"x\":1}}]\n");
    capture_free(&cap);

    c.out = CLI_OUT_VALUE;
    assert_int_equal(
        print_json_reply(&cap, &c, 0, "{\"ok\":true,\"result\":{\"value\":\"a\\nb\"}}"), 0);
    assert_string_equal(cap.out_buf, "a\nb\n"); /* strings raw */
    capture_free(&cap);
    assert_int_equal(
        print_json_reply(&cap, &c, 0, "{\"ok\":true,\"result\":{\"value\":{\"href\":\"/x\"}}}"), 0);
    assert_string_equal(cap.out_buf, "{\"href\":\"/x\"}\n");
    capture_free(&cap);
    assert_int_equal(print_json_reply(&cap, &c, 0, "{\"ok\":true,\"result\":{\"value\":42}}"), 0);
    assert_string_equal(cap.out_buf, "42\n");
    capture_free(&cap);

    c.out = CLI_OUT_XY;
    assert_int_equal(print_json_reply(&cap, &c, 0, "{\"ok\":true,\"result\":{\"x\":0,\"y\":1.5}}"),
                     0);
    assert_string_equal(cap.out_buf, "0 1.5\n");
    capture_free(&cap);

    c.out = CLI_OUT_CHECKED;
    assert_int_equal(print_json_reply(&cap, &c, 0, "{\"ok\":true,\"result\":{\"checked\":false}}"),
                     0);
    assert_string_equal(cap.out_buf, "false\n");
    capture_free(&cap);

    c.out = CLI_OUT_NONE;
    assert_int_equal(print_json_reply(&cap, &c, 0, "{\"ok\":true,\"result\":{\"ms\":3}}"), 0);
    assert_string_equal(cap.out_buf, "");
    capture_free(&cap);
}

static void test_print_errors_and_json(void **state)
{
    (void)state;
    struct capture cap;
    cli_call c = {.out = CLI_OUT_REF};
    static const char stale[] = "{\"ok\":false,\"error\":{\"code\":\"stale_ref\",\"kind\":"
                                "\"permanent\",\"message\":\"the element is gone: observe "
                                "again\"},\"ms\":2}";
    assert_int_equal(print_json_reply(&cap, &c, 0, stale), CLI_EXIT_FAIL);
    assert_string_equal(cap.out_buf, "");
    assert_string_equal(cap.err_buf,
                        "refgate-cli: stale_ref: the element is gone: observe again\n");
    capture_free(&cap);

    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":false,\"error\":{\"code\":\"ambiguous\",\"message\":"
                                      "\"3 match\",\"retry_after_ms\":250,\"details\":{\"count\":"
                                      "3}}}"),
                     CLI_EXIT_FAIL);
    assert_string_equal(cap.err_buf, "refgate-cli: ambiguous: 3 match (retry after 250 ms) "
                                     "details: {\"count\":3}\n");
    capture_free(&cap);

    /* --json: the whole reply on stdout, one line, and still exit 1 with the message. */
    assert_int_equal(print_json_reply(&cap, &c, 1, stale), CLI_EXIT_FAIL);
    assert_non_null(strstr(cap.out_buf, "\"code\":\"stale_ref\""));
    assert_int_equal(strchr(cap.out_buf, '\n') - cap.out_buf, (long)strlen(cap.out_buf) - 1);
    assert_non_null(strstr(cap.err_buf, "stale_ref"));
    capture_free(&cap);

    c.out = CLI_OUT_REPLY; /* call */
    assert_int_equal(print_json_reply(&cap, &c, 0,
                                      "{\"ok\":true,\"result\":{\"ref\":\"@a\"},"
                                      "\"ms\":1}"),
                     0);
    assert_string_equal(cap.out_buf, "{\"ok\":true,\"result\":{\"ref\":\"@a\"},\"ms\":1}\n");
    capture_free(&cap);

    assert_int_equal(print_json_reply(&cap, &c, 0, "{\"result\":{}}"), CLI_EXIT_FAIL);
    assert_non_null(strstr(cap.err_buf, "not a refgate reply"));
    capture_free(&cap);
    assert_int_equal(print_json_reply(&cap, &c, 0, "[1,2]"), CLI_EXIT_FAIL);
    capture_free(&cap);
}

static void test_print_screenshot(void **state)
{
    (void)state;
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', 0, 1, 2, 0xff};
    cJSON *reply = cJSON_CreateObject();
    cJSON_AddTrueToObject(reply, "ok");
    cJSON *res = cJSON_AddObjectToObject(reply, "result");
    cJSON_AddItemToObject(res, "data", wire_bin_new(png, sizeof png));
    cJSON_AddNumberToObject(res, "width", 8);
    /* Through msgpack, as it arrives: bin -> WIRE_BIN item. */
    rg_buf mp;
    rg_buf_init(&mp);
    assert_int_equal(wire_mp_encode(reply, &mp), 0);
    cJSON *got = NULL;
    char err[128];
    assert_int_equal(wire_mp_decode(mp.data, mp.len, &got, err, sizeof err), 0);
    assert_true(wire_is_bin(cJSON_GetObjectItem(cJSON_GetObjectItem(got, "result"), "data")));

    char path[] = "/tmp/refgate-test-cli-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    cli_call c = {.out = CLI_OUT_FILE, .out_file = path};
    struct capture cap;
    capture_open(&cap);
    assert_int_equal(cli_print_reply(&c, 0, got, cap.out, cap.err), 0);
    capture_close(&cap);
    assert_string_equal(cap.out_buf, "");
    capture_free(&cap);
    unsigned char back[64];
    FILE *f = fopen(path, "rb");
    size_t n = fread(back, 1, sizeof back, f);
    fclose(f);
    assert_int_equal(n, sizeof png);
    assert_memory_equal(back, png, sizeof png);

    /* To stdout with -o -. */
    c.out_file = "-";
    capture_open(&cap);
    assert_int_equal(cli_print_reply(&c, 0, got, cap.out, cap.err), 0);
    capture_close(&cap);
    assert_int_equal(cap.out_len, sizeof png);
    assert_memory_equal(cap.out_buf, png, sizeof png);
    capture_free(&cap);

    /* A directory that does not exist: exit 1 with the reason. */
    c.out_file = "/nonexistent-dir/x.png";
    capture_open(&cap);
    assert_int_equal(cli_print_reply(&c, 0, got, cap.out, cap.err), CLI_EXIT_FAIL);
    capture_close(&cap);
    assert_non_null(strstr(cap.err_buf, "cannot write /nonexistent-dir/x.png"));
    capture_free(&cap);

    unlink(path);
    cJSON_Delete(got);
    cJSON_Delete(reply);
    rg_buf_destroy(&mp);
}

/* Every args key a command sends is one its op takes (wire/op.h is the one table). */
static void test_commands_match_ops(void **state)
{
    (void)state;
    char err[200] = "";
    assert_int_equal(cli_check_commands(err, sizeof err), 0);
    assert_string_equal(err, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_parse),
        cmocka_unit_test(test_url_errors),
        cmocka_unit_test(test_request_format),
        cmocka_unit_test(test_path_escape),
        cmocka_unit_test(test_parse_content_length),
        cmocka_unit_test(test_parse_until_close),
        cmocka_unit_test(test_parse_chunked),
        cmocka_unit_test(test_parse_interim_and_empty),
        cmocka_unit_test(test_parse_retry_after),
        cmocka_unit_test(test_parse_truncated),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_parse_header_limit),
        cmocka_unit_test(test_exchange_in_pieces),
        cmocka_unit_test(test_exchange_truncated),
        cmocka_unit_test(test_exchange_times_out),
        cmocka_unit_test(test_exchange_reply_to_unread_body),
        cmocka_unit_test(test_http_do_over_loopback),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_reply_decode),
        cmocka_unit_test(test_parse_click),
        cmocka_unit_test(test_parse_select_values),
        cmocka_unit_test(test_parse_fill_type_press),
        cmocka_unit_test(test_parse_command_options_win_after_the_command),
        cmocka_unit_test(test_parse_state_file),
        cmocka_unit_test(test_parse_cookies),
        cmocka_unit_test(test_parse_observe_and_screenshot),
        cmocka_unit_test(test_parse_session_ops),
        cmocka_unit_test(test_parse_call),
        cmocka_unit_test(test_parse_usage_errors),
        cmocka_unit_test(test_parse_help_and_admin),
        cmocka_unit_test(test_global_from_env),
        cmocka_unit_test(test_admin_parse),
        cmocka_unit_test(test_admin_usage_errors),
        cmocka_unit_test(test_print_friendly),
        cmocka_unit_test(test_print_errors_and_json),
        cmocka_unit_test(test_print_screenshot),
        cmocka_unit_test(test_commands_match_ops),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
