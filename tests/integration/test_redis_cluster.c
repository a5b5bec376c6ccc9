/*
 * test_redis_cluster.c - refgate on a real Redis Cluster (3 masters, 3
 * replicas, made with `redis-cli --cluster create` on loopback ports and
 * stopped by PID): the registry's store contract, keys spread over every
 * master, the tenant directory, a slot migrated under traffic (the ASK and
 * MOVED paths) without losing a write, the whole stack creating sessions
 * (spread over the masters, a tenant's quota held), parking one and
 * restoring it on another worker, and a master killed with SIGKILL
 * whose replica takes over while only commands in flight fail, as
 * transient.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tenant/tenant.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/stack.h"
#include "tests/support/store_contract.h"
#include "tests/support/support.h"

static rediscluster *cl;
static rg_redis *conn; /* refgate's client on the cluster */

static reg_store *open_store(void)
{
    char err[256];
    reg_redis_config cfg;
    reg_redis_config_default(&cfg);
    cfg.conn = conn;
    reg_store *s = reg_store_redis_new(&cfg, err, sizeof err);
    if (!s)
        fail_msg("%s", err);
    return s;
}

static int slot_of_page(const char *page)
{
    char key[256];
    snprintf(key, sizeof key, "rg:%s", page);
    return rg_redis_slot(key, strlen(key));
}

