/*
 * test_limits_burst.c - a tenant's limits as a client that sends everything
 * at once meets them: the real stack (Redis, two workers, nginx), 20 to 50
 * requests released together at one barrier by as many threads, and the
 * outcome counted exactly:
 *
 *   - the session quota: several rounds, after closes, after sessions
 *     expire, with its Redis set lost, and with a worker killed (-9) in the
 *     middle of a create, then the count checked by filling the quota again;
 *   - the concurrency limit, across both workers, measured by what ran:
 *     every command is an eval whose page tells a counter in this test that
 *     it started and then waits at a gate the test keeps shut, so whatever
 *     the limit let through is standing at the gate to be counted; and the
 *     slots of a killed worker coming back;
 *   - idempotency keys, the rate limit, and API keys made (and a tenant
 *     deleted) by many threads at once.
 *
 * Nothing here asserts on time: every wait is bounded, outcomes are counted.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/wire.h"
#include "session/session.h"
#include "tenant/tenant.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"

#define BURST_MAX 50
#define WAIT_MAX_MS 60000 /* the longest any wait here may take */

static fx_stack gw;

/* ---- the tally: a loopback HTTP counter the pages report to ---- */

/*
 * GET /enter: a command started (in progress +1); GET /gate: wait until the
 * test opens the gate; GET /leave: the command is done (in progress -1).
 * Every reply allows any origin, so a page's fetch can read it.
 */
static struct {
    int lfd, port;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int in, max, entered, open, stop;
} tally = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *tally_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char req[2048];
    size_t n = 0;
    while (n < sizeof req - 1 && !memmem(req, n, "\r\n\r\n", 4)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 30000) <= 0)
            break;
        ssize_t r = recv(fd, req + n, sizeof req - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    req[n] = '\0';
    pthread_mutex_lock(&tally.mu);
    if (!strncmp(req, "GET /enter", 10)) {
        tally.entered++;
        if (++tally.in > tally.max)
            tally.max = tally.in;
        pthread_cond_broadcast(&tally.cv);
    } else if (!strncmp(req, "GET /gate", 9)) {
        int64_t end = rg_now_ms() + WAIT_MAX_MS;
        while (!tally.open && !tally.stop && rg_now_ms() < end) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&tally.cv, &tally.mu, &ts);
        }
    } else if (!strncmp(req, "GET /leave", 10)) {
        tally.in--;
        pthread_cond_broadcast(&tally.cv);
    }
    pthread_mutex_unlock(&tally.mu);
    static const char ok[] = "HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\n"
                             "Content-Type: text/plain\r\nContent-Length: 2\r\n"
                             "Connection: close\r\n\r\nok";
    if (send(fd, ok, sizeof ok - 1, MSG_NOSIGNAL) < 0)
        fprintf(stderr, "tally: send: %s\n", strerror(errno));
    close(fd);
    return NULL;
}

