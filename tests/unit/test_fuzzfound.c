/*
 * test_fuzzfound.c - what the fuzz targets of tests/fuzz/ found, kept as
 * tests of the real functions with the answer a client must get, and the
 * nastiest of their seeds (the inputs each parser is most likely to get
 * wrong) with exact expected results. A fuzzer finding goes here once it is
 * fixed, so that it stays fixed without running the fuzzer.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "cdp/cdp.h"
#include "common/rg.h"
#include "gateway/gateway.h"
#include "wire/wire.h"
#include "policy/policy.h"
#include "registry/registry.h"

#define ERRLEN 512

/* "é" (two bytes) n times. */
static char *accents(size_t n)
{
    char *s = malloc(2 * n + 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        memcpy(s + 2 * i, "\xc3\xa9", 2);
    s[2 * n] = '\0';
    return s;
}

/* 1 when s is UTF-8 (the strict check the gateway's own decoder makes). */
static int is_utf8(const char *s)
{
    rg_buf b;
    cJSON *str = cJSON_CreateString(s), *back = NULL;
    char err[ERRLEN];
    rg_buf_init(&b);
    assert_int_equal(wire_mp_encode(str, &b), 0);
    int ok = wire_mp_decode(b.data, b.len, &back, err, sizeof err) == 0;
    cJSON_Delete(back);
    cJSON_Delete(str);
    rg_buf_destroy(&b);
    return ok;
}

/* A body from JSON text, through the real decoder. */
static cJSON *body(const char *json)
{
    cJSON *t = NULL;
    char err[ERRLEN];
    int rc = wire_json_decode(json, strlen(json), &t, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: %s", json, err);
    return t;
}

static const gw_caller http_caller = {.tenant = "t1"};

/* ---- found: messages cut inside a character ------------------------------ */

/*
 * fuzz_json_command: an unknown argument whose name is 40 "é" (80 bytes)
 * came back as `observe takes no argument "é...\xc3"`: the message quoted
 * 64 bytes, the last one half of a character, and the reply was no longer
 * UTF-8, which strict clients (our own decoder among them) refuse. Now the
 * quote stops before the character it would cut.
 */
static void test_unknown_arg_quote_keeps_utf8(void **state)
{
    (void)state;
    char *key = accents(40), *want_key = accents(32);
    char json[256], want[256], err[ERRLEN];
    snprintf(json, sizeof json, "{\"op\":\"observe\",\"args\":{\"%s\":1}}", key);
    snprintf(want, sizeof want, "observe takes no argument \"%s\"", want_key);
    cJSON *t = body(json);
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, want);
    assert_true(is_utf8(err));
    cJSON_Delete(t);

    /* One ASCII byte first: the 64th byte starts a character, which goes whole. */
    snprintf(json, sizeof json, "{\"op\":\"observe\",\"args\":{\"x%s\":1}}", key);
    snprintf(want, sizeof want, "observe takes no argument \"x%.62s\"", key);
    t = body(json);
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, want);
    assert_true(is_utf8(err));
    cJSON_Delete(t);
    free(key);
    free(want_key);
}

/* The same cut in the other two messages that quote what a client sent. */
static void test_unknown_key_and_op_quotes_keep_utf8(void **state)
{
    (void)state;
    char *text = accents(40), *want_text = accents(32);
    char json[256], want[256], err[ERRLEN];

    snprintf(json, sizeof json, "{\"op\":\"session.info\",\"%s\":1}", text);
    snprintf(want, sizeof want, "unknown key \"%s\" in the command map", want_text);
    cJSON *t = body(json);
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, want);
    cJSON_Delete(t);

    snprintf(json, sizeof json, "{\"op\":\"%s\"}", text);
    snprintf(want, sizeof want, "unknown op \"%s\"", want_text);
    t = body(json);
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, want);
    assert_true(is_utf8(err));
    cJSON_Delete(t);

    /* A four-byte character across the cut: 62 bytes of "a" and then U+1F600. */
    snprintf(json, sizeof json, "{\"op\":\"%.62s\xf0\x9f\x98\x80\"}",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    snprintf(want, sizeof want, "unknown op \"%.62s\"",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    t = body(json);
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, want);
    cJSON_Delete(t);
    free(text);
    free(want_text);
}

