/*
 * test_fence.c - lease fencing: a worker that lost its session while it was
 * stopped writes nothing when it wakes up.
 *
 * Two workers run with the same worker id (a deployment that reuses
 * REFGATE_WORKER_ID on two hosts), so "the lease names me" cannot tell them
 * apart: only the fence token taken at each claim can. Worker 1 runs a
 * command on the session, and is stopped (SIGSTOP) in its middle; worker 2
 * claims the session once worker 1's lease lapses and moves it to another
 * page. Worker 1 then goes on (SIGCONT): its command ends with a checkpoint
 * of the old page, which the fence refuses; worker 1 drops its copy and
 * never acts on the session again without claiming it anew. The session's
 * state stays worker 2's, and it is live on one worker only.
 *
 * Also: a park waits for a replica when REFGATE_PARK_WAIT_REPLICAS asks it to.
 *
 * Workers are addressed directly over FastCGI, nginx left out: which worker
 * runs what is the test's to choose. Nothing asserts on time; each wait is
 * bounded so that a hang fails instead of stalling.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "tests/support/fixture.h"
#include "tests/support/net.h"
#include "wire/wire.h"

static fx_stack gw;

typedef struct reply {
    int status;  /* HTTP status, -1 when the request itself failed */
    cJSON *body; /* the reply map, or NULL */
} reply;

/* A POST of body to path on worker w (from 1), over FastCGI. */
static reply post_to(int w, const char *path, const char *body)
{
    char uri[200], key[200], len[48];
    snprintf(uri, sizeof uri, "DOCUMENT_URI=%s", path);
    snprintf(key, sizeof key, "HTTP_AUTHORIZATION=Bearer %s", stack_key(gw.st, 0));
    snprintf(len, sizeof len, "CONTENT_LENGTH=%zu", strlen(body));
    const char *params[] = {"REQUEST_METHOD=POST", uri, key, "CONTENT_TYPE=application/json",
                            len, NULL};
    http_resp r;
    reply out = {.status = -1, .body = NULL};
    if (fcgi_request(stack_fcgi_port(gw.st, w), params, body, strlen(body), &r) < 0) {
        rg_buf_destroy(&r.body);
        return out;
    }
    out.status = r.status;
    char err[128];
    if (wire_json_decode(r.body.data ? r.body.data : "", r.body.len, &out.body, err,
                         sizeof err) < 0)
        out.body = NULL;
    rg_buf_destroy(&r.body);
    return out;
}

static const cJSON *result_of(const reply *r, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->body, "result"),
                                            k);
}

