/*
 * test_wire.c - the gateway's codec: untrusted msgpack and JSON bodies to
 * cJSON trees, and reply trees back to msgpack and JSON. Every body is copied
 * into a heap block of exactly its size, so a read past the end shows up
 * under AddressSanitizer (`make asan`).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <msgpack.h>

#include "common/rg.h"
#include "wire/wire.h"

#define ERRLEN 256
#define TWO53 9007199254740992.0

static const char command_json[] =
    "{\"op\":\"click\",\"args\":{\"target\":\"@submitbtn\",\"nth\":-1},\"id\":7}";

/* ---- helpers ------------------------------------------------------------- */

/* msgpack-c's own packer writing into an sbuffer: the reference bytes. */
typedef struct ref_pack {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} ref_pack;

static void ref_init(ref_pack *r)
{
    msgpack_sbuffer_init(&r->sb);
    msgpack_packer_init(&r->pk, &r->sb, msgpack_sbuffer_write);
}

static void ref_destroy(ref_pack *r)
{
    msgpack_sbuffer_destroy(&r->sb);
}

static void ref_str(ref_pack *r, const char *s)
{
    msgpack_pack_str(&r->pk, strlen(s));
    msgpack_pack_str_body(&r->pk, s, strlen(s));
}

/* The command map of command_json, packed by msgpack-c. */
static void ref_command(ref_pack *r)
{
    ref_init(r);
    msgpack_pack_map(&r->pk, 3);
    ref_str(r, "op");
    ref_str(r, "click");
    ref_str(r, "args");
    msgpack_pack_map(&r->pk, 2);
    ref_str(r, "target");
    ref_str(r, "@submitbtn");
    ref_str(r, "nth");
    msgpack_pack_int64(&r->pk, -1);
    ref_str(r, "id");
    msgpack_pack_uint64(&r->pk, 7);
}

/* A heap copy of b with exactly n bytes (one byte when n is 0, unused). */
static void *exact_copy(const void *b, size_t n)
{
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    if (n)
        memcpy(p, b, n);
    return p;
}

typedef int (*decode_fn)(const void *, size_t, cJSON **, char *, size_t);

static cJSON *decode_ok(decode_fn fn, const void *b, size_t n)
{
    char err[ERRLEN] = "";
    cJSON *t = NULL;
    void *p = exact_copy(b, n);
    int r = fn(p, n, &t, err, sizeof err);
    free(p);
    if (r != 0)
        fail_msg("decode failed with %d: %s", r, err);
    assert_non_null(t);
    return t;
}

/* Decoding fails with code, leaves *out NULL, and says something containing phrase. */
static void decode_fails(decode_fn fn, const void *b, size_t n, int code, const char *phrase)
{
    char err[ERRLEN] = "";
    cJSON *t = (cJSON *)&err; /* must be reset to NULL */
    void *p = exact_copy(b, n);
    int r = fn(p, n, &t, err, sizeof err);
    free(p);
    if (r != code)
        fail_msg("decode returned %d, expected %d (message: %s)", r, code, err);
    assert_null(t);
    assert_true(strlen(err) > 0);
    if (phrase && !strstr(err, phrase))
        fail_msg("message \"%s\" lacks \"%s\"", err, phrase);
}

static cJSON *mp_ok(const void *b, size_t n)
{
    return decode_ok(wire_mp_decode, b, n);
}

static cJSON *json_ok(const char *s)
{
    return decode_ok(wire_json_decode, s, strlen(s));
}

static void json_fails(const char *s, const char *phrase)
{
    decode_fails(wire_json_decode, s, strlen(s), RG_EBADREQ, phrase);
}

/* A msgpack body given as bytes must be refused with RG_EBADREQ and phrase. */
#define MP_FAILS(phrase, ...)                                                                      \
    do {                                                                                           \
        static const unsigned char body_[] = {__VA_ARGS__};                                        \
        decode_fails(wire_mp_decode, body_, sizeof body_, RG_EBADREQ, phrase);                     \
    } while (0)

/* A JSON body with explicit length (it may hold NUL bytes). */
#define JSON_FAILS_N(lit, phrase)                                                                  \
    decode_fails(wire_json_decode, lit, sizeof lit - 1, RG_EBADREQ, phrase)

static void assert_mp_bytes(const cJSON *t, const void *want, size_t n)
{
    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(wire_mp_encode(t, &b), 0);
    assert_int_equal(b.len, n);
    assert_memory_equal(b.data, want, n);
    rg_buf_destroy(&b);
}

static void assert_json_text(const cJSON *t, const char *want)
{
    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(wire_json_encode(t, &b), 0);
    assert_string_equal(b.data, want);
    rg_buf_destroy(&b);
}

/* ---- round trips --------------------------------------------------------- */

static void check_command_tree(const cJSON *t)
{
    assert_string_equal(cJSON_GetObjectItem(t, "op")->valuestring, "click");
    const cJSON *args = cJSON_GetObjectItem(t, "args");
    assert_true(cJSON_IsObject(args));
    assert_string_equal(cJSON_GetObjectItem(args, "target")->valuestring, "@submitbtn");
    assert_true(cJSON_GetObjectItem(args, "nth")->valuedouble == -1.0);
    assert_true(cJSON_GetObjectItem(t, "id")->valuedouble == 7.0);
    assert_string_equal(t->child->string, "op"); /* the body's order is kept */
}

static void test_mp_command_round_trip(void **state)
{
    (void)state;
    ref_pack r;
    ref_command(&r);
    cJSON *t = mp_ok(r.sb.data, r.sb.size);
    check_command_tree(t);
    assert_mp_bytes(t, r.sb.data, r.sb.size);

    /* Encoders append, and a failure leaves what was there. */
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, "xy");
    assert_int_equal(wire_mp_encode(t, &b), 0);
    assert_int_equal(b.len, 2 + r.sb.size);
    assert_memory_equal(b.data, "xy", 2);
    assert_memory_equal(b.data + 2, r.sb.data, r.sb.size);
    rg_buf_destroy(&b);
    cJSON_Delete(t);
    ref_destroy(&r);
}

