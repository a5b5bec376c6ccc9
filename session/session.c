/*
 * session.c - the session table of one worker, ownership in Redis (leases,
 * heartbeat, park requests), commands one at a time per session, idle
 * parking, checkpoints, close and info. Capture and restore are in park.c,
 * the DevTools event handlers in events.c.
 */
#define _GNU_SOURCE
#include "sess_int.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- Redis scripts ---- */

/* KEYS meta lease park want; ARGV me lease_ms now. Makes this worker the
   owner unless another live one holds the lease; returns the session's meta
   and parked state in the same round trip. */
static rg_redis_script claim_script = {
    "if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end\n"
    "local owner = redis.call('GET', KEYS[2])\n"
    "if owner and owner ~= ARGV[1] then\n"
    "  return {'busy', owner}\n"
    "end\n"
    "redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])\n"
    "redis.call('DEL', KEYS[4])\n"
    "local prev = redis.call('HGET', KEYS[1], 'state') or ''\n"
    "if owner then prev = 'mine' end\n"
    "redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'state', 'live', 'last_used', ARGV[3])\n"
    "return {'ok', prev, redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[3]) or ''}\n",
    ""};

/* KEYS lease want meta park; ARGV me lease_ms ttl. -1: no longer ours; 1:
   asked to park; 0. A lease that expired while Redis was away (its clock ran
   on) is taken back when nobody else claimed the session meanwhile. A live
   session's meta and checkpoint live on while it is live: only commands that
   change the page write a checkpoint, so one only read from would otherwise
   lose them after the dormant TTL (and with them its listing and its quota
   slot) while it still runs here. */
static rg_redis_script beat_script = {
    "local v = redis.call('GET', KEYS[1])\n"
    "if not v then\n"
    "  if redis.call('HGET', KEYS[3], 'owner') ~= ARGV[1] then return -1 end\n"
    "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "elseif v ~= ARGV[1] then return -1\n"
    "else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
    "redis.call('PEXPIRE', KEYS[3], ARGV[3])\n"
    "redis.call('PEXPIRE', KEYS[4], ARGV[3])\n"
    "return redis.call('EXISTS', KEYS[2])\n",
    ""};

/* KEYS meta lease park want; ARGV me ttl now state url title sx sy blob
   lease_ms. Writes a checkpoint (state 'live') or a park (state 'parked',
   lease and request gone) only while this worker owns the session (its
   lease, or no lease and the meta still naming it after a Redis restart). */
static rg_redis_script save_script = {
    "local v = redis.call('GET', KEYS[2])\n"
    "if v ~= ARGV[1] then\n"
    "  if v or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end\n"
    "  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[10])\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'state', ARGV[4], 'url', ARGV[5], 'title', ARGV[6],\n"
    "           'sx', ARGV[7], 'sy', ARGV[8], 'last_used', ARGV[3])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "if ARGV[9] ~= '' then redis.call('SET', KEYS[3], ARGV[9], 'PX', ARGV[2])\n"
    "elseif redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end\n"
    "if ARGV[4] == 'parked' then\n"
    "  redis.call('HSET', KEYS[1], 'owner', '')\n"
    "  redis.call('DEL', KEYS[2], KEYS[4])\n"
    "end\n"
    "return 1\n",
    ""};

/* KEYS meta lease new; ARGV reserved ttl me lease_ms field value...
   Writes a new session (meta and lease). With reserved 1 only while the
   create's quota marker is still there, and consumes it: 1, or 0 when it
   lapsed (nothing written). */
static rg_redis_script create_script = {
    "if ARGV[1] == '1' and redis.call('DEL', KEYS[3]) == 0 then return 0 end\n"
    "redis.call('HSET', KEYS[1], unpack(ARGV, 5))\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])\n"
    "return 1\n",
    ""};

/* KEYS lease; ARGV me. Lets go of a lease only if it is still ours. */
static rg_redis_script release_script = {
    "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end\n"
    "return 1\n",
    ""};

/* ---- configuration ---- */

void sess_config_default(sess_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    static char worker[32];
    snprintf(worker, sizeof worker, "w%d", (int)getpid());
    cfg->worker_id = worker;
    cfg->lease_ms = 5000;
    cfg->heartbeat_ms = 1000;
    cfg->dormant_ttl_ms = 24LL * 3600 * 1000;
    cfg->idle_park_ms = 300 * 1000;
    cfg->park_lru = 1;
    cfg->full_checkpoint_ms = 5000;
    cfg->park_max_bytes = 8u << 20;
    cfg->capacity = RG_POOL_BROWSERS * RG_POOL_CONTEXTS_PER_BROWSER;
    reg_config_default(&cfg->reg);
}

void sess_config_from_env(sess_config *cfg)
{
    const char *w = getenv("REFGATE_WORKER_ID");
    if (w && *w)
        cfg->worker_id = w;
    cfg->worker_index = (int)rg_env_long("REFGATE_WORKER_INDEX", cfg->worker_index, 0, 1024);
    cfg->workers = (int)rg_env_long("REFGATE_WORKERS", cfg->workers, 0, 1024);
    cfg->lease_ms = (int)rg_env_long("REFGATE_SESSION_LEASE_MS", cfg->lease_ms, 500, 600000);
    cfg->heartbeat_ms = cfg->lease_ms / 5;
    cfg->dormant_ttl_ms =
        rg_env_long("REFGATE_DORMANT_TTL_S", cfg->dormant_ttl_ms / 1000, 10, 30L * 86400) * 1000;
    cfg->idle_park_ms =
        rg_env_long("REFGATE_IDLE_PARK_S", cfg->idle_park_ms / 1000, 0, 30L * 86400) * 1000;
    cfg->park_lru = (int)rg_env_long("REFGATE_PARK_LRU", cfg->park_lru, 0, 1);
    cfg->full_checkpoint_ms =
        rg_env_long("REFGATE_CHECKPOINT_FULL_MS", cfg->full_checkpoint_ms, 0, 3600000);
    cfg->park_max_bytes = (size_t)rg_env_long("REFGATE_PARK_MAX_BYTES", (long)cfg->park_max_bytes,
                                              4096, 256L << 20);
    long browsers = rg_env_long("REFGATE_BROWSERS", RG_POOL_BROWSERS, 1, 64);
    long per = rg_env_long("REFGATE_CONTEXTS_PER_BROWSER", RG_POOL_CONTEXTS_PER_BROWSER, 1, 256);
    cfg->capacity = (int)(browsers * per);
    reg_config_from_env(&cfg->reg);
}

/* ---- keys ---- */

static void key(char *out, size_t len, const sess *s, const char *kind)
{
    snprintf(out, len, "rg:%s:%s", s->tag, kind);
}

