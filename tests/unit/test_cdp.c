/*
 * test_cdp.c - the DevTools client against a fake browser at the pipe seam:
 * a thread that reads NUL-framed requests and writes scripted replies and
 * events. Framing, the escape pass, id matching, timeouts, events, queue
 * bounds, the message cap and the sticky error when the pipe closes.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdp/cdp.h"

/* ---- the pure parts ---- */

static void test_sanitize_rewrites_nul_and_lone_surrogates(void **state)
{
    (void)state;
    char s[] = "{\"a\":\"x\\u0000y\",\"b\":\"\\ud800z\",\"c\":\"\\udc00\",\"d\":\"\\ud83d\\ude00\","
               "\"e\":\"\\\\u0000\",\"f\":\"\\ud800\\u0041\",\"g\":\"\\uDBFF\"}";
    size_t fixed = cdp_json_sanitize(s, strlen(s));
    assert_int_equal(fixed, 5);
    assert_string_equal(s, "{\"a\":\"x\\ufffdy\",\"b\":\"\\ufffdz\",\"c\":\"\\ufffd\","
                           "\"d\":\"\\ud83d\\ude00\",\"e\":\"\\\\u0000\",\"f\":\"\\ufffd\\u0041\","
                           "\"g\":\"\\ufffd\"}");
    cJSON *j = cJSON_Parse(s);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "a")->valuestring, "x\xef\xbf\xbdy");
    assert_string_equal(cJSON_GetObjectItem(j, "d")->valuestring, "\xf0\x9f\x98\x80");
    assert_string_equal(cJSON_GetObjectItem(j, "e")->valuestring, "\\u0000");
    cJSON_Delete(j);
}

static void test_sanitize_leaves_keys_outside_strings_and_truncation(void **state)
{
    (void)state;
    char s[] = "[1,2,\"\\u00";          /* cut in the middle of an escape */
    assert_int_equal(cdp_json_sanitize(s, strlen(s)), 0);
    assert_string_equal(s, "[1,2,\"\\u00");
    char t[] = "\"\\u0000";             /* escape at the very end */
    assert_int_equal(cdp_json_sanitize(t, strlen(t)), 1);
    char u[] = "{\"k\\u0000\":1}";      /* keys are strings too */
    assert_int_equal(cdp_json_sanitize(u, strlen(u)), 1);
    char v[] = "\\u0000 outside";       /* not inside a string: left alone */
    assert_int_equal(cdp_json_sanitize(v, strlen(v)), 0);
}

struct collected {
    char msgs[16][256];
    int n;
    char head[256];
    size_t total;
    int oversize;
};

static void collect_msg(void *ud, char *msg, size_t len)
{
    struct collected *c = ud;
    assert_int_equal(strlen(msg), len);
    snprintf(c->msgs[c->n++], sizeof c->msgs[0], "%s", msg);
}

static void collect_oversize(void *ud, const char *head, size_t head_len, size_t total)
{
    struct collected *c = ud;
    memcpy(c->head, head, head_len);
    c->head[head_len] = '\0';
    c->total = total;
    c->oversize++;
}

/* Like collect_msg, but a long message is only measured (total), not kept. */
static void collect_msg_len(void *ud, char *msg, size_t len)
{
    struct collected *c = ud;
    assert_int_equal(strlen(msg), len);
    if (len >= sizeof c->msgs[0])
        c->total = len;
    snprintf(c->msgs[c->n++], sizeof c->msgs[0], "%s", msg);
}

/* Feeds data into f in pieces of `step` bytes, as short reads would. */
static void feed(cdp_frame *f, const char *data, size_t n, size_t step, struct collected *c)
{
    for (size_t off = 0; off < n; off += step) {
        size_t k = n - off < step ? n - off : step;
        char *p;
        size_t avail;
        assert_int_equal(cdp_frame_space(f, k, &p, &avail), 0);
        assert_true(avail >= k);
        memcpy(p, data + off, k);
        cdp_frame_commit(f, k, collect_msg, collect_oversize, c);
    }
}

