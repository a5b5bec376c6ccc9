/*
 * tenant.c - the tenant struct, its validation, API keys (generation and
 * hashing) and the Redis operations on tenants and keys. The data model is in
 * tenant.h. Writes that touch several keys are Lua scripts, so each is atomic.
 * No API key in clear is ever logged or stored.
 */
#define _GNU_SOURCE
#include "tenant/tenant_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#define MOD "tenant"
#define KEY_PREFIX "rgk_"
#define KEY_RANDOM_CHARS (TENANT_KEY_LEN - 4)
#define REDIS_KEY_MAX 128 /* TENANT_PREFIX "tenant:" + a name + ":keys", or "key:" + a digest */
#define DELETE_ROUNDS 5   /* a delete raced by key creations tries again this often */

/* ---- the struct ---------------------------------------------------------- */

void tenant_init(tenant *t)
{
    memset(t, 0, sizeof *t);
    t->max_sessions = TENANT_DEFAULT_MAX_SESSIONS;
    t->max_concurrent = TENANT_DEFAULT_MAX_CONCURRENT;
    t->rate = TENANT_DEFAULT_RATE;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void tenant_destroy(tenant *t)
{
    free_list(t->allow_hosts, t->n_allow);
    free_list(t->deny_hosts, t->n_deny);
    free(t->user_agent);
    free(t->locale);
    tenant_init(t);
}

int tenant_add_host(tenant *t, int deny, const char *host)
{
    char ***list = deny ? &t->deny_hosts : &t->allow_hosts;
    size_t *n = deny ? &t->n_deny : &t->n_allow;
    char *copy = strdup(host);
    char **grown = copy ? realloc(*list, (*n + 1) * sizeof **list) : NULL;
    if (!grown) {
        free(copy);
        return RG_ENOMEM;
    }
    grown[(*n)++] = copy;
    *list = grown;
    return 0;
}

void tenant_clear_hosts(tenant *t, int deny)
{
    if (deny) {
        free_list(t->deny_hosts, t->n_deny);
        t->deny_hosts = NULL;
        t->n_deny = 0;
    } else {
        free_list(t->allow_hosts, t->n_allow);
        t->allow_hosts = NULL;
        t->n_allow = 0;
    }
}

int tenant_set_str(char **field, const char *s)
{
    char *copy = NULL;
    if (s && *s && !(copy = strdup(s)))
        return RG_ENOMEM;
    free(*field);
    *field = copy;
    return 0;
}

int tenant_copy(tenant *dst, const tenant *src)
{
    *dst = *src;
    dst->allow_hosts = dst->deny_hosts = NULL;
    dst->n_allow = dst->n_deny = 0;
    dst->user_agent = dst->locale = NULL;
    int rc = tenant_set_str(&dst->user_agent, src->user_agent);
    if (!rc)
        rc = tenant_set_str(&dst->locale, src->locale);
    for (size_t i = 0; !rc && i < src->n_allow; i++)
        rc = tenant_add_host(dst, 0, src->allow_hosts[i]);
    for (size_t i = 0; !rc && i < src->n_deny; i++)
        rc = tenant_add_host(dst, 1, src->deny_hosts[i]);
    if (rc)
        tenant_destroy(dst);
    return rc;
}

/* ---- validation ---------------------------------------------------------- */

int tenant_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > TENANT_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

/* Host patterns: names, wildcards, IPv4/IPv6 addresses and CIDR ranges. */
static int host_valid(const char *h)
{
    size_t n = strlen(h);
    if (n == 0 || n > TENANT_HOST_MAX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = h[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              strchr(".-_*:[]/", ch)))
            return 0;
    }
    return 1;
}

static int hosts_valid(char **v, size_t n, const char *which, char *err, size_t errlen)
{
    if (n > TENANT_HOSTS_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "at most %d %s hosts are allowed", TENANT_HOSTS_MAX,
                       which);
    for (size_t i = 0; i < n; i++)
        if (!v[i] || !host_valid(v[i]))
            return rg_errf(err, errlen, RG_EBADREQ,
                           "%s host \"%.64s\" is not a host pattern (1 to %d of letters, digits "
                           "and . - _ * : [ ] /)",
                           which, v[i] ? v[i] : "", TENANT_HOST_MAX_LEN);
    return 0;
}

