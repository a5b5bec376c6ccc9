/*
 * command.c - one command map through the pipeline docs/protocol.md
 * describes: checked (check.c), its idempotency_key reserved or its first
 * reply returned, the session taken (restored when parked, taken over from
 * another worker), the op run (ops.c), the reply built (reply.c), the
 * session's checkpoint and snapshot event left for after the reply, and the
 * reply kept for its idempotency_key. Events go to the sink gateway.c set.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- idempotency ---- */

static void idem_key(char *out, size_t len, const gw_caller *who, const char *sid, const char *k)
{
    if (sid)
        snprintf(out, len, "rg:{t:%s:s:%s}:idem:%s", who->tenant, sid, k);
    else
        snprintf(out, len, "rg:t:%s:idem:%s", who->tenant, k);
}

static cJSON *idem_decode(const redisReply *rep, int *status);

/*
 * Reserves key for this command (SET NX of a marker), or gets the stored
 * reply of the first command with it. 0: reserved, run it; 1: *out holds
 * the first reply; RG_ECONFLICT: the first is still running; RG_EUNAVAIL.
 */
static int idem_begin(gw *g, const char *key, int timeout_ms, cJSON **out, int *status)
{
    *out = NULL;
    char ms[24];
    snprintf(ms, sizeof ms, "%d", timeout_ms + 30000);
    redisReply *rep = rg_redis_command(g->redis, "SET %s running NX PX %s GET", key, ms);
    int rc;
    if (!rep || rep->type == REDIS_REPLY_ERROR)
        rc = RG_EUNAVAIL;
    else if (rep->type == REDIS_REPLY_NIL)
        rc = 0;
    else if (rep->type == REDIS_REPLY_STRING && !strcmp(rep->str, "running"))
        rc = RG_ECONFLICT;
    else
        rc = (*out = idem_decode(rep, status)) ? 1 : RG_EINTERNAL;
    freeReplyObject(rep);
    return rc;
}

/* Lets go of a reservation (the command failed in a way a retry may fix). */
static void idem_cancel(gw *g, const char *key)
{
    redisReply *rep = rg_redis_command(g->redis, "DEL %s", key);
    freeReplyObject(rep);
}

static cJSON *idem_decode(const redisReply *rep, int *status)
{
    cJSON *out = NULL;
    if (rep && rep->type == REDIS_REPLY_STRING && rep->len > 4) {
        *status = (int)strtol(rep->str, NULL, 10);
        char err[64];
        if (wire_mp_decode(rep->str + 4, rep->len - 4, &out, err, sizeof err) < 0)
            out = NULL;
    }
    return out;
}

static void idem_put(gw *g, const char *key, const cJSON *reply, int status)
{
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_printf(&b, "%03d ", status);
    if (wire_mp_encode(reply, &b) < 0 || b.failed) {
        rg_buf_destroy(&b);
        return;
    }
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)g->cfg.idempotency_ms);
    const char *argv[] = {"SET", key, b.data, "PX", ms, "XX"};
    size_t argl[] = {3, strlen(key), b.len, 2, strlen(ms), 2};
    redisReply *rep = rg_redis_argv(g->redis, 6, argv, argl);
    freeReplyObject(rep);
    rg_buf_destroy(&b);
}

/* ---- running one command ---- */

/*
 * A command over HTTP has until who->deadline_ms (REFGATE_HTTP_COMMAND_MAX_MS
 * after it came), below nginx's fastcgi_read_timeout: its wait for the
 * session and its op each get at most what is left. Without it nginx
 * answered 504 at 120 s while the worker went on, holding the session, and
 * the client's next command waited behind it.
 */
int gw_clamp_ms(int64_t deadline_ms, int want)
{
    if (!deadline_ms)
        return want;
    int64_t left = deadline_ms - rg_now_ms();
    return left < 1 ? 1 : left < want ? (int)left : want;
}

int gw_left_ms(const gw_cmd *c, int want)
{
    return gw_clamp_ms(c->who ? c->who->deadline_ms : 0, want);
}

void gw_note_cut(gw_cmd *c, const char *why)
{
    size_t n = strlen(c->err);
    snprintf(c->err + n, sizeof c->err - n, " (cut short: %s)", why);
}

