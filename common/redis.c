/*
 * redis.c - hiredis connections shared by the threads of one process (see
 * rg.h), to one Redis server or to a Redis Cluster.
 *
 * Every command goes through one path (route): its keys are found from a
 * table of the commands refgate sends, their slots computed (CRC16 of the
 * hash tag, as Redis does), and a command whose keys span slots is refused
 * here, in either mode, so that the single-server test suite already proves
 * that nothing would cross slots on a cluster. On a cluster the slot picks
 * the node from the slot map (CLUSTER SLOTS); MOVED updates the map and
 * retries, ASK sends ASKING and retries once, TRYAGAIN, CLUSTERDOWN and a
 * node that cannot be reached are retried with a short backoff for at most
 * the command timeout, after which the command fails as transient (NULL).
 * (During a migration Redis answers a command on several keys with
 * TRYAGAIN while some of them are missing on either side; for refgate's
 * scripts, which always name a key that may not exist, that is the whole
 * window between MIGRATING and the slot's handover: short with redis-cli's
 * resharding, and it fails as transient past the bound.)
 * A command that was sent but got no reply is never retried: its fate is
 * unknown.
 *
 * Each node has its own free list of idle contexts; a context that saw an
 * error is never reused. Scripts run by EVALSHA; a node that answers
 * NOSCRIPT (it never saw the script, or restarted) gets EVAL, which also
 * caches the script there.
 *
 * Threading: any thread. One mutex guards the node list and the slot map,
 * one per node its free list; no lock is held across a round trip.
 */
#define _GNU_SOURCE
#include "common/rg.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define IDLE_MAX 32
#define NODES_MAX RG_REDIS_NODES_MAX
#define SLOTS 16384
#define REDIRECTS_MAX 5 /* MOVED and ASK answers followed for one command */

enum { MODE_SINGLE, MODE_CLUSTER, MODE_SENTINEL };

#define SENTINELS_MAX 16
#define WATCH_POLL_MS 200 /* how often the +switch-master watcher looks at its stop flag */

struct node {
    char host[256];
    int port;
    pthread_mutex_t mu;
    redisContext *idle[IDLE_MAX];
    int n_idle;
};

struct rg_redis {
    int mode;
    char password[256];
    int db;
    char where[512];
    struct timeval connect_tv, command_tv;
    int command_ms;
    pthread_mutex_t mu; /* nodes, n_nodes, slot map */
    struct node *nodes[NODES_MAX];
    int n_nodes, n_seeds;
    short slot_node[SLOTS]; /* node index, -1 unknown */
    int map_ok;
    pthread_mutex_t refresh_mu; /* one refresh at a time */
    unsigned refresh_gen;
    /* Sentinel: the sentinels, the master's name, the node that is its
       master now (-1: ask the sentinels), and the +switch-master watcher. */
    struct node *sentinels[SENTINELS_MAX];
    int n_sentinels;
    char master_name[128];
    int master;
    pthread_t watcher;
    int watching;
    volatile int stop;
};

static pthread_mutex_t script_mu = PTHREAD_MUTEX_INITIALIZER;

static void *watch_main(void *arg);

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

/* ---- slots ---------------------------------------------------------------- */

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, as Redis Cluster uses. */
static unsigned crc16(const char *s, size_t n)
{
    unsigned crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (unsigned)(unsigned char)s[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
}

int rg_redis_slot(const char *key, size_t len)
{
    /* The hash tag: between the first '{' and the first '}' after it, when
       not empty; otherwise the whole key. */
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return (int)(crc16(open + 1, (size_t)(close - open - 1)) % SLOTS);
    }
    return (int)(crc16(key, len) % SLOTS);
}

/*
 * Where the keys of a command are: the arguments from first to last (-1: to
 * the end) by step. The commands refgate, its tests and its benches send;
 * a command not here and not in keyless[] is refused, so that a new one
 * cannot be routed by guess.
 */
static const struct keyspec {
    const char *name;
    int first, last, step;
} keyspecs[] = {
    {"GET", 1, 1, 1},       {"SET", 1, 1, 1},           {"GETDEL", 1, 1, 1},
    {"DEL", 1, -1, 1},      {"UNLINK", 1, -1, 1},       {"EXISTS", 1, -1, 1},
    {"TOUCH", 1, -1, 1},    {"MGET", 1, -1, 1},         {"MSET", 1, -1, 2},
    {"EXPIRE", 1, 1, 1},    {"PEXPIRE", 1, 1, 1},       {"TTL", 1, 1, 1},
    {"PTTL", 1, 1, 1},      {"PERSIST", 1, 1, 1},       {"TYPE", 1, 1, 1},
    {"STRLEN", 1, 1, 1},    {"INCR", 1, 1, 1},          {"INCRBY", 1, 1, 1},
    {"DECR", 1, 1, 1},      {"APPEND", 1, 1, 1},        {"RENAME", 1, 2, 1},
    {"HGET", 1, 1, 1},      {"HSET", 1, 1, 1},          {"HMSET", 1, 1, 1},
    {"HMGET", 1, 1, 1},     {"HGETALL", 1, 1, 1},       {"HVALS", 1, 1, 1},
    {"HKEYS", 1, 1, 1},     {"HDEL", 1, 1, 1},          {"HLEN", 1, 1, 1},
    {"HEXISTS", 1, 1, 1},   {"HINCRBY", 1, 1, 1},       {"SADD", 1, 1, 1},
    {"SREM", 1, 1, 1},      {"SMEMBERS", 1, 1, 1},      {"SCARD", 1, 1, 1},
    {"SISMEMBER", 1, 1, 1}, {"ZADD", 1, 1, 1},          {"ZREM", 1, 1, 1},
    {"ZRANGE", 1, 1, 1},    {"ZRANGEBYSCORE", 1, 1, 1}, {"ZCARD", 1, 1, 1},
    {"ZSCORE", 1, 1, 1},    {"ZINCRBY", 1, 1, 1},       {"ZREMRANGEBYSCORE", 1, 1, 1},
    {"ZCOUNT", 1, 1, 1},
    {"LPUSH", 1, 1, 1},     {"RPUSH", 1, 1, 1},         {"LRANGE", 1, 1, 1},
    {"LPOP", 1, 1, 1},      {"RPOP", 1, 1, 1},          {"LLEN", 1, 1, 1},
    {"LREM", 1, 1, 1},      {"MEMORY", 2, 2, 1},        {"OBJECT", 2, 2, 1},
    {"DUMP", 1, 1, 1},      {"RESTORE", 1, 1, 1}, /* bench/capacity's clones */
};

