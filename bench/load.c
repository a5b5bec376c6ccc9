/*
 * load.c - a load generator and soak test for the whole of refgate: many
 * sessions at once through nginx, each running the loop a real client runs
 * (create, observe, click a ref from that observation, fill a field, read it
 * back, navigate, observe with a diff, park, restore; now and then close the
 * session and create a new one), in msgpack on kept-alive connections. While
 * it runs it samples every worker's RSS and open descriptors and the Chromium
 * processes below the workers. At the end it prints a table, one JSON line,
 * and PASS, or FAIL with the reasons and exit status 1. The criteria and
 * their reasons are in docs/soak.md.
 *
 *   load [--sessions N] [--duration S] [--workers N] [--interval S]
 *        [--warmup-loops N] [--settle S] [--warmup-max S] [--close-one-in N]
 *        [--quiet-every S] [--quiet-wait S] [--trace FILE]
 *        [--port P [--key K] [--run-dir DIR]]
 *
 * Without --port it starts a stack of its own (tests/support/stack.c: Redis,
 * --workers refgate-server workers, nginx, all on free loopback ports) and
 * stops it at the end, which lets it check that no Chromium process outlives
 * the workers. With --port it drives a stack that is running already (`make
 * run`): the workers' PIDs come from DIR/worker-w*.pid (DIR: --run-dir, or
 * .run) and the API key from --key, $REFGATE_KEY or DIR/dev-key.
 *
 * The fixture pages (tests/fixtures) are served by tests/support/httpd.c on
 * 127.0.0.1; run it from the repository root.
 *
 * Threads: one driver thread per session, each with its own connection and
 * its own counters, merged after they are joined; the main thread samples
 * /proc. The drivers share only the stop time, two barriers and the pause
 * of a quiet point (g.mu, g.cv).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "wire/wire.h"
#include "tests/support/net.h"
#include "tests/support/support.h"

#define WORKERS_MAX 8
#define SESSIONS_MAX 256
#define DESCENDANTS_MAX 4096
#define SEEN_MAX 65536
/* How long a transient error makes a driver wait when it names no time. */
#define RETRY_DEFAULT_MS 200
#define RETRY_MAX_MS 2000
/* A quiet point waits at most this long for the drivers to finish their loop. */
#define QUIET_DRAIN_MS 120000
/* Pass criteria (docs/soak.md). */
#define RSS_GROWTH_MAX_PCT 5.0
/* At quiet points a worker's RSS moves by 1.1 to 1.4 MiB within a run
   (heap pages that hold a live chunk or two between trims, the sessions
   live on it) while its bytes in use stay flat; the quarter medians moved
   -128 to +536 KiB in soaks with flat bytes in use, and by +1.1 to +3.4 MiB
   in the soaks with the threads' malloc caches filling (docs/soak.md). With
   --quiet-every 0 the samples hold commands in flight, and move by MiB. */
#define RSS_SLACK_KIB 1024L
#define RSS_SLACK_BUSY_KIB (2L * 1024)
#define FD_SLACK 4
/* Idle Redis connections a worker keeps (IDLE_MAX in common/redis.c). */
#define REDIS_POOL_IDLE_MAX 32
#define TRANSIENT_SHARE_MAX 0.25
/* How long processes may take to go after the end of the load or the stack. */
#define SETTLE_MS 10000

/* ---- what the drivers do ------------------------------------------------ */

enum op {
    OP_CREATE,
    OP_OBSERVE,
    OP_CLICK,
    OP_FILL,
    OP_READ,
    OP_NAVIGATE,
    OP_OBSERVE_DIFF,
    OP_PARK,
    OP_RESTORE,
    OP_RESTORE_IMPLICIT,
    OP_CLOSE,
    OP_INFO,
    OP_N
};

static const char *const op_names[OP_N] = {
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

/* Latencies of one op in ms, growable. */
struct lat {
    double *v;
    size_t n, cap;
};

/* Errors by code; transient is the reply's kind ("transient"). */
struct err_row {
    char code[48];
    int transient;
    long count;
};

struct errs {
    int n;
    struct err_row row[48];
};

struct driver {
    int index;
    pthread_t thread;
    int fd;
    char sid[64];
    char worker[32]; /* where the session closed last lived: its successor goes there */
    long misplaced;  /* successors that did not land there within PLACE_TRIES */
    int page;
    int lost; /* a pass ended early: the page may not be pages[page] */
    unsigned rng;
    long loops;
    long warmup_commands; /* commands sent before the measured load */
    long commands[OP_N];
    long failed[OP_N];
    struct lat lat[OP_N];
    struct errs errs;
};

static struct {
    int port;
    char auth[192]; /* the Authorization header line */
    char post[256]; /* it and Content-Type: application/msgpack */
    httpd *pages;
    int warmup_loops;
    int settle_s;         /* the warm-up ends when no worker's RSS rose for this long */
    int warmup_max_s;     /* ... or after this long, settled or not */
    atomic_int warming;   /* 1 while the drivers are to keep warming up */
    atomic_int warm_done; /* drivers that ran their fixed warm-up loops */
    int close_one_in;     /* a loop closes its session with this odds */
    atomic_llong stop_ms; /* drivers end at the first loop boundary after it */
    pthread_barrier_t warm, go;
    /* Quiet points: the main thread sets pause; each driver, at its next loop
       boundary, counts itself in paused and waits until pause is 0 again. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pause, paused;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "load: out of memory\n");
        abort();
    }
    return q;
}

static void lat_add(struct lat *l, double ms)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = ms;
}

static void errs_add(struct errs *e, const char *code, int transient, long count)
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

/* Tolerated: the reply calls it transient, and it is not `internal`, which
   the protocol calls transient but defines as a bug. */
static int tolerated(const struct err_row *r)
{
    return r->transient && strcmp(r->code, "internal") != 0;
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

static int close_session(struct driver *d, const char *sid)
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

static void *drive(void *arg)
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

/* ---- /proc ----------------------------------------------------------------- */

struct pstat {
    char state;
    char comm[32];
    unsigned long long start; /* clock ticks after boot: with the PID, one process */
};

static int read_pstat(pid_t pid, struct pstat *p)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp || rp < lp)
        return -1;
    snprintf(p->comm, sizeof p->comm, "%.*s", (int)(rp - lp - 1), lp + 1);
    if (sscanf(rp + 2,
               "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &p->state, &p->start) != 2)
        return -1;
    return 0;
}

/*
 * A process's resident memory, in KiB, by part. From /proc/PID/status: all
 * of it, its anonymous pages and its file pages (the binary and the
 * libraries, paged in as code paths first run). From /proc/PID/smaps, the
 * anonymous pages by the mapping that holds them: glibc's main heap
 * ([heap]), the arenas other threads allocate from (mappings that start on
 * a 64 MiB boundary, glibc's HEAP_MAX_SIZE), the thread stacks (read-write
 * right above a guard page of at most 64 KiB, and the main [stack]), and the
 * rest (mmapped blocks, the private pages of the libraries' data). -1 where
 * the process is gone. MEM_IN_USE and MEM_FREE are not RSS: the allocator's
 * bytes handed out and kept free, asked of the worker at quiet points only
 * (worker_heap).
 */
enum mem_part {
    MEM_ALL,
    MEM_ANON,
    MEM_FILE,
    MEM_HEAP,
    MEM_ARENAS,
    MEM_STACKS,
    MEM_OTHER,
    MEM_IN_USE,
    MEM_FREE,
    MEM_N
};
static const char *const mem_names[MEM_N] = {"rss",    "anon",  "file",   "heap", "arenas",
                                             "stacks", "other", "in_use", "free"};

#define ARENA_ALIGN (64ul << 20)
#define GUARD_MAX (64ul << 10)

static void smaps_read(pid_t pid, long *m)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    for (int k = MEM_HEAP; k <= MEM_OTHER; k++)
        m[k] = 0;
    unsigned long prev_end = 0, prev_len = 0;
    int prev_none = 0, kind = MEM_OTHER;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, inode;
        char perms[8], name[256] = "";
        long kib;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %255s", &lo, &hi, perms, &inode, name) >= 4) {
            int rw = perms[0] == 'r' && perms[1] == 'w';
            if (!strcmp(name, "[heap]"))
                kind = MEM_HEAP;
            else if (!strcmp(name, "[stack]"))
                kind = MEM_STACKS;
            else if (inode || name[0])
                kind = MEM_OTHER;
            else if (rw && lo % ARENA_ALIGN == 0)
                kind = MEM_ARENAS;
            else if (rw && prev_none && prev_end == lo && prev_len <= GUARD_MAX)
                kind = MEM_STACKS;
            else
                kind = MEM_OTHER;
            prev_none = !strncmp(perms, "---", 3) && !inode && !name[0];
            prev_end = hi, prev_len = hi - lo;
        } else if (sscanf(line, "Anonymous: %ld kB", &kib) == 1) {
            m[kind] += kib;
        }
    }
    fclose(f);
}

