/*
 * park.c - what a session is made of in the browser, and how it comes back:
 * configuring a fresh context (options, lock-down, the observer's world),
 * capturing URL, scroll, cookies and storage, packing that as msgpack, and
 * rebuilding a page from it with its registry re-bound by identity.
 * Navigation is nav.c's; leasing the context and writing to Redis, lease.c's.
 *
 * Cookies: every cookie of the context (Storage.getCookies with its id), as
 * the parameters Storage.setCookies takes back. Storage: localStorage and
 * sessionStorage of the top document's origin only (other origins' storage
 * is not captured), put back by a script that runs before the page's own
 * scripts on the first document of that origin, then removed.
 *
 * Threading: the session's holder only (synchronous page calls).
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESTORE_NAV_TIMEOUT_MS 20000

/* ---- options ---- */

static int call(sess *s, const char *method, const char *params, cdp_reply *r)
{
    return sess_call(s, method, params, SESS_CALL_TIMEOUT_MS, r);
}

/* A page call whose parameters are one string: {"key": value}. */
static int call_with(sess *s, const char *method, const char *key, const char *value)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"%s\":", key);
    rg_buf_json_str(&q, value, strlen(value));
    rg_buf_puts(&q, "}");
    int rc = q.failed ? RG_ENOMEM : call(s, method, q.data, NULL);
    rg_buf_destroy(&q);
    return rc;
}

/*
 * What a session may not do: downloads are refused unless the tenant may
 * download (files.c), and the permissions a page would otherwise have to
 * ask a person for are denied for the context, so no page waits on a
 * prompt nobody can answer and a page that asks first (permissions.query)
 * is told "denied", not "prompt". The names are the Permissions API's
 * (Browser.setPermission takes a PermissionDescriptor): until 6 December
 * 2026 six of them were PermissionType names ("videoCapture",
 * "clipboardReadWrite"...), which Chromium refused, so only geolocation
 * and notifications were denied. Left as Chromium has them: what it grants
 * without asking (clipboard-write, the motion sensors), and
 * local-network-access, which the tenant's URL policy and the egress proxy
 * decide (policy/, egress/).
 */
static const char *const denied_perms[] = {
    "{\"name\":\"geolocation\"}",
    "{\"name\":\"notifications\"}",
    "{\"name\":\"camera\"}",
    "{\"name\":\"microphone\"}",
    "{\"name\":\"midi\",\"sysex\":true}",
    "{\"name\":\"clipboard-read\"}",
    "{\"name\":\"idle-detection\"}",
    "{\"name\":\"window-management\"}",
    "{\"name\":\"local-fonts\"}",
    "{\"name\":\"display-capture\"}",
    "{\"name\":\"captured-surface-control\"}",
};

int sess_set_permission(sess *s, const char *descriptor, const char *setting, int wait)
{
    const char *ctx = pool_lease_context(s->lease);
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"permission\":%s,\"setting\":\"%s\",\"browserContextId\":", descriptor,
                  setting);
    rg_buf_json_str(&q, ctx, strlen(ctx));
    rg_buf_puts(&q, "}");
    int rc =
        q.failed ? RG_ENOMEM
        : wait   ? sess_browser_call(s, "Browser.setPermission", q.data, SESS_CALL_TIMEOUT_MS, NULL)
               : sess_browser_call_async(s, "Browser.setPermission", q.data, SESS_CALL_TIMEOUT_MS);
    rg_buf_destroy(&q);
    return rc;
}

static int lock_down(sess *s)
{
    const size_t n = sizeof denied_perms / sizeof *denied_perms;
    int rc = sess_files_lock_down(s);
    /* The browser handles them in order: only the last is waited for, so
       the setup pays one round trip for all of them. A permission this
       Chromium does not know is not an error for us. */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = sess_set_permission(s, denied_perms[i], "denied", i + 1 == n);
        rc = rc == RG_ECDP ? 0 : rc;
    }
    return rc;
}

