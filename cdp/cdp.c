/*
 * cdp.c - the DevTools connection: calls matched to replies by id, events to
 * subscribers, one reader thread per connection, a bounded write queue.
 *
 * Locks, always taken in this order when nested:
 *   smu (subscribers; recursive, held while events are dispatched)
 *   mu  (pending calls, sticky error, ids)
 *   wmu (the write side: wfd and the write queue)
 * Callbacks are never called with mu or wmu held.
 *
 * Writes: the calling thread writes straight into the pipe while nothing is
 * queued; what the pipe does not take goes to the write queue, which the
 * reader thread flushes when the pipe is writable. Bytes of one message are
 * never interleaved with another's.
 */
#define _GNU_SOURCE
#include "cdp/cdp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define CDP_BUCKETS 256
#define CDP_SID_MAX 80
#define CDP_PIPE_BYTES (1024 * 1024)
/* Sessions whose target is gone, remembered so that a call sent on one
   later fails at once instead of waiting out its timeout: the last ones
   (a call on an older one waits, as before). */
#define CDP_GONE_MAX 32

struct pending {
    int64_t id;
    struct pending *next;
    char sid[CDP_SID_MAX]; /* the call's session, "" for the browser */
    char method[64];       /* for error messages */
    int done;
    int rc;
    char why[160]; /* reason when rc != 0 and no message */
    cJSON *msg;    /* the reply, handed from the reader to the caller */
    /* sync calls */
    pthread_cond_t cond;
    /* async calls (heap-allocated) */
    int async;
    cdp_reply_fn fn;
    void *ud;
    int64_t deadline_ms;
};

struct sub {
    int id;
    int dead;
    char *sid;
    char *method;
    size_t mlen;
    int prefix;
    cdp_event_fn fn;
    void *ud;
};

struct cdp_conn {
    cdp_config cfg;
    char name[48];
    int rfd, wfd, wakefd;
    pthread_t reader;
    int reader_started;

    pthread_mutex_t mu;
    pthread_condattr_t condattr;
    int err;
    char errstr[256];
    struct {
        char sid[CDP_SID_MAX];
        char why[64];
    } gone[CDP_GONE_MAX]; /* a ring; mu */
    int gone_next;
    int64_t next_id;
    struct pending *buckets[CDP_BUCKETS];
    int n_async;
    int n_pending;        /* calls in the table, sync and async */
    int64_t last_call_ms; /* when a call last went in or came out of it */
    int stopping;

    pthread_mutex_t wmu;
    rg_buf wq;
    size_t wq_off;
    /* A write on a caller's thread that broke the stream: the reader fails
       the connection (wmu held to set; its callbacks must not run on a
       caller's thread, which may hold the lock they take). */
    int wfail;
    char wfail_why[128];

    pthread_mutex_t smu; /* recursive */
    struct sub subs[CDP_MAX_SUBSCRIBERS];
    int n_subs;
    int next_sub_id;
    int dispatch_depth;

    cdp_frame frame;
};

void cdp_config_default(cdp_config *cfg)
{
    cfg->max_message_bytes = CDP_MAX_MESSAGE_BYTES;
    cfg->max_write_queue_bytes = CDP_MAX_WRITE_QUEUE_BYTES;
    cfg->name = "cdp";
}

void cdp_reply_free(cdp_reply *r)
{
    if (!r)
        return;
    cJSON_Delete(r->msg);
    r->msg = NULL;
    r->result = NULL;
}

static int on_reader_thread(cdp_conn *c)
{
    return c->reader_started && pthread_equal(pthread_self(), c->reader);
}

static void wake(cdp_conn *c)
{
    uint64_t one = 1;
    ssize_t r = write(c->wakefd, &one, sizeof one);
    (void)r; /* a full eventfd counter already means "wake up" */
}

/* ---- pending table (mu held) ---- */

static void pending_add(cdp_conn *c, struct pending *p)
{
    struct pending **b = &c->buckets[(uint64_t)p->id % CDP_BUCKETS];
    p->next = *b;
    *b = p;
    if (p->async)
        c->n_async++;
    c->n_pending++;
    c->last_call_ms = rg_now_ms();
}

