/*
 * test_view.c - the live view (docs/protocol.md, "Live view") as its users
 * meet it, through the shipped nginx configuration with two workers, real
 * Redis and Chromium:
 *
 * - view tokens: made by session.view_token, refused with 401 at the
 *   WebSocket handshake when forged, expired, for another session, or for a
 *   closed session; a token opens only the live view (other ops forbidden);
 *   a token made on one worker works on the other (the secret is shared);
 * - the screencast: frames as msgpack bin (a JPEG) with the page's size;
 *   with a control token a click at an element's box clicks it and typing
 *   reaches the focused field, and the agent's refs from before still work;
 *   a read-only token's input is refused and changes nothing;
 * - a viewer that never reads: its frames are dropped (the metric rises),
 *   the worker's memory stays bounded while a reading viewer goes on
 *   receiving frames; alone, it is written one frame and the page stops
 *   capturing for it while the agent's commands go on, until it reads again;
 * - the viewer page (tests/view/viewer.mjs, playwright-core on Debian's
 *   Chromium): frames on its canvas, a click on the canvas counts, typing
 *   reaches a field, a read-only link changes nothing, bad links are
 *   refused, and the page shows the session's end.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"
#include "tests/support/support.h"
#include "wire/wire.h"

static fx_stack gw;

/* ---- helpers ---- */

static void create(const char *page, char *sid)
{
    char url[256], body[512];
    httpd_url(gw.pages, page, url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    int status;
    cJSON *r = expect_post(&gw, 0, "/v1/sessions", body, &status);
    if (status != 200)
        fail_msg("create: %d %s", status, cJSON_PrintUnformatted(r));
    snprintf(sid, 64, "%s", reply_str(r, "session"));
    cJSON_Delete(r);
}

static void close_session(const char *sid)
{
    char path[96], h[200];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    snprintf(h, sizeof h, "%sAccept: application/json\r\n", gw.auth[0]);
    http_resp r;
    assert_int_equal(http_request(stack_port(gw.st), "DELETE", path, h, NULL, 0, &r), 0);
    assert_int_equal(r.status, 200);
    rg_buf_destroy(&r.body);
}

/* A view token for sid (control, ttl_s); its url into url when not NULL. */
static void token_for(const char *sid, int control, int ttl, char *tok, size_t len, char *url,
                      size_t ulen)
{
    char body[160];
    snprintf(body, sizeof body,
             "{\"op\":\"session.view_token\",\"args\":{\"control\":%s,\"ttl_s\":%d}}",
             control ? "true" : "false", ttl);
    cJSON *r = expect_ok(&gw, sid, body);
    snprintf(tok, len, "%s", reply_str(r, "token"));
    if (url)
        snprintf(url, ulen, "%s", reply_str(r, "url"));
    cJSON_Delete(r);
}

/* Opens sid's WebSocket with a token through nginx (port 0) or a worker; NULL with *status. */
static wsc *open_view(int port, const char *sid, const char *tok, int *status)
{
    char path[512];
    snprintf(path, sizeof path, "/v1/sessions/%s/ws?token=%s", sid, tok);
    return wsc_open(port ? port : stack_port(gw.st), path, "", status);
}

/* Sends a command map (JSON text here, msgpack on the wire). */
static void send_cmd(wsc *w, const char *json)
{
    cJSON *m = cJSON_Parse(json);
    assert_non_null(m);
    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(wire_mp_encode(m, &b), 0);
    assert_int_equal(wsc_send(w, b.data, b.len, 0), 0);
    rg_buf_destroy(&b);
    cJSON_Delete(m);
}

/*
 * The next message (msgpack, decoded) for which keep says 1: the reply with
 * id (event NULL), or an event of kind. NULL after timeout_ms. Counts the
 * frames seen on the way in *frames when not NULL.
 */
static cJSON *next_msg(wsc *w, int id, const char *event, int timeout_ms, int *frames)
{
    int64_t deadline = rg_now_ms() + timeout_ms;
    rg_buf in;
    rg_buf_init(&in);
    cJSON *out = NULL;
    while (!out && rg_now_ms() < deadline) {
        rg_buf_reset(&in);
        int op = wsc_recv(w, &in, (int)(deadline - rg_now_ms()));
        if (op != 2)
            break;
        cJSON *v = NULL;
        char err[128];
        if (wire_mp_decode(in.data, in.len, &v, err, sizeof err) < 0)
            fail_msg("a frame that is not msgpack: %s", err);
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(v, "event");
        const cJSON *vid = cJSON_GetObjectItemCaseSensitive(v, "id");
        if (frames && cJSON_IsString(ev) && !strcmp(ev->valuestring, "frame"))
            (*frames)++;
        if ((event && cJSON_IsString(ev) && !strcmp(ev->valuestring, event)) ||
            (!event && cJSON_IsNumber(vid) && vid->valueint == id))
            out = v;
        else
            cJSON_Delete(v);
    }
    rg_buf_destroy(&in);
    return out;
}

static int reply_ok(const cJSON *r)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"));
}

