/*
 * act.c - resolving targets to elements and acting on them: real input
 * events through DevTools (Input.dispatchMouseEvent / dispatchKeyEvent /
 * insertText) after the page-side script (registry/observer/) has found
 * the element and checked it is attached, visible, stable, enabled and hit
 * at its centre. A ref whose element is gone is healed only when exactly
 * one element matches it confidently; otherwise nothing is done (stale_ref).
 *
 * Threading: like reg_page, one thread at a time per page.
 */
#define _GNU_SOURCE
#include "registry/reg_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 5000
#define POLL_MS 100
/*
 * An element behind a modal dialog (showModal) is out of reach until the
 * dialog closes, which an agent, not time, usually brings about: the wait
 * ends after this long rather than at the action's timeout (5 s by
 * default). It is not 0 so that a dialog the page is closing (a click on
 * its button just now, a closing animation before close()) lets go.
 */
#define MODAL_WAIT_MS 1000
#define JS_TIMEOUT_MS 10000

void reg_action_result_free(reg_action_result *r)
{
    if (!r)
        return;
    cJSON_Delete(r->value);
    free(r->data);
    memset(r, 0, sizeof *r);
}

/* ---- small helpers ---- */

/* Calls g.<fn>(<args>) in the page; args is JS source (already escaped). */
static int call(reg_page_handle h, int await, cJSON **out, char *err, size_t errlen,
                const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int call(reg_page_handle h, int await, cJSON **out, char *err, size_t errlen,
                const char *fmt, ...)
{
    rg_buf b;
    rg_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    char small[512];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return RG_EINTERNAL;
    if ((size_t)n < sizeof small) {
        rg_buf_append(&b, small, (size_t)n);
    } else {
        rg_buf_reserve(&b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b.data, (size_t)n + 1, fmt, ap);
        va_end(ap);
        b.len = (size_t)n;
    }
    int rc = b.failed ? RG_ENOMEM : reg_js(h, b.data, await, JS_TIMEOUT_MS, out, err, errlen);
    rg_buf_destroy(&b);
    return rc;
}

/* s as a JSON string literal (which is also a JS string literal), owned. */
static char *quote(const char *s)
{
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_json_str(&b, s ? s : "", s ? strlen(s) : 0);
    return b.failed ? (rg_buf_destroy(&b), NULL) : rg_buf_steal(&b);
}

static const reg_entry *entry_of(reg_page *pg, const char *ref)
{
    for (size_t i = 0; i < pg->n_entries; i++)
        if (!strcmp(pg->entries[i].ref, ref))
            return &pg->entries[i];
    return NULL;
}

int reg_page_has(reg_page *pg, const char *ref)
{
    int rc;
    if (!pg->loaded && (rc = reg_page_load(pg)) < 0)
        return rc;
    return entry_of(pg, ref) != NULL;
}

/* The identity the page reports for index i; borrowed from *js. */
static int identity_at(reg_page_handle h, int i, reg_identity *id, cJSON **js, int *connected)
{
    char err[64];
    *connected = 0;
    int rc = call(h, 0, js, err, sizeof err, "g.identity(%d)", i);
    if (rc < 0)
        return rc;
    *connected = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(*js, "connected"));
    memset(id, 0, sizeof *id);
    id->testid = (char *)jstr(*js, "testid");
    id->id = (char *)jstr(*js, "id");
    id->aria_label = (char *)jstr(*js, "aria");
    id->role = (char *)jstr(*js, "role");
    id->name = (char *)jstr(*js, "name");
    id->tag = (char *)jstr(*js, "tag");
    id->parent_role = (char *)jstr(*js, "prole");
    id->sibling_index = jint(*js, "sib", 0);
    return 0;
}

/* 1 when page-side index i is attached and scores >= 0.5 against e. */
static int confident(reg_page_handle h, int i, const reg_entry *e, int *rc)
{
    reg_identity id;
    cJSON *js = NULL;
    int connected;
    *rc = identity_at(h, i, &id, &js, &connected);
    int ok = *rc == 0 && connected && reg_identity_score(&e->ident, &id) >= REG_SAME_SCORE;
    cJSON_Delete(js);
    return ok;
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case REG_T_CSS:
        return "css";
    case REG_T_XPATH:
        return "xpath";
    case REG_T_ROLE:
        return "role";
    case REG_T_TEXT:
        return "text";
    case REG_T_LABEL:
        return "label";
    case REG_T_PLACEHOLDER:
        return "placeholder";
    case REG_T_TESTID:
        return "testid";
    case REG_T_ALT:
        return "alt";
    case REG_T_TITLE:
        return "title";
    }
    return "css";
}

/* Runs one resolve(spec) in the page: the matching indices into *matches (owned). */
static int find(reg_page_handle h, const char *kind, const char *value, const char *name,
                int substring, int **matches, int *count, char *err, size_t errlen)
{
    char *qv = quote(value), *qn = name ? quote(name) : strdup("null");
    cJSON *js = NULL;
    int rc = RG_ENOMEM;
    *matches = NULL;
    *count = 0;
    if (qv && qn) {
        rg_buf spec;
        rg_buf_init(&spec);
        rg_buf_printf(&spec, "{\"kind\":\"%s\",\"value\":%s,\"name\":%s,\"substring\":%s}", kind,
                      qv, qn, substring ? "true" : "false");
        char *qs = spec.failed ? NULL : quote(spec.data);
        rg_buf_destroy(&spec);
        rc = qs ? call(h, 0, &js, err, errlen, "g.resolve(%s)", qs) : RG_ENOMEM;
        free(qs);
    }
    free(qv);
    free(qn);
    if (rc < 0)
        return rc;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(js, "matches");
    int n = cJSON_GetArraySize(m);
    *count = jint(js, "count", n);
    *matches = calloc((size_t)(n ? n : 1), sizeof **matches);
    if (!*matches) {
        cJSON_Delete(js);
        return RG_ENOMEM;
    }
    int k = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, m)
    {
        if (cJSON_IsNumber(v))
            (*matches)[k++] = (int)v->valuedouble;
    }
    if (*count < k)
        *count = k;
    cJSON_Delete(js);
    return 0;
}

/* ---- resolution ---- */

