/*
 * limits.c - a tenant's request rate and its concurrent commands, each held
 * across every worker through Redis.
 *
 * Rate: a token bucket per tenant in Redis (one small Lua script per
 * batch of requests), so the limit holds across every worker: `rate` tokens
 * a second, a burst of one second's worth; an empty bucket answers
 * rate_limited with the time until the next token.
 *
 * Concurrency: a counted semaphore per tenant in Redis. At most
 * max_concurrent commands of a tenant run at once, whichever workers they
 * reach; the others wait in one queue, oldest first, up to
 * RG_ADMIT_WAIT_MS, then get rate_limited. How:
 *
 *   rg:{t:<tid>}:conc              hash  worker -> slots it holds
 *   rg:{t:<tid>}:conc:lease        zset  worker -> when its hold lapses (Redis ms)
 *   rg:{t:<tid>}:conc:queue        zset  "<worker>|<ticket>" -> end of its wait
 *   rg:{t:<tid>}:conc:grants:<w>   list  tickets of worker w that another
 *                                        worker's call admitted
 *
 * One script (conc_script) does everything for one worker and one tenant
 * in one round trip: it drops the holds of workers whose lease lapsed (a
 * dead worker's slots come back within RG_CONC_LEASE_MS) and the tickets
 * whose wait ended, sets how many slots this worker holds, queues its new
 * waiting commands, and hands every free slot to the oldest tickets, this
 * worker's or another's. All keys share the tenant's hash tag.
 *
 * The fast path: a worker keeps a slot it holds for RG_CONC_LINGER_MS after
 * the command in it ends (REFGATE_CONC_LINGER_MS), and hands it on to the
 * tenant's next command on this worker without asking Redis, as the rate
 * limit spends a batch of tokens locally. This is safe for the limit, since
 * the slot stays counted in Redis the whole time; for fairness it stops as
 * soon as a sync has seen another worker's command waiting, and a worker
 * holding slots syncs every RG_CONC_SYNC_MS (which also renews its lease).
 * A command that finds no such slot asks Redis and waits; waiting commands
 * ask again every RG_CONC_POLL_MS, one call per tenant and worker at a time.
 *
 * Waiting holds a FastCGI thread, so one tenant may hold at most three
 * quarters of a worker's threads (running and waiting together); beyond
 * that it is refused at once. The other quarter stays for everyone else,
 * which is what keeps one tenant's flood from raising another's latency.
 *
 * Threads: gw_enter and gw_leave from any request thread; one thread of
 * this file renews leases and gives idle slots back. One mutex guards the
 * slots and is never held across a Redis call.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <hiredis/hiredis.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS_MAX 4096 /* tenants with commands on this worker at once */
#define CANCEL_MAX 64  /* tickets to take out of the queue at the next call */

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
 *
 * One batch at a time per tenant: requests that find the worker's share
 * empty while a batch is on its way take one token each. Each of a burst's
 * first requests taking a whole batch drained the bucket many times faster
 * than the requests came (30 at once against a rate of 100,000 took
 * 150,000 tokens, and some were refused), and a batch that arrived
 * overwrote the tokens of the ones before it.
 */
#define HELD_MAX 1024
struct held {
    char tid[64];
    int tokens;
    int fetching; /* a batch is on its way */
    int64_t taken_ms;
};
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static struct held held[HELD_MAX];

/* The tenant's share (held_mu held); the least recently filled is reused. */
static struct held *held_of(const char *tid)
{
    struct held *oldest = NULL;
    for (int i = 0; i < HELD_MAX; i++) {
        if (!strcmp(held[i].tid, tid))
            return &held[i];
        if (!held[i].fetching && (!oldest || held[i].taken_ms < oldest->taken_ms))
            oldest = &held[i];
    }
    /* Every entry fetching needs HELD_MAX requests at once: never with our threads. */
    if (!oldest)
        oldest = &held[0];
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->tid, sizeof oldest->tid, "%s", tid);
    return oldest;
}

/*
 * One token from this worker's share (1), or 0 with *batch set when this
 * request is to fetch the next batch (no other request is fetching one).
 */
static int spend_held(const char *tid, int *batch)
{
    int ok = 0;
    pthread_mutex_lock(&held_mu);
    struct held *h = held_of(tid);
    if (rg_now_ms() - h->taken_ms >= 1000)
        h->tokens = 0; /* unspent for a second: lapsed */
    if (h->tokens > 0) {
        h->tokens--;
        ok = 1;
    } else if ((*batch = !h->fetching)) {
        h->fetching = 1;
    }
    pthread_mutex_unlock(&held_mu);
    return ok;
}

