/*
 * observe.c - what refgate's observe costs on a real page, to compare with
 * Playwright's AI snapshot (bench/peer/observe.mjs) on the same pages.
 *
 * Pages: bench/pages/controls.html (5,000 controls) and every page of
 * tests/corpus/pages/, each served over loopback by tests/support/httpd.
 * One pool with one browser; remote hosts fail at once
 * (--host-resolver-rules), so the corpus pages load without waiting on DNS.
 *
 * For each page, `runs` times: lease a fresh context, set a 1280x720
 * viewport (Playwright's default), navigate and wait for the load event, then
 * time reg_observe in the default mode on a new registry:
 *   first   the first observe after load (installs the observer, gives every
 *           element a new ref, builds the outline)
 *   second  again on the unchanged page (every element matched to its ref;
 *           the page answers from its unchanged-page cache when nothing
 *           could have changed, see registry/observer/)
 *   later   again, LATER_MS (2.5 s) after the second on the still untouched
 *           page, what an agent that thinks between two observations gets:
 *           the page-side cache answers while nothing could have changed
 *           the page (no mutation, input, style sheet change or running
 *           animation; 30 s at most, CACHE_MS), so on a quiet page this is
 *           a cache hit, like second (not with --quick)
 *   added   after BENCH_ADD_ITEM_JS (bench/client.h) added one item (a list item with a
 *           link, in the page's main world, as the page's own script would):
 *           the observer walks again only what changed and sends only what
 *           changed (issue 20); also reported as added_cpu, this process's
 *           CPU time during it (every thread: the DevTools reader's parse and
 *           the registry's work; not the browser's), which other work on a
 *           busy machine inflates far less than the wall-clock figure
 * and then once more in the `interactive` mode (REG_MODE_INTERACTIVE: the
 * elements with refs under their headings and landmarks, no text), timed and
 * reported, with no Playwright figure to compare to:
 *   interactive  right after the others on the same page and registry: the
 *           page walks it afresh (its options differ, so the unchanged-page
 *           cache does not answer), every element already has its ref
 * The default outline is the `full` one (REG_MODE_FULL): elements, structure
 * and the page's text. The registry's cap is raised to 20,000 so no page is
 * truncated (the truncated flag says if one was anyway).
 *
 * Prints one JSON object on stdout: per page the median, min and max of
 * each timing, the full outline's size in bytes and tokens (bytes / 4), its
 * lines, the nodes, the text lines among them (text_lines) and the refs, and
 * the interactive outline's interactive_bytes, interactive_lines and
 * interactive_ms (median, min, max). Runs: 5, or 1 with --quick. Before the
 * pages, one run on a small page (httpd's fixture page for /warmup) warms the
 * browser up and is not counted (the peer does the same). Measures; asserts
 * nothing.
 *
 * With --snap DIR, the last run's outlines of each page are written to
 * DIR/refgate/<page>.txt (full) and DIR/refgate-interactive/<page>.txt, with
 * <page> the file name without .html ("controls" for the controls page), and
 * the JSON names the full one (snap); bench/peer/report.mjs measures the text
 * coverage from them.
 *
 * With --elements, every observe but the interactive one asks for what
 * `observe` with format `elements` (or `both`) gets: the outline with each
 * element's alternative selectors (the registry's re-binding hints), as an
 * MCP browser_snapshot with boxes does. No Playwright figure compares to it;
 * it is for refgate against itself.
 *
 * Usage: observe [--quick] [--elements] [--runs N] [--pages DIR] [--corpus DIR]
 *                [--snap DIR] [PAGE...]
 *   PAGE is "controls" or a file name in the corpus; default: all of them.
 *   Run from the repository root (the directories' defaults are relative).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/client.h"
#include "pool/pool.h"
#include "registry/registry.h"
#include "tests/support/fixture.h"
#include "tests/support/page.h"
#include "tests/support/stats.h"
#include "tests/support/support.h"

#define MAX_RUNS 50
#define MAX_PAGES 256
#define REGISTRY_MAX 20000
/* The wait before the third observe: an agent's pause between two observations. */
#define LATER_MS 2500

/* This process's CPU time (every thread: the DevTools reader too, not the browser), ms. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* The CPU time of the last run's added observe. */
static double added_cpu_last;

/* LATER_MS, or 0 with --quick: no third observe. */
static int later_wait_ms = LATER_MS;

/* --elements: the observes ask for the selectors (format elements) */
static int with_selectors;

struct result {
    double first[MAX_RUNS], second[MAX_RUNS], later[MAX_RUNS], added[MAX_RUNS], inter[MAX_RUNS];
    double added_cpu[MAX_RUNS]; /* this process's CPU (all its threads) during added */
    int runs;
    size_t bytes, lines, nodes, refs, text_lines;
    size_t inter_bytes, inter_lines, inter_refs;
    int truncated;
    char *full_text, *inter_text; /* the last run's outlines, for --snap */
    char error[160];
};

static double median(const double *v, int n)
{
    return stats_median(v, (size_t)n);
}

static double vmin(const double *v, int n)
{
    return stats_min(v, (size_t)n);
}

