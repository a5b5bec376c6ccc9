/*
 * lease.c - who holds a session: its Redis lease and the browser context it
 * runs in. The Redis side is a handful of Lua scripts, one round trip each:
 * create (a new session's meta and lease), claim (take the lease unless
 * another live worker holds it), beat (refresh the leases this worker holds
 * and hear park requests), save (a checkpoint or a park, only while the
 * lease is ours), frozen (what session.info says of a frozen page) and
 * release. Around them: leasing a context from the pool
 * (parking the least recently used idle session when it is full), binding
 * and letting go of it, the checkpoint at the end of a command, parking,
 * the heartbeat thread (which also freezes the pages of sessions idle for
 * freeze_idle_ms; sess_wake wakes them), and the takeover that makes a
 * session live here.
 *
 * Threading: the heartbeat runs on its own thread (sess_heartbeat_main) and
 * takes only idle sessions, through session.c's FIFO, so everything else
 * here runs for the session's holder (a command, the heartbeat or a park
 * holding it). m->mu guards the table fields (live, busy, refs, n_live,
 * frozen, stats); Redis calls take their own connection.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- Redis scripts ---- */

/*
 * Fencing. Every claim takes the next number of the meta's field "fence"
 * (HINCRBY: it only grows while the session exists; a create starts it at
 * 1), and every write below (checkpoint, park, frozen, release, the beat's
 * renewal, and the registry's commits and parks through reg_fence) goes
 * ahead only while that field still holds the token this worker got. A
 * worker stopped, partitioned or slow past its lease, whose session another
 * worker claimed meanwhile, writes nothing when it wakes up, even with the
 * same worker id; the refused write makes it drop its copy of the session.
 */

/* KEYS meta lease park want; ARGV me lease_ms now token. Makes this worker the
   owner unless another live one holds the lease (the lease holding our own id
   counts as ours only with our token: a worker of the same id elsewhere is
   another); returns the session's meta, parked state and new fence token in
   the same round trip. */
static rg_redis_script claim_script = {
    "if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end\n"
    "local owner = redis.call('GET', KEYS[2])\n"
    "if owner and (owner ~= ARGV[1] or\n"
    "              (redis.call('HGET', KEYS[1], 'fence') or '0') ~= ARGV[4]) then\n"
    "  return {'busy', owner}\n"
    "end\n"
    "local token = redis.call('HINCRBY', KEYS[1], 'fence', 1)\n"
    "redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])\n"
    "redis.call('DEL', KEYS[4])\n"
    "local prev = redis.call('HGET', KEYS[1], 'state') or ''\n"
    "if owner then prev = 'mine' end\n"
    "redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'state', 'live', 'last_used', ARGV[3],\n"
    "           'frozen', '0')\n"
    "return {'ok', prev, redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[3]) or '',\n"
    "        token}\n",
    ""};

/* KEYS lease want meta park; ARGV me lease_ms ttl token. -1: no longer ours; 1:
   asked to park; 0. A lease that expired while Redis was away (its clock ran
   on) is taken back when nobody else claimed the session meanwhile. A live
   session's meta and checkpoint live on while it is live: only commands that
   change the page write a checkpoint, so one only read from would otherwise
   lose them after the dormant TTL (and with them its listing and its quota
   slot) while it still runs here. */
