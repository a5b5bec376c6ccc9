/*
 * pagejs.c - calls into the page-side script (registry/observer/) over
 * Runtime.evaluate, in refgate's isolated world (world.c), never in the
 * page's main world. Every call checks that the world has this build's
 * script (a hash of its source) and installs it when not, so a document the
 * install-on-new-document script did not reach costs one extra round trip,
 * not a wrong answer; a call on a context that went away (a navigation)
 * finds the world's new context and tries again.
 */
#define _GNU_SOURCE
#include "registry/reg_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define NOT_INSTALLED "__refgate_not_installed__"

const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int jint(const cJSON *o, const char *k, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    /* out of int's range (or not a number at all): as if absent */
    return cJSON_IsNumber(v) && v->valuedouble > -2147483648.0 && v->valuedouble < 2147483648.0
               ? (int)v->valuedouble
               : def;
}

/* A marker for the installed script, a hash of its source, and the installer. */
static char script_hash[24];
static char *installer;
static pthread_once_t tag_once = PTHREAD_ONCE_INIT;

static void make_tag(void)
{
    snprintf(script_hash, sizeof script_hash, "%016llx",
             (unsigned long long)XXH3_64bits(reg_observer_js, strlen(reg_observer_js)));
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, reg_observer_js);
    rg_buf_printf(&b, "\n;if(globalThis.__refgate)globalThis.__refgate.rgv=\"%s\";\"ok\"",
                  script_hash);
    if (b.failed)
        abort(); /* a small fixed allocation at start */
    installer = rg_buf_steal(&b);
}

static const char *script_tag(void)
{
    pthread_once(&tag_once, make_tag);
    return script_hash;
}

const char *reg_installer(void)
{
    pthread_once(&tag_once, make_tag);
    return installer;
}

/* Runtime.evaluate in context ctx returning a string value; *value is owned by *reply. */
static int eval_string(reg_page_handle h, int ctx, const char *expr, int await_promise,
                       int timeout_ms, cdp_reply *reply, const char **value)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"contextId\":%d,\"returnByValue\":true,\"awaitPromise\":%s,"
                      "\"expression\":",
                  ctx, await_promise ? "true" : "false");
    rg_buf_json_str(&q, expr, strlen(expr));
    rg_buf_puts(&q, "}");
    if (q.failed) {
        rg_buf_destroy(&q);
        memset(reply, 0, sizeof *reply);
        return RG_ENOMEM;
    }
    int rc = cdp_call(h.conn, h.session, "Runtime.evaluate", q.data, timeout_ms, reply);
    rg_buf_destroy(&q);
    if (rc < 0)
        return rc;
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(reply->result, "exceptionDetails");
    if (ex) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(ex, "exception");
        const char *d = jstr(e, "description");
        snprintf(reply->error, sizeof reply->error, "the page threw: %s",
                 d ? d : "an exception");
        return RG_EINTERNAL;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(reply->result, "result"), "value");
    if (!cJSON_IsString(v)) {
        snprintf(reply->error, sizeof reply->error, "the page script returned no string");
        return RG_EINTERNAL;
    }
    *value = v->valuestring;
    return 0;
}

/*
 * The world's context in the main frame: the one the world's events named,
 * else Page.createIsolatedWorld's answer, which is the world of that name
 * if the document has it already (Chromium keeps one world per frame and
 * name) and a new, empty one if not.
 */
static int world_ctx(reg_page_handle h, int timeout_ms, int *ctx, char *err, size_t errlen)
{
    *ctx = reg_world_ctx(h.world);
    if (*ctx > 0)
        return 0;
    char frame[64];
    int rc = 0;
    if (h.world)
        snprintf(frame, sizeof frame, "%s", reg_world_frame(h.world));
    else if ((rc = reg_main_frame(h, timeout_ms, frame, sizeof frame)) < 0) {
        snprintf(err, errlen, "the page's frame tree is not available (%s)", rg_err_code(rc));
        return rc;
    }
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"worldName\":\"" REG_WORLD_NAME "\",\"frameId\":");
    rg_buf_json_str(&q, frame, strlen(frame));
    rg_buf_puts(&q, "}");
    cdp_reply r;
    rc = q.failed ? RG_ENOMEM
                  : cdp_call(h.conn, h.session, "Page.createIsolatedWorld", q.data, timeout_ms, &r);
    rg_buf_destroy(&q);
    if (rc == 0) {
        *ctx = jint(r.result, "executionContextId", 0);
        if (*ctx <= 0)
            rc = RG_EINTERNAL;
    }
    if (rc < 0)
        snprintf(err, errlen, "refgate's world could not be made in the page (%.120s)",
                 rc == RG_ECDP || rc == RG_EINTERNAL ? r.error : rg_err_code(rc));
    else
        reg_world_set_ctx(h.world, *ctx);
    if (!q.failed)
        cdp_reply_free(&r);
    return rc;
}

/*
 * The call named a context that is no longer there: it never ran, so it is
 * safe to send again. (A context destroyed while the call ran is another
 * error, and is not retried: the call may have acted.)
 */
