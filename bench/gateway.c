/*
 * gateway.c - refgate as a user meets it: every figure here goes through
 * nginx, FastCGI and a worker, in msgpack on kept-alive connections, on one
 * stack started here (tests/support/stack.c: a private Redis, 2 workers with
 * one Chromium each, nginx). The peers' side of the same figures is
 * bench/peer/mcp.mjs and bench/peer/parallel.mjs. The msgpack client is
 * bench/client.c, shared with bench/loop.c (issue 20's agent loop on a
 * React app, against refgate-cli, agent-browser and, in mcp.mjs, the MCP
 * server).
 *
 *   floor     a trivial browser command (`read`: the text of a one-line
 *             page, one Runtime.evaluate) through the whole gateway, against
 *             a Runtime.evaluate of the same text sent straight down the
 *             DevTools pipe of a pool of our own
 *   click     `click @ref` on the target of bench/pages/click.html (600 other
 *             controls), 10 warm-up clicks, then `clicks` timed ones; then,
 *             in the same session and as many times, `fill @ref` ("hello")
 *             and `press @ref` (Enter) on the page's one text field, which
 *             counts its input events and Enter keys (bench/peer/click.mjs
 *             does the same with Playwright)
 *   observe   `observe` on bench/pages/controls.html (5,000 controls) with the
 *             stack's default registry cap (2,000 refs, so the outline is
 *             truncated): first after load and again unchanged, 5 runs (1
 *             with --quick), each in a new session
 *   navigate  `navigate` to bench/pages/form.html, then to the React page of
 *             bench/loop.c (tests/fixtures/react/todo.html: two scripts),
 *             each waiting for load, through the gateway, against
 *             Page.navigate to its load event straight down
 *             the pipe of a pool of our own (no URL policy, interception or
 *             egress proxy), one of each in turn, `rounds` times after 3
 *             warm-ups: what the gateway adds to a navigation (issue 20's
 *             target: at most 5 ms)
 *   create    `session.create` with no URL, as an agent starts a session,
 *             `rounds` times (10, 3 with --quick), each closed again and
 *             the next CREATE_GAP_MS (2 s) later, an agent's pace: the time
 *             until the session is there to drive (bench/peer/floor.mjs
 *             times Playwright's newContext() and newPage() at the same pace)
 *   loop      the agent loop on bench/pages/form.html: navigate, observe,
 *             click "Add a delivery note" by its ref, fill "Email address"
 *             by its ref, observe with diff; one warm-up loop, then `loops`
 *             timed ones; the refs are read from each loop's own observe
 *   parallel  8, 16 and 32 sessions at once on form.html, one client thread
 *             and connection per session: `read` (the trivial command) and
 *             `click @addone`, each for `secs` seconds: commands/s, p50, p99,
 *             errors, and the CPU the worker processes and, apart, the
 *             browsers' process trees used per command (issue 20's commands
 *             per core-second count both)
 *   memory    at each of those levels, after its run: PSS (/proc/<pid>/
 *             smaps_rollup) of every process below the workers (the Chromium
 *             trees) minus the same with no session live, per session; and
 *             the workers' own PSS
 *   fairness  a quiet tenant's p50 alone and while a noisy tenant sends at
 *             ten times its rate limit
 *
 * Stack settings: REFGATE_CONTEXTS_PER_BROWSER=40 and
 * REFGATE_GATEWAY_THREADS=48, so that 32 sessions of one tenant fit on two
 * workers however nginx's hash spreads them, and the per-tenant cap (three
 * quarters of a worker's threads) is not what the parallel figure measures.
 *
 * Full run: 2,000 floor rounds, 200 clicks, 40 navigations, 20 loops, 10 s per
 * command and level, 10 s of fairness. --quick: 300 rounds, 30 clicks, 10
 * navigations, 5 loops, only the
 * 8-session level for 2 s per command, 2 s of fairness. --clicks N sets the
 * timed clicks (and fills and presses): bench/run.sh runs the click section
 * alone in rounds, taking turns with bench/peer/click.mjs.
 *
 * Prints one JSON object on stdout (the click, fill and press times also
 * each in full, sorted, as "ms", for bench/peer/rounds.mjs); progress on stderr (RG_BENCH_VERBOSE=1
 * also prints every failed reply; RG_CLICK_DUMP=1 every click's, fill's and
 * press's counter, index, time and milliseconds, to see when the slow ones
 * came).
 * Measures; asserts nothing.
 * Usage: gateway [--quick] [--only SECTION,...] [--skip SECTION,...] [--levels N,...]
 *                [--secs S] [--clicks N]
 *   --only: run these sections only (floor, click, observe, navigate, create,
 *   loop, parallel, fairness); --skip: all but these;
 *   --levels: the parallel run's session counts (ascending, at most 32);
 *   --secs: its seconds per command and level. Run from the repository root.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/client.h"
#include "wire/wire.h"
#include "pool/pool.h"
#include "tenant/tenant.h"
#include "tests/support/net.h"
#include "tests/support/page.h"
#include "tests/support/support.h"

#define WORKERS 2
#define MAX_SESSIONS 32
#define MAX_LEVELS 8
#define MAX_RUNS 16
/*
 * Sessions opened at once in the parallel run. 16 creates at once (each
 * makes a browser context and loads a page) took longer than the client's
 * 30 s I/O timeout on a busy 2-core machine; Playwright's side opens its
 * contexts 4 at a time too.
 */
#define OPEN_AT_ONCE 4
/* Between a session's close and the next create in the create section. */
#define CREATE_GAP_MS 2000
#define MAX_PROCS 4096

static int quick;
/* timed clicks, fills and presses (--clicks; 0: 200, 30 with --quick) */
static int n_clicks;