static rg_redis_script beat_script = {
    "if redis.call('HGET', KEYS[3], 'fence') ~= ARGV[4] then return -1 end\n"
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
   lease_ms token w h (the viewport, which resize changes) emul_changed emul
   (the emulate op's state for session.info, "" for none, written only when
   it changed since the last save). Writes a checkpoint (state 'live') or a park (state
   'parked', lease and request gone) only while this worker owns the session:
   its fence token, and its lease (or no lease and the meta still naming it
   after a Redis restart). */
static rg_redis_script save_script = {
    "if redis.call('HGET', KEYS[1], 'fence') ~= ARGV[11] then return 0 end\n"
    "local v = redis.call('GET', KEYS[2])\n"
    "if v ~= ARGV[1] then\n"
    "  if v or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end\n"
    "  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[10])\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'state', ARGV[4], 'url', ARGV[5], 'title', ARGV[6],\n"
    "           'sx', ARGV[7], 'sy', ARGV[8], 'last_used', ARGV[3], 'w', ARGV[12], 'h', ARGV[13])\n"
    "if ARGV[14] == '1' then\n"
    "  if ARGV[15] == '' then redis.call('HDEL', KEYS[1], 'emul')\n"
    "  else redis.call('HSET', KEYS[1], 'emul', ARGV[15]) end\n"
    "end\n"
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

/* KEYS meta lease; ARGV me frozen token. Says whether the owner froze the page
   (session.info), only while the lease and the fence are ours. */
static rg_redis_script frozen_script = {
    "if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end\n"
    "if redis.call('HGET', KEYS[1], 'fence') ~= ARGV[3] then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'frozen', ARGV[2])\n"
    "return 1\n",
    ""};

/* KEYS lease meta; ARGV me token. Lets go of a lease only if it and the fence are
   still ours. */
static rg_redis_script release_script = {
    "if redis.call('GET', KEYS[1]) == ARGV[1] and\n"
    "   redis.call('HGET', KEYS[2], 'fence') == ARGV[2] then redis.call('DEL', KEYS[1]) end\n"
    "return 1\n",
    ""};

/* ---- keys ---- */

void sess_key(char *out, size_t len, const sess *s, const char *kind)
{
    snprintf(out, len, "rg:%s:%s", s->tag, kind);
}

/* ---- the fence ---- */

const reg_fence *sess_reg_fence(sess *s)
{
    if (!s->fence_key[0])
        sess_key(s->fence_key, sizeof s->fence_key, s, "meta");
    s->fence_ref.key = s->fence_key;
    s->fence_ref.token = &s->fence;
    return &s->fence_ref;
}

void sess_set_fence(sess *s, int64_t token)
{
    sess_reg_fence(s);
    __atomic_store_n(&s->fence, token, __ATOMIC_SEQ_CST);
}

/* A write found another worker's token: s was claimed elsewhere; our copy goes. */
static void fenced_off(sess *s, const char *what)
{
    rg_log(RG_LOG_WARN, "session", "%s: %s refused, another worker claimed the session; "
           "dropping the local copy", s->id, what);
    pthread_mutex_lock(&s->m->mu);
    s->m->stats.fenced++;
    pthread_mutex_unlock(&s->m->mu);
    sess_drop_local(s);
}

void sess_index_key(char *out, size_t len, const char *tenant)
{
    snprintf(out, len, "rg:t:%s:sessions", tenant);
}

static const redisReply *field(const redisReply *h, const char *name)
{
    for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
        if (h->element[i]->type == REDIS_REPLY_STRING && !strcmp(h->element[i]->str, name))
            return h->element[i + 1];
    return NULL;
}

const char *sess_hash_str(const redisReply *h, const char *name)
{
    const redisReply *v = field(h, name);
    return v && v->type == REDIS_REPLY_STRING ? v->str : "";
}

double sess_hash_num(const redisReply *h, const char *name)
{
    return strtod(sess_hash_str(h, name), NULL);
}

/* ---- the context on a lease ---- */

/* 1 when this worker has no room for one more live session: its count, or the pool's. */
static int no_room(sess_mgr *m)
{
    pthread_mutex_lock(&m->mu);
    int full = m->n_live >= m->cfg.capacity;
    pthread_mutex_unlock(&m->mu);
    return full || !pool_has_room(m->pool);
}

/* How long a lease request waits in the pool's queue before it looks again for a session
   to park (one may have gone idle, or left its minimum time live, meanwhile). */
#define LEASE_SLICE_MS 500

int sess_lease_context(sess *s, int timeout_ms, sess_restore_info *ri, char *err, size_t errlen)
{
    sess_mgr *m = s->m;
    int64_t t_begin = rg_now_ms(), room_ms = 0;
    int parks = 0;
    if (timeout_ms <= 0)
        timeout_ms = POOL_LEASE_TIMEOUT_MS;
    int64_t deadline = rg_now_ms() + timeout_ms;
    /* The context's own proxy port, bound to the tenant: its pages reach
       nothing the tenant's rules do not allow, loopback included. */
    char proxy[64];
    /* Fair turns among tenants when the pool is full, one place kept across
       the slices below; a restore is made within its browser's bound on
       parks and restores at once. */
    uint64_t ticket = 0;
    pool_lease_opts o = {.proxy_server = NULL, .owner = s->tenant, .ticket = &ticket,
                         .work = ri != NULL, .warm = m->cfg.warm};
    if (m->egress) {
        int erc = egress_slot_open(m->egress, &s->egress);
        if (erc < 0) {
            snprintf(err, errlen, "could not open the egress proxy for the context");
            return erc;
        }
        egress_slot_bind(s->egress, s->tenant);
        snprintf(proxy, sizeof proxy, "socks5://127.0.0.1:%d", egress_slot_port(s->egress));
        o.proxy_server = proxy;
        o.proxy_bypass = "<-loopback>";
    }
    /*
     * Full (by count or by the memory budget): park a session to make room
     * first, rather than wait for one to end. With nothing to park, wait in
     * the pool's queue a slice at a time, looking again between slices,
     * until the deadline.
     */
    int retry = 0, rc;
    for (int waited = 0;;) {
        if (m->cfg.park_lru && no_room(m)) {
            int64_t t_park = rg_now_ms();
            int prc = sess_park_lru(m, s, (int)(deadline - t_park));
            room_ms += rg_now_ms() - t_park;
            if (prc == 0)
                parks++;
            else if (prc < 0 && !waited) {
                waited = 1;
                pthread_mutex_lock(&m->mu);
                m->stats.room_waits++;
                pthread_mutex_unlock(&m->mu);
            }
        }
        int64_t t0 = rg_now_ms(), left = deadline - t0;
        int slice = m->cfg.park_lru && left > LEASE_SLICE_MS ? LEASE_SLICE_MS : (int)left;
        o.work_timeout_ms = left > 0 ? (int)left : 1; /* a work slot is waited for to the end */
        rc = pool_acquire_with(m->pool, &o, slice > 0 ? slice : 1, &s->lease, &retry);
        /* Done, failed otherwise, out of time, or refused at once (the queue is full). */
        if (rc != RG_EPOOL || rg_now_ms() >= deadline || rg_now_ms() - t0 < slice / 2)
            break;
    }
    if (ri) {
        int wait_ms, create_ms;
        pool_lease_times(s->lease, &wait_ms, &create_ms);
        ri->parks += parks;
        ri->ms[SESS_RS_ROOM] += (int)room_ms;
        ri->ms[SESS_RS_CONTEXT] += create_ms;
        ri->ms[SESS_RS_QUEUE] += (int)(rg_now_ms() - t_begin - room_ms - create_ms);
    }
    if (rc == 0) {
        /* A warm context came pointed at a slot of its own: that one is the session's. */
        void *token = pool_lease_take_token(s->lease);
        if (token && token != (void *)m) {
            egress_slot_close(s->egress);
            s->egress = token;
            egress_slot_bind(s->egress, s->tenant);
        }
    }
    if (rc < 0) {
        egress_slot_close(s->egress);
        s->egress = NULL;
    }
    if (rc == RG_EPOOL)
        snprintf(err, errlen, "no browser capacity: every context is busy; retry in %d ms",
                 retry);
    else if (rc < 0)
        snprintf(err, errlen, "could not get a browser context (%s)", rg_err_code(rc));
    return rc;
}

/*
 * A warm context (pool_set_warm) is made for no one yet: with the egress
 * proxy on, it gets a slot of its own, bound to nobody (it refuses every
 * connection) until a session leases the context and binds it to its
 * tenant. Without the proxy the token is m itself (no slot).
 */
void *sess_warm_prepare(void *ud, pool_warm_opts *o)
{
    sess_mgr *m = ud;
    if (!m->egress)
        return m;
    egress_slot *slot = NULL;
    if (egress_slot_open(m->egress, &slot) < 0)
        return NULL;
    snprintf(o->proxy_server, sizeof o->proxy_server, "socks5://127.0.0.1:%d",
             egress_slot_port(slot));
    snprintf(o->proxy_bypass, sizeof o->proxy_bypass, "<-loopback>");
    return slot;
}

void sess_warm_discard(void *ud, void *token)
{
    if (token && token != ud)
        egress_slot_close(token);
}

/* Registers the lost-browser callback, the first tab and its registry page on a fresh lease. */
int sess_bind_lease(sess *s, const char *first_tab)
{
    sess_forget_ckpt(s);
    sess_events_bind(s);
    sess_tabs_free(s);
    int rc = sess_tabs_init(s, first_tab);
    if (rc == 0)
        sess_tabs_bind(s);
    return rc;
}

/* What the last checkpoint wrote is no longer known (a new lease, a restore, a drop). */
void sess_forget_ckpt(sess *s)
{
    free(s->ckpt_url);
    free(s->ckpt_title);
    free(s->ckpt_origin);
    s->ckpt_url = s->ckpt_title = s->ckpt_origin = NULL;
    s->ckpt_valid = 0;
    s->load_report = 0;
}

/*
 * Gives the lease back, after the callbacks that point at s: the
 * browser-level subscription outlives the context, and a check in flight
 * answers on the context's connection. The session's scratch files go too.
 */
void sess_release_local(sess *s)
{
    sess_tabs_unbind(s);
    sess_events_unbind(s);
    sess_checks_drain(s);
    sess_tabs_free(s);
    pool_release(s->lease);
    s->lease = NULL;
    egress_slot_close(s->egress);
    s->egress = NULL;
    sess_files_clear(s); /* uploads and downloads go with the context */
    sess_console_clear(s); /* and so does what its pages said */
    sess_netlog_clear(s);  /* and the requests they made */
}

/* Forgets the local context of s (the browser died, or another worker took over). */
void sess_drop_local(sess *s)
{
    sess_release_local(s);
    s->last_ckpt = 0;
    sess_forget_ckpt(s);
    __atomic_store_n(&s->lost, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&s->m->mu);
    if (s->frozen) {
        s->frozen = 0; /* the page went with the context */
        s->m->stats.frozen--;
    }
    if (s->live) {
        s->live = 0;
        s->m->n_live--;
    }
    pthread_mutex_unlock(&s->m->mu);
}

/* ---- writes to Redis ---- */

static int release_lease(sess *s)
{
    char lk[256], mk[256], token[24];
    sess_key(lk, sizeof lk, s, "lease");
    sess_key(mk, sizeof mk, s, "meta");
    snprintf(token, sizeof token, "%lld", (long long)s->fence);
    const char *args[] = {lk, mk, s->m->worker, token};
    redisReply *rep = rg_redis_eval(s->m->redis, &release_script, 2, 2, args, NULL);
    int rc = rep && rep->type == REDIS_REPLY_INTEGER ? 0 : RG_EUNAVAIL;
    freeReplyObject(rep);
    return rc;
}

/*
 * Writes the new session's meta and lease. reserved: the create holds a
 * quota reservation, whose marker this consumes in the same script, so the
 * session exists from here on without a moment where its quota slot looks
 * dead; a marker that lapsed (the create took too long) writes nothing:
 * RG_ETIMEOUT.
 */
int sess_write_new(sess *s, int reserved)
{
    sess_mgr *m = s->m;
    char mk[256], lk[256], nk[256], ik[256];
    sess_key(mk, sizeof mk, s, "meta");
    sess_key(lk, sizeof lk, s, "lease");
    sess_new_key(nk, sizeof nk, s->tenant, s->id);
    sess_index_key(ik, sizeof ik, s->tenant);
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
                          "tz", s->timezone ? s->timezone : "", "sx", "0", "sy", "0",
                          "fence", "1"};
    int nargs = (int)(sizeof args / sizeof *args) - 3;
    redisReply *rep = rg_redis_eval(m->redis, &create_script, 3, nargs, args, NULL);
    int rc = !rep                                  ? RG_EUNAVAIL
             : rep->type != REDIS_REPLY_INTEGER    ? RG_EUNAVAIL
             : rep->integer == 1                   ? 0
                                                   : RG_ETIMEOUT;
    if (rep && rep->type == REDIS_REPLY_ERROR)
        rg_log(RG_LOG_ERROR, "session", "create of %s failed: %s", s->id, rep->str);
    freeReplyObject(rep);
    if (rc == 0) {
        sess_set_fence(s, 1);
        sess_lease_confirmed(s);
        /* The listing is the tenant's key, in another slot: a second command. */
        rep = rg_redis_command(m->redis, "ZADD %s %s %s", ik, now, s->id);
        rc = rep && rep->type == REDIS_REPLY_INTEGER ? 0 : RG_EUNAVAIL;
        freeReplyObject(rep);
    }
    return rc;
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
    char w[16], h[16]; /* the viewport: resize changes it */
    snprintf(w, sizeof w, "%d", s->width);
    snprintf(h, sizeof h, "%d", s->height);
    sess_key(mk, sizeof mk, s, "meta");
    sess_key(lk, sizeof lk, s, "lease");
    sess_key(pk, sizeof pk, s, "park");
    sess_key(wk, sizeof wk, s, "want");
    snprintf(ttl, sizeof ttl, "%lld", (long long)m->cfg.dormant_ttl_ms);
    snprintf(now, sizeof now, "%lld", (long long)rg_wall_ms());
    fmt_num(sx, sizeof sx, c->sx);
    fmt_num(sy, sizeof sy, c->sy);
    snprintf(lease, sizeof lease, "%d", m->cfg.lease_ms);
    char token[24];
    snprintf(token, sizeof token, "%lld", (long long)s->fence);
    /* s->media changes on the holder's thread, which this is */
    unsigned emul_gen = s->media_gen;
    int emul_changed = emul_gen != s->media_saved_gen;
    const char *args[] = {mk,    lk,  pk,     wk,       m->worker, ttl, now, state,
                          c->url ? c->url : "", c->title ? c->title : "", sx, sy,
                          blob ? blob : "", lease, token, w, h, emul_changed ? "1" : "0",
                          emul_changed && s->media ? s->media : ""};
    enum { N_ARGS = sizeof args / sizeof *args };
    size_t lens[N_ARGS];
    for (int i = 0; i < N_ARGS; i++)
        lens[i] = i == 12 ? (blob ? blob_len : 0) : strlen(args[i]);
    /* A park may wait for replicas (REFGATE_PARK_WAIT_REPLICAS): the one copy
       of the session is then on two servers before its context goes. */
    int parking = !strcmp(state, "parked") && m->cfg.park_wait_replicas > 0;
    int acked = -1;
    redisReply *rep = parking ? rg_redis_eval_wait(m->redis, &save_script, 4, N_ARGS - 4, args,
                                                   lens, m->cfg.park_wait_replicas,
                                                   m->cfg.park_wait_timeout_ms, &acked)
                              : rg_redis_eval(m->redis, &save_script, 4, N_ARGS - 4, args, lens);
    int r = !rep                                  ? RG_EUNAVAIL
            : rep->type != REDIS_REPLY_INTEGER    ? RG_EINTERNAL
            : rep->integer == 1                   ? 0
                                                  : RG_ECONFLICT;
    if (rep && rep->type == REDIS_REPLY_ERROR)
        rg_log(RG_LOG_ERROR, "session", "save of %s failed: %s", s->id, rep->str);
    freeReplyObject(rep);
    if (r == 0) {
        sess_lease_confirmed(s);
        s->media_saved_gen = emul_gen;
    }
    if (r == 0 && parking && acked < m->cfg.park_wait_replicas) {
        /* Written on the master, not known to be on a replica: a failover now loses it. */
        rg_log(RG_LOG_WARN, "session", "%s: park acknowledged by %d of %d replicas in %d ms",
               s->id, acked < 0 ? 0 : acked, m->cfg.park_wait_replicas,
               m->cfg.park_wait_timeout_ms);
        pthread_mutex_lock(&m->mu);
        m->stats.park_unreplicated++;
        pthread_mutex_unlock(&m->mu);
    }
    return r;
}

/* ---- checkpoints ---- */

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

sess_pointer *sess_pointer_of(sess *s)
{
    return &s->pointer;
}

void sess_note_scroll(sess *s, int known, double sx, double sy)
{
    /* The checkpoint holds the active tab's scroll, not another tab's. */
    s->has_hint = known && s->cur == s->active;
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
    sess_forget_ckpt(s);
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

/*
 * The checkpoint at the end of a command (sess_done): URL, title and scroll,
 * with cookies and storage when full or due; nothing when full < 0, when the
 * session is not live here or its page is gone.
 *
 * With defer, a light checkpoint whose URL and title are known (no event
 * since the last capture) but whose scroll is not (the command did not see
 * it: a key press, an eval) asks the page nothing: the heartbeat asks once
 * the session sits idle (beat, SESS_OWED_IDLE_MS), so the call into the page
 * does not hold up the session's next command. Until then a worker's death
 * loses that command's scroll at most; a later command that saw the scroll
 * pays the debt.
 */
static void checkpoint(sess *s, int full, int defer)
{
    sess_mgr *m = s->m;
    if (full < 0 || !s->live || sess_lost(s))
        return;
    s->cur = s->active; /* the session's URL and scroll are its active tab's */
    int64_t now = rg_now_ms();
    /* A tab that opened or closed: the full capture records the tab list. */
    int tabs_moved = __atomic_exchange_n(&s->tabs_changed, 0, __ATOMIC_SEQ_CST);
    full = full || tabs_moved ||
           (m->cfg.full_checkpoint_ms >= 0 && now - s->last_full_ms >= m->cfg.full_checkpoint_ms);
    sess_capture c = {0};
    char *blob = NULL;
    size_t len = 0;
    unsigned gen = __atomic_load_n(&s->page_gen, __ATOMIC_SEQ_CST);
    int known = !full && known_capture(s, gen, &c);
    if (!known && !full && defer && s->ckpt_valid && gen == s->ckpt_gen) {
        __atomic_store_n(&s->scroll_owed, 1, __ATOMIC_SEQ_CST);
        return;
    }
    __atomic_store_n(&s->scroll_owed, 0, __ATOMIC_SEQ_CST);
    /* Right after a navigation, the page's part of a full capture is in the
       observer's second report, a task after the load event: no call into a
       page that is busy with its load's aftermath. */
    int rc = 0;
    if (!known && full && s->load_report && s->load_gen == gen && s->load_tab == s->active &&
        !__atomic_load_n(&s->load_touched, __ATOMIC_SEQ_CST))
        rc = sess_capture_loaded(s, s->active->world, &c);
    else if (!known)
        rc = sess_capture_page(s, full, &c);
    s->load_report = 0;
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
        sess_forget_ckpt(s);
    else if (!known)
        keep_ckpt(s, gen, &c);
    else
        s->ckpt_sx = c.sx, s->ckpt_sy = c.sy;
    if (rc == RG_ECONFLICT)
        fenced_off(s, "the checkpoint");
    free(blob);
    sess_capture_free(&c);
}

void sess_checkpoint(sess *s, int full)
{
    checkpoint(s, full, 1);
}

/* ---- park ---- */

const char *sess_restore_phase(int phase)
{
    static const char *const names[SESS_RS_PHASES] = {
        "claim", "room", "queue", "context", "setup", "state", "nav", "observe", "fields", "tabs"};
    return phase >= 0 && phase < SESS_RS_PHASES ? names[phase] : "?";
}

/*
 * Parks s (held). A park is heavy work for its browser: it waits up to
 * work_ms for one of the browser's work slots (pool_work_begin), and parks
 * nothing when none comes (RG_EPOOL).
 */
static int park_held(sess *s, int work_ms, size_t *bytes, char *err, size_t errlen)
{
    sess_mgr *m = s->m;
    if (!s->live) {
        if (bytes)
            *bytes = 0;
        return 0;
    }
    if (!__atomic_load_n(&s->lost, __ATOMIC_SEQ_CST) &&
        pool_work_begin(s->lease, work_ms) == RG_EPOOL) {
        pthread_mutex_lock(&m->mu);
        m->stats.park_deferred++;
        pthread_mutex_unlock(&m->mu);
        snprintf(err, errlen, "its browser is busy with other parks and restores; try again");
        return RG_EPOOL;
    }
    sess_capture c = {0};
    sess_tabs_reap(s);
    s->cur = s->active;
    /* The capture runs script in the page: a frozen one is woken first. */
    int rc = __atomic_load_n(&s->lost, __ATOMIC_SEQ_CST) ? RG_ECRASHED : sess_wake(s);
    if (rc == 0)
        rc = sess_capture_page(s, 1, &c);
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
       lives), so a failure after it leaves a live session that reloads it;
       what the worker saw and the store has not yet been told goes first. */
    for (int i = 0; rc == 0 && i < s->n_tabs; i++)
        if (s->tabs[i]->reg)
            rc = reg_page_flush(s->tabs[i]->reg);
    for (int i = 0; rc == 0 && i < s->n_tabs; i++)
        rc = m->store->ops->park_fenced
                 ? m->store->ops->park_fenced(m->store, s->tabs[i]->page_key,
                                              m->cfg.dormant_ttl_ms, sess_reg_fence(s))
                 : m->store->ops->park(m->store, s->tabs[i]->page_key, m->cfg.dormant_ttl_ms);
    if (rc == 0 && (rc = save_state(s, "parked", &c, blob, len)) < 0) {
        for (int i = 0; i < s->n_tabs; i++) {
            sess_tab *t = s->tabs[i];
            reg_page_free(t->reg);
            if (reg_page_new(m->store, t->page_key, &m->cfg.reg, &t->reg) < 0)
                t->reg = NULL;
            else
                reg_page_set_fence(t->reg, sess_reg_fence(s));
        }
    }
    free(blob);
    sess_capture_free(&c);
    if (rc == RG_ECRASHED) {
        /* Nothing to capture: the last checkpoint stands; just let go. */
        release_lease(s);
        sess_drop_local(s);
        snprintf(err, errlen, "the session's browser died; it restores from its last checkpoint");
        return RG_ECRASHED;
    }
    if (rc < 0) {
        pool_work_end(s->lease); /* NULL once dropped */
        pthread_mutex_lock(&m->mu);
        m->stats.park_failures++;
        pthread_mutex_unlock(&m->mu);
        if (rc == RG_ECONFLICT) {
            /* Another worker owns it now: our copy is stale. */
            fenced_off(s, "the park");
            snprintf(err, errlen, "another worker took the session over");
        } else {
            snprintf(err, errlen, "could not park the session (%s)", rg_err_code(rc));
        }
        return rc;
    }
    sess_drop_local(s);
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
    return park_held(s, POOL_LEASE_TIMEOUT_MS, bytes, err, errlen);
}

/* Parks the idle live session of m that loses least (victim.c) to free a context. */
int sess_park_lru(sess_mgr *m, const sess *except, int timeout_ms)
{
    static const char *const why[] = {"loses nothing", "loses edits or not judged",
                                      "restored recently, nothing else idle"};
    pthread_mutex_lock(&m->mu);
    int tier = 0;
    sess *best = sess_victim_locked(m, except, rg_now_ms(), &tier);
    int ok = best && sess_hold_idle_locked(best);
    pthread_mutex_unlock(&m->mu);
    if (!ok)
        return RG_EPOOL;
    char err[128];
    int rc = park_held(best, timeout_ms > 0 ? timeout_ms : 1, NULL, err, sizeof err);
    rg_log(RG_LOG_INFO, "session", "parked %s (%s, least recently used) to free a context: %s",
           best->id, why[tier], rc == 0 ? "ok" : err);
    pthread_mutex_lock(&m->mu);
    if (rc == 0 && tier == 0)
        m->stats.evicted_clean++;
    else if (rc == 0 && tier == 1)
        m->stats.evicted_losing++;
    else if (rc == 0)
        m->stats.evicted_fresh++;
    sess_unhold_locked(m, best);
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
        int rc = sess_hold_locked(m, s, 30000);
        pthread_mutex_unlock(&m->mu);
        if (rc == 0) {
            char err[128];
            if (park_held(s, 30000, NULL, err, sizeof err) < 0) {
                failed++;
                rg_log(RG_LOG_WARN, "session", "%s not parked at shutdown: %s", s->id, err);
                release_lease(s);
                sess_drop_local(s);
            }
            pthread_mutex_lock(&m->mu);
            sess_unhold_locked(m, s);
            pthread_mutex_unlock(&m->mu);
        } else {
            failed++;
            pthread_mutex_lock(&m->mu);
            if (s->live) {
                s->live = 0; /* give up on it: its lease expires */
                m->n_live--;
            }
            sess_unref_locked(m, s);
            pthread_mutex_unlock(&m->mu);
        }
    }
    return failed;
}