static void *tally_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p = {.fd = tally.lfd, .events = POLLIN};
        int r = poll(&p, 1, 100);
        pthread_mutex_lock(&tally.mu);
        int stop = tally.stop;
        pthread_mutex_unlock(&tally.mu);
        if (stop)
            break;
        if (r <= 0)
            continue;
        int fd = accept(tally.lfd, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_t t;
        if (pthread_create(&t, NULL, tally_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
    return NULL;
}

static int tally_start(void)
{
    tally.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (tally.lfd < 0 || bind(tally.lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(tally.lfd, 128) < 0 || getsockname(tally.lfd, (struct sockaddr *)&a, &len) < 0)
        return -1;
    tally.port = ntohs(a.sin_port);
    return pthread_create(&tally.th, NULL, tally_main, NULL) == 0 ? 0 : -1;
}

static void tally_stop(void)
{
    pthread_mutex_lock(&tally.mu);
    tally.stop = 1;
    pthread_cond_broadcast(&tally.cv);
    pthread_mutex_unlock(&tally.mu);
    pthread_join(tally.th, NULL);
    close(tally.lfd);
    rg_sleep_ms(100); /* the connection threads see stop and end */
}

/* A fresh count with the gate shut. */
static void tally_reset(void)
{
    pthread_mutex_lock(&tally.mu);
    tally.in = tally.max = tally.entered = tally.open = 0;
    pthread_mutex_unlock(&tally.mu);
}

static void tally_open(void)
{
    pthread_mutex_lock(&tally.mu);
    tally.open = 1;
    pthread_cond_broadcast(&tally.cv);
    pthread_mutex_unlock(&tally.mu);
}

/* ---- Redis and tenants ---- */

static redisContext *redis_direct(void)
{
    redisContext *c = redissrv_connect(stack_redis(gw.st));
    assert_non_null(c);
    return c;
}

/* A tenant for one test; its Authorization and Content-Type header lines into hdr. */
static void make_tenant(const char *name, int max_sessions, int max_concurrent, double rate,
                        char *hdr, size_t len)
{
    tenant t;
    tenant_init(&t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.rate = rate;
    t.max_sessions = max_sessions;
    t.max_concurrent = max_concurrent;
    t.allow_private = 1; /* the pages and the tally are on loopback */
    t.allow_eval = 1;
    expect_tenant(stack_redis_url(gw.st), &t, hdr, len);
    tenant_destroy(&t);
}

/* ---- requests, one at a time and in bursts ---- */

struct call {
    const char *method;
    char path[96];
    const char *hdr;
    char body[1024];
    /* the outcome */
    int status, retry_after;
    char code[32], session[64], value[64], message[160];
};

/* Runs c (any thread: no assertions here, the outcome goes into c). */
static void run_call(struct call *c)
{
    http_resp r;
    c->status = -1;
    c->code[0] = c->session[0] = c->value[0] = c->message[0] = '\0';
    if (http_request(stack_port(gw.st), c->method, c->path, c->hdr, c->body, strlen(c->body), &r) <
        0) {
        rg_buf_destroy(&r.body);
        return;
    }
    c->status = r.status;
    c->retry_after = r.retry_after;
    cJSON *v = NULL;
    char err[128];
    if (r.body.data && wire_json_decode(r.body.data, r.body.len, &v, err, sizeof err) == 0) {
        snprintf(c->code, sizeof c->code, "%s", reply_code(v));
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(v, "error"), "message");
        if (cJSON_IsString(msg))
            snprintf(c->message, sizeof c->message, "%s", msg->valuestring);
        snprintf(c->session, sizeof c->session, "%s", reply_str(v, "session"));
        const cJSON *val = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(v, "result"), "value");
        if (cJSON_IsString(val))
            snprintf(c->value, sizeof c->value, "%s", val->valuestring);
        else if (cJSON_IsNumber(val))
            snprintf(c->value, sizeof c->value, "%g", val->valuedouble);
    }
    cJSON_Delete(v);
    rg_buf_destroy(&r.body);
}

/* A burst: threads released together at a barrier; done counts the finished ones. */
static struct {
    pthread_barrier_t go;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
} burst_state = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *burst_main(void *arg)
{
    struct call *c = arg;
    pthread_barrier_wait(&burst_state.go);
    run_call(c);
    pthread_mutex_lock(&burst_state.mu);
    burst_state.done++;
    pthread_cond_broadcast(&burst_state.cv);
    pthread_mutex_unlock(&burst_state.mu);
    return NULL;
}

/* Starts n calls at once (join with burst_join). */
static void burst_start(struct call *c, int n, pthread_t *th)
{
    assert_true(n > 0 && n <= BURST_MAX);
    burst_state.done = 0;
    pthread_barrier_init(&burst_state.go, NULL, (unsigned)n);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&th[i], NULL, burst_main, &c[i]), 0);
}

static void burst_join(int n, pthread_t *th)
{
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&burst_state.go);
}

static void burst(struct call *c, int n)
{
    pthread_t th[BURST_MAX];
    burst_start(c, n, th);
    burst_join(n, th);
}

static int finished(void)
{
    pthread_mutex_lock(&burst_state.mu);
    int d = burst_state.done;
    pthread_mutex_unlock(&burst_state.mu);
    return d;
}

/* How many calls got status (and code, when not NULL). */
static int count(const struct call *c, int n, int status, const char *code)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += c[i].status == status && (!code || !strcmp(c[i].code, code));
    return k;
}

/* Every call is a 200 or a 429 quota_exceeded (permanent); the 200s carry distinct ids. */
static void expect_creates(const struct call *c, int n, int want_ok)
{
    int ok = count(c, n, 200, NULL), refused = count(c, n, 429, "quota_exceeded");
    if (ok != want_ok || ok + refused != n) {
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  create %d: %d %s\n", i, c[i].status, c[i].code);
        fail_msg("%d created and %d quota_exceeded of %d, wanted %d created", ok, refused, n,
                 want_ok);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i && c[i].status == 200; j++)
            if (c[j].status == 200)
                assert_string_not_equal(c[i].session, c[j].session);
}

static void creates(struct call *c, int n, const char *hdr, int timeout_ms)
{
    for (int i = 0; i < n; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].method = "POST";
        snprintf(c[i].path, sizeof c[i].path, "/v1/sessions");
        c[i].hdr = hdr;
        snprintf(c[i].body, sizeof c[i].body, "{\"args\":{\"timeout_ms\":%d}}", timeout_ms);
    }
}

static int create_burst(const char *hdr, int n)
{
    struct call c[BURST_MAX];
    creates(c, n, hdr, 10000);
    burst(c, n);
    return count(c, n, 200, NULL);
}

