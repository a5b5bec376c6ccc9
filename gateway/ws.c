/*
 * ws.c - the WebSocket front (libwebsockets 4.1): GET /v1/sessions/{sid}/ws
 * with the same Authorization as HTTP. Each frame from the client is one
 * command map (binary: msgpack; text: JSON, answered in JSON); each frame
 * back is a reply map or an event map {event, session, seq, data}.
 *
 * Threads: one lws service thread owns every lws call. Each connection has
 * a runner thread that takes its commands in arrival order and runs them
 * (a command may wait for a browser for seconds; the service thread never
 * does). Runners and event producers hand frames over through the
 * connection's bounded outbox and lws_cancel_service(); the service thread
 * then asks for a writeable callback and writes one frame per callback,
 * with LWS_PRE headroom.
 *
 * Events carry one seq per session, increasing, the same for every
 * subscriber (while the session has a connection on this worker; a session
 * that moves to another worker starts again there).
 *
 * Bounds: frames up to max_body bytes, 32 commands waiting per connection
 * (more are answered `unavailable` at once), 8 MiB of unsent frames (events
 * beyond it are dropped and counted; replies always go), 512 connections.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define INBOX_MAX 32
#define OUTBOX_MAX_BYTES (8u << 20)
#define CONNS_MAX 512
#define STOP_WAIT_MS 30000

enum { EV_NAVIGATION = 1, EV_CONSOLE = 2, EV_DIALOG = 4, EV_SNAPSHOT = 8, EV_SESSION = 16 };

struct frame {
    struct frame *next;
    int json;
    size_t len;
    unsigned char data[]; /* LWS_PRE bytes of headroom, then the payload */
};

struct wsconn {
    gw *g;
    struct lws *wsi;          /* service thread only; NULL once closed */
    char tenant[SESS_TENANT_MAX];
    char sid[SESS_ID_MAX];
    int allow_eval;
    int max_sessions, max_concurrent;
    double rate;
    int refused;              /* rc when the handshake's checks failed */
    /* guarded by ws->mu */
    struct frame *in_head, *in_tail;
    int n_in;
    struct frame *out_head, *out_tail;
    size_t out_bytes;
    unsigned events;
    uint64_t seq;
    int json;                 /* the client's last frame was text: events in JSON too */
    int closed;
    int refs;
    uint64_t dropped;
    pthread_cond_t cv;
    struct wsconn *next;
    /* service thread only */
    rg_buf rx;
    int rx_over;
};

/* What lws keeps per connection: a pointer to ours. */
struct pss {
    struct wsconn *c;
    int refused;
    char tenant[SESS_TENANT_MAX];
    char sid[SESS_ID_MAX];
    int allow_eval;
    int max_sessions, max_concurrent;
    double rate;
};

struct gw_ws {
    gw *g;
    struct lws_context *ctx;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t idle;
    struct wsconn *conns;
    int n_conns, n_runners;
    int stop;
    int destroying; /* the context is going: nobody may wake it */
};

/* Wakes the service thread (any thread). */
static void wake(struct gw_ws *ws)
{
    pthread_mutex_lock(&ws->mu);
    if (!ws->destroying)
        lws_cancel_service(ws->ctx);
    pthread_mutex_unlock(&ws->mu);
}

/* ---- frames and queues (ws->mu held) ---- */

static struct frame *frame_new(const void *data, size_t len, int json)
{
    struct frame *f = malloc(sizeof *f + LWS_PRE + len);
    if (!f)
        return NULL;
    f->next = NULL;
    f->json = json;
    f->len = len;
    memcpy(f->data + LWS_PRE, data, len);
    return f;
}

static void push(struct frame **head, struct frame **tail, struct frame *f)
{
    if (*tail)
        (*tail)->next = f;
    else
        *head = f;
    *tail = f;
}

static struct frame *pop(struct frame **head, struct frame **tail)
{
    struct frame *f = *head;
    if (f) {
        *head = f->next;
        if (!*head)
            *tail = NULL;
    }
    return f;
}