/* ---- freezing ---- */

/* How long the page may take to answer a freeze or a wake. */
#define FREEZE_TIMEOUT_MS 5000

/* Tells Redis whether s is frozen, for session.info; best effort (a claim resets it). */
static void mark_frozen(sess *s, int frozen)
{
    char mk[256], lk[256];
    sess_key(mk, sizeof mk, s, "meta");
    sess_key(lk, sizeof lk, s, "lease");
    char token[24];
    snprintf(token, sizeof token, "%lld", (long long)s->fence);
    const char *args[] = {mk, lk, s->m->worker, frozen ? "1" : "0", token};
    redisReply *rep = rg_redis_eval(s->m->redis, &frozen_script, 2, 3, args, NULL);
    freeReplyObject(rep);
}

/* Sets the page's lifecycle state: "frozen" or "active". */
static int set_lifecycle(sess *s, const char *state)
{
    char q[64];
    snprintf(q, sizeof q, "{\"state\":\"%s\"}", state);
    cdp_reply r;
    int rc = sess_call(s, "Page.setWebLifecycleState", q, FREEZE_TIMEOUT_MS, &r);
    if (rc < 0)
        rg_log(RG_LOG_WARN, "session", "%s: the page was not made %s: %s", s->id, state,
               r.error[0] ? r.error : rg_err_code(rc));
    cdp_reply_free(&r);
    return rc;
}