static int heal(reg_page *pg, reg_page_handle h, const reg_entry *e, reg_resolved *out)
{
    struct {
        const char *kind, *value, *name, *via;
    } ways[] = {
        {"heal_testid", e->ident.testid, NULL, "testid"},
        {"heal_aria_role", e->ident.aria_label, e->ident.role, "aria_label"},
        {"heal_id", e->ident.id, NULL, "id"},
        {"heal_name", e->name_attr, NULL, "name"},
    };
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        if (!ways[w].value || !*ways[w].value)
            continue;
        int *m, n;
        char err[128];
        int rc = find(h, ways[w].kind, ways[w].value, ways[w].name, 0, &m, &n, err, sizeof err);
        if (rc < 0)
            return rc;
        int hit = -1, hits = 0;
        for (int k = 0; k < n && k < 20; k++) {
            if (confident(h, m[k], e, &rc)) {
                hit = m[k];
                hits++;
            }
            if (rc < 0) {
                free(m);
                return rc;
            }
        }
        free(m);
        if (hits == 1) {
            out->index = hit;
            out->healed = 1;
            snprintf(out->healed_from, sizeof out->healed_from, "%s", e->ref);
            out->healed_via = ways[w].via;
            return reg_page_bind(pg, hit, e->ref);
        }
    }
    return RG_ESTALE;
}

static int resolve_ref(reg_page *pg, reg_page_handle h, const char *ref, reg_resolved *out,
                       char *err, size_t errlen)
{
    int rc;
    if (!pg->loaded && (rc = reg_page_load(pg)) < 0)
        return rc;
    const reg_entry *e = entry_of(pg, ref);
    if (!e) {
        snprintf(err, errlen,
                 "no element has the ref %s on this page (never given, or expired): observe "
                 "again",
                 ref);
        return RG_ESTALE;
    }
    snprintf(out->ref, sizeof out->ref, "%s", ref);
    int i = reg_page_index(pg, ref);
    if (i >= 0) {
        if (confident(h, i, e, &rc)) {
            out->index = i;
            return 0;
        }
        if (rc < 0)
            return rc;
    }
    rc = heal(pg, h, e, out);
    if (rc == RG_ESTALE)
        snprintf(err, errlen,
                 "the element of %s is gone and no element matches it confidently: observe "
                 "again",
                 ref);
    return rc;
}

int reg_resolve(reg_page *pg, reg_page_handle h, const reg_target *t, int has_nth, int nth,
                int timeout_ms, reg_resolved *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->index = -1;
    if (t->kind == REG_T_REF)
        return resolve_ref(pg, h, t->value, out, err, errlen);
    int64_t deadline = rg_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        int *m, n;
        int rc = find(h, kind_name(t->kind), t->value, t->name, t->substring, &m, &n, err,
                      errlen);
        if (rc < 0)
            return rc;
        out->count = n;
        if (n > 1 && !has_nth) {
            free(m);
            snprintf(err, errlen, "the target matches %d elements: give nth, or a narrower target",
                     n);
            return RG_EAMBIGUOUS;
        }
        int k = has_nth ? (nth < 0 ? n + nth : nth) : 0;
        if (n > 0 && k >= 0 && k < n && k < 1000) {
            out->index = m[k];
            free(m);
            if (out->index < (int)pg->n_prev && pg->prev_refs[out->index])
                snprintf(out->ref, sizeof out->ref, "%s", pg->prev_refs[out->index]);
            return 0;
        }
        free(m);
        if (rg_now_ms() >= deadline) {
            if (n > 0)
                snprintf(err, errlen, "nth %d is out of range: the target matches %d", nth, n);
            else
                snprintf(err, errlen, "the target matched nothing within %d ms", timeout_ms);
            return RG_ENOMATCH;
        }
        rg_sleep_ms(POLL_MS);
    }
}

/* ---- actionability and input ---- */

/* Sentinel of wait_actionable: the page's identity of the element is not the registry's. */
#define NOT_SAME 1

/*
 * The registry's identity of e as a JS object literal, owned (NULL: no
 * memory). The page compares it field by field with identity(i), an
 * absent field and "" alike as reg_identity_score counts them: when all
 * are the same, that score is 1, so the element is the ref's.
 */
static char *expect_literal(const reg_entry *e)
{
    const struct {
        const char *k, *v;
    } f[] = {{"testid", e->ident.testid}, {"id", e->ident.id},     {"aria", e->ident.aria_label},
             {"role", e->ident.role},     {"name", e->ident.name}, {"tag", e->ident.tag},
             {"prole", e->ident.parent_role}};
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, "{");
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        rg_buf_printf(&b, "%s:", f[k].k);
        rg_buf_json_str(&b, f[k].v ? f[k].v : "", f[k].v ? strlen(f[k].v) : 0);
        rg_buf_puts(&b, ",");
    }
    rg_buf_printf(&b, "sib:%d}", e->ident.sibling_index);
    return b.failed ? (rg_buf_destroy(&b), NULL) : rg_buf_steal(&b);
}

/*
 * Waits until index i is actionable (opts: scroll, enabled, hit) and gives
 * its click point and box. RG_ENOTACTIONABLE with the last reason after the
 * deadline; a detached element fails at once.
 *
 * Each check is one page call, and two more steps ride in it, so that the
 * common case costs one round trip instead of three:
 * - expect (NULL: none), the registry's identity of a ref's element
 *   (expect_literal): the first check first compares it with the page's;
 *   when they differ nothing else is done in the page and NOT_SAME is
 *   returned, for the caller to resolve the ref the ordinary way;
 * - then (NULL: none), a page-side call such as g.fill(i,v): run in the
 *   same call as the check that found the element actionable, and only
 *   then; its answer goes to *then_out (owned), its "error" fails the wait
 *   as a separate call's would.
 */
