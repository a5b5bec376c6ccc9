/*
 * world.c - refgate's isolated world in a page. The observer runs in an
 * isolated JavaScript world of its own ("__refgate"), not in the page's main
 * world: the page shares the DOM with it but none of its globals, so a page
 * that replaces Array.prototype.push, JSON.stringify, MutationObserver or
 * getBoundingClientRect changes nothing for refgate, and the page cannot
 * reach or change the observer's state.
 *
 * The observer is installed once per page, when the page is made
 * (reg_world_new): Page.addScriptToEvaluateOnNewDocument with the world's
 * name runs it in every new document, and at once in the current one. The
 * world's execution context in the main frame changes with every document;
 * the Runtime events say which it is, so a call needs no extra round trip
 * after a navigation. pagejs.c still checks and installs on demand (a world
 * created by Page.createIsolatedWorld, a document the script did not reach),
 * so a missed event costs a round trip, never a wrong answer.
 *
 * A navigation's reply says where the page ended (URL, title, status). That
 * was a call into the page after its load event, when the renderer is busy
 * with the load's aftermath (its first paint): 1 to 14 ms, 3 to 6 at the
 * median on this machine. The observer now sends it from the world at the
 * load event itself, through a Runtime binding that only the world has
 * (Runtime.addBinding with the world's name), so it arrives before
 * Page.loadEventFired on the same session and the navigation needs no call
 * after the load (reg_world_loaded). It counts only for the document it came
 * from: the world's context generation at the event is kept with it.
 *
 * The checkpoint after a navigation keeps the page's storage too. Reading
 * it in the load event held the navigation's reply 2 to 3 ms on a small
 * page (a document's first localStorage access asks the browser process),
 * so the observer sends it in a second report a task after the event,
 * which begins with {"st": (99-api.js); the checkpoint, after the reply,
 * waits for that one (reg_world_load_final).
 *
 * Threading: the events arrive on the DevTools reader thread; the context
 * id is read and written atomically, the load report under mu. A reg_world
 * is freed by its owner after the page's lease, on the thread that owns the
 * page.
 */
#define _GNU_SOURCE
#include "registry/reg_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A load report larger than this is not kept (the page is asked instead). */
#define LOAD_JSON_MAX 65536

/*
 * A frame of another site in the page: Chromium gives it a renderer process
 * and a DevTools target of its own, out of reach of the page's world. Each
 * is attached (Target.setAutoAttach on the page's session, flattened), and
 * the registry observes it through a world of its own (registry/frames.c).
 */
struct xframe {
    char target[64];  /* the target's id, which is also its frame's id */
    char session[64]; /* the flattened session the attach made */
    reg_world *w;     /* its world, made on first use by the page's holder, or NULL */
    int gone;         /* detached: its world is freed by the holder (reader thread sets it) */
    unsigned key_gen; /* 1 + the page's world generation key was found in, 0: not found */
    int key;          /* its owner element's key there (50-observe.js, xkeyOf) */
    unsigned info;    /* Target.targetInfoChanged events seen (its URL or title changed) */
    unsigned probed;  /* 1 + info when error was found, 0: not yet */
    int error;        /* the browser's error page is in it (a frame that did not load) */
    int64_t quiet_until; /* it did not answer: left out until then (rg_now_ms) */
};

struct reg_world {
    cdp_conn *conn;
    int child;      /* the world of a frame of another site: no frames, no load reports */
    struct xframe xf[REG_XFRAMES_TRACK]; /* guarded by mu */
    size_t n_xf;
    char frame[64]; /* the main frame's id */
    int sub;
    int ctx;      /* the world's execution context in the main frame's document, 0: unknown */
    unsigned gen; /* contexts the world was given in the main frame: one per document */
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* a report came, or the document went, or a probe answered */
    int probes;           /* frames' error probes still out (on_probe) */
    int closing;          /* being freed: no more probes */
    char *load;           /* the last load report (JSON text), or NULL */
    unsigned load_gen;    /* gen when it came */
    int load_final;       /* it is the second report, the one with the storage */
};

/* A context came or went: a waiter for the report of a document that may be
   gone stops waiting (reg_world_load_final). */
