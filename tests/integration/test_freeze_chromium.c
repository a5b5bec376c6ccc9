/*
 * test_freeze_chromium.c - the frozen tier, with real Chromium and a real
 * redis-server started here: a live session left idle is frozen by the
 * heartbeat (its page's timers stop: a setInterval records Date.now() of
 * each tick, and none lands while it is frozen), its next command wakes it
 * (the timers run again, its refs still click the right element, it
 * observes), session.info and the stats say frozen while it is; a frozen
 * session can be parked (idle, and least recently used) and closed.
 *
 * With --measure N (run by hand, nothing asserted) it prints how long the
 * first command on a frozen session takes next to one on a live session.
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
#include <sys/stat.h>
#include <unistd.h>

#include "pool/pool.h"
#include "registry/registry.h"
#include "session/session.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/page.h"
#include "tests/support/support.h"

#define TENANT "acme"
#define FREEZE_MS 300 /* the idle time before a freeze, short for the test */

static fx_sessions fx; /* Redis, the pool beside the pages, the registry's store */

/* A counter to click, and a timer that keeps the time of each of its ticks. */
static const char ticks_html[] =
    "<!doctype html><title>Ticks</title>"
    "<output id=n>0</output><button onclick=\"n.textContent=+n.textContent+1\">Increment</button>"
    "<script>window.ticks=[];setInterval(()=>ticks.push(Date.now()),40)</script>";

/* ---- helpers ---- */

static sess_mgr *new_mgr(const char *worker, int capacity, int64_t idle_park_ms)
{
    sess_config cfg;
    sess_config_default(&cfg);
    cfg.worker_id = worker;
    cfg.lease_ms = 1500;
    cfg.heartbeat_ms = 100;
    cfg.capacity = capacity;
    cfg.freeze_idle_ms = FREEZE_MS;
    cfg.idle_park_ms = idle_park_ms;
    sess_mgr *m;
    assert_int_equal(sess_mgr_new(&cfg, fx.chrome.pool, fx.db.conn, fx.store, &m), 0);
    return m;
}

static void eval_in(sess *s, const char *expr, char *out, size_t len)
{
    reg_page_handle h = sess_handle(s);
    assert_int_equal(page_eval(h.conn, h.session, expr, out, len), 0);
}

/* A new session on the ticks page, its Increment ref into inc; held by the caller. */
static sess *create(sess_mgr *m, char *inc)
{
    sess *s;
    char err[256], url[256];
    int rc = sess_create(m, TENANT, NULL, 20000, &s, err, sizeof err);
    if (rc < 0)
        fail_msg("create: %s", err);
    httpd_url(fx.chrome.pages, "/ticks.html", url, sizeof url);
    sess_nav nav;
    if ((rc = sess_navigate(s, url, "load", 20000, &nav, err, sizeof err)) < 0)
        fail_msg("navigate %s: %s (%s)", url, err, rg_err_code(rc));
    sess_nav_free(&nav);
    if (inc) {
        reg_observation o;
        reg_observe_opts opts = {0};
        assert_int_equal(reg_observe(sess_registry(s), sess_handle(s), &opts, &o), 0);
        snprintf(inc, REG_REF_MAX, "%s", expect_ref(&o, "button", "Increment"));
        reg_observation_free(&o);
    }
    return s;
}

static sess *open_s(sess_mgr *m, const char *sid)
{
    sess *s;
    char err[256];
    int rc = sess_open(m, TENANT, sid, 20000, &s, NULL, err, sizeof err);
    if (rc < 0)
        fail_msg("open %s: %s (%s)", sid, err, rg_err_code(rc));
    return s;
}

/* Waits (up to 10 s) until sid is frozen by the stats and by session.info; 1 when it is. */
static int wait_frozen(sess_mgr *m, const char *sid)
{
    for (int i = 0; i < 200; i++) {
        sess_stats ss;
        sess_info in;
        sess_get_stats(m, &ss);
        int frozen = ss.frozen == 1 && sess_get_info(m, TENANT, sid, &in) == 0 && in.frozen;
        if (ss.frozen == 1)
            sess_info_free(&in);
        if (frozen)
            return 1;
        usleep(50000);
    }
    return 0;
}

static void close_s(sess_mgr *m, const char *sid)
{
    sess *s;
    char err[256];
    assert_int_equal(sess_claim(m, TENANT, sid, 20000, &s, err, sizeof err), 0);
    assert_int_equal(sess_close(s), 0);
    sess_done(s, 0);
}