/* The three parts /proc/PID/status has (all, anon, file); the rest -1. */
static void status_read(pid_t pid, long *m)
{
    char path[64], line[256];
    for (int k = 0; k < MEM_N; k++)
        m[k] = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld kB", &m[MEM_ALL]);
        sscanf(line, "RssAnon: %ld kB", &m[MEM_ANON]);
        if (sscanf(line, "RssFile: %ld kB", &m[MEM_FILE]) == 1)
            break;
    }
    fclose(f);
}

static void mem_read(pid_t pid, long *m)
{
    status_read(pid, m);
    if (m[MEM_ALL] >= 0)
        smaps_read(pid, m);
}

/* RSS alone, for the warm-up's settling: no smaps walk. */
static long vm_rss_kib(pid_t pid)
{
    long m[MEM_N];
    status_read(pid, m);
    return m[MEM_ALL];
}

/* The TCP sockets of this network namespace: inode, local and remote port, state. */
struct tcp_sock {
    unsigned long inode;
    int lport, rport, state;
};

static struct tcp_sock *tcp_socks;
static size_t n_tcp, cap_tcp;

#define TCP_LISTEN 0x0A
#define TCP_CLOSE_WAIT 0x08

static void tcp_load(void)
{
    n_tcp = 0;
    const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "re");
        if (!f)
            continue;
        char line[512];
        while (fgets(line, sizeof line, f)) {
            /* sl local:port remote:port st queues timer retrnsmt uid timeout inode */
            char local[64];
            unsigned lport, rport, st;
            unsigned long inode;
            if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%x %x %*s %*s %*s %*s %*s %lu",
                       local, &lport, &rport, &st, &inode) != 5)
                continue;
            if (n_tcp == cap_tcp) {
                cap_tcp = cap_tcp ? cap_tcp * 2 : 256;
                tcp_socks = xrealloc(tcp_socks, cap_tcp * sizeof *tcp_socks);
            }
            tcp_socks[n_tcp++] = (struct tcp_sock){inode, (int)lport, (int)rport, (int)st};
        }
        fclose(f);
    }
}

static const struct tcp_sock *tcp_find(unsigned long inode)
{
    for (size_t i = 0; i < n_tcp; i++)
        if (tcp_socks[i].inode == inode)
            return &tcp_socks[i];
    return NULL;
}

/*
 * A worker's descriptors. `nginx`: connections accepted on its FastCGI or
 * WebSocket port, which nginx opens and keeps alive (upstream keepalive, up
 * to 8 idle per nginx process for 30 s): how many there are is nginx's
 * choice, so the fd criterion leaves them out. `redis`: connections to
 * Redis, a pool that grows to the most commands that ever ran at once and
 * keeps up to REDIS_POOL_IDLE_MAX idle: judged against that cap instead.
 * `close_wait`: TCP sockets whose peer has closed and the worker has not.
 */
enum { FD_SOCKET, FD_PIPE, FD_ANON, FD_DEV, FD_FILE, FD_OTHER, FD_KINDS };

struct fdscan {
    int total, nginx, redis, close_wait;
    int kind[FD_KINDS];
};

/* The port after the last ':' of the authority of a redis:// URL, or -1. */
static int url_port(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    const char *at = strchr(host, '@');
    if (at)
        host = at + 1;
    size_t n = strcspn(host, "/");
    const char *colon = memrchr(host, ':', n);
    return colon ? atoi(colon + 1) : 6379;
}

/*
 * From pid's environment: the ports of REFGATE_FCGI_LISTEN and
 * REFGATE_WS_LISTEN, and of REFGATE_REDIS_URL (or REFGATE_REDIS_PORT, or
 * RG_REDIS_DEFAULT_PORT as the worker itself would pick).
 */
static void worker_ports(pid_t pid, int ports[3])
{
    char path[64], env[65536];
    ports[0] = ports[1] = -1;
    ports[2] = RG_REDIS_DEFAULT_PORT;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    size_t n = fread(env, 1, sizeof env - 1, f);
    fclose(f);
    env[n] = '\0';
    for (size_t off = 0; off < n; off += strlen(env + off) + 1) {
        const char *v = env + off;
        int k = !strncmp(v, "REFGATE_FCGI_LISTEN=", 20) ? 0
                : !strncmp(v, "REFGATE_WS_LISTEN=", 18) ? 1
                                                        : -1;
        const char *colon = k >= 0 ? strrchr(v, ':') : NULL;
        if (colon)
            ports[k] = atoi(colon + 1);
        if (!strncmp(v, "REFGATE_REDIS_PORT=", 19))
            ports[2] = atoi(v + 19);
    }
    /* The URL wins over the port, as in rg_redis_config_from_env. */
    for (size_t off = 0; off < n; off += strlen(env + off) + 1)
        if (!strncmp(env + off, "REFGATE_REDIS_URL=", 18) && env[off + 18])
            ports[2] = url_port(env + off + 18);
}

/* Scans pid's descriptors (after tcp_load); total -1 when pid is gone. */
static void fd_scan(pid_t pid, const int ports[3], struct fdscan *out)
{
    static const char *const prefix[] = {"socket:[", "pipe:", "anon_inode:", "/dev/", "/"};
    char path[64], link[320], target[PATH_MAX];
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d) {
        out->total = -1;
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        out->total++;
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) {
            out->kind[FD_OTHER]++;
            continue;
        }
        target[n] = '\0';
        int k = 0;
        while (k < FD_OTHER && strncmp(target, prefix[k], strlen(prefix[k])) != 0)
            k++;
        out->kind[k]++;
        if (k != FD_SOCKET)
            continue;
        const struct tcp_sock *t = tcp_find(strtoul(target + 8, NULL, 10));
        if (!t)
            continue;
        if (t->state == TCP_CLOSE_WAIT)
            out->close_wait++;
        else if (t->state != TCP_LISTEN && (t->lport == ports[0] || t->lport == ports[1]))
            out->nginx++;
        else if (t->state != TCP_LISTEN && t->rport == ports[2])
            out->redis++;
    }
    closedir(d);
}