static const char *str_of(const reply *r, const char *k)
{
    const cJSON *v = result_of(r, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A command to sid on worker w that must succeed; the reply is the caller's. */
static reply ok_on(int w, const char *sid, const char *body)
{
    char path[200];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    reply r = post_to(w, path, body);
    if (r.status != 200)
        fail_msg("worker %d: %s -> %d %s", w, body, r.status,
                 r.body ? cJSON_PrintUnformatted(r.body) : "");
    return r;
}

static void drop(reply *r)
{
    cJSON_Delete(r->body);
    r->body = NULL;
}

/* A metric of worker w's /metrics, over FastCGI (-1 when absent). */
static double metric_of(int w, const char *name)
{
    const char *params[] = {"REQUEST_METHOD=GET", "SCRIPT_NAME=/metrics", "DOCUMENT_URI=/metrics",
                            "REQUEST_URI=/metrics", NULL};
    http_resp r;
    double v = -1;
    if (fcgi_request(stack_fcgi_port(gw.st, w), params, NULL, 0, &r) == 0) {
        rg_buf_puts(&r.body, "");
        v = metric_value(r.body.data, name);
    }
    rg_buf_destroy(&r.body);
    return v;
}

/* Waits (bounded) until worker w's metric name is want; 0 when it got there. */
static int metric_becomes(int w, const char *name, double want, int timeout_ms)
{
    for (int64_t end = rg_now_ms() + timeout_ms; rg_now_ms() < end; rg_sleep_ms(100))
        if (metric_of(w, name) == want)
            return 0;
    return -1;
}

/* The session's URL in Redis (session.info reads the meta), asked of worker w. */
static void url_in_redis(int w, const char *sid, char *out, size_t len)
{
    reply r = ok_on(w, sid, "{\"op\":\"session.info\"}");
    snprintf(out, len, "%s", str_of(&r, "url"));
    drop(&r);
}

struct bg {
    pthread_t t;
    int w;
    char sid[64];
    const char *body;
    reply r;
};

static void *bg_main(void *arg)
{
    struct bg *b = arg;
    char path[200];
    snprintf(path, sizeof path, "/v1/sessions/%s", b->sid);
    b->r = post_to(b->w, path, b->body);
    return NULL;
}

static void test_stale_worker_cannot_write(void **state)
{
    (void)state;
    char url[256], body[600], sid[64];
    /* Worker 1 creates the session on page one. */
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s/one\"}}", gw.base_url);
    reply r = post_to(1, "/v1/sessions", body);
    assert_int_equal(r.status, 200);
    snprintf(sid, sizeof sid, "%s", str_of(&r, "session"));
    drop(&r);
    assert_true(sid[0]);
    assert_int_equal(metric_of(1, "refgate_sessions_live"), 1);

    /* A command on worker 1 that is in the page when the worker stops: it
       tells the fixture server it began, waits, then moves the page on. */
    size_t began = httpd_count(gw.pages, "/began");
    struct bg b = {.w = 1,
                   .body = "{\"op\":\"eval\",\"args\":{\"await\":true,\"expression\":"
                           "\"fetch('/began').then(() => new Promise(ok => setTimeout(() => {"
                           "history.replaceState(null, '', '/one#stale'); ok(1); }, 1000)))\"}}"};
    snprintf(b.sid, sizeof b.sid, "%s", sid);
    assert_int_equal(pthread_create(&b.t, NULL, bg_main, &b), 0);
    int64_t end = rg_now_ms() + 20000;
    while (httpd_count(gw.pages, "/began") == began && rg_now_ms() < end)
        rg_sleep_ms(10);
    assert_true(httpd_count(gw.pages, "/began") > began);
    pid_t w1 = stack_worker_pid(gw.st, 1);
    assert_int_equal(kill(w1, SIGSTOP), 0);

    /* Worker 2, of the same id, gets the session only once worker 1's lease
       lapses (its token is not worker 1's), then moves it to page two. */
    snprintf(body, sizeof body, "{\"op\":\"navigate\",\"args\":{\"url\":\"%s/two\"}}",
             gw.base_url);
    r = ok_on(2, sid, body);
    drop(&r);
    url_in_redis(2, sid, url, sizeof url);
    assert_non_null(strstr(url, "/two"));

    /* Worker 1 goes on: its command ends, and its checkpoint of the page it
       still has (/one#stale) is refused; it drops its copy. */
    assert_int_equal(kill(w1, SIGCONT), 0);
    pthread_join(b.t, NULL);
    drop(&b.r);
    assert_int_equal(metric_becomes(1, "refgate_sessions_live", 0, 15000), 0);
    assert_true(metric_of(1, "refgate_sessions_fenced_total") >= 1);
    url_in_redis(2, sid, url, sizeof url);
    if (!strstr(url, "/two"))
        fail_msg("the stopped worker's write went through: the session is at %s", url);
    assert_int_equal(metric_of(2, "refgate_sessions_live"), 1);

    /* Worker 1 acts on it again only by claiming it: worker 2 parks it and
       worker 1 restores page two, not its own stale copy. */
    r = ok_on(1, sid, "{\"op\":\"eval\",\"args\":{\"expression\":\"location.href\"}}");
    const cJSON *v = result_of(&r, "value");
    assert_true(cJSON_IsString(v));
    assert_non_null(strstr(v->valuestring, "/two"));
    assert_null(strstr(v->valuestring, "stale"));
    drop(&r);
    assert_int_equal(metric_becomes(2, "refgate_sessions_live", 0, 15000), 0);
    assert_int_equal(metric_of(1, "refgate_sessions_live"), 1);
    r = ok_on(1, sid, "{\"op\":\"session.close\"}");
    drop(&r);
}

/* ---- waiting for a replica at park (REFGATE_PARK_WAIT_REPLICAS) ---- */

/* A park through nginx of a new session on st; its sid into sid. */
static void create_and_park(stack *st, const char *page, char *sid)
{
    char h[300], body[300];
    snprintf(h, sizeof h, "Authorization: Bearer %s\r\nContent-Type: application/json\r\n",
             stack_key(st, 0));
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s/%s\"}}", gw.base_url, page);
    http_resp r;
    assert_int_equal(http_request(stack_port(st), "POST", "/v1/sessions", h, body, strlen(body), &r),
                     0);
    assert_int_equal(r.status, 200);
    cJSON *m = NULL;
    char err[128];
    assert_int_equal(wire_json_decode(r.body.data, r.body.len, &m, err, sizeof err), 0);
    rg_buf_destroy(&r.body);
    snprintf(sid, 64, "%s",
             cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "result"),
                                              "session")
                 ->valuestring);
    cJSON_Delete(m);
    char path[128];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    const char *park = "{\"op\":\"session.park\"}";
    assert_int_equal(http_request(stack_port(st), "POST", path, h, park, strlen(park), &r), 0);
    if (r.status != 200)
        fail_msg("park -> %d %.*s", r.status, (int)r.body.len, r.body.data);
    rg_buf_destroy(&r.body);
}