static void test_frame_partial_reads(void **state)
{
    (void)state;
    const char stream[] = "{\"id\":1}\0{\"method\":\"A.b\"}\0\0{\"id\":2,\"result\":{}}\0";
    size_t n = sizeof stream - 1;
    for (size_t step = 1; step <= n; step++) {
        cdp_frame f;
        cdp_frame_init(&f, 1024);
        struct collected c = {0};
        feed(&f, stream, n, step, &c);
        assert_int_equal(c.n, 4);
        assert_string_equal(c.msgs[0], "{\"id\":1}");
        assert_string_equal(c.msgs[1], "{\"method\":\"A.b\"}");
        assert_string_equal(c.msgs[2], "");
        assert_string_equal(c.msgs[3], "{\"id\":2,\"result\":{}}");
        assert_int_equal(f.len, 0);
        cdp_frame_destroy(&f);
    }
}

/*
 * Two messages on the pipe: {"id":ID,"result":"xx...x"} with big x's, then
 * {"id":ID+1}. *h: bytes before the x's; *n: bytes of the whole stream.
 */
static char *long_then_short(int id, size_t big, size_t *h, size_t *n)
{
    char *stream = malloc(big + 64);
    assert_non_null(stream);
    int k = snprintf(stream, big + 64, "{\"id\":%d,\"result\":\"", id);
    *h = (size_t)k;
    memset(stream + *h, 'x', big);
    *n = *h + big;
    *n += (size_t)snprintf(stream + *n, 64 - (size_t)k, "\"}%c{\"id\":%d}", 0, id + 1) + 1;
    return stream;
}

static void test_frame_oversize_is_skipped_not_buffered(void **state)
{
    (void)state;
    size_t big = 5000, h, n;
    char *stream = long_then_short(77, big, &h, &n);
    for (size_t step = 1; step <= 4096; step *= 4) {
        cdp_frame f;
        cdp_frame_init(&f, 1000);
        struct collected c = {0};
        feed(&f, stream, n, step, &c);
        assert_int_equal(c.oversize, 1);
        assert_int_equal(c.total, h + big + 2);
        assert_memory_equal(c.head, "{\"id\":77,", 9);
        assert_int_equal(c.n, 1);
        assert_string_equal(c.msgs[0], "{\"id\":78}");
        assert_true(f.cap <= 1000 + 4096 + 256 * 1024); /* never grew to the message */
        cdp_frame_destroy(&f);
    }
    free(stream);
}

/*
 * After a 3 MiB message the buffer goes back to what ordinary traffic needs,
 * read the way cdp.c reads: CDP_FRAME_READ_BYTES of room asked for, 64 KiB
 * (a pipe's worth) arriving at a time. Kept, it would hold a worker's memory
 * at the longest message each browser ever sent.
 */
static void test_frame_gives_back_a_long_messages_buffer(void **state)
{
    (void)state;
    size_t big = 3u << 20, h, n;
    char *stream = long_then_short(5, big, &h, &n);
    cdp_frame f;
    cdp_frame_init(&f, 64u << 20);
    struct collected c = {0};
    size_t longest = 0;
    for (size_t off = 0; off < n;) {
        char *p;
        size_t avail;
        assert_int_equal(cdp_frame_space(&f, CDP_FRAME_READ_BYTES, &p, &avail), 0);
        size_t k = n - off < 64 * 1024 ? n - off : 64 * 1024;
        memcpy(p, stream + off, k);
        off += k;
        if (f.cap > longest)
            longest = f.cap;
        cdp_frame_commit(&f, k, collect_msg_len, NULL, &c);
    }
    assert_int_equal(c.n, 2);
    assert_int_equal(c.total, h + big + 2); /* the long one, whole */
    assert_string_equal(c.msgs[1], "{\"id\":6}");
    assert_true(longest > big);
    assert_true(f.cap <= 512 * 1024);
    assert_int_equal(f.len, 0);
    cdp_frame_destroy(&f);
    free(stream);
}

/* ---- a fake browser at the pipe seam ---- */

struct fake {
    int rfd, wfd; /* reads the client's requests, writes replies */
    pthread_t t;
    pthread_mutex_t mu;
    cJSON *held[64];
    int n_held;
    atomic_int requests;
    int silent; /* read nothing at all */
};

