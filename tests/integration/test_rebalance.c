/*
 * test_rebalance.c - adding and removing a worker behind nginx (issue 24,
 * item 4): a real stack of three workers (Redis, Chromium, nginx with the
 * configuration scripts/nginx-conf.sh renders).
 *
 * - Adding a fourth worker (configuration rendered again, nginx reloaded by
 *   its PID) moves about a quarter of the sessions, every one of them to the
 *   new worker, and none between the old ones. The count is printed; it is
 *   a property of the hash (fixed session ids, fixed buckets), not of
 *   timing.
 * - Removing a worker moves only its own sessions, spread over the others.
 * - Before and after each change, every session's HTTP commands and its
 *   WebSocket reach the same worker, and the real sessions answer on both,
 *   from the worker nginx's access log names.
 *
 * Routing is read two ways: nginx's access log (the upstream address of each
 * request, for many session ids: a request for an id that does not exist
 * still goes to that id's worker), and session.info's worker (real sessions,
 * over HTTP and over the WebSocket).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"

static fx_stack gw;

enum { PROBES = 600, REAL = 6, WORKERS_MAX = 8 };

/* Where each probe id goes: the worker for its HTTP command and for its WebSocket. */
typedef struct route {
    int http[PROBES], ws[PROBES];
} route;

static char real_sid[REAL][64];

static void probe_id(int k, char *out, size_t len)
{
    snprintf(out, len, "probe-%04d-%x", k, (unsigned)(k * 2654435761u));
}

/* The worker (1..) of an upstream address "127.0.0.1:port" (the last one
   tried when there are several), by its FastCGI or WebSocket port; 0 if none. */
static int worker_of(const char *upstream, int ws)
{
    const char *last = strrchr(upstream, ',');
    const char *colon = strrchr(last ? last : upstream, ':');
    if (!colon)
        return 0;
    int port = atoi(colon + 1);
    for (int i = 1; i <= WORKERS_MAX; i++)
        if (port == (ws ? stack_ws_port(gw.st, i) : stack_fcgi_port(gw.st, i)))
            return i;
    return 0;
}