static double vmax(const double *v, int n)
{
    return stats_max(v, (size_t)n);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Puts a copy of s in *slot, freeing what was there; NULL when out of memory. */
static void keep_text(char **slot, const char *s)
{
    free(*slot);
    *slot = strdup(s);
}

/*
 * One run: a fresh context, the page loaded, the default observes timed,
 * then the interactive one. Returns 0, or a negative RG_E* with a sentence in
 * r->error.
 */
static int run_once(pool *p, const char *url, const reg_config *rcfg, struct result *r,
                    double *first, double *second, double *later, double *added, double *inter)
{
    pool_lease *l;
    int rc = pool_acquire(p, 30000, &l, NULL);
    if (rc < 0) {
        snprintf(r->error, sizeof r->error, "lease: %s", rg_err_code(rc));
        return rc;
    }
    /* The page's isolated world, as a session makes it. */
    reg_page_handle h;
    reg_world *world;
    page_handle(l, &h, &world);
    reg_store *store = NULL;
    reg_page *pg = NULL;
    reg_observation a = {0}, b = {0}, c = {0}, d = {0}, e = {0};
    int have_a = 0, have_b = 0, have_c = 0, have_d = 0, have_e = 0;
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
       no alternative selectors and no bounds, which only the elements list
       carries (--elements asks for them). */
    reg_observe_opts opts = {
        .timeout_ms = 60000, .no_selectors = !with_selectors, .no_bounds = !with_selectors};
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
    if (rc == 0) {
        rc = cdp_call(h.conn, h.session, "Runtime.evaluate",
                      "{\"expression\":\"" BENCH_ADD_ITEM_JS "\",\"returnByValue\":true}", 10000, NULL);
        if (rc < 0)
            snprintf(r->error, sizeof r->error, "add an item: %s", rg_err_code(rc));
    }
    if (rc == 0) {
        int64_t t0 = rg_now_us();
        double c0 = cpu_ms();
        rc = reg_observe(pg, h, &opts, &e);
        *added = (rg_now_us() - t0) / 1000.0;
        added_cpu_last = cpu_ms() - c0;
        have_e = rc == 0;
        if (have_e && e.reused)
            fprintf(stderr, "observe: %s: the observe after the added item was answered as unchanged\n",
                    url);
        if (have_e && !e.delta)
            fprintf(stderr, "observe: %s: the observe after the added item came as a whole reply\n",
                    url);
    }
    reg_observe_opts iopts = opts;
    iopts.mode = REG_MODE_INTERACTIVE;
    if (rc == 0) {
        int64_t t0 = rg_now_us();
        rc = reg_observe(pg, h, &iopts, &d);
        *inter = (rg_now_us() - t0) / 1000.0;
        have_d = rc == 0;
    }
    if (rc < 0 && !r->error[0])
        snprintf(r->error, sizeof r->error, "observe: %s", rg_err_code(rc));
    if (rc == 0) {
        r->bytes = strlen(a.text);
        r->lines = count_lines(a.text);
        r->nodes = a.n_nodes;
        r->refs = a.n_refs;
        r->text_lines = a.n_text;
        r->truncated = a.truncated || b.truncated || d.truncated;
        r->inter_bytes = strlen(d.text);
        r->inter_lines = count_lines(d.text);
        r->inter_refs = d.n_refs;
        keep_text(&r->full_text, a.text);
        keep_text(&r->inter_text, d.text);
        if (a.mode != REG_MODE_FULL || d.mode != REG_MODE_INTERACTIVE || d.n_text)
            fprintf(stderr, "observe: %s: unexpected modes (full %d, interactive %d, %zu text)\n",
                    url, a.mode, d.mode, d.n_text);
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
    if (have_d)
        reg_observation_free(&d);
    if (have_e)
        reg_observation_free(&e);
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
        double f = 0, s = 0, l = 0, ad = 0, t = 0;
        if (run_once(p, url, rcfg, r, &f, &s, &l, &ad, &t) < 0)
            return;
        r->first[r->runs] = f;
        r->second[r->runs] = s;
        r->later[r->runs] = l;
        r->added[r->runs] = ad;
        r->added_cpu[r->runs] = added_cpu_last;
        r->inter[r->runs] = t;
        r->runs++;
    }
}

/* mkdir -p; 0 or -1 with errno. */
static int make_dirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = buf + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* The page's name in snapshot file names: the file name without .html. */
static void page_base(const char *name, char *out, size_t size)
{
    size_t len = strlen(name);
    if (len > 5 && !strcmp(name + len - 5, ".html"))
        len -= 5;
    snprintf(out, size, "%.*s", (int)len, name);
}

/* Writes text to DIR/SIDE/BASE.txt, the path to path; 0 or -1 (said on stderr). */
static int write_snap(const char *dir, const char *side, const char *base, const char *text,
                      char *path, size_t size)
{
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", dir, side);
    snprintf(path, size, "%s/%s.txt", sub, base);
    FILE *f = NULL;
    if (make_dirs(sub) < 0 || !(f = fopen(path, "w"))) {
        fprintf(stderr, "observe: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t len = strlen(text);
    int ok = fwrite(text, 1, len, f) == len;
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "observe: %s: write failed\n", path);
        return -1;
    }
    return 0;
}

/* Prints s as a JSON string (the paths written here: no control characters). */
static void print_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static void print_result(const char *name, const struct result *r, const char *snap)
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
    printf("\"added_ms\":%.2f,\"added_min\":%.2f,\"added_max\":%.2f,", median(r->added, n),
           vmin(r->added, n), vmax(r->added, n));
    printf("\"added_cpu_ms\":%.2f,\"added_cpu_min\":%.2f,\"added_cpu_max\":%.2f,",
           median(r->added_cpu, n), vmin(r->added_cpu, n), vmax(r->added_cpu, n));
    printf("\"min\":%.2f,\"max\":%.2f,\"runs\":%d,\"bytes\":%zu,\"tokens\":%zu,\"lines\":%zu,"
           "\"nodes\":%zu,\"text_lines\":%zu,\"refs\":%zu,\"truncated\":%s,",
           vmin(r->first, n), vmax(r->first, n), n, r->bytes, r->bytes / 4, r->lines, r->nodes,
           r->text_lines, r->refs, r->truncated ? "true" : "false");
    printf("\"interactive_ms\":%.2f,\"interactive_min\":%.2f,\"interactive_max\":%.2f,"
           "\"interactive_bytes\":%zu,\"interactive_tokens\":%zu,\"interactive_lines\":%zu,"
           "\"interactive_refs\":%zu",
           median(r->inter, n), vmin(r->inter, n), vmax(r->inter, n), r->inter_bytes,
           r->inter_bytes / 4, r->inter_lines, r->inter_refs);
    if (snap) {
        printf(",\"snap\":");
        print_json_str(snap);
    }
    printf("}");
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
    qsort(out, (size_t)n, sizeof *out, stats_cmp_str);
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: observe [--quick] [--elements] [--runs N] [--pages DIR] [--corpus DIR] "
                    "[--snap DIR] [PAGE...]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int runs = 5;
    const char *pages_dir = "bench/pages", *corpus_dir = "tests/corpus/pages";
    const char *snap_dir = NULL;
    char *names[MAX_PAGES];
    int n_names = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            runs = 1;
            later_wait_ms = 0;
        } else if (!strcmp(argv[i], "--elements"))
            with_selectors = 1;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pages") && i + 1 < argc)
            pages_dir = argv[++i];
        else if (!strcmp(argv[i], "--corpus") && i + 1 < argc)
            corpus_dir = argv[++i];
        else if (!strcmp(argv[i], "--snap") && i + 1 < argc)
            snap_dir = argv[++i];
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
    pool_config cfg;
    fx_pool_config(&cfg, "bench-obs", run_dir, sizeof run_dir);
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
    run_once(p, httpd_url(own, "/warmup", url, sizeof url), &rcfg, &warm, &f, &s, &s, &s, &s);
    free(warm.full_text);
    free(warm.inter_text);

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
            fprintf(stderr,
                    "observe: %s: first %.1f ms, second %.1f ms, added %.1f ms, %zu bytes, "
                    "interactive %.1f ms, %zu bytes (%lld ms)\n",
                    names[i], median(res[i].first, res[i].runs), median(res[i].second, res[i].runs),
                    median(res[i].added, res[i].runs), res[i].bytes,
                    median(res[i].inter, res[i].runs), res[i].inter_bytes,
                    (long long)(rg_now_ms() - t0));
    }
    /* The snapshot files, and their paths for the JSON (NULL: none written). */
    char **snaps = calloc((size_t)n_names, sizeof *snaps);
    if (!snaps)
        return 1;
    for (int i = 0; snap_dir && i < n_names; i++) {
        char base[512], path[4800];
        if (res[i].error[0] || !res[i].full_text || !res[i].inter_text)
            continue;
        page_base(names[i], base, sizeof base);
        if (write_snap(snap_dir, "refgate-interactive", base, res[i].inter_text, path,
                       sizeof path) == 0 &&
            write_snap(snap_dir, "refgate", base, res[i].full_text, path, sizeof path) == 0)
            snaps[i] = strdup(path);
    }
    pool_free(p);
    rmdir(run_dir);
    httpd_stop(own);
    httpd_stop(corpus);

    printf("{\"chromium\":\"%s\",\"runs\":%d,\"registry_max\":%d,\"selectors\":%s,", product, runs,
           REGISTRY_MAX, with_selectors ? "true" : "false");
    for (int i = 0; i < n_names; i++)
        if (!strcmp(names[i], "controls")) {
            print_result("controls", &res[i], snaps[i]);
            printf(",");
        }
    printf("\"pages\":{");
    int k = 0;
    for (int i = 0; i < n_names; i++)
        if (strcmp(names[i], "controls")) {
            if (k++)
                printf(",");
            print_result(names[i], &res[i], snaps[i]);
        }
    printf("}}\n");
    for (int i = 0; i < n_names; i++) {
        free(names[i]);
        free(snaps[i]);
        free(res[i].full_text);
        free(res[i].inter_text);
    }
    free(snaps);
    free(res);
    return 0;
}