static int text_valid(const char *s, size_t max, int locale)
{
    size_t n = strlen(s);
    if (n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            return 0;
        if (locale && !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                        (ch >= '0' && ch <= '9') || ch == '-' || ch == '_'))
            return 0;
    }
    return 1;
}

int tenant_validate(const tenant *t, char *err, size_t errlen)
{
    if (!tenant_name_valid(t->name))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "a tenant name is 1 to %d characters of a-z, 0-9, '_' and '-'",
                       TENANT_NAME_MAX);
    if (t->max_sessions < 0 || t->max_sessions > TENANT_LIMIT_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "max_sessions must be between 0 and %d",
                       TENANT_LIMIT_MAX);
    if (t->max_concurrent < 0 || t->max_concurrent > TENANT_LIMIT_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "max_concurrent must be between 0 and %d",
                       TENANT_LIMIT_MAX);
    if (!isfinite(t->rate) || t->rate <= 0 || t->rate > TENANT_RATE_MAX)
        return rg_errf(err, errlen, RG_EBADREQ,
                       "rate must be above 0 and at most %.0f requests per second",
                       TENANT_RATE_MAX);
    if ((t->allow_private != 0 && t->allow_private != 1) ||
        (t->allow_eval != 0 && t->allow_eval != 1) ||
        (t->allow_downloads != 0 && t->allow_downloads != 1))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "allow_private, allow_eval and allow_downloads are 0 or 1");
    int rc = hosts_valid(t->allow_hosts, t->n_allow, "allowed", err, errlen);
    if (!rc)
        rc = hosts_valid(t->deny_hosts, t->n_deny, "denied", err, errlen);
    if (rc)
        return rc;
    if (t->user_agent && !text_valid(t->user_agent, TENANT_UA_MAX_LEN, 0))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "the user agent is at most %d characters without control "
                       "characters",
                       TENANT_UA_MAX_LEN);
    if (t->locale && !text_valid(t->locale, TENANT_LOCALE_MAX_LEN, 1))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "a locale is a language tag such as en-US (at most %d "
                       "characters)",
                       TENANT_LOCALE_MAX_LEN);
    return 0;
}

/* ---- keys ---------------------------------------------------------------- */

void tenant_key_hash(const char *api_key, char out[TENANT_HASH_SIZE])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(api_key, strlen(api_key), md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        abort(); /* SHA-256 of a small buffer cannot fail short of a broken libcrypto */
    for (unsigned int i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

static int fill_random(unsigned char *p, size_t n)
{
    while (n) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            rg_log(RG_LOG_ERROR, MOD, "getrandom: %s", strerror(errno));
            return RG_EINTERNAL;
        }
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* "rgk_" + 40 of [A-Za-z0-9]; bytes >= 248 are dropped so that each
   character is uniform (248 = 4 * 62). */
static int random_key(char *out, size_t len)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    if (len < TENANT_KEY_SIZE)
        return RG_EINTERNAL;
    memcpy(out, KEY_PREFIX, 4);
    size_t n = 4;
    unsigned char buf[64];
    while (n < TENANT_KEY_LEN) {
        if (fill_random(buf, sizeof buf) < 0)
            return RG_EINTERNAL;
        for (size_t i = 0; i < sizeof buf && n < TENANT_KEY_LEN; i++)
            if (buf[i] < 248)
                out[n++] = alphabet[buf[i] % 62];
    }
    out[n] = '\0';
    explicit_bzero(buf, sizeof buf);
    return 0;
}

static int is_hex_digest(const char *s)
{
    if (strlen(s) != 64)
        return 0;
    for (size_t i = 0; i < 64; i++)
        if (!strchr("0123456789abcdefABCDEF", s[i]))
            return 0;
    return 1;
}

/* ---- Redis plumbing ------------------------------------------------------ */

static void tenant_key(char *out, const char *tid, const char *suffix)
{
    snprintf(out, REDIS_KEY_MAX, TENANT_PREFIX "tenant:%s%s", tid, suffix);
}

static void key_key(char *out, const char *hash)
{
    snprintf(out, REDIS_KEY_MAX, TENANT_PREFIX "key:%s", hash);
}

/* Runs a script whose reply is an integer, into *out. RG_EUNAVAIL when Redis
   cannot be reached, times out or answers with an error (logged). */
static int run_script(rg_redis *r, rg_redis_script *s, int nkeys, int nargs,
                      const char *const *args, long long *out, const char *what)
{
    redisReply *rep = rg_redis_eval(r, s, nkeys, nargs, args, NULL);
    int rc = RG_EUNAVAIL;
    if (rep && rep->type == REDIS_REPLY_INTEGER) {
        *out = rep->integer;
        rc = 0;
    } else if (rep) {
        rg_log(RG_LOG_WARN, MOD, "%s: Redis at %s answered: %s", what, rg_redis_where(r),
               rep->type == REDIS_REPLY_ERROR ? rep->str : "an unexpected reply type");
    }
    freeReplyObject(rep);
    return rc;
}

/* One command given as argv; the reply is the caller's (NULL with *rc set). */
static redisReply *command(rg_redis *r, int argc, const char **argv, int *rc)
{
    *rc = RG_EUNAVAIL;
    redisReply *rep = rg_redis_argv(r, argc, argv, NULL);
    if (rep && rep->type == REDIS_REPLY_ERROR) {
        rg_log(RG_LOG_WARN, MOD, "%s: Redis at %s answered: %s", argv[0], rg_redis_where(r),
               rep->str);
        freeReplyObject(rep);
        return NULL;
    }
    if (rep)
        *rc = 0;
    return rep;
}

/* ---- field encoding ------------------------------------------------------ */

enum { FIELD_ARGS_MAX = 32 };

/* The hash fields of a tenant as HSET arguments (field, value, ...). */
struct fields {
    char created[24], max_sessions[16], max_concurrent[16], rate[40];
    rg_buf allow, deny;
    const char *argv[FIELD_ARGS_MAX];
    int n;
};

static void put(struct fields *f, const char *name, const char *value)
{
    f->argv[f->n++] = name;
    f->argv[f->n++] = value;
}

static int hosts_json(rg_buf *b, char **v, size_t n)
{
    rg_buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            rg_buf_puts(b, ",");
        rg_buf_json_str(b, v[i], strlen(v[i]));
    }
    rg_buf_puts(b, "]");
    return b->failed ? RG_ENOMEM : 0;
}