/*
 * Sets the state of the page's window ("minimized" or "normal"). A frozen
 * page is hidden, and "active" alone leaves it hidden (timers throttled, no
 * animation frames): only a window coming back from minimized shows it again.
 */
static int set_window(sess *s, const char *state)
{
    char q[128];
    snprintf(q, sizeof q, "{\"windowId\":%d,\"bounds\":{\"windowState\":\"%s\"}}",
             s->window_id, state);
    cdp_reply r;
    int rc = sess_call(s, "Browser.setWindowBounds", q, FREEZE_TIMEOUT_MS, &r);
    if (rc < 0)
        rg_log(RG_LOG_WARN, "session", "%s: the page's window was not made %s: %s", s->id, state,
               r.error[0] ? r.error : rg_err_code(rc));
    cdp_reply_free(&r);
    return rc;
}

/* The id of the page's window into s->window_id. */
static int find_window(sess *s)
{
    cdp_reply r;
    int rc = sess_call(s, "Browser.getWindowForTarget", "{}", FREEZE_TIMEOUT_MS, &r);
    const cJSON *id = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r.result, "windowId") : NULL;
    if (rc == 0 && !cJSON_IsNumber(id))
        rc = RG_EPROTO;
    if (rc == 0)
        s->window_id = id->valueint;
    cdp_reply_free(&r);
    return rc;
}

