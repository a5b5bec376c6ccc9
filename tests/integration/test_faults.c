/*
 * test_faults.c - refgate on its worst day, through nginx with real parts:
 * a browser killed in the middle of a command, a worker killed while it
 * runs commands for several sessions, Redis gone for ten seconds under
 * traffic, nginx reloaded under traffic, and hostile pages (a script that
 * never ends, one that allocates until its renderer dies, a hundred popups,
 * a 50 MB DOM, a page that never finishes loading). Each test asserts what
 * the client sees (the error code, then the session carrying on) and that
 * the other sessions lost nothing.
 *
 * Nothing here asserts on time: waits are bounded only so that a hang fails
 * the test instead of stalling it.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/wire.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"

static fx_stack gw;

/* ---- calls ---- */

typedef struct reply {
    int status;   /* HTTP status, -1 when the request itself failed */
    cJSON *body;  /* the reply map, or NULL */
} reply;

static reply post(const char *path, const char *body)
{
    char h[512];
    snprintf(h, sizeof h, "Authorization: Bearer %s\r\nContent-Type: application/json\r\n",
             stack_key(gw.st, 0));
    http_resp r;
    reply out = {.status = -1, .body = NULL};
    if (http_request(stack_port(gw.st), "POST", path, h, body, strlen(body), &r) < 0)
        return out;
    out.status = r.status;
    char err[128];
    if (wire_json_decode(r.body.data ? r.body.data : "", r.body.len, &out.body, err,
                         sizeof err) < 0)
        out.body = NULL;
    rg_buf_destroy(&r.body);
    return out;
}

static reply cmd(const char *sid, const char *body)
{
    char path[320];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    return post(path, body);
}

static const char *code_of(const reply *r)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r->body, "error"), "code");
    return cJSON_IsString(c) ? c->valuestring : "";
}

static const char *str_of(const reply *r, const char *k)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->body, "result"), k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void drop(reply *r)
{
    cJSON_Delete(r->body);
    r->body = NULL;
}

/* A command that must succeed. */
static void ok(const char *sid, const char *body)
{
    reply r = cmd(sid, body);
    if (r.status != 200)
        fail_msg("%s -> %d %s", body, r.status, r.body ? cJSON_PrintUnformatted(r.body) : "");
    drop(&r);
}

/* A command that must fail with code. */
static void fails(const char *sid, const char *body, const char *code)
{
    reply r = cmd(sid, body);
    if (r.status == 200 || strcmp(code_of(&r), code))
        fail_msg("%s -> %d %s, wanted %s", body, r.status,
                 r.body ? cJSON_PrintUnformatted(r.body) : "", code);
    drop(&r);
}

static void create(const char *page, char *sid)
{
    char url[256], body[400];
    char p[96];
    snprintf(p, sizeof p, "/%s", page);
    httpd_url(gw.pages, p, url, sizeof url);
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s\"}}", url);
    reply r = post("/v1/sessions", body);
    if (r.status != 200)
        fail_msg("create -> %d %s", r.status, r.body ? cJSON_PrintUnformatted(r.body) : "");
    snprintf(sid, 64, "%s", str_of(&r, "session"));
    drop(&r);
    ok(sid, "{\"op\":\"observe\"}"); /* the refs the tests use */
}

static void navigate(const char *sid, const char *page)
{
    char url[256], body[400], p[96];
    snprintf(p, sizeof p, "/%s", page);
    httpd_url(gw.pages, p, url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"navigate\",\"args\":{\"url\":\"%s\"}}", url);
    ok(sid, body);
    ok(sid, "{\"op\":\"observe\"}");
}

static int owner_of(const char *sid)
{
    reply r = cmd(sid, "{\"op\":\"session.info\"}");
    assert_int_equal(r.status, 200);
    int w = atoi(str_of(&r, "worker") + 1);
    drop(&r);
    return w;
}

