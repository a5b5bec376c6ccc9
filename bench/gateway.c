/*
 * gateway.c - what the gateway costs on top of the browser, in one run:
 *
 *   floor     a trivial browser command (`read`: the text of a one-line
 *             page, one Runtime.evaluate) through nginx, FastCGI, the
 *             gateway and back, msgpack on a kept-alive connection, against
 *             a Runtime.evaluate of the same text sent straight down the
 *             DevTools pipe
 *   parallel  8 sessions driven at once from 8 client threads through
 *             nginx with 2 workers: commands per second, p50 and p99, and
 *             the CPU the worker processes themselves (not Chromium) used
 *             per command
 *
 * The whole stack is started here (tests/support/stack.c). Prints one JSON
 * object. Measures; asserts nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/wire.h"
#include "pool/pool.h"
#include "tests/support/net.h"
#include "tests/support/page.h"
#include "tests/support/support.h"

#define SESSIONS 8

static stack *st;
static char auth[160];
static int quick;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int k = (int)(p * n);
    return n ? v[k < n ? k : n - 1] : 0;
}

/* A command in msgpack on a kept-alive connection; 0 when the reply is ok. */
static int command(int fd, const char *sid, const rg_buf *body, http_resp *r)
{
    char path[96], h[320];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    snprintf(h, sizeof h, "%sContent-Type: application/msgpack\r\n", auth);
    if (http_request_on(fd, "POST", path, h, body->data, body->len, r) < 0)
        return -1;
    return r->status == 200 ? 0 : -1;
}

static int create(const char *url, char *sid)
{
    char body[512], h[320];
    snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", auth);
    http_resp r;
    int rc = http_request(stack_port(st), "POST", "/v1/sessions", h, body, strlen(body), &r);
    cJSON *v = NULL;
    char err[64];
    if (rc == 0 && r.status == 200 && wire_json_decode(r.body.data, r.body.len, &v, err, sizeof err) == 0) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "result"),
                                                          "session");
        snprintf(sid, 64, "%s", cJSON_IsString(s) ? s->valuestring : "");
    } else {
        rc = -1;
    }
    cJSON_Delete(v);
    rg_buf_destroy(&r.body);
    return rc == 0 && sid[0] ? 0 : -1;
}

/* The trivial command: read the page's text (one call into the page, nothing to checkpoint). */
static void read_body(rg_buf *b)
{
    cJSON *m = cJSON_Parse("{\"op\":\"read\"}");
    rg_buf_init(b);
    wire_mp_encode(m, b);
    cJSON_Delete(m);
}

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

struct driver {
    char sid[64];
    int n;
    double *lat;
    int cap;
    int errors;
    int64_t until;
};

static void *drive(void *arg)
{
    struct driver *d = arg;
    int fd = http_connect(stack_port(st));
    rg_buf b;
    read_body(&b);
    while (rg_now_ms() < d->until && d->n < d->cap) {
        http_resp r;
        int64_t t0 = rg_now_us();
        int rc = command(fd, d->sid, &b, &r);
        d->lat[d->n++] = (double)(rg_now_us() - t0) / 1000.0;
        d->errors += rc < 0;
        rg_buf_destroy(&r.body);
        if (rc < 0 && r.status == 0) {
            close(fd);
            fd = http_connect(stack_port(st));
        }
    }
    close(fd);
    rg_buf_destroy(&b);
    return NULL;
}

