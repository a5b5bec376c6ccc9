/*
 * quota.c - a tenant's session quota, reserved atomically in Redis before a
 * create does anything, so that a burst of N creates against a quota of Q
 * makes exactly min(N, Q) sessions whatever worker each one lands on.
 *
 *   rg:t:<tenant>:quota           zset    sid -> when to look at it again
 *                                         (Redis server time, ms)
 *   rg:{t:<tenant>:s:<sid>}:new   string  a create in progress; it lives as
 *                                         long as the create may take
 *
 * Why a set of session ids and not a counter: a counter has to be given back
 * by whoever took it, and the session's keys expire on their own (the
 * dormant TTL), a worker dies in the middle of a create, a close fails half
 * way: each of these would leak a slot for good. Here a member stands for a
 * session only while that session exists in Redis (its `meta`) or its create
 * is still in progress (its `new` marker, written before the reservation and
 * consumed by the same script that writes `meta`, so the two overlap and a
 * member never looks dead while it is alive). A member that has neither is
 * dead, and is dropped when it is found. Nothing has to be given back for
 * the count to come right; close and a failed create remove their member at
 * once only so the slot is free at once.
 *
 * When to look: a member's score is the earliest time it can be dead: the
 * end of its create's time at first, the dormant TTL after the create once
 * the session is written, and once looked at, now plus the longer of its
 * keys' remaining TTLs (close removes its member itself, and TTLs only
 * grow). Members are looked at from a second before their time, since a
 * score is set a moment after the TTLs it comes from were read. Keys
 * removed other than by their TTL (by hand, by eviction) free their slot
 * when that time comes. Only a create that finds the quota full looks, and
 * only at members whose time has come: a tenant under its quota pays one
 * script call per create, a tenant at its quota one more round trip for the
 * members that are due, which after a look are rarely any.
 *
 * Cluster: every script touches one key; the per-session keys are read one
 * command each, in their own slots.
 *
 * Threading: any thread; each call takes its own Redis connection.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Members looked at per create at most: rounds of the scripts' LIMIT (64), 1,024 in all. */
#define DUE_ROUNDS 16

/*
 * KEYS quota; ARGV sid max ttl_ms key_ttl_ms seed. Adds sid when the set has
 * fewer than max members: {1, n}. Otherwise {0, n, due sids...}: the members
 * whose time to be looked at has come. With seed 1 and an empty set: {-1},
 * nothing added (the caller fills it from the listing first).
 */
static rg_redis_script reserve_script = {
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local n = redis.call('ZCARD', KEYS[1])\n"
    "if n == 0 and ARGV[5] == '1' then return {-1} end\n"
    "if n >= tonumber(ARGV[2]) then\n"
    "  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + 1000, 'LIMIT', 0, 64)\n"
    "  return {0, n, unpack(due)}\n"
    "end\n"
    "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[4])\n"
    "return {1, n + 1}\n",
    ""};

/* KEYS quota. {n, due sids...}: the size, and the members to look at now. */
static rg_redis_script due_script = {
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "return {redis.call('ZCARD', KEYS[1]),\n"
    "        unpack(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + 1000, 'LIMIT', 0, 64))}\n",
    ""};

/*
 * KEYS quota; ARGV sid pttl_ms, ... Drops the members whose keys are gone
 * (pttl -2) and moves the others' next look to now + pttl (never earlier,
 * never re-adding one removed meanwhile). Returns how many were dropped.
 */
static rg_redis_script settle_script = {
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local gone = 0\n"
    "for i = 1, #ARGV, 2 do\n"
    "  local p = tonumber(ARGV[i + 1])\n"
    "  if p < 0 then gone = gone + redis.call('ZREM', KEYS[1], ARGV[i])\n"
    "  else redis.call('ZADD', KEYS[1], 'XX', 'GT', now + p, ARGV[i]) end\n"
    "end\n"
    "return gone\n",
    ""};