/* The counter of actions.html. */
static void clicks_are(const char *sid, const char *want)
{
    reply r = cmd(sid, "{\"op\":\"read\",\"args\":{\"target\":\"css:#out\"}}");
    assert_int_equal(r.status, 200);
    assert_string_equal(str_of(&r, "value"), want);
    drop(&r);
}

/* Retries cmd while it fails transiently (a worker or Redis coming back). */
static reply until_ok(const char *sid, const char *body, int tries)
{
    reply r = {.status = -1};
    for (int i = 0; i < tries; i++) {
        r = cmd(sid, body);
        if (r.status == 200)
            return r;
        drop(&r);
        rg_sleep_ms(500);
    }
    return r;
}

static void delete_session(const char *sid)
{
    char path[96], h[512];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    snprintf(h, sizeof h, "Authorization: Bearer %s\r\n", stack_key(gw.st, 0));
    http_resp r;
    if (http_request(stack_port(gw.st), "DELETE", path, h, NULL, 0, &r) == 0)
        rg_buf_destroy(&r.body);
}

/* ---- processes ---- */

/* The Chromium browser processes (not renderers) of worker w. */
static int browsers_of(int w, pid_t *out, int max)
{
    return procs_browsers(stack_worker_pid(gw.st, w), out, max);
}

/* ---- a command on another thread ---- */

struct bg {
    pthread_t th;
    char sid[64];
    char body[512];
    reply r;
};

static void *bg_main(void *arg)
{
    struct bg *b = arg;
    b->r = cmd(b->sid, b->body);
    return NULL;
}

static void bg_start(struct bg *b, const char *sid, const char *body)
{
    snprintf(b->sid, sizeof b->sid, "%s", sid);
    snprintf(b->body, sizeof b->body, "%s", body);
    assert_int_equal(pthread_create(&b->th, NULL, bg_main, b), 0);
}

static void bg_join(struct bg *b)
{
    pthread_join(b->th, NULL);
}

/* ---- tests ---- */

/* kill -9 the browser in the middle of a command: browser_crashed
   (transient), then the next command restores the session on a fresh
   browser, where its ref from before still clicks the same button. */
static void test_browser_killed_mid_command(void **state)
{
    (void)state;
    char sid[64];
    create("actions.html", sid);
    ok(sid, "{\"op\":\"observe\"}");
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    int w = owner_of(sid);
    /* A command that waits: a navigation to a page that never answers. */
    char url[256], body[400];
    httpd_url(gw.pages, "/slow", url, sizeof url);
    snprintf(body, sizeof body,
             "{\"op\":\"navigate\",\"args\":{\"url\":\"%s\",\"timeout_ms\":20000}}", url);
    struct bg b;
    bg_start(&b, sid, body);
    rg_sleep_ms(1000);
    pid_t br[8];
    int n = browsers_of(w, br, 8);
    assert_true(n >= 1);
    for (int i = 0; i < n; i++)
        kill(br[i], SIGKILL);
    bg_join(&b);
    if (b.r.status != 502 || strcmp(code_of(&b.r), "browser_crashed"))
        fail_msg("navigate during the kill -> %d %s", b.r.status,
                 b.r.body ? cJSON_PrintUnformatted(b.r.body) : "");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(b.r.body, "error"), "kind");
    assert_string_equal(kind->valuestring, "transient");
    drop(&b.r);
    /* Restored from the checkpoint (a fresh load, so the counter is 0). */
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    clicks_are(sid, "clicks=1");
    assert_int_equal(owner_of(sid), w);
    for (int i = 0; i < n; i++)
        assert_false(procs_running(br[i]));
    delete_session(sid);
}

/*
 * A session navigated to page, then a read (after the navigation's
 * checkpoint), then every browser of its worker killed: what eval_js
 * gives once the next command restored it (value: the caller's, len).
 */
