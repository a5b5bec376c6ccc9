/*
 * session.c - the sessions of one worker: configuration, the table, the
 * per-session FIFO that runs a session's commands one at a time in arrival
 * order, and the lifecycle: create, open (or claim), done, close, info,
 * listing, and the manager that starts and stops the heartbeat. Who owns a
 * session (Redis leases, checkpoints, parking, takeover) is lease.c's.
 *
 * Threading: any thread may call the public functions. m->mu guards the
 * table and every session's queue, refs and liveness; a session's other
 * fields belong to the thread that holds it (between open and done).
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

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
    cfg->freeze_idle_ms = 30 * 1000;
    cfg->idle_park_ms = 300 * 1000;
    cfg->park_lru = 1;
    cfg->min_live_ms = 5000;
    cfg->full_checkpoint_ms = 5000;
    cfg->park_max_bytes = 8u << 20;
    cfg->park_wait_timeout_ms = 200;
    cfg->capacity = POOL_BROWSERS * POOL_CONTEXTS_PER_BROWSER;
    cfg->upload_file_max = 10u << 20;
    cfg->upload_session_max = 50u << 20;
    cfg->download_session_max = 50u << 20;
    cfg->tabs_max = SESS_TABS_MAX;
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
    cfg->freeze_idle_ms =
        rg_env_long("REFGATE_FREEZE_IDLE_MS", cfg->freeze_idle_ms, 0, 30L * 86400 * 1000);
    cfg->idle_park_ms =
        rg_env_long("REFGATE_IDLE_PARK_S", cfg->idle_park_ms / 1000, 0, 30L * 86400) * 1000;
    cfg->park_lru = (int)rg_env_long("REFGATE_PARK_LRU", cfg->park_lru, 0, 1);
    cfg->warm = rg_env_long("REFGATE_WARM_CONTEXTS", 1, 0, 16) > 0;
    cfg->min_live_ms = rg_env_long("REFGATE_PARK_MIN_LIVE_MS", cfg->min_live_ms, 0, 3600000);
    cfg->full_checkpoint_ms =
        rg_env_long("REFGATE_CHECKPOINT_FULL_MS", cfg->full_checkpoint_ms, 0, 3600000);
    cfg->park_max_bytes = (size_t)rg_env_long("REFGATE_PARK_MAX_BYTES", (long)cfg->park_max_bytes,
                                              4096, 256L << 20);
    cfg->park_wait_replicas =
        (int)rg_env_long("REFGATE_PARK_WAIT_REPLICAS", cfg->park_wait_replicas, 0, 16);
    cfg->park_wait_timeout_ms =
        (int)rg_env_long("REFGATE_PARK_WAIT_TIMEOUT_MS", cfg->park_wait_timeout_ms, 1, 60000);
    /* The wait answers on the command's connection: past the Redis command
       timeout the reply would be given up on and the park fail. */
    long redis_ms = rg_env_long("REFGATE_REDIS_TIMEOUT_MS", 1000, 10, 60000);
    if (cfg->park_wait_timeout_ms > redis_ms / 2)
        cfg->park_wait_timeout_ms = (int)(redis_ms / 2);
    long browsers = rg_env_long("REFGATE_BROWSERS", POOL_BROWSERS, 1, 64);
    long per = rg_env_long("REFGATE_CONTEXTS_PER_BROWSER", POOL_CONTEXTS_PER_BROWSER, 1, 256);
    cfg->capacity = (int)(browsers * per);
    cfg->upload_file_max =
        (size_t)rg_env_long("REFGATE_UPLOAD_FILE_MAX", (long)cfg->upload_file_max, 0, 1L << 30);
    cfg->upload_session_max = (size_t)rg_env_long("REFGATE_UPLOAD_SESSION_MAX",
                                                  (long)cfg->upload_session_max, 0, 4L << 30);
    cfg->download_session_max = (size_t)rg_env_long("REFGATE_DOWNLOAD_SESSION_MAX",
                                                    (long)cfg->download_session_max, 0, 4L << 30);
    cfg->tabs_max = (int)rg_env_long("REFGATE_TABS_MAX", cfg->tabs_max, 1, SESS_TABS_CAP);
    reg_config_from_env(&cfg->reg);
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
    if (!(s->files = sess_files_new()) || !(s->console = sess_console_new()) ||
        !(s->netlog = sess_netlog_new())) {
        sess_files_free(s->files);
        sess_console_free(s->console);
        free(s);
        return NULL;
    }
    s->m = m;
    snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
    snprintf(s->id, sizeof s->id, "%s", sid);
    snprintf(s->tag, sizeof s->tag, "{t:%s:s:%s}", tenant, sid);
    s->width = 1280;
    s->height = 800;
    return s;
}