static char *dup_opt(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

void sess_set_options(sess *s, int width, int height, const char *user_agent, const char *locale,
                      const char *tz)
{
    s->width = width > 0 ? width : 1280;
    s->height = height > 0 ? height : 800;
    free(s->user_agent);
    free(s->locale);
    free(s->timezone);
    s->user_agent = dup_opt(user_agent);
    s->locale = dup_opt(locale);
    s->timezone = dup_opt(tz);
}

int sess_apply_options(sess *s)
{
    int64_t tp[7];
    /* a new page: no button is down on it, and the mouse is at its corner */
    memset(&s->pointer, 0, sizeof s->pointer);
    tp[0] = rg_now_ms();
    /* Page events (dialogs, navigations) and console messages from the start. */
    int rc0 = sess_enable_page(s);
    tp[1] = rg_now_ms();
    if (rc0 == 0)
        rc0 = call(s, "Runtime.enable", NULL, NULL);
    /* The browser's warnings and errors for the console op (a resource that
       failed to load): nothing waits for them. */
    if (rc0 == 0)
        sess_call_async(s, "Log.enable", NULL, SESS_CALL_TIMEOUT_MS);
    /* The requests for the network op, likewise (SESS_NETWORK_PARAMS). */
    if (rc0 == 0)
        sess_call_async(s, "Network.enable", SESS_NETWORK_PARAMS, SESS_CALL_TIMEOUT_MS);
    tp[2] = rg_now_ms();
    /* The observer, installed once for the page in its own world. */
    if (rc0 == 0) {
        reg_world_free(s->cur->world);
        s->cur->world = NULL;
        reg_page_handle h = sess_handle(s);
        rc0 = reg_world_new_attached(h.conn, h.session, SESS_CALL_TIMEOUT_MS, &s->cur->world);
        sess_xframes_to_world(s, s->cur);
    }
    /* The page's frames of other sites, each set up as it attaches
       (xframes.c): after the world, which hears of those attached now. */
    if (rc0 == 0)
        sess_call_async(s, "Target.setAutoAttach", sess_xframes_params(), SESS_CALL_TIMEOUT_MS);
    tp[3] = rg_now_ms();
    if (rc0 == 0)
        rc0 = sess_intercept(s);
    tp[4] = rg_now_ms();
    if (rc0 == 0)
        rc0 = lock_down(s);
    tp[5] = rg_now_ms();
    /* Target events for the whole browser, so tabs are seen to close (idempotent). */
    if (rc0 == 0)
        rc0 = sess_browser_call(s, "Target.setDiscoverTargets", "{\"discover\":true}",
                                SESS_CALL_TIMEOUT_MS, NULL);
    tp[6] = rg_now_ms();
    /* Where the setup's time goes (docs/scaling.md): Page.enable waits for the renderer. */
    rg_log(RG_LOG_DEBUG, "session",
           "%s options in ms: page %lld runtime %lld world %lld intercept %lld lockdown %lld "
           "discover %lld",
           s->id, (long long)(tp[1] - tp[0]), (long long)(tp[2] - tp[1]),
           (long long)(tp[3] - tp[2]), (long long)(tp[4] - tp[3]), (long long)(tp[5] - tp[4]),
           (long long)(tp[6] - tp[5]));
    if (rc0 < 0)
        return rc0;
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q,
                  "{\"width\":%d,\"height\":%d,\"deviceScaleFactor\":1,\"mobile\":false}",
                  s->width, s->height);
    int rc = q.failed ? RG_ENOMEM : call(s, "Emulation.setDeviceMetricsOverride", q.data, NULL);
    if (rc == 0 && (s->user_agent || s->locale)) {
        char ua[512] = "";
        if (!s->user_agent) {
            cdp_reply r;
            if (sess_browser_call(s, "Browser.getVersion", NULL, SESS_CALL_TIMEOUT_MS, &r) == 0) {
                const cJSON *u = cJSON_GetObjectItemCaseSensitive(r.result, "userAgent");
                if (cJSON_IsString(u))
                    snprintf(ua, sizeof ua, "%s", u->valuestring);
            }
            cdp_reply_free(&r);
        }
        const char *agent = s->user_agent ? s->user_agent : ua;
        rg_buf_reset(&q);
        rg_buf_puts(&q, "{\"userAgent\":");
        rg_buf_json_str(&q, agent, strlen(agent));
        if (s->locale) {
            rg_buf_puts(&q, ",\"acceptLanguage\":");
            rg_buf_json_str(&q, s->locale, strlen(s->locale));
        }
        rg_buf_puts(&q, "}");
        rc = q.failed ? RG_ENOMEM : call(s, "Emulation.setUserAgentOverride", q.data, NULL);
        /* The same for every tab the session opens later. */
        free(s->emul_ua);
        s->emul_ua = rc == 0 ? strdup(q.data) : NULL;
    }
    if (rc == 0 && s->locale)
        rc = call_with(s, "Emulation.setLocaleOverride", "locale", s->locale);
    if (rc == 0 && s->timezone)
        rc = call_with(s, "Emulation.setTimezoneOverride", "timezoneId", s->timezone);
    if (rc == 0)
        rc = sess_emul_apply(s); /* the emulate op's, kept by the checkpoint */
    rg_buf_destroy(&q);
    /* Chromium refuses an unknown locale or timezone: that is the caller's input. */
    return rc == RG_ECDP ? RG_EBADREQ : rc;
}