/* p, just unlinked from the table (mu held). */
static void pending_gone(cdp_conn *c, const struct pending *p)
{
    if (p->async)
        c->n_async--;
    c->n_pending--;
    c->last_call_ms = rg_now_ms();
}

static struct pending *pending_take(cdp_conn *c, int64_t id)
{
    struct pending **pp = &c->buckets[(uint64_t)id % CDP_BUCKETS];
    for (; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            struct pending *p = *pp;
            *pp = p->next;
            p->next = NULL;
            pending_gone(c, p);
            return p;
        }
    }
    return NULL;
}

/*
 * Completes p (already taken out of the table, mu held). Sync callers are
 * signalled; async ones are pushed on *later to be called without the lock.
 */
static void pending_finish(struct pending *p, int rc, const char *why, cJSON *msg,
                           struct pending **later)
{
    p->done = 1;
    p->rc = rc;
    p->msg = msg;
    if (why)
        rg_strlcpy(p->why, why, sizeof p->why);
    if (p->async) {
        p->next = *later;
        *later = p;
    } else {
        pthread_cond_signal(&p->cond);
    }
}

/* Builds the reply a caller sees from a finished pending call. */
static int reply_from(struct pending *p, cdp_reply *r)
{
    int rc = p->rc;
    cJSON *msg = p->msg;
    p->msg = NULL;
    if (r) {
        memset(r, 0, sizeof *r);
    }
    if (rc == 0 && msg) {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(msg, "error");
        if (err) {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(err, "message");
            rc = RG_ECDP;
            if (r) {
                r->cdp_code = cJSON_IsNumber(code) ? code->valueint : 0;
                snprintf(r->error, sizeof r->error, "%s: %s", p->method,
                         cJSON_IsString(m) ? m->valuestring : "error without a message");
            }
        } else if (r) {
            r->result = cJSON_GetObjectItemCaseSensitive(msg, "result");
        }
    } else if (r && rc != 0) {
        snprintf(r->error, sizeof r->error, "%s: %s", p->method, p->why);
    }
    if (r)
        r->msg = msg;
    else
        cJSON_Delete(msg);
    return rc;
}

static void call_later(struct pending *later)
{
    while (later) {
        struct pending *p = later;
        later = p->next;
        cdp_reply r;
        int rc = reply_from(p, &r);
        if (p->fn)
            p->fn(p->ud, rc, &r);
        cdp_reply_free(&r);
        free(p);
    }
}

/* ---- failure ---- */

static void notify_close(cdp_conn *c)
{
    pthread_mutex_lock(&c->smu);
    c->dispatch_depth++;
    for (int i = 0; i < c->n_subs; i++) {
        struct sub *s = &c->subs[i];
        if (!s->dead)
            s->fn(s->ud, NULL, NULL, NULL);
    }
    c->dispatch_depth--;
    pthread_mutex_unlock(&c->smu);
}

void cdp_conn_fail(cdp_conn *c, int err, const char *why)
{
    struct pending *later = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->err) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->err = err ? err : RG_ECRASHED;
    int stopping = c->stopping;
    rg_strlcpy(c->errstr, why ? why : "connection failed", sizeof c->errstr);
    for (int b = 0; b < CDP_BUCKETS; b++) {
        while (c->buckets[b]) {
            struct pending *p = c->buckets[b];
            c->buckets[b] = p->next;
            pending_finish(p, c->err, c->errstr, NULL, &later);
        }
    }
    c->n_async = 0;
    c->n_pending = 0;
    pthread_mutex_unlock(&c->mu);
    rg_log(stopping ? RG_LOG_DEBUG : RG_LOG_INFO, c->name, "connection closed: %s",
           c->errstr);
    call_later(later);
    notify_close(c);
}

int64_t cdp_conn_quiet_ms(cdp_conn *c)
{
    pthread_mutex_lock(&c->mu);
    int64_t q = c->n_pending ? 0 : rg_now_ms() - c->last_call_ms;
    pthread_mutex_unlock(&c->mu);
    return q < 0 ? 0 : q;
}