static void test_json_command_round_trip(void **state)
{
    (void)state;
    cJSON *t = json_ok(command_json);
    check_command_tree(t);
    assert_json_text(t, command_json);

    /* The same command in msgpack is byte for byte what msgpack-c packs. */
    ref_pack r;
    ref_command(&r);
    assert_mp_bytes(t, r.sb.data, r.sb.size);
    ref_destroy(&r);
    cJSON_Delete(t);

    char spaced[256];
    snprintf(spaced, sizeof spaced, " \r\n\t%s \n", command_json);
    t = json_ok(spaced);
    assert_json_text(t, command_json);
    cJSON_Delete(t);
}

/* ---- limits of the pre-scan ---------------------------------------------- */

static void test_mp_gigantic_headers_rejected(void **state)
{
    (void)state;
    /* Were msgpack-c to see these, it would try to allocate gigabytes (and
     * ASan would abort on the size): the pre-scan must refuse them first. */
    MP_FAILS("an array of 4294967295 elements but has 0 bytes left", 0xdd, 0xff, 0xff, 0xff, 0xff);
    MP_FAILS("has 4 bytes left", 0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4);
    MP_FAILS("a map of 4294967295 entries", 0xdf, 0xff, 0xff, 0xff, 0xff);
    MP_FAILS("a string of 4294967295 bytes", 0xdb, 0xff, 0xff, 0xff, 0xff);
    MP_FAILS("binary data of 4294967295 bytes", 0xc6, 0xff, 0xff, 0xff, 0xff);
    MP_FAILS("an extension value of 4294967295 bytes", 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01);
    MP_FAILS("an array of 65535 elements", 0xdc, 0xff, 0xff);
    MP_FAILS("a map of 65535 entries", 0xde, 0xff, 0xff);
    MP_FAILS("an array of 4294967295 elements", 0x92, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff);
    MP_FAILS("an array of 5 elements but has 4 bytes left", 0x95, 1, 2, 3, 4);
    /* A map entry takes at least two bytes: 3 entries do not fit in 5 bytes. */
    MP_FAILS("a map of 3 entries but has 5 bytes left", 0xde, 0x00, 0x03, 1, 2, 3, 4, 5);

    char err[ERRLEN];
    static const unsigned char huge[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(wire_mp_prescan(huge, sizeof huge, WIRE_MAX_DEPTH, err, sizeof err),
                     RG_EBADREQ);
    /* The bounds themselves are allowed: n elements in n bytes, n entries in 2n. */
    static const unsigned char arr[] = {0xdc, 0x00, 0x03, 1, 2, 3};
    static const unsigned char map[] = {0x82, 1, 2, 3, 4};
    assert_int_equal(wire_mp_prescan(arr, sizeof arr, WIRE_MAX_DEPTH, err, sizeof err), 0);
    assert_int_equal(wire_mp_prescan(map, sizeof map, WIRE_MAX_DEPTH, err, sizeof err), 0);
    assert_string_equal(err, "");
}

/* n nested containers: arrays ([[...[]...]]) or maps ({"a":{"a":...{}}}). */
static size_t mp_nested(unsigned char *out, int n, int maps)
{
    size_t o = 0;
    for (int i = 0; i < n - 1; i++) {
        if (maps) {
            out[o++] = 0x81;
            out[o++] = 0xa1;
            out[o++] = 'a';
        } else {
            out[o++] = 0x91;
        }
    }
    out[o++] = maps ? 0x80 : 0x90;
    return o;
}

static void json_nested(char *out, int n, int maps)
{
    char *o = out;
    for (int i = 0; i < n - 1; i++)
        o += sprintf(o, "%s", maps ? "{\"a\":" : "[");
    o += sprintf(o, "%s", maps ? "{}" : "[]");
    for (int i = 0; i < n - 1; i++)
        *o++ = maps ? '}' : ']';
    *o = '\0';
}

static void test_depth_limits(void **state)
{
    (void)state;
    unsigned char mp[128];
    char js[256];

    for (int maps = 0; maps <= 1; maps++) {
        size_t n = mp_nested(mp, WIRE_MAX_DEPTH, maps);
        cJSON_Delete(mp_ok(mp, n));
        n = mp_nested(mp, WIRE_MAX_DEPTH + 1, maps);
        decode_fails(wire_mp_decode, mp, n, RG_EBADREQ, "deeper than 16 levels");

        json_nested(js, WIRE_MAX_DEPTH, maps);
        cJSON *t = json_ok(js);
        assert_json_text(t, js);
        cJSON_Delete(t);
        json_nested(js, WIRE_MAX_DEPTH + 1, maps);
        json_fails(js, "deeper than 16 levels");
    }

    /* A scalar inside 16 arrays is still depth 16. */
    memset(mp, 0x91, WIRE_MAX_DEPTH);
    mp[WIRE_MAX_DEPTH] = 0x01;
    cJSON_Delete(mp_ok(mp, WIRE_MAX_DEPTH + 1));

    /* Width is not depth: many containers side by side at depth 2 and 3. */
    cJSON_Delete(
        json_ok("[[],{},[[]],{\"a\":[]},[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[]]"));
    unsigned char wide[3 + 20];
    wide[0] = 0xdc;
    wide[1] = 0x00;
    wide[2] = 20;
    memset(wide + 3, 0x90, 20);
    cJSON *t = mp_ok(wide, sizeof wide);
    assert_int_equal(cJSON_GetArraySize(t), 20);
    cJSON_Delete(t);

    /* Brackets inside strings are not nesting. */
    cJSON_Delete(json_ok("[\"[[[[[[[[[[[[[[[[[[[[{{{{{{{{{{{{{{{{{{\"]"));
    cJSON_Delete(json_ok("[\"\\\"[[[[[[[[[[[[[[[[[[[[\\\\\",{\"k\":\"]]]]\"}]"));

    /* max_depth 0 allows only a scalar; out-of-range depths are a caller bug. */
    char err[ERRLEN];
    static const unsigned char one[] = {0x01}, empty_arr[] = {0x90};
    assert_int_equal(wire_mp_prescan(one, 1, 0, err, sizeof err), 0);
    assert_int_equal(wire_mp_prescan(empty_arr, 1, 0, err, sizeof err), RG_EBADREQ);
    assert_int_equal(wire_mp_prescan(empty_arr, 1, 1, err, sizeof err), 0);
    assert_int_equal(wire_mp_prescan(one, 1, -1, err, sizeof err), RG_EINTERNAL);
    assert_int_equal(wire_mp_prescan(one, 1, WIRE_PRESCAN_DEPTH_CAP + 1, err, sizeof err),
                     RG_EINTERNAL);
    /* The cap itself works, and the stack of open containers holds it. */
    unsigned char deep[WIRE_PRESCAN_DEPTH_CAP + 1];
    memset(deep, 0x91, sizeof deep);
    deep[WIRE_PRESCAN_DEPTH_CAP - 1] = 0x90;
    assert_int_equal(
        wire_mp_prescan(deep, WIRE_PRESCAN_DEPTH_CAP, WIRE_PRESCAN_DEPTH_CAP, err, sizeof err), 0);
    deep[WIRE_PRESCAN_DEPTH_CAP - 1] = 0x91;
    deep[WIRE_PRESCAN_DEPTH_CAP] = 0x90;
    assert_int_equal(wire_mp_prescan(deep, sizeof deep, WIRE_PRESCAN_DEPTH_CAP, err, sizeof err),
                     RG_EBADREQ);
}

static void test_trailing_bytes_rejected(void **state)
{
    (void)state;
    ref_pack r;
    ref_command(&r);
    msgpack_pack_nil(&r.pk);
    decode_fails(wire_mp_decode, r.sb.data, r.sb.size, RG_EBADREQ, "1 bytes after its value");
    ref_destroy(&r);
    MP_FAILS("after its value", 0x01, 0x02);
    MP_FAILS("after its value", 0x90, 0x90);

    char js[256];
    snprintf(js, sizeof js, "%s x", command_json);
    json_fails(js, "more after its JSON value");
    snprintf(js, sizeof js, "%s{}", command_json);
    json_fails(js, "more after its JSON value");
    json_fails("1 2", "byte 2");
    json_fails("[] ]", NULL);
    json_fails("{} \x01", "control byte 0x01");
    JSON_FAILS_N("{}\0", "NUL byte");
}

static void test_truncated_bodies_rejected(void **state)
{
    (void)state;
    ref_pack r;
    ref_command(&r);
    for (size_t n = 0; n < r.sb.size; n++)
        decode_fails(wire_mp_decode, r.sb.data, n, RG_EBADREQ, NULL);
    decode_fails(wire_mp_decode, r.sb.data, r.sb.size - 1, RG_EBADREQ,
                 "ends in the middle of a value");
    ref_destroy(&r);

    size_t len = strlen(command_json);
    for (size_t n = 0; n < len; n++)
        decode_fails(wire_json_decode, command_json, n, RG_EBADREQ, NULL);
    json_fails("{\"op\":\"cli", "not valid JSON");
}

static void test_empty_body_rejected(void **state)
{
    (void)state;
    char err[ERRLEN];
    cJSON *t = NULL;
    assert_int_equal(wire_mp_decode(NULL, 0, &t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "the body is empty");
    assert_int_equal(wire_json_decode(NULL, 0, &t, err, sizeof err), RG_EBADREQ);
    assert_string_equal(err, "the body is empty");
    assert_null(t);
    json_fails(" \n ", "not valid JSON");
    /* err may be left out. */
    assert_int_equal(wire_mp_decode("", 0, &t, NULL, 0), RG_EBADREQ);
}

static void test_reserved_byte_rejected(void **state)
{
    (void)state;
    MP_FAILS("reserved byte 0xc1 at offset 0", 0xc1);
    MP_FAILS("reserved byte 0xc1 at offset 2", 0x92, 0x01, 0xc1);
    MP_FAILS("0xc1", 0x81, 0xa1, 'a', 0xc1);
}

/* ---- what a decoded tree may hold ---------------------------------------- */

static void test_non_string_keys_rejected(void **state)
{
    (void)state;
    MP_FAILS("map keys must be strings", 0x81, 0x01, 0x02);
    MP_FAILS("map keys must be strings", 0x81, 0xc0, 0x01);
    MP_FAILS("map keys must be strings", 0x81, 0xc4, 0x01, 'a', 0x01); /* bin is not str */
    MP_FAILS("map keys must be strings", 0x81, 0x90, 0x01);
    MP_FAILS("map keys must be strings", 0x81, 0xa1, 'a', 0x81, 0xc3, 0x01);
}

static void test_duplicate_keys_rejected(void **state)
{
    (void)state;
    MP_FAILS("duplicate key \"a\"", 0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02);
    MP_FAILS("duplicate key \"\"", 0x83, 0xa0, 0x01, 0xa1, 'b', 0x02, 0xa0, 0x03);
    MP_FAILS("duplicate key \"k\"", 0x81, 0xa1, 'x', 0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02);
    json_fails("{\"a\":1,\"a\":2}", "duplicate key \"a\"");
    json_fails("{\"x\":[{\"k\":1,\"j\":0,\"k\":2}]}", "duplicate key \"k\"");
    /* Quotes and control bytes are not copied into the message as they are. */
    json_fails("{\"a\\\"b\\n\":1,\"a\\\"b\\n\":2}", "duplicate key \"a?b?\"");
    /* Keys that share a prefix are different keys. */
    cJSON_Delete(json_ok("{\"a\":1,\"ab\":2,\"\":3,\"b\":4}"));

    /* Many keys (sorted rather than compared pairwise), duplicate last. */
    ref_pack r;
    ref_init(&r);
    char key[16];
    msgpack_pack_map(&r.pk, 101);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        ref_str(&r, key);
        msgpack_pack_int(&r.pk, i);
    }
    ref_str(&r, "k42");
    msgpack_pack_nil(&r.pk);
    decode_fails(wire_mp_decode, r.sb.data, r.sb.size, RG_EBADREQ, "duplicate key \"k42\"");
    ref_destroy(&r);

    rg_buf js;
    rg_buf_init(&js);
    rg_buf_puts(&js, "{");
    for (int i = 0; i < 100; i++)
        rg_buf_printf(&js, "\"key%d\":%d,", i, i);
    rg_buf_puts(&js, "\"key99\":0}");
    json_fails(js.data, "duplicate key \"key99\"");
    js.data[js.len - 6] = '~'; /* "key~9": no longer a duplicate */
    cJSON *t = json_ok(js.data);
    assert_int_equal(cJSON_GetArraySize(t), 101);
    cJSON_Delete(t);
    rg_buf_destroy(&js);
}

static void test_strings_must_be_utf8_without_nul(void **state)
{
    (void)state;
    const char *phrase = "strings must be UTF-8 without NUL bytes";
    MP_FAILS(phrase, 0xa1, 0xff);
    MP_FAILS(phrase, 0xa1, 0x80);                   /* stray continuation byte */
    MP_FAILS(phrase, 0xa2, 0xc0, 0x80);             /* overlong NUL */
    MP_FAILS(phrase, 0xa3, 0xe0, 0x80, 0xaf);       /* overlong '/' */
    MP_FAILS(phrase, 0xa3, 0xed, 0xa0, 0x80);       /* UTF-16 surrogate */
    MP_FAILS(phrase, 0xa4, 0xf4, 0x90, 0x80, 0x80); /* above U+10FFFF */
    MP_FAILS(phrase, 0xa1, 0xc3);                   /* cut short */
    MP_FAILS(phrase, 0xa3, 'a', 0x00, 'b');
    MP_FAILS(phrase, 0xd9, 0x01, 0x00); /* str 8 */
    MP_FAILS(phrase, 0x81, 0xa1, 0xff, 0x01);
    MP_FAILS(phrase, 0x81, 0xa1, 0x00, 0x01);
    MP_FAILS(phrase, 0x91, 0x81, 0xa1, 'k', 0xa2, 'x', 0x00);

    JSON_FAILS_N("\"\xff\"", phrase);
    JSON_FAILS_N("[\"\xed\xa0\x80\"]", phrase);
    JSON_FAILS_N("{\"\xc3\":1}", phrase);
    JSON_FAILS_N("\"a\0b\"", phrase);
    JSON_FAILS_N("{\"a\0\":1}", phrase);
    json_fails("\"a\\u0000b\"", "\\u0000 at byte 2");
    json_fails("{\"\\u0000\":1}", phrase);
    json_fails("[1,\xff]", "not UTF-8");

    /* Valid text passes, in both forms of JSON and in msgpack. */
    const char *utf8 = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf";
    cJSON *t = json_ok("\"\\u00e9\\u20ac\\ud83d\\ude00\\udbff\\udfff\"");
    assert_string_equal(t->valuestring, utf8);
    cJSON_Delete(t);
    char js[64];
    snprintf(js, sizeof js, "{\"%s\":\"%s\"}", utf8, utf8);
    t = json_ok(js);
    assert_string_equal(t->child->string, utf8);
    assert_string_equal(t->child->valuestring, utf8);
    cJSON_Delete(t);
    unsigned char mp[32] = {(unsigned char)(0xa0 | strlen(utf8))};
    memcpy(mp + 1, utf8, strlen(utf8));
    t = mp_ok(mp, 1 + strlen(utf8));
    assert_string_equal(t->valuestring, utf8);
    cJSON_Delete(t);
    /* An escaped backslash before "u0000" is no \u0000. */
    t = json_ok("\"\\\\u0000\"");
    assert_string_equal(t->valuestring, "\\u0000");
    cJSON_Delete(t);
}

static void pack_and_fail(void (*pack)(msgpack_packer *), const char *phrase)
{
    ref_pack r;
    ref_init(&r);
    pack(&r.pk);
    decode_fails(wire_mp_decode, r.sb.data, r.sb.size, RG_EBADREQ, phrase);
    ref_destroy(&r);
}

static cJSON *pack_and_decode(void (*pack)(msgpack_packer *))
{
    ref_pack r;
    ref_init(&r);
    pack(&r.pk);
    cJSON *t = mp_ok(r.sb.data, r.sb.size);
    ref_destroy(&r);
    return t;
}

static void pack_2p53(msgpack_packer *pk)
{
    msgpack_pack_uint64(pk, 1ULL << 53);
}
static void pack_2p53_plus1(msgpack_packer *pk)
{
    msgpack_pack_uint64(pk, (1ULL << 53) + 1);
}
static void pack_neg_2p53(msgpack_packer *pk)
{
    msgpack_pack_int64(pk, -(INT64_C(1) << 53));
}
static void pack_neg_2p53_minus1(msgpack_packer *pk)
{
    msgpack_pack_int64(pk, -(INT64_C(1) << 53) - 1);
}
static void pack_u64_max(msgpack_packer *pk)
{
    msgpack_pack_uint64(pk, UINT64_MAX);
}
static void pack_i64_min_in_map(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 1);
    msgpack_pack_str(pk, 1);
    msgpack_pack_str_body(pk, "n", 1);
    msgpack_pack_int64(pk, INT64_MIN);
}