static int context_gone(int rc, const cdp_reply *r)
{
    return rc == RG_ECDP && strstr(r->error, "Cannot find context") != NULL;
}

int reg_js(reg_page_handle h, const char *call, int await_promise, int timeout_ms, cJSON **out,
           char *err, size_t errlen)
{
    return reg_js_sized(h, call, await_promise, timeout_ms, out, NULL, err, errlen);
}

int reg_js_sized(reg_page_handle h, const char *call, int await_promise, int timeout_ms,
                 cJSON **out, size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    if (len)
        *len = 0;
    const char *tag = script_tag();
    rg_buf expr;
    rg_buf_init(&expr);
    rg_buf_printf(&expr, "(function(g){if(!g||g.rgv!==\"%s\")return \"" NOT_INSTALLED "\";"
                         "return (%s)})(globalThis.__refgate)",
                  tag, call);
    if (expr.failed) {
        rg_buf_destroy(&expr);
        return RG_ENOMEM;
    }
    /*
     * At most: a context gone with its document, the script missing from
     * the new one (installed, then the call again), and the call: four
     * round trips. A context gone during the install costs one more try.
     */
    int rc = 0, ctx = 0, installed = 0;
    cdp_reply r = {0};
    const char *val = NULL;
    for (int tries = 0; tries < 4; tries++) {
        cdp_reply_free(&r);
        memset(&r, 0, sizeof r);
        if ((rc = world_ctx(h, timeout_ms, &ctx, r.error, sizeof r.error)) < 0)
            break;
        const char *what = installed == 1 ? reg_installer() : expr.data;
        rc = eval_string(h, ctx, what, installed != 1 && await_promise, timeout_ms, &r, &val);
        if (context_gone(rc, &r)) {
            /* The context went with its document (a navigation): find the new one. */
            reg_world_set_ctx(h.world, 0);
            if (installed == 1)
                installed = 0;
            continue;
        }
        if (rc < 0)
            break;
        if (installed == 1) { /* installed: now the call itself */
            installed = 2;
            continue;
        }
        if (strcmp(val, NOT_INSTALLED) != 0)
            break;
        if (installed == 2) {
            rc = RG_EINTERNAL;
            snprintf(r.error, sizeof r.error, "the page-side script did not install");
            break;
        }
        installed = 1; /* not in this document's world yet: install it next */
    }
    rg_buf_destroy(&expr);
    if (rc < 0) {
        snprintf(err, errlen, "%s", r.error);
        cdp_reply_free(&r);
        return rc;
    }
    if (len)
        *len = strlen(val);
    cJSON *root = cJSON_Parse(val);
    cdp_reply_free(&r);
    if (!root) {
        snprintf(err, errlen, "the page-side script returned malformed JSON");
        return RG_EINTERNAL;
    }
    if ((rc = reg_page_error(root, err, errlen)) < 0) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return 0;
}

int reg_page_error(const cJSON *js, char *err, size_t errlen)
{
    const char *e = cJSON_IsObject(js) ? jstr(js, "error") : NULL;
    if (!e)
        return 0;
    snprintf(err, errlen, "%s", e);
    /* "code": "not_actionable" for what may pass when sent again (60-table.js, notNow) */
    const char *code = jstr(js, "code");
    return code && !strcmp(code, "not_actionable") ? RG_ENOTACTIONABLE : RG_EBADREQ;
}

int reg_js_element(reg_page_handle h, int index, int timeout_ms, char **object_id, char *err,
                   size_t errlen)
{
    *object_id = NULL;
    int ctx = 0;
    int rc = world_ctx(h, timeout_ms, &ctx, err, errlen);
    if (rc < 0)
        return rc;
    char q[256];
    /* The list lives in refgate's world: the page's own scripts cannot swap the element. */
    snprintf(q, sizeof q,
             "{\"contextId\":%d,\"returnByValue\":false,\"expression\":"
             "\"(function(g){var e=g&&g.last[%d];return e&&e.nodeType===1?e:null})"
             "(globalThis.__refgate)\"}",
             ctx, index);
    cdp_reply r;
    rc = cdp_call(h.conn, h.session, "Runtime.evaluate", q, timeout_ms, &r);
    if (rc < 0) {
        snprintf(err, errlen, "%s", r.error[0] ? r.error : rg_err_code(rc));
        cdp_reply_free(&r);
        return rc;
    }
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r.result, "result");
    const char *id = jstr(res, "objectId");
    const char *sub = jstr(res, "subtype");
    if (!id || !sub || strcmp(sub, "node")) {
        snprintf(err, errlen, "the element is gone from the page: observe again");
        rc = RG_ESTALE;
    } else if (!(*object_id = strdup(id))) {
        rc = RG_ENOMEM;
    }
    cdp_reply_free(&r);
    return rc;
}

void reg_release_object(reg_page_handle h, const char *obj)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"objectId\":");
    rg_buf_json_str(&q, obj, strlen(obj));
    rg_buf_puts(&q, "}");
    if (!q.failed)
        cdp_call_async(h.conn, h.session, "Runtime.releaseObject", q.data, 5000, NULL, NULL);
    rg_buf_destroy(&q);
}
