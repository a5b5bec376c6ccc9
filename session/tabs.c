/*
 * tabs.c - a session's tabs. The lease's first page is tab t1; a popup
 * (window.open, a target=_blank link, a form posting to a new window) and
 * tab.new add more, in the same browser context, up to REFGATE_TABS_MAX.
 *
 * A new page of the context starts paused (the pool attaches every new page
 * with waitForDebuggerOnStart, pool_lease_adopt): before it runs, its
 * events are subscribed, the session's viewport, user agent, locale and
 * timezone are applied (and, without the egress proxy, its requests are
 * handed to the URL policy: Fetch.enable), and only then is it let go
 * (Runtime.runIfWaitingForDebugger). So nothing of a popup is fetched that
 * the tenant's policy refuses: its connections go through the context's
 * egress proxy like every other page's.
 * A popup past the limit is closed while still paused, and reported. A
 * page that opens a hundred popups costs a few DevTools messages for each,
 * never a renderer each.
 *
 * Tab ids ("t1", "t2", ...) are never reused within a session and survive
 * park and restore; t1's registry is the session's "main" page key, so a
 * session that never had a second tab keeps its keys.
 *
 * Threading: on_attached and on_destroyed run on the browser's reader
 * thread; they add tabs and mark them gone under m->mu and never free one.
 * Everything else is the holder's: it reaps gone tabs (ending their
 * subscriptions first) and moves active, cur and front.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static sess_tab *tab_alloc(sess *s, const char *id, const char *target, const char *session)
{
    sess_tab *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->s = s;
    snprintf(t->id, sizeof t->id, "%s", id);
    snprintf(t->target, sizeof t->target, "%s", target);
    snprintf(t->session, sizeof t->session, "%s", session);
    if (!strcmp(id, "t1"))
        snprintf(t->page_key, sizeof t->page_key, "%s:%s", s->tag, SESS_PAGE);
    else
        snprintf(t->page_key, sizeof t->page_key, "%s:%s", s->tag, id);
    return t;
}

/* Ends t's subscription (waiting for a handler in progress) and frees it. */
static void tab_free(sess *s, sess_tab *t)
{
    if (t->sub && s->lease)
        cdp_unsubscribe(pool_lease_conn(s->lease), t->sub);
    sess_xframes_end(s, t); /* after: no frame is added once the page's events stop */
    reg_world_free(t->world);
    reg_page_free(t->reg);
    free(t->open_url);
    free(t->start_url);
    free(t);
}

int sess_tabs_open(sess *s)
{
    int n = 0;
    pthread_mutex_lock(&s->m->mu);
    for (int i = 0; i < s->n_tabs; i++)
        n += !s->tabs[i]->gone;
    pthread_mutex_unlock(&s->m->mu);
    return n;
}

sess_tab *sess_tab_find(sess *s, const char *id)
{
    sess_tab *hit = NULL;
    pthread_mutex_lock(&s->m->mu);
    for (int i = 0; i < s->n_tabs && !hit; i++)
        if (!s->tabs[i]->gone && !strcmp(s->tabs[i]->id, id))
            hit = s->tabs[i];
    pthread_mutex_unlock(&s->m->mu);
    return hit;
}

/* The number of a tab id ("t12" -> 12), 0 when it is not one. */
static int tab_number(const char *id)
{
    if (id[0] != 't' || !id[1])
        return 0;
    char *end;
    long v = strtol(id + 1, &end, 10);
    return *end || v <= 0 || v > 1000000000 ? 0 : (int)v;
}

/* The registry of tab t, its writes fenced by s's claim (lease.c). */
static int tab_reg_new(sess *s, sess_tab *t)
{
    int rc = reg_page_new(s->m->store, t->page_key, &s->m->cfg.reg, &t->reg);
    if (rc == 0)
        reg_page_set_fence(t->reg, sess_reg_fence(s));
    return rc;
}

int sess_tabs_init(sess *s, const char *first_id)
{
    const char *id = first_id && tab_number(first_id) ? first_id : "t1";
    sess_tab *t = tab_alloc(s, id, pool_lease_target(s->lease), pool_lease_session(s->lease));
    if (!t)
        return RG_ENOMEM;
    t->own_lease_page = 1;
    int rc = tab_reg_new(s, t);
    if (rc < 0) {
        free(t);
        return rc;
    }
    int sub = cdp_subscribe(pool_lease_conn(s->lease), t->session, NULL, sess_page_event, t);
    t->sub = sub > 0 ? sub : 0;
    pthread_mutex_lock(&s->m->mu);
    s->tabs[0] = t;
    s->n_tabs = 1;
    if (s->next_tab <= tab_number(id))
        s->next_tab = tab_number(id) + 1;
    pthread_mutex_unlock(&s->m->mu);
    s->active = s->cur = s->front = t;
    return 0;
}

void sess_tabs_free(sess *s)
{
    pthread_mutex_lock(&s->m->mu);
    int n = s->n_tabs;
    sess_tab *v[SESS_TABS_CAP];
    memcpy(v, s->tabs, sizeof *v * (size_t)n);
    s->n_tabs = 0;
    pthread_mutex_unlock(&s->m->mu);
    for (int i = 0; i < n; i++)
        tab_free(s, v[i]);
    s->active = s->cur = s->front = NULL;
}

