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
 * subscriber: one past the last this worker gave the session's connections,
 * so a gap says an event was dropped. When the session has no connection
 * here that saw one (its connections all closed, or it came from another
 * worker), seq goes on from the wall clock in microseconds: a client that
 * reconnects, or follows its session to another worker, still sees seq go
 * up, as long as fewer events came than microseconds passed since the last
 * run began (across hosts, as far as their clocks agree). Before, seq
 * started again at 1.
 *
 * Bounds: frames up to max_body bytes, 32 commands waiting per connection
 * (more are answered `unavailable` at once), 8 MiB of unsent frames (events
 * beyond it are dropped and counted; replies always go), 512 connections.
 *
 * The live view: a connection opened with a view token (?token=, view.c)
 * instead of an API key may only subscribe and, with a control token, send
 * input; it closes when the token expires or the session closes. A
 * connection subscribed to `screencast` has one slot for a frame: a new
 * frame replaces an unsent one (dropped, counted), so a client that does not
 * read costs one frame of memory. Frames are shared between connections
 * (one encoding per frame) and acknowledged to the page once written
 * (sess_cast_ack), also for the frames a newer one replaced, so that the
 * page captures the next; the screencast stops when its last subscriber
 * leaves.
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
#define CAST_SYNC_MS 10000 /* starting or stopping a screencast waits this long for the session */
/* A running capture with a reader and no frame for this long is started
   again (a no-op unless a pause raced past the start that should end it). */
#define CAST_CHECK_US 2000000

enum {
    EV_NAVIGATION = 1,
    EV_CONSOLE = 2,
    EV_DIALOG = 4,
    EV_SNAPSHOT = 8,
    EV_SESSION = 16,
    EV_SCREENCAST = 32
};

/* A screencast frame's encoding, shared by the connections it goes to (ws->mu). */
struct sframe {
    int refs;
    int json;
    size_t len;
    unsigned char data[]; /* LWS_PRE bytes of headroom, then the payload */
};

/* A session with screencast subscribers here: acks owed to its page (ws->mu). */
struct castsess {
    char tenant[SESS_TENANT_MAX];
    char sid[SESS_ID_MAX];
    int ack_id;     /* the stream's id for Page.screencastFrameAck */
    int unacked;    /* frames received, not yet written to a client nor replaced */
    int held;       /* frames written whose acks wait: no subscriber has confirmed one */
    int due;        /* frames done with whose acks are to be sent (cast_tick) */
    int max_fps;    /* the frame-rate cap: the first subscriber's */
    int paused;     /* the capture is stopped (sess_cast_pause) until cast_tick starts it */
    int64_t win_us; /* the cap's current window began then (rg_now_us) */
    int win_frames; /* frames captured in it */
    int64_t last_us; /* the last frame came, or the capture was last started, then */
    struct castsess *next;
};

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
    char why[124];            /* then the close frame's reason, "code: message" (guarded
                                 by ws->mu once listed) */
    int viewer, control;      /* opened with a view token (and may it send input?) */
    long long view_exp;       /* the token's expiry, unix seconds */
    /* guarded by ws->mu */
    int cast;                 /* subscribed to the screencast */
    sess_cast_opts cast_opts;
    int max_fps;         /* the frame-rate cap it asked for */
    int awaiting;        /* a frame was written and the ping behind it not answered */
    int ping_due;        /* that ping is to be written next */
    uint32_t ping_seq;   /* the last ping's payload */
    struct sframe *slot; /* the newest unsent frame */
    int ending;          /* 1: the session closed, 2: the token expired: close once the
                            outbox is sent */
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
    int viewer, control;
    long long view_exp;
    int http_status; /* a view token refused: this status at the handshake */
};

