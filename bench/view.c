/*
 * view.c - what a live view costs the agent it watches: the agent's
 * `click` (css:#count on tests/fixtures/live.html, JSON over kept-alive HTTP
 * through nginx, one worker) timed with no viewer, with a viewer that
 * subscribed to the screencast and never reads its socket again, and with a
 * viewer that reads every frame; and the worker's resident memory while the
 * viewer that never reads stays attached.
 *
 * Each phase: 10 warm-up clicks, then `clicks` timed ones (200, or 40 with
 * --quick). The page repaints on every click (its counter), so every click
 * makes frames. --spin uses live.html?spin=1, a page that repaints on every
 * animation frame (the screencast's worst case). Prints one JSON object;
 * progress on stderr. Measures; asserts nothing. Run from the repository
 * root: build/bench/view [--quick] [--spin]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/fixture.h"
#include "tests/support/net.h"
#include "tests/support/stats.h"
#include "tests/support/support.h"

static fx_stack st;
static char sid[64];

/* One command on the session over the kept-alive connection *fd: 0 when ok. */
static int command(int *fd, const char *body, rg_buf *out)
{
    char path[96], h[300];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", st.auth[0]);
    http_resp r;
    if (*fd < 0 && (*fd = http_connect(stack_port(st.st))) < 0)
        return -1;
    int rc = http_request_on(*fd, "POST", path, h, body, strlen(body), &r);
    if (rc < 0 || r.closed) {
        close(*fd);
        *fd = -1;
    }
    if (rc < 0)
        return -1;
    rc = r.status == 200 ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "view: %s -> %d %.*s\n", body, r.status, (int)r.body.len,
                r.body.data ? r.body.data : "");
    if (out) {
        rg_buf_reset(out);
        rg_buf_append(out, r.body.data, r.body.len);
        rg_buf_puts(out, "");
    }
    rg_buf_destroy(&r.body);
    return rc;
}

/* What a phase of clicks saw: p50, p90 (ms), its seconds, the worker's frames sent and dropped. */
struct phase {
    double p50, p90, s, sent, dropped;
};

static double frames(const char *result)
{
    char name[64];
    snprintf(name, sizeof name, "refgate_view_frames_total{result=\"%s\"}", result);
    double v = stack_metric(st.st, 1, name);
    return v > 0 ? v : 0;
}

static int clicks(int n, double out[2]);

/* Times n clicks (after 10 warm-up ones) into *ph. */
static int phase(int n, struct phase *ph)
{
    double sent = frames("sent"), dropped = frames("dropped");
    int64_t t0 = rg_now_us();
    double o[2];
    if (clicks(n, o) < 0)
        return -1;
    ph->p50 = o[0];
    ph->p90 = o[1];
    ph->s = (double)(rg_now_us() - t0) / 1e6;
    ph->sent = frames("sent") - sent;
    ph->dropped = frames("dropped") - dropped;
    return 0;
}

/* Times n clicks (after 10 warm-up ones): p50 and p90 in ms into out[0..1]. */
static int clicks(int n, double out[2])
{
    int fd = -1;
    double *ms = calloc((size_t)n, sizeof *ms);
    if (!ms)
        return -1;
    const char *click = getenv("VIEW_OP")
                            ? getenv("VIEW_OP")
                            : "{\"op\":\"click\",\"args\":{\"target\":\"css:#count\"}}";
    for (int i = 0; i < 10; i++)
        if (command(&fd, click, NULL) < 0)
            return -1;
    for (int i = 0; i < n; i++) {
        int64_t t0 = rg_now_us();
        if (command(&fd, click, NULL) < 0) {
            free(ms);
            return -1;
        }
        ms[i] = (double)(rg_now_us() - t0) / 1000.0;
    }
    if (fd >= 0)
        close(fd);
    stats_sort(ms, (size_t)n);
    out[0] = stats_rank(ms, (size_t)n, 0.5);
    out[1] = stats_rank(ms, (size_t)n, 0.9);
    free(ms);
    return 0;
}

/* A WebSocket subscribed to the session's screencast (with a view token when tok). */
static wsc *viewer(const char *tok)
{
    char path[512];
    int status;
    snprintf(path, sizeof path, "/v1/sessions/%s/ws%s%s", sid, tok ? "?token=" : "",
             tok ? tok : "");
    wsc *w = wsc_open(stack_port(st.st), path, tok ? "" : st.auth[0], &status);
    if (!w)
        return NULL;
    /* VIEW_SUB_ARGS: more subscribe args, for trying settings (",\"max_width\":320"). */
    char sub[512];
    const char *more = getenv("VIEW_SUB_ARGS");
    snprintf(sub, sizeof sub,
             "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"screencast\"]%s}}",
             more ? more : "");
    rg_buf in;
    rg_buf_init(&in);
    if (wsc_send(w, sub, strlen(sub), 1) < 0 || wsc_recv(w, &in, 20000) != 1 ||
        !strstr(in.data, "\"ok\":true")) {
        rg_buf_destroy(&in);
        wsc_close(w);
        return NULL;
    }
    rg_buf_destroy(&in);
    return w;
}

