/*
 * gw_int.h - private to gateway/: the gateway structure, metrics, the event
 * sink, and the command context that check.c (checks), ops.c (handlers),
 * reply.c (reply maps) and command.c (the pipeline) share.
 *
 * Calls between the files go one way: main.c -> gateway.c -> ws.c, limits.c,
 * urlpolicy.c; fcgi.c -> http.c -> command.c; ws.c -> command.c; command.c
 * -> ops.c -> check.c, reply.c, metrics.c. Events from a command reach the
 * WebSocket only through the sink gateway.c sets.
 */
#ifndef GW_INT_H
#define GW_INT_H

#include <pthread.h>

#include "pool/pool.h"
#include "registry/registry.h"
#include "session/session.h"
#include "tenant/tenant.h"
#include "gateway/gateway.h"
#include "wire/op.h"
#include "wire/wire.h"

/* ---- metrics ---- */

#define GW_CODES 26
#define GW_BUCKETS 14

typedef struct gw_metrics {
    uint64_t commands[WIRE_OP_COUNT][GW_CODES]; /* by op index and error index (0: ok) */
    uint64_t latency[WIRE_OP_COUNT][GW_BUCKETS + 1];
    double latency_sum[WIRE_OP_COUNT];
    uint64_t http[6];                        /* responses by status class 1xx..5xx */
    uint64_t redis_errors;
    uint64_t ws_connections;
    uint64_t frames_sent, frames_dropped; /* the live view's screencast frames */
    uint64_t viewers;                     /* connections that receive frames now (a gauge) */
    uint64_t frame_bytes;                 /* bytes of frames waiting in their slots (a gauge) */
} gw_metrics;

extern const int gw_buckets_ms[GW_BUCKETS];

/** Counts one command (wire_op_id, error code or 0, milliseconds). */
void gw_metrics_count(gw *g, int op, int rc, double ms);

/* ---- the event sink ---- */

/**
 * Where a command's events go (the session's WebSocket subscribers):
 * gateway.c sets it at start, before any command runs. wants says whether a
 * subscriber of the session wants kind; emit sends one (data taken over).
 */
typedef struct gw_events {
    int (*wants)(gw *g, const char *tid, const char *sid, const char *kind);
    void (*emit)(gw *g, const char *tid, const char *sid, const char *kind, cJSON *data);
} gw_events;

/* ---- the gateway ---- */

struct gw_ws;
typedef struct gw_limits gw_limits;

struct gw {
    gw_config cfg;
    char http_cut[80]; /* why an HTTP command ended early: "a command over HTTP answers ..." */
    char worker[64];
    pool *pool;
    rg_redis *redis;
    reg_store *store;
    sess_mgr *sessions;
    tenant_cache *tenants;
    gw_limits *limits;
    pthread_mutex_t mu;
    gw_metrics m;
    int stopping;
    int listen_fd;
    int64_t started_ms;
    struct gw_ws *ws;
    gw_events events;
    unsigned char view_secret[32]; /* the view tokens' key, once read (view.c; g->mu) */
    int view_secret_ok;
};

/** 1 when the sink wants events of kind for the session. */
static inline int gw_event_wants(gw *g, const char *tid, const char *sid, const char *kind)
{
    return g->events.wants ? g->events.wants(g, tid, sid, kind) : 0;
}

/** Hands an event to the sink (data taken over; freed when nobody wants it). */
static inline void gw_event(gw *g, const char *tid, const char *sid, const char *kind, cJSON *data)
{
    if (g->events.emit)
        g->events.emit(g, tid, sid, kind, data);
    else
        cJSON_Delete(data);
}

/* ---- one command (check.c, ops.c, reply.c, command.c) ---- */

#define GW_DEFAULT_TIMEOUT_MS 5000
#define GW_NAV_TIMEOUT_MS 30000
/* The largest timeout_ms a command takes, and the bound of an act that gives none. */
#define GW_MAX_TIMEOUT_MS 600000

/** A command on its way through the pipeline; one thread at a time. */
typedef struct gw_cmd {
    gw *g;
    const gw_caller *who;
    const char *sid;
    const char *op;
    int id;            /* wire_op_id, -1 until the op is known */
    int param;         /* the handler's parameter (ops.c) */
    const cJSON *args; /* never NULL: an empty object when absent */
    int timeout_ms;
    sess *s;
    const char *tab;   /* the tab it acts on (args.tab, or an act's), NULL: the active one */
    int nested;        /* an act step */
    int full;          /* checkpoint cookies and storage after it */
    int changed;       /* the page may have changed: snapshot event */
    /* the outcome */
    int rc;
    char err[512];
    cJSON *result;
    cJSON *details;
    int retry_after_ms;
    const sess_restore_info *ri; /* what opening the session restored */
} gw_cmd;