static void fake_send(struct fake *f, const char *json)
{
    pthread_mutex_lock(&f->mu);
    size_t n = strlen(json) + 1; /* with the NUL */
    const char *p = json;
    while (n) {
        ssize_t w = write(f->wfd, p, n);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    pthread_mutex_unlock(&f->mu);
}

static void fake_reply(struct fake *f, const cJSON *req, const char *result_json)
{
    char *buf;
    int id = cJSON_GetObjectItem(req, "id")->valueint;
    assert_true(asprintf(&buf, "{\"id\":%d,\"result\":%s}", id, result_json) > 0);
    fake_send(f, buf);
    free(buf);
}

static void fake_handle(struct fake *f, cJSON *req)
{
    const char *m = cJSON_GetObjectItem(req, "method")->valuestring;
    const cJSON *params = cJSON_GetObjectItem(req, "params");
    const cJSON *sid = cJSON_GetObjectItem(req, "sessionId");
    if (!strcmp(m, "Echo")) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToObject(r, "params", params ? cJSON_Duplicate(params, 1) : cJSON_CreateNull());
        cJSON_AddStringToObject(r, "session", cJSON_IsString(sid) ? sid->valuestring : "");
        char *s = cJSON_PrintUnformatted(r);
        fake_reply(f, req, s);
        free(s);
        cJSON_Delete(r);
    } else if (!strcmp(m, "Fail")) {
        char buf[128];
        snprintf(buf, sizeof buf,
                 "{\"id\":%d,\"error\":{\"code\":-32601,\"message\":\"'Fail' wasn't found\"}}",
                 cJSON_GetObjectItem(req, "id")->valueint);
        fake_send(f, buf);
    } else if (!strcmp(m, "Never")) {
        /* no reply */
    } else if (!strcmp(m, "Nul")) {
        fake_reply(f, req, "{\"s\":\"a\\u0000b\\ud800c\"}");
    } else if (!strcmp(m, "Big")) {
        size_t n = 10000;
        char *s = malloc(n + 16);
        s[0] = '"';
        memset(s + 1, 'y', n);
        strcpy(s + 1 + n, "\"");
        fake_reply(f, req, s);
        free(s);
    } else if (!strcmp(m, "Events")) {
        fake_send(f, "{\"method\":\"Page.loadEventFired\",\"params\":{\"t\":1}}");
        fake_send(f, "{\"method\":\"Page.frameNavigated\",\"sessionId\":\"S1\",\"params\":{\"t\":2}}");
        fake_send(f, "{\"method\":\"Runtime.consoleAPICalled\",\"sessionId\":\"S2\",\"params\":{}}");
        fake_reply(f, req, "{}");
    } else if (!strcmp(m, "Detach")) {
        fake_send(f, "{\"method\":\"Target.detachedFromTarget\",\"params\":{\"sessionId\":\"S9\"}}");
        fake_reply(f, req, "{}");
    } else if (!strcmp(m, "Hold")) {
        pthread_mutex_lock(&f->mu);
        f->held[f->n_held++] = cJSON_Duplicate(req, 1);
        pthread_mutex_unlock(&f->mu);
    } else if (!strcmp(m, "Release")) {
        /* Replies in reverse order of arrival. */
        for (;;) {
            pthread_mutex_lock(&f->mu);
            cJSON *h = f->n_held ? f->held[--f->n_held] : NULL;
            pthread_mutex_unlock(&f->mu);
            if (!h)
                break;
            char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(h, "params"));
            fake_reply(f, h, s);
            free(s);
            cJSON_Delete(h);
        }
        fake_reply(f, req, "{}");
    } else if (!strcmp(m, "Close")) {
        close(f->wfd);
        f->wfd = -1;
    }
}

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    char *buf = malloc(1 << 20);
    size_t len = 0;
    for (;;) {
        ssize_t n = read(f->rfd, buf + len, (1 << 20) - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < len; i++) {
            if (buf[i])
                continue;
            cJSON *req = cJSON_Parse(buf + start);
            assert_non_null(req);
            atomic_fetch_add(&f->requests, 1);
            fake_handle(f, req);
            cJSON_Delete(req);
            start = i + 1;
            if (f->wfd < 0)
                goto out;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
    }
out:
    free(buf);
    return NULL;
}

