/*
 * store_redis.c - the registry store in Redis (hiredis), the default for a
 * gateway: any worker can read a page's registry, and a worker's death loses
 * nothing.
 *
 * Data model (DESIGN.md): for a page key "{t:<tenant>:s:<sid>}:<page>"
 *   rg:{t:<tenant>:s:<sid>}:reg:<page>   hash  ref -> msgpack(entry)
 *   rg:{t:<tenant>:s:<sid>}:seen:<page>  zset  ref -> last seen (ms)
 * Both share the session's hash tag, so the model runs on Redis Cluster. One
 * observation is one EVALSHA of a Lua script that upserts, drops the stale
 * entries and evicts down to the cap atomically: two workers racing on one
 * page cannot leave it over its cap. Keys expire ttl_ms after the last commit.
 *
 * Connections: a small free list of hiredis contexts, one per thread while it
 * runs a command (hiredis contexts are not thread-safe). Timeouts are set
 * after every connect; a context that saw any error is freed, never reused
 * (hiredis errors are sticky), and the next command connects anew. While
 * Redis is down every operation fails at once with RG_EUNAVAIL.
 */
#define _GNU_SOURCE
#include "registry.h"

#include <hiredis/hiredis.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define IDLE_MAX 16

/* Drops go 500 members per ZREM/HDEL: Lua's unpack has a stack limit. */
static const char commit_lua[] =
    "local now, stale, max, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), "
    "tonumber(ARGV[4])\n"
    "for i = 5, #ARGV, 3 do\n"
    "  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])\n"
    "  redis.call('ZADD', KEYS[2], tonumber(ARGV[i + 1]), ARGV[i])\n"
    "end\n"
    "local gone = {}\n"
    "local function drop(list)\n"
    "  for j = 1, #list, 500 do\n"
    "    local part = {unpack(list, j, math.min(j + 499, #list))}\n"
    "    redis.call('ZREM', KEYS[2], unpack(part))\n"
    "    redis.call('HDEL', KEYS[1], unpack(part))\n"
    "  end\n"
    "  for j = 1, #list do gone[#gone + 1] = list[j] end\n"
    "end\n"
    "drop(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - stale)))\n"
    "local n = redis.call('ZCARD', KEYS[2])\n"
    "if n > max then drop(redis.call('ZRANGE', KEYS[2], 0, n - max - 1)) end\n"
    "if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) redis.call('PEXPIRE', KEYS[2], ttl) "
    "end\n"
    "return gone\n";

struct redis_store {
    reg_store base;
    char host[256];
    int port;
    char password[256];
    int db;
    struct timeval connect_tv, command_tv;
    int64_t ttl_ms;
    char sha[41];
    pthread_mutex_t mu;
    redisContext *idle[IDLE_MAX];
    int n_idle;
};

/* ---- connections ---- */

static redisContext *connect_one(struct redis_store *r)
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
    redisReply *rep;
    if (r->password[0]) {
        rep = redisCommand(c, "AUTH %s", r->password);
        int ok = rep && rep->type != REDIS_REPLY_ERROR;
        freeReplyObject(rep);
        if (!ok)
            goto fail;
    }
    if (r->db > 0) {
        rep = redisCommand(c, "SELECT %d", r->db);
        int ok = rep && rep->type != REDIS_REPLY_ERROR;
        freeReplyObject(rep);
        if (!ok)
            goto fail;
    }
    return c;
fail:
    redisFree(c);
    return NULL;
}

static redisContext *take(struct redis_store *r)
{
    pthread_mutex_lock(&r->mu);
    redisContext *c = r->n_idle ? r->idle[--r->n_idle] : NULL;
    pthread_mutex_unlock(&r->mu);
    return c ? c : connect_one(r);
}

