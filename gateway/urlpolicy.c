/*
 * urlpolicy.c - the tenant's URL policy (policy/) as the session manager's
 * url_check hook: navigations and every request a page makes.
 *
 * Compiled policies are cached per tenant for POLICY_TTL_MS (a change to a
 * tenant's rules applies within that) and rebuilt only when the rules
 * changed. A replaced policy is kept until the gateway stops, since a
 * checker thread may still be using it (changes are rare and bounded by
 * the cache's size). The DevTools reader thread never waits on Redis or
 * DNS: without a fresh policy, or for a host name, it hands the request to
 * a checker thread.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

#define POLICY_TTL_MS 2000
#define POLICY_CACHE 256
#define RETIRED_MAX 4096
#define DNS_TIMEOUT_MS 3000

struct gw_pol_entry {
    char tid[64];
    uint64_t sig;       /* hash of the rules it was compiled from */
    pol *p;
    int64_t fetched_ms;
};

static pthread_mutex_t pol_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gw_pol_entry cache[POLICY_CACHE];
static pol *retired[RETIRED_MAX];
static size_t n_retired;

static uint64_t rules_sig(const tenant *t)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)t->allow_private;
    for (int list = 0; list < 2; list++) {
        char **v = list ? t->deny_hosts : t->allow_hosts;
        size_t n = list ? t->n_deny : t->n_allow;
        h = (h ^ (uint64_t)(0x100 + list)) * 1099511628211ULL;
        for (size_t i = 0; i < n; i++)
            for (const char *c = v[i]; ; c++) {
                h = (h ^ (unsigned char)*c) * 1099511628211ULL;
                if (!*c)
                    break;
            }
    }
    return h;
}

static struct gw_pol_entry *slot(const char *tid)
{
    struct gw_pol_entry *oldest = &cache[0];
    for (int i = 0; i < POLICY_CACHE; i++) {
        if (!strcmp(cache[i].tid, tid))
            return &cache[i];
        if (cache[i].fetched_ms < oldest->fetched_ms)
            oldest = &cache[i];
    }
    return oldest;
}

static void retire(pol *p)
{
    if (!p)
        return;
    if (n_retired < RETIRED_MAX)
        retired[n_retired++] = p;
    else
        rg_log(RG_LOG_WARN, "gateway", "too many policy changes: an old policy is kept leaked");
}

/*
 * The tenant's policy, fetched and compiled when stale (may_block), or NULL
 * with *rc: RG_EUNAVAIL when Redis could not be read (nothing is decided
 * then, and nothing passes), RG_EBLOCKEDURL for rules that do not compile,
 * 1 when the answer needs may_block.
 */
static const pol *policy_for(gw *g, const char *tid, int may_block, int *rc_out, char *why,
                             size_t whylen)
{
    *rc_out = 1;
    int64_t now = rg_now_ms();
    pthread_mutex_lock(&pol_mu);
    struct gw_pol_entry *e = slot(tid);
    const pol *p = !strcmp(e->tid, tid) && e->p && now - e->fetched_ms < POLICY_TTL_MS ? e->p
                                                                                       : NULL;
    pthread_mutex_unlock(&pol_mu);
    if (p || !may_block)
        return p;
    tenant t;
    int rc = tenant_get(g->redis, tid, &t);
    if (rc < 0) {
        snprintf(why, whylen, "the tenant's URL policy could not be read (%s)", rg_err_code(rc));
        *rc_out = rg_err_transient(rc) ? RG_EUNAVAIL : RG_EBLOCKEDURL;
        return NULL;
    }
    uint64_t sig = rules_sig(&t);
    pol *fresh = NULL;
    pthread_mutex_lock(&pol_mu);
    e = slot(tid);
    int same = !strcmp(e->tid, tid) && e->p && e->sig == sig;
    pthread_mutex_unlock(&pol_mu);
    if (!same) {
        char err[256];
        if (pol_new(t.allow_private, (const char *const *)t.allow_hosts, t.n_allow,
                    (const char *const *)t.deny_hosts, t.n_deny, &fresh, err, sizeof err) < 0) {
            snprintf(why, whylen, "the tenant's URL policy is invalid: %s", err);
            tenant_destroy(&t);
            *rc_out = RG_EBLOCKEDURL;
            return NULL;
        }
    }
    tenant_destroy(&t);
    pthread_mutex_lock(&pol_mu);
    e = slot(tid);
    if (fresh) {
        retire(e->p); /* ours replaced, or another tenant's evicted: either may be in use */
        snprintf(e->tid, sizeof e->tid, "%s", tid);
        e->p = fresh;
        e->sig = sig;
    }
    e->fetched_ms = now;
    p = e->p;
    pthread_mutex_unlock(&pol_mu);
    return p;
}

int gw_url_check(void *ud, const char *tid, const char *url, int may_block, char *why,
                 size_t whylen)
{
    gw *g = ud;
    int prc;
    const pol *p = policy_for(g, tid, may_block, &prc, why, whylen);
    if (!p)
        return prc;
    /* Only the scheme and the host matter, and they come first: a longer URL
       (a big analytics GET) is checked on its first POL_URL_MAX_BYTES. */
    size_t len = strlen(url);
    if (len > POL_URL_MAX_BYTES)
        len = POL_URL_MAX_BYTES;
    pol_url u;
    int rc = pol_check_url(p, url, len, &u, why, whylen);
    if (rc != POL_RESOLVE)
        return rc == POL_ALLOW ? 0 : rc;
    if (!may_block)
        return 1;
    rc = pol_check_resolved(p, &u, DNS_TIMEOUT_MS, why, whylen);
    /* A name that does not resolve: navigation_failed; too many lookups at
       once: unavailable (transient); anything else refused. */
    return rc == POL_ALLOW                          ? 0
           : rc == RG_ENAVFAILED || rc == RG_EBUSY ? rc
           : rc == RG_EUNAVAIL                     ? RG_EBUSY
                                                   : RG_EBLOCKEDURL;
}

void gw_url_policies_free(void)
{
    pthread_mutex_lock(&pol_mu);
    for (int i = 0; i < POLICY_CACHE; i++) {
        pol_free(cache[i].p);
        memset(&cache[i], 0, sizeof cache[i]);
    }
    for (size_t i = 0; i < n_retired; i++)
        pol_free(retired[i]);
    n_retired = 0;
    pthread_mutex_unlock(&pol_mu);
}

int gw_connect_check(void *ud, const char *tid, const char *host, int port,
                     struct sockaddr_storage *addrs, size_t max, size_t *n, char *why,
                     size_t whylen)
{
    gw *g = ud;
    *n = 0;
    int prc;
    const pol *p = policy_for(g, tid, 1, &prc, why, whylen);
    if (!p)
        return prc;
    pol_addrs *a = malloc(sizeof *a);
    if (!a)
        return RG_ENOMEM;
    int rc = pol_check_connect(p, host, port, DNS_TIMEOUT_MS, a, why, whylen);
    if (rc == POL_ALLOW) {
        *n = a->n < max ? a->n : max;
        memcpy(addrs, a->addr, *n * sizeof addrs[0]);
    }
    free(a);
    return rc == POL_ALLOW ? 0 : rc == RG_ETIMEOUT ? RG_ENAVFAILED : rc;
}
