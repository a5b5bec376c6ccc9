/*
 * cast.c - the live view's screencast on a session's page: started and
 * stopped by the holder as the gateway's cfg.cast_wanted says, started
 * again on a fresh lease (a restore) at the end of the command that made
 * it, its frames handed to cfg.on_event as "frame" events, and their acks
 * sent back to the page from whatever thread sent the frame.
 *
 * Chromium sends a frame only while fewer than two are unacknowledged, so
 * no queue grows in the browser: the gateway acks each frame once it was
 * written to a viewer or given up for a newer one. But a running screencast
 * captures (reads back and encodes) every frame the page paints, acked or
 * not: that is what watching costs the page. So the gateway also pauses the
 * capture (sess_cast_pause: Page.stopScreencast, and Page.startScreencast
 * with the same settings again) while no viewer can take a frame and beyond
 * its frame-rate cap. sess_cast_apply leaves a paused stream paused unless
 * its settings change.
 *
 * Tabs: the screencast follows the active tab (cast_page). sess_cast_apply
 * runs at the end of every command, so after a tab.select, a tab.new or
 * the close of the active tab it stops the stream on the page it ran on
 * and starts it on the active one.
 *
 * Threading: sess_cast_apply is the holder's. sess_cast_frame runs on the
 * reader thread. sess_cast_ack runs on any thread: it finds the session
 * under m->mu and sends under cast_lock, which sess_cast_unbind takes
 * before the lease goes, so an ack never reaches a released connection.
 * Lock order: m->mu, then cast_lock; the reader thread never takes
 * cast_lock.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t cast_lock = PTHREAD_MUTEX_INITIALIZER;

/* The DevTools session of the page the screencast shows: the active tab's. */
static const char *cast_page(sess *s)
{
    return s->active && s->active->session[0] ? s->active->session : pool_lease_session(s->lease);
}

/* Stops the stream on the page it runs on (which may have closed: no answer is needed). */
static void cast_stop(sess *s)
{
    if (s->cast_page[0])
        cdp_call(pool_lease_conn(s->lease), s->cast_page, "Page.stopScreencast", NULL,
                 SESS_CALL_TIMEOUT_MS, NULL);
}

void sess_cast_apply(sess *s)
{
    sess_mgr *m = s->m;
    sess_cast_opts o;
    int want = m->cfg.cast_wanted && m->cfg.cast_wanted(m->cfg.cast_ud, s->tenant, s->id, &o);
    pthread_mutex_lock(&m->mu);
    int live = s->live;
    int on = s->cast_on;
    pthread_mutex_unlock(&m->mu);
    if (!live || !s->lease || sess_lost(s))
        return;
    const char *page = cast_page(s);
    int moved = on && page && strcmp(page, s->cast_page) != 0; /* another tab is active */
    if (!want || moved) {
        if (!on)
            return;
        cast_stop(s);
        pthread_mutex_lock(&m->mu);
        s->cast_on = on = 0;
        pthread_mutex_unlock(&m->mu);
        if (!want)
            return;
    }
    char q[sizeof s->cast_params];
    snprintf(q, sizeof q,
             "{\"format\":\"%s\",\"quality\":%d,\"maxWidth\":%d,\"maxHeight\":%d,"
             "\"everyNthFrame\":1}",
             !strcmp(o.format, "png") ? "png" : "jpeg", o.quality, o.max_width, o.max_height);
    pthread_mutex_lock(&cast_lock);
    s->cast_conn = pool_lease_conn(s->lease);
    snprintf(s->cast_page, sizeof s->cast_page, "%s", page ? page : "");
    snprintf(s->cast_params, sizeof s->cast_params, "%s", q);
    /* Starting again restarts the stream: only for new settings (a stream
       the gateway paused stays paused: sess_cast_pause starts it again). */
    int same = on && !memcmp(&o, &s->cast_opts, sizeof o);
    if (!same)
        s->cast_paused = 0;
    pthread_mutex_unlock(&cast_lock);
    if (same)
        return;
    sess_tab *cur = s->cur;
    s->cur = s->active ? s->active : cur; /* Page.enable on the page that streams */
    int erc = sess_enable_page(s);
    s->cur = cur;
    if (erc < 0)
        return;
    int rc = cdp_call(pool_lease_conn(s->lease), page, "Page.startScreencast", q,
                      SESS_CALL_TIMEOUT_MS, NULL);
    if (rc < 0) {
        rg_log(RG_LOG_WARN, "session", "%s: the screencast did not start (%s)", s->id,
               rg_err_code(rc));
        return;
    }
    s->cast_opts = o;
    rg_log(RG_LOG_INFO, "session", "%s: screencast started (%s, %d x %d)", s->id, o.format,
           o.max_width, o.max_height);
    pthread_mutex_lock(&m->mu);
    s->cast_on = 1;
    pthread_mutex_unlock(&m->mu);
}