static void navigate_then_lose_the_browser(const char *page, const char *eval_js, char *value,
                                           size_t len)
{
    char sid[64], url[256], body[600];
    create("actions.html", sid);
    httpd_url(gw.pages, page, url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"navigate\",\"args\":{\"url\":\"%s\"}}", url);
    ok(sid, body);
    ok(sid, "{\"op\":\"read\",\"args\":{\"target\":\"css:#out\"}}"); /* after its checkpoint */
    int w = owner_of(sid);
    pid_t br[8];
    int n = browsers_of(w, br, 8);
    assert_true(n >= 1);
    for (int i = 0; i < n; i++)
        kill(br[i], SIGKILL);
    snprintf(body, sizeof body, "{\"op\":\"eval\",\"args\":{\"expression\":\"%s\"}}", eval_js);
    reply r = until_ok(sid, body, 20);
    assert_int_equal(r.status, 200);
    snprintf(value, len, "%s", str_of(&r, "value"));
    drop(&r);
    delete_session(sid);
}

/*
 * The checkpoint after a navigation holds the page the navigation reached:
 * its URL, and what it wrote while it loaded (storage, a cookie). The
 * browser dies right after; the next command restores all of it.
 */
static void test_checkpoint_after_navigate_survives_the_browser(void **state)
{
    (void)state;
    char v[256];
    navigate_then_lose_the_browser("/stored.html",
                                   "[location.pathname, document.title, "
                                   "localStorage.getItem('loads'), sessionStorage.getItem('loads'), "
                                   "localStorage.getItem('__proto__'), document.cookie].join('|')",
                                   v, sizeof v);
    /* The first load's writes came back before the page loaded again, which counted 2
       (the __proto__ item too: the load report's dump has no prototype to lose it to). */
    assert_string_equal(v, "/stored.html|Stored|2|2|2|loads=2");
}

/*
 * The same with storage too large for the observer's load report, which
 * then leaves it out: the checkpoint asks the page for it, and the restore
 * still brings it back.
 */
static void test_checkpoint_after_navigate_keeps_large_storage(void **state)
{
    (void)state;
    char v[256];
    navigate_then_lose_the_browser("/stored-big.html",
                                   "[location.pathname, localStorage.getItem('loads'), "
                                   "sessionStorage.getItem('loads'), "
                                   "localStorage.getItem('big').length].join('|')",
                                   v, sizeof v);
    assert_string_equal(v, "/stored-big.html|2|2|100000");
}

/* A renderer that allocates until V8's cap ends it: the command gets
   browser_crashed; a session beside it on the same worker keeps its page
   and its state; the crashed one comes back on its next command. */