static int open_for(gw_cmd *c, const wire_op *o, sess_restore_info *ri)
{
    int rc, wait = gw_left_ms(c, c->timeout_ms > 10000 ? c->timeout_ms : 10000);
    if (o->flags & WIRE_F_CLAIM)
        rc = sess_claim(c->g->sessions, c->who->tenant, c->sid, wait, &c->s, c->err,
                        sizeof c->err);
    else
        rc = sess_open(c->g->sessions, c->who->tenant, c->sid, wait, &c->s, ri, c->err,
                       sizeof c->err);
    if (rc == RG_EPOOL)
        c->retry_after_ms = POOL_RETRY_AFTER_MS;
    if (rc == RG_ECONFLICT || rc == RG_EUNAVAIL)
        c->retry_after_ms = 1000;
    return rc < 0 ? (c->rc = rc) : 0;
}

static void session_event(gw_cmd *c, const sess_restore_info *ri)
{
    if (!gw_event_wants(c->g, c->who->tenant, c->sid, "session"))
        return;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "state", "restored");
    cJSON_AddStringToObject(d, "worker", sess_worker(c->g->sessions));
    cJSON_AddNumberToObject(d, "refs_kept", (double)ri->refs_kept);
    cJSON_AddNumberToObject(d, "refs_lost", (double)ri->refs_lost);
    cJSON_AddNumberToObject(d, "fields_restored", (double)ri->fields_restored);
    cJSON_AddNumberToObject(d, "fields_lost", (double)ri->fields_lost);
    cJSON_AddBoolToObject(d, "reloaded", ri->reloaded);
    gw_event(c->g, c->who->tenant, c->sid, "session", d);
}

/* After an action that may have changed the page: the diff to snapshot subscribers. */
static void snapshot_event(gw *g, sess *s, const char *tid, const char *sid, const char *op)
{
    if (!s || sess_lost(s) || !gw_event_wants(g, tid, sid, "snapshot"))
        return;
    reg_observe_opts opts = {.diff = 1, REG_OBSERVE_TEXT, .timeout_ms = 5000};
    reg_observation o;
    if (reg_observe(sess_registry(s), sess_handle(s), &opts, &o) < 0)
        return;
    if (o.text && *o.text) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "op", op);
        cJSON_AddNumberToObject(d, "snapshot_id", (double)o.snapshot_id);
        cJSON_AddStringToObject(d, "url", o.url);
        cJSON_AddStringToObject(d, "diff", o.text);
        gw_event(g, tid, sid, "snapshot", d);
    }
    reg_observation_free(&o);
}

void gw_after_run(gw *g, gw_after *after)
{
    if (!after || !after->s)
        return;
    if (after->snapshot)
        snapshot_event(g, after->s, after->tenant, after->sid, after->op);
    sess_done(after->s, after->full);
    after->s = NULL;
}