static void test_integers_beyond_2p53_rejected(void **state)
{
    (void)state;
    cJSON *t = pack_and_decode(pack_2p53);
    assert_true(t->valuedouble == TWO53);
    cJSON_Delete(t);
    t = pack_and_decode(pack_neg_2p53);
    assert_true(t->valuedouble == -TWO53);
    cJSON_Delete(t);
    pack_and_fail(pack_2p53_plus1, "9007199254740993 does not");
    pack_and_fail(pack_neg_2p53_minus1, "-9007199254740993 does not");
    pack_and_fail(pack_u64_max, "2^53");
    pack_and_fail(pack_i64_min_in_map, "2^53");
}

static void pack_nan64(msgpack_packer *pk)
{
    msgpack_pack_double(pk, NAN);
}
static void pack_inf64(msgpack_packer *pk)
{
    msgpack_pack_double(pk, INFINITY);
}
static void pack_ninf64(msgpack_packer *pk)
{
    msgpack_pack_double(pk, -INFINITY);
}
static void pack_nan32(msgpack_packer *pk)
{
    msgpack_pack_float(pk, NAN);
}
static void pack_inf32_in_array(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 2);
    msgpack_pack_nil(pk);
    msgpack_pack_float(pk, INFINITY);
}

static void test_nonfinite_numbers_rejected(void **state)
{
    (void)state;
    pack_and_fail(pack_nan64, "numbers must be finite");
    pack_and_fail(pack_inf64, "numbers must be finite");
    pack_and_fail(pack_ninf64, "numbers must be finite");
    pack_and_fail(pack_nan32, "numbers must be finite");
    pack_and_fail(pack_inf32_in_array, "numbers must be finite");
    json_fails("1e999", "numbers must be finite");
    json_fails("{\"x\":[-1e400]}", "numbers must be finite");
    json_fails("NaN", "not valid JSON");
    cJSON *t = json_ok("[1e308,-4.9e-324]");
    assert_true(t->child->valuedouble == 1e308);
    cJSON_Delete(t);
}

