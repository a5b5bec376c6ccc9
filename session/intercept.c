/*
 * intercept.c - without the egress proxy, every request a session's page
 * makes passes the tenant's URL policy first: Fetch.enable on the page
 * pauses each request (main frame, same-process frames, subresources,
 * fetch/XHR, form posts, redirects: each hop is a new pause), and the
 * request goes on (Fetch.continueRequest) or fails with BlockedByClient.
 * A frame of another site runs in a process of its own, which the page's
 * Fetch does not see: it gets its own (xframes.c), before it runs.
 * With the proxy, the proxy checks every connection instead
 * (sess_intercept_params).
 *
 * The decision comes from the manager's url_check hook. One that needs DNS
 * would block the DevTools reader thread, so it goes to a small pool of
 * checker threads with a bounded queue; when the queue is full the request
 * fails (refusing is the safe side). A session's pending checks are drained
 * before its context is released, so no check outlives the connection it
 * answers on.
 *
 * Threading: sess_on_request_paused runs on the browser's reader thread and
 * never blocks; the checker threads answer with sess_call_async; s->checks
 * is guarded by m->mu, the queue by its own lock.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECKERS 4
#define QUEUE_MAX 1024

struct check_job {
    struct check_job *next;
    sess *s;
    char session[64]; /* the page's flattened session: its tab may go while the check runs */
    char *request_id;
    char *url;
};

struct sess_checkers {
    pthread_mutex_t mu;
    pthread_cond_t cv, drained;
    struct check_job *head, *tail;
    int n;
    int stop;
    pthread_t th[CHECKERS];
    int n_th;
};

/* Lets the paused request go on or fails it, on the page's session (any thread). */
static void answer(sess *s, const char *session, const char *request_id, int allow)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"requestId\":");
    rg_buf_json_str(&q, request_id, strlen(request_id));
    rg_buf_puts(&q, allow ? "}" : ",\"errorReason\":\"BlockedByClient\"}");
    if (!q.failed && s->lease)
        cdp_call_async(pool_lease_conn(s->lease), session,
                       allow ? "Fetch.continueRequest" : "Fetch.failRequest", q.data, 10000, NULL,
                       NULL);
    rg_buf_destroy(&q);
}

static void job_free(struct check_job *j)
{
    free(j->request_id);
    free(j->url);
    free(j);
}

/* One pending check fewer for j's session (m->mu taken here). */
static void job_done(sess *s)
{
    pthread_mutex_lock(&s->m->mu);
    s->checks--;
    pthread_cond_broadcast(&s->m->checks_cv);
    pthread_mutex_unlock(&s->m->mu);
}