/*
 * Sets the lifecycle of s's tabs other than the active one (whose window
 * the freeze minimizes): a popup left open stops with the session. A tab
 * that does not answer is only logged; the next command wakes it with the rest.
 */
static void other_tabs_lifecycle(sess *s, const char *state)
{
    sess_tab *v[SESS_TABS_CAP];
    int n = sess_tabs_snapshot(s, v);
    for (int i = 0; i < n; i++) {
        if (v[i] == s->active)
            continue;
        s->cur = v[i];
        set_lifecycle(s, state);
    }
    s->cur = s->active;
}

/*
 * Freezes the page of s (held idle by the heartbeat): its window is
 * minimized, then its timers, tasks and rendering stop until sess_wake. A
 * page that refuses is left running and not tried again before its next
 * command.
 */
static void freeze_held(sess *s)
{
    sess_mgr *m = s->m;
    if (!s->live || sess_lost(s))
        return;
    int rc = find_window(s);
    if (rc == 0)
        rc = set_window(s, "minimized");
    if (rc == 0 && (rc = set_lifecycle(s, "frozen")) < 0)
        set_window(s, "normal");
    if (rc == 0)
        other_tabs_lifecycle(s, "frozen");
    pthread_mutex_lock(&m->mu);
    if (rc == 0) {
        s->frozen = 1;
        m->stats.frozen++;
        m->stats.freezes++;
    } else {
        s->no_freeze = 1;
    }
    pthread_mutex_unlock(&m->mu);
    if (rc == 0) {
        mark_frozen(s, 1);
        rg_log(RG_LOG_DEBUG, "session", "%s frozen (idle)", s->id);
    }
}