static void free_frames(struct frame *f)
{
    while (f) {
        struct frame *n = f->next;
        free(f);
        f = n;
    }
}

static void conn_unref(struct gw_ws *ws, struct wsconn *c)
{
    if (--c->refs > 0)
        return;
    free_frames(c->in_head);
    free_frames(c->out_head);
    rg_buf_destroy(&c->rx);
    pthread_cond_destroy(&c->cv);
    free(c);
    (void)ws;
}

/* Queues an encoded map for the client; force: a reply, sent whatever the outbox holds. */
static void send_map(struct gw_ws *ws, struct wsconn *c, const cJSON *m, int json, int force)
{
    rg_buf b;
    rg_buf_init(&b);
    if ((json ? wire_json_encode(m, &b) : wire_mp_encode(m, &b)) < 0 || b.failed) {
        rg_buf_destroy(&b);
        return;
    }
    struct frame *f = NULL;
    pthread_mutex_lock(&ws->mu);
    if (!c->closed && (force || c->out_bytes + b.len <= OUTBOX_MAX_BYTES) &&
        (f = frame_new(b.data, b.len, json))) {
        push(&c->out_head, &c->out_tail, f);
        c->out_bytes += b.len;
    } else if (!c->closed) {
        c->dropped++;
    }
    pthread_mutex_unlock(&ws->mu);
    rg_buf_destroy(&b);
    if (f)
        wake(ws);
}

/* ---- the runner: one connection's commands in order ---- */

static unsigned kind_bit(const char *kind)
{
    static const char *names[] = {"navigation", "console", "dialog", "snapshot", "session", "tab"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (!strcmp(kind, names[i]))
            return 1u << i;
    return 0;
}

static unsigned event_bits(const cJSON *events)
{
    unsigned bits = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        if (cJSON_IsString(e))
            bits |= kind_bit(e->valuestring);
    }
    return bits;
}

static void run_frame(struct gw_ws *ws, struct wsconn *c, struct frame *f)
{
    cJSON *m = NULL;
    char err[256] = "";
    const unsigned char *p = f->data + LWS_PRE;
    int rc = f->json ? wire_json_decode(p, f->len, &m, err, sizeof err)
                     : wire_mp_decode(p, f->len, &m, err, sizeof err);
    cJSON *reply;
    gw_after after = {0};
    if (rc < 0) {
        reply = gw_error_reply(rc, err, NULL, 0, 0);
    } else {
        char rid[48];
        snprintf(rid, sizeof rid, "ws-%s-%llu", c->sid, (unsigned long long)rg_now_us());
        gw_caller who = {.tenant = c->tenant, .allow_eval = c->allow_eval, .request_id = rid,
                         .websocket = 1, .max_sessions = c->max_sessions};
        int status, retry;
        int64_t t0 = rg_now_us();
        int lim = gw_rate_check(ws->g, c->tenant, c->rate, &retry);
        if (lim == 0 && (lim = gw_enter(ws->g, c->tenant, c->max_concurrent, &retry)) == 0) {
            reply = gw_command(ws->g, &who, c->sid, m, &status, &retry, &after);
            gw_leave(ws->g, c->tenant);
        } else {
            reply = gw_error_reply(lim, lim == RG_ERATE ? "over the tenant's rate or concurrency"
                                                        : "Redis is unavailable; try again",
                                   cJSON_GetObjectItemCaseSensitive(m, "id"), 0,
                                   retry > 0 ? retry : 1000);
            status = rg_err_http(lim);
        }
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(m, "op");
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
        int id = cJSON_IsString(op) ? wire_op_find(op->valuestring) : -1;
        if (id >= 0 && (wire_ops[id].flags & WIRE_F_SUBSCRIBES) && cJSON_IsTrue(ok)) {
            pthread_mutex_lock(&ws->mu);
            c->events |= event_bits(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(reply, "result"), "events"));
            pthread_mutex_unlock(&ws->mu);
        }
        const cJSON *ec = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(reply, "error"), "code");
        gw_log_request(ws->g, rid, c->tenant, c->sid,
                       cJSON_IsString(op) ? op->valuestring : "-", status,
                       cJSON_IsString(ec) ? ec->valuestring : "ok",
                       (double)(rg_now_us() - t0) / 1000.0);
    }
    send_map(ws, c, reply, f->json, 1);
    cJSON_Delete(reply);
    cJSON_Delete(m);
    gw_after_run(ws->g, &after);
}

