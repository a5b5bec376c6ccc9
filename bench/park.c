/*
 * park.c - park and restore against the cold path, in one run, on the same
 * page: a generated page with 500 controls (so 500 refs), some cookies and
 * storage, scrolled down.
 *
 *   cold     session create + navigate + observe
 *   park     capture (cookies, storage, URL, scroll) + one Redis write + the
 *            context disposed
 *   restore  a parked session's next command: fresh context, cookies,
 *            storage, navigate, scroll, the re-binding observe, then the
 *            user's own first observe
 *
 * Also the Redis bytes one parked session holds (MEMORY USAGE of all its
 * keys) and the Redis round trips of one observe (client commands seen by
 * MONITOR). A private redis-server and a one-browser pool; `rounds` rounds
 * (15, or 3 with --quick). Prints one JSON object. Measures; asserts nothing.
 * With --replica, the cost of waiting for a replica at each park instead
 * (replica_main).
 */
#define _GNU_SOURCE
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pool/pool.h"
#include "registry/registry.h"
#include "session/session.h"
#include "tests/support/fixture.h"
#include "tests/support/page.h"
#include "tests/support/stats.h"
#include "tests/support/support.h"

#define CONTROLS 500

/* The upper median; sorts v. */
static double median(double *v, int n)
{
    return stats_rank(v, (size_t)n, 0.5);
}

static int write_page(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/refs500.html", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("<!doctype html><title>500 refs</title><script>document.cookie='sid=abc123;"
          "max-age=3600';localStorage.setItem('cart','[1,2,3]');"
          "sessionStorage.setItem('step','2')</script><main>",
          f);
    for (int i = 0; i < CONTROLS; i++) {
        if (i % 25 == 0)
            fprintf(f, "%s<section><h2>Group %d</h2>", i ? "</section>" : "", i / 25);
        switch (i % 4) {
        case 0:
            fprintf(f, "<button>Action %d</button>", i);
            break;
        case 1:
            fprintf(f, "<a href=#item%d>Item %d</a>", i, i);
            break;
        case 2:
            fprintf(f, "<label>Field %d <input name=f%d></label>", i, i);
            break;
        default:
            fprintf(f, "<button data-testid=t%d>Save %d</button>", i, i);
        }
    }
    fputs("</section></main><div style=height:4000px></div>", f);
    return fclose(f);
}

/* Client commands one observe sends to Redis (MONITOR; script internals excluded). */
static int round_trips(redissrv *rs, sess *s)
{
    redisContext *mon = redissrv_connect(rs);
    redisReply *r = mon ? redisCommand(mon, "MONITOR") : NULL;
    freeReplyObject(r);
    reg_observation o;
    reg_observe_opts opts = {REG_OBSERVE_TEXT};
    page_eval(sess_handle(s).conn, sess_handle(s).session,
              "document.querySelector('main').insertAdjacentHTML('beforeend',"
              "'<button>One more</button>');1",
              NULL, 0);
    if (reg_observe(sess_registry(s), sess_handle(s), &opts, &o) == 0)
        reg_observation_free(&o);
    redisContext *c = redissrv_connect(rs);
    r = c ? redisCommand(c, "ECHO bench-end") : NULL;
    freeReplyObject(r);
    if (c)
        redisFree(c);
    int n = 0;
    for (;;) {
        void *rep = NULL;
        if (!mon || redisGetReply(mon, &rep) != REDIS_OK)
            break;
        r = rep;
        int end = r->type == REDIS_REPLY_STATUS && strstr(r->str, "bench-end");
        n += !end && r->type == REDIS_REPLY_STATUS && !strstr(r->str, " lua]");
        freeReplyObject(r);
        if (end)
            break;
    }
    if (mon)
        redisFree(mon);
    return n;
}