/* ---- seeds: the command checks ------------------------------------------- */

static void test_command_checks_route_and_rights(void **state)
{
    (void)state;
    static const gw_caller ws = {.tenant = "t1", .websocket = 1};
    static const gw_caller evaler = {.tenant = "t1", .allow_eval = 1};
    char err[ERRLEN];
    cJSON *t = body("{\"op\":\"eval\",\"args\":{\"expression\":\"1\"}}");
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EFORBIDDEN);
    assert_string_equal(err, "eval is not allowed for this tenant");
    assert_int_equal(gw_check_command(&evaler, "s1", t, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(gw_check_command(&evaler, NULL, t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "POST /v1/sessions takes session.create; send eval to "
                             "/v1/sessions/{id}");
    cJSON_Delete(t);

    t = body("{\"op\":\"subscribe\",\"args\":{\"events\":[\"snapshot\"]}}");
    assert_int_equal(gw_check_command(&ws, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "commands on the WebSocket need an id");
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "subscribe works on the WebSocket only");
    cJSON_Delete(t);

    /* An empty map on POST /v1/sessions is session.create with defaults. */
    t = body("{}");
    assert_int_equal(gw_check_command(&http_caller, NULL, t, err, sizeof err), 0);
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "the command map needs an op");
    cJSON_Delete(t);

    t = body("{\"op\":\"click\",\"args\":{\"target\":\"@a\",\"nth\":1.5}}");
    assert_int_equal(gw_check_command(&http_caller, "s1", t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "args.nth must be an integer");
    cJSON_Delete(t);
}

/* ---- seeds: msgpack and JSON bodies --------------------------------------- */

static int mp_refused(const void *b, size_t n, const char *want)
{
    cJSON *t = (cJSON *)1;
    char err[ERRLEN];
    int rc = wire_mp_decode(b, n, &t, err, sizeof err);
    if (rc != RG_EBADREQ || t || strcmp(err, want))
        fail_msg("got %d \"%s\", want \"%s\"", rc, err, want);
    return 1;
}

static void test_msgpack_nasty_seeds(void **state)
{
    (void)state;
    /* A 5-byte header declaring 2^32 - 1 elements: refused before msgpack-c allocates. */
    mp_refused("\xdd\xff\xff\xff\xff", 5,
               "the body declares an array of 4294967295 elements but has 0 bytes left");
    mp_refused("\x91\xc1", 2, "the body holds the reserved byte 0xc1 at offset 1");
    mp_refused("\x81\xa2op\xa3"
               "a\0b",
               8, "strings must be UTF-8 without NUL bytes");
    mp_refused("\x82\xa2op\xa1"
               "a\xa2op\xa1"
               "b",
               11, "duplicate key \"op\"");
    mp_refused("\x81\xa2id\xcf\x00\x20\x00\x00\x00\x00\x00\x01", 13,
               "integers must lie within -2^53..2^53, which a double holds exactly; "
               "9007199254740993 does not");
    mp_refused("\xc7\x01\x05\x00", 4, "msgpack extension types (ext) are not accepted");

    /* Seventeen arrays deep is one too many; sixteen is fine. */
    unsigned char deep[18];
    memset(deep, 0x91, 17);
    deep[17] = 0xc0;
    mp_refused(deep, 18, "the body nests deeper than 16 levels");
    cJSON *t = NULL;
    char err[ERRLEN];
    assert_int_equal(wire_mp_decode(deep + 1, 17, &t, err, sizeof err), 0);
    cJSON_Delete(t);

    /* bin comes back as bin, byte for byte. */
    static const unsigned char bin[] = {0x81, 0xa1, 'b', 0xc4, 0x03, 0x00, 0xff, 0x10};
    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(wire_mp_decode(bin, sizeof bin, &t, err, sizeof err), 0);
    assert_true(wire_is_bin(cJSON_GetObjectItemCaseSensitive(t, "b")));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "b")->valuestring, "AP8Q");
    assert_int_equal(wire_mp_encode(t, &b), 0);
    assert_int_equal(b.len, sizeof bin);
    assert_memory_equal(b.data, bin, sizeof bin);
    rg_buf_destroy(&b);
    cJSON_Delete(t);
}

