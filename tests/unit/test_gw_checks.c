/*
 * test_gw_checks.c - the gateway's checks that need no gateway, Redis or
 * browser: a command map against the op table and the caller's rights
 * (gw_check_command), and a request path against the routes
 * (gw_http_route). Each refusal is RG_EBADREQ or RG_EFORBIDDEN with a
 * message that names what is wrong, as docs/protocol.md has it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/gw_int.h"

static const gw_caller http_caller = {.tenant = "t1"};
static const gw_caller eval_caller = {.tenant = "t1", .allow_eval = 1};
static const gw_caller ws_caller = {.tenant = "t1", .websocket = 1};

/* The result of checking json (a command map) from who on session sid (NULL: POST /v1/sessions). */
static int check(const gw_caller *who, const char *sid, const char *json, char *err, size_t len)
{
    cJSON *m = cJSON_Parse(json);
    if (!m)
        fail_msg("not JSON: %s", json);
    err[0] = '\0';
    int rc = gw_check_command(who, sid, m, err, len);
    cJSON_Delete(m);
    return rc;
}

static void passes(const gw_caller *who, const char *sid, const char *json)
{
    char err[256];
    int rc = check(who, sid, json, err, sizeof err);
    if (rc != 0)
        fail_msg("%s on %s: %s (%s)", json, sid ? sid : "POST /v1/sessions", rg_err_code(rc), err);
}

/* Refused with rc, and the message holds words. */
static void refused(const gw_caller *who, const char *sid, const char *json, int rc,
                    const char *words)
{
    char err[256];
    int got = check(who, sid, json, err, sizeof err);
    if (got != rc || !strstr(err, words))
        fail_msg("%s: %s \"%s\", wanted %s with \"%s\"", json, got ? rg_err_code(got) : "ok", err,
                 rg_err_code(rc), words);
}

static void test_the_command_map(void **state)
{
    (void)state;
    passes(&http_caller, "s1", "{\"op\":\"observe\"}");
    passes(&http_caller, "s1", "{\"op\":\"observe\",\"args\":{},\"id\":0}");
    passes(&http_caller, "s1", "{\"op\":\"observe\",\"id\":\"abc\",\"idempotency_key\":\"k\"}");
    refused(&http_caller, "s1", "[\"observe\"]", RG_EBADREQ, "must be a map");
    refused(&http_caller, "s1", "\"observe\"", RG_EBADREQ, "must be a map");
    refused(&http_caller, "s1", "{}", RG_EBADREQ, "needs an op");
    refused(&http_caller, "s1", "{\"args\":{}}", RG_EBADREQ, "needs an op");
    refused(&http_caller, "s1", "{\"op\":7}", RG_EBADREQ, "op must be a string");
    refused(&http_caller, "s1", "{\"op\":\"observe\",\"args\":[]}", RG_EBADREQ,
            "args must be a map");
    refused(&http_caller, "s1", "{\"op\":\"observe\",\"extra\":1}", RG_EBADREQ,
            "unknown key \"extra\"");
    static const char *const bad_ids[] = {"-1", "1.5", "true", "null", "{}", "[]"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof *bad_ids; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"op\":\"observe\",\"id\":%s}", bad_ids[i]);
        refused(&http_caller, "s1", json, RG_EBADREQ, "id must be");
    }
    /* idempotency_key: 1 to 64 bytes. */
    char key[65], json[160];
    memset(key, 'k', 64);
    key[64] = '\0';
    snprintf(json, sizeof json,
             "{\"op\":\"click\",\"args\":{\"target\":\"@a\"},"
             "\"idempotency_key\":\"%s\"}",
             key);
    passes(&http_caller, "s1", json);
    snprintf(json, sizeof json,
             "{\"op\":\"click\",\"args\":{\"target\":\"@a\"},"
             "\"idempotency_key\":\"%sk\"}",
             key);
    refused(&http_caller, "s1", json, RG_EBADREQ, "idempotency_key");
    refused(&http_caller, "s1", "{\"op\":\"observe\",\"idempotency_key\":\"\"}", RG_EBADREQ,
            "idempotency_key");
    refused(&http_caller, "s1", "{\"op\":\"observe\",\"idempotency_key\":5}", RG_EBADREQ,
            "idempotency_key");
}

