/*
 * http.c - the HTTP side of docs/protocol.md as one function: routes, the API
 * key, the body's format (msgpack, or JSON answered in JSON), the body
 * limit, Retry-After, /healthz, /metrics, and one JSON log line per request.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum fmt { F_MSGPACK, F_JSON };

static int starts_with_ci(const char *s, const char *prefix)
{
    return s && !strncasecmp(s, prefix, strlen(prefix));
}

static int is_json(const char *ct)
{
    return starts_with_ci(ct, "application/json");
}

static int is_msgpack(const char *ct)
{
    return starts_with_ci(ct, "application/msgpack") ||
           starts_with_ci(ct, "application/x-msgpack") ||
           starts_with_ci(ct, "application/vnd.msgpack");
}

/*
 * The reply's format: the body's type (also on an empty POST: a client that
 * names JSON reads JSON, as nginx's own errors do), else what Accept asks,
 * else msgpack.
 */
static enum fmt reply_format(const gw_http_req *req)
{
    if (is_json(req->content_type))
        return F_JSON;
    if (is_msgpack(req->content_type) || (req->body_len && req->content_type))
        return F_MSGPACK;
    if (req->accept && strstr(req->accept, "application/json") && !strstr(req->accept, "msgpack"))
        return F_JSON;
    if (req->body_len && !is_msgpack(req->content_type))
        return F_JSON;
    return F_MSGPACK;
}

static void respond(gw_http_resp *resp, enum fmt f, int status, const cJSON *reply,
                    int retry_after_ms)
{
    resp->status = status;
    resp->content_type = f == F_JSON ? "application/json" : "application/msgpack";
    rg_buf_reset(&resp->body);
    int rc = f == F_JSON ? wire_json_encode(reply, &resp->body) : wire_mp_encode(reply, &resp->body);
    if (rc < 0) {
        resp->status = 500;
        resp->content_type = "application/json";
        rg_buf_reset(&resp->body);
        rg_buf_puts(&resp->body, "{\"ok\":false,\"error\":{\"code\":\"internal\",\"kind\":"
                                 "\"transient\",\"message\":\"the reply could not be encoded\"}}");
    }
    if ((status == 429 || status == 503) && retry_after_ms >= 0)
        resp->retry_after_s = retry_after_ms > 0 ? (retry_after_ms + 999) / 1000 : 1;
}

static void respond_error(gw_http_resp *resp, enum fmt f, int rc, const char *msg, double ms,
                          int retry_after_ms)
{
    resp->code = rg_err_code(rc);
    cJSON *r = gw_error_reply(rc, msg, NULL, ms, retry_after_ms);
    respond(resp, f, rg_err_http(rc), r, retry_after_ms);
    cJSON_Delete(r);
}

/* ---- /healthz and /metrics ---- */

/* The error whose code is name (for the log line), RG_EINTERNAL if none. */
static int code_err(const char *name)
{
    for (int e = -1; e >= RG_ERR_MIN; e--)
        if (!strcmp(rg_err_code(e), name))
            return e;
    return RG_EINTERNAL;
}

static int redis_ok(gw *g)
{
    redisReply *rep = rg_redis_command(g->redis, "PING");
    int ok = rep && rep->type == REDIS_REPLY_STATUS;
    freeReplyObject(rep);
    return ok;
}

static void healthz(gw *g, gw_http_resp *resp)
{
    pool_stats ps;
    pool_get_stats(g->pool, &ps);
    int redis = redis_ok(g);
    int ok = redis && ps.browsers_ready > 0;
    resp->status = ok ? 200 : 503;
    resp->content_type = "application/json";
    if (!ok)
        resp->retry_after_s = 1;
    rg_buf_printf(&resp->body,
                  "{\"ok\":%s,\"worker\":\"%s\",\"redis\":%s,\"browsers_ready\":%d,"
                  "\"contexts_in_use\":%d}",
                  ok ? "true" : "false", g->worker, redis ? "true" : "false", ps.browsers_ready,
                  ps.contexts_in_use);
}

/* ---- sessions ---- */

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Query value v (n bytes, %XX and + decoded) into out (len): 0, or -1 when malformed or long. */
static int query_value(const char *v, size_t n, char *out, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)v[i];
        if (c == '%') {
            if (i + 2 >= n || hex_digit(v[i + 1]) < 0 || hex_digit(v[i + 2]) < 0)
                return -1;
            c = hex_digit(v[i + 1]) * 16 + hex_digit(v[i + 2]);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (c == 0 || o + 1 >= len)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 0;
}