/* RFC 8259's number grammar, not strtod's: cJSON alone would take these. */
static void test_json_numbers_follow_the_grammar(void **state)
{
    (void)state;
    const char *bad[] = {"{\"x\":01}",  "{\"x\":00}",    "{\"x\":-01}",   "{\"x\":1.}",
                         "{\"x\":-.5}", "{\"x\":1.e3}",  "{\"x\":1e}",    "{\"x\":1e+}",
                         "{\"x\":-}",   "{\"x\":[1,-]}", "{\"x\":1.2.3}", "{\"x\":1e2e3}",
                         "{\"x\":1-2}", "{\"x\":0.5.}",  "-0.",           "2."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        json_fails(bad[i], "a malformed number at byte");
    json_fails("{\"x\":012}", "number at byte 5");
    /* Not numbers at all: cJSON's own refusal. */
    json_fails("{\"x\":+1}", "not valid JSON");
    json_fails("{\"x\":.5}", "not valid JSON");
    /* Digits and signs inside strings are not numbers. */
    cJSON *t = json_ok("{\"x\":\"01.-e\",\"01\":[0,-0,0.5,-1.25e-3,1E+2,10,9007199254740992]}");
    assert_string_equal(cJSON_GetObjectItem(t, "x")->valuestring, "01.-e");
    const cJSON *v = cJSON_GetObjectItem(t, "01")->child;
    const double want[] = {0, 0, 0.5, -1.25e-3, 100, 10, 9007199254740992.0};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++, v = v->next)
        assert_true(v && v->valuedouble == want[i]);
    assert_null(v);
    cJSON_Delete(t);
}

