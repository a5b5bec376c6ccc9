/*
 * tenant.h - tenants and their API keys in Redis, and a per-process cache of
 * key lookups for the gateway's authentication.
 *
 * Redis data model. Every key shares the hash tag {tenants}, so the whole
 * directory lies in one Redis Cluster slot and each write stays one script
 * that declares every key it touches:
 *
 *   rg:{tenants}:tenant:<tid>       hash    name, created (wall ms), max_sessions,
 *                                   max_concurrent, rate (requests/s, float
 *                                   text), allow_private (0/1), allow_eval
 *                                   (0/1), allow_downloads (0/1), allow_hosts and deny_hosts (JSON
 *                                   arrays of strings), user_agent, locale
 *                                   (empty = none)
 *   rg:{tenants}:tenant:<tid>:keys  set     SHA-256 hex digests of the tenant's keys
 *   rg:{tenants}:key:<sha256 hex>   string  the tid a key belongs to
 *   rg:{tenants}:all                set     every tid
 *
 * (Before the cluster support the same keys had no tag: rg:tenant:<tid>,
 * rg:tenant:<tid>:keys, rg:key:<sha256>, rg:tenants; tenant_upgrade moves
 * them.)
 *
 * The tenant id is the name given at creation: 1 to 63 characters of
 * [a-z0-9_-]. API keys are "rgk_" followed by 40 characters of [A-Za-z0-9]
 * from getrandom(2); they are handed out once and never stored or logged in
 * clear: Redis holds only their SHA-256, and so does the cache.
 *
 * Every write that touches more than one key is one Lua script, so a reader
 * never sees half a tenant. A failed Redis call (unreachable, timed out, an
 * error reply) is RG_EUNAVAIL and changes nothing.
 *
 * Threading: every function may be called from any thread; rg_redis hands
 * each thread its own connection. A tenant struct belongs to one thread at a
 * time. The cache is shared by all threads of a process (one mutex, never
 * held across a Redis call).
 *
 * Dependencies: common/ (rg_redis), hiredis, cJSON (host lists), OpenSSL's
 * libcrypto (SHA-256).
 */
#ifndef TENANT_H
#define TENANT_H

#include <stddef.h>
#include <stdint.h>

#include "common/rg.h"

/** Longest tenant name (and id), in characters. */
/** The prefix, with its hash tag, of every key of the tenant directory. */
#define TENANT_PREFIX "rg:{tenants}:"
/** The set of every tenant id. */
#define TENANT_ALL_KEY TENANT_PREFIX "all"
#define TENANT_NAME_MAX 63
/** Length of an API key: "rgk_" and 40 random characters. */
#define TENANT_KEY_LEN 44
/** Size of a buffer that holds a key and its NUL. */
#define TENANT_KEY_SIZE (TENANT_KEY_LEN + 1)
/** Size of a buffer that holds a key's SHA-256 in hex and its NUL. */
#define TENANT_HASH_SIZE 65

/* Defaults of a new tenant; limits that tenant_validate enforces. */
#define TENANT_DEFAULT_MAX_SESSIONS 100
#define TENANT_DEFAULT_MAX_CONCURRENT 16
#define TENANT_DEFAULT_RATE 50.0
#define TENANT_LIMIT_MAX 1000000  /* max_sessions, max_concurrent: 0 .. this */
#define TENANT_RATE_MAX 1000000.0 /* rate: above 0, at most this */
#define TENANT_HOSTS_MAX 256      /* entries in each host list */
#define TENANT_HOST_MAX_LEN 255
#define TENANT_UA_MAX_LEN 512
#define TENANT_LOCALE_MAX_LEN 35

/* Key cache defaults (tenant_cache_new). */
#define TENANT_CACHE_TTL_MS 2000    /* REFGATE_KEY_CACHE_MS */
#define TENANT_CACHE_NEG_TTL_MS 500 /* unknown keys, at most the TTL above */
#define TENANT_CACHE_CAP 10000

/**
 * A tenant as stored. Strings and lists marked owned belong to the struct and
 * are freed by tenant_destroy; a NULL user_agent or locale means none.
 */
typedef struct tenant {
    char id[TENANT_NAME_MAX + 1];
    char name[TENANT_NAME_MAX + 1];
    int64_t created_ms; /* wall clock, set by tenant_create */
    int max_sessions;
    int max_concurrent;
    double rate; /* requests per second */
    int allow_private;
    int allow_eval;
    int allow_downloads; /* pages may download files into the session's scratch space */
    char **allow_hosts; /* owned */
    size_t n_allow;
    char **deny_hosts; /* owned */
    size_t n_deny;
    char *user_agent; /* owned, NULL = none */
    char *locale;     /* owned, NULL = none */
} tenant;

/** Fills t with the defaults of a new tenant (empty id and name). */
void tenant_init(tenant *t);
/** Frees what t owns and leaves it as tenant_init does. */
void tenant_destroy(tenant *t);
/** A deep copy into dst (which must not hold anything). 0 or RG_ENOMEM (dst left empty). */
int tenant_copy(tenant *dst, const tenant *src);

/** Adds a copy of host to the allow list (deny 0) or the deny list (deny 1). 0 or RG_ENOMEM. */
int tenant_add_host(tenant *t, int deny, const char *host);
/** Empties the allow list (deny 0) or the deny list (deny 1). */
void tenant_clear_hosts(tenant *t, int deny);
/** Replaces *field (user_agent or locale) by a copy of s; NULL or "" clears it. 0 or RG_ENOMEM. */
int tenant_set_str(char **field, const char *s);