int sess_wake(sess *s)
{
    sess_mgr *m = s->m;
    pthread_mutex_lock(&m->mu);
    int frozen = s->frozen;
    pthread_mutex_unlock(&m->mu);
    if (!frozen)
        return 0;
    int rc = set_lifecycle(s, "active");
    if (rc < 0)
        return rc;
    /* Running but hidden is still a working page: a failure here is only logged. */
    set_window(s, "normal");
    other_tabs_lifecycle(s, "active");
    pthread_mutex_lock(&m->mu);
    if (s->frozen) {
        s->frozen = 0;
        m->stats.frozen--;
    }
    m->stats.wakes++;
    pthread_mutex_unlock(&m->mu);
    mark_frozen(s, 0);
    return 0;
}

/* ---- heartbeat ---- */

/* When s's lease was last known good, as of a round trip that began at t0 (atomic). */
static void lease_confirmed_at(sess *s, int64_t t0)
{
    __atomic_store_n(&s->lease_ok_ms, t0, __ATOMIC_SEQ_CST);
}

void sess_lease_confirmed(sess *s)
{
    lease_confirmed_at(s, rg_now_ms());
}

/*
 * One run of beat_script for s: its lease renewed while its fence token is
 * ours. 0, 1 (another worker asked for it), RG_ECONFLICT (no longer ours), or
 * RG_EUNAVAIL (no answer). Any thread: reads only s's keys and token.
 */
static int renew(sess *s, const char *lease_ms, const char *ttl)
{
    char lk[256], wk[256], mk[256], pk[256], token[24];
    sess_key(lk, sizeof lk, s, "lease");
    sess_key(wk, sizeof wk, s, "want");
    sess_key(mk, sizeof mk, s, "meta");
    sess_key(pk, sizeof pk, s, "park");
    snprintf(token, sizeof token, "%lld", (long long)__atomic_load_n(&s->fence, __ATOMIC_SEQ_CST));
    const char *args[] = {lk, wk, mk, pk, s->m->worker, lease_ms, ttl, token};
    redisReply *rep = rg_redis_eval(s->m->redis, &beat_script, 4, 4, args, NULL);
    int rc = !rep                                ? RG_EUNAVAIL
             : rep->type != REDIS_REPLY_INTEGER ? 0
             : rep->integer < 0                 ? RG_ECONFLICT
                                                : (int)rep->integer;
    freeReplyObject(rep);
    return rc;
}