static void test_ext_rejected(void **state)
{
    (void)state;
    MP_FAILS("extension types", 0xd4, 0x01, 0x00);
    MP_FAILS("extension types", 0xd6, 0xff, 0x00, 0x00, 0x00, 0x00); /* timestamp */
    MP_FAILS("extension types", 0xc7, 0x02, 0x05, 'a', 'b');
    MP_FAILS("extension types", 0x81, 0xa1, 'e', 0xd8, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
             0, 0, 0);
    /* An ext cut short is the pre-scan's business. */
    MP_FAILS("ends in the middle", 0xd5, 0x01, 0x00);
    MP_FAILS("an extension value of 3 bytes but has 2 bytes left", 0xc7, 0x03, 0x05, 'a', 'b');
}

/* ---- binary data --------------------------------------------------------- */

static void test_bin_round_trip(void **state)
{
    (void)state;
    unsigned char data[256];
    for (int i = 0; i < 256; i++)
        data[i] = (unsigned char)i;
    ref_pack r;
    ref_init(&r);
    msgpack_pack_bin(&r.pk, sizeof data);
    msgpack_pack_bin_body(&r.pk, data, sizeof data);

    cJSON *t = mp_ok(r.sb.data, r.sb.size);
    assert_true(wire_is_bin(t));
    assert_true(cJSON_IsString(t));
    assert_int_equal(strlen(t->valuestring), 344);
    assert_memory_equal(t->valuestring, "AAECAwQFBgc", 11);
    assert_string_equal(t->valuestring + 340, "/w==");
    size_t n = 0;
    unsigned char *back = rg_base64_decode(t->valuestring, strlen(t->valuestring), &n);
    assert_int_equal(n, sizeof data);
    assert_memory_equal(back, data, n);
    free(back);
    assert_mp_bytes(t, r.sb.data, r.sb.size); /* bin again, byte-identical */

    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(wire_json_encode(t, &b), 0);
    assert_int_equal(b.len, 346);
    assert_int_equal(b.data[0], '"');
    assert_memory_equal(b.data + 1, t->valuestring, 344);
    rg_buf_destroy(&b);
    cJSON_Delete(t);
    ref_destroy(&r);

    /* Empty bin; a bin inside a map. */
    static const unsigned char empty[] = {0xc4, 0x00};
    t = mp_ok(empty, sizeof empty);
    assert_true(wire_is_bin(t));
    assert_string_equal(t->valuestring, "");
    assert_mp_bytes(t, empty, sizeof empty);
    cJSON_Delete(t);
    static const unsigned char in_map[] = {0x81, 0xa1, 'd', 0xc4, 0x02, 0xfe, 0xff};
    t = mp_ok(in_map, sizeof in_map);
    assert_true(wire_is_bin(cJSON_GetObjectItem(t, "d")));
    assert_json_text(t, "{\"d\":\"/v8=\"}");
    assert_mp_bytes(t, in_map, sizeof in_map);
    cJSON_Delete(t);
}