static void test_json_nasty_seeds(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        const char *err; /* NULL: accepted */
    } rows[] = {
        {"{\"op\":\"navigate\",\"args\":{\"url\":\"a\\u0000b\"}}",
         "strings must be UTF-8 without NUL bytes (\\u0000 at byte 33)"},
        {"[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]", "the body nests deeper than 16 levels (byte 16)"},
        {"[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]", NULL},
        {"{\"op\":\"wait\",\"args\":{\"text\":\"[[[[[[[[[[[[[[[[[[{{{{\"}}", NULL},
        {"{\"op\":\"wait\",\"args\":{\"text\":\"\\\"[\\\\\"}}", NULL},
        {"{\"op\":\"info\",\"op\":\"close\"}", "duplicate key \"op\""},
        {"{\"op\":\"scroll\",\"args\":{\"dy\":1e999}}",
         "numbers must be finite (no NaN or infinity)"},
        {"{\"op\":\"session.info\"} {}", "the body has more after its JSON value (byte 22)"},
        {"{\"t\":\"\\ud83d\\ude00\"}", NULL},
        {"{\"t\":\"\\ud800\"}", "the body is not valid JSON (error at byte 6)"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cJSON *t = NULL;
        char err[ERRLEN] = "";
        int rc = wire_json_decode(rows[i].body, strlen(rows[i].body), &t, err, sizeof err);
        if (rows[i].err && (rc != RG_EBADREQ || strcmp(err, rows[i].err)))
            fail_msg("%s: got %d \"%s\", want \"%s\"", rows[i].body, rc, err, rows[i].err);
        if (!rows[i].err && rc != 0)
            fail_msg("%s: refused: %s", rows[i].body, err);
        cJSON_Delete(t);
    }
}

/* ---- seeds: targets ------------------------------------------------------- */

