/*
 * load_drive.c - the soak tool's drivers (load.h): one thread per session,
 * each with its own kept-alive connection and its own counters, running the
 * loop a real client runs (create, observe, click a ref from that
 * observation, fill a field, read it back, navigate, observe with a diff,
 * park, restore; now and then close the session and create a new one) in
 * msgpack through nginx. A driver touches nothing shared but `g`.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "wire/wire.h"
#include "load.h"
#include "tests/support/net.h"

/* How long a transient error makes a driver wait when it names no time. */
#define RETRY_DEFAULT_MS 200
#define RETRY_MAX_MS 2000

const char *const op_names[OP_N] = {
    "session.create", "observe",       "click",
    "fill",           "read",          "navigate",
    "observe diff",   "session.park",  "session.restore",
    "read+restore",   "session.close", "session.info",
};

/*
 * The fixture pages a session walks through, in this order, and what it
 * clicks and fills on each: an element of the observation with this role and
 * accessible name. No fill: the page has no field, and the read is of the
 * page's text.
 */
struct page {
    const char *path;
    const char *click_role, *click_name;
    const char *fill_role, *fill_name;
};

static const struct page pages[] = {
    {"/form.html", "checkbox", "I agree", "textbox", "Email address"},
    {"/actions.html", "button", "Count", "textbox", "Query"},
    {"/list.html", "option", "Bravo", NULL, NULL},
    {"/many.html#300", "button", "Button 7", NULL, NULL},
};
#define PAGES ((int)(sizeof pages / sizeof pages[0]))

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "load: out of memory\n");
        abort();
    }
    return q;
}

void lat_add(struct lat *l, double ms)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = ms;
}

void errs_add(struct errs *e, const char *code, int transient, long count)
{
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->row[i].code, code) && e->row[i].transient == transient) {
            e->row[i].count += count;
            return;
        }
    /* The last row takes whatever does not fit (and fails the run). */
    enum { LAST = sizeof e->row / sizeof e->row[0] - 1 };
    struct err_row *r = &e->row[e->n < LAST ? e->n : LAST];
    if (e->n <= LAST) {
        snprintf(r->code, sizeof r->code, "%s", e->n < LAST ? code : "(other codes)");
        r->transient = e->n < LAST ? transient : 0;
        e->n++;
    }
    r->count += count;
}

static unsigned next_rand(struct driver *d)
{
    d->rng = d->rng * 1103515245u + 12345u;
    return (d->rng >> 16) & 0x7fff;
}

/* ---- one command ---------------------------------------------------------- */

/* Something to read on an idle kept-alive connection: the server closed it. */
static int peer_closed(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    return poll(&p, 1, 0) != 0;
}

static int conn(struct driver *d)
{
    if (d->fd >= 0 && peer_closed(d->fd)) {
        close(d->fd);
        d->fd = -1;
    }
    if (d->fd < 0)
        d->fd = http_connect(g.port);
    return d->fd;
}

