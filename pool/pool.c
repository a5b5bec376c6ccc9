/*
 * pool.c - browsers, leases and the manager thread. See pool.h for the
 * contract and spawn.c for how a browser is started.
 *
 * Locking: one mutex (p->mu) guards every browser's state, the lease lists,
 * the wait queue and the counters. It is never held across a DevTools call,
 * a process wait or a user callback. DevTools callbacks (async replies, the
 * connection-closed notice) take it briefly to update state and wake the
 * manager.
 *
 * Lifetime: a browser struct lives until its process is reaped and no lease
 * refers to it (refs == 0); its cdp_conn is freed with it, so a lease can
 * keep calling its (failed) connection until it is released.
 */
#define _GNU_SOURCE
#include "pool/pool.h"
#include "pool/pool_int.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MOD "pool"
#define MANAGER_TICK_MS 100
#define SPAWN_BACKOFF_MAX_MS 30000

enum bstate { B_STARTING, B_READY, B_DRAINING, B_CLOSING, B_DEAD };

struct browser {
    pool *p;
    struct browser *next;
    unsigned long seq;
    pid_t guard; /* the guard process; SIGTERM to it kills the browser's group */
    cdp_conn *conn;
    char dir[PATH_MAX];
    enum bstate state;
    int crashed;      /* died unasked (counts as a restart) */
    int in_use;       /* leases and reservations */
    int refs;         /* leases pointing at this struct */
    int created;      /* contexts made on it */
    int64_t started_ms, last_ping_ms, close_deadline_ms;
    int ping_inflight;
    int ping_missed;  /* health checks in a row without an answer in time */
    int cleaned;      /* process killed and reaped, directory removed */
    int64_t pss;      /* PSS of its process tree at the last sample (bytes) */
    int pss_in_use;   /* in_use when that sample began */
    int sampled;      /* pss is a measurement */
    int sample_tried; /* a sample has read (or failed to read) its PSS: spares may come */
    int64_t base;     /* its PSS when it last had no context */
    int base_known;
    pool_pss_cache pss_cache; /* what the samples read of its processes (manager thread) */
    char why[160];
    pool_lease *leases;
    int work;                          /* work slots held: parks and restores running */
    pool_lease *spares;                /* warm contexts made ahead (pool_set_warm), by ->next */
    int n_spares;
    int warming;                       /* the warmer is making one for it */
    int64_t spare_taken_ms;            /* when a lease last took one of its warm contexts */
    struct work_waiter *wq_head, *wq_tail; /* waiting for one, first come first served */
};

struct work_waiter {
    pthread_cond_t cond;
    int granted;
    struct work_waiter *next;
};

struct pool_lease {
    pool *p;
    struct browser *b;
    pool_lease *next, *prev;
    char ctx[64], target[64], session[64];
    int lost;
    int pins;     /* the manager is calling on_lost */
    int released; /* pool_release ran while pinned: the manager frees it */
    int adopts;   /* its owner takes the new pages of its context (pool_lease_adopt) */
    int wait_ms;   /* how long its request waited for a slot */
    int create_ms; /* how long making its context and page took */
    int working;   /* holds a work slot of its browser (pool_work_begin) */
    void *token;   /* a warm context's token (pool_set_warm), until taken */
    int warm;      /* was made ahead */
    void (*on_lost)(void *ud, pool_lease *l);
    void *ud;
};

struct waiter {
    pthread_cond_t cond;
    struct browser *granted;
    struct waiter *next;
    char owner[64]; /* who asks (pool_lease_opts.owner): fair queueing by owner */
    uint64_t tag;   /* its turn: the queue serves the smallest first */
};

struct pool {
    pool_config cfg;
    char *chromium, *run_dir;
    char **extra;
    char tag[48];
    char files_dir[PATH_MAX]; /* "" until made */
    int lock_fd;

    pthread_mutex_t mu;
    pthread_condattr_t ca;
    pthread_cond_t mgr_cond;   /* wakes the manager */
    pthread_cond_t state_cond; /* browser became ready or failed to start */
    pthread_t mgr;
    int stopping;

    struct browser *browsers;
    struct waiter *qhead, *qtail;
    int qlen;
    unsigned long seq;
    int start_failures;
    int64_t next_spawn_ms;
    uint64_t restarts, recycles, contexts_created, pings_missed;

    /* The memory budget (memory.c measures; the manager thread samples). */
    int64_t mem_per_ctx;      /* what one more context is taken to cost */
    int64_t mem_sample_ms;    /* when the last sample ended; 0: none yet */
    int64_t mem_sample_us;    /* its cost */
    int64_t next_sample_ms;
    int mem_procs;
    uint64_t mem_walks; /* smaps_rollup files read by all samples */
    uint64_t mem_samples;
    uint64_t waits_memory, waits_contexts, waits_queue, waits_browsers;
    uint64_t vtime;           /* the tag of the last waiter served (fair queueing) */
    int work_queued;
    uint64_t work_waits, work_timeouts;
    /* Warm contexts: the warmer thread makes them (pool_set_warm). */
    pthread_t warmer;
    int warmer_started;
    pthread_cond_t warm_cond; /* wakes the warmer, and pool_set_warm waiting for it */
    void *(*warm_prepare)(void *ud, pool_warm_opts *o);
    void (*warm_discard)(void *ud, void *token);
    void *warm_ud;
    int warm_busy; /* the warmer is in prepare or making a context */
    uint64_t warm_made, warm_used;
    const char *last_wait;
    int64_t last_wait_ms;
};

static atomic_ulong pool_counter;

/* ---- configuration ---- */

void pool_config_default(pool_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->chromium_path = "/usr/lib/chromium/chromium";
    cfg->run_dir = "/tmp/refgate";
    cfg->browsers = POOL_BROWSERS;
    cfg->contexts_per_browser = POOL_CONTEXTS_PER_BROWSER;
    cfg->queue_max = POOL_QUEUE_MAX;
    cfg->lease_timeout_ms = POOL_LEASE_TIMEOUT_MS;
    cfg->start_timeout_ms = POOL_START_TIMEOUT_MS;
    cfg->ping_interval_ms = POOL_PING_INTERVAL_MS;
    cfg->ping_timeout_ms = POOL_PING_TIMEOUT_MS;
    cfg->ping_misses = POOL_PING_MISSES;
    cfg->close_grace_ms = POOL_CLOSE_GRACE_MS;
    cfg->recycle_after = POOL_RECYCLE_AFTER;
    cfg->max_message_bytes = CDP_MAX_MESSAGE_BYTES;
    cfg->js_heap_mb = 1024;
    cfg->memory_max = 0;
    cfg->memory_sample_ms = POOL_MEMORY_SAMPLE_MS;
    cfg->work_per_browser = POOL_WORK_PER_BROWSER;
    cfg->warm_per_browser = POOL_WARM_PER_BROWSER;
    cfg->warm_quiet_ms = POOL_WARM_QUIET_MS;
    cfg->warm_quiet_max_ms = POOL_WARM_QUIET_MAX_MS;
}

int64_t pool_memory_default(int workers)
{
    int64_t total = pool_mem_total();
    if (total <= 0)
        return 0;
    int64_t v = total / 2 / (workers > 0 ? workers : 1);
    return v < POOL_MEMORY_FLOOR ? POOL_MEMORY_FLOOR : v;
}

