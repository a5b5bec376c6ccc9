/*
 * state.c - a session's storage state in the shape Playwright writes it
 * (browserContext.storageState(): {cookies, origins}), read out for the
 * session.state op and put into a new session by session.create's state,
 * so that an agent logs in once and starts later sessions logged in, and
 * a state file saved with Playwright or agent-browser works here too.
 *
 * Out: every cookie of the context (Storage.getCookies), and the
 * localStorage of each open tab's top document (one entry an origin, the
 * active tab's first). Storage of frames and of origins no tab shows now
 * is not read: the browser keeps it, but only a document of its origin
 * can read it.
 *
 * In: the cookies with Storage.setCookies; each origin's localStorage the
 * way Playwright does it, in a document of that origin: the page is sent
 * to the origin's "/" and the request is answered here with an empty page
 * (Fetch.fulfillRequest, so nothing leaves the browser and the URL policy
 * is not asked), the items are set, and the page goes back to about:blank
 * with its history reset. This runs in sess_create before the session is
 * written anywhere: a state the browser refuses makes nothing.
 *
 * The cookies ops work on a live session's context in the same shape:
 * read (Storage.getCookies, or Network.getCookies for what given URLs
 * would be sent), one set (Storage.setCookies), and deleted by name,
 * domain and path (Network.deleteCookies, one at a time) or all at once
 * (Storage.clearCookies). The storage ops read and change the active tab's
 * localStorage or sessionStorage in its page.
 *
 * Threading: the session's holder only.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATE_COOKIES_MAX 3000
#define STATE_ORIGINS_MAX 16
#define STATE_ITEMS_MAX 2000

static const char *const SAME_SITE[] = {"Strict", "Lax", "None"};

/* Is ss one of the SameSite values a cookie may carry? */
static int same_site_known(const char *ss)
{
    for (size_t k = 0; k < sizeof SAME_SITE / sizeof *SAME_SITE; k++)
        if (!strcmp(ss, SAME_SITE[k]))
            return 1;
    return 0;
}

/* A key of cookie i that must pass is (what it must be) when present: 0, or RG_EBADREQ. */
static int want(const cJSON *c, const char *k, int (*is)(const cJSON *), const char *what, size_t i,
                char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, k);
    if (!v || is(v))
        return 0;
    return rg_errf(err, errlen, RG_EBADREQ, "args.state.cookies[%zu].%s must be %s", i, k, what);
}

static int is_str(const cJSON *v)
{
    return cJSON_IsString(v);
}

static int is_num(const cJSON *v)
{
    return cJSON_IsNumber(v);
}

static int is_bool(const cJSON *v)
{
    return cJSON_IsBool(v);
}

/* "http(s)://host[:port]" with nothing after it. */
static int is_origin(const char *o)
{
    const char *h = !strncmp(o, "https://", 8) ? o + 8 : !strncmp(o, "http://", 7) ? o + 7 : NULL;
    return h && *h && !strpbrk(h, "/?#@ \\") && strlen(o) < 300;
}

static int check_cookie(const cJSON *c, size_t i, char *err, size_t errlen)
{
    if (!cJSON_IsObject(c))
        return rg_errf(err, errlen, RG_EBADREQ, "args.state.cookies[%zu] must be a map", i);
    static const char *const strs[] = {"name", "value", "domain", "path", "url"};
    for (size_t k = 0; k < sizeof strs / sizeof *strs; k++)
        if (want(c, strs[k], is_str, "a string", i, err, errlen) < 0)
            return RG_EBADREQ;
    if (want(c, "expires", is_num, "a number (Unix seconds, -1 for a session cookie)", i, err,
             errlen) < 0 ||
        want(c, "httpOnly", is_bool, "true or false", i, err, errlen) < 0 ||
        want(c, "secure", is_bool, "true or false", i, err, errlen) < 0 ||
        want(c, "sameSite", is_str, "Strict, Lax or None", i, err, errlen) < 0)
        return RG_EBADREQ;
    if (!cJSON_GetObjectItemCaseSensitive(c, "name") ||
        !cJSON_GetObjectItemCaseSensitive(c, "value"))
        return rg_errf(err, errlen, RG_EBADREQ, "args.state.cookies[%zu] needs a name and a value",
                       i);
    if (!cJSON_GetObjectItemCaseSensitive(c, "domain") &&
        !cJSON_GetObjectItemCaseSensitive(c, "url"))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "args.state.cookies[%zu] needs a domain (and path) or a url", i);
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(c, "sameSite");
    if (ss && !same_site_known(ss->valuestring))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "args.state.cookies[%zu].sameSite must be Strict, Lax or None", i);
    return 0;
}

