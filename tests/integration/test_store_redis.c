/*
 * test_store_redis.c - the registry's Redis store against a real redis-server
 * that the test starts on a loopback port and stops by PID: the store
 * contract, hash-tagged keys that expire, racing commits that never leave a
 * page over its cap, unreadable values skipped, and an outage answered with
 * RG_EUNAVAIL at once, then recovered from (new connection, script re-sent)
 * when Redis is back.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/support/fixture.h"
#include "tests/support/store_contract.h"
#include "tests/support/support.h"

static redissrv *rs;

static redisContext *direct(void)
{
    return redissrv_connect(rs);
}

static reg_store *open_store(void)
{
    char url[64], err[128];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", redissrv_port(rs));
    reg_redis_config cfg;
    reg_redis_config_default(&cfg);
    cfg.url = url;
    reg_store *s = reg_store_redis_new(&cfg, err, sizeof err);
    if (!s)
        fail_msg("%s", err);
    return s;
}

static void test_contract(void **state)
{
    (void)state;
    reg_store *s = open_store();
    store_contract(s, "{t:acme:s:1}:p", "{t:acme:s:1}:q");
    store_park_contract(s, "{t:acme:s:1}:parked");
    reg_store_free(s);
}

static void test_keys_are_hash_tagged_and_expire(void **state)
{
    (void)state;
    reg_store *s = open_store();
    reg_entry e = contract_entry("@x", rg_wall_ms(), 1);
    assert_int_equal(s->ops->commit(s, "{t:acme:s:42}:main", &e, 1, rg_wall_ms(), 60000, 10, NULL),
                     0);
    redisContext *c = direct();
    assert_non_null(c);
    redisReply *r = redisCommand(c, "PTTL rg:{t:acme:s:42}:reg:main");
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_true(r->integer > 23LL * 3600 * 1000); /* about the 24 h default */
    freeReplyObject(r);
    r = redisCommand(c, "ZSCORE rg:{t:acme:s:42}:seen:main @x");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
    /* A value nobody can read is skipped, not fatal. */
    r = redisCommand(c, "HSET rg:{t:acme:s:42}:reg:main @junk %b", "\xc1\xc1", (size_t)2);
    freeReplyObject(r);
    redisFree(c);
    reg_entry *v;
    size_t n;
    assert_int_equal(s->ops->load(s, "{t:acme:s:42}:main", &v, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].ref, "@x");
    reg_entries_free(v, n);
    reg_store_free(s);
}

/* A fenced commit or park goes through only while the session's meta holds
   the token it carries: a worker whose claim was superseded writes nothing. */
static void test_fenced_writes(void **state)
{
    (void)state;
    reg_store *s = open_store();
    const char *page = "{t:acme:s:77}:main";
    redisContext *c = direct();
    assert_non_null(c);
    redisReply *r = redisCommand(c, "HSET rg:{t:acme:s:77}:meta fence 3");
    freeReplyObject(r);
    int64_t mine = 3, old = 2;
    reg_fence current = {"rg:{t:acme:s:77}:meta", &mine}, stale = {"rg:{t:acme:s:77}:meta", &old};
    int64_t now = rg_wall_ms();
    reg_entry a = contract_entry("@a", now, 1), b = contract_entry("@b", now, 2);
    assert_int_equal(s->ops->commit_fenced(s, page, &a, 1, now, 60000, 10, NULL, &current), 0);
    assert_int_equal(s->ops->commit_fenced(s, page, &b, 1, now, 60000, 10, NULL, &stale),
                     RG_ECONFLICT);
    reg_entry *v;
    size_t n;
    assert_int_equal(s->ops->load(s, page, &v, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].ref, "@a");
    reg_entries_free(v, n);
    /* No meta at all (the session was closed): nothing either. */
    reg_fence gone = {"rg:{t:acme:s:78}:meta", &mine};
    assert_int_equal(s->ops->commit_fenced(s, "{t:acme:s:78}:main", &b, 1, now, 60000, 10, NULL,
                                           &gone),
                     RG_ECONFLICT);
    r = redisCommand(c, "EXISTS rg:{t:acme:s:78}:reg:main");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    /* The park: refused with the old token (the hash stays), done with the current one. */
    assert_int_equal(s->ops->park_fenced(s, page, 60000, &stale), RG_ECONFLICT);
    r = redisCommand(c, "EXISTS rg:{t:acme:s:77}:regz:main");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    assert_int_equal(s->ops->park_fenced(s, page, 60000, &current), 0);
    r = redisCommand(c, "EXISTS rg:{t:acme:s:77}:regz:main");
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    redisFree(c);
    reg_store_free(s);
}