/* A tenant for the fairness run; its Authorization header line. */
static int bench_tenant(const char *name, double rate, char *hdr, size_t len)
{
    char err[256], key[TENANT_KEY_SIZE] = "";
    tenant t;
    tenant_init(&t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.rate = rate;
    t.allow_private = 1;
    int rc = stack_make_tenant(stack_redis_url(gwc_st), &t, key, sizeof key, err, sizeof err);
    tenant_destroy(&t);
    snprintf(hdr, len, "Authorization: Bearer %s\r\n", key);
    return rc;
}

/* ---- /proc ---- */

/* CPU seconds (user + system) of a process so far. */
static double cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, stime = 0;
    if (p)
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stime);
    return (double)(ut + stime) / (double)sysconf(_SC_CLK_TCK);
}

static double workers_cpu_s(void)
{
    double s = 0;
    for (int i = 1; i <= WORKERS; i++)
        s += cpu_s(stack_worker_pid(gwc_st, i));
    return s;
}

/* CPU seconds of everything below the workers: the browsers' process trees. */
static double chromium_cpu_s(void)
{
    static pid_t kids[MAX_PROCS];
    double s = 0;
    for (int i = 1; i <= WORKERS; i++) {
        int n = procs_descendants(stack_worker_pid(gwc_st, i), kids, MAX_PROCS);
        for (int j = 0; j < n; j++)
            s += cpu_s(kids[j]);
    }
    return s;
}

/* PSS in KiB of everything below the workers (*below) and of the workers themselves (*own). */
static void workers_pss(long *below, long *own, int *procs)
{
    static pid_t kids[MAX_PROCS];
    *below = *own = 0;
    *procs = 0;
    for (int i = 1; i <= WORKERS; i++) {
        pid_t w = stack_worker_pid(gwc_st, i);
        long k = procs_pss_kib(w);
        *own += k > 0 ? k : 0;
        int n = procs_descendants(w, kids, MAX_PROCS);
        for (int j = 0; j < n; j++) {
            k = procs_pss_kib(kids[j]);
            *below += k > 0 ? k : 0;
        }
        *procs += n;
    }
}

/* ---- the sections ---- */

struct floor_result {
    int rounds, errors;
    double raw_p50, raw_p99, gw_p50, gw_p99, inside_p50;
    char product[128];
};

static int run_floor(const char *url, struct floor_result *out)
{
    int rounds = quick ? 300 : 2000;
    out->rounds = rounds;
    /* The raw floor: the same evaluate straight down a pipe of our own pool. */
    char run_dir[64];
    snprintf(run_dir, sizeof run_dir, "/tmp/refgate-bench-gw-%d", (int)getpid());
    pool_config pc;
    pool_config_default(&pc);
    pc.run_dir = run_dir;
    pc.browsers = 1;
    pool *p;
    pool_lease *l;
    if (pool_new(&pc, &p) < 0 || pool_acquire(p, 30000, &l, NULL) < 0) {
        fprintf(stderr, "gateway: no pool\n");
        return -1;
    }
    page_navigate(pool_lease_conn(l), pool_lease_session(l), url);
    double *raw = calloc((size_t)rounds, sizeof *raw);
    for (int i = 0; i < rounds + 50; i++) {
        int64_t t0 = rg_now_us();
        page_eval(pool_lease_conn(l), pool_lease_session(l), "document.body.innerText", NULL, 0);
        if (i >= 50)
            raw[i - 50] = (double)(rg_now_us() - t0) / 1000.0;
    }
    page_browser_product(pool_lease_conn(l), out->product, sizeof out->product);
    pool_release(l);
    pool_free(p);
    rmdir(run_dir);

    /* The same through the whole gateway. */
    char sid[64];
    if (gwc_create(url, sid) < 0) {
        fprintf(stderr, "gateway: cannot create a session\n");
        free(raw);
        return -1;
    }
    double *gwl = calloc((size_t)rounds, sizeof *gwl);
    double *inside = calloc((size_t)rounds, sizeof *inside);
    int fd = http_connect(stack_port(gwc_st));
    cJSON *m = gwc_op_new("read", NULL);
    for (int i = 0; i < rounds + 50; i++) {
        cJSON *rep = NULL;
        double ms = 0;
        gwc_renew_conn(&fd, i);
        out->errors += gwc_call(gwc_auth, &fd, sid, m, &rep, NULL, &ms) < 0;
        if (i >= 50) {
            gwl[i - 50] = ms;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(rep, "ms");
            inside[i - 50] = cJSON_IsNumber(v) ? v->valuedouble : 0;
        }
        cJSON_Delete(rep);
    }
    cJSON_Delete(m);
    close(fd);
    gwc_close_session(sid);
    out->raw_p50 = gwc_pct(raw, rounds, 0.5);
    out->raw_p99 = gwc_pct(raw, rounds, 0.99);
    out->gw_p50 = gwc_pct(gwl, rounds, 0.5);
    out->gw_p99 = gwc_pct(gwl, rounds, 0.99);
    out->inside_p50 = gwc_pct(inside, rounds, 0.5);
    free(raw);
    free(gwl);
    free(inside);
    return 0;
}

struct nav_result {
    int rounds, errors;
    double *raw, *gw, *inside;
};