static int wait_actionable(reg_page_handle h, int i, const char *opts, const char *expect,
                           const char *then, int64_t deadline, double box[6], cJSON **then_out,
                           char *err, size_t errlen)
{
    char last[160] = "", modal[128] = "";
    int64_t blocked_since = 0;
    if (then_out)
        *then_out = NULL;
    for (int attempt = 0;; attempt++) {
        cJSON *js = NULL, *act = NULL;
        const char *ex = attempt == 0 ? expect : NULL;
        int rc;
        if (!ex && !then) {
            rc = call(h, 1, &js, err, errlen, "g.actionable(%d,'%s')", i, opts);
            act = js;
        } else {
            rc = call(h, 1, &js, err, errlen,
                      "(function(){var e=%s;if(e){var o=JSON.parse(g.identity(%d));"
                      "if(o.connected!==true)return '{\"same\":false}';"
                      "for(var k in e){var a=o[k],b=e[k];if(a===null||a===undefined)a='';"
                      "if(a!==b)return '{\"same\":false}'}}"
                      "return g.actionable(%d,'%s').then(function(a){"
                      "var ok=%s&&JSON.parse(a).state==='ok';"
                      "return '{\"act\":'+a+(ok?',\"then\":'+(%s):'')+'}'})})()",
                      ex ? ex : "null", i, i, opts, then ? "true" : "false", then ? then : "''");
            if (rc == 0 && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(js, "same"))) {
                cJSON_Delete(js);
                return NOT_SAME;
            }
            act = cJSON_GetObjectItemCaseSensitive(js, "act");
            if (rc == 0)
                rc = reg_page_error(act, err, errlen);
        }
        if (rc < 0) {
            cJSON_Delete(js);
            return rc;
        }
        const char *st = jstr(act, "state");
        if (st && !strcmp(st, "ok")) {
            const char *k[] = {"x", "y", "w", "h", "sx", "sy"};
            for (int j = 0; j < 6; j++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(act, k[j]);
                box[j] = cJSON_IsNumber(v) ? v->valuedouble : 0;
            }
            if (then) {
                cJSON *t = cJSON_DetachItemFromObjectCaseSensitive(js, "then");
                rc = reg_page_error(t, err, errlen);
                if (rc == 0 && !cJSON_IsObject(t)) {
                    snprintf(err, errlen, "the page-side script returned malformed JSON");
                    rc = RG_EINTERNAL;
                }
                if (rc == 0 && then_out)
                    *then_out = t;
                else
                    cJSON_Delete(t);
            }
            cJSON_Delete(js);
            return rc;
        }
        const char *by = jstr(act, "by");
        snprintf(last, sizeof last, "%s%s%s", st ? st : "unknown", by ? " by " : "", by ? by : "");
        int detached = st && !strcmp(st, "detached");
        int blocked = st && !strcmp(st, "blocked");
        if (blocked && !blocked_since)
            blocked_since = rg_now_ms();
        else if (!blocked)
            blocked_since = 0;
        snprintf(modal, sizeof modal, "%s", blocked && by ? by : "");
        cJSON_Delete(js); /* st and by die with it */
        int64_t now = rg_now_ms();
        if (blocked && (now - blocked_since >= MODAL_WAIT_MS || now >= deadline)) {
            snprintf(err, errlen,
                     "the element is not actionable: it is behind the modal dialog %s, which "
                     "makes the rest of the page inert: act in the dialog first (observe shows "
                     "it), or close it (press Escape)",
                     modal);
            return RG_ENOTACTIONABLE;
        }
        if (detached || now >= deadline) {
            snprintf(err, errlen, "the element is not actionable: %s", last);
            return RG_ENOTACTIONABLE;
        }
        rg_sleep_ms(POLL_MS / 2);
    }
}

/*
 * One Input.dispatchMouseEvent. buttons: the buttons held during it (1 the
 * left), or -1 to leave it out. Waited for when wait is set. Chromium
 * answers a mouse move only after the next frame (8-16 ms here), while
 * what follows on the same session is queued behind an event not waited
 * for and delivered in order anyway; an event waited for is answered only
 * after everything before it was handled, so each gesture waits for its
 * last event at least, and errors (a crashed page) still surface.
 */
static int mouse(reg_page_handle h, const char *type, double x, double y, const char *button,
                 int buttons, int count, unsigned mods, int wait)
{
    char q[256], held[24] = "";
    if (buttons >= 0)
        snprintf(held, sizeof held, ",\"buttons\":%d", buttons);
    snprintf(q, sizeof q,
             "{\"type\":\"%s\",\"x\":%.2f,\"y\":%.2f,\"button\":\"%s\"%s,\"clickCount\":%d,"
             "\"modifiers\":%u}",
             type, x, y, button, held, count, mods);
    return wait ? cdp_call(h.conn, h.session, "Input.dispatchMouseEvent", q, JS_TIMEOUT_MS, NULL)
                : cdp_call_async(h.conn, h.session, "Input.dispatchMouseEvent", q, JS_TIMEOUT_MS,
                                 NULL, NULL);
}

/* A click: the move and each press queued, each release waited for (hover
   handlers still run before mousedown, in order). */
static int click_at(reg_page_handle h, double x, double y, const char *button, int count,
                    unsigned mods)
{
    int rc = mouse(h, "mouseMoved", x, y, "none", -1, 0, mods, 0);
    for (int k = 1; rc == 0 && k <= count; k++) {
        rc = mouse(h, "mousePressed", x, y, button, -1, k, mods, 0);
        if (rc == 0)
            rc = mouse(h, "mouseReleased", x, y, button, -1, k, mods, 1);
    }
    return rc;
}

/* ---- actions ---- */