static void test_bin_new_and_json(void **state)
{
    (void)state;
    static const struct {
        const char *data;
        const char *b64;
    } cases[] = {{"", ""}, {"h", "aA=="}, {"he", "aGU="}, {"hel", "aGVs"}, {"hello", "aGVsbG8="}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *v = wire_bin_new(cases[i].data, strlen(cases[i].data));
        assert_non_null(v);
        assert_true(wire_is_bin(v));
        assert_string_equal(v->valuestring, cases[i].b64);
        char *printed = cJSON_PrintUnformatted(v); /* cJSON's own printer ignores the bit */
        char want[32];
        snprintf(want, sizeof want, "\"%s\"", cases[i].b64);
        assert_string_equal(printed, want);
        assert_json_text(v, want);
        free(printed);
        cJSON_Delete(v);
    }
    cJSON *v = wire_bin_new(NULL, 0);
    assert_non_null(v);
    cJSON_Delete(v);

    cJSON *reply = cJSON_CreateObject();
    cJSON_AddItemToObject(reply, "data", wire_bin_new("\x89PNG", 4));
    cJSON_AddNumberToObject(reply, "width", 1280);
    assert_json_text(reply, "{\"data\":\"iVBORw==\",\"width\":1280}");
    static const unsigned char mp[] = {0x82, 0xa4, 'd', 'a', 't', 'a', 0xc4, 0x04, 0x89, 'P', 'N',
                                       'G',  0xa5, 'w', 'i', 'd', 't', 'h',  0xcd, 0x05, 0x00};
    assert_mp_bytes(reply, mp, sizeof mp);
    cJSON_Delete(reply);

    v = cJSON_CreateString("aGVsbG8=");
    assert_false(wire_is_bin(v));
    assert_false(wire_is_bin(NULL));
    v->type |= WIRE_BIN;
    static const unsigned char hello[] = {0xc4, 0x05, 'h', 'e', 'l', 'l', 'o'};
    assert_mp_bytes(v, hello, sizeof hello);
    cJSON_Delete(v);
}

/* ---- numbers on the way out ---------------------------------------------- */

static void test_integral_numbers_pack_as_ints(void **state)
{
    (void)state;
    static const double values[] = {0,
                                    -1,
                                    127,
                                    128,
                                    -32,
                                    -33,
                                    255,
                                    256,
                                    -128,
                                    -129,
                                    65535,
                                    65536,
                                    -32768,
                                    -32769,
                                    4294967295.0,
                                    4294967296.0,
                                    1700000000000.0,
                                    -TWO53,
                                    TWO53,
                                    -2147483649.0};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        ref_pack r;
        ref_init(&r);
        msgpack_pack_int64(&r.pk, (int64_t)values[i]);
        cJSON *v = cJSON_CreateNumber(values[i]);
        assert_mp_bytes(v, r.sb.data, r.sb.size);
        assert_int_not_equal((unsigned char)r.sb.data[0], 0xcb);
        cJSON_Delete(v);
        ref_destroy(&r);
    }
    static const unsigned char zero[] = {0x00}, minus1[] = {0xff}, b128[] = {0xcc, 0x80},
                               m33[] = {0xd0, 0xdf},
                               b2p32[] = {0xcf, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
    cJSON *v = cJSON_CreateNumber(0);
    assert_mp_bytes(v, zero, 1);
    cJSON_SetNumberValue(v, -1);
    assert_mp_bytes(v, minus1, 1);
    cJSON_SetNumberValue(v, 128);
    assert_mp_bytes(v, b128, 2);
    cJSON_SetNumberValue(v, -33);
    assert_mp_bytes(v, m33, 2);
    cJSON_SetNumberValue(v, 4294967296.0);
    assert_mp_bytes(v, b2p32, sizeof b2p32);
    cJSON_Delete(v);
}

static void test_floats_stay_float64(void **state)
{
    (void)state;
    static const double values[] = {0.5, -1.25, 3.141592653589793, 1e300,   -1e-300,
                                    0.1, 1e19,  -9.3e18 * 2,       4.9e-324};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        ref_pack r;
        ref_init(&r);
        msgpack_pack_double(&r.pk, values[i]);
        assert_int_equal(r.sb.size, 9);
        cJSON *v = cJSON_CreateNumber(values[i]);
        assert_mp_bytes(v, r.sb.data, r.sb.size);
        cJSON_Delete(v);
        ref_destroy(&r);
    }
    /* Integral doubles beyond 2^53 (where the decoder stops taking integers) stay floats. */
    static const double big[] = {TWO53 + 2, -TWO53 - 2, 1e17, -9223372036854775808.0};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        ref_pack r;
        ref_init(&r);
        msgpack_pack_double(&r.pk, big[i]);
        cJSON *v = cJSON_CreateNumber(big[i]);
        assert_mp_bytes(v, r.sb.data, r.sb.size);
        cJSON *back = mp_ok(r.sb.data, r.sb.size);
        assert_true(back->valuedouble == big[i]);
        cJSON_Delete(back);
        cJSON_Delete(v);
        ref_destroy(&r);
    }
    /* A float32 comes back as float64 of the same value. */
    static const unsigned char f32[] = {0xca, 0x3f, 0xc0, 0x00, 0x00}; /* 1.5f */
    static const unsigned char f64[] = {0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
    cJSON *t = mp_ok(f32, sizeof f32);
    assert_true(t->valuedouble == 1.5);
    assert_mp_bytes(t, f64, sizeof f64);
    cJSON_Delete(t);
}

static void expect_json_number(double d, const char *want)
{
    cJSON *v = cJSON_CreateNumber(d);
    assert_json_text(v, want);
    cJSON_Delete(v);
}