/* One request that must answer want; the reply (caller frees). */
static cJSON *request(const char *method, const char *path, const char *hdr, const char *body,
                      int want)
{
    char h[400];
    snprintf(h, sizeof h, "%sAccept: application/json\r\n", hdr);
    int status;
    cJSON *v = expect_json(stack_port(gw.st), method, path, h, body, &status);
    if (status != want) {
        char *s = cJSON_PrintUnformatted(v);
        fail_msg("%s %s -> %d %.300s (wanted %d)", method, path, status, s, want);
    }
    return v;
}

/* The tenant's session ids as the listing has them (up to max), and how many. */
static int list_sessions(const char *hdr, char (*sids)[64], int max)
{
    cJSON *v = request("GET", "/v1/sessions", hdr, NULL, 200);
    const cJSON *e;
    int n = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(v, "result"), "sessions"))
    {
        if (sids && n < max)
            snprintf(sids[n], 64, "%s",
                     cJSON_GetObjectItemCaseSensitive(e, "session")->valuestring);
        n++;
    }
    cJSON_Delete(v);
    return n;
}

static void close_session(const char *hdr, const char *sid)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%.63s", sid);
    cJSON_Delete(request("DELETE", path, hdr, NULL, 200));
}

static void close_all(const char *hdr)
{
    char sids[BURST_MAX][64];
    int n = list_sessions(hdr, sids, BURST_MAX);
    assert_true(n <= BURST_MAX);
    for (int i = 0; i < n; i++)
        close_session(hdr, sids[i]);
    assert_int_equal(list_sessions(hdr, NULL, 0), 0);
}

/* A session on a page of the test's HTTP server; the worker it lives on (1 or 2). */
static int create_on_page(const char *hdr, char *sid)
{
    char url[256], body[400];
    httpd_url(gw.pages, "/burst.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s\"}}", url);
    cJSON *v = request("POST", "/v1/sessions", hdr, body, 200);
    snprintf(sid, 64, "%s", reply_str(v, "session"));
    int w = atoi(reply_str(v, "worker") + 1);
    cJSON_Delete(v);
    assert_true(w == 1 || w == 2);
    return w;
}

/* The keys in Redis matching pattern (KEYS: a test's keyspace is small). */
static size_t redis_keys(const char *pattern, char (*out)[160], size_t max)
{
    redisContext *c = redis_direct();
    redisReply *rep = redisCommand(c, "KEYS %s", pattern);
    assert_non_null(rep);
    size_t n = rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0;
    for (size_t i = 0; out && i < n && i < max; i++)
        snprintf(out[i], 160, "%s", rep->element[i]->str);
    freeReplyObject(rep);
    redisFree(c);
    return n;
}

/* Waits until no create of tenant is in progress (its reservations lapsed). */
static void wait_no_creates(const char *tid)
{
    char pat[96];
    snprintf(pat, sizeof pat, "rg:{t:%s:s:*}:new", tid);
    int64_t end = rg_now_ms() + WAIT_MAX_MS;
    while (redis_keys(pat, NULL, 0) > 0) {
        if (rg_now_ms() > end)
            fail_msg("creates of %s still reserved after %d ms", tid, WAIT_MAX_MS);
        rg_sleep_ms(200);
    }
}

/* A test that failed half way may have left a worker killed: start it again. */
static int workers_up(void **state)
{
    (void)state;
    for (int i = 1; i <= 2; i++)
        if (stack_worker_pid(gw.st, i) <= 0 && stack_restart_worker(gw.st, i) < 0)
            return -1;
    return 0;
}

/* ---- the session quota ---- */

/* Several rounds of 20 to 30 creates at once against a quota of 5: exactly the room left. */
static void test_quota_rounds_and_closes(void **state)
{
    (void)state;
    char hdr[256];
    make_tenant("quota5", 5, 64, 100000, hdr, sizeof hdr);
    struct call c[BURST_MAX];
    creates(c, 20, hdr, 10000);
    burst(c, 20);
    expect_creates(c, 20, 5);
    assert_int_equal(list_sessions(hdr, NULL, 0), 5);
    /* Full: a second round makes nothing. */
    creates(c, 20, hdr, 10000);
    burst(c, 20);
    expect_creates(c, 20, 0);
    /* Three closed: exactly three come back. */
    char sids[8][64];
    assert_int_equal(list_sessions(hdr, sids, 8), 5);
    for (int i = 0; i < 3; i++)
        close_session(hdr, sids[i]);
    creates(c, 20, hdr, 10000);
    burst(c, 20);
    expect_creates(c, 20, 3);
    assert_int_equal(list_sessions(hdr, NULL, 0), 5);
    /* All closed: 30 at once make 5 again. */
    close_all(hdr);
    creates(c, 30, hdr, 10000);
    burst(c, 30);
    expect_creates(c, 30, 5);
    close_all(hdr);
}

/*
 * Sessions whose keys expire give their slots back. On a stack of its own
 * whose dormant TTL is 10 s (short_ttl_up, short_ttl_down): five sessions
 * fill the quota, are parked, and once their keys have expired (as a
 * forgotten session's do after REFGATE_DORMANT_TTL_S) a burst makes five
 * again.
 */
