/*
 * xframes.c - the frames of other sites and the workers in a session's
 * tabs. Chromium runs such a frame (a payment form, a sign-in button, an
 * embed) in a renderer process of its own, and a page's worker (dedicated,
 * shared or service worker) apart from its document, each a DevTools target
 * of its own: what the page's session intercepts and hears is the page's
 * document only. So each tab's page attaches its frames and workers from
 * the start (Target.setAutoAttach, flattened), and each, as it attaches,
 * gets what the page has (below, "frame" stands for both; only the iframes
 * go to the registry):
 *
 *   - without the egress proxy, Fetch interception, so that its requests
 *     pass the tenant's URL policy as the page's do (intercept.c). One
 *     that cannot be followed (past SESS_XFRAMES_MAX, or no room for its
 *     events) runs with every request of its own blocked: nobody would
 *     check them;
 *   - Runtime, Log and Network, whose events go to the tab's console and
 *     network logs: the tab's handler (sess_page_event) subscribes to the
 *     frame's session too;
 *   - the same attaching for its own frames of other sites (a card issuer's
 *     check inside a payment frame), whose events come on the frame's
 *     session, so they are the tab's as well. All levels share the tab's
 *     SESS_XFRAMES_MAX, and a frame that goes takes those under it.
 *
 * Every frame is held (waitForDebuggerOnStart) until all of that is in
 * place, with the proxy too: a worker let run at once sent its first
 * request before Network.enable reached its session, and the network log
 * never listed it (a CI run under ASan, 7 December); the emulate op's
 * headers and conditions would miss its first requests the same way. The
 * hold costs the frame the pipe's round trip to here and back.
 *
 * The registry's world observes the same frames, one level (registry/frames.c).
 * It is made with reg_world_new_attached, so that it sends no setAutoAttach
 * of its own (which would stop the holding), and told of the page's frames
 * attached before it (sess_xframes_to_world).
 *
 * Threading: attach and detach come on the browser's reader thread; the
 * tab's list is under m->mu, which is never held across a DevTools call
 * or a subscription change.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdio.h>
#include <string.h>

#define ATTACH_TYPES                                                                            \
    "\"filter\":[{\"type\":\"iframe\"},{\"type\":\"worker\"},{\"type\":\"shared_worker\"},"      \
    "{\"type\":\"service_worker\"}]}"
#define ATTACH_HELD                                                                                \
    "{\"autoAttach\":true,\"waitForDebuggerOnStart\":true,\"flatten\":true," ATTACH_TYPES

/* The kinds of target that run a tab's code apart from its page. A worker
   left out would still be held by the attaching (waitForDebuggerOnStart
   reaches it): it never ran its first request without the proxy. */
static int followed(const char *type)
{
    return !strcmp(type, "iframe") || !strcmp(type, "worker") || !strcmp(type, "shared_worker") ||
           !strcmp(type, "service_worker");
}

const char *sess_xframes_params(void)
{
    return ATTACH_HELD;
}

/* Sends method to the frame's session, in order after what was sent before (reader thread). */
static void frame_call(sess *s, const char *sid, const char *method, const char *params)
{
    cdp_call_async(pool_lease_conn(s->lease), sid, method, params, 10000, NULL, NULL);
}