int cdp_conn_err(cdp_conn *c, char *buf, size_t len)
{
    pthread_mutex_lock(&c->mu);
    int err = c->err;
    if (buf && len)
        snprintf(buf, len, "%s", err ? c->errstr : "");
    pthread_mutex_unlock(&c->mu);
    return err;
}

/* The slot of sid among the sessions known to be gone, or -1 (mu held). */
static int gone_find(const cdp_conn *c, const char *sid)
{
    for (int i = 0; i < CDP_GONE_MAX; i++)
        if (c->gone[i].sid[0] && !strcmp(c->gone[i].sid, sid))
            return i;
    return -1;
}

/* Fails every pending call of one flattened session (its target went away),
   and every later one. */
static void fail_session(cdp_conn *c, const char *sid, const char *why)
{
    struct pending *later = NULL;
    pthread_mutex_lock(&c->mu);
    /* A command that checked the page before this and calls it after
       would otherwise wait out its whole timeout on a target that never
       answers (test_faults: a renderer that ran out of memory between two
       calls of one eval). */
    if (gone_find(c, sid) < 0) {
        int g = c->gone_next;
        c->gone_next = (g + 1) % CDP_GONE_MAX;
        rg_strlcpy(c->gone[g].sid, sid, sizeof c->gone[g].sid);
        rg_strlcpy(c->gone[g].why, why, sizeof c->gone[g].why);
    }
    for (int b = 0; b < CDP_BUCKETS; b++) {
        struct pending **pp = &c->buckets[b];
        while (*pp) {
            struct pending *p = *pp;
            if (strcmp(p->sid, sid) == 0) {
                *pp = p->next;
                pending_gone(c, p);
                pending_finish(p, RG_ECRASHED, why, NULL, &later);
            } else {
                pp = &p->next;
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
    call_later(later);
}

void cdp_fail_session(cdp_conn *c, const char *sid, const char *why)
{
    if (sid && *sid)
        fail_session(c, sid, why);
}

/* ---- writing ---- */

/* Writes as much of p[0..n) as the pipe takes (wmu held). Returns bytes or -errno. */
static ssize_t write_some(int fd, const char *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, p + done, n - done);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        return -(w < 0 ? errno : EIO);
    }
    return (ssize_t)done;
}

/* Sends one framed message (msg[n-1] == '\0'). */
static int conn_send(cdp_conn *c, const char *msg, size_t n)
{
    int rc = 0;
    int err_no = 0;
    int need_wake = 0;
    pthread_mutex_lock(&c->wmu);
    size_t queued = c->wq.len - c->wq_off;
    size_t done = 0;
    if (queued == 0) {
        ssize_t w = write_some(c->wfd, msg, n);
        if (w < 0) {
            err_no = (int)-w;
            goto out;
        }
        done = (size_t)w;
    }
    if (done < n) {
        /* A message that is partly in the pipe must be finished whatever the bound. */
        if (done == 0 && queued + n > c->cfg.max_write_queue_bytes) {
            rc = RG_EBUSY;
            goto out;
        }
        if (c->wq_off && c->wq_off == c->wq.len) {
            rg_buf_reset(&c->wq);
            c->wq_off = 0;
        }
        if (rg_buf_append(&c->wq, msg + done, n - done) < 0) {
            rc = done ? RG_EPROTO : RG_ENOMEM;
            goto out;
        }
        need_wake = 1;
    }
out:
    /* A broken stream fails the connection, but on the reader thread: here
       the caller may hold a lock that the failed calls' callbacks take. */
    if (err_no && !c->wfail) {
        c->wfail = RG_ECRASHED;
        snprintf(c->wfail_why, sizeof c->wfail_why, "writing to the browser failed: %s",
                 strerror(err_no));
    } else if (rc == RG_EPROTO && !c->wfail) {
        /* half a message went out and the rest cannot: the stream is broken */
        c->wfail = RG_EPROTO;
        snprintf(c->wfail_why, sizeof c->wfail_why, "out of memory in the middle of a message");
    }
    pthread_mutex_unlock(&c->wmu);
    if (err_no || rc == RG_EPROTO || need_wake)
        wake(c);
    return err_no ? RG_ECRASHED : rc;
}

/* Flushes the write queue (reader thread, pipe writable). */
static void flush_queue(cdp_conn *c)
{
    int err_no = 0;
    pthread_mutex_lock(&c->wmu);
    size_t queued = c->wq.len - c->wq_off;
    if (queued) {
        ssize_t w = write_some(c->wfd, c->wq.data + c->wq_off, queued);
        if (w < 0)
            err_no = (int)-w;
        else
            c->wq_off += (size_t)w;
        if (c->wq_off == c->wq.len) {
            rg_buf_reset(&c->wq);
            c->wq_off = 0;
            if (c->wq.cap > 1024 * 1024) { /* do not keep a burst's memory */
                rg_buf_destroy(&c->wq);
                rg_buf_init(&c->wq);
            }
        } else if (c->wq_off > c->wq.len / 2) {
            memmove(c->wq.data, c->wq.data + c->wq_off, c->wq.len - c->wq_off);
            c->wq.len -= c->wq_off;
            c->wq_off = 0;
        }
    }
    pthread_mutex_unlock(&c->wmu);
    if (err_no) {
        char why[128];
        snprintf(why, sizeof why, "writing to the browser failed: %s", strerror(err_no));
        cdp_conn_fail(c, RG_ECRASHED, why);
    }
}

static int queue_pending(cdp_conn *c)
{
    pthread_mutex_lock(&c->wmu);
    int q = c->wq.len > c->wq_off;
    pthread_mutex_unlock(&c->wmu);
    return q;
}

/* Frames a call into b: {"id":N,"sessionId":"...","method":"...","params":{...}}\0 */
static int build_call(rg_buf *b, int64_t id, const char *sid, const char *method,
                      const char *params)
{
    rg_buf_printf(b, "{\"id\":%lld", (long long)id);
    if (sid && *sid) {
        rg_buf_puts(b, ",\"sessionId\":");
        rg_buf_json_str(b, sid, strlen(sid));
    }
    rg_buf_puts(b, ",\"method\":");
    rg_buf_json_str(b, method, strlen(method));
    if (params && *params) {
        rg_buf_puts(b, ",\"params\":");
        rg_buf_puts(b, params);
    }
    rg_buf_append(b, "}", 2); /* the closing brace and the frame's NUL */
    return b->failed ? RG_ENOMEM : 0;
}

/* Registers p and sends its message. On error p is not in the table. */
static int start_call(cdp_conn *c, struct pending *p, const char *sid, const char *method,
                      const char *params)
{
    int async = p->async;
    rg_strlcpy(p->sid, sid ? sid : "", sizeof p->sid);
    rg_strlcpy(p->method, method, sizeof p->method);
    pthread_mutex_lock(&c->mu);
    if (c->err) {
        int err = c->err;
        rg_strlcpy(p->why, c->errstr, sizeof p->why);
        pthread_mutex_unlock(&c->mu);
        return err;
    }
    int g = p->sid[0] ? gone_find(c, p->sid) : -1;
    if (g >= 0) {
        rg_strlcpy(p->why, c->gone[g].why, sizeof p->why);
        pthread_mutex_unlock(&c->mu);
        return RG_ECRASHED;
    }
    p->id = ++c->next_id;
    pending_add(c, p);
    pthread_mutex_unlock(&c->mu);

    rg_buf b;
    rg_buf_init(&b);
    int rc = build_call(&b, p->id, sid, method, params);
    if (rc == 0)
        rc = conn_send(c, b.data, b.len);
    rg_buf_destroy(&b);
    if (rc < 0) {
        pthread_mutex_lock(&c->mu);
        struct pending *q = pending_take(c, p->id);
        if (!q && async) {
            /* The reader failed the connection meanwhile and finished p:
               its callback reports the failure and frees p, so p is not
               ours to touch or to report as failed here. */
            pthread_mutex_unlock(&c->mu);
            return 0;
        }
        if (!q) /* the same, for a waiting caller: p is still ours */
            rc = p->rc ? p->rc : rc;
        pthread_mutex_unlock(&c->mu);
        if (rc == RG_EBUSY)
            snprintf(p->why, sizeof p->why, "the write queue to the browser is full");
    }
    return rc;
}

int cdp_call(cdp_conn *c, const char *session_id, const char *method, const char *params,
             int timeout_ms, cdp_reply *reply)
{
    if (reply)
        memset(reply, 0, sizeof *reply);
    if (on_reader_thread(c)) {
        if (reply)
            snprintf(reply->error, sizeof reply->error,
                     "%s: synchronous call from a DevTools callback", method);
        return RG_EINTERNAL;
    }
    if (timeout_ms <= 0)
        timeout_ms = CDP_DEFAULT_TIMEOUT_MS;
    struct pending p;
    memset(&p, 0, sizeof p);
    pthread_cond_init(&p.cond, &c->condattr);
    int rc = start_call(c, &p, session_id, method, params);
    if (rc < 0) {
        if (reply)
            snprintf(reply->error, sizeof reply->error, "%s: %s", method, p.why);
        pthread_cond_destroy(&p.cond);
        return rc;
    }
    struct timespec dl;
    rg_deadline(&dl, timeout_ms);
    pthread_mutex_lock(&c->mu);
    while (!p.done) {
        int w = pthread_cond_timedwait(&p.cond, &c->mu, &dl);
        if (w == ETIMEDOUT && !p.done) {
            pending_take(c, p.id);
            p.done = 1;
            p.rc = RG_ETIMEOUT;
            snprintf(p.why, sizeof p.why, "no reply within %d ms", timeout_ms);
        }
    }
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&p.cond);
    return reply_from(&p, reply);
}