static int check_origin(const cJSON *o, size_t i, char *err, size_t errlen)
{
    const cJSON *origin = cJSON_GetObjectItemCaseSensitive(o, "origin");
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(o, "localStorage");
    if (!cJSON_IsObject(o) || !cJSON_IsString(origin) || !is_origin(origin->valuestring))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "args.state.origins[%zu] must be a map with an origin "
                       "(http or https, scheme://host[:port])",
                       i);
    if (ls && (!cJSON_IsArray(ls) || cJSON_GetArraySize(ls) > STATE_ITEMS_MAX))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "args.state.origins[%zu].localStorage must be an array of at most %d "
                       "{name, value}",
                       i, STATE_ITEMS_MAX);
    const cJSON *it;
    cJSON_ArrayForEach(it, ls)
    {
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "name")) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "value")))
            return rg_errf(err, errlen, RG_EBADREQ,
                           "args.state.origins[%zu].localStorage holds {name, value} strings", i);
    }
    return 0;
}

int sess_state_check(const cJSON *state, char *err, size_t errlen)
{
    if (!cJSON_IsObject(state))
        return rg_errf(err, errlen, RG_EBADREQ, "args.state must be a map");
    const cJSON *e;
    cJSON_ArrayForEach(e, state)
    {
        if (strcmp(e->string, "cookies") && strcmp(e->string, "origins"))
            return rg_errf(err, errlen, RG_EBADREQ,
                           "args.state takes cookies and origins only, not %.40s", e->string);
    }
    const cJSON *cookies = cJSON_GetObjectItemCaseSensitive(state, "cookies");
    const cJSON *origins = cJSON_GetObjectItemCaseSensitive(state, "origins");
    if (cookies && (!cJSON_IsArray(cookies) || cJSON_GetArraySize(cookies) > STATE_COOKIES_MAX))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "args.state.cookies must be an array of at most %d cookies",
                       STATE_COOKIES_MAX);
    if (origins && (!cJSON_IsArray(origins) || cJSON_GetArraySize(origins) > STATE_ORIGINS_MAX))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "args.state.origins must be an array of at most %d origins",
                       STATE_ORIGINS_MAX);
    size_t i = 0;
    cJSON_ArrayForEach(e, cookies)
    {
        if (check_cookie(e, i++, err, errlen) < 0)
            return RG_EBADREQ;
    }
    i = 0;
    cJSON_ArrayForEach(e, origins)
    {
        if (check_origin(e, i++, err, errlen) < 0)
            return RG_EBADREQ;
    }
    return 0;
}

/* ---- in ---- */

/* Playwright's cookies (checked) as Storage.setCookies' cookies. */
static char *cookie_params_of(const cJSON *cookies)
{
    static const char *const keep[] = {"name", "value",  "domain",   "path",
                                       "url",  "secure", "httpOnly", "sameSite"};
    return sess_cookie_params(cookies, keep, sizeof keep / sizeof *keep);
}

/* The empty page a seeded origin's document is answered with. */
#define EMPTY_PAGE_B64                                                                             \
    "PCFkb2N0eXBlIGh0bWw+PHRpdGxlPjwvdGl0bGU+" /* <!doctype html><title></title> */

/* The page goes to url with location.replace (a script's navigation, so the
   blank page Chromium gave it keeps no entry in its history); wait: until
   the reply (which comes before the navigation ends). */
static int go_replacing(sess *s, const char *url, int wait)
{
    rg_buf e, q;
    rg_buf_init(&e);
    rg_buf_init(&q);
    rg_buf_puts(&e, "location.replace(");
    rg_buf_json_str(&e, url, strlen(url));
    rg_buf_puts(&e, ")");
    rg_buf_puts(&q, "{\"expression\":");
    rg_buf_json_str(&q, e.data ? e.data : "", e.len);
    rg_buf_puts(&q, "}");
    int rc = e.failed || q.failed ? RG_ENOMEM
             : wait ? sess_call(s, "Runtime.evaluate", q.data, SESS_CALL_TIMEOUT_MS, NULL)
                    : sess_call_async(s, "Runtime.evaluate", q.data, SESS_CALL_TIMEOUT_MS);
    rg_buf_destroy(&e);
    rg_buf_destroy(&q);
    return rc;
}