void sess_xframe_attached(sess_tab *t, const char *parent, const cJSON *params)
{
    sess *s = t->s;
    sess_mgr *m = s->m;
    const cJSON *ti = cJSON_GetObjectItemCaseSensitive(params, "targetInfo");
    const char *sid = sess_jstr(params, "sessionId"), *tid = sess_jstr(ti, "targetId");
    int held = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(params, "waitingForDebugger"));
    if (!*sid || !s->lease)
        return;
    cdp_conn *conn = pool_lease_conn(s->lease);
    const char *fetch = sess_intercept_params(m);
    int kept = 0;
    if (!parent)
        parent = "";
    const char *type = sess_jstr(ti, "type");
    if (followed(type) && strlen(sid) < sizeof t->xf[0].session &&
        strlen(tid) < sizeof t->xf[0].target && strlen(parent) < sizeof t->xf[0].parent) {
        int sub = cdp_subscribe(conn, sid, NULL, sess_page_event, t);
        if (sub > 0) {
            pthread_mutex_lock(&m->mu);
            if (t->n_xf < SESS_XFRAMES_MAX) {
                struct sess_xframe *x = &t->xf[t->n_xf++];
                snprintf(x->target, sizeof x->target, "%s", tid);
                snprintf(x->session, sizeof x->session, "%s", sid);
                snprintf(x->parent, sizeof x->parent, "%s", parent);
                x->frame = !strcmp(type, "iframe");
                x->sub = sub;
                kept = 1;
            }
            pthread_mutex_unlock(&m->mu);
            if (!kept)
                cdp_unsubscribe(conn, sub);
        }
    }
    if (!kept) {
        /* Its requests could not be checked: every one of them fails
           (blocked by the browser itself, no handler needed). Held for
           good instead, it would keep the page from its load event. */
        if (fetch && held) {
            rg_log(RG_LOG_WARN, "session",
                   "%s: a %s in tab %s gets no request through: they could not be checked "
                   "(past %d frames and workers, or no room for its events)",
                   s->id, *type ? type : "target", t->id, SESS_XFRAMES_MAX);
            frame_call(s, sid, "Network.enable", SESS_NETWORK_PARAMS);
            frame_call(s, sid, "Network.setBlockedURLs", "{\"urls\":[\"*\"]}");
        }
        if (held)
            frame_call(s, sid, "Runtime.runIfWaitingForDebugger", NULL);
        return;
    }
    /* In order on the pipe: all of it is in place before the frame runs. */
    if (fetch)
        frame_call(s, sid, "Fetch.enable", fetch);
    frame_call(s, sid, "Runtime.enable", NULL);
    frame_call(s, sid, "Log.enable", NULL);
    frame_call(s, sid, "Network.enable", SESS_NETWORK_PARAMS);
    /* the emulate op's: media, network conditions, headers, position (a
       worker refuses what is not its own: nothing waits for the answer) */
    sess_emul_to(s, sid);
    frame_call(s, sid, "Target.setAutoAttach", sess_xframes_params());
    if (held)
        frame_call(s, sid, "Runtime.runIfWaitingForDebugger", NULL);
}

/* Drops the frame on session sid and every frame under it (their sessions
   end with it, whether or not the browser says so for each); their
   subscriptions into subs, and sid with the dropped frames' sessions into
   gone (*n_gone of them). Under m->mu. */
static int drop_frames(sess_tab *t, const char *sid, int *subs,
                       char (*gone)[64] /* SESS_XFRAMES_MAX + 1 */, int *n_gone_out)
{
    int n = 0;
    int n_gone = 0;
    snprintf(gone[n_gone++], sizeof gone[0], "%s", sid);
    for (int g = 0; g < n_gone; g++) {
        for (int i = 0; i < t->n_xf;) {
            struct sess_xframe *x = &t->xf[i];
            if (strcmp(x->session, gone[g]) && strcmp(x->parent, gone[g])) {
                i++;
                continue;
            }
            if (strcmp(x->session, gone[g]) && n_gone <= SESS_XFRAMES_MAX)
                snprintf(gone[n_gone++], sizeof gone[0], "%s", x->session);
            subs[n++] = x->sub;
            *x = t->xf[--t->n_xf];
        }
    }
    *n_gone_out = n_gone;
    return n;
}

void sess_xframe_detached(sess_tab *t, const cJSON *params)
{
    sess *s = t->s;
    const char *sid = sess_jstr(params, "sessionId");
    int subs[SESS_XFRAMES_MAX];
    char gone[SESS_XFRAMES_MAX + 1][64];
    int n_gone;
    if (!*sid)
        return;
    pthread_mutex_lock(&s->m->mu);
    int n = drop_frames(t, sid, subs, gone, &n_gone);
    pthread_mutex_unlock(&s->m->mu);
    sess_netlog_senders_gone(t, (const char(*)[64])gone, n_gone);
    for (int i = 0; s->lease && i < n; i++)
        cdp_unsubscribe(pool_lease_conn(s->lease), subs[i]);
}

void sess_xframes_to_world(sess *s, sess_tab *t)
{
    struct sess_xframe v[SESS_XFRAMES_MAX];
    pthread_mutex_lock(&s->m->mu);
    int n = t->n_xf;
    memcpy(v, t->xf, sizeof *v * (size_t)n);
    pthread_mutex_unlock(&s->m->mu);
    for (int i = 0; t->world && i < n; i++)
        if (v[i].frame && !strcmp(v[i].parent, t->session)) /* the page's own frames */
            reg_world_xframe_known(t->world, v[i].target, v[i].session);
}

void sess_xframes_end(sess *s, sess_tab *t)
{
    int subs[SESS_XFRAMES_MAX];
    pthread_mutex_lock(&s->m->mu);
    int n = t->n_xf;
    for (int i = 0; i < n; i++)
        subs[i] = t->xf[i].sub;
    t->n_xf = 0;
    pthread_mutex_unlock(&s->m->mu);
    for (int i = 0; s->lease && i < n; i++)
        cdp_unsubscribe(pool_lease_conn(s->lease), subs[i]);
}