void sess_tabs_reap(sess *s)
{
    sess_tab *dead[SESS_TABS_CAP];
    int nd = 0;
    pthread_mutex_lock(&s->m->mu);
    int k = 0;
    for (int i = 0; i < s->n_tabs; i++) {
        if (s->tabs[i]->gone)
            dead[nd++] = s->tabs[i];
        else
            s->tabs[k++] = s->tabs[i];
    }
    s->n_tabs = k;
    sess_tab *last = k ? s->tabs[k - 1] : NULL;
    pthread_mutex_unlock(&s->m->mu);
    for (int i = 0; i < nd; i++) {
        sess_tab *t = dead[i];
        if (t == s->active) {
            /* The one that opened it, else the newest. */
            sess_tab *o = t->opener[0] ? sess_tab_find(s, t->opener) : NULL;
            s->active = o ? o : last;
            sess_forget_ckpt(s);
            s->last_ckpt = 0;
        }
        if (t == s->front)
            s->front = NULL;
        /* A closed tab's refs point at nothing for good. */
        s->m->store->ops->drop(s->m->store, t->page_key);
        tab_free(s, t);
    }
    for (int i = 0; i < nd; i++)
        if (s->cur == dead[i])
            s->cur = s->active;
    if (nd)
        s->last_full_ms = 0; /* the next checkpoint records the tabs as they are now */
}

int sess_tab_prepare(sess *s, sess_tab *t)
{
    int rc = 0;
    if (!t->reg && (rc = tab_reg_new(s, t)) < 0)
        return rc;
    if (!t->world) {
        reg_world *w = NULL;
        if (reg_world_new_attached(pool_lease_conn(s->lease), t->session, SESS_CALL_TIMEOUT_MS,
                                   &w) == 0)
            t->world = w; /* without it, every call finds the world itself */
        sess_xframes_to_world(s, t);
    }
    /* A page in the background has its timers throttled: the one a command acts on is shown. */
    if (s->front != t) {
        cdp_call(pool_lease_conn(s->lease), t->session, "Page.bringToFront", NULL,
                 SESS_CALL_TIMEOUT_MS, NULL);
        s->front = t;
    }
    return 0;
}

/* Sends method with params to the paused page of session child (reader thread). */
static void child_call(sess *s, const char *child, const char *method, const char *params)
{
    cdp_call_async(pool_lease_conn(s->lease), child, method, params, 10000, NULL, NULL);
}

static void report_tab(sess *s, const char *state, const char *tab, const char *url,
                       const char *opener, const char *reason)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "state", state);
    cJSON_AddStringToObject(d, "tab", tab);
    cJSON_AddStringToObject(d, "url", url);
    cJSON_AddStringToObject(d, "opener", opener);
    if (reason)
        cJSON_AddStringToObject(d, "reason", reason);
    sess_report(s, "tab", d);
}

/*
 * A new page of the session's context, attached paused (reader thread): a
 * tab, set up before it runs, or closed when the session has its fill.
 */