/* ---- capture ---- */

void sess_capture_free(sess_capture *c)
{
    free(c->url);
    free(c->title);
    free(c->origin);
    free(c->cookies);
    free(c->ls);
    free(c->ss);
    free(c->form);
    free(c->tabs);
    free(c->tab);
    free(c->media);
    memset(c, 0, sizeof *c);
}

static const char capture_js[] =
    "(function(full){var r={u:location.href,t:document.title,o:location.origin,"
    "x:Math.round(scrollX),y:Math.round(scrollY)};if(!full)return r;"
    "function dump(st){var o=Object.create(null);for(var i=0;i<st.length;i++){var k=st.key(i);"
    "o[k]=st.getItem(k)}return o}"
    "try{r.ls=dump(localStorage)}catch(e){}try{r.ss=dump(sessionStorage)}catch(e){}"
    "return r})(%s)";

char *sess_cookie_params(const cJSON *cookies, const char *const *keep, size_t n)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *c;
    cJSON_ArrayForEach(c, cookies)
    {
        cJSON *p = cJSON_CreateObject();
        if (!p)
            break;
        cJSON_AddItemToArray(out, p);
        for (size_t i = 0; i < n; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, keep[i]);
            if (v)
                cJSON_AddItemToObject(p, keep[i], cJSON_Duplicate(v, 1));
        }
        const cJSON *session = cJSON_GetObjectItemCaseSensitive(c, "session");
        const cJSON *exp = cJSON_GetObjectItemCaseSensitive(c, "expires");
        if (!cJSON_IsTrue(session) && cJSON_IsNumber(exp) && exp->valuedouble > 0)
            cJSON_AddNumberToObject(p, "expires", exp->valuedouble);
        if (!cJSON_GetObjectItemCaseSensitive(p, "url") &&
            !cJSON_GetObjectItemCaseSensitive(p, "path"))
            cJSON_AddStringToObject(p, "path", "/");
    }
    char *s = out ? cJSON_PrintUnformatted(out) : NULL;
    cJSON_Delete(out);
    return s;
}

/* The fields Storage.setCookies takes back, from what Storage.getCookies gave. */
static char *cookie_params(const cJSON *cookies)
{
    static const char *const keep[] = {"name",         "value",     "domain",   "path",
                                       "secure",       "httpOnly",  "sameSite", "priority",
                                       "sourceScheme", "sourcePort"};
    return sess_cookie_params(cookies, keep, sizeof keep / sizeof *keep);
}