static void test_ops_and_routes(void **state)
{
    (void)state;
    refused(&http_caller, "s1", "{\"op\":\"teleport\"}", RG_EBADREQ, "unknown op \"teleport\"");
    /* POST /v1/sessions: session.create, named or not, and nothing else. */
    passes(&http_caller, NULL, "{}");
    passes(&http_caller, NULL, "{\"op\":\"session.create\",\"args\":{\"url\":\"http://x/\"}}");
    refused(&http_caller, NULL, "{\"op\":\"observe\"}", RG_EBADREQ,
            "POST /v1/sessions takes session.create");
    refused(&http_caller, "s1", "{\"op\":\"session.create\"}", RG_EBADREQ,
            "goes to POST /v1/sessions");
    /* Every op of the table that goes to a session, with its required args. */
    static const char *const ok[] = {
        "{\"op\":\"session.info\"}",
        "{\"op\":\"session.park\"}",
        "{\"op\":\"session.restore\"}",
        "{\"op\":\"session.close\"}",
        "{\"op\":\"navigate\",\"args\":{\"url\":\"http://x/\",\"wait\":\"load\"}}",
        "{\"op\":\"back\"}",
        "{\"op\":\"forward\"}",
        "{\"op\":\"reload\"}",
        "{\"op\":\"observe\",\"args\":{\"diff\":true,\"max_elements\":5,\"mode\":\"full\"}}",
        "{\"op\":\"click\",\"args\":{\"target\":\"@a\",\"nth\":2,\"modifiers\":[\"Shift\"]}}",
        "{\"op\":\"fill\",\"args\":{\"target\":\"@a\",\"value\":\"v\"}}",
        "{\"op\":\"type\",\"args\":{\"text\":\"t\"}}",
        "{\"op\":\"press\",\"args\":{\"key\":\"Enter\"}}",
        "{\"op\":\"select\",\"args\":{\"target\":\"@a\",\"values\":[\"x\",\"y\"]}}",
        "{\"op\":\"check\",\"args\":{\"target\":\"@a\"}}",
        "{\"op\":\"uncheck\",\"args\":{\"target\":\"@a\"}}",
        "{\"op\":\"hover\",\"args\":{\"target\":\"@a\"}}",
        "{\"op\":\"focus\",\"args\":{\"target\":\"@a\"}}",
        "{\"op\":\"scroll\",\"args\":{\"dy\":-100}}",
        "{\"op\":\"read\"}",
        "{\"op\":\"screenshot\",\"args\":{\"full_page\":false,\"quality\":80}}",
        "{\"op\":\"wait\",\"args\":{\"text\":\"done\"}}",
        "{\"op\":\"inspect\",\"args\":{\"target\":\"@a\"}}",
        "{\"op\":\"act\",\"args\":{\"steps\":[{\"op\":\"read\"}],\"stop_on_error\":true}}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        passes(&http_caller, "s1", ok[i]);
}

static void test_args_against_the_table(void **state)
{
    (void)state;
    /* A msgpack bin where strings are wanted, also inside an array of them: refused, not
       read as its base64 text. */
    {
        cJSON *m =
            cJSON_Parse("{\"op\":\"select\",\"args\":{\"target\":\"@a\",\"values\":[\"a\"]}}");
        cJSON *vals = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "args"),
                                                       "values");
        cJSON_AddItemToArray(vals, wire_bin_new((const unsigned char *)"ab", 2));
        char err[256] = "";
        assert_int_equal(gw_check_command(&http_caller, "s1", m, err, sizeof err), RG_EBADREQ);
        assert_non_null(strstr(err, "args.values"));
        cJSON_Delete(m);
    }
    refused(&http_caller, "s1", "{\"op\":\"observe\",\"args\":{\"colour\":1}}", RG_EBADREQ,
            "observe takes no argument \"colour\"");
    refused(&http_caller, "s1", "{\"op\":\"navigate\"}", RG_EBADREQ, "navigate needs args.url");
    refused(&http_caller, "s1", "{\"op\":\"fill\",\"args\":{\"target\":\"@a\"}}", RG_EBADREQ,
            "fill needs args.value");
    refused(&http_caller, "s1", "{\"op\":\"navigate\",\"args\":{\"url\":5}}", RG_EBADREQ,
            "args.url must be a string");
    refused(&http_caller, "s1", "{\"op\":\"click\",\"args\":{\"target\":\"@a\",\"nth\":1.5}}",
            RG_EBADREQ, "args.nth must be an integer");
    refused(&http_caller, "s1", "{\"op\":\"observe\",\"args\":{\"diff\":\"yes\"}}", RG_EBADREQ,
            "args.diff must be a boolean");
    refused(&http_caller, NULL, "{\"args\":{\"viewport\":[1]}}", RG_EBADREQ,
            "args.viewport must be a map");
    refused(&http_caller, "s1", "{\"op\":\"select\",\"args\":{\"target\":\"@a\",\"values\":[1]}}",
            RG_EBADREQ, "args.values must be an array of strings");
    refused(&http_caller, "s1", "{\"op\":\"select\",\"args\":{\"target\":\"@a\",\"values\":\"x\"}}",
            RG_EBADREQ, "args.values must be an array of strings");
    refused(&http_caller, "s1", "{\"op\":\"act\",\"args\":{\"steps\":[\"read\"]}}", RG_EBADREQ,
            "args.steps must be an array of maps");
    /* The file ops (their entries are checked by the handler: names, bytes, sizes). */
    refused(&http_caller, "s1", "{\"op\":\"upload\",\"args\":{\"target\":\"@f\"}}", RG_EBADREQ,
            "upload needs args.files");
    refused(&http_caller, "s1", "{\"op\":\"upload\",\"args\":{\"files\":[{}]}}", RG_EBADREQ,
            "upload needs args.target");
    refused(&http_caller, "s1", "{\"op\":\"upload\",\"args\":{\"target\":\"@f\",\"files\":\"a\"}}",
            RG_EBADREQ, "args.files must be an array of maps");
    passes(&http_caller, "s1",
           "{\"op\":\"upload\",\"args\":{\"target\":\"@f\",\"files\":[{\"name\":\"a\",\"data\":"
           "\"\"}]}}");
    passes(&http_caller, "s1", "{\"op\":\"downloads\"}");
    refused(&http_caller, "s1", "{\"op\":\"downloads\",\"args\":{\"id\":\"x\"}}", RG_EBADREQ,
            "downloads takes no argument \"id\"");
    refused(&http_caller, "s1", "{\"op\":\"download.get\"}", RG_EBADREQ,
            "download.get needs args.id");
    refused(&http_caller, "s1", "{\"op\":\"download.get\",\"args\":{\"id\":7}}", RG_EBADREQ,
            "args.id must be a string");
    /* timeout_ms: every op takes it, 1 to 600,000. */
    passes(&http_caller, "s1", "{\"op\":\"observe\",\"args\":{\"timeout_ms\":1}}");
    passes(&http_caller, "s1", "{\"op\":\"read\",\"args\":{\"timeout_ms\":600000}}");
    static const char *const bad_timeouts[] = {"0", "-5", "600001", "2.5", "\"100\""};
    for (size_t i = 0; i < sizeof bad_timeouts / sizeof *bad_timeouts; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"op\":\"read\",\"args\":{\"timeout_ms\":%s}}",
                 bad_timeouts[i]);
        refused(&http_caller, "s1", json, RG_EBADREQ, "args.timeout_ms must be an integer");
    }
}

