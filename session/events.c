/*
 * events.c - what a live session hears from its browser over DevTools, and
 * what it does about it: dialogs dismissed, navigations,
 * title changes and console messages reported (sess_config.on_event), the
 * page's paused requests handed to the URL policy (intercept.c), and a dead
 * renderer or browser marking the session lost. Popups are tabs.c's.
 *
 * Threading: every handler runs on the browser connection's reader thread.
 * They must not block nor make synchronous calls (sess_call_async only);
 * they touch only s's atomics (page_gen, lost) and read the lease, which
 * stays valid while they run: sess_events_unbind waits for a handler in
 * progress before the lease is released. Bind and unbind are the holder's.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_lost(void *ud, pool_lease *l)
{
    (void)l;
    sess *s = ud;
    __atomic_store_n(&s->lost, 1, __ATOMIC_SEQ_CST);
}

static void console_text(const cJSON *args, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    const cJSON *a;
    cJSON_ArrayForEach(a, args)
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "value");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(a, "description");
        char num[32];
        const char *t = cJSON_IsString(v)   ? v->valuestring
                        : cJSON_IsNumber(v) ? (snprintf(num, sizeof num, "%g", v->valuedouble), num)
                        : cJSON_IsBool(v)   ? (cJSON_IsTrue(v) ? "true" : "false")
                        : cJSON_IsString(d) ? d->valuestring
                                            : "";
        if (n + 2 >= len)
            break;
        n += (size_t)snprintf(out + n, len - n, "%s%s", n ? " " : "", t);
        if (n >= len)
            n = len - 1;
    }
}

void sess_report(sess *s, const char *kind, cJSON *data)
{
    sess_mgr *m = s->m;
    if (m->cfg.on_event)
        m->cfg.on_event(m->cfg.event_ud, s->tenant, s->id, kind, data);
    else
        cJSON_Delete(data);
}

/* Page events of a tab, on the reader thread: dialogs dismissed, all reported with the tab. */
void sess_page_event(void *ud, const char *session_id, const char *method, const cJSON *params)
{
    sess_tab *t = ud;
    sess *s = t->s;
    /* session_id: the subscription's, the tab's page or one of its frames
       of other sites (xframes.c), whose console and requests are the tab's */
    if (!method)
        return;
    if (!strcmp(method, "Fetch.requestPaused")) {
        sess_on_request_paused(t, session_id, params);
        return;
    }
    if (!strcmp(method, "Target.attachedToTarget")) {
        sess_xframe_attached(t, session_id, params);
        return;
    }
    if (!strcmp(method, "Target.detachedFromTarget")) {
        sess_xframe_detached(t, params);
        return;
    }
    if (!strncmp(method, "Page.download", 13)) {
        sess_files_on_event(s, method, params); /* files.c: allowed, quota, reported */
        return;
    }
    if (!strcmp(method, "Page.screencastFrame")) {
        sess_cast_frame(s, params);
        return;
    }
    const char *kind = NULL;
    cJSON *d = NULL;
    if (!strcmp(method, "Page.javascriptDialogOpening")) {
        /* Answered at once, so that a page never waits on one: as the
           running command asked (dismissed unless it said accept), except
           "Leave site?" (beforeunload), which is always accepted:
           dismissing it keeps the page and cancels the navigation the
           client asked for (navigate, back, a link clicked), which then
           failed as net::ERR_ABORTED whenever the page had a handler and
           had seen any input. */
        const char *type = sess_jstr(params, "type");
        int leave = !strcmp(type, "beforeunload");
        cJSON *q = cJSON_CreateObject();
        pthread_mutex_lock(&s->m->mu);
        int accept = leave || s->dlg_accept;
        if (q && accept && !strcmp(type, "prompt"))
            cJSON_AddStringToObject(q, "promptText",
                                    s->dlg_has_text ? s->dlg_text : sess_jstr(params, "defaultPrompt"));
        struct sess_dlg *e = &s->dlg_last[s->dlg_seq++ % SESS_DIALOGS_KEPT];
        e->accepted = accept;
        snprintf(e->type, sizeof e->type, "%s", type);
        const char *msg = sess_jstr(params, "message");
        size_t mn = rg_utf8_prefix(msg, sizeof e->message - 1); /* clipped, still UTF-8 */
        memcpy(e->message, msg, mn);
        e->message[mn] = '\0';
        pthread_mutex_unlock(&s->m->mu);
        char *qs = NULL;
        if (q && cJSON_AddBoolToObject(q, "accept", accept))
            qs = cJSON_PrintUnformatted(q);
        cJSON_Delete(q);
        /* without memory to say it, dismissed (its default) */
        sess_tab_call_async(t, "Page.handleJavaScriptDialog", qs ? qs : "{\"accept\":false}", 5000);
        free(qs);
        kind = "dialog";
        d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "type", type);
        cJSON_AddStringToObject(d, "message", sess_jstr(params, "message"));
        cJSON_AddBoolToObject(d, "dismissed", !accept);
    } else if (!strncmp(method, "Network.", 8)) {
        /* kept for the network op, not reported */
        sess_netlog_event(t, session_id, method, params);
        return;
    } else if (!strcmp(method, "Runtime.exceptionThrown") || !strcmp(method, "Log.entryAdded")) {
        sess_console_event(t, method, params, NULL); /* kept for the console op, not reported */
        return;
    } else if (!strcmp(method, "Page.windowOpen")) {
        /* The URL of the popup that comes next (its target does not know it yet). */
        free(t->open_url);
        t->open_url = strdup(sess_jstr(params, "url"));
        return;
    } else if (!strcmp(method, "Page.navigatedWithinDocument")) {
        /* A fragment or history.pushState: the URL the checkpoint holds moved. */
        __atomic_add_fetch(&s->page_gen, 1, __ATOMIC_SEQ_CST);
    } else if (!strcmp(method, "Page.frameNavigated")) {
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(params, "frame");
        if (cJSON_GetObjectItemCaseSensitive(fr, "parentId"))
            return; /* an iframe */
        __atomic_store_n(&t->committed, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&s->page_gen, 1, __ATOMIC_SEQ_CST);
        kind = "navigation";
        d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "url", sess_jstr(fr, "url"));
    } else if (!strcmp(method, "Runtime.consoleAPICalled")) {
        kind = "console";
        char text[1024]; /* the event's cut (docs/protocol.md); the log clips it again */
        console_text(cJSON_GetObjectItemCaseSensitive(params, "args"), text, sizeof text);
        sess_console_event(t, method, params, text);
        d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "type", sess_jstr(params, "type"));
        cJSON_AddStringToObject(d, "text", text);
    }
    if (!kind)
        return;
    cJSON_AddStringToObject(d, "tab", t->id);
    sess_report(s, kind, d);
}