static int screenshot(reg_page *pg, reg_page_handle h, const reg_action *a, int index,
                      int64_t deadline, reg_action_result *out, char *err, size_t errlen)
{
    const char *fmt = a->format && !strcmp(a->format, "jpeg") ? "jpeg" : "png";
    if (a->format && strcmp(a->format, "png") && strcmp(a->format, "jpeg")) {
        snprintf(err, errlen, "format must be png or jpeg");
        return RG_EBADREQ;
    }
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"format\":\"%s\"", fmt);
    if (!strcmp(fmt, "jpeg") && a->quality > 0 && a->quality <= 100)
        rg_buf_printf(&q, ",\"quality\":%d", a->quality);
    int rc = 0;
    double w = 0, hgt = 0;
    if (index >= 0) {
        double box[6];
        rc = wait_actionable(h, index, "{\"scroll\":true}", NULL, NULL, deadline, box, NULL, err,
                             errlen);
        cJSON *js = NULL;
        double fxy[4] = {0, 0, 0, 0};
        if (rc == 0 && pg->act_frame[0]) {
            /* In a frame of another site: only the page's target takes a
               screenshot, so the box goes where the frame is in the page. */
            if ((rc = reg_frames_offset(pg->act_top, &pg->act_xf, fxy)) < 0)
                snprintf(err, errlen, "where the frame is in the page is not known (%s)",
                         rg_err_code(rc));
            h = pg->act_top;
        } else if (rc == 0) {
            rc = call(h, 0, &js, err, errlen, "JSON.stringify({x:scrollX,y:scrollY})");
        }
        if (rc == 0) {
            double sx = js ? jint(js, "x", 0) : fxy[2], sy = js ? jint(js, "y", 0) : fxy[3];
            box[0] += fxy[0];
            box[1] += fxy[1];
            w = box[2];
            hgt = box[3];
            rg_buf_printf(&q,
                          ",\"captureBeyondViewport\":true,\"clip\":{\"x\":%.2f,\"y\":%.2f,"
                          "\"width\":%.2f,\"height\":%.2f,\"scale\":1}",
                          box[0] - w / 2 + sx, box[1] - hgt / 2 + sy, w, hgt);
        }
        cJSON_Delete(js);
    } else {
        cdp_reply m;
        rc = cdp_call(h.conn, h.session, "Page.getLayoutMetrics", NULL, JS_TIMEOUT_MS, &m);
        if (rc == 0) {
            const cJSON *sz = cJSON_GetObjectItemCaseSensitive(
                m.result, a->full_page ? "cssContentSize" : "cssVisualViewport");
            const cJSON *cw = cJSON_GetObjectItemCaseSensitive(sz, a->full_page ? "width"
                                                                                 : "clientWidth");
            const cJSON *ch = cJSON_GetObjectItemCaseSensitive(sz, a->full_page ? "height"
                                                                                 : "clientHeight");
            w = cJSON_IsNumber(cw) ? cw->valuedouble : 0;
            hgt = cJSON_IsNumber(ch) ? ch->valuedouble : 0;
            if (a->full_page)
                rg_buf_printf(&q,
                              ",\"captureBeyondViewport\":true,\"clip\":{\"x\":0,\"y\":0,"
                              "\"width\":%.0f,\"height\":%.0f,\"scale\":1}",
                              w, hgt);
        } else {
            snprintf(err, errlen, "%s", m.error);
        }
        cdp_reply_free(&m);
    }
    rg_buf_puts(&q, "}");
    cdp_reply r = {0};
    if (rc == 0)
        rc = q.failed ? RG_ENOMEM
                      : cdp_call(h.conn, h.session, "Page.captureScreenshot", q.data, 30000, &r);
    rg_buf_destroy(&q);
    if (rc == 0) {
        const char *d = jstr(r.result, "data");
        out->data = d ? rg_base64_decode(d, strlen(d), &out->data_len) : NULL;
        if (!out->data) {
            snprintf(err, errlen, "the browser returned no image");
            rc = RG_EINTERNAL;
        }
        out->width = (int)(w + 0.5);
        out->height = (int)(hgt + 0.5);
    } else if (r.error[0]) {
        snprintf(err, errlen, "%s", r.error);
    }
    cdp_reply_free(&r);
    return rc;
}

/* One poll of a wait condition: 1 met, 0 not yet, < 0 error. */
static int wait_once(reg_page *pg, reg_page_handle h, const reg_action *a, const reg_target *t,
                     char *err, size_t errlen)
{
    cJSON *js = NULL;
    int rc;
    if (!t) {
        /* a text waits to appear, or with state hidden (or detached) to go */
        if (!a->text && a->state && strcmp(a->state, "visible")) {
            snprintf(err, errlen, "a wait for a url takes no state");
            return RG_EBADREQ;
        }
        int gone = a->state && (!strcmp(a->state, "hidden") || !strcmp(a->state, "detached"));
        if (a->state && !gone && strcmp(a->state, "visible") && strcmp(a->state, "attached")) {
            snprintf(err, errlen, "a wait for a text takes state visible or hidden");
            return RG_EBADREQ;
        }
        const char *kind = a->text ? "text" : a->url ? "url" : "load";
        char *q = quote(a->text ? a->text : a->url ? a->url : a->load);
        if (!q)
            return RG_ENOMEM;
        rg_buf c;
        rg_buf_init(&c);
        rg_buf_printf(&c, "g.waitCheck(JSON.stringify({%s:%s}))", kind, q);
        free(q);
        if (c.failed) {
            rg_buf_destroy(&c);
            return RG_ENOMEM;
        }
        rc = reg_js(h, c.data, 0, JS_TIMEOUT_MS, &js, err, errlen);
        int ok = rc == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(js, "ok"));
        cJSON_Delete(js);
        /* text the page shows in a frame of another site counts too (its
           outline is the page's); a URL is the page's own */
        if (rc == 0 && !ok && a->text)
            ok = reg_frames_any(h, c.data);
        rg_buf_destroy(&c);
        return rc < 0 ? rc : gone ? !ok : ok;
    }
    const char *state = a->state ? a->state : "visible";
    reg_resolved res;
    rc = reg_resolve(pg, h, t, a->has_nth, a->nth, 0, &res, err, errlen);
    int absent = rc == RG_ENOMATCH || rc == RG_ESTALE;
    if (rc < 0 && !absent)
        return rc;
    if (!strcmp(state, "detached") || !strcmp(state, "attached")) {
        int attached = 0;
        if (!absent) {
            reg_identity id;
            if ((rc = identity_at(h, res.index, &id, &js, &attached)) < 0)
                return rc;
            cJSON_Delete(js);
        }
        return !strcmp(state, "attached") ? attached : !attached;
    }
    int visible = 0, enabled = 0;
    if (!absent) {
        rc = call(h, 1, &js, err, errlen, "g.actionable(%d,'{\"enabled\":true}')", res.index);
        if (rc < 0)
            return rc;
        const char *st = jstr(js, "state");
        enabled = st && !strcmp(st, "ok");
        visible = enabled || (st && (!strcmp(st, "disabled") || !strcmp(st, "unstable")));
        cJSON_Delete(js);
    }
    if (!strcmp(state, "visible"))
        return visible;
    if (!strcmp(state, "hidden"))
        return !visible;
    if (!strcmp(state, "enabled"))
        return enabled;
    snprintf(err, errlen, "state must be visible, hidden, enabled, attached or detached");
    return RG_EBADREQ;
}

static int set_checked(reg_page *pg, reg_page_handle h, const reg_action *a, int index,
                       int64_t deadline, reg_action_result *out, char *err, size_t errlen)
{
    (void)pg;
    int want = a->op == REG_OP_CHECK;
    for (int attempt = 0; attempt < 2; attempt++) {
        cJSON *js = NULL;
        int rc = call(h, 0, &js, err, errlen, "g.checked(%d)", index);
        if (rc < 0)
            return rc;
        int now = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(js, "checked"));
        cJSON_Delete(js);
        if (now == want) {
            out->checked = now;
            return 0;
        }
        if (attempt == 1)
            break;
        double box[6];
        rc = wait_actionable(h, index, "{\"scroll\":true,\"enabled\":true,\"hit\":true}", NULL,
                             NULL, deadline, box, NULL, err, errlen);
        if (rc == 0)
            rc = click_at(h, box[0], box[1], "left", 1, 0);
        if (rc < 0)
            return rc;
    }
    snprintf(err, errlen, "clicking the element did not %s it", want ? "check" : "uncheck");
    return RG_ENOTACTIONABLE;
}

