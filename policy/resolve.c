/*
 * resolve.c - DNS with a deadline. getaddrinfo cannot be cancelled or given
 * a timeout, so each lookup runs on a detached helper thread and the caller
 * waits on a condition variable until the answer or the deadline.
 *
 * A lookup that times out runs on until getaddrinfo returns (resolv.conf's
 * timeout and attempts bound it), then frees its job. The job is shared by
 * the caller and the thread and freed by whichever lets go last; the thread
 * also holds a reference to the pol's gate (its in-flight count), so a pol
 * may be freed while its lookups still run. The gate caps lookups in flight
 * per pol, so a DNS outage cannot pile up threads without bound.
 *
 * Any thread. One job allocation and one thread per lookup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy_int.h"

struct job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs; /* under mu: the caller's and the thread's */
    int done; /* under mu */
    int rc;
    pol_lookup_fn fn;
    void *arg;
    struct pol_gate *gate;
    char host[POL_HOST_SIZE];
    char why[192];
    pol_addrs addrs;
};

void pol_gate_release(struct pol_gate *g)
{
    if (atomic_fetch_sub(&g->refs, 1) == 1)
        free(g);
}

int pol_dns_inflight(const pol *p)
{
    return atomic_load(&p->gate->inflight);
}

int pol_lookup_system(void *arg, const char *host, pol_addrs *out, char *why, size_t whylen)
{
    (void)arg;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;     /* no AI_ADDRCONFIG: check every family's answers */
    hints.ai_socktype = SOCK_STREAM; /* one answer per address, not one per socket type */
    out->n = 0;
    int e = getaddrinfo(host, NULL, &hints, &res);
    if (e)
        return rg_errf(why, whylen, RG_ENAVFAILED, "%s does not resolve (%s)", host,
                       gai_strerror(e));
    int rc = 0;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        if (out->n == POL_MAX_ADDRS) {
            rc = rg_errf(why, whylen, RG_EBLOCKEDURL, "%s resolves to more than %d addresses", host,
                         POL_MAX_ADDRS);
            break;
        }
        struct sockaddr_storage *ss = &out->addr[out->n++];
        memset(ss, 0, sizeof *ss);
        memcpy(ss, ai->ai_addr, ai->ai_addrlen < sizeof *ss ? ai->ai_addrlen : sizeof *ss);
    }
    freeaddrinfo(res);
    return rc;
}

/* Drops one reference; the last frees the job. */
static void job_release(struct job *j)
{
    pthread_mutex_lock(&j->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last)
        return;
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

static void *job_run(void *arg)
{
    struct job *j = arg;
    struct pol_gate *g = j->gate;
    int rc = j->fn(j->arg, j->host, &j->addrs, j->why, sizeof j->why);
    /* The lookup is over before anyone hears of it: a caller that sees the
       answer never counts this one as still in flight. */
    atomic_fetch_sub(&g->inflight, 1);
    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->done = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    job_release(j);
    pol_gate_release(g);
    return NULL;
}

static struct job *job_new(const pol *p, const char *host)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&j->mu, NULL);
    j->refs = 2;
    j->fn = p->lookup;
    j->arg = p->lookup_arg;
    j->gate = p->gate;
    rg_strlcpy(j->host, host, sizeof j->host);
    return j;
}

/* Starts the job's thread, which takes a gate reference. 0 or -1. */
static int job_start(struct job *j)
{
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    atomic_fetch_add(&j->gate->refs, 1);
    int e = pthread_create(&t, &attr, job_run, j);
    pthread_attr_destroy(&attr);
    if (e) {
        pol_gate_release(j->gate);
        return -1;
    }
    return 0;
}

/* Waits until the job is done or timeout_ms passed. 1 when done (under mu). */
static int job_wait(struct job *j, int timeout_ms)
{
    struct timespec deadline;
    rg_deadline(&deadline, timeout_ms);
    int e = 0;
    while (!j->done && e != ETIMEDOUT)
        e = pthread_cond_timedwait(&j->cv, &j->mu, &deadline);
    return j->done;
}

int pol_resolve(const pol *p, const char *host, int timeout_ms, pol_addrs *out, char *why,
                size_t whylen)
{
    out->n = 0;
    if (timeout_ms <= 0)
        timeout_ms = POL_DNS_TIMEOUT_MS;
    if (atomic_fetch_add(&p->gate->inflight, 1) >= POL_DNS_MAX_INFLIGHT) {
        atomic_fetch_sub(&p->gate->inflight, 1);
        return rg_errf(why, whylen, RG_EBUSY, "too many DNS lookups in flight (%d)",
                       POL_DNS_MAX_INFLIGHT);
    }
    struct job *j = job_new(p, host);
    if (!j || job_start(j) < 0) {
        atomic_fetch_sub(&p->gate->inflight, 1);
        if (!j)
            return rg_errf(why, whylen, RG_ENOMEM, "no memory for a DNS lookup");
        j->refs = 1;
        job_release(j);
        return rg_errf(why, whylen, RG_EUNAVAIL, "cannot start a DNS lookup thread");
    }
    pthread_mutex_lock(&j->mu);
    int done = job_wait(j, timeout_ms);
    int rc = done ? j->rc : RG_ETIMEOUT;
    if (done && rc == 0 && j->addrs.n > POL_MAX_ADDRS)
        rc = rg_errf(why, whylen, RG_EBLOCKEDURL, "%s resolves to more than %d addresses", host,
                     POL_MAX_ADDRS);
    else if (done && rc == 0) {
        out->n = j->addrs.n;
        memcpy(out->addr, j->addrs.addr, out->n * sizeof out->addr[0]);
    } else if (done) {
        rg_errf(why, whylen, 0, "%s", j->why[0] ? j->why : "the DNS lookup failed");
    }
    pthread_mutex_unlock(&j->mu);
    job_release(j);
    if (rc == RG_ETIMEOUT)
        return rg_errf(why, whylen, RG_ETIMEOUT, "DNS lookup timed out (%s, %d ms)", host,
                       timeout_ms);
    if (rc == 0 && out->n == 0)
        return rg_errf(why, whylen, RG_ENAVFAILED, "%s has no addresses", host);
    return rc;
}