/* Navigations in turn: one raw down our own pipe, one through the gateway. */
static int run_navigate(const char *url, struct nav_result *out)
{
    int rounds = quick ? 10 : 40;
    out->rounds = rounds;
    out->raw = calloc((size_t)rounds, sizeof *out->raw);
    out->gw = calloc((size_t)rounds, sizeof *out->gw);
    out->inside = calloc((size_t)rounds, sizeof *out->inside);
    char run_dir[64];
    snprintf(run_dir, sizeof run_dir, "/tmp/refgate-bench-nav-%d", (int)getpid());
    pool_config pc;
    pool_config_default(&pc);
    pc.run_dir = run_dir;
    pc.browsers = 1;
    pool *p = NULL;
    pool_lease *l = NULL;
    char sid[64];
    if (!out->raw || !out->gw || !out->inside || pool_new(&pc, &p) < 0 ||
        pool_acquire(p, 30000, &l, NULL) < 0 ||
        cdp_call(pool_lease_conn(l), pool_lease_session(l), "Page.enable", NULL, 10000, NULL) < 0 ||
        gwc_create(NULL, sid) < 0) {
        fprintf(stderr, "gateway: navigate: no pool or no session\n");
        if (l)
            pool_release(l);
        pool_free(p);
        rmdir(run_dir);
        return -1;
    }
    int fd = http_connect(stack_port(gwc_st));
    cJSON *args, *m = gwc_op_new("navigate", &args);
    cJSON_AddStringToObject(args, "url", url);
    for (int i = 0; i < rounds + 3; i++) {
        int64_t t0 = rg_now_us();
        int load_rc = 0;
        if (page_goto(pool_lease_conn(l), pool_lease_session(l), url, 20000, &load_rc) < 0 ||
            load_rc < 0)
            out->errors++;
        double raw = (double)(rg_now_us() - t0) / 1000.0;
        cJSON *rep = NULL;
        double ms = 0;
        gwc_renew_conn(&fd, i);
        out->errors += gwc_call(gwc_auth, &fd, sid, m, &rep, NULL, &ms) < 0;
        if (i >= 3) {
            out->raw[i - 3] = raw;
            out->gw[i - 3] = ms;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(rep, "ms");
            out->inside[i - 3] = cJSON_IsNumber(v) ? v->valuedouble : 0;
        }
        cJSON_Delete(rep);
    }
    cJSON_Delete(m);
    close(fd);
    gwc_close_session(sid);
    pool_release(l);
    pool_free(p);
    rmdir(run_dir);
    return 0;
}

struct create_result {
    int rounds, errors;
    double *t;
};

/* session.create with no URL at an agent's pace: timed, closed, a pause. */
static int run_create(struct create_result *out)
{
    out->rounds = quick ? 3 : 10;
    out->t = calloc((size_t)out->rounds, sizeof *out->t);
    if (!out->t)
        return -1;
    for (int i = 0; i < out->rounds; i++) {
        rg_sleep_ms(CREATE_GAP_MS);
        char sid[64];
        int64_t t0 = rg_now_us();
        int rc = gwc_create(NULL, sid);
        out->t[i] = (double)(rg_now_us() - t0) / 1000.0;
        if (rc < 0) {
            out->errors++;
            continue;
        }
        gwc_close_session(sid);
    }
    return out->errors == out->rounds ? -1 : 0;
}

struct act_times {
    int n, failed;
    char counted[32], ref[64];
    double *t;
};

struct click_result {
    struct act_times click, fill, press;
};

/* The text of the element css in the session, into out ("0" when unknown). */
static void read_text(int *fd, const char *sid, const char *css, char *out, size_t len)
{
    cJSON *args, *m = gwc_op_new("read", &args), *rep = NULL;
    cJSON_AddStringToObject(args, "target", css);
    snprintf(out, len, "0");
    if (gwc_call(gwc_auth, fd, sid, m, &rep, NULL, NULL) == 0 && gwc_result_str(rep, "value"))
        snprintf(out, len, "%s", gwc_result_str(rep, "value"));
    cJSON_Delete(rep);
    cJSON_Delete(m);
}

/* m, 10 warm-ups then n timed; the page's count from css afterwards. */
static void run_times(int *fd, const char *sid, const cJSON *m, int n, const char *css,
                      struct act_times *out)
{
    out->n = n;
    out->t = calloc((size_t)n, sizeof *out->t);
    for (int i = 0; i < 10 + n; i++) {
        double ms = 0;
        gwc_renew_conn(fd, i);
        if (gwc_call(gwc_auth, fd, sid, m, NULL, NULL, &ms) < 0)
            out->failed++;
        if (i >= 10)
            out->t[i - 10] = ms;
        if (getenv("RG_CLICK_DUMP"))
            fprintf(stderr, "%s %d %.3f %.3f\n", css, i, rg_now_us() / 1000.0, ms);
    }
    read_text(fd, sid, css, out->counted, sizeof out->counted);
}

static int run_click(const char *url, struct click_result *out)
{
    int clicks = n_clicks ? n_clicks : quick ? 30 : 200;
    char sid[64];
    char *text = NULL;
    int fd = http_connect(stack_port(gwc_st));
    if (gwc_create(url, sid) < 0 || gwc_observe(&fd, sid, 0, &text, NULL, NULL) < 0 ||
        gwc_find_ref(text, "button \"Target\"", out->click.ref, sizeof out->click.ref) < 0 ||
        gwc_find_ref(text, "textbox \"Field\"", out->fill.ref, sizeof out->fill.ref) < 0) {
        fprintf(stderr, "gateway: click: no session, no observe or no ref for the target\n");
        free(text);
        close(fd);
        return -1;
    }
    free(text);
    cJSON *args, *m = gwc_op_new("click", &args);
    cJSON_AddStringToObject(args, "target", out->click.ref);
    run_times(&fd, sid, m, clicks, "css:#count", &out->click);
    cJSON_Delete(m);
    snprintf(out->press.ref, sizeof out->press.ref, "%s", out->fill.ref);
    m = gwc_op_new("fill", &args);
    cJSON_AddStringToObject(args, "target", out->fill.ref);
    cJSON_AddStringToObject(args, "value", "hello");
    run_times(&fd, sid, m, clicks, "css:#fills", &out->fill);
    cJSON_Delete(m);
    m = gwc_op_new("press", &args);
    cJSON_AddStringToObject(args, "target", out->press.ref);
    cJSON_AddStringToObject(args, "key", "Enter");
    run_times(&fd, sid, m, clicks, "css:#presses", &out->press);
    cJSON_Delete(m);
    close(fd);
    gwc_close_session(sid);
    return 0;
}

struct observe_result {
    int runs, truncated, refs;
    double first[MAX_RUNS], second[MAX_RUNS], added[MAX_RUNS];
    size_t bytes;
};