static int inspect(reg_page *pg, reg_page_handle h, int index, reg_action_result *out,
                   char *err, size_t errlen)
{
    cJSON *js = NULL;
    int rc = call(h, 0, &js, err, errlen, "g.inspect(%d)", index);
    if (rc < 0)
        return rc;
    if (!out->ref[0]) {
        /* Inspect registers an element that has no ref yet. */
        reg_node nd = {0};
        nd.role = jstr(js, "role");
        nd.name = jstr(js, "name");
        nd.tag = jstr(js, "tag");
        nd.frame = pg->act_frame[0] ? pg->act_frame : jstr(js, "frame");
        nd.name_attr = jstr(js, "nattr");
        nd.index = index;
        nd.ident.testid = (char *)jstr(js, "testid");
        nd.ident.id = (char *)jstr(js, "id");
        nd.ident.aria_label = (char *)jstr(js, "aria");
        nd.ident.role = (char *)nd.role;
        nd.ident.name = (char *)nd.name;
        nd.ident.tag = (char *)nd.tag;
        nd.ident.parent_role = (char *)jstr(js, "prole");
        nd.ident.sibling_index = jint(js, "sib", 0);
        const char *alts[16];
        size_t n_alt = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(js, "sel"))
        {
            if (cJSON_IsString(s) && n_alt < 16)
                alts[n_alt++] = s->valuestring;
        }
        nd.alt = alts;
        nd.n_alt = n_alt;
        nd.selector = n_alt ? alts[0] : NULL;
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(js, "b");
        for (int k = 0; k < 4; k++) {
            const cJSON *bv = cJSON_GetArrayItem(b, k);
            nd.bounds[k] = cJSON_IsNumber(bv) ? (int)bv->valuedouble : 0;
        }
        rc = reg_page_register(pg, &nd, out->ref);
        if (rc < 0) {
            cJSON_Delete(js);
            return rc;
        }
    }
    cJSON_AddStringToObject(js, "ref", out->ref);
    out->value = js;
    return 0;
}

/* click and hover: the element actionable at its centre, then the mouse there. */
static int point_at(reg_page_handle h, const reg_action *a, int i, const char *expect,
                    int64_t deadline, reg_action_result *out, char *err, size_t errlen)
{
    const char *button = a->button ? a->button : "left";
    if (strcmp(button, "left") && strcmp(button, "right") && strcmp(button, "middle")) {
        snprintf(err, errlen, "button must be left, right or middle");
        return RG_EBADREQ;
    }
    double box[6];
    int rc =
        wait_actionable(h, i,
                        a->op == REG_OP_CLICK ? "{\"scroll\":true,\"enabled\":true,\"hit\":true}"
                                              : "{\"scroll\":true,\"hit\":true}",
                        expect, NULL, deadline, box, NULL, err, errlen);
    if (rc != 0)
        return rc;
    out->has_point = 1;
    out->x = box[0];
    out->y = box[1];
    out->has_scroll = 1; /* the page's scroll as the pointer acts: the checkpoint takes it */
    out->sx = box[4];
    out->sy = box[5];
    if (a->op == REG_OP_HOVER)
        return mouse(h, "mouseMoved", box[0], box[1], "none", -1, 0, 0, 1);
    return click_at(h, box[0], box[1], button, a->click_count > 0 ? a->click_count : 1,
                    a->modifiers);
}

/*
 * drag: presses the left button on the element at i, moves to the element
 * a->to names in DRAG_STEPS steps (drag libraries wait for some distance
 * before a drag starts) and releases it there, with the button held in
 * between (buttons: 1), as a hand does. The page may drag with pointer
 * events (sortable lists, sliders, boards), or with HTML5 drag and drop
 * (draggable="true"): Chromium then starts a drag of its own, which
 * DevTools can intercept (Input.setInterceptDrags) and which is ended with
 * Input.dispatchDragEvent at the drop point, as an operating system would.
 * The drop target is found when the button is down (the page may have
 * moved things for the drag); it is scrolled into view, and not
 * hit-tested: what is dragged is often over it.
 */
#define DRAG_STEPS 8
#define DRAG_START_STEPS 3 /* moves that begin the drag, over DRAG_START_PX px */
#define DRAG_START_PX 12

/* rc, with err said to be about the drop target */
static int to_error(int rc, char *err, size_t errlen)
{
    char why[256];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "the drop target (args.to): %s", why);
    return rc;
}

/* A drag's event, the left button held (up after mouseReleased). */
static int mouse_held(reg_page_handle h, const char *type, double x, double y, int wait)
{
    return mouse(h, type, x, y, "left", strcmp(type, "mouseReleased") ? 1 : 0, 1, 0, wait);
}

static int drag_event(reg_page_handle h, const char *type, double x, double y, const cJSON *data)
{
    char *d = cJSON_PrintUnformatted(data);
    if (!d)
        return RG_ENOMEM;
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"type\":\"%s\",\"x\":%.2f,\"y\":%.2f,\"data\":%s}", type, x, y, d);
    free(d);
    int rc = q.failed ? RG_ENOMEM
                      : cdp_call(h.conn, h.session, "Input.dispatchDragEvent", q.data,
                                 JS_TIMEOUT_MS, NULL);
    rg_buf_destroy(&q);
    return rc;
}