static void on_attached(void *ud, const char *session_id, const char *method, const cJSON *params)
{
    sess *s = ud;
    sess_mgr *m = s->m;
    if (!method || session_id ||
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(params, "waitingForDebugger")))
        return;
    const cJSON *ti = cJSON_GetObjectItemCaseSensitive(params, "targetInfo");
    const char *child = sess_jstr(params, "sessionId"), *tid = sess_jstr(ti, "targetId");
    if (!*child || !*tid || strcmp(sess_jstr(ti, "type"), "page") ||
        strcmp(sess_jstr(ti, "browserContextId"), pool_lease_context(s->lease)) ||
        !pool_lease_adopts(s->lease))
        return;
    char opener_tab[SESS_TAB_ID_MAX] = "";
    const char *opener = sess_jstr(ti, "openerId");
    const char *url = sess_jstr(ti, "url");
    char *open_url = NULL;
    pthread_mutex_lock(&m->mu);
    int open = 0;
    for (int i = 0; i < s->n_tabs; i++) {
        sess_tab *o = s->tabs[i];
        open += !o->gone;
        if (*opener && !strcmp(o->target, opener)) {
            snprintf(opener_tab, sizeof opener_tab, "%s", o->id);
            if (!*url && o->open_url)
                open_url = strdup(o->open_url);
        }
    }
    int full = open >= m->cfg.tabs_max || s->n_tabs >= SESS_TABS_CAP;
    sess_tab *t = NULL;
    char id[SESS_TAB_ID_MAX];
    int mine = s->pending && !*opener; /* the holder's sess_tab_open */
    if (mine) {
        s->pending = 0;
        full = s->n_tabs >= SESS_TABS_CAP;
    }
    if (!full) {
        if (mine && s->pending_id[0]) {
            snprintf(id, sizeof id, "%s", s->pending_id);
            if (s->next_tab <= tab_number(id))
                s->next_tab = tab_number(id) + 1;
        } else {
            snprintf(id, sizeof id, "t%d", s->next_tab++);
        }
        t = tab_alloc(s, id, tid, child);
        if (t) {
            snprintf(t->opener, sizeof t->opener, "%s", opener_tab);
            const char *at = open_url ? open_url : url;
            t->start_url = *at ? strdup(at) : NULL;
            s->tabs[s->n_tabs++] = t;
        }
    }
    pthread_mutex_unlock(&m->mu);
    if (open_url)
        url = open_url;
    const char *why = full ? "limit" : "no_memory";
    if (t) {
        /* Its events first: without them its paused requests would wait forever. */
        int sub = cdp_subscribe(pool_lease_conn(s->lease), child, NULL, sess_page_event, t);
        t->sub = sub > 0 ? sub : 0;
        if (sub <= 0) {
            pthread_mutex_lock(&m->mu);
            t->gone = 1; /* the holder frees it */
            pthread_mutex_unlock(&m->mu);
            t = NULL;
            why = "no_room";
        }
    }
    if (!t) {
        /* Closed before it fetches anything. A paused page may hold up the
           renderer it shares with its opener, so it is let run first, with
           every request it makes held (nobody answers them) until it goes. */
        child_call(s, child, "Fetch.enable", "{\"patterns\":[{\"urlPattern\":\"*\"}]}");
        child_call(s, child, "Runtime.runIfWaitingForDebugger", NULL);
        rg_buf q;
        rg_buf_init(&q);
        rg_buf_puts(&q, "{\"targetId\":");
        rg_buf_json_str(&q, tid, strlen(tid));
        rg_buf_puts(&q, "}");
        if (!q.failed)
            sess_browser_call_async(s, "Target.closeTarget", q.data, 5000);
        rg_buf_destroy(&q);
        if (full)
            rg_log(RG_LOG_INFO, "session", "%s: closed a popup past the limit of %d tabs (%s)",
                   s->id, m->cfg.tabs_max, url);
        else
            rg_log(RG_LOG_WARN, "session", "%s: closed a popup: no room for its events (%s)",
                   s->id, url);
        report_tab(s, "closed", "", url, opener_tab, why);
        free(open_url);
        return;
    }
    /* In order on the pipe: all of it is in place before the page runs. */
    const char *fetch = sess_intercept_params(m);
    if (fetch)
        child_call(s, child, "Fetch.enable", fetch);
    child_call(s, child, "Page.enable", NULL);
    t->page_enabled = 1;
    child_call(s, child, "Runtime.enable", NULL);
    child_call(s, child, "Log.enable", NULL);
    child_call(s, child, "Network.enable", SESS_NETWORK_PARAMS);
    /* its frames of other sites, each set up as it comes (xframes.c) */
    child_call(s, child, "Target.setAutoAttach", sess_xframes_params());
    char vp[128];
    snprintf(vp, sizeof vp, "{\"width\":%d,\"height\":%d,\"deviceScaleFactor\":1,\"mobile\":false}",
             s->width, s->height);
    child_call(s, child, "Emulation.setDeviceMetricsOverride", vp);
    if (s->emul_ua)
        child_call(s, child, "Emulation.setUserAgentOverride", s->emul_ua);
    sess_emul_to(s, child); /* the emulate op's */
    rg_buf q;
    rg_buf_init(&q);
    if (s->locale) {
        rg_buf_puts(&q, "{\"locale\":");
        rg_buf_json_str(&q, s->locale, strlen(s->locale));
        rg_buf_puts(&q, "}");
        if (!q.failed)
            child_call(s, child, "Emulation.setLocaleOverride", q.data);
        rg_buf_reset(&q);
    }
    if (s->timezone) {
        rg_buf_puts(&q, "{\"timezoneId\":");
        rg_buf_json_str(&q, s->timezone, strlen(s->timezone));
        rg_buf_puts(&q, "}");
        if (!q.failed)
            child_call(s, child, "Emulation.setTimezoneOverride", q.data);
    }
    rg_buf_destroy(&q);
    child_call(s, child, "Runtime.runIfWaitingForDebugger", NULL);
    __atomic_store_n(&s->tabs_changed, 1, __ATOMIC_SEQ_CST);
    rg_log(RG_LOG_DEBUG, "session", "%s: tab %s opened (%s)", s->id, t->id, url);
    report_tab(s, "opened", t->id, url, opener_tab, NULL);
    free(open_url);
}

/* A page of the browser closed (reader thread): one of s's tabs goes. */
static void on_destroyed(void *ud, const char *session_id, const char *method,
                         const cJSON *params)
{
    sess *s = ud;
    (void)session_id;
    if (!method)
        return;
    const char *tid = sess_jstr(params, "targetId");
    sess_tab *t = NULL;
    int open = 0;
    pthread_mutex_lock(&s->m->mu);
    for (int i = 0; i < s->n_tabs; i++) {
        if (!s->tabs[i]->gone && !strcmp(s->tabs[i]->target, tid)) {
            t = s->tabs[i];
            t->gone = 1;
        }
        open += !s->tabs[i]->gone;
    }
    pthread_mutex_unlock(&s->m->mu);
    if (!t)
        return;
    __atomic_store_n(&s->tabs_changed, 1, __ATOMIC_SEQ_CST);
    report_tab(s, "closed", t->id, "", t->opener, NULL);
    /* The page closed its last tab: the session comes back from its checkpoint. */
    if (!open)
        __atomic_store_n(&s->lost, 1, __ATOMIC_SEQ_CST);
}

void sess_tabs_bind(sess *s)
{
    cdp_conn *conn = pool_lease_conn(s->lease);
    int sub = cdp_subscribe(conn, NULL, "Target.attachedToTarget", on_attached, s);
    s->popup_sub = sub > 0 ? sub : 0;
    sub = cdp_subscribe(conn, NULL, "Target.targetDestroyed", on_destroyed, s);
    s->gone_sub = sub > 0 ? sub : 0;
    pool_lease_adopt(s->lease, 1);
}

void sess_tabs_unbind(sess *s)
{
    if (s->lease) {
        pool_lease_adopt(s->lease, 0);
        cdp_conn *conn = pool_lease_conn(s->lease);
        if (s->popup_sub)
            cdp_unsubscribe(conn, s->popup_sub);
        if (s->gone_sub)
            cdp_unsubscribe(conn, s->gone_sub);
    }
    s->popup_sub = s->gone_sub = 0;
}

int sess_tabs_snapshot(sess *s, sess_tab **v)
{
    int n = 0;
    pthread_mutex_lock(&s->m->mu);
    for (int i = 0; i < s->n_tabs; i++)
        if (!s->tabs[i]->gone)
            v[n++] = s->tabs[i];
    pthread_mutex_unlock(&s->m->mu);
    return n;
}