/* The shortest text that reads back as the same double. */
static void format_rate(char *out, size_t len, double v)
{
    snprintf(out, len, "%.15g", v);
    if (strtod(out, NULL) != v)
        snprintf(out, len, "%.17g", v);
}

/* identity: also name and created (at creation). */
static int fields_build(struct fields *f, const tenant *t, int identity)
{
    memset(f, 0, sizeof *f);
    rg_buf_init(&f->allow);
    rg_buf_init(&f->deny);
    if (hosts_json(&f->allow, t->allow_hosts, t->n_allow) < 0 ||
        hosts_json(&f->deny, t->deny_hosts, t->n_deny) < 0)
        return RG_ENOMEM;
    snprintf(f->created, sizeof f->created, "%lld", (long long)t->created_ms);
    snprintf(f->max_sessions, sizeof f->max_sessions, "%d", t->max_sessions);
    snprintf(f->max_concurrent, sizeof f->max_concurrent, "%d", t->max_concurrent);
    format_rate(f->rate, sizeof f->rate, t->rate);
    if (identity) {
        put(f, "name", t->name);
        put(f, "created", f->created);
    }
    put(f, "max_sessions", f->max_sessions);
    put(f, "max_concurrent", f->max_concurrent);
    put(f, "rate", f->rate);
    put(f, "allow_private", t->allow_private ? "1" : "0");
    put(f, "allow_eval", t->allow_eval ? "1" : "0");
    put(f, "allow_downloads", t->allow_downloads ? "1" : "0");
    put(f, "allow_hosts", f->allow.data);
    put(f, "deny_hosts", f->deny.data);
    put(f, "user_agent", t->user_agent ? t->user_agent : "");
    put(f, "locale", t->locale ? t->locale : "");
    return 0;
}

static void fields_destroy(struct fields *f)
{
    rg_buf_destroy(&f->allow);
    rg_buf_destroy(&f->deny);
}

/* ---- field decoding ------------------------------------------------------ */

static int parse_ll(const char *s, long long min, long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_hosts(tenant *t, int deny, const char *json)
{
    cJSON *a = cJSON_Parse(json);
    int rc = cJSON_IsArray(a) ? 0 : -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        if (rc == 0 && cJSON_IsString(it))
            rc = tenant_add_host(t, deny, it->valuestring);
    }
    cJSON_Delete(a);
    return rc;
}