struct rig {
    struct fake f;
    cdp_conn *c;
};

static struct rig *rig_new(const cdp_config *cfg, int silent)
{
    struct rig *r = calloc(1, sizeof *r);
    int to_client[2], to_fake[2];
    assert_int_equal(pipe2(to_client, O_CLOEXEC), 0);
    assert_int_equal(pipe2(to_fake, O_CLOEXEC), 0);
    r->f.rfd = to_fake[0];
    r->f.wfd = to_client[1];
    r->f.silent = silent;
    pthread_mutex_init(&r->f.mu, NULL);
    assert_int_equal(cdp_conn_new(to_client[0], to_fake[1], cfg, &r->c), 0);
    if (!silent)
        assert_int_equal(pthread_create(&r->f.t, NULL, fake_main, &r->f), 0);
    return r;
}

static void rig_free(struct rig *r)
{
    cdp_conn_free(r->c); /* closes the client's ends: the fake reads EOF */
    if (!r->f.silent)
        pthread_join(r->f.t, NULL);
    close(r->f.rfd);
    if (r->f.wfd >= 0)
        close(r->f.wfd);
    for (int i = 0; i < r->f.n_held; i++)
        cJSON_Delete(r->f.held[i]);
    pthread_mutex_destroy(&r->f.mu);
    free(r);
}

static void test_call_reply_and_session(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    cdp_reply rep;
    assert_int_equal(cdp_call(r->c, "S1", "Echo", "{\"x\":\"h\\\"i\"}", 2000, &rep), 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(rep.result, "params"), "x")
                            ->valuestring,
                        "h\"i");
    assert_string_equal(cJSON_GetObjectItem(rep.result, "session")->valuestring, "S1");
    cdp_reply_free(&rep);
    assert_int_equal(cdp_call(r->c, NULL, "Echo", NULL, 2000, &rep), 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(rep.result, "params")));
    assert_string_equal(cJSON_GetObjectItem(rep.result, "session")->valuestring, "");
    cdp_reply_free(&rep);
    rig_free(r);
}

static void test_error_reply(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    cdp_reply rep;
    assert_int_equal(cdp_call(r->c, NULL, "Fail", NULL, 2000, &rep), RG_ECDP);
    assert_int_equal(rep.cdp_code, -32601);
    assert_non_null(strstr(rep.error, "wasn't found"));
    assert_null(rep.result);
    cdp_reply_free(&rep);
    assert_int_equal(cdp_conn_err(r->c, NULL, 0), 0); /* an error reply is not a broken pipe */
    rig_free(r);
}

static void test_timeout_then_late_calls_work(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    cdp_reply rep;
    int64_t t0 = rg_now_ms();
    assert_int_equal(cdp_call(r->c, NULL, "Never", NULL, 150, &rep), RG_ETIMEOUT);
    assert_true(rg_now_ms() - t0 >= 150);
    assert_non_null(strstr(rep.error, "Never"));
    cdp_reply_free(&rep);
    assert_int_equal(cdp_call(r->c, NULL, "Echo", "{\"n\":1}", 2000, NULL), 0);
    rig_free(r);
}

struct held_result {
    atomic_int done;
    int rc;
    int got;
};

static void on_held(void *ud, int rc, cdp_reply *rep)
{
    struct held_result *h = ud;
    h->rc = rc;
    h->got = rc == 0 ? cJSON_GetObjectItem(rep->result, "k")->valueint : -1;
    atomic_store(&h->done, 1);
}

static void test_out_of_order_replies_match_their_calls(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    struct held_result h[20] = {0};
    for (int i = 0; i < 20; i++) {
        char p[32];
        snprintf(p, sizeof p, "{\"k\":%d}", i * 7);
        assert_int_equal(cdp_call_async(r->c, NULL, "Hold", p, 5000, on_held, &h[i]), 0);
    }
    while (atomic_load(&r->f.requests) < 20)
        rg_sleep_ms(1);
    assert_int_equal(cdp_call(r->c, NULL, "Release", NULL, 5000, NULL), 0);
    for (int i = 0; i < 20; i++) {
        while (!atomic_load(&h[i].done))
            rg_sleep_ms(1);
        assert_int_equal(h[i].rc, 0);
        assert_int_equal(h[i].got, i * 7);
    }
    rig_free(r);
}

