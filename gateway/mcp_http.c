/*
 * mcp_http.c - POST /v1/mcp: refgate's MCP server (mcp/mcp.h) over MCP's
 * Streamable HTTP transport, for hosted agents. The caller is already
 * authenticated and admitted (http.c): one HTTP request is one rate token
 * and one concurrency slot, whatever commands its tool runs.
 *
 *   - initialize makes a refgate session (session.create) and answers with
 *     its id in the Mcp-Session-Id header; every later request carries it
 *     (nginx routes /v1/mcp by it, so it reaches the session's worker);
 *   - a request answers with one JSON message (application/json), never a
 *     server-sent stream: GET /v1/mcp is 405;
 *   - a notification (or a response) is 202 with no body;
 *   - DELETE /v1/mcp with the header closes the session;
 *   - a tool's commands run in process, through gw_command, with the
 *     caller's tenant, limits and URL policy, one after the other, each
 *     with its checkpoint before the next.
 * A request without the header (other than initialize) is 400; a session
 * that is gone is 404, so that the client starts a new MCP session.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

struct mcp_ctx {
    gw *g;
    const gw_caller *who;
};

/* The in-process backend: the command through the pipeline, checkpoint included. */
static int run_here(void *ud, const char *sid, const char *method, const char *op, cJSON *args,
                    cJSON **reply, char *err, size_t errlen)
{
    struct mcp_ctx *x = ud;
    (void)err;
    (void)errlen;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "op", method && !strcmp(method, "DELETE") ? "session.close" : op);
    if (args)
        cJSON_AddItemToObject(m, "args", args);
    int status = 0, retry = 0;
    *reply = gw_command(x->g, x->who, sid && *sid ? sid : NULL, m, &status, &retry, NULL);
    cJSON_Delete(m);
    return *reply ? 0 : RG_ENOMEM;
}

static void answer(gw_http_resp *resp, int status, const cJSON *msg)
{
    resp->status = status;
    resp->content_type = "application/json";
    char *s = msg ? cJSON_PrintUnformatted(msg) : NULL;
    if (s)
        rg_buf_puts(&resp->body, s);
    free(s);
}

/* An HTTP-level refusal, as a JSON-RPC error body. */
static void refuse(gw_http_resp *resp, int status, int code, const char *message)
{
    cJSON *e = mcp_error(NULL, code, message);
    answer(resp, status, e);
    cJSON_Delete(e);
    resp->code = status == 404 ? "not_found" : "bad_request";
}

/* 1 when the session sid still exists for the caller (session.info). */
static int session_exists(struct mcp_ctx *x, const char *sid)
{
    cJSON *reply = NULL;
    char err[8];
    run_here(x, sid, "POST", "session.info", NULL, &reply, err, sizeof err);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(reply, "error"), "code");
    int gone = cJSON_IsString(code) && !strcmp(code->valuestring, "not_found");
    cJSON_Delete(reply);
    return !gone;
}

void gw_handle_mcp(gw *g, const gw_http_req *req, const gw_caller *who, gw_http_resp *resp)
{
    struct mcp_ctx x = {g, who};
    const char *method = req->method ? req->method : "";
    const char *sid = req->mcp_session && *req->mcp_session ? req->mcp_session : NULL;
    if (sid && strlen(sid) >= SESS_ID_MAX) {
        refuse(resp, 404, MCP_INVALID, "no such MCP session");
        return;
    }
    if (!strcmp(method, "DELETE")) {
        if (!sid) {
            refuse(resp, 400, MCP_INVALID, "DELETE /v1/mcp needs the Mcp-Session-Id header");
            return;
        }
        cJSON *reply = NULL;
        char err[8];
        run_here(&x, sid, "DELETE", NULL, NULL, &reply, err, sizeof err);
        int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"));
        cJSON_Delete(reply);
        if (!ok)
            refuse(resp, 404, MCP_INVALID, "no such MCP session");
        else
            resp->status = 200;
        return;
    }
    /* The body, parsed once; what is not JSON is still answered as a message. */
    cJSON *msg = cJSON_ParseWithLength(req->body ? req->body : "", req->body_len);
    const cJSON *pm = cJSON_GetObjectItemCaseSensitive(msg, "method");
    int init = cJSON_IsString(pm) && !strcmp(pm->valuestring, "initialize");
    mcp_session s = {.call = run_here, .ud = &x, .no_create = 1, .no_eval = !who->allow_eval};
    const char *refusal = NULL;
    int refusal_status = 0;
    if (msg && init) {
        /* initialize makes the session */
        cJSON *made = NULL;
        char err[8];
        run_here(&x, NULL, "POST", "session.create", NULL, &made, err, sizeof err);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(made, "result"), "session");
        if (cJSON_IsString(v)) {
            snprintf(s.sid, sizeof s.sid, "%s", v->valuestring);
            snprintf(resp->mcp_session, sizeof resp->mcp_session, "%s", v->valuestring);
            s.made = 1;
        } else {
            cJSON *e = cJSON_GetObjectItemCaseSensitive(made, "error");
            const cJSON *em = cJSON_GetObjectItemCaseSensitive(e, "message");
            char m[300];
            snprintf(m, sizeof m, "the session could not be made: %s",
                     cJSON_IsString(em) ? em->valuestring : "error");
            refuse(resp, 503, MCP_INVALID, m);
            resp->code = "unavailable";
            cJSON_Delete(made);
            cJSON_Delete(msg);
            return;
        }
        cJSON_Delete(made);
    } else if (msg && !sid) {
        refusal = "the Mcp-Session-Id header is required after initialize";
        refusal_status = 400;
    } else if (msg && !session_exists(&x, sid)) {
        refusal = "no such MCP session: initialize a new one";
        refusal_status = 404;
    } else if (sid) {
        snprintf(s.sid, sizeof s.sid, "%s", sid);
    }
    if (refusal) {
        cJSON_Delete(msg);
        refuse(resp, refusal_status, MCP_INVALID, refusal);
        return;
    }
    cJSON *reply = mcp_handle_msg(&s, msg);
    cJSON_Delete(msg);
    if (!reply) {
        resp->status = 202; /* a notification or a response: nothing to say */
        resp->content_type = "application/json";
        return;
    }
    answer(resp, 200, reply);
    cJSON_Delete(reply);
}