static void test_the_callers_rights(void **state)
{
    (void)state;
    /* eval: only for a tenant allowed to. */
    refused(&http_caller, "s1", "{\"op\":\"eval\",\"args\":{\"expression\":\"1\"}}", RG_EFORBIDDEN,
            "eval is not allowed");
    passes(&eval_caller, "s1", "{\"op\":\"eval\",\"args\":{\"expression\":\"1\"}}");
    refused(&eval_caller, "s1", "{\"op\":\"eval\"}", RG_EBADREQ, "eval needs args.expression");
    /* subscribe: on the WebSocket only; there every command needs an id. */
    refused(&http_caller, "s1", "{\"op\":\"subscribe\",\"args\":{\"events\":[\"navigation\"]}}",
            RG_EBADREQ, "subscribe works on the WebSocket only");
    passes(&ws_caller, "s1", "{\"op\":\"subscribe\",\"id\":1,\"args\":{\"events\":[\"console\"]}}");
    refused(&ws_caller, "s1", "{\"op\":\"subscribe\",\"args\":{\"events\":[\"console\"]}}",
            RG_EBADREQ, "need an id");
    refused(&ws_caller, "s1", "{\"op\":\"observe\"}", RG_EBADREQ, "need an id");
    passes(&ws_caller, "s1", "{\"op\":\"observe\",\"id\":\"a\"}");
    /* A message buffer is optional, and a short one is cut, not overrun. */
    cJSON *m = cJSON_Parse("{\"op\":\"teleport\"}");
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    assert_int_equal(gw_check_command(&http_caller, "s1", m, NULL, 0), RG_EBADREQ);
    assert_int_equal(gw_check_command(&http_caller, "s1", m, tiny, sizeof tiny), RG_EBADREQ);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
    cJSON_Delete(m);
}