/* One stored field into t. A value it cannot read keeps the default (logged). */
static int set_field(tenant *t, const char *name, const char *v)
{
    long long n = 0;
    int rc = 0;
    if (!strcmp(name, "name")) {
        rg_strlcpy(t->name, v, sizeof t->name);
    } else if (!strcmp(name, "created")) {
        rc = parse_ll(v, 0, INT64_MAX, &n);
        t->created_ms = rc ? 0 : n;
    } else if (!strcmp(name, "max_sessions")) {
        if (!(rc = parse_ll(v, 0, TENANT_LIMIT_MAX, &n)))
            t->max_sessions = (int)n;
    } else if (!strcmp(name, "max_concurrent")) {
        if (!(rc = parse_ll(v, 0, TENANT_LIMIT_MAX, &n)))
            t->max_concurrent = (int)n;
    } else if (!strcmp(name, "rate")) {
        char *end = NULL;
        double d = strtod(v, &end);
        rc = end == v || *end || !isfinite(d) || d <= 0 ? -1 : 0;
        if (!rc)
            t->rate = d;
    } else if (!strcmp(name, "allow_private") || !strcmp(name, "allow_eval") ||
               !strcmp(name, "allow_downloads")) {
        int *flag = !strcmp(name, "allow_private") ? &t->allow_private
                    : !strcmp(name, "allow_eval")  ? &t->allow_eval
                                                   : &t->allow_downloads;
        rc = parse_ll(v, 0, 1, &n);
        *flag = rc ? 0 : (int)n;
    } else if (!strcmp(name, "allow_hosts") || !strcmp(name, "deny_hosts")) {
        int deny = name[0] == 'd';
        tenant_clear_hosts(t, deny);
        rc = parse_hosts(t, deny, v);
    } else if (!strcmp(name, "user_agent")) {
        rc = tenant_set_str(&t->user_agent, v);
    } else if (!strcmp(name, "locale")) {
        rc = tenant_set_str(&t->locale, v);
    } /* other fields: written by a newer version, ignored */
    if (rc == RG_ENOMEM)
        return rc;
    if (rc)
        rg_log(RG_LOG_WARN, MOD, "tenant %s: stored %s is unreadable; using the default", t->id,
               name);
    return 0;
}

/* ---- operations ---------------------------------------------------------- */

static rg_redis_script create_script = {
    .src = "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
           "if redis.call('EXISTS', KEYS[3]) == 1 then return -1 end\n"
           "redis.call('HSET', KEYS[1], unpack(ARGV, 3))\n"
           "redis.call('SADD', KEYS[2], ARGV[2])\n"
           "redis.call('SET', KEYS[3], ARGV[1])\n"
           "redis.call('SADD', KEYS[4], ARGV[1])\n"
           "return 1\n",
};

int tenant_create(rg_redis *r, const tenant *spec, char *key_out, size_t key_len, char *err,
                  size_t errlen)
{
    if (key_out && key_len)
        key_out[0] = '\0';
    int rc = tenant_validate(spec, err, errlen);
    if (rc)
        return rc;
    char key[TENANT_KEY_SIZE], hash[TENANT_HASH_SIZE];
    if (!key_out || key_len < TENANT_KEY_SIZE || random_key(key, sizeof key) < 0)
        return RG_EINTERNAL;
    tenant_key_hash(key, hash);
    tenant t = *spec; /* borrowed fields: only read while building the arguments */
    t.created_ms = rg_wall_ms();
    struct fields f;
    rc = fields_build(&f, &t, 1);
    char hk[REDIS_KEY_MAX], sk[REDIS_KEY_MAX], kk[REDIS_KEY_MAX];
    tenant_key(hk, spec->name, "");
    tenant_key(sk, spec->name, ":keys");
    key_key(kk, hash);
    const char *args[4 + 2 + FIELD_ARGS_MAX] = {hk, sk, kk, TENANT_ALL_KEY, spec->name, hash};
    long long res = 0;
    if (!rc) {
        memcpy(args + 6, f.argv, (size_t)f.n * sizeof *args);
        rc = run_script(r, &create_script, 4, 2 + f.n, args, &res, "tenant create");
    }
    fields_destroy(&f);
    if (!rc && res == 0) {
        if (err && errlen)
            snprintf(err, errlen, "a tenant named %s exists already", spec->name);
        rc = RG_ECONFLICT;
    } else if (!rc && res != 1) {
        rc = RG_EINTERNAL; /* the new key's digest exists: 2^-238, or a bug */
    }
    if (!rc) {
        rg_strlcpy(key_out, key, key_len);
        rg_log(RG_LOG_INFO, MOD, "tenant %s created with key %.8s...", spec->name, hash);
    }
    explicit_bzero(key, sizeof key);
    return rc;
}