/*
 * observe on bench/pages/controls.html through nginx, with the stack's
 * registry (Redis) and its default cap (REFGATE_REGISTRY_MAX, 2,000 refs),
 * as a user meets it: per run a new session on the page, the first observe,
 * a second on the unchanged page, and a third after one item was added
 * (BENCH_ADD_ITEM_JS, by an eval). bench/observe.c measures the same below
 * the gateway, with the cap raised so the page is not truncated.
 */
static int run_observe(const char *url, struct observe_result *out)
{
    out->runs = quick ? 1 : 5;
    for (int i = 0; i < out->runs; i++) {
        char sid[64];
        int fd = http_connect(stack_port(gwc_st));
        cJSON *m = gwc_op_new("observe", NULL), *rep = NULL;
        int rc = gwc_create(url, sid);
        if (rc == 0)
            rc = gwc_call(gwc_auth, &fd, sid, m, &rep, NULL, &out->first[i]);
        if (rc == 0) {
            const char *t = gwc_result_str(rep, "text");
            const cJSON *tr = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(rep, "result"), "truncated");
            const cJSON *refs = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rep, "result"),
                                                 "counts"),
                "refs");
            out->bytes = t ? strlen(t) : 0;
            out->truncated = cJSON_IsTrue(tr);
            out->refs = cJSON_IsNumber(refs) ? refs->valueint : 0;
            cJSON_Delete(rep);
            rc = gwc_call(gwc_auth, &fd, sid, m, NULL, NULL, &out->second[i]);
        }
        if (rc == 0) {
            cJSON *args, *ev = gwc_op_new("eval", &args);
            cJSON_AddStringToObject(args, "expression", BENCH_ADD_ITEM_JS);
            rc = gwc_call(gwc_auth, &fd, sid, ev, NULL, NULL, NULL);
            cJSON_Delete(ev);
        }
        if (rc == 0)
            rc = gwc_call(gwc_auth, &fd, sid, m, NULL, NULL, &out->added[i]);
        cJSON_Delete(m);
        close(fd);
        if (rc < 0) {
            fprintf(stderr, "gateway: observe: run %d failed\n", i);
            return -1;
        }
        gwc_close_session(sid);
    }
    return 0;
}

enum { STEP_NAVIGATE, STEP_OBSERVE, STEP_CLICK, STEP_FILL, STEP_DIFF, STEPS };
static const char *const step_names[STEPS] = {"navigate", "observe", "click", "fill",
                                              "observe_diff"};

struct loop_result {
    int loops, ok, failed;
    double *total, *step[STEPS];
    size_t reply_bytes, observe_bytes, diff_bytes;
};

/* One agent loop on the session; 0 when every step succeeded and the diff shows the note. */
static int loop_once(int *fd, const char *sid, const char *url, double *t, size_t *reply_bytes,
                     size_t *observe_bytes, size_t *diff_bytes)
{
    char note[64], email[64];
    char *text = NULL, *diff = NULL;
    size_t b = 0;
    int rc = -1;
    *reply_bytes = 0;
    cJSON *args, *m = gwc_op_new("navigate", &args);
    cJSON_AddStringToObject(args, "url", url);
    int nav = gwc_call(gwc_auth, fd, sid, m, NULL, &b, &t[STEP_NAVIGATE]);
    cJSON_Delete(m);
    *reply_bytes += b;
    if (nav < 0 || gwc_observe(fd, sid, 0, &text, &b, &t[STEP_OBSERVE]) < 0)
        goto out;
    *reply_bytes += b;
    *observe_bytes = strlen(text);
    if (gwc_find_ref(text, "button \"Add a delivery note\"", note, sizeof note) < 0 ||
        gwc_find_ref(text, "textbox \"Email address\"", email, sizeof email) < 0) {
        fprintf(stderr, "gateway: loop: the refs are not in the outline\n");
        goto out;
    }
    m = gwc_op_new("click", &args);
    cJSON_AddStringToObject(args, "target", note);
    int c = gwc_call(gwc_auth, fd, sid, m, NULL, &b, &t[STEP_CLICK]);
    cJSON_Delete(m);
    *reply_bytes += b;
    if (c < 0)
        goto out;
    m = gwc_op_new("fill", &args);
    cJSON_AddStringToObject(args, "target", email);
    cJSON_AddStringToObject(args, "value", "agent@example.com");
    int f = gwc_call(gwc_auth, fd, sid, m, NULL, &b, &t[STEP_FILL]);
    cJSON_Delete(m);
    *reply_bytes += b;
    if (f < 0 || gwc_observe(fd, sid, 1, &diff, &b, &t[STEP_DIFF]) < 0)
        goto out;
    *reply_bytes += b;
    *diff_bytes = strlen(diff);
    rc = strstr(diff, "Note for the driver") ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "gateway: loop: the diff does not show the note: %.200s\n", diff);
out:
    free(text);
    free(diff);
    return rc;
}

static int run_loop(const char *url, struct loop_result *out)
{
    int loops = quick ? 5 : 20;
    char sid[64];
    if (gwc_create(NULL, sid) < 0) {
        fprintf(stderr, "gateway: loop: no session\n");
        return -1;
    }
    int fd = http_connect(stack_port(gwc_st));
    out->loops = loops;
    out->total = calloc((size_t)loops, sizeof *out->total);
    for (int s = 0; s < STEPS; s++)
        out->step[s] = calloc((size_t)loops, sizeof *out->step[s]);
    for (int i = 0; i < loops + 1; i++) {
        double t[STEPS] = {0};
        size_t rb = 0, ob = 0, db = 0;
        int rc = loop_once(&fd, sid, url, t, &rb, &ob, &db);
        if (i == 0)
            continue; /* warm-up */
        out->ok += rc == 0;
        out->failed += rc < 0;
        double sum = 0;
        for (int s = 0; s < STEPS; s++) {
            out->step[s][i - 1] = t[s];
            sum += t[s];
        }
        out->total[i - 1] = sum;
        out->reply_bytes = rb;
        out->observe_bytes = ob;
        out->diff_bytes = db;
    }
    close(fd);
    gwc_close_session(sid);
    return 0;
}