/* The element's box (observe elements) as its centre, and its ref. */
static void centre_of(const char *sid, const char *name, int *x, int *y, char *ref)
{
    cJSON *r = expect_ok(&gw, sid, "{\"op\":\"observe\",\"args\":{\"format\":\"elements\"}}");
    const cJSON *e;
    int found = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(r, "result"), "elements"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (!found && cJSON_IsString(n) && !strcmp(n->valuestring, name)) {
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bounds");
            *x = (int)(cJSON_GetObjectItemCaseSensitive(b, "x")->valuedouble +
                       cJSON_GetObjectItemCaseSensitive(b, "w")->valuedouble / 2);
            *y = (int)(cJSON_GetObjectItemCaseSensitive(b, "y")->valuedouble +
                       cJSON_GetObjectItemCaseSensitive(b, "h")->valuedouble / 2);
            snprintf(ref, 64, "%s", cJSON_GetObjectItemCaseSensitive(e, "ref")->valuestring);
            found = 1;
        }
    }
    cJSON_Delete(r);
    if (!found)
        fail_msg("no element named %s", name);
}

/* The page's text of a ref (read), as the agent reads it. */
static void read_text(const char *sid, const char *target, char *out, size_t len)
{
    char body[200];
    snprintf(body, sizeof body, "{\"op\":\"read\",\"args\":{\"target\":\"%s\"}}", target);
    cJSON *r = expect_ok(&gw, sid, body);
    snprintf(out, len, "%s", reply_str(r, "value"));
    cJSON_Delete(r);
}

/* A sample's sum over both workers (-1 from a worker: none there). */
static double metric(const char *name)
{
    double sum = 0;
    for (int i = 1; i <= 2; i++) {
        double v = stack_metric(gw.st, i, name);
        if (v > 0)
            sum += v;
    }
    return sum;
}

/* ---- tokens ---- */