/* ---- tests ---- */

/*
 * An idle session freezes: none of its timer's ticks fall in the frozen
 * window; the next command wakes it: the ticks go on, the ref taken before
 * the freeze clicks the counter, and an observation reads it.
 */
static void test_frozen_page_stops_and_resumes(void **state)
{
    (void)state;
    sess_mgr *m = new_mgr("freeze", 4, 0);
    char inc[REG_REF_MAX], sid[64], v[64], expr[256];
    sess *s = create(m, inc);
    snprintf(sid, sizeof sid, "%s", sess_id(s));
    sess_done(s, 0);
    /* Another session, held (so never idle), in the same browser. */
    sess *other = create(m, NULL);
    assert_true(wait_frozen(m, sid));
    /* From here until the next command, the page is frozen. */
    int64_t t0 = rg_wall_ms();
    usleep(1000000);
    int64_t t1 = rg_wall_ms();
    /* The other page runs on, visible, at its own pace. */
    eval_in(other, "document.visibilityState", v, sizeof v);
    assert_string_equal(v, "visible");
    snprintf(expr, sizeof expr, "String(ticks.filter(t=>t>%lld&&t<%lld).length)", (long long)t0,
             (long long)t1);
    eval_in(other, expr, v, sizeof v);
    assert_true(atoi(v) >= 10);
    sess_info in;
    assert_int_equal(sess_get_info(m, TENANT, sid, &in), 0);
    assert_string_equal(in.state, "live");
    assert_true(in.frozen);
    sess_info_free(&in);

    s = open_s(m, sid);
    snprintf(expr, sizeof expr, "String(ticks.filter(t=>t<%lld).length)", (long long)t0);
    eval_in(s, expr, v, sizeof v);
    assert_true(atoi(v) > 0); /* the timer ran before the freeze */
    snprintf(expr, sizeof expr, "String(ticks.filter(t=>t>%lld&&t<%lld).length)", (long long)t0,
             (long long)t1);
    eval_in(s, expr, v, sizeof v);
    assert_string_equal(v, "0");
    reg_action a = {.op = REG_OP_CLICK, .target = inc, .timeout_ms = 3000};
    reg_action_result r = {0};
    char err[256];
    assert_int_equal(reg_act(sess_registry(s), sess_handle(s), &a, &r, err, sizeof err), 0);
    reg_action_result_free(&r);
    reg_observation o;
    reg_observe_opts opts = {0};
    assert_int_equal(reg_observe(sess_registry(s), sess_handle(s), &opts, &o), 0);
    assert_string_equal(expect_ref(&o, "button", "Increment"), inc);
    reg_observation_free(&o);
    eval_in(s, "n.textContent", v, sizeof v);
    assert_string_equal(v, "1");
    /* Awake, and shown again as a live page is: the timer ticks (the session is
       held, so it stays awake). */
    eval_in(s, "document.visibilityState", v, sizeof v);
    assert_string_equal(v, "visible");
    int64_t t2 = rg_wall_ms();
    snprintf(expr, sizeof expr, "String(ticks.filter(t=>t>%lld).length)", (long long)t2);
    for (int i = 0; i < 100 && (eval_in(s, expr, v, sizeof v), atoi(v) < 3); i++)
        usleep(50000);
    assert_true(atoi(v) >= 3);
    sess_done(s, 0);
    char other_id[64];
    snprintf(other_id, sizeof other_id, "%s", sess_id(other));
    sess_done(other, 0);
    close_s(m, other_id);

    sess_stats ss;
    sess_get_stats(m, &ss);
    assert_true(ss.freezes >= 1);
    assert_true(ss.wakes >= 1);
    assert_int_equal(ss.parked, 0);
    assert_int_equal(ss.restored, 0);
    close_s(m, sid);
    sess_get_stats(m, &ss);
    assert_int_equal(ss.live, 0);
    assert_int_equal(ss.frozen, 0);
    sess_mgr_free(m);
}

/*
 * Every tab of an idle session freezes, not only the active one, and wakes
 * with it. The other tab is in the background, where Chromium runs its
 * timers about once a second: over 2.5 s it ticks at least twice awake,
 * and not at all frozen.
 */
