/*
 * click.c - a click on a ref, end to end: resolve the ref (its cached node,
 * identity checked), wait until actionable (visible, stable, enabled, hit at
 * its centre) and send real mouse events; compared with Playwright's
 * page.getByRef(ref).click() by bench/peer/click.mjs on the same page.
 *
 * bench/pages/click.html (600 other controls around the target), one pool
 * with one browser; observe once for the ref, 10 warm-up clicks, then
 * `clicks` timed clicks (200, or 30 with --quick). Checks that the page
 * counted every click. Then the floor, as many again: the target's centre
 * from one Runtime.evaluate and the same three mouse events, with none of
 * the ref's checks (floor_p50_ms, floor_p99_ms, floor_counted). Prints one
 * JSON object. Measures; asserts nothing.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool/pool.h"
#include "registry/registry.h"
#include "tests/support/fixture.h"
#include "tests/support/page.h"
#include "tests/support/stats.h"
#include "tests/support/support.h"

int main(int argc, char **argv)
{
    int clicks = argc > 1 && !strcmp(argv[1], "--quick") ? 30 : 200;
    char url[256], ref[REG_REF_MAX] = "", err[256];
    fx_browser chrome;
    pool_lease *l;
    if (fx_browser_start(&chrome, "click", "bench-click", "bench/pages") < 0 ||
        pool_acquire(chrome.pool, 30000, &l, NULL) < 0) {
        fprintf(stderr, "click: cannot start\n");
        return 1;
    }
    /* The page's isolated world, as a session makes it. */
    reg_page_handle h;
    reg_world *world;
    page_handle(l, &h, &world);
    reg_store *store = reg_store_mem_new();
    reg_page *pg;
    reg_page_new(store, "bench:click", NULL, &pg);
    reg_observation o;
    reg_observe_opts opts = {REG_OBSERVE_TEXT};
    if (page_navigate(h.conn, h.session, httpd_url(chrome.pages, "/click.html", url, sizeof url)) <
            0 ||
        reg_observe(pg, h, &opts, &o) < 0) {
        fprintf(stderr, "click: cannot load or observe the page\n");
        return 1;
    }
    for (size_t i = 0; i < o.n_nodes; i++)
        if (o.nodes[i].name && !strcmp(o.nodes[i].name, "Target"))
            snprintf(ref, sizeof ref, "%s", o.nodes[i].ref);
    reg_observation_free(&o);
    double *t = calloc((size_t)clicks, sizeof *t);
    reg_action a = {.op = REG_OP_CLICK, .target = ref};
    reg_action_result r;
    int failed = 0;
    for (int i = 0; i < 10 + clicks; i++) {
        int64_t t0 = rg_now_us();
        if (reg_act(pg, h, &a, &r, err, sizeof err) < 0) {
            fprintf(stderr, "click: %s\n", err);
            failed++;
        }
        if (i >= 10)
            t[i - 10] = (rg_now_us() - t0) / 1000.0;
        reg_action_result_free(&r);
    }
    char count[32] = "";
    page_eval(h.conn, h.session, "document.getElementById('count').textContent", count,
              sizeof count);
    double p50 = stats_rank(t, (size_t)clicks, 0.5), p99 = stats_rank(t, (size_t)clicks, 0.99);
    /* The floor of any click that looks before it clicks: one call into the
       page for the target's centre (no identity, no actionability), then the
       mouse as reg_act sends it (move and press unanswered, the release
       waited for), straight down the pipe. */
    double *f = calloc((size_t)clicks, sizeof *f);
    int floor_failed = 0;
    for (int i = 0; i < 10 + clicks; i++) {
        int64_t t0 = rg_now_us();
        char xy[64] = "";
        double x = 0, y = 0;
        int ok = page_eval(h.conn, h.session,
                           "(()=>{const r=document.getElementById('target')"
                           ".getBoundingClientRect();return (r.x+r.width/2)+' '+(r.y+r.height/2)})()",
                           xy, sizeof xy) == 0 &&
                 sscanf(xy, "%lf %lf", &x, &y) == 2;
        const char *types[] = {"mouseMoved", "mousePressed", "mouseReleased"};
        for (int k = 0; ok && k < 3; k++) {
            char q[256];
            snprintf(q, sizeof q,
                     "{\"type\":\"%s\",\"x\":%.2f,\"y\":%.2f,\"button\":\"%s\",\"clickCount\":1}",
                     types[k], x, y, k ? "left" : "none");
            ok = (k < 2 ? cdp_call_async(h.conn, h.session, "Input.dispatchMouseEvent", q, 5000,
                                         NULL, NULL)
                        : cdp_call(h.conn, h.session, "Input.dispatchMouseEvent", q, 5000,
                                   NULL)) == 0;
        }
        floor_failed += !ok;
        if (i >= 10)
            f[i - 10] = (rg_now_us() - t0) / 1000.0;
    }
    char count2[32] = "";
    page_eval(h.conn, h.session, "document.getElementById('count').textContent", count2,
              sizeof count2);
    printf("{\"ref\":\"%s\",\"clicks\":%d,\"counted\":%s,\"failed\":%d,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f,\"floor_p50_ms\":%.3f,"
           "\"floor_p99_ms\":%.3f,\"floor_failed\":%d,\"floor_counted\":%ld}\n",
           ref, clicks, count[0] ? count : "0", failed, p50, p99, t[0], t[clicks - 1],
           stats_rank(f, (size_t)clicks, 0.5), stats_rank(f, (size_t)clicks, 0.99), floor_failed,
           atol(count2) - atol(count));
    free(f);
    free(t);
    reg_page_free(pg);
    reg_store_free(store);
    reg_world_free(world);
    pool_release(l);
    fx_browser_stop(&chrome);
    return 0;
}
