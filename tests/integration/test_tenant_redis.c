/*
 * test_tenant_redis.c - tenants and API keys against a real redis-server that
 * the test starts on a loopback port: round trips of every field, name rules
 * and conflicts, keys stored only as their SHA-256, authentication through
 * the cache (known, unknown, revoked, several keys, a bounded cache, many
 * threads) and a Redis outage answered with RG_EUNAVAIL, never RG_EUNAUTH.
 * Each test starts from an empty database.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenant/tenant.h"
#include "tests/support/fixture.h"

static fx_redis db;

static int flush_db(void **state)
{
    (void)state;
    assert_int_equal(fx_redis_flush(&db), 0);
    return 0;
}

static long long redis_int(const char *fmt, const char *arg)
{
    redisContext *c = redissrv_connect(db.srv);
    assert_non_null(c);
    redisReply *rep = redisCommand(c, fmt, arg);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    long long v = rep->integer;
    freeReplyObject(rep);
    redisFree(c);
    return v;
}

static void assert_key_format(const char *key)
{
    assert_int_equal(strlen(key), TENANT_KEY_LEN);
    assert_memory_equal(key, "rgk_", 4);
    for (size_t i = 4; i < TENANT_KEY_LEN; i++)
        assert_non_null(
            strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", key[i]));
}

/* Creates tenant name with defaults; its key into key. */
static void create(const char *name, char key[TENANT_KEY_SIZE])
{
    tenant t;
    tenant_init(&t);
    rg_strlcpy(t.name, name, sizeof t.name);
    char err[160] = "";
    int rc = tenant_create(db.conn, &t, key, TENANT_KEY_SIZE, err, sizeof err);
    if (rc)
        fail_msg("tenant_create(%s): %d %s", name, rc, err);
    assert_key_format(key);
    tenant_destroy(&t);
}

