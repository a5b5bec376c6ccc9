/*
 * test_badinput.c - what a hostile client can send, as a table: each row is
 * one raw HTTP request through nginx (method, path, header lines, body bytes
 * with their length, so NUL bytes and binary msgpack are possible) and the
 * HTTP status and protocol error code docs/protocol.md gives it. Every answer
 * must be a reply map in msgpack or JSON (never an HTML page, never a 500),
 * and after every row the session the rows aim at is exactly as it was and
 * both workers still run. Then the same for WebSocket frames, and at the
 * end a normal create, navigate and observe.
 *
 * Requests go out through a small client of this file rather than
 * http_request, because some rows need a Content-Length that lies or none
 * at all. Placeholders in paths, headers and bodies: {sid} (acme's session),
 * {sidB} (the other tenant's session), {auth} and {authB} (their
 * Authorization header lines), {key} (acme's bare key) and {url} (the
 * fixture server's http://127.0.0.1:port).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/wire.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"

#define IO_TIMEOUT_MS 60000
#define BIG_BODY ((1u << 20) + 100) /* just over the default body limit */

static fx_stack gw;
static char sid_a[64], sid_b[64]; /* acme's session, and the other tenant's */
static pid_t worker_pid[3];

/* ---- a raw HTTP/1.1 client ---- */

typedef struct resp {
    int status;
    char content_type[128];
    rg_buf body;
} resp;

/*
 * Sends req (n bytes) and stops sending as soon as an answer arrives (nginx
 * refuses an oversized body before reading it); then reads until the server
 * closes. 0, or -1 when nothing came back within IO_TIMEOUT_MS.
 */
static int exchange_raw(const void *req, size_t n, rg_buf *in)
{
    int fd = net_dial(stack_port(gw.st));
    if (fd < 0)
        return -1;
    const char *p = req;
    size_t sent = 0;
    int answered = 0;
    while (sent < n && !answered) {
        struct pollfd pf = {.fd = fd, .events = POLLIN | POLLOUT};
        if (poll(&pf, 1, IO_TIMEOUT_MS) <= 0)
            break;
        if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
            answered = 1;
            break;
        }
        size_t chunk = n - sent < 65536 ? n - sent : 65536;
        ssize_t w = send(fd, p + sent, chunk, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        sent += (size_t)w;
    }
    int64_t end = rg_now_ms() + IO_TIMEOUT_MS;
    for (;;) {
        int left = (int)(end - rg_now_ms());
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, left) <= 0) {
            close(fd);
            return -1;
        }
        char tmp[16384];
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* closed (or reset after the answer) */
        rg_buf_append(in, tmp, (size_t)r);
    }
    close(fd);
    return in->len ? 0 : -1;
}

/* Splits a whole response in raw into r (chunked bodies decoded). 0 or -1. */
static int parse_response(const rg_buf *raw, resp *r)
{
    memset(r, 0, sizeof *r);
    rg_buf_init(&r->body);
    const char *end = raw->data ? memmem(raw->data, raw->len, "\r\n\r\n", 4) : NULL;
    if (!end || sscanf(raw->data, "HTTP/1.%*d %d", &r->status) != 1)
        return -1;
    size_t head_len = (size_t)(end - raw->data) + 2;
    char *head = strndup(raw->data, head_len);
    char v[128];
    if (http_header_value(head, "Content-Type", v, sizeof v))
        snprintf(r->content_type, sizeof r->content_type, "%s", v);
    int chunked = http_header_value(head, "Transfer-Encoding", v, sizeof v) && strstr(v, "chunked");
    long cl = http_header_value(head, "Content-Length", v, sizeof v) ? atol(v) : -1;
    free(head);
    const char *b = end + 4;
    size_t n = raw->len - (size_t)(b - raw->data);
    if (!chunked) {
        if (cl >= 0 && (size_t)cl < n)
            n = (size_t)cl;
        rg_buf_append(&r->body, b, n);
        return 0;
    }
    while (n) {
        char *nl = memmem(b, n, "\r\n", 2);
        if (!nl)
            return -1;
        size_t k = strtoul(b, NULL, 16), hl = (size_t)(nl - b) + 2;
        if (k == 0 || hl + k > n)
            break;
        rg_buf_append(&r->body, b + hl, k);
        b += hl + k + 2;
        n = n >= hl + k + 2 ? n - hl - k - 2 : 0;
    }
    return 0;
}

/* Replaces every placeholder of this file in s (n bytes) into out. */
static void fill_in(rg_buf *out, const char *s, size_t n)
{
    static const char *names[] = {"{sidB}", "{sid}", "{authB}", "{auth}", "{key}", "{url}"};
    const char *values[] = {sid_b, sid_a, gw.auth[1], gw.auth[0], stack_key(gw.st, 0), gw.base_url};
    size_t i = 0;
    while (i < n) {
        size_t k = 0;
        for (; k < sizeof names / sizeof *names; k++) {
            size_t len = strlen(names[k]);
            if (n - i >= len && !memcmp(s + i, names[k], len))
                break;
        }
        if (k < sizeof names / sizeof *names) {
            rg_buf_puts(out, values[k]);
            i += strlen(names[k]);
        } else {
            rg_buf_append(out, s + i, 1);
            i++;
        }
    }
}

/*
 * One request: method (NULL: head is the whole request head, sent as it
 * is), path, extra header lines and body; Content-Length is added for any
 * body or POST. 0 with *r filled (free r->body), or -1.
 */
static int request(const char *method, const char *path, const char *head, const void *body,
                   size_t len, resp *r)
{
    rg_buf req, raw;
    rg_buf_init(&req);
    rg_buf_init(&raw);
    if (method) {
        rg_buf_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method,
                      path);
        rg_buf_puts(&req, head ? head : "");
        if (len || !strcmp(method, "POST"))
            rg_buf_printf(&req, "Content-Length: %zu\r\n", len);
        rg_buf_puts(&req, "\r\n");
    } else {
        rg_buf_puts(&req, head);
    }
    rg_buf_append(&req, body, len);
    int rc = exchange_raw(req.data, req.len, &raw);
    if (rc == 0)
        rc = parse_response(&raw, r);
    else
        rg_buf_init(&r->body);
    rg_buf_destroy(&req);
    rg_buf_destroy(&raw);
    return rc;
}

/* The reply map in r's body (JSON or msgpack, by its type), or NULL. */
static cJSON *reply_of(const resp *r, char *why, size_t len)
{
    cJSON *v = NULL;
    const char *b = r->body.data ? r->body.data : "";
    int rc;
    if (!strncasecmp(r->content_type, "application/json", 16))
        rc = wire_json_decode(b, r->body.len, &v, why, len);
    else if (!strncasecmp(r->content_type, "application/msgpack", 19))
        rc = wire_mp_decode(b, r->body.len, &v, why, len);
    else
        rc = (snprintf(why, len, "a body of type \"%.60s\", not a reply map", r->content_type), -1);
    return rc < 0 ? NULL : v;
}

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* v as compact JSON into buf, for messages. */
static const char *show(const cJSON *v, char *buf, size_t len)
{
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    snprintf(buf, len, "%s", s ? s : "(nothing)");
    free(s);
    return buf;
}

/* A JSON command that must succeed on path with the header lines head; its reply. */
static cJSON *ok_json(const char *path, const char *head, const char *body)
{
    resp r;
    rg_buf h;
    rg_buf_init(&h);
    rg_buf_printf(&h, "%sContent-Type: application/json\r\nAccept: application/json\r\n", head);
    int rc = request("POST", path, h.data, body, strlen(body), &r);
    rg_buf_destroy(&h);
    if (rc < 0)
        fail_msg("%s %s: no answer", path, body);
    char why[128] = "";
    cJSON *v = reply_of(&r, why, sizeof why);
    if (r.status != 200 || !v || !cJSON_IsTrue(get(v, "ok")))
        fail_msg("%s %s -> %d %.300s (%s)", path, body, r.status, r.body.data ? r.body.data : "",
                 why);
    rg_buf_destroy(&r.body);
    return v;
}

/* Everything a row could change on acme's page, as one string (caller frees). */
static char *fingerprint(void)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid_a);
    cJSON *v = ok_json(path, gw.auth[0],
                       "{\"op\":\"eval\",\"args\":{\"expression\":\"JSON.stringify(["
                       "location.href,document.title,window.clicks||0,q.value,agree.checked,"
                       "color.value,window.inputs||0,window.changes||0,window.same||'',"
                       "window.healed||0,scrollX,scrollY,(document.activeElement||{}).id||'',"
                       "history.length])\"}}");
    const cJSON *val = get(get(v, "result"), "value");
    char *s = strdup(cJSON_IsString(val) ? val->valuestring : "?");
    cJSON_Delete(v);
    return s;
}

/* The other tenant's session: its URL (from session.info), caller frees. */
static char *url_of_b(void)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid_b);
    cJSON *v = ok_json(path, gw.auth[1], "{\"op\":\"session.info\"}");
    const cJSON *u = get(get(v, "result"), "url");
    char *s = strdup(cJSON_IsString(u) ? u->valuestring : "?");
    cJSON_Delete(v);
    return s;
}

static int acme_sessions(void)
{
    resp r;
    rg_buf h;
    rg_buf_init(&h);
    rg_buf_printf(&h, "%sAccept: application/json\r\n", gw.auth[0]);
    assert_int_equal(request("GET", "/v1/sessions", h.data, NULL, 0, &r), 0);
    rg_buf_destroy(&h);
    assert_int_equal(r.status, 200);
    char why[128];
    cJSON *v = reply_of(&r, why, sizeof why);
    assert_non_null(v);
    int n = cJSON_GetArraySize(get(get(v, "result"), "sessions"));
    cJSON_Delete(v);
    rg_buf_destroy(&r.body);
    return n;
}