void pool_config_from_env(pool_config *cfg)
{
    const char *s;
    if ((s = getenv("REFGATE_CHROMIUM")) && *s)
        cfg->chromium_path = s;
    if ((s = getenv("REFGATE_RUN_DIR")) && *s)
        cfg->run_dir = s;
    cfg->browsers = (int)rg_env_long("REFGATE_BROWSERS", cfg->browsers, 1, 64);
    cfg->contexts_per_browser = (int)rg_env_long("REFGATE_CONTEXTS_PER_BROWSER",
                                                 cfg->contexts_per_browser, 1, 1000);
    cfg->queue_max = (int)rg_env_long("REFGATE_POOL_QUEUE_MAX", cfg->queue_max, 0, 100000);
    cfg->lease_timeout_ms = (int)rg_env_long("REFGATE_POOL_LEASE_TIMEOUT_MS",
                                             cfg->lease_timeout_ms, 1, 600000);
    cfg->ping_interval_ms = (int)rg_env_long("REFGATE_POOL_PING_INTERVAL_MS",
                                             cfg->ping_interval_ms, 100, 600000);
    cfg->ping_timeout_ms = (int)rg_env_long("REFGATE_POOL_PING_TIMEOUT_MS",
                                            cfg->ping_timeout_ms, 100, 600000);
    cfg->ping_misses = (int)rg_env_long("REFGATE_POOL_PING_MISSES", cfg->ping_misses, 1, 100);
    cfg->recycle_after = (int)rg_env_long("REFGATE_POOL_RECYCLE_AFTER", cfg->recycle_after, 0,
                                          INT_MAX);
    cfg->js_heap_mb = (int)rg_env_long("REFGATE_JS_HEAP_MB", cfg->js_heap_mb, 0, 1 << 20);
    cfg->max_message_bytes = (size_t)rg_env_long("REFGATE_CDP_MAX_MESSAGE_BYTES",
                                                 (long)cfg->max_message_bytes, 1024,
                                                 1L << 31);
    cfg->memory_sample_ms = (int)rg_env_long("REFGATE_MEMORY_SAMPLE_MS", cfg->memory_sample_ms,
                                             100, 600000);
    cfg->work_per_browser = (int)rg_env_long("REFGATE_RESTORES_PER_BROWSER",
                                             cfg->work_per_browser, 0, 1000);
    cfg->warm_per_browser = (int)rg_env_long("REFGATE_WARM_CONTEXTS", cfg->warm_per_browser, 0,
                                             16);
    cfg->warm_quiet_ms =
        (int)rg_env_long("REFGATE_WARM_QUIET_MS", cfg->warm_quiet_ms, 0, POOL_WARM_QUIET_MAX_MS);
    const char *mm = getenv("REFGATE_MEMORY_MAX");
    int64_t mem;
    if (mm && *mm && pool_parse_size(mm, &mem) == 0) {
        cfg->memory_max = mem;
    } else {
        if (mm && *mm)
            rg_log(RG_LOG_WARN, MOD,
                   "REFGATE_MEMORY_MAX=%s is not a size (bytes, or with K, M or G): the "
                   "default kept", mm);
        cfg->memory_max =
            pool_memory_default((int)rg_env_long("REFGATE_WORKERS", 2, 1, 1024));
    }
}

/* ---- small helpers (mu held unless said otherwise) ---- */

static void wake_manager(pool *p)
{
    pthread_cond_signal(&p->mgr_cond);
}

static int active_browsers(pool *p)
{
    int n = 0;
    for (struct browser *b = p->browsers; b; b = b->next)
        if (b->state == B_STARTING || b->state == B_READY)
            n++;
    return n;
}

/* Contexts held or being made, on every browser. */
static int contexts_in_use(pool *p)
{
    int n = 0;
    for (struct browser *b = p->browsers; b; b = b->next)
        n += b->in_use;
    return n;
}

/*
 * What the browsers cost now, as far as the pool can tell without reading
 * /proc: each browser's last sample, plus (or minus) one context's cost
 * for each context opened (or closed) on it since. A browser not yet
 * sampled counts its contexts only.
 */
static int64_t memory_estimate(pool *p)
{
    int64_t est = 0;
    for (struct browser *b = p->browsers; b; b = b->next) {
        if (b->state == B_DEAD)
            continue;
        int ctxs = b->in_use + b->n_spares;
        int64_t v = b->sampled ? b->pss + (int64_t)(ctxs - b->pss_in_use) * p->mem_per_ctx
                               : (int64_t)ctxs * p->mem_per_ctx;
        est += v > 0 ? v : 0;
    }
    return est;
}

/*
 * 1 when one more context fits the memory budget. With no context in use
 * at all one is always admitted, so that a budget below what idle browsers
 * cost still serves one session at a time rather than none.
 */
static int memory_room(pool *p)
{
    if (p->cfg.memory_max <= 0 || contexts_in_use(p) == 0)
        return 1;
    return memory_estimate(p) + p->mem_per_ctx <= p->cfg.memory_max;
}

static struct browser *pick_browser(pool *p)
{
    if (!memory_room(p))
        return NULL;
    struct browser *best = NULL;
    for (struct browser *b = p->browsers; b; b = b->next) {
        if (b->state != B_READY || b->in_use >= p->cfg.contexts_per_browser)
            continue;
        if (!best || b->in_use < best->in_use)
            best = b;
    }
    return best;
}

/* Takes w out of the queue (mu held); 0 when it was not in it. */
static int unqueue(pool *p, struct waiter *w)
{
    struct waiter **wp = &p->qhead, *prev = NULL;
    while (*wp && *wp != w) {
        prev = *wp;
        wp = &(*wp)->next;
    }
    if (!*wp)
        return 0;
    *wp = w->next;
    if (p->qtail == w)
        p->qtail = prev;
    p->qlen--;
    return 1;
}

/*
 * Start-time fair queueing by owner: a new request's tag is one past the
 * later of the last tag served and the last tag of its owner still queued,
 * and the queue serves the smallest tag (the oldest of equal ones). Each
 * owner's requests keep their order, and an owner with one request waits
 * behind at most one request of each other owner, whatever their bursts.
 */
static uint64_t fair_tag(pool *p, const char *owner)
{
    uint64_t t = p->vtime;
    for (struct waiter *w = p->qhead; w; w = w->next)
        if (w->tag > t && !strcmp(w->owner, owner))
            t = w->tag;
    return t + 1;
}

/* Hands free slots to waiting lease requests, by turns among owners (fair_tag). */
static void grant_waiters(pool *p)
{
    while (p->qhead) {
        struct browser *b = pick_browser(p);
        if (!b)
            return;
        struct waiter *w = p->qhead;
        for (struct waiter *o = p->qhead->next; o; o = o->next)
            if (o->tag < w->tag)
                w = o;
        unqueue(p, w);
        if (w->tag > p->vtime)
            p->vtime = w->tag;
        b->in_use++;
        b->refs++;
        w->granted = b;
        w->next = NULL;
        pthread_cond_signal(&w->cond);
    }
}

/*
 * Drops b's warm contexts (mu held): disposed of while the browser lives,
 * their tokens given back to whoever made them.
 */
static void drop_spares(pool *p, struct browser *b)
{
    while (b->spares) {
        pool_lease *l = b->spares;
        b->spares = l->next;
        b->n_spares--;
        b->refs--;
        if (b->state != B_DEAD && b->conn) {
            char q[128];
            snprintf(q, sizeof q, "{\"browserContextId\":\"%s\"}", l->ctx);
            cdp_call_async(b->conn, NULL, "Target.disposeBrowserContext", q,
                           POOL_DISPOSE_TIMEOUT_MS, NULL, NULL);
        }
        if (l->token && p->warm_discard)
            p->warm_discard(p->warm_ud, l->token);
        free(l);
    }
}

static void browser_die(struct browser *b, const char *why, int crashed)
{
    if (b->state == B_DEAD)
        return;
    pool *p = b->p;
    if (crashed && (b->state == B_READY || b->state == B_DRAINING))
        p->restarts++;
    if (b->state == B_STARTING)
        p->start_failures++;
    b->crashed = crashed;
    b->state = B_DEAD;
    rg_strlcpy(b->why, why, sizeof b->why);
    for (struct work_waiter *w = b->wq_head; w; w = w->next)
        pthread_cond_signal(&w->cond); /* they find it dead */
    drop_spares(p, b);
    wake_manager(p);
    pthread_cond_broadcast(&p->state_cond);
}

/* ---- DevTools callbacks (reader thread of the browser's connection) ---- */

static void on_conn_event(void *ud, const char *sid, const char *method, const cJSON *params)
{
    (void)sid;
    (void)params;
    struct browser *b = ud;
    if (method)
        return; /* only the closed notice is of interest */
    pthread_mutex_lock(&b->p->mu);
    int asked = b->state == B_CLOSING;
    browser_die(b, asked ? "closed" : "the browser's DevTools pipe closed", !asked);
    pthread_mutex_unlock(&b->p->mu);
}

