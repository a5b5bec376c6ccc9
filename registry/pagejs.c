/*
 * pagejs.c - calls into the page-side script (registry/observer.js) over
 * Runtime.evaluate. The script is installed on demand: every call first
 * checks that the document has this build's script (a hash of its source),
 * so a navigation or a page that overwrote it costs one extra round trip,
 * not a wrong answer.
 */
#define _GNU_SOURCE
#include "reg_int.h"

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
    return cJSON_IsNumber(v) ? (int)v->valuedouble : def;
}

/* A marker for the installed script: a hash of its source. */
static const char *script_tag(void)
{
    static char tag[24];
    if (!tag[0])
        snprintf(tag, sizeof tag, "%016llx",
                 (unsigned long long)XXH3_64bits(reg_observer_js, strlen(reg_observer_js)));
    return tag;
}

/* Runtime.evaluate returning a string value; *value is owned by *reply. */
static int eval_string(reg_page_handle h, const char *expr, int await_promise, int timeout_ms,
                       cdp_reply *reply, const char **value)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"returnByValue\":true,\"awaitPromise\":%s,\"expression\":",
                  await_promise ? "true" : "false");
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

int reg_js(reg_page_handle h, const char *call, int await_promise, int timeout_ms, cJSON **out,
           char *err, size_t errlen)
{
    *out = NULL;
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
    int rc = 0;
    cdp_reply r = {0};
    const char *val = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = eval_string(h, expr.data, await_promise, timeout_ms, &r, &val);
        if (rc < 0 || strcmp(val, NOT_INSTALLED) != 0)
            break;
        /* Not installed in this document yet: install, then call again. */
        cdp_reply_free(&r);
        rg_buf inst;
        rg_buf_init(&inst);
        rg_buf_puts(&inst, reg_observer_js);
        rg_buf_printf(&inst, "\n;if(globalThis.__refgate)globalThis.__refgate.rgv=\"%s\";\"ok\"",
                      tag);
        rc = inst.failed ? RG_ENOMEM : eval_string(h, inst.data, 0, timeout_ms, &r, &val);
        rg_buf_destroy(&inst);
        cdp_reply_free(&r);
        if (rc < 0)
            break;
        rc = RG_EINTERNAL;
        snprintf(r.error, sizeof r.error, "the page-side script did not install");
    }
    rg_buf_destroy(&expr);
    if (rc < 0) {
        snprintf(err, errlen, "%s", r.error);
        cdp_reply_free(&r);
        return rc;
    }
    cJSON *root = cJSON_Parse(val);
    cdp_reply_free(&r);
    if (!root) {
        snprintf(err, errlen, "the page-side script returned malformed JSON");
        return RG_EINTERNAL;
    }
    const char *e = cJSON_IsObject(root) ? jstr(root, "error") : NULL;
    if (e) {
        snprintf(err, errlen, "%s", e);
        cJSON_Delete(root);
        return RG_EBADREQ;
    }
    *out = root;
    return 0;
}
