/*
 * frames.c - frames of other sites in the outline and under actions.
 *
 * Chromium runs a frame of another site (a payment form, a sign-in button,
 * an embedded video) in a renderer process of its own: the page's world
 * cannot reach its document. Chromium's own accessibility tree has the
 * frame's content where the frame stands; so does the outline.
 *
 * Attaching: the page's world attaches every such frame as a DevTools
 * target (world.c: Target.setAutoAttach on the page's session, flattened,
 * without holding the frame), and each frame that is observed gets a world
 * of its own with the same observer. A frame that holds the browser's error
 * page (an unreachable host, a refused address) is left as its line: world.c
 * asks each frame's location when its URL changes, and what is not known
 * yet is asked here, all frames at once.
 *
 * Observing: after the page's walk, each frame whose Iframe line is in the
 * outline is observed in its world, and its nodes go under that line, one
 * level deeper, bounds moved to the top viewport (registry.c,
 * reg_observation_add_frame). Which line: the browser names the frame's
 * owner element (DOM.getFrameOwner, a backend node), the page's world
 * resolves it (DOM.resolveNode into the world's context) and gives the key
 * its walk gave that element (50-observe.js, xkeyOf), which is on the line.
 * The key is kept for the page's document: three round trips once per frame
 * and document, none after.
 *
 * Refs: a frame's elements are registered in the page's registry like the
 * page's own (one ref space, one cap, parked and restored with it), with
 * frame "x<key>" and page-side indexes past the page's (pg->xsegs). An
 * action on such a ref runs in the frame's target (act.c, frame_of), whose
 * input events take the frame's own coordinates. Where the frame's indexes
 * are not known (a worker that restored the session and has not observed
 * since), the ref's element is found in the frame by its identity
 * (reg_frames_locate).
 *
 * Limits: one level (a frame of another site inside such a frame is its
 * line only); at most REG_XFRAMES_MAX frames a page observed (of REG_XFRAMES_TRACK
 * followed); locators other than
 * refs (css:, role:, text:, ...) search the page only.
 */
#define _GNU_SOURCE
#include "registry/reg_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A frame that does not answer within this is left out of the observation,
   and of the observations of the next FRAME_QUIET_MS. */
#define FRAME_TIMEOUT_MS 2000
#define FRAME_QUIET_MS 10000

static int has_iframe_line(const reg_observation *o)
{
    for (size_t i = 0; i < o->n_nodes; i++)
        if (o->nodes[i].xk >= 0 && !o->nodes[i].is_text && !strcmp(o->nodes[i].role, "Iframe"))
            return 1;
    return 0;
}

/*
 * Calls fn (a function declaration) on the element that holds frame x, in
 * the page's world, into *out (its value, owned). 0, RG_ENOTFOUND when the
 * element is not there (or the world's context is not known), or the call's
 * error. Three round trips: the owner, the element in the world, the call.
 */
static int on_owner(reg_page_handle h, const reg_xframe *x, const char *fn, int timeout_ms,
                    cJSON **out)
{
    *out = NULL;
    int ctx = reg_world_ctx(h.world);
    if (ctx <= 0)
        return RG_ENOTFOUND;
    char q[256];
    cdp_reply r = {0};
    snprintf(q, sizeof q, "{\"frameId\":\"%s\"}", x->target);
    int rc = cdp_call(h.conn, h.session, "DOM.getFrameOwner", q, timeout_ms, &r);
    int node = rc == 0 ? jint(r.result, "backendNodeId", 0) : 0;
    cdp_reply_free(&r);
    if (node <= 0)
        return rc < 0 ? rc : RG_ENOTFOUND;
    memset(&r, 0, sizeof r);
    snprintf(q, sizeof q, "{\"backendNodeId\":%d,\"executionContextId\":%d}", node, ctx);
    char *obj = NULL;
    if ((rc = cdp_call(h.conn, h.session, "DOM.resolveNode", q, timeout_ms, &r)) == 0) {
        const char *id = jstr(cJSON_GetObjectItemCaseSensitive(r.result, "object"), "objectId");
        obj = id ? strdup(id) : NULL;
    }
    cdp_reply_free(&r);
    if (!obj)
        return rc < 0 ? rc : RG_ENOTFOUND;
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, "{\"objectId\":");
    rg_buf_json_str(&b, obj, strlen(obj));
    rg_buf_puts(&b, ",\"returnByValue\":true,\"functionDeclaration\":");
    rg_buf_json_str(&b, fn, strlen(fn));
    rg_buf_puts(&b, "}");
    memset(&r, 0, sizeof r);
    rc = b.failed ? RG_ENOMEM
                  : cdp_call(h.conn, h.session, "Runtime.callFunctionOn", b.data, timeout_ms, &r);
    if (rc == 0) {
        cJSON *res = cJSON_GetObjectItemCaseSensitive(r.result, "result");
        *out = cJSON_DetachItemFromObjectCaseSensitive(res, "value");
        rc = *out ? 0 : RG_ENOTFOUND;
    }
    cdp_reply_free(&r);
    rg_buf_destroy(&b);
    reg_release_object(h, obj);
    free(obj);
    return rc;
}