/*
 * Every new page of the browser is attached paused (Target.setAutoAttach
 * with waitForDebuggerOnStart, set when the browser starts), so the owner
 * of its context can put its request checks in place before it loads
 * anything. A page nobody adopts (a lease's own first page while it is
 * made, any page of a context whose owner does not take its pages) runs on
 * at once, and the pool lets go of the session the attach made.
 */
static void on_attached(void *ud, const char *sid, const char *method, const cJSON *params)
{
    struct browser *b = ud;
    if (!method || sid || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(params, "waitingForDebugger")))
        return;
    const cJSON *child = cJSON_GetObjectItemCaseSensitive(params, "sessionId");
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(params, "targetInfo"), "browserContextId");
    if (!cJSON_IsString(child))
        return;
    int adopted = 0;
    pthread_mutex_lock(&b->p->mu);
    for (pool_lease *l = b->leases; l && cJSON_IsString(ctx) && !adopted; l = l->next)
        adopted = l->adopts && !l->lost && !strcmp(l->ctx, ctx->valuestring);
    pthread_mutex_unlock(&b->p->mu);
    if (adopted)
        return;
    cdp_call_async(b->conn, child->valuestring, "Runtime.runIfWaitingForDebugger", NULL, 5000,
                   NULL, NULL);
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"sessionId\":");
    rg_buf_json_str(&q, child->valuestring, strlen(child->valuestring));
    rg_buf_puts(&q, "}");
    if (!q.failed)
        cdp_call_async(b->conn, NULL, "Target.detachFromTarget", q.data, 5000, NULL, NULL);
    rg_buf_destroy(&q);
}

static void on_ping(void *ud, int rc, cdp_reply *r)
{
    struct browser *b = ud;
    pthread_mutex_lock(&b->p->mu);
    b->ping_inflight = 0;
    int misses = b->p->cfg.ping_misses > 0 ? b->p->cfg.ping_misses : 1;
    if (rc == 0) {
        b->ping_missed = 0;
    } else if (b->state == B_READY || b->state == B_DRAINING) {
        if (rc == RG_ETIMEOUT)
            b->p->pings_missed++;
        /*
         * A late answer is not a dead browser: on a machine short of CPU a
         * busy browser can miss one check, and replacing it would restore
         * all its sessions elsewhere, adding to the load. A broken pipe is
         * caught at once by on_closed; a frozen browser misses every check.
         */
        if (rc == RG_ETIMEOUT && ++b->ping_missed < misses) {
            rg_log(RG_LOG_WARN, MOD, "browser %lu missed a health check (%d of %d in a row)",
                   b->seq, b->ping_missed, misses);
        } else {
            char why[300];
            snprintf(why, sizeof why, "the browser failed a health check (%.200s%s)", r->error,
                     rc == RG_ETIMEOUT && misses > 1 ? ", and the ones before it" : "");
            browser_die(b, why, 1);
        }
    }
    pthread_mutex_unlock(&b->p->mu);
}

static void on_targets(void *ud, int rc, cdp_reply *r)
{
    struct browser *b = ud;
    /*
     * With --no-startup-window there should be no page yet; close any there
     * is (a binary that ignores the flag opens chrome://newtab/), since it
     * holds a renderer nobody uses. Only type "page" targets: Chromium 156
     * also lists hidden helper targets.
     */
    const cJSON *infos = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r->result, "targetInfos")
                                 : NULL;
    const cJSON *t;
    cJSON_ArrayForEach(t, infos)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "targetId");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "page") || !cJSON_IsString(id))
            continue;
        rg_buf q;
        rg_buf_init(&q);
        rg_buf_puts(&q, "{\"targetId\":");
        rg_buf_json_str(&q, id->valuestring, strlen(id->valuestring));
        rg_buf_puts(&q, "}");
        if (!q.failed)
            cdp_call_async(b->conn, NULL, "Target.closeTarget", q.data, 5000, NULL, NULL);
        rg_buf_destroy(&q);
    }
    pool *p = b->p;
    pthread_mutex_lock(&p->mu);
    if (b->state == B_STARTING) {
        if (rc < 0) {
            browser_die(b, r->error, 0);
        } else {
            b->state = B_READY;
            b->last_ping_ms = rg_now_ms();
            p->start_failures = 0;
            rg_log(RG_LOG_INFO, MOD, "browser %lu ready (pid %d) in %lld ms", b->seq,
                   (int)b->guard, (long long)(rg_now_ms() - b->started_ms));
            grant_waiters(p);
            pthread_cond_broadcast(&p->state_cond);
            /* Its idle size now, before a warm context comes (needs_spare). */
            p->next_sample_ms = 0;
            wake_manager(p);
        }
    }
    pthread_mutex_unlock(&p->mu);
}

static void on_version(void *ud, int rc, cdp_reply *r)
{
    struct browser *b = ud;
    /* New pages start paused (on_attached), before the browser is ready. */
    if (rc == 0 &&
        cdp_call_async(b->conn, NULL, "Target.setAutoAttach",
                       "{\"autoAttach\":true,\"waitForDebuggerOnStart\":true,\"flatten\":true,"
                       "\"filter\":[{\"type\":\"page\"}]}",
                       5000, NULL, NULL) == 0 &&
        cdp_call_async(b->conn, NULL, "Target.getTargets", NULL, 5000, on_targets, b) == 0)
        return;
    pthread_mutex_lock(&b->p->mu);
    if (b->state == B_STARTING)
        browser_die(b, rc < 0 ? r->error : "the browser did not answer", 0);
    pthread_mutex_unlock(&b->p->mu);
}

/* ---- the manager thread ---- */

/* Starts one browser (mu not held). */
static void start_browser(pool *p)
{
    struct browser *b = calloc(1, sizeof *b);
    if (!b)
        return;
    b->p = p;
    pthread_mutex_lock(&p->mu);
    b->seq = ++p->seq;
    pthread_mutex_unlock(&p->mu);
    snprintf(b->dir, sizeof b->dir, "%s/chromium-%s-%lu", p->run_dir, p->tag, b->seq);
    b->state = B_STARTING;
    b->started_ms = rg_now_ms();
    int rfd, wfd;
    int rc = mkdirs(b->dir);
    if (rc == 0)
        rc = spawn_browser(p->chromium, b->dir, (const char *const *)p->extra, &b->guard, &rfd,
                           &wfd);
    if (rc == 0) {
        cdp_config cc;
        cdp_config_default(&cc);
        cc.max_message_bytes = p->cfg.max_message_bytes;
        char name[32];
        snprintf(name, sizeof name, "cdp/browser-%lu", b->seq);
        cc.name = name;
        rc = cdp_conn_new(rfd, wfd, &cc, &b->conn);
    }
    if (rc == 0)
        rc = cdp_subscribe(b->conn, NULL, "Target.detachedFromTarget", on_conn_event, b) > 0 &&
                     cdp_subscribe(b->conn, NULL, "Target.attachedToTarget", on_attached, b) > 0
                 ? 0
                 : RG_EINTERNAL;
    pthread_mutex_lock(&p->mu);
    b->next = p->browsers;
    p->browsers = b;
    if (rc < 0)
        browser_die(b, "the browser process could not be started", 0);
    pthread_mutex_unlock(&p->mu);
    if (rc == 0 && cdp_call_async(b->conn, NULL, "Browser.getVersion", NULL,
                                  p->cfg.start_timeout_ms, on_version, b) < 0) {
        pthread_mutex_lock(&p->mu);
        browser_die(b, "the browser's pipe failed at once", 0);
        pthread_mutex_unlock(&p->mu);
    }
}

/* Waits up to ms for the guard to exit; returns 1 once reaped. */
static int reap_within(pid_t pid, int ms)
{
    int64_t until = rg_now_ms() + ms;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return 1;
        if (rg_now_ms() >= until)
            return 0;
        rg_sleep_ms(10);
    }
}