/* Adds what a fetch got beyond the token its request spends; ends the batch. */
static void add_held(const char *tid, long long granted, int batch)
{
    pthread_mutex_lock(&held_mu);
    struct held *h = held_of(tid);
    if (batch)
        h->fetching = 0;
    if (granted > 1) {
        if (rg_now_ms() - h->taken_ms >= 1000)
            h->tokens = 0;
        h->tokens += (int)(granted - 1);
        h->taken_ms = rg_now_ms();
    }
    pthread_mutex_unlock(&held_mu);
}

int gw_rate_check(gw *g, const char *tid, double rate, int *retry_after_ms)
{
    *retry_after_ms = 0;
    int batch = 0;
    if (rate <= 0 || spend_held(tid, &batch))
        return 0;
    int want = batch && rate / 20 >= 1 ? (int)(rate / 20) : 1;
    char key[128], r[32], burst[32], now[32], w[16];
    snprintf(key, sizeof key, "rg:t:%s:bucket", tid);
    snprintf(r, sizeof r, "%.6f", rate);
    snprintf(burst, sizeof burst, "%.6f", rate < 1 ? 1.0 : rate);
    snprintf(now, sizeof now, "%lld", (long long)rg_wall_ms());
    snprintf(w, sizeof w, "%d", want);
    const char *args[] = {key, r, burst, now, w};
    redisReply *rep = rg_redis_eval(g->redis, &bucket_script, 1, 4, args, NULL);
    int rc = RG_EUNAVAIL;
    long long granted = 0;
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_INTEGER) {
        granted = rep->element[0]->integer;
        if (granted > 0) {
            rc = 0;
        } else {
            rc = RG_ERATE;
            *retry_after_ms = (int)rep->element[1]->integer;
            if (*retry_after_ms < 1)
                *retry_after_ms = 1;
        }
    }
    freeReplyObject(rep);
    add_held(tid, granted, batch); /* this request spends one of them */
    return rc;
}

/* ---- concurrent commands per tenant (all workers) ---- */

/*
 * KEYS conc lease queue grants(me); ARGV me held max lease_ms queue_max
 * n_new (ticket wait_ms)... n_cancel ticket... Returns {running (slots held
 * by all workers), queued, n, admitted tickets of mine..., n, refused
 * tickets of mine...}: refused are new tickets the queue had no room for.
 * `held` is what this worker keeps: the slots it had minus those it gives
 * back; grants other workers made to it since its last call are added.
 */
static rg_redis_script conc_script = {
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local me, held, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "local lease, qmax = tonumber(ARGV[4]), tonumber(ARGV[5])\n"
    "local pre = KEYS[1] .. ':grants:'\n"
    "for _, w in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do\n"
    "  redis.call('HDEL', KEYS[1], w)\n"
    "  redis.call('ZREM', KEYS[2], w)\n"
    "  redis.call('DEL', pre .. w)\n"
    "end\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)\n"
    "local got = redis.call('LRANGE', KEYS[4], 0, -1)\n"
    "redis.call('DEL', KEYS[4])\n"
    "held = held + #got\n"
    "local i = 7\n"
    "local new = {}\n"
    "for k = 1, tonumber(ARGV[6]) do new[k] = {ARGV[i], tonumber(ARGV[i + 1])} i = i + 2 end\n"
    "for k = 1, tonumber(ARGV[i]) do redis.call('ZREM', KEYS[3], me .. '|' .. ARGV[i + k]) end\n"
    "local refused = {}\n"
    "for _, e in ipairs(new) do\n"
    "  if redis.call('ZCARD', KEYS[3]) >= qmax then refused[#refused + 1] = e[1]\n"
    "  else redis.call('ZADD', KEYS[3], 'NX', now + e[2], me .. '|' .. e[1]) end\n"
    "end\n"
    "if held > 0 then redis.call('HSET', KEYS[1], me, held)\n"
    "else redis.call('HDEL', KEYS[1], me) end\n"
    "local running = 0\n"
    "for _, v in ipairs(redis.call('HVALS', KEYS[1])) do running = running + tonumber(v) end\n"
    "while running < max do\n"
    "  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]\n"
    "  if not head then break end\n"
    "  redis.call('ZREM', KEYS[3], head)\n"
    "  local bar = string.find(head, '|[^|]*$')\n"
    "  local owner, ticket = string.sub(head, 1, bar - 1), string.sub(head, bar + 1)\n"
    "  if owner == me then\n"
    "    held = held + 1\n"
    "    got[#got + 1] = ticket\n"
    "  else\n"
    "    redis.call('HINCRBY', KEYS[1], owner, 1)\n"
    "    redis.call('ZADD', KEYS[2], 'NX', now + lease, owner)\n"
    "    redis.call('RPUSH', pre .. owner, ticket)\n"
    "    redis.call('PEXPIRE', pre .. owner, lease)\n"
    "  end\n"
    "  running = running + 1\n"
    "end\n"
    "if held > 0 then\n"
    "  redis.call('HSET', KEYS[1], me, held)\n"
    "  redis.call('ZADD', KEYS[2], now + lease, me)\n"
    "else\n"
    "  redis.call('HDEL', KEYS[1], me)\n"
    "  redis.call('ZREM', KEYS[2], me)\n"
    "end\n"
    "for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], lease * 2 + 60000) end\n"
    "local out = {running, redis.call('ZCARD', KEYS[3]), #got}\n"
    "for _, v in ipairs(got) do out[#out + 1] = v end\n"
    "out[#out + 1] = #refused\n"
    "for _, v in ipairs(refused) do out[#out + 1] = v end\n"
    "return out\n",
    ""};