/* The tab whose page is target (open or not; *gone says), or NULL. */
static sess_tab *tab_by_target(sess *s, const char *target, int *gone)
{
    sess_tab *hit = NULL;
    pthread_mutex_lock(&s->m->mu);
    for (int i = 0; i < s->n_tabs && !hit; i++)
        if (!strcmp(s->tabs[i]->target, target))
            hit = s->tabs[i];
    *gone = hit && hit->gone;
    pthread_mutex_unlock(&s->m->mu);
    return hit;
}

#define TAB_ATTACH_WAIT_MS 5000

int sess_tab_open(sess *s, const char *want, sess_tab **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!s->lease)
        return RG_ECRASHED;
    if (sess_tabs_open(s) >= s->m->cfg.tabs_max)
        return rg_errf(err, errlen, RG_EBADREQ,
                       "the session has %d tabs, the most it may hold (REFGATE_TABS_MAX): close "
                       "one first",
                       s->m->cfg.tabs_max);
    pthread_mutex_lock(&s->m->mu);
    s->pending = 1;
    snprintf(s->pending_id, sizeof s->pending_id, "%s", want ? want : "");
    pthread_mutex_unlock(&s->m->mu);
    const char *ctx = pool_lease_context(s->lease);
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"url\":\"about:blank\",\"browserContextId\":");
    rg_buf_json_str(&q, ctx, strlen(ctx));
    rg_buf_puts(&q, "}");
    cdp_reply r = {0};
    int rc = q.failed ? RG_ENOMEM
                      : sess_browser_call(s, "Target.createTarget", q.data, SESS_CALL_TIMEOUT_MS,
                                          &r);
    rg_buf_destroy(&q);
    char target[64] = "";
    const cJSON *tid = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r.result, "targetId") : NULL;
    if (cJSON_IsString(tid))
        snprintf(target, sizeof target, "%s", tid->valuestring);
    else if (rc == 0)
        rc = RG_EPROTO;
    cdp_reply_free(&r);
    /* The page is adopted on the reader thread (on_attached), as a rule before this returns. */
    sess_tab *t = NULL;
    int gone = 0;
    for (int64_t end = rg_now_ms() + TAB_ATTACH_WAIT_MS; rc == 0 && !t && rg_now_ms() < end;)
        if (!(t = tab_by_target(s, target, &gone)))
            rg_sleep_ms(5);
    if (t && gone && rc == 0) {
        rc = RG_EPOOL; /* adopted, then closed: no room for its events */
        t = NULL;
    }
    pthread_mutex_lock(&s->m->mu);
    s->pending = 0;
    pthread_mutex_unlock(&s->m->mu);
    if (rc == 0 && !t) {
        rc = RG_ETIMEOUT;
        rg_buf_init(&q);
        rg_buf_puts(&q, "{\"targetId\":");
        rg_buf_json_str(&q, target, strlen(target));
        rg_buf_puts(&q, "}");
        if (!q.failed)
            sess_browser_call_async(s, "Target.closeTarget", q.data, 5000);
        rg_buf_destroy(&q);
    }
    if (rc < 0)
        return rg_errf(err, errlen, rc, "the browser did not open a tab (%s)", rg_err_code(rc));
    *out = t;
    return 0;
}

int sess_use_tab(sess *s, const char *tab, char *err, size_t errlen)
{
    if (!s->lease || !s->active)
        return 0; /* nothing here: the command finds the page gone as before */
    sess_tabs_reap(s);
    sess_tab *t = tab ? sess_tab_find(s, tab) : s->active;
    if (!t) {
        char ids[SESS_TABS_CAP * 8] = "";
        sess_tab *v[SESS_TABS_CAP];
        int n = sess_tabs_snapshot(s, v);
        size_t k = 0;
        for (int i = 0; i < n && k + SESS_TAB_ID_MAX + 2 < sizeof ids; i++)
            k += (size_t)snprintf(ids + k, sizeof ids - k, "%s%s", i ? ", " : "", v[i]->id);
        return rg_errf(err, errlen, RG_EBADREQ, "the session has no tab %.16s (its tabs: %s)",
                       tab, ids);
    }
    s->cur = t;
    return sess_tab_prepare(s, t);
}

const char *sess_tab_id(const sess *s)
{
    return s->cur ? s->cur->id : "";
}

/*
 * The URL to show for t, whose page says it is at url: until a document of
 * its own commits (a popup whose page has not answered yet), the one it is
 * opening, as its opener asked for it, instead of "" or "about:blank".
 */
const char *sess_tab_url(sess_tab *t, const char *url)
{
    if (t->start_url && !__atomic_load_n(&t->committed, __ATOMIC_SEQ_CST))
        return t->start_url;
    return url;
}

int sess_tabs_list(sess *s, sess_tab_info **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sess_tabs_reap(s);
    sess_tab *v[SESS_TABS_CAP];
    int k = sess_tabs_snapshot(s, v);
    sess_tab_info *r = calloc((size_t)(k ? k : 1), sizeof *r);
    if (!r)
        return RG_ENOMEM;
    for (int i = 0; i < k; i++) {
        snprintf(r[i].tab, sizeof r[i].tab, "%s", v[i]->id);
        snprintf(r[i].opener, sizeof r[i].opener, "%s", v[i]->opener);
        r[i].active = v[i] == s->active;
        char q[128];
        snprintf(q, sizeof q, "{\"targetId\":\"%s\"}", v[i]->target);
        cdp_reply rep = {0};
        int rc = sess_browser_call(s, "Target.getTargetInfo", q, SESS_CALL_TIMEOUT_MS, &rep);
        const cJSON *ti = rc == 0 ? cJSON_GetObjectItemCaseSensitive(rep.result, "targetInfo")
                                  : NULL;
        r[i].url = strdup(sess_tab_url(v[i], sess_jstr(ti, "url")));
        r[i].title = strdup(sess_jstr(ti, "title"));
        cdp_reply_free(&rep);
        if (!r[i].url || !r[i].title) {
            sess_tab_infos_free(r, (size_t)i + 1);
            return RG_ENOMEM;
        }
    }
    *out = r;
    *n = (size_t)k;
    return 0;
}

