/*
 * oversub.c - more sessions than live contexts, as issue 25 measured it: a
 * stack of its own (tests/support/stack.c: Redis, --workers workers, nginx;
 * the REFGATE_* environment of this process and every --env NAME=VALUE go
 * to the workers), --sessions sessions on a page with a JavaScript counter
 * and a text field, created --create-parallel at a time; then --clients
 * clients pick sessions at random for --duration seconds, each command an
 * observe or a click on the counter (even odds). Then every session is read
 * back: its counter against the clicks that succeeded on it (a page whose
 * counter fell behind was reloaded by a restore: it lost its JavaScript
 * state), and its field against the value typed into it before the run.
 *
 *   oversub [--sessions 48] [--clients 16] [--duration 60] [--workers 2]
 *           [--create-parallel 8] [--env NAME=VALUE]...
 *
 * Also the whole machine's busy CPU time over the random load (/proc/stat),
 * per command and over the commands that restored: what bounds the rate on
 * a saturated machine.
 * Prints the figures as text and one JSON line. Tenant acme's rate limit is
 * out of the way (100,000 a second). Measures; asserts nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/client.h"
#include "tests/support/fixture.h"
#include "tests/support/stats.h"
#include "wire/wire.h"

#define SESSIONS_MAX 1000
#define CLIENTS_MAX 256
#define ENV_MAX 16

static const char counter_html[] =
    "<!doctype html><title>Counter</title>"
    "<label>Note <input id=q></label>"
    "<button id=inc onclick=\"n.textContent=String(+n.textContent+1)\">Increment</button>"
    "<output id=n>0</output>";

static struct {
    int sessions, clients, duration, workers, create_parallel;
    const char *env[ENV_MAX + 4];
    int n_env;
} opt = {48, 16, 60, 2, 8, {NULL}, 0};

/* Busy clock ticks of the whole machine (/proc/stat's cpu line less idle and
   iowait), or -1. */
static long long machine_busy_ticks(void)
{
    FILE *f = fopen("/proc/stat", "r");
    long long v[8] = {0};
    int n = f ? fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    if (n < 8)
        return -1;
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
}

static char sids[SESSIONS_MAX][64];
static atomic_long clicks[SESSIONS_MAX]; /* clicks that succeeded, per session */
static char page_url[256];
static int64_t stop_ms;

/* Errors by code (a small table; under mu). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char code[48];
    long n;
} errs[32];
static int n_errs;
static long restored_replies;

static void count_error(const char *code)
{
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < n_errs && strcmp(errs[i].code, code))
        i++;
    if (i == n_errs && n_errs < 32)
        snprintf(errs[n_errs++].code, sizeof errs[0].code, "%s", code);
    if (i < 32)
        errs[i].n++;
    pthread_mutex_unlock(&mu);
}

static const char *code_of(const cJSON *v)
{
    const cJSON *c =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "error"), "code");
    return cJSON_IsString(c) ? c->valuestring : v ? "unknown" : "no_reply";
}

/* ---- creating ---- */

static atomic_int next_create;
static atomic_int create_failures;

static void *creator(void *arg)
{
    (void)arg;
    int fd = http_connect(stack_port(gwc_st));
    for (int i; (i = atomic_fetch_add(&next_create, 1)) < opt.sessions;) {
        if (gwc_create(page_url, sids[i]) < 0) {
            atomic_fetch_add(&create_failures, 1);
            continue;
        }
        /* As an agent does: read the page, then type a value and not submit
           it (a park keeps the fields of the last observation). */
        int ok;
        cJSON_Delete(gwc_call_json(&fd, sids[i], "{\"op\":\"observe\"}", &ok, NULL, NULL));
        char body[200];
        snprintf(body, sizeof body,
                 "{\"op\":\"fill\",\"args\":{\"target\":\"css:#q\",\"value\":\"note-%d\"}}", i);
        cJSON_Delete(gwc_call_json(&fd, sids[i], body, &ok, NULL, NULL));
        if (!ok)
            atomic_fetch_add(&create_failures, 1);
    }
    close(fd);
    return NULL;
}

/* ---- the random load ---- */