static void test_key_hash_is_sha256(void **state)
{
    (void)state;
    char h[TENANT_HASH_SIZE];
    tenant_key_hash("abc", h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    tenant_key_hash("", h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_create_get_round_trip(void **state)
{
    (void)state;
    tenant spec;
    tenant_init(&spec);
    rg_strlcpy(spec.name, "acme-corp_2", sizeof spec.name);
    spec.max_sessions = 7;
    spec.max_concurrent = 3;
    spec.rate = 2.5;
    spec.allow_private = 1;
    spec.allow_eval = 1;
    assert_int_equal(tenant_add_host(&spec, 0, "*.example.com"), 0);
    assert_int_equal(tenant_add_host(&spec, 0, "example.org"), 0);
    assert_int_equal(tenant_add_host(&spec, 1, "10.0.0.0/8"), 0);
    assert_int_equal(tenant_set_str(&spec.user_agent, "Mozilla/5.0 \"quoted\" (refgate)"), 0);
    assert_int_equal(tenant_set_str(&spec.locale, "de-DE"), 0);
    char key[TENANT_KEY_SIZE], err[160];
    int64_t before = rg_wall_ms();
    assert_int_equal(tenant_create(db.conn, &spec, key, sizeof key, err, sizeof err), 0);
    assert_key_format(key);

    tenant got;
    assert_int_equal(tenant_get(db.conn, "acme-corp_2", &got), 0);
    assert_string_equal(got.id, "acme-corp_2");
    assert_string_equal(got.name, "acme-corp_2");
    assert_true(got.created_ms >= before && got.created_ms <= rg_wall_ms());
    assert_int_equal(got.max_sessions, 7);
    assert_int_equal(got.max_concurrent, 3);
    assert_true(got.rate == 2.5);
    assert_int_equal(got.allow_private, 1);
    assert_int_equal(got.allow_eval, 1);
    assert_int_equal(got.n_allow, 2);
    assert_string_equal(got.allow_hosts[0], "*.example.com");
    assert_string_equal(got.allow_hosts[1], "example.org");
    assert_int_equal(got.n_deny, 1);
    assert_string_equal(got.deny_hosts[0], "10.0.0.0/8");
    assert_string_equal(got.user_agent, "Mozilla/5.0 \"quoted\" (refgate)");
    assert_string_equal(got.locale, "de-DE");

    /* A copy is deep: destroying the original leaves it intact. */
    tenant copy;
    assert_int_equal(tenant_copy(&copy, &got), 0);
    tenant_destroy(&got);
    assert_string_equal(copy.allow_hosts[1], "example.org");
    assert_string_equal(copy.locale, "de-DE");
    tenant_destroy(&copy);
    tenant_destroy(&spec);

    assert_int_equal(tenant_get(db.conn, "nobody", &got), RG_ENOTFOUND);
    tenant_destroy(&got);
    assert_int_equal(tenant_get(db.conn, "Not:Valid", &got), RG_ENOTFOUND);
    tenant_destroy(&got);
}

static void test_defaults(void **state)
{
    (void)state;
    char key[TENANT_KEY_SIZE];
    create("plain", key);
    tenant t;
    assert_int_equal(tenant_get(db.conn, "plain", &t), 0);
    assert_int_equal(t.max_sessions, 100);
    assert_int_equal(t.max_concurrent, 16);
    assert_true(t.rate == 50.0);
    assert_int_equal(t.allow_private, 0);
    assert_int_equal(t.allow_eval, 0);
    assert_int_equal(t.n_allow, 0);
    assert_int_equal(t.n_deny, 0);
    assert_null(t.user_agent);
    assert_null(t.locale);
    tenant_destroy(&t);
    /* The hash holds the documented fields, as text. */
    redisContext *c = redissrv_connect(db.srv);
    redisReply *rep = redisCommand(c, "HMGET rg:{tenants}:tenant:plain rate allow_hosts allow_eval name");
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_string_equal(rep->element[0]->str, "50");
    assert_string_equal(rep->element[1]->str, "[]");
    assert_string_equal(rep->element[2]->str, "0");
    assert_string_equal(rep->element[3]->str, "plain");
    freeReplyObject(rep);
    redisFree(c);
}

static void test_update(void **state)
{
    (void)state;
    char key[TENANT_KEY_SIZE], err[160] = "";
    create("upd", key);
    tenant t;
    assert_int_equal(tenant_get(db.conn, "upd", &t), 0);
    int64_t created = t.created_ms;
    t.max_sessions = 5;
    t.rate = 0.25;
    t.allow_eval = 1;
    assert_int_equal(tenant_add_host(&t, 1, "169.254.169.254"), 0);
    assert_int_equal(tenant_set_str(&t.user_agent, "bot/1"), 0);
    assert_int_equal(tenant_update(db.conn, &t, err, sizeof err), 0);
    tenant_destroy(&t);

    assert_int_equal(tenant_get(db.conn, "upd", &t), 0);
    assert_int_equal(t.max_sessions, 5);
    assert_true(t.rate == 0.25);
    assert_int_equal(t.allow_eval, 1);
    assert_int_equal(t.n_deny, 1);
    assert_string_equal(t.user_agent, "bot/1");
    assert_int_equal(t.created_ms, created);

    /* Clearing works too, and an invalid update changes nothing. */
    assert_int_equal(tenant_set_str(&t.user_agent, ""), 0);
    tenant_clear_hosts(&t, 1);
    assert_int_equal(tenant_update(db.conn, &t, err, sizeof err), 0);
    t.rate = -1;
    assert_int_equal(tenant_update(db.conn, &t, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "rate"));
    tenant_destroy(&t);
    assert_int_equal(tenant_get(db.conn, "upd", &t), 0);
    assert_null(t.user_agent);
    assert_int_equal(t.n_deny, 0);
    assert_true(t.rate == 0.25);
    tenant_destroy(&t);

    tenant ghost;
    tenant_init(&ghost);
    rg_strlcpy(ghost.id, "ghost", sizeof ghost.id);
    assert_int_equal(tenant_update(db.conn, &ghost, err, sizeof err), RG_ENOTFOUND);
    assert_int_equal(redis_int("EXISTS %s", "rg:{tenants}:tenant:ghost"), 0);
    tenant_destroy(&ghost);
}

static void test_list_is_sorted(void **state)
{
    (void)state;
    char **v;
    size_t n;
    assert_int_equal(tenant_list(db.conn, &v, &n), 0);
    assert_int_equal(n, 0);
    assert_null(v);
    char key[TENANT_KEY_SIZE];
    create("zeta", key);
    create("alpha", key);
    create("m-1", key);
    assert_int_equal(tenant_list(db.conn, &v, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0], "alpha");
    assert_string_equal(v[1], "m-1");
    assert_string_equal(v[2], "zeta");
    tenant_list_free(v, n);
}

static void test_delete_removes_tenant_and_keys(void **state)
{
    (void)state;
    char k1[TENANT_KEY_SIZE], k2[TENANT_KEY_SIZE], other[TENANT_KEY_SIZE];
    create("doomed", k1);
    create("bystander", other);
    assert_int_equal(tenant_key_create(db.conn, "doomed", k2, sizeof k2), 0);
    assert_int_equal(tenant_delete(db.conn, "doomed"), 0);

    tenant t;
    assert_int_equal(tenant_get(db.conn, "doomed", &t), RG_ENOTFOUND);
    tenant_destroy(&t);
    char h[TENANT_HASH_SIZE], kk[128];
    tenant_key_hash(k1, h);
    snprintf(kk, sizeof kk, "rg:{tenants}:key:%s", h);
    assert_int_equal(redis_int("EXISTS %s", kk), 0);
    tenant_key_hash(k2, h);
    snprintf(kk, sizeof kk, "rg:{tenants}:key:%s", h);
    assert_int_equal(redis_int("EXISTS %s", kk), 0);
    assert_int_equal(redis_int("EXISTS %s", "rg:{tenants}:tenant:doomed:keys"), 0);
    assert_int_equal(redis_int("SISMEMBER rg:{tenants}:all %s", "doomed"), 0);
    assert_int_equal(tenant_delete(db.conn, "doomed"), RG_ENOTFOUND);
    size_t n;
    assert_int_equal(tenant_key_count(db.conn, "doomed", &n), RG_ENOTFOUND);
    assert_int_equal(tenant_key_create(db.conn, "doomed", k2, sizeof k2), RG_ENOTFOUND);
    assert_string_equal(k2, "");

    tenant_cache *c = tenant_cache_new(db.conn, 0, 16);
    assert_int_equal(tenant_authenticate(c, k1, &t), RG_EUNAUTH);
    tenant_destroy(&t);
    assert_int_equal(tenant_authenticate(c, other, &t), 0); /* the other tenant is untouched */
    assert_string_equal(t.id, "bystander");
    tenant_destroy(&t);
    tenant_cache_free(c);
}

static void test_duplicate_name_conflicts(void **state)
{
    (void)state;
    char key[TENANT_KEY_SIZE], again[TENANT_KEY_SIZE], err[160] = "";
    create("dup", key);
    tenant t;
    tenant_init(&t);
    rg_strlcpy(t.name, "dup", sizeof t.name);
    t.max_sessions = 1;
    assert_int_equal(tenant_create(db.conn, &t, again, sizeof again, err, sizeof err),
                     RG_ECONFLICT);
    assert_non_null(strstr(err, "dup"));
    assert_string_equal(again, "");
    tenant_destroy(&t);
    size_t n;
    assert_int_equal(tenant_key_count(db.conn, "dup", &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(tenant_get(db.conn, "dup", &t), 0);
    assert_int_equal(t.max_sessions, 100); /* the first one's */
    tenant_destroy(&t);
}

static void test_invalid_names_and_fields(void **state)
{
    (void)state;
    static const char *bad[] = {
        "",
        "Acme",
        "a b",
        "a:b",
        "../x",
        "x*",
        "caf\xc3\xa9",
        "tab\t",
        "0123456789012345678901234567890123456789012345678901234567890123", /* 64 */
    };
    char key[TENANT_KEY_SIZE], err[160];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tenant_name_valid(bad[i]), 0);
        tenant t;
        tenant_init(&t);
        if (rg_strlcpy(t.name, bad[i], sizeof t.name) >= sizeof t.name) {
            tenant_destroy(&t); /* cannot even be spelled in a tenant struct */
            continue;
        }
        err[0] = '\0';
        assert_int_equal(tenant_create(db.conn, &t, key, sizeof key, err, sizeof err), RG_EBADREQ);
        assert_non_null(strstr(err, "name"));
        tenant_destroy(&t);
    }
    redisContext *c = redissrv_connect(db.srv);
    redisReply *rep = redisCommand(c, "DBSIZE");
    assert_int_equal(rep->integer, 0); /* nothing written */
    freeReplyObject(rep);
    redisFree(c);
    assert_true(tenant_name_valid("a"));
    assert_true(tenant_name_valid("a-b_9"));
    assert_true(
        tenant_name_valid("012345678901234567890123456789012345678901234567890123456789012"));

    tenant t;
    tenant_init(&t);
    rg_strlcpy(t.name, "fields", sizeof t.name);
    t.rate = 0;
    assert_int_equal(tenant_validate(&t, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "rate"));
    t.rate = 1;
    t.max_sessions = -1;
    assert_int_equal(tenant_validate(&t, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "max_sessions"));
    t.max_sessions = 1;
    assert_int_equal(tenant_add_host(&t, 0, "bad host"), 0);
    assert_int_equal(tenant_validate(&t, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "bad host"));
    tenant_clear_hosts(&t, 0);
    assert_int_equal(tenant_set_str(&t.locale, "en US"), 0);
    assert_int_equal(tenant_validate(&t, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "locale"));
    assert_int_equal(tenant_set_str(&t.locale, "en-US"), 0);
    assert_int_equal(tenant_set_str(&t.user_agent, "evil\r\nX-Header: 1"), 0);
    assert_int_equal(tenant_validate(&t, err, sizeof err), RG_EBADREQ);
    assert_int_equal(tenant_set_str(&t.user_agent, NULL), 0);
    assert_int_equal(tenant_validate(&t, err, sizeof err), 0);
    tenant_destroy(&t);
}

/* True when needle occurs in the n bytes at p. */
static int contains(const char *p, size_t n, const char *needle)
{
    return memmem(p, n, needle, strlen(needle)) != NULL;
}

static int reply_contains(const redisReply *rep, const char *needle)
{
    if (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS)
        return contains(rep->str, rep->len, needle);
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
        if (reply_contains(rep->element[i], needle))
            return 1;
    return 0;
}

/* Scans every key of the database, and every value of every type, for needle. */
static int redis_holds(const char *needle)
{
    redisContext *c = redissrv_connect(db.srv);
    assert_non_null(c);
    int found = 0;
    char cursor[32] = "0";
    do {
        redisReply *scan = redisCommand(c, "SCAN %s COUNT 1000", cursor);
        assert_int_equal(scan->type, REDIS_REPLY_ARRAY);
        rg_strlcpy(cursor, scan->element[0]->str, sizeof cursor);
        redisReply *keys = scan->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            const char *k = keys->element[i]->str;
            found |= contains(k, keys->element[i]->len, needle);
            redisReply *type = redisCommand(c, "TYPE %s", k);
            const char *fmt = !strcmp(type->str, "string") ? "GET %s"
                              : !strcmp(type->str, "hash") ? "HGETALL %s"
                              : !strcmp(type->str, "set")  ? "SMEMBERS %s"
                                                           : "TYPE %s";
            freeReplyObject(type);
            redisReply *v = redisCommand(c, fmt, k);
            found |= reply_contains(v, needle);
            freeReplyObject(v);
        }
        freeReplyObject(scan);
    } while (strcmp(cursor, "0"));
    redisFree(c);
    return found;
}

static void test_keys_are_stored_only_as_hashes(void **state)
{
    (void)state;
    char k1[TENANT_KEY_SIZE], k2[TENANT_KEY_SIZE];
    create("secretive", k1);
    assert_int_equal(tenant_key_create(db.conn, "secretive", k2, sizeof k2), 0);
    assert_key_format(k2);
    assert_string_not_equal(k1, k2);
    assert_false(redis_holds(k1));
    assert_false(redis_holds(k2));
    assert_false(redis_holds(k1 + 4)); /* not even the random part */
    char h[TENANT_HASH_SIZE];
    tenant_key_hash(k1, h);
    assert_true(redis_holds(h)); /* the scan does see what is there */
    assert_true(redis_holds("secretive"));
    char kk[128];
    snprintf(kk, sizeof kk, "rg:{tenants}:key:%s", h);
    assert_int_equal(redis_int("EXISTS %s", kk), 1);
    assert_int_equal(redis_int("SISMEMBER rg:{tenants}:tenant:secretive:keys %s", h), 1);
}

static void test_authenticate(void **state)
{
    (void)state;
    char key[TENANT_KEY_SIZE];
    create("auth", key);
    tenant_cache *c = tenant_cache_new(db.conn, 2000, 64);
    assert_non_null(c);
    tenant t;
    assert_int_equal(tenant_authenticate(c, key, &t), 0);
    assert_string_equal(t.id, "auth");
    assert_int_equal(t.max_concurrent, 16);
    tenant_destroy(&t);
    assert_int_equal(tenant_authenticate(c, key, &t), 0); /* from the cache */
    assert_string_equal(t.id, "auth");
    tenant_destroy(&t);

    char wrong[TENANT_KEY_SIZE];
    memcpy(wrong, key, sizeof wrong);
    wrong[10] = wrong[10] == 'A' ? 'B' : 'A';
    assert_int_equal(tenant_authenticate(c, wrong, &t), RG_EUNAUTH);
    tenant_destroy(&t);
    assert_int_equal(tenant_authenticate(c, "", &t), RG_EUNAUTH);
    tenant_destroy(&t);
    assert_int_equal(tenant_authenticate(c, NULL, &t), RG_EUNAUTH);
    tenant_destroy(&t);
    char huge[4096];
    memset(huge, 'x', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    assert_int_equal(tenant_authenticate(c, huge, &t), RG_EUNAUTH);
    tenant_destroy(&t);
    /* The key's digest is not a key. */
    char h[TENANT_HASH_SIZE];
    tenant_key_hash(key, h);
    assert_int_equal(tenant_authenticate(c, h, &t), RG_EUNAUTH);
    tenant_destroy(&t);
    tenant_cache_free(c);
}

/* Polls until key stops authenticating, at most limit_ms; returns the last answer. */
static int wait_rejected(tenant_cache *c, const char *key, int limit_ms)
{
    int64_t end = rg_now_ms() + limit_ms;
    int rc;
    do {
        tenant t;
        rc = tenant_authenticate(c, key, &t);
        tenant_destroy(&t);
        if (rc != 0)
            break;
        rg_sleep_ms(10);
    } while (rg_now_ms() < end);
    return rc;
}

static void test_revoked_key_stops_working(void **state)
{
    (void)state;
    char key[TENANT_KEY_SIZE];
    create("rev", key);
    tenant_cache *c = tenant_cache_new(db.conn, 100, 64);
    tenant t;
    assert_int_equal(tenant_authenticate(c, key, &t), 0);
    tenant_destroy(&t);
    assert_int_equal(tenant_key_revoke(db.conn, key), 0);
    /* Cached for at most the TTL (100 ms); allow a generous margin. */
    assert_int_equal(wait_rejected(c, key, 100 + 3000), RG_EUNAUTH);
    assert_int_equal(tenant_key_revoke(db.conn, key), RG_ENOTFOUND);
    size_t n;
    assert_int_equal(tenant_key_count(db.conn, "rev", &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(tenant_key_revoke(db.conn, "rgk_neverissued"), RG_ENOTFOUND);
    assert_int_equal(tenant_key_revoke(db.conn, ""), RG_ENOTFOUND);
    tenant_cache_free(c);
}

static void test_several_keys_each_revocable(void **state)
{
    (void)state;
    char k[3][TENANT_KEY_SIZE];
    create("multi", k[0]);
    assert_int_equal(tenant_key_create(db.conn, "multi", k[1], sizeof k[1]), 0);
    assert_int_equal(tenant_key_create(db.conn, "multi", k[2], sizeof k[2]), 0);
    size_t n;
    assert_int_equal(tenant_key_count(db.conn, "multi", &n), 0);
    assert_int_equal(n, 3);
    tenant_cache *c = tenant_cache_new(db.conn, 100, 64);
    tenant t;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tenant_authenticate(c, k[i], &t), 0);
        assert_string_equal(t.id, "multi");
        tenant_destroy(&t);
    }
    /* Revoke the middle one by its digest, in upper case. */
    char h[TENANT_HASH_SIZE];
    tenant_key_hash(k[1], h);
    for (char *p = h; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    assert_int_equal(tenant_key_revoke(db.conn, h), 0);
    assert_int_equal(wait_rejected(c, k[1], 100 + 3000), RG_EUNAUTH);
    assert_int_equal(tenant_authenticate(c, k[0], &t), 0);
    tenant_destroy(&t);
    assert_int_equal(tenant_authenticate(c, k[2], &t), 0);
    tenant_destroy(&t);
    assert_int_equal(tenant_key_count(db.conn, "multi", &n), 0);
    assert_int_equal(n, 2);
    /* Then the first by the key itself. */
    assert_int_equal(tenant_key_revoke(db.conn, k[0]), 0);
    assert_int_equal(wait_rejected(c, k[0], 100 + 3000), RG_EUNAUTH);
    assert_int_equal(tenant_authenticate(c, k[2], &t), 0);
    tenant_destroy(&t);
    tenant_cache_free(c);
}

static long long commands_processed(void)
{
    redisContext *c = redissrv_connect(db.srv);
    redisReply *rep = redisCommand(c, "INFO stats");
    const char *p = strstr(rep->str, "total_commands_processed:");
    assert_non_null(p);
    long long v = atoll(p + strlen("total_commands_processed:"));
    freeReplyObject(rep);
    redisFree(c);
    return v;
}

static void test_unknown_keys_are_cached_briefly(void **state)
{
    (void)state;
    tenant_cache *c = tenant_cache_new(db.conn, 60000, 64);
    tenant t;
    const char *bad = "rgk_0000000000000000000000000000000000000000";
    assert_int_equal(tenant_authenticate(c, bad, &t), RG_EUNAUTH);
    tenant_destroy(&t);
    long long before = commands_processed();
    for (int i = 0; i < 200; i++) {
        assert_int_equal(tenant_authenticate(c, bad, &t), RG_EUNAUTH);
        tenant_destroy(&t);
    }
    /* 200 refusals, no lookups: only the two INFO calls (and their AUTH-less connects). */
    assert_true(commands_processed() - before <= 3);
    /* The negative entry is short-lived even with a long TTL: a lookup happens again. */
    rg_sleep_ms(TENANT_CACHE_NEG_TTL_MS + 100);
    before = commands_processed();
    assert_int_equal(tenant_authenticate(c, bad, &t), RG_EUNAUTH);
    tenant_destroy(&t);
    assert_true(commands_processed() - before >= 2);
    tenant_cache_free(c);
}

/* A key that is looked up again after its entry expired rewrites its own
   slot: another key's fresh entry stays, however often that happens. */
static void test_refreshing_a_key_keeps_the_others(void **state)
{
    (void)state;
    char key[TENANT_KEY_SIZE];
    create("kept", key);
    tenant_cache *c = tenant_cache_new(db.conn, 60000, 2); /* two slots: the key and the bad one */
    tenant t;
    assert_int_equal(tenant_authenticate(c, key, &t), 0);
    tenant_destroy(&t);
    const char *bad = "rgk_1111111111111111111111111111111111111111";
    for (int round = 0; round < 4; round++) {
        assert_int_equal(tenant_authenticate(c, bad, &t), RG_EUNAUTH);
        tenant_destroy(&t);
        rg_sleep_ms(TENANT_CACHE_NEG_TTL_MS + 100); /* the bad key's entry expires */
    }
    long long before = commands_processed();
    assert_int_equal(tenant_authenticate(c, key, &t), 0);
    assert_string_equal(t.id, "kept");
    tenant_destroy(&t);
    /* From the cache: only the first INFO. A lookup is two commands more
       (the key's owner, then the tenant). */
    assert_true(commands_processed() - before <= 2);
    tenant_cache_free(c);
}

static void test_bounded_cache_stays_correct(void **state)
{
    (void)state;
    enum { N = 9 };
    char k[N][TENANT_KEY_SIZE], name[16];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "t%d", i);
        create(name, k[i]);
    }
    tenant_cache *c = tenant_cache_new(db.conn, 60000, 2); /* far fewer slots than keys */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            tenant t;
            assert_int_equal(tenant_authenticate(c, k[(i * 5 + round) % N], &t), 0);
            snprintf(name, sizeof name, "t%d", (i * 5 + round) % N);
            assert_string_equal(t.id, name);
            tenant_destroy(&t);
            assert_int_equal(tenant_authenticate(c, "rgk_nope", &t), RG_EUNAUTH);
            tenant_destroy(&t);
        }
    }
    tenant_cache_free(c);
}