/* Gives a context back; one that saw an error is freed (its error is sticky). */
static void give(struct redis_store *r, redisContext *c, int failed)
{
    if (!c)
        return;
    if (failed || c->err) {
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

/* ---- keys ---- */

/* "rg:{tag}:<kind>:<page>" from the page key "{tag}:<page>". */
static void key_of(char *out, size_t len, const char *page, const char *kind)
{
    const char *close = page[0] == '{' ? strstr(page, "}:") : NULL;
    if (close)
        snprintf(out, len, "rg:%.*s:%s:%s", (int)(close - page + 1), page, kind, close + 2);
    else
        snprintf(out, len, "rg:{%s}:%s", page, kind);
}

/* ---- entries as msgpack ---- */

static void pack_str(msgpack_packer *pk, const char *k, const char *v)
{
    if (!v)
        return;
    msgpack_pack_str(pk, strlen(k));
    msgpack_pack_str_body(pk, k, strlen(k));
    msgpack_pack_str(pk, strlen(v));
    msgpack_pack_str_body(pk, v, strlen(v));
}

static void pack_key(msgpack_packer *pk, const char *k)
{
    msgpack_pack_str(pk, strlen(k));
    msgpack_pack_str_body(pk, k, strlen(k));
}

static void pack_entry(msgpack_sbuffer *sb, const reg_entry *e)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    const char *strs[][2] = {{"ref", e->ref},
                             {"testid", e->ident.testid},
                             {"id", e->ident.id},
                             {"aria", e->ident.aria_label},
                             {"role", e->ident.role},
                             {"name", e->ident.name},
                             {"tag", e->ident.tag},
                             {"prole", e->ident.parent_role},
                             {"sel", e->selector},
                             {"css", e->css_path},
                             {"frame", e->frame},
                             {"nattr", e->name_attr}};
    size_t n = 0;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        n += strs[i][1] != NULL;
    msgpack_pack_map(&pk, n + 5);
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        pack_str(&pk, strs[i][0], strs[i][1]);
    pack_key(&pk, "sib");
    msgpack_pack_int(&pk, e->ident.sibling_index);
    pack_key(&pk, "seen");
    msgpack_pack_int64(&pk, e->last_seen_ms);
    pack_key(&pk, "order");
    msgpack_pack_int(&pk, e->order);
    pack_key(&pk, "b");
    msgpack_pack_array(&pk, 4);
    for (int i = 0; i < 4; i++)
        msgpack_pack_int(&pk, e->bounds[i]);
    pack_key(&pk, "alt");
    msgpack_pack_array(&pk, e->n_alt);
    for (size_t i = 0; i < e->n_alt; i++) {
        msgpack_pack_str(&pk, strlen(e->alt[i]));
        msgpack_pack_str_body(&pk, e->alt[i], strlen(e->alt[i]));
    }
}

static int key_is(const msgpack_object *k, const char *name)
{
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(name) &&
           !memcmp(k->via.str.ptr, name, k->via.str.size);
}

static char *str_of(const msgpack_object *v)
{
    return v->type == MSGPACK_OBJECT_STR ? strndup(v->via.str.ptr, v->via.str.size) : NULL;
}

static int64_t int_of(const msgpack_object *v)
{
    if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        return (int64_t)v->via.u64;
    if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        return v->via.i64;
    return 0;
}

/* Decodes one stored entry (our own bytes, but Redis is shared: check anyway). */
static int unpack_entry(const char *buf, size_t len, reg_entry *e)
{
    memset(e, 0, sizeof *e);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    if (msgpack_unpack_next(&u, buf, len, &off) != MSGPACK_UNPACK_SUCCESS ||
        u.data.type != MSGPACK_OBJECT_MAP) {
        msgpack_unpacked_destroy(&u);
        return RG_EINTERNAL;
    }
    const msgpack_object_map *m = &u.data.via.map;
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
        char **dst = key_is(k, "testid")  ? &e->ident.testid
                     : key_is(k, "id")    ? &e->ident.id
                     : key_is(k, "aria")  ? &e->ident.aria_label
                     : key_is(k, "role")  ? &e->ident.role
                     : key_is(k, "name")  ? &e->ident.name
                     : key_is(k, "tag")   ? &e->ident.tag
                     : key_is(k, "prole") ? &e->ident.parent_role
                     : key_is(k, "sel")   ? &e->selector
                     : key_is(k, "css")   ? &e->css_path
                     : key_is(k, "frame") ? &e->frame
                     : key_is(k, "nattr") ? &e->name_attr
                                          : NULL;
        if (dst) {
            free(*dst);
            *dst = str_of(v);
        } else if (key_is(k, "ref") && v->type == MSGPACK_OBJECT_STR &&
                   v->via.str.size < sizeof e->ref) {
            memcpy(e->ref, v->via.str.ptr, v->via.str.size);
            e->ref[v->via.str.size] = '\0';
        } else if (key_is(k, "sib")) {
            e->ident.sibling_index = (int)int_of(v);
        } else if (key_is(k, "seen")) {
            e->last_seen_ms = int_of(v);
        } else if (key_is(k, "order")) {
            e->order = (int)int_of(v);
        } else if (key_is(k, "b") && v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size == 4) {
            for (int j = 0; j < 4; j++)
                e->bounds[j] = (int)int_of(&v->via.array.ptr[j]);
        } else if (key_is(k, "alt") && v->type == MSGPACK_OBJECT_ARRAY && !e->alt) {
            e->alt = calloc(v->via.array.size ? v->via.array.size : 1, sizeof *e->alt);
            for (uint32_t j = 0; e->alt && j < v->via.array.size; j++) {
                char *s = str_of(&v->via.array.ptr[j]);
                if (s)
                    e->alt[e->n_alt++] = s;
            }
        }
    }
    msgpack_unpacked_destroy(&u);
    return e->ref[0] ? 0 : RG_EINTERNAL;
}