/* A parked page is one compact value with the dormant TTL, about 60 bytes an
   entry; the first load writes the hash and zset back and drops it. */
static void test_parked_page_is_compact(void **state)
{
    (void)state;
    reg_store *s = open_store();
    enum { N = 500 };
    reg_entry *v = calloc(N, sizeof *v);
    char (*names)[24] = calloc(N, 24);
    int64_t now = rg_wall_ms();
    for (int i = 0; i < N; i++) {
        snprintf(names[i], 24, "@e%05d", i);
        v[i] = contract_entry(names[i], now - i, i);
        static const char *alts[] = {"role:button[name=\"Action\"]", "main > div > button"};
        v[i].alt = (char **)alts;
        v[i].n_alt = 2;
        v[i].selector = (char *)alts[0];
        v[i].css_path = (char *)alts[1];
    }
    const char *page = "{t:acme:s:big}:main";
    assert_int_equal(s->ops->commit(s, page, v, N, now, 60000, 2000, NULL), 0);
    assert_int_equal(s->ops->park(s, page, 3600 * 1000), 0);
    redisContext *c = direct();
    redisReply *r = redisCommand(c, "EXISTS rg:{t:acme:s:big}:reg:main rg:{t:acme:s:big}:seen:main");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    r = redisCommand(c, "STRLEN rg:{t:acme:s:big}:regz:main");
    assert_true(r->integer > 0 && r->integer < 64 * N);
    freeReplyObject(r);
    r = redisCommand(c, "PTTL rg:{t:acme:s:big}:regz:main");
    assert_true(r->integer > 3500 * 1000 && r->integer <= 3600 * 1000);
    freeReplyObject(r);
    reg_entry *got;
    size_t n;
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, N);
    reg_entries_free(got, n);
    r = redisCommand(c, "EXISTS rg:{t:acme:s:big}:regz:main");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    r = redisCommand(c, "HLEN rg:{t:acme:s:big}:reg:main");
    assert_int_equal(r->integer, N);
    freeReplyObject(r);
    redisFree(c);
    s->ops->drop(s, page);
    free(names);
    free(v);
    reg_store_free(s);
}

struct racer {
    reg_store *s;
    int id;
    int failures;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    for (int k = 0; k < 40; k++) {
        reg_entry v[10];
        char refs[10][48];
        for (int i = 0; i < 10; i++) {
            snprintf(refs[i], sizeof refs[i], "@r%dk%di%d", r->id, k, i);
            v[i] = contract_entry(refs[i], 1000 + k, i);
        }
        if (r->s->ops->commit(r->s, "{t:acme:s:race}:p", v, 10, 1000 + k, 60000, 25, NULL) < 0)
            r->failures++;
    }
    return NULL;
}

