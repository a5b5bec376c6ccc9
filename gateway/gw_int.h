/*
 * gw_int.h - private to gateway/: the gateway structure, metrics, the
 * command context shared by dispatch.c (ops), http.c (routes), fcgi.c,
 * ws.c and main.c.
 */
#ifndef GW_INT_H
#define GW_INT_H

#include <pthread.h>

#include "../pool/pool.h"
#include "../registry/registry.h"
#include "../session/session.h"
#include "../tenant/tenant.h"
#include "gateway.h"
#include "wire/wire.h"

/* ---- metrics ---- */

#define GW_OPS_MAX 40
#define GW_CODES 26
#define GW_BUCKETS 14

typedef struct gw_metrics {
    uint64_t commands[GW_OPS_MAX][GW_CODES]; /* by op index and error index (0: ok) */
    uint64_t latency[GW_OPS_MAX][GW_BUCKETS + 1];
    double latency_sum[GW_OPS_MAX];
    uint64_t http[6];                        /* responses by status class 1xx..5xx */
    uint64_t redis_errors;
    uint64_t ws_connections;
} gw_metrics;

extern const int gw_buckets_ms[GW_BUCKETS];

/** Counts one command (op index, error code or 0, milliseconds). */
void gw_metrics_count(gw *g, int op, int rc, double ms);

/* ---- the gateway ---- */

struct gw_ws;
typedef struct gw_limits gw_limits;

struct gw {
    gw_config cfg;
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
};

/* ---- ops (dispatch.c) ---- */

/** The name of op index i, or NULL past the end (for metrics). */
const char *gw_op_name(int i);
/** The index of op, or -1. */
int gw_op_index(const char *op);

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

/* ---- replies (dispatch.c) ---- */

/** An error reply map for rc with message (and the id echoed). */
cJSON *gw_error_reply(int rc, const char *message, const cJSON *id, double ms,
                      int retry_after_ms);

/** One JSON log line per request on stderr (never keys, cookies or typed values). */
void gw_log_request(gw *g, const char *rid, const char *tid, const char *sid, const char *op,
                    int status, const char *code, double ms);

#endif