struct client {
    pthread_t t;
    unsigned rng;
    double *lat;
    size_t n, cap;
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    int fd = http_connect(stack_port(gwc_st));
    for (long k = 0; rg_now_ms() < stop_ms; k++) {
        gwc_renew_conn(&fd, (int)k);
        int i = (int)(rand_r(&c->rng) % (unsigned)opt.sessions);
        if (!sids[i][0])
            continue;
        int click = rand_r(&c->rng) & 1;
        const char *body = click ? "{\"op\":\"click\",\"args\":{\"target\":\"css:#inc\"}}"
                                 : "{\"op\":\"observe\"}";
        int ok;
        double ms;
        cJSON *v = gwc_call_json(&fd, sids[i], body, &ok, NULL, &ms);
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 1024;
            c->lat = realloc(c->lat, c->cap * sizeof *c->lat);
        }
        c->lat[c->n++] = ms;
        if (cJSON_GetObjectItemCaseSensitive(v, "restored")) {
            pthread_mutex_lock(&mu);
            restored_replies++;
            pthread_mutex_unlock(&mu);
        }
        if (ok && click)
            atomic_fetch_add(&clicks[i], 1);
        else if (!ok)
            count_error(code_of(v));
        cJSON_Delete(v);
    }
    close(fd);
    return NULL;
}

/* ---- reading back ---- */

