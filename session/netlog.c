/*
 * netlog.c - the requests a live session's pages made, kept so that an
 * agent can see what its click sent and what came back ("POST /api/login
 * 401") without having subscribed to anything: the `network` op, as the
 * Playwright MCP server's browser_network_requests and agent-browser's
 * `network requests`.
 *
 * The log is a ring of the last SESS_NET_KEPT requests, each URL clipped at
 * SESS_NET_URL_MAX bytes: a page that polls costs a bounded amount of
 * memory. A request is listed from the moment it is sent; its status (or
 * its failure) and the time until it came are filled in as the browser
 * reports them (Network.responseReceived, loadingFailed), found again by
 * the browser's request id among the kept ones. The time is to the
 * response's headers: a body the page never reads never finishes loading. A redirect ends its hop
 * (with the 3xx status) and the next hop is a request of its own, as the
 * browser sends it. data: URLs are left out (no request leaves the page).
 *
 * As console.c: numbered from 1 by the session's count (seq, the client's
 * `since`), its own mutex (the handlers run on the browser's reader thread),
 * cleared with the context, never written to Redis.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sess_netlog {
    pthread_mutex_t mu;
    sess_net_req *ring; /* SESS_NET_KEPT entries once the first request comes */
    uint64_t seq;       /* requests so far: the last one's seq */
    uint64_t base;      /* seq when the log was last cleared: kept are after it */
    /* why the URL policy refused the last destinations without the egress
       proxy (with it, the proxy's slot remembers them: egress_slot_refusal) */
    egress_refusals refused;
};

struct sess_netlog *sess_netlog_new(void)
{
    struct sess_netlog *l = calloc(1, sizeof *l);
    if (l)
        pthread_mutex_init(&l->mu, NULL);
    return l;
}

static void req_clear(sess_net_req *e)
{
    free(e->url);
    memset(e, 0, sizeof *e);
}

static void clear_locked(struct sess_netlog *l)
{
    if (l->ring)
        for (size_t i = 0; i < SESS_NET_KEPT; i++)
            req_clear(&l->ring[i]);
    free(l->ring);
    l->ring = NULL;
    l->base = l->seq;
    memset(&l->refused, 0, sizeof l->refused);
}

void sess_netlog_free(struct sess_netlog *l)
{
    if (!l)
        return;
    clear_locked(l);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void sess_netlog_clear(sess *s)
{
    struct sess_netlog *l = s->netlog;
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    clear_locked(l);
    pthread_mutex_unlock(&l->mu);
}

/* The seq of the oldest request still kept (under l->mu): in the ring and
   after the last clear. Above l->seq when none is. */
static uint64_t first_kept(const struct sess_netlog *l)
{
    uint64_t oldest = l->seq > SESS_NET_KEPT ? l->seq - SESS_NET_KEPT + 1 : 1;
    return oldest > l->base ? oldest : l->base + 1;
}

/* The kept request of the browser's id (under l->mu), newest first, or NULL. */
static sess_net_req *find_locked(struct sess_netlog *l, const char *tab, const char *id)
{
    uint64_t oldest = first_kept(l);
    for (uint64_t q = l->seq; q >= oldest && q > 0; q--) {
        sess_net_req *e = &l->ring[q % SESS_NET_KEPT];
        if (e->seq == q && !strcmp(e->id, id) && !strcmp(e->tab, tab))
            return e;
    }
    return NULL;
}

/* Seconds of the browser's monotonic clock, as ms; 0 when absent. */
static double ms_of(const cJSON *ts)
{
    return cJSON_IsNumber(ts) ? ts->valuedouble * 1000.0 : 0;
}

/* Fills e's outcome from a response object (responseReceived, a redirect's). */
static void took_response(sess_net_req *e, const cJSON *resp)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(resp, "status");
    e->status = cJSON_IsNumber(st) && st->valuedouble >= 0 && st->valuedouble < 1000
                    ? (int)st->valuedouble
                    : 0;
    snprintf(e->status_text, sizeof e->status_text, "%s", sess_jstr(resp, "statusText"));
}

/* The answer (or the failure) came at ts: how long it took. */
static void ended(sess_net_req *e, const cJSON *ts)
{
    double end = ms_of(ts);
    e->done = 1;
    e->seen_ms = rg_now_ms();
    if (end > 0 && e->start_ms > 0 && end >= e->start_ms)
        e->ms = end - e->start_ms;
}

/* The browser's own request for the site's icon: not the page's (as console.c). */
static int site_icon(const char *url, const char *type)
{
    const char *path = strstr(url, "://");
    path = path ? strchr(path + 3, '/') : NULL;
    return !strcmp(type, "Other") && path && !strncmp(path, "/favicon.ico", 12) &&
           (!path[12] || path[12] == '?');
}