/* The key the page's walk gave the element that holds frame x, or -1. */
static int owner_key(reg_page_handle h, const reg_xframe *x, int timeout_ms)
{
    cJSON *v = NULL;
    int key = -1;
    if (on_owner(h, x, "function(){var g=globalThis.__refgate;return g&&g.xkey?g.xkey(this):-1}",
                 timeout_ms, &v) == 0 &&
        cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e9)
        key = (int)v->valuedouble;
    cJSON_Delete(v);
    return key;
}

int reg_frames_offset(reg_page_handle h, const reg_xframe *x, double xy[4])
{
    /* where the frame's viewport starts: the element's box, inside its
       border and padding; and the page's scroll */
    static const char fn[] =
        "function(){var r=this.getBoundingClientRect(),s=getComputedStyle(this);"
        "return [r.left+(parseFloat(s.borderLeftWidth)||0)+(parseFloat(s.paddingLeft)||0),"
        "r.top+(parseFloat(s.borderTopWidth)||0)+(parseFloat(s.paddingTop)||0),scrollX,scrollY]}";
    cJSON *v = NULL;
    int rc = on_owner(h, x, fn, FRAME_TIMEOUT_MS, &v);
    if (rc == 0 && cJSON_GetArraySize(v) == 4) {
        for (int k = 0; k < 4; k++) {
            const cJSON *e = cJSON_GetArrayItem(v, k);
            xy[k] = cJSON_IsNumber(e) ? e->valuedouble : 0;
        }
    } else if (rc == 0) {
        rc = RG_EINTERNAL;
    }
    cJSON_Delete(v);
    return rc;
}

/* Nodes of o from first on that take a ref (as registry.c's wants_ref counts). */
static size_t refable(const reg_observation *o, size_t first)
{
    size_t n = 0;
    for (size_t i = first; i < o->n_nodes; i++) {
        const reg_node *nd = &o->nodes[i];
        n += !nd->is_text && !nd->no_ref &&
             (nd->interactive || (nd->ident.testid && *nd->ident.testid));
    }
    return n;
}

/*
 * Which frames hold the browser's own page for a frame that did not load
 * (an unreachable host, a refused address): their lines stay as they were,
 * where the frame was to come from, and no world is made in them. Asked of
 * each frame's main world (location cannot be replaced by a page), all at
 * once, and kept until the frame's target's info (its URL) changes: a page
 * with eight dead ad frames waits for one round trip, once.
 */
struct probes {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending, refs; /* refs: the waiter and each call still out */
    int error[REG_XFRAMES_TRACK]; /* -1 no answer (yet), 0 a page, 1 an error page,
                                     2 the call failed */
};

struct probe {
    struct probes *ps;
    int k;
};

static void probes_unref(struct probes *ps)
{
    pthread_mutex_lock(&ps->mu);
    int last = --ps->refs == 0;
    pthread_mutex_unlock(&ps->mu);
    if (last) {
        pthread_mutex_destroy(&ps->mu);
        pthread_cond_destroy(&ps->cv);
        free(ps);
    }
}

static void on_probe(void *ud, int rc, cdp_reply *r)
{
    struct probe *pr = ud;
    struct probes *ps = pr->ps;
    const char *proto =
        rc == 0 ? jstr(cJSON_GetObjectItemCaseSensitive(r->result, "result"), "value") : NULL;
    pthread_mutex_lock(&ps->mu);
    /* not answering: left out this time (1), not kept (failed_loads) */
    ps->error[pr->k] = rc < 0 ? 2 : proto && !strcmp(proto, "chrome-error:");
    ps->pending--;
    pthread_cond_broadcast(&ps->cv);
    pthread_mutex_unlock(&ps->mu);
    free(pr);
    probes_unref(ps);
}

