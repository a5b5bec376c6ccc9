/*
 * nav.c - where a session's page goes and where it is: navigating to a URL,
 * going back, forward or reloading, waiting for the load event the caller
 * names, and reading the URL, title and HTTP status the page ends on.
 *
 * Threading: the session's holder only (synchronous page calls, never on
 * the browser's reader thread).
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void sess_nav_free(sess_nav *n)
{
    free(n->url);
    free(n->title);
    n->url = n->title = NULL;
}

int sess_enable_page(sess *s)
{
    if (!s->cur)
        return RG_ECRASHED;
    if (s->cur->page_enabled)
        return 0;
    int rc = sess_call(s, "Page.enable", NULL, SESS_CALL_TIMEOUT_MS, NULL);
    if (rc == 0)
        s->cur->page_enabled = 1;
    return rc;
}

static const char where_js[] =
    "({u:location.href,t:document.title,"
    "s:((performance.getEntriesByType('navigation')[0]||{}).responseStatus)||0})";

/* The DevTools event a wait names ("" for none), or NULL for a bad name. */
static const char *wait_event(const char *wait)
{
    return !wait || !strcmp(wait, "load")      ? "Page.loadEventFired"
           : !strcmp(wait, "domcontentloaded") ? "Page.domContentEventFired"
           : !strcmp(wait, "none")             ? ""
                                               : NULL;
}

/* where's URL, title and status into out, and frees where. */
static int take_where(cJSON *where, sess_nav *out)
{
    out->url = sess_json_dup(where, "u");
    out->title = sess_json_dup(where, "t");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(where, "s");
    out->status = cJSON_IsNumber(st) ? st->valueint : 0;
    cJSON_Delete(where);
    if (!out->url || !out->title) {
        sess_nav_free(out);
        return RG_ENOMEM;
    }
    return 0;
}

/* Where the page is now: URL, title, the main document's HTTP status. */
static int read_where(sess *s, sess_nav *out)
{
    cJSON *where = NULL;
    int rc = sess_eval_json(s, where_js, SESS_CALL_TIMEOUT_MS, &where);
    return rc < 0 ? rc : take_where(where, out);
}

/*
 * Where a navigation ended: when its wait saw the load event (loaded), the
 * observer's report from that event (registry/world.c); without one, or
 * without that wait, the page is asked.
 */
static int where_after(sess *s, int loaded, sess_nav *out)
{
    char *json = NULL;
    cJSON *where = NULL;
    s->load_report = 0;
    if (loaded && reg_world_loaded(s->cur->world, &json) == 0)
        where = cJSON_Parse(json);
    free(json);
    if (cJSON_IsObject(where) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(where, "u"))) {
        /* its second part is for the checkpoint after this command (lease.c) */
        s->load_report = 1;
        s->load_gen = __atomic_load_n(&s->page_gen, __ATOMIC_SEQ_CST);
        s->load_tab = s->cur;
        __atomic_store_n(&s->load_touched, 0, __ATOMIC_SEQ_CST);
        return take_where(where, out);
    }
    cJSON_Delete(where);
    return read_where(s, out);
}

/*
 * The host (lowercase; an IPv6 address without its brackets) and port of an
 * http(s) URL, as Chromium names them to its proxy when the URL is written
 * the way Chromium writes it. -1 for another scheme or a URL this does not
 * take apart; the caller then cannot tell whose connection failed. Not
 * policy/'s pol_parse_url, which canonicalizes more: session/ knows no
 * policy (docs/architecture.md, the arrows), and a URL this misreads only
 * leaves the answer as it was before the proxy kept failures.
 */
int sess_url_host_port(const char *url, char *host, size_t len, int *port)
{
    int https = !strncasecmp(url, "https://", 8);
    if (!https && strncasecmp(url, "http://", 7))
        return -1;
    const char *a = url + (https ? 8 : 7);
    const char *end = a + strcspn(a, "/?#\\");
    for (const char *at = a; at < end; at++)
        if (*at == '@')
            a = at + 1; /* the last @ ends the user info */
    const char *h = a, *he;
    if (*h == '[') {
        he = memchr(h, ']', (size_t)(end - h));
        if (!he)
            return -1;
        h++;
    } else {
        he = memchr(h, ':', (size_t)(end - h));
        if (!he)
            he = end;
    }
    const char *p = *he == ']' ? he + 1 : he;
    *port = https ? 443 : 80;
    if (p < end && *p == ':' && p + 1 < end) {
        char *pe;
        long v = strtol(p + 1, &pe, 10);
        if (pe != end || v < 1 || v > 65535)
            return -1;
        *port = (int)v;
    } else if (p < end && !(*p == ':' && p + 1 == end)) {
        return -1;
    }
    size_t n = (size_t)(he - h);
    if (n == 0 || n >= len)
        return -1;
    for (size_t i = 0; i < n; i++)
        host[i] = (char)tolower((unsigned char)h[i]);
    host[n] = '\0';
    return 0;
}