/* A JSON string field of one access log line, into out. */
static int log_field(const char *line, const char *name, char *out, size_t len)
{
    char pat[40];
    snprintf(pat, sizeof pat, "\"%s\":\"", name);
    const char *p = strstr(line, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    size_t n = strcspn(p, "\"");
    snprintf(out, len, "%.*s", (int)n, p);
    return 0;
}

static long log_size(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/nginx/access.log", stack_dir(gw.st));
    size_t len = 0;
    char *s = support_slurp(path, &len);
    free(s);
    return (long)len;
}

/* Reads the access log from byte from into r; how many probe routes it found. */
static int read_log(route *r, long from)
{
    memset(r, 0, sizeof *r);
    char path[256];
    snprintf(path, sizeof path, "%s/nginx/access.log", stack_dir(gw.st));
    size_t len = 0;
    char *all = support_slurp(path, &len);
    assert_non_null(all);
    for (char *line = all + ((size_t)from < len ? from : (long)len); *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char sess[64], uri[160], up[160];
        int k;
        if (log_field(line, "session", sess, sizeof sess) == 0 &&
            sscanf(sess, "probe-%4d-", &k) == 1 && k >= 0 && k < PROBES &&
            log_field(line, "uri", uri, sizeof uri) == 0 &&
            log_field(line, "upstream", up, sizeof up) == 0) {
            int ws = strstr(uri, "/ws") != NULL;
            (ws ? r->ws : r->http)[k] = worker_of(up, ws);
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    free(all);
    int found = 0;
    for (int k = 0; k < PROBES; k++)
        found += (r->http[k] > 0) + (r->ws[k] > 0);
    return found;
}

/*
 * Sends each probe id one command and one WebSocket handshake through nginx
 * without a key (the worker refuses, which is enough to know which worker it
 * was), then reads where each went from the access log's lines written since.
 */
static void probe(route *r)
{
    long from = log_size();
    int port = stack_port(gw.st);
    for (int k = 0; k < PROBES; k++) {
        char sid[48], path[96];
        probe_id(k, sid, sizeof sid);
        snprintf(path, sizeof path, "/v1/sessions/%s", sid);
        http_resp h;
        assert_int_equal(
            http_request(port, "POST", path, "Content-Type: application/json\r\n", "{}", 2, &h), 0);
        assert_int_equal(h.status, 401);
        rg_buf_destroy(&h.body);
        snprintf(path, sizeof path, "/v1/sessions/%s/ws", sid);
        int status = 0;
        wsc *w = wsc_open(port, path, NULL, &status);
        if (w)
            wsc_close(w); /* refused after the handshake or at it: routed either way */
    }
    /* A WebSocket's line is written when nginx closes it: wait for them all. */
    int64_t end = rg_now_ms() + 20000;
    while (read_log(r, from) < PROBES * 2 && rg_now_ms() < end)
        rg_sleep_ms(100);
    for (int k = 0; k < PROBES; k++) {
        if (!r->http[k] || !r->ws[k])
            fail_msg("probe %d: no upstream in the access log (http w%d, ws w%d)", k, r->http[k],
                     r->ws[k]);
        if (r->http[k] != r->ws[k])
            fail_msg("probe %d: HTTP went to w%d, its WebSocket to w%d", k, r->http[k], r->ws[k]);
    }
}

static int count_on(const route *r, int w)
{
    int n = 0;
    for (int k = 0; k < PROBES; k++)
        n += r->http[k] == w;
    return n;
}

/* The worker that answered a session.info reply: result.capacity.worker ("w3" -> 3), or 0. */
static int answered_by(const cJSON *v)
{
    const cJSON *cap =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "result"), "capacity");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(cap, "worker");
    return cJSON_IsString(w) && w->valuestring[0] == 'w' ? atoi(w->valuestring + 1) : 0;
}

/* session.info over HTTP: the worker that answered. */
static int http_worker(const char *sid)
{
    cJSON *v = expect_ok(&gw, sid, "{\"op\":\"session.info\"}");
    int i = answered_by(v);
    cJSON_Delete(v);
    return i;
}

/* session.info over the session's WebSocket through nginx: the worker that answered. */
static int ws_worker(const char *sid)
{
    char path[512];
    snprintf(path, sizeof path, "/v1/sessions/%s/ws", sid);
    int status = 0;
    wsc *w = wsc_open(stack_port(gw.st), path, gw.auth[0], &status);
    if (!w)
        fail_msg("WebSocket of %s: HTTP %d", sid, status);
    const char *info = "{\"id\":7,\"op\":\"session.info\"}";
    assert_int_equal(wsc_send(w, info, strlen(info), 1), 0);
    int worker = 0;
    rg_buf in;
    rg_buf_init(&in);
    for (int i = 0; i < 8 && !worker; i++) {
        rg_buf_reset(&in);
        int op = wsc_recv(w, &in, 30000);
        if (getenv("RG_DEBUG_WS"))
            fprintf(stderr, "ws %s: op %d %.*s\n", sid, op, (int)in.len, in.data ? in.data : "");
        if (op < 0)
            break;
        cJSON *v = cJSON_ParseWithLength(in.data, in.len);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
        if (cJSON_IsNumber(id) && id->valueint == 7)
            worker = answered_by(v) > 0 ? answered_by(v) : -1;
        cJSON_Delete(v);
    }
    rg_buf_destroy(&in);
    wsc_close(w);
    if (worker <= 0)
        fail_msg("no session.info reply on the WebSocket of %s", sid);
    return worker;
}

/* Each real session answers on HTTP and on its WebSocket from the same worker; into at[]. */
static void check_real(int at[REAL])
{
    for (int i = 0; i < REAL; i++) {
        at[i] = http_worker(real_sid[i]);
        int ws = ws_worker(real_sid[i]);
        if (ws != at[i])
            fail_msg("session %s: HTTP on w%d, WebSocket on w%d", real_sid[i], at[i], ws);
        /* and HTTP again: the WebSocket did not move it */
        assert_int_equal(http_worker(real_sid[i]), at[i]);
    }
}

static route before, added, removed;
static int real_before[REAL], real_added[REAL];

static void test_sessions_stay_with_their_worker(void **state)
{
    (void)state;
    /* Real sessions, each on the worker that made it (the ids it mints land on it). */
    for (int i = 0; i < REAL; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"op\":\"session.create\",\"args\":{\"url\":\"%s/rebalance-%d\"}}", gw.base_url,
                 i);
        int status;
        cJSON *v = expect_post(&gw, 0, "/v1/sessions", body, &status);
        if (status != 200)
            fail_msg("create: %d %s", status, cJSON_PrintUnformatted(v));
        snprintf(real_sid[i], sizeof real_sid[i], "%s", reply_str(v, "session"));
        const char *w = reply_str(v, "worker");
        int made = w[0] == 'w' ? atoi(w + 1) : 0;
        cJSON_Delete(v);
        assert_true(made > 0);
        assert_int_equal(http_worker(real_sid[i]), made);
    }
    check_real(real_before);
    probe(&before);
    printf("# 3 workers: %d, %d, %d of %d session ids\n", count_on(&before, 1),
           count_on(&before, 2), count_on(&before, 3), PROBES);
    for (int w = 1; w <= 3; w++)
        assert_true(count_on(&before, w) > PROBES / 6); /* each holds a share */
}