void sess_cast_frame(sess *s, const cJSON *params)
{
    sess_mgr *m = s->m;
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(params, "data");
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(params, "metadata");
    const cJSON *sid = cJSON_GetObjectItemCaseSensitive(params, "sessionId");
    int ack = cJSON_IsNumber(sid) ? sid->valueint : 0;
    if (!cJSON_IsString(data) || !m->cfg.on_event) {
        char q[48];
        snprintf(q, sizeof q, "{\"sessionId\":%d}", ack);
        sess_call_async(s, "Page.screencastFrameAck", q, 5000);
        return;
    }
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(md, "deviceWidth");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(md, "deviceHeight");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(md, "timestamp");
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "data", data->valuestring);
    cJSON_AddNumberToObject(d, "width", cJSON_IsNumber(w) ? (int)(w->valuedouble + 0.5) : 0);
    cJSON_AddNumberToObject(d, "height", cJSON_IsNumber(h) ? (int)(h->valuedouble + 0.5) : 0);
    cJSON_AddNumberToObject(d, "ts",
                            cJSON_IsNumber(ts) ? (double)(int64_t)(ts->valuedouble * 1000.0)
                                               : (double)rg_wall_ms());
    cJSON_AddNumberToObject(d, "ack", ack);
    m->cfg.on_event(m->cfg.event_ud, s->tenant, s->id, "frame", d);
}

void sess_cast_unbind(sess *s)
{
    pthread_mutex_lock(&cast_lock);
    s->cast_conn = NULL;
    s->cast_page[0] = '\0';
    s->cast_paused = 0;
    pthread_mutex_unlock(&cast_lock);
    pthread_mutex_lock(&s->m->mu);
    s->cast_on = 0; /* the stream went with the page */
    pthread_mutex_unlock(&s->m->mu);
}

void sess_cast_ack(sess_mgr *m, const char *tenant, const char *sid, int ack)
{
    char q[48];
    snprintf(q, sizeof q, "{\"sessionId\":%d}", ack);
    pthread_mutex_lock(&m->mu);
    sess *s = m->table;
    while (s && (strcmp(s->id, sid) || strcmp(s->tenant, tenant)))
        s = s->next;
    pthread_mutex_lock(&cast_lock);
    cdp_conn *conn = s ? s->cast_conn : NULL;
    char page[sizeof s->cast_page];
    snprintf(page, sizeof page, "%s", s ? s->cast_page : "");
    pthread_mutex_unlock(&m->mu);
    /* conn stays valid while cast_lock is held: unbind waits for it. */
    if (conn && page[0])
        cdp_call_async(conn, page, "Page.screencastFrameAck", q, 5000, NULL, NULL);
    pthread_mutex_unlock(&cast_lock);
}

int sess_cast_sync(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms, char *err,
                   size_t errlen)
{
    sess_cast_opts o;
    int want = m->cfg.cast_wanted && m->cfg.cast_wanted(m->cfg.cast_ud, tenant, sid, &o);
    sess *s;
    int rc = want ? sess_open(m, tenant, sid, timeout_ms, &s, NULL, err, errlen)
                  : sess_claim(m, tenant, sid, timeout_ms, &s, err, errlen);
    if (rc < 0)
        return rc;
    sess_done(s, -1); /* which applies it */
    return 0;
}

void sess_cast_pause(sess_mgr *m, const char *tenant, const char *sid, int pause)
{
    pthread_mutex_lock(&m->mu);
    sess *s = m->table;
    while (s && (strcmp(s->id, sid) || strcmp(s->tenant, tenant)))
        s = s->next;
    pthread_mutex_lock(&cast_lock);
    cdp_conn *conn = NULL;
    char page[sizeof s->cast_page], q[sizeof s->cast_params];
    if (s && s->cast_on && s->cast_conn && s->cast_page[0] && s->cast_params[0] &&
        s->cast_paused != pause) {
        s->cast_paused = pause;
        conn = s->cast_conn;
        snprintf(page, sizeof page, "%s", s->cast_page);
        snprintf(q, sizeof q, "%s", s->cast_params);
    }
    pthread_mutex_unlock(&m->mu);
    /* conn stays valid while cast_lock is held: unbind waits for it. */
    if (conn)
        cdp_call_async(conn, page, pause ? "Page.stopScreencast" : "Page.startScreencast",
                       pause ? NULL : q, 5000, NULL, NULL);
    pthread_mutex_unlock(&cast_lock);
}