void sess_tab_infos_free(sess_tab_info *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].url);
        free(v[i].title);
    }
    free(v);
}

/* Makes t the active tab: the checkpoint asks its page next time. */
static void make_active(sess *s, sess_tab *t)
{
    if (s->active == t)
        return;
    s->active = t;
    sess_forget_ckpt(s);
    s->last_ckpt = 0;
    s->last_full_ms = 0;
}

int sess_tab_new(sess *s, const char *url, int timeout_ms, char *tab, sess_nav *out, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    tab[0] = '\0';
    sess_tabs_reap(s);
    sess_tab *t;
    int rc = sess_tab_open(s, NULL, &t, err, errlen);
    if (rc < 0)
        return rc;
    snprintf(tab, SESS_TAB_ID_MAX, "%s", t->id);
    make_active(s, t);
    s->cur = t;
    if ((rc = sess_tab_prepare(s, t)) < 0)
        return rc;
    return sess_navigate(s, url, "load", timeout_ms, out, err, errlen);
}

int sess_resize(sess *s, int width, int height, char *err, size_t errlen)
{
    char vp[128];
    snprintf(vp, sizeof vp, "{\"width\":%d,\"height\":%d,\"deviceScaleFactor\":1,\"mobile\":false}",
             width, height);
    /* The active tab, woken by the command, answers before the reply; the
       others (maybe frozen) take it without a wait. */
    sess_tab *keep = s->cur;
    s->cur = s->active;
    int rc = sess_call(s, "Emulation.setDeviceMetricsOverride", vp, SESS_CALL_TIMEOUT_MS, NULL);
    s->cur = keep;
    if (rc < 0)
        return rg_errf(err, errlen, rc, "the page did not take the new viewport");
    s->width = width;
    s->height = height;
    sess_tab *v[SESS_TABS_CAP];
    int n = sess_tabs_snapshot(s, v);
    for (int i = 0; i < n; i++)
        if (v[i] != s->active)
            sess_tab_call_async(v[i], "Emulation.setDeviceMetricsOverride", vp,
                                SESS_CALL_TIMEOUT_MS);
    return 0;
}

/* ---- emulation: media, network and position ---- */

/* The emulate op's media args: the CSS media feature each stands for ("" for the media type),
   and the values it takes. */
static const struct media_arg {
    const char *arg, *feature, *values[3];
} media_args[] = {
    {"color_scheme", "prefers-color-scheme", {"light", "dark", NULL}},
    {"reduced_motion", "prefers-reduced-motion", {"reduce", "no-preference", NULL}},
    {"forced_colors", "forced-colors", {"active", "none", NULL}},
    {"contrast", "prefers-contrast", {"more", "no-preference", NULL}},
    {"media", "", {"screen", "print", NULL}},
};
#define N_MEDIA_ARGS (sizeof media_args / sizeof *media_args)

#define EMUL_HEADERS_MAX 32     /* extra request headers */
#define EMUL_HEADER_NAME_MAX 64 /* bytes of a name */
#define EMUL_HEADER_VALUE_MAX 2048

/* Headers the browser writes itself or that have an op of their own. */
static int header_refused(const char *name)
{
    static const char *const own[] = {"host",
                                      "content-length",
                                      "transfer-encoding",
                                      "connection",
                                      "upgrade",
                                      "keep-alive",
                                      "te",
                                      "trailer",
                                      "expect",
                                      "cookie",
                                      NULL};
    for (int i = 0; own[i]; i++)
        if (!strcasecmp(name, own[i]))
            return 1;
    return 0;
}

/* A headers arg: at most EMUL_HEADERS_MAX, each name an HTTP token, each value a string
   without a line break. 0, or RG_EBADREQ with the reason. */
static int check_headers(const cJSON *h, char *err, size_t errlen)
{
    if (cJSON_GetArraySize(h) > EMUL_HEADERS_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "args.headers holds at most %d headers",
                       EMUL_HEADERS_MAX);
    const cJSON *v;
    cJSON_ArrayForEach(v, h)
    {
        const char *k = v->string;
        size_t n = strlen(k);
        int token = n > 0 && n <= EMUL_HEADER_NAME_MAX;
        for (size_t i = 0; token && i < n; i++)
            token = isalnum((unsigned char)k[i]) || strchr("!#$%&'*+-.^_`|~", k[i]);
        if (!token)
            return rg_errf(err, errlen, RG_EBADREQ,
                           "args.headers: \"%.*s\" is not a header name (1 to %d of "
                           "A-Z a-z 0-9 !#$%%&'*+-.^_`|~)",
                           (int)rg_utf8_prefix(k, 64), k, EMUL_HEADER_NAME_MAX);
        if (header_refused(k))
            return rg_errf(err, errlen, RG_EBADREQ,
                           "args.headers: %s is the browser's own to send%s", k,
                           strcasecmp(k, "cookie") ? "" : " (set cookies with cookies.set)");
        if (!cJSON_IsString(v))
            return rg_errf(err, errlen, RG_EBADREQ, "args.headers.%s must be a string", k);
        if (strlen(v->valuestring) > EMUL_HEADER_VALUE_MAX || strpbrk(v->valuestring, "\r\n"))
            return rg_errf(err, errlen, RG_EBADREQ,
                           "args.headers.%s must be at most %d bytes on one line", k,
                           EMUL_HEADER_VALUE_MAX);
    }
    return 0;
}