static cJSON *decode_reply(const http_resp *r)
{
    cJSON *v = NULL;
    char err[128];
    if (!r->body.len)
        return NULL;
    if (!strncasecmp(r->content_type, "application/json", 16))
        wire_json_decode(r->body.data, r->body.len, &v, err, sizeof err);
    else
        wire_mp_decode(r->body.data, r->body.len, &v, err, sizeof err);
    return v;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *get_str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void sleep_for_retry(int retry_ms)
{
    if (retry_ms <= 0)
        retry_ms = RETRY_DEFAULT_MS;
    rg_sleep_ms(retry_ms < RETRY_MAX_MS ? retry_ms : RETRY_MAX_MS);
}

/* A check of ours failed on a reply that was ok: counted like an error. */
static void check_failed(struct driver *d, int op, const char *what)
{
    char code[48];
    snprintf(code, sizeof code, "check:%s", what);
    d->failed[op]++;
    errs_add(&d->errs, code, 0, 1);
}

/*
 * Sends one command: POST of cmd (msgpack; borrowed) to path, or DELETE of
 * path when cmd is NULL. Counts it under op with its latency and, when it
 * failed, its error code. Returns 0 when the reply says ok, with *reply the
 * reply map when reply is not NULL (the caller frees it); otherwise -1,
 * after waiting as long as a transient error asked, and with the session
 * forgotten when the reply was not_found. *details_session receives the
 * session a failed session.create made anyway (when not NULL).
 */
static int send_cmd(struct driver *d, int op, const char *path, const cJSON *cmd, cJSON **reply,
                    char *details_session)
{
    rg_buf body;
    rg_buf_init(&body);
    if (cmd && wire_mp_encode(cmd, &body) < 0) {
        fprintf(stderr, "load: cannot encode a command\n");
        abort();
    }
    if (reply)
        *reply = NULL;
    /* An agent thinks between commands (--think-ms): half to one and a half times it. */
    if (g.think_ms > 0)
        rg_sleep_ms(g.think_ms / 2 + (int)(next_rand(d) % (unsigned)(g.think_ms + 1)));
    d->commands[op]++;
    int fd = conn(d);
    http_resp r;
    memset(&r, 0, sizeof r);
    rg_buf_init(&r.body);
    int64_t t0 = rg_now_us();
    int rc = -1;
    if (fd >= 0)
        rc = http_request_on(fd, cmd ? "POST" : "DELETE", path, cmd ? g.post : g.auth, body.data,
                             body.len, &r);
    double ms = (double)(rg_now_us() - t0) / 1000.0;
    rg_buf_destroy(&body);
    if (rc < 0) {
        /* No reply at all: the connection broke or 30 s went by. */
        d->failed[op]++;
        errs_add(&d->errs, fd < 0 ? "transport:connect" : "transport", 0, 1);
        if (d->fd >= 0)
            close(d->fd);
        d->fd = -1;
        rg_buf_destroy(&r.body);
        rg_sleep_ms(RETRY_DEFAULT_MS);
        return -1;
    }
    if (r.closed) { /* nginx's keepalive_requests ran out: the next command dials again */
        close(d->fd);
        d->fd = -1;
    }
    lat_add(&d->lat[op], ms);
    cJSON *v = decode_reply(&r);
    const cJSON *ok = get(v, "ok");
    if (r.status == 200 && cJSON_IsTrue(ok)) {
        rg_buf_destroy(&r.body);
        if (reply)
            *reply = v;
        else
            cJSON_Delete(v);
        return 0;
    }
    const cJSON *e = get(v, "error");
    const char *code = get_str(e, "code");
    const char *kind = get_str(e, "kind");
    const cJSON *ra = get(e, "retry_after_ms");
    char fallback[48];
    if (!code) {
        snprintf(fallback, sizeof fallback, "http_%d_without_error_map", r.status);
        code = fallback;
    }
    int transient = kind && !strcmp(kind, "transient");
    d->failed[op]++;
    errs_add(&d->errs, code, transient, 1);
    if (details_session) {
        const char *s = get_str(get(e, "details"), "session");
        snprintf(details_session, 64, "%s", s ? s : "");
    }
    if (!strcmp(code, "not_found") && d->sid[0] && strstr(path, d->sid))
        d->sid[0] = '\0'; /* gone: the next loop creates another */
    int retry_ms = cJSON_IsNumber(ra) ? (int)ra->valuedouble : 0;
    if (r.retry_after > 0 && retry_ms <= 0)
        retry_ms = r.retry_after * 1000;
    cJSON_Delete(v);
    rg_buf_destroy(&r.body);
    /* Transient: as long as the server asked. Permanent: a pause all the
       same, so that a stack refusing everything is not hammered. */
    sleep_for_retry(transient ? retry_ms : 0);
    return -1;
}

/* {"op": name, "args": args}; takes args (may be NULL). */
static cJSON *command(const char *name, cJSON *args)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "op", name);
    if (args)
        cJSON_AddItemToObject(c, "args", args);
    return c;
}

/* One op on the driver's session; takes args. As send_cmd. */
static int session_op(struct driver *d, int op, const char *name, cJSON *args, cJSON **reply)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/sessions/%s", d->sid);
    cJSON *c = command(name, args);
    int rc = send_cmd(d, op, path, c, reply, NULL);
    cJSON_Delete(c);
    return rc;
}

int close_session(struct driver *d, const char *sid)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    return send_cmd(d, OP_CLOSE, path, NULL, NULL, NULL);
}

static const char *page_url(int page, char *buf, size_t len)
{
    return httpd_url(g.pages, pages[page].path, buf, len);
}

static int create(struct driver *d);

/* The worker that holds the live session now (session.info), into out. */
static int session_worker(struct driver *d, char *out, size_t len)
{
    cJSON *reply = NULL;
    out[0] = '\0';
    if (session_op(d, OP_INFO, "session.info", NULL, &reply) < 0)
        return -1;
    const char *w = get_str(get(reply, "result"), "worker");
    snprintf(out, len, "%s", w ? w : "");
    cJSON_Delete(reply);
    return out[0] ? 0 : -1;
}