static void test_every_tab_freezes(void **state)
{
    (void)state;
    sess_mgr *m = new_mgr("freezetabs", 4, 0);
    char sid[64], v[64], expr[256], url[256], tab[16], err[256];
    sess *s = create(m, NULL);
    snprintf(sid, sizeof sid, "%s", sess_id(s));
    httpd_url(fx.chrome.pages, "/ticks.html", url, sizeof url);
    sess_nav nav;
    if (sess_tab_new(s, url, 20000, tab, &nav, err, sizeof err) < 0)
        fail_msg("tab.new: %s", err);
    sess_nav_free(&nav);
    assert_string_equal(tab, "t2");
    assert_int_equal(sess_tab_select(s, "t1", err, sizeof err), 0);
    sess_done(s, 1);
    assert_true(wait_frozen(m, sid));
    int64_t t0 = rg_wall_ms();
    usleep(2500000);
    int64_t t1 = rg_wall_ms();
    s = open_s(m, sid);
    assert_int_equal(sess_use_tab(s, "t2", err, sizeof err), 0);
    snprintf(expr, sizeof expr, "String(ticks.filter(t=>t>%lld&&t<%lld).length)", (long long)t0,
             (long long)t1);
    eval_in(s, expr, v, sizeof v);
    assert_string_equal(v, "0");
    /* Awake again, in the background as before: t2's timer ticks. */
    assert_int_equal(sess_use_tab(s, "t1", err, sizeof err), 0);
    int64_t t2 = rg_wall_ms();
    usleep(2500000);
    assert_int_equal(sess_use_tab(s, "t2", err, sizeof err), 0);
    snprintf(expr, sizeof expr, "String(ticks.filter(t=>t>%lld&&t<%lld).length)", (long long)t2,
             (long long)t2 + 2500);
    eval_in(s, expr, v, sizeof v);
    if (atoi(v) < 2)
        fail_msg("awake, the background tab ticked %s times in 2.5 s", v);
    sess_done(s, 0);
    close_s(m, sid);
    sess_mgr_free(m);
}

/* session.info tells a frozen session from one a command just woke, which renders again. */
static void test_info_says_frozen_until_the_next_command(void **state)
{
    (void)state;
    sess_mgr *m = new_mgr("info", 4, 0);
    char sid[64];
    sess *s = create(m, NULL);
    snprintf(sid, sizeof sid, "%s", sess_id(s));
    sess_done(s, 0);
    assert_true(wait_frozen(m, sid));
    s = open_s(m, sid);
    sess_info in;
    assert_int_equal(sess_get_info(m, TENANT, sid, &in), 0);
    assert_false(in.frozen);
    sess_info_free(&in);
    sess_stats ss;
    sess_get_stats(m, &ss);
    assert_int_equal(ss.frozen, 0);
    assert_int_equal(ss.wakes, 1);
    /* Rendering runs again: a screenshot needs a fresh frame. */
    reg_page_handle h = sess_handle(s);
    cdp_reply r;
    assert_int_equal(cdp_call(h.conn, h.session, "Page.captureScreenshot", "{}", 10000, &r), 0);
    const cJSON *data = cJSON_GetObjectItem(r.result, "data");
    assert_true(cJSON_IsString(data) && strlen(data->valuestring) > 100);
    cdp_reply_free(&r);
    sess_done(s, -1);
    close_s(m, sid);
    sess_mgr_free(m);
}

/* A frozen session parks when idle longer, and when the worker is full. */
static void test_frozen_sessions_park(void **state)
{
    (void)state;
    /* Idle parking after the freeze. */
    sess_mgr *m = new_mgr("idlepark", 4, 2500);
    char sid[64], v[64];
    sess *s = create(m, NULL);
    snprintf(sid, sizeof sid, "%s", sess_id(s));
    eval_in(s, "sessionStorage.setItem('kept','yes');'ok'", v, sizeof v);
    sess_done(s, -1); /* no checkpoint: only the park can keep it */
    assert_true(wait_frozen(m, sid));
    sess_stats ss = {0};
    for (int i = 0; i < 200 && ss.parked != 1; i++, usleep(50000))
        sess_get_stats(m, &ss);
    assert_int_equal(ss.parked, 1);
    assert_int_equal(ss.live, 0);
    assert_int_equal(ss.frozen, 0);
    assert_int_equal(ss.park_failures, 0);
    s = open_s(m, sid);
    eval_in(s, "sessionStorage.getItem('kept')", v, sizeof v);
    assert_string_equal(v, "yes"); /* captured at the park, from the woken page */
    sess_done(s, 0);
    close_s(m, sid);
    sess_mgr_free(m);

    /* The least recently used one, frozen, makes room for a new one. */
    m = new_mgr("lru", 1, 0);
    char ida[64];
    s = create(m, NULL);
    snprintf(ida, sizeof ida, "%s", sess_id(s));
    sess_done(s, 0);
    assert_true(wait_frozen(m, ida));
    s = create(m, NULL);
    snprintf(sid, sizeof sid, "%s", sess_id(s));
    sess_done(s, 0);
    sess_info in;
    assert_int_equal(sess_get_info(m, TENANT, ida, &in), 0);
    assert_string_equal(in.state, "parked");
    assert_false(in.frozen);
    sess_info_free(&in);
    sess_get_stats(m, &ss);
    assert_int_equal(ss.live, 1);
    assert_int_equal(ss.parked, 1);
    close_s(m, ida);
    close_s(m, sid);
    sess_mgr_free(m);
}