static stack *main_stack;

static int short_ttl_up(void **state)
{
    (void)state;
    static const char *const env[] = {"REFGATE_DORMANT_TTL_S=10", NULL};
    stack *s = stack_start(2, env);
    if (!s)
        return -1;
    main_stack = gw.st;
    gw.st = s;
    return 0;
}

static int short_ttl_down(void **state)
{
    (void)state;
    stack_stop(gw.st);
    gw.st = main_stack;
    return 0;
}

static void test_quota_after_expiry(void **state)
{
    (void)state;
    char hdr[256];
    make_tenant("quotaexp", 5, 64, 100000, hdr, sizeof hdr);
    assert_int_equal(create_burst(hdr, 20), 5);
    char sids[8][64];
    assert_int_equal(list_sessions(hdr, sids, 8), 5);
    for (int i = 0; i < 5; i++) {
        char path[96];
        snprintf(path, sizeof path, "/v1/sessions/%.63s", sids[i]);
        cJSON_Delete(request("POST", path, hdr, "{\"op\":\"session.park\"}", 200));
    }
    assert_int_equal(create_burst(hdr, 20), 0);
    int64_t end = rg_now_ms() + WAIT_MAX_MS;
    while (redis_keys("rg:{t:quotaexp:s:*}:meta", NULL, 0) > 0) {
        if (rg_now_ms() > end)
            fail_msg("the parked sessions did not expire");
        rg_sleep_ms(200);
    }
    assert_int_equal(create_burst(hdr, 20), 5);
    close_all(hdr);
}

/*
 * A live session that is only read from (no checkpoint: reads write none)
 * lives on past the dormant TTL: it stays in the listing and in session.info,
 * and keeps its quota slot. Before the heartbeat renewed its meta, the meta
 * expired after the TTL while the session still ran, and the quota gave its
 * slot to another.
 */
static void test_read_only_session_lives_on(void **state)
{
    (void)state;
    char hdr[256];
    make_tenant("readonly", 1, 64, 100000, hdr, sizeof hdr);
    assert_int_equal(create_burst(hdr, 3), 1);
    char sids[2][64];
    assert_int_equal(list_sessions(hdr, sids, 2), 1);
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%.63s", sids[0]);
    /* past the 10 s TTL, reading only */
    int64_t end = rg_now_ms() + 13000;
    while (rg_now_ms() < end) {
        cJSON_Delete(request("POST", path, hdr, "{\"op\":\"read\"}", 200));
        rg_sleep_ms(500);
    }
    cJSON *info = request("POST", path, hdr, "{\"op\":\"session.info\"}", 200);
    cJSON_Delete(info);
    assert_int_equal(list_sessions(hdr, NULL, 0), 1);
    assert_int_equal(create_burst(hdr, 3), 0); /* its slot is still taken */
    close_all(hdr);
}

/*
 * The quota's set lost from Redis (or from before it existed) is rebuilt
 * from the sessions that exist: the listing's entries, each checked.
 */
static void test_quota_set_lost(void **state)
{
    (void)state;
    char hdr[256];
    make_tenant("quotalost", 5, 64, 100000, hdr, sizeof hdr);
    assert_int_equal(create_burst(hdr, 20), 5);
    redisContext *rc = redis_direct();
    freeReplyObject(redisCommand(rc, "DEL rg:t:quotalost:quota"));
    assert_int_equal(create_burst(hdr, 20), 0);
    char sids[8][64];
    assert_int_equal(list_sessions(hdr, sids, 8), 5);
    close_session(hdr, sids[0]);
    close_session(hdr, sids[1]);
    freeReplyObject(redisCommand(rc, "DEL rg:t:quotalost:quota"));
    assert_int_equal(create_burst(hdr, 20), 2);
    redisFree(rc);
    close_all(hdr);
}

/* 1 when sid holds a reservation of tenant quotakill that its create has not used yet. */
static int reserved_not_created(redisContext *c, const char *sid)
{
    redisReply *a = redisCommand(c, "ZSCORE rg:t:quotakill:quota %s", sid);
    redisReply *b = redisCommand(c, "EXISTS rg:{t:quotakill:s:%s}:new", sid);
    int yes = a && a->type == REDIS_REPLY_STRING && b && b->type == REDIS_REPLY_INTEGER &&
              b->integer == 1;
    freeReplyObject(a);
    freeReplyObject(b);
    return yes;
}

/*
 * A worker killed (-9) while it is creating: the burst is fired, and as soon
 * as a create on worker 1 holds a reservation (its session id is in the
 * quota's set and its create marker is still there; the ids a worker makes
 * hash back to it), worker 1 is frozen, the reservation checked to still
 * be unused, and the worker killed. Once the dead create's reservation
 * lapsed, the quota holds exactly the sessions that exist: filling it again
 * makes the rest, and no more.
 */