static int drag_to(reg_page *pg, reg_page_handle h, const reg_action *a, int i, int64_t deadline,
                   reg_action_result *out, char *err, size_t errlen)
{
    if (!a->to || !*a->to) {
        snprintf(err, errlen, "drag needs args.to, the element to drop on");
        return RG_EBADREQ;
    }
    reg_target t;
    int rc = reg_target_parse(a->to, strlen(a->to), &t, err, errlen);
    if (rc < 0)
        return rc;
    reg_resolved to = {.index = -1};
    rc = reg_resolve(pg, h, &t, 0, 0, (int)(deadline - rg_now_ms()), &to, err, errlen);
    reg_target_destroy(&t);
    if (rc < 0)
        return to_error(rc, err, errlen);
    double from[6], dest[6];
    rc = wait_actionable(h, i, "{\"scroll\":true,\"enabled\":true,\"hit\":true}", NULL, NULL,
                         deadline, from, NULL, err, errlen);
    if (rc < 0)
        return rc;
    /* where the drop target is now (maybe out of view), for the direction */
    rc = wait_actionable(h, to.index, "{}", NULL, NULL, deadline, dest, NULL, err, errlen);
    if (rc < 0)
        return to_error(rc, err, errlen);
    double ux = dest[0] - from[0], uy = dest[1] - from[1];
    double m = ux < 0 ? -ux : ux, my = uy < 0 ? -uy : uy;
    if (my > m)
        m = my;
    if (m < 1) {
        ux = 1;
        uy = 0;
    } else { /* the longer side 1: the first moves go 1 to 1.4 times DRAG_START_PX */
        ux /= m;
        uy /= m;
    }
    cdp_waiter *w = NULL;
    rc = cdp_waiter_new(h.conn, h.session, "Input.dragIntercepted", &w);
    if (rc == 0)
        rc = cdp_call(h.conn, h.session, "Input.setInterceptDrags", "{\"enabled\":true}",
                      JS_TIMEOUT_MS, NULL);
    if (rc == 0) /* queued: the press after it is waited for */
        rc = mouse(h, "mouseMoved", from[0], from[1], "none", -1, 0, 0, 0);
    int pressed = rc == 0 && (rc = mouse_held(h, "mousePressed", from[0], from[1], 1)) == 0;
    /* The drag begins near the element, before anything scrolls: a page
       that scrolled under a pressed button would not start one. The last
       move is waited for, so the drag has begun before the scroll below. */
    double x = from[0], y = from[1];
    for (int k = 1; rc == 0 && k <= DRAG_START_STEPS; k++) {
        x = from[0] + ux * DRAG_START_PX * k / DRAG_START_STEPS;
        y = from[1] + uy * DRAG_START_PX * k / DRAG_START_STEPS;
        rc = mouse_held(h, "mouseMoved", x, y, k == DRAG_START_STEPS);
    }
    if (rc == 0) {
        rc = wait_actionable(h, to.index, "{\"scroll\":true}", NULL, NULL, deadline, dest, NULL,
                             err, errlen);
        if (rc < 0)
            to_error(rc, err, errlen);
    }
    double x0 = x, y0 = y;
    for (int k = 1; rc == 0 && k <= DRAG_STEPS; k++) {
        x = x0 + (dest[0] - x0) * k / DRAG_STEPS;
        y = y0 + (dest[1] - y0) * k / DRAG_STEPS;
        rc = mouse_held(h, "mouseMoved", x, y, k == DRAG_STEPS);
    }
    /* An HTML5 drag began: the page's drop handlers get it at the point. The
       interception is announced before the move that began it is answered. */
    const cJSON *ev = NULL;
    if (rc == 0 && cdp_waiter_wait(w, 1, &ev) == 0) {
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(ev, "data");
        rc = drag_event(h, "dragEnter", x, y, data);
        if (rc == 0)
            rc = drag_event(h, "dragOver", x, y, data);
        if (rc == 0)
            rc = drag_event(h, "drop", x, y, data);
    }
    /* The button goes up whatever happened, where the pointer is. */
    if (pressed) {
        int rr = mouse_held(h, "mouseReleased", x, y, 1);
        if (rc == 0)
            rc = rr;
    }
    if (w)
        cdp_call(h.conn, h.session, "Input.setInterceptDrags", "{\"enabled\":false}", JS_TIMEOUT_MS,
                 NULL);
    cdp_waiter_free(w);
    if (rc == 0) {
        out->has_point = 1;
        out->x = x;
        out->y = y;
        out->has_scroll = 1;
        out->sx = dest[4];
        out->sy = dest[5];
    }
    return rc;
}

/* select: the options whose values or labels are a->values, in the element at i. */
static int select_values(reg_page_handle h, const reg_action *a, int i, int64_t deadline,
                         reg_action_result *out, char *err, size_t errlen)
{
    rg_buf v;
    rg_buf_init(&v);
    rg_buf_puts(&v, "[");
    for (size_t k = 0; k < a->n_values; k++) {
        rg_buf_puts(&v, k ? "," : "");
        rg_buf_json_str(&v, a->values[k], strlen(a->values[k]));
    }
    rg_buf_puts(&v, "]");
    char *q = v.failed ? NULL : quote(v.data);
    rg_buf_destroy(&v);
    double box[6];
    cJSON *js = NULL;
    int rc =
        wait_actionable(h, i, "{\"scroll\":true,\"enabled\":true}", NULL, NULL, deadline, box, NULL,
                        err, errlen);
    if (rc == 0)
        rc = q ? call(h, 0, &js, err, errlen, "g.select(%d,%s)", i, q) : RG_ENOMEM;
    free(q);
    if (rc == 0)
        out->value = cJSON_DetachItemFromObjectCaseSensitive(js, "selected");
    cJSON_Delete(js);
    return rc;
}

/* upload: a->files into the <input type=file> at index i. */
static int upload(reg_page_handle h, const reg_action *a, int i, char *err, size_t errlen)
{
    char *obj = NULL;
    int rc = reg_js_element(h, i, JS_TIMEOUT_MS, &obj, err, errlen);
    if (rc < 0)
        return rc;
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"objectId\":");
    rg_buf_json_str(&q, obj, strlen(obj));
    rg_buf_puts(&q, ",\"returnByValue\":true,\"functionDeclaration\":\"function(){"
                    "return JSON.stringify({tag:String(this.localName||''),"
                    "type:String(this.getAttribute('type')||''),"
                    "file:this.localName==='input'&&this.type==='file',multiple:!!this.multiple,"
                    "disabled:!!this.disabled})}\"}");
    cdp_reply r = {0};
    rc = q.failed
             ? RG_ENOMEM
             : cdp_call(h.conn, h.session, "Runtime.callFunctionOn", q.data, JS_TIMEOUT_MS, &r);
    cJSON *info = NULL;
    if (rc == 0) {
        const char *v = jstr(cJSON_GetObjectItemCaseSensitive(r.result, "result"), "value");
        info = v ? cJSON_Parse(v) : NULL;
        if (!info) {
            snprintf(err, errlen, "the element could not be examined");
            rc = RG_EINTERNAL;
        }
    } else {
        snprintf(err, errlen, "%s", r.error[0] ? r.error : rg_err_code(rc));
    }
    cdp_reply_free(&r);
    if (rc == 0 && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "file"))) {
        const char *tag = jstr(info, "tag"), *type = jstr(info, "type");
        snprintf(err, errlen,
                 "the target is a <%.40s%s%.40s>, not an <input type=file>: upload sets the "
                 "files of a file input",
                 tag ? tag : "?", type && *type ? " type=" : "", type ? type : "");
        rc = RG_EBADREQ;
    } else if (rc == 0 && a->n_files > 1 &&
               !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "multiple"))) {
        snprintf(err, errlen,
                 "the file input takes one file (it has no multiple attribute); %zu were given",
                 a->n_files);
        rc = RG_EBADREQ;
    } else if (rc == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "disabled"))) {
        snprintf(err, errlen, "the element is not actionable: disabled");
        rc = RG_ENOTACTIONABLE;
    }
    cJSON_Delete(info);
    if (rc == 0) {
        rg_buf_reset(&q);
        rg_buf_puts(&q, "{\"files\":[");
        for (size_t k = 0; k < a->n_files; k++) {
            rg_buf_puts(&q, k ? "," : "");
            rg_buf_json_str(&q, a->files[k], strlen(a->files[k]));
        }
        rg_buf_puts(&q, "],\"objectId\":");
        rg_buf_json_str(&q, obj, strlen(obj));
        rg_buf_puts(&q, "}");
        memset(&r, 0, sizeof r);
        rc = q.failed
                 ? RG_ENOMEM
                 : cdp_call(h.conn, h.session, "DOM.setFileInputFiles", q.data, JS_TIMEOUT_MS, &r);
        if (rc < 0)
            snprintf(err, errlen, "the browser did not take the files: %s",
                     r.error[0] ? r.error : rg_err_code(rc));
        cdp_reply_free(&r);
    }
    /* The handle is ours to release, whatever happened. */
    rg_buf_destroy(&q);
    reg_release_object(h, obj);
    free(obj);
    return rc;
}