/* ---- operations ---- */

static int redis_load(reg_store *s, const char *page, reg_entry **out, size_t *n)
{
    struct redis_store *r = (struct redis_store *)s;
    *out = NULL;
    *n = 0;
    char key[512];
    key_of(key, sizeof key, page, "reg");
    redisContext *c = take(r);
    if (!c)
        return RG_EUNAVAIL;
    redisReply *rep = redisCommand(c, "HVALS %s", key);
    if (!rep || rep->type != REDIS_REPLY_ARRAY) {
        int failed = !rep;
        freeReplyObject(rep);
        give(r, c, failed);
        return RG_EUNAVAIL;
    }
    int rc = 0;
    reg_entry *v = calloc(rep->elements ? rep->elements : 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < rep->elements; i++) {
        redisReply *el = rep->element[i];
        if (el->type == REDIS_REPLY_STRING && unpack_entry(el->str, el->len, &v[k]) == 0)
            k++;
        else
            reg_entry_destroy(&v[k]); /* a value we cannot read is skipped */
    }
    if (!v)
        rc = RG_ENOMEM;
    freeReplyObject(rep);
    give(r, c, 0);
    *out = v;
    *n = k;
    return rc;
}

static int redis_commit(reg_store *s, const char *page, const reg_entry *v, size_t n,
                        int64_t now_ms, int64_t stale_ms, size_t max, reg_removed *removed)
{
    struct redis_store *r = (struct redis_store *)s;
    if (removed)
        *removed = (reg_removed){0};
    char reg_key[512], seen_key[512];
    key_of(reg_key, sizeof reg_key, page, "reg");
    key_of(seen_key, sizeof seen_key, page, "seen");
    /* EVALSHA sha 2 reg seen now stale max ttl (ref seen blob)... */
    size_t argc = 9 + 3 * n;
    const char **argv = calloc(argc, sizeof *argv);
    size_t *argl = calloc(argc, sizeof *argl);
    char (*nums)[24] = calloc(4 + n, 24);
    msgpack_sbuffer *blobs = calloc(n ? n : 1, sizeof *blobs);
    int rc = RG_ENOMEM;
    redisContext *c = NULL;
    redisReply *rep = NULL;
    if (!argv || !argl || !nums || !blobs)
        goto out;
    size_t a = 0;
    argv[a++] = "EVALSHA";
    argv[a++] = r->sha;
    argv[a++] = "2";
    argv[a++] = reg_key;
    argv[a++] = seen_key;
    snprintf(nums[0], 24, "%lld", (long long)now_ms);
    snprintf(nums[1], 24, "%lld", (long long)stale_ms);
    snprintf(nums[2], 24, "%zu", max);
    snprintf(nums[3], 24, "%lld", (long long)r->ttl_ms);
    for (int i = 0; i < 4; i++)
        argv[a++] = nums[i];
    for (size_t i = 0; i < n; i++) {
        msgpack_sbuffer_init(&blobs[i]);
        pack_entry(&blobs[i], &v[i]);
        snprintf(nums[4 + i], 24, "%lld", (long long)v[i].last_seen_ms);
        argv[a++] = v[i].ref;
        argv[a++] = nums[4 + i];
        argl[a] = blobs[i].size;
        argv[a++] = blobs[i].data ? blobs[i].data : "";
    }
    for (size_t i = 0; i < a; i++)
        if (!argl[i])
            argl[i] = strlen(argv[i]);
    rc = RG_EUNAVAIL;
    if (!(c = take(r)))
        goto out;
    rep = redisCommandArgv(c, (int)a, argv, argl);
    if (rep && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOSCRIPT", 8)) {
        /* The server lost its script cache (restart, SCRIPT FLUSH): send it whole. */
        freeReplyObject(rep);
        argv[0] = "EVAL";
        argl[0] = 4;
        argv[1] = commit_lua;
        argl[1] = strlen(commit_lua);
        rep = redisCommandArgv(c, (int)a, argv, argl);
    }
    if (rep && rep->type == REDIS_REPLY_ARRAY) {
        rc = 0;
        if (removed && rep->elements) {
            removed->refs = calloc(rep->elements, sizeof *removed->refs);
            for (size_t i = 0; removed->refs && i < rep->elements; i++)
                if (rep->element[i]->type == REDIS_REPLY_STRING &&
                    (removed->refs[removed->n] = strdup(rep->element[i]->str)))
                    removed->n++;
        }
    } else if (rep && rep->type == REDIS_REPLY_ERROR) {
        rg_log(RG_LOG_ERROR, "registry", "redis commit failed: %s", rep->str);
        rc = RG_EINTERNAL;
    }
out:
    give(r, c, rep == NULL);
    freeReplyObject(rep);
    for (size_t i = 0; blobs && i < n; i++)
        msgpack_sbuffer_destroy(&blobs[i]);
    free(blobs);
    free(nums);
    free(argl);
    free(argv);
    return rc;
}