cJSON *gw_command(gw *g, const gw_caller *who, const char *sid, const cJSON *m, int *status,
                  int *retry_after_ms, gw_after *after)
{
    if (after)
        after->s = NULL;
    int64_t t0 = rg_now_us();
    gw_cmd c = {.g = g, .who = who, .sid = sid, .id = -1};
    const cJSON *id = NULL;
    const char *idem = NULL;
    const wire_op *o = NULL;
    cJSON *reply = NULL;
    char ikey[256] = "";
    sess_restore_info ri = {0};
    if (gw_check_cmd(&c, m, &o, &id, &idem) < 0)
        goto out;
    if (who->deadline_ms && gw_has_arg(&c, "timeout_ms") &&
        c.timeout_ms > g->cfg.http_command_max_ms) {
        gw_fail(&c, RG_EBADREQ,
                "args.timeout_ms is at most %d over HTTP, where a command answers within that "
                "(REFGATE_HTTP_COMMAND_MAX_MS); send longer waits over the WebSocket",
                g->cfg.http_command_max_ms);
        goto out;
    }
    if (idem) {
        idem_key(ikey, sizeof ikey, who, sid, idem);
        int st = 200;
        cJSON *prev = NULL;
        int ir = idem_begin(g, ikey, c.timeout_ms, &prev, &st);
        if (ir == 1) {
            /* The first reply, with this request's id. */
            cJSON_DeleteItemFromObjectCaseSensitive(prev, "id");
            if (id)
                cJSON_AddItemToObject(prev, "id", cJSON_Duplicate(id, 1));
            *status = st;
            reply = prev;
            goto done;
        }
        if (ir < 0) {
            ikey[0] = '\0';
            gw_fail(&c, ir == RG_ECONFLICT ? RG_ECONFLICT : RG_EUNAVAIL,
                    ir == RG_ECONFLICT ? "a command with this idempotency_key is still running"
                                       : "Redis is unavailable; nothing was done");
            c.retry_after_ms = 1000;
            goto out;
        }
    }
    if (sid && (o->flags & WIRE_F_PARKS)) {
        /* Parking a parked session changes nothing (and restores nothing). */
        sess_wait_turn(g->sessions, who->tenant, sid, gw_left_ms(&c, c.timeout_ms));
        sess_info in;
        if (sess_get_info(g->sessions, who->tenant, sid, &in) == 0) {
            int parked = !strcmp(in.state, "parked");
            size_t bytes = in.parked_bytes;
            sess_info_free(&in);
            if (parked) {
                c.result = cJSON_CreateObject();
                cJSON_AddStringToObject(c.result, "state", "parked");
                cJSON_AddNumberToObject(c.result, "bytes", (double)bytes);
                goto out;
            }
        }
    }
    if (sid && !(o->flags & WIRE_F_UNHELD)) {
        if (open_for(&c, o, &ri) < 0)
            goto out;
        if (ri.restored)
            session_event(&c, &ri);
    }
    c.ri = &ri;
    int asked = c.timeout_ms;
    c.timeout_ms = gw_left_ms(&c, asked);
    gw_op_run(&c);
    if (c.rc < 0 && c.timeout_ms < asked && rg_now_ms() >= who->deadline_ms)
        gw_note_cut(&c, g->http_cut);
    if (c.rc == 0 && o && (o->flags & WIRE_F_CHANGES))
        c.changed = 1;
    /* Reading ops leave nothing to checkpoint (act steps report through c.changed). */
    if (!c.full && !c.changed && !(o->flags & (WIRE_F_MOVES | WIRE_F_NAV | WIRE_F_CHANGES)))
        c.full = -1;
    if (c.rc < 0 && c.s && sess_lost(c.s))
        c.rc = RG_ECRASHED; /* whatever the call saw, the cause is the dead renderer */
    if (c.rc == RG_ECRASHED)
        snprintf(c.err, sizeof c.err,
                 "the session's browser died; the next command restores "
                 "the session from its last checkpoint");
    else if (c.rc == RG_ETIMEOUT && c.s && sess_interrupt(c.s))
        /* A page stuck in a script was stopped; one that still did not
           answer was ended. */
        snprintf(c.err + strlen(c.err), sizeof c.err - strlen(c.err),
                 "; the page stopped answering and was ended: the next command restores "
                 "the session from its last checkpoint");
    if (c.s && after) {
        after->s = c.s;
        after->full = c.full;
        after->snapshot = c.changed && c.rc == 0;
        snprintf(after->tenant, sizeof after->tenant, "%s", who->tenant);
        snprintf(after->sid, sizeof after->sid, "%s", sid);
        snprintf(after->op, sizeof after->op, "%s", c.op);
    } else if (c.s) {
        if (c.changed && c.rc == 0)
            snapshot_event(g, c.s, who->tenant, sid, c.op);
        sess_done(c.s, c.full);
    }
    c.s = NULL;
out:
    if (c.rc == RG_ECRASHED)
        c.retry_after_ms = 0;
    *status = c.rc < 0 ? rg_err_http(c.rc) : 200;
    reply = gw_reply_of(&c, id, (double)(rg_now_us() - t0) / 1000.0);
    /* Kept: what worked, and what will fail the same way again. A transient
       failure lets the key go, so a retry runs. */
    if (ikey[0] && (c.rc == 0 || !rg_err_transient(c.rc)))
        idem_put(g, ikey, reply, *status);
    else if (ikey[0])
        idem_cancel(g, ikey);
done:
    if (o)
        gw_metrics_count(g, c.id, c.rc, (double)(rg_now_us() - t0) / 1000.0);
    *retry_after_ms = c.retry_after_ms;
    cJSON_Delete(c.result);
    cJSON_Delete(c.details);
    return reply;
}
