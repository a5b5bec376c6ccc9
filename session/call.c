/*
 * call.c - the one way from session/ to the page on a session's lease: calls
 * on the page's DevTools session, calls on its browser (no session id),
 * event waits, evaluations that answer JSON, and the checks on whether the
 * page is still there (sess_lost, sess_interrupt).
 *
 * Threading: the synchronous calls are for the session's holder (they must
 * not run on the browser's reader thread; cdp refuses them there). The
 * async ones may be sent from the reader thread (event handlers). The lease
 * must stay held for the duration of the call: the holder's, or a callback's
 * that release waits for (cdp_unsubscribe, sess_checks_drain).
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdlib.h>
#include <string.h>

/* A call or a page handle after a navigation may change what its load
   report says of the page: the checkpoint then asks the page
   (sess.load_touched; any thread). The event handlers' own answers (a
   dialog dismissed, a download cancelled, a tab closed) do not count. */
static void touched(sess *s)
{
    __atomic_store_n(&s->load_touched, 1, __ATOMIC_SEQ_CST);
}

int sess_call(sess *s, const char *method, const char *params, int timeout_ms, cdp_reply *out)
{
    touched(s);
    if (!s->lease || !s->cur) {
        if (out)
            memset(out, 0, sizeof *out);
        return RG_ECRASHED;
    }
    return cdp_call(pool_lease_conn(s->lease), s->cur->session, method, params, timeout_ms, out);
}

int sess_call_async(sess *s, const char *method, const char *params, int timeout_ms)
{
    touched(s);
    if (!s->lease || !s->cur)
        return RG_ECRASHED;
    return cdp_call_async(pool_lease_conn(s->lease), s->cur->session, method, params, timeout_ms,
                          NULL, NULL);
}

int sess_tab_call_async(sess_tab *t, const char *method, const char *params, int timeout_ms)
{
    if (!t->s->lease)
        return RG_ECRASHED;
    return cdp_call_async(pool_lease_conn(t->s->lease), t->session, method, params, timeout_ms,
                          NULL, NULL);
}

int sess_browser_call(sess *s, const char *method, const char *params, int timeout_ms,
                      cdp_reply *out)
{
    touched(s);
    if (!s->lease) {
        if (out)
            memset(out, 0, sizeof *out);
        return RG_ECRASHED;
    }
    return cdp_call(pool_lease_conn(s->lease), NULL, method, params, timeout_ms, out);
}

int sess_browser_call_async(sess *s, const char *method, const char *params, int timeout_ms)
{
    if (!s->lease)
        return RG_ECRASHED;
    return cdp_call_async(pool_lease_conn(s->lease), NULL, method, params, timeout_ms, NULL, NULL);
}

int sess_page_waiter(sess *s, const char *event, cdp_waiter **out)
{
    *out = NULL;
    if (!s->lease || !s->cur)
        return RG_ECRASHED;
    return cdp_waiter_new(pool_lease_conn(s->lease), s->cur->session, event, out);
}

int sess_eval_json(sess *s, const char *expr, int timeout_ms, cJSON **out)
{
    *out = NULL;
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"returnByValue\":true,\"expression\":");
    rg_buf_json_str(&q, expr, strlen(expr));
    rg_buf_puts(&q, "}");
    cdp_reply r = {0};
    int rc = q.failed ? RG_ENOMEM : sess_call(s, "Runtime.evaluate", q.data, timeout_ms, &r);
    rg_buf_destroy(&q);
    if (rc < 0)
        return rc;
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r.result, "result");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, "value");
    if (!cJSON_GetObjectItemCaseSensitive(r.result, "exceptionDetails") && v)
        *out = cJSON_Duplicate(v, 1);
    cdp_reply_free(&r);
    return *out ? 0 : RG_EINTERNAL;
}

const char *sess_jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

char *sess_json_dup(const cJSON *o, const char *k)
{
    return strdup(sess_jstr(o, k));
}

reg_page_handle sess_handle(sess *s)
{
    touched(s); /* whatever the caller does with the page */
    int ok = s->lease && s->cur;
    reg_page_handle h = {ok ? pool_lease_conn(s->lease) : NULL, ok ? s->cur->session : NULL,
                         ok ? s->cur->world : NULL};
    return h;
}

int sess_lost(const sess *s)
{
    return __atomic_load_n(&s->lost, __ATOMIC_SEQ_CST) || !s->lease || pool_lease_lost(s->lease);
}

int sess_interrupt(sess *s)
{
    if (!s->live || !s->lease || sess_lost(s))
        return 0;
    sess_call_async(s, "Runtime.terminateExecution", NULL, 5000);
    /* Does the page answer now? A renderer busy with something no script
       termination reaches (layout of a huge DOM, a wedged navigation) does
       not: end it, as a browser ends an unresponsive page, so the session
       comes back from its checkpoint instead of timing out forever. */
    int rc =
        sess_call(s, "Runtime.evaluate", "{\"expression\":\"1\"}", SESS_PROBE_TIMEOUT_MS, NULL);
    if (rc != RG_ETIMEOUT)
        return 0;
    rg_log(RG_LOG_WARN, "session", "%s: the page stopped answering: ending its renderer", s->id);
    sess_call_async(s, "Page.crash", NULL, 5000);
    __atomic_store_n(&s->lost, 1, __ATOMIC_SEQ_CST);
    return 1;
}
