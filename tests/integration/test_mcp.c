/*
 * test_mcp.c - `refgate-cli mcp`, the MCP server on stdio, against a whole
 * stack (nginx, a worker, Chromium, Redis) started here:
 *
 *   - an agent-style task driven by the official MCP TypeScript SDK client
 *     (tests/mcp/agent.mjs; tests/mcp/install.sh installs the pinned SDK):
 *     tools, navigate, snapshot, typing into a search box that reacts to
 *     keydown only, a result that opens in a new tab, listing and switching
 *     tabs, a click, a file the page reads back, a screenshot, errors, close;
 *   - protocol conformance, line by line on the server's own pipes:
 *     version negotiation, tools/list schemas, notifications unanswered,
 *     malformed JSON, a wrong jsonrpc, an unknown method and tool, missing
 *     arguments and an oversized message each refused with the right
 *     JSON-RPC error, and the server still serving afterwards;
 *   - the same task over Streamable HTTP (POST /v1/mcp through nginx), with
 *     the SDK's HTTP client transport, and that endpoint's answers to what
 *     it refuses: GET, a wrong content type, a missing or unknown
 *     Mcp-Session-Id, a notification (202), DELETE.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"

#define APP "tests/mcp/app"

static fx_stack gw; /* the stack, beside a server of tests/mcp/app */
static char cli[512], gw_url[64];

/* BUILD/refgate-cli, beside this test's BUILD/tests/. */
static void find_cli(void)
{
    ssize_t n = readlink("/proc/self/exe", cli, sizeof cli - 32);
    assert_true(n > 0);
    cli[n] = '\0';
    for (int i = 0; i < 2; i++)
        *strrchr(cli, '/') = '\0';
    strcat(cli, "/refgate-cli");
}

/* Runs tests/mcp/agent.mjs (extra: its transport options); it must end with "done". */
static void agent_task(const char *extra)
{
    char url[256], cmd[1400];
    httpd_url(gw.pages, "", url, sizeof url);
    snprintf(cmd, sizeof cmd,
             "REFGATE_URL='%s' REFGATE_KEY='%s' node tests/mcp/agent.mjs '%s' '%s' %s 2>&1",
             gw_url, stack_key(gw.st, 0), cli, url, extra);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[4096], last[4096] = "";
    while (fgets(line, sizeof line, p)) {
        fputs(line, stdout); /* each step of the task, for the log */
        snprintf(last, sizeof last, "%s", line);
    }
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_string_equal(last, "done\n");
}

static void test_agent_task_through_the_sdk_client(void **state)
{
    (void)state;
    agent_task("");
}

static void test_agent_task_over_http(void **state)
{
    (void)state;
    char extra[128];
    snprintf(extra, sizeof extra, "--http '%s/v1/mcp'", gw_url);
    agent_task(extra);
}

/* POST /v1/mcp through nginx with extra headers; the status, and the body into body. */
static int mcp_post(const char *headers, const char *body, char *out, size_t len)
{
    char h[600];
    snprintf(h, sizeof h, "%s%s", gw.auth[0], headers);
    http_resp r;
    assert_int_equal(http_request(stack_port(gw.st), "POST", "/v1/mcp", h, body, strlen(body), &r),
                     0);
    if (out)
        snprintf(out, len, "%s", r.body.data ? r.body.data : "");
    rg_buf_destroy(&r.body);
    return r.status;
}

/* tools/list over HTTP as tenant who (0 acme, allowed to eval; 1 other, not) on a session of its own. */
static void list_as(int who, char *out, size_t len)
{
    int st = 0;
    cJSON *made = expect_post(&gw, who, "/v1/sessions", "{}", &st);
    assert_int_equal(st, 200);
    char h[400];
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\nMcp-Session-Id: %s\r\n",
             gw.auth[who], reply_str(made, "session"));
    cJSON_Delete(made);
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
    http_resp r;
    assert_int_equal(
        http_request(stack_port(gw.st), "POST", "/v1/mcp", h, body, strlen(body), &r), 0);
    assert_int_equal(r.status, 200);
    snprintf(out, len, "%s", r.body.data ? r.body.data : "");
    rg_buf_destroy(&r.body);
}

/* Over HTTP the server knows the tenant: browser_evaluate is offered only where eval is allowed. */
static void test_http_offers_evaluate_only_to_eval_tenants(void **state)
{
    (void)state;
    static char acme[65536], other[65536];
    list_as(0, acme, sizeof acme);
    list_as(1, other, sizeof other);
    assert_non_null(strstr(acme, "\"browser_evaluate\""));
    assert_null(strstr(other, "\"browser_evaluate\""));
    assert_non_null(strstr(other, "\"browser_click\""));
}