static int workers_alive(void)
{
    for (int i = 1; i <= 2; i++)
        if (stack_worker_pid(gw.st, i) != worker_pid[i] || !procs_running(worker_pid[i]))
            return 0;
    return 1;
}

/* ---- the table ---- */

/* Rows build their big parts at run time: path, header lines and body are appended to. */
typedef void (*gen_fn)(rg_buf *path, rg_buf *head, rg_buf *body);

typedef struct row {
    const char *name;
    const char *method; /* NULL: head is the whole request head */
    const char *path;
    const char *head;
    const char *body;
    size_t len;
    gen_fn gen;
    int status;
    const char *code;
    int any_format; /* nginx refused the request line or a header: it cannot know the format */
} row;

#define MP "Content-Type: application/msgpack\r\n"
#define JS "Content-Type: application/json\r\n"
#define SESS "/v1/sessions/{sid}"
#define B(s) s, sizeof(s) - 1
#define NOBODY NULL, 0

/* A command on acme's session, in JSON and in msgpack. */
#define J(name, body, status, code)                                                                \
    {                                                                                              \
        name, "POST", SESS, "{auth}" JS, B(body), NULL, status, code, 0                            \
    }
#define M(name, body, status, code)                                                                \
    {                                                                                              \
        name, "POST", SESS, "{auth}" MP, B(body), NULL, status, code, 0                            \
    }
/* A target for click, in JSON (a short timeout: a locator that parses waits that long). */
#define CLICK(t) "{\"op\":\"click\",\"args\":{\"target\":" t ",\"timeout_ms\":300}}"
/* msgpack pieces */
#define M_OP                                                                                       \
    "\xa2"                                                                                         \
    "op"
#define M_ARGS                                                                                     \
    "\xa4"                                                                                         \
    "args"
#define M_OBSERVE                                                                                  \
    "\x81" M_OP "\xa7"                                                                             \
    "observe"
#define M_CLICK(t)                                                                                 \
    "\x82" M_OP "\xa5"                                                                             \
    "click" M_ARGS "\x81\xa6"                                                                      \
    "target" t
#define M_OBS_ARG(k, v)                                                                            \
    "\x82" M_OP "\xa7"                                                                             \
    "observe" M_ARGS "\x81" k v
/* A whole request for the raw rows: the request line, Host, auth and JSON type. */
#define RAW(lines)                                                                                 \
    "POST /v1/sessions/{sid} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" JS              \
    "{auth}" lines "\r\n"

static void rep(rg_buf *b, const char *s, size_t times)
{
    for (size_t i = 0; i < times; i++)
        rg_buf_puts(b, s);
}

static void gen_huge_json(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"observe\"}");
    rep(body, " ", BIG_BODY);
}

static void gen_huge_fill(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"fill\",\"args\":{\"target\":\"css:#q\",\"value\":\"");
    rep(body, "x", 3u << 20);
    rg_buf_puts(body, "\"}}");
}

static void gen_huge_mp(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    /* {"op":"fill","args":{"target":"css:#q","value": <3 MiB str32>}} */
    rg_buf_append(body, B("\x82" M_OP "\xa4"
                          "fill" M_ARGS "\x82\xa6"
                          "target"
                          "\xa6"
                          "css:#q"
                          "\xa5"
                          "value"
                          "\xdb\x00\x30\x00\x00"));
    rep(body, "y", 3u << 20);
}

static void gen_deep_json(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"observe\",\"args\":{\"scope\":");
    rep(body, "[", 10000);
    rep(body, "]", 10000);
    rg_buf_puts(body, "}}");
}

static void gen_deep_json_objects(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"observe\",\"args\":{\"scope\":");
    rep(body, "{\"a\":", 15);
    rg_buf_puts(body, "1");
    rep(body, "}", 15);
    rg_buf_puts(body, "}}");
}

static void gen_deep_mp(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_append(body, B(M_OBS_ARG("\xa5"
                                    "scope",
                                    "")));
    rep(body, "\x91", 10000);
    rg_buf_append(body, "\xc0", 1);
}

static void gen_deep_mp_maps(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_append(body, B(M_OBS_ARG("\xa5"
                                    "scope",
                                    "")));
    rep(body,
        "\x81\xa1"
        "a",
        15); /* with the command map and args: 17 levels */
    rg_buf_append(body, "\x01", 1);
}

static void gen_wide_map(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    /* args with 60,000 distinct keys (map16): unknown arguments, refused at the first */
    rg_buf_append(body, B("\x82" M_OP "\xa7"
                          "observe" M_ARGS "\xde\xea\x60"));
    for (int i = 0; i < 60000; i++) {
        char k[16];
        int n = snprintf(k, sizeof k, "k%05d", i);
        rg_buf_append(body, (char[]){(char)(0xa0 | n)}, 1);
        rg_buf_append(body, k, (size_t)n);
        rg_buf_append(body, "\xc0", 1);
    }
}

static void gen_long_target(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"click\",\"args\":{\"target\":\"css:");
    rep(body, "a", 5000);
    rg_buf_puts(body, "\"}}");
}

static void gen_long_ref(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"click\",\"args\":{\"target\":\"@");
    rep(body, "a", 3000);
    rg_buf_puts(body, "\"}}");
}

/* A bad selector of 2,000 two-byte characters: the page's message quotes it. */
static void gen_long_bad_css(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"click\",\"args\":{\"target\":\"css:[[[a");
    rep(body, "\xc3\xa9", 2000);
    rg_buf_puts(body, "\"}}");
}

/* An unknown op of one ASCII byte then 40 two-byte characters: quoted in the message. */
static void gen_long_unicode_op(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"a");
    rep(body, "\xc3\xa9", 40);
    rg_buf_puts(body, "\"}");
}

static void gen_long_unicode_key(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"observe\",\"args\":{\"a");
    rep(body, "\xe2\x82\xac", 30); /* euro signs: 91 bytes */
    rg_buf_puts(body, "\":1}}");
}

static void gen_long_key_press(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"press\",\"args\":{\"key\":\"Control+");
    rep(body, "A", 10000);
    rg_buf_puts(body, "\"}}");
}

static void gen_many_values(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"select\",\"args\":{\"target\":\"css:#color\",\"values\":[\"g\"");
    rep(body, ",\"g\"", 64);
    rg_buf_puts(body, "]}}");
}

static void gen_200k_values(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"select\",\"args\":{\"target\":\"css:#color\",\"values\":[\"g\"");
    rep(body, ",\"g\"", 200000);
    rg_buf_puts(body, "]}}");
}

static void gen_many_steps(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_puts(body, "{\"op\":\"act\",\"args\":{\"steps\":[{\"op\":\"observe\"}");
    rep(body, ",{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}", 100);
    rg_buf_puts(body, "]}}");
}

static void gen_long_header(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)body;
    rg_buf_puts(head, "X-Padding: ");
    rep(head, "a", 20000);
    rg_buf_puts(head, "\r\n");
}

static void gen_long_auth(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)body;
    rg_buf_puts(head, "Authorization: Bearer rgk_");
    rep(head, "A", 6000);
    rg_buf_puts(head, "\r\n");
}

static void gen_long_type(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)body;
    rg_buf_puts(head, "Content-Type: text/");
    rep(head, "x", 6000);
    rg_buf_puts(head, "\r\n");
}

static void gen_long_sid(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)head, (void)body;
    rg_buf_puts(path, "/v1/sessions/s");
    rep(path, "a", 300);
}

static void gen_long_path(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)head, (void)body;
    rg_buf_puts(path, "/v1/sessions/s");
    rep(path, "a", 12000);
}

static void gen_chunked_huge(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    char line[32];
    for (size_t sent = 0; sent < BIG_BODY; sent += 65536) {
        snprintf(line, sizeof line, "%x\r\n", 65536);
        rg_buf_puts(body, line);
        rep(body, " ", 65536);
        rg_buf_puts(body, "\r\n");
    }
    rg_buf_puts(body, "0\r\n\r\n");
}