static void test_target_nasty_seeds(void **state)
{
    (void)state;
    reg_target t;
    char err[ERRLEN];
    const char *s = "role:textbox[name=\"say \\\"hi\\\" \\\\ there\"]";
    assert_int_equal(reg_target_parse(s, strlen(s), &t, err, sizeof err), 0);
    assert_int_equal(t.kind, REG_T_ROLE);
    assert_string_equal(t.value, "textbox");
    assert_string_equal(t.name, "say \"hi\" \\ there");
    assert_int_equal(t.substring, 0);
    reg_target_destroy(&t);

    s = "@close~10";
    assert_int_equal(reg_target_parse(s, strlen(s), &t, err, sizeof err), 0);
    assert_int_equal(t.kind, REG_T_REF);
    assert_string_equal(t.value, "@close~10");
    reg_target_destroy(&t);

    static const char *const bad[] = {"@close~0",
                                      "@close~",
                                      "@abcdefghijklm",
                                      "@UPPER",
                                      "role:button[name=\"x\"]x",
                                      "role:button[name=\"x\"",
                                      "role:[name=\"x\"]",
                                      "css:",
                                      "cs"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (reg_target_parse(bad[i], strlen(bad[i]), &t, err, sizeof err) != RG_EBADREQ)
            fail_msg("%s was accepted", bad[i]);
        assert_null(t.value);
        assert_null(t.name);
    }
    assert_int_equal(reg_target_parse("@a\0b", 4, &t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "the target contains a NUL byte");

    /* 4096 bytes is the most a target may have. */
    char *big = malloc(4098);
    assert_non_null(big);
    memcpy(big, "css:", 4);
    memset(big + 4, 'a', 4093);
    assert_int_equal(reg_target_parse(big, 4096, &t, err, sizeof err), 0);
    assert_int_equal(strlen(t.value), 4092);
    reg_target_destroy(&t);
    assert_int_equal(reg_target_parse(big, 4097, &t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "the target is longer than 4096 bytes");
    free(big);
}

/* ---- seeds: DevTools framing and escapes ---------------------------------- */

struct seen {
    char msgs[8][256];
    size_t n_msgs;
    size_t over_total[8];
    char over_head[8][129];
    size_t n_over;
};

static void seen_msg(void *ud, char *msg, size_t len)
{
    struct seen *s = ud;
    assert_true(s->n_msgs < 8 && len < 256);
    memcpy(s->msgs[s->n_msgs++], msg, len + 1);
}

static void seen_over(void *ud, const char *head, size_t head_len, size_t total)
{
    struct seen *s = ud;
    assert_true(s->n_over < 8);
    memcpy(s->over_head[s->n_over], head, head_len);
    s->over_head[s->n_over][head_len] = '\0';
    s->over_total[s->n_over++] = total;
}

static void test_frame_byte_by_byte_with_oversize(void **state)
{
    (void)state;
    /* Cap 16: the middle message (36 bytes) is skipped, the others arrive. */
    static const char stream[] =
        "{\"id\":1}\0{\"id\":2,\"result\":{\"x\":\"0123456789\"}}\0{}\0{\"id";
    struct seen s = {0};
    cdp_frame f;
    cdp_frame_init(&f, 16);
    for (size_t i = 0; i < sizeof stream - 1; i++) {
        char *p;
        size_t avail;
        assert_int_equal(cdp_frame_space(&f, 1, &p, &avail), 0);
        assert_true(avail >= 1);
        *p = stream[i];
        cdp_frame_commit(&f, 1, seen_msg, seen_over, &s);
    }
    assert_int_equal(s.n_msgs, 2);
    assert_string_equal(s.msgs[0], "{\"id\":1}");
    assert_string_equal(s.msgs[1], "{}");
    assert_int_equal(s.n_over, 1);
    assert_int_equal(s.over_total[0], 36);
    assert_string_equal(s.over_head[0], "{\"id\":2,\"result\":"); /* what the frame held: cap + 1 */
    assert_int_equal(f.len, 4);                                   /* the unfinished {"id */
    cdp_frame_destroy(&f);
}

static void test_sanitize_surrogate_runs(void **state)
{
    (void)state;
    /* high high low low: the first high and the last low have no partner. */
    char s[] = "{\"a\":\"\\ud800\\ud800\\udc00\\udc00\",\"b\":\"\\\\u0000\",\"c\":\"\\u0000\"}";
    assert_int_equal(cdp_json_sanitize(s, strlen(s)), 3);
    assert_string_equal(
        s, "{\"a\":\"\\ufffd\\ud800\\udc00\\ufffd\",\"b\":\"\\\\u0000\",\"c\":\"\\ufffd\"}");
    assert_int_equal(cdp_json_sanitize(s, strlen(s)), 0);
    cJSON *t = cJSON_Parse(s);
    assert_non_null(t);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "a")->valuestring,
                        "\xef\xbf\xbd\xf0\x90\x80\x80\xef\xbf\xbd");
    cJSON_Delete(t);

    /* A high surrogate cut off by the end of the message. */
    char cut[] = "\"\\ud83d";
    assert_int_equal(cdp_json_sanitize(cut, strlen(cut)), 1);
    assert_string_equal(cut, "\"\\ufffd");
}

/* ---- seeds: URLs and addresses -------------------------------------------- */