static void test_token_refusals(void **state)
{
    (void)state;
    char a[64], b[64], tok[256], url[512], other[256];
    create("/live.html", a);
    create("/live.html", b);
    token_for(a, 0, 600, tok, sizeof tok, url, sizeof url);
    char want[160];
    snprintf(want, sizeof want, "/v1/sessions/%s/view?token=", a);
    assert_true(!strncmp(url, want, strlen(want)));
    assert_string_equal(url + strlen(want), tok);

    /* The good token opens the WebSocket; nothing but the live view's ops run on it. */
    int status;
    wsc *w = open_view(0, a, tok, &status);
    if (!w)
        fail_msg("a good token: HTTP %d", status);
    send_cmd(w, "{\"id\":1,\"op\":\"navigate\",\"args\":{\"url\":\"http://127.0.0.1:1/\"}}");
    cJSON *r = next_msg(w, 1, NULL, 10000, NULL);
    assert_non_null(r);
    assert_string_equal(reply_code(r), "forbidden");
    cJSON_Delete(r);
    send_cmd(w, "{\"id\":2,\"op\":\"session.view_token\"}");
    r = next_msg(w, 2, NULL, 10000, NULL);
    assert_string_equal(reply_code(r), "forbidden");
    cJSON_Delete(r);
    wsc_close(w);

    /* Forged: one character of the mac changed, or of the claims. */
    snprintf(other, sizeof other, "%s", tok);
    size_t n = strlen(other);
    other[n - 2] = other[n - 2] == 'A' ? 'B' : 'A';
    assert_null(open_view(0, a, other, &status));
    assert_int_equal(status, 401);
    snprintf(other, sizeof other, "%s", tok);
    char *c = strchr(strchr(other, '.') + 1, '.') + 1; /* the control bit */
    *c = '1';
    assert_null(open_view(0, a, other, &status));
    assert_int_equal(status, 401);
    const char *junk[] = {"x", "v1.", "v1.99999999999.0.YWNtZQ.AAAA", "v1.1.0..", ""};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
        assert_null(open_view(0, a, junk[i], &status));
        if (status != 401)
            fail_msg("token '%s': HTTP %d", junk[i], status);
    }
    /* Another session's token. */
    assert_null(open_view(0, b, tok, &status));
    assert_int_equal(status, 401);
    /* ttl_s out of range. */
    cJSON_Delete(expect_post(&gw, 0, "/v1/sessions", "{}", &status));
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", a);
    r = expect_post(&gw, 0, path, "{\"op\":\"session.view_token\",\"args\":{\"ttl_s\":3601}}",
                    &status);
    assert_int_equal(status, 400);
    cJSON_Delete(r);
    r = expect_post(&gw, 0, path, "{\"op\":\"session.view_token\",\"args\":{\"ttl_s\":0}}",
                    &status);
    assert_int_equal(status, 400);
    cJSON_Delete(r);
    /* Another tenant's session: not found, and no token. */
    r = expect_post(&gw, 1, path, "{\"op\":\"session.view_token\"}", &status);
    assert_int_equal(status, 404);
    cJSON_Delete(r);
    /* Expired: a two-second token, once its seconds are over; and the
       connection it opened before ends with it. */
    token_for(a, 1, 2, other, sizeof other, NULL, 0);
    w = open_view(0, a, other, &status);
    assert_non_null(w);
    send_cmd(w, "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"session\"]}}");
    r = next_msg(w, 1, NULL, 10000, NULL);
    assert_true(reply_ok(r));
    cJSON_Delete(r);
    rg_buf in;
    rg_buf_init(&in);
    int op;
    while ((op = wsc_recv(w, &in, 15000)) == 2)
        rg_buf_reset(&in);
    assert_int_equal(op, 8); /* closed by the worker, not a timeout here */
    rg_buf_destroy(&in);
    wsc_close(w);
    assert_null(open_view(0, a, other, &status));
    assert_int_equal(status, 401);
    /* A token made through nginx works on either worker: the secret is shared. */
    for (int i = 1; i <= 2; i++) {
        w = open_view(stack_ws_port(gw.st, i), a, tok, &status);
        if (!w)
            fail_msg("worker %d refused a good token: HTTP %d", i, status);
        wsc_close(w);
    }
    /* nginx's access log keeps the paths, never the tokens. */
    char logp[300];
    snprintf(logp, sizeof logp, "%s/nginx/access.log", stack_dir(gw.st));
    char *log = support_slurp(logp, NULL);
    assert_non_null(log);
    assert_null(strstr(log, tok));
    assert_non_null(strstr(log, "/ws?(not logged)"));
    free(log);
    /* The token dies with its session. */
    close_session(b);
    token_for(a, 0, 600, other, sizeof other, NULL, 0);
    close_session(a);
    assert_null(open_view(0, a, other, &status));
    assert_int_equal(status, 401);
}

/* ---- frames and input ---- */