/* Keyless commands any node answers. */
static const char *const keyless[] = {"PING",    "ECHO", "TIME",   "SCRIPT", "ROLE",    "CLUSTER",
                                      "COMMAND", "WAIT", "CLIENT", "CONFIG", "LASTSAVE"};

/* Commands on one node's keyspace: on a cluster, only through rg_redis_take_master. */
static const char *const node_local[] = {"FLUSHALL", "FLUSHDB",   "DBSIZE",  "SCAN", "KEYS",
                                         "INFO",     "RANDOMKEY", "MONITOR", "DEBUG"};

static int name_is(const char *name, size_t n, const char *want)
{
    return strlen(want) == n && !strncasecmp(name, want, n);
}

static int in_list(const char *name, size_t n, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (name_is(name, n, list[i]))
            return 1;
    return 0;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum { SLOT_ANY = -1, SLOT_CROSS = -2, SLOT_UNKNOWN = -3, SLOT_LOCAL = -4 };

/* The slot every key of the command lies in, SLOT_ANY for none, or one of
   SLOT_CROSS, SLOT_UNKNOWN, SLOT_LOCAL. */
static int command_slot(int argc, const char *const *argv, const size_t *lens)
{
    if (argc < 1)
        return SLOT_UNKNOWN;
    const char *name = argv[0];
    size_t n = lens[0];
    int first, last, step = 1;
    if (name_is(name, n, "EVAL") || name_is(name, n, "EVALSHA")) {
        if (argc < 3)
            return SLOT_UNKNOWN;
        char nk[16];
        snprintf(nk, sizeof nk, "%.*s", (int)(lens[2] < 15 ? lens[2] : 15), argv[2]);
        long k = strtol(nk, NULL, 10);
        if (k < 0 || k > argc - 3)
            return SLOT_UNKNOWN;
        if (k == 0)
            return SLOT_ANY;
        first = 3;
        last = 2 + (int)k;
    } else if (in_list(name, n, keyless, COUNT(keyless))) {
        return SLOT_ANY;
    } else if (in_list(name, n, node_local, COUNT(node_local))) {
        return SLOT_LOCAL;
    } else {
        const struct keyspec *ks = NULL;
        for (size_t i = 0; i < COUNT(keyspecs) && !ks; i++)
            if (name_is(name, n, keyspecs[i].name))
                ks = &keyspecs[i];
        if (!ks || argc <= ks->first)
            return SLOT_UNKNOWN;
        first = ks->first;
        last = ks->last < 0 ? argc - 1 : ks->last;
        step = ks->step;
        if (last >= argc)
            return SLOT_UNKNOWN;
    }
    int slot = SLOT_ANY;
    for (int i = first; i <= last; i += step) {
        int s = rg_redis_slot(argv[i], lens[i]);
        if (slot == SLOT_ANY)
            slot = s;
        else if (s != slot)
            return SLOT_CROSS;
    }
    return slot;
}

/* ---- URLs ----------------------------------------------------------------- */

static struct node *node_new(const char *host, size_t hl, int port)
{
    struct node *n = calloc(1, sizeof *n);
    if (!n || hl == 0 || hl >= sizeof n->host) {
        free(n);
        return NULL;
    }
    memcpy(n->host, host, hl);
    n->port = port;
    pthread_mutex_init(&n->mu, NULL);
    return n;
}

/* "host[:port]" of n bytes into a new node (port 6379 when absent). */
static struct node *parse_hostport(const char *p, size_t n)
{
    const char *colon = NULL;
    for (size_t i = 0; i < n; i++)
        if (p[i] == ':')
            colon = p + i;
    int port = 6379;
    size_t hl = colon ? (size_t)(colon - p) : n;
    if (colon) {
        char digits[8];
        size_t dl = n - hl - 1;
        if (dl == 0 || dl >= sizeof digits)
            return NULL;
        memcpy(digits, colon + 1, dl);
        digits[dl] = '\0';
        char *end;
        long v = strtol(digits, &end, 10);
        if (*end || v <= 0 || v > 65535)
            return NULL;
        port = (int)v;
    }
    if (hl >= 2 && p[0] == '[' && p[hl - 1] == ']') {
        p++;
        hl -= 2;
    }
    return node_new(p, hl, port);
}

/*
 * redis://[[user]:password@]host[:port][/db]
 * redis+cluster://[[user]:password@]host[:port][,host[:port]...]
 * redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/name[/db]
 * (the password is the master's; the sentinels are asked without one)
 */
static int parse_url(rg_redis *r, const char *url)
{
    const char *p = url;
    if (!strncmp(p, "redis+cluster://", 16)) {
        r->mode = MODE_CLUSTER;
        p += 16;
    } else if (!strncmp(p, "redis+sentinel://", 17)) {
        r->mode = MODE_SENTINEL;
        p += 17;
    } else if (!strncmp(p, "redis://", 8)) {
        p += 8;
    } else if (strstr(p, "://")) {
        return -1;
    }
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
    size_t hosts_len = slash ? (size_t)(slash - p) : strlen(p);
    if (r->mode == MODE_SENTINEL) {
        /* /name, then perhaps /db */
        if (!slash || !slash[1])
            return -1;
        const char *name = slash + 1, *end = strchr(name, '/');
        size_t nl = end ? (size_t)(end - name) : strlen(name);
        if (nl == 0 || nl >= sizeof r->master_name || memchr(name, ' ', nl))
            return -1;
        memcpy(r->master_name, name, nl);
        slash = end;
    }
    if (slash && slash[1]) {
        char *end;
        long db = strtol(slash + 1, &end, 10);
        if (*end || db < 0 || db > 1000000 || (r->mode == MODE_CLUSTER && db != 0))
            return -1; /* a cluster has database 0 only */
        r->db = (int)db;
    }
    while (hosts_len > 0) {
        const char *comma = memchr(p, ',', hosts_len);
        size_t one = comma ? (size_t)(comma - p) : hosts_len;
        if (r->n_nodes == NODES_MAX || (r->mode == MODE_SINGLE && r->n_nodes == 1))
            return -1;
        struct node *n = parse_hostport(p, one);
        if (!n)
            return -1;
        if (r->mode == MODE_SENTINEL) {
            if (r->n_sentinels == SENTINELS_MAX) {
                free(n);
                return -1;
            }
            pthread_mutex_destroy(&n->mu);
            r->sentinels[r->n_sentinels++] = n;
        } else {
            r->nodes[r->n_nodes++] = n;
        }
        p += one + (comma ? 1 : 0);
        hosts_len -= one + (comma ? 1 : 0);
    }
    r->n_seeds = r->n_nodes;
    r->master = -1;
    if (r->mode == MODE_SENTINEL) {
        if (r->n_sentinels == 0)
            return -1;
        snprintf(r->where, sizeof r->where, "%s from the sentinels at %s:%d%s", r->master_name,
                 r->sentinels[0]->host, r->sentinels[0]->port, r->n_sentinels > 1 ? ",..." : "");
        return 0;
    }
    if (r->n_nodes == 0)
        return -1;
    if (r->mode == MODE_CLUSTER)
        snprintf(r->where, sizeof r->where, "%s:%d%s (cluster)", r->nodes[0]->host,
                 r->nodes[0]->port, r->n_nodes > 1 ? ",..." : "");
    else
        snprintf(r->where, sizeof r->where, "%s:%d", r->nodes[0]->host, r->nodes[0]->port);
    return 0;
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
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->refresh_mu, NULL);
    for (int i = 0; i < SLOTS; i++)
        r->slot_node[i] = -1;
    if (!cfg->url || parse_url(r, cfg->url) < 0) {
        snprintf(err, errlen,
                 "cannot read the Redis URL (expected redis://[:password@]host[:port][/db], "
                 "redis+cluster://[:password@]host:port[,host:port...] or "
                 "redis+sentinel://[:password@]host:port[,host:port...]/name)");
        rg_redis_free(r);
        return RG_EBADREQ;
    }
    r->command_ms = cfg->command_timeout_ms > 0 ? cfg->command_timeout_ms : 1000;
    r->connect_tv = tv_of(cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 500);
    r->command_tv = tv_of(r->command_ms);
    if (r->mode == MODE_SINGLE) {
        for (int i = 0; i < SLOTS; i++)
            r->slot_node[i] = 0;
        r->map_ok = 1;
    }
    if (r->mode == MODE_SENTINEL) {
        r->map_ok = 1; /* no slots: every command goes to the master */
        if (pthread_create(&r->watcher, NULL, watch_main, r) == 0)
            r->watching = 1;
        else
            rg_log(RG_LOG_WARN, "redis",
                   "%s: no +switch-master watcher (failovers are found on "
                   "errors only)",
                   r->where);
    }
    *out = r;
    return 0;
}