/* Kills and reaps a dead browser's processes and removes its directory (mu not held). */
static void clean_browser(struct browser *b)
{
    if (b->conn)
        cdp_conn_fail(b->conn, RG_ECRASHED, b->why);
    if (b->guard > 0) {
        kill(b->guard, SIGTERM);
        if (!reap_within(b->guard, 3000)) {
            rg_log(RG_LOG_ERROR, MOD, "guard %d of browser %lu did not exit: killing it",
                   (int)b->guard, b->seq);
            kill(b->guard, SIGKILL);
            reap_within(b->guard, 3000);
        }
    }
    if (b->state == B_DEAD && b->crashed)
        rg_log(RG_LOG_WARN, MOD, "browser %lu (pid %d) is gone: %s", b->seq, (int)b->guard,
               b->why);
    if (!b->crashed && b->created == 0 && strcmp(b->why, "closed") && strcmp(b->why, "recycled")) {
        char log[PATH_MAX + 16];
        snprintf(log, sizeof log, "%s/chromium.log", b->dir);
        rg_log(RG_LOG_ERROR, MOD, "browser %lu failed to start: %s", b->seq, b->why);
        log_tail(MOD, log);
    }
    rg_rmtree(b->dir);
}

/* Tells the leases of dead browsers (mu held on entry and exit; dropped around callbacks). */
static void notify_lost(pool *p, struct browser *b)
{
    for (;;) {
        pool_lease *l = b->leases;
        while (l && l->lost)
            l = l->next;
        if (!l)
            return;
        l->lost = 1;
        if (!l->on_lost)
            continue;
        l->pins++;
        pthread_mutex_unlock(&p->mu);
        l->on_lost(l->ud, l);
        pthread_mutex_lock(&p->mu);
        l->pins--;
        if (l->released && l->pins == 0)
            free(l); /* released meanwhile: it is no longer in b->leases */
    }
}

/* One pass over the browsers. Returns with mu held. */
static void manage(pool *p)
{
    int64_t now = rg_now_ms();
    struct browser **bp = &p->browsers;
    while (*bp) {
        struct browser *b = *bp;
        if (b->state == B_DEAD && !b->cleaned) {
            notify_lost(p, b);
            pthread_mutex_unlock(&p->mu);
            clean_browser(b);
            pthread_mutex_lock(&p->mu);
            b->cleaned = 1;
            notify_lost(p, b); /* leases linked while it was being cleaned */
            bp = &p->browsers; /* the list may have changed while unlocked */
            continue;
        }
        if (b->state == B_DEAD && b->refs == 0) {
            *bp = b->next;
            pthread_mutex_unlock(&p->mu);
            cdp_conn_free(b->conn);
            free(b);
            pthread_mutex_lock(&p->mu);
            bp = &p->browsers;
            continue;
        }
        if (b->state == B_STARTING && now - b->started_ms > p->cfg.start_timeout_ms)
            browser_die(b, "the browser did not answer in time after starting", 0);
        if (b->state == B_DRAINING && b->in_use == 0) {
            b->state = B_CLOSING;
            b->close_deadline_ms = now + p->cfg.close_grace_ms;
            snprintf(b->why, sizeof b->why, "recycled");
            cdp_call_async(b->conn, NULL, "Browser.close", NULL, p->cfg.close_grace_ms, NULL,
                           NULL);
        }
        if (b->state == B_CLOSING) {
            int st;
            if (waitpid(b->guard, &st, WNOHANG) == b->guard) {
                b->guard = 0;
                browser_die(b, "recycled", 0);
            } else if (now >= b->close_deadline_ms) {
                browser_die(b, "recycled", 0);
            }
        }
        if ((b->state == B_READY || b->state == B_DRAINING) && !b->ping_inflight &&
            now - b->last_ping_ms >= p->cfg.ping_interval_ms) {
            b->ping_inflight = 1;
            b->last_ping_ms = now;
            if (cdp_call_async(b->conn, NULL, "Browser.getVersion", NULL, p->cfg.ping_timeout_ms,
                               on_ping, b) < 0) {
                b->ping_inflight = 0;
                browser_die(b, "the browser's pipe is closed", 1);
            }
        }
        bp = &b->next;
    }
    if (!p->stopping && active_browsers(p) < p->cfg.browsers && now >= p->next_spawn_ms) {
        if (p->start_failures > 0) {
            int shift = p->start_failures > 6 ? 6 : p->start_failures;
            int backoff = 500 << shift;
            p->next_spawn_ms = now + (backoff > SPAWN_BACKOFF_MAX_MS ? SPAWN_BACKOFF_MAX_MS
                                                                     : backoff);
        }
        pthread_mutex_unlock(&p->mu);
        start_browser(p);
        pthread_mutex_lock(&p->mu);
    }
}

/* Closes every browser at pool_free (manager thread, mu not held). */
static void shutdown_browsers(pool *p)
{
    pthread_mutex_lock(&p->mu);
    for (struct browser *b = p->browsers; b; b = b->next) {
        if (b->state != B_DEAD) {
            b->state = B_CLOSING;
            snprintf(b->why, sizeof b->why, "closed");
            cdp_call_async(b->conn, NULL, "Browser.close", NULL, p->cfg.close_grace_ms, NULL,
                           NULL);
        }
    }
    pthread_mutex_unlock(&p->mu);
    int64_t until = rg_now_ms() + p->cfg.close_grace_ms;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        struct browser *b = p->browsers;
        if (b)
            p->browsers = b->next;
        pthread_mutex_unlock(&p->mu);
        if (!b)
            break;
        if (!b->cleaned) {
            int left = (int)(until - rg_now_ms());
            if (b->guard > 0 && left > 0 && reap_within(b->guard, left))
                b->guard = 0;
            b->state = B_DEAD;
            clean_browser(b);
        }
        cdp_conn_free(b->conn);
        for (pool_lease *l = b->leases, *n; l; l = n) {
            n = l->next;
            free(l);
        }
        free(b);
    }
}

/* CPU time of the calling thread, in microseconds. */
static int64_t thread_cpu_us(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
        return rg_now_us();
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Reads the PSS of every running browser (mu held on entry and exit,
 * dropped while /proc is read, so no lease waits on it). The next sample
 * comes memory_sample_ms later, or POOL_MEMORY_SAMPLE_COST times the CPU
 * time this one took when that is longer: measuring takes at most 1/20 of
 * a core.
 */
static void sample_memory(pool *p)
{
    enum { N = 64 };
    unsigned long seq[N];
    pid_t guard[N];
    struct browser *held[N]; /* a ref each: their caches stay while mu is dropped */
    int in_use[N], n = 0;
    for (struct browser *b = p->browsers; b && n < N; b = b->next)
        if ((b->state == B_READY || b->state == B_DRAINING) && b->guard > 0) {
            seq[n] = b->seq;
            guard[n] = b->guard;
            held[n] = b;
            b->refs++;
            in_use[n++] = b->in_use + b->n_spares;
        }
    pthread_mutex_unlock(&p->mu);
    /* The cost is this thread's CPU time: on a busy machine the wall time
       of reading /proc is mostly waiting for a core, which costs nothing. */
    int64_t t0 = thread_cpu_us();
    int64_t pss[N];
    int procs = 0, walked = 0;
    for (int i = 0; i < n; i++) {
        int k = 0, w = 0;
        pss[i] = pool_tree_pss(guard[i], &held[i]->pss_cache, &k, &w);
        procs += k;
        walked += w;
    }
    int64_t cost = thread_cpu_us() - t0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < n; i++)
        held[i]->refs--;
    int64_t over = 0;
    int ctxs = 0;
    for (struct browser *b = p->browsers; b; b = b->next) {
        for (int i = 0; i < n; i++) {
            if (b->seq != seq[i] || b->state == B_DEAD)
                continue;
            b->sample_tried = 1; /* an unreadable /proc must not keep its spares away */
            if (pss[i] < 0)
                continue;
            b->pss = pss[i];
            b->pss_in_use = in_use[i];
            b->sampled = 1;
            if (in_use[i] == 0) {
                b->base = pss[i];
                b->base_known = 1;
            } else if (b->base_known && pss[i] > b->base) {
                over += pss[i] - b->base;
                ctxs += in_use[i];
            }
        }
    }
    /* Contexts cost what the browsers grew by over their idle size. */
    if (ctxs > 0) {
        int64_t per = over / ctxs;
        p->mem_per_ctx = per < POOL_MEMORY_CONTEXT_MIN ? POOL_MEMORY_CONTEXT_MIN : per;
    }
    int64_t now = rg_now_ms();
    p->mem_sample_ms = now;
    p->mem_sample_us = cost;
    p->mem_procs = procs;
    p->mem_walks += (uint64_t)walked;
    p->mem_samples++;
    int64_t wait = cost * POOL_MEMORY_SAMPLE_COST / 1000;
    p->next_sample_ms = now + (wait > p->cfg.memory_sample_ms ? wait : p->cfg.memory_sample_ms);
    grant_waiters(p); /* the browsers may have shrunk */
    pthread_cond_broadcast(&p->warm_cond); /* a browser measured idle may take a spare now */
}