static void wake(reg_world *w)
{
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/*
 * Whether a frame holds the browser's error page (a frame that did not
 * load) is asked as soon as its URL changes, without waiting, so that an
 * observe right after the page's load finds it known (registry/frames.c
 * asks what is not known yet itself).
 */
struct probe {
    reg_world *w;
    char session[64];
    unsigned info;
};

static void on_probe(void *ud, int rc, cdp_reply *r)
{
    struct probe *pr = ud;
    reg_world *w = pr->w;
    const char *proto =
        rc == 0 ? jstr(cJSON_GetObjectItemCaseSensitive(r->result, "result"), "value") : NULL;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; proto && i < w->n_xf; i++) {
        struct xframe *x = &w->xf[i];
        if (!strcmp(x->session, pr->session) && x->info == pr->info) {
            x->error = !strcmp(proto, "chrome-error:");
            x->probed = x->info + 1;
        }
    }
    w->probes--;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    free(pr);
}

/* Under w->mu. */
static void probe(reg_world *w, const struct xframe *x)
{
    struct probe *pr = malloc(sizeof *pr);
    if (!pr)
        return;
    pr->w = w;
    snprintf(pr->session, sizeof pr->session, "%s", x->session);
    pr->info = x->info;
    w->probes++;
    if (cdp_call_async(w->conn, x->session, "Runtime.evaluate",
                       "{\"expression\":\"location.protocol\",\"returnByValue\":true}", 5000,
                       on_probe, pr) < 0) {
        w->probes--;
        free(pr);
    }
}

/* Follows the frame of target tid on session sid, once (w->mu held). */
static void add_xframe(reg_world *w, const char *tid, const char *sid)
{
    if (!tid || !sid || strlen(tid) >= sizeof w->xf[0].target ||
        strlen(sid) >= sizeof w->xf[0].session)
        return;
    size_t slot = w->n_xf;
    for (size_t i = 0; i < w->n_xf; i++) {
        if (!w->xf[i].gone && !strcmp(w->xf[i].session, sid))
            return; /* known (the caller told of it, and the event came too) */
        if (slot == w->n_xf && w->xf[i].gone && !w->xf[i].w)
            slot = i; /* a detached one whose world is already freed */
    }
    /* past REG_XFRAMES_TRACK the frame is attached but not observed: its
       line in the outline says where it comes from, as before */
    if (slot >= REG_XFRAMES_TRACK)
        return;
    struct xframe *x = &w->xf[slot];
    memset(x, 0, sizeof *x);
    snprintf(x->target, sizeof x->target, "%s", tid);
    snprintf(x->session, sizeof x->session, "%s", sid);
    if (slot == w->n_xf)
        w->n_xf++;
}

void reg_world_xframe_known(reg_world *w, const char *target, const char *session)
{
    if (!w || w->child)
        return;
    pthread_mutex_lock(&w->mu);
    add_xframe(w, target, session);
    pthread_mutex_unlock(&w->mu);
}

/* A frame of another site was attached to the page's session, or detached. */
static void on_target(reg_world *w, const char *method, const cJSON *params)
{
    const char *sid = jstr(params, "sessionId");
    int info = !strcmp(method, "Target.targetInfoChanged"); /* no session in it */
    if (!info && (!sid || strlen(sid) >= sizeof w->xf[0].session))
        return;
    pthread_mutex_lock(&w->mu);
    if (!strcmp(method, "Target.attachedToTarget")) {
        const cJSON *ti = cJSON_GetObjectItemCaseSensitive(params, "targetInfo");
        const char *type = jstr(ti, "type");
        if (type && !strcmp(type, "iframe"))
            add_xframe(w, jstr(ti, "targetId"), sid);
    } else if (!strcmp(method, "Target.targetInfoChanged")) {
        const char *tid = jstr(cJSON_GetObjectItemCaseSensitive(params, "targetInfo"), "targetId");
        for (size_t i = 0; tid && i < w->n_xf; i++) {
            if (!strcmp(w->xf[i].target, tid) && !w->xf[i].gone) {
                w->xf[i].info++;
                if (!w->closing)
                    probe(w, &w->xf[i]);
            }
        }
    } else if (!strcmp(method, "Target.detachedFromTarget")) {
        for (size_t i = 0; i < w->n_xf; i++)
            if (!strcmp(w->xf[i].session, sid))
                w->xf[i].gone = 1;
    }
    pthread_mutex_unlock(&w->mu);
}