/* One number of args.geolocation, in [lo, hi] (or absent, unless need): 0, or RG_EBADREQ. */
static int coordinate(const cJSON *g, const char *k, double lo, double hi, int need, char *err,
                      size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, k);
    if (!v && !need)
        return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "args.geolocation.%s must be a number from %g to %g", k, lo, hi);
    return 0;
}

/* A geolocation arg: {} (none), or latitude and longitude, and accuracy in metres. */
static int check_position(const cJSON *g, char *err, size_t errlen)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, g)
    {
        if (strcmp(v->string, "latitude") && strcmp(v->string, "longitude") &&
            strcmp(v->string, "accuracy"))
            return rg_errf(err, errlen, RG_EBADREQ,
                           "args.geolocation takes latitude, longitude and accuracy, not %.*s",
                           (int)rg_utf8_prefix(v->string, 64), v->string);
    }
    if (!cJSON_GetArraySize(g))
        return 0;
    int rc = coordinate(g, "latitude", -90, 90, 1, err, errlen);
    if (rc == 0)
        rc = coordinate(g, "longitude", -180, 180, 1, err, errlen);
    if (rc == 0)
        rc = coordinate(g, "accuracy", 0, 1e7, 0, err, errlen);
    return rc;
}

void sess_emul_calls_free(sess_emul_call *c, int n)
{
    for (int i = 0; i < n; i++)
        free(c[i].params);
}

int sess_emul_calls(const char *state, unsigned kinds, sess_emul_call *out)
{
    cJSON *m = state ? cJSON_Parse(state) : NULL;
    if (!m && (!kinds || !(m = cJSON_CreateObject())))
        return kinds ? RG_ENOMEM : 0;
/* a kind asked for, or (kinds 0) one the state has */
#define WANTED(kind, has) ((kinds & (kind)) || (!kinds && (has)))
    int n = 0, media = 0;
    rg_buf q;
    rg_buf_init(&q);
    for (size_t i = 0; i < N_MEDIA_ARGS; i++)
        media |= cJSON_GetObjectItemCaseSensitive(m, media_args[i].arg) != NULL;
    if (WANTED(SESS_EMUL_MEDIA, media)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "media");
        rg_buf_printf(&q, "{\"media\":\"%s\",\"features\":[",
                      cJSON_IsString(type) ? type->valuestring : "");
        for (size_t i = 0, k = 0; i < N_MEDIA_ARGS; i++) {
            if (!*media_args[i].feature)
                continue;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, media_args[i].arg);
            rg_buf_printf(&q, "%s{\"name\":\"%s\",\"value\":\"%s\"}", k++ ? "," : "",
                          media_args[i].feature, cJSON_IsString(v) ? v->valuestring : "");
        }
        rg_buf_puts(&q, "]}");
        out[n].method = "Emulation.setEmulatedMedia";
        out[n++].params = q.failed ? NULL : strdup(q.data);
    }
    int offline = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "offline"));
    if (WANTED(SESS_EMUL_NETWORK, offline)) {
        rg_buf_reset(&q);
        rg_buf_printf(&q,
                      "{\"offline\":%s,\"latency\":0,\"downloadThroughput\":-1,"
                      "\"uploadThroughput\":-1}",
                      offline ? "true" : "false");
        out[n].method = "Network.emulateNetworkConditions";
        out[n++].params = q.failed ? NULL : strdup(q.data);
    }
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(m, "headers");
    if (WANTED(SESS_EMUL_HEADERS, h != NULL)) {
        char *text = h ? cJSON_PrintUnformatted(h) : NULL;
        rg_buf_reset(&q);
        rg_buf_printf(&q, "{\"headers\":%s}", text ? text : "{}");
        free(text);
        out[n].method = "Network.setExtraHTTPHeaders";
        out[n++].params = q.failed || (h && !text) ? NULL : strdup(q.data);
    }
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(m, "geolocation");
    if (WANTED(SESS_EMUL_POSITION, g != NULL) && !g) {
        out[n].method = "Emulation.clearGeolocationOverride";
        out[n++].params = strdup("{}");
    } else if (WANTED(SESS_EMUL_POSITION, g != NULL)) {
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(g, "accuracy");
        rg_buf_reset(&q);
        rg_buf_printf(&q, "{\"latitude\":%.17g,\"longitude\":%.17g,\"accuracy\":%.17g}",
                      cJSON_GetObjectItemCaseSensitive(g, "latitude")->valuedouble,
                      cJSON_GetObjectItemCaseSensitive(g, "longitude")->valuedouble,
                      cJSON_IsNumber(acc) ? acc->valuedouble : 0.0);
        out[n].method = "Emulation.setGeolocationOverride";
        out[n++].params = q.failed ? NULL : strdup(q.data);
    }
#undef WANTED
    rg_buf_destroy(&q);
    cJSON_Delete(m);
    for (int i = 0; i < n; i++) {
        if (!out[i].params) {
            sess_emul_calls_free(out, n);
            return RG_ENOMEM;
        }
    }
    return n;
}

/* The context's geolocation permission: granted while a position is emulated, else denied (as
   park.c's lock_down leaves it). */
static int position_permission(sess *s, int granted)
{
    return sess_set_permission(s, "{\"name\":\"geolocation\"}", granted ? "granted" : "denied", 1);
}