static void test_json_number_text(void **state)
{
    (void)state;
    expect_json_number(0, "0");
    expect_json_number(-0.0, "0");
    expect_json_number(-1, "-1");
    expect_json_number(1700000000000.0, "1700000000000");
    expect_json_number(-TWO53, "-9007199254740992");
    expect_json_number(4294967296.0, "4294967296");
    expect_json_number(0.1, "0.1");
    expect_json_number(2.5, "2.5");
    expect_json_number(1e300, "1e+300");
    expect_json_number(NAN, "null");
    expect_json_number(INFINITY, "null");

    /* Other values take the digits they need to read back the same. */
    static const double odd[] = {1.0 / 3, 0.1 + 0.2, 5e-324, 1.7976931348623157e308, 123.456};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        cJSON *v = cJSON_CreateNumber(odd[i]);
        rg_buf b;
        rg_buf_init(&b);
        assert_int_equal(wire_json_encode(v, &b), 0);
        assert_true(strtod(b.data, NULL) == odd[i]);
        assert_null(strchr(b.data, ','));
        rg_buf_destroy(&b);
        cJSON_Delete(v);
    }
    cJSON *t = json_ok("[1.7e12,-0.5,1E2]");
    assert_json_text(t, "[1700000000000,-0.5,100]");
    cJSON_Delete(t);
}

static void test_encoders_refuse_invalid_trees(void **state)
{
    (void)state;
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, "keep");

    cJSON *raw = cJSON_CreateRaw("1");
    assert_int_equal(wire_mp_encode(raw, &b), RG_EINTERNAL);
    assert_int_equal(wire_json_encode(raw, &b), RG_EINTERNAL);
    cJSON_Delete(raw);
    assert_int_equal(wire_mp_encode(NULL, &b), RG_EINTERNAL);

    /* An object member without a key, after one that was written already. */
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddNumberToObject(obj, "ok", 1);
    cJSON_AddItemToArray(obj, cJSON_CreateNull());
    assert_int_equal(wire_mp_encode(obj, &b), RG_EINTERNAL);
    assert_int_equal(wire_json_encode(obj, &b), RG_EINTERNAL);
    cJSON_Delete(obj);

    cJSON *bin = cJSON_CreateString("not base64!");
    bin->type |= WIRE_BIN;
    assert_int_equal(wire_mp_encode(bin, &b), RG_EINTERNAL);
    cJSON_Delete(bin);

    /* A tree that contains itself ends at the depth cap instead of the stack's end. */
    cJSON *loop = cJSON_CreateArray();
    cJSON_AddItemToArray(loop, cJSON_CreateTrue());
    cJSON_AddItemReferenceToArray(loop, loop);
    assert_int_equal(wire_mp_encode(loop, &b), RG_EINTERNAL);
    assert_int_equal(wire_json_encode(loop, &b), RG_EINTERNAL);
    cJSON_Delete(loop);

    assert_int_equal(b.len, 4);
    assert_string_equal(b.data, "keep");
    rg_buf_destroy(&b);
}

/* ---- random bodies ------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64*: fixed seed, so a failure reproduces. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

/* An accepted tree survives msgpack and JSON encoding and decoding unchanged. */
static void check_reencodes(const cJSON *t)
{
    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(wire_mp_encode(t, &b), 0);
    cJSON *again = mp_ok(b.data, b.len);
    assert_true(cJSON_Compare(t, again, 1));
    cJSON_Delete(again);
    rg_buf_reset(&b);
    assert_int_equal(wire_json_encode(t, &b), 0);
    again = decode_ok(wire_json_decode, b.data, b.len);
    assert_true(cJSON_Compare(t, again, 1));
    cJSON_Delete(again);
    rg_buf_destroy(&b);
}

/* Appends byte x to a body of at most 64 bytes (dropping what does not fit). */
static void put(unsigned char *b, size_t *o, uint64_t x)
{
    if (*o < 64)
        b[(*o)++] = (unsigned char)x;
}

static void put_random(unsigned char *b, size_t *o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put(b, o, rng());
}

/* A short string: mostly 'a'..'c', now and then any byte (NUL, invalid UTF-8). */
static void put_fixstr(unsigned char *b, size_t *o)
{
    size_t n = rng() % 3;
    put(b, o, 0xa0 | n);
    for (size_t i = 0; i < n; i++)
        put(b, o, rng() % 16 ? 'a' + rng() % 3 : rng());
}

/* A random msgpack value, nested at most depth more levels. */
static void put_value(unsigned char *b, size_t *o, int depth)
{
    static const unsigned char scalars[] = {0xc0, 0xc2, 0xc3, 0xcc, 0xcd, 0xce, 0xcf, 0xd0,
                                            0xd1, 0xd2, 0xd3, 0xca, 0xcb, 0xc4, 0xd4, 0xc1};
    static const unsigned char sizes[] = {0, 0, 0, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 0, 2, 0};
    uint64_t kind = rng() % 8, n = rng() % 4;
    if (depth > 0 && kind == 0) {
        put(b, o, 0x90 | n);
        for (uint64_t i = 0; i < n; i++)
            put_value(b, o, depth - 1);
    } else if (depth > 0 && kind == 1) {
        put(b, o, 0x80 | n);
        for (uint64_t i = 0; i < n; i++) {
            put_fixstr(b, o);
            put_value(b, o, depth - 1);
        }
    } else if (kind == 2) {
        put_fixstr(b, o);
    } else if (kind == 3) {
        put(b, o, rng()); /* a fixint, or any other tag */
    } else {
        size_t k = rng() % sizeof scalars;
        put(b, o, scalars[k]);
        if (scalars[k] == 0xc4)
            put(b, o, n);
        put_random(b, o, scalars[k] == 0xc4 ? n : sizes[k]);
    }
}