void sess_dialogs_begin(sess *s, int accept, const char *prompt_text, sess_dialogs *saved)
{
    pthread_mutex_lock(&s->m->mu);
    saved->accept = s->dlg_accept;
    saved->has_text = s->dlg_has_text;
    memcpy(saved->text, s->dlg_text, sizeof saved->text);
    saved->mark = s->dlg_seq;
    if (accept >= 0)
        s->dlg_accept = accept != 0;
    if (prompt_text) {
        s->dlg_has_text = 1;
        snprintf(s->dlg_text, sizeof s->dlg_text, "%s", prompt_text);
    }
    pthread_mutex_unlock(&s->m->mu);
}

cJSON *sess_dialogs_end(sess *s, const sess_dialogs *saved)
{
    cJSON *out = NULL;
    pthread_mutex_lock(&s->m->mu);
    unsigned first = s->dlg_seq - saved->mark > SESS_DIALOGS_KEPT ? s->dlg_seq - SESS_DIALOGS_KEPT
                                                                  : saved->mark;
    for (unsigned q = first; q < s->dlg_seq; q++) {
        const struct sess_dlg *e = &s->dlg_last[q % SESS_DIALOGS_KEPT];
        cJSON *d = cJSON_CreateObject();
        if (!out)
            out = cJSON_CreateArray();
        if (!d || !out) {
            cJSON_Delete(d);
            break;
        }
        cJSON_AddStringToObject(d, "type", e->type);
        cJSON_AddStringToObject(d, "message", e->message);
        cJSON_AddBoolToObject(d, "accepted", e->accepted);
        cJSON_AddItemToArray(out, d);
    }
    s->dlg_accept = saved->accept;
    s->dlg_has_text = saved->has_text;
    memcpy(s->dlg_text, saved->text, sizeof s->dlg_text);
    pthread_mutex_unlock(&s->m->mu);
    return out;
}