static void test_frames_and_input(void **state)
{
    (void)state;
    char sid[64], ctl[256], ro[256], ref[64], fref[64], text[128];
    create("/live.html", sid);
    int bx, by, fx, fy;
    centre_of(sid, "Count", &bx, &by, ref);
    centre_of(sid, "Name", &fx, &fy, fref);
    token_for(sid, 1, 600, ctl, sizeof ctl, NULL, 0);
    token_for(sid, 0, 600, ro, sizeof ro, NULL, 0);

    int status;
    wsc *w = open_view(0, sid, ctl, &status);
    if (!w)
        fail_msg("control token: HTTP %d", status);
    send_cmd(w, "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"screencast\","
                "\"snapshot\"],\"quality\":50}}");
    cJSON *r = next_msg(w, 1, NULL, 15000, NULL);
    assert_non_null(r);
    if (!reply_ok(r))
        fail_msg("subscribe: %s", cJSON_PrintUnformatted(r));
    cJSON_Delete(r);
    /* A frame: a JPEG as msgpack bin, the page's viewport as its size. */
    r = next_msg(w, 0, "frame", 15000, NULL);
    assert_non_null(r);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "data");
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(d, "data");
    assert_true(wire_is_bin(img));
    size_t n = 0;
    unsigned char *jpeg = rg_base64_decode(img->valuestring, strlen(img->valuestring), &n);
    assert_non_null(jpeg);
    assert_true(n > 100);
    assert_int_equal(jpeg[0], 0xff);
    assert_int_equal(jpeg[1], 0xd8);
    free(jpeg);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(d, "width")->valueint, 1280);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(d, "height")->valueint, 800);
    assert_true(cJSON_GetObjectItemCaseSensitive(d, "ts")->valuedouble > 1.6e12);
    cJSON_Delete(r);
    assert_true(metric("refgate_view_viewers") >= 1);

    /* A click at the button's box clicks it; the agent's ref from before still reads it. */
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "{\"id\":2,\"op\":\"input\",\"args\":{\"type\":\"click\","
             "\"x\":%d,\"y\":%d}}",
             bx, by);
    send_cmd(w, cmd);
    r = next_msg(w, 2, NULL, 15000, NULL);
    if (!reply_ok(r))
        fail_msg("input click: %s", cJSON_PrintUnformatted(r));
    cJSON_Delete(r);
    read_text(sid, "css:#n", text, sizeof text);
    assert_string_equal(text, "1");
    char body[200];
    snprintf(body, sizeof body, "{\"op\":\"click\",\"args\":{\"target\":\"%s\"}}", ref);
    cJSON_Delete(expect_ok(&gw, sid, body));
    read_text(sid, "css:#n", text, sizeof text);
    assert_string_equal(text, "2");
    /* Typing reaches the focused field: a click on it, then keys. */
    snprintf(cmd, sizeof cmd,
             "{\"id\":3,\"op\":\"input\",\"args\":{\"type\":\"click\","
             "\"x\":%d,\"y\":%d}}",
             fx, fy);
    send_cmd(w, cmd);
    cJSON_Delete(next_msg(w, 3, NULL, 15000, NULL));
    send_cmd(w, "{\"id\":4,\"op\":\"input\",\"args\":{\"type\":\"text\",\"text\":\"hi\"}}");
    r = next_msg(w, 4, NULL, 15000, NULL);
    assert_true(reply_ok(r));
    cJSON_Delete(r);
    send_cmd(w, "{\"id\":5,\"op\":\"input\",\"args\":{\"type\":\"key\",\"key\":\"Backspace\"}}");
    r = next_msg(w, 5, NULL, 15000, NULL);
    assert_true(reply_ok(r));
    cJSON_Delete(r);
    snprintf(body, sizeof body, "{\"op\":\"read\",\"args\":{\"target\":\"%s\",\"what\":\"value\"}}",
             fref);
    r = expect_ok(&gw, sid, body);
    assert_string_equal(reply_str(r, "value"), "h");
    cJSON_Delete(r);
    /* Bad input is refused and does nothing. */
    send_cmd(w, "{\"id\":6,\"op\":\"input\",\"args\":{\"type\":\"click\",\"x\":-5,\"y\":1}}");
    r = next_msg(w, 6, NULL, 15000, NULL);
    assert_string_equal(reply_code(r), "bad_request");
    cJSON_Delete(r);

    /* A read-only token: input is forbidden, and the counter stays. */
    wsc *v = open_view(0, sid, ro, &status);
    if (!v)
        fail_msg("read-only token: HTTP %d", status);
    snprintf(cmd, sizeof cmd,
             "{\"id\":1,\"op\":\"input\",\"args\":{\"type\":\"click\","
             "\"x\":%d,\"y\":%d}}",
             bx, by);
    send_cmd(v, cmd);
    r = next_msg(v, 1, NULL, 15000, NULL);
    assert_string_equal(reply_code(r), "forbidden");
    cJSON_Delete(r);
    read_text(sid, "css:#n", text, sizeof text);
    assert_string_equal(text, "2");

    /* Over HTTP with the API key (a computer-use agent clicking what it saw in
       a screenshot): a double click is two clicks and a dblclick; a move points. */
    snprintf(body, sizeof body,
             "{\"op\":\"input\",\"args\":{\"type\":\"click\",\"x\":%d,\"y\":%d,\"count\":2}}",
             bx, by);
    cJSON_Delete(expect_ok(&gw, sid, body));
    read_text(sid, "css:#n", text, sizeof text);
    assert_string_equal(text, "4");
    snprintf(body, sizeof body, "{\"op\":\"input\",\"args\":{\"type\":\"move\",\"x\":%d,\"y\":%d}}",
             fx, fy);
    cJSON_Delete(expect_ok(&gw, sid, body));
    r = expect_ok(&gw, sid, "{\"op\":\"observe\",\"args\":{\"find\":\"pointed at 2\"}}");
    if (strcmp(reply_str(r, "title"), "double clicked") || !strstr(reply_str(r, "text"), "pointed"))
        fail_msg("after a double click and a move over HTTP: %s", cJSON_PrintUnformatted(r));
    cJSON_Delete(r);
    snprintf(body, sizeof body,
             "{\"op\":\"input\",\"args\":{\"type\":\"click\",\"x\":%d,\"y\":%d,\"count\":4}}",
             bx, by);
    int st = 0;
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    r = expect_post(&gw, 0, path, body, &st);
    assert_int_equal(st, 400);
    assert_string_equal(reply_code(r), "bad_request");
    cJSON_Delete(r);
    read_text(sid, "css:#n", text, sizeof text);
    assert_string_equal(text, "4");
    /* A drag on the pad, in one command and in three (down, move, up): the
       page sees the button held all the way (a slider, a canvas) */
    cJSON_Delete(expect_ok(&gw, sid,
                           "{\"op\":\"input\",\"args\":{\"type\":\"drag\",\"x\":450,\"y\":330,"
                           "\"to_x\":650,\"to_y\":335}}"));
    read_text(sid, "css:#dragged", text, sizeof text);
    assert_string_equal(text, "dragged 200 down 1 moves 1");
    cJSON_Delete(expect_ok(&gw, sid, "{\"op\":\"input\",\"args\":{\"type\":\"down\",\"x\":600,"
                                     "\"y\":330}}"));
    cJSON_Delete(expect_ok(&gw, sid, "{\"op\":\"input\",\"args\":{\"type\":\"move\",\"x\":540,"
                                     "\"y\":330}}"));
    cJSON_Delete(expect_ok(&gw, sid, "{\"op\":\"input\",\"args\":{\"type\":\"up\"}}"));
    read_text(sid, "css:#dragged", text, sizeof text);
    assert_string_equal(text, "dragged -60 down 1 moves 1");
    r = expect_post(&gw, 0, path,
                    "{\"op\":\"input\",\"args\":{\"type\":\"drag\",\"x\":450,\"y\":330}}", &st);
    assert_int_equal(st, 400);
    cJSON_Delete(r);
    r = expect_post(&gw, 0, path, "{\"op\":\"input\",\"args\":{\"type\":\"up\",\"x\":5}}", &st);
    assert_int_equal(st, 400);
    cJSON_Delete(r);

    /* The session closes: the viewers hear it and their connections end. */
    send_cmd(v, "{\"id\":2,\"op\":\"subscribe\",\"args\":{\"events\":[\"session\"]}}");
    cJSON_Delete(next_msg(v, 2, NULL, 15000, NULL));
    close_session(sid);
    r = next_msg(v, 0, "session", 15000, NULL);
    assert_non_null(r);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "data"), "state")
            ->valuestring,
        "closed");
    cJSON_Delete(r);
    rg_buf in;
    rg_buf_init(&in);
    int op;
    while ((op = wsc_recv(w, &in, 15000)) == 2)
        rg_buf_reset(&in);
    assert_int_equal(op, 8);
    rg_buf_destroy(&in);
    wsc_close(v);
    wsc_close(w);
}