/*
 * Whether a navigation to url that failed since mark was refused by the
 * session's egress proxy: a connection the rules refused in that window (a
 * redirect to a refused host; the URL itself was checked before), unless a
 * connection to the URL's own host and port failed otherwise (its server is
 * down) while the page being left had requests of its own refused. Chromium
 * reports all of these as the same SOCKS error.
 */
static int refused_by_proxy(sess *s, const egress_mark *mark, const char *url)
{
    char host[256];
    int port = 0, host_failed = 0;
    int known = sess_url_host_port(url, host, sizeof host, &port) == 0;
    uint64_t refused = egress_slot_since(s->egress, mark, known ? host : "", port, &host_failed);
    return refused > 0 && !(known && host_failed);
}

/*
 * A navigation Chromium aborted (net::ERR_ABORTED) because its URL is a
 * file, not a page: a download began meanwhile (more than `before` had
 * begun; one past the list's cap counts too). Its Page.downloadWillBegin
 * may come a moment after the navigation's reply: at most 300 ms are
 * waited for it, on this path only. 1 with the sentence for the client in
 * err, else 0.
 */
static int became_download(sess *s, size_t before, const char *url, char *err, size_t errlen)
{
    sess_download last, *d = &last;
    int began = 0;
    for (int i = 0; i < 30 && !(began = sess_downloads_begun(s, &last) > before); i++)
        rg_sleep_ms(10);
    if (!began)
        return 0;
    snprintf(err, errlen,
             "navigation to %s started a file download instead of loading a page; the page "
             "stays where it was. Download %s (\"%s\") is %s%s",
             url, d->id, d->name, sess_dl_state_name(d->state),
             d->state == SESS_DL_REFUSED
                 ? ": this tenant may not download, or the session's download quota is full"
                 : ": `downloads` lists it, `download.get` fetches it once done");
    return 1;
}

int sess_navigate(sess *s, const char *url, const char *wait, int timeout_ms, sess_nav *out,
                  char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *ev = wait_event(wait);
    if (!ev)
        return rg_errf(err, errlen, RG_EBADREQ, "wait must be load, domcontentloaded or none");
    if (timeout_ms <= 0)
        timeout_ms = 30000;
    int64_t deadline = rg_now_ms() + timeout_ms;
    int rc = sess_enable_page(s);
    if (rc < 0)
        return rc;
    cdp_waiter *w = NULL;
    if (*ev && (rc = sess_page_waiter(s, ev, &w)) < 0)
        return rc;
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"url\":");
    rg_buf_json_str(&q, url, strlen(url));
    rg_buf_puts(&q, "}");
    cdp_reply r = {0};
    int loaded = 0; /* the wait saw the load event of the new document */
    reg_world_forget_load(s->cur->world);
    egress_mark mark = {0};
    if (s->egress)
        egress_slot_mark(s->egress, &mark);
    size_t downloads = sess_downloads_begun(s, NULL);
    rc = q.failed ? RG_ENOMEM : sess_call(s, "Page.navigate", q.data, timeout_ms, &r);
    rg_buf_destroy(&q);
    if (rc == RG_ECDP) {
        snprintf(err, errlen, "the browser refused the URL: %s", r.error);
        rc = RG_EBADREQ;
    } else if (rc == 0) {
        const cJSON *et = cJSON_GetObjectItemCaseSensitive(r.result, "errorText");
        const cJSON *loader = cJSON_GetObjectItemCaseSensitive(r.result, "loaderId");
        /* Refused by the Fetch pause (no proxy), or by the context's proxy. */
        if (cJSON_IsString(et) && (strstr(et->valuestring, "ERR_BLOCKED_BY_CLIENT") ||
                                   (*et->valuestring && s->egress &&
                                    refused_by_proxy(s, &mark, url)))) {
            snprintf(err, errlen, "the tenant's URL policy refused %s (or a redirect of it)", url);
            rc = RG_EBLOCKEDURL;
        } else if (cJSON_IsString(et) && *et->valuestring) {
            if (!strstr(et->valuestring, "ERR_ABORTED"))
                snprintf(err, errlen, "navigation to %s failed: %s", url, et->valuestring);
            else if (!became_download(s, downloads, url, err, errlen))
                /* Chromium's one word for every navigation that ended
                   without a new document: say what it can mean */
                snprintf(err, errlen,
                         "navigation to %s was aborted (%s): no new page came, and the page "
                         "stays where it was. A server that answers 204 or 205 sends no page; "
                         "a script of the page can also have stopped the navigation, or started "
                         "another",
                         url, et->valuestring);
            rc = RG_ENAVFAILED;
        } else if (w && cJSON_IsString(loader)) {
            int64_t left = deadline - rg_now_ms();
            rc = cdp_waiter_wait(w, left > 0 ? (int)left : 1, NULL);
            if (rc == RG_ETIMEOUT)
                snprintf(err, errlen, "the page did not reach '%s' within %d ms",
                         wait ? wait : "load", timeout_ms);
            loaded = rc == 0 && !strcmp(ev, "Page.loadEventFired");
        }
    }
    cdp_reply_free(&r);
    cdp_waiter_free(w);
    if (rc < 0)
        return rc;
    return where_after(s, loaded, out);
}