struct gw_ws {
    gw *g;
    struct lws_context *ctx;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t idle;
    struct wsconn *conns;
    struct castsess *casts;
    lws_sorted_usec_list_t tick; /* service thread: the next cast_tick */
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

static void sframe_unref(struct sframe *f)
{
    if (f && --f->refs == 0)
        free(f);
}

/* Empties c's frame slot (ws->mu held): the frame, still referenced, or NULL. */
static struct sframe *slot_take(struct gw_ws *ws, struct wsconn *c)
{
    struct sframe *f = c->slot;
    if (f)
        ws->g->m.frame_bytes -= f->len;
    c->slot = NULL;
    return f;
}

static void conn_unref(struct gw_ws *ws, struct wsconn *c)
{
    if (--c->refs > 0)
        return;
    sframe_unref(slot_take(ws, c));
    free_frames(c->in_head);
    free_frames(c->out_head);
    rg_buf_destroy(&c->rx);
    pthread_cond_destroy(&c->cv);
    free(c);
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
    static const char *names[] = {"navigation", "console", "dialog",  "snapshot",
                                  "session",    "download", "screencast", "tab"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
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

/* The castsess of a session (ws->mu held); a new one when make (NULL without memory). */
static struct castsess *castsess_find(struct gw_ws *ws, const char *tid, const char *sid,
                                      int make)
{
    for (struct castsess *cs = ws->casts; cs; cs = cs->next)
        if (!strcmp(cs->sid, sid) && !strcmp(cs->tenant, tid))
            return cs;
    if (!make)
        return NULL;
    struct castsess *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL;
    snprintf(cs->tenant, sizeof cs->tenant, "%s", tid);
    snprintf(cs->sid, sizeof cs->sid, "%s", sid);
    cs->next = ws->casts;
    ws->casts = cs;
    return cs;
}

/* Tells the page n frames are done with (no lock held). */
static void send_acks(gw *g, const char *tid, const char *sid, int ack_id, int n)
{
    for (int i = 0; i < n; i++)
        sess_cast_ack(g->sessions, tid, sid, ack_id);
}

static void cast_settle(struct gw_ws *ws, const char *tid, const char *sid);

/* 1 when a connection other than except still wants the session's frames (ws->mu held). */
static int cast_others(struct gw_ws *ws, const struct wsconn *except)
{
    for (struct wsconn *o = ws->conns; o; o = o->next)
        if (o != except && o->cast && !o->closed && !strcmp(o->sid, except->sid) &&
            !strcmp(o->tenant, except->tenant))
            return 1;
    return 0;
}

/*
 * After a subscribe that names screencast: the connection takes frames, and
 * the session's page streams (restored when parked). The reply becomes the
 * error when the page cannot stream. Runner thread.
 */
static cJSON *cast_subscribe(struct gw_ws *ws, struct wsconn *c, const cJSON *sc, cJSON *reply,
                             const cJSON *id)
{
    sess_cast_opts o = {0};
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(sc, "format");
    snprintf(o.format, sizeof o.format, "%s", cJSON_IsString(fmt) ? fmt->valuestring : "jpeg");
    o.quality = cJSON_GetObjectItemCaseSensitive(sc, "quality")->valueint;
    o.max_width = cJSON_GetObjectItemCaseSensitive(sc, "max_width")->valueint;
    o.max_height = cJSON_GetObjectItemCaseSensitive(sc, "max_height")->valueint;
    const cJSON *fps = cJSON_GetObjectItemCaseSensitive(sc, "max_fps");
    pthread_mutex_lock(&ws->mu);
    if (!c->cast)
        ws->g->m.viewers++;
    c->cast = 1;
    c->cast_opts = o;
    c->max_fps = cJSON_IsNumber(fps) && fps->valueint > 0 ? fps->valueint : GW_CAST_FPS_DEFAULT;
    cast_settle(ws, c->tenant, c->sid); /* frames held for stuck subscribers: this one reads */
    pthread_mutex_unlock(&ws->mu);
    wake(ws); /* the service thread sends the acks now due */
    char err[256] = "";
    int rc = sess_cast_sync(ws->g->sessions, c->tenant, c->sid, CAST_SYNC_MS, err, sizeof err);
    if (rc == 0) {
        /* A new viewer gets a frame at once, also of a capture paused for
           the others (the frame-rate cap's window starts again). */
        pthread_mutex_lock(&ws->mu);
        struct castsess *cs = castsess_find(ws, c->tenant, c->sid, 0);
        if (cs) {
            cs->paused = 0;
            cs->win_us = cs->last_us = rg_now_us();
            cs->win_frames = 0;
        }
        pthread_mutex_unlock(&ws->mu);
        sess_cast_pause(ws->g->sessions, c->tenant, c->sid, 0);
        return reply;
    }
    pthread_mutex_lock(&ws->mu);
    if (c->cast)
        ws->g->m.viewers--;
    c->cast = 0;
    c->events &= ~(unsigned)EV_SCREENCAST;
    pthread_mutex_unlock(&ws->mu);
    cJSON_Delete(reply);
    return gw_error_reply(rc, err[0] ? err : "the session's page cannot stream", id, 0,
                          rg_err_transient(rc) ? 1000 : 0);
}

/* The connection leaves: the last subscriber of a session stops its screencast. Runner thread. */
static void cast_leave(struct gw_ws *ws, struct wsconn *c)
{
    pthread_mutex_lock(&ws->mu);
    int had = c->cast, others = 0, owed = 0, ack_id = 0;
    if (had) {
        c->cast = 0;
        ws->g->m.viewers--;
        others = cast_others(ws, c);
        if (!others) {
            for (struct castsess **pp = &ws->casts; *pp; pp = &(*pp)->next)
                if (!strcmp((*pp)->sid, c->sid) && !strcmp((*pp)->tenant, c->tenant)) {
                    struct castsess *cs = *pp;
                    *pp = cs->next;
                    owed = cs->unacked + cs->held + cs->due;
                    ack_id = cs->ack_id;
                    free(cs);
                    break;
                }
        }
    }
    pthread_mutex_unlock(&ws->mu);
    if (!had || others)
        return;
    send_acks(ws->g, c->tenant, c->sid, ack_id, owed);
    char err[256];
    sess_cast_sync(ws->g->sessions, c->tenant, c->sid, CAST_SYNC_MS, err, sizeof err);
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
                         .websocket = 1, .max_sessions = c->max_sessions,
                         .viewer = c->viewer, .control = c->control};
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
            const cJSON *res = cJSON_GetObjectItemCaseSensitive(reply, "result");
            pthread_mutex_lock(&ws->mu);
            c->events |= event_bits(cJSON_GetObjectItemCaseSensitive(res, "events"));
            pthread_mutex_unlock(&ws->mu);
            const cJSON *sc = cJSON_GetObjectItemCaseSensitive(res, "screencast");
            if (sc) {
                reply = cast_subscribe(ws, c, sc, reply, cJSON_GetObjectItemCaseSensitive(m, "id"));
                ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
                if (!cJSON_IsTrue(ok))
                    status = 503; /* for the log line: the page could not stream */
            }
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
    pthread_mutex_unlock(&ws->mu);
    cast_leave(ws, c);
    pthread_mutex_lock(&ws->mu);
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
    char tbuf[GW_VIEW_TOKEN_MAX + 16];
    const char *token = lws_get_urlarg_by_name(wsi, "token=", tbuf, (int)sizeof tbuf);
    tenant t;
    int rc;
    if (token && !key) {
        /* A view token: the tenant is the token's, the session the path's. A
           token that does not check out is refused before the upgrade. */
        unsigned char secret[GW_VIEW_SECRET_BYTES];
        gw_view_claims cl;
        rc = gw_view_secret(ws->g, secret);
        if (rc == 0)
            rc = gw_view_token_verify(secret, sizeof secret, token, pss->sid,
                                      (long long)(rg_wall_ms() / 1000), &cl);
        if (rc == 0)
            rc = tenant_get(ws->g->redis, cl.tenant, &t);
        if (rc == 0) {
            sess_info in;
            int src = sess_get_info(ws->g->sessions, cl.tenant, pss->sid, &in);
            if (src == 0)
                sess_info_free(&in);
            if (src < 0)
                tenant_destroy(&t);
            rc = src == RG_ENOTFOUND ? RG_EUNAUTH : src; /* the token died with its session */
        }
        if (rc < 0) {
            pss->refused = rc;
            pss->http_status = rc == RG_EUNAVAIL ? 503 : 401;
            return;
        }
        pss->viewer = 1;
        pss->control = cl.control;
        pss->view_exp = cl.exp;
        snprintf(pss->tenant, sizeof pss->tenant, "%s", t.id);
        pss->allow_eval = 0;
        pss->max_sessions = t.max_sessions;
        pss->max_concurrent = t.max_concurrent;
        pss->rate = t.rate;
        tenant_destroy(&t);
        pss->refused = 0;
        return;
    }
    rc = key && *key ? tenant_authenticate(ws->g->tenants, key, &t) : RG_EUNAUTH;
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
    c->viewer = pss->viewer;
    c->control = pss->control;
    c->view_exp = pss->view_exp;
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
        /* The refusal frame is msgpack (the client has not said what it speaks);
           the close frame's reason says it in text too, for every client. */
        snprintf(c->why, sizeof c->why, "%s: %s", rg_err_code(rc), msg);
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
        snprintf(c->why, sizeof c->why, "%s: the worker could not serve the connection",
                 rg_err_code(RG_EBUSY));
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

/*
 * The frame-rate cap. While a screencast runs, Chromium captures every frame
 * the page paints, acknowledged or not, and that capture is what a viewer
 * costs the page. So the capture is stopped (sess_cast_pause) for the rest
 * of a window of 2/max_fps seconds once two frames came in it (a start
 * captures one at once, even of a page that does not change: a still page
 * keeps streaming and costs nothing), and whenever a frame comes while no
 * subscriber can take one (all wait for the pong behind their last frame);
 * cast_tick starts it again once the window is over and a subscriber can
 * take a frame. (And every CAST_CHECK_US without a frame while a subscriber
 * could take one, in case a pause decided on the reader thread reached the
 * page after the start that was to end it: sess_cast_pause does nothing
 * when the page already streams.)
 */
static int64_t cast_window_us(const struct castsess *cs)
{
    return 2000000 / (cs->max_fps > 0 ? cs->max_fps : GW_CAST_FPS_DEFAULT);
}

/* 1 when a subscriber of the session can take a frame now (ws->mu held). */
static int cast_ready(struct gw_ws *ws, const char *tid, const char *sid)
{
    for (struct wsconn *o = ws->conns; o; o = o->next)
        if (o->cast && !o->closed && !o->ending && !o->awaiting && !strcmp(o->sid, sid) &&
            !strcmp(o->tenant, tid))
            return 1;
    return 0;
}

static void tick_cb(lws_sorted_usec_list_t *sul);

/* Sends the acks due and starts the paused captures whose time came. Service thread. */
static void cast_tick(struct gw_ws *ws)
{
    enum { BATCH = 16 };
    struct {
        char tenant[SESS_TENANT_MAX], sid[SESS_ID_MAX];
        int ack_id, acks, resume;
    } out[BATCH];
    int n = 0;
    int64_t now = rg_now_us(), wake = 0;
    pthread_mutex_lock(&ws->mu);
    int destroying = ws->destroying;
    for (struct castsess *cs = ws->casts; cs; cs = cs->next) {
        int ready = cast_ready(ws, cs->tenant, cs->sid);
        int64_t at = cs->paused ? cs->win_us + cast_window_us(cs) : cs->last_us + CAST_CHECK_US;
        int resume = ready;
        if (resume && now < at) {
            if (!wake || at < wake)
                wake = at;
            resume = 0;
        }
        if (!resume && cs->due <= 0)
            continue;
        if (n == BATCH) {
            wake = now + 1000;
            break;
        }
        snprintf(out[n].tenant, sizeof out[n].tenant, "%s", cs->tenant);
        snprintf(out[n].sid, sizeof out[n].sid, "%s", cs->sid);
        out[n].ack_id = cs->ack_id;
        out[n].acks = cs->due;
        out[n++].resume = resume;
        cs->due = 0;
        if (resume) {
            if (cs->paused) {
                cs->win_us = now;
                cs->win_frames = 0;
            }
            cs->paused = 0;
            cs->last_us = now;
        }
    }
    pthread_mutex_unlock(&ws->mu);
    for (int i = 0; i < n; i++) {
        send_acks(ws->g, out[i].tenant, out[i].sid, out[i].ack_id, out[i].acks);
        if (out[i].resume)
            sess_cast_pause(ws->g->sessions, out[i].tenant, out[i].sid, 0);
    }
    if (wake && !destroying)
        lws_sul_schedule(ws->ctx, 0, &ws->tick, tick_cb, (lws_usec_t)(wake - now));
}

static void tick_cb(lws_sorted_usec_list_t *sul)
{
    cast_tick(lws_container_of(sul, struct gw_ws, tick));
}

/*
 * The session's held acks become due when one of its subscribers can take a
 * frame (it answered the ping behind its last one, or has had none yet):
 * Chromium stops capturing only when no subscriber reads, and a stuck one
 * just has its frames replaced (ws->mu held).
 */
static void cast_settle(struct gw_ws *ws, const char *tid, const char *sid)
{
    struct castsess *cs = castsess_find(ws, tid, sid, 0);
    if (!cs || !cs->held)
        return;
    for (struct wsconn *o = ws->conns; o; o = o->next)
        if (o->cast && !o->closed && !o->awaiting && !strcmp(o->sid, sid) &&
            !strcmp(o->tenant, tid)) {
            cs->due += cs->held;
            cs->held = 0;
            return;
        }
}

/* 1 when c has something to write now (ws->mu held). */
static int has_output(const struct wsconn *c)
{
    return c->out_head || c->ping_due || (c->slot && !c->awaiting);
}

/*
 * Writes one frame: the ping behind a screencast frame first, then a reply
 * or event, else the slot's screencast frame, if the client answered the
 * ping behind the previous one. So a client holds at most one frame it has
 * not read, wherever the bytes sit (the worker's socket, nginx, its own),
 * and a client that stops reading gets no more: its slot keeps the newest.
 * The page hears that the frames written are done with (this one, and
 * those it replaced) once the ping is answered, or at once when another
 * subscriber of the session can take frames.
 */
static int writeable(struct gw_ws *ws, struct wsconn *c, struct lws *wsi)
{
    pthread_mutex_lock(&ws->mu);
    int ping = c->ping_due;
    uint32_t seq = c->ping_seq;
    struct frame *f = NULL;
    struct sframe *sf = NULL;
    if (ping) {
        c->ping_due = 0;
    } else if ((f = pop(&c->out_head, &c->out_tail))) {
        c->out_bytes -= f->len;
    } else if (!c->awaiting && (sf = slot_take(ws, c))) {
        ws->g->m.frames_sent++;
        struct castsess *cs = castsess_find(ws, c->tenant, c->sid, 0);
        if (cs) {
            cs->held += cs->unacked;
            cs->unacked = 0;
        }
        c->awaiting = 1;
        c->ping_due = 1;
        c->ping_seq = seq = c->ping_seq + 1;
    }
    int more = has_output(c);
    int refused = c->refused, ending = c->ending;
    char refusal[sizeof c->why];
    memcpy(refusal, c->why, sizeof refusal);
    pthread_mutex_unlock(&ws->mu);
    int n = 0;
    if (ping) {
        unsigned char pb[LWS_PRE + 4];
        for (int i = 0; i < 4; i++)
            pb[LWS_PRE + i] = (unsigned char)(seq >> (24 - 8 * i));
        n = lws_write(wsi, pb + LWS_PRE, 4, LWS_WRITE_PING);
    } else if (f) {
        n = lws_write(wsi, f->data + LWS_PRE, f->len, f->json ? LWS_WRITE_TEXT : LWS_WRITE_BINARY);
        free(f);
    } else if (sf) {
        /* lws writes the header into the headroom and keeps what the socket
           did not take: the shared buffer is free again when it returns. */
        n = lws_write(wsi, sf->data + LWS_PRE, sf->len,
                      sf->json ? LWS_WRITE_TEXT : LWS_WRITE_BINARY);
        pthread_mutex_lock(&ws->mu);
        sframe_unref(sf);
        cast_settle(ws, c->tenant, c->sid); /* another subscriber may take frames */
        pthread_mutex_unlock(&ws->mu);
        cast_tick(ws);
    }
    if (n < 0)
        return -1;
    if (more)
        lws_callback_on_writable(wsi);
    else if (refused) {
        /* 1013, "try again later", for what passes; 1008 for a refusal that stays. */
        int later = refused == RG_EUNAVAIL || refused == RG_EBUSY;
        lws_close_reason(wsi,
                         later ? (enum lws_close_status)1013 : LWS_CLOSE_STATUS_POLICY_VIOLATION,
                         (unsigned char *)refusal, strlen(refusal));
        return -1;
    } else if (ending) {
        const char *why = ending == 2 ? "token expired" : "session closed";
        lws_close_reason(wsi, ending == 2 ? LWS_CLOSE_STATUS_POLICY_VIOLATION
                                          : LWS_CLOSE_STATUS_NORMAL,
                         (unsigned char *)why, strlen(why));
        return -1;
    }
    return 0;
}

/* A pong: when it answers the ping behind c's last frame, c may take the next one. */
static void ponged(struct gw_ws *ws, struct wsconn *c, struct lws *wsi, const unsigned char *in,
                   size_t len)
{
    uint32_t seq = 0;
    for (size_t i = 0; i < len && i < 4; i++)
        seq = seq << 8 | in[i];
    pthread_mutex_lock(&ws->mu);
    int mine = len == 4 && c->awaiting && !c->ping_due && seq == c->ping_seq;
    if (mine) {
        c->awaiting = 0;
        cast_settle(ws, c->tenant, c->sid);
    }
    int more = has_output(c);
    pthread_mutex_unlock(&ws->mu);
    if (mine)
        cast_tick(ws);
    if (more)
        lws_callback_on_writable(wsi);
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
    sframe_unref(slot_take(ws, c));
    cast_settle(ws, c->tenant, c->sid); /* nobody waits for a client that left */
    pthread_cond_signal(&c->cv);
    conn_unref(ws, c);
    pthread_mutex_unlock(&ws->mu);
    cast_tick(ws);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct gw_ws *ws = lws_context_user(lws_get_context(wsi));
    struct pss *pss = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        check_handshake(ws, wsi, pss);
        if (pss->http_status) {
            /* A bad view token: an HTTP error instead of the upgrade. */
            lws_return_http_status(wsi, (unsigned)pss->http_status, NULL);
            return -1;
        }
        return 0;
    case LWS_CALLBACK_ESTABLISHED:
        established(ws, wsi, pss);
        if (pss->c && pss->c->refused)
            lws_callback_on_writable(wsi);
        if (pss->c && pss->viewer) {
            /* The token's life is the connection's (LWS_CALLBACK_TIMER ends it). */
            long long left_ms = pss->view_exp * 1000 - rg_wall_ms();
            lws_set_timer_usecs(wsi, (lws_usec_t)(left_ms > 1 ? left_ms : 1) * 1000);
        }
        return pss->c ? 0 : -1;
    case LWS_CALLBACK_RECEIVE:
        if (pss->c)
            received(ws, pss->c, wsi, in, len);
        return 0;
    case LWS_CALLBACK_RECEIVE_PONG:
        if (pss->c)
            ponged(ws, pss->c, wsi, in, len);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return pss->c ? writeable(ws, pss->c, wsi) : 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        pthread_mutex_lock(&ws->mu);
        for (struct wsconn *c = ws->conns; c; c = c->next)
            if ((has_output(c) || c->ending) && c->wsi)
                lws_callback_on_writable(c->wsi);
        pthread_mutex_unlock(&ws->mu);
        cast_tick(ws); /* acks due, and a new subscriber may resume a paused capture */
        return 0;
    case LWS_CALLBACK_TIMER:
        if (pss->c) {
            pthread_mutex_lock(&ws->mu);
            if (!pss->c->ending)
                pss->c->ending = 2;
            pthread_mutex_unlock(&ws->mu);
            lws_callback_on_writable(wsi);
        }
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
    while (ws->casts) {
        struct castsess *cs = ws->casts;
        ws->casts = cs->next;
        free(cs);
    }
    pthread_cond_destroy(&ws->idle);
    pthread_mutex_destroy(&ws->mu);
    free(ws);
}

int gw_ws_cast_wanted(void *ud, const char *tid, const char *sid, sess_cast_opts *o)
{
    gw *g = ud;
    struct gw_ws *ws = g->ws;
    if (!ws)
        return 0;
    int want = 0;
    pthread_mutex_lock(&ws->mu);
    /* The settings of the subscriber that came first (the list holds the newest first). */
    for (struct wsconn *c = ws->conns; c; c = c->next)
        if (c->cast && !c->closed && !c->ending && !strcmp(c->sid, sid) &&
            !strcmp(c->tenant, tid)) {
            *o = c->cast_opts;
            want = 1;
        }
    pthread_mutex_unlock(&ws->mu);
    return want;
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

/* An encoded copy of ev for the connections' slots (refs 0), or NULL. */
static struct sframe *sframe_of(const cJSON *ev, int json)
{
    rg_buf b;
    rg_buf_init(&b);
    struct sframe *f = NULL;
    if ((json ? wire_json_encode(ev, &b) : wire_mp_encode(ev, &b)) == 0 && !b.failed &&
        (f = malloc(sizeof *f + LWS_PRE + b.len))) {
        f->refs = 0;
        f->json = json;
        f->len = b.len;
        memcpy(f->data + LWS_PRE, b.data, b.len);
    }
    rg_buf_destroy(&b);
    return f;
}

/* The next event seq of a session (ws->mu held): one past the highest any connection saw,
   or the wall clock's microseconds when none saw one. */
static uint64_t next_seq(struct gw_ws *ws, const char *tid, const char *sid)
{
    uint64_t next = 0;
    for (struct wsconn *c = ws->conns; c; c = c->next)
        if (!strcmp(c->sid, sid) && !strcmp(c->tenant, tid) && c->seq > next)
            next = c->seq;
    next = next ? next + 1 : (uint64_t)rg_wall_ms() * 1000;
    for (struct wsconn *c = ws->conns; c; c = c->next)
        if (!strcmp(c->sid, sid) && !strcmp(c->tenant, tid))
            c->seq = next;
    return next;
}

/*
 * A screencast frame of the session (data: the session's "frame" event,
 * taken over) into the slot of each connection that subscribed, replacing
 * (and counting as dropped) a frame not sent yet. Reader thread.
 */
static void cast_frame(gw *g, const char *tid, const char *sid, cJSON *data)
{
    struct gw_ws *ws = g->ws;
    const cJSON *ack = cJSON_GetObjectItemCaseSensitive(data, "ack");
    int ack_id = cJSON_IsNumber(ack) ? ack->valueint : 0;
    cJSON_DeleteItemFromObjectCaseSensitive(data, "ack");
    cJSON *img = cJSON_GetObjectItemCaseSensitive(data, "data");
    if (cJSON_IsString(img))
        img->type |= WIRE_BIN; /* base64 from the page: bin on the wire */
    int want_mp = 0, want_json = 0;
    if (ws) {
        pthread_mutex_lock(&ws->mu);
        for (struct wsconn *c = ws->conns; c; c = c->next)
            if (c->cast && !c->closed && !c->ending && !strcmp(c->sid, sid) &&
                !strcmp(c->tenant, tid)) {
                if (c->json)
                    want_json = 1;
                else
                    want_mp = 1;
            }
        pthread_mutex_unlock(&ws->mu);
    }
    if (!want_mp && !want_json) {
        cJSON_Delete(data);
        sess_cast_ack(g->sessions, tid, sid, ack_id); /* nobody to wait for */
        sess_cast_pause(g->sessions, tid, sid, 1);    /* nor to capture for */
        return;
    }
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "frame");
    cJSON_AddStringToObject(ev, "session", sid);
    cJSON *seq = cJSON_AddNumberToObject(ev, "seq", 0);
    cJSON_AddItemToObject(ev, "data", data);
    pthread_mutex_lock(&ws->mu);
    cJSON_SetNumberValue(seq, (double)next_seq(ws, tid, sid));
    pthread_mutex_unlock(&ws->mu);
    struct sframe *mp = want_mp ? sframe_of(ev, 0) : NULL;
    struct sframe *js = want_json ? sframe_of(ev, 1) : NULL;
    cJSON_Delete(ev);
    int placed = 0;
    pthread_mutex_lock(&ws->mu);
    struct castsess *cs = NULL; /* made with the first frame placed, gone with the last viewer */
    for (struct wsconn *c = ws->conns; c; c = c->next) {
        if (!c->cast || c->closed || c->ending || strcmp(c->sid, sid) || strcmp(c->tenant, tid))
            continue;
        struct sframe *f = c->json ? js : mp;
        if (!f)
            continue;
        if (!cs && !(cs = castsess_find(ws, tid, sid, 1)))
            break;
        if (c->slot) {
            g->m.frames_dropped++;
            sframe_unref(slot_take(ws, c));
        }
        f->refs++;
        c->slot = f;
        cs->max_fps = c->max_fps; /* the list holds the newest first: the first subscriber's */
        g->m.frame_bytes += f->len;
        placed++;
    }
    int pause = 0;
    if (placed) {
        cs->ack_id = ack_id;
        cs->unacked++;
        int64_t now = rg_now_us();
        cs->last_us = now;
        if (now - cs->win_us >= cast_window_us(cs)) {
            cs->win_us = now;
            cs->win_frames = 0;
        }
        cs->win_frames++;
        /* Over the cap, or nobody can take the next frame: stop capturing
           (again, when the holder started the stream since). */
        if (cs->paused || cs->win_frames >= 2 || !cast_ready(ws, tid, sid))
            cs->paused = pause = 1;
    }
    if (mp && !mp->refs)
        free(mp);
    if (js && !js->refs)
        free(js);
    pthread_mutex_unlock(&ws->mu);
    if (pause || !placed)
        sess_cast_pause(g->sessions, tid, sid, 1);
    if (placed)
        wake(ws);
    else
        sess_cast_ack(g->sessions, tid, sid, ack_id);
}

/* The session closed: its view-token connections end once their frames are sent. */
static void session_closed(struct gw_ws *ws, const char *tid, const char *sid)
{
    int any = 0;
    pthread_mutex_lock(&ws->mu);
    for (struct wsconn *c = ws->conns; c; c = c->next)
        if (c->viewer && !c->closed && !strcmp(c->sid, sid) && !strcmp(c->tenant, tid)) {
            c->ending = 1;
            any = 1;
        }
    pthread_mutex_unlock(&ws->mu);
    if (any)
        wake(ws);
}

/* An event to the session's subscribers of its kind (data taken over). */
static void deliver(gw *g, const char *tid, const char *sid, const char *kind, cJSON *data)
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
    for (struct wsconn *c = ws->conns; c; c = c->next) {
        if (strcmp(c->sid, sid) || strcmp(c->tenant, tid))
            continue;
        if (!c->closed && (c->events & bit) && n < 16) {
            c->refs++;
            targets[n++] = c;
        }
    }
    uint64_t next = next_seq(ws, tid, sid);
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

void gw_ws_event(gw *g, const char *tid, const char *sid, const char *kind, cJSON *data)
{
    if (!strcmp(kind, "frame")) {
        cast_frame(g, tid, sid, data);
        return;
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(data, "state");
    int closing = !strcmp(kind, "session") && cJSON_IsString(st) &&
                  !strcmp(st->valuestring, "closed");
    deliver(g, tid, sid, kind, data); /* first, so a viewer hears why it ends */
    if (closing && g->ws)
        session_closed(g->ws, tid, sid);
}