static long parked_bytes(redissrv *rs, const char *sid)
{
    redisContext *c = redissrv_connect(rs);
    if (!c)
        return -1;
    long total = 0;
    const char *kinds[] = {"meta", "park", "reg:main", "seen:main", "regz:main"};
    for (int i = 0; i < 5; i++) {
        redisReply *r = redisCommand(c, "MEMORY USAGE rg:{t:bench:s:%s}:%s", sid, kinds[i]);
        if (r && r->type == REDIS_REPLY_INTEGER)
            total += (long)r->integer;
        freeReplyObject(r);
    }
    redisFree(c);
    return total;
}

/*
 * --replica: the cost of REFGATE_PARK_WAIT_REPLICAS=1. A replica follows the
 * private Redis; two session managers on the same pool and Redis, one that
 * waits for the replica at each park and one that does not, park the same
 * page in alternate rounds. Also the write alone: the park script's Redis
 * call with a value of the park's size, with and without WAIT, many times.
 * Prints one JSON object.
 */
static rg_redis_script put_script = {"redis.call('SET', KEYS[1], ARGV[1]) return 1", ""};

static int replica_main(int rounds)
{
    char docs[64], url[256], err[256] = "";
    snprintf(docs, sizeof docs, "/tmp/refgate-bench-park-docs-%d", (int)getpid());
    mkdir(docs, 0700);
    fx_redis db;
    fx_browser chrome;
    if (write_page(docs) < 0 || fx_redis_start(&db, "park") < 0 ||
        fx_browser_start(&chrome, "park", "bench-park", docs) < 0)
        return 1;
    redissrv *replica = redissrv_start(NULL);
    redisContext *rc = replica ? redissrv_connect(replica) : NULL;
    redisReply *rep = rc ? redisCommand(rc, "REPLICAOF 127.0.0.1 %d", redissrv_port(db.srv)) : NULL;
    freeReplyObject(rep);
    if (rc)
        redisFree(rc);
    if (!rep || redissrv_replica_online(db.srv) < 0) {
        fprintf(stderr, "park: the replica did not come online\n");
        return 1;
    }
    reg_redis_config sc;
    reg_redis_config_default(&sc);
    sc.conn = db.conn;
    reg_store *store = reg_store_redis_new(&sc, err, sizeof err);
    sess_mgr *m[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        sess_config cfg;
        sess_config_default(&cfg);
        cfg.idle_park_ms = 0;
        cfg.park_wait_replicas = k; /* 0: no wait; 1: one replica */
        if (!store || sess_mgr_new(&cfg, chrome.pool, db.conn, store, &m[k]) < 0) {
            fprintf(stderr, "park: %s\n", err);
            return 1;
        }
    }
    httpd_url(chrome.pages, "/refs500.html", url, sizeof url);
    double *park[2] = {calloc((size_t)rounds, sizeof(double)), calloc((size_t)rounds, sizeof(double))};
    size_t bytes = 0;
    int failed = 0;
    /* A warm-up round each, then alternate, so drift hits both alike. */
    for (int i = 0; i < 2 * (rounds + 1); i++) {
        int k = i % 2, round = i / 2 - 1;
        sess *s;
        sess_nav nav;
        reg_observation o;
        reg_observe_opts opts = {REG_OBSERVE_TEXT};
        if (sess_create(m[k], "bench", NULL, 30000, &s, err, sizeof err) < 0 ||
            sess_navigate(s, url, "load", 30000, &nav, err, sizeof err) < 0) {
            fprintf(stderr, "park: %s\n", err);
            return 1;
        }
        sess_nav_free(&nav);
        if (reg_observe(sess_registry(s), sess_handle(s), &opts, &o) == 0)
            reg_observation_free(&o);
        page_eval(sess_handle(s).conn, sess_handle(s).session, "window.scrollTo(0,900);1", NULL, 0);
        size_t pb = 0;
        int64_t t0 = rg_now_us();
        if (sess_park(s, &pb, err, sizeof err) < 0) {
            fprintf(stderr, "park: %s\n", err);
            failed++;
        }
        int64_t t1 = rg_now_us();
        bytes = pb;
        sess_close(s);
        sess_done(s, 0);
        if (round >= 0)
            park[k][round] = (t1 - t0) / 1000.0;
    }
    sess_stats st;
    sess_get_stats(m[1], &st);
    /* The write alone: a value of the park's size, 500 times each way, alternating. */
    enum { WRITES = 500 };
    double *w[2] = {calloc(WRITES, sizeof(double)), calloc(WRITES, sizeof(double))};
    char *value = calloc(bytes + 1, 1);
    memset(value, 'x', bytes);
    for (int i = 0; value && i < 2 * WRITES; i++) {
        int k = i % 2, acked = 0;
        const char *args[] = {"rg:{bench}:park", value};
        size_t lens[] = {strlen(args[0]), bytes};
        int64_t t0 = rg_now_us();
        redisReply *r = k ? rg_redis_eval_wait(db.conn, &put_script, 1, 1, args, lens, 1, 200,
                                               &acked)
                          : rg_redis_eval(db.conn, &put_script, 1, 1, args, lens);
        int64_t t1 = rg_now_us();
        freeReplyObject(r);
        w[k][i / 2] = (double)(t1 - t0);
    }
    printf("{\"rounds\":%d,\"park_bytes\":%zu,\"park_ms\":%.2f,\"park_wait_ms\":%.2f,"
           "\"park_p90_ms\":%.2f,\"park_wait_p90_ms\":%.2f,\"parks_unreplicated\":%llu,"
           "\"write_us\":%.0f,\"write_wait_us\":%.0f,\"write_p99_us\":%.0f,"
           "\"write_wait_p99_us\":%.0f,\"failed\":%d}\n",
           rounds, bytes, median(park[0], rounds), median(park[1], rounds),
           stats_rank(park[0], (size_t)rounds, 0.9), stats_rank(park[1], (size_t)rounds, 0.9),
           (unsigned long long)st.park_unreplicated, stats_rank(w[0], WRITES, 0.5),
           stats_rank(w[1], WRITES, 0.5), stats_rank(w[0], WRITES, 0.99),
           stats_rank(w[1], WRITES, 0.99), failed);
    free(value);
    for (int k = 0; k < 2; k++) {
        free(park[k]);
        free(w[k]);
        sess_mgr_free(m[k]);
    }
    reg_store_free(store);
    redissrv_free(replica);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", docs, chrome.run_dir);
    fx_browser_stop(&chrome);
    fx_redis_stop(&db);
    return system(cmd) == 0 && !failed ? 0 : 1;
}