int cdp_call_async(cdp_conn *c, const char *session_id, const char *method, const char *params,
                   int timeout_ms, cdp_reply_fn fn, void *ud)
{
    if (timeout_ms <= 0)
        timeout_ms = CDP_DEFAULT_TIMEOUT_MS;
    struct pending *p = calloc(1, sizeof *p);
    if (!p)
        return RG_ENOMEM;
    p->async = 1;
    p->fn = fn;
    p->ud = ud;
    p->deadline_ms = rg_now_ms() + timeout_ms;
    int rc = start_call(c, p, session_id, method, params);
    if (rc < 0) {
        free(p);
        return rc;
    }
    wake(c); /* the reader may need an earlier poll deadline */
    return 0;
}

/* ---- reading ---- */

/* Finds "id":N in the first bytes of a message; -1 if absent. */
static int64_t head_id(const char *h, size_t n)
{
    for (size_t i = 0; i + 5 <= n; i++) {
        if (memcmp(h + i, "\"id\":", 5) != 0)
            continue;
        int64_t v = 0;
        size_t j = i + 5;
        if (j >= n || h[j] < '0' || h[j] > '9')
            return -1;
        for (; j < n && h[j] >= '0' && h[j] <= '9'; j++) {
            if (v > (INT64_MAX - 9) / 10)
                return -1; /* no id of ours is that long */
            v = v * 10 + (h[j] - '0');
        }
        return v;
    }
    return -1;
}