/* A random byte: half of them uniform, half from tags that make valid msgpack likely. */
static unsigned char random_mp_byte(void)
{
    static const unsigned char likely[] = {0x00, 0x01, 0x7f, 0xe0, 0xff, 0x80, 0x81, 0x82, 0x90,
                                           0x91, 0x92, 0xa0, 0xa1, 0xa2, 0xc0, 0xc2, 0xc3, 0xc4,
                                           0xca, 0xcb, 0xcc, 0xd0, 0xd9, 'a',  'b',  0xdc};
    uint64_t x = rng();
    if (x & 1)
        return (unsigned char)(x >> 8);
    return likely[(x >> 8) % sizeof likely];
}

/*
 * Body i of the random test, at most 64 bytes: a quarter plain random bytes,
 * a quarter the command with two bytes changed (and perhaps cut), half random
 * msgpack values, some of them with a byte changed.
 */
static size_t random_mp_body(int i, const ref_pack *cmd, unsigned char *body)
{
    size_t len = (size_t)(rng() % 65);
    if (i % 4 == 0) {
        for (size_t k = 0; k < len; k++)
            body[k] = random_mp_byte();
    } else if (i % 4 == 1) {
        memcpy(body, cmd->sb.data, cmd->sb.size);
        for (int k = 0; k < 2; k++)
            body[rng() % cmd->sb.size] = random_mp_byte();
        len = len > cmd->sb.size ? cmd->sb.size : len;
    } else {
        len = 0;
        put_value(body, &len, 4);
        if (len && rng() % 4 == 0)
            body[rng() % len] = random_mp_byte();
    }
    return len;
}

static void test_random_msgpack_bodies(void **state)
{
    (void)state;
    unsigned char body[64];
    char err[ERRLEN];
    int accepted = 0, rejected = 0;
    ref_pack cmd;
    ref_command(&cmd);
    assert_true(cmd.sb.size <= sizeof body);

    rng_state = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 20000; i++) {
        size_t len = random_mp_body(i, &cmd, body);
        unsigned char *p = exact_copy(body, len);
        cJSON *t = NULL;
        int r = wire_mp_decode(p, len, &t, err, sizeof err);
        free(p);
        assert_true(r == 0 || r == RG_EBADREQ);
        if (r == 0) {
            accepted++;
            check_reencodes(t);
        } else {
            rejected++;
            assert_null(t);
            assert_true(err[0] != '\0');
        }
        cJSON_Delete(t);
    }
    ref_destroy(&cmd);
    print_message("random msgpack: %d accepted, %d rejected\n", accepted, rejected);
    assert_true(accepted > 2000);
    assert_true(rejected > 2000);
}

static void test_random_json_bodies(void **state)
{
    (void)state;
    static const char likely[] = "{}[]\",:\\u0 1e-.aZ\xff\xc3\x80";
    size_t base = strlen(command_json);
    char body[128];
    char err[ERRLEN];
    int accepted = 0;

    rng_state = 0x2545f4914f6cdd1dULL;
    for (int i = 0; i < 20000; i++) {
        memcpy(body, command_json, base);
        int changes = (int)(rng() % 3);
        for (int k = 0; k < changes; k++)
            body[rng() % base] = likely[rng() % (sizeof likely - 1)];
        size_t len = rng() % 4 == 0 ? (size_t)(rng() % (base + 1)) : base;
        char *p = exact_copy(body, len);
        cJSON *t = NULL;
        int r = wire_json_decode(p, len, &t, err, sizeof err);
        free(p);
        assert_true(r == 0 || r == RG_EBADREQ);
        if (r == 0) {
            accepted++;
            check_reencodes(t);
        }
        cJSON_Delete(t);
    }
    print_message("random JSON: %d accepted\n", accepted);
    assert_true(accepted > 1000);
}

/* A field the protocol calls a float stays float64 in msgpack when integral. */
static void test_float_fields_stay_float(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    assert_non_null(wire_add_float(o, "ms", 0));
    cJSON_AddNumberToObject(o, "n", 0);
    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(wire_mp_encode(o, &b), 0);
    /* {"ms": float64 0.0, "n": 0}: 0x82, 0xa2 'm' 's', 0xcb + 8 zero bytes, 0xa1 'n', 0x00 */
    static const unsigned char want[] = {0x82, 0xa2, 'm', 's', 0xcb, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0xa1, 'n', 0x00};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    rg_buf_reset(&b);
    assert_int_equal(wire_json_encode(o, &b), 0);
    assert_string_equal(b.data, "{\"ms\":0,\"n\":0}");
    rg_buf_destroy(&b);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_fields_stay_float),
        cmocka_unit_test(test_mp_command_round_trip),
        cmocka_unit_test(test_json_command_round_trip),
        cmocka_unit_test(test_mp_gigantic_headers_rejected),
        cmocka_unit_test(test_depth_limits),
        cmocka_unit_test(test_trailing_bytes_rejected),
        cmocka_unit_test(test_truncated_bodies_rejected),
        cmocka_unit_test(test_empty_body_rejected),
        cmocka_unit_test(test_reserved_byte_rejected),
        cmocka_unit_test(test_non_string_keys_rejected),
        cmocka_unit_test(test_duplicate_keys_rejected),
        cmocka_unit_test(test_strings_must_be_utf8_without_nul),
        cmocka_unit_test(test_integers_beyond_2p53_rejected),
        cmocka_unit_test(test_nonfinite_numbers_rejected),
        cmocka_unit_test(test_json_numbers_follow_the_grammar),
        cmocka_unit_test(test_ext_rejected),
        cmocka_unit_test(test_bin_round_trip),
        cmocka_unit_test(test_bin_new_and_json),
        cmocka_unit_test(test_integral_numbers_pack_as_ints),
        cmocka_unit_test(test_floats_stay_float64),
        cmocka_unit_test(test_json_number_text),
        cmocka_unit_test(test_encoders_refuse_invalid_trees),
        cmocka_unit_test(test_random_msgpack_bodies),
        cmocka_unit_test(test_random_json_bodies),
    };
    return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