/* A request sent (reader thread, under l->mu). */
static void sent_locked(struct sess_netlog *l, sess_tab *t, const char *sender, const cJSON *p)
{
    const cJSON *rq = cJSON_GetObjectItemCaseSensitive(p, "request");
    const char *url = sess_jstr(rq, "url"), *id = sess_jstr(p, "requestId");
    if (!strncmp(url, "data:", 5) || !*id || site_icon(url, sess_jstr(p, "type")))
        return;
    /* a redirect: the hop before ends with its 3xx, and this is a new request */
    const cJSON *redir = cJSON_GetObjectItemCaseSensitive(p, "redirectResponse");
    if (redir && l->ring) {
        sess_net_req *prev = find_locked(l, t->id, id);
        if (prev && !prev->done) {
            took_response(prev, redir);
            ended(prev, cJSON_GetObjectItemCaseSensitive(p, "timestamp"));
            prev->id[0] = '\0'; /* the id now names the next hop */
        }
    }
    char *u = strndup(url, rg_utf8_prefix(url, SESS_NET_URL_MAX));
    if (!l->ring)
        l->ring = calloc(SESS_NET_KEPT, sizeof *l->ring);
    if (!l->ring || !u) {
        l->base = ++l->seq; /* counted: a client sees one is missing */
        free(u);
        return;
    }
    uint64_t q = ++l->seq;
    sess_net_req *e = &l->ring[q % SESS_NET_KEPT];
    req_clear(e);
    e->seq = q;
    e->url = u;
    snprintf(e->id, sizeof e->id, "%s", id);
    snprintf(e->tab, sizeof e->tab, "%s", t->id);
    snprintf(e->sender, sizeof e->sender, "%s", sender ? sender : "");
    snprintf(e->method, sizeof e->method, "%s", sess_jstr(rq, "method"));
    snprintf(e->type, sizeof e->type, "%s", sess_jstr(p, "type"));
    e->start_ms = ms_of(cJSON_GetObjectItemCaseSensitive(p, "timestamp"));
    e->seen_ms = rg_now_ms();
    const cJSON *wall = cJSON_GetObjectItemCaseSensitive(p, "wallTime");
    e->ts_ms = cJSON_IsNumber(wall) ? (int64_t)(wall->valuedouble * 1000.0) : 0;
}

void sess_netlog_event(sess_tab *t, const char *session_id, const char *method, const cJSON *params)
{
    struct sess_netlog *l = t->s->netlog;
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    if (!strcmp(method, "Network.requestWillBeSent")) {
        sent_locked(l, t, session_id, params);
    } else if (l->ring) {
        sess_net_req *e = find_locked(l, t->id, sess_jstr(params, "requestId"));
        if (!e) {
            /* not kept (a data: URL, or gone from the ring) */
        } else if (!strcmp(method, "Network.responseReceived")) {
            took_response(e, cJSON_GetObjectItemCaseSensitive(params, "response"));
            ended(e, cJSON_GetObjectItemCaseSensitive(params, "timestamp"));
            const char *type = sess_jstr(params, "type");
            if (*type)
                snprintf(e->type, sizeof e->type, "%s", type);
        } else if (!strcmp(method, "Network.loadingFailed")) {
            const char *why = sess_jstr(params, "errorText");
            snprintf(e->failure, sizeof e->failure, "%s", *why ? why : "failed");
            ended(e, cJSON_GetObjectItemCaseSensitive(params, "timestamp"));
        }
    }
    pthread_mutex_unlock(&l->mu);
}

/*
 * A frame of another site or a worker has its own DevTools session, and
 * what it sent is reported on that session only. Once the session ends
 * (the frame removed or navigated into the page's process, the worker
 * done) the browser cancels its loads but tells no one: without this,
 * such a request would stay waiting until it left the ring, and keep
 * `wait {load: "networkidle"}` from ever seeing the tab quiet (Playwright
 * drops a detached frame's requests too).
 */
void sess_netlog_senders_gone(sess_tab *t, const char (*sessions)[64], int n)
{
    struct sess_netlog *l = t->s->netlog;
    if (!l || n <= 0)
        return;
    pthread_mutex_lock(&l->mu);
    for (uint64_t q = first_kept(l); l->ring && q <= l->seq; q++) {
        sess_net_req *e = &l->ring[q % SESS_NET_KEPT];
        if (e->seq != q || e->done || strcmp(e->tab, t->id))
            continue;
        for (int i = 0; i < n; i++)
            if (!strcmp(e->sender, sessions[i])) {
                snprintf(e->failure, sizeof e->failure,
                         "net::ERR_ABORTED (its frame or worker went away)");
                ended(e, NULL);
                break;
            }
    }
    pthread_mutex_unlock(&l->mu);
}