/* Whether the emulation state text holds a position. */
static int has_position(const char *state)
{
    cJSON *m = state ? cJSON_Parse(state) : NULL;
    int g = cJSON_GetObjectItemCaseSensitive(m, "geolocation") != NULL;
    cJSON_Delete(m);
    return g;
}

int sess_emul_apply(sess *s)
{
    sess_emul_call c[SESS_EMUL_CALLS];
    int n = sess_emul_calls(s->media, 0, c), rc = n < 0 ? n : 0;
    for (int i = 0; rc == 0 && i < n; i++)
        rc = sess_call(s, c[i].method, c[i].params, SESS_CALL_TIMEOUT_MS, NULL);
    if (n > 0)
        sess_emul_calls_free(c, n);
    if (rc == 0 && has_position(s->media))
        rc = position_permission(s, 1);
    return rc;
}

/* The emulate args in changes, checked, on m (the state), and the kinds they name into *kinds:
   0, or RG_EBADREQ (none given, or one refused) with m half changed (it is the caller's copy). */
static int merge_emulation(cJSON *m, const cJSON *changes, unsigned *kinds, char *err,
                           size_t errlen)
{
    int given = 0;
    *kinds = 0;
    for (size_t i = 0; i < N_MEDIA_ARGS; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(changes, media_args[i].arg);
        if (!v)
            continue;
        given++;
        *kinds |= SESS_EMUL_MEDIA;
        const char *const *ok = media_args[i].values;
        int known = cJSON_IsString(v) && !*v->valuestring;
        for (int k = 0; ok[k] && !known; k++)
            known = cJSON_IsString(v) && !strcmp(v->valuestring, ok[k]);
        if (!known)
            return rg_errf(err, errlen, RG_EBADREQ, "args.%s must be %s, %s or \"\" (none)",
                           media_args[i].arg, ok[0], ok[1]);
        cJSON_DeleteItemFromObjectCaseSensitive(m, media_args[i].arg);
        if (*v->valuestring)
            cJSON_AddStringToObject(m, media_args[i].arg, v->valuestring);
    }
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(changes, "offline");
    if (off) {
        given++;
        *kinds |= SESS_EMUL_NETWORK;
        if (!cJSON_IsBool(off))
            return rg_errf(err, errlen, RG_EBADREQ, "args.offline must be a boolean");
        cJSON_DeleteItemFromObjectCaseSensitive(m, "offline");
        if (cJSON_IsTrue(off))
            cJSON_AddTrueToObject(m, "offline");
    }
    static const char *const maps[] = {"headers", "geolocation"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(changes, maps[i]);
        if (!v)
            continue;
        given++;
        *kinds |= i == 0 ? SESS_EMUL_HEADERS : SESS_EMUL_POSITION;
        int rc = !cJSON_IsObject(v)
                     ? rg_errf(err, errlen, RG_EBADREQ, "args.%s must be a map", maps[i])
                 : i == 0 ? check_headers(v, err, errlen)
                          : check_position(v, err, errlen);
        if (rc < 0)
            return rc;
        cJSON_DeleteItemFromObjectCaseSensitive(m, maps[i]);
        cJSON *copy = cJSON_GetArraySize(v) ? cJSON_Duplicate(v, 1) : NULL;
        if (cJSON_GetArraySize(v) && (!copy || !cJSON_AddItemToObject(m, maps[i], copy))) {
            cJSON_Delete(copy);
            return RG_ENOMEM;
        }
    }
    if (!given)
        return rg_errf(err, errlen, RG_EBADREQ,
                       "emulate needs one of color_scheme, reduced_motion, forced_colors, "
                       "contrast, media, offline, headers or geolocation");
    return 0;
}

/* Sends the calls to every tab (but the active one, unless with_active), and to the frames of
   other sites and the workers of every tab (their own DevTools sessions), without waiting. */
static void emulate_elsewhere(sess *s, const sess_emul_call *c, int n, int with_active)
{
    sess_tab *v[SESS_TABS_CAP];
    int nt = sess_tabs_snapshot(s, v);
    for (int i = 0; i < nt; i++) {
        for (int k = 0; k < n && (with_active || v[i] != s->active); k++)
            sess_tab_call_async(v[i], c[k].method, c[k].params, SESS_CALL_TIMEOUT_MS);
        char sids[SESS_XFRAMES_MAX][64];
        int nx = 0;
        pthread_mutex_lock(&s->m->mu);
        for (int x = 0; x < v[i]->n_xf && x < SESS_XFRAMES_MAX; x++)
            snprintf(sids[nx++], sizeof sids[0], "%s", v[i]->xf[x].session);
        pthread_mutex_unlock(&s->m->mu);
        for (int x = 0; x < nx; x++)
            for (int k = 0; k < n; k++)
                cdp_call_async(pool_lease_conn(s->lease), sids[x], c[k].method, c[k].params,
                               SESS_CALL_TIMEOUT_MS, NULL, NULL);
    }
}