static void index_key(char *out, size_t len, const char *tenant)
{
    snprintf(out, len, "rg:t:%s:sessions", tenant);
}

static int valid_name(const char *s, size_t max)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (n + 1 >= max ||
            !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return 0;
    }
    return n > 0;
}

/* ---- the table and per-session FIFO ---- */

static sess *find(sess_mgr *m, const char *tenant, const char *sid)
{
    for (sess *s = m->table; s; s = s->next)
        if (!strcmp(s->id, sid) && !strcmp(s->tenant, tenant))
            return s;
    return NULL;
}

static sess *sess_alloc(sess_mgr *m, const char *tenant, const char *sid)
{
    sess *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->m = m;
    snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
    snprintf(s->id, sizeof s->id, "%s", sid);
    snprintf(s->tag, sizeof s->tag, "{t:%s:s:%s}", tenant, sid);
    snprintf(s->page_key, sizeof s->page_key, "%s:%s", s->tag, SESS_PAGE);
    s->width = 1280;
    s->height = 800;
    return s;
}

/* What the last checkpoint wrote is no longer known (a new lease, a restore, a drop). */
static void forget_ckpt(sess *s)
{
    free(s->ckpt_url);
    free(s->ckpt_title);
    free(s->ckpt_origin);
    s->ckpt_url = s->ckpt_title = s->ckpt_origin = NULL;
    s->ckpt_valid = 0;
}

static void sess_free_locals(sess *s)
{
    forget_ckpt(s);
    reg_page_free(s->reg);
    s->reg = NULL;
    free(s->user_agent);
    free(s->locale);
    free(s->timezone);
    s->user_agent = s->locale = s->timezone = NULL;
}

static void table_add(sess_mgr *m, sess *s)
{
    s->next = m->table;
    m->table = s;
    s->in_table = 1;
}

static void table_remove(sess_mgr *m, sess *s)
{
    for (sess **pp = &m->table; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    s->in_table = 0;
}

/* Drops a reference (m->mu held); frees s once it left the table and nobody has it. */
static void unref_locked(sess_mgr *m, sess *s)
{
    if (--s->refs == 0 && !s->in_table) {
        sess_free_locals(s);
        free(s);
    }
    (void)m;
}

/* Waits (m->mu held) until s is ours, in arrival order. 0, or RG_ECONFLICT at the deadline. */
static int hold_locked(sess_mgr *m, sess *s, int timeout_ms)
{
    if (!s->busy && !s->qhead) {
        s->busy = 1;
        return 0;
    }
    struct sess_waiter w = {.granted = 0};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &ca);
    pthread_condattr_destroy(&ca);
    if (s->qtail)
        s->qtail->next = &w;
    else
        s->qhead = &w;
    s->qtail = &w;
    struct timespec dl;
    rg_deadline(&dl, timeout_ms);
    while (!w.granted)
        if (pthread_cond_timedwait(&w.cv, &m->mu, &dl) == ETIMEDOUT)
            break;
    int rc = 0;
    if (!w.granted) {
        struct sess_waiter **pp = &s->qhead, *prev = NULL;
        for (; *pp && *pp != &w; prev = *pp, pp = &(*pp)->next)
            ;
        if (*pp)
            *pp = w.next;
        if (s->qtail == &w)
            s->qtail = prev;
        rc = RG_ECONFLICT;
    }
    pthread_cond_destroy(&w.cv);
    return rc;
}

/* Lets the next command in (m->mu held); a session that is no longer live here leaves. */
static void unhold_locked(sess_mgr *m, sess *s)
{
    struct sess_waiter *w = s->qhead;
    if (w) {
        s->qhead = w->next;
        if (!s->qhead)
            s->qtail = NULL;
        w->next = NULL;
        w->granted = 1; /* ownership passes on: busy stays set */
        pthread_cond_signal(&w->cv);
    } else {
        s->busy = 0;
        if (!s->live && s->in_table)
            table_remove(m, s);
    }
    unref_locked(m, s);
}

/* Takes an idle session for the heartbeat or an LRU park (m->mu held). */
static int hold_idle_locked(sess *s)
{
    if (s->busy || s->qhead || !s->live)
        return 0;
    s->busy = 1;
    s->refs++;
    return 1;
}

/* ---- Redis helpers ---- */

static int release_lease(sess *s)
{
    char lk[256];
    key(lk, sizeof lk, s, "lease");
    redisContext *c = rg_redis_take(s->m->redis);
    if (!c)
        return RG_EUNAVAIL;
    const char *args[] = {lk, s->m->worker};
    redisReply *rep = rg_redis_eval(c, &release_script, 1, 1, args, NULL);
    rg_redis_give(s->m->redis, c, rep == NULL);
    int rc = rep && rep->type == REDIS_REPLY_INTEGER ? 0 : RG_EUNAVAIL;
    freeReplyObject(rep);
    return rc;
}

/*
 * Gives the lease back, after the callbacks that point at s: the
 * browser-level subscription outlives the context, and a check in flight
 * answers on the context's connection.
 */
static void release_lease_local(sess *s)
{
    sess_events_unbind(s);
    reg_world_free(s->world);
    s->world = NULL;
    sess_checks_drain(s);
    pool_release(s->lease);
    s->lease = NULL;
    egress_slot_close(s->egress);
    s->egress = NULL;
}

/* Forgets the local context of s (the browser died, or another worker took over). */
static void drop_local(sess *s)
{
    release_lease_local(s);
    reg_page_free(s->reg);
    s->reg = NULL;
    s->page_enabled = 0;
    s->last_ckpt = 0;
    forget_ckpt(s);
    __atomic_store_n(&s->lost, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&s->m->mu);
    if (s->live) {
        s->live = 0;
        s->m->n_live--;
    }
    pthread_mutex_unlock(&s->m->mu);
}

static void fmt_num(char *out, size_t len, double v)
{
    snprintf(out, len, "%.0f", v);
}

/*
 * Writes the checkpoint (or the park, with state "parked") of s; blob may be
 * NULL. RG_ECONFLICT when the lease is no longer ours.
 */