/* "socket 9 (nginx 3, redis 4, close_wait 0), pipe 6, ..." into out. */
static void fd_describe(const struct fdscan *f, char *out, size_t len)
{
    static const char *const names[] = {"socket", "pipe", "anon", "dev", "file", "other"};
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < FD_KINDS && used < len; k++) {
        if (!f->kind[k])
            continue;
        used += (size_t)snprintf(out + used, len - used, "%s%s %d", used ? ", " : "", names[k],
                                 f->kind[k]);
        if (k == FD_SOCKET && used < len)
            used += (size_t)snprintf(out + used, len - used, " (nginx %d, redis %d, close_wait %d)",
                                     f->nginx, f->redis, f->close_wait);
    }
}

static int is_chromium(const struct pstat *p)
{
    return !strncmp(p->comm, "chrom", 5); /* chromium, chrome_crashpad */
}

/* Every Chromium process ever seen below a worker: checked for leftovers. */
static struct seen {
    pid_t pid;
    unsigned long long start;
} seen[SEEN_MAX];
static int n_seen;

static void seen_add(pid_t pid, unsigned long long start)
{
    for (int i = n_seen - 1; i >= 0; i--)
        if (seen[i].pid == pid && seen[i].start == start)
            return;
    if (n_seen < SEEN_MAX)
        seen[n_seen++] = (struct seen){pid, start};
}

struct sample {
    int64_t t_ms;
    long mem[WORKERS_MAX + 1][MEM_N]; /* RSS and its parts, KiB (mem_read) */
    int live[WORKERS_MAX + 1]; /* live sessions each worker owns, from Redis; -1: unknown */
    struct fdscan fd[WORKERS_MAX + 1];
    int chromium, zombies;
    int quiet; /* taken with no command in flight, after the workers' heap trim */
};

/* The descriptors the fd criterion counts: all but nginx's and Redis's connections. */
static int fds_own(const struct sample *s, int w)
{
    return s->fd[w].total < 0 ? -1 : s->fd[w].total - s->fd[w].nginx - s->fd[w].redis;
}

static struct {
    int n;
    pid_t pid[WORKERS_MAX + 1];
    char name[WORKERS_MAX + 1][16];
    int ports[WORKERS_MAX + 1][3]; /* FastCGI, WebSocket, Redis */
} workers;

/* Below the workers now: pids (unsorted) into out, up to max. */
static int below_workers(pid_t *out, int max)
{
    int n = 0;
    for (int i = 1; i <= workers.n && n < max; i++)
        if (workers.pid[i] > 0)
            n += procs_descendants(workers.pid[i], out + n, max - n);
    return n;
}

static rg_redis *sample_redis; /* the stack's Redis, for live_sessions */

/* Live sessions per worker: the owner and state of every rg:*:meta. */
static void live_sessions(int *live)
{
    for (int i = 1; i <= workers.n; i++)
        live[i] = -1;
    redisContext *c = sample_redis ? rg_redis_take(sample_redis) : NULL;
    if (!c)
        return;
    for (int i = 1; i <= workers.n; i++)
        live[i] = 0;
    char cursor[32] = "0";
    int failed = 0;
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH rg:*:meta COUNT 1000", cursor);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            failed = 1;
            freeReplyObject(r);
            break;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str ? r->element[0]->str : "0");
        for (size_t k = 0; k < r->element[1]->elements; k++) {
            redisReply *h = redisCommand(c, "HMGET %s state owner", r->element[1]->element[k]->str);
            if (h && h->type == REDIS_REPLY_ARRAY && h->elements == 2 &&
                h->element[0]->type == REDIS_REPLY_STRING &&
                h->element[1]->type == REDIS_REPLY_STRING && !strcmp(h->element[0]->str, "live"))
                for (int i = 1; i <= workers.n; i++)
                    if (!strcmp(h->element[1]->str, workers.name[i]))
                        live[i]++;
            failed |= !h;
            freeReplyObject(h);
        }
        freeReplyObject(r);
    } while (!failed && strcmp(cursor, "0"));
    rg_redis_give(sample_redis, c, failed);
    if (failed)
        for (int i = 1; i <= workers.n; i++)
            live[i] = -1;
}

static void take_sample(struct sample *s)
{
    static pid_t kids[DESCENDANTS_MAX];
    memset(s, 0, sizeof *s);
    s->t_ms = rg_now_ms();
    tcp_load();
    for (int i = 1; i <= workers.n; i++) {
        mem_read(workers.pid[i], s->mem[i]);
        fd_scan(workers.pid[i], workers.ports[i], &s->fd[i]);
    }
    live_sessions(s->live);
    int n = below_workers(kids, DESCENDANTS_MAX);
    for (int i = 0; i < n; i++) {
        struct pstat p;
        if (read_pstat(kids[i], &p) < 0)
            continue;
        if (p.state == 'Z') {
            s->zombies++;
        } else if (is_chromium(&p)) {
            s->chromium++;
            seen_add(kids[i], p.start);
        }
    }
}

/*
 * The allocator's bytes in use and free in each worker (its /metrics, asked
 * over FastCGI on the worker's own port, so that nginx does not pick the
 * worker), in KiB; left at -1 when a worker does not answer.
 */
static void worker_heap(struct sample *s)
{
    for (int i = 1; i <= workers.n; i++) {
        if (workers.ports[i][0] <= 0 || s->mem[i][MEM_ALL] < 0)
            continue;
        const char *params[] = {"REQUEST_METHOD=GET", "DOCUMENT_URI=/metrics", NULL};
        http_resp r;
        if (fcgi_request(workers.ports[i][0], params, NULL, 0, &r) == 0 && r.status == 200 &&
            r.body.data) {
            double used = metric_value(r.body.data, "refgate_heap_in_use_bytes");
            double spare = metric_value(r.body.data, "refgate_heap_free_bytes");
            s->mem[i][MEM_IN_USE] = used >= 0 ? (long)(used / 1024) : -1;
            s->mem[i][MEM_FREE] = spare >= 0 ? (long)(spare / 1024) : -1;
        }
        rg_buf_destroy(&r.body);
    }
}

/*
 * A quiet point: lets each driver finish the loop it is in (for at most
 * QUIET_DRAIN_MS), waits wait_ms with no command in flight, which is longer
 * than the workers' heap trim period (REFGATE_MALLOC_TRIM_MS), takes a
 * sample and lets the drivers go on. The sample is marked quiet only when
 * every driver stopped. A worker's RSS then holds what it keeps (sessions,
 * pools, caches, and any leak), not the buffers of the commands in flight,
 * which move it by several MiB from one sample to the next. The time spent
 * here is added to the stop time, so the load still runs for --duration.
 */
static void quiet_point(int sessions, int wait_ms, struct sample *out)
{
    int64_t t0 = rg_now_ms();
    pthread_mutex_lock(&g.mu);
    g.pause = 1;
    int drained;
    for (;;) {
        drained = g.paused >= sessions;
        if (drained || rg_now_ms() - t0 >= QUIET_DRAIN_MS)
            break;
        pthread_mutex_unlock(&g.mu);
        rg_sleep_ms(50);
        pthread_mutex_lock(&g.mu);
    }
    pthread_mutex_unlock(&g.mu);
    rg_sleep_ms(wait_ms);
    take_sample(out);
    worker_heap(out); /* after the sample: its request does not touch what was measured */
    out->quiet = drained;
    pthread_mutex_lock(&g.mu);
    g.pause = 0;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    atomic_fetch_add(&g.stop_ms, rg_now_ms() - t0);
}

/*
 * The warm-up after the fixed loops: samples RSS every interval and ends once
 * no worker's RSS has set a new high (by more than 1%, or 256 KiB) for
 * settle_s, or when warmup_max_s have passed since t0. A worker filling its
 * allocator's arenas and its pools settles; a leak keeps setting highs, runs
 * into the cap, and then fails the measured criterion. 1 when settled.
 */