static int sub_matches(const struct sub *s, const char *sid, const char *method)
{
    if (s->dead)
        return 0;
    if (s->sid && strcmp(s->sid, sid ? sid : "") != 0)
        return 0;
    if (s->method) {
        if (s->prefix)
            return strncmp(method, s->method, s->mlen) == 0;
        return strcmp(method, s->method) == 0;
    }
    return 1;
}

static void compact_subs(cdp_conn *c)
{
    int j = 0;
    for (int i = 0; i < c->n_subs; i++) {
        if (c->subs[i].dead) {
            free(c->subs[i].sid);
            free(c->subs[i].method);
            continue;
        }
        c->subs[j++] = c->subs[i];
    }
    c->n_subs = j;
}

static void dispatch_event(cdp_conn *c, const char *sid, const char *method, const cJSON *params)
{
    /* A target that went away takes its pending calls with it, at once. */
    if (!strcmp(method, "Target.detachedFromTarget")) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(params, "sessionId");
        if (cJSON_IsString(s))
            fail_session(c, s->valuestring, "the page target was detached");
    } else if (!strcmp(method, "Inspector.targetCrashed") && sid) {
        fail_session(c, sid, "the page crashed");
    }

    pthread_mutex_lock(&c->smu);
    c->dispatch_depth++;
    for (int i = 0; i < c->n_subs; i++) {
        struct sub *s = &c->subs[i];
        if (sub_matches(s, sid, method))
            s->fn(s->ud, sid, method, params);
    }
    if (--c->dispatch_depth == 0)
        compact_subs(c);
    pthread_mutex_unlock(&c->smu);
}