/* The paused request of the seeding navigation to url, found among the
   page's paused requests (without the egress proxy every request pauses,
   and the page's own handler answers the others), on the reader thread. */
struct doc_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *url;
    char rid[128]; /* "" until it came */
    int failed;    /* the connection failed */
};

static void on_paused(void *ud, const char *session_id, const char *method, const cJSON *params)
{
    (void)session_id;
    struct doc_wait *w = ud;
    pthread_mutex_lock(&w->mu);
    if (!method) {
        w->failed = 1;
    } else if (!w->rid[0] && !strcmp(sess_jstr(params, "resourceType"), "Document") &&
               !strcmp(sess_jstr(cJSON_GetObjectItemCaseSensitive(params, "request"), "url"),
                       w->url)) {
        snprintf(w->rid, sizeof w->rid, "%s", sess_jstr(params, "requestId"));
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Waits up to timeout_ms for w's request: 0, RG_ETIMEOUT or RG_ECRASHED. */
static int doc_wait_for(struct doc_wait *w, int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    while (!w->rid[0] && !w->failed && rc == 0)
        rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    int out = w->rid[0] ? 0 : w->failed ? RG_ECRASHED : RG_ETIMEOUT;
    pthread_mutex_unlock(&w->mu);
    return out;
}

/* One origin's localStorage items, in a document of that origin. */
static int seed_origin(sess *s, const char *origin, const cJSON *items, char *err, size_t errlen)
{
    char url[320];
    snprintf(url, sizeof url, "%s/", origin);
    struct doc_wait w = {.url = url};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    cdp_conn *conn = s->lease && s->cur ? pool_lease_conn(s->lease) : NULL;
    int sub = conn ? cdp_subscribe(conn, s->cur->session, "Fetch.requestPaused", on_paused, &w)
                   : RG_ECRASHED;
    cdp_waiter *loaded = NULL;
    int rc = sub < 0 ? sub : sess_page_waiter(s, "Page.loadEventFired", &loaded);
    if (rc == 0)
        rc = go_replacing(s, url, 0);
    if (rc == 0)
        rc = doc_wait_for(&w, SESS_CALL_TIMEOUT_MS);
    if (sub > 0)
        cdp_unsubscribe(conn, sub);
    rg_buf q;
    rg_buf_init(&q);
    if (rc == 0) {
        rg_buf_puts(&q, "{\"requestId\":");
        rg_buf_json_str(&q, w.rid, strlen(w.rid));
        rg_buf_puts(&q, ",\"responseCode\":200,\"responseHeaders\":[{\"name\":\"Content-Type\","
                        "\"value\":\"text/html\"}],\"body\":\"" EMPTY_PAGE_B64 "\"}");
        rc = q.failed ? RG_ENOMEM
                      : sess_call(s, "Fetch.fulfillRequest", q.data, SESS_CALL_TIMEOUT_MS, NULL);
    }
    if (rc == 0)
        rc = cdp_waiter_wait(loaded, SESS_CALL_TIMEOUT_MS, NULL);
    cdp_waiter_free(loaded);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    if (rc == 0) {
        /* The items go in as JSON text for JSON.parse (a "__proto__" name stays an item). */
        char *j = items ? cJSON_PrintUnformatted(items) : strdup("[]");
        rg_buf e;
        rg_buf_init(&e);
        rg_buf_puts(&e, "(function(o,j){if(location.origin!==o)return 0;"
                        "var v=JSON.parse(j);for(var i=0;i<v.length;i++)"
                        "localStorage.setItem(v[i].name,v[i].value);return 1})(");
        rg_buf_json_str(&e, origin, strlen(origin));
        rg_buf_puts(&e, ",");
        rg_buf_json_str_or_null(&e, j);
        rg_buf_puts(&e, ")");
        int nomem = !j || e.failed;
        free(j);
        cJSON *ok = NULL;
        rc = nomem ? RG_ENOMEM : sess_eval_json(s, e.data, SESS_CALL_TIMEOUT_MS, &ok);
        if (rc == 0 && !(cJSON_IsNumber(ok) && ok->valueint == 1))
            rc = RG_EINTERNAL;
        cJSON_Delete(ok);
        rg_buf_destroy(&e);
    }
    rg_buf_destroy(&q);
    if (rc < 0)
        snprintf(err, errlen, "the localStorage of %.200s could not be put in (%s)", origin,
                 rg_err_code(rc));
    return rc;
}

int sess_state_apply(sess *s, const cJSON *state, char *err, size_t errlen)
{
    const cJSON *cookies = cJSON_GetObjectItemCaseSensitive(state, "cookies");
    const cJSON *origins = cJSON_GetObjectItemCaseSensitive(state, "origins");
    int rc = 0;
    if (cJSON_GetArraySize(cookies) > 0) {
        char *params = cookie_params_of(cookies);
        cdp_reply r = {0};
        rc = params ? sess_context_call(s, "Storage.setCookies", params, &r) : RG_ENOMEM;
        if (rc < 0)
            snprintf(err, errlen, "the browser refused the state's cookies: %.200s",
                     r.error[0] ? r.error : rg_err_code(rc));
        if (rc == RG_ECDP)
            rc = RG_EBADREQ; /* a cookie it will not take, not a failure of ours */
        cdp_reply_free(&r);
        free(params);
    }
    if (rc < 0 || cJSON_GetArraySize(origins) == 0)
        return rc;
    /* The origins' documents are answered here: Fetch pauses the page's
       documents (with the egress proxy it was off), and the page's own
       handler leaves them to seed_origin meanwhile (intercept.c). */
    int own_fetch = sess_intercept_params(s->m) == NULL;
    if ((rc = sess_enable_page(s)) == 0 && own_fetch)
        rc = sess_call(s, "Fetch.enable",
                       "{\"patterns\":[{\"urlPattern\":\"*\",\"resourceType\":\"Document\"}]}",
                       SESS_CALL_TIMEOUT_MS, NULL);
    __atomic_store_n(&s->seeding, 1, __ATOMIC_SEQ_CST);
    const cJSON *o;
    cJSON_ArrayForEach(o, origins)
    {
        if (rc < 0)
            break;
        rc = seed_origin(s, cJSON_GetObjectItemCaseSensitive(o, "origin")->valuestring,
                         cJSON_GetObjectItemCaseSensitive(o, "localStorage"), err, errlen);
    }
    __atomic_store_n(&s->seeding, 0, __ATOMIC_SEQ_CST);
    if (own_fetch)
        sess_call(s, "Fetch.disable", NULL, SESS_CALL_TIMEOUT_MS, NULL);
    /* Back to a blank page, in the same history entry (Page.resetNavigationHistory
       is refused on a tab's own session, so no entry is made to begin with). */
    if (rc == 0) {
        cdp_waiter *loaded = NULL;
        rc = sess_page_waiter(s, "Page.loadEventFired", &loaded);
        if (rc == 0)
            rc = go_replacing(s, "about:blank", 1);
        if (rc == 0)
            rc = cdp_waiter_wait(loaded, SESS_CALL_TIMEOUT_MS, NULL);
        cdp_waiter_free(loaded);
    }
    sess_netlog_clear(s);
    if (rc < 0 && !err[0])
        snprintf(err, errlen, "the state's storage could not be put in (%s)", rg_err_code(rc));
    return rc;
}

/* ---- out ---- */

/* Storage.getCookies' cookies in Playwright's shape. */
static cJSON *cookies_out(const cJSON *cookies)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *c;
    cJSON_ArrayForEach(c, cookies)
    {
        cJSON *p = cJSON_CreateObject();
        if (!p)
            break;
        cJSON_AddItemToArray(out, p);
        static const char *const strs[] = {"name", "value", "domain", "path"};
        for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
            cJSON_AddStringToObject(p, strs[i], sess_jstr(c, strs[i]));
        const cJSON *exp = cJSON_GetObjectItemCaseSensitive(c, "expires");
        int session = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "session"));
        cJSON_AddNumberToObject(
            p, "expires",
            !session && cJSON_IsNumber(exp) && exp->valuedouble > 0 ? exp->valuedouble : -1);
        cJSON_AddBoolToObject(p, "httpOnly",
                              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "httpOnly")));
        cJSON_AddBoolToObject(p, "secure",
                              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "secure")));
        const char *ss = sess_jstr(c, "sameSite");
        cJSON_AddStringToObject(p, "sameSite", *ss ? ss : "Lax");
    }
    return out;
}