static char *print_obj(const cJSON *root, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, k);
    return cJSON_IsObject(v) && v->child ? cJSON_PrintUnformatted(v) : NULL;
}

/*
 * Every tab's URL and scroll, into c->tabs (the current tab's from c), its
 * id into c->tab. A tab that does not answer is kept on the URL DevTools
 * knows for it.
 */
static int capture_tabs(sess *s, sess_capture *c)
{
    sess_tab *v[SESS_TABS_CAP];
    int n = sess_tabs_snapshot(s, v);
    sess_tab *keep = s->cur;
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "id", v[i]->id);
        cJSON_AddStringToObject(o, "opener", v[i]->opener);
        if (v[i] == keep) {
            cJSON_AddStringToObject(o, "url", c->url);
            cJSON_AddNumberToObject(o, "sx", c->sx);
            cJSON_AddNumberToObject(o, "sy", c->sy);
            continue;
        }
        s->cur = v[i];
        cJSON *root = NULL;
        char expr[sizeof capture_js + 8];
        snprintf(expr, sizeof expr, capture_js, "false");
        sess_eval_json(s, expr, SESS_CALL_TIMEOUT_MS / 2, &root);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(root, "u");
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, "x");
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(root, "y");
        cJSON_AddStringToObject(o, "url",
                                sess_tab_url(v[i], cJSON_IsString(u) ? u->valuestring
                                                                     : "about:blank"));
        cJSON_AddNumberToObject(o, "sx", cJSON_IsNumber(x) ? x->valuedouble : 0);
        cJSON_AddNumberToObject(o, "sy", cJSON_IsNumber(y) ? y->valuedouble : 0);
        cJSON_Delete(root);
    }
    s->cur = keep;
    c->tabs = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    c->tab = keep ? strdup(keep->id) : NULL;
    pthread_mutex_lock(&s->m->mu);
    c->next_tab = s->next_tab;
    pthread_mutex_unlock(&s->m->mu);
    return c->tabs && (!keep || c->tab) ? 0 : RG_ENOMEM;
}

/* A Storage call on the session's browser context: {"cookies": cookies (JSON
   text, when not NULL), "browserContextId": the context}. r starts zeroed. */
int sess_context_call(sess *s, const char *method, const char *cookies, cdp_reply *r)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{");
    if (cookies) {
        rg_buf_puts(&q, "\"cookies\":");
        rg_buf_puts(&q, cookies);
        rg_buf_puts(&q, ",");
    }
    rg_buf_puts(&q, "\"browserContextId\":");
    const char *ctx = pool_lease_context(s->lease);
    rg_buf_json_str(&q, ctx, strlen(ctx));
    rg_buf_puts(&q, "}");
    int rc = q.failed ? RG_ENOMEM
                      : sess_browser_call(s, method, q.data, SESS_CALL_TIMEOUT_MS, r);
    rg_buf_destroy(&q);
    return rc;
}

/* The context's cookies as Network.setCookies params into *out (NULL when
   there are none). */
static int capture_cookies(sess *s, char **out)
{
    *out = NULL;
    cdp_reply r = {0};
    int rc = sess_context_call(s, "Storage.getCookies", NULL, &r);
    if (rc == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(r.result, "cookies");
        if (cJSON_IsArray(arr) && arr->child && !(*out = cookie_params(arr)))
            rc = RG_ENOMEM;
    }
    cdp_reply_free(&r);
    return rc;
}

/* What capture_js (or the load report, which has the same fields) gave,
   into c; then, when full, the browser's part, with the cookies taken over
   from *cookies when cookies is not NULL (else asked for). root is
   consumed. */