/* Closing a frozen session frees its context and its keys. */
static void test_frozen_session_closes(void **state)
{
    (void)state;
    sess_mgr *m = new_mgr("close", 4, 0);
    char sid[64];
    sess *s = create(m, NULL);
    snprintf(sid, sizeof sid, "%s", sess_id(s));
    sess_done(s, 0);
    assert_true(wait_frozen(m, sid));
    close_s(m, sid);
    sess_info in;
    assert_int_equal(sess_get_info(m, TENANT, sid, &in), RG_ENOTFOUND);
    sess_stats ss;
    sess_get_stats(m, &ss);
    assert_int_equal(ss.live, 0);
    assert_int_equal(ss.frozen, 0);
    pool_stats ps;
    pool_get_stats(fx.chrome.pool, &ps);
    assert_int_equal(ps.contexts_in_use, 0);
    sess_mgr_free(m);
}

/* ---- --measure N: the first command on a frozen session against a live one ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One command as the gateway runs an observe: open, observe, done; its time in microseconds. */
static int64_t timed_observe(sess_mgr *m, const char *sid)
{
    int64_t t = rg_now_us();
    sess *s;
    char err[256];
    if (sess_open(m, TENANT, sid, 20000, &s, NULL, err, sizeof err) < 0)
        return -1;
    reg_observation o;
    reg_observe_opts opts = {0};
    int rc = reg_observe(sess_registry(s), sess_handle(s), &opts, &o);
    if (rc == 0)
        reg_observation_free(&o);
    sess_done(s, -1);
    return rc == 0 ? rg_now_us() - t : -1;
}

static void report(const char *what, int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    printf("%-8s n=%d p50 %.2f ms  p90 %.2f ms  max %.2f ms\n", what, n, v[n / 2] / 1000.0,
           v[n * 9 / 10] / 1000.0, v[n - 1] / 1000.0);
}

static int measure(int n)
{
    sess_mgr *m = new_mgr("measure", 4, 0);
    sess *s = create(m, NULL);
    char sid[64];
    snprintf(sid, sizeof sid, "%s", sess_id(s));
    sess_done(s, 0);
    int64_t *live = calloc((size_t)n, sizeof *live), *frozen = calloc((size_t)n, sizeof *frozen);
    int ok = 1;
    for (int i = 0; ok && i < n; i++) {
        ok = wait_frozen(m, sid) && (frozen[i] = timed_observe(m, sid)) > 0 &&
             (live[i] = timed_observe(m, sid)) > 0;
    }
    if (ok) {
        report("live", live, n);
        report("frozen", frozen, n);
        printf("added    p50 %.2f ms\n", (frozen[n / 2] - live[n / 2]) / 1000.0);
    }
    free(live);
    free(frozen);
    close_s(m, sid);
    sess_mgr_free(m);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (fx_sessions_start(&fx, "test_freeze_chromium", "test-freeze") < 0 ||
        fx_sessions_page(&fx, "ticks.html", ticks_html) < 0)
        return 1;
    int r;
    if (argc == 3 && !strcmp(argv[1], "--measure")) {
        r = measure(atoi(argv[2]) > 0 ? atoi(argv[2]) : 20);
    } else {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_frozen_page_stops_and_resumes),
            cmocka_unit_test(test_every_tab_freezes),
            cmocka_unit_test(test_info_says_frozen_until_the_next_command),
            cmocka_unit_test(test_frozen_sessions_park),
            cmocka_unit_test(test_frozen_session_closes),
        };
        r = FX_RUN("freeze_chromium", tests, NULL, NULL);
    }
    fx_sessions_stop(&fx);
    return r;
}