/*
 * KEYS quota; ARGV sid after_ms. A created session's next look: when its
 * keys can first expire (only a member still there is moved).
 */
static rg_redis_script commit_script = {
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "return redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])\n",
    ""};

void sess_quota_key(char *out, size_t len, const char *tenant)
{
    snprintf(out, len, "rg:t:%s:quota", tenant);
}

void sess_new_key(char *out, size_t len, const char *tenant, const char *sid)
{
    snprintf(out, len, "rg:{t:%s:s:%s}:new", tenant, sid);
}

/* What a session id from Redis may be (session.c's ids and nothing else). */
static int sid_ok(const char *s, size_t n)
{
    if (n == 0 || n >= SESS_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
            return 0;
    return 1;
}

/* The key TTL the quota set gets at each reservation: it outlives every member. */
static int64_t set_ttl_ms(const sess_mgr *m, int64_t ttl_ms)
{
    return m->cfg.dormant_ttl_ms + ttl_ms + 60000;
}

/*
 * Looks at the due members (sids, n of them): gone when neither their meta
 * nor their create marker exists (or the name is not a session id). One
 * pipelined round trip to read the TTLs, one script to settle. *dropped:
 * how many were removed. 0 or RG_EUNAVAIL.
 */
static int look_at(sess_mgr *m, const char *tenant, char **sids, size_t n, long long *dropped)
{
    *dropped = 0;
    if (!n)
        return 0;
    const char **args = calloc(2 * n + 1, sizeof *args);
    char(*ttl)[24] = calloc(n, sizeof *ttl);
    long long *left = calloc(n, sizeof *left);
    /* Each member's keys lie in its own slot: one pipeline, routed per command. */
    rg_redis_pipe *p = args && ttl && left ? rg_redis_pipe_new(m->redis) : NULL;
    int failed = p == NULL;
    for (size_t i = 0; p && i < n; i++) {
        left[i] = -2;
        if (!sid_ok(sids[i], strlen(sids[i])))
            continue;
        char mk[256], nk[256];
        snprintf(mk, sizeof mk, "rg:{t:%s:s:%s}:meta", tenant, sids[i]);
        sess_new_key(nk, sizeof nk, tenant, sids[i]);
        rg_redis_pipe_add(p, "PTTL %s", mk);
        rg_redis_pipe_add(p, "PTTL %s", nk);
    }
    int np = p ? rg_redis_pipe_size(p) : 0;
    redisReply **reps = p ? calloc(np > 0 ? (size_t)np : 1u, sizeof *reps) : NULL;
    if (!reps || rg_redis_pipe_run(p, reps) < 0)
        failed = 1;
    rg_redis_pipe_free(p);
    /* The replies come in the order asked: two per valid member. */
    int at = 0;
    for (size_t i = 0; !failed && i < n; i++) {
        if (!sid_ok(sids[i], strlen(sids[i])))
            continue;
        for (int k = 0; k < 2; k++) {
            const redisReply *rep = reps[at++];
            long long v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -2;
            if (v == -1) /* no TTL (none of ours lacks one): look again a TTL later */
                v = m->cfg.dormant_ttl_ms;
            if (v > left[i])
                left[i] = v;
        }
    }
    long long gone = 0;
    if (!failed) {
        char qk[128];
        sess_quota_key(qk, sizeof qk, tenant);
        args[0] = qk;
        for (size_t i = 0; i < n; i++) {
            snprintf(ttl[i], sizeof ttl[i], "%lld", left[i]);
            args[1 + 2 * i] = sids[i];
            args[2 + 2 * i] = ttl[i];
        }
        redisReply *rep = rg_redis_eval(m->redis, &settle_script, 1, (int)(2 * n), args, NULL);
        failed = !rep || rep->type != REDIS_REPLY_INTEGER;
        if (!failed)
            gone = rep->integer;
        freeReplyObject(rep);
    }
    for (int i = 0; reps && i < np; i++)
        freeReplyObject(reps[i]);
    free(reps);
    free(args);
    free(ttl);
    free(left);
    *dropped = gone;
    return failed ? RG_EUNAVAIL : 0;
}

/*
 * Fills an empty quota set from the listing index (rg:t:<tenant>:sessions),
 * for sessions made before the set existed or a set that was lost: each
 * comes in due at once, so the next full look checks it. One ZADD, so a
 * concurrent reservation sees the set empty or whole, never half filled.
 */
static int seed(sess_mgr *m, const char *tenant)
{
    char ik[128], qk[128];
    snprintf(ik, sizeof ik, "rg:t:%s:sessions", tenant);
    sess_quota_key(qk, sizeof qk, tenant);
    redisReply *rep = rg_redis_command(m->redis, "ZRANGE %s 0 -1", ik);
    int failed = rep == NULL;
    size_t n = rep && rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0;
    const char **argv = calloc(3 + 2 * n, sizeof *argv);
    size_t argc = 0;
    if (argv) {
        argv[argc++] = "ZADD";
        argv[argc++] = qk;
        argv[argc++] = "NX";
        for (size_t i = 0; i < n; i++) {
            const redisReply *e = rep->element[i];
            if (e->type != REDIS_REPLY_STRING || !sid_ok(e->str, e->len))
                continue;
            argv[argc++] = "0";
            argv[argc++] = e->str;
        }
    }
    if (argv && argc > 3) {
        redisReply *z = rg_redis_argv(m->redis, (int)argc, argv, NULL);
        failed = z == NULL;
        freeReplyObject(z);
    }
    free(argv);
    freeReplyObject(rep);
    return failed ? RG_EUNAVAIL : 0;
}

/* One run of the reserve script: 1 reserved, 0 full (due sids in *due), -1 seed. */
static int reserve_once(sess_mgr *m, const char *tenant, const char *sid, int max, int64_t ttl_ms,
                        int may_seed, size_t *have, char ***due, size_t *n_due)
{
    *due = NULL;
    *n_due = 0;
    char qk[128], mx[16], ttl[24], kttl[24];
    sess_quota_key(qk, sizeof qk, tenant);
    snprintf(mx, sizeof mx, "%d", max);
    snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
    snprintf(kttl, sizeof kttl, "%lld", (long long)set_ttl_ms(m, ttl_ms));
    const char *args[] = {qk, sid, mx, ttl, kttl, may_seed ? "1" : "0"};
    redisReply *rep = rg_redis_eval(m->redis, &reserve_script, 1, 5, args, NULL);
    int rc = RG_EUNAVAIL;
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
        rep->element[0]->type == REDIS_REPLY_INTEGER) {
        long long what = rep->element[0]->integer;
        if (rep->elements >= 2 && rep->element[1]->type == REDIS_REPLY_INTEGER)
            *have = (size_t)rep->element[1]->integer;
        rc = what > 0 ? 1 : what < 0 ? -1 : 0;
        if (rc == 0 && rep->elements > 2) {
            *due = calloc(rep->elements - 2, sizeof **due);
            for (size_t i = 2; *due && i < rep->elements; i++) {
                const redisReply *e = rep->element[i];
                if (e->type == REDIS_REPLY_STRING && ((*due)[*n_due] = strdup(e->str)))
                    (*n_due)++;
            }
        }
    } else if (rep && rep->type == REDIS_REPLY_ERROR) {
        rg_log(RG_LOG_ERROR, "session", "quota reservation for %s failed: %s", tenant, rep->str);
    }
    freeReplyObject(rep);
    return rc;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/*
 * Reserve: the create marker first (a member must never be in the set
 * without a key that proves it alive), then the script; when the set is
 * full, the due members are looked at and the script runs again, as long as
 * looking freed something.
 */
int sess_quota_reserve(sess_mgr *m, const char *tenant, const char *sid, int max, int64_t ttl_ms,
                       size_t *have)
{
    *have = 0;
    char nk[256], px[24];
    sess_new_key(nk, sizeof nk, tenant, sid);
    snprintf(px, sizeof px, "%lld", (long long)ttl_ms);
    redisReply *rep = rg_redis_command(m->redis, "SET %s 1 PX %s", nk, px);
    int ok = rep && rep->type == REDIS_REPLY_STATUS;
    freeReplyObject(rep);
    if (!ok)
        return RG_EUNAVAIL;
    int rc = RG_EQUOTA, may_seed = 1;
    for (int round = 0; round < DUE_ROUNDS + 2; round++) {
        char **due;
        size_t n_due;
        int r = reserve_once(m, tenant, sid, max, ttl_ms, may_seed, have, &due, &n_due);
        if (r == 1) {
            rc = 0;
            break;
        }
        if (r == -1) {
            may_seed = 0;
            if ((rc = seed(m, tenant)) < 0)
                break;
            rc = RG_EQUOTA;
            continue;
        }
        if (r < -1) {
            rc = r;
            break;
        }
        long long dropped = 0;
        int lr = look_at(m, tenant, due, n_due, &dropped);
        free_list(due, n_due);
        if (lr < 0) {
            rc = lr;
            break;
        }
        if (!n_due)
            break; /* full, and every member is known to be alive */
    }
    if (rc < 0)
        sess_quota_release(m, tenant, sid);
    return rc;
}

void sess_quota_commit(sess_mgr *m, const char *tenant, const char *sid)
{
    char qk[128], ttl[24];
    sess_quota_key(qk, sizeof qk, tenant);
    snprintf(ttl, sizeof ttl, "%lld", (long long)m->cfg.dormant_ttl_ms);
    const char *args[] = {qk, sid, ttl};
    /* When this fails, the member is looked at at the create's deadline instead. */
    redisReply *rep = rg_redis_eval(m->redis, &commit_script, 1, 2, args, NULL);
    freeReplyObject(rep);
}

void sess_quota_release(sess_mgr *m, const char *tenant, const char *sid)
{
    char qk[128], nk[256];
    sess_quota_key(qk, sizeof qk, tenant);
    sess_new_key(nk, sizeof nk, tenant, sid);
    /* On failure the marker expires, and the member is dropped when looked at. */
    rg_redis_pipe *p = rg_redis_pipe_new(m->redis);
    redisReply *rs[2] = {NULL, NULL};
    if (p && rg_redis_pipe_add(p, "ZREM %s %s", qk, sid) == 0 &&
        rg_redis_pipe_add(p, "DEL %s", nk) == 0)
        rg_redis_pipe_run(p, rs);
    rg_redis_pipe_free(p);
    freeReplyObject(rs[0]);
    freeReplyObject(rs[1]);
}

int sess_quota_count(sess_mgr *m, const char *tenant, size_t *n)
{
    *n = 0;
    char qk[128];
    sess_quota_key(qk, sizeof qk, tenant);
    const char *args[] = {qk};
    for (int round = 0; round < DUE_ROUNDS; round++) {
        redisReply *rep = rg_redis_eval(m->redis, &due_script, 1, 0, args, NULL);
        if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
            rep->element[0]->type != REDIS_REPLY_INTEGER) {
            freeReplyObject(rep);
            return RG_EUNAVAIL;
        }
        *n = (size_t)rep->element[0]->integer;
        char **due = NULL;
        size_t n_due = 0;
        if (rep->elements > 1)
            due = calloc(rep->elements - 1, sizeof *due);
        for (size_t i = 1; due && i < rep->elements; i++)
            if (rep->element[i]->type == REDIS_REPLY_STRING &&
                (due[n_due] = strdup(rep->element[i]->str)))
                n_due++;
        freeReplyObject(rep);
        long long dropped = 0;
        int rc = look_at(m, tenant, due, n_due, &dropped);
        free_list(due, n_due);
        if (rc < 0)
            return rc;
        *n -= (size_t)dropped;
        if (!n_due)
            break;
    }
    return 0;
}