static void on_message(void *ud, char *msg, size_t len)
{
    cdp_conn *c = ud;
    cdp_json_sanitize(msg, len);
    cJSON *root = cJSON_ParseWithLength(msg, len);
    if (!root || !cJSON_IsObject(root)) {
        rg_log(RG_LOG_WARN, c->name, "dropped a message that is not a JSON object (%zu bytes)",
               len);
        cJSON_Delete(root);
        return;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
    if (cJSON_IsNumber(id)) {
        struct pending *later = NULL;
        pthread_mutex_lock(&c->mu);
        struct pending *p = pending_take(c, (int64_t)id->valuedouble);
        if (p) {
            pending_finish(p, 0, NULL, root, &later);
            root = NULL;
        }
        pthread_mutex_unlock(&c->mu);
        call_later(later);
        cJSON_Delete(root); /* a reply nobody waits for (timed out) */
        return;
    }
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "method");
    if (cJSON_IsString(method)) {
        const cJSON *sid = cJSON_GetObjectItemCaseSensitive(root, "sessionId");
        dispatch_event(c, cJSON_IsString(sid) ? sid->valuestring : NULL, method->valuestring,
                       cJSON_GetObjectItemCaseSensitive(root, "params"));
    }
    cJSON_Delete(root);
}

static void on_oversize(void *ud, const char *head, size_t head_len, size_t total)
{
    cdp_conn *c = ud;
    int64_t id = head_id(head, head_len);
    char why[160];
    snprintf(why, sizeof why, "the browser sent a message of %zu bytes, over the cap of %zu",
             total, c->cfg.max_message_bytes);
    rg_log(RG_LOG_WARN, c->name, "%s (call id %lld)", why, (long long)id);
    if (id < 0)
        return; /* an event: dropped */
    struct pending *later = NULL;
    pthread_mutex_lock(&c->mu);
    struct pending *p = pending_take(c, id);
    if (p)
        pending_finish(p, RG_EPROTO, why, NULL, &later);
    pthread_mutex_unlock(&c->mu);
    call_later(later);
}