static void *runner_main(void *arg)
{
    struct wsconn *c = arg;
    struct gw_ws *ws = c->g->ws;
    pthread_mutex_lock(&ws->mu);
    for (;;) {
        while (!c->in_head && !c->closed)
            pthread_cond_wait(&c->cv, &ws->mu);
        if (c->closed)
            break;
        struct frame *f = pop(&c->in_head, &c->in_tail);
        c->n_in--;
        pthread_mutex_unlock(&ws->mu);
        run_frame(ws, c, f);
        free(f);
        pthread_mutex_lock(&ws->mu);
    }
    conn_unref(ws, c);
    ws->n_runners--;
    pthread_cond_broadcast(&ws->idle);
    pthread_mutex_unlock(&ws->mu);
    return NULL;
}

/* ---- the handshake ---- */

static int path_sid(const char *uri, char *sid, size_t len)
{
    static const char pre[] = "/v1/sessions/";
    if (strncmp(uri, pre, sizeof pre - 1))
        return -1;
    const char *p = uri + sizeof pre - 1;
    const char *end = strstr(p, "/ws");
    if (!end || (end[3] && end[3] != '?') || end == p || (size_t)(end - p) >= len)
        return -1;
    memcpy(sid, p, (size_t)(end - p));
    sid[end - p] = '\0';
    return 0;
}

/* Checks the path, the key and the session; the verdict is sent once established. */
static void check_handshake(struct gw_ws *ws, struct lws *wsi, struct pss *pss)
{
    char uri[256] = "", auth[256] = "";
    lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI);
    lws_hdr_copy(wsi, auth, sizeof auth, WSI_TOKEN_HTTP_AUTHORIZATION);
    if (path_sid(uri, pss->sid, sizeof pss->sid) < 0) {
        pss->refused = RG_ENOTFOUND;
        return;
    }
    const char *key = !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
    tenant t;
    int rc = key && *key ? tenant_authenticate(ws->g->tenants, key, &t) : RG_EUNAUTH;
    if (rc < 0) {
        pss->refused = rc;
        return;
    }
    snprintf(pss->tenant, sizeof pss->tenant, "%s", t.id);
    pss->allow_eval = t.allow_eval;
    pss->max_sessions = t.max_sessions;
    pss->max_concurrent = t.max_concurrent;
    pss->rate = t.rate;
    tenant_destroy(&t);
    sess_info in;
    rc = sess_get_info(ws->g->sessions, pss->tenant, pss->sid, &in);
    if (rc == 0)
        sess_info_free(&in);
    pss->refused = rc < 0 ? rc : 0;
}

static struct wsconn *conn_new(struct gw_ws *ws, struct lws *wsi, struct pss *pss)
{
    struct wsconn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->g = ws->g;
    c->wsi = wsi;
    snprintf(c->tenant, sizeof c->tenant, "%s", pss->tenant);
    snprintf(c->sid, sizeof c->sid, "%s", pss->sid);
    c->allow_eval = pss->allow_eval;
    c->max_sessions = pss->max_sessions;
    c->max_concurrent = pss->max_concurrent;
    c->rate = pss->rate;
    c->refused = pss->refused;
    rg_buf_init(&c->rx);
    pthread_cond_init(&c->cv, NULL);
    c->refs = 1; /* the connection list */
    return c;
}