void sess_netlog_refused(sess *s, const char *url, const char *why)
{
    struct sess_netlog *l = s->netlog;
    char host[256];
    int port;
    if (!l || sess_url_host_port(url, host, sizeof host, &port) < 0)
        return;
    pthread_mutex_lock(&l->mu);
    egress_refusals_note(&l->refused, host, port, why);
    pthread_mutex_unlock(&l->mu);
}

/*
 * Why the URL policy refused a request that failed as a refused one does
 * (net::ERR_SOCKS_CONNECTION_FAILED through the proxy,
 * net::ERR_BLOCKED_BY_CLIENT without it), when its destination is among
 * those remembered: a strdup'ed reason, else NULL. The holder's thread
 * (s->egress stays put).
 */
static char *refusal_of(sess *s, struct sess_netlog *l, const sess_net_req *e)
{
    char host[256], why[EGRESS_WHY_MAX] = "";
    int port, found = 0;
    int proxied = !strcmp(e->failure, "net::ERR_SOCKS_CONNECTION_FAILED");
    /* (a request Fetch failed is "net::ERR_BLOCKED_BY_CLIENT.Inspector" to some of its events) */
    if ((!proxied && strncmp(e->failure, "net::ERR_BLOCKED_BY_CLIENT", 26)) ||
        sess_url_host_port(e->url, host, sizeof host, &port) < 0)
        return NULL;
    if (proxied)
        found = s->egress && egress_slot_refusal(s->egress, host, port, why, sizeof why);
    else
        found = egress_refusals_find(&l->refused, host, port, why, sizeof why);
    return found ? strdup(why) : NULL;
}

/* Images, fonts, style sheets, scripts, media: what a page loads to show itself. */
static int is_static(const sess_net_req *e)
{
    static const char *const kinds[] = {"Image", "Font",     "Stylesheet", "Script",
                                        "Media", "Manifest", "TextTrack",  NULL};
    for (int i = 0; kinds[i]; i++)
        if (!strcmp(e->type, kinds[i]))
            return 1;
    return 0;
}

int sess_network(sess *s, uint64_t since, const char *filter, int with_static,
                 sess_net_list *out)
{
    memset(out, 0, sizeof *out);
    struct sess_netlog *l = s->netlog;
    if (!l)
        return 0;
    pthread_mutex_lock(&l->mu);
    out->next = l->seq;
    uint64_t from;
    sess_log_window(l->seq, l->base, SESS_NET_KEPT, since, &from, &out->dropped, &out->reset);
    size_t cap = from <= l->seq ? (size_t)(l->seq - from + 1) : 0;
    int rc = 0;
    if (cap && !(out->reqs = calloc(cap, sizeof *out->reqs)))
        rc = RG_ENOMEM;
    for (uint64_t q = from; q <= l->seq && out->reqs; q++) {
        const sess_net_req *e = &l->ring[q % SESS_NET_KEPT];
        if (e->seq != q)
            continue;
        /* a static resource only when asked for, or when it failed */
        int failed = e->failure[0] || e->status >= 400;
        if (is_static(e) && !with_static && !failed)
            continue;
        if (filter && *filter && !strstr(e->url, filter))
            continue;
        sess_net_req *o = &out->reqs[out->n];
        *o = *e;
        if (!(o->url = strdup(e->url)))
            break;
        o->blocked = e->failure[0] ? refusal_of(s, l, e) : NULL;
        out->n++;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int sess_network_quiet(sess *s, int timeout_ms, char *err, size_t errlen)
{
    struct sess_netlog *l = s->netlog;
    if (!l || !s->cur)
        return 0;
    int64_t deadline = rg_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        int pending = 0;
        int64_t last = 0;
        pthread_mutex_lock(&l->mu);
        for (uint64_t q = first_kept(l); l->ring && q <= l->seq; q++) {
            const sess_net_req *e = &l->ring[q % SESS_NET_KEPT];
            if (e->seq != q || strcmp(e->tab, s->cur->id))
                continue;
            pending += !e->done;
            last = e->seen_ms > last ? e->seen_ms : last;
        }
        pthread_mutex_unlock(&l->mu);
        int64_t now = rg_now_ms(), quiet_at = last + SESS_NET_QUIET_MS;
        if (!pending && now >= quiet_at)
            return 0;
        if (now >= deadline)
            return rg_errf(err, errlen, RG_ETIMEOUT,
                           "the network was not idle within %d ms (%d request%s waiting for an "
                           "answer)",
                           timeout_ms, pending, pending == 1 ? "" : "s");
        int64_t nap = pending ? 50 : quiet_at - now;
        rg_sleep_ms((int)(nap < deadline - now ? nap : deadline - now));
    }
}

void sess_net_list_free(sess_net_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->reqs[i].url);
        free(l->reqs[i].blocked);
    }
    free(l->reqs);
    memset(l, 0, sizeof *l);
}