int sess_check_lease(sess *s)
{
    sess_mgr *m = s->m;
    int64_t ok = __atomic_load_n(&s->lease_ok_ms, __ATOMIC_SEQ_CST);
    /* Renewed (or written) within the lease: nobody else can have claimed it. */
    if (rg_now_ms() - ok < m->cfg.lease_ms)
        return 0;
    char lease_ms[24], ttl[24];
    snprintf(lease_ms, sizeof lease_ms, "%d", m->cfg.lease_ms);
    snprintf(ttl, sizeof ttl, "%lld", (long long)m->cfg.dormant_ttl_ms);
    int64_t t0 = rg_now_ms();
    int rc = renew(s, lease_ms, ttl);
    if (rc >= 0)
        lease_confirmed_at(s, t0);
    if (rc != RG_ECONFLICT)
        return 0;
    fenced_off(s, "acting on it after a lapse of the lease");
    return rc;
}

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
    char lease_ms[24], ttl[24];
    /* v[i]'s token is read while v[i] may run a command: its claim (the only
       writer) happens only while it is not live, so not in this snapshot. */
    snprintf(lease_ms, sizeof lease_ms, "%d", m->cfg.lease_ms);
    snprintf(ttl, sizeof ttl, "%lld", (long long)m->cfg.dormant_ttl_ms);
    for (int i = 0; res && i < k; i++) {
        int64_t t0 = rg_now_ms();
        int rc = renew(v[i], lease_ms, ttl);
        if (rc == RG_EUNAVAIL)
            break; /* Redis is away: the rest would wait as long */
        res[i] = rc == RG_ECONFLICT ? -1 : rc;
        if (rc >= 0)
            lease_confirmed_at(v[i], t0);
    }
    int64_t now = rg_now_ms();
    int judgements = 0;
    for (int i = 0; i < k; i++) {
        sess *s = v[i];
        pthread_mutex_lock(&m->mu);
        int idle = m->cfg.idle_park_ms > 0 && now - s->last_used_ms > m->cfg.idle_park_ms &&
                   !s->cast_on; /* watched: parked once the last viewer leaves */
        int act = (res && res[i] != 0) || idle;
        if (res && res[i] != 0)
            s->want_park = 1;
        /* Freezing comes first; parking, for the longer idle, after it. */
        /* A page someone watches (live view) keeps rendering. */
        int cold = !act && m->cfg.freeze_idle_ms > 0 && !s->frozen && !s->no_freeze &&
                   !s->cast_on &&
                   now - s->last_used_ms > m->cfg.freeze_idle_ms;
        /* What a park would lose, judged once it sits idle after a change
           (victim.c): always before a freeze, otherwise a few a beat, so that
           judging never holds up the leases' next beat for long. */
        int judge = !act && m->cfg.park_lru && !s->judged && !s->frozen &&
                    (cold || (judgements < SESS_JUDGE_PER_BEAT &&
                              now - s->last_used_ms >= 2 * m->cfg.heartbeat_ms));
        /* A checkpoint left the scroll to now (checkpoint): before a freeze too. */
        int owed = !act && !s->frozen && __atomic_load_n(&s->scroll_owed, __ATOMIC_SEQ_CST) &&
                   now - s->last_used_ms >= SESS_OWED_IDLE_MS;
        int held = (act || cold || judge || owed) && sess_hold_idle_locked(s);
        pthread_mutex_unlock(&m->mu);
        if (held && !act) {
            if (owed)
                checkpoint(s, 0, 0);
            if (judge) {
                sess_judge(s);
                judgements++;
            }
            if (cold)
                freeze_held(s);
            pthread_mutex_lock(&m->mu);
            sess_unhold_locked(m, s);
            pthread_mutex_unlock(&m->mu);
        } else if (held) {
            char err[128];
            if (res && res[i] < 0) {
                fenced_off(s, "the lease's renewal");
            } else {
                /* The heartbeat does not wait for a work slot: the next beat tries again. */
                int rc = park_held(s, 1, NULL, err, sizeof err);
                rg_log(rc == 0 ? RG_LOG_INFO : RG_LOG_WARN, "session", "%s parked (%s): %s",
                       s->id, res && res[i] > 0 ? "another worker asked" : "idle",
                       rc == 0 ? "ok" : err);
            }
            pthread_mutex_lock(&m->mu);
            sess_unhold_locked(m, s);
            pthread_mutex_unlock(&m->mu);
        }
        pthread_mutex_lock(&m->mu);
        sess_unref_locked(m, s);
        pthread_mutex_unlock(&m->mu);
    }
    free(res);
    free(v);
}

void *sess_heartbeat_main(void *arg)
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

/* ---- takeover ---- */

/* Asks the owner to park s: sets `want` for a while. */
static int ask_owner(sess *s)
{
    char wk[256], ms[24];
    sess_key(wk, sizeof wk, s, "want");
    snprintf(ms, sizeof ms, "%d", s->m->cfg.lease_ms * 2);
    redisReply *rep = rg_redis_command(s->m->redis, "SET %s %s PX %s", wk, s->m->worker, ms);
    int rc = rep ? 0 : RG_EUNAVAIL;
    freeReplyObject(rep);
    return rc;
}

/*
 * Claims s in Redis (claim_script), asking another live owner to park it
 * and trying again until deadline. 0 with the script's reply in *out
 * (caller frees): {"ok", previous state, meta, parked state}.
 */