static int save_state(sess *s, const char *state, const sess_capture *c, const char *blob,
                      size_t blob_len)
{
    sess_mgr *m = s->m;
    char mk[256], lk[256], pk[256], wk[256], ttl[24], now[24], sx[32], sy[32], lease[24];
    key(mk, sizeof mk, s, "meta");
    key(lk, sizeof lk, s, "lease");
    key(pk, sizeof pk, s, "park");
    key(wk, sizeof wk, s, "want");
    snprintf(ttl, sizeof ttl, "%lld", (long long)m->cfg.dormant_ttl_ms);
    snprintf(now, sizeof now, "%lld", (long long)rg_wall_ms());
    fmt_num(sx, sizeof sx, c->sx);
    fmt_num(sy, sizeof sy, c->sy);
    snprintf(lease, sizeof lease, "%d", m->cfg.lease_ms);
    const char *args[] = {mk,    lk,  pk,     wk,       m->worker, ttl, now, state,
                          c->url ? c->url : "", c->title ? c->title : "", sx, sy,
                          blob ? blob : "", lease};
    size_t lens[14];
    for (int i = 0; i < 14; i++)
        lens[i] = i == 12 ? (blob ? blob_len : 0) : strlen(args[i]);
    redisContext *rc = rg_redis_take(m->redis);
    if (!rc)
        return RG_EUNAVAIL;
    redisReply *rep = rg_redis_eval(rc, &save_script, 4, 10, args, lens);
    rg_redis_give(m->redis, rc, rep == NULL);
    int r = !rep                                  ? RG_EUNAVAIL
            : rep->type != REDIS_REPLY_INTEGER    ? RG_EINTERNAL
            : rep->integer == 1                   ? 0
                                                  : RG_ECONFLICT;
    if (rep && rep->type == REDIS_REPLY_ERROR)
        rg_log(RG_LOG_ERROR, "session", "save of %s failed: %s", s->id, rep->str);
    freeReplyObject(rep);
    return r;
}

/* ---- park ---- */

static int park_held(sess *s, size_t *bytes, char *err, size_t errlen)
{
    sess_mgr *m = s->m;
    if (!s->live) {
        if (bytes)
            *bytes = 0;
        return 0;
    }
    sess_capture c = {0};
    int rc = __atomic_load_n(&s->lost, __ATOMIC_SEQ_CST) ? RG_ECRASHED
                                                          : sess_capture_page(s, 1, &c);
    char *blob = NULL;
    size_t len = 0;
    if (rc == 0)
        rc = sess_pack(s, &c, &blob, &len);
    if (rc == 0 && len > m->cfg.park_max_bytes) {
        /* Storage too large to keep: cookies, URL and scroll still are. */
        rg_log(RG_LOG_WARN, "session", "%s: storage of %zu bytes not kept at park", s->id, len);
        free(c.ls);
        free(c.ss);
        c.ls = c.ss = NULL;
        free(blob);
        blob = NULL;
        rc = sess_pack(s, &c, &blob, &len);
    }
    /* The registry takes its compact form first (for as long as the session
       lives), so a failure after it leaves a live session that reloads it. */
    if (rc == 0 && (rc = m->store->ops->park(m->store, s->page_key, m->cfg.dormant_ttl_ms)) == 0 &&
        (rc = save_state(s, "parked", &c, blob, len)) < 0) {
        reg_page_free(s->reg);
        s->reg = NULL;
        if (reg_page_new(m->store, s->page_key, &m->cfg.reg, &s->reg) < 0)
            s->reg = NULL;
    }
    free(blob);
    sess_capture_free(&c);
    if (rc == RG_ECRASHED) {
        /* Nothing to capture: the last checkpoint stands; just let go. */
        release_lease(s);
        drop_local(s);
        snprintf(err, errlen, "the session's browser died; it restores from its last checkpoint");
        return RG_ECRASHED;
    }
    if (rc < 0) {
        pthread_mutex_lock(&m->mu);
        m->stats.park_failures++;
        pthread_mutex_unlock(&m->mu);
        if (rc == RG_ECONFLICT) {
            /* Another worker owns it now: our copy is stale. */
            drop_local(s);
            snprintf(err, errlen, "another worker took the session over");
        } else {
            snprintf(err, errlen, "could not park the session (%s)", rg_err_code(rc));
        }
        return rc;
    }
    drop_local(s);
    if (bytes)
        *bytes = len;
    pthread_mutex_lock(&m->mu);
    m->stats.parked++;
    pthread_mutex_unlock(&m->mu);
    rg_log(RG_LOG_DEBUG, "session", "%s parked (%zu bytes)", s->id, len);
    return 0;
}

int sess_park(sess *s, size_t *bytes, char *err, size_t errlen)
{
    return park_held(s, bytes, err, errlen);
}

/* Parks the least recently used idle live session of m to free a context. */
int sess_park_lru(sess_mgr *m, const sess *except)
{
    pthread_mutex_lock(&m->mu);
    sess *best = NULL;
    for (sess *s = m->table; s; s = s->next)
        if (s != except && s->live && !s->busy && !s->qhead &&
            (!best || s->last_used_ms < best->last_used_ms))
            best = s;
    int ok = best && hold_idle_locked(best);
    pthread_mutex_unlock(&m->mu);
    if (!ok)
        return RG_EPOOL;
    char err[128];
    int rc = park_held(best, NULL, err, sizeof err);
    rg_log(RG_LOG_INFO, "session", "parked %s (least recently used) to free a context: %s",
           best->id, rc == 0 ? "ok" : err);
    pthread_mutex_lock(&m->mu);
    unhold_locked(m, best);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int sess_park_all(sess_mgr *m)
{
    int failed = 0;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        sess *s = m->table;
        while (s && !s->live)
            s = s->next;
        if (s)
            s->refs++;
        pthread_mutex_unlock(&m->mu);
        if (!s)
            break;
        pthread_mutex_lock(&m->mu);
        int rc = hold_locked(m, s, 30000);
        pthread_mutex_unlock(&m->mu);
        if (rc == 0) {
            char err[128];
            if (park_held(s, NULL, err, sizeof err) < 0) {
                failed++;
                rg_log(RG_LOG_WARN, "session", "%s not parked at shutdown: %s", s->id, err);
                release_lease(s);
                drop_local(s);
            }
            pthread_mutex_lock(&m->mu);
            unhold_locked(m, s);
            pthread_mutex_unlock(&m->mu);
        } else {
            failed++;
            pthread_mutex_lock(&m->mu);
            if (s->live) {
                s->live = 0; /* give up on it: its lease expires */
                m->n_live--;
            }
            unref_locked(m, s);
            pthread_mutex_unlock(&m->mu);
        }
    }
    return failed;
}

/* ---- heartbeat ---- */