static const char storage_js[] =
    "(function(){var r={o:location.origin,ls:[]};try{for(var i=0;i<localStorage.length;i++){"
    "var k=localStorage.key(i);r.ls.push({name:k,value:localStorage.getItem(k)})}}catch(e){}"
    "return r})()";

int sess_state_get(sess *s, cJSON **out)
{
    *out = NULL;
    cdp_reply r = {0};
    int rc = sess_context_call(s, "Storage.getCookies", NULL, &r);
    cJSON *st = rc == 0 ? cJSON_CreateObject() : NULL;
    if (rc == 0 && !st)
        rc = RG_ENOMEM;
    if (st) {
        cJSON_AddItemToObject(st, "cookies",
                              cookies_out(cJSON_GetObjectItemCaseSensitive(r.result, "cookies")));
        cJSON *origins = cJSON_AddArrayToObject(st, "origins");
        sess_tab *v[SESS_TABS_CAP];
        int n = sess_tabs_snapshot(s, v);
        sess_tab *keep = s->cur;
        /* the active tab first: its origin's entry is the one kept */
        for (int k = -1; k < n; k++) {
            if (k >= 0 && v[k] == keep)
                continue;
            s->cur = k < 0 ? keep : v[k];
            cJSON *got = NULL;
            if (!s->cur || sess_eval_json(s, storage_js, SESS_CALL_TIMEOUT_MS / 2, &got) < 0)
                continue; /* a tab that does not answer keeps its storage to itself */
            const char *o = sess_jstr(got, "o");
            cJSON *ls = cJSON_GetObjectItemCaseSensitive(got, "ls");
            int seen = !is_origin(o) || cJSON_GetArraySize(ls) == 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, origins)
            {
                seen |= !strcmp(sess_jstr(e, "origin"), o);
            }
            if (!seen) {
                cJSON *entry = cJSON_CreateObject();
                cJSON_AddStringToObject(entry, "origin", o);
                cJSON_AddItemToObject(entry, "localStorage",
                                      cJSON_DetachItemFromObjectCaseSensitive(got, "ls"));
                cJSON_AddItemToArray(origins, entry);
            }
            cJSON_Delete(got);
        }
        s->cur = keep;
    }
    cdp_reply_free(&r);
    if (rc == 0)
        *out = st;
    return rc;
}