static int capture_from(sess *s, int full, cJSON *root, char **cookies, sess_capture *c)
{
    int rc = 0;
    c->url = sess_json_dup(root, "u");
    c->title = sess_json_dup(root, "t");
    c->origin = sess_json_dup(root, "o");
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, "x");
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(root, "y");
    c->sx = cJSON_IsNumber(x) ? x->valuedouble : 0;
    c->sy = cJSON_IsNumber(y) ? y->valuedouble : 0;
    if (full) {
        c->ls = print_obj(root, "ls");
        c->ss = print_obj(root, "ss");
    }
    cJSON_Delete(root);
    if (!c->url || !c->title || !c->origin) {
        sess_capture_free(c);
        return RG_ENOMEM;
    }
    if (!full)
        return 0;
    if (cookies) {
        c->cookies = *cookies;
        *cookies = NULL;
    } else {
        rc = capture_cookies(s, &c->cookies);
    }
    /* What a reload loses, when the page was observed: a bonus, never a failure. */
    if (rc == 0 && sess_registry(s) && reg_state_capture(sess_registry(s), sess_handle(s), &c->form) < 0)
        rg_log(RG_LOG_INFO, "session", "%s: the page's fields could not be captured", s->id);
    if (rc == 0)
        rc = capture_tabs(s, c);
    if (rc < 0)
        sess_capture_free(c);
    return rc;
}

/* capture_js's answer into c, the cookies as capture_from takes them. */
static int capture_page(sess *s, int full, char **cookies, sess_capture *c)
{
    memset(c, 0, sizeof *c);
    char expr[sizeof capture_js + 8];
    snprintf(expr, sizeof expr, capture_js, full ? "true" : "false");
    cJSON *root = NULL;
    int rc = sess_eval_json(s, expr, SESS_CALL_TIMEOUT_MS, &root);
    return rc < 0 ? rc : capture_from(s, full, root, cookies, c);
}

int sess_capture_page(sess *s, int full, sess_capture *c)
{
    return capture_page(s, full, NULL, c);
}

int sess_capture_loaded(sess *s, reg_world *w, sess_capture *c)
{
    memset(c, 0, sizeof *c);
    /* The cookies first: the browser answers while the page is still on the
       report, which comes a task after its load event. */
    char *cookies = NULL, *report = NULL;
    int rc = capture_cookies(s, &cookies);
    if (rc < 0)
        return rc;
    rc = reg_world_load_final(w, SESS_LOAD_FINAL_WAIT_MS, &report);
    cJSON *root = rc == 0 ? cJSON_Parse(report) : NULL;
    free(report);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "st");
    if (!cJSON_IsObject(root) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "u")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "o")) || !cJSON_IsNumber(st) ||
        st->valueint != 1) {
        /* no report in time, or no storage in it: the page is asked, the
           cookies already in hand */
        rg_log(RG_LOG_DEBUG, "session", "%s: no storage report after the load (%s): the page "
               "is asked", s->id, rc < 0 ? rg_err_code(rc) : "none in it");
        cJSON_Delete(root);
        rc = capture_page(s, 1, &cookies, c);
    } else {
        rc = capture_from(s, 1, root, &cookies, c);
    }
    free(cookies);
    return rc;
}

/* ---- msgpack of the parked state ---- */

static void put_str(msgpack_packer *pk, const char *k, const char *v)
{
    msgpack_pack_str(pk, strlen(k));
    msgpack_pack_str_body(pk, k, strlen(k));
    if (!v) {
        msgpack_pack_nil(pk);
        return;
    }
    msgpack_pack_str(pk, strlen(v));
    msgpack_pack_str_body(pk, v, strlen(v));
}

static void put_num(msgpack_packer *pk, const char *k, double v)
{
    msgpack_pack_str(pk, strlen(k));
    msgpack_pack_str_body(pk, k, strlen(k));
    msgpack_pack_int64(pk, (int64_t)v);
}

