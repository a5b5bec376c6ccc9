/*
 * gateway.h - refgate-server: docs/protocol.md over FastCGI (behind nginx) and
 * WebSocket, on top of sessions (session/), refs (registry/), the browser
 * pool (pool/) and tenants (tenant/).
 *
 * A gateway is one worker process: its own pool of browsers, a share of the
 * sessions (any worker can serve any session: they live in Redis), N
 * FastCGI threads and one WebSocket thread. Commands on one session run one
 * at a time in arrival order; different sessions run in parallel.
 *
 * gw_handle_http is the whole HTTP side as a function (FastCGI and the tests
 * call it); gw_command runs one command map and is shared by HTTP, the
 * WebSocket and `act` steps.
 */
#ifndef GATEWAY_H
#define GATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/rg.h"

typedef struct gw gw;

typedef struct gw_config {
    const char *worker_id;   /* REFGATE_WORKER_ID [w<pid>] */
    const char *fcgi_listen; /* REFGATE_FCGI_LISTEN [127.0.0.1:9100]: host:port or a socket path */
    const char *ws_listen;   /* REFGATE_WS_LISTEN [127.0.0.1:9200]: host:port, "" for none */
    int threads;             /* REFGATE_GATEWAY_THREADS [16]: FastCGI threads */
    size_t max_body;         /* REFGATE_MAX_BODY_BYTES [1 MiB] */
    int64_t idempotency_ms;  /* how long a reply is kept for its idempotency_key [10 min] */
    int http_command_max_ms; /* REFGATE_HTTP_COMMAND_MAX_MS [100000]: the longest a command over
                                HTTP may take, waiting for its session included; below nginx's
                                fastcgi_read_timeout (120 s), so that nginx never gives up first */
} gw_config;

void gw_config_default(gw_config *cfg);
void gw_config_from_env(gw_config *cfg);

/**
 * Starts a gateway: connects Redis (it need not be up yet), starts the pool
 * (RG_EUNAVAIL when no browser starts) and the session manager. Reads the
 * pool, registry and session settings from the environment.
 */
int gw_new(const gw_config *cfg, gw **out, char *err, size_t errlen);
/** Parks every live session (a rolling restart loses none), closes the browsers. */
void gw_free(gw *g);

/**
 * What a command leaves to do once its reply is on its way: the session's
 * checkpoint, the snapshot event, letting the next command in. The session
 * stays held until then, so the next command sees the checkpoint.
 */
typedef struct gw_after {
    void *s;               /* the held session, NULL when nothing is left */
    int full;
    int snapshot;
    char tenant[64], sid[48], op[24];
} gw_after;

/** One HTTP request, borrowed. */
typedef struct gw_http_req {
    const char *method;        /* "GET", "POST", "DELETE" */
    const char *path;          /* without the query */
    const char *query;         /* after the '?', may be NULL */
    const char *content_type;  /* may be NULL */
    const char *accept;        /* may be NULL */
    const char *authorization; /* the header, may be NULL */
    const char *request_id;    /* X-Request-Id, may be NULL */
    const char *mcp_session;   /* Mcp-Session-Id (POST /v1/mcp), may be NULL */
    const void *body;
    size_t body_len;
    int body_too_large;        /* the transport saw more than max_body bytes */
} gw_http_req;

typedef struct gw_http_resp {
    int status;
    const char *content_type;
    int retry_after_s;         /* > 0: send Retry-After */
    rg_buf body;
    const char *code;          /* the error code for the log line, NULL when none (static) */
    gw_after after;            /* run it once the response is sent */
    char mcp_session[72];      /* "": none; else sent as Mcp-Session-Id (initialize) */
} gw_http_resp;

/**
 * Handles one request; resp->body must be rg_buf_destroy'd by the caller,
 * who sends the response and then calls gw_after_run(g, &resp->after).
 */
void gw_handle_http(gw *g, const gw_http_req *req, gw_http_resp *resp);

/** Who sends a command: the tenant the API key belongs to. */
typedef struct gw_caller {
    const char *tenant;
    int allow_eval;
    const char *request_id;
    int websocket;             /* subscribe is allowed, id is required */
    int max_sessions;          /* the tenant's quota, live and parked together */
    const char *user_agent;    /* the tenant's browser defaults, NULL for none */
    const char *locale;
    int viewer;                /* came with a view token: subscribe and input only */
    int control;               /* the view token lets it send input */
    int64_t deadline_ms;       /* over HTTP: answer by then (rg_now_ms clock); 0: no bound */
} gw_caller;


/**
 * Runs one command map on session sid (NULL on POST /v1/sessions) and
 * returns the reply map (caller owns it); *status gets the HTTP status and
 * *retry_after_ms a hint for 429/503 (0 when none). With after, the
 * checkpoint is left for gw_after_run once the reply is sent; without, it
 * is done before returning.
 */
cJSON *gw_command(gw *g, const gw_caller *who, const char *sid, const cJSON *cmd, int *status,
                  int *retry_after_ms, gw_after *after);
/**
 * The checks gw_command makes before it touches Redis or a session: the
 * command map's keys and their types, the op, its args against the op's
 * table, the route (sid NULL is POST /v1/sessions) and who's rights (eval,
 * WebSocket-only ops, the WebSocket's id). Returns 0, or the code gw_command
 * would reply with (RG_EBADREQ, RG_EFORBIDDEN) and its message in err
 * (errlen bytes; NULL is fine). Needs no gateway: any thread, for tests and
 * fuzzers. act steps are checked when they run, not here.
 */
int gw_check_command(const gw_caller *who, const char *sid, const cJSON *cmd, char *err,
                     size_t errlen);
/** Finishes what gw_command left (no-op when nothing is left). */
void gw_after_run(gw *g, gw_after *after);

/** Serves FastCGI on cfg.fcgi_listen with cfg.threads threads until gw_stop. */
int gw_serve(gw *g);
/** Asks gw_serve to stop taking work and return once running requests are done. */
void gw_stop(gw *g);

/** The Prometheus text of this worker into out. */
void gw_metrics_text(gw *g, rg_buf *out);

#endif
