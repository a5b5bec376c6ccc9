/* test_common.c - the error table, rg_buf, configuration parsing, rg_rmtree and Redis routing. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include "common/rg.h"

/* The table of docs/protocol.md, row by row: code, HTTP status, kind. */
static void test_error_table_matches_protocol(void **state)
{
    (void)state;
    static const struct {
        int err;
        const char *code;
        int http;
        int transient;
    } rows[] = {
        {RG_EBADREQ, "bad_request", 400, 0},       {RG_EUNAUTH, "unauthorized", 401, 0},
        {RG_EFORBIDDEN, "forbidden", 403, 0},      {RG_EBLOCKEDURL, "blocked_url", 403, 0},
        {RG_ENOTFOUND, "not_found", 404, 0},       {RG_ECONFLICT, "conflict", 409, 1},
        {RG_ETOOLARGE, "payload_too_large", 413, 0}, {RG_EMEDIA, "unsupported_media_type", 415, 0},
        {RG_ESTALE, "stale_ref", 422, 0},          {RG_ENOMATCH, "no_match", 422, 1},
        {RG_EAMBIGUOUS, "ambiguous", 422, 0},      {RG_ENOTACTIONABLE, "not_actionable", 422, 1},
        {RG_ENAVFAILED, "navigation_failed", 422, 1}, {RG_ERATE, "rate_limited", 429, 1},
        {RG_EQUOTA, "quota_exceeded", 429, 0},     {RG_ECRASHED, "browser_crashed", 502, 1},
        {RG_EPOOL, "pool_exhausted", 503, 1},      {RG_EUNAVAIL, "unavailable", 503, 1},
        {RG_ETIMEOUT, "timeout", 504, 1},          {RG_EINTERNAL, "internal", 500, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        assert_string_equal(rg_err_code(rows[i].err), rows[i].code);
        assert_int_equal(rg_err_http(rows[i].err), rows[i].http);
        assert_int_equal(rg_err_transient(rows[i].err), rows[i].transient);
    }
    /* Internal detail never leaks as a code of its own. */
    assert_string_equal(rg_err_code(RG_ECDP), "internal");
    assert_string_equal(rg_err_code(RG_EBUSY), "unavailable");
    assert_string_equal(rg_err_code(-999), "internal");
    assert_int_equal(rg_err_http(-999), 500);
}

static void test_buf_json_string_round_trips(void **state)
{
    (void)state;
    const char raw[] = "quote\" back\\ nl\n tab\t ctl\x01 nul\0 end \xc3\xa9";
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, "{\"s\":");
    rg_buf_json_str(&b, raw, sizeof raw - 1);
    rg_buf_puts(&b, "}");
    assert_false(b.failed);
    cJSON *j = cJSON_Parse(b.data);
    assert_non_null(j);
    const cJSON *s = cJSON_GetObjectItem(j, "s");
    assert_true(cJSON_IsString(s));
    /* cJSON stops at the decoded NUL: compare the part before it. */
    assert_int_equal(strlen(s->valuestring), strlen(raw));
    assert_memory_equal(s->valuestring, raw, strlen(raw));
    assert_non_null(strstr(b.data, "nul\\u0000 end"));
    cJSON_Delete(j);
    /* a C string, or null for none */
    rg_buf_reset(&b);
    rg_buf_puts(&b, "[");
    rg_buf_json_str_or_null(&b, "a\"b");
    rg_buf_puts(&b, ",");
    rg_buf_json_str_or_null(&b, NULL);
    rg_buf_puts(&b, "]");
    assert_string_equal(b.data, "[\"a\\\"b\",null]");
    rg_buf_destroy(&b);
}

static void test_buf_grows_and_printf(void **state)
{
    (void)state;
    rg_buf b;
    rg_buf_init(&b);
    for (int i = 0; i < 10000; i++)
        rg_buf_printf(&b, "%d,", i);
    assert_false(b.failed);
    assert_int_equal(strlen(b.data), b.len);
    assert_memory_equal(b.data, "0,1,2,", 6);
    assert_non_null(strstr(b.data, ",9999,"));
    char *big = malloc(1000);
    memset(big, 'x', 999);
    big[999] = '\0';
    rg_buf_reset(&b);
    rg_buf_printf(&b, "[%s]", big); /* longer than printf's stack buffer */
    assert_int_equal(b.len, 1001);
    assert_int_equal(b.data[1000], ']');
    free(big);
    char *s = rg_buf_steal(&b);
    assert_null(b.data);
    free(s);
}

static void test_env_long_validates(void **state)
{
    (void)state;
    setenv("RG_TEST_N", "42", 1);
    assert_int_equal(rg_env_long("RG_TEST_N", 7, 0, 100), 42);
    setenv("RG_TEST_N", "4x2", 1);
    assert_int_equal(rg_env_long("RG_TEST_N", 7, 0, 100), 7);
    setenv("RG_TEST_N", "1000", 1);
    assert_int_equal(rg_env_long("RG_TEST_N", 7, 0, 100), 7);
    unsetenv("RG_TEST_N");
    assert_int_equal(rg_env_long("RG_TEST_N", 7, 0, 100), 7);
}

