/*
 * limits.c - a tenant's request rate and concurrent commands.
 *
 * Rate: a token bucket per tenant in Redis (one small Lua script per
 * request), so the limit holds across every worker: `rate` tokens a second,
 * a burst of one second's worth; an empty bucket answers rate_limited with
 * the time until the next token.
 *
 * Concurrency: per worker, at most max_concurrent commands of a tenant run
 * at once; more wait in that tenant's FIFO up to ADMIT_WAIT_MS. Waiting
 * holds a FastCGI thread, so one tenant may hold at most three quarters of
 * the threads (running and waiting together); beyond that it is refused at
 * once. The other quarter stays for everyone else, which is what keeps one
 * tenant's flood from raising another's latency. (Fairness between tenants
 * across workers comes from each worker doing the same.)
 */
#define _GNU_SOURCE
#include "gw_int.h"

#include <hiredis/hiredis.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ADMIT_WAIT_MS 2000
#define SLOTS_MAX 4096

/* KEYS bucket; ARGV rate burst now want. Takes up to want whole tokens:
   returns {granted, wait_ms}; wait_ms is the time to the next token when
   none was granted. */
static rg_redis_script bucket_script = {
    "local rate, burst, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "local want = tonumber(ARGV[4])\n"
    "local b = redis.call('HMGET', KEYS[1], 't', 'ts')\n"
    "local tokens = tonumber(b[1]) or burst\n"
    "local ts = tonumber(b[2]) or now\n"
    "if now > ts then tokens = math.min(burst, tokens + (now - ts) * rate / 1000) end\n"
    "local grant = math.min(math.floor(tokens), want)\n"
    "local wait = 0\n"
    "if grant >= 1 then tokens = tokens - grant\n"
    "else grant = 0 wait = math.ceil((1 - tokens) * 1000 / rate) end\n"
    "redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', tostring(math.max(now, ts)))\n"
    "redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)\n"
    "return {grant, wait}\n",
    ""};

/*
 * Tokens this worker took from a tenant's bucket and has not spent yet. A
 * worker takes a twentieth of a second's worth at a time (at least one), so
 * a busy tenant costs Redis one round trip per batch, not per request; the
 * limit stays shared, and what a worker holds unspent is at most that
 * twentieth (it lapses after a second).
 */
#define HELD_MAX 1024
struct held {
    char tid[64];
    int tokens;
    int64_t taken_ms;
};
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static struct held held[HELD_MAX];

static struct held *held_of(const char *tid)
{
    struct held *oldest = &held[0];
    for (int i = 0; i < HELD_MAX; i++) {
        if (!strcmp(held[i].tid, tid))
            return &held[i];
        if (held[i].taken_ms < oldest->taken_ms)
            oldest = &held[i];
    }
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->tid, sizeof oldest->tid, "%s", tid);
    return oldest;
}

/* One token from this worker's share, or 0 when it has none left. */
static int spend_held(const char *tid)
{
    int ok = 0;
    pthread_mutex_lock(&held_mu);
    struct held *h = held_of(tid);
    if (h->tokens > 0 && rg_now_ms() - h->taken_ms < 1000) {
        h->tokens--;
        ok = 1;
    }
    pthread_mutex_unlock(&held_mu);
    return ok;
}

int gw_rate_check(gw *g, const char *tid, double rate, int *retry_after_ms)
{
    *retry_after_ms = 0;
    if (rate <= 0 || spend_held(tid))
        return 0;
    int want = rate / 20 >= 1 ? (int)(rate / 20) : 1;
    char key[128], r[32], burst[32], now[32], w[16];
    snprintf(key, sizeof key, "rg:t:%s:bucket", tid);
    snprintf(r, sizeof r, "%.6f", rate);
    snprintf(burst, sizeof burst, "%.6f", rate < 1 ? 1.0 : rate);
    snprintf(now, sizeof now, "%lld", (long long)rg_wall_ms());
    snprintf(w, sizeof w, "%d", want);
    const char *args[] = {key, r, burst, now, w};
    redisContext *c = rg_redis_take(g->redis);
    if (!c)
        return RG_EUNAVAIL;
    redisReply *rep = rg_redis_eval(c, &bucket_script, 1, 4, args, NULL);
    rg_redis_give(g->redis, c, rep == NULL);
    int rc = RG_EUNAVAIL;
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_INTEGER) {
        long long granted = rep->element[0]->integer;
        if (granted > 0) {
            rc = 0;
            pthread_mutex_lock(&held_mu);
            struct held *h = held_of(tid);
            h->tokens = (int)granted - 1; /* this request spends one */
            h->taken_ms = rg_now_ms();
            pthread_mutex_unlock(&held_mu);
        } else {
            rc = RG_ERATE;
            *retry_after_ms = (int)rep->element[1]->integer;
            if (*retry_after_ms < 1)
                *retry_after_ms = 1;
        }
    }
    freeReplyObject(rep);
    return rc;
}

