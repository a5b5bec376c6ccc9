/*
 * redis.c - hiredis connections shared by the threads of one process (see
 * rg.h): a free list of idle contexts, timeouts after every connect, a
 * context that saw an error is never reused, and scripts by EVALSHA with the
 * NOSCRIPT fallback.
 */
#define _GNU_SOURCE
#include "common/rg.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define IDLE_MAX 32

struct rg_redis {
    char host[256];
    int port;
    char password[256];
    int db;
    char where[300];
    struct timeval connect_tv, command_tv;
    pthread_mutex_t mu;
    redisContext *idle[IDLE_MAX];
    int n_idle;
};

static pthread_mutex_t script_mu = PTHREAD_MUTEX_INITIALIZER;

void rg_redis_config_default(rg_redis_config *cfg)
{
    static char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", RG_REDIS_DEFAULT_PORT);
    cfg->url = url;
    cfg->connect_timeout_ms = 500;
    cfg->command_timeout_ms = 1000;
}

void rg_redis_config_from_env(rg_redis_config *cfg)
{
    static char url[64];
    const char *u = getenv("REFGATE_REDIS_URL");
    if (u && *u) {
        cfg->url = u;
    } else if (getenv("REFGATE_REDIS_PORT")) {
        long port = rg_env_long("REFGATE_REDIS_PORT", RG_REDIS_DEFAULT_PORT, 1, 65535);
        snprintf(url, sizeof url, "redis://127.0.0.1:%ld", port);
        cfg->url = url;
    }
    cfg->command_timeout_ms =
        (int)rg_env_long("REFGATE_REDIS_TIMEOUT_MS", cfg->command_timeout_ms, 10, 60000);
}

/* redis://[[user]:password@]host[:port][/db] */
static int parse_url(rg_redis *r, const char *url)
{
    const char *p = url;
    if (!strncmp(p, "redis://", 8))
        p += 8;
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        if ((size_t)(at - pw) >= sizeof r->password)
            return -1;
        snprintf(r->password, sizeof r->password, "%.*s", (int)(at - pw), pw);
        p = at + 1;
    }
    const char *slash = strchr(p, '/');
    const char *colon = strchr(p, ':');
    if (colon && slash && colon > slash)
        colon = NULL;
    size_t hl = colon ? (size_t)(colon - p) : slash ? (size_t)(slash - p) : strlen(p);
    if (hl == 0 || hl >= sizeof r->host)
        return -1;
    snprintf(r->host, sizeof r->host, "%.*s", (int)hl, p);
    char *end = NULL;
    r->port = colon ? (int)strtol(colon + 1, &end, 10) : 6379;
    if (colon && end != (slash ? slash : colon + 1 + strlen(colon + 1)))
        return -1;
    r->db = slash && slash[1] ? atoi(slash + 1) : 0;
    snprintf(r->where, sizeof r->where, "%s:%d", r->host, r->port);
    return r->port > 0 && r->port < 65536 && r->db >= 0 ? 0 : -1;
}

static struct timeval tv_of(int ms)
{
    return (struct timeval){ms / 1000, (ms % 1000) * 1000};
}

int rg_redis_new(const rg_redis_config *cfg, rg_redis **out, char *err, size_t errlen)
{
    *out = NULL;
    rg_redis *r = calloc(1, sizeof *r);
    if (!r)
        return RG_ENOMEM;
    if (!cfg->url || parse_url(r, cfg->url) < 0) {
        snprintf(err, errlen, "cannot read the Redis URL (expected redis://[:password@]host[:port][/db])");
        free(r);
        return RG_EBADREQ;
    }
    r->connect_tv = tv_of(cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 500);
    r->command_tv = tv_of(cfg->command_timeout_ms > 0 ? cfg->command_timeout_ms : 1000);
    pthread_mutex_init(&r->mu, NULL);
    *out = r;
    return 0;
}

void rg_redis_free(rg_redis *r)
{
    if (!r)
        return;
    while (r->n_idle)
        redisFree(r->idle[--r->n_idle]);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

const char *rg_redis_where(const rg_redis *r)
{
    return r->where;
}

static int simple_ok(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *rep = arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt);
    int ok = rep && rep->type != REDIS_REPLY_ERROR;
    freeReplyObject(rep);
    return ok;
}

