/*
 * cache.c - the per-process cache of API key lookups (tenant.h).
 *
 * Entries live in a ring of cap slots indexed by a chained hash table on the
 * key's SHA-256 (already uniform, so its first 32 bits pick the bucket). A new
 * entry always takes the slot after the previous one, replacing what was
 * there: the oldest key goes first, and the cache never holds more than cap.
 * Refreshing a key rewrites its own slot, so its place in the ring (and the
 * order of eviction) is that of its first insert.
 *
 * Threading: one mutex guards everything; Redis is asked with it released, so
 * two threads missing on the same key may both ask (harmless: the later
 * answer replaces the earlier).
 */
#define _GNU_SOURCE
#include "tenant/tenant_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_CAP_MAX (1u << 24) /* slot indices are int32_t */
#define TTL_ENV_MAX_MS 3600000

struct centry {
    char hash[TENANT_HASH_SIZE];
    int used;
    int found;          /* 0: a cached "no such key" */
    int64_t expires_ms; /* rg_now_ms */
    int32_t next;       /* next slot in the same bucket, -1 at the end */
    tenant t;           /* when found */
};

struct tenant_cache {
    rg_redis *r;
    int ttl_ms, neg_ttl_ms;
    pthread_mutex_t mu;
    struct centry *slots;
    size_t cap;
    size_t next_slot; /* the oldest slot: the next insert replaces it */
    int32_t *buckets;
    size_t bucket_mask;
};

tenant_cache *tenant_cache_new(rg_redis *r, int ttl_ms, size_t cap)
{
    if (ttl_ms < 0)
        ttl_ms = (int)rg_env_long("REFGATE_KEY_CACHE_MS", TENANT_CACHE_TTL_MS, 0, TTL_ENV_MAX_MS);
    if (cap == 0)
        cap = TENANT_CACHE_CAP;
    if (cap > CACHE_CAP_MAX)
        cap = CACHE_CAP_MAX;
    size_t nb = 16;
    while (nb < 2 * cap)
        nb *= 2;
    tenant_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->slots = calloc(cap, sizeof *c->slots);
    c->buckets = malloc(nb * sizeof *c->buckets);
    if (!c->slots || !c->buckets) {
        free(c->slots);
        free(c->buckets);
        free(c);
        return NULL;
    }
    for (size_t i = 0; i < nb; i++)
        c->buckets[i] = -1;
    c->r = r;
    c->ttl_ms = ttl_ms;
    c->neg_ttl_ms = ttl_ms < TENANT_CACHE_NEG_TTL_MS ? ttl_ms : TENANT_CACHE_NEG_TTL_MS;
    c->cap = cap;
    c->bucket_mask = nb - 1;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void tenant_cache_free(tenant_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->cap; i++)
        if (c->slots[i].used)
            tenant_destroy(&c->slots[i].t);
    pthread_mutex_destroy(&c->mu);
    free(c->slots);
    free(c->buckets);
    free(c);
}

static size_t bucket_of(const tenant_cache *c, const char *hash)
{
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        char ch = hash[i];
        v = v << 4 | (uint32_t)(ch <= '9' ? ch - '0' : ch - 'a' + 10);
    }
    return v & c->bucket_mask;
}

static int32_t find(const tenant_cache *c, const char *hash)
{
    for (int32_t i = c->buckets[bucket_of(c, hash)]; i >= 0; i = c->slots[i].next)
        if (!strcmp(c->slots[i].hash, hash))
            return i;
    return -1;
}

/* Takes slot i out of its bucket and frees what it holds. */
static void drop(tenant_cache *c, int32_t i)
{
    struct centry *e = &c->slots[i];
    int32_t *link = &c->buckets[bucket_of(c, e->hash)];
    while (*link != i)
        link = &c->slots[*link].next;
    *link = e->next;
    if (e->found)
        tenant_destroy(&e->t);
    memset(e, 0, sizeof *e);
}

/* A fresh entry: 0 hit with a copy in out, RG_EUNAUTH a cached unknown key,
   1 a miss, RG_ENOMEM. */
static int lookup(tenant_cache *c, const char *hash, tenant *out)
{
    int rc = 1;
    pthread_mutex_lock(&c->mu);
    int32_t i = find(c, hash);
    if (i >= 0 && c->slots[i].expires_ms <= rg_now_ms())
        i = -1; /* stale: the answer from Redis rewrites the slot (store) */
    if (i >= 0)
        rc = c->slots[i].found ? tenant_copy(out, &c->slots[i].t) : RG_EUNAUTH;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* Caches an answer: t (moved into the cache, may be NULL for "unknown"). */
static void store(tenant_cache *c, const char *hash, tenant *t)
{
    int ttl = t ? c->ttl_ms : c->neg_ttl_ms;
    if (ttl <= 0) {
        if (t)
            tenant_destroy(t);
        return;
    }
    pthread_mutex_lock(&c->mu);
    /* A refreshed key keeps its slot. Taking the next one instead would, for
       a worker serving a few keys, write a new slot every TTL and so touch
       a new page of the array every dozen refreshes (hours of slow RSS creep,
       up to the whole array: 1.2 MiB for the gateway's 4096 slots), and once the ring
       had come round, each refresh would push out some other key. */
    int32_t i = find(c, hash);
    if (i >= 0) {
        drop(c, i);
    } else {
        i = (int32_t)c->next_slot;
        c->next_slot = (c->next_slot + 1) % c->cap;
        if (c->slots[i].used)
            drop(c, i);
    }
    struct centry *e = &c->slots[i];
    memcpy(e->hash, hash, TENANT_HASH_SIZE);
    e->used = 1;
    e->found = t != NULL;
    e->expires_ms = rg_now_ms() + ttl;
    if (t)
        e->t = *t;
    size_t b = bucket_of(c, hash);
    e->next = c->buckets[b];
    c->buckets[b] = i;
    pthread_mutex_unlock(&c->mu);
}

/* Asks Redis: 0 with the tenant, RG_EUNAUTH for an unknown key or a tenant
   that is gone, RG_EUNAVAIL, RG_ENOMEM. */
static int fetch(rg_redis *r, const char *hash, tenant *out)
{
    char tid[TENANT_NAME_MAX + 1];
    tenant_init(out);
    int rc = tenant_key_owner(r, hash, tid);
    if (!rc)
        rc = tenant_get(r, tid, out);
    return rc == RG_ENOTFOUND ? RG_EUNAUTH : rc;
}

int tenant_authenticate(tenant_cache *c, const char *api_key, tenant *out)
{
    tenant_init(out);
    if (!api_key || !*api_key || strnlen(api_key, TENANT_KEY_INPUT_MAX + 1) > TENANT_KEY_INPUT_MAX)
        return RG_EUNAUTH;
    char hash[TENANT_HASH_SIZE];
    tenant_key_hash(api_key, hash);
    int rc = lookup(c, hash, out);
    if (rc != 1)
        return rc;
    rc = fetch(c->r, hash, out);
    if (rc == RG_EUNAUTH) {
        store(c, hash, NULL);
    } else if (rc == 0) {
        tenant cached;
        if (tenant_copy(&cached, out) == 0)
            store(c, hash, &cached);
    } else {
        tenant_destroy(out);
    }
    return rc;
}