static void beat(sess_mgr *m)
{
    pthread_mutex_lock(&m->mu);
    int n = 0;
    for (sess *s = m->table; s; s = s->next)
        n += s->live;
    sess **v = n ? calloc((size_t)n, sizeof *v) : NULL;
    int k = 0;
    for (sess *s = m->table; v && s && k < n; s = s->next)
        if (s->live) {
            s->refs++;
            v[k++] = s;
        }
    pthread_mutex_unlock(&m->mu);
    if (!k) {
        free(v);
        return;
    }
    int *res = calloc((size_t)k, sizeof *res);
    redisContext *c = res ? rg_redis_take(m->redis) : NULL;
    char lease_ms[24], ttl[24];
    snprintf(lease_ms, sizeof lease_ms, "%d", m->cfg.lease_ms);
    snprintf(ttl, sizeof ttl, "%lld", (long long)m->cfg.dormant_ttl_ms);
    for (int i = 0; c && i < k; i++) {
        char lk[256], wk[256], mk[256], pk[256];
        key(lk, sizeof lk, v[i], "lease");
        key(wk, sizeof wk, v[i], "want");
        key(mk, sizeof mk, v[i], "meta");
        key(pk, sizeof pk, v[i], "park");
        const char *args[] = {lk, wk, mk, pk, m->worker, lease_ms, ttl};
        redisReply *rep = rg_redis_eval(c, &beat_script, 4, 3, args, NULL);
        if (!rep) {
            rg_redis_give(m->redis, c, 1);
            c = NULL;
            break;
        }
        res[i] = rep->type == REDIS_REPLY_INTEGER ? (int)rep->integer : 0;
        freeReplyObject(rep);
    }
    if (c)
        rg_redis_give(m->redis, c, 0);
    int64_t now = rg_now_ms();
    for (int i = 0; i < k; i++) {
        sess *s = v[i];
        pthread_mutex_lock(&m->mu);
        int idle = m->cfg.idle_park_ms > 0 && now - s->last_used_ms > m->cfg.idle_park_ms;
        int act = (res && res[i] != 0) || idle;
        if (res && res[i] != 0)
            s->want_park = 1;
        int held = act && hold_idle_locked(s);
        pthread_mutex_unlock(&m->mu);
        if (held) {
            char err[128];
            if (res[i] < 0) {
                rg_log(RG_LOG_WARN, "session", "%s: lease lost, dropping the local copy", s->id);
                drop_local(s);
            } else {
                int rc = park_held(s, NULL, err, sizeof err);
                rg_log(rc == 0 ? RG_LOG_INFO : RG_LOG_WARN, "session", "%s parked (%s): %s",
                       s->id, res[i] > 0 ? "another worker asked" : "idle",
                       rc == 0 ? "ok" : err);
            }
            pthread_mutex_lock(&m->mu);
            unhold_locked(m, s);
            pthread_mutex_unlock(&m->mu);
        }
        pthread_mutex_lock(&m->mu);
        unref_locked(m, s);
        pthread_mutex_unlock(&m->mu);
    }
    free(res);
    free(v);
}

static void *hb_main(void *arg)
{
    sess_mgr *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stopping) {
        struct timespec dl;
        rg_deadline(&dl, m->cfg.heartbeat_ms);
        pthread_cond_timedwait(&m->hb_cv, &m->mu, &dl);
        if (m->stopping)
            break;
        pthread_mutex_unlock(&m->mu);
        beat(m);
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* ---- manager ---- */

int sess_mgr_new(const sess_config *cfg, pool *p, rg_redis *redis, reg_store *store,
                 sess_mgr **out)
{
    *out = NULL;
    sess_mgr *m = calloc(1, sizeof *m);
    if (!m)
        return RG_ENOMEM;
    m->cfg = *cfg;
    if (m->cfg.heartbeat_ms <= 0)
        m->cfg.heartbeat_ms = m->cfg.lease_ms / 5 > 0 ? m->cfg.lease_ms / 5 : 100;
    snprintf(m->worker, sizeof m->worker, "%s", cfg->worker_id ? cfg->worker_id : "w");
    m->cfg.worker_id = m->worker;
    m->pool = p;
    m->redis = redis;
    m->store = store;
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->hb_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&m->checks_cv, NULL);
    if (cfg->connect_check) {
        egress_config ec;
        egress_config_default(&ec);
        egress_config_from_env(&ec);
        ec.decide = cfg->connect_check;
        ec.ud = cfg->connect_ud;
        if (egress_new(&ec, &m->egress) < 0)
            m->egress = NULL;
    }
    if ((cfg->connect_check && !m->egress) || sess_checkers_start(m) < 0 ||
        pthread_create(&m->hb, NULL, hb_main, m) != 0) {
        sess_checkers_stop(m);
        egress_free(m->egress);
        pthread_cond_destroy(&m->checks_cv);
        pthread_cond_destroy(&m->hb_cv);
        pthread_mutex_destroy(&m->mu);
        free(m);
        return RG_ENOMEM;
    }
    *out = m;
    return 0;
}