static void node_drop_idle(struct node *n)
{
    redisContext *drop[IDLE_MAX];
    pthread_mutex_lock(&n->mu);
    int k = n->n_idle;
    memcpy(drop, n->idle, (size_t)k * sizeof *drop);
    n->n_idle = 0;
    pthread_mutex_unlock(&n->mu);
    for (int i = 0; i < k; i++)
        redisFree(drop[i]);
}

void rg_redis_free(rg_redis *r)
{
    if (!r)
        return;
    if (r->watching) {
        r->stop = 1;
        pthread_join(r->watcher, NULL);
    }
    for (int i = 0; i < r->n_sentinels; i++)
        free(r->sentinels[i]);
    for (int i = 0; i < r->n_nodes; i++) {
        node_drop_idle(r->nodes[i]);
        pthread_mutex_destroy(&r->nodes[i]->mu);
        free(r->nodes[i]);
    }
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->refresh_mu);
    free(r);
}

const char *rg_redis_where(const rg_redis *r)
{
    return r->where;
}

int rg_redis_is_cluster(const rg_redis *r)
{
    return r->mode == MODE_CLUSTER;
}

/* ---- connections ---------------------------------------------------------- */

static int simple_ok(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *rep = arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt);
    int ok = rep && rep->type != REDIS_REPLY_ERROR;
    freeReplyObject(rep);
    return ok;
}