/* 1 when target is one of s's tabs' pages, its DevTools session copied to
   sid when sid is not NULL (reader thread; the list under m->mu). */
static int is_tab_target(sess *s, const char *target, char *sid, size_t sidlen)
{
    int hit = 0;
    pthread_mutex_lock(&s->m->mu);
    for (int i = 0; i < s->n_tabs && !hit; i++)
        if ((hit = !strcmp(s->tabs[i]->target, target)) && sid)
            snprintf(sid, sidlen, "%s", s->tabs[i]->session);
    pthread_mutex_unlock(&s->m->mu);
    return hit;
}

/*
 * The page's renderer died (it ran out of memory, or was killed) while the
 * browser lives on: to the session it is the same as a browser crash. The
 * command running fails with browser_crashed and the next one restores the
 * session on a fresh context from its checkpoint.
 */
static void on_crash(void *ud, const char *session_id, const char *method, const cJSON *params)
{
    sess *s = ud;
    (void)session_id;
    (void)method;
    char sid[sizeof s->tabs[0]->session];
    if (!is_tab_target(s, sess_jstr(params, "targetId"), sid, sizeof sid))
        return;
    rg_log(RG_LOG_WARN, "session", "%s: the page's renderer crashed (%s)", s->id,
           sess_jstr(params, "status"));
    __atomic_store_n(&s->lost, 1, __ATOMIC_SEQ_CST);
    /* A call in flight on the dead page would wait out its whole timeout
       (the page-level crash event does not always come): it fails now. */
    cdp_fail_session(pool_lease_conn(s->lease), sid, "the page crashed");
}

/* The page's title or URL changed (browser level, for every target): a checkpoint must ask. */
static void on_info(void *ud, const char *session_id, const char *method, const cJSON *params)
{
    sess *s = ud;
    (void)session_id;
    if (!method)
        return;
    const cJSON *ti = cJSON_GetObjectItemCaseSensitive(params, "targetInfo");
    if (is_tab_target(s, sess_jstr(ti, "targetId"), NULL, 0))
        __atomic_add_fetch(&s->page_gen, 1, __ATOMIC_SEQ_CST);
}

/* Subscribes s's handlers on its fresh lease (unsubscribed by sess_events_unbind). */
void sess_events_bind(sess *s)
{
    pool_lease_on_lost(s->lease, on_lost, s);
    cdp_conn *conn = pool_lease_conn(s->lease);
    int sub = cdp_subscribe(conn, NULL, "Target.targetCrashed", on_crash, s);
    s->crash_sub = sub > 0 ? sub : 0;
    sub = cdp_subscribe(conn, NULL, "Target.targetInfoChanged", on_info, s);
    s->info_sub = sub > 0 ? sub : 0;
}

/*
 * Ends s's subscriptions before its lease goes: the browser-level ones
 * outlive the context. When it returns no handler runs for s any more.
 */
void sess_events_unbind(sess *s)
{
    sess_cast_unbind(s);
    if (s->lease) {
        cdp_conn *conn = pool_lease_conn(s->lease);
        int subs[] = {s->crash_sub, s->info_sub};
        for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
            if (subs[i])
                cdp_unsubscribe(conn, subs[i]);
    }
    s->crash_sub = s->info_sub = 0;
}