int sess_pack(const sess *s, const sess_capture *c, char **out, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 16);
    put_num(&pk, "v", 1);
    put_str(&pk, "url", c->url);
    put_str(&pk, "title", c->title);
    put_str(&pk, "origin", c->origin);
    put_num(&pk, "w", s->width);
    put_num(&pk, "h", s->height);
    put_num(&pk, "sx", c->sx);
    put_num(&pk, "sy", c->sy);
    put_str(&pk, "cookies", c->cookies);
    put_str(&pk, "ls", c->ls);
    put_str(&pk, "ss", c->ss);
    put_str(&pk, "form", c->form);
    put_str(&pk, "tabs", c->tabs);
    put_str(&pk, "tab", c->tab);
    put_num(&pk, "next_tab", c->next_tab);
    put_str(&pk, "media", s->media);
    if (!sb.data) {
        msgpack_sbuffer_destroy(&sb);
        return RG_ENOMEM;
    }
    *len = sb.size;
    *out = msgpack_sbuffer_release(&sb);
    return 0;
}

int sess_unpack(const char *buf, size_t len, sess_capture *c)
{
    memset(c, 0, sizeof *c);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    if (msgpack_unpack_next(&u, buf, len, &off) != MSGPACK_UNPACK_SUCCESS ||
        u.data.type != MSGPACK_OBJECT_MAP) {
        msgpack_unpacked_destroy(&u);
        return RG_EINTERNAL;
    }
    const msgpack_object_map *m = &u.data.via.map;
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
        char **dst = rg_mp_key_is(k, "url")       ? &c->url
                     : rg_mp_key_is(k, "title")   ? &c->title
                     : rg_mp_key_is(k, "origin")  ? &c->origin
                     : rg_mp_key_is(k, "cookies") ? &c->cookies
                     : rg_mp_key_is(k, "ls")      ? &c->ls
                     : rg_mp_key_is(k, "ss")      ? &c->ss
                     : rg_mp_key_is(k, "form")    ? &c->form
                     : rg_mp_key_is(k, "tabs")    ? &c->tabs
                     : rg_mp_key_is(k, "tab")     ? &c->tab
                     : rg_mp_key_is(k, "media")   ? &c->media
                                                  : NULL;
        if (dst && v->type == MSGPACK_OBJECT_STR && !*dst)
            *dst = strndup(v->via.str.ptr, v->via.str.size);
        else if (rg_mp_key_is(k, "sx") && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            c->sx = (double)v->via.u64;
        else if (rg_mp_key_is(k, "sy") && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            c->sy = (double)v->via.u64;
        else if (rg_mp_key_is(k, "next_tab") && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
                 v->via.u64 < 1000000000)
            c->next_tab = (int)v->via.u64;
    }
    msgpack_unpacked_destroy(&u);
    return 0;
}

/* ---- restore ---- */

static int set_cookies(sess *s, const char *cookies)
{
    cdp_reply r = {0};
    int rc = sess_context_call(s, "Storage.setCookies", cookies, &r);
    if (rc == RG_ECDP)
        rg_log(RG_LOG_WARN, "session", "%s: cookies not restored: %s", s->id, r.error);
    cdp_reply_free(&r);
    return rc == RG_ECDP ? 0 : rc;
}

/* Puts storage back before the first document of its origin runs any script. */
static int add_storage_script(sess *s, const sess_capture *p, char *id, size_t idlen)
{
    rg_buf src;
    rg_buf_init(&src);
    /* The storage goes in as JSON text for JSON.parse, not as an object
       literal, in which a "__proto__" key would set the prototype instead
       of making an item (capture_js keeps such a key). */
    rg_buf_puts(&src, "(function(o,ls,ss){if(window.top!==window||location.origin!==o)return;"
                      "function put(st,j){try{if(j){var v=JSON.parse(j);"
                      "for(var k in v)st.setItem(k,v[k])}}catch(e){}}"
                      "put(localStorage,ls);put(sessionStorage,ss)})(");
    rg_buf_json_str(&src, p->origin, strlen(p->origin));
    const char *const dumps[] = {p->ls, p->ss};
    for (size_t i = 0; i < sizeof dumps / sizeof *dumps; i++) {
        rg_buf_puts(&src, ",");
        rg_buf_json_str_or_null(&src, dumps[i]);
    }
    rg_buf_puts(&src, ")");
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"source\":");
    rg_buf_json_str(&q, src.data ? src.data : "", src.len);
    rg_buf_puts(&q, "}");
    cdp_reply r = {0};
    int rc = src.failed || q.failed ? RG_ENOMEM
                                    : call(s, "Page.addScriptToEvaluateOnNewDocument", q.data, &r);
    if (rc == 0) {
        const cJSON *ident = cJSON_GetObjectItemCaseSensitive(r.result, "identifier");
        snprintf(id, idlen, "%s", cJSON_IsString(ident) ? ident->valuestring : "");
    }
    cdp_reply_free(&r);
    rg_buf_destroy(&q);
    rg_buf_destroy(&src);
    return rc;
}

