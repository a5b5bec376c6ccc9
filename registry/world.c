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

struct reg_world {
    cdp_conn *conn;
    char frame[64]; /* the main frame's id */
    int sub;
    int ctx;      /* the world's execution context in the main frame's document, 0: unknown */
    unsigned gen; /* contexts the world was given in the main frame: one per document */
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* a report came, or the document went */
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

static void on_context(void *ud, const char *session_id, const char *method, const cJSON *params)
{
    reg_world *w = ud;
    (void)session_id;
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

int reg_world_new(cdp_conn *conn, const char *session, int timeout_ms, reg_world **out)
{
    *out = NULL;
    reg_world *w = calloc(1, sizeof *w);
    if (!w)
        return RG_ENOMEM;
    w->conn = conn;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    reg_page_handle h = {conn, session, NULL};
    int rc = reg_main_frame(h, timeout_ms, w->frame, sizeof w->frame);
    if (rc == 0) {
        /* The domain: a method name without its final '.' would match only
           itself (cdp_subscribe), and the context events are three. */
        int sub = cdp_subscribe(conn, session, "Runtime.", on_context, w);
        if (sub < 0)
            rc = sub;
        else
            w->sub = sub;
    }
    /* The load report's way out, in the world only (the page's own world
       never has it). Before the script: a document the script reaches has
       it by its load event. Without it there are no reports, and a
       navigation asks the page, as before: not a reason to fail the page. */
    if (rc == 0 && cdp_call(conn, session, "Runtime.addBinding",
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
    if (rc < 0) {
        reg_world_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void reg_world_free(reg_world *w)
{
    if (!w)
        return;
    if (w->sub)
        cdp_unsubscribe(w->conn, w->sub);
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