static void test_quota_worker_killed_mid_create(void **state)
{
    (void)state;
    char hdr[256];
    const int quota = 8;
    make_tenant("quotakill", quota, 64, 100000, hdr, sizeof hdr);
    struct call c[BURST_MAX];
    pthread_t th[BURST_MAX];
    redisContext *rc = redis_direct();
    int caught = 0;
    for (int attempt = 0; attempt < 10 && !caught; attempt++) {
        creates(c, 30, hdr, 2000);
        burst_start(c, 30, th);
        while (!caught && finished() < 30) {
            redisReply *z = redisCommand(rc, "ZRANGE rg:t:quotakill:quota 0 -1");
            assert_non_null(z);
            for (size_t i = 0; i < z->elements && !caught; i++) {
                const char *sid = z->element[i]->str;
                if (sess_id_worker(sid, 2) != 0 || !reserved_not_created(rc, sid))
                    continue;
                kill(stack_worker_pid(gw.st, 1), SIGSTOP);
                rg_sleep_ms(50); /* a write the worker had already sent lands */
                if (reserved_not_created(rc, sid)) {
                    caught = 1;
                    fprintf(stderr, "  killing w1 while it creates %s\n", sid);
                    stack_kill_worker(gw.st, 1, SIGKILL);
                } else {
                    kill(stack_worker_pid(gw.st, 1), SIGCONT);
                }
            }
            freeReplyObject(z);
        }
        burst_join(30, th);
        if (!caught) {
            /* Too quick to catch: start over with nothing. */
            wait_no_creates("quotakill");
            close_all(hdr);
        }
    }
    assert_true(caught);
    int ok = count(c, 30, 200, NULL);
    /* The dead worker's creates still hold their slots until they lapse. */
    redisReply *z = redisCommand(rc, "ZRANGE rg:t:quotakill:quota 0 -1");
    assert_non_null(z);
    int dead = 0;
    for (size_t i = 0; i < z->elements; i++)
        dead += reserved_not_created(rc, z->element[i]->str);
    freeReplyObject(z);
    redisFree(rc);
    fprintf(stderr, "  %d reservations left by the dead worker\n", dead);
    assert_true(dead >= 1);
    /* Each request got a session, a refusal, or the dead worker's error. */
    for (int i = 0; i < 30; i++)
        if (c[i].status != 200 && strcmp(c[i].code, "quota_exceeded") && c[i].status < 500)
            fail_msg("create %d: %d %s: %s", i, c[i].status, c[i].code, c[i].message);
    assert_int_equal(stack_restart_worker(gw.st, 1), 0);
    /* The dead create's reservation lapses (its timeout + RG_QUOTA_GRACE_MS). */
    wait_no_creates("quotakill");
    int have = list_sessions(hdr, NULL, 0);
    fprintf(stderr, "  %d created in the burst, %d exist\n", ok, have);
    assert_true(have >= ok && have <= quota);
    struct call d[BURST_MAX];
    creates(d, 20, hdr, 10000);
    burst(d, 20);
    expect_creates(d, 20, quota - have);
    close_all(hdr);
    assert_int_equal(create_burst(hdr, 20), quota);
    close_all(hdr);
}

/* ---- the concurrency limit ---- */

#define CONC_SESSIONS 20

static char conc_hdr[256];
static char conc_sid[CONC_SESSIONS][64];
static int conc_worker[CONC_SESSIONS];

/* Sessions of tenant "conc2" (max_concurrent 2): ten on each worker. */
static void conc_sessions(void)
{
    if (conc_hdr[0])
        return;
    make_tenant("conc2", 100, 2, 100000, conc_hdr, sizeof conc_hdr);
    int on[3] = {0, 0, 0}, n = 0;
    for (int tries = 0; tries < 80 && n < CONC_SESSIONS; tries++) {
        char sid[64];
        int w = create_on_page(conc_hdr, sid);
        if (on[w] >= CONC_SESSIONS / 2) {
            close_session(conc_hdr, sid);
            continue;
        }
        on[w]++;
        conc_worker[n] = w;
        snprintf(conc_sid[n++], 64, "%s", sid);
    }
    assert_int_equal(n, CONC_SESSIONS);
}

/* An eval on session sid that reports to the tally and waits at its gate. */
static void gated_eval(struct call *c, const char *sid)
{
    memset(c, 0, sizeof *c);
    c->method = "POST";
    snprintf(c->path, sizeof c->path, "/v1/sessions/%.63s", sid);
    c->hdr = conc_hdr;
    snprintf(c->body, sizeof c->body,
             "{\"op\":\"eval\",\"args\":{\"await\":true,\"timeout_ms\":60000,\"expression\":"
             "\"(async () => { const u = 'http://127.0.0.1:%d/'; await fetch(u + 'enter'); "
             "await fetch(u + 'gate'); await fetch(u + 'leave'); return 'ran'; })()\"}}",
             tally.port);
}