static void remove_script(sess *s, const char *id)
{
    call_with(s, "Page.removeScriptToEvaluateOnNewDocument", "identifier", id);
}

int sess_rebuild(sess *s, const char *url, double sx, double sy, const sess_capture *parked,
                 sess_restore_info *ri, char *err, size_t errlen)
{
    int rc = 0;
    char script[64] = "";
    int64_t t = rg_now_ms();
    if (parked && parked->cookies && (rc = set_cookies(s, parked->cookies)) < 0)
        goto fail;
    if (parked && (parked->ls || parked->ss) && parked->origin && strcmp(parked->origin, "null") &&
        ((rc = sess_enable_page(s)) < 0 ||
         (rc = add_storage_script(s, parked, script, sizeof script)) < 0))
        goto fail;
    ri->ms[SESS_RS_STATE] += (int)(rg_now_ms() - t);
    t = rg_now_ms();
    if (url && *url && strcmp(url, "about:blank")) {
        sess_nav nav;
        char nerr[256];
        int nrc = sess_navigate(s, url, "load", RESTORE_NAV_TIMEOUT_MS, &nav, nerr, sizeof nerr);
        if (nrc == RG_ECRASHED) {
            rc = nrc;
            goto fail;
        }
        /* A site that is down or slow does not lose the session: it comes
           back on whatever the page shows, and its refs report what they find. */
        if (nrc < 0)
            rg_log(RG_LOG_WARN, "session", "%s: restore navigation: %s", s->id, nerr);
        sess_nav_free(&nav);
    }
    if (script[0])
        remove_script(s, script);
    if (sx > 0 || sy > 0) {
        char expr[96];
        snprintf(expr, sizeof expr, "window.scrollTo(%.0f,%.0f);1", sx, sy);
        cJSON *ignored = NULL;
        sess_eval_json(s, expr, SESS_CALL_TIMEOUT_MS, &ignored);
        cJSON_Delete(ignored);
    }
    ri->ms[SESS_RS_NAV] += (int)(rg_now_ms() - t);
    t = rg_now_ms();
    /* One observation re-binds every registered ref by identity. With the
       text outline's options (no selectors, no bounds: re-binding reads
       neither), so that the agent's next observe continues this walk
       instead of walking the page again and writing every entry back. */
    reg_observation o;
    reg_observe_opts opts = {REG_OBSERVE_TEXT};
    if ((rc = reg_observe(sess_registry(s), sess_handle(s), &opts, &o)) < 0)
        goto fail;
    ri->ms[SESS_RS_OBSERVE] += (int)(rg_now_ms() - t);
    t = rg_now_ms();
    ri->refs_kept = o.n_stable + o.n_moved;
    ri->refs_lost = o.n_unmatched;
    reg_observation_free(&o);
    ri->reloaded = 1;
    /* Then what the page held: typed fields, focus, scrolled boxes, by those refs. */
    int put = 0, lost = 0;
    if (parked && parked->form && reg_state_restore(sess_registry(s), sess_handle(s), parked->form, &put,
                                                    &lost) == 0) {
        ri->fields_restored = (size_t)put;
        ri->fields_lost = (size_t)lost;
    }
    ri->ms[SESS_RS_FIELDS] += (int)(rg_now_ms() - t);
    return 0;
fail:
    snprintf(err, errlen, "could not restore the session (%s)", rg_err_code(rc));
    return rc;
}