/*
 * A new session in place of one that was closed, on the worker that one
 * lived on. nginx sends a session's commands to the worker its id hashes
 * to, so a new id lands on either worker by chance; left to chance, the
 * sessions per worker drift over a run, and with them each worker's RSS,
 * which the RSS criterion would then read as growth. So: create, let one
 * read bring the session to its worker, ask where it is, and if that is the
 * wrong worker close it and try again (PLACE_TRIES times, then keep it).
 */
#define PLACE_TRIES 20
static int create_placed(struct driver *d)
{
    if (!d->worker[0])
        return create(d);
    char at[32] = "";
    for (int i = 0; i < PLACE_TRIES; i++) {
        if (create(d) < 0)
            return -1;
        cJSON *reply = NULL;
        if (session_op(d, OP_RESTORE_IMPLICIT, "read", NULL, &reply) < 0)
            return -1;
        cJSON_Delete(reply);
        if (session_worker(d, at, sizeof at) < 0)
            return -1;
        if (!strcmp(at, d->worker))
            break;
        if (i + 1 == PLACE_TRIES) {
            d->misplaced++;
            break;
        }
        if (close_session(d, d->sid) < 0)
            return -1;
        d->sid[0] = '\0';
    }
    d->worker[0] = '\0';
    return 0;
}

static int create(struct driver *d)
{
    char url[256], made[64] = "";
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "url", page_url(d->page, url, sizeof url));
    cJSON *c = command("session.create", args), *reply;
    int rc = send_cmd(d, OP_CREATE, "/v1/sessions", c, &reply, made);
    cJSON_Delete(c);
    if (rc < 0) {
        /* The session exists though its navigation failed: do not leak it. */
        if (made[0])
            close_session(d, made);
        return -1;
    }
    const char *sid = get_str(get(reply, "result"), "session");
    snprintf(d->sid, sizeof d->sid, "%s", sid ? sid : "");
    cJSON_Delete(reply);
    if (!d->sid[0]) {
        check_failed(d, OP_CREATE, "create_without_session");
        return -1;
    }
    return 0;
}

/* The ref of the first element of an observation with this role and name, into ref. */
static int find_ref(const cJSON *reply, const char *role, const char *name, char *ref, size_t len)
{
    const cJSON *el;
    cJSON_ArrayForEach(el, get(get(reply, "result"), "elements"))
    {
        const char *r = get_str(el, "role"), *n = get_str(el, "name"), *f = get_str(el, "ref");
        if (r && n && f && !strcmp(r, role) && !strcmp(n, name)) {
            snprintf(ref, len, "%s", f);
            return 0;
        }
    }
    return -1;
}

/*
 * One pass of the loop. Any failed step ends the pass early: the next pass
 * starts with a fresh observation (and a new session when it was lost).
 */
static int pass(struct driver *d, int measured);

static void one_loop(struct driver *d, int measured)
{
    d->lost = pass(d, measured) < 0;
}