/*
 * Fires the calls with the gate shut and waits until each has either been
 * refused or reached the gate; returns how many reached it.
 */
static int fire_and_hold(struct call *c, int n, pthread_t *th)
{
    tally_reset();
    burst_start(c, n, th);
    int64_t end = rg_now_ms() + WAIT_MAX_MS;
    for (;;) {
        pthread_mutex_lock(&tally.mu);
        int entered = tally.entered;
        pthread_mutex_unlock(&tally.mu);
        if (finished() + entered >= n)
            return entered;
        if (rg_now_ms() > end)
            fail_msg("%d finished and %d at the gate of %d", finished(), entered, n);
        rg_sleep_ms(20);
    }
}

/*
 * 20 commands at once on 20 sessions, ten per worker, for a tenant with
 * max_concurrent 2: exactly two run (they stand at the gate: the tally has
 * seen two and only two start), the 18 others wait their 2 s and are
 * refused with rate_limited and Retry-After; the gate opens and the two
 * finish. Twice, so the slots of the first round came back.
 */
static void test_concurrency_is_tenant_wide(void **state)
{
    (void)state;
    conc_sessions();
    for (int round = 0; round < 2; round++) {
        struct call c[CONC_SESSIONS];
        pthread_t th[CONC_SESSIONS];
        for (int i = 0; i < CONC_SESSIONS; i++)
            gated_eval(&c[i], conc_sid[i]);
        int at_gate = fire_and_hold(c, CONC_SESSIONS, th);
        int refused = finished();
        pthread_mutex_lock(&tally.mu);
        int in = tally.in, most = tally.max;
        pthread_mutex_unlock(&tally.mu);
        tally_open();
        burst_join(CONC_SESSIONS, th);
        fprintf(stderr, "  round %d: %d ran, %d refused, at most %d at once\n", round, at_gate,
                refused, most);
        assert_int_equal(at_gate, 2);
        assert_int_equal(in, 2);
        assert_int_equal(refused, CONC_SESSIONS - 2);
        assert_int_equal(count(c, CONC_SESSIONS, 200, NULL), 2);
        assert_int_equal(count(c, CONC_SESSIONS, 429, "rate_limited"), CONC_SESSIONS - 2);
        for (int i = 0; i < CONC_SESSIONS; i++) {
            if (c[i].status == 200)
                assert_string_equal(c[i].value, "ran");
            else
                assert_true(c[i].retry_after >= 1);
        }
        pthread_mutex_lock(&tally.mu);
        assert_int_equal(tally.max, 2);
        assert_int_equal(tally.entered, 2);
        pthread_mutex_unlock(&tally.mu);
    }
}

/*
 * The two slots taken by commands on worker 1, which is then killed (-9):
 * the slots come back when its lease lapses (RG_CONC_LEASE_MS), without
 * its restart. Worker 2 then runs exactly two at a time again.
 */
static void test_concurrency_slots_of_a_dead_worker(void **state)
{
    (void)state;
    conc_sessions();
    struct call c[CONC_SESSIONS];
    pthread_t th[CONC_SESSIONS];
    int n1 = 0, on2[CONC_SESSIONS], n2 = 0;
    for (int i = 0; i < CONC_SESSIONS; i++) {
        if (conc_worker[i] == 1 && n1 < 2)
            gated_eval(&c[n1++], conc_sid[i]);
        else if (conc_worker[i] == 2)
            on2[n2++] = i;
    }
    assert_int_equal(n1, 2);
    assert_int_equal(fire_and_hold(c, 2, th), 2);
    stack_kill_worker(gw.st, 1, SIGKILL);
    burst_join(2, th);
    for (int i = 0; i < 2; i++)
        assert_true(c[i].status >= 500);
    /* A quick command on worker 2, until the dead worker's slots are back. */
    int admitted = 0, refused = 0;
    for (int64_t end = rg_now_ms() + WAIT_MAX_MS; !admitted && rg_now_ms() < end;) {
        struct call probe = {.method = "POST", .hdr = conc_hdr};
        snprintf(probe.path, sizeof probe.path, "/v1/sessions/%.63s", conc_sid[on2[0]]);
        snprintf(probe.body, sizeof probe.body,
                 "{\"op\":\"eval\",\"args\":{\"expression\":\"1\"}}");
        run_call(&probe);
        if (probe.status == 200)
            admitted = 1;
        else if (!strcmp(probe.code, "rate_limited"))
            refused++;
        else
            fail_msg("probe: %d %s", probe.status, probe.code);
    }
    fprintf(stderr, "  the dead worker's slots came back after %d refused probes\n", refused);
    assert_true(admitted);
    for (int i = 0; i < n2; i++)
        gated_eval(&c[i], conc_sid[on2[i]]);
    int at_gate = fire_and_hold(c, n2, th);
    int done = finished();
    tally_open();
    burst_join(n2, th);
    assert_int_equal(at_gate, 2);
    assert_int_equal(done, n2 - 2);
    assert_int_equal(count(c, n2, 200, NULL), 2);
    assert_int_equal(count(c, n2, 429, "rate_limited"), n2 - 2);
    pthread_mutex_lock(&tally.mu);
    assert_int_equal(tally.max, 2);
    pthread_mutex_unlock(&tally.mu);
    assert_int_equal(stack_restart_worker(gw.st, 1), 0);
}