static void test_page_that_eats_memory(void **state)
{
    (void)state;
    char a[64], b[64];
    create("actions.html", b);
    ok(b, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    create("hostile-alloc.html", a);
    ok(a, "{\"op\":\"eval\",\"args\":{\"expression\":\"window.mark=1\"}}");
    /* The click itself may return before the crash, or see it. */
    reply r = cmd(a, "{\"op\":\"click\",\"args\":{\"target\":\"@eat\"}}");
    int crashed = r.status == 502 && !strcmp(code_of(&r), "browser_crashed");
    drop(&r);
    /* Then either a command sees browser_crashed, or, when the renderer
       died between two commands, the next one finds the page restored from
       its checkpoint (the mark is gone). The long timeout lets the
       allocation run to its end: a timeout would stop the page's script. */
    for (int i = 0; i < 60 && !crashed; i++) {
        r = cmd(a, "{\"op\":\"eval\",\"args\":{\"expression\":\"window.mark===1\","
                   "\"timeout_ms\":30000}}");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(r.body, "result"), "value");
        if (r.status == 502 && !strcmp(code_of(&r), "browser_crashed"))
            crashed = 1;
        else if (r.status == 200 && cJSON_IsFalse(v))
            crashed = 1; /* restored at this command */
        else if (r.status != 200)
            fail_msg("while eating -> %d %s", r.status,
                     r.body ? cJSON_PrintUnformatted(r.body) : "");
        drop(&r);
        if (!crashed)
            rg_sleep_ms(250);
    }
    assert_true(crashed);
    /* The neighbour did not notice: same page, same state, not restored. */
    clicks_are(b, "clicks=1");
    /* The crashed session carries on from its checkpoint. */
    ok(a, "{\"op\":\"observe\"}");
    navigate(a, "actions.html");
    ok(a, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    clicks_are(a, "clicks=1");
    delete_session(a);
    delete_session(b);
}

/* A script that never ends: the command waiting on the page gets timeout
   within its timeout_ms, the script is stopped, and the page answers again. */
static void test_page_in_an_infinite_loop(void **state)
{
    (void)state;
    char sid[64], other[64];
    create("hostile-loop.html", sid);
    create("actions.html", other);
    ok(sid, "{\"op\":\"observe\"}");
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@spin\"}}");
    rg_sleep_ms(500); /* the loop starts 200 ms after the click */
    fails(sid, "{\"op\":\"observe\",\"args\":{\"timeout_ms\":3000}}", "timeout");
    /* Meanwhile another session works. */
    ok(other, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    clicks_are(other, "clicks=1");
    /* The loop was stopped: the same page answers (no restore, no reload). */
    reply r = until_ok(sid, "{\"op\":\"read\",\"args\":{\"target\":\"css:#state\"}}", 10);
    assert_int_equal(r.status, 200);
    assert_string_equal(str_of(&r, "value"), "calm");
    drop(&r);
    ok(sid, "{\"op\":\"observe\"}");
    delete_session(sid);
    delete_session(other);
}

/* A page whose renderer no script termination reaches (it waits forever
   on a synchronous request): the command times out, the page is found not
   answering and its renderer ended, and the next command restores the
   session from its checkpoint. */
static void test_page_that_stops_answering(void **state)
{
    (void)state;
    char sid[64];
    create("hostile-loop.html", sid);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@block\"}}");
    rg_sleep_ms(500);
    reply r = cmd(sid, "{\"op\":\"observe\",\"args\":{\"timeout_ms\":3000}}");
    char *text = r.body ? cJSON_PrintUnformatted(r.body) : NULL;
    if (r.status != 504 || !text || !strstr(text, "was ended"))
        fail_msg("observe of a wedged page -> %d %s", r.status, text ? text : "");
    free(text);
    drop(&r);
    r = cmd(sid, "{\"op\":\"read\",\"args\":{\"target\":\"css:#state\"}}");
    if (r.status != 200)
        fail_msg("read after the reset -> %d %s", r.status,
                 r.body ? cJSON_PrintUnformatted(r.body) : "");
    assert_string_equal(str_of(&r, "value"), "calm");
    drop(&r);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@spin\"}}"); /* refs kept */
    delete_session(sid);
}

/* A page that never finishes loading: navigate fails with timeout within
   its timeout_ms, and the session stays usable. */
static void test_page_that_never_loads(void **state)
{
    (void)state;
    char sid[64], url[256], body[400];
    create("actions.html", sid);
    httpd_url(gw.pages, "/slow", url, sizeof url);
    snprintf(body, sizeof body,
             "{\"op\":\"navigate\",\"args\":{\"url\":\"%s\",\"timeout_ms\":3000}}", url);
    fails(sid, body, "timeout");
    navigate(sid, "actions.html");
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    clicks_are(sid, "clicks=1");
    delete_session(sid);
}

/* A hundred popups: all closed; the session keeps its one page, and the
   worker does not keep a hundred renderers. */
static void test_page_that_opens_100_popups(void **state)
{
    (void)state;
    char sid[64];
    create("hostile-popups.html", sid);
    int w = owner_of(sid);
    pid_t all[512];
    int before = procs_descendants(stack_worker_pid(gw.st, w), all, 512);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@open\"}}");
    rg_sleep_ms(2000);
    reply r = cmd(sid, "{\"op\":\"session.info\"}");
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(str_of(&r, "url"), "hostile-popups.html"));
    drop(&r);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@open\"}}");
    int after = procs_descendants(stack_worker_pid(gw.st, w), all, 512);
    assert_true(after <= before + 4);
    delete_session(sid);
}

