/*
 * client.c - the msgpack HTTP client of the benchmarks that go through
 * nginx (client.h). Moved out of bench/gateway.c unchanged, so that
 * bench/loop.c talks to the gateway exactly as gateway.c does.
 */
#define _GNU_SOURCE
#include "bench/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/stats.h"
#include "wire/wire.h"

stack *gwc_st;
char gwc_auth[160];
static const char *gwc_who = "bench";

void gwc_init(stack *st, const char *who)
{
    gwc_st = st;
    gwc_who = who;
    snprintf(gwc_auth, sizeof gwc_auth, "Authorization: Bearer %s\r\n", stack_key(st, 0));
}

/* ---- statistics ---- */

/* The p-quantile (0..1) of n values, nearest rank; sorts v. 0 for n = 0. */
double gwc_pct(double *v, int n, double p)
{
    return n > 0 ? stats_rank(v, (size_t)n, p) : 0;
}

/* min, median (nearest rank, as pct) and max of n values as a JSON member; sorts v. */
void gwc_print_mmm(const char *key, double *v, int n)
{
    double med = gwc_pct(v, n, 0.5);
    printf("\"%s\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f}", key, med, n ? v[0] : 0,
           n ? v[n - 1] : 0);
}

/* ---- talking to the gateway ---- */

/*
 * One command (a cJSON map, borrowed) in msgpack on the kept-alive
 * connection *fd, reconnecting when it was closed under us. On 200 with
 * ok:true returns 0 and, when reply is not NULL, the decoded reply (caller
 * owns). bytes gets the reply body's size, ms the client-side time.
 */
int gwc_call(const char *who, int *fd, const char *sid, const cJSON *cmd, cJSON **reply,
             size_t *bytes, double *ms)
{
    char path[96], h[320];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    snprintf(h, sizeof h, "%sContent-Type: application/msgpack\r\n", who);
    rg_buf body;
    rg_buf_init(&body);
    wire_mp_encode(cmd, &body);
    http_resp r;
    int64_t t0 = rg_now_us();
    int rc = http_request_on(*fd, "POST", path, h, body.data, body.len, &r);
    if (ms)
        *ms = (double)(rg_now_us() - t0) / 1000.0;
    rg_buf_destroy(&body);
    if (rc < 0 || r.closed) { /* broken, or closed by nginx after this reply */
        close(*fd);
        *fd = http_connect(stack_port(gwc_st));
    }
    if (rc < 0) {
        rg_buf_destroy(&r.body);
        return -1;
    }
    if (bytes)
        *bytes = r.body.len;
    cJSON *v = NULL;
    char err[128];
    if (wire_mp_decode(r.body.data, r.body.len, &v, err, sizeof err) < 0)
        v = NULL;
    rg_buf_destroy(&r.body);
    int ok = r.status == 200 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok"));
    if (!ok && getenv("RG_BENCH_VERBOSE")) {
        char *s = v ? cJSON_PrintUnformatted(v) : NULL;
        fprintf(stderr, "%s: HTTP %d: %.300s\n", gwc_who, r.status, s ? s : "(no body)");
        free(s);
    }
    if (reply && ok)
        *reply = v;
    else
        cJSON_Delete(v);
    return ok ? 0 : -1;
}

/*
 * Before the i-th request on *fd: every CONN_REQUESTS requests, a new
 * connection, so that nginx's keepalive_requests never closes one under a
 * timed request (a client would retry that request; a bench would count it).
 */
void gwc_renew_conn(int *fd, int i)
{
    if (i > 0 && i % CONN_REQUESTS == 0) {
        close(*fd);
        *fd = http_connect(stack_port(gwc_st));
    }
}

/* {"op": op} with an args map the caller may fill; caller owns. */
cJSON *gwc_op_new(const char *op, cJSON **args)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "op", op);
    if (args)
        *args = cJSON_AddObjectToObject(m, "args");
    return m;
}

const char *gwc_result_str(const cJSON *reply, const char *key)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(reply, "result"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * The ref on the first line of an observe outline that contains `line` (for
 * example `button "Target"`), into out; 0, or -1 when there is none.
 */
int gwc_find_ref(const char *text, const char *line, char *out, size_t len)
{
    const char *p = text ? strstr(text, line) : NULL;
    if (!p)
        return -1;
    const char *eol = strchr(p, '\n');
    const char *r = strstr(p, "[ref=");
    if (!r || (eol && r > eol))
        return -1;
    r += 5;
    size_t n = strcspn(r, "]\n");
    if (n == 0 || n >= len)
        return -1;
    memcpy(out, r, n);
    out[n] = '\0';
    return 0;
}

int gwc_create_as(const char *who, const char *url, char *sid)
{
    char body[512], h[320];
    if (url)
        snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    else
        snprintf(body, sizeof body, "{\"op\":\"session.create\"}");
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", who);
    http_resp r;
    int rc = http_request(stack_port(gwc_st), "POST", "/v1/sessions", h, body, strlen(body), &r);
    cJSON *v = NULL;
    char err[64];
    sid[0] = '\0';
    if (rc == 0 && r.status == 200 &&
        wire_json_decode(r.body.data, r.body.len, &v, err, sizeof err) == 0) {
        const char *s = gwc_result_str(v, "session");
        snprintf(sid, 64, "%s", s ? s : "");
    } else {
        int shown = rc == 0 && r.body.data ? (int)(r.body.len < 300 ? r.body.len : 300) : 0;
        fprintf(stderr, "%s: session.create failed: HTTP %d: %.*s\n", gwc_who,
                rc == 0 ? r.status : 0, shown, shown ? r.body.data : "");
        rc = -1;
    }
    cJSON_Delete(v);
    rg_buf_destroy(&r.body);
    return rc == 0 && sid[0] ? 0 : -1;
}

int gwc_create(const char *url, char *sid)
{
    return gwc_create_as(gwc_auth, url, sid);
}

void gwc_close_session(const char *sid)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    http_resp r;
    http_request(stack_port(gwc_st), "DELETE", path, gwc_auth, NULL, 0, &r);
    rg_buf_destroy(&r.body);
}

/* An observe (diff or not); the outline's text into *text (caller frees) when asked. */
int gwc_observe(int *fd, const char *sid, int diff, char **text, size_t *bytes, double *ms)
{
    cJSON *args, *m = gwc_op_new("observe", &args), *rep = NULL;
    if (diff)
        cJSON_AddTrueToObject(args, "diff");
    int rc = gwc_call(gwc_auth, fd, sid, m, &rep, bytes, ms);
    cJSON_Delete(m);
    if (rc == 0 && text) {
        const char *t = gwc_result_str(rep, "text");
        *text = strdup(t ? t : "");
    }
    cJSON_Delete(rep);
    return rc;
}

cJSON *gwc_call_json(int *fd, const char *sid, const char *body, int *ok, int *status,
                     double *ms)
{
    char path[96], h[320];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", gwc_auth);
    http_resp r;
    int64_t t0 = rg_now_us();
    int rc = http_request_on(*fd, "POST", path, h, body, strlen(body), &r);
    if (ms)
        *ms = (double)(rg_now_us() - t0) / 1000.0;
    if (rc < 0 || r.closed) {
        close(*fd);
        *fd = http_connect(stack_port(gwc_st));
    }
    cJSON *v = NULL;
    char err[64];
    if (rc == 0 && wire_json_decode(r.body.data, r.body.len, &v, err, sizeof err) < 0)
        v = NULL;
    rg_buf_destroy(&r.body);
    if (status)
        *status = rc == 0 ? r.status : 0;
    *ok = rc == 0 && r.status == 200 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok"));
    return v;
}