/* ---- the cookies ops ---- */

#define COOKIE_URLS_MAX 50

/* Does cookie c (Storage.getCookies') pass the filters (NULL: any)? */
static int cookie_matches(const cJSON *c, const char *name, const char *domain, const char *path)
{
    return (!name || !strcmp(sess_jstr(c, "name"), name)) &&
           (!domain || !strcmp(sess_jstr(c, "domain"), domain)) &&
           (!path || !strcmp(sess_jstr(c, "path"), path));
}

/* The cookies of the browser's reply r that pass the filters, in Playwright's shape. */
static cJSON *cookies_matching(const cdp_reply *r, const char *name, const char *domain,
                               const char *path)
{
    cJSON *keep = cJSON_CreateArray();
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r->result, "cookies"))
    {
        if (keep && cookie_matches(c, name, domain, path))
            cJSON_AddItemReferenceToArray(keep, (cJSON *)c);
    }
    cJSON *out = keep ? cookies_out(keep) : NULL;
    cJSON_Delete(keep);
    return out;
}

int sess_cookies_get(sess *s, const cJSON *urls, const char *name, cJSON **out, char *err,
                     size_t errlen)
{
    *out = NULL;
    int n = cJSON_GetArraySize(urls);
    if (n > COOKIE_URLS_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "args.urls takes at most %d URLs",
                       COOKIE_URLS_MAX);
    cdp_reply r = {0};
    int rc;
    if (n == 0) {
        rc = sess_context_call(s, "Storage.getCookies", NULL, &r);
    } else {
        /* The cookies the page's context would send to those URLs. */
        char *list = cJSON_PrintUnformatted(urls);
        rg_buf q;
        rg_buf_init(&q);
        rg_buf_puts(&q, "{\"urls\":");
        rg_buf_puts(&q, list ? list : "[]");
        rg_buf_puts(&q, "}");
        rc = !list || q.failed
                 ? RG_ENOMEM
                 : sess_call(s, "Network.getCookies", q.data, SESS_CALL_TIMEOUT_MS, &r);
        free(list);
        rg_buf_destroy(&q);
        if (rc == RG_ECDP)
            rc = rg_errf(err, errlen, RG_EBADREQ, "the browser refused args.urls: %.200s", r.error);
    }
    if (rc == 0 && !(*out = cookies_matching(&r, name, NULL, NULL)))
        rc = RG_ENOMEM;
    cdp_reply_free(&r);
    return rc;
}