static redisContext *connect_one(rg_redis *r, struct node *n)
{
    redisContext *c = redisConnectWithTimeout(n->host, n->port, r->connect_tv);
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
    if (r->mode == MODE_SENTINEL) {
        /* What the sentinels named may have been demoted since: only a
           master is used. */
        redisReply *role = redisCommand(c, "ROLE");
        int master = role && role->type == REDIS_REPLY_ARRAY && role->elements > 0 &&
                     role->element[0]->type == REDIS_REPLY_STRING &&
                     !strcmp(role->element[0]->str, "master");
        freeReplyObject(role);
        if (!master)
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

static redisContext *node_take(rg_redis *r, struct node *n)
{
    for (;;) {
        pthread_mutex_lock(&n->mu);
        redisContext *c = n->n_idle ? n->idle[--n->n_idle] : NULL;
        pthread_mutex_unlock(&n->mu);
        if (!c)
            return connect_one(r, n);
        if (!closed_by_server(c))
            return c;
        redisFree(c);
    }
}

static void node_give(struct node *n, redisContext *c, int failed)
{
    if (!c)
        return;
    if (failed || c->err) {
        /* The idle ones most likely went the same way: a Redis that was
           away closed them all. Without this, every command after its
           return would take a dead one first and fail. */
        node_drop_idle(n);
        redisFree(c);
        return;
    }
    pthread_mutex_lock(&n->mu);
    if (n->n_idle < IDLE_MAX) {
        n->idle[n->n_idle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&n->mu);
    if (c)
        redisFree(c);
}

/* The node at host:port, added when new (NULL when the list is full). Locks r->mu. */
static int node_index(rg_redis *r, const char *host, size_t hl, int port)
{
    pthread_mutex_lock(&r->mu);
    int found = -1;
    for (int i = 0; i < r->n_nodes && found < 0; i++)
        if (r->nodes[i]->port == port && strlen(r->nodes[i]->host) == hl &&
            !memcmp(r->nodes[i]->host, host, hl))
            found = i;
    if (found < 0 && r->n_nodes < NODES_MAX) {
        struct node *n = node_new(host, hl, port);
        if (n) {
            found = r->n_nodes;
            r->nodes[r->n_nodes++] = n;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return found;
}

static struct node *node_at(rg_redis *r, int i)
{
    pthread_mutex_lock(&r->mu);
    struct node *n = i >= 0 && i < r->n_nodes ? r->nodes[i] : NULL;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ---- the slot map --------------------------------------------------------- */

/* Reads one CLUSTER SLOTS reply into map (node indices); 0, or -1 when unreadable. */
static int read_slots(rg_redis *r, const redisReply *rep, const struct node *asked, short *map)
{
    if (!rep || rep->type != REDIS_REPLY_ARRAY)
        return -1;
    for (int i = 0; i < SLOTS; i++)
        map[i] = -1;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
            return -1;
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        const redisReply *m = e->element[2];
        if (lo < 0 || hi >= SLOTS || lo > hi || m->element[0]->type != REDIS_REPLY_STRING ||
            m->element[1]->type != REDIS_REPLY_INTEGER)
            return -1;
        /* An empty or unknown host: the node that answered. */
        const char *host = m->element[0]->str;
        size_t hl = m->element[0]->len;
        if (hl == 0 || (hl == 1 && host[0] == '?')) {
            host = asked->host;
            hl = strlen(host);
        }
        int idx = node_index(r, host, hl, (int)m->element[1]->integer);
        if (idx < 0)
            return -1;
        for (long long s = lo; s <= hi; s++)
            map[s] = (short)idx;
    }
    return 0;
}

/*
 * Asks the known nodes, seeds first, for the slot map until one answers.
 * gen is the refresh generation the caller saw: when another thread
 * refreshed meanwhile, this returns at once. 0, or -1 when no node answered.
 */
static int resolve_master(rg_redis *r);

static int refresh_map(rg_redis *r, unsigned gen)
{
    if (r->mode == MODE_SINGLE)
        return 0;
    pthread_mutex_lock(&r->refresh_mu);
    if (r->refresh_gen != gen) {
        pthread_mutex_unlock(&r->refresh_mu);
        return 0;
    }
    if (r->mode == MODE_SENTINEL) {
        int rc = resolve_master(r);
        r->refresh_gen++;
        pthread_mutex_unlock(&r->refresh_mu);
        return rc;
    }
    short *map = malloc(sizeof r->slot_node);
    int rc = -1;
    pthread_mutex_lock(&r->mu);
    int n = r->n_nodes;
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; map && rc < 0 && i < n; i++) {
        struct node *nd = node_at(r, i);
        redisContext *c = node_take(r, nd);
        if (!c)
            continue;
        redisReply *rep = redisCommand(c, "CLUSTER SLOTS");
        node_give(nd, c, rep == NULL);
        if (rep && read_slots(r, rep, nd, map) == 0 && rep->elements > 0)
            rc = 0;
        freeReplyObject(rep);
    }
    if (rc == 0) {
        pthread_mutex_lock(&r->mu);
        memcpy(r->slot_node, map, sizeof r->slot_node);
        r->map_ok = 1;
        pthread_mutex_unlock(&r->mu);
    }
    r->refresh_gen++;
    pthread_mutex_unlock(&r->refresh_mu);
    free(map);
    return rc;
}

/* The node a keyless command would go to now, without asking anybody. */
static int slot_owner_peek(rg_redis *r)
{
    pthread_mutex_lock(&r->mu);
    int idx = r->mode == MODE_SENTINEL ? r->master : r->mode == MODE_SINGLE ? 0 : r->slot_node[0];
    pthread_mutex_unlock(&r->mu);
    return idx;
}

static unsigned map_gen(rg_redis *r)
{
    pthread_mutex_lock(&r->refresh_mu);
    unsigned g = r->refresh_gen;
    pthread_mutex_unlock(&r->refresh_mu);
    return g;
}

/* The node index for slot (SLOT_ANY: any master), or -1 when unknown. */
static int slot_owner(rg_redis *r, int slot)
{
    if (r->mode == MODE_SENTINEL) {
        pthread_mutex_lock(&r->mu);
        int m = r->master;
        pthread_mutex_unlock(&r->mu);
        if (m < 0) {
            refresh_map(r, map_gen(r));
            pthread_mutex_lock(&r->mu);
            m = r->master;
            pthread_mutex_unlock(&r->mu);
        }
        return m;
    }
    pthread_mutex_lock(&r->mu);
    int ok = r->map_ok;
    pthread_mutex_unlock(&r->mu);
    if (!ok)
        refresh_map(r, map_gen(r));
    pthread_mutex_lock(&r->mu);
    int idx = -1;
    if (slot >= 0)
        idx = r->slot_node[slot];
    else
        for (int s = 0; s < SLOTS && idx < 0; s += 1024)
            idx = r->slot_node[s];
    if (idx < 0 && slot < 0)
        idx = 0; /* no map yet: a seed */
    pthread_mutex_unlock(&r->mu);
    return idx;
}

/* ---- Sentinel ------------------------------------------------------------- */

static redisContext *sentinel_connect(rg_redis *r, const struct node *s)
{
    redisContext *c = redisConnectWithTimeout(s->host, s->port, r->connect_tv);
    if (!c || c->err || redisSetTimeout(c, r->command_tv) != REDIS_OK) {
        if (c)
            redisFree(c);
        return NULL;
    }
    return c;
}

/* Makes host:port the master (a node, added when new); the old one's idle
   connections go. */
static void set_master(rg_redis *r, const char *host, size_t hl, int port, const char *why)
{
    int idx = node_index(r, host, hl, port);
    if (idx < 0)
        return;
    pthread_mutex_lock(&r->mu);
    int old = r->master;
    r->master = idx;
    struct node *was = old >= 0 && old != idx ? r->nodes[old] : NULL;
    pthread_mutex_unlock(&r->mu);
    if (was) {
        node_drop_idle(was);
        rg_log(RG_LOG_INFO, "redis", "%s: the master is now %.*s:%d (%s)", r->where, (int)hl, host,
               port, why);
    }
}

/*
 * Asks the sentinels in turn for the master's address, and takes the first
 * answer whose node says ROLE master (connect_one checks it). 0, or -1 when
 * no sentinel named a master that answers as one. Called under refresh_mu.
 */
static int resolve_master(rg_redis *r)
{
    for (int i = 0; i < r->n_sentinels; i++) {
        redisContext *c = sentinel_connect(r, r->sentinels[i]);
        redisReply *rep =
            c ? redisCommand(c, "SENTINEL get-master-addr-by-name %s", r->master_name) : NULL;
        if (c)
            redisFree(c);
        int ok = rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
                 rep->element[0]->type == REDIS_REPLY_STRING &&
                 rep->element[1]->type == REDIS_REPLY_STRING;
        int port = ok ? atoi(rep->element[1]->str) : 0;
        if (ok && port > 0 && port < 65536) {
            int idx = node_index(r, rep->element[0]->str, rep->element[0]->len, port);
            struct node *n = node_at(r, idx);
            redisContext *m = n ? node_take(r, n) : NULL;
            if (m) {
                node_give(n, m, 0);
                set_master(r, rep->element[0]->str, rep->element[0]->len, port,
                           "the sentinels said so");
                freeReplyObject(rep);
                return 0;
            }
        }
        freeReplyObject(rep);
    }
    return -1;
}

/* One +switch-master message ("<name> <old ip> <old port> <new ip> <new port>"). */
static void switch_master(rg_redis *r, const char *msg)
{
    char name[128], old_ip[256], new_ip[256];
    int old_port, new_port;
    if (sscanf(msg, "%127s %255s %d %255s %d", name, old_ip, &old_port, new_ip, &new_port) != 5 ||
        strcmp(name, r->master_name) || new_port <= 0 || new_port > 65535)
        return;
    set_master(r, new_ip, strlen(new_ip), new_port, "+switch-master");
}

/*
 * The watcher: subscribed to +switch-master on one sentinel at a time (the
 * next one when it goes away), so a failover is followed before a command
 * fails on the old master. Polls, so that rg_redis_free can stop it.
 */
static void *watch_main(void *arg)
{
    rg_redis *r = arg;
    int at = 0;
    while (!r->stop) {
        redisContext *c = sentinel_connect(r, r->sentinels[at]);
        redisReply *rep = c ? redisCommand(c, "SUBSCRIBE +switch-master") : NULL;
        int ok = rep && rep->type == REDIS_REPLY_ARRAY;
        freeReplyObject(rep);
        while (ok && !r->stop) {
            struct pollfd p = {.fd = c->fd, .events = POLLIN};
            int n = poll(&p, 1, WATCH_POLL_MS);
            if (n == 0)
                continue;
            void *v = NULL;
            if (n < 0 || redisGetReply(c, &v) != REDIS_OK || !v) {
                ok = 0;
                break;
            }
            redisReply *m = v;
            if (m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                m->element[2]->type == REDIS_REPLY_STRING)
                switch_master(r, m->element[2]->str);
            freeReplyObject(m);
        }
        if (c)
            redisFree(c);
        at = (at + 1) % r->n_sentinels;
        for (int w = 0; w < 500 && !r->stop; w += 50)
            usleep(50000);
    }
    return NULL;
}

int rg_redis_current(rg_redis *r, char *out, size_t len)
{
    int idx = slot_owner_peek(r);
    struct node *n = node_at(r, idx);
    if (!n) {
        snprintf(out, len, "%s", "");
        return -1;
    }
    snprintf(out, len, "%s:%d", n->host, n->port);
    return 0;
}

/* ---- replies -------------------------------------------------------------- */

/* An error reply made here (caller frees), so callers see one kind of answer. */
static redisReply *error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static redisReply *error_reply(const char *fmt, ...)
{
    char msg[400], wire[420];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    int n = snprintf(wire, sizeof wire, "-%s\r\n", msg);
    redisReader *rd = redisReaderCreate();
    void *rep = NULL;
    if (rd && redisReaderFeed(rd, wire, (size_t)n) == REDIS_OK)
        redisReaderGetReply(rd, &rep);
    redisReaderFree(rd);
    return rep;
}

static int is_error(const redisReply *rep, const char *prefix)
{
    size_t n = strlen(prefix);
    return rep && rep->type == REDIS_REPLY_ERROR && rep->len >= n && !memcmp(rep->str, prefix, n) &&
           (rep->len == n || rep->str[n] == ' ');
}

/* "MOVED <slot> <host>:<port>" or "ASK ...": the target's node index, or -1. */
static int redirect_target(rg_redis *r, const redisReply *rep, int *slot)
{
    const char *sp = memchr(rep->str, ' ', rep->len);
    if (!sp)
        return -1;
    *slot = atoi(sp + 1);
    const char *addr = strchr(sp + 1, ' ');
    if (!addr || *slot < 0 || *slot >= SLOTS)
        return -1;
    addr++;
    const char *colon = strrchr(addr, ':');
    if (!colon)
        return -1;
    int port = atoi(colon + 1);
    if (port <= 0 || port > 65535)
        return -1;
    return node_index(r, addr, (size_t)(colon - addr), port);
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- routing -------------------------------------------------------------- */

/* A formatted command and its arguments (pointing into buf). */
struct cmd {
    char *buf;
    size_t len;
    int argc;
    const char **argv;
    size_t *lens;
};

static void cmd_free(struct cmd *c)
{
    free(c->buf);
    free(c->argv);
    free(c->lens);
    memset(c, 0, sizeof *c);
}

/* Finds the arguments in a command hiredis formatted (a RESP array of bulk strings). */
static int cmd_parse(struct cmd *c)
{
    const char *p = c->buf, *end = c->buf + c->len;
    if (c->len < 4 || *p != '*')
        return -1;
    long argc = strtol(p + 1, NULL, 10);
    p = memchr(p, '\n', (size_t)(end - p));
    if (!p || argc < 1 || argc > 1 << 20)
        return -1;
    p++;
    c->argv = calloc((size_t)argc, sizeof *c->argv);
    c->lens = calloc((size_t)argc, sizeof *c->lens);
    if (!c->argv || !c->lens)
        return -1;
    for (long i = 0; i < argc; i++) {
        if (p >= end || *p != '$')
            return -1;
        long n = strtol(p + 1, NULL, 10);
        p = memchr(p, '\n', (size_t)(end - p));
        if (!p || n < 0 || (size_t)(end - p - 1) < (size_t)n + 2)
            return -1;
        c->argv[i] = p + 1;
        c->lens[i] = (size_t)n;
        p += 1 + n + 2;
    }
    c->argc = (int)argc;
    return 0;
}

static int cmd_from_argv(struct cmd *c, int argc, const char **argv, const size_t *lens)
{
    memset(c, 0, sizeof *c);
    int n = redisFormatCommandArgv(&c->buf, argc, argv, lens);
    if (n < 0 || !c->buf)
        return -1;
    c->len = (size_t)n;
    return cmd_parse(c);
}

static int cmd_from_fmt(struct cmd *c, const char *fmt, va_list ap)
{
    memset(c, 0, sizeof *c);
    int n = redisvFormatCommand(&c->buf, fmt, ap);
    if (n < 0 || !c->buf)
        return -1;
    c->len = (size_t)n;
    return cmd_parse(c);
}

/* The slot of a command, or an error reply into *refused for one that cannot be routed. */
static int argv_slot(rg_redis *r, int argc, const char *const *argv, const size_t *lens,
                     redisReply **refused)
{
    int slot = command_slot(argc, argv, lens);
    *refused = NULL;
    const char *what = NULL;
    if (slot == SLOT_CROSS)
        what = "CROSSSLOT refgate refuses a command whose keys lie in different slots";
    else if (slot == SLOT_UNKNOWN)
        what = "ERR refgate's Redis client does not know where the keys of this command are";
    else if (slot == SLOT_LOCAL && r->mode == MODE_CLUSTER)
        what = "ERR this command reads one node's keyspace: run it on each master";
    if (!what)
        return slot == SLOT_LOCAL ? SLOT_ANY : slot;
    int nl = argc > 0 ? (int)(lens[0] < 32 ? lens[0] : 32) : 0;
    rg_log(RG_LOG_ERROR, "redis", "%s: %.*s (a bug in refgate)", what, nl, argc ? argv[0] : "");
    *refused = error_reply("%s (%.*s)", what, nl, argc ? argv[0] : "");
    return -1;
}

static int cmd_slot(rg_redis *r, const struct cmd *c, redisReply **refused)
{
    return argv_slot(r, c->argc, c->argv, c->lens, refused);
}

/*
 * Sends c to the node of its slot and follows the cluster's answers.
 * Returns the reply, NULL when the command's fate is unknown or Redis
 * stayed unreachable past the bound. *sent says whether it reached a node.
 */
static redisReply *route(rg_redis *r, const struct cmd *c)
{
    redisReply *rep = NULL;
    int slot = cmd_slot(r, c, &rep);
    if (rep)
        return rep;
    long long deadline = mono_ms() + r->command_ms;
    int ask = -1, redirects = 0, backoff = 10;
    for (;;) {
        unsigned gen = map_gen(r);
        int idx = ask >= 0 ? ask : slot_owner(r, slot);
        struct node *n = node_at(r, idx);
        redisContext *ctx = n ? node_take(r, n) : NULL;
        if (ctx) {
            if (ask >= 0)
                redisAppendCommand(ctx, "ASKING");
            redisAppendFormattedCommand(ctx, c->buf, c->len);
            void *v = NULL;
            int failed = 0;
            if (ask >= 0) {
                failed = redisGetReply(ctx, &v) != REDIS_OK || !v;
                freeReplyObject(v);
                v = NULL;
            }
            failed = failed || redisGetReply(ctx, &v) != REDIS_OK || !v;
            node_give(n, ctx, failed);
            if (failed) {
                freeReplyObject(v);
                if (r->mode != MODE_SINGLE)
                    refresh_map(r, gen); /* a failover may be on its way */
                return NULL;             /* sent: its fate is unknown */
            }
            rep = v;
            if (r->mode == MODE_SINGLE)
                return rep;
            if (r->mode == MODE_SENTINEL) {
                /* READONLY: the master was demoted under us (nothing ran). */
                if (!is_error(rep, "READONLY"))
                    return rep;
                freeReplyObject(rep);
                rep = NULL;
                pthread_mutex_lock(&r->mu);
                if (r->master == idx)
                    r->master = -1;
                pthread_mutex_unlock(&r->mu);
            }
            ask = -1;
            int s;
            if (!rep) {
                /* the sentinel case above: wait, then ask the sentinels */
            } else if (is_error(rep, "MOVED") && redirects < REDIRECTS_MAX) {
                int to = redirect_target(r, rep, &s);
                freeReplyObject(rep);
                rep = NULL;
                redirects++;
                if (to < 0)
                    return NULL;
                pthread_mutex_lock(&r->mu);
                r->slot_node[s] = (short)to;
                pthread_mutex_unlock(&r->mu);
                refresh_map(r, gen); /* slots seldom move alone */
                continue;
            } else if (is_error(rep, "ASK") && redirects < REDIRECTS_MAX) {
                ask = redirect_target(r, rep, &s);
                freeReplyObject(rep);
                rep = NULL;
                redirects++;
                if (ask < 0)
                    return NULL;
                continue;
            }
            /* A redirection past the count (ASK answered by TRYAGAIN on the
               importing node, as a script whose keys are split by a
               migration is) waits like TRYAGAIN. */
            else if (!is_error(rep, "TRYAGAIN") && !is_error(rep, "CLUSTERDOWN") &&
                     !is_error(rep, "MOVED") && !is_error(rep, "ASK"))
                return rep;
            freeReplyObject(rep);
            rep = NULL;
            redirects = 0;
        } else if (r->mode == MODE_SINGLE) {
            return NULL;
        }
        /* Not reachable, TRYAGAIN (a migration in progress) or CLUSTERDOWN
           (a failover): wait a little and look again, within the bound. */
        if (mono_ms() + backoff > deadline) {
            rg_log(RG_LOG_WARN, "redis", "%s: no node took the command within %d ms", r->where,
                   r->command_ms);
            return NULL;
        }
        usleep((useconds_t)backoff * 1000);
        backoff = backoff < 200 ? backoff * 2 : 200;
        refresh_map(r, gen);
    }
}

redisReply *rg_redis_command(rg_redis *r, const char *fmt, ...)
{
    struct cmd c;
    va_list ap;
    va_start(ap, fmt);
    int ok = cmd_from_fmt(&c, fmt, ap) == 0;
    va_end(ap);
    redisReply *rep = ok ? route(r, &c) : NULL;
    cmd_free(&c);
    return rep;
}

redisReply *rg_redis_argv(rg_redis *r, int argc, const char **argv, const size_t *lens)
{
    struct cmd c;
    size_t *l = NULL;
    if (!lens) {
        l = malloc((size_t)(argc > 0 ? argc : 1) * sizeof *l);
        if (!l)
            return NULL;
        for (int i = 0; i < argc; i++)
            l[i] = strlen(argv[i]);
        lens = l;
    }
    int ok = cmd_from_argv(&c, argc, argv, lens) == 0;
    free(l);
    redisReply *rep = ok ? route(r, &c) : NULL;
    cmd_free(&c);
    return rep;
}

/*
 * The argument vector of EVALSHA sha, or of EVAL with s's source when sha
 * is "", then the key count (its digits into nk), the keys and the
 * arguments. 0 with *argv and *argl the caller frees, or -1 without memory.
 */
static int script_argv(const rg_redis_script *s, const char *sha, int nkeys, int nargs,
                       const char *const *args, const size_t *lens, char nk[16],
                       const char ***argv, size_t **argl)
{
    int argc = 3 + nkeys + nargs;
    const char **v = calloc((size_t)argc, sizeof *v);
    size_t *l = calloc((size_t)argc, sizeof *l);
    if (!v || !l) {
        free(v);
        free(l);
        return -1;
    }
    snprintf(nk, 16, "%d", nkeys);
    v[0] = sha[0] ? "EVALSHA" : "EVAL";
    v[1] = sha[0] ? sha : s->src;
    v[2] = nk;
    for (int i = 0; i < nkeys + nargs; i++) {
        v[3 + i] = args[i];
        l[3 + i] = lens ? lens[i] : strlen(args[i]);
    }
    for (int i = 0; i < 3; i++)
        l[i] = strlen(v[i]);
    *argv = v;
    *argl = l;
    return 0;
}

redisReply *rg_redis_eval(rg_redis *r, rg_redis_script *s, int nkeys, int nargs,
                          const char *const *args, const size_t *lens)
{
    /* Keys that cannot go together are refused before anything is sent
       (the script would otherwise be loaded first). */
    for (int i = 1; i < nkeys; i++)
        if (rg_redis_slot(args[i], lens ? lens[i] : strlen(args[i])) !=
            rg_redis_slot(args[0], lens ? lens[0] : strlen(args[0]))) {
            const char *kv[] = {"EVALSHA", "-", "2", args[0], args[i]};
            size_t kl[] = {7, 1, 1, lens ? lens[0] : strlen(args[0]),
                           lens ? lens[i] : strlen(args[i])};
            redisReply *refused = NULL;
            argv_slot(r, 5, kv, kl, &refused);
            return refused;
        }
    char sha[41];
    pthread_mutex_lock(&script_mu);
    memcpy(sha, s->sha, sizeof sha);
    pthread_mutex_unlock(&script_mu);
    if (!sha[0]) {
        redisReply *rep = rg_redis_command(r, "SCRIPT LOAD %s", s->src);
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
    const char **argv;
    size_t *argl;
    char nk[16];
    redisReply *rep = NULL;
    if (script_argv(s, sha, nkeys, nargs, args, lens, nk, &argv, &argl) < 0)
        return NULL;
    if (sha[0])
        rep = rg_redis_argv(r, argc, argv, argl);
    /* No sha yet, or the node that holds the keys never saw the script (a
       cluster's other nodes, a restart, SCRIPT FLUSH): EVAL caches it there. */
    if (!sha[0] || is_error(rep, "NOSCRIPT")) {
        freeReplyObject(rep);
        argv[0] = "EVAL";
        argl[0] = 4;
        argv[1] = s->src;
        argl[1] = strlen(s->src);
        rep = rg_redis_argv(r, argc, argv, argl);
    }
    free(argv);
    free(argl);
    return rep;
}

/* Sends script s (EVALSHA sha, or EVAL with its source when sha is NULL) and
   WAIT on c; the two replies, or -1 when the connection failed. */
static int eval_wait_on(redisContext *c, rg_redis_script *s, const char *sha, int nkeys,
                        int nargs, const char *const *args, const size_t *lens, int replicas,
                        int timeout_ms, redisReply **rep, redisReply **waited)
{
    *rep = *waited = NULL;
    int argc = 3 + nkeys + nargs;
    const char **argv;
    size_t *argl;
    char nk[16];
    if (script_argv(s, sha ? sha : "", nkeys, nargs, args, lens, nk, &argv, &argl) < 0)
        return -1;
    redisAppendCommandArgv(c, argc, argv, argl);
    redisAppendCommand(c, "WAIT %d %d", replicas, timeout_ms);
    free(argv);
    free(argl);
    void *a = NULL, *b = NULL;
    int failed = redisGetReply(c, &a) != REDIS_OK || !a || redisGetReply(c, &b) != REDIS_OK || !b;
    *rep = a;
    *waited = b;
    return failed ? -1 : 0;
}

redisReply *rg_redis_eval_wait(rg_redis *r, rg_redis_script *s, int nkeys, int nargs,
                               const char *const *args, const size_t *lens, int replicas,
                               int timeout_ms, int *acked)
{
    *acked = -1;
    char sha[41];
    pthread_mutex_lock(&script_mu);
    memcpy(sha, s->sha, sizeof sha);
    pthread_mutex_unlock(&script_mu);
    int slot = nkeys > 0 ? rg_redis_slot(args[0], lens ? lens[0] : strlen(args[0])) : SLOT_ANY;
    for (int i = 1; i < nkeys; i++)
        if (rg_redis_slot(args[i], lens ? lens[i] : strlen(args[i])) != slot)
            slot = SLOT_CROSS;
    int idx = slot != SLOT_CROSS ? slot_owner(r, slot) : -1;
    struct node *n = idx >= 0 ? node_at(r, idx) : NULL;
    redisContext *c = n ? node_take(r, n) : NULL;
    if (!c) /* keys that cannot go together, no node: the plain way says why */
        return rg_redis_eval(r, s, nkeys, nargs, args, lens);
    redisReply *rep, *waited;
    /* By its sha when known; the source when not, or when this node has not
       seen it (a first use, a promoted replica: scripts are not replicated). */
    int failed = eval_wait_on(c, s, sha[0] ? sha : NULL, nkeys, nargs, args, lens, replicas,
                              timeout_ms, &rep, &waited);
    if (!failed && is_error(rep, "NOSCRIPT")) {
        freeReplyObject(rep);
        freeReplyObject(waited);
        failed = eval_wait_on(c, s, NULL, nkeys, nargs, args, lens, replicas, timeout_ms, &rep,
                              &waited);
    }
    node_give(n, c, failed);
    if (failed) {
        freeReplyObject(rep);
        freeReplyObject(waited);
        return NULL; /* transient, as rg_redis_eval's timeouts */
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        /* A redirection, a read-only former master: route() knows what to do. */
        freeReplyObject(rep);
        freeReplyObject(waited);
        return rg_redis_eval(r, s, nkeys, nargs, args, lens);
    }
    if (waited->type == REDIS_REPLY_INTEGER)
        *acked = (int)waited->integer;
    freeReplyObject(waited);
    return rep;
}

/* ---- pipelines ------------------------------------------------------------ */

struct rg_redis_pipe {
    rg_redis *r;
    int n, cap, bad;
    struct cmd *cmds;
};

rg_redis_pipe *rg_redis_pipe_new(rg_redis *r)
{
    rg_redis_pipe *p = calloc(1, sizeof *p);
    if (p)
        p->r = r;
    return p;
}

void rg_redis_pipe_free(rg_redis_pipe *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        cmd_free(&p->cmds[i]);
    free(p->cmds);
    free(p);
}

int rg_redis_pipe_add(rg_redis_pipe *p, const char *fmt, ...)
{
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 8;
        struct cmd *v = realloc(p->cmds, (size_t)cap * sizeof *v);
        if (!v) {
            p->bad = 1;
            return RG_ENOMEM;
        }
        p->cmds = v;
        p->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int rc = cmd_from_fmt(&p->cmds[p->n], fmt, ap);
    va_end(ap);
    if (rc < 0) {
        cmd_free(&p->cmds[p->n]);
        p->bad = 1;
        return RG_ENOMEM;
    }
    p->n++;
    return 0;
}

int rg_redis_pipe_size(const rg_redis_pipe *p)
{
    return p->n;
}

/*
 * Runs a run of commands [from, to) that all go to node idx as one
 * pipeline. A reply that is a redirection or a retry answer is replaced by
 * the command run again alone through route(). Returns 0, or -1 when the
 * connection failed (the run's replies are left NULL).
 */
static int pipe_run_one(rg_redis_pipe *p, int idx, int from, int to, redisReply **out)
{
    rg_redis *r = p->r;
    struct node *n = node_at(r, idx);
    redisContext *c = n ? node_take(r, n) : NULL;
    if (!c) {
        /* Alone, each gets route()'s retries. */
        for (int i = from; i < to; i++)
            out[i] = route(r, &p->cmds[i]);
        return 0;
    }
    for (int i = from; i < to; i++)
        redisAppendFormattedCommand(c, p->cmds[i].buf, p->cmds[i].len);
    int failed = 0;
    for (int i = from; i < to && !failed; i++) {
        void *v = NULL;
        failed = redisGetReply(c, &v) != REDIS_OK || !v;
        out[i] = failed ? NULL : v;
    }
    node_give(n, c, failed);
    if (failed)
        return -1;
    for (int i = from; i < to && r->mode == MODE_CLUSTER; i++) {
        if (is_error(out[i], "MOVED") || is_error(out[i], "ASK") || is_error(out[i], "TRYAGAIN") ||
            is_error(out[i], "CLUSTERDOWN")) {
            freeReplyObject(out[i]);
            out[i] = route(r, &p->cmds[i]);
        }
    }
    return 0;
}

int rg_redis_pipe_run(rg_redis_pipe *p, redisReply **out)
{
    for (int i = 0; i < p->n; i++)
        out[i] = NULL;
    if (p->bad)
        return -1;
    int *slot = calloc(p->n > 0 ? (size_t)p->n : 1u, sizeof *slot);
    if (!slot)
        return -1;
    int failed = 0;
    for (int i = 0; i < p->n; i++) {
        redisReply *refused;
        slot[i] = cmd_slot(p->r, &p->cmds[i], &refused);
        if (refused)
            out[i] = refused;
    }
    /* Consecutive commands for one node share a round trip; the order of
       the commands is kept. */
    int i = 0;
    while (i < p->n && !failed) {
        if (out[i]) {
            i++;
            continue;
        }
        int idx = slot_owner(p->r, slot[i]), j = i + 1;
        while (j < p->n && !out[j] && slot_owner(p->r, slot[j]) == idx)
            j++;
        failed = pipe_run_one(p, idx, i, j, out) < 0;
        i = j;
    }
    free(slot);
    for (int k = 0; k < p->n; k++)
        if (!out[k])
            failed = 1;
    return failed ? -1 : 0;
}

/* ---- raw connections ------------------------------------------------------ */

/* The distinct masters of the map, in slot order, into idx (at most max). */
static int masters(rg_redis *r, int *idx, int max)
{
    if (r->mode == MODE_SINGLE) {
        idx[0] = 0;
        return 1;
    }
    if (r->mode == MODE_SENTINEL) {
        idx[0] = slot_owner(r, SLOT_ANY);
        return idx[0] >= 0 ? 1 : -1;
    }
    if (refresh_map(r, map_gen(r)) < 0)
        return -1;
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (int s = 0; s < SLOTS; s++) {
        int v = r->slot_node[s], seen = v < 0;
        for (int k = 0; k < n && !seen; k++)
            seen = idx[k] == v;
        if (!seen && n < max)
            idx[n++] = v;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

int rg_redis_masters(rg_redis *r)
{
    int idx[NODES_MAX];
    return masters(r, idx, NODES_MAX);
}

redisContext *rg_redis_take_master(rg_redis *r, int i)
{
    int idx[NODES_MAX];
    int n = masters(r, idx, NODES_MAX);
    if (i < 0 || i >= n)
        return NULL;
    struct node *nd = node_at(r, idx[i]);
    return nd ? node_take(r, nd) : NULL;
}

redisContext *rg_redis_take(rg_redis *r)
{
    if (r->mode == MODE_SINGLE)
        return node_take(r, r->nodes[0]);
    return rg_redis_take_master(r, 0); /* a cluster's first master, or the sentinels' master */
}

void rg_redis_give(rg_redis *r, redisContext *c, int failed)
{
    if (!c)
        return;
    struct node *n = NULL;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n_nodes && !n; i++)
        if (c->tcp.host && r->nodes[i]->port == c->tcp.port &&
            !strcmp(r->nodes[i]->host, c->tcp.host))
            n = r->nodes[i];
    pthread_mutex_unlock(&r->mu);
    if (n)
        node_give(n, c, failed);
    else
        redisFree(c);
}