/* A row per request, its bytes kept together (clang-format would split them). */
// clang-format off
static const row rows[] = {
    /* ---- msgpack bodies ---- */
    M("mp: map of 2 with only 1 entry", "\x82" M_OP "\xa7" "observe", 400, "bad_request"),
    M("mp: str8 declares 255 bytes, 7 follow", "\x81" M_OP "\xd9\xff" "observe", 400,
      "bad_request"),
    M("mp: str32 declares 4 GiB", "\x81" M_OP "\xdb\xff\xff\xff\xff" "observe", 400, "bad_request"),
    M("mp: bin32 declares 4 GiB", "\x81" M_OP "\xc6\xff\xff\xff\xff", 400, "bad_request"),
    M("mp: array32 of 4 G elements as args", "\x82" M_OP "\xa7" "observe" M_ARGS
      "\xdd\xff\xff\xff\xff", 400, "bad_request"),
    M("mp: map32 of 4 G pairs", "\xdf\xff\xff\xff\xff", 400, "bad_request"),
    M("mp: ext32 declares 4 GiB", "\xc9\xff\xff\xff\xff\x01", 400, "bad_request"),
    M("mp: a nil after the map", M_OBSERVE "\xc0", 400, "bad_request"),
    M("mp: two maps", M_OBSERVE M_OBSERVE, 400, "bad_request"),
    M("mp: top-level array", "\x91\xa7" "observe", 400, "bad_request"),
    M("mp: top-level str", "\xa7" "observe", 400, "bad_request"),
    M("mp: top-level nil", "\xc0", 400, "bad_request"),
    M("mp: top-level int", "\x2a", 400, "bad_request"),
    M("mp: the reserved byte 0xc1", "\xc1", 400, "bad_request"),
    M("mp: invalid UTF-8 in a value", "\x81" M_OP "\xa2\xff\xfe", 400, "bad_request"),
    M("mp: invalid UTF-8 in a key", "\x81\xa2" "o\xff" "\xa7" "observe", 400, "bad_request"),
    M("mp: overlong UTF-8 '/' in a target", M_CLICK("\xa6" "css:\xc0\xaf"), 400, "bad_request"),
    M("mp: a UTF-16 surrogate in UTF-8", M_CLICK("\xa8" "text:\xed\xa0\x80"), 400, "bad_request"),
    M("mp: a code point above U+10FFFF", M_CLICK("\xa9" "text:\xf4\x90\x80\x80"), 400,
      "bad_request"),
    M("mp: NUL inside op", "\x81" M_OP "\xa8" "obs\x00" "erve", 400, "bad_request"),
    M("mp: NUL inside a key", "\x81\xa3" "op\x00" "\xa7" "observe", 400, "bad_request"),
    M("mp: NUL at the end of a ref", M_CLICK("\xa9" "@counter\x00"), 400, "bad_request"),
    M("mp: op twice", "\x82" M_OP "\xa7" "observe" M_OP "\xa5" "click", 400, "bad_request"),
    M("mp: target twice in args", "\x82" M_OP "\xa5" "click" M_ARGS "\x82\xa6" "target" "\xa8"
      "@counter" "\xa6" "target" "\xa8" "@counter", 400, "bad_request"),
    M("mp: an integer key", "\x81\x01\xa7" "observe", 400, "bad_request"),
    M("mp: a nil key", "\x81\xc0\xa7" "observe", 400, "bad_request"),
    M("mp: a map as a key", "\x81\x80\xa7" "observe", 400, "bad_request"),
    M("mp: fixext1 as op", "\x81" M_OP "\xd4\x01\x00", 400, "bad_request"),
    M("mp: op as bin", "\x81" M_OP "\xc4\x07" "observe", 400, "bad_request"),
    M("mp: target as bin", M_CLICK("\xc4\x08" "@counter"), 400, "bad_request"),
    M("mp: a modifier as bin", "\x82" M_OP "\xa5" "click" M_ARGS "\x82\xa6" "target" "\xa8"
      "@counter" "\xa9" "modifiers" "\x91\xc4\x05" "Shift", 400, "bad_request"),
    M("mp: timeout_ms NaN (float64)", M_OBS_ARG("\xaa" "timeout_ms",
      "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00"), 400, "bad_request"),
    M("mp: max_elements +Infinity (float32)", M_OBS_ARG("\xac" "max_elements",
      "\xca\x7f\x80\x00\x00"), 400, "bad_request"),
    M("mp: max_elements -Infinity (float64)", M_OBS_ARG("\xac" "max_elements",
      "\xcb\xff\xf0\x00\x00\x00\x00\x00\x00"), 400, "bad_request"),
    M("mp: timeout_ms uint64 max", M_OBS_ARG("\xaa" "timeout_ms",
      "\xcf\xff\xff\xff\xff\xff\xff\xff\xff"), 400, "bad_request"),
    M("mp: max_elements int64 min", M_OBS_ARG("\xac" "max_elements",
      "\xd3\x80\x00\x00\x00\x00\x00\x00\x00"), 400, "bad_request"),
    M("mp: id 2^53 + 1", "\x82" M_OP "\xa7" "observe" "\xa2" "id" "\xcf\x00\x20\x00\x00\x00\x00"
      "\x00\x01", 400, "bad_request"),
    M("mp: id -1", "\x82" M_OP "\xa7" "observe" "\xa2" "id" "\xff", 400, "bad_request"),
    M("mp: timeout_ms as a float 5000.5", M_OBS_ARG("\xaa" "timeout_ms",
      "\xcb\x40\xb3\x88\x80\x00\x00\x00\x00"), 400, "bad_request"),
    {"mp: 10,000 nested arrays", "POST", SESS, "{auth}" MP, NOBODY, gen_deep_mp, 400, "bad_request",
     0},
    {"mp: 17 nested maps", "POST", SESS, "{auth}" MP, NOBODY, gen_deep_mp_maps, 400, "bad_request",
     0},
    {"mp: args with 60,000 keys", "POST", SESS, "{auth}" MP, NOBODY, gen_wide_map, 400,
     "bad_request", 0},
    {"mp: empty body", "POST", SESS, "{auth}" MP, NOBODY, NULL, 400, "bad_request", 0},
    {"mp: fill value of 3 MiB", "POST", SESS, "{auth}" MP, NOBODY, gen_huge_mp, 413,
     "payload_too_large", 0},

    /* ---- JSON bodies ---- */
    J("json: trailing comma", "{\"op\":\"observe\",}", 400, "bad_request"),
    J("json: single quotes", "{'op':'observe'}", 400, "bad_request"),
    J("json: unquoted key", "{op:\"observe\"}", 400, "bad_request"),
    J("json: unterminated string", "{\"op\":\"observe}", 400, "bad_request"),
    J("json: unclosed object", "{\"op\":\"observe\"", 400, "bad_request"),
    J("json: a comment", "{\"op\":\"observe\"/* hi */}", 400, "bad_request"),
    J("json: hex number", "{\"op\":\"observe\",\"args\":{\"max_elements\":0x10}}", 400,
      "bad_request"),
    J("json: top-level array", "[\"observe\"]", 400, "bad_request"),
    J("json: top-level number", "42", 400, "bad_request"),
    J("json: top-level string", "\"observe\"", 400, "bad_request"),
    J("json: top-level null", "null", 400, "bad_request"),
    J("json: two objects", "{\"op\":\"observe\"}{\"op\":\"observe\"}", 400, "bad_request"),
    J("json: op twice", "{\"op\":\"observe\",\"op\":\"click\"}", 400, "bad_request"),
    J("json: target twice",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"target\":\"css:#q\"}}", 400,
      "bad_request"),
    J("json: lone high surrogate", "{\"op\":\"observe\",\"args\":{\"format\":\"\\ud800\"}}", 400,
      "bad_request"),
    J("json: lone low surrogate", CLICK("\"text:\\udc00\""), 400, "bad_request"),
    J("json: surrogates in the wrong order", CLICK("\"text:\\udc00\\ud800\""), 400, "bad_request"),
    J("json: \\u0000 in op", "{\"op\":\"obs\\u0000erve\"}", 400, "bad_request"),
    J("json: \\u0000 in a key", "{\"op\\u0000\":\"observe\"}", 400, "bad_request"),
    J("json: raw NUL in a string", "{\"op\":\"observe\x00\"}", 400, "bad_request"),
    J("json: raw NUL between tokens", "{\"op\":\"observe\"}\x00", 400, "bad_request"),
    J("json: raw control byte between tokens", "{\"op\":\x01\"observe\"}", 400, "bad_request"),
    J("json: invalid UTF-8 byte", CLICK("\"text:\xff\""), 400, "bad_request"),
    J("json: overlong UTF-8 '/'", CLICK("\"css:\xc0\xaf\""), 400, "bad_request"),
    J("json: UTF-8-encoded surrogate", CLICK("\"text:\xed\xa0\x80\""), 400, "bad_request"),
    J("json: cut UTF-8 sequence", CLICK("\"text:\xe2\x82\""), 400, "bad_request"),
    J("json: a BOM between tokens", "{\"op\":\xef\xbb\xbf\"observe\"}", 400, "bad_request"),
    J("json: NaN literal", "{\"op\":\"observe\",\"args\":{\"max_elements\":NaN}}", 400,
      "bad_request"),
    J("json: Infinity literal", "{\"op\":\"observe\",\"args\":{\"max_elements\":Infinity}}", 400,
      "bad_request"),
    J("json: 1e999 overflows to infinity", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":1e999}}",
      400, "bad_request"),
    J("json: timeout_ms 2^64",
      "{\"op\":\"observe\",\"args\":{\"timeout_ms\":18446744073709551616}}", 400, "bad_request"),
    J("json: nth below int64", "{\"op\":\"click\",\"args\":{\"target\":\"text:Same\","
      "\"nth\":-9223372036854775809}}", 400, "bad_request"),
    J("json: leading zero (010, not JSON; strtod reads 10)",
      "{\"op\":\"observe\",\"args\":{\"max_elements\":010}}", 400, "bad_request"),
    J("json: number ending in a dot", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":5000.}}", 400,
      "bad_request"),
    J("json: whitespace only", "  \r\n\t ", 400, "bad_request"),
    {"json: empty body", "POST", SESS, "{auth}" JS, NOBODY, NULL, 400, "bad_request", 0},
    {"json: 10,000 nested arrays", "POST", SESS, "{auth}" JS, NOBODY, gen_deep_json, 400,
     "bad_request", 0},
    {"json: 17 nested objects", "POST", SESS, "{auth}" JS, NOBODY, gen_deep_json_objects, 400,
     "bad_request", 0},
    {"json: body over 1 MiB", "POST", SESS, "{auth}" JS, NOBODY, gen_huge_json, 413,
     "payload_too_large", 0},
    {"json: fill value of 3 MiB", "POST", SESS, "{auth}" JS, NOBODY, gen_huge_fill, 413,
     "payload_too_large", 0},

    /* ---- headers ---- */
    {"no Content-Type", "POST", SESS, "{auth}", B("{\"op\":\"observe\"}"), NULL, 415,
     "unsupported_media_type", 0},
    {"Content-Type text/plain", "POST", SESS, "{auth}Content-Type: text/plain\r\n",
     B("{\"op\":\"observe\"}"), NULL, 415, "unsupported_media_type", 0},
    {"Content-Type form-urlencoded", "POST", SESS,
     "{auth}Content-Type: application/x-www-form-urlencoded\r\n", B("op=observe"), NULL, 415,
     "unsupported_media_type", 0},
    {"Content-Type multipart", "POST", SESS,
     "{auth}Content-Type: multipart/form-data; boundary=x\r\n",
     B("--x\r\nContent-Disposition: form-data; name=\"op\"\r\n\r\nobserve\r\n--x--\r\n"), NULL, 415,
     "unsupported_media_type", 0},
    {"Content-Type cut short", "POST", SESS, "{auth}Content-Type: application/\r\n",
     B("{\"op\":\"observe\"}"), NULL, 415, "unsupported_media_type", 0},
    {"Content-Type of 6,000 bytes", "POST", SESS, "{auth}", B("{\"op\":\"observe\"}"),
     gen_long_type, 415, "unsupported_media_type", 0},
    {"JSON type, msgpack body", "POST", SESS, "{auth}" JS, B(M_OBSERVE), NULL, 400, "bad_request",
     0},
    {"msgpack type, JSON body", "POST", SESS, "{auth}" MP, B("{\"op\":\"observe\"}"), NULL, 400,
     "bad_request", 0},
    {"no Authorization", "POST", SESS, JS, B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization Basic", "POST", SESS, "Authorization: Basic YWNtZTphY21l\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization Bearer without a key", "POST", SESS, "Authorization: Bearer\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization Bearer and spaces", "POST", SESS, "Authorization: Bearer     \r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization Token scheme", "POST", SESS, "Authorization: Token {key}\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization: the key alone", "POST", SESS, "Authorization: {key}\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization: key and one byte more", "POST", SESS, "Authorization: Bearer {key}x\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization: one byte and the key", "POST", SESS, "Authorization: Bearer x{key}\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization: the key twice", "POST", SESS, "Authorization: Bearer {key}{key}\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization: a tab for the space", "POST", SESS, "Authorization: Bearer\t{key}\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization: a DEL byte in the key", "POST", SESS, "Authorization: Bearer {key}\x7f\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization: well-formed unknown key", "POST", SESS,
     "Authorization: Bearer rgk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n" JS,
     B("{\"op\":\"observe\"}"), NULL, 401, "unauthorized", 0},
    {"Authorization of 6,000 bytes", "POST", SESS, JS, B("{\"op\":\"observe\"}"), gen_long_auth,
     401, "unauthorized", 0},
    {"a header of 20,000 bytes", "POST", SESS, "{auth}" JS, B("{\"op\":\"observe\"}"),
     gen_long_header, 400, "bad_request", 1},
    {"Content-Length: -1", NULL, NULL, RAW("Content-Length: -1\r\n"), NOBODY, NULL, 400,
     "bad_request", 0},
    {"Content-Length: abc", NULL, NULL, RAW("Content-Length: abc\r\n"), NOBODY, NULL, 400,
     "bad_request", 0},
    {"Content-Length past 2^64", NULL, NULL, RAW("Content-Length: 99999999999999999999\r\n"),
     NOBODY, NULL, 400, "bad_request", 0},
    {"two different Content-Lengths", NULL, NULL,
     RAW("Content-Length: 16\r\nContent-Length: 3\r\n"), B("{\"op\":\"observe\"}"), NULL, 400,
     "bad_request", 0},
    {"Content-Length and chunked", NULL, NULL,
     RAW("Content-Length: 16\r\nTransfer-Encoding: chunked\r\n"), B("{\"op\":\"observe\"}"), NULL,
     400, "bad_request", 0},
    {"chunked with a bad chunk size", NULL, NULL, RAW("Transfer-Encoding: chunked\r\n"),
     B("zz\r\n{\"op\":\"observe\"}\r\n0\r\n\r\n"), NULL, 400, "bad_request", 0},
    {"Content-Length shorter than the body", NULL, NULL, RAW("Content-Length: 5\r\n"),
     B("{\"op\":\"observe\"}"), NULL, 400, "bad_request", 0},
    {"Content-Length of 2 MB declared", NULL, NULL, RAW("Content-Length: 2000000\r\n"),
     B("{\"op\":\"observe\"}"), NULL, 413, "payload_too_large", 0},
    {"chunked body over 1 MiB", NULL, NULL, RAW("Transfer-Encoding: chunked\r\n"), NOBODY,
     gen_chunked_huge, 413, "payload_too_large", 0},
    {"Transfer-Encoding gzip", NULL, NULL, RAW("Transfer-Encoding: gzip\r\n"),
     B("{\"op\":\"observe\"}"), NULL, 400, "bad_request", 1},
    {"a header line without a colon", NULL, NULL, RAW("NoColonHere\r\nContent-Length: 0\r\n"),
     NOBODY, NULL, 400, "bad_request", 1},
    {"garbage for a request line", NULL, NULL, "HELLO THERE\r\n\r\n", NOBODY, NULL, 400,
     "bad_request", 1},
    {"a lowercase method", NULL, NULL,
     "post /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", NOBODY, NULL,
     400, "bad_request", 1},
    {"HTTP/2.0 in an HTTP/1 request line", NULL, NULL,
     "GET /v1/sessions HTTP/2.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n{auth}\r\n", NOBODY,
     NULL, 400, "bad_request", 1},

    /* ---- paths and methods ---- */
    {"unknown route", "GET", "/v1/nope", "{auth}", NOBODY, NULL, 404, "not_found", 0},
    {"the root", "GET", "/", "{auth}", NOBODY, NULL, 404, "not_found", 0},
    {"v2 of the API", "POST", "/v2/sessions", "{auth}" JS, B("{}"), NULL, 404, "not_found", 0},
    {"a path after the session", "POST", SESS "/extra", "{auth}" JS, B("{\"op\":\"observe\"}"),
     NULL, 404, "not_found", 0},
    {"a trailing slash", "POST", SESS "/", "{auth}" JS, B("{\"op\":\"observe\"}"), NULL, 404,
     "not_found", 0},
    {"an empty session id", "POST", "/v1/sessions/", "{auth}" JS, B("{\"op\":\"observe\"}"), NULL,
     404, "not_found", 0},
    {"traversal to /etc/passwd", "GET", "/v1/sessions/../../etc/passwd", "{auth}", NOBODY, NULL,
     404, "not_found", 0},
    {"encoded traversal", "GET", "/v1/sessions/..%2f..%2fetc%2fpasswd", "{auth}", NOBODY, NULL, 404,
     "not_found", 0},
    {"encoded dots", "POST", "/v1/sessions/%2e%2e", "{auth}" JS, B("{\"op\":\"observe\"}"), NULL,
     404, "not_found", 0},
    {"traversal into the other tenant's session", "POST", SESS "/../{sidB}", "{auth}" JS,
     B("{\"op\":\"observe\"}"), NULL, 404, "not_found", 0},
    {"an encoded slash after the session", "POST", SESS "%2fextra", "{auth}" JS,
     B("{\"op\":\"observe\"}"), NULL, 404, "not_found", 0},
    {"an encoded NUL in the session id", "POST", SESS "%00", "{auth}" JS, B("{\"op\":\"observe\"}"),
     NULL, 400, "bad_request", 1},
    {"an encoded space after the session id", "POST", SESS "%20", "{auth}" JS,
     B("{\"op\":\"observe\"}"), NULL, 404, "not_found", 0},
    {"a session id of 301 bytes", "POST", "", "{auth}" JS, B("{\"op\":\"observe\"}"), gen_long_sid,
     404, "not_found", 0},
    {"a path of 12,000 bytes", "POST", "", "{auth}" JS, B("{\"op\":\"observe\"}"), gen_long_path,
     400, "bad_request", 1},
    {"quotes and brackets for a session id", "POST", "/v1/sessions/s%21%27%22%3C%3E%3B", "{auth}"
     JS, B("{\"op\":\"observe\"}"), NULL, 404, "not_found", 0},
    {"a non-ASCII session id", "POST", "/v1/sessions/s%C3%A9t%C3%A9", "{auth}" JS,
     B("{\"op\":\"observe\"}"), NULL, 404, "not_found", 0},
    {"a Redis hash tag for a session id", "POST", "/v1/sessions/x%7D:meta%7B", "{auth}" JS,
     B("{\"op\":\"observe\"}"), NULL, 404, "not_found", 0},
    {"a glob for a session id", "POST", "/v1/sessions/*", "{auth}" JS,
     B("{\"op\":\"session.info\"}"), NULL, 404, "not_found", 0},
    {"a well-formed unknown session id", "POST", "/v1/sessions/s000000000000000000000000000",
     "{auth}" JS, B("{\"op\":\"session.info\"}"), NULL, 404, "not_found", 0},
    {"another tenant's session: observe", "POST", "/v1/sessions/{sidB}", "{auth}" JS,
     B("{\"op\":\"observe\"}"), NULL, 404, "not_found", 0},
    {"another tenant's session: navigate", "POST", "/v1/sessions/{sidB}", "{auth}" JS,
     B("{\"op\":\"navigate\",\"args\":{\"url\":\"{url}/list.html\"}}"), NULL, 404, "not_found", 0},
    {"another tenant's session: close", "POST", "/v1/sessions/{sidB}", "{auth}" JS,
     B("{\"op\":\"session.close\"}"), NULL, 404, "not_found", 0},
    {"another tenant's session: DELETE", "DELETE", "/v1/sessions/{sidB}", "{auth}", NOBODY, NULL,
     404, "not_found", 0},
    {"another tenant's key on this session", "POST", SESS, "{authB}" JS, B("{\"op\":\"observe\"}"),
     NULL, 404, "not_found", 0},
    {"GET on a session", "GET", SESS, "{auth}", NOBODY, NULL, 400, "bad_request", 0},
    {"PUT on a session", "PUT", SESS, "{auth}" JS, B("{\"op\":\"observe\"}"), NULL, 400,
     "bad_request", 0},
    {"PATCH on the sessions", "PATCH", "/v1/sessions", "{auth}" JS, B("{}"), NULL, 400,
     "bad_request", 0},
    {"DELETE on the sessions", "DELETE", "/v1/sessions", "{auth}", NOBODY, NULL, 400, "bad_request",
     0},
    {"an invented method", "FROB", SESS, "{auth}", NOBODY, NULL, 400, "bad_request", 0},
    {"TRACE", "TRACE", SESS, "{auth}", NOBODY, NULL, 400, "bad_request", 0},
    {"POST on /healthz", "POST", "/healthz", JS, B("{}"), NULL, 400, "bad_request", 0},
    {"DELETE on /metrics", "DELETE", "/metrics", "", NOBODY, NULL, 400, "bad_request", 0},
    {"the WebSocket path without an Upgrade", "GET", SESS "/ws", "{auth}", NOBODY, NULL, 400,
     "bad_request", 0},
    {"the WebSocket path with Upgrade: h2c", "GET", SESS "/ws",
     "{auth}Connection: Upgrade\r\nUpgrade: h2c\r\n", NOBODY, NULL, 400, "bad_request", 0},
    {"a WebSocket upgrade without a key", "GET", SESS "/ws",
     "{auth}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n", NOBODY,
     NULL, 400, "bad_request", 0},
    {"a POST to the WebSocket path", "POST", SESS "/ws", "{auth}" JS, B("{\"op\":\"observe\"}"),
     NULL, 400, "bad_request", 0},

    /* ---- targets ---- */
    J("target: empty", CLICK("\"\""), 400, "bad_request"),
    {"target: css of 5,000 bytes", "POST", SESS, "{auth}" JS, NOBODY, gen_long_target, 400,
     "bad_request", 0},
    {"target: ref of 3,000 bytes", "POST", SESS, "{auth}" JS, NOBODY, gen_long_ref, 400,
     "bad_request", 0},
    {"target: bad css quoting 2,000 two-byte characters", "POST", SESS, "{auth}" JS, NOBODY,
     gen_long_bad_css, 400, "bad_request", 0},
    J("target: ref of 13 characters", CLICK("\"@abcdefghijklm\""), 400, "bad_request"),
    J("target: ref in upper case", CLICK("\"@COUNTER\""), 400, "bad_request"),
    J("target: ref with a non-ASCII letter", CLICK("\"@caf\\u00e9\""), 400, "bad_request"),
    J("target: ref with a control character", CLICK("\"@count\\u0001er\""), 400, "bad_request"),
    J("target: ref with a newline", CLICK("\"@counter\\n\""), 400, "bad_request"),
    J("target: ref with an RTL override", CLICK("\"@count\\u202eer\""), 400, "bad_request"),
    J("target: ref suffix ~0", CLICK("\"@counter~0\""), 400, "bad_request"),
    J("target: ref suffix ~ alone", CLICK("\"@counter~\""), 400, "bad_request"),
    J("target: ref suffix ~-1", CLICK("\"@counter~-1\""), 400, "bad_request"),
    J("target: @ alone", CLICK("\"@\""), 400, "bad_request"),
    J("target: @@", CLICK("\"@@counter\""), 400, "bad_request"),
    J("target: leading space", CLICK("\" @counter\""), 400, "bad_request"),
    J("target: \\u0000", CLICK("\"\\u0000\""), 400, "bad_request"),
    J("target: css: and nothing", CLICK("\"css:\""), 400, "bad_request"),
    J("target: css unbalanced brackets", CLICK("\"css:[[[\""), 400, "bad_request"),
    J("target: css with script", CLICK("\"css:#counter'\\\"<script>alert(1)</script>\""), 400,
      "bad_request"),
    J("target: css of one comma", CLICK("\"css:,\""), 400, "bad_request"),
    J("target: xpath: and nothing", CLICK("\"xpath:\""), 400, "bad_request"),
    J("target: xpath unbalanced", CLICK("\"xpath://button[((\""), 400, "bad_request"),
    J("target: xpath with a function call", CLICK("\"xpath:document()\""), 400, "bad_request"),
    J("target: text: and nothing", CLICK("\"text:\""), 400, "bad_request"),
    J("target: text~: and nothing", CLICK("\"text~:\""), 400, "bad_request"),
    J("target: role: and nothing", CLICK("\"role:\""), 400, "bad_request"),
    J("target: role name unclosed", CLICK("\"role:button[name=\\\"Count\""), 400, "bad_request"),
    J("target: role filter misspelt", CLICK("\"role:button[nam=\\\"Count\\\"]\""), 400,
      "bad_request"),
    J("target: role filter and more", CLICK("\"role:button[name=\\\"Count\\\"]x\""), 400,
      "bad_request"),
    J("target: role of digits", CLICK("\"role:123\""), 400, "bad_request"),
    J("target: unknown kind id:", CLICK("\"id:counter\""), 400, "bad_request"),
    J("target: prefix in upper case", CLICK("\"CSS:#counter\""), 400, "bad_request"),
    J("target: a URL", CLICK("\"javascript:alert(1)\""), 400, "bad_request"),
    J("target: a number", CLICK("7"), 400, "bad_request"),
    J("target: null", CLICK("null"), 400, "bad_request"),
    J("target: an array", CLICK("[\"@counter\"]"), 400, "bad_request"),
    J("target: a map", CLICK("{\"css\":\"#counter\"}"), 400, "bad_request"),
    J("target: true", CLICK("true"), 400, "bad_request"),
    J("target: text with an RTL override", CLICK("\"text:\\u202eCount\""), 422, "no_match"),
    J("target: text with a zero-width space", CLICK("\"text:Count\\u200b\""), 422, "no_match"),
    J("target: a BOM before the text", CLICK("\"text:\\ufeffCount\""), 422, "no_match"),
    J("nth: a string", "{\"op\":\"click\",\"args\":{\"target\":\"text:Same\",\"nth\":\"1\"}}", 400,
      "bad_request"),
    J("nth: a fraction", "{\"op\":\"click\",\"args\":{\"target\":\"text:Same\",\"nth\":1.5}}", 400,
      "bad_request"),
    J("nth: 1e300", "{\"op\":\"click\",\"args\":{\"target\":\"text:Same\",\"nth\":1e300}}", 400,
      "bad_request"),
    J("nth: true", "{\"op\":\"click\",\"args\":{\"target\":\"text:Same\",\"nth\":true}}", 400,
      "bad_request"),

    /* ---- args ---- */
    J("timeout_ms: -1", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":-1}}", 400, "bad_request"),
    J("timeout_ms: 0", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":0}}", 400, "bad_request"),
    J("timeout_ms: 600001", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":600001}}", 400,
      "bad_request"),
    J("timeout_ms: 1e308", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":1e308}}", 400,
      "bad_request"),
    J("timeout_ms: a string", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":\"5000\"}}", 400,
      "bad_request"),
    J("timeout_ms: null", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":null}}", 400,
      "bad_request"),
    J("navigate: url a number", "{\"op\":\"navigate\",\"args\":{\"url\":123}}", 400, "bad_request"),
    J("navigate: no url", "{\"op\":\"navigate\"}", 400, "bad_request"),
    J("navigate: wait unknown",
      "{\"op\":\"navigate\",\"args\":{\"url\":\"{url}/form.html\",\"wait\":\"sometimes\"}}", 400,
      "bad_request"),
    J("navigate: wait in upper case",
      "{\"op\":\"navigate\",\"args\":{\"url\":\"{url}/form.html\",\"wait\":\"LOAD\"}}", 400,
      "bad_request"),
    J("navigate: javascript: URL",
      "{\"op\":\"navigate\",\"args\":{\"url\":\"javascript:alert(document.cookie)\"}}", 403,
      "blocked_url"),
    J("navigate: file: URL", "{\"op\":\"navigate\",\"args\":{\"url\":\"file:///etc/passwd\"}}", 403,
      "blocked_url"),
    J("navigate: data: URL",
      "{\"op\":\"navigate\",\"args\":{\"url\":\"data:text/html,<h1>hi</h1>\"}}", 403,
      "blocked_url"),
    J("navigate: empty url", "{\"op\":\"navigate\",\"args\":{\"url\":\"\"}}", 400, "bad_request"),
    J("navigate: url of spaces", "{\"op\":\"navigate\",\"args\":{\"url\":\"   \"}}", 400,
      "bad_request"),
    J("click: click_count 0",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"click_count\":0}}", 400,
      "bad_request"),
    J("click: click_count 4",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"click_count\":4}}", 400,
      "bad_request"),
    J("click: click_count a string",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"click_count\":\"2\"}}", 400,
      "bad_request"),
    J("click: button unknown",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"button\":\"top\"}}", 400,
      "bad_request"),
    J("click: modifiers unknown",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"modifiers\":[\"Hyper\"]}}", 400,
      "bad_request"),
    J("click: modifiers a string",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"modifiers\":\"Shift\"}}", 400,
      "bad_request"),
    J("click: modifiers numbers",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"modifiers\":[1]}}", 400,
      "bad_request"),
    J("click: an unknown argument",
      "{\"op\":\"click\",\"args\":{\"target\":\"@counter\",\"force\":true}}", 400, "bad_request"),
    J("type: delay_ms -1",
      "{\"op\":\"type\",\"args\":{\"target\":\"css:#q\",\"text\":\"x\",\"delay_ms\":-1}}", 400,
      "bad_request"),
    J("type: delay_ms 1001",
      "{\"op\":\"type\",\"args\":{\"target\":\"css:#q\",\"text\":\"x\",\"delay_ms\":1001}}", 400,
      "bad_request"),
    J("type: text a number", "{\"op\":\"type\",\"args\":{\"target\":\"css:#q\",\"text\":5}}", 400,
      "bad_request"),
    J("fill: value a number", "{\"op\":\"fill\",\"args\":{\"target\":\"css:#q\",\"value\":123}}",
      400, "bad_request"),
    J("fill: value null", "{\"op\":\"fill\",\"args\":{\"target\":\"css:#q\",\"value\":null}}", 400,
      "bad_request"),
    J("fill: no value", "{\"op\":\"fill\",\"args\":{\"target\":\"css:#q\"}}", 400, "bad_request"),
    J("select: values numbers", "{\"op\":\"select\",\"args\":{\"target\":\"css:#color\","
      "\"values\":[1,2]}}", 400, "bad_request"),
    {"select: 65 values", "POST", SESS, "{auth}" JS, NOBODY, gen_many_values, 400, "bad_request",
     0},
    {"select: 200,001 values", "POST", SESS, "{auth}" JS, NOBODY, gen_200k_values, 400,
     "bad_request", 0},
    J("observe: format in upper case", "{\"op\":\"observe\",\"args\":{\"format\":\"TEXT\"}}", 400,
      "bad_request"),
    J("observe: max_elements 0", "{\"op\":\"observe\",\"args\":{\"max_elements\":0}}", 400,
      "bad_request"),
    J("observe: max_elements -5", "{\"op\":\"observe\",\"args\":{\"max_elements\":-5}}", 400,
      "bad_request"),
    J("observe: diff a string", "{\"op\":\"observe\",\"args\":{\"diff\":\"yes\"}}", 400,
      "bad_request"),
    J("observe: diff 1", "{\"op\":\"observe\",\"args\":{\"diff\":1}}", 400, "bad_request"),
    J("observe: mode unknown", "{\"op\":\"observe\",\"args\":{\"mode\":\"brief\"}}", 400,
      "bad_request"),
    J("observe: mode a number", "{\"op\":\"observe\",\"args\":{\"mode\":1}}", 400,
      "bad_request"),
    J("observe: depth 0", "{\"op\":\"observe\",\"args\":{\"depth\":0}}", 400, "bad_request"),
    J("observe: depth a string", "{\"op\":\"observe\",\"args\":{\"depth\":\"2\"}}", 400,
      "bad_request"),
    J("observe: scope not CSS", "{\"op\":\"observe\",\"args\":{\"scope\":\"css:[[[\"}}", 400,
      "bad_request"),
    J("observe: scope empty", "{\"op\":\"observe\",\"args\":{\"scope\":\"\"}}", 400, "bad_request"),
    J("scroll: dx a string", "{\"op\":\"scroll\",\"args\":{\"dx\":\"10\"}}", 400, "bad_request"),
    J("scroll: dy 1e20", "{\"op\":\"scroll\",\"args\":{\"dy\":1e20}}", 400, "bad_request"),
    J("scroll: to unknown", "{\"op\":\"scroll\",\"args\":{\"to\":\"middle\"}}", 400, "bad_request"),
    J("screenshot: format gif", "{\"op\":\"screenshot\",\"args\":{\"format\":\"gif\"}}", 400,
      "bad_request"),
    J("screenshot: quality a string",
      "{\"op\":\"screenshot\",\"args\":{\"format\":\"jpeg\",\"quality\":\"high\"}}", 400,
      "bad_request"),
    J("read: what unknown", "{\"op\":\"read\",\"args\":{\"what\":\"cookies\"}}", 400,
      "bad_request"),
    J("wait: state unknown",
      "{\"op\":\"wait\",\"args\":{\"target\":\"@counter\",\"state\":\"gone\"}}", 400,
      "bad_request"),
    J("wait: no condition", "{\"op\":\"wait\",\"args\":{}}", 400, "bad_request"),
    J("press: key unknown", "{\"op\":\"press\",\"args\":{\"key\":\"Hyper+x\"}}", 400,
      "bad_request"),
    J("press: key empty", "{\"op\":\"press\",\"args\":{\"key\":\"\"}}", 400, "bad_request"),
    J("press: modifier without a key", "{\"op\":\"press\",\"args\":{\"key\":\"Control+\"}}", 400,
      "bad_request"),
    J("press: a non-ASCII key", "{\"op\":\"press\",\"args\":{\"key\":\"\\u00c4\"}}", 400,
      "bad_request"),
    {"press: key of 10,000 bytes", "POST", SESS, "{auth}" JS, NOBODY, gen_long_key_press, 400,
     "bad_request", 0},
    J("args: an array", "{\"op\":\"observe\",\"args\":[]}", 400, "bad_request"),
    J("args: a string", "{\"op\":\"observe\",\"args\":\"format=text\"}", 400, "bad_request"),
    J("args: null", "{\"op\":\"observe\",\"args\":null}", 400, "bad_request"),
    J("id: -1", "{\"op\":\"observe\",\"id\":-1}", 400, "bad_request"),
    J("id: 1.5", "{\"op\":\"observe\",\"id\":1.5}", 400, "bad_request"),
    J("id: a map", "{\"op\":\"observe\",\"id\":{}}", 400, "bad_request"),
    J("id: true", "{\"op\":\"observe\",\"id\":true}", 400, "bad_request"),
    J("idempotency_key: empty", "{\"op\":\"observe\",\"idempotency_key\":\"\"}", 400,
      "bad_request"),
    J("idempotency_key: 65 bytes", "{\"op\":\"observe\",\"idempotency_key\":"
      "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", 400, "bad_request"),
    J("idempotency_key: a number", "{\"op\":\"observe\",\"idempotency_key\":7}", 400,
      "bad_request"),
    J("an unknown key in the map", "{\"op\":\"observe\",\"colour\":\"red\"}", 400, "bad_request"),
    {"an unknown argument with a cut euro sign", "POST", SESS, "{auth}" JS, NOBODY,
     gen_long_unicode_key, 400, "bad_request", 0},

    /* ---- ops ---- */
    J("op: missing", "{\"args\":{}}", 400, "bad_request"),
    J("op: null", "{\"op\":null}", 400, "bad_request"),
    J("op: a number", "{\"op\":42}", 400, "bad_request"),
    J("op: empty", "{\"op\":\"\"}", 400, "bad_request"),
    J("op: unknown", "{\"op\":\"frobnicate\"}", 400, "bad_request"),
    J("op: capitalised", "{\"op\":\"Observe\"}", 400, "bad_request"),
    J("op: upper case", "{\"op\":\"OBSERVE\"}", 400, "bad_request"),
    J("op: trailing space", "{\"op\":\"observe \"}", 400, "bad_request"),
    J("op: session.Info", "{\"op\":\"session.Info\"}", 400, "bad_request"),
    J("op: an RTL override inside", "{\"op\":\"obs\\u202eerve\"}", 400, "bad_request"),
    J("op: fullwidth letters", "{\"op\":\"\\uff4f\\uff42\\uff53\\uff45\\uff52\\uff56\\uff45\"}",
      400, "bad_request"),
    {"op: unknown, 81 bytes of accents", "POST", SESS, "{auth}" JS, NOBODY, gen_long_unicode_op,
     400, "bad_request", 0},
    J("op: session.create on a session", "{\"op\":\"session.create\"}", 400, "bad_request"),
    J("op: subscribe over HTTP", "{\"op\":\"subscribe\",\"args\":{\"events\":[\"snapshot\"]}}", 400,
      "bad_request"),
    J("act: steps not maps", "{\"op\":\"act\",\"args\":{\"steps\":[1,2]}}", 400, "bad_request"),
    J("act: steps a string", "{\"op\":\"act\",\"args\":{\"steps\":\"click\"}}", 400, "bad_request"),
    {"act: 101 steps", "POST", SESS, "{auth}" JS, NOBODY, gen_many_steps, 400, "bad_request", 0},
    J("eval: expression a number", "{\"op\":\"eval\",\"args\":{\"expression\":5}}", 400,
      "bad_request"),
    {"eval for a tenant without it", "POST", "/v1/sessions/{sidB}", "{authB}" JS,
     B("{\"op\":\"eval\",\"args\":{\"expression\":\"location.href='about:blank'\"}}"), NULL, 403,
     "forbidden", 0},
    {"create: op navigate", "POST", "/v1/sessions", "{auth}" JS,
     B("{\"op\":\"navigate\",\"args\":{\"url\":\"{url}/form.html\"}}"), NULL, 400, "bad_request",
     0},
    {"create: viewport too wide", "POST", "/v1/sessions", "{auth}" JS,
     B("{\"args\":{\"viewport\":{\"width\":99999,\"height\":800}}}"), NULL, 400, "bad_request", 0},
    {"create: viewport width a string", "POST", "/v1/sessions", "{auth}" JS,
     B("{\"args\":{\"viewport\":{\"width\":\"800\",\"height\":600}}}"), NULL, 400, "bad_request",
     0},
    {"create: viewport with depth", "POST", "/v1/sessions", "{auth}" JS,
     B("{\"args\":{\"viewport\":{\"width\":800,\"depth\":3}}}"), NULL, 400, "bad_request", 0},
    {"create: viewport NaN", "POST", "/v1/sessions", "{auth}" MP, B("\x81" M_ARGS "\x81\xa8"
     "viewport" "\x81\xa5" "width" "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00"), NULL, 400,
     "bad_request", 0},
    {"create: url a number", "POST", "/v1/sessions", "{auth}" JS, B("{\"args\":{\"url\":5}}"), NULL,
     400, "bad_request", 0},
    {"create: javascript: url", "POST", "/v1/sessions", "{auth}" JS,
     B("{\"args\":{\"url\":\"javascript:alert(1)\"}}"), NULL, 403, "blocked_url", 0},
    {"create: an unknown time zone", "POST", "/v1/sessions", "{auth}" JS,
     B("{\"args\":{\"timezone\":\"Mars/Olympus_Mons\"}}"), NULL, 400, "bad_request", 0},
    {"create: an unknown locale", "POST", "/v1/sessions", "{auth}" JS,
     B("{\"args\":{\"locale\":\"@@\\u202e!!\"}}"), NULL, 400, "bad_request", 0},
};
// clang-format on