void sess_mgr_free(sess_mgr *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stopping = 1;
    pthread_cond_broadcast(&m->hb_cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->hb, NULL);
    sess_checkers_stop(m); /* the queued checks are answered first */
    while (m->table) {
        sess *s = m->table;
        m->table = s->next;
        release_lease_local(s);
        sess_free_locals(s);
        free(s);
    }
    egress_free(m->egress);
    pthread_cond_destroy(&m->hb_cv);
    pthread_cond_destroy(&m->checks_cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

const char *sess_worker(const sess_mgr *m)
{
    return m->worker;
}

void sess_get_stats(sess_mgr *m, sess_stats *st)
{
    pthread_mutex_lock(&m->mu);
    *st = m->stats;
    st->live = m->n_live;
    pthread_mutex_unlock(&m->mu);
}

int sess_egress_stats(sess_mgr *m, egress_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!m->egress)
        return 0;
    egress_get_stats(m->egress, st);
    return 1;
}

/* ---- accessors ---- */

const char *sess_id(const sess *s)
{
    return s->id;
}

reg_page *sess_registry(sess *s)
{
    return s->reg;
}

/* ---- create ---- */

/* CRC-32 (IEEE 802.3), the checksum nginx's upstream hash is built on. */
static uint32_t crc32_of(const char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= (unsigned char)p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return c ^ 0xffffffffu;
}

/*
 * The worker (0-based) nginx's `hash $rg_session` sends a session id to when
 * all n workers are up: ((crc32(key) >> 16) & 0x7fff) % n, as nginx computes
 * its first pick (compatible with Cache::Memcached).
 */
int sess_id_worker(const char *sid, int n)
{
    uint32_t h = (crc32_of(sid, strlen(sid)) >> 16) & 0x7fff;
    return n > 0 ? (int)(h % (uint32_t)n) : 0;
}

/* "s" and 27 characters of [a-z2-7]: 135 random bits, unguessable. */
static void random_id(char out[SESS_ID_MAX])
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz234567";
    unsigned char rnd[18];
    size_t got = 0;
    while (got < sizeof rnd) {
        ssize_t n = getrandom(rnd + got, sizeof rnd - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (errno != EINTR)
            abort(); /* no randomness: never hand out a guessable id */
    }
    out[0] = 's';
    for (size_t i = 0; i < 27; i++) {
        size_t bit = i * 5;
        unsigned v = ((unsigned)rnd[bit / 8] << 8 | rnd[bit / 8 + 1]) >> (11 - bit % 8);
        out[1 + i] = digits[v & 31];
    }
    out[28] = '\0';
}

/*
 * A new id; when this worker knows its place among the workers behind
 * nginx, one that nginx will send back to this worker, so a new session
 * does not move on its first command (a few draws; costs at most log2(n)
 * of the 135 bits).
 */
static void new_id(const sess_mgr *m, char out[SESS_ID_MAX])
{
    for (int tries = 0; tries < 1000; tries++) {
        random_id(out);
        if (m->cfg.worker_index <= 0 || m->cfg.workers <= 1 ||
            sess_id_worker(out, m->cfg.workers) == m->cfg.worker_index - 1)
            return;
    }
}

static char *dup_opt(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

/*
 * Writes the new session's meta and lease. reserved: the create holds a
 * quota reservation, whose marker this consumes in the same script, so the
 * session exists from here on without a moment where its quota slot looks
 * dead; a marker that lapsed (the create took too long) writes nothing:
 * RG_ETIMEOUT.
 */
static int write_new(sess *s, int reserved)
{
    sess_mgr *m = s->m;
    char mk[256], lk[256], nk[256], ik[256];
    key(mk, sizeof mk, s, "meta");
    key(lk, sizeof lk, s, "lease");
    sess_new_key(nk, sizeof nk, s->tenant, s->id);
    index_key(ik, sizeof ik, s->tenant);
    char now[24], w[16], h[16], ttl[24], lease[24];
    snprintf(now, sizeof now, "%lld", (long long)rg_wall_ms());
    snprintf(w, sizeof w, "%d", s->width);
    snprintf(h, sizeof h, "%d", s->height);
    snprintf(ttl, sizeof ttl, "%lld", (long long)m->cfg.dormant_ttl_ms);
    snprintf(lease, sizeof lease, "%d", m->cfg.lease_ms);
    const char *args[] = {mk, lk, nk, reserved ? "1" : "0", ttl, m->worker, lease,
                          "state", "live", "owner", m->worker, "url", "about:blank",
                          "title", "", "created", now, "last_used", now, "w", w, "h", h,
                          "ua", s->user_agent ? s->user_agent : "",
                          "locale", s->locale ? s->locale : "",
                          "tz", s->timezone ? s->timezone : "", "sx", "0", "sy", "0"};
    int nargs = (int)(sizeof args / sizeof *args) - 3;
    redisContext *c = rg_redis_take(m->redis);
    if (!c)
        return RG_EUNAVAIL;
    redisReply *rep = rg_redis_eval(c, &create_script, 3, nargs, args, NULL);
    int failed = rep == NULL;
    int rc = !rep                                  ? RG_EUNAVAIL
             : rep->type != REDIS_REPLY_INTEGER    ? RG_EUNAVAIL
             : rep->integer == 1                   ? 0
                                                   : RG_ETIMEOUT;
    if (rep && rep->type == REDIS_REPLY_ERROR)
        rg_log(RG_LOG_ERROR, "session", "create of %s failed: %s", s->id, rep->str);
    freeReplyObject(rep);
    if (rc == 0) {
        rep = redisCommand(c, "ZADD %s %s %s", ik, now, s->id);
        failed = rep == NULL;
        rc = rep && rep->type == REDIS_REPLY_INTEGER ? 0 : RG_EUNAVAIL;
        freeReplyObject(rep);
    }
    rg_redis_give(m->redis, c, failed);
    return rc;
}

/* Registers the lost-browser callback and the registry page of a fresh lease. */
int sess_bind_lease(sess *s)
{
    forget_ckpt(s);
    sess_events_bind(s);
    reg_page_free(s->reg);
    s->reg = NULL;
    return reg_page_new(s->m->store, s->page_key, &s->m->cfg.reg, &s->reg);
}

int sess_create(sess_mgr *m, const char *tenant, const sess_options *o, int timeout_ms,
                sess **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!valid_name(tenant, SESS_TENANT_MAX)) {
        snprintf(err, errlen, "invalid tenant id");
        return RG_EBADREQ;
    }
    char sid[SESS_ID_MAX];
    new_id(m, sid);
    /* The quota first: nothing is done for a create that has no slot. */
    int reserved = o && o->quota > 0;
    if (reserved) {
        size_t have = 0;
        int64_t ttl = (int64_t)(timeout_ms > 0 ? timeout_ms : 0) + RG_QUOTA_GRACE_MS;
        int qrc = sess_quota_reserve(m, tenant, sid, o->quota, ttl, &have);
        if (qrc == RG_EQUOTA)
            snprintf(err, errlen,
                     "the tenant has %zu sessions (live, parked and being created), its quota "
                     "is %d: close one",
                     have, o->quota);
        else if (qrc < 0)
            snprintf(err, errlen, "Redis at %s is unavailable; nothing was created",
                     rg_redis_where(m->redis));
        if (qrc < 0)
            return qrc;
    }
    sess *s = sess_alloc(m, tenant, sid);
    if (!s) {
        if (reserved)
            sess_quota_release(m, tenant, sid);
        return RG_ENOMEM;
    }
    if (o) {
        if (o->width > 0)
            s->width = o->width;
        if (o->height > 0)
            s->height = o->height;
        s->user_agent = dup_opt(o->user_agent);
        s->locale = dup_opt(o->locale);
        s->timezone = dup_opt(o->timezone);
    }
    s->created_ms = rg_wall_ms();
    s->last_used_ms = rg_now_ms();
    s->busy = 1;
    s->refs = 1;
    int rc = sess_lease_context(s, timeout_ms, err, errlen);
    if (rc == 0 && (rc = sess_bind_lease(s)) < 0)
        snprintf(err, errlen, "out of memory");
    if (rc == 0 && (rc = sess_apply_options(s)) < 0)
        snprintf(err, errlen, "the browser refused the session's options (%s)", rg_err_code(rc));
    if (rc == 0) {
        rc = write_new(s, reserved);
        if (rc == RG_ETIMEOUT)
            snprintf(err, errlen, "the session was not ready within %d ms; nothing was created",
                     timeout_ms + RG_QUOTA_GRACE_MS);
        else if (rc < 0)
            snprintf(err, errlen, "Redis at %s is unavailable; nothing was created",
                     rg_redis_where(m->redis));
    }
    if (rc < 0) {
        if (reserved)
            sess_quota_release(m, tenant, sid);
        release_lease_local(s);
        sess_free_locals(s);
        free(s);
        return rc;
    }
    if (reserved)
        sess_quota_commit(m, tenant, sid);
    pthread_mutex_lock(&m->mu);
    s->live = 1;
    m->n_live++;
    table_add(m, s);
    pthread_mutex_unlock(&m->mu);
    *out = s;
    return 0;
}

/* ---- open ---- */

static const redisReply *field(const redisReply *h, const char *name)
{
    for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
        if (h->element[i]->type == REDIS_REPLY_STRING && !strcmp(h->element[i]->str, name))
            return h->element[i + 1];
    return NULL;
}

static const char *fstr(const redisReply *h, const char *name)
{
    const redisReply *v = field(h, name);
    return v && v->type == REDIS_REPLY_STRING ? v->str : "";
}

static double fnum(const redisReply *h, const char *name)
{
    return strtod(fstr(h, name), NULL);
}

/* Asks the owner to park s: sets `want` for a while. */
static int ask_owner(sess *s)
{
    char wk[256], ms[24];
    key(wk, sizeof wk, s, "want");
    snprintf(ms, sizeof ms, "%d", s->m->cfg.lease_ms * 2);
    redisContext *c = rg_redis_take(s->m->redis);
    if (!c)
        return RG_EUNAVAIL;
    redisReply *rep = redisCommand(c, "SET %s %s PX %s", wk, s->m->worker, ms);
    rg_redis_give(s->m->redis, c, rep == NULL);
    int rc = rep ? 0 : RG_EUNAVAIL;
    freeReplyObject(rep);
    return rc;
}

/*
 * Makes s live here (s held, not live): claims it in Redis, waiting for
 * another live owner to park it, then rebuilds it on a fresh context.
 */
static int take_over(sess *s, int timeout_ms, int rebuild, sess_restore_info *ri, char *err,
                     size_t errlen)
{
    sess_mgr *m = s->m;
    char mk[256], lk[256], pk[256], wk[256], lease[24], now[24];
    key(mk, sizeof mk, s, "meta");
    key(lk, sizeof lk, s, "lease");
    key(pk, sizeof pk, s, "park");
    key(wk, sizeof wk, s, "want");
    snprintf(lease, sizeof lease, "%d", m->cfg.lease_ms);
    int64_t deadline = rg_now_ms() + timeout_ms;
    int asked = 0;
    redisReply *rep = NULL;
    for (;;) {
        snprintf(now, sizeof now, "%lld", (long long)rg_wall_ms());
        const char *args[] = {mk, lk, pk, wk, m->worker, lease, now};
        redisContext *c = rg_redis_take(m->redis);
        if (!c) {
            snprintf(err, errlen, "Redis at %s is unavailable", rg_redis_where(m->redis));
            return RG_EUNAVAIL;
        }
        rep = rg_redis_eval(c, &claim_script, 4, 3, args, NULL);
        rg_redis_give(m->redis, c, rep == NULL);
        if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) {
            if (rep && rep->type == REDIS_REPLY_ERROR)
                rg_log(RG_LOG_ERROR, "session", "claim of %s failed: %s", s->id, rep->str);
            freeReplyObject(rep);
            snprintf(err, errlen, "Redis at %s is unavailable", rg_redis_where(m->redis));
            return RG_EUNAVAIL;
        }
        const char *what = rep->element[0]->str;
        if (!strcmp(what, "gone")) {
            freeReplyObject(rep);
            snprintf(err, errlen, "no session %s", s->id);
            return RG_ENOTFOUND;
        }
        if (!strcmp(what, "ok"))
            break;
        /* busy: another live worker holds it. Ask it to park, then wait. */
        freeReplyObject(rep);
        rep = NULL;
        if (!asked && ask_owner(s) == 0)
            asked = 1;
        if (rg_now_ms() >= deadline) {
            snprintf(err, errlen, "the session is held by another worker that did not let go "
                                  "in time; try again");
            return RG_ECONFLICT;
        }
        usleep(20000);
    }
    if (!rebuild) {
        freeReplyObject(rep);
        return 0; /* claimed, not rebuilt: the session is ours to close */
    }
    const redisReply *meta = rep->elements > 2 ? rep->element[2] : NULL;
    const redisReply *blob = rep->elements > 3 ? rep->element[3] : NULL;
    s->width = (int)fnum(meta, "w");
    s->height = (int)fnum(meta, "h");
    if (s->width <= 0)
        s->width = 1280;
    if (s->height <= 0)
        s->height = 800;
    free(s->user_agent);
    free(s->locale);
    free(s->timezone);
    s->user_agent = dup_opt(fstr(meta, "ua"));
    s->locale = dup_opt(fstr(meta, "locale"));
    s->timezone = dup_opt(fstr(meta, "tz"));
    s->created_ms = (int64_t)fnum(meta, "created");
    sess_capture parked = {0};
    int have_parked = blob && blob->type == REDIS_REPLY_STRING && blob->len > 0 &&
                      sess_unpack(blob->str, blob->len, &parked) == 0;
    char *url = strdup(fstr(meta, "url"));
    double sx = fnum(meta, "sx"), sy = fnum(meta, "sy");
    freeReplyObject(rep);
    int rc = url ? 0 : RG_ENOMEM;
    int64_t left = deadline - rg_now_ms();
    if (rc == 0)
        rc = sess_lease_context(s, left > 1000 ? (int)left : 1000, err, errlen);
    if (rc == 0 && (rc = sess_bind_lease(s)) < 0)
        snprintf(err, errlen, "out of memory");
    if (rc == 0)
        rc = sess_apply_options(s);
    if (rc == 0) {
        pthread_mutex_lock(&m->mu);
        s->live = 1;
        m->n_live++;
        pthread_mutex_unlock(&m->mu);
        rc = sess_rebuild(s, url, sx, sy, have_parked ? &parked : NULL, ri, err, errlen);
    }
    free(url);
    sess_capture_free(&parked);
    if (rc < 0) {
        release_lease(s);
        drop_local(s);
        return rc;
    }
    ri->restored = 1;
    s->last_full_ms = rg_now_ms();
    pthread_mutex_lock(&m->mu);
    m->stats.restored++;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static int open_session(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms,
                        int rebuild, sess **out, sess_restore_info *ri, char *err, size_t errlen);

int sess_open(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms, sess **out,
              sess_restore_info *ri, char *err, size_t errlen)
{
    return open_session(m, tenant, sid, timeout_ms, 1, out, ri, err, errlen);
}

int sess_claim(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms, sess **out,
               char *err, size_t errlen)
{
    return open_session(m, tenant, sid, timeout_ms, 0, out, NULL, err, errlen);
}

static int open_session(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms,
                        int rebuild, sess **out, sess_restore_info *ri, char *err, size_t errlen)
{
    *out = NULL;
    sess_restore_info dummy;
    if (!ri)
        ri = &dummy;
    memset(ri, 0, sizeof *ri);
    if (timeout_ms <= 0)
        timeout_ms = 10000;
    if (!valid_name(tenant, SESS_TENANT_MAX) || !valid_name(sid, SESS_ID_MAX)) {
        snprintf(err, errlen, "no session %s", sid);
        return RG_ENOTFOUND;
    }
    pthread_mutex_lock(&m->mu);
    sess *s = find(m, tenant, sid);
    if (!s) {
        if (!(s = sess_alloc(m, tenant, sid))) {
            pthread_mutex_unlock(&m->mu);
            return RG_ENOMEM;
        }
        table_add(m, s);
    }
    s->refs++;
    int rc = hold_locked(m, s, timeout_ms);
    if (rc < 0) {
        if (s->refs == 1 && !s->busy && !s->qhead && !s->live && s->in_table)
            table_remove(m, s); /* nobody else wanted it: unref frees it */
        unref_locked(m, s);
        pthread_mutex_unlock(&m->mu);
        snprintf(err, errlen, "the session is busy with earlier commands; try again");
        return RG_ECONFLICT;
    }
    int live = s->live;
    pthread_mutex_unlock(&m->mu);

    if (live && sess_lost(s)) {
        /* The browser died: restore from the checkpoint on a fresh one. */
        rg_log(RG_LOG_INFO, "session", "%s: browser gone, restoring from its checkpoint", s->id);
        drop_local(s);
        live = 0;
    }
    if (!live && (rc = take_over(s, timeout_ms, rebuild, ri, err, errlen)) < 0) {
        pthread_mutex_lock(&m->mu);
        unhold_locked(m, s);
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    pthread_mutex_lock(&m->mu);
    s->last_used_ms = rg_now_ms();
    pthread_mutex_unlock(&m->mu);
    *out = s;
    return 0;
}

static uint64_t checkpoint_hash(const sess_capture *c)
{
    uint64_t h = 1469598103934665603ULL;
    const char *parts[] = {c->url ? c->url : "", "\n", c->title ? c->title : "", "\n"};
    for (size_t i = 0; i < 4; i++)
        for (const char *p = parts[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h ^= (uint64_t)(int64_t)c->sx * 31 + (uint64_t)(int64_t)c->sy;
    return h ? h : 1;
}

void sess_note_scroll(sess *s, double sx, double sy)
{
    s->has_hint = 1;
    s->hint_sx = sx;
    s->hint_sy = sy;
}

/*
 * The light checkpoint without a call into the page: no navigation or title
 * change since the last capture (the events are read first: one that lands
 * during the capture makes the next checkpoint ask again), and the command
 * saw the scroll. 1 when c was filled from what is known.
 */
static int known_capture(sess *s, unsigned gen, sess_capture *c)
{
    if (!s->ckpt_valid || !s->has_hint || gen != s->ckpt_gen)
        return 0;
    c->url = strdup(s->ckpt_url);
    c->title = strdup(s->ckpt_title);
    c->origin = strdup(s->ckpt_origin);
    c->sx = s->hint_sx;
    c->sy = s->hint_sy;
    if (c->url && c->title && c->origin)
        return 1;
    sess_capture_free(c);
    memset(c, 0, sizeof *c);
    return 0;
}

/* Keeps what the checkpoint wrote, for known_capture. */
static void keep_ckpt(sess *s, unsigned gen, const sess_capture *c)
{
    char *u = strdup(c->url), *t = strdup(c->title), *o = strdup(c->origin);
    forget_ckpt(s);
    if (!u || !t || !o) {
        free(u);
        free(t);
        free(o);
        return;
    }
    s->ckpt_url = u;
    s->ckpt_title = t;
    s->ckpt_origin = o;
    s->ckpt_sx = c->sx;
    s->ckpt_sy = c->sy;
    s->ckpt_gen = gen;
    s->ckpt_valid = 1;
}

void sess_done(sess *s, int full)
{
    sess_mgr *m = s->m;
    if (full >= 0 && s->live && !sess_lost(s)) {
        int64_t now = rg_now_ms();
        full = full || (m->cfg.full_checkpoint_ms >= 0 &&
                        now - s->last_full_ms >= m->cfg.full_checkpoint_ms);
        sess_capture c = {0};
        char *blob = NULL;
        size_t len = 0;
        unsigned gen = __atomic_load_n(&s->page_gen, __ATOMIC_SEQ_CST);
        int known = !full && known_capture(s, gen, &c);
        int rc = known ? 0 : sess_capture_page(s, full, &c);
        if (rc == 0 && full && sess_pack(s, &c, &blob, &len) == 0 &&
            len > m->cfg.park_max_bytes) {
            free(blob);
            blob = NULL;
        }
        uint64_t h = rc == 0 ? checkpoint_hash(&c) : 0;
        /* Nothing moved since the last write: Redis already has it. */
        if (rc == 0 && (blob || h != s->last_ckpt)) {
            rc = save_state(s, "live", &c, blob, len);
            if (rc == 0) {
                s->last_ckpt = h;
                if (blob)
                    s->last_full_ms = now;
            }
        }
        if (rc < 0)
            forget_ckpt(s);
        else if (!known)
            keep_ckpt(s, gen, &c);
        else
            s->ckpt_sx = c.sx, s->ckpt_sy = c.sy;
        if (rc == RG_ECONFLICT) {
            rg_log(RG_LOG_WARN, "session", "%s: another worker owns it now", s->id);
            drop_local(s);
        }
        free(blob);
        sess_capture_free(&c);
    }
    s->has_hint = 0;
    pthread_mutex_lock(&m->mu);
    s->last_used_ms = rg_now_ms();
    unhold_locked(m, s);
    pthread_mutex_unlock(&m->mu);
}

/* ---- close and info ---- */

int sess_close(sess *s)
{
    sess_mgr *m = s->m;
    char mk[256], lk[256], pk[256], wk[256], ik[256], qk[256];
    key(mk, sizeof mk, s, "meta");
    key(lk, sizeof lk, s, "lease");
    key(pk, sizeof pk, s, "park");
    key(wk, sizeof wk, s, "want");
    index_key(ik, sizeof ik, s->tenant);
    sess_quota_key(qk, sizeof qk, s->tenant);
    redisContext *c = rg_redis_take(m->redis);
    if (!c)
        return RG_EUNAVAIL;
    redisReply *rep = redisCommand(c, "DEL %s %s %s %s", mk, lk, pk, wk);
    int failed = rep == NULL;
    int rc = rep && rep->type == REDIS_REPLY_INTEGER ? 0 : RG_EUNAVAIL;
    freeReplyObject(rep);
    if (rc == 0) {
        /* The quota slot comes free at once (were this lost, the slot would
           still come back: its member is dropped once its meta is found gone). */
        redisAppendCommand(c, "ZREM %s %s", ik, s->id);
        redisAppendCommand(c, "ZREM %s %s", qk, s->id);
        for (int i = 0; i < 2 && !failed; i++) {
            rep = NULL;
            failed = redisGetReply(c, (void **)&rep) != REDIS_OK || !rep;
            freeReplyObject(rep);
        }
    }
    rg_redis_give(m->redis, c, failed);
    if (rc < 0)
        return rc;
    m->store->ops->drop(m->store, s->page_key);
    drop_local(s);
    return 0;
}

void sess_wait_turn(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms)
{
    pthread_mutex_lock(&m->mu);
    sess *s = find(m, tenant, sid);
    if (s) {
        s->refs++;
        if (hold_locked(m, s, timeout_ms) == 0)
            unhold_locked(m, s);
        else
            unref_locked(m, s);
    }
    pthread_mutex_unlock(&m->mu);
}

void sess_info_free(sess_info *i)
{
    free(i->url);
    free(i->title);
    i->url = i->title = NULL;
}

int sess_get_info(sess_mgr *m, const char *tenant, const char *sid, sess_info *out)
{
    memset(out, 0, sizeof *out);
    if (!valid_name(tenant, SESS_TENANT_MAX) || !valid_name(sid, SESS_ID_MAX))
        return RG_ENOTFOUND;
    sess tmp;
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.tag, sizeof tmp.tag, "{t:%s:s:%s}", tenant, sid);
    char mk[256], lk[256], pk[256];
    key(mk, sizeof mk, &tmp, "meta");
    key(lk, sizeof lk, &tmp, "lease");
    key(pk, sizeof pk, &tmp, "park");
    redisContext *c = rg_redis_take(m->redis);
    if (!c)
        return RG_EUNAVAIL;
    redisAppendCommand(c, "HGETALL %s", mk);
    redisAppendCommand(c, "GET %s", lk);
    redisAppendCommand(c, "STRLEN %s", pk);
    redisReply *meta = NULL, *lease = NULL, *plen = NULL;
    int failed = redisGetReply(c, (void **)&meta) != REDIS_OK ||
                 redisGetReply(c, (void **)&lease) != REDIS_OK ||
                 redisGetReply(c, (void **)&plen) != REDIS_OK;
    if (plen && plen->type == REDIS_REPLY_INTEGER)
        out->parked_bytes = (size_t)plen->integer;
    freeReplyObject(plen);
    rg_redis_give(m->redis, c, failed);
    int rc = 0;
    if (failed || !meta || meta->type != REDIS_REPLY_ARRAY) {
        rc = RG_EUNAVAIL;
    } else if (meta->elements == 0) {
        rc = RG_ENOTFOUND;
    } else {
        int held = lease && lease->type == REDIS_REPLY_STRING;
        /* Live without a lease: its worker died; the next command restores it. */
        snprintf(out->state, sizeof out->state, "%s", held ? "live" : "parked");
        snprintf(out->worker, sizeof out->worker, "%s", held ? lease->str : "");
        out->url = strdup(fstr(meta, "url"));
        out->title = strdup(fstr(meta, "title"));
        out->created_ms = (int64_t)fnum(meta, "created");
        out->last_used_ms = (int64_t)fnum(meta, "last_used");
        out->width = (int)fnum(meta, "w");
        out->height = (int)fnum(meta, "h");
        if (!out->url || !out->title) {
            sess_info_free(out);
            rc = RG_ENOMEM;
        }
    }
    freeReplyObject(meta);
    freeReplyObject(lease);
    return rc;
}

int sess_list(sess_mgr *m, const char *tenant, char ***sids, size_t *n)
{
    *sids = NULL;
    *n = 0;
    if (!valid_name(tenant, SESS_TENANT_MAX))
        return 0;
    char ik[256];
    index_key(ik, sizeof ik, tenant);
    redisContext *c = rg_redis_take(m->redis);
    if (!c)
        return RG_EUNAVAIL;
    redisReply *rep = redisCommand(c, "ZRANGE %s 0 %d", ik, SESS_LIST_MAX - 1);
    int failed = rep == NULL;
    int rc = rep && rep->type == REDIS_REPLY_ARRAY ? 0 : RG_EUNAVAIL;
    char **v = rc == 0 ? calloc(rep->elements + 1, sizeof *v) : NULL;
    if (rc == 0 && !v)
        rc = RG_ENOMEM;
    /* Sessions whose keys expired leave the index here. */
    for (size_t i = 0; v && i < rep->elements; i++) {
        const char *sid = rep->element[i]->str;
        if (!sid || !valid_name(sid, SESS_ID_MAX))
            continue;
        sess tmp;
        memset(&tmp, 0, sizeof tmp);
        snprintf(tmp.tag, sizeof tmp.tag, "{t:%s:s:%s}", tenant, sid);
        char mk[256];
        key(mk, sizeof mk, &tmp, "meta");
        redisReply *ex = redisCommand(c, "EXISTS %s", mk);
        if (!ex) {
            failed = 1;
            break;
        }
        if (ex->type == REDIS_REPLY_INTEGER && ex->integer == 0) {
            redisReply *z = redisCommand(c, "ZREM %s %s", ik, sid);
            freeReplyObject(z);
        } else if ((v[*n] = strdup(sid))) {
            (*n)++;
        }
        freeReplyObject(ex);
    }
    freeReplyObject(rep);
    rg_redis_give(m->redis, c, failed);
    if (failed && rc == 0)
        rc = RG_EUNAVAIL;
    if (rc < 0) {
        for (size_t i = 0; i < *n; i++)
            free(v[i]);
        free(v);
        *n = 0;
        return rc;
    }
    *sids = v;
    return 0;
}

size_t sess_count(sess_mgr *m, const char *tenant)
{
    size_t n = 0;
    if (!valid_name(tenant, SESS_TENANT_MAX) || sess_quota_count(m, tenant, &n) < 0)
        return 0;
    return n;
}
