/*
 * store_redis.c - the registry store in Redis (hiredis), the default for a
 * gateway: any worker can read a page's registry, and a worker's death loses
 * nothing.
 *
 * Data model (docs/architecture.md): for a page key "{t:<tenant>:s:<sid>}:<page>"
 *   rg:{t:<tenant>:s:<sid>}:reg:<page>   hash  ref -> msgpack(entry)
 *   rg:{t:<tenant>:s:<sid>}:seen:<page>  zset  ref -> last seen (ms)
 *   rg:{t:<tenant>:s:<sid>}:regz:<page>  string the compact form of a parked page
 * Both share the session's hash tag, so the model runs on Redis Cluster. One
 * observation is one EVALSHA of a Lua script that upserts, drops the stale
 * entries and evicts down to the cap atomically: two workers racing on one
 * page cannot leave it over its cap. Keys expire ttl_ms after the last commit.
 *
 * Connections come from common/redis.c (rg_redis): one context per running
 * thread, timeouts after every connect, never reusing a context that saw an
 * error. While Redis is down every operation fails with RG_EUNAVAIL.
 */
#define _GNU_SOURCE
#include "registry/registry.h"

#include <hiredis/hiredis.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* KEYS reg seen regz [fence]; ARGV now stale max ttl token, then (ref seen blob) per
   entry, an empty blob for a ref to remove (reg_entry.drop). With a fence key, nothing
   is written unless its field "fence" is token: -1. Writes and drops go 500 entries
   per HSET/ZADD and ZREM/HDEL: Lua's unpack has a stack limit, and one call per
   entry took twice the time (2,000 new entries: 13.8 ms of Redis's one thread
   against 6.9, server-side, SLOWLOG; docs/benchmarks.md, 7 December). */
static const char commit_lua[] =
    "if #KEYS > 3 and redis.call('HGET', KEYS[4], 'fence') ~= ARGV[5] then return -1 end\n"
    "local now, stale, max, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), "
    "tonumber(ARGV[4])\n"
    "redis.call('DEL', KEYS[3])\n"
    "local asked = {}\n"
    "local hs, zs = {}, {}\n"
    "local function put()\n"
    "  if #hs > 0 then\n"
    "    redis.call('HSET', KEYS[1], unpack(hs))\n"
    "    redis.call('ZADD', KEYS[2], unpack(zs))\n"
    "    hs, zs = {}, {}\n"
    "  end\n"
    "end\n"
    "for i = 6, #ARGV, 3 do\n"
    "  if ARGV[i + 2] == '' then asked[#asked + 1] = ARGV[i]\n"
    "  else\n"
    "    hs[#hs + 1] = ARGV[i]\n"
    "    hs[#hs + 1] = ARGV[i + 2]\n"
    "    zs[#zs + 1] = tonumber(ARGV[i + 1])\n"
    "    zs[#zs + 1] = ARGV[i]\n"
    "    if #hs >= 1000 then put() end\n"
    "  end\n"
    "end\n"
    "put()\n"
    "local gone = {}\n"
    "local function drop(list)\n"
    "  for j = 1, #list, 500 do\n"
    "    local part = {unpack(list, j, math.min(j + 499, #list))}\n"
    "    redis.call('ZREM', KEYS[2], unpack(part))\n"
    "    redis.call('HDEL', KEYS[1], unpack(part))\n"
    "  end\n"
    "  for j = 1, #list do gone[#gone + 1] = list[j] end\n"
    "end\n"
    "drop(asked)\n"
    "drop(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - stale)))\n"
    "local n = redis.call('ZCARD', KEYS[2])\n"
    "if n > max then drop(redis.call('ZRANGE', KEYS[2], 0, n - max - 1)) end\n"
    "if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) redis.call('PEXPIRE', KEYS[2], ttl) "
    "end\n"
    "return gone\n";

struct redis_store {
    reg_store base;
    rg_redis *redis;
    int own_redis;
    int64_t ttl_ms;
};

static rg_redis_script commit_script = {commit_lua, ""};

/* KEYS reg seen regz [fence]; ARGV blob ttl token: the compact form replaces the hash and
   zset; -1 (nothing written) when the fence no longer holds token. */