/* "https://host[:port]" of the active tab's page into o, or "" when it has none. */
static void page_origin(sess *s, char *o, size_t len)
{
    cJSON *got = NULL;
    o[0] = '\0';
    s->cur = s->active; /* not a page op: no tab was chosen for it */
    if (sess_eval_json(s, "location.origin", SESS_CALL_TIMEOUT_MS, &got) == 0 &&
        cJSON_IsString(got) && is_origin(got->valuestring))
        snprintf(o, len, "%s", got->valuestring);
    cJSON_Delete(got);
}

int sess_cookie_set(sess *s, const cJSON *args, char *err, size_t errlen)
{
    /* The op's snake_case arguments as a cookie of Playwright's shape. */
    static const char *const map[][2] = {
        {"name", "name"},         {"value", "value"},       {"url", "url"},
        {"domain", "domain"},     {"path", "path"},         {"http_only", "httpOnly"},
        {"secure", "secure"},     {"same_site", "sameSite"}};
    cJSON *c = cJSON_CreateObject(), *list = cJSON_CreateArray();
    if (!c || !list) {
        cJSON_Delete(c);
        cJSON_Delete(list);
        return RG_ENOMEM;
    }
    cJSON_AddItemToArray(list, c);
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, map[i][0]);
        if (v)
            cJSON_AddItemToObject(c, map[i][1], cJSON_Duplicate(v, 1));
    }
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(args, "expires");
    if (cJSON_IsNumber(exp) && exp->valuedouble > 0)
        cJSON_AddNumberToObject(c, "expires", exp->valuedouble);
    int rc = 0;
    const char *name = sess_jstr(c, "name"), *ss = sess_jstr(c, "sameSite");
    if (!*name)
        rc = rg_errf(err, errlen, RG_EBADREQ, "args.name must not be empty");
    if (rc == 0 && *ss && !same_site_known(ss))
        rc = rg_errf(err, errlen, RG_EBADREQ, "args.same_site must be Strict, Lax or None");
    if (rc == 0 && !cJSON_GetObjectItemCaseSensitive(c, "url") &&
        !cJSON_GetObjectItemCaseSensitive(c, "domain")) {
        /* Neither: the page's own site, as agent-browser and Playwright's MCP do. */
        char o[320];
        page_origin(s, o, sizeof o);
        if (!o[0])
            rc = rg_errf(err, errlen, RG_EBADREQ,
                         "give args.url or args.domain: the page has no http(s) origin to "
                         "set the cookie for");
        else
            cJSON_AddItemToObject(c, "url", cJSON_CreateString(strcat(o, "/")));
    }
    char *params = rc == 0 ? cookie_params_of(list) : NULL;
    if (rc == 0 && !params)
        rc = RG_ENOMEM;
    cdp_reply r = {0};
    if (rc == 0 && (rc = sess_context_call(s, "Storage.setCookies", params, &r)) == RG_ECDP)
        rc = rg_errf(err, errlen, RG_EBADREQ, "the browser refused the cookie: %.200s", r.error);
    cdp_reply_free(&r);
    free(params);
    cJSON_Delete(list);
    return rc;
}