static int warm_until_settled(int sessions, int interval, int64_t t0)
{
    long peak[WORKERS_MAX + 1] = {0};
    int64_t rise[WORKERS_MAX + 1] = {0}, tracking = 0;
    int64_t cap_ms = t0 + (int64_t)g.warmup_max_s * 1000;
    for (;;) {
        int64_t now = rg_now_ms();
        if (atomic_load(&g.warm_done) == sessions) {
            if (!tracking)
                tracking = now;
            int settled = 1;
            for (int w = 1; w <= workers.n; w++) {
                long r = vm_rss_kib(workers.pid[w]);
                long step = peak[w] / 100 > 256 ? peak[w] / 100 : 256;
                if (r > peak[w] + step || !rise[w]) {
                    if (r > peak[w])
                        peak[w] = r;
                    rise[w] = now;
                }
                if (now - rise[w] < (int64_t)g.settle_s * 1000)
                    settled = 0;
            }
            if (settled || g.settle_s == 0)
                return 1;
        }
        if (now >= cap_ms && tracking)
            return 0;
        rg_sleep_ms(interval * 1000);
    }
}

/*
 * Chromium processes seen below a worker that still run (same PID, same start
 * time) but are no longer below any worker: orphans. Zombies among them are
 * counted apart. When the stack is gone, every one still there is left over.
 */
static void leftovers(int stack_gone, int *orphans, int *zombies, pid_t *example)
{
    static pid_t kids[DESCENDANTS_MAX];
    int n = stack_gone ? 0 : below_workers(kids, DESCENDANTS_MAX);
    *orphans = *zombies = 0;
    *example = 0;
    for (int i = 0; i < n_seen; i++) {
        struct pstat p;
        if (read_pstat(seen[i].pid, &p) < 0 || p.start != seen[i].start)
            continue;
        int below = 0;
        for (int k = 0; k < n && !below; k++)
            below = kids[k] == seen[i].pid;
        if (below)
            continue;
        if (p.state == 'Z')
            ++*zombies;
        else
            ++*orphans;
        *example = seen[i].pid;
    }
}

/* ---- Redis (informational) ------------------------------------------------ */

struct redis_info {
    long long keys, used_bytes;
};

static void redis_info(rg_redis *r, struct redis_info *out)
{
    out->keys = out->used_bytes = -1;
    redisContext *c = r ? rg_redis_take(r) : NULL;
    if (!c)
        return;
    int failed = 0;
    redisReply *rep = redisCommand(c, "DBSIZE");
    if (rep && rep->type == REDIS_REPLY_INTEGER)
        out->keys = rep->integer;
    failed |= !rep;
    freeReplyObject(rep);
    rep = failed ? NULL : redisCommand(c, "INFO memory");
    if (rep && rep->type == REDIS_REPLY_STRING) {
        const char *m = strstr(rep->str, "used_memory:");
        if (m)
            out->used_bytes = atoll(m + 12);
    }
    failed |= !rep;
    freeReplyObject(rep);
    rg_redis_give(r, c, failed);
}

/* ---- report ------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* The p-quantile (0..1) of v sorted in place, by nearest rank; 0 for none. */
static double quantile(double *v, size_t n, double p)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t k = (size_t)(p * (double)n);
    return v[k < n ? k : n - 1];
}

/* The least-squares slope of worker w's RSS over the samples from `from` on, in KiB/min. */
static double rss_slope(const struct sample *s, int n, int w, int64_t from, int quiet)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].t_ms < from || s[i].mem[w][MEM_ALL] <= 0 || (quiet && !s[i].quiet))
            continue;
        double x = (double)(s[i].t_ms - from) / 60000.0, y = (double)s[i].mem[w][MEM_ALL];
        sx += x, sy += y, sxx += x * x, sxy += x * y;
        k++;
    }
    double den = k * sxx - sx * sx;
    return k >= 3 && den > 0 ? (k * sxy - sx * sy) / den : 0;
}

/* The median RSS (or one part of it) of worker w over the samples taken in
   [from, to): all of them (quiet 0) or the quiet points only (quiet 1). */
static long median_rss(const struct sample *s, int n, int w, int64_t from, int64_t to, int quiet,
                       enum mem_part part)
{
    long v[4096];
    int k = 0;
    for (int i = 0; i < n && k < 4096; i++)
        if (s[i].t_ms >= from && s[i].t_ms < to && s[i].mem[w][part] >= 0 &&
            s[i].mem[w][MEM_ALL] > 0 && (!quiet || s[i].quiet))
            v[k++] = s[i].mem[w][part];
    if (!k)
        return -1;
    qsort(v, (size_t)k, sizeof *v, cmp_long);
    return v[k / 2];
}

/* The medians of the first and of the last quarter of [t_start, t_end]. */
static void rss_quarters(const struct sample *s, int n, int w, int64_t t_start, int64_t t_end,
                         int quiet, enum mem_part part, long *first_q, long *last_q)
{
    int64_t quarter = (t_end - t_start) / 4;
    *first_q = median_rss(s, n, w, t_start, t_start + quarter, quiet, part);
    *last_q = median_rss(s, n, w, t_end - quarter, INT64_MAX, quiet, part);
}

static void json_str(const char *s)
{
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_json_str(&b, s, strlen(s));
    fputs(b.data ? b.data : "\"\"", stdout);
    rg_buf_destroy(&b);
}

static char reasons[4096];
static int failing;

static void fail_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_reason(const char *fmt, ...)
{
    size_t used = strlen(reasons);
    if (used)
        used += (size_t)snprintf(reasons + used, sizeof reasons - used, "; ");
    if (used < sizeof reasons) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reasons + used, sizeof reasons - used, fmt, ap);
        va_end(ap);
    }
    failing = 1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* Every sample, one line each: seconds since the first, then per worker RSS
   (KiB), fds, live sessions and the anonymous and file parts of the RSS. */