/* ---- a viewer that never reads ---- */

static void test_slow_viewer(void **state)
{
    (void)state;
    char sid[64], tok[256];
    create("/live.html?spin=1", sid);
    cJSON *r = expect_ok(&gw, sid, "{\"op\":\"session.info\"}");
    const char *worker = reply_str(r, "worker");
    int wi = worker[0] == 'w' ? atoi(worker + 1) : 0; /* the stack names its workers w1, w2 */
    assert_true(wi == 1 || wi == 2);
    cJSON_Delete(r);
    token_for(sid, 0, 600, tok, sizeof tok, NULL, 0);
    int status;
    /* The slow one: subscribes in PNG, the largest frames, and never reads again. */
    wsc *slow = open_view(0, sid, tok, &status);
    assert_non_null(slow);
    send_cmd(slow, "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"screencast\"],"
                   "\"format\":\"png\"}}");
    /* The reader: an API client that takes every frame. */
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s/ws", sid);
    wsc *fast = wsc_open(stack_port(gw.st), path, gw.auth[0], &status);
    assert_non_null(fast);
    send_cmd(fast, "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"screencast\"],"
                   "\"format\":\"png\"}}");
    cJSON_Delete(next_msg(fast, 1, NULL, 15000, NULL));
    int frames = 0;
    double dropped0 = metric("refgate_view_frames_total{result=\"dropped\"}");
    while (frames < 40 && next_msg(fast, 0, "never", 1000, &frames) == NULL && frames < 40) {
    }
    /* How many frames the kernel's buffers between the worker, nginx and the
       slow client take before it stalls depends on their sizes and the
       frames': read on until its first frame is dropped (within a bound),
       and count from there. */
    int64_t stall_deadline = rg_now_ms() + 120000;
    while (metric("refgate_view_frames_total{result=\"dropped\"}") <= dropped0 && frames < 2000 &&
           rg_now_ms() < stall_deadline) {
        int until = frames + 10;
        while (frames < until && rg_now_ms() < stall_deadline)
            next_msg(fast, 0, "never", 1000, &frames);
    }
    pid_t pid = stack_worker_pid(gw.st, wi);
    long rss1 = proc_rss_kb(pid);
    double heap1 = metric("refgate_heap_in_use_bytes");
    double dropped1 = metric("refgate_view_frames_total{result=\"dropped\"}");
    int more = frames + 120;
    int64_t deadline = rg_now_ms() + 120000;
    while (frames < more && rg_now_ms() < deadline)
        next_msg(fast, 0, "never", 1000, &frames);
    long rss2 = proc_rss_kb(pid);
    double heap2 = metric("refgate_heap_in_use_bytes");
    double held = metric("refgate_view_frame_bytes");
    double dropped2 = metric("refgate_view_frames_total{result=\"dropped\"}");
    if (getenv("RG_DEBUG"))
        fprintf(stderr,
                "slow viewer: %d frames to the reader, dropped %.0f -> %.0f -> %.0f, "
                "worker RSS %ld -> %ld kB, heap in use %.0f -> %.0f, frames held %.0f\n",
                frames, dropped0, dropped1, dropped2, rss1, rss2, heap1, heap2, held);
    /* The reader went on receiving; the slow one's frames were dropped, and
       dropping went on; 120 PNG frames of 1280x800 queued would be tens of MB. */
    assert_true(frames >= more);
    assert_true(dropped1 > dropped0);
    assert_true(dropped2 > dropped1);
    /* The frames the worker holds for its clients: one per connection at
       most (two connections, a PNG each), however long the slow one stalls. */
    assert_true(held < 8.0 * 1024 * 1024);
    /* And the worker's heap did not grow with the frames it dropped (under
       AddressSanitizer, whose quarantine keeps freed memory, glibc's
       figures read 0 and the gauge above is the bound). */
    assert_true(rss1 > 0);
    assert_true(heap2 - heap1 < 16.0 * 1024 * 1024);
    wsc_close(slow);
    wsc_close(fast);
    close_session(sid);
}

