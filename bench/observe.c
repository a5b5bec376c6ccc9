/*
 * observe.c - what refgate's observe costs on a real page, to compare with
 * Playwright's AI snapshot (bench/peer/observe.mjs) on the same pages.
 *
 * Pages: bench/pages/controls.html (5,000 controls) and every page of
 * ../shared/corpus/pages/, each served over loopback by tests/support/httpd.
 * One pool with one browser; remote hosts fail at once
 * (--host-resolver-rules), so the corpus pages load without waiting on DNS.
 *
 * For each page, `runs` times: lease a fresh context, set a 1280x720
 * viewport (Playwright's default), navigate and wait for the load event, then
 * time reg_observe twice on a new registry:
 *   first   the first observe after load (installs the observer, gives every
 *           element a new ref, builds the outline)
 *   second  again on the unchanged page (every element matched to its ref;
 *           the page answers from its unchanged-page cache when nothing
 *           could have changed, see registry/observer.js)
 *   later   again, LATER_MS (2.5 s) after the second on the still untouched
 *           page: the page-side cache holds for 2 s at most, and an agent
 *           that thinks between two observations gets this figure (not
 *           with --quick)
 * The registry's cap is raised to 20,000 so no page is truncated (the
 * truncated flag says if one was anyway).
 *
 * Prints one JSON object on stdout: per page the median, min and max of
 * both, the outline's size in bytes and tokens (bytes / 4), its lines, the
 * nodes and refs. Runs: 5, or 1 with --quick. Before the pages, one run on a
 * small page (httpd's fixture page for /warmup) warms the browser up and is
 * not counted (the peer does the same). Measures; asserts nothing.
 *
 * Usage: observe [--quick] [--runs N] [--pages DIR] [--corpus DIR] [PAGE...]
 *   PAGE is "controls" or a file name in the corpus; default: all of them.
 *   Run from the repository root (the directories' defaults are relative).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool/pool.h"
#include "registry/registry.h"
#include "tests/support/page.h"
#include "tests/support/support.h"

#define MAX_RUNS 50
#define MAX_PAGES 256
#define REGISTRY_MAX 20000
/* The wait before the third observe: past the observer's 2 s cache (CACHE_MS). */
#define LATER_MS 2500

/* LATER_MS, or 0 with --quick: no third observe. */
static int later_wait_ms = LATER_MS;