struct hammer {
    tenant_cache *c;
    const char (*keys)[TENANT_KEY_SIZE];
    int failures;
};

static void *hammer_run(void *arg)
{
    struct hammer *h = arg;
    for (int i = 0; i < 300; i++) {
        tenant t;
        int which = i % 4;
        int rc = tenant_authenticate(h->c, which == 3 ? "rgk_unknown" : h->keys[which], &t);
        if ((which == 3) != (rc == RG_EUNAUTH) || (which != 3 && rc != 0))
            h->failures++;
        tenant_destroy(&t);
    }
    return NULL;
}

static void test_threads_share_one_cache(void **state)
{
    (void)state;
    char k[3][TENANT_KEY_SIZE];
    create("th0", k[0]);
    create("th1", k[1]);
    create("th2", k[2]);
    tenant_cache *c = tenant_cache_new(db.conn, 5, 2); /* tiny: constant expiry and eviction */
    pthread_t th[6];
    struct hammer h[6];
    for (int i = 0; i < 6; i++) {
        h[i] = (struct hammer){c, (const char(*)[TENANT_KEY_SIZE])k, 0};
        assert_int_equal(pthread_create(&th[i], NULL, hammer_run, &h[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(h[i].failures, 0);
    }
    tenant_cache_free(c);
}

static void test_redis_down_is_unavailable_then_recovers(void **state)
{
    (void)state;
    char key[TENANT_KEY_SIZE], key2[TENANT_KEY_SIZE], err[160];
    create("outage", key);
    tenant_cache *c = tenant_cache_new(db.conn, 100, 64);
    tenant t;
    assert_int_equal(tenant_authenticate(c, key, &t), 0);
    tenant_destroy(&t);

    redissrv_stop(db.srv);
    rg_sleep_ms(150); /* past the TTL: the cache must ask */
    assert_int_equal(tenant_authenticate(c, key, &t), RG_EUNAVAIL);
    tenant_destroy(&t);
    assert_int_equal(tenant_authenticate(c, "rgk_somethingelse", &t), RG_EUNAVAIL);
    tenant_destroy(&t);
    assert_int_equal(tenant_get(db.conn, "outage", &t), RG_EUNAVAIL);
    tenant_destroy(&t);
    tenant_init(&t);
    rg_strlcpy(t.name, "during", sizeof t.name);
    assert_int_equal(tenant_create(db.conn, &t, key2, sizeof key2, err, sizeof err), RG_EUNAVAIL);
    tenant_destroy(&t);
    char **v;
    size_t n;
    assert_int_equal(tenant_list(db.conn, &v, &n), RG_EUNAVAIL);
    assert_int_equal(tenant_key_revoke(db.conn, key), RG_EUNAVAIL);

    assert_int_equal(redissrv_restart(db.srv), 0);
    assert_int_equal(tenant_authenticate(c, key, &t), 0);
    assert_string_equal(t.id, "outage");
    tenant_destroy(&t);
    assert_int_equal(tenant_list(db.conn, &v, &n), 0);
    assert_int_equal(n, 1); /* "during" was never written */
    tenant_list_free(v, n);
    tenant_cache_free(c);
}

/* Tenants written before the tagged keys (rg:tenant:T ...) move to them once,
   keys included, and the old keys go. */
static void test_old_layout_is_upgraded(void **state)
{
    (void)state;
    char old_key[] = "rgk_0123456789abcdefghijABCDEFGHIJ0123456789";
    char h[TENANT_HASH_SIZE];
    tenant_key_hash(old_key, h);
    redisContext *c = redissrv_connect(db.srv);
    assert_non_null(c);
    const char *cmds[][8] = {
        {"HSET", "rg:tenant:veteran", "name", "veteran", "max_sessions", "7", "rate", "3"},
        {"SADD", "rg:tenant:veteran:keys", h},
        {"SET", NULL, "veteran"},
        {"SADD", "rg:tenants", "veteran"},
    };
    int argc[] = {8, 3, 3, 3};
    char kk[128];
    snprintf(kk, sizeof kk, "rg:key:%s", h);
    cmds[2][1] = kk;
    for (int i = 0; i < 4; i++) {
        redisReply *r = redisCommandArgv(c, argc[i], cmds[i], NULL);
        assert_non_null(r);
        assert_true(r->type != REDIS_REPLY_ERROR);
        freeReplyObject(r);
    }
    redisFree(c);
    /* One made since keeps its own key. */
    char new_key[TENANT_KEY_SIZE];
    create("newcomer", new_key);

    size_t moved;
    assert_int_equal(tenant_upgrade(db.conn, &moved), 0);
    assert_int_equal(moved, 1);
    tenant t;
    assert_int_equal(tenant_get(db.conn, "veteran", &t), 0);
    assert_int_equal(t.max_sessions, 7);
    assert_true(t.rate == 3.0);
    tenant_destroy(&t);
    tenant_cache *cache = tenant_cache_new(db.conn, 0, 0);
    assert_int_equal(tenant_authenticate(cache, old_key, &t), 0);
    assert_string_equal(t.id, "veteran");
    tenant_destroy(&t);
    assert_int_equal(tenant_authenticate(cache, new_key, &t), 0);
    assert_string_equal(t.id, "newcomer");
    tenant_destroy(&t);
    tenant_cache_free(cache);
    char **tids;
    size_t n;
    assert_int_equal(tenant_list(db.conn, &tids, &n), 0);
    assert_int_equal(n, 2);
    tenant_list_free(tids, n);
    assert_int_equal(redis_int("EXISTS %s", "rg:tenant:veteran"), 0);
    assert_int_equal(redis_int("EXISTS %s", "rg:tenant:veteran:keys"), 0);
    assert_int_equal(redis_int("EXISTS %s", kk), 0);
    assert_int_equal(redis_int("EXISTS %s", "rg:tenants"), 0);
    assert_int_equal(tenant_upgrade(db.conn, &moved), 0);
    assert_int_equal(moved, 0);
}

int main(void)
{
    if (fx_redis_start(&db, "test_tenant_redis") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_hash_is_sha256),
        cmocka_unit_test_setup(test_create_get_round_trip, flush_db),
        cmocka_unit_test_setup(test_defaults, flush_db),
        cmocka_unit_test_setup(test_update, flush_db),
        cmocka_unit_test_setup(test_list_is_sorted, flush_db),
        cmocka_unit_test_setup(test_delete_removes_tenant_and_keys, flush_db),
        cmocka_unit_test_setup(test_duplicate_name_conflicts, flush_db),
        cmocka_unit_test_setup(test_invalid_names_and_fields, flush_db),
        cmocka_unit_test_setup(test_keys_are_stored_only_as_hashes, flush_db),
        cmocka_unit_test_setup(test_authenticate, flush_db),
        cmocka_unit_test_setup(test_revoked_key_stops_working, flush_db),
        cmocka_unit_test_setup(test_several_keys_each_revocable, flush_db),
        cmocka_unit_test_setup(test_unknown_keys_are_cached_briefly, flush_db),
        cmocka_unit_test_setup(test_refreshing_a_key_keeps_the_others, flush_db),
        cmocka_unit_test_setup(test_bounded_cache_stays_correct, flush_db),
        cmocka_unit_test_setup(test_threads_share_one_cache, flush_db),
        cmocka_unit_test_setup(test_old_layout_is_upgraded, flush_db),
        cmocka_unit_test_setup(test_redis_down_is_unavailable_then_recovers, flush_db),
    };
    int rc = FX_RUN("tenant_redis", tests, NULL, NULL);
    fx_redis_stop(&db);
    return rc;
}