static rg_redis_script park_script = {
    "if #KEYS > 3 and redis.call('HGET', KEYS[4], 'fence') ~= ARGV[3] then return -1 end\n"
    "redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])\n"
    "redis.call('DEL', KEYS[1], KEYS[2])\n"
    "return 1\n",
    ""};

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
        char **dst = rg_mp_key_is(k, "testid")  ? &e->ident.testid
                     : rg_mp_key_is(k, "id")    ? &e->ident.id
                     : rg_mp_key_is(k, "aria")  ? &e->ident.aria_label
                     : rg_mp_key_is(k, "role")  ? &e->ident.role
                     : rg_mp_key_is(k, "name")  ? &e->ident.name
                     : rg_mp_key_is(k, "tag")   ? &e->ident.tag
                     : rg_mp_key_is(k, "prole") ? &e->ident.parent_role
                     : rg_mp_key_is(k, "sel")   ? &e->selector
                     : rg_mp_key_is(k, "css")   ? &e->css_path
                     : rg_mp_key_is(k, "frame") ? &e->frame
                     : rg_mp_key_is(k, "nattr") ? &e->name_attr
                                                : NULL;
        if (dst) {
            free(*dst);
            *dst = str_of(v);
        } else if (rg_mp_key_is(k, "ref") && v->type == MSGPACK_OBJECT_STR &&
                   v->via.str.size < sizeof e->ref) {
            memcpy(e->ref, v->via.str.ptr, v->via.str.size);
            e->ref[v->via.str.size] = '\0';
        } else if (rg_mp_key_is(k, "sib")) {
            e->ident.sibling_index = (int)int_of(v);
        } else if (rg_mp_key_is(k, "seen")) {
            e->last_seen_ms = int_of(v);
        } else if (rg_mp_key_is(k, "order")) {
            e->order = (int)int_of(v);
        } else if (rg_mp_key_is(k, "b") && v->type == MSGPACK_OBJECT_ARRAY &&
                   v->via.array.size == 4) {
            for (int j = 0; j < 4; j++)
                e->bounds[j] = (int)int_of(&v->via.array.ptr[j]);
        } else if (rg_mp_key_is(k, "alt") && v->type == MSGPACK_OBJECT_ARRAY && !e->alt) {
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

/* ---- the compact parked form ----
 * msgpack [1, base_seen, [[ref, testid, id, aria, role, name, tag, prole,
 * sib, nattr, frame, base_seen - seen, order], ...]]: identity only, about
 * 60 bytes an entry, one string value per page instead of a hash and a zset.
 */

static void pack_opt(msgpack_packer *pk, const char *v)
{
    if (!v) {
        msgpack_pack_nil(pk);
        return;
    }
    msgpack_pack_str(pk, strlen(v));
    msgpack_pack_str_body(pk, v, strlen(v));
}

static void pack_compact(msgpack_sbuffer *sb, const reg_entry *v, size_t n)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int64_t base = 0;
    for (size_t i = 0; i < n; i++)
        base = v[i].last_seen_ms > base ? v[i].last_seen_ms : base;
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_int64(&pk, base);
    msgpack_pack_array(&pk, n);
    for (size_t i = 0; i < n; i++) {
        const reg_entry *e = &v[i];
        msgpack_pack_array(&pk, 13);
        pack_opt(&pk, e->ref);
        pack_opt(&pk, e->ident.testid);
        pack_opt(&pk, e->ident.id);
        pack_opt(&pk, e->ident.aria_label);
        pack_opt(&pk, e->ident.role);
        pack_opt(&pk, e->ident.name);
        pack_opt(&pk, e->ident.tag);
        pack_opt(&pk, e->ident.parent_role);
        msgpack_pack_int(&pk, e->ident.sibling_index);
        pack_opt(&pk, e->name_attr);
        pack_opt(&pk, e->frame && *e->frame ? e->frame : NULL);
        msgpack_pack_int64(&pk, base - e->last_seen_ms);
        msgpack_pack_int(&pk, e->order);
    }
}

static int unpack_compact_entry(const msgpack_object *o, int64_t base, reg_entry *e)
{
    memset(e, 0, sizeof *e);
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 13)
        return RG_EINTERNAL;
    const msgpack_object *f = o->via.array.ptr;
    if (f[0].type != MSGPACK_OBJECT_STR || f[0].via.str.size >= sizeof e->ref)
        return RG_EINTERNAL;
    memcpy(e->ref, f[0].via.str.ptr, f[0].via.str.size);
    e->ref[f[0].via.str.size] = '\0';
    char **dst[] = {&e->ident.testid, &e->ident.id,   &e->ident.aria_label,
                    &e->ident.role,   &e->ident.name, &e->ident.tag,
                    &e->ident.parent_role};
    for (int i = 0; i < 7; i++)
        *dst[i] = str_of(&f[1 + i]);
    e->ident.sibling_index = (int)int_of(&f[8]);
    e->name_attr = str_of(&f[9]);
    e->frame = f[10].type == MSGPACK_OBJECT_STR ? str_of(&f[10]) : strdup("");
    e->last_seen_ms = base - int_of(&f[11]);
    e->order = (int)int_of(&f[12]);
    return e->frame ? 0 : RG_ENOMEM;
}