/* ---- the other limits ---- */

/*
 * 20 creates at once with one idempotency key make one session: every 200
 * names it, the others are conflict (the first still running). 20 evals at
 * once with one key on a session increment its counter once.
 */
static void test_idempotency_keys_under_a_burst(void **state)
{
    (void)state;
    char hdr[256];
    make_tenant("idem", 5, 64, 100000, hdr, sizeof hdr);
    struct call c[BURST_MAX];
    creates(c, 20, hdr, 10000);
    for (int i = 0; i < 20; i++)
        snprintf(c[i].body, sizeof c[i].body, "{\"idempotency_key\":\"burst-create\"}");
    burst(c, 20);
    const char *sid = NULL;
    for (int i = 0; i < 20; i++) {
        if (c[i].status == 200) {
            if (!sid)
                sid = c[i].session;
            assert_string_equal(c[i].session, sid);
        } else if (c[i].status != 409 || strcmp(c[i].code, "conflict")) {
            fail_msg("create %d: %d %s: %s", i, c[i].status, c[i].code, c[i].message);
        }
    }
    assert_non_null(sid);
    assert_int_equal(list_sessions(hdr, NULL, 0), 1);
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%.63s", sid);
    for (int i = 0; i < 20; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].method = "POST";
        snprintf(c[i].path, sizeof c[i].path, "%s", path);
        c[i].hdr = hdr;
        snprintf(c[i].body, sizeof c[i].body,
                 "{\"op\":\"eval\",\"idempotency_key\":\"burst-inc\",\"args\":{\"expression\":"
                 "\"window.n = (window.n || 0) + 1\"}}");
    }
    burst(c, 20);
    for (int i = 0; i < 20; i++)
        if (c[i].status == 200)
            assert_string_equal(c[i].value, "1");
        else if (c[i].status != 409 || strcmp(c[i].code, "conflict"))
            fail_msg("eval %d: %d %s", i, c[i].status, c[i].code);
    cJSON *v =
        request("POST", path, hdr, "{\"op\":\"eval\",\"args\":{\"expression\":\"window.n\"}}", 200);
    const cJSON *n =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "result"), "value");
    assert_true(cJSON_IsNumber(n));
    assert_int_equal(n->valueint, 1);
    cJSON_Delete(v);
    close_all(hdr);
}

/* n GETs of /v1/sessions at once for the tenant of hdr. */
static void list_burst(struct call *c, int n, const char *hdr)
{
    for (int i = 0; i < n; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].method = "GET";
        snprintf(c[i].path, sizeof c[i].path, "/v1/sessions");
        c[i].hdr = hdr;
    }
    burst(c, n);
}

/*
 * The rate limit. A bucket of one token that refills every 100 s, so no
 * token comes back during a burst: of 30 requests at once on two workers
 * exactly one passes, the others are rate_limited with Retry-After. And a
 * bucket of 400 tokens (a worker takes 20 at a time): 50 requests at once
 * all pass (when each of a burst's first requests took a batch of its own,
 * 50 could take 1,000 tokens and some were refused).
 */
static void test_rate_limit_under_a_burst(void **state)
{
    (void)state;
    char hdr[256];
    make_tenant("ratelow", 5, 64, 0.01, hdr, sizeof hdr);
    struct call c[BURST_MAX];
    for (int round = 0; round < 2; round++) {
        list_burst(c, 30, hdr);
        assert_int_equal(count(c, 30, 200, NULL), round == 0 ? 1 : 0);
        assert_int_equal(count(c, 30, 429, "rate_limited"), round == 0 ? 29 : 30);
        for (int i = 0; i < 30; i++)
            if (c[i].status == 429)
                assert_true(c[i].retry_after >= 1);
    }
    make_tenant("rate400", 5, 64, 400, hdr, sizeof hdr);
    list_burst(c, 50, hdr);
    for (int i = 0; i < 50; i++)
        if (c[i].status != 200)
            fail_msg("request %d: %d %s: %s", i, c[i].status, c[i].code, c[i].message);
}

struct key_job {
    rg_redis *r;
    const char *tid;
    int rc;
    char key[TENANT_KEY_SIZE];
    int delete;
};

