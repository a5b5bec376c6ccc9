/*
 * floor.c - the floor every later refgate figure is compared with: what the
 * DevTools pipe and the browser pool cost on this machine.
 *
 *   cold_start_ms        pool_new with one browser until it answers (median of 3; 1 with --quick)
 *   getversion_p50/p99   Browser.getVersion round trip on the browser target
 *   evaluate_p50/p99     Runtime.evaluate("1+1") on a leased page, 2,000 calls
 *   context_create_ms    pool_acquire (context + page + attach), median, N = 1, 10, 50
 *   context_pss_mib      added PSS of the browser's processes per context, N = 1, 10, 50
 *
 * Prints one JSON object on stdout (the same keys bench/peer/floor.mjs uses
 * for Playwright, so bench/peer/report.mjs can print ratios). `--quick` makes it
 * short: one cold start, 500 calls, and only N = 10 contexts. It measures; it asserts nothing.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool/pool.h"
#include "tests/support/fixture.h"
#include "tests/support/page.h"
#include "tests/support/stats.h"
#include "tests/support/support.h"

static double pct(double *v, int n, double p)
{
    return stats_rank_round(v, (size_t)n, p);
}

static void config(pool_config *cfg, char *run_dir, size_t len)
{
    fx_pool_config(cfg, "bench", run_dir, len);
    cfg->contexts_per_browser = 64;
    cfg->recycle_after = 0;
}

/* PSS of everything below the browser's guard (the guard itself excluded). */
static double pss_mib(pool *p)
{
    pid_t g;
    if (pool_guards(p, &g, 1) != 1)
        return -1;
    pid_t kids[512];
    int n = procs_descendants(g, kids, 512);
    long kib = 0;
    for (int i = 0; i < n; i++) {
        long k = procs_pss_kib(kids[i]);
        if (k > 0)
            kib += k;
    }
    return kib / 1024.0;
}

static int round_trips(cdp_conn *c, const char *sid, const char *method, const char *params, int n,
                       double *p50, double *p99)
{
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < 50; i++)
        if (cdp_call(c, sid, method, params, 5000, NULL) < 0)
            return -1;
    for (int i = 0; i < n; i++) {
        int64_t t0 = rg_now_us();
        if (cdp_call(c, sid, method, params, 5000, NULL) < 0) {
            free(v);
            return -1;
        }
        v[i] = (rg_now_us() - t0) / 1000.0;
    }
    *p50 = pct(v, n, 0.5);
    *p99 = pct(v, n, 0.99);
    free(v);
    return 0;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    int calls = quick ? 500 : 2000;
    int all_counts[] = {1, 10, 50}, quick_counts[] = {10};
    int *counts = quick ? quick_counts : all_counts;
    int n_counts = quick ? 1 : 3;
    int n_cold = quick ? 1 : 3;
    char run_dir[64];
    pool_config cfg;
    config(&cfg, run_dir, sizeof run_dir);

    /* Cold start. */
    double cold[3];
    for (int i = 0; i < n_cold; i++) {
        pool *p;
        int64_t t0 = rg_now_us();
        if (pool_new(&cfg, &p) < 0) {
            fprintf(stderr, "floor: the pool did not start\n");
            return 1;
        }
        cold[i] = (rg_now_us() - t0) / 1000.0;
        pool_free(p);
    }

    pool *p;
    if (pool_new(&cfg, &p) < 0)
        return 1;
    pool_lease *l;
    if (pool_acquire(p, 30000, &l, NULL) < 0)
        return 1;
    char product[128];
    page_browser_product(pool_lease_conn(l), product, sizeof product);
    double gv50, gv99, ev50, ev99;
    if (round_trips(pool_lease_conn(l), NULL, "Browser.getVersion", NULL, calls, &gv50, &gv99) <
            0 ||
        round_trips(pool_lease_conn(l), pool_lease_session(l), "Runtime.evaluate",
                    "{\"expression\":\"1+1\",\"returnByValue\":true}", calls, &ev50, &ev99) < 0) {
        fprintf(stderr, "floor: a round trip failed\n");
        return 1;
    }
    pool_release(l);

    double create_ms[3], per_ctx_mib[3];
    pool_lease *leases[64];
    for (int k = 0; k < n_counts; k++) {
        int n = counts[k];
        rg_sleep_ms(1000);
        double base = pss_mib(p);
        double t[64];
        for (int i = 0; i < n; i++) {
            int64_t t0 = rg_now_us();
            if (pool_acquire(p, 30000, &leases[i], NULL) < 0) {
                fprintf(stderr, "floor: lease %d of %d failed\n", i, n);
                return 1;
            }
            t[i] = (rg_now_us() - t0) / 1000.0;
        }
        rg_sleep_ms(1000);
        per_ctx_mib[k] = (pss_mib(p) - base) / n;
        create_ms[k] = pct(t, n, 0.5);
        for (int i = 0; i < n; i++)
            pool_release(leases[i]);
    }
    pool_free(p);
    rmdir(run_dir);

    printf("{\"chromium\":\"%s\",\"cold_start_ms\":%.1f,\"getversion_p50_ms\":%.3f,\"getversion_"
           "p99_ms\":%.3f,"
           "\"evaluate_p50_ms\":%.3f,\"evaluate_p99_ms\":%.3f,\"context_create_ms\":{",
           product, pct(cold, n_cold, 0.5), gv50, gv99, ev50, ev99);
    for (int k = 0; k < n_counts; k++)
        printf("%s\"%d\":%.1f", k ? "," : "", counts[k], create_ms[k]);
    printf("},\"context_pss_mib\":{");
    for (int k = 0; k < n_counts; k++)
        printf("%s\"%d\":%.1f", k ? "," : "", counts[k], per_ctx_mib[k]);
    printf("}}\n");
    return 0;
}