/** 1 when name is a valid tenant name (1..63 of [a-z0-9_-]), else 0. */
int tenant_name_valid(const char *name);

/**
 * Checks every field of t except id and created_ms (t->name must be a valid
 * name). 0, or RG_EBADREQ with a sentence in err (errlen bytes, may be NULL).
 */
int tenant_validate(const tenant *t, char *err, size_t errlen);

/** The SHA-256 of api_key as 64 lowercase hex digits and a NUL. */
void tenant_key_hash(const char *api_key, char out[TENANT_HASH_SIZE]);

/**
 * Creates the tenant spec->name (spec->id and created_ms are ignored) with the
 * fields of spec and one API key, written to key_out (key_len >= TENANT_KEY_SIZE).
 * Atomic: either all of it exists afterwards or nothing changed.
 * RG_EBADREQ (invalid spec; sentence in err), RG_ECONFLICT (a tenant of that
 * name exists), RG_EUNAVAIL, RG_EINTERNAL (key_len too small, no randomness).
 */
int tenant_create(rg_redis *r, const tenant *spec, char *key_out, size_t key_len, char *err,
                  size_t errlen);

/**
 * Reads tenant tid into out (initialized by this call; the caller destroys it,
 * also after an error). Fields missing from the hash keep their defaults.
 * RG_ENOTFOUND (no such tenant, or tid is not a valid name), RG_EUNAVAIL.
 */
int tenant_get(rg_redis *r, const char *tid, tenant *out);

/**
 * Writes every field of t to the existing tenant t->id except name and
 * created, which stay as created. RG_EBADREQ (invalid fields; sentence in err),
 * RG_ENOTFOUND, RG_EUNAVAIL.
 */
int tenant_update(rg_redis *r, const tenant *t, char *err, size_t errlen);

/**
 * Deletes tenant tid and every key of it (they stop authenticating once the
 * caches' TTL has passed). Its sessions are not touched: they expire.
 * RG_ENOTFOUND, RG_EUNAVAIL.
 */
int tenant_delete(rg_redis *r, const char *tid);

/**
 * Every tenant id, sorted (strcmp). *tids is an array the caller frees with
 * tenant_list_free (NULL when *n is 0). 0, RG_EUNAVAIL or RG_ENOMEM.
 */
int tenant_list(rg_redis *r, char ***tids, size_t *n);
void tenant_list_free(char **tids, size_t n);

/**
 * Makes another API key for tenant tid and writes it to key_out (key_len >=
 * TENANT_KEY_SIZE). RG_ENOTFOUND, RG_EUNAVAIL, RG_EINTERNAL as for create.
 */
int tenant_key_create(rg_redis *r, const char *tid, char *key_out, size_t key_len);

/** How many API keys tenant tid has, in *n. RG_ENOTFOUND, RG_EUNAVAIL. */
int tenant_key_count(rg_redis *r, const char *tid, size_t *n);

/**
 * Revokes one key, given either as the key itself or as its SHA-256 in hex
 * (64 hex digits, either case). RG_ENOTFOUND when no such key exists,
 * RG_EUNAVAIL.
 */
int tenant_key_revoke(rg_redis *r, const char *key_or_hash);

/**
 * Moves tenants from the keys of refgate before Redis Cluster support
 * (rg:tenant:<tid>, rg:tenant:<tid>:keys, rg:key:<sha256>, rg:tenants) to
 * the tagged ones, keeping what the new keys already hold, and drops the old
 * keys; how many tenants moved in *moved. Safe to run again, and by several
 * processes at once: with no old keys it is one SMEMBERS. 0, RG_EUNAVAIL.
 */
int tenant_upgrade(rg_redis *r, size_t *moved);

/* ---- the key cache ------------------------------------------------------
 * Answers "which tenant has this key" for the gateway without a Redis round
 * trip per request. Entries are kept by the key's SHA-256, at most ttl_ms for
 * a known key (so a revoked key stops working within that) and at most
 * min(ttl_ms, TENANT_CACHE_NEG_TTL_MS) for an unknown one (so a flood of bad
 * keys costs Redis one lookup per key per half second). At most cap entries:
 * a new entry replaces the oldest. Failed lookups (Redis down) are not cached.
 * Any thread; the mutex is never held across a Redis call.
 */
typedef struct tenant_cache tenant_cache;

/**
 * A cache that looks keys up in r (borrowed: it must outlive the cache).
 * ttl_ms < 0: REFGATE_KEY_CACHE_MS or TENANT_CACHE_TTL_MS; 0: nothing is
 * cached. cap 0: TENANT_CACHE_CAP. NULL when out of memory.
 */
tenant_cache *tenant_cache_new(rg_redis *r, int ttl_ms, size_t cap);
void tenant_cache_free(tenant_cache *c);

/**
 * The tenant that api_key belongs to, copied into out (initialized by this
 * call; the caller destroys it, also after an error).
 * 0; RG_EUNAUTH for a NULL, empty, overlong or unknown key (or one whose
 * tenant is gone); RG_EUNAVAIL when Redis cannot answer (never RG_EUNAUTH
 * then); RG_ENOMEM.
 */
int tenant_authenticate(tenant_cache *c, const char *api_key, tenant *out);

#endif