/* Slots as Redis Cluster computes them (the examples of its specification). */
static void test_redis_slots_follow_hash_tags(void **state)
{
    (void)state;
    assert_int_equal(rg_redis_slot("123456789", 9), 0x31C3 % 16384); /* CRC16 check value */
    assert_int_equal(rg_redis_slot("foo", 3), 12182);
    assert_int_equal(rg_redis_slot("{user1000}.following", 20),
                     rg_redis_slot("{user1000}.followers", 20));
    assert_int_equal(rg_redis_slot("{user1000}.following", 20), rg_redis_slot("user1000", 8));
    /* Only the first tag counts; an empty tag hashes the whole key. */
    assert_int_equal(rg_redis_slot("foo{bar}{zap}", 13), rg_redis_slot("bar", 3));
    assert_int_equal(rg_redis_slot("foo{}{bar}", 10), (int)rg_redis_slot("foo{}{bar}", 10));
    assert_true(rg_redis_slot("foo{}{bar}", 10) != rg_redis_slot("bar", 3));
    assert_int_equal(rg_redis_slot("foo{{bar}}zap", 13), rg_redis_slot("{bar", 4));
    /* A session's keys share a slot; the tenant directory has its own. */
    assert_int_equal(rg_redis_slot("rg:{t:a:s:b}:meta", 17), rg_redis_slot("rg:{t:a:s:b}:park", 17));
    assert_int_equal(rg_redis_slot("rg:{tenants}:all", 16),
                     rg_redis_slot("rg:{tenants}:key:ab", 19));
}

static void test_redis_urls(void **state)
{
    (void)state;
    const char *good[] = {"redis://127.0.0.1:6390", "redis://:pw@localhost/2", "127.0.0.1",
                          "redis+cluster://127.0.0.1:7000",
                          "redis+cluster://:pw@10.0.0.1:7000,10.0.0.2:7001,10.0.0.3",
                          "redis+sentinel://127.0.0.1:1,127.0.0.1:2/mymaster",
                          "redis+sentinel://:pw@127.0.0.1:1/mymaster/3"};
    const char *bad[] = {"redis://", "redis://h:0", "redis://h:99999", "redis://a:1,b:2",
                         "redis+cluster://h:1/3", "redis+cluster://h:1,,h:2", "http://h:1",
                         "redis://h:12x", "redis+sentinel://h:1", "redis+sentinel://h:1/",
                         "redis+sentinel:///mymaster", "redis+sentinel://h:1/my master"};
    char err[256];
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        rg_redis_config cfg;
        rg_redis_config_default(&cfg);
        cfg.url = good[i];
        rg_redis *r = NULL;
        assert_int_equal(rg_redis_new(&cfg, &r, err, sizeof err), 0);
        assert_int_equal(rg_redis_is_cluster(r), strstr(good[i], "cluster") != NULL);
        rg_redis_free(r);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rg_redis_config cfg;
        rg_redis_config_default(&cfg);
        cfg.url = bad[i];
        rg_redis *r = NULL;
        assert_int_equal(rg_redis_new(&cfg, &r, err, sizeof err), RG_EBADREQ);
        assert_null(r);
        assert_non_null(strstr(err, "redis+cluster://"));
    }
}

/* Refused before anything is sent: no server listens on the port. */
static void test_redis_refuses_commands_across_slots(void **state)
{
    (void)state;
    const char *urls[] = {"redis://127.0.0.1:1", "redis+cluster://127.0.0.1:1"};
    for (int u = 0; u < 2; u++) {
        rg_redis_config cfg;
        rg_redis_config_default(&cfg);
        cfg.url = urls[u];
        cfg.connect_timeout_ms = 50;
        cfg.command_timeout_ms = 50;
        rg_redis *r;
        char err[256];
        assert_int_equal(rg_redis_new(&cfg, &r, err, sizeof err), 0);
        redisReply *rep = rg_redis_command(r, "DEL rg:{t:a:s:1}:meta rg:{t:a:s:2}:meta");
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ERROR);
        assert_non_null(strstr(rep->str, "CROSSSLOT"));
        freeReplyObject(rep);
        rg_redis_script s = {"return 1", ""};
        const char *keys[] = {"rg:{t:a}:conc", "rg:t:a:bucket"};
        rep = rg_redis_eval(r, &s, 2, 0, keys, NULL);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ERROR);
        assert_non_null(strstr(rep->str, "CROSSSLOT"));
        freeReplyObject(rep);
        /* A command the client has no key table for is refused, never guessed. */
        rep = rg_redis_command(r, "SUNIONSTORE a b c");
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ERROR);
        freeReplyObject(rep);
        /* A node's keyspace only on one server. */
        rep = rg_redis_command(r, "FLUSHALL");
        if (u == 1) {
            assert_non_null(rep);
            assert_non_null(strstr(rep->str, "each master"));
        } else {
            assert_null(rep); /* sent, and nobody listens */
        }
        freeReplyObject(rep);
        /* One key, or keys with one tag: sent (and nobody answers). */
        assert_null(rg_redis_command(r, "DEL rg:{t:a:s:1}:meta rg:{t:a:s:1}:park"));
        rg_redis_free(r);
    }
}