/* A number from a node's INFO section ("errorstat_ASK:count=" and the like). */
static long long info_num(int node, const char *section, const char *field)
{
    redisContext *c = rediscluster_connect(cl, node);
    assert_non_null(c);
    redisReply *r = redisCommand(c, "INFO %s", section);
    assert_non_null(r);
    const char *p = r->type == REDIS_REPLY_STRING ? strstr(r->str, field) : NULL;
    long long v = p ? atoll(p + strlen(field)) : 0;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* ---- the store ---- */

static void test_store_contract(void **state)
{
    (void)state;
    reg_store *s = open_store();
    store_contract(s, "{t:acme:s:1}:p", "{t:acme:s:1}:q");
    store_park_contract(s, "{t:acme:s:1}:parked");
    /* Sessions in other slots, so on other masters. */
    store_contract(s, "{t:acme:s:2}:p", "{t:acme:s:2}:q");
    store_contract(s, "{t:beta:s:77}:p", "{t:beta:s:77}:q");
    reg_store_free(s);
}

static void test_sessions_spread_over_every_master(void **state)
{
    (void)state;
    reg_store *s = open_store();
    int64_t now = rg_wall_ms();
    for (int i = 0; i < 60; i++) {
        char page[64];
        snprintf(page, sizeof page, "{t:spread:s:%d}:main", i);
        reg_entry e = contract_entry("@a", now, 1);
        assert_int_equal(s->ops->commit(s, page, &e, 1, now, 60000, 10, NULL), 0);
    }
    int masters = rg_redis_masters(conn);
    assert_int_equal(masters, 3);
    long long total = 0;
    for (int m = 0; m < masters; m++) {
        redisContext *c = rg_redis_take_master(conn, m);
        assert_non_null(c);
        redisReply *r =
            redisCommand(c, "EVAL %s 0", "return #redis.call('KEYS', 'rg:{t:spread:*')");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_true(r->integer > 0); /* every master holds some sessions */
        total += r->integer;
        freeReplyObject(r);
        rg_redis_give(conn, c, 0);
    }
    assert_int_equal(total, 60 * 2); /* reg and seen of each page, each once */
    for (int i = 0; i < 60; i++) {
        char page[64];
        snprintf(page, sizeof page, "{t:spread:s:%d}:main", i);
        reg_entry *v;
        size_t n;
        assert_int_equal(s->ops->load(s, page, &v, &n), 0);
        assert_int_equal(n, 1);
        reg_entries_free(v, n);
    }
    reg_store_free(s);
}

/* ---- tenants ---- */

static void test_tenant_directory(void **state)
{
    (void)state;
    tenant t;
    tenant_init(&t);
    snprintf(t.name, sizeof t.name, "clustered");
    t.max_sessions = 5;
    char key1[TENANT_KEY_SIZE], key2[TENANT_KEY_SIZE], err[256];
    assert_int_equal(tenant_create(conn, &t, key1, sizeof key1, err, sizeof err), 0);
    tenant_destroy(&t);
    assert_int_equal(tenant_key_create(conn, "clustered", key2, sizeof key2), 0);
    tenant_cache *cache = tenant_cache_new(conn, 0, 0);
    assert_non_null(cache);
    tenant got;
    assert_int_equal(tenant_authenticate(cache, key2, &got), 0);
    assert_string_equal(got.id, "clustered");
    assert_int_equal(got.max_sessions, 5);
    tenant_destroy(&got);
    size_t n;
    assert_int_equal(tenant_key_count(conn, "clustered", &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(tenant_key_revoke(conn, key1), 0);
    assert_int_equal(tenant_authenticate(cache, key1, &got), RG_EUNAUTH);
    tenant_destroy(&got);
    assert_int_equal(tenant_key_revoke(conn, key1), RG_ENOTFOUND);
    char **tids;
    assert_int_equal(tenant_list(conn, &tids, &n), 0);
    int seen = 0;
    for (size_t i = 0; i < n; i++)
        seen += !strcmp(tids[i], "clustered");
    tenant_list_free(tids, n);
    assert_int_equal(seen, 1);
    assert_int_equal(tenant_delete(conn, "clustered"), 0);
    assert_int_equal(tenant_authenticate(cache, key2, &got), RG_EUNAUTH);
    tenant_destroy(&got);
    assert_int_equal(tenant_get(conn, "clustered", &got), RG_ENOTFOUND);
    tenant_destroy(&got);
    tenant_cache_free(cache);
    /* Nothing of it is left on any master. */
    for (int m = 0; m < rg_redis_masters(conn); m++) {
        redisContext *c = rg_redis_take_master(conn, m);
        redisReply *r =
            redisCommand(c, "EVAL %s 0", "return #redis.call('KEYS', 'rg:*clustered*')");
        assert_int_equal(r->integer, 0);
        freeReplyObject(r);
        rg_redis_give(conn, c, 0);
    }
}

/* ---- a slot that moves ---- */

#define BUSY_PAGE "{t:mig:s:1}:busy"

struct traffic {
    pthread_t th;
    reg_store *s;
    volatile int stop;
    int ok[4000]; /* ok[i]: ref @i was committed (the store said so) */
    int n, other_errors, unavailable;
};

/* Commits one more ref after another to a page of the migrating slot. */
static void *traffic_main(void *arg)
{
    struct traffic *t = arg;
    while (!t->stop && t->n < 4000) {
        char ref[16];
        snprintf(ref, sizeof ref, "@%d", t->n);
        int64_t now = rg_wall_ms();
        reg_entry e = contract_entry(ref, now, t->n);
        int rc = t->s->ops->commit(t->s, BUSY_PAGE, &e, 1, now, 3600000, 100000, NULL);
        if (rc == 0)
            t->ok[t->n] = 1;
        else if (rc == RG_EUNAVAIL)
            t->unavailable++;
        else
            t->other_errors++;
        __atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELEASE);
        usleep(2000);
    }
    return NULL;
}

/* Waits until the traffic has tried `more` commits after `from` (none is
   timed: each wait has a generous deadline). */
static int traffic_past(struct traffic *t, int from, int more)
{
    for (int i = 0; i < 3000; i++) {
        if (__atomic_load_n(&t->n, __ATOMIC_ACQUIRE) >= from + more)
            return __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);
        usleep(10000);
    }
    fail_msg("the traffic made no progress");
    return -1;
}

static void node_cmd(int node, const char *fmt, const char *a, const char *b)
{
    redisContext *c = rediscluster_connect(cl, node);
    assert_non_null(c);
    redisReply *r = redisCommand(c, fmt, a, b);
    if (!r || r->type == REDIS_REPLY_ERROR)
        fail_msg("node %d: %s: %s", node, fmt, r ? r->str : "no reply");
    freeReplyObject(r);
    redisFree(c);
}

/* Moves every key of slot from node src to node dst, as redis-cli's reshard does. */
static void migrate_keys(int slot, int src, int dst)
{
    redisContext *c = rediscluster_connect(cl, src);
    assert_non_null(c);
    for (;;) {
        redisReply *r = redisCommand(c, "CLUSTER GETKEYSINSLOT %d 100", slot);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        if (r->elements == 0) {
            freeReplyObject(r);
            break;
        }
        const char *argv[108];
        char port[16];
        snprintf(port, sizeof port, "%d", rediscluster_port(cl, dst));
        int a = 0;
        argv[a++] = "MIGRATE";
        argv[a++] = "127.0.0.1";
        argv[a++] = port;
        argv[a++] = "";
        argv[a++] = "0";
        argv[a++] = "5000";
        argv[a++] = "KEYS";
        for (size_t i = 0; i < r->elements; i++)
            argv[a++] = r->element[i]->str;
        redisReply *m = redisCommandArgv(c, a, argv, NULL);
        assert_non_null(m);
        if (m->type == REDIS_REPLY_ERROR)
            fail_msg("MIGRATE: %s", m->str);
        freeReplyObject(m);
        freeReplyObject(r);
    }
    redisFree(c);
}

static void test_slot_migrated_under_traffic(void **state)
{
    (void)state;
    reg_store *s = open_store();
    const char *page = "{t:mig:s:1}:main";
    int slot = slot_of_page(page);
    assert_int_equal(slot, slot_of_page(BUSY_PAGE));
    int src = rediscluster_master_of(cl, slot);
    assert_true(src >= 0);
    int dst = -1;
    for (int probe = 0; probe < 16384 && dst < 0; probe += 1000) {
        int m = rediscluster_master_of(cl, probe);
        if (m != src)
            dst = m;
    }
    assert_true(dst >= 0);
    char src_id[64], dst_id[64];
    assert_int_equal(rediscluster_node_id(cl, src, src_id, sizeof src_id), 0);
    assert_int_equal(rediscluster_node_id(cl, dst, dst_id, sizeof dst_id), 0);

    int64_t now = rg_wall_ms();
    reg_entry v[3] = {contract_entry("@a", now, 1), contract_entry("@b", now, 2),
                      contract_entry("@c", now, 3)};
    assert_int_equal(s->ops->commit(s, page, v, 3, now, 3600000, 100, NULL), 0);

    struct traffic *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->s = s;
    assert_int_equal(pthread_create(&t->th, NULL, traffic_main, t), 0);
    int at = traffic_past(t, 0, 20);

    long long ask0 = info_num(src, "errorstats", "errorstat_ASK:count=");
    long long moved0 = info_num(src, "errorstats", "errorstat_MOVED:count=");
    char slot_s[16];
    snprintf(slot_s, sizeof slot_s, "%d", slot);
    node_cmd(dst, "CLUSTER SETSLOT %s IMPORTING %s", slot_s, src_id);
    node_cmd(src, "CLUSTER SETSLOT %s MIGRATING %s", slot_s, dst_id);
    at = traffic_past(t, at, 3); /* traffic while the slot is migrating */
    migrate_keys(slot, src, dst);
    /* The keys are on dst, the slot still src's: src answers ASK. */
    reg_entry *got;
    size_t n;
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 3);
    reg_entries_free(got, n);
    /* A script on keys of the slot waits (TRYAGAIN) while the slot is split:
       it succeeds or fails as transient, never otherwise. */
    reg_entry d = contract_entry("@d", now, 4);
    int rc = s->ops->commit(s, page, &d, 1, now, 3600000, 100, NULL);
    assert_true(rc == 0 || rc == RG_EUNAVAIL);
    traffic_past(t, at, 3); /* and after its keys moved */
    migrate_keys(slot, src, dst); /* anything the traffic made meanwhile */
    assert_true(info_num(src, "errorstats", "errorstat_ASK:count=") > ask0);
    /* The client's last look at the map was before the handover. */
    t->stop = 1;
    pthread_join(t->th, NULL);

    /* The slot is dst's now: src answers MOVED, and the client follows. */
    node_cmd(dst, "CLUSTER SETSLOT %s NODE %s", slot_s, dst_id);
    node_cmd(src, "CLUSTER SETSLOT %s NODE %s", slot_s, dst_id);
    for (int i = 0; i < rediscluster_nodes(cl); i++) {
        redisContext *c = rediscluster_connect(cl, i);
        redisReply *r = c ? redisCommand(c, "CLUSTER SETSLOT %s NODE %s", slot_s, dst_id) : NULL;
        freeReplyObject(r); /* replicas refuse: they learn it from their master */
        if (c)
            redisFree(c);
    }
    assert_int_equal(s->ops->commit(s, page, &d, 1, now, 3600000, 100, NULL), 0);
    assert_true(info_num(src, "errorstats", "errorstat_MOVED:count=") > moved0);
    assert_int_equal(rediscluster_master_of(cl, slot), dst);

    /* Nothing was lost: the first page whole, and every commit the store
       said it made. Failures, if any, were transient. */
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 4);
    reg_entries_free(got, n);
    assert_int_equal(s->ops->load(s, BUSY_PAGE, &got, &n), 0);
    int committed = 0;
    for (int i = 0; i < t->n; i++) {
        if (!t->ok[i])
            continue;
        committed++;
        char ref[16];
        snprintf(ref, sizeof ref, "@%d", i);
        if (!contract_has(got, n, ref))
            fail_msg("%s was committed during the migration and is gone", ref);
    }
    reg_entries_free(got, n);
    assert_int_equal(t->other_errors, 0);
    assert_true(committed > 0);
    fprintf(stderr, "migration: %d commits, %d ok, %d transient failures\n", t->n, committed,
            t->unavailable);
    free(t);
    reg_store_free(s);
}