static void *manager_main(void *arg)
{
    pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        manage(p);
        if (!p->stopping && p->cfg.memory_sample_ms > 0 && rg_now_ms() >= p->next_sample_ms)
            sample_memory(p);
        if (p->stopping)
            break;
        struct timespec ts;
        rg_deadline(&ts, MANAGER_TICK_MS);
        pthread_cond_timedwait(&p->mgr_cond, &p->mu, &ts);
    }
    pthread_mutex_unlock(&p->mu);
    shutdown_browsers(p);
    return NULL;
}

/* ---- public ---- */

static void pool_destroy(pool *p)
{
    if (p->files_dir[0])
        rg_rmtree(p->files_dir);
    if (p->lock_fd >= 0) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/owner-%s.lock", p->run_dir, p->tag);
        unlink(path);
        close(p->lock_fd);
    }
    pthread_cond_destroy(&p->mgr_cond);
    pthread_cond_destroy(&p->state_cond);
    pthread_cond_destroy(&p->warm_cond);
    pthread_condattr_destroy(&p->ca);
    pthread_mutex_destroy(&p->mu);
    if (p->extra)
        for (char **a = p->extra; *a; a++)
            free(*a);
    free(p->extra);
    free(p->chromium);
    free(p->run_dir);
    free(p);
}

int pool_new(const pool_config *cfg, pool **out)
{
    *out = NULL;
    pool *p = calloc(1, sizeof *p);
    if (!p)
        return RG_ENOMEM;
    if (cfg)
        p->cfg = *cfg;
    else
        pool_config_default(&p->cfg);
    if (p->cfg.browsers < 1)
        p->cfg.browsers = 1;
    if (p->cfg.contexts_per_browser < 1)
        p->cfg.contexts_per_browser = 1;
    p->lock_fd = -1;
    p->mem_per_ctx = POOL_MEMORY_CONTEXT_GUESS;
    p->last_wait = "";
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_init(&p->ca);
    pthread_condattr_setclock(&p->ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->mgr_cond, &p->ca);
    pthread_cond_init(&p->state_cond, &p->ca);
    pthread_cond_init(&p->warm_cond, &p->ca);
    p->chromium = strdup(p->cfg.chromium_path ? p->cfg.chromium_path
                                              : "/usr/lib/chromium/chromium");
    p->run_dir = strdup(p->cfg.run_dir ? p->cfg.run_dir : "/tmp/refgate");
    size_t n_extra = 0;
    while (p->cfg.extra_args && p->cfg.extra_args[n_extra])
        n_extra++;
    p->extra = calloc(n_extra + 2, sizeof *p->extra);
    if (!p->chromium || !p->run_dir || !p->extra) {
        pool_destroy(p);
        return RG_ENOMEM;
    }
    for (size_t i = 0; i < n_extra; i++)
        if (!(p->extra[i] = strdup(p->cfg.extra_args[i]))) {
            pool_destroy(p);
            return RG_ENOMEM;
        }
    if (p->cfg.js_heap_mb > 0 &&
        asprintf(&p->extra[n_extra], "--js-flags=--max-old-space-size=%d", p->cfg.js_heap_mb) < 0) {
        p->extra[n_extra] = NULL;
        pool_destroy(p);
        return RG_ENOMEM;
    }
    p->cfg.chromium_path = p->chromium;
    p->cfg.run_dir = p->run_dir;
    p->cfg.extra_args = (const char *const *)p->extra;

    if (access(p->chromium, X_OK) < 0) {
        rg_log(RG_LOG_ERROR, MOD, "no Chromium at %s: %s (set REFGATE_CHROMIUM)", p->chromium,
               strerror(errno));
        pool_destroy(p);
        return RG_EUNAVAIL;
    }
    if (mkdirs(p->run_dir) < 0) {
        rg_log(RG_LOG_ERROR, MOD, "cannot create %s: %s", p->run_dir, strerror(errno));
        pool_destroy(p);
        return RG_EUNAVAIL;
    }
    sweep_run_dir(p->run_dir);
    snprintf(p->tag, sizeof p->tag, "%d-%lu", (int)getpid(),
             atomic_fetch_add(&pool_counter, 1) + 1);
    p->lock_fd = owner_lock(p->run_dir, p->tag);
    if (p->lock_fd < 0) {
        rg_log(RG_LOG_ERROR, MOD, "cannot lock %s/owner-%s.lock", p->run_dir, p->tag);
        pool_destroy(p);
        return RG_EUNAVAIL;
    }
    /* Sessions' files: private to this user, gone with the pool. */
    char files[PATH_MAX];
    snprintf(files, sizeof files, "%s/files-%s", p->run_dir, p->tag);
    if ((mkdir(files, 0700) < 0 && errno != EEXIST) || chmod(files, 0700) < 0) {
        rg_log(RG_LOG_ERROR, MOD, "cannot create %s: %s", files, strerror(errno));
        pool_destroy(p);
        return RG_EUNAVAIL;
    }
    memcpy(p->files_dir, files, sizeof files);
    if (pthread_create(&p->mgr, NULL, manager_main, p) != 0) {
        pool_destroy(p);
        return RG_EINTERNAL;
    }

    /* Wait for every browser, or for the start timeout with at least one. */
    struct timespec ts;
    rg_deadline(&ts, p->cfg.start_timeout_ms);
    int ready = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        ready = 0;
        for (struct browser *b = p->browsers; b; b = b->next)
            ready += b->state == B_READY;
        if (ready >= p->cfg.browsers || p->start_failures >= 3)
            break;
        if (pthread_cond_timedwait(&p->state_cond, &p->mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&p->mu);
    if (ready == 0) {
        rg_log(RG_LOG_ERROR, MOD, "no browser could be started (%s)", p->chromium);
        pool_free(p);
        return RG_EUNAVAIL;
    }
    *out = p;
    return 0;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    while (p->warm_busy)
        pthread_cond_wait(&p->warm_cond, &p->mu);
    p->stopping = 1;
    for (struct browser *b = p->browsers; b; b = b->next)
        drop_spares(p, b);
    pthread_cond_broadcast(&p->warm_cond);
    for (struct waiter *w = p->qhead; w; w = w->next)
        pthread_cond_signal(&w->cond);
    for (struct browser *b = p->browsers; b; b = b->next)
        for (struct work_waiter *w = b->wq_head; w; w = w->next)
            pthread_cond_signal(&w->cond);
    wake_manager(p);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->mgr, NULL);
    if (p->warmer_started)
        pthread_join(p->warmer, NULL);
    pool_destroy(p);
}

/* ---- work slots: parks and restores a browser runs at once ---- */

/* Hands b's free work slots to its waiters, oldest first (mu held). */
static void grant_work(pool *p, struct browser *b)
{
    while (b->wq_head && (p->cfg.work_per_browser <= 0 || b->work < p->cfg.work_per_browser)) {
        struct work_waiter *w = b->wq_head;
        b->wq_head = w->next;
        if (!b->wq_head)
            b->wq_tail = NULL;
        p->work_queued--;
        b->work++;
        w->granted = 1;
        pthread_cond_signal(&w->cond);
    }
}