static int claim(sess *s, int64_t deadline, redisReply **out, char *err, size_t errlen)
{
    sess_mgr *m = s->m;
    char mk[256], lk[256], pk[256], wk[256], lease[24], now[24];
    sess_key(mk, sizeof mk, s, "meta");
    sess_key(lk, sizeof lk, s, "lease");
    sess_key(pk, sizeof pk, s, "park");
    sess_key(wk, sizeof wk, s, "want");
    snprintf(lease, sizeof lease, "%d", m->cfg.lease_ms);
    char token[24];
    snprintf(token, sizeof token, "%lld", (long long)s->fence);
    int asked = 0;
    for (;;) {
        snprintf(now, sizeof now, "%lld", (long long)rg_wall_ms());
        int64_t t0 = rg_now_ms();
        const char *args[] = {mk, lk, pk, wk, m->worker, lease, now, token};
        redisReply *rep = rg_redis_eval(m->redis, &claim_script, 4, 4, args, NULL);
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
        if (!strcmp(what, "ok") && rep->elements > 4 &&
            rep->element[4]->type == REDIS_REPLY_INTEGER) {
            sess_set_fence(s, rep->element[4]->integer);
            lease_confirmed_at(s, t0);
            *out = rep;
            return 0;
        }
        if (!strcmp(what, "ok")) {
            freeReplyObject(rep);
            snprintf(err, errlen, "Redis at %s answered the claim oddly", rg_redis_where(m->redis));
            return RG_EINTERNAL;
        }
        /* busy: another live worker holds it. Ask it to park, then wait. */
        freeReplyObject(rep);
        if (!asked && ask_owner(s) == 0)
            asked = 1;
        if (rg_now_ms() >= deadline) {
            snprintf(err, errlen, "the session is held by another worker that did not let go "
                                  "in time; try again");
            return RG_ECONFLICT;
        }
        usleep(20000);
    }
}

/*
 * Makes s live here (s held, not live): claims it in Redis, waiting for
 * another live owner to park it, then rebuilds it on a fresh context.
 */
int sess_take_over(sess *s, int timeout_ms, int rebuild, sess_restore_info *ri, char *err,
                   size_t errlen)
{
    sess_mgr *m = s->m;
    int64_t deadline = rg_now_ms() + timeout_ms, t0 = rg_now_ms();
    redisReply *rep = NULL;
    int rc = claim(s, deadline, &rep, err, errlen);
    ri->ms[SESS_RS_CLAIM] = (int)(rg_now_ms() - t0);
    if (rc < 0)
        return rc;
    if (!rebuild) {
        freeReplyObject(rep);
        return 0; /* claimed, not rebuilt: the session is ours to close */
    }
    const redisReply *meta = rep->elements > 2 ? rep->element[2] : NULL;
    const redisReply *blob = rep->elements > 3 ? rep->element[3] : NULL;
    sess_set_options(s, (int)sess_hash_num(meta, "w"), (int)sess_hash_num(meta, "h"),
                     sess_hash_str(meta, "ua"), sess_hash_str(meta, "locale"),
                     sess_hash_str(meta, "tz"));
    s->created_ms = (int64_t)sess_hash_num(meta, "created");
    sess_capture parked = {0};
    int have_parked = blob && blob->type == REDIS_REPLY_STRING && blob->len > 0 &&
                      sess_unpack(blob->str, blob->len, &parked) == 0;
    char *url = strdup(sess_hash_str(meta, "url"));
    double sx = sess_hash_num(meta, "sx"), sy = sess_hash_num(meta, "sy");
    /* the emulate op's state, put back with the options (offline once the pages are back) */
    int held_offline = sess_emul_restore_begin(s, have_parked ? parked.media : NULL);
    freeReplyObject(rep);
    rc = url ? 0 : RG_ENOMEM;
    int64_t left = deadline - rg_now_ms();
    if (rc == 0)
        rc = sess_lease_context(s, left > 1000 ? (int)left : 1000, ri, err, errlen);
    int64_t t_setup = rg_now_ms();
    if (rc == 0 && (rc = sess_bind_lease(s, have_parked ? parked.tab : NULL)) < 0)
        snprintf(err, errlen, "out of memory");
    if (rc == 0 && (rc = sess_apply_options(s)) < 0)
        snprintf(err, errlen, "the browser refused the session's options (%s)", rg_err_code(rc));
    ri->ms[SESS_RS_SETUP] = (int)(rg_now_ms() - t_setup);
    if (rc == 0) {
        pthread_mutex_lock(&m->mu);
        s->live = 1;
        m->n_live++;
        pthread_mutex_unlock(&m->mu);
        rc = sess_rebuild(s, url, sx, sy, have_parked ? &parked : NULL, ri, err, errlen);
    }
    /* Then the other tabs, each on its URL and scroll, its refs re-bound. */
    int64_t t_tabs = rg_now_ms();
    if (rc == 0 && have_parked && parked.tabs)
        rc = sess_rebuild_tabs(s, &parked, ri);
    ri->ms[SESS_RS_TABS] = (int)(rg_now_ms() - t_tabs);
    if (rc == 0 && held_offline)
        sess_emul_restore_end(s, parked.media);
    free(url);
    sess_capture_free(&parked);
    if (rc < 0) {
        release_lease(s);
        sess_drop_local(s);
        return rc;
    }
    pool_work_end(s->lease); /* the restore's work is done: its browser may run another */
    ri->restored = 1;
    s->last_full_ms = rg_now_ms();
    pthread_mutex_lock(&m->mu);
    s->restored_ms = rg_now_ms();
    sess_unjudge_locked(s); /* a reloaded page, its fields put back */
    m->stats.restored++;
    for (int i = 0; i < SESS_RS_PHASES; i++)
        m->stats.restore_ms[i] += (uint64_t)ri->ms[i];
    pthread_mutex_unlock(&m->mu);
    char where[512];
    int n = snprintf(where, sizeof where, "%s restored in %lld ms (%d parked for room):", s->id,
                     (long long)(rg_now_ms() - t0), ri->parks);
    for (int i = 0; i < SESS_RS_PHASES && n > 0 && (size_t)n < sizeof where; i++)
        n += snprintf(where + n, sizeof where - (size_t)n, " %s %d", sess_restore_phase(i),
                      ri->ms[i]);
    rg_log(RG_LOG_INFO, "session", "%s", where);
    return 0;
}