static void sess_free_locals(sess *s)
{
    /* The tabs went with the context (sess_release_local): m->mu may be held here. */
    sess_forget_ckpt(s);
    free(s->emul_ua);
    s->emul_ua = NULL;
    free(s->media);
    s->media = NULL;
    free(s->user_agent);
    free(s->locale);
    free(s->timezone);
    s->user_agent = s->locale = s->timezone = NULL;
    sess_files_free(s->files);
    s->files = NULL;
    sess_console_free(s->console);
    s->console = NULL;
    sess_netlog_free(s->netlog);
    s->netlog = NULL;
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
void sess_unref_locked(sess_mgr *m, sess *s)
{
    if (--s->refs == 0 && !s->in_table) {
        sess_free_locals(s);
        free(s);
    }
    (void)m;
}

/* Waits (m->mu held) until s is ours, in arrival order. 0, or RG_ECONFLICT at the deadline. */
int sess_hold_locked(sess_mgr *m, sess *s, int timeout_ms)
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
void sess_unhold_locked(sess_mgr *m, sess *s)
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
    sess_unref_locked(m, s);
}

/* Takes an idle session for the heartbeat or an LRU park (m->mu held). */
int sess_hold_idle_locked(sess *s)
{
    if (s->busy || s->qhead || !s->live)
        return 0;
    s->busy = 1;
    s->refs++;
    return 1;
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
    if (m->cfg.tabs_max <= 0 || m->cfg.tabs_max > SESS_TABS_CAP)
        m->cfg.tabs_max = SESS_TABS_MAX;
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
        pthread_create(&m->hb, NULL, sess_heartbeat_main, m) != 0) {
        sess_checkers_stop(m);
        egress_free(m->egress);
        pthread_cond_destroy(&m->checks_cv);
        pthread_cond_destroy(&m->hb_cv);
        pthread_mutex_destroy(&m->mu);
        free(m);
        return RG_ENOMEM;
    }
    if (m->cfg.warm)
        pool_set_warm(m->pool, sess_warm_prepare, sess_warm_discard, m);
    *out = m;
    return 0;
}