static void on_context(void *ud, const char *session_id, const char *method, const cJSON *params)
{
    reg_world *w = ud;
    (void)session_id;
    if (method && !strncmp(method, "Target.", 7)) {
        if (!w->child)
            on_target(w, method, params);
        return;
    }
    if (method && strncmp(method, "Runtime.", 8))
        return;
    if (!method) {
        __atomic_store_n(&w->ctx, 0, __ATOMIC_SEQ_CST);
        wake(w);
        return;
    }
    if (!strcmp(method, "Runtime.executionContextCreated")) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(params, "context");
        const char *name = jstr(c, "name");
        const char *frame = jstr(cJSON_GetObjectItemCaseSensitive(c, "auxData"), "frameId");
        int id = jint(c, "id", 0);
        if (name && !strcmp(name, REG_WORLD_NAME) && frame && !strcmp(frame, w->frame) && id > 0) {
            /* Ids are no identity: a new renderer process counts from 1 again. */
            __atomic_add_fetch(&w->gen, 1, __ATOMIC_SEQ_CST);
            __atomic_store_n(&w->ctx, id, __ATOMIC_SEQ_CST);
            wake(w);
        }
    } else if (!strcmp(method, "Runtime.executionContextDestroyed")) {
        int id = jint(params, "executionContextId", 0);
        int cur = id;
        if (__atomic_compare_exchange_n(&w->ctx, &cur, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            wake(w);
    } else if (!strcmp(method, "Runtime.executionContextsCleared")) {
        __atomic_store_n(&w->ctx, 0, __ATOMIC_SEQ_CST);
        wake(w);
    } else if (!strcmp(method, "Runtime.bindingCalled")) {
        const char *name = jstr(params, "name"), *payload = jstr(params, "payload");
        int id = jint(params, "executionContextId", 0);
        /* From the world of the main frame's current document only. */
        if (!name || strcmp(name, REG_LOAD_BINDING) || !payload ||
            strlen(payload) > LOAD_JSON_MAX || id <= 0 ||
            id != __atomic_load_n(&w->ctx, __ATOMIC_SEQ_CST))
            return;
        char *copy = strdup(payload);
        pthread_mutex_lock(&w->mu);
        free(w->load);
        w->load = copy;
        w->load_gen = __atomic_load_n(&w->gen, __ATOMIC_SEQ_CST);
        w->load_final = !strncmp(payload, "{\"st\":", 6);
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
}

/* w's report is of the main frame's current document (under w->mu). */
static int load_current(const reg_world *w)
{
    return w->load && w->load_gen == __atomic_load_n(&w->gen, __ATOMIC_SEQ_CST) &&
           __atomic_load_n(&w->ctx, __ATOMIC_SEQ_CST) > 0;
}

int reg_world_loaded(reg_world *w, char **json)
{
    *json = NULL;
    if (!w)
        return RG_ENOTFOUND;
    pthread_mutex_lock(&w->mu);
    int rc = RG_ENOTFOUND;
    if (load_current(w))
        rc = (*json = strdup(w->load)) ? 0 : RG_ENOMEM;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int reg_world_load_final(reg_world *w, int timeout_ms, char **json)
{
    *json = NULL;
    if (!w)
        return RG_ENOTFOUND;
    struct timespec dl;
    rg_deadline(&dl, timeout_ms);
    pthread_mutex_lock(&w->mu);
    unsigned gen = w->load_gen;
    int rc = 0;
    /* until the second report of the same document, while it is there */
    while (load_current(w) && w->load_gen == gen && !w->load_final && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->cv, &w->mu, &dl);
    if (load_current(w) && w->load_gen == gen && w->load_final)
        rc = (*json = strdup(w->load)) ? 0 : RG_ENOMEM;
    else
        rc = rc == ETIMEDOUT ? RG_ETIMEOUT : RG_ENOTFOUND;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void reg_world_forget_load(reg_world *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    free(w->load);
    w->load = NULL;
    w->load_final = 0;
    pthread_mutex_unlock(&w->mu);
}

int reg_main_frame(reg_page_handle h, int timeout_ms, char *out, size_t outlen)
{
    cdp_reply r;
    int rc = cdp_call(h.conn, h.session, "Page.getFrameTree", NULL, timeout_ms, &r);
    if (rc == 0) {
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(r.result, "frameTree"), "frame");
        const char *id = jstr(fr, "id");
        if (id && strlen(id) < outlen)
            snprintf(out, outlen, "%s", id);
        else
            rc = RG_EINTERNAL;
    }
    cdp_reply_free(&r);
    return rc;
}

static int world_new(cdp_conn *conn, const char *session, int child, int attach, int timeout_ms,
                     reg_world **out)
{
    *out = NULL;
    reg_world *w = calloc(1, sizeof *w);
    if (!w)
        return RG_ENOMEM;
    w->conn = conn;
    w->child = child;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    reg_page_handle h = {conn, session, NULL};
    int rc = reg_main_frame(h, timeout_ms, w->frame, sizeof w->frame);
    if (rc == 0) {
        /* Every event of the session: the Runtime ones follow the world's
           context, the Target ones the frames of other sites (on_context
           sorts them; one subscription a tab, not two). */
        int sub = cdp_subscribe(conn, session, NULL, on_context, w);
        if (sub < 0)
            rc = sub;
        else
            w->sub = sub;
    }
    /* The load report's way out, in the world only (the page's own world
       never has it). Before the script: a document the script reaches has
       it by its load event. Without it there are no reports, and a
       navigation asks the page, as before: not a reason to fail the page. */
    if (rc == 0 && !child && cdp_call(conn, session, "Runtime.addBinding",
                            "{\"name\":\"" REG_LOAD_BINDING
                            "\",\"executionContextName\":\"" REG_WORLD_NAME "\"}",
                            timeout_ms, NULL) < 0)
        rg_log(RG_LOG_INFO, "registry", "no load reports for this page: Runtime.addBinding failed");
    if (rc == 0) {
        /* Every new document of the page gets the observer in the world,
           and the current one at once. */
        const char *src = reg_installer();
        rg_buf q;
        rg_buf_init(&q);
        rg_buf_puts(&q, "{\"worldName\":\"" REG_WORLD_NAME "\",\"runImmediately\":true,"
                        "\"source\":");
        rg_buf_json_str(&q, src, strlen(src));
        rg_buf_puts(&q, "}");
        rc = q.failed ? RG_ENOMEM
                      : cdp_call(conn, session, "Page.addScriptToEvaluateOnNewDocument", q.data,
                                 timeout_ms, NULL);
        rg_buf_destroy(&q);
    }
    /*
     * A frame's world follows its contexts through the Runtime events too
     * (the page's holder enables Runtime on the page itself). The page's
     * frames of other sites are attached, existing ones at once, and run
     * on without waiting: nothing of the registry's needs to be in them
     * before they load (the observer is installed when first asked for).
     * A caller that attaches them itself (reg_world_new_attached: the
     * session, which may hold them until their requests are checked)
     * gets no setAutoAttach from here.
     */
    if (rc == 0 && child)
        rc = cdp_call(conn, session, "Runtime.enable", NULL, timeout_ms, NULL);
    if (rc == 0 && attach &&
        cdp_call_async(conn, session, "Target.setAutoAttach",
                       "{\"autoAttach\":true,\"waitForDebuggerOnStart\":false,\"flatten\":true,"
                       "\"filter\":[{\"type\":\"iframe\"}]}",
                       timeout_ms, NULL, NULL) < 0)
        rg_log(RG_LOG_INFO, "registry", "frames of other sites are not observed in this page");
    if (rc < 0) {
        reg_world_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

int reg_world_new(cdp_conn *conn, const char *session, int timeout_ms, reg_world **out)
{
    return world_new(conn, session, 0, 1, timeout_ms, out);
}

int reg_world_new_attached(cdp_conn *conn, const char *session, int timeout_ms, reg_world **out)
{
    return world_new(conn, session, 0, 0, timeout_ms, out);
}

void reg_world_free(reg_world *w)
{
    if (!w)
        return;
    if (w->sub)
        cdp_unsubscribe(w->conn, w->sub); /* first: no attach changes the list after it */
    /* The probes' answers point at w: wait for them (each has a timeout,
       and a broken connection answers them all at once). */
    pthread_mutex_lock(&w->mu);
    w->closing = 1;
    while (w->probes > 0)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < w->n_xf; i++)
        reg_world_free(w->xf[i].w);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->load);
    free(w);
}

int reg_world_ctx(reg_world *w)
{
    return w ? __atomic_load_n(&w->ctx, __ATOMIC_SEQ_CST) : 0;
}

unsigned reg_world_gen(reg_world *w)
{
    return w ? __atomic_load_n(&w->gen, __ATOMIC_SEQ_CST) : 0;
}

void reg_world_set_ctx(reg_world *w, int ctx)
{
    if (w)
        __atomic_store_n(&w->ctx, ctx, __ATOMIC_SEQ_CST);
}

const char *reg_world_frame(reg_world *w)
{
    return w ? w->frame : NULL;
}

size_t reg_world_xframes(reg_world *w, reg_xframe *out, size_t max)
{
    size_t n = 0;
    if (!w || w->child)
        return 0;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->n_xf; i++) {
        struct xframe *x = &w->xf[i];
        reg_world *dead = x->gone ? x->w : NULL;
        if (x->gone) {
            x->w = NULL; /* the slot may be taken again once its world is gone */
            pthread_mutex_unlock(&w->mu);
            reg_world_free(dead);
            pthread_mutex_lock(&w->mu);
            continue;
        }
        if (n == max)
            continue;
        reg_xframe *o = &out[n++];
        memset(o, 0, sizeof *o);
        o->slot = i;
        snprintf(o->session, sizeof o->session, "%s", x->session);
        snprintf(o->target, sizeof o->target, "%s", x->target);
        o->key = x->key_gen == __atomic_load_n(&w->gen, __ATOMIC_SEQ_CST) + 1 ? x->key : -1;
        o->info = x->info;
        o->error = x->probed == x->info + 1 ? x->error : -1;
        o->quiet = x->quiet_until > rg_now_ms();
        o->h.conn = w->conn;
        o->h.session = o->session;
        o->h.world = x->w;
    }
    pthread_mutex_unlock(&w->mu);
    return n;
}

void reg_world_xframe_open(reg_world *w, reg_xframe *x, int timeout_ms)
{
    /* Made by the page's holder: only it touches a frame's world besides
       the free in reg_world_xframes, so no other thread makes one meanwhile. */
    if (x->h.world)
        return;
    reg_world *cw = NULL;
    if (world_new(w->conn, x->session, 1, 0, timeout_ms, &cw) < 0)
        return; /* every call then finds the world itself */
    pthread_mutex_lock(&w->mu);
    struct xframe *f = &w->xf[x->slot];
    if (!f->gone && !f->w && !strcmp(f->session, x->session)) {
        f->w = cw;
        x->h.world = cw;
        cw = NULL;
    }
    pthread_mutex_unlock(&w->mu);
    reg_world_free(cw); /* detached meanwhile: its calls fail, and it is skipped */
}

void reg_world_xframe_key(reg_world *w, const reg_xframe *x, int key)
{
    pthread_mutex_lock(&w->mu);
    struct xframe *f = &w->xf[x->slot];
    if (!strcmp(f->session, x->session)) {
        f->key = key;
        f->key_gen = __atomic_load_n(&w->gen, __ATOMIC_SEQ_CST) + 1;
    }
    pthread_mutex_unlock(&w->mu);
}

void reg_world_xframe_error(reg_world *w, const reg_xframe *x, int error)
{
    pthread_mutex_lock(&w->mu);
    struct xframe *f = &w->xf[x->slot];
    if (!strcmp(f->session, x->session)) {
        f->error = error;
        f->probed = x->info + 1;
    }
    pthread_mutex_unlock(&w->mu);
}

void reg_world_xframe_quiet(reg_world *w, const reg_xframe *x, int ms)
{
    pthread_mutex_lock(&w->mu);
    struct xframe *f = &w->xf[x->slot];
    if (!strcmp(f->session, x->session))
        f->quiet_until = rg_now_ms() + ms;
    pthread_mutex_unlock(&w->mu);
}