static void test_routes(void **state)
{
    (void)state;
    char sid[SESS_ID_MAX + 1];
    assert_int_equal(gw_http_route("/v1/sessions", sid, sizeof sid), GW_ROUTE_SESSIONS);
    assert_string_equal(sid, "");
    assert_int_equal(gw_http_route("/v1/sessions/", sid, sizeof sid), GW_ROUTE_SESSIONS);
    assert_int_equal(gw_http_route("/v1/sessions/sAbc123", sid, sizeof sid), GW_ROUTE_SESSION);
    assert_string_equal(sid, "sAbc123");
    assert_int_equal(gw_http_route("/v1/sessions/sAbc123/", sid, sizeof sid), GW_ROUTE_SESSION);
    assert_string_equal(sid, "sAbc123");
    assert_int_equal(gw_http_route("/v1/sessions/sAbc123/ws", sid, sizeof sid), GW_ROUTE_WS);
    assert_string_equal(sid, "sAbc123");
    static const char *const none[] = {
        "/",
        "",
        "/v1",
        "/v1/session",
        "/v1/sessionsx",
        "/v1/sessions//",
        "/v1/sessions//ws",
        "/v1/sessions/s1/ws/",
        "/v1/sessions/s1/wss",
        "/v1/sessions/s1/observe",
        "/v2/sessions/s1",
        "/V1/SESSIONS",
        "v1/sessions",
        "/healthz",
    };
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        if (gw_http_route(none[i], sid, sizeof sid) != GW_ROUTE_NONE)
            fail_msg("\"%s\" routed", none[i]);
    /* A session id longer than any can be still routes (to not_found later), unread. */
    char path[SESS_ID_MAX + 64], big[SESS_ID_MAX + 8];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(path, sizeof path, "/v1/sessions/%s", big);
    assert_int_equal(gw_http_route(path, sid, sizeof sid), GW_ROUTE_SESSION);
    assert_string_equal(sid, "");
    /* The longest that fits is copied whole. */
    big[SESS_ID_MAX] = '\0';
    snprintf(path, sizeof path, "/v1/sessions/%s/ws", big);
    assert_int_equal(gw_http_route(path, sid, sizeof sid), GW_ROUTE_WS);
    assert_string_equal(sid, big);
}