struct waiter {
    pthread_cond_t cv;
    uint64_t ticket;
    int64_t deadline_ms; /* monotonic */
    int sent;            /* its ticket is in the Redis queue (as far as we know) */
    int state;           /* 0 waiting, 1 admitted (running counts it), < 0 refused */
    struct waiter *next;
};

/* A tenant's slots on this worker. */
struct slot {
    char tid[64];
    int max;     /* max_concurrent, as the last command saw it */
    int held;    /* slots this worker holds in Redis */
    int running; /* commands running in them; held - running are idle */
    int waiting;
    struct waiter *head, *tail;  /* FIFO */
    int contested;               /* the last sync saw other workers' commands waiting */
    int syncing;                 /* a call for this tenant is on its way */
    int release_now;             /* give the idle slots back at once */
    int64_t synced_ms;           /* last successful call (monotonic) */
    int64_t idle_ms;             /* when a slot last became idle */
    uint64_t cancel[CANCEL_MAX]; /* tickets of commands that stopped waiting */
    int n_cancel;
};

struct gw_limits {
    rg_redis *redis;
    char worker[64];
    int hold_max;  /* running and waiting commands of one tenant on this worker */
    int linger_ms; /* REFGATE_CONC_LINGER_MS */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* wakes the thread */
    pthread_t th;
    int started, stop;
    uint64_t seq; /* ticket numbers */
    struct slot *slots[SLOTS_MAX];
    size_t n_slots;
};

static void cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* Waits on cv (mu held) until the monotonic time until_ms at the latest. */
static void wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until_ms)
{
    int64_t left = until_ms - rg_now_ms();
    if (left <= 0)
        return;
    struct timespec dl;
    rg_deadline(&dl, left > 60000 ? 60000 : (int)left);
    pthread_cond_timedwait(cv, mu, &dl);
}

/* The slot of a tenant nothing of which is on this worker any more. */
static int slot_unused(const struct slot *s)
{
    return !s->running && !s->waiting && !s->held && !s->syncing;
}

/* The tenant's slot (l->mu held), or NULL when SLOTS_MAX tenants are busy here. */
static struct slot *slot_of(struct gw_limits *l, const char *tid)
{
    struct slot *free_one = NULL;
    for (size_t i = 0; i < l->n_slots; i++) {
        if (!strcmp(l->slots[i]->tid, tid))
            return l->slots[i];
        if (!free_one && slot_unused(l->slots[i]))
            free_one = l->slots[i];
    }
    if (!free_one && l->n_slots < SLOTS_MAX && (free_one = calloc(1, sizeof *free_one)))
        l->slots[l->n_slots++] = free_one;
    if (free_one) {
        memset(free_one, 0, sizeof *free_one);
        snprintf(free_one->tid, sizeof free_one->tid, "%s", tid);
    }
    return free_one;
}

static void unlink_waiter(struct slot *s, struct waiter *w)
{
    struct waiter **pp = &s->head, *prev = NULL;
    for (; *pp && *pp != w; prev = *pp, pp = &(*pp)->next)
        ;
    if (!*pp)
        return;
    *pp = w->next;
    if (s->tail == w)
        s->tail = prev;
    w->next = NULL;
}