#define N_ROWS (sizeof rows / sizeof rows[0])

/* The error whose code is name, or 0. */
static int err_of(const char *name)
{
    for (int e = -1; e >= RG_ERR_MIN; e--)
        if (!strcmp(rg_err_code(e), name))
            return e;
    return 0;
}

/* The reply map's format must follow the request's (JSON or msgpack type); 415 is always JSON. */
static const char *format_wanted(const char *head, int status)
{
    if (status == 415)
        return "application/json";
    if (strstr(head, "Content-Type: application/json"))
        return "application/json";
    if (strstr(head, "Content-Type: application/msgpack"))
        return "application/msgpack";
    return NULL;
}

/* Runs row w; 0 when the answer is the one wanted, else -1 with the reason in why. */
static int run_row(const row *w, char *why, size_t len)
{
    rg_buf path, head, body;
    rg_buf_init(&path);
    rg_buf_init(&head);
    rg_buf_init(&body);
    if (w->path)
        fill_in(&path, w->path, strlen(w->path));
    fill_in(&head, w->head, strlen(w->head));
    if (w->body)
        fill_in(&body, w->body, w->len);
    if (w->gen)
        w->gen(&path, &head, &body);
    resp r;
    int rc = request(w->method, path.data ? path.data : "", head.data ? head.data : "", body.data,
                     body.len, &r);
    int out = -1;
    cJSON *v = NULL;
    const char *fmt = w->any_format ? NULL : format_wanted(head.data ? head.data : "", w->status);
    char dec[160] = "";
    if (rc < 0) {
        snprintf(why, len, "no answer (or not HTTP)");
    } else if (!(v = reply_of(&r, dec, sizeof dec))) {
        snprintf(why, len, "%d with a body that is not a reply map (%s): %.200s", r.status, dec,
                 r.body.data ? r.body.data : "");
    } else {
        const cJSON *e = get(v, "error");
        const cJSON *code = get(e, "code"), *kind = get(e, "kind"), *msg = get(e, "message");
        int want = err_of(w->code);
        const char *want_kind = rg_err_transient(want) ? "transient" : "permanent";
        char text[700];
        if (r.status != w->status || !cJSON_IsString(code) || strcmp(code->valuestring, w->code))
            snprintf(why, len, "%d %s", r.status, show(v, text, sizeof text));
        else if (!cJSON_IsFalse(get(v, "ok")) || !cJSON_IsString(kind) ||
                 strcmp(kind->valuestring, want_kind) || !cJSON_IsString(msg) ||
                 !*msg->valuestring || !cJSON_IsNumber(get(v, "ms")))
            snprintf(why, len, "not a whole error reply: %s", show(v, text, sizeof text));
        else if (fmt && strncasecmp(r.content_type, fmt, strlen(fmt)))
            snprintf(why, len, "answered in %s, wanted %s", r.content_type, fmt);
        else
            out = 0;
    }
    cJSON_Delete(v);
    rg_buf_destroy(&r.body);
    rg_buf_destroy(&path);
    rg_buf_destroy(&head);
    rg_buf_destroy(&body);
    return out;
}