/* A live view's token: made, verified, and everything that must not verify. */
static void test_view_tokens(void **state)
{
    (void)state;
    static const unsigned char key[32] = "0123456789abcdef0123456789abcdef";
    static const unsigned char key2[32] = "0123456789abcdef0123456789abcdeX";
    char tok[GW_VIEW_TOKEN_MAX + 1];
    gw_view_claims cl;
    assert_int_equal(gw_view_token_make(key, sizeof key, "acme", "s1", 2000000000LL, 1, tok,
                                        sizeof tok),
                     0);
    assert_true(!strncmp(tok, "v1.2000000000.1.", 16));
    assert_int_equal(gw_view_token_verify(key, sizeof key, tok, "s1", 1999999999LL, &cl), 0);
    assert_string_equal(cl.tenant, "acme");
    assert_int_equal(cl.control, 1);
    assert_int_equal(cl.exp, 2000000000LL);
    /* Another session, expired, another secret. */
    assert_int_equal(gw_view_token_verify(key, sizeof key, tok, "s2", 1999999999LL, &cl),
                     RG_EUNAUTH);
    assert_int_equal(gw_view_token_verify(key, sizeof key, tok, "s1", 2000000000LL, &cl),
                     RG_EUNAUTH);
    assert_int_equal(gw_view_token_verify(key2, sizeof key2, tok, "s1", 1999999999LL, &cl),
                     RG_EUNAUTH);
    /* Any one character changed (the claims or the mac) no longer verifies. */
    for (size_t i = 0; tok[i]; i++) {
        char t[sizeof tok];
        snprintf(t, sizeof t, "%s", tok);
        t[i] = t[i] == 'A' ? 'B' : t[i] == '1' ? '0' : 'A';
        if (gw_view_token_verify(key, sizeof key, t, "s1", 1, &cl) == 0)
            fail_msg("changing character %zu of %s still verifies", i, tok);
    }
    /* Other spellings of the same claims are not tokens. */
    const char *bad[] = {"", "v1", "v2.2000000000.1.YWNtZQ.x", "v1.02000000000.1.YWNtZQ.x",
                         "v1.2000000000.2.YWNtZQ.x", "v1.2000000000.1..x",
                         "v1.2000000000.1.YWNtZQ==.x", "v1.1234567890123.1.YWNtZQ.x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(gw_view_token_parse(bad[i], strlen(bad[i]), &cl), RG_EUNAUTH);
    /* A tenant name that is not one is refused at both ends. */
    assert_int_equal(gw_view_token_make(key, sizeof key, "no such/tenant", "s1", 1, 0, tok,
                                        sizeof tok),
                     RG_EBADREQ);
}

/* A caller with a view token: the live view's ops only; input needs control at run time. */
static void test_view_callers(void **state)
{
    (void)state;
    gw_caller viewer = {.tenant = "t1", .websocket = 1, .viewer = 1};
    passes(&viewer, "s1", "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"screencast\"]}}");
    passes(&viewer, "s1", "{\"id\":1,\"op\":\"input\",\"args\":{\"type\":\"click\",\"x\":1,\"y\":2}}");
    refused(&viewer, "s1", "{\"id\":1,\"op\":\"observe\"}", RG_EFORBIDDEN, "view token");
    refused(&viewer, "s1", "{\"id\":1,\"op\":\"session.view_token\"}", RG_EFORBIDDEN,
            "view token");
    /* an API key sends input over HTTP too (computer-use agents); its args are checked */
    passes(&http_caller, "s1", "{\"op\":\"input\",\"args\":{\"type\":\"click\",\"x\":1,\"y\":2}}");
    refused(&http_caller, "s1", "{\"op\":\"input\",\"args\":{\"type\":\"click\",\"x\":\"1\"}}",
            RG_EBADREQ, "args.x");
    passes(&http_caller, "s1", "{\"op\":\"session.view_token\",\"args\":{\"control\":true,"
                               "\"ttl_s\":60}}");
    refused(&ws_caller, "s1",
            "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"screencast\"],"
            "\"quality\":\"high\"}}",
            RG_EBADREQ, "quality");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_command_map),
        cmocka_unit_test(test_ops_and_routes),
        cmocka_unit_test(test_args_against_the_table),
        cmocka_unit_test(test_the_callers_rights),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_view_tokens),
        cmocka_unit_test(test_view_callers),
    };
    return cmocka_run_group_tests_name("gw_checks", tests, NULL, NULL);
}