/* Takes a work slot of b, waiting until dl (mu held): 0, RG_EPOOL, RG_ECRASHED or RG_EUNAVAIL. */
static int take_work(pool *p, struct browser *b, const struct timespec *dl)
{
    if (b->state == B_DEAD)
        return RG_ECRASHED;
    if (!b->wq_head && (p->cfg.work_per_browser <= 0 || b->work < p->cfg.work_per_browser)) {
        b->work++;
        return 0;
    }
    p->work_waits++;
    struct work_waiter w = {.granted = 0, .next = NULL};
    pthread_cond_init(&w.cond, &p->ca);
    if (b->wq_tail)
        b->wq_tail->next = &w;
    else
        b->wq_head = &w;
    b->wq_tail = &w;
    p->work_queued++;
    while (!w.granted && b->state != B_DEAD && !p->stopping)
        if (pthread_cond_timedwait(&w.cond, &p->mu, dl) == ETIMEDOUT)
            break;
    if (!w.granted) {
        struct work_waiter **wp = &b->wq_head, *prev = NULL;
        while (*wp && *wp != &w) {
            prev = *wp;
            wp = &(*wp)->next;
        }
        if (*wp) {
            *wp = w.next;
            if (b->wq_tail == &w)
                b->wq_tail = prev;
            p->work_queued--;
        }
    }
    pthread_cond_destroy(&w.cond);
    if (w.granted)
        return 0;
    if (p->stopping)
        return RG_EUNAVAIL;
    if (b->state == B_DEAD)
        return RG_ECRASHED;
    p->work_timeouts++;
    return RG_EPOOL;
}

static void give_work(pool *p, struct browser *b)
{
    b->work--;
    grant_work(p, b);
}

int pool_work_begin(pool_lease *l, int timeout_ms)
{
    if (!l)
        return RG_ECRASHED;
    pool *p = l->p;
    struct timespec dl;
    rg_deadline(&dl, timeout_ms > 0 ? timeout_ms : 1);
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    if (!l->working) {
        rc = l->lost ? RG_ECRASHED : take_work(p, l->b, &dl);
        l->working = rc == 0;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void pool_work_end(pool_lease *l)
{
    if (!l)
        return;
    pool *p = l->p;
    pthread_mutex_lock(&p->mu);
    if (l->working) {
        l->working = 0;
        give_work(p, l->b);
    }
    pthread_mutex_unlock(&p->mu);
}

static int create_context(struct browser *b, pool_lease *l, const pool_lease_opts *o)
{
    cdp_reply r = {.msg = NULL};
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"disposeOnDetach\":true");
    if (o && o->proxy_server) {
        rg_buf_puts(&q, ",\"proxyServer\":");
        rg_buf_json_str(&q, o->proxy_server, strlen(o->proxy_server));
        if (o->proxy_bypass) {
            rg_buf_puts(&q, ",\"proxyBypassList\":");
            rg_buf_json_str(&q, o->proxy_bypass, strlen(o->proxy_bypass));
        }
    }
    rg_buf_puts(&q, "}");
    int rc = q.failed ? RG_ENOMEM
                      : cdp_call(b->conn, NULL, "Target.createBrowserContext", q.data,
                                 POOL_CREATE_TIMEOUT_MS, &r);
    rg_buf_reset(&q);
    const cJSON *v = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r.result, "browserContextId")
                             : NULL;
    if (rc == 0 && !cJSON_IsString(v))
        rc = RG_EPROTO;
    if (rc == 0)
        rg_strlcpy(l->ctx, v->valuestring, sizeof l->ctx);
    cdp_reply_free(&r);
    if (rc < 0)
        goto out;

    rg_buf_puts(&q, "{\"url\":\"about:blank\",\"browserContextId\":");
    rg_buf_json_str(&q, l->ctx, strlen(l->ctx));
    rg_buf_puts(&q, "}");
    rc = cdp_call(b->conn, NULL, "Target.createTarget", q.data, POOL_CREATE_TIMEOUT_MS, &r);
    v = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r.result, "targetId") : NULL;
    if (rc == 0 && !cJSON_IsString(v))
        rc = RG_EPROTO;
    if (rc == 0)
        rg_strlcpy(l->target, v->valuestring, sizeof l->target);
    cdp_reply_free(&r);
    if (rc < 0)
        goto out;

    rg_buf_reset(&q);
    rg_buf_puts(&q, "{\"flatten\":true,\"targetId\":");
    rg_buf_json_str(&q, l->target, strlen(l->target));
    rg_buf_puts(&q, "}");
    rc = cdp_call(b->conn, NULL, "Target.attachToTarget", q.data, POOL_CREATE_TIMEOUT_MS, &r);
    v = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r.result, "sessionId") : NULL;
    if (rc == 0 && !cJSON_IsString(v))
        rc = RG_EPROTO;
    if (rc == 0)
        rg_strlcpy(l->session, v->valuestring, sizeof l->session);
    cdp_reply_free(&r);
out:
    if (rc < 0 && rc != RG_ECRASHED && l->ctx[0]) {
        rg_buf_reset(&q);
        rg_buf_puts(&q, "{\"browserContextId\":");
        rg_buf_json_str(&q, l->ctx, strlen(l->ctx));
        rg_buf_puts(&q, "}");
        cdp_call_async(b->conn, NULL, "Target.disposeBrowserContext", q.data,
                       POOL_DISPOSE_TIMEOUT_MS, NULL, NULL);
    }
    if (rc < 0)
        rg_log(RG_LOG_WARN, MOD, "creating a context on browser %lu failed: %s", b->seq,
               rc == RG_EPROTO ? "malformed reply" : r.error);
    rg_buf_destroy(&q);
    return rc;
}

/* ---- warm contexts (pool_set_warm) ---- */

/*
 * A ready browser short of warm contexts, with memory for one more (mu held);
 * NULL, with *wait_ms how long until one may be (at most 1000).
 *
 * Not within POOL_WARM_DELAY_MS of a lease taking one of the browser's:
 * making a context starts a renderer, about 50 ms of the browser's and a
 * core's time, and made at once it slowed the very setup whose lease took
 * the last one (Page.enable and Runtime.enable of a session.create waited
 * 40 to 60 ms behind it on 2 cores; 6 December 2026, docs/scaling.md). An
 * agent that creates sessions seconds apart finds one made in between.
 * Leases that come faster find none for a while and make their own, as
 * they mostly had to anyway; the next is still made POOL_WARM_DELAY_MS
 * after each take, however many leases come between.
 *
 * And only once the browser has had no DevTools call in flight for
 * warm_quiet_ms (cdp_conn_quiet_ms), or warm_quiet_max_ms (10 s) after
 * the delay when it never had: Target.createTarget holds the browser for 80 to
 * 200 ms (the new renderer's start), and every session's command on it
 * waits. Made a second after the take whatever ran, it was the slowest
 * click of bench/gateway's click run, 80 to 90 ms against a p50 of 5
 * (7 December 2026, docs/benchmarks.md). An agent thinking between two
 * commands leaves such a moment; a browser busy without a pause gets its
 * context ten seconds later.
 */
static struct browser *needs_spare(pool *p, int *wait_ms)
{
    *wait_ms = 1000;
    if (!p->warm_prepare || p->cfg.warm_per_browser <= 0 || p->stopping || !memory_room(p))
        return NULL;
    /* Not before the browser's first memory sample: a warm context kept
       from the start would leave it never measured without contexts, and
       what a context costs (sample_memory) never learnt. */
    int64_t now = rg_now_ms();
    for (struct browser *b = p->browsers; b; b = b->next) {
        if (b->state != B_READY || b->warming || b->n_spares >= p->cfg.warm_per_browser ||
            !(b->sample_tried || p->cfg.memory_sample_ms <= 0))
            continue;
        int64_t left = b->spare_taken_ms + POOL_WARM_DELAY_MS - now;
        if (left <= 0 && p->cfg.warm_quiet_ms > 0 && b->conn &&
            now - b->spare_taken_ms < POOL_WARM_DELAY_MS + p->cfg.warm_quiet_max_ms) {
            int64_t quiet = cdp_conn_quiet_ms(b->conn);
            if (quiet < p->cfg.warm_quiet_ms)
                left = p->cfg.warm_quiet_ms - quiet; /* at the soonest; checked again then */
        }
        if (left <= 0)
            return b;
        if (left < *wait_ms)
            *wait_ms = (int)left;
    }
    return NULL;
}