static void test_bad_input_table(void **state)
{
    (void)state;
    /* The table itself: each row's status is its code's. */
    for (size_t i = 0; i < N_ROWS; i++) {
        int e = err_of(rows[i].code);
        if (!e || rg_err_http(e) != rows[i].status)
            fail_msg("row \"%s\": %d is not the status of %s", rows[i].name, rows[i].status,
                     rows[i].code);
    }
    int sessions = acme_sessions();
    char *before = fingerprint();
    char *url_b = url_of_b();
    int failed = 0;
    for (size_t i = 0; i < N_ROWS; i++) {
        char why[1024];
        if (run_row(&rows[i], why, sizeof why) < 0) {
            fprintf(stderr, "FAIL row %zu \"%s\": %s\n", i, rows[i].name, why);
            failed++;
        }
        if (!workers_alive())
            fail_msg("a worker died after row %zu \"%s\"", i, rows[i].name);
        char *now = fingerprint();
        if (strcmp(now, before)) {
            fprintf(stderr, "FAIL row %zu \"%s\" changed the page: %s -> %s\n", i, rows[i].name,
                    before, now);
            failed++;
            free(before);
            before = now;
        } else {
            free(now);
        }
    }
    free(before);
    /* Nothing was created, and the other tenant's session is where it was. */
    assert_int_equal(acme_sessions(), sessions);
    char *url_b2 = url_of_b();
    assert_string_equal(url_b2, url_b);
    free(url_b);
    free(url_b2);
    if (failed)
        fail_msg("%d of %zu rows got a wrong answer (see above)", failed, N_ROWS);
    fprintf(stderr, "bad input table: %zu rows\n", N_ROWS);
}