static void failed_loads(reg_page_handle h, reg_xframe *xs, size_t n, int timeout_ms)
{
    size_t unknown = 0;
    for (size_t k = 0; k < n; k++)
        unknown += xs[k].error < 0;
    if (!unknown)
        return; /* the usual case: world.c's probes answered while the page loaded */
    struct probes *ps = calloc(1, sizeof *ps);
    if (!ps)
        return;
    pthread_mutex_init(&ps->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ps->cv, &ca);
    pthread_condattr_destroy(&ca);
    ps->refs = 1;
    for (size_t k = 0; k < REG_XFRAMES_TRACK; k++)
        ps->error[k] = -1;
    for (size_t k = 0; k < n; k++) {
        struct probe *pr = xs[k].error < 0 ? malloc(sizeof *pr) : NULL;
        if (!pr)
            continue;
        *pr = (struct probe){ps, (int)k};
        pthread_mutex_lock(&ps->mu);
        ps->pending++;
        ps->refs++;
        pthread_mutex_unlock(&ps->mu);
        if (cdp_call_async(h.conn, xs[k].session, "Runtime.evaluate",
                           "{\"expression\":\"location.protocol\",\"returnByValue\":true}",
                           timeout_ms, on_probe, pr) < 0) {
            pthread_mutex_lock(&ps->mu);
            ps->pending--;
            ps->refs--;
            pthread_mutex_unlock(&ps->mu);
            free(pr);
            xs[k].error = 1;
        }
    }
    struct timespec dl;
    rg_deadline(&dl, timeout_ms);
    pthread_mutex_lock(&ps->mu);
    int rc = 0;
    while (ps->pending > 0 && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&ps->cv, &ps->mu, &dl);
    for (size_t k = 0; k < n; k++) {
        if (xs[k].error >= 0)
            continue;
        int e = ps->error[k];
        /* no answer, or a failed call: left out this time, nothing kept;
           no answer at all, for a while (a frame stuck in a loop) */
        xs[k].error = e != 0;
        if (e == 0 || e == 1)
            reg_world_xframe_error(h.world, &xs[k], e);
        else if (e < 0)
            reg_world_xframe_quiet(h.world, &xs[k], FRAME_QUIET_MS);
    }
    pthread_mutex_unlock(&ps->mu);
    probes_unref(ps);
}

/* The frame's key, found now when not known for the page's document yet. */
static int key_of(reg_page_handle h, reg_xframe *x, int timeout_ms)
{
    if (x->key < 0 && (x->key = owner_key(h, x, timeout_ms)) >= 0)
        reg_world_xframe_key(h.world, x, x->key);
    return x->key;
}

int reg_frames_observe(reg_page *pg, reg_page_handle h, const reg_observe_opts *opts, size_t max,
                       reg_observation *o)
{
    if (!h.world || opts->scope_css || !has_iframe_line(o))
        return 0;
    reg_xframe xs[REG_XFRAMES_TRACK];
    int timeout = opts->timeout_ms > 0 && opts->timeout_ms < FRAME_TIMEOUT_MS ? opts->timeout_ms
                                                                               : FRAME_TIMEOUT_MS;
    size_t n = reg_world_xframes(h.world, xs, REG_XFRAMES_TRACK);
    size_t used = refable(o, 0);
    failed_loads(h, xs, n, timeout);
    size_t spliced = 0;
    for (size_t k = 0; k < n && spliced < REG_XFRAMES_MAX; k++) {
        reg_xframe *x = &xs[k];
        if (x->error || x->quiet)
            continue;
        if (key_of(h, x, timeout) < 0)
            continue; /* not in this document yet, or gone: the next observe */
        size_t at = o->n_nodes;
        for (size_t i = 0; i < o->n_nodes && at == o->n_nodes; i++)
            if (o->nodes[i].xk == x->key && !o->nodes[i].is_text &&
                !strcmp(o->nodes[i].role, "Iframe"))
                at = i;
        if (at == o->n_nodes)
            continue; /* its element is not in the outline (hidden, or out of scope) */
        /* the refs left under the cap (at least one: 0 is no cap to the observer) */
        char call[200];
        snprintf(call, sizeof call,
                 "g.observe('{\"viewport_only\":%s,\"max_elements\":%zu,\"sel\":%s,"
                 "\"b\":%s,\"text\":%s,\"scope\":null}')",
                 /* in view: what the frame shows of itself (its line is in view) */
                 opts->viewport_only ? "true" : "false", used < max ? max - used : 1,
                 opts->no_selectors ? "false" : "true", opts->no_bounds ? "false" : "true",
                 opts->mode == REG_MODE_INTERACTIVE ? "false" : "true");
        reg_world_xframe_open(h.world, x, timeout);
        cJSON *root = NULL;
        char err[200];
        int rc = reg_js(x->h, call, 0, timeout, &root, err, sizeof err);
        if (rc < 0) {
            rg_log(RG_LOG_DEBUG, "registry", "a frame of another site was left out: %s", err);
            /* a frame that does not answer (busy, or hostile) costs one wait,
               not one every observe */
            if (rc == RG_ETIMEOUT)
                reg_world_xframe_quiet(h.world, x, FRAME_QUIET_MS);
            continue;
        }
        const char *fu = jstr(root, "url");
        if (fu && !strncmp(fu, "chrome-error:", 13)) {
            /* an error page the probe did not see yet (it came since) */
            reg_world_xframe_error(h.world, x, 1);
            cJSON_Delete(root);
            continue;
        }
        size_t first = o->n_nodes;
        if ((rc = reg_observation_add_frame(pg, o, at, x, root)) < 0)
            return rc;
        spliced++;
        used += refable(o, first);
    }
    return 0;
}