int tenant_get(rg_redis *r, const char *tid, tenant *out)
{
    tenant_init(out);
    if (!tenant_name_valid(tid))
        return RG_ENOTFOUND;
    rg_strlcpy(out->id, tid, sizeof out->id);
    rg_strlcpy(out->name, tid, sizeof out->name);
    char hk[REDIS_KEY_MAX];
    tenant_key(hk, tid, "");
    const char *argv[] = {"HGETALL", hk};
    int rc;
    redisReply *rep = command(r, 2, argv, &rc);
    if (!rep)
        return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements % 2)
        rc = RG_EUNAVAIL;
    else if (rep->elements == 0)
        rc = RG_ENOTFOUND;
    for (size_t i = 0; !rc && i < rep->elements; i += 2) {
        redisReply *k = rep->element[i], *v = rep->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING)
            rc = set_field(out, k->str, v->str);
    }
    freeReplyObject(rep);
    return rc;
}

static rg_redis_script update_script = {
    .src = "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
           "redis.call('HSET', KEYS[1], unpack(ARGV))\n"
           "return 1\n",
};

int tenant_update(rg_redis *r, const tenant *t, char *err, size_t errlen)
{
    if (!tenant_name_valid(t->id))
        return RG_ENOTFOUND;
    tenant named = *t; /* the name is the id: validate the fields under it */
    rg_strlcpy(named.name, t->id, sizeof named.name);
    int rc = tenant_validate(&named, err, errlen);
    if (rc)
        return rc;
    struct fields f;
    rc = fields_build(&f, t, 0);
    char hk[REDIS_KEY_MAX];
    tenant_key(hk, t->id, "");
    const char *args[1 + FIELD_ARGS_MAX] = {hk};
    long long res = 0;
    if (!rc) {
        memcpy(args + 1, f.argv, (size_t)f.n * sizeof *args);
        rc = run_script(r, &update_script, 1, f.n, args, &res, "tenant update");
    }
    fields_destroy(&f);
    return rc ? rc : res == 1 ? 0 : RG_ENOTFOUND;
}

/*
 * KEYS tenant keys all key...; ARGV tid digest... The key records are
 * declared (a script touches only the keys it is given), read from the set
 * just before: -2 when the set changed meanwhile (the caller reads it again).
 * A key whose string no longer names this tenant belongs to someone else:
 * keep it.
 */
static rg_redis_script delete_script = {
    .src = "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
           "if redis.call('SCARD', KEYS[2]) ~= #ARGV - 1 then return -2 end\n"
           "for i = 2, #ARGV do\n"
           "  if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 0 then return -2 end\n"
           "end\n"
           "for i = 4, #KEYS do\n"
           "  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end\n"
           "end\n"
           "redis.call('DEL', KEYS[1], KEYS[2])\n"
           "redis.call('SREM', KEYS[3], ARGV[1])\n"
           "return 1\n",
};

/* One try at deleting tid: the script's answer in *res. */
static int delete_once(rg_redis *r, const char *tid, long long *res)
{
    char hk[REDIS_KEY_MAX], sk[REDIS_KEY_MAX];
    tenant_key(hk, tid, "");
    tenant_key(sk, tid, ":keys");
    const char *argv[] = {"SMEMBERS", sk};
    int rc;
    redisReply *set = command(r, 2, argv, &rc);
    if (!set)
        return rc;
    size_t n = set->type == REDIS_REPLY_ARRAY ? set->elements : 0;
    const char **args = calloc(4 + 2 * n, sizeof *args);
    char(*kks)[REDIS_KEY_MAX] = calloc(n ? n : 1, sizeof *kks);
    rc = args && kks ? 0 : RG_ENOMEM;
    size_t nk = 3;
    if (!rc) {
        args[0] = hk;
        args[1] = sk;
        args[2] = TENANT_ALL_KEY;
        for (size_t i = 0; i < n; i++) {
            const redisReply *e = set->element[i];
            if (e->type != REDIS_REPLY_STRING || !is_hex_digest(e->str))
                continue; /* not ours: the count check below refuses */
            key_key(kks[i], e->str);
            args[nk++] = kks[i];
        }
        size_t na = 0;
        args[nk + na++] = tid;
        for (size_t i = 0; i < n; i++)
            if (set->element[i]->type == REDIS_REPLY_STRING && is_hex_digest(set->element[i]->str))
                args[nk + na++] = set->element[i]->str;
        rc = run_script(r, &delete_script, (int)nk, (int)na, args, res, "tenant delete");
    }
    free(args);
    free(kks);
    freeReplyObject(set);
    return rc;
}