static void test_http_endpoint_refusals(void **state)
{
    (void)state;
    const char *json = "Content-Type: application/json\r\n";
    char h[300], body[2000];
    http_resp r;
    /* No server-sent stream: GET is 405. */
    assert_int_equal(http_request(stack_port(gw.st), "GET", "/v1/mcp", gw.auth[0], NULL, 0, &r), 0);
    assert_int_equal(r.status, 405);
    rg_buf_destroy(&r.body);
    /* JSON only; a key is needed as on every request. */
    assert_int_equal(mcp_post("Content-Type: text/plain\r\n", "{}", NULL, 0), 415);
    assert_int_equal(http_request(stack_port(gw.st), "POST", "/v1/mcp", json, "{}", 2, &r), 0);
    assert_int_equal(r.status, 401);
    rg_buf_destroy(&r.body);
    /* After initialize every request names its session. */
    assert_int_equal(mcp_post(json, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", NULL, 0),
                     400);
    snprintf(h, sizeof h, "%sMcp-Session-Id: sNoSuchSession123\r\n", json);
    assert_int_equal(mcp_post(h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", NULL, 0),
                     404);
    /* An MCP session is a refgate session: one made through the API serves. */
    char sid[64];
    int st = 0;
    cJSON *made = expect_post(&gw, 0, "/v1/sessions", "{}", &st);
    assert_int_equal(st, 200);
    snprintf(sid, sizeof sid, "%s", reply_str(made, "session"));
    cJSON_Delete(made);
    snprintf(h, sizeof h, "%sMcp-Session-Id: %s\r\n", json, sid);
    assert_int_equal(mcp_post(h, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
                              body, sizeof body),
                     202);
    assert_string_equal(body, "");
    assert_int_equal(mcp_post(h, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", body,
                              sizeof body),
                     200);
    assert_string_equal(body, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");
    assert_int_equal(mcp_post(h, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":", body, sizeof body),
                     200);
    assert_non_null(strstr(body, "-32700"));
    /* DELETE ends it: the session is gone, and so is the MCP session. */
    char dh[300];
    snprintf(dh, sizeof dh, "%sMcp-Session-Id: %s\r\n", gw.auth[0], sid);
    assert_int_equal(http_request(stack_port(gw.st), "DELETE", "/v1/mcp", dh, NULL, 0, &r), 0);
    assert_int_equal(r.status, 200);
    rg_buf_destroy(&r.body);
    assert_int_equal(mcp_post(h, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}", NULL, 0),
                     404);
}

/* ---- conformance: the server on pipes of our own ---- */

struct server {
    pid_t pid;
    FILE *in, *out;
};

static void server_start(struct server *s)
{
    int to[2], from[2];
    assert_int_equal(pipe(to), 0);
    assert_int_equal(pipe(from), 0);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        setenv("REFGATE_URL", gw_url, 1);
        setenv("REFGATE_KEY", stack_key(gw.st, 0), 1);
        execl(cli, cli, "mcp", (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    s->in = fdopen(to[1], "w");
    s->out = fdopen(from[0], "r");
    assert_non_null(s->in);
    assert_non_null(s->out);
}

static void send_line(struct server *s, const char *line)
{
    assert_true(fputs(line, s->in) >= 0 && fputc('\n', s->in) != EOF && fflush(s->in) == 0);
}

/* The server's next line, parsed (caller frees). */
static cJSON *next_reply(struct server *s)
{
    static char buf[1 << 20];
    assert_non_null(fgets(buf, sizeof buf, s->out));
    cJSON *r = cJSON_Parse(buf);
    if (!r)
        fail_msg("the server wrote a line that is not JSON: %.200s", buf);
    return r;
}

/* The next reply must be the error code for id (a number, or -1 for null). */
static void expect_error(struct server *s, int id, int code)
{
    cJSON *r = next_reply(s);
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(r, "id");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "error"),
                                                      "code");
    char *txt = cJSON_PrintUnformatted(r);
    if (!cJSON_IsNumber(c) || c->valueint != code ||
        (id < 0 ? !cJSON_IsNull(rid) : !cJSON_IsNumber(rid) || rid->valueint != id))
        fail_msg("wanted error %d for id %d, got %s", code, id, txt);
    free(txt);
    cJSON_Delete(r);
}

/* The next reply must be the result for id; returns it (caller frees the reply). */
static cJSON *expect_result(struct server *s, int id, const cJSON **result)
{
    cJSON *r = next_reply(s);
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(r, "id");
    *result = cJSON_GetObjectItemCaseSensitive(r, "result");
    char *txt = cJSON_PrintUnformatted(r);
    if (!cJSON_IsNumber(rid) || rid->valueint != id || !cJSON_IsObject(*result))
        fail_msg("wanted the result for id %d, got %.300s", id, txt);
    free(txt);
    return r;
}

static void test_protocol_conformance(void **state)
{
    (void)state;
    struct server s;
    server_start(&s);
    const cJSON *res;
    cJSON *r;

    /* A version it speaks is echoed; one it does not gets its newest. */
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                  "{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},"
                  "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    r = expect_result(&s, 1, &res);
    assert_string_equal(json_str(res, "protocolVersion"), "2024-11-05");
    assert_non_null(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(res, "capabilities"), "tools"));
    cJSON_Delete(r);
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":"
                  "{\"protocolVersion\":\"1999-01-01\",\"capabilities\":{}}}");
    r = expect_result(&s, 2, &res);
    assert_string_equal(json_str(res, "protocolVersion"), "2025-06-18");
    cJSON_Delete(r);

    /* Notifications get no reply: the next line answers the ping after them. */
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                  "\"params\":{\"requestId\":1}}");
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
    cJSON_Delete(expect_result(&s, 3, &res));

    /* Every tool has a name, a description and an object schema. */
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
    r = expect_result(&s, 4, &res);
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(res, "tools"), *t;
    assert_true(cJSON_GetArraySize(tools) >= 10);
    cJSON_ArrayForEach(t, tools)
    {
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
        assert_true(strncmp(json_str(t, "name"), "browser_", 8) == 0);
        assert_true(strlen(json_str(t, "description")) > 0);
        assert_string_equal(json_str(schema, "type"), "object");
        assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(schema, "properties")));
    }
    cJSON_Delete(r);

    /* What is refused, and how. */
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":");
    expect_error(&s, -1, -32700);
    send_line(&s, "{\"jsonrpc\":\"1.0\",\"id\":6,\"method\":\"ping\"}");
    expect_error(&s, 6, -32600);
    send_line(&s, "[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}]");
    expect_error(&s, -1, -32600);
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/read\"}");
    expect_error(&s, 8, -32601);
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\","
                  "\"params\":{\"name\":\"browser_teleport\",\"arguments\":{}}}");
    expect_error(&s, 9, -32602);
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\","
                  "\"params\":{\"name\":\"browser_navigate\",\"arguments\":{}}}");
    expect_error(&s, 10, -32602);
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":"
                  "{\"name\":\"browser_select_option\",\"arguments\":{\"target\":\"@x\","
                  "\"values\":\"red\"}}}");
    expect_error(&s, 11, -32602);
    size_t big = 9u * 1024 * 1024;
    char *huge = malloc(big + 64);
    assert_non_null(huge);
    int n = snprintf(huge, 64, "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"ping\",\"x\":\"");
    memset(huge + n, 'a', big);
    strcpy(huge + n + big, "\"}");
    send_line(&s, huge);
    free(huge);
    expect_error(&s, -1, -32600);

    /* Still serving: a tool call makes the session and answers with the page. */
    char url[256], line[600];
    httpd_url(gw.pages, "/index.html", url, sizeof url);
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"browser_navigate\",\"arguments\":{\"url\":\"%s\"}}}",
             url);
    send_line(&s, line);
    r = expect_result(&s, 13, &res);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError")));
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "content"), 0);
    assert_string_equal(json_str(c0, "type"), "text");
    assert_non_null(strstr(json_str(c0, "text"), "heading \"Fruit shop\""));
    cJSON_Delete(r);

    /* A refused command is a tool result with isError, carrying refgate's code. */
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tools/call\",\"params\":"
                  "{\"name\":\"browser_navigate\",\"arguments\":{\"url\":\"ftp://x/\"}}}");
    r = expect_result(&s, 14, &res);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError")));
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "content"), 0);
    assert_non_null(strstr(json_str(c0, "text"), "error "));
    cJSON_Delete(r);

    /* A field without its target or value is the tool's error, not the server's end
       (the fuzzer's first find). */
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"tools/call\",\"params\":"
                  "{\"name\":\"browser_fill_form\",\"arguments\":{\"fields\":[{\"name\":\"n\","
                  "\"type\":\"checkbox\"},7]}}}");
    r = expect_result(&s, 15, &res);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError")));
    cJSON_Delete(r);

    /* At the end of input the session it made is closed and the server exits 0. */
    fclose(s.in);
    int status;
    assert_int_equal(waitpid(s.pid, &status, 0), s.pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_null(fgets(line, sizeof line, s.out));
    fclose(s.out);
}

