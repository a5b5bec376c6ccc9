/*
 * fuzz_mcp.c - libFuzzer target: untrusted MCP messages (a line of
 * refgate-cli mcp's standard input, a POST /v1/mcp body) through
 * mcp_handle, with a backend that answers every command as the gateway
 * could: a success with an outline, or a refusal.
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   - a reply, when there is one, is a JSON-RPC 2.0 message: jsonrpc "2.0",
 *     an id, and exactly one of result and error; an error has an integer
 *     code among the four JSON-RPC codes the server uses and a message;
 *   - it prints as JSON that parses back (what the transports send);
 *   - a message with no id (a notification) or that is not JSON-RPC's
 *     request is never answered with a result;
 *   - at most a bounded number of commands run per message.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "tests/fuzz/fuzz.h"

#define CALLS_MAX 64 /* browser_fill_form's fields are bounded by the message alone */

static int calls;

static int backend(void *ud, const char *sid, const char *method, const char *op, cJSON *args,
                   cJSON **reply, char *err, size_t errlen)
{
    (void)ud;
    (void)sid;
    (void)method;
    (void)err;
    (void)errlen;
    cJSON_Delete(args);
    calls++;
    int fail = op && (op[0] % 3 == 0);
    const char *text = fail ? "{\"ok\":false,\"error\":{\"code\":\"stale_ref\",\"message\":\"gone\"}}"
                            : "{\"ok\":true,\"result\":{\"session\":\"sFuzz\",\"text\":\"- button "
                              "[ref=@a]\",\"url\":\"about:blank\",\"title\":\"t\",\"data\":\"iVBO\"}}";
    *reply = cJSON_Parse(text);
    return *reply ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    calls = 0;
    mcp_session s = {.call = backend, .no_create = (size & 1), .wait_max_ms = 1};
    if (size & 2)
        snprintf(s.sid, sizeof s.sid, "sFuzz");
    cJSON *reply = mcp_handle(&s, text);
    FZ_CHECK(calls <= CALLS_MAX, "%d commands for one message", calls);
    if (reply) {
        const cJSON *jv = cJSON_GetObjectItemCaseSensitive(reply, "jsonrpc");
        FZ_CHECK(cJSON_IsString(jv) && !strcmp(jv->valuestring, "2.0"), "no jsonrpc 2.0");
        FZ_CHECK(cJSON_GetObjectItemCaseSensitive(reply, "id") != NULL, "a reply without an id");
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(reply, "result");
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply, "error");
        FZ_CHECK((res != NULL) != (e != NULL), "result and error both, or neither");
        if (e) {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
            FZ_CHECK(cJSON_IsNumber(code) &&
                         (code->valueint == MCP_PARSE || code->valueint == MCP_INVALID ||
                          code->valueint == MCP_NO_METHOD || code->valueint == MCP_BAD_PARAMS),
                     "error code");
            FZ_CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")), "message");
        }
        if (res) {
            cJSON *in = cJSON_Parse(text);
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(in, "id");
            FZ_CHECK(id && (cJSON_IsNumber(id) || cJSON_IsString(id)),
                     "a result for a message without an id");
            cJSON_Delete(in);
        }
        char *out = cJSON_PrintUnformatted(reply);
        FZ_CHECK(out != NULL, "the reply does not print");
        cJSON *back = cJSON_Parse(out);
        FZ_CHECK(back != NULL, "the printed reply does not parse: %.200s", out);
        cJSON_Delete(back);
        free(out);
        cJSON_Delete(reply);
    }
    free(text);
    return 0;
}