/* ---- WebSocket ---- */

typedef struct ws_row {
    const char *name;
    int text;
    const char *data;
    size_t len;
    gen_fn gen;
    const char *code; /* NULL: the connection must close */
    int has_id;       /* the reply echoes id 7 */
} ws_row;

static void gen_ws_deep(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_append(body, B("\x83\xa2"
                          "id"
                          "\x07" M_OP "\xa7"
                          "observe" M_ARGS "\x81\xa5"
                          "scope"));
    rep(body, "\x91", 10000);
    rg_buf_append(body, "\xc0", 1);
}

static void gen_ws_huge(rg_buf *path, rg_buf *head, rg_buf *body)
{
    (void)path, (void)head;
    rg_buf_append(body, B("\x83\xa2"
                          "id"
                          "\x07" M_OP "\xa4"
                          "fill" M_ARGS "\x82\xa6"
                          "target"
                          "\xa6"
                          "css:#q"
                          "\xa5"
                          "value"
                          "\xdb\x00\x10\x00\x10"));
    rep(body, "z", (1u << 20) + 16);
}

// clang-format off
static const ws_row ws_rows[] = {
    {"binary garbage", 0, B("\xc1\xff\x00\x13\x37"), NULL, "bad_request", 0},
    {"msgpack cut short", 0, B("\x83\xa2" "id" "\x07" M_OP), NULL, "bad_request", 0},
    {"msgpack array", 0, B("\x92\x07\xa7" "observe"), NULL, "bad_request", 0},
    {"a string of 4 GiB declared", 0, B("\x82\xa2" "id" "\x07" M_OP "\xdb\xff\xff\xff\xff"), NULL,
     "bad_request", 0},
    {"NaN as the id", 0, B("\x82\xa2" "id" "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00" M_OP "\xa7"
     "observe"), NULL, "bad_request", 0},
    {"no id", 0, B(M_OBSERVE), NULL, "bad_request", 0},
    {"an empty binary frame", 0, "", 0, NULL, "bad_request", 0},
    {"unknown op", 0, B("\x82\xa2" "id" "\x07" M_OP "\xaa" "frobnicate"), NULL, "bad_request", 1},
    {"op in upper case", 0, B("\x82\xa2" "id" "\x07" M_OP "\xa7" "OBSERVE"), NULL, "bad_request",
     1},
    {"an unknown target kind", 0, B("\x83\xa2" "id" "\x07" M_OP "\xa5" "click" M_ARGS "\x81\xa6"
     "target" "\xa5" "id:xy"), NULL, "bad_request", 1},
    {"10,000 nested arrays", 0, NOBODY, gen_ws_deep, "bad_request", 0},
    {"a frame over 1 MiB", 0, NOBODY, gen_ws_huge, "payload_too_large", 0},
    {"JSON cut short", 1, B("{\"id\":7,\"op\":"), NULL, "bad_request", 0},
    {"JSON with a lone surrogate", 1, B("{\"id\":7,\"op\":\"\\ud800\"}"), NULL, "bad_request", 0},
    {"JSON with \\u0000", 1, B("{\"id\":7,\"op\":\"observe\\u0000\"}"), NULL, "bad_request", 0},
    {"JSON navigate to javascript:", 1,
     B("{\"id\":7,\"op\":\"navigate\",\"args\":{\"url\":\"javascript:alert(1)\"}}"), NULL,
     "blocked_url", 1},
    {"a text frame of invalid UTF-8", 1, B("{\"id\":7,\"op\":\"\xff\xfe\"}"), NULL, NULL, 0},
    /* the id comes back whatever else is wrong in the map, wherever it stands */
    {"JSON op a number before the id", 1, B("{\"op\":7,\"id\":7}"), NULL, "bad_request", 1},
    {"JSON unknown key before the id", 1, B("{\"colour\":1,\"id\":7,\"op\":\"observe\"}"), NULL,
     "bad_request", 1},
    {"JSON args a list before the id", 1, B("{\"op\":\"observe\",\"args\":[],\"id\":7}"), NULL,
     "bad_request", 1},
};
// clang-format on