/* A tree goes whole; a symlink in it goes, what it points at stays. */
static void test_rmtree_stays_inside(void **state)
{
    (void)state;
    char top[] = "/tmp/refgate-test-rmtree-XXXXXX", out[] = "/tmp/refgate-test-outside-XXXXXX";
    assert_non_null(mkdtemp(top));
    assert_non_null(mkdtemp(out));
    char p[256];
    snprintf(p, sizeof p, "%s/kept", out);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(p, sizeof p, "%s/a", top);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/a/b", top);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/a/b/file", top);
    f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(p, sizeof p, "%s/a/link", top);
    assert_int_equal(symlink(out, p), 0);
    assert_int_equal(rg_rmtree(top), 0);
    assert_int_equal(access(top, F_OK), -1);
    snprintf(p, sizeof p, "%s/kept", out);
    assert_int_equal(access(p, F_OK), 0);
    assert_int_equal(rg_rmtree(out), 0);
    assert_int_equal(rg_rmtree(out), -1); /* gone: nothing to walk */
}

/* One base64 for the wire (standard, padded) and the view tokens (URL-safe, strict). */
static void test_base64_both_alphabets(void **state)
{
    (void)state;
    const unsigned char bytes[] = {0xfb, 0xff, 0x00, 0x3e, 0x3f};
    const char *std[] = {"", "+w==", "+/8=", "+/8A", "+/8APg==", "+/8APj8="};
    const char *url[] = {"", "-w", "-_8", "-_8A", "-_8APg", "-_8APj8"};
    for (size_t n = 0; n <= sizeof bytes; n++) {
        rg_buf a, b;
        rg_buf_init(&a);
        rg_buf_init(&b);
        assert_int_equal(rg_base64_append(&a, bytes, n, 0), 0);
        assert_int_equal(rg_base64_append(&b, bytes, n, RG_B64_URL), 0);
        assert_string_equal(a.len ? a.data : "", std[n]);
        assert_string_equal(b.len ? b.data : "", url[n]);
        unsigned char back[8];
        assert_int_equal(rg_base64_decode_to(std[n], strlen(std[n]), back, sizeof back, 0), (long)n);
        assert_memory_equal(back, bytes, n);
        assert_int_equal(rg_base64_decode_to(url[n], strlen(url[n]), back, sizeof back, RG_B64_URL),
                         (long)n);
        assert_memory_equal(back, bytes, n);
        /* NULL: counts without writing */
        assert_int_equal(rg_base64_decode_to(url[n], strlen(url[n]), NULL, 0, RG_B64_URL), (long)n);
        rg_buf_destroy(&a);
        rg_buf_destroy(&b);
    }
    unsigned char out[4];
    /* the other alphabet, padding in a URL token, a length no encoding has */
    assert_int_equal(rg_base64_decode_to("-w==", 4, out, sizeof out, 0), -1);
    assert_int_equal(rg_base64_decode_to("+w", 2, out, sizeof out, RG_B64_URL), -1);
    assert_int_equal(rg_base64_decode_to("-w==", 4, out, sizeof out, RG_B64_URL), -1);
    assert_int_equal(rg_base64_decode_to("AAAAA", 5, out, sizeof out, 0), -1);
    /* leftover bits: a second spelling, refused in a token, ignored on the wire */
    assert_int_equal(rg_base64_decode_to("-x", 2, out, sizeof out, RG_B64_URL), -1);
    assert_int_equal(rg_base64_decode_to("+x", 2, out, sizeof out, 0), 1);
    assert_int_equal(out[0], 0xfb);
    /* no room */
    assert_int_equal(rg_base64_decode_to("-_8APj8", 7, out, 4, RG_B64_URL), -1);
    size_t n = 0;
    unsigned char *m = rg_base64_decode("+/8APj8", 7, &n);
    assert_non_null(m);
    assert_int_equal(n, 5);
    assert_memory_equal(m, bytes, 5);
    free(m);
    assert_null(rg_base64_decode("+/8A*j8=", 8, &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_table_matches_protocol),
        cmocka_unit_test(test_buf_json_string_round_trips),
        cmocka_unit_test(test_buf_grows_and_printf),
        cmocka_unit_test(test_env_long_validates),
        cmocka_unit_test(test_rmtree_stays_inside),
        cmocka_unit_test(test_base64_both_alphabets),
        cmocka_unit_test(test_redis_slots_follow_hash_tags),
        cmocka_unit_test(test_redis_urls),
        cmocka_unit_test(test_redis_refuses_commands_across_slots),
    };
    return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