/*
 * With REFGATE_PARK_WAIT_REPLICAS=1 a park is acknowledged by the replica
 * before it returns: on the replica at once, and none counted as
 * unreplicated. With the replica stopped the park still succeeds (the
 * master has it) after the wait, and is counted.
 */
static void test_park_waits_for_a_replica(void **state)
{
    (void)state;
    redissrv *master = redissrv_start(NULL), *replica = redissrv_start(NULL);
    assert_non_null(master);
    assert_non_null(replica);
    redisContext *rc = redissrv_connect(replica);
    assert_non_null(rc);
    redisReply *rep = redisCommand(rc, "REPLICAOF 127.0.0.1 %d", redissrv_port(master));
    freeReplyObject(rep);
    assert_int_equal(redissrv_replica_online(master), 0);
    static const char *const env[] = {"REFGATE_PARK_WAIT_REPLICAS=1",
                                      "REFGATE_PARK_WAIT_TIMEOUT_MS=300", NULL};
    stack *st = stack_start_on(1, env, redissrv_url(master));
    assert_non_null(st);

    char sid[64], key[200];
    create_and_park(st, "one", sid);
    snprintf(key, sizeof key, "rg:{t:acme:s:%s}:park", sid);
    rep = redisCommand(rc, "EXISTS %s", key); /* on the replica, right away */
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
    assert_int_equal(stack_metric(st, 1, "refgate_parks_unreplicated_total"), 0);

    redissrv_freeze(replica, 1);
    create_and_park(st, "two", sid);
    redissrv_freeze(replica, 0);
    assert_int_equal(stack_metric(st, 1, "refgate_parks_unreplicated_total"), 1);

    redisFree(rc);
    stack_stop(st);
    redissrv_free(replica);
    redissrv_free(master);
}

int main(void)
{
    /* Both workers are "w1"; every checkpoint is a full one. */
    static const char *const env[] = {"REFGATE_WORKER_ID=w1", "REFGATE_CHECKPOINT_FULL_MS=0",
                                      NULL};
    if (fx_stack_start(&gw, "test_fence", NULL, 2, env) < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_worker_cannot_write),
        cmocka_unit_test(test_park_waits_for_a_replica),
    };
    int rc = FX_RUN("fence", tests, NULL, NULL);
    /* A failed assert may leave worker 1 stopped: SIGTERM alone would wait on it. */
    kill(stack_worker_pid(gw.st, 1), SIGCONT);
    fx_stack_stop(&gw);
    return rc;
}