static void test_adding_a_worker_moves_a_quarter_to_it(void **state)
{
    (void)state;
    assert_int_equal(stack_add_worker(gw.st), 4);
    probe(&added);
    int moved = 0;
    for (int k = 0; k < PROBES; k++) {
        if (added.http[k] == before.http[k])
            continue;
        moved++;
        if (added.http[k] != 4)
            fail_msg("probe %d moved from w%d to w%d, not to the new worker", k, before.http[k],
                     added.http[k]);
    }
    printf("# adding w4 moved %d of %d session ids (%.1f%%; 1/4 is 25%%)\n", moved, PROBES,
           100.0 * moved / PROBES);
    /* About 1/(N+1) of the buckets, and never the 3/4 a modulo hash would move. */
    assert_true(moved >= PROBES * 15 / 100);
    assert_true(moved <= PROBES * 35 / 100);
    /* The real sessions: the same worker on both protocols, either where they
       were or on the new worker; and they still answer (restored when moved). */
    check_real(real_added);
    int to_new = 0;
    for (int i = 0; i < REAL; i++) {
        if (real_added[i] == real_before[i])
            continue;
        assert_int_equal(real_added[i], 4);
        /* Its next command takes it over from its old worker, on w4. */
        to_new++;
        cJSON *v = expect_ok(&gw, real_sid[i], "{\"op\":\"observe\"}");
        cJSON_Delete(v);
        v = expect_ok(&gw, real_sid[i], "{\"op\":\"session.info\"}");
        assert_string_equal(reply_str(v, "worker"), "w4");
        cJSON_Delete(v);
    }
    printf("# %d of the %d real sessions went to w4 and carry on there\n", to_new, REAL);
}

static void test_removing_a_worker_moves_only_its_sessions(void **state)
{
    (void)state;
    assert_int_equal(stack_remove_worker(gw.st, 2), 0);
    probe(&removed);
    int moved = 0, to[WORKERS_MAX + 1] = {0};
    for (int k = 0; k < PROBES; k++) {
        if (added.http[k] != 2) {
            if (removed.http[k] != added.http[k])
                fail_msg("probe %d moved from w%d to w%d, though w2 was removed", k, added.http[k],
                         removed.http[k]);
            continue;
        }
        assert_int_not_equal(removed.http[k], 2);
        moved++;
        to[removed.http[k]]++;
    }
    printf("# removing w2 moved its %d session ids: %d to w1, %d to w3, %d to w4\n", moved, to[1],
           to[3], to[4]);
    assert_true(moved > 0);
    /* Spread: w2's buckets go each to its own runner-up, not all to one worker. */
    int takers = (to[1] > 0) + (to[3] > 0) + (to[4] > 0);
    assert_true(takers >= 2);
    int at[REAL], lost = 0;
    check_real(at);
    for (int i = 0; i < REAL; i++) {
        if (real_added[i] != 2) {
            assert_int_equal(at[i], real_added[i]);
            continue;
        }
        /* w2 parked it when it stopped; its next command restores it where it went. */
        lost++;
        cJSON *v = expect_ok(&gw, real_sid[i], "{\"op\":\"observe\"}");
        cJSON_Delete(v);
        v = expect_ok(&gw, real_sid[i], "{\"op\":\"session.info\"}");
        assert_string_equal(reply_str(v, "state"), "live");
        assert_int_equal(answered_by(v), at[i]);
        char want[8];
        snprintf(want, sizeof want, "w%d", at[i]);
        assert_string_equal(reply_str(v, "worker"), want);
        cJSON_Delete(v);
    }
    printf("# %d of the %d real sessions were on w2 and carry on elsewhere\n", lost, REAL);
}

int main(void)
{
    if (fx_stack_start(&gw, "test_rebalance", NULL, 3, NULL) < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sessions_stay_with_their_worker),
        cmocka_unit_test(test_adding_a_worker_moves_a_quarter_to_it),
        cmocka_unit_test(test_removing_a_worker_moves_only_its_sessions),
    };
    int rc = FX_RUN("rebalance", tests, NULL, NULL);
    fx_stack_stop(&gw);
    return rc;
}