struct worker_arg {
    cdp_conn *c;
    int base;
    int bad;
};

static void *call_worker(void *arg)
{
    struct worker_arg *w = arg;
    for (int i = 0; i < 300; i++) {
        char p[64];
        snprintf(p, sizeof p, "{\"v\":%d}", w->base + i);
        cdp_reply rep;
        if (cdp_call(w->c, NULL, "Echo", p, 5000, &rep) != 0 ||
            cJSON_GetObjectItem(cJSON_GetObjectItem(rep.result, "params"), "v")->valueint !=
                w->base + i)
            w->bad++;
        cdp_reply_free(&rep);
    }
    return NULL;
}

static void test_async_call_times_out(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    struct held_result h = {0};
    assert_int_equal(cdp_call_async(r->c, NULL, "Never", NULL, 100, on_held, &h), 0);
    int64_t until = rg_now_ms() + 5000;
    while (!atomic_load(&h.done) && rg_now_ms() < until)
        rg_sleep_ms(5);
    assert_true(atomic_load(&h.done)); /* the reader's poll deadline fired it */
    assert_int_equal(h.rc, RG_ETIMEOUT);
    assert_int_equal(cdp_call(r->c, NULL, "Echo", "{}", 2000, NULL), 0);
    rig_free(r);
}

static void test_calls_from_many_threads(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    pthread_t t[6];
    struct worker_arg a[6];
    for (int i = 0; i < 6; i++) {
        a[i] = (struct worker_arg){r->c, i * 100000, 0};
        pthread_create(&t[i], NULL, call_worker, &a[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].bad, 0);
    }
    rig_free(r);
}

static void test_nul_and_lone_surrogate_in_reply(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    cdp_reply rep;
    assert_int_equal(cdp_call(r->c, NULL, "Nul", NULL, 2000, &rep), 0);
    /* Neither truncated at the NUL nor rejected for the surrogate. */
    assert_string_equal(cJSON_GetObjectItem(rep.result, "s")->valuestring,
                        "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c");
    cdp_reply_free(&rep);
    rig_free(r);
}

static void test_oversized_reply_fails_only_its_call(void **state)
{
    (void)state;
    cdp_config cfg;
    cdp_config_default(&cfg);
    cfg.max_message_bytes = 4096;
    struct rig *r = rig_new(&cfg, 0);
    cdp_reply rep;
    int64_t t0 = rg_now_ms();
    assert_int_equal(cdp_call(r->c, NULL, "Big", NULL, 5000, &rep), RG_EPROTO);
    assert_true(rg_now_ms() - t0 < 5000); /* failed when seen, not by the timeout */
    assert_non_null(strstr(rep.error, "over the cap"));
    cdp_reply_free(&rep);
    assert_int_equal(cdp_conn_err(r->c, NULL, 0), 0);
    assert_int_equal(cdp_call(r->c, NULL, "Echo", "{}", 2000, NULL), 0);
    rig_free(r);
}

struct ev_log {
    pthread_mutex_t mu;
    char seen[16][64];
    int n;
    int closed;
};

static void on_ev(void *ud, const char *sid, const char *method, const cJSON *params)
{
    (void)params;
    struct ev_log *l = ud;
    pthread_mutex_lock(&l->mu);
    if (!method)
        l->closed++;
    else if (l->n < 16)
        snprintf(l->seen[l->n++], 64, "%s@%s", method, sid ? sid : "-");
    pthread_mutex_unlock(&l->mu);
}