static wsc *ws_open_a(void)
{
    char path[96], h[160];
    snprintf(path, sizeof path, "/v1/sessions/%s/ws", sid_a);
    snprintf(h, sizeof h, "%s", gw.auth[0]);
    int status;
    wsc *w = wsc_open(stack_port(gw.st), path, h, &status);
    if (!w)
        fail_msg("WebSocket: HTTP %d", status);
    return w;
}

/* A frame in, one reply out: the reply map (caller frees), or NULL when closed. */
static cJSON *ws_call(wsc *w, const void *data, size_t len, int text, int *closed)
{
    assert_int_equal(wsc_send(w, data, len, text), 0);
    rg_buf in;
    rg_buf_init(&in);
    int op = wsc_recv(w, &in, IO_TIMEOUT_MS);
    *closed = op == 8 || op < 0;
    cJSON *v = NULL;
    char err[128];
    if (op == 1)
        wire_json_decode(in.data ? in.data : "", in.len, &v, err, sizeof err);
    else if (op == 2)
        wire_mp_decode(in.data, in.len, &v, err, sizeof err);
    if ((op == 1 || op == 2) && !v)
        fail_msg("a frame that is not a reply map (%s)", err);
    rg_buf_destroy(&in);
    return v;
}

static void assert_ws_still_works(wsc *w)
{
    const char *info = "{\"id\":99,\"op\":\"session.info\"}";
    int closed;
    cJSON *v = ws_call(w, info, strlen(info), 1, &closed);
    assert_non_null(v);
    assert_true(cJSON_IsTrue(get(v, "ok")));
    assert_int_equal(get(v, "id")->valueint, 99);
    cJSON_Delete(v);
}