/*
 * GET /v1/sessions[?limit=N][&after=CURSOR]: a page of the tenant's
 * sessions, oldest first, and `next`, the cursor of the page after it,
 * while there may be more. Any other parameter is bad_request.
 */
static void list_sessions(gw *g, const gw_caller *who, const char *query, enum fmt f,
                          gw_http_resp *resp)
{
    char after[SESS_CURSOR_MAX] = "", num[16] = "";
    int have_after = 0, have_limit = 0;
    for (const char *q = query ? query : ""; *q;) {
        const char *amp = strchr(q, '&'), *end = amp ? amp : q + strlen(q);
        const char *eq = memchr(q, '=', (size_t)(end - q));
        size_t klen = (size_t)((eq ? eq : end) - q);
        const char *v = eq ? eq + 1 : end;
        size_t vlen = (size_t)(end - v);
        int bad = 0;
        if (klen == 5 && !strncmp(q, "limit", 5))
            bad = have_limit++ || query_value(v, vlen, num, sizeof num) < 0;
        else if (klen == 5 && !strncmp(q, "after", 5))
            bad = have_after++ || query_value(v, vlen, after, sizeof after) < 0;
        else if (klen)
            bad = 1;
        if (bad) {
            respond_error(resp, f, RG_EBADREQ,
                          "GET /v1/sessions takes limit (1 to 1000) and after (the next of the "
                          "page before), each once",
                          0, 0);
            return;
        }
        q = amp ? amp + 1 : end;
    }
    long limit = SESS_LIST_MAX;
    if (have_limit) {
        char *e;
        errno = 0;
        limit = strtol(num, &e, 10);
        if (errno || !*num || *e || limit < 1 || limit > SESS_LIST_MAX) {
            respond_error(resp, f, RG_EBADREQ, "limit must be an integer from 1 to 1000", 0, 0);
            return;
        }
    }
    char next[SESS_CURSOR_MAX];
    sess_listed *v;
    size_t n;
    int rc = sess_list(g->sessions, who->tenant, after, (size_t)limit, &v, &n, next);
    if (rc == RG_EBADREQ) {
        respond_error(resp, f, rc, "after must be the next of an earlier page", 0, 0);
        return;
    }
    if (rc < 0) {
        respond_error(resp, f, rc, "Redis is unavailable; try again", 0, 1000);
        return;
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddBoolToObject(r, "ok", 1);
    cJSON *res = cJSON_AddObjectToObject(r, "result");
    cJSON *arr = cJSON_AddArrayToObject(res, "sessions");
    if (next[0])
        cJSON_AddStringToObject(res, "next", next);
    for (size_t i = 0; i < n; i++) {
        const sess_info *in = &v[i].info;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "session", v[i].sid);
        cJSON_AddStringToObject(e, "state", in->state);
        cJSON_AddStringToObject(e, "url", in->url);
        cJSON_AddStringToObject(e, "title", in->title);
        cJSON_AddNumberToObject(e, "created_ms", (double)in->created_ms);
        cJSON_AddNumberToObject(e, "last_used_ms", (double)in->last_used_ms);
        cJSON_AddStringToObject(e, "worker", in->worker);
        cJSON_AddItemToArray(arr, e);
    }
    sess_list_free(v, n);
    wire_add_float(r, "ms", 0);
    respond(resp, f, 200, r, 0);
    cJSON_Delete(r);
}

enum gw_route gw_http_route(const char *path, char *sid, size_t len)
{
    static const char base[] = "/v1/sessions";
    sid[0] = '\0';
    if (!strcmp(path, "/v1/mcp"))
        return GW_ROUTE_MCP;
    if (strncmp(path, base, sizeof base - 1))
        return GW_ROUTE_NONE;
    const char *p = path + sizeof base - 1;
    if (!*p || !strcmp(p, "/"))
        return GW_ROUTE_SESSIONS;
    if (*p != '/')
        return GW_ROUTE_NONE;
    p++;
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 0 || n >= len)
        return n == 0 ? GW_ROUTE_NONE : GW_ROUTE_SESSION; /* too long: a session that cannot exist */
    memcpy(sid, p, n);
    sid[n] = '\0';
    if (!slash || !strcmp(slash, "/"))
        return GW_ROUTE_SESSION;
    return !strcmp(slash, "/ws") ? GW_ROUTE_WS : GW_ROUTE_NONE;
}