static void established(struct gw_ws *ws, struct lws *wsi, struct pss *pss)
{
    struct wsconn *c = conn_new(ws, wsi, pss);
    pss->c = c;
    if (!c)
        return;
    pthread_mutex_lock(&ws->mu);
    int full = ws->n_conns >= CONNS_MAX;
    c->next = ws->conns;
    ws->conns = c;
    ws->n_conns++;
    ws->g->m.ws_connections++;
    pthread_mutex_unlock(&ws->mu);
    if (c->refused || full) {
        int rc = full ? RG_EBUSY : c->refused;
        const char *msg = rc == RG_EUNAUTH     ? "missing or unknown API key"
                          : rc == RG_ENOTFOUND ? "no such session"
                          : full               ? "too many WebSocket connections on this worker"
                                               : "Redis is unavailable; try again";
        cJSON *r = gw_error_reply(rc, msg, NULL, 0, rc == RG_EUNAVAIL || full ? 1000 : 0);
        send_map(ws, c, r, 0, 1);
        cJSON_Delete(r);
        pthread_mutex_lock(&ws->mu);
        c->refused = c->refused ? c->refused : rc;
        pthread_mutex_unlock(&ws->mu);
        return;
    }
    pthread_t t;
    pthread_mutex_lock(&ws->mu);
    c->refs++;
    ws->n_runners++;
    pthread_mutex_unlock(&ws->mu);
    if (pthread_create(&t, NULL, runner_main, c) != 0) {
        pthread_mutex_lock(&ws->mu);
        c->refs--;
        ws->n_runners--;
        c->refused = RG_EBUSY;
        pthread_mutex_unlock(&ws->mu);
        return;
    }
    pthread_detach(t);
}

/* ---- the service thread's callbacks ---- */

static void received(struct gw_ws *ws, struct wsconn *c, struct lws *wsi, const void *in,
                     size_t len)
{
    if (c->refused)
        return;
    if (!c->rx_over && c->rx.len + len <= ws->g->cfg.max_body)
        rg_buf_append(&c->rx, in, len);
    else
        c->rx_over = 1;
    if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi))
        return;
    int json = !lws_frame_is_binary(wsi);
    if (c->rx_over || c->rx.failed) {
        cJSON *r = gw_error_reply(RG_ETOOLARGE, "the frame is larger than the body limit", NULL,
                                  0, 0);
        send_map(ws, c, r, json, 1);
        cJSON_Delete(r);
    } else {
        struct frame *f = frame_new(c->rx.data ? c->rx.data : "", c->rx.len, json);
        int busy = 0;
        pthread_mutex_lock(&ws->mu);
        c->json = json;
        if (f && c->n_in < INBOX_MAX) {
            push(&c->in_head, &c->in_tail, f);
            c->n_in++;
            pthread_cond_signal(&c->cv);
            f = NULL;
        } else {
            busy = 1;
        }
        pthread_mutex_unlock(&ws->mu);
        free(f);
        if (busy) {
            cJSON *r = gw_error_reply(RG_EBUSY, "too many commands waiting on this connection",
                                      NULL, 0, 1000);
            send_map(ws, c, r, json, 1);
            cJSON_Delete(r);
        }
    }
    rg_buf_reset(&c->rx);
    c->rx_over = 0;
}

static int writeable(struct gw_ws *ws, struct wsconn *c, struct lws *wsi)
{
    pthread_mutex_lock(&ws->mu);
    struct frame *f = pop(&c->out_head, &c->out_tail);
    if (f)
        c->out_bytes -= f->len;
    int more = c->out_head != NULL;
    int refused = c->refused;
    pthread_mutex_unlock(&ws->mu);
    if (f) {
        int n = lws_write(wsi, f->data + LWS_PRE, f->len, f->json ? LWS_WRITE_TEXT : LWS_WRITE_BINARY);
        free(f);
        if (n < 0)
            return -1;
    }
    if (more)
        lws_callback_on_writable(wsi);
    else if (refused) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, NULL, 0);
        return -1;
    }
    return 0;
}