static void test_events_reach_matching_subscribers(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    struct ev_log all = {.mu = PTHREAD_MUTEX_INITIALIZER}, page = all, s2 = all, gone = all;
    int a = cdp_subscribe(r->c, NULL, NULL, on_ev, &all);
    int b = cdp_subscribe(r->c, NULL, "Page.", on_ev, &page);
    int c = cdp_subscribe(r->c, "S2", NULL, on_ev, &s2);
    int d = cdp_subscribe(r->c, NULL, "Page.loadEventFired", on_ev, &gone);
    assert_true(a > 0 && b > 0 && c > 0 && d > 0);
    cdp_unsubscribe(r->c, d);
    /* Events are written before the reply, so they are dispatched before it. */
    assert_int_equal(cdp_call(r->c, NULL, "Events", NULL, 2000, NULL), 0);
    assert_int_equal(all.n, 3);
    assert_int_equal(page.n, 2);
    assert_string_equal(page.seen[0], "Page.loadEventFired@-");
    assert_string_equal(page.seen[1], "Page.frameNavigated@S1");
    assert_int_equal(s2.n, 1);
    assert_string_equal(s2.seen[0], "Runtime.consoleAPICalled@S2");
    assert_int_equal(gone.n, 0);
    rig_free(r);
    assert_int_equal(all.closed, 1); /* told once that the connection went away */
    assert_int_equal(gone.closed, 0);
}

static void test_waiter(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    cdp_waiter *w;
    assert_int_equal(cdp_waiter_new(r->c, "S1", "Page.frameNavigated", &w), 0);
    assert_int_equal(cdp_call(r->c, NULL, "Events", NULL, 2000, NULL), 0);
    const cJSON *params = NULL;
    assert_int_equal(cdp_waiter_wait(w, 1000, &params), 0);
    assert_int_equal(cJSON_GetObjectItem(params, "t")->valueint, 2);
    cdp_waiter_free(w);
    assert_int_equal(cdp_waiter_new(r->c, NULL, "Never.happens", &w), 0);
    assert_int_equal(cdp_waiter_wait(w, 100, NULL), RG_ETIMEOUT);
    cdp_waiter_free(w);
    rig_free(r);
}

static void test_detached_session_fails_its_calls_at_once(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    struct held_result h = {0}, other = {0};
    assert_int_equal(cdp_call_async(r->c, "S9", "Hold", "{\"k\":1}", 10000, on_held, &h), 0);
    assert_int_equal(cdp_call_async(r->c, "S8", "Hold", "{\"k\":2}", 10000, on_held, &other), 0);
    assert_int_equal(cdp_call(r->c, NULL, "Detach", NULL, 2000, NULL), 0);
    while (!atomic_load(&h.done))
        rg_sleep_ms(1);
    assert_int_equal(h.rc, RG_ECRASHED);
    assert_false(atomic_load(&other.done)); /* another session is not touched */
    assert_int_equal(cdp_call(r->c, NULL, "Release", NULL, 2000, NULL), 0);
    while (!atomic_load(&other.done))
        rg_sleep_ms(1);
    assert_int_equal(other.rc, 0);
    rig_free(r);
}

/*
 * cdp_conn_quiet_ms (the pool makes warm contexts in a quiet moment): 0
 * while any call waits for its reply, and counting again once every call
 * has ended, whichever way: answered, timed out (sync and async), failed
 * with its session. A call left counted would keep a browser from ever
 * looking quiet.
 */
static void test_quiet_counts_the_calls_in_flight(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    assert_true(cdp_conn_quiet_ms(r->c) > 0); /* nothing sent yet */
    struct held_result h = {0}, gone = {0}, late = {0};
    assert_int_equal(cdp_call_async(r->c, NULL, "Hold", "{\"k\":1}", 10000, on_held, &h), 0);
    assert_int_equal(cdp_call_async(r->c, "S9", "Hold", "{\"k\":2}", 10000, on_held, &gone), 0);
    assert_int_equal(cdp_call_async(r->c, NULL, "Never", NULL, 100, on_held, &late), 0);
    assert_int_equal(cdp_conn_quiet_ms(r->c), 0);
    assert_int_equal(cdp_call(r->c, NULL, "Never", NULL, 100, NULL), RG_ETIMEOUT);
    while (!atomic_load(&late.done))
        rg_sleep_ms(1);
    assert_int_equal(late.rc, RG_ETIMEOUT);
    assert_int_equal(cdp_conn_quiet_ms(r->c), 0); /* the two held calls */
    assert_int_equal(cdp_call(r->c, NULL, "Detach", NULL, 2000, NULL), 0);
    while (!atomic_load(&gone.done))
        rg_sleep_ms(1);
    assert_int_equal(gone.rc, RG_ECRASHED);
    assert_int_equal(cdp_conn_quiet_ms(r->c), 0); /* still one */
    assert_int_equal(cdp_call(r->c, NULL, "Release", NULL, 2000, NULL), 0);
    while (!atomic_load(&h.done))
        rg_sleep_ms(1);
    rg_sleep_ms(30);
    assert_true(cdp_conn_quiet_ms(r->c) >= 20);
    rig_free(r);
}