static void expire_async(cdp_conn *c, int64_t now)
{
    struct pending *later = NULL;
    pthread_mutex_lock(&c->mu);
    for (int b = 0; b < CDP_BUCKETS && c->n_async; b++) {
        struct pending **pp = &c->buckets[b];
        while (*pp) {
            struct pending *p = *pp;
            if (p->async && p->deadline_ms <= now) {
                *pp = p->next;
                pending_gone(c, p);
                pending_finish(p, RG_ETIMEOUT, "no reply within the call's timeout", NULL,
                               &later);
            } else {
                pp = &p->next;
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
    call_later(later);
}

/* Milliseconds until the earliest async deadline, or -1 for none. */
static int next_deadline(cdp_conn *c, int64_t now)
{
    int64_t best = -1;
    pthread_mutex_lock(&c->mu);
    if (c->n_async) {
        for (int b = 0; b < CDP_BUCKETS; b++)
            for (struct pending *p = c->buckets[b]; p; p = p->next)
                if (p->async && (best < 0 || p->deadline_ms < best))
                    best = p->deadline_ms;
    }
    pthread_mutex_unlock(&c->mu);
    if (best < 0)
        return -1;
    return best <= now ? 0 : (int)(best - now);
}

/* Reads what the pipe has. Returns 0, or -1 once the pipe is gone. */
static int read_pipe(cdp_conn *c)
{
    for (;;) {
        char *p;
        size_t avail;
        if (cdp_frame_space(&c->frame, CDP_FRAME_READ_BYTES, &p, &avail) < 0) {
            cdp_conn_fail(c, RG_ENOMEM, "out of memory reading from the browser");
            return -1;
        }
        ssize_t n = read(c->rfd, p, avail);
        if (n > 0) {
            cdp_frame_commit(&c->frame, (size_t)n, on_message, on_oversize, c);
            if ((size_t)n < avail)
                return 0; /* drained; poll again */
            continue;
        }
        if (n == 0) {
            cdp_conn_fail(c, RG_ECRASHED, "the browser closed the DevTools pipe");
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        char why[128];
        snprintf(why, sizeof why, "reading from the browser failed: %s", strerror(errno));
        cdp_conn_fail(c, RG_ECRASHED, why);
        return -1;
    }
}

static void *reader_main(void *arg)
{
    cdp_conn *c = arg;
    int pipe_open = 1;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int stopping = c->stopping;
        pthread_mutex_unlock(&c->mu);
        if (stopping)
            break;
        struct pollfd pf[3];
        int n = 0;
        pf[n++] = (struct pollfd){.fd = c->wakefd, .events = POLLIN};
        int ri = -1, wi = -1;
        if (pipe_open) {
            ri = n;
            pf[n++] = (struct pollfd){.fd = c->rfd, .events = POLLIN};
            if (queue_pending(c)) {
                wi = n;
                pf[n++] = (struct pollfd){.fd = c->wfd, .events = POLLOUT};
            }
        }
        int timeout = next_deadline(c, rg_now_ms());
        int r = poll(pf, (nfds_t)n, timeout);
        if (r < 0 && errno != EINTR) {
            cdp_conn_fail(c, RG_EINTERNAL, "poll failed");
            break;
        }
        if (r > 0 && (pf[0].revents & POLLIN)) {
            uint64_t v;
            ssize_t rr = read(c->wakefd, &v, sizeof v);
            (void)rr;
        }
        pthread_mutex_lock(&c->wmu);
        int wfail = c->wfail;
        char why[sizeof c->wfail_why];
        memcpy(why, c->wfail_why, sizeof why);
        pthread_mutex_unlock(&c->wmu);
        if (wfail)
            cdp_conn_fail(c, wfail, why);
        if (r > 0 && wi >= 0 && pf[wi].revents)
            flush_queue(c);
        if (r > 0 && ri >= 0 && pf[ri].revents) {
            if (read_pipe(c) < 0)
                pipe_open = 0;
        }
        if (pipe_open && cdp_conn_err(c, NULL, 0))
            pipe_open = 0; /* failed by a writer or by cdp_conn_fail */
        expire_async(c, rg_now_ms());
    }
    return NULL;
}

/* ---- lifecycle ---- */

static pthread_once_t sigpipe_once = PTHREAD_ONCE_INIT;

/*
 * Writing to a pipe whose reader died raises SIGPIPE, which kills the process
 * by default. A server wants EPIPE instead; keep any handler already set.
 */
static void ignore_sigpipe(void)
{
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
        sa.sa_handler = SIG_IGN;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0;
        sigaction(SIGPIPE, &sa, NULL);
    }
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    return 0;
}

int cdp_conn_new(int rfd, int wfd, const cdp_config *cfg, cdp_conn **out)
{
    pthread_once(&sigpipe_once, ignore_sigpipe);
    *out = NULL;
    cdp_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(rfd);
        close(wfd);
        return RG_ENOMEM;
    }
    if (cfg)
        c->cfg = *cfg;
    else
        cdp_config_default(&c->cfg);
    if (!c->cfg.max_message_bytes)
        c->cfg.max_message_bytes = CDP_MAX_MESSAGE_BYTES;
    if (!c->cfg.max_write_queue_bytes)
        c->cfg.max_write_queue_bytes = CDP_MAX_WRITE_QUEUE_BYTES;
    rg_strlcpy(c->name, c->cfg.name ? c->cfg.name : "cdp", sizeof c->name);
    c->cfg.name = c->name;
    c->rfd = rfd;
    c->wfd = wfd;
    c->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->wakefd < 0 || set_nonblock(rfd) < 0 || set_nonblock(wfd) < 0) {
        if (c->wakefd >= 0)
            close(c->wakefd);
        close(rfd);
        close(wfd);
        free(c);
        return RG_EINTERNAL;
    }
    /* Big pipes: an observe of a large page is megabytes in one message. */
    fcntl(rfd, F_SETPIPE_SZ, CDP_PIPE_BYTES);
    fcntl(wfd, F_SETPIPE_SZ, CDP_PIPE_BYTES);

    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->wmu, NULL);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&c->smu, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_init(&c->condattr);
    pthread_condattr_setclock(&c->condattr, CLOCK_MONOTONIC);
    rg_buf_init(&c->wq);
    cdp_frame_init(&c->frame, c->cfg.max_message_bytes);
    c->next_sub_id = 1;

    if (pthread_create(&c->reader, NULL, reader_main, c) != 0) {
        c->reader_started = 0;
        cdp_conn_free(c);
        return RG_EINTERNAL;
    }
    c->reader_started = 1;
    *out = c;
    return 0;
}