int sess_cookies_clear(sess *s, const char *name, const char *domain, const char *path, int *n)
{
    *n = 0;
    cdp_reply r = {0};
    int rc = sess_context_call(s, "Storage.getCookies", NULL, &r);
    const cJSON *all = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r.result, "cookies") : NULL;
    const cJSON *c;
    cJSON_ArrayForEach(c, all)
    {
        if (cookie_matches(c, name, domain, path))
            ++*n;
    }
    if (rc == 0 && !name && !domain && !path) {
        cdp_reply_free(&r);
        rc = sess_context_call(s, "Storage.clearCookies", NULL, &r);
        cdp_reply_free(&r);
        if (rc < 0)
            *n = 0;
        return rc;
    }
    /* One at a time, by name, domain and path exactly: cookies the page sets
       meanwhile are left alone, as they would not be by clearing all and
       setting back the rest. */
    cJSON_ArrayForEach(c, all)
    {
        if (rc < 0 || !cookie_matches(c, name, domain, path))
            continue;
        rg_buf q;
        rg_buf_init(&q);
        static const char *const keys[] = {"name", "domain", "path"};
        for (size_t k = 0; k < 3; k++) {
            const char *v = sess_jstr(c, keys[k]);
            rg_buf_printf(&q, "%c\"%s\":", k ? ',' : '{', keys[k]);
            rg_buf_json_str(&q, v, strlen(v));
        }
        rg_buf_puts(&q, "}");
        rc = q.failed ? RG_ENOMEM
                      : sess_call(s, "Network.deleteCookies", q.data, SESS_CALL_TIMEOUT_MS, NULL);
        rg_buf_destroy(&q);
    }
    cdp_reply_free(&r);
    if (rc < 0)
        *n = 0;
    return rc;
}

/* ---- the storage ops ---- */

/* storage, storage.set and storage.clear in the active tab's top document:
   (kind, op, key or null, value or null). The answer is a plain object the
   browser serializes: no page function (JSON.stringify, push, sort) is
   trusted with it. Items come sorted by name (storage has no order). */
static const char storage_op_js[] =
    "(function(kind,op,key,val){var s,o={origin:String(location.origin)};"
    "try{s=kind==='session'?sessionStorage:localStorage;if(!s)throw 0}"
    "catch(e){o.none=1;return o}"
    "try{if(op==='get'){var v=[];for(var i=0;i<s.length;i++){var n=s.key(i);"
    "if(key===null||n===key){var j=v.length;for(;j>0&&v[j-1].name>n;j--)v[j]=v[j-1];"
    "v[j]={name:n,value:s.getItem(n)}}}o.items=v}"
    "else if(op==='set'){s.setItem(key,val)}"
    "else if(key===null){o.cleared=s.length;s.clear()}"
    "else{o.cleared=s.getItem(key)===null?0:1;s.removeItem(key)}}"
    "catch(e){o.error=String(e&&e.name||e)}return o})(";

int sess_storage(sess *s, const char *kind, const char *op, const char *key, const char *value,
                 cJSON **out, char *err, size_t errlen)
{
    *out = NULL;
    if (strcmp(kind, "local") && strcmp(kind, "session"))
        return rg_errf(err, errlen, RG_EBADREQ, "args.kind must be local or session");
    rg_buf e;
    rg_buf_init(&e);
    rg_buf_puts(&e, storage_op_js);
    rg_buf_json_str(&e, kind, strlen(kind));
    rg_buf_puts(&e, ",");
    rg_buf_json_str(&e, op, strlen(op));
    rg_buf_puts(&e, ",");
    rg_buf_json_str_or_null(&e, key);
    rg_buf_puts(&e, ",");
    rg_buf_json_str_or_null(&e, value);
    rg_buf_puts(&e, ")");
    cJSON *got = NULL;
    int rc = e.failed ? RG_ENOMEM : sess_eval_json(s, e.data, SESS_CALL_TIMEOUT_MS, &got);
    rg_buf_destroy(&e);
    if (rc == 0 && !cJSON_IsObject(got))
        rc = RG_EINTERNAL;
    const char *origin = sess_jstr(got, "origin");
    if (rc == 0 && cJSON_GetObjectItemCaseSensitive(got, "none"))
        rc = rg_errf(err, errlen, RG_EBADREQ,
                     "the page (origin %.100s) has no %sStorage of its own: open a site first",
                     origin, kind);
    else if (rc == 0 && cJSON_GetObjectItemCaseSensitive(got, "error"))
        rc = rg_errf(err, errlen, RG_EBADREQ, "the page's %sStorage refused it: %.100s", kind,
                     sess_jstr(got, "error"));
    if (rc == 0)
        *out = got;
    else
        cJSON_Delete(got);
    return rc;
}