static void test_url_spellings(void **state)
{
    (void)state;
    static const struct {
        const char *url;
        int rc;
        const char *host; /* for rc >= 0 */
    } rows[] = {
        {"http://0x7f000001/", RG_EBLOCKEDURL, "127.0.0.1"},
        {"http://127.1/", RG_EBLOCKEDURL, "127.0.0.1"},
        {"http://017700000001/", RG_EBLOCKEDURL, "127.0.0.1"},
        {"http://0x7F.00.0.01/", RG_EBLOCKEDURL, "127.0.0.1"},
        {"http://%31%32%37.0.0.1/", RG_EBLOCKEDURL, "127.0.0.1"},
        {"http://[::ffff:127.0.0.1]/", RG_EBLOCKEDURL, "::ffff:7f00:1"},
        {"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", RG_EBLOCKEDURL,
         "2001:0:4136:e378:8000:63bf:80ff:fffe"}, /* Teredo client 127.0.0.1 */
        {"http://[1:2:3:4:5:6:7::]/", RG_EBLOCKEDURL, "1:2:3:4:5:6:7:0"},
        {"http://example.com@127.0.0.1/", RG_EBLOCKEDURL, "127.0.0.1"},
        {"http://1.2.3.09/", RG_EBADREQ, NULL},
        {"http://foo.0x/", RG_EBADREQ, NULL},
        {"http://foo.0x1g/", POL_RESOLVE, "foo.0x1g"},
        {"http://[fe80::1%25eth0]/", RG_EBADREQ, NULL},
        {"http://93.184.216.34:0000080/", POL_ALLOW, "93.184.216.34"},
    };
    pol *p = NULL;
    char err[ERRLEN];
    assert_int_equal(pol_new(0, NULL, 0, NULL, 0, &p, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        pol_url u;
        char why[ERRLEN] = "";
        int rc = pol_check_url(p, rows[i].url, strlen(rows[i].url), &u, why, sizeof why);
        if (rc != rows[i].rc || (rows[i].host && strcmp(u.host, rows[i].host)))
            fail_msg("%s: got %d host \"%s\" (%s), want %d host \"%s\"", rows[i].url, rc, u.host,
                     why, rows[i].rc, rows[i].host ? rows[i].host : "");
    }
    pol_free(p);
}

static void test_list_entry_spellings(void **state)
{
    (void)state;
    static const struct {
        const char *entry;
        int rc;
    } rows[] = {
        {"10.0.0.0/8:80", RG_EBADREQ},
        {"::1:80", 0},
        {"[::1]:", RG_EBADREQ},
        {"host:0", RG_EBADREQ},
        {"host:65536", RG_EBADREQ},
        {"127.1:8080", 0},
        {"[fd00::]/8", 0},
        {"10.0.0.1/8", RG_EBADREQ},
        {"*.1.2.3.4", RG_EBADREQ},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        pol *p = NULL;
        char err[ERRLEN] = "";
        int rc = pol_new(0, &rows[i].entry, 1, NULL, 0, &p, err, sizeof err);
        if (rc != rows[i].rc)
            fail_msg("\"%s\": got %d (%s), want %d", rows[i].entry, rc, err, rows[i].rc);
        pol_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_arg_quote_keeps_utf8),
        cmocka_unit_test(test_unknown_key_and_op_quotes_keep_utf8),
        cmocka_unit_test(test_command_checks_route_and_rights),
        cmocka_unit_test(test_msgpack_nasty_seeds),
        cmocka_unit_test(test_json_nasty_seeds),
        cmocka_unit_test(test_target_nasty_seeds),
        cmocka_unit_test(test_frame_byte_by_byte_with_oversize),
        cmocka_unit_test(test_sanitize_surrogate_runs),
        cmocka_unit_test(test_url_spellings),
        cmocka_unit_test(test_list_entry_spellings),
    };
    return cmocka_run_group_tests_name("fuzzfound", tests, NULL, NULL);
}