static int redis_drop(reg_store *s, const char *page)
{
    struct redis_store *r = (struct redis_store *)s;
    char reg_key[512], seen_key[512];
    key_of(reg_key, sizeof reg_key, page, "reg");
    key_of(seen_key, sizeof seen_key, page, "seen");
    redisContext *c = take(r);
    if (!c)
        return RG_EUNAVAIL;
    redisReply *rep = redisCommand(c, "DEL %s %s", reg_key, seen_key);
    int rc = rep && rep->type == REDIS_REPLY_INTEGER ? 0 : RG_EUNAVAIL;
    give(r, c, rep == NULL);
    freeReplyObject(rep);
    return rc;
}

static void redis_destroy(reg_store *s)
{
    struct redis_store *r = (struct redis_store *)s;
    while (r->n_idle)
        redisFree(r->idle[--r->n_idle]);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static const reg_store_ops redis_ops = {redis_load, redis_commit, redis_drop, redis_destroy};

/* redis://[[user]:password@]host[:port][/db] */
static int parse_url(struct redis_store *r, const char *url)
{
    const char *p = url;
    if (!strncmp(p, "redis://", 8))
        p += 8;
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        snprintf(r->password, sizeof r->password, "%.*s", (int)(at - pw), pw);
        p = at + 1;
    }
    const char *slash = strchr(p, '/');
    const char *colon = strchr(p, ':');
    size_t hl = colon && (!slash || colon < slash) ? (size_t)(colon - p)
                : slash                             ? (size_t)(slash - p)
                                                    : strlen(p);
    if (hl == 0 || hl >= sizeof r->host)
        return -1;
    snprintf(r->host, sizeof r->host, "%.*s", (int)hl, p);
    r->port = colon && (!slash || colon < slash) ? atoi(colon + 1) : 6379;
    r->db = slash ? atoi(slash + 1) : 0;
    return r->port > 0 && r->port < 65536 ? 0 : -1;
}

static void sha1_of_script(struct redis_store *r, redisContext *c)
{
    redisReply *rep = redisCommand(c, "SCRIPT LOAD %s", commit_lua);
    if (rep && rep->type == REDIS_REPLY_STRING && rep->len == 40)
        memcpy(r->sha, rep->str, 41);
    freeReplyObject(rep);
}

void reg_redis_config_default(reg_redis_config *cfg)
{
    cfg->url = "redis://127.0.0.1:6379";
    cfg->connect_timeout_ms = 500;
    cfg->command_timeout_ms = 1000;
    cfg->ttl_ms = 24LL * 3600 * 1000;
}

void reg_redis_config_from_env(reg_redis_config *cfg)
{
    const char *u = getenv("REFGATE_REDIS_URL");
    if (u && *u)
        cfg->url = u;
    cfg->command_timeout_ms =
        (int)rg_env_long("REFGATE_REDIS_TIMEOUT_MS", cfg->command_timeout_ms, 10, 60000);
}

reg_store *reg_store_redis_new(const reg_redis_config *cfg, char *err, size_t errlen)
{
    struct redis_store *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->base.ops = &redis_ops;
    pthread_mutex_init(&r->mu, NULL);
    if (parse_url(r, cfg->url) < 0) {
        snprintf(err, errlen, "cannot read the Redis URL");
        redis_destroy(&r->base);
        return NULL;
    }
    r->connect_tv = (struct timeval){cfg->connect_timeout_ms / 1000,
                                     (cfg->connect_timeout_ms % 1000) * 1000};
    r->command_tv = (struct timeval){cfg->command_timeout_ms / 1000,
                                     (cfg->command_timeout_ms % 1000) * 1000};
    r->ttl_ms = cfg->ttl_ms;
    redisContext *c = connect_one(r);
    if (!c) {
        snprintf(err, errlen, "cannot reach Redis at %s:%d%s", r->host, r->port,
                 r->password[0] ? " (or it refused the password)" : "");
        redis_destroy(&r->base);
        return NULL;
    }
    sha1_of_script(r, c);
    give(r, c, 0);
    if (!r->sha[0]) {
        snprintf(err, errlen, "Redis refused the registry's script");
        redis_destroy(&r->base);
        return NULL;
    }
    return &r->base;
}