/* ---- the whole stack ---- */

static void test_stack_parks_and_restores_on_another_worker(void **state)
{
    (void)state;
    fx_stack f;
    memset(&f, 0, sizeof f);
    f.pages = httpd_start("tests/fixtures");
    assert_non_null(f.pages);
    f.st = stack_start_on(2, NULL, rediscluster_url(cl));
    if (!f.st)
        fail_msg("the stack did not start on %s", rediscluster_url(cl));
    for (int i = 0; i < 2; i++)
        snprintf(f.auth[i], sizeof f.auth[i], "Authorization: Bearer %s\r\n", stack_key(f.st, i));
    snprintf(f.base_url, sizeof f.base_url, "http://127.0.0.1:%d", httpd_port(f.pages));

    /* Sessions land in slots of every master. */
    enum { N = 10 }; /* all on one of three masters: 3 in 3^10 */
    char sids[N][64];
    int on_node[16] = {0};
    char url[256], body[512];
    httpd_url(f.pages, "/actions.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    for (int i = 0; i < N; i++) {
        int status;
        cJSON *r = expect_post(&f, 0, "/v1/sessions", body, &status);
        if (status != 200)
            fail_msg("create: %d %s", status, cJSON_PrintUnformatted(r));
        snprintf(sids[i], sizeof sids[i], "%s", reply_str(r, "session"));
        cJSON_Delete(r);
        char key[512];
        snprintf(key, sizeof key, "rg:{t:acme:s:%.63s}:meta", sids[i]);
        int m = rediscluster_master_of(cl, rg_redis_slot(key, strlen(key)));
        assert_true(m >= 0 && m < 16);
        on_node[m]++;
        redisReply *h = rg_redis_command(conn, "HGET %s state", key);
        assert_non_null(h);
        assert_int_equal(h->type, REDIS_REPLY_STRING);
        assert_string_equal(h->str, "live");
        freeReplyObject(h);
    }
    /* A tenant's quota holds across the workers: its keys are in its own slot. */
    tenant tiny;
    tenant_init(&tiny);
    snprintf(tiny.name, sizeof tiny.name, "tiny");
    tiny.max_sessions = 2;
    tiny.allow_private = 1;
    char tkey[TENANT_KEY_SIZE], terr[256];
    assert_int_equal(stack_make_tenant(rediscluster_url(cl), &tiny, tkey, sizeof tkey, terr,
                                       sizeof terr),
                     0);
    tenant_destroy(&tiny);
    char saved[128];
    snprintf(saved, sizeof saved, "%s", f.auth[1]);
    snprintf(f.auth[1], sizeof f.auth[1], "Authorization: Bearer %s\r\n", tkey);
    for (int i = 0; i < 3; i++) {
        int st;
        cJSON *q = expect_post(&f, 1, "/v1/sessions", body, &st);
        if (i < 2 && st != 200)
            fail_msg("create %d of tiny: %d %s", i, st, cJSON_PrintUnformatted(q));
        if (i == 2) {
            assert_int_equal(st, 429);
            assert_string_equal(reply_code(q), "quota_exceeded");
        }
        cJSON_Delete(q);
    }
    snprintf(f.auth[1], sizeof f.auth[1], "%s", saved);

    const char *sid = sids[0];
    cJSON_Delete(expect_ok(&f, sid, "{\"op\":\"observe\"}"));
    cJSON_Delete(expect_ok(&f, sid, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}"));
    cJSON *r = expect_ok(&f, sid, "{\"op\":\"session.info\"}");
    int owner = atoi(reply_str(r, "worker") + 1);
    cJSON_Delete(r);
    assert_true(owner == 1 || owner == 2);
    r = expect_ok(&f, sid, "{\"op\":\"session.park\"}");
    assert_string_equal(reply_str(r, "state"), "parked");
    cJSON_Delete(r);
    char key[512];
    snprintf(key, sizeof key, "rg:{t:acme:s:%s}:meta", sid);
    redisReply *h = rg_redis_command(conn, "HGET %s state", key);
    assert_non_null(h);
    assert_string_equal(h->str, "parked");
    freeReplyObject(h);
    /* Its worker goes away: the restore lands on the other, refs kept. */
    assert_int_equal(stack_kill_worker(f.st, owner, SIGTERM), 0);
    r = expect_ok(&f, sid, "{\"op\":\"session.restore\"}");
    assert_int_equal(atoi(reply_str(r, "worker") + 1), 3 - owner);
    assert_int_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "result"), "refs_lost")
            ->valueint,
        0);
    cJSON_Delete(r);
    cJSON_Delete(expect_ok(&f, sid, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}"));
    r = expect_ok(&f, sid, "{\"op\":\"read\",\"args\":{\"target\":\"css:#out\"}}");
    assert_string_equal(reply_str(r, "value"), "clicks=1");
    cJSON_Delete(r);
    stack_stop(f.st);
    httpd_stop(f.pages);
    int masters_used = 0;
    for (int m = 0; m < 16; m++)
        masters_used += on_node[m] > 0;
    assert_true(masters_used >= 2);
}