/*
 * A viewer that subscribes and never reads again, alone on a page that
 * never stops repainting: the worker writes it one frame (the one it has
 * not read) and no more, the page stops capturing for it instead of
 * capturing on and dropping, the agent's commands go on as before, and once
 * the viewer reads again the frames flow again.
 */
static void test_stalled_viewer(void **state)
{
    (void)state;
    char sid[64], tok[256], text[64];
    create("/live.html?spin=1", sid);
    token_for(sid, 0, 600, tok, sizeof tok, NULL, 0);
    double sent0 = metric("refgate_view_frames_total{result=\"sent\"}");
    int status;
    wsc *w = open_view(0, sid, tok, &status);
    assert_non_null(w);
    /* Not even the reply is read. */
    send_cmd(w, "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"screencast\"]}}");
    int64_t deadline = rg_now_ms() + 60000;
    while (metric("refgate_view_frames_total{result=\"sent\"}") <= sent0 && rg_now_ms() < deadline)
        rg_sleep_ms(50);
    double sent1 = metric("refgate_view_frames_total{result=\"sent\"}");
    double dropped1 = metric("refgate_view_frames_total{result=\"dropped\"}");
    assert_true(sent1 > sent0); /* its first frame went */

    /* The agent works on: 30 clicks, each one repaints the page too. */
    for (int i = 0; i < 30; i++)
        cJSON_Delete(expect_ok(&gw, sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#count\"}}"));
    read_text(sid, "css:#n", text, sizeof text);
    assert_string_equal(text, "30");
    double sent2 = metric("refgate_view_frames_total{result=\"sent\"}");
    double dropped2 = metric("refgate_view_frames_total{result=\"dropped\"}");
    if (getenv("RG_DEBUG"))
        fprintf(stderr, "stalled viewer: sent %.0f -> %.0f -> %.0f, dropped %.0f -> %.0f\n",
                sent0, sent1, sent2, dropped1, dropped2);
    /* One unread frame is all it was written: the ping behind it is not
       answered. And the page stopped capturing for it: the frames that came
       after are the few already captured when it stopped, not one for each
       of the page's paints. */
    assert_true(sent2 - sent0 <= 1);
    assert_true(dropped2 - dropped1 <= 3);

    /* It reads again: the frame it had not read, then new ones. */
    int frames = 0;
    cJSON *r = next_msg(w, 1, NULL, 15000, &frames);
    assert_non_null(r);
    assert_true(reply_ok(r));
    cJSON_Delete(r);
    while (frames < 5 && next_msg(w, 0, "never", 15000, &frames) == NULL && frames < 5) {
    }
    assert_true(frames >= 5);
    assert_true(metric("refgate_view_frames_total{result=\"sent\"}") >= sent2 + 4);
    wsc_close(w);
    close_session(sid);
}

/* ---- the viewer page in a browser ---- */

static void test_viewer_page(void **state)
{
    (void)state;
    char sid[64], ctl[256], ro[256], url_ctl[512], url_ro[512], other[64], oth[256];
    assert_true(!strncmp(gw.auth[0], "Authorization: Bearer ", 22));
    create("/live.html", sid);
    create("/live.html", other);
    token_for(sid, 1, 600, ctl, sizeof ctl, url_ctl, sizeof url_ctl);
    token_for(sid, 0, 600, ro, sizeof ro, url_ro, sizeof url_ro);
    token_for(other, 0, 600, oth, sizeof oth, NULL, 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "REFGATE_URL='http://127.0.0.1:%d' REFGATE_AUTH='%.*s' node tests/view/viewer.mjs "
             "'%s' '%s' '%s' '%s' 2>&1",
             stack_port(gw.st), (int)(strlen(gw.auth[0]) - 24), gw.auth[0] + 22, sid, url_ctl,
             url_ro, oth);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[1024];
    int passed = 0;
    while (fgets(line, sizeof line, p)) {
        fputs(line, stderr);
        if (!strncmp(line, "ok ", 3))
            passed++;
    }
    int rc = pclose(p);
    assert_int_equal(rc, 0);
    assert_int_equal(passed, 7);
}

int main(void)
{
    if (fx_need_chromium("test_view") < 0)
        return 1;
    int rc = system("sh tests/view/install.sh");
    if (rc != 0) {
        fprintf(stderr,
                "test_view: tests/view/install.sh failed (status %d): playwright-core "
                "could not be installed\n",
                rc);
        return 1;
    }
    if (fx_stack_start(&gw, "test_view", "tests/fixtures", 2, NULL) < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_refusals),
        cmocka_unit_test(test_frames_and_input),
        cmocka_unit_test(test_slow_viewer),
        cmocka_unit_test(test_stalled_viewer),
        cmocka_unit_test(test_viewer_page),
    };
    rc = FX_RUN("test_view", tests, NULL, NULL);
    fx_stack_stop(&gw);
    return rc;
}