void cdp_conn_free(cdp_conn *c)
{
    if (!c)
        return;
    if (c->reader_started) {
        pthread_mutex_lock(&c->mu);
        c->stopping = 1;
        pthread_mutex_unlock(&c->mu);
        wake(c);
        pthread_join(c->reader, NULL);
        c->reader_started = 0;
    }
    cdp_conn_fail(c, RG_ECRASHED, "the connection was closed");
    close(c->rfd);
    close(c->wfd);
    close(c->wakefd);
    pthread_mutex_lock(&c->smu);
    for (int i = 0; i < c->n_subs; i++) {
        free(c->subs[i].sid);
        free(c->subs[i].method);
    }
    c->n_subs = 0;
    pthread_mutex_unlock(&c->smu);
    rg_buf_destroy(&c->wq);
    cdp_frame_destroy(&c->frame);
    pthread_condattr_destroy(&c->condattr);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->wmu);
    pthread_mutex_destroy(&c->smu);
    free(c);
}

/* ---- subscriptions ---- */

int cdp_subscribe(cdp_conn *c, const char *session_id, const char *method, cdp_event_fn fn,
                  void *ud)
{
    if (!fn)
        return RG_EINTERNAL;
    pthread_mutex_lock(&c->smu);
    if (c->n_subs >= CDP_MAX_SUBSCRIBERS && c->dispatch_depth == 0)
        compact_subs(c);
    if (c->n_subs >= CDP_MAX_SUBSCRIBERS) {
        pthread_mutex_unlock(&c->smu);
        return RG_EBUSY;
    }
    struct sub *s = &c->subs[c->n_subs];
    memset(s, 0, sizeof *s);
    s->sid = session_id ? strdup(session_id) : NULL;
    s->method = method ? strdup(method) : NULL;
    if ((session_id && !s->sid) || (method && !s->method)) {
        free(s->sid);
        free(s->method);
        pthread_mutex_unlock(&c->smu);
        return RG_ENOMEM;
    }
    if (s->method) {
        s->mlen = strlen(s->method);
        s->prefix = s->mlen && s->method[s->mlen - 1] == '.';
    }
    s->fn = fn;
    s->ud = ud;
    s->id = c->next_sub_id++;
    if (c->next_sub_id <= 0)
        c->next_sub_id = 1;
    c->n_subs++;
    int id = s->id;
    pthread_mutex_unlock(&c->smu);
    return id;
}

void cdp_unsubscribe(cdp_conn *c, int sub_id)
{
    pthread_mutex_lock(&c->smu);
    for (int i = 0; i < c->n_subs; i++) {
        if (c->subs[i].id == sub_id)
            c->subs[i].dead = 1;
    }
    if (c->dispatch_depth == 0)
        compact_subs(c);
    pthread_mutex_unlock(&c->smu);
}