static void add_cancel(struct slot *s, uint64_t ticket)
{
    /* When full the ticket stays until its wait ends; if admitted meanwhile,
       its slot is idle here and goes back at the next sync. */
    if (s->n_cancel < CANCEL_MAX)
        s->cancel[s->n_cancel++] = ticket;
}

static void wake_waiters(struct slot *s)
{
    for (struct waiter *w = s->head; w; w = w->next)
        pthread_cond_signal(&w->cv);
}

/* A slot this worker already holds can serve the next command without Redis. */
static int reuse_ok(const struct gw_limits *l, const struct slot *s, int64_t now)
{
    return !s->contested && !s->release_now && now - s->synced_ms < RG_CONC_LEASE_MS / 2 &&
           now - s->idle_ms < l->linger_ms;
}

static struct waiter *find_waiter(struct slot *s, uint64_t ticket)
{
    for (struct waiter *w = s->head; w; w = w->next)
        if (w->ticket == ticket)
            return w;
    return NULL;
}

/* Applies a reply of conc_script to s (l->mu held). 0, or -1 when it is not one. */
static int apply_reply(struct slot *s, const redisReply *rep, int64_t now)
{
    if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 4)
        return -1;
    for (size_t i = 0; i < 3; i++)
        if (rep->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
    long long queued = rep->element[1]->integer;
    size_t k = 2, n_got = (size_t)rep->element[k++]->integer;
    if (k + n_got >= rep->elements || rep->element[k + n_got]->type != REDIS_REPLY_INTEGER)
        return -1;
    for (size_t j = 0; j < n_got; j++, k++) {
        const redisReply *e = rep->element[k];
        uint64_t ticket = e->type == REDIS_REPLY_STRING ? strtoull(e->str, NULL, 10) : 0;
        struct waiter *w = find_waiter(s, ticket);
        s->held++;
        if (w && w->state == 0) {
            w->state = 1;
            s->running++;
            unlink_waiter(s, w);
            pthread_cond_signal(&w->cv);
        } else {
            s->idle_ms = now; /* its command is gone: an idle slot */
        }
    }
    size_t n_refused = (size_t)rep->element[k++]->integer;
    for (size_t j = 0; j < n_refused && k < rep->elements; j++, k++) {
        const redisReply *e = rep->element[k];
        struct waiter *w =
            find_waiter(s, e->type == REDIS_REPLY_STRING ? strtoull(e->str, NULL, 10) : 0);
        if (w && w->state == 0) {
            w->state = RG_ERATE;
            w->sent = 0;
            unlink_waiter(s, w);
            pthread_cond_signal(&w->cv);
        }
    }
    long long mine = s->n_cancel;
    for (struct waiter *w = s->head; w; w = w->next)
        mine += w->sent;
    s->contested = queued > mine;
    return 0;
}

/*
 * One call of conc_script for s (l->mu held; dropped during the call). The
 * worker keeps its running slots, and its idle ones only with keep_idle:
 * the slots it gives back are gone from s before the lock is dropped, so
 * no command can take one that Redis may already have handed on.
 */