static void *key_main(void *arg)
{
    struct key_job *j = arg;
    pthread_barrier_wait(&burst_state.go);
    j->rc = j->delete ? tenant_delete(j->r, j->tid)
                      : tenant_key_create(j->r, j->tid, j->key, sizeof j->key);
    return NULL;
}

/* n key jobs at once (one of them deleting the tenant when del is set). */
static void key_burst(rg_redis *r, const char *tid, struct key_job *j, int n, int del)
{
    pthread_t th[BURST_MAX];
    pthread_barrier_init(&burst_state.go, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        j[i] = (struct key_job){.r = r, .tid = tid, .delete = del && i == n / 2};
        assert_int_equal(pthread_create(&th[i], NULL, key_main, &j[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&burst_state.go);
}

/*
 * API keys: there is no limit on keys per tenant; what must hold under a
 * burst is that every key made exists and works, and that a key made while
 * its tenant is deleted does not outlive it.
 */
static void test_api_keys_under_a_burst(void **state)
{
    (void)state;
    rg_redis *r = stack_redis_client(gw.st);
    assert_non_null(r);
    char hdr[256];
    make_tenant("keys", 5, 64, 100000, hdr, sizeof hdr);
    struct key_job j[BURST_MAX];
    key_burst(r, "keys", j, 30, 0);
    size_t n = 0;
    assert_int_equal(tenant_key_count(r, "keys", &n), 0);
    assert_int_equal(n, 31);
    tenant_cache *cache = tenant_cache_new(r, 0, 0); /* no caching: Redis answers */
    assert_non_null(cache);
    for (int i = 0; i < 30; i++) {
        assert_int_equal(j[i].rc, 0);
        for (int k = 0; k < i; k++)
            assert_string_not_equal(j[i].key, j[k].key);
        tenant t;
        assert_int_equal(tenant_authenticate(cache, j[i].key, &t), 0);
        assert_string_equal(t.id, "keys");
        tenant_destroy(&t);
    }
    /* Keys made while the tenant is deleted: none works afterwards. */
    key_burst(r, "keys", j, 30, 1);
    for (int i = 0; i < 30; i++) {
        if (j[i].delete) {
            assert_int_equal(j[i].rc, 0);
            continue;
        }
        assert_true(j[i].rc == 0 || j[i].rc == RG_ENOTFOUND);
        tenant t;
        if (j[i].rc == 0) {
            assert_int_equal(tenant_authenticate(cache, j[i].key, &t), RG_EUNAUTH);
            tenant_destroy(&t);
        }
    }
    /* And no key of the deleted tenant is left in Redis. */
    redisContext *c = redis_direct();
    redisReply *rep = redisCommand(c, "KEYS rg:{tenants}:key:*");
    assert_non_null(rep);
    for (size_t i = 0; i < rep->elements; i++) {
        redisReply *g = redisCommand(c, "GET %s", rep->element[i]->str);
        assert_non_null(g);
        assert_true(g->type != REDIS_REPLY_STRING || strcmp(g->str, "keys"));
        freeReplyObject(g);
    }
    freeReplyObject(rep);
    redisFree(c);
    tenant_cache_free(cache);
    rg_redis_free(r);
}

int main(void)
{
    /* 64 FastCGI threads: a tenant may hold three quarters of them (48), more
       than any burst here sends to one worker. 24 contexts: the concurrency
       tests' ten sessions per worker and the quota tests' beside them. */
    static const char *const env[] = {"REFGATE_GATEWAY_THREADS=64",
                                      "REFGATE_CONTEXTS_PER_BROWSER=24", NULL};
    if (tally_start() < 0) {
        fprintf(stderr, "test_limits_burst: the tally did not start\n");
        return 1;
    }
    if (fx_stack_start(&gw, "test_limits_burst", NULL, 2, env) < 0) {
        tally_stop();
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_quota_rounds_and_closes, workers_up),
        cmocka_unit_test_setup_teardown(test_quota_after_expiry, short_ttl_up, short_ttl_down),
        cmocka_unit_test_setup_teardown(test_read_only_session_lives_on, short_ttl_up,
                                        short_ttl_down),
        cmocka_unit_test_setup(test_quota_set_lost, workers_up),
        cmocka_unit_test_setup(test_quota_worker_killed_mid_create, workers_up),
        cmocka_unit_test_setup(test_concurrency_is_tenant_wide, workers_up),
        cmocka_unit_test_setup(test_concurrency_slots_of_a_dead_worker, workers_up),
        cmocka_unit_test_setup(test_idempotency_keys_under_a_burst, workers_up),
        cmocka_unit_test_setup(test_rate_limit_under_a_burst, workers_up),
        cmocka_unit_test_setup(test_api_keys_under_a_burst, workers_up),
    };
    int rc = FX_RUN("limits_burst", tests, NULL, NULL);
    tally_open(); /* no worker stays stuck at the gate while the stack stops */
    fx_stack_stop(&gw);
    tally_stop();
    return rc;
}