static int read_text(int *fd, const char *sid, const char *css, const char *what, char *out,
                     size_t len)
{
    char body[200];
    snprintf(body, sizeof body,
             "{\"op\":\"read\",\"args\":{\"target\":\"css:%s\",\"what\":\"%s\"}}", css, what);
    int ok;
    cJSON *v = gwc_call_json(fd, sid, body, &ok, NULL, NULL);
    const char *s = ok ? gwc_result_str(v, "value") : NULL;
    snprintf(out, len, "%s", s ? s : "");
    cJSON_Delete(v);
    return ok ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: oversub [--sessions N] [--clients N] [--duration S] [--workers N]\n"
                    "               [--create-parallel N] [--env NAME=VALUE]...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (!strcmp(a, "--sessions"))
            opt.sessions = atoi(v);
        else if (!strcmp(a, "--clients"))
            opt.clients = atoi(v);
        else if (!strcmp(a, "--duration"))
            opt.duration = atoi(v);
        else if (!strcmp(a, "--workers"))
            opt.workers = atoi(v);
        else if (!strcmp(a, "--create-parallel"))
            opt.create_parallel = atoi(v);
        else if (!strcmp(a, "--env") && opt.n_env < ENV_MAX && strchr(v, '='))
            opt.env[opt.n_env++] = v;
        else
            usage();
        i++;
    }
    if (opt.sessions < 1 || opt.sessions > SESSIONS_MAX || opt.clients < 1 ||
        opt.clients > CLIENTS_MAX || opt.duration < 1 || opt.workers < 1 ||
        opt.create_parallel < 1 || opt.create_parallel > CLIENTS_MAX)
        usage();

    char docroot[64];
    snprintf(docroot, sizeof docroot, "/tmp/refgate-oversub-%d", (int)getpid());
    mkdir(docroot, 0700);
    char path[128];
    snprintf(path, sizeof path, "%s/counter.html", docroot);
    FILE *f = fopen(path, "w");
    if (!f || fputs(counter_html, f) < 0 || fclose(f) != 0)
        return 1;
    /* Browsers per worker as `make run` has them unless the caller says otherwise. */
    const char **env = opt.env;
    if (!getenv("REFGATE_BROWSERS"))
        env[opt.n_env++] = "REFGATE_BROWSERS=2";
    env[opt.n_env] = NULL;
    fx_stack fx;
    if (fx_stack_start(&fx, "oversub", docroot, opt.workers, env) < 0)
        return 1;
    gwc_init(fx.st, "oversub");
    snprintf(page_url, sizeof page_url, "%s/counter.html", fx.base_url);

    int64_t t0 = rg_now_ms();
    pthread_t cr[CLIENTS_MAX];
    for (int i = 0; i < opt.create_parallel; i++)
        pthread_create(&cr[i], NULL, creator, NULL);
    for (int i = 0; i < opt.create_parallel; i++)
        pthread_join(cr[i], NULL);
    double create_s = (double)(rg_now_ms() - t0) / 1000.0;

    long long busy0 = machine_busy_ticks();
    int64_t load_t0 = rg_now_ms();
    stop_ms = rg_now_ms() + opt.duration * 1000LL;
    struct client *cl = calloc((size_t)opt.clients, sizeof *cl);
    for (int i = 0; i < opt.clients; i++) {
        cl[i].rng = 0x9e3779b9u * (unsigned)(i + 1);
        pthread_create(&cl[i].t, NULL, client_main, &cl[i]);
    }
    size_t total = 0;
    for (int i = 0; i < opt.clients; i++) {
        pthread_join(cl[i].t, NULL);
        total += cl[i].n;
    }
    double *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < opt.clients; i++) {
        memcpy(all + k, cl[i].lat, cl[i].n * sizeof *all);
        k += cl[i].n;
        free(cl[i].lat);
    }
    double p50 = gwc_pct(all, (int)total, 0.5), p99 = gwc_pct(all, (int)total, 0.99);
    /* The whole machine's CPU over the random load: what a command costs
       (workers, browsers, nginx, Redis and this client), whatever the cores. */
    long long busy1 = machine_busy_ticks();
    double load_s = (double)(rg_now_ms() - load_t0) / 1000.0;
    double cpu_s = busy0 >= 0 && busy1 >= busy0 ? (double)(busy1 - busy0) / (double)sysconf(_SC_CLK_TCK)
                                                : -1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);

    /* Read back: counters and fields (these reads restore what is parked). */
    int fd = http_connect(stack_port(gwc_st));
    int lost_js = 0, lost_field = 0, unread = 0;
    for (int i = 0; i < opt.sessions; i++) {
        if (!sids[i][0])
            continue;
        char n[64], q[128], want[64];
        if (read_text(&fd, sids[i], "#n", "text", n, sizeof n) < 0 ||
            read_text(&fd, sids[i], "#q", "value", q, sizeof q) < 0) {
            unread++;
            continue;
        }
        if (atol(n) != atomic_load(&clicks[i]))
            lost_js++;
        snprintf(want, sizeof want, "note-%d", i);
        if (strcmp(q, want))
            lost_field++;
    }
    close(fd);

    long exhausted = 0, errors = 0;
    printf("oversub: %d sessions, %d clients, %d s, %d workers\n", opt.sessions, opt.clients,
           opt.duration, opt.workers);
    printf("  create %d (%d at a time): %.1f s, %d failed\n", opt.sessions, opt.create_parallel,
           create_s, atomic_load(&create_failures));
    printf("  commands %zu (%.1f/s)  p50 %.0f ms  p99 %.0f ms\n", total,
           (double)total / opt.duration, p50, p99);
    for (int i = 0; i < n_errs; i++) {
        printf("  error %s: %ld\n", errs[i].code, errs[i].n);
        errors += errs[i].n;
        if (!strcmp(errs[i].code, "pool_exhausted"))
            exhausted = errs[i].n;
    }
    printf("  replies that said restored: %ld\n", restored_replies);
    if (cpu_s >= 0 && total)
        printf("  machine CPU over the load: %.1f of %.1f core-seconds (%.0f%% of %ld cores), "
               "%.0f ms a command, %.0f ms a command that restored (all of it over those)\n",
               cpu_s, load_s * (double)cores, 100.0 * cpu_s / (load_s * (double)cores), cores,
               1000.0 * cpu_s / (double)total,
               restored_replies ? 1000.0 * cpu_s / (double)restored_replies : 0.0);
    printf("  pages whose counter was reset (JavaScript state lost): %d of %d\n", lost_js,
           opt.sessions - unread);
    printf("  pages whose typed field was lost: %d; not read back: %d\n", lost_field, unread);
    printf("{\"sessions\":%d,\"clients\":%d,\"duration_s\":%d,\"create_s\":%.2f,\"commands\":%zu,"
           "\"per_s\":%.2f,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"errors\":%ld,\"pool_exhausted\":%ld,"
           "\"restored_replies\":%ld,\"lost_js\":%d,\"lost_field\":%d,\"unread\":%d,"
           "\"cpu_s\":%.1f,\"cores\":%ld}\n",
           opt.sessions, opt.clients, opt.duration, create_s, total, (double)total / opt.duration,
           p50, p99, errors, exhausted, restored_replies, lost_js, lost_field, unread, cpu_s,
           cores);
    /* The capacity figures of the worker nginx sends /metrics to. */
    http_resp h;
    if (http_request(stack_port(gwc_st), "GET", "/metrics", NULL, NULL, 0, &h) == 0 &&
        h.status == 200) {
        printf("  /metrics of one worker:\n");
        for (char *line = h.body.data, *end; line && *line; line = end ? end + 1 : NULL) {
            end = strchr(line, '\n');
            int len = end ? (int)(end - line) : (int)strlen(line);
            if (line[0] != '#' &&
                (!strncmp(line, "refgate_pool_", 13) || !strncmp(line, "refgate_sessions_", 17)))
                printf("    %.*s\n", len, line);
        }
    }
    rg_buf_destroy(&h.body);
    free(all);
    free(cl);
    for (int i = 0; i < opt.sessions; i++)
        if (sids[i][0])
            gwc_close_session(sids[i]);
    fx_stack_stop(&fx);
    unlink(path);
    rmdir(docroot);
    return 0;
}