/* One tools/call over stdio whose result must (isError 0) or must not (1) be an error;
   its first text (caller frees). */
static char *call_tool(struct server *s, int id, const char *name, const char *args, int error)
{
    char line[1200];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":%s}}",
             id, name, args);
    send_line(s, line);
    const cJSON *res;
    cJSON *r = expect_result(s, id, &res);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "content"), 0);
    char *text = strdup(json_str(c0, "text"));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError")) != error)
        fail_msg("%s %s: %s", name, args, text);
    cJSON_Delete(r);
    return text;
}

/* browser_tabs in Playwright's shape: list, new, select and close by index. */
static void test_browser_tabs(void **state)
{
    (void)state;
    struct server s;
    server_start(&s);
    send_line(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                  "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                  "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    const cJSON *res;
    cJSON_Delete(expect_result(&s, 1, &res));
    char url[256], args[400];
    httpd_url(gw.pages, "/index.html", url, sizeof url);
    snprintf(args, sizeof args, "{\"url\":\"%s\"}", url);
    free(call_tool(&s, 2, "browser_navigate", args, 0));
    char *t = call_tool(&s, 3, "browser_tabs", "{\"action\":\"list\"}", 0);
    assert_non_null(strstr(t, "- 0: (current) [Fruit shop]"));
    assert_null(strstr(t, "- 1:"));
    free(t);
    httpd_url(gw.pages, "/item.html", url, sizeof url);
    snprintf(args, sizeof args, "{\"action\":\"new\",\"url\":\"%s\"}", url);
    t = call_tool(&s, 4, "browser_tabs", args, 0);
    /* item.html takes its title from its query: none here. */
    if (!strstr(t, "- 0: [Fruit shop]") || !strstr(t, "- 1: (current) [") ||
        !strstr(t, "/item.html)"))
        fail_msg("after new: %s", t);
    free(t);
    t = call_tool(&s, 5, "browser_snapshot", "{}", 0);
    assert_non_null(strstr(t, "Page URL: http://127.0.0.1"));
    assert_non_null(strstr(t, "/item.html"));
    free(t);
    t = call_tool(&s, 6, "browser_tabs", "{\"action\":\"select\",\"index\":0}", 0);
    assert_non_null(strstr(t, "- 0: (current) [Fruit shop]"));
    free(t);
    t = call_tool(&s, 7, "browser_snapshot", "{}", 0);
    assert_non_null(strstr(t, "Page Title: Fruit shop"));
    free(t);
    t = call_tool(&s, 8, "browser_tabs", "{\"action\":\"select\",\"index\":5}", 1);
    assert_non_null(strstr(t, "bad_request"));
    free(t);
    t = call_tool(&s, 9, "browser_tabs", "{\"action\":\"close\",\"index\":1}", 0);
    assert_null(strstr(t, "- 1:"));
    free(t);
    /* The last tab stays: closing it is refgate's bad_request, as a tool error. */
    t = call_tool(&s, 10, "browser_tabs", "{\"action\":\"close\"}", 1);
    assert_non_null(strstr(t, "last tab"));
    free(t);
    t = call_tool(&s, 11, "browser_tabs", "{\"action\":\"move\"}", 1);
    free(t);
    fclose(s.in);
    int status;
    assert_int_equal(waitpid(s.pid, &status, 0), s.pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    fclose(s.out);
}

int main(void)
{
    /* The MCP SDK from npm at the pinned version, installed when missing. */
    int rc = system("sh tests/mcp/install.sh");
    if (rc != 0) {
        fprintf(stderr, "test_mcp: tests/mcp/install.sh failed (status %d): the MCP SDK client "
                        "is not installed\n",
                rc);
        return 1;
    }
    find_cli();
    if (fx_stack_start(&gw, "test_mcp", APP, 1, NULL) < 0)
        return 1;
    snprintf(gw_url, sizeof gw_url, "http://127.0.0.1:%d", stack_port(gw.st));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_task_through_the_sdk_client),
        cmocka_unit_test(test_protocol_conformance),
        cmocka_unit_test(test_browser_tabs),
        cmocka_unit_test(test_agent_task_over_http),
        cmocka_unit_test(test_http_endpoint_refusals),
        cmocka_unit_test(test_http_offers_evaluate_only_to_eval_tenants),
    };
    rc = FX_RUN("mcp", tests, NULL, NULL);
    fx_stack_stop(&gw);
    return rc;
}