/* One client thread of the parallel run: its own session and connection. */
struct driver {
    char sid[64];
    char ref[64];
    const char *url; /* the page a new session opens (parallel run) */
    const char *who; /* the Authorization header line; NULL: acme's */
    const cJSON *cmd;
    int pace_us; /* at least this long between commands; 0: as fast as it can */
    int n, cap, errors;
    double *lat;
    int64_t until;
};

static void *drive(void *arg)
{
    struct driver *d = arg;
    int fd = http_connect(stack_port(gwc_st));
    while (rg_now_ms() < d->until && d->n < d->cap) {
        gwc_renew_conn(&fd, d->n);
        int64_t t0 = rg_now_us();
        double ms = 0;
        int rc = gwc_call(d->who ? d->who : gwc_auth, &fd, d->sid, d->cmd, NULL, NULL, &ms);
        d->lat[d->n++] = ms;
        d->errors += rc < 0;
        int64_t spent = rg_now_us() - t0;
        if (d->pace_us > spent)
            usleep((useconds_t)(d->pace_us - spent));
    }
    close(fd);
    return NULL;
}

/*
 * Thread: opens one session of the parallel run on d->url: d->sid gets the
 * session, d->ref the ref of "Add one", d->lat its latency buffer. d->lat
 * stays NULL on failure.
 */
static void *open_driver(void *arg)
{
    struct driver *d = arg;
    char *text = NULL;
    int fd = http_connect(stack_port(gwc_st));
    if (gwc_create(d->url, d->sid) == 0 && gwc_observe(&fd, d->sid, 0, &text, NULL, NULL) == 0 &&
        gwc_find_ref(text, "button \"Add one\"", d->ref, sizeof d->ref) == 0) {
        d->cap = 400000;
        d->lat = calloc((size_t)d->cap, sizeof *d->lat);
    }
    free(text);
    close(fd);
    return NULL;
}

struct level_run {
    int commands, errors;
    double seconds, per_s, p50, p99, cpu_ms_per_command;
    double chromium_cpu_ms_per_command; /* the browsers' trees, over the same run */
};

struct level {
    int sessions;
    struct level_run read, click;
    long chromium_pss_kib, workers_pss_kib;
    int procs;
};