/* A 50 MB DOM: observe answers within its timeout (a capped outline or
   timeout), another session's commands go through meanwhile, and the page
   can be left. */
static void test_page_with_a_50mb_dom(void **state)
{
    (void)state;
    char sid[64], other[64];
    create("hostile-bigdom.html", sid);
    create("actions.html", other);
    ok(sid, "{\"op\":\"observe\"}");
    reply r = cmd(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@grow\",\"timeout_ms\":30000}}");
    if (r.status != 200 && strcmp(code_of(&r), "timeout"))
        fail_msg("grow -> %d %s", r.status, r.body ? cJSON_PrintUnformatted(r.body) : "");
    drop(&r);
    struct bg b;
    bg_start(&b, sid, "{\"op\":\"observe\",\"args\":{\"format\":\"elements\",\"timeout_ms\":3000}}");
    ok(other, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    clicks_are(other, "clicks=1");
    bg_join(&b);
    if (b.r.status == 200) {
        const cJSON *els = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(b.r.body, "result"), "elements");
        assert_true(cJSON_GetArraySize(els) <= 2000); /* REFGATE_REGISTRY_MAX */
    } else if (strcmp(code_of(&b.r), "timeout")) {
        fail_msg("observe of 50 MB -> %d %s", b.r.status,
                 b.r.body ? cJSON_PrintUnformatted(b.r.body) : "");
    }
    drop(&b.r);
    reply n = until_ok(sid, "{\"op\":\"session.info\"}", 10);
    drop(&n);
    navigate(sid, "actions.html");
    ok(sid, "{\"op\":\"observe\"}");
    delete_session(sid);
    delete_session(other);
}

/* Traffic from a thread: n commands, counting what did not succeed. */
struct traffic {
    pthread_t th;
    char sid[256];
    int n, failed, unavailable, other;
    int stop;
    char first_bad[256];
};

static void *traffic_main(void *arg)
{
    struct traffic *t = arg;
    for (int i = 0; t->n ? i < t->n : !__atomic_load_n(&t->stop, __ATOMIC_SEQ_CST); i++) {
        reply r = cmd(t->sid, "{\"op\":\"observe\",\"args\":{\"timeout_ms\":5000}}");
        if (r.status != 200) {
            t->failed++;
            if (!strcmp(code_of(&r), "unavailable"))
                t->unavailable++;
            else
                t->other++;
            if (!t->first_bad[0])
                snprintf(t->first_bad, sizeof t->first_bad, "%d %s", r.status,
                         r.body ? code_of(&r) : "(no reply)");
            rg_sleep_ms(100);
        }
        drop(&r);
    }
    return NULL;
}

/* nginx reloaded three times under traffic: not one request fails. */
static void test_nginx_reload_under_traffic(void **state)
{
    (void)state;
    char sid[64];
    create("actions.html", sid);
    struct traffic t = {.n = 60};
    snprintf(t.sid, sizeof t.sid, "%s", sid);
    assert_int_equal(pthread_create(&t.th, NULL, traffic_main, &t), 0);
    for (int i = 0; i < 3; i++) {
        rg_sleep_ms(400);
        assert_int_equal(kill(stack_nginx_pid(gw.st), SIGHUP), 0);
    }
    pthread_join(t.th, NULL);
    if (t.failed)
        fail_msg("%d of 60 requests failed across reloads (first: %s)", t.failed, t.first_bad);
    delete_session(sid);
}

static int session_count(void);

/* Redis gone for ten seconds under traffic: commands fail with unavailable
   (each answered, none hangs), nothing changes, and everything comes back
   by itself, parked sessions included. */