int tenant_delete(rg_redis *r, const char *tid)
{
    if (!tenant_name_valid(tid))
        return RG_ENOTFOUND;
    long long res = -2;
    int rc = 0;
    for (int round = 0; !rc && res == -2 && round < DELETE_ROUNDS; round++)
        rc = delete_once(r, tid, &res);
    if (!rc && res == -2)
        rc = RG_EUNAVAIL; /* keys kept being made for it: try again */
    if (!rc && res == 1)
        rg_log(RG_LOG_INFO, MOD, "tenant %s deleted", tid);
    return rc ? rc : res == 1 ? 0 : RG_ENOTFOUND;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tenant_list_free(char **tids, size_t n)
{
    free_list(tids, n);
}

int tenant_list(rg_redis *r, char ***tids, size_t *n)
{
    *tids = NULL;
    *n = 0;
    const char *argv[] = {"SMEMBERS", TENANT_ALL_KEY};
    int rc;
    redisReply *rep = command(r, 2, argv, &rc);
    if (!rep)
        return rc;
    if (rep->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(rep);
        return RG_EUNAVAIL;
    }
    char **v = rep->elements ? calloc(rep->elements, sizeof *v) : NULL;
    size_t k = 0;
    if (rep->elements && !v)
        rc = RG_ENOMEM;
    for (size_t i = 0; !rc && i < rep->elements; i++) {
        if (rep->element[i]->type != REDIS_REPLY_STRING)
            continue;
        if (!(v[k] = strdup(rep->element[i]->str)))
            rc = RG_ENOMEM;
        else
            k++;
    }
    freeReplyObject(rep);
    if (rc) {
        free_list(v, k);
        return rc;
    }
    if (k)
        qsort(v, k, sizeof *v, cmp_str);
    else {
        free(v);
        v = NULL;
    }
    *tids = v;
    *n = k;
    return 0;
}

static rg_redis_script key_create_script = {
    .src = "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
           "if not redis.call('SET', KEYS[3], ARGV[1], 'NX') then return -1 end\n"
           "redis.call('SADD', KEYS[2], ARGV[2])\n"
           "return 1\n",
};

int tenant_key_create(rg_redis *r, const char *tid, char *key_out, size_t key_len)
{
    if (key_out && key_len)
        key_out[0] = '\0';
    if (!tenant_name_valid(tid))
        return RG_ENOTFOUND;
    char key[TENANT_KEY_SIZE], hash[TENANT_HASH_SIZE];
    if (!key_out || key_len < TENANT_KEY_SIZE || random_key(key, sizeof key) < 0)
        return RG_EINTERNAL;
    tenant_key_hash(key, hash);
    char hk[REDIS_KEY_MAX], sk[REDIS_KEY_MAX], kk[REDIS_KEY_MAX];
    tenant_key(hk, tid, "");
    tenant_key(sk, tid, ":keys");
    key_key(kk, hash);
    const char *args[] = {hk, sk, kk, tid, hash};
    long long res = 0;
    int rc = run_script(r, &key_create_script, 3, 2, args, &res, "key create");
    if (!rc && res == 0)
        rc = RG_ENOTFOUND;
    else if (!rc && res != 1)
        rc = RG_EINTERNAL;
    if (!rc) {
        rg_strlcpy(key_out, key, key_len);
        rg_log(RG_LOG_INFO, MOD, "tenant %s: key %.8s... created", tid, hash);
    }
    explicit_bzero(key, sizeof key);
    return rc;
}

static rg_redis_script key_count_script = {
    .src = "if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end\n"
           "return redis.call('SCARD', KEYS[2])\n",
};

int tenant_key_count(rg_redis *r, const char *tid, size_t *n)
{
    *n = 0;
    if (!tenant_name_valid(tid))
        return RG_ENOTFOUND;
    char hk[REDIS_KEY_MAX], sk[REDIS_KEY_MAX];
    tenant_key(hk, tid, "");
    tenant_key(sk, tid, ":keys");
    const char *args[] = {hk, sk};
    long long res = 0;
    int rc = run_script(r, &key_count_script, 2, 0, args, &res, "key count");
    if (!rc && res < 0)
        rc = RG_ENOTFOUND;
    if (!rc)
        *n = (size_t)res;
    return rc;
}

/* KEYS key keys; ARGV digest tid: tid is the owner read just before; -2 when
   the key changed hands meanwhile (the caller reads it again). */
static rg_redis_script revoke_script = {
    .src = "local tid = redis.call('GET', KEYS[1])\n"
           "if not tid then return 0 end\n"
           "if tid ~= ARGV[2] then return -2 end\n"
           "redis.call('DEL', KEYS[1])\n"
           "redis.call('SREM', KEYS[2], ARGV[1])\n"
           "return 1\n",
};

int tenant_key_revoke(rg_redis *r, const char *key_or_hash)
{
    char hash[TENANT_HASH_SIZE];
    if (!key_or_hash || !*key_or_hash)
        return RG_ENOTFOUND;
    if (is_hex_digest(key_or_hash)) {
        for (size_t i = 0; i < 64; i++) {
            char ch = key_or_hash[i];
            hash[i] = ch >= 'A' && ch <= 'F' ? (char)(ch - 'A' + 'a') : ch;
        }
        hash[64] = '\0';
    } else {
        tenant_key_hash(key_or_hash, hash);
    }
    char kk[REDIS_KEY_MAX], sk[REDIS_KEY_MAX];
    key_key(kk, hash);
    long long res = -2;
    int rc = 0;
    for (int round = 0; !rc && res == -2 && round < DELETE_ROUNDS; round++) {
        char tid[TENANT_NAME_MAX + 1];
        rc = tenant_key_owner(r, hash, tid);
        if (rc == RG_ENOTFOUND || (!rc && !tenant_name_valid(tid))) {
            rc = 0;
            res = 0;
            break;
        }
        if (rc)
            break;
        tenant_key(sk, tid, ":keys");
        const char *args[] = {kk, sk, hash, tid};
        rc = run_script(r, &revoke_script, 2, 2, args, &res, "key revoke");
    }
    if (!rc && res == -2)
        rc = RG_EUNAVAIL;
    if (!rc && res == 1)
        rg_log(RG_LOG_INFO, MOD, "key %.8s... revoked", hash);
    return rc ? rc : res == 1 ? 0 : RG_ENOTFOUND;
}

int tenant_key_owner(rg_redis *r, const char *hash, char tid[TENANT_NAME_MAX + 1])
{
    char kk[REDIS_KEY_MAX];
    key_key(kk, hash);
    const char *argv[] = {"GET", kk};
    int rc;
    redisReply *rep = command(r, 2, argv, &rc);
    if (!rep)
        return rc;
    if (rep->type == REDIS_REPLY_NIL)
        rc = RG_ENOTFOUND;
    else if (rep->type != REDIS_REPLY_STRING)
        rc = RG_EUNAVAIL;
    else if (!tenant_name_valid(rep->str))
        rc = RG_ENOTFOUND;
    else
        rg_strlcpy(tid, rep->str, TENANT_NAME_MAX + 1);
    freeReplyObject(rep);
    return rc;
}

/* ---- the layout before hash tags ---------------------------------------- */

#define OLD_ALL_KEY "rg:tenants"

/*
 * KEYS tenant keys all key...; ARGV tid nfields field value... digest...
 * Writes one tenant read from the old layout into the new one, keeping
 * whatever the new one holds already (a tenant made or changed since).
 */
static rg_redis_script upgrade_script = {
    .src = "local nf = tonumber(ARGV[2])\n"
           "if nf > 0 and redis.call('EXISTS', KEYS[1]) == 0 then\n"
           "  redis.call('HSET', KEYS[1], unpack(ARGV, 3, 2 + 2 * nf))\n"
           "end\n"
           "for i = 3 + 2 * nf, #ARGV do redis.call('SADD', KEYS[2], ARGV[i]) end\n"
           "for i = 4, #KEYS do redis.call('SET', KEYS[i], ARGV[1], 'NX') end\n"
           "if nf > 0 then redis.call('SADD', KEYS[3], ARGV[1]) end\n"
           "return 1\n",
};

/* Moves tenant tid from the old keys to the new ones, then drops the old. */
static int upgrade_one(rg_redis *r, const char *tid)
{
    char ohk[REDIS_KEY_MAX], osk[REDIS_KEY_MAX], hk[REDIS_KEY_MAX], sk[REDIS_KEY_MAX];
    snprintf(ohk, sizeof ohk, "rg:tenant:%s", tid);
    snprintf(osk, sizeof osk, "rg:tenant:%s:keys", tid);
    tenant_key(hk, tid, "");
    tenant_key(sk, tid, ":keys");
    int rc;
    const char *hget[] = {"HGETALL", ohk};
    redisReply *h = command(r, 2, hget, &rc);
    if (!h)
        return rc;
    const char *sget[] = {"SMEMBERS", osk};
    redisReply *set = command(r, 2, sget, &rc);
    if (!set) {
        freeReplyObject(h);
        return rc;
    }
    size_t nf = h->type == REDIS_REPLY_ARRAY ? h->elements / 2 : 0;
    size_t nd = set->type == REDIS_REPLY_ARRAY ? set->elements : 0;
    const char **args = calloc(3 + nd + 2 + 2 * nf + nd, sizeof *args);
    char(*kks)[REDIS_KEY_MAX] = calloc(nd ? nd : 1, sizeof *kks);
    char nfs[24];
    snprintf(nfs, sizeof nfs, "%zu", nf);
    rc = args && kks ? 0 : RG_ENOMEM;
    if (!rc) {
        size_t nk = 0, na = 0;
        args[nk++] = hk;
        args[nk++] = sk;
        args[nk++] = TENANT_ALL_KEY;
        for (size_t i = 0; i < nd; i++)
            if (set->element[i]->type == REDIS_REPLY_STRING &&
                is_hex_digest(set->element[i]->str)) {
                key_key(kks[i], set->element[i]->str);
                args[nk++] = kks[i];
            }
        const char **a = args + nk;
        a[na++] = tid;
        a[na++] = nfs;
        for (size_t i = 0; i < 2 * nf; i++)
            a[na++] = h->element[i]->type == REDIS_REPLY_STRING ? h->element[i]->str : "";
        for (size_t i = 0; i < nd; i++)
            if (set->element[i]->type == REDIS_REPLY_STRING && is_hex_digest(set->element[i]->str))
                a[na++] = set->element[i]->str;
        long long res;
        rc = run_script(r, &upgrade_script, (int)nk, (int)na, args, &res, "tenant upgrade");
    }
    /* The old keys go one by one (each in its own slot), the listing last,
       so an interrupted upgrade is done again whole next time. */
    for (size_t i = 0; !rc && i < nd; i++) {
        if (set->element[i]->type != REDIS_REPLY_STRING)
            continue;
        char okk[REDIS_KEY_MAX];
        snprintf(okk, sizeof okk, "rg:key:%.64s", set->element[i]->str);
        const char *del[] = {"DEL", okk};
        redisReply *d = command(r, 2, del, &rc);
        freeReplyObject(d);
    }
    const char *del_h[] = {"DEL", ohk}, *del_s[] = {"DEL", osk},
               *srem[] = {"SREM", OLD_ALL_KEY, tid};
    redisReply *d;
    if (!rc && (d = command(r, 2, del_h, &rc)))
        freeReplyObject(d);
    if (!rc && (d = command(r, 2, del_s, &rc)))
        freeReplyObject(d);
    if (!rc && (d = command(r, 3, srem, &rc)))
        freeReplyObject(d);
    free(args);
    free(kks);
    freeReplyObject(h);
    freeReplyObject(set);
    return rc;
}

int tenant_upgrade(rg_redis *r, size_t *moved)
{
    *moved = 0;
    const char *argv[] = {"SMEMBERS", OLD_ALL_KEY};
    int rc;
    redisReply *rep = command(r, 2, argv, &rc);
    if (!rep)
        return rc;
    for (size_t i = 0; !rc && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        if (e->type != REDIS_REPLY_STRING || !tenant_name_valid(e->str))
            continue;
        if (!(rc = upgrade_one(r, e->str)))
            (*moved)++;
    }
    freeReplyObject(rep);
    if (*moved)
        rg_log(RG_LOG_INFO, MOD, "%zu tenant(s) moved to the keys tagged {tenants}", *moved);
    return rc;
}