/* Every driver in d[0..n) sends its own cmd for secs seconds; the figures into out. */
static void run_level(struct driver *d, int n, const cJSON *const *cmds, int secs,
                      struct level_run *out)
{
    pthread_t th[MAX_SESSIONS];
    double cpu0 = workers_cpu_s(), ch0 = chromium_cpu_s();
    int64_t t0 = rg_now_ms();
    for (int i = 0; i < n; i++) {
        d[i].n = d[i].errors = 0;
        d[i].cmd = cmds[i];
        d[i].until = t0 + secs * 1000;
        pthread_create(&th[i], NULL, drive, &d[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    out->seconds = (double)(rg_now_ms() - t0) / 1000.0;
    double cpu1 = workers_cpu_s(), ch1 = chromium_cpu_s();
    int total = 0;
    out->errors = 0;
    for (int i = 0; i < n; i++)
        total += d[i].n, out->errors += d[i].errors;
    double *all = calloc((size_t)total + 1, sizeof *all);
    int k = 0;
    for (int i = 0; i < n; i++) {
        memcpy(all + k, d[i].lat, (size_t)d[i].n * sizeof *all);
        k += d[i].n;
    }
    out->commands = total;
    out->per_s = total / out->seconds;
    out->p50 = gwc_pct(all, total, 0.5);
    out->p99 = gwc_pct(all, total, 0.99);
    out->cpu_ms_per_command = total ? (cpu1 - cpu0) * 1000.0 / total : 0;
    out->chromium_cpu_ms_per_command = total ? (ch1 - ch0) * 1000.0 / total : 0;
    free(all);
}

static void print_level_run(const char *key, const struct level_run *r)
{
    printf("\"%s\":{\"commands\":%d,\"errors\":%d,\"seconds\":%.2f,\"per_s\":%.1f,"
           "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"worker_cpu_ms_per_command\":%.3f,"
           "\"chromium_cpu_ms_per_command\":%.3f}",
           key, r->commands, r->errors, r->seconds, r->per_s, r->p50, r->p99,
           r->cpu_ms_per_command, r->chromium_cpu_ms_per_command);
}

struct parallel_result {
    int n_levels, secs;
    struct level levels[MAX_LEVELS];
    long base_chromium_pss_kib, base_workers_pss_kib;
};

static int run_parallel(const char *url, struct parallel_result *out)
{
    static struct driver d[MAX_SESSIONS];
    int procs;
    rg_sleep_ms(2000); /* the closed sessions' renderers exit */
    workers_pss(&out->base_chromium_pss_kib, &out->base_workers_pss_kib, &procs);
    fprintf(stderr, "gateway: no session live: %d processes below the workers, PSS %.1f MiB\n",
            procs, out->base_chromium_pss_kib / 1024.0);
    cJSON *read = gwc_op_new("read", NULL);
    cJSON *clicks[MAX_SESSIONS];
    const cJSON *reads[MAX_SESSIONS];
    int have = 0;
    int rc = 0;
    for (int li = 0; li < out->n_levels && rc == 0; li++) {
        struct level *lv = &out->levels[li];
        int n = lv->sessions;
        /* The new sessions open OPEN_AT_ONCE at a time, each on a thread of its own. */
        pthread_t th[MAX_SESSIONS];
        for (int i = have; i < n; i++) {
            memset(&d[i], 0, sizeof d[i]);
            d[i].url = url;
            pthread_create(&th[i], NULL, open_driver, &d[i]);
            if ((i - have) % OPEN_AT_ONCE == OPEN_AT_ONCE - 1 || i == n - 1)
                for (int j = i - (i - have) % OPEN_AT_ONCE; j <= i; j++)
                    pthread_join(th[j], NULL);
        }
        for (int i = have; i < n; i++) {
            clicks[i] = NULL;
            if (!d[i].lat) {
                fprintf(stderr, "gateway: parallel: session %d did not start\n", i);
                rc = -1;
                continue;
            }
            cJSON *args;
            clicks[i] = gwc_op_new("click", &args);
            cJSON_AddStringToObject(args, "target", d[i].ref);
            reads[i] = read;
        }
        have = n;
        if (rc < 0)
            break;
        run_level(d, n, reads, out->secs, &lv->read);
        run_level(d, n, (const cJSON *const *)clicks, out->secs, &lv->click);
        rg_sleep_ms(1000);
        workers_pss(&lv->chromium_pss_kib, &lv->workers_pss_kib, &lv->procs);
        fprintf(stderr,
                "gateway: %d sessions: read %.0f/s p99 %.1f ms, click %.0f/s p99 %.1f ms, "
                "Chromium PSS %.1f MiB in %d processes\n",
                n, lv->read.per_s, lv->read.p99, lv->click.per_s, lv->click.p99,
                lv->chromium_pss_kib / 1024.0, lv->procs);
    }
    for (int i = 0; i < have; i++) {
        gwc_close_session(d[i].sid);
        cJSON_Delete(clicks[i]);
        free(d[i].lat);
    }
    cJSON_Delete(read);
    return rc;
}

struct fairness_result {
    double before, during;
    int noisy_sent, noisy_refused, secs;
};

/* A quiet tenant's p50 alone, then while a noisy one sends at ten times its rate (20/s). */
static int run_fairness(const char *url, struct fairness_result *out)
{
    char quiet_h[160], noisy_h[160];
    out->secs = quick ? 2 : 10;
    if (bench_tenant("quiet", 1000, quiet_h, sizeof quiet_h) < 0 ||
        bench_tenant("noisy", 20, noisy_h, sizeof noisy_h) < 0) {
        fprintf(stderr, "gateway: cannot make the fairness tenants\n");
        return -1;
    }
    cJSON *read = gwc_op_new("read", NULL);
    struct driver q = {.who = quiet_h, .pace_us = 20000, .cap = 100000, .cmd = read};
    q.lat = calloc((size_t)q.cap, sizeof *q.lat);
    struct driver nz[4];
    memset(nz, 0, sizeof nz);
    int rc = gwc_create_as(quiet_h, url, q.sid);
    for (int i = 0; i < 4 && rc == 0; i++) {
        nz[i].who = noisy_h;
        nz[i].cmd = read;
        nz[i].pace_us = 20000; /* 4 x 50 = 200 a second */
        nz[i].cap = 100000;
        nz[i].lat = calloc((size_t)nz[i].cap, sizeof *nz[i].lat);
        rc = gwc_create_as(noisy_h, url, nz[i].sid);
    }
    if (rc == 0) {
        q.until = rg_now_ms() + out->secs * 1000;
        drive(&q);
        out->before = gwc_pct(q.lat, q.n, 0.5);
        q.n = 0;
        int64_t end = rg_now_ms() + out->secs * 1000;
        q.until = end;
        pthread_t nth[4];
        for (int i = 0; i < 4; i++) {
            nz[i].until = end;
            pthread_create(&nth[i], NULL, drive, &nz[i]);
        }
        drive(&q);
        for (int i = 0; i < 4; i++)
            pthread_join(nth[i], NULL);
        out->during = gwc_pct(q.lat, q.n, 0.5);
        for (int i = 0; i < 4; i++) {
            out->noisy_sent += nz[i].n;
            out->noisy_refused += nz[i].errors;
        }
    }
    for (int i = 0; i < 4; i++)
        free(nz[i].lat);
    free(q.lat);
    cJSON_Delete(read);
    return rc;
}

static void usage(void)
{
    fprintf(stderr, "usage: gateway [--quick] [--only SECTION[,SECTION...]] "
                    "[--skip SECTION[,SECTION...]] [--levels N[,N...]] [--secs S] [--clicks N]\n"
                    "  sections: floor, click, observe, navigate, create, loop, parallel, "
                    "fairness\n");
    exit(2);
}

/* 1 when name is one of the comma-separated list (NULL: every name). */
static int listed(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, name, n))
            return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

/* --only and --skip: the sections to run (NULL: every one) and to leave out (NULL: none). */
static const char *only, *skip;

static int wanted(const char *name)
{
    return listed(only, name) && !(skip && listed(skip, name));
}

static void print_floor(const struct floor_result *fl)
{
    printf(",\"floor\":{\"rounds\":%d,\"errors\":%d,\"raw_p50_ms\":%.3f,\"raw_p99_ms\":%.3f,"
           "\"gateway_p50_ms\":%.3f,\"gateway_p99_ms\":%.3f,\"added_p50_ms\":%.3f,"
           "\"in_gateway_p50_ms\":%.3f}",
           fl->rounds, fl->errors, fl->raw_p50, fl->raw_p99, fl->gw_p50, fl->gw_p99,
           fl->gw_p50 - fl->raw_p50, fl->inside_p50);
}

/* The n times of a (sorted), as "ms":[...]. */
static void print_samples(const struct act_times *a)
{
    printf(",\"ms\":[");
    for (int i = 0; i < a->n; i++)
        printf("%s%.3f", i ? "," : "", a->t[i]);
    printf("]");
}

static void print_times(const char *key, struct act_times *a)
{
    if (!a->n)
        return;
    double p50 = gwc_pct(a->t, a->n, 0.5), p99 = gwc_pct(a->t, a->n, 0.99);
    printf(",\"%s\":{\"ref\":\"%s\",\"n\":%d,\"counted\":%s,\"failed\":%d,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f",
           key, a->ref, a->n, a->counted, a->failed, p50, p99, a->t[0], a->t[a->n - 1]);
    print_samples(a);
    printf("}");
}

static void print_click(struct click_result *ck)
{
    const struct act_times *c = &ck->click;
    double c50 = gwc_pct(c->t, c->n, 0.5), c99 = gwc_pct(c->t, c->n, 0.99);
    printf(",\"click\":{\"ref\":\"%s\",\"clicks\":%d,\"counted\":%s,\"failed\":%d,"
           "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f",
           c->ref, c->n, c->counted, c->failed, c50, c99, c->t[0], c->t[c->n - 1]);
    print_samples(c);
    print_times("fill", &ck->fill);
    print_times("press", &ck->press);
    printf("}");
}

static void print_observe(struct observe_result *ob)
{
    printf(",\"observe\":{\"page\":\"controls\",\"runs\":%d,\"bytes\":%zu,\"tokens\":%zu,"
           "\"refs\":%d,\"truncated\":%s,",
           ob->runs, ob->bytes, ob->bytes / 4, ob->refs, ob->truncated ? "true" : "false");
    gwc_print_mmm("first_ms", ob->first, ob->runs);
    printf(",");
    gwc_print_mmm("second_ms", ob->second, ob->runs);
    printf(",");
    gwc_print_mmm("added_ms", ob->added, ob->runs);
    printf("}");
}

static void print_navigate(const char *key, const char *page, struct nav_result *nv)
{
    printf(",\"%s\":{\"page\":\"%s\",\"rounds\":%d,\"errors\":%d,", key, page, nv->rounds,
           nv->errors);
    gwc_print_mmm("raw_ms", nv->raw, nv->rounds);
    printf(",");
    gwc_print_mmm("gateway_ms", nv->gw, nv->rounds);
    printf(",");
    gwc_print_mmm("in_worker_ms", nv->inside, nv->rounds);
    printf(",\"added_p50_ms\":%.3f}",
           gwc_pct(nv->gw, nv->rounds, 0.5) - gwc_pct(nv->raw, nv->rounds, 0.5));
}

static void print_create(struct create_result *cr)
{
    printf(",\"create\":{\"rounds\":%d,\"errors\":%d,\"gap_ms\":%d,", cr->rounds, cr->errors,
           CREATE_GAP_MS);
    gwc_print_mmm("create_ms", cr->t, cr->rounds);
    printf("}");
}

static void print_loop(struct loop_result *lp)
{
    printf(",\"loop\":{\"loops\":%d,\"ok\":%d,\"failed\":%d,\"reply_bytes\":%zu,"
           "\"observe_bytes\":%zu,\"diff_bytes\":%zu,",
           lp->loops, lp->ok, lp->failed, lp->reply_bytes, lp->observe_bytes, lp->diff_bytes);
    gwc_print_mmm("total_ms", lp->total, lp->loops);
    printf(",\"steps\":{");
    for (int s = 0; s < STEPS; s++) {
        printf("%s", s ? "," : "");
        gwc_print_mmm(step_names[s], lp->step[s], lp->loops);
    }
    printf("}}");
}

static void print_parallel(const struct parallel_result *par)
{
    printf(",\"parallel\":{\"workers\":%d,\"seconds\":%d,\"base_chromium_pss_kib\":%ld,"
           "\"base_workers_pss_kib\":%ld,\"levels\":[",
           WORKERS, par->secs, par->base_chromium_pss_kib, par->base_workers_pss_kib);
    for (int i = 0; i < par->n_levels; i++) {
        const struct level *lv = &par->levels[i];
        printf("%s{\"sessions\":%d,", i ? "," : "", lv->sessions);
        print_level_run("read", &lv->read);
        printf(",");
        print_level_run("click", &lv->click);
        printf(",\"chromium_pss_kib\":%ld,\"workers_pss_kib\":%ld,\"processes\":%d,"
               "\"chromium_pss_mib_per_session\":%.2f}",
               lv->chromium_pss_kib, lv->workers_pss_kib, lv->procs,
               (lv->chromium_pss_kib - par->base_chromium_pss_kib) / 1024.0 / lv->sessions);
    }
    printf("]}");
}

static void print_fairness(const struct fairness_result *fa)
{
    printf(",\"fairness\":{\"quiet_p50_before_ms\":%.3f,\"quiet_p50_during_ms\":%.3f,"
           "\"factor\":%.2f,\"noisy_sent\":%d,\"noisy_refused\":%d,\"seconds\":%d}",
           fa->before, fa->during, fa->before > 0 ? fa->during / fa->before : 0, fa->noisy_sent,
           fa->noisy_refused, fa->secs);
}

int main(int argc, char **argv)
{
    static struct parallel_result par;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--skip") && i + 1 < argc) {
            skip = argv[++i];
        } else if (!strcmp(argv[i], "--levels") && i + 1 < argc) {
            par.n_levels = 0;
            for (char *p = argv[++i]; *p && par.n_levels < MAX_LEVELS;) {
                int n = (int)strtol(p, &p, 10);
                if (n < 1 || n > MAX_SESSIONS || (*p && *p != ','))
                    usage();
                par.levels[par.n_levels++].sessions = n;
                p += *p == ',';
            }
        } else if (!strcmp(argv[i], "--clicks") && i + 1 < argc) {
            n_clicks = atoi(argv[++i]);
            if (n_clicks < 1 || n_clicks > 100000)
                usage();
        } else if (!strcmp(argv[i], "--secs") && i + 1 < argc) {
            par.secs = atoi(argv[++i]);
            if (par.secs < 1)
                usage();
        } else {
            usage();
        }
    }
    if (!par.n_levels) {
        static const int all[] = {8, 16, 32};
        par.n_levels = quick ? 1 : 3;
        for (int i = 0; i < par.n_levels; i++)
            par.levels[i].sessions = all[i];
    }
    if (!par.secs)
        par.secs = quick ? 2 : 10;