struct blocker {
    cdp_conn *c;
    int rc;
};

static void *blocked_call(void *arg)
{
    struct blocker *b = arg;
    b->rc = cdp_call(b->c, NULL, "Never", NULL, 30000, NULL);
    return NULL;
}

static void test_pipe_close_fails_pending_and_later_calls(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    struct ev_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
    cdp_subscribe(r->c, NULL, "X.", on_ev, &log);
    struct blocker b = {r->c, 0};
    pthread_t t;
    pthread_create(&t, NULL, blocked_call, &b);
    while (atomic_load(&r->f.requests) < 1)
        rg_sleep_ms(1);
    int64_t t0 = rg_now_ms();
    cdp_call_async(r->c, NULL, "Close", NULL, 30000, NULL, NULL); /* the fake closes its end */
    pthread_join(t, NULL);
    assert_int_equal(b.rc, RG_ECRASHED);
    assert_true(rg_now_ms() - t0 < 5000); /* at once, not after the 30 s timeout */
    char why[128];
    assert_int_equal(cdp_conn_err(r->c, why, sizeof why), RG_ECRASHED);
    assert_non_null(strstr(why, "closed"));
    int before = atomic_load(&r->f.requests);
    cdp_reply rep;
    assert_int_equal(cdp_call(r->c, NULL, "Echo", NULL, 30000, &rep), RG_ECRASHED);
    assert_non_null(strstr(rep.error, "closed"));
    cdp_reply_free(&rep);
    assert_int_equal(cdp_call_async(r->c, NULL, "Echo", NULL, 30000, NULL, NULL), RG_ECRASHED);
    assert_int_equal(atomic_load(&r->f.requests), before); /* nothing more was sent */
    /* Pending calls fail first, subscribers hear of the close just after:
       wait (bounded) for the notice rather than race it. */
    int closed = 0;
    for (int64_t until = rg_now_ms() + 5000; rg_now_ms() < until; rg_sleep_ms(1)) {
        pthread_mutex_lock(&log.mu);
        closed = log.closed;
        pthread_mutex_unlock(&log.mu);
        if (closed)
            break;
    }
    assert_int_equal(closed, 1);
    rig_free(r);
}

/* A callback that takes the lock its caller may hold. */
struct locked_cb {
    pthread_mutex_t mu;
    pthread_t caller;
    atomic_int calls;
    atomic_int on_caller_thread;
};

static void on_locked(void *ud, int rc, cdp_reply *reply)
{
    (void)rc;
    (void)reply;
    struct locked_cb *l = ud;
    if (pthread_equal(pthread_self(), l->caller))
        atomic_fetch_add(&l->on_caller_thread, 1);
    pthread_mutex_lock(&l->mu);
    atomic_fetch_add(&l->calls, 1);
    pthread_mutex_unlock(&l->mu);
}

/* The browser dies and the next write fails (its read end is gone while
   ours still reads nothing): the calls' callbacks run on the reader thread,
   never on the writer's, which may hold the very lock they take (the pool's
   health check did, and deadlocked). */
static void test_write_failure_never_calls_back_on_the_callers_thread(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 1); /* silent: nothing answers */
    struct locked_cb l = {.mu = PTHREAD_MUTEX_INITIALIZER, .caller = pthread_self()};
    /* One call already waiting for its answer. */
    assert_int_equal(cdp_call_async(r->c, NULL, "Hold", NULL, 30000, on_locked, &l), 0);
    /* The peer's read end goes: the next write gets EPIPE. */
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(devnull >= 0);
    assert_int_equal(dup2(devnull, r->f.rfd), r->f.rfd);
    close(devnull);
    pthread_mutex_lock(&l.mu);
    int rc = cdp_call_async(r->c, NULL, "Ping", NULL, 30000, on_locked, &l);
    pthread_mutex_unlock(&l.mu);
    assert_true(rc == 0 || rc == RG_ECRASHED);
    /* The connection fails, from the reader, within a bounded time. */
    for (int64_t until = rg_now_ms() + 5000; rg_now_ms() < until; rg_sleep_ms(1))
        if (atomic_load(&l.calls) >= (rc == 0 ? 2 : 1))
            break;
    assert_int_equal(atomic_load(&l.calls), rc == 0 ? 2 : 1);
    assert_int_equal(atomic_load(&l.on_caller_thread), 0);
    char why[128];
    assert_int_equal(cdp_conn_err(r->c, why, sizeof why), RG_ECRASHED);
    assert_non_null(strstr(why, "writing to the browser failed"));
    rig_free(r);
}