static void *checker_main(void *arg)
{
    sess_mgr *m = arg;
    struct sess_checkers *k = m->checkers;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (!k->head && !k->stop)
            pthread_cond_wait(&k->cv, &k->mu);
        if (!k->head)
            break;
        struct check_job *j = k->head;
        k->head = j->next;
        if (!k->head)
            k->tail = NULL;
        k->n--;
        pthread_mutex_unlock(&k->mu);
        char why[256] = "";
        int rc = m->cfg.url_check(m->cfg.url_ud, j->s->tenant, j->url, 1, why, sizeof why);
        if (rc != 0) {
            rg_log(RG_LOG_INFO, "session", "%s: blocked a request: %s", j->s->id, why);
            sess_netlog_refused(j->s, j->url, why);
        }
        answer(j->s, j->session, j->request_id, rc == 0);
        job_done(j->s);
        job_free(j);
        pthread_mutex_lock(&k->mu);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

int sess_checkers_start(sess_mgr *m)
{
    /* With the egress proxy no request is paused (sess_intercept_params):
       nothing for checker threads to do. */
    if (!m->cfg.url_check || m->egress)
        return 0;
    struct sess_checkers *k = calloc(1, sizeof *k);
    if (!k)
        return RG_ENOMEM;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    m->checkers = k;
    for (int i = 0; i < CHECKERS; i++)
        if (pthread_create(&k->th[k->n_th], NULL, checker_main, m) == 0)
            k->n_th++;
    return k->n_th ? 0 : RG_ENOMEM;
}

void sess_checkers_stop(sess_mgr *m)
{
    struct sess_checkers *k = m->checkers;
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    for (int i = 0; i < k->n_th; i++)
        pthread_join(k->th[i], NULL);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
    m->checkers = NULL;
}

/* A paused request of tab t, on session (the tab's page or one of its
   frames of other sites: the answer goes where it paused), on the reader
   thread: decided at once when no DNS is needed. */
void sess_on_request_paused(sess_tab *t, const char *session, const cJSON *params)
{
    sess *s = t->s;
    sess_mgr *m = s->m;
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(params, "request"), "url");
    if (!cJSON_IsString(rid))
        return;
    /* A document of an origin a new session's state is put into: state.c answers it. */
    if (__atomic_load_n(&s->seeding, __ATOMIC_SEQ_CST) &&
        !strcmp(sess_jstr(params, "resourceType"), "Document"))
        return;
    if (!cJSON_IsString(url)) {
        answer(s, session, rid->valuestring, 0);
        return;
    }
    char why[256] = "";
    int rc = m->cfg.url_check(m->cfg.url_ud, s->tenant, url->valuestring, 0, why, sizeof why);
    if (rc <= 0) {
        if (rc < 0) {
            rg_log(RG_LOG_INFO, "session", "%s: blocked a request: %s", s->id, why);
            sess_netlog_refused(s, url->valuestring, why);
        }
        answer(s, session, rid->valuestring, rc == 0);
        return;
    }
    struct sess_checkers *k = m->checkers;
    struct check_job *j = k ? calloc(1, sizeof *j) : NULL;
    if (j) {
        j->s = s;
        snprintf(j->session, sizeof j->session, "%s", session);
        j->request_id = strdup(rid->valuestring);
        j->url = strdup(url->valuestring);
    }
    if (!j || !j->request_id || !j->url) {
        if (j)
            job_free(j);
        answer(s, session, rid->valuestring, 0);
        return;
    }
    pthread_mutex_lock(&m->mu);
    s->checks++;
    pthread_mutex_unlock(&m->mu);
    pthread_mutex_lock(&k->mu);
    int full = k->n >= QUEUE_MAX || k->stop;
    if (!full) {
        if (k->tail)
            k->tail->next = j;
        else
            k->head = j;
        k->tail = j;
        k->n++;
        pthread_cond_signal(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
    if (full) {
        answer(s, session, rid->valuestring, 0);
        job_done(s);
        job_free(j);
    }
}

void sess_checks_drain(sess *s)
{
    sess_mgr *m = s->m;
    pthread_mutex_lock(&m->mu);
    while (s->checks > 0)
        pthread_cond_wait(&m->checks_cv, &m->mu);
    pthread_mutex_unlock(&m->mu);
}

/*
 * The page's Fetch domain pauses every request only without the egress
 * proxy, where it is the only line there is. With the proxy, a page's
 * requests are not paused at all: each connection they open goes through
 * the proxy, which asks the same rules (the tenant's hosts, ports and
 * address ranges) on the very address it connects to, and the schemes the
 * proxy does not carry (file:, chrome:) are ones Chromium does not let a
 * web page load, navigate a frame to or redirect to. Pausing cost more
 * than a round trip per request: with Fetch enabled at all, even with a
 * pattern that matches nothing, Chromium's navigation to a page with two
 * scripts took 4 to 8 ms longer (bench/pages and tests/fixtures/react,
 * measured with a raw DevTools client, 40 navigations each way). What
 * the worker itself navigates to is checked before the browser sees it
 * (sess_check_url); a redirect the proxy refuses is still blocked_url
 * (nav.c, egress_slot_since).
 */
const char *sess_intercept_params(const sess_mgr *m)
{
    if (!m->cfg.url_check || m->egress)
        return NULL;
    return "{\"patterns\":[{\"urlPattern\":\"*\"}]}";
}

int sess_intercept(sess *s)
{
    const char *q = sess_intercept_params(s->m);
    return q ? sess_call(s, "Fetch.enable", q, 10000, NULL) : 0;
}

int sess_check_url(sess_mgr *m, const char *tenant, const char *url, char *why, size_t whylen)
{
    if (!m->cfg.url_check)
        return 0;
    int rc = m->cfg.url_check(m->cfg.url_ud, tenant, url, 1, why, whylen);
    return rc > 0 ? 0 : rc;
}