    httpd *pages = httpd_start("bench/pages");
    /* the React page of bench/loop.c: a navigation that loads two scripts */
    httpd *react = httpd_start("tests/fixtures/react");
    const char *env[] = {"REFGATE_LOG_LEVEL=warn", "REFGATE_CONTEXTS_PER_BROWSER=40",
                         "REFGATE_GATEWAY_THREADS=48", NULL};
    stack *st = pages && react ? stack_start(WORKERS, env) : NULL;
    if (!st) {
        fprintf(stderr, "gateway: cannot start the stack\n");
        return 1;
    }
    gwc_init(st, "gateway");
    char floor_url[256], click_url[256], form_url[256], controls_url[256], react_url[256];
    httpd_url(react, "/todo.html", react_url, sizeof react_url);
    httpd_url(pages, "/floor.html", floor_url, sizeof floor_url);
    httpd_url(pages, "/click.html", click_url, sizeof click_url);
    httpd_url(pages, "/form.html", form_url, sizeof form_url);
    httpd_url(pages, "/controls.html", controls_url, sizeof controls_url);

    struct floor_result fl = {0};
    struct click_result ck = {0};
    struct loop_result lp = {0};
    struct nav_result nv = {0}, nr = {0};
    struct create_result cr = {0};
    static struct observe_result ob;
    struct fairness_result fa = {0};
    int rc = 0;
    int64_t t0 = rg_now_ms();
    if (wanted("floor") && (rc = run_floor(floor_url, &fl)) == 0)
        fprintf(stderr, "gateway: floor: raw %.3f ms, through nginx %.3f ms (%lld ms)\n",
                fl.raw_p50, fl.gw_p50, (long long)(rg_now_ms() - t0));
    t0 = rg_now_ms();
    if (rc == 0 && wanted("click") && (rc = run_click(click_url, &ck)) == 0)
        fprintf(stderr, "gateway: click: p50 %.2f ms, fill %.2f ms, press %.2f ms (%lld ms)\n",
                gwc_pct(ck.click.t, ck.click.n, 0.5), gwc_pct(ck.fill.t, ck.fill.n, 0.5),
                gwc_pct(ck.press.t, ck.press.n, 0.5), (long long)(rg_now_ms() - t0));
    t0 = rg_now_ms();
    if (rc == 0 && wanted("observe") && (rc = run_observe(controls_url, &ob)) == 0)
        fprintf(stderr,
                "gateway: observe: first %.1f ms, second %.1f ms, added %.1f ms (%lld ms)\n",
                ob.first[0], ob.second[0], ob.added[0], (long long)(rg_now_ms() - t0));
    t0 = rg_now_ms();
    if (rc == 0 && wanted("navigate") && (rc = run_navigate(form_url, &nv)) == 0 &&
        (rc = run_navigate(react_url, &nr)) == 0)
        fprintf(stderr,
                "gateway: navigate: form: raw %.1f ms, through nginx %.1f ms; React: raw %.1f ms, "
                "through nginx %.1f ms (%lld ms)\n",
                gwc_pct(nv.raw, nv.rounds, 0.5), gwc_pct(nv.gw, nv.rounds, 0.5),
                gwc_pct(nr.raw, nr.rounds, 0.5), gwc_pct(nr.gw, nr.rounds, 0.5),
                (long long)(rg_now_ms() - t0));
    t0 = rg_now_ms();
    if (rc == 0 && wanted("create") && (rc = run_create(&cr)) == 0)
        fprintf(stderr, "gateway: create: p50 %.1f ms, %d of %d failed (%lld ms)\n",
                gwc_pct(cr.t, cr.rounds, 0.5), cr.errors, cr.rounds, (long long)(rg_now_ms() - t0));
    t0 = rg_now_ms();
    if (rc == 0 && wanted("loop") && (rc = run_loop(form_url, &lp)) == 0)
        fprintf(stderr, "gateway: loop: %.1f ms per loop, %d of %d ok (%lld ms)\n",
                gwc_pct(lp.total, lp.loops, 0.5), lp.ok, lp.loops, (long long)(rg_now_ms() - t0));
    t0 = rg_now_ms();
    if (rc == 0 && wanted("parallel") && (rc = run_parallel(form_url, &par)) == 0)
        fprintf(stderr, "gateway: parallel (%lld ms)\n", (long long)(rg_now_ms() - t0));
    t0 = rg_now_ms();
    if (rc == 0 && wanted("fairness") && (rc = run_fairness(floor_url, &fa)) == 0)
        fprintf(stderr, "gateway: fairness (%lld ms)\n", (long long)(rg_now_ms() - t0));
    if (rc < 0) {
        fprintf(stderr, "gateway: stopped early; the stack's logs are in %s\n", stack_dir(st));
        stack_stop(st);
        httpd_stop(pages);
        httpd_stop(react);
        return 1;
    }