static void write_trace(const char *path, const struct sample *s, size_t n, int64_t t0)
{
    FILE *f = fopen(path, "we");
    if (!f) {
        fprintf(stderr, "load: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "t_s");
    for (int w = 1; w <= workers.n; w++)
        fprintf(f,
                "\t%s_rss_kib\t%s_fds\t%s_fds_nginx\t%s_fds_redis\t%s_close_wait\t%s_live"
                "\t%s_anon_kib\t%s_file_kib\t%s_heap_kib\t%s_arenas_kib\t%s_stacks_kib"
                "\t%s_other_kib\t%s_in_use_kib\t%s_free_kib",
                workers.name[w], workers.name[w], workers.name[w], workers.name[w], workers.name[w],
                workers.name[w], workers.name[w], workers.name[w], workers.name[w], workers.name[w],
                workers.name[w], workers.name[w], workers.name[w], workers.name[w]);
    fprintf(f, "\tchromium\tzombies\tquiet\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%.1f", (double)(s[i].t_ms - t0) / 1000.0);
        for (int w = 1; w <= workers.n; w++)
            fprintf(f, "\t%ld\t%d\t%d\t%d\t%d\t%d\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld",
                    s[i].mem[w][MEM_ALL], s[i].fd[w].total, s[i].fd[w].nginx, s[i].fd[w].redis,
                    s[i].fd[w].close_wait, s[i].live[w], s[i].mem[w][MEM_ANON],
                    s[i].mem[w][MEM_FILE], s[i].mem[w][MEM_HEAP], s[i].mem[w][MEM_ARENAS],
                    s[i].mem[w][MEM_STACKS], s[i].mem[w][MEM_OTHER], s[i].mem[w][MEM_IN_USE],
                    s[i].mem[w][MEM_FREE]);
        fprintf(f, "\t%d\t%d\t%d\n", s[i].chromium, s[i].zombies, s[i].quiet);
    }
    if (fclose(f) != 0)
        fprintf(stderr, "load: cannot write %s\n", path);
}

/* ---- options ---------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: load [--sessions N] [--duration S] [--workers N] [--interval S]\n"
            "            [--warmup-loops N] [--settle S] [--warmup-max S]\n"
            "            [--close-one-in N] [--quiet-every S] [--quiet-wait S] [--trace FILE]\n"
            "            [--port P [--key K] [--run-dir DIR]]\n"
            "  --sessions N      sessions driven at once [8]\n"
            "  --duration S      seconds of measured load after the warm-up [60]\n"
            "  --workers N       workers of the stack started here [2]\n"
            "  --interval S      seconds between samples of /proc [2]\n"
            "  --warmup-loops N  loops each session runs before the measured load [2]\n"
            "  --settle S        then warm up until no worker's RSS rose for S s [60; 0: no]\n"
            "  --warmup-max S    but for at most S s in all [300]\n"
            "  --close-one-in N  a measured loop closes its session with odds 1/N [6]\n"
            "  --quiet-every S   pause the load for a quiet sample every S s [120; 0: never]\n"
            "  --quiet-wait S    how long a quiet point waits before its sample [12]\n"
            "  --trace FILE      write every sample of /proc to FILE (tab-separated)\n"
            "  --port P          drive the stack on 127.0.0.1:P instead of starting one\n"
            "  --key K           its API key [$REFGATE_KEY, or DIR/dev-key]\n"
            "  --run-dir DIR     its run directory, for worker-w*.pid and dev-key [.run]\n");
}

static int int_arg(const char *name, const char *v, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || n < min || n > max) {
        fprintf(stderr, "load: %s takes an integer from %d to %d\n", name, min, max);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* Reads the first line of path into buf without its newline; 0 or -1. */
static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf[0] ? 0 : -1;
}

/* The workers of a running stack: DIR/worker-w1.pid, worker-w2.pid, ... */
static void workers_from_run_dir(const char *dir)
{
    for (int i = 1; i <= WORKERS_MAX; i++) {
        char path[PATH_MAX], line[32];
        snprintf(path, sizeof path, "%s/worker-w%d.pid", dir, i);
        if (read_line(path, line, sizeof line) < 0)
            break;
        pid_t pid = (pid_t)atol(line);
        if (pid <= 0 || !procs_running(pid))
            break;
        workers.pid[i] = pid;
        snprintf(workers.name[i], sizeof workers.name[i], "w%d", i);
        workers.n = i;
    }
}