struct result {
    double first[MAX_RUNS], second[MAX_RUNS], later[MAX_RUNS];
    int runs;
    size_t bytes, lines, nodes, refs;
    int truncated;
    char error[160];
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double s[MAX_RUNS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double vmin(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static double vmax(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/*
 * One run: a fresh context, the page loaded, two observes timed. Returns 0,
 * or a negative RG_E* with a sentence in r->error.
 */
static int run_once(pool *p, const char *url, const reg_config *rcfg, struct result *r,
                    double *first, double *second, double *later)
{
    pool_lease *l;
    int rc = pool_acquire(p, 30000, &l, NULL);
    if (rc < 0) {
        snprintf(r->error, sizeof r->error, "lease: %s", rg_err_code(rc));
        return rc;
    }
    /* The page's isolated world, as a session makes it (Runtime events follow its context). */
    reg_page_handle h = {pool_lease_conn(l), pool_lease_session(l), NULL};
    reg_world *world = NULL;
    if (cdp_call(h.conn, h.session, "Runtime.enable", NULL, 10000, NULL) == 0 &&
        reg_world_new(h.conn, h.session, 10000, &world) == 0)
        h.world = world;
    reg_store *store = NULL;
    reg_page *pg = NULL;
    reg_observation a = {0}, b = {0}, c = {0};
    int have_a = 0, have_b = 0, have_c = 0;
    rc = cdp_call(h.conn, h.session, "Emulation.setDeviceMetricsOverride",
                  "{\"width\":1280,\"height\":720,\"deviceScaleFactor\":1,\"mobile\":false}", 10000,
                  NULL);
    if (rc == 0 && (rc = page_navigate(h.conn, h.session, url)) < 0)
        snprintf(r->error, sizeof r->error, "navigate: %s", rg_err_code(rc));
    if (rc == 0 && !(store = reg_store_mem_new()))
        rc = RG_ENOMEM;
    if (rc == 0)
        rc = reg_page_new(store, "bench:observe:page", rcfg, &pg);
    /* The text outline, as `observe` with format text (the default) makes it:
       no alternative selectors, which only the elements list carries. */
    reg_observe_opts opts = {.timeout_ms = 60000, .no_selectors = 1};
    if (rc == 0) {
        int64_t t0 = rg_now_us();
        rc = reg_observe(pg, h, &opts, &a);
        *first = (rg_now_us() - t0) / 1000.0;
        have_a = rc == 0;
    }
    if (rc == 0) {
        int64_t t0 = rg_now_us();
        rc = reg_observe(pg, h, &opts, &b);
        *second = (rg_now_us() - t0) / 1000.0;
        have_b = rc == 0;
    }
    if (rc == 0 && later_wait_ms) {
        rg_sleep_ms(later_wait_ms);
        int64_t t0 = rg_now_us();
        rc = reg_observe(pg, h, &opts, &c);
        *later = (rg_now_us() - t0) / 1000.0;
        have_c = rc == 0;
    }
    if (rc < 0 && !r->error[0])
        snprintf(r->error, sizeof r->error, "observe: %s", rg_err_code(rc));
    if (rc == 0) {
        r->bytes = strlen(a.text);
        r->lines = count_lines(a.text);
        r->nodes = a.n_nodes;
        r->refs = a.n_refs;
        r->truncated = a.truncated || b.truncated;
        if (b.n_stable != b.n_refs || strlen(b.text) != r->bytes)
            fprintf(stderr, "observe: %s: second observe differs (%zu of %zu refs stable)\n", url,
                    b.n_stable, b.n_refs);
        if (getenv("RG_BENCH_DUMP"))
            fprintf(stderr, "%s\n", a.text);
    }
    if (have_a)
        reg_observation_free(&a);
    if (have_b)
        reg_observation_free(&b);
    if (have_c)
        reg_observation_free(&c);
    reg_page_free(pg);
    if (store)
        reg_store_free(store);
    reg_world_free(world);
    pool_release(l);
    return rc;
}

static void measure(pool *p, const char *url, int runs, const reg_config *rcfg, struct result *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < runs; i++) {
        double f = 0, s = 0, l = 0;
        if (run_once(p, url, rcfg, r, &f, &s, &l) < 0)
            return;
        r->first[r->runs] = f;
        r->second[r->runs] = s;
        r->later[r->runs] = l;
        r->runs++;
    }
}

static void print_result(const char *name, const struct result *r)
{
    printf("\"%s\":{", name);
    if (r->error[0] || !r->runs) {
        printf("\"error\":\"%s\"}", r->error[0] ? r->error : "no run");
        return;
    }
    int n = r->runs;
    printf("\"first_ms\":%.2f,\"first_min\":%.2f,\"first_max\":%.2f,"
           "\"second_ms\":%.2f,\"second_min\":%.2f,\"second_max\":%.2f,",
           median(r->first, n), vmin(r->first, n), vmax(r->first, n), median(r->second, n),
           vmin(r->second, n), vmax(r->second, n));
    if (later_wait_ms)
        printf("\"later_ms\":%.2f,\"later_min\":%.2f,\"later_max\":%.2f,", median(r->later, n),
               vmin(r->later, n), vmax(r->later, n));
    printf("\"min\":%.2f,\"max\":%.2f,\"runs\":%d,\"bytes\":%zu,\"tokens\":%zu,\"lines\":%zu,"
           "\"nodes\":%zu,\"refs\":%zu,\"truncated\":%s}",
           vmin(r->first, n), vmax(r->first, n), n, r->bytes, r->bytes / 4, r->lines, r->nodes,
           r->refs, r->truncated ? "true" : "false");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.html of dir, sorted; returns how many (at most max). */
static int list_pages(const char *dir, char **out, int max)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".html"))
            out[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(out, (size_t)n, sizeof *out, cmp_str);
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: observe [--quick] [--runs N] [--pages DIR] [--corpus DIR] [PAGE...]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int runs = 5;
    const char *pages_dir = "bench/pages", *corpus_dir = "../shared/corpus/pages";
    char *names[MAX_PAGES];
    int n_names = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            runs = 1;
            later_wait_ms = 0;
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pages") && i + 1 < argc)
            pages_dir = argv[++i];
        else if (!strcmp(argv[i], "--corpus") && i + 1 < argc)
            corpus_dir = argv[++i];
        else if (argv[i][0] == '-')
            usage();
        else if (n_names < MAX_PAGES)
            names[n_names++] = strdup(argv[i]);
    }
    if (runs < 1 || runs > MAX_RUNS)
        usage();
    if (!n_names) {
        names[n_names++] = strdup("controls");
        int k = list_pages(corpus_dir, names + 1, MAX_PAGES - 1);
        if (k < 0)
            fprintf(stderr, "observe: no corpus at %s (only the controls page)\n", corpus_dir);
        else
            n_names += k;
    }
    char controls_path[4096];
    snprintf(controls_path, sizeof controls_path, "%s/controls.html", pages_dir);
    if (access(controls_path, R_OK) < 0) {
        fprintf(stderr, "observe: %s is missing (run from the repository root)\n", controls_path);
        return 1;
    }

    httpd *own = httpd_start(pages_dir), *corpus = httpd_start(corpus_dir);
    if (!own || !corpus) {
        fprintf(stderr, "observe: the loopback server did not start\n");
        return 1;
    }
    char run_dir[64];
    snprintf(run_dir, sizeof run_dir, "/tmp/refgate-bench-obs-%d", (int)getpid());
    pool_config cfg;
    pool_config_default(&cfg);
    pool_config_from_env(&cfg);
    cfg.run_dir = run_dir;
    cfg.browsers = 1;
    cfg.recycle_after = 0;
    static const char *const extra[] = {"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                                        NULL};
    cfg.extra_args = extra;
    reg_config rcfg;
    reg_config_default(&rcfg);
    reg_config_from_env(&rcfg);
    rcfg.max = REGISTRY_MAX;

    pool *p;
    if (pool_new(&cfg, &p) < 0) {
        fprintf(stderr, "observe: the pool did not start\n");
        return 1;
    }
    char product[128] = "unknown";
    pool_lease *l;
    if (pool_acquire(p, 30000, &l, NULL) == 0) {
        page_browser_product(pool_lease_conn(l), product, sizeof product);
        pool_release(l);
    }

    char url[512];
    struct result *res = calloc((size_t)n_names, sizeof *res);
    if (!res)
        return 1;
    /* Warm-up, not counted. */
    struct result warm;
    memset(&warm, 0, sizeof warm);
    double f, s;
    run_once(p, httpd_url(own, "/warmup", url, sizeof url), &rcfg, &warm, &f, &s, &s);

    for (int i = 0; i < n_names; i++) {
        int is_controls = !strcmp(names[i], "controls");
        char path[600];
        snprintf(path, sizeof path, "/%s", is_controls ? "controls.html" : names[i]);
        httpd_url(is_controls ? own : corpus, path, url, sizeof url);
        int64_t t0 = rg_now_ms();
        measure(p, url, runs, &rcfg, &res[i]);
        if (res[i].error[0])
            fprintf(stderr, "observe: %s: %s\n", names[i], res[i].error);
        else
            fprintf(stderr, "observe: %s: first %.1f ms, second %.1f ms, %zu bytes (%lld ms)\n",
                    names[i], median(res[i].first, res[i].runs), median(res[i].second, res[i].runs),
                    res[i].bytes, (long long)(rg_now_ms() - t0));
    }
    pool_free(p);
    rmdir(run_dir);
    httpd_stop(own);
    httpd_stop(corpus);

    printf("{\"chromium\":\"%s\",\"runs\":%d,\"registry_max\":%d,", product, runs, REGISTRY_MAX);
    for (int i = 0; i < n_names; i++)
        if (!strcmp(names[i], "controls")) {
            print_result("controls", &res[i]);
            printf(",");
        }
    printf("\"pages\":{");
    int k = 0;
    for (int i = 0; i < n_names; i++)
        if (strcmp(names[i], "controls")) {
            if (k++)
                printf(",");
            print_result(names[i], &res[i]);
        }
    printf("}}\n");
    for (int i = 0; i < n_names; i++)
        free(names[i]);
    free(res);
    return 0;
}