/* ---- concurrent commands per tenant (this worker) ---- */

struct waiter {
    pthread_cond_t cv;
    int granted;
    struct waiter *next;
};

struct slot {
    char tid[64];
    int running;
    int waiting;
    struct waiter *head, *tail;
};

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[SLOTS_MAX];
static size_t n_slots;

/* The tenant's slot (slots_mu held); an idle one is reused when all are taken. */
static struct slot *slot_of(const char *tid)
{
    for (size_t i = 0; i < n_slots; i++)
        if (!strcmp(slots[i].tid, tid))
            return &slots[i];
    struct slot *s = NULL;
    if (n_slots < SLOTS_MAX)
        s = &slots[n_slots++];
    for (size_t i = 0; !s && i < n_slots; i++)
        if (!slots[i].running && !slots[i].waiting)
            s = &slots[i];
    if (s) {
        memset(s, 0, sizeof *s);
        snprintf(s->tid, sizeof s->tid, "%s", tid);
    }
    return s;
}

static void unlink_waiter(struct slot *s, struct waiter *w)
{
    struct waiter **pp = &s->head, *prev = NULL;
    for (; *pp && *pp != w; prev = *pp, pp = &(*pp)->next)
        ;
    if (*pp)
        *pp = w->next;
    if (s->tail == w)
        s->tail = prev;
}

int gw_enter(gw *g, const char *tid, int max_concurrent, int *retry_after_ms)
{
    *retry_after_ms = 0;
    if (max_concurrent <= 0)
        max_concurrent = 1;
    int hold_max = g->cfg.threads * 3 / 4 > 0 ? g->cfg.threads * 3 / 4 : 1;
    pthread_mutex_lock(&slots_mu);
    struct slot *s = slot_of(tid);
    if (!s) {
        pthread_mutex_unlock(&slots_mu);
        return 0; /* no room to track it: let it through rather than refuse everyone */
    }
    if (s->running < max_concurrent && !s->head) {
        s->running++;
        pthread_mutex_unlock(&slots_mu);
        return 0;
    }
    if (s->running + s->waiting >= hold_max) {
        pthread_mutex_unlock(&slots_mu);
        *retry_after_ms = 200;
        return RG_ERATE;
    }
    struct waiter w = {.granted = 0};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &ca);
    pthread_condattr_destroy(&ca);
    if (s->tail)
        s->tail->next = &w;
    else
        s->head = &w;
    s->tail = &w;
    s->waiting++;
    struct timespec dl;
    rg_deadline(&dl, ADMIT_WAIT_MS);
    while (!w.granted && pthread_cond_timedwait(&w.cv, &slots_mu, &dl) == 0)
        ;
    s->waiting--;
    if (!w.granted)
        unlink_waiter(s, &w);
    pthread_mutex_unlock(&slots_mu);
    pthread_cond_destroy(&w.cv);
    if (!w.granted)
        *retry_after_ms = 500;
    return w.granted ? 0 : RG_ERATE;
}

void gw_leave(gw *g, const char *tid)
{
    (void)g;
    pthread_mutex_lock(&slots_mu);
    for (size_t i = 0; i < n_slots; i++) {
        struct slot *s = &slots[i];
        if (strcmp(s->tid, tid) || s->running <= 0)
            continue;
        struct waiter *w = s->head;
        if (w) {
            /* The place passes to the first waiter: running stays as it is. */
            s->head = w->next;
            if (!s->head)
                s->tail = NULL;
            w->granted = 1;
            pthread_cond_signal(&w->cv);
        } else {
            s->running--;
        }
        break;
    }
    pthread_mutex_unlock(&slots_mu);
}