/* Entries of a compact value appended to v (room for them is there). */
static size_t unpack_compact(const char *buf, size_t len, reg_entry *v)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0, k = 0;
    if (msgpack_unpack_next(&u, buf, len, &off) == MSGPACK_UNPACK_SUCCESS &&
        u.data.type == MSGPACK_OBJECT_ARRAY && u.data.via.array.size == 3 &&
        int_of(&u.data.via.array.ptr[0]) == 1 &&
        u.data.via.array.ptr[2].type == MSGPACK_OBJECT_ARRAY) {
        int64_t base = int_of(&u.data.via.array.ptr[1]);
        const msgpack_object_array *a = &u.data.via.array.ptr[2].via.array;
        for (uint32_t i = 0; i < a->size; i++) {
            if (unpack_compact_entry(&a->ptr[i], base, &v[k]) == 0)
                k++;
            else
                reg_entry_destroy(&v[k]);
        }
    }
    msgpack_unpacked_destroy(&u);
    return k;
}

/* How many entries a compact value holds (its array's declared size, capped). */
static size_t compact_count(const char *buf, size_t len)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0, n = 0;
    if (msgpack_unpack_next(&u, buf, len, &off) == MSGPACK_UNPACK_SUCCESS &&
        u.data.type == MSGPACK_OBJECT_ARRAY && u.data.via.array.size == 3 &&
        u.data.via.array.ptr[2].type == MSGPACK_OBJECT_ARRAY)
        n = u.data.via.array.ptr[2].via.array.size;
    msgpack_unpacked_destroy(&u);
    return n;
}

static int redis_commit_fenced(reg_store *s, const char *page, const reg_entry *v, size_t n,
                               int64_t now_ms, int64_t stale_ms, size_t max,
                               reg_removed *removed, const reg_fence *f);

/* ---- operations ---- */

/* The hash's entries (and, with regz, the compact value's) in one round trip. */
static int fetch(struct redis_store *r, const char *page, redisReply **hvals, redisReply **regz)
{
    char key[512], zkey[512];
    key_of(key, sizeof key, page, "reg");
    key_of(zkey, sizeof zkey, page, "regz");
    *hvals = *regz = NULL;
    rg_redis_pipe *p = rg_redis_pipe_new(r->redis);
    if (!p)
        return RG_ENOMEM;
    redisReply *rs[2] = {NULL, NULL};
    int failed = rg_redis_pipe_add(p, "HVALS %s", key) < 0 ||
                 rg_redis_pipe_add(p, "GET %s", zkey) < 0 || rg_redis_pipe_run(p, rs) < 0;
    rg_redis_pipe_free(p);
    *hvals = rs[0];
    *regz = rs[1];
    if (failed || !*hvals || (*hvals)->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(*hvals);
        freeReplyObject(*regz);
        *hvals = *regz = NULL;
        return RG_EUNAVAIL;
    }
    return 0;
}

static int ref_cmp(const void *a, const void *b)
{
    return strcmp(((const reg_entry *)a)->ref, ((const reg_entry *)b)->ref);
}

/*
 * A page's entries. A parked page (its compact value) is unpacked and
 * written back as a hash and a zset (the commit drops the compact value),
 * so the first load after a restore costs one more round trip, and only it.
 */