static void test_websocket_bad_frames(void **state)
{
    (void)state;
    char *before = fingerprint();
    wsc *w = ws_open_a();
    int failed = 0;
    for (size_t i = 0; i < sizeof ws_rows / sizeof *ws_rows; i++) {
        const ws_row *x = &ws_rows[i];
        rg_buf body;
        rg_buf_init(&body);
        rg_buf_append(&body, x->data ? x->data : "", x->len);
        if (x->gen)
            x->gen(NULL, NULL, &body);
        int closed;
        cJSON *v = ws_call(w, body.data ? body.data : "", body.len, x->text, &closed);
        rg_buf_destroy(&body);
        const cJSON *code = get(get(v, "error"), "code"), *id = get(v, "id");
        if (!x->code) {
            if (!closed) {
                fprintf(stderr, "FAIL ws row \"%s\": not closed\n", x->name);
                failed++;
            }
        } else if (!v || !cJSON_IsString(code) || strcmp(code->valuestring, x->code) ||
                   (x->has_id ? !cJSON_IsNumber(id) || id->valueint != 7 : id != NULL)) {
            char text[700];
            fprintf(stderr, "FAIL ws row \"%s\": %s\n", x->name,
                    v ? show(v, text, sizeof text) : "closed");
            failed++;
        }
        cJSON_Delete(v);
        if (closed) {
            wsc_close(w);
            w = ws_open_a();
        }
        assert_true(workers_alive());
        assert_ws_still_works(w); /* the connection (or its successor) still serves */
    }
    wsc_close(w);
    /* Other sessions' WebSockets: refused with not_found, then closed. */
    static const char *paths[] = {"/v1/sessions/{sidB}/ws", "/v1/sessions/S%21%21/ws",
                                  "/v1/sessions/s000000000000000000000000000/ws"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        rg_buf p;
        rg_buf_init(&p);
        fill_in(&p, paths[i], strlen(paths[i]));
        int status;
        wsc *o = wsc_open(stack_port(gw.st), p.data, gw.auth[0], &status);
        assert_non_null(o);
        rg_buf in;
        rg_buf_init(&in);
        assert_int_equal(wsc_recv(o, &in, IO_TIMEOUT_MS), 2);
        cJSON *v = NULL;
        char err[64];
        assert_int_equal(wire_mp_decode(in.data, in.len, &v, err, sizeof err), 0);
        if (strcmp(cJSON_GetStringValue(get(get(v, "error"), "code")), "not_found")) {
            char text[700];
            fprintf(stderr, "FAIL ws %s: %s\n", p.data, show(v, text, sizeof text));
            failed++;
        }
        cJSON_Delete(v);
        rg_buf_reset(&in);
        assert_int_equal(wsc_recv(o, &in, IO_TIMEOUT_MS), 8);
        /* the close frame says it too: 1008, "not_found: ..." */
        int code = in.len >= 2 ? (unsigned char)in.data[0] << 8 | (unsigned char)in.data[1] : 0;
        if (in.len < 2 + 11 || code != 1008 || memcmp(in.data + 2, "not_found: ", 11)) {
            fprintf(stderr, "FAIL ws %s: close frame %.*s\n", p.data, (int)in.len, in.data);
            failed++;
        }
        rg_buf_destroy(&in);
        rg_buf_destroy(&p);
        wsc_close(o);
    }
    char *after = fingerprint();
    assert_string_equal(after, before);
    free(before);
    free(after);
    if (failed)
        fail_msg("%d WebSocket rows got a wrong answer (see above)", failed);
}

/* Frames that break RFC 6455 itself, written by hand: the server must close. */
static void test_websocket_broken_framing(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *bytes;
        size_t len;
    } frames[] = {
        {"reserved opcode 3", B("\x83\x80\x01\x02\x03\x04")},
        {"RSV1 set without an extension", B("\xc2\x80\x01\x02\x03\x04")},
        {"a continuation with nothing to continue", B("\x80\x81\x01\x02\x03\x04\x05")},
        {"a ping of 126 bytes", B("\x89\xfe\x00\x7e\x01\x02\x03\x04")},
        {"a fragmented close", B("\x08\x80\x01\x02\x03\x04")},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof frames / sizeof *frames; i++) {
        int fd = net_dial(stack_port(gw.st));
        assert_true(fd >= 0);
        rg_buf req;
        rg_buf_init(&req);
        rg_buf_printf(&req,
                      "GET /v1/sessions/%s/ws HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      "Sec-WebSocket-Version: 13\r\n%s\r\n",
                      sid_a, gw.auth[0]);
        assert_true(send(fd, req.data, req.len, MSG_NOSIGNAL) == (ssize_t)req.len);
        rg_buf_destroy(&req);
        rg_buf in;
        rg_buf_init(&in);
        while (!in.data || !strstr(in.data, "\r\n\r\n")) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            char c;
            assert_true(poll(&pf, 1, IO_TIMEOUT_MS) > 0);
            assert_true(recv(fd, &c, 1, 0) == 1);
            rg_buf_append(&in, &c, 1);
        }
        assert_non_null(strstr(in.data, " 101 "));
        send(fd, frames[i].bytes, frames[i].len, MSG_NOSIGNAL);
        /* Anything may come first (a close frame); then the end of the stream. */
        int closed = 0;
        for (int64_t end = rg_now_ms() + 20000; !closed && rg_now_ms() < end;) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            if (poll(&pf, 1, (int)(end - rg_now_ms())) <= 0)
                break;
            char tmp[512];
            ssize_t r = recv(fd, tmp, sizeof tmp, 0);
            closed = r <= 0;
        }
        close(fd);
        rg_buf_destroy(&in);
        if (!closed) {
            fprintf(stderr, "FAIL frame \"%s\": the server kept the connection open\n",
                    frames[i].name);
            failed++;
        }
        assert_true(workers_alive());
    }
    wsc *w = ws_open_a();
    assert_ws_still_works(w);
    wsc_close(w);
    if (failed)
        fail_msg("%d broken frames did not close the connection", failed);
}

/* After all of it: health, the same worker processes, and a normal session. */
static void test_still_healthy(void **state)
{
    (void)state;
    resp r;
    assert_int_equal(request("GET", "/healthz", NULL, NULL, 0, &r), 0);
    assert_int_equal(r.status, 200);
    rg_buf_destroy(&r.body);
    for (int i = 1; i <= 2; i++) {
        assert_int_equal(stack_worker_pid(gw.st, i), worker_pid[i]);
        assert_true(procs_running(worker_pid[i]));
    }
    char body[256];
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s/actions.html\"}}", gw.base_url);
    cJSON *v = ok_json("/v1/sessions", gw.auth[0], body);
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s",
             cJSON_GetStringValue(get(get(v, "result"), "session")));
    cJSON_Delete(v);
    snprintf(body, sizeof body, "{\"op\":\"navigate\",\"args\":{\"url\":\"%s/form.html\"}}",
             gw.base_url);
    v = ok_json(path, gw.auth[0], body);
    assert_int_equal(get(get(v, "result"), "status")->valueint, 200);
    cJSON_Delete(v);
    v = ok_json(path, gw.auth[0], "{\"op\":\"observe\"}");
    assert_non_null(strstr(cJSON_GetStringValue(get(get(v, "result"), "text")), "textbox"));
    cJSON_Delete(v);
    v = ok_json(path, gw.auth[0], "{\"op\":\"session.close\"}");
    cJSON_Delete(v);
}

/* acme's session on actions.html (observed, so @counter exists) and other's on form.html. */
static int setup(void **state)
{
    (void)state;
    char body[256];
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s/actions.html\"}}", gw.base_url);
    cJSON *v = ok_json("/v1/sessions", gw.auth[0], body);
    snprintf(sid_a, sizeof sid_a, "%s", cJSON_GetStringValue(get(get(v, "result"), "session")));
    cJSON_Delete(v);
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid_a);
    cJSON_Delete(ok_json(path, gw.auth[0], "{\"op\":\"observe\"}"));
    /* The fingerprint sees a change when there is one (a real click). */
    char *fp0 = fingerprint();
    cJSON_Delete(
        ok_json(path, gw.auth[0], "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}"));
    char *fp1 = fingerprint();
    if (!strcmp(fp0, fp1))
        fail_msg("the fingerprint missed a click: %s", fp1);
    free(fp0);
    free(fp1);
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s/form.html\"}}", gw.base_url);
    v = ok_json("/v1/sessions", gw.auth[1], body);
    snprintf(sid_b, sizeof sid_b, "%s", cJSON_GetStringValue(get(get(v, "result"), "session")));
    cJSON_Delete(v);
    for (int i = 1; i <= 2; i++)
        worker_pid[i] = stack_worker_pid(gw.st, i);
    return 0;
}

int main(void)
{
    if (fx_stack_start(&gw, "test_badinput", "tests/fixtures", 2, NULL) < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input_table),
        cmocka_unit_test(test_websocket_bad_frames),
        cmocka_unit_test(test_websocket_broken_framing),
        cmocka_unit_test(test_still_healthy),
    };
    int rc = FX_RUN("badinput", tests, setup, NULL);
    fx_stack_stop(&gw);
    return rc;
}