static void sync_slot(struct gw_limits *l, struct slot *s, int keep_idle)
{
    s->syncing = 1;
    if (!keep_idle) {
        s->held = s->running;
        s->release_now = 0;
    }
    int64_t now = rg_now_ms();
    /* Arguments: 4 keys, 6 fixed, 2 per new ticket, 1 + cancels. */
    size_t n_new = 0;
    for (struct waiter *w = s->head; w; w = w->next)
        n_new += w->state == 0 && !w->sent;
    size_t n_args = 4 + 6 + 2 * n_new + 1 + (size_t)s->n_cancel;
    char(*num)[24] = calloc(n_args, sizeof *num);
    const char **args = calloc(n_args, sizeof *args);
    char keys[4][256];
    if (!num || !args) {
        free(num);
        free(args);
        s->syncing = 0;
        return;
    }
    snprintf(keys[0], sizeof keys[0], "rg:{t:%s}:conc", s->tid);
    snprintf(keys[1], sizeof keys[1], "rg:{t:%s}:conc:lease", s->tid);
    snprintf(keys[2], sizeof keys[2], "rg:{t:%s}:conc:queue", s->tid);
    snprintf(keys[3], sizeof keys[3], "rg:{t:%s}:conc:grants:%s", s->tid, l->worker);
    size_t a = 0;
    for (int i = 0; i < 4; i++)
        args[a++] = keys[i];
    args[a++] = l->worker;
#define NUM(v) (snprintf(num[a], sizeof num[a], "%lld", (long long)(v)), args[a] = num[a], a++)
    NUM(s->held);
    NUM(s->max > 0 ? s->max : 1);
    NUM(RG_CONC_LEASE_MS);
    NUM(RG_CONC_QUEUE_MAX);
    NUM(n_new);
    for (struct waiter *w = s->head; w; w = w->next) {
        if (w->state != 0 || w->sent)
            continue;
        w->sent = 1;
        NUM(w->ticket);
        NUM(w->deadline_ms - now > 0 ? w->deadline_ms - now : 1);
    }
    NUM(s->n_cancel);
    for (int i = 0; i < s->n_cancel; i++)
        NUM(s->cancel[i]);
#undef NUM
    s->n_cancel = 0;
    pthread_mutex_unlock(&l->mu);

    redisReply *rep = rg_redis_eval(l->redis, &conc_script, 4, (int)(a - 4), args, NULL);
    if (rep && rep->type == REDIS_REPLY_ERROR)
        rg_log(RG_LOG_ERROR, "limits", "concurrency of %s: Redis answered: %s", s->tid, rep->str);

    pthread_mutex_lock(&l->mu);
    s->syncing = 0;
    now = rg_now_ms();
    if (apply_reply(s, rep, now) == 0) {
        s->synced_ms = now;
    } else {
        /* Unknown whether Redis saw the call: the waiting commands fail
           (unavailable), and their tickets are taken out at the next call. */
        for (struct waiter *w = s->head; w;) {
            struct waiter *next = w->next;
            if (w->sent)
                add_cancel(s, w->ticket);
            w->sent = 0;
            w->state = RG_EUNAVAIL;
            unlink_waiter(s, w);
            pthread_cond_signal(&w->cv);
            w = next;
        }
    }
    freeReplyObject(rep);
    free(num);
    free(args);
    wake_waiters(s); /* one of them may have to make the next call */
}

/*
 * The thread: renews the leases of the slots this worker holds every
 * RG_CONC_SYNC_MS (learning whether others wait), and gives idle slots
 * back once they lingered, or at once when others wait.
 */