static int redis_load(reg_store *s, const char *page, reg_entry **out, size_t *n)
{
    struct redis_store *r = (struct redis_store *)s;
    *out = NULL;
    *n = 0;
    redisReply *rep, *regz;
    int rc = fetch(r, page, &rep, &regz);
    if (rc < 0)
        return rc;
    int parked = regz && regz->type == REDIS_REPLY_STRING;
    size_t nz = parked ? compact_count(regz->str, regz->len) : 0;
    reg_entry *v = calloc(rep->elements + nz + 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < rep->elements; i++) {
        redisReply *el = rep->element[i];
        if (el->type == REDIS_REPLY_STRING && unpack_entry(el->str, el->len, &v[k]) == 0)
            k++;
        else
            reg_entry_destroy(&v[k]); /* a value we cannot read is skipped */
    }
    freeReplyObject(rep);
    if (v && parked) {
        /* Hash entries (newer) win over the compact ones with the same ref. */
        qsort(v, k, sizeof *v, ref_cmp);
        size_t hashed = k, got = unpack_compact(regz->str, regz->len, v + k);
        for (size_t i = hashed; i < hashed + got; i++) {
            if (hashed && bsearch(&v[i], v, hashed, sizeof *v, ref_cmp))
                reg_entry_destroy(&v[i]);
            else
                v[k++] = v[i];
        }
        /* Thaw: no cleanup here, the observation's own commit does it. */
        rc = redis_commit_fenced(s, page, v + hashed, k - hashed, rg_wall_ms(), INT64_MAX / 4,
                                 SIZE_MAX / 4, NULL, NULL);
    }
    freeReplyObject(regz);
    if (!v)
        return RG_ENOMEM;
    if (rc < 0) {
        reg_entries_free(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

static int redis_park_fenced(reg_store *s, const char *page, int64_t ttl_ms, const reg_fence *f)
{
    struct redis_store *r = (struct redis_store *)s;
    reg_entry *v;
    size_t n;
    int rc = redis_load(s, page, &v, &n);
    if (rc < 0)
        return rc;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_compact(&sb, v, n);
    reg_entries_free(v, n);
    char reg_key[512], seen_key[512], regz_key[512], ttl[24];
    key_of(reg_key, sizeof reg_key, page, "reg");
    key_of(seen_key, sizeof seen_key, page, "seen");
    key_of(regz_key, sizeof regz_key, page, "regz");
    snprintf(ttl, sizeof ttl, "%lld", (long long)(ttl_ms > 0 ? ttl_ms : r->ttl_ms));
    char token[24] = "";
    if (f)
        snprintf(token, sizeof token, "%lld", (long long)*f->token);
    const char *args[] = {reg_key, seen_key, regz_key, f ? f->key : "", sb.data ? sb.data : "",
                          ttl, token};
    size_t lens[] = {strlen(reg_key), strlen(seen_key), strlen(regz_key), strlen(args[3]),
                     sb.size, strlen(ttl), strlen(token)};
    /* Unfenced: the fence key is left out (its arguments after it shift down). */
    const char *nf_args[] = {reg_key, seen_key, regz_key, args[4], ttl, token};
    size_t nf_lens[] = {lens[0], lens[1], lens[2], lens[4], lens[5], lens[6]};
    redisReply *rep = f ? rg_redis_eval(r->redis, &park_script, 4, 3, args, lens)
                        : rg_redis_eval(r->redis, &park_script, 3, 3, nf_args, nf_lens);
    rc = !rep || rep->type != REDIS_REPLY_INTEGER ? RG_EUNAVAIL
         : rep->integer < 0                       ? RG_ECONFLICT
                                                  : 0;
    freeReplyObject(rep);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

static int redis_park(reg_store *s, const char *page, int64_t ttl_ms)
{
    return redis_park_fenced(s, page, ttl_ms, NULL);
}

static int redis_commit_fenced(reg_store *s, const char *page, const reg_entry *v, size_t n,
                               int64_t now_ms, int64_t stale_ms, size_t max,
                               reg_removed *removed, const reg_fence *f)
{
    struct redis_store *r = (struct redis_store *)s;
    if (removed)
        *removed = (reg_removed){0};
    char reg_key[512], seen_key[512], regz_key[512];
    key_of(reg_key, sizeof reg_key, page, "reg");
    key_of(seen_key, sizeof seen_key, page, "seen");
    key_of(regz_key, sizeof regz_key, page, "regz");
    /* keys: reg seen regz [fence]; args: now stale max ttl token, then (ref seen blob) per
       entry */
    size_t argc = 9 + 3 * n;
    const char **argv = calloc(argc, sizeof *argv);
    size_t *argl = calloc(argc, sizeof *argl);
    char (*nums)[24] = calloc(5 + n, 24);
    msgpack_sbuffer *blobs = calloc(n ? n : 1, sizeof *blobs);
    int rc = RG_ENOMEM;
    redisReply *rep = NULL;
    if (!argv || !argl || !nums || !blobs)
        goto out;
    size_t a = 0;
    argv[a++] = reg_key;
    argv[a++] = seen_key;
    argv[a++] = regz_key;
    if (f)
        argv[a++] = f->key;
    int nkeys = (int)a;
    snprintf(nums[0], 24, "%lld", (long long)now_ms);
    snprintf(nums[1], 24, "%lld", (long long)stale_ms);
    snprintf(nums[2], 24, "%zu", max);
    snprintf(nums[3], 24, "%lld", (long long)r->ttl_ms);
    if (f)
        snprintf(nums[4], 24, "%lld", (long long)*f->token);
    for (int i = 0; i < 5; i++)
        argv[a++] = nums[i];
    for (size_t i = 0; i < n; i++) {
        msgpack_sbuffer_init(&blobs[i]);
        if (!v[i].drop)
            pack_entry(&blobs[i], &v[i]); /* never empty: a map */
        snprintf(nums[5 + i], 24, "%lld", (long long)v[i].last_seen_ms);
        argv[a++] = v[i].ref;
        argv[a++] = nums[5 + i];
        argl[a] = blobs[i].size;
        argv[a++] = blobs[i].data ? blobs[i].data : "";
    }
    for (size_t i = 0; i < a; i++)
        if (!argl[i])
            argl[i] = strlen(argv[i]);
    rc = RG_EUNAVAIL;
    rep = rg_redis_eval(r->redis, &commit_script, nkeys, (int)a - nkeys, argv, argl);
    if (rep && rep->type == REDIS_REPLY_INTEGER && rep->integer < 0) {
        rc = RG_ECONFLICT; /* fenced off: another worker claimed the session */
    } else if (rep && rep->type == REDIS_REPLY_ARRAY) {
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
    char reg_key[512], seen_key[512], regz_key[512];
    key_of(reg_key, sizeof reg_key, page, "reg");
    key_of(seen_key, sizeof seen_key, page, "seen");
    key_of(regz_key, sizeof regz_key, page, "regz");
    redisReply *rep = rg_redis_command(r->redis, "DEL %s %s %s", reg_key, seen_key, regz_key);
    int rc = rep && rep->type == REDIS_REPLY_INTEGER ? 0 : RG_EUNAVAIL;
    freeReplyObject(rep);
    return rc;
}

static int redis_commit(reg_store *s, const char *page, const reg_entry *v, size_t n,
                        int64_t now_ms, int64_t stale_ms, size_t max, reg_removed *removed)
{
    return redis_commit_fenced(s, page, v, n, now_ms, stale_ms, max, removed, NULL);
}

static void redis_destroy(reg_store *s)
{
    struct redis_store *r = (struct redis_store *)s;
    if (r->own_redis)
        rg_redis_free(r->redis);
    free(r);
}

static const reg_store_ops redis_ops = {redis_load,   redis_commit,        redis_drop,
                                        redis_park,   redis_destroy,       redis_commit_fenced,
                                        redis_park_fenced};

void reg_redis_config_default(reg_redis_config *cfg)
{
    rg_redis_config rc;
    rg_redis_config_default(&rc);
    cfg->url = rc.url;
    cfg->connect_timeout_ms = rc.connect_timeout_ms;
    cfg->command_timeout_ms = rc.command_timeout_ms;
    cfg->ttl_ms = 24LL * 3600 * 1000;
    cfg->conn = NULL;
}

void reg_redis_config_from_env(reg_redis_config *cfg)
{
    rg_redis_config rc = {cfg->url, cfg->connect_timeout_ms, cfg->command_timeout_ms};
    rg_redis_config_from_env(&rc);
    cfg->url = rc.url;
    cfg->command_timeout_ms = rc.command_timeout_ms;
}

reg_store *reg_store_redis_new(const reg_redis_config *cfg, char *err, size_t errlen)
{
    struct redis_store *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->base.ops = &redis_ops;
    r->ttl_ms = cfg->ttl_ms;
    if (cfg->conn) {
        r->redis = cfg->conn;
    } else {
        rg_redis_config rc = {cfg->url, cfg->connect_timeout_ms, cfg->command_timeout_ms};
        if (rg_redis_new(&rc, &r->redis, err, errlen) < 0) {
            free(r);
            return NULL;
        }
        r->own_redis = 1;
    }
    /* Check the server now, and load the script: a wrong address or password
       is a clear error at start rather than at the first observation. */
    const char *none[] = {"rg:{probe}:reg", "rg:{probe}:seen", "rg:{probe}:regz", "0", "0",
                          "0",              "0",               ""};
    redisReply *rep = rg_redis_eval(r->redis, &commit_script, 3, 5, none, NULL);
    int ok = rep && rep->type == REDIS_REPLY_ARRAY;
    freeReplyObject(rep);
    if (!rep) {
        snprintf(err, errlen, "cannot reach Redis at %s (or it refused the password)",
                 rg_redis_where(r->redis));
        redis_destroy(&r->base);
        return NULL;
    }
    if (!ok) {
        snprintf(err, errlen, "Redis at %s refused the registry's script",
                 rg_redis_where(r->redis));
        redis_destroy(&r->base);
        return NULL;
    }
    return &r->base;
}