static void closed(struct gw_ws *ws, struct wsconn *c)
{
    pthread_mutex_lock(&ws->mu);
    for (struct wsconn **pp = &ws->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            ws->n_conns--;
            break;
        }
    c->closed = 1;
    c->wsi = NULL;
    pthread_cond_signal(&c->cv);
    conn_unref(ws, c);
    pthread_mutex_unlock(&ws->mu);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct gw_ws *ws = lws_context_user(lws_get_context(wsi));
    struct pss *pss = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        check_handshake(ws, wsi, pss);
        return 0;
    case LWS_CALLBACK_ESTABLISHED:
        established(ws, wsi, pss);
        if (pss->c && pss->c->refused)
            lws_callback_on_writable(wsi);
        return pss->c ? 0 : -1;
    case LWS_CALLBACK_RECEIVE:
        if (pss->c)
            received(ws, pss->c, wsi, in, len);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return pss->c ? writeable(ws, pss->c, wsi) : 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        pthread_mutex_lock(&ws->mu);
        for (struct wsconn *c = ws->conns; c; c = c->next)
            if (c->out_head && c->wsi)
                lws_callback_on_writable(c->wsi);
        pthread_mutex_unlock(&ws->mu);
        return 0;
    case LWS_CALLBACK_CLOSED:
        if (pss->c)
            closed(ws, pss->c);
        pss->c = NULL;
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols protocols[] = {
    {"refgate", callback, sizeof(struct pss), 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void *service_main(void *arg)
{
    struct gw_ws *ws = arg;
    for (;;) {
        pthread_mutex_lock(&ws->mu);
        int stop = ws->stop;
        pthread_mutex_unlock(&ws->mu);
        if (stop || lws_service(ws->ctx, 0) < 0)
            break;
    }
    pthread_mutex_lock(&ws->mu);
    ws->destroying = 1;
    pthread_mutex_unlock(&ws->mu);
    lws_context_destroy(ws->ctx);
    return NULL;
}

static void lws_logger(int level, const char *line)
{
    rg_log(level & LLL_ERR ? RG_LOG_ERROR : RG_LOG_WARN, "ws", "%.*s",
           (int)(strlen(line) && line[strlen(line) - 1] == '\n' ? strlen(line) - 1 : strlen(line)),
           line);
}

int gw_ws_start(gw *g, char *err, size_t errlen)
{
    struct gw_ws *ws = calloc(1, sizeof *ws);
    if (!ws)
        return RG_ENOMEM;
    ws->g = g;
    pthread_mutex_init(&ws->mu, NULL);
    pthread_cond_init(&ws->idle, NULL);
    char host[128] = "127.0.0.1";
    const char *colon = strrchr(g->cfg.ws_listen, ':');
    int port = colon ? atoi(colon + 1) : atoi(g->cfg.ws_listen);
    if (colon && colon > g->cfg.ws_listen)
        snprintf(host, sizeof host, "%.*s", (int)(colon - g->cfg.ws_listen), g->cfg.ws_listen);
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_logger);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = port;
    info.iface = !strcmp(host, "0.0.0.0") ? NULL : host;
    info.protocols = protocols;
    info.user = ws;
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6 | LWS_SERVER_OPTION_VALIDATE_UTF8;
    info.max_http_header_data = 4096;
    info.timeout_secs = 30;
    ws->ctx = lws_create_context(&info);
    if (!ws->ctx || port <= 0) {
        snprintf(err, errlen, "cannot serve WebSocket on %s", g->cfg.ws_listen);
        if (ws->ctx)
            lws_context_destroy(ws->ctx);
        pthread_cond_destroy(&ws->idle);
        pthread_mutex_destroy(&ws->mu);
        free(ws);
        return RG_EUNAVAIL;
    }
    g->ws = ws;
    if (pthread_create(&ws->th, NULL, service_main, ws) != 0) {
        lws_context_destroy(ws->ctx);
        g->ws = NULL;
        free(ws);
        return RG_ENOMEM;
    }
    rg_log(RG_LOG_INFO, "gateway", "worker %s serving WebSocket on %s", g->worker,
           g->cfg.ws_listen);
    return 0;
}

void gw_ws_stop(gw *g)
{
    struct gw_ws *ws = g->ws;
    if (!ws || ws->stop)
        return;
    pthread_mutex_lock(&ws->mu);
    ws->stop = 1;
    pthread_mutex_unlock(&ws->mu);
    wake(ws);
    pthread_join(ws->th, NULL); /* destroying the context closes every connection */
    pthread_mutex_lock(&ws->mu);
    int64_t deadline = rg_now_ms() + STOP_WAIT_MS;
    while (ws->n_runners > 0 && rg_now_ms() < deadline) {
        pthread_mutex_unlock(&ws->mu);
        rg_sleep_ms(20);
        pthread_mutex_lock(&ws->mu);
    }
    int left = ws->n_runners;
    pthread_mutex_unlock(&ws->mu);
    if (left)
        rg_log(RG_LOG_WARN, "gateway", "%d WebSocket commands still running at shutdown", left);
}

/* After the sessions are gone (no page event can arrive any more). */
void gw_ws_free(gw *g)
{
    struct gw_ws *ws = g->ws;
    if (!ws || ws->n_runners)
        return; /* a runner still uses it: leave it to the process's end */
    g->ws = NULL;
    pthread_cond_destroy(&ws->idle);
    pthread_mutex_destroy(&ws->mu);
    free(ws);
}

int gw_ws_wants(gw *g, const char *tid, const char *sid, const char *kind)
{
    struct gw_ws *ws = g->ws;
    if (!ws)
        return 0;
    unsigned bit = kind_bit(kind);
    int want = 0;
    pthread_mutex_lock(&ws->mu);
    for (struct wsconn *c = ws->conns; c && !want; c = c->next)
        want = !c->closed && (c->events & bit) && !strcmp(c->sid, sid) && !strcmp(c->tenant, tid);
    pthread_mutex_unlock(&ws->mu);
    return want;
}

void gw_ws_event(gw *g, const char *tid, const char *sid, const char *kind, cJSON *data)
{
    struct gw_ws *ws = g->ws;
    if (!ws || !gw_ws_wants(g, tid, sid, kind)) {
        cJSON_Delete(data);
        return;
    }
    unsigned bit = kind_bit(kind);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", kind);
    cJSON_AddStringToObject(ev, "session", sid);
    cJSON *seq = cJSON_AddNumberToObject(ev, "seq", 0);
    cJSON_AddItemToObject(ev, "data", data);
    /* One seq per event for the session: the next after the highest any of
       its connections has seen, so every subscriber sees the same number. */
    pthread_mutex_lock(&ws->mu);
    struct wsconn *targets[16];
    int n = 0;
    uint64_t next = 0;
    for (struct wsconn *c = ws->conns; c; c = c->next) {
        if (strcmp(c->sid, sid) || strcmp(c->tenant, tid))
            continue;
        if (c->seq > next)
            next = c->seq;
        if (!c->closed && (c->events & bit) && n < 16) {
            c->refs++;
            targets[n++] = c;
        }
    }
    next++;
    for (struct wsconn *c = ws->conns; c; c = c->next)
        if (!strcmp(c->sid, sid) && !strcmp(c->tenant, tid))
            c->seq = next;
    pthread_mutex_unlock(&ws->mu);
    cJSON_SetNumberValue(seq, (double)next);
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&ws->mu);
        int json = targets[i]->json;
        pthread_mutex_unlock(&ws->mu);
        send_map(ws, targets[i], ev, json, 0);
        pthread_mutex_lock(&ws->mu);
        conn_unref(ws, targets[i]);
        pthread_mutex_unlock(&ws->mu);
    }
    cJSON_Delete(ev);
}