/*
 * The action a on the element at index i (-1: none), once its target is
 * resolved. expect (NULL: none): the identity the element at i must have
 * (expect_literal), not yet checked; NOT_SAME when it has not, with nothing
 * done. Only the ops whose first page call is wait_actionable take one.
 */
static int run_action(reg_page *pg, reg_page_handle h, const reg_action *a, int i,
                      const char *expect, int64_t deadline, reg_action_result *out, char *err,
                      size_t errlen)
{
    int rc = 0;
    double box[6];
    cJSON *js = NULL;
    switch (a->op) {
    case REG_OP_CLICK:
    case REG_OP_HOVER:
        rc = point_at(h, a, i, expect, deadline, out, err, errlen);
        break;
    case REG_OP_FOCUS:
        rc = call(h, 0, &js, err, errlen, "g.focus(%d)", i);
        break;
    case REG_OP_FILL: {
        /* The fill rides in the call that finds the element actionable. */
        char *q = quote(a->value ? a->value : "");
        rg_buf f;
        rg_buf_init(&f);
        if (q)
            rg_buf_printf(&f, "g.fill(%d,%s)", i, q);
        free(q);
        rc = q && !f.failed
                 ? wait_actionable(h, i, "{\"scroll\":true,\"enabled\":true,\"editable\":true}",
                                   expect, f.data, deadline, box, &js, err, errlen)
                 : RG_ENOMEM;
        rg_buf_destroy(&f);
        if (rc == 0) {
            /* The fill focuses without scrolling: the scroll the check saw is the page's. */
            out->has_scroll = 1;
            out->sx = box[4];
            out->sy = box[5];
        }
        break;
    }
    case REG_OP_TYPE:
    case REG_OP_PRESS:
        if (i >= 0) {
            /* The focus rides in the call that finds the element actionable. */
            char f[32];
            snprintf(f, sizeof f, "g.focus(%d)", i);
            rc = wait_actionable(h, i, "{\"scroll\":true,\"enabled\":true}", expect, f, deadline,
                                 box, &js, err, errlen);
            cJSON_Delete(js);
            js = NULL;
        }
        if (rc == 0)
            rc = a->op == REG_OP_TYPE ? reg_type_text(h, a->text ? a->text : "", a->delay_ms,
                                                      deadline, err, errlen)
                                      : reg_press(h, a->key, err, errlen);
        break;
    case REG_OP_SELECT:
        rc = select_values(h, a, i, deadline, out, err, errlen);
        break;
    case REG_OP_CHECK:
    case REG_OP_UNCHECK:
        rc = set_checked(pg, h, a, i, deadline, out, err, errlen);
        break;
    case REG_OP_SCROLL: {
        char opts[160];
        const char *to = a->to && strcmp(a->to, "target") ? a->to : NULL;
        if (to && strcmp(to, "top") && strcmp(to, "bottom")) {
            snprintf(err, errlen, "to must be top, bottom or target");
            rc = RG_EBADREQ;
            break;
        }
        snprintf(opts, sizeof opts, "{\"dx\":%d,\"dy\":%d,\"to\":%s%s%s}", a->dx, a->dy,
                 to ? "\"" : "", to ? to : "null", to ? "\"" : "");
        rc = call(h, 0, &js, err, errlen, "g.scroll(%d,'%s')", i, opts);
        if (rc == 0) {
            out->value = js;
            js = NULL;
        }
        break;
    }
    case REG_OP_READ: {
        const char *what = a->what ? a->what : "text";
        if (strcmp(what, "text") && strcmp(what, "html") && strcmp(what, "value") &&
            strcmp(what, "attributes")) {
            snprintf(err, errlen, "what must be text, html, value or attributes");
            rc = RG_EBADREQ;
            break;
        }
        rc = call(h, 0, &js, err, errlen, "g.read(%d,'%s')", i, what);
        if (rc == 0)
            out->value = cJSON_DetachItemFromObjectCaseSensitive(js, "value");
        break;
    }
    case REG_OP_SCREENSHOT:
        rc = screenshot(pg, h, a, i, deadline, out, err, errlen);
        break;
    case REG_OP_INSPECT:
        rc = inspect(pg, h, i, out, err, errlen);
        break;
    case REG_OP_UPLOAD:
        rc = upload(h, a, i, err, errlen);
        break;
    case REG_OP_DRAG:
        rc = drag_to(pg, h, a, i, deadline, out, err, errlen);
        break;
    default:
        snprintf(err, errlen, "unknown operation");
        rc = RG_EBADREQ;
    }
    cJSON_Delete(js);
    return rc;
}

/*
 * Whether the ref's element can be checked in the action's first page call
 * rather than in a call of its own: a click, hover, fill, type or press on a
 * ref the registry has bound to a page-side index, with a valid button.
 * Then res is filled as resolve_ref would (index, ref) and *expect is the
 * identity the element must have; otherwise *expect stays NULL and nothing
 * is done. RG_ENOMEM, or 0.
 */