/* ---- tabs ---- */

int sess_capture_page_keys(const sess *s, const sess_capture *c, char ***v, size_t *n)
{
    *v = NULL;
    *n = 0;
    cJSON *arr = c && c->tabs ? cJSON_Parse(c->tabs) : NULL;
    size_t cap = 1 + (size_t)cJSON_GetArraySize(arr);
    char **out = calloc(cap, sizeof *out);
    if (!out) {
        cJSON_Delete(arr);
        return RG_ENOMEM;
    }
    size_t k = 0;
    if (asprintf(&out[k], "%s:%s", s->tag, SESS_PAGE) >= 0)
        k++;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (!cJSON_IsString(id) || !strcmp(id->valuestring, "t1") || id->valuestring[0] != 't' ||
            strlen(id->valuestring) >= SESS_TAB_ID_MAX || k >= cap)
            continue;
        if (asprintf(&out[k], "%s:%s", s->tag, id->valuestring) >= 0)
            k++;
    }
    cJSON_Delete(arr);
    *v = out;
    *n = k;
    return 0;
}

int sess_rebuild_tabs(sess *s, const sess_capture *parked, sess_restore_info *ri)
{
    cJSON *arr = parked && parked->tabs ? cJSON_Parse(parked->tabs) : NULL;
    sess_tab *first = s->active;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "id"));
        const char *url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "url"));
        const char *opener = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "opener"));
        if (!id || !url || (first && !strcmp(id, first->id)) || id[0] != 't' ||
            strlen(id) >= SESS_TAB_ID_MAX)
            continue;
        sess_tab *t;
        char err[256];
        int rc = sess_tab_open(s, id, &t, err, sizeof err);
        if (rc < 0) {
            rg_log(RG_LOG_WARN, "session", "%s: tab %s not restored: %s", s->id, id, err);
            if (rc == RG_ECRASHED)
                break;
            continue;
        }
        if (opener)
            snprintf(t->opener, sizeof t->opener, "%s", opener);
        s->cur = t;
        sess_tab_prepare(s, t);
        if (*url && strcmp(url, "about:blank")) {
            sess_nav nav;
            rc = sess_navigate(s, url, "load", RESTORE_NAV_TIMEOUT_MS, &nav, err, sizeof err);
            if (rc < 0)
                rg_log(RG_LOG_WARN, "session", "%s: restore navigation of tab %s: %s", s->id, id,
                       err);
            sess_nav_free(&nav);
        }
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, "sx");
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(e, "sy");
        double sx = cJSON_IsNumber(x) ? x->valuedouble : 0, sy = cJSON_IsNumber(y) ? y->valuedouble : 0;
        if (sx > 0 || sy > 0) {
            char expr[96];
            snprintf(expr, sizeof expr, "window.scrollTo(%.0f,%.0f);1", sx, sy);
            cJSON *ignored = NULL;
            sess_eval_json(s, expr, SESS_CALL_TIMEOUT_MS, &ignored);
            cJSON_Delete(ignored);
        }
        reg_observation o;
        reg_observe_opts opts = {REG_OBSERVE_TEXT}; /* as the first tab's */
        if (reg_observe(t->reg, sess_handle(s), &opts, &o) == 0) {
            ri->refs_kept += o.n_stable + o.n_moved;
            ri->refs_lost += o.n_unmatched;
            reg_observation_free(&o);
        }
    }
    cJSON_Delete(arr);
    pthread_mutex_lock(&s->m->mu);
    if (parked && s->next_tab < parked->next_tab)
        s->next_tab = parked->next_tab;
    pthread_mutex_unlock(&s->m->mu);
    s->cur = s->active = first;
    if (first)
        sess_tab_prepare(s, first);
    return 0;
}