static void test_racing_commits_never_exceed_the_cap(void **state)
{
    (void)state;
    reg_store *s = open_store();
    pthread_t t[4];
    struct racer r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (struct racer){s, i, 0};
        pthread_create(&t[i], NULL, race, &r[i]);
    }
    redisContext *c = direct();
    int max_seen = 0;
    for (int k = 0; k < 200; k++) { /* watch from outside while they race */
        redisReply *z = redisCommand(c, "ZCARD rg:{t:acme:s:race}:seen:p");
        if (z && z->integer > max_seen)
            max_seen = (int)z->integer;
        freeReplyObject(z);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(r[i].failures, 0);
    }
    assert_true(max_seen <= 25);
    redisReply *z = redisCommand(c, "ZCARD rg:{t:acme:s:race}:seen:p");
    redisReply *h = redisCommand(c, "HLEN rg:{t:acme:s:race}:reg:p");
    assert_int_equal(z->integer, 25);
    assert_int_equal(h->integer, 25); /* hash and zset agree: nothing half-written */
    freeReplyObject(z);
    freeReplyObject(h);
    redisFree(c);
    reg_store_free(s);
}

/* Thousands of stale entries go in one commit (the script drops in batches). */
static void test_large_cleanup(void **state)
{
    (void)state;
    reg_store *s = open_store();
    /* The commit writes 500 entries a call and drops 500 a call: two whole
       batches and a part of one, each way. */
    enum { N = 1250 };
    static reg_entry v[N];
    static char refs[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(refs[i], sizeof refs[i], "@big%d", i);
        v[i] = contract_entry(refs[i], 1000, i);
    }
    assert_int_equal(s->ops->commit(s, "{t:acme:s:big}:p", v, N, 1000, 60000, 5000, NULL), 0);
    /* every entry written, each under its own ref */
    reg_entry *all;
    size_t n_all;
    assert_int_equal(s->ops->load(s, "{t:acme:s:big}:p", &all, &n_all), 0);
    assert_int_equal(n_all, N);
    for (size_t i = 0; i < n_all; i++)
        assert_string_equal(all[i].ident.name, all[i].ref);
    assert_true(contract_has(all, n_all, "@big0") && contract_has(all, n_all, "@big1249"));
    reg_entries_free(all, n_all);
    reg_removed removed;
    reg_entry one = contract_entry("@new", 100000, 0);
    assert_int_equal(s->ops->commit(s, "{t:acme:s:big}:p", &one, 1, 100000, 60000, 5000, &removed),
                     0);
    assert_int_equal(removed.n, N);
    reg_removed_free(&removed);
    reg_entry *got;
    size_t n;
    assert_int_equal(s->ops->load(s, "{t:acme:s:big}:p", &got, &n), 0);
    assert_int_equal(n, 1);
    reg_entries_free(got, n);
    reg_store_free(s);
}

/*
 * Connections pooled before Redis restarted are dead after it: the next
 * commands must not take them and fail. Before the fix the first command
 * after the restart failed with each idle connection in turn.
 */
static void test_pooled_connections_survive_a_redis_restart(void **state)
{
    (void)state;
    char url[64], err[128];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", redissrv_port(rs));
    rg_redis_config cfg;
    rg_redis_config_default(&cfg);
    cfg.url = url;
    rg_redis *r;
    assert_int_equal(rg_redis_new(&cfg, &r, err, sizeof err), 0);
    redisContext *c[4];
    for (int i = 0; i < 4; i++)
        assert_non_null(c[i] = rg_redis_take(r));
    for (int i = 0; i < 4; i++)
        rg_redis_give(r, c[i], 0); /* four idle ones */
    assert_int_equal(redissrv_restart(rs), 0);
    for (int i = 0; i < 6; i++) {
        redisContext *k = rg_redis_take(r);
        assert_non_null(k);
        redisReply *rep = redisCommand(k, "PING");
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STATUS);
        assert_string_equal(rep->str, "PONG");
        freeReplyObject(rep);
        rg_redis_give(r, k, 0);
    }
    rg_redis_free(r);
}