int main(int argc, char **argv)
{
    int quick = 0, replica = 0;
    for (int i = 1; i < argc; i++) {
        quick |= !strcmp(argv[i], "--quick");
        replica |= !strcmp(argv[i], "--replica");
    }
    int rounds = quick ? 3 : 15;
    if (replica)
        return replica_main(rounds);
    char docs[64], url[256], err[256] = "", product[128];
    snprintf(docs, sizeof docs, "/tmp/refgate-bench-park-docs-%d", (int)getpid());
    mkdir(docs, 0700);
    fx_redis db;
    fx_browser chrome;
    if (write_page(docs) < 0 || fx_redis_start(&db, "park") < 0 ||
        fx_browser_start(&chrome, "park", "bench-park", docs) < 0)
        return 1;
    redissrv *rs = db.srv;
    rg_redis *rr = db.conn;
    pool *p = chrome.pool;
    reg_redis_config sc;
    reg_redis_config_default(&sc);
    sc.conn = rr;
    reg_store *store = reg_store_redis_new(&sc, err, sizeof err);
    sess_config cfg;
    sess_config_default(&cfg);
    cfg.idle_park_ms = 0;
    sess_mgr *m;
    if (!store || sess_mgr_new(&cfg, p, rr, store, &m) < 0) {
        fprintf(stderr, "park: %s\n", err);
        return 1;
    }
    httpd_url(chrome.pages, "/refs500.html", url, sizeof url);
    double *cold = calloc((size_t)rounds, sizeof *cold);
    double *park = calloc((size_t)rounds, sizeof *park);
    double *restore = calloc((size_t)rounds, sizeof *restore);
    long bytes = 0, park_value = 0;
    size_t refs = 0, kept = 0, lost = 0;
    int trips = -1, failed = 0;
    for (int i = 0; i < rounds + 1; i++) {
        int64_t t0 = rg_now_us();
        sess *s;
        sess_nav nav;
        reg_observation o;
        reg_observe_opts opts = {REG_OBSERVE_TEXT};
        if (sess_create(m, "bench", NULL, 30000, &s, err, sizeof err) < 0 ||
            sess_navigate(s, url, "load", 30000, &nav, err, sizeof err) < 0) {
            fprintf(stderr, "park: %s\n", err);
            return 1;
        }
        sess_nav_free(&nav);
        if (reg_observe(sess_registry(s), sess_handle(s), &opts, &o) < 0)
            return 1;
        int64_t t1 = rg_now_us();
        refs = o.n_refs;
        reg_observation_free(&o);
        if (i == 0) {
            page_browser_product(sess_handle(s).conn, product, sizeof product);
            trips = round_trips(rs, s);
        }
        page_eval(sess_handle(s).conn, sess_handle(s).session, "window.scrollTo(0,900);1", NULL, 0);
        char sid[SESS_ID_MAX];
        snprintf(sid, sizeof sid, "%s", sess_id(s));
        size_t pb = 0;
        int64_t t2 = rg_now_us();
        if (sess_park(s, &pb, err, sizeof err) < 0) {
            fprintf(stderr, "park: %s\n", err);
            failed++;
        }
        int64_t t3 = rg_now_us();
        sess_done(s, 0);
        bytes = parked_bytes(rs, sid);
        park_value = (long)pb;
        sess_restore_info ri;
        int64_t t4 = rg_now_us();
        if (sess_open(m, "bench", sid, 30000, &s, &ri, err, sizeof err) < 0) {
            fprintf(stderr, "park: restore: %s\n", err);
            return 1;
        }
        if (reg_observe(sess_registry(s), sess_handle(s), &opts, &o) == 0)
            reg_observation_free(&o);
        int64_t t5 = rg_now_us();
        kept = ri.refs_kept;
        lost = ri.refs_lost;
        sess_close(s);
        sess_done(s, 0);
        if (i == 0)
            continue; /* warm-up */
        cold[i - 1] = (t1 - t0) / 1000.0;
        park[i - 1] = (t3 - t2) / 1000.0;
        restore[i - 1] = (t5 - t4) / 1000.0;
    }
    double cmin = cold[0], rmin = restore[0];
    for (int i = 0; i < rounds; i++) {
        cmin = cold[i] < cmin ? cold[i] : cmin;
        rmin = restore[i] < rmin ? restore[i] : rmin;
    }
    double cmed = median(cold, rounds), pmed = median(park, rounds), rmed = median(restore, rounds);
    printf("{\"chromium\":\"%s\",\"rounds\":%d,\"refs\":%zu,\"refs_kept\":%zu,\"refs_lost\":%zu,"
           "\"cold_ms\":%.2f,\"cold_min_ms\":%.2f,\"cold_max_ms\":%.2f,"
           "\"park_ms\":%.2f,\"restore_ms\":%.2f,\"restore_min_ms\":%.2f,"
           "\"restore_max_ms\":%.2f,\"restore_over_cold\":%.2f,\"redis_bytes_parked\":%ld,"
           "\"park_value_bytes\":%ld,\"redis_round_trips_per_observe\":%d,\"failed\":%d}\n",
           product, rounds, refs, kept, lost, cmed, cmin, cold[rounds - 1], pmed, rmed, rmin,
           restore[rounds - 1], rmed / cmed, bytes, park_value, trips, failed);
    free(cold);
    free(park);
    free(restore);
    sess_mgr_free(m);
    reg_store_free(store);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", docs, chrome.run_dir);
    fx_browser_stop(&chrome);
    fx_redis_stop(&db);
    return system(cmd) == 0 ? 0 : 1;
}