/* A Page.frameNavigated of the main frame that came back from the
   back/forward cache. */
static int from_cache(const cJSON *params)
{
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(params, "frame");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(params, "type");
    return cJSON_IsObject(fr) && !cJSON_GetObjectItemCaseSensitive(fr, "parentId") &&
           cJSON_IsString(type) && !strcmp(type->valuestring, "BackForwardCacheRestore");
}

/* Why a history step's page did not come from the back/forward cache
   (Page.backForwardCacheNotUsed), in the log: "JavaScriptExecution,
   OutstandingNetworkRequestFetch". */
static void log_not_cached(sess *s, const cJSON *params)
{
    char why[512] = "";
    size_t n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(params, "notRestoredExplanations"))
    {
        const char *r = sess_jstr(e, "reason");
        if (*r && n + strlen(r) + 3 < sizeof why)
            n += (size_t)snprintf(why + n, sizeof why - n, "%s%s", n ? ", " : "", r);
    }
    rg_log(RG_LOG_INFO, "session", "%s: the page did not come from the back/forward cache: %s",
           s->id, n ? why : "no reason given");
}

int sess_history(sess *s, int delta, const char *wait, int timeout_ms, sess_nav *out, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *ev = wait_event(wait);
    if (!ev)
        return rg_errf(err, errlen, RG_EBADREQ, "wait must be load, domcontentloaded or none");
    if (timeout_ms <= 0)
        timeout_ms = 30000;
    int rc = sess_enable_page(s);
    if (rc < 0)
        return rc;
    char params[64] = "";
    const char *method = "Page.reload";
    if (delta != 0) {
        cdp_reply r;
        rc = sess_call(s, "Page.getNavigationHistory", NULL, SESS_CALL_TIMEOUT_MS, &r);
        if (rc < 0)
            return rc;
        const cJSON *cur = cJSON_GetObjectItemCaseSensitive(r.result, "currentIndex");
        const cJSON *entries = cJSON_GetObjectItemCaseSensitive(r.result, "entries");
        int want = (cJSON_IsNumber(cur) ? cur->valueint : 0) + delta;
        const cJSON *e = want >= 0 ? cJSON_GetArrayItem(entries, want) : NULL;
        const cJSON *eid = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (cJSON_IsNumber(eid))
            snprintf(params, sizeof params, "{\"entryId\":%d}", eid->valueint);
        cdp_reply_free(&r);
        if (!params[0])
            method = NULL; /* nothing there: stay */
        else
            method = "Page.navigateToHistoryEntry";
    }
    int loaded = 0; /* the wait saw a load event */
    int cached = 0; /* the page came back from the back/forward cache */
    if (method) {
        cdp_waiter *w = NULL, *fw = NULL;
        if (*ev && (rc = sess_page_waiter(s, ev, &w)) < 0)
            return rc;
        /* A page restored from the back/forward cache fires no load event;
           its main frame's Page.frameNavigated, the first one after a history
           step, says it came from there. */
        if (w && delta && (rc = sess_page_waiter(s, "Page.frameNavigated", &fw)) < 0) {
            cdp_waiter_free(w);
            return rc;
        }
        /* and when it did not, the browser says why: for the log */
        cdp_waiter *nw = NULL;
        if (fw && sess_page_waiter(s, "Page.backForwardCacheNotUsed", &nw) < 0)
            nw = NULL;
        reg_world_forget_load(s->cur->world);
        int64_t deadline = rg_now_ms() + (delta && timeout_ms > 5000 ? 5000 : timeout_ms);
        rc = sess_call(s, method, params[0] ? params : NULL, timeout_ms, NULL);
        if (rc == 0 && fw) {
            const cJSON *p = NULL;
            int64_t left = deadline - rg_now_ms();
            cached = cdp_waiter_wait(fw, left > 0 ? (int)left : 1, &p) == 0 && from_cache(p);
        }
        /* Any other way, a back or forward whose wait for the event runs
           out still succeeds: the page is where it should be. */
        if (rc == 0 && w && !cached) {
            int64_t left = deadline - rg_now_ms();
            int wrc = cdp_waiter_wait(w, left > 0 ? (int)left : 1, NULL);
            if (wrc < 0 && !(delta && wrc == RG_ETIMEOUT))
                rc = wrc;
            loaded = wrc == 0 && !strcmp(ev, "Page.loadEventFired");
            if (rc == RG_ETIMEOUT)
                snprintf(err, errlen, "the page did not reach '%s' within %d ms",
                         wait ? wait : "load", timeout_ms);
        }
        const cJSON *np = NULL;
        if (rc == 0 && nw && !cached && cdp_waiter_wait(nw, 1, &np) == 0)
            log_not_cached(s, np);
        cdp_waiter_free(nw);
        cdp_waiter_free(fw);
        cdp_waiter_free(w);
        if (rc < 0)
            return rc;
    }
    rc = where_after(s, loaded, out);
    out->from_cache = cached;
    out->moved = method != NULL;
    return rc;
}