static const char *bearer(const char *auth)
{
    if (!starts_with_ci(auth, "Bearer "))
        return NULL;
    auth += 7;
    while (*auth == ' ')
        auth++;
    return *auth ? auth : NULL;
}

/* The command map of the request: its body, or {} for an empty create. */
static int body_map(const gw_http_req *req, cJSON **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!req->body_len) {
        *out = cJSON_CreateObject();
        return *out ? 0 : RG_ENOMEM;
    }
    if (is_json(req->content_type))
        return wire_json_decode(req->body, req->body_len, out, err, errlen);
    return wire_mp_decode(req->body, req->body_len, out, err, errlen);
}

/* Answers a request no route takes (wrong path, method, size or type): 1, or 0 to go on. */
static int refused(gw *g, const gw_http_req *req, enum gw_route kind, const char *method,
                   enum fmt f, gw_http_resp *resp)
{
    if (kind == GW_ROUTE_NONE) {
        respond_error(resp, f, RG_ENOTFOUND, "no such endpoint; see docs/protocol.md", 0, 0);
        return 1;
    }
    if (kind == GW_ROUTE_WS) {
        respond_error(resp, f, RG_EBADREQ,
                      "the WebSocket endpoint needs a WebSocket handshake (Upgrade: websocket "
                      "and Sec-WebSocket-Key)",
                      0, 0);
        return 1;
    }
    int post = !strcmp(method, "POST");
    if (kind == GW_ROUTE_MCP && !post && strcmp(method, "DELETE")) {
        /* No server-sent stream: MCP clients take 405 as "POST only". */
        respond_error(resp, F_JSON, RG_EBADREQ,
                      "POST /v1/mcp (JSON-RPC, JSON replies) or DELETE with Mcp-Session-Id", 0,
                      0);
        resp->status = 405;
        return 1;
    }
    if (kind == GW_ROUTE_MCP && post && !is_json(req->content_type)) {
        respond_error(resp, F_JSON, RG_EMEDIA, "POST /v1/mcp takes application/json", 0, 0);
        return 1;
    }
    int allowed = kind == GW_ROUTE_MCP ||
                  (kind == GW_ROUTE_SESSIONS && (post || !strcmp(method, "GET"))) ||
                  (kind == GW_ROUTE_SESSION && (post || !strcmp(method, "DELETE")));
    if (!allowed) {
        respond_error(resp, f, RG_EBADREQ,
                      "method not allowed on this path (POST or GET /v1/sessions, POST or "
                      "DELETE /v1/sessions/{id})",
                      0, 0);
        return 1;
    }
    if (req->body_too_large) {
        char msg[96];
        snprintf(msg, sizeof msg, "the body is larger than %zu bytes", g->cfg.max_body);
        respond_error(resp, f, RG_ETOOLARGE, msg, 0, 0);
        return 1;
    }
    if (req->body_len && !is_json(req->content_type) && !is_msgpack(req->content_type)) {
        respond_error(resp, F_JSON, RG_EMEDIA,
                      "send application/msgpack (or application/json)", 0, 0);
        return 1;
    }
    return 0;
}

/* The tenant's rate and concurrency: 0 (a slot taken: gw_leave it), or answered. */
static int admit(gw *g, const tenant *t, enum fmt f, gw_http_resp *resp)
{
    int rc, retry = 0;
    if ((rc = gw_rate_check(g, t->id, t->rate, &retry)) < 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "over the tenant's rate of %g requests a second", t->rate);
        respond_error(resp, f, rc, rc == RG_ERATE ? msg : "Redis is unavailable; try again", 0,
                      rc == RG_ERATE ? retry : 1000);
        return rc;
    }
    if ((rc = gw_enter(g, t->id, t->max_concurrent, &retry)) < 0) {
        char msg[160];
        if (rc == RG_ERATE)
            snprintf(msg, sizeof msg,
                     "the tenant already runs %d commands at once (on all workers together)",
                     t->max_concurrent);
        else
            snprintf(msg, sizeof msg, "Redis is unavailable; try again");
        respond_error(resp, f, rc, msg, 0, retry);
        return rc;
    }
    return 0;
}