/* The warmer thread: makes a warm context whenever a browser is short of one. */
static void *warmer_main(void *arg)
{
    pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        int wait_ms;
        struct browser *b = needs_spare(p, &wait_ms);
        if (!b) {
            struct timespec ts;
            rg_deadline(&ts, wait_ms);
            pthread_cond_timedwait(&p->warm_cond, &p->mu, &ts);
            continue;
        }
        b->warming = 1;
        b->refs++;
        p->warm_busy = 1;
        void *(*prepare)(void *, pool_warm_opts *) = p->warm_prepare;
        void (*discard)(void *, void *) = p->warm_discard;
        void *ud = p->warm_ud;
        pthread_mutex_unlock(&p->mu);

        pool_warm_opts wo;
        memset(&wo, 0, sizeof wo);
        pool_lease *l = calloc(1, sizeof *l);
        void *token = l ? prepare(ud, &wo) : NULL;
        pool_lease_opts o = {.proxy_server = wo.proxy_server[0] ? wo.proxy_server : NULL,
                             .proxy_bypass = wo.proxy_bypass[0] ? wo.proxy_bypass : NULL};
        int rc = token ? create_context(b, l, &o) : RG_ENOMEM;

        pthread_mutex_lock(&p->mu);
        b->warming = 0;
        b->refs--;
        p->warm_busy = 0;
        if (rc == 0 && b->state == B_READY && !p->stopping && p->warm_prepare == prepare &&
            p->warm_ud == ud) {
            l->p = p;
            l->b = b;
            l->token = token;
            l->warm = 1;
            l->next = b->spares;
            b->spares = l;
            b->n_spares++;
            b->refs++;
            b->created++;
            p->contexts_created++;
            p->warm_made++;
            l = NULL;
            token = NULL;
        } else if (rc == 0 && b->state != B_DEAD) {
            char q[128];
            snprintf(q, sizeof q, "{\"browserContextId\":\"%s\"}", l->ctx);
            cdp_call_async(b->conn, NULL, "Target.disposeBrowserContext", q,
                           POOL_DISPOSE_TIMEOUT_MS, NULL, NULL);
        }
        pthread_cond_broadcast(&p->warm_cond); /* pool_set_warm may wait for warm_busy */
        pthread_mutex_unlock(&p->mu);
        if (token && discard)
            discard(ud, token);
        free(l);
        pthread_mutex_lock(&p->mu);
        if (rc < 0 && !p->stopping) {
            /* A browser that fails to make one: not again at once. */
            struct timespec ts;
            rg_deadline(&ts, 1000);
            pthread_cond_timedwait(&p->warm_cond, &p->mu, &ts);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void pool_set_warm(pool *p, void *(*prepare)(void *ud, pool_warm_opts *o),
                   void (*discard)(void *ud, void *token), void *ud)
{
    pthread_mutex_lock(&p->mu);
    while (p->warm_busy)
        pthread_cond_wait(&p->warm_cond, &p->mu);
    for (struct browser *b = p->browsers; b; b = b->next)
        drop_spares(p, b);
    p->warm_prepare = prepare;
    p->warm_discard = discard;
    p->warm_ud = ud;
    if (prepare && !p->warmer_started && !p->stopping && p->cfg.warm_per_browser > 0)
        p->warmer_started = pthread_create(&p->warmer, NULL, warmer_main, p) == 0;
    pthread_cond_broadcast(&p->warm_cond);
    pthread_mutex_unlock(&p->mu);
}

void *pool_lease_take_token(pool_lease *l)
{
    if (!l)
        return NULL;
    pthread_mutex_lock(&l->p->mu);
    void *t = l->token;
    l->token = NULL;
    pthread_mutex_unlock(&l->p->mu);
    return t;
}

/* Counts a lease request about to wait, by what is full (mu held). */
static void note_wait(pool *p)
{
    int ready = 0, slot = 0;
    for (struct browser *b = p->browsers; b; b = b->next)
        if (b->state == B_READY) {
            ready = 1;
            slot |= b->in_use < p->cfg.contexts_per_browser;
        }
    if (p->qhead) {
        p->waits_queue++;
        p->last_wait = "queue";
    } else if (!ready) {
        p->waits_browsers++;
        p->last_wait = "browsers";
    } else if (slot) {
        p->waits_memory++;
        p->last_wait = "memory";
    } else {
        p->waits_contexts++;
        p->last_wait = "contexts";
    }
    p->last_wait_ms = rg_now_ms();
}

int pool_has_room(pool *p)
{
    pthread_mutex_lock(&p->mu);
    int room = !p->qhead && pick_browser(p) != NULL;
    pthread_mutex_unlock(&p->mu);
    return room;
}

int pool_acquire(pool *p, int timeout_ms, pool_lease **out, int *retry_after_ms)
{
    return pool_acquire_with(p, NULL, timeout_ms, out, retry_after_ms);
}

int pool_acquire_with(pool *p, const pool_lease_opts *o, int timeout_ms, pool_lease **out,
                      int *retry_after_ms)
{
    *out = NULL;
    if (retry_after_ms)
        *retry_after_ms = 0;
    if (timeout_ms <= 0)
        timeout_ms = p->cfg.lease_timeout_ms;
    struct timespec dl;
    rg_deadline(&dl, timeout_ms);
    int64_t deadline_ms = rg_now_ms() + timeout_ms, t_asked = rg_now_ms();
    int last_rc = RG_EPOOL;

    for (;;) {
        pthread_mutex_lock(&p->mu);
        if (p->stopping) {
            pthread_mutex_unlock(&p->mu);
            return RG_EUNAVAIL;
        }
        struct browser *b = p->qhead ? NULL : pick_browser(p);
        if (b) {
            b->in_use++;
            b->refs++;
        } else {
            if (p->qlen >= p->cfg.queue_max) {
                pthread_mutex_unlock(&p->mu);
                if (retry_after_ms)
                    *retry_after_ms = POOL_RETRY_AFTER_MS;
                return RG_EPOOL;
            }
            note_wait(p);
            struct waiter w = {.granted = NULL, .next = NULL};
            rg_strlcpy(w.owner, o && o->owner ? o->owner : "", sizeof w.owner);
            w.tag = o && o->ticket && *o->ticket ? *o->ticket : fair_tag(p, w.owner);
            if (o && o->ticket)
                *o->ticket = w.tag; /* its place, should it ask again */
            pthread_cond_init(&w.cond, &p->ca);
            if (p->qtail)
                p->qtail->next = &w;
            else
                p->qhead = &w;
            p->qtail = &w;
            p->qlen++;
            while (!w.granted && !p->stopping) {
                if (pthread_cond_timedwait(&w.cond, &p->mu, &dl) == ETIMEDOUT)
                    break;
            }
            if (!w.granted)
                unqueue(p, &w); /* still queued: take ourselves out */
            pthread_cond_destroy(&w.cond);
            b = w.granted;
            if (!b) {
                int stopping = p->stopping;
                pthread_mutex_unlock(&p->mu);
                if (retry_after_ms)
                    *retry_after_ms = POOL_RETRY_AFTER_MS;
                return stopping ? RG_EUNAVAIL : last_rc;
            }
        }
        if (o && o->ticket)
            *o->ticket = 0; /* served */
        /* A restore: its context is made within its browser's bound on parks and restores. */
        int working = 0;
        if (o && o->work) {
            struct timespec wdl = dl;
            if (o->work_timeout_ms > 0)
                rg_deadline(&wdl, o->work_timeout_ms);
            int wrc = take_work(p, b, &wdl);
            if (wrc < 0) {
                b->in_use--;
                b->refs--;
                grant_waiters(p);
                wake_manager(p);
                pthread_mutex_unlock(&p->mu);
                if (wrc == RG_ECRASHED && rg_now_ms() < deadline_ms) {
                    last_rc = wrc;
                    continue;
                }
                if (retry_after_ms && wrc == RG_EPOOL)
                    *retry_after_ms = POOL_RETRY_AFTER_MS;
                return wrc;
            }
            working = 1;
        }
        /* A warm context, made ahead: no context to make, no renderer to start. */
        pool_lease *l = NULL;
        if (o && o->warm && b->spares) {
            l = b->spares;
            b->spares = l->next;
            b->n_spares--;
            b->refs--; /* the lease holds the ref taken with in_use */
            l->next = NULL;
            p->warm_used++;
            /* The next one waits until this lease has had its start
               (needs_spare); the warmer learns how long. */
            b->spare_taken_ms = rg_now_ms();
            pthread_cond_signal(&p->warm_cond);
        }
        pthread_mutex_unlock(&p->mu);

        int64_t t_made = rg_now_ms();
        int warm = l != NULL, rc = 0;
        if (!warm) {
            l = calloc(1, sizeof *l);
            rc = l ? create_context(b, l, o) : RG_ENOMEM;
        }

        pthread_mutex_lock(&p->mu);
        if (rc == 0 && b->state == B_DEAD)
            rc = RG_ECRASHED;
        if (rc == 0) {
            l->p = p;
            l->b = b;
            l->wait_ms = (int)(t_made - t_asked);
            l->create_ms = (int)(rg_now_ms() - t_made);
            l->working = working;
            l->next = b->leases;
            l->prev = NULL;
            if (b->leases)
                b->leases->prev = l;
            b->leases = l;
            if (!warm) { /* a warm one was counted when it was made */
                b->created++;
                p->contexts_created++;
            }
            if (p->cfg.recycle_after > 0 && b->created >= p->cfg.recycle_after &&
                b->state == B_READY) {
                b->state = B_DRAINING;
                drop_spares(p, b); /* nothing new on a browser to be recycled */
                p->recycles++;
                rg_log(RG_LOG_INFO, MOD, "browser %lu made %d contexts: recycling it", b->seq,
                       b->created);
                wake_manager(p);
            }
            pthread_mutex_unlock(&p->mu);
            *out = l;
            return 0;
        }
        if (working)
            give_work(p, b);
        if (l && l->token && p->warm_discard)
            p->warm_discard(p->warm_ud, l->token);
        b->in_use--;
        b->refs--;
        grant_waiters(p);
        wake_manager(p);
        pthread_mutex_unlock(&p->mu);
        free(l);
        /* A browser that died under us: another one may still serve in time. */
        if ((rc == RG_ECRASHED || rc == RG_ETIMEOUT) && rg_now_ms() < deadline_ms) {
            last_rc = rc;
            continue;
        }
        if (retry_after_ms && rg_err_transient(rc))
            *retry_after_ms = POOL_RETRY_AFTER_MS;
        return rc;
    }
}

void pool_release(pool_lease *l)
{
    if (!l)
        return;
    pool *p = l->p;
    struct browser *b = l->b;
    if (!l->lost && !cdp_conn_err(b->conn, NULL, 0)) {
        char q[128];
        snprintf(q, sizeof q, "{\"browserContextId\":\"%s\"}", l->ctx);
        cdp_reply r;
        int rc =
            cdp_call(b->conn, NULL, "Target.disposeBrowserContext", q, POOL_DISPOSE_TIMEOUT_MS, &r);
        if (rc < 0 && rc != RG_ECRASHED)
            rg_log(RG_LOG_WARN, MOD, "disposing of a context failed: %s", r.error);
        cdp_reply_free(&r);
    }
    pthread_mutex_lock(&p->mu);
    if (l->prev)
        l->prev->next = l->next;
    else
        b->leases = l->next;
    if (l->next)
        l->next->prev = l->prev;
    if (l->working) {
        l->working = 0;
        give_work(p, b);
    }
    if (l->token && p->warm_discard)
        p->warm_discard(p->warm_ud, l->token);
    l->token = NULL;
    b->in_use--;
    b->refs--;
    if (b->state == B_READY)
        grant_waiters(p);
    pthread_cond_signal(&p->warm_cond); /* memory for a warm context, maybe */
    if (b->in_use == 0 || b->state == B_DEAD)
        wake_manager(p);
    if (l->pins)
        l->released = 1;
    else
        free(l);
    pthread_mutex_unlock(&p->mu);
}

cdp_conn *pool_lease_conn(pool_lease *l)
{
    return l->b->conn;
}

const char *pool_lease_session(pool_lease *l)
{
    return l->session;
}

const char *pool_lease_target(pool_lease *l)
{
    return l->target;
}

const char *pool_lease_context(pool_lease *l)
{
    return l->ctx;
}

pid_t pool_lease_guard(pool_lease *l)
{
    pthread_mutex_lock(&l->p->mu);
    pid_t pg = l->b->guard;
    pthread_mutex_unlock(&l->p->mu);
    return pg;
}

void pool_lease_times(const pool_lease *l, int *wait_ms, int *create_ms)
{
    *wait_ms = l ? l->wait_ms : 0;
    *create_ms = l ? l->create_ms : 0;
}

int pool_lease_lost(pool_lease *l)
{
    pthread_mutex_lock(&l->p->mu);
    int lost = l->lost || l->b->state == B_DEAD;
    pthread_mutex_unlock(&l->p->mu);
    return lost;
}

void pool_lease_adopt(pool_lease *l, int on)
{
    pthread_mutex_lock(&l->p->mu);
    l->adopts = on;
    pthread_mutex_unlock(&l->p->mu);
}

int pool_lease_adopts(pool_lease *l)
{
    pthread_mutex_lock(&l->p->mu);
    int on = l->adopts && !l->lost;
    pthread_mutex_unlock(&l->p->mu);
    return on;
}

void pool_lease_on_lost(pool_lease *l, void (*fn)(void *ud, pool_lease *l), void *ud)
{
    pthread_mutex_lock(&l->p->mu);
    int lost = l->lost;
    if (!lost) {
        l->on_lost = fn;
        l->ud = ud;
    }
    pthread_mutex_unlock(&l->p->mu);
    if (lost && fn)
        fn(ud, l);
}

const char *pool_files_dir(const pool *p)
{
    return p->files_dir;
}

void pool_get_stats(pool *p, pool_stats *st)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_lock(&p->mu);
    for (struct browser *b = p->browsers; b; b = b->next) {
        if (b->state != B_DEAD)
            st->browsers++;
        if (b->state == B_READY)
            st->browsers_ready++;
        st->contexts_in_use += b->in_use;
        if (b->state != B_DEAD && b->sampled)
            st->memory_measured += b->pss;
    }
    int64_t now = rg_now_ms();
    st->contexts_max = st->browsers_ready * p->cfg.contexts_per_browser;
    st->memory_max = p->cfg.memory_max;
    st->memory_estimate = memory_estimate(p);
    st->memory_per_context = p->mem_per_ctx;
    st->memory_age_ms = p->mem_sample_ms ? now - p->mem_sample_ms : -1;
    st->memory_sample_us = p->mem_sample_us;
    st->memory_procs = p->mem_procs;
    st->memory_samples = p->mem_samples;
    st->memory_walks = p->mem_walks;
    st->waits_memory = p->waits_memory;
    st->waits_contexts = p->waits_contexts;
    st->waits_queue = p->waits_queue;
    st->waits_browsers = p->waits_browsers;
    st->last_wait = p->last_wait;
    st->last_wait_age_ms = p->last_wait_ms ? now - p->last_wait_ms : -1;
    st->queue_depth = p->qlen;
    for (struct browser *b = p->browsers; b; b = b->next)
        st->work_busy += b->work;
    st->work_queued = p->work_queued;
    st->work_waits = p->work_waits;
    st->work_timeouts = p->work_timeouts;
    for (struct browser *b = p->browsers; b; b = b->next)
        st->warm_ready += b->n_spares;
    st->warm_made = p->warm_made;
    st->warm_used = p->warm_used;
    st->restarts = p->restarts;
    st->pings_missed = p->pings_missed;
    st->recycles = p->recycles;
    st->contexts_created = p->contexts_created;
    pthread_mutex_unlock(&p->mu);
}

int pool_guards(pool *p, pid_t *out, int max)
{
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (struct browser *b = p->browsers; b && n < max; b = b->next)
        if (b->state != B_DEAD && b->guard > 0)
            out[n++] = b->guard;
    pthread_mutex_unlock(&p->mu);
    return n;
}