static volatile int reading = 1;
static long frames_read;

static void *reader_main(void *arg)
{
    wsc *w = arg;
    rg_buf in;
    rg_buf_init(&in);
    while (reading) {
        rg_buf_reset(&in);
        int op = wsc_recv(w, &in, 200);
        if (op == 1 || op == 2)
            frames_read++;
        else if (op == 8)
            break;
    }
    rg_buf_destroy(&in);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = 200, spin = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            n = 40;
        else if (!strcmp(argv[i], "--spin"))
            spin = 1;
    }
    if (fx_stack_start(&st, "bench-view", "tests/fixtures", 1, NULL) < 0) {
        fprintf(stderr, "view: cannot start the stack\n");
        return 1;
    }
    int rc = 1;
    rg_buf b;
    rg_buf_init(&b);
    char url[256], body[400];
    httpd_url(st.pages, spin ? "/live.html?spin=1" : "/live.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    http_resp r;
    char h[300];
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", st.auth[0]);
    if (http_request(stack_port(st.st), "POST", "/v1/sessions", h, body, strlen(body), &r) < 0 ||
        r.status != 200)
        goto out;
    rg_buf_puts(&r.body, "");
    const char *p = strstr(r.body.data, "\"session\":\"");
    if (!p)
        goto out;
    snprintf(sid, sizeof sid, "%.*s", (int)strcspn(p + 11, "\""), p + 11);
    rg_buf_destroy(&r.body);
    pid_t worker = stack_worker_pid(st.st, 1);
    int fd = -1;
    if (command(&fd, "{\"op\":\"session.view_token\",\"args\":{\"ttl_s\":3600}}", &b) < 0)
        goto out;
    char tok[256];
    p = strstr(b.data, "\"token\":\"");
    snprintf(tok, sizeof tok, "%.*s", (int)strcspn(p + 9, "\""), p + 9);
    close(fd);

    struct phase none, stuck[3], live;
    fprintf(stderr, "view: %d clicks with no viewer\n", n);
    if (phase(n, &none) < 0)
        goto out;
    long rss[4];
    rss[0] = proc_rss_kb(worker);
    wsc *slow = viewer(tok);
    if (!slow)
        goto out;
    /* Three batches with the viewer that never reads: the first until the
       buffers between it and the worker are full, the third reported. */
    for (int i = 0; i < 3; i++) {
        fprintf(stderr, "view: %d clicks with a viewer that never reads (%d of 3)\n", n, i + 1);
        if (phase(n, &stuck[i]) < 0)
            goto out;
        rss[i + 1] = proc_rss_kb(worker);
    }
    double held = stack_metric(st.st, 1, "refgate_view_frame_bytes");
    wsc_close(slow);
    wsc *fast = viewer(NULL);
    if (!fast)
        goto out;
    pthread_t th;
    pthread_create(&th, NULL, reader_main, fast);
    fprintf(stderr, "view: %d clicks with a viewer that reads every frame\n", n);
    int ok = phase(n, &live);
    reading = 0;
    pthread_join(th, NULL);
    wsc_close(fast);
    if (ok < 0)
        goto out;
    printf("{\"page\":\"%s\",\"clicks\":%d,\"sub_args\":\"",
           spin ? "live.html?spin=1" : "live.html", n);
    for (const char *q = getenv("VIEW_SUB_ARGS"); q && *q; q++)
        printf("%s%c", *q == '"' || *q == '\\' ? "\\" : "", *q);
    printf("\",\"click_ms\":{");
    const char *names[] = {"no_viewer", "not_reading_1", "not_reading_2", "not_reading_3",
                           "reading"};
    struct phase *ps[] = {&none, &stuck[0], &stuck[1], &stuck[2], &live};
    for (int i = 0; i < 5; i++)
        printf("%s\"%s\":{\"p50\":%.2f,\"p90\":%.2f,\"s\":%.1f,\"frames_sent\":%.0f,"
               "\"frames_dropped\":%.0f}",
               i ? "," : "", names[i], ps[i]->p50, ps[i]->p90, ps[i]->s, ps[i]->sent,
               ps[i]->dropped);
    printf("},\"frames_read\":%ld,\"p50_ratio\":{\"not_reading\":%.3f,\"reading\":%.3f},"
           "\"worker_rss_kb\":[%ld,%ld,%ld,%ld],\"frame_bytes_held\":%.0f}\n",
           frames_read, stuck[2].p50 / none.p50, live.p50 / none.p50, rss[0], rss[1], rss[2],
           rss[3], held);
    rc = 0;
out:
    rg_buf_destroy(&b);
    fx_stack_stop(&st);
    return rc;
}