static redisContext *connect_one(rg_redis *r)
{
    redisContext *c = redisConnectWithTimeout(r->host, r->port, r->connect_tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    /* Set after every connect: hiredis applies the connect timeout only to connecting. */
    if (redisSetTimeout(c, r->command_tv) != REDIS_OK)
        goto fail;
    if (r->password[0] && !simple_ok(c, "AUTH %s", r->password))
        goto fail;
    if (r->db > 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", r->db);
        if (!simple_ok(c, "SELECT %s", db))
            goto fail;
    }
    return c;
fail:
    redisFree(c);
    return NULL;
}

/*
 * An idle connection the server has closed (Redis restarted, or dropped
 * it): its socket reads as ready, since Redis sends nothing unasked on a
 * connection that does not subscribe. One poll, no round trip.
 */
static int closed_by_server(redisContext *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return c->fd < 0 || poll(&p, 1, 0) != 0;
}

redisContext *rg_redis_take(rg_redis *r)
{
    for (;;) {
        pthread_mutex_lock(&r->mu);
        redisContext *c = r->n_idle ? r->idle[--r->n_idle] : NULL;
        pthread_mutex_unlock(&r->mu);
        if (!c)
            return connect_one(r);
        if (!closed_by_server(c))
            return c;
        redisFree(c);
    }
}

void rg_redis_give(rg_redis *r, redisContext *c, int failed)
{
    if (!c)
        return;
    if (failed || c->err) {
        /* The idle ones most likely went the same way: a Redis that was
           away closed them all. Without this, every command after its
           return would take a dead one first and fail. */
        redisContext *drop[IDLE_MAX];
        pthread_mutex_lock(&r->mu);
        int n = r->n_idle;
        memcpy(drop, r->idle, (size_t)n * sizeof *drop);
        r->n_idle = 0;
        pthread_mutex_unlock(&r->mu);
        for (int i = 0; i < n; i++)
            redisFree(drop[i]);
        redisFree(c);
        return;
    }
    pthread_mutex_lock(&r->mu);
    if (r->n_idle < IDLE_MAX) {
        r->idle[r->n_idle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&r->mu);
    if (c)
        redisFree(c);
}

redisReply *rg_redis_eval(redisContext *c, rg_redis_script *s, int nkeys, int nargs,
                          const char *const *args, const size_t *lens)
{
    char sha[41];
    pthread_mutex_lock(&script_mu);
    memcpy(sha, s->sha, sizeof sha);
    pthread_mutex_unlock(&script_mu);
    if (!sha[0]) {
        redisReply *rep = redisCommand(c, "SCRIPT LOAD %s", s->src);
        if (!rep)
            return NULL;
        if (rep->type == REDIS_REPLY_STRING && rep->len == 40) {
            memcpy(sha, rep->str, 41);
            pthread_mutex_lock(&script_mu);
            memcpy(s->sha, sha, sizeof sha);
            pthread_mutex_unlock(&script_mu);
        }
        freeReplyObject(rep);
    }
    int argc = 3 + nkeys + nargs;
    const char **argv = calloc((size_t)argc, sizeof *argv);
    size_t *argl = calloc((size_t)argc, sizeof *argl);
    redisReply *rep = NULL;
    if (!argv || !argl) {
        free(argv);
        free(argl);
        return NULL;
    }
    char nk[16];
    snprintf(nk, sizeof nk, "%d", nkeys);
    argv[0] = "EVALSHA";
    argv[1] = sha;
    argv[2] = nk;
    for (int i = 0; i < nkeys + nargs; i++) {
        argv[3 + i] = args[i];
        argl[3 + i] = lens ? lens[i] : strlen(args[i]);
    }
    for (int i = 0; i < 3; i++)
        argl[i] = strlen(argv[i]);
    if (sha[0])
        rep = redisCommandArgv(c, argc, argv, argl);
    if (!sha[0] || (rep && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOSCRIPT", 8))) {
        /* No sha yet, or the server lost its script cache (restart, SCRIPT FLUSH). */
        freeReplyObject(rep);
        argv[0] = "EVAL";
        argl[0] = 4;
        argv[1] = s->src;
        argl[1] = strlen(s->src);
        rep = redisCommandArgv(c, argc, argv, argl);
    }
    free(argv);
    free(argl);
    return rep;
}