    char product[128] = "unknown";
    if (fl.product[0])
        snprintf(product, sizeof product, "%s", fl.product);
    printf("{\"chromium\":\"%s\",\"workers\":%d,\"quick\":%s", product, WORKERS,
           quick ? "true" : "false");
    if (wanted("floor"))
        print_floor(&fl);
    if (wanted("click"))
        print_click(&ck);
    if (wanted("observe"))
        print_observe(&ob);
    if (wanted("navigate")) {
        print_navigate("navigate", "form", &nv);
        print_navigate("navigate_react", "react", &nr);
    }
    if (wanted("create"))
        print_create(&cr);
    if (wanted("loop"))
        print_loop(&lp);
    if (wanted("parallel"))
        print_parallel(&par);
    if (wanted("fairness"))
        print_fairness(&fa);
    printf("}\n");

    free(ck.click.t);
    free(ck.fill.t);
    free(ck.press.t);
    free(nv.raw);
    free(nv.gw);
    free(nv.inside);
    free(nr.raw);
    free(nr.gw);
    free(nr.inside);
    free(cr.t);
    free(lp.total);
    for (int s = 0; s < STEPS; s++)
        free(lp.step[s]);
    stack_stop(st);
    httpd_stop(pages);
    httpd_stop(react);
    return 0;
}