/* ---- a master dies ---- */

static void test_master_killed_replica_takes_over(void **state)
{
    (void)state;
    reg_store *s = open_store();
    enum { PAGES = 30 };
    int64_t now = rg_wall_ms();
    for (int i = 0; i < PAGES; i++) {
        char page[64];
        snprintf(page, sizeof page, "{t:fail:s:%d}:main", i);
        reg_entry e[2] = {contract_entry("@a", now, 1), contract_entry("@b", now, 2)};
        assert_int_equal(s->ops->commit(s, page, e, 2, now, 3600000, 10, NULL), 0);
    }
    /* Each master's writes reached its replica (replication is asynchronous). */
    for (int m = 0; m < rg_redis_masters(conn); m++) {
        redisContext *c = rg_redis_take_master(conn, m);
        assert_non_null(c);
        redisReply *r = redisCommand(c, "WAIT 1 5000");
        assert_non_null(r);
        assert_int_equal(r->integer, 1);
        freeReplyObject(r);
        rg_redis_give(conn, c, 0);
    }
    int victim = rediscluster_master_of(cl, slot_of_page("{t:fail:s:0}:main"));
    assert_true(victim >= 0);
    rediscluster_kill(cl, victim);

    /* Until the replica takes over, commands on the dead master's slots fail
       as transient, never otherwise; then every page is back, whole. */
    int unavailable = 0, other = 0, recovered = 0;
    for (int round = 0; round < 300 && !recovered; round++) {
        int all = 1;
        for (int i = 0; i < PAGES; i++) {
            char page[64];
            snprintf(page, sizeof page, "{t:fail:s:%d}:main", i);
            reg_entry *v;
            size_t n;
            int rc = s->ops->load(s, page, &v, &n);
            if (rc == 0) {
                assert_int_equal(n, 2);
                reg_entries_free(v, n);
            } else {
                all = 0;
                unavailable += rc == RG_EUNAVAIL;
                other += rc != RG_EUNAVAIL;
            }
        }
        recovered = all;
        if (!recovered)
            usleep(100000);
    }
    assert_true(recovered);
    assert_true(unavailable > 0); /* the kill was noticed */
    assert_int_equal(other, 0);
    assert_int_equal(rediscluster_master_of(cl, slot_of_page("{t:fail:s:0}:main")) == victim, 0);
    /* And writes go on, on the new master too. */
    for (int i = 0; i < PAGES; i++) {
        char page[64];
        snprintf(page, sizeof page, "{t:fail:s:%d}:main", i);
        reg_entry e = contract_entry("@c", now, 3);
        assert_int_equal(s->ops->commit(s, page, &e, 1, now, 3600000, 10, NULL), 0);
    }
    fprintf(stderr, "failover: %d loads failed as transient before the replica took over\n",
            unavailable);
    reg_store_free(s);
}

int main(void)
{
    cl = rediscluster_start(3, 1);
    if (!cl) {
        fprintf(stderr,
                "test_redis_cluster: the cluster did not start (redis-server, redis-cli)\n");
        return 1;
    }
    rg_redis_config cfg;
    rg_redis_config_default(&cfg);
    cfg.url = rediscluster_url(cl);
    cfg.command_timeout_ms = 1000;
    char err[256];
    if (rg_redis_new(&cfg, &conn, err, sizeof err) < 0) {
        fprintf(stderr, "test_redis_cluster: %s\n", err);
        rediscluster_free(cl);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_contract),
        cmocka_unit_test(test_sessions_spread_over_every_master),
        cmocka_unit_test(test_tenant_directory),
        cmocka_unit_test(test_slot_migrated_under_traffic),
        cmocka_unit_test(test_stack_parks_and_restores_on_another_worker),
        cmocka_unit_test(test_master_killed_replica_takes_over),
    };
    int rc = FX_RUN("redis_cluster", tests, NULL, NULL);
    rg_redis_free(conn);
    rediscluster_free(cl);
    return rc;
}
