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
#include "tenant/tenant.h"
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
static int command_as(const char *who, int fd, const char *sid, const rg_buf *body, http_resp *r)
{
    char path[96], h[320];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    snprintf(h, sizeof h, "%sContent-Type: application/msgpack\r\n", who);
    if (http_request_on(fd, "POST", path, h, body->data, body->len, r) < 0)
        return -1;
    return r->status == 200 ? 0 : -1;
}

static int command(int fd, const char *sid, const rg_buf *body, http_resp *r)
{
    return command_as(auth, fd, sid, body, r);
}

static int create_as(const char *who, const char *url, char *sid)
{
    char body[512], h[320];
    snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", who);
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

static int create(const char *url, char *sid)
{
    return create_as(auth, url, sid);
}

/* A tenant for the fairness run; its Authorization header line. */
static int bench_tenant(const char *name, double rate, char *hdr, size_t len)
{
    rg_redis_config rc;
    rg_redis_config_default(&rc);
    rc.url = stack_redis_url(st);
    rg_redis *r;
    char err[256], key[TENANT_KEY_SIZE];
    if (rg_redis_new(&rc, &r, err, sizeof err) < 0)
        return -1;
    tenant t;
    tenant_init(&t);
    snprintf(t.id, sizeof t.id, "%s", name);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.rate = rate;
    t.allow_private = 1;
    int rc2 = tenant_create(r, &t, key, sizeof key, err, sizeof err);
    tenant_destroy(&t);
    rg_redis_free(r);
    snprintf(hdr, len, "Authorization: Bearer %s\r\n", key);
    return rc2;
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
    const char *who;   /* the Authorization header line; NULL: acme's */
    int pace_us;       /* at least this long between commands; 0: as fast as it can */
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
        int rc = command_as(d->who ? d->who : auth, fd, d->sid, &b, &r);
        d->lat[d->n++] = (double)(rg_now_us() - t0) / 1000.0;
        d->errors += rc < 0;
        int64_t spent = rg_now_us() - t0;
        if (d->pace_us > spent)
            usleep((useconds_t)(d->pace_us - spent));
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
    /* Fairness: a quiet tenant's p50 alone, then while a noisy tenant sends
       at ten times its rate (20 a second allowed, 200 sent). */
    char quiet_h[160], noisy_h[160];
    if (bench_tenant("quiet", 1000, quiet_h, sizeof quiet_h) < 0 ||
        bench_tenant("noisy", 20, noisy_h, sizeof noisy_h) < 0) {
        fprintf(stderr, "gateway: cannot make the fairness tenants\n");
        return 1;
    }
    struct driver q = {.who = quiet_h, .pace_us = 20000, .cap = 100000};
    q.lat = calloc((size_t)q.cap, sizeof *q.lat);
    struct driver nz[4];
    memset(nz, 0, sizeof nz);
    if (create_as(quiet_h, url, q.sid) < 0)
        return 1;
    for (int i = 0; i < 4; i++) {
        nz[i].who = noisy_h;
        nz[i].pace_us = 20000; /* 4 x 50 = 200 a second */
        nz[i].cap = 100000;
        nz[i].lat = calloc((size_t)nz[i].cap, sizeof *nz[i].lat);
        if (create_as(noisy_h, url, nz[i].sid) < 0)
            return 1;
    }
    q.until = rg_now_ms() + secs * 1000;
    drive(&q);
    double quiet_before = pct(q.lat, q.n, 0.5);
    q.n = 0;
    int64_t end = rg_now_ms() + secs * 1000;
    q.until = end;
    pthread_t nth[4];
    for (int i = 0; i < 4; i++) {
        nz[i].until = end;
        pthread_create(&nth[i], NULL, drive, &nz[i]);
    }
    drive(&q);
    for (int i = 0; i < 4; i++)
        pthread_join(nth[i], NULL);
    double quiet_during = pct(q.lat, q.n, 0.5);
    int noisy_sent = 0, noisy_refused = 0;
    for (int i = 0; i < 4; i++) {
        noisy_sent += nz[i].n;
        noisy_refused += nz[i].errors;
        free(nz[i].lat);
    }
    free(q.lat);
    printf("{\"fairness\":{\"quiet_p50_before_ms\":%.3f,\"quiet_p50_during_ms\":%.3f,"
           "\"factor\":%.2f,\"noisy_sent\":%d,\"noisy_refused\":%d,\"seconds\":%d},",
           quiet_before, quiet_during, quiet_before > 0 ? quiet_during / quiet_before : 0,
           noisy_sent, noisy_refused, secs);
    printf("\"chromium\":\"%s\",\"rounds\":%d,\"raw_p50_ms\":%.3f,\"raw_p99_ms\":%.3f,"
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