static int pass(struct driver *d, int measured)
{
    const struct page *pg = &pages[d->page];
    int next = (d->page + 1) % PAGES;
    cJSON *reply = NULL, *args;
    char click[64] = "", fill[64] = "", value[96], url[256];

    if (!d->sid[0]) {
        if (create_placed(d) < 0)
            return -1;
    } else if (d->lost) {
        /* After a failed step the session may be anywhere: back to the page. */
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "url", page_url(d->page, url, sizeof url));
        if (session_op(d, OP_NAVIGATE, "navigate", args, NULL) < 0)
            return -1;
    }

    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "format", "elements");
    if (session_op(d, OP_OBSERVE, "observe", args, &reply) < 0)
        return -1;
    int have_click = find_ref(reply, pg->click_role, pg->click_name, click, sizeof click) == 0;
    int have_fill =
        !pg->fill_role || find_ref(reply, pg->fill_role, pg->fill_name, fill, sizeof fill) == 0;
    cJSON_Delete(reply);
    if (!have_click || !have_fill) {
        check_failed(d, OP_OBSERVE, "observe_missed_an_element");
        return -1;
    }

    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "target", click);
    if (session_op(d, OP_CLICK, "click", args, NULL) < 0)
        return -1;

    snprintf(value, sizeof value, "u%d.%ld@example.com", d->index, d->loops);
    if (fill[0]) {
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "target", fill);
        cJSON_AddStringToObject(args, "value", value);
        if (session_op(d, OP_FILL, "fill", args, NULL) < 0)
            return -1;
    }

    /* Read back what was filled, or the page's text. */
    args = cJSON_CreateObject();
    if (fill[0]) {
        cJSON_AddStringToObject(args, "target", fill);
        cJSON_AddStringToObject(args, "what", "value");
    }
    if (session_op(d, OP_READ, "read", args, &reply) < 0)
        return -1;
    const char *got = get_str(get(reply, "result"), "value");
    if (!got || (fill[0] ? strcmp(got, value) != 0 : !got[0]))
        check_failed(d, OP_READ, fill[0] ? "read_is_not_the_filled_value" : "read_empty_text");
    cJSON_Delete(reply);

    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "url", page_url(next, url, sizeof url));
    if (session_op(d, OP_NAVIGATE, "navigate", args, &reply) < 0)
        return -1;
    const cJSON *status = get(get(reply, "result"), "status");
    if (!cJSON_IsNumber(status) || status->valuedouble != 200)
        check_failed(d, OP_NAVIGATE, "navigate_status_not_200");
    cJSON_Delete(reply);
    d->page = next;

    args = cJSON_CreateObject();
    cJSON_AddBoolToObject(args, "diff", 1);
    if (session_op(d, OP_OBSERVE_DIFF, "observe", args, &reply) < 0)
        return -1;
    if (!cJSON_IsString(get(get(reply, "result"), "text")))
        check_failed(d, OP_OBSERVE_DIFF, "observe_diff_without_text");
    cJSON_Delete(reply);

    if (session_op(d, OP_PARK, "session.park", NULL, &reply) < 0)
        return -1;
    const char *state = get_str(get(reply, "result"), "state");
    if (!state || strcmp(state, "parked") != 0)
        check_failed(d, OP_PARK, "park_state_not_parked");
    cJSON_Delete(reply);

    /* Restore: explicitly every other pass, else by the next command. */
    if (d->loops % 2 == 0) {
        if (session_op(d, OP_RESTORE, "session.restore", NULL, &reply) < 0)
            return -1;
        state = get_str(get(reply, "result"), "state");
        if (!state || strcmp(state, "live") != 0)
            check_failed(d, OP_RESTORE, "restore_state_not_live");
        cJSON_Delete(reply);
    } else {
        if (session_op(d, OP_RESTORE_IMPLICIT, "read", NULL, &reply) < 0)
            return -1;
        got = get_str(get(reply, "result"), "value");
        if (!got || !got[0])
            check_failed(d, OP_RESTORE_IMPLICIT, "read_after_park_empty");
        cJSON_Delete(reply);
    }
    d->loops++;

    if (measured && g.close_one_in > 0 && next_rand(d) % (unsigned)g.close_one_in == 0) {
        if (session_worker(d, d->worker, sizeof d->worker) < 0)
            return -1;
        if (close_session(d, d->sid) < 0)
            return -1;
        d->sid[0] = '\0';
    }
    return 0;
}

void *drive(void *arg)
{
    struct driver *d = arg;
    for (int i = 0; i < g.warmup_loops; i++)
        one_loop(d, 0);
    atomic_fetch_add(&g.warm_done, 1);
    /* Then the whole mix, closes included, until the workers' RSS settles. */
    while (atomic_load(&g.warming))
        one_loop(d, 1);
    /* A warm-up loop may have closed the session: every one is live at the
       first sample, on the worker it was on. */
    for (int i = 0; i < 3 && !d->sid[0]; i++)
        create_placed(d);
    for (int o = 0; o < OP_N; o++)
        d->warmup_commands += d->commands[o];
    pthread_barrier_wait(&g.warm); /* the main thread takes the first sample */
    pthread_barrier_wait(&g.go);
    while (rg_now_ms() < atomic_load(&g.stop_ms)) {
        pthread_mutex_lock(&g.mu);
        if (g.pause) {
            g.paused++;
            pthread_cond_broadcast(&g.cv);
            while (g.pause)
                pthread_cond_wait(&g.cv, &g.mu);
            g.paused--;
        }
        pthread_mutex_unlock(&g.mu);
        one_loop(d, 1);
    }
    /* Every session ends live, as they all were at the first sample. */
    for (int i = 0; i < 3 && !d->sid[0]; i++)
        create_placed(d);
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
    pthread_mutex_lock(&g.mu); /* gone: a quiet point waits for it no more */
    g.paused++;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

void driver_init(struct driver *d, int i)
{
    d->index = i;
    d->fd = -1;
    d->page = i % PAGES;
    d->rng = 2654435761u * (unsigned)(i + 1) ^ (unsigned)getpid();
}