static void test_redis_down_ten_seconds(void **state)
{
    (void)state;
    char live[64], parked[64];
    create("actions.html", live);
    create("actions.html", parked);
    ok(parked, "{\"op\":\"observe\"}");
    ok(parked, "{\"op\":\"session.park\"}");
    int n_before = session_count();
    struct traffic t = {.n = 0};
    snprintf(t.sid, sizeof t.sid, "%s", live);
    assert_int_equal(pthread_create(&t.th, NULL, traffic_main, &t), 0);
    rg_sleep_ms(500);
    redissrv_stop(stack_redis(gw.st));
    /* A create while Redis is down leaves nothing behind. */
    char url[256], body[400];
    httpd_url(gw.pages, "/actions.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s\"}}", url);
    reply r = post("/v1/sessions", body);
    assert_int_equal(r.status, 503);
    assert_string_equal(code_of(&r), "unavailable");
    drop(&r);
    /* A WebSocket to the parked session meanwhile is refused as "try again
       later" (close status 1013), its reason saying why, for a JSON client. */
    char path[128], h[256];
    snprintf(path, sizeof path, "/v1/sessions/%s/ws", parked);
    snprintf(h, sizeof h, "Authorization: Bearer %s\r\n", stack_key(gw.st, 0));
    int status = 0;
    wsc *w = wsc_open(stack_port(gw.st), path, h, &status);
    if (!w)
        fail_msg("the WebSocket was not opened while Redis is away: HTTP %d", status);
    rg_buf in;
    rg_buf_init(&in);
    int op;
    while ((op = wsc_recv(w, &in, 10000)) == 2) /* the refusal frame, msgpack */
        rg_buf_reset(&in);
    assert_int_equal(op, 8);
    assert_true(in.len > 2);
    int close_status = ((unsigned char)in.data[0] << 8) | (unsigned char)in.data[1];
    if (close_status != 1013 || in.len < 2 + 13 || memcmp(in.data + 2, "unavailable: ", 13))
        fail_msg("closed with %d \"%.*s\", wanted 1013 \"unavailable: ...\"", close_status,
                 (int)in.len - 2, in.data + 2);
    rg_buf_destroy(&in);
    wsc_close(w);
    rg_sleep_ms(10000);
    assert_int_equal(redissrv_restart(stack_redis(gw.st)), 0);
    /* Recovery, by itself. */
    r = until_ok(live, "{\"op\":\"observe\"}", 40);
    assert_int_equal(r.status, 200);
    drop(&r);
    __atomic_store_n(&t.stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(t.th, NULL);
    if (t.other)
        fail_msg("%d failures other than unavailable (first: %s)", t.other, t.first_bad);
    assert_true(t.unavailable > 0);
    /* The live session kept its page; the parked one restores with its refs. */
    ok(live, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    clicks_are(live, "clicks=1");
    r = until_ok(parked, "{\"op\":\"session.restore\"}", 10);
    assert_int_equal(r.status, 200);
    assert_int_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r.body, "result"),
                                         "refs_lost")
            ->valueint,
        0);
    drop(&r);
    ok(parked, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    clicks_are(parked, "clicks=1");
    /* The failed create wrote nothing: as many sessions as before. */
    assert_int_equal(session_count(), n_before);
    delete_session(live);
    delete_session(parked);
}

static int session_count(void)
{
    char h[512];
    snprintf(h, sizeof h, "Authorization: Bearer %s\r\nAccept: application/json\r\n",
             stack_key(gw.st, 0));
    /* Retried like a client would: the first use of a pooled Redis
       connection after a Redis restart may answer unavailable once. */
    for (int tries = 0; tries < 10; tries++) {
        http_resp lr;
        assert_int_equal(http_request(stack_port(gw.st), "GET", "/v1/sessions", h, NULL, 0, &lr),
                         0);
        cJSON *list = NULL;
        char err[64];
        int status = lr.status;
        assert_int_equal(wire_json_decode(lr.body.data, lr.body.len, &list, err, sizeof err), 0);
        rg_buf_destroy(&lr.body);
        const cJSON *ss = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(list, "result"), "sessions");
        int n = cJSON_IsArray(ss) ? cJSON_GetArraySize(ss) : -1;
        cJSON_Delete(list);
        if (status == 200 && n >= 0)
            return n;
        rg_sleep_ms(500);
    }
    fail_msg("GET /v1/sessions never answered 200");
    return -1;
}