void sess_mgr_free(sess_mgr *m)
{
    if (!m)
        return;
    if (m->cfg.warm)
        pool_set_warm(m->pool, NULL, NULL, NULL); /* its egress slots go with m */
    pthread_mutex_lock(&m->mu);
    m->stopping = 1;
    pthread_cond_broadcast(&m->hb_cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->hb, NULL);
    sess_checkers_stop(m); /* the queued checks are answered first */
    while (m->table) {
        sess *s = m->table;
        m->table = s->next;
        sess_release_local(s);
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
    return s->cur ? s->cur->reg : NULL;
}

/* ---- create ---- */

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

/* A use of s: when (idle times) and in which order (victim.c: two uses in
   one millisecond are still ordered). */
static void used_now(sess_mgr *m, sess *s)
{
    s->last_used_ms = rg_now_ms();
    s->used_seq = __atomic_add_fetch(&m->use_seq, 1, __ATOMIC_SEQ_CST);
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
    if (o)
        sess_set_options(s, o->width, o->height, o->user_agent, o->locale, o->timezone);
    s->created_ms = rg_wall_ms();
    used_now(m, s);
    s->busy = 1;
    s->refs = 1;
    int rc = sess_lease_context(s, timeout_ms, NULL, err, errlen);
    if (rc == 0 && (rc = sess_bind_lease(s, NULL)) < 0)
        snprintf(err, errlen, "out of memory");
    if (rc == 0 && (rc = sess_apply_options(s)) < 0)
        snprintf(err, errlen, "the browser refused the session's options (%s)", rg_err_code(rc));
    if (rc == 0 && o && o->state)
        rc = sess_state_apply(s, o->state, err, errlen);
    if (rc == 0) {
        rc = sess_write_new(s, reserved);
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
        sess_release_local(s);
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
    int rc = sess_hold_locked(m, s, timeout_ms);
    if (rc < 0) {
        if (s->refs == 1 && !s->busy && !s->qhead && !s->live && s->in_table)
            table_remove(m, s); /* nobody else wanted it: unref frees it */
        sess_unref_locked(m, s);
        pthread_mutex_unlock(&m->mu);
        snprintf(err, errlen, "the session is busy with earlier commands; try again");
        return RG_ECONFLICT;
    }
    int live = s->live;
    pthread_mutex_unlock(&m->mu);

    if (live && sess_lost(s)) {
        /* The browser died: restore from the checkpoint on a fresh one. */
        rg_log(RG_LOG_INFO, "session", "%s: browser gone, restoring from its checkpoint", s->id);
        sess_drop_local(s);
        live = 0;
    }
    if (live && sess_check_lease(s) == RG_ECONFLICT) {
        /* Its lease lapsed here (this worker was cut off or stopped) and
           another worker claimed it: take it back from there instead. */
        live = 0;
    }
    if (live && sess_wake(s) < 0) {
        /* A frozen page that does not wake: restore it from its checkpoint instead. */
        rg_log(RG_LOG_WARN, "session", "%s: the frozen page did not wake, restoring it", s->id);
        sess_drop_local(s);
        live = 0;
    }
    if (!live && (rc = sess_take_over(s, timeout_ms, rebuild, ri, err, errlen)) < 0) {
        pthread_mutex_lock(&m->mu);
        sess_unhold_locked(m, s);
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    pthread_mutex_lock(&m->mu);
    used_now(m, s);
    s->no_freeze = 0;
    pthread_mutex_unlock(&m->mu);
    if (s->live) {
        sess_tabs_reap(s);
        s->cur = s->active;
    }
    *out = s;
    return 0;
}

void sess_done(sess *s, int full)
{
    sess_mgr *m = s->m;
    sess_cast_apply(s); /* a viewer came or went, or a restore made a fresh page */
    sess_checkpoint(s, full);
    s->has_hint = 0;
    s->cur = s->active;
    pthread_mutex_lock(&m->mu);
    if (full >= 0)
        sess_unjudge_locked(s); /* the command may have edited the page */
    used_now(m, s);
    sess_unhold_locked(m, s);
    pthread_mutex_unlock(&m->mu);
}

/* ---- close and info ---- */

int sess_close(sess *s)
{
    sess_mgr *m = s->m;
    char mk[256], lk[256], pk[256], wk[256], ik[256], qk[256];
    sess_key(mk, sizeof mk, s, "meta");
    sess_key(lk, sizeof lk, s, "lease");
    sess_key(pk, sizeof pk, s, "park");
    sess_key(wk, sizeof wk, s, "want");
    sess_index_key(ik, sizeof ik, s->tenant);
    sess_quota_key(qk, sizeof qk, s->tenant);
    /* The registries of its tabs: the ones open here and the ones the last capture lists. */
    sess_capture parked = {0};
    redisReply *rep = rg_redis_command(m->redis, "GET %s", pk);
    int failed = rep == NULL;
    if (rep && rep->type == REDIS_REPLY_STRING && rep->len > 0)
        sess_unpack(rep->str, rep->len, &parked);
    freeReplyObject(rep);
    char **keys = NULL;
    size_t n_keys = 0;
    if (!failed)
        sess_capture_page_keys(s, &parked, &keys, &n_keys);
    sess_capture_free(&parked);
    rep = failed ? NULL : rg_redis_command(m->redis, "DEL %s %s %s %s", mk, lk, pk, wk);
    int rc = rep && rep->type == REDIS_REPLY_INTEGER ? 0 : RG_EUNAVAIL;
    freeReplyObject(rep);
    if (rc == 0) {
        /* The quota slot comes free at once (were this lost, the slot would
           still come back: its member is dropped once its meta is found gone).
           The listing and the quota are the tenant's keys, in their own slots. */
        rg_redis_pipe *p = rg_redis_pipe_new(m->redis);
        redisReply *z[2] = {NULL, NULL};
        if (p && rg_redis_pipe_add(p, "ZREM %s %s", ik, s->id) == 0 &&
            rg_redis_pipe_add(p, "ZREM %s %s", qk, s->id) == 0)
            rg_redis_pipe_run(p, z);
        rg_redis_pipe_free(p);
        freeReplyObject(z[0]);
        freeReplyObject(z[1]);
    }
    if (rc == 0) {
        for (size_t i = 0; i < n_keys; i++)
            m->store->ops->drop(m->store, keys[i]);
        sess_tab *v[SESS_TABS_CAP];
        int n = s->lease ? sess_tabs_snapshot(s, v) : 0;
        for (int i = 0; i < n; i++)
            m->store->ops->drop(m->store, v[i]->page_key);
    }
    for (size_t i = 0; i < n_keys; i++)
        free(keys[i]);
    free(keys);
    if (rc < 0)
        return rc;
    sess_drop_local(s);
    return 0;
}

void sess_wait_turn(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms)
{
    pthread_mutex_lock(&m->mu);
    sess *s = find(m, tenant, sid);
    if (s) {
        s->refs++;
        if (sess_hold_locked(m, s, timeout_ms) == 0)
            sess_unhold_locked(m, s);
        else
            sess_unref_locked(m, s);
    }
    pthread_mutex_unlock(&m->mu);
}

void sess_info_free(sess_info *i)
{
    free(i->url);
    free(i->title);
    free(i->emulation);
    i->url = i->title = i->emulation = NULL;
}

/* Queues the three reads of sid's info (tenant and sid valid): its meta,
   lease and park lengths, in that order. */
static int queue_info_reads(rg_redis_pipe *p, const char *tenant, const char *sid)
{
    sess tmp;
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.tag, sizeof tmp.tag, "{t:%s:s:%s}", tenant, sid);
    char mk[256], lk[256], pk[256];
    sess_key(mk, sizeof mk, &tmp, "meta");
    sess_key(lk, sizeof lk, &tmp, "lease");
    sess_key(pk, sizeof pk, &tmp, "park");
    return rg_redis_pipe_add(p, "HGETALL %s", mk) < 0 || rg_redis_pipe_add(p, "GET %s", lk) < 0 ||
                   rg_redis_pipe_add(p, "STRLEN %s", pk) < 0
               ? RG_ENOMEM
               : 0;
}

/* out from the replies of queue_info_reads (NULL: none came): 0,
   RG_ENOTFOUND (its keys expired), RG_EUNAVAIL or RG_ENOMEM. */
static int info_from(redisReply *const rs[3], sess_info *out)
{
    const redisReply *meta = rs[0], *lease = rs[1], *plen = rs[2];
    memset(out, 0, sizeof *out);
    if (plen && plen->type == REDIS_REPLY_INTEGER)
        out->parked_bytes = (size_t)plen->integer;
    if (!meta || meta->type != REDIS_REPLY_ARRAY)
        return RG_EUNAVAIL;
    if (meta->elements == 0)
        return RG_ENOTFOUND;
    int held = lease && lease->type == REDIS_REPLY_STRING;
    /* Live without a lease: its worker died; the next command restores it. */
    snprintf(out->state, sizeof out->state, "%s", held ? "live" : "parked");
    out->frozen = held && !strcmp(sess_hash_str(meta, "frozen"), "1");
    snprintf(out->worker, sizeof out->worker, "%s", held ? lease->str : "");
    out->url = strdup(sess_hash_str(meta, "url"));
    out->title = strdup(sess_hash_str(meta, "title"));
    out->created_ms = (int64_t)sess_hash_num(meta, "created");
    out->last_used_ms = (int64_t)sess_hash_num(meta, "last_used");
    out->width = (int)sess_hash_num(meta, "w");
    out->height = (int)sess_hash_num(meta, "h");
    out->emulation = strdup(sess_hash_str(meta, "emul"));
    if (!out->url || !out->title || !out->emulation) {
        sess_info_free(out);
        return RG_ENOMEM;
    }
    return 0;
}

int sess_get_info(sess_mgr *m, const char *tenant, const char *sid, sess_info *out)
{
    memset(out, 0, sizeof *out);
    if (!valid_name(tenant, SESS_TENANT_MAX) || !valid_name(sid, SESS_ID_MAX))
        return RG_ENOTFOUND;
    rg_redis_pipe *p = rg_redis_pipe_new(m->redis);
    if (!p)
        return RG_ENOMEM;
    redisReply *rs[3] = {NULL, NULL, NULL};
    int rc = queue_info_reads(p, tenant, sid);
    if (rc == 0 && rg_redis_pipe_run(p, rs) < 0)
        rc = RG_EUNAVAIL;
    rg_redis_pipe_free(p);
    if (rc == 0)
        rc = info_from(rs, out);
    for (int i = 0; i < 3; i++)
        freeReplyObject(rs[i]);
    return rc;
}

/* "<ms>:<sid>" into *ms and sid: 0, or -1 when it is not such a cursor. */
static int parse_cursor(const char *c, long long *ms, char *sid)
{
    char *end;
    errno = 0;
    if (c[0] < '0' || c[0] > '9')
        return -1;
    *ms = strtoll(c, &end, 10);
    if (errno || *end != ':' || !valid_name(end + 1, SESS_ID_MAX))
        return -1;
    snprintf(sid, SESS_ID_MAX + 1, "%s", end + 1);
    return 0;
}

void sess_list_free(sess_listed *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        sess_info_free(&v[i].info);
    free(v);
}

typedef struct by_slot {
    int slot;
    size_t i; /* the session's place on the page */
} by_slot;

static int by_slot_cmp(const void *a, const void *b)
{
    const by_slot *x = a, *y = b;
    return x->slot != y->slot ? (x->slot < y->slot ? -1 : 1) : (x->i < y->i ? -1 : x->i > y->i);
}

/*
 * The page's sessions, read in one pipeline rather than a round trip or
 * two per session, then one ZREM of those whose keys expired. Each session
 * has its own slot: the reads are queued in slot order, so that on a
 * cluster, where a pipeline sends consecutive commands for one node
 * together, a page costs about a round trip per master.
 */
static int list_infos(sess_mgr *m, const char *tenant, const char *ik, char (*ids)[SESS_ID_MAX + 1],
                      size_t k, sess_listed *v, size_t *n)
{
    rg_redis_pipe *p = rg_redis_pipe_new(m->redis);
    redisReply **rs = calloc(3 * k + 1, sizeof *rs);
    by_slot *ord = calloc(k + 1, sizeof *ord);
    size_t *at = calloc(k + 1, sizeof *at); /* where a place's replies are in rs, over 3 */
    int rc = p && rs && ord && at ? 0 : RG_ENOMEM;
    for (size_t i = 0; i < k && rc == 0; i++) {
        char tag[128];
        int len = snprintf(tag, sizeof tag, "{t:%s:s:%s}", tenant, ids[i]);
        ord[i] = (by_slot){rg_redis_slot(tag, (size_t)len), i};
    }
    if (rc == 0)
        qsort(ord, k, sizeof *ord, by_slot_cmp);
    for (size_t j = 0; j < k && rc == 0; j++) {
        at[ord[j].i] = j;
        rc = queue_info_reads(p, tenant, ids[ord[j].i]);
    }
    if (rc == 0 && k && rg_redis_pipe_run(p, rs) < 0)
        rc = RG_EUNAVAIL;
    rg_redis_pipe_free(p);
    free(ord);
    const char **gone = calloc(k + 2, sizeof *gone);
    size_t ngone = 0;
    if (!gone && rc == 0)
        rc = RG_ENOMEM;
    for (size_t i = 0; i < k && rc == 0; i++) {
        int got = info_from(rs + 3 * at[i], &v[*n].info);
        if (got == 0)
            snprintf(v[(*n)++].sid, sizeof v->sid, "%s", ids[i]);
        else if (got == RG_ENOTFOUND)
            gone[2 + ngone++] = ids[i]; /* its keys expired: it leaves the index */
        else
            rc = got;
    }
    for (size_t i = 0; rs && i < 3 * k; i++)
        freeReplyObject(rs[i]);
    free(rs);
    free(at);
    if (rc == 0 && ngone) {
        gone[0] = "ZREM";
        gone[1] = ik;
        freeReplyObject(rg_redis_argv(m->redis, (int)ngone + 2, gone, NULL));
    }
    free(gone);
    return rc;
}

int sess_list(sess_mgr *m, const char *tenant, const char *after, size_t limit, sess_listed **out,
              size_t *n, char *next)
{
    *out = NULL;
    *n = 0;
    next[0] = '\0';
    long long from = 0;
    char last[SESS_ID_MAX + 1] = "";
    if (after && *after && parse_cursor(after, &from, last) < 0)
        return RG_EBADREQ;
    if (limit < 1 || limit > SESS_LIST_MAX)
        limit = SESS_LIST_MAX;
    if (!valid_name(tenant, SESS_TENANT_MAX))
        return 0;
    char ik[256];
    sess_index_key(ik, sizeof ik, tenant);
    /* The index is ordered by creation (ms), then by id among sessions of one
       ms, as Redis orders equal scores: a page starts at the cursor's ms,
       past the ids up to the cursor's of that ms. */
    long long ties = 0;
    if (last[0]) {
        redisReply *t = rg_redis_command(m->redis, "ZCOUNT %s %lld %lld", ik, from, from);
        if (!t || t->type != REDIS_REPLY_INTEGER) {
            freeReplyObject(t);
            return RG_EUNAVAIL;
        }
        ties = t->integer;
        freeReplyObject(t);
    }
    size_t want = limit + (size_t)(ties < 0 ? 0 : ties > SESS_LIST_MAX ? SESS_LIST_MAX : ties);
    /* (hiredis's format knows %lld, not %zu) */
    redisReply *rep =
        rg_redis_command(m->redis, "ZRANGE %s %lld +inf BYSCORE LIMIT 0 %lld WITHSCORES", ik, from,
                         (long long)want);
    int rc = rep && rep->type == REDIS_REPLY_ARRAY && rep->elements % 2 == 0 ? 0 : RG_EUNAVAIL;
    char(*ids)[SESS_ID_MAX + 1] = rc == 0 ? calloc(limit, sizeof *ids) : NULL;
    sess_listed *v = rc == 0 ? calloc(limit, sizeof *v) : NULL;
    if (rc == 0 && (!ids || !v))
        rc = RG_ENOMEM;
    size_t seen = 0, k = 0; /* entries of this page, live or expired; ids to read */
    for (size_t i = 0; rc == 0 && i + 1 < rep->elements && seen < limit; i += 2) {
        const char *sid = rep->element[i]->str;
        long long ms = rep->element[i + 1]->str ? strtoll(rep->element[i + 1]->str, NULL, 10) : 0;
        if (!sid || (last[0] && ms == from && strcmp(sid, last) <= 0))
            continue; /* on the cursor's page or before it */
        seen++;
        snprintf(next, SESS_CURSOR_MAX, "%lld:%s", ms, sid);
        if (valid_name(sid, SESS_ID_MAX))
            snprintf(ids[k++], sizeof *ids, "%s", sid);
    }
    freeReplyObject(rep);
    if (seen < limit)
        next[0] = '\0'; /* the index ended within this page */
    if (rc == 0)
        rc = list_infos(m, tenant, ik, ids, k, v, n);
    free(ids);
    if (rc < 0) {
        sess_list_free(v, *n);
        *n = 0;
        next[0] = '\0';
        return rc;
    }
    *out = v;
    return 0;
}

size_t sess_count(sess_mgr *m, const char *tenant)
{
    size_t n = 0;
    if (!valid_name(tenant, SESS_TENANT_MAX) || sess_quota_count(m, tenant, &n) < 0)
        return 0;
    return n;
}