/** want (ms), or what is left until deadline_ms (rg_now_ms clock) when less, at least 1;
    deadline_ms 0: want. */
int gw_clamp_ms(int64_t deadline_ms, int want);
/** gw_clamp_ms to the caller's deadline (an HTTP command's). */
int gw_left_ms(const gw_cmd *c, int want);
/** Appends " (cut short: why)" to c's error message: a deadline ended the op early. */
void gw_note_cut(gw_cmd *c, const char *why);
/** Sets c's error (rc and a printf message) and returns rc. */
int gw_fail(gw_cmd *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** 1 when v is a number holding an integer a double represents exactly. */
int gw_is_int(const cJSON *v);
/** c's args: the string, integer (clamped to +-1e9), boolean, or presence of key k. */
const char *gw_arg_str(const gw_cmd *c, const char *k);
int gw_arg_int(const gw_cmd *c, const char *k, int def);
int gw_arg_bool(const gw_cmd *c, const char *k);
int gw_has_arg(const gw_cmd *c, const char *k);
/**
 * Checks the command map m's keys (op, args, id, idempotency_key) and their
 * types; *id and *idem point into m. 0, or c->rc with c->err set.
 */
int gw_check_map(gw_cmd *c, const cJSON *m, int need_op, const cJSON **id, const char **idem);
/** Prepares c for m: op (default_op when m has none), args checked, timeout. NULL on error. */
const wire_op *gw_prepare(gw_cmd *c, const cJSON *m, const char *default_op);
/**
 * Every check of gw_command that needs neither Redis nor a session: map, op,
 * args, route (c->sid) and the caller's rights. *o is set once the op is
 * known, also when a later check fails (the command counts for that op).
 */
int gw_check_cmd(gw_cmd *c, const cJSON *m, const wire_op **o, const cJSON **id,
                 const char **idem);
/** Runs c's op (c->id) with its handler, on its tab (c->tab, args.tab); 0 or c->rc. */
int gw_op_run(gw_cmd *c);
/** c's reply map (its result or error taken over), id echoed, ms its duration. */
cJSON *gw_reply_of(gw_cmd *c, const cJSON *id, double ms);

/* ---- routes (http.c) ---- */

/**
 * What a request path names: "/v1/sessions" (or with a trailing "/"),
 * "/v1/sessions/<sid>" (sid into out, len bytes; a sid that does not fit
 * still routes, as a session that cannot exist), "/v1/sessions/<sid>/ws",
 * or nothing of ours.
 */
enum gw_route {
    GW_ROUTE_NONE,     /* no endpoint of ours */
    GW_ROUTE_SESSIONS, /* /v1/sessions */
    GW_ROUTE_SESSION,  /* /v1/sessions/{sid} */
    GW_ROUTE_WS,       /* /v1/sessions/{sid}/ws (the WebSocket, not for HTTP) */
    GW_ROUTE_MCP,      /* /v1/mcp (MCP over Streamable HTTP, mcp_http.c) */
};
enum gw_route gw_http_route(const char *path, char *sid, size_t len);

/** POST or DELETE /v1/mcp for an authenticated, admitted caller (mcp_http.c). */
void gw_handle_mcp(gw *g, const gw_http_req *req, const gw_caller *who, gw_http_resp *resp);

/* ---- WebSocket (ws.c) ---- */

int gw_ws_start(gw *g, char *err, size_t errlen);
/** Closes every connection and waits for their commands; events go nowhere after it. */
void gw_ws_stop(gw *g);
/** Frees what gw_ws_stop left (call once no page event can arrive). */
void gw_ws_free(gw *g);
/**
 * Sends an event to the session's subscribers (no-op without any): kind is
 * navigation, console, dialog, snapshot or session; data is taken over.
 */
void gw_ws_event(gw *g, const char *tid, const char *sid, const char *kind, cJSON *data);
/** 1 when a subscriber of the session wants this kind of event. */
int gw_ws_wants(gw *g, const char *tid, const char *sid, const char *kind);

/** The session's screencast settings its subscribers want (sess_config.cast_wanted). */
int gw_ws_cast_wanted(void *ud, const char *tid, const char *sid, sess_cast_opts *o);

/* ---- the live view (view.c) ---- */

#define GW_VIEW_SECRET_BYTES 32
#define GW_VIEW_TOKEN_MAX 200     /* a token's length at most */
#define GW_VIEW_TTL_DEFAULT_S 600
#define GW_VIEW_TTL_MAX_S 3600
/* The screencast's frame-rate cap (subscribe's max_fps): the page is told a
   frame is done no more often than this, so it captures no more often. */
#define GW_CAST_FPS_DEFAULT 10
#define GW_CAST_FPS_MAX 30

/** What a view token says (gw_view_token_parse). */
typedef struct gw_view_claims {
    char tenant[SESS_TENANT_MAX];
    long long exp; /* unix seconds */
    int control;
    unsigned char mac[32];
} gw_view_claims;

/** A token for tenant's session sid until exp (unix seconds) into out (len bytes). */
int gw_view_token_make(const unsigned char *secret, size_t slen, const char *tid,
                       const char *sid, long long exp, int control, char *out, size_t len);
/**
 * Parses an untrusted token (n bytes, need not be NUL-terminated) into its
 * claims without checking its mac: 0, or RG_EUNAUTH for anything that is not
 * exactly one token's spelling.
 */
int gw_view_token_parse(const char *tok, size_t n, gw_view_claims *out);
/** Parses tok and checks its mac for session sid and its expiry against now_s: 0 or RG_EUNAUTH. */
int gw_view_token_verify(const unsigned char *secret, size_t slen, const char *tok,
                         const char *sid, long long now_s, gw_view_claims *out);
/** The secret every worker shares (Redis, made once): 0, RG_EUNAVAIL. */
int gw_view_secret(gw *g, unsigned char out[GW_VIEW_SECRET_BYTES]);
/** The handlers of session.view_token and input (wire/op.h). */
int op_view_token(gw_cmd *c);
int op_input(gw_cmd *c);

/* ---- limits (limits.c) ---- */

/** The tenant's token bucket in Redis: 0, RG_ERATE (with the wait), RG_EUNAVAIL. */
int gw_rate_check(gw *g, const char *tid, double rate, int *retry_after_ms);
/**
 * The tenant-wide concurrency limit of a worker: its thread (lease renewal,
 * idle slots given back) starts here. Needs g->redis and g->worker.
 */
int gw_limits_new(gw *g, gw_limits **out);
/** Gives this worker's slots back and stops the thread; no gw_enter may run. */
void gw_limits_free(gw_limits *l);
/**
 * Takes one of the tenant's max_concurrent slots, counted across every
 * worker, waiting in the tenant's queue (oldest first) up to
 * RG_ADMIT_WAIT_MS. 0; RG_ERATE (waited too long, or the tenant holds
 * three quarters of this worker's threads) or RG_EUNAVAIL (Redis), with
 * *retry_after_ms. Any thread; every 0 needs one gw_leave.
 */
int gw_enter(gw *g, const char *tid, int max_concurrent, int *retry_after_ms);
/** Gives the slot back (to the tenant's next command); never waits for Redis. */
void gw_leave(gw *g, const char *tid);

/* ---- URL policy (urlpolicy.c) ---- */

/** The session manager's url_check hook (see session.h); ud is the gateway. */
int gw_url_check(void *ud, const char *tid, const char *url, int may_block, char *why,
                 size_t whylen);

/**
 * The session manager's connect_check hook (egress/egress.h): may tenant
 * tid's pages connect to host on port? Resolves names and returns only the
 * addresses that passed the tenant's policy.
 */
int gw_connect_check(void *ud, const char *tid, const char *host, int port,
                     struct sockaddr_storage *addrs, size_t max, size_t *n, char *why,
                     size_t whylen);
/** Frees the cached policies (after the sessions are gone). */
void gw_url_policies_free(void);

/* ---- replies (reply.c) and the log line (metrics.c) ---- */

/** An error reply map for rc with message (and the id echoed). */
cJSON *gw_error_reply(int rc, const char *message, const cJSON *id, double ms,
                      int retry_after_ms);

/** One JSON log line per request on stderr (never keys, cookies or typed values). */
void gw_log_request(gw *g, const char *rid, const char *tid, const char *sid, const char *op,
                    int status, const char *code, double ms);

#endif