/* kill -9 a worker while it runs commands for several sessions: the
   traffic moves to the other worker, every session carries on from its
   checkpoint with its refs, and no Chromium process of the dead worker
   survives. */
static void test_worker_killed_under_traffic(void **state)
{
    (void)state;
    enum { N = 3 };
    char sids[N][64];
    for (int i = 0; i < N; i++) {
        create("actions.html", sids[i]);
        ok(sids[i], "{\"op\":\"observe\"}");
    }
    int w = owner_of(sids[0]);
    pid_t before[512];
    int nb = procs_descendants(stack_worker_pid(gw.st, w), before, 512);
    assert_true(nb > 0);
    struct traffic t[N];
    for (int i = 0; i < N; i++) {
        memset(&t[i], 0, sizeof t[i]);
        snprintf(t[i].sid, sizeof t[i].sid, "%s", sids[i]);
        assert_int_equal(pthread_create(&t[i].th, NULL, traffic_main, &t[i]), 0);
    }
    rg_sleep_ms(1500);
    stack_kill_worker(gw.st, w, SIGKILL);
    rg_sleep_ms(1000);
    for (int i = 0; i < N; i++) {
        reply r = until_ok(sids[i], "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}", 40);
        if (r.status != 200)
            fail_msg("session %d did not carry on: %d %s", i, r.status, code_of(&r));
        drop(&r);
    }
    for (int i = 0; i < N; i++) {
        __atomic_store_n(&t[i].stop, 1, __ATOMIC_SEQ_CST);
        pthread_join(t[i].th, NULL);
    }
    for (int i = 0; i < N; i++) {
        clicks_are(sids[i], "clicks=1");
        if (owner_of(sids[i]) == w)
            fail_msg("session %d is still on the dead worker", i);
    }
    /* Every process of the dead worker is gone (the guards took Chromium with them). */
    for (int k = 0; k < 50; k++) {
        int alive = 0;
        for (int i = 0; i < nb; i++)
            alive += procs_running(before[i]);
        if (!alive)
            break;
        rg_sleep_ms(100);
    }
    for (int i = 0; i < nb; i++)
        if (procs_running(before[i]))
            fail_msg("process %d of the dead worker survived", (int)before[i]);
    assert_int_equal(stack_restart_worker(gw.st, w), 0);
    for (int i = 0; i < N; i++)
        delete_session(sids[i]);
}

int main(void)
{
    /* A small V8 heap, so the page that eats memory dies in a second. */
    static const char *const env[] = {"REFGATE_JS_HEAP_MB=128", NULL};
    if (fx_stack_start(&gw, "test_faults", "tests/fixtures", 2, env) < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_browser_killed_mid_command),
        cmocka_unit_test(test_checkpoint_after_navigate_survives_the_browser),
        cmocka_unit_test(test_checkpoint_after_navigate_keeps_large_storage),
        cmocka_unit_test(test_page_that_eats_memory),
        cmocka_unit_test(test_page_in_an_infinite_loop),
        cmocka_unit_test(test_page_that_stops_answering),
        cmocka_unit_test(test_page_that_never_loads),
        cmocka_unit_test(test_page_that_opens_100_popups),
        cmocka_unit_test(test_page_with_a_50mb_dom),
        cmocka_unit_test(test_nginx_reload_under_traffic),
        cmocka_unit_test(test_redis_down_ten_seconds),
        cmocka_unit_test(test_worker_killed_under_traffic),
    };
    int rc = FX_RUN("faults", tests, NULL, NULL);
    fx_stack_stop(&gw);
    return rc;
}
