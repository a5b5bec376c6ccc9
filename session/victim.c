/*
 * victim.c - which live session a park for room takes (lease.c parks it),
 * and what parking a page would lose.
 *
 * A park keeps cookies, storage, the URL, scroll and the fields of the last
 * observation, and reloads the page at restore: the page's JavaScript state
 * is lost, and with it anything the capture did not reach. So the victim is
 * chosen by what it stands to lose, then by age:
 *
 *   tier 0  judged to lose nothing: no field edited since load, no
 *           beforeunload handler;
 *   tier 1  a field edited, a beforeunload handler, or not judged since its
 *           last command that could change it;
 *   tier 2  restored here less than min_live_ms ago (any of the above): it
 *           goes only when no other idle live session can, so that a
 *           session is not parked again before its client's next command
 *           could reach it, and sessions do not park and restore in a loop;
 *
 * and within a tier the least recently used goes first (by the order of
 * uses: two commands that end in the same millisecond are still ordered).
 *
 * Judging runs off the request path: the heartbeat judges a live session
 * once it is idle after a command that was not read-only, and before it
 * freezes one (a frozen page does not change, so its judgement holds). A
 * judgement costs one script in refgate's world (reg_state_edited) and
 * three DevTools calls for the listeners of the page's window.
 *
 * Threading: sess_judge for the session's holder; the rest with m->mu held.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdio.h>
#include <string.h>

#define JUDGE_TIMEOUT_MS 2000

/* 1 when the top document's window has a beforeunload listener, 0 when not, or an error. */
static int has_beforeunload(sess *s)
{
    cdp_reply r = {0};
    /* `window` is unforgeable: the page cannot make this name something else. */
    int rc = sess_call(s, "Runtime.evaluate", "{\"expression\":\"window\"}", JUDGE_TIMEOUT_MS, &r);
    const cJSON *id = rc == 0
                          ? cJSON_GetObjectItemCaseSensitive(
                                cJSON_GetObjectItemCaseSensitive(r.result, "result"), "objectId")
                          : NULL;
    char q[256];
    if (rc == 0 && !(cJSON_IsString(id) && strlen(id->valuestring) < 200))
        rc = RG_EPROTO;
    if (rc == 0)
        snprintf(q, sizeof q, "{\"objectId\":\"%s\"}", id->valuestring);
    cdp_reply_free(&r);
    if (rc < 0)
        return rc;
    rc = sess_call(s, "DOMDebugger.getEventListeners", q, JUDGE_TIMEOUT_MS, &r);
    int found = 0;
    const cJSON *ls = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r.result, "listeners") : NULL;
    const cJSON *l;
    cJSON_ArrayForEach(l, ls)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(l, "type");
        if (cJSON_IsString(type) && !strcmp(type->valuestring, "beforeunload"))
            found = 1;
    }
    cdp_reply_free(&r);
    sess_call_async(s, "Runtime.releaseObject", q, JUDGE_TIMEOUT_MS);
    return rc < 0 ? rc : found;
}

void sess_judge(sess *s)
{
    sess_mgr *m = s->m;
    int edited = 0, loses = 0;
    int rc = sess_lost(s) ? RG_ECRASHED : reg_state_edited(sess_handle(s), &edited);
    if (rc < 0 || edited > 0)
        loses |= SESS_LOSES_FIELDS;
    int bu = rc < 0 ? rc : has_beforeunload(s);
    if (bu != 0)
        loses |= SESS_LOSES_BEFOREUNLOAD;
    pthread_mutex_lock(&m->mu);
    s->loses = loses;
    s->judged = 1;
    m->stats.judged++;
    pthread_mutex_unlock(&m->mu);
    rg_log(RG_LOG_DEBUG, "session", "%s judged: %d fields edited, beforeunload %s", s->id, edited,
           bu > 0    ? "yes"
           : bu == 0 ? "no"
                     : "unknown");
}

void sess_unjudge_locked(sess *s)
{
    s->judged = 0;
}

sess *sess_victim_locked(sess_mgr *m, const sess *except, int64_t now, int *tier)
{
    sess *best = NULL;
    int best_tier = 0;
    for (sess *s = m->table; s; s = s->next) {
        if (s == except || !s->live || s->busy || s->qhead)
            continue;
        int t = !s->judged || s->loses ? 1 : 0;
        if (m->cfg.min_live_ms > 0 && s->restored_ms && now - s->restored_ms < m->cfg.min_live_ms)
            t = 2;
        if (!best || t < best_tier || (t == best_tier && s->used_seq < best->used_seq)) {
            best = s;
            best_tier = t;
        }
    }
    *tier = best_tier;
    return best;
}