int main(int argc, char **argv)
{
    quick = argc > 1 && !strcmp(argv[1], "--quick");
    int rounds = quick ? 300 : 2000;
    httpd *pages = httpd_start("bench/pages");
    const char *env[] = {"REFGATE_LOG_LEVEL=warn", "REFGATE_CONTEXTS_PER_BROWSER=16", NULL};
    st = pages ? stack_start(2, env) : NULL;
    if (!st) {
        fprintf(stderr, "gateway: cannot start the stack\n");
        return 1;
    }
    snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", stack_key(st, 0));
    char url[256], sid[64];
    httpd_url(pages, "/floor.html", url, sizeof url);

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
        return 1;
    }
    page_navigate(pool_lease_conn(l), pool_lease_session(l), url);
    double *raw = calloc((size_t)rounds, sizeof *raw);
    for (int i = 0; i < rounds + 50; i++) {
        int64_t t0 = rg_now_us();
        page_eval(pool_lease_conn(l), pool_lease_session(l), "document.body.innerText", NULL, 0);
        if (i >= 50)
            raw[i - 50] = (double)(rg_now_us() - t0) / 1000.0;
    }
    char product[128];
    page_browser_product(pool_lease_conn(l), product, sizeof product);
    pool_release(l);
    pool_free(p);
    rmdir(run_dir);

    /* The same through the whole gateway. */
    if (create(url, sid) < 0) {
        fprintf(stderr, "gateway: cannot create a session\n");
        return 1;
    }
    double *gwl = calloc((size_t)rounds, sizeof *gwl);
    double *inside = calloc((size_t)rounds, sizeof *inside);
    int fd = http_connect(stack_port(st)), errors = 0;
    rg_buf b;
    read_body(&b);
    for (int i = 0; i < rounds + 50; i++) {
        http_resp r;
        int64_t t0 = rg_now_us();
        errors += command(fd, sid, &b, &r) < 0;
        if (i >= 50) {
            gwl[i - 50] = (double)(rg_now_us() - t0) / 1000.0;
            cJSON *v = NULL;
            char err[64];
            if (wire_mp_decode(r.body.data, r.body.len, &v, err, sizeof err) == 0) {
                const cJSON *ms = cJSON_GetObjectItemCaseSensitive(v, "ms");
                inside[i - 50] = cJSON_IsNumber(ms) ? ms->valuedouble : 0;
            }
            cJSON_Delete(v);
        }
        rg_buf_destroy(&r.body);
    }
    close(fd);
    rg_buf_destroy(&b);
    double raw50 = pct(raw, rounds, 0.5), raw99 = pct(raw, rounds, 0.99);
    double gw50 = pct(gwl, rounds, 0.5), gw99 = pct(gwl, rounds, 0.99);

    /* Parallel: 8 sessions, 8 threads. */
    struct driver d[SESSIONS];
    memset(d, 0, sizeof d);
    int secs = quick ? 3 : 10;
    for (int i = 0; i < SESSIONS; i++) {
        if (create(url, d[i].sid) < 0) {
            fprintf(stderr, "gateway: cannot create session %d\n", i);
            return 1;
        }
        d[i].cap = 200000;
        d[i].lat = calloc((size_t)d[i].cap, sizeof *d[i].lat);
    }
    double cpu0 = cpu_s(stack_worker_pid(st, 1)) + cpu_s(stack_worker_pid(st, 2));
    int64_t t0 = rg_now_ms();
    pthread_t th[SESSIONS];
    for (int i = 0; i < SESSIONS; i++) {
        d[i].until = t0 + secs * 1000;
        pthread_create(&th[i], NULL, drive, &d[i]);
    }
    for (int i = 0; i < SESSIONS; i++)
        pthread_join(th[i], NULL);
    double elapsed = (double)(rg_now_ms() - t0) / 1000.0;
    double cpu1 = cpu_s(stack_worker_pid(st, 1)) + cpu_s(stack_worker_pid(st, 2));
    int total = 0, perr = 0;
    for (int i = 0; i < SESSIONS; i++)
        total += d[i].n, perr += d[i].errors;
    double *all = calloc((size_t)total + 1, sizeof *all);
    int k = 0;
    for (int i = 0; i < SESSIONS; i++) {
        memcpy(all + k, d[i].lat, (size_t)d[i].n * sizeof *all);
        k += d[i].n;
        free(d[i].lat);
    }
    printf("{\"chromium\":\"%s\",\"rounds\":%d,\"raw_p50_ms\":%.3f,\"raw_p99_ms\":%.3f,"
           "\"gateway_p50_ms\":%.3f,\"gateway_p99_ms\":%.3f,\"added_p50_ms\":%.3f,"
           "\"in_gateway_p50_ms\":%.3f,"
           "\"errors\":%d,\"parallel\":{\"sessions\":%d,\"workers\":2,\"seconds\":%.1f,"
           "\"commands\":%d,\"errors\":%d,\"per_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
           "\"worker_cpu_ms_per_command\":%.3f}}\n",
           product, rounds, raw50, raw99, gw50, gw99, gw50 - raw50, pct(inside, rounds, 0.5), errors, SESSIONS, elapsed,
           total, perr, total / elapsed, pct(all, total, 0.5), pct(all, total, 0.99),
           total ? (cpu1 - cpu0) * 1000.0 / total : 0);
    free(all);
    free(raw);
    free(gwl);
    free(inside);
    stack_stop(st);
    httpd_stop(pages);
    return 0;
}