/* The command of the request (its body, or session.close for DELETE), answered; its op. */
static const char *run_command(gw *g, const gw_http_req *req, const gw_caller *who,
                               enum gw_route kind, const char *sid, enum fmt f,
                               gw_http_resp *resp)
{
    int rc, retry = 0;
    cJSON *m = NULL;
    char err[256] = "";
    if (req->method && !strcmp(req->method, "DELETE")) {
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "op", wire_op_name(WIRE_OP_SESSION_CLOSE));
    } else if ((rc = body_map(req, &m, err, sizeof err)) < 0) {
        respond_error(resp, f, rc, err, 0, 0);
        return "-";
    }
    const cJSON *opj = cJSON_GetObjectItemCaseSensitive(m, "op");
    int st;
    cJSON *reply =
        gw_command(g, who, kind == GW_ROUTE_SESSION ? sid : NULL, m, &st, &retry, &resp->after);
    const char *op = cJSON_IsString(opj) ? wire_op_name(wire_op_find(opj->valuestring)) : NULL;
    if (!op)
        op = kind == GW_ROUTE_SESSIONS ? wire_op_name(WIRE_OP_SESSION_CREATE) : "-";
    respond(resp, f, st, reply, retry);
    const cJSON *ec = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(reply, "error"), "code");
    if (cJSON_IsString(ec))
        resp->code = rg_err_code(code_err(ec->valuestring));
    cJSON_Delete(reply);
    cJSON_Delete(m);
    return op;
}

void gw_handle_http(gw *g, const gw_http_req *req, gw_http_resp *resp)
{
    int64_t t0 = rg_now_us();
    resp->status = 500;
    resp->content_type = "application/json";
    resp->retry_after_s = 0;
    resp->code = NULL;
    resp->after.s = NULL;
    rg_buf_init(&resp->body);
    enum fmt f = reply_format(req);
    const char *rid = req->request_id ? req->request_id : "-";
    const char *method = req->method ? req->method : "";
    const char *path = req->path ? req->path : "/";
    char sid[SESS_ID_MAX + 1];
    const char *op = "-", *tid = "-";
    enum gw_route kind = gw_http_route(path, sid, sizeof sid);
    tenant t;
    int have_tenant = 0;

    if (!strcmp(path, "/healthz") && !strcmp(method, "GET")) {
        healthz(g, resp);
        op = "healthz";
        goto log;
    }
    if (!strcmp(path, "/metrics") && !strcmp(method, "GET")) {
        resp->status = 200;
        resp->content_type = "text/plain; version=0.0.4";
        gw_metrics_text(g, &resp->body);
        op = "metrics";
        goto log;
    }
    if (!strcmp(path, "/healthz") || !strcmp(path, "/metrics")) {
        respond_error(resp, f, RG_EBADREQ, "method not allowed (GET /healthz and /metrics)", 0, 0);
        goto log;
    }
    if (refused(g, req, kind, method, f, resp))
        goto log;
    const char *key = bearer(req->authorization);
    int rc = key ? tenant_authenticate(g->tenants, key, &t) : RG_EUNAUTH;
    if (rc < 0) {
        respond_error(resp, f, rc,
                      rc == RG_EUNAUTH ? "missing or unknown API key (Authorization: Bearer <key>)"
                                       : "Redis is unavailable; try again",
                      0, rc == RG_EUNAVAIL ? 1000 : 0);
        goto log;
    }
    have_tenant = 1;
    tid = t.id;
    gw_caller who = {.tenant = t.id,
                     .allow_eval = t.allow_eval,
                     .request_id = rid,
                     .max_sessions = t.max_sessions,
                     .user_agent = t.user_agent,
                     .locale = t.locale,
                     .deadline_ms = rg_now_ms() + g->cfg.http_command_max_ms};
    if (admit(g, &t, f, resp) < 0)
        goto log;
    if (kind == GW_ROUTE_SESSIONS && !strcmp(method, "GET")) {
        op = "list";
        list_sessions(g, &who, req->query, f, resp);
        gw_leave(g, t.id);
        goto log;
    }
    if (kind == GW_ROUTE_MCP) {
        op = "mcp";
        gw_handle_mcp(g, req, &who, resp);
        gw_leave(g, t.id);
        goto log;
    }
    op = run_command(g, req, &who, kind, sid, f, resp);
    gw_leave(g, t.id);
log:;
    const char *code = resp->status < 400 ? "ok" : resp->code ? resp->code : "error";
    pthread_mutex_lock(&g->mu);
    int cls = resp->status / 100;
    if (cls >= 1 && cls <= 5)
        g->m.http[cls]++;
    pthread_mutex_unlock(&g->mu);
    const char *log_sid = kind == GW_ROUTE_SESSION || kind == GW_ROUTE_WS ? sid : "-";
    gw_log_request(g, rid, tid, log_sid, op, resp->status, code,
                   (double)(rg_now_us() - t0) / 1000.0);
    if (have_tenant)
        tenant_destroy(&t);
}