static void test_write_queue_is_bounded(void **state)
{
    (void)state;
    cdp_config cfg;
    cdp_config_default(&cfg);
    cfg.max_write_queue_bytes = 64 * 1024;
    struct rig *r = rig_new(&cfg, 1); /* the fake never reads */
    char *params = malloc(8200);
    memcpy(params, "{\"pad\":\"", 8);
    memset(params + 8, 'p', 8180);
    strcpy(params + 8188, "\"}");
    int rc = 0, sent = 0;
    /* The pipe takes about 1 MiB, the queue 64 KiB more; then calls are refused. */
    for (int i = 0; i < 1000 && rc == 0; i++) {
        rc = cdp_call_async(r->c, NULL, "Echo", params, 60000, NULL, NULL);
        if (rc == 0)
            sent++;
    }
    assert_int_equal(rc, RG_EBUSY);
    assert_true(sent > 8 && sent < 1000);
    assert_int_equal(cdp_conn_err(r->c, NULL, 0), 0); /* refused, not broken */
    free(params);
    rig_free(r);
}

struct reenter_box {
    int rc;
    cdp_conn *c;
};

static void reenter(void *ud, const char *sid, const char *method, const cJSON *params)
{
    (void)sid;
    (void)params;
    struct reenter_box *box = ud;
    if (method)
        box->rc = cdp_call(box->c, NULL, "Echo", NULL, 1000, NULL);
}

static void test_sync_call_from_callback_is_refused(void **state)
{
    (void)state;
    struct rig *r = rig_new(NULL, 0);
    struct reenter_box box = {1, r->c};
    cdp_subscribe(r->c, NULL, "Page.loadEventFired", reenter, &box);
    assert_int_equal(cdp_call(r->c, NULL, "Events", NULL, 2000, NULL), 0);
    assert_int_equal(box.rc, RG_EINTERNAL);
    rig_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sanitize_rewrites_nul_and_lone_surrogates),
        cmocka_unit_test(test_sanitize_leaves_keys_outside_strings_and_truncation),
        cmocka_unit_test(test_frame_partial_reads),
        cmocka_unit_test(test_frame_oversize_is_skipped_not_buffered),
        cmocka_unit_test(test_frame_gives_back_a_long_messages_buffer),
        cmocka_unit_test(test_call_reply_and_session),
        cmocka_unit_test(test_error_reply),
        cmocka_unit_test(test_timeout_then_late_calls_work),
        cmocka_unit_test(test_out_of_order_replies_match_their_calls),
        cmocka_unit_test(test_async_call_times_out),
        cmocka_unit_test(test_calls_from_many_threads),
        cmocka_unit_test(test_nul_and_lone_surrogate_in_reply),
        cmocka_unit_test(test_oversized_reply_fails_only_its_call),
        cmocka_unit_test(test_events_reach_matching_subscribers),
        cmocka_unit_test(test_waiter),
        cmocka_unit_test(test_detached_session_fails_its_calls_at_once),
        cmocka_unit_test(test_quiet_counts_the_calls_in_flight),
        cmocka_unit_test(test_pipe_close_fails_pending_and_later_calls),
        cmocka_unit_test(test_write_failure_never_calls_back_on_the_callers_thread),
        cmocka_unit_test(test_write_queue_is_bounded),
        cmocka_unit_test(test_sync_call_from_callback_is_refused),
    };
    return cmocka_run_group_tests_name("cdp", tests, NULL, NULL);
}