int main(int argc, char **argv)
{
    int sessions = 8, duration = 60, nworkers = 2, interval = 2, port = 0;
    int quiet_every = 120, quiet_wait = 12;
    const char *key = NULL, *run_dir = ".run", *trace = NULL;
    g.warmup_loops = 2;
    g.settle_s = 60;
    g.warmup_max_s = 300;
    g.close_one_in = 6;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--sessions"))
            rc = int_arg(a, v, 1, SESSIONS_MAX, &sessions);
        else if (!strcmp(a, "--duration"))
            rc = int_arg(a, v, 4, 7 * 24 * 3600, &duration);
        else if (!strcmp(a, "--workers"))
            rc = int_arg(a, v, 1, WORKERS_MAX, &nworkers);
        else if (!strcmp(a, "--interval"))
            rc = int_arg(a, v, 1, 600, &interval);
        else if (!strcmp(a, "--warmup-loops"))
            rc = int_arg(a, v, 0, 1000, &g.warmup_loops);
        else if (!strcmp(a, "--settle"))
            rc = int_arg(a, v, 0, 24 * 3600, &g.settle_s);
        else if (!strcmp(a, "--warmup-max"))
            rc = int_arg(a, v, 0, 7 * 24 * 3600, &g.warmup_max_s);
        else if (!strcmp(a, "--close-one-in"))
            rc = int_arg(a, v, 0, 1000000, &g.close_one_in);
        else if (!strcmp(a, "--quiet-every"))
            rc = int_arg(a, v, 0, 24 * 3600, &quiet_every);
        else if (!strcmp(a, "--quiet-wait"))
            rc = int_arg(a, v, 0, 600, &quiet_wait);
        else if (!strcmp(a, "--port"))
            rc = int_arg(a, v, 1, 65535, &port);
        else if (!strcmp(a, "--key") && v)
            key = v;
        else if (!strcmp(a, "--run-dir") && v)
            run_dir = v;
        else if (!strcmp(a, "--trace") && v)
            trace = v;
        else {
            usage();
            return 2;
        }
        if (rc < 0)
            return 2;
        i++;
    }

    if (access("tests/fixtures/form.html", R_OK) != 0) {
        fprintf(stderr, "load: run me from the repository root (no tests/fixtures/form.html)\n");
        return 2;
    }
    g.pages = httpd_start("tests/fixtures");
    if (!g.pages) {
        fprintf(stderr, "load: cannot start the fixture server\n");
        return 2;
    }
    char probe[PATH_MAX];

    /* The stack: our own, or the one on --port. */
    stack *st = NULL;
    /* needle: on the command line of every Chromium process of our stack */
    char stack_path[256] = "", needle[300] = "", keybuf[128];
    int keep_stack = getenv("RG_KEEP_STACK") != NULL;
    rg_redis_config rc;
    rg_redis_config_default(&rc);
    if (!port) {
        const char *env[] = {"REFGATE_LOG_LEVEL=warn", NULL};
        fprintf(stderr, "load: starting Redis, %d workers and nginx...\n", nworkers);
        st = stack_start(nworkers, env);
        if (!st) {
            fprintf(stderr, "load: cannot start the stack\n");
            httpd_stop(g.pages);
            return 2;
        }
        g.port = stack_port(st);
        key = stack_key(st, 0);
        workers.n = nworkers;
        for (int i = 1; i <= nworkers; i++) {
            workers.pid[i] = stack_worker_pid(st, i);
            snprintf(workers.name[i], sizeof workers.name[i], "w%d", i);
        }
        snprintf(stack_path, sizeof stack_path, "%s", stack_dir(st));
        snprintf(needle, sizeof needle, "%s/worker-w", stack_path);
        rc.url = stack_redis_url(st);
    } else {
        g.port = port;
        if (!key)
            key = getenv("REFGATE_KEY");
        snprintf(probe, sizeof probe, "%s/dev-key", run_dir);
        if ((!key || !*key) && read_line(probe, keybuf, sizeof keybuf) == 0)
            key = keybuf;
        if (!key || !*key || strlen(key) > 128 || strpbrk(key, "\r\n")) {
            fprintf(stderr, "load: no API key: give --key, set REFGATE_KEY, or keep %s\n", probe);
            httpd_stop(g.pages);
            return 2;
        }
        workers_from_run_dir(run_dir);
        if (!workers.n)
            fprintf(stderr,
                    "load: no running workers in %s/worker-w*.pid: processes are not "
                    "sampled and their criteria are skipped\n",
                    run_dir);
        rg_redis_config_from_env(&rc);
    }
    snprintf(g.auth, sizeof g.auth, "Authorization: Bearer %.128s\r\n", key);
    snprintf(g.post, sizeof g.post, "%sContent-Type: application/msgpack\r\n", g.auth);
    for (int w = 1; w <= workers.n; w++)
        worker_ports(workers.pid[w], workers.ports[w]);
    rg_redis *redis = NULL;
    char rerr[256];
    if (rg_redis_new(&rc, &redis, rerr, sizeof rerr) < 0)
        redis = NULL;
    sample_redis = redis;

    /* Warm-up, the first sample, the measured load. */
    struct driver *d = calloc((size_t)sessions, sizeof *d);
    pthread_barrier_init(&g.warm, NULL, (unsigned)sessions + 1);
    pthread_barrier_init(&g.go, NULL, (unsigned)sessions + 1);
    atomic_store(&g.stop_ms, INT64_MAX);
    atomic_store(&g.warming, 1);
    int64_t t_warm = rg_now_ms();
    for (int i = 0; i < sessions; i++) {
        d[i].index = i;
        d[i].fd = -1;
        d[i].page = i % PAGES;
        d[i].rng = 2654435761u * (unsigned)(i + 1) ^ (unsigned)getpid();
        pthread_create(&d[i].thread, NULL, drive, &d[i]);
    }
    fprintf(stderr, "load: %d sessions, %d warm-up loops each, then until RSS settles (%d s)...\n",
            sessions, g.warmup_loops, g.settle_s);
    int settled = warm_until_settled(sessions, interval, t_warm);
    atomic_store(&g.warming, 0);
    pthread_barrier_wait(&g.warm);
    double warm_s = (double)(rg_now_ms() - t_warm) / 1000.0;
    fprintf(stderr, "load: warm-up took %.0f s (%s)\n", warm_s,
            settled ? "RSS settled" : "RSS did not settle; capped by --warmup-max");
    /* Every driver waits at the barrier: the first sample is a quiet point. */
    int quiet_ms = quiet_every > 0 ? quiet_wait * 1000 : 1000; /* 1 s: the last checkpoints */
    rg_sleep_ms(quiet_ms);
    size_t cap = (size_t)(duration / interval) + 64, n_samples = 0;
    struct sample *samples = calloc(cap, sizeof *samples);
    struct sample first, last;
    take_sample(&first);
    worker_heap(&first);
    first.quiet = quiet_every > 0;
    samples[n_samples++] = first;
    struct redis_info r0, r1;
    redis_info(redis, &r0);
    int64_t t_start = first.t_ms;
    atomic_store(&g.stop_ms, t_start + (int64_t)duration * 1000);
    fprintf(stderr, "load: measured load for %d s...\n", duration);
    pthread_barrier_wait(&g.go);
    int64_t next_quiet = quiet_every > 0 ? t_start + (int64_t)quiet_every * 1000 : INT64_MAX;
    int quiet_points = first.quiet, quiet_missed = 0;
    for (;;) {
        int64_t now = rg_now_ms(), stop = atomic_load(&g.stop_ms);
        if (now >= stop)
            break;
        int64_t at = samples[n_samples - 1].t_ms + (int64_t)interval * 1000;
        at = at < next_quiet ? at : next_quiet;
        at = at < stop ? at : stop;
        if (at > now)
            rg_sleep_ms((int)(at - now));
        if (rg_now_ms() >= stop)
            break;
        if (n_samples == cap) {
            cap *= 2;
            samples = xrealloc(samples, cap * sizeof *samples);
        }
        if (rg_now_ms() < next_quiet) {
            take_sample(&samples[n_samples++]);
            continue;
        }
        quiet_point(sessions, quiet_ms, &samples[n_samples]);
        quiet_points += samples[n_samples].quiet;
        quiet_missed += !samples[n_samples].quiet;
        n_samples++;
        next_quiet = rg_now_ms() + (int64_t)quiet_every * 1000;
    }
    /* Drivers finish the loop they are in. */
    for (int i = 0; i < sessions; i++)
        pthread_join(d[i].thread, NULL);
    int64_t t_end = rg_now_ms();
    rg_sleep_ms(quiet_ms);
    take_sample(&last);
    worker_heap(&last);
    last.quiet = quiet_every > 0;
    quiet_points += last.quiet;
    if (n_samples == cap)
        samples = xrealloc(samples, ++cap * sizeof *samples);
    samples[n_samples++] = last;
    redis_info(redis, &r1);

    /* Leftovers while the stack runs: Chromium that left its worker's tree, zombies. */
    int orphans_run = 0, zombies_run = 0, zombies_below = last.zombies;
    pid_t example_run = 0;
    for (int64_t until = rg_now_ms() + SETTLE_MS;;) {
        leftovers(0, &orphans_run, &zombies_run, &example_run);
        struct sample now;
        take_sample(&now);
        zombies_below = now.zombies;
        if ((!orphans_run && !zombies_run && !zombies_below) || rg_now_ms() >= until)
            break;
        rg_sleep_ms(500);
    }

    /* Close what is left, so that a running stack is as we found it. */
    for (int i = 0; i < sessions; i++)
        if (d[i].sid[0]) {
            d[i].fd = -1;
            close_session(&d[i], d[i].sid);
            if (d[i].fd >= 0)
                close(d[i].fd);
        }

    /* Our own stack: stop it; nothing of Chromium may outlive it. */
    int orphans_after = -1, zombies_after = -1, by_cmdline = -1;
    pid_t example_after = 0;
    if (st) {
        setenv("RG_KEEP_STACK", "1", 1); /* its logs stay when the run fails */
        stack_stop(st);
        st = NULL;
        for (int64_t until = rg_now_ms() + SETTLE_MS;;) {
            leftovers(1, &orphans_after, &zombies_after, &example_after);
            by_cmdline = procs_count_cmdline(needle);
            if ((!orphans_after && !zombies_after && !by_cmdline) || rg_now_ms() >= until)
                break;
            rg_sleep_ms(200);
        }
    }
    sample_redis = NULL;
    rg_redis_free(redis);
    httpd_stop(g.pages);

    /* ---- merge ---- */
    struct lat all[OP_N];
    long commands[OP_N] = {0}, failed[OP_N] = {0}, total = 0, total_failed = 0, loops = 0;
    long warmup_commands = 0, misplaced = 0;
    struct errs errs = {0};
    memset(all, 0, sizeof all);
    for (int i = 0; i < sessions; i++) {
        loops += d[i].loops;
        misplaced += d[i].misplaced;
        warmup_commands += d[i].warmup_commands;
        for (int o = 0; o < OP_N; o++) {
            commands[o] += d[i].commands[o];
            failed[o] += d[i].failed[o];
            for (size_t k = 0; k < d[i].lat[o].n; k++)
                lat_add(&all[o], d[i].lat[o].v[k]);
            free(d[i].lat[o].v);
        }
        for (int k = 0; k < d[i].errs.n; k++)
            errs_add(&errs, d[i].errs.row[k].code, d[i].errs.row[k].transient,
                     d[i].errs.row[k].count);
    }
    for (int o = 0; o < OP_N; o++)
        total += commands[o], total_failed += failed[o];
    double seconds = (double)(t_end - t_start) / 1000.0;

    /* ---- criteria ---- */
    long tolerated_n = 0;
    for (int k = 0; k < errs.n; k++) {
        if (tolerated(&errs.row[k]))
            tolerated_n += errs.row[k].count;
        else
            fail_reason("%ld %s error%s (%s)", errs.row[k].count, errs.row[k].code,
                        errs.row[k].count == 1 ? "" : "s",
                        errs.row[k].transient ? "transient, but a bug" : "not transient");
    }
    if (loops < sessions)
        fail_reason("only %ld complete loops for %d sessions", loops, sessions);
    if (total && (double)tolerated_n / (double)total > TRANSIENT_SHARE_MAX)
        fail_reason("%.0f%% of the commands failed with transient errors (at most %.0f%%)",
                    100.0 * (double)tolerated_n / (double)total, 100.0 * TRANSIENT_SHARE_MAX);
    /* RSS is judged on the quiet points when there are any (--quiet-every),
       else on every sample; the medians of all samples are reported too. */
    int by_quiet = quiet_every > 0;
    long q1[WORKERS_MAX + 1], q4[WORKERS_MAX + 1], b1[WORKERS_MAX + 1], b4[WORKERS_MAX + 1];
    long part1[WORKERS_MAX + 1][MEM_N], part4[WORKERS_MAX + 1][MEM_N]; /* q1, q4 by part */
    double growth[WORKERS_MAX + 1], slope[WORKERS_MAX + 1];
    for (int w = 1; w <= workers.n; w++) {
        rss_quarters(samples, (int)n_samples, w, t_start, t_end, by_quiet, MEM_ALL, &q1[w], &q4[w]);
        rss_quarters(samples, (int)n_samples, w, t_start, t_end, 0, MEM_ALL, &b1[w], &b4[w]);
        /* Which part grew: code first run late, or which allocator's pages. */
        for (int k = 0; k < MEM_N; k++)
            rss_quarters(samples, (int)n_samples, w, t_start, t_end, by_quiet, (enum mem_part)k,
                         &part1[w][k], &part4[w][k]);
        growth[w] = q1[w] > 0 && q4[w] > 0 ? 100.0 * (double)(q4[w] - q1[w]) / (double)q1[w] : 0;
        slope[w] = rss_slope(samples, (int)n_samples, w, t_start, by_quiet);
        if (q1[w] > 0 && q4[w] > 0 && growth[w] > RSS_GROWTH_MAX_PCT &&
            q4[w] - q1[w] > (by_quiet ? RSS_SLACK_KIB : RSS_SLACK_BUSY_KIB))
            fail_reason("%s RSS grew %.1f%% (%ld -> %ld KiB, medians of the %s in the first "
                        "and last quarter)",
                        workers.name[w], growth[w], q1[w], q4[w],
                        by_quiet ? "quiet points" : "samples");
        if (workers.pid[w] > 0 && (q1[w] < 0 || q4[w] < 0))
            fail_reason("%s: no %s in the first or the last quarter to judge RSS by",
                        workers.name[w], by_quiet ? "quiet point" : "sample");
        if (fds_own(&first, w) >= 0 && fds_own(&last, w) > fds_own(&first, w) + FD_SLACK)
            fail_reason("%s open fds (connections to nginx and Redis left out) grew from %d to %d",
                        workers.name[w], fds_own(&first, w), fds_own(&last, w));
        if (last.fd[w].redis > REDIS_POOL_IDLE_MAX + FD_SLACK &&
            last.fd[w].redis > first.fd[w].redis + FD_SLACK)
            fail_reason("%s holds %d Redis connections while quiet (the pool keeps at most %d)",
                        workers.name[w], last.fd[w].redis, REDIS_POOL_IDLE_MAX);
        if (last.mem[w][MEM_ALL] < 0)
            fail_reason("%s (PID %d) is gone", workers.name[w], (int)workers.pid[w]);
    }
    if (orphans_run)
        fail_reason("%d Chromium process%s left their worker while it runs (e.g. PID %d)",
                    orphans_run, orphans_run == 1 ? "" : "es", (int)example_run);
    if (zombies_run || zombies_below)
        fail_reason("%d zombie%s below the workers after the load", zombies_run + zombies_below,
                    zombies_run + zombies_below == 1 ? "" : "s");
    if (orphans_after > 0 || zombies_after > 0 || by_cmdline > 0)
        fail_reason("after the stack stopped: %d Chromium process%s still run%s, %d zombie%s "
                    "(e.g. PID %d)",
                    orphans_after > by_cmdline ? orphans_after : by_cmdline,
                    (orphans_after > by_cmdline ? orphans_after : by_cmdline) == 1 ? "" : "es",
                    (orphans_after > by_cmdline ? orphans_after : by_cmdline) == 1 ? "s" : "",
                    zombies_after, zombies_after == 1 ? "" : "s", (int)example_after);

    /* ---- table ---- */
    printf("refgate load: %d sessions, %.1f s measured after a %.0f s warm-up (%d loops each, "
           "then %s), %d workers (%s), %ld loops\n\n",
           sessions, seconds, warm_s, g.warmup_loops,
           settled ? "until RSS settled" : "RSS did not settle", workers.n,
           port ? "running stack" : "own stack", loops);
    printf("%-16s %9s %8s %10s %10s\n", "op", "commands", "errors", "p50 ms", "p99 ms");
    double p50[OP_N], p99[OP_N];
    for (int o = 0; o < OP_N; o++) {
        p50[o] = quantile(all[o].v, all[o].n, 0.50);
        p99[o] = quantile(all[o].v, all[o].n, 0.99);
        printf("%-16s %9ld %8ld %10.1f %10.1f\n", op_names[o], commands[o], failed[o], p50[o],
               p99[o]);
    }
    printf("%-16s %9ld %8ld   (%ld in the warm-up; %.1f commands/s measured)\n\n", "total", total,
           total_failed, warmup_commands,
           seconds > 0 ? (double)(total - warmup_commands) / seconds : 0);
    printf("errors by code:");
    if (!errs.n)
        printf(" none");
    for (int k = 0; k < errs.n; k++)
        printf("%s %s %ld (%s)", k ? "," : "", errs.row[k].code, errs.row[k].count,
               tolerated(&errs.row[k]) ? "transient, tolerated" : "FAILS");
    printf("\n\n");
    printf("%-6s %8s %11s %11s %11s %11s %8s %10s %11s %11s %9s %7s %7s %s\n", "worker", "pid",
           "rss start", "rss end", "rss q1 med", "rss q4 med", "growth", "KiB/min", "busy q1",
           "busy q4", "fds start", "fds end", "fds max", "sessions");
    for (int w = 1; w <= workers.n; w++) {
        int fmax = 0;
        for (size_t i = 0; i < n_samples; i++)
            fmax = fds_own(&samples[i], w) > fmax ? fds_own(&samples[i], w) : fmax;
        printf("%-6s %8d %7.1f MiB %7.1f MiB %7.1f MiB %7.1f MiB %7.1f%% %10.1f %7.1f MiB "
               "%7.1f MiB %9d %7d %7d %4d -> %d\n",
               workers.name[w], (int)workers.pid[w], first.mem[w][MEM_ALL] / 1024.0,
               last.mem[w][MEM_ALL] / 1024.0, q1[w] / 1024.0, q4[w] / 1024.0, growth[w], slope[w],
               b1[w] / 1024.0, b4[w] / 1024.0, fds_own(&first, w), fds_own(&last, w), fmax,
               first.live[w], last.live[w]);
    }
    if (workers.n)
        printf("(rss q1/q4 med, growth, KiB/min: %s; busy q1/q4: medians of all samples, with "
               "the commands in flight; %d quiet points, %d found a driver still busy after "
               "%d s)\n",
               by_quiet ? "over the quiet points" : "over all samples", quiet_points, quiet_missed,
               QUIET_DRAIN_MS / 1000);
    for (int w = 1; w <= workers.n; w++) {
        static const char *const lead[MEM_N] = {
            "", "", ", ", "; anon in ", ", ", ", ", ", ", "; allocator's bytes ", ", "};
        printf("%s rss q1 -> q4 med by part, KiB: ", workers.name[w]);
        for (int k = MEM_ANON; k < MEM_N; k++)
            if (part1[w][k] >= 0 && part4[w][k] >= 0)
                printf("%s%s %ld -> %ld (%+ld)", lead[k], mem_names[k], part1[w][k], part4[w][k],
                       part4[w][k] - part1[w][k]);
            else
                printf("%s%s unknown", lead[k], mem_names[k]);
        printf("\n");
    }
    if (workers.n)
        printf("(anon: heap, arenas, thread stacks and the rest, by mapping from smaps; file: "
               "the binary and the libraries; the allocator's bytes in use and free from the "
               "worker's /metrics at the quiet points)\n");
    if (workers.n)
        printf("(fds: open descriptors without the connections from nginx and to Redis; "
               "sessions: live sessions the worker owns at the first and the final sample; %ld "
               "new session%s did not land on the worker of the one %s replaced)\n",
               misplaced, misplaced == 1 ? "" : "s", misplaced == 1 ? "it" : "they");
    for (int w = 1; w <= workers.n; w++) {
        char a[200], b[200];
        fd_describe(&first.fd[w], a, sizeof a);
        fd_describe(&last.fd[w], b, sizeof b);
        printf("%s fds at start: %s\n%s fds at end:   %s\n", workers.name[w], a, workers.name[w],
               b);
    }
    if (!workers.n)
        printf("(no worker PIDs: not sampled)\n");
    int zmax = 0;
    for (size_t i = 0; i < n_samples; i++)
        zmax = samples[i].zombies > zmax ? samples[i].zombies : zmax;
    printf("\nchromium below the workers: %d at start, %d at end (%d seen in %zu samples); "
           "zombies: %d at start, %d at end, at most %d in a sample\n",
           first.chromium, last.chromium, n_seen, n_samples, first.zombies, last.zombies, zmax);
    printf("leftovers while running: %d orphaned, %d zombies\n", orphans_run,
           zombies_run + zombies_below);
    if (orphans_after >= 0)
        printf("after the stack stopped: %d Chromium still running (%d by command line), "
               "%d zombies\n",
               orphans_after, by_cmdline, zombies_after);
    else
        printf("after the stack stopped: not checked (the stack on --port keeps running)\n");
    if (r0.keys >= 0 && r1.keys >= 0)
        printf("redis: %lld keys, %.1f MiB at start; %lld keys, %.1f MiB at end\n", r0.keys,
               r0.used_bytes / 1048576.0, r1.keys, r1.used_bytes / 1048576.0);
    printf("\n%s%s%s\n", failing ? "FAIL: " : "PASS", failing ? reasons : "",
           failing ? "" : ": no untolerated error, RSS and fds flat, no Chromium left over");
    if (stack_path[0]) {
        if (failing || keep_stack) {
            printf("stack logs kept in %s\n", stack_path);
        } else if (nftw(stack_path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
            fprintf(stderr, "load: could not remove %s\n", stack_path);
        }
    }

    if (trace)
        write_trace(trace, samples, n_samples, t_start);

    /* ---- one JSON line ---- */
    printf("{\"load\":{\"sessions\":%d,\"seconds\":%.1f,\"warmup_s\":%.1f,\"settled\":%s,"
           "\"warmup_loops\":%d,\"workers\":%d,\"quiet_every_s\":%d,\"quiet_points\":%d,"
           "\"quiet_missed\":%d,"
           "\"own_stack\":%s,\"loops\":%ld,\"commands\":%ld,\"warmup_commands\":%ld,"
           "\"failed\":%ld,\"errors\":{",
           sessions, seconds, warm_s, settled ? "true" : "false", g.warmup_loops, workers.n,
           quiet_every, quiet_points, quiet_missed, port ? "false" : "true", loops, total,
           warmup_commands, total_failed);
    for (int k = 0; k < errs.n; k++) {
        printf("%s", k ? "," : "");
        json_str(errs.row[k].code);
        printf(":{\"count\":%ld,\"transient\":%s,\"tolerated\":%s}", errs.row[k].count,
               errs.row[k].transient ? "true" : "false",
               tolerated(&errs.row[k]) ? "true" : "false");
    }
    printf("},\"ops\":{");
    for (int o = 0; o < OP_N; o++) {
        printf("%s", o ? "," : "");
        json_str(op_names[o]);
        printf(":{\"commands\":%ld,\"errors\":%ld,\"p50_ms\":%.3f,\"p99_ms\":%.3f}", commands[o],
               failed[o], p50[o], p99[o]);
        free(all[o].v);
    }
    printf("},\"workers_detail\":[");
    for (int w = 1; w <= workers.n; w++)
        printf("%s{\"id\":\"%s\",\"pid\":%d,\"rss_start_kib\":%ld,\"rss_end_kib\":%ld,"
               "\"rss_q1_median_kib\":%ld,\"rss_q4_median_kib\":%ld,\"rss_growth_pct\":%.2f,"
               "\"rss_slope_kib_per_min\":%.1f,\"rss_busy_q1_median_kib\":%ld,"
               "\"rss_busy_q4_median_kib\":%ld,\"rss_anon_q1_median_kib\":%ld,"
               "\"rss_anon_q4_median_kib\":%ld,\"rss_file_q1_median_kib\":%ld,"
               "\"rss_file_q4_median_kib\":%ld,\"rss_heap_q1_median_kib\":%ld,"
               "\"rss_heap_q4_median_kib\":%ld,\"rss_arenas_q1_median_kib\":%ld,"
               "\"rss_arenas_q4_median_kib\":%ld,\"rss_stacks_q1_median_kib\":%ld,"
               "\"rss_stacks_q4_median_kib\":%ld,\"rss_other_q1_median_kib\":%ld,"
               "\"rss_other_q4_median_kib\":%ld,\"heap_in_use_q1_median_kib\":%ld,"
               "\"heap_in_use_q4_median_kib\":%ld,\"heap_free_q1_median_kib\":%ld,"
               "\"heap_free_q4_median_kib\":%ld,\"fds_start\":%d,\"fds_end\":%d,"
               "\"fds_nginx_start\":%d,\"fds_nginx_end\":%d,\"fds_redis_start\":%d,"
               "\"fds_redis_end\":%d,\"close_wait_end\":%d,\"sessions_start\":%d,"
               "\"sessions_end\":%d}",
               w > 1 ? "," : "", workers.name[w], (int)workers.pid[w], first.mem[w][MEM_ALL],
               last.mem[w][MEM_ALL], q1[w], q4[w], growth[w], slope[w], b1[w], b4[w],
               part1[w][MEM_ANON], part4[w][MEM_ANON], part1[w][MEM_FILE], part4[w][MEM_FILE],
               part1[w][MEM_HEAP], part4[w][MEM_HEAP], part1[w][MEM_ARENAS], part4[w][MEM_ARENAS],
               part1[w][MEM_STACKS], part4[w][MEM_STACKS], part1[w][MEM_OTHER], part4[w][MEM_OTHER],
               part1[w][MEM_IN_USE], part4[w][MEM_IN_USE], part1[w][MEM_FREE], part4[w][MEM_FREE],
               fds_own(&first, w), fds_own(&last, w), first.fd[w].nginx, last.fd[w].nginx,
               first.fd[w].redis, last.fd[w].redis, last.fd[w].close_wait, first.live[w],
               last.live[w]);
    printf("],\"chromium_start\":%d,\"chromium_end\":%d,\"zombies_start\":%d,\"zombies_end\":%d,"
           "\"orphans_running\":%d,\"after_stop\":",
           first.chromium, last.chromium, first.zombies, last.zombies, orphans_run);
    if (orphans_after >= 0)
        printf("{\"chromium_left\":%d,\"chromium_left_by_cmdline\":%d,\"zombies\":%d}",
               orphans_after, by_cmdline, zombies_after);
    else
        printf("null");
    printf(",\"redis_keys_start\":%lld,\"redis_keys_end\":%lld,\"pass\":%s,\"reasons\":", r0.keys,
           r1.keys, failing ? "false" : "true");
    json_str(reasons);
    printf("}}\n");
    free(samples);
    free(d);
    return failing ? 1 : 0;
}
