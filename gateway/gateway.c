/*
 * gateway.c - a worker's pieces, started and stopped in order: Redis
 * connections, the registry store, the browser pool, the session manager,
 * the tenant cache, the concurrency limits' thread, the WebSocket thread.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REDIS_START_WAIT_MS 30000

void gw_config_default(gw_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    static char worker[32];
    snprintf(worker, sizeof worker, "w%d", (int)getpid());
    cfg->worker_id = worker;
    cfg->fcgi_listen = "127.0.0.1:9100";
    cfg->ws_listen = "127.0.0.1:9200";
    cfg->threads = 16;
    cfg->max_body = 1u << 20;
    cfg->idempotency_ms = 10 * 60 * 1000;
    cfg->http_command_max_ms = 100000;
}

void gw_config_from_env(gw_config *cfg)
{
    const char *v;
    if ((v = getenv("REFGATE_WORKER_ID")) && *v)
        cfg->worker_id = v;
    if ((v = getenv("REFGATE_FCGI_LISTEN")) && *v)
        cfg->fcgi_listen = v;
    if ((v = getenv("REFGATE_WS_LISTEN")))
        cfg->ws_listen = v;
    cfg->threads = (int)rg_env_long("REFGATE_GATEWAY_THREADS", cfg->threads, 1, 256);
    cfg->max_body =
        (size_t)rg_env_long("REFGATE_MAX_BODY_BYTES", (long)cfg->max_body, 1024, 64L << 20);
    cfg->http_command_max_ms = (int)rg_env_long("REFGATE_HTTP_COMMAND_MAX_MS",
                                                cfg->http_command_max_ms, 1000, 3600000);
}

/* The registry store, once Redis answers (it may still be starting). */
static reg_store *open_store(gw *g, char *err, size_t errlen)
{
    reg_redis_config rc;
    reg_redis_config_default(&rc);
    reg_redis_config_from_env(&rc);
    rc.conn = g->redis;
    rc.ttl_ms = rg_env_long("REFGATE_DORMANT_TTL_S", 86400, 10, 30L * 86400) * 1000;
    int64_t deadline = rg_now_ms() + REDIS_START_WAIT_MS;
    for (;;) {
        reg_store *s = reg_store_redis_new(&rc, err, errlen);
        if (s || rg_now_ms() > deadline)
            return s;
        rg_sleep_ms(200);
    }
}

/* Page events (reader thread) to the sink. */
static void page_event(void *ud, const char *tid, const char *sid, const char *kind, cJSON *data)
{
    gw_event(ud, tid, sid, kind, data);
}

/*
 * The session manager's downloads_allowed hook: the tenant's allow_downloads
 * as Redis holds it now, read when a session gets a context; no when it
 * cannot be read.
 */
static int downloads_allowed(void *ud, const char *tid)
{
    gw *g = ud;
    tenant t;
    int ok = tenant_get(g->redis, tid, &t) == 0 && t.allow_downloads;
    tenant_destroy(&t);
    return ok;
}

int gw_new(const gw_config *cfg, gw **out, char *err, size_t errlen)
{
    *out = NULL;
    gw *g = calloc(1, sizeof *g);
    if (!g)
        return RG_ENOMEM;
    g->cfg = *cfg;
    snprintf(g->http_cut, sizeof g->http_cut, "a command over HTTP answers within %d ms",
             cfg->http_command_max_ms);
    /* Commands and pages send their events to the WebSocket's subscribers. */
    g->events = (gw_events){.wants = gw_ws_wants, .emit = gw_ws_event};
    snprintf(g->worker, sizeof g->worker, "%s", cfg->worker_id);
    g->cfg.worker_id = g->worker;
    g->listen_fd = -1;
    g->started_ms = rg_now_ms();
    pthread_mutex_init(&g->mu, NULL);
    rg_redis_config rcfg;
    rg_redis_config_default(&rcfg);
    rg_redis_config_from_env(&rcfg);
    int rc = rg_redis_new(&rcfg, &g->redis, err, errlen);
    if (rc < 0)
        goto fail;
    if (!(g->store = open_store(g, err, errlen))) {
        rc = RG_EUNAVAIL;
        goto fail;
    }
    /* Tenants written before the keys had a hash tag move once. */
    size_t moved;
    if (tenant_upgrade(g->redis, &moved) < 0)
        rg_log(RG_LOG_WARN, "gateway", "could not move the tenants to their tagged keys (%s)",
               rg_redis_where(g->redis));
    pool_config pc;
    pool_config_default(&pc);
    pool_config_from_env(&pc);
    if ((rc = pool_new(&pc, &g->pool)) < 0) {
        snprintf(err, errlen, "no browser started (see the Chromium log under %s)", pc.run_dir);
        goto fail;
    }
    sess_config sc;
    sess_config_default(&sc);
    sess_config_from_env(&sc);
    sc.worker_id = g->worker;
    sc.capacity = pc.browsers * pc.contexts_per_browser;
    sc.on_event = page_event;
    sc.event_ud = g;
    sc.cast_wanted = gw_ws_cast_wanted;
    sc.cast_ud = g;
    sc.url_check = gw_url_check;
    sc.url_ud = g;
    sc.downloads_allowed = downloads_allowed;
    sc.downloads_ud = g;
    /* Every connection of every page through the egress proxy, checked on
       the address it goes to (REFGATE_EGRESS=0 turns it off, for
       deployments that enforce egress in the network instead). */
    if (rg_env_long("REFGATE_EGRESS", 1, 0, 1)) {
        sc.connect_check = gw_connect_check;
        sc.connect_ud = g;
    } else {
        rg_log(RG_LOG_WARN, "gateway",
               "REFGATE_EGRESS=0: the URL policy sees the URLs that tabs, their frames and "
               "their workers ask for; WebSockets reach any address, and a name checked is "
               "resolved again by the browser (docs/policy.md): enforce egress in the network");
    }
    if ((rc = sess_mgr_new(&sc, g->pool, g->redis, g->store, &g->sessions)) < 0) {
        snprintf(err, errlen, "cannot start the session manager");
        goto fail;
    }
    g->tenants = tenant_cache_new(g->redis, (int)rg_env_long("REFGATE_KEY_CACHE_MS", 2000, 0,
                                                                 60000),
                                  4096);
    if (!g->tenants) {
        rc = RG_ENOMEM;
        goto fail;
    }
    if ((rc = gw_limits_new(g, &g->limits)) < 0) {
        snprintf(err, errlen, "cannot start the concurrency limits");
        goto fail;
    }
    if (cfg->ws_listen && *cfg->ws_listen && (rc = gw_ws_start(g, err, errlen)) < 0)
        goto fail;
    *out = g;
    return 0;
fail:
    gw_free(g);
    return rc < 0 ? rc : RG_EINTERNAL;
}

void gw_free(gw *g)
{
    if (!g)
        return;
    gw_ws_stop(g);
    gw_limits_free(g->limits); /* after the last command: its slots go back at once */
    if (g->sessions) {
        int failed = sess_park_all(g->sessions);
        if (failed)
            rg_log(RG_LOG_WARN, "gateway", "%d sessions could not be parked at shutdown", failed);
        sess_mgr_free(g->sessions);
    }
    tenant_cache_free(g->tenants);
    pool_free(g->pool);
    gw_ws_free(g);
    gw_url_policies_free();
    reg_store_free(g->store);
    rg_redis_free(g->redis);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