int sess_emulate(sess *s, const cJSON *changes, cJSON **now, char *err, size_t errlen)
{
    *now = NULL;
    cJSON *m = s->media ? cJSON_Parse(s->media) : cJSON_CreateObject();
    if (!m)
        return RG_ENOMEM;
    /* every value checked before anything changes; only the kinds named are sent */
    unsigned kinds;
    int rc = merge_emulation(m, changes, &kinds, err, errlen);
    char *text = NULL;
    if (rc == 0 && cJSON_GetArraySize(m) && !(text = cJSON_PrintUnformatted(m)))
        rc = RG_ENOMEM;
    sess_emul_call c[SESS_EMUL_CALLS];
    int n = rc == 0 ? sess_emul_calls(text, kinds, c) : 0;
    if (n < 0)
        rc = n;
    if (rc < 0) {
        free(text);
        cJSON_Delete(m);
        return rc;
    }
    int position = has_position(text), had = has_position(s->media);
    sess_tab *keep = s->cur;
    s->cur = s->active;
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = sess_call(s, c[i].method, c[i].params, SESS_CALL_TIMEOUT_MS, NULL);
        if (rc < 0)
            rg_errf(err, errlen, rc, "the page did not take %s (%s)", c[i].method, rg_err_code(rc));
    }
    if (rc == 0 && position != had && (rc = position_permission(s, position)) < 0)
        rg_errf(err, errlen, rc, "the browser did not take the permission (%s)", rg_err_code(rc));
    if (rc < 0) {
        /* back to what was emulated before, on the page that may have taken part of it */
        sess_emul_call b[SESS_EMUL_CALLS];
        int nb = sess_emul_calls(s->media, kinds, b);
        for (int i = 0; i < nb; i++)
            sess_call_async(s, b[i].method, b[i].params, SESS_CALL_TIMEOUT_MS);
        if (nb > 0)
            sess_emul_calls_free(b, nb);
        s->cur = keep;
        sess_emul_calls_free(c, n);
        free(text);
        cJSON_Delete(m);
        return rc == RG_ECDP ? RG_EBADREQ : rc;
    }
    s->cur = keep;
    /* new tabs and frames read it on the browser's reader thread (on_attached, xframes.c) */
    pthread_mutex_lock(&s->m->mu);
    char *was = s->media;
    s->media = text;
    s->media_gen++;
    pthread_mutex_unlock(&s->m->mu);
    free(was);
    emulate_elsewhere(s, c, n, 0);
    sess_emul_calls_free(c, n);
    *now = m;
    return 0;
}

/* Sets s->media to state (a copy; NULL for none) under m->mu. */
static void set_state(sess *s, const char *state)
{
    char *copy = state ? strdup(state) : NULL;
    pthread_mutex_lock(&s->m->mu);
    char *was = s->media;
    s->media = copy;
    s->media_gen++;
    pthread_mutex_unlock(&s->m->mu);
    free(was);
}

int sess_emul_restore_begin(sess *s, const char *state)
{
    cJSON *m = state ? cJSON_Parse(state) : NULL;
    int offline = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "offline"));
    char *online = NULL;
    if (offline) {
        cJSON_DeleteItemFromObjectCaseSensitive(m, "offline");
        online = cJSON_GetArraySize(m) ? cJSON_PrintUnformatted(m) : NULL;
    }
    set_state(s, offline ? online : state);
    free(online);
    cJSON_Delete(m);
    return offline;
}

void sess_emul_restore_end(sess *s, const char *state)
{
    set_state(s, state);
    sess_emul_call c[SESS_EMUL_CALLS];
    int n = sess_emul_calls(state, SESS_EMUL_NETWORK, c);
    if (n > 0) {
        emulate_elsewhere(s, c, n, 1);
        sess_emul_calls_free(c, n);
    }
}

void sess_emul_to(sess *s, const char *session_id)
{
    pthread_mutex_lock(&s->m->mu);
    char *state = s->media ? strdup(s->media) : NULL;
    pthread_mutex_unlock(&s->m->mu);
    sess_emul_call c[SESS_EMUL_CALLS];
    int n = state ? sess_emul_calls(state, 0, c) : 0;
    for (int i = 0; i < n; i++)
        cdp_call_async(pool_lease_conn(s->lease), session_id, c[i].method, c[i].params, 10000,
                       NULL, NULL);
    if (n > 0)
        sess_emul_calls_free(c, n);
    free(state);
}

int sess_tab_select(sess *s, const char *tab, char *err, size_t errlen)
{
    int rc = sess_use_tab(s, tab, err, errlen);
    if (rc < 0)
        return rc;
    make_active(s, s->cur);
    return 0;
}

int sess_tab_close(sess *s, const char *tab, char *err, size_t errlen)
{
    sess_tabs_reap(s);
    sess_tab *t = sess_tab_find(s, tab);
    if (!t)
        return sess_use_tab(s, tab, err, errlen); /* its error names the tabs */
    if (sess_tabs_open(s) <= 1)
        return rg_errf(err, errlen, RG_EBADREQ,
                       "%s is the session's last tab: close the session instead", tab);
    char q[128];
    snprintf(q, sizeof q, "{\"targetId\":\"%s\"}", t->target);
    int rc = sess_browser_call(s, "Target.closeTarget", q, SESS_CALL_TIMEOUT_MS, NULL);
    if (rc < 0 && rc != RG_ECDP)
        return rg_errf(err, errlen, rc, "the browser did not close the tab (%s)", rg_err_code(rc));
    int was = 0;
    pthread_mutex_lock(&s->m->mu);
    was = t->gone;
    t->gone = 1;
    pthread_mutex_unlock(&s->m->mu);
    if (!was)
        report_tab(s, "closed", t->id, "", t->opener, NULL);
    sess_tabs_reap(s);
    s->cur = s->active;
    return 0;
}

int sess_ref_tab(sess *s, const char *ref, char *tab, size_t len)
{
    sess_tab *v[SESS_TABS_CAP];
    int n = sess_tabs_snapshot(s, v);
    for (int i = 0; i < n; i++) {
        sess_tab *t = v[i];
        if (t == s->cur)
            continue;
        if (!t->reg && tab_reg_new(s, t) < 0)
            continue;
        if (reg_page_has(t->reg, ref) == 1) {
            snprintf(tab, len, "%s", t->id);
            return 1;
        }
    }
    return 0;
}