int reg_frames_find(reg_page *pg, reg_page_handle h, int key, reg_xframe *x, int *base, int *n)
{
    *base = -1;
    *n = 0;
    if (!h.world)
        return RG_ENOTFOUND;
    reg_xframe xs[REG_XFRAMES_TRACK];
    size_t nx = reg_world_xframes(h.world, xs, REG_XFRAMES_TRACK);
    for (size_t k = 0; k < nx; k++) {
        if (key_of(h, &xs[k], FRAME_TIMEOUT_MS) != key)
            continue;
        *x = xs[k];
        x->h.session = x->session; /* into *x, not the array here */
        reg_world_xframe_open(h.world, x, FRAME_TIMEOUT_MS);
        /* its indexes, when the last observation was of this document */
        for (size_t s = 0; reg_observed_here(pg, h) && s < pg->n_xsegs; s++) {
            if (!strcmp(pg->xsegs[s].target, x->target)) {
                *base = pg->xsegs[s].base;
                *n = pg->xsegs[s].n;
            }
        }
        return 0;
    }
    return RG_ENOTFOUND;
}

size_t reg_frames_last(reg_page *pg, reg_page_handle h, reg_xframe *x, int *base, int *n,
                       size_t max)
{
    if (!reg_observed_here(pg, h))
        return 0;
    reg_xframe xs[REG_XFRAMES_TRACK];
    size_t nx = reg_world_xframes(h.world, xs, REG_XFRAMES_TRACK), out = 0;
    for (size_t s = 0; s < pg->n_xsegs && out < max; s++) {
        for (size_t k = 0; k < nx; k++) {
            if (strcmp(xs[k].target, pg->xsegs[s].target))
                continue;
            x[out] = xs[k];
            x[out].h.session = x[out].session; /* into x, not the array here */
            reg_world_xframe_open(h.world, &x[out], FRAME_TIMEOUT_MS);
            base[out] = pg->xsegs[s].base;
            n[out] = pg->xsegs[s].n;
            out++;
            break;
        }
    }
    return out;
}

int reg_frames_locate(reg_page_handle fh, const reg_entry *e, int *local)
{
    *local = -1;
    cJSON *root = NULL;
    char err[200];
    int rc = reg_js(fh,
                    "g.observe('{\"viewport_only\":false,\"sel\":false,\"text\":false,"
                    "\"scope\":null}')",
                    0, FRAME_TIMEOUT_MS, &root, err, sizeof err);
    if (rc < 0)
        return rc;
    double best = 0;
    int n_best = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "nodes"))
    {
        int i = jint(it, "i", -1);
        if (i < 0)
            continue;
        reg_identity id = {
            .testid = (char *)jstr(it, "testid"),
            .id = (char *)jstr(it, "id"),
            .aria_label = (char *)jstr(it, "aria"),
            .role = (char *)jstr(it, "role"),
            .name = (char *)jstr(it, "name"),
            .tag = (char *)jstr(it, "tag"),
            .parent_role = (char *)jstr(it, "prole"),
            .sibling_index = jint(it, "sib", 0),
        };
        double sc = reg_identity_score(&e->ident, &id);
        if (sc > best) {
            best = sc;
            n_best = 1;
            *local = i;
        } else if (sc == best) {
            n_best++;
        }
    }
    cJSON_Delete(root);
    /* one element, confidently: else nothing is acted on */
    if (best < REG_SAME_SCORE || n_best != 1)
        *local = -1;
    return 0;
}

int reg_frames_any(reg_page_handle h, const char *call)
{
    if (!h.world)
        return 0;
    reg_xframe xs[REG_XFRAMES_TRACK];
    size_t n = reg_world_xframes(h.world, xs, REG_XFRAMES_TRACK);
    failed_loads(h, xs, n, FRAME_TIMEOUT_MS);
    for (size_t k = 0; k < n; k++) {
        if (xs[k].error || xs[k].quiet)
            continue;
        reg_world_xframe_open(h.world, &xs[k], FRAME_TIMEOUT_MS);
        cJSON *js = NULL;
        char err[128];
        int rc = reg_js(xs[k].h, call, 0, FRAME_TIMEOUT_MS, &js, err, sizeof err);
        if (rc == RG_ETIMEOUT)
            reg_world_xframe_quiet(h.world, &xs[k], FRAME_QUIET_MS);
        if (rc < 0)
            continue; /* gone or busy: as if it had not */
        int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(js, "ok"));
        cJSON_Delete(js);
        if (ok)
            return 1;
    }
    return 0;
}