static int checked_in_page(reg_page *pg, const reg_action *a, const char *ref, reg_resolved *res,
                           char **expect)
{
    *expect = NULL;
    const char *b = a->button;
    if (a->op != REG_OP_CLICK && a->op != REG_OP_HOVER && a->op != REG_OP_FILL &&
        a->op != REG_OP_TYPE && a->op != REG_OP_PRESS)
        return 0;
    if (b && strcmp(b, "left") && strcmp(b, "right") && strcmp(b, "middle"))
        return 0; /* refused after the ref is resolved, as ever */
    if (!pg->loaded && reg_page_load(pg) < 0)
        return 0; /* the ordinary path reports it */
    const reg_entry *e = entry_of(pg, ref);
    int i = e ? reg_page_index(pg, ref) : -1;
    if (i < 0)
        return 0;
    if (!(*expect = expect_literal(e)))
        return RG_ENOMEM;
    res->index = i;
    snprintf(res->ref, sizeof res->ref, "%s", ref);
    return 0;
}

/*
 * A ref whose element is in a frame of another site (its entry's frame is
 * "x<key>", registry/frames.c): the action runs in the frame's own target,
 * whose input events take the frame's coordinates, as a page's do. Sets
 * pg's act_* for the frame and *fh to the frame's handle (its session in *x)
 * and returns 1; 0 for a ref of the page itself; RG_ESTALE when the frame
 * is gone.
 */
static int frame_of(reg_page *pg, reg_page_handle h, const char *ref, reg_xframe *x,
                    reg_page_handle *fh, char *err, size_t errlen)
{
    int rc;
    if (!pg->loaded && (rc = reg_page_load(pg)) < 0)
        return rc;
    const reg_entry *e = entry_of(pg, ref);
    char *end;
    long key = e && e->frame && e->frame[0] == 'x' ? strtol(e->frame + 1, &end, 10) : -1;
    if (key < 0 || key > INT_MAX || *end)
        return 0;
    int base, n;
    if (reg_frames_find(pg, h, (int)key, x, &base, &n) < 0) {
        snprintf(err, errlen,
                 "the frame that held %s is gone (the page changed): observe again", ref);
        return RG_ESTALE;
    }
    *fh = x->h;
    fh->session = x->session;
    pg->act_hint = -1;
    snprintf(pg->act_ref, sizeof pg->act_ref, "%s", ref);
    if (base < 0 && (rc = reg_frames_locate(*fh, e, &pg->act_hint)) < 0) {
        snprintf(err, errlen, "the frame that holds %s did not answer: %s", ref, rg_err_code(rc));
        return rc;
    }
    snprintf(pg->act_frame, sizeof pg->act_frame, "%s", e->frame);
    pg->act_base = base;
    pg->act_n = n;
    return 1;
}

int reg_act(reg_page *pg, reg_page_handle h, const reg_action *a, reg_action_result *out, char *err,
            size_t errlen)
{
    memset(out, 0, sizeof *out);
    err[0] = '\0';
    int timeout = a->timeout_ms > 0 ? a->timeout_ms : DEFAULT_TIMEOUT_MS;
    int64_t t0 = rg_now_ms(), deadline = t0 + timeout;
    reg_target t;
    int has_target = a->target != NULL;
    int rc = 0;
    if (has_target && (rc = reg_target_parse(a->target, strlen(a->target), &t, err, errlen)) < 0)
        return rc;
    int needs_target = a->op == REG_OP_CLICK || a->op == REG_OP_HOVER || a->op == REG_OP_FOCUS ||
                       a->op == REG_OP_FILL || a->op == REG_OP_SELECT || a->op == REG_OP_CHECK ||
                       a->op == REG_OP_UNCHECK || a->op == REG_OP_INSPECT || a->op == REG_OP_UPLOAD ||
                       a->op == REG_OP_DRAG;
    if (needs_target && !has_target) {
        snprintf(err, errlen, "this operation needs a target");
        return RG_EBADREQ;
    }
    reg_xframe xf;
    reg_page_handle top = h;
    int in_frame = 0;
    if (has_target && t.kind == REG_T_REF) {
        if ((rc = frame_of(pg, h, t.value, &xf, &h, err, errlen)) < 0)
            goto out;
        in_frame = rc;
        rc = 0;
        pg->act_top = top;
        pg->act_xf = xf;
    }
    if (a->op == REG_OP_WAIT) {
        if (!has_target && !a->text && !a->url && !a->load) {
            snprintf(err, errlen, "wait needs a target with a state, a text, a url or a load");
            return RG_EBADREQ;
        }
        for (;;) {
            rc = wait_once(pg, h, a, has_target ? &t : NULL, err, errlen);
            if (rc != 0 || rg_now_ms() >= deadline)
                break;
            rg_sleep_ms(POLL_MS);
        }
        out->ms = rg_now_ms() - t0;
        if (rc == 0) {
            snprintf(err, errlen, "the condition was not met within %d ms", timeout);
            rc = RG_ETIMEOUT;
        } else if (rc > 0) {
            rc = 0; /* met */
        }
        goto out;
    }

    reg_resolved res = {.index = -1};
    char *expect = NULL;
    if (has_target && t.kind == REG_T_REF && checked_in_page(pg, a, t.value, &res, &expect) < 0) {
        rc = RG_ENOMEM;
        goto out;
    }
    if (expect) {
        /* The ref's element is checked in the action's first page call. */
        snprintf(out->ref, sizeof out->ref, "%s", res.ref);
        rc = run_action(pg, h, a, res.index, expect, deadline, out, err, errlen);
        free(expect);
        if (rc != NOT_SAME)
            goto out;
        /* Not the same element: resolve it as below (heal, or stale), from scratch. */
        reg_action_result_free(out);
        err[0] = '\0';
        rc = 0;
    }
    if (has_target) {
        rc = reg_resolve(pg, h, &t, a->has_nth, a->nth, (int)(deadline - rg_now_ms()), &res, err,
                         errlen);
        out->count = res.count;
        if (rc < 0)
            goto out;
        snprintf(out->ref, sizeof out->ref, "%s", res.ref);
        out->healed = res.healed;
        snprintf(out->healed_from, sizeof out->healed_from, "%s", res.healed_from);
        out->healed_via = res.healed_via;
    }
    rc = run_action(pg, h, a, res.index, NULL, deadline, out, err, errlen);
out:
    if (has_target)
        reg_target_destroy(&t);
    if (in_frame) {
        double fxy[4];
        /* the point in the page's viewport, as for any click */
        if (rc == 0 && out->has_point && reg_frames_offset(top, &xf, fxy) == 0) {
            out->x += fxy[0];
            out->y += fxy[1];
        }
        pg->act_frame[0] = '\0';
        out->has_scroll = 0; /* the frame's scroll, not the page's */
    }
    return rc;
}