static void *limits_main(void *arg)
{
    struct gw_limits *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        int64_t now = rg_now_ms(), next = now + 1000;
        for (size_t i = 0; i < l->n_slots && !l->stop; i++) {
            struct slot *s = l->slots[i];
            if (s->syncing || !s->held)
                continue;
            int give_back = s->held > s->running && !reuse_ok(l, s, now);
            if (give_back || now - s->synced_ms >= RG_CONC_SYNC_MS) {
                sync_slot(l, s, !give_back);
                now = rg_now_ms();
                if (s->syncing || !s->held)
                    continue;
            }
            /* After a failed call, the next try in RG_CONC_SYNC_MS. */
            int64_t due = s->synced_ms + RG_CONC_SYNC_MS;
            if (due <= now)
                due = now + RG_CONC_SYNC_MS;
            if (due < next)
                next = due;
            if (s->held > s->running && s->idle_ms + l->linger_ms < next)
                next = s->idle_ms + l->linger_ms;
        }
        if (!l->stop)
            wait_until(&l->cv, &l->mu, next);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int gw_limits_new(gw *g, gw_limits **out)
{
    *out = NULL;
    struct gw_limits *l = calloc(1, sizeof *l);
    if (!l)
        return RG_ENOMEM;
    l->redis = g->redis;
    snprintf(l->worker, sizeof l->worker, "%s", g->worker);
    l->hold_max = g->cfg.threads * 3 / 4 > 0 ? g->cfg.threads * 3 / 4 : 1;
    l->linger_ms = (int)rg_env_long("REFGATE_CONC_LINGER_MS", RG_CONC_LINGER_MS, 0, 1000);
    /* Tickets of a worker restarted under the same id must not meet those
       of its previous life, still queued for up to RG_ADMIT_WAIT_MS. */
    l->seq = (uint64_t)rg_wall_ms() * 1000;
    pthread_mutex_init(&l->mu, NULL);
    cond_init_mono(&l->cv);
    if (pthread_create(&l->th, NULL, limits_main, l) != 0) {
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        free(l);
        return RG_ENOMEM;
    }
    l->started = 1;
    *out = l;
    return 0;
}

void gw_limits_free(gw_limits *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (l->started)
        pthread_join(l->th, NULL);
    /* No command runs any more: give every slot back, so another worker
       need not wait for the lease (a rolling restart). Not past the first
       failed call: with Redis away each would wait its timeout, and the
       leases lapse anyway. */
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n_slots; i++) {
        struct slot *s = l->slots[i];
        if (!s->held || s->syncing)
            continue;
        int64_t before = s->synced_ms;
        sync_slot(l, s, 0);
        if (s->synced_ms == before)
            break;
    }
    pthread_mutex_unlock(&l->mu);
    for (size_t i = 0; i < l->n_slots; i++)
        free(l->slots[i]);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

int gw_enter(gw *g, const char *tid, int max_concurrent, int *retry_after_ms)
{
    struct gw_limits *l = g->limits;
    *retry_after_ms = 0;
    pthread_mutex_lock(&l->mu);
    struct slot *s = slot_of(l, tid);
    if (!s) {
        pthread_mutex_unlock(&l->mu);
        rg_log(RG_LOG_WARN, "limits", "%d tenants busy on this worker: %s not limited", SLOTS_MAX,
               tid);
        return 0; /* no room to track it: let it through rather than refuse everyone */
    }
    s->max = max_concurrent > 0 ? max_concurrent : 1;
    int64_t now = rg_now_ms();
    if (s->held > s->running && !s->head && reuse_ok(l, s, now)) {
        s->running++; /* the fast path: a slot this worker holds, no round trip */
        pthread_mutex_unlock(&l->mu);
        return 0;
    }
    if (s->running + s->waiting >= l->hold_max) {
        pthread_mutex_unlock(&l->mu);
        *retry_after_ms = 200;
        return RG_ERATE;
    }
    struct waiter w = {.ticket = ++l->seq, .deadline_ms = now + RG_ADMIT_WAIT_MS};
    cond_init_mono(&w.cv);
    if (s->tail)
        s->tail->next = &w;
    else
        s->head = &w;
    s->tail = &w;
    s->waiting++;
    for (;;) {
        now = rg_now_ms();
        if (w.state || now >= w.deadline_ms)
            break;
        /* One call at a time per tenant: whoever is first asks for everyone
           queued here; the others wait for its answer or their next poll. */
        int unsent = 0;
        for (struct waiter *x = s->head; x; x = x->next)
            unsent |= x->state == 0 && !x->sent;
        if (!s->syncing && (unsent || now - s->synced_ms >= RG_CONC_POLL_MS)) {
            sync_slot(l, s, 0);
            continue;
        }
        wait_until(&w.cv, &l->mu,
                   s->syncing || s->synced_ms + RG_CONC_POLL_MS > w.deadline_ms
                       ? w.deadline_ms
                       : s->synced_ms + RG_CONC_POLL_MS);
    }
    s->waiting--;
    int rc = w.state == 1 ? 0 : w.state < 0 ? w.state : RG_ERATE;
    if (w.state == 0) {
        unlink_waiter(s, &w);
        if (w.sent)
            add_cancel(s, w.ticket);
    }
    pthread_mutex_unlock(&l->mu);
    pthread_cond_destroy(&w.cv);
    if (rc == RG_ERATE)
        *retry_after_ms = 500;
    else if (rc == RG_EUNAVAIL)
        *retry_after_ms = 1000;
    return rc;
}

void gw_leave(gw *g, const char *tid)
{
    struct gw_limits *l = g->limits;
    pthread_mutex_lock(&l->mu);
    struct slot *s = NULL;
    for (size_t i = 0; i < l->n_slots && !s; i++)
        if (!strcmp(l->slots[i]->tid, tid) && l->slots[i]->running > 0)
            s = l->slots[i];
    if (!s) {
        pthread_mutex_unlock(&l->mu);
        return;
    }
    int64_t now = rg_now_ms();
    s->running--;
    s->idle_ms = now;
    struct waiter *w = s->head;
    if (w && reuse_ok(l, s, now)) {
        /* The slot passes to this worker's first waiting command: nobody
           else waits (as of the last sync), so the queue's order holds. */
        unlink_waiter(s, w);
        if (w->sent)
            add_cancel(s, w->ticket);
        w->state = 1;
        s->running++;
        pthread_cond_signal(&w->cv);
    } else if (!reuse_ok(l, s, now)) {
        /* Others wait, or the slot may not linger: it goes back to the
           queue now, by the thread, not on this request's time. */
        s->release_now = 1;
        pthread_cond_signal(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
}