static void test_outage_is_unavailable_then_recovers(void **state)
{
    (void)state;
    reg_store *s = open_store();
    reg_entry e = contract_entry("@before", 1000, 1);
    assert_int_equal(s->ops->commit(s, "{t:acme:s:o}:p", &e, 1, 1000, 60000, 10, NULL), 0);
    redissrv_stop(rs);
    reg_entry *v;
    size_t n;
    int64_t t0 = rg_now_ms();
    assert_int_equal(s->ops->commit(s, "{t:acme:s:o}:p", &e, 1, 1000, 60000, 10, NULL),
                     RG_EUNAVAIL);
    assert_int_equal(s->ops->load(s, "{t:acme:s:o}:p", &v, &n), RG_EUNAVAIL);
    assert_string_equal(rg_err_code(RG_EUNAVAIL), "unavailable");
    assert_true(rg_now_ms() - t0 < 10000); /* no hang: refused connections fail at once */
    /* Back (its append-only file kept the data) without the script cache:
       the store reconnects and sends the script whole. */
    assert_int_equal(redissrv_restart(rs), 0);
    reg_entry f = contract_entry("@after", 2000, 1);
    assert_int_equal(s->ops->commit(s, "{t:acme:s:o}:p", &f, 1, 2000, 60000, 10, NULL), 0);
    assert_int_equal(s->ops->load(s, "{t:acme:s:o}:p", &v, &n), 0);
    assert_int_equal(n, 2);
    assert_true(contract_has(v, n, "@before") && contract_has(v, n, "@after"));
    reg_entries_free(v, n);
    reg_store_free(s);
}

/* A password in the URL is honoured; a wrong one is a clear error at start. */
static void test_password_in_url(void **state)
{
    (void)state;
    int port = redissrv_port(rs);
    redissrv_free(rs);
    rs = redissrv_start("s3cret");
    assert_non_null(rs);
    port = redissrv_port(rs);
    char url[96], err[160];
    reg_redis_config cfg;
    reg_redis_config_default(&cfg);
    cfg.url = url;
    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", port);
    assert_null(reg_store_redis_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "password"));
    snprintf(url, sizeof url, "redis://:s3cret@127.0.0.1:%d/2", port);
    setenv("REFGATE_REDIS_URL", url, 1);
    reg_redis_config_default(&cfg);
    reg_redis_config_from_env(&cfg);
    reg_store *s = reg_store_redis_new(&cfg, err, sizeof err);
    if (!s)
        fail_msg("%s", err);
    reg_entry e = contract_entry("@pw", 1000, 1);
    assert_int_equal(s->ops->commit(s, "{t:a:s:pw}:p", &e, 1, 1000, 60000, 10, NULL), 0);
    reg_store_free(s);
    unsetenv("REFGATE_REDIS_URL");
    /* It went to database 2. */
    redisContext *c = direct();
    redisReply *r = redisCommand(c, "AUTH s3cret");
    freeReplyObject(r);
    r = redisCommand(c, "SELECT 2");
    freeReplyObject(r);
    r = redisCommand(c, "EXISTS rg:{t:a:s:pw}:reg:p");
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    redisFree(c);
    redissrv_free(rs);
    rs = redissrv_start(NULL);
    assert_non_null(rs);
}

int main(void)
{
    rs = redissrv_start(NULL);
    if (!rs) {
        fprintf(stderr, "test_store_redis: redis-server did not start (make deps)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contract),
        cmocka_unit_test(test_keys_are_hash_tagged_and_expire),
        cmocka_unit_test(test_parked_page_is_compact),
        cmocka_unit_test(test_fenced_writes),
        cmocka_unit_test(test_racing_commits_never_exceed_the_cap),
        cmocka_unit_test(test_large_cleanup),
        cmocka_unit_test(test_pooled_connections_survive_a_redis_restart),
        cmocka_unit_test(test_outage_is_unavailable_then_recovers),
        cmocka_unit_test(test_password_in_url),
    };
    int rc = FX_RUN("store_redis", tests, NULL, NULL);
    redissrv_free(rs);
    return rc;
}
